//! The query pipeline: filters, both legs, fusion, weighting, order, selection.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{Engine, Inner};
use crate::analysis::{adapt, analyze};
use crate::catalog::{Catalog, DocFilter};
use crate::chunk::{ChunkSelector, importance_score};
use crate::doc::Document;
use crate::fusion::{Fused, FusionWeights, LegScores, Legs, fuse};
use crate::id::DocId;
use crate::query::{
    FoundBy, FusionSummary, Hit, LegContributions, ScoreBreakdown, SearchRequest, SearchResponse,
    SelectionSummary, Timings, VectorMatch,
};
use crate::relevance::{EmbedderFamily, GateDecision, GateSummary, LegsRan};
use crate::text::Coverage;
use crate::time::Timestamp;
use crate::vector::metric;
use crate::{Error, ErrorKind, Kind, Result};

/// One candidate while it is being scored.
#[derive(Debug, Clone)]
struct Candidate {
    doc: DocId,
    /// Raw BM25, `None` when the document does not match the query text.
    bm25: Option<f64>,
    cosine: Option<f32>,
    /// How much of the query text the document contains.
    coverage: Coverage,
    /// Which of the document's vectors gave `cosine`.
    vector_match: Option<VectorMatch>,
    found_by: FoundBy,
}

/// A scored candidate, before selection.
struct Scored<'a> {
    doc: &'a Document,
    entry_doc: std::sync::Arc<Document>,
    priority: i32,
    final_score: f64,
    breakdown: ScoreBreakdown,
}

impl Engine {
    /// Runs a search.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) for an invalid request
    /// (a step without its scenario, a context or metadata filter on rules, a scenario on
    /// chunks); [`ErrorKind::DimensionMismatch`](crate::ErrorKind::DimensionMismatch) for
    /// a query vector of another dimension than the index's;
    /// [`ErrorKind::NonFiniteScore`](crate::ErrorKind::NonFiniteScore) for a NaN in it;
    /// embedder and storage errors.
    pub fn search(&self, request: &SearchRequest) -> Result<SearchResponse> {
        self.inner.search(request)
    }
}

