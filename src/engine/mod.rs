//! [`Engine`]: open an index directory, write documents, search them; and the reports
//! of its maintenance ([`CheckReport`], [`RepairReport`]) and statistics.
//!
//! The engine ties the local stores together. sled (the index directory's
//! `store/`) is the source of truth; the tantivy index (`text/`) and the HNSW graphs
//! (`vector/`) are derived from it, caught up
//! from the change log when they are behind and rebuilt when they are missing. The
//! in-memory catalog holds the live documents that filters check.

mod beside;
mod builder;
mod check;
mod compact;
mod embedders;
mod feedback;
mod maintain;
mod manifest;
mod publish;
mod reembed;
mod search;
mod swap;
mod write;

pub use self::write::{VectorRows, document_vectors};

#[cfg(test)]
mod tests;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread::JoinHandle;

use serde::Serialize;

use crate::config::Config;
use crate::embed::{Embedder, Embedders};
use crate::local::catalog::Catalog;
use crate::local::store::Store;
use crate::local::store::view::{self, ViewList};
use crate::local::text::TextIndex;
use crate::local::vector::VectorIndex;
use crate::model::doc::Document;
use crate::{Error, ErrorKind, Kind, Result};

pub use self::builder::EngineBuilder;
pub use self::check::{CheckReport, Damage, RepairReport};

/// An open index: rules and chunks on disk, searchable by text and vector.
///
/// # Threading
///
/// `Engine` is `Send + Sync`: share one per process between threads (in an `Arc`).
/// Searches run concurrently with each other and with writes; each sees one committed
/// state (the catalog and the text reader switch together at a commit). Writes
/// (`upsert_*`, `delete*`) are buffered until [`Engine::commit`], which makes them
/// durable and visible at once; commits are serialised. One background thread builds
/// the HNSW graph. A second `Engine` on the same directory, in this process or another,
/// waits for the first ([`EngineBuilder::wait`]) or fails with
/// [`ErrorKind::Locked`].
///
/// Dropping an engine stops its background graph builder and stores a graph checkpoint;
/// [`Engine::close`] does the same and also finishes the graph first, reporting errors.
///
/// # Example
///
/// ```
/// use ruchedb::{Engine, Rule, Scope, SearchRequest};
///
/// let engine = Engine::builder().temporary()?;
/// engine.upsert_rules([
///     Rule::new("greet", "the conversation starts", "greet the customer by name"),
///     Rule::new("refund", "the customer wants a refund", "check the order, then refund")
///         .with_scope(Scope::scenario("returns"))
///         .with_priority(80),
/// ])?;
/// engine.commit()?;
///
/// // Scenario rules apply only while their scenario is active.
/// let outside = engine.search(&SearchRequest::rules("I want a refund"))?;
/// assert!(outside.hits.iter().all(|hit| hit.id != "refund"));
/// let inside = engine.search(&SearchRequest::rules("I want a refund").scenario("returns"))?;
/// assert_eq!(inside.hits[0].id, "refund");
/// # Ok::<(), ruchedb::Error>(())
/// ```
pub struct Engine {
    inner: Arc<Inner>,
    worker: Option<JoinHandle<()>>,
    /// Reads the published files after a writer's open ([`publish::spawn_verifier`]).
    verifier: Option<JoinHandle<()>>,
}

pub(crate) struct Inner {
    pub(crate) dir: PathBuf,
    pub(crate) config: Config,
    pub(crate) store: Store,
    pub(crate) text: TextIndex,
    pub(crate) vectors: VectorIndex,
    pub(crate) catalog: RwLock<Catalog>,
    /// The embedder of each kind (none for a kind of external vectors, or BM25 only).
    embedders: RwLock<Embedders>,
    /// An index created without a word about its embedder uses the bundled model, unless
    /// its first documents carry their own vectors; `true` until its first write decides.
    undecided: Mutex<bool>,
    /// Writes waiting for the next commit, and the vector space they may fix.
    pub(crate) pending: Mutex<Pending>,
    /// Held for the whole of a commit, so commits are serialised.
    pub(crate) commit_lock: Mutex<()>,
    pub(crate) counters: Counters,
    pub(crate) worker: WorkerSignal,
    /// The key that signs query ids.
    pub(crate) id_key: [u8; 32],
    /// The feedback windows, by tenant: one tenant's feedback never weighs another's
    /// searches.
    pub(crate) feedback: Mutex<std::collections::HashMap<String, crate::feedback::FeedbackWindow>>,
    /// The files published for readers (a writer's, to extend; a reader's, as read).
    pub(crate) view: Mutex<Option<ViewList>>,
    /// Why the text index could not be read (a reader's, when it is damaged): every
    /// search fails with it, while documents are read from the published files.
    pub(crate) text_damaged: Option<String>,
    /// The index's lock (a writer's; a reader takes none).
    _lock_file: Option<File>,
    _temp_dir: Option<tempfile::TempDir>,
}

#[derive(Default)]
pub(crate) struct Pending {
    pub(crate) ops: Vec<write::PendingOp>,
    /// The dimension of the first vectors written of each kind that has none yet.
    pub(crate) dimensions: [Option<usize>; Kind::COUNT],
}

/// Wakes the background graph builder.
pub(crate) struct WorkerSignal {
    pub(crate) state: Mutex<WorkerState>,
    pub(crate) wake: Condvar,
    pub(crate) idle: Condvar,
    pub(crate) stop: AtomicBool,
    /// Set once the graph checkpoints have been loaded (or found missing) at open.
    pub(crate) loaded: Mutex<bool>,
    pub(crate) loaded_cv: Condvar,
}

