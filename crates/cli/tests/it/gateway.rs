//! `ruche gateway`: one MCP server in front of others. Driven as a host drives it (JSON-RPC
//! lines on stdio) in front of `ruche mcp` and a hand-written server that misbehaves on
//! request (`tests/gateway/faulty_server.py`, plain Python): listing, finding, calling,
//! pinned tools, pagination, a tool list that changes, a server killed mid-call (error,
//! then restarted), one that never answers (timeout), garbage on a server's stdout,
//! servers that never start, malformed frames from the host, environments kept apart,
//! nothing written outside the index. The real third-party servers are driven by the MCP
//! Python SDK in `real_servers_behind_the_gateway`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::mcp::{Session, assert_response, indexed};
use crate::run::OutputWithin;

const FAULTY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/gateway/faulty_server.py"
);

/// A Python 3 to run the hand-written server, or a skip.
fn python() -> Option<&'static str> {
    let found = Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if found {
        Some("python3")
    } else {
        crate::run::skip_without("python3", "Debian's python3");
        None
    }
}

fn faulty(python: &str, state: &Path, extra: &[&str]) -> Value {
    let mut args = vec![json!(FAULTY), json!(state)];
    args.extend(extra.iter().map(|arg| json!(arg)));
    json!({"command": python, "args": args})
}

fn write_config(dir: &Path, servers: Value) -> PathBuf {
    let path = dir.join("servers.json");
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
    path
}

/// Starts the gateway in `cwd` and performs the handshake.
fn gateway(cwd: &Path, config: &Path, extra: &[&str], stderr: Stdio) -> (Session, Value) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ruche"));
    command
        .current_dir(cwd)
        .args(["gateway", "--config", config.to_str().unwrap()])
        .args(extra)
        .env("RUCHE_LOG", "info")
        .env("RUCHE_LOG_FORMAT", "json")
        .stderr(stderr);
    let mut session = Session::spawn_command(command);
    let init = session.initialize();
    (session, init)
}

/// Calls a tool through the gateway; the response (`result` or `error`).
fn call(session: &mut Session, name: &str, arguments: Value) -> Value {
    session.request("tools/call", json!({"name": name, "arguments": arguments}))
}

fn forward(session: &mut Session, name: &str, arguments: Value) -> Value {
    call(
        session,
        "call_tool",
        json!({"name": name, "arguments": arguments}),
    )
}

fn text(response: &Value) -> String {
    let result = &response["result"];
    assert_ne!(result["isError"], json!(true), "{response}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {response}"))
        .to_string()
}

fn found(session: &mut Session, arguments: Value) -> Vec<Value> {
    let response = call(session, "find_tools", arguments);
    response["result"]["structuredContent"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{response}"))
        .clone()
}

fn names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_string())
        .collect()
}

/// The names the host's `tools/list` gives, and the response.
fn tools_listed(session: &mut Session) -> (Vec<String>, Value) {
    let list = session.request("tools/list", json!({}));
    let listed = list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_string())
        .collect();
    (listed, list)
}

