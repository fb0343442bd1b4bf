//! Writes, filters and ranking through the public API.

use ruchedb::{Chunk, Engine, ErrorKind, Kind, Rule, SearchRequest};

use crate::common::{engine_with, ids, support_rules};

#[test]
fn bm25_only_index_answers() {
    let engine = engine_with(support_rules());
    let response = engine
        .search(&SearchRequest::rules("I want a refund for my order"))
        .unwrap();
    assert_eq!(response.hits[0].id, "refund");
    assert!(response.vector_leg_skipped.is_some());
    assert!(
        !ids(&response.hits).contains(&"off"),
        "disabled rules never match"
    );
    assert!(
        !ids(&response.hits).contains(&"returns-label"),
        "scenario rules need their scenario"
    );
}

#[test]
fn scopes_follow_the_active_scenario_and_step() {
    let engine = engine_with(support_rules());
    let query = "customer return label confirm";
    let global = engine.search(&SearchRequest::rules(query)).unwrap();
    assert!(!ids(&global.hits).contains(&"returns-label"));
    let scenario = engine
        .search(&SearchRequest::rules(query).with_scenario("returns"))
        .unwrap();
    assert!(ids(&scenario.hits).contains(&"returns-label"));
    assert!(!ids(&scenario.hits).contains(&"returns-confirm"));
    let step = engine
        .search(
            &SearchRequest::rules(query)
                .with_scenario("returns")
                .with_step("confirm"),
        )
        .unwrap();
    assert!(ids(&step.hits).contains(&"returns-confirm"));
    let err = engine
        .search(&SearchRequest::rules(query).with_step("confirm"))
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::InvalidInput { .. }));
}

#[test]
fn agents_and_tags_filter() {
    let engine = engine_with(support_rules());
    let query = "VIP customer refund";
    let any = engine.search(&SearchRequest::rules(query)).unwrap();
    assert!(
        ids(&any.hits).contains(&"vip"),
        "a query without agent sees all"
    );
    let other = engine
        .search(&SearchRequest::rules(query).with_agent("basic-bot"))
        .unwrap();
    assert!(!ids(&other.hits).contains(&"vip"));
    assert!(
        ids(&other.hits).contains(&"refund"),
        "agent-less rules apply to every agent"
    );
    let premium = engine
        .search(&SearchRequest::rules(query).with_agent("premium-bot"))
        .unwrap();
    assert_eq!(premium.hits[0].id, "vip");
    let tagged = engine
        .search(&SearchRequest::rules(query).with_tag("vip"))
        .unwrap();
    assert_eq!(ids(&tagged.hits), ["vip"]);
}

#[test]
fn identifiers_are_found_exactly_and_syntax_is_text() {
    let engine = engine_with(support_rules());
    for query in ["order_1234", "EntityStore", "src/main.rs"] {
        let response = engine.search(&SearchRequest::rules(query)).unwrap();
        assert_eq!(response.hits[0].id, "ident", "{query}");
    }
    let response = engine
        .search(&SearchRequest::rules("title:x AND ("))
        .unwrap();
    assert!(response.hits.is_empty());
    let response = engine
        .search(&SearchRequest::rules("refund AND ("))
        .unwrap();
    assert_eq!(response.hits[0].id, "refund");
}

#[test]
fn upsert_replaces_and_delete_removes() {
    let engine = engine_with(support_rules());
    engine
        .upsert_rules([Rule::new(
            "refund",
            "customer wants to cancel a subscription",
            "cancel it",
        )])
        .unwrap();
    // Not visible before commit.
    let before = engine
        .search(&SearchRequest::rules("cancel subscription"))
        .unwrap();
    assert!(before.hits.is_empty());
    engine.commit().unwrap();
    let after = engine
        .search(&SearchRequest::rules("cancel subscription"))
        .unwrap();
    assert_eq!(ids(&after.hits), ["refund"]);
    let old = engine
        .search(&SearchRequest::rules("refund policy"))
        .unwrap();
    assert!(
        !ids(&old.hits).contains(&"refund"),
        "the old version is gone from the text index"
    );
    engine.delete(Kind::Rule, "default", "refund");
    assert_eq!(engine.commit().unwrap(), 1);
    assert!(
        engine
            .get(Kind::Rule, "default", "refund")
            .unwrap()
            .is_none()
    );
    let gone = engine
        .search(&SearchRequest::rules("cancel subscription"))
        .unwrap();
    assert!(gone.hits.is_empty());
    assert_eq!(engine.stats().rules, support_rules().len() - 1);
}

#[test]
fn duplicate_ids_in_one_batch_are_rejected() {
    let engine = Engine::builder().temporary().unwrap();
    let err = engine
        .upsert_rules([Rule::new("a", "c", "x"), Rule::new("a", "d", "y")])
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::DuplicateId { id } if id == "a"));
    assert_eq!(
        engine.commit().unwrap(),
        0,
        "nothing of the failed call was buffered"
    );
}

#[test]
fn wrong_dimensions_are_rejected() {
    let engine = Engine::builder().temporary().unwrap();
    engine
        .upsert_chunks([Chunk::new("a", "x").with_embedding(vec![1.0, 0.0, 0.0])])
        .unwrap();
    engine.commit().unwrap();
    let err = engine
        .upsert_chunks([Chunk::new("b", "y").with_embedding(vec![1.0, 0.0])])
        .unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::DimensionMismatch {
            expected: 3,
            got: 2
        }
    ));
    let err = engine
        .search(&SearchRequest::chunks("x").with_embedding(vec![1.0; 4]))
        .unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::DimensionMismatch {
            expected: 3,
            got: 4
        }
    ));
    let zero = engine
        .search(&SearchRequest::chunks("x").with_embedding(vec![0.0; 3]))
        .unwrap();
    assert!(
        zero.vector_leg_skipped.is_some(),
        "a zero query vector skips the vector leg"
    );
    assert!(zero.hits.iter().all(|h| h.score.is_finite()));
}

#[test]
fn vectors_rank_chunks_and_fill_missing_leg_scores() {
    let engine = Engine::builder().temporary().unwrap();
    engine
        .upsert_chunks([
            Chunk::new("near", "alpha beta").with_embedding(vec![1.0, 0.0]),
            Chunk::new("far", "gamma delta").with_embedding(vec![0.0, 1.0]),
            Chunk::new("text", "gamma gamma").with_embedding(vec![-1.0, 0.0]),
        ])
        .unwrap();
    engine.commit().unwrap();
    let response = engine
        .search(
            &SearchRequest::chunks("gamma")
                .with_embedding(vec![1.0, 0.1])
                .with_min_relevance(0.0)
                .with_top_k(3),
        )
        .unwrap();
    let near = response.hits.iter().find(|h| h.id == "near").unwrap();
    assert!(near.breakdown.found_by.vector);
    let text = response.hits.iter().find(|h| h.id == "text").unwrap();
    assert!(text.breakdown.found_by.text);
    assert_eq!(
        text.breakdown.vector,
        Some(0.0),
        "negative cosine scores 0, filled from storage"
    );
    let far = response.hits.iter().find(|h| h.id == "far").unwrap();
    assert!(
        far.breakdown.bm25 > 0.0,
        "BM25 filled for a vector candidate"
    );
}
