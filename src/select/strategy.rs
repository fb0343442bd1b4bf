//! The [`SelectionStrategy`] trait, its validated input and its result.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{Error, ErrorKind};

/// Something that carries a score, higher is better.
///
/// [`SelectionStrategyExt::select`] accepts any list of `Scored` items. It is implemented for
/// bare scores (`f64`, `f32`), for `(item, score)` pairs and for references to scored
/// things; implement it for your own hit type to select hits directly.
///
/// # Example
///
/// ```
/// use ruchedb::select::Scored;
///
/// struct Hit {
///     id: String,
///     score: f64,
/// }
///
/// impl Scored for Hit {
///     fn score(&self) -> f64 {
///         self.score
///     }
/// }
///
/// let hit = Hit { id: "rule-1".to_string(), score: 0.8 };
/// assert_eq!((hit.id.as_str(), hit.score()), ("rule-1", 0.8));
/// assert_eq!(("rule-2", 0.5).score(), 0.5);
/// ```
pub trait Scored {
    /// Returns the item's score (higher is better).
    fn score(&self) -> f64;
}

impl Scored for f64 {
    fn score(&self) -> f64 {
        *self
    }
}

impl Scored for f32 {
    fn score(&self) -> f64 {
        f64::from(*self)
    }
}

impl<T> Scored for (T, f64) {
    fn score(&self) -> f64 {
        self.1
    }
}

impl<S: Scored + ?Sized> Scored for &S {
    fn score(&self) -> f64 {
        (**self).score()
    }
}

/// A validated selection request: finite scores sorted descending, plus `max_k` and `min_k`.
///
/// This is what [`SelectionStrategy::select_sorted`] receives, so an implementation never
/// has to check its input again. Build one with [`SelectionInput::new`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SelectionInput<'a> {
    scores: &'a [f64],
    max_k: usize,
    min_k: usize,
}

impl<'a> SelectionInput<'a> {
    /// Checks `scores` and bundles them with `max_k` and `min_k`.
    ///
    /// `min_k` is clamped to `max_k`, so that `max_k` is always a hard cap.
    ///
    /// # Errors
    ///
    /// - [`ErrorKind::NonFiniteScore`] if a score is NaN or infinite.
    /// - [`ErrorKind::UnsortedScores`] if a score is greater than the one before it; `index`
    ///   is the first such position.
    ///
    /// # Example
    ///
    /// ```
    /// use ruchedb::ErrorKind;
    /// use ruchedb::select::SelectionInput;
    ///
    /// let input = SelectionInput::new(&[0.9, 0.8, 0.8], 2, 5)?;
    /// assert_eq!(input.min_k(), 2);
    ///
    /// let err = SelectionInput::new(&[0.5, 0.7], 10, 1).unwrap_err();
    /// assert_eq!(err.kind(), &ErrorKind::UnsortedScores { index: 1 });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(scores: &'a [f64], max_k: usize, min_k: usize) -> crate::Result<Self> {
        check_scores(scores.iter().copied())?;
        Ok(SelectionInput {
            scores,
            max_k,
            min_k: min_k.min(max_k),
        })
    }

    /// Returns the scores, finite and sorted descending.
    pub fn scores(&self) -> &'a [f64] {
        self.scores
    }

    /// Returns the maximum number of items to select.
    pub fn max_k(&self) -> usize {
        self.max_k
    }

    /// Returns the minimum number of items to select, never more than [`Self::max_k`].
    pub fn min_k(&self) -> usize {
        self.min_k
    }
}

/// Checks that scores are finite and sorted descending.
fn check_scores(scores: impl Iterator<Item = f64>) -> crate::Result<()> {
    let mut previous = f64::INFINITY;
    for (index, score) in scores.enumerate() {
        if !score.is_finite() {
            return Err(Error::new(ErrorKind::NonFiniteScore {
                context: format!("score at index {index} of the selection input"),
            }));
        }
        if score > previous {
            return Err(Error::new(ErrorKind::UnsortedScores { index }));
        }
        previous = score;
    }
    Ok(())
}

