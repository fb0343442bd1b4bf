//! Tests of the k-selection strategies: golden conformance cases, edge cases per strategy,
//! properties over random inputs, and configuration.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::clustering::dbscan_1d;
use super::*;
use crate::ErrorKind;

/// The golden cases, generated from a reference implementation of seed 000.
const GOLDEN: &str = include_str!("../../tests/fixtures/selection_cases.json");

/// Builds a strategy from its name and JSON parameters.
fn strategy(name: &str, params: Value) -> Box<dyn SelectionStrategy> {
    let params = params.as_object().cloned().unwrap_or_default();
    SelectionConfig::from_params(name, &params)
        .and_then(|config| config.build())
        .unwrap_or_else(|err| panic!("cannot build {name} {params:?}: {err}"))
}

/// Runs `strategy` and checks the selected indices, the cutoff score, and that every key
/// of `metadata` is in the result's metadata with that value.
#[track_caller]
fn check(
    strategy: &dyn SelectionStrategy,
    scores: &[f64],
    (max_k, min_k): (usize, usize),
    expected: &[usize],
    metadata: Value,
) {
    let result = strategy
        .select_scores(scores, max_k, min_k)
        .unwrap_or_else(|err| panic!("{strategy:?} failed on {scores:?}: {err}"));
    let context = format!("{strategy:?} on {scores:?} (max_k {max_k}, min_k {min_k})");
    assert_eq!(result.selected, expected, "{context}: selected");
    let cutoff = expected.last().map_or(0.0, |&last| scores[last]);
    assert_eq!(result.cutoff_score, cutoff, "{context}: cutoff_score");
    assert_eq!(result.method, strategy.name(), "{context}: method");
    for (key, value) in metadata.as_object().expect("metadata is an object") {
        let actual = result.metadata.get(key);
        assert!(
            actual.is_some_and(|actual| json_close(actual, value)),
            "{context}: metadata `{key}` is {actual:?}, expected {value}"
        );
    }
}

/// Compares JSON values, numbers within 1e-9.
fn json_close(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Number(actual), Value::Number(expected)) => {
            match (actual.as_f64(), expected.as_f64()) {
                (Some(actual), Some(expected)) => (actual - expected).abs() <= 1e-9,
                _ => actual == expected,
            }
        }
        (Value::Object(actual), Value::Object(expected)) => {
            actual.len() == expected.len()
                && expected.iter().all(|(key, expected)| {
                    actual
                        .get(key)
                        .is_some_and(|actual| json_close(actual, expected))
                })
        }
        _ => actual == expected,
    }
}

// # Conformance

