//! What a user meets at the edges: empty messages, out-of-range budgets, backups aimed at
//! the index itself, feedback after a re-embedding, a damaged text index under `export`,
//! and quiet logs when nothing went wrong.

use std::path::Path;

use ruchedb::{Chunk, EmbedderSpec, Engine, ErrorKind, Rule, SearchRequest, TurnRequest};

use crate::cli::{assert_code, stderr, stdout};
use crate::run::{ruche, ruche_env};

/// A small index with rules and the memory of one conversation, made by the library.
fn index(path: &Path, spec: EmbedderSpec) {
    let engine = Engine::builder()
        .with_embedder_spec(spec)
        .create(path)
        .unwrap();
    engine
        .upsert_rules([
            Rule::new(
                "refund",
                "the customer asks for a refund",
                "check the order, then refund",
            )
            .with_patterns(["I want my money back"]),
            Rule::new("greet", "the conversation starts", "greet the customer"),
        ])
        .unwrap();
    engine
        .upsert_chunks((0..8).map(|i| {
            Chunk::new(
                format!("m{i}"),
                format!("note {i}: the customer lives in Lyon and has a dog"),
            )
            .with_context(format!("u{}", i % 2))
            .with_importance(9)
        }))
        .unwrap();
    engine.commit().unwrap();
    engine.close().unwrap();
}

/// Every file under `dir`, with its bytes.
fn tree(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                files.push((entry.path(), std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    files.sort();
    files
}

/// An empty message asks nothing: the library answers nothing and says why, the CLI
/// refuses it (a shell variable that was not set), a batch line without `text` is named
/// by its number, and a line that is not an object says so.
#[test]
fn an_empty_message_gets_no_answer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    index(&path, EmbedderSpec::StaticBundled);

    let engine = Engine::builder().open_read_only(&path).unwrap();
    for text in ["", "   ", "\n\t"] {
        for request in [
            SearchRequest::chunks(text),
            SearchRequest::chunks(text).with_context("u1"),
            SearchRequest::rules(text),
            SearchRequest::tools(text),
        ] {
            let response = engine.search(&request).unwrap();
            assert!(response.hits.is_empty(), "{text:?}: {:?}", response.hits);
            let reason = response.gate.abstention_reason().unwrap();
            assert!(reason.contains("empty"), "{reason}");
        }
        let turn = engine
            .turn(&TurnRequest::new(text).with_context("u1"))
            .unwrap();
        assert!(
            turn.memory.hits.is_empty(),
            "{text:?}: {:?}",
            turn.memory.hits
        );
        assert!(turn.rules.hits.is_empty() && turn.tools.hits.is_empty());
        assert_eq!(turn.scenario.active, None);
    }
    // A vector alone is a query.
    let vector = engine
        .embedder(ruchedb::Kind::Rule)
        .unwrap()
        .embed_batch(&["my money back"])
        .unwrap()
        .remove(0);
    let response = engine
        .search(&SearchRequest::rules("").with_embedding(vector))
        .unwrap();
    assert!(!response.gate.empty_message);
    drop(engine);

    let index = path.to_str().unwrap();
    for args in [
        vec!["turn", index, ""],
        vec!["turn", index, "  ", "--context", "u1"],
        vec!["search", index, "--kind", "chunks", ""],
        vec!["search", index, ""],
    ] {
        let output = ruche(&args);
        assert_code(&output, 2);
        assert!(
            stderr(&output).contains("the message is empty"),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(stdout(&output).is_empty(), "{args:?}: {}", stdout(&output));
    }
    // In a batch, an empty message (users send them) gets no hits; a line without
    // `text` is a mistake, named.
    let batch = dir.path().join("batch.jsonl");
    std::fs::write(
        &batch,
        "{\"id\": 1, \"text\": \"\", \"kind\": \"chunks\", \"context_id\": \"u1\"}\n",
    )
    .unwrap();
    for command in ["turn", "search"] {
        let output = ruche(&[command, index, "--batch", batch.to_str().unwrap()]);
        assert_code(&output, 0);
        let line: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
        let hits = match command {
            "turn" => &line["memory"]["hits"],
            _ => &line["hits"],
        };
        assert_eq!(hits.as_array().map(Vec::len), Some(0), "{command}: {line}");
    }
    for (lines, expected) in [
        (
            "{\"id\": 1, \"text\": \"I want my money back\"}\n{\"id\": 2, \"context_id\": \"u1\"}\n",
            "line 2: `text` is missing",
        ),
        (
            "{\"id\": 1, \"text\": \"hello\"}\n[]\n",
            "line 2: expected a JSON object",
        ),
        ("\"hello\"\n", "line 1: expected a JSON object"),
    ] {
        std::fs::write(&batch, lines).unwrap();
        for command in ["turn", "search"] {
            let output = ruche(&[command, index, "--batch", batch.to_str().unwrap()]);
            assert_code(&output, 2);
            assert!(
                stderr(&output).contains(expected),
                "{command} {lines:?}: {}",
                stderr(&output)
            );
        }
    }
}

/// One range for a turn's budget everywhere: 0 to 1,000,000 tokens in the library, the
/// CLI's flag and a batch line (the MCP server's `budget_tokens`: `mcp.rs`).
#[test]
fn a_budget_has_one_range_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    index(&path, EmbedderSpec::None);
    let engine = Engine::builder().open_read_only(&path).unwrap();
    for budget in [0, 1, 1_000_000] {
        engine
            .turn(&TurnRequest::new("I want my money back").with_budget_tokens(budget))
            .unwrap();
    }
    let err = engine
        .turn(&TurnRequest::new("I want my money back").with_budget_tokens(1_000_001))
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::InvalidInput { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("between 0 and 1000000"), "{err}");
    drop(engine);

    let index = path.to_str().unwrap();
    // Budget 0 cuts every hit: the turn has nothing to show (exit 1).
    let output = ruche(&[
        "turn",
        index,
        "I want my money back",
        "--budget-tokens",
        "0",
    ]);
    assert_code(&output, 1);
    assert!(
        stdout(&output).contains("cut by the budget"),
        "{}",
        stdout(&output)
    );
    assert_code(
        &ruche(&[
            "turn",
            index,
            "I want my money back",
            "--budget-tokens",
            "1000000",
        ]),
        0,
    );
    let output = ruche(&["turn", index, "refund please", "--budget-tokens", "1000001"]);
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains("0..=1000000"),
        "{}",
        stderr(&output)
    );
    let batch = dir.path().join("batch.jsonl");
    std::fs::write(
        &batch,
        "{\"id\": 1, \"text\": \"refund please\", \"budget_tokens\": 1000001}\n",
    )
    .unwrap();
    let output = ruche(&["turn", index, "--batch", batch.to_str().unwrap()]);
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains("between 0 and 1000000"),
        "{}",
        stderr(&output)
    );
}

