//! Keeping the derived indexes in step with the store.
//!
//! At open: the catalog is loaded from the store; the text index is opened and caught up
//! from the change log, or rebuilt when it is missing, corrupt or cannot be caught up;
//! each graph is loaded from its checkpoint by a background loader (searches scan
//! exactly until it is in; dropping the engine does not wait for it). Then a worker
//! thread inserts the tail of each graph (vectors committed after what the graph
//! covers), rebuilds a graph when too many of its entries are dead, and stores
//! checkpoints when enough has changed.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use rayon::prelude::*;

use super::Reader;
use super::{Counters, Inner};
use crate::local::catalog::{Catalog, Entry, Placed};
use crate::local::hnsw::{CheckpointManifest, Graph};
use crate::local::store::view::PublishedGraph;
use crate::local::store::{DocRows, Normalised};
use crate::local::store::{LogEntry, Store, StoredVectors};
use crate::local::text::{Protected, TextIndex};
use crate::model::id::{DocId, VectorKey};
use crate::{Error, Kind, Result};

/// Vectors inserted into a graph per round of the worker.
const INSERT_BATCH: usize = 2_048;

/// The catalog as the store holds it, and how its entity graph was found.
pub(super) struct Loaded {
    pub(super) catalog: Catalog,
    /// Documents whose entity lists the store did not hold (an index written before
    /// it kept them, or lists a repair dropped): derived from the documents, to store.
    pub(super) derived: Vec<(DocId, Vec<String>)>,
    /// With `verify`: the documents whose stored lists differ from what their text
    /// gives now.
    pub(super) mismatched: Vec<DocId>,
    /// The documents whose token counts are still to read from the text index: `None`
    /// for all of them (a mapped base records its own).
    pub(super) untokened: Option<Vec<DocId>>,
}

/// Reads every live document, its vectors and its entities from the store; with
/// `verify`, derives every document's entities again to compare them with the stored
/// ones (`ruche check`).
pub(super) fn load_catalog(store: &Store, verify: bool) -> Result<Loaded> {
    if let Some(view) = store.published_view()
        && view.mapped_base().is_some()
    {
        return load_mapped(view);
    }
    let phase = std::time::Instant::now();
    let records = store.read_all()?;
    let mut stored = store.entity_lists()?;
    tracing::debug!(
        elapsed_ms = phase.elapsed().as_millis() as u64,
        "store read"
    );
    let phase = std::time::Instant::now();
    let with_lists: Vec<_> = records
        .into_iter()
        .map(|(doc, record, vectors)| {
            let list = stored.remove(&doc);
            (doc, record, vectors, list)
        })
        .collect();
    let entries: Vec<Built> = with_lists
        .into_par_iter()
        .map(|(doc, record, vectors, list)| {
            let seq = record.seq;
            let document = record.into_document()?;
            let (entities, derived, mismatched) = match list {
                Some(list) => {
                    let list = crate::local::graph::without_own_id(list, document.id());
                    let mismatched = verify && crate::local::graph::entities_of(&document) != list;
                    (list, false, mismatched)
                }
                None => (crate::local::graph::entities_of(&document), true, false),
            };
            // Tokens are read from the text index once it is open (`fill_tokens`).
            let entry = Entry::new(document, seq);
            Ok((doc, entry, vectors, entities, derived, mismatched))
        })
        .collect::<Result<_>>()?;
    let mut loaded = Loaded {
        catalog: Catalog::default(),
        derived: Vec::new(),
        mismatched: Vec::new(),
        untokened: None,
    };
    let mut placed = place_vectors(&mut loaded.catalog, &entries, store.all_dimensions());
    // The decoded vectors are in the arenas now: free them on every thread, not one.
    let mut entries = entries;
    entries.par_iter_mut().for_each(|entry| entry.2 = None);
    // The entity graph is built on another thread while the rest of the catalog is.
    let mut links = Vec::with_capacity(entries.len());
    let mut rest = Vec::with_capacity(entries.len());
    for ((doc, entry, _, entities, derived, mismatched), placed) in
        entries.into_iter().zip(placed.drain(..))
    {
        if derived {
            loaded.derived.push((doc, entities.clone()));
        }
        if mismatched {
            loaded.mismatched.push(doc);
        }
        links.push((doc, entry.kind(), entry.tenant_id().to_string(), entities));
        rest.push((doc, entry, placed));
    }
    let catalog = &mut loaded.catalog;
    let (graph, ()) = rayon::join(
        move || {
            let mut graph = crate::local::graph::EntityGraph::default();
            for (doc, kind, tenant, entities) in links {
                graph.insert(doc, kind, &tenant, entities);
            }
            graph
        },
        || {
            for (doc, entry, placed) in rest {
                catalog.insert_placed(doc, entry, placed);
            }
        },
    );
    loaded.catalog.graph = graph;
    tracing::debug!(
        elapsed_ms = phase.elapsed().as_millis() as u64,
        "catalog built"
    );
    Ok(loaded)
}

