//! The published view's file container: checksummed files of sections, each aligned so
//! that a mapped file's numbers are read in place, and the header every part and base
//! starts with. What the files hold (parts, bases, graphs) is the view's
//! ([`super::view`]) and the base's ([`super::base`]).
//!
//! ```text
//! file    = "RUCHEVW2" [sections: u32 LE] ([length: u64 LE] [zeros] [bytes])* [crc32 of all before: u32 LE]
//!           (each section's bytes start at a multiple of 64 bytes, so that a mapped file
//!           can be read as rows of numbers in place; "RUCHEVW1", of earlier versions, has
//!           no zeros)
//! ```

use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::feedback::FeedbackEntry;
use crate::{Error, Result};

use super::block::{self, BlockEntry};
use super::meta::Meta;

/// The directory of the published files, in the index directory.
pub(crate) const VIEW_DIR: &str = "view";

pub(crate) const MAGIC_V1: &[u8; 8] = b"RUCHEVW1";

pub(crate) const MAGIC: &[u8; 8] = b"RUCHEVW2";

/// Where a section's bytes start in a file of [`MAGIC`]: at a multiple of this.
pub(crate) const ALIGN: usize = 64;

/// The suffix of a published file; `.tmp` is added while one is written.
pub(crate) const SUFFIX: &str = ".rv";

/// One published file as the manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ViewFile {
    /// The file name, in `view/`.
    pub(crate) name: String,
    /// Its length in bytes.
    pub(crate) len: u64,
    /// The CRC-32 of the file without its trailer (the trailer holds it too), or of the
    /// whole of a raw file.
    pub(crate) crc32: u32,
    /// A file as another library wrote it (no header, no trailer).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) raw: bool,
    /// A base laid out to be mapped ([`super::base`]); a base of earlier versions is a
    /// part.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) mapped: bool,
}

/// What a part says besides its documents.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct PartHeader {
    /// The meta values after the part.
    pub(crate) meta: Option<Meta>,
    /// Every feedback window after the part.
    pub(crate) feedback: Vec<(String, Vec<FeedbackEntry>)>,
    /// Versions removed (never ones the same part writes).
    pub(crate) removed: Vec<u64>,
    /// The entity lists of the versions written.
    pub(crate) entities: Vec<(u64, Vec<String>)>,
}

/// One section of a file, mapped.
pub(crate) struct MappedSection {
    pub(crate) sections: Sections,
    pub(crate) index: usize,
}

impl AsRef<[u8]> for MappedSection {
    fn as_ref(&self) -> &[u8] {
        self.sections.get(self.index)
    }
}

/// The sections of a file, mapped whole.
pub(crate) struct Sections {
    pub(crate) bytes: memmap2::Mmap,
    pub(crate) ranges: Vec<Range<usize>>,
}

impl Sections {
    pub(crate) fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Checks the file's checksum (the one the manifest lists as `file`'s).
    pub(crate) fn verify(&self, file: &ViewFile, path: &Path) -> Result<()> {
        checksum(&self.bytes, file, path)
    }

    pub(crate) fn get(&self, i: usize) -> &[u8] {
        &self.bytes[self.ranges[i].clone()]
    }
}

/// The path of a published file.
pub(crate) fn path_of(dir: &Path, file: &ViewFile) -> PathBuf {
    dir.join(VIEW_DIR).join(&file.name)
}

/// Writes `sections` as the published file `name` in `dir/view/`: beside, synced, then
/// renamed and the directory synced, so that the file is complete or absent.
pub(crate) fn write_file(dir: &Path, name: &str, sections: &[&[u8]]) -> Result<ViewFile> {
    let sections: Vec<Section<'_>> = sections.iter().map(|s| Section::Bytes(s)).collect();
    write_sections(dir, name, &sections)
}