impl Inner {
    fn search(&self, request: &SearchRequest) -> Result<SearchResponse> {
        let started = Instant::now();
        validate(request)?;
        let mut timings = Timings::default();
        let now = request.now.unwrap_or_else(Timestamp::now);
        let retrieval = &self.config.pipeline.retrieval;
        let limit = retrieval
            .max_candidates
            .max(request.max_candidates.unwrap_or(0))
            .max(request.top_k.unwrap_or(0));
        let text_present = !request.text.trim().is_empty();

        // The query vector: the request's, or the embedder's.
        let stage = Instant::now();
        let (query_vector, vector_skipped) = self.query_vector(request, text_present)?;
        timings.embed_us = micros(stage);

        let catalog = self.read_catalog();
        let scope = catalog.scope_stats(request.kind, &request.tenant_id);
        let text_query = self
            .text
            .analyze(&request.text, request.kind, &request.tenant_id, scope);
        let filter = DocFilter {
            kind: request.kind,
            tenant: &request.tenant_id,
            agent: request.agent_id.as_deref(),
            scenario: request.scenario_id.as_deref(),
            step: request.step_id.as_deref(),
            context: request.context_id.as_deref(),
            tags: &request.tags,
            metadata: &request.filters,
            now,
        };
        let accept = |doc: DocId| {
            catalog
                .get(doc)
                .filter(|entry| filter.matches(&entry.doc))
                .map(|entry| entry.doc.id())
        };

        let stage = Instant::now();
        let vector_hits = match &query_vector {
            Some(query) => {
                self.vectors
                    .search(
                        &catalog,
                        &filter,
                        query,
                        limit,
                        retrieval.exact_scan_threshold,
                    )
                    .0
            }
            None => Vec::new(),
        };
        timings.vector_us = micros(stage);

        // The text leg also scores the vector leg's candidates when it can in one pass.
        let stage = Instant::now();
        let wanted: HashSet<DocId> = vector_hits.iter().map(|(doc, _)| *doc).collect();
        let text = self.text.search(&text_query, limit, &accept, &wanted)?;
        let text_hits = text.hits;
        timings.text_us = micros(stage);
        let leg_candidates = [text_hits.len(), vector_hits.len()];

        // Browsing chunks without any query: every admitted chunk is a candidate.
        let browse = request.kind == Kind::Chunk
            && !text_present
            && query_vector.is_none()
            && request.embedding.is_none();

        let stage = Instant::now();
        let mut candidates: HashMap<DocId, Candidate> = HashMap::new();
        for (doc, bm25) in &text_hits {
            candidates.insert(
                *doc,
                Candidate {
                    doc: *doc,
                    bm25: Some(f64::from(*bm25)),
                    cosine: None,
                    coverage: Coverage::default(),
                    vector_match: None,
                    found_by: FoundBy {
                        text: true,
                        vector: false,
                    },
                },
            );
        }
        for (doc, cosine) in &vector_hits {
            let candidate = candidates.entry(*doc).or_insert(Candidate {
                doc: *doc,
                bm25: None,
                cosine: None,
                coverage: Coverage::default(),
                vector_match: None,
                found_by: FoundBy::default(),
            });
            candidate.cosine = Some(*cosine);
            candidate.found_by.vector = true;
        }
        if browse {
            for doc in catalog.matching(&filter) {
                candidates.entry(doc).or_insert(Candidate {
                    doc,
                    bm25: None,
                    cosine: None,
                    coverage: Coverage::default(),
                    vector_match: None,
                    found_by: FoundBy::default(),
                });
            }
        }
        // Fill each leg's score for candidates the other leg found: BM25 of vector-only
        // candidates from the text index, cosine of text-only ones from stored vectors.
        for (doc, bm25) in &text.wanted {
            if let Some(candidate) = candidates.get_mut(doc) {
                candidate.bm25 = Some(f64::from(*bm25));
            }
        }
        let unscored: Vec<DocId> = candidates
            .values()
            .filter(|c| c.bm25.is_none())
            .map(|c| c.doc)
            .collect();
        if !text.complete && !text_query.is_empty() && !unscored.is_empty() {
            for (doc, bm25) in self.text.score_docs(&text_query, &unscored)? {
                if let Some(candidate) = candidates.get_mut(&doc) {
                    candidate.bm25 = Some(f64::from(bm25));
                }
            }
        }
        if !text_query.is_empty() {
            let docs: Vec<DocId> = candidates.keys().copied().collect();
            for (doc, coverage) in self.text.coverage(&text_query, &docs)? {
                if let Some(candidate) = candidates.get_mut(&doc) {
                    candidate.coverage = coverage;
                }
            }
        }
        if let Some(query) = &query_vector {
            // Every candidate's best cosine and the vector that gave it, for explain.
            for candidate in candidates.values_mut() {
                if let Some(vectors) = catalog.get(candidate.doc).and_then(|e| e.vectors.as_ref()) {
                    let (cosine, row) = vectors.best(query);
                    candidate.cosine = Some(cosine);
                    candidate.vector_match = Some(VectorMatch::from_row(row));
                }
            }
        }
        // Candidates in user-id order, so that nothing downstream depends on hashing.
        let mut candidates: Vec<Candidate> = candidates.into_values().collect();
        candidates.sort_by(|a, b| {
            let id = |c: &Candidate| catalog.get(c.doc).map_or("", |e| e.doc.id());
            id(a).cmp(id(b)).then(a.doc.cmp(&b.doc))
        });
        let legs = match (query_vector.is_some(), !text_query.is_empty()) {
            (true, true) => Some(LegsRan::Both),
            (true, false) => Some(LegsRan::VectorOnly),
            (false, true) => Some(LegsRan::TextOnly),
            (false, false) => None,
        };
        let family = EmbedderFamily::of(self.embedder().as_ref().map(|e| e.model_id()));
        let (scored, fusion) = self.score(request, &catalog, candidates, legs, family, now)?;

        // The relevance gate: what fails it is dropped before anything else counts.
        let min_relevance = request
            .min_relevance
            .unwrap_or(self.config.relevance.kind(request.kind).min_relevance);
        let mut gate = GateSummary {
            min_relevance,
            family,
            passed: 0,
            rejected: 0,
            best_rejected: None,
            codes: text_query.codes(),
        };
        let code_boost = self.config.relevance.code_boost;
        let mut passed: Vec<Scored<'_>> = Vec::with_capacity(scored.len());
        for mut candidate in scored {
            if candidate.breakdown.codes_matched > 0 {
                let term = code_boost * f64::from(candidate.breakdown.codes_matched);
                candidate.breakdown.code_term = Some(term);
                candidate.final_score += term;
            }
            let b = &candidate.breakdown;
            match GateDecision::of(b.relevance, b.codes_matched, min_relevance) {
                Some(decision) => {
                    candidate.breakdown.gate = decision;
                    passed.push(candidate);
                }
                None => {
                    gate.rejected += 1;
                    let relevance = b.relevance.unwrap_or(0.0);
                    if gate
                        .best_rejected
                        .as_ref()
                        .is_none_or(|(_, best)| relevance > *best)
                    {
                        gate.best_rejected = Some((candidate.doc.id().to_string(), relevance));
                    }
                }
            }
        }
        gate.passed = passed.len();
        let mut scored = passed;
        timings.fuse_us = micros(stage);

        let stage = Instant::now();
        scored.sort_by(|a, b| {
            b.final_score
                .total_cmp(&a.final_score)
                .then_with(|| b.priority.cmp(&a.priority))
                .then_with(|| a.doc.id().cmp(b.doc.id()))
        });
        let input_count = scored.len();
        let selection = match request.top_k {
            Some(k) => {
                scored.truncate(k);
                SelectionSummary {
                    strategy: "top_k".to_string(),
                    input_count,
                    output_count: scored.len(),
                    cutoff_score: scored.last().map_or(0.0, |s| s.final_score),
                    metadata: serde_json::Map::new(),
                }
            }
            None => {
                let config = request.selection.as_ref().unwrap_or(match request.kind {
                    Kind::Rule => &retrieval.rule_selection,
                    Kind::Chunk => &retrieval.memory_selection,
                });
                let strategy = config.build()?;
                let max_k = request.max_k.unwrap_or(retrieval.max_k);
                let min_k = request.min_k.unwrap_or(retrieval.min_k);
                let scores: Vec<f64> = scored.iter().map(|s| s.final_score).collect();
                let result = strategy.select_scores(&scores, max_k, min_k)?;
                let mut slots: Vec<Option<Scored<'_>>> = scored.into_iter().map(Some).collect();
                scored = result
                    .selected
                    .iter()
                    .filter_map(|&idx| slots.get_mut(idx).and_then(Option::take))
                    .collect();
                SelectionSummary {
                    strategy: result.method.to_string(),
                    input_count,
                    output_count: scored.len(),
                    cutoff_score: result.cutoff_score,
                    metadata: result.metadata,
                }
            }
        };
        let query_id = self.next_query_id();
        tracing::info!(
            target: "ruche::select",
            query_id = %query_id,
            kind = %request.kind,
            strategy = %selection.strategy,
            input_count = selection.input_count,
            output_count = selection.output_count,
            cutoff_score = selection.cutoff_score,
            metadata = %serde_json::Value::Object(selection.metadata.clone()),
            gate_passed = gate.passed,
            gate_rejected = gate.rejected,
            min_relevance = gate.min_relevance,
            "selection"
        );
        let hits: Vec<Hit> = scored
            .into_iter()
            .map(|s| Hit {
                id: s.doc.id().to_string(),
                score: s.final_score,
                breakdown: s.breakdown,
                document: s.entry_doc,
            })
            .collect();
        timings.select_us = micros(stage);
        drop(catalog);
        let mut leg_contributions = LegContributions::default();
        for hit in &hits {
            match (hit.breakdown.found_by.text, hit.breakdown.found_by.vector) {
                (true, true) => leg_contributions.both += 1,
                (true, false) => leg_contributions.text_only += 1,
                (false, true) => leg_contributions.vector_only += 1,
                (false, false) => {}
            }
        }
        if let Some(top) = hits.first() {
            self.log_query(&query_id, &request.tenant_id, top.breakdown.found_by)?;
        }
        timings.total_us = micros(started);
        Ok(SearchResponse {
            query_id,
            hits,
            selection,
            timings,
            leg_candidates,
            leg_contributions,
            fusion,
            vector_leg_skipped: vector_skipped,
            gate,
            analysis: analyze(&request.text),
        })
    }

