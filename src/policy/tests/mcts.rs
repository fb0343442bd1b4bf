//! Tests of `MctsPolicy`: the seed's scenario, UCB1 values, ranking and keys.

use super::*;

fn policy() -> MctsPolicy {
    MctsPolicy::builder().build().unwrap()
}

/// Selects, checks the choice, then feeds back `reward`.
#[track_caller]
fn check_step(policy: &mut MctsPolicy, candidates: &[Candidate], expected_key: &str, reward: f64) {
    let mut rng = seeded_rng(0);
    let mut ctx = PolicyContext::new(&mut rng);
    let selected = policy.select(candidates, &mut ctx).unwrap();
    assert_eq!(selected.key(), expected_key);
    policy.update(selected.key(), reward).unwrap();
}

#[track_caller]
fn assert_close(got: f64, want: f64) {
    assert!((got - want).abs() < 1e-4, "{got} != {want}");
}

#[test]
fn seed_scenario_tries_every_action_before_exploiting() {
    let candidates = approaches([0.9, 0.6, 0.1]);
    let mut policy = policy();

    // Call 1: every UCB1 is +inf, the first candidate wins.
    check_step(&mut policy, &candidates, "approach_a", 0.8);
    // Call 2: approach_b is unvisited, +inf.
    assert_close(policy.ucb1("approach_a"), 0.8 + 1.41 * 2.0_f64.ln().sqrt());
    check_step(&mut policy, &candidates, "approach_b", 0.3);
    // Call 3: approach_c is still unvisited, so +inf beats approach_a's 0.8 average.
    assert_eq!(policy.ucb1("approach_c"), f64::INFINITY);
    check_step(&mut policy, &candidates, "approach_c", 0.1);

    // Call 4, exploitation: sqrt(ln 4) * 1.41 = 1.6602 for every action.
    assert_close(policy.ucb1("approach_a"), 2.4602);
    assert_close(policy.ucb1("approach_b"), 1.9602);
    assert_close(policy.ucb1("approach_c"), 1.7602);
    check_step(&mut policy, &candidates, "approach_a", 0.8);

    // Call 5: approach_a's exploration term shrank with two visits, and approach_b's
    // grew with ln 5, so exploration wins: 0.3 + 1.7888 > 0.8 + 1.2648.
    assert_close(policy.ucb1("approach_a"), 2.0648);
    assert_close(policy.ucb1("approach_b"), 2.0888);
    check_step(&mut policy, &candidates, "approach_b", 0.3);

    assert_eq!(
        (
            policy.visits("approach_a"),
            policy.visits("approach_b"),
            policy.visits("approach_c")
        ),
        (2, 2, 1)
    );
}

#[test]
fn rank_orders_by_average_reward_with_half_for_unvisited() {
    let candidates = vec![
        candidate("approach_a", "code", 0.1),
        candidate("approach_b", "code", 0.2),
        candidate("approach_c", "code", 0.3),
        candidate("approach_d", "code", 0.4),
    ];
    let mut policy = policy();
    policy.update("approach_a", 0.2).unwrap();
    policy.update("approach_b", 1.0).unwrap();
    policy.update("approach_b", 0.4).unwrap();
    let mut rng = seeded_rng(0);
    let ctx = PolicyContext::new(&mut rng);
    let ranked = policy.rank(&candidates, &ctx).unwrap();
    assert_eq!(
        rounded(&ranked, 2),
        expected(&[
            ("approach_b", "0.70"),
            ("approach_c", "0.50"),
            ("approach_d", "0.50"),
            ("approach_a", "0.20"),
        ])
    );
    assert_eq!(policy.average_value("approach_b"), Some(0.7));
    assert_eq!(policy.average_value("approach_c"), None);
}

#[test]
fn statistics_are_keyed_by_action_type_without_ids() {
    let candidates = vec![
        Candidate::new("code"),
        Candidate::new("code"),
        Candidate::new("final"),
    ];
    let mut policy = policy();
    check_step(&mut policy, &candidates, "code", 0.9);
    // Both "code" candidates share the visited key, so "final" is next.
    check_step(&mut policy, &candidates, "final", 0.1);
    assert_eq!(policy.visits("code"), 1);
}

#[test]
fn zero_exploration_is_pure_exploitation_and_reset_forgets() {
    let candidates = approaches([0.5, 0.5, 0.5]);
    let mut policy = MctsPolicy::builder()
        .exploration_constant(0.0)
        .build()
        .unwrap();
    check_step(&mut policy, &candidates, "approach_a", 0.2);
    check_step(&mut policy, &candidates, "approach_b", 0.9);
    check_step(&mut policy, &candidates, "approach_c", 0.5);
    check_step(&mut policy, &candidates, "approach_b", 0.9);
    check_step(&mut policy, &candidates, "approach_b", 0.9);
    policy.reset();
    assert_eq!(policy.visits("approach_b"), 0);
    check_step(&mut policy, &candidates, "approach_a", 0.2);
}

#[test]
fn errors() {
    let mut policy = policy();
    let mut rng = seeded_rng(0);
    let mut ctx = PolicyContext::new(&mut rng);
    assert_kind(policy.select(&[], &mut ctx), ErrorKind::EmptyCandidates);
    assert_kind(policy.rank(&[], &ctx), ErrorKind::EmptyCandidates);
    assert_kind(
        policy.update("approach_a", f64::NAN),
        ErrorKind::NonFiniteScore {
            context: "reward for action `approach_a`".to_owned(),
        },
    );
    policy.update("approach_a", f64::MAX).unwrap();
    assert_kind(
        policy.update("approach_a", f64::MAX),
        ErrorKind::NonFiniteScore {
            context: "cumulative reward for action `approach_a`".to_owned(),
        },
    );
    assert_eq!(policy.visits("approach_a"), 1);
    let candidates = approaches([0.5, f64::NAN, 0.5]);
    assert_kind(
        policy.select(&candidates, &mut ctx),
        ErrorKind::NonFiniteScore {
            context: "confidence of candidate `approach_b`".to_owned(),
        },
    );
}

#[test]
fn invalid_configuration() {
    let cases = [
        (
            MctsPolicy::builder().exploration_constant(-1.0),
            "exploration_constant",
        ),
        (
            MctsPolicy::builder().exploration_constant(f64::NAN),
            "exploration_constant",
        ),
        (MctsPolicy::builder().num_simulations(0), "num_simulations"),
        (
            MctsPolicy::builder().simulation_depth(0),
            "simulation_depth",
        ),
    ];
    for (builder, expected_key) in cases {
        let err = builder.build().unwrap_err();
        assert_eq!(invalid_config_key(&err), Some(expected_key), "{err:?}");
    }
    let defaults = policy();
    assert_eq!(
        (
            defaults.exploration_constant(),
            defaults.num_simulations(),
            defaults.simulation_depth()
        ),
        (1.41, 10, 3)
    );
}
