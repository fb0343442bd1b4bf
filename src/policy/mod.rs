//! Action selection: given scored candidate actions (for example rules or tools that a search
//! returned), pick the one an agent executes next.
//!
//! The module is pure: it does no I/O, and its only randomness is the RNG the caller passes in
//! through [`PolicyContext`], so a seeded RNG makes every choice reproducible.
//!
//! - [`Candidate`] is one scored action: an optional id, an action type, a JSON payload and a
//!   `confidence` or `score` (0.5 when both are absent).
//! - [`ActionSelectionPolicy`] is the trait every policy implements: `select` one candidate,
//!   `rank` them all, and optionally learn from `update` and forget with `reset`.
//! - Built in: [`GreedyPolicy`] (`"greedy"`), [`SamplingPolicy`] (`"sampling"`),
//!   [`BeamSearchPolicy`] (`"beam_search"`) and [`MctsPolicy`] (`"mcts"`).
//! - [`PolicyRegistry`] creates policies by name from a JSON configuration map and accepts
//!   custom policies.

use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Error, ErrorKind};

mod beam;
mod greedy;
mod mcts;
mod registry;
mod sampling;

pub use beam::{BeamSearchPolicy, BeamSearchPolicyBuilder};
pub use greedy::GreedyPolicy;
pub use mcts::{MctsPolicy, MctsPolicyBuilder};
pub use registry::PolicyRegistry;
pub use sampling::{SamplingPolicy, SamplingPolicyBuilder};

#[cfg(test)]
mod tests;

/// The score a candidate gets when it has neither a `confidence` nor a `score`.
const DEFAULT_SCORE: f64 = 0.5;

/// One action an agent could execute next, with how good it looks.
///
/// A candidate has an action type (`"code"`, `"final"`, a tool name, ...), an optional id
/// (for example the id of the rule it came from), a free-form JSON payload, and a
/// `confidence` or a `score`. Policies read [`Candidate::base_score`]: the confidence if
/// set, else the score, else 0.5. Higher is better.
///
/// In JSON the action type is the field `action` (`action_type` is accepted too). Seed
/// 002's candidates are free-form dicts: fields other than `id`, `action`, `payload`,
/// `confidence` and `score` are kept in `payload` (an object then), so they load as
/// they are:
///
/// ```
/// # use ruchedb::policy::Candidate;
/// let candidate: Candidate = serde_json::from_str(
///     r#"{"action": "code", "code": "print(42)", "confidence": 0.9}"#,
/// )?;
/// assert_eq!(candidate.action_type(), "code");
/// assert_eq!(candidate.payload()["code"], "print(42)");
/// assert_eq!(candidate.base_score()?, 0.9);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Search hits convert directly: [`Candidate::from_hit`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "CandidateDict")]
pub struct Candidate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(rename = "action", alias = "action_type")]
    action_type: String,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    payload: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    confidence: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    score: Option<f64>,
}

/// The JSON form of a candidate as read: its known fields, and the others.
#[derive(Deserialize)]
struct CandidateDict {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    action_type: Option<String>,
    #[serde(default)]
    payload: Value,
    #[serde(default)]
    confidence: Option<f64>,
    #[serde(default)]
    score: Option<f64>,
    #[serde(flatten)]
    extra: serde_json::Map<String, Value>,
}

impl TryFrom<CandidateDict> for Candidate {
    type Error = String;

    fn try_from(dict: CandidateDict) -> std::result::Result<Candidate, String> {
        let action_type = match (dict.action, dict.action_type) {
            (Some(action), None) | (None, Some(action)) => action,
            (Some(_), Some(_)) => {
                return Err("give `action` or `action_type`, not both".to_string());
            }
            (None, None) => return Err("missing field `action`".to_string()),
        };
        let payload = if dict.extra.is_empty() {
            dict.payload
        } else {
            match dict.payload {
                Value::Null => Value::Object(dict.extra),
                Value::Object(mut payload) => {
                    for (key, value) in dict.extra {
                        if payload.contains_key(&key) {
                            return Err(format!(
                                "field `{key}` is given both in `payload` and beside it"
                            ));
                        }
                        payload.insert(key, value);
                    }
                    Value::Object(payload)
                }
                _ => {
                    let keys: Vec<&str> = dict.extra.keys().map(String::as_str).collect();
                    return Err(format!(
                        "fields {keys:?} cannot join a `payload` that is not an object"
                    ));
                }
            }
        };
        Ok(Candidate {
            id: dict.id,
            action_type,
            payload,
            confidence: dict.confidence,
            score: dict.score,
        })
    }
}