/// The outcome of a selection: the kept items, where the cut fell, and why.
///
/// `T` is `usize` (indices into the input) for [`SelectionStrategy::select_scores`] and
/// the caller's item type for [`SelectionStrategyExt::select`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SelectionResult<T> {
    /// The selected items, sorted by score descending.
    pub selected: Vec<T>,
    /// The score of the last selected item, or 0.0 when nothing was selected.
    pub cutoff_score: f64,
    /// The name of the strategy that made the selection (`elbow`, `adaptive_k`, ...).
    pub method: &'static str,
    /// Strategy-specific details for logs and tuning (entropy, cluster sizes, reason, ...);
    /// each strategy documents its keys.
    pub metadata: Map<String, Value>,
}

impl SelectionResult<usize> {
    /// Builds a result that keeps the first `n_selected` of `scores`.
    pub(crate) fn prefix(
        method: &'static str,
        scores: &[f64],
        n_selected: usize,
        metadata: Map<String, Value>,
    ) -> SelectionResult<usize> {
        SelectionResult::from_indices(method, scores, (0..n_selected).collect(), metadata)
    }

    /// Builds a result from selected indices, setting the cutoff to the last one's score.
    pub(crate) fn from_indices(
        method: &'static str,
        scores: &[f64],
        selected: Vec<usize>,
        metadata: Map<String, Value>,
    ) -> SelectionResult<usize> {
        let cutoff_score = selected.last().map_or(0.0, |&last| scores[last]);
        SelectionResult {
            selected,
            cutoff_score,
            method,
            metadata,
        }
    }
}

/// A dynamic k-selection strategy.
///
/// Implementations decide how many items of a ranked list to keep. They implement
/// [`name`](Self::name) and [`select_sorted`](Self::select_sorted), which receives input
/// that is already validated; callers use [`select_scores`](Self::select_scores) (indices)
/// or [`SelectionStrategyExt::select`] (items). The trait is object-safe:
/// [`SelectionConfig::build`](crate::select::SelectionConfig::build) returns a
/// `Box<dyn SelectionStrategy>`; `&S`, `Box<S>` and `Arc<S>` implement the trait by
/// forwarding, so they can be passed where a strategy is expected.
///
/// # Example
///
/// ```
/// use ruchedb::select::{FixedKSelection, SelectionStrategy};
///
/// let strategy = FixedKSelection::default().with_k(2)?;
/// let result = strategy.select_scores(&[0.9, 0.7, 0.4], 30, 1)?;
/// assert_eq!(result.selected, [0, 1]);
/// assert_eq!(result.method, "fixed_k");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait SelectionStrategy: Send + Sync + fmt::Debug {
    /// Returns the strategy's name, as used in configuration and in
    /// [`SelectionResult::method`].
    fn name(&self) -> &'static str;

    /// Selects from validated input; `selected` holds indices into `input.scores()`.
    ///
    /// Implementations must return at most `input.max_k()` distinct indices, sorted by
    /// score descending, with `cutoff_score` the score of the last one (0.0 when empty).
    fn select_sorted(&self, input: SelectionInput<'_>) -> SelectionResult<usize>;

    /// Selects from a list of scores sorted descending; `selected` holds indices.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NonFiniteScore`] or [`ErrorKind::UnsortedScores`] when the scores are
    /// not finite and sorted descending (see [`SelectionInput::new`]).
    fn select_scores(
        &self,
        scores: &[f64],
        max_k: usize,
        min_k: usize,
    ) -> crate::Result<SelectionResult<usize>> {
        Ok(self.select_sorted(SelectionInput::new(scores, max_k, min_k)?))
    }
}

