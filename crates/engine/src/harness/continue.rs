//! Continue CLI (`cn`) sessions (`sessions/<uuid>.json` under `~/.continue`): one JSON document
//! per session, rewritten whole after every turn — `{sessionId, title, workspaceDirectory,
//! history: [{message, contextItems, toolCallStates?}], usage}`. Written by `@continuedev/cli`
//! 1.5 (`tests/fixtures/continue-1.5.47/` is one session the real CLI wrote, resumed).
//!
//! - Ids: the history item's index, `h<i>#<n>`: history is only appended to, so an item keeps
//!   its index across rewrites. Messages carry no time: records have no `ts`.
//! - A message's `content` is a string or parts (`text`, `imageUrl`); an assistant's
//!   `toolCalls` are its calls (`function.arguments` a JSON string), and the item's
//!   `toolCallStates[].output` their results (`errored`/`canceled` ones errors). A `tool`
//!   message answering a call no state answered is a result too.
//! - A `thinking` message is thinking; `system` messages are metadata. Usage and model are the
//!   message's `usage` (`prompt_tokens`, `completion_tokens`, `model`).
//! - `sessions/sessions.json` is the index, not a session.
//! - A history item without its `message`, a message of a role not named here, and a content
//!   part of an unknown kind are counted as not understood. The document records no release.

use serde_json::Value;

use crate::SourceCtx;
use crate::harness::{Format, PatchEnvelope, Source, ToolVocabulary};
use crate::records::{Out, count, image_placeholder, json_arguments, stamp_model, str_of};
use crate::rows::RowRecords;
use crate::session::{SessionFile, session_file};
use clankie_model::{DefaultHome, FileEntry, Layout, ListSpec, Record, Storage, TextKind, Usage};

/// Continue's CLI.
pub(super) struct Continue;

/// `cn`'s tools: `Bash` (`command`); `Edit` (`file_path`, `old_string`/`new_string`,
/// `replace_all`); `MultiEdit` (`edits`); `Write` (`file_path`, `content`).
static TOOLS: ToolVocabulary = ToolVocabulary {
    shell_tools: &["bash"],
    command_keys: &["command"],
    path_keys: &["file_path", "filepath"],
    snippet_keys: &[("old_string", "new_string")],
    replace_all_keys: &["replace_all"],
    edit_list_keys: &["edits"],
    write_tool_marks: &["write"],
    content_keys: &["content"],
    patch_tools: &[],
    patch_keys: &[],
    patch_envelope: &PatchEnvelope::NONE,
    ..ToolVocabulary::NONE
};

static LAYOUT: Layout = Layout {
    name: "continue",
    default_home: DefaultHome {
        env_var: Some("CONTINUE_GLOBAL_DIR"),
        env_relative: "",
        home_relative: ".continue",
    },
    list: ListSpec {
        subdirs: &["sessions"],
        suffixes: &[".json"],
        max_depth: 0,
        top_files: &[],
    },
    db_env: None,
    storage: Storage::Files,
    id_globs: &["sessions/{id}*.json"],
};

/// The title Continue gives a session it has not titled.
const UNTITLED: &str = "Untitled Session";

/// The newest Continue CLI this reader is tested against (docs/harnesses.md).
const TESTED: super::Tested = super::Tested {
    product: "Continue CLI",
    version: "1.5.47",
};

