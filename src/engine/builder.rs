//! [`EngineBuilder`]: how an [`Engine`] is configured, created and opened.

use std::path::Path;
use std::sync::Arc;

use super::{Engine, Reader};
use crate::config::Config;
use crate::embed::{Embedder, EmbedderSpec, EmbedderSpecs, Embedders};
use crate::{Kind, Result};

/// Configures and opens an [`Engine`].
///
/// ## Defaults
///
/// - configuration: [`Config::default`] (see [`Config`] for every value);
/// - embedders: the ones the index recorded at creation, one per kind (see
///   [`EngineBuilder::with_embedder_specs`]). A new index for which none is named (here or in
///   the configuration's `[embed]`) uses the compiled-in models
///   ([`EmbedderSpecs::default`](crate::EmbedderSpecs::default): all-MiniLM-L6-v2 for
///   rules, scenarios and tools, the static model for chunks), unless the documents of
///   its first write carry their own vectors: then it keeps theirs (model id `external`)
///   and queries without a vector use the text leg alone.
///   [`EmbedderSpec::None`](crate::EmbedderSpec::None) makes a BM25-only index;
/// - sled page cache: 64 MiB.
///
/// # Example
///
/// ```
/// use ruchedb::{Engine, Rule, SearchRequest};
///
/// let engine = Engine::builder().temporary()?;
/// engine.upsert_rules([Rule::new("refund", "customer asks for a refund", "explain the policy")])?;
/// engine.commit()?;
/// let response = engine.search(&SearchRequest::rules("refund please"))?;
/// assert_eq!(response.hits[0].id, "refund");
/// # Ok::<(), ruchedb::Error>(())
/// ```
#[derive(Clone)]
#[must_use]
pub struct EngineBuilder {
    pub(crate) config: Config,
    /// Embedders given as objects, by kind (they cannot be recorded).
    pub(crate) embedders: Embedders,
    /// Embedders named, by kind (recorded in a new index).
    pub(crate) embedder_specs: [Option<EmbedderSpec>; Kind::COUNT],
    pub(crate) dimensions: Option<usize>,
    pub(crate) cache_bytes: u64,
    pub(crate) wait: std::time::Duration,
    /// The index's lock, already held by the caller (a maintenance command that keeps
    /// it across several opens).
    pub(crate) held_lock: Option<Arc<std::fs::File>>,
}

impl std::fmt::Debug for EngineBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineBuilder")
            .field("config", &self.config)
            .field("embedders", &self.embedders)
            .field("embedder_specs", &self.embedder_specs)
            .field("dimensions", &self.dimensions)
            .field("cache_bytes", &self.cache_bytes)
            .field("wait", &self.wait)
            .finish()
    }
}

impl Default for EngineBuilder {
    fn default() -> EngineBuilder {
        EngineBuilder {
            config: Config::default(),
            embedders: Embedders::default(),
            embedder_specs: Default::default(),
            dimensions: None,
            cache_bytes: 64 << 20,
            wait: std::time::Duration::ZERO,
            held_lock: None,
        }
    }
}

impl EngineBuilder {
    /// Uses this configuration.
    pub fn with_config(mut self, config: Config) -> EngineBuilder {
        self.config = config;
        self
    }

    /// Embeds records and queries of every kind that carry no vector of their own with
    /// `embedder`.
    ///
    /// An index records the model id and dimension of each kind's embedder at creation;
    /// opening it with another embedder is an error. A custom embedder cannot be recorded:
    /// pass it again at every open (or use [`EngineBuilder::with_embedder_spec`]).
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> EngineBuilder {
        self.embedders = Embedders::uniform(Some(embedder));
        self.embedder_specs = Default::default();
        self
    }

    /// Embeds the documents and queries of `kind` with `embedder` (as
    /// [`EngineBuilder::with_embedder`] does for every kind).
    pub fn with_embedder_for(mut self, kind: Kind, embedder: Arc<dyn Embedder>) -> EngineBuilder {
        self.embedders = self.embedders.with(kind, Some(embedder));
        self.embedder_specs[kind.index()] = None;
        self
    }

    /// Embeds every kind with the embedder `spec` names, and records it in a new index so
    /// that later opens load the same embedder without being told.
    ///
    /// An existing index keeps the embedders it was created with: giving another here is
    /// an error when the index is opened (re-embed the index to change models).
    pub fn with_embedder_spec(self, spec: EmbedderSpec) -> EngineBuilder {
        self.with_embedder_specs(EmbedderSpecs::uniform(spec))
    }

    /// Embeds each kind with the embedder `specs` names for it (recorded as
    /// [`EngineBuilder::with_embedder_spec`] is).
    pub fn with_embedder_specs(mut self, specs: EmbedderSpecs) -> EngineBuilder {
        for kind in Kind::ALL {
            self.embedder_specs[kind.index()] = Some(specs.get(kind).clone());
        }
        self.embedders = Embedders::default();
        self
    }

    /// Fixes the vector dimension at creation (otherwise it comes from the embedder or
    /// from the first record that carries a vector).
    pub fn with_dimensions(mut self, dimensions: usize) -> EngineBuilder {
        self.dimensions = Some(dimensions);
        self
    }

