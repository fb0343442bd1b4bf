//! Scenarios and tools: detection behind the gate, selection per kind, filters, tenant
//! isolation, persistence, and tool hits handed to a policy.

use rand::SeedableRng;
use ruchedb::policy::{ActionSelectionPolicy, Candidate, GreedyPolicy, PolicyContext};
use ruchedb::{Document, Engine, ErrorKind, Kind, Scenario, SearchRequest, Step, Tool};

use crate::common::ids;

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario::new(
            "returns",
            "Returns and refunds",
            "The customer wants to send an item back or get their money back",
        )
        .with_examples([
            "I want to return the boots I bought",
            "how do I get a refund for my order?",
            "these pants don't fit, can I exchange them?",
        ])
        .with_steps([
            Step::new("collect_order", "Find the order"),
            Step::new("confirm", "Confirm the return and send the label"),
        ]),
        Scenario::new(
            "damaged_item",
            "Damaged delivery",
            "An item arrived broken, damaged in transit or defective",
        )
        .with_examples([
            "my tent arrived with a broken pole",
            "the box was crushed and the stove is dented",
        ]),
        Scenario::new(
            "payment_issue",
            "Payment problem",
            "A card was declined or the customer was charged twice",
        )
        .with_examples([
            "my card keeps getting declined",
            "I was charged twice for the same order",
        ])
        .with_tags(["payments"]),
        Scenario::new(
            "retired",
            "Old flow",
            "The customer wants to return an item by fax",
        )
        .with_examples(["I want to return my boots by fax"])
        .with_enabled(false),
        Scenario::new(
            "returns",
            "Returns at Acme",
            "The customer wants to return sports equipment",
        )
        .with_tenant("acme")
        .with_examples(["I want to return my tennis racket"]),
    ]
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "track",
            "track_order",
            "Look up where a shipped order is and when it will arrive",
        )
        .with_parameters(serde_json::json!({
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        }))
        .with_examples(["where is my package?", "when will my order arrive?"]),
        Tool::new(
            "refund",
            "issue_refund",
            "Refund a payment to the original payment method",
        )
        .with_examples(["I want my money back", "refund the duplicate charge"]),
        Tool::new(
            "password",
            "send_password_reset",
            "Email a link to reset the account password",
        )
        .with_examples(["I forgot my password", "I can't log in"])
        .with_agent("web-bot"),
    ]
}

fn engine() -> Engine {
    let engine = Engine::builder().temporary().unwrap();
    engine.upsert_scenarios(scenarios()).unwrap();
    engine.upsert_tools(tools()).unwrap();
    engine.commit().unwrap();
    engine
}

#[test]
fn a_message_activates_the_one_scenario_it_is_about() {
    let engine = engine();
    for (message, expected) in [
        ("the tent I got has a snapped pole", "damaged_item"),
        ("I'd like to send these shoes back", "returns"),
        ("why was my card declined?", "payment_issue"),
    ] {
        let response = engine.search(&SearchRequest::scenarios(message)).unwrap();
        assert_eq!(ids(&response.hits), [expected], "{message}");
        assert_eq!(response.selection.strategy, "entropy", "{message}");
        let doc = response.hits[0].document.as_scenario().unwrap();
        assert_eq!(doc.id, expected);
    }
}

#[test]
fn a_message_no_scenario_fits_activates_none_and_says_why() {
    let engine = engine();
    for message in ["who won the football game last night", "ok", "xyzzy plugh"] {
        let response = engine.search(&SearchRequest::scenarios(message)).unwrap();
        assert!(
            response.hits.is_empty(),
            "{message}: {:?}",
            ids(&response.hits)
        );
        assert!(
            response.gate.abstention_reason().is_some(),
            "{message}: abstention without a reason"
        );
    }
}

#[test]
fn scenarios_are_filtered_by_tenant_enabled_and_tags() {
    let engine = engine();
    // The disabled scenario has the closest example, and is never returned.
    let fax = engine
        .search(
            &SearchRequest::scenarios("I want to return my boots by fax").with_min_relevance(0.0),
        )
        .unwrap();
    assert!(!ids(&fax.hits).contains(&"retired"), "{:?}", ids(&fax.hits));
    // Each tenant sees its own scenarios only.
    let racket = "I want to return my tennis racket";
    let acme = engine
        .search(&SearchRequest::scenarios(racket).with_tenant("acme"))
        .unwrap();
    assert_eq!(ids(&acme.hits), ["returns"]);
    assert_eq!(
        acme.hits[0].document.as_scenario().unwrap().tenant_id,
        "acme"
    );
    let other = engine
        .search(
            &SearchRequest::scenarios(racket)
                .with_tenant("globex")
                .with_min_relevance(0.0),
        )
        .unwrap();
    assert!(other.hits.is_empty());
    // A tag filter keeps only the scenarios that carry it.
    let tagged = engine
        .search(
            &SearchRequest::scenarios("I want to return the boots")
                .with_tag("payments")
                .with_min_relevance(0.0)
                .with_top_k(5),
        )
        .unwrap();
    assert_eq!(ids(&tagged.hits), ["payment_issue"]);
}

#[test]
fn filters_of_other_kinds_are_refused_on_scenarios_and_tools() {
    let engine = engine();
    for request in [
        SearchRequest::scenarios("refund").with_scenario("returns"),
        SearchRequest::tools("refund").with_context("user-1"),
        SearchRequest::tools("refund").with_filter("source", "x"),
    ] {
        let err = engine.search(&request).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::InvalidInput { .. }),
            "{err}"
        );
    }
}

