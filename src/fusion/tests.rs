//! Tests of the fusion methods against a naive oracle.

use super::*;
use crate::model::doc::Scope;
use crate::model::leg::PerLeg;
use proptest::prelude::*;
use serde_json::{Map, Value};

const TOLERANCE: f64 = 1e-12;

#[track_caller]
fn assert_close(got: &[f64], expected: &[f64]) {
    assert_eq!(got.len(), expected.len(), "{got:?} vs {expected:?}");
    for (g, e) in got.iter().zip(expected) {
        assert!((g - e).abs() <= TOLERANCE, "{got:?} vs {expected:?}");
    }
}

fn weighted(normalization: Norm) -> Method {
    Method::Weighted {
        text: normalization,
        vector: normalization,
    }
}

fn text_scores(scores: &[Option<f64>]) -> Vec<PerLeg<Option<f64>>> {
    scores
        .iter()
        .map(|&text| PerLeg {
            text,
            vector: None,
            graph: None,
        })
        .collect()
}

/// Checks one leg's normalised scores: on the text leg alone, then on the vector leg
/// alone (the method mirrored), where the hybrid score must equal the leg's score.
#[track_caller]
fn check(method: Method, scores: &[Option<f64>], expected: &[f64]) {
    let text_only = FusionWeights {
        vector_weight: 0.0,
        text_weight: 1.0,
    };
    let fused = fuse_with(&text_scores(scores), &method, text_only).unwrap();
    let normalized: Vec<f64> = fused.iter().map(|f| f.text_normalized).collect();
    assert_close(&normalized, expected);
    let hybrid: Vec<f64> = fused.iter().map(|f| f.hybrid).collect();
    assert_close(&hybrid, expected);

    let mirrored = match method {
        Method::Weighted { text, vector } => Method::Weighted {
            text: vector,
            vector: text,
        },
        rrf @ Method::Rrf { .. } => rrf,
    };
    let candidates: Vec<PerLeg<Option<f64>>> = scores
        .iter()
        .map(|&vector| PerLeg {
            text: None,
            vector,
            graph: None,
        })
        .collect();
    let vector_only = FusionWeights {
        vector_weight: 1.0,
        text_weight: 0.0,
    };
    let fused = fuse_with(&candidates, &mirrored, vector_only).unwrap();
    let normalized: Vec<f64> = fused.iter().map(|f| f.vector_normalized).collect();
    assert_close(&normalized, expected);
}

/// Checks the hybrid scores of whole candidates `(text, vector)`.
#[track_caller]
fn check_fused(
    method: Method,
    (vector_weight, text_weight): (f64, f64),
    candidates: &[(Option<f64>, Option<f64>)],
    expected: &[f64],
) {
    let candidates: Vec<PerLeg<Option<f64>>> = candidates
        .iter()
        .map(|&(text, vector)| PerLeg {
            text,
            vector,
            graph: None,
        })
        .collect();
    let weights = FusionWeights {
        vector_weight,
        text_weight,
    };
    let fused = fuse_with(&candidates, &method, weights).unwrap();
    let hybrid: Vec<f64> = fused.iter().map(|f| f.hybrid).collect();
    assert_close(&hybrid, expected);
}

#[test]
fn min_max_edge_cases() {
    assert_eq!(min_max(&[]), Vec::<f64>::new());
    assert_eq!(min_max(&[0.2]), vec![1.0]);
    assert_eq!(min_max(&[0.0]), vec![0.0]);
    assert_eq!(min_max(&[5.0, 5.0]), vec![1.0, 1.0]);
    assert_eq!(min_max(&[-1.0, -3.0]), vec![1.0, 0.0]);
    assert_eq!(min_max(&[4.0, 0.0, 2.0]), vec![1.0, 0.0, 0.5]);
}

#[test]
fn min_max_leg() {
    let method = weighted(Norm::MinMax);
    check(method, &[], &[]);
    check(method, &[None, None], &[0.0, 0.0]);
    // One candidate, all equal.
    check(method, &[Some(0.2)], &[1.0]);
    check(method, &[Some(0.0)], &[0.0]);
    check(method, &[Some(-2.0)], &[0.0]);
    check(method, &[Some(5.0), Some(5.0)], &[1.0, 1.0]);
    check(method, &[Some(5.0), None], &[1.0, 0.0]);
    check(method, &[Some(4.0), Some(0.0), Some(2.0)], &[1.0, 0.0, 0.5]);
    // A missing candidate anchors the lower end at 0, as seed 003's min-max over the
    // whole list with missing BM25 as 0: the weakest match keeps credit.
    check(method, &[Some(8.0), Some(4.0)], &[1.0, 0.0]);
    check(method, &[Some(8.0), None, Some(4.0)], &[1.0, 0.0, 0.5]);
    // Negative scores: the lower end stays the present minimum, never above it.
    check(method, &[Some(-1.0), Some(-3.0)], &[1.0, 0.0]);
    check(method, &[Some(-1.0), None, Some(-3.0)], &[1.0, 0.0, 0.0]);
    check(method, &[Some(-2.0), None, Some(2.0)], &[0.0, 0.0, 1.0]);
    // A range that overflows is scaled, not turned into NaN.
    check(method, &[Some(f64::MAX), Some(-f64::MAX)], &[1.0, 0.0]);
    check(method, &[Some(f64::MAX), None, Some(0.0)], &[1.0, 0.0, 0.0]);
}

