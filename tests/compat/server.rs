//! The scripted model server: a std-only HTTP/1.1 server on 127.0.0.1 that answers the agent
//! CLIs' model requests — Anthropic Messages, OpenAI Responses and Chat Completions (each with
//! SSE when asked), and the Gemini API (`:streamGenerateContent?alt=sse`, `:generateContent`,
//! `:countTokens`) — from one fixed script, and logs every request for failure messages.
//!
//! The script is a conversation the suite knows the ground truth of:
//! - a request carrying the first prompt gets a text and one shell tool call (`echo` of a marker);
//! - a request whose history holds the tool's output gets the final answer (with fake secrets);
//! - a request carrying the second prompt (the resumed session) gets a plain answer;
//! - a CLI that offers no tools at all (aider) gets the final answer to its first prompt;
//! - a request that offers no shell tool (titles, routing, summaries) gets a short side answer.
//!
//! One connection is one request (`Connection: close`), which every client here accepts and which
//! keeps the server a loop of plain reads and writes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use serde_json::{Value, json};

/// The first prompt: asks for the marker command.
pub const PROMPT_1: &str = "compat turn one: run the marker command";
/// The second prompt, sent by resuming the session.
pub const PROMPT_2: &str = "compat turn two: say goodbye";
/// The model's text before the tool call.
pub const TEXT_1: &str = "I will run the marker command.";
/// The shell command of the tool call; its output differs from its text, so a request whose
/// history holds the output is recognisably one that carries the tool's result.
/// (Quotes, not `$((…))`: Gemini CLI refuses command substitution.)
pub const COMMAND: &str = "echo compat-4''2-marker";
/// What [`COMMAND`] prints.
pub const OUTPUT: &str = "compat-42-marker";
/// Fake secrets in the final answer; the reader must redact every one.
pub const SECRETS: &[&str] = &[
    "sk-ant-api03-CompatFakeKey0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH-0123456789AA",
    "ghp_CompatFake0123456789abcdefghijklmnopqr",
];
/// The final answer of turn two.
pub const TEXT_3: &str = "Goodbye from the compat model.";

/// The final answer of turn one, holding [`OUTPUT`] and the [`SECRETS`].
pub fn final_text() -> String {
    format!(
        "The command printed {OUTPUT}. Deploy key: {} and token {} (fake).",
        SECRETS[0], SECRETS[1]
    )
}

/// The tool call the server makes: the tool's name as the CLI offers it, and its arguments.
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub name: String,
    pub args: Value,
}

/// What a [`ToolPicker`] gives for a request of a CLI that offers the model no tools at all
/// (aider): the request is the conversation's, not a side request, and its first prompt gets
/// the final answer (with [`OUTPUT`] and the [`SECRETS`]) without a tool call.
pub fn answer_only() -> Option<ToolCall> {
    Some(ToolCall {
        name: String::new(),
        args: Value::Null,
    })
}

/// One logged request.
#[derive(Debug, Clone)]
pub struct Logged {
    pub method: String,
    pub path: String,
    pub body: String,
    /// What the server answered: `tool`, `answer`, `final`, `second`, `side` or `other`.
    pub step: &'static str,
    /// The tool the answer called, for a `tool` step.
    pub called: Option<String>,
}

/// A running server; it stops when the test process exits.
pub struct ModelServer {
    pub port: u16,
    log: Arc<Mutex<Vec<Logged>>>,
}

/// Chooses the tool call from the tools a request offers (name → the arguments to call it
/// with) and the request's body (whose conversation it is); `None` when the request offers no
/// tool to call (a side request).
pub type ToolPicker = fn(tools: &[String], body: &str) -> Option<ToolCall>;

