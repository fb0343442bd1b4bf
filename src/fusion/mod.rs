//! Score fusion and rule weighting: pure functions over scored candidate lists.
//!
//! Every score here is higher-is-better. The hybrid score of a candidate combines its
//! two leg scores, each normalised over the candidate list; a rule's final score then
//! adds its priority and scope terms (seed 003):
//!
//! ```text
//! hybrid = (w_vector * norm(vector) + w_text * norm(bm25)) / (w_vector + w_text)
//! final  = hybrid_weight * hybrid + priority_weight * norm(priority) + scope_weight * scope
//! ```
//!
//! # The pieces
//!
//! - [`FusionSpec`] is the configuration of one kind's fusion (`[fusion.rules]`): the
//!   method, each leg's normalisation, the weights, the bounds and the RRF constant. Its
//!   default is seed 003's `0.7 * vector + 0.3 * min_max(bm25)`.
//!   [`FusionMethod`] is `weighted`, with a [`Normalization`] per leg (`min_max`,
//!   `fixed_bounds`, `z_score`), or `rrf`.
//! - [`FusionWeights::in_use`] turns the configured weights into the weights a query
//!   actually uses: multiplied by per-leg factors ([`PerLeg<f64>`], from feedback), a leg
//!   that did not run gives its weight to the other, and the two sum to 1.
//! - [`fuse`] scores a candidate list (each candidate's raw scores, a
//!   [`PerLeg<Option<f64>>`]) into [`Fused`]
//!   values: the hybrid score in `[0, 1]` and each leg's normalised score, for explain.
//!
//! # Missing legs
//!
//! A candidate can be missing from a leg: no BM25 match at all, or no vector. Such a
//! candidate gets a normalised score of exactly 0 for that leg in every method, and a
//! candidate present in the leg never gets less than 0, so a document is never rewarded
//! for being absent from a list (a peer engine shipped z-score fusion that mapped a
//! missing 0 above present low scores). Statistics (minimum, maximum, mean, deviation,
//! ranks) are computed over the present scores only.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::model::leg::PerLeg;
use crate::{Error, ErrorKind, Result};

/// Min-max normalisation of `scores` into `[0, 1]`.
///
/// A list whose scores are all equal (one candidate included) normalises to 1.0 where
/// the score is above 0 and to 0.0 otherwise, so a lone weak match is not inflated from
/// nothing and a list of zeros stays zero.
///
/// `[2, 1, 0]` gives `[1, 0.5, 0]`, `[3]` gives `[1]` and `[0, 0]` stays `[0, 0]`.
#[cfg(test)]
pub(crate) fn min_max(scores: &[f64]) -> Vec<f64> {
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

/// The weights of the two legs.
///
/// As configuration (the two weight keys of [`FusionSpec`]) the weights are relative:
/// [`fuse`] divides by their sum. [`FusionWeights::in_use`] gives the weights a query
/// actually uses, which sum to 1.
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
    /// `vector_weight * vector + text_weight * text_normalised`.
    pub fn hybrid(&self, vector: f64, text_normalised: f64) -> f64 {
        self.vector_weight * vector + self.text_weight * text_normalised
    }

    /// The weights a query actually uses, for [`fuse`] and for explain.
    ///
    /// Each weight is multiplied by its leg's factor (`factors`, from query adaptation
    /// or feedback; [`PerLeg::ONES`] leaves them as they are), then:
    ///
    /// - both legs ran: the two products are renormalised to sum to 1 (both 0: 0.5 each);
    /// - one leg ran: it gets weight 1.0 and the other 0.0 (a leg that did not run gives
    ///   its weight to the other, so an index without vectors ranks by BM25 on the full
    ///   scale);
    /// - no leg ran: both 0.0.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] if a weight or a factor is negative or not finite, or
    /// a product overflows.
    ///
    /// # Example
    ///
    /// ```
    /// use ruchedb::PerLeg;
    /// use ruchedb::fusion::FusionWeights;
    ///
    /// let configured = FusionWeights { vector_weight: 0.7, text_weight: 0.3 };
    /// let only_text = configured.in_use(PerLeg::TEXT, PerLeg::ONES)?;
    /// assert_eq!((only_text.vector_weight, only_text.text_weight), (0.0, 1.0));
    ///
    /// let boosted = configured.in_use(PerLeg::BOTH, PerLeg { text: 1.8, ..PerLeg::ONES })?;
    /// assert!((boosted.text_weight - 0.54 / 1.24).abs() < 1e-12);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn in_use(&self, ran: PerLeg<bool>, factors: PerLeg<f64>) -> Result<FusionWeights> {
        for (what, value) in [
            ("vector_weight", self.vector_weight),
            ("text_weight", self.text_weight),
            ("the vector factor", factors.vector),
            ("the text factor", factors.text),
        ] {
            if !value.is_finite() || value < 0.0 {
                return Err(Error::invalid_input(format!(
                    "{what} must be a finite number >= 0, got {value}"
                )));
            }
        }
        let (vector_weight, text_weight) = match (ran.vector, ran.text) {
            (false, false) => (0.0, 0.0),
            (true, false) => (1.0, 0.0),
            (false, true) => (0.0, 1.0),
            (true, true) => {
                let vector = self.vector_weight * factors.vector;
                let text = self.text_weight * factors.text;
                if !vector.is_finite() || !text.is_finite() {
                    return Err(Error::invalid_input(
                        "a fusion weight times its factor is too large",
                    ));
                }
                relative_weights(vector, text).unwrap_or((0.5, 0.5))
            }
        };
        Ok(FusionWeights {
            vector_weight,
            text_weight,
        })
    }
}

