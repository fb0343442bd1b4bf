//! The Milvus backend against a real server: `scripts/test-milvus.sh` starts milvus-lite
//! on 127.0.0.1 and sets `RUCHE_MILVUS_URI`; without it these tests fail (they are never
//! skipped silently).
//!
//! milvus-lite's BM25 values and tie order differ from Milvus's and from tantivy's, so
//! the tests assert ids, ranks, filters and isolation, never BM25 magnitudes.

use std::sync::atomic::{AtomicU32, Ordering};

use ruchedb::rank::search_with;
use ruchedb::retrieve::{RetrievalQuery, Retriever};
use ruchedb::{
    Chunk, Config, EmbedderSpec, EmbedderSpecs, Engine, ErrorKind, Kind, Rule, Scenario, Scope,
    SearchRequest, Timestamp, Tool,
};
use ruchedb_milvus::{MilvusIndex, MilvusOptions};

fn server() -> String {
    std::env::var("RUCHE_MILVUS_URI")
        .expect("RUCHE_MILVUS_URI is not set: run scripts/test-milvus.sh, which starts milvus-lite")
}

/// A fresh index with a unique name (tests run in parallel on one server).
fn fresh(options: MilvusOptions) -> MilvusIndex {
    static N: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "t{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let location = format!("{}/{name}", server());
    MilvusIndex::remove(&location, &options).unwrap();
    MilvusIndex::create(&location, options).unwrap()
}

fn ids(response: &ruchedb::SearchResponse) -> Vec<&str> {
    response.hits.iter().map(|h| h.id.as_str()).collect()
}

fn rules() -> Vec<Rule> {
    vec![
        Rule::new(
            "refund",
            "the customer asks for a refund",
            "check the order, then refund",
        )
        .with_priority(10)
        .with_patterns(["I want my money back", "can I get reimbursed"]),
        Rule::new(
            "vip-refund",
            "a VIP customer asks for a refund",
            "refund at once",
        )
        .with_priority(90)
        .with_scope(Scope::scenario("vip")),
        Rule::new(
            "confirm",
            "the customer confirms the return",
            "send the return label",
        )
        .with_scope(Scope::step("returns", "confirm")),
        Rule::new(
            "lost-card",
            "the customer lost their card",
            "block the card",
        )
        .with_priority(50)
        .with_tags(["cards"]),
        Rule::new("off", "the customer asks for a refund", "never shown").with_enabled(false),
        Rule::new(
            "weather",
            "the user asks about the weather",
            "say we cannot tell",
        )
        .with_priority(100),
    ]
}

#[test]
fn rules_rank_with_both_legs_and_every_scope_filter() {
    let index = fresh(MilvusOptions::default());
    index.upsert_rules(rules()).unwrap();
    index.commit().unwrap();
    assert_eq!(index.count(Kind::Rule, ruchedb::DEFAULT_TENANT).unwrap(), 6);

    let response = index
        .search(&SearchRequest::rules("I want my money back"))
        .unwrap();
    assert_eq!(ids(&response)[0], "refund", "{:?}", ids(&response));
    let top = &response.hits[0].breakdown;
    assert!(top.found_by.text && top.found_by.vector, "{top:?}");
    // Out of scope, disabled, and the high-priority unrelated rule: never returned.
    for id in ["vip-refund", "confirm", "off", "weather"] {
        assert!(
            !ids(&response).contains(&id),
            "{id} in {:?}",
            ids(&response)
        );
    }
    // A scenario admits its rules and the global ones.
    let vip = index
        .search(
            &SearchRequest::rules("refund please")
                .with_scenario("vip")
                .with_top_k(5),
        )
        .unwrap();
    assert!(
        ids(&vip).contains(&"vip-refund") && ids(&vip).contains(&"refund"),
        "{:?}",
        ids(&vip)
    );
    let step = index
        .search(
            &SearchRequest::rules("yes I confirm the return")
                .with_scenario("returns")
                .with_step("confirm")
                .with_top_k(5),
        )
        .unwrap();
    assert_eq!(ids(&step)[0], "confirm", "{:?}", ids(&step));
    // Tags.
    let tagged = index
        .search(
            &SearchRequest::rules("my card is gone")
                .with_tag("cards")
                .with_top_k(5),
        )
        .unwrap();
    assert_eq!(ids(&tagged), ["lost-card"]);
    // Nothing about the query: nothing returned, whatever the priorities.
    let none = index
        .search(&SearchRequest::rules("xyzzy qwerty plugh"))
        .unwrap();
    assert!(none.hits.is_empty(), "{:?}", ids(&none));
}