impl ModelServer {
    pub fn start(pick: ToolPicker) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let shared = log.clone();
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = shared.clone();
                thread::spawn(move || {
                    let _ = serve(stream, pick, &log);
                });
            }
        });
        ModelServer { port, log }
    }

    pub fn log(&self) -> Vec<Logged> {
        self.log.lock().unwrap().clone()
    }

    /// The requests so far, one line each with the start of the body, for failure messages.
    pub fn describe(&self) -> String {
        self.log()
            .iter()
            .map(|l| {
                let body: String = l.body.chars().take(300).collect();
                format!("{} {} -> {}: {body}\n", l.method, l.path, l.step)
            })
            .collect()
    }

    /// The tools the server's answers called, in order.
    pub fn called_tools(&self) -> Vec<String> {
        self.log().into_iter().filter_map(|l| l.called).collect()
    }

    /// The tool calls the server made, in order.
    pub fn tool_calls(&self) -> Vec<&'static str> {
        self.log()
            .iter()
            .map(|l| l.step)
            .filter(|s| *s == "tool")
            .collect()
    }
}

struct Request {
    method: String,
    path: String,
    body: Vec<u8>,
}

fn read_request(stream: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if stream.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut words = line.split_whitespace();
    let method = words.next().unwrap_or_default().to_string();
    let path = words.next().unwrap_or_default().to_string();
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        let mut header = String::new();
        stream.read_line(&mut header)?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse().unwrap_or(0),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                _ => {}
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            stream.read_line(&mut size)?;
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            let mut chunk = vec![0; size + 2];
            stream.read_exact(&mut chunk)?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        body.resize(length, 0);
        stream.read_exact(&mut body)?;
    }
    Ok(Some(Request { method, path, body }))
}

fn serve(stream: TcpStream, pick: ToolPicker, log: &Mutex<Vec<Logged>>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let Some(request) = read_request(&mut reader)? else {
        return Ok(());
    };
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let text = String::from_utf8_lossy(&request.body).into_owned();
    let route = request
        .path
        .split('?')
        .next()
        .unwrap_or_default()
        .to_string();
    let offered = offered_tools(&body);
    let step = match pick(&offered, &text) {
        _ if request.method == "GET" => Step::Other,
        None => Step::Side,
        Some(_) if text.contains(PROMPT_2) => Step::Second,
        Some(_) if text.contains(OUTPUT) => Step::Final,
        Some(call) if call.name.is_empty() => Step::Answer,
        Some(call) => Step::Tool(call),
    };
    log.lock().unwrap().push(Logged {
        method: request.method.clone(),
        path: request.path.clone(),
        body: text,
        step: step.name(),
        called: match &step {
            Step::Tool(call) => Some(call.name.clone()),
            _ => None,
        },
    });
    // Echoed back: Claude Code notes a model it does not know when it resumes a session.
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("compat-model");
    let streamed = body.get("stream").and_then(Value::as_bool) == Some(true)
        || route.ends_with(":streamGenerateContent");
    let mut out = stream;
    let (status, content_type, payload) = if route.ends_with("/models") || request.method == "GET" {
        (
            "200 OK",
            "application/json",
            json!({"object": "list", "data": [{"id": "compat-model", "object": "model", "owned_by": "compat"}]})
                .to_string(),
        )
    } else if route.ends_with(":countTokens") {
        (
            "200 OK",
            "application/json",
            json!({"totalTokens": 10}).to_string(),
        )
    } else if route.contains(":streamGenerateContent") || route.contains(":generateContent") {
        gemini(&step, streamed)
    } else if route.ends_with("/messages") {
        anthropic(&step, streamed, model)
    } else if route.ends_with("/responses") {
        responses(&step)
    } else if route.ends_with("/chat/completions") {
        chat(&step, streamed)
    } else {
        (
            "404 Not Found",
            "application/json",
            json!({"error": {"message": format!("no route {route}")}}).to_string(),
        )
    };
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        payload.len()
    )?;
    out.write_all(payload.as_bytes())?;
    out.flush()
}

enum Step {
    Tool(ToolCall),
    /// The first prompt of a CLI that offers the model no tools ([`answer_only`]): the final
    /// answer at once.
    Answer,
    Final,
    Second,
    Side,
    Other,
}

