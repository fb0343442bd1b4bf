//! The source of truth: documents, vectors, id maps, change log and checkpoints in sled.
//!
//! Everything else on disk (the tantivy text index, the HNSW graph) is derived from what
//! this module stores and can be rebuilt from it. One commit of the engine is one atomic
//! `apply_batch` on the `main` tree followed by a flush, so after [`Store::commit`]
//! returns, a crash loses nothing of it.

pub(crate) mod base;
mod block;
mod entities;
mod file;
mod flush;
mod keys;
mod meta;
pub(crate) mod prepare;
mod record;
mod rows;
mod sled_errors;
pub(crate) mod view;

use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

use crate::model::id::DocId;
use crate::{Error, ErrorKind, Kind, Result};

pub(crate) use self::block::BlockEntry;
pub(crate) use self::meta::{FORMAT_VERSION, Meta};
pub(crate) use self::record::{DocRecord, LogEntry, StoredVectors};
pub(crate) use self::rows::{DocRows, Normalised, VectorsRef, normalised_rows};
use self::sled_errors::{sled_err, sled_error};

/// One change of a commit, with its `DocId`s and sequence number already assigned.
#[derive(Debug)]
pub(crate) struct Change {
    pub(crate) seq: u64,
    /// The version written, with its vectors.
    pub(crate) written: Option<(DocId, DocRecord, StoredVectors)>,
    /// The entities the version written mentions ([`crate::local::graph::entities_of`]).
    pub(crate) entities: Vec<String>,
    /// The version removed (replaced or deleted).
    pub(crate) removed: Option<DocId>,
}

/// The key of the feedback tree under which the marks' horizon is kept.
const HORIZON: &[u8] = b"horizon";
/// The key of the feedback tree under which the marks are counted.
const MARKS: &[u8] = b"marks";

/// The store of one index: its sled database (a writer), or the files the writer
/// published ([`view`]; a reader, which writes nothing).
pub(crate) struct Store {
    sled: Option<Sled>,
    view: Option<view::Published>,
    meta: std::sync::Mutex<Meta>,
    /// Each kind's vector dimension, as `meta` records it (read by every search).
    dimensions: std::sync::RwLock<[Option<usize>; Kind::COUNT]>,
    /// Whether an existing store held nothing at all (not even its format version) and
    /// was initialised as a new one at open.
    blank: bool,
}

/// What can still be read of a damaged store ([`Store::read_salvageable`]).
#[derive(Default)]
pub(crate) struct Salvaged {
    /// Each readable document: its version, the change that wrote it, and the document
    /// with the vectors its caller supplied.
    pub(crate) docs: Vec<(DocId, u64, crate::Document)>,
    /// The readable entries of the change log (commits not yet in every derived index).
    pub(crate) log: Vec<(u64, LogEntry)>,
    /// Blocks, documents or log entries that could not be read.
    pub(crate) unreadable: usize,
}

/// The sled database of one index.
struct Sled {
    /// Where it is (what its I/O errors name).
    dir: std::path::PathBuf,
    db: sled::Db,
    main: sled::Tree,
    /// Embeddings by model and text hash (`model id` + 0 + xxh3-128 of the text, BE).
    embed_cache: sled::Tree,
    /// Feedback marks: query id to the legs that found the top hit and the answer given
    /// (and, in indexes written by earlier versions, recent searches).
    queries: sled::Tree,
    /// The feedback window (`window` to bincode entries).
    feedback: sled::Tree,
    /// One checkpoint tree per kind (`graph_rule`, `graph_chunk`).
    graphs: [sled::Tree; Kind::COUNT],
}

/// The size of sled's segments in a new store. sled writes a value (or a tree node)
/// larger than a quarter of a segment into a file of its own, and keeps such files
/// until the segment that points to them is cleaned: at 512 KiB (sled's default) a
/// block of 64 documents with 384-d vectors is one, and so is every node that holds
/// several. At 8 MiB they stay in the segments, whose space sled reclaims: 100,000
/// chunks take 0.64 GB of store instead of 0.93, and 1,000 commits of 20 upserts over
/// 4,000 chunks 52 MB instead of 80.
const SEGMENT_SIZE: usize = 8 << 20;

/// Puts an empty block under each of `new_blocks` (blocks a commit is about to write
/// that the tree does not hold), highest first, before the commit's batch writes them.
///
/// sled splits a leaf of more than 16 keys in half and rewrites a leaf whole once ten
/// changes to it are pending. A batch that adds a run of new blocks inserts them in
/// ascending order, so each leaf fills to 17 blocks, is rewritten on the way and split,
/// and each block is written about 2.5 times: 100,000 chunks (1,563 blocks of about 140
/// KB) made a store file of 510 MB for 215 MB of documents. Empty blocks inserted in
/// descending order make leaves of a few keys each, split and written while their
/// values are empty; the batch's blocks then land as fewer than ten changes per leaf
/// and are written once (sled 0.34, 1,563 values of 143 KB: 227 MB written instead of
/// 561; the commit of those 100,000 chunks: a file of 216 MB).
///
/// An empty block is a valid block with no documents, so a crash between these inserts
/// and the batch leaves the store as the last commit left it.
fn reserve_blocks(main: &sled::Tree, mut new_blocks: Vec<u64>) -> Result<()> {
    new_blocks.sort_unstable_by(|a, b| b.cmp(a));
    let empty = block::encode(std::iter::empty::<&BlockEntry>());
    for block_no in new_blocks {
        main.insert(keys::block_key(block_no), empty.as_slice())
            .map_err(sled_err)?;
    }
    Ok(())
}

/// The segment size of the store under `path`: the one it was created with (sled
/// refuses another), or [`SEGMENT_SIZE`] for a new one.
fn segment_size(path: &Path) -> usize {
    std::fs::read(path.join("conf"))
        .ok()
        .and_then(|conf| {
            conf.split(|&b| b == b'\n')
                .find_map(|line| line.strip_prefix(b"segment_size: "))
                .and_then(|value| std::str::from_utf8(value).ok()?.trim().parse().ok())
        })
        .unwrap_or(SEGMENT_SIZE)
}

