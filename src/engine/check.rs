//! `check` and `repair`: find damage in every file of an index, and rebuild what can be
//! rebuilt.
//!
//! The store (`store/`, sled) is the source of truth; the text index (`text/`), the graph
//! checkpoints (inside the store) and the manifest are derived from it. A damaged derived
//! part is rebuilt from the store. A damaged store cannot be rebuilt from the derived
//! parts (they hold no document text): `repair` keeps it as `store.damaged/`, salvages
//! every document it can still read into a new store, and says what was lost.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Engine, LOCK_FILE, STORE_DIR, TEXT_DIR, lock, manifest, manifest_of};
use crate::config::Config;
use crate::embed::EmbedderSpec;
use crate::store::Store;
use crate::store::view;
use crate::text::TextIndex;
use crate::{Error, ErrorKind, Kind, Result};

/// One damaged part of an index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Damage {
    /// The part: `store/db`, `text/`, `MANIFEST`, `graph checkpoint (rules)`, ...
    pub part: String,
    /// What is wrong.
    pub problem: String,
    /// Whether `repair` rebuilds it without losing anything (derived parts).
    pub rebuildable: bool,
}

/// What [`Engine::check`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    /// The parts verified and found intact, one line each.
    pub intact: Vec<String>,
    /// The damaged parts.
    pub damaged: Vec<Damage>,
}

impl CheckReport {
    /// Whether nothing is damaged.
    pub fn is_intact(&self) -> bool {
        self.damaged.is_empty()
    }

    /// Whether the store itself is damaged (repair cannot restore everything).
    pub fn store_damaged(&self) -> bool {
        self.damaged.iter().any(|d| !d.rebuildable)
    }

    fn ok(&mut self, line: impl Into<String>) {
        self.intact.push(line.into());
    }

    fn damaged(&mut self, part: &str, problem: impl std::fmt::Display, rebuildable: bool) {
        self.damaged.push(Damage {
            part: part.to_string(),
            problem: problem.to_string(),
            rebuildable,
        });
    }
}

/// Verifies the files published for readers: each one the manifest lists is there,
/// of its length and CRC-32, and they are of the store's last commit; a mapped base's
/// table and rows agree with its documents.
fn check_view(dir: &Path, seq: u64, report: &mut CheckReport) {
    const PART: &str = "view/ (published for readers)";
    let list = match manifest::read_with_view(dir) {
        Ok(Some((_, Some(list)))) => list,
        // A damaged manifest is reported above.
        Ok(Some((_, None))) | Ok(None) | Err(_) => {
            report.ok(format!(
                "{PART}: none yet (published at the next open for writing)"
            ));
            return;
        }
    };
    let mut bad = Vec::new();
    for file in list.files() {
        match view::read_file(dir, file) {
            Ok(Some(sections)) if file.mapped => {
                let path = view::path_of(dir, file);
                if let Err(err) = crate::store::base::MappedBase::load(sections, &path)
                    .and_then(|base| base.verify(&path))
                {
                    bad.push(err.to_string());
                }
            }
            Ok(Some(_)) => {}
            Ok(None) => bad.push(format!("{} is missing", file.name)),
            Err(err) => bad.push(err.to_string()),
        }
    }
    if bad.is_empty() {
        // Behind the store after a writer stopped between a commit and its publish:
        // readers see the commit before until the next open for writing publishes.
        let behind = if list.seq < seq {
            format!(" (the store is at change {seq}: published at the next open for writing)")
        } else {
            String::new()
        };
        report.ok(format!(
            "{PART}: {} files of change {}, checksums match{behind}",
            list.files().count(),
            list.seq
        ));
    } else {
        report.damaged(PART, bad.join("; "), true);
    }
}

/// What [`Engine::repair`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RepairReport {
    /// What was rebuilt or rewritten, one line each.
    pub repaired: Vec<String>,
    /// Where the damaged store was kept, when it was damaged.
    pub damaged_copy: Option<PathBuf>,
    /// What could not be recovered, when the store was damaged.
    pub lost: Option<String>,
}

