//! `ruche inspect` as a user runs it: a server on 127.0.0.1, its pages fetched over HTTP
//! and in headless Chromium; and `ruche eval --report`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::cli::{assert_code, stderr, stdout};
use crate::run::ruche;

const RULES: &str = r#"{"id": "refund", "condition": "the customer asks for a refund", "action": "check the order, then refund", "priority": 60, "patterns": ["I want my money back", "can I get reimbursed"]}
{"id": "cancel", "condition": "the customer wants to cancel the order", "action": "cancel it if it has not shipped", "patterns": ["stop my order", "I want my money back"]}
{"id": "greet", "condition": "the conversation starts", "action": "greet the customer"}
{"id": "xss", "condition": "a message holds <script>alert(1)</script>", "action": "show it as <b>text</b>", "patterns": ["<script>alert(1)</script> please"]}
{"id": "label", "condition": "the customer needs a return label", "action": "send a label", "scope": "scenario", "scenario_id": "returns"}
{"id": "confirm", "condition": "the customer confirms the return", "action": "send the return label", "scope": "step", "scenario_id": "returns", "step_id": "confirm"}
"#;

const CHUNKS: &str = r#"{"id": "m1", "content": "prefers email over phone", "importance": 8, "created_at": "2026-11-20T12:00:00Z", "context_id": "u1"}
{"id": "m2", "content": "asked about a refund for order NW-1", "importance": 5, "created_at": "2026-11-21T12:00:00Z", "context_id": "u1"}
{"id": "m3", "content": "lives in Lyon", "importance": 3, "created_at": "2026-10-01T00:00:00Z", "context_id": "u2"}
"#;

const SCENARIOS: &str = r#"{"id": "returns", "name": "Returns", "description": "the customer sends a product back", "examples": ["I want to return my shoes"], "steps": [{"id": "confirm", "description": "the customer confirms"}]}
"#;

const TOOLS: &str = r#"{"id": "lookup_order", "name": "lookup_order", "description": "find an order by its number", "examples": ["where is my order"]}
"#;

/// Judged messages: q1 answered right, q2 wrong (cancel instead of refund), q3 refused.
const QUERIES: &str = r#"{"id": "q1", "text": "I want my money back"}
{"id": "q2", "text": "stop my order"}
{"id": "q3", "text": "what is the weather on Mars"}
"#;

const QRELS: &str = "query-id\tdoc-id\trelevance\nq1\trefund\t1\nq2\trefund\t1\nq3\tgreet\t1\n";

const SCRIPT: &str = "<script>alert(1)</script>";
const ESCAPED: &str = "&lt;script&gt;alert(1)&lt;/script&gt;";

/// The sample index and the judged messages' files.
struct Fixture {
    dir: tempfile::TempDir,
    index: String,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec!["index".to_string()];
        let index = dir.path().join("index").to_str().unwrap().to_string();
        args.push(index.clone());
        for (flag, name, content) in [
            ("--rules", "rules.jsonl", RULES),
            ("--chunks", "chunks.jsonl", CHUNKS),
            ("--scenarios", "scenarios.jsonl", SCENARIOS),
            ("--tools", "tools.jsonl", TOOLS),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, content).unwrap();
            args.extend([flag.to_string(), path.to_str().unwrap().to_string()]);
        }
        std::fs::write(dir.path().join("queries.jsonl"), QUERIES).unwrap();
        std::fs::write(dir.path().join("qrels.tsv"), QRELS).unwrap();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_code(&ruche(&args), 0);
        Fixture { dir, index }
    }

    fn file(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().unwrap().to_string()
    }

    /// What `ruche search --json --explain` says of a message (exit 1: no hit).
    fn search(&self, text: &str) -> serde_json::Value {
        let output = ruche(&["search", &self.index, text, "--json", "--explain"]);
        assert!(
            matches!(output.status.code(), Some(0 | 1)),
            "{}",
            stderr(&output)
        );
        serde_json::from_str(&stdout(&output)).unwrap()
    }
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// A running `ruche inspect`, stopped (SIGTERM, then killed) when dropped.
struct Server {
    child: Child,
    port: u16,
    url: String,
}

