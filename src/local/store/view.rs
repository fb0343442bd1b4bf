//! The published view: immutable, checksummed files that readers open instead of sled.
//!
//! sled lets one process at a time open a store, so a process that only reads (a search
//! from the command line while an import runs, a second agent on the same index) cannot
//! use it. At every commit the writer publishes, beside the store, a *part*: the commit's
//! changes (each version written, with its vectors as stored and its entity list, and
//! each version removed) with the index's meta values and feedback windows. A *base*
//! holds every live document. Graph checkpoints are published as files too. `MANIFEST`
//! lists the files with their lengths and CRC-32s ([`ViewList`]); a file is written
//! beside, synced and renamed into `view/`, never changed afterwards, and removed only
//! once no manifest lists it. A reader reads the manifest, then the files it lists,
//! and sees exactly the commit the manifest records.
//!
//! Parts are merged as they pile up (the last two while the last is at least half the
//! size of the one before, so a run of small commits leaves a few files, not one per
//! commit), and a new base is written from the store when the parts outweigh half of
//! the base: every byte written is rewritten a bounded number of times.
//!
//! ```text
//! file    = the container of [`super::file`]
//! part    = section 0: bincode PartHeader, section 1: entries in the block encoding
//! base    = a part (written by earlier versions), or the sections of [`super::base`]
//! graph   = section 0: the checkpoint's manifest, section 1: the graph's edges
//!           ([`crate::local::hnsw::FlatGraph`]; readers search them over their own vectors),
//!           section 2: its nodes' vectors in 8 bits ([`crate::local::hnsw::NodeCodes`], which
//!           the walk reads; earlier versions wrote no section 2, and readers then make
//!           the codes from their vectors).
//!           Earlier versions published hnsw_rs's dump instead, raw, beside a graph file
//!           of one section (NAME.hnsw.graph, NAME.hnsw.data): still read.
//! ```

use super::base::MappedBase;
use super::block::{self, BlockEntry};
use super::file::{MappedSection, SUFFIX, map, open_file};
pub(crate) use super::file::{
    PartHeader, Section, Sections, VIEW_DIR, ViewFile, path_of, read_file, write_file,
    write_sections,
};
use super::meta::Meta;
use crate::feedback::FeedbackEntry;
use crate::model::id::DocId;
use crate::{Error, Kind, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The suffixes of a published graph's raw files (`NAME` + suffix, as hnsw_rs names them).
pub(crate) const RAW_GRAPH: &str = ".hnsw.graph";

pub(crate) const RAW_DATA: &str = ".hnsw.data";

/// A published graph, as a reader finds it.
pub(crate) enum PublishedGraph {
    /// The checkpoint's manifest and the graph's edges (what writers publish), and its
    /// nodes' codes (which earlier versions did not publish).
    Flat {
        manifest: Vec<u8>,
        flat: crate::local::hnsw::FlatGraph,
        codes: Option<crate::local::hnsw::NodeCodes>,
    },
    /// The checkpoint's manifest, and where hnsw_rs's dump lies (`dir/basename.hnsw.*`),
    /// as earlier versions published it.
    Raw {
        manifest: Vec<u8>,
        dir: PathBuf,
        basename: String,
    },
}

/// A published graph checkpoint: a file of its manifest and its edges (earlier
/// versions: of its manifest alone, with the files hnsw_rs dumped beside it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ViewGraph {
    /// The checkpoint's manifest (`NAME.rv`).
    pub(crate) manifest: ViewFile,
    /// Empty, or (earlier versions) `NAME.hnsw.graph` and `NAME.hnsw.data`, raw.
    pub(crate) files: Vec<ViewFile>,
}

impl ViewGraph {
    /// The name hnsw_rs knows the files by (`NAME`).
    pub(crate) fn basename(&self) -> &str {
        self.manifest
            .name
            .strip_suffix(SUFFIX)
            .unwrap_or(&self.manifest.name)
    }
}

