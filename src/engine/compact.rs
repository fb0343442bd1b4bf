//! Forgetting for real, and consistent copies: `compact`, `backup`, `delete_tenant`.
//!
//! sled and tantivy keep deleted bytes until they rewrite the files that hold them. A
//! user who deletes a document (or a whole tenant) may need it gone from the disk:
//! `compact` writes a new store of what is live, swaps it in, and rebuilds the derived
//! indexes, so that no deleted text or vector is left in any file of the index.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use super::lock::{is_empty_or_missing, lock, resolved};
use super::manifest::manifest_of;
use super::swap::{self, Staging};
use super::{Engine, STORE_DIR, manifest};
use crate::config::Config;
use crate::{Error, ErrorKind, Kind, Result};

impl Engine {
    /// Buffers the deletion of every committed document of `tenant`, of every kind;
    /// returns how many. Deleted documents leave searches at the next commit, and the
    /// disk at the next [`Engine::compact`].
    pub fn delete_tenant(&self, tenant: &str) -> usize {
        let docs: Vec<(Kind, String)> = {
            let catalog = self.inner.local.snapshot();
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
    /// deleted. The copy is a whole index (its text index built and its state published
    /// for readers, so it is searchable read-only), built in `dest/.ruche/` and moved
    /// into place once complete: a backup stopped at any step leaves no index in `dest`
    /// or a complete one.
    ///
    /// A backup stopped before its copy was complete leaves only its scratch in `dest`:
    /// the next backup into `dest` removes it and starts again. One stopped while it
    /// moved a complete copy into place is finished first, and `dest` then holds that
    /// copy ([`ErrorKind::IndexExists`]).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] when `dest` is this index's directory or inside it
    /// (the copy would be part of what it copies, and the index's own maintenance
    /// removes what it finds in its parts); [`ErrorKind::NotAnIndex`] when `dest` holds
    /// other files; [`ErrorKind::IndexExists`] when it holds an index; storage and I/O
    /// errors.
    pub fn backup(&self, dest: impl AsRef<Path>) -> Result<()> {
        let dest = dest.as_ref();
        Engine::check_backup_destination(&self.inner.dir, dest)?;
        std::fs::create_dir_all(dest).map_err(|err| Error::io_at(dest, err))?;
        let dest_lock = Arc::new(lock(dest, std::time::Duration::ZERO)?);
        // A killed backup's swap is finished, its unfinished copy removed.
        swap::recover(dest)?;
        if swap::holds_index(dest) {
            return Err(Error::new(ErrorKind::IndexExists {
                path: dest.to_path_buf(),
            }));
        }
        let staging = Staging::new(dest, "backup")?;
        let copy = staging.index();
        {
            // No commit runs while the copy is made: it is one committed state.
            let _serial = self
                .inner
                .commit_lock
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            self.inner
                .local
                .store
                .copy_live_into(&copy.join(STORE_DIR), &|_| true)?;
            let found = manifest_of(&self.inner.local.store, &self.inner.local.snapshot());
            manifest::write(&copy, &found, None)?;
        }
        crate::crash::point("backup:copied");
        // Opened once: its text index is built and its state published (the manifest
        // above is what the copy must hold); the graphs are built at its first open for
        // writing.
        Engine::builder()
            .with_config(self.inner.config.clone())
            .embedders_of(self.inner.embedders())
            .open(&copy)?
            .close_without_graphs()?;
        crate::crash::point("backup:built");
        staging.swap(None)?;
        drop(dest_lock);
        Ok(())
    }

    /// Checks, without touching either, that `dest` can take a backup of the index in
    /// `dir` ([`Engine::backup`] checks it too): `dest` is neither `dir` nor inside it,
    /// whatever path or symbolic link leads there, and is missing, empty, or holds only
    /// what a killed backup left.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] when `dest` is `dir` or inside it;
    /// [`ErrorKind::IndexExists`] when it holds an index; [`ErrorKind::NotAnIndex`]
    /// when it holds other files; I/O errors naming the path.
    pub fn check_backup_destination(dir: impl AsRef<Path>, dest: impl AsRef<Path>) -> Result<()> {
        let (dir, dest) = (dir.as_ref(), dest.as_ref());
        let source = dir.canonicalize().map_err(|err| Error::io_at(dir, err))?;
        if resolved(dest)?.starts_with(&source) {
            return Err(Error::invalid_input(format!(
                "{}: a backup cannot be written into the index it copies ({})",
                dest.display(),
                dir.display()
            )));
        }
        if dest.join(STORE_DIR).exists() {
            return Err(Error::new(ErrorKind::IndexExists {
                path: dest.to_path_buf(),
            }));
        }
        // Only a killed backup's leftovers (its lock and scratch) may be there.
        if !is_empty_or_missing(dest)? {
            return Err(Error::new(ErrorKind::NotAnIndex {
                path: dest.to_path_buf(),
            }));
        }
        Ok(())
    }

    /// Rewrites the index in `dir` so that nothing deleted is left on disk: a new store
    /// of the live documents, with its text index and graphs built, replaces the old
    /// one. Returns the bytes the index takes before and after.
    ///
    /// The new index is built in `dir/.ruche/` and swapped in once complete; a crash at
    /// any step leaves the old index or the new one (the next open for writing finishes
    /// the swap). Files in the index directory that the engine did not make stay.
    ///
    /// # Errors
    ///
    /// As opening the index; storage and I/O errors.
    pub fn compact(dir: impl AsRef<Path>, config: &Config) -> Result<CompactReport> {
        let dir = dir.as_ref();
        if !swap::holds_index(dir) {
            return Err(Error::new(ErrorKind::IndexNotFound {
                path: dir.to_path_buf(),
            }));
        }
        let held = Arc::new(lock(dir, std::time::Duration::from_secs(5))?);
        swap::recover(dir)?;
        let before = disk_size(dir);
        let staging = Staging::new(dir, "compact")?;
        let embedders;
        {
            let engine = Engine::builder()
                .with_config(config.clone())
                .open_locked(dir, &held)?;
            embedders = engine.embedders();
            // The feedback of a tenant that has no document left goes with it.
            let live: std::collections::HashSet<String> = engine
                .inner
                .local
                .snapshot()
                .tenant_names()
                .map(str::to_string)
                .collect();
            engine
                .inner
                .local
                .store
                .copy_live_into(&staging.index().join(STORE_DIR), &|tenant| {
                    live.contains(tenant)
                })?;
            let found = manifest_of(&engine.inner.local.store, &engine.inner.local.snapshot());
            manifest::write(&staging.index(), &found, None)?;
            engine.close_without_graphs()?;
        }
        crate::crash::point("compact:copied");
        {
            // Its text index and graphs built from the new store, its state published.
            let new = Engine::builder()
                .with_config(config.clone())
                .embedders_of(embedders)
                .open(staging.index())?;
            new.close()?;
        }
        crate::crash::point("compact:built");
        staging.swap(None)?;
        drop(held);
        Ok(CompactReport {
            bytes_before: before,
            bytes_after: disk_size(dir),
        })
    }
}

/// What [`Engine::compact`] did: the bytes the index took before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CompactReport {
    /// Bytes of every file of the index directory before.
    pub bytes_before: u64,
    /// And after.
    pub bytes_after: u64,
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