#[test]
fn conformance_with_golden_cases() {
    let golden: Value = serde_json::from_str(GOLDEN).expect("golden file is JSON");
    let cases = golden["cases"].as_array().expect("`cases` is an array");
    assert_eq!(cases.len(), 6448);

    let mut mismatches = Vec::new();
    for (case_idx, case) in cases.iter().enumerate() {
        let name = case["strategy"].as_str().expect("strategy");
        let scores: Vec<f64> = serde_json::from_value(case["scores"].clone()).expect("scores");
        let max_k = case["max_k"].as_u64().expect("max_k") as usize;
        let min_k = case["min_k"].as_u64().expect("min_k") as usize;
        let selected: Vec<usize> =
            serde_json::from_value(case["selected"].clone()).expect("selected");
        let cutoff = case["cutoff_score"].as_f64().expect("cutoff_score");

        let result = strategy(name, case["params"].clone()).select_scores(&scores, max_k, min_k);
        let result = match result {
            Ok(result) => result,
            Err(err) => {
                mismatches.push(format!("case {case_idx} ({name}): error {err}"));
                continue;
            }
        };
        let mut problems = Vec::new();
        if result.selected != selected {
            problems.push(format!(
                "selected {:?}, expected {selected:?}",
                result.selected
            ));
        }
        if (result.cutoff_score - cutoff).abs() > 1e-9 {
            problems.push(format!(
                "cutoff_score {}, expected {cutoff}",
                result.cutoff_score
            ));
        }
        for (key, value) in case["metadata"].as_object().expect("metadata") {
            let actual = result.metadata.get(key);
            if !actual.is_some_and(|actual| json_close(actual, value)) {
                problems.push(format!("metadata `{key}` {actual:?}, expected {value}"));
            }
        }
        if !problems.is_empty() {
            mismatches.push(format!(
                "case {case_idx} ({name} {} max_k {max_k} min_k {min_k} scores {scores:?}): {}",
                case["params"],
                problems.join("; ")
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} golden cases differ:\n{}",
        mismatches.len(),
        cases.len(),
        mismatches.join("\n")
    );
}

// # Input validation

#[test]
fn rejects_non_finite_scores() {
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        for name in SelectionConfig::STRATEGY_NAMES {
            let err = strategy(name, json!({}))
                .select_scores(&[0.9, bad, 0.1], 10, 1)
                .unwrap_err();
            let names_index = matches!(
                err.kind(),
                ErrorKind::NonFiniteScore { context } if context.contains("index 1")
            );
            assert!(names_index, "{name}: {err:?}");
        }
    }
}

#[test]
fn rejects_unsorted_scores() {
    for name in SelectionConfig::STRATEGY_NAMES {
        let err = strategy(name, json!({}))
            .select_scores(&[0.9, 0.8, 0.85, 0.1], 10, 1)
            .unwrap_err();
        assert_eq!(
            err.kind(),
            &ErrorKind::UnsortedScores { index: 2 },
            "{name}"
        );
    }
    // Ties are sorted.
    let input = SelectionInput::new(&[0.5, 0.5, 0.0, -0.0, -1.0], 10, 1).unwrap();
    assert_eq!(input.scores().len(), 5);
}

#[test]
fn empty_input_and_zero_max_k_select_nothing() {
    for name in SelectionConfig::STRATEGY_NAMES {
        let strategy = strategy(name, json!({}));
        for (scores, max_k, min_k) in [
            (&[][..], 10, 1),
            (&[][..], 0, 0),
            (&[0.9, 0.8, 0.1][..], 0, 0),
            (&[0.9, 0.8, 0.1][..], 0, 3),
        ] {
            let result = strategy.select_scores(scores, max_k, min_k).unwrap();
            assert!(result.selected.is_empty(), "{name} {scores:?} {max_k}");
            assert_eq!(result.cutoff_score, 0.0, "{name}");
        }
    }
}

#[test]
fn min_k_is_clamped_to_max_k() {
    let input = SelectionInput::new(&[0.9, 0.8], 1, 5).unwrap();
    assert_eq!((input.max_k(), input.min_k()), (1, 1));
    for name in SelectionConfig::STRATEGY_NAMES {
        let result = strategy(name, json!({}))
            .select_scores(&[0.9, 0.2, 0.1, 0.05], 2, 4)
            .unwrap();
        // adaptive_k's min_score filter leaves one item (`below_min_k`).
        let expected: &[usize] = if *name == "adaptive_k" { &[0] } else { &[0, 1] };
        assert_eq!(result.selected, expected, "{name}");
    }
}

// # Generic selection

#[test]
fn select_moves_items_on_concrete_and_dyn_strategies() {
    let hits = vec![
        ("Customer wants refund", 0.92),
        ("Customer asks about return", 0.89),
        ("Order status inquiry", 0.71),
    ];
    let concrete = ElbowSelection::default()
        .select(hits.clone(), 30, 1)
        .unwrap();
    assert_eq!(concrete.selected, hits[..2]);
    assert_eq!(concrete.cutoff_score, 0.89);

    let boxed: Box<dyn SelectionStrategy> = Box::new(FixedKSelection::default());
    let by_dyn = boxed.select(hits.clone(), 30, 1).unwrap();
    assert_eq!(by_dyn.selected, hits);

    let by_ref: Vec<&(&str, f64)> = hits.iter().collect();
    let borrowed = boxed.select(by_ref, 1, 1).unwrap();
    assert_eq!(borrowed.selected, [&hits[0]]);

    let as_ref: &dyn SelectionStrategy = &*boxed;
    assert_eq!(
        as_ref.select(hits.clone(), 2, 1).unwrap().selected,
        hits[..2]
    );
    let shared: std::sync::Arc<dyn SelectionStrategy> =
        std::sync::Arc::new(AutocutSelection::default());
    assert_eq!(
        shared.select(hits.clone(), 30, 1).unwrap().method,
        "autocut"
    );

    let bare = boxed.select(vec![0.5_f32, 0.25], 30, 1).unwrap();
    assert_eq!(bare.selected, [0.5, 0.25]);

    let err = boxed
        .select(vec![("a", 0.1), ("b", f64::NAN)], 30, 1)
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NonFiniteScore { .. }));
}

#[test]
fn result_serialises_with_its_metadata() {
    let result = ElbowSelection::default()
        .select_scores(&[0.9], 30, 1)
        .unwrap();
    let value = serde_json::to_value(&result).unwrap();
    assert_eq!(
        value,
        json!({
            "selected": [0],
            "cutoff_score": 0.9,
            "method": "elbow",
            "metadata": {"drop_threshold": 0.15, "min_score": 0.5},
        })
    );
}

// # Elbow

#[test]
fn elbow() {
    let elbow = ElbowSelection::default();
    let order = [0.92, 0.89, 0.71, 0.45, 0.42];
    check(
        &elbow,
        &order,
        (30, 1),
        &[0, 1],
        json!({"drop_threshold": 0.15, "min_score": 0.5}),
    );
    check(&elbow, &order, (30, 3), &[0, 1, 2], json!({}));
    check(&elbow, &order, (1, 1), &[0], json!({}));
    // min_k 0 and a first score below min_score: nothing.
    check(&elbow, &[0.3, 0.2], (30, 0), &[], json!({}));
    // min_k forces items in even below min_score.
    check(&elbow, &[0.9, 0.1, 0.05], (30, 2), &[0, 1], json!({}));
    // Scores above 1.0: relative drops still work.
    check(&elbow, &[3.0, 2.9, 1.0], (30, 1), &[0, 1], json!({}));
    // A previous score of 0 never triggers the relative drop (no division by zero).
    let lenient = ElbowSelection::default().with_min_score(0.0).unwrap();
    check(
        &lenient,
        &[0.0, 0.0, 0.0],
        (30, 1),
        &[0, 1, 2],
        json!({"min_score": 0.0}),
    );
    check(&lenient, &[0.5, 0.0, 0.0], (30, 1), &[0], json!({}));
    // A drop exactly at the threshold does not cut.
    let half = ElbowSelection::default().with_drop_threshold(0.5).unwrap();
    check(&half, &[1.0, 0.5, 0.2], (30, 1), &[0, 1], json!({}));
}

// # Adaptive-k