/// The published files of one committed state, as the manifest lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ViewList {
    /// The sequence number of the last change the base and parts include.
    pub(crate) seq: u64,
    /// Every live document at some earlier commit.
    pub(crate) base: Option<ViewFile>,
    /// The changes since the base, oldest first.
    pub(crate) parts: Vec<ViewFile>,
    /// Each kind's graph checkpoint, by [`Kind::index`].
    pub(crate) graphs: Vec<Option<ViewGraph>>,
    /// Each kind's graph checkpoint before, kept one more generation: a reader checks a
    /// graph's files, then hnsw_rs opens them by name, so they must outlive the next
    /// publish.
    #[serde(default)]
    pub(crate) retired_graphs: Vec<Option<ViewGraph>>,
    /// The number the next file's name takes.
    pub(crate) next_file: u64,
    /// The text index's commit of this state, as readers open it: a copy of its
    /// `meta.json` (absent in manifests of earlier versions: readers then open the
    /// text index's own `meta.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) text: Option<String>,
}

impl ViewList {
    /// Every file the list names.
    pub(crate) fn files(&self) -> impl Iterator<Item = &ViewFile> {
        self.base.iter().chain(&self.parts).chain(
            self.graphs
                .iter()
                .chain(&self.retired_graphs)
                .flatten()
                .flat_map(|graph| std::iter::once(&graph.manifest).chain(&graph.files)),
        )
    }

    /// A new file name, never used before in this index.
    pub(crate) fn new_name(&mut self, what: &str) -> String {
        let n = self.next_file;
        self.next_file += 1;
        format!("{what}-{n:012}{SUFFIX}")
    }

    /// The graph checkpoint of `kind`, if one is published.
    pub(crate) fn graph(&self, kind: Kind) -> Option<&ViewGraph> {
        self.graphs.get(kind.index()).and_then(Option::as_ref)
    }

    pub(crate) fn set_graph(&mut self, kind: Kind, file: ViewGraph) {
        if self.graphs.len() < Kind::COUNT {
            self.graphs.resize(Kind::COUNT, None);
        }
        if self.retired_graphs.len() < Kind::COUNT {
            self.retired_graphs.resize(Kind::COUNT, None);
        }
        self.retired_graphs[kind.index()] = self.graphs[kind.index()].replace(file);
    }

    /// The bytes of the parts.
    pub(crate) fn parts_len(&self) -> u64 {
        self.parts.iter().map(|f| f.len).sum()
    }
}

/// A part (or a base: a part that removes nothing, applied to nothing).
#[derive(Debug, Clone, Default)]
pub(crate) struct Part {
    pub(crate) header: PartHeader,
    /// Versions written, with their records and vectors as the store holds them.
    pub(crate) written: Vec<BlockEntry>,
}

impl Part {
    /// `self` followed by `later`, as one part. `DocId`s are never reused, so a version
    /// that `later` removes is either written by `self` (both go) or older (the removal
    /// stays).
    pub(crate) fn merge(self, later: Part) -> Part {
        let removed_later: HashSet<u64> = later.header.removed.iter().copied().collect();
        let written_here: HashSet<u64> = self.written.iter().map(|e| e.doc.as_u64()).collect();
        let mut written: Vec<BlockEntry> = self
            .written
            .into_iter()
            .filter(|e| !removed_later.contains(&e.doc.as_u64()))
            .collect();
        written.extend(later.written);
        let mut entities: Vec<(u64, Vec<String>)> = self
            .header
            .entities
            .into_iter()
            .filter(|(doc, _)| !removed_later.contains(doc))
            .collect();
        entities.extend(later.header.entities);
        let mut removed = self.header.removed;
        removed.extend(
            later
                .header
                .removed
                .into_iter()
                .filter(|doc| !written_here.contains(doc)),
        );
        Part {
            header: PartHeader {
                meta: later.header.meta.or(self.header.meta),
                feedback: later.header.feedback,
                removed,
                entities,
            },
            written,
        }
    }

    /// The first section of a part's file (the second is its entries' block encoding).
    pub(crate) fn encode_header(&self) -> Vec<u8> {
        bincode::serialize(&self.header).expect("a part header serialises")
    }

    fn decode(sections: &Sections, path: &Path) -> Result<Part> {
        let what = format!("{}: published part", path.display());
        if sections.len() != 2 {
            return Err(Error::corrupt(what));
        }
        let header: PartHeader = bincode::deserialize(sections.get(0))
            .map_err(|err| Error::corrupt(format!("{what}: {err}")))?;
        let written = block::decode_list(sections.get(1), &what)?;
        Ok(Part { header, written })
    }
}

