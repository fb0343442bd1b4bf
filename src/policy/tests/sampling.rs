//! Tests of `SamplingPolicy`: the probability formula, and frequencies over 10,000 seeded draws.

use super::*;

/// The seed's formula applied literally, as an oracle for the log-space computation.
fn naive_probabilities(scores: &[f64], temperature: f64, min_probability: f64) -> Vec<f64> {
    let weights: Vec<f64> = scores
        .iter()
        .map(|score| score.max(0.01).powf(1.0 / temperature))
        .collect();
    let total: f64 = weights.iter().sum();
    let floored: Vec<f64> = weights
        .iter()
        .map(|weight| (weight / total).max(min_probability))
        .collect();
    let total: f64 = floored.iter().sum();
    floored.iter().map(|p| p / total).collect()
}

fn policy(temperature: f64) -> SamplingPolicy {
    SamplingPolicy::builder()
        .temperature(temperature)
        .build()
        .unwrap()
}

#[track_caller]
fn check_probabilities(temperature: f64, confidences: [f64; 3], expected: [f64; 3]) {
    let candidates = approaches(confidences);
    let probabilities = policy(temperature).probabilities(&candidates).unwrap();
    for (got, want) in probabilities.iter().zip(expected) {
        assert!(
            (got - want).abs() < 1e-4,
            "{probabilities:?} != {expected:?}"
        );
    }
    let oracle = naive_probabilities(&confidences, temperature, 0.01);
    for (got, want) in probabilities.iter().zip(&oracle) {
        assert!(
            (got - want).abs() < 1e-12,
            "{probabilities:?} != {oracle:?}"
        );
    }
}

#[test]
fn probabilities_follow_the_seed_formula() {
    // Temperature 1: proportional to the scores, 0.9 / 1.6 = 0.5625 and so on.
    check_probabilities(1.0, [0.9, 0.6, 0.1], [0.5625, 0.375, 0.0625]);
    // Temperature 0.1: 0.9^10 dominates; approach_c is lifted to the 0.01 floor and
    // everything is renormalised by 1.01.
    check_probabilities(0.1, [0.9, 0.6, 0.1], [0.973_195, 0.016_874, 0.009_901]);
    // Temperature 5: fifth roots, close to uniform.
    check_probabilities(5.0, [0.9, 0.6, 0.1], [0.389_608, 0.359_264, 0.251_128]);
    // Scores below 0.01 (even negative ones) count as 0.01.
    check_probabilities(1.0, [0.0, -3.0, 0.01], [1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0]);
}

#[test]
fn extreme_temperatures_stay_finite() {
    let candidates = approaches([0.011, 0.01, 0.01]);
    let probabilities = policy(1e-6).probabilities(&candidates).unwrap();
    let floor = 0.01 / 1.02;
    assert_eq!(probabilities.len(), 3);
    assert!((probabilities[0] - 1.0 / 1.02).abs() < 1e-12);
    assert!((probabilities[1] - floor).abs() < 1e-12);
    assert!((probabilities[2] - floor).abs() < 1e-12);
    let probabilities = policy(1e12).probabilities(&candidates).unwrap();
    assert!(probabilities.iter().all(|p| (p - 1.0 / 3.0).abs() < 1e-9));
}

/// Draws `n_draws` times from one seeded RNG and returns each candidate's frequency.
fn frequencies(policy: &mut SamplingPolicy, candidates: &[Candidate], n_draws: usize) -> Vec<f64> {
    let mut rng = seeded_rng(2024);
    let mut ctx = PolicyContext::new(&mut rng);
    let mut counts = vec![0_usize; candidates.len()];
    for _ in 0..n_draws {
        let selected = policy.select(candidates, &mut ctx).unwrap();
        let idx = candidates
            .iter()
            .position(|c| c.key() == selected.key())
            .unwrap();
        counts[idx] += 1;
    }
    counts
        .iter()
        .map(|count| *count as f64 / n_draws as f64)
        .collect()
}

/// With 10,000 draws the standard deviation of a frequency is at most 0.005, so 0.02 is
/// four standard deviations.
const TOLERANCE: f64 = 0.02;

#[track_caller]
fn check_frequencies(temperature: f64) -> Vec<f64> {
    let candidates = approaches([0.9, 0.6, 0.1]);
    let mut policy = policy(temperature);
    let expected = policy.probabilities(&candidates).unwrap();
    let observed = frequencies(&mut policy, &candidates, 10_000);
    for (got, want) in observed.iter().zip(&expected) {
        assert!(
            (got - want).abs() < TOLERANCE,
            "temperature {temperature}: observed {observed:?}, expected {expected:?}"
        );
    }
    observed
}