#[test]
fn chunks_keep_filters_expiry_and_identifiers() {
    let index = fresh(MilvusOptions::default());
    let now = Timestamp::from_unix_millis(1_790_000_000_000);
    let day = 86_400_000;
    let mut chunks: Vec<Chunk> = (0..60)
        .map(|i| {
            Chunk::new(
                format!("n{i:02}"),
                format!(
                    "Order NW-{} was shipped to the customer in {} parcels",
                    15_600 + i,
                    i % 3 + 1
                ),
            )
            .with_importance((i % 10) as u8 + 1)
            .with_created_at(Timestamp::from_unix_millis(
                now.unix_millis() - i as i64 * day,
            ))
            .with_context(if i % 2 == 0 { "u1" } else { "u2" })
        })
        .collect();
    chunks.push(
        Chunk::new("otp", "The one-time code for the order is 4821")
            .with_expires_at(Timestamp::from_unix_millis(now.unix_millis() - day)),
    );
    chunks.push(
        Chunk::new("pref", "The customer prefers email over phone calls")
            .with_metadata("channel", serde_json::json!("email"))
            .with_metadata("turn", serde_json::json!(3)),
    );
    index.upsert_chunks(chunks).unwrap();
    index.commit().unwrap();

    // An identifier: the note holding it first, whatever importance and recency say.
    let request = SearchRequest::chunks("any update on NW-15642?").with_now(now);
    let response = index.search(&request).unwrap();
    assert_eq!(ids(&response)[0], "n42", "{:?}", ids(&response));
    assert_eq!(response.hits[0].breakdown.codes_matched, 1);

    // Context.
    let u2 = index
        .search(
            &SearchRequest::chunks("order shipped parcels")
                .with_context("u2")
                .with_now(now)
                .with_top_k(20),
        )
        .unwrap();
    assert!(!u2.hits.is_empty());
    assert!(
        u2.hits
            .iter()
            .all(|h| h.document.as_chunk().unwrap().context_id.as_deref() == Some("u2"))
    );
    // Expired chunks never come back.
    let code = index
        .search(
            &SearchRequest::chunks("one-time code for the order")
                .with_now(now)
                .with_top_k(10),
        )
        .unwrap();
    assert!(!ids(&code).contains(&"otp"), "{:?}", ids(&code));
    // Metadata filters, a string and a number.
    for (key, value) in [("channel", "email"), ("turn", "3")] {
        let filtered = index
            .search(
                &SearchRequest::chunks("how to contact the customer")
                    .with_filter(key, value)
                    .with_now(now)
                    .with_top_k(10),
            )
            .unwrap();
        assert_eq!(ids(&filtered), ["pref"], "{key}={value}");
    }
}

fn tenant_isolation(options: MilvusOptions) {
    let index = fresh(options);
    for (tenant, text) in [
        ("a", "refund the order of tenant a"),
        ("b", "refund the order of tenant b"),
    ] {
        index
            .upsert_rules(
                (0..5).map(|i| {
                    Rule::new(format!("r{i}"), text, format!("act {i}")).with_tenant(tenant)
                }),
            )
            .unwrap();
        index
            .upsert_chunks((0..5).map(|i| Chunk::new(format!("c{i}"), text).with_tenant(tenant)))
            .unwrap();
    }
    index.commit().unwrap();
    for tenant in ["a", "b"] {
        for request in [
            SearchRequest::rules("refund the order of tenant b")
                .with_tenant(tenant)
                .with_top_k(20),
            SearchRequest::chunks("refund the order of tenant a")
                .with_tenant(tenant)
                .with_top_k(20),
        ] {
            let response = index.search(&request).unwrap();
            assert_eq!(response.hits.len(), 5, "{tenant}");
            assert!(
                response
                    .hits
                    .iter()
                    .all(|h| h.document.tenant_id() == tenant)
            );
            // Each leg alone stays in the tenant too.
            assert!(
                response.leg_candidates.iter().all(|&n| n <= 5),
                "{:?}",
                response.leg_candidates
            );
        }
        assert_eq!(index.count(Kind::Chunk, tenant).unwrap(), 5);
    }
    assert_eq!(index.delete_tenant("a").unwrap(), 10);
    assert_eq!(index.count(Kind::Rule, "a").unwrap(), 0);
    assert_eq!(index.count(Kind::Rule, "b").unwrap(), 5);
    let gone = index
        .search(&SearchRequest::chunks("refund the order").with_tenant("a"))
        .unwrap();
    assert!(gone.hits.is_empty());
}