/// Reads a published part, or a base as a part (`None` when the file is gone): a mapped
/// base's documents are copied out of it, with their vectors, in parallel. The checksum
/// is verified first either way.
pub(crate) fn read_part(dir: &Path, file: &ViewFile) -> Result<Option<Part>> {
    use rayon::prelude::*;
    let Some(sections) = read_file(dir, file)? else {
        return Ok(None);
    };
    let path = path_of(dir, file);
    if !super::base::is_mapped_base(&sections) {
        return Part::decode(&sections, &path).map(Some);
    }
    let mut base = MappedBase::load(sections, &path)?;
    let written = (0..base.len())
        .into_par_iter()
        .map(|i| base.block_entry(&base.record(i)))
        .collect::<Result<Vec<_>>>()?;
    let entities = base.take_entities();
    let header = PartHeader {
        entities,
        ..base.header().clone()
    };
    Ok(Some(Part { header, written }))
}

/// Removes every file of `dir/view/` the list does not name (earlier versions, and
/// files a writer stopped half-way through).
pub(crate) fn remove_unlisted(dir: &Path, list: &ViewList) {
    let view_dir = dir.join(VIEW_DIR);
    let Ok(entries) = std::fs::read_dir(&view_dir) else {
        return;
    };
    let listed: HashSet<&str> = list.files().map(|f| f.name.as_str()).collect();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if is_published_name(&name)
            && entry.file_type().is_ok_and(|t| t.is_file())
            && !listed.contains(name.as_ref())
            && let Err(err) = std::fs::remove_file(entry.path())
        {
            tracing::warn!(path = %entry.path().display(), error = %err, "could not remove an old published file");
        }
    }
}

/// Whether `name` is a file a writer publishes in `view/` (or writes beside one before
/// its rename): `WHAT-NNNNNNNNNNNN` (a base, a part, a graph of a kind, twelve digits)
/// with one of the published suffixes, and `.tmp` while it is written. Only such files
/// are ever removed from `view/`.
pub(crate) fn is_published_name(name: &str) -> bool {
    let name = name.strip_suffix(".tmp").unwrap_or(name);
    let Some(stem) = [SUFFIX, RAW_GRAPH, RAW_DATA]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
    else {
        return false;
    };
    let Some((what, number)) = stem.rsplit_once('-') else {
        return false;
    };
    let known = matches!(what, "base" | "part")
        || what
            .strip_prefix("graph-")
            .is_some_and(|kind| kind.parse::<Kind>().is_ok());
    known && number.len() == 12 && number.bytes().all(|b| b.is_ascii_digit())
}

/// The number after the highest a file in `dir/view/` carries: names taken from it on
/// were never used, even when the list that named the files was lost.
pub(crate) fn next_free_number(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir.join(VIEW_DIR)) else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let stem = name.split('.').next()?;
            stem.rsplit('-').next()?.parse::<u64>().ok()
        })
        .map(|n| n + 1)
        .max()
        .unwrap_or(0)
}

/// The committed state as a reader sees it: what the published files of one manifest
/// hold.
///
/// A mapped base (see [`super::base`]) stays mapped: its table, ids and rows are read in
/// place, its documents decoded when asked for. The documents of the parts (and of a
/// base of earlier versions) are not copied out of their files either: each live version
/// is a span of the file that holds it. Those files, mapped whole at open (their
/// checksums are verified), stay mapped until [`Published::release`] (once the catalog
/// is built); a document asked for afterwards is read from the files kept open.
pub(crate) struct Published {
    pub(crate) dir: PathBuf,
    pub(crate) list: ViewList,
    pub(crate) meta: Meta,
    /// The entity lists of the live documents, until the catalog takes them
    /// ([`Published::take_entities`]).
    entities: std::sync::Mutex<rustc_hash::FxHashMap<DocId, Vec<String>>>,
    pub(crate) feedback: HashMap<String, Vec<FeedbackEntry>>,
    /// The base, when it is a mapped one.
    base: Option<Arc<MappedBase>>,
    /// The mapped base's checksum, being computed (see [`Published::verified`]).
    checking: std::sync::Mutex<Option<std::thread::JoinHandle<Result<()>>>>,
    /// The mapped base's entity lists (in `DocId` order), until the catalog takes them.
    base_entities: std::sync::Mutex<Vec<(u64, Vec<String>)>>,
    /// The documents of the mapped base that the parts removed.
    removed_from_base: rustc_hash::FxHashSet<DocId>,
    /// Each other live version: its file (an index into `files`) and its entry's span
    /// there.
    docs: BTreeMap<DocId, (usize, usize, usize)>,
    /// The files of `docs`, kept open, with their paths and lengths.
    files: Vec<(std::sync::Mutex<std::fs::File>, PathBuf, u64)>,
    bytes: std::sync::Mutex<Option<Arc<Vec<memmap2::Mmap>>>>,
}