impl Step {
    fn name(&self) -> &'static str {
        match self {
            Step::Tool(_) => "tool",
            Step::Answer => "answer",
            Step::Final => "final",
            Step::Second => "second",
            Step::Side => "side",
            Step::Other => "other",
        }
    }

    /// The answer's text, and its tool call if any.
    fn answer(&self) -> (String, Option<&ToolCall>) {
        match self {
            Step::Tool(call) => (TEXT_1.to_string(), Some(call)),
            Step::Final | Step::Answer => (final_text(), None),
            Step::Second => (TEXT_3.to_string(), None),
            // Side models asked for JSON (Gemini's routing and next-speaker checks, titles)
            // find what they look for; a plain reader sees a short text.
            Step::Side | Step::Other => (
                json!({"title": "Compat session", "reasoning": "compat", "next_speaker": "user", "model_choice": "flash", "complexity_reasoning": "compat", "complexity_score": 1, "isNewTopic": true})
                    .to_string(),
                None,
            ),
        }
    }
}

/// Names of the function tools a request offers, whatever the wire.
pub fn offered_tools(body: &Value) -> Vec<String> {
    let mut names = Vec::new();
    for tool in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        // Anthropic and Responses: `name`; Chat Completions: `function.name`; Gemini:
        // `functionDeclarations[].name`.
        if let Some(name) = tool.get("name").and_then(Value::as_str) {
            names.push(name.to_string());
        }
        if let Some(name) = tool.pointer("/function/name").and_then(Value::as_str) {
            names.push(name.to_string());
        }
        for decl in tool
            .get("functionDeclarations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(name) = decl.get("name").and_then(Value::as_str) {
                names.push(name.to_string());
            }
        }
    }
    names
}

fn sse(events: &[(Option<&str>, Value)]) -> String {
    let mut out = String::new();
    for (event, data) in events {
        if let Some(event) = event {
            out.push_str(&format!("event: {event}\n"));
        }
        out.push_str(&format!("data: {data}\n\n"));
    }
    out
}

const USAGE_IN: u64 = 20;
const USAGE_OUT: u64 = 10;

