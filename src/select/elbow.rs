//! The `elbow` strategy: cut at the first large relative drop.

use serde_json::{Map, Value};

use super::param;
use super::strategy::{SelectionInput, SelectionResult, SelectionStrategy};

/// Cuts at the first significant score drop between neighbours (the "elbow").
///
/// Walking down the list, the first `min_k` items are always kept. After that the walk
/// stops at the first item whose score is below `min_score`, or whose relative drop from
/// the previous score, `(previous - score) / previous`, exceeds `drop_threshold`. A
/// previous score of zero or below never triggers the relative drop (there is no ratio to
/// take), only `min_score` and `max_k` stop the walk then. The selection is a prefix of
/// the input.
///
/// Best for lists with a clear separation between relevant and irrelevant results.
///
/// ## Defaults
///
/// `drop_threshold` 0.15, `min_score` 0.5 (seed 000).
///
/// ## Metadata
///
/// `drop_threshold` and `min_score` (numbers), the parameters used.
///
/// # Example
///
/// ```
/// use ruchedb::select::{ElbowSelection, SelectionStrategy};
///
/// let elbow = ElbowSelection::default();
/// let result = elbow.select_scores(&[0.92, 0.89, 0.71, 0.45, 0.42], 30, 1)?;
/// // 0.89 -> 0.71 is a 20% drop, above the 15% threshold.
/// assert_eq!(result.selected, [0, 1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ElbowSelection {
    /// The relative drop above which the walk stops, in `0..=1`.
    drop_threshold: f64,
    /// Items scoring below this (after the first `min_k`) stop the walk, in `0..=1`.
    min_score: f64,
}

impl Default for ElbowSelection {
    fn default() -> Self {
        ElbowSelection {
            drop_threshold: 0.15,
            min_score: 0.5,
        }
    }
}

impl ElbowSelection {
    /// Sets the relative drop above which the walk stops.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) (key
    /// `drop_threshold`) unless `drop_threshold` is in `0..=1`.
    pub fn with_drop_threshold(mut self, drop_threshold: f64) -> crate::Result<Self> {
        check_drop_threshold("drop_threshold", drop_threshold)?;
        self.drop_threshold = drop_threshold;
        Ok(self)
    }

    /// Sets the score below which items are not kept (beyond the first `min_k`).
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

    /// Returns the relative drop above which the walk stops.
    pub fn drop_threshold(&self) -> f64 {
        self.drop_threshold
    }

    /// Returns the score below which items are not kept (beyond the first `min_k`).
    pub fn min_score(&self) -> f64 {
        self.min_score
    }
}

/// Checks a `drop_threshold`: a relative drop, in `0..=1`.
pub(crate) fn check_drop_threshold(key: &str, drop_threshold: f64) -> crate::Result<()> {
    param::float_in(key, drop_threshold, 0.0, 1.0)
}

impl SelectionStrategy for ElbowSelection {
    fn name(&self) -> &'static str {
        "elbow"
    }

    fn select_sorted(&self, input: SelectionInput<'_>) -> SelectionResult<usize> {
        let scores = input.scores();
        let considered = &scores[..scores.len().min(input.max_k())];
        let mut n_selected = 0;
        for (score_idx, &score) in considered.iter().enumerate() {
            if score_idx >= input.min_k() {
                if score < self.min_score {
                    break;
                }
                if score_idx > 0 {
                    let previous = considered[score_idx - 1];
                    if previous > 0.0 && (previous - score) / previous > self.drop_threshold {
                        break;
                    }
                }
            }
            n_selected = score_idx + 1;
        }

        let mut metadata = Map::new();
        metadata.insert("drop_threshold".into(), Value::from(self.drop_threshold));
        metadata.insert("min_score".into(), Value::from(self.min_score));
        SelectionResult::prefix(self.name(), scores, n_selected, metadata)
    }
}