/// A reader's catalog of a mapped base: built from the base's table (no document decoded,
/// its rows read in place), then the parts' changes applied.
fn load_mapped(view: &crate::local::store::view::Published) -> Result<Loaded> {
    let phase = std::time::Instant::now();
    let base = view.mapped_base().expect("a mapped base");
    let mut catalog = Catalog::from_base(base, view.take_base_entities());
    for doc in view.removed_from_base() {
        catalog.remove(doc);
    }
    let mut entities = view.take_entities();
    let beside =
        view.docs_beside_base(|entry| Ok((entry.doc, entry.record()?, entry.vectors()?)))?;
    let mut untokened = Vec::with_capacity(beside.len());
    for (doc, record, vectors) in beside {
        let seq = record.seq;
        let document = record.into_document()?;
        let list = match entities.remove(&doc) {
            Some(list) => crate::local::graph::without_own_id(list, document.id()),
            None => crate::local::graph::entities_of(&document),
        };
        let rows = vectors.as_ref().and_then(DocRows::from_stored);
        catalog.insert(doc, Entry::new(document, seq), rows, list);
        untokened.push(doc);
    }
    tracing::debug!(
        elapsed_ms = phase.elapsed().as_millis() as u64,
        docs = catalog.len(),
        beside_base = untokened.len(),
        "catalog of the mapped base built"
    );
    Ok(Loaded {
        catalog,
        derived: Vec::new(),
        mismatched: Vec::new(),
        untokened: Some(untokened),
    })
}

/// A document read at open: its entry, stored vectors and entity list, whether that list
/// was derived (not stored) and whether it differs from the text's.
type Built = (DocId, Entry, Option<StoredVectors>, Vec<String>, bool, bool);

/// Writes the vectors of `entries` straight into one arena per kind, allocated once and
/// filled in parallel (each document writes its own disjoint rows), and gives the
/// arenas to `catalog`; returns where each entry's rows are.
fn place_vectors(
    catalog: &mut Catalog,
    entries: &[Built],
    dims: [Option<usize>; Kind::COUNT],
) -> Vec<Option<Placed>> {
    use rayon::prelude::*;
    let mut placed: Vec<Option<Placed>> = entries.iter().map(|_| None).collect();
    for kind in Kind::ALL {
        let Some(dim) = dims[kind.index()].filter(|&dim| dim > 0) else {
            continue;
        };
        let with_vectors: Vec<(usize, &StoredVectors)> = entries
            .iter()
            .enumerate()
            .filter(|(_, (_, entry, ..))| entry.kind() == kind)
            .filter_map(|(i, (_, _, vectors, ..))| Some((i, vectors.as_ref()?)))
            .collect();
        let capacities: Vec<usize> = with_vectors
            .iter()
            .map(|(_, vectors)| DocRows::capacity(vectors))
            .collect();
        let total: usize = capacities.iter().sum();
        if total == 0 || u32::try_from(total).is_err() {
            continue;
        }
        let mut data = vec![0.0f32; total * dim];
        let mut inverse = vec![0.0f32; total];
        let mut slices = Vec::with_capacity(with_vectors.len());
        let (mut rest, mut rest_inverse) = (data.as_mut_slice(), inverse.as_mut_slice());
        for capacity in &capacities {
            let (head, tail) = rest.split_at_mut(capacity * dim);
            let (head_inverse, tail_inverse) = rest_inverse.split_at_mut(*capacity);
            slices.push((head, head_inverse));
            rest = tail;
            rest_inverse = tail_inverse;
        }
        let rows: Vec<Vec<u16>> = with_vectors
            .par_iter()
            .zip(slices.into_par_iter())
            .map(|((_, vectors), (out, out_inverse))| DocRows::fill(vectors, dim, out, out_inverse))
            .collect();
        let mut indices = vec![0u16; total];
        let mut start = 0u32;
        for (((i, _), rows), capacity) in with_vectors.iter().zip(rows).zip(&capacities) {
            if !rows.is_empty() {
                indices[start as usize..start as usize + rows.len()].copy_from_slice(&rows);
                placed[*i] = Some(Placed {
                    start,
                    rows: rows.len(),
                });
            }
            start += *capacity as u32;
        }
        catalog.adopt_arena(kind, dim, data, inverse, indices);
    }
    placed
}