    /// The normalised query vector, or why there is none.
    fn query_vector(
        &self,
        request: &SearchRequest,
        text_present: bool,
    ) -> Result<(Option<Vec<f32>>, Option<String>)> {
        let dimensions = self.store.dimensions();
        let embedder = self.embedder();
        let mut vector = match (&request.embedding, &embedder) {
            (Some(given), _) => {
                if given.iter().any(|x| !x.is_finite()) {
                    return Err(Error::new(ErrorKind::NonFiniteScore {
                        context: "the query embedding".to_string(),
                    }));
                }
                if let Some(expected) = dimensions
                    && given.len() != expected
                {
                    return Err(Error::new(ErrorKind::DimensionMismatch {
                        expected,
                        got: given.len(),
                    }));
                }
                given.clone()
            }
            (None, Some(embedder)) if text_present => {
                self.counters.embedded_texts.fetch_add(1, Ordering::Relaxed);
                embedder
                    .embed_batch(&[request.text.as_str()])?
                    .pop()
                    .unwrap_or_default()
            }
            (None, Some(_)) => return Ok((None, Some("the query has no text".to_string()))),
            (None, None) => {
                let reason = if dimensions.is_some() {
                    "the query has no vector and the engine has no embedder"
                } else {
                    "the index has no vectors"
                };
                return Ok((None, Some(reason.to_string())));
            }
        };
        if dimensions.is_none() {
            return Ok((None, Some("the index has no vectors".to_string())));
        }
        if !metric::normalize(&mut vector) {
            return Ok((None, Some("the query vector is zero".to_string())));
        }
        Ok((Some(vector), None))
    }

