//! One downstream MCP server: started over stdio, listed, called, watched and restarted.
//!
//! A supervisor task per server owns its process. It starts the server, lists its tools
//! (every page) and hands them to the catalog, then serves until the process goes: a
//! `notifications/tools/list_changed` lists again, an exit or a crash restarts it after a
//! back-off (1 s, doubling to a minute, reset once a run has lasted a minute). Calls see
//! the server's state through a watch channel: a call to a server that is down fails at
//! once with the reason, never waiting for it.

use std::process::Stdio;
use std::time::Duration;

use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::model::{CallToolRequestParams, CallToolResponse, ErrorCode, Tool};
use rmcp::service::{
    NotificationContext, Peer, QuitReason, RoleClient, RunningService, ServiceError,
};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData as McpError, ServiceExt};
use serde_json::json;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::config::ServerSpec;

/// The first wait before a restart; it doubles after each failed start.
const BACKOFF_FIRST: Duration = Duration::from_secs(1);
/// The longest wait before a restart.
const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// A run this long resets the back-off.
const STEADY: Duration = Duration::from_secs(60);
/// How long a stopping server has to exit (rmcp's graceful close: stdin closed, then
/// SIGTERM, then SIGKILL).
const STOP_WITHIN: Duration = Duration::from_secs(8);

/// The gateway's time limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// A server's start: its process, its MCP handshake and its first listing, together.
    pub start: Duration,
    /// One call, from the host's request to the server's answer; and a listing after
    /// `tools/list_changed`.
    pub call: Duration,
}

/// What a server's supervisor tells the catalog.
pub struct Listed {
    pub server: String,
    pub tools: Vec<Tool>,
}

/// Where a server stands.
#[derive(Clone)]
enum State {
    /// The first start (calls wait for it, up to the start limit), or a restart after
    /// a failure (calls fail at once, with that failure).
    Starting {
        after: Option<String>,
    },
    Up(Peer<RoleClient>),
    Down {
        reason: String,
        retry_at: Instant,
    },
    Stopped,
}

/// A handle on one server, for calls.
#[derive(Clone)]
pub struct Downstream {
    pub name: String,
    state: watch::Receiver<State>,
    limits: Limits,
}

impl Downstream {
    /// Starts the server's supervisor.
    pub fn spawn(
        name: String,
        spec: ServerSpec,
        limits: Limits,
        listed: mpsc::UnboundedSender<Listed>,
        shutdown: watch::Receiver<bool>,
    ) -> (Downstream, tokio::task::JoinHandle<()>) {
        let (state_tx, state) = watch::channel(State::Starting { after: None });
        let supervisor = Supervisor {
            name: name.clone(),
            spec,
            limits,
            state: state_tx,
            listed,
            shutdown,
        };
        let task = tokio::spawn(supervisor.run());
        (
            Downstream {
                name,
                state,
                limits,
            },
            task,
        )
    }

    /// Waits for the end of the server's first start: whether it came up.
    pub async fn first_start(&self) -> bool {
        let mut state = self.state.clone();
        match state
            .wait_for(|state| !matches!(state, State::Starting { .. }))
            .await
        {
            Ok(state) => matches!(*state, State::Up(_)),
            Err(_) => false,
        }
    }

    /// Whether the server is up now.
    pub fn is_up(&self) -> bool {
        matches!(*self.state.borrow(), State::Up(_))
    }

