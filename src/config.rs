//! Engine configuration: TOML file, environment overrides, validation.
//!
//! ```toml
//! [pipeline.retrieval]
//! max_k = 30              # most hits a selection strategy may return
//! min_k = 1               # fewest hits returned when there are enough
//! max_candidates = 30     # candidates each leg fetches
//! exact_scan_threshold = 6000
//!
//! [pipeline.retrieval.rule_selection]
//! strategy = "adaptive_k" # elbow | adaptive_k | entropy | clustering | fixed_k | autocut | band
//! alpha = 1.5
//!
//! [pipeline.retrieval.memory_selection]
//! strategy = "band"       # recall first: what scores within 0.15 of the best,
//! band = 0.15             # at most 6 (one when it clearly leads)
//! max_hits = 6
//!
//! [pipeline.retrieval.scenario_selection]
//! strategy = "entropy"    # one scenario when one stands out
//! low_entropy_k = 1
//! medium_entropy_k = 2
//! high_entropy_k = 3
//!
//! [pipeline.retrieval.tool_selection]
//! strategy = "band"       # the tools within 0.15 of the best, at most 8
//! band = 0.15
//! max_hits = 8
//!
//! [fusion]
//! adaptive = false        # adapt leg weights to the query (seed 004)
//! feedback = false        # apply feedback factors (seed 004)
//! patterns_in_text = true # a rule's patterns feed the text leg too
//!
//! [fusion.rules]          # [fusion.tools] alike, [fusion.scenarios] with fixed_bounds
//!                         # text normalization; [fusion.chunks] has weights 0.7 and 0.3
//! method = "weighted"     # weighted | rrf
//! text_normalization = "min_max"        # min_max | fixed_bounds | z_score
//! vector_normalization = "fixed_bounds" # with vector_bounds [0, 1]: the cosine as is
//! vector_weight = 0.8
//! text_weight = 0.2
//! text_bounds = [0.0, 10.0]
//! vector_bounds = [0.0, 1.0]
//! rrf_k = 60
//!
//! [scoring.rules]
//! hybrid_weight = 0.6
//! priority_weight = 0.3
//! scope_weight = 0.1
//!
//! [scoring.chunks]
//! relevance_weight = 0.5
//! importance_weight = 0.3
//! recency_weight = 0.2
//! recency_decay_hours = 168
//!
//! [vector]
//! max_connections = 16
//! ef_construction = 200
//! ef_search = 128
//! ```
//!
//! [`Config::load`] reads a file (or the one `RUCHE_CONFIG` names) and then environment
//! variables `RUCHE_<SECTION>__<KEY>` (`__` nests, e.g.
//! `RUCHE_PIPELINE__RETRIEVAL__MAX_K=10`). Every value is validated, and errors name the
//! dotted key.

use std::path::Path;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

use crate::chunk::ChunkWeights;
use crate::fusion::{FusionSpec, RuleWeights};
use crate::relevance::RelevanceConfig;
use crate::select::SelectionConfig;
use crate::{Error, Result};

/// The top-level sections, the only ones `RUCHE_<SECTION>__<KEY>` variables can set.
const SECTIONS: [&str; 8] = [
    "embed",
    "pipeline",
    "relevance",
    "fusion",
    "graph",
    "scoring",
    "vector",
    "turn",
];

/// The whole configuration of an engine. [`Default`] is the documented defaults.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct Config {
    /// The embedder of each kind, for a new index.
    pub embed: EmbedConfig,
    /// Retrieval sizes and k-selection.
    pub pipeline: PipelineConfig,
    /// The relevance gate, per kind.
    pub relevance: RelevanceConfig,
    /// Fusion of the two legs, per kind.
    pub fusion: FusionConfig,
    /// Weighting of fused scores, per kind.
    pub scoring: ScoringConfig,
    /// The HNSW graph.
    pub vector: VectorConfig,
    /// The entity graph's leg.
    pub graph: crate::config::GraphConfig,
    /// A turn's scenario detection and shared token budget.
    pub turn: TurnConfig,
}