#[test]
fn adaptive_k() {
    let adaptive = AdaptiveKSelection::default();
    let order = [0.92, 0.89, 0.71, 0.45, 0.42];
    check(
        &adaptive,
        &order,
        (30, 1),
        &[0, 1, 2],
        json!({"alpha": 1.5, "mean_drop": 0.125, "cutoff_idx": 3}),
    );
    check(
        &adaptive,
        &[],
        (30, 1),
        &[],
        json!({"reason": "below_min_k"}),
    );
    // Only one score passes min_score and min_k is 2: fewer than min_k come back.
    check(
        &adaptive,
        &[0.9, 0.3, 0.2],
        (30, 2),
        &[0],
        json!({"reason": "below_min_k"}),
    );
    // None passes min_score: the first min_k.
    check(
        &adaptive,
        &[0.3, 0.2, 0.1],
        (30, 2),
        &[0, 1],
        json!({"reason": "below_min_k"}),
    );
    // A single remaining score with min_k 0: no drop to measure.
    check(
        &adaptive,
        &[0.9, 0.2],
        (30, 0),
        &[],
        json!({"reason": "no_variance"}),
    );
    // Even drops: no outlier, everything kept.
    check(
        &adaptive,
        &[0.9, 0.8, 0.7, 0.6],
        (30, 1),
        &[0, 1, 2, 3],
        json!({"cutoff_idx": 4}),
    );
    // min_k keeps more than the cut.
    check(
        &adaptive,
        &[0.9, 0.5, 0.45, 0.44],
        (30, 1),
        &[0],
        json!({"cutoff_idx": 1}),
    );
    check(
        &adaptive,
        &[0.9, 0.5, 0.45, 0.44],
        (30, 3),
        &[0, 1, 2],
        json!({"cutoff_idx": 3}),
    );
    // max_k bounds what is considered.
    check(&adaptive, &order, (2, 1), &[0, 1], json!({"cutoff_idx": 2}));
    // A higher alpha is stricter about what counts as an outlier drop, so it keeps more.
    let strict = AdaptiveKSelection::default().with_alpha(3.0).unwrap();
    check(
        &strict,
        &order,
        (30, 1),
        &[0, 1, 2, 3, 4],
        json!({"alpha": 3.0}),
    );
}

// # Entropy

#[test]
fn entropy() {
    let entropy = EntropySelection::default();
    check(&entropy, &[], (30, 1), &[], json!({"entropy": 0.0}));
    // One candidate: entropy 0, high confidence.
    check(
        &entropy,
        &[0.95, 0.2, 0.15],
        (30, 1),
        &[0],
        json!({"entropy": 0.0, "target_k": 1, "confidence": "high"}),
    );
    // Three near-equal candidates: ln 3, medium.
    check(
        &entropy,
        &[0.75, 0.75, 0.75, 0.2],
        (30, 1),
        &[0, 1, 2],
        json!({"entropy": 3f64.ln(), "target_k": 3, "confidence": "medium"}),
    );
    // Twelve equal scores: ln 12 > 2, low confidence, high_entropy_k (10) items.
    let flat = [0.5; 12];
    check(
        &entropy,
        &flat,
        (30, 1),
        &(0..10).collect::<Vec<_>>(),
        json!({"target_k": 10, "confidence": "low"}),
    );
    // max_k caps both the measured scores and the count.
    check(
        &entropy,
        &flat,
        (4, 1),
        &[0, 1, 2, 3],
        json!({"entropy": 4f64.ln()}),
    );
    // Nothing passes min_score: the first min_k, all-zero scores are uniform.
    check(
        &entropy,
        &[0.0, 0.0, 0.0],
        (30, 2),
        &[0, 1],
        json!({"entropy": 2f64.ln()}),
    );
    // Negative scores carry no mass; an all-negative list is uniform.
    check(
        &entropy,
        &[-0.5, -0.6],
        (30, 2),
        &[0, 1],
        json!({"entropy": 2f64.ln()}),
    );
    check(
        &entropy,
        &[0.2, -0.6],
        (30, 2),
        &[0, 1],
        json!({"entropy": 0.0}),
    );
    // min_k 0 and nothing above min_score: nothing.
    check(&entropy, &[0.2, 0.1], (30, 0), &[], json!({"entropy": 0.0}));
    // min_k above the entropy's choice.
    check(
        &entropy,
        &[0.95, 0.2, 0.15],
        (30, 3),
        &[0, 1, 2],
        json!({"target_k": 3}),
    );
    // Scores above 1.0 normalise like any others.
    check(
        &entropy,
        &[4.0, 4.0],
        (30, 1),
        &[0, 1],
        json!({"entropy": 2f64.ln()}),
    );
}

// # Clustering

