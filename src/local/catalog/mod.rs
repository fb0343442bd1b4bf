//! The in-memory view of the live documents: what filters and both legs consult.
//!
//! The catalog is derived from the store at open and updated at every commit, under the
//! engine's write lock, in the same critical section that makes the text index's commit
//! visible, so a search never sees one without the other. It holds each live document
//! (without vectors), its vectors, the sequence number that wrote it, and postings by
//! tenant and context to enumerate candidate sets without a full scan.
//!
//! A reader's catalog is built from a mapped base (`store::base`) without decoding a
//! document: its entries point into the base's table, its arenas read the base's rows in
//! place, and a document is decoded when a search or a filter needs more than its kind,
//! tenant, id and context.

mod admit;
mod arena;
mod entry;
#[cfg(test)]
mod tests;

pub(crate) use self::admit::Admit;
use self::arena::Arena;
pub(crate) use self::arena::{ArenaView, Placed, Vectors};
pub(crate) use self::entry::{ContextSet, DocSet, Entry, Superset};

use std::collections::{BTreeMap, HashMap, HashSet};

use rustc_hash::FxHashMap;

use std::sync::Arc;

use crate::Kind;

use crate::local::StrMap;

use crate::local::store::base::MappedBase;

use crate::local::store::{DocRows, VectorsRef};

use crate::model::id::{DocId, VectorKey};

use crate::model::metric;

use crate::retrieve::DocFilter;

fn version_hash(doc: DocId, seq: u64) -> u64 {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&doc.as_u64().to_le_bytes());
    bytes[8..].copy_from_slice(&seq.to_le_bytes());
    xxhash_rust::xxh3::xxh3_64(&bytes)
}

/// The number of `tenant` in `numbers`, given it if it has none.
fn tenant_number(numbers: &mut StrMap<u32>, tenant: &str) -> u32 {
    if let Some(&number) = numbers.get(tenant) {
        return number;
    }
    let number = numbers.len() as u32;
    numbers.insert(tenant.to_string(), number);
    number
}

/// Records `entry` as the live version of its id.
fn add_id(ids: &mut IdMaps, doc: DocId, entry: &Entry) {
    let ids = &mut ids[entry.kind().index()];
    let tenant = entry.tenant_id();
    match ids.get_mut(tenant) {
        Some(map) => {
            map.insert(entry.id().to_string(), doc);
        }
        None => {
            ids.insert(
                tenant.to_string(),
                StrMap::from_iter([(entry.id().to_string(), doc)]),
            );
        }
    }
}

/// Takes `removed` from a tenant's token totals and adds `added`.
fn adjust_tokens(totals: &mut StrMap<[u64; 2]>, tenant: &str, removed: [u32; 2], added: [u32; 2]) {
    let totals = match totals.get_mut(tenant) {
        Some(totals) => totals,
        None => totals.entry(tenant.to_owned()).or_default(),
    };
    for ((total, removed), added) in totals.iter_mut().zip(removed).zip(added) {
        *total = total.saturating_sub(u64::from(removed)) + u64::from(added);
    }
}

/// User ids to live versions, by kind and tenant.
type IdMaps = [StrMap<StrMap<DocId>>; Kind::COUNT];

