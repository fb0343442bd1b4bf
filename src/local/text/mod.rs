//! The text leg: "here is a query text, give me BM25 candidates".
//!
//! A tantivy index over the text of every live document, keyed by the document's
//! [`DocId`] (an indexed fast field). It stores no document: results are ordinals that
//! the engine resolves in its catalog. The commit payload records the sequence number of
//! the last change the index includes, which is how [`crate::Engine`] finds out on open
//! that the index is behind the store and must catch up (or be rebuilt).

pub(crate) mod directory;
mod tokenizer;

use rustc_hash::FxHashMap;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};

use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::{
    Bm25StatisticsProvider, Bm25Weight, BooleanQuery, EnableScoring, Occur, Query, TermQuery,
};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::{
    DocSet, Index, IndexReader, IndexWriter, ReloadPolicy, TERMINATED, TantivyDocument, Term,
};

pub(crate) use self::directory::Protected;
use self::directory::{SnapshotDirectory, WriterDirectory};
use self::tokenizer::{IDENT, PreAnalyzed, WORDS};
use crate::analysis::text::{self as analyzer, Analysis};
use crate::model::id::DocId;
use crate::{Error, Result};

/// Memory budget of the index writer.
const WRITER_MEMORY_BYTES: usize = 64 << 20;

/// The tantivy text index of one engine.
pub(crate) struct TextIndex {
    index: Index,
    /// `None` for a reader, which never writes (and takes no writer lock).
    writer: Option<Mutex<IndexWriter>>,
    /// A writer's: the files of the commit published for readers, which it keeps.
    protected: Option<Protected>,
    reader: IndexReader,
    fields: Fields,
    /// Whether a rule's patterns are indexed with its condition and action.
    patterns_in_text: bool,
    /// Each segment's ids, by segment doc, when they ascend (what commits write:
    /// documents are numbered as they are written), so that a document is found by
    /// binary search instead of a term lookup; `None` for a segment whose ids do not.
    ascending_ids: Remembered<tantivy::index::SegmentId, Option<Arc<[u64]>>>,
    /// Live document frequencies in segments with deleted documents.
    live_freqs: LiveFreqs,
}

#[derive(Clone, Copy)]
struct Fields {
    doc_id: Field,
    words: Field,
    ident: Field,
    /// The document's token counts, `words << 32 | ident`: the per-tenant BM25
    /// statistics are summed from them.
    tokens: Field,
}

/// An analysed query: the terms of each field, in one scope (kind and tenant), with the
/// scope's statistics.
#[derive(Debug, Clone, Default)]
pub(crate) struct TextQuery {
    query: Option<BooleanQueryParts>,
    scope: ScopeStats,
}

/// BM25 statistics of one scope (one kind of one tenant): its live documents and their
/// token counts per field. Terms carry their scope as a prefix, so document frequencies
/// are the scope's own too: no tenant's scores depend on another tenant's documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ScopeStats {
    /// Live documents.
    pub(crate) docs: u64,
    /// Tokens of the live documents: `[words, ident]`.
    pub(crate) tokens: [u64; 2],
}

#[derive(Debug, Clone)]
struct BooleanQueryParts {
    /// Every term of both fields, sorted, without repeats.
    terms: Vec<Term>,
    /// The `words` terms (prose) that are not function words (`i`, `my`, `what`), without
    /// repeats: what coverage is measured on.
    words: Vec<Term>,
    /// The `ident` terms that are codes ([`analyzer::is_code`]), without repeats.
    codes: Vec<Term>,
}

pub(crate) use crate::retrieve::Coverage;

impl TextQuery {
    /// Whether the query has no searchable term (empty text, only stop words), or its
    /// scope has no document.
    pub(crate) fn is_empty(&self) -> bool {
        self.query.is_none() || self.scope.docs == 0
    }

    /// The BM25 weight of each term of the query, in the order of the clauses of
    /// [`TextQuery::to_query`] (none for an empty query or scope).
    fn term_weights(
        &self,
        statistics: &ScopedStatistics<'_>,
        searcher: &tantivy::Searcher,
    ) -> Result<Vec<Box<dyn tantivy::query::Weight>>> {
        let Some(parts) = self.query.as_ref().filter(|_| self.scope.docs > 0) else {
            return Ok(Vec::new());
        };
        parts
            .terms
            .iter()
            .map(|term| {
                TermQuery::new(term.clone(), IndexRecordOption::WithFreqs)
                    .weight(EnableScoring::enabled_from_statistics_provider(
                        statistics, searcher,
                    ))
                    .map_err(tantivy_err)
            })
            .collect()
    }

    fn to_query(&self) -> Option<BooleanQuery> {
        if self.scope.docs == 0 {
            return None;
        }
        let parts = self.query.as_ref()?;
        let clauses: Vec<(Occur, Box<dyn Query>)> = parts
            .terms
            .iter()
            .map(|term| {
                let query: Box<dyn Query> =
                    Box::new(TermQuery::new(term.clone(), IndexRecordOption::WithFreqs));
                (Occur::Should, query)
            })
            .collect();
        Some(BooleanQuery::new(clauses))
    }
}

/// A document version analysed for the index, with its token counts `[words, ident]`.
pub(crate) struct Prepared {
    entry: TantivyDocument,
    pub(crate) counts: [u32; 2],
}

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let doc_id = builder.add_u64_field("doc_id", INDEXED | FAST);
    let text_options = |tokenizer: &str| {
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(tokenizer)
                .set_index_option(IndexRecordOption::WithFreqs),
        )
    };
    let words = builder.add_text_field("words", text_options(WORDS));
    let ident = builder.add_text_field("ident", text_options(IDENT));
    let tokens = builder.add_u64_field("tokens", FAST);
    (
        builder.build(),
        Fields {
            doc_id,
            words,
            ident,
            tokens,
        },
    )
}

/// The prefix of every term of one scope: the kind's letter (`r`, `c`, `s`, `t`), the tenant, a NUL (tenant ids hold
/// no control character).
fn scope_prefix(kind: crate::Kind, tenant: &str) -> String {
    let k = match kind {
        crate::Kind::Rule => 'r',
        crate::Kind::Chunk => 'c',
        crate::Kind::Scenario => 's',
        crate::Kind::Tool => 't',
    };
    format!("{k}{tenant}\u{0}")
}

/// tantivy's BM25 statistics, taken from one scope: its live documents and tokens, and
/// document frequencies counted over live documents only (so that when deleted
/// documents are merged away, a moment other tenants' writes decide, no score moves).
struct ScopedStatistics<'a> {
    searcher: &'a tantivy::Searcher,
    scope: ScopeStats,
    fields: Fields,
    live: &'a LiveFreqs,
    /// Frequencies already looked up (a plan's), answered without the term dictionary.
    known: Option<&'a FxHashMap<Term, u64>>,
}

impl tantivy::query::Bm25StatisticsProvider for ScopedStatistics<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        Ok(if field == self.fields.ident {
            self.scope.tokens[1]
        } else {
            self.scope.tokens[0]
        })
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.scope.docs)
    }

    /// At most the scope's documents: BM25's idf (tantivy asserts it) needs no more
    /// documents with a term than documents.
    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let freq = match self.known.and_then(|known| known.get(term)) {
            Some(&freq) => freq,
            None => self.live.doc_freq(self.searcher, term)?,
        };
        Ok(freq.min(self.scope.docs))
    }
}

/// The live document frequencies of terms in segments with deleted documents, which
/// only a walk of the term's postings counts: remembered per segment, its number of
/// deleted documents (deletions only accumulate, so the same number is the same set)
/// and term. Without it, a query would walk the whole postings of each of its terms
/// three times as soon as a few documents are deleted.
struct LiveFreqs(Remembered<(tantivy::index::SegmentId, u32, Term), u32>);

impl Default for LiveFreqs {
    fn default() -> LiveFreqs {
        LiveFreqs(Remembered::new(1 << 16))
    }
}

/// Values derived from what a segment holds, which does not change, remembered by key up
/// to `kept` of them, then all forgotten at once (so are those of segments merged away).
struct Remembered<K, V> {
    values: Mutex<FxHashMap<K, V>>,
    kept: usize,
}

impl<K: std::hash::Hash + Eq, V: Clone> Remembered<K, V> {
    fn new(kept: usize) -> Remembered<K, V> {
        Remembered {
            values: Mutex::default(),
            kept,
        }
    }

    /// The value of `key`, made by `make` the first time (outside the lock: two threads
    /// may both make it, and make the same).
    fn get<E>(
        &self,
        key: K,
        make: impl FnOnce() -> std::result::Result<V, E>,
    ) -> std::result::Result<V, E> {
        let lock = || self.values.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(value) = lock().get(&key) {
            return Ok(value.clone());
        }
        let value = make()?;
        let mut values = lock();
        if values.len() >= self.kept {
            values.clear();
        }
        values.insert(key, value.clone());
        Ok(value)
    }
}

impl LiveFreqs {
    /// The number of live documents that contain `term`.
    fn doc_freq(&self, searcher: &tantivy::Searcher, term: &Term) -> tantivy::Result<u64> {
        let mut total = 0u64;
        for segment in searcher.segment_readers() {
            let inverted = segment.inverted_index(term.field())?;
            let Some(alive) = segment.alive_bitset() else {
                total += u64::from(inverted.doc_freq(term)?);
                continue;
            };
            let key = (
                segment.segment_id(),
                segment.num_deleted_docs(),
                term.clone(),
            );
            let live = self.0.get(key, || {
                Ok::<_, tantivy::TantivyError>(
                    inverted
                        .read_postings(term, IndexRecordOption::Basic)?
                        .map_or(0, |postings| postings.doc_freq_given_deletes(alive)),
                )
            })?;
            total += u64::from(live);
        }
        Ok(total)
    }
}

/// A tantivy error; an I/O one as the operating system's error naming the file (in
/// `text/`), not tantivy's debug text of it.
fn tantivy_err(err: tantivy::TantivyError) -> Error {
    use tantivy::TantivyError;
    use tantivy::directory::error::{OpenReadError, OpenWriteError};
    let plain = |io: &std::io::Error| match io.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => std::io::Error::new(io.kind(), io.to_string()),
    };
    let in_text = |file: &Path| Path::new("text").join(file);
    match &err {
        TantivyError::OpenWriteError(OpenWriteError::IoError { io_error, filepath })
        | TantivyError::OpenReadError(OpenReadError::IoError { io_error, filepath }) => {
            Error::io_at(&in_text(filepath), plain(io_error))
        }
        TantivyError::IoError(io_error) => Error::io_at(Path::new("text"), plain(io_error)),
        _ => Error::storage("tantivy", err),
    }
}

/// Runs `f`, turning a panic into a `Corrupt` error: tantivy trusts its files, and a
/// damaged one can make it panic (an offset read from garbage) instead of failing. A
/// damaged file must never take the process down.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    quiet_panics();
    GUARDED.with(|depth| depth.set(depth.get() + 1));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    GUARDED.with(|depth| depth.set(depth.get() - 1));
    result.unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(Error::corrupt(format!(
            "text index: {what} failed on damaged data ({message}); run `ruche check` and `ruche repair`"
        )))
    })
}

std::thread_local! {
    /// How many [`guarded`] calls this thread is inside.
    static GUARDED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Installs, once, a panic hook that keeps quiet about the panics [`guarded`] turns into
/// errors (the error says what happened; "thread panicked" on stderr would only alarm)
/// and hands every other panic to the hook that was there before.
fn quiet_panics() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if GUARDED.with(std::cell::Cell::get) > 0 {
                tracing::debug!(panic = %info, "tantivy panicked on damaged data");
            } else {
                previous(info);
            }
        }));
    });
}

/// The commit payload: the last sequence number the index includes, and how rule text
/// was built (an index built another way is rebuilt).
#[derive(serde::Serialize, serde::Deserialize)]
struct Payload {
    seq: u64,
    #[serde(default)]
    patterns_in_text: bool,
    /// [`ANALYZER_VERSION`] of the build that wrote the index (absent: version 1).
    #[serde(default = "first_analyzer_version")]
    analyzer_version: u32,
}

/// The version of the analyzers' output. An index written with another version is
/// rebuilt from the store, so that query and document terms always agree. Version 2:
/// numbers of 5 digits or more are `ident` tokens. Version 3: terms carry their scope
/// (kind and tenant), and documents their token counts.
const ANALYZER_VERSION: u32 = 3;

