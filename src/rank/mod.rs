//! What ruchedb decides, as one pure stage: candidates in, ranked and selected hits out.
//!
//! [`search_with`] runs the whole pipeline over any [`Retriever`]:
//! the query vector is prepared once (the request's own, or its text embedded), the
//! retriever returns the candidates of both legs, and ranking does, without I/O:
//!
//! 1. **fusion** of the two legs' raw scores into a hybrid score (the method and leg
//!    weights decided once per search: configuration, query-adaptive weights, feedback,
//!    legs that ran);
//! 2. the **relevance gate**: each candidate's calibrated relevance; what fails it is
//!    dropped before anything else counts, unless it holds a code of the query verbatim;
//! 3. **weighting** by kind: priority and scope (rules), importance and recency (chunks),
//!    plus the code boost;
//! 4. the **order**: final score, then priority, then user id (deterministic);
//! 5. **k-selection**: exactly `top_k`, or the kind's strategy between `min_k` and `max_k`;
//! 6. **explain**: every hit's [`ScoreBreakdown`], the [`SelectionSummary`], the
//!    [`GateSummary`] and the [`FusionSummary`].
//!
//! The result depends only on the candidates and the plan, never on their order or on
//! hashing.

mod applied;
mod second_hop;
mod speaker;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::analysis::{QueryAnalysis, adapt, analyze};
use crate::analysis::{query_codes, text_to_embed};
use crate::chunk::{ChunkSelector, ChunkWeights, importance_score};
use crate::config::Config;
use crate::embed::Embedder;
use crate::fusion::RuleWeights;
use crate::fusion::{Fused, FusionWeights, Method, fuse_with};
use crate::model::MAX_COUNT;
use crate::model::doc::Document;
use crate::model::leg::PerLeg;
use crate::model::metric;
use crate::model::time::Timestamp;
use crate::model::time::micros;
use crate::query::{
    FusionSummary, Hit, LegContributions, ScoreBreakdown, SearchRequest, SearchResponse,
    SelectionSummary, Timings,
};
use crate::relevance::{
    BackgroundCalibration, EmbedderFamily, Evidence, GateDecision, GateSummary, LegsRan,
    RelevanceConfig, anchor_of,
};
use crate::retrieve::{RetrievalQuery, Retrieved, RetrievedDoc, Retriever};
use crate::select::SelectionConfig;
use crate::{Error, ErrorKind, Kind, Result};

/// How many results a search keeps.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub(crate) enum Selection {
    /// Exactly the best `k` (fewer when fewer pass the gate).
    TopK(usize),
    /// A dynamic k-selection strategy, keeping between `min_k` and `max_k` hits.
    Strategy {
        /// The strategy.
        config: SelectionConfig,
        /// The fewest hits kept (when that many pass the gate).
        min_k: usize,
        /// The most hits kept.
        max_k: usize,
    },
}

/// The graph score (over the best of the search) from which a candidate the graph leg
/// reached passes the relevance gate on that alone: a quarter of the best path, i.e. with
/// the default decay 0.5 a two-hop path through a bridge entity that at most four
/// documents mention.
const LINKED_MIN: f64 = 0.25;

/// Everything [`rank`] needs besides the candidates: decided once per search from the
/// configuration and the request by [`RankPlan::new`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub(crate) struct RankPlan {
    /// The kind searched.
    pub kind: Kind,
    /// Which legs ran; `None`: neither (browsing chunks).
    pub legs: Option<LegsRan>,
    /// The fusion method.
    pub method: Method,
    /// The leg weights in use (they sum to 1 when a leg ran).
    pub weights: FusionWeights,
    /// How the legs are fused, for explain.
    pub fusion: FusionSummary,
    /// The embedder family the relevance calibrations are chosen by.
    pub family: EmbedderFamily,
    /// The relevance gate's calibrations and code boost.
    pub relevance: RelevanceConfig,
    /// Candidates below this relevance are dropped.
    pub min_relevance: f64,
    /// The codes (identifiers) of the query text, lowercased.
    pub codes: Vec<String>,
    /// Priority and scope weights (rules).
    pub rule_weights: RuleWeights,
    /// Relevance, importance and recency weights (chunks).
    pub chunk_weights: ChunkWeights,
    /// The time recency is measured at.
    pub now: Timestamp,
    /// How many hits to keep.
    pub selection: Selection,
    /// The graph leg's weight against the two other legs' 1.0 (used when it found
    /// anything).
    pub graph_weight: f64,
    /// How many documents reached through a kept hit come back with it
    /// ([`crate::config::GraphConfig::second_hops`]).
    pub second_hops: usize,
    /// How much a conversation turn draws on its neighbouring turns
    /// ([`crate::config::ScoringConfig::neighbour_weight`]).
    pub neighbour_weight: f64,
    /// What a turn whose speaker the query names adds to its relevance
    /// ([`crate::config::ScoringConfig::speaker_weight`]).
    pub speaker_weight: f64,
    /// The query, as whom it names is read.
    pub question: speaker::Question,
    /// The token budget of the hits ([`SearchRequest::with_max_tokens`]).
    pub max_tokens: Option<usize>,
    /// The query's background for the searched kind ([`Retrieved::background`]): with
    /// it, rules and tools with examples are gated by their centroid, coverage and
    /// background ([`crate::relevance`]).
    pub background: Option<f64>,
    /// The memory anchor applies (chunks, the vector leg ran, the gate on, the built-in
    /// calibrations, an embedder family that has an anchor).
    pub anchor: bool,
    /// The rarity of the query's words ([`Retrieved::query_information`]).
    pub query_information: Option<f32>,
}