#[test]
fn tenants_never_see_each_other_in_shared_collections() {
    tenant_isolation(MilvusOptions::default());
}

#[test]
fn tenants_never_see_each_other_with_collections_per_tenant() {
    let mut options = MilvusOptions::default();
    options.collection_per_tenant = true;
    tenant_isolation(options);
}

#[test]
fn upserts_replace_and_deletes_remove_in_both_legs() {
    let index = fresh(MilvusOptions::default());
    index
        .upsert_rules([
            Rule::new("r", "the customer asks about zebra crossings", "explain")
                .with_patterns(["where are the zebra stripes", "pedestrian crossing rules"]),
        ])
        .unwrap();
    index.commit().unwrap();
    let first = index
        .search(&SearchRequest::rules("pedestrian crossing rules"))
        .unwrap();
    assert_eq!(ids(&first), ["r"]);
    assert_eq!(
        first.hits[0].breakdown.vector_match,
        Some(ruchedb::query::VectorMatch::Pattern(1))
    );
    // A new version without patterns: the old pattern rows are gone.
    index
        .upsert_rules([Rule::new(
            "r",
            "the customer asks about opening hours",
            "give the hours",
        )])
        .unwrap();
    index.commit().unwrap();
    let hours = index
        .search(&SearchRequest::rules("what are your opening hours"))
        .unwrap();
    assert_eq!(ids(&hours), ["r"]);
    assert_eq!(
        hours.hits[0].breakdown.vector_match,
        Some(ruchedb::query::VectorMatch::Text)
    );
    let old = index
        .search(&SearchRequest::rules("pedestrian crossing rules"))
        .unwrap();
    assert!(old.hits.is_empty(), "{:?}", ids(&old));
    // Delete.
    index.delete(Kind::Rule, ruchedb::DEFAULT_TENANT, "r");
    assert_eq!(
        index.count(Kind::Rule, ruchedb::DEFAULT_TENANT).unwrap(),
        1,
        "buffered"
    );
    index.commit().unwrap();
    assert_eq!(index.count(Kind::Rule, ruchedb::DEFAULT_TENANT).unwrap(), 0);
    assert!(
        index
            .search(&SearchRequest::rules("opening hours"))
            .unwrap()
            .hits
            .is_empty()
    );
    // Reopened: the same embedder and data.
    let reopened =
        MilvusIndex::open(&index.location().to_string(), MilvusOptions::default()).unwrap();
    assert_eq!(
        reopened.count(Kind::Rule, ruchedb::DEFAULT_TENANT).unwrap(),
        0
    );
}

#[test]
fn each_leg_runs_alone_and_ranking_is_ruchedbs_own() {
    let mut options = MilvusOptions::default();
    options.embedders = EmbedderSpecs::uniform(EmbedderSpec::None);
    options.dimensions = Some(4);
    let index = fresh(options);
    let chunk = |id: &str, text: &str, v: [f32; 4]| Chunk::new(id, text).with_embedding(v.to_vec());
    index
        .upsert_chunks([
            chunk("a", "apples and pears", [1.0, 0.0, 0.0, 0.0]),
            chunk("b", "bananas", [0.0, 1.0, 0.0, 0.0]),
            chunk("c", "cherries and apples", [0.7, 0.7, 0.0, 0.0]),
        ])
        .unwrap();
    index.commit().unwrap();
    // Text only (no vector): found by BM25 alone.
    let text = index
        .search(&SearchRequest::chunks("apples").with_top_k(5))
        .unwrap();
    let mut found = ids(&text);
    found.sort();
    assert_eq!(found, ["a", "c"]);
    assert!(
        text.hits
            .iter()
            .all(|h| h.breakdown.found_by.text && !h.breakdown.found_by.vector)
    );
    // Vector only.
    let vector = index
        .search(
            &SearchRequest::chunks("")
                .with_embedding(vec![0.0, 1.0, 0.0, 0.0])
                .with_top_k(1),
        )
        .unwrap();
    assert_eq!(ids(&vector), ["b"]);
    assert!(vector.hits[0].breakdown.found_by.vector && !vector.hits[0].breakdown.found_by.text);
    // The pipeline over the remote candidates is what `search` returned, and its hits
    // are among the candidates both legs returned.
    let request = SearchRequest::chunks("apples")
        .with_embedding(vec![1.0, 0.1, 0.0, 0.0])
        .with_top_k(3);
    let response = index.search(&request).unwrap();
    let mut v = vec![1.0f32, 0.1, 0.0, 0.0];
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    let query = RetrievalQuery::new(&request, Some(&v), 30, Timestamp::now());
    let retrieved = index.candidates(&query).unwrap();
    let candidates: Vec<&str> = retrieved.candidates.iter().map(|c| c.id()).collect();
    assert!(
        ids(&response).iter().all(|id| candidates.contains(id)),
        "{candidates:?}"
    );
    let again = search_with(&index, &Config::default(), &request, None, None).unwrap();
    assert_eq!(ids(&again), ids(&response));
    assert_eq!(ids(&response)[0], "a");
}

