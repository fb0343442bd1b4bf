//! The vector leg: "here is a query vector, give me the nearest admitted documents".
//!
//! One HNSW [`Graph`] per document kind, derived from the store and rebuildable. A graph
//! *covers* a sequence number `s` when every vector of every upsert of its kind up to `s`
//! is in it; documents written later (the tail) are scanned exactly, so a commit is
//! searchable before the graph catches up. Dead entries (replaced or deleted versions)
//! stay in the graph and are filtered at search time until a rebuild drops them.
//!
//! A filtered candidate set below the exact-scan threshold is scanned exactly (recall
//! 1.0, and faster than a graph search at that size).

use crate::config::HnswParams;
use crate::model::metric;
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use crate::Kind;
use crate::local::catalog::{Admit, Catalog};
use crate::local::hnsw::{Cosine, best_cosine};
use crate::model::id::{DocId, VectorKey};

use crate::local::hnsw::{FlatGraph, Graph, NodeCodes};

/// The graph of one kind and how far it covers the change sequence.
pub(crate) struct KindGraph {
    graph: RwLock<Arc<Graph>>,
    /// The graph searches walk, flat, over the catalog's vectors: a reader's published
    /// one (a reader never inserts), or a writer's copy of `graph` made at a checkpoint,
    /// a load or a refresh (searched instead of `graph` while `graph` has not gone far
    /// past it).
    flat: RwLock<Option<Arc<BoundFlat>>>,
    /// Every vector of this kind upserted at or before this sequence number is in `graph`.
    covered: AtomicU64,
    /// `covered` at the last checkpoint stored in sled.
    checkpointed: AtomicU64,
    /// Vectors inserted since the last checkpoint.
    dirty: AtomicUsize,
}

/// The vector graphs of an engine.
pub(crate) struct VectorIndex {
    params: HnswParams,
    graphs: [KindGraph; Kind::COUNT],
}

/// How the vector leg found its candidates (for explain output and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct LegPlan {
    /// Candidates scanned exactly (the small filtered set, or the tail).
    pub(crate) exact_scanned: usize,
    /// Whether the graph was searched.
    pub(crate) used_graph: bool,
}

impl VectorIndex {
    pub(crate) fn new(params: HnswParams) -> VectorIndex {
        let empty = || KindGraph {
            graph: RwLock::new(Arc::new(Graph::new(params, 0))),
            flat: RwLock::new(None),
            covered: AtomicU64::new(0),
            checkpointed: AtomicU64::new(0),
            dirty: AtomicUsize::new(0),
        };
        VectorIndex {
            params,
            graphs: std::array::from_fn(|_| empty()),
        }
    }

    pub(crate) fn params(&self) -> HnswParams {
        self.params
    }

    fn kind_graph(&self, kind: Kind) -> &KindGraph {
        &self.graphs[kind.index()]
    }

    pub(crate) fn graph(&self, kind: Kind) -> Arc<Graph> {
        Arc::clone(
            &self
                .kind_graph(kind)
                .graph
                .read()
                .unwrap_or_else(|p| p.into_inner()),
        )
    }

    pub(crate) fn covered(&self, kind: Kind) -> u64 {
        self.kind_graph(kind).covered.load(Ordering::Acquire)
    }

    pub(crate) fn checkpointed(&self, kind: Kind) -> u64 {
        self.kind_graph(kind).checkpointed.load(Ordering::Acquire)
    }

    pub(crate) fn dirty(&self, kind: Kind) -> usize {
        self.kind_graph(kind).dirty.load(Ordering::Acquire)
    }

