//! [`FusionSpec`]: the serde form of one kind's fusion, its validation and parameters.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Fused, FusionWeights, Method, Norm, check_bounds, check_weight, fuse_with};
use crate::model::leg::PerLeg;
use crate::{Error, Result};

/// How the two legs are fused: the `method` key of [`FusionSpec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FusionMethod {
    /// Each leg normalised onto `[0, 1]` (see [`Normalization`]), then the weighted mean
    /// of the two (the default).
    #[default]
    Weighted,
    /// Reciprocal rank fusion: `Σ w_leg / (k + rank_leg)` divided by its maximum
    /// `Σ w_leg / (k + 1)`, so the result lies in `[0, 1]`. Ranks are 1-based by the
    /// leg's score, equal scores sharing the best rank of their group (scores 9, 7, 7, 5
    /// rank 1, 2, 2, 4); a candidate missing from a leg gets 0 for it. `k` is
    /// [`FusionSpec::rrf_k`].
    Rrf,
}

/// How the weighted method maps one leg's scores onto `[0, 1]`: the
/// `*_normalization` keys of [`FusionSpec`].
///
/// Statistics are taken over the candidates present in the leg; a candidate missing from
/// the leg gets 0.0, and a present one never less.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Normalization {
    /// `(s - min) / (max - min)` over the present scores, the lower end `min(min, 0)`
    /// when some candidates are missing (so the weakest BM25 match keeps credit). With no
    /// range, a score above 0 maps to 1.0 and any other to 0.0.
    MinMax,
    /// `(s - lower) / (upper - lower)` clamped to `[0, 1]`, with the leg's `*_bounds`:
    /// absolute, so a single weak BM25 hit does not become 1.0; `[0, 1]` keeps a cosine
    /// as is.
    FixedBounds,
    /// Qdrant's distribution-based fusion (DBSF): `(s - (mean - 3σ)) / 6σ` clamped to
    /// `[0, 1]`, with the population deviation; with no spread every score maps to 0.5.
    ZScore,
}

/// The fusion configuration of one kind (`[fusion.rules]`, `[fusion.chunks]`).
///
/// ```toml
/// [fusion.rules]
/// method = "weighted"                  # weighted | rrf
/// text_normalization = "min_max"       # min_max | fixed_bounds | z_score
/// vector_normalization = "fixed_bounds"
/// vector_weight = 0.7
/// text_weight = 0.3
/// text_bounds = [0.0, 10.0]            # BM25 scores mapped onto [0, 1] by fixed_bounds
/// vector_bounds = [0.0, 1.0]           # [0, 1]: the cosine score as is
/// rrf_k = 60.0
/// ```
///
/// ## Defaults
///
/// `FusionSpec::default()` is seed 003's fusion: `0.7 * vector + 0.3 * min_max(bm25)`,
/// the vector score kept as is (`fixed_bounds` over `[0, 1]`); it is the chunks default,
/// and rules default to weights 0.8 and 0.2 (see [`FusionConfig`](crate::config::FusionConfig)). The text bounds `[0, 10]` only
/// matter with `text_normalization = "fixed_bounds"`, and `rrf_k` (60) only with
/// `method = "rrf"`. Weights are relative: they need not sum to 1, but not both be 0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct FusionSpec {
    /// `weighted` (default) or `rrf`.
    pub method: FusionMethod,
    /// How the weighted method normalises BM25 scores (default `min_max`).
    pub text_normalization: Normalization,
    /// How the weighted method normalises vector scores (default `fixed_bounds`, which
    /// with the default `vector_bounds` keeps the score as is).
    pub vector_normalization: Normalization,
    /// Weight of the vector leg (default 0.7; 0.8 in the rules configuration).
    pub vector_weight: f64,
    /// Weight of the text leg (default 0.3; 0.2 in the rules configuration).
    pub text_weight: f64,
    /// `[lower, upper]` of `fixed_bounds` for BM25 scores (default `[0, 10]`).
    pub text_bounds: [f64; 2],
    /// `[lower, upper]` of `fixed_bounds` for vector scores (default `[0, 1]`).
    pub vector_bounds: [f64; 2],
    /// The RRF rank constant `k` (default 60).
    pub rrf_k: f64,
}

impl Default for FusionSpec {
    fn default() -> FusionSpec {
        FusionSpec {
            method: FusionMethod::Weighted,
            text_normalization: Normalization::MinMax,
            vector_normalization: Normalization::FixedBounds,
            vector_weight: 0.7,
            text_weight: 0.3,
            text_bounds: [0.0, 10.0],
            vector_bounds: [0.0, 1.0],
            rrf_k: 60.0,
        }
    }
}

