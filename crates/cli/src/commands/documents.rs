//! `ruche get`, `delete`, `purge`, `stats` and `export`: one document, or what the index holds.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::{Result, bail};
use ruchedb::{Config, Kind};

use crate::args::{DeleteArgs, ExportArgs, GetArgs, PurgeArgs, StatsArgs};
use crate::input;
use crate::output;

use super::open::{open, open_to_read};

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
