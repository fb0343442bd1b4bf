//! Writes: validation, embedding, buffering, and the commit that makes them durable.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;

use rayon::prelude::*;

use super::state::PendingOp;
use super::{Engine, Inner};
use crate::embed::Embedders;
use crate::local::catalog::Entry;
use crate::local::store::DocRows;
use crate::local::store::{Change, DocRecord, StoredVectors};
use crate::model::doc::{Chunk, Document, Rule};
use crate::model::id::DocId;
use crate::{Error, ErrorKind, Kind, Result};
use crate::{Scenario, Tool};

/// Texts embedded per call of the embedder.
const EMBED_BATCH: usize = 64;

impl Engine {
    /// Buffers rules for the next [`Engine::commit`]; a rule whose id exists in its
    /// tenant replaces the stored one.
    ///
    /// Rules without vectors are embedded now (in parallel) when the engine has an
    /// embedder, so errors surface here rather than at commit.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] for an invalid rule,
    /// [`ErrorKind::DuplicateId`] when two rules of the
    /// call share a tenant and id,
    /// [`ErrorKind::DimensionMismatch`] for vectors
    /// of another dimension than the index's, embedder errors. Nothing of the call is
    /// buffered when it fails.
    pub fn upsert_rules(&self, rules: impl IntoIterator<Item = Rule>) -> Result<()> {
        self.upsert(rules.into_iter().map(Document::Rule).collect())
    }

    /// Buffers chunks for the next [`Engine::commit`]; see [`Engine::upsert_rules`].
    ///
    /// # Errors
    ///
    /// As [`Engine::upsert_rules`]; an importance outside 1..=10 is an error.
    pub fn upsert_chunks(&self, chunks: impl IntoIterator<Item = Chunk>) -> Result<()> {
        self.upsert(chunks.into_iter().map(Document::Chunk).collect())
    }

    /// Buffers scenarios for the next [`Engine::commit`]; see [`Engine::upsert_rules`].
    ///
    /// # Errors
    ///
    /// As [`Engine::upsert_rules`].
    pub fn upsert_scenarios(&self, scenarios: impl IntoIterator<Item = Scenario>) -> Result<()> {
        self.upsert(scenarios.into_iter().map(Document::Scenario).collect())
    }

    /// Buffers tools for the next [`Engine::commit`]; see [`Engine::upsert_rules`].
    ///
    /// # Errors
    ///
    /// As [`Engine::upsert_rules`].
    pub fn upsert_tools(&self, tools: impl IntoIterator<Item = Tool>) -> Result<()> {
        self.upsert(tools.into_iter().map(Document::Tool).collect())
    }

    /// Buffers documents of any kind for the next [`Engine::commit`].
    ///
    /// # Errors
    ///
    /// As [`Engine::upsert_rules`].
    pub fn upsert(&self, docs: Vec<Document>) -> Result<()> {
        self.inner.writable()?;
        let mut seen = HashSet::with_capacity(docs.len());
        for doc in &docs {
            doc.validate()?;
            if !seen.insert((doc.kind(), doc.tenant_id(), doc.id())) {
                return Err(Error::new(ErrorKind::DuplicateId {
                    id: doc.id().to_string(),
                }));
            }
        }
        self.inner.settle_embedder(&docs)?;
        let prepared = self.inner.prepare(docs)?;
        let mut pending = self.inner.lock_pending();
        // The first vectors of a kind without a dimension fix it.
        for kind in Kind::ALL {
            let Some(dim) = prepared.dimensions[kind.index()] else {
                continue;
            };
            let known = self
                .inner
                .store
                .dimensions(kind)
                .or(pending.dimensions[kind.index()]);
            match known {
                Some(expected) if expected != dim => {
                    return Err(Error::new(ErrorKind::DimensionMismatch {
                        expected,
                        got: dim,
                    }));
                }
                Some(_) => {}
                None => pending.dimensions[kind.index()] = Some(dim),
            }
        }
        pending.ops.extend(prepared.ops);
        Ok(())
    }

    /// Buffers the deletion of a document (a no-op at commit if it does not exist).
    pub fn delete(&self, kind: Kind, tenant: &str, id: &str) {
        self.inner.lock_pending().ops.push(PendingOp::Delete {
            kind,
            tenant: tenant.to_string(),
            id: id.to_string(),
        });
    }