impl FusionSpec {
    /// The names [`FusionSpec::from_params`] accepts: `weighted` (the default spec),
    /// `min_max`, `fixed_bounds` and `z_score` (weighted, with that text normalisation),
    /// `dbsf` (weighted, `z_score` on both legs, as Qdrant's DBSF) and `rrf`.
    pub const NAMES: &'static [&'static str] = &[
        "weighted",
        "min_max",
        "fixed_bounds",
        "z_score",
        "dbsf",
        "rrf",
    ];

    /// The configured weights (before [`FusionWeights::in_use`]).
    pub fn weights(&self) -> FusionWeights {
        FusionWeights {
            vector_weight: self.vector_weight,
            text_weight: self.text_weight,
        }
    }

    /// The method this spec describes, resolved with its parameters.
    pub(crate) fn method(&self) -> Method {
        let normalization = |kind, [lower, upper]: [f64; 2]| match kind {
            Normalization::MinMax => Norm::MinMax,
            Normalization::FixedBounds => Norm::FixedBounds { lower, upper },
            Normalization::ZScore => Norm::ZScore,
        };
        match self.method {
            FusionMethod::Weighted => Method::Weighted {
                text: normalization(self.text_normalization, self.text_bounds),
                vector: normalization(self.vector_normalization, self.vector_bounds),
            },
            FusionMethod::Rrf => Method::Rrf { k: self.rrf_k },
        }
    }

    /// Checks every value.
    ///
    /// Weights finite and >= 0, not both 0; bounds finite with `lower < upper`; `rrf_k`
    /// finite and > 0. Every value is checked, whether the method uses it or not.
    /// `key_prefix` is the dotted key of the section (`fusion.rules`); errors name
    /// `key_prefix.key`, or the bare key when `key_prefix` is empty.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) naming the first invalid key.
    ///
    /// # Example
    ///
    /// ```
    /// use ruchedb::ErrorKind;
    /// use ruchedb::fusion::FusionSpec;
    ///
    /// let mut spec = FusionSpec::default();
    /// spec.rrf_k = 0.0;
    /// let err = spec.validate("fusion.rules").unwrap_err();
    /// let ErrorKind::InvalidConfig { key, .. } = err.kind() else { panic!("{err}") };
    /// assert_eq!(key, "fusion.rules.rrf_k");
    /// ```
    pub fn validate(&self, key_prefix: &str) -> Result<()> {
        let key = |name: &str| join_key(key_prefix, name);
        check_weight(&key("vector_weight"), self.vector_weight)?;
        check_weight(&key("text_weight"), self.text_weight)?;
        if self.vector_weight == 0.0 && self.text_weight == 0.0 {
            return Err(Error::invalid_config(
                key("text_weight"),
                "vector_weight and text_weight must not both be 0",
            ));
        }
        for (name, [lower, upper]) in [
            ("text_bounds", self.text_bounds),
            ("vector_bounds", self.vector_bounds),
        ] {
            check_bounds(lower, upper)
                .map_err(|message| Error::invalid_config(key(name), message))?;
        }
        if !(self.rrf_k.is_finite() && self.rrf_k > 0.0) {
            return Err(Error::invalid_config(
                key("rrf_k"),
                format!("must be a finite number greater than 0, got {}", self.rrf_k),
            ));
        }
        Ok(())
    }

    /// The spec a name stands for (see [`NAMES`](Self::NAMES)), with `params` set over
    /// it: the CLI's `--fusion NAME --fusion-param key=value`.
    ///
    /// `params` keys are the keys of [`FusionSpec`]. A value may be given as a string,
    /// as command-line values are: `"0.5"` for a number, `"0,12"` or `"[0, 12]"` for
    /// bounds.
    ///
    /// # Errors
    ///
    /// - [`ErrorKind::UnknownName`](crate::ErrorKind::UnknownName) (`what` is `fusion method`) if `name` is not one of
    ///   [`NAMES`](Self::NAMES).
    /// - [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) naming the parameter when a key is unknown, a value
    ///   has the wrong type, or it is out of range (see [`validate`](Self::validate)).
    ///
    /// # Example
    ///
    /// ```
    /// use ruchedb::ErrorKind;
    /// use ruchedb::fusion::{FusionMethod, FusionSpec};
    ///
    /// let params = serde_json::json!({"rrf_k": "20", "text_weight": 0.5});
    /// let spec = FusionSpec::from_params("rrf", params.as_object().unwrap())?;
    /// assert_eq!((spec.method, spec.rrf_k), (FusionMethod::Rrf, 20.0));
    /// assert_eq!(spec.text_weight, 0.5);
    ///
    /// let err = FusionSpec::from_params("borda", &serde_json::Map::new()).unwrap_err();
    /// assert!(matches!(err.kind(), ErrorKind::UnknownName { what: "fusion method", .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_params(name: &str, params: &Map<String, Value>) -> Result<FusionSpec> {
        let mut spec = FusionSpec::default();
        match name {
            "weighted" => {}
            "min_max" => spec.text_normalization = Normalization::MinMax,
            "fixed_bounds" => spec.text_normalization = Normalization::FixedBounds,
            "z_score" => spec.text_normalization = Normalization::ZScore,
            "dbsf" => {
                spec.text_normalization = Normalization::ZScore;
                spec.vector_normalization = Normalization::ZScore;
            }
            "rrf" => spec.method = FusionMethod::Rrf,
            _ => return Err(Error::unknown_name("fusion method", name)),
        }
        spec.with_params(params)
    }

    /// This spec with `params` set over it, validated; see
    /// [`from_params`](Self::from_params) for the format.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) naming the parameter when a key is unknown, a value
    /// has the wrong type, or it is out of range.
    ///
    /// # Example
    ///
    /// ```
    /// use ruchedb::fusion::{FusionSpec, Normalization};
    ///
    /// let params = serde_json::json!({
    ///     "text_normalization": "fixed_bounds",
    ///     "text_bounds": "0,12",
    /// });
    /// let spec = FusionSpec::default().with_params(params.as_object().unwrap())?;
    /// assert_eq!(spec.text_normalization, Normalization::FixedBounds);
    /// assert_eq!(spec.text_bounds, [0.0, 12.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_params(&self, params: &Map<String, Value>) -> Result<FusionSpec> {
        let mut fields = match serde_json::to_value(self) {
            Ok(Value::Object(fields)) => fields,
            _ => return Err(Error::invalid_input("the fusion spec is not representable")),
        };
        let known: Vec<String> = fields.keys().cloned().collect();
        for (key, value) in params {
            let Some(current) = fields.get(key) else {
                return Err(Error::invalid_config(
                    key.as_str(),
                    format!(
                        "`{key}` is not a fusion parameter (expected one of: {})",
                        known.join(", ")
                    ),
                ));
            };
            let value = coerce(current, value)
                .map_err(|message| Error::invalid_config(key.as_str(), message))?;
            fields.insert(key.clone(), value);
            // Deserialising after each key names the key whose value is wrong.
            serde_json::from_value::<FusionSpec>(Value::Object(fields.clone()))
                .map_err(|err| Error::invalid_config(key.as_str(), err.to_string()))?;
        }
        let spec: FusionSpec = serde_json::from_value(Value::Object(fields))
            .map_err(|err| Error::invalid_input(err.to_string()))?;
        spec.validate("")?;
        Ok(spec)
    }
}

