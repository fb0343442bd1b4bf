//! The collections of an index and every request sent to Milvus.

/// Shorthand: a Milvus result as a ruchedb result, its error named with `$location`
/// (`location::error`).
macro_rules! call {
    ($location:expr, $e:expr) => {
        $e.map_err(|err| $crate::store::error($location, err))
    };
}

mod collections;
mod location;
mod requests;
mod rows;
#[cfg(test)]
mod tests;

pub(crate) use self::collections::{
    Collections, FORMAT, Meta, create_meta, drop_all, ensure_pair, exists, read_meta,
};
pub use self::location::Location;
pub(crate) use self::location::error;
pub(crate) use self::requests::{
    bm25, count, delete_keys, delete_where, dense, fetch_docs, fetch_vectors, query_docs,
    write_docs,
};
pub(crate) use self::rows::{doc_key, vector_match};
