//! `ruche mcp DIR`: the index as a Model Context Protocol server on stdio.
//!
//! One JSON-RPC message per line on stdin and stdout ([`stdio`] checks every line before
//! rmcp sees it and answers those it cannot take), logs on stderr. The server holds no
//! lock between calls: each call opens the index, does its work and closes it (waiting
//! for another process's lock as `--wait` says), so a CLI import or another agent can
//! write between two calls. With `--read-only`, only the tools that read are offered.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use ruchedb::{
    Chunk, Config, Document, Engine, Hit, Kind, Reader, Rule, Scope, SearchRequest, TurnRequest,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::args::{MAX_COUNT, McpArgs};

pub(crate) mod stdio;

/// The server: where the index is, how to open it, which tools it offers.
#[derive(Clone)]
struct Server {
    dir: Arc<PathBuf>,
    config: Arc<Config>,
    read_only: bool,
    /// Calls run one at a time: each opens the index, which one process can hold once.
    serial: Arc<std::sync::Mutex<()>>,
}

pub fn run(config: &Config, args: &McpArgs) -> Result<std::process::ExitCode> {
    if !args.dir.join("store").exists() {
        anyhow::bail!(
            "{}: no index here (create one with `ruche index`)",
            args.dir.display()
        );
    }
    let server = Server {
        dir: Arc::new(args.dir.clone()),
        config: Arc::new(config.clone()),
        read_only: args.read_only,
        serial: Arc::new(std::sync::Mutex::new(())),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let (transport, out) = stdio::Stdio::start()?;
        let served = async {
            let running = server
                .serve(transport)
                .await
                .map_err(|err| anyhow::anyhow!("MCP handshake failed: {err}"))?;
            running.waiting().await?;
            anyhow::Ok(())
        }
        .await;
        // The answers the reader queued last (to frames just before the end of input)
        // are written before the process exits.
        let _ = out.write(Vec::new()).await;
        served
    })?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// What a tool call asks, parsed from its arguments.
enum Call {
    Context(ContextArgs),
    Search(SearchArgs, Kind),
    Remember(RememberArgs),
    AddRule(AddRuleArgs),
    DisableRule(IdArgs),
    Forget(ForgetArgs),
    Feedback(FeedbackArgs),
    Stats(StatsArgs),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ContextArgs {
    message: String,
    context: Option<String>,
    scenario: Option<String>,
    step: Option<String>,
    tenant: Option<String>,
    agent: Option<String>,
    #[serde(default, deserialize_with = "budget")]
    budget_tokens: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    #[serde(alias = "query")]
    message: String,
    scenario: Option<String>,
    step: Option<String>,
    context: Option<String>,
    tenant: Option<String>,
    agent: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default, deserialize_with = "top_k")]
    top_k: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RememberArgs {
    content: String,
    id: Option<String>,
    context: Option<String>,
    #[serde(default, deserialize_with = "importance")]
    importance: Option<u8>,
    tenant: Option<String>,
    agent: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AddRuleArgs {
    id: String,
    condition: String,
    action: String,
    #[serde(default, deserialize_with = "priority")]
    priority: Option<i32>,
    scenario: Option<String>,
    step: Option<String>,
    #[serde(default)]
    patterns: Vec<String>,
    #[serde(default)]
    tags: Vec<String>,
    tenant: Option<String>,
}

/// The most results a search may ask for: the CLI's `--top-k` range and the library's.
const MAX_TOP_K: i64 = MAX_COUNT as i64;
/// A memory's importance, as the library checks it.
const IMPORTANCE: std::ops::RangeInclusive<i64> = 1..=10;
/// A rule's priority: the library's `i32`.
const PRIORITY: std::ops::RangeInclusive<i64> = i32::MIN as i64..=i32::MAX as i64;

/// An optional integer argument within `range`; anything else (0, 10^15, 2.5, "5") is
/// refused with the range, never clamped.
fn integer<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
    range: std::ops::RangeInclusive<i64>,
) -> Result<Option<i64>, D::Error> {
    let must = || {
        format!(
            "must be an integer from {} to {}",
            range.start(),
            range.end()
        )
    };
    match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) if range.contains(&i) => Ok(Some(i)),
            _ => Err(serde::de::Error::custom(format!("{}, got {n}", must()))),
        },
        Some(other) => Err(serde::de::Error::custom(format!("{}, got {other}", must()))),
    }
}