#[test]
fn clustering() {
    let clustering = ClusteringSelection::default();
    let order = [0.92, 0.89, 0.71, 0.45, 0.42];
    check(
        &clustering,
        &order,
        (30, 1),
        &[0, 1, 2, 3, 4],
        json!({"num_clusters": 2, "cluster_sizes": {"0": 2, "1": 2}, "noise_count": 1}),
    );
    check(
        &clustering,
        &order,
        (2, 1),
        &[0, 1],
        json!({"num_clusters": 2}),
    );
    let one_each = ClusteringSelection::default()
        .with_top_per_cluster(1)
        .unwrap();
    check(
        &one_each,
        &order,
        (30, 1),
        &[0, 2, 3],
        json!({"noise_count": 1}),
    );
    check(
        &clustering,
        &[],
        (30, 1),
        &[],
        json!({"clusters": 1, "reason": "too_few_items"}),
    );
    // Too few candidates: all kept, but never more than max_k.
    check(
        &clustering,
        &[0.9, 0.8],
        (1, 1),
        &[0],
        json!({"reason": "too_few_items"}),
    );
    // Two bands: the best of each, so not a prefix of the input.
    let two_per_band = ClusteringSelection::default()
        .with_top_per_cluster(2)
        .unwrap();
    check(
        &two_per_band,
        &[0.95, 0.94, 0.93, 0.92, 0.6, 0.59],
        (30, 1),
        &[0, 1, 4, 5],
        json!({"cluster_sizes": {"0": 4, "1": 2}, "noise_count": 0}),
    );
    // Noise exactly at min_score is not "high-scoring".
    check(
        &clustering,
        &[0.9, 0.89, 0.4],
        (30, 1),
        &[0, 1],
        json!({"noise_count": 1}),
    );
    // The min_k fill takes the best candidates not yet selected.
    let strict = ClusteringSelection::default()
        .with_eps(0.05)
        .and_then(|strategy| strategy.with_min_cluster_size(3))
        .and_then(|strategy| strategy.with_top_per_cluster(1))
        .unwrap();
    let scores = [0.9, 0.5, 0.45, 0.41];
    check(
        &strict,
        &scores,
        (30, 1),
        &[0, 1],
        json!({"cluster_sizes": {"0": 3}}),
    );
    check(
        &strict,
        &scores,
        (30, 3),
        &[0, 1, 2],
        json!({"noise_count": 1}),
    );
    // A border point within eps of two clusters joins the first (best) one.
    let wide = ClusteringSelection::default()
        .with_eps(5.5)
        .and_then(|strategy| strategy.with_min_cluster_size(4))
        .and_then(|strategy| strategy.with_top_per_cluster(10))
        .unwrap();
    check(
        &wide,
        &[100.0, 99.0, 98.0, 97.0, 92.0, 87.0, 86.0, 85.0, 84.0],
        (30, 1),
        &[0, 1, 2, 3, 4, 5, 6, 7, 8],
        json!({"num_clusters": 2, "cluster_sizes": {"0": 5, "1": 4}, "noise_count": 0}),
    );
    // Equal scores form one cluster.
    check(
        &clustering,
        &[0.5; 5],
        (30, 1),
        &[0, 1, 2],
        json!({"cluster_sizes": {"0": 5}}),
    );
    // min_cluster_size 1: every point is a core point.
    let singles = ClusteringSelection::default()
        .with_min_cluster_size(1)
        .unwrap();
    check(
        &singles,
        &[0.9, 0.5, 0.1],
        (30, 1),
        &[0, 1],
        json!({"num_clusters": 2}),
    );
}

/// scikit-learn's DBSCAN on 1-D points: quadratic neighbourhoods and a depth-first search.
fn dbscan_oracle(scores: &[f64], eps: f64, min_samples: usize) -> Vec<Option<usize>> {
    let neighbours: Vec<Vec<usize>> = scores
        .iter()
        .map(|&point| {
            (0..scores.len())
                .filter(|&other| (point - scores[other]).abs() <= eps)
                .collect()
        })
        .collect();
    let is_core: Vec<bool> = neighbours.iter().map(|n| n.len() >= min_samples).collect();
    let mut labels = vec![None; scores.len()];
    let mut n_clusters = 0;
    for start in 0..scores.len() {
        if labels[start].is_some() || !is_core[start] {
            continue;
        }
        let mut stack = vec![start];
        while let Some(point) = stack.pop() {
            if labels[point].is_none() {
                labels[point] = Some(n_clusters);
                if is_core[point] {
                    stack.extend(neighbours[point].iter().filter(|&&n| labels[n].is_none()));
                }
            }
        }
        n_clusters += 1;
    }
    labels
}

// # Fixed-k

#[test]
fn fixed_k() {
    let fixed = FixedKSelection::default();
    let scores = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3];
    check(
        &fixed,
        &scores,
        (30, 1),
        &[0, 1, 2, 3, 4],
        json!({"fixed_k": 5}),
    );
    check(&fixed, &scores, (3, 1), &[0, 1, 2], json!({}));
    check(&fixed, &scores[..2], (30, 1), &[0, 1], json!({}));
    check(&fixed, &[], (30, 1), &[], json!({"fixed_k": 5}));
    let one = FixedKSelection::default().with_k(1).unwrap();
    check(&one, &scores, (30, 3), &[0, 1, 2], json!({"fixed_k": 1}));
    // With min_score, what remains caps the count, even below min_k.
    let filtered = FixedKSelection::default()
        .with_min_score(Some(0.5))
        .unwrap();
    check(&filtered, &[0.9, 0.3, 0.2], (30, 2), &[0], json!({}));
    check(&filtered, &scores, (30, 1), &[0, 1, 2, 3, 4], json!({}));
}

// # Band

#[test]
fn band() {
    let band = BandSelection::default();
    check(
        &band,
        &[0.82, 0.80, 0.79, 0.71, 0.45],
        (30, 1),
        &[0, 1, 2],
        json!({"band": 0.04, "floor": 0.78}),
    );
    // A clear winner comes back alone; min_k and max_k still hold.
    check(&band, &[0.9, 0.6, 0.5], (30, 1), &[0], json!({}));
    check(&band, &[0.9, 0.6, 0.5], (30, 2), &[0, 1], json!({}));
    check(&band, &[0.9, 0.89, 0.88], (2, 1), &[0, 1], json!({}));
    check(&band, &[], (30, 1), &[], json!({}));
    // Scores above 1 (a code boost) work the same way.
    check(&band, &[1.95, 1.93, 0.9], (30, 1), &[0, 1], json!({}));
    let filtered = BandSelection::default()
        .with_band(0.5)
        .unwrap()
        .with_min_score(Some(0.5))
        .unwrap();
    check(&filtered, &[0.9, 0.6, 0.45], (30, 3), &[0, 1], json!({}));
}

