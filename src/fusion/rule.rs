//! [`RuleWeights`]: a rule's final score from its hybrid score, priority and scope.

use serde::{Deserialize, Serialize};

use super::check_weight;
use crate::model::doc::Scope;
use crate::{Error, Result};

/// The weights of a rule's final score (seed 003): `hybrid_weight * hybrid +
/// priority_weight * norm(priority) + scope_weight * scope weight`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
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
#[non_exhaustive]
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
    /// use ruchedb::Scope;
    /// use ruchedb::fusion::RuleWeights;
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