fn first_analyzer_version() -> u32 {
    1
}

/// The sequence number a commit's `meta.json` records in its payload.
pub(crate) fn snapshot_seq(meta: &str) -> Result<u64> {
    #[derive(serde::Deserialize)]
    struct Meta {
        payload: Option<String>,
    }
    let damaged = |why: String| Error::corrupt(format!("text index commit: {why}"));
    let meta: Meta = serde_json::from_str(meta).map_err(|err| damaged(err.to_string()))?;
    let payload = meta
        .payload
        .ok_or_else(|| damaged("no payload".to_string()))?;
    let payload: Payload =
        serde_json::from_str(&payload).map_err(|err| damaged(err.to_string()))?;
    Ok(payload.seq)
}

/// Removes the files tantivy made in `dir` ([`directory::is_tantivy_file`]), and no other.
fn remove_tantivy_files(dir: &Path) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(Error::io_at(dir, err)),
    };
    for entry in entries {
        let entry = entry.map_err(|err| Error::io_at(dir, err))?;
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if is_file && directory::is_tantivy_file(&entry.file_name().to_string_lossy()) {
            let path = entry.path();
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => return Err(Error::io_at(&path, err)),
            }
        }
    }
    Ok(())
}

impl TextIndex {
    /// Opens the index in `dir` for writing, returning it with the sequence number it
    /// includes. The files `protected` names (the published snapshot's) are never
    /// deleted.
    ///
    /// # Errors
    ///
    /// Fails when the directory holds no index, a corrupt one, or one of another schema;
    /// the engine then rebuilds it with [`TextIndex::create`].
    pub(crate) fn open(
        dir: &Path,
        patterns_in_text: bool,
        protected: &Protected,
    ) -> Result<(TextIndex, u64)> {
        let (text, seq) = guarded("opening", || {
            let directory = WriterDirectory::open(dir, protected.clone()).map_err(tantivy_err)?;
            let index = Index::open(directory).map_err(tantivy_err)?;
            TextIndex::open_index(index, patterns_in_text, Some(protected))
        })?;
        text.remove_orphans(dir, protected);
        Ok((text, seq))
    }

    /// Opens the commit of the index in `dir` that `meta` (a copy of its `meta.json`)
    /// describes, to read only: nothing is written and no lock is taken.
    ///
    /// # Errors
    ///
    /// As [`TextIndex::open`]; a segment file that is gone (a writer published a newer
    /// snapshot and removed it) is an I/O error.
    pub(crate) fn open_snapshot(
        dir: &Path,
        patterns_in_text: bool,
        meta: &str,
    ) -> Result<(TextIndex, u64)> {
        guarded("opening", || {
            let directory = SnapshotDirectory::open(dir, meta).map_err(tantivy_err)?;
            let index = Index::open(directory).map_err(tantivy_err)?;
            TextIndex::open_index(index, patterns_in_text, None)
        })
    }

    /// The files of the commit `meta` describes (a copy of the index's `meta.json`):
    /// every name its segments may use.
    pub(crate) fn snapshot_files(dir: &Path, meta: &str) -> Result<HashSet<PathBuf>> {
        Ok(TextIndex::snapshot_files_required(dir, meta)?.0)
    }

    /// [`TextIndex::snapshot_files`], and the files the commit cannot be opened without
    /// (each segment's postings, and its deletes when it has some).
    fn snapshot_files_required(dir: &Path, meta: &str) -> Result<(HashSet<PathBuf>, Vec<PathBuf>)> {
        use tantivy::index::SegmentComponent;
        guarded("reading a commit", || {
            let directory = SnapshotDirectory::open(dir, meta).map_err(tantivy_err)?;
            let index = Index::open(directory).map_err(tantivy_err)?;
            let metas = index.load_metas().map_err(tantivy_err)?;
            let mut required = Vec::new();
            for segment in &metas.segments {
                required.push(segment.relative_path(SegmentComponent::Postings));
                if segment.has_deletes() {
                    required.push(segment.relative_path(SegmentComponent::Delete));
                }
            }
            Ok((metas.list_segment_files(), required))
        })
    }

    fn open_index(
        index: Index,
        patterns_in_text: bool,
        protected: Option<&Protected>,
    ) -> Result<(TextIndex, u64)> {
        let (expected, fields) = schema();
        if index.schema() != expected {
            return Err(Error::corrupt(
                "text index schema differs from this build's",
            ));
        }
        let metas = index.load_metas().map_err(tantivy_err)?;
        let payload = metas
            .payload
            .ok_or_else(|| Error::corrupt("text index has no commit payload"))?;
        let payload: Payload = serde_json::from_str(&payload)
            .map_err(|err| Error::corrupt(format!("text index payload: {err}")))?;
        if payload.patterns_in_text != patterns_in_text {
            return Err(Error::corrupt(
                "text index built with another `fusion.patterns_in_text`",
            ));
        }
        if payload.analyzer_version != ANALYZER_VERSION {
            return Err(Error::corrupt(format!(
                "text index built with analyzer version {} (this build: {ANALYZER_VERSION})",
                payload.analyzer_version
            )));
        }
        let text = TextIndex::with_index(index, fields, patterns_in_text, protected)?;
        // tantivy trusts its files: a flipped bit in a postings list would change answers
        // silently. Every file's checksum is verified before the index is used.
        let damaged = text.corrupted_files()?;
        if !damaged.is_empty() {
            let names: Vec<String> = damaged.iter().map(|f| f.display().to_string()).collect();
            return Err(Error::corrupt(format!(
                "text index: checksum mismatch in {}",
                names.join(", ")
            )));
        }
        Ok((text, payload.seq))
    }

    /// An empty index in memory: what a reader searches when the index's own is
    /// damaged (its searches then fail: see `Inner::text_damaged`).
    pub(crate) fn empty_in_memory(patterns_in_text: bool) -> Result<TextIndex> {
        let (schema, fields) = schema();
        let index = Index::create_in_ram(schema);
        TextIndex::with_index(index, fields, patterns_in_text, None)
    }

    /// Creates an empty index in `dir`, in place of the index there: tantivy's files
    /// go, any other file stays.
    pub(crate) fn create(
        dir: &Path,
        patterns_in_text: bool,
        protected: &Protected,
    ) -> Result<TextIndex> {
        remove_tantivy_files(dir)?;
        std::fs::create_dir_all(dir).map_err(|err| Error::io_at(dir, err))?;
        let (schema, fields) = schema();
        // Its files are gone: nothing is kept for readers any more.
        protected.set(HashSet::new());
        let directory = WriterDirectory::open(dir, protected.clone()).map_err(tantivy_err)?;
        let index = Index::create(directory, schema, tantivy::IndexSettings::default())
            .map_err(tantivy_err)?;
        let text = TextIndex::with_index(index, fields, patterns_in_text, Some(protected))?;
        text.commit(0)?;
        Ok(text)
    }

    /// The index's last commit as readers open it (a copy of its `meta.json`, with the
    /// sequence number the commit includes), its files protected from then on. A merge
    /// that ends meanwhile can remove files of the commit before they are protected:
    /// then the newer commit it made is taken.
    pub(crate) fn snapshot_protected(&self, dir: &Path) -> Result<(String, u64)> {
        for _ in 0..100 {
            let (meta, seq) = self.snapshot()?;
            let (files, required) = TextIndex::snapshot_files_required(dir, &meta)?;
            if let Some(protected) = &self.protected {
                protected.add(&files);
            }
            if required.iter().all(|file| dir.join(file).exists()) {
                return Ok((meta, seq));
            }
        }
        Err(Error::corrupt(
            "text index: its commit changed faster than it could be published",
        ))
    }

    /// The index's last commit: a copy of its `meta.json`, with the sequence number the
    /// commit includes.
    fn snapshot(&self) -> Result<(String, u64)> {
        use tantivy::directory::Directory;
        let bytes = self
            .index
            .directory()
            .atomic_read(Path::new(directory::META_FILE))
            .map_err(|err| Error::storage("tantivy", err))?;
        let meta = String::from_utf8(bytes)
            .map_err(|_| Error::corrupt("text index: meta.json is not UTF-8"))?;
        let seq = snapshot_seq(&meta)?;
        Ok((meta, seq))
    }

    /// Keeps the files of the commit `meta` describes (published for readers) until
    /// another is published, and removes the files tantivy deleted that only the
    /// snapshot before named.
    pub(crate) fn protect(&self, dir: &Path, meta: &str) -> Result<()> {
        if let Some(protected) = &self.protected {
            for path in protected.set(TextIndex::snapshot_files(dir, meta)?) {
                let path = dir.join(path);
                if let Err(err) = std::fs::remove_file(&path)
                    && err.kind() != std::io::ErrorKind::NotFound
                {
                    tracing::warn!(path = %path.display(), error = %err, "could not remove a text index file");
                }
            }
        }
        Ok(())
    }

    /// Removes the segment files in `dir` that tantivy no longer knows of (its list of
    /// files) and no published snapshot names: deletions a writer deferred for readers
    /// and never made (it stopped first).
    fn remove_orphans(&self, dir: &Path, protected: &Protected) {
        let managed = self.index.directory().list_managed_files();
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let relative = Path::new(&name);
            if directory::is_segment_file(&name.to_string_lossy())
                && !managed.contains(relative)
                && !protected.keeps(relative)
            {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    fn with_index(
        index: Index,
        fields: Fields,
        patterns_in_text: bool,
        protected: Option<&Protected>,
    ) -> Result<TextIndex> {
        // Documents are analysed before they reach tantivy (`TextIndex::prepare`); the
        // fields' tokenizers read what that wrote.
        index.tokenizers().register(WORDS, PreAnalyzed);
        index.tokenizers().register(IDENT, PreAnalyzed);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 4));
        let writer = if protected.is_some() {
            let writer = index
                .writer_with_num_threads(threads, WRITER_MEMORY_BYTES.max(threads * (16 << 20)))
                .map_err(tantivy_err)?;
            Some(Mutex::new(writer))
        } else {
            None
        };
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(tantivy_err)?;
        Ok(TextIndex {
            index,
            writer,
            protected: protected.cloned(),
            reader,
            fields,
            patterns_in_text,
            ascending_ids: Remembered::new(256),
            live_freqs: LiveFreqs::default(),
        })
    }

    /// Analyses a query text in one scope (kind and tenant), whose statistics the
    /// scores use. Query syntax is never parsed: `title:x AND (` is words.
    pub(crate) fn analyze(
        &self,
        text: &str,
        kind: crate::Kind,
        tenant: &str,
        scope: ScopeStats,
    ) -> TextQuery {
        let prefix = scope_prefix(kind, tenant);
        let scoped =
            |field: Field, token: &str| Term::from_field_text(field, &format!("{prefix}{token}"));
        let mut terms: Vec<Term> = Vec::new();
        let mut words: Vec<Term> = Vec::new();
        let mut of_codes = analyzer::words_of_codes(text);
        for (token, source) in analyzer::tokens_with_source(Analysis::Words, text) {
            let term = scoped(self.fields.words, &token);
            let function_word = crate::analysis::is_stop_word(&source.to_lowercase());
            let in_code = analyzer::take_one(&mut of_codes, &token);
            if !function_word && !in_code && !words.contains(&term) {
                words.push(term.clone());
            }
            terms.push(term);
        }
        let mut codes: Vec<Term> = Vec::new();
        for token in analyzer::tokens(Analysis::Ident, text) {
            let term = scoped(self.fields.ident, &token);
            if analyzer::is_code(&token) && !codes.contains(&term) {
                codes.push(term.clone());
            }
            terms.push(term);
        }
        terms.sort();
        terms.dedup();
        TextQuery {
            query: (!terms.is_empty()).then_some(BooleanQueryParts {
                terms,
                words,
                codes,
            }),
            scope,
        }
    }

    /// Adds a document version (visible after [`TextIndex::commit`] and a reload), its
    /// terms in the document's scope; returns its token counts `[words, ident]`.
    pub(crate) fn add_document(&self, doc: DocId, document: &crate::Document) -> Result<[u32; 2]> {
        let prepared = self.prepare(doc, document);
        let counts = prepared.counts;
        self.add_prepared(prepared)?;
        Ok(counts)
    }

