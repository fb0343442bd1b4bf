//! The durability campaign, as redb and SQLite run theirs: a writer killed at random
//! points, a model-based test of writes and reopens against a `BTreeMap`, readers beside
//! a writer, fuzzed input, and an on-disk format fixture that later versions must open.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use proptest::prelude::*;
use ruchedb::{Chunk, Document, EmbedderSpec, Engine, ErrorKind, Kind, Rule, SearchRequest};

/// Set when the kill campaign runs this test binary as its writer.
const KILL_DIR: &str = "RUCHE_TEST_KILL_DIR";
/// Documents per commit of the writer child.
const BATCH: usize = 20;

fn vector(i: usize) -> Vec<f32> {
    let x = i as f32;
    vec![1.0, (x * 0.37).sin(), (x * 0.11).cos(), (x * 0.05).sin()]
}

/// Note `i` names the code `REF-0000i` and follows note `i - 1` (an edge of the graph).
fn note(i: usize) -> Chunk {
    let chunk = Chunk::new(
        format!("k{i:06}"),
        format!("note token{i} about the order REF-{i:05}"),
    )
    .with_embedding(vector(i));
    match i.checked_sub(1) {
        Some(previous) => chunk.with_relation("follows", format!("k{previous:06}")),
        None => chunk,
    }
}

/// Kills process `pid` unless dropped within `limit`: a writer child that hangs fails
/// the campaign (its acknowledgements stop, the kill ends the read) instead of
/// outlasting the run.
struct Watchdog(Option<std::sync::mpsc::Sender<()>>);

impl Watchdog {
    fn new(pid: u32, limit: std::time::Duration) -> Watchdog {
        let (sender, receiver) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            if receiver.recv_timeout(limit) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                eprintln!("the writer child {pid} still ran after {limit:?}: killed");
                // SAFETY: kill(2) takes plain integers and touches no memory of ours.
                unsafe { libc::kill(libc::pid_t::try_from(pid).unwrap(), libc::SIGKILL) };
            }
        });
        Watchdog(Some(sender))
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(sender) = self.0.take() {
            let _ = sender.send(());
        }
    }
}

/// The writer side: continues from what the index holds, one batch per commit (every
/// third batch also deletes the first document of the batch before), acknowledging
/// each commit on stdout, until killed.
#[test]
fn kill_campaign_writer() {
    let Some(dir) = std::env::var_os(KILL_DIR) else {
        return;
    };
    let engine = Engine::builder().open(dir).unwrap();
    let mut next = engine.stats().chunks / BATCH * BATCH;
    loop {
        engine
            .upsert_chunks((next..next + BATCH).map(note))
            .unwrap();
        engine.commit().unwrap();
        next += BATCH;
        println!("committed {next}");
    }
}

