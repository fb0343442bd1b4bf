//! One call per turn: the scenario, the rules, the memory and the tools of a message,
//! within a token budget, over the bundled sample index.

use std::sync::OnceLock;

use proptest::prelude::*;
use ruchedb::config::TurnPart;
use ruchedb::turn::Activation;
use ruchedb::{
    Chunk, Engine, Rule, Scenario, Scope, SearchRequest, SearchResponse, Timestamp, TurnRequest,
    TurnResponse, count_tokens,
};

/// The sample index: rules, scenarios, tools, the knowledge base and a conversation.
fn sample() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(crate::sample::engine)
}

/// The sample index with the static model for every kind: for tests of the turn's
/// mechanics on paraphrases of the sample's rules, which the static model's cosines let
/// through the rules' gate (all-MiniLM-L6-v2, the default, refuses some of them:
/// `docs/relevance.md`).
fn sample_static() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        crate::sample::engine_with(
            Engine::builder().with_embedder_spec(ruchedb::EmbedderSpec::StaticBundled),
        )
    })
}

fn now() -> Timestamp {
    "2026-11-28T12:00:00Z".parse().unwrap()
}

fn summary(response: &SearchResponse) -> Vec<(String, u64)> {
    response
        .hits
        .iter()
        .map(|h| (h.id.clone(), h.score.to_bits()))
        .collect()
}

const MESSAGES: &[&str] = &[
    "I want to return the boots I bought last week, they don't fit",
    "I want my money back",
    "checkout says PAY_DECLINED_51",
    "where is my order NW-15007?",
    "my parcel is late again",
    "can I change the delivery address of my order",
    "the zipper of my jacket broke after two weeks",
    "what is the weather tomorrow",
    "what did Maya say about the tent",
    "do you have this tent in green",
    "ok",
];

#[test]
fn a_detected_scenario_activates_its_rules_in_the_same_turn() {
    let engine = sample_static();
    let text = "I bought these boots 5 weeks ago, can I still send them back?";
    let turn = engine
        .turn(&TurnRequest::new(text).with_now(now()))
        .unwrap();
    assert_eq!(turn.scenario.activation, Activation::Detected);
    assert_eq!(turn.scenario.active.as_deref(), Some("returns"));
    assert!(turn.scenario.confidence.unwrap() >= 0.5);
    // The rules were matched inside the scenario: some of them are its own.
    assert!(
        turn.rules.hits.iter().any(|hit| matches!(
            &*hit.document,
            ruchedb::Document::Rule(rule) if rule.scope == Scope::scenario("returns")
        )),
        "{:?}",
        summary(&turn.rules)
    );
    // Exactly the rules a search inside the scenario gives.
    let inside = engine
        .search(
            &SearchRequest::rules(text)
                .with_scenario("returns")
                .with_now(now()),
        )
        .unwrap();
    assert_eq!(summary(&turn.rules), summary(&inside));
    // And the rendered block says so.
    let block = turn.render();
    assert!(
        block.starts_with("Scenario: Returns and refunds (returns): "),
        "{block}"
    );
    assert!(block.contains("\nRules to follow:\n- "), "{block}");
}

#[test]
fn an_active_scenario_is_kept_unless_the_message_clearly_leaves_it() {
    let engine = sample();
    // A message of the flow: kept, with its step.
    let kept = engine
        .turn(
            &TurnRequest::new("it's order NW-15007, the boots")
                .with_scenario("returns")
                .with_step("collect_order")
                .with_now(now()),
        )
        .unwrap();
    assert_eq!(kept.scenario.activation, Activation::Kept);
    assert_eq!(kept.scenario.active.as_deref(), Some("returns"));
    assert_eq!(kept.scenario.step.as_deref(), Some("collect_order"));
    // A message about nothing in particular keeps it too.
    let vague = engine
        .turn(
            &TurnRequest::new("ok thanks")
                .with_scenario("returns")
                .with_now(now()),
        )
        .unwrap();
    assert_eq!(vague.scenario.activation, Activation::Kept);
    // A message squarely about another flow leaves it.
    let other = engine
        .turn(
            &TurnRequest::new("I want to return the boots I bought last week")
                .with_scenario("shipping_issue")
                .with_now(now()),
        )
        .unwrap();
    assert_eq!(other.scenario.activation, Activation::Switched);
    assert_eq!(other.scenario.active.as_deref(), Some("returns"));
    assert_eq!(other.scenario.left.as_deref(), Some("shipping_issue"));
    // The rules then come from the scenario it switched to.
    let inside = engine
        .search(
            &SearchRequest::rules("I want to return the boots I bought last week")
                .with_scenario("returns")
                .with_now(now()),
        )
        .unwrap();
    assert_eq!(summary(&other.rules), summary(&inside));
    // With a margin no relevance can clear, it is kept.
    let mut config = ruchedb::Config::default();
    config.turn.switch_margin = 1.0;
    let dir = tempfile::tempdir().unwrap();
    let strict = Engine::builder()
        .with_config(config)
        .create(dir.path().join("i"))
        .unwrap();
    strict
        .upsert_scenarios(crate::sample::toml_records::<Scenario>(
            "scenarios.toml",
            "scenarios",
        ))
        .unwrap();
    strict.commit().unwrap();
    let held = strict
        .turn(
            &TurnRequest::new("I want to return the boots I bought last week")
                .with_scenario("shipping_issue")
                .with_now(now()),
        )
        .unwrap();
    assert_eq!(held.scenario.activation, Activation::Kept);
    assert_eq!(held.scenario.active.as_deref(), Some("shipping_issue"));
}

