//! [`SelectionConfig`]: the serde form of a strategy, its validation and its factory.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::strategy::SelectionStrategy;
use super::{
    AdaptiveKSelection, AutocutSelection, BandSelection, ClusteringSelection, ElbowSelection,
    EntropySelection, FixedKSelection,
};
use super::{adaptive_k, autocut, band, clustering, elbow, entropy, fixed_k, param};
use crate::error::Error;

/// The configuration of one selection strategy, tagged by `strategy`.
///
/// This is one TOML section (or JSON object): the `strategy` key names the variant and the
/// other keys are its parameters. A parameter left out is `None` and takes the strategy's
/// own default (seed 000's constructor defaults, listed on each strategy type), so "not
/// set" stays distinct from "set to the default" and configurations can be merged. Unknown
/// keys are rejected when deserialising.
///
/// | strategy | parameter | default | allowed |
/// | --- | --- | --- | --- |
/// | `elbow` | `drop_threshold` | 0.15 | 0..=1 |
/// |  | `min_score` | 0.5 | 0..=1 |
/// | `adaptive_k` | `alpha` | 1.5 | 0.5..=5.0 |
/// |  | `min_score` | 0.4 | 0..=1 |
/// | `entropy` | `low_entropy_k` | 3 | ≥ 1 |
/// |  | `medium_entropy_k` | 5 | ≥ 1 |
/// |  | `high_entropy_k` | 10 | ≥ 1 |
/// |  | `min_score` | 0.3 | 0..=1 |
/// | `clustering` | `eps` | 0.1 | finite, > 0 |
/// |  | `min_cluster_size` | 2 | ≥ 1 |
/// |  | `top_per_cluster` | 3 | ≥ 1 |
/// |  | `min_score` | 0.4 | 0..=1 |
/// | `fixed_k` | `k` | 5 | ≥ 1 |
/// |  | `min_score` | not set | 0..=1 |
/// | `autocut` | `jumps` | 1 | ≥ 1 |
/// |  | `tolerance` | 1e-9 | 0..=1 |
/// | `band` | `band` | 0.04 | 0..=1 |
/// |  | `min_score` | not set | 0..=1 |
///
/// Deserialising does not check ranges: call [`validate`](Self::validate) with the
/// section's dotted key (or [`build`](Self::build), which validates).
///
/// # Example
///
/// ```
/// use ruchedb::select::SelectionConfig;
///
/// let config: SelectionConfig =
///     serde_json::from_str(r#"{"strategy": "adaptive_k", "alpha": 2.0}"#)?;
/// assert_eq!(config, SelectionConfig::AdaptiveK { alpha: Some(2.0), min_score: None });
/// config.validate("pipeline.retrieval.rule_selection")?;
/// let strategy = config.build()?;
/// assert_eq!(strategy.name(), "adaptive_k");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "strategy", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum SelectionConfig {
    /// [`ElbowSelection`]: cut at the first large relative drop.
    Elbow {
        /// The relative drop above which the walk stops (default 0.15, in `0..=1`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        drop_threshold: Option<f64>,
        /// Items below this are not kept beyond `min_k` (default 0.5, in `0..=1`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_score: Option<f64>,
    },
    /// [`AdaptiveKSelection`]: cut at the first drop much larger than the mean drop.
    AdaptiveK {
        /// Sensitivity, higher keeps more (default 1.5, in `0.5..=5.0`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        alpha: Option<f64>,
        /// Items below this are not considered (default 0.4, in `0..=1`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_score: Option<f64>,
    },
    /// [`EntropySelection`]: take more items when the scores are alike.
    Entropy {
        /// Items kept below 1.0 nat of entropy (default 3, at least 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        low_entropy_k: Option<usize>,
        /// Items kept from 1.0 to 2.0 nats (default 5, at least 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        medium_entropy_k: Option<usize>,
        /// Items kept from 2.0 nats (default 10, at least 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        high_entropy_k: Option<usize>,
        /// Items below this are not candidates (default 0.3, in `0..=1`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_score: Option<f64>,
    },
    /// [`ClusteringSelection`]: keep the best items of each group of similar scores.
    Clustering {
        /// The DBSCAN radius as a score distance (default 0.1, finite and above 0).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        eps: Option<f64>,
        /// Scores within `eps` that make a core point (default 2, at least 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_cluster_size: Option<usize>,
        /// Items kept per cluster (default 3, at least 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        top_per_cluster: Option<usize>,
        /// Items below this are not candidates (default 0.4, in `0..=1`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_score: Option<f64>,
    },
    /// [`FixedKSelection`]: the baseline top-k.
    FixedK {
        /// The number of items to keep (default 5, at least 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        k: Option<usize>,
        /// Items below this are never kept (default: no filter; in `0..=1`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_score: Option<f64>,
    },
    /// [`AutocutSelection`]: cut before the N-th jump of the score curve.
    Autocut {
        /// The jump before which the selection stops (default 1, at least 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        jumps: Option<usize>,
        /// The smallest normalised difference that counts (default 1e-9, in `0..=1`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tolerance: Option<f64>,
    },
    /// [`BandSelection`]: keep what scores within a band of the best.
    Band {
        /// How far below the best an item may score (default 0.04, in `0..=1`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        band: Option<f64>,
        /// The most items kept (default: `max_k`; at least 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_hits: Option<usize>,
        /// Items below this are never kept (default: no filter; in `0..=1`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_score: Option<f64>,
    },
}

