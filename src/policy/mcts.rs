//! The MCTS policy: UCB1 over the rewards observed for each action.

use std::collections::HashMap;

use super::{
    ActionSelectionPolicy, Candidate, PolicyContext, argmax, ensure_not_empty, sort_ranked,
};
use crate::{Error, ErrorKind};

const DEFAULT_EXPLORATION_CONSTANT: f64 = 1.41;
const DEFAULT_NUM_SIMULATIONS: usize = 10;
const DEFAULT_SIMULATION_DEPTH: usize = 3;

/// The value `rank` gives an action that has no reward yet.
const UNVISITED_VALUE: f64 = 0.5;

/// Visits and cumulative reward of one action.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct ActionStats {
    visits: u64,
    total_value: f64,
}

/// Picks actions by UCB1 over the rewards fed back with `update` (registered as `"mcts"`).
///
/// Statistics are kept per [`Candidate::key`]: the candidate's id when it has one, else its
/// action type. For a candidate whose key has `visits` rewards summing to `total_value`,
///
/// ```text
/// UCB1 = total_value / visits + c * sqrt(ln(total_visits + 1) / visits)
/// ```
///
/// where `total_visits` counts every reward received (for any key) and `c` is the
/// exploration constant. A key without visits scores +inf, so every action is tried once
/// before exploitation starts; `select` returns the highest UCB1, the first candidate on
/// ties. It ignores the candidates' own scores (they are still checked to be finite).
///
/// `select` does not count a visit: call [`update`](ActionSelectionPolicy::update) with the
/// selected candidate's key and the reward after executing it. `rank` orders candidates by
/// average reward (0.5 for unvisited keys), and `reset` forgets every statistic. The
/// statistics are state that the caller owns: use one policy per learning agent.
///
/// `num_simulations` and `simulation_depth` are accepted and validated for compatibility
/// with the design but are not used yet (there are no rollouts).
///
/// ## Defaults
///
/// | Key | Default | Valid values |
/// |---|---|---|
/// | `exploration_constant` | 1.41 | finite, >= 0 |
/// | `num_simulations` | 10 | integer >= 1 (unused) |
/// | `simulation_depth` | 3 | integer >= 1 (unused) |
///
/// # Example
///
/// ```
/// use rand::SeedableRng;
/// use ruchedb::policy::{ActionSelectionPolicy, Candidate, MctsPolicy, PolicyContext};
///
/// let candidates = vec![
///     Candidate::new("code").with_id("approach_a"),
///     Candidate::new("code").with_id("approach_b"),
/// ];
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let mut ctx = PolicyContext::new(&mut rng);
/// let mut policy = MctsPolicy::builder().build()?;
///
/// let selected = policy.select(&candidates, &mut ctx)?;
/// assert_eq!(selected.key(), "approach_a");
/// policy.update(selected.key(), 0.8)?;
///
/// // approach_b has never been tried: its UCB1 is infinite.
/// let selected = policy.select(&candidates, &mut ctx)?;
/// assert_eq!(selected.key(), "approach_b");
/// policy.update(selected.key(), 0.3)?;
///
/// let ranked = policy.rank(&candidates, &ctx)?;
/// assert_eq!((ranked[0].0.key(), ranked[0].1), ("approach_a", 0.8));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct MctsPolicy {
    exploration_constant: f64,
    num_simulations: usize,
    simulation_depth: usize,
    stats: HashMap<String, ActionStats>,
    total_visits: u64,
}

/// Configures an [`MctsPolicy`]; unset knobs take the defaults listed there.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MctsPolicyBuilder {
    exploration_constant: Option<f64>,
    num_simulations: Option<usize>,
    simulation_depth: Option<usize>,
}

impl MctsPolicyBuilder {
    /// Sets the UCB1 exploration constant `c` (default 1.41, about sqrt(2)); higher explores
    /// more.
    #[must_use]
    pub fn exploration_constant(mut self, exploration_constant: f64) -> MctsPolicyBuilder {
        self.exploration_constant = Some(exploration_constant);
        self
    }

    /// Sets the number of simulations per selection (default 10; validated, not used yet).
    #[must_use]
    pub fn num_simulations(mut self, num_simulations: usize) -> MctsPolicyBuilder {
        self.num_simulations = Some(num_simulations);
        self
    }

    /// Sets the depth of rollout simulations (default 3; validated, not used yet).
    #[must_use]
    pub fn simulation_depth(mut self, simulation_depth: usize) -> MctsPolicyBuilder {
        self.simulation_depth = Some(simulation_depth);
        self
    }

    /// Validates the configuration and creates the policy, without statistics.
    ///
    /// # Errors
    ///
    /// Returns an error of kind [`ErrorKind::InvalidConfig`] naming the key when
    /// `exploration_constant` is negative or not finite, or `num_simulations` or
    /// `simulation_depth` is 0.
    pub fn build(self) -> crate::Result<MctsPolicy> {
        let exploration_constant = self
            .exploration_constant
            .unwrap_or(DEFAULT_EXPLORATION_CONSTANT);
        if !(exploration_constant.is_finite() && exploration_constant >= 0.0) {
            return Err(Error::invalid_config(
                "exploration_constant",
                format!("must be a finite number >= 0, got {exploration_constant}"),
            ));
        }
        let num_simulations = self.num_simulations.unwrap_or(DEFAULT_NUM_SIMULATIONS);
        if num_simulations == 0 {
            return Err(Error::invalid_config(
                "num_simulations",
                "must be at least 1, got 0",
            ));
        }
        let simulation_depth = self.simulation_depth.unwrap_or(DEFAULT_SIMULATION_DEPTH);
        if simulation_depth == 0 {
            return Err(Error::invalid_config(
                "simulation_depth",
                "must be at least 1, got 0",
            ));
        }
        Ok(MctsPolicy {
            exploration_constant,
            num_simulations,
            simulation_depth,
            stats: HashMap::new(),
            total_visits: 0,
        })
    }
}