fn top_k<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<usize>, D::Error> {
    Ok(integer(deserializer, 1..=MAX_TOP_K)?.and_then(|k| usize::try_from(k).ok()))
}

/// A turn's token budget: the CLI's and the library's range.
fn budget<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<usize>, D::Error> {
    Ok(integer(deserializer, 0..=MAX_TOP_K)?.and_then(|k| usize::try_from(k).ok()))
}

fn importance<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<u8>, D::Error> {
    Ok(integer(deserializer, IMPORTANCE)?.and_then(|i| u8::try_from(i).ok()))
}

fn priority<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<i32>, D::Error> {
    Ok(integer(deserializer, PRIORITY)?.and_then(|p| i32::try_from(p).ok()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IdArgs {
    id: String,
    tenant: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForgetArgs {
    kind: String,
    id: String,
    tenant: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FeedbackArgs {
    query_id: String,
    useful: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatsArgs {
    tenant: Option<String>,
}

/// One tool: its name, what it does (for a model to choose well), its arguments'
/// schema, and what it does to the index.
struct Spec {
    name: &'static str,
    description: &'static str,
    schema: Value,
    effect: Effect,
}

/// What a tool does to the index, as its MCP annotations say it.
#[derive(Clone, Copy, PartialEq)]
enum Effect {
    /// Only reads.
    Reads,
    /// Writes, and only adds: nothing stored before is changed or removed.
    Adds { idempotent: bool },
    /// Writes, and may change or remove what is stored (replacing a document by its id,
    /// disabling, deleting).
    Changes { idempotent: bool },
}

impl Effect {
    fn writes(self) -> bool {
        self != Effect::Reads
    }

    fn annotations(self) -> ToolAnnotations {
        // Every tool works on the local index only: a closed world.
        let annotations = ToolAnnotations::new().open_world(false);
        match self {
            Effect::Reads => annotations.read_only(true),
            Effect::Adds { idempotent } => annotations
                .read_only(false)
                .destructive(false)
                .idempotent(idempotent),
            Effect::Changes { idempotent } => annotations
                .read_only(false)
                .destructive(true)
                .idempotent(idempotent),
        }
    }
}

const TENANT: &str = "The tenant (default \"default\"): each tenant's data is separate.";

fn specs() -> Vec<Spec> {
    let tenant = json!({"type": "string", "description": TENANT});
    let agent = json!({"type": "string", "description": "Only documents for this agent (and those for every agent)."});
    let tags = json!({"type": "array", "items": {"type": "string"}, "description": "Only documents that carry every one of these tags."});
    let top_k = json!({"type": "integer", "minimum": 1, "maximum": MAX_TOP_K, "description": "At most this many results (default: as many as stand out)."});
    vec![
        Spec {
            name: "get_context",
            description: "Everything the agent needs for one user message, in one call: the scenario it activates (or keeps), the rules to follow with their actions, what is known from memory with dates, and the tools that fit with their parameters, rendered as one compact block within a token budget. Empty when nothing stored is relevant. Returns the block, the active scenario and a turn_id for feedback.",
            schema: json!({
                "type": "object",
                "properties": {
                    "message": {"type": "string", "description": "The user's message, as they wrote it."},
                    "context": {"type": "string", "description": "The conversation (or user) whose memory to search."},
                    "scenario": {"type": "string", "description": "The scenario the agent has active, if any: kept unless the message clearly leaves it."},
                    "step": {"type": "string", "description": "The active step of that scenario."},
                    "budget_tokens": {"type": "integer", "minimum": 0, "maximum": MAX_TOP_K, "description": "The most tokens the block may take (o200k_base); default: no limit."},
                    "tenant": tenant, "agent": agent,
                },
                "required": ["message"],
            }),
            effect: Effect::Reads,
        },
        Spec {
            name: "search_rules",
            description: "Find the rules (\"when CONDITION, do ACTION\" guidance) that apply to a user message, best first. Global rules always apply; pass the active scenario (and step) to include the rules scoped to it. Returns nothing when no rule is relevant: then act without a rule. Each result has the rule's condition, action, priority, a score and why it matched.",
            schema: json!({
                "type": "object",
                "properties": {
                    "message": {"type": "string", "description": "The user's message, as they wrote it."},
                    "scenario": {"type": "string", "description": "The active scenario's id (see find_scenario)."},
                    "step": {"type": "string", "description": "The active step of that scenario."},
                    "tenant": tenant, "agent": agent, "tags": tags, "top_k": top_k,
                },
                "required": ["message"],
            }),
            effect: Effect::Reads,
        },
        Spec {
            name: "search_memory",
            description: "Search memory and knowledge (chunks) for what is relevant to a question, best first: facts about the user, past conversations, knowledge-base excerpts. Identifiers (order numbers, error codes) are matched exactly. Returns nothing when nothing relevant is stored.",
            schema: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for, in words or with identifiers."},
                    "context": {"type": "string", "description": "Only memory of this context (a user, a conversation)."},
                    "tenant": tenant, "agent": agent, "tags": tags, "top_k": top_k,
                },
                "required": ["query"],
            }),
            effect: Effect::Reads,
        },
        Spec {
            name: "find_scenario",
            description: "Which scenario (conversation flow, such as returns and refunds) a user message should activate. Usually one result, none when no scenario fits. Each result has the scenario's steps; pass its id to search_rules as `scenario`.",
            schema: json!({
                "type": "object",
                "properties": {
                    "message": {"type": "string", "description": "The user's message."},
                    "tenant": tenant, "agent": agent, "tags": tags, "top_k": top_k,
                },
                "required": ["message"],
            }),
            effect: Effect::Reads,
        },
        Spec {
            name: "find_tools",
            description: "Which of the agent's registered tools fit a user message, best first, with each tool's parameters (a JSON schema). None when no tool fits.",
            schema: json!({
                "type": "object",
                "properties": {
                    "message": {"type": "string", "description": "The user's message or the task."},
                    "tenant": tenant, "agent": agent, "tags": tags, "top_k": top_k,
                },
                "required": ["message"],
            }),
            effect: Effect::Reads,
        },
        Spec {
            name: "remember",
            description: "Store a piece of memory (a fact, a preference, what was agreed) so that search_memory finds it later. Give an id to update an earlier memory; without one a new id is made and returned.",
            schema: json!({
                "type": "object",
                "properties": {
                    "content": {"type": "string", "description": "The memory, as a self-contained sentence."},
                    "id": {"type": "string", "description": "The memory's id (replaces a memory with the same id)."},
                    "context": {"type": "string", "description": "Who or what it is about: a user, a conversation."},
                    "importance": {"type": "integer", "minimum": IMPORTANCE.start(), "maximum": IMPORTANCE.end(), "description": "1 to 10, 5 is neutral."},
                    "tenant": tenant, "agent": agent,
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["content"],
            }),
            // An id replaces the memory stored under it; without one, each call stores
            // a new memory.
            effect: Effect::Changes { idempotent: false },
        },
        Spec {
            name: "add_rule",
            description: "Add or replace a rule: when CONDITION, do ACTION. Example messages (patterns) make it match paraphrases. Priority (higher wins) only orders rules that are relevant.",
            schema: json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "condition": {"type": "string", "description": "When the rule applies, in words."},
                    "action": {"type": "string", "description": "What the agent does then."},
                    "priority": {"type": "integer", "minimum": PRIORITY.start(), "maximum": PRIORITY.end(), "description": "Default 0; higher wins among relevant rules."},
                    "scenario": {"type": "string", "description": "Only while this scenario is active."},
                    "step": {"type": "string", "description": "Only at this step of the scenario."},
                    "patterns": {"type": "array", "items": {"type": "string"}, "description": "Example user messages that should match."},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "tenant": tenant,
                },
                "required": ["id", "condition", "action"],
            }),
            // Replaces the rule stored under the id; the same call again stores the same.
            effect: Effect::Changes { idempotent: true },
        },
        Spec {
            name: "disable_rule",
            description: "Disable a rule so that it never matches (it is kept and can be re-added).",
            schema: json!({
                "type": "object",
                "properties": {"id": {"type": "string"}, "tenant": tenant},
                "required": ["id"],
            }),
            effect: Effect::Changes { idempotent: true },
        },
        Spec {
            name: "forget",
            description: "Delete a rule, a memory chunk, a scenario or a tool by id.",
            schema: json!({
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": ["rule", "chunk", "scenario", "tool"]},
                    "id": {"type": "string"},
                    "tenant": tenant,
                },
                "required": ["kind", "id"],
            }),
            effect: Effect::Changes { idempotent: true },
        },
        Spec {
            name: "feedback",
            description: "Say whether the results of a search or of get_context (by the query_id or turn_id it returned) were useful: it tunes how much each kind of matching counts for later searches of that tenant. Counts once per query.",
            schema: json!({
                "type": "object",
                "properties": {
                    "query_id": {"type": "string"},
                    "useful": {"type": "boolean"},
                },
                "required": ["query_id", "useful"],
            }),
            // Adds a record; a query counts once.
            effect: Effect::Adds { idempotent: true },
        },
        Spec {
            name: "stats",
            description: "How many rules, memory chunks, scenarios and tools the index holds (of one tenant, or in all).",
            schema: json!({
                "type": "object",
                "properties": {"tenant": tenant},
            }),
            effect: Effect::Reads,
        },
    ]
}

