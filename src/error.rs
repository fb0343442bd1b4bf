//! The one error type of the crate.
//!
//! [`Error`] is opaque: callers inspect it through [`Error::kind`], which returns a
//! [`ErrorKind`] carrying structured data. Errors from the storage dependencies (sled,
//! tantivy, hnsw_rs) and from I/O are reachable only through
//! [`std::error::Error::source`], so their types never become part of our API.

use std::fmt;
use std::path::PathBuf;

/// A specialised `Result` whose error defaults to [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An error from ruche.
///
/// Use [`Error::kind`] to find out what went wrong. The underlying cause, when there is
/// one (an I/O error, a storage error), is available through `source()`.
#[non_exhaustive]
pub struct Error {
    kind: ErrorKind,
    source: Option<BoxError>,
}

/// What kind of error happened.
///
/// New variants may be added in minor releases.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An operating-system I/O error (reading input, writing the index).
    Io {
        /// The file or directory, when known.
        path: Option<PathBuf>,
    },
    /// The index directory is locked by another process or another open `Engine`.
    Locked {
        /// The index directory.
        path: PathBuf,
    },
    /// No index exists at the given path (only creation makes a new index).
    IndexNotFound {
        /// The path that was opened.
        path: PathBuf,
    },
    /// An index already exists where a new one was to be created.
    IndexExists {
        /// The path that was given to `create`.
        path: PathBuf,
    },
    /// A new index was to be created in a directory that holds other files: the engine
    /// never writes among files it does not own.
    NotAnIndex {
        /// The directory.
        path: PathBuf,
    },
    /// A write reached a store or text index opened to read. A
    /// [`Reader`](crate::Reader) has no write method, so the public API does not reach
    /// it; it guards the layers below.
    ReadOnly,
    /// A read-only open found no published view of the index: it was written by an
    /// earlier version, or its writer's last publish failed. Opening it once for
    /// writing publishes one.
    NotPublished {
        /// The index directory.
        path: PathBuf,
    },
    /// A read-only open found a store but no `MANIFEST`: nothing was committed to the
    /// index yet, or it is an incomplete copy (an import or a copy stopped before it
    /// finished). A reader never vouches for a store the manifest does not describe.
    Uncommitted {
        /// The index directory.
        path: PathBuf,
    },
    /// A commit is durable in the store, but what is derived from it (the text index,
    /// the files published for readers) could not be written (a full disk, say):
    /// readers see the commit before, and text search may miss it, until the next open
    /// for writing brings them up to date. The cause is `source()`.
    Unpublished {
        /// The index directory.
        path: PathBuf,
    },
    /// The index was written in an on-disk format this version cannot read.
    IncompatibleFormat {
        /// The format version found on disk.
        found: u32,
        /// The format version this build reads and writes.
        expected: u32,
    },
    /// Stored data could not be decoded: a truncated or corrupt file.
    Corrupt {
        /// What was being read.
        what: String,
    },
    /// An internal storage engine failed (sled, tantivy or hnsw_rs; see `source()`).
    Storage {
        /// Which store failed.
        store: &'static str,
    },
    /// A vector has another dimension than the index's.
    DimensionMismatch {
        /// The dimension the index was created with.
        expected: usize,
        /// The dimension that was given.
        got: usize,
    },
    /// A score or vector component is NaN or infinite.
    NonFiniteScore {
        /// Where the value was found.
        context: String,
    },
    /// A list that must be sorted by score descending was not.
    UnsortedScores {
        /// The first position whose score is greater than the one before it.
        index: usize,
    },
    /// A record or request is invalid (missing or malformed field, value out of range).
    InvalidInput {
        /// What is wrong, naming the field.
        message: String,
    },
    /// A configuration value is missing, unknown or out of range.
    InvalidConfig {
        /// The configuration key, dotted (`pipeline.retrieval.rule_selection.alpha`).
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// A strategy, policy, fusion method or embedder name is not known.
    UnknownName {
        /// What kind of thing was named (`strategy`, `policy`, ...).
        what: &'static str,
        /// The name that was given.
        name: String,
    },
    /// Two records of one batch have the same id.
    DuplicateId {
        /// The duplicated id.
        id: String,
    },
    /// A line of a JSONL (or TOML) input could not be read.
    Parse {
        /// The 1-based line number, when the input is line-oriented.
        line: Option<usize>,
        /// What is wrong with it.
        message: String,
    },
    /// There was nothing to choose from (for example an empty candidate list).
    EmptyCandidates,
    /// Something the caller referred to does not exist (a query id, a document).
    NotFound {
        /// What was not found.
        what: String,
    },
    /// An embedding model failed to load or run.
    Embedder {
        /// What went wrong.
        message: String,
    },
    /// A remote backend (such as Milvus) cannot be reached: down, refusing connections,
    /// or timing out. Retrying later may succeed.
    Unavailable {
        /// The backend and where, e.g. `milvus at http://127.0.0.1:19530`.
        backend: String,
        /// What the transport said.
        message: String,
    },
    /// A remote backend answered with an error (a rejected request, a missing
    /// collection, a server-side failure).
    Backend {
        /// The backend and where.
        backend: String,
        /// What the server said.
        message: String,
    },
}

