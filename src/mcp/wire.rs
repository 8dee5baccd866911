//! The MCP server's stdio transport: one JSON-RPC message a line, read in bounded chunks, and
//! every line that is not a notification answered. A line that is not JSON gets `-32700`; a line
//! over [`MAX_REQUEST_BYTES`] or nested deeper than [`MAX_REQUEST_DEPTH`], or JSON that is no
//! JSON-RPC message, gets `-32600`; each with the request's `id` when it can be read from the
//! line's first [`ID_SCAN_BYTES`], else `id: null` (JSON-RPC 2.0 §5). A line too long is skipped
//! to its newline without being kept: at most [`MAX_REQUEST_BYTES`] of one line is ever buffered.

use std::marker::PhantomData;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest request line read (its newline excluded); a longer one is answered `-32600`.
pub(crate) const MAX_REQUEST_BYTES: usize = 4 << 20;
/// The deepest nesting of arrays and objects in a request; a deeper one is answered `-32600`
/// before it is parsed.
pub(crate) const MAX_REQUEST_DEPTH: usize = 64;
/// How much of a rejected line is searched for its `id`.
pub(crate) const ID_SCAN_BYTES: usize = 64 << 10;
/// How much is read from stdin at a time.
const CHUNK_BYTES: usize = 64 << 10;

/// JSON-RPC's "Parse error".
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's "Invalid Request".
const INVALID_REQUEST: i64 = -32600;

/// Why a line was not handed to the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rejected {
    /// Not JSON.
    NotJson,
    /// Over [`MAX_REQUEST_BYTES`].
    TooLong,
    /// Nested deeper than [`MAX_REQUEST_DEPTH`].
    TooDeep,
    /// JSON, but not a JSON-RPC message the server takes.
    NotAMessage(String),
}

impl Rejected {
    fn code(&self) -> i64 {
        match self {
            Rejected::NotJson => PARSE_ERROR,
            _ => INVALID_REQUEST,
        }
    }

    fn message(&self) -> String {
        match self {
            Rejected::NotJson => "Parse error: the line is not JSON".to_string(),
            Rejected::TooLong => {
                format!("Invalid Request: the line is longer than {MAX_REQUEST_BYTES} bytes")
            }
            Rejected::TooDeep => format!(
                "Invalid Request: arrays and objects nested deeper than {MAX_REQUEST_DEPTH}"
            ),
            Rejected::NotAMessage(why) => format!("Invalid Request: {why}"),
        }
    }
}

/// What one complete line is.
#[derive(Debug)]
pub(crate) enum Decoded {
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Nothing to answer: a blank line, or a notification the server does not know.
    Nothing,
    /// Answered with this error object (`id` already chosen).
    Error(Value),
}

/// Decodes one line (without its newline) as the server reads it.
pub(crate) fn decode_line(line: &[u8]) -> Decoded {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Decoded::Nothing;
    }
    if line.len() > MAX_REQUEST_BYTES {
        return Decoded::Error(error_answer(&Rejected::TooLong, line));
    }
    if nesting_exceeds(line, MAX_REQUEST_DEPTH) {
        return Decoded::Error(error_answer(&Rejected::TooDeep, line));
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(_) => return Decoded::Error(error_answer(&Rejected::NotJson, line)),
    };
    let is_notification = value.get("method").is_some() && value.get("id").is_none();
    let id = value.get("id").filter(|id| is_id(id)).cloned();
    match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value) {
        Ok(message) => Decoded::Message(Box::new(message)),
        // JSON-RPC answers no notification, not even a wrong one.
        Err(_) if is_notification => Decoded::Nothing,
        Err(e) => Decoded::Error(answer(
            &Rejected::NotAMessage(e.to_string()),
            id.unwrap_or(Value::Null),
        )),
    }
}

/// The error answer to `line`: its id when its first [`ID_SCAN_BYTES`] say it.
pub(crate) fn error_answer(rejected: &Rejected, line: &[u8]) -> Value {
    let head = &line[..line.len().min(ID_SCAN_BYTES)];
    answer(rejected, read_id(head).unwrap_or(Value::Null))
}

fn answer(rejected: &Rejected, id: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": rejected.code(), "message": rejected.message()},
    })
}

/// A JSON-RPC id: a string or an integer.
fn is_id(value: &Value) -> bool {
    value.is_string() || value.is_i64() || value.is_u64()
}

