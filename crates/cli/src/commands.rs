//! The subcommands.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use std::str::FromStr;

use ruchedb::{Config, EmbedderSpec, Engine, Kind};

use crate::args::{
    BackupArgs, DeleteArgs, ExportArgs, FeedbackArgs, GetArgs, IndexArgs, PurgeArgs, ReembedArgs,
    SearchArgs, StatsArgs,
};
use crate::input::{self, QueryDefaults, QueryLine};
use crate::output;
use crate::progress::{self, Phase, Unit};

/// Documents upserted per call while indexing (the progress bar's step).
const UPSERT_BATCH: usize = 1_000;

/// How long to wait for an index another process holds (`--wait`).
static WAIT: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();

/// Sets `--wait SECONDS`.
pub fn set_wait(seconds: f64) -> Result<()> {
    if !(0.0..=86_400.0).contains(&seconds) {
        bail!("--wait: expected seconds between 0 and 86400, got {seconds}");
    }
    let _ = WAIT.set(Duration::from_secs_f64(seconds));
    Ok(())
}

/// An engine builder with the configuration and `--wait`.
pub fn builder(config: &Config) -> ruchedb::EngineBuilder {
    Engine::builder()
        .config(config.clone())
        .wait(WAIT.get().copied().unwrap_or_default())
}

/// Opens a local index; a Milvus location gets a clear refusal.
pub fn open(config: &Config, dir: &Path) -> Result<Engine> {
    if crate::milvus::is_milvus(dir) {
        bail!(
            "{}: this command works on a local index directory; a Milvus index supports index, search, delete and stats --tenant",
            dir.display()
        );
    }
    Ok(builder(config).open(dir)?)
}

/// The rules and chunks of `--rules`, `--chunks` and `--records`, every line checked.
fn read_inputs(args: &IndexArgs) -> Result<(Vec<ruchedb::Rule>, Vec<ruchedb::Chunk>)> {
    let mut rules = args
        .rules
        .as_deref()
        .map(input::read_rules)
        .transpose()?
        .unwrap_or_default();
    let mut chunks = args
        .chunks
        .as_deref()
        .map(input::read_chunks)
        .transpose()?
        .unwrap_or_default();
    if let Some(records) = &args.records {
        for doc in input::read_records(records)? {
            match doc {
                ruchedb::Document::Rule(rule) => rules.push(rule),
                ruchedb::Document::Chunk(chunk) => chunks.push(chunk),
            }
        }
    }
    Ok((rules, chunks))
}

