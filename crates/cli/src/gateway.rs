//! `ruche gateway --config servers.json`: one MCP server on stdio in front of the MCP
//! servers an agent uses, offering the few tools that fit a task instead of all of them.
//!
//! The host sees `find_tools` (a task in, the short list out, each tool with its
//! qualified name `SERVER__TOOL` and full input schema), `call_tool` (a qualified name
//! and arguments, forwarded to the tool's server, its result returned unchanged) and the
//! tools pinned with `--pin`. Behind it, [`downstream`] runs each server (start, list,
//! restart, time limits) and [`catalog`] keeps their tools in a ruche index, searched as
//! `ruche search --kind tools` searches.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Result, bail};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use ruchedb::{Config, Engine};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use crate::args::GatewayArgs;
use crate::mcp::{schema, stdio};

mod catalog;
mod config;
mod downstream;

use catalog::Catalog;
use config::{Servers, split};
use downstream::{Downstream, Limits, Listed};

/// The most tools one `find_tools` answer may hold.
const MAX_FIND: usize = 50;
/// How long a `find_tools` waits for servers still starting (at most the start limit):
/// the first call of a session sees every server that starts in time, and none waits long
/// for one that hangs.
const FIND_WAITS: Duration = Duration::from_secs(5);
/// How many tools nearest a task `find_tools` offers when none fits.
const NEAREST: usize = 3;

