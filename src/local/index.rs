//! [`LocalIndex`]: the store, the text index, the vector index and the catalog of one
//! directory, as one backend. The engine opens it, writes to it, publishes it and
//! maintains it; searches read it through [`Retriever`](crate::retrieve::Retriever)
//! (`local/search.rs`).

use std::sync::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::catalog::Catalog;
use super::store::Store;
use super::store::view::ViewList;
use super::text::TextIndex;
use super::vector::VectorIndex;
use crate::config::{Config, GraphConfig};
use crate::{Error, Result};

/// The local index: sled (the source of truth), tantivy (the text leg), the HNSW graphs
/// (the vector leg) and the in-memory catalog built from the store.
pub(crate) struct LocalIndex {
    pub(crate) store: Store,
    pub(crate) text: TextIndex,
    pub(crate) vectors: VectorIndex,
    catalog: RwLock<Catalog>,
    /// The files published for readers (a writer's, to extend; a reader's, as read).
    pub(crate) view: Mutex<Option<ViewList>>,
    /// Why the text index could not be read (a reader's, when it is damaged): every
    /// search fails with it, while documents are read from the published files.
    text_damaged: Option<String>,
    /// What its searches read of the configuration.
    pub(crate) settings: SearchSettings,
}

/// What the local index's searches read of the engine's configuration.
#[derive(Debug, Clone)]
pub(crate) struct SearchSettings {
    /// From this many documents in a search's scope, the vector leg scans them exactly.
    pub(crate) exact_scan_threshold: usize,
    /// The entity-graph leg.
    pub(crate) graph: GraphConfig,
    /// Chunks: whether each candidate's neighbouring turns are candidates too (a
    /// neighbour weight above 0).
    pub(crate) neighbours: bool,
}

impl SearchSettings {
    pub(crate) fn of(config: &Config) -> SearchSettings {
        SearchSettings {
            exact_scan_threshold: config.pipeline.retrieval.exact_scan_threshold,
            graph: config.graph,
            neighbours: config.scoring.neighbour_weight > 0.0,
        }
    }
}

impl LocalIndex {
    /// The index of its opened parts.
    pub(crate) fn new(
        store: Store,
        text: TextIndex,
        vectors: VectorIndex,
        catalog: Catalog,
        view: Option<ViewList>,
        text_damaged: Option<String>,
        config: &Config,
    ) -> LocalIndex {
        LocalIndex {
            store,
            text,
            vectors,
            catalog: RwLock::new(catalog),
            view: Mutex::new(view),
            text_damaged,
            settings: SearchSettings::of(config),
        }
    }

    /// The committed state: what a search reads, consistent while the guard is held (a
    /// commit switches the catalog and the text reader together under the write guard).
    pub(crate) fn snapshot(&self) -> RwLockReadGuard<'_, Catalog> {
        self.catalog
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// The catalog to change, for a commit or maintenance.
    pub(crate) fn write_catalog(&self) -> RwLockWriteGuard<'_, Catalog> {
        self.catalog
            .write()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Fails when the text index could not be read (a reader of a damaged one).
    pub(crate) fn searchable(&self) -> Result<()> {
        match &self.text_damaged {
            Some(why) => Err(Error::corrupt(why.clone())),
            None => Ok(()),
        }
    }
}