/// The live documents of an index.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    entries: FxHashMap<DocId, Entry>,
    /// The entity graph of the live documents.
    pub(crate) graph: crate::local::graph::EntityGraph,
    /// Live documents by kind (index `Kind::as_u8`) and tenant.
    by_tenant: [StrMap<DocSet>; Kind::COUNT],
    /// Live chunks by tenant and context, in write order.
    by_context: StrMap<StrMap<ContextSet>>,
    /// Live documents that have vectors, by kind and upsert sequence number.
    vectors_by_seq: [BTreeMap<u64, DocId>; Kind::COUNT],
    /// The normalised vectors of the live documents, by kind.
    arenas: [Arena; Kind::COUNT],
    /// User ids to live versions, by kind and tenant: made from the entries by the
    /// first lookup (a reader's searches never look an id up, and 100,000 ids cost an
    /// open 10 ms), then kept up to date.
    ids: std::sync::OnceLock<IdMaps>,
    /// XOR of a hash of `(DocId, seq)` over the live documents: which versions are live,
    /// in 8 bytes (see [`Catalog::digest`]).
    digest: u64,
    /// Bumped by every change to the live documents or the arenas: a table of arena rows
    /// computed at one generation is valid while it lasts (see [`Catalog::arena_row`]).
    generation: u64,
    /// Token totals of the live documents by kind and tenant (`[words, ident]`).
    tokens: [StrMap<[u64; 2]>; Kind::COUNT],
    /// A number for each tenant a document of the catalog has had (never reused, never
    /// forgotten: tenants are few), which its entries carry so that a filter checks a
    /// tenant without reading the document.
    tenants: StrMap<u32>,
    /// The sum of the centroids of each kind's documents of a tenant, and their count,
    /// made when first asked for ([`Catalog::centroid_sum`]) and kept for a generation.
    centroid_sums: std::sync::Mutex<CentroidSums>,
}

/// Each kind and tenant's [`CentroidSum`], with the generation it was made at.
type CentroidSums = FxHashMap<(Kind, String), (u64, Arc<CentroidSum>)>;

/// The sum of some documents' centroids (unit vectors), and how many were added.
#[derive(Debug, Default)]
pub(crate) struct CentroidSum {
    pub(crate) sum: Vec<f64>,
    pub(crate) count: usize,
}

impl Catalog {
    pub(crate) fn get(&self, doc: DocId) -> Option<&Entry> {
        self.entries.get(&doc)
    }