/// A backup cannot be written into the index it copies (the index's own maintenance
/// would delete it), whatever path leads there; the index is left as it was.
#[test]
fn a_backup_inside_its_index_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    index(&path, EmbedderSpec::None);
    std::fs::create_dir_all(path.join("sub")).unwrap();
    let before = tree(&path);
    let index = path.to_str().unwrap();
    let link = dir.path().join("link");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let mut dests = vec![
        index.to_string(),
        format!("{index}/"),
        format!("{index}/.ruche/x"),
        format!("{index}/store/x"),
        format!("{index}/view"),
        format!("{index}/sub/copy"),
        format!("{index}/sub/../x"),
    ];
    if cfg!(unix) {
        dests.push(format!("{}/copy", link.display()));
    }
    for dest in &dests {
        let output = ruche(&["backup", index, dest]);
        assert_code(&output, 2);
        assert!(
            stderr(&output).contains("cannot be written into the index it copies"),
            "{dest}: {}",
            stderr(&output)
        );
    }
    assert!(
        tree(&path) == before,
        "a refused backup wrote into the index"
    );
    // Beside it, and into a directory of someone else's files: a whole copy, a refusal.
    let beside = dir.path().join("copy");
    assert_code(&ruche(&["backup", index, beside.to_str().unwrap()]), 0);
    let output = ruche(&["backup", index, beside.to_str().unwrap()]);
    assert_code(&output, 2);
    assert!(stderr(&output).contains("already"), "{}", stderr(&output));
}

/// Query ids a reader signs after `reembed` are taken by feedback: the new index
/// publishes the key that signs them with its first commit.
#[test]
fn feedback_is_taken_after_reembed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    index(&path, EmbedderSpec::None);
    let index = path.to_str().unwrap();
    let search = |text: &str| -> String {
        let output = ruche(&["search", index, text, "--json"]);
        assert_code(&output, 0);
        let response: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
        response["query_id"].as_str().unwrap().to_string()
    };
    let before = search("I want my money back");
    assert_code(&ruche(&["reembed", index, "--embedder", "default"]), 0);
    let after = search("I want my money back");
    let output = ruche(&["feedback", index, &after, "--useful"]);
    assert_code(&output, 0);
    // An id issued before the reembed counts too, once.
    assert_code(&ruche(&["feedback", index, &before, "--useful"]), 0);
    assert_code(&ruche(&["feedback", index, &before, "--useful"]), 0);
    let output = ruche(&["feedback", index, &before, "--not-useful"]);
    assert_code(&output, 2);
}