pub fn index(config: &Config, args: &IndexArgs) -> Result<ExitCode> {
    if args.rules.is_none() && args.chunks.is_none() && args.records.is_none() {
        bail!("nothing to index: give --rules FILE, --chunks FILE and/or --records FILE");
    }
    // Read and validate everything before touching the index: a bad line fails the
    // whole import and leaves the index as it was.
    let inputs = [&args.rules, &args.chunks, &args.records];
    let total_bytes: u64 = inputs
        .iter()
        .filter_map(|path| path.as_deref())
        .filter_map(|path| std::fs::metadata(path).ok())
        .map(|meta| meta.len())
        .sum();
    let mut reading = Phase::start("read", total_bytes, Unit::Bytes);
    let start_bytes = input::bytes_read();
    let (rules, chunks) = progress::watch(
        &mut reading,
        || read_inputs(args),
        || input::bytes_read() - start_bytes,
    )?;
    reading.finish(&format!(
        "{} rules and {} chunks, {}",
        rules.len(),
        chunks.len(),
        indicatif::HumanBytes(input::bytes_read() - start_bytes)
    ));
    for (kind, keys) in [
        (
            "rule",
            rules
                .iter()
                .map(|r| (&r.tenant_id, &r.id))
                .collect::<Vec<_>>(),
        ),
        (
            "chunk",
            chunks.iter().map(|c| (&c.tenant_id, &c.id)).collect(),
        ),
    ] {
        let mut seen = std::collections::HashSet::new();
        if let Some((tenant, id)) = keys.into_iter().find(|key| !seen.insert(*key)) {
            bail!("{kind} `{id}` (tenant `{tenant}`) is given by two of the input files");
        }
    }
    let explicit = args
        .embedder
        .as_deref()
        .map(str::parse::<EmbedderSpec>)
        .transpose()?;
    if crate::milvus::is_milvus(&args.dir) {
        let (n_rules, n_chunks) = (rules.len(), chunks.len());
        let changes = crate::milvus::index(
            config,
            &args.dir,
            explicit,
            args.collection_per_tenant,
            rules,
            chunks,
        )?;
        println!(
            "indexed {n_rules} rules and {n_chunks} chunks into {} ({changes} changes)",
            args.dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if args.collection_per_tenant {
        bail!("--collection-per-tenant applies to a Milvus index (milvus://HOST:PORT/NAME)");
    }
    let mut created = false;
    let dir_existed = args.dir.exists();
    let result = index_into(config, &args.dir, explicit, rules, chunks, &mut created);
    if result.is_err() && created {
        // Do not leave a half-made new index behind: what this import created goes.
        let _ = Engine::remove(&args.dir);
        if !dir_existed {
            let _ = std::fs::remove_dir(&args.dir);
        }
    }
    let (n_rules, n_chunks, changes) = result?;
    println!(
        "indexed {n_rules} rules and {n_chunks} chunks into {} ({changes} changes)",
        args.dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn index_into(
    config: &Config,
    dir: &Path,
    explicit: Option<EmbedderSpec>,
    rules: Vec<ruchedb::Rule>,
    chunks: Vec<ruchedb::Chunk>,
    created: &mut bool,
) -> Result<(usize, usize, usize)> {
    let builder = builder(config);
    let engine = if dir.join("store").exists() {
        let engine = builder.open(dir)?;
        // `--embedder` names the model of a new index; an existing one keeps its own.
        if let Some(explicit) = &explicit {
            let recorded = engine.stats().embedder;
            let recorded_spec = recorded
                .as_deref()
                .map(EmbedderSpec::from_str)
                .transpose()?;
            if recorded_spec.unwrap_or(EmbedderSpec::None) != explicit.absolute() {
                bail!(
                    "{} was created with embedder `{}`; --embedder applies when an index is created (use `ruche reembed` to change models)",
                    dir.display(),
                    recorded.as_deref().unwrap_or("none")
                );
            }
        }
        engine
    } else {
        let carries_vectors = rules
            .iter()
            .any(|r| r.embedding.is_some() || r.pattern_embeddings.is_some())
            || chunks.iter().any(|c| c.embedding.is_some());
        let spec = explicit.unwrap_or(if carries_vectors {
            EmbedderSpec::None
        } else {
            EmbedderSpec::Default
        });
        let engine = builder.embedder_spec(spec).create(dir)?;
        *created = true;
        engine
    };
    let (n_rules, n_chunks) = (rules.len(), chunks.len());
    let name = if engine.embedder().is_some() {
        "embed"
    } else {
        "write"
    };
    let mut writing = Phase::start(name, (n_rules + n_chunks) as u64, Unit::Items("documents"));
    for (batch_idx, batch) in rules.chunks(UPSERT_BATCH).enumerate() {
        let first = batch_idx * UPSERT_BATCH + 1;
        engine
            .upsert_rules(batch.to_vec())
            .with_context(|| format!("rules {first}..{}", first + batch.len() - 1))?;
        writing.inc(batch.len() as u64);
    }
    for (batch_idx, batch) in chunks.chunks(UPSERT_BATCH).enumerate() {
        let first = batch_idx * UPSERT_BATCH + 1;
        engine
            .upsert_chunks(batch.to_vec())
            .with_context(|| format!("chunks {first}..{}", first + batch.len() - 1))?;
        writing.inc(batch.len() as u64);
    }
    writing.finish(&format!("{n_rules} rules and {n_chunks} chunks"));
    let committing = Phase::start("commit", 0, Unit::Items("changes"));
    let changes = engine.commit()?;
    committing.finish(&format!("{changes} changes, searchable now"));
    // The graph is built in the background; searches scan what it does not cover yet.
    // An interrupted build resumes from its last checkpoint at the next open.
    if engine.stats().dimensions.is_some() {
        let backlog = engine.graph_backlog() as u64;
        let mut graph = Phase::start("graph", backlog, Unit::Items("vectors"));
        progress::watch(
            &mut graph,
            || engine.sync_graph(),
            || backlog.saturating_sub(engine.graph_backlog() as u64),
        )?;
        graph.finish(&format!(
            "every vector in the HNSW graph ({backlog} inserted after the commit)"
        ));
    }
    engine.close()?;
    Ok((n_rules, n_chunks, changes))
}

fn defaults(config: &Config, args: &SearchArgs) -> Result<QueryDefaults> {
    Ok(QueryDefaults {
        kind: Some(args.kind.into()),
        tenant: Some(args.tenant.clone()),
        agent: args.agent.clone(),
        scenario: args.scenario.clone(),
        step: args.step.clone(),
        context: args.context.clone(),
        tags: args.tags.clone(),
        filters: args
            .filters
            .iter()
            .map(|pair| input::key_value(pair))
            .collect::<Result<_>>()?,
        top_k: args.top_k,
        min_relevance: args.min_relevance,
        now: args.now.as_deref().map(input::timestamp).transpose()?,
        selection: args
            .strategy
            .as_deref()
            .map(|name| input::selection(name, &args.select_params))
            .transpose()?,
        max_k: args.max_k,
        min_k: args.min_k,
        fusion: input::fusion(&args.fusion, fusion_base(config, args.kind.into()))?,
        adaptive: input::adaptive(&args.fusion),
    })
}

pub fn search(config: &Config, args: &SearchArgs) -> Result<ExitCode> {
    let defaults = defaults(config, args)?;
    if let Some(batch) = &args.batch {
        // Validate every query line before running any.
        let lines: Vec<QueryLine> = input::read_jsonl(batch)?;
        let requests = lines
            .iter()
            .enumerate()
            .map(|(idx, line)| {
                line.to_request(&defaults)
                    .with_context(|| format!("{}: line {}", batch.display(), idx + 1))
            })
            .collect::<Result<Vec<_>>>()?;
        let engine = crate::milvus::Searcher::open(config, &args.dir)?;
        let mut out = BufWriter::new(std::io::stdout().lock());
        for (line, request) in lines.iter().zip(&requests) {
            let response = engine.search(request)?;
            output::write_line(
                &mut out,
                &output::response_json(Some(&line.id), &response, args.explain),
            )?;
        }
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let line = QueryLine {
        id: serde_json::Value::Null,
        text: args.text.clone().unwrap_or_default(),
        embedding: None,
        kind: None,
        tenant_id: None,
        agent_id: None,
        scenario_id: None,
        step_id: None,
        context_id: None,
        tags: Vec::new(),
        filters: Default::default(),
        top_k: None,
        min_relevance: None,
        now: None,
        note: None,
    };
    let request = line.to_request(&defaults)?;
    let engine = crate::milvus::Searcher::open(config, &args.dir)?;
    let response = engine.search(&request)?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    if args.json {
        output::write_line(
            &mut out,
            &output::response_json(None, &response, args.explain),
        )?;
    } else {
        output::write_table(&mut out, &response, args.explain)?;
    }
    out.flush()?;
    Ok(if response.hits.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

pub fn get(config: &Config, args: &GetArgs) -> Result<ExitCode> {
    let engine = open(config, &args.dir)?;
    let kind: Kind = args.kind.into();
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut missing = Vec::new();
    for id in &args.ids {
        match engine.get(kind, &args.tenant, id)? {
            Some(doc) => output::write_line(&mut out, &serde_json::to_value(&doc)?)?,
            None => missing.push(id.as_str()),
        }
    }
    out.flush()?;
    if !missing.is_empty() {
        bail!(
            "no {kind} with id {} in tenant `{}`",
            missing.join(", "),
            args.tenant
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn delete(config: &Config, args: &DeleteArgs) -> Result<ExitCode> {
    if crate::milvus::is_milvus(&args.dir) {
        if args.context.is_some() {
            bail!("--context is not supported on a Milvus index: delete by ids or --all");
        }
        let kind = args.kind.map(Kind::from);
        let deleted =
            crate::milvus::delete(config, &args.dir, kind, &args.tenant, &args.ids, args.all)?;
        println!("deleted {deleted} documents");
        return Ok(ExitCode::SUCCESS);
    }
    let engine = open(config, &args.dir)?;
    if args.all {
        engine.delete_tenant(&args.tenant);
    }
    if let Some(context) = &args.context {
        if args.kind.map(Kind::from) != Some(Kind::Chunk) {
            bail!("--context deletes chunks: use --kind chunks");
        }
        engine.delete_context(&args.tenant, context);
    }
    if let Some(kind) = args.kind {
        for id in &args.ids {
            engine.delete(kind.into(), &args.tenant, id);
        }
    }
    let deleted = engine.commit()?;
    engine.close()?;
    println!("deleted {deleted} documents");
    Ok(ExitCode::SUCCESS)
}

pub fn purge(config: &Config, args: &PurgeArgs) -> Result<ExitCode> {
    let now = match &args.now {
        Some(text) => input::timestamp(text)?,
        None => ruchedb::Timestamp::now(),
    };
    let engine = open(config, &args.dir)?;
    engine.purge_expired(now);
    let purged = engine.commit()?;
    engine.close()?;
    println!("purged {purged} expired chunks");
    Ok(ExitCode::SUCCESS)
}

pub fn check(config: &Config, args: &StatsArgs) -> Result<ExitCode> {
    let report = Engine::check(&args.dir, config)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        output::write_line(&mut out, &serde_json::to_value(&report)?)?;
    } else {
        for line in &report.intact {
            writeln!(out, "ok       {line}")?;
        }
        for damage in &report.damaged {
            let fix = if damage.rebuildable {
                "`ruche repair` rebuilds it"
            } else {
                "`ruche repair` salvages what it can; restore a backup to lose nothing"
            };
            writeln!(out, "DAMAGED  {}: {} ({fix})", damage.part, damage.problem)?;
        }
        if report.is_intact() {
            writeln!(out, "{}: intact", args.dir.display())?;
        }
    }
    Ok(if report.is_intact() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

pub fn repair(config: &Config, args: &StatsArgs) -> Result<ExitCode> {
    let report = Engine::repair(&args.dir, config.clone())?;
    let mut out = std::io::stdout().lock();
    if args.json {
        output::write_line(&mut out, &serde_json::to_value(&report)?)?;
    } else {
        for line in &report.repaired {
            writeln!(out, "repaired {line}")?;
        }
        if let Some(copy) = &report.damaged_copy {
            writeln!(out, "kept     the damaged store as {}", copy.display())?;
        }
        if let Some(lost) = &report.lost {
            writeln!(out, "LOST     {lost}")?;
        }
    }
    Ok(if report.lost.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

pub fn compact(config: &Config, args: &StatsArgs) -> Result<ExitCode> {
    let (before, after) = Engine::compact(&args.dir, config.clone())?;
    println!(
        "compacted {}: {before} bytes before, {after} after",
        args.dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

pub fn backup(config: &Config, args: &BackupArgs) -> Result<ExitCode> {
    let engine = open(config, &args.dir)?;
    engine.backup(&args.dest)?;
    engine.close()?;
    println!("copied {} to {}", args.dir.display(), args.dest.display());
    Ok(ExitCode::SUCCESS)
}

pub fn stats(config: &Config, args: &StatsArgs) -> Result<ExitCode> {
    let milvus = crate::milvus::is_milvus(&args.dir);
    if milvus && args.tenant.is_none() {
        bail!("stats of a Milvus index are per tenant: add --tenant T");
    }
    let mut out = std::io::stdout().lock();
    if let Some(tenant) = &args.tenant {
        let (rules, chunks) = if milvus {
            let (rules, chunks) = crate::milvus::counts(config, &args.dir, tenant)?;
            (rules as usize, chunks as usize)
        } else {
            open(config, &args.dir)?.tenant_counts(tenant)
        };
        if args.json {
            let line = serde_json::json!({"tenant": tenant, "rules": rules, "chunks": chunks});
            output::write_line(&mut out, &line)?;
        } else {
            writeln!(out, "tenant:     {tenant}")?;
            writeln!(out, "rules:      {rules}")?;
            writeln!(out, "chunks:     {chunks}")?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let stats = open(config, &args.dir)?.stats();
    if args.json {
        output::write_line(&mut out, &serde_json::to_value(&stats)?)?;
    } else {
        writeln!(out, "index:      {}", args.dir.display())?;
        writeln!(out, "rules:      {}", stats.rules)?;
        writeln!(out, "chunks:     {}", stats.chunks)?;
        writeln!(out, "tenants:    {}", stats.tenants)?;
        writeln!(out, "entities:   {}", stats.entities)?;
        match (&stats.dimensions, &stats.model_id) {
            (Some(dim), Some(model)) => writeln!(out, "vectors:    {dim} dimensions ({model})")?,
            _ => writeln!(out, "vectors:    none")?,
        }
        writeln!(out, "last seq:   {}", stats.last_seq)?;
        writeln!(
            out,
            "text docs:  {} in {} segments",
            stats.text_docs, stats.text_segments
        )?;
        for (name, graph) in [
            ("rule graph", stats.rule_graph),
            ("chunk graph", stats.chunk_graph),
        ] {
            writeln!(
                out,
                "{name}: {} points, {} live vectors, covers seq {}, checkpoint at seq {}, {} docs in tail",
                graph.points,
                graph.live_vectors,
                graph.covered_seq,
                graph.checkpoint_seq,
                graph.tail_docs
            )?;
        }
        writeln!(out, "store:      {} bytes", stats.store_bytes)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn export(config: &Config, args: &ExportArgs) -> Result<ExitCode> {
    let engine = open(config, &args.dir)?;
    let kinds = match args.kind {
        Some(kind) => vec![kind.into()],
        None => vec![Kind::Rule, Kind::Chunk],
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    for kind in kinds {
        for doc in engine.export(kind, None)? {
            output::write_line(&mut out, &serde_json::to_value(doc)?)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// One line of `ruche select` input.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SelectLine {
    strategy: String,
    #[serde(default)]
    params: serde_json::Map<String, serde_json::Value>,
    max_k: usize,
    #[serde(default = "one")]
    min_k: usize,
    scores: Vec<f64>,
}

fn one() -> usize {
    1
}

/// Replays score lists under a strategy: one JSON line in, one JSON line out.
pub fn select() -> Result<ExitCode> {
    use std::io::BufRead;
    let stdin = std::io::stdin().lock();
    let mut out = BufWriter::new(std::io::stdout().lock());
    for (idx, line) in stdin.lines().enumerate() {
        let line_no = idx + 1;
        let line = line.with_context(|| format!("line {line_no}: cannot read"))?;
        if line.trim().is_empty() {
            continue;
        }
        let result = (|| -> Result<serde_json::Value> {
            let input: SelectLine = serde_json::from_str(&line)?;
            let config = ruchedb::SelectionConfig::from_params(&input.strategy, &input.params)?;
            let strategy = config.build()?;
            let result = strategy.select_scores(&input.scores, input.max_k, input.min_k)?;
            Ok(serde_json::json!({
                "selected": result.selected,
                "cutoff_score": result.cutoff_score,
                "method": result.method,
                "metadata": result.metadata,
            }))
        })()
        .with_context(|| format!("line {line_no}"))?;
        output::write_line(&mut out, &result)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub fn reembed(config: &Config, args: &ReembedArgs) -> Result<ExitCode> {
    let spec: EmbedderSpec = args.embedder.parse()?;
    let phase = Phase::start("reembed", 0, Unit::Items("documents"));
    let n_docs = Engine::reembed(&args.dir, &spec, config.clone())?;
    phase.finish(&format!("{n_docs} documents"));
    println!(
        "re-embedded {n_docs} documents of {} with `{spec}`",
        args.dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The configured fusion of a kind, which `--fusion-param` alone modifies.
pub fn fusion_base(config: &Config, kind: Kind) -> ruchedb::FusionSpec {
    match kind {
        Kind::Rule => config.fusion.rules,
        Kind::Chunk => config.fusion.chunks,
    }
}

pub fn feedback(config: &Config, args: &FeedbackArgs) -> Result<ExitCode> {
    let engine = open(config, &args.dir)?;
    let window = if args.reset {
        engine.reset_feedback()?;
        engine.feedback_window(ruchedb::DEFAULT_TENANT, Kind::Rule)
    } else {
        if args.useful == args.not_useful {
            bail!("say --useful or --not-useful");
        }
        let query_id = args.query_id.as_deref().unwrap_or_default();
        engine.feedback(query_id, args.useful)?
    };
    let factors = window.factors();
    let mut out = std::io::stdout().lock();
    for (name, leg, factor) in [
        ("text", ruchedb::Leg::Text, factors.text),
        ("vector", ruchedb::Leg::Vector, factors.vector),
        ("graph", ruchedb::Leg::Graph, factors.graph),
    ] {
        let stats = window.stats(leg);
        writeln!(
            out,
            "{name:<6} {} of {} useful, weight factor {factor:.3}",
            stats.useful, stats.total,
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
