//! Forgetting for real, and consistent copies: `compact`, `backup`, `delete_tenant`.
//!
//! sled and tantivy keep deleted bytes until they rewrite the files that hold them. A
//! user who deletes a document (or a whole tenant) may need it gone from the disk:
//! `compact` writes a new store of what is live, swaps it in, and rebuilds the derived
//! indexes, so that no deleted text or vector is left in any file of the index.

use std::path::Path;

use super::{Engine, STORE_DIR, TEXT_DIR, lock, manifest};
use crate::config::Config;
use crate::{Error, ErrorKind, Kind, Result};

/// The new store, while it is written.
const COMPACTING: &str = "store.compact";
/// The old store, between the two renames of the swap.
const RETIRED: &str = "store.old";
/// Written once the new store is complete: from then on a crash finishes the swap.
const COMPLETE: &str = "COMPACT_COMPLETE";

impl Engine {
    /// Buffers the deletion of every committed document of `tenant`, of every kind;
    /// returns how many. Deleted documents leave searches at the next commit, and the
    /// disk at the next [`Engine::compact`].
    pub fn delete_tenant(&self, tenant: &str) -> usize {
        let docs: Vec<(Kind, String)> = {
            let catalog = self.inner.read_catalog();
            catalog
                .iter()
                .filter(|(_, entry)| entry.tenant_id() == tenant)
                .map(|(_, entry)| (entry.kind(), entry.id().to_string()))
                .collect()
        };
        for (kind, id) in &docs {
            self.delete(*kind, tenant, id);
        }
        docs.len()
    }

    /// Writes a consistent copy of the committed index into `dest` (missing or empty),
    /// while this engine keeps serving: what the last commit made durable, and nothing
    /// deleted. The copy's derived indexes are rebuilt when it is first opened.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotAnIndex`] when `dest` is not empty; storage and I/O errors.
    pub fn backup(&self, dest: impl AsRef<Path>) -> Result<()> {
        self.inner.writable()?;
        let dest = dest.as_ref();
        if !super::is_empty_or_missing(dest)? {
            return Err(Error::new(ErrorKind::NotAnIndex {
                path: dest.to_path_buf(),
            }));
        }
        std::fs::create_dir_all(dest).map_err(|err| Error::io_at(dest, err))?;
        // No commit runs while the copy is made: it is one committed state.
        let _serial = self
            .inner
            .commit_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        self.inner
            .store
            .copy_live_into(&dest.join(STORE_DIR), &|_| true)?;
        let found = super::manifest_of(&self.inner.store, &self.inner.read_catalog());
        manifest::write(dest, &found, None)
    }

    /// Rewrites the index in `dir` so that nothing deleted is left on disk: a new store
    /// of the live documents replaces the old one, and the text index and the graphs are
    /// rebuilt from it. Returns the bytes the index takes before and after.
    ///
    /// A crash at any step leaves one complete store: the next open finishes the swap of
    /// a complete new store, or discards an incomplete one.
    ///
    /// # Errors
    ///
    /// As opening the index; storage and I/O errors.
    pub fn compact(dir: impl AsRef<Path>, config: Config) -> Result<(u64, u64)> {
        let dir = dir.as_ref();
        let before = disk_size(dir);
        {
            let engine = Engine::builder().config(config.clone()).open(dir)?;
            let staging = dir.join(COMPACTING);
            if staging.exists() {
                std::fs::remove_dir_all(&staging).map_err(|err| Error::io_at(&staging, err))?;
            }
            // The feedback of a tenant that has no document left goes with it.
            let live: std::collections::HashSet<String> = engine
                .inner
                .read_catalog()
                .tenant_names()
                .map(str::to_string)
                .collect();
            engine
                .inner
                .store
                .copy_live_into(&staging, &|tenant| live.contains(tenant))?;
            sync_dir(&staging)?;
            let marker = dir.join(COMPLETE);
            std::fs::File::create(&marker)
                .and_then(|f| f.sync_all())
                .map_err(|err| Error::io_at(&marker, err))?;
            sync_dir(dir)?;
            // Closed before the swap: sled must not write into the store being replaced.
            engine.close()?;
        }
        {
            let _lock = lock(dir, std::time::Duration::from_secs(5))?;
            recover(dir)?;
        }
        // The first open rebuilds the text index; closing stores the rebuilt graphs.
        let engine = Engine::builder().config(config).open(dir)?;
        engine.sync_graph()?;
        engine.close()?;
        Ok((before, disk_size(dir)))
    }
}

/// Finishes or discards a compaction that stopped at any step (the caller holds the
/// index's lock).
pub(crate) fn recover(dir: &Path) -> Result<()> {
    let staging = dir.join(COMPACTING);
    let retired = dir.join(RETIRED);
    let store = dir.join(STORE_DIR);
    let marker = dir.join(COMPLETE);
    let rename = |from: &Path, to: &Path| -> Result<()> {
        std::fs::rename(from, to).map_err(|err| Error::io_at(from, err))?;
        sync_dir(dir)
    };
    let remove = |path: &Path| -> Result<()> {
        match std::fs::remove_dir_all(path) {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(err) => Err(Error::io_at(path, err)),
        }
    };
    if marker.exists() {
        if staging.exists() {
            if store.exists() {
                rename(&store, &retired)?;
            }
            rename(&staging, &store)?;
        }
        // The derived indexes describe the old store's files: rebuilt from the new one.
        // The published files hold deleted documents: published again from the new one.
        remove(&dir.join(TEXT_DIR))?;
        remove(&dir.join(crate::store::view::VIEW_DIR))?;
        remove(&retired)?;
        std::fs::remove_file(&marker).map_err(|err| Error::io_at(&marker, err))?;
        sync_dir(dir)?;
    } else {
        remove(&staging)?;
        if !store.exists() && retired.exists() {
            rename(&retired, &store)?;
        }
    }
    Ok(())
}

fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|err| Error::io_at(dir, err))
}

/// Bytes of every file under `dir`.
fn disk_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok())
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => disk_size(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}