/// A damaged text index does not keep the documents from `export`, `stats` or `get`;
/// searches fail with an error naming it and `repair`.
#[test]
fn export_reads_past_a_damaged_text_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    index(&path, EmbedderSpec::None);
    let index = path.to_str().unwrap();
    let exported = ruche(&["export", index]);
    assert_code(&exported, 0);
    // Every segment file of the text index damaged.
    let mut damaged = 0;
    for entry in std::fs::read_dir(path.join("text")).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".idx") || name.ends_with(".term") || name == "meta.json" {
            std::fs::write(entry.path(), b"garbage").unwrap();
            damaged += 1;
        }
    }
    assert!(damaged > 0);
    let output = ruche(&["export", index]);
    assert_code(&output, 0);
    assert_eq!(stdout(&output), stdout(&exported));
    assert_code(&ruche(&["stats", index]), 0);
    let output = ruche(&["search", index, "I want my money back"]);
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains("text index"),
        "{}",
        stderr(&output)
    );
    assert!(stderr(&output).contains("repair"), "{}", stderr(&output));
    assert_code(&ruche(&["repair", index]), 0);
    assert_code(&ruche(&["search", index, "I want my money back"]), 0);
}

/// Maintenance that goes as planned logs no warning: a warning is for a recovery.
#[test]
fn normal_maintenance_logs_no_warning() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    index(&path, EmbedderSpec::None);
    let index = path.to_str().unwrap();
    let copy = dir.path().join("copy");
    for args in [
        vec!["compact", index],
        vec!["reembed", index, "--embedder", "default"],
        vec!["repair", index],
        vec!["check", index],
        vec!["backup", index, copy.to_str().unwrap()],
    ] {
        let output = ruche_env(&args, &[("RUCHE_LOG", "warn")]);
        assert_code(&output, 0);
        assert!(
            !stderr(&output).contains("WARN"),
            "{args:?}: {}",
            stderr(&output)
        );
    }
}

/// A disk that fails under an import (every `fsync` and store write in turn, failed
/// with `strace`'s fault injection): a durable commit exits 0 or 3, never 2 or a panic;
/// an import that exits 2 committed nothing; every error is one line naming the path,
/// never a debug dump of the operating system's error.
#[test]
#[ignore = "a long campaign: `cargo test -- --ignored` runs it, and .ci/run does"]
fn a_failing_disk_never_makes_an_exit_status_lie() {
    let Ok(probe) = std::process::Command::new("strace").arg("-V").output() else {
        crate::run::skip_without("strace", "Debian's `strace` package; .ci/run installs it");
        return;
    };
    assert!(probe.status.success());
    let dir = tempfile::tempdir().unwrap();
    let chunks = dir.path().join("chunks.jsonl");
    let lines: Vec<String> = (0..300)
        .map(|i| format!(r#"{{"id": "c{i}", "content": "note {i} about order NW-{i}"}}"#))
        .collect();
    std::fs::write(&chunks, lines.join("\n")).unwrap();
    let path = dir.path().join("idx");
    let index = path.to_str().unwrap();
    let mut faults = 0;
    for (call, errno) in [
        ("fsync", "EIO"),
        ("fdatasync", "EIO"),
        ("pwrite64", "ENOSPC"),
    ] {
        for when in 1..=24 {
            let _ = std::fs::remove_dir_all(&path);
            let output = crate::run::output_within(
                std::process::Command::new("strace")
                    .args(["-f", "-o", "/dev/null", "-e"])
                    .arg(format!("inject={call}:error={errno}:when={when}"))
                    .arg(env!("CARGO_BIN_EXE_ruche"))
                    .args(["index", index, "--chunks", chunks.to_str().unwrap()])
                    .env_remove("RUCHE_CONFIG")
                    .env_remove("RUST_BACKTRACE")
                    .env("RUCHE_LOG", "off")
                    .stdin(std::process::Stdio::null()),
            );
            let context = format!("{call} failing with {errno} at call {when}");
            let err = stderr(&output);
            let code = output.status.code();
            assert!(
                matches!(code, Some(0 | 2 | 3)),
                "{context}: exit {code:?}: {err}"
            );
            if err.contains("searchable now") {
                assert!(
                    matches!(code, Some(0 | 3)),
                    "{context}: committed, exit {code:?}: {err}"
                );
            }
            if code != Some(0) {
                faults += 1;
                let message = err.lines().last().unwrap_or_default();
                assert!(message.starts_with("ruche: "), "{context}: {err}");
                assert!(
                    !message.contains("Os {") && !message.contains("Custom {"),
                    "{context}: {message}"
                );
                if message.contains("I/O error") {
                    assert!(message.contains(" on "), "{context}: no path: {message}");
                }
            }
            // What the exit status says is what a writer finds.
            let found = Engine::builder()
                .open(&path)
                .map(|engine| engine.stats().chunks);
            match code {
                Some(0 | 3) => assert_eq!(found.as_ref().ok(), Some(&300), "{context}: {err}"),
                _ => assert!(
                    found.as_ref().map_or(true, |n| *n == 0),
                    "{context}: {found:?}: {err}"
                ),
            }
        }
    }
    assert!(faults > 10, "only {faults} injected faults were met");
}