impl Server {
    fn offered(&self) -> impl Iterator<Item = Spec> + '_ {
        specs()
            .into_iter()
            .filter(|spec| !(self.read_only && spec.effect.writes()))
    }

    /// Parses a call's arguments; the error is for the client (invalid params).
    fn parse(&self, name: &str, arguments: JsonObject) -> Result<Call, String> {
        let spec = self
            .offered()
            .find(|spec| spec.name == name)
            .ok_or_else(|| {
                if self.read_only && specs().iter().any(|spec| spec.name == name) {
                    format!("`{name}` writes, and this server is read-only")
                } else {
                    format!("no tool `{name}`")
                }
            })?;
        let value = Value::Object(arguments);
        /// The arguments as a `T`; the error names the tool and the argument.
        fn args<T: serde::de::DeserializeOwned>(name: &str, value: Value) -> Result<T, String> {
            serde_path_to_error::deserialize(value).map_err(|err| {
                let field = err.path().to_string();
                let inner = err.into_inner();
                if field.is_empty() || field == "." {
                    format!("`{name}`: {inner}")
                } else {
                    format!("`{name}`: `{field}`: {inner}")
                }
            })
        }
        Ok(match spec.name {
            "get_context" => Call::Context(args(name, value)?),
            "search_rules" => Call::Search(args(name, value)?, Kind::Rule),
            "search_memory" => Call::Search(args(name, value)?, Kind::Chunk),
            "find_scenario" => Call::Search(args(name, value)?, Kind::Scenario),
            "find_tools" => Call::Search(args(name, value)?, Kind::Tool),
            "remember" => Call::Remember(args(name, value)?),
            "add_rule" => Call::AddRule(args(name, value)?),
            "disable_rule" => Call::DisableRule(args(name, value)?),
            "forget" => Call::Forget(args(name, value)?),
            "feedback" => Call::Feedback(args(name, value)?),
            _ => Call::Stats(args(name, value)?),
        })
    }

    /// Runs a call against the index, opened for this call only.
    fn execute(&self, call: Call) -> ruchedb::Result<Value> {
        let _serial = self.serial.lock().unwrap_or_else(|p| p.into_inner());
        let builder = crate::commands::builder(&self.config);
        // Searches and stats read what the writer published: they never wait for a
        // writer (an import in another process, say).
        match call {
            Call::Context(..) | Call::Search(..) | Call::Stats(..) => {
                let handle = crate::commands::open_engine_to_read(&builder, self.dir.as_path())?;
                let result = read_on(&handle, call);
                handle.close()?;
                result
            }
            call => {
                let engine = builder.open(self.dir.as_path())?;
                let result = execute_on(&engine, call);
                engine.close()?;
                result
            }
        }
    }
}