impl RankPlan {
    /// The plan of `request` under `config`: this is the one place the leg weights are
    /// decided (the kind's fusion spec or the request's, query-adaptive weights when on,
    /// the feedback `factors` when `[fusion] feedback` is on, a leg that did not run
    /// giving its weight to the other).
    ///
    /// `legs` says which legs ran, `family` which embedder made the vectors (it picks
    /// the relevance calibration).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] for invalid weights.
    pub fn new(
        config: &Config,
        request: &SearchRequest,
        legs: Option<LegsRan>,
        family: EmbedderFamily,
        factors: Option<PerLeg<f64>>,
        analysis: &QueryAnalysis,
    ) -> Result<RankPlan> {
        let kind = request.kind;
        let text_leg = matches!(legs, Some(LegsRan::Both | LegsRan::TextOnly));
        let vector_leg = matches!(legs, Some(LegsRan::Both | LegsRan::VectorOnly));
        let spec = request.fusion.unwrap_or_else(|| config.fusion.spec(kind));
        let method = spec.method();
        let adaptive = request.adaptive.unwrap_or(config.fusion.adaptive) && text_leg;
        let mut weights = spec.weights();
        if adaptive {
            weights = adapt(analysis, weights);
        }
        let factors = config
            .fusion
            .feedback
            .then(|| factors.unwrap_or(PerLeg::ONES));
        let weights = if legs.is_some() {
            let ran = PerLeg {
                text: text_leg,
                vector: vector_leg,
                graph: false,
            };
            weights.in_use(ran, factors.unwrap_or(PerLeg::ONES))?
        } else {
            FusionWeights {
                vector_weight: 0.0,
                text_weight: 0.0,
            }
        };
        let fusion = FusionSummary {
            method: method.to_string(),
            vector_weight: weights.vector_weight,
            text_weight: weights.text_weight,
            adaptive,
            feedback_factors: factors,
            graph_weight: 0.0,
            graph_entities: Vec::new(),
        };
        // Seed 004: entity mentions lift the graph leg by 1.3 when weights adapt; the
        // feedback factor applies to it as to the others.
        let graph_weight = config.graph.weight
            * if adaptive { 1.3 } else { 1.0 }
            * factors.map_or(1.0, |f| f.graph);
        let retrieval = &config.pipeline.retrieval;
        let selection = match request.top_k {
            Some(k) => Selection::TopK(k),
            None => Selection::Strategy {
                config: request
                    .selection
                    .clone()
                    .unwrap_or_else(|| retrieval.selection(kind).clone()),
                min_k: request.min_k.unwrap_or(retrieval.min_k),
                max_k: request.max_k.unwrap_or(retrieval.max_k),
            },
        };
        Ok(RankPlan {
            kind,
            legs,
            method,
            weights,
            fusion,
            family,
            relevance: config.relevance,
            min_relevance: request
                .min_relevance
                .unwrap_or(config.relevance.kind(kind).min_relevance),
            codes: query_codes(&request.text),
            rule_weights: config.scoring.rules,
            chunk_weights: request.chunk_weights.unwrap_or(config.scoring.chunks),
            now: request.now.unwrap_or_else(Timestamp::now),
            selection,
            graph_weight,
            second_hops: config.graph.second_hops,
            neighbour_weight: config.scoring.neighbour_weight,
            speaker_weight: config.scoring.speaker_weight,
            question: speaker::Question::new(&request.text),
            max_tokens: request.max_tokens,
            background: None,
            anchor: {
                let gate = config.relevance.kind(kind);
                kind == Kind::Chunk
                    && gate.anchor
                    && gate.calibration.is_none()
                    && request.min_relevance.unwrap_or(gate.min_relevance) > 0.0
                    && vector_leg
                    && anchor_of(family, 0.0, 0.0).is_some()
            },
            query_information: None,
        })
    }
}

/// What [`rank`] returns.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub(crate) struct Ranked {
    /// The hits kept, best first.
    pub hits: Vec<Hit>,
    /// How many hits were kept, and why.
    pub selection: SelectionSummary,
    /// What the relevance gate did.
    pub gate: GateSummary,
    /// How the legs were fused.
    pub fusion: FusionSummary,
    /// Which legs found the hits kept.
    pub leg_contributions: LegContributions,
    /// Time spent fusing, gating and weighting, in microseconds.
    pub score_micros: u64,
    /// Time spent sorting and selecting, in microseconds.
    pub select_micros: u64,
}

/// A candidate with its final score, before selection.
struct Weighted {
    document: Arc<Document>,
    priority: i32,
    final_score: f64,
    breakdown: ScoreBreakdown,
}

