//! `ruche sync`: an index kept in line with Markdown and text files.

use std::process::ExitCode;

use anyhow::{Result, bail};
use ruchedb::engine::{FileChange, SyncOptions, SyncReport};
use ruchedb::{Config, EmbedderSpec, Engine};

use crate::args::SyncArgs;
use crate::progress::{self, Phase, Unit};

use super::open::builder;

pub fn sync(config: &Config, args: &SyncArgs) -> Result<ExitCode> {
    if crate::milvus::is_milvus(&args.dir) {
        bail!(
            "sync keeps a local index in line with files; a Milvus index is written with `ruche index`"
        );
    }
    let explicit = super::open::embedder_flag(args.embedder.as_deref())?;
    let mut options = SyncOptions::default()
        .with_chunk_tokens(args.chunk_tokens)
        .with_dry_run(args.dry_run);
    if let Some(tenant) = &args.tenant {
        options = options.with_tenant(tenant);
    }
    if let Some(agent) = &args.agent {
        options = options.with_agent(agent);
    }
    if let Some(base) = &args.base {
        options = options.with_base(base);
    }
    let exists = args.dir.join("store").exists();
    let dir_existed = args.dir.exists();
    if exists && explicit.is_some() {
        bail!(
            "{} exists: --embedder applies when an index is created (use `ruche reembed` to change models)",
            args.dir.display()
        );
    }
    let mut created = false;
    let engine = match (exists, args.dry_run) {
        (true, _) => builder(config).open(&args.dir)?,
        // A dry run of a new index compares with nothing and creates nothing.
        (false, true) => Engine::builder()
            .with_config(config.clone())
            .with_embedder_spec(EmbedderSpec::None)
            .temporary()?,
        (false, false) => {
            let builder = match explicit {
                Some(specs) => builder(config).with_embedder_specs(specs),
                None => builder(config),
            };
            created = true;
            builder.create(&args.dir)?
        }
    };
    let mut reading: Option<Phase> = None;
    let result = engine.sync_with_progress(&args.paths, &options, &mut |step| {
        let phase = reading
            .get_or_insert_with(|| Phase::start("read", step.total as u64, Unit::Items("files")));
        phase.set(step.done as u64);
    });
    let report = match result {
        Ok(report) => report,
        Err(err) => {
            drop(engine);
            let err = anyhow::Error::from(err);
            if created && !crate::committed(&err) {
                // Do not leave a half-made new index behind: what this sync created goes.
                let _ = Engine::remove(&args.dir);
                if !dir_existed {
                    let _ = std::fs::remove_dir(&args.dir);
                }
            }
            return Err(err);
        }
    };
    if let Some(phase) = reading {
        phase.finish(&format!(
            "{} files, {} documents written",
            report.added + report.changed + report.unchanged + report.empty + report.failed,
            report.documents_written
        ));
    }
    if !args.dry_run && report.changes() > 0 {
        let backlog = engine.graph_backlog() as u64;
        if backlog > 0 {
            let mut graph = Phase::start("graph", backlog, Unit::Items("vectors"));
            progress::watch(
                &mut graph,
                || engine.sync_graph(),
                || backlog.saturating_sub(engine.graph_backlog() as u64),
            )?;
            graph.finish("every vector in the HNSW graph");
        }
    }
    engine.close()?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print_report(&report, &args.dir);
    }
    Ok(if report.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `1 document`, `3 documents`.
fn documents(n: usize) -> String {
    if n == 1 {
        "1 document".to_string()
    } else {
        format!("{n} documents")
    }
}

/// One line per file that changed or failed, then the totals.
fn print_report(report: &SyncReport, dir: &std::path::Path) {
    let would = if report.dry_run { "would be " } else { "" };
    for file in &report.files {
        match file.change {
            FileChange::Failed => println!(
                "failed   {}: {} (its documents are left as they were)",
                file.location(),
                file.error.as_deref().unwrap_or("unreadable")
            ),
            change => println!(
                "{would}{:<8} {} ({})",
                change.name(),
                file.path,
                documents(file.documents)
            ),
        }
    }
    let verb = if report.dry_run {
        "dry run of"
    } else {
        "synced"
    };
    println!(
        "{verb} {}: {} added, {} changed, {} removed, {} unchanged, {} empty, {} failed; {} documents written, {} deleted; {} other files left alone; {:.2} s",
        dir.display(),
        report.added,
        report.changed,
        report.removed,
        report.unchanged,
        report.empty,
        report.failed,
        report.documents_written,
        report.documents_deleted,
        report.other_files,
        report.micros as f64 / 1e6
    );
}
