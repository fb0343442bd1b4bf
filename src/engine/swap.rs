//! The files an index owns, and putting a complete new index in place of an old one.
//!
//! An index directory may hold files of its user (notes, a `sub/` directory, even files
//! inside `store/` or `text/`): the engine removes only files it made, recognised by name
//! ([`owns`]). `repair`, `reembed`, `compact` and `backup` build a complete new index in
//! the index's scratch directory ([`SCRATCH_DIR`], `.ruche/`, which is the engine's
//! alone), then swap its parts (`store/`, `text/`, `view/`, `MANIFEST`) in:
//!
//! 1. the new index is built in `.ruche/OP/index/` and synced; the old one is untouched;
//! 2. a journal (`.ruche/SWAP`) is written and synced: from then on the swap happens;
//! 3. each part is moved: the old one to `.ruche/retired/`, the new one in its place
//!    (`MANIFEST` last);
//! 4. the user's files found in the old parts are moved into the new ones; the old parts'
//!    own files are removed (repair keeps its damaged store whole as `store.damaged/`);
//! 5. the journal goes, then the scratch directory.
//!
//! A process killed at any step leaves the old index (before step 2) or a swap that the
//! next open for writing finishes ([`recover`]): one complete index, never a mix, never
//! none.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{STORE_DIR, TEXT_DIR, manifest::MANIFEST_FILE};
use crate::local::store::view::{VIEW_DIR, is_published_name};
use crate::{Error, Result};

/// The index's scratch directory: everything in it is the engine's.
pub(crate) const SCRATCH_DIR: &str = ".ruche";
/// The journal of a swap under way.
const JOURNAL: &str = "SWAP";
/// Where the old parts go during a swap.
const RETIRED: &str = "retired";
/// The parts of an index a swap replaces, in the order it moves them.
const PARTS: [&str; 4] = [STORE_DIR, TEXT_DIR, VIEW_DIR, MANIFEST_FILE];

/// Whether the engine made the entry `name` of the part `part` (`store`, `text`,
/// `view`) of an index: what it may remove there.
pub(crate) fn owns(part: &str, name: &str, is_dir: bool) -> bool {
    match part {
        // sled 0.34's files.
        STORE_DIR => {
            if is_dir {
                return name == "blobs";
            }
            if matches!(name, "conf" | "db") {
                return true;
            }
            let Some(lsn) = name.strip_prefix("snap.") else {
                return false;
            };
            let lsn = lsn.strip_suffix(".generating").unwrap_or(lsn);
            lsn.len() == 16 && lsn.bytes().all(|b| b.is_ascii_hexdigit())
        }
        TEXT_DIR => !is_dir && crate::local::text::directory::is_tantivy_file(name),
        VIEW_DIR => !is_dir && is_published_name(name),
        _ => false,
    }
}

/// Removes the entries the engine owns in `path` (the part `part` of an index), then
/// `path` itself if nothing else is left in it.
pub(crate) fn remove_part(path: &Path, part: &str) -> Result<()> {
    let entries = match std::fs::read_dir(path) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) if part == MANIFEST_FILE || err.kind() == std::io::ErrorKind::NotADirectory => {
            return remove_file(path);
        }
        Err(err) => return Err(Error::io_at(path, err)),
    };
    for entry in entries {
        let entry = entry.map_err(|err| Error::io_at(path, err))?;
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if !owns(part, &entry.file_name().to_string_lossy(), is_dir) {
            continue;
        }
        let entry_path = entry.path();
        let removed = if is_dir {
            std::fs::remove_dir_all(&entry_path)
        } else {
            std::fs::remove_file(&entry_path)
        };
        match removed {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(Error::io_at(&entry_path, err)),
        }
    }
    match std::fs::remove_dir(path) {
        // Not empty: the user's files stay, and the directory with them.
        Ok(()) | Err(_) => Ok(()),
    }
}

fn remove_file(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(Error::io_at(path, err)),
    }
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).map_err(|err| Error::io_at(from, err))
}