/// Ranks `candidates` by `plan`: fusion, gate, weighting, order, selection (see the
/// module docs). Pure: no I/O, and the same hits for the same candidates in any order.
///
/// # Errors
///
/// [`ErrorKind::InvalidInput`] for an invalid strategy or
/// weights; [`ErrorKind::NonFiniteScore`] for a NaN
/// leg score.
pub(crate) fn rank(candidates: Vec<RetrievedDoc>, plan: &RankPlan) -> Result<Ranked> {
    let started = Instant::now();
    // Candidates in user-id order, so that nothing downstream depends on arrival order
    // (an order of indices, so that each candidate moves once).
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| candidates[a].id().cmp(candidates[b].id()));
    let distinct_ids = order
        .windows(2)
        .all(|pair| candidates[pair[0]].id() != candidates[pair[1]].id());
    let candidates = permuted(candidates, &order);
    let (scored, graph_share) = score(candidates, plan)?;

    // The relevance gate: what fails it is dropped before anything else counts.
    let mut gate = GateSummary {
        min_relevance: plan.min_relevance,
        family: plan.family,
        passed: 0,
        rejected: 0,
        best_rejected: None,
        best_rejected_evidence: None,
        background: None,
        codes: plan.codes.clone(),
        anchor: None,
        empty_message: false,
        unknown_codes: false,
    };
    // A memory search is answered only when some candidate anchors it.
    const FULL_COVERAGE: f64 = 0.999;
    let answered = match (plan.anchor, plan.query_information) {
        (true, Some(information)) => {
            let best = scored
                .iter()
                .map(|c| {
                    let b = &c.breakdown;
                    // A code, or every word of the query, answers it outright.
                    if b.codes_matched > 0 || b.text_coverage >= FULL_COVERAGE {
                        return 1.0;
                    }
                    let information = b.text_coverage * f64::from(information);
                    anchor_of(plan.family, b.vector.unwrap_or(0.0), information).unwrap_or(1.0)
                })
                .fold(0.0f64, f64::max);
            gate.anchor = Some(best);
            best >= 0.5 || scored.is_empty()
        }
        _ => true,
    };
    // A memory search that names identifiers no candidate holds is about something
    // memory does not know: a chunk that names identifiers of its own is about another
    // thing (another order's, another customer's note), and one that shares none of the
    // query's other words is about something else, however close its vector; a general
    // note that shares them still answers ("the return window for NW-48283").
    gate.unknown_codes = plan.kind == Kind::Chunk
        && !plan.codes.is_empty()
        && plan.min_relevance > 0.0
        && scored
            .iter()
            // The graph leg found documents from the query's entities: memory knows them
            // (an entity list, a relation).
            .all(|c| c.breakdown.codes_matched == 0 && c.breakdown.graph.is_none());
    let query_shapes: Vec<String> = if gate.unknown_codes {
        plan.codes.iter().map(|code| code_shape(code)).collect()
    } else {
        Vec::new()
    };
    let code_boost = plan.relevance.code_boost;
    let mut passed: Vec<Weighted> = Vec::with_capacity(scored.len());
    for mut candidate in scored {
        if candidate.breakdown.codes_matched > 0 {
            let term = code_boost * f64::from(candidate.breakdown.codes_matched);
            candidate.breakdown.code_term = Some(term);
            candidate.final_score += term;
        }
        let b = &candidate.breakdown;
        let linked = (b.graph_normalized >= LINKED_MIN).then_some(GateDecision::Linked);
        let neighbour = b.neighbour_term.map(|_| GateDecision::Neighbour);
        let decision = GateDecision::of(b.relevance, b.codes_matched, plan.min_relevance)
            .or(linked)
            .or(neighbour)
            .filter(|_| answered || b.codes_matched > 0)
            .filter(|_| {
                !gate.unknown_codes
                    || (b.text_coverage > 0.0
                        && !names_a_sibling(&candidate.document.text(), &query_shapes))
            });
        match decision {
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
                    gate.best_rejected = Some((candidate.document.id().to_string(), relevance));
                    gate.best_rejected_evidence = Some(Evidence {
                        vector: b.vector,
                        centroid: b.centroid,
                        coverage: b.text_coverage,
                    });
                }
            }
        }
    }
    gate.passed = passed.len();
    // The background counted when some candidate was judged against its catalog.
    if passed.iter().any(|s| s.breakdown.centroid.is_some())
        || gate
            .best_rejected_evidence
            .is_some_and(|e| e.centroid.is_some())
    {
        gate.background = plan.background;
    }
    let scored = passed;
    let score_micros = micros(started);

    let started = Instant::now();
    let input_count = scored.len();
    // Best first: score, then priority, then user id. Indices are ordered, not the
    // candidates (each moves once). With distinct ids the order is total, so the top
    // `k` need not sort the rest.
    let by_rank = |a: &Weighted, b: &Weighted| {
        b.final_score
            .total_cmp(&a.final_score)
            .then_with(|| b.priority.cmp(&a.priority))
            .then_with(|| a.document.id().cmp(b.document.id()))
    };
    let mut order: Vec<usize> = (0..scored.len()).collect();
    match plan.selection {
        Selection::TopK(k) if distinct_ids && k < order.len() => {
            if k > 0 {
                order.select_nth_unstable_by(k - 1, |&a, &b| by_rank(&scored[a], &scored[b]));
            }
            order.truncate(k);
            order.sort_unstable_by(|&a, &b| by_rank(&scored[a], &scored[b]));
        }
        _ => order.sort_by(|&a, &b| by_rank(&scored[a], &scored[b])),
    }
    let mut scored = permuted(scored, &order);
    let selection = match &plan.selection {
        Selection::TopK(k) => {
            scored.truncate(*k);
            SelectionSummary {
                strategy: "top_k".to_string(),
                input_count,
                output_count: scored.len(),
                cutoff_score: scored.last().map_or(0.0, |s| s.final_score),
                metadata: serde_json::Map::new(),
            }
        }
        Selection::Strategy {
            config,
            min_k,
            max_k,
        } => {
            let strategy = config.build()?;
            let scores: Vec<f64> = scored.iter().map(|s| s.final_score).collect();
            let result = strategy.select_scores(&scores, *max_k, *min_k)?;
            let mut slots: Vec<Option<Weighted>> = scored.into_iter().map(Some).collect();
            scored = result
                .selected
                .iter()
                .filter_map(|&idx| slots.get_mut(idx).and_then(Option::take))
                .collect();
            // The second hop survives selection: for each hit kept, the best hits the
            // graph leg reached through it come back with it, right after it, whatever
            // their score ("who do I notify for order NW-1 and how?": the order note
            // names the customer; the customer's notes, which share no word with the
            // question but the customer, say how to reach them). They come in the order
            // of what they answer ([`second_hop`]); the measure is rough, so up to
            // `second_hops` come back, as long as the hits then number at most
            // `1 + second_hops` (and at least the best one: an identifier lookup that
            // kept its note and the notes that name the same code stays short).
            // Both of one context (one customer's notes, one conversation), or of none: a
            // bridge through an entity two contexts share (a date) crosses to another's.
            let context =
                |document: &Document| document.as_chunk().and_then(|c| c.context_id.clone());
            let kept: std::collections::HashMap<&str, Option<String>> = scored
                .iter()
                .map(|s| (s.document.id(), context(&s.document)))
                .collect();
            let limit = match plan.second_hops {
                0 => 0,
                n => (1 + n).saturating_sub(scored.len()).max(1),
            };
            // Memory's second hops are facts about the linked entity: they come in the
            // order of what they answer, and each bridge leads its own. Other kinds keep
            // the ranking's order (`slots` is in rank order), after the hits kept.
            let about_linked = plan.kind == Kind::Chunk;
            let mut reached: Vec<(second_hop::HopOrder, usize, String)> = Vec::new();
            for (i, slot) in slots.iter().enumerate() {
                let Some(candidate) = slot.as_ref() else {
                    continue;
                };
                let Some(path) = candidate.breakdown.graph_path.as_ref() else {
                    continue;
                };
                let Some((via, _)) = path.via.as_ref() else {
                    continue;
                };
                if kept
                    .get(via.as_str())
                    .is_some_and(|first| *first == context(&candidate.document))
                {
                    let order = if about_linked {
                        second_hop::HopOrder::new(
                            &path.entity,
                            &candidate.document.text(),
                            path.answers,
                            i,
                        )
                    } else {
                        second_hop::HopOrder::ranked(i)
                    };
                    reached.push((order, i, via.clone()));
                }
            }
            reached.sort_by(|a, b| a.0.cmp(&b.0));
            reached.truncate(limit);
            let second_hops = reached.len();
            if second_hops > 0 && !about_linked {
                scored.extend(reached.iter().filter_map(|(_, i, _)| slots[*i].take()));
            } else if second_hops > 0 {
                // Each bridge with its second hops, placed before the first kept hit that
                // names the same query entity without leading anywhere: among the notes
                // that name the order, the one that leads to what is asked of its
                // customer comes first.
                let mut with_hops: Vec<Weighted> = Vec::with_capacity(scored.len() + second_hops);
                let mut plain: Vec<bool> = Vec::with_capacity(scored.len() + second_hops);
                let hop_one_entity = |hit: &Weighted| {
                    hit.breakdown
                        .graph_path
                        .as_ref()
                        .filter(|path| path.via.is_none())
                        .map(|path| path.entity.clone())
                };
                for hit in scored {
                    let id = hit.document.id().to_string();
                    let hops: Vec<Weighted> = reached
                        .iter()
                        .filter(|(_, _, via)| *via == id)
                        .filter_map(|(_, i, _)| slots[*i].take())
                        .collect();
                    if hops.is_empty() {
                        plain.push(true);
                        with_hops.push(hit);
                        continue;
                    }
                    let entity = hop_one_entity(&hit);
                    let at = (0..with_hops.len())
                        .find(|&k| {
                            plain[k] && entity.is_some() && hop_one_entity(&with_hops[k]) == entity
                        })
                        .unwrap_or(with_hops.len());
                    let group = std::iter::once(hit).chain(hops);
                    let size = with_hops.len();
                    with_hops.splice(at..at, group);
                    let added = with_hops.len() - size;
                    plain.splice(at..at, std::iter::repeat_n(false, added));
                }
                scored = with_hops;
            }
            let mut metadata = result.metadata;
            if second_hops > 0 {
                metadata.insert("second_hops".into(), second_hops.into());
            }
            SelectionSummary {
                strategy: result.method.to_string(),
                input_count,
                output_count: scored.len(),
                cutoff_score: result.cutoff_score,
                metadata,
            }
        }
    };
    let mut selection = selection;
    if let Some(budget) = plan.max_tokens {
        // The longest prefix within the budget.
        let mut spent = 0usize;
        let mut keep = 0;
        for candidate in &scored {
            let tokens = applied::budget_tokens(&candidate.document);
            if spent + tokens > budget {
                break;
            }
            spent += tokens;
            keep += 1;
        }
        let cut = scored.len() - keep;
        scored.truncate(keep);
        let metadata = &mut selection.metadata;
        metadata.insert("max_tokens".into(), budget.into());
        metadata.insert("tokens".into(), spent.into());
        metadata.insert("tokenizer".into(), crate::tokens::TOKEN_ENCODING.into());
        if cut > 0 {
            metadata.insert("cut_by_budget".into(), cut.into());
        }
        selection.output_count = scored.len();
        if let Some(last) = scored.last() {
            selection.cutoff_score = last.final_score;
        } else {
            selection.cutoff_score = 0.0;
        }
    }
    let hits: Vec<Hit> = scored
        .into_iter()
        .map(|s| Hit {
            id: s.document.id().to_string(),
            score: s.final_score,
            breakdown: s.breakdown,
            document: s.document,
        })
        .collect();
    let mut leg_contributions = LegContributions::default();
    for hit in &hits {
        leg_contributions.count(hit.breakdown.found_by);
    }
    Ok(Ranked {
        hits,
        selection,
        gate,
        fusion: FusionSummary {
            graph_weight: graph_share,
            ..plan.fusion.clone()
        },
        leg_contributions,
        score_micros,
        select_micros: micros(started),
    })
}

