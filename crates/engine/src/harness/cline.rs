//! Cline CLI sessions (`sessions/<id>/<id>.messages.json` under `~/.cline/data`, or
//! `$CLINE_DATA_DIR`): one JSON document per session, rewritten whole as it grows —
//! `{version, sessionId, messages: [{id, role, content, ts, modelInfo?, metrics?}]}` with
//! Anthropic-shaped content blocks (`text`, `thinking`, `tool_use`, `tool_result`). Written by
//! `cline` 3.0 (`tests/fixtures/cline-3.0.65/` is one session the real CLI wrote, resumed).
//!
//! - Ids: `<message id>#<block index>`; times are the messages' `ts` (epoch milliseconds).
//! - A prompt is stored inside `<user_input mode="act">…</user_input>`: the record is what the
//!   user typed.
//! - `run_commands` results are lists of `{query, result, success}`: the output is the
//!   results, and a command that did not succeed makes the result an error (as `is_error` does).
//! - The model is `modelInfo.id`, usage the message's `metrics`.
//! - `<id>.json` beside it (the session's metadata: cwd, title, totals) is not a transcript;
//!   the cwd comes from the system prompt's `Working Directory:` line.
//! - A message of a role other than `user` and `assistant`, one without its `content`, and a
//!   block of an unknown kind are counted as not understood. `origin.version` is the release
//!   that wrote the session (the top `version` is the document format's).

use serde_json::Value;

use crate::SourceCtx;
use crate::harness::{Format, PatchEnvelope, Source, ToolVocabulary};
use crate::records::{Out, count, image_placeholder, stamp_model, str_of, text_of};
use crate::rows::RowRecords;
use crate::session::{SessionFile, session_file};
use clankie_model::{DefaultHome, FileEntry, Layout, ListSpec, Record, Storage, TextKind, Usage};

/// Cline's CLI.
pub(super) struct Cline;

/// Cline's tools: `run_commands` (`commands`, a list of command lines); `editor` (`path`,
/// `old_text`/`new_text`); `write_file` (`path`, `content`).
static TOOLS: ToolVocabulary = ToolVocabulary {
    shell_tools: &["run_commands"],
    command_keys: &["commands", "command"],
    path_keys: &["path"],
    snippet_keys: &[("old_text", "new_text")],
    replace_all_keys: &[],
    edit_list_keys: &[],
    write_tool_marks: &["write"],
    content_keys: &["content"],
    patch_tools: &[],
    patch_keys: &[],
    patch_envelope: &PatchEnvelope::NONE,
    ..ToolVocabulary::NONE
};

static LAYOUT: Layout = Layout {
    name: "cline",
    default_home: DefaultHome {
        env_var: Some("CLINE_DATA_DIR"),
        env_relative: "",
        home_relative: ".cline/data",
    },
    list: ListSpec {
        subdirs: &["sessions"],
        suffixes: &[".messages.json"],
        max_depth: 1,
        top_files: &[],
    },
    db_env: None,
    storage: Storage::Files,
    id_globs: &["sessions/{id}*/*.messages.json"],
};

/// The newest Cline CLI this reader is tested against (docs/harnesses.md).
const TESTED: super::Tested = super::Tested {
    product: "Cline CLI",
    version: "3.0.65",
};

impl Format for Cline {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    /// `sessions/<id>/<id>.messages.json`.
    fn session(&self, entry: &FileEntry) -> Option<SessionFile> {
        let rel = std::str::from_utf8(&entry.rel).ok()?;
        match rel.split('/').collect::<Vec<_>>().as_slice() {
            ["sessions", dir, file] if file.strip_suffix(".messages.json") == Some(dir) => {
                session_file(entry, dir, None)
            }
            _ => None,
        }
    }

    fn source(&self, _entry: &FileEntry) -> Source {
        Source::Document
    }

    fn parse_document(&self, ctx: &SourceCtx, bytes: &[u8]) -> Result<Vec<Record>, String> {
        document_rows(ctx, bytes).map(|rows| rows.records)
    }

    fn parse_document_rows(
        &self,
        ctx: &SourceCtx,
        bytes: &[u8],
        _terminal_size: Option<(usize, usize)>,
        _newest: Option<usize>,
        _after: Option<&crate::cursor::RowCursor>,
    ) -> Result<RowRecords, String> {
        document_rows(ctx, bytes)
    }

    /// A document cut short is one being rewritten.
    fn document_incomplete(&self, bytes: &[u8]) -> bool {
        super::json_cut_short(bytes)
    }

