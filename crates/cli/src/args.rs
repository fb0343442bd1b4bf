//! Command-line arguments: what the user typed, parsed by clap.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// ruche: an embedded hybrid search engine for AI agents (rules, memory chunks, scenarios
/// and tools).
#[derive(Debug, Parser)]
#[command(name = "ruche", version, about, long_about = None)]
pub struct Cli {
    /// Configuration file (TOML); defaults to $RUCHE_CONFIG, then built-in defaults. For
    /// `ruche gateway`, the servers to front (JSON, the hosts' `mcpServers`); its ruche
    /// configuration then comes from $RUCHE_CONFIG.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// When another process has the index open, wait up to SECONDS for it instead of
    /// failing at once.
    #[arg(long, global = true, value_name = "SECONDS", default_value_t = 0.0)]
    pub wait: f64,

    /// No progress or status lines on stderr (errors are still printed).
    #[arg(long, short, global = true)]
    pub quiet: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Index rules, chunks, scenarios and tools from JSONL (or TOML) into DIR, creating it
    /// if needed.
    Index(IndexArgs),
    /// Bring DIR in line with Markdown and text files: new files indexed, changed ones
    /// re-indexed, deleted ones removed, unchanged ones not read (exit 1 when a file could
    /// not be read: the others are synced).
    Sync(SyncArgs),
    /// Search an index (one query, or a batch of JSONL queries).
    Search(Box<SearchArgs>),
    /// One turn of a conversation: the scenario, rules, memory and tools a message needs,
    /// within a token budget (one message, or a batch of JSONL messages).
    Turn(TurnArgs),
    /// Print documents by id as JSONL.
    Get(GetArgs),
    /// Delete documents by id, or every chunk of a context.
    Delete(DeleteArgs),
    /// Delete every chunk that has expired.
    Purge(PurgeArgs),
    /// Print counts and the state of the index.
    Stats(StatsArgs),
    /// Verify every file of an index (exit 0 intact, 1 damaged, 2 on usage errors).
    Check(MaintainArgs),
    /// Rewrite the index so that nothing deleted is left on disk.
    Compact(MaintainArgs),
    /// Copy the committed index into a new directory (consistent; opens as an index).
    Backup(BackupArgs),
    /// Rebuild what is damaged; a damaged store is kept as store.damaged and every
    /// document that can be read (in the store or the files published for readers) is
    /// salvaged (exit 0 repaired, 1 when documents were lost).
    Repair(MaintainArgs),
    /// Write every document back as JSONL (backup and migration).
    Export(ExportArgs),
    /// Re-embed every document with another embedder (the way to change models).
    Reembed(ReembedArgs),
    /// Mark a search's answer useful or not (feeds the per-leg feedback weights).
    Feedback(FeedbackArgs),
    /// Apply a k-selection strategy to score lists read as JSONL from stdin.
    Select,
    /// Run judged queries and report nDCG@10, recall@10/@100, MRR@10, selection quality
    /// and latency.
    Eval(EvalArgs),
    /// Index the bundled sample corpus into a fresh directory and run example queries.
    Demo(DemoArgs),
    /// Serve the index to an agent over the Model Context Protocol (stdio): search rules,
    /// memory, scenarios and tools; remember, add and disable rules, forget, feedback.
    Mcp(McpArgs),
    /// Front the MCP servers an agent uses (the host's `mcpServers` block) with one MCP
    /// server on stdio that offers `find_tools` (the few tools that fit a task) and
    /// `call_tool` (forwarded to the tool's server).
    Gateway(GatewayArgs),
    /// Serve a read-only web page on 127.0.0.1 that shows why a message gets its hits:
    /// the playground, the documents and their patterns, judged messages.
    Inspect(InspectArgs),
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The index directory (opened read-only: nothing is written to it).
    pub dir: PathBuf,
    /// The port on 127.0.0.1 (default 0: a free port chosen by the system).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub port: u16,
    /// Judged messages for the Evaluate page, as `ruche eval --queries` takes them.
    #[arg(long, value_name = "FILE", requires = "qrels")]
    pub queries: Option<PathBuf>,
    /// Their judgements, as `ruche eval --qrels` takes them.
    #[arg(long, value_name = "FILE", requires = "queries")]
    pub qrels: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    /// The index directory (created beforehand, e.g. with `ruche index`).
    pub dir: PathBuf,
    /// Offer only the tools that read (search, find, stats).
    #[arg(long)]
    pub read_only: bool,
}

