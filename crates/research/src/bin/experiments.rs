//! Which fusion of BM25 and vectors beats its better leg? The experiments behind the
//! fusion defaults (issues 4 and 7; the tables and the reasoning are in
//! `crates/research/docs/fusion-experiments.md`).
//!
//! ```text
//! cargo run --release -p ruchedb-research --bin experiments -- ../shared/eval
//! cargo run --release -p ruchedb-research --features bert --bin experiments -- ../shared/eval [BERT_DIR]
//! ```
//!
//! - **SciFact** (train: 5,183 abstracts as chunks, 809 claims), with the given MiniLM
//!   vectors; each leg fetches 100 candidates; nDCG@10, recall@100, MRR@10.
//! - **BANKING77** as rule matching: 77 rules, one per intent, condition and action both
//!   the intent name in words (`card_arrival`: "card arrival"), priority 0 and global, so
//!   the final score ranks as the hybrid one. Per intent, its first 10 messages of
//!   `train.csv` (file order) are the rule's patterns; the other 9,233 are the queries.
//!   Zero-shot (no patterns) and with patterns, each embedder; top-1 and MRR@10.
//!
//! Every index lives in a temporary directory. Queries are embedded once (timed one by
//! one) and passed as vectors, so each fusion setting sees the same vectors. The vector
//! leg scans exactly (no HNSW), so the numbers are deterministic. `SearchRequest::with_top_k`
//! ranks by the engine's final score without k-selection.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;
use ruchedb::eval::{Qrels, ndcg_at, recall_at, reciprocal_rank_at};
use ruchedb::fusion::Normalization::{FixedBounds, MinMax, ZScore};
use ruchedb::fusion::{FusionMethod, FusionSpec, Normalization};
use ruchedb::{Chunk, Config, Embedder, Engine, Kind};
use ruchedb::{Rule, SearchRequest, StaticEmbedder};

#[path = "../common/data.rs"]
mod data;

use data::{Res, read_csv};

/// The shipped defaults, `(spec, adaptive, patterns_in_text, max_candidates)` of a kind.
fn shipped(kind: Kind) -> (FusionSpec, bool, bool, usize) {
    let c = Config::default();
    let spec = if kind == Kind::Rule {
        c.fusion.rules
    } else {
        c.fusion.chunks
    };
    (
        spec,
        c.fusion.adaptive,
        c.fusion.patterns_in_text,
        c.pipeline.retrieval.max_candidates,
    )
}

// # The fusion settings compared

fn weighted(text: Normalization, vector: Normalization, vw: f64, upper: f64) -> FusionSpec {
    let mut spec = FusionSpec::default();
    spec.method = FusionMethod::Weighted;
    spec.text_normalization = text;
    spec.vector_normalization = vector;
    spec.vector_weight = vw;
    spec.text_weight = 1.0 - vw;
    spec.text_bounds = [0.0, upper];
    spec.vector_bounds = [0.0, 1.0];
    spec.rrf_k = 60.0;
    spec
}

fn rrf(vw: f64) -> FusionSpec {
    let mut spec = weighted(MinMax, FixedBounds, vw, 10.0);
    spec.method = FusionMethod::Rrf;
    spec
}

/// The two legs alone, then each fusion. `uppers`: text bounds for `fixed_bounds`.
fn variants(uppers: &[f64]) -> Vec<(String, FusionSpec)> {
    let mut v = vec![
        ("BM25 only".into(), weighted(MinMax, FixedBounds, 0.0, 10.0)),
        (
            "vector only".into(),
            weighted(MinMax, FixedBounds, 1.0, 10.0),
        ),
    ];
    for w in [0.5, 0.6, 0.7, 0.8, 0.9] {
        v.push((
            format!("min_max, v {w}"),
            weighted(MinMax, FixedBounds, w, 10.0),
        ));
    }
    v.push((
        "min_max both legs, v 0.7".into(),
        weighted(MinMax, MinMax, 0.7, 10.0),
    ));
    for w in [0.7, 0.8] {
        v.push((
            format!("z_score, v {w}"),
            weighted(ZScore, FixedBounds, w, 10.0),
        ));
    }
    for w in [0.5, 0.6, 0.7] {
        v.push((
            format!("dbsf (z_score both), v {w}"),
            weighted(ZScore, ZScore, w, 10.0),
        ));
    }
    for &upper in uppers {
        v.push((
            format!("fixed_bounds [0, {upper}], v 0.7"),
            weighted(FixedBounds, FixedBounds, 0.7, upper),
        ));
    }
    v.push(("rrf k 60, v 0.5".into(), rrf(0.5)));
    v.push(("rrf k 60, v 0.7".into(), rrf(0.7)));
    v
}