/// Fuses the legs, computes each candidate's relevance, and weights the result by kind.
/// The items of `items` at the positions `order` lists, in that order (the rest
/// dropped), each moved once.
fn permuted<T>(items: Vec<T>, order: &[usize]) -> Vec<T> {
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order
        .iter()
        .map(|&i| slots[i].take().expect("each position once"))
        .collect()
}

fn score(candidates: Vec<RetrievedDoc>, plan: &RankPlan) -> Result<(Vec<Weighted>, f64)> {
    let any_leg = plan.legs.is_some();
    let leg_scores: Vec<PerLeg<Option<f64>>> = candidates
        .iter()
        .map(|c| PerLeg {
            text: c.bm25,
            vector: c.cosine.map(metric::score_of_cosine),
            graph: None,
        })
        .collect();
    let fused = if any_leg {
        fuse_with(&leg_scores, &plan.method, plan.weights)?
    } else {
        vec![Fused::default(); leg_scores.len()]
    };
    let selector = ChunkSelector::with_weights(plan.chunk_weights)?;
    // The graph leg, when it reached anything: a third weighted term, its scores
    // normalised by the best.
    let graph_max = candidates
        .iter()
        .filter_map(|c| c.graph)
        .fold(0.0f64, f64::max);
    let graph_share = if graph_max > 0.0 {
        plan.graph_weight / (1.0 + plan.graph_weight)
    } else {
        0.0
    };
    let hybrids: Vec<f64> = candidates
        .iter()
        .zip(&fused)
        .map(|(candidate, fused)| {
            let graph_normalized = candidate.graph.map_or(0.0, |g| g / graph_max);
            if graph_share > 0.0 {
                (1.0 - graph_share) * fused.hybrid + graph_share * graph_normalized
            } else {
                fused.hybrid
            }
        })
        .collect();
    let judged: Vec<Option<(f64, Option<f64>)>> = candidates
        .iter()
        .map(|candidate| plan.legs.map(|legs| relevance_of(candidate, legs, plan)))
        .collect();
    let relevances: Vec<Option<f64>> = judged.iter().map(|j| j.map(|(r, _)| r)).collect();
    let centroids: Vec<Option<f64>> = judged.iter().map(|j| j.and_then(|(_, c)| c)).collect();
    // Only a turn that passes the gate on its own lends to its neighbours.
    let lenders: Vec<bool> = candidates
        .iter()
        .zip(&relevances)
        .map(|(candidate, relevance)| {
            GateDecision::of(*relevance, candidate.coverage.codes, plan.min_relevance).is_some()
        })
        .collect();
    let lifts = neighbour_lifts(&candidates, &hybrids, &lenders, plan.neighbour_weight);
    let speakers = speaker_terms(&candidates, plan);
    let scored = candidates
        .into_iter()
        .zip(fused)
        .zip(speakers)
        .zip(
            hybrids
                .into_iter()
                .zip(lifts)
                .zip(relevances.into_iter().zip(centroids)),
        )
        .map(
            |(((candidate, fused), speaker_term), ((hybrid, lift), (relevance, centroid)))| {
                let graph_normalized = candidate.graph.map_or(0.0, |g| g / graph_max);
                let hybrid = hybrid + lift.unwrap_or(0.0);
                let document = candidate.document;
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
                    relevance,
                    gate: GateDecision::Open,
                    code_term: None,
                    importance: None,
                    recency: None,
                    found_by: candidate.found_by,
                    graph: candidate.graph,
                    graph_normalized,
                    graph_path: candidate.graph_path,
                    neighbour_term: lift,
                    speaker_term,
                    centroid,
                };
                let (final_score, priority) = match document.as_ref() {
                    Document::Rule(rule) => {
                        let score = plan.rule_weights.score(hybrid, rule.priority, &rule.scope);
                        breakdown.priority_term = Some(score.priority_term);
                        breakdown.scope_term = Some(score.scope_term);
                        (score.final_score, rule.priority)
                    }
                    Document::Chunk(chunk) => {
                        // Seed 001's relevance term is the hybrid score (0.5 when browsing
                        // without a query).
                        // The speaker's term is its share of what the hybrid score
                        // leaves below 1: turns keep their order among themselves.
                        let gain = speaker_term.map(|w| w * (1.0 - hybrid).max(0.0));
                        breakdown.speaker_term = gain;
                        let relevance = if any_leg {
                            hybrid + gain.unwrap_or(0.0)
                        } else {
                            0.5
                        };
                        let importance = importance_score(chunk.importance);
                        let recency = selector.recency_score(chunk.created_at, plan.now);
                        breakdown.importance = Some(importance);
                        breakdown.recency = Some(recency);
                        (selector.combine(relevance, importance, recency), 0)
                    }
                    // No business weights: the hybrid score orders scenarios and tools.
                    Document::Scenario(_) | Document::Tool(_) => (hybrid, 0),
                };
                Weighted {
                    document,
                    priority,
                    final_score,
                    breakdown,
                }
            },
        )
        .collect();
    Ok((scored, graph_share))
}

