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

#[cfg(feature = "bundled-model")]
mod minilm;
#[cfg(feature = "bundled-model")]
pub use minilm::MiniLmEmbedder;

mod spec;
mod static_model;

pub use spec::{EmbedderSpec, EmbedderSpecs};
pub use static_model::StaticEmbedder;

use std::sync::Arc;

use crate::{Kind, Result};

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

/// The embedder of each kind of document (none: that kind's vectors are supplied, or it
/// has none). Kinds with the same model share one embedder: a message is embedded once
/// per distinct embedder ([`Embedders::distinct`]).
#[derive(Clone, Default)]
pub struct Embedders {
    /// By kind, in the order of [`Kind::ALL`].
    by_kind: [Option<Arc<dyn Embedder>>; Kind::COUNT],
}

impl Embedders {
    /// The same embedder (or none) for every kind.
    pub fn uniform(embedder: Option<Arc<dyn Embedder>>) -> Embedders {
        Embedders {
            by_kind: std::array::from_fn(|_| embedder.clone()),
        }
    }

    /// One embedder (or none) per kind, in the order of [`Kind::ALL`].
    pub fn from_kinds(by_kind: [Option<Arc<dyn Embedder>>; Kind::COUNT]) -> Embedders {
        Embedders { by_kind }
    }

    /// The embedder of `kind`.
    pub fn get(&self, kind: Kind) -> Option<&Arc<dyn Embedder>> {
        self.by_kind[kind.index()].as_ref()
    }

    /// These embedders with `kind`'s replaced.
    #[must_use]
    pub fn with(mut self, kind: Kind, embedder: Option<Arc<dyn Embedder>>) -> Embedders {
        self.by_kind[kind.index()] = embedder;
        self
    }

    /// Whether no kind has an embedder.
    pub fn is_empty(&self) -> bool {
        self.by_kind.iter().all(Option::is_none)
    }

    /// The one embedder of every kind, when they all share one.
    pub fn as_uniform(&self) -> Option<&Arc<dyn Embedder>> {
        let first = self.by_kind[0].as_ref()?;
        self.by_kind
            .iter()
            .all(|e| e.as_ref().is_some_and(|e| same(e, first)))
            .then_some(first)
    }

    /// Each distinct embedder once, with the kinds that use it (kinds without one are
    /// left out).
    pub fn distinct(&self) -> Vec<(Arc<dyn Embedder>, Vec<Kind>)> {
        let mut groups: Vec<(Arc<dyn Embedder>, Vec<Kind>)> = Vec::new();
        for kind in Kind::ALL {
            let Some(embedder) = self.get(kind) else {
                continue;
            };
            match groups.iter_mut().find(|(e, _)| same(e, embedder)) {
                Some((_, kinds)) => kinds.push(kind),
                None => groups.push((Arc::clone(embedder), vec![kind])),
            }
        }
        groups
    }
}

/// Whether two embedders make the same vectors: the same model (and dimension).
fn same(a: &Arc<dyn Embedder>, b: &Arc<dyn Embedder>) -> bool {
    Arc::ptr_eq(a, b) || (a.model_id() == b.model_id() && a.dimensions() == b.dimensions())
}

impl std::fmt::Debug for Embedders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut map = f.debug_map();
        for kind in Kind::ALL {
            map.entry(
                &kind.plural(),
                &self.get(kind).map(|e| e.model_id().to_string()),
            );
        }
        map.finish()
    }
}
