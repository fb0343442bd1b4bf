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

use std::collections::{BTreeMap, HashMap, HashSet};

use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

use crate::Kind;
use crate::local::StrMap;
use crate::local::store::base::{BaseRows, MappedBase, Record};
use crate::local::store::{DocRows, VectorsRef};
use crate::model::doc::{Document, Scope};
use crate::model::id::{CENTROID_ROW, DocId, VectorKey};
use crate::model::metric;
use crate::retrieve::DocFilter;

/// A set of documents (hashed by their ids' bits, not SipHash: the hot path of every
/// search looks documents up by id).
pub(crate) type DocSet = FxHashSet<DocId>;

/// The live chunks of one context, in the order they were written (`DocId`s grow with
/// each write): a conversation's turns in order.
pub(crate) type ContextSet = std::collections::BTreeSet<DocId>;

/// The smallest indexed superset of what a filter admits ([`Catalog::superset`]).
#[derive(Clone, Copy)]
pub(crate) enum Superset<'a> {
    /// The documents of a kind and tenant.
    Tenant(&'a DocSet),
    /// The chunks of one context.
    Context(&'a ContextSet),
}

impl Superset<'_> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Superset::Tenant(set) => set.len(),
            Superset::Context(set) => set.len(),
        }
    }

    pub(crate) fn docs(&self) -> Vec<DocId> {
        match self {
            Superset::Tenant(set) => set.iter().copied().collect(),
            Superset::Context(set) => set.iter().copied().collect(),
        }
    }
}

/// One live document.
#[derive(Debug)]
pub(crate) struct Entry {
    doc: Source,
    kind: Kind,
    /// Whether every search of its kind and tenant that asks for no context, tag or
    /// metadata admits it (as [`crate::local::store::DocRecord::summary`] says of a record).
    plain: bool,
    /// Its tenant's number in the catalog that holds it (see [`Catalog::admit`]), set
    /// when the catalog links it.
    tenant: u32,
    /// The sequence number of the upsert that wrote this version.
    pub(crate) seq: u64,
    /// Where its vectors are in its kind's [`Arena`] (set by [`Catalog::insert`]);
    /// `None` when the document has no vector.
    pub(crate) vectors: Option<Vectors>,
    /// Its token counts in the text index, `[words, ident]` (for its scope's BM25
    /// statistics).
    pub(crate) tokens: [u32; 2],
}

/// Where an entry's document is.
#[derive(Debug)]
enum Source {
    /// Decoded.
    Ready(Arc<Document>),
    /// Record `index` of a mapped base, decoded when first asked for.
    Mapped {
        base: Arc<MappedBase>,
        index: u32,
        decoded: std::sync::OnceLock<Arc<Document>>,
    },
}

impl Entry {
    /// A document version, its vectors not yet placed (see [`Catalog::insert`]).
    pub(crate) fn new(doc: Document, seq: u64) -> Entry {
        Entry {
            kind: doc.kind(),
            plain: is_plain(&doc),
            tenant: 0,
            doc: Source::Ready(Arc::new(doc)),
            seq,
            vectors: None,
            tokens: [0, 0],
        }
    }

    /// Record `index` of `base`, its vectors not yet placed.
    fn mapped(base: &Arc<MappedBase>, index: usize, record: &Record, tenant: u32) -> Entry {
        Entry {
            kind: record.kind,
            plain: record.plain,
            tenant,
            doc: Source::Mapped {
                base: Arc::clone(base),
                index: index as u32,
                decoded: std::sync::OnceLock::new(),
            },
            seq: record.seq,
            vectors: None,
            tokens: record.tokens,
        }
    }

    /// The document, decoded if it was not.
    ///
    /// # Errors
    ///
    /// [`crate::ErrorKind::Corrupt`] when a mapped base's entry does not decode.
    pub(crate) fn doc(&self) -> crate::Result<&Arc<Document>> {
        match &self.doc {
            Source::Ready(doc) => Ok(doc),
            Source::Mapped {
                base,
                index,
                decoded,
            } => {
                if let Some(doc) = decoded.get() {
                    return Ok(doc);
                }
                let record = base.record(*index as usize);
                let doc = base.doc_record(&record)?.into_document()?;
                Ok(decoded.get_or_init(|| Arc::new(doc)))
            }
        }
    }

    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    pub(crate) fn tenant_id(&self) -> &str {
        match &self.doc {
            Source::Ready(doc) => doc.tenant_id(),
            Source::Mapped { base, index, .. } => base.tenant(&base.record(*index as usize)),
        }
    }