/// Where a live version is, for [`Published::docs`].
#[derive(Clone, Copy)]
enum Located {
    /// Record `i` of the mapped base.
    Base(usize),
    /// A span of one of the other files.
    Span(usize, usize, usize),
}

impl Published {
    /// Reads the base and parts `list` names: `None` when one is gone (a writer
    /// published a newer state meanwhile: read the manifest again).
    pub(crate) fn load(dir: &Path, list: &ViewList) -> Result<Option<Published>> {
        Published::load_files(dir, list, true)
    }

    /// What the base and parts `list` names hold, whatever change they end at (a repair
    /// salvages from a prefix of them when a later part is damaged).
    pub(crate) fn load_prefix(dir: &Path, list: &ViewList) -> Result<Option<Published>> {
        Published::load_files(dir, list, false)
    }

    fn load_files(dir: &Path, list: &ViewList, check_seq: bool) -> Result<Option<Published>> {
        use rayon::prelude::*;
        let files: Vec<&ViewFile> = list.base.iter().chain(&list.parts).collect();
        // A mapped base's checksum (hundreds of megabytes) is computed beside the
        // catalog's building ([`Published::verified`]), the others' now.
        let opened: Vec<Option<(std::fs::File, Sections)>> = files
            .par_iter()
            .map(|file| open_file(dir, file, !file.mapped))
            .collect::<Result<_>>()?;
        let Some(mut opened) = opened.into_iter().collect::<Option<Vec<_>>>() else {
            return Ok(None);
        };
        let mut files = files;
        let mut meta = None;
        let mut feedback = Vec::new();
        let mut entities = rustc_hash::FxHashMap::default();
        let mut base = None;
        let mut base_entities = Vec::new();
        let mut checking = None;
        if list.base.as_ref().is_some_and(|file| file.mapped) {
            let (_, sections) = opened.remove(0);
            let file = files.remove(0);
            let path = path_of(dir, file);
            let mut mapped = MappedBase::load(sections, &path)?;
            base_entities = mapped.take_entities();
            meta = mapped.header().meta.clone();
            feedback = mapped.header().feedback.clone();
            let mapped = Arc::new(mapped);
            let (checked, file) = (Arc::clone(&mapped), file.clone());
            checking = Some(
                std::thread::Builder::new()
                    .name("ruche-checksum".to_string())
                    .spawn(move || checked.verify_checksum(&file, &path))
                    .map_err(Error::from)?,
            );
            base = Some(mapped);
        }
        let mut docs = BTreeMap::new();
        let mut removed_from_base = rustc_hash::FxHashSet::default();
        let mut handles = Vec::with_capacity(opened.len());
        let mut buffers = Vec::with_capacity(opened.len());
        for (index, ((handle, sections), file)) in opened.into_iter().zip(&files).enumerate() {
            let path = path_of(dir, file);
            let what = format!("{}: published part", path.display());
            if sections.len() != 2 {
                return Err(Error::corrupt(what));
            }
            let header: PartHeader = bincode::deserialize(sections.get(0))
                .map_err(|err| Error::corrupt(format!("{what}: {err}")))?;
            let offset = sections.ranges[1].start;
            let spans = block::spans(sections.get(1), &what)?;
            for doc in header.removed {
                let doc = DocId::new(doc);
                if docs.remove(&doc).is_none() {
                    removed_from_base.insert(doc);
                }
                entities.remove(&doc);
            }
            for (doc, start, end) in spans {
                docs.insert(doc, (index, offset + start, offset + end));
            }
            for (doc, list) in header.entities {
                entities.insert(DocId::new(doc), list);
            }
            feedback = header.feedback;
            meta = header.meta.or(meta);
            handles.push((std::sync::Mutex::new(handle), path, file.len));
            buffers.push(sections.bytes);
        }
        let meta: Meta =
            meta.ok_or_else(|| Error::corrupt("the published view has no meta values"))?;
        if check_seq && meta.last_seq != list.seq {
            return Err(Error::corrupt(format!(
                "{}: the published files end at change {}, the manifest records {}",
                dir.join(VIEW_DIR).display(),
                meta.last_seq,
                list.seq
            )));
        }
        Ok(Some(Published {
            dir: dir.to_path_buf(),
            list: list.clone(),
            meta,
            entities: std::sync::Mutex::new(entities),
            feedback: feedback.into_iter().collect(),
            base,
            checking: std::sync::Mutex::new(checking),
            base_entities: std::sync::Mutex::new(base_entities),
            removed_from_base,
            docs,
            files: handles,
            bytes: std::sync::Mutex::new(Some(Arc::new(buffers))),
        }))
    }

