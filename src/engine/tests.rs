//! Recovery paths that need the engine's internals: a text index behind the store, and a
//! damaged graph checkpoint.

use std::path::Path;

use super::state::PendingOp;
use super::*;
use crate::config::Config;
use crate::local::store::{Store, view};
use crate::model::doc::Document;
use crate::{Chunk, Kind, Rule, SearchRequest};

fn chunk(i: usize) -> Chunk {
    let v: Vec<f32> = (0..8)
        .map(|d| ((i * 7 + d * 3) % 11) as f32 - 5.0)
        .collect();
    Chunk::new(
        format!("c{i:03}"),
        format!("note number {i} about topic{}", i % 5),
    )
    .with_embedding(v)
}

fn search_ids(engine: &Reader, text: &str) -> Vec<String> {
    hit_ids(engine, text, |_| true)
}

/// Ids of the top 5 chunk hits for `text` that `keep` keeps.
fn hit_ids(engine: &Reader, text: &str, keep: impl Fn(&crate::Hit) -> bool) -> Vec<String> {
    engine
        .search(&SearchRequest::chunks(text).with_top_k(5))
        .unwrap()
        .hits
        .into_iter()
        .filter(|h| keep(h))
        .map(|h| h.id)
        .collect()
}

#[test]
fn a_text_index_behind_the_store_catches_up_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    {
        let engine = Engine::builder().create(&path).unwrap();
        engine.upsert_chunks((0..20).map(chunk)).unwrap();
        engine.commit().unwrap();
        engine.close().unwrap();
    }
    // A crash between the store's flush and the text commit: the store has changes the
    // text index does not. Write them to the store alone.
    {
        let engine = Engine::builder().open(&path).unwrap();
        let mut replaced = chunk(3);
        replaced.content = "completely different words zebra".to_string();
        replaced.embedding = None;
        let ops = vec![
            PendingOp::Upsert {
                doc: Box::new(Document::Chunk(replaced)),
                vectors: Default::default(),
            },
            PendingOp::Delete {
                kind: Kind::Chunk,
                tenant: "default".to_string(),
                id: "c004".to_string(),
            },
            PendingOp::Upsert {
                doc: Box::new(Document::Rule(Rule::new(
                    "r",
                    "zebra crossing",
                    "slow down",
                ))),
                vectors: Default::default(),
            },
        ];
        let (changes, next_doc) = engine.inner.resolve(ops).unwrap();
        engine.inner.local.store.commit(&changes, next_doc).unwrap();
    }
    let engine = Engine::builder().open(&path).unwrap();
    let stats = engine.stats();
    assert_eq!(stats.counters.text_replayed, 3);
    assert_eq!(stats.counters.text_rebuilds, 0);
    assert_eq!(search_ids(&engine, "zebra"), ["c003"]);
    assert!(
        !search_ids(&engine, "topic3").contains(&"c003".to_string()),
        "old version gone"
    );
    assert!(
        !search_ids(&engine, "topic4").contains(&"c004".to_string()),
        "deleted"
    );
    let rules = engine.search(&SearchRequest::rules("zebra")).unwrap();
    assert_eq!(rules.hits[0].id, "r");
    assert_eq!(stats.text_docs, 20);
}

#[test]
fn a_damaged_graph_checkpoint_is_detected_and_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let mut config = Config::default();
    config.pipeline.retrieval.exact_scan_threshold = 0;
    let query = SearchRequest::chunks("")
        .browse()
        .with_embedding(chunk(7).embedding.unwrap())
        .with_top_k(5);
    let before = {
        let engine = Engine::builder()
            .with_config(config.clone())
            .create(&path)
            .unwrap();
        engine.upsert_chunks((0..200).map(chunk)).unwrap();
        engine.commit().unwrap();
        engine.close().unwrap();
        let engine = Engine::builder()
            .with_config(config.clone())
            .open(&path)
            .unwrap();
        engine.sync_graph().unwrap();
        assert_eq!(engine.stats().counters.graph_checkpoint_loads, 1);
        let hits = engine.search(&query).unwrap().hits;
        hits.into_iter().map(|h| h.id).collect::<Vec<_>>()
    };
    {
        let store = Store::open(&path.join(STORE_DIR), false, 1 << 20).unwrap();
        let manifest = store.checkpoint_manifest(Kind::Chunk).unwrap().unwrap();
        let manifest: crate::local::hnsw::CheckpointManifest =
            bincode::deserialize(&manifest).unwrap();
        let mut files = store
            .checkpoint_files(Kind::Chunk, manifest.files.len())
            .unwrap();
        let middle = files[0].len() / 2;
        files[0][middle] ^= 0xff;
        store
            .save_checkpoint(Kind::Chunk, &bincode::serialize(&manifest).unwrap(), &files)
            .unwrap();
    }
    let engine = Engine::builder().with_config(config).open(&path).unwrap();
    engine.sync_graph().unwrap();
    assert_eq!(
        engine.stats().counters.graph_checkpoint_loads,
        0,
        "the damage was detected"
    );
    let after: Vec<String> = engine
        .search(&query)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.id)
        .collect();
    assert_eq!(after, before);
    engine.sync_graph().unwrap();
    // `chunk` repeats its vector every 11: one node each, the copies scanned.
    assert_eq!(
        engine.stats().chunk_graph.points,
        11,
        "rebuilt from the store"
    );
}

