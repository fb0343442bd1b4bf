//! The HNSW graph (hnsw_rs) and its checkpoint format.
//!
//! hnsw_rs has no delete and persists only whole graphs, to files. A [`Graph`] therefore
//! only grows; dead entries are filtered by the caller and removed by rebuilding. A
//! checkpoint is two files, stored in sled by the caller with a manifest that records
//! their lengths and CRC32s, so that a damaged checkpoint is detected before hnsw_rs
//! (which panics on bad input) reads it: the graph's edges as flat lists
//! ([`Graph::checkpoint_files`]; hnsw_rs's own graph file, which earlier versions kept,
//! takes six times the bytes: neighbours' ids and distances at every one of 16 levels),
//! and hnsw_rs's data file, keyed. At load, hnsw_rs's graph file is written back from the
//! flat lists, the neighbours' distances computed again from the nodes' codes
//! ([`hnsw_graph_file`]), byte for byte the dump hnsw_rs would have written.
//!
//! The graph is built on each vector's 8-bit code ([`super::distance::graph_code`], compared by
//! [`CodeDistance`]): hnsw_rs keeps a copy of every point it holds and compares each
//! insertion with a few thousand of them, and codes are a quarter of the bytes. Searches
//! score what they return exactly.
//!
//! hnsw_rs's data file holds every node's code, which the store can make again from the
//! vectors its documents hold: a checkpoint keeps it *keyed* instead ([`key_data`]),
//! each node whose code is that of a live document's arena row replaced by its key, and
//! gets the codes back from the catalog's rows when it is loaded ([`unkey_data`]). Only
//! the codes of documents deleted before the checkpoint (nodes the graph still has) are
//! kept whole. Checkpoints of earlier versions keep those as vectors (`RUCHEKV1`), and
//! hnsw_rs's own dumps of their graphs hold vectors: both are coded when loaded.
//!
//! ```text
//! keyed = "RUCHEKV2" [dim: u64 LE] [points: u64 LE]
//!         ([key: u64 LE] [0: a catalog row | 1: a code, dim + 4 bytes])*
//! flat  = "RUCHEFG1" [header length: u32 LE] [bincode FlatHeader]
//!         [flat length: u64 LE] [FlatGraph encoding]
//!         [lists: u32 LE] ([node: u32 LE] [level: u32 LE] [n: u32 LE] [node: u32 LE]*n)*
//!         (the neighbour lists hnsw_rs has and the flat lists do not: a point's lists
//!         at levels above its own)
//! ```
//!
//! (hnsw_rs writes in the machine's byte order, read here as little-endian: ruche's
//! files and arenas are little-endian throughout.)

use std::hash::{Hash, Hasher};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};

#[cfg(test)]
use hnsw_rs::api::AnnT;
use hnsw_rs::hnswio::HnswIo;
use hnsw_rs::prelude::Hnsw;
use serde::{Deserialize, Serialize};

use super::distance::{CodeDistance, CosineDistance};
use crate::model::id::{DocId, VectorKey};
use crate::model::metric;
use crate::{Error, Result};
use hnsw_rs::prelude::Distance;
use rustc_hash::FxHashSet;

/// The prefix of the scratch directories checkpoints are unpacked into for hnsw_rs. A
/// process that exits while a checkpoint loads leaves one behind in the index
/// directory; the next open removes it.
pub(crate) const SCRATCH_PREFIX: &str = ".graph-load-";
use crate::config::HnswParams;

const MAX_LAYERS: usize = 16;

/// An HNSW graph over normalised vectors keyed by [`VectorKey`], built on their 8-bit
/// codes ([`super::distance::graph_code`], compared by [`CodeDistance`]): hnsw_rs keeps a copy of
/// every vector it holds, a quarter of the bytes this way, and compares them a few
/// thousand times per insertion.
///
/// A graph holds one node per distinct code: a vector whose code is already a node's is
/// not inserted ([`Graph::insert`] returns its key, and the caller scans it exactly).
/// hnsw_rs's neighbour selection keeps one of several equal points and prunes every
/// point beyond it, so a few dozen copies of one vector (a repeated note, an empty
/// text) would link only to each other: an island that a walk entering it never
/// leaves, and that can hold the entry point.
pub(crate) struct Graph {
    hnsw: Hnsw<'static, i8, CodeDistance>,
    params: HnswParams,
    /// Fingerprints of the nodes' codes. Two codes of one fingerprint cost only an
    /// exact scan of the second vector, never a miss.
    fingerprints: Mutex<FxHashSet<u64>>,
    /// The documents with a vector left out, in id order: kept with the graph, so that a
    /// search takes the graph and what it lacks at once.
    left_out: RwLock<Arc<Vec<DocId>>>,
}

