//! The relevance gate: is a candidate about the query at all?
//!
//! Both legs return their best candidates whatever the query: a message that matches
//! nothing still has a nearest rule. An agent acts on what the engine returns, so the
//! engine decides, per candidate, whether it is relevant, from signals that mean the same
//! thing for every query:
//!
//! - `vector`: the cosine of the query and the document (a rule's best pattern, text or
//!   centroid), `max(0, cosine)`;
//! - `coverage`: the share of the query's words, weighted by rarity (idf), that the
//!   document contains;
//! - codes: identifiers such as `NW-15699` the query names and the document contains
//!   verbatim.
//!
//! A [`Calibration`] turns the first two into a probability-like relevance in `[0, 1]`,
//! `sigmoid(bias + vector_weight * vector + coverage_weight * coverage)`, fitted per kind
//! and per embedder (cosines of different models live on different scales) by logistic
//! regression on labelled queries (`crates/research/src/bin/relevance.rs`, see `docs/relevance.md`). A
//! candidate passes the gate when its relevance reaches `min_relevance`, or when it
//! contains one of the query's codes. Candidates that fail are dropped before
//! priority, scope, importance and recency are applied, so those weights only order what
//! is relevant; a search may return nothing.
//!
//! The normalised BM25 and the hybrid score are not used here: they are relative to the
//! other candidates (the best BM25 candidate always normalises to 1), so they say which
//! candidate is best, not whether any is good.

mod prior;

use serde::{Deserialize, Serialize};

use crate::{Error, Kind, Result};

/// The relevance of a rule (or a tool, or a scenario) with examples, against the
/// catalog it is one of: `sigmoid(bias + centroid_weight * centroid + coverage_weight *
/// coverage + background_weight * background)`, where `centroid` is the cosine of the
/// query and the document's centroid (the normalised mean of its text's and examples'
/// vectors), `coverage` the text coverage, and `background` the dot product of the
/// query with the mean of the catalog's centroids ([`background_mean`]).
///
/// A message close to every rule of the catalog (a banking request that no banking
/// rule covers) must then be much closer to one rule than the others to pass: the
/// background term, with a negative weight, is what tells a paraphrase of a rule from
/// its cousin. Fitted on CLINC150, BANKING77-OOS and MetaTool together, and checked by
/// leaving each out (`docs/relevance.md`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BackgroundCalibration {
    pub(crate) bias: f64,
    pub(crate) centroid_weight: f64,
    pub(crate) coverage_weight: f64,
    pub(crate) background_weight: f64,
}

impl BackgroundCalibration {
    /// The built-in calibration of an embedder family and the legs that ran (`None`:
    /// text only, or no prior known for the family).
    pub(crate) fn builtin(family: EmbedderFamily, legs: LegsRan) -> Option<Self> {
        let c = |bias, centroid_weight, coverage_weight, background_weight| BackgroundCalibration {
            bias,
            centroid_weight,
            coverage_weight,
            background_weight,
        };
        // The operating point (relevance 0.20 of the fit) is folded into the bias, so
        // that 0.5 stays the threshold: each bias is the fitted one plus ln(4).
        match (family, legs) {
            (EmbedderFamily::Static, LegsRan::Both) => Some(c(-6.5557, 14.8118, 2.0177, -9.9799)),
            (EmbedderFamily::Static, LegsRan::VectorOnly) => {
                Some(c(-7.1542, 17.6723, 0.0, -11.1719))
            }
            (EmbedderFamily::MiniLm, LegsRan::Both) => Some(c(-5.6107, 12.4699, 1.3509, -11.5081)),
            (EmbedderFamily::MiniLm, LegsRan::VectorOnly) => {
                Some(c(-5.7428, 13.6647, 0.0, -11.4218))
            }
            (_, LegsRan::TextOnly) => None,
        }
    }

    /// The relevance of a candidate.
    pub(crate) fn relevance(&self, centroid: f64, coverage: f64, background: f64) -> f64 {
        let z = self.bias
            + self.centroid_weight * centroid
            + self.coverage_weight * coverage
            + self.background_weight * background;
        1.0 / (1.0 + (-z).exp())
    }
}

/// How many documents' worth of weight the prior mean has against a catalog's own:
/// a catalog of three rules is mostly the prior, one of hundreds its own.
const PRIOR_WEIGHT: f64 = 10.0;