    /// The size of sled's page cache in bytes.
    pub fn with_cache_bytes(mut self, bytes: u64) -> EngineBuilder {
        self.cache_bytes = bytes;
        self
    }

    /// When another process (or engine) holds the index, waits up to `wait` for it to
    /// close instead of failing at once with
    /// [`ErrorKind::Locked`](crate::ErrorKind::Locked) (default: no wait beyond a
    /// grace of 200 ms). The lock is an operating-system file lock: it is released when
    /// its holder exits, crashed or not. The grace covers a lock that outlives its
    /// engine for a moment: a child process the application spawns shares the lock's
    /// file descriptor between its fork and its exec.
    pub fn with_wait(mut self, wait: std::time::Duration) -> EngineBuilder {
        self.wait = wait;
        self
    }

    /// Creates a new index in `dir` (created if missing) and opens it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::IndexExists`](crate::ErrorKind::IndexExists) when `dir` already
    /// holds an index; [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig);
    /// I/O errors.
    pub fn create(self, dir: impl AsRef<Path>) -> Result<Engine> {
        Engine::open_dir(self, dir.as_ref(), super::OpenMode::Create, None)
    }

    /// Opens the existing index in `dir`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::IndexNotFound`](crate::ErrorKind::IndexNotFound) when there is none
    /// (opening never creates an index); [`ErrorKind::Locked`](crate::ErrorKind::Locked)
    /// when another process has it open;
    /// [`ErrorKind::IncompatibleFormat`](crate::ErrorKind::IncompatibleFormat);
    /// [`ErrorKind::Corrupt`](crate::ErrorKind::Corrupt).
    pub fn open(self, dir: impl AsRef<Path>) -> Result<Engine> {
        Engine::open_dir(self, dir.as_ref(), super::OpenMode::Open, None)
    }

    /// Opens the existing index in `dir` whose lock the caller holds (`lock`, from
    /// `engine::lock`): the lock outlives the engine.
    pub(crate) fn open_locked(mut self, dir: &Path, lock: &Arc<std::fs::File>) -> Result<Engine> {
        self.held_lock = Some(Arc::clone(lock));
        Engine::open_dir(self, dir, super::OpenMode::Open, None)
    }

    /// The embedders to use (a reader refreshed, or an index copied, keeps its own).
    pub(crate) fn embedders_of(mut self, embedders: Embedders) -> EngineBuilder {
        self.embedders = embedders;
        self.embedder_specs = Default::default();
        self
    }

    /// Opens the index in `dir` to read only, beside any number of other readers and
    /// one writer (in this process or others).
    ///
    /// A reader takes no lock and writes nothing: it reads the files the writer
    /// published at its last commit (see `ARCHITECTURE.md`), never the writer's store,
    /// and sees that commit until [`Reader::refresh`]. Searches, `get`, `export` and
    /// `stats` work as on a writer; a [`Reader`] has no write method.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::IndexNotFound`](crate::ErrorKind::IndexNotFound);
    /// [`ErrorKind::NotPublished`](crate::ErrorKind::NotPublished) for an index written
    /// by an earlier version that no writer opened since (opening it once for writing
    /// publishes it); [`ErrorKind::Corrupt`](crate::ErrorKind::Corrupt) when a published
    /// file is damaged (`ruche repair`, or the next open for writing, publishes them
    /// again).
    ///
    /// # Example
    ///
    /// ```
    /// use ruchedb::{Chunk, Engine, SearchRequest};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("index");
    /// let writer = Engine::builder().create(&path)?;
    /// writer.upsert_chunks([Chunk::new("n1", "the parcel left the depot on Monday")])?;
    /// writer.commit()?;
    ///
    /// // Beside the writer (here in the same process; usually another one).
    /// let mut reader = Engine::builder().open_read_only(&path)?;
    /// let response = reader.search(&SearchRequest::chunks("when did the parcel leave?"))?;
    /// assert_eq!(response.hits[0].id, "n1");
    ///
    /// writer.upsert_chunks([Chunk::new("n2", "the parcel was delivered on Wednesday")])?;
    /// writer.commit()?;
    /// assert_eq!(reader.stats().chunks, 1); // the commit it opened
    /// assert!(reader.refresh()?);
    /// assert_eq!(reader.stats().chunks, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_read_only(self, dir: impl AsRef<Path>) -> Result<Reader> {
        Engine::open_reader(self, dir.as_ref())
    }

    /// Opens the index in `dir`, creating it if there is none.
    ///
    /// # Errors
    ///
    /// As [`EngineBuilder::create`] and [`EngineBuilder::open`].
    pub fn open_or_create(self, dir: impl AsRef<Path>) -> Result<Engine> {
        Engine::open_dir(self, dir.as_ref(), super::OpenMode::OpenOrCreate, None)
    }

    /// Creates an index in a new temporary directory, deleted when the engine drops.
    ///
    /// # Errors
    ///
    /// As [`EngineBuilder::create`].
    pub fn temporary(self) -> Result<Engine> {
        let dir = tempfile::Builder::new().prefix("ruche-").tempdir()?;
        let path = dir.path().to_path_buf();
        Engine::open_dir(self, &path, super::OpenMode::Create, Some(dir))
    }
}