/// A writer child killed (SIGKILL) at 100 random points: after each kill, every
/// acknowledged commit is there, each commit is all or nothing, and both legs agree.
#[test]
#[ignore = "a long campaign: `cargo test -- --ignored` runs it, and .ci/run does"]
fn a_writer_killed_at_random_points_loses_no_acknowledged_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    Engine::builder()
        .with_embedder_spec(EmbedderSpec::None)
        .create(&path)
        .unwrap()
        .close()
        .unwrap();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    const KILLS: usize = 100;
    for round in 0..KILLS {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "campaign::kill_campaign_writer",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(KILL_DIR, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let watchdog = Watchdog::new(child.id(), std::time::Duration::from_secs(120));
        // Kill after a random number of acknowledged commits (0 to 3), at a random
        // moment within the next commit.
        let wait_for = (rand() % 4) as usize;
        let mut acknowledged = None;
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = 0;
        while seen < wait_for {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(n) = line.strip_prefix("committed ") {
                        acknowledged = Some(n.parse::<usize>().unwrap());
                        seen += 1;
                    }
                }
                _ => break,
            }
        }
        // A reader in this process, while the writer in the child writes.
        if round % 4 == 0 {
            let reader = Engine::builder().open_read_only(&path).unwrap();
            assert_whole_commits(&reader, &format!("round {round}, reading"), acknowledged);
        }
        std::thread::sleep(std::time::Duration::from_micros(rand() % 20_000));
        child.kill().unwrap();
        let status = child.wait().unwrap();
        drop(watchdog);
        assert!(
            seen == wait_for,
            "round {round}: the writer acknowledged {seen} commits of {wait_for} and stopped ({status})"
        );

        // What the killed writer published: whole commits, every acknowledged one.
        let reader = Engine::builder().open_read_only(&path).unwrap();
        let published =
            assert_whole_commits(&reader, &format!("round {round}, published"), acknowledged);
        drop(reader);
        let engine = Engine::builder().open(&path).unwrap();
        let chunks = assert_whole_commits(&engine, &format!("round {round}"), acknowledged);
        // The store may hold one commit more (killed before it was published).
        assert!(
            chunks == published || chunks == published + BATCH,
            "round {round}: {chunks} stored, {published} published"
        );
        // Both legs hold the last document committed, and nothing after it.
        if chunks > 0 {
            let last = chunks - 1;
            let by_text = engine
                .search(&SearchRequest::chunks(format!("token{last}")).with_top_k(1))
                .unwrap();
            assert_eq!(by_text.hits[0].id, format!("k{last:06}"), "round {round}");
            let by_vector = engine
                .search(
                    &SearchRequest::chunks("")
                        .browse()
                        .with_embedding(vector(last))
                        .with_min_relevance(0.0)
                        .with_top_k(1),
                )
                .unwrap();
            assert!(
                by_vector.hits[0].breakdown.vector.unwrap() > 0.9999,
                "round {round}"
            );
            // The graph holds the committed notes and their edges, and nothing after.
            let by_graph = engine
                .search(
                    &SearchRequest::chunks(format!("what came before REF-{last:05}?"))
                        .with_top_k(10),
                )
                .unwrap();
            assert_eq!(
                by_graph.fusion.graph_entities,
                [format!("ref-{last:05}")],
                "round {round}"
            );
            let reached: Vec<&str> = by_graph
                .hits
                .iter()
                .filter(|h| h.breakdown.found_by.graph)
                .map(|h| h.id.as_str())
                .collect();
            assert!(
                reached.contains(&format!("k{last:06}").as_str()),
                "round {round}: {reached:?}"
            );
            if last > 0 {
                let previous = format!("k{:06}", last - 1);
                assert!(
                    reached.contains(&previous.as_str()),
                    "round {round}: {reached:?}"
                );
            }
            assert!(
                reached
                    .iter()
                    .all(|id| id[1..].parse::<usize>().unwrap() <= last),
                "round {round}: {reached:?}"
            );
        }
        assert!(
            engine
                .get(Kind::Chunk, "default", &format!("k{chunks:06}"))
                .unwrap()
                .is_none()
        );
        drop(engine);
    }
    println!("kill points: {KILLS}");
}

/// Checks that `engine` holds whole commits of the writer, at least the acknowledged
/// ones, and that both legs find the last document of the last; returns the count.
fn assert_whole_commits(
    engine: &ruchedb::Reader,
    context: &str,
    acknowledged: Option<usize>,
) -> usize {
    let chunks = engine.stats().chunks;
    assert_eq!(chunks % BATCH, 0, "{context}: a commit split");
    if let Some(acknowledged) = acknowledged {
        assert!(
            chunks >= acknowledged,
            "{context}: {chunks} < {acknowledged}"
        );
    }
    if let Some(last) = chunks.checked_sub(1) {
        let by_text = engine
            .search(&SearchRequest::chunks(format!("token{last}")).with_top_k(1))
            .unwrap();
        assert_eq!(by_text.hits[0].id, format!("k{last:06}"), "{context}");
    }
    chunks
}

// # Model-based: writes, commits and reopens against a BTreeMap

#[derive(Debug, Clone)]
enum Op {
    Upsert(u8, u8),
    Delete(u8),
    Commit,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..24, 0u8..8).prop_map(|(id, word)| Op::Upsert(id, word)),
        2 => (0u8..24).prop_map(Op::Delete),
        3 => Just(Op::Commit),
        1 => Just(Op::Reopen),
    ]
}

const WORDS: [&str; 8] = [
    "refund", "parcel", "tent", "boots", "label", "invoice", "stove", "jacket",
];