    /// Analyses a document version for [`TextIndex::add_prepared`]: the costly part of
    /// adding it, which needs no lock (so a batch is analysed in parallel).
    pub(crate) fn prepare(&self, doc: DocId, document: &crate::Document) -> Prepared {
        let text = document.indexed_text(self.patterns_in_text);
        let prefix = scope_prefix(document.kind(), document.tenant_id());
        let mut words = String::new();
        let mut ident = String::new();
        let counts = [
            analyzer::encode_analyzed(Analysis::Words, &prefix, &text, &mut words),
            analyzer::encode_analyzed(Analysis::Ident, &prefix, &text, &mut ident),
        ];
        let mut entry = TantivyDocument::default();
        entry.add_u64(self.fields.doc_id, doc.as_u64());
        entry.add_u64(
            self.fields.tokens,
            (u64::from(counts[0]) << 32) | u64::from(counts[1]),
        );
        entry.add_text(self.fields.words, words);
        entry.add_text(self.fields.ident, ident);
        Prepared { entry, counts }
    }

    /// Adds a document version [`TextIndex::prepare`] analysed.
    pub(crate) fn add_prepared(&self, prepared: Prepared) -> Result<()> {
        self.lock_writer()?
            .add_document(prepared.entry)
            .map_err(tantivy_err)?;
        Ok(())
    }

    /// The token counts of every live document of the committed index.
    pub(crate) fn token_counts(&self) -> Result<Vec<(DocId, [u32; 2])>> {
        guarded("reading token counts", || {
            let searcher = self.reader.searcher();
            let mut out = Vec::with_capacity(searcher.num_docs() as usize);
            for segment in searcher.segment_readers() {
                let fast = segment.fast_fields();
                let ids = fast.u64("doc_id").map_err(tantivy_err)?;
                let tokens = fast.u64("tokens").map_err(tantivy_err)?;
                for seg_doc in segment.doc_ids_alive() {
                    if let (Some(doc), Some(packed)) = (ids.first(seg_doc), tokens.first(seg_doc)) {
                        out.push((DocId::new(doc), [(packed >> 32) as u32, packed as u32]));
                    }
                }
            }
            Ok(out)
        })
    }

    /// The token counts of `docs` (those the index holds), each located by its id
    /// (see `locate`): for a few documents, instead of reading every document's.
    pub(crate) fn token_counts_of(&self, docs: &[DocId]) -> Result<Vec<(DocId, [u32; 2])>> {
        guarded("reading token counts", || {
            let searcher = self.reader.searcher();
            let mut out = Vec::with_capacity(docs.len());
            let mut targets = Vec::new();
            for segment in searcher.segment_readers() {
                self.locate(segment, docs, &mut targets)?;
                let tokens = segment.fast_fields().u64("tokens").map_err(tantivy_err)?;
                for &(seg_doc, doc) in &targets {
                    if let Some(packed) = tokens.first(seg_doc) {
                        out.push((doc, [(packed >> 32) as u32, packed as u32]));
                    }
                }
            }
            Ok(out)
        })
    }

    /// Removes a document version.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::ReadOnly`](crate::ErrorKind::ReadOnly) for a reader.
    pub(crate) fn delete(&self, doc: DocId) -> Result<()> {
        self.lock_writer()?
            .delete_term(Term::from_field_u64(self.fields.doc_id, doc.as_u64()));
        Ok(())
    }

    /// Drops every change since the last commit.
    pub(crate) fn rollback(&self) -> Result<()> {
        self.lock_writer()?.rollback().map_err(tantivy_err)?;
        Ok(())
    }

    /// Commits every change so far, recording that the index includes `seq`.
    pub(crate) fn commit(&self, seq: u64) -> Result<()> {
        let mut writer = self.lock_writer()?;
        let mut prepared = writer.prepare_commit().map_err(tantivy_err)?;
        let payload = Payload {
            seq,
            patterns_in_text: self.patterns_in_text,
            analyzer_version: ANALYZER_VERSION,
        };
        prepared.set_payload(&serde_json::to_string(&payload).expect("serialises"));
        prepared.commit().map_err(tantivy_err)?;
        Ok(())
    }

    /// Makes the last commit visible to searches.
    pub(crate) fn reload(&self) -> Result<()> {
        guarded("reloading", || self.reader.reload().map_err(tantivy_err))
    }

    /// The number of documents searches see.
    pub(crate) fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    fn lock_writer(&self) -> Result<std::sync::MutexGuard<'_, IndexWriter>> {
        // A panic while holding the writer leaves it usable: tantivy's own state is
        // consistent between calls, so a poisoned lock is recovered.
        Ok(self
            .writer
            .as_ref()
            .ok_or_else(|| crate::Error::new(crate::ErrorKind::ReadOnly))?
            .lock()
            .unwrap_or_else(|poison| poison.into_inner()))
    }

    /// The best `limit` documents for `query` among those `accept` admits, best first.
    ///
    /// `accept` returns what gives an admitted document's user id (for the tiebreak:
    /// among equal scores the smaller user id wins; asked for only when scores tie), or
    /// `None` to filter it out. Filters thus apply before the top-k cut. Hits are sorted
    /// by score descending, then user id.
    ///
    /// tantivy's top-k search (block-max WAND) skips the documents that cannot make the
    /// cut, so `accept` sees a few of the matches, not all: the scores of other
    /// candidates come from [`TextIndex::score_docs`]. Each hit comes with its
    /// coverage, as [`TextIndex::score_docs`] measures it. A long walk of every posting
    /// offers parts of its work to `share`, for the search's other thread.
    pub(crate) fn search<'a>(
        &self,
        plan: &TextPlan,
        limit: usize,
        accept: &(dyn Fn(DocId) -> Option<&'a dyn UserId> + Sync),
        share: Option<&WalkShare>,
    ) -> Result<Vec<(DocId, TextMatch)>> {
        guarded("searching", || {
            self.search_unguarded(plan, limit, accept, share)
        })
    }

    fn search_unguarded<'a>(
        &self,
        plan: &TextPlan,
        limit: usize,
        accept: &(dyn Fn(DocId) -> Option<&'a dyn UserId> + Sync),
        share: Option<&WalkShare>,
    ) -> Result<Vec<(DocId, TextMatch)>> {
        let Some(text_query) = plan.query.to_query() else {
            return Ok(Vec::new());
        };
        if limit == 0 {
            return Ok(Vec::new());
        }
        let searcher = &plan.searcher;
        let statistics = self.statistics(searcher, plan.query.scope, Some(&plan.freqs));
        if plan.walks_every_posting(limit) {
            return term_at_a_time(plan, &statistics, limit, accept, share);
        }
        let weight = text_query
            .weight(EnableScoring::enabled_from_statistics_provider(
                &statistics,
                searcher,
            ))
            .map_err(tantivy_err)?;
        let mut heap: BinaryHeap<HeapEntry<'a>> = BinaryHeap::with_capacity(limit + 1);
        // The lowest score that can still enter the heap (equal scores keep coming: the
        // tiebreak on user ids needs them).
        let threshold = |heap: &BinaryHeap<HeapEntry<'a>>| {
            if heap.len() == limit {
                heap.peek()
                    .map_or(f32::MIN, |worst| worst.score.next_down())
            } else {
                f32::MIN
            }
        };
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let doc_ids = segment.fast_fields().u64("doc_id").map_err(tantivy_err)?;
            let alive = segment.alive_bitset();
            weight
                .for_each_pruning(threshold(&heap), segment, &mut |seg_doc, score| {
                    let admitted = alive.is_none_or(|alive| alive.is_alive(seg_doc));
                    let doc = doc_ids.first(seg_doc).map(DocId::new);
                    if let Some((doc, named)) = doc
                        .filter(|_| admitted)
                        .and_then(|doc| Some((doc, accept(doc)?)))
                    {
                        heap.push(HeapEntry {
                            score,
                            named,
                            doc,
                            at: (ord, seg_doc),
                            coverage: Coverage::default(),
                        });
                        if heap.len() > limit {
                            heap.pop();
                        }
                    }
                    threshold(&heap)
                })
                .map_err(tantivy_err)?;
        }
        // The pruning scorer adds the terms' scores in another order than the plain
        // scorer: the hits are scored again as `score_docs` scores any document, so a
        // document's BM25 does not depend on the path that found it. The same walk
        // measures their coverage.
        let mut hits = heap.into_vec();
        hits.sort_unstable_by_key(|entry| entry.at);
        let mut i = 0;
        while i < hits.len() {
            let ord = hits[i].at.0;
            let end = i + hits[i..].partition_point(|hit| hit.at.0 == ord);
            let targets: Vec<u32> = hits[i..end].iter().map(|hit| hit.at.1).collect();
            let found = match_each(
                &plan.terms,
                &plan.cover,
                &searcher.segment_readers()[ord],
                &targets,
            )?;
            for (hit, found) in hits[i..end].iter_mut().zip(found) {
                if let Some(found) = found {
                    hit.score = found.bm25;
                    hit.coverage = found.coverage;
                }
            }
            i = end;
        }
        Ok(best_first(hits))
    }

    /// The best `limit` of `docs` that `accept` admits, by BM25: the hits, scores and
    /// order [`TextIndex::search`] gives when its filter admits only documents among
    /// `docs`. For a filter that admits a few documents of a large scope (one
    /// conversation of many): scoring each costs less than walking the query terms'
    /// postings through the whole scope.
    pub(crate) fn search_among<'a>(
        &self,
        plan: &TextPlan,
        docs: &[DocId],
        limit: usize,
        accept: &(dyn Fn(DocId) -> Option<&'a dyn UserId> + Sync),
    ) -> Result<Vec<(DocId, TextMatch)>> {
        guarded("searching", || {
            if limit == 0 || plan.query.is_empty() {
                return Ok(Vec::new());
            }
            let admitted: Vec<(DocId, &'a dyn UserId)> = docs
                .iter()
                .filter_map(|&doc| Some((doc, accept(doc)?)))
                .collect();
            let ids: Vec<DocId> = admitted.iter().map(|&(doc, _)| doc).collect();
            let scores = self.score_docs_unguarded(plan, &ids)?;
            let mut hits: Vec<HeapEntry<'a>> = admitted
                .into_iter()
                .filter_map(|(doc, named)| {
                    let found = scores.get(&doc)?;
                    Some(HeapEntry {
                        score: found.bm25,
                        named,
                        doc,
                        at: (0, 0),
                        coverage: found.coverage,
                    })
                })
                .collect();
            hits.sort_unstable();
            hits.truncate(limit);
            Ok(best_first(hits))
        })
    }

    /// The BM25 score of `query` for each of `docs` that matches it, with its coverage.
    /// Documents that contain no term of the query are left out.
    ///
    /// Each document is located by its id (see `locate`), and each term's scorer seeks
    /// straight to it: the cost grows with `docs`, not with the documents that match.
    ///
    /// Coverage says how much of `query` a document contains: the idf-weighted fraction
    /// of its words (function words such as `i`, `my` or `what` left out: a rule written
    /// in the third person never contains them), and how many of its codes verbatim.
    /// BM25 alone cannot say this: it is unbounded and depends on the query's length.
    /// The fraction is comparable across queries, so the relevance gate can use it.
    pub(crate) fn score_docs(
        &self,
        plan: &TextPlan,
        docs: &[DocId],
    ) -> Result<FxHashMap<DocId, TextMatch>> {
        guarded("scoring", || self.score_docs_unguarded(plan, docs))
    }

    fn score_docs_unguarded(
        &self,
        plan: &TextPlan,
        docs: &[DocId],
    ) -> Result<FxHashMap<DocId, TextMatch>> {
        let mut scores = FxHashMap::with_capacity_and_hasher(docs.len(), Default::default());
        if plan.query.is_empty() || docs.is_empty() {
            return Ok(scores);
        }
        let mut targets: Vec<(u32, DocId)> = Vec::with_capacity(docs.len());
        for segment in plan.searcher.segment_readers() {
            self.locate(segment, docs, &mut targets)?;
            if targets.is_empty() {
                continue;
            }
            let seg_docs: Vec<u32> = targets.iter().map(|&(seg_doc, _)| seg_doc).collect();
            let found = match_each(&plan.terms, &plan.cover, segment, &seg_docs)?;
            for (&(_, doc), found) in targets.iter().zip(found) {
                if let Some(found) = found {
                    scores.insert(doc, found);
                }
            }
        }
        Ok(scores)
    }

    fn statistics<'s>(
        &'s self,
        searcher: &'s tantivy::Searcher,
        scope: ScopeStats,
        known: Option<&'s FxHashMap<Term, u64>>,
    ) -> ScopedStatistics<'s> {
        ScopedStatistics {
            searcher,
            scope,
            fields: self.fields,
            live: &self.live_freqs,
            known,
        }
    }

    /// `query` made ready to search and score against the current searcher: each
    /// term's document frequency looked up once, its BM25 weight, and what coverage
    /// counts. [`TextIndex::search`] and then [`TextIndex::score_docs`] (the other legs'
    /// candidates) use it, under the same searcher, without looking a term up again.
    pub(crate) fn plan(&self, query: TextQuery) -> Result<TextPlan> {
        guarded("searching", || {
            let searcher = self.reader.searcher();
            let mut freqs = FxHashMap::default();
            if let Some(parts) = query.query.as_ref().filter(|_| !query.is_empty()) {
                for term in &parts.terms {
                    let freq = self
                        .live_freqs
                        .doc_freq(&searcher, term)
                        .map_err(tantivy_err)?;
                    freqs.insert(term.clone(), freq);
                }
            }
            let statistics = self.statistics(&searcher, query.scope, Some(&freqs));
            let terms = query.term_weights(&statistics, &searcher)?;
            let cover = cover_plan(&query, &statistics)?;
            Ok(TextPlan {
                query,
                terms,
                cover,
                freqs,
                searcher,
            })
        })
    }

    /// The live documents of `docs` in `segment`, as `(segment doc, doc)` sorted by
    /// segment doc, into `targets` (cleared first). Each is found by binary search in
    /// the segment's ids when they ascend, through its `doc_id` term otherwise.
    fn locate(
        &self,
        segment: &tantivy::SegmentReader,
        docs: &[DocId],
        targets: &mut Vec<(u32, DocId)>,
    ) -> Result<()> {
        let alive = segment.alive_bitset();
        let live = |seg_doc: u32| alive.is_none_or(|alive| alive.is_alive(seg_doc));
        targets.clear();
        if let Some(ids) = self.ascending_ids(segment)? {
            for &doc in docs {
                if let Ok(row) = ids.binary_search(&doc.as_u64())
                    && let Ok(seg_doc) = u32::try_from(row)
                    && live(seg_doc)
                {
                    targets.push((seg_doc, doc));
                }
            }
        } else {
            let inverted = segment
                .inverted_index(self.fields.doc_id)
                .map_err(tantivy_err)?;
            for &doc in docs {
                let term = Term::from_field_u64(self.fields.doc_id, doc.as_u64());
                let Some(postings) = inverted
                    .read_postings(&term, IndexRecordOption::Basic)
                    .map_err(|err| tantivy_err(err.into()))?
                else {
                    continue;
                };
                let seg_doc = postings.doc();
                if seg_doc != TERMINATED && live(seg_doc) {
                    targets.push((seg_doc, doc));
                }
            }
        }
        targets.sort_unstable();
        Ok(())
    }

    /// The `doc_id` of each document of `segment`, by segment doc, when there is one
    /// per document and they strictly ascend (as a commit writes them; a merge may
    /// interleave them). Read once per segment: 8 bytes a document.
    fn ascending_ids(&self, segment: &tantivy::SegmentReader) -> Result<Option<Arc<[u64]>>> {
        self.ascending_ids.get(segment.segment_id(), || {
            let column = segment.fast_fields().u64("doc_id").map_err(tantivy_err)?;
            Ok(
                (column.get_cardinality() == tantivy::columnar::Cardinality::Full
                    && column.values.num_vals() == segment.max_doc())
                .then(|| column.values.iter().collect::<Arc<[u64]>>())
                .filter(|ids| ids.windows(2).all(|pair| pair[0] < pair[1])),
            )
        })
    }

    /// The files of the index whose checksum does not match their content.
    pub(crate) fn corrupted_files(&self) -> Result<Vec<std::path::PathBuf>> {
        let mut files: Vec<_> = guarded("checking", || {
            self.index.validate_checksum().map_err(tantivy_err)
        })?
        .into_iter()
        .collect();
        files.sort();
        Ok(files)
    }

    /// The number of segments of the committed index.
    pub(crate) fn segment_count(&self) -> usize {
        self.index
            .searchable_segment_ids()
            .map_or(0, |segments| segments.len())
    }
}