    /// The sum of the centroids (normalised) of the documents of `kind` and `tenant`
    /// that have vectors, and their count: what the relevance gate's background is
    /// made of. Kept until the live documents change.
    pub(crate) fn centroid_sum(&self, kind: Kind, tenant: &str) -> Arc<CentroidSum> {
        let key = (kind, tenant.to_string());
        let mut sums = self.centroid_sums.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((generation, sum)) = sums.get(&key)
            && *generation == self.generation
        {
            return Arc::clone(sum);
        }
        let mut total = CentroidSum::default();
        if let Some(docs) = self.by_tenant[kind.index()].get(tenant) {
            for &doc in docs {
                let Some((row, inverse)) = self.vectors(doc).and_then(|v| v.centroid()) else {
                    continue;
                };
                if total.sum.is_empty() {
                    total.sum = vec![0.0; row.len()];
                }
                if total.sum.len() != row.len() {
                    continue;
                }
                for (sum, x) in total.sum.iter_mut().zip(row) {
                    *sum += f64::from(x * inverse);
                }
                total.count += 1;
            }
        }
        let total = Arc::new(total);
        sums.insert(key, (self.generation, Arc::clone(&total)));
        total
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The catalog of a mapped base: an entry per record of its table (nothing decoded),
    /// its rows as the arenas, and the entity graph of its entity lists (built on another
    /// thread meanwhile).
    pub(crate) fn from_base(
        base: &Arc<MappedBase>,
        mut entities: Vec<(u64, Vec<String>)>,
    ) -> Catalog {
        if !entities.is_sorted_by_key(|(doc, _)| *doc) {
            entities.sort_unstable_by_key(|(doc, _)| *doc);
        }
        let mut catalog = Catalog::default();
        for kind in Kind::ALL {
            let rows = base.rows(kind).inverse.len();
            if rows > 0 {
                catalog.arenas[kind.index()] = Arena {
                    dim: base.dimensions(kind),
                    base: Some(Arc::clone(base)),
                    base_rows: rows,
                    ..Arena::default()
                };
            }
        }
        let graph_of = || {
            let mut graph = crate::local::graph::EntityGraph::default();
            let mut records = base.records().peekable();
            let remaining = entities.len();
            let linked = entities.into_iter().filter_map(|(doc, list)| {
                let doc = DocId::new(doc);
                while records.next_if(|record| record.doc < doc).is_some() {}
                let record = records.next_if(|record| record.doc == doc)?;
                let list = crate::local::graph::without_own_id(list, base.id(&record));
                Some((doc, record.kind, base.tenant(&record), list))
            });
            graph.insert_all(linked, remaining);
            graph
        };
        let (graph, ()) = rayon::join(graph_of, || catalog.link_base(base));
        catalog.graph = graph;
        catalog
    }

    /// Links every record of `base` (an empty catalog's arenas adopted its rows): what
    /// [`Catalog::insert_placed`] does for each, with the postings grouped by the base's
    /// name indices first (no name hashed per document) and the maps sized once.
    fn link_base(&mut self, base: &Arc<MappedBase>) {
        debug_assert!(self.entries.is_empty());
        let names = base.names();
        let mut by_tenant: Vec<FxHashMap<usize, DocSet>> =
            Kind::ALL.iter().map(|_| FxHashMap::default()).collect();
        let mut by_context: FxHashMap<(usize, usize), ContextSet> = FxHashMap::default();
        let mut tokens: Vec<FxHashMap<usize, [u64; 2]>> =
            Kind::ALL.iter().map(|_| FxHashMap::default()).collect();
        let mut by_seq: Vec<Vec<(u64, DocId)>> = Kind::ALL.iter().map(|_| Vec::new()).collect();
        let mut numbers: Vec<Option<u32>> = vec![None; names.len()];
        self.entries.reserve(base.len());
        for (i, record) in base.records().enumerate() {
            let kind = record.kind.index();
            let doc = record.doc;
            self.digest ^= version_hash(doc, record.seq);
            let number = *numbers[record.tenant_index()]
                .get_or_insert_with(|| tenant_number(&mut self.tenants, base.tenant(&record)));
            let mut entry = Entry::mapped(base, i, &record, number);
            if record.rows.1 > 0
                && let Some(slot) =
                    self.arenas[kind].place(doc, record.rows.0, record.rows.1 as usize)
            {
                entry.vectors = Some(Vectors { slot });
                by_seq[kind].push((record.seq, doc));
            }
            let tenant = record.tenant_index();
            by_tenant[kind].entry(tenant).or_default().insert(doc);
            if let Some(context) = record.context_index() {
                by_context.entry((tenant, context)).or_default().insert(doc);
            }
            let totals = tokens[kind].entry(tenant).or_default();
            for (total, n) in totals.iter_mut().zip(record.tokens) {
                *total += u64::from(n);
            }
            self.entries.insert(doc, entry);
        }
        self.generation += 1;
        for kind in Kind::ALL {
            let k = kind.index();
            for (tenant, set) in std::mem::take(&mut by_tenant[k]) {
                self.by_tenant[k].insert(names[tenant].clone(), set);
            }
            for (tenant, totals) in std::mem::take(&mut tokens[k]) {
                self.tokens[k].insert(names[tenant].clone(), totals);
            }
            self.vectors_by_seq[k] = std::mem::take(&mut by_seq[k]).into_iter().collect();
        }
        for ((tenant, context), set) in by_context {
            self.by_context
                .entry(names[tenant].clone())
                .or_default()
                .insert(names[context].clone(), set);
        }
    }

    /// The BM25 statistics of one scope: live documents of `kind` in `tenant`, and
    /// their tokens.
    pub(crate) fn scope_stats(&self, kind: Kind, tenant: &str) -> crate::local::text::ScopeStats {
        crate::local::text::ScopeStats {
            docs: self.tenant_count(kind, tenant) as u64,
            tokens: self.tokens[kind.index()]
                .get(tenant)
                .copied()
                .unwrap_or_default(),
        }
    }

    /// Sets a live document's token counts (read from the text index at open).
    pub(crate) fn set_tokens(&mut self, doc_id: DocId, tokens: [u32; 2]) {
        let Some(entry) = self.entries.get_mut(&doc_id) else {
            return;
        };
        let old = std::mem::replace(&mut entry.tokens, tokens);
        adjust_tokens(
            &mut self.tokens[entry.kind().index()],
            entry.tenant_id(),
            old,
            tokens,
        );
    }

    /// Live documents of `kind` in `tenant`.
    pub(crate) fn tenant_count(&self, kind: Kind, tenant: &str) -> usize {
        self.by_tenant[kind.index()]
            .get(tenant)
            .map_or(0, HashSet::len)
    }

    pub(crate) fn count(&self, kind: Kind) -> usize {
        self.by_tenant[kind.index()]
            .values()
            .map(HashSet::len)
            .sum()
    }

    /// The names of the tenants with live documents (a name once per kind it has).
    pub(crate) fn tenant_names(&self) -> impl Iterator<Item = &str> {
        self.by_tenant
            .iter()
            .flat_map(HashMap::keys)
            .map(String::as_str)
    }

    pub(crate) fn tenants(&self) -> usize {
        self.tenant_names().collect::<HashSet<_>>().len()
    }

    pub(crate) fn n_vectors(&self, kind: Kind) -> usize {
        self.arenas[kind.index()].live_rows
    }

    /// Whether every live document of `kind` that has vectors has exactly one.
    pub(crate) fn one_row_each(&self, kind: Kind) -> bool {
        self.arenas[kind.index()].uneven_spans == 0
    }

    /// Takes `data`, rows of `dim` dimensions that an open filled in parallel, with
    /// their inverse norms and vector indices, as the arena of `kind` (empty until
    /// then); [`Catalog::insert_placed`] then gives each document its span. Rows no span
    /// covers (vectors without a direction) are dropped at the arena's next compaction.
    pub(crate) fn adopt_arena(
        &mut self,
        kind: Kind,
        dim: usize,
        data: Vec<f32>,
        inverse: Vec<f32>,
        indices: Vec<u16>,
    ) {
        self.generation += 1;
        let arena = &mut self.arenas[kind.index()];
        debug_assert!(arena.spans.is_empty());
        debug_assert_eq!(data.len(), inverse.len() * dim);
        debug_assert_eq!(indices.len(), inverse.len());
        *arena = Arena {
            dim,
            data,
            inverse,
            indices,
            ..Arena::default()
        };
    }

    /// A live document's vectors.
    pub(crate) fn vectors(&self, doc: DocId) -> Option<VectorsRef<'_>> {
        self.vectors_of(self.entries.get(&doc)?)
    }

