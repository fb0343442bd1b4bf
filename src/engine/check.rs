//! `check` and `repair`: find damage in every file of an index, and rebuild what can be
//! rebuilt.
//!
//! The store (`store/`, sled) is the source of truth; the text index (`text/`), the graph
//! checkpoints (inside the store) and the manifest are derived from it. A damaged derived
//! part is rebuilt from the store. A damaged store cannot be rebuilt from the derived
//! parts (they hold no document text): `repair` keeps it as `store.damaged/`, salvages
//! every document it can still read into a new store, and says what was lost.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::lock::lock;
use super::manifest::manifest_of;
use super::publish::last_text_commit;
use super::swap::{self, Staging};
use super::{Engine, STORE_DIR, TEXT_DIR, manifest};
use crate::config::Config;
use crate::embed::EmbedderSpecs;
use crate::local::store::view;
use crate::local::store::{LogEntry, Meta, Salvaged, Store};
use crate::local::text::TextIndex;
use crate::model::doc::Document;
use crate::model::id::DocId;
use crate::{Error, ErrorKind, Kind, Result};

/// One damaged part of an index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
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
#[non_exhaustive]
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
fn check_view(layout: &swap::Layout, seq: u64, report: &mut CheckReport) {
    const PART: &str = "view/ (published for readers)";
    let dir = &layout.view;
    let list = match manifest::read_with_view(&layout.manifest) {
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
                if let Err(err) = crate::local::store::base::MappedBase::load(sections, &path)
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
#[non_exhaustive]
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
    /// text index (every file's checksum, the change it includes, its document count),
    /// the files published for readers and the graph checkpoints (lengths and CRC-32s).
    ///
    /// On a read-only volume (a backup, a container image) no writer can be at work: the
    /// check takes no lock, and verifies what readers use (the store, which sled only
    /// opens for writing, is reported as not opened).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::IndexNotFound`] when `dir` holds no index, [`ErrorKind::Locked`] when
    /// it is open; damage is not an error but the report's content.
    pub fn check(dir: impl AsRef<Path>, config: &Config) -> Result<CheckReport> {
        let dir = dir.as_ref();
        if !swap::holds_index(dir) {
            return Err(Error::new(ErrorKind::IndexNotFound {
                path: dir.to_path_buf(),
            }));
        }
        let _lock = match lock(dir, std::time::Duration::ZERO) {
            Ok(lock) => Some(lock),
            Err(err) if is_read_only_volume(&err) => None,
            Err(err) => return Err(err),
        };
        Ok(check_held(dir, config, _lock.is_some()))
    }

    /// Repairs the index in `dir`, never losing a document that can still be read
    /// anywhere in it.
    ///
    /// When only derived parts are damaged, the text index, the graph checkpoints, the
    /// entity lists and the published files are rebuilt from the store. When the store
    /// itself is damaged, a new index is built from every source that holds documents
    /// (the store, read from a copy, and the files published for readers, which hold
    /// every live document of the last published commit), the newest version of each
    /// document kept; it replaces the old one only once complete, and the damaged store
    /// is kept as `store.damaged/`. A repair stopped at any step leaves the old index or
    /// the new one. The report says where each document came from and what was lost.
    ///
    /// # Errors
    ///
    /// As [`Engine::check`], and I/O errors naming the path; an existing
    /// `store.damaged/` (from an earlier repair) is never overwritten.
    pub fn repair(dir: impl AsRef<Path>, config: &Config) -> Result<RepairReport> {
        let config = config.clone();
        let dir = dir.as_ref();
        if !swap::holds_index(dir) {
            return Err(Error::new(ErrorKind::IndexNotFound {
                path: dir.to_path_buf(),
            }));
        }
        let held = Arc::new(lock(dir, std::time::Duration::ZERO)?);
        swap::recover(dir)?;
        let check = check_held(dir, &config, true);
        let mut report = RepairReport::default();
        if check.store_damaged() {
            salvage(dir, &config, &check, &mut report)?;
            crate::crash::point("repair:before-open");
            // Opening builds the graphs of the salvaged store; closing checkpoints them.
            let engine = Engine::builder()
                .with_config(config)
                .open_locked(dir, &held)?;
            engine.sync_graph()?;
            engine.close()?;
        } else {
            rebuild_derived(dir, config, &check)?;
            report.repaired.extend(
                [
                    "text index rebuilt from the store",
                    "graph checkpoints dropped: the graphs are rebuilt from the store",
                    "entity lists derived again from the documents",
                    "files for readers published again from the store",
                    "MANIFEST rewritten",
                ]
                .map(String::from),
            );
        }
        drop(held);
        Ok(report)
    }
}

/// Rebuilds every part derived from an intact store (the text index, the graph
/// checkpoints, the entity lists, the published files and the manifest) in a new index
/// beside the old one, from a copy of its store, and swaps it in: readers read the old
/// index until the swap, and a repair stopped before it leaves the old index as it was
/// (the caller holds the index's lock).
fn rebuild_derived(dir: &Path, config: Config, check: &CheckReport) -> Result<()> {
    let staging = Staging::new(dir, "repair")?;
    let index = staging.index();
    swap::copy_owned(
        &dir.join(STORE_DIR),
        &index.join(STORE_DIR),
        STORE_DIR,
        true,
    )?;
    {
        let store = Store::open(&index.join(STORE_DIR), false, 16 << 20)?;
        for kind in Kind::ALL {
            store.clear_checkpoint(kind)?;
        }
        // Derived again from the documents at the open below.
        store.clear_entity_lists()?;
        store.flush()?;
    }
    // An intact manifest is checked against the copy at its open; a damaged one is
    // written again.
    let manifest_damaged = check.damaged.iter().any(|d| d.part == "MANIFEST");
    if !manifest_damaged && let Some((recorded, _)) = manifest::read_with_view(dir)? {
        manifest::write(&index, &recorded, None)?;
    }
    crate::crash::point("repair:before-open");
    // Opening builds the text index, the entity lists and the published files; closing
    // checkpoints the graphs it built.
    let engine = Engine::builder().with_config(config).open(&index)?;
    engine.sync_graph()?;
    engine.close()?;
    crate::crash::point("repair:rebuilt");
    staging.swap(None)
}

/// Whether `err` says the index is on a read-only volume (its lock file cannot be
/// opened for writing).
fn is_read_only_volume(err: &Error) -> bool {
    std::error::Error::source(err)
        .and_then(|source| source.downcast_ref::<std::io::Error>())
        .is_some_and(|io| io.kind() == std::io::ErrorKind::ReadOnlyFilesystem)
}

/// [`Engine::check`] once the lock is held (`locked`), or on a read-only volume.
///
/// Nothing of the index is written: the store is opened from a copy outside the index
/// (sled writes to the files it opens), and on a swap stopped half-way each part of the
/// new index is checked where it is ([`swap::Layout`]).
fn check_held(dir: &Path, config: &Config, locked: bool) -> CheckReport {
    let layout = swap::Layout::of(dir);
    let store_dir = layout.store.join(STORE_DIR);
    let mut report = CheckReport::default();
    if swap::pending(dir) {
        report.damaged(
            ".ruche/SWAP",
            "a repair, reembed, compaction or backup stopped while it swapped in its new index: the next open for writing finishes it",
            true,
        );
    }
    let recorded = match manifest::read(&layout.manifest) {
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
    if !locked {
        report.ok(
            "store/db: not opened (a read-only volume: sled opens its files only for writing); what readers use is checked below",
        );
        let seq = recorded.map_or(0, |m| m.seq);
        check_text(&layout.text, config, None, &mut report);
        check_view(&layout, seq, &mut report);
        return report;
    }
    if !store_dir.is_dir() {
        report.damaged("store/db", "missing", false);
        check_text(&layout.text, config, None, &mut report);
        return report;
    }
    let copied = tempfile::Builder::new()
        .prefix("ruche-check-")
        .tempdir()
        .map_err(|err| Error::io_at(&std::env::temp_dir(), err))
        .and_then(|copy| {
            swap::copy_owned(&store_dir, copy.path(), STORE_DIR, false)?;
            Ok(copy)
        });
    let opened = copied.and_then(|copy| {
        let store = Store::open(copy.path(), false, 16 << 20)?;
        Ok((copy, store))
    });
    let opened = match opened {
        Ok(opened) => opened,
        Err(err) => {
            report.damaged("store/db", err, false);
            check_text(&layout.text, config, None, &mut report);
            return report;
        }
    };
    // The copy is removed once the store is closed (bindings drop last to first).
    let (_copy, store) = opened;
    let loaded = match super::maintain::load_catalog(&store, true) {
        Ok(loaded) => loaded,
        Err(err) => {
            report.damaged("store/db", err, false);
            check_text(&layout.text, config, None, &mut report);
            return report;
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
        &layout.text,
        config,
        Some((found.seq, catalog.len() as u64)),
        &mut report,
    );
    check_entities(&loaded, &mut report);
    check_view(&layout, found.seq, &mut report);
    for kind in Kind::ALL {
        let part = format!("graph checkpoint ({kind}s)");
        match check_graph(&store, kind) {
            Ok(Some(points)) => report.ok(format!("{part}: {points} points, checksums match")),
            Ok(None) => report.ok(format!("{part}: none yet")),
            Err(err) => report.damaged(&part, err, true),
        }
    }
    report
}

/// Checks the text index: readable, every file's checksum, and (when the store could be
/// read) the change it includes and its document count.
fn check_text(dir: &Path, config: &Config, store: Option<(u64, u64)>, report: &mut CheckReport) {
    let text_dir = dir.join(TEXT_DIR);
    // Its last commit, opened to read only.
    let opened = last_text_commit(&text_dir).and_then(|meta| {
        TextIndex::open_snapshot(&text_dir, config.fusion.patterns_in_text, &meta)
    });
    let (text, seq) = match opened {
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
        // A writer stopped between its store's commit and its text index's: the next
        // open for writing replays the store's change log into it.
        Some((store_seq, _)) if seq < store_seq => report.ok(format!(
            "text/: behind the store (change {seq} of {store_seq}), checksums match: caught up at the next open for writing"
        )),
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
    let manifest: crate::local::hnsw::CheckpointManifest = bincode::deserialize(&bytes)
        .map_err(|err| Error::corrupt(format!("graph manifest: {err}")))?;
    let files = store.checkpoint_files(kind, manifest.files.len())?;
    crate::local::hnsw::Graph::verify(&manifest, &files)?;
    Ok(Some(manifest.n_points))
}

/// Builds a new index from every document that can still be read, in the index's
/// scratch directory, and swaps it in (the caller holds the index's lock). Sources: the
/// store (read from a copy: sled may write while it opens) and the published view; the
/// text index holds no document text. Each document's newest version is kept; a
/// document the view holds that the store's change log deleted after the view's commit
/// stays deleted.
fn salvage(
    dir: &Path,
    config: &Config,
    check: &CheckReport,
    report: &mut RepairReport,
) -> Result<()> {
    let kept = dir.join(DAMAGED_STORE);
    if kept.exists() {
        return Err(Error::invalid_input(format!(
            "{} exists (an earlier repair kept it): move it away first",
            kept.display()
        )));
    }
    let recorded = manifest::read_with_view(dir).ok().flatten();
    let staging = Staging::new(dir, "repair")?;

    // The store, from a copy.
    let store_dir = dir.join(STORE_DIR);
    let copy = staging.scratch().join("store-copy");
    let (mut from_store, store_meta) = if store_dir.exists() {
        swap::copy_all(&store_dir, &copy, false)?;
        match Store::open(&copy, false, 16 << 20) {
            Ok(store) => {
                let meta = store.meta();
                (store.read_salvageable(), Some(meta))
            }
            Err(err) => {
                tracing::warn!(error = %err, "the damaged store does not open");
                (Salvaged::default(), None)
            }
        }
    } else {
        (Salvaged::default(), None)
    };
    crate::crash::point("repair:store-read");

    // The published view: its whole list, else the base and as many parts as load.
    let view_list = recorded.as_ref().and_then(|(_, list)| list.clone());
    let from_view = view_list.as_ref().and_then(|list| read_view(dir, list));

    // Merged by document, the newest version first.
    type Key = (Kind, String, String);
    let key = |doc: &Document| {
        (
            doc.kind(),
            doc.tenant_id().to_string(),
            doc.id().to_string(),
        )
    };
    let mut merged: std::collections::HashMap<Key, (u64, Document)> = Default::default();
    let from_store_count = from_store.docs.len();
    for (_, seq, doc) in from_store.docs.drain(..) {
        let key = key(&doc);
        if merged.get(&key).is_none_or(|(newest, _)| *newest < seq) {
            merged.insert(key, (seq, doc));
        }
    }
    let mut only_in_view = 0usize;
    let mut deleted_after_view = 0usize;
    if let Some(ViewDocs { docs, meta }) = &from_view {
        let view_seq = &meta.last_seq;
        // Versions the store's change log removed after the view's commit.
        let removed: std::collections::HashSet<u64> = from_store
            .log
            .iter()
            .filter(|(seq, _)| seq > view_seq)
            .filter_map(|(_, entry)| match *entry {
                LogEntry::Delete { doc } => Some(doc),
                LogEntry::Upsert { replaced, .. } => replaced,
            })
            .collect();
        for (doc_id, seq, doc) in docs {
            if removed.contains(&doc_id.as_u64()) {
                deleted_after_view += 1;
                continue;
            }
            let key = key(doc);
            match merged.get(&key) {
                Some((newest, _)) if *newest >= *seq => {}
                _ => {
                    only_in_view += 1;
                    merged.insert(key, (*seq, doc.clone()));
                }
            }
        }
    }
    let mut docs: Vec<(u64, Document)> = merged.into_values().collect();
    docs.sort_by_key(|(seq, _)| *seq);
    let docs: Vec<Document> = docs.into_iter().map(|(_, doc)| doc).collect();
    let rules = docs.iter().filter(|d| d.kind() == Kind::Rule).count();
    let chunks = docs.iter().filter(|d| d.kind() == Kind::Chunk).count();

    // The embedder the index was made with, as the store or the view recorded it
    // (none recorded: as a new index decides, by whether the documents carry vectors).
    let meta = store_meta.or_else(|| from_view.as_ref().map(|view| view.meta.clone()));
    {
        let mut builder = Engine::builder().with_config(config.clone());
        if let Some(spec) = meta.as_ref().and_then(|m| m.embedder.as_deref()) {
            builder = builder.with_embedder_specs(spec.parse::<EmbedderSpecs>()?);
        }
        crate::crash::fail("repair:build")?;
        let engine = builder.create(staging.index())?;
        engine.upsert(docs)?;
        engine.commit()?;
        engine.close()?;
    }
    crate::crash::point("repair:built");
    staging.swap(Some(DAMAGED_STORE))?;
    report.damaged_copy = Some(kept);

    let problems: Vec<String> = check
        .damaged
        .iter()
        .filter(|d| !d.rebuildable)
        .map(|d| format!("{}: {}", d.part, d.problem))
        .collect();
    report.repaired.push(format!(
        "new store with the {rules} rules and {chunks} chunks that could be read: {from_store_count} read from the store, {only_in_view} newer or only in the files published for readers{}{}",
        match &from_view {
            Some(view) => format!(" (change {}, {} documents)", view.meta.last_seq, view.docs.len()),
            None => " (none readable)".to_string(),
        },
        if deleted_after_view > 0 {
            format!(", {deleted_after_view} left deleted as the store's change log says")
        } else {
            String::new()
        }
    ));
    report
        .repaired
        .push("the text index holds no document text: nothing to salvage from it".to_string());
    let unreadable = if from_store.unreadable > 0 {
        format!(
            ", {} unreadable blocks or entries in the store",
            from_store.unreadable
        )
    } else {
        String::new()
    };
    report.lost = match recorded {
        Some((m, _)) => {
            let lost_rules = (m.rules as usize).saturating_sub(rules);
            let lost_chunks = (m.chunks as usize).saturating_sub(chunks);
            if lost_rules + lost_chunks == 0 {
                report.repaired.push(format!(
                    "nothing lost: every one of the {} rules and {} chunks the manifest records at change {} was recovered",
                    m.rules, m.chunks, m.seq
                ));
                None
            } else {
                Some(format!(
                    "the manifest recorded {} rules and {} chunks at change {}; {lost_rules} rules and {lost_chunks} chunks were lost{unreadable} ({})",
                    m.rules,
                    m.chunks,
                    m.seq,
                    problems.join("; ")
                ))
            }
        }
        None => Some(format!(
            "unknown how many documents were lost (no readable manifest){unreadable} ({})",
            problems.join("; ")
        )),
    };
    Ok(())
}

/// The documents of a published view, each with its version and the change that wrote
/// it, and the view's meta values (its last change, its embedder).
struct ViewDocs {
    docs: Vec<(DocId, u64, Document)>,
    meta: Meta,
}

/// The documents of the published view `list` (or, when a later part is damaged, of
/// its base and the parts before).
fn read_view(dir: &Path, list: &view::ViewList) -> Option<ViewDocs> {
    let load = |list: &view::ViewList| -> Result<Option<ViewDocs>> {
        let Some(published) = view::Published::load_prefix(dir, list)? else {
            return Ok(None);
        };
        published.verified()?;
        let meta = published.meta.clone();
        let store = Store::published(published);
        let docs = store
            .read_all()?
            .into_iter()
            .map(|(doc, record, vectors)| {
                let seq = record.seq;
                Ok((doc, seq, record.to_document(vectors.as_ref())?))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(ViewDocs { docs, meta }))
    };
    let mut list = list.clone();
    loop {
        match load(&list) {
            Ok(Some(found)) => return Some(found),
            Ok(None) | Err(_) if !list.parts.is_empty() => {
                list.parts.pop();
            }
            Ok(None) => return None,
            Err(err) => {
                tracing::warn!(error = %err, "the files published for readers are unreadable");
                return None;
            }
        }
    }
}

/// Where a repair keeps a damaged store.
const DAMAGED_STORE: &str = "store.damaged";