/// `(vector, text)` scaled to sum to 1, or `None` when both are 0.
///
/// Both must be finite and non-negative. Dividing by the larger one first keeps the sum
/// finite for any finite inputs.
fn relative_weights(vector: f64, text: f64) -> Option<(f64, f64)> {
    let largest = vector.max(text);
    if largest <= 0.0 {
        return None;
    }
    let (vector, text) = (vector / largest, text / largest);
    let total = vector + text;
    Some((vector / total, text / total))
}

/// How one leg's scores are mapped onto `[0, 1]` by the weighted method.
///
/// Statistics are taken over the candidates present in the leg; a missing candidate
/// gets 0.0 (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Norm {
    /// `(s - min) / (max - min)` over the present scores.
    ///
    /// When some candidates are missing from the leg, the lower end is `min(min, 0)`:
    /// a missing candidate stands for the score 0 of a non-matching document, so with
    /// BM25 (never negative) the weakest match keeps credit rather than tying with the
    /// non-matching documents, exactly as min-max over the whole list with missing
    /// scores as 0 (seed 003). With negative scores the lower end stays the present
    /// minimum, so a missing candidate is never placed above a present one.
    ///
    /// When the range is 0 (one present candidate, or all equal) a score above 0
    /// normalises to 1.0 and any other to 0.0, as [`min_max`].
    MinMax,
    /// `(s - lower) / (upper - lower)` clamped to `[0, 1]`: absolute bounds, so a single
    /// weak BM25 hit does not become 1.0. With `[0, 1]` it keeps a cosine score as is.
    FixedBounds {
        /// The score that maps to 0.0 (and below).
        lower: f64,
        /// The score that maps to 1.0 (and above).
        upper: f64,
    },
    /// Distribution-based score fusion (Qdrant's DBSF): `(s - (mean - 3σ)) / 6σ`,
    /// clamped to `[0, 1]`, with the mean and the **population** standard deviation of
    /// the present scores (Qdrant uses the sample deviation, which spreads small lists
    /// less; the population one is the plain definition of a z-score).
    ///
    /// A score equal to the mean maps to 0.5, and so do all the scores of a list with no
    /// spread (one present candidate, or all equal): the limit of the formula, and what
    /// Qdrant does. A present candidate thus still ranks above the missing ones at 0.0.
    ZScore,
}

impl Norm {
    /// Normalises one leg's scores (`None`: the candidate is missing from the leg).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NonFiniteScore`] if a score is NaN or infinite;
    /// [`ErrorKind::InvalidInput`] if fixed bounds are not finite with `lower < upper`.
    #[cfg(test)]
    pub(crate) fn apply(&self, scores: &[Option<f64>]) -> Result<Vec<f64>> {
        self.validate()?;
        check_finite(scores, "leg")?;
        Ok(self.normalize(scores))
    }

    /// Checks fixed bounds: finite, `lower < upper`, finite width.
    fn validate(&self) -> Result<()> {
        match *self {
            Norm::FixedBounds { lower, upper } => {
                check_bounds(lower, upper).map_err(Error::invalid_input)
            }
            Norm::MinMax | Norm::ZScore => Ok(()),
        }
    }

    /// Normalises checked (finite) scores.
    fn normalize(&self, scores: &[Option<f64>]) -> Vec<f64> {
        match *self {
            Norm::MinMax => min_max_leg(scores),
            Norm::FixedBounds { lower, upper } => scores
                .iter()
                .map(|score| score.map_or(0.0, |s| ((s - lower) / (upper - lower)).clamp(0.0, 1.0)))
                .collect(),
            Norm::ZScore => z_score_leg(scores),
        }
    }
}

