//! The MCP server's stdio transport: one JSON-RPC message per line, every line checked
//! before rmcp sees it.
//!
//! rmcp's own stdio transport drops a line that is not JSON (no answer at all) and answers
//! a malformed request with an error that has no `id`. JSON-RPC 2.0 wants one answer per
//! bad frame, with `"id": null` when its id cannot be read. Here one thread reads stdin
//! and answers every bad frame itself (-32700 parse error, -32600 invalid request, -32602
//! invalid params of a method the server serves) and hands the good ones to rmcp; one
//! thread writes every line to stdout, rmcp's and the reader's, so lines never interleave.

use std::io::{self, BufRead, Write};

use rmcp::model::{
    CallToolRequest, ClientJsonRpcMessage, ClientRequest, ErrorCode, InitializeRequest,
    JsonRpcMessage, JsonRpcRequest, ListToolsRequest, PingRequest, ServerJsonRpcMessage,
    ServerResult,
};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

/// The longest line read (rmcp's limit too); a longer one is answered and skipped, not
/// buffered.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// rmcp's side of the transport: the messages the reader let through, and the writer.
pub struct Stdio {
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    out: Out,
    /// Whether rmcp has left its handshake loop, which ends the session on a
    /// notification or a response (it expects requests only). Until then those are
    /// dropped here: they get no answer either way.
    started: bool,
}

impl Stdio {
    /// Starts the reader and writer threads on the process's stdin and stdout; returns
    /// the transport and the writer (to flush what is left once the server stops).
    pub fn start() -> io::Result<(Stdio, Out)> {
        let out = Out::start()?;
        let (to_rmcp, incoming) = mpsc::channel(64);
        let reader_out = out.clone();
        // Not joined: a read of stdin cannot be interrupted, and the process exits
        // once the server stops.
        std::thread::Builder::new()
            .name("mcp-stdin".into())
            .spawn(move || read_frames(io::stdin().lock(), &to_rmcp, &reader_out))?;
        let transport = Stdio {
            incoming,
            out: out.clone(),
            started: false,
        };
        Ok((transport, out))
    }
}