/// What coverage counts of `query`'s terms, and what each of its words weighs: its idf
/// as BM25 has it, in the query's scope (so that a word every document of the tenant
/// contains weighs little), over the sum of the words' idf.
fn cover_plan(query: &TextQuery, statistics: &ScopedStatistics<'_>) -> Result<CoverPlan> {
    use tantivy::query::Bm25StatisticsProvider;
    let Some(parts) = query.query.as_ref() else {
        return Ok(CoverPlan::default());
    };
    let total = query.scope.docs as f64;
    let mut idf = Vec::with_capacity(parts.words.len());
    for term in &parts.words {
        let df = statistics.doc_freq(term).map_err(tantivy_err)? as f64;
        idf.push(((total - df + 0.5).max(0.0) / (df + 0.5)).ln_1p() as f32);
    }
    let idf_sum: f32 = idf.iter().sum();
    let shares = idf
        .iter()
        .map(|idf| idf / idf_sum.max(f32::MIN_POSITIVE))
        .collect();
    let information = if total > 0.0 {
        idf_sum / (total.ln_1p() as f32)
    } else {
        0.0
    };
    let roles = parts
        .terms
        .iter()
        .map(|term| {
            if let Some(word) = parts.words.iter().position(|word| word == term) {
                Role::Word(word)
            } else if parts.codes.contains(term) {
                Role::Code
            } else {
                Role::Other
            }
        })
        .collect();
    Ok(CoverPlan {
        roles,
        shares,
        information,
    })
}

/// A query made ready against one searcher (see [`TextIndex::plan`]).
pub(crate) struct TextPlan {
    query: TextQuery,
    searcher: tantivy::Searcher,
    /// Each term's live document frequency in the query's scope.
    freqs: FxHashMap<Term, u64>,
    /// Each term's weight, in the order of [`BooleanQueryParts::terms`].
    terms: Vec<Box<dyn tantivy::query::Weight>>,
    cover: CoverPlan,
}

impl TextPlan {
    /// The rarity of the query's words in its scope: their idf summed over
    /// `ln(1 + documents)` (0 without words).
    pub(crate) fn information(&self) -> f32 {
        self.cover.information
    }

    /// Whether its query has no searchable term, or its scope no document.
    pub(crate) fn is_empty(&self) -> bool {
        self.query.is_empty()
    }

    /// Whether the text leg walks every posting ([`term_at_a_time`]) for its best
    /// `limit` rather than letting block-max WAND skip: when the terms have few postings
    /// each, or when the terms that are not common have too few documents to fill the
    /// best `limit`, so that the common terms decide them and WAND cannot skip (see
    /// [`WALK_POSTINGS_PER_TERM`]), and no segment is larger than
    /// [`WALK_MAX_SEGMENT_DOCS`].
    fn walks_every_posting(&self, limit: usize) -> bool {
        let segments_fit = self
            .searcher
            .segment_readers()
            .iter()
            .all(|segment| segment.max_doc() <= WALK_MAX_SEGMENT_DOCS);
        let postings: u64 = self.freqs.values().sum();
        let common = WALK_COMMON_SHARE * self.query.scope.docs as f64;
        let rare_postings: u64 = self
            .freqs
            .values()
            .filter(|&&freq| (freq as f64) < common)
            .sum();
        let chosen = postings <= WALK_POSTINGS_PER_TERM * self.terms.len() as u64
            || rare_postings <= limit as u64;
        #[cfg(test)]
        let chosen = tests::FORCE_WALK
            .with(std::cell::Cell::get)
            .unwrap_or(chosen);
        self.cover.shares.len() <= 64 && segments_fit && chosen
    }
}

/// A document's match of a text query: its BM25 score and how much of the query it
/// covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TextMatch {
    pub(crate) bm25: f32,
    pub(crate) coverage: Coverage,
}

/// What coverage counts of a query's terms (see [`TextIndex::score_docs`]).
#[derive(Debug, Default)]
struct CoverPlan {
    /// What each term of the query ([`BooleanQueryParts::terms`]) counts for.
    roles: Vec<Role>,
    /// Each word's share of a full coverage, in the order of [`BooleanQueryParts::words`].
    shares: Vec<f32>,
    /// The words' idf summed, over the largest idf of the scope (`ln(1 + documents)`).
    information: f32,
}

