//! The subcommands.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use std::str::FromStr;

use ruchedb::{Config, Document, EmbedderSpec, EmbedderSpecs, Engine, Kind};

use crate::args::{
    BackupArgs, DeleteArgs, ExportArgs, FeedbackArgs, GetArgs, IndexArgs, MaintainArgs, PurgeArgs,
    ReembedArgs, SearchArgs, StatsArgs, TurnArgs,
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
    refuse_milvus(dir)?;
    Ok(builder(config).open(dir)?)
}

fn refuse_milvus(dir: &Path) -> Result<()> {
    if crate::milvus::is_milvus(dir) {
        bail!(
            "{}: this command works on a local index directory; a Milvus index supports index, search, delete and stats --tenant",
            dir.display()
        );
    }
    Ok(())
}

/// Opens a local index to read only: no lock, nothing written, beside a writer in
/// another process (see [`open_engine_to_read`]).
pub fn open_to_read(config: &Config, dir: &Path) -> Result<Engine> {
    refuse_milvus(dir)?;
    Ok(open_engine_to_read(&builder(config), dir)?)
}

/// Opens an index to read only. An index nothing was published for yet (written by an
/// earlier version) is opened for writing instead, once: that publishes it. (Damaged
/// published files are an error naming the file: `ruche repair`, or any writer, publishes
/// them again; a read never opens an index for writing beside its writer.)
pub fn open_engine_to_read(
    builder: &ruchedb::EngineBuilder,
    dir: &Path,
) -> ruchedb::Result<Engine> {
    match builder.clone().open_read_only(dir) {
        Ok(engine) => Ok(engine),
        Err(err) if matches!(err.kind(), ruchedb::ErrorKind::NotPublished { .. }) => {
            tracing::info!(error = %err, "opening for writing to publish the index for readers");
            builder.clone().open(dir)
        }
        Err(err) => Err(err),
    }
}

/// The documents of `--rules`, `--chunks`, `--scenarios`, `--tools` and `--records`,
/// every line checked, grouped by kind (in the order of [`Kind::ALL`]).
fn read_inputs(args: &IndexArgs) -> Result<(Vec<Document>, Option<Dimensions>)> {
    let mut docs = Vec::new();
    let mut dimensions: Option<Dimensions> = None;
    let mut add = |path: &Path, read: Vec<Document>| -> Result<()> {
        // Every file's vectors have one dimension (`input` checks each file's).
        let first = read
            .iter()
            .find_map(|doc| input::vector_fields(doc).into_iter().next().map(|(_, n)| n));
        if let Some(n) = first {
            match &dimensions {
                Some(seen) if seen.0 != n => bail!(
                    "{}: vectors of {n} dimensions, but those of {} have {}",
                    path.display(),
                    seen.1.display(),
                    seen.0
                ),
                Some(_) => {}
                None => dimensions = Some(Dimensions(n, path.to_path_buf())),
            }
        }
        docs.extend(read);
        Ok(())
    };
    for (path, kind) in [
        (&args.rules, Kind::Rule),
        (&args.chunks, Kind::Chunk),
        (&args.scenarios, Kind::Scenario),
        (&args.tools, Kind::Tool),
    ] {
        if let Some(path) = path {
            add(path, input::read_documents(path, kind)?)?;
        }
    }
    if let Some(records) = &args.records {
        add(records, input::read_records(records)?)?;
    }
    docs.sort_by_key(|doc| doc.kind());
    Ok((docs, dimensions))
}

/// The dimension of the vectors an import brings, and the first file that has them.
struct Dimensions(usize, std::path::PathBuf);

/// How many documents of each kind, in words: `3 rules and 2 chunks` (the kinds an index
/// always had), then scenarios and tools when there are any.
fn counted(docs: &[Document]) -> String {
    let count = |kind: Kind| docs.iter().filter(|d| d.kind() == kind).count();
    let mut parts: Vec<String> = Kind::ALL
        .into_iter()
        .filter(|&kind| matches!(kind, Kind::Rule | Kind::Chunk) || count(kind) > 0)
        .map(|kind| format!("{} {}", count(kind), kind.plural()))
        .collect();
    let last = parts.pop().unwrap_or_default();
    if parts.is_empty() {
        last
    } else {
        format!("{} and {last}", parts.join(", "))
    }
}

