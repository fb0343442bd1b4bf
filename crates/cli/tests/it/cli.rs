//! The `ruche` command as a user runs it: exit codes, messages, formats.

use crate::run::OutputWithin;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::run::ruche;

fn ruche_with_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = crate::run::command(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

#[track_caller]
pub(crate) fn assert_code(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        stdout(output),
        stderr(output)
    );
}

const RULES: &str = r#"{"id": "refund", "condition": "customer asks for a refund", "action": "explain the refund policy", "priority": 50}
{"id": "greet", "condition": "the conversation starts", "action": "greet the customer"}
{"id": "label", "condition": "customer needs a return label", "action": "send a label", "scope": "scenario", "scenario_id": "returns"}
"#;

const CHUNKS: &str = r#"{"id": "m1", "content": "prefers email over phone", "importance": 8, "created_at": "2026-11-20T12:00:00Z", "context_id": "u1"}
{"id": "m2", "content": "asked about a refund for order NW-1", "importance": 5, "created_at": 1795046400, "context_id": "u1"}
{"id": "m3", "content": "lives in Lyon", "importance": 3, "created_at": "2026-10-01T00:00:00Z", "context_id": "u2"}
"#;

fn write(dir: &Path, name: &str, content: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path.to_str().unwrap().to_string()
}

/// An index built from `RULES` and `CHUNKS`.
fn indexed() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let rules = write(dir.path(), "rules.jsonl", RULES);
    let chunks = write(dir.path(), "chunks.jsonl", CHUNKS);
    let index = dir.path().join("index").to_str().unwrap().to_string();
    let output = ruche(&["index", &index, "--rules", &rules, "--chunks", &chunks]);
    assert_code(&output, 0);
    assert!(
        stdout(&output).contains("indexed 3 rules and 3 chunks"),
        "{}",
        stdout(&output)
    );
    (dir, index)
}

#[test]
fn search_json_and_exit_codes() {
    let (_dir, index) = indexed();
    let output = ruche(&["search", &index, "I want a refund", "--json"]);
    assert_code(&output, 0);
    let line: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(line["hits"][0]["id"], "refund");
    assert!(line["query_id"].as_str().unwrap().starts_with('q'));
    assert!(line["hits"][0]["score"].as_f64().unwrap() > 0.0);
    assert!(line["timings_us"]["total_us"].is_u64());
    // No hits: exit 1 (a tenant without documents).
    let output = ruche(&["search", &index, "refund", "--tenant", "nobody"]);
    assert_code(&output, 1);
    assert!(stdout(&output).contains("no hits"));
    // Scenario rules need their scenario.
    let output = ruche(&[
        "search",
        &index,
        "return label",
        "--json",
        "--scenario",
        "returns",
    ]);
    assert_code(&output, 0);
    let line: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(line["hits"][0]["id"], "label");
}

#[test]
fn chunk_search_with_now_explains_components() {
    let (_dir, index) = indexed();
    let output = ruche(&[
        "search",
        &index,
        "refund email",
        "--kind",
        "chunks",
        "--context",
        "u1",
        "--now",
        "2026-11-21T12:00:00Z",
        "--json",
        "--explain",
        "--top-k",
        "5",
    ]);
    assert_code(&output, 0);
    let line: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    let hits = line["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2, "u3's chunk is filtered out by context");
    let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
    assert!(scores[0] >= scores[1]);
    for hit in hits {
        for key in ["relevance", "importance", "recency", "score"] {
            assert!(hit[key].is_f64(), "{key} in {hit}");
        }
    }
    let m1 = hits.iter().find(|h| h["id"] == "m1").unwrap();
    assert_eq!(m1["importance"], 0.8);
    // One day old with a one-week half-life.
    let expected = (-24.0f64 * std::f64::consts::LN_2 / 168.0).exp();
    assert!((m1["recency"].as_f64().unwrap() - expected).abs() < 1e-12);
}

#[test]
fn batch_output_keeps_input_order_and_line_fields_win() {
    let (dir, index) = indexed();
    let queries = write(
        dir.path(),
        "queries.jsonl",
        "{\"id\": \"q1\", \"text\": \"refund\"}\n{\"id\": 2, \"text\": \"lyon\", \"kind\": \"chunks\"}\n{\"id\": \"q3\", \"text\": \"label\", \"scenario_id\": \"returns\"}\n",
    );
    let output = ruche(&[
        "search", &index, "--batch", &queries, "--json", "--top-k", "1",
    ]);
    assert_code(&output, 0);
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["id"], "q1");
    assert_eq!(lines[0]["hits"][0]["id"], "refund");
    assert_eq!(lines[1]["id"], 2);
    assert_eq!(lines[1]["hits"][0]["id"], "m3");
    assert_eq!(lines[2]["hits"][0]["id"], "label");
    assert_eq!(lines[0]["hits"].as_array().unwrap().len(), 1);
}