#[derive(Debug, Args)]
pub struct GatewayArgs {
    /// Where the tools' index is kept, so that a restart re-embeds only what changed
    /// (default: a temporary index, deleted at exit).
    #[arg(long, value_name = "DIR")]
    pub index: Option<PathBuf>,
    /// A tool listed directly to the host besides `find_tools` and `call_tool`, by its
    /// qualified name `SERVER__TOOL` (repeatable).
    #[arg(long = "pin", value_name = "SERVER__TOOL")]
    pub pins: Vec<String>,
    /// Seconds a downstream call may take before it fails.
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    pub call_timeout: f64,
    /// Seconds a downstream server may take to start and list its tools.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub start_timeout: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    Rules,
    Chunks,
    Scenarios,
    Tools,
}

impl From<KindArg> for ruchedb::Kind {
    fn from(kind: KindArg) -> ruchedb::Kind {
        match kind {
            KindArg::Rules => ruchedb::Kind::Rule,
            KindArg::Chunks => ruchedb::Kind::Chunk,
            KindArg::Scenarios => ruchedb::Kind::Scenario,
            KindArg::Tools => ruchedb::Kind::Tool,
        }
    }
}

#[derive(Debug, Args)]
pub struct IndexArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// Rules: JSONL (one rule per line), or a .toml file of `[[rules]]`; `-` for stdin.
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// Chunks: JSONL (one chunk per line); `-` for stdin.
    #[arg(long, value_name = "FILE")]
    pub chunks: Option<PathBuf>,
    /// Scenarios: JSONL (one scenario per line), or a .toml file of `[[scenarios]]`; `-`
    /// for stdin.
    #[arg(long, value_name = "FILE")]
    pub scenarios: Option<PathBuf>,
    /// Tools: JSONL (one tool per line), or a .toml file of `[[tools]]`; `-` for stdin.
    #[arg(long, value_name = "FILE")]
    pub tools: Option<PathBuf>,
    /// Documents of every kind mixed, as `ruche export` writes them (a line with `content`
    /// is a chunk, one with `condition` a rule, one with `"kind": "scenario"` or `"kind":
    /// "tool"` a scenario or a tool); `-` for stdin.
    #[arg(long, value_name = "FILE")]
    pub records: Option<PathBuf>,
    /// The embedders of a new index: one for every kind (`minilm`, the compiled-in
    /// all-MiniLM-L6-v2; `static`, the compiled-in static model; `none`; `static:DIR`;
    /// `bert:DIR`), or `KIND=SPEC,...` for some kinds, the others taking their default
    /// (default: `[embed]` of the configuration, else `minilm` for rules, scenarios and
    /// tools and `static` for chunks; none when the records carry their own vectors). An
    /// index keeps the embedders it was created with.
    #[arg(long, value_name = "SPEC")]
    pub embedder: Option<String>,
    /// A new Milvus index gets collections per tenant (per-tenant BM25 statistics).
    #[arg(long)]
    pub collection_per_tenant: bool,
}

