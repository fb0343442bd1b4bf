//! Feedback through the public API (seed 004): a leg that keeps finding the top hit of
//! useful answers gets a larger weight in later searches, once it has 10 records.
//!
//! The index carries its own 4-dimensional vectors except for one rule, `ident`, which
//! has none: the vector leg can never find it. The query names the identifier
//! `order_1234` that only `ident` contains, and its vector is orthogonal to every stored
//! vector, so the text leg alone finds the top hit while both legs run (which is what
//! makes the weights in use move: with one leg, it always gets weight 1.0).

use std::path::Path;

use ruchedb::feedback::{Leg, LegFeedback};
use ruchedb::fusion::{FusionMethod, FusionSpec, Normalization};
use ruchedb::{Config, Engine, ErrorKind, Rule, SearchRequest, SearchResponse};

/// seed 003's fusion, pinned so that the expected weights do not follow the defaults.
fn spec() -> FusionSpec {
    let mut spec = FusionSpec::default();
    spec.method = FusionMethod::Weighted;
    spec.text_normalization = Normalization::MinMax;
    spec.vector_normalization = Normalization::FixedBounds;
    spec.vector_weight = 0.7;
    spec.text_weight = 0.3;
    spec.text_bounds = [0.0, 10.0];
    spec.vector_bounds = [0.0, 1.0];
    spec.rrf_k = 60.0;
    spec
}

/// The weights in use with both legs and factors `(1.0, 1.8)`: `0.7 * 1.0` and
/// `0.3 * 1.8`, renormalised.
const BOOSTED: (f64, f64) = (0.7 / 1.24, 0.54 / 1.24);

fn config(feedback: bool) -> Config {
    let mut config = Config::default();
    config.fusion.feedback = feedback;
    config.fusion.rules = spec();
    // These tests count the two lexical and semantic legs' entries; the query names a
    // code, which would switch the graph leg on too (tests/it/graph.rs covers it).
    config.graph.enabled = false;
    config
}

fn rules() -> Vec<Rule> {
    vec![
        Rule::new(
            "ident",
            "look up order_1234 in the EntityStore",
            "inspect the record",
        ),
        Rule::new("greet", "the conversation starts", "greet the customer")
            .with_embedding(vec![1.0, 0.0, 0.0, 0.0]),
        Rule::new("refund", "customer asks for a refund", "explain the policy")
            .with_embedding(vec![0.0, 1.0, 0.0, 0.0]),
        Rule::new("label", "customer needs a return label", "send a label")
            .with_embedding(vec![0.0, 0.0, 1.0, 0.0]),
    ]
}

/// A new index in `dir` holding [`rules`].
fn create(dir: &Path, feedback: bool) -> Engine {
    let engine = Engine::builder()
        .with_config(config(feedback))
        .create(dir)
        .unwrap();
    engine.upsert_rules(rules()).unwrap();
    engine.commit().unwrap();
    engine
}

fn open(dir: &Path, feedback: bool) -> Engine {
    Engine::builder()
        .with_config(config(feedback))
        .open(dir)
        .unwrap()
}

/// A search whose top hit only the text leg finds (checked).
#[track_caller]
fn search(engine: &Engine) -> SearchResponse {
    let response = engine
        .search(
            &SearchRequest::rules("order_1234")
                .with_embedding(vec![0.0, 0.0, 0.0, 1.0])
                .with_top_k(4),
        )
        .unwrap();
    let top = &response.hits[0];
    assert_eq!(top.id, "ident", "{:?}", response.hits);
    assert!(top.breakdown.found_by.text && !top.breakdown.found_by.vector);
    assert!(response.vector_leg_skipped.is_none());
    assert_eq!(response.leg_candidates, [1, 3]);
    response
}

/// `n` searches, each marked `useful`.
#[track_caller]
fn give_feedback(engine: &Engine, n: usize, useful: bool) {
    for _ in 0..n {
        let response = search(engine);
        engine.feedback(&response.query_id, useful).unwrap();
    }
}

/// The `(vector, text)` weights a search used.
#[track_caller]
fn weights_used(engine: &Engine) -> (f64, f64) {
    let fusion = search(engine).fusion;
    (fusion.vector_weight, fusion.text_weight)
}