/// The mean direction of a catalog's documents, shrunk towards the embedder's prior
/// mean of messages: `(sum + 10 * prior) / (count + 10)`, where `sum` adds the
/// documents' centroids (unit vectors) and `count` counts them. `None` when the family
/// has no prior of `sum`'s dimension (vectors of another model).
pub(crate) fn background_mean(
    family: EmbedderFamily,
    sum: &[f64],
    count: usize,
) -> Option<Vec<f32>> {
    let prior: &[f32] = match family {
        EmbedderFamily::Static => &prior::STATIC,
        EmbedderFamily::MiniLm => &prior::MINILM,
    };
    let zeros;
    let sum = if sum.is_empty() {
        zeros = vec![0.0; prior.len()];
        &zeros[..]
    } else {
        sum
    };
    if prior.len() != sum.len() {
        return None;
    }
    let total = count as f64 + PRIOR_WEIGHT;
    Some(
        sum.iter()
            .zip(prior)
            .map(|(s, p)| ((s + PRIOR_WEIGHT * f64::from(*p)) / total) as f32)
            .collect(),
    )
}

/// The background of a query for a catalog whose documents' centroids (unit vectors)
/// add up to `sum` over `count` documents: the dot product of the query vector
/// (normalised) with their mean shrunk towards the embedder's prior mean of messages.
/// For retrievers other than the local index, which keeps it itself; `None` when the
/// family has no prior of that dimension.
///
/// # Example
///
/// ```
/// use ruchedb::relevance::{EmbedderFamily, background_of};
///
/// let sum = vec![0.0f64; 256];
/// // No document: the prior alone.
/// assert!(background_of(EmbedderFamily::Static, &[0.0; 256], &sum, 0).is_some());
/// assert_eq!(background_of(EmbedderFamily::Static, &[0.0; 3], &[0.0; 3], 0), None);
/// ```
pub fn background_of(
    family: EmbedderFamily,
    query: &[f32],
    sum: &[f64],
    count: usize,
) -> Option<f64> {
    let mean = background_mean(family, sum, count)?;
    (mean.len() == query.len()).then(|| {
        query
            .iter()
            .zip(&mean)
            .map(|(q, m)| f64::from(*q) * f64::from(*m))
            .sum()
    })
}

/// Parameters of the relevance function of one kind and embedder:
/// `sigmoid(bias + vector_weight * vector + coverage_weight * coverage)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Calibration {
    /// Weight of the vector score (`max(0, cosine)`).
    pub vector_weight: f64,
    /// Weight of the text coverage (share of the query's words, idf-weighted).
    pub coverage_weight: f64,
    /// The intercept.
    pub bias: f64,
}

impl Calibration {
    /// A calibration with these weights and intercept.
    pub const fn new(vector_weight: f64, coverage_weight: f64, bias: f64) -> Calibration {
        Calibration {
            vector_weight,
            coverage_weight,
            bias,
        }
    }

    /// The relevance of a candidate with this vector score and text coverage.
    ///
    /// # Example
    ///
    /// ```
    /// use ruchedb::relevance::Calibration;
    ///
    /// let c = Calibration::new(10.0, 2.0, -7.0);
    /// assert!(c.relevance(0.9, 0.5) > 0.9);
    /// assert!(c.relevance(0.3, 0.0) < 0.05);
    /// ```
    pub fn relevance(&self, vector: f64, coverage: f64) -> f64 {
        let z = self.bias + self.vector_weight * vector + self.coverage_weight * coverage;
        1.0 / (1.0 + (-z).exp())
    }

    fn validate(&self, key: &str) -> Result<()> {
        for (name, value) in [
            ("vector_weight", self.vector_weight),
            ("coverage_weight", self.coverage_weight),
            ("bias", self.bias),
        ] {
            if !value.is_finite() {
                return Err(Error::invalid_config(
                    format!("{key}.{name}"),
                    format!("must be a finite number, got {value}"),
                ));
            }
        }
        for (name, value) in [
            ("vector_weight", self.vector_weight),
            ("coverage_weight", self.coverage_weight),
        ] {
            if value < 0.0 {
                return Err(Error::invalid_config(
                    format!("{key}.{name}"),
                    format!("must be >= 0 (more similar is never less relevant), got {value}"),
                ));
            }
        }
        Ok(())
    }
}

/// Which of the text and vector legs scored a query: the key of the built-in
/// calibrations, which differ when one is missing (the seam says which legs ran as a
/// [`PerLeg<bool>`](crate::PerLeg)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LegsRan {
    /// BM25 and vectors.
    Both,
    /// Vectors only (the query has no searchable word, or the scope no text).
    VectorOnly,
    /// BM25 only (no query vector).
    TextOnly,
}