/// Reads a parameter given as a string as the type of the value it replaces.
fn coerce(current: &Value, given: &Value) -> std::result::Result<Value, String> {
    let Value::String(text) = given else {
        return Ok(given.clone());
    };
    let number = |text: &str| {
        text.trim()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("expected a finite number, got `{text}`"))
    };
    match current {
        Value::Number(_) => number(text),
        Value::Array(_) => {
            let inner = text.trim();
            let inner = inner.strip_prefix('[').unwrap_or(inner);
            let inner = inner.strip_suffix(']').unwrap_or(inner);
            let items: std::result::Result<Vec<Value>, String> =
                inner.split(',').map(number).collect();
            items
                .map(Value::Array)
                .map_err(|err| format!("expected two numbers `lower,upper`: {err}"))
        }
        _ => Ok(given.clone()),
    }
}

/// Joins a dotted key prefix and a key (`prefix.key`, or `key` alone).
fn join_key(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// Fuses the two legs' scores of a candidate list.
///
/// Returns one [`Fused`] per candidate, in the order of `candidates`. The hybrid score is
/// `(w_v * vector_normalized + w_t * text_normalized) / (w_v + w_t)` for both methods
/// (for RRF the normalised leg score is `(k + 1) / (k + rank)`), so it lies in `[0, 1]`;
/// with both weights 0 it is 0. Pass the weights of [`FusionWeights::in_use`]. Each
/// candidate's result depends only on the multiset of candidates, never on their order,
/// so sorting the result (score, then user id) is deterministic.
///
/// # Errors
///
/// [`ErrorKind::NonFiniteScore`](crate::ErrorKind::NonFiniteScore) if a score is NaN or infinite;
/// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) if a weight is negative or not finite, or the method's
/// parameters are invalid (`k <= 0`, fixed bounds not increasing).
///
/// # Example
///
/// ```
/// use ruchedb::PerLeg;
/// use ruchedb::fusion::{fuse, FusionSpec};
///
/// let spec = FusionSpec::default(); // 0.7 * vector + 0.3 * min_max(bm25)
/// let weights = spec.weights().in_use(PerLeg::BOTH, PerLeg::ONES)?;
/// let scores = |text, vector| PerLeg { text, vector, graph: None };
/// let candidates = [
///     scores(Some(8.0), Some(0.6)),
///     scores(None, Some(0.7)), // no BM25 match
///     scores(Some(4.0), None), // no vector
/// ];
/// let fused = fuse(&candidates, &spec, weights)?;
/// assert!((fused[0].hybrid - (0.7 * 0.6 + 0.3 * 1.0)).abs() < 1e-12);
/// assert_eq!(fused[1].text_normalized, 0.0);
/// assert!((fused[2].hybrid - 0.3 * 0.5).abs() < 1e-12);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn fuse(
    candidates: &[PerLeg<Option<f64>>],
    spec: &FusionSpec,
    weights: FusionWeights,
) -> Result<Vec<Fused>> {
    fuse_with(candidates, &spec.method(), weights)
}