#[test]
fn a_malformed_line_fails_the_import_and_changes_nothing() {
    let (dir, index) = indexed();
    let bad = write(
        dir.path(),
        "bad.jsonl",
        "{\"id\": \"new\", \"condition\": \"c\", \"action\": \"a\"}\n\n{\"id\": \"x\", \"condition\": \"c\", \"action\": \"a\", \"colour\": 1}\n",
    );
    let output = ruche(&["index", &index, "--rules", &bad]);
    assert_code(&output, 2);
    let message = stderr(&output);
    assert!(
        message.contains("line 3") && message.contains("colour"),
        "{message}"
    );
    assert_eq!(message.trim().lines().count(), 1, "one line: {message}");
    let output = ruche(&["get", &index, "--kind", "rules", "new"]);
    assert_code(&output, 2);
    let output = ruche(&["stats", &index, "--json"]);
    let stats: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(stats["rules"], 3);
    // A failed first import leaves no index behind.
    let fresh = dir.path().join("fresh");
    let output = ruche(&["index", fresh.to_str().unwrap(), "--rules", &bad]);
    assert_code(&output, 2);
    assert!(!fresh.exists());
}

#[test]
fn importance_out_of_range_is_an_error_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let chunks = write(
        dir.path(),
        "c.jsonl",
        "{\"id\": \"a\", \"content\": \"x\", \"importance\": 11}\n",
    );
    let index = dir.path().join("index");
    let output = ruche(&["index", index.to_str().unwrap(), "--chunks", &chunks]);
    assert_code(&output, 2);
    assert!(stderr(&output).contains("line 1"), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("importance"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn rules_from_toml_and_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let toml = write(
        dir.path(),
        "rules.toml",
        "[[rules]]\nid = \"a\"\ncondition = \"customer is angry\"\naction = \"apologise\"\npriority = 70\n\n[[rules]]\nid = \"b\"\ncondition = \"customer confirms\"\naction = \"close\"\nscope = \"step\"\nscenario_id = \"s\"\nstep_id = \"t\"\n",
    );
    let index = dir.path().join("index");
    let index = index.to_str().unwrap();
    assert_code(&ruche(&["index", index, "--rules", &toml]), 0);
    let output = ruche_with_stdin(
        &["index", index, "--chunks", "-"],
        "{\"id\": \"c\", \"content\": \"from stdin\"}\n",
    );
    assert_code(&output, 0);
    let output = ruche(&["get", index, "--kind", "rules", "b"]);
    assert_code(&output, 0);
    let rule: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(rule["scope"], "step");
    assert_eq!(rule["step_id"], "t");
    let output = ruche(&["get", index, "--kind", "chunks", "c"]);
    assert_code(&output, 0);
}

#[test]
fn missing_index_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    for args in [
        vec!["search", missing.to_str().unwrap(), "x"],
        vec!["stats", missing.to_str().unwrap()],
        vec!["export", missing.to_str().unwrap()],
    ] {
        let output = ruche(&args);
        assert_code(&output, 2);
        assert!(stderr(&output).contains("no index"), "{}", stderr(&output));
    }
    assert!(!missing.exists(), "only `index` creates an index");
}

#[test]
fn delete_get_and_export() {
    let (_dir, index) = indexed();
    let output = ruche(&["export", &index]);
    assert_code(&output, 0);
    assert_eq!(stdout(&output).lines().count(), 6);
    let output = ruche(&["delete", &index, "--kind", "chunks", "--context", "u1"]);
    assert_code(&output, 0);
    assert!(stdout(&output).contains("deleted 2"), "{}", stdout(&output));
    let output = ruche(&["delete", &index, "--kind", "rules", "greet"]);
    assert_code(&output, 0);
    let output = ruche(&["export", &index, "--kind", "chunks"]);
    let ids: Vec<String> = stdout(&output)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ids, ["m3"]);
    let output = ruche(&["get", &index, "--kind", "rules", "greet"]);
    assert_code(&output, 2);
    assert!(stderr(&output).contains("greet"), "{}", stderr(&output));
}