    /// Fuses the legs, computes each candidate's relevance, and weights the result by kind.
    #[allow(clippy::too_many_arguments)]
    fn score<'a>(
        &self,
        request: &SearchRequest,
        catalog: &'a Catalog,
        candidates: Vec<Candidate>,
        legs: Option<LegsRan>,
        family: EmbedderFamily,
        now: Timestamp,
    ) -> Result<(Vec<Scored<'a>>, FusionSummary)> {
        let vector_leg = matches!(legs, Some(LegsRan::Both | LegsRan::VectorOnly));
        let text_leg = matches!(legs, Some(LegsRan::Both | LegsRan::TextOnly));
        let spec = request.fusion.unwrap_or(match request.kind {
            Kind::Rule => self.config.fusion.rules,
            Kind::Chunk => self.config.fusion.chunks,
        });
        let method = spec.method();
        let ran = Legs {
            text: text_leg,
            vector: vector_leg,
        };
        let adaptive = request.adaptive.unwrap_or(self.config.fusion.adaptive) && text_leg;
        let mut weights = spec.weights();
        if adaptive {
            weights = adapt(&analyze(&request.text), weights);
        }
        let factors = self
            .config
            .fusion
            .feedback
            .then(|| self.feedback_factors(&request.tenant_id));
        let any_leg = vector_leg || text_leg;
        let used = if any_leg {
            weights.in_use(ran, factors.unwrap_or_default())?
        } else {
            FusionWeights {
                vector_weight: 0.0,
                text_weight: 0.0,
            }
        };
        let leg_scores: Vec<LegScores> = candidates
            .iter()
            .map(|c| LegScores {
                text: c.bm25,
                vector: c.cosine.map(metric::score_of_cosine),
            })
            .collect();
        let fused = if any_leg {
            fuse(&leg_scores, &method, used)?
        } else {
            vec![Fused::default(); leg_scores.len()]
        };
        let summary = FusionSummary {
            method: method.to_string(),
            vector_weight: used.vector_weight,
            text_weight: used.text_weight,
            adaptive,
            feedback_factors: factors.map(|f| [f.vector, f.text]),
        };

        let selector = ChunkSelector::with_weights(
            request.chunk_weights.unwrap_or(self.config.scoring.chunks),
        )?;
        let scored = candidates
            .into_iter()
            .zip(fused)
            .filter_map(|(candidate, fused)| {
                let entry = catalog.get(candidate.doc)?;
                let hybrid = fused.hybrid;
                let mut breakdown = ScoreBreakdown {
                    vector: candidate.cosine.map(metric::score_of_cosine),
                    bm25: candidate.bm25.unwrap_or(0.0),
                    bm25_normalized: fused.text_normalized,
                    text_coverage: f64::from(candidate.coverage.words),
                    codes_matched: candidate.coverage.codes,
                    vector_match: candidate.vector_match,
                    vector_normalized: fused.vector_normalized,
                    hybrid,
                    priority_term: None,
                    scope_term: None,
                    relevance: legs.map(|legs| {
                        let patterns = match entry.doc.as_ref() {
                            Document::Rule(rule) => !rule.patterns.is_empty(),
                            Document::Chunk(_) => false,
                        };
                        self.config
                            .relevance
                            .calibration(request.kind, family, legs, patterns)
                            .relevance(
                                candidate.cosine.map_or(0.0, metric::score_of_cosine),
                                f64::from(candidate.coverage.words),
                            )
                    }),
                    gate: GateDecision::Open,
                    code_term: None,
                    importance: None,
                    recency: None,
                    found_by: candidate.found_by,
                };
                let (final_score, priority) = match entry.doc.as_ref() {
                    Document::Rule(rule) => {
                        let score =
                            self.config
                                .scoring
                                .rules
                                .score(hybrid, rule.priority, &rule.scope);
                        breakdown.priority_term = Some(score.priority_term);
                        breakdown.scope_term = Some(score.scope_term);
                        (score.final_score, rule.priority)
                    }
                    Document::Chunk(chunk) => {
                        // Seed 001's relevance term is the hybrid score (0.5 when
                        // browsing without a query).
                        let relevance = if any_leg { hybrid } else { 0.5 };
                        let importance = importance_score(chunk.importance);
                        let recency = selector.recency_score(chunk.created_at, now);
                        breakdown.importance = Some(importance);
                        breakdown.recency = Some(recency);
                        (selector.combine(relevance, importance, recency), 0)
                    }
                };
                Some(Scored {
                    doc: entry.doc.as_ref(),
                    entry_doc: std::sync::Arc::clone(&entry.doc),
                    priority,
                    final_score,
                    breakdown,
                })
            })
            .collect();
        Ok((scored, summary))
    }

    /// A unique, time-ordered query id: `q` + millis + process + counter, fixed-width hex.
    fn next_query_id(&self) -> String {
        let n = self.query_counter.fetch_add(1, Ordering::Relaxed);
        let millis = Timestamp::now().unix_millis().max(0);
        format!(
            "q{millis:012x}-{:08x}-{:06x}",
            std::process::id(),
            n & 0xff_ffff
        )
    }
}