/// Ids of the hits the graph leg found for `text`.
fn graph_hits(engine: &Engine, text: &str) -> Vec<String> {
    hit_ids(engine, text, |h| h.breakdown.found_by.graph)
}

#[test]
fn entity_lists_are_stored_with_their_documents_checked_and_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let memory = [
        (0, "Order NW-15699 (tent) was placed by CUST-48213."),
        (1, "CUST-48213 prefers to be contacted by email."),
        (2, "Order NW-20417 was placed by CUST-77120."),
    ];
    let notes = memory.map(|(i, text)| {
        let mut note = chunk(i);
        note.content = text.to_string();
        note
    });
    let question = "how should we contact the buyer of NW-15699?";
    {
        let engine = Engine::builder().create(&path).unwrap();
        engine.upsert_chunks(notes.clone()).unwrap();
        engine.commit().unwrap();
        engine.delete(Kind::Chunk, "default", "c002");
        engine.commit().unwrap();
        assert_eq!(graph_hits(&engine, question), ["c000", "c001"]);
        engine.close().unwrap();
    }
    let stored = |path: &Path| {
        let store = Store::open(&path.join(STORE_DIR), false, 1 << 20).unwrap();
        let mut lists: Vec<(u64, Vec<String>)> = store
            .entity_lists()
            .unwrap()
            .into_iter()
            .map(|(doc, list)| (doc.as_u64(), list))
            .collect();
        lists.sort();
        lists
    };
    // Written by the commits, the deleted note's list gone with it.
    let lists = stored(&path);
    assert_eq!(lists.len(), 2, "{lists:?}");
    assert!(lists[0].1.contains(&"nw-15699".to_string()));
    assert!(lists[1].1.contains(&"cust-48213".to_string()));
    // `check` finds the index intact and says `line`.
    let intact_saying = |path: &Path, line: &str| {
        let report = Engine::check(path, &Config::default()).unwrap();
        assert!(report.is_intact(), "{report:?}");
        assert!(
            report.intact.iter().any(|l| l.contains(line)),
            "{line} in {report:?}"
        );
    };
    intact_saying(&path, "entity graph (store/db): 2 documents");

    // An open builds the graph from the stored lists, not from the texts: a list
    // changed behind the engine's back shows in the graph leg, and `check` finds it.
    {
        let store = Store::open(&path.join(STORE_DIR), false, 1 << 20).unwrap();
        let (doc, mut list) = lists[1].clone();
        list.push("zq-90210".to_string());
        store
            .add_entity_lists(&[(crate::model::id::DocId::new(doc), list)])
            .unwrap();
    }
    {
        let engine = Engine::builder().open(&path).unwrap();
        // Hop 1 to the note, hop 2 through its customer to the order.
        assert_eq!(
            graph_hits(&engine, "what about ZQ-90210?"),
            ["c001", "c000"]
        );
    }
    let report = Engine::check(&path, &Config::default()).unwrap();
    let damage = report
        .damaged
        .iter()
        .find(|d| d.part == "entity graph (store/db)")
        .unwrap_or_else(|| panic!("{report:?}"));
    assert!(damage.rebuildable && damage.problem.contains("1 of 2 documents"));
    assert!(!report.store_damaged());
    Engine::repair(&path, &Config::default()).unwrap();
    assert!(
        Engine::check(&path, &Config::default())
            .unwrap()
            .is_intact()
    );
    assert_eq!(stored(&path), lists, "derived again from the documents");
    {
        let engine = Engine::builder().open(&path).unwrap();
        assert!(graph_hits(&engine, "what about ZQ-90210?").is_empty());
        assert_eq!(graph_hits(&engine, question), ["c000", "c001"]);
    }

    // An index written before the store kept the lists: `check` says so without
    // calling it damage, and the next open stores them.
    Store::open(&path.join(STORE_DIR), false, 1 << 20)
        .unwrap()
        .clear_entity_lists()
        .unwrap();
    intact_saying(&path, "the next open stores them");
    {
        let engine = Engine::builder().open(&path).unwrap();
        assert_eq!(graph_hits(&engine, question), ["c000", "c001"]);
    }
    assert_eq!(stored(&path), lists);
}

