//! `ruche eval`: judged queries in, retrieval quality and latency out.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use ruchedb::Config;
use ruchedb::eval::{self, Qrels};
use serde_json::json;

use crate::args::EvalArgs;

use crate::input::{self, QueryDefaults, QueryLine};

/// Candidates per leg, so that recall@100 measures the engine and not a cut.
const RANKED_DEPTH: usize = 100;

/// Reads TSV (`query-id, doc-id, relevance`, header skipped) or TREC qrels.
pub fn read_qrels(path: &std::path::Path) -> Result<HashMap<String, Qrels>> {
    read_qrels_from(BufReader::new(input::open(path)?), path)
}

/// As [`read_qrels`], from `reader`; errors name `path`.
pub fn read_qrels_from(
    reader: impl BufRead,
    path: &std::path::Path,
) -> Result<HashMap<String, Qrels>> {
    let mut qrels: HashMap<String, Qrels> = HashMap::new();
    for (idx, line) in reader.lines().enumerate() {
        let line =
            line.with_context(|| format!("{}: line {}: cannot read", path.display(), idx + 1))?;
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (query, doc, relevance) = match fields.as_slice() {
            [] => continue,
            [q, d, r] => (*q, *d, *r),
            [q, _, d, r] => (*q, *d, *r),
            _ => bail!(
                "{}: line {}: expected 3 or 4 fields",
                path.display(),
                idx + 1
            ),
        };
        let Ok(relevance) = relevance.parse::<i64>() else {
            if idx == 0 {
                continue; // A header line.
            }
            bail!(
                "{}: line {}: relevance `{relevance}` is not an integer",
                path.display(),
                idx + 1
            );
        };
        qrels.entry(query.to_string()).or_default().insert(
            doc.to_string(),
            u32::try_from(relevance.max(0)).unwrap_or(u32::MAX),
        );
    }
    Ok(qrels)
}

fn id_string(id: &serde_json::Value) -> String {
    match id {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One judged query's outcome under the configured selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The first hit is judged relevant (or nothing was returned where nothing is).
    Right,
    /// The first hit is not judged relevant (or something was returned where nothing is).
    Wrong,
    /// Nothing was returned where something is relevant.
    Refused,
}

/// One judged query as it was answered.
#[derive(Debug, Clone)]
pub struct Judged {
    /// The query's id in the queries file.
    pub id: String,
    /// The request the line made (its text, kind and filters).
    pub request: ruchedb::SearchRequest,
    /// The ids judged relevant, most relevant first.
    pub expected: Vec<String>,
    /// The ids the configured selection returned, best first.
    pub selected: Vec<String>,
    /// The score of the first hit returned.
    pub first_score: Option<f64>,
    /// Why nothing was returned, when nothing was.
    pub abstention: Option<String>,
}

impl Judged {
    pub fn outcome(&self) -> Outcome {
        match self.selected.first() {
            None if self.expected.is_empty() => Outcome::Right,
            None => Outcome::Refused,
            Some(first) if self.expected.contains(first) => Outcome::Right,
            Some(_) => Outcome::Wrong,
        }
    }
}

/// The metrics of a set of judged queries, and each query's answer.
#[derive(Debug, Clone)]
pub struct Evaluation {
    pub ndcg10: f64,
    pub recall10: f64,
    pub recall100: f64,
    pub mrr10: f64,
    /// The strategies the selected searches used, joined by `+`.
    pub strategy: String,
    pub mean_size: f64,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// The judged queries, in the order of the queries file.
    pub queries: Vec<Judged>,
}

impl Evaluation {
    /// The report as one JSON object (`ruche eval --json`).
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "queries": self.queries.len(),
            "ndcg@10": self.ndcg10,
            "recall@10": self.recall10,
            "recall@100": self.recall100,
            "mrr@10": self.mrr10,
            "selection": {
                "strategy": self.strategy,
                "mean_size": self.mean_size,
                "precision": self.precision,
                "recall": self.recall,
                "f1": self.f1,
            },
            "latency_ms": {
                "p50": self.p50_ms,
                "p99": self.p99_ms,
            },
        })
    }

    /// How many queries had each outcome: right, wrong, refused.
    pub fn outcomes(&self) -> [usize; 3] {
        let count = |o: Outcome| self.queries.iter().filter(|q| q.outcome() == o).count();
        [
            count(Outcome::Right),
            count(Outcome::Wrong),
            count(Outcome::Refused),
        ]
    }
}

/// Reads a queries JSONL and a qrels file as `ruche eval` takes them: the requests of the
/// judged lines (a line's fields win over `defaults`) and their judgements.
pub fn read_judged(
    queries: &std::path::Path,
    qrels: &std::path::Path,
    defaults: &QueryDefaults,
) -> Result<Vec<(String, ruchedb::SearchRequest, Qrels)>> {
    let lines: Vec<QueryLine> = input::read_jsonl(queries)?;
    let judgements = read_qrels(qrels)?;
    pair_judged(lines, &judgements, queries, qrels, defaults)
}

/// Each query line with its judgements, as requests (lines without any are skipped).
pub fn pair_judged(
    lines: Vec<QueryLine>,
    judgements: &HashMap<String, Qrels>,
    queries: &std::path::Path,
    qrels: &std::path::Path,
    defaults: &QueryDefaults,
) -> Result<Vec<(String, ruchedb::SearchRequest, Qrels)>> {
    let mut judged = Vec::new();
    for (idx, line) in lines.iter().enumerate() {
        let id = id_string(&line.id);
        let Some(judgement) = judgements.get(&id) else {
            continue;
        };
        let request = line
            .to_request(defaults)
            .with_context(|| format!("{}: line {}", queries.display(), idx + 1))?;
        judged.push((id, request, judgement.clone()));
    }
    if judged.is_empty() {
        bail!(
            "no query of {} has judgements in {}",
            queries.display(),
            qrels.display()
        );
    }
    Ok(judged)
}

