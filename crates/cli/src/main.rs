//! The `ruche` command: offline indexing and local queries over the library's public API.
//!
//! Exit codes: `search` of one query exits 0 with hits and 1 without; `sync` exits 1 when
//! a file could not be read (the others were synced); every other command exits 0 on
//! success; any error exits 2 with a one-line message on stderr, except
//! an error after a durable commit, which exits 3: the change happened. That is a commit
//! that could not be published for readers (a full disk while the text index or the
//! published files were written: readers see it after the next open for writing), or a
//! failure of what follows a commit (building the graph, closing the store).

/// mimalloc instead of the system allocator: an import allocates and frees every
/// document several times over, and a search a few hundred small buffers.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod args;
mod commands;
mod demo;
mod eval;
mod gateway;
mod input;
mod inspect;
mod mcp;
mod milvus;
mod output;
mod progress;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};

fn main() -> ExitCode {
    init_logging();
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
            let committed = committed(&err);
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "ruche: {}", one_line(&format!("{err:#}")));
            ExitCode::from(if committed { 3 } else { 2 })
        }
    }
}

/// The context of an error that came after a durable commit.
#[derive(Debug)]
pub struct Committed {
    /// The changes the commit made.
    pub changes: usize,
}

impl std::fmt::Display for Committed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the commit of {} changes is durable and searchable, but what follows it failed",
            self.changes
        )
    }
}

/// Whether `err` came after a durable commit (exit 3): the commit could not be
/// published, or what follows it failed.
pub fn committed(err: &anyhow::Error) -> bool {
    err.downcast_ref::<Committed>().is_some()
        || err
            .chain()
            .filter_map(|cause| cause.downcast_ref::<ruchedb::Error>())
            .any(|err| matches!(err.kind(), ruchedb::ErrorKind::Unpublished { .. }))
}

/// Logs on stderr. `RUCHE_LOG` is a level (`info`: ruche's events at info, the
/// dependencies' at warn (rmcp's at error), so one `selection` event per search and none of tantivy's
/// merges) or a full filter (`ruchedb=debug,tantivy=info`); `RUCHE_LOG_FORMAT=json` writes
/// one JSON object per event.
fn init_logging() {
    let spec = std::env::var("RUCHE_LOG").unwrap_or_default();
    let spec = spec.trim();
    // rmcp warns of every error the MCP server answers (`ruche mcp`, `ruche gateway`),
    // which the caller reads in the answer: errors only.
    let filter = if spec.is_empty() {
        "warn,rmcp=error".to_string()
    } else if spec.contains('=') || spec.contains(',') {
        spec.to_string()
    } else {
        format!("warn,rmcp=error,ruche={spec},ruchedb={spec},ruchedb_milvus={spec}")
    };
    let filter = tracing_subscriber::EnvFilter::try_new(&filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let json = std::env::var("RUCHE_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    if json {
        builder.event_format(JsonLines).init();
    } else {
        builder.init();
    }
    // A panic is one error line of the log (a dependency's panic that the library
    // contains, such as sled's on a failed sync, is then followed by the typed error);
    // with RUST_BACKTRACE set, the standard report with its backtrace.
    if std::env::var_os("RUST_BACKTRACE").is_none() {
        std::panic::set_hook(Box::new(|info| {
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let at = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            tracing::error!(at = %at, "panic: {message}");
        }));
    }
}

/// One JSON object per event: `timestamp`, `level`, `target` and the event's fields at
/// the top level. A field logged with `%` whose text is a JSON object or array (a
/// turn's `retrieval`, a selection's `metadata`) is nested as JSON, not quoted.
struct JsonLines;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for JsonLines
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let meta = event.metadata();
        let mut fields = JsonFields(serde_json::Map::new());
        fields.0.insert(
            "timestamp".into(),
            ruchedb::Timestamp::now().to_string().into(),
        );
        fields
            .0
            .insert("level".into(), meta.level().as_str().into());
        fields.0.insert("target".into(), meta.target().into());
        event.record(&mut fields);
        writeln!(writer, "{}", serde_json::Value::Object(fields.0))
    }
}

/// An event's fields as JSON values.
struct JsonFields(serde_json::Map<String, serde_json::Value>);

impl tracing::field::Visit for JsonFields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}");
        let nested = (text.starts_with('{') || text.starts_with('['))
            .then(|| serde_json::from_str::<serde_json::Value>(&text).ok())
            .flatten();
        self.0.insert(
            field.name().into(),
            nested.unwrap_or(serde_json::Value::String(text)),
        );
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_bool(&mut self, field: &tracing::field::Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_i64(&mut self, field: &tracing::field::Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_f64(&mut self, field: &tracing::field::Field, value: f64) {
        self.0.insert(field.name().into(), value.into());
    }
}

fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    commands::set_wait(cli.wait)?;
    progress::set_quiet(cli.quiet);
    if let Command::Gateway(args) = &cli.command {
        // `--config` names the servers to front; the configuration is $RUCHE_CONFIG's.
        let Some(servers) = cli.config.as_deref() else {
            anyhow::bail!(
                "gateway: --config FILE is required (the servers to front, JSON: {{\"mcpServers\": {{…}}}})"
            );
        };
        return gateway::run(&ruchedb::Config::load(None)?, servers, args);
    }
    let config = ruchedb::Config::load(cli.config.as_deref())?;
    match cli.command {
        Command::Index(args) => commands::index(&config, &args),
        Command::Sync(args) => commands::sync(&config, &args),
        Command::Search(args) => commands::search(&config, &args),
        Command::Turn(args) => commands::turn(&config, &args),
        Command::Get(args) => commands::get(&config, &args),
        Command::Delete(args) => commands::delete(&config, &args),
        Command::Purge(args) => commands::purge(&config, &args),
        Command::Stats(args) => commands::stats(&config, &args),
        Command::Check(args) => commands::check(&config, &args),
        Command::Compact(args) => commands::compact(&config, &args),
        Command::Backup(args) => commands::backup(&config, &args),
        Command::Repair(args) => commands::repair(&config, &args),
        Command::Export(args) => commands::export(&config, &args),
        Command::Reembed(args) => commands::reembed(&config, &args),
        Command::Feedback(args) => commands::feedback(&config, &args),
        Command::Select => commands::select(),
        Command::Eval(args) => eval::run(&config, &args),
        Command::Demo(args) => demo::run(&config, &args),
        Command::Mcp(args) => mcp::run(&config, &args),
        Command::Gateway(_) => unreachable!("run above"),
        Command::Inspect(args) => inspect::run(&config, &args),
    }
}