impl LegsRan {
    /// Which legs ran, from whether each did; `None` when neither.
    pub(crate) fn of(text: bool, vector: bool) -> Option<LegsRan> {
        match (text, vector) {
            (true, true) => Some(LegsRan::Both),
            (false, true) => Some(LegsRan::VectorOnly),
            (true, false) => Some(LegsRan::TextOnly),
            (false, false) => None,
        }
    }
}

/// The built-in anchor of a memory search, `(bias, vector_weight, information_weight)`:
/// fitted on LoCoMo's dev conversations (evidence turns against off-topic, nonsense and
/// general-knowledge messages), held out one conversation at a time, its bias then
/// raised until no LoCoMo or SciFact question and no question of a one-chunk index
/// lost its answer (`docs/relevance.md`). None for the bundled static model: its cosines
/// put a paraphrase that shares no word ("how should I contact them" for "prefers email
/// over phone calls") below nonsense, so an anchor would forget facts.
fn anchor_coefficients(family: EmbedderFamily) -> Option<(f64, f64, f64)> {
    match family {
        EmbedderFamily::Static => None,
        EmbedderFamily::MiniLm => Some((-9.5783, 27.5967, 2.7597)),
    }
}

/// How well one chunk anchors a memory search, in `[0, 1]` (0.5 answers it), or `None`
/// when the embedder family has no anchor:
/// `sigmoid(bias + w_v * vector + w_info * information)`, where `vector` is
/// `max(0, cosine)` and `information` the rarity of the query's words the chunk holds
/// (the idf mass of its matched words over the largest idf of the scope,
/// [`Retrieved::query_information`](crate::retrieve::Retrieved::query_information) times
/// its coverage).
pub fn anchor_of(family: EmbedderFamily, vector: f64, information: f64) -> Option<f64> {
    let (bias, vector_weight, information_weight) = anchor_coefficients(family)?;
    let z = bias + vector_weight * vector.max(0.0) + information_weight * information;
    Some(1.0 / (1.0 + (-z).exp()))
}

/// The family of the embedder whose cosines a calibration was fitted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EmbedderFamily {
    /// The bundled static model (`minilm-static-*`).
    Static,
    /// all-MiniLM-L6-v2 (`bert:`), and vectors supplied by the caller, which are assumed
    /// to be on a sentence-transformers scale; set the calibration in the configuration
    /// for another model.
    MiniLm,
}

impl EmbedderFamily {
    /// The family of an embedder by its model id (`None`: vectors supplied by the caller).
    pub fn of(model_id: Option<&str>) -> EmbedderFamily {
        match model_id {
            Some(id) if id.starts_with("minilm-static") || id.starts_with("static:") => {
                EmbedderFamily::Static
            }
            _ => EmbedderFamily::MiniLm,
        }
    }
}