impl Engine {
    /// Verifies every part of the index in `dir` without changing it: the manifest, the
    /// store (it opens, every document decodes, it holds what the manifest records), the
    /// text index (every file's checksum, the change it includes, its document count)
    /// and the graph checkpoints (lengths and CRC-32s).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::IndexNotFound`] when `dir` holds no index, [`ErrorKind::Locked`] when
    /// it is open; damage is not an error but the report's content.
    pub fn check(dir: impl AsRef<Path>, config: &Config) -> Result<CheckReport> {
        let dir = dir.as_ref();
        let store_dir = dir.join(STORE_DIR);
        if !store_dir.exists() {
            return Err(Error::new(ErrorKind::IndexNotFound {
                path: dir.to_path_buf(),
            }));
        }
        let _lock = lock(dir, std::time::Duration::ZERO)?;
        let mut report = CheckReport::default();
        let recorded = match manifest::read(dir) {
            Ok(Some(recorded)) => {
                report.ok(format!(
                    "MANIFEST: change {}, {} rules, {} chunks",
                    recorded.seq, recorded.rules, recorded.chunks
                ));
                Some(recorded)
            }
            Ok(None) => {
                report.damaged("MANIFEST", "missing", true);
                None
            }
            Err(err) => {
                report.damaged("MANIFEST", err, true);
                None
            }
        };
        let store = match Store::open(&store_dir, false, 16 << 20) {
            Ok(store) => store,
            Err(err) => {
                report.damaged("store/db", err, false);
                check_text(dir, config, None, &mut report);
                return Ok(report);
            }
        };
        let loaded = match super::maintain::load_catalog(&store, true) {
            Ok(loaded) => loaded,
            Err(err) => {
                report.damaged("store/db", err, false);
                check_text(dir, config, None, &mut report);
                return Ok(report);
            }
        };
        let catalog = &loaded.catalog;
        let found = manifest_of(&store, catalog);
        match recorded.map(|recorded| manifest::verify(&recorded, &found)) {
            Some(Err(err)) => report.damaged("store/db", err, false),
            _ => report.ok(format!(
                "store/db: change {}, {} rules, {} chunks, every document readable",
                found.seq, found.rules, found.chunks
            )),
        }
        check_text(
            dir,
            config,
            Some((found.seq, catalog.len() as u64)),
            &mut report,
        );
        check_entities(&loaded, &mut report);
        check_view(dir, found.seq, &mut report);
        for kind in Kind::ALL {
            let part = format!("graph checkpoint ({kind}s)");
            match check_graph(&store, kind) {
                Ok(Some(points)) => report.ok(format!("{part}: {points} points, checksums match")),
                Ok(None) => report.ok(format!("{part}: none yet")),
                Err(err) => report.damaged(&part, err, true),
            }
        }
        Ok(report)
    }

    /// Repairs the index in `dir`: rebuilds the text index and the graph checkpoints
    /// from the store and rewrites the manifest. When the store itself is damaged, it is
    /// kept as `store.damaged/`, every document that can still be read is salvaged into
    /// a new store, and the report says what was lost.
    ///
    /// # Errors
    ///
    /// As [`Engine::check`], and I/O errors naming the path; an existing
    /// `store.damaged/` (from an earlier repair) is never overwritten.
    pub fn repair(dir: impl AsRef<Path>, config: Config) -> Result<RepairReport> {
        let dir = dir.as_ref();
        let check = Engine::check(dir, &config)?;
        let mut report = RepairReport::default();
        if check.store_damaged() {
            salvage(dir, &config, &check, &mut report)?;
        } else {
            let lock_file = lock(dir, std::time::Duration::ZERO)?;
            {
                let store = Store::open(&dir.join(STORE_DIR), false, 16 << 20)?;
                for kind in Kind::ALL {
                    store.clear_checkpoint(kind)?;
                }
                // Derived again from the documents at the open below.
                store.clear_entity_lists()?;
            }
            remove_dir(&dir.join(TEXT_DIR))?;
            remove_dir(&dir.join(view::VIEW_DIR))?;
            let path = manifest::path(dir);
            if path.exists() {
                std::fs::remove_file(&path).map_err(|err| Error::io_at(&path, err))?;
            }
            drop(lock_file);
            report
                .repaired
                .push("text index rebuilt from the store".to_string());
            report
                .repaired
                .push("graph checkpoints dropped: the graphs are rebuilt from the store".into());
            report
                .repaired
                .push("entity lists derived again from the documents".into());
            report
                .repaired
                .push("files for readers published again from the store".into());
            report.repaired.push("MANIFEST rewritten".to_string());
        }
        // Opening rebuilds the text index and writes the manifest; closing checkpoints
        // the rebuilt graphs.
        let engine = Engine::builder().config(config).open(dir)?;
        engine.sync_graph()?;
        engine.close()?;
        Ok(report)
    }
}