#[test]
fn fixed_bounds_leg() {
    let method = weighted(Norm::FixedBounds {
        lower: 0.0,
        upper: 10.0,
    });
    check(method, &[], &[]);
    // One weak hit stays weak.
    check(method, &[Some(1.0)], &[0.1]);
    check(method, &[Some(4.0), Some(4.0)], &[0.4, 0.4]);
    check(
        method,
        &[Some(2.0), None, Some(15.0), Some(-1.0)],
        &[0.2, 0.0, 1.0, 0.0],
    );
    let method = weighted(Norm::FixedBounds {
        lower: -5.0,
        upper: 5.0,
    });
    check(method, &[Some(0.0), None, Some(-4.0)], &[0.5, 0.0, 0.1]);
    check(method, &[Some(-f64::MAX), Some(f64::MAX)], &[0.0, 1.0]);
}

#[test]
fn z_score_leg() {
    let method = weighted(Norm::ZScore);
    let third = 1.0 / 3.0;
    check(method, &[], &[]);
    check(method, &[None], &[0.0]);
    // No spread: the mean, 0.5.
    check(method, &[Some(3.0)], &[0.5]);
    check(method, &[Some(0.0)], &[0.5]);
    check(method, &[Some(3.0), Some(3.0), None], &[0.5, 0.5, 0.0]);
    check(method, &[Some(0.1); 3], &[0.5; 3]);
    // Mean 2, population deviation 1: z = -1 and 1.
    check(method, &[Some(1.0), Some(3.0)], &[third, 1.0 - third]);
    check(method, &[Some(-1.0), Some(-3.0)], &[1.0 - third, third]);
    // Mean 1, deviation 3: 10 is exactly mean + 3σ.
    let mut scores = vec![Some(0.0); 9];
    scores.push(Some(10.0));
    let mut expected = vec![0.5 - 1.0 / 18.0; 9];
    expected.push(1.0);
    check(method, &scores, &expected);
    // Beyond 3σ clamps: 99 zeros and one 100 (mean 1, σ = √99).
    let mut scores = vec![Some(0.0); 99];
    scores.push(Some(100.0));
    let mut expected = vec![0.5 - 1.0 / 99f64.sqrt() / 6.0; 99];
    expected.push(1.0);
    check(method, &scores, &expected);
    // The peer bug: missing candidates are 0, never above present low scores.
    check(
        method,
        &[Some(-5.0), Some(-4.0), None],
        &[third, 1.0 - third, 0.0],
    );
    check(
        method,
        &[Some(f64::MAX), Some(-f64::MAX)],
        &[1.0 - third, third],
    );
}

#[test]
fn rrf_leg() {
    let method = Method::Rrf { k: 60.0 };
    check(method, &[], &[]);
    check(method, &[Some(0.3)], &[1.0]);
    check(method, &[None, Some(1.0)], &[0.0, 1.0]);
    // Competition ranking: 1, 2, 2, 4.
    check(
        method,
        &[Some(9.0), Some(7.0), Some(7.0), Some(5.0)],
        &[1.0, 61.0 / 62.0, 61.0 / 62.0, 61.0 / 64.0],
    );
    check(
        method,
        &[Some(5.0), None, Some(7.0), Some(9.0), Some(7.0)],
        &[61.0 / 64.0, 0.0, 61.0 / 62.0, 1.0, 61.0 / 62.0],
    );
    check(method, &[Some(-1.0), Some(-2.0)], &[1.0, 61.0 / 62.0]);
    check(method, &[Some(2.0); 3], &[1.0; 3]);
    let method = Method::Rrf { k: 1.0 };
    check(
        method,
        &[Some(3.0), Some(2.0), Some(1.0)],
        &[1.0, 2.0 / 3.0, 0.5],
    );
}