pub(crate) struct WorkerState {
    /// Set when there may be work; cleared by the worker when it starts a round.
    pub(crate) work: bool,
    /// Set while the worker is in a round.
    pub(crate) busy: bool,
}

/// Monotonic counters of what the engine did (exposed in [`Stats`]).
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) graph_checkpoint_loads: AtomicU64,
    pub(crate) graph_rebuilds: AtomicU64,
    pub(crate) graph_vectors_inserted: AtomicU64,
    pub(crate) graph_checkpoints: AtomicU64,
    pub(crate) text_rebuilds: AtomicU64,
    pub(crate) text_replayed: AtomicU64,
    pub(crate) embedded_texts: AtomicU64,
    pub(crate) embedding_cache_hits: AtomicU64,
}

/// Counts and state of an index, as [`Engine::stats`] reports them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Stats {
    /// Live rules.
    pub rules: usize,
    /// Live chunks.
    pub chunks: usize,
    /// Live scenarios.
    pub scenarios: usize,
    /// Live tools.
    pub tools: usize,
    /// Distinct tenants.
    pub tenants: usize,
    /// Distinct entities in the entity graph (per kind and tenant), documents' own ids
    /// included.
    pub entities: usize,
    /// The vector dimension, once known, when every kind has the same.
    pub dimensions: Option<usize>,
    /// The model that makes the vectors (`external` when records bring their own), or
    /// each kind's (`rules=MODEL@DIM,...`) when they differ.
    pub model_id: Option<String>,
    /// The embedders the index loads at open (an [`EmbedderSpecs`](crate::EmbedderSpecs)
    /// string), if recorded.
    pub embedder: Option<String>,
    /// Each kind's vector space.
    pub spaces: KindSpaces,
    /// The sequence number of the last committed change.
    pub last_seq: u64,
    /// Documents in the text index.
    pub text_docs: u64,
    /// Segments of the text index.
    pub text_segments: usize,
    /// The rule graph.
    pub rule_graph: GraphStats,
    /// The chunk graph.
    pub chunk_graph: GraphStats,
    /// The scenario graph.
    pub scenario_graph: GraphStats,
    /// The tool graph.
    pub tool_graph: GraphStats,
    /// Bytes sled uses on disk.
    pub store_bytes: u64,
    /// What the engine did since it was opened.
    pub counters: CounterStats,
}

/// One kind's vector space, once known (part of [`Stats`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct KindSpace {
    /// The dimension of its vectors.
    pub dimensions: Option<usize>,
    /// The model that makes them (`external`: the documents bring their own).
    pub model_id: Option<String>,
}

/// Each kind's vector space (part of [`Stats`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct KindSpaces {
    /// Rules'.
    pub rules: KindSpace,
    /// Chunks'.
    pub chunks: KindSpace,
    /// Scenarios'.
    pub scenarios: KindSpace,
    /// Tools'.
    pub tools: KindSpace,
}

impl KindSpaces {
    /// The space of `kind`.
    pub fn get(&self, kind: Kind) -> &KindSpace {
        match kind {
            Kind::Rule => &self.rules,
            Kind::Chunk => &self.chunks,
            Kind::Scenario => &self.scenarios,
            Kind::Tool => &self.tools,
        }
    }
}

/// The state of one HNSW graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct GraphStats {
    /// Entries in the graph, dead ones included.
    pub points: usize,
    /// Live vectors of the kind.
    pub live_vectors: usize,
    /// Every upsert up to this sequence number is in the graph.
    pub covered_seq: u64,
    /// The sequence number the stored checkpoint covers.
    pub checkpoint_seq: u64,
    /// Live documents not yet in the graph (scanned exactly).
    pub tail_docs: usize,
}

/// What the engine did since it was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CounterStats {
    /// Graphs loaded from a checkpoint at open.
    pub graph_checkpoint_loads: u64,
    /// Graphs rebuilt from scratch (to drop dead entries, or after a lost checkpoint).
    pub graph_rebuilds: u64,
    /// Vectors inserted into graphs.
    pub graph_vectors_inserted: u64,
    /// Graph checkpoints stored.
    pub graph_checkpoints: u64,
    /// Text indexes rebuilt from the store (missing or corrupt at open).
    pub text_rebuilds: u64,
    /// Change-log entries replayed into the text index at open.
    pub text_replayed: u64,
    /// Texts embedded by the embedder.
    pub embedded_texts: u64,
    /// Texts whose embedding came from the embedding cache.
    pub embedding_cache_hits: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenMode {
    Create,
    Open,
    OpenOrCreate,
}

const STORE_DIR: &str = "store";
const TEXT_DIR: &str = "text";
const LOCK_FILE: &str = "LOCK";

impl Engine {
    /// Starts configuring an engine.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }

    fn open_dir(
        builder: EngineBuilder,
        dir: &Path,
        mode: OpenMode,
        temp_dir: Option<tempfile::TempDir>,
    ) -> Result<Engine> {
        builder.config.validate()?;
        let store_dir = dir.join(STORE_DIR);
        // In a directory that holds an index (or a swap of one under way), the lock
        // comes first: a repair, reembed, compaction or backup stopped half-way is
        // finished (or its scratch removed) before anything is read.
        let holds_index = [
            STORE_DIR,
            swap::SCRATCH_DIR,
            manifest::MANIFEST_FILE,
            LOCK_FILE,
        ]
        .iter()
        .any(|name| std::fs::symlink_metadata(dir.join(name)).is_ok());
        let mut lock_file = None;
        if holds_index {
            lock_file = Some(take_lock(&builder, dir)?);
            swap::recover(dir)?;
            maintain::remove_scratch(dir);
        }
        let exists = store_dir.exists();
        let create = match (mode, exists) {
            (OpenMode::Create, true) => {
                return Err(Error::new(ErrorKind::IndexExists {
                    path: dir.to_path_buf(),
                }));
            }
            (OpenMode::Open, false) => {
                return Err(Error::new(ErrorKind::IndexNotFound {
                    path: dir.to_path_buf(),
                }));
            }
            (OpenMode::Create, false) | (OpenMode::OpenOrCreate, false) => true,
            (_, true) => false,
        };
        if create && !is_empty_or_missing(dir)? {
            return Err(Error::new(ErrorKind::NotAnIndex {
                path: dir.to_path_buf(),
            }));
        }
        let asks = embedders::Asks::of(&builder)?;
        if create {
            std::fs::create_dir_all(dir)?;
        }
        let lock_file = match lock_file {
            Some(lock_file) => lock_file,
            None => take_lock(&builder, dir)?,
        };
        let phase = std::time::Instant::now();
        let store = Store::open(&store_dir, create, builder.cache_bytes)?;
        // A first import killed before its store recorded anything left a blank store:
        // an empty index, made now.
        let create = create || store.was_blank();
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "store opened"
        );
        let created = create
            .then(|| embedders::create(&asks, &store))
            .transpose()?;
        let Opened {
            embedders,
            undecided,
            catalog,
            derived,
            ..
        } = load_with_embedders(&store, &asks, created)?;

