//! Search requests and responses.

use std::sync::Arc;

use serde::Serialize;

use crate::Kind;
use crate::analysis::QueryAnalysis;
use crate::chunk::ChunkWeights;
use crate::fusion::FusionSpec;
use crate::model::doc::{DEFAULT_TENANT, Document};
use crate::model::leg::{Leg, PerLeg};
use crate::model::time::Timestamp;
use crate::relevance::{GateDecision, GateSummary};
use crate::select::SelectionConfig;

/// A search for rules or chunks.
///
/// Built with [`SearchRequest::rules`] or [`SearchRequest::chunks`] and chained setters.
/// Every filter applies before the top-k cut of both legs. The query text is plain text:
/// it is never parsed as query syntax.
///
/// # Example
///
/// ```
/// use ruchedb::SearchRequest;
///
/// let request = SearchRequest::rules("I want my money back")
///     .with_tenant("acme")
///     .with_agent("support-bot")
///     .with_scenario("returns")
///     .with_top_k(5);
/// assert_eq!(request.tenant_id(), "acme");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SearchRequest {
    pub(crate) kind: Kind,
    pub(crate) text: String,
    pub(crate) embedding: Option<Vec<f32>>,
    pub(crate) tenant_id: String,
    pub(crate) agent_id: Option<String>,
    pub(crate) scenario_id: Option<String>,
    pub(crate) step_id: Option<String>,
    pub(crate) context_id: Option<String>,
    pub(crate) tags: Vec<String>,
    pub(crate) filters: Vec<(String, String)>,
    pub(crate) top_k: Option<usize>,
    pub(crate) max_k: Option<usize>,
    pub(crate) min_k: Option<usize>,
    pub(crate) max_candidates: Option<usize>,
    pub(crate) now: Option<Timestamp>,
    pub(crate) selection: Option<SelectionConfig>,
    pub(crate) chunk_weights: Option<ChunkWeights>,
    pub(crate) fusion: Option<FusionSpec>,
    pub(crate) adaptive: Option<bool>,
    pub(crate) min_relevance: Option<f64>,
    pub(crate) max_tokens: Option<usize>,
    pub(crate) browse: bool,
    pub(crate) files: Vec<String>,
    pub(crate) named: Vec<String>,
}

impl SearchRequest {
    /// A search among rules.
    pub fn rules(text: impl Into<String>) -> SearchRequest {
        SearchRequest::new(Kind::Rule, text)
    }

    /// A search among chunks. The text may be empty: chunks are then ranked by
    /// importance and recency alone.
    pub fn chunks(text: impl Into<String>) -> SearchRequest {
        SearchRequest::new(Kind::Chunk, text)
    }

    /// A search among scenarios: which scenario a message should activate (by default
    /// at most one stands out, and none when none is relevant).
    pub fn scenarios(text: impl Into<String>) -> SearchRequest {
        SearchRequest::new(Kind::Scenario, text)
    }

    /// A search among tools: which tools fit a message, for a policy to choose among
    /// ([`Candidate::from_hit`](crate::policy::Candidate::from_hit)).
    pub fn tools(text: impl Into<String>) -> SearchRequest {
        SearchRequest::new(Kind::Tool, text)
    }

    /// A search among documents of `kind`.
    pub fn new(kind: Kind, text: impl Into<String>) -> SearchRequest {
        SearchRequest {
            kind,
            text: text.into(),
            embedding: None,
            tenant_id: DEFAULT_TENANT.to_string(),
            agent_id: None,
            scenario_id: None,
            step_id: None,
            context_id: None,
            tags: Vec::new(),
            filters: Vec::new(),
            top_k: None,
            max_k: None,
            min_k: None,
            max_candidates: None,
            now: None,
            selection: None,
            chunk_weights: None,
            fusion: None,
            adaptive: None,
            min_relevance: None,
            max_tokens: None,
            browse: false,
            files: Vec::new(),
            named: Vec::new(),
        }
    }

    /// Uses this query vector instead of embedding the text.
    #[must_use]
    pub fn with_embedding(mut self, embedding: Vec<f32>) -> SearchRequest {
        self.embedding = Some(embedding);
        self
    }

    /// Searches this tenant (default [`DEFAULT_TENANT`]).
    #[must_use]
    pub fn with_tenant(mut self, tenant_id: impl Into<String>) -> SearchRequest {
        self.tenant_id = tenant_id.into();
        self
    }

    /// Searches as this agent: its documents and those without agent.
    #[must_use]
    pub fn with_agent(mut self, agent_id: impl Into<String>) -> SearchRequest {
        self.agent_id = Some(agent_id.into());
        self
    }

    /// Makes this scenario active (its scenario rules apply).
    #[must_use]
    pub fn with_scenario(mut self, scenario_id: impl Into<String>) -> SearchRequest {
        self.scenario_id = Some(scenario_id.into());
        self
    }

