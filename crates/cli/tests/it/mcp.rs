//! `ruche mcp`: the initialize handshake, the tool list, and every tool called over stdio
//! as an agent host does, one JSON-RPC message per line; the protocol's errors for every
//! kind of malformed frame (and a seeded fuzz of them); the official MCP Python SDK's
//! client when `RUCHE_MCP_PYTHON` names a Python that has it.

use crate::run::OutputWithin;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::cli::assert_code;

/// How long an answer may take (a tool call opens the index; tests run side by side).
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// A running `ruche mcp` (or `ruche gateway`) and its pipes; stdout is read by a thread,
/// one line at a time.
pub(crate) struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    /// What a thread reading a piped stderr to its end read.
    stderr: Option<mpsc::Receiver<String>>,
    lines: mpsc::Receiver<Vec<u8>>,
    next_id: u64,
    /// The messages [`Session::request`] read past while waiting for its answer
    /// (notifications from the server).
    pub(crate) skipped: Vec<Value>,
}

impl Session {
    /// Starts the server and performs the handshake; returns it with the server's
    /// initialize result.
    fn start(dir: &str, extra: &[&str]) -> (Session, Value) {
        let mut session = Session::spawn(dir, extra);
        let init = session.initialize();
        (session, init)
    }

    /// The initialize request and the initialized notification; the server's answer.
    pub(crate) fn initialize(&mut self) -> Value {
        let init = self.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "ruche-test", "version": "1"},
            }),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        init
    }

    /// Starts the server, without the handshake.
    fn spawn(dir: &str, extra: &[&str]) -> Session {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ruche"));
        command
            .args(["mcp", dir])
            .args(extra)
            // rmcp warns of every error it answers: the tests make hundreds on purpose.
            .env("RUCHE_LOG", "warn,rmcp=error")
            .stderr(Stdio::inherit());
        Session::spawn_command(command)
    }

    /// Starts a command set up by the caller (its arguments, environment and stderr),
    /// with piped stdin and stdout, without the handshake.
    pub(crate) fn spawn_command(mut command: Command) -> Session {
        let mut child = command
            .env_remove("RUCHE_CONFIG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = Some(child.stdin.take().unwrap());
        let stderr = child.stderr.take().map(|mut pipe| {
            let (sender, log) = mpsc::channel();
            std::thread::spawn(move || {
                let mut read = String::new();
                let _ = std::io::Read::read_to_string(&mut pipe, &mut read);
                let _ = sender.send(read);
            });
            log
        });
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            loop {
                let mut line = Vec::new();
                match stdout.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if sender.send(line).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Session {
            child,
            stdin,
            stderr,
            lines,
            next_id: 1,
            skipped: Vec::new(),
        }
    }

    pub(crate) fn send(&mut self, message: &Value) {
        self.send_raw(message.to_string().as_bytes());
    }

    /// Sends one frame as it is, and its newline.
    pub(crate) fn send_raw(&mut self, frame: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(frame).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message on stdout; every line must be one JSON value.
    pub(crate) fn next(&mut self) -> Value {
        let line = self.lines.recv_timeout(ANSWER_WITHIN).unwrap_or_else(|_| {
            panic!(
                "no message on stdout within {ANSWER_WITHIN:?} (server alive: {:?})",
                self.child.try_wait()
            )
        });
        serde_json::from_slice(&line).unwrap_or_else(|err| {
            panic!(
                "not JSON on stdout: {:?}: {err}",
                String::from_utf8_lossy(&line)
            )
        })
    }

    /// Sends a request and returns its response (`result` or `error` object).
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.next();
            if message["id"] == json!(id) {
                return message;
            }
            self.skipped.push(message);
        }
    }

    /// Sends a frame that must get one answer, and returns it (the very next message).
    pub(crate) fn answer_to(&mut self, frame: &[u8]) -> Value {
        self.send_raw(frame);
        let answer = self.next();
        assert_response(&answer);
        answer
    }

    /// Proves that nothing was answered since the last answer read: a ping's answer is
    /// the next message.
    pub(crate) fn nothing_else(&mut self, tag: &str) {
        let id = format!("ping-{tag}");
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        let answer = self.next();
        assert_eq!(
            answer["id"],
            json!(id),
            "an answer nobody asked for: {answer}"
        );
        assert!(answer["result"].is_object(), "{answer}");
    }

    /// Calls a tool; returns its structured result and whether it is an error.
    pub(crate) fn call(&mut self, name: &str, arguments: Value) -> (Value, bool) {
        let response = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        let result = &response["result"];
        assert!(result.is_object(), "{name}: {response}");
        (
            result["structuredContent"].clone(),
            result["isError"] == json!(true),
        )
    }

    /// The server is still running.
    pub(crate) fn assert_alive(&mut self) {
        assert_eq!(self.child.try_wait().unwrap(), None, "the server exited");
    }
}

