//! Durability: reopen, rebuild from the store, crash after commit, export and import.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use ruchedb::{
    Chunk, Config, EmbedderSpec, EngineBuilder, ErrorKind, Kind, SearchRequest, SearchResponse,
};

use crate::common::{clustered_vectors, ids, support_rules};

/// These tests mix rules without vectors and chunks that bring their own: indexes
/// without an embedder.
fn builder() -> EngineBuilder {
    ruchedb::Engine::builder().with_embedder_spec(EmbedderSpec::None)
}

const DIM: usize = 24;

/// A config whose vector leg always uses the graph (no exact scan of small sets).
fn graph_config() -> Config {
    let mut config = Config::default();
    config.pipeline.retrieval.exact_scan_threshold = 0;
    config
}

fn chunks(n: usize) -> Vec<Chunk> {
    let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf",
    ];
    clustered_vectors(7, n, DIM, 12)
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            Chunk::new(
                format!("c{i:05}"),
                format!("{} {} note {i}", words[i % 7], words[(i / 7) % 7]),
            )
            .with_importance((i % 10) as u8 + 1)
            .with_embedding(v)
        })
        .collect()
}

fn queries() -> Vec<SearchRequest> {
    clustered_vectors(99, 8, DIM, 12)
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let text = ["alpha", "bravo echo", "note 17", "golf delta"][i % 4];
            SearchRequest::chunks(text)
                .with_embedding(v)
                .with_top_k(10)
                .with_now("2026-11-21T00:00:00Z".parse().unwrap())
        })
        .collect()
}

/// What must stay identical across reopens: ids and scores of every query.
fn results(engine: &ruchedb::Engine) -> Vec<Vec<(String, String)>> {
    queries()
        .iter()
        .map(|q| summary(&engine.search(q).unwrap()))
        .collect()
}

fn summary(response: &SearchResponse) -> Vec<(String, String)> {
    response
        .hits
        .iter()
        .map(|h| (h.id.clone(), format!("{:.6}", h.score)))
        .collect()
}

#[test]
fn reopen_loads_the_graph_and_gives_identical_results() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let before = {
        let engine = builder().with_config(graph_config()).create(&path).unwrap();
        engine.upsert_rules(support_rules()).unwrap();
        engine.upsert_chunks(chunks(1_500)).unwrap();
        engine.commit().unwrap();
        engine.sync_graph().unwrap();
        let stats = engine.stats();
        assert_eq!(stats.chunk_graph.points, 1_500);
        assert_eq!(stats.chunk_graph.tail_docs, 0);
        let results = results(&engine);
        engine.close().unwrap();
        results
    };
    let engine = builder().with_config(graph_config()).open(&path).unwrap();
    // The checkpoint loads in the background; wait for it.
    engine.sync_graph().unwrap();
    let stats = engine.stats();
    assert_eq!(
        stats.counters.graph_checkpoint_loads, 1,
        "the chunk graph was loaded"
    );
    assert_eq!(stats.counters.graph_rebuilds, 0);
    assert_eq!(stats.counters.text_rebuilds, 0);
    assert_eq!(results(&engine), before);
    // Nothing was inserted after open: the graph came whole from the checkpoint.
    engine.sync_graph().unwrap();
    assert_eq!(engine.stats().counters.graph_vectors_inserted, 0);
}

/// A checkpoint keeps the keys of the vectors its documents hold, not the vectors: the
/// ones deleted after it was stored are gone from the store when it is loaded, and their
/// nodes (never returned) are passed through.
#[test]
fn a_graph_loads_from_its_checkpoint_after_documents_it_holds_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let deleted: Vec<String> = (0..1_500).step_by(9).map(|i| format!("c{i:05}")).collect();
    let before = {
        let engine = builder().with_config(graph_config()).create(&path).unwrap();
        engine.upsert_chunks(chunks(1_500)).unwrap();
        engine.commit().unwrap();
        engine.sync_graph().unwrap();
        let checkpoints = engine.stats().counters.graph_checkpoints;
        for id in &deleted {
            engine.delete(Kind::Chunk, "default", id);
        }
        engine.commit().unwrap();
        engine.sync_graph().unwrap();
        assert_eq!(engine.stats().counters.graph_checkpoints, checkpoints);
        let results = results(&engine);
        engine.close().unwrap();
        results
    };
    let engine = builder().with_config(graph_config()).open(&path).unwrap();
    engine.sync_graph().unwrap();
    let stats = engine.stats();
    assert_eq!(stats.counters.graph_checkpoint_loads, 1);
    assert_eq!(stats.counters.graph_rebuilds, 0);
    assert_eq!(stats.chunk_graph.points, 1_500);
    let after = results(&engine);
    assert_eq!(after, before);
    assert!(after.iter().flatten().all(|(id, _)| !deleted.contains(id)));
}

