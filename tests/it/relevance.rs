//! Relevance first: the gate abstains when nothing matches, exact identifiers come first,
//! and priority, scope, importance and recency only order what passes the gate.

#[path = "../common/identifiers.rs"]
mod identifiers;

use proptest::prelude::*;
use ruchedb::relevance::GateDecision;
use ruchedb::{
    Chunk, Config, Document, Engine, ErrorKind, Hit, Rule, Scope, SearchRequest, Timestamp,
};

use crate::common::ids;

fn sample_engine() -> Engine {
    let engine = Engine::builder().temporary().unwrap();
    engine.upsert_rules(crate::sample::rules()).unwrap();
    engine.commit().unwrap();
    engine
}

#[test]
fn out_of_scope_messages_get_no_rule_and_say_why() {
    let engine = sample_engine();
    for text in [
        "what is the weather tomorrow",
        "ok",
        "xyzzy qwerty plugh",
        "1234",
        "who won the football game last night",
    ] {
        let response = engine.search(&SearchRequest::rules(text)).unwrap();
        assert!(
            response.hits.is_empty(),
            "{text}: {:?}",
            ids(&response.hits)
        );
        let reason = response.gate.abstention_reason().expect("a reason");
        assert!(reason.contains("relevance"), "{text}: {reason}");
        let (_, best) = response.gate.best_rejected.clone().expect("a near miss");
        assert!(best < response.gate.min_relevance);
    }
    // The same index answers what it is about, with the pattern that matched.
    let response = engine
        .search(&SearchRequest::rules("I want my money back"))
        .unwrap();
    assert_eq!(ids(&response.hits)[0], "refund-request");
    assert_eq!(response.hits[0].breakdown.gate, GateDecision::Relevant);
    assert!(response.gate.abstention_reason().is_none());
}

#[test]
fn the_gate_can_be_turned_off_and_top_k_then_returns_exactly_k() {
    let engine = sample_engine();
    let request = SearchRequest::rules("what is the weather tomorrow").with_top_k(5);
    assert!(engine.search(&request).unwrap().hits.is_empty());
    let open = engine.search(&request.with_min_relevance(0.0)).unwrap();
    assert_eq!(open.hits.len(), 5);
    assert!(
        open.hits
            .iter()
            .all(|h| h.breakdown.gate == GateDecision::Open)
    );
}

#[test]
fn min_relevance_is_validated_in_requests_and_config() {
    let engine = sample_engine();
    for bad in [-0.1, 1.5, f64::NAN] {
        let err = engine
            .search(&SearchRequest::rules("refund").with_min_relevance(bad))
            .unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::InvalidInput { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("min_relevance"), "{err}");
    }
    let err = Config::from_toml("[relevance.rules]\nmin_relevance = 2.0\n").unwrap_err();
    let ErrorKind::InvalidConfig { key, .. } = err.kind() else {
        panic!("{err}")
    };
    assert_eq!(key, "relevance.rules.min_relevance");
}

/// A rule set where priorities say nothing about the message.
fn intents(priorities: &[i32; 4]) -> Vec<Rule> {
    vec![
        Rule::new("refund", "the customer wants a refund", "start the refund")
            .with_priority(priorities[0])
            .with_patterns(["I want my money back", "please refund my order"]),
        Rule::new(
            "shipping",
            "the customer asks where the parcel is",
            "track it",
        )
        .with_priority(priorities[1])
        .with_patterns(["where is my package", "my parcel has not arrived"]),
        Rule::new(
            "password",
            "the customer cannot log in",
            "send a reset link",
        )
        .with_priority(priorities[2])
        .with_patterns(["I forgot my password", "I can't sign in"]),
        Rule::new(
            "cancel",
            "the customer wants to cancel the subscription",
            "confirm the cancellation",
        )
        .with_priority(priorities[3])
        .with_patterns(["stop my subscription", "cancel my plan please"]),
    ]
}