/// `[embed]`: the embedder of each kind, as [`EmbedderSpec`](crate::EmbedderSpec)
/// strings (`minilm`, `static`, `none`, `static:DIR`, `bert:DIR`). A new index records
/// them; a kind left out takes its default ([`EmbedderSpecs::default`](crate::EmbedderSpecs)).
/// Naming another embedder than the one an existing index recorded is an error at
/// open: `ruche reembed` moves a kind to another model.
///
/// ```toml
/// [embed]
/// chunks = "minilm"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct EmbedConfig {
    /// Rules' embedder.
    pub rules: Option<String>,
    /// Chunks' embedder.
    pub chunks: Option<String>,
    /// Scenarios' embedder.
    pub scenarios: Option<String>,
    /// Tools' embedder.
    pub tools: Option<String>,
}

impl EmbedConfig {
    /// The defaults ([`EmbedderSpecs::default`](crate::EmbedderSpecs)) with the kinds
    /// named here replaced.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) naming the key.
    pub fn specs(&self) -> Result<crate::EmbedderSpecs> {
        let mut specs = crate::EmbedderSpecs::default();
        for kind in crate::Kind::ALL {
            if let Some(spec) = self.spec(kind)? {
                specs = specs.with(kind, spec);
            }
        }
        Ok(specs)
    }

    /// The spec named for `kind`, if any.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) naming the key.
    pub fn spec(&self, kind: crate::Kind) -> Result<Option<crate::EmbedderSpec>> {
        let named = match kind {
            crate::Kind::Rule => &self.rules,
            crate::Kind::Chunk => &self.chunks,
            crate::Kind::Scenario => &self.scenarios,
            crate::Kind::Tool => &self.tools,
        };
        named
            .as_deref()
            .map(|text| {
                text.parse().map_err(|err: Error| {
                    Error::invalid_config(format!("embed.{}", kind.plural()), err.to_string())
                })
            })
            .transpose()
    }
}

/// `[pipeline]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct PipelineConfig {
    /// `[pipeline.retrieval]`.
    pub retrieval: RetrievalConfig,
}

/// `[pipeline.retrieval]`: how many candidates and results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct RetrievalConfig {
    /// The most hits returned (default 30).
    pub max_k: usize,
    /// The fewest hits returned when there are enough (default 1).
    pub min_k: usize,
    /// Candidates each leg fetches before fusion (default 30).
    pub max_candidates: usize,
    /// Filtered candidate sets up to this size are scanned exactly instead of searched
    /// in the graph (default 6,000: about where, for 384-d vectors, the 8-bit exact scan
    /// and a graph search cost the same; below it the scan is as fast and its recall is
    /// 1.0, above it the graph is faster).
    pub exact_scan_threshold: usize,
    /// `[pipeline.retrieval.rule_selection]`: how many rules a search returns (default
    /// `adaptive_k`, as seed 000 recommends).
    pub rule_selection: SelectionConfig,
    /// `[pipeline.retrieval.memory_selection]`: how many chunks a search returns (default
    /// `band` 0.15 with `max_hits` 6: recall first, what scores within 0.15 of the best
    /// chunk, at most six, one when it clearly leads; see `docs/relevance.md` for the
    /// measurements on LoCoMo, SciFact and identifier lookups).
    pub memory_selection: SelectionConfig,
    /// `[pipeline.retrieval.scenario_selection]`: how many scenarios a search returns
    /// (default seed 000's `entropy` with `low_entropy_k = 1`, `medium_entropy_k = 2`,
    /// `high_entropy_k = 3`: "usually one scenario is active").
    pub scenario_selection: SelectionConfig,
    /// `[pipeline.retrieval.tool_selection]`: how many tools a search returns (default
    /// `band` 0.15 with `max_hits` 8: the tools within 0.15 of the best, at most eight;
    /// an agent cannot put dozens of tool schemas in its prompt. On StableToolBench's
    /// 2,479 APIs it returns 6.4 per request, where seed 000's `elbow` returned 23).
    pub tool_selection: SelectionConfig,
    /// Seed 000's `embedding_provider` key, accepted so that its example configuration
    /// loads unchanged: the index's embedder is chosen when it is created (`ruche index
    /// --embedder`, [`EngineBuilder::with_embedder`](crate::EngineBuilder::with_embedder)), so the
    /// only value with a meaning here is `"default"`; any other is an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_provider: Option<String>,
    /// A tool search whose message asks for several things (sentences, or clauses joined
    /// by `, and`, `and also`, `as well as`, `plus`, `then`) also searches each part, and
    /// the short list takes the whole message's tools and each part's in turn, at most
    /// this many (default 6; 0: the whole message only). Multi-tool requests get each
    /// of their tools (StableToolBench, `docs/relevance.md`).
    pub tool_parts: usize,
    /// A rules search whose message says several things (cut as for `tool_parts`, and
    /// at a plain ` and ` between two parts of at least 3 words) also searches each part,
    /// and a rule that a part passes on its own comes after the whole message's (default
    /// true): "my parcel is late again and I just want to end my life" gets the safety
    /// rule that the whole message's vector, mostly about the parcel, does not reach.
    pub rule_parts: bool,
}