/// A candidate's relevance. A rule or tool with examples, when the retriever gave its
/// centroid cosine and the query's background and no calibration of the user's applies,
/// is judged against its catalog ([`BackgroundCalibration`]); anything else by its best
/// cosine and its coverage ([`crate::relevance::Calibration`]).
/// Returns the relevance, and the centroid cosine when it was judged against its catalog.
fn relevance_of(candidate: &RetrievedDoc, legs: LegsRan, plan: &RankPlan) -> (f64, Option<f64>) {
    let patterns = !candidate.document.examples().is_empty();
    let coverage = f64::from(candidate.coverage.words);
    let against_catalog = matches!(plan.kind, Kind::Rule | Kind::Tool)
        && patterns
        && plan.relevance.kind(plan.kind).calibration.is_none();
    if against_catalog
        && let (Some(background), Some(centroid)) = (plan.background, candidate.centroid)
        && let Some(calibration) = BackgroundCalibration::builtin(plan.family, legs)
    {
        let centroid = f64::from(centroid);
        return (
            calibration.relevance(centroid, coverage, background),
            Some(centroid),
        );
    }
    let relevance = plan
        .relevance
        .calibration(plan.kind, plan.family, legs, patterns)
        .relevance(
            candidate.cosine.map_or(0.0, metric::score_of_cosine),
            coverage,
        );
    (relevance, None)
}

/// The shape of a code: each letter `a`, each digit `9`, the rest kept (`nw-48283` is
/// `aa-99999`): codes of one shape name things of one sort (orders, tickets).
fn code_shape(code: &str) -> String {
    code.chars()
        .map(|c| match c {
            c if c.is_ascii_digit() => '9',
            c if c.is_alphabetic() => 'a',
            c => c,
        })
        .collect()
}

/// Whether `text` names a code of one of `shapes`: another thing of the sort the query
/// asks about (another order's note for an order memory does not know).
fn names_a_sibling(text: &str, shapes: &[String]) -> bool {
    crate::analysis::query_codes(text)
        .iter()
        .any(|code| shapes.contains(&code_shape(code)))
}

/// What each candidate adds to its relevance because the query names its speaker
/// ([`speaker`]): `speaker_weight` (times what its hybrid score leaves below 1) for a
/// turn the query names the speaker of, when some other candidate is not such a turn (a
/// question that names everyone prefers no one).
fn speaker_terms(candidates: &[RetrievedDoc], plan: &RankPlan) -> Vec<Option<f64>> {
    let none = vec![None; candidates.len()];
    if plan.kind != Kind::Chunk || plan.speaker_weight == 0.0 || plan.legs.is_none() {
        return none;
    }
    let named: Vec<bool> = candidates
        .iter()
        .map(|candidate| {
            speaker::speaker_of(&candidate.document)
                .is_some_and(|name| speaker::names(&plan.question, name))
        })
        .collect();
    if !named.contains(&true) || !named.contains(&false) {
        return none;
    }
    named
        .into_iter()
        .map(|named| named.then_some(plan.speaker_weight))
        .collect()
}

