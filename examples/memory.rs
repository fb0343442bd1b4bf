//! An agent's memory over a few days: chunks with an importance and a timestamp, ranked by
//! relevance, importance and recency (seed 001), with the pure `ChunkSelector` and with
//! the engine's chunk search.
//!
//! Run with `cargo run --example memory`.

use ruchedb::chunk::{ChunkQuery, ChunkSelector, ChunkWeights};
use ruchedb::select::SelectionConfig;
use ruchedb::{Chunk, Engine, SearchRequest, Timestamp};

/// A memory of the user `u42`, made on day `day` of November 2026 at `hour` o'clock UTC.
fn memory(id: &str, content: &str, importance: u8, day: u8, hour: u8) -> ruchedb::Result<Chunk> {
    let created_at: Timestamp = format!("2026-11-{day:02}T{hour:02}:00:00Z").parse()?;
    let chunk = Chunk::new(id, content).with_context("u42");
    Ok(chunk
        .with_importance(importance)
        .with_created_at(created_at))
}

/// Seed 001's weights: relevance, importance, recency, and the recency half-life in hours.
fn weights(relevance: f64, importance: f64, recency: f64, decay_hours: f64) -> ChunkWeights {
    let mut weights = ChunkWeights::new(relevance, importance, recency);
    weights.recency_decay_hours = decay_hours;
    weights
}

/// Prints one result: its final score and the three components it is made of.
fn row(id: &str, score: f64, [r, i, t]: [f64; 3]) {
    println!("  {id:<10} {score:.3} = relevance {r:.3}, importance {i:.3}, recency {t:.3}");
}

fn main() -> ruchedb::Result<()> {
    // # Step 1: five days of memories (importance 1..=10, RFC 3339 times), and a one-time
    // code that expired a quarter of an hour after it was made
    let mut chunks = vec![
        memory("email", "prefers email to phone calls", 8, 16, 9)?,
        memory("ml-fraud", "machine learning fraud project", 10, 17, 14)?,
        memory("ml-course", "wants a machine learning course", 4, 18, 10)?,
        memory("laptop", "works on an old laptop", 3, 19, 16)?,
        memory("holiday", "on holiday next week", 6, 20, 8)?,
        memory("meeting", "review meeting moved to Friday", 5, 20, 11)?,
        memory("standup", "machine learning model training", 5, 21, 9)?,
    ];
    let otp = memory("otp", "machine learning portal code 4411", 9, 17, 8)?;
    chunks.push(otp.with_expires_at("2026-11-17T08:15:00Z".parse()?));
    let now: Timestamp = "2026-11-21T12:00:00Z".parse()?;

    // # Step 2: seed 001's three examples with the pure selector (no index needed; the
    // relevance is word overlap with the query)
    let mut balanced = ChunkQuery::text("machine learning");
    balanced.now = Some(now);
    let (mut recent, mut strict) = (ChunkQuery::default(), balanced.clone());
    recent.now = Some(now);
    recent.max_chunks = Some(5);
    strict.min_score = 0.7;
    let high_quality = weights(0.3, 0.7, 0.0, 168.0);
    for (name, weights, query) in [
        ("balanced", weights(0.33, 0.33, 0.34, 168.0), balanced),
        ("recent only", weights(0.0, 0.0, 1.0, 24.0), recent),
        ("high quality", high_quality, strict),
    ] {
        println!("ChunkSelector, {name}:");
        for sc in ChunkSelector::with_weights(weights)?.select_chunks(&chunks, &query)? {
            assert_ne!(sc.chunk.id, "otp", "an expired chunk is never returned");
            let parts = [sc.relevance_score, sc.importance_score, sc.recency_score];
            row(&sc.chunk.id, sc.final_score, parts);
        }
    }

    // # Step 3: the same memories in an index, in a temporary directory (no embedder:
    // relevance is the normalised BM25 score)
    let dir = tempfile::tempdir()?;
    let engine = Engine::builder().create(dir.path().join("memory"))?;
    engine.upsert_chunks(chunks)?;
    engine.commit()?;
    let search = |title: &str, request: &SearchRequest| -> ruchedb::Result<Vec<String>> {
        println!("{title}:");
        let response = engine.search(request)?;
        for hit in &response.hits {
            let b = &hit.breakdown;
            // Browsing without a query has no relevance: the seed's neutral 0.5.
            let relevance = b.relevance.unwrap_or(0.5);
            let parts = [relevance, b.importance.unwrap(), b.recency.unwrap()];
            row(&hit.id, hit.score, parts);
        }
        Ok(response.hits.into_iter().map(|hit| hit.id).collect())
    };

    // # Step 4: a chunk search at a given time, with the configured weights (0.5/0.3/0.2)
    let request = SearchRequest::chunks("machine learning")
        .with_context("u42")
        .with_now(now);
    let hits = search("engine, default weights", &request.clone().with_top_k(5))?;
    assert!(!hits.contains(&"otp".to_string())); // expired chunks are filtered out

    // # Step 5: recent only: no query text, recency weight 1.0 with a 24-hour half-life
    let recent = weights(0.0, 0.0, 1.0, 24.0);
    let browse = SearchRequest::chunks("")
        .browse()
        .with_chunk_weights(recent);
    let hits = search("engine, recent only", &browse.with_now(now).with_top_k(5))?;
    let newest_first = ["standup", "meeting", "holiday", "laptop", "ml-course"];
    assert_eq!(hits, newest_first);

    // # Step 6: high quality: importance 0.7 and relevance 0.3, keeping scores >= 0.7
    let strict = SelectionConfig::FixedK {
        k: Some(10),
        min_score: Some(0.7),
    };
    let request = request
        .with_chunk_weights(high_quality)
        .with_selection(strict);
    let hits = search("engine, high quality", &request)?;
    assert!(hits.contains(&"ml-fraud".to_string()));
    Ok(())
}
