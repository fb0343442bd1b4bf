//! More of the `ruche` command: feedback, eval, embedders, re-embedding, purge, demo.

use crate::run::OutputWithin;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::cli::{assert_code, stderr, stdout};

/// `ruche ARGS` run in the temporary directory: nothing lands in the working tree.
fn ruche(args: &[&str]) -> Output {
    crate::run::command(args)
        .current_dir(std::env::temp_dir())
        .output_within()
}

/// Runs `ruche`, expects exit 0, and parses its one JSON line.
#[track_caller]
fn json(args: &[&str]) -> Value {
    let output = ruche(args);
    assert_code(&output, 0);
    serde_json::from_str(stdout(&output).trim()).unwrap()
}

fn write(dir: &Path, name: &str, content: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path.to_str().unwrap().to_string()
}

const RULES: &str = r#"{"id": "refund", "condition": "customer asks for a refund", "action": "explain the refund policy", "priority": 50}
{"id": "greet", "condition": "the conversation starts", "action": "greet the customer"}
"#;

/// Chunks with distinct words, and queries that each match one of them.
const CHUNKS: &str = r#"{"id": "dog", "content": "the user's dog is called Rex"}
{"id": "city", "content": "the user lives in Lyon"}
{"id": "email", "content": "prefers to be contacted by email"}
{"id": "tea", "content": "drinks green tea every morning"}
"#;

const QUERIES: &str = r#"{"id": "q1", "text": "Rex the dog"}
{"id": "q2", "text": "Lyon"}
{"id": "q3", "text": "green tea"}
{"id": "unjudged", "text": "email"}
"#;

/// Each query's own chunk: the ranking is perfect.
const QRELS: &str = "query-id\tcorpus-id\tscore\nq1\tdog\t1\nq2\tcity\t1\nq3\ttea\t1\n";

/// A new index in `dir/index` (made with `extra` arguments), and its path.
fn index(dir: &Path, kind: &str, records: &str, extra: &[&str]) -> String {
    let file = write(dir, "records.jsonl", records);
    let index = dir.join("index").to_str().unwrap().to_string();
    let flag = format!("--{kind}");
    let mut args = vec!["index", &index, &flag, &file];
    args.extend_from_slice(extra);
    assert_code(&ruche(&args), 0);
    index
}

#[test]
fn feedback_on_a_search_then_reset() {
    let dir = tempfile::tempdir().unwrap();
    let index = index(dir.path(), "rules", RULES, &[]);
    let response = json(&["search", &index, "I want a refund", "--json"]);
    assert_eq!(response["hits"][0]["id"], "refund");
    let query_id = response["query_id"].as_str().unwrap();

    let output = ruche(&["feedback", &index, query_id, "--useful"]);
    assert_code(&output, 0);
    let text = stdout(&output);
    // The top hit matched the text: one useful text record, factor 1.0 below 10 records.
    assert!(
        text.contains("text   1 of 1 useful, weight factor 1.000"),
        "{text}"
    );
    // Once per query: the same answer again changes nothing, the other is refused.
    let output = ruche(&["feedback", &index, query_id, "--useful"]);
    assert_code(&output, 0);
    assert!(
        stdout(&output).contains("text   1 of 1 useful"),
        "{}",
        stdout(&output)
    );
    let output = ruche(&["feedback", &index, query_id, "--not-useful"]);
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains("already marked useful"),
        "{}",
        stderr(&output)
    );
    let second = json(&["search", &index, "I want a refund", "--json"]);
    let second = second["query_id"].as_str().unwrap();
    let output = ruche(&["feedback", &index, second, "--not-useful"]);
    assert_code(&output, 0);
    assert!(
        stdout(&output).contains("text   1 of 2 useful"),
        "{}",
        stdout(&output)
    );

    let output = ruche(&["feedback", &index, "--reset"]);
    assert_code(&output, 0);
    let text = stdout(&output);
    assert!(text.contains("text   0 of 0 useful"), "{text}");
    assert!(text.contains("vector 0 of 0 useful"), "{text}");

    let output = ruche(&["feedback", &index, "q-unknown", "--useful"]);
    assert_code(&output, 2);
    assert!(stderr(&output).contains("q-unknown"), "{}", stderr(&output));
    // Useful or not must be said.
    assert_code(&ruche(&["feedback", &index, query_id]), 2);
}