/// What each candidate's neighbouring turns lend it: what `weight` times the best hybrid
/// score among its neighbours that are candidates and `lenders` (they pass the gate)
/// adds to its own, when more (`None`: no such neighbour, or nothing to add).
fn neighbour_lifts(
    candidates: &[RetrievedDoc],
    hybrids: &[f64],
    lenders: &[bool],
    weight: f64,
) -> Vec<Option<f64>> {
    let any = candidates
        .iter()
        .any(|c| c.neighbours.iter().any(Option::is_some));
    if weight <= 0.0 || !any {
        return vec![None; candidates.len()];
    }
    let at: std::collections::HashMap<&str, usize> = candidates
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id(), i))
        .collect();
    candidates
        .iter()
        .enumerate()
        .map(|(i, c)| {
            c.neighbours
                .iter()
                .flatten()
                .filter_map(|id| at.get(id.as_str()).copied())
                .filter(|&j| lenders[j])
                .map(|j| hybrids[j])
                .reduce(f64::max)
                .map(|best| weight * best - hybrids[i])
                .filter(|lift| *lift > 0.0)
        })
        .collect()
}

/// The whole pipeline over any retriever: checks `request`, prepares its query vector
/// (the request's own, or its text embedded by `embedder`, normalised), asks `retriever`
/// for the candidates of both legs, plans with the configuration and the feedback
/// `factors` (`None`: no feedback) and ranks them.
///
/// This is what [`Engine::search`](crate::Reader::search) runs over the local index
/// (with the query id feedback needs), and what the Milvus backend runs over Milvus.
///
/// # Errors
///
/// [`ErrorKind::InvalidInput`] for an invalid request;
/// [`ErrorKind::DimensionMismatch`] for a query
/// vector of another dimension than [`Retriever::dimensions`];
/// [`ErrorKind::NonFiniteScore`] for a NaN in it; the
/// embedder's and the retriever's errors.
pub fn search_with(
    retriever: &(impl Retriever + ?Sized),
    config: &Config,
    request: &SearchRequest,
    embedder: Option<&dyn Embedder>,
    factors: Option<PerLeg<f64>>,
) -> Result<SearchResponse> {
    search_with_id(
        retriever,
        config,
        request,
        embedder,
        factors,
        &Searcher::PLAIN,
        None,
    )
}

/// What a search computes of its message before any leg runs: the query vector and the
/// query analysis. A turn prepares its message once for all its searches.
pub(crate) struct PreparedQuery {
    /// The normalised query vector; `None`: the vector leg does not run.
    pub(crate) vector: Option<Vec<f32>>,
    /// Why the vector leg does not run, when it does not.
    pub(crate) vector_skipped: Option<String>,
    /// Time spent embedding, in microseconds.
    pub(crate) embed_us: u64,
    /// What query analysis found in the text.
    pub(crate) analysis: QueryAnalysis,
}

impl PreparedQuery {
    /// Embeds (or checks) `request`'s vector and analyses its text.
    pub(crate) fn new(
        request: &SearchRequest,
        embedder: Option<&dyn Embedder>,
        dimensions: Option<usize>,
    ) -> Result<PreparedQuery> {
        let stage = Instant::now();
        let (vector, vector_skipped) = query_vector(request, embedder, dimensions)?;
        Ok(PreparedQuery {
            vector,
            vector_skipped,
            embed_us: micros(stage),
            analysis: analyze(&request.text),
        })
    }

    /// The message of `request` prepared for each of `kinds`: analysed once (`analysis`),
    /// and embedded once per distinct embedder of those kinds (and dimension), the
    /// vector shared by the kinds that use it. The embedding time is counted once, on the
    /// first kind of each embedder. Also returns how many times the text was embedded.
    pub(crate) fn for_kinds(
        request: &SearchRequest,
        kinds: &[Kind],
        embedders: &crate::Embedders,
        dimensions: &dyn Fn(Kind) -> Option<usize>,
        analysis: &QueryAnalysis,
    ) -> Result<(Vec<(Kind, PreparedQuery)>, usize)> {
        let mut out: Vec<(Kind, PreparedQuery)> = Vec::with_capacity(kinds.len());
        let mut embedded = 0;
        let text_present = !request.text.trim().is_empty();
        // (model id and dimension of the embedder, the index's dimension) → prepared.
        type Key = (Option<(String, usize)>, Option<usize>);
        let mut done: Vec<(Key, usize)> = Vec::new();
        for &kind in kinds {
            let embedder = embedders.get(kind).map(|e| e.as_ref());
            let key: Key = (
                embedder.map(|e| (e.model_id().to_string(), e.dimensions())),
                dimensions(kind),
            );
            let prepared = match done.iter().find(|(k, _)| *k == key) {
                Some((_, at)) => {
                    let shared = &out[*at].1;
                    PreparedQuery {
                        vector: shared.vector.clone(),
                        vector_skipped: shared.vector_skipped.clone(),
                        embed_us: 0,
                        analysis: analysis.clone(),
                    }
                }
                None => {
                    let stage = Instant::now();
                    let (vector, vector_skipped) = query_vector(request, embedder, key.1)?;
                    if request.embedding.is_none() && embedder.is_some() && text_present {
                        embedded += 1;
                    }
                    done.push((key, out.len()));
                    PreparedQuery {
                        vector,
                        vector_skipped,
                        embed_us: micros(stage),
                        analysis: analysis.clone(),
                    }
                }
            };
            out.push((kind, prepared));
        }
        Ok((out, embedded))
    }
}

