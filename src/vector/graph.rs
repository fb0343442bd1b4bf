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
//! flat lists, the neighbours' distances computed again from the vectors
//! ([`hnsw_graph_file`]), byte for byte the dump hnsw_rs would have written.
//!
//! hnsw_rs's data file holds a copy of every vector, which the store already holds in
//! its documents: a checkpoint keeps it *keyed* instead ([`key_data`]), each vector that
//! is a live document's arena row replaced by its key, and gets the rows back from the
//! catalog when it is loaded ([`unkey_data`]). Only the vectors of documents deleted
//! before the checkpoint (nodes the graph still has) are kept whole.
//!
//! ```text
//! keyed = "RUCHEKV1" [dim: u64 LE] [points: u64 LE]
//!         ([key: u64 LE] [0: a catalog row | 1: dim f32 LE])*
//! flat  = "RUCHEFG1" [header length: u32 LE] [bincode FlatHeader]
//!         [flat length: u64 LE] [FlatGraph encoding]
//!         [lists: u32 LE] ([node: u32 LE] [level: u32 LE] [n: u32 LE] [node: u32 LE]*n)*
//!         (the neighbour lists hnsw_rs has and the flat lists do not: a point's lists
//!         at levels above its own)
//! ```
//!
//! (hnsw_rs writes in the machine's byte order, read here as little-endian: ruche's
//! files and arenas are little-endian throughout.)

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

#[cfg(test)]
use hnsw_rs::api::AnnT;
use hnsw_rs::hnswio::HnswIo;
use hnsw_rs::prelude::Hnsw;
use serde::{Deserialize, Serialize};

use super::metric::{self, CosineDistance};
use crate::id::VectorKey;
use crate::{Error, Result};
use hnsw_rs::prelude::Distance;

/// The prefix of the scratch directories checkpoints are unpacked into for hnsw_rs. A
/// process that exits while a checkpoint loads leaves one behind in the index
/// directory; the next open removes it.
pub(crate) const SCRATCH_PREFIX: &str = ".graph-load-";
/// The graph's construction and search parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HnswParams {
    /// Maximum connections per node and layer (`M`), 2..=256.
    pub max_connections: usize,
    /// Candidate list size while building (`ef_construction`).
    pub ef_construction: usize,
    /// Candidate list size while searching (`ef`); raised to `k` when `k` is larger.
    pub ef_search: usize,
}

impl Default for HnswParams {
    fn default() -> HnswParams {
        HnswParams {
            max_connections: 16,
            ef_construction: 200,
            ef_search: 128,
        }
    }
}

