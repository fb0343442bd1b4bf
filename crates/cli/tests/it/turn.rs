//! `ruche turn`: one call per message, its JSON line, its batch form and its log event
//! (seed 000's structured log).

use std::path::Path;

use crate::run::ruche_env;

use serde_json::Value;

/// The sample index (`index_data/`), built once per test, with the static model for
/// every kind: these are tests of the command's output, on paraphrases of the sample's
/// rules that the static model's cosines let through the rules' gate (the default,
/// all-MiniLM-L6-v2, refuses some: `docs/relevance.md`).
fn sample(dir: &Path) -> String {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../index_data");
    let index = dir.join("index").to_str().unwrap().to_string();
    let file = |name: &str| data.join(name).to_str().unwrap().to_string();
    let output = ruche_env(
        &[
            "index",
            &index,
            "--rules",
            &file("rules.toml"),
            "--scenarios",
            &file("scenarios.toml"),
            "--tools",
            &file("tools.toml"),
            "--chunks",
            &file("chunks.jsonl"),
            "--embedder",
            "static",
            "-q",
        ],
        &[],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    index
}

const MESSAGE: &str = "I want to return the boots I bought, they are too small";

#[test]
fn a_turn_is_one_json_line_with_every_part() {
    let dir = tempfile::tempdir().unwrap();
    let index = sample(dir.path());
    let output = ruche_env(
        &[
            "turn",
            &index,
            MESSAGE,
            "--budget-tokens",
            "300",
            "--json",
            "--render",
        ],
        &[],
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let turn: Value = serde_json::from_str(&stdout).unwrap();
    assert!(turn["turn_id"].as_str().unwrap().starts_with("turn-"));
    for part in ["scenario", "rules", "memory", "tools"] {
        assert!(turn[part]["hits"].is_array(), "{part}: {turn}");
    }
    assert_eq!(turn["scenario"]["active"], "returns");
    assert_eq!(turn["scenario"]["activation"], "detected");
    assert_eq!(turn["rules"]["hits"][0]["id"], "return-start");
    assert_eq!(turn["budget"]["limit"], 300);
    assert_eq!(turn["budget"]["tokenizer"], "o200k_base");
    assert!(turn["budget"]["used"].as_u64().unwrap() <= 300);
    assert!(turn["budget"]["memory"]["cut"].is_u64(), "{turn}");
    assert!(turn["timings_us"]["total_us"].as_u64().unwrap() > 0);
    let prompt = turn["prompt"].as_str().unwrap();
    assert!(
        prompt.starts_with("Scenario: Returns and refunds (returns): "),
        "{prompt}"
    );
    assert!(prompt.contains("\nRules to follow:\n- the customer would like to return an item: "));

    // --render alone prints the block as is.
    let rendered = ruche_env(
        &[
            "turn",
            &index,
            MESSAGE,
            "--budget-tokens",
            "300",
            "--render",
        ],
        &[],
    );
    assert_eq!(String::from_utf8(rendered.stdout).unwrap(), prompt);

    // Nothing relevant: an empty turn, every key present, exit 1 as an empty search.
    let empty = ruche_env(&["turn", &index, "xyzzy qwerty plugh", "--json"], &[]);
    let turn: Value = serde_json::from_slice(&empty.stdout).unwrap();
    for part in ["scenario", "rules", "tools"] {
        assert_eq!(turn[part]["hits"], serde_json::json!([]), "{part}: {turn}");
    }
}

#[test]
fn a_batch_gives_one_line_per_message_and_names_a_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    let index = sample(dir.path());
    let batch = dir.path().join("turns.jsonl");
    std::fs::write(
        &batch,
        concat!(
            r#"{"id": "a", "text": "I want to return the boots I bought, they are too small", "budget_tokens": 200}"#,
            "\n",
            r#"{"id": "b", "kind": "rules", "text": "it's order NW-10571", "scenario_id": "returns", "step_id": "collect_order"}"#,
            "\n",
        ),
    )
    .unwrap();
    let output = ruche_env(&["turn", &index, "--batch", batch.to_str().unwrap()], &[]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["id"], "a");
    assert!(lines[0]["budget"]["used"].as_u64().unwrap() <= 200);
    assert_eq!(lines[1]["id"], "b");
    assert_eq!(lines[1]["scenario"]["active"], "returns");
    assert_eq!(lines[1]["scenario"]["step"], "collect_order");

    std::fs::write(
        &batch,
        concat!(
            r#"{"id": "a", "text": "hi"}"#,
            "\n",
            r#"{"id": "b", "text": "hi", "step_id": "x"}"#,
            "\n"
        ),
    )
    .unwrap();
    let bad = ruche_env(&["turn", &index, "--batch", batch.to_str().unwrap()], &[]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        bad.stdout.is_empty(),
        "no line runs before every line is valid"
    );
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("line 2") && stderr.contains("scenario_id"),
        "{stderr}"
    );
}

/// Seed 000's example, field for field: one event per turn, `logical_turn_id`, and under
/// `retrieval` each part's `strategy`, `input_count`, `output_count`, `cutoff_score` and
/// `metadata`, as nested JSON objects.
#[test]
fn a_turn_logs_one_event_shaped_like_seed_000() {
    let dir = tempfile::tempdir().unwrap();
    let index = sample(dir.path());
    let output = ruche_env(
        &["turn", &index, MESSAGE, "--json"],
        &[("RUCHE_LOG", "info"), ("RUCHE_LOG_FORMAT", "json")],
    );
    assert!(output.status.success());
    let turn: Value = serde_json::from_slice(&output.stdout).unwrap();
    let events: Vec<Value> = String::from_utf8(output.stderr)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .filter(|e: &Value| e["target"] == "ruchedb::turn")
        .collect();
    assert_eq!(events.len(), 1, "{events:?}");
    let event = &events[0];
    let logical = event["logical_turn_id"].as_str().unwrap();
    assert!(
        turn["turn_id"].as_str().unwrap().starts_with(logical),
        "{event}"
    );
    let retrieval = event["retrieval"]
        .as_object()
        .expect("retrieval is an object, not a string");
    let parts: Vec<&str> = retrieval.keys().map(String::as_str).collect();
    assert_eq!(parts, ["rules", "scenarios", "memory", "tools"]);
    for (part, selection) in retrieval {
        let fields: Vec<&str> = selection
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            fields,
            [
                "strategy",
                "input_count",
                "output_count",
                "cutoff_score",
                "metadata"
            ],
            "{part}"
        );
        assert!(selection["metadata"].is_object(), "{part}: {selection}");
        assert!(selection["strategy"].is_string());
        assert!(selection["input_count"].is_u64() && selection["output_count"].is_u64());
        assert!(selection["cutoff_score"].is_f64());
    }
    assert_eq!(retrieval["scenarios"]["strategy"], "entropy");
    assert_eq!(
        retrieval["rules"]["output_count"].as_u64().unwrap() as usize,
        turn["rules"]["hits"].as_array().unwrap().len()
    );
}
