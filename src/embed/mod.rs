//! Embedders: turn text into vectors for the vector leg.
//!
//! The engine calls an [`Embedder`] for records and queries that carry no vector of their
//! own. Implementations return L2-normalised vectors of [`Embedder::dimensions`]
//! components; a text that embeds to nothing (empty, or only unknown tokens) comes back
//! as an all-zero vector, which the engine treats as "no vector" (the vector leg is
//! skipped for it, never NaN).

#[cfg(feature = "bert")]
mod bert;
#[cfg(feature = "bert")]
pub use bert::BertEmbedder;

mod spec;
mod static_model;

pub use spec::EmbedderSpec;
pub use static_model::StaticEmbedder;

use crate::Result;

/// Turns texts into vectors.
///
/// Implementations must be deterministic (the same text gives the same vector) and
/// thread-safe: the engine embeds batches in parallel.
pub trait Embedder: Send + Sync {
    /// A stable identifier of the model (recorded in the index at creation).
    fn model_id(&self) -> &str;

    /// The number of components of every vector this embedder returns.
    fn dimensions(&self) -> usize;

    /// Whether the engine should cache this embedder's vectors (keyed by model id and
    /// text hash), so that re-importing unchanged text does not embed it again.
    ///
    /// The default is `true`. A model that embeds faster than a storage lookup (the
    /// bundled static model takes about 2 µs per sentence) returns `false`.
    fn cacheable(&self) -> bool {
        true
    }

    /// Embeds every text of `texts`, in order.
    ///
    /// Each vector has [`Embedder::dimensions`] components and is L2-normalised, or is
    /// all zeros when the text has nothing to embed.
    ///
    /// # Errors
    ///
    /// Returns [`ErrorKind::Embedder`](crate::ErrorKind::Embedder) when the model fails.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
}
