//! The graph leg: entities, paths, maintenance, isolation, and the auto-enable rule.

use ruchedb::relevance::GateDecision;
use ruchedb::retrieve::{RetrievalQuery, Retriever};
use ruchedb::{Chunk, Config, Engine, Rule, SearchRequest, Timestamp};

fn now() -> Timestamp {
    Timestamp::from_unix_millis(1_790_000_000_000)
}

/// Customers with a preference note, an order note naming them, and other notes.
fn memory() -> Vec<Chunk> {
    let mut chunks = Vec::new();
    for (i, channel) in ["email", "phone", "text message", "post", "chat", "email"]
        .iter()
        .enumerate()
    {
        let customer = format!("CUST-{}", 48_210 + i);
        chunks.push(
            Chunk::new(
                format!("pref-{i}"),
                format!("{customer} prefers to be contacted by {channel}"),
            )
            .with_importance(5),
        );
        chunks.push(
            Chunk::new(
                format!("order-{i}"),
                format!("Order NW-{} (tent) was placed by {customer}.", 15_690 + i),
            )
            .with_importance(5),
        );
        chunks.push(
            Chunk::new(
                format!("note-{i}"),
                format!("{customer} asked about the return policy."),
            )
            .with_importance(5),
        );
    }
    chunks
}

fn engine_with(chunks: Vec<Chunk>, graph: bool) -> Engine {
    let mut config = Config::default();
    config.graph.enabled = graph;
    let engine = Engine::builder().with_config(config).temporary().unwrap();
    engine.upsert_chunks(chunks).unwrap();
    engine.commit().unwrap();
    engine
}

fn ids(engine: &Engine, request: &SearchRequest) -> Vec<String> {
    engine
        .search(request)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.id)
        .collect()
}

#[test]
fn a_fact_two_hops_away_is_found_through_the_shared_entity() {
    let request = SearchRequest::chunks("how should we contact the customer of order NW-15693?")
        .with_now(now())
        .with_top_k(5);
    let off = engine_with(memory(), false);
    assert!(
        !ids(&off, &request).iter().take(3).any(|id| id == "pref-3"),
        "{:?}",
        ids(&off, &request)
    );

    let on = engine_with(memory(), true);
    let response = on.search(&request).unwrap();
    let found: Vec<&str> = response.hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(found[0], "order-3", "{found:?}");
    assert_eq!(found[1], "pref-3", "{found:?}");
    assert_eq!(response.fusion.graph_entities, ["nw-15693"]);
    assert!(response.fusion.graph_weight > 0.0);
    let pref = &response.hits[1].breakdown;
    assert!(pref.found_by.graph);
    let path = pref.graph_path.as_ref().unwrap();
    assert_eq!(path.entity, "nw-15693");
    assert_eq!(
        path.via,
        Some(("order-3".to_string(), "cust-48213".to_string()))
    );
    assert_eq!(path.to_string(), "nw-15693 → order-3 → cust-48213 → hit");
    // The order note names the entity itself: hop 1.
    assert_eq!(
        response.hits[0].breakdown.graph_path.as_ref().unwrap().via,
        None
    );
    // No other customer's note is reached.
    for hit in &response.hits {
        if hit.breakdown.found_by.graph {
            assert!(hit.id.ends_with("-3"), "{}", hit.id);
        }
    }
}

#[test]
fn queries_without_entities_rank_exactly_as_with_the_graph_off() {
    let off = engine_with(memory(), false);
    let on = engine_with(memory(), true);
    for text in [
        "how do customers like to be contacted",
        "return policy question",
        "tent order",
        "",
    ] {
        let request = SearchRequest::chunks(text).with_now(now()).with_top_k(10);
        let a = off.search(&request).unwrap();
        let b = on.search(&request).unwrap();
        let summary = |r: &ruchedb::SearchResponse| -> Vec<(String, f64)> {
            r.hits.iter().map(|h| (h.id.clone(), h.score)).collect()
        };
        assert_eq!(summary(&a), summary(&b), "{text}");
        assert!(b.fusion.graph_entities.is_empty());
        assert_eq!(b.fusion.graph_weight, 0.0);
    }
    // An identifier the graph does not know does not switch it on either.
    let unknown = SearchRequest::chunks("status of NW-99999").with_now(now());
    assert!(
        on.search(&unknown)
            .unwrap()
            .fusion
            .graph_entities
            .is_empty()
    );
}

