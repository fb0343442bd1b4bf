//! Tests of `BeamSearchPolicy`: the worked example with both length penalties, diversity, beams.

use super::*;

#[track_caller]
fn check(
    length_penalty: f64,
    step: usize,
    candidates: &[Candidate],
    expected_ranking: &[(&str, &str)],
) {
    let policy = BeamSearchPolicy::builder()
        .length_penalty(length_penalty)
        .build()
        .unwrap();
    let mut rng = seeded_rng(0);
    let ctx = PolicyContext::new(&mut rng).with_step(step);
    let ranked = policy.rank(candidates, &ctx).unwrap();
    assert_eq!(rounded(&ranked, 2), expected(expected_ranking));
}

#[test]
fn worked_example_with_the_default_length_penalty() {
    // length_factor = (5 / 6)^0.6 = 0.8963.
    check(
        0.6,
        0,
        &beam_example(),
        &[
            ("approach_a", "0.89"),
            ("FINAL", "0.78"),
            ("approach_b", "0.64"),
        ],
    );
}

#[test]
fn worked_example_with_length_penalty_0_75() {
    // length_factor = (5 / 6)^0.75 = 0.8722, the seed's "~0.87".
    check(
        0.75,
        0,
        &beam_example(),
        &[
            ("approach_a", "0.92"),
            ("FINAL", "0.80"),
            ("approach_b", "0.66"),
        ],
    );
}

#[test]
fn later_steps_score_lower() {
    // Step 1: the factor is 1, the scores are the base scores minus diversity.
    check(
        0.6,
        1,
        &beam_example(),
        &[
            ("approach_a", "0.80"),
            ("FINAL", "0.70"),
            ("approach_b", "0.55"),
        ],
    );
    // Step 7: factor 2^0.6 = 1.5157.
    check(
        0.6,
        7,
        &beam_example(),
        &[
            ("approach_a", "0.53"),
            ("FINAL", "0.46"),
            ("approach_b", "0.29"),
        ],
    );
}

#[test]
fn diversity_penalty_is_not_cumulative() {
    let candidates = vec![
        candidate("a1", "code", 0.9),
        candidate("f1", "final", 0.5),
        candidate("a2", "code", 0.9),
        candidate("a3", "code", 0.9),
        candidate("f2", "final", 0.5),
    ];
    check(
        0.0,
        0,
        &candidates,
        &[
            ("a1", "0.90"),
            ("a2", "0.70"),
            ("a3", "0.70"),
            ("f1", "0.50"),
            ("f2", "0.30"),
        ],
    );
}

#[test]
fn select_keeps_the_best_beam_width_and_reset_clears_them() {
    let mut policy = BeamSearchPolicy::builder().beam_width(2).build().unwrap();
    let mut rng = seeded_rng(0);
    let mut ctx = PolicyContext::new(&mut rng);
    assert!(policy.beams().is_empty());

    let candidates = beam_example();
    assert_eq!(
        policy.select(&candidates, &mut ctx).unwrap().key(),
        "approach_a"
    );
    let beams: Vec<(&str, String)> = policy
        .beams()
        .iter()
        .map(|(c, score)| (c.key(), format!("{score:.2}")))
        .collect();
    assert_eq!(
        beams,
        [
            ("approach_a", "0.89".to_owned()),
            ("FINAL", "0.78".to_owned())
        ]
    );

    // A failed call leaves the beams alone; the next call replaces them.
    assert_kind(policy.select(&[], &mut ctx), ErrorKind::EmptyCandidates);
    assert_eq!(policy.beams().len(), 2);
    ctx.set_step(1);
    let single = [candidate("only", "final", 0.3)];
    assert_eq!(policy.select(&single, &mut ctx).unwrap().key(), "only");
    assert_eq!(policy.beams(), &[(single[0].clone(), 0.3)]);

    policy.reset();
    assert!(policy.beams().is_empty());
}

#[test]
fn select_picks_the_first_of_tied_candidates() {
    let candidates = vec![candidate("x", "code", 0.5), candidate("y", "final", 0.5)];
    let mut policy = BeamSearchPolicy::builder().build().unwrap();
    let mut rng = seeded_rng(0);
    let mut ctx = PolicyContext::new(&mut rng);
    assert_eq!(policy.select(&candidates, &mut ctx).unwrap().key(), "x");
}

#[test]
fn invalid_configuration() {
    let cases = [
        (BeamSearchPolicy::builder().beam_width(0), "beam_width"),
        (
            BeamSearchPolicy::builder().length_penalty(-0.1),
            "length_penalty",
        ),
        (
            BeamSearchPolicy::builder().length_penalty(f64::NAN),
            "length_penalty",
        ),
        (
            BeamSearchPolicy::builder().diversity_penalty(-1.0),
            "diversity_penalty",
        ),
        (
            BeamSearchPolicy::builder().diversity_penalty(f64::INFINITY),
            "diversity_penalty",
        ),
    ];
    for (builder, expected_key) in cases {
        let err = builder.build().unwrap_err();
        assert_eq!(invalid_config_key(&err), Some(expected_key), "{err:?}");
    }
    let defaults = BeamSearchPolicy::builder().build().unwrap();
    assert_eq!(
        (
            defaults.beam_width(),
            defaults.length_penalty(),
            defaults.diversity_penalty()
        ),
        (3, 0.6, 0.2)
    );
}

#[test]
fn non_finite_scores_are_errors() {
    let mut policy = BeamSearchPolicy::builder().build().unwrap();
    let mut rng = seeded_rng(0);
    let mut ctx = PolicyContext::new(&mut rng);
    let candidates = vec![Candidate::new("code").with_score(f64::NEG_INFINITY)];
    assert_kind(
        policy.select(&candidates, &mut ctx),
        ErrorKind::NonFiniteScore {
            context: "score of candidate `code`".to_owned(),
        },
    );
}
