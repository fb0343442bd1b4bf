//! Score fusion and rule weighting: pure functions over scored candidate lists.
//!
//! Every score here is higher-is-better. The hybrid score of a candidate combines its
//! vector score (`max(0, cosine)`) and its BM25 score normalised over the candidate list;
//! a rule's final score then adds its priority and scope terms (seed 003):
//!
//! ```text
//! hybrid = vector_weight * vector + text_weight * norm(bm25)
//! final  = hybrid_weight * hybrid + priority_weight * norm(priority) + scope_weight * scope
//! ```

use serde::{Deserialize, Serialize};

use crate::doc::Scope;
use crate::{Error, Result};

/// Min-max normalisation of `scores` into `[0, 1]`.
///
/// A list whose scores are all equal (one candidate included) normalises to 1.0 where
/// the score is above 0 and to 0.0 otherwise, so a lone weak match is not inflated from
/// nothing and a list of zeros stays zero.
///
/// # Example
///
/// ```
/// assert_eq!(ruche::min_max(&[2.0, 1.0, 0.0]), vec![1.0, 0.5, 0.0]);
/// assert_eq!(ruche::min_max(&[3.0]), vec![1.0]);
/// assert_eq!(ruche::min_max(&[0.0, 0.0]), vec![0.0, 0.0]);
/// ```
pub fn min_max(scores: &[f64]) -> Vec<f64> {
    let (min, max) = scores
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &s| {
            (lo.min(s), hi.max(s))
        });
    let range = max - min;
    scores
        .iter()
        .map(|&s| {
            if range > 0.0 && range.is_finite() {
                (s - min) / range
            } else if s > 0.0 {
                1.0
            } else {
                0.0
            }
        })
        .collect()
}

/// The weights of the weighted-sum fusion of the two legs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FusionWeights {
    /// Weight of the vector score (default 0.7).
    pub vector_weight: f64,
    /// Weight of the normalised BM25 score (default 0.3).
    pub text_weight: f64,
}

impl Default for FusionWeights {
    fn default() -> FusionWeights {
        FusionWeights {
            vector_weight: 0.7,
            text_weight: 0.3,
        }
    }
}

impl FusionWeights {
    pub(crate) fn validate(&self, key: &str) -> Result<()> {
        check_weight(&format!("{key}.vector_weight"), self.vector_weight)?;
        check_weight(&format!("{key}.text_weight"), self.text_weight)
    }

    /// `vector_weight * vector + text_weight * text_normalised`.
    pub fn hybrid(&self, vector: f64, text_normalised: f64) -> f64 {
        self.vector_weight * vector + self.text_weight * text_normalised
    }
}

/// The weights of a rule's final score (seed 003, DESIGN.md 3.5).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RuleWeights {
    /// Weight of the hybrid score (default 0.6).
    pub hybrid_weight: f64,
    /// Weight of the normalised priority (default 0.3).
    pub priority_weight: f64,
    /// Weight of the scope weight (default 0.1).
    pub scope_weight: f64,
    /// The priority that normalises to 0 (default 0); lower priorities clamp to it.
    pub priority_min: i32,
    /// The priority that normalises to 1 (default 100); higher priorities clamp to it.
    pub priority_max: i32,
    /// The scope weight of global rules (default 1.0).
    pub global_scope: f64,
    /// The scope weight of scenario rules (default 1.1).
    pub scenario_scope: f64,
    /// The scope weight of step rules (default 1.2).
    pub step_scope: f64,
}

impl Default for RuleWeights {
    fn default() -> RuleWeights {
        RuleWeights {
            hybrid_weight: 0.6,
            priority_weight: 0.3,
            scope_weight: 0.1,
            priority_min: 0,
            priority_max: 100,
            global_scope: 1.0,
            scenario_scope: 1.1,
            step_scope: 1.2,
        }
    }
}

/// The parts of a rule's final score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RuleScore {
    /// `priority_weight * norm(priority)`.
    pub priority_term: f64,
    /// `scope_weight * scope weight`.
    pub scope_term: f64,
    /// `hybrid_weight * hybrid + priority_term + scope_term`.
    pub final_score: f64,
}