#[test]
fn reads_run_beside_a_writer_and_writes_report_its_lock() {
    let (_dir, index) = indexed();
    let engine = ruchedb::Engine::builder().open(&index).unwrap();
    // Commands that only read take no lock: they read what the writer published.
    let output = ruche(&["search", &index, "refund"]);
    assert_code(&output, 0);
    assert!(stdout(&output).contains("refund"), "{}", stdout(&output));
    assert_code(&ruche(&["stats", &index]), 0);
    assert_code(&ruche(&["export", &index, "--kind", "rules"]), 0);
    // They see the writer's commits, not what it has not committed.
    engine
        .upsert_rules([ruchedb::Rule::new(
            "late",
            "the parcel is late",
            "apologise and track it",
        )])
        .unwrap();
    assert_code(&ruche(&["get", &index, "--kind", "rules", "late"]), 2);
    engine.commit().unwrap();
    assert_code(&ruche(&["get", &index, "--kind", "rules", "late"]), 0);
    let output = ruche(&["search", &index, "my parcel is late", "--json"]);
    assert!(stdout(&output).contains("\"late\""), "{}", stdout(&output));
    // A write waits for the writer's lock, or says who holds it.
    let output = ruche(&["delete", &index, "--kind", "rules", "greet"]);
    assert_code(&output, 2);
    assert!(stderr(&output).contains("locked"), "{}", stderr(&output));
}

#[test]
fn select_replays_score_lists() {
    let input = r#"{"strategy": "fixed_k", "params": {"k": 2}, "max_k": 10, "min_k": 1, "scores": [0.9, 0.8, 0.3]}
{"strategy": "elbow", "params": {}, "max_k": 10, "min_k": 1, "scores": [0.92, 0.89, 0.71, 0.45, 0.42]}
"#;
    let output = ruche_with_stdin(&["select"], input);
    assert_code(&output, 0);
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["selected"], serde_json::json!([0, 1]));
    assert_eq!(lines[0]["cutoff_score"], 0.8);
    assert_eq!(lines[0]["method"], "fixed_k");
    assert_eq!(lines[1]["selected"], serde_json::json!([0, 1]));
    let bad = "{\"strategy\": \"elbow\", \"max_k\": 5, \"scores\": [0.5]}\n{\"strategy\": \"elbow\", \"max_k\": 5, \"scores\": [0.1, 0.9]}\n";
    let output = ruche_with_stdin(&["select"], bad);
    assert_code(&output, 2);
    assert!(stderr(&output).contains("line 2"), "{}", stderr(&output));
    assert_eq!(stdout(&output).lines().count(), 1);
}

#[test]
fn search_accepts_a_strategy_and_rejects_bad_parameters() {
    let (_dir, index) = indexed();
    let output = ruche(&[
        "search",
        &index,
        "customer",
        "--json",
        "--explain",
        "--strategy",
        "fixed_k",
        "--select-param",
        "k=1",
    ]);
    assert_code(&output, 0);
    let line: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(line["hits"].as_array().unwrap().len(), 1);
    assert_eq!(line["selection"]["strategy"], "fixed_k");
    let output = ruche(&[
        "search",
        &index,
        "customer",
        "--strategy",
        "adaptive_k",
        "--select-param",
        "alpha=9",
    ]);
    assert_code(&output, 2);
    assert!(stderr(&output).contains("alpha"), "{}", stderr(&output));
    let output = ruche(&["search", &index, "customer", "--strategy", "top_p"]);
    assert_code(&output, 2);
    assert!(stderr(&output).contains("top_p"), "{}", stderr(&output));
}

