//! The engine's state: the [`Engine`] handle, what it holds ([`Inner`]), what waits for
//! the next commit, the background worker's signal, the counters, and the reads that need
//! nothing but that state.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::JoinHandle;

use crate::config::Config;
use crate::embed::{Embedder, Embedders};
use crate::local::LocalIndex;
use crate::local::store::StoredVectors;
use crate::model::doc::Document;
use crate::{Kind, Result};

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
/// waits for the first ([`EngineBuilder::with_wait`](crate::EngineBuilder::with_wait)) or fails with
/// [`ErrorKind::Locked`](crate::ErrorKind::Locked).
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
/// let inside = engine.search(&SearchRequest::rules("I want a refund").with_scenario("returns"))?;
/// assert_eq!(inside.hits[0].id, "refund");
/// # Ok::<(), ruchedb::Error>(())
/// ```
///
/// An engine is a [`Reader`] that can also write: every read (`search`, `turn`, `get`,
/// `stats`, …) is a [`Reader`] method an engine has through `Deref`.
pub struct Engine {
    pub(crate) reader: Reader,
    pub(crate) worker: Option<JoinHandle<()>>,
    /// Reads the published files after a writer's open ([`publish::spawn_verifier`]).
    pub(crate) verifier: Option<JoinHandle<()>>,
}

/// An index opened to read what its writer published
/// ([`EngineBuilder::open_read_only`](crate::EngineBuilder::open_read_only)), or the
/// reading half of an [`Engine`].
///
/// A reader has no write method: writing through one does not compile.
///
/// ```compile_fail,E0599
/// # fn main() -> Result<(), ruchedb::Error> {
/// let reader = ruchedb::Engine::builder().open_read_only("index")?;
/// reader.upsert_chunks([ruchedb::Chunk::new("n1", "a note")])?; // no such method
/// # Ok(()) }
/// ```
///
/// It takes no lock and writes nothing: any number of readers, in any processes, read
/// beside the one writer, each the commit it opened or last
/// [refreshed](Reader::refresh) to.
pub struct Reader {
    pub(crate) inner: Arc<Inner>,
}

impl std::ops::Deref for Engine {
    type Target = Reader;

    fn deref(&self) -> &Reader {
        &self.reader
    }
}

pub(crate) struct Inner {
    pub(crate) dir: PathBuf,
    pub(crate) config: Config,
    /// The store, the text and vector indexes and the catalog.
    pub(crate) local: LocalIndex,
    /// The embedder of each kind (none for a kind of external vectors, or BM25 only).
    pub(crate) embedders: RwLock<Embedders>,
    /// An index created without a word about its embedder uses the bundled model, unless
    /// its first documents carry their own vectors; `true` until its first write decides.
    pub(crate) undecided: Mutex<bool>,
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
    /// The index's lock (a writer's; a reader takes none).
    pub(crate) _lock_file: Option<File>,
    pub(crate) _temp_dir: Option<tempfile::TempDir>,
}

#[derive(Default)]
pub(crate) struct Pending {
    pub(crate) ops: Vec<PendingOp>,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenMode {
    Create,
    Open,
    OpenOrCreate,
}

pub(crate) const STORE_DIR: &str = "store";

pub(crate) const TEXT_DIR: &str = "text";

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("dir", &self.inner.dir)
            .finish()
    }
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("dir", &self.inner.dir)
            .finish()
    }
}

impl WorkerSignal {
    /// A worker that has work from the start: loading the graph checkpoints.
    pub(crate) fn starting() -> WorkerSignal {
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
    pub(crate) fn request_stop(&self) {
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

/// A buffered write.
#[derive(Debug)]
pub(crate) enum PendingOp {
    /// Insert or replace a document (its embedding fields are empty: vectors travel in
    /// `vectors`).
    Upsert {
        doc: Box<Document>,
        vectors: StoredVectors,
    },
    /// Remove a document if it exists.
    Delete {
        kind: Kind,
        tenant: String,
        id: String,
    },
}

impl Reader {
    /// Whether this engine was opened read-only ([`EngineBuilder::open_read_only`](crate::EngineBuilder::open_read_only)).
    pub fn is_read_only(&self) -> bool {
        self.inner.local.store.is_read_only()
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
        let Some(doc) = self.inner.local.snapshot().lookup(kind, tenant, id) else {
            return Ok(None);
        };
        match self.inner.local.store.doc(doc)? {
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
            .local
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
        self.inner.local.snapshot().tenant_count(kind, tenant)
    }
}
