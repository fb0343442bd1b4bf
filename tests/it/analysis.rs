//! Query analysis and adaptive leg weights (seed 004) through the public API.

use ruchedb::analysis::{EntityKind, adapt, analyze};
use ruchedb::fusion::{FusionMethod, FusionSpec, FusionWeights, Normalization};
use ruchedb::{Config, EmbedderSpec, Engine, PerLeg, Rule, SearchRequest};

const BASE: FusionWeights = FusionWeights {
    vector_weight: 0.7,
    text_weight: 0.3,
};

#[track_caller]
fn assert_close(got: f64, expected: f64) {
    assert!(
        (got - expected).abs() < 1e-9,
        "got {got}, expected {expected}"
    );
}

#[test]
fn seed_examples() {
    // An exact name: an entity in a one-word query boosts the keyword leg.
    let name = analyze("EntityStore");
    assert_eq!(name.entities.len(), 1);
    assert_eq!(name.entities[0].text, "EntityStore");
    assert_eq!(name.entities[0].kind, EntityKind::CamelCase);
    assert!(!name.is_question && !name.is_file_path);
    let weights = adapt(&name, BASE);
    assert!(weights.text_weight > BASE.text_weight, "{weights:?}");
    // text 0.3 * 1.5 * 2 = 0.9, vector 0.7 * 0.5 = 0.35, scaled to sum 1.
    assert_close(weights.text_weight, 0.9 / 1.25);
    assert_close(weights.vector_weight + weights.text_weight, 1.0);

    // A conceptual question boosts the semantic leg.
    let question = analyze("how does the search pipeline work");
    assert!(question.is_question);
    assert!(question.entities.is_empty());
    let weights = adapt(&question, BASE);
    assert!(weights.vector_weight > BASE.vector_weight, "{weights:?}");
    assert_close(weights.vector_weight, 1.05 / 1.26);

    // A file path is a keyword lookup: keyword 3.0, semantic 0.2.
    let path = analyze("src/main.rs");
    assert!(path.is_file_path);
    assert_eq!(path.entities[0].kind, EntityKind::Path);
    let weights = adapt(&path, BASE);
    assert_close(weights.vector_weight / weights.text_weight, 0.2 / 3.0);
    assert!(weights.text_weight > 0.9, "{weights:?}");

    // No signal: the base weights exactly.
    assert_eq!(
        adapt(&analyze("refund policy for damaged items"), BASE),
        BASE
    );
}

#[test]
fn adaptive_search_reports_the_weights_it_used() {
    let mut config = Config::default();
    config.fusion.adaptive = false;
    let rules = &mut config.fusion.rules;
    *rules = FusionSpec::default();
    rules.method = FusionMethod::Weighted;
    rules.text_normalization = Normalization::MinMax;
    rules.vector_normalization = Normalization::FixedBounds;
    rules.vector_weight = BASE.vector_weight;
    rules.text_weight = BASE.text_weight;
    let engine = Engine::builder()
        .with_config(config)
        .with_embedder_spec(EmbedderSpec::StaticBundled)
        .temporary()
        .unwrap();
    engine
        .upsert_rules([
            Rule::new(
                "entity-store",
                "a question about the EntityStore class",
                "point to src/store/entity.rs",
            ),
            Rule::new(
                "pipeline",
                "someone asks how search results are produced",
                "explain the retrieval pipeline step by step",
            ),
            Rule::new("greet", "the conversation starts", "greet the customer"),
        ])
        .unwrap();
    engine.commit().unwrap();

    for (query, top) in [
        ("EntityStore", "entity-store"),
        ("how does the search pipeline work", "pipeline"),
    ] {
        let expected = adapt(&analyze(query), BASE)
            .in_use(PerLeg::BOTH, PerLeg::ONES)
            .unwrap();
        assert_ne!(expected, BASE, "{query}");
        let on = engine
            .search(&SearchRequest::rules(query).with_adaptive(true))
            .unwrap();
        let off = engine
            .search(&SearchRequest::rules(query).with_adaptive(false))
            .unwrap();
        // Both legs ran, so the weights are not the one-leg 1.0 / 0.0.
        assert_eq!(on.vector_leg_skipped, None, "{query}");
        assert_eq!(off.vector_leg_skipped, None, "{query}");
        assert!(on.fusion.adaptive, "{query}");
        assert!(!off.fusion.adaptive, "{query}");
        assert_close(on.fusion.vector_weight, expected.vector_weight);
        assert_close(on.fusion.text_weight, expected.text_weight);
        assert_close(off.fusion.vector_weight, BASE.vector_weight);
        assert_close(off.fusion.text_weight, BASE.text_weight);
        assert_eq!(on.hits[0].id, top, "{query}: {:?}", on.hits);
    }
    // The configured default applies when the request does not say.
    let default = engine.search(&SearchRequest::rules("EntityStore")).unwrap();
    assert!(!default.fusion.adaptive);
}