#[test]
fn weighted_fusion_of_both_legs() {
    let seed = FusionSpec::default().method();
    check_fused(
        seed,
        (0.7, 0.3),
        &[
            (Some(8.0), Some(0.6)),
            (None, Some(0.7)),
            (Some(4.0), None),
            (None, None),
        ],
        &[0.7 * 0.6 + 0.3, 0.7 * 0.7, 0.3 * 0.5, 0.0],
    );
    // Weights are relative.
    check_fused(
        seed,
        (7.0, 3.0),
        &[(Some(8.0), Some(0.6)), (Some(4.0), None)],
        &[0.7 * 0.6 + 0.3, 0.0],
    );
    // No weight at all: nothing to rank by.
    check_fused(seed, (0.0, 0.0), &[(Some(8.0), Some(0.6))], &[0.0]);
    let dbsf = weighted(Norm::ZScore);
    check_fused(
        dbsf,
        (0.5, 0.5),
        &[(Some(1.0), Some(0.2)), (Some(3.0), None)],
        &[(1.0 / 3.0 + 0.5) / 2.0, (2.0 / 3.0) / 2.0],
    );
}

#[test]
fn rrf_fusion_of_both_legs() {
    let method = Method::Rrf { k: 60.0 };
    // Text ranks a: 1, b: missing, c: 2; vector ranks a: 2, b: 1, c: missing.
    check_fused(
        method,
        (0.5, 0.5),
        &[(Some(5.0), Some(0.4)), (None, Some(0.9)), (Some(2.0), None)],
        &[(1.0 + 61.0 / 62.0) / 2.0, 0.5, (61.0 / 62.0) / 2.0],
    );
    // The maximum is reached by a candidate first in both legs.
    check_fused(method, (0.3, 0.1), &[(Some(5.0), Some(0.4))], &[1.0]);
    check_fused(
        method,
        (0.75, 0.25),
        &[(Some(5.0), Some(0.4)), (Some(6.0), None)],
        &[0.75 + 0.25 * 61.0 / 62.0, 0.25],
    );
}

#[test]
fn a_leg_that_did_not_run_gives_its_weight_to_the_other() {
    let configured = FusionWeights::default();
    let in_use = configured.in_use(PerLeg::VECTOR, PerLeg::ONES).unwrap();
    assert_eq!(
        in_use,
        FusionWeights {
            vector_weight: 1.0,
            text_weight: 0.0
        }
    );
    let method = FusionSpec::default().method();
    check_fused(
        method,
        (in_use.vector_weight, in_use.text_weight),
        &[(None, Some(0.8)), (None, Some(0.2))],
        &[0.8, 0.2],
    );
    let in_use = configured.in_use(PerLeg::TEXT, PerLeg::ONES).unwrap();
    assert_eq!(
        in_use,
        FusionWeights {
            vector_weight: 0.0,
            text_weight: 1.0
        }
    );
    check_fused(
        method,
        (in_use.vector_weight, in_use.text_weight),
        &[(Some(4.0), None), (Some(2.0), None)],
        &[1.0, 0.0],
    );
}

