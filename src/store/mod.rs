//! The source of truth: documents, vectors, id maps, change log and checkpoints in sled.
//!
//! Everything else on disk (the tantivy text index, the HNSW graph) is derived from what
//! this module stores and can be rebuilt from it. One commit of the engine is one atomic
//! `apply_batch` on the `main` tree followed by a flush, so after [`Store::commit`]
//! returns, a crash loses nothing of it.

mod keys;
mod meta;
mod record;

use std::collections::HashMap;
use std::path::Path;

use crate::doc::Document;
use crate::id::DocId;
use crate::{Error, ErrorKind, Kind, Result};

pub(crate) use self::meta::Meta;
pub(crate) use self::record::{DocRecord, LogEntry, StoredVectors};

/// One change to apply at commit.
#[derive(Debug)]
pub(crate) enum PendingOp {
    /// Insert or replace a document (its embedding fields are empty: vectors travel in
    /// `vectors`).
    Upsert {
        doc: Box<Document>,
        vectors: StoredVectors,
    },
    /// Remove a document if it exists.
    Delete {
        kind: Kind,
        tenant: String,
        id: String,
    },
}

/// What one applied change did, for the derived indexes.
#[derive(Debug)]
pub(crate) struct Applied {
    /// The version written, with its vectors.
    pub(crate) written: Option<(DocId, DocRecord, StoredVectors)>,
    /// The version removed (replaced or deleted).
    pub(crate) removed: Option<DocId>,
}

/// The sled database of one index.
pub(crate) struct Store {
    db: sled::Db,
    main: sled::Tree,
    /// Embeddings by model and text hash (`model id` + 0 + xxh3-128 of the text, BE).
    embed_cache: sled::Tree,
    /// Recent searches: query id to the legs that found the top hit.
    queries: sled::Tree,
    /// The feedback window (`window` to bincode entries).
    feedback: sled::Tree,
    /// One checkpoint tree per kind (`graph_rule`, `graph_chunk`).
    graphs: [sled::Tree; 2],
    meta: std::sync::Mutex<Meta>,
}

impl Store {
    /// Opens (or, with `create`, initialises) the store under `path`.
    pub(crate) fn open(path: &Path, create: bool, cache_bytes: u64) -> Result<Store> {
        let db = sled::Config::new()
            .path(path)
            .cache_capacity(cache_bytes)
            .flush_every_ms(Some(500))
            .open()
            .map_err(|err| sled_error(err, path))?;
        let main = db.open_tree("main").map_err(sled_err)?;
        let embed_cache = db.open_tree("embed_cache").map_err(sled_err)?;
        let queries = db.open_tree("queries").map_err(sled_err)?;
        let feedback = db.open_tree("feedback").map_err(sled_err)?;
        let graphs = [
            db.open_tree("graph_rule").map_err(sled_err)?,
            db.open_tree("graph_chunk").map_err(sled_err)?,
        ];
        let meta = if create {
            let meta = Meta::new();
            let mut batch = sled::Batch::default();
            meta.write(&mut batch);
            main.apply_batch(batch).map_err(sled_err)?;
            db.flush().map_err(sled_err)?;
            meta
        } else {
            Meta::read(&main)?
        };
        Ok(Store {
            db,
            main,
            embed_cache,
            queries,
            feedback,
            graphs,
            meta: std::sync::Mutex::new(meta),
        })
    }

    pub(crate) fn meta(&self) -> Meta {
        self.lock_meta().clone()
    }

    fn lock_meta(&self) -> std::sync::MutexGuard<'_, Meta> {
        self.meta
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Records the vector dimension and embedder of the index (once, at first use).
    pub(crate) fn set_vector_space(
        &self,
        dimensions: usize,
        model_id: &str,
        embedder: Option<&str>,
    ) -> Result<()> {
        let mut guard = self.lock_meta();
        let mut meta = guard.clone();
        meta.dimensions = Some(dimensions);
        meta.model_id = Some(model_id.to_string());
        meta.embedder = embedder.map(str::to_string);
        let mut batch = sled::Batch::default();
        meta.write(&mut batch);
        self.main.apply_batch(batch).map_err(sled_err)?;
        self.db.flush().map_err(sled_err)?;
        *guard = meta;
        Ok(())
    }

