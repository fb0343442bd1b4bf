//! Writes: validation, embedding, buffering, and the commit that makes them durable.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;

use rayon::prelude::*;

use super::state::PendingOp;
use super::{Engine, Inner};
use crate::local::Committed;
use crate::local::store::prepare::{KindDimensions, split_vectors};
use crate::local::store::{Change, DocRecord};
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
        let ready = self.ready(docs)?;
        self.buffer(ready)
    }

    /// Checks and embeds documents for [`Engine::buffer`], buffering nothing.
    pub(crate) fn ready(&self, docs: Vec<Document>) -> Result<ReadyWrites> {
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
        self.inner.prepare(docs)
    }

    /// Buffers documents [`Engine::ready`] made ready for the next commit.
    pub(crate) fn buffer(&self, prepared: ReadyWrites) -> Result<()> {
        let mut pending = self.inner.lock_pending();
        // The first vectors of a kind without a dimension fix it.
        for kind in Kind::ALL {
            let Some(dim) = prepared.dimensions[kind.index()] else {
                continue;
            };
            let known = self
                .inner
                .local
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
            let catalog = self.inner.local.snapshot();
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
            let catalog = self.inner.local.snapshot();
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
                && inner.local.store.dimensions(kind).is_none()
            {
                let kinds: Vec<Kind> = if embedders.is_empty() {
                    Kind::ALL
                        .into_iter()
                        .filter(|&k| inner.local.store.dimensions(k).is_none())
                        .collect()
                } else {
                    vec![kind]
                };
                inner
                    .local
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
        let Committed { last_seq, derived } = inner.local.commit(&applied, next_doc)?;
        if derived.is_err() {
            // The store has the commit, the published files do not: the next publish
            // writes a base (and readers keep the last published commit until then).
            inner.unpublish();
        }
        // The graph worker starts on the new vectors once the commit is published (it
        // would take half the cores from publishing; searches scan the tail meanwhile).
        let published =
            derived.and_then(|()| inner.publish(super::publish::Publish::Changes(&applied)));
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
        inner.local.store.truncate_log(last_seq)?;
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
pub(crate) struct ReadyWrites {
    ops: Vec<PendingOp>,
    /// The dimension of each kind's vectors, if any of its documents has one.
    dimensions: [Option<usize>; Kind::COUNT],
}

impl Inner {
    /// Turns buffered writes into changes: each upsert gets a new `DocId` and replaces
    /// the live version of its id, if any; a delete of a missing id is dropped. Returns
    /// the changes and the next free `DocId`. Runs under the commit lock, so the catalog
    /// it reads is the committed state.
    pub(crate) fn resolve(&self, ops: Vec<PendingOp>) -> Result<(Vec<Change>, u64)> {
        let meta = self.local.store.meta();
        let (mut next_doc, mut seq) = (meta.next_doc, meta.last_seq);
        // In order, what each op does (`None`: a delete of a missing id).
        let mut plan: Vec<Option<Step>> = Vec::with_capacity(ops.len());
        {
            let catalog = self.local.snapshot();
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
            vectors.push(
                self.local
                    .store
                    .cached_embedding(model_id, text)?
                    .map(|cached| {
                        if cached.is_empty() {
                            vec![0.0; embedder.dimensions()]
                        } else {
                            cached
                        }
                    }),
            );
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
                self.local.store.cache_embeddings(
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