#[test]
fn weights_in_use() {
    #[track_caller]
    fn check_in_use(
        (vector_weight, text_weight): (f64, f64),
        ran: PerLeg<bool>,
        (vector, text): (f64, f64),
        expected: (f64, f64),
    ) {
        let weights = FusionWeights {
            vector_weight,
            text_weight,
        };
        let got = weights
            .in_use(
                ran,
                PerLeg {
                    vector,
                    text,
                    graph: 1.0,
                },
            )
            .unwrap();
        assert_close(
            &[got.vector_weight, got.text_weight],
            &[expected.0, expected.1],
        );
    }
    check_in_use((0.7, 0.3), PerLeg::BOTH, (1.0, 1.0), (0.7, 0.3));
    check_in_use((2.0, 3.0), PerLeg::BOTH, (1.0, 1.0), (0.4, 0.6));
    check_in_use(
        (0.7, 0.3),
        PerLeg::BOTH,
        (1.0, 1.8),
        (0.7 / 1.24, 0.54 / 1.24),
    );
    check_in_use(
        (0.7, 0.3),
        PerLeg::BOTH,
        (0.2, 1.8),
        (0.14 / 0.68, 0.54 / 0.68),
    );
    check_in_use((0.0, 0.0), PerLeg::BOTH, (1.0, 1.0), (0.5, 0.5));
    check_in_use((0.7, 0.3), PerLeg::BOTH, (0.0, 0.0), (0.5, 0.5));
    check_in_use((1e300, 1e300), PerLeg::BOTH, (1.0, 1.0), (0.5, 0.5));
    // A leg that did not run gives its weight to the other, whatever the weights.
    check_in_use((0.0, 1.0), PerLeg::VECTOR, (1.0, 1.0), (1.0, 0.0));
    check_in_use((0.7, 0.3), PerLeg::TEXT, (0.2, 0.2), (0.0, 1.0));
    check_in_use((0.7, 0.3), PerLeg::NONE, (1.0, 1.0), (0.0, 0.0));

    for (weights, factors) in [
        ((-0.1, 0.3), (1.0, 1.0)),
        ((f64::NAN, 0.3), (1.0, 1.0)),
        ((0.7, 0.3), (1.0, -1.0)),
        ((0.7, 0.3), (f64::INFINITY, 1.0)),
        ((1e300, 0.3), (1e300, 1.0)),
    ] {
        let weights = FusionWeights {
            vector_weight: weights.0,
            text_weight: weights.1,
        };
        let factors = PerLeg {
            vector: factors.0,
            text: factors.1,
            graph: 1.0,
        };
        let err = weights.in_use(PerLeg::BOTH, factors).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::InvalidInput { .. }),
            "{err}"
        );
    }
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let method = FusionSpec::default().method();
    let weights = FusionWeights::default();
    for (candidate, context) in [
        (
            PerLeg {
                text: Some(f64::NAN),
                vector: None,
                graph: None,
            },
            "the text score of candidate 1",
        ),
        (
            PerLeg {
                text: None,
                vector: Some(f64::INFINITY),
                graph: None,
            },
            "the vector score of candidate 1",
        ),
        (
            PerLeg {
                text: Some(f64::NEG_INFINITY),
                vector: Some(0.5),
                graph: None,
            },
            "the text score of candidate 1",
        ),
    ] {
        let candidates = [PerLeg::default(), candidate];
        let err = fuse_with(&candidates, &method, weights).unwrap_err();
        assert_eq!(
            err.kind(),
            &ErrorKind::NonFiniteScore {
                context: context.to_string()
            }
        );
    }
    let err = Norm::ZScore.apply(&[Some(f64::NAN)]).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::NonFiniteScore { .. }),
        "{err}"
    );

    for (method, weights) in [
        (
            method,
            FusionWeights {
                vector_weight: -1.0,
                text_weight: 0.3,
            },
        ),
        (
            method,
            FusionWeights {
                vector_weight: 0.7,
                text_weight: f64::NAN,
            },
        ),
        (Method::Rrf { k: 0.0 }, weights),
        (Method::Rrf { k: f64::NAN }, weights),
        (
            weighted(Norm::FixedBounds {
                lower: 1.0,
                upper: 1.0,
            }),
            weights,
        ),
        (
            weighted(Norm::FixedBounds {
                lower: 0.0,
                upper: f64::INFINITY,
            }),
            weights,
        ),
        (
            weighted(Norm::FixedBounds {
                lower: -f64::MAX,
                upper: f64::MAX,
            }),
            weights,
        ),
    ] {
        let err = fuse_with(&[PerLeg::default()], &method, weights).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::InvalidInput { .. }),
            "{err}"
        );
    }
    let bounds = Norm::FixedBounds {
        lower: 2.0,
        upper: 1.0,
    };
    assert!(bounds.apply(&[]).is_err());
}

#[test]
fn the_default_spec_is_seed_003() {
    let spec = FusionSpec::default();
    assert_eq!(spec.weights(), FusionWeights::default());
    assert_eq!(
        spec.method(),
        Method::Weighted {
            text: Norm::MinMax,
            vector: Norm::FixedBounds {
                lower: 0.0,
                upper: 1.0
            },
        }
    );
    spec.validate("fusion.rules").unwrap();
    assert_eq!(
        spec.method().to_string(),
        "weighted (text: min_max, vector: fixed_bounds [0, 1])"
    );
    assert_eq!(Method::Rrf { k: 60.0 }.to_string(), "rrf (k = 60)");
}

#[test]
fn spec_from_toml() {
    let spec: FusionSpec = toml::from_str(
        r#"
        method = "rrf"
        text_normalization = "z_score"
        vector_normalization = "min_max"
        vector_weight = 1
        text_weight = 2
        text_bounds = [0, 12]
        vector_bounds = [0.2, 0.8]
        rrf_k = 20
        "#,
    )
    .unwrap();
    assert_eq!(
        spec,
        FusionSpec {
            method: FusionMethod::Rrf,
            text_normalization: Normalization::ZScore,
            vector_normalization: Normalization::MinMax,
            vector_weight: 1.0,
            text_weight: 2.0,
            text_bounds: [0.0, 12.0],
            vector_bounds: [0.2, 0.8],
            rrf_k: 20.0,
        }
    );
    let partial: FusionSpec = toml::from_str("text_normalization = \"fixed_bounds\"").unwrap();
    assert_eq!(
        partial.method(),
        Method::Weighted {
            text: Norm::FixedBounds {
                lower: 0.0,
                upper: 10.0
            },
            vector: Norm::FixedBounds {
                lower: 0.0,
                upper: 1.0
            },
        }
    );
    assert!(toml::from_str::<FusionSpec>("normalisation = \"min_max\"").is_err());
    assert!(toml::from_str::<FusionSpec>("method = \"borda\"").is_err());
    let round_trip: FusionSpec = toml::from_str(&toml::to_string(&spec).unwrap()).unwrap();
    assert_eq!(round_trip, spec);
}