    /// The first prompt, when the head holds it (the document starts with the messages).
    fn native_title(&self, head: &[u8]) -> Option<String> {
        first_messages(head).into_iter().find_map(|message| {
            (str_of(&message, "role") == "user").then(|| blocks_text(message.get("content")))
        })
    }

    /// The `Working Directory:` line of the system prompt, when the head holds the document.
    fn session_cwd(&self, head: &[u8]) -> Option<String> {
        let doc: Value = serde_json::from_slice(head).ok()?;
        let prompt = str_of(&doc, "system_prompt");
        let line = prompt
            .lines()
            .find_map(|l| l.trim().split_once("Working Directory: "))?;
        Some(line.1.trim().to_string())
    }

    fn tool_vocabulary(&self) -> &'static ToolVocabulary {
        &TOOLS
    }

    fn tested(&self) -> Option<&'static super::Tested> {
        Some(&TESTED)
    }

    /// `origin.version`, written before the messages.
    fn writer_version(&self, head: &[u8]) -> Option<String> {
        let at = head.windows(8).position(|w| w == b"\"origin\"")?;
        super::version_field(&head[at..], "version")
    }

    fn resume_command(&self, id: &str, _path: &str) -> String {
        format!("cline --id {}", crate::resume::shell_quote(id))
    }
}

/// The complete messages among a document's first bytes.
fn first_messages(head: &[u8]) -> Vec<Value> {
    if let Ok(doc) = serde_json::from_slice::<Value>(head) {
        return doc
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
    }
    // Cut: each message object after `"messages": [` that parses on its own.
    let Some(start) = head
        .windows(11)
        .position(|w| w == b"\"messages\":")
        .and_then(|at| {
            head[at..]
                .iter()
                .position(|&b| b == b'[')
                .map(|p| at + p + 1)
        })
    else {
        return Vec::new();
    };
    let mut stream = serde_json::Deserializer::from_slice(&head[start..]).into_iter::<Value>();
    let mut out = Vec::new();
    // One message: the stream stops at the `,` after it.
    if let Some(Ok(message)) = stream.next() {
        out.push(message);
    }
    out
}

/// The records of a whole session document, with where each thing it did not understand
/// stands among them.
fn document_rows(ctx: &SourceCtx, bytes: &[u8]) -> Result<RowRecords, String> {
    let doc: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("not a JSON document: {e}"))?;
    let messages = doc
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| "no `messages` array: not a Cline session".to_string())?;
    let mut rows = RowRecords::default();
    for (i, message) in messages.iter().enumerate() {
        let ts = message
            .get("ts")
            .and_then(Value::as_i64)
            .map(crate::rows::rfc3339_millis);
        let base = match str_of(message, "id") {
            "" => format!("m{i}"),
            id => id.to_string(),
        };
        let mut out = Out::new(ctx, ts);
        message_records(&mut out, &base, message);
        rows.records.extend(out.records);
        for _ in 0..out.unknown {
            rows.unknown_here();
        }
    }
    Ok(rows)
}

fn message_records(out: &mut Out<'_>, base: &str, message: &Value) {
    let role = str_of(message, "role");
    if !matches!(role, "user" | "assistant") {
        // A role newer than this reader, or a message without its role.
        out.unknown();
        return;
    }
    let blocks: Vec<Value> = match message.get("content") {
        Some(Value::String(text)) => vec![serde_json::json!({"type": "text", "text": text})],
        Some(Value::Array(blocks)) => blocks.clone(),
        // A message without its content: a renamed field.
        _ => {
            out.unknown();
            Vec::new()
        }
    };
    let kind = if role == "assistant" {
        TextKind::Assistant
    } else {
        TextKind::User
    };
    for (i, block) in blocks.iter().enumerate() {
        let id = format!("{base}#{i}");
        match str_of(block, "type") {
            "text" => {
                let text = str_of(block, "text");
                let text = if kind == TextKind::User {
                    typed(text)
                } else {
                    text
                };
                out.text(id, kind, text.to_string());
            }
            "thinking" => out.text(
                id,
                TextKind::Thinking,
                str_of(block, "thinking").to_string(),
            ),
            "redacted_thinking" => out.text(id, TextKind::Thinking, "[redacted thinking]".into()),
            "image" => out.text(id, kind, image(block)),
            "tool_use" => out.call(
                id,
                str_of(block, "id"),
                str_of(block, "name"),
                block
                    .get("input")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Default::default())),
            ),
            "tool_result" => {
                let (output, failed) = result_output(block.get("content"));
                let is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
                out.result(id, str_of(block, "tool_use_id"), output, is_error || failed);
            }
            // A block newer than this reader.
            _ => out.unknown(),
        }
    }
    if role == "assistant" {
        let model = message
            .pointer("/modelInfo/id")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty());
        let usage = message.get("metrics").and_then(|m| {
            Usage {
                input: count(m, "inputTokens"),
                output: count(m, "outputTokens"),
                cache_read: count(m, "cacheReadTokens"),
                cache_write: count(m, "cacheWriteTokens"),
                reasoning: None,
            }
            .nonempty()
        });
        stamp_model(&mut out.records, model, usage);
    }
}

