//! Kimi CLI sessions (`sessions/<md5 of the work dir>/<uuid>/wire.jsonl` under
//! `$KIMI_SHARE_DIR` or `~/.kimi`): the wire, an append-only log of the events the CLI showed,
//! one `{"timestamp", "message": {"type", "payload"}}` a line after a `metadata` line. Written by
//! PyPI's `kimi-cli` 1.51 (`tests/fixtures/kimi-1.51.0/` is one session the real CLI wrote,
//! resumed). Kimi Code, its successor, has a layout of its own.
//!
//! Why the wire and not `context.jsonl` beside it: `context.jsonl` is the model's context, not
//! the session's record. It is rotated away and rewritten on `/clear`, on compaction and on a
//! checkpoint revert (so a cursor into it would not survive), it has no timestamps and no ids,
//! and its tool results hold what the model was told (a `<system>` status line before the
//! output) rather than the tool's output and its `is_error`. The wire only grows, stamps every
//! event, and keeps a tool result's `is_error` and bare output. Neither records the model.
//!
//! - Ids: `@<byte offset>#<part>`: the wire's events carry no ids, and a line's offset is
//!   stable because the wire only grows.
//! - Read: `TurnBegin` and `SteerInput` (the user's input), `ContentPart` (text, or thinking),
//!   `ToolCall` (its `function.arguments` decoded) and `ToolResult` (`return_value.output`,
//!   `is_error`).
//! - Skipped on purpose ([`SKIPPED_TYPES`]): turn and step boundaries, status updates, hooks,
//!   MCP loading, compaction markers, approvals, notifications and the other events the
//!   CLI's UI shows; any other type and a part of an unknown kind count as not understood.
//! - Model and usage: the model is not recorded; token usage is on `StatusUpdate` lines of
//!   their own, not attached to records.
//! - The working directory is only in `kimi.json`, keyed by its md5: not read.

use serde_json::Value;

use crate::SourceCtx;
use crate::harness::{PatchEnvelope, ToolVocabulary};
use crate::lines::LineOutcome;
use crate::records::{Out, json_arguments, object_line, str_of, text_of};
use crate::session::{SessionFile, session_file};
use clankie_model::{DefaultHome, FileEntry, Layout, ListSpec, Storage, TextKind};

use super::Format;

/// Kimi CLI.
pub(super) struct KimiCli;

/// Kimi CLI's tools: `Shell` (`command`); `StrReplaceFile` (`path`, `edit` with `old`/`new`);
/// `WriteFile` (`path`, `content`).
static TOOLS: ToolVocabulary = ToolVocabulary {
    shell_tools: &["shell"],
    command_keys: &["command"],
    path_keys: &["path"],
    snippet_keys: &[("old", "new")],
    replace_all_keys: &["replace_all"],
    edit_list_keys: &["edit"],
    write_tool_marks: &["write"],
    content_keys: &["content"],
    patch_tools: &[],
    patch_keys: &[],
    patch_envelope: &PatchEnvelope::NONE,
    ..ToolVocabulary::NONE
};

static LAYOUT: Layout = Layout {
    name: "kimi",
    default_home: DefaultHome {
        env_var: Some("KIMI_SHARE_DIR"),
        env_relative: "",
        home_relative: ".kimi",
    },
    list: ListSpec {
        subdirs: &["sessions"],
        suffixes: &["wire.jsonl"],
        max_depth: 2,
        top_files: &[],
    },
    db_env: None,
    storage: Storage::Files,
    id_globs: &["sessions/*/{id}*/wire.jsonl"],
};

/// The newest Kimi CLI this reader is tested against (docs/harnesses.md).
const TESTED: super::Tested = super::Tested {
    product: "Kimi CLI",
    version: "1.51.0",
};

impl Format for KimiCli {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    /// `sessions/<md5>/<uuid>/wire.jsonl`: the session directory's name is the id.
    fn session(&self, entry: &FileEntry) -> Option<SessionFile> {
        let rel = std::str::from_utf8(&entry.rel).ok()?;
        match rel.split('/').collect::<Vec<_>>().as_slice() {
            ["sessions", _, id, "wire.jsonl"] => session_file(entry, id, None),
            _ => None,
        }
    }

    fn parse_line(&self, ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
        parse_line(ctx, offset, line)
    }

    fn tool_vocabulary(&self) -> &'static ToolVocabulary {
        &TOOLS
    }

    fn tested(&self) -> Option<&'static super::Tested> {
        Some(&TESTED)
    }

    /// The CLI's own hint: `kimi -r ID`.
    fn resume_command(&self, id: &str, _path: &str) -> String {
        format!("kimi -r {}", crate::resume::shell_quote(id))
    }
}

