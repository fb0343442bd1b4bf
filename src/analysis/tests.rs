#[test]
fn a_message_asking_several_things_has_parts() {
    assert_eq!(
        parts(
            "Find me flights to Rome next week, and also book a hotel near the Colosseum. What is the weather there?"
        ),
        [
            "Find me flights to Rome next week",
            "book a hotel near the Colosseum.",
            "What is the weather there?"
        ]
    );
    assert_eq!(
        parts("get the latest NBA scores, as well as the standings of the western conference"),
        [
            "get the latest NBA scores",
            "the standings of the western conference"
        ]
    );
    // One request, or parts too short to stand alone: no parts.
    for one in [
        "where is my order NW-15007?",
        "I want salt and pepper chips",
        "Refund, and Tom's order too",
        "Hi. Where is my order?",
        "",
    ] {
        assert!(parts(one).is_empty(), "{one}: {:?}", parts(one));
    }
}

#[test]
fn a_rules_search_also_cuts_at_a_plain_and() {
    let message = "my parcel is late again and honestly I just want to end my life";
    assert!(parts(message).is_empty());
    assert_eq!(
        rule_parts(message),
        [
            "my parcel is late again",
            "honestly I just want to end my life"
        ]
    );
    // Too short on one side: one request.
    for one in ["I want salt and pepper chips", "cancel and refund my order"] {
        assert!(rule_parts(one).is_empty(), "{one}: {:?}", rule_parts(one));
    }
}

use super::*;
use proptest::prelude::*;

/// Checks the signals of a query: keywords, entities `(text, kind)`, question, path.
#[track_caller]
fn check(
    query: &str,
    keywords: &[&str],
    entities: &[(&str, EntityKind)],
    is_question: bool,
    is_file_path: bool,
) {
    let analysis = analyze(query);
    assert_eq!(analysis.keywords, keywords, "{query}");
    let got: Vec<(&str, EntityKind)> = analysis
        .entities
        .iter()
        .map(|e| (e.text.as_str(), e.kind))
        .collect();
    assert_eq!(got, entities, "{query}");
    assert_eq!(analysis.is_question, is_question, "{query}: question");
    assert_eq!(analysis.is_file_path, is_file_path, "{query}: file path");
}

/// Checks the adapted weights of a query over the seed's base `(vector, text)`.
#[track_caller]
fn check_adapt(query: &str, base: (f64, f64), expected: (f64, f64)) {
    let base = FusionWeights {
        vector_weight: base.0,
        text_weight: base.1,
    };
    let got = adapt(&analyze(query), base);
    assert!(
        (got.vector_weight - expected.0).abs() < 1e-12
            && (got.text_weight - expected.1).abs() < 1e-12,
        "{query}: got {got:?}, expected {expected:?}"
    );
}

