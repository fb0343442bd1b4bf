//! The local index as a [`Retriever`]: BM25 from tantivy, vectors from the HNSW graph
//! (or an exact scan), both filtered by the catalog before their top-k cut, the entity
//! graph when the query names an entity, and every candidate filled under one snapshot.

use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use super::LocalIndex;
use super::catalog::Catalog;
use super::text::TextMatch;
use crate::model::doc::Document;
use crate::model::id::DocId;
use crate::model::leg::PerLeg;
use crate::model::time::micros;
use crate::parallel::TakeOnce;
use crate::query::VectorMatch;
use crate::retrieve::{RetrievalQuery, Retrieved, RetrievedDoc, Retriever, applied_by};
use crate::{Kind, Result};

/// `retrieve` already fills every candidate (under one catalog snapshot, the text leg
/// scoring the vector leg's candidates in its own pass), so `candidates` is `retrieve`.
impl Retriever for LocalIndex {
    fn dimensions(&self, kind: Kind) -> Option<usize> {
        self.store.dimensions(kind)
    }

    fn retrieve(&self, query: &RetrievalQuery<'_>) -> Result<Retrieved> {
        self.retrieve_local(query)
    }

    fn fill(&self, query: &RetrievalQuery<'_>, candidates: &mut [RetrievedDoc]) -> Result<()> {
        self.fill_local(query, candidates)
    }

    fn candidates(&self, query: &RetrievalQuery<'_>) -> Result<Retrieved> {
        self.retrieve_local(query)
    }

    /// The tenant's rules that are not plain (every rule applied otherwise than by
    /// relevance is not, nor is one with a source), and the rules the request names by
    /// id, each checked with [`applied_by`].
    fn applied_rules(&self, query: &RetrievalQuery<'_>) -> Result<Vec<Arc<Document>>> {
        let request = query.request;
        if request.kind != Kind::Rule {
            return Ok(Vec::new());
        }
        let catalog = self.snapshot();
        let filter = query.filter();
        let Some(superset) = catalog.superset(&filter) else {
            return Ok(Vec::new());
        };
        let mut docs =
            superset.docs_where(|doc| catalog.get(doc).is_some_and(|entry| !entry.plain));
        // Rules named by id (`with_rule`, `@id`), plain ones included.
        let mentioned = crate::retrieve::mentions(&request.text);
        for name in request.named.iter().map(String::as_str).chain(mentioned) {
            docs.extend(catalog.lookup(Kind::Rule, &request.tenant_id, name));
        }
        docs.sort_unstable();
        docs.dedup();
        let mut applied = Vec::new();
        for doc in docs {
            let Some(entry) = catalog.get(doc) else {
                continue;
            };
            let document = entry.doc()?;
            if let Some(rule) = document.as_rule()
                && applied_by(query, rule).is_some()
            {
                applied.push(Arc::clone(document));
            }
        }
        Ok(applied)
    }
}

/// How far apart in time two turns of a context may be written and still be
/// neighbours (turns of one conversation, not of two sessions).
const NEIGHBOUR_GAP: std::time::Duration = std::time::Duration::from_secs(3_600);

/// The fewest documents in a search's scope for which its two legs run on two threads.
const PARALLEL_LEGS_FROM: u64 = 2_000;

/// A filter whose indexed superset (one conversation's chunks) holds at most this many
/// documents, and at most [`AMONG_SHARE`] of its scope, is searched by scoring each of
/// them rather than walking the query terms' postings through the scope.
const AMONG_MAX: usize = 4_096;
const AMONG_SHARE: usize = 16;

/// Starts the thread that runs a search's second leg when `catalog` holds enough
/// documents for its searches to need it, so that it has found a CPU of its own by the
/// first search.
pub(crate) fn start_helper_for(catalog: &Catalog) {
    if catalog.len() as u64 >= PARALLEL_LEGS_FROM {
        crate::parallel::start();
    }
}

