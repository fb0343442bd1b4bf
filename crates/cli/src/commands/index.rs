//! `ruche index`: reading the inputs and importing them, with a progress bar.

use std::path::Path;
use std::process::ExitCode;
use std::str::FromStr;

use anyhow::{Context, Result, bail};
use ruchedb::{Config, Document, EmbedderSpec, EmbedderSpecs, Engine, Kind};

use crate::args::IndexArgs;
use crate::input;
use crate::progress::{self, Phase, Unit};

use super::open::builder;

/// Documents upserted per call while indexing (the progress bar's step).
pub(crate) const UPSERT_BATCH: usize = 1_000;

/// The documents of `--rules`, `--chunks`, `--scenarios`, `--tools` and `--records`,
/// every line checked, grouped by kind (in the order of [`Kind::ALL`]).
pub(crate) fn read_inputs(args: &IndexArgs) -> Result<(Vec<Document>, Option<Dimensions>)> {
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
pub(crate) struct Dimensions(usize, std::path::PathBuf);

/// How many documents of each kind, in words: `3 rules and 2 chunks` (the kinds an index
/// always had), then scenarios and tools when there are any.
pub(crate) fn counted(docs: &[Document]) -> String {
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
    let explicit = super::open::embedder_flag(args.embedder.as_deref())?;
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

pub(crate) fn index_into(
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
            Some(specs) => builder.with_embedder_specs(specs),
            None if carries_vectors => builder.with_embedder_spec(EmbedderSpec::None),
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
