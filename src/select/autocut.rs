//! The `autocut` strategy: cut before the N-th jump in the score curve (after Weaviate).

use serde_json::{Map, Value};

use super::param;
use super::strategy::{SelectionInput, SelectionResult, SelectionStrategy};

/// Cuts before the N-th jump of the score curve, as Weaviate's `autocut` does.
///
/// The first `max_k` scores are considered. Each is normalised against the first and the
/// last, `(score - first) / (last - first)`, which runs from 0 to 1, and the straight line
/// from the first to the last point (`i / (n - 1)`) is subtracted. A jump in the scores
/// shows as a local maximum of that difference, on the first item after the jump; the
/// selection stops before the `jumps`-th local maximum. The last item counts as a maximum
/// when its difference exceeds those of the two items before it (it has no next item).
///
/// Improvements on Weaviate's rule:
///
/// - Differences are compared with a `tolerance`, so float noise on an evenly spaced list
///   makes no maximum; a flat top (a plateau within the tolerance) that rises and then
///   falls counts once, at its first item.
/// - An all-equal list keeps everything up to `max_k` (Weaviate divides by zero).
/// - At least `min_k` items are kept.
///
/// With fewer than three scores there is no interior point, and all of them are kept.
/// The selection is a prefix of the input.
///
/// ## Defaults
///
/// `jumps` 1, `tolerance` 1e-9 (in normalised units, where the whole list spans 1).
///
/// ## Metadata
///
/// - `jumps`: the configured number of jumps.
/// - `reason`: why the selection ended where it did: `jump` (before the `jumps`-th jump),
///   `fewer_jumps` (the list has fewer jumps: everything considered is kept),
///   `all_equal`, `too_few_items` (fewer than three scores considered) or `no_items`.
/// - `jumps_found`: the number of jumps seen up to the cut.
/// - `cut_before`: the index of the first item the jump rule dropped, or `null`.
/// - `considered`: the number of scores looked at (`min(n, max_k)`).
/// - `min_k_applied`: whether `min_k` kept more items than the jump rule would have.
///
/// # Example
///
/// ```
/// use ruchedb::select::{AutocutSelection, SelectionStrategy};
///
/// // Weaviate's documented example, as scores (negated distances).
/// let scores = [-0.1899, -0.1901, -0.191, -0.21, -0.215, -0.23];
/// let one_jump = AutocutSelection::default();
/// assert_eq!(one_jump.select_scores(&scores, 30, 1)?.selected, [0, 1, 2]);
/// let two_jumps = AutocutSelection::default().with_jumps(2)?;
/// assert_eq!(two_jumps.select_scores(&scores, 30, 1)?.selected.len(), 5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AutocutSelection {
    /// The selection stops before this jump (1 = before the first), at least 1.
    jumps: usize,
    /// The smallest difference, in normalised units, that counts as a rise or a fall;
    /// in `0..=1`.
    tolerance: f64,
}

impl Default for AutocutSelection {
    fn default() -> Self {
        AutocutSelection {
            jumps: 1,
            tolerance: 1e-9,
        }
    }
}

impl AutocutSelection {
    /// Sets the jump before which the selection stops (1 = before the first).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) (key `jumps`) if
    /// `jumps` is 0.
    pub fn with_jumps(mut self, jumps: usize) -> crate::Result<Self> {
        check_jumps("jumps", jumps)?;
        self.jumps = jumps;
        Ok(self)
    }

    /// Sets the smallest difference (in normalised units) that counts as a rise or a fall.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) (key `tolerance`)
    /// unless `tolerance` is in `0..=1`.
    pub fn with_tolerance(mut self, tolerance: f64) -> crate::Result<Self> {
        check_tolerance("tolerance", tolerance)?;
        self.tolerance = tolerance;
        Ok(self)
    }

    /// Returns the jump before which the selection stops.
    pub fn jumps(&self) -> usize {
        self.jumps
    }

    /// Returns the smallest difference that counts as a rise or a fall.
    pub fn tolerance(&self) -> f64 {
        self.tolerance
    }

    /// Finds the index of the `jumps`-th local maximum of `diff`, and how many were seen.
    fn find_cut(&self, diff: &[f64]) -> (Option<usize>, usize) {
        let n_points = diff.len();
        let tolerance = self.tolerance;
        let mut n_found = 0;
        for point_idx in 1..n_points {
            let value = diff[point_idx];
            if value <= diff[point_idx - 1] + tolerance {
                continue;
            }
            let is_peak = if point_idx == n_points - 1 {
                point_idx >= 2 && value > diff[point_idx - 2] + tolerance
            } else {
                // Skip a plateau: the first point that differs from `value` decides.
                match diff[point_idx + 1..]
                    .iter()
                    .find(|&&next| (next - value).abs() > tolerance)
                {
                    Some(&next) => next < value,
                    None => false,
                }
            };
            if is_peak {
                n_found += 1;
                if n_found >= self.jumps {
                    return (Some(point_idx), n_found);
                }
            }
        }
        (None, n_found)
    }
}

/// Checks `jumps`: at least 1 (Weaviate turns autocut off with 0; use `fixed_k` or no
/// strategy for that).
pub(crate) fn check_jumps(key: &str, jumps: usize) -> crate::Result<()> {
    param::count_at_least(key, jumps, 1)
}

/// Checks a `tolerance`: in `0..=1` normalised units.
pub(crate) fn check_tolerance(key: &str, tolerance: f64) -> crate::Result<()> {
    param::float_in(key, tolerance, 0.0, 1.0)
}

impl SelectionStrategy for AutocutSelection {
    fn name(&self) -> &'static str {
        "autocut"
    }

    fn select_sorted(&self, input: SelectionInput<'_>) -> SelectionResult<usize> {
        let scores = input.scores();
        let considered = &scores[..scores.len().min(input.max_k())];
        let n_considered = considered.len();

        let (reason, cut_before, n_found) = match considered {
            [] => ("no_items", None, 0),
            [_] | [_, _] => ("too_few_items", None, 0),
            [first, .., last] if first == last => ("all_equal", None, 0),
            [first, .., last] => {
                let span = last - first;
                let last_idx = (n_considered - 1) as f64;
                let diff: Vec<f64> = considered
                    .iter()
                    .enumerate()
                    .map(|(point_idx, &score)| (score - first) / span - point_idx as f64 / last_idx)
                    .collect();
                match self.find_cut(&diff) {
                    (Some(cut), n_found) => ("jump", Some(cut), n_found),
                    (None, n_found) => ("fewer_jumps", None, n_found),
                }
            }
        };
        let by_rule = cut_before.unwrap_or(n_considered);
        let n_selected = by_rule.max(input.min_k().min(n_considered));

        let mut metadata = Map::new();
        metadata.insert("jumps".into(), Value::from(self.jumps));
        metadata.insert("reason".into(), Value::from(reason));
        metadata.insert("jumps_found".into(), Value::from(n_found));
        metadata.insert(
            "cut_before".into(),
            cut_before.map_or(Value::Null, Value::from),
        );
        metadata.insert("considered".into(), Value::from(n_considered));
        metadata.insert("min_k_applied".into(), Value::from(n_selected > by_rule));
        SelectionResult::prefix(self.name(), scores, n_selected, metadata)
    }
}
