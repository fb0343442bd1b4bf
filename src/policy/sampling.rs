//! The sampling policy: draw a candidate at random, weighted by temperature-scaled scores.

use rand::Rng;

use super::{ActionSelectionPolicy, Candidate, PolicyContext, base_scores, sort_ranked};
use crate::Error;

/// Scores below this are raised to it before temperature scaling, so that every candidate
/// keeps a chance.
const SCORE_FLOOR: f64 = 0.01;

const DEFAULT_TEMPERATURE: f64 = 1.0;
const DEFAULT_MIN_PROBABILITY: f64 = 0.01;

/// Draws a candidate at random with probabilities derived from the scores (registered as
/// `"sampling"`).
///
/// The probabilities are computed in five steps:
///
/// 1. each base score is floored at 0.01;
/// 2. each is raised to the power `1 / temperature`;
/// 3. they are normalised to sum to 1;
/// 4. each probability is floored at `min_probability`;
/// 5. they are normalised again.
///
/// Low temperatures (0.1 to 0.3) are nearly greedy, 1.0 makes probabilities proportional to
/// scores, and high ones (2 to 5) are nearly uniform. The draw uses the RNG of the
/// [`PolicyContext`], so the same seed gives the same choices. The policy is stateless.
///
/// ## Defaults
///
/// | Key | Default | Valid values |
/// |---|---|---|
/// | `temperature` | 1.0 | finite, > 0 |
/// | `min_probability` | 0.01 | 0 to 1 |
///
/// # Example
///
/// ```
/// use rand::SeedableRng;
/// use ruchedb::policy::{ActionSelectionPolicy, Candidate, PolicyContext, SamplingPolicy};
///
/// let candidates = vec![
///     Candidate::new("code").with_id("approach_a").with_confidence(0.9),
///     Candidate::new("code").with_id("approach_b").with_confidence(0.6),
///     Candidate::new("code").with_id("approach_c").with_confidence(0.1),
/// ];
/// let mut policy = SamplingPolicy::builder().temperature(0.5).build()?;
///
/// let mut rng = rand::rngs::StdRng::seed_from_u64(42);
/// let mut ctx = PolicyContext::new(&mut rng);
/// let first = policy.select(&candidates, &mut ctx)?.key().to_owned();
///
/// // The same seed makes the same choice.
/// let mut rng = rand::rngs::StdRng::seed_from_u64(42);
/// let mut ctx = PolicyContext::new(&mut rng);
/// assert_eq!(policy.select(&candidates, &mut ctx)?.key(), first);
///
/// // `rank` returns the selection probabilities, highest first.
/// let ranked = policy.rank(&candidates, &ctx)?;
/// assert_eq!(ranked[0].0.key(), "approach_a");
/// assert!((ranked.iter().map(|(_, p)| p).sum::<f64>() - 1.0).abs() < 1e-12);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingPolicy {
    temperature: f64,
    min_probability: f64,
}

/// Configures a [`SamplingPolicy`]; unset knobs take the defaults listed there.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SamplingPolicyBuilder {
    temperature: Option<f64>,
    min_probability: Option<f64>,
}

impl SamplingPolicyBuilder {
    /// Sets the temperature (default 1.0): lower concentrates the probability on the best
    /// candidates, higher spreads it evenly.
    #[must_use]
    pub fn temperature(mut self, temperature: f64) -> SamplingPolicyBuilder {
        self.temperature = Some(temperature);
        self
    }

    /// Sets the probability floor applied before the final renormalisation (default 0.01).
    #[must_use]
    pub fn min_probability(mut self, min_probability: f64) -> SamplingPolicyBuilder {
        self.min_probability = Some(min_probability);
        self
    }

    /// Validates the configuration and creates the policy.
    ///
    /// # Errors
    ///
    /// Returns an error of kind [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig)
    /// naming the key when `temperature` is not a finite number > 0, or `min_probability`
    /// is not between 0 and 1.
    pub fn build(self) -> crate::Result<SamplingPolicy> {
        let temperature = self.temperature.unwrap_or(DEFAULT_TEMPERATURE);
        if !(temperature.is_finite() && temperature > 0.0) {
            return Err(Error::invalid_config(
                "temperature",
                format!("must be a finite number greater than 0, got {temperature}"),
            ));
        }
        let min_probability = self.min_probability.unwrap_or(DEFAULT_MIN_PROBABILITY);
        if !(0.0..=1.0).contains(&min_probability) {
            return Err(Error::invalid_config(
                "min_probability",
                format!("must be between 0 and 1, got {min_probability}"),
            ));
        }
        Ok(SamplingPolicy {
            temperature,
            min_probability,
        })
    }
}

