//! Where the text index's files live, for a writer and for a reader.
//!
//! A writer commits its text index before it publishes the commit (the manifest), so
//! `text/meta.json` can be a commit ahead of what readers are told, for a moment or, after
//! a crash, until the next writer opens. Readers therefore never read `text/meta.json`:
//! the manifest carries a copy of the text index's `meta.json` of the published commit
//! (a *snapshot*), and a reader opens that commit ([`SnapshotDirectory`]). The writer
//! keeps every file the published snapshot names ([`WriterDirectory`]): tantivy's garbage
//! collection cannot delete them until a newer snapshot is published.
//!
//! A reader's directory writes nothing and takes no lock, so an index on a read-only
//! volume is searchable.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle, WritePtr,
};

/// The file tantivy records its commits in.
pub(crate) const META_FILE: &str = "meta.json";

/// The files the published snapshot names, which the writer must not delete, and those
/// tantivy deleted meanwhile (kept until the snapshot that names them is replaced).
#[derive(Debug, Clone, Default)]
pub(crate) struct Protected(Arc<Mutex<ProtectedFiles>>);

#[derive(Debug, Default)]
struct ProtectedFiles {
    /// The files of the published snapshot.
    named: HashSet<PathBuf>,
    /// Files tantivy deleted that the published snapshot named.
    deferred: HashSet<PathBuf>,
}

impl Protected {
    /// Protects `files` too (a snapshot about to be published).
    pub(crate) fn add(&self, files: &HashSet<PathBuf>) {
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        state.named.extend(files.iter().cloned());
    }

    /// Protects `files` (a new snapshot's) instead; returns the deleted files no
    /// snapshot names any more, for the caller to remove.
    pub(crate) fn set(&self, files: HashSet<PathBuf>) -> Vec<PathBuf> {
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        state.named = files;
        let free: Vec<PathBuf> = state
            .deferred
            .iter()
            .filter(|path| !state.named.contains(*path))
            .cloned()
            .collect();
        for path in &free {
            state.deferred.remove(path);
        }
        free
    }

    /// Whether `path` is protected; if so, its deletion is deferred.
    fn defer(&self, path: &Path) -> bool {
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if state.named.contains(path) {
            state.deferred.insert(path.to_path_buf());
            true
        } else {
            false
        }
    }

    /// Whether `path` is protected or deferred.
    pub(crate) fn keeps(&self, path: &Path) -> bool {
        let state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        state.named.contains(path) || state.deferred.contains(path)
    }
}

/// The writer's directory: tantivy's own, except that a file the published snapshot
/// names is not deleted when tantivy deletes it: the deletion waits until another
/// snapshot is published ([`Protected::set`]).
#[derive(Debug, Clone)]
pub(crate) struct WriterDirectory {
    inner: MmapDirectory,
    protected: Protected,
}

impl WriterDirectory {
    pub(crate) fn open(dir: &Path, protected: Protected) -> tantivy::Result<WriterDirectory> {
        Ok(WriterDirectory {
            inner: MmapDirectory::open(dir)?,
            protected,
        })
    }
}

impl Directory for WriterDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        if self.protected.defer(path) {
            return Ok(());
        }
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        self.inner.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.inner.atomic_write(path, data)
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.inner.sync_directory()
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}

/// A reader's directory: the files of `text/`, with `meta.json` replaced by the
/// published snapshot. It writes nothing and takes no lock.
#[derive(Debug, Clone)]
pub(crate) struct SnapshotDirectory {
    inner: MmapDirectory,
    meta: Arc<[u8]>,
}

impl SnapshotDirectory {
    pub(crate) fn open(dir: &Path, meta: &str) -> tantivy::Result<SnapshotDirectory> {
        Ok(SnapshotDirectory {
            inner: MmapDirectory::open(dir)?,
            meta: Arc::from(meta.as_bytes()),
        })
    }
}

fn read_only(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::ReadOnlyFilesystem,
        format!("{}: a reader writes nothing", path.display()),
    )
}

impl Directory for SnapshotDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        Err(DeleteError::IoError {
            io_error: Arc::new(read_only(path)),
            filepath: path.to_path_buf(),
        })
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        if path == Path::new(META_FILE) {
            return Ok(true);
        }
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        Err(OpenWriteError::wrap_io_error(
            read_only(path),
            path.to_path_buf(),
        ))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        if path == Path::new(META_FILE) {
            return Ok(self.meta.to_vec());
        }
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, _data: &[u8]) -> io::Result<()> {
        Err(read_only(path))
    }

    fn sync_directory(&self) -> io::Result<()> {
        Ok(())
    }

    /// No lock: the snapshot's files are never deleted while it is published, and a
    /// reader that finds one gone (a newer snapshot was published) reads the manifest
    /// again.
    fn acquire_lock(&self, _lock: &Lock) -> Result<DirectoryLock, LockError> {
        Ok(DirectoryLock::from(Box::new(())))
    }

    fn watch(&self, _watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        Ok(WatchHandle::empty())
    }
}

/// Whether `name` is a segment's file (`<32 hex digits>.<extension>`, deletes
/// `<32 hex>.<opstamp>.del`).
pub(crate) fn is_segment_file(name: &str) -> bool {
    is_tantivy_file(name) && name.len() > 33 && name.as_bytes()[32] == b'.'
}

/// Whether `name` is a file tantivy makes in an index directory: its commit and file
/// lists, its lock files, a segment's files (`<32 hex digits>.<extension>`, deletes
/// `<32 hex>.<opstamp>.del`) and the temporary files of its atomic writes.
pub(crate) fn is_tantivy_file(name: &str) -> bool {
    const EXTENSIONS: [&str; 8] = [
        "idx",
        "pos",
        "term",
        "store",
        "fast",
        "fieldnorm",
        "del",
        "temp",
    ];
    if matches!(
        name,
        META_FILE | ".managed.json" | ".tantivy-meta.lock" | ".tantivy-writer.lock"
    ) {
        return true;
    }
    if let Some(random) = name.strip_prefix(".tmp") {
        return random.len() == 6 && random.bytes().all(|b| b.is_ascii_alphanumeric());
    }
    let mut parts = name.split('.');
    let (Some(id), Some(second)) = (parts.next(), parts.next()) else {
        return false;
    };
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return false;
    }
    match (second, parts.next(), parts.next()) {
        (extension, None, None) => EXTENSIONS.contains(&extension),
        (opstamp, Some("del"), None) => opstamp.bytes().all(|b| b.is_ascii_digit()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tantivy_files_are_told_from_others() {
        for ours in [
            "meta.json",
            ".managed.json",
            ".tantivy-writer.lock",
            "0123456789abcdef0123456789abcdef.idx",
            "0123456789abcdef0123456789abcdef.fieldnorm",
            "0123456789abcdef0123456789abcdef.17.del",
            ".tmpA1b2C3",
        ] {
            assert!(is_tantivy_file(ours), "{ours}");
        }
        for theirs in [
            "notes.txt",
            "meta.json.bak",
            "0123456789abcdef0123456789abcdef.txt",
            "0123456789abcdef0123456789abcde.idx",
            "0123456789abcdef0123456789abcdef.x.del",
            ".tmp",
            "sub",
        ] {
            assert!(!is_tantivy_file(theirs), "{theirs}");
        }
    }
}