/// A reader of an index whose graph an earlier version published (hnsw_rs's dump, raw,
/// beside a manifest file of one section) loads it through hnsw_rs and answers as the
/// writer does; the writer's next checkpoint publishes the flat lists in its place.
#[test]
fn a_graph_published_by_an_earlier_version_still_loads() {
    use crate::local::store::view;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let mut config = crate::Config::default();
    config.pipeline.retrieval.exact_scan_threshold = 0;
    let writer = Engine::builder()
        .with_config(config.clone())
        .with_embedder_spec(crate::EmbedderSpec::None)
        .create(&path)
        .unwrap();
    writer.upsert_chunks((0..300).map(chunk)).unwrap();
    writer.commit().unwrap();
    writer.sync_graph().unwrap();
    let expected: Vec<Vec<String>> = ["topic1", "note number 7", "topic4 about"]
        .iter()
        .map(|text| search_ids(&writer, text))
        .collect();

    // The view as an earlier version published it.
    let inner = &writer.inner;
    let manifest = inner
        .local
        .store
        .checkpoint_manifest(Kind::Chunk)
        .unwrap()
        .unwrap();
    let manifest =
        bincode::deserialize::<crate::local::hnsw::CheckpointManifest>(&manifest).unwrap();
    let files = inner
        .local
        .store
        .checkpoint_files(Kind::Chunk, manifest.files.len())
        .unwrap();
    // Earlier versions kept hnsw_rs's data file whole.
    assert!(crate::local::hnsw::is_keyed(&files[1]));
    let mut files = {
        let catalog = inner.local.snapshot();
        crate::local::hnsw::Graph::unpack(&manifest, files, |key| {
            crate::local::vector::catalog_vector(&catalog, Kind::Chunk, key)
        })
        .unwrap()
    };
    // Earlier versions kept hnsw_rs's graph file too.
    files[0] = crate::local::hnsw::hnsw_graph_file(&files[0], &files[1]).unwrap();
    let manifest = bincode::serialize(&crate::local::hnsw::CheckpointManifest {
        files: crate::local::hnsw::Graph::file_sums(&files),
        ..manifest
    })
    .unwrap();
    {
        let _serial = inner.commit_lock.lock().unwrap();
        let mut guard = inner.local.view.lock().unwrap();
        let list = guard.as_mut().unwrap();
        let name = list.new_name("graph-chunk");
        let basename = name.strip_suffix(".rv").unwrap().to_string();
        let raw = files
            .iter()
            .zip([view::RAW_GRAPH, view::RAW_DATA])
            .map(|(bytes, suffix)| {
                let name = format!("{basename}{suffix}");
                std::fs::write(path.join(view::VIEW_DIR).join(&name), bytes).unwrap();
                view::ViewFile {
                    name,
                    len: bytes.len() as u64,
                    crc32: crc32fast::hash(bytes),
                    raw: true,
                    mapped: false,
                }
            })
            .collect();
        let manifest_file = view::write_file(&path, &name, &[&manifest]).unwrap();
        list.set_graph(
            Kind::Chunk,
            view::ViewGraph {
                manifest: manifest_file,
                files: raw,
            },
        );
        let list = list.clone();
        inner.write_manifest_with(Some(&list)).unwrap();
    }

    let reader = Engine::builder()
        .with_config(config)
        .open_read_only(&path)
        .unwrap();
    reader.inner.worker.wait_loaded();
    let published = |reader: &Reader| {
        reader
            .inner
            .local
            .store
            .published_graph(Kind::Chunk)
            .unwrap()
    };
    assert!(matches!(
        published(&reader),
        Some(view::PublishedGraph::Raw { .. })
    ));
    // Searches walk a flat copy of the graph hnsw_rs loaded.
    assert!(reader.inner.local.vectors.has_flat(Kind::Chunk));
    let stats = reader.stats();
    assert_eq!(stats.counters.graph_checkpoint_loads, 1);
    // `chunk` repeats its vector every 11: one node each, the copies scanned.
    assert_eq!(stats.chunk_graph.points, 11);
    let got: Vec<Vec<String>> = ["topic1", "note number 7", "topic4 about"]
        .iter()
        .map(|text| search_ids(&reader, text))
        .collect();
    assert_eq!(got, expected);

    // The next checkpoint publishes the graph as flat lists.
    writer.upsert_chunks((300..310).map(chunk)).unwrap();
    writer.commit().unwrap();
    writer.sync_graph().unwrap();
    let reader = Engine::builder().open_read_only(&path).unwrap();
    assert!(matches!(
        published(&reader),
        Some(view::PublishedGraph::Flat { .. })
    ));
    assert!(reader.inner.local.vectors.has_flat(Kind::Chunk));
    assert_eq!(reader.stats().counters.graph_checkpoint_loads, 1);
    assert_eq!(reader.stats().chunk_graph.points, 11);
}