#[test]
fn stop_words_are_sorted() {
    assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn seed_examples() {
    use EntityKind::*;
    check(
        "EntityStore",
        &["entitystore"],
        &[("EntityStore", CamelCase)],
        false,
        false,
    );
    check(
        "how does the search pipeline work",
        &["search", "pipeline", "work"],
        &[],
        true,
        false,
    );
    check(
        "how does the indexer work",
        &["indexer", "work"],
        &[],
        true,
        false,
    );
    check(
        "src/main.rs",
        &["src/main.rs"],
        &[("src/main.rs", Path)],
        false,
        true,
    );
}

#[test]
fn entities() {
    use EntityKind::*;
    check(
        "find order_1234 for MAX_SIZE",
        &["find", "order_1234", "max_size"],
        &[("order_1234", WithDigits), ("MAX_SIZE", SnakeCase)],
        false,
        false,
    );
    check(
        "HTTPServer getUserById iPhone",
        &["httpserver", "getuserbyid", "iphone"],
        &[
            ("HTTPServer", CamelCase),
            ("getUserById", CamelCase),
            ("iPhone", CamelCase),
        ],
        false,
        false,
    );
    check(
        "the \"refund window\" and `cfg.max_k` rule",
        &["refund", "window", "cfg.max_k", "rule"],
        &[("refund window", Quoted), ("cfg.max_k", Quoted)],
        false,
        false,
    );
    check(
        "“smart quotes” too",
        &["smart", "quotes"],
        &[("smart quotes", Quoted)],
        false,
        false,
    );
    check(
        "std::io and config.toml and .gitignore",
        &["std::io", "config.toml", "gitignore"],
        &[
            ("std::io", Path),
            ("config.toml", Path),
            (".gitignore", Path),
        ],
        false,
        false,
    );
    check(
        "sha256 of ORD-77 (v2)",
        &["sha256", "ord-77", "v2"],
        &[
            ("sha256", WithDigits),
            ("ORD-77", WithDigits),
            ("v2", WithDigits),
        ],
        false,
        false,
    );
    check(
        "./run.sh in ~/bin and src/engine/search",
        &["run.sh", "bin", "src/engine/search"],
        &[
            ("./run.sh", Path),
            ("~/bin", Path),
            ("src/engine/search", Path),
        ],
        false,
        false,
    );
    // Not entities: prose that looks a little like code.
    check(
        "The 2nd and 1990s APIs, e.g. API usage in and/or 3.14 How 1234",
        &[
            "2nd", "1990s", "apis", "e.g", "api", "usage", "and/or", "3.14", "1234",
        ],
        &[],
        false,
        false,
    );
    // An unbalanced quote is punctuation.
    check("say \"hello", &["say", "hello"], &[], false, false);
    check("", &[], &[], false, false);
    check("  ?! ", &[], &[], false, false);
    check("the of and", &[], &[], false, false);
    // Repeats count once.
    check(
        "Refund refund REFUND EntityStore EntityStore",
        &["refund", "entitystore"],
        &[("EntityStore", CamelCase)],
        false,
        false,
    );
}

#[test]
fn questions() {
    for query in [
        "How do I reset?",
        "what's the refund policy",
        "WHY is it slow",
        "where is the config",
        "When was it added",
        "which rule fires",
        "  (how) to rotate keys",
    ] {
        assert!(analyze(query).is_question, "{query}");
    }
    for query in [
        "however it fails",
        "whatever works",
        "whenever I search",
        "who wrote it",
        "EntityStore?",
        "is this a question?",
        "the how and why",
    ] {
        assert!(!analyze(query).is_question, "{query}");
    }
}

#[test]
fn file_paths() {
    for query in [
        "src/main.rs",
        "main.py",
        "where is lib.RS",
        "open `src/index.ts`",
        "app/Main.java.",
        "pkg/server.go?",
        "docs/guide.md",
        "/etc/app/config.yaml",
        "C:\\work\\notes.txt",
    ] {
        assert!(analyze(query).is_file_path, "{query}");
    }
    for query in [
        "rust .rs",
        "main.rs is slow",
        "config.toml",
        "why does src/index.md fail",
        "and/or",
        "v1.2",
        "docs/guide.",
        "a/b.c/d",
        "",
    ] {
        assert!(!analyze(query).is_file_path, "{query}");
    }
}

#[test]
fn adapted_weights() {
    // Entity, one keyword: text × 1.5 × 2 = 0.9, vector × 0.5 = 0.35; sum 1.25 → 1.
    check_adapt("EntityStore", (0.7, 0.3), (0.35 / 1.25, 0.9 / 1.25));
    // Entity with more keywords: text × 1.5 only.
    check_adapt(
        "refund rules for order_1234",
        (0.7, 0.3),
        (0.7 / 1.15, 0.45 / 1.15),
    );
    // Question: vector × 1.5 = 1.05, text × 0.7 = 0.21.
    check_adapt(
        "how does the search pipeline work",
        (0.7, 0.3),
        (1.05 / 1.26, 0.21 / 1.26),
    );
    // Question naming an entity, two keywords: all three rules. Vector 0.7 × 0.5 × 1.5
    // = 0.525, text 0.3 × 1.5 × 2 × 0.7 = 0.63.
    check_adapt(
        "how does EntityStore work",
        (0.7, 0.3),
        (0.525 / 1.155, 0.63 / 1.155),
    );
    // File path: absolute 0.2 and 3.0, whatever else.
    check_adapt("src/main.rs", (0.7, 0.3), (0.2 / 3.2, 3.0 / 3.2));
    check_adapt("what is main.py", (0.7, 0.3), (0.2 / 3.2, 3.0 / 3.2));
    // Renormalised to the base sum.
    check_adapt(
        "src/main.rs",
        (1.0, 0.6),
        (1.6 * 0.2 / 3.2, 1.6 * 3.0 / 3.2),
    );
    // No signals: the base weights exactly.
    check_adapt("refund policy for damaged items", (0.7, 0.3), (0.7, 0.3));
    check_adapt("", (0.7, 0.3), (0.7, 0.3));
    // Found by proptest: rescaling to the base sum must not round the base weights.
    let base = FusionWeights {
        vector_weight: 3.9061504525805466,
        text_weight: 4.431397819247726,
    };
    assert_eq!(adapt(&analyze(""), base), base);
    // A leg turned off stays off; both off stays as given.
    check_adapt("src/main.rs", (0.0, 1.0), (0.0, 1.0));
    check_adapt("how does it work", (1.0, 0.0), (1.0, 0.0));
    check_adapt("src/main.rs", (0.0, 0.0), (0.0, 0.0));
}

#[test]
fn seed_tests() {
    // Seed 004's tests, over its own base weights (semantic 1.0, keyword 0.6).
    let base = FusionWeights {
        vector_weight: 1.0,
        text_weight: 0.6,
    };
    let name = adapt(&analyze("EntityStore"), base);
    assert!(name.text_weight > base.text_weight);
    assert!(name.text_weight > name.vector_weight);
    let question = adapt(&analyze("how does the indexer work"), base);
    assert!(question.vector_weight > base.vector_weight);
    let file = adapt(&analyze("src/main.rs"), base);
    assert!(file.vector_weight < 0.1 * file.text_weight);
    let plain = adapt(&analyze("customer wants a refund"), base);
    assert_eq!(plain, base);
}

proptest! {
    #[test]
    fn analysis_never_panics_and_is_deterministic(text in "\\PC{0,60}") {
        let analysis = analyze(&text);
        prop_assert_eq!(&analysis, &analyze(&text));
        for keyword in &analysis.keywords {
            prop_assert!(!keyword.is_empty());
            prop_assert_eq!(keyword, &keyword.to_lowercase());
        }
    }

    #[test]
    fn codeish_text_never_panics(text in "[a-zA-Z0-9_./\\\\:'\"` ?~-]{0,40}") {
        let _ = analyze(&text);
    }

    #[test]
    fn adaptation_keeps_the_base_sum(
        text in "[a-zA-Z_./ ?]{0,30}",
        vector in 0f64..5.0,
        textw in 0f64..5.0,
    ) {
        let base = FusionWeights { vector_weight: vector, text_weight: textw };
        let analysis = analyze(&text);
        let got = adapt(&analysis, base);
        prop_assert!(got.vector_weight >= 0.0 && got.text_weight >= 0.0);
        let sum = got.vector_weight + got.text_weight;
        prop_assert!((sum - (vector + textw)).abs() <= 1e-9);
        if !analysis.has_signals() {
            prop_assert_eq!(got, base);
        }
        if vector == 0.0 { prop_assert_eq!(got.vector_weight, 0.0); }
        if textw == 0.0 { prop_assert_eq!(got.text_weight, 0.0); }
    }
}

#[test]
fn codes_are_left_out_of_what_is_embedded() {
    assert_eq!(
        text_to_embed("where is my order NW-15699?"),
        "where is my order"
    );
    assert_eq!(
        text_to_embed("checkout says PAY_DECLINED_51"),
        "checkout says"
    );
    // Nothing to leave out, or nothing but codes: the text as it is.
    assert_eq!(text_to_embed("where is my order?"), "where is my order?");
    assert_eq!(text_to_embed("NW-15699"), "NW-15699");
    // Quantities and gene names are words.
    for text in ["HNF4A binds", "at 10am, 15kg"] {
        assert_eq!(text_to_embed(text), text);
    }
}
