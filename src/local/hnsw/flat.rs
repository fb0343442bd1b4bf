//! A graph hnsw_rs built, exported as flat neighbour lists and searched in place.
//!
//! hnsw_rs is the builder: it inserts in parallel and keeps the writer's graph. What a
//! reader needs is only the graph's edges: the vectors are the catalog's (one copy in
//! memory, shared with the exact scan), so a published graph is a few bytes per edge
//! instead of hnsw_rs's dump with a second copy of every vector, it loads in
//! milliseconds instead of being rebuilt node by node, and its search allocates nothing
//! per candidate and takes no lock.
//!
//! Nodes are numbered by level, highest first: the nodes present at level `l` are
//! `0..counts[l]`, so each level is a compressed sparse row indexed by node, and node 0
//! (on the top level) is the entry point.
//!
//! ```text
//! flat   = [version: u32 = 1] [nodes: u32] [levels: u32] [counts: u32 * levels]
//!          [keys: u64 * nodes]
//!          per level: [offsets: u32 * (counts[l] + 1)] [neighbours: u32 * offsets[last]]
//! ```
//! (little endian; the published file that holds it carries the checksum.)

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;
use std::sync::Arc;

use hnsw_rs::prelude::Hnsw;
use rustc_hash::FxHashMap;

use super::distance::Cosine;
use crate::model::id::VectorKey;
use crate::model::metric;
use crate::{Error, Result};

const VERSION: u32 = 1;

/// One level's adjacency: the neighbours of node `i` are
/// `neighbours[offsets[i]..offsets[i + 1]]`, each a node of this level.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Level {
    offsets: Vec<u32>,
    neighbours: Vec<u32>,
}

impl Level {
    fn of(&self, node: u32) -> &[u32] {
        let node = node as usize;
        &self.neighbours[self.offsets[node] as usize..self.offsets[node + 1] as usize]
    }

    fn nodes(&self) -> usize {
        self.offsets.len() - 1
    }
}

/// The edges of an HNSW graph and each node's key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FlatGraph {
    /// Each node's [`VectorKey`].
    keys: Vec<u64>,
    /// Level 0 first; `levels[l].nodes()` never grows with `l`.
    levels: Vec<Level>,
}