impl Format for Continue {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    /// `sessions/<uuid>.json`, but not the index `sessions/sessions.json`.
    fn session(&self, entry: &FileEntry) -> Option<SessionFile> {
        let rel = std::str::from_utf8(&entry.rel).ok()?;
        let stem = rel.strip_prefix("sessions/")?.strip_suffix(".json")?;
        if stem == "sessions" || stem.contains('/') {
            return None;
        }
        session_file(entry, stem, None)
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

    /// `workspaceDirectory`, from the fields before `history`.
    fn session_cwd(&self, head: &[u8]) -> Option<String> {
        header(head)?
            .get("workspaceDirectory")
            .and_then(Value::as_str)
            .map(str::to_string)
    }

    /// The session's `title` unless it is Continue's placeholder; then, when the head holds
    /// the whole document, its first prompt.
    fn native_title(&self, head: &[u8]) -> Option<String> {
        let title = header(head)?
            .get("title")
            .and_then(Value::as_str)
            .filter(|t| *t != UNTITLED)
            .map(str::to_string);
        title.or_else(|| {
            let doc: Value = serde_json::from_slice(head).ok()?;
            doc.get("history")?.as_array()?.iter().find_map(|item| {
                let message = item.get("message")?;
                (str_of(message, "role") == "user").then(|| content_text(message.get("content")))
            })
        })
    }

    fn tool_vocabulary(&self) -> &'static ToolVocabulary {
        &TOOLS
    }

    fn tested(&self) -> Option<&'static super::Tested> {
        Some(&TESTED)
    }

    /// `cn --resume` takes no id: it resumes the newest session.
    fn resume_command(&self, _id: &str, _path: &str) -> String {
        "cn --resume".to_string()
    }
}

/// The document's fields before `history` (Continue writes them first), from its first bytes.
fn header(head: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(head).ok().or_else(|| {
        // A head cut inside a character: the part before it.
        let valid = std::str::from_utf8(head).err()?.valid_up_to();
        std::str::from_utf8(&head[..valid]).ok()
    })?;
    let cut = text.find("\"history\"")?;
    let before = text[..cut].trim_end().trim_end_matches(',');
    serde_json::from_str(&format!("{before}}}")).ok()
}

/// The records of a whole session document, with where each thing it did not understand
/// stands among them.
fn document_rows(ctx: &SourceCtx, bytes: &[u8]) -> Result<RowRecords, String> {
    let doc: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("not a JSON document: {e}"))?;
    let history = doc
        .get("history")
        .and_then(Value::as_array)
        .ok_or_else(|| "no `history` array: not a Continue session".to_string())?;
    let mut out = Out::new(ctx, None);
    let mut answered = std::collections::HashSet::new();
    let mut unknown = Vec::new();
    for (i, item) in history.iter().enumerate() {
        let base = format!("h{i}");
        let Some(message) = item.get("message") else {
            // An item without its message: a renamed field.
            unknown.push(out.records.len());
            continue;
        };
        let content = message.get("content");
        for _ in 0..unknown_parts(content) {
            unknown.push(out.records.len());
        }
        match str_of(message, "role") {
            "user" => out.text(format!("{base}#0"), TextKind::User, content_text(content)),
            "thinking" => out.text(
                format!("{base}#0"),
                TextKind::Thinking,
                content_text(content),
            ),
            "assistant" => {
                let first = out.records.len();
                out.text(
                    format!("{base}#0"),
                    TextKind::Assistant,
                    content_text(content),
                );
                for (j, call) in message
                    .get("toolCalls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let function = call.get("function").unwrap_or(&Value::Null);
                    out.call(
                        format!("{base}#{}", j + 1),
                        str_of(call, "id"),
                        str_of(function, "name"),
                        json_arguments(function.get("arguments")),
                    );
                }
                let usage = message.get("usage");
                let model = usage.map(|u| str_of(u, "model")).filter(|m| !m.is_empty());
                let counts = usage.and_then(|u| {
                    Usage {
                        input: count(u, "prompt_tokens"),
                        output: count(u, "completion_tokens"),
                        cache_read: u
                            .get("prompt_tokens_details")
                            .and_then(|d| count(d, "cached_tokens")),
                        ..Usage::default()
                    }
                    .nonempty()
                });
                stamp_model(&mut out.records[first..], model, counts);
            }
            "tool" => {
                let call_id = str_of(message, "toolCallId");
                if answered.insert(call_id.to_string()) {
                    out.result(format!("{base}#0"), call_id, content_text(content), false);
                }
            }
            // The system prompt: skipped on purpose.
            "system" => {}
            // A role newer than this reader, or a message without its role.
            _ => unknown.push(out.records.len()),
        }
        for (j, state) in item
            .get("toolCallStates")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let status = str_of(state, "status");
            let Some(output) = state.get("output").and_then(Value::as_array) else {
                if matches!(status, "errored" | "canceled") {
                    let call_id = str_of(state, "toolCallId");
                    answered.insert(call_id.to_string());
                    out.result(format!("{base}#result{j}"), call_id, status.into(), true);
                }
                continue;
            };
            let call_id = str_of(state, "toolCallId");
            answered.insert(call_id.to_string());
            let text = output
                .iter()
                .map(|o| str_of(o, "content"))
                .collect::<Vec<_>>()
                .join("\n");
            out.result(
                format!("{base}#result{j}"),
                call_id,
                text,
                matches!(status, "errored" | "canceled"),
            );
        }
    }
    Ok(RowRecords {
        records: out.records,
        unknown,
        ..RowRecords::default()
    })
}

