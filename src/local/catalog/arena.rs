//! The vectors of one kind's live documents in one contiguous block ([`Arena`]), so an
//! exact scan reads memory in order; each document owns a span of rows.

use std::sync::Arc;

use crate::Kind;
use crate::local::store::base::{BaseRows, MappedBase};
use crate::local::store::{DocRows, VectorsRef};
use crate::model::id::{CENTROID_ROW, DocId};
use crate::model::metric;

/// A document's place in its kind's arena: its span (which records its rows, and which
/// of its vectors each row is: 0 = main, 1.. = patterns, [`CENTROID_ROW`]).
#[derive(Debug)]
pub(crate) struct Vectors {
    pub(crate) slot: u32,
}

/// The rows of an arena, borrowed: `dim` floats each, as stored, with the inverse of
/// each row's norm and which vector of its document each row is. Rows
/// `0..base.inverse.len()` are a mapped base's, read in place; the rest are the
/// arena's own.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArenaView<'a> {
    pub(crate) base: BaseRows<'a>,
    pub(crate) own: BaseRows<'a>,
    pub(crate) dim: usize,
}

impl<'a> ArenaView<'a> {
    /// The segment that holds row `row`, and the row's place in it.
    #[inline]
    pub(crate) fn segment(&self, row: usize) -> (&BaseRows<'a>, usize) {
        let base_rows = self.base.inverse.len();
        if row < base_rows {
            (&self.base, row)
        } else {
            (&self.own, row - base_rows)
        }
    }

    /// Row `row` and its inverse norm.
    #[inline]
    pub(crate) fn row(&self, row: usize) -> Option<(&'a [f32], f32)> {
        let (segment, row) = self.segment(row);
        let inverse = *segment.inverse.get(row)?;
        let start = row * self.dim;
        Some((segment.data.get(start..start + self.dim)?, inverse))
    }

    /// `rows` rows from `start` (one document's: never across the two segments), and
    /// their inverse norms.
    pub(crate) fn rows(&self, start: usize, rows: usize) -> (&'a [f32], &'a [f32]) {
        let (segment, start) = self.segment(start);
        (
            &segment.data[start * self.dim..(start + rows) * self.dim],
            &segment.inverse[start..start + rows],
        )
    }

    /// Which vector of its document each of `rows` rows from `start` is.
    pub(crate) fn indices(&self, start: usize, rows: usize) -> &'a [u16] {
        let (segment, start) = self.segment(start);
        &segment.indices[start..start + rows]
    }

    /// The two segments: the base's rows, then the arena's own.
    pub(crate) fn segments(&self) -> [BaseRows<'a>; 2] {
        [self.base, self.own]
    }
}

impl<'a> VectorsRef<'a> {
    /// The document's centroid row (the only row of a document with one vector) and
    /// its inverse norm.
    pub(crate) fn centroid(self) -> Option<(&'a [f32], f32)> {
        let dim = self.data.len() / self.rows.len().max(1);
        let at = match self.rows {
            [_] => 0,
            rows => rows.iter().position(|&row| row == CENTROID_ROW)?,
        };
        Some((&self.data[at * dim..(at + 1) * dim], self.inverse[at]))
    }
}

/// A document's rows already in its arena (see [`Catalog::adopt_arena`]): the first row
/// and how many.
#[derive(Debug)]
pub(crate) struct Placed {
    pub(crate) start: u32,
    pub(crate) rows: usize,
}

/// The vectors of one kind's live documents, one contiguous block, so an exact scan
/// reads memory in order (about 50 ns per 384-d row on one core, against 150 for
/// vectors allocated one document at a time). This is the catalog's only copy of each
/// vector: as stored, with the inverse of each row's norm and which vector of its
/// document each row is beside it. A reader's arena starts as a mapped base's rows, read
/// in place; rows added later are the arena's own.
///
/// Each document owns a span of consecutive rows; a removed document's span stays, dead,
/// until dead rows outnumber live ones and [`Arena::compact`] copies the live spans down
/// (into the arena's own rows: the base is then let go).
#[derive(Debug, Default)]
pub(crate) struct Arena {
    /// Dimensions of every row (0 before the first).
    pub(crate) dim: usize,
    /// The mapped base whose rows are rows `0..base_rows`.
    pub(crate) base: Option<Arc<MappedBase>>,
    pub(crate) base_rows: usize,
    pub(crate) data: Vec<f32>,
    /// Per row, the inverse of its norm (a cosine is `dot(q, row) * inverse`).
    pub(crate) inverse: Vec<f32>,
    /// Per row, which vector of its document it is.
    pub(crate) indices: Vec<u16>,
    /// The rows normalised and quantized, row for row, for exact scans that read a
    /// quarter of the bytes: made by the first scan (an index searched through its
    /// graph never needs it), then kept up to date.
    pub(crate) quantized: std::sync::OnceLock<metric::Quantized>,
    pub(crate) spans: Vec<Span>,
    pub(crate) live_rows: usize,
    pub(crate) dead_rows: usize,
    /// Live spans of other than one row.
    pub(crate) uneven_spans: usize,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    pub(crate) doc: DocId,
    /// First row.
    pub(crate) start: u32,
    pub(crate) rows: u32,
    pub(crate) live: bool,
}