    /// Makes this step of the active scenario active (its step rules apply).
    #[must_use]
    pub fn with_step(mut self, step_id: impl Into<String>) -> SearchRequest {
        self.step_id = Some(step_id.into());
        self
    }

    /// Browses chunks: with no text and no vector, every chunk the filters admit is a
    /// candidate, ordered by importance and recency (what is remembered of a context,
    /// `.with_context(..)`). Without it, a message with no text and no vector gets no answer.
    #[must_use]
    pub fn browse(mut self) -> SearchRequest {
        self.browse = true;
        self
    }

    /// Names a file the agent is working on (relative to the project's root): rules whose
    /// globs match it apply ([`Apply::Files`](crate::Apply::Files)), and rules for a
    /// folder ([`Rule::folder`](crate::Rule::folder)) are candidates only when a named
    /// file is inside it. Repeatable.
    #[must_use]
    pub fn with_file(mut self, path: impl Into<String>) -> SearchRequest {
        self.files.push(path.into());
        self
    }

    /// Names a rule to apply, by id or by name ([`Rule::name`](crate::Rule::name)):
    /// how a [`Apply::Manual`](crate::Apply::Manual) rule applies (so does `@name` in
    /// the text). Repeatable.
    #[must_use]
    pub fn with_rule(mut self, name: impl Into<String>) -> SearchRequest {
        self.named.push(name.into());
        self
    }

    /// Restricts chunks to one context.
    #[must_use]
    pub fn with_context(mut self, context_id: impl Into<String>) -> SearchRequest {
        self.context_id = Some(context_id.into());
        self
    }

    /// Requires a tag (a rule's, scenario's or tool's `tags`; a chunk's `tags` metadata entry). Repeatable: all
    /// given tags are required.
    #[must_use]
    pub fn with_tag(mut self, tag: impl Into<String>) -> SearchRequest {
        self.tags.push(tag.into());
        self
    }