#[test]
fn the_graph_follows_upserts_deletes_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    let request = SearchRequest::chunks("how should we contact the customer of order NW-15691?")
        .with_now(now())
        .with_top_k(5);
    {
        let engine = Engine::builder().create(&path).unwrap();
        engine.upsert_chunks(memory()).unwrap();
        engine.commit().unwrap();
        assert_eq!(ids(&engine, &request)[1], "pref-1");
        // The order now names another customer: the path follows.
        engine
            .upsert_chunks([Chunk::new(
                "order-1",
                "Order NW-15691 (tent) was placed by CUST-48214.",
            )])
            .unwrap();
        engine.commit().unwrap();
        let found = ids(&engine, &request);
        assert!(found.iter().take(3).any(|id| id == "pref-4"), "{found:?}");
        assert!(!found.contains(&"pref-1".to_string()), "{found:?}");
        engine.delete(ruchedb::Kind::Chunk, ruchedb::DEFAULT_TENANT, "pref-4");
        engine.commit().unwrap();
        assert!(!ids(&engine, &request).contains(&"pref-4".to_string()));
    }
    // Reopened: the graph is rebuilt from the committed records.
    let engine = Engine::builder().open(&path).unwrap();
    let found = ids(&engine, &request);
    assert_eq!(found[0], "order-1");
    assert!(found.iter().any(|id| id == "note-4"), "{found:?}");
    assert!(
        !found.contains(&"pref-4".to_string()) && !found.contains(&"pref-1".to_string()),
        "{found:?}"
    );
    assert!(engine.stats().entities > 0);
}

#[test]
fn a_tenants_graph_never_reaches_another_tenant() {
    let engine = Engine::builder().temporary().unwrap();
    engine
        .upsert_chunks([
            Chunk::new("order", "Order NW-15699 was placed by CUST-48213.").with_tenant("a"),
            Chunk::new("pref-a", "CUST-48213 prefers email").with_tenant("a"),
            Chunk::new("pref-b", "CUST-48213 prefers phone calls").with_tenant("b"),
            Chunk::new("order-b", "Order NW-15699 was cancelled by CUST-48213.").with_tenant("b"),
        ])
        .unwrap();
    engine.commit().unwrap();
    for tenant in ["a", "b"] {
        let request = SearchRequest::chunks("how to contact the customer of NW-15699")
            .with_tenant(tenant)
            .with_now(now());
        let response = engine.search(&request).unwrap();
        assert!(!response.hits.is_empty());
        assert!(
            response
                .hits
                .iter()
                .all(|h| h.document.tenant_id() == tenant)
        );
        for hit in &response.hits {
            if let Some((bridge, _)) = &hit
                .breakdown
                .graph_path
                .as_ref()
                .and_then(|p| p.via.clone())
            {
                assert!(
                    bridge.ends_with(if tenant == "a" { "order" } else { "order-b" }),
                    "{bridge}"
                );
            }
        }
    }
}