#[test]
fn an_out_of_scope_message_gets_no_scenario_rule_or_tool() {
    // The bundled static model: its memory has no anchor (a paraphrase sharing no word
    // scores below nonsense there), so only the decision parts are asserted empty.
    let engine = sample();
    for text in [
        "xyzzy qwerty plugh",
        "who painted the mona lisa",
        "how many moons does jupiter have",
        "tell me a joke about penguins",
    ] {
        let turn = engine
            .turn(
                &TurnRequest::new(text)
                    .with_budget_tokens(500)
                    .with_now(now()),
            )
            .unwrap();
        assert!(
            turn.scenario.active.is_none()
                && turn.rules.hits.is_empty()
                && turn.tools.hits.is_empty(),
            "{text}: {:?} {:?} {:?}",
            turn.scenario.active,
            summary(&turn.rules),
            summary(&turn.tools)
        );
    }
}

/// A unit vector on axis `i` (a supplied-vector index is gated on the MiniLM scale).
fn axis(i: usize) -> Vec<f32> {
    let mut v = vec![0.0; 8];
    v[i] = 1.0;
    v
}

/// A unit vector at cosine `c` from axis `i` (the rest on axis 7, which no chunk uses):
/// unrelated MiniLM sentences often sit near 0.3, paraphrases from 0.45 up.
fn toward(i: usize, c: f32) -> Vec<f32> {
    let mut v = vec![0.0; 8];
    v[i] = c;
    v[7] = (1.0 - c * c).sqrt();
    v
}

fn anchored_memory() -> Engine {
    let engine = Engine::builder().temporary().unwrap();
    engine
        .upsert_chunks([
            Chunk::new("contact", "Prefers email over phone calls").with_embedding(axis(0)),
            Chunk::new("tent", "The tent pole snapped on the second night").with_embedding(axis(2)),
            Chunk::new("order", "Order NW-40411 left the warehouse on Monday")
                .with_embedding(axis(4)),
        ])
        .unwrap();
    engine.commit().unwrap();
    engine
}

#[test]
fn a_memory_search_nothing_anchors_returns_nothing() {
    let engine = anchored_memory();
    // At a noise cosine (0.3) and no word shared: refused, and the gate says so (without
    // the anchor, "contact" passes with relevance 0.92).
    let far = engine
        .search(&SearchRequest::chunks("who painted the mona lisa").with_embedding(toward(0, 0.3)))
        .unwrap();
    assert!(far.hits.is_empty(), "{:?}", summary(&far));
    assert!(
        far.gate.anchor.is_some_and(|a| a < 0.5),
        "{:?}",
        far.gate.anchor
    );
    assert!(far.gate.abstention_reason().is_some());
    // The same vector, but every word of the query is in a chunk: the search is
    // answered (each chunk then passes or not by its own relevance).
    let worded = engine
        .search(&SearchRequest::chunks("tent pole").with_embedding(toward(0, 0.3)))
        .unwrap();
    assert_eq!(worded.gate.anchor, Some(1.0));
    // A code of the query answers it.
    let code = engine
        .search(&SearchRequest::chunks("any news on nw-40411?").with_embedding(toward(0, 0.3)))
        .unwrap();
    assert_eq!(code.hits.first().map(|h| h.id.as_str()), Some("order"));
    // A paraphrase that shares no word but is close: answered.
    let close = engine
        .search(&SearchRequest::chunks("how should I reach them").with_embedding(toward(0, 0.5)))
        .unwrap();
    assert_eq!(close.hits.first().map(|h| h.id.as_str()), Some("contact"));
    // Off: the noise cosine answers.
    let mut config = ruchedb::Config::default();
    config.relevance.chunks.anchor = false;
    let dir = tempfile::tempdir().unwrap();
    let open = Engine::builder()
        .with_config(config)
        .create(dir.path().join("i"))
        .unwrap();
    open.upsert_chunks([
        Chunk::new("contact", "Prefers email over phone calls").with_embedding(axis(0))
    ])
    .unwrap();
    open.commit().unwrap();
    let unanchored = open
        .search(&SearchRequest::chunks("who painted the mona lisa").with_embedding(toward(0, 0.3)))
        .unwrap();
    assert!(unanchored.gate.anchor.is_none());
    assert_eq!(
        unanchored.hits.first().map(|h| h.id.as_str()),
        Some("contact")
    );
}