proptest! {
    /// Against the definition: kept items are within the band of the best or needed for
    /// `min_k`; items left out (within `max_k`) are below the band or beyond `min_k`'s need.
    #[test]
    fn band_matches_its_definition(
        scores in sorted_scores(),
        width in 0.0..=1.0_f64,
        max_k in 0..45_usize,
        min_k in 0..12_usize,
    ) {
        let band = BandSelection::default().with_band(width).unwrap();
        let result = band.select_scores(&scores, max_k, min_k).unwrap();
        let considered = scores.len().min(max_k);
        let expected = if considered == 0 {
            0
        } else {
            let floor = scores[0] - width;
            let in_band = scores[..considered].iter().filter(|&&s| s >= floor).count();
            in_band.max(min_k.min(considered))
        };
        prop_assert_eq!(result.selected, (0..expected).collect::<Vec<_>>());
    }
}

// # Autocut

#[test]
fn autocut_matches_weaviate_documented_cases() {
    // Weaviate's example is in distances (lower is better); negated, they are scores.
    let distances = [0.1899, 0.1901, 0.191, 0.21, 0.215, 0.23];
    let scores: Vec<f64> = distances.iter().map(|distance| -distance).collect();
    let listed = [1.0, 0.98, 0.95, 0.9, 0.88, 0.87, 0.80, 0.79];
    for (jumps, kept_of_distances, kept_of_listed) in [(1, 3, 3), (2, 5, 6), (3, 6, 8)] {
        let autocut = AutocutSelection::default().with_jumps(jumps).unwrap();
        let expected: Vec<usize> = (0..kept_of_distances).collect();
        check(
            &autocut,
            &scores,
            (30, 1),
            &expected,
            json!({"jumps": jumps}),
        );
        let expected: Vec<usize> = (0..kept_of_listed).collect();
        check(
            &autocut,
            &listed,
            (30, 1),
            &expected,
            json!({"jumps": jumps}),
        );
    }
    // The distances themselves are ascending, which is not a score list.
    let err = AutocutSelection::default()
        .select_scores(&distances, 30, 1)
        .unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::UnsortedScores { index: 1 });
}

#[test]
fn autocut() {
    let autocut = AutocutSelection::default();
    let jump = [1.0, 0.5, 0.49, 0.48];
    check(
        &autocut,
        &jump,
        (30, 1),
        &[0],
        json!({"reason": "jump", "cut_before": 1, "jumps_found": 1, "min_k_applied": false}),
    );
    check(
        &autocut,
        &jump,
        (30, 3),
        &[0, 1, 2],
        json!({"cut_before": 1, "min_k_applied": true}),
    );
    // Evenly spaced scores carry float noise but have no jump.
    let even: Vec<f64> = (0..10).map(|step| 1.0 - 0.1 * f64::from(step)).collect();
    check(
        &autocut,
        &even,
        (30, 1),
        &(0..10).collect::<Vec<_>>(),
        json!({"reason": "fewer_jumps", "jumps_found": 0, "cut_before": null}),
    );
    // All equal: everything up to max_k.
    check(
        &autocut,
        &[0.7; 6],
        (4, 1),
        &[0, 1, 2, 3],
        json!({"reason": "all_equal"}),
    );
    // Fewer than three scores have no interior point.
    check(
        &autocut,
        &[0.9, 0.1],
        (30, 1),
        &[0, 1],
        json!({"reason": "too_few_items"}),
    );
    check(
        &autocut,
        &[0.9],
        (30, 0),
        &[0],
        json!({"reason": "too_few_items"}),
    );
    check(
        &autocut,
        &[],
        (30, 1),
        &[],
        json!({"reason": "no_items", "considered": 0}),
    );
    // A flat top counts once, at its first point (Weaviate's strict rule sees no peak).
    let plateau = [1.0, 0.5, 0.25, 0.15, 0.0];
    check(
        &autocut,
        &plateau,
        (30, 1),
        &[0],
        json!({"reason": "jump", "cut_before": 1}),
    );
    let two = AutocutSelection::default().with_jumps(2).unwrap();
    check(
        &two,
        &plateau,
        (30, 1),
        &[0, 1, 2, 3, 4],
        json!({"jumps_found": 1}),
    );
    // The last point is a jump when it is above the two before it.
    check(
        &autocut,
        &[1.0, 0.99, 0.98, 0.5],
        (30, 1),
        &[0, 1, 2],
        json!({"cut_before": 3}),
    );
    // Negative scores and scores above 1.0 normalise the same way.
    check(
        &autocut,
        &[3.0, -1.0, -1.1, -1.2],
        (30, 1),
        &[0],
        json!({"cut_before": 1}),
    );
    // max_k bounds what is considered.
    check(
        &autocut,
        &even,
        (3, 1),
        &[0, 1, 2],
        json!({"considered": 3}),
    );
}

// # Properties

