//! Changing models: rebuild an index's vectors with another embedder.

use std::path::{Path, PathBuf};

use super::Engine;
use crate::config::Config;
use crate::doc::Document;
use crate::embed::EmbedderSpec;
use crate::{Error, Kind, Result};

/// Documents re-embedded per batch.
const BATCH: usize = 1_000;

impl Engine {
    /// Re-embeds every document of the index in `dir` with the embedder `spec` names, into
    /// a new vector index, and returns the number of documents.
    ///
    /// This is how an index changes models (an index otherwise keeps the embedder it was
    /// created with). Vectors the caller supplied are replaced by the new model's; the
    /// feedback window is kept (the query log is not). The new
    /// index is built beside the old one (`DIR.reembed`) and swapped in when complete; if
    /// the process stops before the swap, the old index is untouched.
    ///
    /// # Errors
    ///
    /// The errors of opening and creating an index (the index must not be open elsewhere),
    /// embedder errors, and I/O errors of the swap.
    pub fn reembed(dir: impl AsRef<Path>, spec: &EmbedderSpec, config: Config) -> Result<usize> {
        let dir = dir.as_ref();
        let staging = sibling(dir, "reembed")?;
        let retired = sibling(dir, "reembed-old")?;
        for path in [&staging, &retired] {
            if path.exists() {
                std::fs::remove_dir_all(path)?;
            }
        }
        let old = Engine::builder().config(config.clone()).open(dir)?;
        let new = Engine::builder()
            .config(config)
            .embedder_spec(spec.clone())
            .create(&staging)?;
        let mut n_docs = 0;
        for kind in [Kind::Rule, Kind::Chunk] {
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
        // Feedback is about the legs, not the model: it carries over.
        let window = old.feedback_window();
        new.inner.store.save_feedback(window.entries())?;
        new.close()?;
        drop(old);
        std::fs::rename(dir, &retired)?;
        std::fs::rename(&staging, dir)?;
        std::fs::remove_dir_all(&retired)?;
        Ok(n_docs)
    }
}

fn without_vectors(doc: Document) -> Document {
    match doc {
        Document::Rule(mut rule) => {
            rule.embedding = None;
            rule.pattern_embeddings = None;
            Document::Rule(rule)
        }
        Document::Chunk(mut chunk) => {
            chunk.embedding = None;
            Document::Chunk(chunk)
        }
    }
}

/// `dir` with `.suffix` appended to its last component.
fn sibling(dir: &Path, suffix: &str) -> Result<PathBuf> {
    let name = dir
        .file_name()
        .ok_or_else(|| Error::invalid_input(format!("{} names no directory", dir.display())))?;
    let mut name = name.to_os_string();
    name.push(".");
    name.push(suffix);
    Ok(dir.with_file_name(name))
}
