//! ruche: an embedded hybrid search engine for AI agents.
//!
//! An agent keeps its **rules** ("when CONDITION, do ACTION", with a priority and a
//! scope) and its **chunks** (memory and knowledge, with an importance and a timestamp)
//! in a local index directory. Each search runs BM25 (tantivy) and vector search (HNSW)
//! side by side, fuses the two scores, weights them by priority and scope (rules) or
//! importance and recency (chunks), and sorts with a deterministic tiebreak.
#![doc(test(attr(deny(warnings))))]

mod analysis;
mod catalog;
mod chunk;
mod config;
mod doc;
mod embed;
mod engine;
mod error;
pub mod eval;
mod feedback;
mod fusion;
mod id;
mod policy;
mod query;
mod select;
mod store;
mod text;
mod time;
mod vector;

pub use crate::analysis::{adapt, analyze, Entity, EntityKind, QueryAnalysis};
pub use crate::chunk::{
    importance_score, lexical_similarity, ChunkQuery, ChunkSelector, ChunkWeights, Memory,
    MemoryType, ScoredChunk,
};
pub use crate::config::{
    Config, FusionConfig, PipelineConfig, RetrievalConfig, ScoringConfig, VectorConfig,
};
pub use crate::doc::{Chunk, Document, Rule, Scope, DEFAULT_TENANT};
#[cfg(feature = "bert")]
pub use crate::embed::BertEmbedder;
pub use crate::embed::{Embedder, EmbedderSpec, StaticEmbedder};
pub use crate::engine::{CounterStats, Engine, EngineBuilder, GraphStats, Stats};
pub use crate::error::{Error, ErrorKind, Result};
pub use crate::feedback::{FeedbackEntry, FeedbackWindow, Leg, LegFeedback};
pub use crate::fusion::{
    fuse, min_max, Fused, FusionKind, FusionMethod, FusionSpec, FusionWeights, LegFactors,
    LegScores, Legs, Normalization, NormalizationKind, RuleScore, RuleWeights,
};
pub use crate::id::Kind;
pub use crate::policy::{
    ActionSelectionPolicy, BeamSearchPolicy, BeamSearchPolicyBuilder, Candidate, GreedyPolicy,
    MctsPolicy, MctsPolicyBuilder, PolicyContext, PolicyRegistry, SamplingPolicy,
    SamplingPolicyBuilder,
};
pub use crate::query::{
    FoundBy, FusionSummary, Hit, LegContributions, ScoreBreakdown, SearchRequest, SearchResponse,
    SelectionSummary, Timings,
};
pub use crate::select::{
    AdaptiveKSelection, AutocutSelection, ClusteringSelection, ElbowSelection, EntropySelection,
    FixedKSelection, Scored, SelectionConfig, SelectionInput, SelectionResult, SelectionStrategy,
    SelectionStrategyExt,
};
pub use crate::time::Timestamp;
pub use crate::vector::HnswParams;
