//! The HNSW graph (hnsw_rs) and its checkpoint format.
//!
//! hnsw_rs has no delete and persists only whole graphs, to files. A [`Graph`] therefore
//! only grows; dead entries are filtered by the caller and removed by rebuilding. A
//! checkpoint is the two files of `file_dump`, written through a temporary directory and
//! stored in sled by the caller, with a manifest that records their lengths and CRC32s so
//! that a damaged checkpoint is detected before hnsw_rs (which panics on bad input) reads
//! it.
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
//! ```
//!
//! (hnsw_rs writes in the machine's byte order, read here as little-endian: ruche's
//! files and arenas are little-endian throughout.)

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use hnsw_rs::api::AnnT;
use hnsw_rs::hnswio::HnswIo;
use hnsw_rs::prelude::Hnsw;
use serde::{Deserialize, Serialize};

use super::metric::{self, CosineDistance};
use crate::id::VectorKey;
use crate::{Error, Result};

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
        if self.ef_construction == 0 || self.ef_search == 0 {
            return Err(Error::invalid_config(
                "vector.ef_search",
                "ef_construction and ef_search must be at least 1",
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

    /// Dumps the graph: the bytes of its graph file and its data file.
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

    /// Loads the files of a checkpoint, [unpacked](Graph::unpack). hnsw_rs reads files:
    /// they are written into a scratch directory (prefix [`SCRATCH_PREFIX`]) in
    /// `scratch`, the index directory, or in the system's temporary directory when
    /// `scratch` cannot take one.
    pub(crate) fn load(
        manifest: &Manifest,
        files: &[Vec<u8>],
        params: HnswParams,
        scratch: &Path,
    ) -> Result<Graph> {
        let phase = std::time::Instant::now();
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
/// hnsw_rs's magic, at the head of its data file and of each of its points.
const HNSW_DATA_MAGIC: u32 = 0xa67f_0000;

/// A keyed copy of hnsw_rs's data file `data` (see the module's doc): each point whose
/// vector is, bit for bit, what `row` gives for its key is written as its key alone.
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
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..2_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
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