/// What a checkpoint's manifest records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CheckpointManifest {
    /// Every vector of every upsert up to this sequence number is in the graph, or left
    /// out as a copy of a node's code.
    pub(crate) covered_seq: u64,
    pub(crate) n_points: usize,
    pub(crate) dimensions: usize,
    /// Length and CRC32 of the graph file and of the data file.
    pub(crate) files: Vec<(u64, u32)>,
}

impl Graph {
    pub(crate) fn new(params: HnswParams, expected_points: usize) -> Graph {
        let hnsw = Hnsw::new(
            params.max_connections,
            expected_points.max(1_000),
            MAX_LAYERS,
            params.ef_construction,
            CodeDistance,
        );
        Graph {
            hnsw,
            params,
            fingerprints: Mutex::new(FxHashSet::default()),
            left_out: RwLock::new(Arc::new(Vec::new())),
        }
    }

    /// The documents with a vector this graph left out (see [`Graph`]), in id order.
    pub(crate) fn left_out(&self) -> Arc<Vec<DocId>> {
        Arc::clone(&self.left_out.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Records `docs` (in id order) as those with a vector left out: what a graph
    /// loaded or rebuilt lacks of the catalog.
    pub(crate) fn set_left_out(&self, docs: Vec<DocId>) {
        *self.left_out.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(docs);
    }

    /// Keeps only the left-out documents `keep` keeps (those still live).
    pub(crate) fn retain_left_out(&self, keep: impl Fn(DocId) -> bool) {
        let mut slot = self.left_out.write().unwrap_or_else(|p| p.into_inner());
        if slot.iter().any(|&doc| !keep(doc)) {
            Arc::make_mut(&mut slot).retain(|&doc| keep(doc));
        }
    }

    /// The keys of the graph's nodes.
    pub(crate) fn keys(&self) -> Vec<VectorKey> {
        let mut keys = Vec::with_capacity(self.len());
        self.for_each_point(|point| {
            keys.push(VectorKey::from_u64(point.get_origin_id() as u64));
        });
        keys
    }

    fn for_each_point(&self, mut each: impl FnMut(&hnsw_rs::prelude::Point<'static, i8>)) {
        if self.hnsw.get_nb_point() == 0 {
            return;
        }
        let indexation = self.hnsw.get_point_indexation();
        for level in 0..=usize::from(indexation.get_max_level_observed()) {
            for point in indexation.get_layer_iterator(level) {
                each(&point);
            }
        }
    }

    /// A graph of what hnsw_rs loaded, its nodes' codes fingerprinted.
    fn of_loaded(hnsw: Hnsw<'static, i8, CodeDistance>, params: HnswParams) -> Graph {
        let graph = Graph {
            hnsw,
            params,
            fingerprints: Mutex::new(FxHashSet::default()),
            left_out: RwLock::new(Arc::new(Vec::new())),
        };
        let mut fingerprints = FxHashSet::default();
        graph.for_each_point(|point| {
            fingerprints.insert(fingerprint(point.get_v()));
        });
        *graph.fingerprints.lock().unwrap_or_else(|p| p.into_inner()) = fingerprints;
        graph
    }

    pub(crate) fn len(&self) -> usize {
        self.hnsw.get_nb_point()
    }

    /// Inserts normalised vectors, in parallel, but for those whose code is already a
    /// node's (or an earlier item's): their documents join [`Graph::left_out`] (before
    /// this returns), and their keys are returned.
    pub(crate) fn insert(&self, items: &[(&[f32], VectorKey)]) -> Vec<VectorKey> {
        let mut codes = Vec::new();
        let starts: Vec<usize> = items
            .iter()
            .map(|(v, _)| {
                let start = codes.len();
                super::distance::graph_code(v, &mut codes);
                start
            })
            .collect();
        let data: Vec<(&[i8], usize)> = items
            .iter()
            .zip(starts)
            .map(|((v, key), start)| {
                let code = &codes[start..start + super::distance::graph_code_len(v.len())];
                (code, key.as_u64() as usize)
            })
            .collect();
        let mut left_out = Vec::new();
        let data: Vec<(&[i8], usize)> = {
            let mut fingerprints = self.fingerprints.lock().unwrap_or_else(|p| p.into_inner());
            data.into_iter()
                .filter(|&(code, key)| {
                    let new = fingerprints.insert(fingerprint(code));
                    if !new {
                        left_out.push(VectorKey::from_u64(key as u64));
                    }
                    new
                })
                .collect()
        };
        if !left_out.is_empty() {
            let mut slot = self.left_out.write().unwrap_or_else(|p| p.into_inner());
            let docs = Arc::make_mut(&mut slot);
            docs.extend(left_out.iter().map(|key| key.doc()));
            docs.sort_unstable();
            docs.dedup();
        }
        if data.len() < 64 {
            for item in data {
                self.hnsw.insert_slice(item);
            }
        } else {
            self.hnsw.parallel_insert_slice(&data);
        }
        left_out
    }

    /// The `k` nearest keys to `query` that `accept` admits, with their cosine as the
    /// codes estimate it (within about 0.01; the caller scores its hits exactly).
    pub(crate) fn search(
        &self,
        query: &[f32],
        k: usize,
        accept: Option<&dyn Fn(VectorKey) -> bool>,
    ) -> Vec<(VectorKey, f32)> {
        if k == 0 || self.len() == 0 {
            return Vec::new();
        }
        let ef = self.params.ef_search.max(k);
        let mut code = Vec::with_capacity(super::distance::graph_code_len(query.len()));
        super::distance::graph_code(query, &mut code);
        let neighbours = match accept {
            None => self.hnsw.search(&code, k, ef),
            Some(accept) => {
                let filter = |id: &usize| accept(VectorKey::from_u64(*id as u64));
                self.hnsw.search_filter(&code, k, ef, Some(&filter))
            }
        };
        neighbours
            .into_iter()
            .map(|n| (VectorKey::from_u64(n.d_id as u64), 1.0 - n.distance))
            .collect()
    }

    /// The graph's edges as flat lists (what readers search; nobody may insert
    /// meanwhile).
    pub(crate) fn flat(&self) -> super::FlatGraph {
        super::FlatGraph::from_hnsw(&self.hnsw)
    }

    /// A checkpoint's files: the graph's edges as flat lists, with what hnsw_rs's dump
    /// says besides them, and hnsw_rs's data file keyed (each node whose code is the
    /// code of what `row` gives written as its key); and the flat lists, which readers
    /// search.
    pub(crate) fn checkpoint_files(
        &self,
        row: impl Fn(VectorKey) -> Option<Vec<f32>>,
    ) -> (Vec<Vec<u8>>, super::FlatGraph) {
        let dim = self
            .hnsw
            .get_point_indexation()
            .get_data_dimension()
            .saturating_sub(super::distance::graph_code_len(0));
        checkpoint_files_of(
            &self.hnsw,
            dim,
            |code, out| out.extend_from_slice(code),
            row,
        )
    }

    /// Dumps the graph as hnsw_rs writes it: the bytes of its graph file and its data
    /// file (what checkpoints of earlier versions kept).
    #[cfg(test)]
    pub(crate) fn dump(&self) -> Result<Vec<Vec<u8>>> {
        let dir = tempfile::tempdir()?;
        let basename = self
            .hnsw
            .file_dump(dir.path(), "ruche")
            .map_err(|err| Error::storage("hnsw_rs", err.to_string()))?;
        let mut files = Vec::with_capacity(2);
        for suffix in ["hnsw.graph", "hnsw.data"] {
            files.push(std::fs::read(
                dir.path().join(format!("{basename}.{suffix}")),
            )?);
        }
        Ok(files)
    }

    /// Checks the files of a checkpoint against the lengths and CRC-32s of its manifest.
    pub(crate) fn verify(manifest: &CheckpointManifest, files: &[Vec<u8>]) -> Result<()> {
        if files.len() != manifest.files.len() {
            return Err(Error::corrupt("graph checkpoint: missing file"));
        }
        for (bytes, (len, crc)) in files.iter().zip(&manifest.files) {
            if bytes.len() as u64 != *len || crc32fast::hash(bytes) != *crc {
                return Err(Error::corrupt("graph checkpoint: checksum mismatch"));
            }
        }
        Ok(())
    }

    /// Checks a checkpoint's files against its manifest, and gives a keyed data file
    /// the vectors `row` has back ([`unkey_data`]): the files [`Graph::load`] takes.
    pub(crate) fn unpack(
        manifest: &CheckpointManifest,
        mut files: Vec<Vec<u8>>,
        row: impl Fn(VectorKey) -> Option<Vec<f32>>,
    ) -> Result<Vec<Vec<u8>>> {
        Graph::verify(manifest, &files)?;
        if let Some(data) = files.get_mut(1)
            && is_keyed(data)
        {
            let (unkeyed, missing) = unkey_data(data, manifest.dimensions, row)?;
            if missing > 0 {
                tracing::debug!(
                    missing,
                    "graph checkpoint: nodes of documents deleted since"
                );
            }
            *data = unkeyed;
        }
        Ok(files)
    }

    /// The flat lists of a checkpoint's graph file (one written by
    /// [`Graph::checkpoint_files`]), or `None` for hnsw_rs's own (earlier versions').
    pub(crate) fn flat_of(graph_file: &[u8]) -> Result<Option<super::FlatGraph>> {
        if !graph_file.starts_with(FLAT_MAGIC) {
            return Ok(None);
        }
        let (_, flat, _) = split_flat_file(graph_file)?;
        Ok(Some(flat))
    }

    /// Loads the files of a checkpoint, [unpacked](Graph::unpack), hnsw_rs's graph
    /// file first written back from flat lists ([`hnsw_graph_file`]). hnsw_rs reads
    /// files: they are written into a scratch directory (prefix [`SCRATCH_PREFIX`]) in
    /// `scratch`, the index directory, or in the system's temporary directory when
    /// `scratch` cannot take one.
    pub(crate) fn load(
        manifest: &CheckpointManifest,
        files: &[Vec<u8>],
        params: HnswParams,
        scratch: &Path,
    ) -> Result<Graph> {
        let phase = std::time::Instant::now();
        let written_back;
        let files = match files {
            [graph, data] if graph.starts_with(FLAT_MAGIC) => {
                written_back = [hnsw_graph_file(graph, data)?, data.clone()];
                &written_back[..]
            }
            _ => files,
        };
        let dir = write_dump(scratch, files)?;
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "checkpoint files written"
        );
        Graph::load_from(manifest, dir.path(), "ruche", params)
    }

    /// Reloads a graph hnsw_rs dumped as `basename.hnsw.graph` and `basename.hnsw.data`
    /// in `dir` (files checked against `manifest` by the caller), reading them in place.
    /// A dump of an earlier version (a graph of `f32` vectors) is loaded, then its nodes
    /// coded and the graph loaded again from files written to the system's temporary
    /// directory: hnsw_rs makes graphs only from files.
    pub(crate) fn load_from(
        manifest: &CheckpointManifest,
        dir: &Path,
        basename: &str,
        params: HnswParams,
    ) -> Result<Graph> {
        let phase = std::time::Instant::now();
        let hnsw = match load_dump::<i8, CodeDistance>(dir, basename) {
            Ok(hnsw) => hnsw,
            Err(err) => {
                let Ok(earlier) = load_dump::<f32, CosineDistance>(dir, basename) else {
                    return Err(err);
                };
                let (files, _) = checkpoint_files_of(
                    &earlier,
                    manifest.dimensions,
                    super::distance::graph_code,
                    |_| None,
                );
                drop(earlier);
                let (data, _) = unkey_data(&files[1], manifest.dimensions, |_| None)?;
                let graph = hnsw_graph_file(&files[0], &data)?;
                let scratch = write_dump(&std::env::temp_dir(), &[graph, data])?;
                load_dump::<i8, CodeDistance>(scratch.path(), "ruche")?
            }
        };
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "hnsw_rs loaded the dump"
        );
        if hnsw.get_nb_point() != manifest.n_points {
            return Err(Error::corrupt("graph checkpoint: point count mismatch"));
        }
        Ok(Graph::of_loaded(hnsw, params))
    }

    /// The manifest entries (length, CRC32) of dumped files.
    pub(crate) fn file_sums(files: &[Vec<u8>]) -> Vec<(u64, u32)> {
        files
            .iter()
            .map(|bytes| (bytes.len() as u64, crc32fast::hash(bytes)))
            .collect()
    }
}

/// A code's fingerprint.
fn fingerprint(code: &[i8]) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    code.hash(&mut hasher);
    hasher.finish()
}