impl Transport<RoleServer> for Stdio {
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = io::Result<()>> + Send + 'static {
        // A successful answer to anything but the requests rmcp serves during its
        // handshake (ping, discover) means the handshake is over.
        if let JsonRpcMessage::Response(response) = &item
            && !matches!(
                response.result,
                ServerResult::EmptyResult(_) | ServerResult::DiscoverResult(_)
            )
        {
            self.started = true;
        }
        let line = encode(&item);
        let out = self.out.clone();
        async move { out.write(line?).await }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let message = self.incoming.recv().await?;
            if self.started || matches!(message, JsonRpcMessage::Request(_)) {
                return Some(message);
            }
            tracing::debug!("MCP: a notification or response before the handshake, dropped");
        }
    }

    async fn close(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One line of JSON for a message of the server. An error without an id (rmcp leaves
/// it out when it has none) gets `"id": null`, which JSON-RPC 2.0 requires.
fn encode(message: &ServerJsonRpcMessage) -> io::Result<Vec<u8>> {
    let mut value = serde_json::to_value(message)?;
    if let Value::Object(object) = &mut value
        && object.contains_key("error")
        && !object.contains_key("id")
    {
        object.insert("id".into(), Value::Null);
    }
    let mut line = serde_json::to_vec(&value)?;
    line.push(b'\n');
    Ok(line)
}

/// A line to write, and who waits for it to be written.
type Outgoing = (Vec<u8>, Option<oneshot::Sender<io::Result<()>>>);

/// The one writer of stdout: a thread that writes and flushes whole lines in the order
/// they are given.
#[derive(Clone)]
pub struct Out(mpsc::UnboundedSender<Outgoing>);

impl Out {
    fn start() -> io::Result<Out> {
        let (sender, mut lines) = mpsc::unbounded_channel::<Outgoing>();
        std::thread::Builder::new()
            .name("mcp-stdout".into())
            .spawn(move || {
                while let Some((line, done)) = lines.blocking_recv() {
                    let mut stdout = io::stdout().lock();
                    let written = stdout.write_all(&line).and_then(|()| stdout.flush());
                    if let Err(err) = &written {
                        tracing::error!("MCP: writing to stdout: {err}");
                    }
                    if let Some(done) = done {
                        let _ = done.send(written);
                    }
                }
            })?;
        Ok(Out(sender))
    }

    /// Queues a line without waiting for it.
    fn post(&self, line: Vec<u8>) {
        let _ = self.0.send((line, None));
    }

    /// Writes a line (empty: nothing) once every line queued before it is written.
    pub async fn write(&self, line: Vec<u8>) -> io::Result<()> {
        let (done, written) = oneshot::channel();
        let gone = || io::Error::new(io::ErrorKind::BrokenPipe, "the stdout writer stopped");
        self.0.send((line, Some(done))).map_err(|_| gone())?;
        written.await.map_err(|_| gone())?
    }
}

/// How a line read ended.
enum Read {
    /// A line ended by a newline.
    Line,
    /// The last bytes before the end of input, with no newline.
    Last,
    /// A line longer than [`MAX_LINE`], skipped to its newline.
    TooLong,
    Eof,
}

/// Reads one line into `line` (its newline included), never holding more than `max`
/// bytes of it.
fn next_line(input: &mut impl BufRead, line: &mut Vec<u8>, max: usize) -> io::Result<Read> {
    line.clear();
    let mut too_long = false;
    loop {
        let available = match input.fill_buf() {
            Ok(available) => available,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if available.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Read::TooLong,
                (false, true) => Read::Eof,
                (false, false) => Read::Last,
            });
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let take = newline.map_or(available.len(), |at| at + 1);
        if !too_long {
            if line.len() + take > max {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(&available[..take]);
            }
        }
        input.consume(take);
        if newline.is_some() {
            return Ok(if too_long { Read::TooLong } else { Read::Line });
        }
    }
}

/// The reader thread: every frame of `input` is answered here or handed to rmcp, until
/// the end of input (which ends the session) or rmcp stops.
fn read_frames(mut input: impl BufRead, to_rmcp: &mpsc::Sender<ClientJsonRpcMessage>, out: &Out) {
    let mut line = Vec::new();
    // Until the client sends `initialize`, its other requests (but `ping`, which MCP
    // allows at any time) are answered here, saying so.
    let mut initialized = false;
    loop {
        let last = match next_line(&mut input, &mut line, MAX_LINE) {
            Ok(Read::Line) => false,
            Ok(Read::Last) => true,
            Ok(Read::TooLong) => {
                out.post(error_line(
                    &Value::Null,
                    ErrorCode::PARSE_ERROR,
                    &format!("Parse error: a message longer than {MAX_LINE} bytes, not read"),
                ));
                continue;
            }
            Ok(Read::Eof) => return,
            Err(err) => {
                tracing::error!("MCP: reading stdin: {err}");
                return;
            }
        };
        match check(&line) {
            Verdict::Forward(message) if !initialized && before_initialize(&message).is_some() => {
                let id = before_initialize(&message).unwrap_or(Value::Null);
                out.post(error_line(
                    &id,
                    ErrorCode::INVALID_REQUEST,
                    "Invalid Request: the session is not initialized: send `initialize` first, then `notifications/initialized`",
                ));
            }
            Verdict::Forward(message) => {
                if let JsonRpcMessage::Request(JsonRpcRequest {
                    request: ClientRequest::InitializeRequest(_),
                    ..
                }) = message.as_ref()
                {
                    initialized = true;
                }
                if to_rmcp.blocking_send(*message).is_err() {
                    return;
                }
            }
            Verdict::Answer(answer) => out.post(answer),
            Verdict::Skip(why) => tracing::debug!("MCP: {why}, no answer"),
        }
        if last {
            return;
        }
    }
}

/// The id of a request that must wait for `initialize` (anything but `initialize` and
/// `ping`); `None` for those two, and for notifications and responses.
fn before_initialize(message: &ClientJsonRpcMessage) -> Option<Value> {
    match message {
        JsonRpcMessage::Request(JsonRpcRequest {
            request: ClientRequest::InitializeRequest(_) | ClientRequest::PingRequest(_),
            ..
        }) => None,
        JsonRpcMessage::Request(request) => {
            Some(serde_json::to_value(&request.id).unwrap_or(Value::Null))
        }
        _ => None,
    }
}

/// What the reader does with a frame.
pub enum Verdict {
    /// A message rmcp can take.
    Forward(Box<ClientJsonRpcMessage>),
    /// Not one: this error response (a line of JSON) answers it.
    Answer(Vec<u8>),
    /// No answer is due: a blank line, or a notification or response rmcp cannot read
    /// (JSON-RPC answers neither).
    Skip(&'static str),
}

/// Checks one frame (a line, its newline included) as JSON-RPC 2.0 and MCP.
pub fn check(frame: &[u8]) -> Verdict {
    let frame = frame.strip_suffix(b"\n").unwrap_or(frame);
    let frame = frame.strip_suffix(b"\r").unwrap_or(frame);
    // RFC 8259 lets a parser ignore a byte order mark.
    let frame = frame.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(frame);
    if frame.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
        return Verdict::Skip("a blank line");
    }
    let parse_error = |why: String| {
        Verdict::Answer(error_line(
            &Value::Null,
            ErrorCode::PARSE_ERROR,
            &format!("Parse error: {why}"),
        ))
    };
    let text = match std::str::from_utf8(frame) {
        Ok(text) => text,
        Err(err) => return parse_error(format!("not UTF-8 ({err})")),
    };
    // serde_json refuses nesting deeper than 128 (its recursion limit): a parse error.
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(err) => return parse_error(format!("not JSON ({err})")),
    };
    let object = match value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return invalid_request(
                &Value::Null,
                "batches are not supported: send one message per line",
            );
        }
        _ => return invalid_request(&Value::Null, "a message is a JSON object"),
    };
    check_object(text, &object)
}