fn anthropic(step: &Step, streamed: bool, model: &str) -> (&'static str, &'static str, String) {
    let (text, call) = step.answer();
    let id = message_id("msg");
    let stop = if call.is_some() {
        "tool_use"
    } else {
        "end_turn"
    };
    let usage = json!({"input_tokens": USAGE_IN, "output_tokens": USAGE_OUT, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    let mut content = vec![json!({"type": "text", "text": text})];
    if let Some(call) = call {
        // Each call an id of its own: Claude Code (2.1.332) drops a call whose id an earlier
        // one had, and a turn that loads a deferred tool first makes two calls.
        let call_id = id.replacen("msg_", "toolu_", 1);
        content.push(
            json!({"type": "tool_use", "id": call_id, "name": call.name, "input": call.args}),
        );
    }
    if !streamed {
        let message = json!({"id": id, "type": "message", "role": "assistant", "model": model, "content": content, "stop_reason": stop, "stop_sequence": null, "usage": usage});
        return ("200 OK", "application/json", message.to_string());
    }
    let mut events = vec![(
        Some("message_start"),
        json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage}}),
    )];
    for (index, block) in content.iter().enumerate() {
        let (start, delta) = if block["type"] == "text" {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            )
        } else {
            (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            )
        };
        events.push((
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        events.push((
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        ));
        events.push((
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.push((
        Some("message_delta"),
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": USAGE_OUT}}),
    ));
    events.push((Some("message_stop"), json!({"type": "message_stop"})));
    ("200 OK", "text/event-stream", sse(&events))
}

/// Numbers the answers: real servers give every message its own id, and readers key on them.
static ANSWERS: AtomicUsize = AtomicUsize::new(0);

fn message_id(prefix: &str) -> String {
    format!(
        "{prefix}_compat{:04}",
        ANSWERS.fetch_add(1, Ordering::Relaxed)
    )
}

fn responses(step: &Step) -> (&'static str, &'static str, String) {
    let (text, call) = step.answer();
    let id = message_id("msg");
    let message = json!({"type": "message", "id": id, "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]});
    let mut events = vec![
        (
            Some("response.created"),
            json!({"type": "response.created", "response": {"id": "resp_compat"}}),
        ),
        (
            Some("response.output_item.added"),
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []}}),
        ),
        (
            Some("response.output_text.delta"),
            json!({"type": "response.output_text.delta", "item_id": id, "output_index": 0, "content_index": 0, "delta": text}),
        ),
        (
            Some("response.output_item.done"),
            json!({"type": "response.output_item.done", "output_index": 0, "item": message}),
        ),
    ];
    if let Some(call) = call {
        // A string `args` is the input of a freeform tool (Codex's `apply_patch`): a
        // `custom_tool_call`, whose input is the text itself.
        let item = match &call.args {
            Value::String(input) => {
                json!({"type": "custom_tool_call", "id": "ctc_compat", "status": "completed", "call_id": "call_compat01", "name": call.name, "input": input})
            }
            args => {
                json!({"type": "function_call", "id": "fc_compat", "status": "completed", "call_id": "call_compat01", "name": call.name, "arguments": args.to_string()})
            }
        };
        events.push((
            Some("response.output_item.added"),
            json!({"type": "response.output_item.added", "output_index": 1, "item": item}),
        ));
        events.push((
            Some("response.output_item.done"),
            json!({"type": "response.output_item.done", "output_index": 1, "item": item}),
        ));
    }
    events.push((
        Some("response.completed"),
        json!({"type": "response.completed", "response": {"id": "resp_compat", "status": "completed", "usage": {"input_tokens": USAGE_IN, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": USAGE_OUT, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": USAGE_IN + USAGE_OUT}}}),
    ));
    ("200 OK", "text/event-stream", sse(&events))
}

fn chat(step: &Step, streamed: bool) -> (&'static str, &'static str, String) {
    let (text, call) = step.answer();
    let id = message_id("chatcmpl");
    let finish = if call.is_some() { "tool_calls" } else { "stop" };
    let usage = json!({"prompt_tokens": USAGE_IN, "completion_tokens": USAGE_OUT, "total_tokens": USAGE_IN + USAGE_OUT});
    let tool_calls = call.map(|call| {
        json!([{"index": 0, "id": "call_compat01", "type": "function", "function": {"name": call.name, "arguments": call.args.to_string()}}])
    });
    if !streamed {
        let mut message = json!({"role": "assistant", "content": text});
        if let Some(calls) = &tool_calls {
            message["tool_calls"] = calls.clone();
        }
        let body = json!({"id": id, "object": "chat.completion", "created": 1_700_000_000, "model": "compat-model", "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage});
        return ("200 OK", "application/json", body.to_string());
    }
    let chunk = |delta: Value, finish: Value| {
        (
            None,
            json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "compat-model", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": text}),
        Value::Null,
    )];
    if let Some(calls) = tool_calls {
        events.push(chunk(json!({"tool_calls": calls}), Value::Null));
    }
    events.push(chunk(json!({}), json!(finish)));
    events.push((
        None,
        json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "compat-model", "choices": [], "usage": usage}),
    ));
    let mut body = sse(&events);
    body.push_str("data: [DONE]\n\n");
    ("200 OK", "text/event-stream", body)
}

fn gemini(step: &Step, streamed: bool) -> (&'static str, &'static str, String) {
    let (text, call) = step.answer();
    let mut parts = vec![json!({"text": text})];
    if let Some(call) = call {
        parts.push(json!({"functionCall": {"name": call.name, "args": call.args}}));
    }
    let response = json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": USAGE_IN, "candidatesTokenCount": USAGE_OUT, "totalTokenCount": USAGE_IN + USAGE_OUT},
        "modelVersion": "gemini-compat"
    });
    if streamed {
        ("200 OK", "text/event-stream", sse(&[(None, response)]))
    } else {
        ("200 OK", "application/json", response.to_string())
    }
}