/// Whether arrays and objects in `line` nest deeper than `max` (brackets inside strings are
/// text). Counted on the bytes, so that no parser recurses into a hostile line.
pub(crate) fn nesting_exceeds(line: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in line {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// The top-level `"id"` of a line that may be broken, cut or too deep: found by scanning for the
/// key at nesting depth 1 and reading the string or integer after it; `None` when the head does
/// not hold a whole one.
pub(crate) fn read_id(head: &[u8]) -> Option<Value> {
    let (mut depth, mut i) = (0usize, 0usize);
    // Whether the string that starts next is in key position of the top-level object.
    let mut key_next = false;
    while i < head.len() {
        let b = head[i];
        match b {
            b'"' => {
                let open = i;
                i = string_end(head, open)?;
                let is_key = depth == 1 && key_next;
                key_next = false;
                if is_key && &head[open..i] == b"\"id\"" {
                    let mut j = skip_ws(head, i);
                    if head.get(j) != Some(&b':') {
                        continue;
                    }
                    j = skip_ws(head, j + 1);
                    let end = match head.get(j)? {
                        b'"' => string_end(head, j)?,
                        b'-' | b'0'..=b'9' => {
                            let len = head[j..].iter().position(|c| {
                                !matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                            })?;
                            j + len
                        }
                        _ => return None,
                    };
                    return serde_json::from_slice::<Value>(&head[j..end])
                        .ok()
                        .filter(is_id);
                }
                continue;
            }
            b'{' => {
                depth += 1;
                key_next = depth == 1;
            }
            b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => key_next = depth == 1,
            _ => {}
        }
        i += 1;
    }
    None
}

/// One past the closing quote of the string that opens at `open`.
fn string_end(head: &[u8], open: usize) -> Option<usize> {
    let mut i = open + 1;
    while i < head.len() {
        match head[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

fn skip_ws(head: &[u8], mut i: usize) -> usize {
    while head.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The server's side of stdio: requests read from `R` line by line, answers written to `W`
/// whole lines at a time (the errors of rejected lines among them).
pub(crate) struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line read so far; in a line too long, only its first [`ID_SCAN_BYTES`].
    line: Vec<u8>,
    /// In a line over [`MAX_REQUEST_BYTES`], skipping to its newline. Kept here, not in a local,
    /// because `receive` may be cancelled between chunks.
    too_long: bool,
    write: Arc<Mutex<W>>,
    /// The error answers being written by tasks of their own, waited for at the end of input.
    answering: Vec<tokio::task::JoinHandle<()>>,
    _role: PhantomData<fn() -> RoleServer>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub(crate) fn new(read: R, write: W) -> Self {
        LineTransport {
            read: BufReader::with_capacity(CHUNK_BYTES, read),
            line: Vec::new(),
            too_long: false,
            write: Arc::new(Mutex::new(write)),
            answering: Vec::new(),
            _role: PhantomData,
        }
    }

    /// Reads to the next newline (or the end of input). `Some(true)`: a whole line in `line`;
    /// `Some(false)`: a line too long was skipped (its head in `line`); `None`: end of input or a
    /// read error with nothing left.
    async fn next_line(&mut self) -> Option<bool> {
        loop {
            let (taken, newline) = {
                let available = match self.read.fill_buf().await {
                    Ok(available) => available,
                    Err(_) => return None,
                };
                if available.is_empty() {
                    // A last line without its newline is still a request.
                    if self.too_long {
                        self.too_long = false;
                        return Some(false);
                    }
                    if self.line.is_empty() {
                        return None;
                    }
                    return Some(true);
                }
                let newline = available.iter().position(|&b| b == b'\n');
                let body = &available[..newline.unwrap_or(available.len())];
                if self.too_long {
                    let room = ID_SCAN_BYTES.saturating_sub(self.line.len());
                    self.line.extend_from_slice(&body[..body.len().min(room)]);
                } else if self.line.len() + body.len() > MAX_REQUEST_BYTES {
                    self.too_long = true;
                    let room = ID_SCAN_BYTES.saturating_sub(self.line.len());
                    self.line.extend_from_slice(&body[..body.len().min(room)]);
                    self.line.truncate(ID_SCAN_BYTES);
                    self.line.shrink_to(ID_SCAN_BYTES);
                } else {
                    self.line.extend_from_slice(body);
                }
                (newline.map_or(available.len(), |at| at + 1), newline)
            };
            self.read.consume(taken);
            if newline.is_some() {
                let whole = !self.too_long;
                self.too_long = false;
                return Some(whole);
            }
        }
    }
}

/// Writes one message and its newline, the lock held so that lines never interleave.
async fn write_line<W: AsyncWrite + Unpin>(
    write: &Mutex<W>,
    mut bytes: Vec<u8>,
) -> std::io::Result<()> {
    bytes.push(b'\n');
    let mut write = write.lock().await;
    write.write_all(&bytes).await?;
    write.flush().await
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move {
            let bytes = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            write_line(&write, bytes).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let Some(whole) = self.next_line().await else {
                // The answers to the last broken lines go out before the server ends.
                for answering in std::mem::take(&mut self.answering) {
                    let _ = answering.await;
                }
                return None;
            };
            let decoded = if whole {
                decode_line(&self.line)
            } else {
                Decoded::Error(error_answer(&Rejected::TooLong, &self.line))
            };
            self.line.clear();
            if self.line.capacity() > CHUNK_BYTES {
                // One long request does not keep its buffer for the server's lifetime.
                self.line.shrink_to(CHUNK_BYTES);
            }
            match decoded {
                Decoded::Message(message) => return Some(*message),
                Decoded::Nothing => {}
                Decoded::Error(answer) => {
                    // Written by a task of its own: the service selects over `receive` and may
                    // drop it at any await, and an answer dropped there (its line already
                    // consumed) would leave the client waiting for ever.
                    let bytes = serde_json::to_vec(&answer).ok()?;
                    let write = self.write.clone();
                    self.answering.retain(|answering| !answering.is_finished());
                    self.answering.push(tokio::spawn(async move {
                        let _ = write_line(&write, bytes).await;
                    }));
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(line: &[u8]) -> Value {
        match decode_line(line) {
            Decoded::Error(e) => e,
            other => panic!("not an error: {other:?}"),
        }
    }

    #[test]
    fn broken_lines_are_answered_with_their_id_when_it_can_be_read() {
        let e = error_of(br#"{"jsonrpc":"2.0","id":9,"method":"#);
        assert_eq!(
            (e["error"]["code"].clone(), e["id"].clone()),
            (json!(-32700), json!(9))
        );
        let e = error_of(b"not json");
        assert_eq!(
            (e["error"]["code"].clone(), e["id"].clone()),
            (json!(-32700), Value::Null)
        );
        let e = error_of(br#"{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":"x"}"#);
        assert_eq!(
            (e["error"]["code"].clone(), e["id"].clone()),
            (json!(-32600), json!("a\"b"))
        );
        // An `id` inside params is not the request's.
        let e = error_of(br#"{"params":{"id":5},"method":"#);
        assert_eq!(e["id"], Value::Null);
        let e = error_of(br#"{"xid":5,"id":6, "#);
        assert_eq!(e["id"], json!(6));
        let e = error_of(br#"{"id":1.5,"#);
        assert_eq!(e["id"], Value::Null);
    }

    #[test]
    fn deep_nesting_is_refused_before_parsing() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"ping","params":{{"a":{}{}}}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let e = error_of(deep.as_bytes());
        assert_eq!(
            (e["error"]["code"].clone(), e["id"].clone()),
            (json!(-32600), json!(3))
        );
        assert!(!nesting_exceeds(br#"{"a":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}"#, 2));
    }

    #[test]
    fn good_lines_and_notifications_are_not_answered() {
        assert!(matches!(
            decode_line(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Decoded::Message(_)
        ));
        for notification in [
            br#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#.as_slice(),
            br#"{"jsonrpc":"2.0","method":"notifications/initialized","params":5}"#,
        ] {
            assert!(!matches!(decode_line(notification), Decoded::Error(_)));
        }
        assert!(matches!(decode_line(b"  \r"), Decoded::Nothing));
    }

    #[tokio::test]
    async fn a_line_too_long_is_skipped_in_chunks_and_answered() {
        let mut input = br#"{"jsonrpc":"2.0","id":"big","method":"ping","params":{"x":""#.to_vec();
        input.resize(input.len() + MAX_REQUEST_BYTES + 10, b'a');
        input.extend_from_slice(b"\"}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");
        let (mut out, write) = tokio::io::duplex(1 << 16);
        let mut transport = LineTransport::new(&input[..], write);
        let message = transport.receive().await.expect("the next request");
        assert!(
            serde_json::to_string(&message)
                .unwrap()
                .contains("\"id\":2")
        );
        assert!(transport.line.capacity() <= CHUNK_BYTES.max(ID_SCAN_BYTES));
        drop(transport);
        let mut answers = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut out, &mut answers)
            .await
            .unwrap();
        let e: Value = serde_json::from_str(answers.trim()).unwrap();
        assert_eq!(
            (e["error"]["code"].clone(), e["id"].clone()),
            (json!(-32600), json!("big"))
        );
    }

    mod proptests {
        //! `scripts/fuzz`'s MCP target: any bytes on stdin, cut anywhere into reads, get one
        //! message or one well-formed error per line (none for blank lines and notifications),
        //! and the server reads on.

        use proptest::prelude::*;

        use super::*;

        /// Lines shaped like requests, broken in the ways a client or an attacker breaks them.
        fn request_line() -> impl Strategy<Value = Vec<u8>> {
            let good = (0u32..1000).prop_map(|id| {
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#).into_bytes()
            });
            let cut = (good.clone(), any::<prop::sample::Index>()).prop_map(|(line, at)| {
                let at = at.index(line.len());
                line[..at].to_vec()
            });
            let deep = (0usize..200, any::<bool>()).prop_map(|(depth, object)| {
                let (open, close) = if object { ("{\"a\":", "}") } else { ("[", "]") };
                format!(
                    r#"{{"id":1,"method":"ping","params":{}1{}}}"#,
                    open.repeat(depth),
                    close.repeat(depth)
                )
                .into_bytes()
            });
            let junk = prop::collection::vec(any::<u8>(), 0..300)
                .prop_map(|b| b.into_iter().filter(|&c| c != b'\n').collect());
            prop_oneof![good, cut, deep, junk]
        }

        proptest! {
            #[test]
            fn any_line_is_decoded_or_answered(line in prop::collection::vec(any::<u8>(), 0..400)) {
                check(&line);
            }

            #[test]
            fn request_shaped_lines_are_decoded_or_answered(line in request_line()) {
                check(&line);
            }

            #[test]
            fn any_input_cut_anywhere_gets_one_answer_per_line(
                lines in prop::collection::vec(request_line(), 1..8),
                chunk in 1usize..64,
            ) {
                let mut input = Vec::new();
                for line in &lines {
                    input.extend_from_slice(line);
                    input.push(b'\n');
                }
                let expected: usize = lines
                    .iter()
                    .filter(|l| !matches!(decode_line(l), Decoded::Nothing))
                    .count();
                let (answered, messages) = run_chunked(&input, chunk);
                prop_assert_eq!(answered + messages, expected);
            }
        }

        fn check(line: &[u8]) {
            match decode_line(line) {
                Decoded::Error(answer) => {
                    let code = answer["error"]["code"].as_i64().unwrap();
                    assert!(code == -32700 || code == -32600, "{answer}");
                    assert!(is_id(&answer["id"]) || answer["id"].is_null(), "{answer}");
                }
                Decoded::Message(_) | Decoded::Nothing => {}
            }
        }

        /// Feeds `input` to a transport `chunk` bytes a read: (errors written, messages given).
        fn run_chunked(input: &[u8], chunk: usize) -> (usize, usize) {
            let (mut client, server) = tokio::io::duplex(chunk);
            let (mut out, write) = tokio::io::duplex(1 << 20);
            let input = input.to_vec();
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
                .block_on(async move {
                    let feed = tokio::spawn(async move {
                        tokio::io::AsyncWriteExt::write_all(&mut client, &input)
                            .await
                            .unwrap();
                    });
                    let mut transport = LineTransport::new(server, write);
                    let mut messages = 0;
                    while transport.receive().await.is_some() {
                        messages += 1;
                    }
                    feed.await.unwrap();
                    drop(transport);
                    let mut written = String::new();
                    tokio::io::AsyncReadExt::read_to_string(&mut out, &mut written)
                        .await
                        .unwrap();
                    for line in written.lines() {
                        let answer: Value = serde_json::from_str(line).unwrap();
                        assert!(answer["error"]["code"].is_i64(), "{answer}");
                    }
                    (written.lines().count(), messages)
                })
        }
    }
}