impl HnswParams {
    pub(crate) fn validate(&self) -> Result<()> {
        if !(2..=256).contains(&self.max_connections) {
            return Err(Error::invalid_config(
                "vector.max_connections",
                format!("must be in 2..=256, got {}", self.max_connections),
            ));
        }
        if self.ef_construction == 0 {
            return Err(Error::invalid_config(
                "vector.ef_construction",
                "must be at least 1",
            ));
        }
        if self.ef_search == 0 {
            return Err(Error::invalid_config(
                "vector.ef_search",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

const MAX_LAYERS: usize = 16;

/// An HNSW graph over normalised vectors keyed by [`VectorKey`].
pub(crate) struct Graph {
    hnsw: Hnsw<'static, f32, CosineDistance>,
    params: HnswParams,
}

/// What a checkpoint's manifest records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Manifest {
    /// Every vector of every upsert up to this sequence number is in the graph.
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
            CosineDistance,
        );
        Graph { hnsw, params }
    }

    pub(crate) fn len(&self) -> usize {
        self.hnsw.get_nb_point()
    }

    /// Inserts normalised vectors, in parallel.
    pub(crate) fn insert(&self, items: &[(&[f32], VectorKey)]) {
        let data: Vec<(&[f32], usize)> = items
            .iter()
            .map(|(v, key)| (*v, key.as_u64() as usize))
            .collect();
        if data.len() < 64 {
            for item in data {
                self.hnsw.insert_slice(item);
            }
        } else {
            self.hnsw.parallel_insert_slice(&data);
        }
    }

    /// The `k` nearest keys to `query` that `accept` admits, with their cosine.
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
        let neighbours = match accept {
            None => self.hnsw.search(query, k, ef),
            Some(accept) => {
                let filter = |id: &usize| accept(VectorKey::from_u64(*id as u64));
                self.hnsw.search_filter(query, k, ef, Some(&filter))
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
    /// says besides them, and hnsw_rs's data file keyed (each vector that `row` gives
    /// bit for bit written as its key); and the flat lists, which readers search.
    pub(crate) fn checkpoint_files(
        &self,
        row: impl Fn(VectorKey) -> Option<Vec<f32>>,
    ) -> (Vec<Vec<u8>>, super::FlatGraph) {
        let flat = self.flat();
        let indexation = self.hnsw.get_point_indexation();
        let dim = indexation.get_data_dimension();
        let header = FlatHeader {
            max_nb_connection: self.hnsw.get_max_nb_connection(),
            level_scale: indexation.get_level_scale(),
            max_layer: self.hnsw.get_max_level(),
            ef_construction: self.hnsw.get_ef_construction(),
            dimension: dim,
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
                let vector = point.get_v();
                keyed.extend_from_slice(&key.as_u64().to_le_bytes());
                let same = row(key).is_some_and(|row| {
                    row.len() == vector.len()
                        && row
                            .iter()
                            .zip(vector)
                            .all(|(a, b)| a.to_bits() == b.to_bits())
                });
                if same {
                    keyed.push(0);
                } else {
                    keyed.push(1);
                    vector
                        .iter()
                        .for_each(|x| keyed.extend_from_slice(&x.to_le_bytes()));
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
    pub(crate) fn verify(manifest: &Manifest, files: &[Vec<u8>]) -> Result<()> {
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
        manifest: &Manifest,
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
        manifest: &Manifest,
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
        let dir = tempfile::Builder::new()
            .prefix(SCRATCH_PREFIX)
            .tempdir_in(scratch)
            .or_else(|_| tempfile::tempdir())?;
        for (bytes, suffix) in files.iter().zip(["hnsw.graph", "hnsw.data"]) {
            std::fs::write(dir.path().join(format!("ruche.{suffix}")), bytes)?;
        }
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "checkpoint files written"
        );
        Graph::load_from(manifest, dir.path(), "ruche", params)
    }

    /// Reloads a graph hnsw_rs dumped as `basename.hnsw.graph` and `basename.hnsw.data`
    /// in `dir` (files checked against `manifest` by the caller), reading them in place.
    pub(crate) fn load_from(
        manifest: &Manifest,
        dir: &Path,
        basename: &str,
        params: HnswParams,
    ) -> Result<Graph> {
        let phase = std::time::Instant::now();
        // The loaded graph borrows its loader only when memory-mapping, which we never
        // ask for: the data is copied into the graph. Leaking the loader (a path and a
        // few counters) gives the graph the `'static` lifetime it then really has.
        let io: &'static mut HnswIo = Box::leak(Box::new(HnswIo::new(dir, basename)));
        let loaded = catch_unwind(AssertUnwindSafe(move || {
            // Moving the `'static` borrow in makes the closure `FnOnce`, so the graph
            // may keep it.
            let io = io;
            io.load_hnsw::<f32, CosineDistance>()
        }));
        let hnsw = match loaded {
            Ok(Ok(hnsw)) => hnsw,
            Ok(Err(err)) => return Err(Error::corrupt(format!("graph checkpoint: {err}"))),
            Err(_) => return Err(Error::corrupt("graph checkpoint: unreadable")),
        };
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "hnsw_rs loaded the dump"
        );
        if hnsw.get_nb_point() != manifest.n_points {
            return Err(Error::corrupt("graph checkpoint: point count mismatch"));
        }
        Ok(Graph { hnsw, params })
    }

    /// The manifest entries (length, CRC32) of dumped files.
    pub(crate) fn file_sums(files: &[Vec<u8>]) -> Vec<(u64, u32)> {
        files
            .iter()
            .map(|bytes| (bytes.len() as u64, crc32fast::hash(bytes)))
            .collect()
    }
}

/// The magic of a keyed data file.
const KEYED_MAGIC: &[u8; 8] = b"RUCHEKV1";
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
    let dim = header.dimension;
    if flat.levels() > header.max_layer || header.max_layer > 64 {
        return Err(damaged("more levels than hnsw_rs has"));
    }
    // Each node's vector, from the data file (in hnsw_rs's dump order).
    let mut vectors: Vec<&[u8]> = vec![&[]; flat.len()];
    let mut reader = Bytes::new(data, damaged);
    if reader.u32_le()? != HNSW_DATA_MAGIC || reader.u64_le()? != dim as u64 {
        return Err(damaged("data file of another graph"));
    }
    for node in flat.dump_order() {
        let key = flat.key(node).as_u64();
        if reader.u32_le()? != HNSW_DATA_MAGIC
            || reader.u64_le()? != key
            || reader.u64_le()? != (dim * 4) as u64
        {
            return Err(damaged("data file of another graph"));
        }
        vectors[node as usize] = reader.take(dim * 4)?;
    }
    if !reader.is_empty() {
        return Err(damaged("data file of another graph"));
    }
    let floats = |bytes: &[u8]| -> Vec<f32> {
        bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    };
    let decoded: Vec<Vec<f32>> = vectors.iter().map(|v| floats(v)).collect();
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
        std::any::type_name::<CosineDistance>(),
        std::any::type_name::<f32>(),
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
                    let distance =
                        CosineDistance.eval(&decoded[node as usize], &decoded[next as usize]);
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
/// vector is, bit for bit, what `row` gives for its key is written as its key alone.
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
    let dim = reader.u64_le()? as usize;
    let vector_bytes = dim.checked_mul(4).ok_or_else(|| damaged("bad dimension"))?;
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
    for (key, bytes) in points {
        out.extend_from_slice(&key.to_le_bytes());
        let same = row(VectorKey::from_u64(key)).is_some_and(|row| {
            row.len() == dim
                && row
                    .iter()
                    .zip(bytes.chunks_exact(4))
                    .all(|(x, b)| x.to_le_bytes() == b)
        });
        if same {
            out.push(0);
        } else {
            out.push(1);
            out.extend_from_slice(bytes);
        }
    }
    Ok(out)
}

/// Whether a checkpoint's data file is keyed ([`key_data`]), not as hnsw_rs wrote it.
pub(crate) fn is_keyed(data: &[u8]) -> bool {
    data.starts_with(KEYED_MAGIC)
}

/// hnsw_rs's data file of a keyed one: each key's vector is what `row` gives, or zeros
/// when it gives none (a document deleted since the checkpoint: its node is dead, and
/// zeros keep it out of everyone's way). Returns the file and the number of such keys.
/// Vectors have `dim` dimensions: a file that says otherwise is damaged.
pub(crate) fn unkey_data(
    keyed: &[u8],
    dim: usize,
    row: impl Fn(VectorKey) -> Option<Vec<f32>>,
) -> Result<(Vec<u8>, usize)> {
    let damaged = |why: &str| Error::corrupt(format!("graph checkpoint: keyed data: {why}"));
    let mut reader = Bytes::new(keyed, damaged);
    if reader.take(KEYED_MAGIC.len())? != KEYED_MAGIC {
        return Err(damaged("bad magic"));
    }
    if reader.u64_le()? != dim as u64 {
        return Err(damaged("vectors of another dimension"));
    }
    let points = reader.u64_le()?;
    let vector_bytes = dim * 4;
    // Each point takes at least 9 bytes: a count the file cannot hold is damage, not
    // an allocation to attempt.
    if points > (keyed.len() / 9) as u64 {
        return Err(damaged("truncated"));
    }
    let mut out = Vec::with_capacity(12 + points as usize * (20 + vector_bytes));
    out.extend_from_slice(&HNSW_DATA_MAGIC.to_le_bytes());
    out.extend_from_slice(&dim.to_le_bytes());
    let mut missing = 0;
    for _ in 0..points {
        let key = reader.u64_le()?;
        out.extend_from_slice(&HNSW_DATA_MAGIC.to_le_bytes());
        out.extend_from_slice(&key.to_le_bytes());
        out.extend_from_slice(&(vector_bytes as u64).to_le_bytes());
        match reader.take(1)?[0] {
            0 => match row(VectorKey::from_u64(key)).filter(|row| row.len() == dim) {
                Some(row) => {
                    for x in row {
                        out.extend_from_slice(&x.to_le_bytes());
                    }
                }
                None => {
                    missing += 1;
                    out.resize(out.len() + vector_bytes, 0);
                }
            },
            1 => out.extend_from_slice(reader.take(vector_bytes)?),
            _ => return Err(damaged("bad point tag")),
        }
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
mod tests {
    use std::collections::HashMap;

    use super::*;

    const DIM: usize = 8;

    fn vector(i: u64) -> Vec<f32> {
        let v: Vec<f32> = (0..DIM as u64)
            .map(|d| {
                let mut x = (i * 8 + d + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                x ^= x >> 29;
                (x % 1_000) as f32 - 500.0
            })
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect()
    }

    /// A graph of 60 points keyed as documents' first rows are, and its dump.
    fn dumped() -> (Graph, Vec<Vec<u8>>, HashMap<u64, Vec<f32>>) {
        let graph = Graph::new(HnswParams::default(), 60);
        let rows: HashMap<u64, Vec<f32>> = (0..60u64).map(|i| (i << 16, vector(i))).collect();
        let mut keys: Vec<u64> = rows.keys().copied().collect();
        keys.sort_unstable();
        let items: Vec<(&[f32], VectorKey)> = keys
            .iter()
            .map(|key| (rows[key].as_slice(), VectorKey::from_u64(*key)))
            .collect();
        graph.insert(&items);
        let files = graph.dump().unwrap();
        (graph, files, rows)
    }

    /// A checkpoint of flat lists holds what hnsw_rs's dump does: its keyed data file is
    /// the dump's keyed, byte for byte, and hnsw_rs's graph file written back from it is
    /// the dump's graph file, byte for byte (but for the entry point, which may differ
    /// after a parallel insert); the graph hnsw_rs loads from it searches as the first.
    #[test]
    fn a_flat_checkpoint_gives_back_hnsw_rs_dump_and_graph() {
        let n = 3_000u64;
        let graph = Graph::new(HnswParams::default(), n as usize);
        let rows: HashMap<u64, Vec<f32>> = (0..n).map(|i| (i << 16, vector(i))).collect();
        let mut keys: Vec<u64> = rows.keys().copied().collect();
        keys.sort_unstable();
        for batch in keys.chunks(700) {
            let items: Vec<(&[f32], VectorKey)> = batch
                .iter()
                .map(|key| (rows[key].as_slice(), VectorKey::from_u64(*key)))
                .collect();
            graph.insert(&items);
        }
        assert!(graph.flat().levels() >= 2, "several levels");
        // Documents 0 to 99 deleted before the checkpoint: their vectors kept whole.
        let row = |key: VectorKey| {
            (key.as_u64() >> 16 >= 100)
                .then(|| rows.get(&key.as_u64()).cloned())
                .flatten()
        };
        let dumped = graph.dump().unwrap();
        let (files, flat) = graph.checkpoint_files(row);
        assert_eq!(flat, graph.flat());
        assert_eq!(files[1], key_data(&dumped[1], row).unwrap(), "keyed data");
        assert!(
            files[0].len() * 3 < dumped[0].len(),
            "{} {}",
            files[0].len(),
            dumped[0].len()
        );
        let manifest = Manifest {
            covered_seq: n,
            n_points: n as usize,
            dimensions: DIM,
            files: Graph::file_sums(&files),
        };
        let unpacked = Graph::unpack(&manifest, files.clone(), row).unwrap();
        assert_eq!(unpacked[1], dumped[1], "data file");
        let written_back = hnsw_graph_file(&unpacked[0], &unpacked[1]).unwrap();
        let (ours, theirs) = (&written_back, &dumped[0]);
        assert_eq!(ours.len(), theirs.len());
        // The entry point is the last 8 + 1 + 4 bytes.
        let body = ours.len() - 13;
        assert_eq!(ours[..body], theirs[..body], "graph file");
        let scratch = tempfile::tempdir().unwrap();
        let loaded =
            Graph::load(&manifest, &unpacked, HnswParams::default(), scratch.path()).unwrap();
        assert_eq!(loaded.len(), n as usize);
        assert_eq!(loaded.flat(), graph.flat());
        for i in (0..n).step_by(97) {
            let query = vector(i + 7 * n);
            assert_eq!(
                loaded.search(&query, 10, None),
                graph.search(&query, 10, None)
            );
        }
        // Damage is an error, never a panic.
        for len in (0..files[0].len()).step_by(997) {
            let mut cut = files.clone();
            cut[0].truncate(len);
            let manifest = Manifest {
                files: Graph::file_sums(&cut),
                ..manifest.clone()
            };
            let loaded = Graph::unpack(&manifest, cut, row).and_then(|files| {
                Graph::load(&manifest, &files, HnswParams::default(), scratch.path())
            });
            assert!(loaded.is_err(), "truncated at {len}");
        }
    }

    #[test]
    fn a_keyed_checkpoint_keeps_only_the_vectors_the_catalog_lacks_and_loads_back() {
        let (graph, files, rows) = dumped();
        let data = &files[1];
        // At the checkpoint, documents 0 to 4 were deleted already and document 6's row
        // differs (the graph's copy is what counts): those stay whole.
        let mut changed = rows[&(6 << 16)].clone();
        changed[0] += 0.5;
        let at_checkpoint = |key: VectorKey| match key.as_u64() >> 16 {
            0..=4 => None,
            6 => Some(changed.clone()),
            _ => rows.get(&key.as_u64()).cloned(),
        };
        let keyed = key_data(data, at_checkpoint).unwrap();
        assert!(is_keyed(&keyed));
        assert!(!is_keyed(data));
        assert_eq!(keyed.len(), 24 + 60 * 9 + 6 * DIM * 4);

        // Unkeyed with the same rows: hnsw_rs's file, byte for byte.
        let (again, missing) = unkey_data(&keyed, DIM, at_checkpoint).unwrap();
        assert_eq!((&again, missing), (data, 0));

        // Documents 10 to 14 deleted since: their nodes get zeros, the rest is as dumped.
        let now = |key: VectorKey| match key.as_u64() >> 16 {
            10..=14 => None,
            _ => rows.get(&key.as_u64()).cloned(),
        };
        let (unkeyed, missing) = unkey_data(&keyed, DIM, now).unwrap();
        assert_eq!(missing, 5);
        assert_eq!(unkeyed.len(), data.len());
        let record = 4 + 8 + 8 + DIM * 4;
        let mut differing = 0;
        for (a, b) in data[12..].chunks(record).zip(unkeyed[12..].chunks(record)) {
            assert_eq!(a[..20], b[..20]);
            if a != b {
                differing += 1;
                assert!(b[20..].iter().all(|&byte| byte == 0));
                let key = u64::from_le_bytes(a[4..12].try_into().unwrap());
                assert!((10..=14).contains(&(key >> 16)), "key {key:#x}");
            }
        }
        assert_eq!(differing, 5);

        // The graph hnsw_rs loads from the unpacked files finds what the original finds.
        let manifest = Manifest {
            covered_seq: 60,
            n_points: 60,
            dimensions: DIM,
            files: Graph::file_sums(&[files[0].clone(), keyed.clone()]),
        };
        let unpacked =
            Graph::unpack(&manifest, vec![files[0].clone(), keyed.clone()], now).unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let loaded =
            Graph::load(&manifest, &unpacked, HnswParams::default(), scratch.path()).unwrap();
        assert_eq!(loaded.len(), 60);
        for i in [20u64, 33, 59] {
            let query = vector(i);
            let found = loaded.search(&query, 5, None);
            assert_eq!(found[0].0.as_u64(), i << 16);
            assert_eq!(found[0], graph.search(&query, 5, None)[0]);
            for (key, cosine) in found {
                let exact = metric::dot(&query, &rows[&key.as_u64()]);
                assert!((10..=14).contains(&(key.as_u64() >> 16)) || (cosine - exact).abs() < 1e-5);
            }
        }
        // A damaged keyed file is refused before it is unkeyed.
        let mut damaged = keyed.clone();
        damaged[30] ^= 1;
        assert!(Graph::unpack(&manifest, vec![files[0].clone(), damaged], now).is_err());
    }

    /// An `ef_construction` or `ef_search` of 0 is refused under its own key.
    #[test]
    fn a_zero_ef_is_refused_by_name() {
        for (params, key) in [
            (
                HnswParams {
                    ef_construction: 0,
                    ..HnswParams::default()
                },
                "vector.ef_construction",
            ),
            (
                HnswParams {
                    ef_search: 0,
                    ..HnswParams::default()
                },
                "vector.ef_search",
            ),
        ] {
            let err = params.validate().unwrap_err();
            assert!(err.to_string().contains(key), "{err}");
        }
        assert!(HnswParams::default().validate().is_ok());
    }

    #[test]
    fn damaged_data_is_an_error_never_a_panic() {
        let (_, files, rows) = dumped();
        let row = |key: VectorKey| rows.get(&key.as_u64()).cloned();
        let keyed = key_data(&files[1], |key| {
            (key.as_u64() % 3 != 0).then(|| row(key)).flatten()
        })
        .unwrap();
        for len in (0..keyed.len()).step_by(7) {
            assert!(
                unkey_data(&keyed[..len], DIM, row).is_err(),
                "truncated at {len}"
            );
        }
        for len in (0..files[1].len()).step_by(13) {
            let _ = key_data(&files[1][..len], row);
        }
        let mut random = crate::testing::Xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2_000 {
            let state = random.next();
            let mut bytes = keyed.clone();
            let at = (state as usize) % bytes.len();
            bytes[at] ^= (state >> 32) as u8 | 1;
            let _ = unkey_data(&bytes, DIM, row);
            let mut raw = files[1].clone();
            let at = (state >> 8) as usize % raw.len();
            raw[at] ^= (state >> 40) as u8 | 1;
            let _ = key_data(&raw, row);
        }
        // A count of points the file cannot hold is refused, not allocated.
        let mut huge = keyed.clone();
        huge[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(unkey_data(&huge, DIM, row).is_err());
    }
}
