use super::*;

/// Seed 000's example configuration, as it is printed there.
const SEED_000_TOML: &str = r#"
[pipeline.retrieval]
embedding_provider = "default"
max_k = 30                       # Retrieve up to 30 candidates
min_k = 1

# Selection strategy for rules
[pipeline.retrieval.rule_selection]
strategy = "adaptive_k"
alpha = 1.5
min_score = 0.5

# Selection strategy for scenarios
[pipeline.retrieval.scenario_selection]
strategy = "entropy"
low_entropy_k = 1                # Usually one scenario is active
medium_entropy_k = 2
high_entropy_k = 3
min_score = 0.6

# Selection strategy for memory
[pipeline.retrieval.memory_selection]
strategy = "clustering"
eps = 0.1
min_cluster_size = 2
top_per_cluster = 3
min_score = 0.4
"#;

/// A selection section that names another strategy replaces the default's whole;
/// one that names the same (or none) changes only what it sets.
#[test]
fn a_selection_section_replaces_or_amends_the_default() {
    let config = Config::from_toml(
        "[pipeline.retrieval.memory_selection]\nstrategy = \"fixed_k\"\nk = 3\n\n[pipeline.retrieval.scenario_selection]\nstrategy = \"elbow\"\n",
    )
    .unwrap();
    let retrieval = &config.pipeline.retrieval;
    assert_eq!(
        retrieval.memory_selection,
        SelectionConfig::FixedK {
            k: Some(3),
            min_score: None
        }
    );
    assert_eq!(
        retrieval.scenario_selection,
        SelectionConfig::Elbow {
            drop_threshold: None,
            min_score: None
        }
    );
    let config = Config::from_toml("[pipeline.retrieval.memory_selection]\nband = 0.3\n").unwrap();
    assert_eq!(
        config.pipeline.retrieval.memory_selection,
        SelectionConfig::Band {
            band: Some(0.3),
            max_hits: Some(6),
            min_score: None
        }
    );
}

#[test]
fn seed_000_example_configuration_loads_unchanged() {
    let config = Config::from_toml(SEED_000_TOML).unwrap();
    let retrieval = &config.pipeline.retrieval;
    assert_eq!(retrieval.embedding_provider.as_deref(), Some("default"));
    assert_eq!(
        retrieval.scenario_selection,
        SelectionConfig::Entropy {
            low_entropy_k: Some(1),
            medium_entropy_k: Some(2),
            high_entropy_k: Some(3),
            min_score: Some(0.6),
        }
    );
    assert_eq!(
        retrieval.selection(crate::Kind::Scenario),
        &retrieval.scenario_selection
    );
    // Sections it does not set keep their defaults.
    assert_eq!(
        retrieval.tool_selection,
        RetrievalConfig::default().tool_selection
    );
    let other = SEED_000_TOML.replace(
        r#"embedding_provider = "default""#,
        r#"embedding_provider = "openai""#,
    );
    let err = Config::from_toml(&other).unwrap_err();
    assert!(
        err.to_string()
            .contains("pipeline.retrieval.embedding_provider"),
        "{err}"
    );
}

#[test]
fn defaults_are_valid() {
    Config::default().validate().unwrap();
    assert_eq!(Config::from_toml("").unwrap(), Config::default());
}

#[test]
fn toml_overrides_defaults() {
    let config = Config::from_toml(
        "[pipeline.retrieval]\nmax_k = 10\n[fusion.rules]\nvector_weight = 1.0\n",
    )
    .unwrap();
    assert_eq!(config.pipeline.retrieval.max_k, 10);
    assert_eq!(config.pipeline.retrieval.min_k, 1);
    assert_eq!(config.fusion.rules.vector_weight, 1.0);
    assert_eq!(config.fusion.rules.text_weight, 0.2, "the rules default");
}

#[track_caller]
fn check_err(toml: &str, key: &str) {
    let err = Config::from_toml(toml).unwrap_err();
    match err.kind() {
        crate::ErrorKind::InvalidConfig { key: found, .. } => assert_eq!(found, key, "{err}"),
        other => panic!("unexpected error {other:?}"),
    }
}

#[test]
fn selection_sections() {
    let config = Config::from_toml(
        "[pipeline.retrieval.rule_selection]\nstrategy = \"elbow\"\ndrop_threshold = 0.3\n",
    )
    .unwrap();
    assert_eq!(
        config.pipeline.retrieval.rule_selection,
        SelectionConfig::Elbow {
            drop_threshold: Some(0.3),
            min_score: None
        }
    );
    // Leaving out `strategy` keeps the default strategy and sets its parameter.
    let config = Config::from_toml("[pipeline.retrieval.rule_selection]\nalpha = 2.0\n").unwrap();
    assert_eq!(
        config.pipeline.retrieval.rule_selection,
        SelectionConfig::AdaptiveK {
            alpha: Some(2.0),
            min_score: None
        }
    );
}

#[test]
fn errors_name_the_key() {
    check_err(
        "[pipeline.retrieval.rule_selection]\nalpha = 9.0\n",
        "pipeline.retrieval.rule_selection.alpha",
    );
    check_err(
        "[pipeline.retrieval.memory_selection]\nstrategy = \"top_p\"\n",
        "pipeline.retrieval.memory_selection.strategy",
    );
    check_err(
        "[pipeline.retrieval]\nmax_k = 0\n",
        "pipeline.retrieval.max_k",
    );
    check_err(
        "[pipeline.retrieval]\nmin_k = 50\n",
        "pipeline.retrieval.min_k",
    );
    check_err(
        "[scoring.chunks]\nrecency_decay_hours = -1\n",
        "scoring.chunks.recency_decay_hours",
    );
    check_err(
        "[fusion.rules]\ntext_weight = -0.1\n",
        "fusion.rules.text_weight",
    );
    check_err(
        "[vector]\nmax_connections = 1000\n",
        "vector.max_connections",
    );
    check_err(
        "[pipeline.retrieval]\nmax_k = \"ten\"\n",
        "pipeline.retrieval.max_k",
    );
    check_err(
        "[pipeline.retrieval]\nmax_kk = 3\n",
        "pipeline.retrieval.max_kk",
    );
    check_err(
        "[turn]\nscenario_confidence = 1.5\n",
        "turn.scenario_confidence",
    );
    check_err("[turn]\nswitch_margin = -0.1\n", "turn.switch_margin");
    check_err(
        "[turn]\norder = [\"rules\", \"rules\", \"tools\"]\n",
        "turn.order",
    );
}