#[test]
fn an_out_of_scope_message_gives_an_empty_turn() {
    let engine = anchored_memory();
    let turn = engine
        .turn(
            &TurnRequest::new("who painted the mona lisa")
                .with_embedding(toward(0, 0.3))
                .with_budget_tokens(500),
        )
        .unwrap();
    assert!(turn.is_empty(), "{:?}", summary(&turn.memory));
    assert_eq!(turn.render(), "");
    assert_eq!(turn.budget.used, 0);
}

#[test]
fn memory_comes_from_the_conversation_when_the_turn_names_it() {
    let engine = sample();
    let turn = engine
        .turn(
            &TurnRequest::new("what was wrong with the tent?")
                .with_context("conversation-maya-chen")
                .with_now(now()),
        )
        .unwrap();
    assert!(!turn.memory.hits.is_empty());
    for hit in &turn.memory.hits {
        let ruchedb::Document::Chunk(chunk) = &*hit.document else {
            panic!("memory holds chunks")
        };
        assert_eq!(chunk.context_id.as_deref(), Some("conversation-maya-chen"));
    }
    let block = turn.render();
    assert!(block.contains("Known from memory:\n- [2026-11-"), "{block}");
}

#[test]
fn a_small_budget_keeps_the_rules_first_and_says_what_it_cut() {
    let engine = sample_static();
    let text = "I want to return the boots I bought last week, they don't fit";
    let whole = engine
        .turn(&TurnRequest::new(text).with_now(now()))
        .unwrap();
    assert!(!whole.rules.hits.is_empty() && !whole.memory.hits.is_empty());
    // The scenario line, the rules, and a little more: memory cannot all fit.
    let block = whole.render();
    let scenario_line = block.lines().next().unwrap();
    assert!(scenario_line.starts_with("Scenario: "), "{block}");
    let budget = count_tokens(scenario_line) + 1 + whole.budget.rules.tokens + 20;
    let cut = engine
        .turn(
            &TurnRequest::new(text)
                .with_budget_tokens(budget)
                .with_now(now()),
        )
        .unwrap();
    assert!(cut.budget.used <= budget);
    assert_eq!(cut.budget.rules.kept, whole.rules.hits.len());
    assert_eq!(cut.budget.rules.cut, 0);
    let cut_total = cut.budget.rules.cut + cut.budget.memory.cut + cut.budget.tools.cut;
    assert!(cut_total > 0);
    assert_eq!(
        cut.budget.memory.kept + cut.budget.memory.cut,
        whole.memory.hits.len()
    );
    assert_eq!(
        cut.memory
            .selection
            .metadata
            .get("cut_by_budget")
            .and_then(|v| v.as_u64()),
        (cut.budget.memory.cut > 0).then_some(cut.budget.memory.cut as u64)
    );
}

/// A refund rule and a note about it, and a turn whose rules and memory both find them.
fn refund_turn() -> (Engine, ruchedb::TurnResponse) {
    let engine = Engine::builder().temporary().unwrap();
    engine
        .upsert_rules([Rule::new(
            "refund",
            "the customer asks for a refund",
            "refund the order",
        )
        .with_patterns(["I want my money back"])])
        .unwrap();
    engine
        .upsert_chunks([Chunk::new(
            "m1",
            "The customer asked for a refund of the tent",
        )])
        .unwrap();
    engine.commit().unwrap();
    let turn = engine
        .turn(&TurnRequest::new("I want my money back for the tent"))
        .unwrap();
    (engine, turn)
}