impl MctsPolicy {
    /// Returns a builder to configure the policy.
    pub fn builder() -> MctsPolicyBuilder {
        MctsPolicyBuilder::default()
    }

    /// Returns the exploration constant.
    pub fn exploration_constant(&self) -> f64 {
        self.exploration_constant
    }

    /// Returns the configured number of simulations (not used yet).
    pub fn num_simulations(&self) -> usize {
        self.num_simulations
    }

    /// Returns the configured simulation depth (not used yet).
    pub fn simulation_depth(&self) -> usize {
        self.simulation_depth
    }

    /// Returns how many rewards were recorded for `action_key`.
    pub fn visits(&self, action_key: &str) -> u64 {
        self.stats.get(action_key).map_or(0, |stats| stats.visits)
    }

    /// Returns the average reward recorded for `action_key`, or `None` if it has none.
    pub fn average_value(&self, action_key: &str) -> Option<f64> {
        self.stats
            .get(action_key)
            .filter(|stats| stats.visits > 0)
            .map(|stats| stats.total_value / stats.visits as f64)
    }

    /// Returns the UCB1 score of `action_key` (+inf when it has no visits).
    pub fn ucb1(&self, action_key: &str) -> f64 {
        match self.stats.get(action_key) {
            Some(stats) if stats.visits > 0 => {
                let visits = stats.visits as f64;
                let exploration = ((self.total_visits as f64 + 1.0).ln() / visits).sqrt();
                stats.total_value / visits + self.exploration_constant * exploration
            }
            _ => f64::INFINITY,
        }
    }
}

/// Checks that the candidates are not empty and that their scores are finite, though MCTS
/// does not use the scores: bad input is rejected the same way by every policy.
fn check_candidates(candidates: &[Candidate]) -> crate::Result<()> {
    ensure_not_empty(candidates)?;
    candidates
        .iter()
        .try_for_each(|candidate| candidate.base_score().map(drop))
}

impl ActionSelectionPolicy for MctsPolicy {
    fn name(&self) -> &str {
        "mcts"
    }

    /// Returns the candidate with the highest UCB1 score, the first one on ties (so the
    /// first unvisited one while any is left). Does not count a visit.
    ///
    /// # Errors
    ///
    /// `EmptyCandidates` when there are none, `NonFiniteScore` when a score is NaN or
    /// infinite.
    fn select<'c>(
        &mut self,
        candidates: &'c [Candidate],
        _ctx: &mut PolicyContext<'_>,
    ) -> crate::Result<&'c Candidate> {
        check_candidates(candidates)?;
        let ucb_scores: Vec<f64> = candidates
            .iter()
            .map(|candidate| self.ucb1(candidate.key()))
            .collect();
        let best_idx = argmax(&ucb_scores);
        tracing::debug!(policy = "mcts", index = best_idx, "selected candidate");
        Ok(&candidates[best_idx])
    }

    /// Returns the candidates with their average reward (0.5 when unvisited), highest
    /// first, ties in original order.
    ///
    /// # Errors
    ///
    /// As for `select`.
    fn rank<'c>(
        &self,
        candidates: &'c [Candidate],
        _ctx: &PolicyContext<'_>,
    ) -> crate::Result<Vec<(&'c Candidate, f64)>> {
        check_candidates(candidates)?;
        let values: Vec<f64> = candidates
            .iter()
            .map(|candidate| {
                self.average_value(candidate.key())
                    .unwrap_or(UNVISITED_VALUE)
            })
            .collect();
        Ok(sort_ranked(candidates, &values))
    }

    /// Records one visit of `action_key` with `reward`.
    ///
    /// # Errors
    ///
    /// Returns an error of kind [`ErrorKind::NonFiniteScore`] when `reward` is NaN or
    /// infinite, or the cumulative reward of the key would overflow; the statistics are
    /// then unchanged.
    fn update(&mut self, action_key: &str, reward: f64) -> crate::Result<()> {
        if !reward.is_finite() {
            return Err(Error::new(ErrorKind::NonFiniteScore {
                context: format!("reward for action `{action_key}`"),
            }));
        }
        let stats = self.stats.get(action_key).copied().unwrap_or_default();
        let total_value = stats.total_value + reward;
        if !total_value.is_finite() {
            return Err(Error::new(ErrorKind::NonFiniteScore {
                context: format!("cumulative reward for action `{action_key}`"),
            }));
        }
        let stats = ActionStats {
            visits: stats.visits + 1,
            total_value,
        };
        self.stats.insert(action_key.to_owned(), stats);
        self.total_visits += 1;
        Ok(())
    }

    /// Forgets every visit count and reward.
    fn reset(&mut self) {
        self.stats.clear();
        self.total_visits = 0;
    }
}