/// How a search is run beyond its request: the ids it is given and whether its selection
/// is logged (a turn logs one event for all its searches).
pub(crate) struct Searcher<'a> {
    /// Makes the response's query id from a unique, time-ordered base id and the top hit.
    pub(crate) query_id: &'a dyn Fn(String, Option<&Hit>) -> String,
    /// Logs the selection at info (otherwise at debug).
    pub(crate) log_selection: bool,
    /// The embedder that measures what second hops answer ([`second_hop`]); `None`: the
    /// searched kind's.
    pub(crate) answers: Option<&'a dyn Embedder>,
}

impl Searcher<'_> {
    /// Plain ids, selection logged, second hops measured with the kind's embedder.
    pub(crate) const PLAIN: Searcher<'static> = Searcher {
        query_id: &|base, _| base,
        log_selection: true,
        answers: None,
    };
}

/// The embedder to measure second hops with among `embedders`: a transformer's
/// (all-MiniLM-L6-v2's, by default the rules') when one is loaded, since it reads what a
/// question asks far better than the static model (issue 45: the answer among an
/// entity's notes first 0.31-0.57 of the time with the static model, 0.70-0.88 with
/// MiniLM, `crates/research/src/bin/memory.rs signals`); otherwise none (the kind's).
pub(crate) fn answers_embedder(embedders: &crate::Embedders) -> Option<Arc<dyn Embedder>> {
    Kind::ALL.iter().find_map(|&kind| {
        embedders
            .get(kind)
            .filter(|e| EmbedderFamily::of(Some(e.model_id())) == EmbedderFamily::MiniLm)
            .cloned()
    })
}

/// [`search_with`], as `searcher` says, with the message prepared already when `prepared`
/// is given (its request's text and vector are then not looked at again).
///
/// A tool search of a message that asks for several things ([`crate::analysis::parts`])
/// searches the whole message and each part, and its hits are the whole message's and
/// each part's in turn, duplicates dropped, at most `pipeline.retrieval.tool_parts` (or
/// the request's `top_k`): a request for two tools gets both, not the siblings of the
/// one its words favour.
#[allow(clippy::too_many_arguments)]
pub(crate) fn search_with_id(
    retriever: &(impl Retriever + ?Sized),
    config: &Config,
    request: &SearchRequest,
    embedder: Option<&dyn Embedder>,
    factors: Option<PerLeg<f64>>,
    searcher: &Searcher<'_>,
    prepared: Option<&PreparedQuery>,
) -> Result<SearchResponse> {
    let mut response = search_ranked(
        retriever, config, request, embedder, factors, searcher, prepared,
    )?;
    if request.kind == Kind::Rule {
        let now = request.now.unwrap_or_else(Timestamp::now);
        applied::add_applied(retriever, request, now, &mut response)?;
    }
    Ok(response)
}

/// [`search_with_id`] before the rules applied whatever their relevance: the message's
/// search, and its parts' when it has several.
#[allow(clippy::too_many_arguments)]
fn search_ranked(
    retriever: &(impl Retriever + ?Sized),
    config: &Config,
    request: &SearchRequest,
    embedder: Option<&dyn Embedder>,
    factors: Option<PerLeg<f64>>,
    searcher: &Searcher<'_>,
    prepared: Option<&PreparedQuery>,
) -> Result<SearchResponse> {
    let retrieval = &config.pipeline.retrieval;
    let parts = match (request.kind, &request.embedding) {
        (Kind::Tool, None) if retrieval.tool_parts > 0 => crate::analysis::parts(&request.text),
        (Kind::Rule, None) if retrieval.rule_parts && !request.browse => {
            crate::analysis::rule_parts(&request.text)
        }
        _ => Vec::new(),
    };
    // Tools: the lists in turn, at most `tool_parts`. Rules: every rule the whole message
    // passes, then each part's that it did not.
    let (cap, in_turn) = match request.kind {
        Kind::Rule => (request.top_k.unwrap_or(usize::MAX), false),
        _ => (request.top_k.unwrap_or(retrieval.tool_parts), true),
    };
    if parts.is_empty() {
        return search_one(
            retriever, config, request, embedder, factors, searcher, prepared,
        );
    }
    let started = Instant::now();
    let quiet = Searcher {
        query_id: searcher.query_id,
        log_selection: false,
        answers: searcher.answers,
    };
    let mut whole = search_one(
        retriever, config, request, embedder, factors, &quiet, prepared,
    )?;
    // A message that, as a whole, asks for no tool the catalog has gets none from its
    // parts either (a part alone can look like a tool's example).
    if whole.hits.is_empty() && request.kind == Kind::Tool {
        return Ok(whole);
    }
    let mut lists = vec![std::mem::take(&mut whole.hits)];
    let mut embed_us = whole.timings.embed_us;
    for part in &parts {
        let part_request = SearchRequest {
            text: part.clone(),
            ..request.clone()
        };
        let found = search_one(
            retriever,
            config,
            &part_request,
            embedder,
            factors,
            &quiet,
            None,
        )?;
        embed_us += found.timings.embed_us;
        lists.push(found.hits);
    }
    // In turn: the whole message's best, each part's best, the whole's second... Or one
    // list after the other. Duplicates dropped either way.
    let mut hits: Vec<Hit> = Vec::new();
    let mut next = vec![0usize; lists.len()];
    while hits.len() < cap && next.iter().zip(&lists).any(|(i, list)| *i < list.len()) {
        for (list, i) in lists.iter().zip(next.iter_mut()) {
            while *i < list.len() && hits.len() < cap {
                let hit = &list[*i];
                *i += 1;
                if !hits.iter().any(|h| h.id == hit.id) {
                    hits.push(hit.clone());
                    if in_turn {
                        break;
                    }
                }
            }
        }
    }
    whole.query_id = (searcher.query_id)(next_query_id(), hits.first());
    whole.hits = hits;
    whole.selection.output_count = whole.hits.len();
    whole
        .selection
        .metadata
        .insert("parts".into(), parts.len().into());
    whole.gate.passed = whole.gate.passed.max(whole.hits.len());
    whole.timings.embed_us = embed_us;
    whole.timings.total_us = micros(started);
    Ok(whole)
}