    /// An entry's vectors.
    pub(crate) fn vectors_of<'a>(&'a self, entry: &'a Entry) -> Option<VectorsRef<'a>> {
        let vectors = entry.vectors.as_ref()?;
        let kind = entry.kind();
        let arena = &self.arenas[kind.index()];
        let span = arena.spans[vectors.slot as usize];
        let view = arena.view(kind);
        let (start, rows) = (span.start as usize, span.rows as usize);
        let (data, inverse) = view.rows(start, rows);
        Some(VectorsRef {
            data,
            inverse,
            rows: view.indices(start, rows),
        })
    }

    /// The generation of the live documents and arenas (see [`Catalog::arena_row`]).
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Where the vector `key` lies in its kind's arena (a row of [`Catalog::arena`]),
    /// if its document is live; valid until [`Catalog::generation`] changes.
    pub(crate) fn arena_row(&self, key: VectorKey) -> Option<u32> {
        let kind = self.entries.get(&key.doc())?.kind();
        self.arena_row_in(&self.arena(kind), kind, key)
    }

    /// [`Catalog::arena_row`] of each of `keys`, vectors of `kind` (`u32::MAX` for one
    /// that is not a live document's), in parallel.
    pub(crate) fn arena_rows(&self, kind: Kind, keys: &[VectorKey]) -> Vec<u32> {
        use rayon::prelude::*;
        let view = self.arena(kind);
        keys.par_iter()
            .map(|&key| self.arena_row_in(&view, kind, key).unwrap_or(u32::MAX))
            .collect()
    }