/// A configuration with random valid parameters, for each strategy.
fn any_config() -> impl Strategy<Value = SelectionConfig> {
    let min_score = prop::option::of(0.0..=1.0_f64);
    prop_oneof![
        (prop::option::of(0.0..=1.0_f64), min_score.clone()).prop_map(
            |(drop_threshold, min_score)| SelectionConfig::Elbow {
                drop_threshold,
                min_score
            }
        ),
        (prop::option::of(0.5..=5.0_f64), min_score.clone())
            .prop_map(|(alpha, min_score)| SelectionConfig::AdaptiveK { alpha, min_score }),
        (
            prop::option::of(1..6_usize),
            prop::option::of(1..8_usize),
            prop::option::of(1..12_usize),
            min_score.clone()
        )
            .prop_map(|(low, medium, high, min_score)| SelectionConfig::Entropy {
                low_entropy_k: low,
                medium_entropy_k: medium,
                high_entropy_k: high,
                min_score,
            }),
        (
            prop::option::of(0.001..1.0_f64),
            prop::option::of(1..5_usize),
            prop::option::of(1..5_usize),
            min_score.clone()
        )
            .prop_map(|(eps, size, top, min_score)| SelectionConfig::Clustering {
                eps,
                min_cluster_size: size,
                top_per_cluster: top,
                min_score,
            }),
        (prop::option::of(1..12_usize), min_score)
            .prop_map(|(k, min_score)| SelectionConfig::FixedK { k, min_score }),
        (prop::option::of(1..5_usize), prop::option::of(0.0..0.1_f64))
            .prop_map(|(jumps, tolerance)| SelectionConfig::Autocut { jumps, tolerance }),
        (
            prop::option::of(0.0..=1.0_f64),
            prop::option::of(0.0..=1.0_f64)
        )
            .prop_map(|(band, min_score)| SelectionConfig::Band {
                band,
                max_hits: None,
                min_score,
            }),
    ]
}

/// Finite scores sorted descending: wide ranges, unit ranges, and lists full of ties.
fn sorted_scores() -> impl Strategy<Value = Vec<f64>> {
    prop_oneof![
        prop::collection::vec(-3.0..3.0_f64, 0..40),
        prop::collection::vec(0.0..1.0_f64, 0..40),
        prop::collection::vec(
            prop::sample::select(vec![0.0, 0.1, 0.3, 0.4, 0.5, 0.55, 0.9, 1.0]),
            0..40
        ),
        prop::collection::vec(-1e300..1e300_f64, 0..10),
        prop::collection::vec(
            prop::num::f64::POSITIVE
                | prop::num::f64::NEGATIVE
                | prop::num::f64::NORMAL
                | prop::num::f64::SUBNORMAL
                | prop::num::f64::ZERO,
            0..10
        ),
    ]
    .prop_map(|mut scores| {
        scores.sort_by(|a, b| b.total_cmp(a));
        scores
    })
}

proptest! {
    #[test]
    fn selection_invariants(
        config in any_config(),
        scores in sorted_scores(),
        max_k in 0..45_usize,
        min_k in 0..12_usize,
    ) {
        let strategy = config.build().unwrap();
        let result = strategy.select_scores(&scores, max_k, min_k).unwrap();
        let again = strategy.select_scores(&scores, max_k, min_k).unwrap();
        prop_assert_eq!(&result, &again, "not deterministic");

        let selected = &result.selected;
        prop_assert!(selected.len() <= max_k);
        prop_assert!(selected.iter().all(|&idx| idx < scores.len()));
        let mut distinct = selected.clone();
        distinct.sort_unstable();
        distinct.dedup();
        prop_assert_eq!(distinct.len(), selected.len(), "repeated index");
        prop_assert!(
            selected.windows(2).all(|pair| scores[pair[0]] >= scores[pair[1]]),
            "not sorted by score"
        );
        let cutoff = selected.last().map_or(0.0, |&last| scores[last]);
        prop_assert_eq!(result.cutoff_score, cutoff);
        prop_assert_eq!(result.method, config.strategy_name());

        if !matches!(config, SelectionConfig::Clustering { .. }) {
            let prefix: Vec<usize> = (0..selected.len()).collect();
            prop_assert_eq!(selected, &prefix, "not a prefix");
        }

        let floor = min_k.min(max_k).min(scores.len());
        let filtered_below_min_k = match config {
            SelectionConfig::AdaptiveK { .. } => {
                result.metadata.get("reason").is_some_and(|reason| reason == "below_min_k")
            }
            SelectionConfig::FixedK { min_score, .. } | SelectionConfig::Band { min_score, .. } => {
                min_score.is_some()
            }
            _ => false,
        };
        if !filtered_below_min_k {
            prop_assert!(selected.len() >= floor, "{} < min_k floor {}", selected.len(), floor);
        }
    }

    #[test]
    fn generic_select_matches_select_scores(
        config in any_config(),
        scores in sorted_scores(),
        max_k in 0..45_usize,
        min_k in 0..12_usize,
    ) {
        let strategy = config.build().unwrap();
        let by_index = strategy.select_scores(&scores, max_k, min_k).unwrap();
        let items: Vec<(usize, f64)> = scores.iter().copied().enumerate().collect();
        let by_item = strategy.select(items, max_k, min_k).unwrap();
        let indices: Vec<usize> = by_item.selected.iter().map(|(idx, _)| *idx).collect();
        prop_assert_eq!(indices, by_index.selected);
        prop_assert_eq!(by_item.metadata, by_index.metadata);
    }

    #[test]
    fn unsorted_scores_are_rejected(
        config in any_config(),
        mut scores in prop::collection::vec(-2.0..2.0_f64, 2..30),
    ) {
        scores.sort_by(|a, b| b.total_cmp(a));
        prop_assume!(scores[0] > scores[scores.len() - 1]);
        scores.reverse();
        let err = config.build().unwrap().select_scores(&scores, 30, 1).unwrap_err();
        let is_unsorted = matches!(err.kind(), ErrorKind::UnsortedScores { .. });
        prop_assert!(is_unsorted, "{:?}", err);
    }

    #[test]
    fn dbscan_matches_the_quadratic_oracle(
        scores in sorted_scores(),
        eps in prop_oneof![Just(0.1), Just(0.05), 0.001..1.0_f64],
        min_samples in 1..6_usize,
    ) {
        let (labels, n_clusters) = dbscan_1d(&scores, eps, min_samples);
        let expected = dbscan_oracle(&scores, eps, min_samples);
        prop_assert_eq!(n_clusters, expected.iter().flatten().max().map_or(0, |max| max + 1));
        prop_assert_eq!(labels, expected);
    }
}