impl Store {
    /// Opens (or, with `create`, initialises) the store under `path`.
    pub(crate) fn open(path: &Path, create: bool, cache_bytes: u64) -> Result<Store> {
        Store::open_segmented(path, create, cache_bytes, segment_size(path))
    }

    fn open_segmented(
        path: &Path,
        create: bool,
        cache_bytes: u64,
        segment_size: usize,
    ) -> Result<Store> {
        remove_unfinished_snapshots(path)?;
        // The caller holds the index's LOCK, so a sled lock conflict can only be a
        // handle of this process that is still shutting down (sled's flusher thread
        // lets go of the file shortly after the last handle drops): wait for it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let db = loop {
            let opened = sled::Config::new()
                .path(path)
                .cache_capacity(cache_bytes)
                .segment_size(segment_size)
                .flush_every_ms(Some(500))
                .open()
                .map_err(|err| sled_error(err, path));
            match opened {
                Err(err)
                    if matches!(err.kind(), ErrorKind::Locked { .. })
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                other => break other?,
            }
        };
        let main = db.open_tree("main").map_err(|err| sled_error(err, path))?;
        let embed_cache = db
            .open_tree("embed_cache")
            .map_err(|err| sled_error(err, path))?;
        let queries = db
            .open_tree("queries")
            .map_err(|err| sled_error(err, path))?;
        let feedback = db
            .open_tree("feedback")
            .map_err(|err| sled_error(err, path))?;
        let mut graphs = Vec::with_capacity(Kind::COUNT);
        for kind in Kind::ALL {
            graphs.push(
                db.open_tree(format!("graph_{kind}"))
                    .map_err(|err| sled_error(err, path))?,
            );
        }
        let graphs: [sled::Tree; Kind::COUNT] = graphs
            .try_into()
            .unwrap_or_else(|_| unreachable!("one tree per kind"));
        // A store that holds nothing at all (a first import killed before sled wrote
        // its first flush) is a new one.
        let blank = !create
            && main.is_empty()
            && [&embed_cache, &queries, &feedback]
                .into_iter()
                .chain(&graphs)
                .all(sled::Tree::is_empty);
        if create {
            crate::crash::point("store:created");
        }
        let meta = if create || blank {
            let meta = Meta::new();
            let mut batch = sled::Batch::default();
            meta.write(&mut batch);
            main.apply_batch(batch)
                .map_err(|err| sled_error(err, path))?;
            flush::flush(&db).map_err(|err| sled_error(err, path))?;
            meta
        } else {
            Meta::read(&main)?
        };
        Ok(Store {
            sled: Some(Sled {
                dir: path.to_path_buf(),
                db,
                main,
                embed_cache,
                queries,
                feedback,
                graphs,
            }),
            view: None,
            dimensions: std::sync::RwLock::new(dimensions_of(&meta)),
            meta: std::sync::Mutex::new(meta),
            blank,
        })
    }

    /// Whether the store held nothing at all when it was opened, and was initialised
    /// as a new one.
    pub(crate) fn was_blank(&self) -> bool {
        self.blank
    }

    /// A store that reads what a writer published, and refuses every write.
    pub(crate) fn published(view: view::Published) -> Store {
        Store {
            dimensions: std::sync::RwLock::new(dimensions_of(&view.meta)),
            meta: std::sync::Mutex::new(view.meta.clone()),
            sled: None,
            view: Some(view),
            blank: false,
        }
    }

    /// The published graph checkpoint of `kind` a reader uses (see
    /// [`view::Published::graph`]).
    pub(crate) fn published_graph(&self, kind: Kind) -> Result<Option<view::PublishedGraph>> {
        match &self.view {
            Some(view) => view.graph(kind),
            None => Ok(None),
        }
    }

    /// The published files a reader's store reads.
    pub(crate) fn published_view(&self) -> Option<&view::Published> {
        self.view.as_ref()
    }

    /// The list of published files a reader's store reads.
    pub(crate) fn published_list(&self) -> Option<view::ViewList> {
        self.view.as_ref().map(|view| view.list.clone())
    }

    /// Lets a reader's store drop the published files' bytes it read at open.
    pub(crate) fn release_published(&self) {
        if let Some(view) = &self.view {
            view.release();
        }
    }

    /// Whether this store only reads published files.
    pub(crate) fn is_read_only(&self) -> bool {
        self.sled.is_none()
    }

    /// A sled error, an I/O one naming the store's directory.
    fn sled_err(&self, err: sled::Error) -> Error {
        match &self.sled {
            Some(sled) => sled_error(err, &sled.dir),
            None => sled_err(err),
        }
    }

    /// Closes the sled database now, its last flush and sync included: sled 0.34
    /// unwraps the sync of its log file when its last handle goes, so a failing disk
    /// makes that a panic inside sled, which is caught here and returned as the I/O
    /// error it is. (Dropped without this, the store catches it the same way and logs
    /// it.)
    pub(crate) fn close(&mut self) -> Result<()> {
        let Some(sled) = self.sled.take() else {
            return Ok(());
        };
        let dir = sled.dir.clone();
        let result = flush::flush(&sled.db).map_err(|err| sled_error(err, &dir));
        close_sled(sled).and(result.map(drop))
    }

    fn sled(&self) -> Result<&Sled> {
        self.sled
            .as_ref()
            .ok_or_else(|| Error::new(ErrorKind::ReadOnly))
    }

    pub(crate) fn meta(&self) -> Meta {
        self.lock_meta().clone()
    }

    /// The vector dimension of `kind`, once known (cheaper than [`Store::meta`]).
    pub(crate) fn dimensions(&self, kind: Kind) -> Option<usize> {
        self.dimensions
            .read()
            .unwrap_or_else(|poison| poison.into_inner())[kind.index()]
    }

    /// Each kind's vector dimension, once known.
    pub(crate) fn all_dimensions(&self) -> [Option<usize>; Kind::COUNT] {
        *self
            .dimensions
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Sets the meta values in memory, and the dimensions derived from them.
    fn install_meta(&self, guard: &mut std::sync::MutexGuard<'_, Meta>, meta: Meta) {
        *self
            .dimensions
            .write()
            .unwrap_or_else(|poison| poison.into_inner()) = dimensions_of(&meta);
        **guard = meta;
    }

    fn lock_meta(&self) -> std::sync::MutexGuard<'_, Meta> {
        self.meta
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Records the embedder spec of an index that has no vector space yet.
    /// The key that signs query ids, made (and stored) if the index has none yet.
    pub(crate) fn id_key(&self) -> Result<[u8; 32]> {
        if let Some(key) = self.meta().id_key {
            return Ok(key);
        }
        let key: [u8; 32] = rand::random();
        self.update_meta(|meta| meta.id_key = Some(key))?;
        Ok(key)
    }

    pub(crate) fn set_embedder(&self, embedder: &str) -> Result<()> {
        self.update_meta(|meta| meta.embedder = Some(embedder.to_string()))
    }

    /// Records the vector space of `kinds` (once, at first use), and the index's
    /// embedder specs when given (those recorded earlier are kept otherwise).
    pub(crate) fn set_vector_space(
        &self,
        kinds: &[Kind],
        dimensions: usize,
        model_id: &str,
        embedder: Option<&str>,
    ) -> Result<()> {
        self.update_meta(|meta| {
            let space = meta::Space {
                dimensions,
                model_id: model_id.to_string(),
            };
            meta.set_space(kinds, &space);
            if let Some(embedder) = embedder {
                meta.embedder = Some(embedder.to_string());
            }
        })
    }

    /// Changes the meta values and writes them durably.
    fn update_meta(&self, change: impl FnOnce(&mut Meta)) -> Result<()> {
        let mut guard = self.lock_meta();
        let mut meta = guard.clone();
        change(&mut meta);
        let mut batch = sled::Batch::default();
        meta.write(&mut batch);
        self.sled()?
            .main
            .apply_batch(batch)
            .map_err(|err| self.sled_err(err))?;
        self.flush()?;
        self.install_meta(&mut guard, meta);
        Ok(())
    }

    /// A stored document and its vectors.
    pub(crate) fn doc(&self, doc: DocId) -> Result<Option<(DocRecord, Option<StoredVectors>)>> {
        if let Some(view) = &self.view {
            return view.doc(doc, |entry| Ok((entry.record()?, entry.vectors()?)));
        }
        let Some(bytes) = self
            .sled()?
            .main
            .get(keys::block_key(block::block_of(doc)))
            .map_err(|err| self.sled_err(err))?
        else {
            return Ok(None);
        };
        let entries = block::decode(&bytes)?;
        match entries.iter().find(|e| e.doc == doc) {
            Some(entry) => Ok(Some((entry.record()?, entry.vectors()?))),
            None => Ok(None),
        }
    }

    /// Every stored document with its vectors, decoded in parallel, in `DocId` order.
    pub(crate) fn read_all(&self) -> Result<Vec<(DocId, DocRecord, Option<StoredVectors>)>> {
        use rayon::prelude::*;
        let decode = |entry: &BlockEntry| Ok((entry.doc, entry.record()?, entry.vectors()?));
        if let Some(view) = &self.view {
            return view.docs(|entry| Ok((entry.doc, entry.record()?, entry.vectors()?)));
        }
        self.raw_entries()?.par_iter().map(decode).collect()
    }

    /// Every stored document, still encoded, in `DocId` order (what a published base
    /// holds).
    pub(crate) fn raw_entries(&self) -> Result<Vec<BlockEntry>> {
        use rayon::prelude::*;
        if let Some(view) = &self.view {
            return view.docs(|entry| Ok(entry.to_owned()));
        }
        let blocks: Vec<sled::IVec> = self
            .sled()?
            .main
            .scan_prefix([keys::BLOCK])
            .map(|item| {
                item.map(|(_, value)| value)
                    .map_err(|err| self.sled_err(err))
            })
            .collect::<Result<_>>()?;
        let entries: Vec<Vec<BlockEntry>> = blocks
            .par_iter()
            .map(|bytes| block::decode(bytes))
            .collect::<Result<_>>()?;
        Ok(entries.into_iter().flatten().collect())
    }

    /// The stored entity lists of every document that has them (a reader's are handed
    /// over once, see [`view::Published::take_entities`]).
    pub(crate) fn entity_lists(&self) -> Result<rustc_hash::FxHashMap<DocId, Vec<String>>> {
        if let Some(view) = &self.view {
            return Ok(view.take_entities());
        }
        let mut lists = rustc_hash::FxHashMap::default();
        for item in self.sled()?.main.scan_prefix([keys::ENTITIES]) {
            let (_, bytes) = item.map_err(|err| self.sled_err(err))?;
            for (doc, entities) in entities::decode(&bytes)? {
                lists.insert(DocId::new(doc), entities);
            }
        }
        Ok(lists)
    }

    /// Stores the entity lists of documents written before the store kept them (or
    /// whose lists were dropped by a repair), in one durable batch.
    pub(crate) fn add_entity_lists(&self, lists: &[(DocId, Vec<String>)]) -> Result<()> {
        let mut blocks: BTreeMap<u64, entities::EntityBlock> = BTreeMap::new();
        for (doc, entities) in lists {
            let block_no = block::block_of(*doc);
            if let std::collections::btree_map::Entry::Vacant(slot) = blocks.entry(block_no) {
                slot.insert(self.entity_block(block_no)?);
            }
            if let Some(block) = blocks.get_mut(&block_no) {
                block.insert(doc.as_u64(), entities.clone());
            }
        }
        let mut batch = sled::Batch::default();
        for (block_no, block) in blocks {
            batch.insert(&keys::entities_key(block_no), entities::encode(&block));
        }
        self.sled()?
            .main
            .apply_batch(batch)
            .map_err(|err| self.sled_err(err))?;
        self.flush()?;
        Ok(())
    }

    fn entity_block(&self, block_no: u64) -> Result<entities::EntityBlock> {
        match self
            .sled()?
            .main
            .get(keys::entities_key(block_no))
            .map_err(|err| self.sled_err(err))?
        {
            Some(bytes) => entities::decode(&bytes),
            None => Ok(entities::EntityBlock::new()),
        }
    }

    /// Drops every stored entity list (the next open derives them again).
    pub(crate) fn clear_entity_lists(&self) -> Result<()> {
        let mut batch = sled::Batch::default();
        for item in self.sled()?.main.scan_prefix([keys::ENTITIES]) {
            let (key, _) = item.map_err(|err| self.sled_err(err))?;
            batch.remove(key);
        }
        self.sled()?
            .main
            .apply_batch(batch)
            .map_err(|err| self.sled_err(err))?;
        self.flush()?;
        Ok(())
    }

    /// Writes a new store at `path` holding only what is live now: the meta, every
    /// document block (with its vectors as stored) and its entity lists, the feedback
    /// windows of the tenants `keep_tenant` keeps and the feedback marks. Not copied: the
    /// change log (derived indexes are rebuilt from the documents), the graph checkpoints
    /// (rebuilt), the embedding cache (it holds vectors of deleted texts) and the search
    /// log of earlier versions. Nothing deleted survives in the copy.
    pub(crate) fn copy_live_into(
        &self,
        path: &Path,
        keep_tenant: &dyn Fn(&str) -> bool,
    ) -> Result<()> {
        let target = Store::open(path, true, 16 << 20)?;
        let mut batch = sled::Batch::default();
        let mut pending = 0;
        for item in self.sled()?.main.iter() {
            let (key, value) = item.map_err(|err| self.sled_err(err))?;
            if key.first() == Some(&keys::LOG) {
                continue;
            }
            batch.insert(key, value);
            pending += 1;
            if pending == 1_024 {
                target
                    .sled()?
                    .main
                    .apply_batch(std::mem::take(&mut batch))
                    .map_err(|err| self.sled_err(err))?;
                pending = 0;
            }
        }
        target
            .sled()?
            .main
            .apply_batch(batch)
            .map_err(|err| self.sled_err(err))?;
        // The feedback windows of the tenants `keep_tenant` keeps (of every kind), the
        // marks' horizon, and the marks (ids and a legs byte: no text), so that feedback
        // given before still counts once.
        let mut batch = sled::Batch::default();
        for item in self.sled()?.feedback.iter() {
            let (key, value) = item.map_err(|err| self.sled_err(err))?;
            let tenant = match key.as_ref() {
                b"window" => Some(crate::DEFAULT_TENANT.to_string()),
                other => other.strip_prefix(b"w").map(|rest| {
                    let name = rest.split(|&b| b == 0).next().unwrap_or(rest);
                    String::from_utf8_lossy(name).into_owned()
                }),
            };
            if tenant.is_none_or(|tenant| keep_tenant(&tenant)) {
                batch.insert(key, value);
            }
        }
        target
            .sled()?
            .feedback
            .apply_batch(batch)
            .map_err(|err| self.sled_err(err))?;
        self.copy_marks_into(&target)?;
        flush::flush(&target.sled()?.db).map_err(|err| self.sled_err(err))?;
        Ok(())
    }

    /// Every document that can still be read, with the sequence number of the change
    /// that wrote it and the vectors its caller supplied, the readable change log, and
    /// the number of blocks or entries that could not be read (for salvaging a damaged
    /// store).
    pub(crate) fn read_salvageable(&self) -> Salvaged {
        let mut salvaged = Salvaged::default();
        let Ok(sled) = self.sled() else {
            return salvaged;
        };
        // A scan until the first unreadable page (sled's iterator would read that page
        // again for every key after it), then one lookup per block number left: time
        // linear in the blocks, whatever is damaged.
        let mut blocks: Vec<sled::IVec> = Vec::new();
        let mut next_block = 0u64;
        let mut damaged = false;
        for item in sled.main.scan_prefix([keys::BLOCK]) {
            match item {
                Ok((key, bytes)) => {
                    next_block = keys::decode_u64(&key[1..]).map_or(next_block, |b| b + 1);
                    blocks.push(bytes);
                }
                Err(_) => {
                    damaged = true;
                    break;
                }
            }
        }
        if damaged {
            let last_block = self.meta().next_doc >> 6;
            for block_no in next_block..=last_block {
                match sled.main.get(keys::block_key(block_no)) {
                    Ok(Some(bytes)) => blocks.push(bytes),
                    Ok(None) => {}
                    Err(_) => salvaged.unreadable += 1,
                }
            }
        }
        for bytes in blocks {
            let Ok(entries) = block::decode(&bytes) else {
                salvaged.unreadable += 1;
                continue;
            };
            for entry in entries {
                let doc = entry.record().and_then(|record| {
                    let vectors = entry.vectors()?;
                    Ok((record.seq, record.to_document(vectors.as_ref())?))
                });
                match doc {
                    Ok((seq, doc)) => salvaged.docs.push((entry.doc, seq, doc)),
                    Err(_) => salvaged.unreadable += 1,
                }
            }
        }
        for item in sled.main.scan_prefix([keys::LOG]) {
            let commit = item
                .map_err(|err| self.sled_err(err))
                .and_then(|(_, value)| record::decode::<Vec<(u64, LogEntry)>>(&value, "log entry"));
            match commit {
                Ok(commit) => salvaged.log.extend(commit),
                Err(_) => {
                    salvaged.unreadable += 1;
                    break;
                }
            }
        }
        salvaged
    }

    /// Log entries with a sequence number above `after`, in order.
    pub(crate) fn log_after(&self, after: u64) -> Result<Vec<(u64, LogEntry)>> {
        let mut entries = Vec::new();
        for item in self
            .sled()?
            .main
            .range(keys::log_key(after.saturating_add(1))..=keys::log_key(u64::MAX))
        {
            let (_, value) = item.map_err(|err| self.sled_err(err))?;
            let commit: Vec<(u64, LogEntry)> = record::decode(&value, "log entry")?;
            entries.extend(commit.into_iter().filter(|(seq, _)| *seq > after));
        }
        Ok(entries)
    }

    /// Removes the log entries of commits up to and including sequence number `upto`
    /// (every derived index has them).
    ///
    /// Not flushed: losing the removal in a crash only leaves entries that replay as
    /// no-ops.
    pub(crate) fn truncate_log(&self, upto: u64) -> Result<()> {
        let mut batch = sled::Batch::default();
        for item in self
            .sled()?
            .main
            .range(keys::log_key(0)..=keys::log_key(upto))
        {
            let (key, _) = item.map_err(|err| self.sled_err(err))?;
            batch.remove(key);
        }
        self.sled()?
            .main
            .apply_batch(batch)
            .map_err(|err| self.sled_err(err))
    }

    /// Applies `changes` (in order) as one atomic, durable batch, and records the
    /// counters that assigned their `DocId`s and sequence numbers.
    ///
    /// The changes land in the blocks of their documents, and in one change-log entry
    /// keyed by the commit's last sequence number.
    pub(crate) fn commit(&self, changes: &[Change], next_doc: u64) -> Result<()> {
        let Some(last_seq) = changes.last().map(|c| c.seq) else {
            return Ok(());
        };
        let mut guard = self.lock_meta();
        let mut meta = guard.clone();
        // The touched blocks, read once, changed in order, written once, and which of
        // them the tree does not hold yet.
        let mut blocks: BTreeMap<u64, Vec<BlockEntry>> = BTreeMap::new();
        let mut new_blocks: Vec<u64> = Vec::new();
        let mut load = |block_no: u64, blocks: &mut BTreeMap<u64, Vec<BlockEntry>>| -> Result<()> {
            if let std::collections::btree_map::Entry::Vacant(slot) = blocks.entry(block_no) {
                let entries = match self
                    .sled()?
                    .main
                    .get(keys::block_key(block_no))
                    .map_err(|err| self.sled_err(err))?
                {
                    Some(bytes) => block::decode(&bytes)?,
                    None => {
                        new_blocks.push(block_no);
                        Vec::new()
                    }
                };
                slot.insert(entries);
            }
            Ok(())
        };
        // The entity blocks beside them.
        let mut entity_blocks: BTreeMap<u64, entities::EntityBlock> = BTreeMap::new();
        let load_entities =
            |block_no: u64, blocks: &mut BTreeMap<u64, entities::EntityBlock>| -> Result<()> {
                if let std::collections::btree_map::Entry::Vacant(slot) = blocks.entry(block_no) {
                    slot.insert(self.entity_block(block_no)?);
                }
                Ok(())
            };
        // Each written version encoded once, in parallel, before the blocks take them.
        let mut encoded: Vec<Option<BlockEntry>> = changes
            .par_iter()
            .map(|change| {
                change
                    .written
                    .as_ref()
                    .map(|(doc, record, vectors)| BlockEntry::new(*doc, record, vectors))
            })
            .collect();
        let mut log = Vec::with_capacity(changes.len());
        for (change, encoded) in changes.iter().zip(&mut encoded) {
            if let Some(removed) = change.removed {
                let block_no = block::block_of(removed);
                load(block_no, &mut blocks)?;
                if let Some(entries) = blocks.get_mut(&block_no) {
                    entries.retain(|e| e.doc != removed);
                }
                load_entities(block_no, &mut entity_blocks)?;
                if let Some(lists) = entity_blocks.get_mut(&block_no) {
                    lists.remove(&removed.as_u64());
                }
            }
            match &change.written {
                Some((doc, _, _)) => {
                    let block_no = block::block_of(*doc);
                    load(block_no, &mut blocks)?;
                    if let (Some(entries), Some(entry)) =
                        (blocks.get_mut(&block_no), encoded.take())
                    {
                        entries.push(entry);
                    }
                    load_entities(block_no, &mut entity_blocks)?;
                    if let Some(lists) = entity_blocks.get_mut(&block_no) {
                        lists.insert(doc.as_u64(), change.entities.clone());
                    }
                    log.push((
                        change.seq,
                        LogEntry::Upsert {
                            doc: doc.as_u64(),
                            replaced: change.removed.map(DocId::as_u64),
                        },
                    ));
                }
                None => {
                    if let Some(removed) = change.removed {
                        log.push((
                            change.seq,
                            LogEntry::Delete {
                                doc: removed.as_u64(),
                            },
                        ));
                    }
                }
            }
        }
        new_blocks.retain(|block_no| blocks.get(block_no).is_some_and(|e| !e.is_empty()));
        reserve_blocks(&self.sled()?.main, new_blocks)?;
        let mut batch = sled::Batch::default();
        for (block_no, mut entries) in blocks {
            if entries.is_empty() {
                batch.remove(&keys::block_key(block_no));
            } else {
                entries.sort_by_key(|e| e.doc);
                batch.insert(&keys::block_key(block_no), block::encode(&entries));
            }
        }
        for (block_no, lists) in entity_blocks {
            let key = keys::entities_key(block_no);
            if lists.is_empty() {
                batch.remove(&key);
            } else {
                batch.insert(&key, entities::encode(&lists));
            }
        }
        batch.insert(&keys::log_key(last_seq), record::encode(&log));
        meta.next_doc = next_doc;
        meta.last_seq = last_seq;
        meta.write(&mut batch);
        self.sled()?
            .main
            .apply_batch(batch)
            .map_err(|err| self.sled_err(err))?;
        self.flush()?;
        *guard = meta;
        Ok(())
    }

    fn graph_tree(&self, kind: Kind) -> Result<&sled::Tree> {
        Ok(&self.sled()?.graphs[kind.index()])
    }

    /// Replaces the graph checkpoint of `kind` with `manifest` and its `files`,
    /// atomically and durably.
    pub(crate) fn save_checkpoint(
        &self,
        kind: Kind,
        manifest: &[u8],
        files: &[Vec<u8>],
    ) -> Result<()> {
        const PART_BYTES: usize = 1 << 20;
        let tree = self.graph_tree(kind)?;
        let mut batch = sled::Batch::default();
        for item in tree.iter() {
            let (key, _) = item.map_err(|err| self.sled_err(err))?;
            batch.remove(key);
        }
        for (file_idx, file) in files.iter().enumerate() {
            for (part_idx, part) in file.chunks(PART_BYTES).enumerate() {
                batch.insert(&part_key(file_idx, part_idx), part);
            }
        }
        batch.insert(b"manifest".as_slice(), manifest);
        tree.apply_batch(batch).map_err(|err| self.sled_err(err))?;
        self.flush()?;
        Ok(())
    }

    /// Removes the graph checkpoint of `kind` (the graph is then rebuilt from the
    /// documents), durably.
    pub(crate) fn clear_checkpoint(&self, kind: Kind) -> Result<()> {
        let tree = self.graph_tree(kind)?;
        let mut batch = sled::Batch::default();
        for item in tree.iter() {
            let (key, _) = item.map_err(|err| self.sled_err(err))?;
            batch.remove(key);
        }
        tree.apply_batch(batch).map_err(|err| self.sled_err(err))?;
        self.flush()?;
        Ok(())
    }

    /// The manifest of the graph checkpoint of `kind`, if there is one.
    pub(crate) fn checkpoint_manifest(&self, kind: Kind) -> Result<Option<Vec<u8>>> {
        Ok(self
            .graph_tree(kind)?
            .get(b"manifest")
            .map_err(|err| self.sled_err(err))?
            .map(|v| v.to_vec()))
    }

    /// The bytes of the first `n_files` files of the graph checkpoint of `kind`.
    pub(crate) fn checkpoint_files(&self, kind: Kind, n_files: usize) -> Result<Vec<Vec<u8>>> {
        let tree = self.graph_tree(kind)?;
        let mut files = Vec::with_capacity(n_files);
        for file_idx in 0..n_files {
            let mut bytes = Vec::new();
            let prefix = part_key(file_idx, 0);
            for item in tree.scan_prefix(&prefix[..2]) {
                let (_, value) = item.map_err(|err| self.sled_err(err))?;
                bytes.extend_from_slice(&value);
            }
            files.push(bytes);
        }
        Ok(files)
    }

    /// The cached embedding of `text` by `model_id`: `Some(empty)` for a text that
    /// embeds to nothing.
    pub(crate) fn cached_embedding(&self, model_id: &str, text: &str) -> Result<Option<Vec<f32>>> {
        if self.view.is_some() {
            return Ok(None);
        }
        let value = self
            .sled()?
            .embed_cache
            .get(cache_key(model_id, text))
            .map_err(|err| self.sled_err(err))?;
        value
            .map(|bytes| {
                if bytes.len() % 4 != 0 {
                    return Err(Error::corrupt("embedding cache entry"));
                }
                Ok(bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect())
            })
            .transpose()
    }

    /// Caches embeddings (an all-zero vector is stored empty). Written with the next
    /// flush: losing entries in a crash only costs re-embedding.
    pub(crate) fn cache_embeddings<'a>(
        &self,
        model_id: &str,
        entries: impl IntoIterator<Item = (&'a str, &'a [f32])>,
    ) -> Result<()> {
        let mut batch = sled::Batch::default();
        for (text, vector) in entries {
            let bytes: Vec<u8> = if vector.iter().all(|x| *x == 0.0) {
                Vec::new()
            } else {
                vector.iter().flat_map(|x| x.to_le_bytes()).collect()
            };
            batch.insert(cache_key(model_id, text), bytes);
        }
        self.sled()?
            .embed_cache
            .apply_batch(batch)
            .map_err(|err| self.sled_err(err))
    }

    /// Records a feedback mark (query id to the legs that found its top hit, with the
    /// answer given), durably, and keeps the `keep` most recent marks: the marks are
    /// counted (a key of the feedback tree), and pruned once they exceed `keep` by a
    /// tenth, so that a mark costs no scan of the others.
    pub(crate) fn add_mark(&self, query_id: &str, entry: &[u8], keep: usize) -> Result<()> {
        let is_new = self
            .sled()?
            .queries
            .insert(query_id.as_bytes(), entry)
            .map_err(|err| self.sled_err(err))?
            .is_none();
        let counted = match self
            .sled()?
            .feedback
            .get(MARKS)
            .map_err(|err| self.sled_err(err))?
        {
            Some(bytes) => keys::decode_u64(&bytes)? + u64::from(is_new),
            // Not counted yet (an index of an earlier version): count once.
            None => self.sled()?.queries.len() as u64,
        };
        let counted = if counted > (keep + keep / 10) as u64 {
            self.prune_query_log(keep)?;
            keep as u64
        } else {
            counted
        };
        self.sled()?
            .feedback
            .insert(MARKS, &counted.to_be_bytes())
            .map_err(|err| self.sled_err(err))?;
        self.flush()?;
        Ok(())
    }

    /// The mark (or, for an index written by an earlier version, the log entry) of a
    /// query id.
    pub(crate) fn logged_query(&self, query_id: &str) -> Result<Option<Vec<u8>>> {
        let value = self
            .sled()?
            .queries
            .get(query_id.as_bytes())
            .map_err(|err| self.sled_err(err))?;
        Ok(value.map(|v| v.to_vec()))
    }

    /// Keeps the `keep` most recent marks (ids sort by time), and remembers the newest
    /// id dropped as the horizon below which feedback is refused.
    fn prune_query_log(&self, keep: usize) -> Result<()> {
        let len = self.sled()?.queries.len();
        if len <= keep {
            return Ok(());
        }
        let mut batch = sled::Batch::default();
        let mut newest = None;
        for item in self.sled()?.queries.iter().take(len - keep) {
            let (key, _) = item.map_err(|err| self.sled_err(err))?;
            newest = Some(key.clone());
            batch.remove(key);
        }
        // The horizon is durable before any mark goes: a crash in between refuses a few
        // ids too early rather than letting one count twice.
        if let Some(newest) = newest {
            self.sled()?
                .feedback
                .insert(HORIZON, newest)
                .map_err(|err| self.sled_err(err))?;
            self.flush()?;
        }
        self.sled()?
            .queries
            .apply_batch(batch)
            .map_err(|err| self.sled_err(err))?;
        Ok(())
    }

    /// Copies every cached embedding into `target` (a re-embedding that keeps some kinds'
    /// models finds their vectors there instead of embedding again).
    pub(crate) fn copy_embed_cache_into(&self, target: &Store) -> Result<()> {
        let mut batch = sled::Batch::default();
        for item in self.sled()?.embed_cache.iter() {
            let (key, value) = item.map_err(|err| self.sled_err(err))?;
            batch.insert(key, value);
        }
        target
            .sled()?
            .embed_cache
            .apply_batch(batch)
            .map_err(|err| target.sled_err(err))
    }

    /// Copies the key that signs query ids, the feedback marks (ids and a legs byte: no
    /// text; not the search log of earlier versions), their count and their horizon into
    /// `target`, so that ids issued here are taken there, and count once.
    pub(crate) fn copy_marks_into(&self, target: &Store) -> Result<()> {
        // The key alone: `target`'s other meta values are its own (or, in a copy, the
        // copied ones, which its in-memory meta does not know yet).
        if let Some(key) = self.meta().id_key {
            target
                .sled()?
                .main
                .insert(keys::meta_key(meta::ID_KEY), key.as_slice())
                .map_err(|err| self.sled_err(err))?;
            target.lock_meta().id_key = Some(key);
        }
        let mut batch = sled::Batch::default();
        for item in self.sled()?.queries.iter() {
            let (key, value) = item.map_err(|err| self.sled_err(err))?;
            if value.len() == 1 {
                batch.insert(key, value);
            }
        }
        target
            .sled()?
            .queries
            .apply_batch(batch)
            .map_err(|err| self.sled_err(err))?;
        for key in [HORIZON, MARKS] {
            if let Some(value) = self
                .sled()?
                .feedback
                .get(key)
                .map_err(|err| self.sled_err(err))?
            {
                target
                    .sled()?
                    .feedback
                    .insert(key, value)
                    .map_err(|err| self.sled_err(err))?;
            }
        }
        flush::flush(&target.sled()?.db).map_err(|err| self.sled_err(err))?;
        Ok(())
    }

    /// The newest query id whose mark was dropped, if any.
    pub(crate) fn marks_horizon(&self) -> Result<Option<String>> {
        self.sled()?
            .feedback
            .get(HORIZON)
            .map_err(|err| self.sled_err(err))?
            .map(|bytes| {
                String::from_utf8(bytes.to_vec()).map_err(|_| Error::corrupt("feedback horizon"))
            })
            .transpose()
    }

    /// The stored feedback windows, by window key (a tenant for its rules, the tenant
    /// and a `\0chunk` suffix for its chunks). The default tenant's rules' window is
    /// under the store key `window`, as before windows were per tenant; any other under
    /// `w` + the window key.
    pub(crate) fn feedback_windows(
        &self,
    ) -> Result<std::collections::HashMap<String, Vec<crate::feedback::FeedbackEntry>>> {
        if let Some(view) = &self.view {
            return Ok(view.feedback.clone());
        }
        let mut windows = std::collections::HashMap::new();
        for item in self.sled()?.feedback.iter() {
            let (key, bytes) = item.map_err(|err| self.sled_err(err))?;
            let tenant = if key.as_ref() == b"window" {
                crate::DEFAULT_TENANT.to_string()
            } else if let Some(tenant) = key.strip_prefix(b"w") {
                String::from_utf8(tenant.to_vec())
                    .map_err(|_| Error::corrupt("feedback window key"))?
            } else {
                continue;
            };
            windows.insert(tenant, record::decode(&bytes, "feedback window")?);
        }
        Ok(windows)
    }

    /// Replaces the stored feedback window of a window key, durably.
    pub(crate) fn save_feedback(
        &self,
        tenant: &str,
        entries: &[crate::feedback::FeedbackEntry],
    ) -> Result<()> {
        let key = if tenant == crate::DEFAULT_TENANT {
            b"window".to_vec()
        } else {
            [b"w".as_slice(), tenant.as_bytes()].concat()
        };
        self.sled()?
            .feedback
            .insert(key, record::encode(&entries))
            .map_err(|err| self.sled_err(err))?;
        self.flush()?;
        Ok(())
    }

    /// Removes every stored feedback window, durably.
    pub(crate) fn clear_feedback(&self) -> Result<()> {
        // The marks' horizon stays: ids older than it still cannot count again.
        let mut batch = sled::Batch::default();
        for item in self.sled()?.feedback.iter() {
            let (key, _) = item.map_err(|err| self.sled_err(err))?;
            if key.as_ref() != HORIZON && key.as_ref() != MARKS {
                batch.remove(key);
            }
        }
        self.sled()?
            .feedback
            .apply_batch(batch)
            .map_err(|err| self.sled_err(err))?;
        self.flush()?;
        Ok(())
    }

    /// Flushes every tree to disk.
    pub(crate) fn flush(&self) -> Result<()> {
        flush::flush(&self.sled()?.db).map_err(|err| self.sled_err(err))?;
        Ok(())
    }

    /// Bytes sled uses on disk.
    pub(crate) fn size_on_disk(&self) -> u64 {
        match (&self.sled, &self.view) {
            (Some(sled), _) => sled.db.size_on_disk().unwrap_or(0),
            (None, Some(view)) => view.size(),
            (None, None) => 0,
        }
    }
}

