//! A document's vectors as rows: each as stored, with the inverse of its norm, and a
//! centroid for a document of several. The catalog's arenas keep them and the mapped
//! base stores them, so that a cosine is `dot(q, row) * inverse`.

use crate::model::id::{CENTROID_ROW, DocId, VectorKey};
use crate::model::metric::{self, inverse_norm};

use super::record::StoredVectors;

/// A document's vectors as its kind's arena keeps them: each row as stored (a rule's
/// centroid, which is derived, normalised), with the inverse of its norm, so that the
/// arena is the one copy of each vector, exact, and a cosine is `dot(q, row) * inverse`.
#[derive(Debug, Clone, Default)]
pub(crate) struct DocRows {
    /// `rows.len() x dim`, row-major.
    pub(crate) data: Vec<f32>,
    /// Per row, the inverse of its norm.
    pub(crate) inverse: Vec<f32>,
    pub(crate) rows: Vec<u16>,
}

impl DocRows {
    /// The rows of the present vectors of `stored` that have a direction; `None` when
    /// none has.
    ///
    /// A document with several vectors (a rule with patterns) also gets their centroid,
    /// the normalised mean of its normalised vectors, as row [`CENTROID_ROW`]: the rule's
    /// direction as a whole. A message close to most of a rule's examples but to none of
    /// them in particular matches it through the centroid (a prototype, as in few-shot
    /// classification): on CLINC150 and BANKING77 with 10 patterns per rule it lifts the
    /// bundled embedder's vector leg from 74% to 79% and from 67% to 72% top-1.
    pub(crate) fn from_stored(stored: &StoredVectors) -> Option<DocRows> {
        let dim = stored.indexed().next()?.1.len();
        let capacity = DocRows::capacity(stored);
        let mut data = vec![0.0; capacity * dim];
        let mut inverse = vec![0.0; capacity];
        let rows = DocRows::fill(stored, dim, &mut data, &mut inverse);
        data.truncate(rows.len() * dim);
        inverse.truncate(rows.len());
        (!rows.is_empty()).then_some(DocRows {
            data,
            inverse,
            rows,
        })
    }

    /// The most rows `stored` can take: its vectors, and a centroid when it has two.
    pub(crate) fn capacity(stored: &StoredVectors) -> usize {
        let n = stored.indexed().count();
        n + usize::from(n >= 2)
    }

    /// Writes the rows of the vectors of `stored` that have `dim` dimensions and a
    /// direction into `data` and their inverse norms into `inverse` (room for at least
    /// [`DocRows::capacity`] rows), as [`DocRows::from_stored`] does; returns which
    /// vector each row written is.
    pub(crate) fn fill(
        stored: &StoredVectors,
        dim: usize,
        data: &mut [f32],
        inverse: &mut [f32],
    ) -> Vec<u16> {
        let mut rows = Vec::new();
        for (idx, vector) in stored.indexed() {
            if vector.len() != dim {
                continue;
            }
            let Some(inv) = inverse_norm(vector) else {
                continue;
            };
            let at = rows.len() * dim;
            data[at..at + dim].copy_from_slice(vector);
            inverse[rows.len()] = inv;
            rows.push(u16::try_from(idx).expect("vector index checked at validation"));
        }
        if rows.len() >= 2 {
            let (filled, rest) = data.split_at_mut(rows.len() * dim);
            let centroid = &mut rest[..dim];
            centroid.fill(0.0);
            for (row, &inv) in filled.chunks_exact(dim).zip(inverse.iter()) {
                for (sum, x) in centroid.iter_mut().zip(row) {
                    *sum += x * inv;
                }
            }
            if metric::normalize(centroid)
                && let Some(inv) = inverse_norm(centroid)
            {
                inverse[rows.len()] = inv;
                rows.push(CENTROID_ROW);
            }
        }
        rows
    }

    pub(crate) fn dim(&self) -> usize {
        self.data.len() / self.rows.len().max(1)
    }

    pub(crate) fn view(&self) -> VectorsRef<'_> {
        VectorsRef {
            data: &self.data,
            inverse: &self.inverse,
            rows: &self.rows,
        }
    }
}

/// A document's rows in its arena, borrowed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct VectorsRef<'a> {
    /// `rows.len() x dim`, row-major, as stored.
    pub(crate) data: &'a [f32],
    /// Per row, the inverse of its norm.
    pub(crate) inverse: &'a [f32],
    pub(crate) rows: &'a [u16],
}

impl VectorsRef<'_> {
    /// The best cosine of `query` (normalised) over the rows, and which row gave it.
    pub(crate) fn best(&self, query: &[f32]) -> (f32, u16) {
        self.data
            .chunks_exact(query.len().max(1))
            .zip(self.inverse)
            .zip(self.rows.iter())
            .map(|((v, &inv), &row)| (metric::dot(query, v) * inv, row))
            .fold((f32::NEG_INFINITY, 0), |best, next| {
                if next.0 > best.0 { next } else { best }
            })
    }

    /// The cosine of `query` (normalised) and the document's centroid ([`Self::centroid`]).
    pub(crate) fn centroid_cosine(&self, query: &[f32]) -> Option<f32> {
        let (row, inverse) = self.centroid()?;
        (row.len() == query.len()).then(|| metric::dot(query, row) * inverse)
    }

    /// The rows normalised (each component times its row's inverse norm: the one
    /// definition of a normalised row, so that a graph's copy and the catalog's agree
    /// bit for bit).
    pub(crate) fn normalised(self) -> Normalised {
        let dim = self.data.len() / self.rows.len().max(1);
        Normalised {
            data: normalised_rows(self.data, self.inverse, dim),
            rows: self.rows.to_vec(),
        }
    }
}

/// A document's vectors normalised, owned (what a graph is built from, and what
/// [`crate::document_vectors`] gives another backend).
#[derive(Debug, Clone)]
pub(crate) struct Normalised {
    /// `rows.len() x dim`, row-major.
    pub(crate) data: Vec<f32>,
    pub(crate) rows: Vec<u16>,
}

impl Normalised {
    /// Each row with its graph key.
    pub(crate) fn keyed(
        &self,
        doc: DocId,
        dim: usize,
    ) -> impl Iterator<Item = (&[f32], VectorKey)> {
        self.data
            .chunks_exact(dim.max(1))
            .zip(self.rows.iter())
            .map(move |(v, &row)| (v, VectorKey::new(doc, usize::from(row))))
    }
}

/// `data` (rows of `dim`) with each row times its inverse norm.
pub(crate) fn normalised_rows(data: &[f32], inverse: &[f32], dim: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(data.len());
    for (row, &inv) in data.chunks_exact(dim.max(1)).zip(inverse) {
        out.extend(row.iter().map(|x| x * inv));
    }
    out
}