        // The store must hold at least what the manifest says was committed: sled drops
        // what it cannot read, so a damaged store can open with less and no error.
        let found = manifest_of(&store, &catalog);
        let recorded = manifest::read_with_view(dir)?;
        if let Some((recorded, _)) = &recorded {
            manifest::verify(recorded, &found)?;
        }
        // After the check above: a damaged store is not written to.
        if !derived.is_empty() {
            // Written before the store kept entity lists, or dropped by a repair.
            store.add_entity_lists(&derived)?;
            tracing::info!(documents = derived.len(), "entity lists stored");
        }
        // Indexes made before query ids were signed get their key.
        let id_key = store.id_key()?;
        let feedback = feedback_windows(&store)?;
        let counters = Counters::default();
        let phase = std::time::Instant::now();
        // Readers open the text commit the manifest names: its files are kept until
        // another is published, through the catch-up or rebuild below too.
        let protected = crate::local::text::Protected::default();
        if let Some(meta) = recorded
            .as_ref()
            .and_then(|(_, view)| view.as_ref())
            .and_then(|view| view.text.as_deref())
        {
            match TextIndex::snapshot_files(&dir.join(TEXT_DIR), meta) {
                Ok(files) => {
                    protected.set(files);
                }
                // Gone or damaged: the text index is rebuilt below.
                Err(err) => {
                    tracing::debug!(error = %err, "the published text commit is unreadable")
                }
            }
        }
        let text = maintain::open_text(
            &dir.join(TEXT_DIR),
            &store,
            &catalog,
            &counters,
            create,
            builder.config.fusion.patterns_in_text,
            &protected,
        )?;
        let mut catalog = catalog;
        search::start_helper_for(&catalog);
        maintain::fill_tokens(&text, &mut catalog)?;
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "text index opened"
        );
        // What readers open: kept when it is this state's, whole and intact; published
        // again otherwise (an index of an earlier version, whose base readers could not
        // map, a crash between a commit and its publish, a damaged or missing file).
        // After the text index is caught up, so that a reader finds the text index of
        // the manifest's commit.
        let phase = std::time::Instant::now();
        let recorded_view = recorded.as_ref().and_then(|(_, view)| view.clone());
        let view = match recorded_view {
            Some(view)
                if view.seq == found.seq
                    && view.base.as_ref().is_some_and(|base| base.mapped)
                    // A base published while some entity lists were derived would not
                    // match the store, which keeps them now.
                    && derived.is_empty()
                    && publish::present(dir, &view) =>
            {
                view
            }
            stale => {
                // Its graph checkpoints stay valid (a graph covers a prefix of the
                // changes; the documents after it are scanned exactly).
                let present = |graphs: &[Option<view::ViewGraph>]| -> Vec<Option<view::ViewGraph>> {
                    graphs
                        .iter()
                        .map(|graph| {
                            graph.clone().filter(|graph| {
                                std::iter::once(&graph.manifest)
                                    .chain(&graph.files)
                                    .all(|file| publish::file_present(dir, file))
                            })
                        })
                        .collect()
                };
                let mut list = ViewList {
                    next_file: view::next_free_number(dir)
                        .max(stale.as_ref().map_or(0, |list| list.next_file)),
                    graphs: stale
                        .as_ref()
                        .map(|list| present(&list.graphs))
                        .unwrap_or_default(),
                    retired_graphs: stale
                        .as_ref()
                        .map(|list| present(&list.retired_graphs))
                        .unwrap_or_default(),
                    ..ViewList::default()
                };
                let tokens = |doc| catalog.get(doc).map_or([0, 0], |entry| entry.tokens);
                publish::publish_base(dir, &store, &mut list, &tokens)?;
                list
            }
        };
        let mut view = view;
        view.text = text_snapshot(&text, dir, view.seq);
        if recorded.as_ref() != Some(&(found, Some(view.clone()))) {
            manifest::write(dir, &found, Some(&view))?;
        }
        protect_snapshot(&text, dir, &view);
        view::remove_unlisted(dir, &view);
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "published view checked"
        );
        // The graphs load from their checkpoints in the background worker: until then,
        // the vector leg scans exactly what they do not cover (everything, at first).
        let vectors = VectorIndex::new(builder.config.vector.params());

        let inner = Arc::new(Inner {
            dir: dir.to_path_buf(),
            config: builder.config,
            store,
            text,
            vectors,
            catalog: RwLock::new(catalog),
            embedders: RwLock::new(embedders),
            undecided: Mutex::new(undecided),
            pending: Mutex::new(Pending::default()),
            commit_lock: Mutex::new(()),
            counters,
            worker: WorkerSignal::starting(),
            id_key,
            feedback: Mutex::new(feedback),
            view: Mutex::new(Some(view)),
            text_damaged: None,
            _lock_file: Some(lock_file),
            _temp_dir: temp_dir,
        });
        let worker = maintain::spawn_worker(Arc::clone(&inner))?;
        let verifier = publish::spawn_verifier(&inner)?;
        Ok(Engine {
            inner,
            worker: Some(worker),
            verifier,
        })
    }

    /// Opens `dir` to read what its writer published ([`EngineBuilder::open_read_only`]).
    fn open_reader(builder: EngineBuilder, dir: &Path) -> Result<Engine> {
        builder.config.validate()?;
        let phase = std::time::Instant::now();
        let patterns_in_text = builder.config.fusion.patterns_in_text;
        let (store, text, text_damaged) = read_published(dir, patterns_in_text)?;
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "published view read"
        );
        let asks = embedders::Asks::of(&builder)?;
        let phase = std::time::Instant::now();
        // The published graphs are read and decoded while the catalog is built.
        let (opened, graphs) = std::thread::scope(|scope| {
            let graphs = scope.spawn(|| maintain::read_published_graphs(&store));
            let opened = load_with_embedders(&store, &asks, None);
            let graphs = graphs
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (opened, graphs)
        });
        let Opened {
            embedders,
            mut catalog,
            untokened,
            ..
        } = opened?;
        search::start_helper_for(&catalog);
        // The catalog holds what searches need: the documents stay in their files.
        store.release_published();
        maintain::fill_tokens_of(&text, &mut catalog, untokened.as_deref())?;
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            docs = catalog.len(),
            "catalog loaded"
        );
        let meta = store.meta();
        let id_key = meta
            .id_key
            .ok_or_else(|| Error::corrupt("the published view has no query id key"))?;
        let feedback = feedback_windows(&store)?;
        let list = store.published_list();
        let inner = Arc::new(Inner {
            dir: dir.to_path_buf(),
            vectors: VectorIndex::new(builder.config.vector.params()),
            config: builder.config,
            store,
            text,
            catalog: RwLock::new(catalog),
            embedders: RwLock::new(embedders),
            undecided: Mutex::new(false),
            pending: Mutex::new(Pending::default()),
            commit_lock: Mutex::new(()),
            counters: Counters::default(),
            worker: WorkerSignal::starting(),
            id_key,
            feedback: Mutex::new(feedback),
            view: Mutex::new(list),
            text_damaged,
            _lock_file: None,
            _temp_dir: None,
        });
        maintain::install_published_graphs(&inner, graphs);
        // Nothing read from the mapped base is used before its checksum is known.
        if let Some(view) = inner.store.published_view() {
            view.verified()?;
        }
        maintain::spawn_loader(&inner)?;
        Ok(Engine {
            inner,
            worker: None,
            verifier: None,
        })
    }

    /// Whether this engine was opened read-only ([`EngineBuilder::open_read_only`]).
    pub fn is_read_only(&self) -> bool {
        self.inner.store.is_read_only()
    }

    /// Moves a reader to the last state its writer published; returns whether there
    /// was a newer one. A writer always sees its own commits: `Ok(false)`.
    ///
    /// # Errors
    ///
    /// As [`EngineBuilder::open_read_only`]; on error the engine keeps the state it had.
    pub fn refresh(&mut self) -> Result<bool> {
        if !self.is_read_only() {
            return Ok(false);
        }
        let current = self
            .inner
            .view
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let latest = manifest::read_with_view(&swap::Layout::of(&self.inner.dir).manifest)?
            .and_then(|(_, view)| view);
        if latest.is_none() || latest == current {
            return Ok(false);
        }
        let builder = EngineBuilder::default()
            .config(self.inner.config.clone())
            .embedders_of(self.inner.embedders());
        *self = Engine::open_reader(builder, &self.inner.dir.clone())?;
        Ok(true)
    }

    /// The index directory.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// The configuration in use.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The embedder of each kind.
    pub fn embedders(&self) -> Embedders {
        self.inner.embedders()
    }

    /// The embedder of `kind`, if it has one.
    pub fn embedder(&self, kind: Kind) -> Option<Arc<dyn Embedder>> {
        self.inner.embedder(kind)
    }

    /// The current version of a document, with the vectors the caller supplied.
    ///
    /// # Errors
    ///
    /// Storage errors.
    pub fn get(&self, kind: Kind, tenant: &str, id: &str) -> Result<Option<Document>> {
        let Some(doc) = self.inner.read_catalog().lookup(kind, tenant, id) else {
            return Ok(None);
        };
        match self.inner.store.doc(doc)? {
            Some((record, vectors)) => record.to_document(vectors.as_ref()).map(Some),
            None => Ok(None),
        }
    }

    /// Every committed document of `kind` (of one tenant, or all), ordered by tenant and
    /// then id, with the vectors the caller supplied: what `ruche export` writes.
    ///
    /// # Errors
    ///
    /// Storage errors (the whole store is read before the first document is returned).
    pub fn export(&self, kind: Kind, tenant: Option<&str>) -> Result<Vec<Document>> {
        let mut docs: Vec<Document> = self
            .inner
            .store
            .read_all()?
            .into_iter()
            .filter(|(_, record, _)| record.kind() == kind)
            .map(|(_, record, vectors)| record.to_document(vectors.as_ref()))
            .filter(|doc| {
                doc.as_ref()
                    .map_or(true, |doc| tenant.is_none_or(|t| doc.tenant_id() == t))
            })
            .collect::<Result<_>>()?;
        docs.sort_by(|a, b| (a.tenant_id(), a.id()).cmp(&(b.tenant_id(), b.id())));
        Ok(docs)
    }

    /// The number of live documents of `kind` of one tenant.
    pub fn tenant_count(&self, tenant: &str, kind: Kind) -> usize {
        self.inner.read_catalog().tenant_count(kind, tenant)
    }

    /// The number of live rules and chunks of one tenant: what that tenant may know of
    /// the index (nothing of the others).
    pub fn tenant_counts(&self, tenant: &str) -> (usize, usize) {
        let catalog = self.inner.read_catalog();
        (
            catalog.tenant_count(Kind::Rule, tenant),
            catalog.tenant_count(Kind::Chunk, tenant),
        )
    }

    /// Counts and state of the index.
    pub fn stats(&self) -> Stats {
        let inner = &self.inner;
        // The graphs load from their checkpoints in the background after open: report
        // them once loaded, not as empty.
        inner.worker.wait_loaded();
        let meta = inner.store.meta();
        let catalog = inner.read_catalog();
        let graph_stats = |kind: Kind| {
            let covered = inner.vectors.covered(kind);
            GraphStats {
                points: inner.vectors.points(kind),
                live_vectors: catalog.n_vectors(kind),
                covered_seq: covered,
                checkpoint_seq: inner.vectors.checkpointed(kind),
                tail_docs: catalog.vectors_after(kind, covered).count(),
            }
        };
        let c = &inner.counters;
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        Stats {
            rules: catalog.count(Kind::Rule),
            chunks: catalog.count(Kind::Chunk),
            scenarios: catalog.count(Kind::Scenario),
            tools: catalog.count(Kind::Tool),
            tenants: catalog.tenants(),
            entities: catalog.graph.size().1,
            dimensions: meta.dimensions,
            model_id: meta.model_id.clone(),
            embedder: meta.embedder.clone(),
            spaces: {
                let space = |kind: Kind| {
                    let space = meta.space(kind);
                    KindSpace {
                        dimensions: space.as_ref().map(|s| s.dimensions),
                        model_id: space.map(|s| s.model_id),
                    }
                };
                KindSpaces {
                    rules: space(Kind::Rule),
                    chunks: space(Kind::Chunk),
                    scenarios: space(Kind::Scenario),
                    tools: space(Kind::Tool),
                }
            },
            last_seq: meta.last_seq,
            text_docs: inner.text.num_docs(),
            text_segments: inner.text.segment_count(),
            rule_graph: graph_stats(Kind::Rule),
            chunk_graph: graph_stats(Kind::Chunk),
            scenario_graph: graph_stats(Kind::Scenario),
            tool_graph: graph_stats(Kind::Tool),
            store_bytes: inner.store.size_on_disk(),
            counters: CounterStats {
                graph_checkpoint_loads: load(&c.graph_checkpoint_loads),
                graph_rebuilds: load(&c.graph_rebuilds),
                graph_vectors_inserted: load(&c.graph_vectors_inserted),
                graph_checkpoints: load(&c.graph_checkpoints),
                text_rebuilds: load(&c.text_rebuilds),
                text_replayed: load(&c.text_replayed),
                embedded_texts: load(&c.embedded_texts),
                embedding_cache_hits: load(&c.embedding_cache_hits),
            },
        }
    }

    /// The committed vectors not in a graph yet: what the background worker has left
    /// to insert (searches scan them exactly meanwhile). Waits for the graph checkpoints
    /// to load at open. A progress display polls this while [`Engine::sync_graph`] runs.
    pub fn graph_backlog(&self) -> usize {
        let inner = &self.inner;
        inner.worker.wait_loaded();
        let catalog = inner.read_catalog();
        Kind::ALL
            .into_iter()
            .map(|kind| catalog.n_vectors_after(kind, inner.vectors.covered(kind)))
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
        maintain::checkpoint_all(&self.inner, true)
    }

    /// Finishes the graphs, stores their checkpoints, flushes and closes the index.
    ///
    /// # Errors
    ///
    /// Storage errors; the index stays consistent (what was committed is kept).
    pub fn close(mut self) -> Result<()> {
        if self.is_read_only() {
            return Ok(());
        }
        if let Some(verifier) = self.verifier.take() {
            // It has published again whatever was damaged when it returns.
            let _ = verifier.join();
        }
        self.inner.wait_for_worker();
        self.stop_worker();
        maintain::checkpoint_all(&self.inner, true)?;
        self.inner.store.flush()?;
        self.close_store()
    }

    /// Closes the store now when nothing else holds the engine, so that a failure of
    /// its last sync is this call's error rather than a log line at the last drop.
    fn close_store(&mut self) -> Result<()> {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.store.close(),
            None => Ok(()),
        }
    }

    /// Flushes and closes the index without finishing its graphs (a copy whose graphs
    /// its next open for writing builds).
    pub(crate) fn close_without_graphs(mut self) -> Result<()> {
        if self.is_read_only() {
            return Ok(());
        }
        if let Some(verifier) = self.verifier.take() {
            let _ = verifier.join();
        }
        self.stop_worker();
        self.inner.store.flush()?;
        self.close_store()
    }

    fn stop_worker(&mut self) {
        self.inner.worker.request_stop();
        if let Some(worker) = self.worker.take() {
            // A panicking worker has already reported itself; the graph is derived data.
            let _ = worker.join();
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if self.worker.is_none() {
            return;
        }
        self.stop_worker();
        if let Err(err) = maintain::checkpoint_all(&self.inner, false) {
            tracing::warn!(error = %err, "could not store the graph checkpoint at close");
        }
        if let Err(err) = self.inner.store.flush() {
            tracing::warn!(error = %err, "could not flush the store at close");
        }
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("dir", &self.inner.dir)
            .finish()
    }
}