impl FlatGraph {
    /// The graph hnsw_rs holds, as flat lists (nobody may insert meanwhile).
    pub(crate) fn from_hnsw<T, D>(hnsw: &Hnsw<'_, T, D>) -> FlatGraph
    where
        T: Clone + Send + Sync + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
        D: hnsw_rs::prelude::Distance<T> + Send + Sync,
    {
        let indexation = hnsw.get_point_indexation();
        if hnsw.get_nb_point() == 0 {
            return FlatGraph::default();
        }
        let top = usize::from(indexation.get_max_level_observed());
        let mut points = Vec::with_capacity(hnsw.get_nb_point());
        let mut counts = vec![0usize; top + 1];
        for level in (0..=top).rev() {
            points.extend(indexation.get_layer_iterator(level));
            counts[level] = points.len();
        }
        let index: FxHashMap<_, u32> = points
            .iter()
            .enumerate()
            .map(|(node, point)| (point.get_point_id(), node as u32))
            .collect();
        let neighbourhoods: Vec<_> = points.iter().map(|p| p.get_neighborhood_id()).collect();
        let levels = (0..=top)
            .map(|level| {
                let mut offsets = Vec::with_capacity(counts[level] + 1);
                let mut neighbours = Vec::new();
                offsets.push(0);
                for neighbourhood in &neighbourhoods[..counts[level]] {
                    let here = neighbourhood.get(level).map_or(&[][..], Vec::as_slice);
                    neighbours.extend(
                        here.iter()
                            .filter_map(|n| index.get(&n.p_id).copied())
                            .filter(|&node| (node as usize) < counts[level]),
                    );
                    offsets.push(neighbours.len() as u32);
                }
                Level {
                    offsets,
                    neighbours,
                }
            })
            .collect();
        FlatGraph {
            keys: points.iter().map(|p| p.get_origin_id() as u64).collect(),
            levels,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// The number of levels (0 for an empty graph).
    pub(crate) fn levels(&self) -> usize {
        self.levels.len()
    }

    /// The nodes present at `level` (`0..n`), 0 above the top.
    fn present(&self, level: usize) -> usize {
        self.levels.get(level).map_or(0, Level::nodes)
    }

    /// hnsw_rs's id of `node`'s point: the highest level it is on, and its rank among
    /// that level's points (nodes are numbered by level, highest first, each level's new
    /// points in hnsw_rs's order).
    pub(crate) fn point_id(&self, node: u32) -> (u8, i32) {
        let level = (0..self.levels.len())
            .rev()
            .find(|&level| (node as usize) < self.present(level))
            .unwrap_or(0);
        (
            level as u8,
            (node as usize - self.present(level + 1)) as i32,
        )
    }

    /// The node of hnsw_rs's point of `rank` among those of `level`.
    pub(crate) fn node_at(&self, level: usize, rank: usize) -> u32 {
        (self.present(level + 1) + rank) as u32
    }

    /// The nodes in the order of hnsw_rs's dump: by level, lowest first, each in rank
    /// order.
    pub(crate) fn dump_order(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.levels.len()).flat_map(move |level| {
            (self.present(level + 1)..self.present(level)).map(|node| node as u32)
        })
    }

    /// The neighbours of `node` at `level` (none above its own).
    pub(crate) fn neighbours(&self, node: u32, level: usize) -> &[u32] {
        match self.levels.get(level) {
            Some(at) if (node as usize) < at.nodes() => at.of(node),
            _ => &[],
        }
    }

    /// The key of `node`.
    pub(crate) fn key(&self, node: u32) -> VectorKey {
        VectorKey::from_u64(self.keys[node as usize])
    }

    /// Each node's key, by node.
    pub(crate) fn keys(&self) -> impl ExactSizeIterator<Item = VectorKey> + '_ {
        self.keys.iter().map(|&key| VectorKey::from_u64(key))
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let words = 3
            + self.levels.len()
            + 2 * self.keys.len()
            + self
                .levels
                .iter()
                .map(|l| l.offsets.len() + l.neighbours.len())
                .sum::<usize>();
        let mut out = Vec::with_capacity(4 * words);
        let mut put = |value: u32| out.extend_from_slice(&value.to_le_bytes());
        put(VERSION);
        put(self.keys.len() as u32);
        put(self.levels.len() as u32);
        for level in &self.levels {
            put(level.nodes() as u32);
        }
        for &key in &self.keys {
            put(key as u32);
            put((key >> 32) as u32);
        }
        for level in &self.levels {
            level
                .offsets
                .iter()
                .chain(&level.neighbours)
                .for_each(|&v| put(v));
        }
        out
    }

    /// Reads what [`FlatGraph::encode`] wrote, checking every count, offset and
    /// neighbour (a damaged graph is an error, never a panic or a search out of bounds).
    pub(crate) fn decode(bytes: &[u8]) -> Result<FlatGraph> {
        let damaged = |why: &str| Error::corrupt(format!("published graph: {why}"));
        if !bytes.len().is_multiple_of(4) {
            return Err(damaged("truncated"));
        }
        // The file as words, read a run at a time (a run of 100,000 nodes' edges is one
        // loop the compiler vectorises, not a call per word).
        let words = bytes.len() / 4;
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u8]> {
            if words - at < n {
                return Err(damaged("truncated"));
            }
            let run = &bytes[at * 4..(at + n) * 4];
            at += n;
            Ok(run)
        };
        let read = |run: &[u8]| -> Vec<u32> {
            run.chunks_exact(4)
                .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")))
                .collect()
        };
        let head = read(take(3)?);
        if head[0] != VERSION {
            return Err(damaged("unknown version"));
        }
        let (n, n_levels) = (head[1] as usize, head[2] as usize);
        if (n == 0) != (n_levels == 0) || n_levels > 64 {
            return Err(damaged("bad level count"));
        }
        let counts: Vec<usize> = read(take(n_levels)?)
            .into_iter()
            .map(|c| c as usize)
            .collect();
        for (level, &count) in counts.iter().enumerate() {
            let fits = if level == 0 {
                count == n
            } else {
                count >= 1 && count <= counts[level - 1]
            };
            if !fits {
                return Err(damaged("bad node count"));
            }
        }
        let keys: Vec<u64> = take(2 * n)?
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
            .collect();
        let mut levels = Vec::with_capacity(n_levels);
        for &count in &counts {
            let offsets = read(take(count + 1)?);
            if offsets[0] != 0 || offsets.windows(2).any(|w| w[0] > w[1]) {
                return Err(damaged("bad offsets"));
            }
            let neighbours = read(take(offsets[count] as usize)?);
            // A maximum, not `any`: one pass without an early exit vectorises.
            if neighbours
                .iter()
                .copied()
                .max()
                .is_some_and(|m| m as usize >= count)
            {
                return Err(damaged("neighbour out of range"));
            }
            levels.push(Level {
                offsets,
                neighbours,
            });
        }
        if at != words {
            return Err(damaged("trailing bytes"));
        }
        Ok(FlatGraph { keys, levels })
    }

