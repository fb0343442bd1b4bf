//! The beam search policy: scores adjusted for episode length and repeated action types,
//! with the best few kept as beams.

use std::collections::HashSet;

use super::{ActionSelectionPolicy, Candidate, PolicyContext, argmax, base_scores, sort_ranked};
use crate::Error;

const DEFAULT_BEAM_WIDTH: usize = 3;
const DEFAULT_LENGTH_PENALTY: f64 = 0.6;
const DEFAULT_DIVERSITY_PENALTY: f64 = 0.2;

/// Picks the candidate with the best adjusted score and keeps the best few as beams
/// (registered as `"beam_search"`).
///
/// Each candidate's base score is adjusted twice:
///
/// - **Length penalty.** `length_factor = ((5 + step) / 6) ^ length_penalty` and
///   `adjusted = base_score / length_factor`, where `step` comes from the
///   [`PolicyContext`]. The factor grows with the step, so later steps score lower.
/// - **Diversity penalty.** Walking the candidates in the given order, every candidate
///   whose action type already appeared earlier loses `diversity_penalty`, once (the
///   penalty does not accumulate with the number of repeats).
///
/// `select` returns the best adjusted candidate (the first one on ties) and keeps the best
/// `beam_width` (candidate, adjusted score) pairs of the call as the policy's beams,
/// replacing those of the previous call; [`reset`](ActionSelectionPolicy::reset) clears
/// them. The beams are state that the caller owns: use one policy per episode.
///
/// ## Defaults
///
/// | Key | Default | Valid values |
/// |---|---|---|
/// | `beam_width` | 3 | integer >= 1 |
/// | `length_penalty` | 0.6 | finite, >= 0 |
/// | `diversity_penalty` | 0.2 | finite, >= 0 |
///
/// # Example
///
/// The worked example of the design, at step 0 with the default length penalty:
///
/// ```
/// use rand::SeedableRng;
/// use ruchedb::policy::{ActionSelectionPolicy, BeamSearchPolicy, Candidate, PolicyContext};
///
/// let candidates = vec![
///     Candidate::new("code").with_id("approach_a").with_confidence(0.8),
///     Candidate::new("code").with_id("approach_b").with_confidence(0.75),
///     Candidate::new("final").with_id("FINAL").with_confidence(0.7),
/// ];
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let mut ctx = PolicyContext::new(&mut rng).with_step(0);
/// let mut policy = BeamSearchPolicy::builder().build()?;
///
/// let ranked = policy.rank(&candidates, &ctx)?;
/// let rounded: Vec<String> = ranked
///     .iter()
///     .map(|(c, score)| format!("{} {score:.2}", c.key()))
///     .collect();
/// assert_eq!(rounded, ["approach_a 0.89", "FINAL 0.78", "approach_b 0.64"]);
///
/// assert_eq!(policy.select(&candidates, &mut ctx)?.key(), "approach_a");
/// assert_eq!(policy.beams().len(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct BeamSearchPolicy {
    beam_width: usize,
    length_penalty: f64,
    diversity_penalty: f64,
    beams: Vec<(Candidate, f64)>,
}

/// Configures a [`BeamSearchPolicy`]; unset knobs take the defaults listed there.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BeamSearchPolicyBuilder {
    beam_width: Option<usize>,
    length_penalty: Option<f64>,
    diversity_penalty: Option<f64>,
}

impl BeamSearchPolicyBuilder {
    /// Sets how many (candidate, score) pairs are kept as beams (default 3).
    #[must_use]
    pub fn beam_width(mut self, beam_width: usize) -> BeamSearchPolicyBuilder {
        self.beam_width = Some(beam_width);
        self
    }

    /// Sets the exponent of the length factor (default 0.6); higher penalises later steps
    /// more.
    #[must_use]
    pub fn length_penalty(mut self, length_penalty: f64) -> BeamSearchPolicyBuilder {
        self.length_penalty = Some(length_penalty);
        self
    }

    /// Sets what a repeated action type loses (default 0.2).
    #[must_use]
    pub fn diversity_penalty(mut self, diversity_penalty: f64) -> BeamSearchPolicyBuilder {
        self.diversity_penalty = Some(diversity_penalty);
        self
    }