    /// The user id.
    pub(crate) fn id(&self) -> &str {
        match &self.doc {
            Source::Ready(doc) => doc.id(),
            Source::Mapped { base, index, .. } => base.id(&base.record(*index as usize)),
        }
    }

    /// A chunk's context.
    pub(crate) fn context_id(&self) -> Option<&str> {
        match &self.doc {
            Source::Ready(doc) => doc.as_chunk().and_then(|c| c.context_id.as_deref()),
            Source::Mapped { base, index, .. } => base.context(&base.record(*index as usize)),
        }
    }
}

impl crate::local::text::UserId for Entry {
    fn user_id(&self) -> &str {
        self.id()
    }
}

/// Whether `doc` is plain (as [`crate::local::store::DocRecord::summary`] says of its record):
/// a rule enabled and global, a chunk that never expires, a scenario or tool enabled,
/// and none of them restricted to an agent.
fn is_plain(doc: &Document) -> bool {
    let (plain, agent) = match doc {
        Document::Rule(rule) => (
            rule.enabled && matches!(rule.scope, Scope::Global),
            &rule.agent_id,
        ),
        Document::Chunk(chunk) => (chunk.expires_at.is_none(), &chunk.agent_id),
        Document::Scenario(scenario) => (scenario.enabled, &scenario.agent_id),
        Document::Tool(tool) => (tool.enabled, &tool.agent_id),
    };
    plain && agent.is_none()
}

/// A document's place in its kind's arena: its span (which records its rows, and which
/// of its vectors each row is: 0 = main, 1.. = patterns, [`CENTROID_ROW`]).
#[derive(Debug)]
pub(crate) struct Vectors {
    slot: u32,
}

/// The rows of an arena, borrowed: `dim` floats each, as stored, with the inverse of
/// each row's norm and which vector of its document each row is. Rows
/// `0..base.inverse.len()` are a mapped base's, read in place; the rest are the
/// arena's own.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArenaView<'a> {
    base: BaseRows<'a>,
    own: BaseRows<'a>,
    pub(crate) dim: usize,
}

impl<'a> ArenaView<'a> {
    /// The segment that holds row `row`, and the row's place in it.
    #[inline]
    fn segment(&self, row: usize) -> (&BaseRows<'a>, usize) {
        let base_rows = self.base.inverse.len();
        if row < base_rows {
            (&self.base, row)
        } else {
            (&self.own, row - base_rows)
        }
    }

    /// Row `row` and its inverse norm.
    #[inline]
    pub(crate) fn row(&self, row: usize) -> Option<(&'a [f32], f32)> {
        let (segment, row) = self.segment(row);
        let inverse = *segment.inverse.get(row)?;
        let start = row * self.dim;
        Some((segment.data.get(start..start + self.dim)?, inverse))
    }

    /// `rows` rows from `start` (one document's: never across the two segments), and
    /// their inverse norms.
    pub(crate) fn rows(&self, start: usize, rows: usize) -> (&'a [f32], &'a [f32]) {
        let (segment, start) = self.segment(start);
        (
            &segment.data[start * self.dim..(start + rows) * self.dim],
            &segment.inverse[start..start + rows],
        )
    }

    /// Which vector of its document each of `rows` rows from `start` is.
    fn indices(&self, start: usize, rows: usize) -> &'a [u16] {
        let (segment, start) = self.segment(start);
        &segment.indices[start..start + rows]
    }

    /// The two segments: the base's rows, then the arena's own.
    fn segments(&self) -> [BaseRows<'a>; 2] {
        [self.base, self.own]
    }
}