#[test]
fn filters_apply_to_bridges_and_hits() {
    let engine = Engine::builder().temporary().unwrap();
    engine
        .upsert_chunks([
            Chunk::new("order", "Order NW-15699 was placed by CUST-48213.").with_context("u1"),
            Chunk::new("pref", "CUST-48213 prefers email").with_context("u2"),
            Chunk::new(
                "other-order",
                "Order NW-15699 was split in two by CUST-48213.",
            )
            .with_context("u2"),
        ])
        .unwrap();
    engine.commit().unwrap();
    // Only u2's documents: `order` cannot bridge, `other-order` can.
    let request = SearchRequest::chunks("contact for NW-15699")
        .with_context("u2")
        .with_now(now())
        .with_top_k(5);
    let response = engine.search(&request).unwrap();
    assert!(
        response
            .hits
            .iter()
            .all(|h| h.document.as_chunk().unwrap().context_id.as_deref() == Some("u2"))
    );
    let pref = response
        .hits
        .iter()
        .find(|h| h.id == "pref")
        .expect("pref reached through other-order");
    let via = pref
        .breakdown
        .graph_path
        .as_ref()
        .unwrap()
        .via
        .clone()
        .unwrap();
    assert_eq!(via.0, "other-order");
}

#[test]
fn relations_and_entities_are_edges_stored_and_returned() {
    let engine = Engine::builder().temporary().unwrap();
    let rule = Rule::new(
        "refund",
        "the customer asks for a refund",
        "check the order, then refund",
    )
    .with_relation("depends_on", "order-lookup")
    .with_relation("excludes", "upsell")
    .with_entities(["Refund Policy"]);
    engine
        .upsert_rules([
            rule.clone(),
            Rule::new(
                "order-lookup",
                "the order must be found first",
                "look the order up",
            ),
            Rule::new("upsell", "offer an upgrade", "suggest the premium plan"),
        ])
        .unwrap();
    engine
        .upsert_chunks([
            // Linked by a relation only: the text does not name the customer.
            Chunk::new("order", "Order NW-15699: a tent, two-day shipping.")
                .with_relation("placed_by", "CUST-48213"),
            Chunk::new("pref", "Prefers email, never calls.").with_entities(["cust-48213"]),
            Chunk::new("noise", "Prefers phone calls."),
        ])
        .unwrap();
    engine.commit().unwrap();
    // Stored and returned as given.
    let stored = engine
        .get(ruchedb::Kind::Rule, ruchedb::DEFAULT_TENANT, "refund")
        .unwrap()
        .unwrap();
    assert_eq!(stored.as_rule().unwrap(), &rule);
    let json = serde_json::to_value(stored.as_rule().unwrap()).unwrap();
    assert_eq!(json["relations"][0]["type"], "depends_on");
    assert_eq!(json["entities"][0], "Refund Policy");
    // A relation to a rule id is an edge to that rule; an explicit entity is found in a
    // query by its words.
    let response = engine
        .search(&SearchRequest::rules("what does the refund policy say"))
        .unwrap();
    assert_eq!(response.fusion.graph_entities, ["refund policy"]);
    let chunks = engine
        .search(
            &SearchRequest::chunks("how to reach whoever ordered NW-15699")
                .with_now(now())
                .with_top_k(3),
        )
        .unwrap();
    let found: Vec<&str> = chunks.hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(&found[..2], ["order", "pref"], "{found:?}");
    assert_eq!(chunks.hits[1].breakdown.gate, GateDecision::Linked);
}