/// Copies each live document's token counts from the text index into the catalog,
/// where the per-tenant BM25 statistics are summed.
pub(super) fn fill_tokens(text: &TextIndex, catalog: &mut Catalog) -> Result<()> {
    for (doc, tokens) in text.token_counts()? {
        catalog.set_tokens(doc, tokens);
    }
    Ok(())
}

/// [`fill_tokens`] for `docs` alone (the others' counts are known), or for all when
/// `docs` is `None`; a lookup per document while they are few, one pass over the text
/// index's counts otherwise.
pub(super) fn fill_tokens_of(
    text: &TextIndex,
    catalog: &mut Catalog,
    docs: Option<&[DocId]>,
) -> Result<()> {
    match docs {
        Some(docs) if docs.len() * 8 < catalog.len() => {
            for (doc, tokens) in text.token_counts_of(docs)? {
                catalog.set_tokens(doc, tokens);
            }
            Ok(())
        }
        _ => fill_tokens(text, catalog),
    }
}

/// Opens the text index, catching it up or rebuilding it as needed.
pub(super) fn open_text(
    dir: &Path,
    store: &Store,
    catalog: &Catalog,
    counters: &Counters,
    create: bool,
    patterns_in_text: bool,
    protected: &Protected,
) -> Result<TextIndex> {
    let last_seq = store.meta().last_seq;
    if create {
        return rebuild_text(dir, catalog, last_seq, patterns_in_text, protected);
    }
    match TextIndex::open(dir, patterns_in_text, protected) {
        Ok((text, seq)) if seq == last_seq => return Ok(text),
        Ok((text, seq)) if seq < last_seq => match catch_up(&text, store, seq, last_seq) {
            Ok(replayed) => {
                counters
                    .text_replayed
                    .fetch_add(replayed, Ordering::Relaxed);
                tracing::info!(from = seq, to = last_seq, replayed, "text index caught up");
                return Ok(text);
            }
            Err(err) => tracing::warn!(error = %err, "text index could not catch up; rebuilding"),
        },
        Ok((_, seq)) => {
            // The store is the source of truth, but one that is behind a derived index lost
            // committed data: never "catch up" the intact copy downward to it.
            return Err(Error::corrupt(format!(
                "store/db is behind the text index (change {last_seq} < {seq}): the store                  lost committed data; run `ruche check` and `ruche repair`, or restore a backup"
            )));
        }
        Err(_) if !dir.exists() => {
            tracing::info!("no text index yet; building it from the store");
        }
        Err(err) => tracing::warn!(
            error = %err,
            cause = %std::error::Error::source(&err).map(ToString::to_string).unwrap_or_default(),
            "text index unreadable; rebuilding it from the store"
        ),
    }
    counters.text_rebuilds.fetch_add(1, Ordering::Relaxed);
    rebuild_text(dir, catalog, last_seq, patterns_in_text, protected)
}

/// Replays the change log after `from` into `text`; returns how many entries it applied.
fn catch_up(text: &TextIndex, store: &Store, from: u64, to: u64) -> Result<u64> {
    let entries = store.log_after(from)?;
    // The log must hold every entry from `from + 1` on, else it was truncated too far.
    let contiguous = entries
        .iter()
        .enumerate()
        .all(|(i, (seq, _))| *seq == from + 1 + i as u64);
    if !contiguous || entries.last().map(|(seq, _)| *seq) != Some(to) {
        return Err(Error::corrupt(
            "change log does not reach the text index's sequence number",
        ));
    }
    for (_, entry) in &entries {
        match *entry {
            LogEntry::Upsert { doc, replaced } => {
                if let Some(replaced) = replaced {
                    text.delete(DocId::new(replaced))?;
                }
                let doc = DocId::new(doc);
                // Idempotent: the version may already be in the index.
                text.delete(doc)?;
                // A version removed later in the log is no longer in the store.
                if let Some((record, _)) = store.doc(doc)? {
                    text.add_document(doc, &record.into_document()?)?;
                }
            }
            LogEntry::Delete { doc } => text.delete(DocId::new(doc))?,
        }
    }
    text.commit(to)?;
    text.reload()?;
    store.truncate_log(to)?;
    Ok(entries.len() as u64)
}