/// Copies the entries the engine owns in `from` (the part `part` of an index) into `to`;
/// with `durable`, each file synced, then each directory, so that the copy is durable
/// once this returns. A user's files in the part are not copied (the swap carries them
/// over).
pub(crate) fn copy_owned(from: &Path, to: &Path, part: &str, durable: bool) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|err| Error::io_at(to, err))?;
    for entry in std::fs::read_dir(from).map_err(|err| Error::io_at(from, err))? {
        let entry = entry.map_err(|err| Error::io_at(from, err))?;
        let path = entry.path();
        let is_dir = entry
            .file_type()
            .map_err(|err| Error::io_at(&path, err))?
            .is_dir();
        if !owns(part, &entry.file_name().to_string_lossy(), is_dir) {
            continue;
        }
        let target = to.join(entry.file_name());
        if is_dir {
            copy_all(&path, &target, durable)?;
        } else {
            copy_file(&path, &target, durable)?;
        }
    }
    if durable { sync_dir(to) } else { Ok(()) }
}

/// Copies the directory `from` and all it holds into `to` (with `durable`, synced).
pub(crate) fn copy_all(from: &Path, to: &Path, durable: bool) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|err| Error::io_at(to, err))?;
    for entry in std::fs::read_dir(from).map_err(|err| Error::io_at(from, err))? {
        let entry = entry.map_err(|err| Error::io_at(from, err))?;
        let path = entry.path();
        let target = to.join(entry.file_name());
        if entry
            .file_type()
            .map_err(|err| Error::io_at(&path, err))?
            .is_dir()
        {
            copy_all(&path, &target, durable)?;
        } else {
            copy_file(&path, &target, durable)?;
        }
    }
    if durable { sync_dir(to) } else { Ok(()) }
}

fn copy_file(from: &Path, to: &Path, durable: bool) -> Result<()> {
    std::fs::copy(from, to).map_err(|err| Error::io_at(from, err))?;
    if !durable {
        return Ok(());
    }
    std::fs::File::open(to)
        .and_then(|file| file.sync_all())
        .map_err(|err| Error::io_at(to, err))
}

/// Makes the entries of `dir` (renames, new files) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|err| Error::io_at(dir, err))
}

/// Whether a swap stopped half-way in the index in `dir` (the next open for writing
/// finishes it).
pub(crate) fn pending(dir: &Path) -> bool {
    exists(&dir.join(SCRATCH_DIR).join(JOURNAL))
}

/// Where a reader finds each part of the index in `dir`: each is the directory the part
/// is in (`root.join(part)` is the part). In place, unless a swap stopped half-way
/// waits for the next writer: then each part of the new index is wherever it is now,
/// in the staging directory until the swap moves it in place. The journal is written
/// once the new index is complete, so the new index is whole at every step; a part
/// moved while a reader reads it is read again (the reader's retry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Where `MANIFEST` is.
    pub(crate) manifest: PathBuf,
    /// Where `view/` is.
    pub(crate) view: PathBuf,
    /// Where `text/` is.
    pub(crate) text: PathBuf,
    /// Where `store/` is.
    pub(crate) store: PathBuf,
}

impl Layout {
    /// The parts of the index in `dir`, as they are now (see [`Layout`]).
    pub(crate) fn of(dir: &Path) -> Layout {
        let staging = std::fs::read(dir.join(SCRATCH_DIR).join(JOURNAL))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Journal>(&bytes).ok())
            .map(|journal| dir.join(SCRATCH_DIR).join(journal.op).join("index"));
        let root = |part: &str| match &staging {
            Some(staging) if exists(&staging.join(part)) => staging.clone(),
            _ => dir.to_path_buf(),
        };
        Layout {
            manifest: root(MANIFEST_FILE),
            view: root(VIEW_DIR),
            text: root(TEXT_DIR),
            store: root(STORE_DIR),
        }
    }
}

/// Whether `dir` holds an index: its store, or a swap of one under way.
pub(crate) fn holds_index(dir: &Path) -> bool {
    exists(&dir.join(STORE_DIR)) || pending(dir)
}

/// What a swap under way does, as its journal records it.
#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    /// The operation whose new index is swapped in (its staging is `.ruche/OP/index`).
    op: String,
    /// The name the old store is kept under beside the index (repair: `store.damaged`).
    keep_store: Option<String>,
}