fn model_chunk(id: u8, word: u8) -> Chunk {
    Chunk::new(
        format!("m{id:02}"),
        format!("{} case {id} marker{id}x", WORDS[usize::from(word)]),
    )
    .with_embedding(vec![1.0, f32::from(id), f32::from(word), 0.5])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// After every operation the engine's committed documents equal the model's, both
    /// legs find every committed document, and nothing uncommitted or deleted shows.
    #[test]
    fn writes_commits_and_reopens_match_a_model(ops in prop::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index");
        let mut engine = Some(
            Engine::builder().with_embedder_spec(EmbedderSpec::None).create(&path).unwrap(),
        );
        let mut committed: BTreeMap<u8, u8> = BTreeMap::new();
        let mut pending: Vec<Op> = Vec::new();
        for op in ops {
            match op {
                Op::Upsert(id, word) => {
                    engine.as_ref().unwrap().upsert_chunks([model_chunk(id, word)]).unwrap();
                    pending.push(op);
                }
                Op::Delete(id) => {
                    engine.as_ref().unwrap().delete(Kind::Chunk, "default", &format!("m{id:02}"));
                    pending.push(op);
                }
                Op::Commit => {
                    engine.as_ref().unwrap().commit().unwrap();
                    for op in pending.drain(..) {
                        match op {
                            Op::Upsert(id, word) => {
                                committed.insert(id, word);
                            }
                            Op::Delete(id) => {
                                committed.remove(&id);
                            }
                            _ => {}
                        }
                    }
                }
                Op::Reopen => {
                    // Uncommitted writes are dropped with the engine.
                    drop(engine.take());
                    pending.clear();
                    engine = Some(Engine::builder().open(&path).unwrap());
                }
            }
            let e = engine.as_ref().unwrap();
            prop_assert_eq!(e.stats().chunks, committed.len());
            for id in 0u8..24 {
                let found = e.get(Kind::Chunk, "default", &format!("m{id:02}")).unwrap();
                match committed.get(&id) {
                    Some(word) => {
                        let chunk = found.unwrap();
                        let content = chunk.as_chunk().unwrap().content.clone();
                        prop_assert!(content.starts_with(WORDS[usize::from(*word)]));
                    }
                    None => prop_assert!(found.is_none()),
                }
            }
            for (id, word) in &committed {
                let by_text = e
                    .search(&SearchRequest::chunks(format!("marker{id}x")).with_top_k(3))
                    .unwrap();
                prop_assert_eq!(&by_text.hits[0].id, &format!("m{id:02}"));
                let by_vector = e
                    .search(
                        &SearchRequest::chunks("").browse()
                            .with_embedding(vec![1.0, f32::from(*id), f32::from(*word), 0.5])
                            .with_min_relevance(0.0)
                            .with_top_k(1),
                    )
                    .unwrap();
                prop_assert!(by_vector.hits[0].breakdown.vector.unwrap() > 0.99999);
            }
        }
    }

}

/// Any record text is an error or a valid record, never a panic; any query text is
/// words, never an error (256 generated cases per run, counted).
#[test]
fn any_input_is_a_record_or_an_error_and_any_query_is_words() {
    use proptest::test_runner::{Config, TestRunner};
    let mut runner = TestRunner::new(Config {
        cases: 256,
        ..Config::default()
    });
    let cases = std::sync::atomic::AtomicUsize::new(0);
    let strategy = (
        ".{0,200}",
        r#"\{("[a-z_]{1,12}": ?("[^"]{0,20}"|[0-9.e-]{1,8}|\[[0-9., ]{0,12}\]|null|true),? ?){0,6}\}"#,
    );
    runner
        .run(&strategy, |(line, json_ish)| {
            cases.fetch_add(1, Ordering::Relaxed);
            for text in [&line, &json_ish] {
                if let Ok(rule) = serde_json::from_str::<Rule>(text) {
                    let _ = rule.validate();
                }
                if let Ok(chunk) = serde_json::from_str::<Chunk>(text) {
                    let _ = chunk.validate();
                }
                let _ = ruchedb::analysis::analyze(text);
            }
            let engine = query_engine();
            for request in [
                SearchRequest::rules(line.clone()),
                SearchRequest::chunks(line),
            ] {
                prop_assert!(engine.search(&request).is_ok());
            }
            Ok(())
        })
        .unwrap();
    println!("fuzz cases: {}", cases.load(Ordering::Relaxed));
}