#[test]
fn feedback_on_a_turn_credits_each_part_that_had_hits() {
    let (engine, turn) = refund_turn();
    assert!(!turn.rules.hits.is_empty() && !turn.memory.hits.is_empty());
    engine.feedback(&turn.turn_id, true).unwrap();
    let rules = engine.feedback_window(ruchedb::DEFAULT_TENANT, ruchedb::Kind::Rule);
    let memory = engine.feedback_window(ruchedb::DEFAULT_TENANT, ruchedb::Kind::Chunk);
    assert!(!rules.is_empty() && !memory.is_empty());
    // Once: the same answer again changes nothing, the other is refused.
    engine.feedback(&turn.turn_id, true).unwrap();
    assert!(engine.feedback(&turn.turn_id, false).is_err());
    assert!(engine.feedback("turn-0-0-0~nothing", true).is_err());
    // Crediting a part by its own id after the turn's counts once too.
    assert!(engine.feedback(&turn.rules.query_id, false).is_err());
    assert_eq!(
        engine.feedback(&turn.memory.query_id, true).unwrap().len(),
        memory.len()
    );
}

/// A turn id is for a person to read and a log to carry: short, whatever the turn
/// found, and still signed (an altered one credits nothing). An id of the earlier form,
/// which listed its parts' ids, is still credited.
#[test]
fn a_turn_id_is_short_and_signed() {
    let (engine, turn) = refund_turn();
    assert!(turn.turn_id.starts_with("turn-"), "{}", turn.turn_id);
    assert!(
        turn.turn_id.len() <= 80,
        "{} is {} long",
        turn.turn_id,
        turn.turn_id.len()
    );
    // Each part's id is the turn's base and its letter.
    let base = turn
        .turn_id
        .rsplit_once('-')
        .unwrap()
        .0
        .replacen("turn-", "q", 1);
    assert!(
        turn.rules.query_id.starts_with(&format!("{base}.r-")),
        "{}",
        turn.rules.query_id
    );
    assert!(
        turn.memory.query_id.starts_with(&format!("{base}.m-")),
        "{}",
        turn.memory.query_id
    );

    // One hex digit changed anywhere in the signed part: refused, nothing credited.
    let mut altered = turn.turn_id.clone().into_bytes();
    let at = altered.len() - 30;
    altered[at] = if altered[at] == b'0' { b'1' } else { b'0' };
    let altered = String::from_utf8(altered).unwrap();
    let refused = engine.feedback(&altered, true).unwrap_err();
    assert!(
        matches!(refused.kind(), ruchedb::ErrorKind::NotFound { .. }),
        "{refused:?}"
    );
    assert!(
        engine
            .feedback_window(ruchedb::DEFAULT_TENANT, ruchedb::Kind::Rule)
            .is_empty()
    );

    // The earlier form: the turn's own id, then its parts' ids, joined by `~`.
    let listed = format!(
        "turn-legacy~{}~{}",
        turn.rules.query_id, turn.memory.query_id
    );
    engine.feedback(&listed, true).unwrap();
    let rules = || {
        engine
            .feedback_window(ruchedb::DEFAULT_TENANT, ruchedb::Kind::Rule)
            .len()
    };
    let credited = rules();
    assert!(credited >= 1);
    // The same searches by the new id: already credited, the same answer changes nothing.
    engine.feedback(&turn.turn_id, true).unwrap();
    assert_eq!(rules(), credited);
}