#[test]
fn invalid_specs_name_the_key() {
    #[track_caller]
    fn check_invalid(spec: FusionSpec, expected_key: &str) {
        let err = spec.validate("fusion.rules").unwrap_err();
        let ErrorKind::InvalidConfig { key, .. } = err.kind() else {
            panic!("{err}")
        };
        assert_eq!(key, expected_key, "{err}");
    }
    let spec = FusionSpec::default();
    check_invalid(
        FusionSpec {
            vector_weight: -0.1,
            ..spec
        },
        "fusion.rules.vector_weight",
    );
    check_invalid(
        FusionSpec {
            text_weight: f64::INFINITY,
            ..spec
        },
        "fusion.rules.text_weight",
    );
    check_invalid(
        FusionSpec {
            vector_weight: 0.0,
            text_weight: 0.0,
            ..spec
        },
        "fusion.rules.text_weight",
    );
    check_invalid(
        FusionSpec {
            text_bounds: [3.0, 3.0],
            ..spec
        },
        "fusion.rules.text_bounds",
    );
    check_invalid(
        FusionSpec {
            vector_bounds: [1.0, 0.0],
            ..spec
        },
        "fusion.rules.vector_bounds",
    );
    check_invalid(
        FusionSpec {
            vector_bounds: [f64::NAN, 1.0],
            ..spec
        },
        "fusion.rules.vector_bounds",
    );
    check_invalid(FusionSpec { rrf_k: 0.0, ..spec }, "fusion.rules.rrf_k");
    check_invalid(
        FusionSpec {
            rrf_k: -60.0,
            ..spec
        },
        "fusion.rules.rrf_k",
    );
    check_invalid(
        FusionSpec {
            rrf_k: f64::NAN,
            ..spec
        },
        "fusion.rules.rrf_k",
    );
    // One weight at 0 is a choice: that leg is off.
    FusionSpec {
        text_weight: 0.0,
        ..spec
    }
    .validate("fusion.rules")
    .unwrap();
    let err = FusionSpec { rrf_k: 0.0, ..spec }.validate("").unwrap_err();
    assert!(err.to_string().contains("`rrf_k`"), "{err}");
}

#[test]
fn spec_from_params() {
    #[track_caller]
    fn check_params(name: &str, params: Value, expected: FusionSpec) {
        let spec = FusionSpec::from_params(name, params.as_object().unwrap()).unwrap();
        assert_eq!(spec, expected);
    }
    let default = FusionSpec::default();
    let none = serde_json::json!({});
    check_params("weighted", none.clone(), default);
    check_params(
        "min_max",
        none.clone(),
        FusionSpec {
            text_normalization: Normalization::MinMax,
            ..default
        },
    );
    check_params(
        "fixed_bounds",
        serde_json::json!({"text_bounds": "[0, 12.5]"}),
        FusionSpec {
            text_normalization: Normalization::FixedBounds,
            text_bounds: [0.0, 12.5],
            ..default
        },
    );
    check_params(
        "z_score",
        none.clone(),
        FusionSpec {
            text_normalization: Normalization::ZScore,
            ..default
        },
    );
    check_params(
        "dbsf",
        serde_json::json!({"vector_weight": "0.5", "text_weight": "0.5"}),
        FusionSpec {
            text_normalization: Normalization::ZScore,
            vector_normalization: Normalization::ZScore,
            vector_weight: 0.5,
            text_weight: 0.5,
            ..default
        },
    );
    check_params(
        "rrf",
        serde_json::json!({"rrf_k": 10, "vector_bounds": [0.1, 0.9]}),
        FusionSpec {
            method: FusionMethod::Rrf,
            rrf_k: 10.0,
            vector_bounds: [0.1, 0.9],
            ..default
        },
    );
    check_params(
        "weighted",
        serde_json::json!({"method": "rrf", "vector_normalization": "z_score"}),
        FusionSpec {
            method: FusionMethod::Rrf,
            vector_normalization: Normalization::ZScore,
            ..default
        },
    );
    for name in FusionSpec::NAMES {
        FusionSpec::from_params(name, &Map::new()).unwrap();
    }

    let err = FusionSpec::from_params("borda", &Map::new()).unwrap_err();
    assert_eq!(
        err.kind(),
        &ErrorKind::UnknownName {
            what: "fusion method",
            name: "borda".to_string()
        }
    );
    #[track_caller]
    fn check_bad_param(params: Value, expected_key: &str) {
        let err = FusionSpec::from_params("weighted", params.as_object().unwrap()).unwrap_err();
        let ErrorKind::InvalidConfig { key, .. } = err.kind() else {
            panic!("{err}")
        };
        assert_eq!(key, expected_key, "{err}");
    }
    check_bad_param(serde_json::json!({"k": 60}), "k");
    check_bad_param(serde_json::json!({"rrf_k": "sixty"}), "rrf_k");
    check_bad_param(serde_json::json!({"rrf_k": "NaN"}), "rrf_k");
    check_bad_param(serde_json::json!({"rrf_k": "0"}), "rrf_k");
    check_bad_param(serde_json::json!({"rrf_k": true}), "rrf_k");
    check_bad_param(serde_json::json!({"method": "borda"}), "method");
    check_bad_param(
        serde_json::json!({"text_normalization": 3}),
        "text_normalization",
    );
    check_bad_param(serde_json::json!({"text_bounds": "5"}), "text_bounds");
    check_bad_param(serde_json::json!({"text_bounds": "5,x"}), "text_bounds");
    check_bad_param(serde_json::json!({"text_bounds": "5,1"}), "text_bounds");
    check_bad_param(serde_json::json!({"text_bounds": [1, 2, 3]}), "text_bounds");
    check_bad_param(serde_json::json!({"vector_weight": "-1"}), "vector_weight");
    let err = FusionSpec::from_params("weighted", serde_json::json!({"k": 1}).as_object().unwrap())
        .unwrap_err();
    assert!(err.to_string().contains("rrf_k"), "{err}");
}

