//! `ruche check`, `repair`, `compact`, `backup` and `reembed`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use ruchedb::{Config, EmbedderSpec, Engine, Kind};

use crate::args::{BackupArgs, MaintainArgs, ReembedArgs};
use crate::output;
use crate::progress::{Phase, Unit};

use super::open::{open, refuse_milvus};

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