/// Checks a JSON object as a request, a notification or a response.
fn check_object(text: &str, object: &Map<String, Value>) -> Verdict {
    // The id to answer with: one that can be read (a string or a number), else null.
    let (id, id_error) = match object.get("id") {
        None => (None, None),
        Some(id @ Value::String(_)) => (Some(id.clone()), None),
        Some(id @ Value::Number(n)) if n.is_i64() => (Some(id.clone()), None),
        Some(id @ Value::Number(_)) => (
            Some(id.clone()),
            Some("`id` must be a string or an integer (64 bits)"),
        ),
        Some(_) => (
            Some(Value::Null),
            Some("`id` must be a string or an integer"),
        ),
    };
    let answer_id = id.clone().unwrap_or(Value::Null);
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return invalid_request(&answer_id, "`jsonrpc` must be \"2.0\"");
    }
    let Some(method) = object.get("method") else {
        if object.contains_key("result") || object.contains_key("error") {
            // A response from the client: never answered.
            return match serde_json::from_str::<ClientJsonRpcMessage>(text) {
                Ok(message) => Verdict::Forward(Box::new(message)),
                Err(_) => Verdict::Skip("a malformed response"),
            };
        }
        return invalid_request(&answer_id, "a request needs a `method`");
    };
    let Value::String(method) = method else {
        return invalid_request(&answer_id, "`method` must be a string");
    };
    if let Some(why) = id_error {
        return invalid_request(&answer_id, why);
    }
    if object.contains_key("result") || object.contains_key("error") {
        return invalid_request(&answer_id, "a request has no `result` or `error`");
    }
    match object.get("params") {
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(Value::Array(_)) if id.is_some() => {
            return Verdict::Answer(error_line(
                &answer_id,
                ErrorCode::INVALID_PARAMS,
                &format!("Invalid params: `{method}` takes its `params` as an object"),
            ));
        }
        Some(Value::Array(_)) => return Verdict::Skip("a notification with params by position"),
        Some(_) => return invalid_request(&answer_id, "`params` must be an object"),
    }
    let message = match serde_json::from_str::<ClientJsonRpcMessage>(text) {
        Ok(message) => message,
        Err(_) if id.is_none() => return Verdict::Skip("a notification rmcp cannot read"),
        Err(err) => return invalid_request(&answer_id, &err.to_string()),
    };
    // rmcp reads a request whose params do not fit its method as a custom request, which
    // its handler answers "method not found": these are invalid params.
    if let JsonRpcMessage::Request(JsonRpcRequest {
        request: ClientRequest::CustomRequest(_),
        ..
    }) = &message
        && let Some(why) = params_error(method, text)
    {
        return Verdict::Answer(error_line(
            &answer_id,
            ErrorCode::INVALID_PARAMS,
            &format!("Invalid params: `{method}`: {why}"),
        ));
    }
    Verdict::Forward(Box::new(message))
}

