//! Readers: engines opened read-only beside one writer. They take no lock, write
//! nothing, see the last commit published, and move to a newer one on `refresh`.

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;
use ruchedb::{Chunk, EmbedderSpec, Engine, ErrorKind, Kind, Rule, SearchRequest};

fn vector(i: usize) -> Vec<f32> {
    let x = i as f32;
    vec![1.0, (x * 0.37).sin(), (x * 0.11).cos(), (x * 0.05).sin()]
}

fn note(i: usize, text: &str) -> Chunk {
    Chunk::new(format!("c{i:04}"), format!("note{i} {text} REF-{i:05}")).with_embedding(vector(i))
}

fn writer(path: &Path) -> Engine {
    Engine::builder()
        .with_embedder_spec(EmbedderSpec::None)
        .open_or_create(path)
        .unwrap()
}

/// Ids and scores of a few searches of every leg.
fn answers(engine: &ruchedb::Reader, n: usize) -> Vec<Vec<(String, u64)>> {
    let mut requests = vec![
        SearchRequest::chunks("note about"),
        SearchRequest::chunks("REF-00003 what came before"),
        SearchRequest::rules("refund please"),
    ];
    for i in [0, n / 2, n.saturating_sub(1)] {
        requests.push(
            SearchRequest::chunks(format!("note{i}"))
                .with_embedding(vector(i))
                .with_min_relevance(0.0),
        );
    }
    requests
        .iter()
        .map(|request| {
            engine
                .search(&request.clone().with_top_k(8))
                .unwrap()
                .hits
                .into_iter()
                .map(|hit| (hit.id, hit.score.to_bits()))
                .collect()
        })
        .collect()
}

/// Every file of `dir` with its length and modification time.
fn files(dir: &Path) -> BTreeMap<String, (u64, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                out.insert(
                    entry.path().display().to_string(),
                    (meta.len(), meta.modified().unwrap()),
                );
            }
        }
    }
    out
}

#[test]
fn a_reader_sees_the_last_commit_until_it_refreshes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let writer = writer(&path);
    writer
        .upsert_chunks((0..60).map(|i| note(i, "about the order")))
        .unwrap();
    writer
        .upsert_rules([Rule::new("refund", "the customer wants a refund", "refund")])
        .unwrap();
    writer.commit().unwrap();

    // Beside the open writer, in the same process: no lock is taken.
    let mut reader = Engine::builder().open_read_only(&path).unwrap();
    assert!(reader.is_read_only() && !writer.is_read_only());
    assert_eq!(answers(&reader, 60), answers(&writer, 60));
    assert_eq!(reader.stats().chunks, 60);
    assert_eq!(
        reader.get(Kind::Chunk, "default", "c0007").unwrap(),
        writer.get(Kind::Chunk, "default", "c0007").unwrap()
    );
    assert_eq!(
        reader.export(Kind::Chunk, None).unwrap(),
        writer.export(Kind::Chunk, None).unwrap()
    );
    let before = answers(&reader, 60);
    let exported = reader.export(Kind::Chunk, None).unwrap();

    // The writer moves on: replaces, deletes, adds.
    writer
        .upsert_chunks((50..80).map(|i| note(i, "a newer version")))
        .unwrap();
    writer.delete(Kind::Chunk, "default", "c0003");
    writer.commit().unwrap();
    assert_eq!(reader.stats().chunks, 60, "a reader keeps its commit");
    assert_eq!(answers(&reader, 60), before);
    // The writer merged the parts the reader opened and removed them: the reader reads
    // them from the files it keeps open.
    let view: Vec<String> = std::fs::read_dir(path.join("view"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !view.iter().any(|name| name == "part-000000000001.rv"),
        "{view:?}"
    );
    assert_eq!(reader.export(Kind::Chunk, None).unwrap(), exported);
    assert!(
        reader
            .get(Kind::Chunk, "default", "c0003")
            .unwrap()
            .is_some()
    );

    assert!(reader.refresh().unwrap());
    assert_eq!(reader.stats().chunks, 79);
    assert_eq!(answers(&reader, 80), answers(&writer, 80));
    assert!(
        reader
            .get(Kind::Chunk, "default", "c0003")
            .unwrap()
            .is_none()
    );
    assert!(!reader.refresh().unwrap(), "nothing newer");
    assert_eq!(
        reader.export(Kind::Chunk, None).unwrap(),
        writer.export(Kind::Chunk, None).unwrap()
    );
}