/// A 16-dimensional vector spread over the sphere by `i`.
fn vector(i: usize) -> Vec<f32> {
    (0..16)
        .map(|d| ((((i * 31 + d * 17) * 2_654_435_761) % 1_000) as f32) / 500.0 - 1.0)
        .collect()
}

/// The top 10 chunks of `engine` for the query vector `vector(10_000 + q)`, with their
/// vector scores' bits.
fn vector_top(engine: &Reader, q: usize) -> Vec<(String, u64)> {
    let request = SearchRequest::chunks("")
        .browse()
        .with_embedding(vector(10_000 + q))
        .with_top_k(10);
    engine
        .search(&request)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| (h.id, h.breakdown.vector.unwrap().to_bits()))
        .collect()
}

/// A writer created at `path` with `config`, holding 600 chunks `c0000`.. of
/// [`vector`]`(i)`, uncommitted.
fn spread_writer(path: &std::path::Path, config: &Config) -> Engine {
    let writer = Engine::builder()
        .with_config(config.clone())
        .create(path)
        .unwrap();
    writer
        .upsert_chunks(
            (0..600).map(|i| Chunk::new(format!("c{i:04}"), "note").with_embedding(vector(i))),
        )
        .unwrap();
    writer
}

/// A published graph carries its nodes' codes, and a reader walks them. A reader of a
/// graph published without codes (by earlier versions) makes them from its vectors:
/// the same codes, so the same hits with the same scores, bit for bit, as the writer's.
#[test]
fn readers_walk_the_published_codes_or_the_same_codes_made_from_their_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let mut config = Config::default();
    config.pipeline.retrieval.exact_scan_threshold = 100;
    let writer = spread_writer(&path, &config);
    writer.commit().unwrap();
    writer.sync_graph().unwrap();
    let expected: Vec<_> = (0..30).map(|q| vector_top(&writer, q)).collect();

    let open = || {
        let reader = Engine::builder()
            .with_config(config.clone())
            .open_read_only(&path)
            .unwrap();
        reader.inner.worker.wait_loaded();
        reader
    };
    let reader = open();
    let Some(view::PublishedGraph::Flat {
        manifest,
        flat,
        codes: Some(codes),
    }) = reader
        .inner
        .local
        .store
        .published_graph(Kind::Chunk)
        .unwrap()
    else {
        panic!("a flat graph with its codes");
    };
    // 589 nodes: 11 of the 600 vectors share their 8-bit code with another's, and are
    // scanned exactly instead.
    assert_eq!(reader.stats().chunk_graph.points, 589);
    assert!(codes.fits(589, 16));
    let got: Vec<_> = (0..30).map(|q| vector_top(&reader, q)).collect();
    assert_eq!(got, expected);

    // The graph published again without its codes.
    {
        let inner = &writer.inner;
        let _serial = inner.commit_lock.lock().unwrap();
        let mut guard = inner.local.view.lock().unwrap();
        let list = guard.as_mut().unwrap();
        super::publish::publish_graph(&path, list, Kind::Chunk, &manifest, &flat.encode(), None)
            .unwrap();
        let list = list.clone();
        inner.write_manifest_with(Some(&list)).unwrap();
    }
    let reader = open();
    assert!(matches!(
        reader
            .inner
            .local
            .store
            .published_graph(Kind::Chunk)
            .unwrap(),
        Some(view::PublishedGraph::Flat { codes: None, .. })
    ));
    assert!(reader.inner.local.vectors.has_flat(Kind::Chunk));
    let got: Vec<_> = (0..30).map(|q| vector_top(&reader, q)).collect();
    assert_eq!(got, expected);
}