fn rebuild_text(
    dir: &Path,
    catalog: &Catalog,
    last_seq: u64,
    patterns_in_text: bool,
    protected: &Protected,
) -> Result<TextIndex> {
    let text = TextIndex::create(dir, patterns_in_text, protected)?;
    let docs: Vec<_> = catalog.iter().collect();
    // Analysed in parallel, a slice at a time (the analysed text is held until added).
    for slice in docs.chunks(4_096) {
        let prepared: Vec<_> = slice
            .par_iter()
            .map(|(doc, entry)| Ok(text.prepare(*doc, entry.doc()?)))
            .collect::<Result<Vec<_>>>()?;
        for prepared in prepared {
            text.add_prepared(prepared)?;
        }
    }
    text.commit(last_seq)?;
    text.reload()?;
    Ok(text)
}

/// Removes the scratch directories a process left behind (the caller holds the lock).
pub(super) fn remove_scratch(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let ours = name
            .to_string_lossy()
            .starts_with(crate::local::hnsw::SCRATCH_PREFIX)
            && entry.file_type().is_ok_and(|t| t.is_dir());
        if let Some(err) = ours
            .then(|| std::fs::remove_dir_all(entry.path()).err())
            .flatten()
        {
            tracing::warn!(path = %entry.path().display(), error = %err, "could not remove a scratch directory");
        }
    }
}

/// Loads each kind's graph from its checkpoint, in the background; a missing or damaged
/// checkpoint leaves an empty graph that the worker fills from the store.
///
/// The loader holds the engine only while it reads from the store and while it installs
/// a graph, never while hnsw_rs parses one (seconds at 100,000 vectors): dropping the
/// engine does not wait for a load nobody will use, and releases the index at once.
fn load_graphs(engine: &Weak<Inner>) {
    for kind in Kind::ALL {
        let read = {
            let Some(inner) = engine.upgrade() else {
                return;
            };
            if inner.worker.stop.load(Ordering::Acquire) {
                return;
            }
            if inner.local.store.is_read_only() {
                if inner.local.vectors.has_flat(kind) {
                    continue;
                }
                // A graph an earlier version published: hnsw_rs reads its files in
                // place (a reader writes nothing, and has no copy to make).
                published_checkpoint(&inner.local.store, kind)
                    .map(|found| found.map(|found| (found, inner.local.vectors.params())))
            } else {
                read_checkpoint(&inner.local.store, kind).and_then(|found| {
                    let Some((manifest, files)) = found else {
                        return Ok(None);
                    };
                    let catalog = inner.local.snapshot();
                    let files = Graph::unpack(&manifest, files, |key| {
                        crate::local::vector::catalog_vector(&catalog, kind, key)
                    })?;
                    Ok(Some((
                        Found::Bytes(manifest, files, inner.dir.clone()),
                        inner.local.vectors.params(),
                    )))
                })
            }
        };
        let loaded = match read {
            Ok(None) => continue,
            Ok(Some((Found::Bytes(manifest, files, scratch), params))) => {
                Graph::load(&manifest, &files, params, &scratch)
                    .map(|graph| (graph, manifest.covered_seq))
            }
            Ok(Some((Found::InPlace(manifest, dir, basename), params))) => {
                Graph::load_from(&manifest, &dir, &basename, params)
                    .map(|graph| (graph, manifest.covered_seq))
            }
            Err(err) => Err(err),
        };
        let Some(inner) = engine.upgrade() else {
            return;
        };
        match loaded {
            Ok((graph, covered)) => {
                // Searches walk a flat copy, whose descent keeps a beam.
                let flat = graph.flat();
                let catalog = inner.local.snapshot();
                let vectors = &inner.local.vectors;
                vectors.install(kind, graph, &catalog, covered, true);
                vectors.set_flat(kind, flat, None, &catalog, covered);
                inner
                    .counters
                    .graph_checkpoint_loads
                    .fetch_add(1, Ordering::Relaxed);
            }
            Err(err) => {
                tracing::warn!(kind = %kind, error = %err, "graph checkpoint unusable; rebuilding");
            }
        }
    }
}