impl CoverPlan {
    /// The coverage of a document that contains the words `has_word` says (by index in
    /// the query's words) and `codes` of its codes: the words' shares added in the order
    /// of the query's words, so that every path gives the same `f32`.
    fn coverage(&self, has_word: impl Fn(usize) -> bool, codes: u32) -> Coverage {
        let mut words = 0.0f32;
        let mut matched = 0u64;
        for (word, share) in self.shares.iter().enumerate() {
            if has_word(word) {
                words += share;
                if word < 64 {
                    matched |= 1 << word;
                }
            }
        }
        Coverage {
            words: words.clamp(0.0, 1.0),
            codes,
            matched,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Role {
    /// The word of this index in [`BooleanQueryParts::words`].
    Word(usize),
    /// A code.
    Code,
    /// Scored, not counted (a function word, a piece of an identifier).
    Other,
}

/// The match of each of `targets` (documents of `segment`, ascending) that contains a
/// term, `None` for the others, from one walk of each term's postings.
///
/// The BM25 score is the sum of the terms' scores in `terms`' order, as the union of the
/// query's clauses adds them, so equal to the query's own score. Each term's postings
/// seek from target to target; the union scorer would refill a window of 4,096
/// documents of every term at each seek. A coverage adds its words' shares in the
/// order of the query's words.
fn match_each(
    terms: &[Box<dyn tantivy::query::Weight>],
    cover: &CoverPlan,
    segment: &tantivy::SegmentReader,
    targets: &[u32],
) -> Result<Vec<Option<TextMatch>>> {
    let n = targets.len();
    let mut scores = vec![None; n];
    let mut has_word = vec![false; cover.shares.len() * n];
    let mut codes = vec![0u32; n];
    for (term, role) in terms.iter().zip(&cover.roles) {
        let mut scorer = term.scorer(segment, 1.0).map_err(tantivy_err)?;
        each_found(scorer.as_mut(), targets.iter().copied(), |i, scorer| {
            *scores[i].get_or_insert(0.0) += scorer.score();
            match *role {
                Role::Word(word) => has_word[word * n + i] = true,
                Role::Code => codes[i] += 1,
                Role::Other => {}
            }
        });
    }
    Ok(scores
        .into_iter()
        .enumerate()
        .map(|(i, score)| {
            let bm25 = score?;
            let coverage = cover.coverage(|word| has_word[word * n + i], codes[i]);
            Some(TextMatch { bm25, coverage })
        })
        .collect())
}

/// Walks `set` along `targets` (ascending documents of its segment), calling `found`
/// with the position of each target it contains, positioned on it.
fn each_found<D: DocSet + ?Sized>(
    set: &mut D,
    targets: impl Iterator<Item = u32>,
    mut found: impl FnMut(usize, &mut D),
) {
    for (i, target) in targets.enumerate() {
        let mut at = set.doc();
        if at < target {
            at = set.seek(target);
        }
        if at == TERMINATED {
            break;
        }
        if at == target {
            found(i, set);
        }
    }
}

/// What the text leg's tiebreak reads of an admitted document: its user id, asked for
/// only when two scores tie (reading it costs a look at the document).
pub(crate) trait UserId: Sync {
    fn user_id(&self) -> &str;
}

/// When the text leg walks every posting of every term, adding up each document's
/// score, instead of letting block-max WAND skip ([`TextPlan::walks_every_posting`]).
///
/// A walk costs about 2.5 ns a posting (it reads a block of decoded postings at a
/// time). WAND skips the more, the rarer the query's rarest terms, and its cost per
/// document grows with the number of terms. Per query, text leg only:
/// - SciFact's claims (a dozen terms and more, function words included): the walk takes
///   40 % of WAND's time at the median (59 against 147 µs) and at the 99th percentile;
/// - four terms over 10,000 documents: about the same median, a 99th percentile of 174
///   against 250 µs;
/// - four terms over 100,000: WAND takes 40 % of the walk's time at the median (225
///   against 545 µs), but once even the rarest term is in a tenth of the documents
///   WAND visits nearly every posting, and takes up to twice the walk's time (1.0 to
///   2.1 ms where the walk takes 0.6 to 0.9).
const WALK_POSTINGS_PER_TERM: u64 = 8_192;

/// The share of the scope's documents from which a term is common: when the other
/// terms of a query have at most as many postings as the leg returns candidates, the
/// text leg walks (see [`WALK_POSTINGS_PER_TERM`]). Those are the queries WAND cannot
/// prune (a rare word beside common ones: the common terms decide the best `limit` and
/// WAND visits nearly all their postings, at up to twice the walk's cost). Shares of
/// 10 % and 15 % gave the lowest tail on synthetic 100,000-document sets; 20 % and
/// more leave slow WAND queries, and walking every query doubles the median.
const WALK_COMMON_SHARE: f64 = 0.15;

/// The largest segment the text leg walks: the walk's scratch takes 24 bytes a
/// document of the largest segment walked, kept by each searching thread (6.3 MB at
/// this limit).
const WALK_MAX_SEGMENT_DOCS: u32 = 1 << 18;

/// Per-thread scratch of [`term_at_a_time`]: one slot per document of a segment, valid
/// where its `stamp` holds the current walk's number (so nothing is cleared between
/// walks).
#[derive(Default)]
struct Accumulators {
    walk: u32,
    slots: Vec<Slot>,
    /// The documents of this walk, in the order first reached.
    reached: Vec<u32>,
}

/// What a walk has added up for one document: one 24-byte slot, so that a posting
/// touches one cache line (the walk's hot loop; four arrays cost four).
#[derive(Default, Clone, Copy)]
struct Slot {
    stamp: u32,
    score: f32,
    /// Bit `w`: the document contains word `w` of the query.
    words: u64,
    codes: u32,
}

// SAFETY: every field is an integer or a float, for which all-zero bytes are a valid
// value: a zeroed `Slot` is `Slot::default()`.
unsafe impl bytemuck::Zeroable for Slot {}

impl Accumulators {
    /// Starts a walk of a segment of `max_doc` documents.
    fn start(&mut self, max_doc: usize) {
        if self.slots.len() < max_doc {
            // Zeroed memory straight from the allocator (fresh pages are zero already),
            // not written slot by slot: a zero stamp is no walk's, so every slot is
            // empty. Writing the slots one by one (2.4 MB at 100,000 documents) would be a
            // large part of a process's first walk.
            self.slots = bytemuck::zeroed_vec(max_doc);
        }
        self.walk = self.walk.wrapping_add(1);
        if self.walk == 0 {
            self.slots.iter_mut().for_each(|slot| slot.stamp = 0);
            self.walk = 1;
        }
        self.reached.clear();
    }

    /// The slot of `doc`, emptied on its first posting of this walk.
    #[inline]
    fn slot(&mut self, doc: u32) -> &mut Slot {
        let slot = &mut self.slots[doc as usize];
        if slot.stamp != self.walk {
            *slot = Slot {
                stamp: self.walk,
                ..Slot::default()
            };
            self.reached.push(doc);
        }
        slot
    }

    /// Adds a posting's score to its document's slot, and what its term counts for.
    #[inline(always)]
    fn add(&mut self, doc: u32, score: f32, role: Role) {
        let slot = self.slot(doc);
        slot.score += score;
        match role {
            Role::Word(word) => slot.words |= 1 << word,
            Role::Code => slot.codes += 1,
            Role::Other => {}
        }
    }

    /// Adds every posting of `term` in `segment` whose document is in `range`, a block
    /// of decoded postings at a time, each scored by `bm25` as tantivy's `TermScorer`
    /// scores it (the term's role decided once, not per posting).
    fn add_term(
        &mut self,
        term: &Term,
        bm25: &Bm25Weight,
        segment: &tantivy::SegmentReader,
        role: Role,
        range: std::ops::Range<u32>,
    ) -> tantivy::Result<()> {
        let inverted = segment.inverted_index(term.field())?;
        let Some(info) = inverted.get_term_info(term)? else {
            return Ok(());
        };
        let mut block =
            inverted.read_block_postings_from_terminfo(&info, IndexRecordOption::WithFreqs)?;
        // As `TermWeight` reads them: a field without norms counts one token a document.
        let norms = segment
            .fieldnorms_readers()
            .get_field(term.field())?
            .unwrap_or_else(|| FieldNormReader::constant(segment.max_doc(), 1));
        // The first block's postings before `range` are skipped (the skip list jumps the
        // blocks before it), and the walk stops at the first posting after it.
        let mut from = if range.start > 0 {
            block.seek(range.start)
        } else {
            0
        };
        loop {
            let docs = block.docs();
            if docs.is_empty() || from >= docs.len() {
                return Ok(());
            }
            // The block's postings in `range` (the last block of the range ends early).
            let last = docs[docs.len() - 1] >= range.end;
            let to = if last {
                docs.partition_point(|&doc| doc < range.end)
            } else {
                docs.len()
            };
            if from == 0 && to == docs.len() {
                // A whole block (most of them), in the loop the compiler makes fastest: the
                // general loop below, with its range checks, is measurably slower.
                for (at, &doc) in docs.iter().enumerate() {
                    let score = bm25.score(norms.fieldnorm_id(doc), block.freq(at));
                    self.add(doc, score, role);
                }
            } else {
                for (at, &doc) in docs.iter().enumerate().take(to).skip(from) {
                    let score = bm25.score(norms.fieldnorm_id(doc), block.freq(at));
                    self.add(doc, score, role);
                }
            }
            if last {
                return Ok(());
            }
            from = 0;
            block.advance();
        }
    }
}

/// [`TextIndex::search`] by walking every posting of every term (the query's words at
/// most 64): each document's score is the sum of its terms' scores in the plan's order,
/// as [`match_each`] adds them, so a hit's BM25 and coverage are what `score_docs` gives
/// it, with no second walk.
///
/// A segment of at least [`SHARED_WALK_FROM`] postings is walked in parts of its
/// documents ([`SHARED_WALK_PARTS`]), claimed in turn by this thread and by the one
/// `share` offers them to, each keeping the best `limit` of the parts it walks. The
/// documents' scores do not depend on the split, and the best `limit` of both threads'
/// are the best `limit` of all: the same hits.
fn term_at_a_time<'a>(
    plan: &TextPlan,
    statistics: &ScopedStatistics<'_>,
    limit: usize,
    accept: &(dyn Fn(DocId) -> Option<&'a dyn UserId> + Sync),
    share: Option<&WalkShare>,
) -> Result<Vec<(DocId, TextMatch)>> {
    let terms = plan
        .query
        .query
        .as_ref()
        .map_or(&[][..], |parts| parts.terms.as_slice());
    // Each term's BM25 weight as `TermQuery` makes it (`Bm25Weight::for_terms` of the
    // one term), without its explanation; and the scope's postings of the terms, for
    // each segment's share of them.
    let scope_docs = statistics.total_num_docs().map_err(tantivy_err)?;
    let mut postings = 0u64;
    let weights = terms
        .iter()
        .map(|term| {
            let average = statistics.total_num_tokens(term.field())? as f32 / scope_docs as f32;
            let doc_freq = statistics.doc_freq(term)?;
            postings += doc_freq;
            Ok(Bm25Weight::for_one_term_without_explain(
                doc_freq, scope_docs, average,
            ))
        })
        .collect::<tantivy::Result<Vec<_>>>()
        .map_err(tantivy_err)?;
    let scope_docs = scope_docs.max(1);
    #[cfg(test)]
    let from = tests::SHARED_WALK_FROM_TEST
        .with(std::cell::Cell::get)
        .unwrap_or(SHARED_WALK_FROM);
    #[cfg(not(test))]
    let from = SHARED_WALK_FROM;
    let shared = |max_doc: u32| {
        u128::from(postings) * u128::from(max_doc) >= u128::from(from) * u128::from(scope_docs)
            && max_doc >= SHARED_WALK_PARTS
    };
    let share = share.filter(|_| {
        plan.searcher
            .segment_readers()
            .iter()
            .any(|segment| shared(segment.max_doc()))
    });
    if let Some(share) = share {
        share.coming.store(true, AtomicOrdering::Release);
    }
    // The best `limit` of the segments walked so far; a document below the worst of a
    // full heap cannot enter it.
    let mut best: BinaryHeap<HeapEntry<'a>> = BinaryHeap::with_capacity(limit + 1);
    let keep = |entries: Vec<HeapEntry<'a>>, best: &mut BinaryHeap<HeapEntry<'a>>| {
        if best.is_empty() {
            // At most `limit` already: the first walk's best, as they are.
            *best = BinaryHeap::from(entries);
            return;
        }
        for entry in entries {
            if best.len() == limit && best.peek().is_some_and(|worst| entry.score < worst.score) {
                continue;
            }
            best.push(entry);
            if best.len() > limit {
                best.pop();
            }
        }
    };
    for (ord, segment) in plan.searcher.segment_readers().iter().enumerate() {
        let max_doc = segment.max_doc();
        let floor = match best.peek() {
            Some(worst) if best.len() == limit => worst.score,
            _ => f32::NEG_INFINITY,
        };
        let at = (ord, segment, floor);
        let share = share.filter(|_| shared(max_doc));
        // The segment's documents whole, or in parts, each walked whole by the thread
        // that claims it: this one, and the other once its own work is done.
        let whole_segment = 0..max_doc;
        let parts: Vec<std::ops::Range<u32>>;
        let ranges = match share {
            None => std::slice::from_ref(&whole_segment),
            Some(_) => {
                let part = max_doc.div_ceil(SHARED_WALK_PARTS);
                parts = (0..max_doc)
                    .step_by(part as usize)
                    .map(|start| start..(start + part).min(max_doc))
                    .collect();
                &parts
            }
        };
        let next = AtomicUsize::new(0);
        let walk = RangeWalk {
            ranges,
            next: &next,
        };
        let Some(share) = share else {
            keep(
                walk.walk(plan, terms, &weights, at, limit, accept)?,
                &mut best,
            );
            continue;
        };
        let theirs: Mutex<Option<Result<Vec<HeapEntry<'a>>>>> = Mutex::new(None);
        let job = || {
            let walked = guarded("searching", || {
                walk.walk(plan, terms, &weights, at, limit, accept)
            });
            *theirs.lock().unwrap_or_else(|p| p.into_inner()) = Some(walked);
        };
        let ours = share.share(&job, || walk.walk(plan, terms, &weights, at, limit, accept));
        keep(ours?, &mut best);
        if let Some(theirs) = theirs.into_inner().unwrap_or_else(|p| p.into_inner()) {
            keep(theirs?, &mut best);
        }
    }
    Ok(best_first(best.into_vec()))
}

/// The parts of a segment's documents that the threads of a shared walk claim in turn.
const SHARED_WALK_PARTS: u32 = 8;

/// The postings of a segment's walk from which its parts are offered to another thread
/// (about 160 µs of walking: more than a hand-off costs).
const SHARED_WALK_FROM: u64 = 65_536;

/// Parts of a segment's documents, claimed one at a time by the threads that walk them.
struct RangeWalk<'w> {
    ranges: &'w [std::ops::Range<u32>],
    next: &'w AtomicUsize,
}

impl RangeWalk<'_> {
    /// The best `limit` documents of the parts this thread claims (until none is left)
    /// of segment `ord`, walking every posting of `terms` in them ([`term_at_a_time`]),
    /// on this thread's scratch; none scored below `floor`.
    fn walk<'a>(
        &self,
        plan: &TextPlan,
        terms: &[Term],
        weights: &[Bm25Weight],
        (ord, segment, floor): (usize, &tantivy::SegmentReader, f32),
        limit: usize,
        accept: &(dyn Fn(DocId) -> Option<&'a dyn UserId> + Sync),
    ) -> Result<Vec<HeapEntry<'a>>> {
        thread_local! {
            static SCRATCH: std::cell::RefCell<Accumulators> = Default::default();
        }
        SCRATCH.with(|scratch| {
            let acc = &mut *scratch.borrow_mut();
            acc.start(segment.max_doc() as usize);
            let mut claimed = false;
            while let Some(range) = self
                .ranges
                .get(self.next.fetch_add(1, AtomicOrdering::Relaxed))
            {
                claimed = true;
                for ((term, weight), role) in terms.iter().zip(weights).zip(&plan.cover.roles) {
                    acc.add_term(term, weight, segment, *role, range.clone())
                        .map_err(tantivy_err)?;
                }
            }
            if !claimed {
                return Ok(Vec::new());
            }
            let mut heap: BinaryHeap<HeapEntry<'a>> = BinaryHeap::with_capacity(limit + 1);
            let doc_ids = segment.fast_fields().u64("doc_id").map_err(tantivy_err)?;
            let alive = segment.alive_bitset();
            for &seg_doc in &acc.reached {
                let slot = acc.slots[seg_doc as usize];
                let score = slot.score;
                if score < floor
                    || heap.len() == limit && heap.peek().is_some_and(|worst| score < worst.score)
                {
                    continue;
                }
                if !alive.is_none_or(|alive| alive.is_alive(seg_doc)) {
                    continue;
                }
                let Some((doc, named)) = doc_ids
                    .first(seg_doc)
                    .map(DocId::new)
                    .and_then(|doc| Some((doc, accept(doc)?)))
                else {
                    continue;
                };
                heap.push(HeapEntry {
                    score,
                    named,
                    doc,
                    at: (ord, seg_doc),
                    coverage: plan
                        .cover
                        .coverage(|word| slot.words & (1 << word) != 0, slot.codes),
                });
                if heap.len() > limit {
                    heap.pop();
                }
            }
            Ok(heap.into_vec())
        })
    }
}

