//! Recovery paths that need the engine's internals: a text index behind the store, and a
//! damaged graph checkpoint.

use super::write::PendingOp;
use super::*;
use crate::{Chunk, Rule, SearchRequest};

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

fn search_ids(engine: &Engine, text: &str) -> Vec<String> {
    engine
        .search(&SearchRequest::chunks(text).top_k(5))
        .unwrap()
        .hits
        .into_iter()
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
        engine.inner.store.commit(&changes, next_doc).unwrap();
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
        .embedding(chunk(7).embedding.unwrap())
        .top_k(5);
    let before = {
        let engine = Engine::builder()
            .config(config.clone())
            .create(&path)
            .unwrap();
        engine.upsert_chunks((0..200).map(chunk)).unwrap();
        engine.commit().unwrap();
        engine.close().unwrap();
        let engine = Engine::builder()
            .config(config.clone())
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
        let manifest: crate::vector::Manifest = bincode::deserialize(&manifest).unwrap();
        let mut files = store
            .checkpoint_files(Kind::Chunk, manifest.files.len())
            .unwrap();
        let middle = files[0].len() / 2;
        files[0][middle] ^= 0xff;
        store
            .save_checkpoint(Kind::Chunk, &bincode::serialize(&manifest).unwrap(), &files)
            .unwrap();
    }
    let engine = Engine::builder().config(config).open(&path).unwrap();
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
    assert_eq!(
        engine.stats().chunk_graph.points,
        200,
        "rebuilt from the store"
    );
}