    /// Validates the configuration and creates the policy, without beams.
    ///
    /// # Errors
    ///
    /// Returns an error of kind [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig)
    /// naming the key when `beam_width` is 0, or `length_penalty` or `diversity_penalty` is
    /// negative or not finite.
    pub fn build(self) -> crate::Result<BeamSearchPolicy> {
        let beam_width = self.beam_width.unwrap_or(DEFAULT_BEAM_WIDTH);
        if beam_width == 0 {
            return Err(Error::invalid_config(
                "beam_width",
                "must be at least 1, got 0",
            ));
        }
        let length_penalty = self.length_penalty.unwrap_or(DEFAULT_LENGTH_PENALTY);
        check_non_negative("length_penalty", length_penalty)?;
        let diversity_penalty = self.diversity_penalty.unwrap_or(DEFAULT_DIVERSITY_PENALTY);
        check_non_negative("diversity_penalty", diversity_penalty)?;
        Ok(BeamSearchPolicy {
            beam_width,
            length_penalty,
            diversity_penalty,
            beams: Vec::new(),
        })
    }
}

/// Returns an `InvalidConfig` error for `key` unless `value` is finite and >= 0.
fn check_non_negative(key: &str, value: f64) -> crate::Result<()> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(Error::invalid_config(
            key,
            format!("must be a finite number >= 0, got {value}"),
        ))
    }
}

impl BeamSearchPolicy {
    /// Returns a builder to configure the policy.
    pub fn builder() -> BeamSearchPolicyBuilder {
        BeamSearchPolicyBuilder::default()
    }

    /// Returns the beam width.
    pub fn beam_width(&self) -> usize {
        self.beam_width
    }

    /// Returns the length penalty exponent.
    pub fn length_penalty(&self) -> f64 {
        self.length_penalty
    }

    /// Returns the diversity penalty.
    pub fn diversity_penalty(&self) -> f64 {
        self.diversity_penalty
    }

    /// Returns the beams of the last `select`: at most `beam_width` (candidate, adjusted
    /// score) pairs, best first. Empty before the first call and after `reset`.
    pub fn beams(&self) -> &[(Candidate, f64)] {
        &self.beams
    }

    /// Returns the adjusted score of each candidate, in the candidates' order.
    fn adjusted_scores(&self, candidates: &[Candidate], step: usize) -> crate::Result<Vec<f64>> {
        let base = base_scores(candidates)?;
        let length_factor = ((5.0 + step as f64) / 6.0).powf(self.length_penalty);
        let mut seen_action_types = HashSet::new();
        let adjusted = candidates
            .iter()
            .zip(base)
            .map(|(candidate, base_score)| {
                let mut score = base_score / length_factor;
                if !seen_action_types.insert(candidate.action_type()) {
                    score -= self.diversity_penalty;
                }
                score
            })
            .collect();
        Ok(adjusted)
    }
}

impl ActionSelectionPolicy for BeamSearchPolicy {
    fn name(&self) -> &str {
        "beam_search"
    }

    /// Returns the candidate with the best adjusted score and keeps the best `beam_width`
    /// as beams.
    ///
    /// # Errors
    ///
    /// `EmptyCandidates` when there are none, `NonFiniteScore` when a score is NaN or
    /// infinite. The beams are unchanged on error.
    fn select<'c>(
        &mut self,
        candidates: &'c [Candidate],
        ctx: &mut PolicyContext<'_>,
    ) -> crate::Result<&'c Candidate> {
        let adjusted = self.adjusted_scores(candidates, ctx.step())?;
        let best_idx = argmax(&adjusted);
        self.beams = sort_ranked(candidates, &adjusted)
            .into_iter()
            .take(self.beam_width)
            .map(|(candidate, score)| (candidate.clone(), score))
            .collect();
        tracing::debug!(
            policy = "beam_search",
            index = best_idx,
            "selected candidate"
        );
        Ok(&candidates[best_idx])
    }

    /// Returns the candidates with their adjusted scores, highest first, ties in original
    /// order. Ranking does not touch the beams.
    ///
    /// # Errors
    ///
    /// As for `select`.
    fn rank<'c>(
        &self,
        candidates: &'c [Candidate],
        ctx: &PolicyContext<'_>,
    ) -> crate::Result<Vec<(&'c Candidate, f64)>> {
        let adjusted = self.adjusted_scores(candidates, ctx.step())?;
        Ok(sort_ranked(candidates, &adjusted))
    }

    /// Clears the beams.
    fn reset(&mut self) {
        self.beams.clear();
    }
}