/// [`Graph::checkpoint_files`] of a graph of `dim`-dimensional vectors whose nodes hold
/// `T`s, `code` appending the [`super::distance::graph_code`] of a node's: the graph this version
/// builds (its nodes hold codes), or one an earlier version built (they hold vectors).
fn checkpoint_files_of<T, D>(
    hnsw: &Hnsw<'_, T, D>,
    dim: usize,
    code: impl Fn(&[T], &mut Vec<i8>),
    row: impl Fn(VectorKey) -> Option<Vec<f32>>,
) -> (Vec<Vec<u8>>, super::FlatGraph)
where
    T: Clone + Send + Sync + Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
    D: Distance<T> + Send + Sync,
{
    let flat = super::FlatGraph::from_hnsw(hnsw);
    let indexation = hnsw.get_point_indexation();
    let header = FlatHeader {
        max_nb_connection: hnsw.get_max_nb_connection(),
        level_scale: indexation.get_level_scale(),
        max_layer: hnsw.get_max_level(),
        ef_construction: hnsw.get_ef_construction(),
        dimension: super::distance::graph_code_len(dim),
    };
    let header = bincode::serialize(&header).expect("a header serialises");
    let encoded = flat.encode();
    // The neighbour lists the flat lists lack: hnsw_rs also links a point at levels
    // above its own (a point that was the entry point when one of a higher level
    // came), which a search of the flat lists never needs, but hnsw_rs's dump has.
    let node_of: rustc_hash::FxHashMap<u64, u32> = (0..flat.len() as u32)
        .map(|node| (flat.key(node).as_u64(), node))
        .collect();
    let mut extra: Vec<u32> = Vec::new();
    let mut n_extra = 0u32;
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let mut keyed = Vec::with_capacity(24 + flat.len() * 9);
    keyed.extend_from_slice(KEYED_MAGIC);
    keyed.extend_from_slice(&(dim as u64).to_le_bytes());
    keyed.extend_from_slice(&(flat.len() as u64).to_le_bytes());
    // hnsw_rs's points in the order of its dump: by level, lowest first.
    for level in 0..flat.levels() {
        for (rank, point) in indexation.get_layer_iterator(level).enumerate() {
            let node = flat.node_at(level, rank);
            for (at, neighbours) in point.get_neighborhood_id().iter().enumerate() {
                let nodes: Vec<u32> = neighbours
                    .iter()
                    .filter_map(|n| node_of.get(&(n.d_id as u64)).copied())
                    .collect();
                if nodes.as_slice() != flat.neighbours(node, at) {
                    n_extra += 1;
                    extra.extend([node, at as u32, nodes.len() as u32]);
                    extra.extend(nodes);
                }
            }
            let key = flat.key(node);
            keyed.extend_from_slice(&key.as_u64().to_le_bytes());
            ours.clear();
            code(point.get_v(), &mut ours);
            theirs.clear();
            if let Some(row) = row(key).filter(|row| row.len() == dim) {
                super::distance::graph_code(&row, &mut theirs);
            }
            if ours.len() == super::distance::graph_code_len(dim) && ours == theirs {
                keyed.push(0);
            } else {
                // Whole: the code of a vector the catalog no longer has (or has
                // changed).
                ours.resize(super::distance::graph_code_len(dim), 0);
                keyed.push(1);
                keyed.extend(ours.iter().map(|&c| c as u8));
            }
        }
    }
    let mut graph = Vec::with_capacity(16 + header.len() + encoded.len() + 4 * extra.len());
    graph.extend_from_slice(FLAT_MAGIC);
    graph.extend_from_slice(&(header.len() as u32).to_le_bytes());
    graph.extend_from_slice(&header);
    graph.extend_from_slice(&(encoded.len() as u64).to_le_bytes());
    graph.extend_from_slice(&encoded);
    graph.extend_from_slice(&n_extra.to_le_bytes());
    extra
        .iter()
        .for_each(|v| graph.extend_from_slice(&v.to_le_bytes()));
    (vec![graph, keyed], flat)
}

