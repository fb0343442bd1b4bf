//! The HNSW graph (hnsw_rs) and its checkpoint format.
//!
//! hnsw_rs has no delete and persists only whole graphs, to files. A [`Graph`] therefore
//! only grows; dead entries are filtered by the caller and removed by rebuilding. A
//! checkpoint is the two files of `file_dump`, written through a temporary directory and
//! stored in sled by the caller, with a manifest that records their lengths and CRC32s so
//! that a damaged checkpoint is detected before hnsw_rs (which panics on bad input) reads
//! it.

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

    /// Reloads a dumped graph, after checking its files against the manifest.
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

    /// hnsw_rs reads files: they are unpacked into a scratch directory (prefix
    /// [`SCRATCH_PREFIX`]) in `scratch`, the index directory, or in the system's
    /// temporary directory when `scratch` cannot take one.
    pub(crate) fn load(
        manifest: &Manifest,
        files: &[Vec<u8>],
        params: HnswParams,
        scratch: &Path,
    ) -> Result<Graph> {
        Graph::verify(manifest, files)?;
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

/// Exact cosine of `query` against each vector of a flat `n x dim` block.
pub(crate) fn best_cosine(query: &[f32], block: &[f32], dim: usize) -> f32 {
    block
        .chunks_exact(dim)
        .map(|v| metric::dot(query, v))
        .fold(f32::NEG_INFINITY, f32::max)
}
