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
fn read_qrels(path: &std::path::Path) -> Result<HashMap<String, Qrels>> {
    let reader = BufReader::new(input::open(path)?);
    let mut qrels: HashMap<String, Qrels> = HashMap::new();
    for (idx, line) in reader.lines().enumerate() {
        let line = line?;
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

pub fn run(config: &Config, args: &EvalArgs) -> Result<ExitCode> {
    let queries: Vec<QueryLine> = input::read_jsonl(&args.queries)?;
    let qrels = read_qrels(&args.qrels)?;
    let defaults = QueryDefaults {
        kind: Some(args.kind.into()),
        tenant: Some(args.tenant.clone()),
        fusion: input::fusion(
            &args.fusion,
            crate::commands::fusion_base(config, args.kind.into()),
        )?,
        adaptive: input::adaptive(&args.fusion),
        ..QueryDefaults::default()
    };
    let mut config = config.clone();
    let retrieval = &mut config.pipeline.retrieval;
    retrieval.max_candidates = retrieval.max_candidates.max(RANKED_DEPTH);
    let engine = crate::commands::open_to_read(&config, &args.dir)?;

    let (mut ndcg, mut r10, mut r100, mut mrr) = (0.0, 0.0, 0.0, 0.0);
    // The strategies the searches used (a query line's `kind` picks its kind's strategy).
    let mut strategies = std::collections::BTreeSet::new();
    let (mut size, mut precision, mut recall, mut f1) = (0.0, 0.0, 0.0, 0.0);
    let mut latencies_ms = Vec::new();
    let mut judged = 0usize;
    for (idx, line) in queries.iter().enumerate() {
        let id = id_string(&line.id);
        let Some(judgement) = qrels.get(&id) else {
            continue;
        };
        judged += 1;
        let request = line
            .to_request(&defaults)
            .with_context(|| format!("{}: line {}", args.queries.display(), idx + 1))?;
        let started = Instant::now();
        let ranked = engine.search(&request.clone().top_k(RANKED_DEPTH))?;
        latencies_ms.push(started.elapsed().as_secs_f64() * 1e3);
        let ranked: Vec<&str> = ranked.hits.iter().map(|h| h.id.as_str()).collect();
        ndcg += eval::ndcg_at(&ranked, judgement, 10);
        r10 += eval::recall_at(&ranked, judgement, 10);
        r100 += eval::recall_at(&ranked, judgement, 100);
        mrr += eval::reciprocal_rank_at(&ranked, judgement, 10);
        // The configured k-selection, as a search without top_k returns it.
        let selected = engine.search(&request)?;
        strategies.insert(selected.selection.strategy.clone());
        let selected: Vec<&str> = selected.hits.iter().map(|h| h.id.as_str()).collect();
        let (p, r, f) = eval::set_precision_recall_f1(&selected, judgement);
        size += selected.len() as f64;
        precision += p;
        recall += r;
        f1 += f;
    }
    if judged == 0 {
        bail!(
            "no query of {} has judgements in {}",
            args.queries.display(),
            args.qrels.display()
        );
    }
    let n = judged as f64;
    let strategy = strategies.into_iter().collect::<Vec<_>>().join("+");
    let report = json!({
        "queries": judged,
        "ndcg@10": ndcg / n,
        "recall@10": r10 / n,
        "recall@100": r100 / n,
        "mrr@10": mrr / n,
        "selection": {
            "strategy": strategy,
            "mean_size": size / n,
            "precision": precision / n,
            "recall": recall / n,
            "f1": f1 / n,
        },
        "latency_ms": {
            "p50": eval::percentile(&latencies_ms, 0.5),
            "p99": eval::percentile(&latencies_ms, 0.99),
        },
    });
    let mut out = std::io::stdout().lock();
    if args.json {
        crate::output::write_line(&mut out, &report)?;
    } else {
        writeln!(out, "queries      {judged}")?;
        writeln!(out, "nDCG@10      {:.4}", ndcg / n)?;
        writeln!(out, "recall@10    {:.4}", r10 / n)?;
        writeln!(out, "recall@100   {:.4}", r100 / n)?;
        writeln!(out, "MRR@10       {:.4}", mrr / n)?;
        writeln!(
            out,
            "selection    {strategy}: mean size {:.2}, precision {:.4}, recall {:.4}, F1 {:.4}",
            size / n,
            precision / n,
            recall / n,
            f1 / n
        )?;
        writeln!(
            out,
            "latency      p50 {:.2} ms, p99 {:.2} ms",
            eval::percentile(&latencies_ms, 0.5),
            eval::percentile(&latencies_ms, 0.99)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