/// Writes hnsw_rs's graph file and data file, `files`, as `ruche.hnsw.graph` and
/// `ruche.hnsw.data` into a new scratch directory (prefix [`SCRATCH_PREFIX`]) in
/// `scratch`, or in the system's temporary directory when `scratch` cannot take one.
fn write_dump(scratch: &Path, files: &[Vec<u8>]) -> Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix(SCRATCH_PREFIX)
        .tempdir_in(scratch)
        .or_else(|_| tempfile::tempdir())?;
    for (bytes, suffix) in files.iter().zip(["hnsw.graph", "hnsw.data"]) {
        std::fs::write(dir.path().join(format!("ruche.{suffix}")), bytes)?;
    }
    Ok(dir)
}

/// hnsw_rs's graph of `T`s dumped as `basename.hnsw.graph` and `basename.hnsw.data` in
/// `dir`, read in place; a dump of another type or distance is an error.
fn load_dump<T, D>(dir: &Path, basename: &str) -> Result<Hnsw<'static, T, D>>
where
    T: 'static + Clone + Send + Sync + Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
    D: Distance<T> + Default + Send + Sync,
{
    // The loaded graph borrows its loader only when memory-mapping, which we never ask
    // for: the data is copied into the graph. Leaking the loader (a path and a few
    // counters) gives the graph the `'static` lifetime it then really has.
    let io: &'static mut HnswIo = Box::leak(Box::new(HnswIo::new(dir, basename)));
    let loaded = catch_unwind(AssertUnwindSafe(move || {
        // Moving the `'static` borrow in makes the closure `FnOnce`, so the graph may
        // keep it.
        let io = io;
        io.load_hnsw::<T, D>()
    }));
    match loaded {
        Ok(Ok(hnsw)) => Ok(hnsw),
        Ok(Err(err)) => Err(Error::corrupt(format!("graph checkpoint: {err}"))),
        Err(_) => Err(Error::corrupt("graph checkpoint: unreadable")),
    }
}