/// A graph checkpoint found: its bytes (a writer's, from the store, [unpacked]
/// (Graph::unpack), to write into a scratch directory of the index to load), or where
/// its published files lie (a reader's).
enum Found {
    Bytes(CheckpointManifest, Vec<Vec<u8>>, std::path::PathBuf),
    InPlace(CheckpointManifest, std::path::PathBuf, String),
}

/// Installs, before a reader's first search, the graphs published as flat lists (a
/// read and a check of a few bytes per edge); one that is damaged is left out, with a
/// warning, and searches scan exactly.
pub(super) fn install_published_graphs(inner: &Inner, read: PublishedGraphs) {
    for (kind, graph) in read {
        let phase = std::time::Instant::now();
        match graph.and_then(|graph| install_published_graph(inner, kind, graph)) {
            Ok(None) => {}
            Ok(Some(points)) => tracing::debug!(
                kind = %kind,
                points,
                elapsed_ms = phase.elapsed().as_millis() as u64,
                "published graph installed"
            ),
            Err(err) => {
                tracing::warn!(kind = %kind, error = %err, "published graph unusable; scanning exactly");
            }
        }
    }
}

/// Each kind's published graph, read and decoded (before the catalog it is installed
/// over is built: a reader reads them meanwhile).
pub(super) type PublishedGraphs = Vec<(Kind, Result<Option<PublishedGraph>>)>;

/// Reads the published graphs of `store` (a reader's).
pub(super) fn read_published_graphs(store: &Store) -> PublishedGraphs {
    Kind::ALL
        .into_iter()
        .map(|kind| (kind, store.published_graph(kind)))
        .collect()
}

/// Installs `kind`'s published flat graph, if it has one; returns its number of points.
fn install_published_graph(
    inner: &Inner,
    kind: Kind,
    graph: Option<PublishedGraph>,
) -> Result<Option<usize>> {
    let Some(PublishedGraph::Flat {
        manifest,
        flat,
        codes,
    }) = graph
    else {
        return Ok(None);
    };
    let manifest = checked_manifest(&inner.local.store, kind, &manifest)?;
    if flat.len() != manifest.n_points {
        return Err(Error::corrupt("published graph: point count mismatch"));
    }
    let catalog = inner.local.snapshot();
    inner
        .local
        .vectors
        .install_flat(kind, flat, codes, &catalog, manifest.covered_seq);
    inner
        .counters
        .graph_checkpoint_loads
        .fetch_add(1, Ordering::Relaxed);
    Ok(Some(manifest.n_points))
}

/// Where a reader finds `kind`'s published checkpoint, its files checked (one an
/// earlier version published as hnsw_rs's dump).
fn published_checkpoint(store: &Store, kind: Kind) -> Result<Option<Found>> {
    let Some(PublishedGraph::Raw {
        manifest,
        dir,
        basename,
    }) = store.published_graph(kind)?
    else {
        return Ok(None);
    };
    let manifest = checked_manifest(store, kind, &manifest)?;
    Ok(Some(Found::InPlace(manifest, dir, basename)))
}

/// A checkpoint's manifest of `kind`, decoded and checked against that kind's dimension.
fn checked_manifest(store: &Store, kind: Kind, bytes: &[u8]) -> Result<CheckpointManifest> {
    let manifest = decode_manifest(bytes)?;
    if Some(manifest.dimensions) != store.dimensions(kind) && manifest.n_points > 0 {
        return Err(Error::corrupt("graph checkpoint has another dimension"));
    }
    Ok(manifest)
}

/// The manifest and files of `kind`'s checkpoint, if it has one.
fn read_checkpoint(
    store: &Store,
    kind: Kind,
) -> Result<Option<(CheckpointManifest, Vec<Vec<u8>>)>> {
    let Some(manifest_bytes) = store.checkpoint_manifest(kind)? else {
        return Ok(None);
    };
    let manifest = checked_manifest(store, kind, &manifest_bytes)?;
    let phase = std::time::Instant::now();
    let files = store.checkpoint_files(kind, manifest.files.len())?;
    tracing::debug!(
        kind = %kind,
        elapsed_ms = phase.elapsed().as_millis() as u64,
        bytes = files.iter().map(Vec::len).sum::<usize>(),
        "checkpoint read from the store"
    );
    Ok(Some((manifest, files)))
}

fn decode_manifest(bytes: &[u8]) -> Result<CheckpointManifest> {
    bincode::deserialize(bytes).map_err(|err| Error::corrupt(format!("graph manifest: {err}")))
}

