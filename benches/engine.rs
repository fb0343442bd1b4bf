//! The engine's speed and memory targets (`docs/benchmarks.md`), measured end to end.
//!
//! ```text
//! cargo bench --bench engine                     # full size: 1,000 rules, 100,000 chunks
//! RUCHE_BENCH_CHUNKS=20000 cargo bench --bench engine
//! RUCHE_BENCH_ONLY=turn cargo bench --bench engine   # a turn against one rules search
//! ```
//!
//! Method: synthetic 384-d vectors from a model fitted to real sentence embeddings
//! (all-MiniLM-L6-v2 on SciFact: common mean, power-law variance spectrum, topics of ten
//! documents; see `EmbeddingModel`), short texts from a 500-word vocabulary, default
//! configuration. The chunk index is built once, then opened and searched in a fresh
//! process so that its resident memory is measured alone. Latencies are per query, warm (each
//! query set runs once before timing), single-threaded, reported as p50 and p99 over
//! 2,000 queries. Each measurement asserts that searches return hits.

use std::time::{Duration, Instant};

use ruchedb::{Chunk, Engine, Rule, Scope, SearchRequest, TurnRequest};

#[path = "../tests/common/sample.rs"]
mod sample;

const DIM: usize = 384;

struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A standard normal sample (Box-Muller).
    fn normal(&mut self) -> f32 {
        let u1 = ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let u2 = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32
    }
}

/// Vectors shaped like real sentence embeddings: fitted to all-MiniLM-L6-v2 on BEIR
/// SciFact (a common mean of norm 0.36, a variance spectrum falling as `i^-0.85`, topics
/// of about ten documents holding 58% of the variance; nearest-neighbour cosine 0.68,
/// tenth 0.53, median 0.13, as in the real corpus). Queries come from the same topics.
struct EmbeddingModel {
    mean: Vec<f32>,
    sd_doc: Vec<f32>,
    topics: Vec<Vec<f32>>,
}

impl EmbeddingModel {
    fn new(n_topics: usize) -> EmbeddingModel {
        let mut rng = Rng(0x5eed);
        let lambda: Vec<f64> = (1..=DIM).map(|i| 0.104 * (i as f64).powf(-0.85)).collect();
        let sd_topic: Vec<f32> = lambda.iter().map(|l| (0.58 * l).sqrt() as f32).collect();
        let sd_doc: Vec<f32> = lambda.iter().map(|l| (0.42 * l).sqrt() as f32).collect();
        let mut mean: Vec<f32> = (0..DIM).map(|_| rng.normal()).collect();
        let norm = mean.iter().map(|x| x * x).sum::<f32>().sqrt();
        mean.iter_mut().for_each(|x| *x *= 0.36 / norm);
        let topics = (0..n_topics)
            .map(|_| sd_topic.iter().map(|sd| sd * rng.normal()).collect())
            .collect();
        EmbeddingModel {
            mean,
            sd_doc,
            topics,
        }
    }

    fn vectors(&self, seed: u64, n: usize) -> Vec<Vec<f32>> {
        let mut rng = Rng(seed);
        (0..n)
            .map(|_| {
                let topic = &self.topics[rng.next_u64() as usize % self.topics.len()];
                (0..DIM)
                    .map(|d| self.mean[d] + topic[d] + self.sd_doc[d] * rng.normal())
                    .collect()
            })
            .collect()
    }
}

fn text(rng: &mut Rng, words: usize) -> String {
    (0..words)
        .map(|_| format!("w{}", rng.next_u64() % 500))
        .collect::<Vec<_>>()
        .join(" ")
}

fn percentiles(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let at = |q: f64| {
        let idx = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len()) - 1;
        samples[idx].as_secs_f64() * 1e3
    };
    (at(0.5), at(0.99))
}

/// p50 and p99 of the search latency in ms; prints the median of each stage's timing
/// (as the response reports it) to stderr, to show where the time goes.
fn time_queries(engine: &Engine, requests: &[SearchRequest]) -> (f64, f64) {
    for request in requests {
        assert!(!engine.search(request).unwrap().hits.is_empty());
    }
    let mut stages: [Vec<u64>; 5] = Default::default();
    let samples = requests
        .iter()
        .map(|request| {
            let started = Instant::now();
            let response = engine.search(request).unwrap();
            let elapsed = started.elapsed();
            assert!(!response.hits.is_empty());
            let t = &response.timings;
            for (stage, us) in
                stages
                    .iter_mut()
                    .zip([t.embed_us, t.text_us, t.vector_us, t.fuse_us, t.select_us])
            {
                stage.push(us);
            }
            elapsed
        })
        .collect();
    let medians: Vec<String> = ["embed", "text", "vector", "fuse", "select"]
        .iter()
        .zip(&mut stages)
        .map(|(name, stage)| {
            stage.sort_unstable();
            format!("{name} {} us", stage[stage.len() / 2])
        })
        .collect();
    eprintln!("  stage medians: {}", medians.join(", "));
    percentiles(samples)
}