/// A section of a published file: bytes, entries encoded as they are written, or
/// numbers written little-endian.
pub(crate) enum Section<'a> {
    Bytes(&'a [u8]),
    Entries(&'a [BlockEntry]),
    F32s(&'a [f32]),
    U16s(&'a [u16]),
}

impl Section<'_> {
    fn len(&self) -> usize {
        match self {
            Section::Bytes(bytes) => bytes.len(),
            Section::Entries(entries) => block::encoded_size(entries.iter()),
            Section::F32s(values) => values.len() * 4,
            Section::U16s(values) => values.len() * 2,
        }
    }

    /// Hands the section's bytes to `put`, piece by piece.
    fn write(&self, put: &mut dyn FnMut(&[u8]) -> std::io::Result<()>) -> std::io::Result<()> {
        match self {
            Section::Bytes(bytes) => put(bytes),
            Section::Entries(entries) => block::encode_into(entries.iter(), put),
            Section::F32s(values) => put_le(values, f32::to_le_bytes, put),
            Section::U16s(values) => put_le(values, u16::to_le_bytes, put),
        }
    }
}

/// Hands `values` to `put` as little-endian bytes, a few thousand at a time.
pub(crate) fn put_le<T: Copy, const N: usize>(
    values: &[T],
    to_le: fn(T) -> [u8; N],
    put: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    const PIECE: usize = 4_096;
    let mut buffer = Vec::with_capacity(PIECE * N);
    for piece in values.chunks(PIECE) {
        buffer.clear();
        buffer.extend(piece.iter().flat_map(|&x| to_le(x)));
        put(&buffer)?;
    }
    Ok(())
}

/// As [`write_file`], the sections streamed to the file.
pub(crate) fn write_sections(dir: &Path, name: &str, sections: &[Section<'_>]) -> Result<ViewFile> {
    let view_dir = dir.join(VIEW_DIR);
    std::fs::create_dir_all(&view_dir).map_err(|err| Error::io_at(&view_dir, err))?;
    let path = view_dir.join(name);
    let staging = view_dir.join(format!("{name}.tmp"));
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |err| Error::io_at(&p, err)
    };
    let mut hasher = crc32fast::Hasher::new();
    let mut len = 0u64;
    let file = std::fs::File::create(&staging).map_err(io(&staging))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    {
        let mut put = |bytes: &[u8]| -> std::io::Result<()> {
            hasher.update(bytes);
            len += bytes.len() as u64;
            out.write_all(bytes)
        };
        put(MAGIC).map_err(io(&staging))?;
        put(&(sections.len() as u32).to_le_bytes()).map_err(io(&staging))?;
        // Where the next byte goes (what `put` counts in `len`).
        let mut at = MAGIC.len() + 4;
        for section in sections {
            put(&(section.len() as u64).to_le_bytes()).map_err(io(&staging))?;
            let zeros = padding(at + 8);
            put(&[0u8; ALIGN][..zeros]).map_err(io(&staging))?;
            section.write(&mut put).map_err(io(&staging))?;
            at += 8 + zeros + section.len();
        }
    }
    let crc32 = hasher.finalize();
    {
        out.write_all(&crc32.to_le_bytes()).map_err(io(&staging))?;
        len += 4;
        let file = out
            .into_inner()
            .map_err(|err| io(&staging)(err.into_error()))?;
        file.sync_all().map_err(io(&staging))?;
    }
    std::fs::rename(&staging, &path).map_err(io(&path))?;
    sync_dir(&view_dir)?;
    Ok(ViewFile {
        name: name.to_string(),
        len,
        crc32,
        raw: false,
        mapped: false,
    })
}

/// The zeros that bring `at` to a multiple of [`ALIGN`].
pub(crate) fn padding(at: usize) -> usize {
    (ALIGN - at % ALIGN) % ALIGN
}

pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|err| Error::io_at(dir, err))
}

/// Reads and verifies a published file: `None` when it is gone (a writer replaced it
/// after the manifest that listed it was read).
pub(crate) fn read_file(dir: &Path, file: &ViewFile) -> Result<Option<Sections>> {
    Ok(open_file(dir, file, true)?.map(|(_, sections)| sections))
}

