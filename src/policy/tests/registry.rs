//! Tests of `PolicyRegistry`: built-ins by name, configuration errors, custom policies.

use super::*;

/// Creates `name` from `config` and returns its ranking of `candidates` at step 0.
#[track_caller]
fn check_rank(
    name: &str,
    config_value: Value,
    candidates: &[Candidate],
    expected_ranking: &[(&str, &str)],
) {
    let registry = PolicyRegistry::new();
    let policy = registry.get_action(name, &config(config_value)).unwrap();
    assert_eq!(policy.name(), name);
    let mut rng = seeded_rng(0);
    let ctx = PolicyContext::new(&mut rng);
    let ranked = policy.rank(candidates, &ctx).unwrap();
    assert_eq!(rounded(&ranked, 2), expected(expected_ranking));
}

#[track_caller]
fn check_invalid_config(
    name: &str,
    config_value: Value,
    expected_key: &str,
    expected_message: &str,
) {
    let registry = PolicyRegistry::new();
    let err = registry
        .get_action(name, &config(config_value))
        .unwrap_err();
    assert_eq!(
        err.kind(),
        &ErrorKind::InvalidConfig {
            key: expected_key.to_owned(),
            message: expected_message.to_owned(),
        }
    );
}

#[test]
fn built_ins_with_defaults_and_overrides() {
    let greedy = &[
        ("approach_b", "0.90"),
        ("approach_a", "0.70"),
        ("approach_c", "0.40"),
    ];
    check_rank("greedy", json!({}), &approaches([0.7, 0.9, 0.4]), greedy);

    let sampling_default = &[
        ("approach_a", "0.56"),
        ("approach_b", "0.38"),
        ("approach_c", "0.06"),
    ];
    check_rank(
        "sampling",
        json!({}),
        &approaches([0.9, 0.6, 0.1]),
        sampling_default,
    );
    let sampling_cold = &[
        ("approach_a", "0.97"),
        ("approach_b", "0.02"),
        ("approach_c", "0.01"),
    ];
    check_rank(
        "sampling",
        json!({"temperature": 0.1}),
        &approaches([0.9, 0.6, 0.1]),
        sampling_cold,
    );

    let beam_default = &[
        ("approach_a", "0.89"),
        ("FINAL", "0.78"),
        ("approach_b", "0.64"),
    ];
    check_rank("beam_search", json!({}), &beam_example(), beam_default);
    let beam_075 = &[
        ("approach_a", "0.92"),
        ("FINAL", "0.80"),
        ("approach_b", "0.66"),
    ];
    check_rank(
        "beam_search",
        json!({"length_penalty": 0.75}),
        &beam_example(),
        beam_075,
    );
    let no_diversity = &[
        ("approach_a", "0.89"),
        ("approach_b", "0.84"),
        ("FINAL", "0.78"),
    ];
    check_rank(
        "beam_search",
        json!({"diversity_penalty": 0, "beam_width": 5}),
        &beam_example(),
        no_diversity,
    );

    let mcts = &[
        ("approach_a", "0.50"),
        ("approach_b", "0.50"),
        ("approach_c", "0.50"),
    ];
    check_rank(
        "mcts",
        json!({"exploration_constant": 2.0, "num_simulations": 20, "simulation_depth": 5}),
        &approaches([0.1, 0.2, 0.3]),
        mcts,
    );
}

#[test]
fn boxed_mcts_learns_through_the_trait() {
    let registry = PolicyRegistry::new();
    let mut policy = registry.get_action("mcts", &Map::new()).unwrap();
    let candidates = approaches([0.1, 0.2, 0.3]);
    let mut rng = seeded_rng(0);
    let mut ctx = PolicyContext::new(&mut rng);
    for (expected_key, reward) in [
        ("approach_a", 0.8),
        ("approach_b", 0.3),
        ("approach_c", 0.1),
    ] {
        let selected = policy.select(&candidates, &mut ctx).unwrap();
        assert_eq!(selected.key(), expected_key);
        policy.update(selected.key(), reward).unwrap();
    }
    assert_eq!(
        policy.select(&candidates, &mut ctx).unwrap().key(),
        "approach_a"
    );
    policy.reset();
    policy.update("approach_c", 1.0).unwrap();
    assert_eq!(
        policy.select(&candidates, &mut ctx).unwrap().key(),
        "approach_a"
    );
}

