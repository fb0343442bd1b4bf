//! Publishing the committed state for readers ([`crate::local::store::view`]).
//!
//! The writer keeps the list of published files beside the store; every commit, every
//! feedback given and every complete graph checkpoint adds a file, then the manifest is
//! replaced (listing it) and the files it no longer lists are removed. A reader that
//! opened a file before keeps reading it (it holds the whole file); one that read the
//! manifest but not yet a file finds it gone and reads the manifest again.

use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Weak};

use super::Inner;
use super::TEXT_DIR;
use crate::Error;
use crate::Kind;
use crate::Result;
use crate::local::store::view::{self, Part, PartHeader, ViewList};
use crate::local::store::{BlockEntry, Change, Store};
use crate::local::text::TextIndex;
use crate::model::id::DocId;

/// Parts smaller than this are never worth a new base.
const MIN_PARTS_BYTES: u64 = 1 << 20;

/// The feedback windows, in a stable order.
fn feedback(store: &Store) -> Result<Vec<(String, Vec<crate::feedback::FeedbackEntry>)>> {
    let mut windows: Vec<_> = store.feedback_windows()?.into_iter().collect();
    windows.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(windows)
}

fn write_part(dir: &Path, list: &mut ViewList, what: &str, part: &Part) -> Result<view::ViewFile> {
    let name = list.new_name(what);
    let header = part.encode_header();
    view::write_sections(
        dir,
        &name,
        &[
            view::Section::Bytes(&header),
            view::Section::Entries(&part.written),
        ],
    )
}

/// Each live document's token counts, as the writer's catalog has them (a base records
/// them for readers).
pub(super) type Tokens<'a> = &'a (dyn Fn(DocId) -> [u32; 2] + Sync);

/// Publishes a base of every live document the store holds; the list then names it
/// alone (and the graphs it named).
pub(super) fn publish_base(
    dir: &Path,
    store: &Store,
    list: &mut ViewList,
    tokens: Tokens<'_>,
) -> Result<()> {
    let phase = std::time::Instant::now();
    let meta = store.meta();
    let written = store.raw_entries()?;
    let mut entities: Vec<(u64, Vec<String>)> = store
        .entity_lists()?
        .into_iter()
        .map(|(doc, list)| (doc.as_u64(), list))
        .collect();
    entities.sort_by_key(|(doc, _)| *doc);
    let part = Part {
        header: PartHeader {
            meta: Some(meta.clone()),
            feedback: feedback(store)?,
            removed: Vec::new(),
            entities,
        },
        written,
    };
    install_base(
        dir,
        list,
        &part,
        (meta.last_seq, store_dimensions(&meta)),
        tokens,
        (phase, "base published from the store"),
    )
}

/// Each kind's vector dimension as `meta` records it.
fn store_dimensions(meta: &crate::local::store::Meta) -> [Option<usize>; Kind::COUNT] {
    Kind::ALL.map(|kind| meta.dimensions_of(kind))
}

/// Writes `base` (of change `seq`, with each kind's vectors of its `dimensions`) as the list's base, a
/// mapped one ([`crate::local::store::base`]), in place of the base and parts.
fn install_base(
    dir: &Path,
    list: &mut ViewList,
    base: &Part,
    (seq, dimensions): (u64, [Option<usize>; Kind::COUNT]),
    tokens: Tokens<'_>,
    (phase, what): (std::time::Instant, &str),
) -> Result<()> {
    let encoded =
        crate::local::store::base::encode(&base.header, &base.written, dimensions, tokens)?;
    let name = list.new_name("base");
    let mut file = view::write_sections(dir, &name, &encoded.sections())?;
    file.mapped = true;
    tracing::debug!(
        elapsed_ms = phase.elapsed().as_millis() as u64,
        docs = encoded.len(),
        bytes = file.len,
        "{what}"
    );
    list.base = Some(file);
    list.parts.clear();
    list.seq = seq;
    Ok(())
}