/// Checks the text index: readable, every file's checksum, and (when the store could be
/// read) the change it includes and its document count.
fn check_text(dir: &Path, config: &Config, store: Option<(u64, u64)>, report: &mut CheckReport) {
    let text_dir = dir.join(TEXT_DIR);
    let (text, seq) = match TextIndex::open(&text_dir, config.fusion.patterns_in_text) {
        Ok(opened) => opened,
        Err(err) => {
            let cause = std::error::Error::source(&err).map(ToString::to_string);
            let problem = match cause {
                Some(cause) => format!("{err} ({cause})"),
                None => err.to_string(),
            };
            return report.damaged("text/", problem, true);
        }
    };
    match text.corrupted_files() {
        Ok(files) if !files.is_empty() => {
            let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            return report.damaged(
                "text/",
                format!("checksum mismatch in {}", names.join(", ")),
                true,
            );
        }
        Ok(_) => {}
        Err(err) => return report.damaged("text/", err, true),
    }
    match store {
        Some((store_seq, _)) if seq > store_seq => report.damaged(
            "store/db",
            format!("the text index includes change {seq}, the store only {store_seq}: the store lost committed data"),
            false,
        ),
        Some((store_seq, _)) if seq < store_seq => report.damaged(
            "text/",
            format!("includes change {seq}, the store {store_seq} (a crash before it caught up)"),
            true,
        ),
        Some((_, docs)) if text.num_docs() != docs => report.damaged(
            "text/",
            format!("{} documents, the store {docs}", text.num_docs()),
            true,
        ),
        _ => report.ok(format!(
            "text/: change {seq}, {} documents, checksums match",
            text.num_docs()
        )),
    }
}

/// Checks the stored entity lists: one per document, each what the document's text
/// gives. An index written before the store kept them has none (the next open stores
/// them), which is no damage.
fn check_entities(loaded: &super::maintain::Loaded, report: &mut CheckReport) {
    const PART: &str = "entity graph (store/db)";
    let docs = loaded.catalog.len();
    let (missing, mismatched) = (loaded.derived.len(), loaded.mismatched.len());
    let (entity_docs, entities) = loaded.catalog.graph.size();
    if missing > 0 && missing < docs {
        report.damaged(
            PART,
            format!("{missing} of {docs} documents have no stored entity list"),
            true,
        );
    } else if mismatched > 0 {
        report.damaged(
            PART,
            format!(
                "{mismatched} of {docs} documents have a stored entity list that differs from their text's"
            ),
            true,
        );
    } else if missing > 0 {
        report.ok(format!(
            "{PART}: written before entity lists were stored; the next open stores them"
        ));
    } else {
        report.ok(format!(
            "{PART}: {entity_docs} documents, {entities} entities, every list matches its document"
        ));
    }
}

/// The number of points of the checkpoint of `kind` whose files match their checksums.
fn check_graph(store: &Store, kind: Kind) -> Result<Option<usize>> {
    let Some(bytes) = store.checkpoint_manifest(kind)? else {
        return Ok(None);
    };
    let manifest: crate::vector::Manifest = bincode::deserialize(&bytes)
        .map_err(|err| Error::corrupt(format!("graph manifest: {err}")))?;
    let files = store.checkpoint_files(kind, manifest.files.len())?;
    crate::vector::Graph::verify(&manifest, &files)?;
    Ok(Some(manifest.n_points))
}

fn remove_dir(path: &Path) -> Result<()> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(Error::io_at(path, err)),
    }
}