/// A new index being built for the operation `op` in the scratch directory of the index
/// in `dir`. Dropped without [`Staging::swap`], it is removed (a process killed instead
/// leaves it to the next [`recover`]).
pub(crate) struct Staging {
    dir: PathBuf,
    op: &'static str,
    swapped: bool,
}

impl Staging {
    /// A new, empty staging directory for `op` (the caller holds the index's lock, and
    /// has run [`recover`]).
    pub(crate) fn new(dir: &Path, op: &'static str) -> Result<Staging> {
        let staging = Staging {
            dir: dir.to_path_buf(),
            op,
            swapped: false,
        };
        let path = staging.path();
        if exists(&path) {
            std::fs::remove_dir_all(&path).map_err(|err| Error::io_at(&path, err))?;
        }
        std::fs::create_dir_all(&path).map_err(|err| Error::io_at(&path, err))?;
        Ok(staging)
    }

    fn path(&self) -> PathBuf {
        self.dir.join(SCRATCH_DIR).join(self.op)
    }

    /// Where the new index is built.
    pub(crate) fn index(&self) -> PathBuf {
        self.path().join("index")
    }

    /// Scratch space of the operation beside the new index (removed with it).
    pub(crate) fn scratch(&self) -> PathBuf {
        self.path()
    }

    /// Puts the complete new index in place of the old one (the caller holds the index's
    /// lock, and every engine on the new index is closed). With `keep_store`, the old
    /// store is kept whole under that name in the index directory.
    pub(crate) fn swap(mut self, keep_store: Option<&str>) -> Result<()> {
        let index = self.index();
        // Each part made its own files durable; the directory entries of the parts too.
        sync_dir(&index)?;
        let journal = Journal {
            op: self.op.to_string(),
            keep_store: keep_store.map(str::to_string),
        };
        let scratch = self.dir.join(SCRATCH_DIR);
        let path = scratch.join(JOURNAL);
        let staged = scratch.join(format!("{JOURNAL}.tmp"));
        std::fs::write(
            &staged,
            serde_json::to_vec(&journal).expect("a journal serialises"),
        )
        .and_then(|()| std::fs::File::open(&staged)?.sync_all())
        .map_err(|err| Error::io_at(&staged, err))?;
        rename(&staged, &path)?;
        sync_dir(&scratch)?;
        crate::crash::point("swap:journal-written");
        self.swapped = true;
        complete(&self.dir, false)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.swapped {
            let _ = std::fs::remove_dir_all(self.path());
        }
    }
}

/// Finishes a swap a process was killed in, and removes what an interrupted operation
/// left in the scratch directory (the caller holds the index's lock). Without a
/// journal, nothing of the index is touched.
pub(crate) fn recover(dir: &Path) -> Result<()> {
    complete(dir, true)
}