fn tenant(tenant: Option<String>) -> String {
    tenant.unwrap_or_else(|| ruchedb::DEFAULT_TENANT.to_string())
}

/// A call that reads: context, search, stats.
fn read_on(reader: &Reader, call: Call) -> ruchedb::Result<Value> {
    match call {
        Call::Context(args) => context(reader, args),
        Call::Search(args, kind) => search(reader, args, kind),
        Call::Stats(args) => Ok(stats(reader, args.tenant.as_deref())),
        _ => Err(ruchedb::Error::invalid_input(
            "this call writes: it needs the writer",
        )),
    }
}

fn execute_on(engine: &Engine, call: Call) -> ruchedb::Result<Value> {
    match call {
        Call::Context(..) | Call::Search(..) | Call::Stats(..) => read_on(engine, call),
        Call::Remember(args) => {
            // A memory without an id gets a new one: two in the same millisecond must
            // not replace each other.
            let id = args.id.unwrap_or_else(|| {
                let now = ruchedb::Timestamp::now();
                format!("mem-{}-{:08x}", now.unix_millis(), rand::random::<u32>())
            });
            let mut chunk = Chunk::new(&id, args.content)
                .with_tenant(tenant(args.tenant))
                .with_created_at(ruchedb::Timestamp::now());
            chunk.context_id = args.context;
            chunk.agent_id = args.agent;
            chunk.importance = args.importance;
            if !args.tags.is_empty() {
                chunk = chunk.with_metadata("tags", args.tags);
            }
            engine.upsert_chunks([chunk])?;
            engine.commit()?;
            Ok(json!({"remembered": id}))
        }
        Call::AddRule(args) => {
            let scope = match (args.scenario, args.step) {
                (None, None) => Scope::Global,
                (Some(scenario), None) => Scope::scenario(scenario),
                (Some(scenario), Some(step)) => Scope::step(scenario, step),
                (None, Some(_)) => {
                    return Err(ruchedb::Error::invalid_input(
                        "a `step` needs its `scenario`",
                    ));
                }
            };
            let rule = Rule::new(&args.id, args.condition, args.action)
                .with_priority(args.priority.unwrap_or(0))
                .with_scope(scope)
                .with_patterns(args.patterns)
                .with_tags(args.tags)
                .with_tenant(tenant(args.tenant));
            engine.upsert_rules([rule])?;
            engine.commit()?;
            Ok(json!({"added": args.id}))
        }
        Call::DisableRule(args) => {
            let tenant = tenant(args.tenant);
            let Some(Document::Rule(rule)) = engine.get(Kind::Rule, &tenant, &args.id)? else {
                return Err(not_found(Kind::Rule, &tenant, &args.id));
            };
            engine.upsert_rules([rule.with_enabled(false)])?;
            engine.commit()?;
            Ok(json!({"disabled": args.id}))
        }
        Call::Forget(args) => {
            let kind: Kind = args.kind.parse()?;
            let tenant = tenant(args.tenant);
            if engine.get(kind, &tenant, &args.id)?.is_none() {
                return Err(not_found(kind, &tenant, &args.id));
            }
            engine.delete(kind, &tenant, &args.id);
            engine.commit()?;
            Ok(json!({"forgot": args.id, "kind": kind.as_str()}))
        }
        Call::Feedback(args) => {
            let window = engine.feedback(&args.query_id, args.useful)?;
            Ok(json!({"recorded": args.query_id, "records": window.entries().len()}))
        }
    }
}