impl LocalIndex {
    /// Both legs, each filtered before its top-k cut, and every candidate's missing
    /// scores filled under the same catalog snapshot.
    fn retrieve_local(&self, query: &RetrievalQuery<'_>) -> Result<Retrieved> {
        let request = query.request;
        let catalog = self.snapshot();
        let scope = catalog.scope_stats(request.kind, &request.tenant_id);
        let filter = query.filter();
        let admit = catalog.admit(&filter);
        let accept = |doc: DocId| {
            catalog
                .get(doc)
                .filter(|entry| admit.admits(entry))
                .map(|entry| entry as &dyn crate::local::text::UserId)
        };

        // The two legs run side by side (each times itself); a small scope is not worth
        // the hand-off to another thread. After its timing, each leg measures its own
        // hits for the fill, beside the other leg: the text leg their cosines, the vector
        // leg the BM25 of those the text leg did not find, once the text leg has made its
        // plan (never waiting for it: the text leg may run after this one, on this
        // thread).
        //
        // The vector leg's documents are decoded by whichever thread is free: the text
        // leg's, once done with its own work, waits for them (at most `DECODE_PATIENCE`)
        // while the vector leg's scores them.
        let side_by_side = query.vector.is_some()
            && !request.text.trim().is_empty()
            && scope.docs >= PARALLEL_LEGS_FROM
            // Never side by side on a thread of a rayon pool (its caller is parallel
            // already).
            && rayon::current_thread_index().is_none();
        let text_plan_made: OnceLock<Arc<crate::local::text::TextPlan>> = OnceLock::new();
        let text_found: OnceLock<FxHashSet<DocId>> = OnceLock::new();
        let vector_docs = TakeOnce::default();
        // A long text walk offers parts of its work to the vector leg's thread, once
        // that leg is done with its own.
        let text_walk = crate::parallel::WalkShare::default();
        let vector_leg = || {
            let stage = Instant::now();
            let hits = match query.vector {
                Some(vector) => {
                    self.vectors
                        .search(
                            &catalog,
                            &admit,
                            vector,
                            query.limit,
                            self.settings.exact_scan_threshold,
                        )
                        .0
                }
                None => Vec::new(),
            };
            let micros = micros(stage);
            vector_docs.publish(hits.iter().map(|(doc, _)| *doc).collect());
            let scored = text_plan_made.get().map(|plan| -> Result<TextScored> {
                let found = text_found.get();
                let docs: Vec<DocId> = hits
                    .iter()
                    .map(|(doc, _)| *doc)
                    .filter(|doc| found.is_none_or(|found| !found.contains(doc)))
                    .collect();
                let matches = self.text.score_docs(plan, &docs)?;
                Ok(TextScored {
                    docs: docs.into_iter().collect(),
                    matches,
                })
            });
            vector_docs.take_each(|doc| decode_beside(&catalog, std::iter::once(*doc)));
            // A long text walk is then the search's longest part: when the text leg has
            // said it offers parts of it, this thread walks some until it is done.
            if text_walk.coming() {
                text_walk.help_while_running();
            }
            (hits, micros, scored)
        };
        let text_leg = || {
            let stage = Instant::now();
            let walking = text_walk.leg();
            let text_query =
                self.text
                    .analyze(&request.text, request.kind, &request.tenant_id, scope);
            let hits = self.text.plan(text_query).and_then(|plan| {
                let plan = Arc::new(plan);
                if !plan.is_empty() {
                    let _ = text_plan_made.set(Arc::clone(&plan));
                }
                let share = side_by_side.then_some(&text_walk);
                let among = catalog.superset(&filter).filter(|superset| {
                    superset.len() <= AMONG_MAX
                        && (superset.len() * AMONG_SHARE) as u64 <= scope.docs
                });
                let hits = match among {
                    Some(superset) => {
                        self.text
                            .search_among(&plan, &superset.docs(), query.limit, &accept)?
                    }
                    None => self.text.search(&plan, query.limit, &accept, share)?,
                };
                let _ = text_found.set(hits.iter().map(|(doc, _)| *doc).collect());
                Ok((hits, plan))
            });
            drop(walking);
            let micros = micros(stage);
            let mut cosines = FxHashMap::default();
            if let Ok((hits, _)) = &hits {
                decode_beside(&catalog, hits.iter().map(|(doc, _)| *doc));
                if let Some(vector) = query.vector {
                    cosines.reserve(hits.len());
                    for (doc, _) in hits {
                        if let Some(vectors) = catalog.vectors(*doc) {
                            cosines.insert(*doc, vectors.best(vector));
                        }
                    }
                }
            }
            if side_by_side && vector_docs.wait(DECODE_PATIENCE) {
                vector_docs.take_each(|doc| decode_beside(&catalog, std::iter::once(*doc)));
            }
            (hits, micros, cosines)
        };
        let ((vector_hits, vector_us, scored), (text_hits, text_us, cosines)) = if side_by_side {
            crate::parallel::join(vector_leg, text_leg)
        } else {
            // The text leg first: the vector leg then scores its hits with its plan.
            let text = text_leg();
            (vector_leg(), text)
        };
        let (text_hits, text_plan) = text_hits?;
        let measured = Measured {
            cosines,
            scored: scored.transpose()?,
        };

        // The graph leg, when the query names an entity the tenant's graph knows.
        let graph = &self.settings.graph;
        let graph_entities = if graph.enabled {
            catalog
                .graph
                .query_entities(request.kind, &request.tenant_id, &request.text)
        } else {
            Vec::new()
        };
        let graph_hits = if graph_entities.is_empty() {
            Vec::new()
        } else {
            catalog.graph.search(
                request.kind,
                &request.tenant_id,
                &graph_entities,
                graph,
                query.limit,
                &crate::local::graph::ScopeDocs {
                    docs: scope.docs as usize,
                    owner: &|id| catalog.lookup(request.kind, &request.tenant_id, id),
                    admit: &|doc| accept(doc).map(crate::local::text::UserId::user_id),
                },
            )
        };

        let mut found: FxHashMap<DocId, RetrievedDoc> = FxHashMap::with_capacity_and_hasher(
            text_hits.len() + vector_hits.len() + graph_hits.len(),
            Default::default(),
        );
        /// The candidate of `doc`, made on first sight (`None`: not live).
        fn candidate<'m>(
            found: &'m mut FxHashMap<DocId, RetrievedDoc>,
            catalog: &Catalog,
            doc: DocId,
        ) -> Result<Option<&'m mut RetrievedDoc>> {
            Ok(match found.entry(doc) {
                std::collections::hash_map::Entry::Occupied(slot) => Some(slot.into_mut()),
                std::collections::hash_map::Entry::Vacant(slot) => match catalog.get(doc) {
                    Some(entry) => Some(slot.insert(RetrievedDoc::new(Arc::clone(entry.doc()?)))),
                    None => None,
                },
            })
        }
        for (doc, matched) in &text_hits {
            if let Some(c) = candidate(&mut found, &catalog, *doc)? {
                c.bm25 = Some(f64::from(matched.bm25));
                c.coverage = matched.coverage;
                c.found_by.text = true;
            }
        }
        for (doc, cosine) in &vector_hits {
            if let Some(c) = candidate(&mut found, &catalog, *doc)? {
                c.cosine = Some(*cosine);
                c.found_by.vector = true;
            }
        }
        for hit in graph_hits {
            if let Some(c) = candidate(&mut found, &catalog, hit.doc)? {
                c.graph = Some(hit.score);
                c.graph_path = Some(hit.path);
                c.found_by.graph = true;
            }
        }
        if query.browse {
            for doc in catalog.matching(&filter) {
                candidate(&mut found, &catalog, doc)?;
            }
        }
        // Conversations: each candidate's neighbouring turns are candidates too, so that
        // ranking can lend a turn its neighbours' relevance (and bring back the answer
        // after the turn that matched).
        if request.kind == crate::Kind::Chunk && self.settings.neighbours {
            let seeds: Vec<DocId> = found.keys().copied().collect();
            let mut turns: Vec<(DocId, [Option<DocId>; 2])> = Vec::new();
            for doc in seeds {
                let around = catalog.neighbours(doc, NEIGHBOUR_GAP);
                turns.push((doc, around));
                for next in around.into_iter().flatten() {
                    if !found.contains_key(&next) && accept(next).is_some() {
                        candidate(&mut found, &catalog, next)?;
                        turns.push((next, catalog.neighbours(next, NEIGHBOUR_GAP)));
                    }
                }
            }
            for (doc, around) in turns {
                let ids = around.map(|n| n.and_then(|n| Some(catalog.get(n)?.id().to_string())));
                if let Some(c) = found.get_mut(&doc) {
                    c.neighbours = ids;
                }
            }
        }
        let mut ids: Vec<DocId> = found.keys().copied().collect();
        ids.sort_unstable();
        let mut candidates: Vec<RetrievedDoc> =
            ids.iter().filter_map(|doc| found.remove(doc)).collect();
        let docs: Vec<Option<DocId>> = ids.into_iter().map(Some).collect();
        // Candidates the text leg did not return (found by the vector or graph leg) get
        // their BM25 and coverage here, under the same catalog snapshot.
        let stage = Instant::now();
        self.fill_docs(
            &catalog,
            &text_plan,
            query.vector,
            &docs,
            &mut candidates,
            Some(&measured),
        )?;
        // Rules and tools: each candidate's cosine to its centroid, and the query's to the
        // mean of the tenant's documents of the kind (the relevance gate's background).
        let mut background = None;
        if let (Some(vector), crate::Kind::Rule | crate::Kind::Tool) = (query.vector, request.kind)
        {
            for (candidate, doc) in candidates.iter_mut().zip(&docs) {
                candidate.centroid = doc
                    .and_then(|doc| catalog.vectors(doc))
                    .and_then(|rows| rows.centroid_cosine(vector));
            }
            let sum = catalog.centroid_sum(request.kind, &request.tenant_id);
            background = crate::relevance::background_of(query.family, vector, &sum.sum, sum.count);
        }
        let fill_us = micros(stage);
        let legs = PerLeg {
            text: !text_plan.is_empty(),
            vector: query.vector.is_some(),
            graph: !graph_entities.is_empty(),
        };
        let mut retrieved = Retrieved::new(
            candidates,
            legs,
            PerLeg {
                text: text_hits.len(),
                vector: vector_hits.len(),
                graph: 0,
            },
        );
        retrieved.micros = PerLeg {
            text: text_us,
            vector: vector_us,
            graph: 0,
        };
        retrieved.fill_micros = fill_us;
        retrieved.graph_entities = graph_entities;
        retrieved.background = background;
        retrieved.query_information = Some(text_plan.information());
        Ok(retrieved)
    }

    fn fill_local(
        &self,
        query: &RetrievalQuery<'_>,
        candidates: &mut [RetrievedDoc],
    ) -> Result<()> {
        let request = query.request;
        let catalog = self.snapshot();
        let scope = catalog.scope_stats(request.kind, &request.tenant_id);
        let text_query = self
            .text
            .analyze(&request.text, request.kind, &request.tenant_id, scope);
        // Candidates of other kinds or tenants, or no longer in the index, keep what
        // they have.
        let docs: Vec<Option<DocId>> = candidates
            .iter()
            .map(|c| {
                let d = &c.document;
                if d.kind() == request.kind && d.tenant_id() == request.tenant_id {
                    catalog.lookup(d.kind(), d.tenant_id(), d.id())
                } else {
                    None
                }
            })
            .collect();
        self.fill_docs(
            &catalog,
            &self.text.plan(text_query)?,
            query.vector,
            &docs,
            candidates,
            None,
        )
    }

    /// Fills `candidates[i]` (the document `docs[i]`): BM25 where missing and coverage,
    /// and the best cosine with the vector it came from. With `own`, the candidates come
    /// from this index's legs: its text leg measured BM25 and coverage of what it found,
    /// its vector leg the cosine of what it found, and each leg what `own` holds of its
    /// hits for the other (the same values as the fill's own, measured beside).
    fn fill_docs(
        &self,
        catalog: &Catalog,
        text: &crate::local::text::TextPlan,
        vector: Option<&[f32]>,
        docs: &[Option<DocId>],
        candidates: &mut [RetrievedDoc],
        own: Option<&Measured>,
    ) -> Result<()> {
        let own_legs = own.is_some();
        let scored = own.and_then(|own| own.scored.as_ref());
        let mut at: FxHashMap<DocId, usize> =
            FxHashMap::with_capacity_and_hasher(docs.len(), Default::default());
        at.extend(
            docs.iter()
                .enumerate()
                .filter_map(|(i, doc)| Some(((*doc)?, i))),
        );
        if !text.is_empty() {
            let mut unmatched: Vec<DocId> = Vec::with_capacity(docs.len());
            let mut matched: Vec<(usize, TextMatch)> = Vec::new();
            for (i, (doc, c)) in docs.iter().zip(candidates.iter()).enumerate() {
                let Some(doc) = *doc else { continue };
                if own_legs && c.found_by.text {
                    continue;
                }
                match scored.filter(|scored| scored.docs.contains(&doc)) {
                    Some(scored) => {
                        if let Some(found) = scored.matches.get(&doc) {
                            matched.push((i, *found));
                        }
                    }
                    None => unmatched.push(doc),
                }
            }
            if !unmatched.is_empty() {
                for (doc, found) in self.text.score_docs(text, &unmatched)? {
                    if let Some(&i) = at.get(&doc) {
                        matched.push((i, found));
                    }
                }
            }
            for (i, found) in matched {
                let c = &mut candidates[i];
                c.bm25.get_or_insert(f64::from(found.bm25));
                c.coverage = found.coverage;
            }
        }
        if let Some(query) = vector {
            // Every candidate's best cosine and the vector that gave it, for explain. This
            // index's vector leg gave a document of one row the cosine `best` computes.
            for (&doc, &i) in &at {
                let c = &mut candidates[i];
                if !c.found_by.vector
                    && let Some(&(cosine, row)) = own.and_then(|own| own.cosines.get(&doc))
                {
                    c.cosine = Some(cosine);
                    c.vector_match = Some(VectorMatch::from_row(row));
                    continue;
                }
                if let Some(vectors) = catalog.vectors(doc) {
                    let (cosine, row) = match (c.cosine, vectors.rows) {
                        (Some(cosine), &[row]) if own_legs && c.found_by.vector => (cosine, row),
                        _ => vectors.best(query),
                    };
                    c.cosine = Some(cosine);
                    c.vector_match = Some(VectorMatch::from_row(row));
                }
            }
        }
        Ok(())
    }
}