/// One small engine for the query fuzzing, built once.
fn query_engine() -> &'static Engine {
    static ENGINE: std::sync::OnceLock<Engine> = std::sync::OnceLock::new();
    ENGINE.get_or_init(|| {
        let engine = Engine::builder().temporary().unwrap();
        engine
            .upsert_rules([Rule::new("r", "customer asks for a refund", "refund it")
                .with_patterns(["I want my money back"])])
            .unwrap();
        engine
            .upsert_chunks([Chunk::new("c", "order NW-15699 shipped late (tent)")])
            .unwrap();
        engine.commit().unwrap();
        engine
    })
}

/// Readers search while a writer upserts, deletes and commits thousands of times: no
/// panic, no deadlock, and every hit is a document both legs know.
#[test]
#[ignore = "a long campaign: `cargo test -- --ignored` runs it, and .ci/run does"]
fn readers_and_a_writer_run_side_by_side() {
    // A deadlock ends the run here, with a message, instead of outlasting it.
    let (finished, deadline) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let limit = std::time::Duration::from_secs(600);
        if deadline.recv_timeout(limit) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
            eprintln!("readers and a writer still ran after {limit:?}: a deadlock");
            std::process::abort();
        }
    });
    let engine = Arc::new(
        Engine::builder()
            .with_embedder_spec(EmbedderSpec::None)
            .temporary()
            .unwrap(),
    );
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let engine = Arc::clone(&engine);
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let mut searches = 0usize;
                while !done.load(Ordering::Acquire) {
                    let i = searches * 7 + r;
                    let response = engine
                        .search(
                            &SearchRequest::chunks(format!("token{}", i % 400))
                                .with_embedding(vector(i % 400))
                                .with_min_relevance(0.0)
                                .with_top_k(5),
                        )
                        .unwrap();
                    for hit in &response.hits {
                        assert!(hit.id.starts_with('k'), "{}", hit.id);
                        assert!(hit.breakdown.vector.is_some(), "{}: no vector", hit.id);
                    }
                    searches += 1;
                }
                searches
            })
        })
        .collect();
    let mut ops = 0;
    for round in 0..200 {
        for i in 0..10 {
            let id = (round * 13 + i * 31) % 400;
            if (round + i) % 5 == 0 {
                engine.delete(Kind::Chunk, "default", &format!("k{id:06}"));
            } else {
                engine.upsert_chunks([note(id)]).unwrap();
            }
            ops += 1;
        }
        engine.commit().unwrap();
        ops += 1;
    }
    done.store(true, Ordering::Release);
    let searches: usize = readers.into_iter().map(|r| r.join().unwrap()).sum();
    drop(finished);
    println!("operations: {ops} writes and commits, {searches} searches");
    assert!(searches > 0);
}

/// An index written by format version 1 (`tests/fixtures/v1-index`, made by
/// `make_v1_fixture` below) opens in this version with its documents; a store of
/// another format version is refused with `IncompatibleFormat`.
#[test]
fn the_v1_format_opens_and_other_versions_are_refused() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1-index");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    copy_dir(&fixture, &path);
    // Nothing was published for readers by version 1: a writer's open publishes.
    let err = Engine::builder().open_read_only(&path).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::NotPublished { .. }),
        "{err:?}"
    );
    {
        let engine = Engine::builder().open(&path).unwrap();
        let reader = Engine::builder().open_read_only(&path).unwrap();
        assert_eq!(reader.stats().chunks, 3);
        let stats = engine.stats();
        assert_eq!((stats.rules, stats.chunks), (2, 3));
        let hits = engine
            .search(&SearchRequest::rules("I want my money back"))
            .unwrap()
            .hits;
        assert_eq!(hits[0].id, "refund");
        let hits = engine
            .search(&SearchRequest::chunks("NW-15699").with_top_k(1))
            .unwrap()
            .hits;
        assert_eq!(hits[0].id, "order-note");
    }
    // The same store claiming a future format version.
    {
        // sled's flusher lets go of the file shortly after the engine is dropped.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let db = loop {
            match sled::open(path.join("store")) {
                Ok(db) => break db,
                Err(err) if std::time::Instant::now() < deadline => {
                    let _ = err;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(err) => panic!("{err}"),
            }
        };
        let main = db.open_tree("main").unwrap();
        main.insert(b"mformat_version", &99u32.to_be_bytes())
            .unwrap();
        db.flush().unwrap();
    }
    let err = Engine::builder().open(&path).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::IncompatibleFormat {
                found: 99,
                expected: 1
            }
        ),
        "{err}"
    );
}