/// Publishes a commit's changes (none for feedback alone), then merges parts or writes
/// a new base as they pile up.
pub(super) fn publish_changes(
    dir: &Path,
    store: &Store,
    list: &mut ViewList,
    changes: &[Change],
    tokens: Tokens<'_>,
) -> Result<()> {
    let meta = store.meta();
    // In order: a version written and removed by the same commit is in neither list.
    let mut written: BTreeMap<u64, &Change> = BTreeMap::new();
    let mut removed = Vec::new();
    for change in changes {
        if let Some(doc) = change.removed
            && written.remove(&doc.as_u64()).is_none()
        {
            removed.push(doc.as_u64());
        }
        if let Some((doc, _, _)) = &change.written {
            written.insert(doc.as_u64(), change);
        }
    }
    // Encoded in parallel (a first import encodes every document here).
    let (written, entities): (Vec<BlockEntry>, Vec<(u64, Vec<String>)>) = written
        .into_values()
        .collect::<Vec<_>>()
        .into_par_iter()
        .filter_map(|change| {
            let (doc, record, vectors) = change.written.as_ref()?;
            Some((
                BlockEntry::new(*doc, record, vectors),
                (doc.as_u64(), change.entities.clone()),
            ))
        })
        .unzip();
    let size = written.iter().map(BlockEntry::encoded_len).sum::<usize>() + removed.len() * 8;
    let part = Part {
        header: PartHeader {
            meta: Some(meta.clone()),
            feedback: feedback(store)?,
            removed,
            entities,
        },
        written,
    };
    // Parts that would outweigh half the base: a new base instead, made of the base,
    // the parts and this one (a first import is written once, as a base).
    let base_len = list.base.as_ref().map_or(0, |f| f.len);
    if list.parts_len() + size as u64 > (base_len / 2).max(MIN_PARTS_BYTES) {
        return rebase(dir, store, list, part, tokens);
    }
    let file = write_part(dir, list, "part", &part)?;
    list.parts.push(file);
    list.seq = meta.last_seq;
    tidy(dir, store, list, tokens)
}

/// Publishes a base of the published base and parts followed by `part` (reading the
/// store instead costs several times more: sled's scan right after a large commit).
fn rebase(
    dir: &Path,
    store: &Store,
    list: &mut ViewList,
    part: Part,
    tokens: Tokens<'_>,
) -> Result<()> {
    let phase = std::time::Instant::now();
    let mut merged = Part::default();
    for file in list.base.iter().chain(&list.parts) {
        match view::read_part(dir, file) {
            Ok(Some(earlier)) => merged = merged.merge(earlier),
            // Our own files, gone or damaged: from the store.
            _ => return publish_base(dir, store, list, tokens),
        }
    }
    let (seq, dimensions) = part
        .header
        .meta
        .as_ref()
        .map_or((list.seq, store.all_dimensions()), |meta| {
            (meta.last_seq, store_dimensions(meta))
        });
    let mut merged = merged.merge(part);
    merged.written.sort_by_key(|entry| entry.doc);
    merged.header.removed.clear();
    install_base(
        dir,
        list,
        &merged,
        (seq, dimensions),
        tokens,
        (phase, "base published from the published files"),
    )
}

/// Merges the last two parts while the last is at least half the size of the one
/// before: the parts' sizes then fall geometrically, so a run of commits leaves a few
/// files, each byte rewritten a few times (until the parts make a new base).
fn tidy(dir: &Path, store: &Store, list: &mut ViewList, tokens: Tokens<'_>) -> Result<()> {
    while let [.., before, last] = list.parts.as_slice()
        && last.len * 2 >= before.len
    {
        let (Some(before_part), Some(last_part)) =
            (view::read_part(dir, before)?, view::read_part(dir, last)?)
        else {
            // Our own files, gone: start again from the store.
            return publish_base(dir, store, list, tokens);
        };
        let merged = before_part.merge(last_part);
        let file = write_part(dir, list, "part", &merged)?;
        let n = list.parts.len();
        list.parts.truncate(n - 2);
        list.parts.push(file);
    }
    Ok(())
}

/// Publishes a graph checkpoint: its manifest, and the graph as flat lists
/// ([`crate::local::hnsw::FlatGraph`]), in one file.
pub(super) fn publish_graph(
    dir: &Path,
    list: &mut ViewList,
    kind: Kind,
    manifest: &[u8],
    flat: &[u8],
    codes: Option<&[u8]>,
) -> Result<()> {
    let name = list.new_name(&format!("graph-{kind}"));
    let sections: Vec<&[u8]> = [manifest, flat].into_iter().chain(codes).collect();
    let manifest = view::write_file(dir, &name, &sections)?;
    list.set_graph(
        kind,
        view::ViewGraph {
            manifest,
            files: Vec::new(),
        },
    );
    Ok(())
}

/// Whether every file `list` names is there, of its length (opening checks no more:
/// reading every file would cost as much as the store; [`spawn_verifier`] reads them
/// after the open).
pub(super) fn present(dir: &Path, list: &ViewList) -> bool {
    list.files().all(|file| file_present(dir, file))
}

/// Whether a published file is there, of its length.
pub(super) fn file_present(dir: &Path, file: &view::ViewFile) -> bool {
    std::fs::metadata(view::path_of(dir, file)).is_ok_and(|meta| meta.len() == file.len)
}