/// Event types skipped on purpose: what the CLI's UI shows besides the conversation.
const SKIPPED_TYPES: &[&str] = &[
    "metadata",
    "TurnEnd",
    "StepBegin",
    "StepInterrupted",
    "StepRetry",
    "HookTriggered",
    "HookResolved",
    "CompactionBegin",
    "CompactionEnd",
    "MCPLoadingBegin",
    "MCPLoadingEnd",
    "StatusUpdate",
    "Notification",
    "ToolCallPart",
    "ApprovalRequest",
    "ApprovalResponse",
    "QuestionRequest",
    "PlanDisplay",
    "BtwBegin",
    "BtwEnd",
];

/// Parses one complete line (without its `\n`) that starts at byte `offset`.
fn parse_line(ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
    let map = match object_line(ctx, offset, line) {
        Ok(map) => map,
        Err(outcome) => return outcome,
    };
    let entry = Value::Object(map);
    let ts = entry
        .get("timestamp")
        .and_then(Value::as_f64)
        .map(|secs| crate::rows::rfc3339_millis((secs * 1000.0) as i64));
    let mut out = Out::new(ctx, ts);
    let message = entry.get("message").unwrap_or(&Value::Null);
    let payload = message.get("payload").unwrap_or(&Value::Null);
    let id = |i: usize| format!("@{offset}#{i}");
    let kind = match str_of(&entry, "type") {
        "" => str_of(message, "type"),
        top => top,
    };
    match kind {
        "TurnBegin" | "SteerInput" => match payload.get("user_input") {
            Some(Value::String(text)) => out.text(id(0), TextKind::User, text.clone()),
            Some(Value::Array(parts)) => {
                for (i, part) in parts.iter().enumerate() {
                    part_record(&mut out, id(i), part, TextKind::User);
                }
            }
            // A renamed field.
            _ => out.unknown(),
        },
        "ContentPart" => part_record(&mut out, id(0), payload, TextKind::Assistant),
        "ToolCall" => {
            let function = payload.get("function").unwrap_or(&Value::Null);
            out.call(
                id(0),
                str_of(payload, "id"),
                str_of(function, "name"),
                json_arguments(function.get("arguments")),
            );
        }
        "ToolResult" => {
            let value = payload.get("return_value").unwrap_or(&Value::Null);
            let output = match value.get("output") {
                Some(Value::Array(parts)) => parts
                    .iter()
                    .map(|p| text_of(p.get("text")))
                    .collect::<Vec<_>>()
                    .join(""),
                output => text_of(output),
            };
            let is_error = value.get("is_error").and_then(Value::as_bool) == Some(true);
            out.result(id(0), str_of(payload, "tool_call_id"), output, is_error);
        }
        kind if SKIPPED_TYPES.contains(&kind) => {}
        // A type newer than this reader, or a line without its type.
        _ => out.unknown(),
    }
    out.done()
}

/// One content part: text, thinking, or a placeholder for an image.
fn part_record(out: &mut Out, id: String, part: &Value, text_kind: TextKind) {
    match str_of(part, "type") {
        "text" => out.text(id, text_kind, str_of(part, "text").to_string()),
        "think" => out.text(id, TextKind::Thinking, str_of(part, "think").to_string()),
        "image_url" => out.text(
            id,
            text_kind,
            crate::records::image_placeholder(
                part.pointer("/image_url/url")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            ),
        ),
        // A part of a kind newer than this reader.
        _ => out.unknown(),
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support;
    use clankie_model::{Record, RecordBody, RecordKind};

    fn records(line: &str) -> Vec<Record> {
        test_support::records(test_support::harness("kimi"), 0, line)
    }

    #[test]
    fn a_turn_with_a_shell_call() {
        let user = r#"{"timestamp": 1796528291.907, "message": {"type": "TurnBegin", "payload": {"user_input": "run it"}}}"#;
        let got = records(user);
        assert_eq!(
            test_support::summary(&got),
            [("@0#0".into(), RecordKind::User)]
        );
        assert_eq!(got[0].ts.as_deref(), Some("2026-12-06T03:38:11.907Z"));
        let call = r#"{"timestamp": 1.0, "message": {"type": "ToolCall", "payload": {"type": "function", "id": "c1", "function": {"name": "Shell", "arguments": "{\"command\": \"ls\"}"}}}}"#;
        let got = records(call);
        assert_eq!(
            got[0].body,
            RecordBody::ToolCall {
                call_id: "c1".into(),
                name: "Shell".into(),
                input: serde_json::json!({"command": "ls"}),
                by_user: false,
            }
        );
        let result = r#"{"timestamp": 1.0, "message": {"type": "ToolResult", "payload": {"tool_call_id": "c1", "return_value": {"is_error": true, "output": "no", "message": "Command failed."}}}}"#;
        assert_eq!(
            records(result)[0].body,
            RecordBody::ToolResult {
                call_id: "c1".into(),
                output: "no".into(),
                is_error: true
            }
        );
        let status = r#"{"timestamp": 1.0, "message": {"type": "StatusUpdate", "payload": {}}}"#;
        assert!(records(status).is_empty());
        assert!(records(r#"{"type": "metadata", "protocol_version": "1.10"}"#).is_empty());
    }
}