    /// The `k` nodes nearest to `query` (normalised) that `accept` admits, best first,
    /// with their cosine, searching with a candidate list of `ef`.
    ///
    /// `vector` gives a node's vector and the inverse of its norm, or `None` for a node
    /// whose document is gone: the search goes through such a node to its neighbours (so
    /// deletions do not cut the graph) but never returns it.
    ///
    /// With `codes` (each node's vector in 8 bits, of the query's dimension), the walk
    /// compares the query with the codes, which it reads a quarter as many bytes of, and
    /// the nodes it keeps are scored again from their vectors at the end: the cosines
    /// returned are exact, and only the walk's path may differ from one on the vectors
    /// themselves.
    pub(crate) fn search<'v>(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        vector: impl Fn(u32) -> Option<(&'v [f32], f32)>,
        codes: Option<&NodeCodes>,
        accept: Option<&dyn Fn(VectorKey) -> bool>,
    ) -> Vec<(VectorKey, f32)> {
        let n = self.keys.len();
        if n == 0 || k == 0 {
            return Vec::new();
        }
        let ef = ef.max(k);
        let codes = codes
            .filter(|codes| codes.fits(n, query.len()))
            .map(|codes| (codes, metric::QuantizedQuery::new(query)));
        let exact = |v: &[f32], inv: f32| metric::dot(query, v) * inv;
        // Distances are negated cosines: smaller is nearer.
        let distance = |node: u32| {
            let (v, inv) = vector(node)?;
            let estimate = codes.as_ref().and_then(|(codes, coded)| {
                codes
                    .code(node)
                    .map(|(code, scale)| coded.estimate(code, scale))
            });
            Some(-estimate.unwrap_or_else(|| exact(v, inv)))
        };
        let fetch = |node: u32| match codes.as_ref().and_then(|(codes, _)| codes.code(node)) {
            Some((code, _)) => prefetch(code),
            None => {
                if let Some((v, _)) = vector(node) {
                    prefetch(v);
                }
            }
        };
        let admitted =
            |node: u32| accept.is_none_or(|f| f(VectorKey::from_u64(self.keys[node as usize])));

        // The entry: the first live node, on the highest level that has one.
        let Some((at, at_distance)) =
            (0..n as u32).find_map(|node| distance(node).map(|d| (node, d)))
        else {
            return Vec::new();
        };
        let top = self
            .levels
            .iter()
            .rposition(|level| (at as usize) < level.nodes())
            .unwrap_or(0);
        // The descent through the upper levels keeps the best `UPPER_BEAM` nodes of each
        // (not one node, greedily: a sparse upper level's local best can lead level 0
        // into the wrong cluster), and level 0 starts from all of them.
        let mut entries = vec![(Cosine(at_distance), at)];
        for level in self.levels[1..=top].iter().rev() {
            entries = upper_beam(level, &entries, UPPER_BEAM, &distance);
        }

        // Beam search on level 0.
        let base = &self.levels[0];
        let mut visited = Visited::new(n);
        let mut candidates: BinaryHeap<Reverse<(Cosine, u32)>> = BinaryHeap::with_capacity(ef * 4);
        let mut results: BinaryHeap<(Cosine, u32)> = BinaryHeap::with_capacity(ef + 1);
        let mut pending: Vec<u32> = Vec::with_capacity(64);
        for &(d, node) in &entries {
            visited.insert(node);
            candidates.push(Reverse((d, node)));
            if admitted(node) {
                results.push((d, node));
            }
        }
        while let Some(Reverse((Cosine(d), node))) = candidates.pop() {
            let worst = results.peek().map_or(f32::INFINITY, |r| r.0.0);
            if results.len() >= ef && d > worst {
                break;
            }
            pending.clear();
            pending.extend(base.of(node).iter().rev());
            for &next in &pending {
                if !visited.contains(next) {
                    fetch(next);
                }
            }
            while let Some(next) = pending.pop() {
                if !visited.insert(next) {
                    continue;
                }
                let Some(d) = distance(next) else {
                    // A node whose document is gone: its neighbours stand in for it.
                    pending.extend(base.of(next).iter().filter(|&&m| !visited.contains(m)));
                    continue;
                };
                let worst = results.peek().map_or(f32::INFINITY, |r| r.0.0);
                if results.len() < ef || d < worst {
                    candidates.push(Reverse((Cosine(d), next)));
                    if admitted(next) {
                        results.push((Cosine(d), next));
                        if results.len() > ef {
                            results.pop();
                        }
                    }
                }
            }
        }
        let mut found = results.into_vec();
        if codes.is_some() {
            for (d, node) in &mut found {
                if let Some((v, inv)) = vector(*node) {
                    *d = Cosine(-exact(v, inv));
                }
            }
        }
        found.sort_unstable();
        found.truncate(k);
        found
            .into_iter()
            .map(|(Cosine(d), node)| (VectorKey::from_u64(self.keys[node as usize]), -d))
            .collect()
    }
}