impl Candidate {
    /// The candidate of a search hit: its id, its action type (a tool's `name`; `rule`,
    /// `scenario` or `chunk` for the other kinds), the document (without vectors) as
    /// payload, and the hit's final score as score, so that the policies order hits as
    /// the search did.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> ruchedb::Result<()> {
    /// use rand::SeedableRng;
    /// use ruchedb::{Engine, SearchRequest, Tool};
    /// use ruchedb::policy::{ActionSelectionPolicy, Candidate, GreedyPolicy, PolicyContext};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let engine = Engine::builder().create(dir.path())?;
    /// engine.upsert_tools([
    ///     Tool::new("track", "track_order", "Tell where an order is and when it will arrive"),
    ///     Tool::new("refund", "issue_refund", "Refund a returned item to the customer"),
    /// ])?;
    /// engine.commit()?;
    /// let hits = engine.search(&SearchRequest::tools("where is my order?"))?.hits;
    /// let candidates: Vec<Candidate> = hits.iter().map(Candidate::from_hit).collect();
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    /// let chosen = GreedyPolicy.select(&candidates, &mut PolicyContext::new(&mut rng))?;
    /// assert_eq!(chosen.action_type(), "track_order");
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_hit(hit: &crate::Hit) -> Candidate {
        Candidate::from_document(&hit.id, &hit.document, hit.score)
    }

    /// The candidate of a document scored `score` (what [`Candidate::from_hit`] makes of
    /// a hit, for hits that crossed a process or language boundary).
    pub fn from_document(id: &str, document: &crate::Document, score: f64) -> Candidate {
        let action_type = match document {
            crate::Document::Tool(tool) => tool.name.clone(),
            other => other.kind().as_str().to_string(),
        };
        Candidate {
            id: Some(id.to_string()),
            action_type,
            payload: serde_json::to_value(document).unwrap_or(Value::Null),
            confidence: None,
            score: Some(score),
        }
    }

    /// Creates a candidate of the given action type, without id, payload, confidence or score.
    ///
    /// # Example
    ///
    /// ```
    /// # use ruchedb::policy::Candidate;
    /// let candidate = Candidate::new("code")
    ///     .with_id("approach_a")
    ///     .with_payload(serde_json::json!({"code": "approach_a()"}))
    ///     .with_confidence(0.7);
    /// assert_eq!(candidate.key(), "approach_a");
    /// ```
    pub fn new(action_type: impl Into<String>) -> Candidate {
        Candidate {
            id: None,
            action_type: action_type.into(),
            payload: Value::Null,
            confidence: None,
            score: None,
        }
    }

