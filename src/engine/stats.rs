//! What [`Engine::stats`](crate::Reader::stats) reports: counts, vector spaces, graphs and counters.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use crate::Kind;

use super::state::Reader;

/// Counts and state of an index, as [`Engine::stats`](crate::Reader::stats) reports them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Stats {
    /// Live rules.
    pub rules: usize,
    /// Live chunks.
    pub chunks: usize,
    /// Live scenarios.
    pub scenarios: usize,
    /// Live tools.
    pub tools: usize,
    /// Distinct tenants.
    pub tenants: usize,
    /// Distinct entities in the entity graph (per kind and tenant), documents' own ids
    /// included.
    pub entities: usize,
    /// The vector dimension, once known, when every kind has the same.
    pub dimensions: Option<usize>,
    /// The model that makes the vectors (`external` when records bring their own), or
    /// each kind's (`rules=MODEL@DIM,...`) when they differ.
    pub model_id: Option<String>,
    /// The embedders the index loads at open (an [`EmbedderSpecs`](crate::EmbedderSpecs)
    /// string), if recorded.
    pub embedder: Option<String>,
    /// Each kind's vector space.
    pub spaces: KindSpaces,
    /// The sequence number of the last committed change.
    pub last_seq: u64,
    /// Documents in the text index.
    pub text_docs: u64,
    /// Segments of the text index.
    pub text_segments: usize,
    /// The rule graph.
    pub rule_graph: GraphStats,
    /// The chunk graph.
    pub chunk_graph: GraphStats,
    /// The scenario graph.
    pub scenario_graph: GraphStats,
    /// The tool graph.
    pub tool_graph: GraphStats,
    /// Bytes sled uses on disk.
    pub store_bytes: u64,
    /// What the engine did since it was opened.
    pub counters: CounterStats,
}

/// One kind's vector space, once known (part of [`Stats`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct KindSpace {
    /// The dimension of its vectors.
    pub dimensions: Option<usize>,
    /// The model that makes them (`external`: the documents bring their own).
    pub model_id: Option<String>,
}

/// Each kind's vector space (part of [`Stats`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct KindSpaces {
    /// Rules'.
    pub rules: KindSpace,
    /// Chunks'.
    pub chunks: KindSpace,
    /// Scenarios'.
    pub scenarios: KindSpace,
    /// Tools'.
    pub tools: KindSpace,
}

impl KindSpaces {
    /// The space of `kind`.
    pub fn get(&self, kind: Kind) -> &KindSpace {
        match kind {
            Kind::Rule => &self.rules,
            Kind::Chunk => &self.chunks,
            Kind::Scenario => &self.scenarios,
            Kind::Tool => &self.tools,
        }
    }
}

/// The state of one HNSW graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct GraphStats {
    /// Entries in the graph, dead ones included.
    pub points: usize,
    /// Live vectors of the kind.
    pub live_vectors: usize,
    /// Every upsert up to this sequence number is in the graph.
    pub covered_seq: u64,
    /// The sequence number the stored checkpoint covers.
    pub checkpoint_seq: u64,
    /// Live documents not yet in the graph (scanned exactly).
    pub tail_docs: usize,
}

/// What the engine did since it was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CounterStats {
    /// Graphs loaded from a checkpoint at open.
    pub graph_checkpoint_loads: u64,
    /// Graphs rebuilt from scratch (to drop dead entries, or after a lost checkpoint).
    pub graph_rebuilds: u64,
    /// Vectors inserted into graphs.
    pub graph_vectors_inserted: u64,
    /// Graph checkpoints stored.
    pub graph_checkpoints: u64,
    /// Text indexes rebuilt from the store (missing or corrupt at open).
    pub text_rebuilds: u64,
    /// Change-log entries replayed into the text index at open.
    pub text_replayed: u64,
    /// Texts embedded by the embedder.
    pub embedded_texts: u64,
    /// Texts whose embedding came from the embedding cache.
    pub embedding_cache_hits: u64,
}

impl Reader {
    /// Counts and state of the index.
    pub fn stats(&self) -> Stats {
        let inner = &self.inner;
        // The graphs load from their checkpoints in the background after open: report
        // them once loaded, not as empty.
        inner.worker.wait_loaded();
        let meta = inner.local.store.meta();
        let catalog = inner.local.snapshot();
        let graph_stats = |kind: Kind| {
            let covered = inner.local.vectors.covered(kind);
            GraphStats {
                points: inner.local.vectors.points(kind),
                live_vectors: catalog.n_vectors(kind),
                covered_seq: covered,
                checkpoint_seq: inner.local.vectors.checkpointed(kind),
                tail_docs: catalog.vectors_after(kind, covered).count(),
            }
        };
        let c = &inner.counters;
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        Stats {
            rules: catalog.count(Kind::Rule),
            chunks: catalog.count(Kind::Chunk),
            scenarios: catalog.count(Kind::Scenario),
            tools: catalog.count(Kind::Tool),
            tenants: catalog.tenants(),
            entities: catalog.graph.size().1,
            dimensions: meta.dimensions,
            model_id: meta.model_id.clone(),
            embedder: meta.embedder.clone(),
            spaces: {
                let space = |kind: Kind| {
                    let space = meta.space(kind);
                    KindSpace {
                        dimensions: space.as_ref().map(|s| s.dimensions),
                        model_id: space.map(|s| s.model_id),
                    }
                };
                KindSpaces {
                    rules: space(Kind::Rule),
                    chunks: space(Kind::Chunk),
                    scenarios: space(Kind::Scenario),
                    tools: space(Kind::Tool),
                }
            },
            last_seq: meta.last_seq,
            text_docs: inner.local.text.num_docs(),
            text_segments: inner.local.text.segment_count(),
            rule_graph: graph_stats(Kind::Rule),
            chunk_graph: graph_stats(Kind::Chunk),
            scenario_graph: graph_stats(Kind::Scenario),
            tool_graph: graph_stats(Kind::Tool),
            store_bytes: inner.local.store.size_on_disk(),
            counters: CounterStats {
                graph_checkpoint_loads: load(&c.graph_checkpoint_loads),
                graph_rebuilds: load(&c.graph_rebuilds),
                graph_vectors_inserted: load(&c.graph_vectors_inserted),
                graph_checkpoints: load(&c.graph_checkpoints),
                text_rebuilds: load(&c.text_rebuilds),
                text_replayed: load(&c.text_replayed),
                embedded_texts: load(&c.embedded_texts),
                embedding_cache_hits: load(&c.embedding_cache_hits),
            },
        }
    }
}