/// The magic of a keyed data file whose whole nodes are codes ([`super::distance::graph_code`]).
const KEYED_MAGIC: &[u8; 8] = b"RUCHEKV2";
/// The magic of a keyed data file an earlier version wrote: its whole nodes are vectors
/// (`dim` `f32`s).
const KEYED_MAGIC_V1: &[u8; 8] = b"RUCHEKV1";
/// The magic of a checkpoint's graph file kept as flat lists.
const FLAT_MAGIC: &[u8; 8] = b"RUCHEFG1";
/// hnsw_rs's magics: of its graph file's description (format 4), of a layer, of a point.
const HNSW_DESCRIPTION_MAGIC: u32 = 0x002a_6779;
const HNSW_LAYER_MAGIC: u32 = 0x000a_676f;
const HNSW_POINT_MAGIC: u32 = 0x000a_678f;

/// What hnsw_rs's graph file says besides the edges, kept with flat lists.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct FlatHeader {
    max_nb_connection: u8,
    level_scale: f64,
    /// Levels of hnsw_rs's structure (its points keep a neighbour list for each).
    max_layer: usize,
    ef_construction: usize,
    /// The length of a node's point: its code's (the vectors' dimension + 4), or the
    /// vectors' dimension in a checkpoint of an earlier version (its nodes were vectors).
    dimension: usize,
}