impl fmt::Display for Norm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Norm::MinMax => f.write_str("min_max"),
            Norm::FixedBounds { lower, upper } => {
                write!(f, "fixed_bounds [{lower}, {upper}]")
            }
            Norm::ZScore => f.write_str("z_score"),
        }
    }
}

/// The smallest and largest present score, or `None` when no score is present.
fn present_range(scores: &[Option<f64>]) -> Option<(f64, f64)> {
    scores.iter().flatten().fold(None, |range, &s| match range {
        None => Some((s, s)),
        Some((lo, hi)) => Some((f64::min(lo, s), f64::max(hi, s))),
    })
}

/// [`Norm::MinMax`] over finite scores.
fn min_max_leg(scores: &[Option<f64>]) -> Vec<f64> {
    let Some((mut lo, hi)) = present_range(scores) else {
        return vec![0.0; scores.len()];
    };
    if scores.iter().any(Option::is_none) {
        lo = lo.min(0.0);
    }
    let range = hi - lo;
    // Scaling by the largest magnitude keeps the range finite for extreme scores; it is
    // only needed (and only done) when the plain range overflows.
    let scale = if range.is_finite() {
        1.0
    } else {
        lo.abs().max(hi.abs())
    };
    let (lo, hi) = (lo / scale, hi / scale);
    let range = hi - lo;
    scores
        .iter()
        .map(|score| match *score {
            None => 0.0,
            Some(s) if range > 0.0 => ((s / scale - lo) / range).clamp(0.0, 1.0),
            Some(s) if s > 0.0 => 1.0,
            Some(_) => 0.0,
        })
        .collect()
}

/// [`Norm::ZScore`] over finite scores.
fn z_score_leg(scores: &[Option<f64>]) -> Vec<f64> {
    let Some((lo, hi)) = present_range(scores) else {
        return vec![0.0; scores.len()];
    };
    if lo == hi {
        return scores
            .iter()
            .map(|s| if s.is_some() { 0.5 } else { 0.0 })
            .collect();
    }
    // A z-score does not change when every score is divided by the same positive
    // number; dividing by the largest magnitude keeps the sums below finite.
    let scale = lo.abs().max(hi.abs());
    let present: Vec<f64> = scores.iter().flatten().map(|s| s / scale).collect();
    let n = present.len() as f64;
    let mean = present.iter().sum::<f64>() / n;
    let variance = present.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    let deviation = variance.sqrt();
    scores
        .iter()
        .map(|score| match *score {
            None => 0.0,
            // Rounding can collapse a spread that tiny to nothing: all equal then.
            Some(_) if deviation <= 0.0 => 0.5,
            Some(s) => ((s / scale - mean) / deviation / 6.0 + 0.5).clamp(0.0, 1.0),
        })
        .collect()
}

/// Reciprocal rank fusion of one leg, normalised: `(k + 1) / (k + rank)`, 0.0 when missing.
///
/// Ranks are 1-based among the present candidates, by score descending; equal scores
/// share the best rank of their group (competition ranking, "1224").
fn rrf_leg(scores: &[Option<f64>], k: f64) -> Vec<f64> {
    let mut sorted: Vec<f64> = scores.iter().flatten().copied().collect();
    sorted.sort_by(|a, b| b.total_cmp(a));
    scores
        .iter()
        .map(|score| match *score {
            None => 0.0,
            Some(s) => {
                // The number of present scores strictly greater than `s`.
                let better = sorted.partition_point(|&other| other > s);
                (k + 1.0) / (k + 1.0 + better as f64)
            }
        })
        .collect()
}

/// How the two legs are fused, resolved from a [`FusionSpec`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub(crate) enum Method {
    /// Each leg normalised onto `[0, 1]`, then the weighted mean of the two.
    Weighted {
        /// The normalisation of the text (BM25) leg.
        text: Norm,
        /// The normalisation of the vector leg.
        vector: Norm,
    },
    /// Reciprocal rank fusion: `Σ w_leg / (k + rank_leg)` divided by its maximum
    /// `Σ w_leg / (k + 1)`, so the result lies in `[0, 1]` and can be combined with
    /// priority and scope terms.
    ///
    /// Ranks are 1-based within the candidate list by the leg's score; equal scores
    /// share the best rank of their group (competition ranking: scores 9, 7, 7, 5 rank
    /// 1, 2, 2, 4), so a tie never depends on the order of the list. A candidate missing
    /// from a leg contributes 0 for that leg. Each leg's normalised score reported in
    /// [`Fused`] is its share `(k + 1) / (k + rank)`.
    Rrf {
        /// The rank constant (default 60); larger values flatten the rank differences.
        k: f64,
    },
}