impl SamplingPolicy {
    /// Returns a builder to configure the policy.
    pub fn builder() -> SamplingPolicyBuilder {
        SamplingPolicyBuilder::default()
    }

    /// Returns the temperature.
    pub fn temperature(&self) -> f64 {
        self.temperature
    }

    /// Returns the probability floor.
    pub fn min_probability(&self) -> f64 {
        self.min_probability
    }

    /// Returns the selection probability of each candidate, in the candidates' order.
    ///
    /// # Errors
    ///
    /// `EmptyCandidates` when there are none, `NonFiniteScore` when a score is NaN or
    /// infinite.
    ///
    /// # Example
    ///
    /// ```
    /// use ruchedb::policy::{Candidate, SamplingPolicy};
    ///
    /// let candidates = vec![
    ///     Candidate::new("code").with_confidence(0.9),
    ///     Candidate::new("code").with_confidence(0.6),
    ///     Candidate::new("final").with_confidence(0.1),
    /// ];
    /// let policy = SamplingPolicy::builder().build()?;
    /// let probabilities = policy.probabilities(&candidates)?;
    /// assert!((probabilities[0] - 0.5625).abs() < 1e-12);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn probabilities(&self, candidates: &[Candidate]) -> crate::Result<Vec<f64>> {
        let scores = base_scores(candidates)?;
        // `score^(1/t)` normalised equals a softmax of `ln(score) / t`. Working with
        // logarithms and subtracting the largest one keeps the computation finite at any
        // temperature: the best candidate's weight is exactly 1, the others underflow to 0
        // at worst, and the sum is never 0.
        let log_weights: Vec<f64> = scores
            .iter()
            .map(|score| score.max(SCORE_FLOOR).ln() / self.temperature)
            .collect();
        let max_log_weight = log_weights
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let weights: Vec<f64> = log_weights
            .iter()
            .map(|log_weight| (log_weight - max_log_weight).exp())
            .collect();
        let floored: Vec<f64> = normalise(&weights)
            .into_iter()
            .map(|probability| probability.max(self.min_probability))
            .collect();
        Ok(normalise(&floored))
    }
}

/// Divides every value by their sum, which must be positive.
fn normalise(values: &[f64]) -> Vec<f64> {
    let total: f64 = values.iter().sum();
    values.iter().map(|value| value / total).collect()
}

impl ActionSelectionPolicy for SamplingPolicy {
    fn name(&self) -> &str {
        "sampling"
    }

    /// Draws one candidate with the RNG of `ctx` according to
    /// [`probabilities`](SamplingPolicy::probabilities).
    ///
    /// # Errors
    ///
    /// `EmptyCandidates` when there are none, `NonFiniteScore` when a score is NaN or
    /// infinite.
    fn select<'c>(
        &mut self,
        candidates: &'c [Candidate],
        ctx: &mut PolicyContext<'_>,
    ) -> crate::Result<&'c Candidate> {
        let probabilities = self.probabilities(candidates)?;
        let draw: f64 = ctx.rng().random();
        let mut cumulative = 0.0;
        // Rounding can leave the cumulative sum a hair below 1; a draw above it goes to the
        // last candidate with a non-zero probability.
        let mut chosen_idx = probabilities.iter().rposition(|p| *p > 0.0).unwrap_or(0);
        for (idx, probability) in probabilities.iter().enumerate() {
            cumulative += probability;
            if draw < cumulative {
                chosen_idx = idx;
                break;
            }
        }
        tracing::debug!(
            policy = "sampling",
            index = chosen_idx,
            "selected candidate"
        );
        Ok(&candidates[chosen_idx])
    }

    /// Returns the candidates with their selection probabilities, highest first, ties in
    /// original order. Ranking draws no random numbers.
    ///
    /// # Errors
    ///
    /// As for `select`.
    fn rank<'c>(
        &self,
        candidates: &'c [Candidate],
        _ctx: &PolicyContext<'_>,
    ) -> crate::Result<Vec<(&'c Candidate, f64)>> {
        let probabilities = self.probabilities(candidates)?;
        Ok(sort_ranked(candidates, &probabilities))
    }
}