#[test]
fn a_reader_can_only_read_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    {
        let writer = writer(&path);
        writer
            .upsert_chunks((0..300).map(|i| note(i, "about the order")))
            .unwrap();
        writer.commit().unwrap();
        // Closing finishes the graph: its checkpoint is published too.
        writer.close().unwrap();
    }
    let on_disk = files(&path);
    {
        let reader = Engine::builder().open_read_only(&path).unwrap();
        let stats = reader.stats();
        assert_eq!(stats.chunks, 300);
        assert_eq!(
            stats.counters.graph_checkpoint_loads, 1,
            "the graph comes from the published checkpoint"
        );
        assert_eq!(stats.chunk_graph.tail_docs, 0);
        let response = reader
            .search(&SearchRequest::chunks("note7").with_embedding(vector(7)))
            .unwrap();
        assert_eq!(response.hits[0].id, "c0007");

        // A reader has no write method (`Reader`'s `compile_fail` doctest): searching
        // and reading stats are all it does, and they write nothing.
        assert!(reader.is_read_only());
        assert_eq!(
            reader
                .feedback_window("default", Kind::Chunk)
                .entries()
                .len(),
            0
        );
        assert_eq!(reader.stats().chunks, 300);
        // A second reader beside the first, and a writer beside both.
        let second = Engine::builder().open_read_only(&path).unwrap();
        assert_eq!(second.stats().chunks, 300);
        drop(reader);
    }
    assert_eq!(files(&path), on_disk, "a reader wrote in the index");
    // A writer opens beside a reader (which holds no lock).
    let reader = Engine::builder().open_read_only(&path).unwrap();
    let writer = writer(&path);
    writer.upsert_chunks([note(1000, "late")]).unwrap();
    writer.commit().unwrap();
    drop(reader);
    assert_eq!(
        Engine::builder()
            .open_read_only(&path)
            .unwrap()
            .stats()
            .chunks,
        301
    );
}

#[test]
fn opening_to_read_names_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let err = Engine::builder()
        .open_read_only(dir.path().join("none"))
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::IndexNotFound { .. }),
        "{err:?}"
    );
    let path = dir.path().join("index");
    {
        let writer = writer(&path);
        writer.upsert_chunks((0..50).map(|i| note(i, "x"))).unwrap();
        writer.commit().unwrap();
        writer.close().unwrap();
    }
    // An index of an earlier version has no published view until a writer opens it.
    std::fs::remove_dir_all(path.join("view")).unwrap();
    let manifest = std::fs::read_to_string(path.join("MANIFEST")).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    value.as_object_mut().unwrap().remove("view");
    // The checksum of a manifest without a view is the one earlier versions wrote.
    let fields: serde_json::Value = serde_json::json!({
        "store_format": value["store_format"],
        "seq": value["seq"],
        "rules": value["rules"],
        "chunks": value["chunks"],
        "digest": value["digest"],
    });
    value["crc32"] = crc32fast::hash(&serde_json::to_vec(&fields).unwrap()).into();
    std::fs::write(path.join("MANIFEST"), value.to_string()).unwrap();
    let err = Engine::builder().open_read_only(&path).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::NotPublished { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("open it once for writing"),
        "{err}"
    );
    writer(&path).close().unwrap();
    let reader = Engine::builder().open_read_only(&path).unwrap();
    // With the graph checkpoint the writer had stored.
    let stats = reader.stats();
    assert_eq!(stats.chunks, 50);
    assert_eq!(stats.counters.graph_checkpoint_loads, 1);
    // A damaged published file is named, and the next writer publishes again.
    let view = path.join("view");
    let base = std::fs::read_dir(&view)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("base-")
        })
        .unwrap();
    let mut bytes = std::fs::read(&base).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::write(&base, bytes).unwrap();
    let err = Engine::builder().open_read_only(&path).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("base-"), "{err}");
    writer(&path).close().unwrap();
    Engine::builder().open_read_only(&path).unwrap();
}