#[test]
fn frequencies_match_probabilities_over_10_000_draws() {
    let observed = check_frequencies(1.0);
    assert!(observed[0] > observed[1] && observed[1] > observed[2]);

    // Near-greedy: the best candidate nearly always.
    let observed = check_frequencies(0.1);
    assert!(observed[0] > 0.95, "{observed:?}");

    // Nearly uniform: every candidate within 0.1 of a third.
    let observed = check_frequencies(5.0);
    assert!(
        observed.iter().all(|f| (f - 1.0 / 3.0).abs() < 0.1),
        "{observed:?}"
    );
}

#[test]
fn same_seed_same_choices() {
    let candidates = approaches([0.9, 0.6, 0.1]);
    let choices = |seed: u64| -> Vec<String> {
        let mut rng = seeded_rng(seed);
        let mut ctx = PolicyContext::new(&mut rng);
        let mut policy = policy(1.0);
        (0..50)
            .map(|_| {
                policy
                    .select(&candidates, &mut ctx)
                    .unwrap()
                    .key()
                    .to_owned()
            })
            .collect()
    };
    assert_eq!(choices(7), choices(7));
    assert_ne!(choices(7), choices(8));
}

#[test]
fn rank_returns_sorted_probabilities() {
    let candidates = approaches([0.1, 0.9, 0.6]);
    let mut rng = seeded_rng(0);
    let ctx = PolicyContext::new(&mut rng);
    let ranked = policy(1.0).rank(&candidates, &ctx).unwrap();
    assert_eq!(
        rounded(&ranked, 4),
        expected(&[
            ("approach_b", "0.5625"),
            ("approach_c", "0.3750"),
            ("approach_a", "0.0625")
        ])
    );
}

#[test]
fn invalid_configuration() {
    for temperature in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let err = SamplingPolicy::builder()
            .temperature(temperature)
            .build()
            .unwrap_err();
        assert_eq!(invalid_config_key(&err), Some("temperature"), "{err:?}");
    }
    for min_probability in [-0.1, 1.5, f64::NAN] {
        let err = SamplingPolicy::builder()
            .min_probability(min_probability)
            .build()
            .unwrap_err();
        assert_eq!(invalid_config_key(&err), Some("min_probability"), "{err:?}");
    }
    let defaults = SamplingPolicy::builder().build().unwrap();
    assert_eq!(
        (defaults.temperature(), defaults.min_probability()),
        (1.0, 0.01)
    );
}

#[test]
fn errors() {
    let mut rng = seeded_rng(0);
    let mut ctx = PolicyContext::new(&mut rng);
    let mut policy = policy(1.0);
    assert_kind(policy.select(&[], &mut ctx), ErrorKind::EmptyCandidates);
    assert_kind(policy.rank(&[], &ctx), ErrorKind::EmptyCandidates);
    let candidates = approaches([0.7, 0.2, f64::INFINITY]);
    assert_kind(
        policy.select(&candidates, &mut ctx),
        ErrorKind::NonFiniteScore {
            context: "confidence of candidate `approach_c`".to_owned(),
        },
    );
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn probabilities_match_the_oracle(
            scores in proptest::collection::vec(-1.0..2.0_f64, 1..8),
            temperature in 0.2..5.0_f64,
            min_probability in 0.0..0.2_f64,
        ) {
            let candidates: Vec<Candidate> =
                scores.iter().map(|s| Candidate::new("a").with_score(*s)).collect();
            let policy = SamplingPolicy::builder()
                .temperature(temperature)
                .min_probability(min_probability)
                .build()
                .unwrap();
            let probabilities = policy.probabilities(&candidates).unwrap();
            let oracle = naive_probabilities(&scores, temperature, min_probability);
            for (got, want) in probabilities.iter().zip(&oracle) {
                prop_assert!((got - want).abs() < 1e-9);
            }
            prop_assert!((probabilities.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        }

        #[test]
        fn select_returns_a_candidate_with_positive_probability(
            scores in proptest::collection::vec(0.0..1.0_f64, 1..8),
            seed in any::<u64>(),
        ) {
            let candidates: Vec<Candidate> = scores
                .iter()
                .enumerate()
                .map(|(idx, s)| Candidate::new("a").with_id(idx.to_string()).with_score(*s))
                .collect();
            let mut policy = SamplingPolicy::builder().build().unwrap();
            let mut rng = seeded_rng(seed);
            let mut ctx = PolicyContext::new(&mut rng);
            let selected = policy.select(&candidates, &mut ctx).unwrap();
            prop_assert!(candidates.contains(selected));
        }
    }
}
