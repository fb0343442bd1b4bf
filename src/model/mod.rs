//! The model: what an index holds and what a search is about, with no storage and no
//! ranking: documents (rules, chunks, scenarios, tools), their ids and kinds, time, the
//! vector math, and the limits every layer checks against.

pub(crate) mod doc;
pub(crate) mod id;
pub(crate) mod leg;
pub(crate) mod metric;
pub(crate) mod scenario;
pub(crate) mod time;
pub(crate) mod tool;

/// The largest `top_k`, `max_k`, `min_k` or `max_candidates` a search accepts (and the
/// configuration): enough for any agent, small enough to allocate.
pub(crate) const MAX_COUNT: usize = 1_000_000;
