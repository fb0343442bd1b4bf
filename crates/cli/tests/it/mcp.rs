//! `ruche mcp`: the initialize handshake, the tool list, and every tool called over stdio
//! as an agent host does, one JSON-RPC message per line.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

use crate::cli::assert_code;

/// A running `ruche mcp` and its pipes.
struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Session {
    /// Starts the server and performs the handshake; returns it with the server's
    /// initialize result.
    fn start(dir: &str, extra: &[&str]) -> (Session, Value) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ruche"))
            .args(["mcp", dir])
            .args(extra)
            .env_remove("RUCHE_CONFIG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut session = Session {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        let init = session.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "ruche-test", "version": "1"},
            }),
        );
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        (session, init)
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and returns its response (`result` or `error` object).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "the server closed stdout before answering {method}"
            );
            // Every line of stdout is one JSON-RPC message.
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|err| panic!("not JSON on stdout: {line:?}: {err}"));
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// Calls a tool; returns its structured result and whether it is an error.
    fn call(&mut self, name: &str, arguments: Value) -> (Value, bool) {
        let response = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        let result = &response["result"];
        assert!(result.is_object(), "{name}: {response}");
        (
            result["structuredContent"].clone(),
            result["isError"] == json!(true),
        )
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

fn indexed(dir: &Path) -> String {
    let rules = dir.join("rules.jsonl");
    std::fs::write(&rules, RULES).unwrap();
    let index = dir.join("index").to_str().unwrap().to_string();
    let output = Command::new(env!("CARGO_BIN_EXE_ruche"))
        .args(["index", &index, "--rules", rules.to_str().unwrap(), "-q"])
        .env_remove("RUCHE_CONFIG")
        .output()
        .unwrap();
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
        .output()
        .unwrap();
    assert_code(&output, 0);
    let (found, _) = mcp.call("search_rules", json!({"message": "my parcel is late"}));
    assert_eq!(ids(&found)[0], "late");
}
