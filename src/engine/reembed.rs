//! Changing models: rebuild an index's vectors with another embedder.

use std::path::Path;
use std::sync::Arc;

use super::Engine;
use super::lock::lock;
use super::swap::{self, Staging};
use crate::config::Config;
use crate::embed::{EmbedderSpec, EmbedderSpecs};
use crate::model::doc::Document;
use crate::{Error, ErrorKind, Kind, Result};

/// Documents re-embedded per batch.
const BATCH: usize = 1_000;

impl Engine {
    /// Re-embeds every document of the index in `dir` with the embedder `spec` names, into
    /// a new vector index, and returns the number of documents.
    ///
    /// This is how an index changes models (an index otherwise keeps the embedders it was
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
    pub fn reembed(dir: impl AsRef<Path>, spec: &EmbedderSpec, config: &Config) -> Result<usize> {
        reembed_kinds(dir.as_ref(), &Kind::ALL, spec, config.clone())
    }

    /// Re-embeds the documents of `kind` alone with the embedder `spec` names (as
    /// [`Engine::reembed`] does every kind); the other kinds keep their embedders and
    /// their vectors. Returns the number of documents of `kind`.
    ///
    /// # Errors
    ///
    /// As [`Engine::reembed`].
    pub fn reembed_kind(
        dir: impl AsRef<Path>,
        kind: Kind,
        spec: &EmbedderSpec,
        config: &Config,
    ) -> Result<usize> {
        reembed_kinds(dir.as_ref(), &[kind], spec, config.clone())
    }
}

/// Rebuilds the index in `dir` with `kinds` embedded by `spec`, the other kinds as they
/// were (their vectors come back from the embedding cache, copied over; an embedder
/// that caches nothing, such as the static model, embeds them again in microseconds).
fn reembed_kinds(dir: &Path, kinds: &[Kind], spec: &EmbedderSpec, config: Config) -> Result<usize> {
    if !swap::holds_index(dir) {
        return Err(Error::new(ErrorKind::IndexNotFound {
            path: dir.to_path_buf(),
        }));
    }
    let held = Arc::new(lock(dir, std::time::Duration::ZERO)?);
    swap::recover(dir)?;
    let staging = Staging::new(dir, "reembed")?;
    let old = Engine::builder()
        .with_config(config.clone())
        .open_locked(dir, &held)?;
    // The kinds kept keep their recorded embedders (none recorded: theirs are
    // external, or the index was BM25 only: they stay so).
    let recorded: EmbedderSpecs = match old.inner.local.store.meta().embedder {
        Some(text) => text.parse()?,
        None => EmbedderSpecs::uniform(EmbedderSpec::None),
    };
    let specs = kinds
        .iter()
        .fold(recorded, |specs, &kind| specs.with(kind, spec.clone()));
    let new = Engine::builder()
        .with_config(config)
        .with_embedder_specs(specs)
        .create(staging.index())?;
    // Feedback is about the legs, not the model: it carries over, and the key that
    // signs query ids with it, before the commit publishes the key for readers
    // (copied after, readers would sign ids the new index refuses).
    // Feedback given on the old index counts once on the new one.
    old.inner
        .local
        .store
        .copy_marks_into(&new.inner.local.store)?;
    old.inner
        .local
        .store
        .copy_embed_cache_into(&new.inner.local.store)?;
    for (tenant, window) in old.inner.lock_feedback().iter() {
        new.inner
            .local
            .store
            .save_feedback(tenant, window.entries())?;
    }
    let mut n_docs = 0;
    for kind in Kind::ALL {
        let moved = kinds.contains(&kind);
        let mut batch = Vec::with_capacity(BATCH);
        for doc in old.export(kind, None)? {
            // The kinds moved lose the vectors their callers supplied; the others keep
            // them.
            batch.push(if moved { without_vectors(doc) } else { doc });
            if batch.len() == BATCH {
                n_docs += if moved { batch.len() } else { 0 };
                new.upsert(std::mem::take(&mut batch))?;
            }
        }
        n_docs += if moved { batch.len() } else { 0 };
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

fn without_vectors(mut doc: Document) -> Document {
    doc.set_embeddings(None, None);
    doc
}