impl RetrievalConfig {
    /// The selection strategy of `kind`.
    pub fn selection(&self, kind: crate::Kind) -> &SelectionConfig {
        match kind {
            crate::Kind::Rule => &self.rule_selection,
            crate::Kind::Chunk => &self.memory_selection,
            crate::Kind::Scenario => &self.scenario_selection,
            crate::Kind::Tool => &self.tool_selection,
        }
    }
}

impl Default for RetrievalConfig {
    fn default() -> RetrievalConfig {
        RetrievalConfig {
            max_k: 30,
            min_k: 1,
            max_candidates: 30,
            exact_scan_threshold: 6_000,
            rule_selection: SelectionConfig::AdaptiveK {
                alpha: None,
                min_score: None,
            },
            memory_selection: SelectionConfig::Band {
                band: Some(0.15),
                max_hits: Some(6),
                min_score: None,
            },
            scenario_selection: SelectionConfig::Entropy {
                low_entropy_k: Some(1),
                medium_entropy_k: Some(2),
                high_entropy_k: Some(3),
                min_score: None,
            },
            tool_selection: SelectionConfig::Band {
                band: Some(0.15),
                max_hits: Some(8),
                min_score: None,
            },
            embedding_provider: None,
            tool_parts: 6,
            rule_parts: true,
        }
    }
}

/// `[fusion]`: how the two legs are fused, one section per kind.
///
/// The defaults come from the experiments in `crates/research/docs/fusion-experiments.md` (SciFact as
/// chunk retrieval, BANKING77 as rule matching): rules `0.8 * vector + 0.2 *
/// min_max(bm25)` with their patterns in the text leg, chunks seed 003's `0.7 * vector +
/// 0.3 * min_max(bm25)`, query-adaptive weights off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct FusionConfig {
    /// Adapt the leg weights to the query (seed 004: identifiers favour the text leg,
    /// questions the vector leg). Overridable per request.
    pub adaptive: bool,
    /// Multiply the leg weights by the feedback factors (seed 004), once a leg has at
    /// least 10 feedback entries.
    pub feedback: bool,
    /// Index a rule's patterns in the text leg too (they always feed the vector leg).
    /// Default true: on BANKING77 with 10 patterns per rule it lifts BM25 alone from 43%
    /// to 72% top-1, and the hybrid with it.
    pub patterns_in_text: bool,
    /// `[fusion.rules]`.
    pub rules: FusionSpec,
    /// `[fusion.chunks]`.
    pub chunks: FusionSpec,
    /// `[fusion.scenarios]` (default as rules, with BM25 normalised over fixed bounds).
    pub scenarios: FusionSpec,
    /// `[fusion.tools]` (default as rules).
    pub tools: FusionSpec,
}

impl FusionConfig {
    /// The fusion spec of `kind`.
    pub fn spec(&self, kind: crate::Kind) -> FusionSpec {
        match kind {
            crate::Kind::Rule => self.rules,
            crate::Kind::Chunk => self.chunks,
            crate::Kind::Scenario => self.scenarios,
            crate::Kind::Tool => self.tools,
        }
    }
}