/// The parameter names of each strategy, in the order of [`SelectionConfig::STRATEGY_NAMES`].
const PARAMETERS: [(&str, &[&str]); 7] = [
    ("elbow", &["drop_threshold", "min_score"]),
    ("adaptive_k", &["alpha", "min_score"]),
    (
        "entropy",
        &[
            "low_entropy_k",
            "medium_entropy_k",
            "high_entropy_k",
            "min_score",
        ],
    ),
    (
        "clustering",
        &["eps", "min_cluster_size", "top_per_cluster", "min_score"],
    ),
    ("fixed_k", &["k", "min_score"]),
    ("autocut", &["jumps", "tolerance"]),
    ("band", &["band", "max_hits", "min_score"]),
];

impl SelectionConfig {
    /// The names of the built-in strategies, as the `strategy` key spells them.
    pub const STRATEGY_NAMES: &'static [&'static str] = &[
        "elbow",
        "adaptive_k",
        "entropy",
        "clustering",
        "fixed_k",
        "autocut",
        "band",
    ];

    /// Returns the strategy's name (the `strategy` key).
    pub fn strategy_name(&self) -> &'static str {
        match self {
            SelectionConfig::Elbow { .. } => "elbow",
            SelectionConfig::AdaptiveK { .. } => "adaptive_k",
            SelectionConfig::Entropy { .. } => "entropy",
            SelectionConfig::Clustering { .. } => "clustering",
            SelectionConfig::FixedK { .. } => "fixed_k",
            SelectionConfig::Autocut { .. } => "autocut",
            SelectionConfig::Band { .. } => "band",
        }
    }

    /// Checks every parameter that is set against its range (see the table above).
    ///
    /// `key_prefix` is the dotted key of the section (for example
    /// `pipeline.retrieval.rule_selection`); errors name `key_prefix.parameter`, or the
    /// bare parameter when `key_prefix` is empty.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) naming the first
    /// parameter that is out of range.
    ///
    /// # Example
    ///
    /// ```
    /// use ruchedb::ErrorKind;
    /// use ruchedb::select::SelectionConfig;
    ///
    /// let config = SelectionConfig::AdaptiveK { alpha: Some(9.0), min_score: None };
    /// let err = config.validate("pipeline.retrieval.rule_selection").unwrap_err();
    /// let ErrorKind::InvalidConfig { key, .. } = err.kind() else { panic!("{err}") };
    /// assert_eq!(key, "pipeline.retrieval.rule_selection.alpha");
    /// ```
    pub fn validate(&self, key_prefix: &str) -> crate::Result<()> {
        let key = |name: &str| param::join_key(key_prefix, name);
        match *self {
            SelectionConfig::Elbow {
                drop_threshold,
                min_score,
            } => {
                check(drop_threshold, |value| {
                    elbow::check_drop_threshold(&key("drop_threshold"), value)
                })?;
                check(min_score, |value| {
                    param::min_score(&key("min_score"), value)
                })
            }
            SelectionConfig::AdaptiveK { alpha, min_score } => {
                check(alpha, |value| adaptive_k::check_alpha(&key("alpha"), value))?;
                check(min_score, |value| {
                    param::min_score(&key("min_score"), value)
                })
            }
            SelectionConfig::Entropy {
                low_entropy_k,
                medium_entropy_k,
                high_entropy_k,
                min_score,
            } => {
                check(low_entropy_k, |value| {
                    entropy::check_k(&key("low_entropy_k"), value)
                })?;
                check(medium_entropy_k, |value| {
                    entropy::check_k(&key("medium_entropy_k"), value)
                })?;
                check(high_entropy_k, |value| {
                    entropy::check_k(&key("high_entropy_k"), value)
                })?;
                check(min_score, |value| {
                    param::min_score(&key("min_score"), value)
                })
            }
            SelectionConfig::Clustering {
                eps,
                min_cluster_size,
                top_per_cluster,
                min_score,
            } => {
                check(eps, |value| clustering::check_eps(&key("eps"), value))?;
                check(min_cluster_size, |value| {
                    clustering::check_count(&key("min_cluster_size"), value)
                })?;
                check(top_per_cluster, |value| {
                    clustering::check_count(&key("top_per_cluster"), value)
                })?;
                check(min_score, |value| {
                    param::min_score(&key("min_score"), value)
                })
            }
            SelectionConfig::FixedK { k, min_score } => {
                check(k, |value| fixed_k::check_k(&key("k"), value))?;
                check(min_score, |value| {
                    param::min_score(&key("min_score"), value)
                })
            }
            SelectionConfig::Autocut { jumps, tolerance } => {
                check(jumps, |value| autocut::check_jumps(&key("jumps"), value))?;
                check(tolerance, |value| {
                    autocut::check_tolerance(&key("tolerance"), value)
                })
            }
            SelectionConfig::Band {
                band: width,
                max_hits,
                min_score,
            } => {
                check(width, |value| band::check_band(&key("band"), value))?;
                check(max_hits, |value| {
                    band::check_max_hits(&key("max_hits"), value)
                })?;
                check(min_score, |value| {
                    param::min_score(&key("min_score"), value)
                })
            }
        }
    }

    /// Builds the configured strategy, with the strategy's defaults for unset parameters.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) naming the bare
    /// parameter when one is out of range; call [`validate`](Self::validate) first to get
    /// the full dotted key.
    ///
    /// # Example
    ///
    /// ```
    /// use ruchedb::select::SelectionConfig;
    ///
    /// let config = SelectionConfig::FixedK { k: Some(2), min_score: None };
    /// let result = config.build()?.select_scores(&[0.9, 0.8, 0.7], 30, 1)?;
    /// assert_eq!(result.selected, [0, 1]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(&self) -> crate::Result<Box<dyn SelectionStrategy>> {
        self.validate("")?;
        let strategy: Box<dyn SelectionStrategy> = match *self {
            SelectionConfig::Elbow {
                drop_threshold,
                min_score,
            } => {
                let mut strategy = ElbowSelection::default();
                if let Some(drop_threshold) = drop_threshold {
                    strategy = strategy.with_drop_threshold(drop_threshold)?;
                }
                if let Some(min_score) = min_score {
                    strategy = strategy.with_min_score(min_score)?;
                }
                Box::new(strategy)
            }
            SelectionConfig::AdaptiveK { alpha, min_score } => {
                let mut strategy = AdaptiveKSelection::default();
                if let Some(alpha) = alpha {
                    strategy = strategy.with_alpha(alpha)?;
                }
                if let Some(min_score) = min_score {
                    strategy = strategy.with_min_score(min_score)?;
                }
                Box::new(strategy)
            }
            SelectionConfig::Entropy {
                low_entropy_k,
                medium_entropy_k,
                high_entropy_k,
                min_score,
            } => {
                let mut strategy = EntropySelection::default();
                if let Some(low_entropy_k) = low_entropy_k {
                    strategy = strategy.with_low_entropy_k(low_entropy_k)?;
                }
                if let Some(medium_entropy_k) = medium_entropy_k {
                    strategy = strategy.with_medium_entropy_k(medium_entropy_k)?;
                }
                if let Some(high_entropy_k) = high_entropy_k {
                    strategy = strategy.with_high_entropy_k(high_entropy_k)?;
                }
                if let Some(min_score) = min_score {
                    strategy = strategy.with_min_score(min_score)?;
                }
                Box::new(strategy)
            }
            SelectionConfig::Clustering {
                eps,
                min_cluster_size,
                top_per_cluster,
                min_score,
            } => {
                let mut strategy = ClusteringSelection::default();
                if let Some(eps) = eps {
                    strategy = strategy.with_eps(eps)?;
                }
                if let Some(min_cluster_size) = min_cluster_size {
                    strategy = strategy.with_min_cluster_size(min_cluster_size)?;
                }
                if let Some(top_per_cluster) = top_per_cluster {
                    strategy = strategy.with_top_per_cluster(top_per_cluster)?;
                }
                if let Some(min_score) = min_score {
                    strategy = strategy.with_min_score(min_score)?;
                }
                Box::new(strategy)
            }
            SelectionConfig::FixedK { k, min_score } => {
                let mut strategy = FixedKSelection::default().with_min_score(min_score)?;
                if let Some(k) = k {
                    strategy = strategy.with_k(k)?;
                }
                Box::new(strategy)
            }
            SelectionConfig::Autocut { jumps, tolerance } => {
                let mut strategy = AutocutSelection::default();
                if let Some(jumps) = jumps {
                    strategy = strategy.with_jumps(jumps)?;
                }
                if let Some(tolerance) = tolerance {
                    strategy = strategy.with_tolerance(tolerance)?;
                }
                Box::new(strategy)
            }
            SelectionConfig::Band {
                band,
                max_hits,
                min_score,
            } => {
                let mut strategy = BandSelection::default()
                    .with_min_score(min_score)?
                    .with_max_hits(max_hits)?;
                if let Some(band) = band {
                    strategy = strategy.with_band(band)?;
                }
                Box::new(strategy)
            }
        };
        Ok(strategy)
    }

    /// Makes a validated configuration from a strategy name and a map of parameters.
    ///
    /// This is the form the CLI's `--strategy NAME --select-param key=value` and the
    /// `ruche select` JSONL lines use. A parameter value may be a JSON number, a string
    /// holding a number (`"1.5"`, as a command line gives it), or `null` (not set). Count
    /// parameters (`k`, `jumps`, `min_cluster_size`, ...) must be whole and not negative.
    ///
    /// # Errors
    ///
    /// - [`ErrorKind::UnknownName`](crate::ErrorKind::UnknownName) (`what` is `strategy`)
    ///   if `name` is not one of [`STRATEGY_NAMES`](Self::STRATEGY_NAMES).
    /// - [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) naming the
    ///   parameter when a key is not a parameter of that strategy, a value is not a number
    ///   of the right kind, or it is out of range.
    ///
    /// # Example
    ///
    /// ```
    /// use ruchedb::ErrorKind;
    /// use ruchedb::select::SelectionConfig;
    ///
    /// let params = serde_json::json!({"alpha": "2.5", "min_score": 0.3});
    /// let config = SelectionConfig::from_params("adaptive_k", params.as_object().unwrap())?;
    /// assert_eq!(config, SelectionConfig::AdaptiveK { alpha: Some(2.5), min_score: Some(0.3) });
    ///
    /// let err = SelectionConfig::from_params("top_p", &serde_json::Map::new()).unwrap_err();
    /// assert!(matches!(err.kind(), ErrorKind::UnknownName { what: "strategy", .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_params(name: &str, params: &Map<String, Value>) -> crate::Result<Self> {
        let Some((name, allowed)) = PARAMETERS.iter().find(|(known, _)| *known == name) else {
            return Err(Error::unknown_name("strategy", name));
        };
        if let Some(unknown) = params.keys().find(|key| !allowed.contains(&key.as_str())) {
            return Err(Error::invalid_config(
                unknown.as_str(),
                format!(
                    "`{unknown}` is not a parameter of strategy `{name}` (expected one of: {})",
                    allowed.join(", ")
                ),
            ));
        }
        let float = |key: &str| float_param(params, key);
        let count = |key: &str| count_param(params, key);
        let config = match *name {
            "elbow" => SelectionConfig::Elbow {
                drop_threshold: float("drop_threshold")?,
                min_score: float("min_score")?,
            },
            "adaptive_k" => SelectionConfig::AdaptiveK {
                alpha: float("alpha")?,
                min_score: float("min_score")?,
            },
            "entropy" => SelectionConfig::Entropy {
                low_entropy_k: count("low_entropy_k")?,
                medium_entropy_k: count("medium_entropy_k")?,
                high_entropy_k: count("high_entropy_k")?,
                min_score: float("min_score")?,
            },
            "clustering" => SelectionConfig::Clustering {
                eps: float("eps")?,
                min_cluster_size: count("min_cluster_size")?,
                top_per_cluster: count("top_per_cluster")?,
                min_score: float("min_score")?,
            },
            "fixed_k" => SelectionConfig::FixedK {
                k: count("k")?,
                min_score: float("min_score")?,
            },
            "autocut" => SelectionConfig::Autocut {
                jumps: count("jumps")?,
                tolerance: float("tolerance")?,
            },
            _ => SelectionConfig::Band {
                band: float("band")?,
                max_hits: count("max_hits")?,
                min_score: float("min_score")?,
            },
        };
        config.validate("")?;
        Ok(config)
    }
}