impl<'a> VectorsRef<'a> {
    /// The document's centroid row (the only row of a document with one vector) and
    /// its inverse norm.
    pub(crate) fn centroid(self) -> Option<(&'a [f32], f32)> {
        let dim = self.data.len() / self.rows.len().max(1);
        let at = match self.rows {
            [_] => 0,
            rows => rows.iter().position(|&row| row == CENTROID_ROW)?,
        };
        Some((&self.data[at * dim..(at + 1) * dim], self.inverse[at]))
    }
}

/// A document's rows already in its arena (see [`Catalog::adopt_arena`]): the first row
/// and how many.
#[derive(Debug)]
pub(crate) struct Placed {
    pub(crate) start: u32,
    pub(crate) rows: usize,
}

/// The vectors of one kind's live documents, one contiguous block, so an exact scan
/// reads memory in order (about 50 ns per 384-d row on one core, against 150 for
/// vectors allocated one document at a time). This is the catalog's only copy of each
/// vector: as stored, with the inverse of each row's norm and which vector of its
/// document each row is beside it. A reader's arena starts as a mapped base's rows, read
/// in place; rows added later are the arena's own.
///
/// Each document owns a span of consecutive rows; a removed document's span stays, dead,
/// until dead rows outnumber live ones and [`Arena::compact`] copies the live spans down
/// (into the arena's own rows: the base is then let go).
#[derive(Debug, Default)]
struct Arena {
    /// Dimensions of every row (0 before the first).
    dim: usize,
    /// The mapped base whose rows are rows `0..base_rows`.
    base: Option<Arc<MappedBase>>,
    base_rows: usize,
    data: Vec<f32>,
    /// Per row, the inverse of its norm (a cosine is `dot(q, row) * inverse`).
    inverse: Vec<f32>,
    /// Per row, which vector of its document it is.
    indices: Vec<u16>,
    /// The rows normalised and quantized, row for row, for exact scans that read a
    /// quarter of the bytes: made by the first scan (an index searched through its
    /// graph never needs it), then kept up to date.
    quantized: std::sync::OnceLock<metric::Quantized>,
    spans: Vec<Span>,
    live_rows: usize,
    dead_rows: usize,
    /// Live spans of other than one row.
    uneven_spans: usize,
}

#[derive(Debug, Clone, Copy)]
struct Span {
    doc: DocId,
    /// First row.
    start: u32,
    rows: u32,
    live: bool,
}