/// A JSON-RPC 2.0 response: `"jsonrpc": "2.0"`, an `id` member (null when the request's
/// could not be read), and either a `result` or an `error` with an integer code and a
/// message.
pub(crate) fn assert_response(message: &Value) {
    let object = message
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {message}"));
    assert_eq!(object.get("jsonrpc"), Some(&json!("2.0")), "{message}");
    assert!(object.contains_key("id"), "no `id` member: {message}");
    match (object.get("result"), object.get("error")) {
        (Some(_), None) => {}
        (None, Some(error)) => {
            assert!(error["code"].is_i64(), "{message}");
            assert!(error["message"].is_string(), "{message}");
        }
        _ => panic!("neither a result nor an error: {message}"),
    }
}

/// An error response with this code and this id.
fn assert_error(message: &Value, code: i64, id: &Value) {
    assert_response(message);
    assert_eq!(message["error"]["code"], code, "{message}");
    assert_eq!(message.get("id"), Some(id), "{message}");
}

impl Session {
    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits (up to 30 s) for the process to exit, stdin still open (after a signal);
    /// its exit status and stderr (when piped).
    pub(crate) fn wait_exit(self) -> (std::process::ExitStatus, String) {
        self.finish(false)
    }

    /// Closes stdin, as a host that leaves, and waits (up to 30 s) for the process to
    /// exit; its exit status and stderr (when piped).
    pub(crate) fn close(self) -> (std::process::ExitStatus, String) {
        self.finish(true)
    }