/// Neighbour lists beside the flat lists, by node and level.
type ExtraLists = rustc_hash::FxHashMap<(u32, usize), Vec<u32>>;

/// The header, flat lists and extra neighbour lists of a checkpoint's flat graph file.
fn split_flat_file(bytes: &[u8]) -> Result<(FlatHeader, super::FlatGraph, ExtraLists)> {
    let damaged = |why: &str| Error::corrupt(format!("graph checkpoint: {why}"));
    let mut reader = Bytes::new(bytes, damaged);
    reader.take(FLAT_MAGIC.len())?;
    let header_len = reader.u32_le()? as usize;
    let header: FlatHeader =
        bincode::deserialize(reader.take(header_len)?).map_err(|_| damaged("bad flat header"))?;
    let flat_len = usize::try_from(reader.u64_le()?).map_err(|_| damaged("truncated"))?;
    let flat = super::FlatGraph::decode(reader.take(flat_len)?)?;
    let mut extra = ExtraLists::default();
    for _ in 0..reader.u32_le()? {
        let node = reader.u32_le()?;
        let level = reader.u32_le()? as usize;
        let n = reader.u32_le()? as usize;
        if node as usize >= flat.len() || level >= 64 || n > reader.rest.len() / 4 {
            return Err(damaged("bad neighbour list"));
        }
        let nodes = (0..n)
            .map(|_| reader.u32_le())
            .collect::<Result<Vec<u32>>>()?;
        if nodes.iter().any(|&next| next as usize >= flat.len()) {
            return Err(damaged("bad neighbour list"));
        }
        extra.insert((node, level), nodes);
    }
    if !reader.is_empty() {
        return Err(damaged("trailing bytes"));
    }
    Ok((header, flat, extra))
}