/// Dropping an engine while its graph checkpoint loads releases the index at once: a
/// second engine opens it in the same process, and the scratch directory a process left
/// behind (killed during a load) is removed, while the user's own files stay.
#[test]
fn an_engine_dropped_while_its_graph_loads_lets_go_of_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let before = {
        let engine = builder().with_config(graph_config()).create(&path).unwrap();
        engine.upsert_chunks(chunks(3_000)).unwrap();
        engine.commit().unwrap();
        let results = results(&engine);
        engine.close().unwrap();
        results
    };
    let left_behind = path.join(".graph-load-k1ll3d");
    std::fs::create_dir(&left_behind).unwrap();
    std::fs::write(left_behind.join("ruche.hnsw.data"), b"partial").unwrap();
    std::fs::write(path.join(".graph-notes"), b"mine").unwrap();
    for _ in 0..5 {
        // Opened and dropped before its checkpoint is in: no wait, no lock left held.
        drop(builder().with_config(graph_config()).open(&path).unwrap());
    }
    let engine = builder().with_config(graph_config()).open(&path).unwrap();
    assert!(
        !left_behind.exists(),
        "the scratch directory is ours: removed"
    );
    assert_eq!(std::fs::read(path.join(".graph-notes")).unwrap(), b"mine");
    // Before the checkpoint is in (exact scan) and after, the same results.
    assert_eq!(results(&engine), before);
    engine.sync_graph().unwrap();
    assert_eq!(engine.stats().counters.graph_checkpoint_loads, 1);
    assert_eq!(results(&engine), before);
    drop(engine);
    ruchedb::Engine::remove(&path).unwrap();
    let mut left: Vec<String> = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, [".graph-notes"]);
}

#[test]
fn a_deleted_text_index_is_rebuilt_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let before = {
        let engine = builder().create(&path).unwrap();
        engine.upsert_rules(support_rules()).unwrap();
        engine.upsert_chunks(chunks(300)).unwrap();
        engine.commit().unwrap();
        let rules = summary(
            &engine
                .search(&SearchRequest::rules("refund order"))
                .unwrap(),
        );
        (rules, results(&engine))
    };
    std::fs::remove_dir_all(path.join("text")).unwrap();
    let engine = builder().open(&path).unwrap();
    assert_eq!(engine.stats().counters.text_rebuilds, 1);
    let rules = summary(
        &engine
            .search(&SearchRequest::rules("refund order"))
            .unwrap(),
    );
    assert_eq!((rules, results(&engine)), before);
}

#[test]
fn a_corrupt_text_index_is_rebuilt_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    {
        let engine = builder().create(&path).unwrap();
        engine.upsert_rules(support_rules()).unwrap();
        engine.commit().unwrap();
    }
    std::fs::write(path.join("text").join("meta.json"), b"{ not json").unwrap();
    let engine = builder().open(&path).unwrap();
    assert_eq!(engine.stats().counters.text_rebuilds, 1);
    let response = engine.search(&SearchRequest::rules("refund")).unwrap();
    assert_eq!(response.hits[0].id, "refund");
}

#[test]
fn opening_a_missing_index_is_an_error_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nowhere");
    let err = builder().open(&path).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::IndexNotFound { .. }),
        "{err}"
    );
    assert!(!path.exists());
    builder().create(&path).unwrap();
    let err = builder().create(&path).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::IndexExists { .. }), "{err}");
}

#[test]
fn a_second_open_of_a_locked_index_fails() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let _engine = builder().create(&path).unwrap();
    let err = builder().open(&path).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Locked { .. }), "{err}");
    assert!(err.to_string().contains("locked"), "{err}");
}