    fn finish(mut self, close_stdin: bool) -> (std::process::ExitStatus, String) {
        if close_stdin {
            drop(self.stdin.take());
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "still running after 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        // A child of the process that kept its stderr open would hold the pipe: wait a
        // little, then say so.
        let log = self.stderr.take().map(|log| {
            log.recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| "(stderr still open 10 s after the exit)".to_string())
        });
        (status, log.unwrap_or_default())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const RULES: &str = r#"{"id": "refund", "condition": "the customer asks for a refund", "action": "explain the refund policy", "patterns": ["I want my money back"]}
{"id": "order-status", "condition": "the customer asks where their order is", "action": "look up the order and give its status", "patterns": ["where is my package?"]}
"#;

pub(crate) fn indexed(dir: &Path) -> String {
    let rules = dir.join("rules.jsonl");
    std::fs::write(&rules, RULES).unwrap();
    let index = dir.join("index").to_str().unwrap().to_string();
    let output = Command::new(env!("CARGO_BIN_EXE_ruche"))
        .args(["index", &index, "--rules", rules.to_str().unwrap(), "-q"])
        .env_remove("RUCHE_CONFIG")
        .output_within();
    assert_code(&output, 0);
    index
}

fn ids(result: &Value) -> Vec<String> {
    result["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results: {result}"))
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn an_agent_host_lists_and_calls_every_tool_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let index = indexed(dir.path());
    let (mut mcp, init) = Session::start(&index, &[]);
    let result = &init["result"];
    assert_eq!(result["protocolVersion"], "2025-06-18", "{init}");
    assert_eq!(result["serverInfo"]["name"], "ruche");
    assert!(result["capabilities"]["tools"].is_object(), "{init}");

    let list = mcp.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap().clone();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for expected in [
        "get_context",
        "search_rules",
        "search_memory",
        "find_scenario",
        "find_tools",
        "remember",
        "add_rule",
        "disable_rule",
        "forget",
        "feedback",
        "stats",
    ] {
        assert!(names.contains(&expected), "{expected} missing: {names:?}");
    }
    let search_rules = &tools[names.iter().position(|n| *n == "search_rules").unwrap()];
    assert_eq!(search_rules["inputSchema"]["required"], json!(["message"]));
    assert!(search_rules["description"].as_str().unwrap().len() > 80);

    // Search rules: the message is the only required argument; results carry the rule,
    // a score and a why.
    let (found, error) = mcp.call("search_rules", json!({"message": "I want my money back"}));
    assert!(!error, "{found}");
    assert_eq!(ids(&found)[0], "refund");
    let first = &found["results"][0];
    assert_eq!(first["action"], "explain the refund policy");
    assert!(
        first["why"].as_str().unwrap().contains("relevance"),
        "{first}"
    );
    let query_id = found["query_id"].as_str().unwrap().to_string();
    // Nothing relevant: no results, and the reason.
    let (none, _) = mcp.call(
        "search_rules",
        json!({"message": "who won the football game"}),
    );
    assert!(ids(&none).is_empty(), "{none}");
    assert!(none["nothing_relevant"].is_string(), "{none}");

    // The whole turn in one call: the rendered block within the budget, and a turn id
    // that feedback credits.
    let (context, error) = mcp.call(
        "get_context",
        json!({"message": "I want my money back", "budget_tokens": 120}),
    );
    assert!(!error, "{context}");
    let block = context["context"].as_str().unwrap();
    assert!(
        block.contains("Rules to follow:\n- ") && block.contains("explain the refund policy"),
        "{context}"
    );
    assert!(context["tokens"].as_u64().unwrap() <= 120, "{context}");
    let turn_id = context["turn_id"].as_str().unwrap().to_string();
    let (credited, error) = mcp.call("feedback", json!({"query_id": turn_id, "useful": true}));
    assert!(!error, "{credited}");
    let (empty, error) = mcp.call(
        "get_context",
        json!({"message": "who won the football game"}),
    );
    assert!(!error, "{empty}");
    assert_eq!(empty["context"], "", "{empty}");
    assert!(empty["nothing_relevant"].is_string(), "{empty}");

    // Write tools, each visible to the next call.
    let (added, error) = mcp.call(
        "add_rule",
        json!({"id": "greet", "condition": "the conversation starts", "action": "greet the customer", "patterns": ["hello there"]}),
    );
    assert!(!error, "{added}");
    let (found, _) = mcp.call("search_rules", json!({"message": "hello there"}));
    assert_eq!(ids(&found), ["greet"]);
    let (_, error) = mcp.call("disable_rule", json!({"id": "greet"}));
    assert!(!error);
    let (found, _) = mcp.call(
        "search_rules",
        json!({"message": "hello there", "top_k": 3}),
    );
    assert!(!ids(&found).contains(&"greet".to_string()), "{found}");

    let (remembered, error) = mcp.call(
        "remember",
        json!({"content": "The customer prefers to be called in the morning", "context": "cust-1", "importance": 8}),
    );
    assert!(!error, "{remembered}");
    let memory_id = remembered["remembered"].as_str().unwrap().to_string();
    let (found, _) = mcp.call(
        "search_memory",
        json!({"query": "when should we call the customer?", "context": "cust-1"}),
    );
    assert_eq!(ids(&found), std::slice::from_ref(&memory_id));
    assert_eq!(found["results"][0]["importance"], 8);

    // Memories without an id, one after the other: each is kept (ids made within one
    // millisecond must differ, or the second would replace the first).
    let made: Vec<String> = (0..5)
        .map(|i| {
            let (remembered, error) = mcp.call("remember", json!({"content": format!("fact {i}")}));
            assert!(!error, "{remembered}");
            remembered["remembered"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(
        made.iter().collect::<std::collections::HashSet<_>>().len(),
        5,
        "{made:?}"
    );
    for id in &made {
        let (_, error) = mcp.call("forget", json!({"kind": "chunk", "id": id}));
        assert!(!error);
    }

    let (_, error) = mcp.call("feedback", json!({"query_id": query_id, "useful": true}));
    assert!(!error);
    let (stats, _) = mcp.call("stats", json!({}));
    assert_eq!(
        (stats["rules"].as_u64(), stats["chunks"].as_u64()),
        (Some(3), Some(1))
    );

    let (mine, _) = mcp.call("stats", json!({"tenant": "default"}));
    assert_eq!(
        (mine["tenant"].as_str(), mine["rules"].as_u64()),
        (Some("default"), Some(3))
    );
    let (theirs, _) = mcp.call("stats", json!({"tenant": "acme"}));
    assert_eq!(theirs["rules"], 0);

    let (_, error) = mcp.call("forget", json!({"kind": "chunk", "id": memory_id}));
    assert!(!error);
    let (stats, _) = mcp.call("stats", json!({}));
    assert_eq!(stats["chunks"], 0);

    let (found, _) = mcp.call("find_scenario", json!({"message": "I want my money back"}));
    assert!(ids(&found).is_empty(), "no scenario is stored: {found}");
    let (found, _) = mcp.call("find_tools", json!({"message": "where is my package?"}));
    assert!(ids(&found).is_empty(), "no tool is stored: {found}");

    // Errors: the engine's are tool results the model can read; malformed arguments are
    // invalid params.
    let (missing, error) = mcp.call("forget", json!({"kind": "rule", "id": "nope"}));
    assert!(error);
    assert_eq!(missing["kind"], "NotFound", "{missing}");
    let bad = mcp.request(
        "tools/call",
        json!({"name": "search_rules", "arguments": {"text": "x"}}),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(bad["error"]["message"].as_str().unwrap().contains("`text`"));

    // Between calls the server holds no lock: the CLI can write.
    drop(mcp);
}

#[test]
fn the_index_is_free_between_calls_and_read_only_offers_no_writes() {
    let dir = tempfile::tempdir().unwrap();
    let index = indexed(dir.path());
    let (mut mcp, _) = Session::start(&index, &["--read-only"]);
    let list = mcp.request("tools/list", json!({}));
    let names: Vec<String> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "get_context",
            "search_rules",
            "search_memory",
            "find_scenario",
            "find_tools",
            "stats"
        ]
    );
    let refused = mcp.request(
        "tools/call",
        json!({"name": "add_rule", "arguments": {"id": "x", "condition": "c", "action": "a"}}),
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("read-only"),
        "{refused}"
    );
    let (found, _) = mcp.call("search_rules", json!({"message": "where is my package?"}));
    assert_eq!(ids(&found)[0], "order-status");
    // While the server runs, another process writes; the next call sees it.
    let more = dir.path().join("more.jsonl");
    std::fs::write(
        &more,
        r#"{"id": "late", "condition": "the parcel is late", "action": "apologise and check the carrier", "patterns": ["my parcel is late"]}"#,
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_ruche"))
        .args(["index", &index, "--rules", more.to_str().unwrap(), "-q"])
        .env_remove("RUCHE_CONFIG")
        .output_within();
    assert_code(&output, 0);
    let (found, _) = mcp.call("search_rules", json!({"message": "my parcel is late"}));
    assert_eq!(ids(&found)[0], "late");
}

#[test]
fn malformed_frames_get_a_parse_error_with_a_null_id_and_the_server_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let index = indexed(dir.path());
    let (mut mcp, _) = Session::start(&index, &[]);
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_params = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"stats","arguments":{{"a":{}1{}}}}}}}"#,
        "[".repeat(1_000),
        "]".repeat(1_000)
    );
    for frame in [
        &b"{not json"[..],
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/list""#,
        b"\xff\xfe\x00garbage",
        b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"p\xffng\"}",
        deep.as_bytes(),
        deep_params.as_bytes(),
    ] {
        let answer = mcp.answer_to(frame);
        assert_error(&answer, -32700, &Value::Null);
    }
    mcp.nothing_else("after-parse-errors");
    let list = mcp.request("tools/list", json!({}));
    assert!(list["result"]["tools"].is_array(), "{list}");
    mcp.assert_alive();
}