    /// Calls the tool `params` names (as the server knows it) with the host's arguments,
    /// metadata and input responses; the server's answer comes back unchanged.
    ///
    /// # Errors
    ///
    /// An MCP error naming the server: it is down (with the reason and when it is
    /// retried), did not start within the start limit, did not answer within the call
    /// limit, or closed its connection during the call. An error the server answers keeps
    /// its code and data, its message prefixed with the server's name.
    pub async fn call(&self, params: CallToolRequestParams) -> Result<CallToolResponse, McpError> {
        let peer = self.peer().await?;
        let tool = params.name.to_string();
        // Dropped at the time limit (or when the host cancels), the request is cancelled
        // downstream (`notifications/cancelled`).
        match tokio::time::timeout(self.limits.call, peer.call_tool_once(params)).await {
            Err(_) => Err(self.error(format!(
                "did not answer `{tool}` within {} s (the call limit, --call-timeout)",
                self.limits.call.as_secs_f64()
            ))),
            Ok(Ok(response)) => Ok(response),
            Ok(Err(ServiceError::McpError(mut error))) => {
                error.message = format!("server `{}`: {}", self.name, error.message).into();
                Err(error)
            }
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                Err(self.error(format!(
                    "closed its connection during `{tool}` (it is restarted; the call was not retried)"
                )))
            }
            Ok(Err(other)) => Err(self.error(format!("`{tool}` failed: {other}"))),
        }
    }

    /// The server's peer. A call during the server's first start waits for it (up to
    /// the start limit); during a restart, it fails at once.
    async fn peer(&self) -> Result<Peer<RoleClient>, McpError> {
        let mut state = self.state.clone();
        let settled = tokio::time::timeout(
            self.limits.start,
            state.wait_for(|state| !matches!(state, State::Starting { after: None })),
        )
        .await;
        let current = match settled {
            Err(_) => {
                return Err(self.error(format!(
                    "is still starting after {} s (the start limit, --start-timeout)",
                    self.limits.start.as_secs_f64()
                )));
            }
            Ok(Err(_)) => State::Stopped,
            Ok(Ok(current)) => current.clone(),
        };
        match current {
            State::Up(peer) => Ok(peer),
            State::Down { reason, retry_at } => {
                let wait = retry_at.saturating_duration_since(Instant::now());
                Err(self.error(format!(
                    "is not running: {reason}; next start in {:.0} s",
                    wait.as_secs_f64().ceil()
                )))
            }
            State::Starting {
                after: Some(reason),
            } => Err(self.error(format!("is restarting after: {reason}"))),
            State::Starting { after: None } | State::Stopped => {
                Err(self.error("is stopped".to_string()))
            }
        }
    }

    fn error(&self, what: String) -> McpError {
        McpError::new(
            ErrorCode::INTERNAL_ERROR,
            format!("server `{}` {what}", self.name),
            Some(json!({ "server": self.name })),
        )
    }
}

struct Supervisor {
    name: String,
    spec: ServerSpec,
    limits: Limits,
    state: watch::Sender<State>,
    listed: mpsc::UnboundedSender<Listed>,
    shutdown: watch::Receiver<bool>,
}