/// Resident memory of this process in MB (Linux), if known.
fn rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn rules_bench() {
    let mut rng = Rng(1);
    let model = EmbeddingModel::new(100);
    let vectors = model.vectors(2, 1_000);
    let engine = Engine::builder().temporary().unwrap();
    let rules: Vec<Rule> = vectors
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let scope = match i % 10 {
                0..=5 => Scope::Global,
                6..=8 => Scope::scenario(format!("s{}", i % 7)),
                _ => Scope::step(format!("s{}", i % 7), "confirm"),
            };
            Rule::new(format!("rule-{i:04}"), text(&mut rng, 8), text(&mut rng, 6))
                .with_scope(scope)
                .with_priority((i % 100) as i32)
                .with_embedding(v)
        })
        .collect();
    engine.upsert_rules(rules).unwrap();
    engine.commit().unwrap();
    engine.sync_graph().unwrap();
    let queries: Vec<SearchRequest> = model
        .vectors(3, 2_000)
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            SearchRequest::rules(text(&mut rng, 6))
                .with_embedding(v)
                .with_scenario(format!("s{}", i % 7))
        })
        .collect();
    let (p50, p99) = time_queries(&engine, &queries);
    println!("| rule match, 1,000 rules, one query, warm | p50 {p50:.3} ms, p99 {p99:.3} ms |");
}

/// Builds the chunk index (ingest and graph timings), unless `dir` already holds one.
fn build_chunks(n: usize, path: &std::path::Path) {
    if path.join("store").exists() {
        println!("| (reusing the index in {}) | |", path.display());
        return;
    }
    let mut rng = Rng(11);
    let model = EmbeddingModel::new(n / 10);
    let chunks: Vec<Chunk> = model
        .vectors(12, n)
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            Chunk::new(format!("chunk-{i:06}"), text(&mut rng, 12))
                .with_importance((i % 10) as u8 + 1)
                .with_context(format!("ctx-{}", i % 50))
                .with_embedding(v)
        })
        .collect();
    let engine = Engine::builder().create(path).unwrap();
    let started = Instant::now();
    for batch in chunks.chunks(10_000) {
        engine.upsert_chunks(batch.to_vec()).unwrap();
    }
    engine.commit().unwrap();
    let ingest = started.elapsed();
    println!(
        "| ingest with vectors supplied, {n} chunks, searchable at commit | {:.0} chunks/s ({:.1} s) |",
        n as f64 / ingest.as_secs_f64(),
        ingest.as_secs_f64()
    );
    let started = Instant::now();
    engine.sync_graph().unwrap();
    println!(
        "| HNSW graph built behind the commit, {n} chunks | {:.1} s |",
        started.elapsed().as_secs_f64()
    );
    engine.close().unwrap();
}