#[test]
fn a_notification_or_a_bad_frame_before_the_handshake_does_not_end_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let index = indexed(dir.path());
    let mut mcp = Session::spawn(&index, &[]);
    // rmcp ends a session whose first message is not a request: these are dropped (no
    // answer is due to either), and malformed frames answered, before the handshake too.
    mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    mcp.send(&json!({"jsonrpc": "2.0", "id": "from-the-client", "result": {}}));
    assert_error(&mcp.answer_to(b"{not json"), -32700, &Value::Null);
    // A request before `initialize` is told to initialize first; a ping is answered.
    for (frame, id) in [
        (&br#"{"jsonrpc":"2.0","id":"early","method":"tools/list"}"#[..], json!("early")),
        (
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"stats","arguments":{}}}"#,
            json!(7),
        ),
    ] {
        let answer = mcp.answer_to(frame);
        assert_error(&answer, -32600, &id);
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("not initialized") && message.contains("`initialize`"), "{answer}");
    }
    let pong = mcp.answer_to(br#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#);
    assert!(pong["result"].is_object(), "{pong}");
    let answer = mcp.answer_to(br#"{"jsonrpc":"2.0","id":"init","method":"initialize"}"#);
    assert_error(&answer, -32602, &json!("init"));
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`params`"),
        "{answer}"
    );
    let init = mcp.initialize();
    assert_eq!(init["result"]["serverInfo"]["name"], "ruche", "{init}");
    let (stats, _) = mcp.call("stats", json!({}));
    assert_eq!(stats["rules"], 2, "{stats}");
    mcp.assert_alive();
}

#[test]
fn invalid_requests_get_an_invalid_request_error_with_their_id() {
    let dir = tempfile::tempdir().unwrap();
    let index = indexed(dir.path());
    let (mut mcp, _) = Session::start(&index, &[]);
    for (frame, id) in [
        (r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#, json!(7)),
        (r#"{"id":8,"method":"ping"}"#, json!(8)),
        (r#"{"jsonrpc":"2.0","id":"nine","method":5}"#, json!("nine")),
        (r#"{"jsonrpc":"2.0","id":10}"#, json!(10)),
        (
            r#"{"jsonrpc":"2.0","id":11,"method":"ping","params":"p"}"#,
            json!(11),
        ),
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, json!(1.5)),
        (
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            Value::Null,
        ),
        (r#"{"jsonrpc":"2.0","method":7}"#, Value::Null),
        (
            r#"[{"jsonrpc":"2.0","id":12,"method":"ping"}]"#,
            Value::Null,
        ),
        ("[]", Value::Null),
        ("42", Value::Null),
        (r#""a string""#, Value::Null),
    ] {
        let answer = mcp.answer_to(frame.as_bytes());
        assert_error(&answer, -32600, &id);
    }
    // A notification (no id) is never answered, whatever its method; nor is a response.
    for frame in [
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/no-such-thing","params":{"x":1}}"#,
        r#"{"jsonrpc":"2.0","method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","id":"from-the-client","result":{}}"#,
        "   ",
    ] {
        mcp.send_raw(frame.as_bytes());
        mcp.nothing_else(frame);
    }
    mcp.assert_alive();
}

#[test]
fn tools_call_without_params_or_a_name_is_invalid_params() {
    let dir = tempfile::tempdir().unwrap();
    let index = indexed(dir.path());
    let (mut mcp, _) = Session::start(&index, &[]);
    for (frame, id, names) in [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            json!(1),
            "params",
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":null}"#,
            json!(2),
            "params",
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}}"#,
            json!(3),
            "name",
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"arguments":{}}}"#,
            json!(4),
            "name",
        ),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":5}}"#,
            json!(5),
            "string",
        ),
        (
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"stats","arguments":[]}}"#,
            json!(6),
            "map",
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[]}"#,
            json!(7),
            "object",
        ),
    ] {
        let answer = mcp.answer_to(frame.as_bytes());
        assert_error(&answer, -32602, &id);
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(names), "{frame}: {message}");
    }
    // A method the server does not have is still "method not found".
    let answer = mcp.answer_to(br#"{"jsonrpc":"2.0","id":8,"method":"no/such/method"}"#);
    assert_error(&answer, -32601, &json!(8));
    mcp.assert_alive();
}