/// Each node's vector (normalised) quantized to 8 bits, node by node, for the walk of
/// [`FlatGraph::search`]: a 384-d vector's codes are 6 cache lines instead of 24.
///
/// ```text
/// codes = [version: u32 = 1] [nodes: u32] [dim: u32] [scales: f32 * nodes]
///         [codes: i8 * dim * nodes]
/// ```
/// (little endian.) A node's vector is `scale * codes`; a scale of 0 marks a node that
/// had no vector when the codes were made (its document was gone): the walk scores it
/// from its vector, if it has one.
#[derive(Clone, Default)]
pub(crate) struct NodeCodes {
    dim: usize,
    scales: Vec<f32>,
    /// `dim` codes a node: made here, or read in place from a published file.
    codes: Codes,
}

/// Codes owned, or bytes shared with what holds them (a mapped file).
#[derive(Clone)]
enum Codes {
    Owned(Vec<i8>),
    Shared(Arc<dyn AsRef<[u8]> + Send + Sync>, Range<usize>),
}

impl Default for Codes {
    fn default() -> Codes {
        Codes::Owned(Vec::new())
    }
}

impl Codes {
    fn get(&self) -> &[i8] {
        match self {
            Codes::Owned(codes) => codes,
            Codes::Shared(owner, range) => as_codes(&(**owner).as_ref()[range.clone()]),
        }
    }
}

impl PartialEq for NodeCodes {
    fn eq(&self, other: &NodeCodes) -> bool {
        self.dim == other.dim
            && self.scales == other.scales
            && self.codes.get() == other.codes.get()
    }
}

impl std::fmt::Debug for NodeCodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeCodes")
            .field("nodes", &self.nodes())
            .field("dim", &self.dim)
            .finish_non_exhaustive()
    }
}

impl NodeCodes {
    /// The codes of `nodes` nodes of `dim` dimensions, each from its vector and the
    /// inverse of its norm (`None`: a node without one).
    pub(crate) fn of<'v>(
        nodes: usize,
        dim: usize,
        vector: impl Fn(u32) -> Option<(&'v [f32], f32)>,
    ) -> NodeCodes {
        let mut scales = Vec::with_capacity(nodes);
        let mut codes: Vec<i8> = Vec::with_capacity(nodes * dim);
        let mut row = vec![0.0f32; dim];
        for node in 0..nodes as u32 {
            match vector(node).filter(|(v, _)| v.len() == dim) {
                Some((v, inv)) => {
                    for (x, &y) in row.iter_mut().zip(v) {
                        *x = y * inv;
                    }
                    scales.push(metric::quantize(&row, &mut codes));
                }
                None => {
                    scales.push(0.0);
                    codes.resize(codes.len() + dim, 0);
                }
            }
        }
        NodeCodes {
            dim,
            scales,
            codes: Codes::Owned(codes),
        }
    }

    fn nodes(&self) -> usize {
        self.scales.len()
    }

    /// Whether these are codes of `nodes` nodes of `dim` dimensions.
    pub(crate) fn fits(&self, nodes: usize, dim: usize) -> bool {
        self.nodes() == nodes && self.dim == dim
    }