/// The error of a response, which must be a JSON-RPC error naming `what`.
fn error_naming(response: &Value, code: i64, what: &str) {
    assert_eq!(response["error"]["code"], json!(code), "{response}");
    let message = response["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(what), "{what} not named: {response}");
}

/// Retries `check` for up to 20 s: restarts and re-listings happen in the background.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not within 20 s");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_gateway_finds_and_calls_tools_and_contains_every_fault() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("cwd");
    std::fs::create_dir(&cwd).unwrap();
    let ruche_index = indexed(dir.path());
    let state = |name: &str| dir.path().join("state").join(name);
    let mut faulty_env = faulty(python, &state("faulty"), &[]);
    faulty_env["env"] = json!({"GATEWAY_TEST_SECRET": "hunter2-only-for-faulty"});
    let config = write_config(
        dir.path(),
        json!({
            "faulty": faulty_env,
            "noisy": faulty(python, &state("noisy"), &["--garbage-first"]),
            "paged": faulty(python, &state("paged"), &["--tools", "250"]),
            "ruche": {"command": env!("CARGO_BIN_EXE_ruche"), "args": ["mcp", ruche_index]},
            "missing": {"command": dir.path().join("no-such-server")},
            "mute": {"command": "sh", "args": ["-c", "echo not an MCP server; exec sleep 600"]},
        }),
    );
    let (mut session, init) = gateway(
        &cwd,
        &config,
        &[
            "--index",
            "index",
            "--pin",
            "faulty__echo",
            "--pin",
            "faulty__grown",
            "--call-timeout",
            "2",
            "--start-timeout",
            "3",
        ],
        Stdio::piped(),
    );
    assert_eq!(
        init["result"]["serverInfo"]["name"],
        json!("ruche-gateway"),
        "{init}"
    );

    // The host lists two tools and the pinned one, whatever the servers behind.
    let (listed, list) = tools_listed(&mut session);
    assert_eq!(
        listed,
        ["find_tools", "call_tool", "faulty__echo"],
        "{list}"
    );

    // Finding: the short list names the tool with its schema, ready to call.
    let tools = found(
        &mut session,
        json!({"task": "repeat this text back to me unchanged"}),
    );
    assert_eq!(names(&tools)[0], "faulty__echo", "{tools:?}");
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["text"]));
    assert!(tools.len() <= 10, "a short list: {tools:?}");
    let tools = found(
        &mut session,
        json!({"task": "search the agent's rules for a user message"}),
    );
    assert!(
        names(&tools).contains(&"ruche__search_rules".to_string()),
        "{tools:?}"
    );
    let tools = found(
        &mut session,
        json!({"task": "Numbered tool 242", "server": "paged"}),
    );
    assert_eq!(
        names(&tools)[0],
        "paged__tool_242",
        "every page listed: {tools:?}"
    );
    assert!(names(&tools).iter().all(|name| name.starts_with("paged__")));

    // Calling: the server's result comes back unchanged; garbage on its stdout is skipped.
    let echoed = forward(&mut session, "faulty__echo", json!({"text": "hello"}));
    assert_eq!(text(&echoed), "hello");
    assert_eq!(echoed["result"]["isError"], json!(false));
    let pinned = call(&mut session, "faulty__echo", json!({"text": "pinned"}));
    assert_eq!(text(&pinned), "pinned");
    assert_eq!(
        text(&forward(&mut session, "noisy__echo", json!({"text": "x"}))),
        "x"
    );
    let unknown = forward(&mut session, "faulty__nope", json!({}));
    assert_eq!(
        unknown["result"]["isError"],
        json!(true),
        "the server's own error result: {unknown}"
    );
    let stats = forward(&mut session, "ruche__stats", json!({}));
    assert!(stats["result"]["structuredContent"].is_object(), "{stats}");

    // A server's env goes to that server only.
    let secret = forward(
        &mut session,
        "faulty__env",
        json!({"name": "GATEWAY_TEST_SECRET"}),
    );
    assert_eq!(text(&secret), "hunter2-only-for-faulty");
    let other = forward(
        &mut session,
        "noisy__env",
        json!({"name": "GATEWAY_TEST_SECRET"}),
    );
    assert_eq!(text(&other), "");

    // Servers that never start: their own tools fail, naming them, at once.
    let started = Instant::now();
    error_naming(
        &forward(&mut session, "missing__anything", json!({})),
        -32603,
        "`missing`",
    );
    error_naming(
        &forward(&mut session, "mute__anything", json!({})),
        -32603,
        "`mute`",
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    error_naming(
        &forward(&mut session, "nobody__x", json!({})),
        -32602,
        "nobody",
    );
    error_naming(
        &forward(&mut session, "no-separator", json!({})),
        -32602,
        "SERVER__TOOL",
    );
    error_naming(
        &call(&mut session, "find_tools", json!({"task": "x", "top_k": 0})),
        -32602,
        "top_k",
    );
    error_naming(
        &call(
            &mut session,
            "find_tools",
            json!({"task": "x", "server": "nobody"}),
        ),
        -32602,
        "nobody",
    );
    error_naming(
        &call(&mut session, "paged__tool_1", json!({})),
        -32602,
        "find_tools",
    );

    // A server that never answers: the call times out, the server goes on serving.
    let started = Instant::now();
    error_naming(
        &forward(&mut session, "faulty__hang", json!({})),
        -32603,
        "within 2 s",
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        text(&forward(
            &mut session,
            "faulty__echo",
            json!({"text": "after"})
        )),
        "after"
    );

    // A server killed mid-call: an error naming it, then it is restarted.
    error_naming(
        &forward(&mut session, "faulty__die", json!({})),
        -32603,
        "`faulty`",
    );
    eventually("faulty restarted", || {
        let starts = forward(&mut session, "faulty__starts", json!({}));
        starts["result"]["content"][0]["text"] == json!("2")
    });
    assert_eq!(
        text(&forward(&mut session, "noisy__echo", json!({"text": "y"}))),
        "y"
    );

    // A tool list that changes while the gateway runs is indexed again.
    assert_eq!(
        text(&forward(&mut session, "faulty__grow", json!({}))),
        "grown"
    );
    eventually("the new tool found", || {
        let tools = found(&mut session, json!({"task": "water the tomato plants"}));
        names(&tools).first().map(String::as_str) == Some("faulty__grown")
    });
    // … and a pinned tool that appears is listed to the host, which is told.
    let told = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    eventually("the host told", || {
        session.request("ping", json!({}));
        session.skipped.contains(&told)
    });
    let (listed, list) = tools_listed(&mut session);
    assert_eq!(
        listed,
        ["find_tools", "call_tool", "faulty__echo", "faulty__grown"],
        "{list}"
    );

    // Malformed frames from the host: JSON-RPC errors, and the gateway goes on.
    let answer = session.answer_to(b"{not json");
    assert_eq!(answer["error"]["code"], json!(-32700), "{answer}");
    assert_eq!(answer["id"], Value::Null);
    let answer = session.answer_to(br#"{"jsonrpc":"2.0","id":77}"#);
    assert_eq!(answer["error"]["code"], json!(-32600), "{answer}");
    let answer =
        session.answer_to(br#"{"jsonrpc":"2.0","id":78,"method":"tools/call","params":"x"}"#);
    assert_eq!(answer["error"]["code"], json!(-32600), "{answer}");
    let answer = session
        .answer_to(br#"{"jsonrpc":"2.0","id":79,"method":"tools/call","params":{"name":5}}"#);
    assert_eq!(answer["error"]["code"], json!(-32602), "{answer}");
    assert_response(&answer);
    session.nothing_else("after-malformed");
    assert_eq!(
        text(&forward(
            &mut session,
            "faulty__echo",
            json!({"text": "still"})
        )),
        "still"
    );

    // The host leaves: the gateway stops its servers and exits.
    let faulty_pid: i32 = std::fs::read_to_string(state("faulty").join("pid"))
        .unwrap()
        .parse()
        .unwrap();
    let (status, log) = session.close();
    assert!(status.success(), "{status:?}: {log}");
    // SAFETY: kill with signal 0 only checks that the process exists.
    eventually(
        "the servers stopped",
        || unsafe { libc::kill(faulty_pid, 0) } != 0,
    );
    assert!(!log.contains("hunter2"), "a server's env was logged: {log}");
    // Nothing written outside the index (the working directory holds it alone).
    let written: Vec<_> = std::fs::read_dir(&cwd)
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(written, ["index"]);

    // A restart with the same index re-embeds nothing that did not change.
    let (mut session, _) = gateway(
        &cwd,
        &config,
        &["--index", "index", "--start-timeout", "3"],
        Stdio::piped(),
    );
    let tools = found(
        &mut session,
        json!({"task": "repeat this text back to me unchanged"}),
    );
    assert_eq!(names(&tools)[0], "faulty__echo");
    let (_, log) = session.close();
    let indexed = indexed_events(&log);
    assert_eq!(indexed.get("paged"), Some(&0), "{indexed:?}");
    assert_eq!(indexed.get("ruche"), Some(&0), "{indexed:?}");
}

#[test]
fn sigterm_stops_the_gateway_and_every_process_of_its_servers() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    // `sh` as a launcher (as `npx` or `uvx` are): the server is its child, and lingers
    // after its stdin closes.
    let script = format!(
        "{python} {FAULTY} {} --linger; true",
        state.to_str().unwrap()
    );
    let config = write_config(
        dir.path(),
        json!({"wrapped": {"command": "sh", "args": ["-c", script]}}),
    );
    let (mut session, _) = gateway(dir.path(), &config, &[], Stdio::piped());
    assert_eq!(
        text(&forward(
            &mut session,
            "wrapped__echo",
            json!({"text": "up"})
        )),
        "up"
    );
    sigterm_stops(session, &state.join("pid"));

    // The same before the host's handshake.
    std::fs::remove_file(state.join("pid")).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_ruche"));
    command
        .current_dir(dir.path())
        .args(["gateway", "--config", config.to_str().unwrap()])
        .stderr(Stdio::piped());
    let session = Session::spawn_command(command);
    eventually("the server started", || state.join("pid").exists());
    std::thread::sleep(Duration::from_millis(300));
    sigterm_stops(session, &state.join("pid"));
}

/// SIGTERM to the gateway: it exits with success and the server whose pid `pid_file`
/// holds is gone.
fn sigterm_stops(session: Session, pid_file: &Path) {
    let server: i32 = std::fs::read_to_string(pid_file).unwrap().parse().unwrap();
    crate::run::signal(session.pid(), libc::SIGTERM);
    let (status, log) = session.wait_exit();
    assert!(status.success(), "{status:?}: {log}");
    // SAFETY: kill with signal 0 only checks that the process exists.
    eventually(
        "the server stopped",
        || unsafe { libc::kill(server, 0) } != 0,
    );
}

/// The `upserted` count of each server's `indexed` log events (JSON lines), summed.
fn indexed_events(log: &str) -> std::collections::BTreeMap<String, u64> {
    let mut counts = std::collections::BTreeMap::new();
    for line in log.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if event["message"] == json!("indexed") || event["fields"]["message"] == json!("indexed") {
            let fields = if event["fields"].is_object() {
                &event["fields"]
            } else {
                &event
            };
            let server = fields["server"].as_str().unwrap_or_default().to_string();
            *counts.entry(server).or_default() += fields["upserted"].as_u64().unwrap_or(0);
        }
    }
    counts
}

#[test]
fn bad_configs_and_pins_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let run = |config: &str, extra: &[&str]| {
        let path = dir.path().join("servers.json");
        std::fs::write(&path, config).unwrap();
        Command::new(env!("CARGO_BIN_EXE_ruche"))
            .args(["gateway", "--config", path.to_str().unwrap()])
            .args(extra)
            .env_remove("RUCHE_CONFIG")
            .stdin(Stdio::null())
            .output_within()
    };
    let cases: [(&str, &[&str], &str); 4] = [
        (
            r#"{"mcpServers": {"a": {"command": ["x"]}}}"#,
            &[],
            "mcpServers.a.command",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x"}}}"#,
            &["--pin", "b__t"],
            "--pin b__t",
        ),
        (
            r#"{"mcpServers": {"a": {"command": "x"}}}"#,
            &["--call-timeout", "0"],
            "--call-timeout",
        ),
        ("[1, 2", &[], "servers.json"),
    ];
    for (config, extra, named) in cases {
        let output = run(config, extra);
        assert_eq!(
            output.status.code(),
            Some(2).or(output.status.code()),
            "{output:?}"
        );
        assert!(!output.status.success(), "{config}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(named), "{config} {extra:?}: {stderr}");
    }
    let output = Command::new(env!("CARGO_BIN_EXE_ruche"))
        .args(["gateway"])
        .env_remove("RUCHE_CONFIG")
        .stdin(Stdio::null())
        .output_within();
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("--config"),
        "{output:?}"
    );
}

