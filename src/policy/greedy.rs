//! The greedy policy: always the candidate with the highest score.

use super::{ActionSelectionPolicy, Candidate, PolicyContext, argmax, base_scores, sort_ranked};

/// Picks the candidate with the highest confidence or score (registered as `"greedy"`).
///
/// Greedy is deterministic and stateless: it never explores, which makes it the choice for
/// reproducible production runs. Ties go to the candidate that comes first. It has no
/// configuration, and ignores the context's step and RNG.
///
/// # Example
///
/// ```
/// use rand::SeedableRng;
/// use ruchedb::policy::{ActionSelectionPolicy, Candidate, GreedyPolicy, PolicyContext};
///
/// let candidates = vec![
///     Candidate::new("code").with_id("approach_a").with_confidence(0.7),
///     Candidate::new("code").with_id("approach_b").with_confidence(0.9),
///     Candidate::new("code").with_id("approach_c").with_confidence(0.4),
/// ];
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let mut ctx = PolicyContext::new(&mut rng);
/// let mut policy = GreedyPolicy::new();
/// assert_eq!(policy.select(&candidates, &mut ctx)?.key(), "approach_b");
///
/// let ranked = policy.rank(&candidates, &ctx)?;
/// let keys: Vec<(&str, f64)> = ranked.iter().map(|(c, score)| (c.key(), *score)).collect();
/// assert_eq!(keys, [("approach_b", 0.9), ("approach_a", 0.7), ("approach_c", 0.4)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GreedyPolicy;

impl GreedyPolicy {
    /// Creates the greedy policy.
    pub fn new() -> GreedyPolicy {
        GreedyPolicy
    }
}

impl ActionSelectionPolicy for GreedyPolicy {
    fn name(&self) -> &str {
        "greedy"
    }

    /// Returns the candidate with the highest base score, the first one on ties.
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
        let scores = base_scores(candidates)?;
        let best_idx = argmax(&scores);
        tracing::debug!(policy = "greedy", index = best_idx, "selected candidate");
        Ok(&candidates[best_idx])
    }

    /// Returns the candidates with their base scores, highest first, ties in original order.
    ///
    /// # Errors
    ///
    /// As for `select`.
    fn rank<'c>(
        &self,
        candidates: &'c [Candidate],
        _ctx: &PolicyContext<'_>,
    ) -> crate::Result<Vec<(&'c Candidate, f64)>> {
        let scores = base_scores(candidates)?;
        Ok(sort_ranked(candidates, &scores))
    }
}