    fn arena_row_in(&self, view: &ArenaView<'_>, kind: Kind, key: VectorKey) -> Option<u32> {
        let entry = self.entries.get(&key.doc())?;
        if entry.kind() != kind {
            return None;
        }
        let vectors = entry.vectors.as_ref()?;
        let span = self.arenas[kind.index()].spans[vectors.slot as usize];
        let indices = view.indices(span.start as usize, span.rows as usize);
        let wanted = (key.as_u64() & 0xffff) as u16;
        // Rows are the vectors' indices in order, those without a direction left out:
        // usually position `i` holds index `i`.
        let position = match indices.get(usize::from(wanted)) {
            Some(&row) if row == wanted => usize::from(wanted),
            _ => indices.iter().position(|&row| row == wanted)?,
        };
        Some(span.start + position as u32)
    }

    /// The arena of `kind` for an exact scan: its rows, their normalised and quantized
    /// copy, and each live document's first row and number of rows, in memory order.
    pub(crate) fn scan_view(
        &self,
        kind: Kind,
    ) -> (
        ArenaView<'_>,
        &metric::Quantized,
        impl Iterator<Item = (DocId, usize, usize)> + '_,
    ) {
        let arena = &self.arenas[kind.index()];
        let view = arena.view(kind);
        let quantized = arena.quantized.get_or_init(|| {
            let mut quantized = metric::Quantized::with_capacity(arena.rows(), arena.dim);
            for segment in view.segments() {
                quantized.extend(segment.data, segment.inverse, arena.dim);
            }
            quantized
        });
        (view, quantized, arena.spans())
    }