#[test]
fn a_relevant_rule_of_low_priority_beats_an_irrelevant_one_of_high_priority() {
    let engine = Engine::builder().temporary().unwrap();
    engine.upsert_rules(intents(&[10, 90, 95, 100])).unwrap();
    engine.commit().unwrap();
    for (text, expected) in [
        ("can you refund this order? I want my money back", "refund"),
        ("where is my package, it is late", "shipping"),
        ("I forgot my password again", "password"),
    ] {
        let response = engine.search(&SearchRequest::rules(text)).unwrap();
        assert_eq!(ids(&response.hits).first(), Some(&expected), "{text}");
    }
}

/// The ids a search returns, as a set, and whether each passed the gate.
fn hit_set(hits: &[Hit]) -> Vec<String> {
    let mut ids: Vec<String> = hits.iter().map(|h| h.id.clone()).collect();
    ids.sort();
    ids
}

const QUERIES: &[&str] = &[
    "I want my money back",
    "where is my parcel",
    "cannot sign in to my account",
    "cancel it",
    "what is the weather tomorrow",
    "refund the package",
    "hello",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Priority and scope never decide *whether* a rule is returned, only the order of
    /// rules that pass the gate: the same query returns the same set of rules whatever the
    /// priorities and scopes, and every hit passed the gate.
    #[test]
    fn priority_and_scope_never_lift_a_rule_past_the_gate(
        a in prop::array::uniform4(0i32..=100),
        b in prop::array::uniform4(0i32..=100),
        scoped in prop::array::uniform4(any::<bool>()),
    ) {
        let build = |priorities: &[i32; 4], scoped: Option<&[bool; 4]>| {
            let engine = Engine::builder().temporary().unwrap();
            let rules = intents(priorities).into_iter().enumerate().map(|(i, rule)| {
                match scoped {
                    Some(s) if s[i] => rule.with_scope(Scope::step("flow", "now")),
                    _ => rule,
                }
            });
            engine.upsert_rules(rules).unwrap();
            engine.commit().unwrap();
            engine
        };
        let first = build(&a, None);
        let second = build(&b, Some(&scoped));
        for text in QUERIES {
            let request = SearchRequest::rules(*text).with_scenario("flow").with_step("now").with_top_k(10);
            let one = first.search(&request).unwrap();
            let two = second.search(&request).unwrap();
            prop_assert_eq!(hit_set(&one.hits), hit_set(&two.hits), "{}", text);
            for hit in one.hits.iter().chain(&two.hits) {
                let relevance = hit.breakdown.relevance.unwrap();
                prop_assert!(relevance >= one.gate.min_relevance, "{} {}", hit.id, relevance);
            }
        }
    }

    /// The same for chunks: importance and recency order what passes the gate.
    #[test]
    fn importance_and_recency_never_lift_a_chunk_past_the_gate(
        importance in prop::array::uniform6(1u8..=10),
        age_days in prop::array::uniform6(0i64..400),
    ) {
        let now: Timestamp = "2026-11-21T12:00:00Z".parse().unwrap();
        let texts = [
            "Customer prefers to be contacted by email, never by phone.",
            "The replacement tent was shipped on Monday with UPS.",
            "Refund of the duplicate charge was issued to the card.",
            "Customer asked about the warranty of the hiking boots.",
            "Promised a callback tomorrow between two and four.",
            "Customer is allergic to wool and wants synthetic socks.",
        ];
        let build = |weighted: bool| {
            let engine = Engine::builder().temporary().unwrap();
            engine.upsert_chunks(texts.iter().enumerate().map(|(i, text)| {
                let chunk = Chunk::new(format!("c{i}"), *text);
                if weighted {
                    chunk
                        .with_importance(importance[i])
                        .with_created_at(Timestamp::from_unix_millis(
                            now.unix_millis() - age_days[i] * 86_400_000,
                        ))
                } else {
                    chunk
                }
            })).unwrap();
            engine.commit().unwrap();
            engine
        };
        let (plain, weighted) = (build(false), build(true));
        for text in ["how should we contact the customer", "where is the tent", "weather on mars", "refund"] {
            let request = SearchRequest::chunks(text).with_now(now).with_top_k(10);
            let one = plain.search(&request).unwrap();
            let two = weighted.search(&request).unwrap();
            prop_assert_eq!(hit_set(&one.hits), hit_set(&two.hits), "{}", text);
        }
    }
}