/// Opens the index and searches it; runs in a fresh process so that resident memory is
/// the open index's alone.
fn search_chunks(n: usize, path: &std::path::Path) {
    let mut rng = Rng(17);
    let model = EmbeddingModel::new(n / 10);
    let raw_vector_mb = (n * DIM * 4) as f64 / 1e6;
    let started = Instant::now();
    let engine = Engine::builder().open(path).unwrap();
    let open = started.elapsed();
    // The graph checkpoint loads in the background; searches scan exactly until then.
    let probe = SearchRequest::chunks("w1").with_embedding(model.vectors(16, 1).remove(0));
    let started_search = Instant::now();
    assert!(!engine.search(&probe).unwrap().hits.is_empty());
    let first_search = started_search.elapsed();
    engine.sync_graph().unwrap();
    let graph_ready = started.elapsed();
    let stats = engine.stats();
    assert_eq!(
        stats.counters.graph_checkpoint_loads, 1,
        "opened from the checkpoint"
    );
    assert_eq!(stats.counters.graph_vectors_inserted, 0, "no rebuild");
    println!(
        "| open an index of {n} chunks | {:.0} ms (first search {:.0} ms; graph checkpoint loaded in the background after {:.0} ms) |",
        open.as_secs_f64() * 1e3,
        first_search.as_secs_f64() * 1e3,
        graph_ready.as_secs_f64() * 1e3
    );

    let queries: Vec<SearchRequest> = model
        .vectors(13, 2_000)
        .into_iter()
        .map(|v| SearchRequest::chunks(text(&mut rng, 4)).with_embedding(v))
        .collect();
    let (p50, p99) = time_queries(&engine, &queries);
    println!("| chunk search, {n} chunks, warm | p50 {p50:.3} ms, p99 {p99:.3} ms |");
    let filtered: Vec<SearchRequest> = model
        .vectors(14, 2_000)
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            SearchRequest::chunks(text(&mut rng, 4))
                .with_embedding(v)
                .with_context(format!("ctx-{}", i % 50))
        })
        .collect();
    let (p50, p99) = time_queries(&engine, &filtered);
    println!(
        "| chunk search in one context (2% of {n}), warm | p50 {p50:.3} ms, p99 {p99:.3} ms |"
    );
    if let Some(rss) = rss_mb() {
        println!(
            "| resident memory, {n} x 384-d chunks, open and searched | {rss:.0} MB (target {:.0} MB) |",
            2.5 * raw_vector_mb + 50.0
        );
    }

    // Recall of the graph against an exact scan, on the same index.
    let relevance_only = ruchedb::chunk::ChunkWeights::new(1.0, 0.0, 0.0);
    let probe: Vec<SearchRequest> = model
        .vectors(15, 200)
        .into_iter()
        .map(|v| {
            SearchRequest::chunks("")
                .with_embedding(v)
                .with_chunk_weights(relevance_only)
                .with_top_k(10)
        })
        .collect();
    let approximate: Vec<Vec<String>> = probe
        .iter()
        .map(|q| {
            engine
                .search(q)
                .unwrap()
                .hits
                .into_iter()
                .map(|h| h.id)
                .collect()
        })
        .collect();
    drop(engine);
    let mut exact_config = ruchedb::Config::default();
    exact_config.pipeline.retrieval.exact_scan_threshold = usize::MAX;
    let exact_engine = Engine::builder()
        .with_config(exact_config)
        .open(path)
        .unwrap();
    let mut recall = 0.0;
    for (query, got) in probe.iter().zip(&approximate) {
        let want: Vec<String> = exact_engine
            .search(query)
            .unwrap()
            .hits
            .into_iter()
            .map(|h| h.id)
            .collect();
        recall += got.iter().filter(|id| want.contains(id)).count() as f64 / want.len() as f64;
    }
    println!(
        "| HNSW recall@10 vs exact, default settings | {:.3} |",
        recall / probe.len() as f64
    );
}

/// Messages of the sample's domain (the demo's, and more).
const MESSAGES: &[&str] = &[
    "I want my money back",
    "I want to return the boots I bought, they are too small",
    "checkout says PAY_DECLINED_51",
    "where is my order NW-10533?",
    "my package still hasn't shown up, can you check where it is?",
    "the tent I got yesterday has a snapped pole",
    "please just cancel it, I have enough gas canisters",
    "can I change the delivery address of my order",
    "which promo code gives a discount on winter jackets?",
    "what is the return window for unworn items?",
    "the zipper of my jacket broke after two weeks",
    "what is the weather tomorrow",
];

/// p50 and p99 of one rules search and of one turn for the same messages, interleaved
/// (search, turn, search, turn...), in ms.
fn turn_against_search(engine: &Engine, rounds: usize, context: Option<&str>) -> [(f64, f64); 2] {
    let mut search = Vec::new();
    let mut turn = Vec::new();
    for (i, message) in MESSAGES.iter().cycle().take(rounds).enumerate() {
        let request = SearchRequest::rules(*message);
        let turn_request = match context {
            Some(context) => TurnRequest::new(*message).with_context(context),
            None => TurnRequest::new(*message),
        };
        let mut time_search = || {
            let started = Instant::now();
            engine.search(&request).unwrap();
            search.push(started.elapsed());
        };
        let mut time_turn = || {
            let started = Instant::now();
            engine.turn(&turn_request).unwrap();
            turn.push(started.elapsed());
        };
        if i % 2 == 0 {
            time_search();
            time_turn();
        } else {
            time_turn();
            time_search();
        }
    }
    [percentiles(search), percentiles(turn)]
}