/// A writer's searches walk a flat copy of its graph (made at each checkpoint, and
/// again once the graph covers `FLAT_REFRESH` documents more), scanning exactly what
/// the copy does not cover: they find what an exact scan finds, with its cosines, while
/// the copy lags behind new, changed and deleted documents.
#[test]
fn a_writer_walks_a_flat_copy_of_its_graph_and_finds_what_the_exact_scan_finds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let chunk =
        |i: usize, seed: usize| Chunk::new(format!("c{i:04}"), "note").with_embedding(vector(seed));
    let mut config = Config::default();
    // Above this many documents the graph is searched; at most this many past the copy
    // are scanned beside it.
    config.pipeline.retrieval.exact_scan_threshold = 100;
    let writer = Engine::builder().with_config(config).create(&path).unwrap();
    writer.upsert_chunks((0..600).map(|i| chunk(i, i))).unwrap();
    writer.commit().unwrap();
    writer.sync_graph().unwrap();
    let vectors = &writer.inner.local.vectors;
    assert_eq!(
        vectors.flat_covered(Kind::Chunk),
        Some(vectors.covered(Kind::Chunk))
    );

    let exact = || {
        let mut config = Config::default();
        config.pipeline.retrieval.exact_scan_threshold = usize::MAX;
        Engine::builder()
            .with_config(config)
            .open_read_only(&path)
            .unwrap()
    };
    let agree = |round: &str| {
        let exact = exact();
        for q in 0..40 {
            assert_eq!(
                vector_top(&writer, q),
                vector_top(&exact, q),
                "{round}, query {q}"
            );
        }
    };
    agree("at the checkpoint");

    // New documents near the queries, documents whose vectors changed, deleted ones:
    // the graph takes them in, the copy does not.
    writer
        .upsert_chunks((600..640).map(|i| chunk(i, 10_000 + i % 40)))
        .unwrap();
    writer
        .upsert_chunks((0..20).map(|i| chunk(i * 7, 10_020 + i)))
        .unwrap();
    for i in 0..20 {
        writer.delete(Kind::Chunk, "default", &format!("c{:04}", 300 + i * 3));
    }
    writer.commit().unwrap();
    writer.inner.wait_for_worker();
    let flat = vectors.flat_covered(Kind::Chunk).unwrap();
    assert!(flat < vectors.covered(Kind::Chunk));
    agree("with the copy behind the graph");

    // Enough for the worker to copy the graph again.
    writer
        .upsert_chunks((1_000..2_100).map(|i| chunk(i, 20_000 + i)))
        .unwrap();
    writer.commit().unwrap();
    writer.inner.wait_for_worker();
    assert_eq!(
        vectors.flat_covered(Kind::Chunk),
        Some(vectors.covered(Kind::Chunk))
    );
    agree("after the copy is made again");
}