fn contains(hit: &Hit, identifier: &str) -> bool {
    match hit.document.as_ref() {
        Document::Chunk(chunk) => chunk.content.contains(identifier),
        _ => false,
    }
}

/// Notes that name order numbers, tickets, SKUs, lots and error codes, with look-alikes
/// one digit off, random importance and dates: the note that contains the identifier
/// asked about comes first, and no note without it outranks one with it.
#[test]
fn exact_identifiers_come_first_whatever_importance_and_recency() {
    let (notes, queries) = identifiers::generate(3_000, 150, 21);
    let engine = Engine::builder().temporary().unwrap();
    engine
        .upsert_chunks(notes.iter().map(|note| {
            Chunk::new(&note.id, &note.content)
                .with_importance(note.importance)
                .with_created_at(Timestamp::from_unix_millis(note.created_at * 1000))
                .with_context(&note.context_id)
        }))
        .unwrap();
    engine.commit().unwrap();
    let now: Timestamp = identifiers::NOW.parse().unwrap();
    for q in &queries {
        let response = engine
            .search(&SearchRequest::chunks(&q.text).with_now(now).with_top_k(10))
            .unwrap();
        assert!(
            response
                .hits
                .first()
                .is_some_and(|h| contains(h, &q.identifier)),
            "{}: {:?}",
            q.text,
            ids(&response.hits)
        );
        let first_without = response
            .hits
            .iter()
            .position(|h| !contains(h, &q.identifier))
            .unwrap_or(response.hits.len());
        assert!(
            response.hits[first_without..]
                .iter()
                .all(|h| !contains(h, &q.identifier)),
            "{}: a note without the identifier outranks one with it",
            q.text
        );
        assert_eq!(response.hits[0].breakdown.gate, GateDecision::ExactCode);
        // The default selection keeps the notes that name it, and the best notes they
        // link to (the graph leg's second hops), nothing else.
        let selected = engine
            .search(&SearchRequest::chunks(&q.text).with_now(now))
            .unwrap();
        assert!(
            selected
                .hits
                .first()
                .is_some_and(|h| contains(h, &q.identifier)),
            "{}: {:?}",
            q.text,
            ids(&selected.hits)
        );
        let naming: Vec<&str> = selected
            .hits
            .iter()
            .filter(|h| contains(h, &q.identifier))
            .map(|h| h.id.as_str())
            .collect();
        let mut seconds = std::collections::HashMap::new();
        for hit in selected.hits.iter().filter(|h| !contains(h, &q.identifier)) {
            let via = hit
                .breakdown
                .graph_path
                .as_ref()
                .and_then(|p| p.via.as_ref())
                .map(|(via, _)| via.as_str());
            assert!(
                via.is_some_and(|via| naming.contains(&via)),
                "{}: {} is neither a note naming it nor one reached through one",
                q.text,
                hit.id
            );
            *seconds.entry(via).or_insert(0) += 1;
        }
        // Up to two second hops, as long as the hits number at most three (always one).
        let second_hops: usize = seconds.values().sum();
        assert!(
            second_hops <= 3usize.saturating_sub(naming.len()).max(1),
            "{}: {naming:?} {seconds:?}",
            q.text
        );
    }
}