/// The built-in calibrations, fitted by `crates/research/src/bin/relevance.rs fit` (see
/// `docs/relevance.md`): rules on CLINC150 train and BANKING77 with held-out intents as
/// out-of-scope messages, separately for rules with patterns (their best of many vectors
/// scores higher) and without; chunks on SciFact train with CLINC150 messages as
/// unrelated queries. Each is shifted so that 0.5 is the operating point chosen on that
/// data: the best accuracy with abstention for rules, 99.8% of relevant abstracts kept
/// for chunks.
fn builtin(kind: Kind, family: EmbedderFamily, legs: LegsRan, patterns: bool) -> Calibration {
    use EmbedderFamily::{MiniLm, Static};
    use LegsRan::{Both, TextOnly, VectorOnly};
    let c = |vector_weight, coverage_weight, bias| Calibration {
        vector_weight,
        coverage_weight,
        bias,
    };
    match (kind, family, legs, patterns) {
        (Kind::Rule, Static, Both, true) => c(7.26, 1.58, -5.31),
        (Kind::Rule, Static, Both, false) => c(3.48, 4.46, -2.38),
        (Kind::Rule, Static, VectorOnly, true) => c(9.54, 0.0, -6.63),
        (Kind::Rule, Static, VectorOnly, false) => c(8.34, 0.0, -4.00),
        (Kind::Rule, MiniLm, Both, true) => c(8.31, 0.56, -4.65),
        (Kind::Rule, MiniLm, Both, false) => c(6.19, 1.09, -1.76),
        (Kind::Rule, MiniLm, VectorOnly, true) => c(8.87, 0.0, -4.78),
        (Kind::Rule, MiniLm, VectorOnly, false) => c(6.27, 0.0, -2.01),
        (Kind::Rule, _, TextOnly, true) => c(0.0, 3.11, -0.81),
        (Kind::Rule, _, TextOnly, false) => c(0.0, 6.17, -0.71),
        (Kind::Chunk, Static, Both, _) => c(18.08, 5.44, -6.93),
        (Kind::Chunk, Static, VectorOnly, _) => c(29.44, 0.0, -11.17),
        (Kind::Chunk, MiniLm, Both, _) => c(27.23, 3.95, -5.75),
        (Kind::Chunk, MiniLm, VectorOnly, _) => c(41.54, 0.0, -13.45),
        (Kind::Chunk, _, TextOnly, _) => c(0.0, 6.02, -0.93),
        // Scenarios: fitted on CLINC150 train with its domains as scenarios (two held out
        // as out-of-scope in each of five folds), `crates/research/src/bin/relevance.rs fit-scenarios`.
        (Kind::Scenario, Static, Both, _) => c(10.30, 2.23, -6.24),
        (Kind::Scenario, Static, VectorOnly, _) => c(12.60, 0.0, -6.74),
        // The same protocol with all-MiniLM-L6-v2 (five folds of two domains held out):
        // CLINC150 val, the right domain first 0.888 (0.756 with the rules' calibration),
        // in-scope refused 0.060 (0.211), out-of-scope refused 0.82 (0.96).
        (Kind::Scenario, MiniLm, Both, _) => c(13.8931, 1.2182, -6.2148),
        (Kind::Scenario, MiniLm, VectorOnly, _) => c(15.4744, 0.0, -6.8535),
        (Kind::Scenario, _, TextOnly, _) => c(0.0, 4.03, -1.04),
        // Tools are matched as rules are: name and description, one vector per example.
        // See `docs/relevance.md`.
        (Kind::Tool, _, _, _) => builtin(Kind::Rule, family, legs, patterns),
    }
}

/// `[relevance.rules]` or `[relevance.chunks]`: the gate of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct KindRelevance {
    /// Candidates whose relevance is below this are not returned (`0` turns the gate
    /// off). In `0..=1`.
    pub min_relevance: f64,
    /// Replaces the built-in calibrations of the index's embedder (both legs ran; without
    /// text, the same without its coverage term), for rules with and without patterns
    /// alike. For vectors from a model whose cosines are not on a MiniLM scale.
    pub calibration: Option<Calibration>,
    /// Chunks only: a search is answered only when one of its candidates is close enough
    /// to the query to answer it (its cosine and the rarity of the query words it holds,
    /// [`anchor_of`]), holds every word of the query, or holds one of the query's codes;
    /// otherwise it returns nothing. MiniLM-scale vectors only (the bundled static model's
    /// cosines cannot tell a paraphrase from noise)
    /// (default `true`; not with a `calibration` of your own).
    pub anchor: bool,
}

impl Default for KindRelevance {
    fn default() -> KindRelevance {
        KindRelevance {
            min_relevance: 0.5,
            calibration: None,
            anchor: true,
        }
    }
}

/// `[relevance]`: the relevance gate, one section per kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct RelevanceConfig {
    /// Added to the final score of a hit for each code of the query (an identifier such
    /// as `NW-15699`) it contains verbatim (default 1.0: such hits rank above those
    /// that do not, whatever their priority, importance or recency).
    pub code_boost: f64,
    /// `[relevance.rules]`.
    pub rules: KindRelevance,
    /// `[relevance.chunks]`.
    pub chunks: KindRelevance,
    /// `[relevance.scenarios]`.
    pub scenarios: KindRelevance,
    /// `[relevance.tools]`.
    pub tools: KindRelevance,
}

impl Default for RelevanceConfig {
    fn default() -> RelevanceConfig {
        RelevanceConfig {
            code_boost: 1.0,
            rules: KindRelevance::default(),
            chunks: KindRelevance::default(),
            scenarios: KindRelevance::default(),
            tools: KindRelevance::default(),
        }
    }
}

impl RelevanceConfig {
    pub(crate) fn kind(&self, kind: Kind) -> &KindRelevance {
        match kind {
            Kind::Rule => &self.rules,
            Kind::Chunk => &self.chunks,
            Kind::Scenario => &self.scenarios,
            Kind::Tool => &self.tools,
        }
    }