#[test]
fn priority_is_clamped_to_the_fixed_range() {
    let weights = RuleWeights::default();
    assert_eq!(weights.normalized_priority(-5), 0.0);
    assert_eq!(weights.normalized_priority(50), 0.5);
    assert_eq!(weights.normalized_priority(1_000), 1.0);
}

#[test]
fn seed_formula() {
    let weights = RuleWeights::default();
    let step = Scope::step("s", "t");
    let score = weights.score(0.5, 100, &step);
    assert!((score.final_score - (0.3 + 0.3 + 0.12)).abs() < 1e-12);
    assert!((score.scope_term - 0.12).abs() < 1e-12);
}

#[test]
fn invalid_weights_name_the_key() {
    let weights = RuleWeights {
        priority_weight: -1.0,
        ..RuleWeights::default()
    };
    let err = weights.validate("scoring.rules").unwrap_err();
    assert!(
        err.to_string().contains("scoring.rules.priority_weight"),
        "{err}"
    );
}

// The naive oracle: each formula written out plainly, without the scaling and the
// shortcuts of the implementation.

fn naive_min_max(scores: &[Option<f64>]) -> Vec<f64> {
    let present: Vec<f64> = scores.iter().flatten().copied().collect();
    let mut lo = present.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = present.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if present.len() < scores.len() {
        lo = lo.min(0.0);
    }
    scores
        .iter()
        .map(|score| match *score {
            None => 0.0,
            Some(s) if hi > lo => (s - lo) / (hi - lo),
            Some(s) if s > 0.0 => 1.0,
            Some(_) => 0.0,
        })
        .collect()
}

fn naive_z_score(scores: &[Option<f64>]) -> Vec<f64> {
    let present: Vec<f64> = scores.iter().flatten().copied().collect();
    let n = present.len() as f64;
    let mean = present.iter().sum::<f64>() / n;
    let variance = present.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    let sigma = variance.sqrt();
    let all_equal = present.iter().all(|&x| x == present[0]);
    scores
        .iter()
        .map(|score| match *score {
            None => 0.0,
            Some(_) if all_equal => 0.5,
            Some(s) => ((s - (mean - 3.0 * sigma)) / (6.0 * sigma)).clamp(0.0, 1.0),
        })
        .collect()
}

fn naive_rrf(scores: &[Option<f64>], k: f64) -> Vec<f64> {
    scores
        .iter()
        .map(|score| match *score {
            None => 0.0,
            Some(s) => {
                let rank = 1 + scores.iter().flatten().filter(|&&other| other > s).count();
                (1.0 / (k + rank as f64)) / (1.0 / (k + 1.0))
            }
        })
        .collect()
}

fn naive_leg(method: &Method, scores: &[Option<f64>], text: bool) -> Vec<f64> {
    let normalization = match *method {
        Method::Rrf { k } => return naive_rrf(scores, k),
        Method::Weighted { text: t, vector: v } => {
            if text {
                t
            } else {
                v
            }
        }
    };
    match normalization {
        Norm::MinMax => naive_min_max(scores),
        Norm::ZScore => naive_z_score(scores),
        Norm::FixedBounds { lower, upper } => scores
            .iter()
            .map(|s| s.map_or(0.0, |s| ((s - lower) / (upper - lower)).clamp(0.0, 1.0)))
            .collect(),
    }
}