impl Default for FusionConfig {
    fn default() -> FusionConfig {
        let rules = FusionSpec {
            vector_weight: 0.8,
            text_weight: 0.2,
            ..FusionSpec::default()
        };
        FusionConfig {
            adaptive: false,
            feedback: false,
            patterns_in_text: true,
            rules,
            chunks: FusionSpec::default(),
            // A scenario search has a handful of candidates: min-max makes the best BM25
            // 1 however weak; BM25 over fixed bounds [0, 10] keeps its level (CLINC150 val
            // with domains as scenarios: 0.846-0.858 first right, against 0.834-0.854).
            scenarios: FusionSpec {
                text_normalization: crate::fusion::Normalization::FixedBounds,
                ..rules
            },
            tools: rules,
        }
    }
}

/// `[scoring]`: one section per kind.
///
/// The formulas are seed 003's for rules and seed 001's for chunks, with weights that
/// put relevance first: priority and scope can move a rule past another whose hybrid
/// score is at most 0.04 higher, importance and recency a chunk past another whose
/// hybrid score is at most 0.1 higher (the seeds' own weights, [`RuleWeights::default`]
/// and [`ChunkWeights::default`], let a priority of 100 or an importance of 10 outrank
/// what the query is about). On CLINC150 with priorities drawn at random from 0..=100,
/// the seed's rule weights drop the right rule first from 83% to 54% of in-scope
/// messages; these weights keep 83%. Every hit passed the relevance gate first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct ScoringConfig {
    /// `[scoring.rules]`: priority and scope weighting.
    pub rules: RuleWeights,
    /// `[scoring.chunks]`: relevance, importance and recency.
    pub chunks: ChunkWeights,
    /// How much a turn of a conversation draws on its neighbouring turns (the chunks
    /// of its context written just before and after it, within an hour of it): its
    /// hybrid score is at least this times its better neighbour's, so that the turn
    /// that holds an answer comes back beside the turn the question's words match. In
    /// `0..=1`; 0 turns it off (default 0.85, measured on LoCoMo; see
    /// `docs/relevance.md`).
    pub neighbour_weight: f64,
    /// The share of what a conversation turn's hybrid score leaves below 1 that it gains
    /// when the query names its speaker (`metadata.speaker`, or the `Name: ` a turn of a
    /// context opens with) and other candidates are not that speaker's: "What do
    /// Melanie's kids like?" is answered by Melanie's turns. In `0..=1`; 0 turns it off
    /// (default 0.2, measured on LoCoMo; see `docs/relevance.md`).
    pub speaker_weight: f64,
}

impl Default for ScoringConfig {
    fn default() -> ScoringConfig {
        ScoringConfig {
            rules: RuleWeights {
                hybrid_weight: 1.0,
                priority_weight: 0.03,
                scope_weight: 0.01,
                ..RuleWeights::default()
            },
            chunks: ChunkWeights {
                relevance_weight: 0.9,
                importance_weight: 0.06,
                recency_weight: 0.04,
                ..ChunkWeights::default()
            },
            neighbour_weight: 0.85,
            speaker_weight: 0.2,
        }
    }
}

/// `[vector]`: the HNSW graph and its maintenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct VectorConfig {
    /// Maximum connections per node and layer (`M`, default 16, at most 256).
    pub max_connections: usize,
    /// Candidate list size while building (default 200).
    pub ef_construction: usize,
    /// Candidate list size while searching (default 128).
    pub ef_search: usize,
    /// A checkpoint is stored once this many vectors were added since the last one
    /// (default 20,000; also at a clean close).
    pub checkpoint_every: usize,
    /// The graph is rebuilt when this fraction of its entries are dead (default 0.25).
    pub rebuild_dead_fraction: f64,
}

impl Default for VectorConfig {
    fn default() -> VectorConfig {
        let params = HnswParams::default();
        VectorConfig {
            max_connections: params.max_connections,
            ef_construction: params.ef_construction,
            ef_search: params.ef_search,
            checkpoint_every: 20_000,
            rebuild_dead_fraction: 0.25,
        }
    }
}

impl VectorConfig {
    pub(crate) fn params(&self) -> HnswParams {
        HnswParams {
            max_connections: self.max_connections,
            ef_construction: self.ef_construction,
            ef_search: self.ef_search,
        }
    }
}