    /// Installs a graph that covers `covered` (a loaded checkpoint or a rebuild), with
    /// the documents of `catalog` it left out. A flat copy of the graph it replaces is
    /// dropped: its edges are not this graph's.
    pub(crate) fn install(
        &self,
        kind: Kind,
        graph: Graph,
        catalog: &Catalog,
        covered: u64,
        checkpointed: bool,
    ) {
        let slot = self.kind_graph(kind);
        let keys = graph.keys();
        graph.set_left_out(left_out(
            catalog,
            kind,
            covered,
            &catalog.arena_rows(kind, &keys),
        ));
        *slot.flat.write().unwrap_or_else(|p| p.into_inner()) = None;
        *slot.graph.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(graph);
        slot.covered.store(covered, Ordering::Release);
        if checkpointed {
            slot.checkpointed.store(covered, Ordering::Release);
            slot.dirty.store(0, Ordering::Release);
        } else {
            slot.dirty.store(usize::MAX / 2, Ordering::Release);
        }
    }

    /// Installs a published graph covering `covered`, its nodes located in `catalog`
    /// (a reader's, which does not change while it is open).
    pub(crate) fn install_flat(
        &self,
        kind: Kind,
        graph: FlatGraph,
        codes: Option<NodeCodes>,
        catalog: &Catalog,
        covered: u64,
    ) {
        // What the graph left out is found from the catalog: a reader has no graph of
        // its own to ask.
        let bound = BoundFlat::bind(graph, codes, kind, catalog, covered, None);
        self.put_flat(kind, bound);
        self.kind_graph(kind)
            .covered
            .store(covered, Ordering::Release);
        self.mark_checkpointed(kind, covered);
    }

    /// Makes `graph`, a flat copy of the graph of `kind` when it covered `covered`, the
    /// one searches walk (a writer's: the graph it inserts into goes on covering more;
    /// see [`VectorIndex::search`]), with its nodes' `codes` (made from the catalog's
    /// vectors when `None`, or not of this graph). What it left out is what the graph
    /// it was copied from left out (a superset once that graph goes on: those are in
    /// the tail, scanned either way).
    pub(crate) fn set_flat(
        &self,
        kind: Kind,
        graph: FlatGraph,
        codes: Option<NodeCodes>,
        catalog: &Catalog,
        covered: u64,
    ) {
        let left_out = self.graph(kind).left_out();
        let bound = BoundFlat::bind(graph, codes, kind, catalog, covered, Some(left_out));
        self.put_flat(kind, bound);
    }

