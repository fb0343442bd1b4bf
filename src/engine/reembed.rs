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
    /// feedback windows and marks are kept. The new
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
        recover(dir)?;
        let old = Engine::builder().config(config.clone()).open(dir)?;
        let new = Engine::builder()
            .config(config)
            .embedder_spec(spec.clone())
            .create(&staging)?;
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
        // Feedback is about the legs, not the model: it carries over.
        // Feedback given on the old index counts once on the new one.
        old.inner.store.copy_marks_into(&new.inner.store)?;
        for (tenant, window) in old.inner.lock_feedback().iter() {
            new.inner.store.save_feedback(tenant, window.entries())?;
        }
        new.close()?;
        drop(old);
        let marker = staging.join(COMPLETE);
        write_synced(&marker)?;
        swap(dir, &staging, &retired)?;
        Ok(n_docs)
    }
}

/// Marks a staging index as complete: from then on a crash finishes the swap instead of
/// discarding the new index.
const COMPLETE: &str = "REEMBED_COMPLETE";

fn write_synced(path: &Path) -> Result<()> {
    let file = std::fs::File::create(path).map_err(|err| Error::io_at(path, err))?;
    file.sync_all().map_err(|err| Error::io_at(path, err))?;
    sync_parent(path)
}

/// Makes a rename or a new file in `path`'s directory durable.
fn sync_parent(path: &Path) -> Result<()> {
    let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    let dir = std::fs::File::open(parent).map_err(|err| Error::io_at(parent, err))?;
    dir.sync_all().map_err(|err| Error::io_at(parent, err))
}

fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).map_err(|err| Error::io_at(from, err))?;
    sync_parent(to)
}

/// Puts the complete index `staging` in place of `dir`. Each step is a rename; a crash
/// between any two is finished by [`recover`].
fn swap(dir: &Path, staging: &Path, retired: &Path) -> Result<()> {
    rename(dir, retired)?;
    rename(staging, dir)?;
    finish(dir, retired)
}

/// The last steps of a swap: the old copy goes, then the marker.
fn finish(dir: &Path, retired: &Path) -> Result<()> {
    if retired.exists() {
        std::fs::remove_dir_all(retired).map_err(|err| Error::io_at(retired, err))?;
    }
    let marker = dir.join(COMPLETE);
    std::fs::remove_file(&marker).map_err(|err| Error::io_at(&marker, err))?;
    sync_parent(&marker)
}

/// Brings `dir` back to one complete index after a reembed that stopped at any step,
/// never deleting the last complete copy.
///
/// - a complete staging index (its marker written) is swapped in, whether or not the old
///   index was already moved aside;
/// - an incomplete staging index is deleted, and an old index moved aside comes back;
/// - the marker in `dir` means the swap happened: the old copy and the marker go.
pub(crate) fn recover(dir: &Path) -> Result<()> {
    let (Ok(staging), Ok(retired)) = (sibling(dir, "reembed"), sibling(dir, "reembed-old")) else {
        return Ok(()); // `.` or `/`: no sibling can exist.
    };
    let present = |p: &Path| p.join("store").exists();
    if dir.join(COMPLETE).exists() {
        tracing::warn!(dir = %dir.display(), "finishing an interrupted reembed");
        finish(dir, &retired)?;
    }
    if staging.exists() {
        if staging.join(COMPLETE).exists() {
            tracing::warn!(dir = %dir.display(), "swapping in the index an interrupted reembed completed");
            if present(dir) {
                rename(dir, &retired)?;
            }
            rename(&staging, dir)?;
            finish(dir, &retired)?;
        } else {
            tracing::warn!(dir = %dir.display(), "discarding the incomplete index of an interrupted reembed");
            std::fs::remove_dir_all(&staging).map_err(|err| Error::io_at(&staging, err))?;
        }
    }
    if !present(dir) && present(&retired) {
        tracing::warn!(dir = %dir.display(), "restoring the index an interrupted reembed moved aside");
        if dir.exists() {
            // Only an empty directory can be in the way: a rename does not replace one
            // that holds files.
            std::fs::remove_dir(dir).map_err(|err| Error::io_at(dir, err))?;
        }
        rename(&retired, dir)?;
    }
    Ok(())
}

fn without_vectors(mut doc: Document) -> Document {
    doc.set_embeddings(None, None);
    doc
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