impl ErrorKind {
    /// The variant's name (`InvalidInput`, `NotFound`, `Locked`, ...): stable, for
    /// bindings and protocols that report the kind as text.
    pub fn name(&self) -> &'static str {
        match self {
            ErrorKind::Io { .. } => "Io",
            ErrorKind::Locked { .. } => "Locked",
            ErrorKind::IndexNotFound { .. } => "IndexNotFound",
            ErrorKind::IndexExists { .. } => "IndexExists",
            ErrorKind::NotAnIndex { .. } => "NotAnIndex",
            ErrorKind::IncompatibleFormat { .. } => "IncompatibleFormat",
            ErrorKind::ReadOnly => "ReadOnly",
            ErrorKind::NotPublished { .. } => "NotPublished",
            ErrorKind::Uncommitted { .. } => "Uncommitted",
            ErrorKind::Unpublished { .. } => "Unpublished",
            ErrorKind::Corrupt { .. } => "Corrupt",
            ErrorKind::Storage { .. } => "Storage",
            ErrorKind::DimensionMismatch { .. } => "DimensionMismatch",
            ErrorKind::NonFiniteScore { .. } => "NonFiniteScore",
            ErrorKind::UnsortedScores { .. } => "UnsortedScores",
            ErrorKind::InvalidInput { .. } => "InvalidInput",
            ErrorKind::InvalidConfig { .. } => "InvalidConfig",
            ErrorKind::UnknownName { .. } => "UnknownName",
            ErrorKind::DuplicateId { .. } => "DuplicateId",
            ErrorKind::Parse { .. } => "Parse",
            ErrorKind::EmptyCandidates => "EmptyCandidates",
            ErrorKind::NotFound { .. } => "NotFound",
            ErrorKind::Embedder { .. } => "Embedder",
            ErrorKind::Unavailable { .. } => "Unavailable",
            ErrorKind::Backend { .. } => "Backend",
        }
    }
}

impl Error {
    /// Creates an error of the given kind without a source (for retrievers and
    /// backends outside this crate).
    pub fn new(kind: ErrorKind) -> Error {
        Error { kind, source: None }
    }

    /// Creates an error of the given kind caused by `source`.
    pub fn with_source(kind: ErrorKind, source: impl Into<BoxError>) -> Error {
        Error {
            kind,
            source: Some(source.into()),
        }
    }