/// An index the last version published (manifest format 2, files without aligned
/// sections, a base that readers decoded whole) is read as it is; the first open for
/// writing publishes a mapped base (manifest format 3), which reads the same documents,
/// vectors and answers. (The fixture was written by the version before the mapped base:
/// `ruche index` of 30 chunks and 2 rules with their vectors, one a rule's zero pattern
/// vector.)
#[test]
fn an_index_published_by_the_last_version_is_read_and_upgraded() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v2-published-index");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    copy_dir(&fixture, &path);
    let format = |path: &Path| -> (u64, bool) {
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path.join("MANIFEST")).unwrap()).unwrap();
        (
            manifest["manifest_format"].as_u64().unwrap(),
            manifest["view"]["base"]["mapped"]
                .as_bool()
                .unwrap_or(false),
        )
    };
    let answers = |engine: &ruchedb::Reader| -> Vec<Vec<(String, u64)>> {
        let requests = [
            SearchRequest::rules("the customer wants a refund"),
            SearchRequest::rules("money back").with_embedding(vec![0.1, 0.9, 0.1, 0.0]),
            SearchRequest::chunks("REF-00003 order"),
            SearchRequest::chunks("note")
                .with_embedding(vec![1.0, 0.3, 0.9, 0.1])
                .with_context("customer-1")
                .with_min_relevance(0.0),
        ];
        requests
            .iter()
            .map(|request| {
                let hits = engine.search(&request.clone().with_top_k(5)).unwrap().hits;
                assert!(!hits.is_empty(), "{request:?}");
                hits.into_iter()
                    .map(|h| (h.id, h.score.to_bits()))
                    .collect()
            })
            .collect()
    };
    assert_eq!(format(&path), (2, false));
    let (before, exported, refund) = {
        let reader = Engine::builder().open_read_only(&path).unwrap();
        let stats = reader.stats();
        assert_eq!((stats.rules, stats.chunks), (2, 30));
        let refund = reader
            .get(Kind::Rule, "default", "refund")
            .unwrap()
            .unwrap();
        let Document::Rule(rule) = &refund else {
            panic!("{refund:?}")
        };
        assert_eq!(
            rule.pattern_embeddings,
            Some(vec![vec![0.1, 0.9, 0.1, 0.0], vec![0.0; 4]])
        );
        let mut exported = reader.export(Kind::Chunk, None).unwrap();
        exported.extend(reader.export(Kind::Rule, None).unwrap());
        (answers(&reader), exported, refund)
    };
    // A reader wrote nothing: still the last version's files.
    assert_eq!(format(&path), (2, false));
    {
        let writer = Engine::builder().open(&path).unwrap();
        // Format 4: the manifest names the text commit readers open.
        assert_eq!(format(&path), (4, true));
        assert_eq!(answers(&writer), before);
    }
    let reader = Engine::builder().open_read_only(&path).unwrap();
    assert_eq!(answers(&reader), before);
    assert_eq!(
        reader
            .get(Kind::Rule, "default", "refund")
            .unwrap()
            .unwrap(),
        refund
    );
    let mut exported_now = reader.export(Kind::Chunk, None).unwrap();
    exported_now.extend(reader.export(Kind::Rule, None).unwrap());
    assert_eq!(exported_now, exported);
}

/// The answers the version before per-kind embedders gave on the v1 fixture (`ruche
/// search --json --min-relevance 0 --top-k 5 --now 2026-11-29T00:00:00Z`, a copy of the
/// fixture, release build of
/// commit 2d2cfee): ids and scores.
const V1_ANSWERS: &str = r#"{"kind": "rules", "text": "I want my money back", "hits": [["refund", 1.024999952316284], ["greet", 0.20200403690338137]]}
{"kind": "rules", "text": "the conversation starts, say hello", "hits": [["greet", 0.8167059993743897], ["refund", 0.2882364988327027]]}
{"kind": "rules", "text": "what is the weather", "hits": [["refund", 0.21305111646652225], ["greet", 0.1823847031593323]]}
{"kind": "chunks", "text": "NW-15699", "hits": [["order-note", 1.8360634810924532], ["pref", 0.09842453020811082], ["city", 0.062278229743242264]]}
{"kind": "chunks", "text": "how should we contact the customer", "hits": [["pref", 0.336986728489399], ["order-note", 0.29112555664777756], ["city", 0.1351566198468208]]}
{"kind": "chunks", "text": "refund", "hits": [["order-note", 0.583071106493473], ["pref", 0.15982338312268254], ["city", 0.05781664187088609]]}"#;