#[test]
fn invalid_configurations_name_the_key() {
    check_invalid_config(
        "greedy",
        json!({"temperature": 1.0}),
        "temperature",
        "policy `greedy` takes no configuration",
    );
    check_invalid_config(
        "sampling",
        json!({"temprature": 1.0}),
        "temprature",
        "unknown key for policy `sampling` (expected one of: temperature, min_probability)",
    );
    check_invalid_config(
        "sampling",
        json!({"temperature": "hot"}),
        "temperature",
        "expected a number, got \"hot\"",
    );
    check_invalid_config(
        "sampling",
        json!({"temperature": 0}),
        "temperature",
        "must be a finite number greater than 0, got 0",
    );
    check_invalid_config(
        "beam_search",
        json!({"beam_width": 2.5}),
        "beam_width",
        "expected a non-negative integer, got 2.5",
    );
    check_invalid_config(
        "beam_search",
        json!({"beam_width": -1}),
        "beam_width",
        "expected a non-negative integer, got -1",
    );
    check_invalid_config(
        "beam_search",
        json!({"beam_width": 0}),
        "beam_width",
        "must be at least 1, got 0",
    );
    check_invalid_config(
        "mcts",
        json!({"exploration_constant": null}),
        "exploration_constant",
        "expected a number, got null",
    );
    check_invalid_config(
        "mcts",
        json!({"rollouts": 3}),
        "rollouts",
        concat!(
            "unknown key for policy `mcts` ",
            "(expected one of: exploration_constant, num_simulations, simulation_depth)"
        ),
    );
}

#[test]
fn unknown_names_are_errors() {
    let registry = PolicyRegistry::new();
    assert_kind(
        registry.get_action("epsilon_greedy", &Map::new()),
        ErrorKind::UnknownName {
            what: "policy",
            name: "epsilon_greedy".to_owned(),
        },
    );
}

#[test]
fn custom_policies_receive_their_config() {
    let mut registry = PolicyRegistry::new();
    registry
        .register("always_last", |config: &Map<String, Value>| {
            if let Some(key) = config.keys().find(|key| *key != "note") {
                return Err(ErrorKind::InvalidConfig {
                    key: key.clone(),
                    message: "unknown key".to_owned(),
                }
                .into());
            }
            Ok(Box::new(AlwaysLast) as Box<dyn ActionSelectionPolicy>)
        })
        .unwrap();
    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        ["always_last", "beam_search", "greedy", "mcts", "sampling"]
    );
    assert!(registry.contains("always_last"));

    let mut policy = registry
        .get_action("always_last", &config(json!({"note": "hi"})))
        .unwrap();
    let mut rng = seeded_rng(0);
    let mut ctx = PolicyContext::new(&mut rng);
    let candidates = approaches([0.9, 0.6, 0.1]);
    assert_eq!(
        policy.select(&candidates, &mut ctx).unwrap().key(),
        "approach_c"
    );
    assert!(
        registry
            .get_action("always_last", &config(json!({"x": 1})))
            .is_err()
    );
}

struct AlwaysLast;

impl ActionSelectionPolicy for AlwaysLast {
    fn name(&self) -> &str {
        "always_last"
    }

    fn select<'c>(
        &mut self,
        candidates: &'c [Candidate],
        _ctx: &mut PolicyContext<'_>,
    ) -> crate::Result<&'c Candidate> {
        candidates
            .last()
            .ok_or_else(|| ErrorKind::EmptyCandidates.into())
    }
}

#[test]
fn registration_rejects_taken_and_empty_names() {
    let mut registry = PolicyRegistry::new();
    let factory =
        |_: &Map<String, Value>| Ok(Box::new(AlwaysLast) as Box<dyn ActionSelectionPolicy>);
    assert_kind(
        registry.register("greedy", factory),
        ErrorKind::InvalidInput {
            message: "policy `greedy` is already registered".to_owned(),
        },
    );
    registry.register("mine", factory).unwrap();
    assert!(registry.register("mine", factory).is_err());
    assert_kind(
        registry.register("", factory),
        ErrorKind::InvalidInput {
            message: "policy name must not be empty".to_owned(),
        },
    );
}

#[test]
fn policies_and_registry_are_send() {
    fn assert_send<T: Send>() {}
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send::<Box<dyn ActionSelectionPolicy>>();
    assert_send_sync::<PolicyRegistry>();
    assert_send_sync::<GreedyPolicy>();
    assert_send_sync::<SamplingPolicy>();
    assert_send_sync::<BeamSearchPolicy>();
    assert_send_sync::<MctsPolicy>();
}