#[derive(Debug, Args)]
pub struct SyncArgs {
    /// The index directory (created if needed).
    pub dir: PathBuf,
    /// Files and folders to sync, walked as ripgrep walks them (`.gitignore` respected,
    /// hidden files skipped); a file's documents record its path as given here.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Say what would change, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Read the PATHs from DIR and record paths relative to it (default: as given, from
    /// the current directory).
    #[arg(long, value_name = "DIR")]
    pub base: Option<PathBuf>,
    /// The tenant of the documents (default `default`).
    #[arg(long, value_name = "TENANT")]
    pub tenant: Option<String>,
    /// Restrict the documents to one agent.
    #[arg(long, value_name = "AGENT")]
    pub agent: Option<String>,
    /// The most tokens (o200k_base) of a chunk.
    #[arg(long, value_name = "N", default_value_t = ruchedb::files::DEFAULT_CHUNK_TOKENS)]
    pub chunk_tokens: usize,
    /// The embedders of a new index, as `ruche index --embedder` takes them.
    #[arg(long, value_name = "SPEC")]
    pub embedder: Option<String>,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReembedArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// The new embedder: `minilm`, `static`, `none`, `static:DIR` or `bert:DIR`.
    #[arg(long, value_name = "SPEC")]
    pub embedder: String,
    /// Re-embed only the documents of this kind (the others keep their embedders and
    /// their vectors).
    #[arg(long, value_enum)]
    pub kind: Option<KindArg>,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// The query text (omit with --batch, or with --browse).
    #[arg(required_unless_present_any = ["batch", "browse"])]
    pub text: Option<String>,
    /// With no text: list the chunks the filters admit (`--context C`), by importance
    /// and recency.
    #[arg(long, conflicts_with_all = ["text", "batch"])]
    pub browse: bool,
    /// JSONL file of queries (`-` for stdin); prints one JSON line per query.
    #[arg(long, value_name = "FILE", conflicts_with = "text")]
    pub batch: Option<PathBuf>,
    /// What to search.
    #[arg(long, value_enum, default_value = "rules")]
    pub kind: KindArg,
    #[arg(long, default_value = ruchedb::DEFAULT_TENANT)]
    pub tenant: String,
    #[arg(long)]
    pub agent: Option<String>,
    /// The active scenario (its scenario rules apply).
    #[arg(long)]
    pub scenario: Option<String>,
    /// The active step of the scenario (its step rules apply).
    #[arg(long)]
    pub step: Option<String>,
    /// Chunks of this context only.
    #[arg(long)]
    pub context: Option<String>,
    /// Required tag (repeatable).
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// A file the agent is working on, relative to the project's root: the rules whose
    /// globs match it apply (repeatable).
    #[arg(long = "file", value_name = "PATH")]
    pub files: Vec<String>,
    /// A rule to apply whatever its relevance, by id or name (repeatable; `@name` in the
    /// message does the same).
    #[arg(long = "rule", value_name = "NAME")]
    pub rules: Vec<String>,
    /// Required chunk metadata entry (repeatable).
    #[arg(long = "filter", value_name = "KEY=VALUE")]
    pub filters: Vec<String>,
    /// At most the N best hits that pass the relevance gate (no selection strategy);
    /// with `--min-relevance 0`, exactly N when N match. At most 1000000.
    #[arg(long, value_name = "N", value_parser = count(1))]
    pub top_k: Option<usize>,
    /// Return only hits whose relevance (0 to 1) reaches this, instead of the configured
    /// `relevance.<kind>.min_relevance` (0.5); 0 turns the relevance gate off.
    #[arg(long, value_name = "X")]
    pub min_relevance: Option<f64>,
    /// A token budget for the hits' texts (counted with o200k_base): the longest prefix
    /// of the selection that fits.
    #[arg(long, value_name = "N", value_parser = count(0))]
    pub max_tokens: Option<usize>,
    /// The k-selection strategy (elbow, adaptive_k, entropy, clustering, fixed_k,
    /// autocut, band) instead of the configured one.
    #[arg(long, value_name = "NAME")]
    pub strategy: Option<String>,
    /// A parameter of --strategy (repeatable), e.g. `alpha=2.0`.
    #[arg(long = "select-param", value_name = "KEY=VALUE", requires = "strategy")]
    pub select_params: Vec<String>,
    /// The most hits the strategy may return (1 to 1000000).
    #[arg(long, value_name = "N", value_parser = count(1))]
    pub max_k: Option<usize>,
    /// The fewest hits the strategy returns when there are enough that pass the gate (0
    /// to 1000000, at most --max-k).
    #[arg(long, value_name = "N", value_parser = count(0))]
    pub min_k: Option<usize>,
    #[command(flatten)]
    pub fusion: FusionArgs,
    /// The time recency and expiry are measured against (RFC 3339 or unix seconds).
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
    /// Print one compact JSON line (as in batch output).
    #[arg(long)]
    pub json: bool,
    /// Show how each score was made.
    #[arg(long)]
    pub explain: bool,
    /// Let this action-selection policy (greedy, sampling, beam_search, mcts) choose one
    /// hit, and print its choice and ranking.
    #[arg(long, value_name = "NAME", conflicts_with = "batch")]
    pub policy: Option<String>,
    /// A parameter of --policy (repeatable), e.g. `temperature=0.5`.
    #[arg(long = "policy-param", value_name = "KEY=VALUE", requires = "policy")]
    pub policy_params: Vec<String>,
    /// The seed of the policy's random choices (same seed, same choice).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "policy")]
    pub seed: u64,
}

