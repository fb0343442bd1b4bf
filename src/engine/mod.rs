//! [`Engine`]: open an index directory, write documents, search them; and the reports
//! of its maintenance ([`CheckReport`], [`RepairReport`]), of a sync with files
//! ([`SyncReport`]) and statistics.
//!
//! The engine ties the local stores together. sled (the index directory's `store/`) is
//! the source of truth; the tantivy index (`text/`) and the HNSW graphs (checkpointed in
//! the store, published in `view/`) are derived from it, caught up from the change log
//! when they are behind and rebuilt when they are missing. The in-memory catalog holds
//! the live documents that filters check.

mod builder;
mod check;
mod compact;
mod embedders;
mod feedback;
mod lock;
mod maintain;
mod manifest;
mod open;
mod publish;
mod reembed;
mod search;
mod state;
mod stats;
mod swap;
mod sync;
mod write;

#[cfg(test)]
mod tests;

pub use self::builder::EngineBuilder;
pub use self::check::{CheckReport, Damage, RepairReport};
pub use self::compact::CompactReport;
pub(crate) use self::state::{Counters, Inner, OpenMode, Pending, STORE_DIR, TEXT_DIR};
pub use self::state::{Engine, Reader};
pub use self::stats::{CounterStats, GraphStats, KindSpace, KindSpaces, Stats};
pub use self::sync::{FileChange, SyncOptions, SyncProgress, SyncReport, SyncedFile};