// # Running queries

struct Query {
    text: String,
    vector: Option<Vec<f32>>,
    qrels: Qrels,
}

type Metric = (&'static str, fn(&[String], &Qrels) -> f64);

const SCIFACT_METRICS: &[Metric] = &[
    ("nDCG@10", |r, q| ndcg_at(r, q, 10)),
    ("R@100", |r, q| recall_at(r, q, 100)),
    ("MRR@10", |r, q| reciprocal_rank_at(r, q, 10)),
];
const BANKING_METRICS: &[Metric] = &[
    ("top-1", |r, q| reciprocal_rank_at(r, q, 1)),
    ("MRR@10", |r, q| reciprocal_rank_at(r, q, 10)),
];

struct Bench<'a> {
    engine: Engine,
    kind: Kind,
    queries: &'a [Query],
    metrics: &'static [Metric],
    top_k: usize,
}

impl Bench<'_> {
    fn search(
        &self,
        q: &Query,
        spec: FusionSpec,
        adaptive: bool,
        cands: usize,
        top_k: usize,
    ) -> Res<ruchedb::SearchResponse> {
        // The relevance gate off: this measures the ranking (`crates/research/src/bin/relevance.rs`
        // measures the gate).
        let mut request = SearchRequest::new(self.kind, q.text.clone())
            .with_fusion(spec)
            .with_adaptive(adaptive)
            .with_max_candidates(cands)
            .with_min_relevance(0.0)
            .with_top_k(top_k);
        if let Some(vector) = &q.vector {
            request = request.with_embedding(vector.clone());
        }
        Ok(self.engine.search(&request)?)
    }

    /// The mean of each metric over the queries.
    fn eval(&self, spec: FusionSpec, adaptive: bool, cands: usize, top_k: usize) -> Res<Vec<f64>> {
        let per_query: Vec<Vec<f64>> = self
            .queries
            .par_iter()
            .map(|q| {
                let ids: Vec<String> = self
                    .search(q, spec, adaptive, cands, top_k)?
                    .hits
                    .into_iter()
                    .map(|h| h.id)
                    .collect();
                Ok(self
                    .metrics
                    .iter()
                    .map(|(_, f)| f(&ids, &q.qrels))
                    .collect())
            })
            .collect::<Res<_>>()?;
        let n = per_query.len() as f64;
        Ok((0..self.metrics.len())
            .map(|m| per_query.iter().map(|v| v[m]).sum::<f64>() / n)
            .collect())
    }

    /// Text bounds from the data: the median and 90th percentile of the top BM25 score.
    fn bm25_uppers(&self) -> Res<Vec<f64>> {
        let spec = weighted(MinMax, FixedBounds, 0.0, 10.0);
        let mut top: Vec<f64> = self
            .queries
            .par_iter()
            .map(|q| {
                Ok(self
                    .search(q, spec, false, 10, 1)?
                    .hits
                    .first()
                    .map_or(0.0, |h| h.breakdown.bm25))
            })
            .collect::<Res<_>>()?;
        top.sort_by(f64::total_cmp);
        let at = |p: f64| (top[((top.len() - 1) as f64 * p) as usize] * 2.0).round() / 2.0;
        Ok(vec![at(0.5), at(0.9)])
    }

    /// Prints the table of every variant: all metrics, then the first one with
    /// query-adaptive weights. Returns each variant's first metric (adaptive off).
    fn table(&self, title: &str, cands: usize) -> Res<Vec<(String, f64)>> {
        let mut uppers = self.bm25_uppers()?;
        uppers.push(10.0);
        println!("\n### {title}\n");
        let names: Vec<&str> = self.metrics.iter().map(|m| m.0).collect();
        println!("| fusion | {} | {} adaptive |", names.join(" | "), names[0]);
        println!("|---|{}---:|", "---:|".repeat(names.len()));
        let mut out = Vec::new();
        for (i, (name, spec)) in variants(&uppers).into_iter().enumerate() {
            let m = self.eval(spec, false, cands, self.top_k)?;
            let adaptive = if i < 2 {
                "-".into()
            } else {
                f3(self.eval(spec, true, cands, self.top_k)?[0])
            };
            let cells: Vec<String> = m.iter().map(|&x| f3(x)).collect();
            println!("| {name} | {} | {adaptive} |", cells.join(" | "));
            out.push((name, m[0]));
        }
        Ok(out)
    }

    /// The first metric at each `max_candidates` (top 10 returned).
    fn sweep(&self, label: &str, spec: FusionSpec, adaptive: bool) -> Res<()> {
        let cells: Vec<String> = [10, 30, 100]
            .iter()
            .map(|&n| Ok(f3(self.eval(spec, adaptive, n, 10)?[0])))
            .collect::<Res<_>>()?;
        println!("| {label} | {} |", cells.join(" | "));
        Ok(())
    }
}