fn naive_fuse(candidates: &[PerLeg<Option<f64>>], method: &Method, w: FusionWeights) -> Vec<Fused> {
    let text: Vec<Option<f64>> = candidates.iter().map(|c| c.text).collect();
    let vector: Vec<Option<f64>> = candidates.iter().map(|c| c.vector).collect();
    let text = naive_leg(method, &text, true);
    let vector = naive_leg(method, &vector, false);
    let total = w.vector_weight + w.text_weight;
    text.into_iter()
        .zip(vector)
        .map(|(t, v)| Fused {
            hybrid: if total > 0.0 {
                (w.vector_weight * v + w.text_weight * t) / total
            } else {
                0.0
            },
            text_normalized: t,
            vector_normalized: v,
        })
        .collect()
}

fn arb_score() -> impl Strategy<Value = f64> {
    // Small integers make ties and all-equal lists common.
    prop_oneof![(-3i32..=3).prop_map(f64::from), -1e3f64..1e3]
}

fn arb_candidates() -> impl Strategy<Value = Vec<PerLeg<Option<f64>>>> {
    let leg = || prop::option::weighted(0.75, arb_score());
    prop::collection::vec(
        (leg(), leg()).prop_map(|(text, vector)| PerLeg {
            text,
            vector,
            graph: None,
        }),
        0..30,
    )
}

fn arb_normalization() -> impl Strategy<Value = Norm> {
    prop_oneof![
        Just(Norm::MinMax),
        Just(Norm::ZScore),
        (-10f64..10.0, 0.1f64..20.0).prop_map(|(lower, width)| Norm::FixedBounds {
            lower,
            upper: lower + width
        }),
    ]
}

fn arb_method() -> impl Strategy<Value = Method> {
    prop_oneof![
        (arb_normalization(), arb_normalization())
            .prop_map(|(text, vector)| Method::Weighted { text, vector }),
        (0.5f64..200.0).prop_map(|k| Method::Rrf { k }),
    ]
}

fn arb_weights() -> impl Strategy<Value = FusionWeights> {
    prop_oneof![
        (0f64..5.0, 0f64..5.0),
        Just((0.0, 1.0)),
        Just((1.0, 0.0)),
        Just((0.7, 0.3)),
    ]
    .prop_map(|(vector_weight, text_weight)| FusionWeights {
        vector_weight,
        text_weight,
    })
}

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance
}

