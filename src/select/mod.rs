//! Dynamic k-selection: decide *how many* of a ranked list of results to keep.
//!
//! A search returns candidates sorted by score, best first. A fixed top-k ignores how the
//! scores are distributed: it keeps noise after a clear winner and cuts off relevant items
//! when many score alike. A [`SelectionStrategy`] looks at the scores and picks the cutoff.
//!
//! Seven strategies are built in (seed 000, Weaviate's autocut, and `band`):
//!
//! | strategy | type | cuts |
//! | --- | --- | --- |
//! | `elbow` | [`ElbowSelection`] | at the first large relative drop between neighbours |
//! | `adaptive_k` | [`AdaptiveKSelection`] | at the first drop much larger than the mean drop |
//! | `entropy` | [`EntropySelection`] | after 3, 5 or 10 items, by the entropy of the scores |
//! | `clustering` | [`ClusteringSelection`] | keeps the best items of each 1-D DBSCAN cluster |
//! | `fixed_k` | [`FixedKSelection`] | after `k` items (the baseline) |
//! | `autocut` | [`AutocutSelection`] | before the N-th jump in the score curve |
//! | `band` | [`BandSelection`] | below the best score minus a fixed band |
//!
//! [`SelectionStrategy`] works on scores and returns indices (it is object-safe);
//! [`SelectionStrategyExt::select`] takes and returns your own items, anything that
//! implements [`Scored`]. [`SelectionConfig`] is the serde form of a strategy (one TOML
//! section, tagged by `strategy`); it validates parameters and builds a
//! `Box<dyn SelectionStrategy>`.
//!
//! Everything here is pure: no I/O, no global state, and the same input always gives the
//! same output.
//!
//! # Input rules
//!
//! - Scores must be sorted descending (ties allowed) and finite; otherwise the selection
//!   fails with [`ErrorKind::UnsortedScores`](crate::ErrorKind::UnsortedScores) or
//!   [`ErrorKind::NonFiniteScore`](crate::ErrorKind::NonFiniteScore).
//! - Scores may be any finite number (above 1.0, negative); only `min_score` parameters are
//!   limited to `0..=1`.
//! - `max_k` is a hard cap on the number of selected items (`max_k == 0` selects nothing);
//!   `min_k` asks for at least that many items (`0` forces nothing in) and is clamped to
//!   `max_k`. Some strategies return fewer than `min_k` items when their `min_score` filter
//!   removed them (see each strategy's documentation).
//! - An empty list gives an empty selection with a `cutoff_score` of 0.0.
//!
//! # Example
//!
//! ```
//! use ruchedb::select::{SelectionConfig, SelectionStrategyExt};
//!
//! let strategy = SelectionConfig::Elbow { drop_threshold: None, min_score: None }.build()?;
//! let hits = vec![("refund", 0.92), ("return", 0.89), ("status", 0.71), ("shipping", 0.45)];
//! let result = strategy.select(hits, 30, 1)?;
//! let labels: Vec<&str> = result.selected.iter().map(|(label, _)| *label).collect();
//! assert_eq!(labels, ["refund", "return"]);
//! assert_eq!(result.cutoff_score, 0.89);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod adaptive_k;
mod autocut;
mod band;
mod clustering;
mod config;
mod elbow;
mod entropy;
mod fixed_k;
mod param;
mod strategy;

#[cfg(test)]
mod tests;

pub use self::adaptive_k::AdaptiveKSelection;
pub use self::autocut::AutocutSelection;
pub use self::band::BandSelection;
pub use self::clustering::ClusteringSelection;
pub use self::config::SelectionConfig;
pub use self::elbow::ElbowSelection;
pub use self::entropy::EntropySelection;
pub use self::fixed_k::FixedKSelection;
pub use self::strategy::{
    Scored, SelectionInput, SelectionResult, SelectionStrategy, SelectionStrategyExt,
};
