//! What the parsers of Codex, Pi, Grok, Gemini, OpenCode and grok-cli share: decoding a line
//! into JSON (a torn line is `Malformed`, valid JSON of another shape a notice), a builder that
//! stamps records with the source context, and small text helpers. Pure.

use serde_json::Value;

use super::SourceCtx;
use super::lines::LineOutcome;
use clankie_model::{Record, RecordBody, RecordKind, TextKind, Usage};

/// Decodes a complete line as a JSON object. `Err` holds the outcome to return instead: a torn
/// line is malformed; valid JSON that is not an object is a notice naming its offset.
pub(crate) fn object_line(
    ctx: &SourceCtx,
    offset: u64,
    line: &[u8],
) -> Result<serde_json::Map<String, Value>, LineOutcome> {
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => {
            let mut out = Out::new(ctx, None);
            out.text(
                format!("@{offset}"),
                TextKind::Notice,
                format!("record at byte {offset} is not a JSON object; skipped"),
            );
            Err(LineOutcome::Records(out.records))
        }
        Err(err) => Err(LineOutcome::Malformed(err.to_string())),
    }
}

/// A tool output as text: a string as is, nothing as empty, anything else as compact JSON.
pub(crate) fn text_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
    }
}

/// Collects the records of one line, all with the line's timestamp.
pub(crate) struct Out<'c> {
    ctx: &'c SourceCtx,
    ts: Option<String>,
    pub(crate) records: Vec<Record>,
    /// Entries, content blocks or fields of the line the parser did not understand.
    pub(crate) unknown: u32,
}

impl<'c> Out<'c> {
    pub(crate) fn new(ctx: &'c SourceCtx, ts: Option<String>) -> Out<'c> {
        Out {
            ctx,
            ts,
            records: Vec::new(),
            unknown: 0,
        }
    }

    pub(crate) fn push(&mut self, id: String, body: RecordBody) {
        self.records.push(Record {
            id,
            harness: self.ctx.harness,
            session: self.ctx.session.clone(),
            ts: self.ts.clone(),
            agent: self.ctx.agent.clone(),
            sidechain: self.ctx.agent.is_some(),
            body,
            model: None,
            usage: None,
        });
    }

    /// A text record; blank text gives nothing.
    pub(crate) fn text(&mut self, id: String, kind: TextKind, text: String) {
        if !text.trim().is_empty() {
            self.push(
                id,
                RecordBody::Text {
                    kind,
                    text: text.into(),
                },
            );
        }
    }

    pub(crate) fn call(&mut self, id: String, call_id: &str, name: &str, input: Value) {
        self.push(
            id,
            RecordBody::ToolCall {
                call_id: call_id.to_string(),
                name: name.to_string(),
                input,
                by_user: false,
            },
        );
    }

    /// [`Out::call`] of a command the user ran themselves (Pi's `!cmd`), not the agent.
    pub(crate) fn user_call(&mut self, id: String, call_id: &str, name: &str, input: Value) {
        self.call(id, call_id, name, input);
        if let Some(RecordBody::ToolCall { by_user, .. }) =
            self.records.last_mut().map(|r| &mut r.body)
        {
            *by_user = true;
        }
    }

    pub(crate) fn result(&mut self, id: String, call_id: &str, output: String, is_error: bool) {
        self.push(
            id,
            RecordBody::ToolResult {
                call_id: call_id.to_string(),
                output: output.into(),
                is_error,
            },
        );
    }

    /// Counts something of the line the parser does not understand: an entry of an unknown
    /// type, a known one without the fields it needs, a content block of an unknown kind.
    pub(crate) fn unknown(&mut self) {
        self.unknown += 1;
    }

    pub(crate) fn done(self) -> LineOutcome {
        LineOutcome::records(self.records, self.unknown)
    }
}

/// Marks the records one model reply made: each assistant text, thinking or tool call gets
/// `model`, and the first of them `usage` (so that summing `usage` over records counts the
/// reply once). User records, results and notices get neither.
pub(crate) fn stamp_model(records: &mut [Record], model: Option<&str>, usage: Option<Box<Usage>>) {
    let mut usage = usage;
    for record in records
        .iter_mut()
        .filter(|r| matches!(r.kind(), RecordKind::Assistant | RecordKind::ToolCall))
    {
        record.model = model.map(str::to_string);
        record.usage = usage.take();
    }
}

/// `value[key]` as a count, when it is a non-negative integer.
pub(crate) fn count(value: &Value, key: &str) -> Option<u64> {
    value.get(key).and_then(Value::as_u64)
}

/// `value[key]` as a string, or "".
pub(crate) fn str_of<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A tool's `arguments` given as a JSON string: parsed when it is JSON, else the raw string.
pub(crate) fn json_arguments(value: Option<&Value>) -> Value {
    match value {
        Some(Value::String(raw)) => {
            serde_json::from_str(raw).unwrap_or_else(|_| raw.clone().into())
        }
        Some(other) => other.clone(),
        None => Value::Object(Default::default()),
    }
}

/// A placeholder for an image given as a URL, never its bytes: `[image image/png, N bytes]`
/// for a base64 data URL, `[image <url>]` otherwise.
pub(crate) fn image_placeholder(url: &str) -> String {
    if let Some(rest) = url.strip_prefix("data:") {
        let (mime, data) = rest.split_once(',').unwrap_or((rest, ""));
        let mime = mime.strip_suffix(";base64").unwrap_or(mime);
        format!("[image {mime}, {} bytes]", data.len() / 4 * 3)
    } else if url.is_empty() {
        "[image]".to_string()
    } else {
        format!("[image {url}]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_arguments() {
        assert_eq!(
            image_placeholder("data:image/png;base64,AAAAAAAA"),
            "[image image/png, 6 bytes]"
        );
        assert_eq!(image_placeholder(""), "[image]");
        assert_eq!(
            json_arguments(Some(&Value::from("{\"a\":1}"))),
            serde_json::json!({"a":1})
        );
        assert_eq!(json_arguments(Some(&Value::from("not json"))), "not json");
    }
}