    /// The codes of `node` and their scale, if it has them.
    #[inline]
    fn code(&self, node: u32) -> Option<(&[i8], f32)> {
        let scale = *self.scales.get(node as usize)?;
        let start = node as usize * self.dim;
        (scale > 0.0).then(|| (&self.codes.get()[start..start + self.dim], scale))
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(12 + 4 * self.scales.len() + self.codes.get().len());
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(self.scales.len() as u32).to_le_bytes());
        out.extend_from_slice(&(self.dim as u32).to_le_bytes());
        for scale in &self.scales {
            out.extend_from_slice(&scale.to_le_bytes());
        }
        out.extend(self.codes.get().iter().map(|&code| code as u8));
        out
    }

    /// Reads what [`NodeCodes::encode`] wrote, for a graph of `nodes` nodes.
    #[cfg(test)]
    pub(crate) fn decode(bytes: &[u8], nodes: usize) -> Result<NodeCodes> {
        NodeCodes::decode_in_place(Arc::new(bytes.to_vec()), nodes)
    }

    /// [`NodeCodes::decode`] of the bytes `owner` holds, which the codes are then read
    /// from in place (a published file's section, mapped: 38 MB at 100,000 384-d nodes
    /// that a reader's open does not copy).
    pub(crate) fn decode_in_place(
        owner: Arc<dyn AsRef<[u8]> + Send + Sync>,
        nodes: usize,
    ) -> Result<NodeCodes> {
        let bytes = (*owner).as_ref();
        let damaged = |why: &str| Error::corrupt(format!("published graph's codes: {why}"));
        let word = |at: usize| {
            bytes
                .get(at..at + 4)
                .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")))
                .ok_or_else(|| damaged("truncated"))
        };
        if word(0)? != VERSION {
            return Err(damaged("unknown version"));
        }
        if word(4)? as usize != nodes {
            return Err(damaged("not the graph's node count"));
        }
        let dim = word(8)? as usize;
        let expected = (dim + 4)
            .checked_mul(nodes)
            .and_then(|body| body.checked_add(12))
            .ok_or_else(|| damaged("too long"))?;
        if bytes.len() != expected {
            return Err(damaged("not the length its counts give"));
        }
        let scales: Vec<f32> = bytes[12..12 + 4 * nodes]
            .chunks_exact(4)
            .map(|w| f32::from_le_bytes(w.try_into().expect("4 bytes")))
            .collect();
        if scales.iter().any(|s| !(s.is_finite() && *s >= 0.0)) {
            return Err(damaged("a scale that is negative or not finite"));
        }
        let codes = 12 + 4 * nodes..bytes.len();
        Ok(NodeCodes {
            dim,
            scales,
            codes: Codes::Shared(owner, codes),
        })
    }
}

/// Bytes as the 8-bit codes they hold.
pub(crate) fn as_codes(bytes: &[u8]) -> &[i8] {
    // SAFETY: `i8` and `u8` have the same size and alignment, and every bit pattern is
    // a value of both.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<i8>(), bytes.len()) }
}

/// How many nodes the descent through a graph's upper levels keeps at each level
/// (hnsw_rs, as the HNSW paper, keeps 1). The peer benchmark's synthetic 100,000,
/// `ef` 128, one build: held-out recall@10 0.969 with 1, 0.989 with 4 or 8; its noisy
/// queries 0.441, 0.611 and 0.694.
const UPPER_BEAM: usize = 8;

/// The `width` nodes of `level` nearest by `distance`, found from `entries` (at most
/// `width`), nearest first.
fn upper_beam(
    level: &Level,
    entries: &[(Cosine, u32)],
    width: usize,
    distance: &impl Fn(u32) -> Option<f32>,
) -> Vec<(Cosine, u32)> {
    let mut visited = Visited::new(level.nodes());
    for &(_, node) in entries {
        visited.insert(node);
    }
    let mut candidates: BinaryHeap<Reverse<(Cosine, u32)>> =
        entries.iter().copied().map(Reverse).collect();
    let mut results: BinaryHeap<(Cosine, u32)> = entries.iter().copied().collect();
    while let Some(Reverse((Cosine(d), node))) = candidates.pop() {
        let worst = results.peek().map_or(f32::INFINITY, |r| r.0.0);
        if results.len() >= width && d > worst {
            break;
        }
        for &next in level.of(node) {
            if !visited.insert(next) {
                continue;
            }
            let Some(d) = distance(next) else {
                continue;
            };
            let worst = results.peek().map_or(f32::INFINITY, |r| r.0.0);
            if results.len() < width || d < worst {
                candidates.push(Reverse((Cosine(d), next)));
                results.push((Cosine(d), next));
                if results.len() > width {
                    results.pop();
                }
            }
        }
    }
    results.into_sorted_vec()
}