impl Config {
    /// Reads `path` if given, else the file named by `RUCHE_CONFIG` if set, then the
    /// `RUCHE_*` environment overrides, over the defaults; and validates the result.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) naming the key for
    /// an unknown key, a value of the wrong type or out of range, or an unreadable file.
    pub fn load(path: Option<&Path>) -> Result<Config> {
        let mut figment = Figment::new();
        let from_env = std::env::var_os("RUCHE_CONFIG").map(std::path::PathBuf::from);
        if let Some(path) = path.map(Path::to_path_buf).or(from_env) {
            if !path.is_file() {
                return Err(Error::invalid_config(
                    "config",
                    format!("cannot read config file {}", path.display()),
                ));
            }
            figment = figment.merge(Toml::file(path));
        }
        // Only the sections of the configuration: other `RUCHE_*` variables (`RUCHE_LOG`,
        // `RUCHE_CONFIG`) are not configuration keys.
        let env = Env::prefixed("RUCHE_")
            .filter(|key| {
                let section = key.as_str().split("__").next().unwrap_or_default();
                SECTIONS.iter().any(|s| section.eq_ignore_ascii_case(s))
            })
            .split("__");
        figment = figment.merge(env);
        Config::extract(figment)
    }

    /// The defaults under `user` (the file's and environment's values): a selection
    /// section that names another strategy than the default's replaces the default's
    /// whole (its parameters are of another strategy), one that names none or the same
    /// is merged into it (`RUCHE_PIPELINE__RETRIEVAL__RULE_SELECTION__ALPHA=2.0`).
    fn over_defaults(user: Figment) -> Figment {
        let mut defaults = serde_json::to_value(Config::default()).expect("the defaults serialise");
        if let Some(retrieval) = defaults
            .pointer_mut("/pipeline/retrieval")
            .and_then(serde_json::Value::as_object_mut)
        {
            for section in [
                "rule_selection",
                "memory_selection",
                "scenario_selection",
                "tool_selection",
            ] {
                let named = user
                    .find_value(&format!("pipeline.retrieval.{section}.strategy"))
                    .ok()
                    .and_then(|value| value.into_string());
                let default = retrieval
                    .get(section)
                    .and_then(|s| s.get("strategy"))
                    .and_then(serde_json::Value::as_str);
                if named.is_some_and(|named| Some(named.as_str()) != default) {
                    retrieval.remove(section);
                }
            }
        }
        Figment::from(Serialized::defaults(defaults)).merge(user)
    }

    /// Parses a TOML document over the defaults (no environment), and validates it.
    ///
    /// # Errors
    ///
    /// As [`Config::load`].
    pub fn from_toml(toml: &str) -> Result<Config> {
        Config::extract(Figment::new().merge(Toml::string(toml)))
    }