impl Server {
    fn start(index: &str, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ruche"))
            .args(["inspect", index])
            .args(extra)
            .env_remove("RUCHE_CONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Some(url) = line.trim().strip_prefix("ruche inspect: ") else {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!("no URL printed: {line:?}; stderr: {}", stderr(&output))
        };
        let url = url.to_string();
        let port = url
            .strip_prefix("http://127.0.0.1:")
            .and_then(|rest| rest.strip_suffix('/'))
            .unwrap_or_else(|| panic!("not a URL on 127.0.0.1: {url}"))
            .parse()
            .unwrap();
        Server { child, port, url }
    }

    fn get(&self, target: &str) -> Response {
        self.request("GET", target, &format!("127.0.0.1:{}", self.port))
    }

    fn request(&self, method: &str, target: &str, host: &str) -> Response {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        write!(
            stream,
            "{method} {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        )
        .unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).unwrap();
        Response::parse(&raw)
    }

    /// Stops the server with `signal` (`SIGTERM`, `SIGINT`) and returns its exit status.
    fn stop(mut self, signal: libc::c_int) -> std::process::ExitStatus {
        crate::run::signal(self.child.id(), signal);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "ruche inspect did not stop on SIG{signal}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

struct Response {
    status: u16,
    headers: String,
    body: String,
}

impl Response {
    fn parse(raw: &[u8]) -> Response {
        let text = String::from_utf8_lossy(raw).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP response");
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        let headers = head.to_ascii_lowercase();
        let body = if headers.contains("transfer-encoding: chunked") {
            dechunk(body)
        } else {
            body.to_string()
        };
        Response {
            status,
            headers,
            body,
        }
    }

    #[track_caller]
    fn ok(self) -> String {
        assert_eq!(self.status, 200, "{}", self.body);
        self.body
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
    out
}

/// The inline SVG of a page.
fn svg(page: &str) -> &str {
    let start = page.find("<svg").expect("an inline SVG");
    let end = page[start..].find("</svg>").expect("a closed SVG") + start;
    &page[start..end]
}

#[test]
fn inspect_serves_each_page_and_writes_nothing() {
    let fixture = Fixture::new();
    let expected = fixture.search("I want my money back");
    let index = Path::new(&fixture.index);
    let before = snapshot(index);
    let server = Server::start(&fixture.index, &[]);
    assert!(
        server.url.starts_with("http://127.0.0.1:"),
        "{}",
        server.url
    );
    #[cfg(target_os = "linux")]
    listens_on_loopback_only(server.port);

    // The playground: the empty form, then a message as the form's GET URL.
    let page = server.get("/").ok();
    assert!(
        page.contains(r#"<form class="q" method="get" action="/">"#),
        "{page}"
    );
    assert!(page.contains(r#"name="q""#) && page.contains(r#"name="scenario""#));
    let page = server
        .get("/?q=I+want+my+money+back&kind=rules&tenant=&agent=&scenario=&step=&context=")
        .ok();
    let first = &expected["hits"][0];
    assert_eq!(first["id"], "refund");
    assert!(
        page.contains(r#"href="/doc?kind=rule&amp;id=refund""#),
        "{page}"
    );
    let score = format!("{:.3}", first["score"].as_f64().unwrap());
    assert!(page.contains(&score), "the hit's score {score}");
    let threshold = format!("{:.3}", expected["gate"]["min_relevance"].as_f64().unwrap());
    let chart = svg(&page);
    assert!(
        chart.contains(&format!("gate: relevance ≥ {threshold}")),
        "the gate's threshold {threshold} in the SVG: {chart}"
    );
    let strategy = expected["selection"]["strategy"].as_str().unwrap();
    let cutoff = format!(
        "{:.3}",
        expected["selection"]["cutoff_score"].as_f64().unwrap()
    );
    assert!(
        chart.contains(&format!("selection cut ({strategy}): score ≥ {cutoff}")),
        "the selection's cut in the SVG: {chart}"
    );
    // Legs and weights, the matched pattern, the refused candidates and why.
    let weight = format!(
        "× {:.3}",
        expected["fusion"]["vector_weight"].as_f64().unwrap()
    );
    assert!(page.contains(&weight), "the vector leg's weight {weight}");
    assert!(page.contains("<mark>I want my money back</mark>"), "{page}");
    assert!(page.contains(r#"<tr class="refused">"#), "{page}");
    assert!(page.contains("below the gate&#39;s") || page.contains("below the gate's"));
    assert!(page.contains("Runner-up refused by the gate"), "{page}");

    // A whole turn: the scenario detected, the rules inside it, the block, each part's
    // search explained with its own curve.
    assert!(
        server
            .get("/")
            .ok()
            .contains(r#"<option value="turn">whole turn</option>"#)
    );
    let turn = ruche(&[
        "turn",
        &fixture.index,
        "I want to return my shoes",
        "--context",
        "u1",
        "--json",
    ]);
    let turn: serde_json::Value = serde_json::from_str(&stdout(&turn)).unwrap();
    assert_eq!(turn["scenario"]["active"], "returns");
    let page = server
        .get("/?q=I+want+to+return+my+shoes&kind=turn&context=u1&budget=200")
        .ok();
    assert!(
        page.contains(r#"<option value="turn" selected>whole turn</option>"#),
        "{page}"
    );
    assert!(page.contains("Turn <code>turn-"), "{page}");
    assert!(
        page.contains("<strong>returns</strong>, detected (relevance"),
        "{page}"
    );
    assert!(page.contains("of 200 (o200k_base)"), "{page}");
    assert!(page.contains("Scenario: Returns (returns)"), "{page}");
    assert!(
        page.contains(r#"<h2 class="part">Rules (inside returns)</h2>"#),
        "{page}"
    );
    for part in ["Scenarios", "Chunks", "Tools"] {
        assert!(
            page.contains(&format!(r#"<h2 class="part">{part}</h2>"#)),
            "{part}: {page}"
        );
    }
    for hit in turn["rules"]["hits"].as_array().unwrap() {
        let id = hit["id"].as_str().unwrap();
        assert!(
            page.contains(&format!(r#"href="/doc?kind=rule&amp;id={id}""#)),
            "{id}"
        );
    }
    assert_eq!(page.matches("<svg").count(), 4, "a curve per part");
    let bad = server.get("/?q=hello&kind=turn&budget=many");
    assert_eq!(bad.status, 400);
    assert!(
        bad.body.contains("budget: a number of tokens, got `many`"),
        "{}",
        bad.body
    );

    // Browse.
    let page = server.get("/rules").ok();
    for needle in [
        "<h2>Global</h2>",
        "returns",
        "step confirm",
        "refund",
        "cancel",
    ] {
        assert!(page.contains(needle), "{needle} in {page}");
    }
    assert!(server.get("/chunks").ok().contains("u2"));
    let page = server.get("/chunks?context=u1").ok();
    assert!(page.contains("m1") && page.contains("m2") && !page.contains("lives in Lyon"));
    assert!(
        server
            .get("/scenarios")
            .ok()
            .contains("the customer sends a product back")
    );
    assert!(server.get("/tools").ok().contains("lookup_order"));
    let page = server.get("/doc?kind=chunk&id=m3").ok();
    assert!(page.contains("lives in Lyon"), "{page}");

    // A document's patterns run as queries: refund's find it first; cancel's "I want
    // my money back" finds refund (higher priority) first, a conflict.
    let page = server.get("/doc?kind=rule&id=refund").ok();
    assert!(page.contains("Each finds this rule first."), "{page}");
    let page = server.get("/doc?kind=rule&id=cancel").ok();
    assert!(page.contains("conflict: refund comes first"), "{page}");
    assert!(
        page.contains(r#"href="/?q=I+want+my+money+back&amp;kind=rules""#),
        "{page}"
    );
    let page = server.get("/doc?kind=scenario&id=returns").ok();
    assert!(page.contains("Each finds this scenario first."), "{page}");
    assert_eq!(server.get("/doc?kind=rule&id=missing").status, 404);

    // Evaluate without judged files: the page says how to give them; a URL naming files
    // is refused, whatever it names.
    let page = server.get("/eval").ok();
    assert!(page.contains("--queries FILE --qrels FILE"), "{page}");
    let target = format!(
        "/eval?queries={}&qrels={}&kind=rules",
        fixture.file("queries.jsonl"),
        fixture.file("qrels.tsv")
    );
    let page = server.get(&target);
    assert_eq!(page.status, 400);
    assert!(
        page.body.contains("A URL cannot name a file"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("Metrics over"), "{}", page.body);

    // Outside the app: 404; other methods: 405; another host name: 403; no scripts.
    for target in ["/nope", "/static/app.js", "/../etc/passwd", "/rules/x"] {
        assert_eq!(server.get(target).status, 404, "{target}");
    }
    let host = format!("127.0.0.1:{}", server.port);
    for method in ["POST", "PUT", "DELETE"] {
        assert_eq!(server.request(method, "/", &host).status, 405, "{method}");
    }
    let rebound = server.request("GET", "/", &format!("evil.example:{}", server.port));
    assert_eq!(rebound.status, 403);
    let response = server.get("/rules");
    assert!(
        response
            .headers
            .contains("content-security-policy: default-src 'none'"),
        "{}",
        response.headers
    );

    let status = server.stop(libc::SIGTERM);
    assert!(status.success(), "SIGTERM stops it cleanly: {status:?}");
    assert!(
        before == snapshot(index),
        "the inspector wrote to the index"
    );
}

/// The listening socket is on 127.0.0.1 (`/proc/net/tcp`), and none on IPv6.
#[cfg(target_os = "linux")]
fn listens_on_loopback_only(port: u16) {
    let listening = |table: &str| -> Vec<String> {
        std::fs::read_to_string(table)
            .unwrap_or_default()
            .lines()
            .skip(1)
            .filter_map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let (address, local_port) = fields.get(1)?.split_once(':')?;
                (u16::from_str_radix(local_port, 16).ok()? == port && fields.get(3)? == &"0A")
                    .then(|| address.to_string())
            })
            .collect()
    };
    assert_eq!(listening("/proc/net/tcp"), vec!["0100007F".to_string()]);
    assert!(listening("/proc/net/tcp6").is_empty());
}

#[test]
fn inspect_escapes_every_string() {
    let fixture = Fixture::new();
    let server = Server::start(&fixture.index, &[]);
    let message = format!(
        "/?q={}&kind=rules",
        "%3Cscript%3Ealert(1)%3C%2Fscript%3E+please"
    );
    for target in [
        "/rules",
        "/doc?kind=rule&id=xss",
        message.as_str(),
        "/doc?kind=rule&id=%3Cscript%3E",
    ] {
        let response = server.get(target);
        assert!(
            !response.body.contains("<script"),
            "{target}: {}",
            response.body
        );
        assert!(!response.body.contains("<b>text</b>"), "{target}");
        assert!(
            response.body.contains("&lt;script&gt;"),
            "{target}: {}",
            response.body
        );
    }
    assert!(server.get("/rules").body.contains(ESCAPED));
    // The pattern, matched and marked, as text.
    let page = server.get(&message).ok();
    assert!(
        page.contains(&format!("<mark>{ESCAPED} please</mark>")),
        "{page}"
    );
    assert!(!page.contains(SCRIPT));
}

#[test]
fn inspect_shows_a_writer_s_new_commits() {
    let fixture = Fixture::new();
    let server = Server::start(&fixture.index, &[]);
    assert!(!server.get("/rules").ok().contains("escalate"));
    let rules = fixture.file("more.jsonl");
    std::fs::write(
        &rules,
        r#"{"id": "escalate", "condition": "the customer is angry", "action": "hand over to a person"}"#,
    )
    .unwrap();
    assert_code(&ruche(&["index", &fixture.index, "--rules", &rules]), 0);
    assert!(server.get("/rules").ok().contains("escalate"));
    let page = server.get("/?q=the+customer+is+angry&kind=rules").ok();
    assert!(page.contains("id=escalate"), "{page}");
    let status = server.stop(libc::SIGINT);
    assert!(
        status.success(),
        "Ctrl-C (SIGINT) stops it cleanly: {status:?}"
    );
}

/// The Evaluate page reads the judged files given at start, and nothing a URL names: the
/// URLs that once aborted the server (`/dev/zero`) or hung every page (a FIFO) are
/// refused, and a file swapped for a FIFO after the start is refused, not waited on.
#[test]
fn inspect_evaluates_only_the_files_given_at_start() {
    let fixture = Fixture::new();
    let queries = fixture.file("queries.jsonl");
    let qrels = fixture.file("qrels.tsv");
    let server = Server::start(&fixture.index, &["--queries", &queries, "--qrels", &qrels]);

    // Evaluate: metrics, the confusion, the wrong answer and the refusal, linked.
    let page = server.get("/eval?kind=rules").ok();
    for needle in [
        "Metrics over 3 judged messages",
        "nDCG@10",
        "1 answered wrong",
        "1 refused",
        r#"<td>refund</td><td>cancel</td>"#,
        r#"href="/?q=stop+my+order&amp;kind=rules""#,
        r#"href="/?q=what+is+the+weather+on+Mars&amp;kind=rules""#,
        "<svg",
    ] {
        assert!(page.contains(needle), "{needle} in {page}");
    }
    assert!(
        page.contains(&queries),
        "the page names the files it read: {page}"
    );

    // Files named by a URL, hostile or not, are never read.
    for target in [
        "/eval?queries=/dev/zero&qrels=/dev/zero",
        "/eval?queries=/etc/passwd&qrels=/etc/passwd&kind=rules",
        &format!("/eval?queries={queries}&qrels={qrels}"),
        "/eval?qrels=/dev/zero",
    ] {
        let page = server.get(target);
        assert_eq!(page.status, 400, "{target}");
        assert!(
            page.body.contains("A URL cannot name a file"),
            "{}",
            page.body
        );
        assert!(!page.body.contains("root:"), "{}", page.body);
    }
    assert!(server.get("/rules").ok().contains("refund"));

    // The queries file swapped for a FIFO nobody writes: the page refuses it at once and
    // the other pages go on.
    #[cfg(unix)]
    {
        std::fs::remove_file(&queries).unwrap();
        let path = std::ffi::CString::new(queries.as_str()).unwrap();
        // SAFETY: a NUL-terminated path that lives across the call.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        let started = Instant::now();
        let page = server.get("/eval?kind=rules");
        assert_eq!(page.status, 400);
        assert!(page.body.contains("not a regular file"), "{}", page.body);
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(server.get("/rules").ok().contains("refund"));
    }
    drop(server);

    // At start: a FIFO, a device and a file over the limit are refused with their flag.
    let big = fixture.file("big.jsonl");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(65 << 20)
        .unwrap();
    for (bad, reason) in [
        ("/dev/zero", "not a regular file"),
        (queries.as_str(), "not a regular file"),
        (big.as_str(), "more than the"),
    ] {
        let output = ruche(&[
            "inspect",
            &fixture.index,
            "--queries",
            bad,
            "--qrels",
            &qrels,
        ]);
        assert_code(&output, 2);
        let err = stderr(&output);
        assert!(
            err.contains("--queries") && err.contains(reason),
            "{bad}: {err}"
        );
    }
}

#[test]
fn inspect_rejects_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let missing = missing.to_str().unwrap();
    let output = ruche(&["inspect", missing]);
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains("no index at"),
        "{}",
        stderr(&output)
    );
    assert!(!Path::new(missing).exists());

    let output = ruche(&["inspect", missing, "--port", "http"]);
    assert_code(&output, 2);
    assert!(stderr(&output).contains("--port"), "{}", stderr(&output));
    let output = ruche(&["inspect", missing, "--port", "70000"]);
    assert_code(&output, 2);

    let fixture = Fixture::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let output = ruche(&["inspect", &fixture.index, "--port", &port]);
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains(&format!("--port {port}: cannot listen on 127.0.0.1:{port}")),
        "{}",
        stderr(&output)
    );
}

#[test]
fn eval_report_is_one_self_contained_file() {
    let fixture = Fixture::new();
    let report = fixture.file("report.html");
    let output = ruche(&[
        "eval",
        &fixture.index,
        "--queries",
        &fixture.file("queries.jsonl"),
        "--qrels",
        &fixture.file("qrels.tsv"),
        "--report",
        &report,
    ]);
    assert_code(&output, 0);
    assert!(stdout(&output).contains("nDCG@10"), "{}", stdout(&output));
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    for absent in [
        "http://", "https://", "<script", "<link", " src=", "href=\"/",
    ] {
        assert!(!html.contains(absent), "{absent} in the report");
    }
    // The metrics' bars and the curves of the wrong answer (q2) and the refusal (q3).
    assert_eq!(html.matches("<svg").count(), 3, "{html}");
    let expected = fixture.search("what is the weather on Mars");
    let threshold = format!("{:.3}", expected["gate"]["min_relevance"].as_f64().unwrap());
    assert!(html.contains(&format!("gate: relevance ≥ {threshold}")));
    assert!(html.contains("stop my order") && html.contains("what is the weather on Mars"));
}

/// Chromium, or `None` (the test skips) where it is not installed.
fn chromium() -> Option<PathBuf> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|path| path.exists());
    if found.is_none() {
        crate::run::skip_without(
            "chromium",
            "Debian's `chromium` package; .ci/run installs it",
        );
    }
    found
}

/// Headless Chromium, quiet, with nothing fetched but the page.
const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];

/// Runs headless Chromium on `url` with `args`, and returns its output.
fn headless(chromium: &Path, profile: &Path, args: &[&str], url: &str) -> Output {
    let mut child = Command::new(chromium)
        .args(CHROMIUM_FLAGS)
        .arg("--hide-scrollbars")
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// Headless Chromium driven over its DevTools protocol on a pipe (`--remote-debugging-pipe`:
/// JSON messages ended by a NUL byte, written to its descriptor 3, read from its 4), as a
/// user would: it types into the page and clicks, and no script of the test runs in it.
#[cfg(unix)]
struct Browser {
    child: Child,
    to: std::io::PipeWriter,
    from: BufReader<std::io::PipeReader>,
    next_id: u64,
    session: Option<String>,
}

#[cfg(unix)]
impl Browser {
    fn start(chromium: &Path, profile: &Path) -> Browser {
        use std::os::fd::AsRawFd;
        use std::os::unix::process::CommandExt;
        let (child_reads, to) = std::io::pipe().unwrap();
        let (from, child_writes) = std::io::pipe().unwrap();
        let (read_fd, write_fd) = (child_reads.as_raw_fd(), child_writes.as_raw_fd());
        let mut command = Command::new(chromium);
        command
            .args(CHROMIUM_FLAGS)
            .args(["--remote-debugging-pipe", "--window-size=1280,1000"])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: between fork and exec, only async-signal-safe fcntl and dup2 calls. Both
        // ends are first copied above 9 (either may be 3 or 4 already), then onto 3 and 4,
        // which clears their close-on-exec flag.
        unsafe {
            command.pre_exec(move || {
                let read = libc::fcntl(read_fd, libc::F_DUPFD_CLOEXEC, 10);
                let write = libc::fcntl(write_fd, libc::F_DUPFD_CLOEXEC, 10);
                if read < 0 || write < 0 || libc::dup2(read, 3) < 0 || libc::dup2(write, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().unwrap();
        drop((child_reads, child_writes));
        Browser {
            child,
            to,
            from: BufReader::new(from),
            next_id: 0,
            session: None,
        }
    }

    /// Sends `method` (to the page once attached) and returns its result.
    fn call(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        self.try_call(method, params)
            .unwrap_or_else(|error| panic!("{method}: {error}"))
    }

    /// Sends `method` and returns its result, or the error it got.
    fn try_call(
        &mut self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, serde_json::Value> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = serde_json::json!({"id": id, "method": method, "params": params});
        if let Some(session) = &self.session {
            message["sessionId"] = session.clone().into();
        }
        self.to.write_all(message.to_string().as_bytes()).unwrap();
        self.to.write_all(b"\0").unwrap();
        loop {
            let mut raw = Vec::new();
            let read = self.from.read_until(0, &mut raw).unwrap();
            assert!(read > 0, "chromium closed its DevTools pipe");
            raw.pop();
            let reply: serde_json::Value = serde_json::from_slice(&raw).unwrap();
            if reply["id"] == id {
                return match reply.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(reply["result"].clone()),
                };
            }
        }
    }

    /// Opens `url` in a new page and attaches to it.
    fn open(&mut self, url: &str) {
        let target = self.call("Target.createTarget", serde_json::json!({"url": url}));
        let attached = self.call(
            "Target.attachToTarget",
            serde_json::json!({"targetId": target["targetId"], "flatten": true}),
        );
        self.session = Some(attached["sessionId"].as_str().unwrap().to_string());
    }

    /// The page's HTML, once `ready` says it is there (within 30 s).
    fn html_when(&mut self, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            // A page that is loading may drop the node between the two calls: read again.
            let document = self.call("DOM.getDocument", serde_json::json!({"depth": 0}));
            let html = self
                .try_call(
                    "DOM.getOuterHTML",
                    serde_json::json!({"nodeId": document["root"]["nodeId"]}),
                )
                .map(|result| result["outerHTML"].as_str().unwrap_or_default().to_string())
                .unwrap_or_default();
            if ready(&html) {
                return html;
            }
            assert!(
                Instant::now() < deadline,
                "the page never got there: {html}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Clicks the middle of the element `selector` selects.
    fn click(&mut self, selector: &str) {
        let document = self.call("DOM.getDocument", serde_json::json!({"depth": 0}));
        let node = self.call(
            "DOM.querySelector",
            serde_json::json!({"nodeId": document["root"]["nodeId"], "selector": selector}),
        );
        let model = self.call(
            "DOM.getBoxModel",
            serde_json::json!({"nodeId": node["nodeId"]}),
        );
        let quad: Vec<f64> = model["model"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let x = (quad[0] + quad[2] + quad[4] + quad[6]) / 4.0;
        let y = (quad[1] + quad[3] + quad[5] + quad[7]) / 4.0;
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                serde_json::json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }
}

#[cfg(unix)]
impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn inspect_playground_in_headless_chromium() {
    let Some(chromium) = chromium() else {
        return;
    };
    let fixture = Fixture::new();
    let server = Server::start(&fixture.index, &[]);
    let profile = fixture.dir.path().join("chromium-profile");
    // The playground's empty form; a message typed into it (the message box has the
    // focus) and the Search button clicked.
    #[cfg(unix)]
    {
        let mut browser = Browser::start(&chromium, &fixture.dir.path().join("cdp-profile"));
        browser.open(&server.url);
        browser.html_when(|html| html.contains("<textarea"));
        browser.call(
            "Input.insertText",
            serde_json::json!({"text": "I want my money back"}),
        );
        browser.click(r#"form.q button[type="submit"]"#);
        let dom = browser.html_when(|html| html.contains("<figure>"));
        assert!(
            dom.contains("I want my money back</textarea>"),
            "the message submitted: {dom}"
        );
        assert!(
            dom.contains(r#"href="/doc?kind=rule&amp;id=refund""#),
            "the expected rule in the DOM: {dom}"
        );
        assert!(
            dom.contains("<svg") && dom.contains("selection cut ("),
            "the cut drawn: {dom}"
        );
    }
    // The form's GET URL, as a link to the view loads it.
    let url = format!("{}?q=I+want+my+money+back&kind=rules", server.url);
    let output = headless(&chromium, &profile, &["--dump-dom"], &url);
    let dom = stdout(&output);
    assert!(dom.contains("<textarea"), "{}\n{}", dom, stderr(&output));
    assert!(
        dom.contains("id=refund"),
        "the expected rule in the DOM: {dom}"
    );
    assert!(
        dom.contains("<svg") && dom.contains("selection cut ("),
        "the cut drawn: {dom}"
    );
    assert!(dom.contains("gate: relevance ≥ "), "the gate drawn: {dom}");

    let shot = fixture.dir.path().join("inspector.png");
    let output = headless(
        &chromium,
        &profile,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,1000",
        ],
        &url,
    );
    let png = std::fs::read(&shot).unwrap_or_else(|_| panic!("no screenshot: {}", stderr(&output)));
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
}