impl Arena {
    /// Every row.
    fn view(&self, kind: Kind) -> ArenaView<'_> {
        let base = match &self.base {
            Some(base) => base.rows(kind),
            None => BaseRows::default(),
        };
        ArenaView {
            base,
            own: BaseRows {
                data: &self.data,
                inverse: &self.inverse,
                indices: &self.indices,
            },
            dim: self.dim,
        }
    }

    /// The number of rows.
    fn rows(&self) -> usize {
        self.base_rows + self.inverse.len()
    }

    /// Appends a document's rows; returns its slot, or `None` when their dimensions are
    /// not the arena's (the store validates dimensions, so that is a bug, not user data).
    fn push(&mut self, doc: DocId, vectors: &DocRows) -> Option<u32> {
        let dim = vectors.dim();
        if self.dim == 0 {
            self.dim = dim;
        }
        if dim != self.dim || dim == 0 {
            debug_assert!(
                false,
                "vectors of {dim} dimensions in an arena of {}",
                self.dim
            );
            tracing::error!(
                dim,
                arena = self.dim,
                "vectors of another dimension ignored"
            );
            return None;
        }
        let start = u32::try_from(self.rows()).ok()?;
        let slot = u32::try_from(self.spans.len()).ok()?;
        self.data.extend_from_slice(&vectors.data);
        self.inverse.extend_from_slice(&vectors.inverse);
        self.indices.extend_from_slice(&vectors.rows);
        if let Some(quantized) = self.quantized.get_mut() {
            quantized.extend(&vectors.data, &vectors.inverse, dim);
        }
        self.spans.push(Span {
            doc,
            start,
            rows: vectors.rows.len() as u32,
            live: true,
        });
        self.live_rows += vectors.rows.len();
        self.uneven_spans += usize::from(vectors.rows.len() != 1);
        Some(slot)
    }

    /// Records a span whose rows are already in the arena; returns its slot.
    fn place(&mut self, doc: DocId, start: u32, rows: usize) -> Option<u32> {
        let slot = u32::try_from(self.spans.len()).ok()?;
        self.spans.push(Span {
            doc,
            start,
            rows: rows as u32,
            live: true,
        });
        self.live_rows += rows;
        self.uneven_spans += usize::from(rows != 1);
        Some(slot)
    }

    fn kill(&mut self, slot: u32) {
        let span = &mut self.spans[slot as usize];
        if span.live {
            span.live = false;
            self.live_rows -= span.rows as usize;
            self.dead_rows += span.rows as usize;
            self.uneven_spans -= usize::from(span.rows != 1);
        }
    }

    /// Whether enough rows are dead to copy the live ones down.
    fn wants_compaction(&self) -> bool {
        self.dead_rows >= 1_024 && self.dead_rows > self.live_rows
    }

    /// Drops the dead spans (and the base); returns each live document with its new
    /// slot.
    fn compact(&mut self, kind: Kind) -> Vec<(DocId, u32)> {
        let dim = self.dim;
        let mut data = Vec::with_capacity(self.live_rows * dim);
        let mut inverse = Vec::with_capacity(self.live_rows);
        let mut indices = Vec::with_capacity(self.live_rows);
        let mut quantized = self
            .quantized
            .get()
            .map(|_| metric::Quantized::with_capacity(self.live_rows, dim));
        let mut spans = Vec::with_capacity(self.spans.len());
        let mut moved = Vec::with_capacity(self.spans.len());
        {
            let view = self.view(kind);
            for span in self.spans.iter().filter(|span| span.live) {
                let (start, rows) = (span.start as usize, span.rows as usize);
                let new_start = inverse.len() as u32;
                let (block, block_inverse) = view.rows(start, rows);
                data.extend_from_slice(block);
                inverse.extend_from_slice(block_inverse);
                indices.extend_from_slice(view.indices(start, rows));
                if let (Some(to), Some(from)) = (quantized.as_mut(), self.quantized.get()) {
                    to.copy_rows(from, start, rows, dim);
                }
                moved.push((span.doc, spans.len() as u32));
                spans.push(Span {
                    start: new_start,
                    ..*span
                });
            }
        }
        self.base = None;
        self.base_rows = 0;
        self.data = data;
        self.inverse = inverse;
        self.indices = indices;
        self.quantized = quantized.map(std::sync::OnceLock::from).unwrap_or_default();
        self.spans = spans;
        self.dead_rows = 0;
        moved
    }

    /// Every live document's first row and number of rows, in arena order.
    fn spans(&self) -> impl Iterator<Item = (DocId, usize, usize)> + '_ {
        self.spans
            .iter()
            .filter(|span| span.live)
            .map(|span| (span.doc, span.start as usize, span.rows as usize))
    }
}

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

/// A [`DocFilter`] bound to one catalog (see [`Catalog::admit`]): its tenant as the
/// catalog numbers it, so that a plain document (most are) is admitted or not from its
/// entry alone, without reading the document or its tenant's name.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Admit<'a> {
    filter: &'a DocFilter<'a>,
    /// The filter's tenant's number; `None` when no document of the catalog has ever
    /// had that tenant.
    tenant: Option<u32>,
}