impl Method {
    /// Checks the method's parameters: `k` finite and > 0, fixed bounds finite and
    /// increasing.
    fn validate(&self) -> Result<()> {
        match *self {
            Method::Weighted { text, vector } => {
                text.validate()?;
                vector.validate()
            }
            Method::Rrf { k } if k.is_finite() && k > 0.0 => Ok(()),
            Method::Rrf { k } => Err(Error::invalid_input(format!(
                "the RRF constant k must be a finite number > 0, got {k}"
            ))),
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Method::Weighted { text, vector } => {
                write!(f, "weighted (text: {text}, vector: {vector})")
            }
            Method::Rrf { k } => write!(f, "rrf (k = {k})"),
        }
    }
}

/// The fused score of one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
#[non_exhaustive]
pub struct Fused {
    /// The weighted mean of the two normalised leg scores, in `[0, 1]`.
    pub hybrid: f64,
    /// The text leg's normalised score in `[0, 1]` (0.0 when missing from the leg).
    pub text_normalized: f64,
    /// The vector leg's normalised score in `[0, 1]` (0.0 when missing from the leg).
    pub vector_normalized: f64,
}

/// [`fuse`] with the method resolved from its spec.
pub(crate) fn fuse_with(
    candidates: &[PerLeg<Option<f64>>],
    method: &Method,
    weights: FusionWeights,
) -> Result<Vec<Fused>> {
    method.validate()?;
    for (what, weight) in [
        ("vector_weight", weights.vector_weight),
        ("text_weight", weights.text_weight),
    ] {
        if !weight.is_finite() || weight < 0.0 {
            return Err(Error::invalid_input(format!(
                "{what} must be a finite number >= 0, got {weight}"
            )));
        }
    }
    let text: Vec<Option<f64>> = candidates.iter().map(|c| c.text).collect();
    let vector: Vec<Option<f64>> = candidates.iter().map(|c| c.vector).collect();
    check_finite(&text, "text")?;
    check_finite(&vector, "vector")?;
    let (text_normalized, vector_normalized) = match *method {
        Method::Weighted {
            text: text_norm,
            vector: vector_norm,
        } => (text_norm.normalize(&text), vector_norm.normalize(&vector)),
        Method::Rrf { k } => (rrf_leg(&text, k), rrf_leg(&vector, k)),
    };
    let relative = relative_weights(weights.vector_weight, weights.text_weight);
    Ok(text_normalized
        .into_iter()
        .zip(vector_normalized)
        .map(|(text_normalized, vector_normalized)| {
            let hybrid = relative.map_or(0.0, |(w_vector, w_text)| {
                (w_vector * vector_normalized + w_text * text_normalized).clamp(0.0, 1.0)
            });
            Fused {
                hybrid,
                text_normalized,
                vector_normalized,
            }
        })
        .collect())
}

/// Checks that every present score is finite.
fn check_finite(scores: &[Option<f64>], leg: &str) -> Result<()> {
    match scores
        .iter()
        .position(|score| score.is_some_and(|s| !s.is_finite()))
    {
        None => Ok(()),
        Some(idx) => Err(Error::new(ErrorKind::NonFiniteScore {
            context: format!("the {leg} score of candidate {idx}"),
        })),
    }
}

/// Checks fixed bounds; the message names what is wrong.
fn check_bounds(lower: f64, upper: f64) -> std::result::Result<(), String> {
    if !lower.is_finite() || !upper.is_finite() {
        Err(format!("bounds must be finite, got [{lower}, {upper}]"))
    } else if lower >= upper {
        Err(format!(
            "lower bound must be below the upper bound, got [{lower}, {upper}]"
        ))
    } else if !(upper - lower).is_finite() {
        Err(format!("bounds are too far apart, got [{lower}, {upper}]"))
    } else {
        Ok(())
    }
}

mod rule;
mod spec;
#[cfg(test)]
mod tests;

pub use self::rule::{RuleScore, RuleWeights};
pub use self::spec::{FusionMethod, FusionSpec, Normalization, fuse};

/// Checks a weight: finite and not negative.
pub(crate) fn check_weight(key: &str, value: f64) -> Result<()> {
    if !value.is_finite() || value < 0.0 {
        return Err(Error::invalid_config(
            key,
            format!("must be a finite number >= 0, got {value}"),
        ));
    }
    Ok(())
}
