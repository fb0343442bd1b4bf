//! The text index's lifecycle: create or open, add and delete, commit with the last
//! sequence number, snapshot for readers, and search.

use std::collections::BinaryHeap;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;
use tantivy::query::{EnableScoring, Query};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{
    DocSet, Index, IndexReader, IndexWriter, ReloadPolicy, TERMINATED, TantivyDocument, Term,
};

use crate::analysis::text::{self as analyzer, Analysis};
use crate::model::id::DocId;
use crate::{Error, Result};

use super::directory::{self, Protected};
use super::directory::{SnapshotDirectory, WriterDirectory};
use super::guard::{guarded, tantivy_err};
use super::query::{
    AnalysedDoc, BooleanQueryParts, Coverage, TextMatch, TextPlan, TextQuery, cover_plan,
    match_each,
};
use super::schema::{Fields, schema, scope_prefix};
use super::stats::{LiveFreqs, Remembered, ScopeStats, ScopedStatistics};
use super::tokenizer::{IDENT, PreAnalyzed, WORDS};
use super::walk::{HeapEntry, UserId, best_first, term_at_a_time};
use crate::parallel::WalkShare;

/// Memory budget of the index writer.
pub(crate) const WRITER_MEMORY_BYTES: usize = 64 << 20;

/// The tantivy text index of one engine.
pub(crate) struct TextIndex {
    pub(crate) index: Index,
    /// `None` for a reader, which never writes (and takes no writer lock).
    pub(crate) writer: Option<Mutex<IndexWriter>>,
    /// A writer's: the files of the commit published for readers, which it keeps.
    pub(crate) protected: Option<Protected>,
    pub(crate) reader: IndexReader,
    pub(crate) fields: Fields,
    /// Whether a rule's patterns are indexed with its condition and action.
    pub(crate) patterns_in_text: bool,
    /// Each segment's ids, by segment doc, when they ascend (what commits write:
    /// documents are numbered as they are written), so that a document is found by
    /// binary search instead of a term lookup; `None` for a segment whose ids do not.
    pub(crate) ascending_ids: Remembered<tantivy::index::SegmentId, Option<Arc<[u64]>>>,
    /// Live document frequencies in segments with deleted documents.
    pub(crate) live_freqs: LiveFreqs,
}

/// The version of the analyzers' output. An index written with another version is
/// rebuilt from the store, so that query and document terms always agree. Version 2:
/// numbers of 5 digits or more are `ident` tokens. Version 3: terms carry their scope
/// (kind and tenant), and documents their token counts.
pub(crate) const ANALYZER_VERSION: u32 = 3;

pub(crate) fn first_analyzer_version() -> u32 {
    1
}

/// The sequence number a commit's `meta.json` records in its payload.
pub(crate) fn snapshot_seq(meta: &str) -> Result<u64> {
    #[derive(serde::Deserialize)]
    struct TantivyMeta {
        payload: Option<String>,
    }
    let damaged = |why: String| Error::corrupt(format!("text index commit: {why}"));
    let meta: TantivyMeta = serde_json::from_str(meta).map_err(|err| damaged(err.to_string()))?;
    let payload = meta
        .payload
        .ok_or_else(|| damaged("no payload".to_string()))?;
    let payload: Payload =
        serde_json::from_str(&payload).map_err(|err| damaged(err.to_string()))?;
    Ok(payload.seq)
}

/// Removes the files tantivy made in `dir` ([`directory::is_tantivy_file`]), and no other.
pub(crate) fn remove_tantivy_files(dir: &Path) -> Result<()> {
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
    pub(crate) fn snapshot_files_required(
        dir: &Path,
        meta: &str,
    ) -> Result<(HashSet<PathBuf>, Vec<PathBuf>)> {
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

    pub(crate) fn open_index(
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
    pub(crate) fn snapshot(&self) -> Result<(String, u64)> {
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
    pub(crate) fn remove_orphans(&self, dir: &Path, protected: &Protected) {
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

    pub(crate) fn with_index(
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
    pub(crate) fn prepare(&self, doc: DocId, document: &crate::Document) -> AnalysedDoc {
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
        AnalysedDoc { entry, counts }
    }

    /// Adds a document version [`TextIndex::prepare`] analysed.
    pub(crate) fn add_prepared(&self, prepared: AnalysedDoc) -> Result<()> {
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

    pub(crate) fn lock_writer(&self) -> Result<std::sync::MutexGuard<'_, IndexWriter>> {
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

    pub(crate) fn search_unguarded<'a>(
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

    pub(crate) fn score_docs_unguarded(
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

    pub(crate) fn statistics<'s>(
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
    pub(crate) fn locate(
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
    pub(crate) fn ascending_ids(
        &self,
        segment: &tantivy::SegmentReader,
    ) -> Result<Option<Arc<[u64]>>> {
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

/// The commit payload: the last sequence number the index includes, and how rule text
/// was built (an index built another way is rebuilt).
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Payload {
    pub(crate) seq: u64,
    #[serde(default)]
    pub(crate) patterns_in_text: bool,
    /// [`ANALYZER_VERSION`] of the build that wrote the index (absent: version 1).
    #[serde(default = "first_analyzer_version")]
    pub(crate) analyzer_version: u32,
}