    fn put_flat(&self, kind: Kind, bound: BoundFlat) {
        *self
            .kind_graph(kind)
            .flat
            .write()
            .unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(bound));
    }

    /// The change sequence the flat graph of `kind` covers, if it has one.
    pub(crate) fn flat_covered(&self, kind: Kind) -> Option<u64> {
        self.flat(kind).map(|flat| flat.covered)
    }

    /// The codes of the flat graph of `kind`, encoded, if it covers `covered` (what a
    /// graph published for that checkpoint carries).
    pub(crate) fn flat_codes(&self, kind: Kind, covered: u64) -> Option<Vec<u8>> {
        self.flat(kind)
            .filter(|flat| flat.covered == covered)
            .map(|flat| flat.codes.encode())
    }

    /// Whether a published graph is installed for `kind`.
    pub(crate) fn has_flat(&self, kind: Kind) -> bool {
        self.flat(kind).is_some()
    }

    fn flat(&self, kind: Kind) -> Option<Arc<BoundFlat>> {
        self.kind_graph(kind)
            .flat
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The number of points in the graph of `kind`: a writer's, or a reader's flat one.
    pub(crate) fn points(&self, kind: Kind) -> usize {
        let flat = self.flat(kind).map_or(0, |flat| flat.graph.len());
        flat.max(self.graph(kind).len())
    }

    /// Records that the graph of `kind` now covers `covered` after inserting `n` vectors
    /// (those it left out recorded by [`Graph::insert`] before it returned).
    pub(crate) fn advance(&self, kind: Kind, covered: u64, n: usize) {
        let slot = self.kind_graph(kind);
        slot.covered.fetch_max(covered, Ordering::AcqRel);
        slot.dirty.fetch_add(n, Ordering::AcqRel);
    }

    /// Records a checkpoint of the graph of `kind` covering `covered`.
    pub(crate) fn mark_checkpointed(&self, kind: Kind, covered: u64) {
        let slot = self.kind_graph(kind);
        slot.checkpointed.store(covered, Ordering::Release);
        slot.dirty.store(0, Ordering::Release);
    }

    /// The `k` documents nearest to `query` (normalised) among those `admit` admits (a
    /// filter bound to `catalog`), best first, with their best cosine over the
    /// document's vectors. Ties break on the user id.
    pub(crate) fn search(
        &self,
        catalog: &Catalog,
        admit: &Admit<'_>,
        query: &[f32],
        k: usize,
        exact_threshold: usize,
    ) -> (Vec<(DocId, f32)>, LegPlan) {
        let mut plan = LegPlan::default();
        let filter = admit.filter();
        let Some(superset) = catalog.superset(filter) else {
            return (Vec::new(), plan);
        };
        if k == 0 {
            return (Vec::new(), plan);
        }
        let n_docs = catalog.count(filter.kind).max(1);
        let permissive = superset.len() * 2 >= n_docs;
        if superset.len() <= exact_threshold {
            // Unless the filter is selective, the whole arena is scanned in memory order
            // (the filter checked only for documents that would enter the top `k`): a
            // row there costs a third of a candidate looked up by id.
            let scored = if superset.len() * 3 >= n_docs {
                scan_arena(catalog, admit, query, k, &mut plan)
            } else {
                let docs: Vec<DocId> = superset.docs();
                scan(catalog, admit, query, &docs, &mut plan)
            };
            return (top_k(catalog, scored, k), plan);
        }

        // The graph walked: the flat one (a reader's, or a writer's copy of its graph
        // at the last checkpoint), whose descent keeps a beam, unless a writer's graph
        // has gone on covering more than `exact_threshold` vectors since.
        let flat = self.flat(filter.kind);
        let in_graph = self.covered(filter.kind);
        // The graph walked and the documents it left out, copies of its nodes' codes
        // (scanned exactly), are taken together: a rebuild swaps both at once.
        let (walked, covered) = match flat {
            Some(flat)
                if flat.covered >= in_graph
                    || catalog
                        .vectors_after(filter.kind, flat.covered)
                        .nth(exact_threshold)
                        .is_none() =>
            {
                let covered = flat.covered;
                (Walked::Flat(flat), covered)
            }
            _ => (Walked::Graph(self.graph(filter.kind)), in_graph),
        };
        // The tail: documents the graph does not cover yet (all of them while a graph
        // checkpoint loads). Only its best `k` can be among the best `k` of all.
        if covered == 0 {
            let scored = scan_arena(catalog, admit, query, k, &mut plan);
            return (top_k(catalog, scored, k), plan);
        }
        let tail: Vec<DocId> = catalog
            .vectors_after(filter.kind, covered)
            .map(|(_, doc)| doc)
            .collect();
        let tail = scan(catalog, admit, query, &tail, &mut plan);
        let mut best: FxHashMap<DocId, f32> = top_k(catalog, tail, k).into_iter().collect();
        let left_out = match &walked {
            Walked::Flat(flat) => Arc::clone(&flat.left_out),
            Walked::Graph(graph) => graph.left_out(),
        };
        let copies = scan(catalog, admit, query, &left_out, &mut plan);
        best.extend(top_k(catalog, copies, k));

        plan.used_graph = true;
        let ef = self.params.ef_search;
        let search = |k: usize, accept: Option<&dyn Fn(VectorKey) -> bool>| match &walked {
            Walked::Flat(flat) => flat.search(catalog, filter.kind, query, k, ef, accept),
            Walked::Graph(graph) => graph.search(query, k, accept),
        };
        let rows_per_doc = catalog.n_vectors(filter.kind).div_ceil(n_docs).max(1);
        let fetch = k * rows_per_doc + 8;
        let accept = |key: VectorKey| {
            catalog
                .get(key.doc())
                .is_some_and(|entry| admit.admits(entry))
        };
        let mut from_graph = FxHashMap::default();
        // A flat graph's hits come best first with each row's exact cosine: when every
        // document has one row, they are the documents' own, and once `k` are admitted a
        // hit below the `k`-th cannot enter the best `k` (one equal to it still can,
        // on the user id), so the rest are not looked up.
        let exact = matches!(walked, Walked::Flat(_));
        let final_order = exact && catalog.one_row_each(filter.kind);
        let collect = |hits: Vec<(VectorKey, f32)>, from_graph: &mut FxHashMap<DocId, f32>| {
            let mut kth = f32::NEG_INFINITY;
            for (key, cosine) in hits {
                if final_order && from_graph.len() >= k && cosine < kth {
                    break;
                }
                if accept(key) {
                    let slot = from_graph.entry(key.doc()).or_insert(f32::NEG_INFINITY);
                    *slot = slot.max(cosine);
                    if from_graph.len() == k && kth == f32::NEG_INFINITY {
                        kth = cosine;
                    }
                }
            }
        };
        // A permissive filter searches unfiltered and drops what the filter rejects,
        // which keeps hnsw_rs's early exit; when too few survive, or the filter is
        // selective, the graph search applies the filter.
        if permissive {
            collect(search(fetch * 2, None), &mut from_graph);
        }
        if from_graph.len() < k {
            from_graph.clear();
            collect(search(fetch, Some(&accept)), &mut from_graph);
        }
        // The graph's distance is that of the vector it reached: the document's best
        // cosine is taken over all its vectors (a rule's patterns and centroid). A
        // published graph scores a row as `best` does, bit for bit: a document of one
        // row keeps it.
        for (doc, cosine) in from_graph {
            if let Some(vectors) = catalog.vectors(doc) {
                let cosine = if exact && vectors.inverse.len() == 1 {
                    cosine
                } else {
                    vectors.best(query).0
                };
                best.insert(doc, cosine);
            }
        }
        (top_k(catalog, best.into_iter().collect(), k), plan)
    }
}