/// Moves the damaged store aside, reads what it can of a copy of it, and builds a new
/// index of the salvaged documents in place of the old one.
fn salvage(
    dir: &Path,
    config: &Config,
    check: &CheckReport,
    report: &mut RepairReport,
) -> Result<()> {
    let lock_file = lock(dir, std::time::Duration::ZERO)?;
    let store_dir = dir.join(STORE_DIR);
    let damaged = dir.join("store.damaged");
    if damaged.exists() {
        return Err(Error::invalid_input(format!(
            "{} exists (an earlier repair kept it): move it away first",
            damaged.display()
        )));
    }
    let recorded = manifest::read(dir).ok().flatten();
    std::fs::rename(&store_dir, &damaged).map_err(|err| Error::io_at(&store_dir, err))?;
    report.damaged_copy = Some(damaged.clone());
    // sled may write while opening: read a copy, never the kept original.
    let scratch = tempfile::tempdir()?;
    let copy = scratch.path().join("store");
    copy_dir(&damaged, &copy)?;
    let (docs, embedder, unreadable) = match Store::open(&copy, false, 16 << 20) {
        Ok(store) => {
            let (docs, unreadable) = store.read_salvageable();
            (docs, store.meta().embedder, unreadable)
        }
        Err(err) => {
            tracing::warn!(error = %err, "the damaged store does not open: nothing to salvage");
            (Vec::new(), None, 1)
        }
    };
    // The new index is built beside, then moved in: the old derived parts go.
    remove_dir(&dir.join(TEXT_DIR))?;
    remove_dir(&dir.join(view::VIEW_DIR))?;
    let path = manifest::path(dir);
    if path.exists() {
        std::fs::remove_file(&path).map_err(|err| Error::io_at(&path, err))?;
    }
    drop(lock_file);
    let staging = tempfile::Builder::new()
        .prefix(".repair-")
        .tempdir_in(dir)
        .map_err(|err| Error::io_at(dir, err))?;
    let spec = match embedder.as_deref().map(str::parse::<EmbedderSpec>) {
        Some(Ok(spec)) => spec,
        _ => EmbedderSpec::None,
    };
    let rules = docs.iter().filter(|d| d.kind() == Kind::Rule).count();
    let chunks = docs.len() - rules;
    {
        let engine = Engine::builder()
            .config(config.clone())
            .embedder_spec(spec)
            .create(staging.path().join("index"))?;
        engine.upsert(docs)?;
        engine.commit()?;
        engine.close()?;
    }
    for owned in [STORE_DIR, TEXT_DIR, view::VIEW_DIR, manifest::MANIFEST_FILE] {
        let from = staging.path().join("index").join(owned);
        std::fs::rename(&from, dir.join(owned)).map_err(|err| Error::io_at(&from, err))?;
    }
    let _ = std::fs::remove_file(staging.path().join("index").join(LOCK_FILE));
    let problems: Vec<String> = check
        .damaged
        .iter()
        .filter(|d| !d.rebuildable)
        .map(|d| format!("{}: {}", d.part, d.problem))
        .collect();
    report.repaired.push(format!(
        "new store with the {rules} rules and {chunks} chunks that could be read"
    ));
    report.lost = Some(match recorded {
        Some(m) => format!(
            "the manifest recorded {} rules and {} chunks; {} rules and {} chunks were lost{} ({})",
            m.rules,
            m.chunks,
            (m.rules as usize).saturating_sub(rules),
            (m.chunks as usize).saturating_sub(chunks),
            if unreadable > 0 {
                format!(", {unreadable} unreadable blocks")
            } else {
                String::new()
            },
            problems.join("; ")
        ),
        None => format!(
            "unknown how many documents were lost (no readable manifest); {unreadable} unreadable blocks ({})",
            problems.join("; ")
        ),
    });
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|err| Error::io_at(to, err))?;
    for entry in std::fs::read_dir(from).map_err(|err| Error::io_at(from, err))? {
        let entry = entry.map_err(|err| Error::io_at(from, err))?;
        let path = entry.path();
        let target = to.join(entry.file_name());
        if entry
            .file_type()
            .map_err(|err| Error::io_at(&path, err))?
            .is_dir()
        {
            copy_dir(&path, &target)?;
        } else {
            std::fs::copy(&path, &target).map_err(|err| Error::io_at(&path, err))?;
        }
    }
    Ok(())
}