impl WorkerSignal {
    /// A worker that has work from the start: loading the graph checkpoints.
    fn starting() -> WorkerSignal {
        WorkerSignal {
            state: Mutex::new(WorkerState {
                work: true,
                busy: false,
            }),
            wake: Condvar::new(),
            idle: Condvar::new(),
            stop: AtomicBool::new(false),
            loaded: Mutex::new(false),
            loaded_cv: Condvar::new(),
        }
    }

    /// Records that the checkpoints are loaded.
    pub(crate) fn set_loaded(&self) {
        *self.loaded.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.loaded_cv.notify_all();
    }

    /// Waits until the checkpoints are loaded or the worker is stopped; `true` when
    /// loaded.
    pub(crate) fn wait_loaded_or_stopped(&self) -> bool {
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        while !*loaded && !self.stop.load(Ordering::Acquire) {
            loaded = self
                .loaded_cv
                .wait(loaded)
                .unwrap_or_else(|p| p.into_inner());
        }
        *loaded
    }

    /// Stops the worker, waking it wherever it waits.
    fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
        // Under each wait's mutex, so that no waiter misses the flag between its check
        // and its wait.
        drop(self.loaded.lock().unwrap_or_else(|p| p.into_inner()));
        self.loaded_cv.notify_all();
        drop(self.state.lock().unwrap_or_else(|p| p.into_inner()));
        self.wake.notify_all();
    }

    /// Waits until the checkpoints are loaded.
    pub(crate) fn wait_loaded(&self) {
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        while !*loaded {
            loaded = self
                .loaded_cv
                .wait(loaded)
                .unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Inner {
    /// The embedder of each kind.
    pub(crate) fn embedders(&self) -> Embedders {
        self.embedders
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
    }

    /// The embedder of `kind`, if it has one.
    pub(crate) fn embedder(&self, kind: Kind) -> Option<Arc<dyn Embedder>> {
        self.embedders
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
            .get(kind)
            .cloned()
    }

    /// Settles the embedders of an index created without one named, at its first write:
    /// documents that carry their own vectors make it an index of external vectors, any
    /// other write keeps the defaults and records them.
    pub(crate) fn settle_embedder(&self, docs: &[Document]) -> Result<()> {
        let mut undecided = self
            .undecided
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if !*undecided {
            return Ok(());
        }
        let carries_vectors = docs.iter().any(Document::has_embeddings);
        let mut embedders = self
            .embedders
            .write()
            .unwrap_or_else(|poison| poison.into_inner());
        embedders::settle(&self.store, &mut embedders, carries_vectors)?;
        *undecided = false;
        Ok(())
    }

    pub(crate) fn read_catalog(&self) -> RwLockReadGuard<'_, Catalog> {
        self.catalog
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    pub(crate) fn write_catalog(&self) -> RwLockWriteGuard<'_, Catalog> {
        self.catalog
            .write()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    pub(crate) fn wake_worker(&self) {
        let mut state = self.worker.state.lock().unwrap_or_else(|p| p.into_inner());
        state.work = true;
        self.worker.wake.notify_all();
    }

    /// Blocks until the worker has no work left.
    pub(crate) fn wait_for_worker(&self) {
        let mut state = self.worker.state.lock().unwrap_or_else(|p| p.into_inner());
        while (state.work || state.busy) && !self.worker.stop.load(Ordering::Acquire) {
            state = self
                .worker
                .idle
                .wait(state)
                .unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// Takes the index directory's lock, or fails with `Locked`.
impl Engine {
    /// Deletes the index in `dir`: the files the engine made there (in `store/`,
    /// `text/`, `view/`; `MANIFEST`, `LOCK`, its scratch directories). Anything else in
    /// `dir` (a directory of the engine's that holds a file of the user's too), and `dir`
    /// itself, are kept.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::IndexNotFound`] when `dir` holds no index,
    /// [`ErrorKind::Locked`] when it is open, and I/O errors naming the path.
    pub fn remove(dir: impl AsRef<Path>) -> Result<()> {
        let dir = dir.as_ref();
        if !swap::holds_index(dir) {
            return Err(Error::new(ErrorKind::IndexNotFound {
                path: dir.to_path_buf(),
            }));
        }
        let lock_file = lock(dir, std::time::Duration::ZERO)?;
        maintain::remove_scratch(dir);
        swap::recover(dir)?;
        // The engine's own files only: a file of the user's stays, and its directory.
        for owned in [STORE_DIR, TEXT_DIR, view::VIEW_DIR, manifest::MANIFEST_FILE] {
            swap::remove_part(&dir.join(owned), owned)?;
        }
        swap::remove_part(&dir.join("MANIFEST.tmp"), manifest::MANIFEST_FILE)?;
        drop(lock_file);
        let path = dir.join(LOCK_FILE);
        std::fs::remove_file(&path).map_err(|err| Error::io_at(&path, err))?;
        Ok(())
    }
}

/// What the store and the catalog hold now, as the manifest records it.
/// The feedback windows the store keeps, by window key.
fn feedback_windows(
    store: &Store,
) -> Result<std::collections::HashMap<String, crate::feedback::FeedbackWindow>> {
    Ok(store
        .feedback_windows()?
        .into_iter()
        .map(|(tenant, entries)| {
            (
                tenant,
                crate::feedback::FeedbackWindow::from_entries(entries),
            )
        })
        .collect())
}

/// What an open read from the store, and the embedder it loaded meanwhile.
struct Opened {
    embedders: Embedders,
    /// Whether the index is still undecided about its embedders (see `Inner::undecided`).
    undecided: bool,
    catalog: Catalog,
    /// The entity lists derived because the store did not keep them.
    derived: Vec<(crate::model::id::DocId, Vec<String>)>,
    /// The documents whose token counts are still to read (`None`: all).
    untokened: Option<Vec<crate::model::id::DocId>>,
}

/// Loads the catalog from `store`, with the embedders (`created`: those of a new index,
/// chosen already; otherwise the asked or recorded ones, [`embedders::open`]) loading on
/// a thread of their own meanwhile (the compiled-in models take tens of milliseconds: a
/// one-shot search waits for both, not for their sum).
fn load_with_embedders(
    store: &Store,
    asks: &embedders::Asks,
    created: Option<embedders::Chosen>,
) -> Result<Opened> {
    let meta = store.meta();
    let phase = std::time::Instant::now();
    let (chosen, loaded) = std::thread::scope(|scope| {
        let choosing = created
            .is_none()
            .then(|| scope.spawn(|| embedders::open(asks, &meta)));
        let loaded = maintain::load_catalog(store, false);
        let chosen = match choosing {
            Some(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            None => Ok(created.expect("a new index's embedders")),
        };
        (chosen, loaded)
    });
    let embedders::Chosen {
        embedders,
        undecided,
    } = chosen?;
    let maintain::Loaded {
        catalog,
        derived,
        untokened,
        ..
    } = loaded?;
    tracing::debug!(
        elapsed_ms = phase.elapsed().as_millis() as u64,
        docs = catalog.len(),
        "catalog loaded"
    );
    Ok(Opened {
        embedders,
        undecided,
        catalog,
        derived,
        untokened,
    })
}

/// Reads the manifest, the published files it lists and the text index, until they
/// are of one commit: a writer may publish meanwhile (a file listed is then gone: read
/// again), and commits its text index just before it publishes (the text index is then
/// one commit ahead for a moment: wait for the manifest, for at most 5 seconds while a
/// writer holds the index, then take the text index as it is: its extra versions are
/// not in the catalog, so they are never returned, but the versions that commit replaced
/// or deleted have no text leg until the next writer publishes).
///
/// A text index that cannot be read while no writer holds the index is damaged: the
/// documents are read all the same (`export`, `get`, `stats` need no text index), with
/// an empty text index in its place and the error kept, which every search returns.
fn read_published(
    dir: &Path,
    patterns_in_text: bool,
) -> Result<(Store, TextIndex, Option<String>)> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let late = std::time::Instant::now() >= deadline;
        // A new index being swapped in (repair, compact, reembed, backup): wait for the
        // writer that swaps it. A swap stopped half-way (its writer gone) is finished
        // by the next open for writing; until then the new index is read where its
        // parts are.
        while swap::pending(dir) && writer_alive(dir) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let layout = swap::Layout::of(dir);
        let Some((manifest, list)) = manifest::read_with_view(&layout.manifest)? else {
            return Err(if dir.join(STORE_DIR).exists() {
                Error::new(ErrorKind::Uncommitted {
                    path: dir.to_path_buf(),
                })
            } else {
                Error::new(ErrorKind::IndexNotFound {
                    path: dir.to_path_buf(),
                })
            });
        };
        let Some(list) = list.filter(|list| list.seq == manifest.seq && list.base.is_some()) else {
            return Err(Error::new(ErrorKind::NotPublished {
                path: dir.to_path_buf(),
            }));
        };
        let Some(published) = view::Published::load(&layout.view, &list)? else {
            if late {
                return Err(Error::corrupt(format!(
                    "{}: the published files changed faster than they could be read",
                    dir.join(view::VIEW_DIR).display()
                )));
            }
            continue;
        };
        let manifest_moved = || {
            manifest::read_with_view(&swap::Layout::of(dir).manifest)
                .ok()
                .flatten()
                .is_none_or(|(now, view)| (now, view) != (manifest, Some(list.clone())))
        };
        // The text commit the manifest names (an earlier version's manifest names none:
        // the text index's last commit then, whatever it holds).
        let text_dir = layout.text.join(TEXT_DIR);
        let opened = match &list.text {
            Some(meta) => TextIndex::open_snapshot(&text_dir, patterns_in_text, meta),
            None => last_text_commit(&text_dir)
                .and_then(|meta| TextIndex::open_snapshot(&text_dir, patterns_in_text, &meta)),
        };
        match opened {
            Ok((text, seq)) => {
                if seq != list.seq {
                    tracing::warn!(
                        text = seq,
                        published = list.seq,
                        "the text index and the published files are of different commits"
                    );
                }
                return Ok((Store::published(published), text, None));
            }
            Err(err) => {
                // A file of the commit is gone: a writer published a newer one (read
                // the manifest again), is rebuilding the text index (wait for its
                // manifest), or is swapping in a new index. Without any, the text
                // index is damaged.
                if (manifest_moved() || swap::pending(dir)) && !late {
                    continue;
                }
                if !writer_alive(dir) {
                    let damaged = format!(
                        "{}: the text index cannot be read ({err}); `ruche repair` rebuilds it",
                        text_dir.display()
                    );
                    let empty = TextIndex::empty_in_memory(patterns_in_text)?;
                    return Ok((Store::published(published), empty, Some(damaged)));
                }
                while !manifest_moved() && std::time::Instant::now() < deadline {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                if std::time::Instant::now() < deadline {
                    continue;
                }
                return Err(err);
            }
        }
    }
}

/// The text index's `meta.json` as it is now (what a reader of an earlier version's
/// manifest opens).
fn last_text_commit(text_dir: &Path) -> Result<String> {
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

/// Whether a writer holds the index in `dir`: its `LOCK` cannot be shared for a moment.
/// (A reader takes no lock: this probe lets go at once, and only runs when the text index
/// is ahead of the manifest, to tell a writer about to publish from one that died.)
fn writer_alive(dir: &Path) -> bool {
    let Ok(file) = File::open(dir.join(LOCK_FILE)) else {
        return false;
    };
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            false
        }
        Err(_) => true,
    }
}

fn manifest_of(store: &Store, catalog: &crate::local::catalog::Catalog) -> manifest::Manifest {
    manifest::Manifest {
        store_format: crate::local::store::FORMAT_VERSION,
        seq: store.meta().last_seq,
        rules: catalog.count(Kind::Rule) as u64,
        chunks: catalog.count(Kind::Chunk) as u64,
        digest: catalog.digest(),
    }
}

impl Inner {
    /// `Err(ReadOnly)` for a reader.
    pub(crate) fn writable(&self) -> Result<()> {
        if self.store.is_read_only() {
            return Err(Error::new(ErrorKind::ReadOnly));
        }
        Ok(())
    }

    /// Records the committed state in the manifest, with the published files `view`.
    pub(crate) fn write_manifest_with(&self, view: Option<&ViewList>) -> Result<()> {
        let found = manifest_of(&self.store, &self.read_catalog());
        manifest::write(&self.dir, &found, view)
    }
}

/// The index's lock: the one the builder holds, or taken now.
fn take_lock(builder: &EngineBuilder, dir: &Path) -> Result<File> {
    match &builder.held_lock {
        Some(held) => held
            .try_clone()
            .map_err(|err| Error::io_at(&dir.join(LOCK_FILE), err)),
        None => lock(dir, builder.wait),
    }
}

/// Whether `dir` is missing or an empty directory (the only places a new index goes);
/// an index's own lock file does not count.
fn is_empty_or_missing(dir: &Path) -> Result<bool> {
    match std::fs::read_dir(dir) {
        Ok(entries) => Ok(entries
            .flatten()
            .all(|entry| entry.file_name() == LOCK_FILE || entry.file_name() == swap::SCRATCH_DIR)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(err) => Err(Error::io_at(dir, err)),
    }
}

/// `path` made absolute with every symbolic link resolved, for the part of it that
/// exists (a destination about to be made is resolved through its nearest existing
/// ancestor).
fn resolved(path: &Path) -> Result<PathBuf> {
    let absolute = std::path::absolute(path).map_err(|err| Error::io_at(path, err))?;
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(mut found) => {
                for name in rest.iter().rev() {
                    found.push(name);
                }
                return Ok(found);
            }
            Err(_) => match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_os_string());
                    existing = parent;
                }
                _ => return Ok(absolute),
            },
        }
    }
}

/// How long a lock is waited for even when no wait was asked: a process the application
/// spawns holds a copy of every descriptor between its fork and its exec (flock locks
/// belong to the shared open file), so an engine just dropped can look held for a moment.
const LOCK_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

/// Takes the index's exclusive lock, waiting up to `wait` (at least [`LOCK_GRACE`]) for
/// another holder to let go.
fn lock(dir: &Path, wait: std::time::Duration) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|err| Error::io_at(&path, err))?;
    let deadline = std::time::Instant::now() + wait.max(LOCK_GRACE);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(Error::new(ErrorKind::Locked {
                    path: dir.to_path_buf(),
                }));
            }
            Err(std::fs::TryLockError::Error(err)) => return Err(Error::io_at(&path, err)),
        }
    }
}