    pub(crate) fn validate(&self, key: &str) -> Result<()> {
        if !self.code_boost.is_finite() || self.code_boost < 0.0 {
            return Err(Error::invalid_config(
                format!("{key}.code_boost"),
                format!("must be a finite number >= 0, got {}", self.code_boost),
            ));
        }
        for kind in Kind::ALL {
            let (name, section) = (kind.plural(), self.kind(kind));
            check_min_relevance(
                &format!("{key}.{name}.min_relevance"),
                section.min_relevance,
            )?;
            if let Some(calibration) = &section.calibration {
                calibration.validate(&format!("{key}.{name}.calibration"))?;
            }
        }
        Ok(())
    }

    /// The calibration of a candidate of `kind`; `patterns`: a rule with patterns.
    pub(crate) fn calibration(
        &self,
        kind: Kind,
        family: EmbedderFamily,
        legs: LegsRan,
        patterns: bool,
    ) -> Calibration {
        match (self.kind(kind).calibration, legs) {
            (Some(custom), LegsRan::Both) => custom,
            (Some(custom), LegsRan::VectorOnly) => Calibration {
                coverage_weight: 0.0,
                ..custom
            },
            _ => builtin(kind, family, legs, patterns),
        }
    }
}

pub(crate) fn check_min_relevance(key: &str, value: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&value) {
        return Err(Error::invalid_config(
            key,
            format!("must be in 0..=1, got {value}"),
        ));
    }
    Ok(())
}

/// Why a hit passed the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum GateDecision {
    /// Its relevance reached `min_relevance`.
    Relevant,
    /// It contains a code (an identifier such as `NW-15699`) the query names.
    ExactCode,
    /// The gate did not apply: `min_relevance` 0, or a search without query (browsing).
    Open,
    /// The graph leg reached it strongly (at least a quarter of the best graph score)
    /// from an entity the query names: it is about what the query is about, through
    /// that entity.
    Linked,
    /// A turn of a conversation next to a relevant one: it holds what that turn is
    /// about (the answer after the question, the question before the answer).
    Neighbour,
    /// A rule applied whatever its relevance ([`Apply`](crate::Apply)), and why.
    Applied(crate::model::apply::AppliedBy),
}

impl GateDecision {
    /// The gate's decision on one candidate, `None` when it is rejected: a candidate
    /// that contains a code of the query passes; one without relevance (no query) or
    /// with the gate off (`min_relevance` 0) passes; the others pass when their relevance
    /// reaches `min_relevance`.
    pub(crate) fn of(relevance: Option<f64>, codes: u32, min_relevance: f64) -> Option<Self> {
        match relevance {
            _ if codes > 0 => Some(GateDecision::ExactCode),
            None => Some(GateDecision::Open),
            Some(_) if min_relevance <= 0.0 => Some(GateDecision::Open),
            Some(relevance) if relevance >= min_relevance => Some(GateDecision::Relevant),
            Some(_) => None,
        }
    }
}

/// What the gate did in one search (part of explain).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct GateSummary {
    /// The threshold applied.
    pub min_relevance: f64,
    /// The embedder family whose calibrations applied.
    pub family: EmbedderFamily,
    /// Candidates that passed.
    pub passed: usize,
    /// Candidates that did not.
    pub rejected: usize,
    /// The most relevant rejected candidate and its relevance: how close the search came
    /// to an answer.
    pub best_rejected: Option<(String, f64)>,
    /// What the best rejected candidate's relevance was made of.
    pub best_rejected_evidence: Option<Evidence>,
    /// The query's closeness to the searched kind's catalog as a whole (the dot product
    /// with the mean of its documents' centroids), when rules or tools with examples
    /// were judged against it: the closer a message is to every rule, the closer it
    /// must be to one of them to pass.
    pub background: Option<f64>,
    /// The query's codes (identifiers), lowercased.
    pub codes: Vec<String>,
    /// The best anchor of a memory search ([`anchor_of`]), when the anchor applied; below
    /// 0.5 the search was not answered at all.
    pub anchor: Option<f64>,
    /// The message had no text to match and no vector: nothing was searched, and
    /// nothing is answered (not the filters' documents by importance or recency).
    pub empty_message: bool,
    /// A memory search named identifiers no candidate holds: only chunks that name no
    /// identifier and share another of the query's words could pass ("any update on
    /// NW-48283?" is not answered by another order's note).
    pub unknown_codes: bool,
}

/// The signals a candidate's relevance was made of (part of explain).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Evidence {
    /// Its best cosine with the query (over its text, examples and centroid).
    pub vector: Option<f64>,
    /// Its centroid's cosine with the query, when it was judged against its catalog.
    pub centroid: Option<f64>,
    /// Its text coverage of the query's words.
    pub coverage: f64,
}