#[test]
fn tool_annotations_say_what_each_tool_does_to_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let index = indexed(dir.path());
    let (mut mcp, _) = Session::start(&index, &[]);
    let list = mcp.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    // (read only, destructive, idempotent): a write that can replace, disable or delete
    // what is stored is destructive; `remember` without an id stores a new memory each
    // time.
    let expected = [
        ("get_context", true, None, None),
        ("search_rules", true, None, None),
        ("search_memory", true, None, None),
        ("find_scenario", true, None, None),
        ("find_tools", true, None, None),
        ("stats", true, None, None),
        ("remember", false, Some(true), Some(false)),
        ("add_rule", false, Some(true), Some(true)),
        ("disable_rule", false, Some(true), Some(true)),
        ("forget", false, Some(true), Some(true)),
        ("feedback", false, Some(false), Some(true)),
    ];
    assert_eq!(tools.len(), expected.len(), "{list}");
    for (name, read_only, destructive, idempotent) in expected {
        let tool = tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"));
        let annotations = &tool["annotations"];
        assert_eq!(
            annotations["readOnlyHint"], read_only,
            "{name}: {annotations}"
        );
        assert_eq!(annotations["openWorldHint"], false, "{name}: {annotations}");
        if let Some(destructive) = destructive {
            assert_eq!(
                annotations["destructiveHint"], destructive,
                "{name}: {annotations}"
            );
        }
        if let Some(idempotent) = idempotent {
            assert_eq!(
                annotations["idempotentHint"], idempotent,
                "{name}: {annotations}"
            );
        }
    }
    // `add_rule` does replace: the same id twice leaves one rule, the second.
    for action in ["first action", "second action"] {
        let (_, error) = mcp.call(
            "add_rule",
            json!({"id": "refund", "condition": "the customer asks for a refund", "action": action}),
        );
        assert!(!error);
    }
    let (stats, _) = mcp.call("stats", json!({}));
    assert_eq!(stats["rules"], 2, "{stats}");
    let (found, _) = mcp.call("search_rules", json!({"message": "I want a refund"}));
    assert_eq!(found["results"][0]["action"], "second action", "{found}");
}

#[test]
fn numeric_arguments_outside_the_library_range_are_invalid_params() {
    let dir = tempfile::tempdir().unwrap();
    let index = indexed(dir.path());
    let (mut mcp, _) = Session::start(&index, &[]);
    let list = mcp.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    for tool in tools {
        if let Some(top_k) = tool["inputSchema"]["properties"].get("top_k") {
            // The CLI's --top-k range.
            assert_eq!(
                (&top_k["minimum"], &top_k["maximum"]),
                (&json!(1), &json!(1_000_000)),
                "{tool}"
            );
        }
    }
    let refused = |mcp: &mut Session, tool: &str, arguments: Value, field: &str| {
        let answer = mcp.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert_eq!(answer["error"]["code"], -32602, "{arguments}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("`{field}`")),
            "{arguments}: {message}"
        );
    };
    for top_k in [
        json!(0),
        json!(1_000_001),
        json!(1_000_000_000_000_000_u64),
        json!(-1),
        json!(2.5),
        json!("5"),
    ] {
        refused(
            &mut mcp,
            "search_rules",
            json!({"message": "refund", "top_k": top_k}),
            "top_k",
        );
        refused(
            &mut mcp,
            "search_memory",
            json!({"query": "refund", "top_k": top_k}),
            "top_k",
        );
    }
    // A turn's budget: the CLI's and the library's range, 0 to 1,000,000.
    let context_tool = tools
        .iter()
        .find(|tool| {
            tool["inputSchema"]["properties"]
                .get("budget_tokens")
                .is_some()
        })
        .unwrap_or_else(|| panic!("no tool takes a budget: {list}"));
    let budget = &context_tool["inputSchema"]["properties"]["budget_tokens"];
    assert_eq!(
        (&budget["minimum"], &budget["maximum"]),
        (&json!(0), &json!(1_000_000))
    );
    let context_name = context_tool["name"].as_str().unwrap().to_string();
    for budget in [json!(-1), json!(1_000_001), json!(2.5)] {
        refused(
            &mut mcp,
            &context_name,
            json!({"message": "refund", "budget_tokens": budget}),
            "budget_tokens",
        );
    }
    for budget in [0, 1_000_000] {
        let (_, error) = mcp.call(
            &context_name,
            json!({"message": "I want my money back", "budget_tokens": budget}),
        );
        assert!(!error, "budget {budget}");
    }
    for importance in [json!(0), json!(11), json!(256), json!(-3)] {
        refused(
            &mut mcp,
            "remember",
            json!({"content": "c", "importance": importance}),
            "importance",
        );
    }
    for priority in [
        json!(2_147_483_648_i64),
        json!(-2_147_483_649_i64),
        json!(1.5),
    ] {
        refused(
            &mut mcp,
            "add_rule",
            json!({"id": "r", "condition": "c", "action": "a", "priority": priority}),
            "priority",
        );
    }
    // The ends of each range are taken.
    let (found, error) = mcp.call(
        "search_rules",
        json!({"message": "I want my money back", "top_k": 1_000_000}),
    );
    assert!(!error, "{found}");
    assert_eq!(ids(&found)[0], "refund");
    let (_, error) = mcp.call(
        "add_rule",
        json!({"id": "r", "condition": "c", "action": "a", "priority": i32::MIN}),
    );
    assert!(!error);
    let (remembered, error) = mcp.call("remember", json!({"content": "c", "importance": 10}));
    assert!(!error, "{remembered}");
}