#[test]
fn config_file_and_environment_overrides() {
    let (dir, index) = indexed();
    let config = write(
        dir.path(),
        "ruche.toml",
        "[pipeline.retrieval]\nmax_k = 1\n",
    );
    let output = ruche(&["--config", &config, "search", &index, "customer", "--json"]);
    assert_code(&output, 0);
    let line: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(line["hits"].as_array().unwrap().len(), 1);
    let output = Command::new(env!("CARGO_BIN_EXE_ruche"))
        .args(["search", &index, "customer"])
        .env("RUCHE_PIPELINE__RETRIEVAL__RULE_SELECTION__ALPHA", "99")
        .output_within();
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains("pipeline.retrieval.rule_selection.alpha"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn an_out_of_scope_message_gets_no_rule_exit_1_and_one_json_line() {
    let (dir, index) = indexed();
    let output = ruche(&["search", &index, "what is the weather tomorrow"]);
    assert_code(&output, 1);
    assert!(
        stdout(&output).starts_with("no hits: no candidate is relevant"),
        "{}",
        stdout(&output)
    );
    let output = ruche(&["search", &index, "what is the weather tomorrow", "--json"]);
    assert_code(&output, 1);
    let line: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(line["hits"], Value::Array(Vec::new()));
    assert!(line["query_id"].is_string());
    assert!(line["abstained"].as_str().unwrap().contains("relevance"));
    // With the gate off, the nearest rule comes back.
    let output = ruche(&[
        "search",
        &index,
        "what is the weather tomorrow",
        "--json",
        "--min-relevance",
        "0",
        "--top-k",
        "2",
    ]);
    assert_code(&output, 0);
    let line: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(line["hits"].as_array().unwrap().len(), 2);
    // A batch prints one line per query, in input order, hits or not.
    let queries = write(
        dir.path(),
        "mixed.jsonl",
        "{\"id\": \"a\", \"text\": \"what is the weather tomorrow\"}\n{\"id\": \"b\", \"text\": \"I want a refund\"}\n{\"id\": \"c\", \"text\": \"xyzzy qwerty plugh\"}\n",
    );
    let output = ruche(&["search", &index, "--batch", &queries, "--json"]);
    assert_code(&output, 0);
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let got: Vec<(&str, usize)> = lines
        .iter()
        .map(|l| {
            (
                l["id"].as_str().unwrap(),
                l["hits"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(got, [("a", 0), ("b", 1), ("c", 0)]);
    // A bad threshold is a usage error.
    let output = ruche(&["search", &index, "refund", "--min-relevance", "3"]);
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains("min_relevance"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn explain_shows_the_gate_the_query_signals_and_the_pattern_that_matched() {
    let dir = tempfile::tempdir().unwrap();
    let rules = write(
        dir.path(),
        "rules.jsonl",
        r#"{"id": "refund", "condition": "customer asks for a refund", "action": "refund", "patterns": ["I want my money back", "reimburse me"]}
{"id": "declined", "condition": "a payment was declined", "action": "ask for the code", "patterns": ["it says PAY_DECLINED_51"]}
"#,
    );
    let index = dir.path().join("index").to_str().unwrap().to_string();
    assert_code(&ruche(&["index", &index, "--rules", &rules]), 0);
    let output = ruche(&["search", &index, "I want my money back", "--explain"]);
    assert_code(&output, 0);
    let text = stdout(&output);
    assert!(
        text.contains("matched pattern 1: \"I want my money back\""),
        "{text}"
    );
    assert!(text.contains("gate: min_relevance 0.500"), "{text}");
    assert!(
        text.contains("query: keywords [want, money, back]"),
        "{text}"
    );
    let output = ruche(&[
        "search",
        &index,
        "checkout says PAY_DECLINED_51",
        "--explain",
        "--json",
    ]);
    assert_code(&output, 0);
    let line: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(line["hits"][0]["id"], "declined");
    assert_eq!(line["hits"][0]["gate"], "exact_code");
    assert_eq!(line["gate"]["codes"][0], "pay_declined_51");
    assert_eq!(line["analysis"]["entities"][0]["text"], "PAY_DECLINED_51");
}

#[test]
fn each_selection_is_one_structured_log_event() {
    let (_dir, index) = indexed();
    let output = Command::new(env!("CARGO_BIN_EXE_ruche"))
        .args(["search", &index, "I want a refund"])
        .env("RUCHE_LOG", "info")
        .env("RUCHE_LOG_FORMAT", "json")
        .output_within();
    assert_code(&output, 0);
    let events: Vec<Value> = stderr(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 1, "{events:?}");
    let event = &events[0];
    assert_eq!(event["message"], "selection");
    assert_eq!(event["kind"], "rule");
    assert!(event["query_id"].as_str().unwrap().starts_with('q'));
    for key in [
        "strategy",
        "input_count",
        "output_count",
        "cutoff_score",
        "metadata",
    ] {
        assert!(!event[key].is_null(), "{key} in {event}");
    }
}

/// Not on a terminal, `index` says on stderr when each phase ends (the data is
/// searchable at `commit`); `--quiet` says nothing; stdout keeps its summary.
#[test]
fn index_reports_its_phases_unless_quiet() {
    let dir = tempfile::tempdir().unwrap();
    let rules = write(dir.path(), "rules.jsonl", RULES);
    let chunks = write(dir.path(), "chunks.jsonl", CHUNKS);
    let index = dir.path().join("index").to_str().unwrap().to_string();
    let output = ruche(&["index", &index, "--rules", &rules, "--chunks", &chunks]);
    assert_code(&output, 0);
    let err = stderr(&output);
    let phases: Vec<&str> = err
        .lines()
        .filter_map(|line| line.split(':').next())
        .collect();
    assert_eq!(phases, ["read", "embed", "commit", "graph"], "{err}");
    assert!(err.contains("read: 3 rules and 3 chunks, "), "{err}");
    assert!(
        err.contains("commit: 6 changes, searchable now in "),
        "{err}"
    );
    assert!(
        err.contains("graph: every vector in the HNSW graph ("),
        "{err}"
    );

    let quiet = dir.path().join("quiet").to_str().unwrap().to_string();
    let output = ruche(&["index", &quiet, "--chunks", &chunks, "--quiet"]);
    assert_code(&output, 0);
    assert_eq!(stderr(&output), "");
    assert!(stdout(&output).contains("indexed 0 rules and 3 chunks"));
}

/// Standard input can be read once: given to two inputs, the import is refused.
#[test]
fn standard_input_given_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("idx");
    let output = ruche_with_stdin(
        &[
            "index",
            index.to_str().unwrap(),
            "--chunks",
            "-",
            "--rules",
            "-",
        ],
        CHUNKS,
    );
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains("--rules and --chunks")
            || stderr(&output).contains("--chunks and --rules"),
        "{}",
        stderr(&output)
    );
    assert!(!index.exists());
}

/// Vectors of different dimensions: the error names the file, the line and the field,
/// within one file, across files, and against the index.
#[test]
fn a_dimension_mismatch_names_the_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("idx");
    let index = index.to_str().unwrap();
    let mixed = write(
        dir.path(),
        "mixed.jsonl",
        "{\"id\": \"a\", \"content\": \"x\", \"embedding\": [1, 0, 0]}\n\n{\"id\": \"b\", \"content\": \"y\", \"embedding\": [1, 0]}\n",
    );
    let output = ruche(&["index", index, "--chunks", &mixed]);
    assert_code(&output, 2);
    let message = stderr(&output);
    assert!(
        message.contains("mixed.jsonl: line 3: field `embedding`: 2 dimensions, but line 1"),
        "{message}"
    );

    let chunks = write(
        dir.path(),
        "c.jsonl",
        "{\"id\": \"a\", \"content\": \"x\", \"embedding\": [1, 0, 0]}\n",
    );
    let rules = write(
        dir.path(),
        "r.jsonl",
        "{\"id\": \"r\", \"condition\": \"c\", \"action\": \"a\", \"patterns\": [\"p\"], \"pattern_embeddings\": [[1, 0]]}\n",
    );
    let output = ruche(&["index", index, "--chunks", &chunks, "--rules", &rules]);
    assert_code(&output, 2);
    let message = stderr(&output);
    assert!(
        message.contains("c.jsonl") && message.contains("r.jsonl"),
        "{message}"
    );

    assert_code(&ruche(&["index", index, "--chunks", &chunks]), 0);
    let two = write(
        dir.path(),
        "two.jsonl",
        "{\"id\": \"b\", \"content\": \"y\", \"embedding\": [1, 0]}\n",
    );
    let output = ruche(&["index", index, "--chunks", &two]);
    assert_code(&output, 2);
    let message = stderr(&output);
    assert!(
        message.contains("two.jsonl: vectors of 2 dimensions")
            && message.contains("holds chunks of 3"),
        "{message}"
    );
}

/// A `--batch` query that fails when it runs names its line and its id; the answers of
/// the lines before it are written.
#[test]
fn a_batch_error_names_the_line_and_the_query_id() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("idx");
    let index = index.to_str().unwrap();
    let chunks = write(
        dir.path(),
        "c.jsonl",
        "{\"id\": \"a\", \"content\": \"the parcel\", \"embedding\": [1, 0, 0]}\n",
    );
    assert_code(&ruche(&["index", index, "--chunks", &chunks]), 0);
    let queries = write(
        dir.path(),
        "q.jsonl",
        "{\"id\": \"q1\", \"text\": \"parcel\"}\n\n{\"id\": \"q2\", \"text\": \"parcel\", \"embedding\": [1, 0]}\n",
    );
    let output = ruche(&[
        "search", index, "--kind", "chunks", "--batch", &queries, "--json",
    ]);
    assert_code(&output, 2);
    let message = stderr(&output);
    assert!(message.contains("q.jsonl: line 3 (id \"q2\")"), "{message}");
    assert_eq!(stdout(&output).lines().count(), 1, "q1's answer");
}
