//! The `entropy` strategy: take more items when the scores are alike.

use serde_json::{Map, Value};

use super::param;
use super::strategy::{SelectionInput, SelectionResult, SelectionStrategy};

/// Picks how many items to keep from the Shannon entropy of the score distribution.
///
/// The items at or above `min_score` are kept as candidates (when fewer than `min_k` are,
/// the first `min_k` items instead). The first `max_k` candidate scores are normalised to
/// sum to 1 and their entropy is computed in nats. Low entropy (below 1.0: a clear winner)
/// keeps `low_entropy_k` items, medium entropy (below 2.0) `medium_entropy_k`, and high
/// entropy (an ambiguous query) `high_entropy_k`; the number is then clamped to the
/// candidates, `max_k` and at least `min_k`. The selection is a prefix of the input.
///
/// A negative score carries no probability mass (it counts as 0 in the normalisation);
/// when the candidate scores sum to 0 the distribution is taken as uniform.
///
/// ## Defaults
///
/// `low_entropy_k` 3, `medium_entropy_k` 5, `high_entropy_k` 10, `min_score` 0.3
/// (seed 000).
///
/// ## Metadata
///
/// `entropy` (nats); and, unless there was no candidate at all, `target_k` (the clamped
/// number of items) and `confidence` (`high` below 1.0, `medium` below 2.0, `low`).
///
/// # Example
///
/// ```
/// use ruchedb::select::{EntropySelection, SelectionStrategy};
///
/// let entropy = EntropySelection::default();
/// let result = entropy.select_scores(&[0.75, 0.74, 0.73, 0.2], 30, 1)?;
/// // Three near-equal candidates: entropy ln 3 = 1.10 nats, medium, so up to 5 items.
/// assert_eq!(result.selected, [0, 1, 2]);
/// assert_eq!(result.metadata["confidence"], "medium");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct EntropySelection {
    /// Items kept when the entropy is below 1.0 nat, at least 1.
    low_entropy_k: usize,
    /// Items kept when the entropy is in `1.0..2.0` nats, at least 1.
    medium_entropy_k: usize,
    /// Items kept when the entropy is 2.0 nats or more, at least 1.
    high_entropy_k: usize,
    /// Items scoring below this are not candidates (beyond the first `min_k`), in `0..=1`.
    min_score: f64,
}

impl Default for EntropySelection {
    fn default() -> Self {
        EntropySelection {
            low_entropy_k: 3,
            medium_entropy_k: 5,
            high_entropy_k: 10,
            min_score: 0.3,
        }
    }
}

impl EntropySelection {
    /// Sets the number of items kept when the entropy is below 1.0 nat.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) (key `low_entropy_k`)
    /// if `low_entropy_k` is 0.
    pub fn with_low_entropy_k(mut self, low_entropy_k: usize) -> crate::Result<Self> {
        check_k("low_entropy_k", low_entropy_k)?;
        self.low_entropy_k = low_entropy_k;
        Ok(self)
    }

    /// Sets the number of items kept when the entropy is in `1.0..2.0` nats.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) (key
    /// `medium_entropy_k`) if `medium_entropy_k` is 0.
    pub fn with_medium_entropy_k(mut self, medium_entropy_k: usize) -> crate::Result<Self> {
        check_k("medium_entropy_k", medium_entropy_k)?;
        self.medium_entropy_k = medium_entropy_k;
        Ok(self)
    }

    /// Sets the number of items kept when the entropy is 2.0 nats or more.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) (key
    /// `high_entropy_k`) if `high_entropy_k` is 0.
    pub fn with_high_entropy_k(mut self, high_entropy_k: usize) -> crate::Result<Self> {
        check_k("high_entropy_k", high_entropy_k)?;
        self.high_entropy_k = high_entropy_k;
        Ok(self)
    }

    /// Sets the score below which items are not candidates.
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

    /// Returns the number of items kept when the entropy is below 1.0 nat.
    pub fn low_entropy_k(&self) -> usize {
        self.low_entropy_k
    }

    /// Returns the number of items kept when the entropy is in `1.0..2.0` nats.
    pub fn medium_entropy_k(&self) -> usize {
        self.medium_entropy_k
    }

    /// Returns the number of items kept when the entropy is 2.0 nats or more.
    pub fn high_entropy_k(&self) -> usize {
        self.high_entropy_k
    }

    /// Returns the score below which items are not candidates.
    pub fn min_score(&self) -> f64 {
        self.min_score
    }
}

/// Checks one of the `*_entropy_k` counts: at least 1 (seed 000).
pub(crate) fn check_k(key: &str, k: usize) -> crate::Result<()> {
    param::count_at_least(key, k, 1)
}

/// Returns the Shannon entropy, in nats, of `scores` normalised to sum to 1.
///
/// Negative scores count as 0; an all-zero list is uniform.
fn shannon_entropy(scores: &[f64]) -> f64 {
    let total: f64 = scores.iter().map(|&score| score.max(0.0)).sum();
    if total == 0.0 {
        return (scores.len() as f64).ln();
    }
    -scores
        .iter()
        .map(|&score| score.max(0.0) / total)
        .filter(|&probability| probability > 0.0)
        .map(|probability| probability * probability.ln())
        .sum::<f64>()
}

impl SelectionStrategy for EntropySelection {
    fn name(&self) -> &'static str {
        "entropy"
    }

    fn select_sorted(&self, input: SelectionInput<'_>) -> SelectionResult<usize> {
        let scores = input.scores();
        let min_k = input.min_k();
        let max_k = input.max_k();
        // Scores are sorted, so the candidates are a prefix.
        let mut n_candidates = scores.partition_point(|&score| score >= self.min_score);
        if n_candidates < min_k {
            n_candidates = min_k.min(scores.len());
        }
        let measured = &scores[..n_candidates.min(max_k)];

        let mut metadata = Map::new();
        if measured.is_empty() {
            metadata.insert("entropy".into(), Value::from(0.0));
            return SelectionResult::prefix(self.name(), scores, 0, metadata);
        }

        let entropy = shannon_entropy(measured);
        let (wanted_k, confidence) = if entropy < 1.0 {
            (self.low_entropy_k, "high")
        } else if entropy < 2.0 {
            (self.medium_entropy_k, "medium")
        } else {
            (self.high_entropy_k, "low")
        };
        let target_k = wanted_k.min(n_candidates).min(max_k).max(min_k);

        metadata.insert("entropy".into(), Value::from(entropy));
        metadata.insert("target_k".into(), Value::from(target_k));
        metadata.insert("confidence".into(), Value::from(confidence));
        SelectionResult::prefix(self.name(), scores, target_k.min(n_candidates), metadata)
    }
}