impl Admit<'_> {
    /// Whether the filter admits `entry`'s document (an entry of the catalog it was
    /// bound to): [`DocFilter::matches`], answered from the entry (kind, tenant number,
    /// plainness, a chunk's context, which a mapped base's record gives) for a plain
    /// document and a filter that asks for no tag and no metadata, so that such a
    /// document is never decoded to be filtered. A document that cannot be decoded is
    /// not admitted (and logged: its file's checksum was verified, so that is a bug,
    /// not damage).
    pub(crate) fn admits(&self, entry: &Entry) -> bool {
        let filter = self.filter;
        if entry.kind != filter.kind || self.tenant != Some(entry.tenant) {
            return false;
        }
        if entry.plain && filter.tags.is_empty() && filter.metadata.is_empty() {
            return filter.kind != Kind::Chunk
                || filter
                    .context
                    .is_none_or(|context| entry.context_id() == Some(context));
        }
        match entry.doc() {
            Ok(doc) => filter.matches(doc),
            Err(err) => {
                tracing::error!(id = entry.id(), error = %err, "a published document does not decode");
                false
            }
        }
    }

    pub(crate) fn filter(&self) -> &DocFilter<'_> {
        self.filter
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::store::normalised_rows;
    use crate::model::metric::inverse_norm;
    use crate::model::time::Timestamp;
    use crate::{Chunk, Rule};

    fn filter<'a>(kind: Kind) -> DocFilter<'a> {
        DocFilter {
            kind,
            tenant: "default",
            agent: None,
            scenario: None,
            step: None,
            context: None,
            tags: &[],
            metadata: &[],
            now: Timestamp::from_unix_millis(0),
        }
    }

    /// Model-based: the arena follows inserts, removals, re-inserts of a version and its
    /// compactions; every live document's vectors are the ones it was inserted with.
    #[test]
    fn arena_keeps_each_live_documents_vectors_through_compactions() {
        let mut catalog = Catalog::default();
        let mut model: BTreeMap<u64, Vec<f32>> = BTreeMap::new();
        let mut random = crate::testing::Xorshift(0x9e37_79b9_7f4a_7c15);
        let mut next = move || random.next();
        // An open's arena first: filled in one piece, with a spare row after each
        // document (a zero vector's) that no span covers. Rows are kept as stored (not
        // normalised), with their inverse norms.
        let inverses = |rows: &[f32]| -> Vec<f32> {
            rows.chunks_exact(4)
                .map(|row| inverse_norm(row).unwrap())
                .collect()
        };
        let (mut data, mut inverse) = (Vec::new(), Vec::new());
        for doc in 0..500u64 {
            let rows: Vec<f32> = (0..8).map(|_| 1.0 + (next() % 1_000) as f32).collect();
            data.extend_from_slice(&rows);
            data.extend_from_slice(&[0.0; 4]);
            inverse.extend(inverses(&rows));
            inverse.push(0.0);
            model.insert(doc, rows);
        }
        let indices = (0..500).flat_map(|_| [0, 1, 0]).collect();
        catalog.adopt_arena(Kind::Chunk, 4, data, inverse, indices);
        for doc in 0..500u64 {
            let chunk = Document::Chunk(crate::Chunk::new(format!("c{doc}"), "x"));
            let placed = Placed {
                start: doc as u32 * 3,
                rows: 2,
            };
            catalog.insert_placed(DocId::new(doc), Entry::new(chunk, doc), Some(placed));
        }
        let mut compactions = 0;
        // The 8-bit copy made now, then kept up to date through the sequence.
        let _ = catalog.scan_view(Kind::Chunk).1;
        for step in 500..20_000u64 {
            let doc = next() % 3_000;
            let before = catalog.arenas[Kind::Chunk.index()].spans.len();
            if next() % 3 == 0 {
                assert_eq!(
                    catalog.remove(DocId::new(doc)).is_some(),
                    model.remove(&doc).is_some()
                );
            } else {
                let rows = 1 + (next() % 3) as usize;
                let data: Vec<f32> = (0..rows * 4)
                    .map(|_| 1.0 + (next() % 1_000) as f32)
                    .collect();
                let chunk = Document::Chunk(crate::Chunk::new(format!("c{doc}"), "x"));
                let vectors = DocRows {
                    inverse: inverses(&data),
                    data: data.clone(),
                    rows: (0..rows as u16).collect(),
                };
                catalog.insert(
                    DocId::new(doc),
                    Entry::new(chunk, step),
                    Some(vectors),
                    Vec::new(),
                );
                model.insert(doc, data);
            }
            if catalog.arenas[Kind::Chunk.index()].spans.len() < before {
                compactions += 1;
            }
        }
        assert!(compactions > 0, "the sequence compacted the arena");
        let rows: usize = model.values().map(|v| v.len() / 4).sum();
        assert_eq!(catalog.n_vectors(Kind::Chunk), rows);
        for (doc, data) in &model {
            let got = catalog.vectors(DocId::new(*doc)).expect("live");
            assert_eq!(got.data, data.as_slice());
            assert_eq!(got.inverse, inverses(data).as_slice());
        }
        let (arena, quantized, spans) = catalog.scan_view(Kind::Chunk);
        let dim = arena.dim;
        let mut blocks = BTreeMap::new();
        for (doc, start, rows) in spans {
            let (block, inverse) = arena.rows(start, rows);
            // The 8-bit copy moved with the rows: each row's bounds hold its own cosine.
            let normalised = normalised_rows(block, inverse, dim);
            for (i, row) in normalised.chunks_exact(dim).enumerate() {
                let query = metric::QuantizedQuery::new(row);
                let (low, high) = quantized.bounds(&query, start + i, dim);
                let own = metric::dot(row, &block[i * dim..(i + 1) * dim]) * inverse[i];
                assert!(low <= own && own <= high, "{low} {own} {high}");
            }
            blocks.insert(doc.as_u64(), block.to_vec());
        }
        assert_eq!(blocks, model);
    }

    #[test]
    fn scope_rules() {
        let global = Document::Rule(Rule::new("g", "c", "a"));
        let scenario = Document::Rule(Rule::new("s", "c", "a").with_scope(Scope::scenario("s1")));
        let step = Document::Rule(Rule::new("t", "c", "a").with_scope(Scope::step("s1", "t1")));
        let mut f = filter(Kind::Rule);
        assert!(f.matches(&global) && !f.matches(&scenario) && !f.matches(&step));
        f.scenario = Some("s1");
        assert!(f.matches(&global) && f.matches(&scenario) && !f.matches(&step));
        f.step = Some("t1");
        assert!(f.matches(&global) && f.matches(&scenario) && f.matches(&step));
        f.scenario = Some("s2");
        assert!(f.matches(&global) && !f.matches(&scenario) && !f.matches(&step));
    }

    #[test]
    fn agents_tenants_enabled_tags() {
        let any_agent = Document::Rule(Rule::new("a", "c", "a"));
        let bot = Document::Rule(
            Rule::new("b", "c", "a")
                .with_agent("bot")
                .with_tags(["vip"]),
        );
        let disabled = Document::Rule(Rule::new("d", "c", "a").with_enabled(false));
        let other_tenant = Document::Rule(Rule::new("o", "c", "a").with_tenant("acme"));
        let mut f = filter(Kind::Rule);
        assert!(f.matches(&any_agent) && f.matches(&bot));
        assert!(!f.matches(&disabled) && !f.matches(&other_tenant));
        f.agent = Some("other");
        assert!(f.matches(&any_agent) && !f.matches(&bot));
        f.agent = Some("bot");
        assert!(f.matches(&bot));
        let tags = ["vip".to_string()];
        f.tags = &tags;
        assert!(f.matches(&bot) && !f.matches(&any_agent));
    }

    #[test]
    fn chunk_filters() {
        let chunk = Document::Chunk(
            Chunk::new("c", "x")
                .with_context("u1")
                .with_metadata("source", "chat")
                .with_metadata("turn", 3)
                .with_expires_at(Timestamp::from_unix_millis(1_000)),
        );
        let mut f = filter(Kind::Chunk);
        assert!(f.matches(&chunk));
        f.context = Some("u2");
        assert!(!f.matches(&chunk));
        f.context = Some("u1");
        let meta = [
            ("source".to_string(), "chat".to_string()),
            ("turn".to_string(), "3".to_string()),
        ];
        f.metadata = &meta;
        assert!(f.matches(&chunk));
        let wrong = [("source".to_string(), "mail".to_string())];
        f.metadata = &wrong;
        assert!(!f.matches(&chunk));
        f.metadata = &[];
        f.now = Timestamp::from_unix_millis(1_000);
        assert!(!f.matches(&chunk), "expired chunks never match");
        assert!(!filter(Kind::Rule).matches(&chunk));
    }
}