/// Reads every published file of a writer just opened, in the background, and
/// publishes again what is damaged (a reader refuses a damaged file; the next writer
/// must not leave it so). [`super::Engine::close`] waits for it; a dropped engine stops
/// it at the next file.
pub(super) fn spawn_verifier(inner: &Arc<Inner>) -> Result<Option<std::thread::JoinHandle<()>>> {
    let engine: Weak<Inner> = Arc::downgrade(inner);
    let (dir, list) = {
        let view = inner.local.view.lock().unwrap_or_else(|p| p.into_inner());
        match view.as_ref() {
            Some(list) => (inner.dir.clone(), list.clone()),
            None => return Ok(None),
        }
    };
    std::thread::Builder::new()
        .name("ruche-view-check".to_string())
        .spawn(move || {
            let mut damaged = Vec::new();
            for file in list.files() {
                if engine.strong_count() == 0 {
                    return;
                }
                if view::read_file(&dir, file).is_err() {
                    damaged.push(file.name.clone());
                }
            }
            if damaged.is_empty() {
                return;
            }
            let Some(inner) = engine.upgrade() else {
                return;
            };
            tracing::warn!(files = ?damaged, "damaged published files; publishing them again");
            let _serial = inner.commit_lock.lock().unwrap_or_else(|p| p.into_inner());
            if let Err(err) = inner.publish(Publish::Again { damaged: &damaged }) {
                tracing::warn!(error = %err, "could not publish again");
            }
        })
        .map(Some)
        .map_err(crate::Error::from)
}

/// A list without a base (the next publish writes one) that never reuses a name, and
/// keeps its graphs (a graph covers a prefix of the changes: still valid).
fn unpublished(dir: &Path, list: &ViewList) -> ViewList {
    ViewList {
        next_file: list.next_file.max(view::next_free_number(dir)),
        graphs: list.graphs.clone(),
        retired_graphs: list.retired_graphs.clone(),
        ..ViewList::default()
    }
}