/// Why a request's params do not fit its method, for the methods this server serves.
fn params_error(method: &str, text: &str) -> Option<String> {
    fn fit<R: serde::de::DeserializeOwned>(text: &str) -> Option<String> {
        let err = serde_json::from_str::<JsonRpcRequest<R>>(text).err()?;
        // serde_json ends with " at line 1 column N": the frame is one line, the field
        // is what matters.
        let message = err.to_string();
        Some(match message.rfind(" at line ") {
            Some(at) => message[..at].to_string(),
            None => message,
        })
    }
    match method {
        "initialize" => fit::<InitializeRequest>(text),
        "ping" => fit::<PingRequest>(text),
        "tools/list" => fit::<ListToolsRequest>(text),
        "tools/call" => fit::<CallToolRequest>(text),
        _ => None,
    }
}

fn invalid_request(id: &Value, why: &str) -> Verdict {
    Verdict::Answer(error_line(
        id,
        ErrorCode::INVALID_REQUEST,
        &format!("Invalid Request: {why}"),
    ))
}

/// A JSON-RPC 2.0 error response, as a line.
fn error_line(id: &Value, code: ErrorCode, message: &str) -> Vec<u8> {
    let mut line = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code.0, "message": message},
    })
    .to_string()
    .into_bytes();
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error response a frame gets, parsed, or `None` when it gets none here.
    fn answer(frame: &[u8]) -> Option<Value> {
        match check(frame) {
            Verdict::Answer(line) => Some(serde_json::from_slice(&line).unwrap()),
            Verdict::Forward(_) | Verdict::Skip(_) => None,
        }
    }

    #[test]
    fn every_bad_frame_gets_one_error_with_an_id_member() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        for (frame, code, id) in [
            (&b"{not json"[..], -32700, json!(null)),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffng\"}",
                -32700,
                json!(null),
            ),
            (deep.as_bytes(), -32700, json!(null)),
            (b"[]", -32600, json!(null)),
            (b"7", -32600, json!(null)),
            (
                br#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
                -32600,
                json!(3),
            ),
            (
                br#"{"jsonrpc":"2.0","id":"a","method":5}"#,
                -32600,
                json!("a"),
            ),
            (
                br#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
                -32600,
                json!(null),
            ),
            (
                br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
                -32600,
                json!(1.5),
            ),
            (br#"{"jsonrpc":"2.0","id":4}"#, -32600, json!(4)),
            (
                br#"{"jsonrpc":"2.0","method":"x","params":"p"}"#,
                -32600,
                json!(null),
            ),
            (
                br#"{"jsonrpc":"2.0","id":5,"method":"tools/call"}"#,
                -32602,
                json!(5),
            ),
            (
                br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{}}"#,
                -32602,
                json!(6),
            ),
            (
                br#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":[]}"#,
                -32602,
                json!(7),
            ),
        ] {
            let answer = answer(frame).unwrap_or_else(|| panic!("no answer: {frame:?}"));
            assert_eq!(answer["jsonrpc"], "2.0");
            assert_eq!(answer["error"]["code"], code, "{answer}");
            assert_eq!(answer.get("id"), Some(&id), "{answer}");
        }
    }

    #[test]
    fn good_frames_notifications_and_blank_lines_get_no_answer_here() {
        for frame in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#[..],
            br#"{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{}}"#,
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stats"}}"#,
            br#"{"jsonrpc":"2.0","id":3,"method":"no/such/method"}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/whatever","params":{"a":1}}"#,
            br#"{"jsonrpc":"2.0","id":9,"result":{}}"#,
            b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n",
            b"   \r\n",
        ] {
            assert!(
                answer(frame).is_none(),
                "{}",
                String::from_utf8_lossy(frame)
            );
        }
    }

    #[test]
    fn a_line_too_long_is_skipped_to_its_newline() {
        let mut input = io::Cursor::new(b"0123456789\nabc\nlast".to_vec());
        let mut line = Vec::new();
        assert!(matches!(
            next_line(&mut input, &mut line, 5),
            Ok(Read::TooLong)
        ));
        assert!(matches!(
            next_line(&mut input, &mut line, 5),
            Ok(Read::Line)
        ));
        assert_eq!(line, b"abc\n");
        assert!(matches!(
            next_line(&mut input, &mut line, 5),
            Ok(Read::Last)
        ));
        assert_eq!(line, b"last");
        assert!(matches!(next_line(&mut input, &mut line, 5), Ok(Read::Eof)));
    }
}
