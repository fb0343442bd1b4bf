//! ruche: an embedded hybrid search engine for AI agents.
//!
//! An agent keeps its **rules** ("when CONDITION, do ACTION", with a priority and a
//! scope: global, one scenario, one step) and its **chunks** (memory and knowledge, with
//! an importance and a timestamp) in a local index directory. Each search runs BM25
//! (tantivy) and vector search (HNSW) side by side, fuses the two scores, weights them by
//! priority and scope (rules) or importance and recency (chunks), sorts with a
//! deterministic tiebreak, and decides how many results to return with a dynamic
//! k-selection strategy. Action-selection policies then pick one action among the hits.
//! No server, no network: link it into the agent.
//!
//! # Quickstart
//!
//! ```
//! use ruchedb::{Chunk, Engine, Rule, Scope, SearchRequest, Timestamp};
//!
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("index");
//! // A new index embeds text with the bundled model (no files, no network), unless its
//! // first records bring their own vectors.
//! let engine = Engine::builder().create(&path)?;
//!
//! engine.upsert_rules([
//!     Rule::new("refund", "the customer asks for a refund", "check the order, then refund")
//!         .with_priority(60)
//!         .with_patterns(["I want my money back", "can I get reimbursed"]),
//!     Rule::new("confirm", "the customer confirms the return", "send the return label")
//!         .with_scope(Scope::step("returns", "confirm")),
//! ])?;
//! engine.upsert_chunks([
//!     Chunk::new("m1", "Prefers email over phone calls").with_importance(8)
//!         .with_created_at("2026-11-20T09:00:00Z".parse()?),
//! ])?;
//! engine.commit()?; // durable and visible
//!
//! let response = engine.search(&SearchRequest::rules("I want my money back"))?;
//! assert_eq!(response.hits[0].id, "refund");
//! let hit = &response.hits[0];
//! println!("{} {:.3} (vector {:?}, bm25 {:.2})", hit.id, hit.score, hit.breakdown.vector, hit.breakdown.bm25);
//!
//! let memory = engine.search(
//!     &SearchRequest::chunks("how should I contact them")
//!         .with_now("2026-11-21T12:00:00Z".parse::<Timestamp>()?),
//! )?;
//! assert_eq!(memory.hits[0].id, "m1");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Overview
//!
//! - [`Engine`] (built with [`Engine::builder`]) owns an index directory: `upsert_rules`,
//!   `upsert_chunks`, `delete`, `commit`, `search`, `get`, `export`, `stats`, `feedback`.
//! - [`Rule`], [`Chunk`], [`Scope`] are the documents; their serde form is the JSONL
//!   record format of the `ruche` command.
//! - [`SearchRequest`] → [`SearchResponse`]: hits with their [`ScoreBreakdown`]; the
//!   rest of a response (selection, fusion, gate, timings) is in [`query`].
//! - [`Config`]: every weight and threshold, from TOML and `RUCHE_*` variables; its
//!   sections are in [`config`].
//! - [`Embedder`] turns text into vectors: [`StaticEmbedder`] (bundled), `BertEmbedder`
//!   (feature `bert`), or your own.
//!
//! For advanced use, each stage is a module of pure building blocks, usable without an
//! index: [`fusion`] (score fusion), [`select`] (dynamic k-selection), [`relevance`]
//! (the relevance gate), [`chunk`] (relevance, importance, recency), [`policy`] (greedy,
//! sampling, beam search, MCTS), [`analysis`] (query analysis and adaptive weights),
//! [`feedback`], [`eval`] (metrics). [`retrieve`] is the seam for a retriever of your
//! own, and [`rank::search_with`] runs ruchedb's ranking over it; [`engine`] holds the
//! reports of maintenance.
//!
//! # Crate features
//!
//! - `bundled-model` (default): compiles the static embedding model (8 MB, distilled
//!   from all-MiniLM-L6-v2) into the binary, for [`EmbedderSpec::StaticBundled`].
//! - `bert`: `BertEmbedder`, the full all-MiniLM-L6-v2 transformer through candle.
//!
//! # Quirks
//!
//! - Writes are invisible until [`Engine::commit`]; a commit is atomic and durable.
//! - The HNSW graph is built in the background: documents it does not hold yet are
//!   scanned exactly, so they are searchable at once, and the graph checkpoint loads in
//!   the background after open. [`Engine::sync_graph`](crate::Reader::sync_graph) waits for it.
//! - Filtered candidate sets of up to 6,000 documents are scanned exactly (recall 1.0).
//! - An index keeps the embedder (and vector dimension) it was created with; change
//!   models with [`Engine::reembed`]. Without a named embedder, a new index uses the
//!   bundled model unless its first write brings its own vectors;
//!   [`EmbedderSpec::None`] makes a BM25-only index.
//! - A second process (or a second `Engine`) opening the same directory gets
//!   [`ErrorKind::Locked`].
#![doc(test(attr(deny(warnings))))]

pub mod analysis;
pub mod chunk;
pub mod config;
mod crash;
mod embed;
pub mod engine;
mod error;
pub mod eval;
pub mod feedback;
pub mod files;
pub mod fusion;
mod local;
mod model;
mod parallel;
pub mod policy;
pub mod query;
pub mod rank;
pub mod relevance;
pub mod retrieve;
pub mod select;
#[cfg(test)]
mod testing;
mod tokens;
pub mod turn;

pub use crate::config::Config;
#[cfg(feature = "bert")]
pub use crate::embed::BertEmbedder;
#[cfg(feature = "bundled-model")]
pub use crate::embed::MiniLmEmbedder;
pub use crate::embed::{Embedder, EmbedderSpec, EmbedderSpecs, Embedders, StaticEmbedder};
pub use crate::engine::{Engine, EngineBuilder, Reader, Stats};
pub use crate::error::{Error, ErrorKind, Result};
pub use crate::local::store::prepare::{VectorRows, document_vectors};
pub use crate::model::apply::Apply;
pub use crate::model::doc::{Chunk, DEFAULT_TENANT, Document, Relation, Rule, Scope};
pub use crate::model::id::Kind;
pub use crate::model::leg::{Leg, PerLeg};
pub use crate::model::scenario::{Scenario, Step};
pub use crate::model::source::Source;
pub use crate::model::time::Timestamp;
pub use crate::model::tool::Tool;
pub use crate::query::{Hit, ScoreBreakdown, SearchRequest, SearchResponse};
pub use crate::tokens::{TOKEN_ENCODING, count_tokens};
pub use crate::turn::{TurnRequest, TurnResponse};

/// The README's Rust code blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