#[test]
fn export_then_import_gives_the_same_results() {
    let source = builder().temporary().unwrap();
    source.upsert_rules(support_rules()).unwrap();
    source.upsert_chunks(chunks(200)).unwrap();
    source.commit().unwrap();
    let mut exported = Vec::new();
    for kind in [Kind::Rule, Kind::Chunk] {
        for doc in source.export(kind, None).unwrap() {
            exported.push(serde_json::to_string(&doc).unwrap());
        }
    }
    assert_eq!(exported.len(), support_rules().len() + 200);
    let target = builder().temporary().unwrap();
    let docs: Vec<ruchedb::Document> = exported
        .iter()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            if value.get("condition").is_some() {
                ruchedb::Document::Rule(serde_json::from_value(value).unwrap())
            } else {
                ruchedb::Document::Chunk(serde_json::from_value(value).unwrap())
            }
        })
        .collect();
    target.upsert(docs).unwrap();
    target.commit().unwrap();
    assert_eq!(results(&target), results(&source));
    let rules = SearchRequest::rules("refund for my order").with_top_k(5);
    assert_eq!(
        summary(&target.search(&rules).unwrap()),
        summary(&source.search(&rules).unwrap())
    );
    assert_eq!(
        target.get(Kind::Chunk, "default", "c00007").unwrap(),
        source.get(Kind::Chunk, "default", "c00007").unwrap()
    );
}

/// Set by `kill_after_commit_loses_nothing` when it runs this test binary as a child.
const CRASH_DIR: &str = "RUCHE_TEST_CRASH_DIR";

/// The child side of the crash test: commits batches forever, acknowledging each.
#[test]
fn crash_child() {
    let Some(dir) = std::env::var_os(CRASH_DIR) else {
        return;
    };
    let engine = builder().with_config(graph_config()).open(dir).unwrap();
    let all = chunks(2_000);
    for (batch_idx, batch) in all.chunks(100).enumerate() {
        engine.upsert_chunks(batch.to_vec()).unwrap();
        engine.commit().unwrap();
        println!("committed {batch_idx}");
    }
    // Wait to be killed: no clean close, no checkpoint.
    std::thread::sleep(std::time::Duration::from_secs(600));
}

#[test]
fn kill_after_commit_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    {
        // A checkpointed first state, so the crash lands between two checkpoints.
        let engine = builder().with_config(graph_config()).create(&path).unwrap();
        engine.upsert_rules(support_rules()).unwrap();
        engine.commit().unwrap();
        engine.close().unwrap();
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "persistence::crash_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CRASH_DIR, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut acknowledged = None;
    for line in stdout.lines() {
        let line = line.unwrap();
        if let Some(n) = line.strip_prefix("committed ") {
            let n: usize = n.parse().unwrap();
            acknowledged = Some(n);
            if n == 6 {
                break;
            }
        }
    }
    child.kill().unwrap(); // SIGKILL: no destructor runs.
    child.wait().unwrap();
    let acknowledged = acknowledged.expect("the child committed") + 1;

    let engine = builder().with_config(graph_config()).open(&path).unwrap();
    let stats = engine.stats();
    // Every acknowledged batch is there; a batch is all or nothing.
    assert!(
        stats.chunks >= acknowledged * 100,
        "{} < {}",
        stats.chunks,
        acknowledged * 100
    );
    assert_eq!(stats.chunks % 100, 0);
    assert_eq!(stats.rules, support_rules().len());
    let expected = chunks(stats.chunks);
    // Rank by relevance alone, so that importance does not reorder the hits.
    let relevance_only = ruchedb::chunk::ChunkWeights::new(1.0, 0.0, 0.0);
    for chunk in expected.iter().step_by(37) {
        let found = engine
            .get(Kind::Chunk, "default", &chunk.id)
            .unwrap()
            .unwrap();
        assert_eq!(found.as_chunk().unwrap().content, chunk.content);
        // Searchable by both legs right away (the graph tail is scanned exactly).
        let by_vector = engine
            .search(
                &SearchRequest::chunks("")
                    .browse()
                    .with_embedding(chunk.embedding.clone().unwrap())
                    .with_chunk_weights(relevance_only)
                    .with_top_k(3),
            )
            .unwrap();
        assert!(
            ids(&by_vector.hits).contains(&chunk.id.as_str()),
            "{}",
            chunk.id
        );
        let by_text = engine
            .search(
                &SearchRequest::chunks(chunk.content.clone())
                    .with_chunk_weights(relevance_only)
                    .with_top_k(3),
            )
            .unwrap();
        assert_eq!(by_text.hits[0].id, chunk.id);
    }
}