impl Arena {
    /// Every row.
    pub(crate) fn view(&self, kind: Kind) -> ArenaView<'_> {
        let base = match &self.base {
            Some(base) => base.rows(kind),
            None => BaseRows::default(),
        };
        ArenaView {
            base,
            own: BaseRows {
                data: &self.data,
                inverse: &self.inverse,
                indices: &self.indices,
            },
            dim: self.dim,
        }
    }

    /// The number of rows.
    pub(crate) fn rows(&self) -> usize {
        self.base_rows + self.inverse.len()
    }

    /// Appends a document's rows; returns its slot, or `None` when their dimensions are
    /// not the arena's (the store validates dimensions, so that is a bug, not user data).
    pub(crate) fn push(&mut self, doc: DocId, vectors: &DocRows) -> Option<u32> {
        let dim = vectors.dim();
        if self.dim == 0 {
            self.dim = dim;
        }
        if dim != self.dim || dim == 0 {
            debug_assert!(
                false,
                "vectors of {dim} dimensions in an arena of {}",
                self.dim
            );
            tracing::error!(
                dim,
                arena = self.dim,
                "vectors of another dimension ignored"
            );
            return None;
        }
        let start = u32::try_from(self.rows()).ok()?;
        let slot = u32::try_from(self.spans.len()).ok()?;
        self.data.extend_from_slice(&vectors.data);
        self.inverse.extend_from_slice(&vectors.inverse);
        self.indices.extend_from_slice(&vectors.rows);
        if let Some(quantized) = self.quantized.get_mut() {
            quantized.extend(&vectors.data, &vectors.inverse, dim);
        }
        self.spans.push(Span {
            doc,
            start,
            rows: vectors.rows.len() as u32,
            live: true,
        });
        self.live_rows += vectors.rows.len();
        self.uneven_spans += usize::from(vectors.rows.len() != 1);
        Some(slot)
    }

    /// Records a span whose rows are already in the arena; returns its slot.
    pub(crate) fn place(&mut self, doc: DocId, start: u32, rows: usize) -> Option<u32> {
        let slot = u32::try_from(self.spans.len()).ok()?;
        self.spans.push(Span {
            doc,
            start,
            rows: rows as u32,
            live: true,
        });
        self.live_rows += rows;
        self.uneven_spans += usize::from(rows != 1);
        Some(slot)
    }

    pub(crate) fn kill(&mut self, slot: u32) {
        let span = &mut self.spans[slot as usize];
        if span.live {
            span.live = false;
            self.live_rows -= span.rows as usize;
            self.dead_rows += span.rows as usize;
            self.uneven_spans -= usize::from(span.rows != 1);
        }
    }

    /// Whether enough rows are dead to copy the live ones down.
    pub(crate) fn wants_compaction(&self) -> bool {
        self.dead_rows >= 1_024 && self.dead_rows > self.live_rows
    }

    /// Drops the dead spans (and the base); returns each live document with its new
    /// slot.
    pub(crate) fn compact(&mut self, kind: Kind) -> Vec<(DocId, u32)> {
        let dim = self.dim;
        let mut data = Vec::with_capacity(self.live_rows * dim);
        let mut inverse = Vec::with_capacity(self.live_rows);
        let mut indices = Vec::with_capacity(self.live_rows);
        let mut quantized = self
            .quantized
            .get()
            .map(|_| metric::Quantized::with_capacity(self.live_rows, dim));
        let mut spans = Vec::with_capacity(self.spans.len());
        let mut moved = Vec::with_capacity(self.spans.len());
        {
            let view = self.view(kind);
            for span in self.spans.iter().filter(|span| span.live) {
                let (start, rows) = (span.start as usize, span.rows as usize);
                let new_start = inverse.len() as u32;
                let (block, block_inverse) = view.rows(start, rows);
                data.extend_from_slice(block);
                inverse.extend_from_slice(block_inverse);
                indices.extend_from_slice(view.indices(start, rows));
                if let (Some(to), Some(from)) = (quantized.as_mut(), self.quantized.get()) {
                    to.copy_rows(from, start, rows, dim);
                }
                moved.push((span.doc, spans.len() as u32));
                spans.push(Span {
                    start: new_start,
                    ..*span
                });
            }
        }
        self.base = None;
        self.base_rows = 0;
        self.data = data;
        self.inverse = inverse;
        self.indices = indices;
        self.quantized = quantized.map(std::sync::OnceLock::from).unwrap_or_default();
        self.spans = spans;
        self.dead_rows = 0;
        moved
    }

    /// Every live document's first row and number of rows, in arena order.
    pub(crate) fn spans(&self) -> impl Iterator<Item = (DocId, usize, usize)> + '_ {
        self.spans
            .iter()
            .filter(|span| span.live)
            .map(|span| (span.doc, span.start as usize, span.rows as usize))
    }
}
