//! `MANIFEST`: what the index holds, recorded outside the store, so that a store that
//! lost data is found out instead of trusted.
//!
//! sled recovers from a damaged file by dropping what it cannot read: a flipped bit or a
//! truncation can make it open a store with fewer documents, or none, and no error. The
//! manifest records, after every commit, the sequence number of the last change, the live
//! counts per kind and a digest of the live versions (see `Catalog::digest`). On open the
//! store must agree: it may be ahead (a crash between the store's commit and the
//! manifest's), never behind or different at the same sequence number.
//!
//! The file is one line of JSON with a CRC-32 of its other fields, replaced atomically
//! (written beside, synced, renamed, directory synced).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Inner;
use crate::Kind;
use crate::local::store::Store;
use crate::local::store::view::ViewList;
use crate::{Error, ErrorKind, Result};

/// The file name, in the index directory.
pub(crate) const MANIFEST_FILE: &str = "MANIFEST";

/// The version of the manifest's own format: 4 also carries the text index's commit
/// readers open; 3 lists the files published for readers, which may have aligned
/// sections and a mapped base (`store::base`); 2, written by earlier versions, lists
/// files they all read (this version reads them all); 1 lists no published file. An
/// earlier version refuses a newer format with `IncompatibleFormat` instead of taking
/// the checksum, which covers the list, for damage.
const MANIFEST_FORMAT: u32 = 4;

/// What the store held after the last commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    /// The store's format version.
    pub(crate) store_format: u32,
    /// The sequence number of the last change committed.
    pub(crate) seq: u64,
    /// Live rules.
    pub(crate) rules: u64,
    /// Live chunks.
    pub(crate) chunks: u64,
    /// The catalog's digest of the live versions.
    pub(crate) digest: u64,
}

#[derive(Serialize, Deserialize)]
struct OnDisk {
    manifest_format: u32,
    #[serde(flatten)]
    manifest: Manifest,
    /// The files published for readers (absent in indexes of earlier versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    view: Option<ViewList>,
    crc32: u32,
}

/// The CRC-32 of the manifest's fields (and of the view's, when there is one: a manifest
/// without a view has the checksum earlier versions wrote).
fn crc(manifest: &Manifest, view: Option<&ViewList>) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&serde_json::to_vec(manifest).expect("a manifest serialises"));
    if let Some(view) = view {
        hasher.update(&serde_json::to_vec(view).expect("a view list serialises"));
    }
    hasher.finalize()
}

pub(crate) fn path(dir: &Path) -> PathBuf {
    dir.join(MANIFEST_FILE)
}

/// Reads the manifest of the index in `dir`; `None` when there is none (an index made
/// before manifests existed, or a crash before the first was written).
pub(crate) fn read(dir: &Path) -> Result<Option<Manifest>> {
    Ok(read_with_view(dir)?.map(|(manifest, _)| manifest))
}

/// Reads the manifest of the index in `dir` with the published files it lists.
pub(crate) fn read_with_view(dir: &Path) -> Result<Option<(Manifest, Option<ViewList>)>> {
    let path = path(dir);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(Error::io_at(&path, err)),
    };
    let damaged = |why: String| Error::corrupt(format!("{}: {why}", path.display()));
    let on_disk: OnDisk =
        serde_json::from_slice(&bytes).map_err(|err| damaged(format!("unreadable ({err})")))?;
    let readable = match on_disk.manifest_format {
        1 => on_disk.view.is_none(),
        2 | 3 | MANIFEST_FORMAT => true,
        _ => false,
    };
    if !readable {
        return Err(Error::new(ErrorKind::IncompatibleFormat {
            found: on_disk.manifest_format,
            expected: MANIFEST_FORMAT,
        }));
    }
    if crc(&on_disk.manifest, on_disk.view.as_ref()) != on_disk.crc32 {
        return Err(damaged("checksum mismatch".to_string()));
    }
    Ok(Some((on_disk.manifest, on_disk.view)))
}

/// Replaces the manifest of the index in `dir` atomically: written beside, synced,
/// renamed, the directory synced. On failure (a full disk) the file written beside is
/// removed and the manifest is the one before.
pub(crate) fn write(dir: &Path, manifest: &Manifest, view: Option<&ViewList>) -> Result<()> {
    let path = path(dir);
    let staging = dir.join(format!("{MANIFEST_FILE}.tmp"));
    let manifest_format = match view {
        Some(view) if view.text.is_some() => MANIFEST_FORMAT,
        Some(_) => 3,
        None => 1,
    };
    let on_disk = OnDisk {
        manifest_format,
        manifest: *manifest,
        view: view.cloned(),
        crc32: crc(manifest, view),
    };
    let mut bytes = serde_json::to_vec(&on_disk).expect("a manifest serialises");
    bytes.push(b'\n');
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |err| Error::io_at(&p, err)
    };
    let staged = (|| {
        use std::io::Write;
        let mut file = std::fs::File::create(&staging).map_err(io(&staging))?;
        file.write_all(&bytes).map_err(io(&staging))?;
        file.sync_all().map_err(io(&staging))
    })();
    if let Err(err) = staged {
        let _ = std::fs::remove_file(&staging);
        return Err(err);
    }
    crate::crash::point("manifest:staged");
    std::fs::rename(&staging, &path).map_err(io(&path))?;
    crate::crash::point("manifest:renamed");
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))?;
    Ok(())
}

