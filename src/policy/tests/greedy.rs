//! Tests of `GreedyPolicy`.

use super::*;

#[track_caller]
fn check(candidates: &[Candidate], expected_key: &str, expected_ranking: &[(&str, &str)]) {
    let mut rng = seeded_rng(0);
    let mut ctx = PolicyContext::new(&mut rng);
    let mut policy = GreedyPolicy::new();
    assert_eq!(
        policy.select(candidates, &mut ctx).unwrap().key(),
        expected_key
    );
    let ranked = policy.rank(candidates, &ctx).unwrap();
    assert_eq!(rounded(&ranked, 2), expected(expected_ranking));
}

#[test]
fn seed_example() {
    check(
        &approaches([0.7, 0.9, 0.4]),
        "approach_b",
        &[
            ("approach_b", "0.90"),
            ("approach_a", "0.70"),
            ("approach_c", "0.40"),
        ],
    );
}

#[test]
fn ties_go_to_the_first_candidate() {
    check(
        &approaches([0.6, 0.9, 0.9]),
        "approach_b",
        &[
            ("approach_b", "0.90"),
            ("approach_c", "0.90"),
            ("approach_a", "0.60"),
        ],
    );
}

#[test]
fn missing_scores_count_as_half() {
    let candidates = vec![
        Candidate::new("code").with_id("low").with_score(0.4),
        Candidate::new("code").with_id("unscored"),
        Candidate::new("final").with_id("scored").with_score(0.45),
    ];
    check(
        &candidates,
        "unscored",
        &[("unscored", "0.50"), ("scored", "0.45"), ("low", "0.40")],
    );
}

#[test]
fn errors() {
    let mut rng = seeded_rng(0);
    let mut ctx = PolicyContext::new(&mut rng);
    let mut policy = GreedyPolicy::new();
    assert_kind(policy.select(&[], &mut ctx), ErrorKind::EmptyCandidates);
    assert_kind(policy.rank(&[], &ctx), ErrorKind::EmptyCandidates);
    let candidates = approaches([0.7, f64::NAN, 0.4]);
    let non_finite = ErrorKind::NonFiniteScore {
        context: "confidence of candidate `approach_b`".to_owned(),
    };
    assert_kind(policy.select(&candidates, &mut ctx), non_finite.clone());
    assert_kind(policy.rank(&candidates, &ctx), non_finite);
}