    /// Buffers the deletion of every committed chunk of a context; returns how many.
    pub fn delete_context(&self, tenant: &str, context_id: &str) -> usize {
        let ids: Vec<String> = {
            let catalog = self.inner.read_catalog();
            catalog
                .iter()
                .filter(|(_, entry)| {
                    entry.kind() == Kind::Chunk
                        && entry.tenant_id() == tenant
                        && entry.context_id() == Some(context_id)
                })
                .map(|(_, entry)| entry.id().to_string())
                .collect()
        };
        for id in &ids {
            self.delete(Kind::Chunk, tenant, id);
        }
        ids.len()
    }

    /// Buffers the deletion of every committed chunk expired at `now`; returns how many.
    pub fn purge_expired(&self, now: crate::Timestamp) -> usize {
        let expired: Vec<(String, String)> = {
            let catalog = self.inner.read_catalog();
            catalog
                .iter()
                .filter(|(_, entry)| entry.kind() == Kind::Chunk)
                .filter_map(|(_, entry)| entry.doc().ok())
                .filter_map(|doc| doc.as_chunk())
                .filter(|c| c.is_expired(now))
                .map(|c| (c.tenant_id.clone(), c.id.clone()))
                .collect()
        };
        for (tenant, id) in &expired {
            self.delete(Kind::Chunk, tenant, id);
        }
        expired.len()
    }