/// [`read_file`], keeping the file open: its content stays readable even once a writer
/// removes it.
/// Without `verify`, the checksum is left to [`Sections::verify`]: the sections are
/// only parsed, with every bound checked, and must not be trusted until then.
pub(crate) fn open_file(
    dir: &Path,
    file: &ViewFile,
    verify: bool,
) -> Result<Option<(std::fs::File, Sections)>> {
    let path = path_of(dir, file);
    let handle = match std::fs::File::open(&path) {
        Ok(handle) => handle,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(Error::io_at(&path, err)),
    };
    let damaged = |why: &str| Error::corrupt(format!("{}: {why}", path.display()));
    let len = handle
        .metadata()
        .map_err(|err| Error::io_at(&path, err))?
        .len();
    if len != file.len {
        return Err(damaged(&format!(
            "{len} bytes, the manifest records {}",
            file.len
        )));
    }
    if len == 0 {
        return Err(damaged("empty"));
    }
    let bytes = map(&handle, &path)?;
    if file.raw {
        let whole = 0..bytes.len();
        let sections = Sections {
            bytes,
            ranges: vec![whole],
        };
        sections.verify(file, &path)?;
        return Ok(Some((handle, sections)));
    }
    let body_len = bytes
        .len()
        .checked_sub(4)
        .ok_or_else(|| damaged("truncated"))?;
    if verify {
        checksum(&bytes, file, &path)?;
    }
    let aligned = bytes.starts_with(MAGIC);
    if !aligned && !bytes.starts_with(MAGIC_V1) {
        return Err(damaged("not a published file of this version"));
    }
    let mut at = MAGIC.len();
    let mut take = |n: usize| -> Result<Range<usize>> {
        let end = at
            .checked_add(n)
            .filter(|&end| end <= body_len)
            .ok_or_else(|| damaged("truncated"))?;
        let range = at..end;
        at = end;
        Ok(range)
    };
    let count = u32::from_le_bytes(bytes[take(4)?].try_into().expect("4 bytes")) as usize;
    let mut ranges = Vec::with_capacity(count.min(64));
    for _ in 0..count {
        let length = take(8)?;
        let len = u64::from_le_bytes(bytes[length.clone()].try_into().expect("8 bytes"));
        if aligned {
            let zeros = take(padding(length.end))?;
            if bytes[zeros].iter().any(|&b| b != 0) {
                return Err(damaged("bad padding"));
            }
        }
        ranges.push(take(
            usize::try_from(len).map_err(|_| damaged("truncated"))?,
        )?);
    }
    if at != body_len {
        return Err(damaged("trailing bytes"));
    }
    Ok(Some((handle, Sections { bytes, ranges })))
}

/// Checks the checksum of `bytes`, the published file `file`.
pub(crate) fn checksum(bytes: &[u8], file: &ViewFile, path: &Path) -> Result<()> {
    let mismatch = || Error::corrupt(format!("{}: checksum mismatch", path.display()));
    if file.raw {
        return if crc32fast::hash(bytes) == file.crc32 {
            Ok(())
        } else {
            Err(mismatch())
        };
    }
    let body_len = bytes.len().checked_sub(4).ok_or_else(mismatch)?;
    let trailer = u32::from_le_bytes(bytes[body_len..].try_into().expect("4 bytes"));
    let crc = crc32fast::hash(&bytes[..body_len]);
    if crc != file.crc32 || crc != trailer {
        return Err(mismatch());
    }
    Ok(())
}

/// Maps a published file whole (its pages come in as its checksum is computed: mapping
/// them all ahead costs more than the faults, 100,000 chunks' base 20 ms).
pub(crate) fn map(handle: &std::fs::File, path: &Path) -> Result<memmap2::Mmap> {
    // SAFETY: a published file is never written after its rename into `view/` (a writer
    // removes it, which leaves a mapping intact, and never truncates it), so the mapped
    // bytes cannot change under the reader; its length is checked by the caller.
    unsafe { memmap2::MmapOptions::new().map(handle) }.map_err(|err| Error::io_at(path, err))
}