/// Generic selection over scored items, for every [`SelectionStrategy`].
///
/// [`SelectionStrategy`] works on scores and indices so that it stays object-safe; this
/// extension trait adds [`select`](Self::select), which takes and returns the caller's
/// items. It is implemented for every strategy, sized or not, so it works the same on a
/// concrete strategy, a `&dyn SelectionStrategy` and a `Box<dyn SelectionStrategy>`.
pub trait SelectionStrategyExt: SelectionStrategy {
    /// Selects from a list of scored items sorted by score descending.
    ///
    /// The selected items are moved into the result.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NonFiniteScore`] or [`ErrorKind::UnsortedScores`] when the scores are
    /// not finite and sorted descending.
    ///
    /// # Panics
    ///
    /// Panics if the strategy breaks its contract by returning an index that is out of
    /// range or repeated (the built-in strategies never do).
    ///
    /// # Example
    ///
    /// ```
    /// use ruchedb::select::{ElbowSelection, SelectionConfig, SelectionStrategyExt};
    ///
    /// let hits = vec![("refund", 0.92), ("return", 0.89), ("greeting", 0.42)];
    /// let result = ElbowSelection::default().select(hits.clone(), 30, 1)?;
    /// assert_eq!(result.selected, [("refund", 0.92), ("return", 0.89)]);
    ///
    /// let boxed = SelectionConfig::FixedK { k: Some(1), min_score: None }.build()?;
    /// assert_eq!(boxed.select(hits, 30, 1)?.selected, [("refund", 0.92)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn select<T: Scored>(
        &self,
        items: Vec<T>,
        max_k: usize,
        min_k: usize,
    ) -> crate::Result<SelectionResult<T>>;
}

impl<S: SelectionStrategy + ?Sized> SelectionStrategyExt for S {
    fn select<T: Scored>(
        &self,
        items: Vec<T>,
        max_k: usize,
        min_k: usize,
    ) -> crate::Result<SelectionResult<T>> {
        let scores: Vec<f64> = items.iter().map(Scored::score).collect();
        let by_index = self.select_scores(&scores, max_k, min_k)?;
        let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
        let selected = by_index
            .selected
            .iter()
            .map(|&item_idx| {
                slots
                    .get_mut(item_idx)
                    .and_then(Option::take)
                    .unwrap_or_else(|| {
                        panic!(
                        "selection strategy `{}` returned an invalid or repeated index {item_idx}",
                        self.name()
                    )
                    })
            })
            .collect();
        Ok(SelectionResult {
            selected,
            cutoff_score: by_index.cutoff_score,
            method: by_index.method,
            metadata: by_index.metadata,
        })
    }
}

/// Forwards to the referenced strategy.
impl<S: SelectionStrategy + ?Sized> SelectionStrategy for &S {
    fn name(&self) -> &'static str {
        (**self).name()
    }

    fn select_sorted(&self, input: SelectionInput<'_>) -> SelectionResult<usize> {
        (**self).select_sorted(input)
    }

    fn select_scores(
        &self,
        scores: &[f64],
        max_k: usize,
        min_k: usize,
    ) -> crate::Result<SelectionResult<usize>> {
        (**self).select_scores(scores, max_k, min_k)
    }
}

/// Forwards to the boxed strategy.
impl<S: SelectionStrategy + ?Sized> SelectionStrategy for Box<S> {
    fn name(&self) -> &'static str {
        (**self).name()
    }

    fn select_sorted(&self, input: SelectionInput<'_>) -> SelectionResult<usize> {
        (**self).select_sorted(input)
    }

    fn select_scores(
        &self,
        scores: &[f64],
        max_k: usize,
        min_k: usize,
    ) -> crate::Result<SelectionResult<usize>> {
        (**self).select_scores(scores, max_k, min_k)
    }
}

/// Forwards to the shared strategy.
impl<S: SelectionStrategy + ?Sized> SelectionStrategy for Arc<S> {
    fn name(&self) -> &'static str {
        (**self).name()
    }

    fn select_sorted(&self, input: SelectionInput<'_>) -> SelectionResult<usize> {
        (**self).select_sorted(input)
    }

    fn select_scores(
        &self,
        scores: &[f64],
        max_k: usize,
        min_k: usize,
    ) -> crate::Result<SelectionResult<usize>> {
        (**self).select_scores(scores, max_k, min_k)
    }
}