#[test]
fn bad_links_are_rejected_with_the_field() {
    let engine = Engine::builder().temporary().unwrap();
    let err = engine
        .upsert_chunks([Chunk::new("c", "text").with_relation("placed_by", " ")])
        .unwrap_err();
    assert!(err.to_string().contains("relations.target"), "{err}");
    let err = engine
        .upsert_rules([Rule::new("r", "c", "a").with_entities((0..300).map(|i| format!("e{i}")))])
        .unwrap_err();
    assert!(err.to_string().contains("entities"), "{err}");
    let parsed: Result<Chunk, _> =
        serde_json::from_str(r#"{"id":"c","content":"x","relations":[{"type":"t"}]}"#);
    assert!(parsed.unwrap_err().to_string().contains("target"));
}

#[test]
fn feedback_weighs_the_graph_leg_like_the_others() {
    let mut config = Config::default();
    config.fusion.feedback = true;
    let engine = Engine::builder().with_config(config).temporary().unwrap();
    engine.upsert_chunks(memory()).unwrap();
    engine.commit().unwrap();
    let request = SearchRequest::chunks("how should we contact the customer of order NW-15692?")
        .with_now(now())
        .with_top_k(3);
    let before = engine.search(&request).unwrap().fusion.graph_weight;
    assert!(before > 0.0);
    for _ in 0..12 {
        let response = engine.search(&request).unwrap();
        assert!(response.hits[0].breakdown.found_by.graph);
        engine.feedback(&response.query_id, false).unwrap();
    }
    let window = engine.feedback_window(ruchedb::DEFAULT_TENANT, ruchedb::Kind::Chunk);
    assert!(
        (window.factors().graph - 0.2).abs() < 1e-9,
        "{:?}",
        window.factors()
    );
    // The window is the chunks': the rules' is untouched.
    assert!(
        engine
            .feedback_window(ruchedb::DEFAULT_TENANT, ruchedb::Kind::Rule)
            .is_empty()
    );
    let after = engine.search(&request).unwrap().fusion.graph_weight;
    assert!(after < before, "{after} < {before}");
}

/// A document only the graph leg returned still gets its BM25: the text leg's top-k
/// left it out, not because it does not match.
#[test]
fn a_graph_only_candidate_gets_its_text_score() {
    let mut chunks: Vec<Chunk> = (0..12)
        .map(|i| Chunk::new(format!("tent-{i:02}"), "tent tent tent repair"))
        .collect();
    chunks.push(Chunk::new(
        "order",
        "Order NW-15699 was placed by CUST-48213.",
    ));
    chunks.push(Chunk::new(
        "pref",
        "CUST-48213 prefers to be contacted by email about anything, a tent included, \
         in the morning and never on weekends or holidays",
    ));
    let engine = Engine::builder()
        .with_embedder_spec(ruchedb::EmbedderSpec::None)
        .temporary()
        .unwrap();
    engine.upsert_chunks(chunks).unwrap();
    engine.commit().unwrap();
    // Each leg's best 5: the text leg's are the order note and four tent notes.
    let request = SearchRequest::chunks("tent for order NW-15699");
    let query = RetrievalQuery::new(&request, None, 5, now());
    let retrieved = engine.candidates(&query).unwrap();
    let pref = retrieved
        .candidates
        .iter()
        .find(|c| c.document.id() == "pref")
        .expect("the preference note is reached through the customer");
    assert!(
        pref.found_by.graph && !pref.found_by.text,
        "{:?}",
        pref.found_by
    );
    assert!(pref.bm25.is_some_and(|bm25| bm25 > 0.0), "{pref:?}");
}

/// With the default selection (no `top_k`), the second hop the graph leg reached comes
/// back with the first: the answer of a two-hop question is the note that shares no
/// word with it but the customer's. A lookup of the same order keeps its note and at
/// most the two it links to best.
#[test]
fn the_default_selection_keeps_both_hops() {
    let on = engine_with(memory(), true);
    for i in 0..6 {
        let request = SearchRequest::chunks(format!(
            "how should we contact the customer of order NW-{}?",
            15_690 + i
        ))
        .with_now(now());
        let response = on.search(&request).unwrap();
        let found: Vec<&str> = response.hits.iter().map(|h| h.id.as_str()).collect();
        let order = format!("order-{i}");
        let pref = format!("pref-{i}");
        assert_eq!(found[0], order, "{found:?}");
        assert!(
            found[..found.len().min(3)].contains(&pref.as_str()),
            "{found:?}"
        );
        let lookup = on
            .search(
                &SearchRequest::chunks(format!("any update on NW-{}?", 15_690 + i)).with_now(now()),
            )
            .unwrap();
        // A lookup: the order's note first, and at most the two notes it links to best.
        let found: Vec<&str> = lookup.hits.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(found[0], order, "{found:?}");
        assert!(found.len() <= 3, "{found:?}");
    }
    // Without the graph leg the preference note is not found.
    let off = engine_with(memory(), false);
    let request = SearchRequest::chunks("how should we contact the customer of order NW-15693?")
        .with_now(now());
    assert!(!ids(&off, &request).contains(&"pref-3".to_string()));
}

/// Customers with three notes each (how to reach them, where parcels go, their language)
/// and an order naming them: what the question asks of the customer shares no word with
/// the note that answers it.
fn customers_with_several_notes() -> Vec<Chunk> {
    let facts = [
        (
            "only answers text messages",
            "has parcels left with the neighbour at number 12",
            "writes in Dutch",
        ),
        (
            "wants a phone call, never an email",
            "collects deliveries from the post office",
            "reads Polish best",
        ),
        (
            "replies on WhatsApp within the hour",
            "gets everything shipped to her office in Ghent",
            "prefers Portuguese",
        ),
        (
            "can be reached through her assistant's inbox",
            "moved to Porto; parcels go there",
            "is more at ease in Spanish",
        ),
    ];
    let mut chunks = Vec::new();
    for (i, (reach, parcels, language)) in facts.iter().enumerate() {
        let customer = format!("CUST-{}", 61_300 + i);
        for (what, text) in [
            ("reach", reach),
            ("parcels", parcels),
            ("language", language),
        ] {
            chunks.push(Chunk::new(
                format!("{what}-{i}"),
                format!("{customer} {text}."),
            ));
        }
        chunks.push(Chunk::new(
            format!("order-{i}"),
            format!(
                "Order NW-{} (a kayak) was bought by {customer}.",
                21_880 + i
            ),
        ));
        // Another order of the same customer: about that order, not about the customer.
        chunks.push(Chunk::new(
            format!("other-order-{i}"),
            format!(
                "Order NW-{} (paddles) was bought by {customer} and is due for a reply.",
                31_880 + i
            ),
        ));
    }
    chunks
}

/// How many of 12 two-hop questions about `customers_with_several_notes` have their
/// answer in the first three hits, and the most hits any of them returned.
fn answered_in_first_three(second_hops: usize, specs: ruchedb::EmbedderSpecs) -> (usize, usize) {
    let mut config = Config::default();
    config.graph.second_hops = second_hops;
    let engine = Engine::builder()
        .with_config(config)
        .with_embedder_specs(specs)
        .temporary()
        .unwrap();
    engine
        .upsert_chunks(customers_with_several_notes())
        .unwrap();
    engine.commit().unwrap();
    let questions = [
        ("who do I notify for NW-{} and how?", "reach"),
        ("where should the replacement for NW-{} be sent?", "parcels"),
        (
            "in which language do I answer the buyer of NW-{}?",
            "language",
        ),
    ];
    let (mut first_three, mut most) = (0, 0);
    for i in 0..4 {
        for (question, answer) in questions {
            let text = question.replace("{}", &(21_880 + i).to_string());
            let found = ids(
                &engine,
                &SearchRequest::chunks(text.as_str()).with_now(now()),
            );
            // The first hop stays first, and nothing of another customer comes back.
            assert_eq!(
                found.first().map(String::as_str),
                Some(format!("order-{i}").as_str()),
                "{text}: {found:?}"
            );
            for id in &found {
                assert!(id.ends_with(&format!("-{i}")), "{text}: {found:?}");
            }
            most = most.max(found.len());
            first_three += usize::from(
                found
                    .iter()
                    .take(3)
                    .any(|id| *id == format!("{answer}-{i}")),
            );
        }
    }
    (first_three, most)
}

/// A second hop is the linked customer's note that answers what the question asks of
/// the customer, measured without the identifiers under all-MiniLM-L6-v2 (loaded for
/// rules by default), whatever embeds the chunks; the customer's other order is not
/// what is asked. Without a transformer, two notes come back rather than one guessed.
#[test]
fn the_second_hop_answers_the_question_beside_the_entitys_other_notes() {
    use ruchedb::{EmbedderSpec, EmbedderSpecs};
    let default = EmbedderSpecs::default;
    // Before the second hops were measured, the one kept was the other order: 0 of 12.
    let (one, most) = answered_in_first_three(1, default());
    assert_eq!((one, most), (12, 2));
    let (two, most) = answered_in_first_three(2, default());
    assert_eq!((two, most), (12, 3));
    let minilm = default().with(ruchedb::Kind::Chunk, EmbedderSpec::MiniLm);
    assert_eq!(answered_in_first_three(1, minilm).0, 12);
    // The static model alone reads the question less well: the second note kept is what
    // holds the answer.
    let plain = || EmbedderSpecs::uniform(EmbedderSpec::StaticBundled);
    let (two, most) = answered_in_first_three(2, plain());
    let (one, _) = answered_in_first_three(1, plain());
    assert!(two >= 8 && two >= one, "two kept {two}, one kept {one}");
    assert!(most <= 3, "{most}");
    // Only what the selection keeps: the first hop alone.
    let (none, most) = answered_in_first_three(0, default());
    assert_eq!((none, most), (0, 1));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..proptest::prelude::ProptestConfig::default() })]

    /// Expansion (the graph leg's hops, the second hops kept with a hit, the turns next
    /// to a relevant one) never returns a chunk of another tenant, or of another context
    /// than the request names, whatever links the memories share across them.
    #[test]
    fn expansion_stays_inside_the_tenant_and_context(
        notes in proptest::collection::vec(
            (0usize..2, 0usize..4, 0usize..4, 0usize..4, 0usize..3, 0i64..90),
            4..40,
        ),
        queries in proptest::collection::vec((0usize..2, 0usize..4, 0usize..4, proptest::bool::ANY), 1..6),
    ) {
        const TENANTS: [&str; 2] = ["a", "b"];
        const CONTEXTS: [Option<&str>; 4] = [Some("u1"), Some("u2"), Some("u3"), None];
        const FORMS: [&str; 3] = [
            "Order ORD-{o} was placed by CUST-{c}.",
            "CUST-{c} only answers text messages.",
            "ORD-{o} and CUST-{c}: the parcel went to the neighbour.",
        ];
        let base = now().unix_millis() - 90 * 60_000;
        let chunks: Vec<Chunk> = notes
            .iter()
            .enumerate()
            .map(|(i, &(tenant, context, order, customer, form, minutes))| {
                let text = FORMS[form]
                    .replace("{o}", &(1_000 + order).to_string())
                    .replace("{c}", &(2_000 + customer).to_string());
                let mut chunk = Chunk::new(format!("n{i:02}"), text)
                    .with_tenant(TENANTS[tenant])
                    .with_created_at(Timestamp::from_unix_millis(base + minutes * 60_000));
                if let Some(context) = CONTEXTS[context] {
                    chunk = chunk.with_context(context);
                }
                chunk
            })
            .collect();
        let engine = Engine::builder().temporary().unwrap();
        engine.upsert_chunks(chunks).unwrap();
        engine.commit().unwrap();
        for (tenant, context, order, top_k) in queries {
            let tenant = TENANTS[tenant];
            let mut request = SearchRequest::chunks(format!(
                "how do I reach the buyer of ORD-{}?",
                1_000 + order
            ))
            .with_tenant(tenant)
            .with_now(now());
            if let Some(context) = CONTEXTS[context] {
                request = request.with_context(context);
            }
            if top_k {
                request = request.with_top_k(10);
            }
            for hit in engine.search(&request).unwrap().hits {
                proptest::prop_assert_eq!(hit.document.tenant_id(), tenant);
                if let Some(context) = CONTEXTS[context] {
                    proptest::prop_assert_eq!(
                        hit.document.as_chunk().unwrap().context_id.as_deref(),
                        Some(context)
                    );
                }
            }
        }
    }
}