// # Configuration

/// The shape of the pipeline configuration file, for deserialisation tests.
#[derive(serde::Deserialize)]
struct File {
    pipeline: Pipeline,
}

#[derive(serde::Deserialize)]
struct Pipeline {
    retrieval: Retrieval,
}

#[derive(serde::Deserialize)]
struct Retrieval {
    max_k: usize,
    rule_selection: SelectionConfig,
    memory_selection: SelectionConfig,
}

#[test]
fn config_from_toml_sections() {
    let file: File = toml::from_str(
        r#"
        [pipeline.retrieval]
        max_k = 30

        [pipeline.retrieval.rule_selection]
        strategy = "adaptive_k"
        alpha = 1.5
        min_score = 0.5

        [pipeline.retrieval.memory_selection]
        strategy = "clustering"
        eps = 0.1
        min_cluster_size = 2
        top_per_cluster = 3
        "#,
    )
    .unwrap();
    let retrieval = file.pipeline.retrieval;
    assert_eq!(retrieval.max_k, 30);
    assert_eq!(
        retrieval.rule_selection,
        SelectionConfig::AdaptiveK {
            alpha: Some(1.5),
            min_score: Some(0.5)
        }
    );
    assert_eq!(
        retrieval.memory_selection,
        SelectionConfig::Clustering {
            eps: Some(0.1),
            min_cluster_size: Some(2),
            top_per_cluster: Some(3),
            min_score: None,
        }
    );
    retrieval
        .memory_selection
        .validate("pipeline.retrieval.memory_selection")
        .unwrap();
    assert_eq!(
        retrieval.memory_selection.build().unwrap().name(),
        "clustering"
    );
}

#[test]
fn config_accepts_integers_for_float_parameters() {
    let config: SelectionConfig = toml::from_str("strategy = \"adaptive_k\"\nalpha = 2").unwrap();
    assert_eq!(
        config,
        SelectionConfig::AdaptiveK {
            alpha: Some(2.0),
            min_score: None
        }
    );
}

#[test]
fn config_rejects_unknown_keys_and_strategies() {
    let unknown_key = toml::from_str::<SelectionConfig>("strategy = \"elbow\"\nalpha = 1.0");
    let message = unknown_key.unwrap_err().to_string();
    assert!(message.contains("alpha"), "{message}");
    let unknown_strategy = toml::from_str::<SelectionConfig>("strategy = \"top_p\"");
    let message = unknown_strategy.unwrap_err().to_string();
    assert!(message.contains("top_p"), "{message}");
    assert!(toml::from_str::<SelectionConfig>("alpha = 1.0").is_err());
}

#[test]
fn config_serialises_only_set_parameters() {
    let config = SelectionConfig::FixedK {
        k: Some(3),
        min_score: None,
    };
    assert_eq!(
        serde_json::to_value(&config).unwrap(),
        json!({"strategy": "fixed_k", "k": 3})
    );
    let back: SelectionConfig =
        serde_json::from_value(json!({"strategy": "fixed_k", "k": 3})).unwrap();
    assert_eq!(back, config);
}

/// Checks that `config` fails validation on `key` under the prefix `section`.
#[track_caller]
fn check_invalid(config: Value, key: &str) {
    let config: SelectionConfig = serde_json::from_value(config).unwrap();
    let err = config.validate("section").unwrap_err();
    match err.kind() {
        ErrorKind::InvalidConfig { key: actual, .. } => {
            assert_eq!(actual, &format!("section.{key}"), "{err}")
        }
        other => panic!("expected InvalidConfig for {key}, got {other:?}"),
    }
    assert!(config.build().is_err());
}