/// Starts the background threads: the checkpoint loader (detached, see
/// [`load_graphs`]) and the graph maintenance worker, which starts once the loader is
/// done. Returns the worker.
pub(super) fn spawn_worker(inner: Arc<Inner>) -> Result<JoinHandle<()>> {
    spawn_loader(&inner)?;
    std::thread::Builder::new()
        .name("ruche-graph".to_string())
        .spawn(move || worker_loop(&inner))
        .map_err(Error::from)
}

/// Starts the checkpoint loader (detached, see [`load_graphs`]); alone, it is a
/// reader's background thread: a reader never builds or stores a graph.
pub(super) fn spawn_loader(inner: &Arc<Inner>) -> Result<()> {
    let engine = Arc::downgrade(inner);
    std::thread::Builder::new()
        .name("ruche-graph-load".to_string())
        .spawn(move || {
            /// Marks the checkpoints loaded when dropped, even if loading panicked, so
            /// that no reader waits forever.
            struct Loaded(Weak<Inner>);
            impl Drop for Loaded {
                fn drop(&mut self) {
                    if let Some(inner) = self.0.upgrade() {
                        inner.worker.set_loaded();
                    }
                }
            }
            let phase = std::time::Instant::now();
            let _loaded = Loaded(engine.clone());
            load_graphs(&engine);
            tracing::debug!(
                elapsed_ms = phase.elapsed().as_millis() as u64,
                "graphs loaded"
            );
        })
        .map(drop)
        .map_err(Error::from)
}

fn worker_loop(inner: &Inner) {
    let signal = &inner.worker;
    {
        let mut state = signal.state.lock().unwrap_or_else(|p| p.into_inner());
        state.busy = true;
    }
    if !signal.wait_loaded_or_stopped() {
        let mut state = signal.state.lock().unwrap_or_else(|p| p.into_inner());
        state.busy = false;
        signal.idle.notify_all();
        return;
    }
    publish_loaded_graphs(inner);
    loop {
        {
            let mut state = signal.state.lock().unwrap_or_else(|p| p.into_inner());
            while !state.work && !signal.stop.load(Ordering::Acquire) {
                state = signal.wake.wait(state).unwrap_or_else(|p| p.into_inner());
            }
            if signal.stop.load(Ordering::Acquire) {
                state.busy = false;
                signal.idle.notify_all();
                return;
            }
            state.work = false;
            state.busy = true;
        }
        let mut more = false;
        for kind in Kind::ALL {
            match maintain_graph(inner, kind) {
                Ok(unfinished) => more |= unfinished,
                Err(err) => tracing::warn!(kind = %kind, error = %err, "graph maintenance failed"),
            }
        }
        let mut state = signal.state.lock().unwrap_or_else(|p| p.into_inner());
        state.busy = false;
        state.work |= more;
        if !state.work {
            signal.idle.notify_all();
        }
    }
}

/// Publishes the loaded checkpoints readers do not have yet (an index of an earlier
/// version, or one whose view was published again) when they cover every committed
/// vector; one with a tail is published when the worker has inserted it.
fn publish_loaded_graphs(inner: &Inner) {
    for kind in Kind::ALL {
        let published = inner
            .local
            .view
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_some_and(|list| list.graph(kind).is_some());
        let vectors = &inner.local.vectors;
        let loaded = vectors.checkpointed(kind) > 0 && vectors.dirty(kind) == 0;
        let complete = loaded
            && inner
                .local
                .snapshot()
                .vectors_after(kind, vectors.covered(kind))
                .next()
                .is_none();
        if published || !complete {
            continue;
        }
        let _serial = inner.commit_lock.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(err) = inner.publish(super::publish::Publish::StoredGraph(kind)) {
            tracing::warn!(kind = %kind, error = %err, "could not publish the graph checkpoint");
        }
    }
}