    /// Makes every buffered write durable and visible to searches, atomically.
    ///
    /// After `commit` returns, a crash (even `kill -9`) loses none of it. Returns the
    /// number of changes applied (deleting a missing id is not a change).
    ///
    /// # Errors
    ///
    /// Storage errors. If the store's write fails, nothing of the batch is applied and
    /// the batch is dropped; if a derived index fails after the store succeeded, the
    /// change is kept and the index catches up when the engine is next opened.
    pub fn commit(&self) -> Result<usize> {
        let inner = &self.inner;
        inner.writable()?;
        let _serial = inner.commit_lock.lock().unwrap_or_else(|p| p.into_inner());
        let (ops, dimensions) = {
            let mut pending = inner.lock_pending();
            (
                std::mem::take(&mut pending.ops),
                std::mem::take(&mut pending.dimensions),
            )
        };
        // Vectors the documents brought: the kind's space is theirs. In an index of no
        // embedder at all, every kind that has no space yet shares it (one space, as
        // before kinds had spaces of their own).
        let embedders = inner.embedders();
        for kind in Kind::ALL {
            if let Some(dimensions) = dimensions[kind.index()]
                && inner.store.dimensions(kind).is_none()
            {
                let kinds: Vec<Kind> = if embedders.is_empty() {
                    Kind::ALL
                        .into_iter()
                        .filter(|&k| inner.store.dimensions(k).is_none())
                        .collect()
                } else {
                    vec![kind]
                };
                inner
                    .store
                    .set_vector_space(&kinds, dimensions, "external", None)?;
            }
        }
        if ops.is_empty() {
            return Ok(0);
        }
        let phase = std::time::Instant::now();
        let (applied, next_doc) = inner.resolve(ops)?;
        if applied.is_empty() {
            return Ok(0);
        }
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "changes resolved"
        );
        // Each written version as a document, once, for the text index and the catalog
        // (a record that does not convert fails the commit before anything is written).
        let documents: Vec<Option<Document>> = applied
            .par_iter()
            .map(|change| {
                change
                    .written
                    .as_ref()
                    .map(|(_, record, _)| record.to_document(None))
                    .transpose()
            })
            .collect::<Result<_>>()?;
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "documents made"
        );
        // The store's write and the text index's analysis run side by side; the text
        // index commits only once the store has the batch (else its adds are rolled
        // back), so it is never ahead of the store.
        let (stored, text_added) = rayon::join(
            || {
                let stored = inner.store.commit(&applied, next_doc);
                tracing::debug!(
                    elapsed_ms = phase.elapsed().as_millis() as u64,
                    changes = applied.len(),
                    "store committed"
                );
                stored
            },
            || {
                let added = inner.add_to_text(&applied, &documents);
                tracing::debug!(
                    elapsed_ms = phase.elapsed().as_millis() as u64,
                    "text index added"
                );
                added
            },
        );
        if let Err(err) = stored {
            if let Err(rollback) = inner.text.rollback() {
                tracing::warn!(error = %rollback, "could not roll the text index's adds back");
            }
            return Err(err);
        }
        crate::crash::point("commit:stored");
        let last_seq = inner.store.meta().last_seq;
        // Text index: one commit recording `last_seq`.
        let (tokens, text_result) = match text_added {
            Ok(tokens) => (tokens, inner.text.commit(last_seq)),
            Err(err) => (vec![None; applied.len()], Err(err)),
        };
        crate::crash::point("commit:text-committed");
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "text index committed"
        );
        let phase = std::time::Instant::now();

        // The catalog and the text reader change together, under the write lock.
        // The entries are built in parallel before the lock is taken.
        let catalog_result = {
            let built: Vec<Option<_>> = applied
                .par_iter()
                .zip(documents)
                .zip(&tokens)
                .map(|((change, document), tokens)| {
                    let (_, record, vectors) = change.written.as_ref()?;
                    let mut entry = Entry::new(document?, record.seq);
                    entry.tokens = tokens.unwrap_or_default();
                    Some((entry, DocRows::from_stored(vectors)))
                })
                .collect();
            let mut catalog = inner.write_catalog();
            for (change, built) in applied.iter().zip(built) {
                if let Some(removed) = change.removed {
                    catalog.remove(removed);
                }
                if let (Some((doc, _, _)), Some((entry, vectors))) = (&change.written, built) {
                    catalog.insert(*doc, entry, vectors, change.entities.clone());
                }
            }
            inner.text.reload()
        };
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "catalog updated"
        );
        if text_result.is_err() || catalog_result.is_err() {
            // The store has the commit, the published files do not: the next publish
            // writes a base (and readers keep the last published commit until then).
            inner.unpublish();
        }
        // The graph worker starts on the new vectors once the commit is published (it
        // would take half the cores from publishing; searches scan the tail meanwhile).
        let published = text_result
            .and(catalog_result)
            .and_then(|()| inner.publish(super::publish::Publish::Changes(&applied)));
        inner.wake_worker();
        // The store has the commit: whatever failed after it, the commit happened.
        published.map_err(|err| {
            Error::with_source(
                ErrorKind::Unpublished {
                    path: inner.dir.clone(),
                },
                err,
            )
        })?;
        let phase = std::time::Instant::now();
        inner.store.truncate_log(last_seq)?;
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "log truncated"
        );
        Ok(applied.len())
    }
}

/// What one buffered op does in a commit: its sequence number, the version it writes
/// and the one it removes.
struct Step {
    seq: u64,
    written: Option<DocId>,
    removed: Option<DocId>,
}

/// Documents ready to buffer: their vectors made, their embedding fields emptied.
struct ReadyWrites {
    ops: Vec<PendingOp>,
    /// The dimension of each kind's vectors, if any of its documents has one.
    dimensions: [Option<usize>; Kind::COUNT],
}

impl Inner {
    /// Adds a batch's versions to the text index, uncommitted (deletes first where a
    /// change replaces a version): analysed in parallel, added in order, since a delete
    /// applies to what came before it. Returns each change's written version's token
    /// counts, in the order of `applied`.
    fn add_to_text(
        &self,
        applied: &[Change],
        documents: &[Option<Document>],
    ) -> Result<Vec<Option<[u32; 2]>>> {
        let prepared: Vec<Option<crate::local::text::AnalysedDoc>> = applied
            .par_iter()
            .zip(documents)
            .map(|(change, document)| {
                let (doc, _, _) = change.written.as_ref()?;
                Some(self.text.prepare(*doc, document.as_ref()?))
            })
            .collect();
        let mut tokens = Vec::with_capacity(prepared.len());
        for (change, prepared) in applied.iter().zip(prepared) {
            if let Some(removed) = change.removed {
                self.text.delete(removed)?;
            }
            tokens.push(prepared.as_ref().map(|prepared| prepared.counts));
            if let Some(prepared) = prepared {
                self.text.add_prepared(prepared)?;
            }
        }
        Ok(tokens)
    }