/// Finishes the swap the journal records, if any (a `stopped` one, left by a process
/// killed in it, is logged), then removes the scratch directory.
fn complete(dir: &Path, stopped: bool) -> Result<()> {
    let scratch = dir.join(SCRATCH_DIR);
    if !exists(&scratch) {
        return Ok(());
    }
    let path = scratch.join(JOURNAL);
    match std::fs::read(&path) {
        Ok(bytes) => {
            let journal: Journal = serde_json::from_slice(&bytes)
                .map_err(|err| Error::corrupt(format!("{}: {err}", path.display())))?;
            if stopped {
                tracing::warn!(dir = %dir.display(), op = %journal.op, "finishing the swap of a new index that a stopped process left");
            }
            finish(dir, &journal)?;
            remove_file(&path)?;
            sync_dir(&scratch)?;
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(Error::io_at(&path, err)),
    }
    std::fs::remove_dir_all(&scratch).map_err(|err| Error::io_at(&scratch, err))?;
    sync_dir(dir)
}

/// Steps 3 and 4 of a swap, each repeatable: a process killed in them runs them again.
fn finish(dir: &Path, journal: &Journal) -> Result<()> {
    let scratch = dir.join(SCRATCH_DIR);
    let staging = scratch.join(&journal.op).join("index");
    let retired = scratch.join(RETIRED);
    std::fs::create_dir_all(&retired).map_err(|err| Error::io_at(&retired, err))?;
    for part in PARTS {
        let new = staging.join(part);
        if !exists(&new) {
            continue; // moved in already
        }
        let live = dir.join(part);
        let old = retired.join(part);
        if exists(&live) {
            if exists(&old) {
                return Err(Error::corrupt(format!(
                    "{} and {} both exist: move one of them away",
                    live.display(),
                    old.display()
                )));
            }
            rename(&live, &old)?;
            crate::crash::point("swap:retired");
        }
        rename(&new, &live)?;
        sync_dir(dir)?;
        crate::crash::point("swap:installed");
    }
    // The user's files in the old parts move to the new ones.
    for part in [STORE_DIR, TEXT_DIR, VIEW_DIR] {
        let old = retired.join(part);
        let Ok(entries) = std::fs::read_dir(&old) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if owns(part, &name.to_string_lossy(), is_dir) {
                continue;
            }
            let to = dir.join(part).join(&name);
            if exists(&to) {
                tracing::warn!(path = %entry.path().display(), "left in the old index's scratch: the new one has a file of that name");
                continue;
            }
            rename(&entry.path(), &to)?;
        }
    }
    if let Some(keep) = &journal.keep_store {
        let old = retired.join(STORE_DIR);
        let kept = dir.join(keep);
        if exists(&old) && !exists(&kept) {
            rename(&old, &kept)?;
            sync_dir(dir)?;
        }
    }
    crate::crash::point("swap:carried");
    for part in PARTS {
        remove_part(&retired.join(part), part)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owned_names_are_the_engines_only() {
        for (part, name, is_dir) in [
            (STORE_DIR, "db", false),
            (STORE_DIR, "conf", false),
            (STORE_DIR, "blobs", true),
            (STORE_DIR, "snap.00000000000A3F10", false),
            (STORE_DIR, "snap.00000000000A3F10.generating", false),
            (TEXT_DIR, "meta.json", false),
            (VIEW_DIR, "base-000000000003.rv", false),
            (VIEW_DIR, "part-000000000012.rv.tmp", false),
            (VIEW_DIR, "graph-chunk-000000000004.rv", false),
        ] {
            assert!(owns(part, name, is_dir), "{part}/{name}");
        }
        for (part, name, is_dir) in [
            (STORE_DIR, "notes.txt", false),
            (STORE_DIR, "db", true),
            (STORE_DIR, "snap.1", false),
            (STORE_DIR, "sub", true),
            (TEXT_DIR, "notes.txt", false),
            (VIEW_DIR, "notes.rv", false),
            (VIEW_DIR, "base-3.rv", false),
            (VIEW_DIR, "graph-cat-000000000004.rv", false),
            (VIEW_DIR, "base-000000000003.rv", true),
            ("elsewhere", "db", false),
        ] {
            assert!(!owns(part, name, is_dir), "{part}/{name}");
        }
    }

    /// A file tree as (relative path, content) pairs, directories as `None`.
    fn tree(dir: &Path) -> Vec<(String, Option<Vec<u8>>)> {
        fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Option<Vec<u8>>)>) {
            let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
            entries.sort_by_key(|e| e.file_name());
            for entry in entries {
                let rel = entry
                    .path()
                    .strip_prefix(root)
                    .unwrap()
                    .display()
                    .to_string();
                if entry.file_type().unwrap().is_dir() {
                    out.push((rel, None));
                    walk(root, &entry.path(), out);
                } else {
                    out.push((rel, Some(std::fs::read(entry.path()).unwrap())));
                }
            }
        }
        let mut out = Vec::new();
        walk(dir, dir, &mut out);
        out
    }

    fn write(path: &Path, content: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// An old index with the user's files among its own, and a complete new index in
    /// staging.
    fn old_and_new(dir: &Path) -> Staging {
        write(&dir.join("store/db"), "old db");
        write(&dir.join("store/notes.txt"), "user, in store");
        write(&dir.join("text/meta.json"), "old meta");
        write(&dir.join("view/base-000000000001.rv"), "old base");
        write(&dir.join("view/mine.rv"), "user, in view");
        write(&dir.join("MANIFEST"), "old manifest");
        write(&dir.join("notes.txt"), "user, top");
        write(&dir.join("sub/deeper.txt"), "user, sub");
        let staging = Staging::new(dir, "repair").unwrap();
        let new = staging.index();
        write(&new.join("store/db"), "new db");
        write(&new.join("text/meta.json"), "new meta");
        write(&new.join("view/base-000000000002.rv"), "new base");
        write(&new.join("MANIFEST"), "new manifest");
        write(&new.join("LOCK"), "");
        staging
    }

    fn expected_after() -> Vec<(String, Option<Vec<u8>>)> {
        let file = |p: &str, c: &str| (p.to_string(), Some(c.as_bytes().to_vec()));
        let dir = |p: &str| (p.to_string(), None);
        vec![
            file("MANIFEST", "new manifest"),
            file("notes.txt", "user, top"),
            dir("store"),
            file("store/db", "new db"),
            file("store/notes.txt", "user, in store"),
            dir("store.damaged"),
            file("store.damaged/db", "old db"),
            dir("sub"),
            file("sub/deeper.txt", "user, sub"),
            dir("text"),
            file("text/meta.json", "new meta"),
            dir("view"),
            file("view/base-000000000002.rv", "new base"),
            file("view/mine.rv", "user, in view"),
        ]
    }

    #[test]
    fn a_swap_replaces_the_parts_and_keeps_every_user_file() {
        let dir = tempfile::tempdir().unwrap();
        old_and_new(dir.path()).swap(Some("store.damaged")).unwrap();
        assert_eq!(tree(dir.path()), expected_after());
    }

    #[test]
    fn a_swap_stopped_after_any_step_is_finished_by_recover() {
        // Every prefix of the renames a swap makes, then `recover`: the same result.
        for stop_after in 0..=PARTS.len() {
            let dir = tempfile::tempdir().unwrap();
            let staging = old_and_new(dir.path());
            let journal = Journal {
                op: "repair".into(),
                keep_store: Some("store.damaged".into()),
            };
            let scratch = dir.path().join(SCRATCH_DIR);
            std::fs::write(scratch.join(JOURNAL), serde_json::to_vec(&journal).unwrap()).unwrap();
            std::fs::create_dir_all(scratch.join(RETIRED)).unwrap();
            for part in &PARTS[..stop_after] {
                std::fs::rename(dir.path().join(part), scratch.join(RETIRED).join(part)).unwrap();
                std::fs::rename(staging.index().join(part), dir.path().join(part)).unwrap();
            }
            std::mem::forget(staging); // killed: nothing cleans up
            recover(dir.path()).unwrap();
            assert_eq!(
                tree(dir.path()),
                expected_after(),
                "stopped after {stop_after}"
            );
            // Again: nothing left to do.
            recover(dir.path()).unwrap();
            assert_eq!(tree(dir.path()), expected_after());
        }
    }

    #[test]
    fn without_a_journal_the_old_index_stays_and_the_staging_goes() {
        let dir = tempfile::tempdir().unwrap();
        let staging = old_and_new(dir.path());
        let before: Vec<_> = tree(dir.path())
            .into_iter()
            .filter(|(p, _)| !p.starts_with(SCRATCH_DIR))
            .collect();
        std::mem::forget(staging); // killed before its journal
        recover(dir.path()).unwrap();
        assert_eq!(tree(dir.path()), before);
    }

    #[test]
    fn removing_a_part_leaves_the_users_files() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        write(&store.join("db"), "");
        write(&store.join("blobs/1"), "");
        write(&store.join("snap.0000000000000001"), "");
        write(&store.join("keep.txt"), "mine");
        remove_part(&store, STORE_DIR).unwrap();
        assert_eq!(
            tree(&store),
            vec![("keep.txt".to_string(), Some(b"mine".to_vec()))]
        );
        std::fs::remove_file(store.join("keep.txt")).unwrap();
        write(&store.join("db"), "");
        remove_part(&store, STORE_DIR).unwrap();
        assert!(!store.exists());
    }
}