#[test]
fn a_look_alike_identifier_is_not_a_match() {
    let engine = Engine::builder().temporary().unwrap();
    engine
        .upsert_chunks([
            Chunk::new("exact", "Order NW-15699 shipped late.").with_importance(1),
            Chunk::new(
                "look-alike",
                "Order NW-15609 shipped late, a refund is due.",
            )
            .with_importance(10)
            .with_created_at("2026-11-21T11:00:00Z".parse().unwrap()),
        ])
        .unwrap();
    engine.commit().unwrap();
    let response = engine
        .search(
            &SearchRequest::chunks("any update on NW-15699")
                .with_now("2026-11-21T12:00:00Z".parse().unwrap())
                .with_top_k(5),
        )
        .unwrap();
    assert_eq!(ids(&response.hits)[0], "exact");
    assert_eq!(response.hits[0].breakdown.codes_matched, 1);
    assert_eq!(response.gate.codes, ["nw-15699"]);
    if let Some(other) = response.hits.get(1) {
        assert_eq!(other.breakdown.codes_matched, 0);
        assert!(other.score < response.hits[0].score);
    }
}

/// Six card and account rules of a bank's agent, five example messages each (a fixture
/// of our own).
fn bank_rules() -> Vec<Rule> {
    let rule = |id: &str, condition: &str, patterns: [&str; 5]| {
        Rule::new(id, condition, format!("handle {id}")).with_patterns(patterns)
    };
    vec![
        rule(
            "card_arrival",
            "the customer asks when their new card will arrive",
            [
                "when will my new card arrive?",
                "my card still hasn't come in the post",
                "how long does card delivery take?",
                "I ordered a card last week and it's not here yet",
                "is my card on its way?",
            ],
        ),
        rule(
            "activate_card",
            "the customer wants to activate a card",
            [
                "how do I activate my new card?",
                "my card came, how do I turn it on?",
                "activation of the card isn't working",
                "where do I activate the card?",
                "I got the card, what now to start using it?",
            ],
        ),
        rule(
            "change_pin",
            "the customer wants to change their PIN",
            [
                "how can I change my PIN?",
                "I want a different PIN code",
                "can I reset my card PIN?",
                "where do I update my PIN number?",
                "I forgot my PIN, can I set a new one?",
            ],
        ),
        rule(
            "lost_card",
            "the customer lost their card or it was stolen",
            [
                "I lost my card",
                "my wallet was stolen with my card in it",
                "I can't find my card anywhere",
                "someone stole my bank card",
                "my card is missing, please block it",
            ],
        ),
        rule(
            "top_up",
            "the customer wants to add money to the account",
            [
                "how do I top up my account?",
                "I want to add money",
                "can I top up with a bank transfer?",
                "what are the ways to put money in?",
                "adding funds to my balance",
            ],
        ),
        rule(
            "exchange_rate",
            "the customer asks about exchange rates",
            [
                "what exchange rate do you use?",
                "why was the rate different from Google?",
                "how are currencies converted?",
                "what's the conversion rate for euros?",
                "is there a markup on the exchange rate?",
            ],
        ),
    ]
}

/// Near misses: requests in the agent's own domain that no rule covers (closing the
/// account, a declined payment, a second card) get no rule, and explain says why (the
/// evidence and the threshold), while paraphrases of covered requests get their rule.
/// A two-term calibration (the best cosine and the coverage, what a configured
/// calibration still uses) gives the cousins a rule: the background is what refuses them.
#[test]
fn a_near_miss_of_a_covered_rule_gets_no_rule() {
    let engine = Engine::builder().temporary().unwrap();
    engine.upsert_rules(bank_rules()).unwrap();
    engine.commit().unwrap();
    for (text, expected) in [
        ("my card hasn't arrived yet, where is it?", "card_arrival"),
        (
            "how do I switch on the card I just received?",
            "activate_card",
        ),
        ("I'd like a new PIN please", "change_pin"),
    ] {
        let response = engine.search(&SearchRequest::rules(text)).unwrap();
        assert_eq!(ids(&response.hits).first(), Some(&expected), "{text}");
    }
    let near_misses = [
        "how do I close my account?",
        "my card payment was declined at the shop, why?",
        "can I have a second card for my partner?",
    ];
    for text in near_misses {
        let response = engine.search(&SearchRequest::rules(text)).unwrap();
        assert!(
            response.hits.is_empty(),
            "{text}: {:?}",
            ids(&response.hits)
        );
        let reason = response.gate.abstention_reason().unwrap();
        assert!(
            reason.contains("< 0.500") && reason.contains("closeness to the whole catalog"),
            "{reason}"
        );
        assert!(response.gate.background.is_some());
    }
    // The two-term form (a calibration of the user's: the MiniLM one of rules with
    // patterns without the background) answers a cousin.
    let mut config = Config::default();
    config.relevance.rules.calibration =
        Some(ruchedb::relevance::Calibration::new(8.31, 0.56, -4.65));
    let two_terms = Engine::builder().with_config(config).temporary().unwrap();
    two_terms.upsert_rules(bank_rules()).unwrap();
    two_terms.commit().unwrap();
    let answered = near_misses
        .iter()
        .filter(|text| {
            !two_terms
                .search(&SearchRequest::rules(**text))
                .unwrap()
                .hits
                .is_empty()
        })
        .count();
    assert!(answered >= 1, "{answered}");
}