/// A turn (scenario, rules, memory, tools) against one rules search: on the sample index,
/// then with `n` generated chunks more (texts of the sample's words, bundled embedder).
fn turn_bench(n: usize) {
    let engine = sample::engine();
    // Warm: the tokenizer, the helper thread, the caches.
    turn_against_search(&engine, 200, None);
    let row = |what: &str, [(s50, s99), (t50, t99)]: [(f64, f64); 2]| {
        println!(
            "| {what}: one rules search / one turn | p50 {s50:.3} / {t50:.3} ms ({:.2}x), p99 {s99:.3} / {t99:.3} ms |",
            t50 / s50
        );
    };
    row("sample index", turn_against_search(&engine, 2_000, None));
    let words: Vec<String> = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("index_data/chunks.jsonl"),
    )
    .unwrap()
    .split(|c: char| !c.is_alphabetic())
    .filter(|w| w.len() > 2)
    .map(str::to_lowercase)
    .collect();
    let mut rng = Rng(29);
    let mut chunks = Vec::with_capacity(10_000);
    for i in 0..n {
        let content: Vec<&str> = (0..14)
            .map(|_| words[(rng.next_u64() % words.len() as u64) as usize].as_str())
            .collect();
        chunks.push(
            Chunk::new(format!("gen-{i:06}"), content.join(" "))
                .with_context(format!("ctx-{}", i % 1_000)),
        );
        if chunks.len() == 10_000 || i + 1 == n {
            engine.upsert_chunks(std::mem::take(&mut chunks)).unwrap();
        }
    }
    engine.commit().unwrap();
    engine.sync_graph().unwrap();
    turn_against_search(&engine, 200, None);
    row(
        &format!("sample index and {n} chunks, memory over all of them"),
        turn_against_search(&engine, 2_000, None),
    );
    row(
        &format!("sample index and {n} chunks, memory of one conversation"),
        turn_against_search(&engine, 2_000, Some("ctx-7")),
    );
}

/// One message embedded by each compiled-in model, p50 and p99 (interleaved, after a
/// warm-up): what a search or a turn spends before any leg runs.
fn embed_bench(rounds: usize) {
    use ruchedb::{Embedder, MiniLmEmbedder, StaticEmbedder};
    // 20 words, as a user's message is.
    const MESSAGE: &str = "hello, I ordered a tent two weeks ago and it still has not arrived, can you check where it is";
    let minilm = MiniLmEmbedder::bundled().unwrap();
    let bundled_static = StaticEmbedder::bundled().unwrap();
    let models: [(&str, &dyn Embedder); 2] = [
        ("all-MiniLM-L6-v2 (compiled in, int8)", &minilm),
        ("static model (compiled in)", &bundled_static),
    ];
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); models.len()];
    for round in 0..rounds + 50 {
        for (i, (_, model)) in models.iter().enumerate() {
            let started = Instant::now();
            let vectors = model.embed_batch(&[MESSAGE]).unwrap();
            let elapsed = started.elapsed();
            assert_eq!(vectors.len(), 1);
            if round >= 50 {
                samples[i].push(elapsed);
            }
        }
    }
    for ((name, _), samples) in models.iter().zip(samples) {
        let (p50, p99) = percentiles(samples);
        println!("| query embedding, 20 words, {name} | p50 {p50:.3} ms, p99 {p99:.3} ms |");
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs it as a quick smoke.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let n: usize = std::env::var("RUCHE_BENCH_CHUNKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if smoke { 2_000 } else { 100_000 });
    if let Some(dir) = std::env::var_os("RUCHE_BENCH_SEARCH_CHILD") {
        search_chunks(n, std::path::Path::new(&dir));
        return;
    }
    println!("| what | measured |\n| --- | --- |");
    let only = std::env::var("RUCHE_BENCH_ONLY").unwrap_or_default();
    if only == "embed" {
        embed_bench(2_000);
        return;
    }
    if only == "turn" {
        turn_bench(n);
        return;
    }
    embed_bench(if smoke { 20 } else { 2_000 });
    turn_bench(n);
    rules_bench();
    // RUCHE_BENCH_DIR keeps the chunk index between runs (built once).
    let temp = tempfile::tempdir().unwrap();
    let path = match std::env::var_os("RUCHE_BENCH_DIR") {
        Some(dir) => std::path::PathBuf::from(dir),
        None => temp.path().join("index"),
    };
    build_chunks(n, &path);
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(std::env::args().skip(1))
        .env("RUCHE_BENCH_SEARCH_CHILD", &path)
        .env("RUCHE_BENCH_CHUNKS", n.to_string())
        .status()
        .unwrap();
    assert!(status.success());
}