/// What a search walks: the flat graph, or a writer's graph.
enum Walked {
    Flat(Arc<BoundFlat>),
    Graph(Arc<Graph>),
}

/// A flat graph and where each of its nodes' vectors lies in the catalog's arena.
pub(crate) struct BoundFlat {
    graph: FlatGraph,
    /// Each node's vector in 8 bits, for the walk.
    codes: NodeCodes,
    /// Each node's arena row (`u32::MAX`: its document is gone), valid while the
    /// catalog is at `generation`.
    rows: Vec<u32>,
    generation: u64,
    /// Every vector upserted at or before this sequence number was in the graph.
    covered: u64,
    /// The documents of the catalog up to `covered` with a vector the graph lacks (see
    /// [`Graph::left_out`]), as of binding.
    left_out: Arc<Vec<DocId>>,
}

impl BoundFlat {
    /// Binds `graph` to `catalog`; what it left out is `left_out`, or found from the
    /// catalog when `None`.
    fn bind(
        graph: FlatGraph,
        codes: Option<NodeCodes>,
        kind: Kind,
        catalog: &Catalog,
        covered: u64,
        left_out: Option<Arc<Vec<DocId>>>,
    ) -> BoundFlat {
        let keys: Vec<VectorKey> = graph.keys().collect();
        let rows = catalog.arena_rows(kind, &keys);
        let left_out =
            left_out.unwrap_or_else(|| Arc::new(self::left_out(catalog, kind, covered, &rows)));
        let arena = catalog.arena(kind);
        let codes = codes
            .filter(|codes| codes.fits(graph.len(), arena.dim))
            .unwrap_or_else(|| {
                NodeCodes::of(graph.len(), arena.dim, |node| match rows[node as usize] {
                    u32::MAX => None,
                    row => arena.row(row as usize),
                })
            });
        BoundFlat {
            graph,
            codes,
            rows,
            generation: catalog.generation(),
            covered,
            left_out,
        }
    }