#[test]
fn real_servers_behind_the_gateway() {
    // `.ci/run` installs them: the MCP Python SDK, `mcp-server-time` and `mcp-server-git`
    // in one venv (`RUCHE_MCP_PYTHON`), the three npm servers under
    // `RUCHE_MCP_NODE_SERVERS`.
    let install = "RUCHE_MCP_PYTHON naming a Python with PyPI's mcp, mcp-server-time and \
                   mcp-server-git beside it, and RUCHE_MCP_NODE_SERVERS a folder where \
                   `npm install @modelcontextprotocol/server-filesystem \
                   @modelcontextprotocol/server-memory @modelcontextprotocol/server-everything` \
                   ran; .ci/run sets both";
    let (Some(python), Some(node_servers)) = (
        std::env::var_os("RUCHE_MCP_PYTHON"),
        std::env::var_os("RUCHE_MCP_NODE_SERVERS"),
    ) else {
        crate::run::skip_without("the MCP servers from npm and PyPI", install);
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/gateway/real_servers.py");
    let output = Command::new(python)
        .args([
            script.as_ref(),
            env!("CARGO_BIN_EXE_ruche").as_ref(),
            node_servers.as_os_str(),
            work.path().as_os_str(),
        ])
        .env_remove("RUCHE_CONFIG")
        .output_within();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("all checks passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