impl RuleWeights {
    pub(crate) fn validate(&self, key: &str) -> Result<()> {
        for (name, value) in [
            ("hybrid_weight", self.hybrid_weight),
            ("priority_weight", self.priority_weight),
            ("scope_weight", self.scope_weight),
            ("global_scope", self.global_scope),
            ("scenario_scope", self.scenario_scope),
            ("step_scope", self.step_scope),
        ] {
            check_weight(&format!("{key}.{name}"), value)?;
        }
        if self.priority_min >= self.priority_max {
            return Err(Error::invalid_config(
                format!("{key}.priority_max"),
                format!(
                    "must be greater than priority_min ({} >= {})",
                    self.priority_min, self.priority_max
                ),
            ));
        }
        Ok(())
    }

    /// A priority mapped onto `[0, 1]` over the configured fixed range, clamped.
    pub fn normalized_priority(&self, priority: i32) -> f64 {
        let range = f64::from(self.priority_max) - f64::from(self.priority_min);
        ((f64::from(priority) - f64::from(self.priority_min)) / range).clamp(0.0, 1.0)
    }

    /// The configured weight of a scope.
    pub fn scope_value(&self, scope: &Scope) -> f64 {
        match scope {
            Scope::Global => self.global_scope,
            Scope::Scenario { .. } => self.scenario_scope,
            Scope::Step { .. } => self.step_scope,
        }
    }

    /// A rule's final score from its hybrid score, priority and scope.
    ///
    /// # Example
    ///
    /// ```
    /// use ruche::{RuleWeights, Scope};
    ///
    /// let score = RuleWeights::default().score(0.8, 50, &Scope::Global);
    /// assert!((score.final_score - (0.6 * 0.8 + 0.3 * 0.5 + 0.1 * 1.0)).abs() < 1e-12);
    /// ```
    pub fn score(&self, hybrid: f64, priority: i32, scope: &Scope) -> RuleScore {
        let priority_term = self.priority_weight * self.normalized_priority(priority);
        let scope_term = self.scope_weight * self.scope_value(scope);
        RuleScore {
            priority_term,
            scope_term,
            final_score: self.hybrid_weight * hybrid + priority_term + scope_term,
        }
    }
}

fn check_weight(key: &str, value: f64) -> Result<()> {
    if !value.is_finite() || value < 0.0 {
        return Err(Error::invalid_config(
            key,
            format!("must be a finite number >= 0, got {value}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn min_max_edge_cases() {
        assert_eq!(min_max(&[]), Vec::<f64>::new());
        assert_eq!(min_max(&[0.2]), vec![1.0]);
        assert_eq!(min_max(&[0.0]), vec![0.0]);
        assert_eq!(min_max(&[5.0, 5.0]), vec![1.0, 1.0]);
        assert_eq!(min_max(&[-1.0, -3.0]), vec![1.0, 0.0]);
        assert_eq!(min_max(&[4.0, 0.0, 2.0]), vec![1.0, 0.0, 0.5]);
    }

    #[test]
    fn priority_is_clamped_to_the_fixed_range() {
        let weights = RuleWeights::default();
        assert_eq!(weights.normalized_priority(-5), 0.0);
        assert_eq!(weights.normalized_priority(50), 0.5);
        assert_eq!(weights.normalized_priority(1_000), 1.0);
    }

    #[test]
    fn seed_formula() {
        let weights = RuleWeights::default();
        let step = Scope::step("s", "t");
        let score = weights.score(0.5, 100, &step);
        assert!((score.final_score - (0.3 + 0.3 + 0.12)).abs() < 1e-12);
        assert!((score.scope_term - 0.12).abs() < 1e-12);
    }

    #[test]
    fn invalid_weights_name_the_key() {
        let weights = RuleWeights {
            priority_weight: -1.0,
            ..RuleWeights::default()
        };
        let err = weights.validate("scoring.rules").unwrap_err();
        assert!(
            err.to_string().contains("scoring.rules.priority_weight"),
            "{err}"
        );
    }

    proptest! {
        #[test]
        fn min_max_stays_in_unit_range(scores in prop::collection::vec(-1e6f64..1e6, 0..40)) {
            let normalised = min_max(&scores);
            prop_assert_eq!(normalised.len(), scores.len());
            for (n, s) in normalised.iter().zip(&scores) {
                prop_assert!((0.0..=1.0).contains(n));
                // Order is preserved.
                for (m, t) in normalised.iter().zip(&scores) {
                    if s < t { prop_assert!(n <= m); }
                }
            }
        }
    }
}