    /// Sets the candidate's id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Candidate {
        self.id = Some(id.into());
        self
    }

    /// Sets the candidate's payload.
    #[must_use]
    pub fn with_payload(mut self, payload: Value) -> Candidate {
        self.payload = payload;
        self
    }

    /// Sets the candidate's confidence, which takes precedence over its score.
    ///
    /// The value is checked when a policy reads it: a NaN or infinite confidence makes the
    /// policy return an error of kind [`ErrorKind::NonFiniteScore`].
    #[must_use]
    pub fn with_confidence(mut self, confidence: f64) -> Candidate {
        self.confidence = Some(confidence);
        self
    }

    /// Sets the candidate's score, used when it has no confidence.
    ///
    /// The value is checked when a policy reads it, like [`Candidate::with_confidence`].
    #[must_use]
    pub fn with_score(mut self, score: f64) -> Candidate {
        self.score = Some(score);
        self
    }

    /// Returns the candidate's id, if it has one.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// Returns the candidate's action type.
    pub fn action_type(&self) -> &str {
        &self.action_type
    }

    /// Returns the candidate's payload (`null` when none was given).
    pub fn payload(&self) -> &Value {
        &self.payload
    }

    /// Returns the candidate's confidence, if set.
    pub fn confidence(&self) -> Option<f64> {
        self.confidence
    }

    /// Returns the candidate's score, if set.
    pub fn score(&self) -> Option<f64> {
        self.score
    }

    /// Returns the key that stateful policies track the candidate under: its id when it has
    /// one, else its action type.
    pub fn key(&self) -> &str {
        self.id.as_deref().unwrap_or(&self.action_type)
    }

    /// Returns the score policies read: the confidence if set, else the score, else 0.5.
    ///
    /// # Errors
    ///
    /// Returns an error of kind [`ErrorKind::NonFiniteScore`] when that value is NaN or
    /// infinite.
    pub fn base_score(&self) -> crate::Result<f64> {
        let (field, value) = match (self.confidence, self.score) {
            (Some(confidence), _) => ("confidence", confidence),
            (None, Some(score)) => ("score", score),
            (None, None) => return Ok(DEFAULT_SCORE),
        };
        if value.is_finite() {
            Ok(value)
        } else {
            Err(Error::new(ErrorKind::NonFiniteScore {
                context: format!("{field} of candidate `{}`", self.key()),
            }))
        }
    }
}

/// What a policy knows about the current call besides the candidates: the step number and
/// the caller's random number generator.
///
/// The RNG is borrowed, never global: seed it (for example with
/// `rand_chacha::ChaCha8Rng::seed_from_u64`) and the same calls make the same choices.
/// Deterministic policies ignore it.
///
/// # Example
///
/// ```
/// # use ruchedb::policy::PolicyContext;
/// use rand::SeedableRng;
///
/// let mut rng = rand::rngs::StdRng::seed_from_u64(7);
/// let mut ctx = PolicyContext::new(&mut rng).with_step(2);
/// assert_eq!(ctx.step(), 2);
/// ctx.set_step(3);
/// assert_eq!(ctx.step(), 3);
/// ```
pub struct PolicyContext<'a> {
    step: usize,
    rng: &'a mut dyn RngCore,
}

impl<'a> PolicyContext<'a> {
    /// Creates a context at step 0 that draws random numbers from `rng`.
    pub fn new(rng: &'a mut dyn RngCore) -> PolicyContext<'a> {
        PolicyContext { step: 0, rng }
    }

    /// Sets the step number: how many actions the episode has executed so far.
    #[must_use]
    pub fn with_step(mut self, step: usize) -> PolicyContext<'a> {
        self.step = step;
        self
    }

    /// Sets the step number in place, for a context reused across the steps of an episode.
    pub fn set_step(&mut self, step: usize) {
        self.step = step;
    }

    /// Returns the step number (0 for the first action of an episode).
    pub fn step(&self) -> usize {
        self.step
    }

    /// Returns the caller's random number generator.
    ///
    /// `rand::Rng` is implemented for `dyn RngCore`, so `ctx.rng().random::<f64>()` works.
    pub fn rng(&mut self) -> &mut dyn RngCore {
        &mut *self.rng
    }
}

impl std::fmt::Debug for PolicyContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyContext")
            .field("step", &self.step)
            .finish_non_exhaustive()
    }
}