    /// Turns buffered writes into changes: each upsert gets a new `DocId` and replaces
    /// the live version of its id, if any; a delete of a missing id is dropped. Returns
    /// the changes and the next free `DocId`. Runs under the commit lock, so the catalog
    /// it reads is the committed state.
    pub(crate) fn resolve(&self, ops: Vec<PendingOp>) -> Result<(Vec<Change>, u64)> {
        let meta = self.store.meta();
        let (mut next_doc, mut seq) = (meta.next_doc, meta.last_seq);
        // In order, what each op does (`None`: a delete of a missing id).
        let mut plan: Vec<Option<Step>> = Vec::with_capacity(ops.len());
        {
            let catalog = self.read_catalog();
            // Ids changed earlier in this batch, which the catalog cannot see yet.
            let mut overlay: HashMap<
                (Kind, &str, &str),
                Option<DocId>,
                foldhash::fast::RandomState,
            > = HashMap::default();
            for op in &ops {
                let (key, upsert) = match op {
                    PendingOp::Upsert { doc, .. } => {
                        ((doc.kind(), doc.tenant_id(), doc.id()), true)
                    }
                    PendingOp::Delete { kind, tenant, id } => {
                        ((*kind, tenant.as_str(), id.as_str()), false)
                    }
                };
                let previous = match overlay.get(&key) {
                    Some(previous) => *previous,
                    None => catalog.lookup(key.0, key.1, key.2),
                };
                if upsert {
                    if next_doc > DocId::MAX {
                        return Err(Error::invalid_input(
                            "the index has run out of document ids",
                        ));
                    }
                    let new_doc = DocId::new(next_doc);
                    next_doc += 1;
                    seq += 1;
                    plan.push(Some(Step {
                        seq,
                        written: Some(new_doc),
                        removed: previous,
                    }));
                    overlay.insert(key, Some(new_doc));
                } else if previous.is_some() {
                    seq += 1;
                    plan.push(Some(Step {
                        seq,
                        written: None,
                        removed: previous,
                    }));
                    overlay.insert(key, None);
                } else {
                    plan.push(None);
                }
            }
        }
        // Each written version's record and entities, in parallel.
        let changes = ops
            .into_par_iter()
            .zip(plan)
            .filter_map(|(op, plan)| {
                let Step {
                    seq,
                    written,
                    removed,
                } = plan?;
                Some(match (op, written) {
                    (PendingOp::Upsert { doc, vectors }, Some(new_doc)) => Change {
                        seq,
                        written: Some((new_doc, DocRecord::from_document(&doc, seq), vectors)),
                        entities: crate::local::graph::entities_of(&doc),
                        removed,
                    },
                    _ => Change {
                        seq,
                        written: None,
                        entities: Vec::new(),
                        removed,
                    },
                })
            })
            .collect();
        Ok((changes, next_doc))
    }

