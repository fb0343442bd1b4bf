//! The index directory's lock and paths: the `LOCK` file a writer holds, whether a
//! writer is alive, whether a directory may take a new index, and paths resolved.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::{Error, ErrorKind, Result};

use super::builder::EngineBuilder;
use super::swap;

pub(crate) const LOCK_FILE: &str = "LOCK";

/// Whether a writer holds the index in `dir`: its `LOCK` cannot be shared for a moment.
/// (A reader takes no lock: this probe lets go at once, and only runs when the text index
/// is ahead of the manifest, to tell a writer about to publish from one that died.)
pub(crate) fn writer_alive(dir: &Path) -> bool {
    let Ok(file) = File::open(dir.join(LOCK_FILE)) else {
        return false;
    };
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            false
        }
        Err(_) => true,
    }
}

/// The index's lock: the one the builder holds, or taken now.
pub(crate) fn take_lock(builder: &EngineBuilder, dir: &Path) -> Result<File> {
    match &builder.held_lock {
        Some(held) => held
            .try_clone()
            .map_err(|err| Error::io_at(&dir.join(LOCK_FILE), err)),
        None => lock(dir, builder.wait),
    }
}

/// Whether `dir` is missing or an empty directory (the only places a new index goes);
/// an index's own lock file does not count.
pub(crate) fn is_empty_or_missing(dir: &Path) -> Result<bool> {
    match std::fs::read_dir(dir) {
        Ok(entries) => Ok(entries
            .flatten()
            .all(|entry| entry.file_name() == LOCK_FILE || entry.file_name() == swap::SCRATCH_DIR)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(err) => Err(Error::io_at(dir, err)),
    }
}

/// `path` made absolute with every symbolic link resolved, for the part of it that
/// exists (a destination about to be made is resolved through its nearest existing
/// ancestor).
pub(crate) fn resolved(path: &Path) -> Result<PathBuf> {
    let absolute = std::path::absolute(path).map_err(|err| Error::io_at(path, err))?;
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(mut found) => {
                for name in rest.iter().rev() {
                    found.push(name);
                }
                return Ok(found);
            }
            Err(_) => match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_os_string());
                    existing = parent;
                }
                _ => return Ok(absolute),
            },
        }
    }
}

/// How long a lock is waited for even when no wait was asked: a process the application
/// spawns holds a copy of every descriptor between its fork and its exec (flock locks
/// belong to the shared open file), so an engine just dropped can look held for a moment.
pub(crate) const LOCK_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

/// Takes the index's exclusive lock, waiting up to `wait` (at least [`LOCK_GRACE`]) for
/// another holder to let go.
pub(crate) fn lock(dir: &Path, wait: std::time::Duration) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|err| Error::io_at(&path, err))?;
    let deadline = std::time::Instant::now() + wait.max(LOCK_GRACE);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(Error::new(ErrorKind::Locked {
                    path: dir.to_path_buf(),
                }));
            }
            Err(std::fs::TryLockError::Error(err)) => return Err(Error::io_at(&path, err)),
        }
    }
}