fn cache_key(model_id: &str, text: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(model_id.len() + 17);
    key.extend_from_slice(model_id.as_bytes());
    key.push(0);
    key.extend_from_slice(&xxhash_rust::xxh3::xxh3_128(text.as_bytes()).to_be_bytes());
    key
}

/// `p` + file index + part index (big-endian), so parts sort in file order.
fn part_key(file_idx: usize, part_idx: usize) -> [u8; 6] {
    let mut key = [0u8; 6];
    key[0] = b'p';
    key[1] = u8::try_from(file_idx).expect("a checkpoint has few files");
    key[2..].copy_from_slice(&u32::try_from(part_idx).unwrap_or(u32::MAX).to_be_bytes());
    key
}

/// Each kind's vector dimension as `meta` records it.
fn dimensions_of(meta: &Meta) -> [Option<usize>; Kind::COUNT] {
    meta.spaces()
        .map(|space| space.map(|space| space.dimensions))
}

/// Drops the sled database, containing the panic sled 0.34 raises when the last sync of
/// its log file fails.
fn close_sled(sled: Sled) -> Result<()> {
    let dir = sled.dir.clone();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(sled))).map_err(|_| {
        Error::io_at(
            &dir,
            std::io::Error::other("the store's log could not be synced to disk as it closed"),
        )
    })
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Some(sled) = self.sled.take()
            && let Err(err) = close_sled(sled)
        {
            tracing::error!(error = %err, "closing the store");
        }
    }
}