/// One search: [`search_with_id`] of one message.
#[allow(clippy::too_many_arguments)]
fn search_one(
    retriever: &(impl Retriever + ?Sized),
    config: &Config,
    request: &SearchRequest,
    embedder: Option<&dyn Embedder>,
    factors: Option<PerLeg<f64>>,
    searcher: &Searcher<'_>,
    prepared: Option<&PreparedQuery>,
) -> Result<SearchResponse> {
    let started = Instant::now();
    validate(request)?;
    let own;
    // A turn's searches share its embedding: its time is the turn's, not theirs.
    let (prepared, embed_us) = match prepared {
        Some(prepared) => (prepared, 0),
        None => {
            own = PreparedQuery::new(request, embedder, retriever.dimensions(request.kind))?;
            (&own, own.embed_us)
        }
    };
    let family = EmbedderFamily::of(embedder.map(|e| e.model_id()));
    let vector = prepared.vector.as_deref();
    let now = request.now.unwrap_or_else(Timestamp::now);
    let limit = config
        .pipeline
        .retrieval
        .max_candidates
        .max(request.max_candidates.unwrap_or(0))
        .max(request.top_k.unwrap_or(0));
    let mut query = RetrievalQuery::new(request, vector, limit, now);
    query.family = family;
    // No text and no vector ask nothing, unless the request browses chunks: no leg runs,
    // and nothing is answered.
    let empty_message = vector.is_none() && request.text.trim().is_empty() && !query.browse;
    let mut retrieved = if empty_message {
        Retrieved::default()
    } else {
        retriever.candidates(&query)?
    };
    if request.kind == Kind::Rule && !request.files.is_empty() {
        applied::keep_nearest(&mut retrieved.candidates, &request.files);
    }
    // Memory's second hops only, and only where the selection brings them back (not
    // with `top_k`, nor with `graph.second_hops` 0): see `rank`.
    if request.kind == Kind::Chunk && request.top_k.is_none() && config.graph.second_hops > 0 {
        second_hop::measure(
            &mut retrieved.candidates,
            &request.text,
            searcher.answers.or(embedder),
        )?;
    }
    let mut plan = RankPlan::new(
        config,
        request,
        LegsRan::of(retrieved.legs.text, retrieved.legs.vector),
        family,
        factors,
        &prepared.analysis,
    )?;
    plan.now = now;
    plan.background = retrieved.background;
    plan.query_information = retrieved.query_information;
    let retrieved_graph_entities = retrieved.graph_entities;
    let mut ranked = rank(retrieved.candidates, &plan)?;
    ranked.gate.empty_message = empty_message;
    let query_id = (searcher.query_id)(next_query_id(), ranked.hits.first());
    let selection = &ranked.selection;
    macro_rules! log_selection {
        ($level:expr) => {
            tracing::event!(
                target: "ruchedb::select",
                $level,
                query_id = %query_id,
                kind = %request.kind,
                strategy = %selection.strategy,
                input_count = selection.input_count,
                output_count = selection.output_count,
                cutoff_score = selection.cutoff_score,
                metadata = %serde_json::Value::Object(selection.metadata.clone()),
                gate_passed = ranked.gate.passed,
                gate_rejected = ranked.gate.rejected,
                min_relevance = ranked.gate.min_relevance,
                "selection"
            )
        };
    }
    if searcher.log_selection {
        log_selection!(tracing::Level::INFO);
    } else {
        log_selection!(tracing::Level::DEBUG);
    }
    let timings = Timings {
        embed_us,
        text_us: retrieved.micros.text,
        vector_us: retrieved.micros.vector,
        fuse_us: retrieved.fill_micros + ranked.score_micros,
        select_us: ranked.select_micros,
        total_us: micros(started),
    };
    Ok(SearchResponse {
        query_id,
        hits: ranked.hits,
        selection: ranked.selection,
        timings,
        leg_candidates: [
            retrieved.leg_candidates.text,
            retrieved.leg_candidates.vector,
        ],
        leg_contributions: ranked.leg_contributions,
        fusion: FusionSummary {
            graph_entities: retrieved_graph_entities,
            ..ranked.fusion
        },
        vector_leg_skipped: prepared.vector_skipped.clone(),
        gate: ranked.gate,
        analysis: prepared.analysis.clone(),
    })
}

/// The normalised query vector of `request`: the vector it carries (checked against
/// `dimensions`), or its text embedded by `embedder`. `None`, with the reason, when the
/// vector leg cannot run: no text and no vector, no embedder, an index without vectors
/// (`dimensions` is `None`) or a zero vector.
fn query_vector(
    request: &SearchRequest,
    embedder: Option<&dyn Embedder>,
    dimensions: Option<usize>,
) -> Result<(Option<Vec<f32>>, Option<String>)> {
    let text_present = !request.text.trim().is_empty();
    let mut vector = match (&request.embedding, embedder) {
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
        (None, Some(embedder)) if text_present => embedder
            .embed_batch(&[text_to_embed(&request.text).as_ref()])?
            .pop()
            .unwrap_or_default(),
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

/// A unique, time-ordered query id: `q` + millis + process + counter, fixed-width hex.
pub(crate) fn next_query_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let millis = Timestamp::now().unix_millis().max(0);
    format!(
        "q{millis:012x}-{:08x}-{:06x}",
        std::process::id(),
        n & 0xff_ffff
    )
}

/// Checks a request before any leg runs.
pub(crate) fn validate(request: &SearchRequest) -> Result<()> {
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
        Kind::Scenario | Kind::Tool => {
            let kind = request.kind.plural();
            if request.scenario_id.is_some() {
                return Err(Error::invalid_input(format!(
                    "`scenario_id` and `step_id` select rules, not {kind}"
                )));
            }
            if request.context_id.is_some() {
                return Err(Error::invalid_input(format!(
                    "`context_id` filters chunks, not {kind}"
                )));
            }
            if !request.filters.is_empty() {
                return Err(Error::invalid_input(format!(
                    "metadata filters apply to chunks; {kind} have no metadata (use tags)"
                )));
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