/// A message's content as text: a string, or its parts (images as placeholders; parts of
/// other kinds are [`unknown_parts`]).
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| match str_of(part, "type") {
                "imageUrl" => Some(image_placeholder(
                    part.pointer("/imageUrl/url")
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                )),
                "text" | "" => Some(str_of(part, "text").to_string()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// How many parts of a message's content are of a kind [`content_text`] does not read.
fn unknown_parts(content: Option<&Value>) -> usize {
    content.and_then(Value::as_array).map_or(0, |parts| {
        parts
            .iter()
            .filter(|part| !matches!(str_of(part, "type"), "text" | "" | "imageUrl"))
            .count()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use clankie_model::{RecordBody, RecordKind};

    const DOC: &str = r#"{
  "sessionId": "s1",
  "title": "Untitled Session",
  "workspaceDirectory": "/w/p",
  "history": [
    {"message": {"role": "user", "content": "run it"}, "contextItems": []},
    {"message": {"role": "assistant", "content": "ok", "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"ls\"}"}}], "usage": {"completion_tokens": 3, "prompt_tokens": 9, "model": "m"}},
     "toolCallStates": [{"toolCallId": "c1", "status": "errored", "output": [{"content": "no such file", "name": "Tool Result"}]}]},
    {"message": {"role": "tool", "content": "late", "toolCallId": "c1"}},
    {"message": {"role": "system", "content": "You are"}}
  ]
}"#;

    #[test]
    fn a_document_reads_as_its_history() {
        let ctx = test_support::ctx(test_support::harness("continue"));
        let got = document_rows(&ctx, DOC.as_bytes()).unwrap().records;
        assert_eq!(
            test_support::summary(&got),
            [
                ("h0#0".into(), RecordKind::User),
                ("h1#0".into(), RecordKind::Assistant),
                ("h1#1".into(), RecordKind::ToolCall),
                ("h1#result0".into(), RecordKind::ToolResult),
            ]
        );
        assert_eq!(got[1].model.as_deref(), Some("m"));
        assert_eq!(got[1].usage.as_ref().and_then(|u| u.input), Some(9));
        assert_eq!(
            got[3].body,
            RecordBody::ToolResult {
                call_id: "c1".into(),
                output: "no such file".into(),
                is_error: true
            }
        );
        assert!(document_rows(&ctx, b"[]").is_err());
        assert!(Continue.document_incomplete(&DOC.as_bytes()[..40]));
    }

    #[test]
    fn title_and_cwd_from_the_head() {
        assert_eq!(
            Continue.session_cwd(DOC.as_bytes()).as_deref(),
            Some("/w/p")
        );
        assert_eq!(
            Continue.native_title(DOC.as_bytes()).as_deref(),
            Some("run it")
        );
        let named = DOC.replace("Untitled Session", "Mine");
        assert_eq!(
            Continue
                .native_title(&named.as_bytes()[..named.find("\"history\"").unwrap() + 12])
                .as_deref(),
            Some("Mine")
        );
        assert_eq!(Continue.native_title(&DOC.as_bytes()[..100]), None);
    }
}