#[test]
fn tools_are_ranked_and_cut_by_band_and_a_policy_chooses_among_them() {
    let engine = engine();
    let response = engine
        .search(&SearchRequest::tools(
            "where is my package? it has not arrived",
        ))
        .unwrap();
    assert_eq!(response.selection.strategy, "band");
    assert_eq!(ids(&response.hits)[0], "track");
    // The schema is returned as it was given.
    let tool = response.hits[0].document.as_tool().unwrap();
    assert_eq!(tool.parameters["required"][0], "order_id");

    let candidates: Vec<Candidate> = response.hits.iter().map(Candidate::from_hit).collect();
    assert_eq!(candidates[0].action_type(), "track_order");
    assert_eq!(candidates[0].id(), Some("track"));
    assert_eq!(candidates[0].score(), Some(response.hits[0].score));
    assert_eq!(candidates[0].payload()["parameters"]["type"], "object");
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let chosen = GreedyPolicy
        .select(&candidates, &mut PolicyContext::new(&mut rng))
        .unwrap();
    assert_eq!(chosen.id(), Some("track"));
}

#[test]
fn a_tool_of_one_agent_is_offered_to_that_agent_only() {
    let engine = engine();
    let search = |agent: &str| {
        let request = SearchRequest::tools("I forgot my password").with_agent(agent);
        ids(&engine.search(&request).unwrap().hits)
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(search("web-bot"), ["password"]);
    assert!(!search("voice-bot").contains(&"password".to_string()));
}

#[test]
fn scenarios_and_tools_persist_and_are_exported_got_and_deleted_by_kind() {
    let dir = tempfile::tempdir().unwrap();
    {
        let engine = Engine::builder().create(dir.path()).unwrap();
        engine.upsert_scenarios(scenarios()).unwrap();
        engine.upsert_tools(tools()).unwrap();
        engine.commit().unwrap();
        engine.close().unwrap();
    }
    let engine = Engine::builder().open(dir.path()).unwrap();
    let stats = engine.stats();
    assert_eq!((stats.scenarios, stats.tools), (5, 3));
    assert_eq!(engine.tenant_count("acme", Kind::Scenario), 1);

    let exported = engine.export(Kind::Scenario, Some("default")).unwrap();
    let expected: Vec<Document> = {
        let mut own: Vec<Scenario> = scenarios()
            .into_iter()
            .filter(|s| s.tenant_id == "default")
            .collect();
        own.sort_by(|a, b| a.id.cmp(&b.id));
        own.into_iter().map(Document::from).collect()
    };
    assert_eq!(exported, expected);
    let tool = engine.get(Kind::Tool, "default", "track").unwrap().unwrap();
    assert_eq!(tool.as_tool(), Some(&tools()[0]));
    // Same id, different kind: a rule `track` is not the tool.
    assert!(
        engine
            .get(Kind::Rule, "default", "track")
            .unwrap()
            .is_none()
    );

    engine.delete(Kind::Tool, "default", "track");
    engine.commit().unwrap();
    let response = engine
        .search(&SearchRequest::tools("where is my package?").with_min_relevance(0.0))
        .unwrap();
    assert!(!ids(&response.hits).contains(&"track"));
    assert_eq!(engine.stats().tools, 2);
    // The other kinds are untouched.
    assert_eq!(engine.stats().scenarios, 5);
}

#[test]
fn feedback_on_a_tool_search_weighs_the_tools_of_that_tenant_only() {
    let engine = engine();
    let response = engine
        .search(&SearchRequest::tools("I want my money back"))
        .unwrap();
    assert!(!response.hits.is_empty());
    let window = engine.feedback(&response.query_id, true).unwrap();
    assert!(!window.entries().is_empty());
    assert_eq!(engine.feedback_window("default", Kind::Tool), window);
    for kind in [Kind::Rule, Kind::Chunk, Kind::Scenario] {
        assert!(engine.feedback_window("default", kind).entries().is_empty());
    }
}

#[test]
fn invalid_scenarios_and_tools_are_refused_naming_the_field() {
    let engine = Engine::builder().temporary().unwrap();
    let blank = Scenario::new("s", "name", " ");
    let err = engine.upsert_scenarios([blank]).unwrap_err();
    assert!(err.to_string().contains("`description`"), "{err}");
    let bad_schema = Tool::new("t", "n", "d").with_parameters(serde_json::json!("a string"));
    let err = engine.upsert_tools([bad_schema]).unwrap_err();
    assert!(err.to_string().contains("`parameters`"), "{err}");
    let twice = Scenario::new("s", "n", "d").with_steps([Step::new("a", "x"), Step::new("a", "y")]);
    let err = engine.upsert_scenarios([twice]).unwrap_err();
    assert!(err.to_string().contains("appears twice"), "{err}");
}

#[test]
fn an_identifier_no_tool_holds_does_not_hide_the_tool_the_message_is_about() {
    let engine = engine();
    for message in [
        "where is my package NW-15699?",
        "when will order NW-15699 arrive",
    ] {
        let plain = engine
            .search(&SearchRequest::tools(message.replace("NW-15699", "")))
            .unwrap();
        let with_code = engine.search(&SearchRequest::tools(message)).unwrap();
        assert_eq!(ids(&with_code.hits).first(), Some(&"track"), "{message}");
        // The code counts for nothing against the tool: same relevance as without it.
        let relevance = |r: &ruchedb::SearchResponse| r.hits[0].breakdown.relevance.unwrap();
        assert!(
            (relevance(&plain) - relevance(&with_code)).abs() < 0.05,
            "{message}: {} vs {}",
            relevance(&plain),
            relevance(&with_code)
        );
    }
}