/// Work of a search's text leg that another thread may do: parts of a long walk
/// ([`term_at_a_time`]), taken by the search's other leg once its own work is done
/// ([`WalkShare::help_while_running`]). One per search.
#[derive(Default)]
pub(crate) struct WalkShare {
    /// [`IDLE`], [`POSTED`] (a job waits in `job`), [`RUNNING`] (another thread took
    /// it) or [`DONE`].
    state: std::sync::atomic::AtomicU8,
    job: Mutex<Option<SharedJob>>,
    /// Whether the text leg has started, and whether it has finished.
    leg: std::sync::atomic::AtomicU8,
    /// Whether the text leg's walk will offer parts (known once it has its plan).
    coming: std::sync::atomic::AtomicBool,
}

const IDLE: u8 = 0;
const POSTED: u8 = 1;
const RUNNING: u8 = 2;
const DONE: u8 = 3;

/// A posted job: a closure on the stack of the thread that posted it, which does not
/// return (or unwind) before the job is done or taken back ([`WalkShare::share`]).
struct SharedJob(*const (dyn Fn() + Sync + 'static));

// SAFETY: the closure is `Sync`, so calling it from another thread through a shared
// reference is sound; the pointer is only dereferenced while the posting frame waits.
unsafe impl Send for SharedJob {}

impl WalkShare {
    /// Marks the text leg started; it is marked finished when the guard drops (also on
    /// a panic, so that no helper waits for it forever).
    pub(crate) fn leg(&self) -> impl Drop + '_ {
        use std::sync::atomic::Ordering::Release;
        struct Finished<'s>(&'s WalkShare);
        impl Drop for Finished<'_> {
            fn drop(&mut self) {
                self.0.leg.store(DONE, Release);
            }
        }
        self.leg.store(RUNNING, Release);
        Finished(self)
    }

    /// Does the posted job, if there is one; whether it did.
    fn help(&self) -> bool {
        use std::sync::atomic::Ordering::{AcqRel, Acquire, Release};
        if self
            .state
            .compare_exchange(POSTED, RUNNING, AcqRel, Acquire)
            .is_err()
        {
            return false;
        }
        let job = self
            .job
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .expect("a posted job is in the slot");
        // SAFETY: its poster waits until the state is `DONE` before the closure goes out
        // of scope (`share`'s guard, also when unwinding). The closure catches its own
        // panics.
        unsafe { (*job.0)() };
        self.state.store(DONE, Release);
        true
    }

    /// Whether the text leg has said that its walk will offer parts to walk.
    pub(crate) fn coming(&self) -> bool {
        self.coming.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Runs the jobs the text leg posts while it runs on another thread; returns at
    /// once when it has not started (it may be this thread's to run next) or is done.
    pub(crate) fn help_while_running(&self) {
        while self.leg.load(std::sync::atomic::Ordering::Acquire) == RUNNING {
            if !self.help() {
                std::thread::yield_now();
            }
        }
    }

    /// Posts `job`, runs `own`, then runs `job` too unless another thread took it
    /// (waiting for that thread to finish it).
    fn share<R>(&self, job: &(dyn Fn() + Sync), own: impl FnOnce() -> R) -> R {
        use std::sync::atomic::Ordering::{AcqRel, Acquire, Release};
        /// Takes the job back, or waits until its taker is done with it: the closure
        /// must outlive every use (also when `own` unwinds).
        struct Settle<'s> {
            share: &'s WalkShare,
            job: &'s (dyn Fn() + Sync),
        }
        impl Drop for Settle<'_> {
            fn drop(&mut self) {
                let share = self.share;
                if share
                    .state
                    .compare_exchange(POSTED, IDLE, AcqRel, Acquire)
                    .is_ok()
                {
                    share.job.lock().unwrap_or_else(|p| p.into_inner()).take();
                    if !std::thread::panicking() {
                        (self.job)();
                    }
                } else {
                    while share.state.load(Acquire) != DONE {
                        std::thread::yield_now();
                    }
                }
                share.state.store(IDLE, Release);
            }
        }
        // SAFETY: only the lifetime is erased; `Settle` keeps the closure alive until
        // no other thread can reach it.
        let erased: *const (dyn Fn() + Sync + 'static) =
            unsafe { std::mem::transmute::<*const (dyn Fn() + Sync + '_), _>(job) };
        *self.job.lock().unwrap_or_else(|p| p.into_inner()) = Some(SharedJob(erased));
        self.state.store(POSTED, Release);
        let settle = Settle { share: self, job };
        let own = own();
        drop(settle);
        own
    }
}

/// The text leg's hits, best first (the heap's order: score, then user id).
fn best_first(mut hits: Vec<HeapEntry<'_>>) -> Vec<(DocId, TextMatch)> {
    hits.sort();
    hits.into_iter()
        .map(|entry| {
            let matched = TextMatch {
                bm25: entry.score,
                coverage: entry.coverage,
            };
            (entry.doc, matched)
        })
        .collect()
}

/// A candidate in the top-k heap. The heap's maximum is the *worst* candidate, so that
/// popping evicts it: lower score is "greater", and among equal scores the larger user id.
struct HeapEntry<'a> {
    score: f32,
    /// Gives the user id, for ties.
    named: &'a dyn UserId,
    doc: DocId,
    /// Where the document is: segment ordinal and document within the segment.
    at: (usize, u32),
    /// Measured once the hits are known (not part of the order).
    coverage: Coverage,
}

impl PartialEq for HeapEntry<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for HeapEntry<'_> {}