/// SplitMix64: a seeded stream of numbers, so the fuzz sends the same frames on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// What a fuzz frame must get back.
#[derive(Debug)]
enum Expect {
    /// No answer: a notification, a response, a blank line.
    Nothing,
    /// One error or result with this id; an error's code among these when any are given.
    Answer(Value, &'static [i64]),
    /// One result with this id.
    Result(Value),
}

struct Frame {
    bytes: Vec<u8>,
    expect: Expect,
}

const PARSE: &[i64] = &[-32700];
const INVALID_REQUEST: &[i64] = &[-32600];
const INVALID_PARAMS: &[i64] = &[-32602];
const ANY: &[i64] = &[];

const PHRASES: [&str; 6] = [
    "I want my money back",
    "where is my package?",
    "hello",
    "NW-15699",
    "¿dónde está mi pedido? 🚚",
    "",
];

/// Values of the wrong type (or range) for some field, as JSON text: huge numbers, one
/// that JSON cannot hold (`1e400`), every type.
const WRONG: [&str; 14] = [
    "null",
    "true",
    "1.5",
    "-1",
    "0",
    "[]",
    "{}",
    "[1,\"a\"]",
    "{\"k\":[{}]}",
    "1000000000000000000000000000000",
    "1e400",
    "-9223372036854775809",
    "\"\"",
    "\"2.0\"",
];

/// Ids a request cannot have (not a string, nor an integer of 64 bits).
const WRONG_IDS: [&str; 10] = [
    "null",
    "true",
    "1.5",
    "[]",
    "{}",
    "[1]",
    "{\"a\":1}",
    "1000000000000000000000000000000",
    "1e400",
    "18446744073709551616",
];

/// A request the server must answer with a result.
fn valid_request(rng: &mut Rng, id: &Value) -> Value {
    let phrase = *rng.pick(&PHRASES);
    match rng.below(5) {
        0 => json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
        1 => json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}}),
        2 => {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "stats", "arguments": {}}})
        }
        3 => json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "search_rules",
            "arguments": {"message": phrase, "top_k": 1 + rng.below(1_000_000)},
        }}),
        _ => json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "search_memory", "arguments": {"query": phrase},
        }}),
    }
}