/// `ruche turn`.
#[derive(Debug, clap::Args)]
pub struct TurnArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// The message (omit with --batch).
    #[arg(required_unless_present = "batch")]
    pub text: Option<String>,
    /// JSONL file of messages (`-` for stdin): lines {"id", "text", "context_id",
    /// "scenario_id", "step_id", "tenant_id", "agent_id", "budget_tokens", "now"}; prints
    /// one JSON line per message.
    #[arg(long, value_name = "FILE", conflicts_with = "text")]
    pub batch: Option<PathBuf>,
    #[arg(long, default_value = ruchedb::DEFAULT_TENANT)]
    pub tenant: String,
    #[arg(long)]
    pub agent: Option<String>,
    /// The conversation: memory is searched within this context.
    #[arg(long)]
    pub context: Option<String>,
    /// The agent's active scenario (kept unless the message clearly leaves it).
    #[arg(long)]
    pub scenario: Option<String>,
    /// The active step of the scenario.
    #[arg(long, requires = "scenario")]
    pub step: Option<String>,
    /// The most tokens the rendered block may take (counted with o200k_base).
    #[arg(long, value_name = "N", value_parser = count(0))]
    pub budget_tokens: Option<usize>,
    /// The time recency and expiry are measured against (RFC 3339 or unix seconds).
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
    /// A file the agent is working on, relative to the project's root: the rules whose
    /// globs match it apply (repeatable).
    #[arg(long = "file", value_name = "PATH")]
    pub files: Vec<String>,
    /// A rule to apply whatever its relevance, by id or name (repeatable; `@name` in the
    /// message does the same).
    #[arg(long = "rule", value_name = "NAME")]
    pub rules: Vec<String>,
    /// Print one compact JSON line (as in batch output).
    #[arg(long)]
    pub json: bool,
    /// Print the prompt-ready block (with --json: as its `prompt` key).
    #[arg(long)]
    pub render: bool,
    /// Show how each score was made.
    #[arg(long)]
    pub explain: bool,
}

/// Fusion overrides, shared by `search` and `eval`.
#[derive(Debug, Clone, Args)]
pub struct FusionArgs {
    /// The fusion method instead of the configured one: `weighted`, `min_max`,
    /// `fixed_bounds`, `z_score` (or `dbsf`), `rrf`.
    #[arg(long, value_name = "NAME")]
    pub fusion: Option<String>,
    /// A fusion parameter (repeatable): `vector_weight`, `text_weight`, `text_bounds`,
    /// `vector_bounds`, `rrf_k`, `text_normalization`, `vector_normalization`.
    #[arg(long = "fusion-param", value_name = "KEY=VALUE")]
    pub fusion_params: Vec<String>,
    /// Query-adaptive leg weights on or off (default: the config's `fusion.adaptive`).
    #[arg(long, value_name = "on|off")]
    pub adaptive: Option<OnOff>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Debug, Args)]