/// hnsw_rs's graph file for a checkpoint's flat graph file `flat_file`, the neighbours'
/// distances computed from `data`, hnsw_rs's data file of the same checkpoint (unkeyed):
/// byte for byte what hnsw_rs's dump of that graph wrote, but for the entry point,
/// which is the first point of the top level (hnsw_rs's is that one but when two
/// points reached a new top level at once in a parallel insert).
pub(crate) fn hnsw_graph_file(flat_file: &[u8], data: &[u8]) -> Result<Vec<u8>> {
    let (header, flat, extra) = split_flat_file(flat_file)?;
    let damaged = |why: &str| Error::corrupt(format!("graph checkpoint: {why}"));
    if flat.levels() > header.max_layer || header.max_layer > 64 {
        return Err(damaged("more levels than hnsw_rs has"));
    }
    // Each node's code, from the data file (in hnsw_rs's dump order).
    let mut codes: Vec<&[i8]> = vec![&[]; flat.len()];
    let mut reader = Bytes::new(data, damaged);
    if reader.u32_le()? != HNSW_DATA_MAGIC {
        return Err(damaged("data file of another graph"));
    }
    // The codes' length: the header's, or, in a checkpoint of a graph an earlier version
    // built on vectors, the code length of the vectors' dimension the header records.
    let dim = usize::try_from(reader.u64_le()?).map_err(|_| damaged("bad dimension"))?;
    if dim != header.dimension
        && Some(dim)
            != header
                .dimension
                .checked_add(super::distance::graph_code_len(0))
    {
        return Err(damaged("data file of another graph"));
    }
    for node in flat.dump_order() {
        let key = flat.key(node).as_u64();
        if reader.u32_le()? != HNSW_DATA_MAGIC
            || reader.u64_le()? != key
            || reader.u64_le()? != dim as u64
        {
            return Err(damaged("data file of another graph"));
        }
        codes[node as usize] = super::flat::as_codes(reader.take(dim)?);
    }
    if !reader.is_empty() {
        return Err(damaged("data file of another graph"));
    }
    let mut out = Vec::with_capacity(flat.len() * 200);
    let mut put = |bytes: &[u8]| out.extend_from_slice(bytes);
    // The description (hnsw_rs's `Description::dump`, format 4).
    put(&HNSW_DESCRIPTION_MAGIC.to_le_bytes());
    put(&[1, header.max_nb_connection]);
    put(&header.level_scale.to_le_bytes());
    put(&[header.max_layer as u8]);
    put(&(header.ef_construction as u64).to_le_bytes());
    put(&(flat.len() as u64).to_le_bytes());
    put(&(dim as u64).to_le_bytes());
    for name in [
        std::any::type_name::<CodeDistance>(),
        std::any::type_name::<i8>(),
    ] {
        put(&(name.len() as u64).to_le_bytes());
        put(name.as_bytes());
    }
    // The points, by level, lowest first, each with its neighbours at every level.
    put(&[header.max_layer as u8]);
    let mut order = flat.dump_order().peekable();
    for level in 0..header.max_layer {
        put(&HNSW_LAYER_MAGIC.to_le_bytes());
        let mut points = Vec::new();
        while let Some(&node) = order.peek() {
            if usize::from(flat.point_id(node).0) != level {
                break;
            }
            points.push(node);
            order.next();
        }
        put(&(points.len() as u64).to_le_bytes());
        for node in points {
            let (own_level, rank) = flat.point_id(node);
            put(&HNSW_POINT_MAGIC.to_le_bytes());
            put(&flat.key(node).as_u64().to_le_bytes());
            put(&[own_level]);
            put(&rank.to_le_bytes());
            for at in 0..header.max_layer {
                let neighbours = match extra.get(&(node, at)) {
                    Some(listed) => listed.as_slice(),
                    None => flat.neighbours(node, at),
                };
                put(&(neighbours.len() as u64).to_le_bytes());
                for &next in neighbours {
                    let (next_level, next_rank) = flat.point_id(next);
                    let distance = CodeDistance.eval(codes[node as usize], codes[next as usize]);
                    put(&flat.key(next).as_u64().to_le_bytes());
                    put(&[next_level]);
                    put(&next_rank.to_le_bytes());
                    put(&distance.to_le_bytes());
                }
            }
        }
    }
    // The entry point.
    if flat.len() > 0 {
        let (level, rank) = flat.point_id(0);
        put(&flat.key(0).as_u64().to_le_bytes());
        put(&[level]);
        put(&rank.to_le_bytes());
    }
    Ok(out)
}
/// hnsw_rs's magic, at the head of its data file and of each of its points.
const HNSW_DATA_MAGIC: u32 = 0xa67f_0000;

/// A keyed copy of hnsw_rs's data file `data` (see the module's doc): each point whose
/// code is the code of what `row` gives for its key is written as its key alone.
#[cfg(test)]
pub(crate) fn key_data(
    data: &[u8],
    row: impl Fn(VectorKey) -> Option<Vec<f32>>,
) -> Result<Vec<u8>> {
    let damaged = |why: &str| Error::corrupt(format!("graph dump: {why}"));
    let mut reader = Bytes::new(data, damaged);
    if reader.u32_le()? != HNSW_DATA_MAGIC {
        return Err(damaged("not a data file"));
    }
    let vector_bytes = reader.u64_le()? as usize;
    let dim = vector_bytes
        .checked_sub(super::distance::graph_code_len(0))
        .ok_or_else(|| damaged("bad dimension"))?;
    let mut points = Vec::new();
    while !reader.is_empty() {
        if reader.u32_le()? != HNSW_DATA_MAGIC {
            return Err(damaged("bad point magic"));
        }
        let key = reader.u64_le()?;
        let len = reader.u64_le()?;
        if len != vector_bytes as u64 {
            return Err(damaged("a vector of another dimension"));
        }
        points.push((key, reader.take(vector_bytes)?));
    }
    let mut out = Vec::with_capacity(24 + points.len() * 9);
    out.extend_from_slice(KEYED_MAGIC);
    out.extend_from_slice(&(dim as u64).to_le_bytes());
    out.extend_from_slice(&(points.len() as u64).to_le_bytes());
    let mut code = Vec::new();
    for (key, bytes) in points {
        out.extend_from_slice(&key.to_le_bytes());
        code.clear();
        if let Some(row) = row(VectorKey::from_u64(key)).filter(|row| row.len() == dim) {
            super::distance::graph_code(&row, &mut code);
        }
        let same = super::flat::as_codes(bytes) == code.as_slice();
        if same {
            out.push(0);
        } else {
            out.push(1);
            out.extend_from_slice(bytes);
        }
    }
    Ok(out)
}