    /// Each live document of `kind` with vectors: its first arena row and number of
    /// rows, in memory order.
    pub(crate) fn arena_spans(
        &self,
        kind: Kind,
    ) -> impl Iterator<Item = (DocId, usize, usize)> + '_ {
        self.arenas[kind.index()].spans()
    }

    /// The rows of `kind`'s arena that a mapped base holds (0 once compacted out).
    #[cfg(test)]
    pub(crate) fn base_rows(&self, kind: Kind) -> usize {
        self.arenas[kind.index()].base_rows
    }

    /// The rows of the arena of `kind`.
    pub(crate) fn arena(&self, kind: Kind) -> ArenaView<'_> {
        self.arenas[kind.index()].view(kind)
    }

    /// The live version of a user id.
    pub(crate) fn lookup(&self, kind: Kind, tenant: &str, id: &str) -> Option<DocId> {
        let ids = self.ids.get_or_init(|| {
            let mut ids = IdMaps::default();
            for (&doc, entry) in &self.entries {
                add_id(&mut ids, doc, entry);
            }
            ids
        });
        ids[kind.index()].get(tenant)?.get(id).copied()
    }

    /// A digest of the live versions: equal digests mean (but for a 2^-64 chance) the
    /// same documents at the same versions. Kept up to date by insert and remove.
    pub(crate) fn digest(&self) -> u64 {
        self.digest
    }

    /// Adds a live document version, with its vectors and the entities it mentions
    /// (what [`crate::local::graph::entities_of`] gave when it was written).
    pub(crate) fn insert(
        &mut self,
        doc_id: DocId,
        entry: Entry,
        vectors: Option<DocRows>,
        entities: Vec<String>,
    ) {
        self.remove_existing(doc_id);
        let kind = entry.kind();
        self.graph.insert(doc_id, kind, entry.tenant_id(), entities);
        let vectors = vectors.and_then(|vectors| {
            let slot = self.arenas[kind.index()].push(doc_id, &vectors)?;
            Some(Vectors { slot })
        });
        self.link(doc_id, entry, vectors);
    }

    /// [`Catalog::insert`] of a document whose rows are already in its arena (adopted by
    /// [`Catalog::adopt_arena`], or a mapped base's), without the entity graph (an open
    /// builds the graph beside the catalog, then sets [`Catalog::graph`]).
    pub(crate) fn insert_placed(&mut self, doc_id: DocId, entry: Entry, placed: Option<Placed>) {
        self.remove_existing(doc_id);
        let kind_idx = entry.kind().index();
        let vectors = placed.and_then(|placed| {
            let slot = self.arenas[kind_idx].place(doc_id, placed.start, placed.rows)?;
            Some(Vectors { slot })
        });
        self.link(doc_id, entry, vectors);
    }

    /// A version inserted again replaces the first, whose span dies with it (the engine
    /// never does it; a damaged store could list a version twice). Called before the
    /// new span exists: removing may compact the arena.
    fn remove_existing(&mut self, doc_id: DocId) {
        if self.entries.contains_key(&doc_id) {
            self.remove(doc_id);
        }
    }

    fn link(&mut self, doc_id: DocId, mut entry: Entry, vectors: Option<Vectors>) {
        self.digest ^= version_hash(doc_id, entry.seq);
        self.generation += 1;
        let kind_idx = entry.kind().index();
        entry.tenant = tenant_number(&mut self.tenants, entry.tenant_id());
        let tenant = entry.tenant_id();
        adjust_tokens(&mut self.tokens[kind_idx], tenant, [0, 0], entry.tokens);
        if let Some(ids) = self.ids.get_mut() {
            add_id(ids, doc_id, &entry);
        }
        let tenants = &mut self.by_tenant[kind_idx];
        match tenants.get_mut(tenant) {
            Some(set) => {
                set.insert(doc_id);
            }
            None => {
                tenants.insert(tenant.to_string(), DocSet::from_iter([doc_id]));
            }
        }
        if let Some(context) = entry.context_id() {
            let contexts = match self.by_context.get_mut(tenant) {
                Some(contexts) => contexts,
                None => self.by_context.entry(tenant.to_string()).or_default(),
            };
            match contexts.get_mut(context) {
                Some(set) => {
                    set.insert(doc_id);
                }
                None => {
                    contexts.insert(context.to_string(), ContextSet::from_iter([doc_id]));
                }
            }
        }
        entry.vectors = vectors;
        if entry.vectors.is_some() {
            self.vectors_by_seq[kind_idx].insert(entry.seq, doc_id);
        }
        self.entries.insert(doc_id, entry);
    }

    /// Removes a document version; returns it if it was live.
    pub(crate) fn remove(&mut self, doc_id: DocId) -> Option<Entry> {
        let mut entry = self.entries.remove(&doc_id)?;
        self.digest ^= version_hash(doc_id, entry.seq);
        self.generation += 1;
        let kind = entry.kind();
        let tenant = entry.tenant_id();
        self.graph.remove(doc_id, kind, tenant);
        adjust_tokens(&mut self.tokens[kind.index()], tenant, entry.tokens, [0, 0]);
        if let Some(ids) = self.ids.get_mut() {
            let ids = &mut ids[kind.index()];
            if let Some(map) = ids.get_mut(tenant) {
                if map.get(entry.id()) == Some(&doc_id) {
                    map.remove(entry.id());
                }
                if map.is_empty() {
                    ids.remove(tenant);
                }
            }
        }
        let tenants = &mut self.by_tenant[kind.index()];
        if let Some(set) = tenants.get_mut(tenant) {
            set.remove(&doc_id);
            if set.is_empty() {
                tenants.remove(tenant);
            }
        }
        if let (Some(context), Some(contexts)) =
            (entry.context_id(), self.by_context.get_mut(tenant))
        {
            if let Some(set) = contexts.get_mut(context) {
                set.remove(&doc_id);
                if set.is_empty() {
                    contexts.remove(context);
                }
            }
            if contexts.is_empty() {
                self.by_context.remove(tenant);
            }
        }
        if let Some(vectors) = entry.vectors.take() {
            self.vectors_by_seq[kind.index()].remove(&entry.seq);
            let arena = &mut self.arenas[kind.index()];
            arena.kill(vectors.slot);
            if arena.wants_compaction() {
                for (doc, slot) in arena.compact(kind) {
                    if let Some(vectors) =
                        self.entries.get_mut(&doc).and_then(|e| e.vectors.as_mut())
                    {
                        vectors.slot = slot;
                    }
                }
            }
        }
        Some(entry)
    }

    /// The smallest indexed superset of what `filter` admits.
    pub(crate) fn superset(&self, filter: &DocFilter<'_>) -> Option<Superset<'_>> {
        if filter.kind == Kind::Chunk
            && let Some(context) = filter.context
        {
            return self
                .by_context
                .get(filter.tenant)?
                .get(context)
                .map(Superset::Context);
        }
        self.by_tenant[filter.kind.index()]
            .get(filter.tenant)
            .map(Superset::Tenant)
    }

    /// Every live document that `filter` admits.
    pub(crate) fn matching(&self, filter: &DocFilter<'_>) -> Vec<DocId> {
        let Some(superset) = self.superset(filter) else {
            return Vec::new();
        };
        let admit = self.admit(filter);
        superset
            .docs()
            .into_iter()
            .filter(|doc| self.entries.get(doc).is_some_and(|e| admit.admits(e)))
            .collect()
    }

    /// The turns written just before and just after the chunk `doc` in its context (a
    /// conversation's neighbouring turns), each only when written within `gap` of it
    /// (its `created_at`; without timestamps, adjacency alone). `[None, None]` for a
    /// chunk without a context, or another kind.
    pub(crate) fn neighbours(&self, doc: DocId, gap: std::time::Duration) -> [Option<DocId>; 2] {
        let Some(entry) = self.entries.get(&doc) else {
            return [None, None];
        };
        let (Some(context), Some(contexts)) =
            (entry.context_id(), self.by_context.get(entry.tenant_id()))
        else {
            return [None, None];
        };
        let Some(set) = contexts.get(context) else {
            return [None, None];
        };
        let created = |doc: DocId| -> Option<crate::Timestamp> {
            self.entries.get(&doc)?.doc().ok()?.as_chunk()?.created_at
        };
        let at = created(doc);
        let close = |other: DocId| match (at, created(other)) {
            (Some(a), Some(b)) => {
                a.unix_millis().abs_diff(b.unix_millis()) <= gap.as_millis() as u64
            }
            _ => true,
        };
        [
            set.range(..doc).next_back().copied().filter(|&d| close(d)),
            set.range(DocId::new(doc.as_u64() + 1)..)
                .next()
                .copied()
                .filter(|&d| close(d)),
        ]
    }

    /// `filter` bound to this catalog, to ask of its entries.
    pub(crate) fn admit<'a>(&'a self, filter: &'a DocFilter<'a>) -> Admit<'a> {
        Admit {
            filter,
            tenant: self.tenants.get(filter.tenant).copied(),
        }
    }

    /// Documents of `kind` with vectors written after sequence number `after`, in order.
    pub(crate) fn vectors_after(
        &self,
        kind: Kind,
        after: u64,
    ) -> impl Iterator<Item = (u64, DocId)> + '_ {
        self.vectors_by_seq[kind.index()]
            .range(after.saturating_add(1)..)
            .map(|(seq, doc)| (*seq, *doc))
    }

    /// The number of rows of `entry`'s vectors.
    fn n_rows(&self, entry: &Entry) -> usize {
        entry.vectors.as_ref().map_or(0, |vectors| {
            self.arenas[entry.kind().index()].spans[vectors.slot as usize].rows as usize
        })
    }

    /// The number of live vectors of `kind` written up to sequence number `upto`.
    pub(crate) fn n_vectors_upto(&self, kind: Kind, upto: u64) -> usize {
        self.vectors_by_seq[kind.index()]
            .range(..=upto)
            .filter_map(|(_, doc)| self.entries.get(doc))
            .map(|entry| self.n_rows(entry))
            .sum()
    }

    /// The number of live vectors of `kind` written after sequence number `after`.
    pub(crate) fn n_vectors_after(&self, kind: Kind, after: u64) -> usize {
        self.vectors_by_seq[kind.index()]
            .range((std::ops::Bound::Excluded(after), std::ops::Bound::Unbounded))
            .filter_map(|(_, doc)| self.entries.get(doc))
            .map(|entry| self.n_rows(entry))
            .sum()
    }

    /// Every live document, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (DocId, &Entry)> {
        self.entries.iter().map(|(doc, entry)| (*doc, entry))
    }
}
