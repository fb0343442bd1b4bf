//! More of the `ruche` command: feedback, eval, embedders, re-embedding, purge, demo.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::cli::{assert_code, stderr, stdout};

fn ruche(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ruche"))
        .args(args)
        .env_remove("RUCHE_CONFIG")
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null())
        .output()
        .unwrap()
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
}