    /// `user` over the defaults, extracted and validated.
    fn extract(user: Figment) -> Result<Config> {
        let config: Config = Config::over_defaults(user).extract().map_err(|err| {
            let key = err.path.join(".");
            let key = if key.is_empty() {
                "config".to_string()
            } else {
                key
            };
            Error::invalid_config(key, err.kind.to_string())
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every value.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) naming the key.
    pub fn validate(&self) -> Result<()> {
        let retrieval = &self.pipeline.retrieval;
        let most = crate::model::MAX_COUNT;
        for (key, value) in [
            ("pipeline.retrieval.max_k", retrieval.max_k),
            (
                "pipeline.retrieval.max_candidates",
                retrieval.max_candidates,
            ),
        ] {
            if !(1..=most).contains(&value) {
                return Err(Error::invalid_config(
                    key,
                    format!("must be between 1 and {most}, got {value}"),
                ));
            }
        }
        if retrieval.min_k > retrieval.max_k {
            return Err(Error::invalid_config(
                "pipeline.retrieval.min_k",
                format!(
                    "must not exceed max_k ({} > {})",
                    retrieval.min_k, retrieval.max_k
                ),
            ));
        }
        for (name, selection) in [
            ("rule_selection", &retrieval.rule_selection),
            ("memory_selection", &retrieval.memory_selection),
            ("scenario_selection", &retrieval.scenario_selection),
            ("tool_selection", &retrieval.tool_selection),
        ] {
            selection.validate(&format!("pipeline.retrieval.{name}"))?;
        }
        if let Some(provider) = &retrieval.embedding_provider
            && provider != "default"
        {
            return Err(Error::invalid_config(
                "pipeline.retrieval.embedding_provider",
                format!(
                    "only \"default\" is accepted (the index's embedder is chosen when it is \
                     created, with `--embedder`), got {provider:?}"
                ),
            ));
        }

        for kind in crate::Kind::ALL {
            self.embed.spec(kind)?;
        }
        self.relevance.validate("relevance")?;
        self.graph.validate("graph")?;
        self.turn.validate()?;
        for kind in crate::Kind::ALL {
            self.fusion
                .spec(kind)
                .validate(&format!("fusion.{}", kind.plural()))?;
        }
        self.scoring.rules.validate("scoring.rules")?;
        self.scoring.chunks.validate("scoring.chunks")?;
        if !(0.0..=1.0).contains(&self.scoring.neighbour_weight) {
            return Err(Error::invalid_config(
                "scoring.neighbour_weight",
                format!("must be in 0..=1, got {}", self.scoring.neighbour_weight),
            ));
        }
        if !(0.0..=1.0).contains(&self.scoring.speaker_weight) {
            return Err(Error::invalid_config(
                "scoring.speaker_weight",
                format!("must be in 0..=1, got {}", self.scoring.speaker_weight),
            ));
        }
        self.vector.params().validate()?;
        if !(0.0..=1.0).contains(&self.vector.rebuild_dead_fraction) {
            return Err(Error::invalid_config(
                "vector.rebuild_dead_fraction",
                "must be in 0..=1",
            ));
        }
        if self.vector.checkpoint_every == 0 {
            return Err(Error::invalid_config(
                "vector.checkpoint_every",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

/// `[graph]`: the graph leg.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct GraphConfig {
    /// Run the graph leg when the query names a known entity (default true). Queries
    /// without entity mentions never run it.
    pub enabled: bool,
    /// The graph leg's weight against the two other legs' 1.0 (default 0.5: seed 004's
    /// graph 0.8 against keyword 0.6 + semantic 1.0).
    pub weight: f64,
    /// How far paths go: 1 (documents that mention a query entity) or 2 (and the
    /// documents that share an entity with those; default).
    pub hops: u8,
    /// What each hop beyond the first keeps of a path's weight (default 0.5).
    pub decay: f64,
    /// An entity mentioned by more documents than this is no bridge (default 50).
    pub max_fanout: usize,
    /// How many documents reached through the hits kept come back with them whatever
    /// their score, best first, as long as the hits then number at most `1 +
    /// second_hops`, and at least the best one (default 2; 0: only what the selection
    /// keeps). The second hop
    /// of "how do I reach the customer of order NW-1?" is one of the customer's notes,
    /// which share no word with the question: when the ranking cannot tell which one
    /// answers it, two kept are better than one guessed.
    pub second_hops: usize,
}

impl Default for GraphConfig {
    fn default() -> GraphConfig {
        GraphConfig {
            enabled: true,
            weight: 0.5,
            hops: 2,
            decay: 0.5,
            max_fanout: 50,
            second_hops: 2,
        }
    }
}

impl GraphConfig {
    pub(crate) fn validate(&self, key: &str) -> Result<()> {
        if !self.weight.is_finite() || self.weight < 0.0 {
            return Err(Error::invalid_config(
                format!("{key}.weight"),
                format!("must be a finite number >= 0, got {}", self.weight),
            ));
        }
        if !(1..=2).contains(&self.hops) {
            return Err(Error::invalid_config(
                format!("{key}.hops"),
                format!("must be 1 or 2, got {}", self.hops),
            ));
        }
        if !(0.0..=1.0).contains(&self.decay) {
            return Err(Error::invalid_config(
                format!("{key}.decay"),
                format!("must be in 0..=1, got {}", self.decay),
            ));
        }
        if self.second_hops > 10 {
            return Err(Error::invalid_config(
                format!("{key}.second_hops"),
                format!("must be between 0 and 10, got {}", self.second_hops),
            ));
        }
        if self.max_fanout == 0 || self.max_fanout > crate::model::MAX_COUNT {
            return Err(Error::invalid_config(
                format!("{key}.max_fanout"),
                format!(
                    "must be between 1 and {}, got {}",
                    crate::model::MAX_COUNT,
                    self.max_fanout
                ),
            ));
        }
        Ok(())
    }
}

/// The graph's construction and search parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HnswParams {
    /// Maximum connections per node and layer (`M`), 2..=256.
    pub max_connections: usize,
    /// Candidate list size while building (`ef_construction`).
    pub ef_construction: usize,
    /// Candidate list size while searching (`ef`); raised to `k` when `k` is larger.
    pub ef_search: usize,
}

impl Default for HnswParams {
    fn default() -> HnswParams {
        HnswParams {
            max_connections: 16,
            ef_construction: 200,
            ef_search: 128,
        }
    }
}

impl HnswParams {
    pub(crate) fn validate(&self) -> Result<()> {
        if !(2..=256).contains(&self.max_connections) {
            return Err(Error::invalid_config(
                "vector.max_connections",
                format!("must be in 2..=256, got {}", self.max_connections),
            ));
        }
        if self.ef_construction == 0 {
            return Err(Error::invalid_config(
                "vector.ef_construction",
                "must be at least 1",
            ));
        }
        if self.ef_search == 0 {
            return Err(Error::invalid_config(
                "vector.ef_search",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

/// A part of a turn that spends its token budget: the rules to follow, what is known from
/// memory, the tools that fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnPart {
    /// The rules to follow.
    Rules,
    /// What is known from memory.
    Memory,
    /// The tools that fit.
    Tools,
}

impl TurnPart {
    /// The three parts, in the default order.
    pub const ALL: [TurnPart; 3] = [TurnPart::Rules, TurnPart::Memory, TurnPart::Tools];

    /// The part's name: `rules`, `memory` or `tools`.
    pub fn name(self) -> &'static str {
        match self {
            TurnPart::Rules => "rules",
            TurnPart::Memory => "memory",
            TurnPart::Tools => "tools",
        }
    }
}

/// `[turn]`: how [`Engine::turn`](crate::Reader::turn) detects the scenario and shares its
/// token budget.
///
/// ```toml
/// [turn]
/// order = ["rules", "memory", "tools"]  # who spends the budget first
/// keep_priority = 100                   # rules at or above it come before every part
/// scenario_confidence = 0.5             # the relevance that activates a scenario
/// switch_margin = 0.2                   # how far below it the active one must be to be left
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct TurnConfig {
    /// The order the parts spend a shared budget in, each part its hits best first
    /// (default rules, then memory, then tools). Each part once.
    pub order: Vec<TurnPart>,
    /// Rules of at least this priority spend the budget before every part, whatever
    /// the order: a rule of top priority is never dropped for memory (default 100).
    pub keep_priority: i32,
    /// The relevance (in `[0, 1]`) the best scenario of a message needs for the turn to
    /// activate it when the agent has none active, or to leave the active one for it
    /// (default 0.5).
    pub scenario_confidence: f64,
    /// An active scenario is left for the message's best one only when its own relevance
    /// is at least this far below the best's (in `[0, 1]`; default 0.2, chosen on
    /// CLINC150 train with its domains as scenarios, 9 in 10 messages taken to stay:
    /// `scripts/turn_scenarios.py`).
    pub switch_margin: f64,
}

impl Default for TurnConfig {
    fn default() -> TurnConfig {
        TurnConfig {
            order: TurnPart::ALL.to_vec(),
            keep_priority: 100,
            scenario_confidence: 0.5,
            switch_margin: 0.2,
        }
    }
}

impl TurnConfig {
    /// Checks the order (each part once), the confidence and the margin (in `[0, 1]`).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) naming the key.
    pub fn validate(&self) -> Result<()> {
        let mut seen = std::collections::BTreeSet::new();
        if self.order.len() != TurnPart::ALL.len() || !self.order.iter().all(|p| seen.insert(*p)) {
            return Err(Error::invalid_config(
                "turn.order",
                "must name each of rules, memory and tools once",
            ));
        }
        if !(0.0..=1.0).contains(&self.scenario_confidence) {
            return Err(Error::invalid_config(
                "turn.scenario_confidence",
                format!("must be in [0, 1], got {}", self.scenario_confidence),
            ));
        }
        if !(0.0..=1.0).contains(&self.switch_margin) {
            return Err(Error::invalid_config(
                "turn.switch_margin",
                format!("must be in [0, 1], got {}", self.switch_margin),
            ));
        }
        Ok(())
    }
}