/// One round of maintenance of one graph; returns whether work is left.
fn maintain_graph(inner: &Inner, kind: Kind) -> Result<bool> {
    let Some(dim) = inner.local.store.dimensions(kind) else {
        return Ok(false);
    };
    let vectors = &inner.local.vectors;
    let graph = vectors.graph(kind);
    let covered = vectors.covered(kind);
    let catalog = inner.local.snapshot();
    // Live vectors are nodes or left out (copies of a node's code); counted by document,
    // a document with some rows left out counts all of them.
    let left_out_rows: usize = graph
        .left_out()
        .iter()
        .filter_map(|&doc| catalog.vectors(doc))
        .map(|vectors| vectors.rows.len())
        .sum();
    let live_nodes = catalog
        .n_vectors_upto(kind, covered)
        .saturating_sub(left_out_rows);
    drop(catalog);
    let dead = graph.len().saturating_sub(live_nodes);
    let rebuild = graph.len() >= 1_000
        && dead as f64 > inner.config.vector.rebuild_dead_fraction * graph.len() as f64;
    if rebuild {
        rebuild_graph(inner, kind, dim);
        checkpoint(inner, kind)?;
        return Ok(true);
    }

    // Insert the next batch of the tail, in sequence order, so that the graph keeps
    // covering a prefix of the change sequence.
    let batch: Vec<(u64, DocId, Normalised)> = {
        let catalog = inner.local.snapshot();
        let mut n_vectors = 0;
        let mut batch = Vec::new();
        for (seq, doc) in catalog.vectors_after(kind, covered) {
            if n_vectors >= INSERT_BATCH {
                break;
            }
            if let Some(vectors) = catalog.vectors(doc).map(|v| v.normalised()) {
                n_vectors += vectors.rows.len();
                batch.push((seq, doc, vectors));
            }
        }
        batch
    };
    if let Some(&(last_seq, _, _)) = batch.last() {
        let items: Vec<(&[f32], VectorKey)> = batch
            .iter()
            .flat_map(|(_, doc, vectors)| vectors.keyed(*doc, dim))
            .collect();
        let left_out = graph.insert(&items);
        vectors.advance(kind, last_seq, items.len());
        if !left_out.is_empty() || !graph.left_out().is_empty() {
            // Copies of documents deleted or replaced since need no scan.
            let catalog = inner.local.snapshot();
            graph.retain_left_out(|doc| catalog.get(doc).is_some());
        }
        inner
            .counters
            .graph_vectors_inserted
            .fetch_add(items.len() as u64, Ordering::Relaxed);
    }
    if vectors.dirty(kind) >= inner.config.vector.checkpoint_every {
        checkpoint(inner, kind)?;
    }
    let unfinished = inner
        .local
        .snapshot()
        .vectors_after(kind, vectors.covered(kind))
        .next()
        .is_some();
    if !unfinished {
        refresh_flat(inner, kind);
    }
    Ok(unfinished)
}

/// How many documents a writer's graph may cover past the flat copy its searches walk
/// before a caught-up worker copies it again (between checkpoints).
const FLAT_REFRESH: usize = 1_024;

/// Copies the graph of `kind` flat for this process's searches (see
/// [`VectorIndex::search`](crate::local::vector::VectorIndex::search)) when it covers at least
/// [`FLAT_REFRESH`] documents the copy they walk does not (the worker's: nobody else
/// inserts).
fn refresh_flat(inner: &Inner, kind: Kind) {
    let vectors = &inner.local.vectors;
    let covered = vectors.covered(kind);
    let since = vectors.flat_covered(kind).unwrap_or(0);
    if since >= covered {
        return;
    }
    let lag = inner
        .local
        .snapshot()
        .vectors_after(kind, since)
        .take_while(|&(seq, _)| seq <= covered)
        .take(FLAT_REFRESH)
        .count();
    if lag < FLAT_REFRESH {
        return;
    }
    let flat = vectors.graph(kind).flat();
    vectors.set_flat(kind, flat, None, &inner.local.snapshot(), covered);
}

/// Builds a new graph of every live vector of `kind` and swaps it in.
fn rebuild_graph(inner: &Inner, kind: Kind, dim: usize) {
    let snapshot: Vec<(u64, DocId, Normalised)> = {
        let catalog = inner.local.snapshot();
        catalog
            .vectors_after(kind, 0)
            .filter_map(|(seq, doc)| Some((seq, doc, catalog.vectors(doc)?.normalised())))
            .collect()
    };
    let covered = snapshot.last().map_or(0, |(seq, _, _)| *seq);
    let n_vectors: usize = snapshot.iter().map(|(_, _, v)| v.rows.len()).sum();
    let graph = Graph::new(inner.local.vectors.params(), n_vectors);
    for chunk in snapshot.chunks(INSERT_BATCH) {
        let items: Vec<(&[f32], VectorKey)> = chunk
            .iter()
            .flat_map(|(_, doc, vectors)| vectors.keyed(*doc, dim))
            .collect();
        // What the graph leaves out, `install` finds again from the catalog.
        graph.insert(&items);
    }
    let covered = covered.max(inner.local.vectors.covered(kind));
    let catalog = inner.local.snapshot();
    inner
        .local
        .vectors
        .install(kind, graph, &catalog, covered, false);
    inner
        .counters
        .graph_rebuilds
        .fetch_add(1, Ordering::Relaxed);
    inner
        .counters
        .graph_vectors_inserted
        .fetch_add(n_vectors as u64, Ordering::Relaxed);
    tracing::info!(kind = %kind, vectors = n_vectors, "graph rebuilt");
}

