//! The `band` strategy: keep what scores close to the best, at most `max_hits` of it.

use serde_json::{Map, Value};

use super::param;
use super::strategy::{SelectionInput, SelectionResult, SelectionStrategy};

/// Keeps the items whose score is within `band` of the first item's score.
///
/// When the best hit clearly leads, it comes back alone; when several score alike, they
/// come back together. Meant for scores on an absolute scale, such as the engine's hybrid
/// relevance, where a gap of 0.05 means the same in every query (the ratio-based
/// strategies react to the spread of the tail instead). On SciFact it is the only
/// strategy that beats every fixed k (see `docs/relevance.md`).
///
/// The first `max_k` scores are considered (and at most `max_hits`, when set), and of
/// those the ones at or above `min_score`. The selection is a prefix of the input, at
/// least `min_k` items long (when that many pass `min_score`).
///
/// A wide band with a cap is a recall-first selection, what an agent's memory wants: up
/// to `max_hits` notes when several are about the question, one when it clearly leads
/// (an identifier found verbatim scores a whole point above the rest).
///
/// ## Defaults
///
/// `band` 0.04, no `max_hits`, no `min_score`.
///
/// ## Metadata
///
/// `band`, `floor` (the lowest score kept by the band, `best - band`) and `max_hits`
/// when set.
///
/// # Example
///
/// ```
/// use ruchedb::select::{BandSelection, SelectionStrategy};
///
/// let band = BandSelection::default().with_band(0.05)?;
/// let result = band.select_scores(&[0.82, 0.80, 0.71, 0.45], 30, 1)?;
/// assert_eq!(result.selected, [0, 1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct BandSelection {
    /// How far below the best score an item may be and still be kept, `0..=1`.
    band: f64,
    /// When set, at most this many items are kept (at least 1).
    max_hits: Option<usize>,
    /// When set, items scoring below it are never kept, in `0..=1`.
    min_score: Option<f64>,
}

impl Default for BandSelection {
    fn default() -> Self {
        BandSelection {
            band: 0.04,
            max_hits: None,
            min_score: None,
        }
    }
}

impl BandSelection {
    /// Sets the band.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) (key `band`) unless
    /// `band` is in `0..=1`.
    pub fn with_band(mut self, band: f64) -> crate::Result<Self> {
        check_band("band", band)?;
        self.band = band;
        Ok(self)
    }

    /// Sets (or, with `None`, removes) the score below which items are never kept.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) (key `min_score`)
    /// unless `min_score` is `None` or in `0..=1`.
    pub fn with_min_score(mut self, min_score: Option<f64>) -> crate::Result<Self> {
        if let Some(min_score) = min_score {
            param::min_score("min_score", min_score)?;
        }
        self.min_score = min_score;
        Ok(self)
    }

    /// Sets (or, with `None`, removes) the most items kept.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) (key `max_hits`)
    /// when `max_hits` is 0.
    pub fn with_max_hits(mut self, max_hits: Option<usize>) -> crate::Result<Self> {
        if let Some(max_hits) = max_hits {
            check_max_hits("max_hits", max_hits)?;
        }
        self.max_hits = max_hits;
        Ok(self)
    }

    /// Returns the band.
    pub fn band(&self) -> f64 {
        self.band
    }
}

/// Checks a `max_hits`: at least 1.
pub(crate) fn check_max_hits(key: &str, max_hits: usize) -> crate::Result<()> {
    if max_hits == 0 {
        return Err(crate::Error::invalid_config(
            key,
            "must be at least 1 (0 would keep nothing)",
        ));
    }
    Ok(())
}

/// Checks a `band`: a number in `0..=1`.
pub(crate) fn check_band(key: &str, band: f64) -> crate::Result<()> {
    param::float_in(key, band, 0.0, 1.0)
}

impl SelectionStrategy for BandSelection {
    fn name(&self) -> &'static str {
        "band"
    }

    fn select_sorted(&self, input: SelectionInput<'_>) -> SelectionResult<usize> {
        let scores = input.scores();
        let cap = self
            .max_hits
            .map_or(input.max_k(), |m| m.min(input.max_k()));
        let considered = &scores[..scores.len().min(cap)];
        let n_eligible = match self.min_score {
            Some(min_score) => considered.partition_point(|&score| score >= min_score),
            None => considered.len(),
        };
        let floor = considered.first().map_or(0.0, |best| best - self.band);
        let in_band = considered[..n_eligible].partition_point(|&score| score >= floor);
        let n = in_band.max(input.min_k()).min(n_eligible);

        let mut metadata = Map::new();
        metadata.insert("band".into(), Value::from(self.band));
        metadata.insert("floor".into(), Value::from(floor));
        if let Some(max_hits) = self.max_hits {
            metadata.insert("max_hits".into(), Value::from(max_hits));
        }
        SelectionResult::prefix(self.name(), scores, n, metadata)
    }
}
