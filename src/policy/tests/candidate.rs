//! Tests of `Candidate`: base scores, keys, JSON, and the trait's default `rank`.

use super::*;

#[track_caller]
fn check(candidate: Candidate, expected_key: &str, expected_score: f64) {
    assert_eq!(candidate.key(), expected_key);
    assert_eq!(candidate.base_score().unwrap(), expected_score);
}

#[test]
fn base_score_prefers_confidence_then_score_then_half() {
    check(Candidate::new("code"), "code", 0.5);
    check(Candidate::new("code").with_score(0.3), "code", 0.3);
    check(
        Candidate::new("code").with_score(0.3).with_confidence(0.9),
        "code",
        0.9,
    );
    check(
        Candidate::new("code").with_id("r1").with_score(-2.0),
        "r1",
        -2.0,
    );
}

#[test]
fn non_finite_scores_are_errors() {
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert_kind(
            Candidate::new("code")
                .with_id("r1")
                .with_confidence(bad)
                .base_score(),
            ErrorKind::NonFiniteScore {
                context: "confidence of candidate `r1`".to_owned(),
            },
        );
        assert_kind(
            Candidate::new("code").with_score(bad).base_score(),
            ErrorKind::NonFiniteScore {
                context: "score of candidate `code`".to_owned(),
            },
        );
    }
}

#[test]
fn json_round_trip() {
    let parsed: Candidate = serde_json::from_value(json!({
        "id": "rule-7",
        "action": "code",
        "payload": {"code": "print(42)"},
        "confidence": 0.9,
    }))
    .unwrap();
    let built = Candidate::new("code")
        .with_id("rule-7")
        .with_payload(json!({"code": "print(42)"}))
        .with_confidence(0.9);
    assert_eq!(parsed, built);
    let text = serde_json::to_string(&built).unwrap();
    assert_eq!(
        text,
        r#"{"id":"rule-7","action":"code","payload":{"code":"print(42)"},"confidence":0.9}"#
    );
    assert_eq!(serde_json::from_str::<Candidate>(&text).unwrap(), built);
}

#[test]
fn json_accepts_action_type_and_defaults() {
    let parsed: Candidate = serde_json::from_value(json!({"action_type": "final"})).unwrap();
    assert_eq!(parsed, Candidate::new("final"));
    assert_eq!(parsed.payload(), &Value::Null);
    assert_eq!(
        (parsed.confidence(), parsed.score(), parsed.id()),
        (None, None, None)
    );
}

#[test]
fn seed_002_free_form_dicts_keep_their_other_fields_in_the_payload() {
    // The seed's candidates, as it writes them.
    let parsed: Candidate = serde_json::from_value(json!(
        {"action": "final", "code": "FINAL('42')", "confidence": 0.3}
    ))
    .unwrap();
    assert_eq!(
        parsed,
        Candidate::new("final")
            .with_payload(json!({"code": "FINAL('42')"}))
            .with_confidence(0.3)
    );
    // Beside an object payload, they join it.
    let merged: Candidate = serde_json::from_value(json!(
        {"action": "code", "payload": {"a": 1}, "b": 2}
    ))
    .unwrap();
    assert_eq!(merged.payload(), &json!({"a": 1, "b": 2}));
}

#[test]
fn json_rejects_a_missing_action_and_fields_that_cannot_join_the_payload() {
    for (value, expected) in [
        (json!({"confidence": 0.9}), "missing field `action`"),
        (json!({"action": "a", "action_type": "b"}), "not both"),
        (
            json!({"action": "a", "payload": {"x": 1}, "x": 2}),
            "both in `payload` and beside it",
        ),
        (
            json!({"action": "a", "payload": [1], "x": 2}),
            "not an object",
        ),
        (json!({"action": "a", "confidence": "high"}), "invalid type"),
    ] {
        let err = serde_json::from_value::<Candidate>(value.clone())
            .unwrap_err()
            .to_string();
        assert!(err.contains(expected), "{value}: {err}");
    }
}

#[test]
fn default_rank_keeps_order_with_equal_scores() {
    struct First;
    impl ActionSelectionPolicy for First {
        fn name(&self) -> &str {
            "first"
        }
        fn select<'c>(
            &mut self,
            candidates: &'c [Candidate],
            _ctx: &mut PolicyContext<'_>,
        ) -> crate::Result<&'c Candidate> {
            candidates
                .first()
                .ok_or_else(|| ErrorKind::EmptyCandidates.into())
        }
    }
    let mut rng = seeded_rng(0);
    let ctx = PolicyContext::new(&mut rng);
    let candidates = approaches([0.1, 0.9, 0.5]);
    let ranked = First.rank(&candidates, &ctx).unwrap();
    assert_eq!(
        rounded(&ranked, 1),
        expected(&[
            ("approach_a", "1.0"),
            ("approach_b", "1.0"),
            ("approach_c", "1.0")
        ])
    );
    assert_kind(First.rank(&[], &ctx), ErrorKind::EmptyCandidates);
    let mut first = First;
    assert!(first.update("approach_a", f64::NAN).is_ok());
}