/// A strategy that picks one action among scored candidates.
///
/// Every method that takes candidates returns an error of kind
/// [`ErrorKind::EmptyCandidates`] when there are none. The built-in policies also reject
/// NaN or infinite scores with [`ErrorKind::NonFiniteScore`]; they never panic on user data.
///
/// Policies are `Send` so they can move between threads, but they are not meant to be
/// shared: stateful ones ([`BeamSearchPolicy`], [`MctsPolicy`]) keep state across calls,
/// and that state belongs to the caller, who gives each episode or agent its own policy (or
/// calls [`reset`](ActionSelectionPolicy::reset) between episodes).
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
/// ];
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let mut ctx = PolicyContext::new(&mut rng);
/// let mut policy = GreedyPolicy::new();
/// assert_eq!(policy.select(&candidates, &mut ctx)?.key(), "approach_b");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait ActionSelectionPolicy: Send {
    /// Returns the policy's name, as registered in a [`PolicyRegistry`].
    fn name(&self) -> &str;

    /// Picks one of `candidates`.
    ///
    /// # Errors
    ///
    /// Returns an error of kind [`ErrorKind::EmptyCandidates`] when `candidates` is empty;
    /// implementations add their own (the built-ins reject non-finite scores).
    fn select<'c>(
        &mut self,
        candidates: &'c [Candidate],
        ctx: &mut PolicyContext<'_>,
    ) -> crate::Result<&'c Candidate>;

    /// Scores every candidate and returns them sorted by score descending.
    ///
    /// Ties keep the candidates' original order (the sort is stable), so the ranking is
    /// deterministic. What the score means depends on the policy. The default gives every
    /// candidate the score 1.0, which keeps the original order.
    ///
    /// # Errors
    ///
    /// Returns an error of kind [`ErrorKind::EmptyCandidates`] when `candidates` is empty;
    /// implementations add their own (the built-ins reject non-finite scores).
    fn rank<'c>(
        &self,
        candidates: &'c [Candidate],
        ctx: &PolicyContext<'_>,
    ) -> crate::Result<Vec<(&'c Candidate, f64)>> {
        let _ = ctx;
        ensure_not_empty(candidates)?;
        Ok(candidates
            .iter()
            .map(|candidate| (candidate, 1.0))
            .collect())
    }

    /// Feeds back the reward observed after executing the action with key `action_key`
    /// (see [`Candidate::key`]). The default ignores it; [`MctsPolicy`] learns from it.
    ///
    /// # Errors
    ///
    /// Implementations may reject rewards; [`MctsPolicy`] rejects NaN or infinite ones
    /// with [`ErrorKind::NonFiniteScore`].
    fn update(&mut self, action_key: &str, reward: f64) -> crate::Result<()> {
        let _ = (action_key, reward);
        Ok(())
    }

    /// Forgets all state kept across calls. The default does nothing.
    fn reset(&mut self) {}
}

/// Shows the policy's name, so that structs holding a boxed policy can derive `Debug`.
impl std::fmt::Debug for dyn ActionSelectionPolicy + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionSelectionPolicy")
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

/// Returns an error of kind [`ErrorKind::EmptyCandidates`] when `candidates` is empty.
fn ensure_not_empty(candidates: &[Candidate]) -> crate::Result<()> {
    if candidates.is_empty() {
        Err(Error::new(ErrorKind::EmptyCandidates))
    } else {
        Ok(())
    }
}

/// Checks the candidates and returns their base scores, in order.
///
/// Errors: `EmptyCandidates` when there are none, `NonFiniteScore` for the first NaN or
/// infinite confidence or score.
fn base_scores(candidates: &[Candidate]) -> crate::Result<Vec<f64>> {
    ensure_not_empty(candidates)?;
    candidates.iter().map(Candidate::base_score).collect()
}

/// Pairs candidates with their scores and sorts them by score descending, ties keeping the
/// candidates' order. The scores must be finite or +inf.
fn sort_ranked<'c>(candidates: &'c [Candidate], scores: &[f64]) -> Vec<(&'c Candidate, f64)> {
    // Adding 0.0 turns -0.0 into 0.0, so that `total_cmp` sees the two zeros as a tie.
    let mut ranked: Vec<(&Candidate, f64)> = candidates
        .iter()
        .zip(scores)
        .map(|(candidate, &score)| (candidate, score + 0.0))
        .collect();
    ranked.sort_by(|left, right| right.1.total_cmp(&left.1));
    ranked
}

/// Returns the position of the highest score, the first one on ties (0 when `scores` is
/// empty, which callers rule out by checking the candidates first).
fn argmax(scores: &[f64]) -> usize {
    let mut best_idx = 0;
    for (idx, score) in scores.iter().enumerate() {
        if *score > scores[best_idx] {
            best_idx = idx;
        }
    }
    best_idx
}