/// Checks the store's state (`found`) against the manifest (`recorded`): the store may be
/// ahead, never behind, and at the same sequence number it must hold the same documents.
pub(crate) fn verify(recorded: &Manifest, found: &Manifest) -> Result<()> {
    if found.seq < recorded.seq {
        return Err(Error::corrupt(format!(
            "store/db lost committed changes: the manifest records change {} ({} rules, {} \
             chunks), the store ends at change {} ({} rules, {} chunks); run `ruche check` \
             and `ruche repair`, or restore a backup",
            recorded.seq, recorded.rules, recorded.chunks, found.seq, found.rules, found.chunks
        )));
    }
    if found.seq == recorded.seq
        && (found.rules, found.chunks, found.digest)
            != (recorded.rules, recorded.chunks, recorded.digest)
    {
        return Err(Error::corrupt(format!(
            "store/db lost or altered documents: the manifest records {} rules and {} chunks \
             at change {}, the store holds {} rules and {} chunks; run `ruche check` and \
             `ruche repair`, or restore a backup",
            recorded.rules, recorded.chunks, recorded.seq, found.rules, found.chunks
        )));
    }
    if found.store_format != recorded.store_format {
        return Err(Error::new(ErrorKind::IncompatibleFormat {
            found: found.store_format,
            expected: recorded.store_format,
        }));
    }
    Ok(())
}

/// What the store and the catalog hold now, as the manifest records it.
pub(crate) fn manifest_of(store: &Store, catalog: &crate::local::catalog::Catalog) -> Manifest {
    Manifest {
        store_format: crate::local::store::FORMAT_VERSION,
        seq: store.meta().last_seq,
        rules: catalog.count(Kind::Rule) as u64,
        chunks: catalog.count(Kind::Chunk) as u64,
        digest: catalog.digest(),
    }
}

impl Inner {
    /// Records the committed state in the manifest, with the published files `view`.
    pub(crate) fn write_manifest_with(&self, view: Option<&ViewList>) -> Result<()> {
        let found = manifest_of(&self.local.store, &self.local.snapshot());
        write(&self.dir, &found, view)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(seq: u64, rules: u64, digest: u64) -> Manifest {
        Manifest {
            store_format: 1,
            seq,
            rules,
            chunks: 3,
            digest,
        }
    }

    #[test]
    fn round_trips_and_detects_damage() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), None);
        let m = manifest(7, 2, 0xdead_beef);
        write(dir.path(), &m, None).unwrap();
        assert_eq!(read(dir.path()).unwrap(), Some(m));
        let view = ViewList {
            seq: 7,
            next_file: 3,
            ..ViewList::default()
        };
        write(dir.path(), &m, Some(&view)).unwrap();
        assert_eq!(read_with_view(dir.path()).unwrap(), Some((m, Some(view))));
        write(dir.path(), &m, None).unwrap();
        let text = std::fs::read_to_string(path(dir.path())).unwrap();
        std::fs::write(path(dir.path()), text.replace("\"seq\":7", "\"seq\":8")).unwrap();
        let err = read(dir.path()).unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");
        std::fs::write(path(dir.path()), &text[..text.len() / 2]).unwrap();
        assert!(matches!(
            read(dir.path()).unwrap_err().kind(),
            ErrorKind::Corrupt { .. }
        ));
    }

    #[test]
    fn the_store_may_be_ahead_never_behind_or_different() {
        let recorded = manifest(7, 2, 1);
        verify(&recorded, &recorded).unwrap();
        verify(&recorded, &manifest(9, 5, 4)).unwrap();
        let behind = verify(&recorded, &manifest(3, 2, 1)).unwrap_err();
        assert!(
            behind.to_string().contains("lost committed changes"),
            "{behind}"
        );
        let different = verify(&recorded, &manifest(7, 1, 1)).unwrap_err();
        assert!(
            different.to_string().contains("lost or altered"),
            "{different}"
        );
        assert!(verify(&recorded, &manifest(7, 2, 2)).is_err());
    }
}
