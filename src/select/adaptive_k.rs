//! The `adaptive_k` strategy: cut at the first drop much larger than the mean drop.

use serde_json::{Map, Value};

use super::param;
use super::strategy::{SelectionInput, SelectionResult, SelectionStrategy};

/// Cuts at the first drop between neighbours that exceeds `alpha` times the mean drop.
///
/// The first `max_k` scores are considered, and of those the ones at or above `min_score`
/// (when none is, the first `min_k`). If no more than `min_k` remain, all of them are
/// kept (reason `below_min_k`): this is the one case where fewer than `min_k` items come
/// back, because `min_score` removed the others. With a single remaining score there is
/// no drop to measure and the first `min_k` items are kept (reason `no_variance`).
/// Otherwise the cut falls after the first item whose drop to the next exceeds
/// `alpha * mean_drop`, but never before `min_k` items. The selection is a prefix of the
/// input.
///
/// A general-purpose strategy for varied score distributions; raise `alpha` to keep more.
///
/// ## Defaults
///
/// `alpha` 1.5, `min_score` 0.4 (seed 000).
///
/// ## Metadata
///
/// Either `reason` (`below_min_k` or `no_variance`) alone, or `alpha`, `mean_drop` (the
/// mean absolute difference between neighbours) and `cutoff_idx` (the number of items
/// kept).
///
/// # Example
///
/// ```
/// use ruchedb::select::{AdaptiveKSelection, SelectionStrategy};
///
/// let adaptive = AdaptiveKSelection::default();
/// let result = adaptive.select_scores(&[0.92, 0.89, 0.71, 0.45, 0.42], 30, 1)?;
/// // The drops are 0.03, 0.18, 0.26, 0.03 (mean 0.125): 0.18 is not above 1.5 * 0.125,
/// // 0.26 is.
/// assert_eq!(result.selected, [0, 1, 2]);
/// assert_eq!(result.metadata["cutoff_idx"], 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptiveKSelection {
    /// Sensitivity: a drop larger than `alpha` times the mean drop cuts, in `0.5..=5.0`.
    alpha: f64,
    /// Scores below this are not considered (unless none is at or above it), in `0..=1`.
    min_score: f64,
}

impl Default for AdaptiveKSelection {
    fn default() -> Self {
        AdaptiveKSelection {
            alpha: 1.5,
            min_score: 0.4,
        }
    }
}

impl AdaptiveKSelection {
    /// Sets the sensitivity: a drop larger than `alpha` times the mean drop cuts.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) (key `alpha`) unless
    /// `alpha` is in `0.5..=5.0`.
    pub fn with_alpha(mut self, alpha: f64) -> crate::Result<Self> {
        check_alpha("alpha", alpha)?;
        self.alpha = alpha;
        Ok(self)
    }

    /// Sets the score below which items are not considered.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) (key `min_score`)
    /// unless `min_score` is in `0..=1`.
    pub fn with_min_score(mut self, min_score: f64) -> crate::Result<Self> {
        param::min_score("min_score", min_score)?;
        self.min_score = min_score;
        Ok(self)
    }

    /// Returns the sensitivity.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Returns the score below which items are not considered.
    pub fn min_score(&self) -> f64 {
        self.min_score
    }
}

/// Checks an `alpha`: in `0.5..=5.0` (seed 000).
pub(crate) fn check_alpha(key: &str, alpha: f64) -> crate::Result<()> {
    param::float_in(key, alpha, 0.5, 5.0)
}

impl SelectionStrategy for AdaptiveKSelection {
    fn name(&self) -> &'static str {
        "adaptive_k"
    }

    fn select_sorted(&self, input: SelectionInput<'_>) -> SelectionResult<usize> {
        let scores = input.scores();
        let min_k = input.min_k();
        let considered = &scores[..scores.len().min(input.max_k())];
        // Scores are sorted, so the ones at or above `min_score` are a prefix.
        let n_valid = considered.partition_point(|&score| score >= self.min_score);
        let n_remaining = if n_valid > 0 {
            n_valid
        } else {
            min_k.min(considered.len())
        };
        let remaining = &considered[..n_remaining];

        let mut metadata = Map::new();
        if n_remaining <= min_k {
            metadata.insert("reason".into(), Value::from("below_min_k"));
            return SelectionResult::prefix(self.name(), scores, n_remaining, metadata);
        }
        if n_remaining == 1 {
            // One score and `min_k` is 0: there is no drop to compare.
            metadata.insert("reason".into(), Value::from("no_variance"));
            return SelectionResult::prefix(self.name(), scores, min_k, metadata);
        }

        let drops = remaining.windows(2).map(|pair| (pair[0] - pair[1]).abs());
        let mean_drop = drops.clone().sum::<f64>() / (n_remaining - 1) as f64;
        let threshold = mean_drop * self.alpha;
        let cutoff_idx = drops
            .clone()
            .position(|drop| drop > threshold)
            .map_or(n_remaining, |drop_idx| drop_idx + 1)
            .max(min_k);

        metadata.insert("alpha".into(), Value::from(self.alpha));
        metadata.insert("mean_drop".into(), Value::from(mean_drop));
        metadata.insert("cutoff_idx".into(), Value::from(cutoff_idx));
        SelectionResult::prefix(self.name(), scores, cutoff_idx, metadata)
    }
}