/// What to publish.
pub(super) enum Publish<'a> {
    /// A commit's changes (none: the feedback windows changed).
    Changes(&'a [Change]),
    /// A graph checkpoint: its manifest, as the store keeps it, and the graph's
    /// [`crate::local::hnsw::FlatGraph`] encoding.
    Graph {
        kind: Kind,
        manifest: &'a [u8],
        flat: &'a [u8],
        /// Its nodes' codes ([`crate::local::hnsw::NodeCodes`]), when the engine has them.
        codes: Option<&'a [u8]>,
    },
    /// The documents again, and the graph checkpoints among `damaged` (file names) from
    /// the store's.
    Again { damaged: &'a [String] },
    /// The store's graph checkpoint of a kind.
    StoredGraph(Kind),
}

impl Inner {
    /// Publishes `what`, then records the new list in the manifest and removes the
    /// files it no longer names. Without a published base (the last publish failed),
    /// a base is published first. When publishing fails, the manifest is written
    /// without a view (readers then get [`crate::ErrorKind::NotPublished`] until the
    /// next commit or open for writing publishes a base) and the error returned.
    ///
    /// The caller holds the commit lock, so that the manifest and the files are of one
    /// commit.
    pub(super) fn publish(&self, what: Publish<'_>) -> Result<()> {
        let mut guard = self.local.view.lock().unwrap_or_else(|p| p.into_inner());
        let mut list = guard.take().unwrap_or_default();
        let catalog = self.local.snapshot();
        let tokens = |doc: DocId| catalog.get(doc).map_or([0, 0], |entry| entry.tokens);
        let published = (|| {
            crate::crash::fail("publish")?;
            if list.base.is_none() {
                // The base holds every committed change.
                publish_base(&self.dir, &self.local.store, &mut list, &tokens)?;
                if let Publish::Changes(_) | Publish::Again { .. } = what {
                    return Ok(());
                }
            }
            match what {
                Publish::Changes(changes) => {
                    publish_changes(&self.dir, &self.local.store, &mut list, changes, &tokens)
                }
                Publish::Graph {
                    kind,
                    manifest,
                    flat,
                    codes,
                } => publish_graph(&self.dir, &mut list, kind, manifest, flat, codes),
                Publish::Again { damaged } => {
                    publish_base(&self.dir, &self.local.store, &mut list, &tokens)?;
                    let is_damaged = |graph: &Option<view::ViewGraph>| {
                        graph.as_ref().is_some_and(|graph| {
                            std::iter::once(&graph.manifest)
                                .chain(&graph.files)
                                .any(|file| damaged.contains(&file.name))
                        })
                    };
                    for retired in &mut list.retired_graphs {
                        if is_damaged(retired) {
                            *retired = None;
                        }
                    }
                    for kind in Kind::ALL {
                        if !is_damaged(&list.graphs.get(kind.index()).cloned().flatten()) {
                            continue;
                        }
                        list.graphs[kind.index()] = None;
                        self.publish_stored_graph(&mut list, kind)?;
                    }
                    Ok(())
                }
                Publish::StoredGraph(kind) => self.publish_stored_graph(&mut list, kind),
            }
        })();
        match published {
            Ok(()) => {
                list.text = text_snapshot(&self.local.text, &self.dir, list.seq);
                crate::crash::point("publish:files-written");
                if let Err(err) = self.write_manifest_with(Some(&list)) {
                    // The files are written, the manifest that names them is not: start
                    // again from a base, under new names.
                    *guard = Some(unpublished(&self.dir, &list));
                    return Err(err);
                }
                protect_snapshot(&self.local.text, &self.dir, &list);
                crate::crash::point("publish:manifest-written");
                view::remove_unlisted(&self.dir, &list);
                *guard = Some(list);
                Ok(())
            }
            Err(err) => {
                tracing::warn!(error = %err, "could not publish for readers");
                *guard = Some(unpublished(&self.dir, &list));
                self.write_manifest_with(None)?;
                Err(err)
            }
        }
    }

    /// Publishes the graph checkpoint of `kind` the store keeps, if any. Its edges come
    /// from this engine's graph when that is the checkpoint (loaded, nothing inserted
    /// since), else from the checkpoint read back through hnsw_rs.
    fn publish_stored_graph(&self, list: &mut ViewList, kind: Kind) -> Result<()> {
        let Some(manifest_bytes) = self.local.store.checkpoint_manifest(kind)? else {
            return Ok(());
        };
        let manifest =
            bincode::deserialize::<crate::local::hnsw::CheckpointManifest>(&manifest_bytes)
                .map_err(|err| crate::Error::corrupt(format!("graph manifest: {err}")))?;
        let vectors = &self.local.vectors;
        let graph = vectors.graph(kind);
        let loaded = vectors.dirty(kind) == 0
            && vectors.checkpointed(kind) == vectors.covered(kind)
            && vectors.covered(kind) == manifest.covered_seq
            && graph.len() == manifest.n_points;
        let flat = if loaded {
            graph.flat()
        } else {
            let files = self
                .local
                .store
                .checkpoint_files(kind, manifest.files.len())?;
            crate::local::hnsw::Graph::verify(&manifest, &files)?;
            match crate::local::hnsw::Graph::flat_of(&files[0])? {
                Some(flat) => flat,
                // hnsw_rs's dump (earlier versions): only the edges are wanted, the
                // vectors may stay zeros.
                None => {
                    let files = crate::local::hnsw::Graph::unpack(&manifest, files, |_| None)?;
                    crate::local::hnsw::Graph::load(&manifest, &files, vectors.params(), &self.dir)?
                        .flat()
                }
            }
        };
        // The codes of this engine's walk, when it walks this checkpoint; else readers
        // make them from their vectors.
        let codes = vectors.flat_codes(kind, manifest.covered_seq);
        publish_graph(
            &self.dir,
            list,
            kind,
            &manifest_bytes,
            &flat.encode(),
            codes.as_deref(),
        )
    }

    /// Forgets the published base, so that the next publish writes one (the store
    /// holds a commit the published files do not).
    pub(super) fn unpublish(&self) {
        let mut guard = self.local.view.lock().unwrap_or_else(|p| p.into_inner());
        let list = guard.take().unwrap_or_default();
        *guard = Some(unpublished(&self.dir, &list));
    }
}

/// The text index's `meta.json` as it is now (what a reader of an earlier version's
/// manifest opens).
pub(crate) fn last_text_commit(text_dir: &Path) -> Result<String> {
    let path = text_dir.join(crate::local::text::directory::META_FILE);
    std::fs::read_to_string(&path).map_err(|err| Error::io_at(&path, err))
}

/// The text index's last commit, to publish with the view of change `seq`, when it is
/// that change's (else readers open the text index's own last commit, as an earlier
/// version's do).
pub(crate) fn text_snapshot(text: &TextIndex, dir: &Path, seq: u64) -> Option<String> {
    match text.snapshot_protected(&dir.join(TEXT_DIR)) {
        Ok((meta, text_seq)) if text_seq == seq => Some(meta),
        Ok((_, text_seq)) => {
            tracing::warn!(
                text = text_seq,
                published = seq,
                "the text index is not of the published commit"
            );
            None
        }
        Err(err) => {
            tracing::warn!(error = %err, "could not read the text index's commit");
            None
        }
    }
}

/// Keeps the files of the text commit `view` names, once its manifest is written.
pub(crate) fn protect_snapshot(text: &TextIndex, dir: &Path, view: &ViewList) {
    if let Some(meta) = &view.text
        && let Err(err) = text.protect(&dir.join(TEXT_DIR), meta)
    {
        tracing::warn!(error = %err, "could not list the published text commit's files");
    }
}