    /// [`FlatGraph::search`] over the vectors of `catalog`'s arena of `kind`.
    fn search(
        &self,
        catalog: &Catalog,
        kind: Kind,
        query: &[f32],
        k: usize,
        ef: usize,
        accept: Option<&dyn Fn(VectorKey) -> bool>,
    ) -> Vec<(VectorKey, f32)> {
        let arena = catalog.arena(kind);
        let at = |row: u32| arena.row(row as usize);
        if catalog.generation() == self.generation {
            self.graph.search(
                query,
                k,
                ef,
                |node| match self.rows[node as usize] {
                    u32::MAX => None,
                    row => at(row),
                },
                Some(&self.codes),
                accept,
            )
        } else {
            // The catalog changed since the rows were located (only a writer's does):
            // locate each node as it is reached.
            self.graph.search(
                query,
                k,
                ef,
                |node| catalog.arena_row(self.graph.key(node)).and_then(at),
                Some(&self.codes),
                accept,
            )
        }
    }
}

/// The best cosine of each of `docs` that `admit` admits and that has vectors, exactly.
/// (Not split between rayon's threads: the caller holds the catalog's read lock, and a
/// rayon worker waiting for its jobs may steal a search that waits behind a commit.)
fn scan(
    catalog: &Catalog,
    admit: &Admit<'_>,
    query: &[f32],
    docs: &[DocId],
    plan: &mut LegPlan,
) -> Vec<(DocId, f32)> {
    let mut scored = Vec::with_capacity(docs.len());
    for &doc in docs {
        let Some(entry) = catalog.get(doc) else {
            continue;
        };
        let Some(vectors) = catalog.vectors_of(entry) else {
            continue;
        };
        if admit.admits(entry) {
            scored.push((
                doc,
                best_cosine(query, vectors.data, vectors.inverse, query.len()),
            ));
        }
    }
    plan.exact_scanned += scored.len();
    scored
}

/// Every document of the arena of `admit`'s kind scored exactly, in memory order;
/// returns at least the best `k` of those `admit` admits (and all that tie with the
/// `k`-th), for [`top_k`] to order. The filter is asked only about documents whose cosine
/// would enter the best `k` so far, so it costs nothing for the rest.
/// (While a graph checkpoint loads, the graph covers nothing: this is the whole tail.)
///
/// The scan reads the arena's 8-bit copy (a quarter of the bytes: a scan is bound by
/// memory), which bounds each cosine from below and above; only the documents whose
/// upper bound reaches the `k`-th best lower bound are scored again from their `f32`
/// rows, so the result is the exact scan's, not an approximation.
fn scan_arena(
    catalog: &Catalog,
    admit: &Admit<'_>,
    query: &[f32],
    k: usize,
    plan: &mut LegPlan,
) -> Vec<(DocId, f32)> {
    let filter = admit.filter();
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let (arena, quantized, spans) = catalog.scan_view(filter.kind);
    let dim = arena.dim;
    if dim != query.len() {
        return Vec::new();
    }
    // The best `k` lower bounds of admitted documents so far (a min-heap), and every
    // admitted document whose upper bound reaches the smallest of them.
    // (Sized by what a scan can keep, not by `k`: a request may ask for a million.)
    let room = k.min(catalog.n_vectors(filter.kind)).min(4_096);
    let mut floor: BinaryHeap<Reverse<Cosine>> = BinaryHeap::with_capacity(room + 1);
    let mut kept: Vec<(DocId, usize, usize, f32)> = Vec::with_capacity(4 * room);
    let mut prune_at = 8 * k;
    let lowest = |floor: &BinaryHeap<Reverse<Cosine>>| {
        if floor.len() == k {
            floor.peek().map_or(f32::NEG_INFINITY, |min| min.0.0)
        } else {
            f32::NEG_INFINITY
        }
    };
    let coded = metric::QuantizedQuery::new(query);
    let mut estimates = Vec::new();
    quantized.estimates(&coded, dim, &mut estimates);
    for (doc, start, rows) in spans {
        plan.exact_scanned += 1;
        let (mut low, mut high) = (f32::NEG_INFINITY, f32::NEG_INFINITY);
        for (row, &estimate) in estimates[start..start + rows].iter().enumerate() {
            let slack = quantized.slack(&coded, start + row);
            low = low.max(estimate - slack);
            high = high.max(estimate + slack);
        }
        if high < lowest(&floor) {
            continue;
        }
        if !catalog.get(doc).is_some_and(|entry| admit.admits(entry)) {
            continue;
        }
        floor.push(Reverse(Cosine(low)));
        if floor.len() > k {
            floor.pop();
        }
        kept.push((doc, start, rows, high));
        if kept.len() >= prune_at {
            let min = lowest(&floor);
            kept.retain(|&(.., high)| high >= min);
            // Many ties with the floor: prune less often rather than at every push.
            prune_at = prune_at.max(2 * kept.len());
        }
    }
    let min = lowest(&floor);
    kept.into_iter()
        .filter(|&(.., high)| high >= min)
        .map(|(doc, start, rows, _)| {
            let (block, inverse) = arena.rows(start, rows);
            (doc, best_cosine(query, block, inverse, dim))
        })
        .collect()
}