    /// Embeds the texts of `to_embed`, taking what it can from the embedding cache and
    /// embedding the rest in parallel batches.
    fn embed_cached(
        &self,
        embedder: &dyn crate::Embedder,
        to_embed: &[(usize, usize, String)],
    ) -> Result<Vec<Vec<f32>>> {
        let model_id = embedder.model_id();
        let cacheable = embedder.cacheable();
        let mut vectors: Vec<Option<Vec<f32>>> = Vec::with_capacity(to_embed.len());
        for (_, _, text) in to_embed {
            if !cacheable {
                vectors.push(None);
                continue;
            }
            vectors.push(self.store.cached_embedding(model_id, text)?.map(|cached| {
                if cached.is_empty() {
                    vec![0.0; embedder.dimensions()]
                } else {
                    cached
                }
            }));
        }
        let missing: Vec<usize> = (0..to_embed.len())
            .filter(|&i| vectors[i].is_none())
            .collect();
        self.counters
            .embedding_cache_hits
            .fetch_add((to_embed.len() - missing.len()) as u64, Ordering::Relaxed);
        if !missing.is_empty() {
            let embedded: Vec<Vec<Vec<f32>>> = missing
                .par_chunks(EMBED_BATCH)
                .map(|batch| {
                    let texts: Vec<&str> = batch.iter().map(|&i| to_embed[i].2.as_str()).collect();
                    embedder.embed_batch(&texts)
                })
                .collect::<Result<_>>()?;
            let embedded: Vec<Vec<f32>> = embedded.into_iter().flatten().collect();
            if embedded.len() != missing.len() {
                return Err(Error::new(ErrorKind::Embedder {
                    message: format!(
                        "`{model_id}` returned {} vectors for {} texts",
                        embedded.len(),
                        missing.len()
                    ),
                }));
            }
            self.counters
                .embedded_texts
                .fetch_add(missing.len() as u64, Ordering::Relaxed);
            if cacheable {
                self.store.cache_embeddings(
                    model_id,
                    missing
                        .iter()
                        .zip(&embedded)
                        .map(|(&i, v)| (to_embed[i].2.as_str(), v.as_slice())),
                )?;
            }
            for (i, vector) in missing.into_iter().zip(embedded) {
                vectors[i] = Some(vector);
            }
        }
        Ok(vectors.into_iter().map(Option::unwrap_or_default).collect())
    }

    pub(crate) fn lock_pending(&self) -> std::sync::MutexGuard<'_, super::Pending> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes each document's own vectors, or embeds its texts with its kind's embedder
    /// (each distinct embedder once for the batch), checking each kind's dimension.
    fn prepare(&self, docs: Vec<Document>) -> Result<ReadyWrites> {
        let mut ops = Vec::with_capacity(docs.len());
        let embedders = self.embedders();
        let groups = embedders.distinct();
        // The texts each distinct embedder embeds: (document, slot, text).
        let mut to_embed: Vec<Vec<(usize, usize, String)>> = vec![Vec::new(); groups.len()];
        let mut dimensions = KindDimensions::default();
        for (doc_idx, mut doc) in docs.into_iter().enumerate() {
            let kind = doc.kind();
            let group = groups.iter().position(|(_, kinds)| kinds.contains(&kind));
            let (vectors, texts) = split_vectors(&mut doc, group.is_some());
            for v in vectors.indexed() {
                dimensions.check(kind, v.1.len())?;
            }
            if let Some(group) = group {
                to_embed[group].extend(texts.into_iter().map(|(slot, text)| (doc_idx, slot, text)));
            }
            ops.push((doc, vectors));
        }
        for ((embedder, _), to_embed) in groups.iter().zip(&to_embed) {
            if to_embed.is_empty() {
                continue;
            }
            let embedded = self.embed_cached(embedder.as_ref(), to_embed)?;
            for ((doc_idx, slot, _), vector) in to_embed.iter().zip(embedded) {
                if vector.len() != embedder.dimensions() {
                    return Err(Error::new(ErrorKind::Embedder {
                        message: format!(
                            "`{}` returned a vector of {} components, not {}",
                            embedder.model_id(),
                            vector.len(),
                            embedder.dimensions()
                        ),
                    }));
                }
                // An all-zero vector means "nothing to embed": the document has no vector.
                if vector.iter().all(|x| *x == 0.0) {
                    continue;
                }
                let (doc, vectors) = &mut ops[*doc_idx];
                dimensions.check(doc.kind(), vector.len())?;
                if *slot == 0 {
                    vectors.main = Some(vector);
                } else {
                    vectors.patterns[slot - 1] = Some(vector);
                }
            }
        }
        Ok(ReadyWrites {
            ops: ops
                .into_iter()
                .map(|(doc, vectors)| PendingOp::Upsert {
                    doc: Box::new(doc),
                    vectors,
                })
                .collect(),
            dimensions: dimensions.0,
        })
    }
}

/// The dimension each kind's vectors have in a batch: the first vector of a kind fixes
/// it, another of that kind must match.
#[derive(Default)]
struct KindDimensions([Option<usize>; Kind::COUNT]);

impl KindDimensions {
    fn check(&mut self, kind: Kind, len: usize) -> Result<()> {
        match self.0[kind.index()] {
            Some(expected) if expected != len => Err(Error::new(ErrorKind::DimensionMismatch {
                expected,
                got: len,
            })),
            _ => {
                self.0[kind.index()] = Some(len);
                Ok(())
            }
        }
    }
}