#[track_caller]
fn assert_close(got: (f64, f64), expected: (f64, f64)) {
    assert!(
        (got.0 - expected.0).abs() < 1e-9 && (got.1 - expected.1).abs() < 1e-9,
        "got {got:?}, expected {expected:?}"
    );
}

#[test]
fn twenty_useful_text_only_hits_give_the_text_leg_factor_1_8() {
    let dir = tempfile::tempdir().unwrap();
    let engine = create(dir.path(), true);
    let fresh = search(&engine).fusion;
    assert_eq!(fresh.feedback_factors, Some(ruchedb::PerLeg::ONES));
    assert_close((fresh.vector_weight, fresh.text_weight), (0.7, 0.3));

    give_feedback(&engine, 20, true);
    let window = engine.feedback_window("default", ruchedb::Kind::Rule);
    assert_eq!(
        window.stats(Leg::Text),
        LegFeedback {
            useful: 20,
            total: 20
        }
    );
    assert_eq!(window.stats(Leg::Vector).total, 0);
    let factors = window.factors();
    assert!((factors.text - 1.8).abs() < 1e-12, "{factors:?}");
    assert_eq!(factors.vector, 1.0);

    let fusion = search(&engine).fusion;
    let factors = fusion.feedback_factors.unwrap();
    assert_eq!(factors.vector, 1.0);
    assert!((factors.text - 1.8).abs() < 1e-12);
    assert_close((fusion.vector_weight, fusion.text_weight), BOOSTED);
    assert!(fusion.text_weight > 0.3);
}

#[test]
fn fewer_than_ten_entries_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let engine = create(dir.path(), true);
    give_feedback(&engine, 9, true);
    assert_eq!(
        engine.feedback_window("default", ruchedb::Kind::Rule).len(),
        9
    );
    assert_eq!(
        engine
            .feedback_window("default", ruchedb::Kind::Rule)
            .factors()
            .text,
        1.0
    );
    let fusion = search(&engine).fusion;
    assert_eq!(fusion.feedback_factors, Some(ruchedb::PerLeg::ONES));
    assert_close((fusion.vector_weight, fusion.text_weight), (0.7, 0.3));
    // The tenth entry counts.
    give_feedback(&engine, 1, true);
    assert_close(weights_used(&engine), BOOSTED);
}

#[test]
fn feedback_off_leaves_the_configured_weights() {
    let dir = tempfile::tempdir().unwrap();
    let engine = create(dir.path(), false);
    // Feedback is still recorded (and persisted), just not applied.
    give_feedback(&engine, 20, true);
    assert!(
        (engine
            .feedback_window("default", ruchedb::Kind::Rule)
            .factors()
            .text
            - 1.8)
            .abs()
            < 1e-12
    );
    let fusion = search(&engine).fusion;
    assert_eq!(fusion.feedback_factors, None);
    assert_close((fusion.vector_weight, fusion.text_weight), (0.7, 0.3));
}

#[test]
fn the_window_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let engine = create(dir.path(), true);
    give_feedback(&engine, 12, true);
    give_feedback(&engine, 3, false);
    let kept_id = search(&engine).query_id;
    let window = engine.feedback_window("default", ruchedb::Kind::Rule);
    assert_eq!(window.len(), 15);
    drop(engine);

    let engine = open(dir.path(), true);
    assert_eq!(
        engine.feedback_window("default", ruchedb::Kind::Rule),
        window
    );
    // 12 of 15 useful: 0.2 + 0.8 * 1.6 = 1.48.
    let expected_text = 0.3 * 1.48 / (0.7 + 0.3 * 1.48);
    assert_close(weights_used(&engine), (1.0 - expected_text, expected_text));
    // The query log is persisted too: a search made before the reopen takes feedback.
    let window = engine.feedback(&kept_id, true).unwrap();
    assert_eq!(window.len(), 16);
    drop(engine);

    // The same window, applied or not by the configuration of the open.
    let engine = open(dir.path(), false);
    assert_eq!(
        engine.feedback_window("default", ruchedb::Kind::Rule),
        window
    );
    assert_close(weights_used(&engine), (0.7, 0.3));
}

#[test]
fn unknown_query_ids_are_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let engine = create(dir.path(), true);
    let err = engine.feedback("q-never-issued", true).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("q-never-issued"), "{err}");
    // A search without hits has an id, but nothing to give feedback on.
    let empty = engine
        .search(&SearchRequest::rules("order_1234").with_tenant("nobody"))
        .unwrap();
    assert!(empty.hits.is_empty());
    let err = engine.feedback(&empty.query_id, true).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NotFound { .. }), "{err}");
    assert!(
        engine
            .feedback_window("default", ruchedb::Kind::Rule)
            .is_empty()
    );
}

