//! The `ruche` command: offline indexing and local queries over the library's public API.
//!
//! Exit codes: `search` of one query exits 0 with hits and 1 without; every other
//! command exits 0 on success; any error exits 2 with a one-line message on stderr.

mod args;
mod commands;
mod demo;
mod eval;
mod input;
mod output;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RUCHE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            // A closed pipe (`ruche export DIR | head`) is not an error.
            if err
                .chain()
                .filter_map(|cause| cause.downcast_ref::<std::io::Error>())
                .any(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "ruche: {}", one_line(&format!("{err:#}")));
            ExitCode::from(2)
        }
    }
}

fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let config = ruche::Config::load(cli.config.as_deref())?;
    match cli.command {
        Command::Index(args) => commands::index(&config, &args),
        Command::Search(args) => commands::search(&config, &args),
        Command::Get(args) => commands::get(&config, &args),
        Command::Delete(args) => commands::delete(&config, &args),
        Command::Purge(args) => commands::purge(&config, &args),
        Command::Stats(args) => commands::stats(&config, &args),
        Command::Export(args) => commands::export(&config, &args),
        Command::Reembed(args) => commands::reembed(&config, &args),
        Command::Feedback(args) => commands::feedback(&config, &args),
        Command::Select => commands::select(),
        Command::Eval(args) => eval::run(&config, &args),
        Command::Demo(args) => demo::run(&config, &args),
    }
}