pub struct FeedbackArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// The `query_id` of a search response.
    #[arg(required_unless_present = "reset")]
    pub query_id: Option<String>,
    /// The answer was useful.
    #[arg(long, conflicts_with_all = ["not_useful", "reset"])]
    pub useful: bool,
    /// The answer was not useful.
    #[arg(long, conflicts_with = "reset")]
    pub not_useful: bool,
    /// Forget every feedback record.
    #[arg(long)]
    pub reset: bool,
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// Queries as for `search --batch` (JSONL; vectors optional).
    #[arg(long, value_name = "FILE")]
    pub queries: PathBuf,
    /// Relevance judgements: TSV `query-id, doc-id, relevance` (a header line is
    /// skipped), or TREC qrels `query-id 0 doc-id relevance`.
    #[arg(long, value_name = "FILE")]
    pub qrels: PathBuf,
    /// What the queries search, unless a line says otherwise.
    #[arg(long, value_enum, default_value = "rules")]
    pub kind: KindArg,
    #[arg(long, default_value = ruchedb::DEFAULT_TENANT)]
    pub tenant: String,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also write the inspector's evaluation page to FILE: one self-contained HTML file
    /// (metrics, confusions, wrong answers and refusals with their score curves).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    #[command(flatten)]
    pub fusion: FusionArgs,
}

#[derive(Debug, Args)]
pub struct GetArgs {
    pub dir: PathBuf,
    #[arg(long, value_enum)]
    pub kind: KindArg,
    #[arg(long, default_value = ruchedb::DEFAULT_TENANT)]
    pub tenant: String,
    #[arg(required = true)]
    pub ids: Vec<String>,
}

#[derive(Debug, Args)]
pub struct DeleteArgs {
    pub dir: PathBuf,
    /// The kind of the ids (needed with ids).
    #[arg(long, value_enum, required_unless_present = "all")]
    pub kind: Option<KindArg>,
    #[arg(long, default_value = ruchedb::DEFAULT_TENANT)]
    pub tenant: String,
    /// Delete every chunk of this context.
    #[arg(long)]
    pub context: Option<String>,
    /// Delete every document of --tenant (then `ruche compact` erases them from disk).
    #[arg(long, conflicts_with_all = ["context", "ids"])]
    pub all: bool,
    #[arg(required_unless_present_any = ["context", "all"])]
    pub ids: Vec<String>,
}

#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// Where the copy goes (a new or empty directory).
    pub dest: PathBuf,
}

#[derive(Debug, Args)]
pub struct PurgeArgs {
    pub dir: PathBuf,
    /// The time to compare expiry against (default: now).
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    pub dir: PathBuf,
    #[arg(long)]
    pub json: bool,
    /// Counts of one tenant only.
    #[arg(long)]
    pub tenant: Option<String>,
}

/// `check`, `compact`, `repair`: the whole index.
#[derive(Debug, Args)]
pub struct MaintainArgs {
    pub dir: PathBuf,
    /// The report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    pub dir: PathBuf,
    /// Only this kind (default: rules, chunks, scenarios, then tools).
    #[arg(long, value_enum)]
    pub kind: Option<KindArg>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to build the demo index (default: a temporary directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The largest count a search accepts (`--top-k`, `--max-k`, ...; MCP's `top_k`): the
/// library's limit.
pub const MAX_COUNT: u64 = 1_000_000;

/// A count flag from `least` to [`MAX_COUNT`]; clap names the flag and the range when a
/// value is outside.
fn count(least: u64) -> impl clap::builder::TypedValueParser<Value = usize> {
    use clap::builder::TypedValueParser;
    clap::value_parser!(u64)
        .range(least..=MAX_COUNT)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}