#[test]
fn eval_reports_ranking_selection_and_latency() {
    let dir = tempfile::tempdir().unwrap();
    let index = index(dir.path(), "chunks", CHUNKS, &[]);
    let queries = write(dir.path(), "queries.jsonl", QUERIES);
    let qrels = write(dir.path(), "qrels.tsv", QRELS);
    let eval = |qrels: &str, extra: &[&str]| {
        let mut args = vec![
            "eval",
            &index,
            "--queries",
            &queries,
            "--qrels",
            qrels,
            "--kind",
            "chunks",
            "--json",
        ];
        args.extend_from_slice(extra);
        json(&args)
    };

    let report = eval(&qrels, &[]);
    assert_eq!(report["queries"], 3, "{report}");
    for key in ["ndcg@10", "recall@10", "recall@100", "mrr@10"] {
        assert_eq!(report[key].as_f64(), Some(1.0), "{key}: {report}");
    }
    assert!(report["selection"]["mean_size"].as_f64().unwrap() >= 1.0);
    assert!(report["selection"]["recall"].as_f64().unwrap() > 0.0);
    assert!(report["latency_ms"]["p50"].as_f64().unwrap() >= 0.0);
    assert!(report["latency_ms"]["p99"].as_f64().unwrap() >= 0.0);

    // A judged chunk that the query text does not name ranks below the first place.
    let shifted = write(dir.path(), "shifted.tsv", "q2\temail\t1\n");
    let report = eval(&shifted, &[]);
    let ndcg = report["ndcg@10"].as_f64().unwrap();
    assert!(ndcg < 1.0, "{report}");

    // Fusion settings to compare without editing the config.
    let report = eval(&qrels, &["--fusion", "rrf", "--fusion-param", "rrf_k=10"]);
    assert_eq!(report["mrr@10"].as_f64(), Some(1.0), "{report}");
    let output = ruche(&[
        "eval",
        &index,
        "--queries",
        &queries,
        "--qrels",
        &qrels,
        "--fusion-param",
        "no_such_key=1",
    ]);
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains("no_such_key"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn embedders_are_chosen_at_creation_and_changed_by_reembed() {
    let dir = tempfile::tempdir().unwrap();
    let index = index(dir.path(), "rules", RULES, &["--embedder", "none"]);
    let stats = json(&["stats", &index, "--json"]);
    assert_eq!(stats["rules"], 2);
    assert_eq!(stats["dimensions"], Value::Null, "{stats}");
    assert_eq!(stats["model_id"], Value::Null, "{stats}");
    assert_eq!(stats["rule_graph"]["live_vectors"], 0, "{stats}");
    // Without vectors, words are all there is: no hit for a greeting in other words.
    assert_code(&ruche(&["search", &index, "hello there"]), 1);

    // `--embedder` names the model of a new index only.
    let rules = dir.path().join("records.jsonl");
    let rules = rules.to_str().unwrap();
    let output = ruche(&["index", &index, "--rules", rules, "--embedder", "default"]);
    assert_code(&output, 2);
    assert!(stderr(&output).contains("reembed"), "{}", stderr(&output));
    assert_code(
        &ruche(&["index", &index, "--rules", rules, "--embedder", "none"]),
        0,
    );

    let output = ruche(&["reembed", &index, "--embedder", "default"]);
    assert_code(&output, 0);
    assert!(
        stdout(&output).contains("re-embedded 2 documents"),
        "{}",
        stdout(&output)
    );
    let stats = json(&["stats", &index, "--json"]);
    assert_eq!(stats["model_id"], "minilm-static-v1", "{stats}");
    assert_eq!(stats["dimensions"], 256, "{stats}");
    assert_eq!(stats["rule_graph"]["live_vectors"], 2, "{stats}");
    // A greeting that shares no word with the greeting rule is now closer to it (by its
    // vector) than to the refund rule (the gate off: this is about the vectors).
    let response = json(&[
        "search",
        &index,
        "hello there",
        "--top-k",
        "2",
        "--min-relevance",
        "0",
        "--json",
    ]);
    let vector_of = |id: &str| {
        let hits = response["hits"].as_array().unwrap();
        let hit = hits.iter().find(|hit| hit["id"] == id).unwrap();
        assert_eq!(hit["legs"], serde_json::json!(["vector"]), "{response}");
        hit["vector"].as_f64().unwrap()
    };
    assert!(vector_of("greet") > vector_of("refund"), "{response}");

    let output = ruche(&["index", &index, "--rules", rules, "--embedder", "none"]);
    assert_code(&output, 2);
    assert!(stderr(&output).contains("reembed"), "{}", stderr(&output));

    assert_code(&ruche(&["reembed", &index, "--embedder", "none"]), 0);
    let stats = json(&["stats", &index, "--json"]);
    assert_eq!(stats["rules"], 2);
    assert_eq!(stats["model_id"], Value::Null, "{stats}");
}

#[test]
fn purge_removes_expired_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let chunks = r#"{"id": "old", "content": "one-time code 4411", "expires_at": "2026-01-01T00:00:00Z"}
{"id": "later", "content": "one-time code 9902", "expires_at": "2027-01-01T00:00:00Z"}
{"id": "kept", "content": "prefers email"}
"#;
    let index = index(dir.path(), "chunks", chunks, &[]);
    let now = "2026-06-01T00:00:00Z";
    // Already invisible to searches at that time...
    let response = json(&[
        "search",
        &index,
        "one-time code",
        "--kind",
        "chunks",
        "--now",
        now,
        "--json",
    ]);
    let hits: Vec<&str> = response["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["id"].as_str().unwrap())
        .collect();
    assert!(!hits.contains(&"old"), "{response}");
    assert!(hits.contains(&"later"), "{response}");

    // ...and then gone from the index.
    let output = ruche(&["purge", &index, "--now", now]);
    assert_code(&output, 0);
    assert!(
        stdout(&output).contains("purged 1 expired chunks"),
        "{}",
        stdout(&output)
    );
    assert_eq!(json(&["stats", &index, "--json"])["chunks"], 2);
    assert_code(&ruche(&["get", &index, "--kind", "chunks", "old"]), 2);
    assert_code(&ruche(&["get", &index, "--kind", "chunks", "later"]), 0);
    let output = ruche(&["purge", &index, "--now", "2026-06-01T00:00:00Z"]);
    assert!(
        stdout(&output).contains("purged 0 expired chunks"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn demo_finds_the_refund_rule_for_a_paraphrase() {
    let dir = tempfile::tempdir().unwrap();
    let demo_dir = dir.path().join("demo");
    let output = ruche(&["demo", "--dir", demo_dir.to_str().unwrap()]);
    assert_code(&output, 0);
    let text = stdout(&output);
    assert!(text.contains("minilm-static-v1"), "{text}");
    let mut lines = text
        .lines()
        .skip_while(|line| *line != r#"query: "I want my money back" [rules]"#);
    assert!(lines.next().is_some(), "{text}");
    let first = lines.next().unwrap();
    assert!(
        first.trim_start().starts_with("1. refund-request "),
        "{first}\n{text}"
    );
    // A tool found and chosen by the greedy policy (seed 002).
    assert!(text.contains("policy greedy: chose track_order"), "{text}");
    // The sample's docs folder synced, a second sync a no-op, a hit that says where it is.
    assert!(
        text.contains("sync docs: 4 files added") && text.contains("again: 0 changes, 4 unchanged"),
        "{text}"
    );
    assert!(text.contains("[docs/handbook/shipping.md:"), "{text}");
}

const SCENARIOS_TOML: &str = r#"
[[scenarios]]
id = "returns"
name = "Returns and refunds"
description = "The customer wants to send an item back or get their money back"
examples = ["I want to return the boots I bought", "how do I get a refund for my order?"]
steps = [{ id = "confirm", description = "Confirm the return" }]

[[scenarios]]
id = "damaged_item"
name = "Damaged delivery"
description = "An item arrived broken, damaged in transit or defective"
examples = ["my tent arrived with a broken pole", "the stove is dented"]
"#;

const TOOLS_JSONL: &str = r#"{"id": "track", "name": "track_order", "description": "Look up where a shipped order is and when it arrives", "examples": ["where is my package?"], "parameters": {"type": "object", "required": ["order_id"]}}
{"id": "refund", "name": "issue_refund", "description": "Refund a payment to the customer", "examples": ["I want my money back"]}
"#;

#[test]
fn scenarios_and_tools_are_indexed_searched_exported_and_chosen_by_a_policy() {
    let dir = tempfile::tempdir().unwrap();
    let scenarios = write(dir.path(), "scenarios.toml", SCENARIOS_TOML);
    let tools = write(dir.path(), "tools.jsonl", TOOLS_JSONL);
    let index = dir.path().join("index").to_str().unwrap().to_string();
    let output = ruche(&[
        "index",
        &index,
        "--scenarios",
        &scenarios,
        "--tools",
        &tools,
        "--quiet",
    ]);
    assert_code(&output, 0);
    assert!(
        stdout(&output).contains("0 rules, 0 chunks, 2 scenarios and 2 tools"),
        "{}",
        stdout(&output)
    );

    // The scenario a message activates; none (exit 1, no hits) when none fits.
    let response = json(&[
        "search",
        &index,
        "--kind",
        "scenarios",
        "my new tent came with a snapped pole",
        "--json",
    ]);
    let hits = response["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{response}");
    assert_eq!(hits[0]["id"], "damaged_item");
    let output = ruche(&[
        "search",
        &index,
        "--kind",
        "scenarios",
        "who won the football game last night",
        "--json",
    ]);
    assert_code(&output, 1);
    let none: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(none["hits"], serde_json::json!([]));
    assert!(none["abstained"].is_string(), "{none}");

    // Tools, then a policy's choice among them.
    let response = json(&[
        "search",
        &index,
        "--kind",
        "tools",
        "where is my package?",
        "--policy",
        "greedy",
        "--json",
    ]);
    assert_eq!(response["hits"][0]["id"], "track");
    assert_eq!(response["policy"]["name"], "greedy");
    assert_eq!(response["policy"]["chosen"]["id"], "track");
    assert_eq!(response["policy"]["chosen"]["action"], "track_order");
    let output = ruche(&[
        "search",
        &index,
        "--kind",
        "tools",
        "I want my money back",
        "--policy",
        "sampling",
        "--policy-param",
        "temperature=0.5",
    ]);
    assert_code(&output, 0);
    assert!(
        stdout(&output).contains("policy sampling: chose refund (issue_refund)"),
        "{}",
        stdout(&output)
    );
    let output = ruche(&[
        "search", &index, "--kind", "tools", "refund", "--policy", "roulette",
    ]);
    assert_code(&output, 2);
    assert!(stderr(&output).contains("roulette"), "{}", stderr(&output));

    // Stats count each kind; export and --records bring everything back as it was.
    let stats = json(&["stats", &index, "--json"]);
    assert_eq!(
        (stats["scenarios"].as_u64(), stats["tools"].as_u64()),
        (Some(2), Some(2))
    );
    let exported = ruche(&["export", &index]);
    assert_code(&exported, 0);
    let lines = stdout(&exported);
    assert!(lines.contains(r#""kind":"scenario""#), "{lines}");
    let records = write(dir.path(), "all.jsonl", &lines);
    let copy = dir.path().join("copy").to_str().unwrap().to_string();
    assert_code(&ruche(&["index", &copy, "--records", &records, "-q"]), 0);
    let again = ruche(&["export", &copy]);
    assert_eq!(stdout(&again), lines);
    let tool = json(&["get", &copy, "--kind", "tools", "track"]);
    assert_eq!(tool["parameters"]["required"][0], "order_id");
}

#[test]
fn a_bad_scenario_or_tool_names_its_file_entry_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("index").to_str().unwrap().to_string();
    let bad_toml = write(
        dir.path(),
        "bad.toml",
        "[[scenarios]]\nid = \"a\"\nname = \"n\"\ndescription = \"d\"\n\n[[scenarios]]\nid = \"b\"\nname = \"n\"\ndescription = \" \"\n",
    );
    let output = ruche(&["index", &index, "--scenarios", &bad_toml]);
    assert_code(&output, 2);
    let err = stderr(&output);
    assert!(
        err.contains("bad.toml") && err.contains("scenario `b`: `description`"),
        "{err}"
    );
    let wrong_table = write(
        dir.path(),
        "wrong.toml",
        "[[rules]]\nid = \"r\"\ncondition = \"c\"\naction = \"a\"\n",
    );
    let output = ruche(&["index", &index, "--tools", &wrong_table]);
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains("unknown table `rules`"),
        "{}",
        stderr(&output)
    );
    let bad_line = write(
        dir.path(),
        "tools.jsonl",
        "{\"id\": \"t\", \"name\": \"n\", \"description\": \"d\"}\n{\"id\": \"u\", \"name\": \"n\", \"description\": \"d\", \"parameters\": 3}\n",
    );
    let output = ruche(&["index", &index, "--tools", &bad_line]);
    assert_code(&output, 2);
    let err = stderr(&output);
    assert!(
        err.contains("line 2") && err.contains("`parameters`"),
        "{err}"
    );
    let no_kind = write(
        dir.path(),
        "records.jsonl",
        "{\"id\": \"t\", \"name\": \"n\", \"description\": \"d\"}\n",
    );
    let output = ruche(&["index", &index, "--records", &no_kind]);
    assert_code(&output, 2);
    assert!(stderr(&output).contains("no `kind`"), "{}", stderr(&output));
    // Nothing was created by the failed imports.
    assert!(!Path::new(&index).join("store").exists());
}