fn f3(x: f64) -> String {
    format!("{x:.3}")
}

/// Each leg alone and the shipped default, side by side.
fn summary(rows: &[(String, f64, f64, f64)], metric: &str) {
    println!("\n| setting | BM25 only | vector only | shipped default | default - best leg |");
    println!("|---|---:|---:|---:|---:|");
    for (name, bm25, vector, shipped) in rows {
        let delta = shipped - bm25.max(*vector);
        println!(
            "| {name} ({metric}) | {} | {} | {} | {delta:+.3} |",
            f3(*bm25),
            f3(*vector),
            f3(*shipped),
        );
    }
}

// # SciFact

fn scifact(eval: &Path) -> Res<()> {
    let started = Instant::now();
    let mut config = Config::default();
    config.pipeline.retrieval.max_candidates = 1; // Set per request.
    config.pipeline.retrieval.exact_scan_threshold = 100_000;
    let engine = Engine::builder().with_config(config).temporary()?;
    let (docs, claims) = data::scifact(eval)?;
    engine.upsert_chunks(
        docs.iter()
            .map(|a| Chunk::new(&a.id, &a.content).with_embedding(a.vector.clone())),
    )?;
    engine.commit()?;
    let queries: Vec<Query> = claims
        .into_iter()
        .map(|c| Query {
            text: c.text,
            vector: Some(c.vector),
            qrels: c.qrels,
        })
        .collect();
    println!(
        "\n## SciFact train ({} documents, {} queries)",
        docs.len(),
        queries.len()
    );
    let bench = Bench {
        engine,
        kind: Kind::Chunk,
        queries: &queries,
        metrics: SCIFACT_METRICS,
        top_k: 100,
    };
    let rows = bench.table("Each leg fetches 100 candidates", 100)?;
    let (default, default_adaptive, ..) = shipped(Kind::Chunk);
    println!(
        "\n`max_candidates` sweep (nDCG@10):\n\n| fusion | 10 | 30 | 100 |\n|---|---:|---:|---:|"
    );
    bench.sweep("shipped default", default, default_adaptive)?;
    let pick = |s: FusionSpec, a: bool| {
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(bench.eval(s, a, 100, 100)?[0])
    };
    summary(
        &[(
            "SciFact, 100 candidates".into(),
            rows[0].1,
            rows[1].1,
            pick(default, default_adaptive)?,
        )],
        "nDCG@10",
    );
    eprintln!("SciFact: {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

// # BANKING77

fn banking(eval: &Path, name: &str, embedder: Arc<dyn Embedder>) -> Res<()> {
    let started = Instant::now();
    let dir = eval.join("banking77");
    let intents: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("categories.json"))?)?;
    let mut patterns: HashMap<String, Vec<String>> = HashMap::new();
    let mut queries = Vec::new();
    let mut times = Vec::new();
    for row in read_csv(&dir.join("train.csv"))?.into_iter().skip(1) {
        let [text, intent] = <[String; 2]>::try_from(row).map_err(|r| format!("bad row {r:?}"))?;
        let examples = patterns.entry(intent.clone()).or_default();
        if examples.len() < 10 {
            examples.push(text);
            continue;
        }
        let t = Instant::now();
        let vector = embedder.embed_batch(&[text.as_str()])?.pop();
        times.push(t.elapsed().as_secs_f64() * 1e6);
        queries.push(Query {
            text,
            vector,
            qrels: Qrels::from([(intent, 1)]),
        });
    }
    times.sort_by(f64::total_cmp);
    println!(
        "\n## BANKING77, {name}: {} held-out messages, median query embedding {:.0} µs",
        queries.len(),
        times[times.len() / 2]
    );
    let (default, default_adaptive, default_pit, default_cands) = shipped(Kind::Rule);
    let mut found = Vec::new(); // Per index: top-1 of BM25, vector, shipped default.
    for (setting, with_patterns, in_text) in [
        ("zero-shot", false, false),
        ("10 patterns", true, false),
        ("10 patterns, patterns_in_text", true, true),
    ] {
        let mut config = Config::default();
        config.pipeline.retrieval.max_candidates = 1; // Set per request.
        config.fusion.patterns_in_text = in_text;
        let engine = Engine::builder()
            .with_config(config)
            .with_embedder(embedder.clone())
            .temporary()?;
        engine.upsert_rules(intents.iter().map(|intent| {
            let words = intent.replace('_', " ");
            let rule = Rule::new(intent, &words, &words);
            if with_patterns {
                rule.with_patterns(patterns[intent].clone())
            } else {
                rule
            }
        }))?;
        engine.commit()?;
        let bench = Bench {
            engine,
            kind: Kind::Rule,
            queries: &queries,
            metrics: BANKING_METRICS,
            top_k: 10,
        };
        let rows = bench.table(&format!("{name}, {setting}, 30 candidates per leg"), 30)?;
        let best = rows
            .iter()
            .skip(2)
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|r| r.0.clone());
        println!(
            "\nBest fusion: {}. `max_candidates` sweep (top-1):\n",
            best.unwrap_or_default()
        );
        println!("| fusion | 10 | 30 | 100 |\n|---|---:|---:|---:|");
        bench.sweep(
            "vector only",
            weighted(MinMax, FixedBounds, 1.0, 10.0),
            false,
        )?;
        bench.sweep("shipped default", default, default_adaptive)?;
        let shipped_top1 = bench.eval(default, default_adaptive, default_cands, 10)?[0];
        found.push([rows[0].1, rows[1].1, shipped_top1]);
    }
    // With patterns, each default on the index with its own `patterns_in_text`.
    let on = |in_text: bool, i: usize| found[if in_text { 2 } else { 1 }][i];
    summary(
        &[
            (
                format!("{name}, zero-shot"),
                found[0][0],
                found[0][1],
                found[0][2],
            ),
            (
                format!("{name}, 10 patterns"),
                on(false, 0).max(on(true, 0)),
                on(false, 1),
                on(default_pit, 2),
            ),
        ],
        "top-1",
    );
    eprintln!("BANKING77 {name}: {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let eval = Path::new(args.first().map_or("../shared/eval", String::as_str));
    let started = Instant::now();
    println!(
        "# Fusion experiments\n\nShipped rules fusion: {:?}\n\nShipped chunks fusion: {:?}",
        shipped(Kind::Rule),
        shipped(Kind::Chunk)
    );
    scifact(eval)?;
    banking(
        eval,
        "static (bundled)",
        Arc::new(StaticEmbedder::bundled()?),
    )?;
    #[cfg(feature = "bert")]
    {
        let dir = args
            .get(1)
            .map_or("target/models/all-MiniLM-L6-v2", String::as_str);
        banking(
            eval,
            "all-MiniLM-L6-v2 (bert)",
            Arc::new(ruchedb::BertEmbedder::from_dir(dir)?),
        )?;
    }
    eprintln!("total: {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}