pub fn run(config: &Config, servers: &Path, args: &GatewayArgs) -> Result<ExitCode> {
    let servers = Servers::read(servers)?;
    for pin in &args.pins {
        match split(pin) {
            Some((server, _)) if servers.0.contains_key(server) => {}
            _ => bail!(
                "--pin {pin}: expected SERVER__TOOL with a server of the config ({})",
                servers.0.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        }
    }
    let limits = Limits {
        call: seconds("--call-timeout", args.call_timeout)?,
        start: seconds("--start-timeout", args.start_timeout)?,
    };
    let engine = match &args.index {
        Some(dir) => {
            crate::commands::refuse_milvus(dir)?;
            crate::commands::builder(config).open_or_create(dir)?
        }
        None => Engine::builder().with_config(config.clone()).temporary()?,
    };
    let catalog = Catalog::new(engine);
    let names: Vec<&str> = servers.0.keys().map(String::as_str).collect();
    let forgotten = catalog.forget_servers_but(&names)?;
    if !forgotten.is_empty() {
        tracing::info!(
            tools = forgotten.len(),
            "deleted the tools of servers no longer configured"
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let served = runtime.block_on(serve(catalog, servers, args.pins.clone(), limits));
    // Blocking work left behind (a wait on a server's process group) is not waited for.
    runtime.shutdown_timeout(Duration::from_secs(2));
    served?;
    Ok(ExitCode::SUCCESS)
}

fn seconds(flag: &str, value: f64) -> Result<Duration> {
    if !(0.001..=86_400.0).contains(&value) {
        bail!("{flag}: expected seconds between 0.001 and 86400, got {value}");
    }
    Ok(Duration::from_secs_f64(value))
}

async fn serve(
    catalog: Catalog,
    servers: Servers,
    pins: Vec<String>,
    limits: Limits,
) -> Result<()> {
    let (shutdown, shutdown_rx) = watch::channel(false);
    let (listed_tx, mut listed) = mpsc::unbounded_channel::<Listed>();
    let mut downstream = BTreeMap::new();
    let mut supervisors = Vec::new();
    for (name, spec) in servers.0 {
        let (handle, task) = Downstream::spawn(
            name.clone(),
            spec,
            limits,
            listed_tx.clone(),
            shutdown_rx.clone(),
        );
        downstream.insert(name, handle);
        supervisors.push(task);
    }
    drop(listed_tx);
    let gateway = Gateway {
        catalog: Arc::new(catalog),
        servers: Arc::new(downstream),
        pins: Arc::new(pins),
        host: Arc::new(Mutex::new(None)),
        settled: Arc::new(watch::channel(BTreeSet::new()).0),
        limits,
        definition_tokens: Arc::default(),
    };
    // The catalog follows the listings, one at a time.
    let indexer = {
        let gateway = gateway.clone();
        tokio::spawn(async move {
            while let Some(listing) = listed.recv().await {
                let server = listing.server.clone();
                let catalog = gateway.catalog.clone();
                match tokio::task::spawn_blocking(move || catalog.reconcile(&listing)).await {
                    Ok(Ok(changes)) => {
                        for (id, why) in &changes.refused {
                            tracing::warn!(server = %server, tool = %id, "not indexed: {why}");
                        }
                        tracing::info!(
                            server = %server,
                            upserted = changes.upserted.len(),
                            deleted = changes.deleted.len(),
                            definition_tokens = changes.definition_tokens,
                            "indexed"
                        );
                        gateway
                            .definition_tokens
                            .lock()
                            .expect("the token counts")
                            .insert(server.clone(), changes.definition_tokens);
                        if gateway.pins.iter().any(|pin| changes.touches(pin)) {
                            gateway.pinned_changed().await;
                        }
                    }
                    Ok(Err(err)) => {
                        tracing::error!(server = %server, "cannot index its tools: {err:#}");
                    }
                    Err(err) => tracing::error!(server = %server, "cannot index its tools: {err}"),
                }
                gateway.settle(server);
            }
        })
    };
    // A server whose first start fails is settled too: `find_tools` stops waiting for it.
    for server in gateway.servers.values() {
        let (server, gateway) = (server.clone(), gateway.clone());
        tokio::spawn(async move {
            if !server.first_start().await {
                gateway.settle(server.name.clone());
            }
        });
    }
    // SIGTERM or SIGINT ends the session as the host closing stdin does, from the start.
    let (terminate, terminating) = watch::channel(false);
    tokio::spawn(async move {
        terminated().await;
        let _ = terminate.send(true);
    });
    let (transport, out) = stdio::Stdio::start()?;
    let served = async {
        let mut signalled = terminating.clone();
        let running = tokio::select! {
            running = gateway.clone().serve(transport) => {
                running.map_err(|err| anyhow::anyhow!("MCP handshake failed: {err}"))?
            }
            _ = signalled.wait_for(|signalled| *signalled) => return anyhow::Ok(()),
        };
        let session = running.cancellation_token();
        tokio::spawn(async move {
            let _ = signalled.wait_for(|signalled| *signalled).await;
            session.cancel();
        });
        running.waiting().await?;
        anyhow::Ok(())
    }
    .await;
    // The servers are stopped together (stdin closed, then SIGTERM, then SIGKILL to their
    // process groups) before the index closes; the last answers are flushed meanwhile.
    let _ = shutdown.send(true);
    let deadline = tokio::time::Instant::now() + STOP_ALL_WITHIN;
    let _ = tokio::time::timeout_at(deadline, out.write(Vec::new())).await;
    for task in supervisors {
        let _ = tokio::time::timeout_at(deadline, task).await;
    }
    indexer.abort();
    served
}

/// How long the gateway gives its servers to stop when it exits.
const STOP_ALL_WITHIN: Duration = Duration::from_secs(10);

/// SIGTERM or SIGINT.
async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => std::future::pending().await,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// The host's side: what it lists and calls.
#[derive(Clone)]
struct Gateway {
    catalog: Arc<Catalog>,
    servers: Arc<BTreeMap<String, Downstream>>,
    pins: Arc<Vec<String>>,
    /// The host, once it has listed the tools: told when a pinned tool changes.
    host: Arc<Mutex<Option<Peer<RoleServer>>>>,
    /// The servers whose first listing is indexed, or whose first start failed.
    settled: Arc<watch::Sender<BTreeSet<String>>>,
    limits: Limits,
    /// Each server's tool definitions in `o200k_base` tokens, as last listed (logged with
    /// each `find_tools` answer's: the context the gateway saves).
    definition_tokens: Arc<Mutex<BTreeMap<String, usize>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FindArgs {
    #[serde(alias = "message", alias = "query")]
    task: String,
    top_k: Option<usize>,
    server: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallArgs {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
}

impl Gateway {
    fn settle(&self, server: String) {
        self.settled.send_modify(|settled| {
            settled.insert(server);
        });
    }

    /// Waits until every server's first listing is indexed or its first start failed: up
    /// to [`FIND_WAITS`] for servers still starting, up to the start limit while a server
    /// that has listed its tools is being indexed here.
    async fn all_settled(&self) {
        let began = tokio::time::Instant::now();
        let mut settled = self.settled.subscribe();
        loop {
            let (pending, indexing) = {
                let settled = settled.borrow_and_update();
                let pending: Vec<&Downstream> = self
                    .servers
                    .values()
                    .filter(|server| !settled.contains(&server.name))
                    .collect();
                (pending.len(), pending.iter().any(|server| server.is_up()))
            };
            if pending == 0 {
                return;
            }
            let limit = if indexing {
                self.limits.start
            } else {
                self.limits.start.min(FIND_WAITS)
            };
            let left = limit.saturating_sub(began.elapsed());
            if left.is_zero() {
                return;
            }
            let _ =
                tokio::time::timeout(left.min(Duration::from_millis(100)), settled.changed()).await;
        }
    }

    async fn pinned_changed(&self) {
        let host = self.host.lock().expect("the host slot").clone();
        if let Some(host) = host {
            let _ = host.notify_tool_list_changed().await;
        }
    }

    async fn find(&self, args: FindArgs) -> Result<CallToolResult, McpError> {
        let top_k = match args.top_k {
            Some(k) if !(1..=MAX_FIND).contains(&k) => {
                return Err(McpError::invalid_params(
                    format!("top_k: expected 1 to {MAX_FIND}, got {k}"),
                    None,
                ));
            }
            k => k,
        };
        if let Some(server) = &args.server
            && !self.servers.contains_key(server)
        {
            return Err(McpError::invalid_params(
                format!(
                    "server: no server `{server}` (servers: {})",
                    self.server_names()
                ),
                None,
            ));
        }
        if args.task.trim().is_empty() {
            return Err(McpError::invalid_params("task: empty", None));
        }
        self.all_settled().await;
        let started = std::time::Instant::now();
        let catalog = self.catalog.clone();
        let (found, nearest) = tokio::task::spawn_blocking(move || {
            let server = args.server.as_deref();
            let found = catalog.find(&args.task, top_k, server)?;
            let nearest = if found.is_empty() {
                catalog.nearest(&args.task, NEAREST, server)?
            } else {
                Vec::new()
            };
            anyhow::Ok((found, nearest))
        })
        .await
        .map_err(|err| McpError::internal_error(err.to_string(), None))?
        .map_err(|err| McpError::internal_error(format!("{err:#}"), None))?;
        let listed = |tools: &[ruchedb::Tool]| -> Vec<Value> {
            tools
                .iter()
                .map(|tool| {
                    let up = split(&tool.id)
                        .and_then(|(server, _)| self.servers.get(server))
                        .is_some_and(Downstream::is_up);
                    catalog::answer(tool, up)
                })
                .collect()
        };
        let mut answer = json!({ "tools": listed(&found) });
        if found.is_empty() {
            answer["nearest"] = Value::Array(listed(&nearest));
            answer["note"] = json!(
                "No tool fits this task well. The nearest are under `nearest`: call one only \
                 if it does what you need, or ask again in other words."
            );
        } else {
            answer["note"] = json!(
                "Call one with call_tool: {\"name\": NAME, \"arguments\": {...}} matching its inputSchema."
            );
        }
        if tracing::enabled!(tracing::Level::INFO) {
            let elapsed = started.elapsed();
            let catalog_tokens: usize = self
                .definition_tokens
                .lock()
                .expect("the token counts")
                .values()
                .sum();
            tracing::info!(
                tools = found.len(),
                answer_tokens = ruchedb::count_tokens(&answer.to_string()),
                catalog_tokens,
                elapsed_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
                "find_tools"
            );
        }
        Ok(CallToolResult::structured(answer))
    }

    /// Forwards a call of `name` (`SERVER__TOOL`) to its server, with the host's
    /// arguments, metadata and input responses (`params`, whose name is replaced).
    async fn forward(
        &self,
        name: String,
        mut params: CallToolRequestParams,
    ) -> Result<CallToolResponse, McpError> {
        let Some((server, tool)) = split(&name) else {
            return Err(McpError::invalid_params(
                format!("name: `{name}` is not SERVER__TOOL (find one with find_tools)"),
                None,
            ));
        };
        let Some(downstream) = self.servers.get(server) else {
            return Err(McpError::invalid_params(
                format!(
                    "name: no server `{server}` (servers: {})",
                    self.server_names()
                ),
                None,
            ));
        };
        params.name = tool.to_string().into();
        downstream.call(params).await
    }

    fn server_names(&self) -> String {
        self.servers.keys().cloned().collect::<Vec<_>>().join(", ")
    }

    /// The pinned tools the catalog holds, as the host lists them.
    fn pinned(&self) -> Vec<Tool> {
        self.pins
            .iter()
            .filter_map(|pin| self.catalog.get(pin).ok().flatten())
            .map(|tool| Tool::new(tool.id, tool.description, schema(tool.parameters)))
            .collect()
    }
}

fn parse<T: serde::de::DeserializeOwned>(
    tool: &str,
    arguments: Option<JsonObject>,
) -> Result<T, McpError> {
    serde_json::from_value(Value::Object(arguments.unwrap_or_default()))
        .map_err(|err| McpError::invalid_params(format!("{tool}: {err}"), None))
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        );
        info.server_info = Implementation::new("ruche-gateway", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(format!(
            "Tools of {} MCP servers ({}), found by task: call find_tools with what you need \
             to do, then call_tool with the name and arguments of the tool that fits.",
            self.servers.len(),
            self.server_names()
        ));
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        *self.host.lock().expect("the host slot") = Some(context.peer.clone());
        // The pinned tools of servers still starting are listed once they are indexed.
        self.all_settled().await;
        let read_only = ToolAnnotations::new().read_only(true).destructive(false);
        let mut tools = vec![
            Tool::new(
                "find_tools",
                format!(
                    "Find the tools that fit a task among the tools of the MCP servers behind \
                     this gateway ({}). Returns each tool's name and input schema, to call with \
                     call_tool. An empty list means no tool fits.",
                    self.server_names()
                ),
                schema(json!({
                    "type": "object",
                    "properties": {
                        "task": {"type": "string", "description": "What you need a tool for, in words (the user's request or your next step)."},
                        "top_k": {"type": "integer", "minimum": 1, "maximum": MAX_FIND, "description": "At most this many tools (default: as many as fit)."},
                        "server": {"type": "string", "enum": self.servers.keys().collect::<Vec<_>>(), "description": "Only this server's tools."}
                    },
                    "required": ["task"],
                    "additionalProperties": false
                })),
            )
            .with_annotations(read_only),
            Tool::new(
                "call_tool",
                "Call a tool found with find_tools: its name (SERVER__TOOL) and its arguments, \
                 as its input schema says. Returns the tool's own result.",
                schema(json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "The tool's name as find_tools gave it."},
                        "arguments": {"type": "object", "description": "The tool's arguments."}
                    },
                    "required": ["name"],
                    "additionalProperties": false
                })),
            ),
        ];
        let gateway = self.clone();
        let pinned = tokio::task::spawn_blocking(move || gateway.pinned())
            .await
            .map_err(|err| McpError::internal_error(err.to_string(), None))?;
        tools.extend(pinned);
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let forwarded = match request.name.as_ref() {
            "find_tools" => {
                return Ok(self
                    .find(parse("find_tools", request.arguments)?)
                    .await?
                    .into());
            }
            "call_tool" => {
                let mut request = request;
                let call: CallArgs = parse("call_tool", request.arguments.take())?;
                request.arguments = call.arguments;
                self.forward(call.name, request)
            }
            pinned if self.pins.iter().any(|pin| pin == pinned) => {
                let name = pinned.to_string();
                self.forward(name, request)
            }
            other => {
                return Err(McpError::invalid_params(
                    format!("no tool `{other}`: call find_tools, then call_tool"),
                    None,
                ));
            }
        };
        // A call the host cancels is dropped, which cancels it downstream.
        tokio::select! {
            response = forwarded => response,
            () = context.ct.cancelled() => Err(McpError::internal_error("cancelled by the host", None)),
        }
    }
}