impl Supervisor {
    async fn run(mut self) {
        let mut backoff = BACKOFF_FIRST;
        let mut after = None;
        while !*self.shutdown.borrow() {
            self.state.send_replace(State::Starting { after });
            let began = Instant::now();
            let reason = match self.serve().await {
                Ok(()) => break,
                Err(reason) => reason,
            };
            if began.elapsed() >= STEADY {
                backoff = BACKOFF_FIRST;
            }
            tracing::warn!(server = %self.name, "{reason}; restarting in {} s", backoff.as_secs());
            let retry_at = Instant::now() + backoff;
            self.state.send_replace(State::Down {
                reason: reason.clone(),
                retry_at,
            });
            after = Some(reason);
            tokio::select! {
                () = tokio::time::sleep_until(retry_at) => {}
                _ = self.shutdown.changed() => {}
            }
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
        self.state.send_replace(State::Stopped);
    }

    /// One run of the server: `Ok` when the gateway stops it, the reason it ended
    /// otherwise.
    async fn serve(&mut self) -> Result<(), String> {
        let (changed_tx, mut changed) = mpsc::unbounded_channel();
        // The start limit covers the process, the handshake and the first listing.
        let deadline = Instant::now() + self.limits.start;
        let late = || {
            format!(
                "did not start and list its tools within {} s (the start limit, --start-timeout)",
                self.limits.start.as_secs_f64()
            )
        };
        let mut shutdown = self.shutdown.clone();
        let (running, _group) = tokio::select! {
            connected = tokio::time::timeout_at(deadline, self.connect(changed_tx)) => {
                connected.map_err(|_| late())??
            }
            // Dropped unfinished, the child and its group are killed.
            () = stopping(&mut shutdown) => return Ok(()),
        };
        let peer = running.peer().clone();
        let stop = running.cancellation_token();
        let waiting = running.waiting();
        tokio::pin!(waiting);
        let first = tokio::select! {
            listed = tokio::time::timeout_at(deadline, self.list(&peer)) => {
                listed.unwrap_or_else(|_| Err(late()))
            }
            ended = &mut waiting => Err(format!("ended before listing its tools: {}", ended_how(ended))),
            () = stopping(&mut shutdown) => Err(String::new()),
        };
        if let Err(reason) = first {
            // Calls see why at once, not "still starting", while the server stops.
            self.state.send_replace(State::Down {
                reason: reason.clone(),
                retry_at: Instant::now(),
            });
            stop.cancel();
            let _ = tokio::time::timeout(STOP_WITHIN, &mut waiting).await;
            return if *self.shutdown.borrow() {
                Ok(())
            } else {
                Err(reason)
            };
        }
        self.state.send_replace(State::Up(peer.clone()));
        tracing::info!(server = %self.name, "started");
        loop {
            tokio::select! {
                ended = &mut waiting => return Err(format!("ended: {}", ended_how(ended))),
                Some(()) = changed.recv() => {
                    // Several notifications in a row make one listing.
                    while changed.try_recv().is_ok() {}
                    let listed = tokio::select! {
                        listed = tokio::time::timeout(self.limits.call, self.list(&peer)) => {
                            listed.unwrap_or_else(|_| Err(format!(
                                "did not list its tools within {} s",
                                self.limits.call.as_secs_f64()
                            )))
                        }
                        // The loop's own branch below sees the stop (it waits for the
                        // value, not for a change).
                        () = stopping(&mut shutdown) => Ok(()),
                    };
                    if let Err(reason) = listed {
                        tracing::warn!(server = %self.name, "{reason}");
                    }
                }
                () = stopping(&mut shutdown) => {
                    stop.cancel();
                    let _ = tokio::time::timeout(STOP_WITHIN, &mut waiting).await;
                    return Ok(());
                }
            }
        }
    }

    async fn connect(
        &self,
        changed: mpsc::UnboundedSender<()>,
    ) -> Result<(RunningService<RoleClient, Watcher>, Group), String> {
        let mut command = tokio::process::Command::new(&self.spec.command);
        command.args(&self.spec.args).envs(&self.spec.env);
        if let Some(cwd) = &self.spec.cwd {
            command.current_dir(cwd);
        }
        // A group of its own: stopping the server signals the processes a launcher such
        // as `npx` or `uvx` started too.
        let mut command = CommandWrap::from(command);
        command.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
        let (transport, _) = TokioChildProcess::builder(command)
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|err| format!("cannot start `{}`: {err}", self.spec.command))?;
        let group = Group(transport.id());
        let running = Watcher { changed }
            .serve(transport)
            .await
            .map_err(|err| format!("failed its MCP handshake: {err}"))?;
        Ok((running, group))
    }

    /// Lists every page of the server's tools and hands them to the catalog (the caller
    /// bounds it in time).
    async fn list(&self, peer: &Peer<RoleClient>) -> Result<(), String> {
        let tools = peer
            .list_all_tools()
            .await
            .map_err(|err| format!("cannot list its tools: {err}"))?;
        tracing::info!(server = %self.name, tools = tools.len(), "listed");
        self.listed
            .send(Listed {
                server: self.name.clone(),
                tools,
            })
            .map_err(|_| "the gateway is stopping".to_string())
    }
}

/// Resolves once the gateway stops (at once if it has): it waits for the value, so a
/// stop seen by one `select!` branch is seen by the next too.
async fn stopping(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

/// A server's process group, killed (SIGKILL) when a run of the server ends, however it
/// ends: what the server or its launcher left behind goes with it, even when the
/// runtime is dropped.
struct Group(Option<u32>);

impl Drop for Group {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pgid) = self.0.and_then(|pid| libc::pid_t::try_from(pid).ok()) {
            // SAFETY: killpg only sends a signal; a group already gone is ESRCH.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

fn ended_how(ended: Result<QuitReason, tokio::task::JoinError>) -> String {
    match ended {
        Ok(QuitReason::Closed) => "its process exited or closed its stdout".to_string(),
        Ok(QuitReason::Cancelled) => "stopped".to_string(),
        Ok(QuitReason::JoinError(err)) | Err(err) => err.to_string(),
        Ok(other) => format!("{other:?}"),
    }
}

/// The gateway's client side: it only listens for tool list changes.
struct Watcher {
    changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Watcher {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let _ = self.changed.send(());
        std::future::ready(())
    }
}
