//! The HNSW graphs of the vector leg, as built and as stored: the builder's distances
//! (hnsw_rs), the graph and its checkpoints, and the flat form readers walk. What a
//! graph is searched over (the catalog's vectors) is the vector leg's ([`super::vector`]).

mod distance;
mod flat;
mod graph;

pub(crate) use self::distance::Cosine;
pub(crate) use self::flat::{FlatGraph, NodeCodes};
pub(crate) use self::graph::{CheckpointManifest, Graph, SCRATCH_PREFIX, best_cosine};
#[cfg(test)]
pub(crate) use self::graph::{hnsw_graph_file, is_keyed};