#[test]
fn a_scifact_subset_ranks_as_the_local_index_does() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let read = |name: &str| -> Vec<serde_json::Value> {
        std::fs::read_to_string(root.join(name))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let docs = read("scifact_docs.jsonl");
    let queries = read("scifact_queries.jsonl");
    let vector = |v: &serde_json::Value| -> Vec<f32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect()
    };
    let chunks: Vec<Chunk> = docs
        .iter()
        .map(|d| {
            Chunk::new(d["id"].as_str().unwrap(), d["content"].as_str().unwrap())
                .with_embedding(vector(&d["embedding"]))
        })
        .collect();
    let local = Engine::builder().temporary().unwrap();
    local.upsert_chunks(chunks.clone()).unwrap();
    local.commit().unwrap();
    let mut options = MilvusOptions::default();
    options.embedders = EmbedderSpecs::uniform(EmbedderSpec::None);
    options.dimensions = Some(384);
    let remote = fresh(options);
    remote.upsert_chunks(chunks).unwrap();
    remote.commit().unwrap();

    let (mut overlap, mut same_top, mut ndcg_local, mut ndcg_remote) = (0.0, 0, 0.0, 0.0);
    for q in &queries {
        let request = SearchRequest::chunks(q["text"].as_str().unwrap())
            .with_embedding(vector(&q["embedding"]))
            .with_top_k(10);
        let a: Vec<String> = local
            .search(&request)
            .unwrap()
            .hits
            .into_iter()
            .map(|h| h.id)
            .collect();
        let b: Vec<String> = remote
            .search(&request)
            .unwrap()
            .hits
            .into_iter()
            .map(|h| h.id)
            .collect();
        overlap += a.iter().filter(|id| b.contains(id)).count() as f64 / a.len().max(1) as f64;
        same_top += usize::from(a.first() == b.first());
        let relevant: Vec<&str> = q["relevant"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        let ndcg = |ids: &[String]| {
            let dcg: f64 = ids
                .iter()
                .enumerate()
                .filter(|(_, id)| relevant.contains(&id.as_str()))
                .map(|(i, _)| 1.0 / (i as f64 + 2.0).log2())
                .sum();
            let ideal: f64 = (0..relevant.len().min(10))
                .map(|i| 1.0 / (i as f64 + 2.0).log2())
                .sum();
            dcg / ideal
        };
        ndcg_local += ndcg(&a);
        ndcg_remote += ndcg(&b);
    }
    let n = queries.len() as f64;
    println!(
        "scifact subset ({} docs, {} queries): top-10 overlap {:.3}, same first hit {:.3}, nDCG@10 local {:.3} milvus {:.3}",
        docs.len(),
        queries.len(),
        overlap / n,
        same_top as f64 / n,
        ndcg_local / n,
        ndcg_remote / n
    );
    assert!(overlap / n >= 0.7, "overlap {}", overlap / n);
    assert!(
        same_top as f64 / n >= 0.7,
        "same top {}",
        same_top as f64 / n
    );
    assert!(ndcg_remote / n >= ndcg_local / n - 0.05);
}

#[test]
fn a_server_that_is_down_is_a_typed_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut options = MilvusOptions::default();
    options.connect_timeout = std::time::Duration::from_secs(1);
    let started = std::time::Instant::now();
    let err = MilvusIndex::open(&format!("milvus://127.0.0.1:{port}/x"), options).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Unavailable { .. }),
        "{err:?}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let missing = MilvusIndex::open(
        &format!("{}/no_such_index", server()),
        MilvusOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(missing.kind(), ErrorKind::IndexNotFound { .. }),
        "{missing:?}"
    );
}