/// A `search_rules` call with one field (top level, params or arguments) set to the JSON
/// text `raw`, or removed when `raw` is `None`; and what it must get.
fn mutated(id: &Value, field: &str, raw: Option<&str>) -> Frame {
    const MARK: &str = "@@fuzz@@";
    let mut request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "search_rules",
        "arguments": {"message": "I want my money back", "top_k": 3, "tags": [], "tenant": "default"},
    }});
    let slot = match field {
        "jsonrpc" | "id" | "method" | "params" => &mut request,
        "name" | "arguments" => &mut request["params"],
        _ => &mut request["params"]["arguments"],
    };
    let object = slot.as_object_mut().unwrap();
    match raw {
        Some(_) => {
            object.insert(field.to_string(), json!(MARK));
        }
        None => {
            object.remove(field);
        }
    }
    let text = request
        .to_string()
        .replace(&format!("\"{MARK}\""), raw.unwrap_or(""));
    let value = raw.map(serde_json::from_str::<Value>);
    let expect = match (field, value) {
        // Not JSON (1e400 does not fit a number): nothing can be read, not even the id.
        (_, Some(Err(_))) => Expect::Answer(Value::Null, PARSE),
        ("id", None) => Expect::Nothing,
        ("id", Some(Ok(wrong @ Value::Number(_)))) => Expect::Answer(wrong, INVALID_REQUEST),
        ("id", Some(Ok(_))) => Expect::Answer(Value::Null, INVALID_REQUEST),
        ("jsonrpc", Some(Ok(Value::String(v)))) if v == "2.0" => Expect::Result(id.clone()),
        ("jsonrpc", _) => Expect::Answer(id.clone(), INVALID_REQUEST),
        ("method", Some(Ok(Value::String(_)))) => Expect::Answer(id.clone(), ANY),
        ("method", _) => Expect::Answer(id.clone(), INVALID_REQUEST),
        ("params", None | Some(Ok(Value::Null | Value::Object(_) | Value::Array(_)))) => {
            Expect::Answer(id.clone(), INVALID_PARAMS)
        }
        ("params", Some(Ok(_))) => Expect::Answer(id.clone(), INVALID_REQUEST),
        _ => Expect::Answer(id.clone(), ANY),
    };
    Frame {
        bytes: text.into_bytes(),
        expect,
    }
}

/// `count` frames, malformed or random most of them, valid requests among them; ids from
/// `first_id` on, each used once.
fn fuzz_frames(rng: &mut Rng, count: usize, first_id: usize) -> Vec<Frame> {
    (0..count)
        .map(|k| {
            let n = first_id + k;
            let id = if n.is_multiple_of(2) {
                json!(n)
            } else {
                json!(format!("f{n}"))
            };
            let line = |value: Value| value.to_string().into_bytes();
            match rng.below(12) {
                0..=2 => {
                    let request = valid_request(rng, &id);
                    Frame {
                        bytes: line(request),
                        expect: Expect::Result(id),
                    }
                }
                3 => {
                    let text = line(valid_request(rng, &id));
                    let cut = 1 + rng.below(text.len() - 1);
                    Frame {
                        bytes: text[..cut].to_vec(),
                        expect: Expect::Answer(Value::Null, PARSE),
                    }
                }
                4 => {
                    // Random bytes, the first one printable (so not a blank line): not
                    // JSON, or JSON that is not an object.
                    let mut bytes = vec![b'!' + rng.below(94) as u8];
                    for _ in 0..rng.below(80) {
                        match rng.next() as u8 {
                            b'\n' => bytes.push(b'x'),
                            byte => bytes.push(byte),
                        }
                    }
                    Frame {
                        bytes,
                        expect: Expect::Answer(Value::Null, &[-32700, -32600]),
                    }
                }
                5 => {
                    let mut bytes = line(valid_request(rng, &id));
                    let at = rng.below(bytes.len() + 1);
                    let invalid: &[u8] = rng.pick::<&[u8]>(&[
                        &b"\xff"[..],
                        b"\xc3\x28",
                        b"\xe2\x82",
                        b"\xed\xa0\x80",
                        b"\xf0\x28\x8c\xbc",
                    ]);
                    bytes.splice(at..at, invalid.iter().copied());
                    Frame {
                        bytes,
                        expect: Expect::Answer(Value::Null, PARSE),
                    }
                }
                6 => {
                    let depth = 129 + rng.below(5_000);
                    let (open, close) = if rng.below(2) == 0 {
                        ("[", "]")
                    } else {
                        ("{\"a\":", "}")
                    };
                    let nested = format!("{}1{}", open.repeat(depth), close.repeat(depth));
                    let text = if rng.below(2) == 0 {
                        nested
                    } else {
                        format!(
                            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"stats","arguments":{{"deep":{nested}}}}}}}"#
                        )
                    };
                    Frame {
                        bytes: text.into_bytes(),
                        expect: Expect::Answer(Value::Null, PARSE),
                    }
                }
                7 | 8 => {
                    let field = *rng.pick(&[
                        "jsonrpc",
                        "id",
                        "method",
                        "params",
                        "name",
                        "arguments",
                        "message",
                        "top_k",
                        "tags",
                        "tenant",
                    ]);
                    let raw = match (rng.below(8), field) {
                        (0, _) => None,
                        (_, "id") => Some(*rng.pick(&WRONG_IDS)),
                        _ => Some(*rng.pick(&WRONG)),
                    };
                    mutated(&id, field, raw)
                }
                9 => {
                    // Huge numbers where the server takes a bounded integer.
                    let huge = *rng.pick(&[
                        "1000000000000000",
                        "100000000000000000000000",
                        "9223372036854775807",
                    ]);
                    let (tool, arguments) = if rng.below(2) == 0 {
                        ("search_rules", format!(r#"{{"message":"refund","top_k":{huge}}}"#))
                    } else {
                        ("remember", format!(r#"{{"content":"c","importance":{huge}}}"#))
                    };
                    let text = format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
                    );
                    Frame {
                        bytes: text.into_bytes(),
                        expect: Expect::Answer(id, INVALID_PARAMS),
                    }
                }
                10 => {
                    // Notifications, responses from the client and blank lines: no answer.
                    let text = match rng.below(6) {
                        0 => json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
                        1 => json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "nobody"}}).to_string(),
                        2 => json!({"jsonrpc": "2.0", "method": "notifications/fuzz", "params": {"n": n}}).to_string(),
                        3 => json!({"jsonrpc": "2.0", "id": format!("r{n}"), "result": {}}).to_string(),
                        4 => json!({"jsonrpc": "2.0", "id": n, "error": {"code": 1, "message": "m"}}).to_string(),
                        _ => " \t".repeat(rng.below(3)),
                    };
                    Frame {
                        bytes: text.into_bytes(),
                        expect: Expect::Nothing,
                    }
                }
                _ => {
                    let batch = json!([valid_request(rng, &id), valid_request(rng, &json!("other"))]);
                    Frame {
                        bytes: line(batch),
                        expect: Expect::Answer(Value::Null, INVALID_REQUEST),
                    }
                }
            }
        })
        .collect()
}