/// Takes the vectors a document carries out of it, and lists the texts an embedder has
/// to embed for the rest (`embed`: there is an embedder): slot 0 the document's text,
/// slot `i + 1` example `i` (a rule's pattern). Examples are embedded only when none was
/// given.
pub(crate) fn split_vectors(
    doc: &mut Document,
    embed: bool,
) -> (StoredVectors, Vec<(usize, String)>) {
    let mut vectors = StoredVectors::default();
    let mut to_embed = Vec::new();
    let (given_main, given_examples) = doc.take_embeddings();
    vectors.external = given_main.is_some() || given_examples.is_some();
    vectors.main = given_main;
    let examples = doc.examples();
    vectors.patterns = match given_examples {
        Some(given) => given.into_iter().map(Some).collect(),
        None => vec![None; examples.len()],
    };
    if embed {
        if vectors.main.is_none() {
            to_embed.push((0, doc.text()));
        }
        if vectors.patterns.iter().all(Option::is_none) {
            for (i, example) in examples.iter().enumerate() {
                to_embed.push((i + 1, example.clone()));
            }
        }
    }
    (vectors, to_embed)
}

/// A document's normalised vectors, each with the part of the document it embeds.
pub type VectorRows = Vec<(crate::query::VectorMatch, Vec<f32>)>;

/// The vectors the local index keeps for each document, for a backend that stores them
/// elsewhere: the vectors a document carries (taken out of it), or its texts embedded by
/// `embedder`; each normalised, with a rule's centroid when it has several (see
/// [`VectorMatch`](crate::query::VectorMatch)). A document with no vector gets none.
///
/// # Errors
///
/// [`ErrorKind::DimensionMismatch`] when vectors of one kind with different dimensions
/// meet, and the embedders' errors.
pub fn document_vectors(docs: &mut [Document], embedders: &Embedders) -> Result<Vec<VectorRows>> {
    let mut stored = Vec::with_capacity(docs.len());
    let groups = embedders.distinct();
    let mut to_embed: Vec<Vec<(usize, usize, String)>> = vec![Vec::new(); groups.len()];
    for (doc_idx, doc) in docs.iter_mut().enumerate() {
        let kind = doc.kind();
        let group = groups.iter().position(|(_, kinds)| kinds.contains(&kind));
        let (vectors, texts) = split_vectors(doc, group.is_some());
        if let Some(group) = group {
            to_embed[group].extend(texts.into_iter().map(|(slot, text)| (doc_idx, slot, text)));
        }
        stored.push(vectors);
    }
    for ((embedder, _), to_embed) in groups.iter().zip(&to_embed) {
        if to_embed.is_empty() {
            continue;
        }
        let texts: Vec<&str> = to_embed.iter().map(|(_, _, t)| t.as_str()).collect();
        let embedded = embedder.embed_batch(&texts)?;
        for ((doc_idx, slot, _), vector) in to_embed.iter().zip(embedded) {
            // An all-zero vector means "nothing to embed".
            if vector.iter().all(|x| *x == 0.0) {
                continue;
            }
            let vectors = &mut stored[*doc_idx];
            if *slot == 0 {
                vectors.main = Some(vector);
            } else {
                vectors.patterns[slot - 1] = Some(vector);
            }
        }
    }
    let mut dimensions = KindDimensions::default();
    let mut out = Vec::with_capacity(stored.len());
    for (doc, vectors) in docs.iter().zip(&stored) {
        for (_, v) in vectors.indexed() {
            dimensions.check(doc.kind(), v.len())?;
        }
        let rows = match DocRows::from_stored(vectors) {
            Some(rows) => {
                let dim = rows.dim();
                let normalised = rows.view().normalised();
                normalised
                    .rows
                    .iter()
                    .zip(normalised.data.chunks_exact(dim))
                    .map(|(&row, v)| (crate::query::VectorMatch::from_row(row), v.to_vec()))
                    .collect()
            }
            None => Vec::new(),
        };
        out.push(rows);
    }
    Ok(out)
}