#[test]
fn scenarios_and_tools_rank_behind_the_gate_with_their_filters() {
    let index = fresh(MilvusOptions::default());
    index
        .upsert(vec![
            Scenario::new(
                "returns",
                "Returns and refunds",
                "The customer wants to send an item back or get their money back",
            )
            .with_examples([
                "I want to return the boots I bought",
                "how do I get a refund?",
            ])
            .into(),
            Scenario::new(
                "damaged_item",
                "Damaged delivery",
                "An item arrived broken, damaged in transit or defective",
            )
            .with_examples(["my tent arrived with a broken pole"])
            .into(),
            Scenario::new("retired", "Old flow", "Return an item by fax")
                .with_examples(["I want to return my boots by fax"])
                .with_enabled(false)
                .into(),
            Tool::new("track", "track_order", "Look up where a shipped order is")
                .with_examples(["where is my package?"])
                .into(),
            Tool::new(
                "reset",
                "send_password_reset",
                "Email a password reset link",
            )
            .with_examples(["I forgot my password"])
            .with_agent("web-bot")
            .into(),
        ])
        .unwrap();
    index.commit().unwrap();
    let response = index
        .search(&SearchRequest::scenarios(
            "my new tent came with a snapped pole",
        ))
        .unwrap();
    assert_eq!(ids(&response), ["damaged_item"]);
    let response = index
        .search(&SearchRequest::scenarios(
            "who won the football game last night",
        ))
        .unwrap();
    assert!(response.hits.is_empty(), "{:?}", ids(&response));
    let fax = index
        .search(
            &SearchRequest::scenarios("I want to return my boots by fax").with_min_relevance(0.0),
        )
        .unwrap();
    assert!(!ids(&fax).contains(&"retired"), "{:?}", ids(&fax));
    let tools = index
        .search(&SearchRequest::tools("where is my package?"))
        .unwrap();
    assert_eq!(ids(&tools), ["track"]);
    for (agent, expected) in [("web-bot", true), ("voice-bot", false)] {
        let response = index
            .search(
                &SearchRequest::tools("I forgot my password")
                    .with_agent(agent)
                    .with_min_relevance(0.0),
            )
            .unwrap();
        assert_eq!(ids(&response).contains(&"reset"), expected, "{agent}");
    }
    assert_eq!(index.count(Kind::Scenario, "default").unwrap(), 3);
    assert_eq!(index.count(Kind::Tool, "default").unwrap(), 2);
}

/// Rules applied whatever their relevance ([`ruchedb::Apply`]) come first from Milvus as
/// from the local index: always, by a named file, by name; and never from the legs.
#[test]
fn rules_from_files_apply_always_by_file_and_by_name() {
    let index = fresh(MilvusOptions::default());
    let mut all = rules();
    all.push(
        Rule::new("sign-off", "sign off", "")
            .with_apply(ruchedb::Apply::Always)
            .with_body("End with your first name."),
    );
    all.push(
        Rule::new("python", "Python style", "")
            .with_apply(ruchedb::Apply::Files)
            .with_globs(["*.py"])
            .with_body("Format with black."),
    );
    all.push(
        Rule::new("release", "release checklist", "bump, tag, publish")
            .with_apply(ruchedb::Apply::Manual),
    );
    index.upsert_rules(all).unwrap();
    index.commit().unwrap();
    let plain = index
        .search(&SearchRequest::rules("xyzzy qwerty plugh"))
        .unwrap();
    assert_eq!(ids(&plain), ["sign-off"]);
    let refund = index
        .search(&SearchRequest::rules("I want my money back").with_file("app/main.py"))
        .unwrap();
    assert_eq!(
        ids(&refund)[..3],
        ["sign-off", "python", "refund"],
        "{:?}",
        ids(&refund)
    );
    let named = index
        .search(&SearchRequest::rules("follow @release now"))
        .unwrap();
    assert_eq!(ids(&named), ["sign-off", "release"], "{:?}", ids(&named));
    let source = index
        .search(&SearchRequest::rules("python style").with_top_k(10))
        .unwrap();
    assert!(!ids(&source).contains(&"python"), "{:?}", ids(&source));
}
