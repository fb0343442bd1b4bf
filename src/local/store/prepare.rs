//! The vectors a document is stored with: those it carries, taken out of it, or its
//! texts embedded; the local index's writes and any other backend's
//! ([`document_vectors`], re-exported at the crate root) prepare them the same way.

use super::StoredVectors;
use super::rows::DocRows;
use crate::embed::Embedders;
use crate::model::doc::Document;
use crate::{Error, ErrorKind, Kind, Result};

/// The dimension each kind's vectors have in a batch: the first vector of a kind fixes
/// it, another of that kind must match.
#[derive(Default)]
pub(crate) struct KindDimensions(pub(crate) [Option<usize>; Kind::COUNT]);

impl KindDimensions {
    pub(crate) fn check(&mut self, kind: Kind, len: usize) -> Result<()> {
        match self.0[kind.index()] {
            Some(expected) if expected != len => Err(Error::new(ErrorKind::DimensionMismatch {
                expected,
                got: len,
            })),
            _ => {
                self.0[kind.index()] = Some(len);
                Ok(())
            }
        }
    }
}

/// Takes the vectors a document carries out of it, and lists the texts an embedder has
/// to embed for the rest (`embed`: there is an embedder): slot 0 the document's text,
/// slot `i + 1` example `i` (a rule's pattern). Examples are embedded only when none was
/// given.
pub(crate) fn split_vectors(
    doc: &mut Document,
    embed: bool,
) -> (StoredVectors, Vec<(usize, String)>) {
    let mut vectors = StoredVectors::default();
    let mut to_embed = Vec::new();
    let (given_main, given_examples) = doc.take_embeddings();
    vectors.external = given_main.is_some() || given_examples.is_some();
    vectors.main = given_main;
    let examples = doc.examples();
    vectors.patterns = match given_examples {
        Some(given) => given.into_iter().map(Some).collect(),
        None => vec![None; examples.len()],
    };
    if embed {
        if vectors.main.is_none() {
            to_embed.push((0, doc.text()));
        }
        if vectors.patterns.iter().all(Option::is_none) {
            for (i, example) in examples.iter().enumerate() {
                to_embed.push((i + 1, example.clone()));
            }
        }
    }
    (vectors, to_embed)
}

/// A document's normalised vectors, each with the part of the document it embeds.
pub type VectorRows = Vec<(crate::query::VectorMatch, Vec<f32>)>;

/// The vectors the local index keeps for each document, for a backend that stores them
/// elsewhere: the vectors a document carries (taken out of it), or its texts embedded by
/// `embedder`; each normalised, with a rule's centroid when it has several (see
/// [`VectorMatch`](crate::query::VectorMatch)). A document with no vector gets none.
///
/// # Errors
///
/// [`ErrorKind::DimensionMismatch`] when vectors of one kind with different dimensions
/// meet, and the embedders' errors.
pub fn document_vectors(docs: &mut [Document], embedders: &Embedders) -> Result<Vec<VectorRows>> {
    let mut stored = Vec::with_capacity(docs.len());
    let groups = embedders.distinct();
    let mut to_embed: Vec<Vec<(usize, usize, String)>> = vec![Vec::new(); groups.len()];
    for (doc_idx, doc) in docs.iter_mut().enumerate() {
        let kind = doc.kind();
        let group = groups.iter().position(|(_, kinds)| kinds.contains(&kind));
        let (vectors, texts) = split_vectors(doc, group.is_some());
        if let Some(group) = group {
            to_embed[group].extend(texts.into_iter().map(|(slot, text)| (doc_idx, slot, text)));
        }
        stored.push(vectors);
    }
    for ((embedder, _), to_embed) in groups.iter().zip(&to_embed) {
        if to_embed.is_empty() {
            continue;
        }
        let texts: Vec<&str> = to_embed.iter().map(|(_, _, t)| t.as_str()).collect();
        let embedded = embedder.embed_batch(&texts)?;
        for ((doc_idx, slot, _), vector) in to_embed.iter().zip(embedded) {
            // An all-zero vector means "nothing to embed".
            if vector.iter().all(|x| *x == 0.0) {
                continue;
            }
            let vectors = &mut stored[*doc_idx];
            if *slot == 0 {
                vectors.main = Some(vector);
            } else {
                vectors.patterns[slot - 1] = Some(vector);
            }
        }
    }
    let mut dimensions = KindDimensions::default();
    let mut out = Vec::with_capacity(stored.len());
    for (doc, vectors) in docs.iter().zip(&stored) {
        for (_, v) in vectors.indexed() {
            dimensions.check(doc.kind(), v.len())?;
        }
        let rows = match DocRows::from_stored(vectors) {
            Some(rows) => {
                let dim = rows.dim();
                let normalised = rows.view().normalised();
                normalised
                    .rows
                    .iter()
                    .zip(normalised.data.chunks_exact(dim))
                    .map(|(&row, v)| (crate::query::VectorMatch::from_row(row), v.to_vec()))
                    .collect()
            }
            None => Vec::new(),
        };
        out.push(rows);
    }
    Ok(out)
}