#[test]
fn config_validation_names_the_key() {
    check_invalid(
        json!({"strategy": "elbow", "drop_threshold": 1.5}),
        "drop_threshold",
    );
    check_invalid(
        json!({"strategy": "elbow", "drop_threshold": -0.1}),
        "drop_threshold",
    );
    check_invalid(json!({"strategy": "elbow", "min_score": 1.1}), "min_score");
    check_invalid(json!({"strategy": "adaptive_k", "alpha": 0.4}), "alpha");
    check_invalid(json!({"strategy": "adaptive_k", "alpha": 5.5}), "alpha");
    check_invalid(
        json!({"strategy": "adaptive_k", "min_score": -0.1}),
        "min_score",
    );
    check_invalid(
        json!({"strategy": "entropy", "low_entropy_k": 0}),
        "low_entropy_k",
    );
    check_invalid(
        json!({"strategy": "entropy", "medium_entropy_k": 0}),
        "medium_entropy_k",
    );
    check_invalid(
        json!({"strategy": "entropy", "high_entropy_k": 0}),
        "high_entropy_k",
    );
    check_invalid(
        json!({"strategy": "entropy", "min_score": 2.0}),
        "min_score",
    );
    check_invalid(json!({"strategy": "clustering", "eps": 0.0}), "eps");
    check_invalid(
        json!({"strategy": "clustering", "min_cluster_size": 0}),
        "min_cluster_size",
    );
    check_invalid(
        json!({"strategy": "clustering", "top_per_cluster": 0}),
        "top_per_cluster",
    );
    check_invalid(
        json!({"strategy": "clustering", "min_score": 1.5}),
        "min_score",
    );
    check_invalid(json!({"strategy": "fixed_k", "k": 0}), "k");
    check_invalid(
        json!({"strategy": "fixed_k", "min_score": -1.0}),
        "min_score",
    );
    check_invalid(json!({"strategy": "autocut", "jumps": 0}), "jumps");
    check_invalid(
        json!({"strategy": "autocut", "tolerance": 2.0}),
        "tolerance",
    );

    // The message says what is wrong; the bare key is used without a prefix.
    let config = SelectionConfig::AdaptiveK {
        alpha: Some(f64::NAN),
        min_score: None,
    };
    let err = config.validate("").unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid configuration `alpha`: must be between 0.5 and 5, got NaN"
    );
}

#[test]
fn setters_validate() {
    let err = AdaptiveKSelection::default().with_alpha(10.0).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::InvalidConfig { key, .. } if key == "alpha"));
    assert!(
        ClusteringSelection::default()
            .with_eps(f64::INFINITY)
            .is_err()
    );
    assert!(
        FixedKSelection::default()
            .with_min_score(Some(f64::NAN))
            .is_err()
    );
    let fixed = FixedKSelection::default().with_min_score(None).unwrap();
    assert_eq!(fixed.min_score(), None);
}

#[test]
fn defaults_are_the_seed_constructor_defaults() {
    let elbow = ElbowSelection::default();
    assert_eq!((elbow.drop_threshold(), elbow.min_score()), (0.15, 0.5));
    let adaptive = AdaptiveKSelection::default();
    assert_eq!((adaptive.alpha(), adaptive.min_score()), (1.5, 0.4));
    let entropy = EntropySelection::default();
    assert_eq!(
        (
            entropy.low_entropy_k(),
            entropy.medium_entropy_k(),
            entropy.high_entropy_k(),
            entropy.min_score()
        ),
        (3, 5, 10, 0.3)
    );
    let clustering = ClusteringSelection::default();
    assert_eq!(
        (
            clustering.eps(),
            clustering.min_cluster_size(),
            clustering.top_per_cluster(),
            clustering.min_score()
        ),
        (0.1, 2, 3, 0.4)
    );
    let fixed = FixedKSelection::default();
    assert_eq!((fixed.k(), fixed.min_score()), (5, None));
    let autocut = AutocutSelection::default();
    assert_eq!((autocut.jumps(), autocut.tolerance()), (1, 1e-9));
}

#[test]
fn from_params_builds_every_strategy() {
    for name in SelectionConfig::STRATEGY_NAMES {
        let config = SelectionConfig::from_params(name, &Map::new()).unwrap();
        assert_eq!(config.strategy_name(), *name);
        assert_eq!(config.build().unwrap().name(), *name);
    }
}

/// Checks that `from_params` rejects `params` for `name` with `InvalidConfig` on `key`.
#[track_caller]
fn check_bad_params(name: &str, params: Value, key: &str) {
    let params = params.as_object().unwrap();
    let err = SelectionConfig::from_params(name, params).unwrap_err();
    match err.kind() {
        ErrorKind::InvalidConfig { key: actual, .. } => assert_eq!(actual, key, "{err}"),
        other => panic!("expected InvalidConfig for {key}, got {other:?}"),
    }
}

#[test]
fn from_params() {
    let params = json!({"k": "3", "min_score": null});
    let config = SelectionConfig::from_params("fixed_k", params.as_object().unwrap()).unwrap();
    assert_eq!(
        config,
        SelectionConfig::FixedK {
            k: Some(3),
            min_score: None
        }
    );
    let params =
        json!({"eps": 0.05, "min_cluster_size": 3, "top_per_cluster": "2", "min_score": "0.2"});
    let config = SelectionConfig::from_params("clustering", params.as_object().unwrap()).unwrap();
    assert_eq!(
        config,
        SelectionConfig::Clustering {
            eps: Some(0.05),
            min_cluster_size: Some(3),
            top_per_cluster: Some(2),
            min_score: Some(0.2),
        }
    );

    let err = SelectionConfig::from_params("top_p", &Map::new()).unwrap_err();
    assert_eq!(
        err.kind(),
        &ErrorKind::UnknownName {
            what: "strategy",
            name: "top_p".to_string()
        }
    );
    check_bad_params("elbow", json!({"alpha": 1.0}), "alpha");
    check_bad_params("adaptive_k", json!({"alpha": "fast"}), "alpha");
    check_bad_params("adaptive_k", json!({"alpha": 9}), "alpha");
    check_bad_params("fixed_k", json!({"k": -1}), "k");
    check_bad_params("fixed_k", json!({"k": 2.5}), "k");
    check_bad_params("fixed_k", json!({"k": true}), "k");
    check_bad_params("autocut", json!({"jumps": 0}), "jumps");
    check_bad_params("clustering", json!({"eps": "inf"}), "eps");
    check_bad_params("entropy", json!({"strategy": "entropy"}), "strategy");
}