/// Runs each judged query twice: ranked to depth 100 (nDCG, recall, MRR) and with the
/// configured k-selection (what an agent gets: precision, recall, F1, and the answer).
pub fn evaluate(
    engine: &ruchedb::Reader,
    judged: Vec<(String, ruchedb::SearchRequest, Qrels)>,
) -> Result<Evaluation> {
    let (mut ndcg, mut r10, mut r100, mut mrr) = (0.0, 0.0, 0.0, 0.0);
    // The strategies the searches used (a query line's `kind` picks its kind's strategy).
    let mut strategies = std::collections::BTreeSet::new();
    let (mut size, mut precision, mut recall, mut f1) = (0.0, 0.0, 0.0, 0.0);
    let mut latencies_ms = Vec::new();
    let mut queries = Vec::with_capacity(judged.len());
    for (id, request, judgement) in judged {
        // Candidates per leg at least RANKED_DEPTH, as `ruche eval`'s configuration has.
        let request = request.with_max_candidates(
            engine
                .config()
                .pipeline
                .retrieval
                .max_candidates
                .max(RANKED_DEPTH),
        );
        let started = Instant::now();
        let ranked = engine.search(&request.clone().with_top_k(RANKED_DEPTH))?;
        latencies_ms.push(started.elapsed().as_secs_f64() * 1e3);
        let ranked: Vec<&str> = ranked.hits.iter().map(|h| h.id.as_str()).collect();
        ndcg += eval::ndcg_at(&ranked, &judgement, 10);
        r10 += eval::recall_at(&ranked, &judgement, 10);
        r100 += eval::recall_at(&ranked, &judgement, 100);
        mrr += eval::reciprocal_rank_at(&ranked, &judgement, 10);
        // The configured k-selection, as a search without top_k returns it.
        let response = engine.search(&request)?;
        strategies.insert(response.selection.strategy.clone());
        let selected: Vec<String> = response.hits.iter().map(|h| h.id.clone()).collect();
        let (p, r, f) = eval::set_precision_recall_f1(&selected, &judgement);
        size += selected.len() as f64;
        precision += p;
        recall += r;
        f1 += f;
        let mut expected: Vec<(&String, u32)> = judgement
            .iter()
            .filter(|(_, rel)| **rel > 0)
            .map(|(doc, rel)| (doc, *rel))
            .collect();
        expected.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        queries.push(Judged {
            id,
            expected: expected.into_iter().map(|(doc, _)| doc.clone()).collect(),
            first_score: response.hits.first().map(|h| h.score),
            abstention: response.gate.abstention_reason(),
            selected,
            request,
        });
    }
    let n = queries.len().max(1) as f64;
    Ok(Evaluation {
        ndcg10: ndcg / n,
        recall10: r10 / n,
        recall100: r100 / n,
        mrr10: mrr / n,
        strategy: strategies.into_iter().collect::<Vec<_>>().join("+"),
        mean_size: size / n,
        precision: precision / n,
        recall: recall / n,
        f1: f1 / n,
        p50_ms: eval::percentile(&latencies_ms, 0.5),
        p99_ms: eval::percentile(&latencies_ms, 0.99),
        queries,
    })
}

/// The defaults of `ruche eval`'s queries: `--kind`, `--tenant` and the fusion flags.
pub fn defaults(config: &Config, args: &EvalArgs) -> Result<QueryDefaults> {
    Ok(QueryDefaults {
        kind: Some(args.kind.into()),
        tenant: Some(args.tenant.clone()),
        fusion: input::fusion(
            &args.fusion,
            crate::commands::fusion_base(config, args.kind.into()),
        )?,
        adaptive: input::adaptive(&args.fusion),
        ..QueryDefaults::default()
    })
}

pub fn run(config: &Config, args: &EvalArgs) -> Result<ExitCode> {
    let defaults = defaults(config, args)?;
    let judged = read_judged(&args.queries, &args.qrels, &defaults)?;
    let mut config = config.clone();
    let retrieval = &mut config.pipeline.retrieval;
    retrieval.max_candidates = retrieval.max_candidates.max(RANKED_DEPTH);
    let engine = crate::commands::open_to_read(&config, &args.dir)?;
    let evaluation = evaluate(&engine, judged)?;
    if let Some(path) = &args.report {
        let html = crate::inspect::report(&engine, &evaluation, &args.dir)?;
        std::fs::write(path, html)
            .with_context(|| format!("--report: cannot write {}", path.display()))?;
    }
    let e = &evaluation;
    let mut out = std::io::stdout().lock();
    if args.json {
        crate::output::write_line(&mut out, &e.to_json())?;
    } else {
        writeln!(out, "queries      {}", e.queries.len())?;
        writeln!(out, "nDCG@10      {:.4}", e.ndcg10)?;
        writeln!(out, "recall@10    {:.4}", e.recall10)?;
        writeln!(out, "recall@100   {:.4}", e.recall100)?;
        writeln!(out, "MRR@10       {:.4}", e.mrr10)?;
        writeln!(
            out,
            "selection    {}: mean size {:.2}, precision {:.4}, recall {:.4}, F1 {:.4}",
            e.strategy, e.mean_size, e.precision, e.recall, e.f1
        )?;
        writeln!(
            out,
            "latency      p50 {:.2} ms, p99 {:.2} ms",
            e.p50_ms, e.p99_ms
        )?;
        if let Some(path) = &args.report {
            writeln!(out, "report       {}", path.display())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