impl PartialOrd for HeapEntry<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for HeapEntry<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then_with(|| self.named.user_id().cmp(other.named.user_id()))
            .then_with(|| self.doc.cmp(&other.doc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The analysis as tantivy's own filters make it (its tokenizer made of the analysis's
    /// spans): what `analysis::text` must give, token for token.
    fn tantivy_analyzer(analysis: Analysis) -> tantivy::tokenizer::TextAnalyzer {
        use tantivy::tokenizer::{
            Language, LowerCaser, RemoveLongFilter, Stemmer, StopWordFilter, TextAnalyzer, Token,
            TokenStream, Tokenizer,
        };
        #[derive(Clone)]
        struct Spans(fn(&str) -> Vec<(usize, usize)>);
        struct Stream<'a> {
            text: &'a str,
            spans: std::vec::IntoIter<(usize, usize)>,
            token: Token,
        }
        impl Tokenizer for Spans {
            type TokenStream<'a> = Stream<'a>;
            fn token_stream<'a>(&'a mut self, text: &'a str) -> Stream<'a> {
                Stream {
                    text,
                    spans: (self.0)(text).into_iter(),
                    token: Token::default(),
                }
            }
        }
        impl TokenStream for Stream<'_> {
            fn advance(&mut self) -> bool {
                let Some((from, to)) = self.spans.next() else {
                    return false;
                };
                // `Token::default()` starts at `usize::MAX`: the first token is at 0.
                self.token.position = self.token.position.wrapping_add(1);
                self.token.position_length = 1;
                self.token.text = self.text[from..to].to_string();
                self.token.offset_from = from;
                self.token.offset_to = to;
                true
            }
            fn token(&self) -> &Token {
                &self.token
            }
            fn token_mut(&mut self) -> &mut Token {
                &mut self.token
            }
        }
        let limit = RemoveLongFilter::limit(analyzer::MAX_TOKEN_BYTES);
        match analysis {
            Analysis::Words => TextAnalyzer::builder(Spans(analyzer::word_spans))
                .filter(limit)
                .filter(LowerCaser)
                .filter(StopWordFilter::new(Language::English).unwrap())
                .filter(Stemmer::new(Language::English))
                .build(),
            Analysis::Ident => TextAnalyzer::builder(Spans(analyzer::ident_spans))
                .filter(limit)
                .filter(LowerCaser)
                .build(),
        }
    }

    proptest::proptest! {
        /// The analysis gives tantivy's own filters' tokens, whatever the text: ASCII,
        /// accents, capitals (camelCase, `ΣΑΣ`), identifiers, long runs.
        #[test]
        fn the_analysis_is_tantivys_filters(
            text in "[a-zA-Z0-9 _./:@#-]{0,60}|[a-zA-Zéßİ ΣΑςσ0-9]{0,40}|(the|a|Running|APIs|entityStore|NW-15699|x{70}| ){0,12}",
        ) {
            for analysis in [Analysis::Words, Analysis::Ident] {
                let mut theirs = tantivy_analyzer(analysis);
                let mut stream = theirs.token_stream(&text);
                let mut expected = Vec::new();
                while let Some(token) = stream.next() {
                    expected.push(token.text.clone());
                }
                proptest::prop_assert_eq!(analyzer::tokens(analysis, &text), expected);
            }
        }
    }

    thread_local! {
        /// Makes the text leg walk every posting (`Some(true)`) or let WAND skip
        /// (`Some(false)`) whatever the query, on this thread.
        pub(super) static FORCE_WALK: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
        /// Replaces [`SHARED_WALK_FROM`] on this thread.
        pub(super) static SHARED_WALK_FROM_TEST: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
    }

    impl UserId for String {
        fn user_id(&self) -> &str {
            self
        }
    }
    use crate::{Chunk, Document};

    /// Coverage is the idf-weighted share of the query's words a document contains, and
    /// counts the query's codes it contains verbatim.
    #[test]
    fn coverage_weighs_words_by_rarity_and_counts_codes() {
        let dir = tempfile::tempdir().unwrap();
        let text =
            TextIndex::create(&dir.path().join("text"), false, &Protected::default()).unwrap();
        let docs = [
            "refund for order NW-15699 please",
            "refund for order NW-15609",
            "the order shipped",
            "the order was late",
            "an unrelated note",
        ];
        for (i, content) in docs.iter().enumerate() {
            let chunk = Chunk::new(format!("c{i}"), *content);
            text.add_document(DocId::new(i as u64), &Document::Chunk(chunk))
                .unwrap();
        }
        text.commit(1).unwrap();
        text.reload().unwrap();
        let scope = ScopeStats {
            docs: docs.len() as u64,
            tokens: [30, 10],
        };
        let query = text.analyze(
            "refund order NW-15699",
            crate::Kind::Chunk,
            "default",
            scope,
        );
        assert_eq!(
            crate::analysis::query_codes("refund order NW-15699"),
            ["nw-15699"]
        );
        let all: Vec<DocId> = (0..docs.len() as u64).map(DocId::new).collect();
        let scored = text
            .score_docs(&text.plan(query.clone()).unwrap(), &all)
            .unwrap();
        let of = |i: u64| {
            scored
                .get(&DocId::new(i))
                .map(|found| found.coverage)
                .unwrap_or_default()
        };
        assert!((of(0).words - 1.0).abs() < 1e-6, "{:?}", of(0));
        assert_eq!(of(0).codes, 1);
        // The look-alike holds `refund` and `order`, not the code: the code's pieces
        // (`nw`, `15699`) are not words of the query's coverage, only the code counts.
        assert!((of(1).words - 1.0).abs() < 1e-6, "{:?}", of(1));
        assert_eq!(of(1).codes, 0);
        // `order` is common: covering it alone is worth less than covering `refund`.
        assert!(
            of(2).words < of(1).words && of(2).words > 0.0,
            "{:?}",
            of(2)
        );
        assert_eq!(of(4), Coverage::default());
    }

    /// BM25's live document frequencies, remembered per segment, follow every round of
    /// deletes.
    #[test]
    fn live_document_frequencies_follow_every_delete() {
        let dir = tempfile::tempdir().unwrap();
        let text =
            TextIndex::create(&dir.path().join("text"), false, &Protected::default()).unwrap();
        let words = ["order", "refund", "parcel", "late", "card"];
        let has = |id: u64, word: usize| id % 5 == word as u64 || (id / 5) % 5 == word as u64;
        for id in 0..400u64 {
            let content: Vec<&str> = (0..5).filter(|&w| has(id, w)).map(|w| words[w]).collect();
            let chunk = Chunk::new(format!("c{id}"), content.join(" "));
            text.add_document(DocId::new(id), &Document::Chunk(chunk))
                .unwrap();
        }
        text.commit(1).unwrap();
        let mut deleted = std::collections::BTreeSet::new();
        // Each round deletes more: a frequency remembered from the round before must not
        // be given for the same segment with more of its documents deleted.
        for (round, step) in [0u64, 9, 7, 3].into_iter().enumerate() {
            if step > 0 {
                for id in (0..400).step_by(step as usize) {
                    text.delete(DocId::new(id)).unwrap();
                    deleted.insert(id);
                }
                text.commit(round as u64 + 1).unwrap();
            }
            text.reload().unwrap();
            let searcher = text.reader.searcher();
            for (w, word) in words.iter().enumerate() {
                let query =
                    text.analyze(word, crate::Kind::Chunk, "default", ScopeStats::default());
                let term = query.query.as_ref().unwrap().words[0].clone();
                let expected = (0..400)
                    .filter(|id| has(*id, w) && !deleted.contains(id))
                    .count() as u64;
                for _ in 0..2 {
                    let got = text.live_freqs.doc_freq(&searcher, &term).unwrap();
                    assert_eq!(got, expected, "round {round}, {word}");
                }
            }
        }
    }

    #[test]
    fn documents_are_found_in_segments_written_in_any_order() {
        let dir = tempfile::tempdir().unwrap();
        let text =
            TextIndex::create(&dir.path().join("text"), false, &Protected::default()).unwrap();
        let words = ["order", "refund", "parcel", "late", "card"];
        // One segment written in id order, one shuffled (ids 1000.. in a scattered
        // order), each with a deleted document and ids missing between them.
        let ascending: Vec<u64> = (0..200).map(|i| i * 2).collect();
        let shuffled: Vec<u64> = (0..200).map(|i| 1000 + (i * 77) % 200).collect();
        for (commit, ids) in [&ascending, &shuffled].into_iter().enumerate() {
            for &id in ids {
                let content = format!(
                    "{} {}",
                    words[id as usize % 5],
                    words[(id / 5) as usize % 5]
                );
                let chunk = Chunk::new(format!("c{id}"), content);
                text.add_document(DocId::new(id), &Document::Chunk(chunk))
                    .unwrap();
            }
            text.commit(commit as u64 + 1).unwrap();
        }
        text.delete(DocId::new(40)).unwrap();
        text.delete(DocId::new(1010)).unwrap();
        text.commit(3).unwrap();
        text.reload().unwrap();

        let searcher = text.reader.searcher();
        let mut kinds = Vec::new();
        for segment in searcher.segment_readers() {
            kinds.push(text.ascending_ids(segment).unwrap().is_some());
        }
        assert!(
            kinds.contains(&false) && kinds.contains(&true),
            "both ways of locating are exercised: {kinds:?}"
        );

        // Every id asked, present or not, is located as a naive scan of the columns finds it.
        let asked: Vec<DocId> = (0..1300).rev().map(DocId::new).collect();
        for segment in searcher.segment_readers() {
            let ids = segment.fast_fields().u64("doc_id").unwrap();
            let alive = segment.alive_bitset();
            let mut naive: Vec<(u32, DocId)> = (0..segment.max_doc())
                .filter(|&seg_doc| alive.is_none_or(|alive| alive.is_alive(seg_doc)))
                .map(|seg_doc| (seg_doc, DocId::new(ids.first(seg_doc).unwrap())))
                .collect();
            naive.sort_unstable();
            let mut located = Vec::new();
            text.locate(segment, &asked, &mut located).unwrap();
            assert_eq!(located, naive);
            text.locate(segment, &asked[..3], &mut located).unwrap();
            assert!(located.iter().all(|(_, doc)| asked[..3].contains(doc)));
        }
        let counts = text
            .token_counts_of(&[
                DocId::new(40),
                DocId::new(42),
                DocId::new(1011),
                DocId::new(7),
            ])
            .unwrap();
        let found: Vec<DocId> = counts.iter().map(|(doc, _)| *doc).collect();
        assert_eq!(found.len(), 2);
        assert!(found.contains(&DocId::new(42)) && found.contains(&DocId::new(1011)));
    }

    /// `score_docs` (seek to each document) gives exactly the scores of a full visit, over
    /// several segments and with deleted documents; so does the text leg's top k, by
    /// block-max WAND and by a walk of every posting.
    #[test]
    fn pruned_top_k_and_score_docs_match_a_full_visit() {
        for walk in [false, true] {
            FORCE_WALK.with(|force| force.set(Some(walk)));
            top_k_and_score_docs_match_a_full_visit();
        }
        FORCE_WALK.with(|force| force.set(None));
    }

    fn top_k_and_score_docs_match_a_full_visit() {
        let dir = tempfile::tempdir().unwrap();
        let text =
            TextIndex::create(&dir.path().join("text"), false, &Protected::default()).unwrap();
        let words = [
            "order", "refund", "parcel", "late", "card", "label", "tent", "email",
        ];
        let mut next = 0u64;
        for commit in 0..3 {
            for i in 0..120 {
                let content: Vec<&str> = (0..1 + (i * 7 + commit) % 5)
                    .map(|j| words[(i * 3 + j * 5 + commit) % words.len()])
                    .collect();
                let chunk = Chunk::new(format!("c{next}"), content.join(" "));
                text.add_document(DocId::new(next), &Document::Chunk(chunk))
                    .unwrap();
                next += 1;
            }
            text.commit(commit as u64 + 1).unwrap();
        }
        for doc in (0..next).step_by(9) {
            text.delete(DocId::new(doc)).unwrap();
        }
        text.commit(4).unwrap();
        text.reload().unwrap();
        assert!(text.segment_count() > 1, "the test needs several segments");

        let scope = ScopeStats {
            docs: next,
            tokens: [3 * next, 0],
        };
        let query = text.analyze("late parcel refund", crate::Kind::Chunk, "default", scope);
        let all: Vec<DocId> = (0..next).map(DocId::new).collect();
        // A limit above the number of matches never fills the heap: nothing is pruned.
        let user_ids: Vec<String> = all.iter().map(|d| format!("c{:04}", d.as_u64())).collect();
        let accept_all = |doc: DocId| Some(&user_ids[doc.as_u64() as usize] as &dyn UserId);
        fn top<'a>(
            text: &TextIndex,
            query: &TextQuery,
            k: usize,
            accept: &(dyn Fn(DocId) -> Option<&'a dyn UserId> + Sync),
        ) -> Vec<(DocId, f32)> {
            let hits = text
                .search(&text.plan(query.clone()).unwrap(), k, accept, None)
                .unwrap();
            // Each hit's coverage is the one `score_docs` measures.
            let again = text
                .score_docs(
                    &text.plan(query.clone()).unwrap(),
                    &hits.iter().map(|(doc, _)| *doc).collect::<Vec<_>>(),
                )
                .unwrap();
            for (doc, found) in &hits {
                assert_eq!(again.get(doc), Some(found), "{doc:?}");
            }
            hits.into_iter()
                .map(|(doc, found)| (doc, found.bm25))
                .collect()
        }
        let full: FxHashMap<DocId, f32> = top(&text, &query, all.len(), &accept_all)
            .into_iter()
            .collect();
        let scored: FxHashMap<DocId, f32> = text
            .score_docs(&text.plan(query.clone()).unwrap(), &all)
            .unwrap()
            .into_iter()
            .map(|(doc, found)| (doc, found.bm25))
            .collect();
        assert_eq!(scored, full);
        // Both are tantivy's own scores: its boolean query visiting every match.
        let searcher = text.reader.searcher();
        let statistics = text.statistics(&searcher, query.scope, None);
        let weight = query
            .to_query()
            .unwrap()
            .weight(EnableScoring::enabled_from_statistics_provider(
                &statistics,
                &searcher,
            ))
            .unwrap();
        let mut visited = FxHashMap::default();
        for segment in searcher.segment_readers() {
            let doc_ids = segment.fast_fields().u64("doc_id").unwrap();
            let alive = segment.alive_bitset();
            weight
                .for_each(segment, &mut |seg_doc, score| {
                    if alive.is_none_or(|alive| alive.is_alive(seg_doc)) {
                        visited.insert(DocId::new(doc_ids.first(seg_doc).unwrap()), score);
                    }
                })
                .unwrap();
        }
        assert_eq!(scored, visited);
        assert!(scored.len() > 50 && scored.len() < all.len());
        assert!(!scored.contains_key(&DocId::new(0)), "deleted");

        // The pruned top-k is the naive top-k: score descending, then user id.
        let mut naive: Vec<(DocId, f32)> = full.iter().map(|(d, s)| (*d, *s)).collect();
        naive.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then_with(|| user_ids[a.0.as_u64() as usize].cmp(&user_ids[b.0.as_u64() as usize]))
        });
        for k in [1, 3, 10, 40] {
            let pruned = top(&text, &query, k, &accept_all);
            assert_eq!(pruned, naive[..k], "top {k}");
        }
        // A filter applies before the cut.
        let odd = |doc: DocId| {
            (doc.as_u64() % 2 == 1).then(|| &user_ids[doc.as_u64() as usize] as &dyn UserId)
        };
        let naive_odd: Vec<(DocId, f32)> = naive
            .iter()
            .copied()
            .filter(|(d, _)| d.as_u64() % 2 == 1)
            .take(10)
            .collect();
        assert_eq!(top(&text, &query, 10, &odd), naive_odd);

        let some: Vec<DocId> = (0..next).step_by(4).map(DocId::new).collect();
        let partial = text
            .score_docs(&text.plan(query.clone()).unwrap(), &some)
            .unwrap();
        for doc in &some {
            assert_eq!(
                partial.get(doc).map(|found| found.bm25),
                full.get(doc).copied(),
                "{doc:?}"
            );
        }
    }

    /// Every (field, term) of an index with its postings `doc_id -> term frequency`, and
    /// each document's fieldnorms, whatever the segments.
    type Postings =
        std::collections::BTreeMap<(u32, Vec<u8>), std::collections::BTreeMap<u64, u32>>;

    fn index_contents(text: &TextIndex) -> (Postings, std::collections::BTreeMap<(u32, u64), u8>) {
        use tantivy::postings::Postings as _;
        let searcher = text.reader.searcher();
        let mut postings = Postings::new();
        let mut norms = std::collections::BTreeMap::new();
        for segment in searcher.segment_readers() {
            let ids = segment.fast_fields().u64("doc_id").unwrap();
            for field in [text.fields.words, text.fields.ident] {
                let inverted = segment.inverted_index(field).unwrap();
                let mut terms = inverted.terms().stream().unwrap();
                while terms.advance() {
                    let info = terms.value().clone();
                    let mut list = inverted
                        .read_postings_from_terminfo(&info, IndexRecordOption::WithFreqs)
                        .unwrap();
                    let entry = postings
                        .entry((field.field_id(), terms.key().to_vec()))
                        .or_default();
                    while list.doc() != TERMINATED {
                        entry.insert(ids.first(list.doc()).unwrap(), list.term_freq());
                        list.advance();
                    }
                }
                let fieldnorms = segment.get_fieldnorms_reader(field).unwrap();
                for seg_doc in segment.doc_ids_alive() {
                    norms.insert(
                        (field.field_id(), ids.first(seg_doc).unwrap()),
                        fieldnorms.fieldnorm_id(seg_doc),
                    );
                }
            }
        }
        (postings, norms)
    }

    /// Documents analysed by `prepare` and read back by the fields' tokenizer give the
    /// index tantivy builds from its own pre-tokenized values (the way ruche added them
    /// before): the same terms, postings, frequencies and fieldnorms, so the same scores.
    #[test]
    fn analysed_documents_index_as_tantivys_pre_tokenized_ones() {
        let contents = [
            (
                "default",
                "Refund for order NW-15699, please: 12:30 at src/main.rs",
            ),
            (
                "default",
                "The EntityStore keeps 3:4 ratios; 10:abc and  unicode café Ünïcödé",
            ),
            ("acme", "order NW-15699 shipped to user@example.com on v2.1"),
            ("acme:x", "the the the and of"),
            ("default", ""),
            ("t\u{e9}n", "colons::everywhere : 1:1 22:222 :::"),
        ];
        let dir = tempfile::tempdir().unwrap();
        let ours =
            TextIndex::create(&dir.path().join("ours"), false, &Protected::default()).unwrap();
        let theirs =
            TextIndex::create(&dir.path().join("theirs"), false, &Protected::default()).unwrap();
        for (i, (tenant, content)) in contents.iter().enumerate() {
            let document =
                Document::Chunk(Chunk::new(format!("c{i}"), *content).with_tenant(*tenant));
            let doc = DocId::new(i as u64);
            let counts = ours.add_document(doc, &document).unwrap();
            // tantivy's pre-tokenized values, analysed by the same analyzers.
            let text = document.indexed_text(false);
            let prefix = scope_prefix(document.kind(), document.tenant_id());
            let tokenized = |analyzer: &tantivy::tokenizer::TextAnalyzer| {
                let mut analyzer = analyzer.clone();
                let mut stream = analyzer.token_stream(&text);
                let mut tokens = Vec::new();
                while let Some(token) = stream.next() {
                    let mut token = token.clone();
                    token.text.insert_str(0, &prefix);
                    tokens.push(token);
                }
                tantivy::tokenizer::PreTokenizedString {
                    text: String::new(),
                    tokens,
                }
            };
            let (words, ident) = (
                tokenized(&tantivy_analyzer(Analysis::Words)),
                tokenized(&tantivy_analyzer(Analysis::Ident)),
            );
            assert_eq!(
                counts,
                [words.tokens.len() as u32, ident.tokens.len() as u32]
            );
            let mut entry = TantivyDocument::default();
            entry.add_u64(theirs.fields.doc_id, doc.as_u64());
            entry.add_u64(
                theirs.fields.tokens,
                (u64::from(counts[0]) << 32) | u64::from(counts[1]),
            );
            entry.add_pre_tokenized_text(theirs.fields.words, words);
            entry.add_pre_tokenized_text(theirs.fields.ident, ident);
            theirs.add_prepared(Prepared { entry, counts }).unwrap();
        }
        for text in [&ours, &theirs] {
            text.commit(1).unwrap();
            text.reload().unwrap();
        }
        let (our_postings, our_norms) = index_contents(&ours);
        let (their_postings, their_norms) = index_contents(&theirs);
        assert!(our_postings.len() > 20, "{}", our_postings.len());
        assert_eq!(our_postings, their_postings);
        assert_eq!(our_norms, their_norms);
        let counts = |text: &TextIndex| {
            let mut counts = text.token_counts().unwrap();
            counts.sort();
            counts
        };
        assert_eq!(counts(&ours), counts(&theirs));
    }

    /// The fields' tokenizer never panics, whatever it is given, and stops where the
    /// encoding stops making sense.
    #[test]
    fn the_fields_tokenizer_reads_its_encoding_and_survives_anything_else() {
        use tantivy::tokenizer::{TokenStream as _, Tokenizer as _};
        let read = |text: &str| {
            let mut tokenizer = PreAnalyzed;
            let mut stream = tokenizer.token_stream(text);
            let mut out = Vec::new();
            while let Some(token) = stream.next() {
                out.push(token.text.clone());
            }
            out
        };
        assert_eq!(read("2:p\u{0}3:a:b1:7"), ["p\u{0}a:b", "p\u{0}7"]);
        assert_eq!(read("0:2:é3:xyz"), ["é", "xyz"]);
        for garbage in [
            "",
            ":",
            "9:ab",
            "x:1:a",
            "2:é",
            "1:",
            "3:abc4:ab",
            "18446744073709551616:a",
            "0:1:\u{e9}",
        ] {
            let _ = read(garbage);
        }
        assert!(read("3:abc4:ab").is_empty());
        assert!(read("0:1:\u{e9}").is_empty());
    }

    /// A walk split in parts of the segment's documents (each term's postings entered
    /// through the skip list, in the middle of a block) gives the unsplit walk's hits
    /// and scores, bit for bit, whichever thread walks which part.
    #[test]
    fn a_walk_in_parts_gives_the_same_hits() {
        const WORDS: [&str; 6] = ["the", "order", "refund", "parcel", "late", "NW-15007"];
        let dir = tempfile::tempdir().unwrap();
        let text =
            TextIndex::create(&dir.path().join("text"), false, &Protected::default()).unwrap();
        let n = 1_531u64;
        for i in 0..n {
            // "the" everywhere, the others every 2nd, 3rd, ... document, with
            // repetitions: terms of thousands of postings, hundreds, and a few.
            let mut words = vec!["the"; 1 + (i % 3) as usize];
            for (w, word) in WORDS.iter().enumerate().skip(1) {
                if i % (w as u64 + 1) == 0 || (w == 5 && i % 97 == 0) {
                    words.extend(std::iter::repeat_n(*word, 1 + (i as usize + w) % 2));
                }
            }
            let chunk = Chunk::new(format!("c{i:05}"), words.join(" "));
            text.add_document(DocId::new(i), &Document::Chunk(chunk))
                .unwrap();
        }
        text.commit(1).unwrap();
        text.reload().unwrap();
        let scope = ScopeStats {
            docs: n,
            tokens: [6 * n, n],
        };
        let user_ids: Vec<String> = (0..n).map(|i| format!("c{i:05}")).collect();
        FORCE_WALK.with(|force| force.set(Some(true)));
        for words in [
            "the order",
            "refund parcel late",
            "the NW-15007 late",
            "order order the",
        ] {
            let query = text.analyze(words, crate::Kind::Chunk, "default", scope);
            let plan = text.plan(query).unwrap();
            for filtered in [true, false] {
                let accept = |doc: DocId| {
                    (!filtered || doc.as_u64().is_multiple_of(3))
                        .then(|| &user_ids[doc.as_u64() as usize] as &dyn UserId)
                };
                let accept = &accept;
                for k in [1, 10, 100, 2_000] {
                    let whole = text.search(&plan, k, accept, None).unwrap();
                    assert!(!whole.is_empty(), "{words}");
                    SHARED_WALK_FROM_TEST.with(|from| from.set(Some(0)));
                    let share = WalkShare::default();
                    let taken_back = text.search(&plan, k, accept, Some(&share)).unwrap();
                    let helped = std::thread::scope(|scope| {
                        let leg = share.leg();
                        let helper = scope.spawn(|| share.help_while_running());
                        let helped = text.search(&plan, k, accept, Some(&share)).unwrap();
                        drop(leg);
                        helper.join().unwrap();
                        helped
                    });
                    SHARED_WALK_FROM_TEST.with(|from| from.set(None));
                    assert_eq!(taken_back, whole, "{words}, k {k}");
                    assert_eq!(helped, whole, "{words}, k {k}");
                }
            }
        }
        FORCE_WALK.with(|force| force.set(None));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]

        /// The walk of every posting, and `search_among` a superset of the admitted
        /// documents, give the naive top k: every document scored by `score_docs` (the
        /// same sums, BM25 and coverage), best first, ties by user id, the filter applied
        /// before the cut; over several segments, deleted documents, repeated query words
        /// and codes.
        #[test]
        fn the_walk_gives_the_naive_top_k(
            docs in proptest::collection::vec(proptest::collection::vec(0usize..10, 1..4), 20..120),
            query in proptest::collection::vec(0usize..10, 1..7),
            k in 1usize..25,
            modulus in 1u64..4,
            deleted in 0u64..7,
        ) {
            const WORDS: [&str; 10] = [
                "order", "refund", "parcel", "late", "card", "NW-15007", "the", "label", "tent", "email",
            ];
            let dir = tempfile::tempdir().unwrap();
            let text = TextIndex::create(&dir.path().join("text"), false, &Protected::default()).unwrap();
            let half = docs.len() / 2;
            for (i, words) in docs.iter().enumerate() {
                let content: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
                let chunk = Chunk::new(format!("c{i}"), content.join(" "));
                text.add_document(DocId::new(i as u64), &Document::Chunk(chunk)).unwrap();
                if i == half {
                    text.commit(1).unwrap();
                }
            }
            if deleted > 0 {
                for doc in (0..docs.len() as u64).step_by(deleted as usize + 1) {
                    text.delete(DocId::new(doc)).unwrap();
                }
            }
            text.commit(2).unwrap();
            text.reload().unwrap();
            let live = docs.len() as u64 - if deleted > 0 { (docs.len() as u64).div_ceil(deleted + 1) } else { 0 };
            let scope = ScopeStats { docs: live, tokens: [4 * live, live] };
            let query: Vec<&str> = query.iter().map(|&w| WORDS[w]).collect();
            let query = text.analyze(&query.join(" "), crate::Kind::Chunk, "default", scope);
            let plan = text.plan(query).unwrap();
            let user_ids: Vec<String> = (0..docs.len()).map(|i| format!("c{i}")).collect();
            let accept = |doc: DocId| {
                doc.as_u64().is_multiple_of(modulus).then(|| &user_ids[doc.as_u64() as usize] as &dyn UserId)
            };
            let all: Vec<DocId> = (0..docs.len() as u64).map(DocId::new).collect();
            let mut naive: Vec<(DocId, TextMatch)> = text
                .score_docs(&plan, &all)
                .unwrap()
                .into_iter()
                .filter(|(doc, _)| accept(*doc).is_some())
                .collect();
            naive.sort_by(|a, b| {
                b.1.bm25.total_cmp(&a.1.bm25).then_with(|| {
                    user_ids[a.0.as_u64() as usize].cmp(&user_ids[b.0.as_u64() as usize])
                })
            });
            naive.truncate(k);
            // Scoring each document of a superset of what the filter admits: the same.
            let among = text.search_among(&plan, &all, k, &accept).unwrap();
            proptest::prop_assert_eq!(&among, &naive);
            FORCE_WALK.with(|force| force.set(Some(true)));
            let walked = text.search(&plan, k, &accept, None);
            // The same walk in parts of each segment: taken back by this thread, then
            // shared with another that helps while the leg runs.
            SHARED_WALK_FROM_TEST.with(|from| from.set(Some(0)));
            let share = WalkShare::default();
            let parts = text.search(&plan, k, &accept, Some(&share));
            let shared = std::thread::scope(|scope| {
                let leg = share.leg();
                let helper = scope.spawn(|| share.help_while_running());
                let shared = text.search(&plan, k, &accept, Some(&share));
                drop(leg);
                helper.join().unwrap();
                shared
            });
            SHARED_WALK_FROM_TEST.with(|from| from.set(None));
            FORCE_WALK.with(|force| force.set(None));
            let walked = walked.unwrap();
            proptest::prop_assert_eq!(&parts.unwrap(), &walked);
            proptest::prop_assert_eq!(&shared.unwrap(), &walked);
            proptest::prop_assert_eq!(walked, naive);
        }
    }

    /// Run as a child of [`a_panic_turned_into_an_error_prints_nothing`].
    #[test]
    fn panic_child() {
        if std::env::var_os("RUCHE_TEST_PANIC_CHILD").is_none() {
            return;
        }
        let err = guarded("reading", || -> Result<()> { panic!("inside guarded") }).unwrap_err();
        eprintln!("error: {err}");
        let _ = std::panic::catch_unwind(|| panic!("outside guarded"));
    }

    /// A panic of tantivy's on damaged data becomes an error and prints no "thread
    /// panicked" (the error says it all); any other panic is reported as before.
    #[test]
    fn a_panic_turned_into_an_error_prints_nothing() {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "local::text::tests::panic_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("RUCHE_TEST_PANIC_CHILD", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("failed on damaged data (inside guarded)"),
            "{stderr}"
        );
        // One report: the panic outside.
        assert_eq!(stderr.matches("panicked at").count(), 1, "{stderr}");
        assert!(stderr.contains("outside guarded"), "{stderr}");
    }
}