/// What each leg measured of its own hits for the fill, on its own thread.
struct Measured {
    /// The best cosine and row of each text hit that has vectors (`VectorsRef::best`).
    cosines: FxHashMap<DocId, (f32, u16)>,
    /// The vector hits' BM25 and coverage, when the text plan was ready in time.
    scored: Option<TextScored>,
}

/// Documents scored against the text plan, and the matches among them (a document
/// that matches no term is scored, and absent from `matches`).
struct TextScored {
    docs: FxHashSet<DocId>,
    matches: FxHashMap<DocId, TextMatch>,
}

/// How long the text leg's thread, done with its own work, waits for the vector leg's
/// documents to decode (the vector leg publishes them as soon as it has them; the wait
/// only ends early when it failed).
const DECODE_PATIENCE: std::time::Duration = std::time::Duration::from_millis(2);

/// Decodes the documents of a leg's hits on the leg's thread, beside the other leg (a
/// mapped base decodes a document when it is first asked for), so that the candidates
/// made from them after the join find them decoded. A document that does not decode is
/// left for the candidate to report.
fn decode_beside(catalog: &Catalog, hits: impl Iterator<Item = DocId>) {
    for doc in hits {
        if let Some(entry) = catalog.get(doc) {
            let _ = entry.doc();
        }
    }
}