/// The documents of each kind of one tenant, or of the whole index.
fn stats(reader: &Reader, tenant: Option<&str>) -> Value {
    match tenant {
        Some(tenant) => {
            let mut counts = serde_json::Map::new();
            counts.insert("tenant".into(), tenant.into());
            for kind in Kind::ALL {
                counts.insert(
                    kind.plural().into(),
                    reader.tenant_count(tenant, kind).into(),
                );
            }
            Value::Object(counts)
        }
        None => {
            let stats = reader.stats();
            json!({
                "rules": stats.rules, "chunks": stats.chunks, "scenarios": stats.scenarios,
                "tools": stats.tools, "tenants": stats.tenants,
            })
        }
    }
}

fn not_found(kind: Kind, tenant: &str, id: &str) -> ruchedb::Error {
    ruchedb::Error::new(ruchedb::ErrorKind::NotFound {
        what: format!("{kind} `{id}` of tenant `{tenant}`"),
    })
}

fn context(engine: &Reader, args: ContextArgs) -> ruchedb::Result<Value> {
    let mut request = TurnRequest::new(args.message).with_tenant(tenant(args.tenant));
    if let Some(agent) = args.agent {
        request = request.with_agent(agent);
    }
    if let Some(context) = args.context {
        request = request.with_context(context);
    }
    match (args.scenario, args.step) {
        (Some(scenario), step) => {
            request = request.with_scenario(scenario);
            if let Some(step) = step {
                request = request.with_step(step);
            }
        }
        (None, Some(_)) => {
            return Err(ruchedb::Error::invalid_input(
                "a `step` needs its `scenario`",
            ));
        }
        (None, None) => {}
    }
    if let Some(budget) = args.budget_tokens {
        request = request.with_budget_tokens(budget);
    }
    let turn = engine.turn(&request)?;
    let block = turn.render();
    let mut out = json!({
        "turn_id": turn.turn_id,
        "context": block,
        "scenario": turn.scenario.active,
        "tokens": turn.budget.used,
    });
    if let Some(step) = &turn.scenario.step {
        out["step"] = step.clone().into();
    }
    let cut = turn.budget.rules.cut + turn.budget.memory.cut + turn.budget.tools.cut;
    if cut > 0 {
        out["cut_by_budget"] = cut.into();
    }
    if turn.is_empty() {
        out["nothing_relevant"] =
            "no scenario, rule, memory or tool is relevant to the message".into();
    }
    Ok(out)
}