fn message() -> impl Strategy<Value = String> {
    prop::sample::select(MESSAGES).prop_map(str::to_string)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever the budget, the rendered block fits it, the accounting is that block's,
    /// and each part keeps a subsequence of what it selected, best first.
    #[test]
    fn the_rendered_block_never_exceeds_the_budget(
        text in message(),
        budget in 0usize..400,
        memory_first in any::<bool>(),
    ) {
        let engine = sample();
        let mut request = TurnRequest::new(text.clone()).with_budget_tokens(budget).with_now(now());
        if memory_first {
            request = request.with_context("conversation-maya-chen");
        }
        let turn = engine.turn(&request).unwrap();
        let block = turn.render();
        prop_assert!(count_tokens(&block) <= budget, "{} > {budget}: {block}", count_tokens(&block));
        prop_assert_eq!(count_tokens(&block), turn.budget.used);
        let whole = engine.turn(&TurnRequest::new(text).with_now(now()).context_if(memory_first)).unwrap();
        for part in TurnPart::ALL {
            let kept: Vec<_> = summary(turn.part(part));
            let all: Vec<_> = summary(whole.part(part));
            let mut rest = all.iter();
            prop_assert!(kept.iter().all(|k| rest.any(|a| a == k)), "{part:?}: {kept:?} of {all:?}");
        }
    }

    /// Without a budget, each part is its single-kind search.
    #[test]
    fn without_a_budget_each_part_is_its_own_search(text in message(), conversation in any::<bool>()) {
        let engine = sample();
        let turn = engine.turn(&TurnRequest::new(text.clone()).with_now(now()).context_if(conversation)).unwrap();
        let mut rules = SearchRequest::rules(text.clone()).with_now(now());
        if let Some(active) = &turn.scenario.active {
            rules = rules.with_scenario(active.clone());
        }
        let mut memory = SearchRequest::chunks(text.clone()).with_now(now());
        if conversation {
            memory = memory.with_context("conversation-maya-chen");
        }
        let searches = [
            (summary(&turn.scenario.search), SearchRequest::scenarios(text.clone()).with_now(now())),
            (summary(&turn.rules), rules),
            (summary(&turn.memory), memory),
            (summary(&turn.tools), SearchRequest::tools(text.clone()).with_now(now())),
        ];
        for (got, request) in searches {
            let alone = engine.search(&request).unwrap();
            prop_assert_eq!(&got, &summary(&alone), "{:?}", request.kind());
        }
        prop_assert_eq!(turn.budget.rules.cut + turn.budget.memory.cut + turn.budget.tools.cut, 0);
        prop_assert_eq!(count_tokens(&turn.render()), turn.budget.used);
    }
}

trait ContextIf {
    fn context_if(self, yes: bool) -> Self;
}

impl ContextIf for TurnRequest {
    fn context_if(self, yes: bool) -> TurnRequest {
        if yes {
            self.with_context("conversation-maya-chen")
        } else {
            self
        }
    }
}

#[test]
fn the_response_names_its_parts() {
    let turn: TurnResponse = sample()
        .turn(&TurnRequest::new("I want my money back").with_now(now()))
        .unwrap();
    assert!(turn.turn_id.starts_with("turn-"));
    assert_eq!(turn.budget.tokenizer, "o200k_base");
    assert_eq!(turn.budget.order, TurnPart::ALL.to_vec());
    assert!(turn.timings.total_us >= turn.timings.rules_us);
}

/// The memory block says when and who: each memory line has its date and, when the chunk
/// names one in `metadata.speaker`, its speaker (once, when the text already starts
/// with it).
#[test]
fn the_memory_block_says_when_and_who() {
    let engine = Engine::builder().temporary().unwrap();
    let day: Timestamp = "2023-05-08T13:56:00Z".parse().unwrap();
    engine
        .upsert_chunks(vec![
            Chunk::new(
                "d1-3",
                "I went to the LGBTQ support group yesterday, it was powerful.",
            )
            .with_context("conv-26")
            .with_created_at(day)
            .with_metadata("speaker", "Caroline"),
            Chunk::new("d1-4", "Melanie: Wow, what happened at the support group?")
                .with_context("conv-26")
                .with_created_at(day)
                .with_metadata("speaker", "Melanie"),
        ])
        .unwrap();
    engine.commit().unwrap();
    let turn = engine
        .turn(
            &TurnRequest::new("when did Caroline go to the LGBTQ support group?")
                .with_context("conv-26")
                .with_now(now()),
        )
        .unwrap();
    let block = turn.render();
    assert!(
        block.contains(
            "- [2023-05-08] Caroline: I went to the LGBTQ support group yesterday, it was powerful.\n"
        ),
        "{block}"
    );
    if block.contains("Wow") {
        assert!(
            block.contains("- [2023-05-08] Melanie: Wow, what happened"),
            "{block}"
        );
    }
    // The JSON carries the date and the speaker with the hit.
    let json = serde_json::to_value(&turn).unwrap();
    let hit = &json["memory"]["hits"][0];
    assert!(hit.to_string().contains("2023-05-08T13:56:00"), "{hit}");
    assert!(hit.to_string().contains("Caroline"), "{hit}");
}
