//! The local index ([`LocalIndex`]): where candidates come from on one machine, a
//! [`Retriever`](crate::retrieve::Retriever) as the Milvus backend is. The only place
//! that names sled (the store, the source of truth), tantivy (the text leg) and hnsw_rs
//! (the vector leg's graph builder); none of their types leaves this module.

pub(crate) mod catalog;
mod commit;
pub(crate) mod graph;
pub(crate) mod hnsw;
mod index;
mod search;
pub(crate) mod store;
pub(crate) mod text;
pub(crate) mod vector;

pub(crate) use commit::Committed;
pub(crate) use index::LocalIndex;
pub(crate) use search::start_helper_for;

/// A map keyed by user strings (tenants, contexts, ids, entities): foldhash, seeded per
/// process, is several times faster than SipHash on short strings, and the catalog
/// hashes a few for every document at every open.
pub(crate) type StrMap<V> = std::collections::HashMap<String, V, foldhash::fast::RandomState>;