fn search(engine: &Reader, args: SearchArgs, kind: Kind) -> ruchedb::Result<Value> {
    let mut request = SearchRequest::new(kind, args.message).with_tenant(tenant(args.tenant));
    if let Some(agent) = args.agent {
        request = request.with_agent(agent);
    }
    if let Some(scenario) = args.scenario {
        request = request.with_scenario(scenario);
    }
    if let Some(step) = args.step {
        request = request.with_step(step);
    }
    if let Some(context) = args.context {
        request = request.with_context(context);
    }
    for tag in args.tags {
        request = request.with_tag(tag);
    }
    if let Some(k) = args.top_k {
        request = request.with_top_k(k);
    }
    let response = engine.search(&request)?;
    let results: Vec<Value> = response.hits.iter().map(result_json).collect();
    let mut out = json!({
        "query_id": response.query_id,
        "results": results,
    });
    if let Some(reason) = response.gate.abstention_reason() {
        out["nothing_relevant"] = reason.into();
    }
    Ok(out)
}

/// A hit as a model reads it: the document's own fields, its score and a short why.
fn result_json(hit: &Hit) -> Value {
    let mut out = match hit.document.as_ref() {
        Document::Rule(rule) => json!({
            "id": rule.id, "condition": rule.condition, "action": rule.action,
            "priority": rule.priority, "scope": rule.scope.name(),
        }),
        Document::Chunk(chunk) => {
            let mut out = json!({"id": chunk.id, "content": chunk.content});
            if let Some(importance) = chunk.importance {
                out["importance"] = importance.into();
            }
            if let Some(created_at) = chunk.created_at {
                out["created_at"] = created_at.to_string().into();
            }
            if let Some(context) = &chunk.context_id {
                out["context"] = context.clone().into();
            }
            out
        }
        Document::Scenario(scenario) => json!({
            "id": scenario.id, "name": scenario.name, "description": scenario.description,
            "steps": scenario.steps,
        }),
        Document::Tool(tool) => json!({
            "id": tool.id, "name": tool.name, "description": tool.description,
            "parameters": tool.parameters,
        }),
    };
    out["score"] = ((hit.score * 1000.0).round() / 1000.0).into();
    out["why"] = crate::output::why(hit).into();
    out
}

/// A tool's input schema as MCP lists it: a JSON object (anything else, none given, is
/// the empty object).
pub(crate) fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(object) => Arc::new(object),
        _ => Arc::new(JsonObject::new()),
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("ruche", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "An agent's rules, memory, scenarios and tools, searched by meaning and by exact \
             identifiers. Search rules with the user's message before acting; search memory \
             for facts; an empty result means nothing relevant is stored."
                .to_string(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = self
            .offered()
            .map(|spec| {
                Tool::new(spec.name, spec.description, schema(spec.schema))
                    .with_annotations(spec.effect.annotations())
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let call = self
            .parse(&request.name, request.arguments.unwrap_or_default())
            .map_err(|message| McpError::invalid_params(message, None))?;
        let server = self.clone();
        let result = tokio::task::spawn_blocking(move || server.execute(call))
            .await
            .map_err(|err| McpError::internal_error(err.to_string(), None))?;
        Ok(match result {
            Ok(value) => CallToolResult::structured(value),
            // The engine's errors (an invalid record, an unknown id, a locked index) are
            // the tool's result: the model reads them and can correct its call.
            Err(err) => CallToolResult::structured_error(json!({
                "error": err.to_string(),
                "kind": err.kind().name(),
            })),
        }
        .into())
    }
}