/// Asks the CPU to start loading the first lines of `v` (a neighbour about to be
/// scored: the graph's walk is a chain of cache misses otherwise).
#[inline]
fn prefetch<T>(v: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let ptr = v.as_ptr().cast::<i8>();
        // 64-byte lines: the first six (a 384-d row's codes); the hardware prefetcher
        // follows the rest once the dot product reads them in order.
        for line in 0..std::mem::size_of_val(v).div_ceil(64).min(6) {
            // SAFETY: a prefetch never faults, and the address is within `v`.
            unsafe { _mm_prefetch(ptr.add(line * 64), _MM_HINT_T0) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = v;
}

/// The nodes a search has reached, one bit each.
struct Visited(Vec<u64>);

impl Visited {
    fn new(n: usize) -> Visited {
        Visited(vec![0; n.div_ceil(64)])
    }

    fn contains(&self, node: u32) -> bool {
        self.0[node as usize / 64] & (1 << (node % 64)) != 0
    }

    /// Marks `node`; returns whether it was new.
    fn insert(&mut self, node: u32) -> bool {
        let word = &mut self.0[node as usize / 64];
        let bit = 1 << (node % 64);
        let new = *word & bit == 0;
        *word |= bit;
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HnswParams;
    use crate::local::hnsw::Graph;
    use rand_chacha::ChaCha8Rng;
    use rand_chacha::rand_core::{RngCore, SeedableRng};

    const DIM: usize = 24;

    fn unit_vectors(seed: u64, n: usize) -> Vec<Vec<f32>> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let mut v: Vec<f32> = (0..DIM)
                    .map(|_| rng.next_u32() as f32 / u32::MAX as f32 - 0.5)
                    .collect();
                assert!(metric::normalize(&mut v));
                v
            })
            .collect()
    }

    fn key(i: usize) -> VectorKey {
        VectorKey::from_u64(1_000 + 7 * i as u64)
    }

    fn index_of(key: VectorKey) -> usize {
        (key.as_u64() as usize - 1_000) / 7
    }

    /// A graph hnsw_rs built over `vectors` (keyed by [`key`]), and its flat export.
    fn built(vectors: &[Vec<f32>]) -> (Graph, FlatGraph) {
        let params = HnswParams {
            max_connections: 8,
            ef_construction: 64,
            ef_search: 64,
        };
        let graph = Graph::new(params, vectors.len());
        let items: Vec<(&[f32], VectorKey)> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| (v.as_slice(), key(i)))
            .collect();
        assert!(graph.insert(&items).is_empty(), "distinct codes");
        let flat = graph.flat();
        (graph, flat)
    }

    /// The exact `k` nearest of those `live` admits, by index.
    fn exact(
        vectors: &[Vec<f32>],
        query: &[f32],
        k: usize,
        live: impl Fn(usize) -> bool,
    ) -> Vec<usize> {
        let mut scored: Vec<(f32, usize)> = (0..vectors.len())
            .filter(|&i| live(i))
            .map(|i| (metric::dot(query, &vectors[i]), i))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().take(k).map(|(_, i)| i).collect()
    }

    fn recall(found: &[(VectorKey, f32)], truth: &[usize]) -> f64 {
        let hits = found
            .iter()
            .filter(|(key, _)| truth.contains(&index_of(*key)))
            .count();
        hits as f64 / truth.len() as f64
    }

    #[test]
    fn the_export_searches_as_well_as_hnsw_rs_and_scores_exactly() {
        let mut vectors = unit_vectors(7, 3_050);
        let queries = vectors.split_off(3_000);
        let (graph, flat) = built(&vectors);
        assert_eq!(flat.len(), vectors.len());
        let mut keys: Vec<u64> = flat.keys().map(VectorKey::as_u64).collect();
        keys.sort_unstable();
        let mut expected: Vec<u64> = (0..vectors.len()).map(|i| key(i).as_u64()).collect();
        expected.sort_unstable();
        assert_eq!(keys, expected, "every point exported once");

        let vector_of = |node: u32| Some((vectors[index_of(flat.key(node))].as_slice(), 1.0));
        let codes = NodeCodes::of(flat.len(), DIM, vector_of);
        let (mut ours, mut coded, mut theirs) = (0.0, 0.0, 0.0);
        for query in &queries {
            let truth = exact(&vectors, query, 10, |_| true);
            for (codes, total) in [(None, &mut ours), (Some(&codes), &mut coded)] {
                let found = flat.search(query, 10, 64, vector_of, codes, None);
                assert_eq!(found.len(), 10);
                for pair in found.windows(2) {
                    assert!(pair[0].1 >= pair[1].1, "best first");
                }
                for (key, cosine) in &found {
                    assert_eq!(*cosine, metric::dot(query, &vectors[index_of(*key)]));
                }
                *total += recall(&found, &truth);
            }
            theirs += recall(&graph.search(query, 10, None), &truth);
        }
        let n = queries.len() as f64;
        let (ours, coded, theirs) = (ours / n, coded / n, theirs / n);
        assert!(ours >= 0.95, "flat recall {ours}");
        assert!(
            ours >= theirs - 0.03,
            "flat {ours} against hnsw_rs {theirs}"
        );
        // The walk on codes loses no more than a point of recall.
        assert!(coded >= ours - 0.01, "on codes {coded} against {ours}");
    }

    /// Codes of other dimensions or another graph are not used, and a node without a
    /// code (gone when the codes were made) is scored from its vector.
    #[test]
    fn a_walk_on_codes_takes_only_codes_that_fit() {
        let mut vectors = unit_vectors(13, 1_530);
        let queries = vectors.split_off(1_500);
        let (_, flat) = built(&vectors);
        let vector_of = |node: u32| Some((vectors[index_of(flat.key(node))].as_slice(), 1.0));
        let plain: Vec<_> = queries
            .iter()
            .map(|q| flat.search(q, 10, 64, vector_of, None, None))
            .collect();
        // Codes that do not fit: ignored, the same walk as without.
        let shorter = NodeCodes::of(flat.len() - 1, DIM, vector_of);
        let narrower = NodeCodes::of(flat.len(), DIM - 1, |node| {
            vector_of(node).map(|(v, inv)| (&v[..DIM - 1], inv))
        });
        for misfit in [&shorter, &narrower] {
            for (query, plain) in queries.iter().zip(&plain) {
                assert_eq!(
                    &flat.search(query, 10, 64, vector_of, Some(misfit), None),
                    plain
                );
            }
        }
        // Every other node without a code: the walk scores those from their vectors.
        let half = NodeCodes::of(flat.len(), DIM, |node| {
            node.is_multiple_of(2).then(|| vector_of(node)).flatten()
        });
        let mut total = 0.0;
        for query in &queries {
            let found = flat.search(query, 10, 64, vector_of, Some(&half), None);
            for (key, cosine) in &found {
                assert_eq!(*cosine, metric::dot(query, &vectors[index_of(*key)]));
            }
            total += recall(&found, &exact(&vectors, query, 10, |_| true));
        }
        let mean = total / queries.len() as f64;
        assert!(mean >= 0.95, "recall with half the codes {mean}");
    }

    #[test]
    fn codes_round_trip_and_damage_is_an_error_not_a_panic() {
        let vectors = unit_vectors(17, 300);
        let (_, flat) = built(&vectors);
        let vector_of = |node: u32| {
            let i = index_of(flat.key(node));
            (!i.is_multiple_of(5)).then(|| (vectors[i].as_slice(), 1.0))
        };
        let codes = NodeCodes::of(flat.len(), DIM, vector_of);
        let bytes = codes.encode();
        assert_eq!(NodeCodes::decode(&bytes, flat.len()).unwrap(), codes);
        assert!(
            NodeCodes::decode(&bytes, flat.len() + 1).is_err(),
            "another graph's"
        );
        for len in [0, 3, 4, 11, 12, bytes.len() / 2, bytes.len() - 1] {
            assert!(
                NodeCodes::decode(&bytes[..len], flat.len()).is_err(),
                "truncated at {len}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(
            NodeCodes::decode(&longer, flat.len()).is_err(),
            "trailing bytes"
        );
        for bad in [f32::NAN, f32::INFINITY, -1.0] {
            let mut damaged = bytes.clone();
            damaged[12..16].copy_from_slice(&bad.to_le_bytes());
            assert!(
                NodeCodes::decode(&damaged, flat.len()).is_err(),
                "scale {bad}"
            );
        }
        // Any byte changed: an error, or codes a walk runs on.
        let mut rng = ChaCha8Rng::seed_from_u64(19);
        for _ in 0..2_000 {
            let mut damaged = bytes.clone();
            let at = rng.next_u32() as usize % damaged.len();
            damaged[at] = rng.next_u32() as u8;
            if let Ok(codes) = NodeCodes::decode(&damaged, flat.len()) {
                let found = flat.search(&vectors[0], 5, 16, vector_of, Some(&codes), None);
                assert!(found.len() <= 5);
            }
        }
    }

    #[test]
    fn gone_nodes_are_crossed_never_returned_and_the_filter_holds() {
        let mut vectors = unit_vectors(11, 2_040);
        let queries = vectors.split_off(2_000);
        let (_, flat) = built(&vectors);
        // Two thirds of the documents gone, the entry point among them.
        let live = |i: usize| i.is_multiple_of(3) && index_of(flat.key(0)) != i;
        let vector_of = |node: u32| {
            let i = index_of(flat.key(node));
            live(i).then(|| (vectors[i].as_slice(), 1.0))
        };
        let even = |key: VectorKey| index_of(key).is_multiple_of(2);
        // Codes made before the documents went (a published graph's, older than a
        // reader's deletions), and after.
        let before = NodeCodes::of(flat.len(), DIM, |node| {
            Some((vectors[index_of(flat.key(node))].as_slice(), 1.0))
        });
        let after = NodeCodes::of(flat.len(), DIM, vector_of);
        for codes in [None, Some(&before), Some(&after)] {
            let mut total = 0.0;
            for query in &queries {
                let found = flat.search(query, 10, 64, vector_of, codes, None);
                assert!(found.iter().all(|(key, _)| live(index_of(*key))));
                total += recall(&found, &exact(&vectors, query, 10, live));
                let filtered = flat.search(query, 10, 64, vector_of, codes, Some(&even));
                assert_eq!(filtered.len(), 10);
                assert!(
                    filtered
                        .iter()
                        .all(|(key, _)| even(*key) && live(index_of(*key)))
                );
            }
            let mean = total / queries.len() as f64;
            assert!(mean >= 0.9, "recall among the live {mean}");
        }

        let none = |_: u32| None;
        assert!(
            flat.search(&queries[0], 10, 64, none, Some(&before), None)
                .is_empty()
        );
        assert!(
            FlatGraph::default()
                .search(&queries[0], 10, 64, vector_of, None, None)
                .is_empty()
        );
    }

    #[test]
    fn encoding_round_trips_and_damage_is_an_error_not_a_panic() {
        let vectors = unit_vectors(3, 500);
        let (_, flat) = built(&vectors);
        let bytes = flat.encode();
        assert_eq!(FlatGraph::decode(&bytes).unwrap(), flat);
        assert_eq!(
            FlatGraph::decode(&FlatGraph::default().encode()).unwrap(),
            FlatGraph::default()
        );
        for len in [
            0,
            3,
            4,
            11,
            12,
            bytes.len() / 2,
            bytes.len() - 4,
            bytes.len() - 1,
        ] {
            assert!(
                FlatGraph::decode(&bytes[..len]).is_err(),
                "truncated at {len}"
            );
        }
        let mut longer = bytes.clone();
        longer.extend_from_slice(&[0; 4]);
        assert!(FlatGraph::decode(&longer).is_err(), "trailing bytes");
        // Any word changed: an error, or a graph whose every neighbour is in range.
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for _ in 0..2_000 {
            let mut damaged = bytes.clone();
            let at = (rng.next_u32() as usize % (damaged.len() / 4)) * 4;
            let value = match rng.next_u32() % 3 {
                0 => u32::MAX,
                1 => rng.next_u32() % 4_096,
                _ => rng.next_u32(),
            };
            damaged[at..at + 4].copy_from_slice(&value.to_le_bytes());
            if let Ok(graph) = FlatGraph::decode(&damaged) {
                let vector_of = |node: u32| vectors.get(node as usize).map(|v| (v.as_slice(), 1.0));
                graph.search(&vectors[0], 5, 16, vector_of, None, None);
            }
        }
    }
}
