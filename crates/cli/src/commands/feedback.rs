//! `ruche feedback`: marking a search useful or not, and the fusion it adjusts.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Result, bail};
use ruchedb::{Config, Kind};

use crate::args::FeedbackArgs;

use super::open::open;

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