/// The documents of `kind` in `catalog` written up to `covered` with an arena row that
/// is not one of `nodes` (the graph's nodes' rows, `u32::MAX` for a node whose document
/// is gone): left out of the graph as copies of a node's code. In id order. One pass
/// over the arena in memory order.
fn left_out(catalog: &Catalog, kind: Kind, covered: u64, nodes: &[u32]) -> Vec<DocId> {
    let mut in_graph: Vec<bool> = Vec::new();
    for &row in nodes.iter().filter(|&&row| row != u32::MAX) {
        let row = row as usize;
        if row >= in_graph.len() {
            in_graph.resize(row + 1, false);
        }
        in_graph[row] = true;
    }
    let mut docs: Vec<DocId> = catalog
        .arena_spans(kind)
        .filter(|&(_, start, rows)| {
            (start..start + rows).any(|row| !in_graph.get(row).copied().unwrap_or(false))
        })
        .map(|(doc, ..)| doc)
        // The rest are the tail's, scanned as such.
        .filter(|&doc| catalog.get(doc).is_some_and(|entry| entry.seq <= covered))
        .collect();
    docs.sort_unstable();
    docs
}

/// The vector `key` names, normalised as a graph holds it (see
/// [`crate::local::store::VectorsRef::normalised`]), if it is a live document's.
pub(crate) fn catalog_vector(catalog: &Catalog, kind: Kind, key: VectorKey) -> Option<Vec<f32>> {
    if catalog.get(key.doc())?.kind() != kind {
        return None;
    }
    let (row, inverse) = catalog.arena(kind).row(catalog.arena_row(key)? as usize)?;
    Some(crate::local::store::normalised_rows(
        row,
        &[inverse],
        row.len(),
    ))
}

/// The best `k` of `ranked` (one entry per document), by cosine descending then user id.
fn top_k(catalog: &Catalog, mut ranked: Vec<(DocId, f32)>, k: usize) -> Vec<(DocId, f32)> {
    if k == 0 {
        return Vec::new();
    }
    // Only the candidates at or above the k-th best cosine (ties included) need the full
    // order, whose tiebreak looks user ids up: a small filtered scan returns thousands.
    if ranked.len() > k {
        ranked.select_nth_unstable_by(k - 1, |a, b| b.1.total_cmp(&a.1));
        let kth = ranked[k - 1].1;
        ranked.retain(|r| r.1.total_cmp(&kth).is_ge());
    }
    let user_id = |doc: &DocId| catalog.get(*doc).map_or("", |e| e.id());
    ranked.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| user_id(&a.0).cmp(user_id(&b.0)))
            .then_with(|| a.0.cmp(&b.0))
    });
    ranked.truncate(k);
    ranked
}
