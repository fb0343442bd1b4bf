//! The text leg: "here is a query text, give me BM25 candidates".
//!
//! A tantivy index over the text of every live document, keyed by the document's
//! [`DocId`] (an indexed fast field). It stores no document: results are ordinals that
//! the engine resolves in its catalog. The commit payload records the sequence number of
//! the last change the index includes, which is how [`crate::Engine`] finds out on open
//! that the index is behind the store and must catch up (or be rebuilt).

pub(crate) mod directory;
mod guard;
mod index;
mod query;
mod schema;
mod stats;
mod tokenizer;
mod walk;

#[cfg(test)]
mod tests;

pub(crate) use self::directory::Protected;
pub(crate) use self::index::TextIndex;
pub(crate) use self::query::{AnalysedDoc, TextMatch, TextPlan};
pub(crate) use self::stats::ScopeStats;
pub(crate) use self::walk::UserId;