impl GateSummary {
    /// Why the search returned nothing, when it did: the best rejected candidate, its
    /// relevance against the threshold, and the evidence it was made of.
    pub fn abstention_reason(&self) -> Option<String> {
        if self.passed > 0 {
            return None;
        }
        if self.empty_message {
            return Some("the message is empty: there is nothing to match".to_string());
        }
        if self.unknown_codes && self.best_rejected.is_some() {
            return Some(format!(
                "no chunk holds {}, and none without identifiers of its own shares another word of the query",
                self.codes.join(", ")
            ));
        }
        if let Some(anchor) = self.anchor.filter(|anchor| *anchor < 0.5) {
            return Some(format!(
                "no chunk is close enough to the query to answer it: the best anchor is {anchor:.3} < 0.500 (a close cosine and the query's rarer words in one chunk)"
            ));
        }
        Some(match &self.best_rejected {
            Some((id, relevance)) => {
                let mut reason = format!(
                    "no candidate is relevant: the best, `{id}`, has relevance {relevance:.3} < {:.3}",
                    self.min_relevance
                );
                if let Some(evidence) = &self.best_rejected_evidence {
                    reason.push_str(&evidence_text(evidence, self.background));
                }
                reason
            }
            None => "no candidate matched the query or the filters".to_string(),
        })
    }
}

/// `(centroid 0.71, coverage 0.20; the message's closeness to the whole catalog, 0.62,
/// counts against it)`, or `(vector 0.55, coverage 0.00)`.
fn evidence_text(evidence: &Evidence, background: Option<f64>) -> String {
    match (evidence.centroid, background) {
        (Some(centroid), Some(background)) => format!(
            " (its centroid's cosine {centroid:.3}, coverage {:.3}; the message's closeness to the whole catalog, {background:.3}, counts against it)",
            evidence.coverage
        ),
        _ => format!(
            " (vector {:.3}, coverage {:.3})",
            evidence.vector.unwrap_or(0.0),
            evidence.coverage
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relevance_grows_with_each_signal() {
        for kind in Kind::ALL {
            for family in [EmbedderFamily::Static, EmbedderFamily::MiniLm] {
                for legs in [LegsRan::Both, LegsRan::VectorOnly, LegsRan::TextOnly] {
                    for patterns in [true, false] {
                        let c = builtin(kind, family, legs, patterns);
                        assert!(c.vector_weight >= 0.0 && c.coverage_weight >= 0.0);
                        let low = c.relevance(0.1, 0.0);
                        let high = c.relevance(0.95, 1.0);
                        assert!(low < 0.5 && high > 0.5, "{kind:?} {family:?} {legs:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn gate_decisions() {
        use GateDecision::{ExactCode, Open, Relevant};
        assert_eq!(GateDecision::of(Some(0.1), 1, 0.5), Some(ExactCode));
        assert_eq!(GateDecision::of(None, 0, 0.5), Some(Open));
        assert_eq!(GateDecision::of(Some(0.1), 0, 0.0), Some(Open));
        assert_eq!(GateDecision::of(Some(0.5), 0, 0.5), Some(Relevant));
        assert_eq!(GateDecision::of(Some(0.49), 0, 0.5), None);
    }

    #[test]
    fn family_by_model_id() {
        assert_eq!(
            EmbedderFamily::of(Some("minilm-static-v1")),
            EmbedderFamily::Static
        );
        assert_eq!(
            EmbedderFamily::of(Some("bert:all-MiniLM-L6-v2")),
            EmbedderFamily::MiniLm
        );
        assert_eq!(EmbedderFamily::of(None), EmbedderFamily::MiniLm);
    }

    #[test]
    fn config_is_validated() {
        let mut config = RelevanceConfig::default();
        config.validate("relevance").unwrap();
        config.rules.min_relevance = 1.5;
        let err = config.validate("relevance").unwrap_err();
        assert!(
            err.to_string().contains("relevance.rules.min_relevance"),
            "{err}"
        );
        config.rules.min_relevance = 0.5;
        config.chunks.calibration = Some(Calibration {
            vector_weight: -1.0,
            coverage_weight: 0.0,
            bias: 0.0,
        });
        let err = config.validate("relevance").unwrap_err();
        assert!(
            err.to_string()
                .contains("relevance.chunks.calibration.vector_weight"),
            "{err}"
        );
    }
}