/// Runs `check_value` on `value` when it is set.
fn check<T>(
    value: Option<T>,
    check_value: impl FnOnce(T) -> crate::Result<()>,
) -> crate::Result<()> {
    value.map_or(Ok(()), check_value)
}

/// Reads a number parameter: a JSON number, a string holding one, or `null`.
fn float_param(params: &Map<String, Value>, key: &str) -> crate::Result<Option<f64>> {
    let parsed = match params.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(number)) => number.as_f64(),
        Some(Value::String(text)) => text.trim().parse::<f64>().ok(),
        Some(_) => None,
    };
    match parsed {
        Some(value) => Ok(Some(value)),
        None => Err(Error::invalid_config(
            key,
            format!("expected a number, got {}", params[key]),
        )),
    }
}

/// Reads a count parameter: a whole non-negative JSON number, a string holding one, or
/// `null`.
fn count_param(params: &Map<String, Value>, key: &str) -> crate::Result<Option<usize>> {
    let parsed = match params.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(number)) => number.as_u64().and_then(|n| usize::try_from(n).ok()),
        Some(Value::String(text)) => text.trim().parse::<usize>().ok(),
        Some(_) => None,
    };
    match parsed {
        Some(value) => Ok(Some(value)),
        None => Err(Error::invalid_config(
            key,
            format!("expected a whole number, 0 or more, got {}", params[key]),
        )),
    }
}