/// Whether a checkpoint's data file is keyed ([`Graph::checkpoint_files`], or an
/// earlier version's), not as hnsw_rs wrote it.
pub(crate) fn is_keyed(data: &[u8]) -> bool {
    data.starts_with(KEYED_MAGIC) || data.starts_with(KEYED_MAGIC_V1)
}

/// hnsw_rs's data file of a keyed one: each key's code is the [`super::distance::graph_code`] of
/// what `row` gives, or zeros when it gives none (a document deleted since the
/// checkpoint: its node is dead, and a zero norm puts it at distance 1 of everyone).
/// Returns the file and the number of such keys. Vectors have `dim` dimensions: a file
/// that says otherwise is damaged. The whole nodes of an earlier version's keyed file
/// are vectors, coded here.
pub(crate) fn unkey_data(
    keyed: &[u8],
    dim: usize,
    row: impl Fn(VectorKey) -> Option<Vec<f32>>,
) -> Result<(Vec<u8>, usize)> {
    let damaged = |why: &str| Error::corrupt(format!("graph checkpoint: keyed data: {why}"));
    let mut reader = Bytes::new(keyed, damaged);
    let of_vectors = match reader.take(KEYED_MAGIC.len())? {
        magic if magic == KEYED_MAGIC => false,
        magic if magic == KEYED_MAGIC_V1 => true,
        _ => return Err(damaged("bad magic")),
    };
    if reader.u64_le()? != dim as u64 {
        return Err(damaged("vectors of another dimension"));
    }
    let points = reader.u64_le()?;
    let vector_bytes = super::distance::graph_code_len(dim);
    let whole_bytes = if of_vectors { dim * 4 } else { vector_bytes };
    let mut code = Vec::with_capacity(vector_bytes);
    let mut vector = Vec::with_capacity(dim);
    // Each point takes at least 9 bytes: a count the file cannot hold is damage, not
    // an allocation to attempt.
    if points > (keyed.len() / 9) as u64 {
        return Err(damaged("truncated"));
    }
    let mut out = Vec::with_capacity(12 + points as usize * (20 + vector_bytes));
    out.extend_from_slice(&HNSW_DATA_MAGIC.to_le_bytes());
    out.extend_from_slice(&(vector_bytes as u64).to_le_bytes());
    let mut missing = 0;
    for _ in 0..points {
        let key = reader.u64_le()?;
        out.extend_from_slice(&HNSW_DATA_MAGIC.to_le_bytes());
        out.extend_from_slice(&key.to_le_bytes());
        out.extend_from_slice(&(vector_bytes as u64).to_le_bytes());
        code.clear();
        match reader.take(1)?[0] {
            0 => match row(VectorKey::from_u64(key)).filter(|row| row.len() == dim) {
                Some(row) => super::distance::graph_code(&row, &mut code),
                None => {
                    missing += 1;
                    code.resize(vector_bytes, 0);
                }
            },
            1 if of_vectors => {
                vector.clear();
                vector.extend(
                    reader
                        .take(whole_bytes)?
                        .chunks_exact(4)
                        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                );
                super::distance::graph_code(&vector, &mut code);
            }
            1 => code.extend_from_slice(super::flat::as_codes(reader.take(whole_bytes)?)),
            _ => return Err(damaged("bad point tag")),
        }
        out.extend(code.iter().map(|&c| c as u8));
    }
    if !reader.is_empty() {
        return Err(damaged("trailing bytes"));
    }
    Ok((out, missing))
}

/// A cursor over bytes whose every read is checked.
struct Bytes<'a, F> {
    rest: &'a [u8],
    damaged: F,
}

impl<'a, F: Fn(&str) -> Error> Bytes<'a, F> {
    fn new(bytes: &'a [u8], damaged: F) -> Self {
        Bytes {
            rest: bytes,
            damaged,
        }
    }

    fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.rest.len() < n {
            return Err((self.damaged)("truncated"));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    fn u32_le(&mut self) -> Result<u32> {
        self.array().map(u32::from_le_bytes)
    }

    fn u64_le(&mut self) -> Result<u64> {
        self.array().map(u64::from_le_bytes)
    }
}

/// The best exact cosine of `query` (normalised) against the rows of a flat `n x dim`
/// block, each with the inverse of its norm.
pub(crate) fn best_cosine(query: &[f32], block: &[f32], inverse: &[f32], dim: usize) -> f32 {
    block
        .chunks_exact(dim)
        .zip(inverse)
        .map(|(v, &inv)| metric::dot(query, v) * inv)
        .fold(f32::NEG_INFINITY, f32::max)
}

#[cfg(test)]
mod tests;