pub fn index(config: &Config, args: &IndexArgs) -> Result<ExitCode> {
    let inputs = [
        &args.rules,
        &args.chunks,
        &args.scenarios,
        &args.tools,
        &args.records,
    ];
    if inputs.iter().all(|path| path.is_none()) {
        bail!(
            "nothing to index: give --rules FILE, --chunks FILE, --scenarios FILE, --tools FILE and/or --records FILE"
        );
    }
    // Standard input can be read once.
    let stdin_for: Vec<&str> = [
        ("--rules", &args.rules),
        ("--chunks", &args.chunks),
        ("--scenarios", &args.scenarios),
        ("--tools", &args.tools),
        ("--records", &args.records),
    ]
    .into_iter()
    .filter(|(_, path)| path.as_deref() == Some(Path::new("-")))
    .map(|(flag, _)| flag)
    .collect();
    if stdin_for.len() > 1 {
        bail!(
            "standard input (`-`) is given to {}: it can be read once; give the others as files",
            stdin_for.join(" and ")
        );
    }
    // Read and validate everything before touching the index: a bad line fails the
    // whole import and leaves the index as it was.
    let total_bytes: u64 = inputs
        .iter()
        .filter_map(|path| path.as_deref())
        .filter_map(|path| std::fs::metadata(path).ok())
        .map(|meta| meta.len())
        .sum();
    let mut reading = Phase::start("read", total_bytes, Unit::Bytes);
    let start_bytes = input::bytes_read();
    let (docs, dimensions) = progress::watch(
        &mut reading,
        || read_inputs(args),
        || input::bytes_read() - start_bytes,
    )?;
    reading.finish(&format!(
        "{}, {}",
        counted(&docs),
        indicatif::HumanBytes(input::bytes_read() - start_bytes)
    ));
    let mut seen = std::collections::HashSet::new();
    if let Some(doc) = docs
        .iter()
        .find(|doc| !seen.insert((doc.kind(), doc.tenant_id(), doc.id())))
    {
        bail!(
            "{} `{}` (tenant `{}`) is given by two of the input files",
            doc.kind(),
            doc.id(),
            doc.tenant_id()
        );
    }
    let explicit = args
        .embedder
        .as_deref()
        .map(str::parse::<EmbedderSpecs>)
        .transpose()
        .context("--embedder")?;
    let summary = counted(&docs);
    if crate::milvus::is_milvus(&args.dir) {
        let changes = crate::milvus::index(
            config,
            &args.dir,
            explicit,
            args.collection_per_tenant,
            docs,
        )?;
        println!(
            "indexed {summary} into {} ({changes} changes)",
            args.dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if args.collection_per_tenant {
        bail!("--collection-per-tenant applies to a Milvus index (milvus://HOST:PORT/NAME)");
    }
    let mut created = false;
    let dir_existed = args.dir.exists();
    let result = index_into(config, &args.dir, explicit, docs, dimensions, &mut created);
    // A commit that happened stays, even when publishing it, or what came after, failed.
    let committed = result.as_ref().is_err_and(crate::committed);
    if result.is_err() && created && !committed {
        // Do not leave a half-made new index behind: what this import created goes.
        let _ = Engine::remove(&args.dir);
        if !dir_existed {
            let _ = std::fs::remove_dir(&args.dir);
        }
    }
    let changes = result?;
    println!(
        "indexed {summary} into {} ({changes} changes)",
        args.dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn index_into(
    config: &Config,
    dir: &Path,
    explicit: Option<EmbedderSpecs>,
    docs: Vec<Document>,
    dimensions: Option<Dimensions>,
    created: &mut bool,
) -> Result<usize> {
    let builder = builder(config);
    let engine = if dir.join("store").exists() {
        let engine = builder.open(dir)?;
        // `--embedder` names the models of a new index; an existing one keeps its own.
        let stats = engine.stats();
        if let Some(explicit) = &explicit {
            let recorded = stats.embedder.as_deref();
            let recorded_specs = recorded
                .map(EmbedderSpecs::from_str)
                .transpose()?
                .unwrap_or_else(|| EmbedderSpecs::uniform(EmbedderSpec::None));
            if recorded_specs != explicit.absolute() {
                bail!(
                    "{} was created with embedder `{}`; --embedder applies when an index is created (use `ruche reembed` to change models)",
                    dir.display(),
                    recorded.unwrap_or("none")
                );
            }
        }
        if let Some(Dimensions(n, path)) = &dimensions {
            for kind in Kind::ALL {
                let carried = docs
                    .iter()
                    .any(|doc| doc.kind() == kind && doc.has_embeddings());
                if let (true, Some(expected)) = (carried, stats.spaces.get(kind).dimensions)
                    && *n != expected
                {
                    bail!(
                        "{}: vectors of {n} dimensions, but {} holds {} of {expected}",
                        path.display(),
                        dir.display(),
                        kind.plural()
                    );
                }
            }
        }
        engine
    } else {
        let carries_vectors = docs.iter().any(Document::has_embeddings);
        // Without --embedder: the configuration's `[embed]` and the defaults, unless the
        // records bring their own vectors.
        let builder = match explicit {
            Some(specs) => builder.embedder_specs(specs),
            None if carries_vectors => builder.embedder_spec(EmbedderSpec::None),
            None => builder,
        };
        let engine = builder.create(dir)?;
        *created = true;
        engine
    };
    let name = if engine.embedders().is_empty() {
        "write"
    } else {
        "embed"
    };
    let summary = counted(&docs);
    let mut writing = Phase::start(name, docs.len() as u64, Unit::Items("documents"));
    // Documents are grouped by kind (`read_inputs`): each batch is numbered within its
    // kind, and moved into the engine.
    let mut docs = docs.into_iter().peekable();
    let mut numbered: Option<(Kind, usize)> = None;
    while let Some(kind) = docs.peek().map(Document::kind) {
        let mut batch = Vec::with_capacity(UPSERT_BATCH);
        while batch.len() < UPSERT_BATCH
            && let Some(doc) = docs.next_if(|doc| doc.kind() == kind)
        {
            batch.push(doc);
        }
        let first = match numbered {
            Some((of, next)) if of == kind => next,
            _ => 1,
        };
        numbered = Some((kind, first + batch.len()));
        let len = batch.len();
        engine
            .upsert(batch)
            .with_context(|| format!("{} {first}..{}", kind.plural(), first + len - 1))?;
        writing.inc(len as u64);
    }
    writing.finish(&summary);
    let committing = Phase::start("commit", 0, Unit::Items("changes"));
    let changes = engine.commit()?;
    committing.finish(&format!("{changes} changes, searchable now"));
    // From here on the import happened, whatever fails.
    let after = || crate::Committed { changes };
    // The graph is built in the background; searches scan what it does not cover yet.
    // An interrupted build resumes from its last checkpoint at the next open.
    if Kind::ALL
        .iter()
        .any(|&kind| engine.stats().spaces.get(kind).dimensions.is_some())
    {
        let backlog = engine.graph_backlog() as u64;
        let mut graph = Phase::start("graph", backlog, Unit::Items("vectors"));
        progress::watch(
            &mut graph,
            || engine.sync_graph(),
            || backlog.saturating_sub(engine.graph_backlog() as u64),
        )
        .with_context(after)?;
        graph.finish(&format!(
            "every vector in the HNSW graph ({backlog} inserted after the commit)"
        ));
    }
    engine.close().with_context(after)?;
    Ok(changes)
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
        max_tokens: args.max_tokens,
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
        let lines: Vec<(usize, QueryLine)> = input::read_numbered(batch)?;
        let requests = lines
            .iter()
            .map(|(line_no, line)| {
                line.to_request(&defaults)
                    .with_context(|| format!("{}: line {line_no}", batch.display()))
            })
            .collect::<Result<Vec<_>>>()?;
        let engine = crate::milvus::Searcher::open(config, &args.dir)?;
        let mut out = BufWriter::new(std::io::stdout().lock());
        for ((line_no, line), request) in lines.iter().zip(&requests) {
            // The lines before are written; the error names the line that failed.
            let response = engine
                .search(request)
                .with_context(|| format!("{}: line {line_no} (id {})", batch.display(), line.id))?;
            output::write_line(
                &mut out,
                &output::response_json(Some(&line.id), &response, args.explain),
            )?;
        }
        out.flush()?;
        engine.finish();
        return Ok(ExitCode::SUCCESS);
    }
    // The message given on the command line: an empty one is a mistake (an unset shell
    // variable), not a question.
    if args
        .text
        .as_deref()
        .is_some_and(|text| text.trim().is_empty())
    {
        bail!("the message is empty: give the text to search for (or --browse with --kind chunks)");
    }
    let line = QueryLine {
        id: serde_json::Value::Null,
        text: args.text.clone(),
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
        max_tokens: None,
        now: None,
        browse: args.browse,
        note: None,
    };
    let request = line.to_request(&defaults)?;
    let engine = crate::milvus::Searcher::open(config, &args.dir)?;
    let response = engine.search(&request)?;
    let policy = match &args.policy {
        Some(name) => Some(apply_policy(
            name,
            &args.policy_params,
            args.seed,
            &response,
        )?),
        None => None,
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    if args.json {
        let mut line = output::response_json(None, &response, args.explain);
        if let (Some(choice), Some(object)) = (&policy, line.as_object_mut()) {
            object.insert("policy".into(), choice.to_json());
        }
        output::write_line(&mut out, &line)?;
    } else {
        output::write_table(&mut out, &response, args.explain)?;
        if let Some(choice) = &policy {
            choice.write(&mut out)?;
        }
    }
    out.flush()?;
    engine.finish();
    Ok(if response.hits.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

pub fn turn(config: &Config, args: &TurnArgs) -> Result<ExitCode> {
    let defaults = input::TurnLine {
        id: serde_json::Value::Null,
        text: None,
        embedding: None,
        kind: None,
        tenant_id: Some(args.tenant.clone()),
        agent_id: args.agent.clone(),
        context_id: args.context.clone(),
        scenario_id: args.scenario.clone(),
        step_id: args.step.clone(),
        budget_tokens: args.budget_tokens,
        now: args.now.as_deref().map(input::timestamp).transpose()?,
        note: None,
    };
    if let Some(batch) = &args.batch {
        // Validate every line before running any.
        let lines: Vec<(usize, input::TurnLine)> = input::read_numbered(batch)?;
        let requests = lines
            .iter()
            .map(|(line_no, line)| {
                line.to_request(&defaults)
                    .with_context(|| format!("{}: line {line_no}", batch.display()))
            })
            .collect::<Result<Vec<_>>>()?;
        let engine = crate::milvus::Searcher::open(config, &args.dir)?;
        let mut out = BufWriter::new(std::io::stdout().lock());
        for ((line_no, line), request) in lines.iter().zip(&requests) {
            let turn = engine
                .turn(request)
                .with_context(|| format!("{}: line {line_no} (id {})", batch.display(), line.id))?;
            output::write_line(
                &mut out,
                &output::turn_json(Some(&line.id), &turn, args.explain, args.render),
            )?;
        }
        out.flush()?;
        engine.finish();
        return Ok(ExitCode::SUCCESS);
    }
    if args
        .text
        .as_deref()
        .is_some_and(|text| text.trim().is_empty())
    {
        bail!("the message is empty: give the user's message");
    }
    let line = input::TurnLine {
        text: args.text.clone(),
        ..defaults
    };
    let request = line.to_request(&input::TurnLine {
        id: serde_json::Value::Null,
        text: None,
        embedding: None,
        kind: None,
        tenant_id: None,
        agent_id: None,
        context_id: None,
        scenario_id: None,
        step_id: None,
        budget_tokens: None,
        now: None,
        note: None,
    })?;
    let engine = crate::milvus::Searcher::open(config, &args.dir)?;
    let turn = engine.turn(&request)?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    if args.json {
        output::write_line(
            &mut out,
            &output::turn_json(None, &turn, args.explain, args.render),
        )?;
    } else if args.render {
        out.write_all(turn.render().as_bytes())?;
    } else {
        output::write_turn(&mut out, &turn, args.explain)?;
    }
    out.flush()?;
    engine.finish();
    Ok(if turn.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What `--policy` chose among the hits of a search.
pub(crate) struct PolicyChoice {
    name: String,
    /// The candidates in the policy's order, with its scores.
    ranking: Vec<(ruchedb::policy::Candidate, f64)>,
    /// The one selected (`None` when there was no hit).
    chosen: Option<ruchedb::policy::Candidate>,
}

impl PolicyChoice {
    fn to_json(&self) -> serde_json::Value {
        let summary = |c: &ruchedb::policy::Candidate| serde_json::json!({"id": c.id(), "action": c.action_type()});
        serde_json::json!({
            "name": self.name,
            "chosen": self.chosen.as_ref().map(summary),
            "ranking": self.ranking.iter().map(|(c, score)| {
                let mut entry = summary(c);
                entry["score"] = (*score).into();
                entry
            }).collect::<Vec<_>>(),
        })
    }

    pub(crate) fn write(&self, out: &mut impl Write) -> std::io::Result<()> {
        match &self.chosen {
            Some(chosen) => writeln!(
                out,
                "policy {}: chose {} ({})",
                self.name,
                chosen.id().unwrap_or_default(),
                chosen.action_type()
            )?,
            None => writeln!(out, "policy {}: nothing to choose from", self.name)?,
        }
        for (rank, (candidate, score)) in self.ranking.iter().enumerate() {
            writeln!(
                out,
                "  {:>2}. {:<28} {score:.3}  {}",
                rank + 1,
                candidate.id().unwrap_or_default(),
                candidate.action_type()
            )?;
        }
        Ok(())
    }
}

/// Lets the policy `name` (with `--policy-param` values, JSON when they parse as JSON)
/// choose among the hits of `response`, with a random generator seeded by `seed`.
pub(crate) fn apply_policy(
    name: &str,
    params: &[String],
    seed: u64,
    response: &ruchedb::SearchResponse,
) -> Result<PolicyChoice> {
    use rand::SeedableRng;
    let mut config = serde_json::Map::new();
    for pair in params {
        let (key, value) = input::key_value(pair)?;
        let value = serde_json::from_str(&value).unwrap_or(serde_json::Value::String(value));
        config.insert(key, value);
    }
    let mut policy = ruchedb::policy::PolicyRegistry::new()
        .get_action(name, &config)
        .context("--policy")?;
    let candidates: Vec<ruchedb::policy::Candidate> = response
        .hits
        .iter()
        .map(ruchedb::policy::Candidate::from_hit)
        .collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut ctx = ruchedb::policy::PolicyContext::new(&mut rng);
    let (ranking, chosen) = if candidates.is_empty() {
        (Vec::new(), None)
    } else {
        let ranking = policy
            .rank(&candidates, &ctx)?
            .into_iter()
            .map(|(c, score)| (c.clone(), score))
            .collect();
        let chosen = policy.select(&candidates, &mut ctx)?.clone();
        (ranking, Some(chosen))
    };
    Ok(PolicyChoice {
        name: name.to_string(),
        ranking,
        chosen,
    })
}

pub fn get(config: &Config, args: &GetArgs) -> Result<ExitCode> {
    let engine = open_to_read(config, &args.dir)?;
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

pub fn check(config: &Config, args: &MaintainArgs) -> Result<ExitCode> {
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

pub fn repair(config: &Config, args: &MaintainArgs) -> Result<ExitCode> {
    let report = Engine::repair(&args.dir, config)?;
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

pub fn compact(config: &Config, args: &MaintainArgs) -> Result<ExitCode> {
    let report = Engine::compact(&args.dir, config)?;
    println!(
        "compacted {}: {} bytes before, {} after",
        args.dir.display(),
        report.bytes_before,
        report.bytes_after
    );
    Ok(ExitCode::SUCCESS)
}

pub fn backup(config: &Config, args: &BackupArgs) -> Result<ExitCode> {
    // Before the source is opened for writing: a refused backup changes nothing.
    refuse_milvus(&args.dir)?;
    if args.dir.is_dir() {
        Engine::check_backup_destination(&args.dir, &args.dest)?;
    }
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
        let counts: Vec<(Kind, u64)> = if milvus {
            crate::milvus::counts(config, &args.dir, tenant)?
        } else {
            let engine = open_to_read(config, &args.dir)?;
            Kind::ALL
                .into_iter()
                .map(|kind| (kind, engine.tenant_count(tenant, kind) as u64))
                .collect()
        };
        if args.json {
            let mut line = serde_json::Map::new();
            line.insert("tenant".into(), tenant.clone().into());
            for (kind, n) in &counts {
                line.insert(kind.plural().into(), (*n).into());
            }
            output::write_line(&mut out, &serde_json::Value::Object(line))?;
        } else {
            writeln!(out, "tenant:     {tenant}")?;
            for (kind, n) in &counts {
                writeln!(out, "{:<11} {n}", format!("{}:", kind.plural()))?;
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let stats = open_to_read(config, &args.dir)?.stats();
    if args.json {
        output::write_line(&mut out, &serde_json::to_value(&stats)?)?;
    } else {
        writeln!(out, "index:      {}", args.dir.display())?;
        writeln!(out, "rules:      {}", stats.rules)?;
        writeln!(out, "chunks:     {}", stats.chunks)?;
        writeln!(out, "scenarios:  {}", stats.scenarios)?;
        writeln!(out, "tools:      {}", stats.tools)?;
        writeln!(out, "tenants:    {}", stats.tenants)?;
        writeln!(out, "entities:   {}", stats.entities)?;
        writeln!(out, "vectors:    {}", output::vector_spaces(&stats))?;
        writeln!(out, "last seq:   {}", stats.last_seq)?;
        writeln!(
            out,
            "text docs:  {} in {} segments",
            stats.text_docs, stats.text_segments
        )?;
        for (name, graph) in [
            ("rule graph", stats.rule_graph),
            ("chunk graph", stats.chunk_graph),
            ("scenario graph", stats.scenario_graph),
            ("tool graph", stats.tool_graph),
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
    let engine = open_to_read(config, &args.dir)?;
    let kinds = match args.kind {
        Some(kind) => vec![kind.into()],
        None => Kind::ALL.to_vec(),
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    for kind in kinds {
        for doc in engine.export(kind, None)? {
            let mut line = serde_json::to_value(doc)?;
            // Scenarios and tools have the same required fields: without `--kind`, their
            // lines say which they are, for `ruche index --records`.
            if args.kind.is_none()
                && matches!(kind, Kind::Scenario | Kind::Tool)
                && let Some(object) = line.as_object_mut()
            {
                object.insert(input::KIND_FIELD.into(), kind.as_str().into());
            }
            output::write_line(&mut out, &line)?;
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
            let config =
                ruchedb::select::SelectionConfig::from_params(&input.strategy, &input.params)?;
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
    let spec: EmbedderSpec = args.embedder.parse().context("--embedder")?;
    let phase = Phase::start("reembed", 0, Unit::Items("documents"));
    let (n_docs, what) = match args.kind {
        Some(kind) => {
            let kind: Kind = kind.into();
            let n = Engine::reembed_kind(&args.dir, kind, &spec, config)?;
            (n, kind.plural())
        }
        None => (Engine::reembed(&args.dir, &spec, config)?, "documents"),
    };
    phase.finish(&format!("{n_docs} {what}"));
    println!(
        "re-embedded {n_docs} {what} of {} with `{spec}`",
        args.dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The configured fusion of a kind, which `--fusion-param` alone modifies.
pub fn fusion_base(config: &Config, kind: Kind) -> ruchedb::fusion::FusionSpec {
    config.fusion.spec(kind)
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
        ("text", ruchedb::feedback::Leg::Text, factors.text),
        ("vector", ruchedb::feedback::Leg::Vector, factors.vector),
        ("graph", ruchedb::feedback::Leg::Graph, factors.graph),
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