/// Stores a checkpoint of the graph of `kind` if it changed since the last one.
pub(super) fn checkpoint(inner: &Inner, kind: Kind) -> Result<()> {
    let vectors = &inner.local.vectors;
    if vectors.dirty(kind) == 0 {
        return Ok(());
    }
    let Some(dimensions) = inner.local.store.dimensions(kind) else {
        return Ok(());
    };
    let covered = vectors.covered(kind);
    let graph = vectors.graph(kind);
    // The edges as flat lists; the vectors are the documents': the checkpoint keeps
    // their keys.
    let (files, flat) = {
        let catalog = inner.local.snapshot();
        graph.checkpoint_files(|key| crate::local::vector::catalog_vector(&catalog, kind, key))
    };
    let manifest = CheckpointManifest {
        covered_seq: covered,
        n_points: graph.len(),
        dimensions,
        files: Graph::file_sums(&files),
    };
    let manifest_bytes = bincode::serialize(&manifest).expect("manifests serialise");
    inner
        .local
        .store
        .save_checkpoint(kind, &manifest_bytes, &files)?;
    vectors.mark_checkpointed(kind, covered);
    // Readers get the graph once it holds every committed vector (publishing each
    // checkpoint of a long build would write the graph again and again). This process's
    // searches walk it from now on.
    let complete = inner
        .local
        .snapshot()
        .vectors_after(kind, covered)
        .next()
        .is_none();
    let encoded = complete.then(|| flat.encode());
    vectors.set_flat(kind, flat, None, &inner.local.snapshot(), covered);
    if let Some(encoded) = encoded {
        let codes = vectors.flat_codes(kind, covered);
        let _serial = inner.commit_lock.lock().unwrap_or_else(|p| p.into_inner());
        inner.publish(super::publish::Publish::Graph {
            kind,
            manifest: &manifest_bytes,
            flat: &encoded,
            codes: codes.as_deref(),
        })?;
    }
    inner
        .counters
        .graph_checkpoints
        .fetch_add(1, Ordering::Relaxed);
    tracing::debug!(kind = %kind, covered, points = graph.len(), "graph checkpoint stored");
    Ok(())
}

/// Checkpoints both graphs; with `finish`, first inserts whatever tail is left (the
/// worker must be idle or stopped).
pub(super) fn checkpoint_all(inner: &Inner, finish: bool) -> Result<()> {
    for kind in Kind::ALL {
        if finish {
            while maintain_graph(inner, kind)? {}
        }
        checkpoint(inner, kind)?;
    }
    Ok(())
}

impl Reader {
    /// The committed vectors not in a graph yet: what the background worker has left
    /// to insert (searches scan them exactly meanwhile). Waits for the graph checkpoints
    /// to load at open. A progress display polls this while [`Engine::sync_graph`](crate::Reader::sync_graph) runs.
    pub fn graph_backlog(&self) -> usize {
        let inner = &self.inner;
        inner.worker.wait_loaded();
        let catalog = inner.local.snapshot();
        Kind::ALL
            .into_iter()
            .map(|kind| catalog.n_vectors_after(kind, inner.local.vectors.covered(kind)))
            .sum()
    }

    /// Blocks until the graphs hold every committed vector, then stores checkpoints.
    ///
    /// Searches never need this (documents not in a graph are scanned exactly); it makes
    /// the next open fast and the next searches use the graph alone.
    ///
    /// # Errors
    ///
    /// Storage errors while writing the checkpoint.
    pub fn sync_graph(&self) -> Result<()> {
        if self.is_read_only() {
            // A reader uses the graphs its writer published; it builds none.
            self.inner.worker.wait_loaded();
            return Ok(());
        }
        self.inner.wait_for_worker();
        checkpoint_all(&self.inner, true)
    }
}
