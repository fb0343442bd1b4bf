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
//! regression on labelled queries (`examples/relevance.rs`, see `docs/relevance.md`). A
//! candidate passes the gate when its relevance reaches `min_relevance`, or when it
//! contains one of the query's codes. Candidates that fail are dropped before
//! priority, scope, importance and recency are applied, so those weights only order what
//! is relevant; a search may return nothing.
//!
//! The normalised BM25 and the hybrid score are not used here: they are relative to the
//! other candidates (the best BM25 candidate always normalises to 1), so they say which
//! candidate is best, not whether any is good.

use serde::{Deserialize, Serialize};

use crate::{Error, Kind, Result};

/// Parameters of the relevance function of one kind and embedder:
/// `sigmoid(bias + vector_weight * vector + coverage_weight * coverage)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// Weight of the vector score (`max(0, cosine)`).
    pub vector_weight: f64,
    /// Weight of the text coverage (share of the query's words, idf-weighted).
    pub coverage_weight: f64,
    /// The intercept.
    pub bias: f64,
}

impl Calibration {
    /// The relevance of a candidate with this vector score and text coverage.
    ///
    /// # Example
    ///
    /// ```
    /// use ruchedb::Calibration;
    ///
    /// let c = Calibration { vector_weight: 10.0, coverage_weight: 2.0, bias: -7.0 };
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

/// Which legs scored a query: the calibration differs when one is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegsRan {
    /// BM25 and vectors.
    Both,
    /// Vectors only (the query has no searchable word, or the scope no text).
    VectorOnly,
    /// BM25 only (no query vector).
    TextOnly,
}

impl LegsRan {
    /// Which legs ran, from whether each did; `None` when neither.
    pub fn of(text: bool, vector: bool) -> Option<LegsRan> {
        match (text, vector) {
            (true, true) => Some(LegsRan::Both),
            (false, true) => Some(LegsRan::VectorOnly),
            (true, false) => Some(LegsRan::TextOnly),
            (false, false) => None,
        }
    }
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

/// The built-in calibrations, fitted by `examples/relevance.rs fit` (see
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
        // as out-of-scope in each of five folds), `examples/relevance.rs fit-scenarios`.
        (Kind::Scenario, Static, Both, _) => c(10.30, 2.23, -6.24),
        (Kind::Scenario, Static, VectorOnly, _) => c(12.60, 0.0, -6.74),
        (Kind::Scenario, _, TextOnly, _) => c(0.0, 4.03, -1.04),
        // Tools, and scenarios with MiniLM vectors (not fitted), are matched as rules are:
        // name and description, one vector per example. See `docs/relevance.md`.
        (Kind::Scenario | Kind::Tool, _, _, _) => builtin(Kind::Rule, family, legs, patterns),
    }
}

/// `[relevance.rules]` or `[relevance.chunks]`: the gate of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KindRelevance {
    /// Candidates whose relevance is below this are not returned (`0` turns the gate
    /// off). In `0..=1`.
    pub min_relevance: f64,
    /// Replaces the built-in calibrations of the index's embedder (both legs ran; without
    /// text, the same without its coverage term), for rules with and without patterns
    /// alike. For vectors from a model whose cosines are not on a MiniLM scale.
    pub calibration: Option<Calibration>,
}

impl Default for KindRelevance {
    fn default() -> KindRelevance {
        KindRelevance {
            min_relevance: 0.5,
            calibration: None,
        }
    }
}

/// `[relevance]`: the relevance gate, one section per kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
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
    /// The query's codes (identifiers), lowercased.
    pub codes: Vec<String>,
}

impl GateSummary {
    /// Why the search returned nothing, when it did.
    pub fn abstention_reason(&self) -> Option<String> {
        if self.passed > 0 {
            return None;
        }
        Some(match &self.best_rejected {
            Some((id, relevance)) => format!(
                "no candidate is relevant: the best, `{id}`, has relevance {relevance:.3} < {:.3}",
                self.min_relevance
            ),
            None => "no candidate matched the query or the filters".to_string(),
        })
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