    /// The live documents' entity lists, handed over once: the catalog built from them
    /// is the only one a reader builds of this state (a refresh loads the next).
    pub(crate) fn take_entities(&self) -> rustc_hash::FxHashMap<DocId, Vec<String>> {
        std::mem::take(&mut *self.entities.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Waits for the mapped base's checksum: a reader uses nothing it read before this
    /// returns `Ok` (its open fails otherwise).
    pub(crate) fn verified(&self) -> Result<()> {
        let checking = self
            .checking
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        match checking.map(std::thread::JoinHandle::join) {
            None => Ok(()),
            Some(Ok(result)) => result,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
        }
    }

    /// The mapped base's entity lists, in `DocId` order, handed over once.
    pub(crate) fn take_base_entities(&self) -> Vec<(u64, Vec<String>)> {
        std::mem::take(&mut *self.base_entities.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The mapped base, if the base is one.
    pub(crate) fn mapped_base(&self) -> Option<&Arc<MappedBase>> {
        self.base.as_ref()
    }

    /// The documents of the mapped base the parts removed.
    pub(crate) fn removed_from_base(&self) -> impl Iterator<Item = DocId> + '_ {
        self.removed_from_base.iter().copied()
    }

    /// Whether the mapped base holds `doc`, live.
    fn base_index(&self, doc: DocId) -> Option<usize> {
        if self.removed_from_base.contains(&doc) {
            return None;
        }
        self.base.as_ref()?.find(doc)
    }

    /// Unmaps the files other than a mapped base (documents are read from the files
    /// then).
    pub(crate) fn release(&self) {
        *self.bytes.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// The files' bytes: those mapped at open, or mapped again.
    fn buffers(&self) -> Result<Arc<Vec<memmap2::Mmap>>> {
        if let Some(bytes) = self
            .bytes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            return Ok(Arc::clone(bytes));
        }
        let mut buffers = Vec::with_capacity(self.files.len());
        for (file, path, len) in &self.files {
            let file = file.lock().unwrap_or_else(|p| p.into_inner());
            let bytes = map(&file, path)?;
            if bytes.len() as u64 != *len {
                return Err(Error::corrupt(format!(
                    "{}: {} bytes, the manifest records {len}",
                    path.display(),
                    bytes.len()
                )));
            }
            buffers.push(bytes);
        }
        Ok(Arc::new(buffers))
    }

    /// The live version `doc`, decoded by `decode`.
    pub(crate) fn doc<R>(
        &self,
        doc: DocId,
        decode: impl FnOnce(block::EntryRef<'_>) -> Result<R>,
    ) -> Result<Option<R>> {
        use std::io::{Read, Seek};
        let Some(&(index, start, end)) = self.docs.get(&doc) else {
            return match (self.base.as_ref(), self.base_index(doc)) {
                (Some(base), Some(i)) => {
                    let entry = base.block_entry(&base.record(i))?;
                    decode(entry.as_ref()).map(Some)
                }
                _ => Ok(None),
            };
        };
        let loaded = self.bytes.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(buffers) = loaded {
            return decode(block::entry_at(&buffers[index][start..end])?).map(Some);
        }
        let mut bytes = vec![0u8; end - start];
        {
            let (file, path, _) = &self.files[index];
            let mut file = file.lock().unwrap_or_else(|p| p.into_inner());
            file.seek(std::io::SeekFrom::Start(start as u64))
                .and_then(|_| file.read_exact(&mut bytes))
                .map_err(|err| Error::io_at(path, err))?;
        }
        decode(block::entry_at(&bytes)?).map(Some)
    }

    /// Every live version in `DocId` order, each decoded by `decode` (in parallel).
    pub(crate) fn docs<R: Send>(
        &self,
        decode: impl Fn(block::EntryRef<'_>) -> Result<R> + Sync + Send,
    ) -> Result<Vec<R>> {
        self.docs_where(|_| true, decode)
    }

    /// The live versions not in the mapped base (all of them without one), in `DocId`
    /// order, each decoded by `decode` (in parallel).
    pub(crate) fn docs_beside_base<R: Send>(
        &self,
        decode: impl Fn(block::EntryRef<'_>) -> Result<R> + Sync + Send,
    ) -> Result<Vec<R>> {
        self.docs_where(|located| matches!(located, Located::Span(..)), decode)
    }

    fn docs_where<R: Send>(
        &self,
        wanted: impl Fn(&Located) -> bool,
        decode: impl Fn(block::EntryRef<'_>) -> Result<R> + Sync + Send,
    ) -> Result<Vec<R>> {
        use rayon::prelude::*;
        let buffers = self.buffers()?;
        let mut located: Vec<(DocId, Located)> = self
            .docs
            .iter()
            .map(|(&doc, &(index, start, end))| (doc, Located::Span(index, start, end)))
            .collect();
        if let Some(base) = &self.base {
            located.extend(
                base.records()
                    .enumerate()
                    .filter(|(_, record)| !self.removed_from_base.contains(&record.doc))
                    .map(|(i, record)| (record.doc, Located::Base(i))),
            );
            located.sort_unstable_by_key(|(doc, _)| *doc);
        }
        located.retain(|(_, located)| wanted(located));
        located
            .into_par_iter()
            .map(|(_, located)| match located {
                Located::Span(index, start, end) => {
                    decode(block::entry_at(&buffers[index][start..end])?)
                }
                Located::Base(i) => {
                    let base = self.base.as_ref().expect("located in the base");
                    decode(base.block_entry(&base.record(i))?.as_ref())
                }
            })
            .collect()
    }

    /// The published graph checkpoint of `kind`, if any, its files checked. `None` when
    /// a writer replaced it meanwhile.
    pub(crate) fn graph(&self, kind: Kind) -> Result<Option<PublishedGraph>> {
        let Some(graph) = self.list.graph(kind) else {
            return Ok(None);
        };
        let Some(sections) = read_file(&self.dir, &graph.manifest)? else {
            return Ok(None);
        };
        let path = || path_of(&self.dir, &graph.manifest);
        let damaged = |err: Error| Error::corrupt(format!("{}: {err}", path().display()));
        match (sections.len(), graph.files.is_empty()) {
            (2 | 3, true) => {
                let flat =
                    crate::local::hnsw::FlatGraph::decode(sections.get(1)).map_err(damaged)?;
                let manifest = sections.get(0).to_vec();
                let codes = if sections.len() == 3 {
                    let section = MappedSection { sections, index: 2 };
                    Some(
                        crate::local::hnsw::NodeCodes::decode_in_place(
                            Arc::new(section),
                            flat.len(),
                        )
                        .map_err(damaged)?,
                    )
                } else {
                    None
                };
                Ok(Some(PublishedGraph::Flat {
                    manifest,
                    flat,
                    codes,
                }))
            }
            (1, false) => {
                for file in &graph.files {
                    if read_file(&self.dir, file)?.is_none() {
                        return Ok(None);
                    }
                }
                Ok(Some(PublishedGraph::Raw {
                    manifest: sections.get(0).to_vec(),
                    dir: self.dir.join(VIEW_DIR),
                    basename: graph.basename().to_string(),
                }))
            }
            _ => Err(Error::corrupt(format!(
                "{}: not a graph manifest",
                path().display()
            ))),
        }
    }

    /// Bytes of the published files.
    pub(crate) fn size(&self) -> u64 {
        self.list.files().map(|f| f.len).sum()
    }
}