/// A memory search naming an identifier that no note holds is not answered by notes that
/// share none of its other words (another customer's note, however close its vector) or
/// that name another identifier of its sort (another order's note), and still by a
/// general note that shares its words.
#[test]
fn an_unknown_identifier_gets_no_stranger_s_note() {
    let engine = Engine::builder().temporary().unwrap();
    engine
        .upsert_chunks([
            Chunk::new("a", "ACC761-A wants a call before any change, no emails."),
            Chunk::new("b", "ACC681-A wants a call before any change, no emails."),
            Chunk::new("c", "Order NW-15699 shipped late."),
            Chunk::new("policy", "The return window is 30 days from delivery."),
        ])
        .unwrap();
    engine.commit().unwrap();
    let response = engine
        .search(&SearchRequest::chunks("any update on NW-48283?"))
        .unwrap();
    assert!(response.hits.is_empty(), "{:?}", ids(&response.hits));
    assert!(response.gate.unknown_codes);
    let reason = response.gate.abstention_reason().unwrap_or_default();
    assert!(reason.contains("nw-48283"), "{reason}");
    // Another order's note that shares words: about another order.
    let response = engine
        .search(&SearchRequest::chunks("has order NW-48283 shipped late?"))
        .unwrap();
    assert!(response.hits.is_empty(), "{:?}", ids(&response.hits));
    // Another word of the query in a general note: it answers.
    let response = engine
        .search(&SearchRequest::chunks(
            "what is the return window for order NW-48283?",
        ))
        .unwrap();
    assert_eq!(ids(&response.hits).first().copied(), Some("policy"));
    // A known identifier: its note.
    let response = engine
        .search(&SearchRequest::chunks("any update on NW-15699?"))
        .unwrap();
    assert_eq!(ids(&response.hits).first().copied(), Some("c"));
    assert!(!response.gate.unknown_codes);
}

/// A message that says two things gets the rules of each: the safety rule of its second
/// part, which the whole message's vector (mostly about the parcel) does not reach,
/// after whatever the whole message passes; with `rule_parts` off it is refused.
#[test]
fn each_part_of_a_message_reaches_its_own_rule() {
    let message = "my parcel is late again and honestly I just want to end my life";
    let engine = sample_engine();
    let response = engine.search(&SearchRequest::rules(message)).unwrap();
    assert!(
        ids(&response.hits).contains(&"safety-self-harm"),
        "{:?}",
        ids(&response.hits)
    );
    let mut config = Config::default();
    config.pipeline.retrieval.rule_parts = false;
    let whole_only = Engine::builder().with_config(config).temporary().unwrap();
    whole_only.upsert_rules(crate::sample::rules()).unwrap();
    whole_only.commit().unwrap();
    let response = whole_only.search(&SearchRequest::rules(message)).unwrap();
    assert!(!ids(&response.hits).contains(&"safety-self-harm"));
    // A message about nothing the rules cover gets nothing from its parts either.
    let response = engine
        .search(&SearchRequest::rules(
            "the weather is lovely today. my cat sleeps on the sofa all afternoon",
        ))
        .unwrap();
    assert!(response.hits.is_empty(), "{:?}", ids(&response.hits));
}