/// An index made before kinds had embedders of their own (one recorded `default`: the
/// static model) opens as it was: every kind keeps the static model, and it answers
/// exactly as the version before did, hits and scores.
#[test]
fn an_index_made_before_per_kind_embedders_answers_as_before() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1-index");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    copy_dir(&fixture, &path);
    let engine = Engine::builder().open(&path).unwrap();
    let stats = engine.stats();
    assert_eq!(stats.embedder.as_deref(), Some("default"));
    assert_eq!(stats.dimensions, Some(256));
    for kind in Kind::ALL {
        assert_eq!(
            engine.embedder(kind).unwrap().model_id(),
            ruchedb::StaticEmbedder::BUNDLED_MODEL_ID,
            "{kind}"
        );
    }
    // A reader of what the writer published answers the same.
    let reader = Engine::builder().open_read_only(&path).unwrap();
    for line in V1_ANSWERS.lines() {
        let case: serde_json::Value = serde_json::from_str(line).unwrap();
        let kind: Kind = case["kind"].as_str().unwrap().parse().unwrap();
        let text = case["text"].as_str().unwrap();
        let expected: Vec<(String, f64)> = case["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|hit| {
                (
                    hit[0].as_str().unwrap().to_string(),
                    hit[1].as_f64().unwrap(),
                )
            })
            .collect();
        let request = SearchRequest::new(kind, text)
            .with_min_relevance(0.0)
            .with_top_k(5)
            .with_now("2026-11-29T00:00:00Z".parse().unwrap());
        for searcher in [&engine, &reader] {
            let answered = searcher.search(&request).unwrap();
            let got: Vec<(String, f64)> = answered
                .hits
                .iter()
                .map(|hit| (hit.id.clone(), hit.score))
                .collect();
            assert_eq!(got, expected, "{kind} {text:?}");
        }
    }
}

/// Writes the v1 fixture (run by hand: `RUCHE_MAKE_FIXTURE=1 cargo test make_v1_fixture`).
#[test]
fn make_v1_fixture() {
    if std::env::var_os("RUCHE_MAKE_FIXTURE").is_none() {
        return;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1-index");
    let _ = std::fs::remove_dir_all(&path);
    let engine = Engine::builder().create(&path).unwrap();
    engine
        .upsert_rules([
            Rule::new("refund", "the customer wants a refund", "start the refund")
                .with_priority(50)
                .with_patterns(["I want my money back"]),
            Rule::new("greet", "the conversation starts", "greet the customer"),
        ])
        .unwrap();
    engine
        .upsert_chunks([
            Chunk::new(
                "order-note",
                "Order NW-15699 shipped late; refund of the fee promised.",
            )
            .with_importance(7),
            Chunk::new("pref", "Prefers email over phone calls").with_importance(8),
            Chunk::new("city", "Lives in Lyon"),
        ])
        .unwrap();
    engine.commit().unwrap();
    engine.close().unwrap();
    let _ = std::fs::remove_file(path.join("LOCK"));
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A snapshot sled left unfinished when killed (`snap.N.generating`, here empty) does not
/// make an intact store unreadable: sled 0.34 would read it as the latest snapshot.
#[test]
fn an_unfinished_sled_snapshot_is_not_taken_for_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    {
        let engine = Engine::builder()
            .with_embedder_spec(EmbedderSpec::None)
            .create(&path)
            .unwrap();
        engine.upsert_chunks((0..40).map(note)).unwrap();
        engine.commit().unwrap();
        engine.close().unwrap();
    }
    std::fs::write(path.join("store/snap.7FFFFFFFFFFFFFFF.generating"), b"").unwrap();
    let engine = Engine::builder().open(&path).unwrap();
    assert_eq!(engine.stats().chunks, 40);
}
