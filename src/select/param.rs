//! Range checks for strategy parameters, shared by the strategies' setters and
//! [`SelectionConfig::validate`](super::SelectionConfig::validate).
//!
//! Each check takes the key to report, so a setter names the bare parameter (`alpha`) and
//! the configuration names the full dotted key (`pipeline.retrieval.rule_selection.alpha`).

use crate::error::Error;

/// Checks a `min_score` parameter: a number in `0..=1`.
pub(crate) fn min_score(key: &str, value: f64) -> crate::Result<()> {
    float_in(key, value, 0.0, 1.0)
}

/// Checks that `value` lies in `low..=high` (NaN never does).
pub(crate) fn float_in(key: &str, value: f64, low: f64, high: f64) -> crate::Result<()> {
    if (low..=high).contains(&value) {
        Ok(())
    } else {
        Err(Error::invalid_config(
            key,
            format!("must be between {low} and {high}, got {value}"),
        ))
    }
}

/// Checks that `value` is finite and greater than zero.
pub(crate) fn positive(key: &str, value: f64) -> crate::Result<()> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(Error::invalid_config(
            key,
            format!("must be a finite number greater than 0, got {value}"),
        ))
    }
}

/// Checks that a count is at least `low`.
pub(crate) fn count_at_least(key: &str, value: usize, low: usize) -> crate::Result<()> {
    if value >= low {
        Ok(())
    } else {
        Err(Error::invalid_config(
            key,
            format!("must be at least {low}, got {value}"),
        ))
    }
}

/// Joins a dotted key prefix and a parameter name (`prefix.name`, or `name` alone).
pub(crate) fn join_key(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}