/// A reader's walk of the published graph finds what an exact scan finds, with the
/// exact scan's cosines, bit for bit.
#[test]
fn a_reader_walks_the_published_graph_and_finds_what_the_exact_scan_finds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    {
        let engine = Engine::builder().create(&path).unwrap();
        engine
            .upsert_chunks(
                (0..600).map(|i| Chunk::new(format!("c{i:03}"), "note").with_embedding(vector(i))),
            )
            .unwrap();
        // 300 documents tied with query 3's own vector, written in descending id order:
        // its best 10 are those of the smallest ids, and the graph reaches them last.
        // (As graph nodes, so many copies of one vector linked only to each other, and
        // a walk that entered them never left: the graph keeps one, the rest are
        // scanned.)
        engine
            .upsert_chunks(
                (0..300)
                    .rev()
                    .map(|i| Chunk::new(format!("t{i:03}"), "note").with_embedding(vector(10_003))),
            )
            .unwrap();
        engine.commit().unwrap();
        engine.sync_graph().unwrap();
        engine.close().unwrap();
    }
    let open = |threshold: usize| {
        let mut config = Config::default();
        config.pipeline.retrieval.exact_scan_threshold = threshold;
        // A beam as wide as the index: the walk reaches every document (the graph is
        // built by several threads, so which neighbours a narrower beam misses varies
        // from run to run), and what is checked is the walk's cosines and order.
        config.vector.ef_search = 1_000;
        Engine::builder()
            .with_config(config)
            .open_read_only(&path)
            .unwrap()
    };
    let (graph, exact) = (open(0), open(usize::MAX));
    assert_eq!(graph.stats().counters.graph_checkpoint_loads, 1);
    for q in 0..40 {
        assert_eq!(vector_top(&graph, q), vector_top(&exact, q), "query {q}");
    }
    let tied: Vec<String> = vector_top(&graph, 3)
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    // `c003` holds the same vector (`vector` repeats every 1,000).
    let smallest: Vec<String> = std::iter::once("c003".to_string())
        .chain((0..9).map(|i| format!("t{i:03}")))
        .collect();
    assert_eq!(tied, smallest);
    // Every other document is found by its own vector.
    for i in (0..600).filter(|i| i % 37 == 0) {
        let request = SearchRequest::chunks("")
            .browse()
            .with_embedding(vector(i))
            .with_top_k(1);
        let hits = graph.search(&request).unwrap().hits;
        let expected = if i == 3 {
            "c003".to_string()
        } else {
            format!("c{i:03}")
        };
        assert_eq!(hits[0].id, expected, "document {i}");
    }
}

/// A writer's own searches walk its graph with the copies it left out scanned beside
/// it, after a rebuild and after a reopen as well as while it inserts.
#[test]
fn a_writer_finds_every_copy_of_a_vector_its_graph_keeps_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let mut config = Config::default();
    config.pipeline.retrieval.exact_scan_threshold = 0;
    config.vector.ef_search = 1_000;
    let writer = spread_writer(&path, &config);
    writer
        .upsert_chunks(
            (0..200).map(|i| Chunk::new(format!("t{i:03}"), "note").with_embedding(vector(7))),
        )
        .unwrap();
    writer.commit().unwrap();
    writer.sync_graph().unwrap();
    let top = |engine: &Reader, k: usize| -> Vec<String> {
        let request = SearchRequest::chunks("")
            .browse()
            .with_embedding(vector(7))
            .with_top_k(k);
        engine
            .search(&request)
            .unwrap()
            .hits
            .into_iter()
            .map(|h| h.id)
            .collect()
    };
    let every: Vec<String> = std::iter::once("c0007".to_string())
        .chain((0..200).map(|i| format!("t{i:03}")))
        .collect();
    assert_eq!(top(&writer, 201), every);
    assert_eq!(writer.stats().chunk_graph.points, 589);
    let graph = writer.inner.local.vectors.graph(Kind::Chunk);
    assert_eq!(graph.left_out().len(), 211);
    // A copy deleted is gone; one written after the graph is found from the tail.
    writer.delete(Kind::Chunk, "default", "t000");
    writer
        .upsert_chunks([Chunk::new("t200", "note").with_embedding(vector(7))])
        .unwrap();
    writer.commit().unwrap();
    writer.sync_graph().unwrap();
    let mut after: Vec<String> = every[..1].to_vec();
    after.extend((1..=200).map(|i| format!("t{i:03}")));
    assert_eq!(top(&writer, 201), after);
    // The deleted copy is no longer scanned: 200 copies left out, as before (and the 11
    // vectors of `vector` that share a code with another's).
    let graph = writer.inner.local.vectors.graph(Kind::Chunk);
    assert_eq!(graph.left_out().len(), 211);
    writer.close().unwrap();
    let reopened = Engine::builder().with_config(config).open(&path).unwrap();
    reopened.sync_graph().unwrap();
    assert_eq!(top(&reopened, 201), after);
    assert_eq!(top(&reopened, 3), after[..3].to_vec());
}
