//! What the inspector shows of a search: every candidate, kept or refused, and why; a
//! document's patterns run as queries.

use std::collections::HashSet;

use ruchedb::select::SelectionConfig;
use ruchedb::turn::TurnResponse;
use ruchedb::{Document, Hit, Kind, Reader, Scope, SearchRequest, SearchResponse, TurnRequest};

/// More than a search ever ranks (its legs' candidates and the graph leg's).
const EVERY: usize = 100_000;

/// What became of a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// In the response.
    Kept,
    /// Passed the relevance gate, then left out by the k-selection.
    Cut,
    /// Refused by the relevance gate.
    Refused,
}

impl Fate {
    pub fn name(self) -> &'static str {
        match self {
            Fate::Kept => "kept",
            Fate::Cut => "cut by the selection",
            Fate::Refused => "refused by the gate",
        }
    }
}

/// One candidate of a search with its fate.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub hit: Hit,
    pub fate: Fate,
}

/// A search and every candidate it ranked.
#[derive(Debug, Clone)]
pub struct Explained {
    /// The response an agent gets.
    pub response: SearchResponse,
    /// Every candidate (the response's hits among them), best score first.
    pub candidates: Vec<Candidate>,
}

impl Explained {
    /// Runs `request` as an agent would, then twice more over the same candidates with
    /// a selection that keeps them all: with the gate (who passed it) and without.
    pub fn run(engine: &Reader, request: &SearchRequest) -> ruchedb::Result<Explained> {
        let response = engine.search(request)?;
        // A strategy, not `top_k`: `top_k` would make each leg fetch more candidates,
        // and the fusion's normalisation would score them differently.
        let every = SelectionConfig::from_params(
            "fixed_k",
            &serde_json::Map::from_iter([("k".to_string(), EVERY.into())]),
        )?;
        let all = request
            .clone()
            .with_selection(every)
            .with_max_k(EVERY)
            .with_min_k(0);
        let gated = engine.search(&all)?;
        let open = engine.search(&all.with_min_relevance(0.0))?;
        let kept: HashSet<&str> = response.hits.iter().map(|h| h.id.as_str()).collect();
        let passed: HashSet<&str> = gated.hits.iter().map(|h| h.id.as_str()).collect();
        let mut candidates: Vec<Candidate> = response
            .hits
            .iter()
            .map(|hit| Candidate {
                hit: hit.clone(),
                fate: Fate::Kept,
            })
            .collect();
        for hit in &gated.hits {
            if !kept.contains(hit.id.as_str()) {
                candidates.push(Candidate {
                    hit: hit.clone(),
                    fate: Fate::Cut,
                });
            }
        }
        for hit in &open.hits {
            if !passed.contains(hit.id.as_str()) && !kept.contains(hit.id.as_str()) {
                candidates.push(Candidate {
                    hit: hit.clone(),
                    fate: Fate::Refused,
                });
            }
        }
        // Stable: equal scores keep the engine's order (kept before the others).
        candidates.sort_by(|a, b| b.hit.score.total_cmp(&a.hit.score));
        Ok(Explained {
            response,
            candidates,
        })
    }

    /// The score the selection stopped at, when it kept anything.
    pub fn cutoff(&self) -> Option<f64> {
        (!self.response.hits.is_empty()).then_some(self.response.selection.cutoff_score)
    }

    /// Why a candidate is where it is, in words.
    pub fn why(&self, candidate: &Candidate) -> String {
        let hit = &candidate.hit;
        let gate = &self.response.gate;
        let selection = &self.response.selection;
        match candidate.fate {
            Fate::Kept => format!(
                "passed: {}; kept by {} (cutoff {:.3})",
                crate::output::gate_reason(hit),
                selection.strategy,
                selection.cutoff_score
            ),
            Fate::Cut => format!(
                "passed the gate ({}), cut by {}: score {:.3} below the cutoff {:.3} ({:.3} short)",
                crate::output::gate_reason(hit),
                selection.strategy,
                hit.score,
                selection.cutoff_score,
                (selection.cutoff_score - hit.score).max(0.0)
            ),
            Fate::Refused => match hit.breakdown.relevance {
                Some(relevance) => format!(
                    "relevance {relevance:.3} below the gate's {:.3} ({:.3} short)",
                    gate.min_relevance,
                    (gate.min_relevance - relevance).max(0.0)
                ),
                None => "refused by the relevance gate".to_string(),
            },
        }
    }