    /// Shorthand for [`ErrorKind::InvalidInput`].
    pub fn invalid_input(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidInput {
            message: message.into(),
        })
    }

    /// Shorthand for [`ErrorKind::InvalidConfig`].
    pub(crate) fn invalid_config(key: impl Into<String>, message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidConfig {
            key: key.into(),
            message: message.into(),
        })
    }

    /// Shorthand for [`ErrorKind::UnknownName`].
    pub(crate) fn unknown_name(what: &'static str, name: impl Into<String>) -> Error {
        Error::new(ErrorKind::UnknownName {
            what,
            name: name.into(),
        })
    }

    /// Shorthand for [`ErrorKind::Corrupt`].
    pub(crate) fn corrupt(what: impl Into<String>) -> Error {
        Error::new(ErrorKind::Corrupt { what: what.into() })
    }

    /// Shorthand for [`ErrorKind::Storage`] with its cause.
    pub(crate) fn storage(store: &'static str, source: impl Into<BoxError>) -> Error {
        Error::with_source(ErrorKind::Storage { store }, source)
    }

    /// Returns what kind of error this is.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Io { path: None } => write!(f, "I/O error"),
            ErrorKind::Io { path: Some(path) } => write!(f, "I/O error on {}", path.display()),
            ErrorKind::Locked { path } => write!(
                f,
                "index {} is locked by another process (or another open engine)",
                path.display()
            ),
            ErrorKind::IndexNotFound { path } => {
                write!(
                    f,
                    "no index at {} (create one with `ruche index`)",
                    path.display()
                )
            }
            ErrorKind::IndexExists { path } => {
                write!(f, "an index already exists at {}", path.display())
            }
            ErrorKind::NotAnIndex { path } => write!(
                f,
                "{} is not empty and holds no index: create an index in a new or empty directory",
                path.display()
            ),
            ErrorKind::ReadOnly => write!(f, "this engine was opened read-only: it cannot write"),
            ErrorKind::NotPublished { path } => write!(
                f,
                "index {} has no published view for readers yet (written by an earlier \
                 version, or its last publish failed): open it once for writing",
                path.display()
            ),
            ErrorKind::Uncommitted { path } => write!(
                f,
                "{} holds a store but no MANIFEST: nothing was committed to it yet, or it is \
                 an incomplete copy (an import or a copy that stopped before it finished); \
                 there is nothing to read",
                path.display()
            ),
            ErrorKind::Unpublished { path } => write!(
                f,
                "the commit is durable in {}, but its text index or the files readers open \
                 could not be updated: readers see the commit before (and text search may \
                 miss it) until the next open for writing",
                path.display()
            ),
            ErrorKind::IncompatibleFormat { found, expected } => write!(
                f,
                "index format version {found} is not supported (this build reads version {expected})"
            ),
            ErrorKind::Corrupt { what } => write!(f, "corrupt index data: {what}"),
            ErrorKind::Storage { store } => write!(f, "{store} storage error"),
            ErrorKind::DimensionMismatch { expected, got } => write!(
                f,
                "vector has dimension {got}, but the index was created with dimension {expected}"
            ),
            ErrorKind::NonFiniteScore { context } => {
                write!(f, "non-finite (NaN or infinite) value in {context}")
            }
            ErrorKind::UnsortedScores { index } => write!(
                f,
                "scores must be sorted descending, but the score at index {index} is greater than the one before it"
            ),
            ErrorKind::InvalidInput { message } => write!(f, "invalid input: {message}"),
            ErrorKind::InvalidConfig { key, message } => {
                write!(f, "invalid configuration `{key}`: {message}")
            }
            ErrorKind::UnknownName { what, name } => write!(f, "unknown {what} `{name}`"),
            ErrorKind::DuplicateId { id } => write!(f, "duplicate id `{id}` in one batch"),
            ErrorKind::Parse { line, message } => match line {
                Some(line) => write!(f, "line {line}: {message}"),
                None => write!(f, "{message}"),
            },
            ErrorKind::EmptyCandidates => write!(f, "no candidates to choose from"),
            ErrorKind::NotFound { what } => write!(f, "not found: {what}"),
            ErrorKind::Embedder { message } => write!(f, "embedder error: {message}"),
            ErrorKind::Unavailable { backend, message } => {
                write!(f, "{backend} is unavailable: {message}")
            }
            ErrorKind::Backend { backend, message } => write!(f, "{backend} failed: {message}"),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The source is returned from `source()`, not printed here: callers that want the
        // whole chain print it with `{:#}` (anyhow) or walk `source()`.
        self.kind.fmt(f)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Error");
        debug.field("kind", &self.kind);
        if let Some(source) = &self.source {
            debug.field("source", source);
        }
        debug.finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|source| source.as_ref() as &(dyn std::error::Error + 'static))
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Error {
        Error::new(kind)
    }
}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Error {
        Error::with_source(ErrorKind::Io { path: None }, err)
    }
}

impl Error {
    /// An I/O error on `path`; the message names the path and the cause
    /// (`I/O error on /data/idx/LOCK: Permission denied (os error 13)`).
    pub(crate) fn io_at(path: &std::path::Path, err: std::io::Error) -> Error {
        Error::with_source(
            ErrorKind::Io {
                path: Some(path.to_path_buf()),
            },
            err,
        )
    }
}