/// The byte ranges of the sections of a published file (see `src/local/store/file.rs`).
fn sections(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    assert_eq!(&bytes[..8], b"RUCHEVW2");
    let count = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let mut at = 12;
    let mut out = Vec::new();
    for _ in 0..count {
        let len = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
        at += 8;
        at += (64 - at % 64) % 64;
        out.push(at..at + len);
        at += len;
    }
    out
}

/// A reader uses a mapped base in place, its checksum computed while its catalog is
/// built: one changed bit anywhere in it (a document, the table, an id, a vector, an
/// inverse norm, a vector index) fails the open, before a search could use it.
#[test]
fn a_bit_changed_anywhere_in_a_mapped_base_fails_the_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    {
        // More than a megabyte: the commit is published as a base, not a part.
        let writer = writer(&path);
        writer
            .upsert_chunks((0..1_500).map(|i| {
                Chunk::new(format!("c{i:04}"), format!("note{i} about the order"))
                    .with_context(format!("customer-{}", i % 7))
                    .with_embedding((0..200).map(|d| ((i * d) as f32 * 0.01).sin()).collect())
            }))
            .unwrap();
        writer.commit().unwrap();
        writer.close().unwrap();
    }
    let base = std::fs::read_dir(path.join("view"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("base-")
        })
        .unwrap();
    let pristine = std::fs::read(&base).unwrap();
    let ranges = sections(&pristine);
    let mut flipped = 0;
    for range in ranges.iter().filter(|r| !r.is_empty()) {
        for at in [range.start, range.start + range.len() / 2, range.end - 1] {
            let mut bytes = pristine.clone();
            bytes[at] ^= 0x04;
            std::fs::write(&base, &bytes).unwrap();
            let err = Engine::builder().open_read_only(&path).unwrap_err();
            assert!(
                matches!(err.kind(), ErrorKind::Corrupt { .. }),
                "byte {at}: {err:?}"
            );
            assert!(err.to_string().contains("base-"), "{err}");
            flipped += 1;
        }
    }
    assert!(flipped >= 24, "{flipped}");
    std::fs::write(&base, &pristine).unwrap();
    let reader = Engine::builder().open_read_only(&path).unwrap();
    assert_eq!(reader.stats().chunks, 1_500);
}