#[test]
fn reset_clears_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let engine = create(dir.path(), true);
    give_feedback(&engine, 20, true);
    assert_close(weights_used(&engine), BOOSTED);
    engine.reset_feedback().unwrap();
    assert!(
        engine
            .feedback_window("default", ruchedb::Kind::Rule)
            .is_empty()
    );
    assert_close(weights_used(&engine), (0.7, 0.3));
    drop(engine);
    // The reset is persisted.
    let engine = open(dir.path(), true);
    assert!(
        engine
            .feedback_window("default", ruchedb::Kind::Rule)
            .is_empty()
    );
    assert_close(weights_used(&engine), (0.7, 0.3));
}

#[test]
fn a_search_writes_nothing_its_id_carries_what_feedback_needs() {
    let dir = tempfile::tempdir().unwrap();
    let engine = create(dir.path(), true);
    engine.close().unwrap();
    let store_bytes = |dir: &Path| {
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir.join("store"))
            .unwrap()
            .map(|entry| {
                let path = entry.unwrap().path();
                let bytes = if path.is_file() {
                    std::fs::read(&path).unwrap()
                } else {
                    Vec::new()
                };
                (path.display().to_string(), bytes)
            })
            .collect();
        files.sort();
        files
    };
    // Searches in one handle, dropped (a process that searched and exited)...
    let engine = open(dir.path(), true);
    let before = store_bytes(dir.path());
    let ids: Vec<String> = (0..20).map(|_| search(&engine).query_id).collect();
    drop(engine);
    assert!(
        store_bytes(dir.path()) == before,
        "searches wrote to the store"
    );

    // ...and feedback in another: each id counts once.
    let engine = open(dir.path(), true);
    for id in &ids {
        engine.feedback(id, true).unwrap();
        engine.feedback(id, true).unwrap();
        assert!(engine.feedback(id, false).is_err());
    }
    let window = engine.feedback_window("default", ruchedb::Kind::Rule);
    assert_eq!(window.len(), 20);
    let text = window.stats(Leg::Text);
    assert_eq!((text.useful, text.total), (20, 20));
    assert_eq!(
        window.stats(Leg::Vector).total,
        0,
        "the text leg alone found them"
    );
    drop(engine);
    // The marks outlive the handle: given again in a third, nothing changes.
    let engine = open(dir.path(), true);
    engine.feedback(&ids[0], true).unwrap();
    assert_eq!(
        engine.feedback_window("default", ruchedb::Kind::Rule).len(),
        20
    );

    // An altered id credits nothing.
    let id = search(&engine).query_id;
    let mut altered = id.clone();
    let last = altered.pop().unwrap();
    altered.push(if last == '0' { '1' } else { '0' });
    for bad in [altered.as_str(), &id[..id.len() - 2], "q0000-bogus"] {
        let err = engine.feedback(bad, true).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::NotFound { .. }),
            "{bad}: {err}"
        );
    }
    assert_eq!(
        engine.feedback_window("default", ruchedb::Kind::Rule).len(),
        20
    );
}

#[test]
fn an_id_credits_the_tenant_and_kind_it_was_searched_in() {
    let dir = tempfile::tempdir().unwrap();
    let engine = create(dir.path(), true);
    engine
        .upsert_rules(rules().into_iter().map(|rule| rule.with_tenant("acme")))
        .unwrap();
    engine.commit().unwrap();
    let response = engine
        .search(
            &SearchRequest::rules("order_1234")
                .with_tenant("acme")
                .with_embedding(vec![0.0, 0.0, 0.0, 1.0]),
        )
        .unwrap();
    assert_eq!(response.hits[0].id, "ident");
    drop(engine);
    let engine = open(dir.path(), true);
    engine.feedback(&response.query_id, false).unwrap();
    assert_eq!(engine.feedback_window("acme", ruchedb::Kind::Rule).len(), 1);
    assert!(
        engine
            .feedback_window("default", ruchedb::Kind::Rule)
            .is_empty()
    );
    assert!(
        engine
            .feedback_window("acme", ruchedb::Kind::Chunk)
            .is_empty()
    );
}