proptest! {
    #[test]
    fn min_max_stays_in_unit_range(scores in prop::collection::vec(-1e6f64..1e6, 0..40)) {
        let normalised = min_max(&scores);
        prop_assert_eq!(normalised.len(), scores.len());
        for (n, s) in normalised.iter().zip(&scores) {
            prop_assert!((0.0..=1.0).contains(n));
            // Order is preserved.
            for (m, t) in normalised.iter().zip(&scores) {
                if s < t { prop_assert!(n <= m); }
            }
        }
    }

    #[test]
    fn fuse_matches_the_naive_oracle(
        candidates in arb_candidates(),
        method in arb_method(),
        weights in arb_weights(),
    ) {
        let fused = fuse_with(&candidates, &method, weights).unwrap();
        let expected = naive_fuse(&candidates, &method, weights);
        prop_assert_eq!(fused.len(), expected.len());
        for (got, want) in fused.iter().zip(&expected) {
            let pairs = [
                (got.text_normalized, want.text_normalized),
                (got.vector_normalized, want.vector_normalized),
                (got.hybrid, want.hybrid),
            ];
            for (g, w) in pairs {
                prop_assert!(close(g, w, 1e-9), "{got:?} vs {want:?}");
            }
        }
    }

    #[test]
    fn fused_scores_lie_in_the_unit_range(
        candidates in arb_candidates(),
        method in arb_method(),
        weights in arb_weights(),
    ) {
        for fused in fuse_with(&candidates, &method, weights).unwrap() {
            for value in [fused.hybrid, fused.text_normalized, fused.vector_normalized] {
                prop_assert!((0.0..=1.0).contains(&value), "{fused:?}");
            }
        }
    }

    #[test]
    fn absence_from_a_leg_is_never_rewarded(
        candidates in arb_candidates(),
        method in arb_method(),
        weights in arb_weights(),
    ) {
        let fused = fuse_with(&candidates, &method, weights).unwrap();
        for (i, (a, fa)) in candidates.iter().zip(&fused).enumerate() {
            if a.text.is_none() {
                prop_assert_eq!(fa.text_normalized, 0.0);
            }
            if a.vector.is_none() {
                prop_assert_eq!(fa.vector_normalized, 0.0);
            }
            for (j, (b, fb)) in candidates.iter().zip(&fused).enumerate() {
                if i == j {
                    continue;
                }
                // Absent from the text leg: never a higher text score than a present
                // candidate, nor a higher hybrid score with the same vector score.
                if a.text.is_none() && b.text.is_some() {
                    prop_assert!(fa.text_normalized <= fb.text_normalized);
                    if a.vector == b.vector {
                        prop_assert!(fa.hybrid <= fb.hybrid + TOLERANCE, "{fa:?} vs {fb:?}");
                    }
                }
                if a.vector.is_none() && b.vector.is_some() {
                    prop_assert!(fa.vector_normalized <= fb.vector_normalized);
                    if a.text == b.text {
                        prop_assert!(fa.hybrid <= fb.hybrid + TOLERANCE, "{fa:?} vs {fb:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_better_leg_score_never_ranks_lower(
        candidates in arb_candidates(),
        method in arb_method(),
        weights in arb_weights(),
    ) {
        let fused = fuse_with(&candidates, &method, weights).unwrap();
        for (a, fa) in candidates.iter().zip(&fused) {
            for (b, fb) in candidates.iter().zip(&fused) {
                if let (Some(ta), Some(tb)) = (a.text, b.text)
                    && ta >= tb {
                        prop_assert!(fa.text_normalized >= fb.text_normalized);
                        if a.vector == b.vector {
                            prop_assert!(fa.hybrid + TOLERANCE >= fb.hybrid);
                        }
                    }
                if let (Some(va), Some(vb)) = (a.vector, b.vector)
                    && va >= vb {
                        prop_assert!(fa.vector_normalized >= fb.vector_normalized);
                    }
            }
        }
    }

    #[test]
    fn fusion_is_deterministic_and_order_independent(
        candidates in arb_candidates(),
        method in arb_method(),
        weights in arb_weights(),
        rotation in 0usize..30,
    ) {
        let fused = fuse_with(&candidates, &method, weights).unwrap();
        prop_assert_eq!(&fused, &fuse_with(&candidates, &method, weights).unwrap());
        let mut reordered = candidates.clone();
        reordered.reverse();
        if !reordered.is_empty() {
            let by = rotation % reordered.len();
            reordered.rotate_left(by);
        }
        let refused = fuse_with(&reordered, &method, weights).unwrap();
        for (candidate, got) in reordered.iter().zip(&refused) {
            let original = candidates.iter().position(|c| c == candidate).unwrap();
            let want = fused[original];
            prop_assert!(close(got.hybrid, want.hybrid, TOLERANCE), "{got:?} vs {want:?}");
            prop_assert!(close(got.text_normalized, want.text_normalized, TOLERANCE));
            prop_assert!(close(got.vector_normalized, want.vector_normalized, TOLERANCE));
        }
    }

    #[test]
    fn the_default_spec_reproduces_seed_003(
        candidates in prop::collection::vec(
            (
                prop::option::weighted(
                    0.7,
                    prop_oneof![(0u8..4).prop_map(f64::from), 0f64..30.0],
                ),
                prop::option::weighted(0.8, 0f64..=1.0),
            ),
            0..30,
        ),
    ) {
        // Seed 003: `0.7 * vector + 0.3 * min_max(bm25)` with a missing BM25 as 0.
        let bm25: Vec<f64> = candidates.iter().map(|(t, _)| t.unwrap_or(0.0)).collect();
        let bm25_normalized = min_max(&bm25);
        let legs: Vec<PerLeg<Option<f64>>> = candidates
            .iter()
            .map(|&(text, vector)| PerLeg { text, vector, graph: None })
            .collect();
        let spec = FusionSpec::default();
        let weights = spec.weights().in_use(PerLeg::BOTH, PerLeg::ONES).unwrap();
        let fused = fuse_with(&legs, &spec.method(), weights).unwrap();
        for ((leg, got), norm) in legs.iter().zip(&fused).zip(&bm25_normalized) {
            let seed = 0.7 * leg.vector.unwrap_or(0.0) + 0.3 * norm;
            prop_assert!(close(got.hybrid, seed, TOLERANCE), "{got:?} vs {seed}");
            prop_assert!(close(got.text_normalized, *norm, TOLERANCE));
        }
    }

    #[test]
    fn weights_in_use_sum_to_one(
        vector_weight in 0f64..10.0,
        text_weight in 0f64..10.0,
        vector in 0.2f64..1.8,
        text in 0.2f64..1.8,
    ) {
        let weights = FusionWeights { vector_weight, text_weight };
        let got = weights.in_use(PerLeg::BOTH, PerLeg { vector, text, graph: 1.0 }).unwrap();
        prop_assert!(close(got.vector_weight + got.text_weight, 1.0, TOLERANCE));
        let (v, t) = (vector_weight * vector, text_weight * text);
        if v + t > 0.0 {
            prop_assert!(close(got.vector_weight, v / (v + t), 1e-12));
        }
    }
}