#[derive(Debug, Clone)]
enum Op {
    /// Upsert a chunk of this id with a text of about this many KiB.
    Upsert(u8, u8),
    Delete(u8),
    Commit,
    Feedback,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..40, 0u8..48).prop_map(|(id, kib)| Op::Upsert(id, kib)),
        2 => (0u8..40).prop_map(Op::Delete),
        3 => Just(Op::Commit),
        1 => Just(Op::Feedback),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Whatever the writer commits (small and large commits, so that parts are merged
    /// and bases written again), a reader refreshed after each commit holds exactly the
    /// model's documents and answers as the writer does, and the published files stay
    /// few.
    #[test]
    fn a_refreshed_reader_matches_the_writer_and_a_model(ops in prop::collection::vec(op(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index");
        let writer = writer(&path);
        writer.commit().unwrap();
        let mut reader = Engine::builder().open_read_only(&path).unwrap();
        let mut model: BTreeMap<String, String> = BTreeMap::new();
        let mut committed = model.clone();
        let mut pending = model.clone();
        for op in ops {
            match op {
                Op::Upsert(id, kib) => {
                    let filler = "word ".repeat(usize::from(kib) * 205);
                    let chunk = note(usize::from(id), &filler);
                    pending.insert(chunk.id.clone(), chunk.content.clone());
                    writer.upsert_chunks([chunk]).unwrap();
                }
                Op::Delete(id) => {
                    let id = format!("c{id:04}");
                    pending.remove(&id);
                    writer.delete(Kind::Chunk, "default", &id);
                }
                Op::Commit => {
                    writer.commit().unwrap();
                    committed = pending.clone();
                    reader.refresh().unwrap();
                }
                Op::Feedback => {
                    let response = writer.search(&SearchRequest::chunks("note about")).unwrap();
                    if !response.hits.is_empty() {
                        writer.feedback(&response.query_id, true).unwrap();
                        reader.refresh().unwrap();
                        prop_assert_eq!(
                            reader.feedback_window("default", Kind::Chunk),
                            writer.feedback_window("default", Kind::Chunk)
                        );
                    }
                }
            }
            model = committed.clone();
            let found: BTreeMap<String, String> = reader
                .export(Kind::Chunk, None)
                .unwrap()
                .into_iter()
                .map(|doc| match doc {
                    ruchedb::Document::Chunk(chunk) => (chunk.id, chunk.content),
                    other => panic!("{other:?}"),
                })
                .collect();
            prop_assert_eq!(&found, &model);
        }
        prop_assert_eq!(answers(&reader, 40), answers(&writer, 40));
        let published = std::fs::read_dir(path.join("view")).unwrap().count();
        prop_assert!(published <= 12, "{} published files", published);
    }
}

#[test]
fn old_published_graphs_go_after_one_more_generation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let writer = writer(&path);
    let graph_files = || {
        std::fs::read_dir(path.join("view"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("graph-"))
            .count()
    };
    for round in 0..4 {
        writer
            .upsert_chunks((round * 50..round * 50 + 50).map(|i| note(i, "x")))
            .unwrap();
        writer.commit().unwrap();
        // Every committed vector in the graph: its checkpoint is published.
        writer.sync_graph().unwrap();
        let reader = Engine::builder().open_read_only(&path).unwrap();
        let stats = reader.stats();
        assert_eq!(stats.chunks, round * 50 + 50);
        assert_eq!(stats.counters.graph_checkpoint_loads, 1, "round {round}");
        assert_eq!(stats.chunk_graph.tail_docs, 0, "round {round}");
        // The graph in use and the one before it (a reader may be opening it).
        assert_eq!(graph_files(), (round + 1).min(2), "round {round}");
    }
}

/// A reader searches the graph the writer published, in place over its own vectors:
/// from the first query, with the recall of the writer's graph, crossing the nodes of
/// documents deleted since and never returning them.
#[test]
fn a_reader_searches_the_published_graph_from_its_first_query() {
    const DIM: usize = 16;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let mut corpus = crate::common::clustered_vectors(29, 3_040, DIM, 30);
    let queries = corpus.split_off(3_000);
    let mut config = ruchedb::Config::default();
    config.pipeline.retrieval.exact_scan_threshold = 0;
    let writer = Engine::builder()
        .with_config(config.clone())
        .with_embedder_spec(EmbedderSpec::None)
        .open_or_create(&path)
        .unwrap();
    writer
        .upsert_chunks(
            corpus
                .iter()
                .enumerate()
                .map(|(i, v)| Chunk::new(format!("c{i:05}"), "x").with_embedding(v.clone())),
        )
        .unwrap();
    writer.commit().unwrap();
    writer.sync_graph().unwrap();
    // A quarter deleted after the graph was published: its nodes stay in the graph.
    let deleted = |i: usize| i % 4 == 1 || i < 30;
    for i in (0..corpus.len()).filter(|&i| deleted(i)) {
        writer.delete(Kind::Chunk, "default", &format!("c{i:05}"));
    }
    writer.commit().unwrap();

    let reader = Engine::builder()
        .with_config(config)
        .open_read_only(&path)
        .unwrap();
    let stats = reader.stats();
    assert_eq!(stats.counters.graph_checkpoint_loads, 1);
    assert_eq!(stats.chunk_graph.tail_docs, 0);
    assert_eq!(stats.chunk_graph.points, corpus.len());
    let mut recall = 0.0;
    for query in &queries {
        let mut truth: Vec<(f32, String)> = (0..corpus.len())
            .filter(|&i| !deleted(i))
            .map(|i| {
                let dot: f32 = corpus[i].iter().zip(query).map(|(a, b)| a * b).sum();
                let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
                (dot / (norm(&corpus[i]) * norm(query)), format!("c{i:05}"))
            })
            .collect();
        truth.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        truth.truncate(10);
        let hits = reader
            .search(
                &SearchRequest::chunks("")
                    .with_embedding(query.clone())
                    .with_chunk_weights(ruchedb::chunk::ChunkWeights::new(1.0, 0.0, 0.0))
                    .with_min_relevance(0.0)
                    .with_top_k(10),
            )
            .unwrap()
            .hits;
        assert_eq!(hits.len(), 10);
        for hit in &hits {
            let i: usize = hit.id[1..].parse().unwrap();
            assert!(!deleted(i), "{} was deleted", hit.id);
        }
        let found = hits
            .iter()
            .filter(|h| truth.iter().any(|(_, id)| *id == h.id))
            .count();
        recall += found as f64 / 10.0;
    }
    let recall = recall / queries.len() as f64;
    assert!(recall >= 0.95, "mean recall@10 {recall}");
}

/// The segment ids `text/meta.json` names, and those the files of `text/` belong to.
fn text_segments(path: &Path) -> (Vec<String>, Vec<String>) {
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path.join("text/meta.json")).unwrap()).unwrap();
    let mut named: Vec<String> = meta["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["segment_id"].as_str().unwrap().replace('-', ""))
        .collect();
    let mut on_disk: Vec<String> = std::fs::read_dir(path.join("text"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            let (id, _) = name.split_once('.')?;
            (id.len() == 32).then(|| id.to_string())
        })
        .collect();
    named.sort();
    on_disk.sort();
    on_disk.dedup();
    (named, on_disk)
}

/// A reader opened on a commit keeps reading it while the writer commits, merges and
/// publishes many more (the writer keeps the published commit's files, and readers take
/// no lock); once the writer closes, the text index holds the files of its last commit
/// and no other: what was kept for readers is removed when it is no longer published.
#[test]
fn the_text_files_readers_need_are_kept_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let engine = writer(&path);
    engine
        .upsert_chunks((0..50).map(|i| note(i, "about")))
        .unwrap();
    engine.commit().unwrap();
    let early = Engine::builder().open_read_only(&path).unwrap();
    let early_answers = answers(&early, 50);
    for round in 1..30 {
        engine
            .upsert_chunks((round * 50..round * 50 + 50).map(|i| note(i, "about")))
            .unwrap();
        // Replacements and deletes leave delete files behind, and merges segments.
        engine
            .upsert_chunks((0..5).map(|i| note(i, "changed")))
            .unwrap();
        engine.delete(Kind::Chunk, "default", &format!("c{:04}", round * 50 + 7));
        engine.commit().unwrap();
        // A reader opened at any commit reads it whole.
        let reader = Engine::builder().open_read_only(&path).unwrap();
        assert_eq!(reader.stats().chunks, 50 + round * 49, "round {round}");
    }
    assert_eq!(answers(&early, 50), early_answers);
    assert_eq!(early.stats().chunks, 50);
    engine.close().unwrap();
    let (named, on_disk) = text_segments(&path);
    assert_eq!(on_disk, named, "segment files of no commit are left");
    // And a writer opened again removes what an earlier one left (its deferred
    // deletions, had it stopped first): nothing to remove here, nothing removed.
    drop(writer(&path));
    let (named, on_disk) = text_segments(&path);
    assert_eq!(on_disk, named);
}