fn validate(request: &SearchRequest) -> Result<()> {
    if request.tenant_id.is_empty() {
        return Err(Error::invalid_input("`tenant_id` must not be empty"));
    }
    if request.step_id.is_some() && request.scenario_id.is_none() {
        return Err(Error::invalid_input("a `step_id` needs its `scenario_id`"));
    }
    match request.kind {
        Kind::Rule => {
            if request.context_id.is_some() {
                return Err(Error::invalid_input(
                    "`context_id` filters chunks, not rules",
                ));
            }
            if !request.filters.is_empty() {
                return Err(Error::invalid_input(
                    "metadata filters apply to chunks; rules have no metadata (use tags)",
                ));
            }
        }
        Kind::Chunk => {
            if request.scenario_id.is_some() {
                return Err(Error::invalid_input(
                    "`scenario_id` and `step_id` select rules, not chunks",
                ));
            }
        }
    }
    if let Some(min_relevance) = request.min_relevance
        && !(0.0..=1.0).contains(&min_relevance)
    {
        return Err(Error::invalid_input(format!(
            "`min_relevance` must be in 0..=1, got {min_relevance}"
        )));
    }
    for (name, value, least) in [
        ("top_k", request.top_k, 1),
        ("max_k", request.max_k, 1),
        ("min_k", request.min_k, 0),
        ("max_candidates", request.max_candidates, 1),
    ] {
        if let Some(value) = value
            && !(least..=MAX_COUNT).contains(&value)
        {
            return Err(Error::invalid_input(format!(
                "`{name}` must be between {least} and {MAX_COUNT}, got {value}"
            )));
        }
    }
    if let (Some(min_k), Some(max_k)) = (request.min_k, request.max_k)
        && min_k > max_k
    {
        return Err(Error::invalid_input(format!(
            "`min_k` ({min_k}) must not exceed `max_k` ({max_k})"
        )));
    }
    Ok(())
}

/// The largest `top_k`, `max_k`, `min_k` or `max_candidates` a search accepts (and the
/// configuration): enough for any agent, small enough to allocate.
pub(crate) const MAX_COUNT: usize = 1_000_000;

fn micros(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}