    /// The best candidate the gate refused and the best the selection cut: the
    /// runners-up, closest to an answer.
    pub fn runners_up(&self) -> (Option<&Candidate>, Option<&Candidate>) {
        let refused = self
            .candidates
            .iter()
            .filter(|c| c.fate == Fate::Refused)
            .max_by(|a, b| {
                let relevance = |c: &Candidate| c.hit.breakdown.relevance.unwrap_or(0.0);
                relevance(a).total_cmp(&relevance(b))
            });
        let cut = self.candidates.iter().find(|c| c.fate == Fate::Cut);
        (refused, cut)
    }
}

/// A whole turn, and each of its four searches explained as the turn ran it.
#[derive(Debug, Clone)]
pub struct ExplainedTurn {
    /// The turn an agent gets.
    pub turn: TurnResponse,
    /// Scenarios, rules (inside the scenario the turn decided), memory, tools.
    pub parts: Vec<(Kind, Explained)>,
}

impl ExplainedTurn {
    pub fn run(engine: &Reader, request: &TurnRequest) -> ruchedb::Result<ExplainedTurn> {
        let turn = engine.turn(request)?;
        let parts = [Kind::Scenario, Kind::Rule, Kind::Chunk, Kind::Tool]
            .into_iter()
            .map(|kind| {
                let search = request.search_request(kind, &turn.scenario);
                Ok((kind, Explained::run(engine, &search)?))
            })
            .collect::<ruchedb::Result<Vec<_>>>()?;
        Ok(ExplainedTurn { turn, parts })
    }
}

/// The index of the pattern (rules) or example (scenarios, tools) that matched best.
pub fn matched_example(hit: &Hit) -> Option<usize> {
    match hit.breakdown.vector_match? {
        ruchedb::query::VectorMatch::Pattern(i) => Some(i),
        _ => None,
    }
}

/// One pattern (or example) of a document run as a query.
#[derive(Debug, Clone)]
pub struct ExampleCheck {
    pub text: String,
    /// The request it ran (for the playground link).
    pub request: SearchRequest,
    /// The first hit, and its score.
    pub first: Option<(String, f64)>,
    /// The document's own rank among the hits kept (1 = first), if kept.
    pub own_rank: Option<usize>,
}

impl ExampleCheck {
    /// Another document comes first: a conflict the author should resolve.
    pub fn conflict(&self) -> bool {
        self.own_rank != Some(1)
    }
}

/// The request a document is found by: its kind, tenant, agent and, for a rule, the
/// scenario and step it applies in.
pub fn request_for(doc: &Document, text: &str) -> SearchRequest {
    let mut request = SearchRequest::new(doc.kind(), text).with_tenant(doc.tenant_id());
    if let Some(agent) = doc.agent_id() {
        request = request.with_agent(agent);
    }
    if let Document::Rule(rule) = doc {
        match &rule.scope {
            Scope::Global => {}
            Scope::Scenario { scenario_id } => request = request.with_scenario(scenario_id),
            Scope::Step {
                scenario_id,
                step_id,
            } => request = request.with_scenario(scenario_id).with_step(step_id),
        }
    }
    request
}

/// Runs each of a document's patterns (rules) or examples (scenarios, tools) as a query.
pub fn check_examples(engine: &Reader, doc: &Document) -> ruchedb::Result<Vec<ExampleCheck>> {
    if doc.kind() == Kind::Chunk {
        return Ok(Vec::new());
    }
    doc.examples()
        .iter()
        .map(|text| {
            let request = request_for(doc, text);
            let response = engine.search(&request)?;
            Ok(ExampleCheck {
                text: text.clone(),
                first: response.hits.first().map(|h| (h.id.clone(), h.score)),
                own_rank: response
                    .hits
                    .iter()
                    .position(|h| h.id == doc.id())
                    .map(|i| i + 1),
                request,
            })
        })
        .collect()
}
