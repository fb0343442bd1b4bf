//! How close is the HNSW graph to an exact scan? Recall@10 at several `ef_search`.
//!
//! Method: 20,000 vectors of 128 dimensions in 100 clusters, 200 held-out queries from the
//! same distribution, two shapes of cluster:
//!
//! - *embedding-like*: each cluster spreads along 4 directions of its own plus a little
//!   isotropic noise, a low intrinsic dimension as text embeddings have;
//! - *isotropic*: each cluster spreads in all 128 dimensions, a known worst case for graph
//!   indexes (within a cluster, points are random).
//!
//! The same index is searched with the graph forced (`exact_scan_threshold = 0`) and with
//! an exact scan, by a writer (`Engine::open`) once its graph checkpoint has loaded, with
//! the relevance gate off; recall@10 is the fraction of the exact top 10 the graph search
//! returns.
//! The engine asks the graph for at least `2 * (max_candidates + 8)` neighbours, so
//! `ef_search` below that changes nothing.
//!
//! ```text
//! cargo run --release --example recall [N]     # N vectors, default 20,000
//! ```

use ruchedb::chunk::ChunkWeights;
use ruchedb::{Chunk, Config, Engine, SearchRequest};

const DIM: usize = 128;

fn vectors(seed: u64, n: usize, isotropic: bool) -> Vec<Vec<f32>> {
    // # A small deterministic generator (splitmix64), so runs are comparable.
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    };
    let mut random = || -> Vec<f32> { (0..DIM).map(|_| next()).collect() };
    let centres: Vec<Vec<f32>> = (0..100).map(|_| random()).collect();
    let directions: Vec<Vec<Vec<f32>>> = (0..100)
        .map(|_| (0..4).map(|_| random()).collect())
        .collect();
    (0..n)
        .map(|i| {
            let noise = random();
            let weights = random();
            (0..DIM)
                .map(|d| {
                    let c = centres[i % 100][d];
                    if isotropic {
                        c + 0.5 * noise[d]
                    } else {
                        let spread: f32 = (0..4)
                            .map(|j| directions[i % 100][j][d] * 0.5 * weights[j])
                            .sum();
                        c + spread + 0.05 * noise[d]
                    }
                })
                .collect()
        })
        .collect()
}

fn top10(engine: &Engine, query: &[f32]) -> ruchedb::Result<Vec<String>> {
    // # Relevance alone: a chunk's score is its cosine to the query.
    let weights = ChunkWeights::new(1.0, 0.0, 0.0);
    // The relevance gate off: this measures retrieval, and random vectors are far from
    // what the gate's calibration calls relevant (with it on, most queries return
    // nothing, whatever the graph finds).
    let request = SearchRequest::chunks("")
        .with_embedding(query.to_vec())
        .with_chunk_weights(weights)
        .with_min_relevance(0.0)
        .with_top_k(10);
    Ok(engine
        .search(&request)?
        .hits
        .into_iter()
        .map(|h| h.id)
        .collect())
}

fn main() -> ruchedb::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(20_000);
    println!("| clusters | ef_search | recall@10 |\n| --- | --- | --- |");
    for isotropic in [false, true] {
        measure(n, isotropic)?;
    }
    Ok(())
}

fn measure(n: usize, isotropic: bool) -> ruchedb::Result<()> {
    // # Step 1: index the corpus once, and wait for the graph.
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("index");
    let engine = Engine::builder().create(&path)?;
    let chunks = vectors(1, n, isotropic)
        .into_iter()
        .enumerate()
        .map(|(i, v)| Chunk::new(format!("c{i:05}"), "x").with_embedding(v));
    engine.upsert_chunks(chunks)?;
    engine.commit()?;
    engine.close()?;

    // # Step 2: the exact answers.
    let queries = vectors(2, 200, isotropic);
    let mut exact_config = Config::default();
    exact_config.pipeline.retrieval.exact_scan_threshold = usize::MAX;
    let exact = Engine::builder().with_config(exact_config).open(&path)?;
    let truth: Vec<Vec<String>> = queries
        .iter()
        .map(|q| top10(&exact, q))
        .collect::<Result<_, _>>()?;
    // A recall over fewer answers than asked for would measure nothing.
    assert!(
        truth.iter().all(|want| want.len() == 10),
        "the exact scan returned fewer than 10 hits for a query"
    );
    drop(exact);

    // # Step 3: the graph at several `ef_search`.
    let shape = if isotropic {
        "isotropic"
    } else {
        "embedding-like"
    };
    for ef in [64, 128, 256] {
        let mut config = Config::default();
        config.pipeline.retrieval.exact_scan_threshold = 0;
        config.vector.ef_search = ef;
        let engine = Engine::builder().with_config(config).open(&path)?;
        // The graph's checkpoint loads in the background; until then searches scan.
        engine.sync_graph()?;
        assert!(
            engine.stats().counters.graph_checkpoint_loads > 0,
            "the graph was not loaded"
        );
        let mut found = 0;
        for (query, want) in queries.iter().zip(&truth) {
            found += top10(&engine, query)?
                .iter()
                .filter(|id| want.contains(id))
                .count();
        }
        let recall = found as f64 / (10 * queries.len()) as f64;
        println!("| {shape} | {ef} | {recall:.4} |");
    }
    Ok(())
}