    /// The current version of a user id.
    pub(crate) fn lookup(&self, kind: Kind, tenant: &str, id: &str) -> Result<Option<DocId>> {
        let value = self
            .main
            .get(keys::id_key(kind, tenant, id))
            .map_err(sled_err)?;
        value
            .map(|v| keys::decode_u64(&v).map(DocId::new))
            .transpose()
    }

    pub(crate) fn doc(&self, doc: DocId) -> Result<Option<DocRecord>> {
        let value = self.main.get(keys::doc_key(doc)).map_err(sled_err)?;
        value.map(|v| record::decode(&v, "document")).transpose()
    }

    pub(crate) fn vectors(&self, doc: DocId) -> Result<Option<StoredVectors>> {
        let value = self.main.get(keys::vectors_key(doc)).map_err(sled_err)?;
        value.map(|v| record::decode(&v, "vectors")).transpose()
    }

    /// Every stored document, in `DocId` order.
    pub(crate) fn docs(&self) -> impl Iterator<Item = Result<(DocId, DocRecord)>> + '_ {
        self.main.scan_prefix([keys::DOC]).map(|item| {
            let (key, value) = item.map_err(sled_err)?;
            let doc = DocId::new(keys::decode_prefixed_u64(&key)?);
            Ok((doc, record::decode(&value, "document")?))
        })
    }

    /// Every stored vector set, in `DocId` order.
    pub(crate) fn all_vectors(&self) -> impl Iterator<Item = Result<(DocId, StoredVectors)>> + '_ {
        self.main.scan_prefix([keys::VECTORS]).map(|item| {
            let (key, value) = item.map_err(sled_err)?;
            let doc = DocId::new(keys::decode_prefixed_u64(&key)?);
            Ok((doc, record::decode(&value, "vectors")?))
        })
    }

    /// The current versions of one kind and tenant (every tenant when `None`), ordered by
    /// tenant and then user id (byte order).
    pub(crate) fn ids(
        &self,
        kind: Kind,
        tenant: Option<&str>,
    ) -> impl Iterator<Item = Result<DocId>> + '_ {
        let prefix = match tenant {
            Some(tenant) => keys::id_prefix(kind, tenant),
            None => vec![keys::ID, kind.as_u8()],
        };
        self.main.scan_prefix(prefix).map(|item| {
            let (_, value) = item.map_err(sled_err)?;
            keys::decode_u64(&value).map(DocId::new)
        })
    }

    /// Log entries with a sequence number above `after`, in order.
    pub(crate) fn log_after(&self, after: u64) -> Result<Vec<(u64, LogEntry)>> {
        let start = keys::log_key(after.saturating_add(1));
        let end = keys::log_key(u64::MAX);
        let mut entries = Vec::new();
        for item in self.main.range(start..=end) {
            let (key, value) = item.map_err(sled_err)?;
            entries.push((
                keys::decode_prefixed_u64(&key)?,
                record::decode(&value, "log entry")?,
            ));
        }
        Ok(entries)
    }

    /// Removes log entries up to and including `upto` (every derived index has them).
    ///
    /// Not flushed: losing the removal in a crash only leaves entries that replay as
    /// no-ops.
    pub(crate) fn truncate_log(&self, upto: u64) -> Result<()> {
        let mut batch = sled::Batch::default();
        for item in self.main.range(keys::log_key(0)..=keys::log_key(upto)) {
            let (key, _) = item.map_err(sled_err)?;
            batch.remove(key);
        }
        self.main.apply_batch(batch).map_err(sled_err)
    }

    /// Applies `ops` in order as one atomic, durable batch.
    ///
    /// Upserts get a fresh [`DocId`]; the version they replace is removed. Deleting an id
    /// that does not exist is a no-op (it gets no sequence number).
    pub(crate) fn commit(&self, ops: Vec<PendingOp>) -> Result<Vec<Applied>> {
        let mut guard = self.lock_meta();
        let mut meta = guard.clone();
        let mut batch = sled::Batch::default();
        let mut applied = Vec::with_capacity(ops.len());
        // Id mappings changed earlier in this batch, which `lookup` cannot see yet.
        let mut overlay: HashMap<Vec<u8>, Option<DocId>> = HashMap::new();
        for op in ops {
            match op {
                PendingOp::Upsert { doc, vectors } => {
                    let id_key = keys::id_key(doc.kind(), doc.tenant_id(), doc.id());
                    let previous = match overlay.get(&id_key) {
                        Some(previous) => *previous,
                        None => self.lookup(doc.kind(), doc.tenant_id(), doc.id())?,
                    };
                    if let Some(previous) = previous {
                        batch.remove(&keys::doc_key(previous));
                        batch.remove(&keys::vectors_key(previous));
                    }
                    if meta.next_doc > DocId::MAX {
                        return Err(Error::invalid_input(
                            "the index has run out of document ids",
                        ));
                    }
                    let new_doc = DocId::new(meta.next_doc);
                    meta.next_doc += 1;
                    meta.last_seq += 1;
                    let seq = meta.last_seq;
                    let record = DocRecord::from_document(&doc, seq);
                    batch.insert(&keys::doc_key(new_doc), record::encode(&record));
                    if !vectors.is_empty() {
                        batch.insert(&keys::vectors_key(new_doc), record::encode(&vectors));
                    }
                    batch.insert(id_key.as_slice(), &new_doc.to_be_bytes());
                    let entry = LogEntry::Upsert {
                        doc: new_doc.as_u64(),
                        replaced: previous.map(DocId::as_u64),
                    };
                    batch.insert(&keys::log_key(seq), record::encode(&entry));
                    overlay.insert(id_key, Some(new_doc));
                    applied.push(Applied {
                        written: Some((new_doc, record, vectors)),
                        removed: previous,
                    });
                }
                PendingOp::Delete { kind, tenant, id } => {
                    let id_key = keys::id_key(kind, &tenant, &id);
                    let previous = match overlay.get(&id_key) {
                        Some(previous) => *previous,
                        None => self.lookup(kind, &tenant, &id)?,
                    };
                    let Some(previous) = previous else { continue };
                    batch.remove(&keys::doc_key(previous));
                    batch.remove(&keys::vectors_key(previous));
                    batch.remove(id_key.as_slice());
                    meta.last_seq += 1;
                    let seq = meta.last_seq;
                    let entry = LogEntry::Delete {
                        doc: previous.as_u64(),
                    };
                    batch.insert(&keys::log_key(seq), record::encode(&entry));
                    overlay.insert(id_key, None);
                    applied.push(Applied {
                        written: None,
                        removed: Some(previous),
                    });
                }
            }
        }
        if applied.is_empty() {
            return Ok(applied);
        }
        meta.write(&mut batch);
        self.main.apply_batch(batch).map_err(sled_err)?;
        self.db.flush().map_err(sled_err)?;
        *guard = meta;
        Ok(applied)
    }

    fn graph_tree(&self, kind: Kind) -> &sled::Tree {
        &self.graphs[usize::from(kind.as_u8())]
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
        let tree = self.graph_tree(kind);
        let mut batch = sled::Batch::default();
        for item in tree.iter() {
            let (key, _) = item.map_err(sled_err)?;
            batch.remove(key);
        }
        for (file_idx, file) in files.iter().enumerate() {
            for (part_idx, part) in file.chunks(PART_BYTES).enumerate() {
                batch.insert(&part_key(file_idx, part_idx), part);
            }
        }
        batch.insert(b"manifest".as_slice(), manifest);
        tree.apply_batch(batch).map_err(sled_err)?;
        self.db.flush().map_err(sled_err)?;
        Ok(())
    }

    /// The manifest of the graph checkpoint of `kind`, if there is one.
    pub(crate) fn checkpoint_manifest(&self, kind: Kind) -> Result<Option<Vec<u8>>> {
        Ok(self
            .graph_tree(kind)
            .get(b"manifest")
            .map_err(sled_err)?
            .map(|v| v.to_vec()))
    }

    /// The bytes of the first `n_files` files of the graph checkpoint of `kind`.
    pub(crate) fn checkpoint_files(&self, kind: Kind, n_files: usize) -> Result<Vec<Vec<u8>>> {
        let tree = self.graph_tree(kind);
        let mut files = Vec::with_capacity(n_files);
        for file_idx in 0..n_files {
            let mut bytes = Vec::new();
            let prefix = part_key(file_idx, 0);
            for item in tree.scan_prefix(&prefix[..2]) {
                let (_, value) = item.map_err(sled_err)?;
                bytes.extend_from_slice(&value);
            }
            files.push(bytes);
        }
        Ok(files)
    }

    /// The cached embedding of `text` by `model_id`: `Some(empty)` for a text that
    /// embeds to nothing.
    pub(crate) fn cached_embedding(&self, model_id: &str, text: &str) -> Result<Option<Vec<f32>>> {
        let value = self
            .embed_cache
            .get(cache_key(model_id, text))
            .map_err(sled_err)?;
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
        self.embed_cache.apply_batch(batch).map_err(sled_err)
    }

    /// Records which legs found the top hit of a search (not flushed: a crash may lose
    /// the most recent entries, which only makes feedback on them fail).
    pub(crate) fn log_query(&self, query_id: &str, legs: u8) -> Result<()> {
        self.queries
            .insert(query_id.as_bytes(), &[legs])
            .map_err(sled_err)?;
        Ok(())
    }

    /// The legs logged for a query id.
    pub(crate) fn logged_query(&self, query_id: &str) -> Result<Option<u8>> {
        let value = self.queries.get(query_id.as_bytes()).map_err(sled_err)?;
        Ok(value.and_then(|v| v.first().copied()))
    }

    /// Keeps the `keep` most recent query log entries (ids sort by time).
    pub(crate) fn prune_query_log(&self, keep: usize) -> Result<()> {
        let len = self.queries.len();
        if len <= keep {
            return Ok(());
        }
        let mut batch = sled::Batch::default();
        for item in self.queries.iter().take(len - keep) {
            let (key, _) = item.map_err(sled_err)?;
            batch.remove(key);
        }
        self.queries.apply_batch(batch).map_err(sled_err)
    }

    /// The stored feedback entries.
    pub(crate) fn feedback_entries(&self) -> Result<Vec<crate::feedback::FeedbackEntry>> {
        match self.feedback.get(b"window").map_err(sled_err)? {
            Some(bytes) => record::decode(&bytes, "feedback window"),
            None => Ok(Vec::new()),
        }
    }

    /// Replaces the stored feedback entries, durably.
    pub(crate) fn save_feedback(&self, entries: &[crate::feedback::FeedbackEntry]) -> Result<()> {
        self.feedback
            .insert(b"window", record::encode(&entries))
            .map_err(sled_err)?;
        self.db.flush().map_err(sled_err)?;
        Ok(())
    }

    /// Flushes every tree to disk.
    pub(crate) fn flush(&self) -> Result<()> {
        self.db.flush().map_err(sled_err)?;
        Ok(())
    }

    /// Bytes sled uses on disk.
    pub(crate) fn size_on_disk(&self) -> u64 {
        self.db.size_on_disk().unwrap_or(0)
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

pub(crate) fn sled_err(err: sled::Error) -> Error {
    match err {
        sled::Error::Io(io) => Error::with_source(ErrorKind::Io, io),
        sled::Error::Corruption { .. } => Error::with_source(
            ErrorKind::Corrupt {
                what: "the document store (sled)".to_string(),
            },
            err,
        ),
        other => Error::storage("sled", other),
    }
}

fn sled_error(err: sled::Error, path: &Path) -> Error {
    if let sled::Error::Io(io) = &err {
        if io.kind() == std::io::ErrorKind::WouldBlock
            || io.to_string().contains("could not acquire lock")
        {
            return Error::with_source(
                ErrorKind::Locked {
                    path: path.to_path_buf(),
                },
                err,
            );
        }
    }
    sled_err(err)
}
