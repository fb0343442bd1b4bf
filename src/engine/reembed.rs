//! Changing models: rebuild an index's vectors with another embedder.

use std::path::Path;
use std::sync::Arc;

use super::swap::{self, Staging};
use super::{Engine, lock};
use crate::config::Config;
use crate::embed::EmbedderSpec;
use crate::model::doc::Document;
use crate::{Error, ErrorKind, Kind, Result};

/// Documents re-embedded per batch.
const BATCH: usize = 1_000;

impl Engine {
    /// Re-embeds every document of the index in `dir` with the embedder `spec` names, into
    /// a new vector index, and returns the number of documents.
    ///
    /// This is how an index changes models (an index otherwise keeps the embedder it was
    /// created with). Vectors the caller supplied are replaced by the new model's; the
    /// feedback windows and marks are kept. The new index is built in `dir/.ruche/` and
    /// swapped in when complete: a reembed stopped at any step leaves the old index or
    /// the new one (the next open for writing finishes the swap). Files in the index
    /// directory that the engine did not make stay.
    ///
    /// # Errors
    ///
    /// The errors of opening and creating an index (the index must not be open elsewhere),
    /// embedder errors, and I/O errors of the swap.
    pub fn reembed(dir: impl AsRef<Path>, spec: &EmbedderSpec, config: Config) -> Result<usize> {
        let dir = dir.as_ref();
        if !swap::holds_index(dir) {
            return Err(Error::new(ErrorKind::IndexNotFound {
                path: dir.to_path_buf(),
            }));
        }
        let held = Arc::new(lock(dir, std::time::Duration::ZERO)?);
        swap::recover(dir)?;
        let staging = Staging::new(dir, "reembed")?;
        let old = Engine::builder()
            .config(config.clone())
            .open_locked(dir, &held)?;
        let new = Engine::builder()
            .config(config)
            .embedder_spec(spec.clone())
            .create(staging.index())?;
        // Feedback is about the legs, not the model: it carries over, and the key that
        // signs query ids with it, before the commit publishes the key for readers
        // (copied after, readers would sign ids the new index refuses).
        // Feedback given on the old index counts once on the new one.
        old.inner.store.copy_marks_into(&new.inner.store)?;
        for (tenant, window) in old.inner.lock_feedback().iter() {
            new.inner.store.save_feedback(tenant, window.entries())?;
        }
        let mut n_docs = 0;
        for kind in Kind::ALL {
            let mut batch = Vec::with_capacity(BATCH);
            for doc in old.export(kind, None)? {
                batch.push(without_vectors(doc));
                if batch.len() == BATCH {
                    n_docs += batch.len();
                    new.upsert(std::mem::take(&mut batch))?;
                }
            }
            n_docs += batch.len();
            new.upsert(batch)?;
        }
        new.commit()?;
        new.close()?;
        old.close_without_graphs()?;
        crate::crash::point("reembed:built");
        staging.swap(None)?;
        drop(held);
        Ok(n_docs)
    }
}

fn without_vectors(mut doc: Document) -> Document {
    doc.set_embeddings(None, None);
    doc
}