    /// Requires a chunk metadata entry `key` equal to `value` (for a non-string value,
    /// its JSON text; for an array, any element). Repeatable.
    #[must_use]
    pub fn with_filter(
        mut self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> SearchRequest {
        self.filters.push((key.into(), value.into()));
        self
    }

    /// Returns the `k` best hits that pass the relevance gate (fewer when fewer do; with
    /// [`SearchRequest::with_min_relevance`] 0, exactly `k` unless fewer match): no selection
    /// strategy, and each leg fetches at least `k` candidates.
    #[must_use]
    pub fn with_top_k(mut self, k: usize) -> SearchRequest {
        self.top_k = Some(k);
        self
    }

    /// The most hits the selection strategy may return (default from config, 30).
    #[must_use]
    pub fn with_max_k(mut self, k: usize) -> SearchRequest {
        self.max_k = Some(k);
        self
    }

    /// The fewest hits the selection strategy returns when there are enough (default 1).
    #[must_use]
    pub fn with_min_k(mut self, k: usize) -> SearchRequest {
        self.min_k = Some(k);
        self
    }

    /// How many candidates each leg fetches (default from config, 30).
    #[must_use]
    pub fn with_max_candidates(mut self, n: usize) -> SearchRequest {
        self.max_candidates = Some(n);
        self
    }

    /// The time recency and expiry are measured against (default: the clock).
    #[must_use]
    pub fn with_now(mut self, now: Timestamp) -> SearchRequest {
        self.now = Some(now);
        self
    }

    /// Selects how many hits to return with this strategy instead of the configured one
    /// (`[pipeline.retrieval.rule_selection]` or `memory_selection`). Ignored when
    /// [`SearchRequest::with_top_k`] is set.
    #[must_use]
    pub fn with_selection(mut self, selection: SelectionConfig) -> SearchRequest {
        self.selection = Some(selection);
        self
    }

    /// Scores chunks with these weights and decay instead of `[scoring.chunks]`.
    #[must_use]
    pub fn with_chunk_weights(mut self, weights: ChunkWeights) -> SearchRequest {
        self.chunk_weights = Some(weights);
        self
    }

    /// Fuses the two legs with `spec` instead of the configured `[fusion.rules]` or
    /// `[fusion.chunks]`.
    #[must_use]
    pub fn with_fusion(mut self, spec: FusionSpec) -> SearchRequest {
        self.fusion = Some(spec);
        self
    }

    /// Turns query-adaptive leg weights on or off for this request (default: config's
    /// `fusion.adaptive`).
    #[must_use]
    pub fn with_adaptive(mut self, adaptive: bool) -> SearchRequest {
        self.adaptive = Some(adaptive);
        self
    }

    /// Returns only candidates whose relevance reaches `min_relevance` (in `0..=1`; `0`
    /// turns the relevance gate off) instead of the configured `[relevance.rules]` or
    /// `[relevance.chunks]` value. Candidates that contain a code the query names (an
    /// identifier such as `NW-15699`) always pass.
    #[must_use]
    pub fn with_min_relevance(mut self, min_relevance: f64) -> SearchRequest {
        self.min_relevance = Some(min_relevance);
        self
    }

    /// A token budget for the hits: the selection keeps the longest prefix of its hits
    /// whose texts (a chunk's content, a rule's condition and action, a scenario's or a
    /// tool's name and description) take at most `max_tokens` tokens together, counted
    /// with [`crate::TOKEN_ENCODING`]. The budget is never exceeded (a first hit longer than
    /// it gives no hit); the selection's metadata says what was counted.
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: usize) -> SearchRequest {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// The kind searched.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The query text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The tenant searched.
    pub fn tenant_id(&self) -> &str {
        &self.tenant_id
    }

    /// The agent filter.
    pub fn agent_id(&self) -> Option<&str> {
        self.agent_id.as_deref()
    }

    /// The active scenario.
    pub fn scenario_id(&self) -> Option<&str> {
        self.scenario_id.as_deref()
    }

    /// The active step of the scenario.
    pub fn step_id(&self) -> Option<&str> {
        self.step_id.as_deref()
    }

    /// The context filter (chunks).
    pub fn context_id(&self) -> Option<&str> {
        self.context_id.as_deref()
    }

    /// The tags every hit must carry.
    pub fn tags(&self) -> &[String] {
        &self.tags
    }

    /// The metadata filters (chunks), `key = value`.
    pub fn metadata_filters(&self) -> &[(String, String)] {
        &self.filters
    }

    /// The query vector the request carries, if any.
    pub fn query_embedding(&self) -> Option<&[f32]> {
        self.embedding.as_deref()
    }
}

/// How a hit's score was made. Every score is higher-is-better.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ScoreBreakdown {
    /// `max(0, cosine)` of the query and the document (best over a rule's patterns);
    /// `None` when the vector leg did not run or the document has no vector.
    pub vector: Option<f64>,
    /// The raw BM25 score (0 when the text does not match).
    pub bm25: f64,
    /// BM25 normalised over the candidates by the fusion method.
    pub bm25_normalized: f64,
    /// The share of the query's words (weighted by their rarity, idf) that the document
    /// contains, in `[0, 1]`: unlike BM25, comparable across queries.
    pub text_coverage: f64,
    /// How many of the query's codes (identifiers such as `NW-15699`) the document
    /// contains verbatim.
    pub codes_matched: u32,
    /// Which of the document's vectors gave `vector`.
    pub vector_match: Option<VectorMatch>,
    /// `code_boost * codes_matched`, added to the final score, when the document
    /// contains a code of the query.
    pub code_term: Option<f64>,
    /// The vector score normalised by the fusion method.
    pub vector_normalized: f64,
    /// The fusion of the two legs.
    pub hybrid: f64,
    /// Rules: `priority_weight * norm(priority)`.
    pub priority_term: Option<f64>,
    /// Rules: `scope_weight * scope weight`.
    pub scope_term: Option<f64>,
    /// How likely the document is about the query, in `[0, 1]`: the relevance gate's
    /// measure (see [`Calibration`](crate::relevance::Calibration)); `None` without query.
    pub relevance: Option<f64>,
    /// Why the hit passed the relevance gate.
    pub gate: GateDecision,
    /// Chunks: importance in `[0, 1]`.
    pub importance: Option<f64>,
    /// Chunks: recency in `[0, 1]`.
    pub recency: Option<f64>,
    /// Which legs found the document.
    pub found_by: PerLeg<bool>,
    /// The graph leg's score (the weights of the paths that reached it); `None` when it
    /// did not reach the document.
    pub graph: Option<f64>,
    /// `graph` over the best graph score of the search, in `[0, 1]`.
    pub graph_normalized: f64,
    /// The strongest path from an entity of the query to the document.
    pub graph_path: Option<crate::query::GraphPath>,
    /// The cosine of the query and the document's centroid, when its relevance was
    /// judged against its catalog (a rule or tool with examples; see
    /// [`GateSummary::background`](crate::relevance::GateSummary::background)).
    pub centroid: Option<f64>,
    /// What a conversation turn's neighbouring turns lent its hybrid score (included in
    /// `hybrid`, which is at least `neighbour_weight` times its best neighbour's).
    pub neighbour_term: Option<f64>,
    /// What a conversation turn gained because the query names its speaker (added to
    /// its relevance to the query before importance and recency weigh in).
    pub speaker_term: Option<f64>,
}

/// Which of a document's vectors matched the query best.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VectorMatch {
    /// The embedding of the document's text (a rule's condition and action).
    Text,
    /// The rule's pattern of this index (in [`Rule::patterns`](crate::Rule::patterns)).
    Pattern(usize),
    /// The centroid of the rule's text and patterns: the rule as a whole.
    Centroid,
}