/// Removes the snapshot files sled left unfinished (`snap.*.generating`) when its
/// process was killed while writing one.
///
/// sled 0.34 writes a snapshot to `snap.N.generating` and renames it to `snap.N` when
/// complete, but at open it reads the *last* `snap.*` file by name, `.generating` ones
/// included: after a kill at the wrong moment, it reads an empty file and refuses to open
/// an intact store ("empty/corrupt snapshot file found"). A snapshot only speeds up
/// recovery (sled replays its log from the last complete one), so an unfinished one can
/// always go. Found by the kill campaign (`tests/it/campaign.rs`).
fn remove_unfinished_snapshots(path: &Path) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(path) else {
        return Ok(()); // No store yet.
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("snap.") && name.ends_with(".generating") {
            let file = entry.path();
            tracing::info!(file = %file.display(), "removing an unfinished sled snapshot");
            std::fs::remove_file(&file).map_err(|err| Error::io_at(&file, err))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_keeps_the_segment_size_it_was_created_with() {
        let dir = tempfile::tempdir().unwrap();
        // A store an earlier version created, at sled's default segment size.
        let old = dir.path().join("old");
        drop(Store::open_segmented(&old, true, 1 << 20, 512 * 1024).unwrap());
        assert_eq!(segment_size(&old), 512 * 1024);
        drop(Store::open(&old, false, 1 << 20).unwrap());
        // A new one.
        let new = dir.path().join("new");
        assert_eq!(segment_size(&new), SEGMENT_SIZE);
        drop(Store::open(&new, true, 1 << 20).unwrap());
        assert_eq!(segment_size(&new), SEGMENT_SIZE);
        drop(Store::open(&new, false, 1 << 20).unwrap());
    }

    /// `n` chunks from `first`, with 384-d vectors, as the changes of one commit.
    fn chunk_changes(first: u64, n: u64) -> Vec<Change> {
        (first..first + n)
            .map(|i| {
                let vector: Vec<f32> = (0..384).map(|j| ((i * 31 + j) % 97) as f32).collect();
                let chunk = crate::Chunk::new(format!("c{i}"), format!("note number {i}"))
                    .with_embedding(vector.clone());
                let doc = crate::Document::from(chunk);
                let vectors = StoredVectors {
                    main: Some(vector),
                    patterns: Vec::new(),
                    external: true,
                };
                Change {
                    seq: i + 1,
                    written: Some((
                        DocId::new(i),
                        DocRecord::from_document(&doc, i + 1),
                        vectors,
                    )),
                    entities: Vec::new(),
                    removed: None,
                }
            })
            .collect()
    }

    fn stored_ids(store: &Store) -> Vec<u64> {
        store
            .read_all()
            .unwrap()
            .into_iter()
            .map(|(doc, _, _)| doc.as_u64())
            .collect()
    }

    #[test]
    fn a_commit_of_many_new_blocks_writes_them_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store"), true, 1 << 20).unwrap();
        // 200 blocks of 64 documents, each about 100 KB: what an import makes.
        let changes = chunk_changes(0, 200 << block::BLOCK_BITS);
        let data: usize = changes
            .iter()
            .filter_map(|c| c.written.as_ref())
            .map(|(doc, record, vectors)| BlockEntry::new(*doc, record, vectors).encoded_len())
            .sum();
        store.commit(&changes, 200 << block::BLOCK_BITS).unwrap();
        let file = std::fs::metadata(dir.path().join("store").join("db"))
            .unwrap()
            .len() as f64;
        // Written in one ascending batch alone, sled's file is 2.7 times the data.
        assert!(
            file < 1.4 * data as f64,
            "a store file of {file} bytes for {data} bytes of documents"
        );
        assert_eq!(stored_ids(&store).len(), 200 << block::BLOCK_BITS);
    }

    #[test]
    fn a_crash_between_reserving_blocks_and_the_batch_loses_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
        let store = Store::open(&path, true, 1 << 20).unwrap();
        store.commit(&chunk_changes(0, 100), 100).unwrap();
        // Documents 100 to 249 go to blocks 1 (which holds 64 to 99), 2 and 3: the
        // next commit reserves 2 and 3, then the process dies before its batch. (And an
        // empty block nothing fills, as a commit that never comes again leaves.)
        reserve_blocks(&store.sled().unwrap().main, vec![2, 3, 9]).unwrap();
        store.sled().unwrap().db.flush().unwrap();
        drop(store);

        let store = Store::open(&path, false, 1 << 20).unwrap();
        assert_eq!(stored_ids(&store), (0..100).collect::<Vec<_>>());
        assert_eq!(store.meta().next_doc, 100);
        let salvaged = store.read_salvageable();
        assert_eq!((salvaged.docs.len(), salvaged.unreadable), (100, 0));
        // The commit made again fills the reserved blocks.
        store.commit(&chunk_changes(100, 150), 250).unwrap();
        drop(store);
        let store = Store::open(&path, false, 1 << 20).unwrap();
        assert_eq!(stored_ids(&store), (0..250).collect::<Vec<_>>());
        let (record, vectors) = store.doc(DocId::new(200)).unwrap().unwrap();
        let doc = record.into_document().unwrap();
        assert_eq!(doc.id(), "c200");
        assert_eq!(
            vectors.unwrap().main.unwrap()[1],
            ((200 * 31 + 1) % 97) as f32
        );
    }

    #[test]
    fn marks_are_pruned_to_the_newest_and_the_horizon_follows() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store"), true, 1 << 20).unwrap();
        let id = |i: usize| format!("q{i:012x}");
        for i in 0..30 {
            store.add_mark(&id(i), &[4], 20).unwrap();
            // The same mark again is no new mark.
            store.add_mark(&id(i), &[4], 20).unwrap();
            assert!(
                store.sled().unwrap().queries.len() <= 22,
                "{} marks after {i}",
                store.sled().unwrap().queries.len()
            );
        }
        // More than 22 marks are pruned to the newest 20: at the 23rd, 26th and 29th.
        assert_eq!(store.sled().unwrap().queries.len(), 21);
        assert_eq!(store.marks_horizon().unwrap(), Some(id(8)));
        assert!(store.logged_query(&id(9)).unwrap().is_some());
        assert!(store.logged_query(&id(8)).unwrap().is_none());
        // Clearing the windows keeps the marks, their count and the horizon.
        store.clear_feedback().unwrap();
        assert_eq!(store.marks_horizon().unwrap(), Some(id(8)));
        store.add_mark(&id(30), &[4], 20).unwrap();
        assert_eq!(store.sled().unwrap().queries.len(), 22);
    }
}