/// The prompt inside Cline's `<user_input mode="…">…</user_input>`, else the text itself.
fn typed(text: &str) -> &str {
    text.strip_prefix("<user_input")
        .and_then(|rest| rest.split_once('>'))
        .filter(|(attrs, _)| !attrs.contains('<'))
        .and_then(|(_, rest)| rest.strip_suffix("</user_input>"))
        .filter(|inner| !inner.contains("</user_input>"))
        .unwrap_or(text)
}

fn image(block: &Value) -> String {
    let source = block.get("source").unwrap_or(&Value::Null);
    match str_of(source, "type") {
        "base64" => image_placeholder(&format!(
            "data:{};base64,{}",
            str_of(source, "media_type"),
            str_of(source, "data")
        )),
        _ => image_placeholder(str_of(source, "url")),
    }
}

/// A result's text and whether a command in it failed: a string as it is; blocks' text;
/// `run_commands`' `{query, result, success}` entries by their results.
fn result_output(content: Option<&Value>) -> (String, bool) {
    let Some(Value::Array(items)) = content else {
        return (text_of(content), false);
    };
    let mut failed = false;
    let texts: Vec<String> = items
        .iter()
        .map(|item| {
            if item.get("query").is_some() || item.get("result").is_some() {
                failed |= item.get("success").and_then(Value::as_bool) == Some(false);
                let result = item.get("result").or_else(|| item.get("error"));
                text_of(result)
            } else {
                match str_of(item, "type") {
                    "text" => str_of(item, "text").to_string(),
                    "image" => image(item),
                    _ => item.to_string(),
                }
            }
        })
        .collect();
    (texts.join("\n"), failed)
}

/// Text of a message's content for a title.
fn blocks_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => typed(text).to_string(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| str_of(b, "type") == "text")
            .map(|b| typed(str_of(b, "text")))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use clankie_model::{RecordBody, RecordKind};

    const DOC: &str = r#"{"version":1,"sessionId":"1_a","messages":[
{"id":"u1","role":"user","content":[{"type":"text","text":"<user_input mode=\"act\">run it</user_input>"}],"ts":1796519025548},
{"id":"a1","role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"c1","name":"run_commands","input":{"commands":["ls","false"]}}],"modelInfo":{"id":"m"},"metrics":{"inputTokens":20,"outputTokens":10}},
{"id":"r1","role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[{"query":"ls","result":"a\n","success":true},{"query":"false","result":"","success":false}]}]}
],"system_prompt":"x\n4. Working Directory: /w/p\n"}"#;

    #[test]
    fn a_document_reads_as_its_messages() {
        let ctx = test_support::ctx(test_support::harness("cline"));
        let got = document_rows(&ctx, DOC.as_bytes()).unwrap().records;
        assert_eq!(
            test_support::summary(&got),
            [
                ("u1#0".into(), RecordKind::User),
                ("a1#0".into(), RecordKind::Assistant),
                ("a1#1".into(), RecordKind::ToolCall),
                ("r1#0".into(), RecordKind::ToolResult),
            ]
        );
        assert_eq!(
            got[0].body,
            RecordBody::Text {
                kind: TextKind::User,
                text: "run it".into()
            }
        );
        assert_eq!(got[0].ts.as_deref(), Some("2026-12-06T01:03:45.548Z"));
        assert_eq!(got[1].model.as_deref(), Some("m"));
        assert_eq!(got[1].usage.as_ref().and_then(|u| u.output), Some(10));
        assert_eq!(
            got[3].body,
            RecordBody::ToolResult {
                call_id: "c1".into(),
                output: "a\n\n".into(),
                is_error: true
            }
        );
    }

    #[test]
    fn title_and_cwd_from_the_head() {
        assert_eq!(
            Cline.native_title(DOC.as_bytes()).as_deref(),
            Some("run it")
        );
        assert_eq!(
            Cline.native_title(&DOC.as_bytes()[..200]).as_deref(),
            Some("run it")
        );
        assert_eq!(Cline.session_cwd(DOC.as_bytes()).as_deref(), Some("/w/p"));
        assert_eq!(
            typed("<user_input>a</user_input> b</user_input>"),
            "<user_input>a</user_input> b</user_input>"
        );
    }
}
