//! The `fixed_k` strategy: the baseline top-k.

use serde_json::{Map, Value};

use super::param;
use super::strategy::{SelectionInput, SelectionResult, SelectionStrategy};

/// Keeps the first `k` items, the baseline that the other strategies improve on.
///
/// The number kept is `k`, capped by `max_k` and by the number of items, and raised to
/// `min_k`. When `min_score` is set, items below it are dropped first and the count is
/// capped by what remains: then fewer than `min_k` items can come back. The selection is
/// a prefix of the input.
///
/// ## Defaults
///
/// `k` 5, no `min_score` (seed 000).
///
/// ## Metadata
///
/// `fixed_k`, the configured `k`.
///
/// # Example
///
/// ```
/// use ruchedb::select::{FixedKSelection, SelectionStrategy};
///
/// let fixed = FixedKSelection::default().with_k(3)?.with_min_score(Some(0.5))?;
/// let result = fixed.select_scores(&[0.92, 0.89, 0.45, 0.42], 30, 1)?;
/// assert_eq!(result.selected, [0, 1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct FixedKSelection {
    /// The number of items to keep, at least 1.
    k: usize,
    /// When set, items scoring below it are never kept, in `0..=1`.
    min_score: Option<f64>,
}

impl Default for FixedKSelection {
    fn default() -> Self {
        FixedKSelection {
            k: 5,
            min_score: None,
        }
    }
}

impl FixedKSelection {
    /// Sets the number of items to keep.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) (key `k`) if `k` is 0.
    pub fn with_k(mut self, k: usize) -> crate::Result<Self> {
        check_k("k", k)?;
        self.k = k;
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

    /// Returns the number of items to keep.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Returns the score below which items are never kept, if set.
    pub fn min_score(&self) -> Option<f64> {
        self.min_score
    }
}

/// Checks a `k`: at least 1 (seed 000).
pub(crate) fn check_k(key: &str, k: usize) -> crate::Result<()> {
    param::count_at_least(key, k, 1)
}

impl SelectionStrategy for FixedKSelection {
    fn name(&self) -> &'static str {
        "fixed_k"
    }

    fn select_sorted(&self, input: SelectionInput<'_>) -> SelectionResult<usize> {
        let scores = input.scores();
        // Scores are sorted, so the ones at or above `min_score` are a prefix.
        let n_eligible = match self.min_score {
            Some(min_score) => scores.partition_point(|&score| score >= min_score),
            None => scores.len(),
        };
        let target_k = self.k.min(input.max_k()).min(n_eligible).max(input.min_k());

        let mut metadata = Map::new();
        metadata.insert("fixed_k".into(), Value::from(self.k));
        SelectionResult::prefix(self.name(), scores, target_k.min(n_eligible), metadata)
    }
}