impl VectorMatch {
    pub(crate) fn from_row(row: u16) -> VectorMatch {
        match row {
            0 => VectorMatch::Text,
            crate::model::id::CENTROID_ROW => VectorMatch::Centroid,
            n => VectorMatch::Pattern(usize::from(n) - 1),
        }
    }
}

/// One result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Hit {
    /// The user id.
    pub id: String,
    /// The final score the hits are sorted by.
    pub score: f64,
    /// How the score was made.
    pub breakdown: ScoreBreakdown,
    /// The document (without its vectors).
    pub document: Arc<Document>,
}

/// Time spent in each stage of a search, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[non_exhaustive]
pub struct Timings {
    /// Embedding the query.
    pub embed_us: u64,
    /// The BM25 leg.
    pub text_us: u64,
    /// The vector leg.
    pub vector_us: u64,
    /// Filling missing leg scores, fusing and weighting.
    pub fuse_us: u64,
    /// Sorting and k-selection.
    pub select_us: u64,
    /// The whole search.
    pub total_us: u64,
}

/// How many results were kept, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SelectionSummary {
    /// The strategy (`top_k` when the request asked for exactly k).
    pub strategy: String,
    /// Candidates ranked.
    pub input_count: usize,
    /// Hits kept.
    pub output_count: usize,
    /// The score of the last hit kept (0 when none).
    pub cutoff_score: f64,
    /// Strategy-specific details.
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

/// How the two legs were fused for one search.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FusionSummary {
    /// The method, e.g. `weighted (text: min_max, vector: fixed_bounds [0, 1])`.
    pub method: String,
    /// The weight of the vector leg actually used (after adaptation and feedback; 0 when
    /// the leg did not run).
    pub vector_weight: f64,
    /// The weight of the text leg actually used.
    pub text_weight: f64,
    /// Whether query-adaptive weights were applied.
    pub adaptive: bool,
    /// The feedback factor of each leg's weight, when feedback is on.
    pub feedback_factors: Option<PerLeg<f64>>,
    /// The graph leg's share of the hybrid score (0 when it did not run or found nothing).
    pub graph_weight: f64,
    /// The entities of the query the graph leg started from (empty: it did not run).
    pub graph_entities: Vec<String>,
}

/// Which legs found the hits returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[non_exhaustive]
pub struct LegContributions {
    /// Hits one leg alone found, by leg.
    pub only: PerLeg<usize>,
    /// Hits found by more than one leg.
    pub several: usize,
}

impl LegContributions {
    /// Counts a hit found by `legs`.
    pub(crate) fn count(&mut self, legs: PerLeg<bool>) {
        let mut found = Leg::ALL.into_iter().filter(|&leg| legs[leg]);
        match (found.next(), found.next()) {
            (None, _) => {}
            (Some(leg), None) => self.only[leg] += 1,
            (Some(_), Some(_)) => self.several += 1,
        }
    }
}

/// The result of [`Engine::search`](crate::Reader::search).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SearchResponse {
    /// A unique id of this search (for feedback and logs).
    pub query_id: String,
    /// The hits, best first.
    pub hits: Vec<Hit>,
    /// How many hits were kept, and why.
    pub selection: SelectionSummary,
    /// Time per stage.
    pub timings: Timings,
    /// Candidates each leg returned: `[text, vector]`.
    pub leg_candidates: [usize; 2],
    /// Which legs found the hits.
    pub leg_contributions: LegContributions,
    /// How the legs were fused.
    pub fusion: FusionSummary,
    /// Why the vector leg did not run, when it did not.
    pub vector_leg_skipped: Option<String>,
    /// What the relevance gate did; [`GateSummary::abstention_reason`] says why a search
    /// returned nothing.
    pub gate: GateSummary,
    /// What query analysis found in the text (keywords, entities, question form).
    pub analysis: QueryAnalysis,
}

/// How the graph leg reached a hit: from a query entity, possibly through another
/// document and the entity it shares with the hit.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct GraphPath {
    /// The entity of the query the path starts from.
    pub entity: String,
    /// Hop 2: the document that mentions the query entity, and the entity it shares
    /// with the hit. `None` for hop 1 (the hit mentions the query entity itself).
    pub via: Option<(String, String)>,
    /// How well the hit answers what the query asks (the cosine of the query's and the
    /// hit's text, each without its identifiers, under a transformer embedder when the
    /// engine has one, else the kind's). It orders the second hops a search returns.
    /// `None` for hop 1, and when it was not measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answers: Option<f32>,
}

impl std::fmt::Display for GraphPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.via {
            None => write!(f, "{} → hit", self.entity),
            Some((doc, shared)) => write!(f, "{} → {doc} → {shared} → hit", self.entity),
        }
    }
}