/// A frame as text for a failure message, cut short.
fn shown(frame: &[u8]) -> String {
    let text = String::from_utf8_lossy(frame);
    text.chars().take(300).collect()
}

#[test]
fn the_server_fuzzed_with_malformed_frames_answers_each_once_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let index = indexed(dir.path());
    let (mut mcp, _) = Session::start(&index, &[]);

    // One frame at a time: each answer checked against its frame.
    let frames = fuzz_frames(&mut Rng(0x5EED_0001), 300, 1_000);
    let unanswered = frames
        .iter()
        .filter(|f| matches!(f.expect, Expect::Nothing))
        .count();
    eprintln!(
        "fuzz: {} frames one at a time ({unanswered} to be left unanswered), then 150 at once",
        frames.len()
    );
    for (k, frame) in frames.iter().enumerate() {
        mcp.send_raw(&frame.bytes);
        let context = || format!("frame {k}: {}", shown(&frame.bytes));
        match &frame.expect {
            Expect::Nothing => mcp.nothing_else(&format!("fuzz-{k}")),
            Expect::Answer(id, codes) => {
                let answer = mcp.next();
                assert_response(&answer);
                assert_eq!(answer.get("id"), Some(id), "{}: {answer}", context());
                if !codes.is_empty() {
                    let code = answer["error"]["code"].as_i64();
                    assert!(
                        code.is_some_and(|code| codes.contains(&code)),
                        "{}: {answer}",
                        context()
                    );
                }
            }
            Expect::Result(id) => {
                let answer = mcp.next();
                assert_response(&answer);
                assert_eq!(answer.get("id"), Some(id), "{}: {answer}", context());
                assert!(answer["result"].is_object(), "{}: {answer}", context());
            }
        }
    }
    mcp.assert_alive();

    // All at once: one answer per frame that needs one (answers of the server's two
    // writers, the frame checker and rmcp, whole lines), and no other.
    let frames = fuzz_frames(&mut Rng(0x5EED_0002), 150, 100_000);
    let mut burst = Vec::new();
    let mut expected = Vec::new();
    for frame in &frames {
        burst.extend_from_slice(&frame.bytes);
        burst.push(b'\n');
        match &frame.expect {
            Expect::Nothing => {}
            Expect::Answer(id, _) | Expect::Result(id) => expected.push(id.clone()),
        }
    }
    mcp.stdin.as_mut().unwrap().write_all(&burst).unwrap();
    mcp.stdin.as_mut().unwrap().flush().unwrap();
    for _ in 0..expected.len() {
        let answer = mcp.next();
        assert_response(&answer);
        let at = expected
            .iter()
            .position(|id| Some(id) == answer.get("id"))
            .unwrap_or_else(|| panic!("an answer to no frame: {answer}"));
        expected.swap_remove(at);
    }
    mcp.nothing_else("after-the-burst");

    let list = mcp.request("tools/list", json!({}));
    assert_eq!(
        list["result"]["tools"].as_array().map(Vec::len),
        Some(11),
        "{list}"
    );
    mcp.assert_alive();
}

#[test]
fn the_official_mcp_python_sdk_client_lists_and_calls_tools() {
    // `RUCHE_MCP_PYTHON`: a Python with the `mcp` package (PyPI); .ci/run sets it.
    let Some(python) = std::env::var_os("RUCHE_MCP_PYTHON") else {
        crate::run::skip_without(
            "the MCP Python SDK",
            "RUCHE_MCP_PYTHON naming a Python with PyPI's `mcp`; .ci/run sets it",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let index = indexed(dir.path());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_sdk_client.py");
    let output = Command::new(python)
        .args([script, env!("CARGO_BIN_EXE_ruche"), &index])
        .env_remove("RUCHE_CONFIG")
        .output_within();
    assert_code(&output, 0);
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("all checks passed"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}
