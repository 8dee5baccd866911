//! Kimi Code sessions (`sessions/wd_<dir>_<hash>/session_<uuid>/agents/main/wire.jsonl` under
//! `$KIMI_CODE_HOME` or `~/.kimi-code`): the main agent's wire, an append-only log of events,
//! one JSON object a line with its `type`. Written by `@moonshot-ai/kimi-code` 2.1
//! (`tests/fixtures/kimi-code-2.1.0/` is one session the real CLI wrote, resumed). Kimi CLI's
//! successor, not its layout.
//!
//! - Ids: a loop event's `uuid`; a message's `id` (`msg_…`), else `@<byte offset>`; a tool
//!   result `<toolCallId>:result` (it carries no uuid of its own).
//! - Read: `context.append_message` lines whose message came from the user (`origin.kind:
//!   "user"`: the prompt), and `context.append_loop_event` lines whose event is a
//!   `content.part` (text, or thinking), a `tool.call` or a `tool.result`.
//! - Skipped on purpose ([`SKIPPED_TYPES`], [`SKIPPED_EVENTS`]): the wire's bookkeeping (turn
//!   and step boundaries, requests, usage samples, permission and profile changes) and the
//!   `agent.message.appended` events, which repeat each turn's messages once it has ended;
//!   messages the CLI injects (`origin.kind: "injection"`, system reminders). Any other type,
//!   loop event or part counts as not understood.
//! - Model and usage: not on the lines read (a step's usage is on its `step.end`, the model on
//!   its `llm.request`, separate lines): records carry none.
//! - The session's directory is `state.json`'s `cwd`, two directories up.

use serde_json::Value;

use crate::SourceCtx;
use crate::harness::{PatchEnvelope, ToolVocabulary};
use crate::lines::LineOutcome;
use crate::records::{Out, object_line, str_of, text_of};
use crate::session::{SessionFile, session_file};
use clankie_model::{DefaultHome, FileEntry, Layout, ListSpec, Storage, TextKind};

use super::Format;

/// Kimi Code.
pub(super) struct KimiCode;

/// Kimi Code's tools: `Bash` (`command`); `Edit` (`path`, `old`/`new`); `Write` (`path`,
/// `content`).
static TOOLS: ToolVocabulary = ToolVocabulary {
    shell_tools: &["bash"],
    command_keys: &["command"],
    path_keys: &["path", "file_path"],
    snippet_keys: &[("old", "new"), ("old_string", "new_string")],
    replace_all_keys: &["replace_all"],
    edit_list_keys: &[],
    write_tool_marks: &["write"],
    content_keys: &["content"],
    patch_tools: &[],
    patch_keys: &[],
    patch_envelope: &PatchEnvelope::NONE,
    ..ToolVocabulary::NONE
};

static LAYOUT: Layout = Layout {
    name: "kimi-code",
    default_home: DefaultHome {
        env_var: Some("KIMI_CODE_HOME"),
        env_relative: "",
        home_relative: ".kimi-code",
    },
    list: ListSpec {
        subdirs: &["sessions"],
        suffixes: &["wire.jsonl"],
        max_depth: 4,
        top_files: &[],
    },
    db_env: None,
    storage: Storage::Files,
    // The id as listed (`session_<uuid>`), or its uuid alone.
    id_globs: &[
        "sessions/*/{id}*/agents/main/wire.jsonl",
        "sessions/*/session_{id}*/agents/main/wire.jsonl",
    ],
};

/// The newest Kimi Code this reader is tested against (docs/harnesses.md).
const TESTED: super::Tested = super::Tested {
    product: "Kimi Code",
    version: "2.1.0",
};

impl Format for KimiCode {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    /// `sessions/<work dir>/session_<uuid>/agents/main/wire.jsonl`: the session directory's
    /// name is the id (what `kimi -r` takes). A subagent's wire (`agents/<other>/`) is not a
    /// session of its own.
    fn session(&self, entry: &FileEntry) -> Option<SessionFile> {
        let rel = std::str::from_utf8(&entry.rel).ok()?;
        match rel.split('/').collect::<Vec<_>>().as_slice() {
            ["sessions", _, id, "agents", "main", "wire.jsonl"] if id.starts_with("session_") => {
                session_file(entry, id, None)
            }
            _ => None,
        }
    }

    fn parse_line(&self, ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
        parse_line(ctx, offset, line)
    }

    /// The session directory's `state.json`.
    fn cwd_file(&self) -> Option<&'static str> {
        Some("../../state.json")
    }

    /// `state.json`'s `cwd`.
    fn session_cwd(&self, head: &[u8]) -> Option<String> {
        serde_json::from_slice::<Value>(head)
            .ok()?
            .get("cwd")
            .and_then(Value::as_str)
            .map(str::to_string)
    }

    fn tool_vocabulary(&self) -> &'static ToolVocabulary {
        &TOOLS
    }

    fn tested(&self) -> Option<&'static super::Tested> {
        Some(&TESTED)
    }

    fn resume_command(&self, id: &str, _path: &str) -> String {
        format!("kimi -r {}", crate::resume::shell_quote(id))
    }
}

/// Line types skipped on purpose: the wire's bookkeeping, and the messages
/// `agent.message.appended` repeats at a turn's end.
const SKIPPED_TYPES: &[&str] = &[
    "metadata",
    "runtime.set_binding",
    "profile.bind",
    "permission.set_mode",
    "turn.prompt",
    "agent.message.appended",
    "agent.turn.started",
    "agent.turn.ended",
    "plugin.session_start",
    "llm.tools_snapshot",
    "llm.request",
    "usage.record",
    "token_counting.measured",
    "token_counting.turn_recorded",
    "turn.ended",
    "prompt.completed",
];

/// Loop events skipped on purpose: a step's boundaries.
const SKIPPED_EVENTS: &[&str] = &["step.begin", "step.end"];

/// Parses one complete line (without its `\n`) that starts at byte `offset`.
fn parse_line(ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
    let map = match object_line(ctx, offset, line) {
        Ok(map) => map,
        Err(outcome) => return outcome,
    };
    let entry = Value::Object(map);
    let ts = entry
        .get("time")
        .and_then(Value::as_i64)
        .map(crate::rows::rfc3339_millis);
    let mut out = Out::new(ctx, ts);
    match str_of(&entry, "type") {
        "context.append_message" => message(&mut out, &entry, offset),
        "context.append_loop_event" => loop_event(&mut out, &entry),
        kind if SKIPPED_TYPES.contains(&kind) => {}
        // A type newer than this reader, or a line without its type.
        _ => out.unknown(),
    }
    out.done()
}

/// A message put into the model's context: the user's prompt is read; what the CLI injects is
/// not the conversation.
fn message(out: &mut Out, entry: &Value, offset: u64) {
    let Some(message) = entry.get("message") else {
        out.unknown();
        return;
    };
    if message.pointer("/origin/kind").and_then(Value::as_str) != Some("user") {
        return;
    }
    let base = match str_of(message, "id") {
        "" => format!("@{offset}"),
        id => id.to_string(),
    };
    let Some(parts) = message.get("content").and_then(Value::as_array) else {
        out.unknown();
        return;
    };
    for (i, part) in parts.iter().enumerate() {
        match str_of(part, "type") {
            "text" => out.text(
                format!("{base}#{i}"),
                TextKind::User,
                str_of(part, "text").to_string(),
            ),
            // A part of a kind newer than this reader (images, files).
            _ => out.unknown(),
        }
    }
}

/// An event of the agent loop: the model's text and thinking, tool calls and their results.
fn loop_event(out: &mut Out, entry: &Value) {
    let event = entry.get("event").unwrap_or(&Value::Null);
    let uuid = str_of(event, "uuid");
    match str_of(event, "type") {
        "content.part" => {
            let part = event.get("part").unwrap_or(&Value::Null);
            match str_of(part, "type") {
                "text" => out.text(
                    uuid.to_string(),
                    TextKind::Assistant,
                    str_of(part, "text").to_string(),
                ),
                "think" | "thinking" => out.text(
                    uuid.to_string(),
                    TextKind::Thinking,
                    text_of(part.get("think").or_else(|| part.get("thinking"))),
                ),
                _ => out.unknown(),
            }
        }
        "tool.call" => out.call(
            uuid.to_string(),
            str_of(event, "toolCallId"),
            str_of(event, "name"),
            event
                .get("args")
                .cloned()
                .unwrap_or_else(|| Value::Object(Default::default())),
        ),
        "tool.result" => {
            let call_id = str_of(event, "toolCallId");
            let result = event.get("result").unwrap_or(&Value::Null);
            let is_error = result.get("isError").and_then(Value::as_bool) == Some(true)
                || result.get("error").is_some_and(|e| !e.is_null());
            let output = match result.get("output") {
                Some(Value::Array(parts)) => parts
                    .iter()
                    .map(|p| text_of(p.get("text")))
                    .collect::<Vec<_>>()
                    .join(""),
                Some(output) => text_of(Some(output)),
                None => text_of(result.get("error")),
            };
            out.result(format!("{call_id}:result"), call_id, output, is_error);
        }
        kind if SKIPPED_EVENTS.contains(&kind) => {}
        // An event newer than this reader.
        _ => out.unknown(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use clankie_model::{Record, RecordBody, RecordKind};

    fn records(line: &str) -> Vec<Record> {
        test_support::records(test_support::harness("kimi-code"), 0, line)
    }

    #[test]
    fn a_turn_with_a_shell_call() {
        let user = r#"{"type":"context.append_message","agentId":"main","message":{"role":"user","content":[{"type":"text","text":"run it"}],"id":"msg_1","toolCalls":[],"origin":{"kind":"user"}},"time":1796527586619}"#;
        let got = records(user);
        assert_eq!(
            test_support::summary(&got),
            [("msg_1#0".into(), RecordKind::User)]
        );
        assert_eq!(got[0].ts.as_deref(), Some("2026-12-06T03:26:26.619Z"));
        let reminder = r#"{"type":"context.append_message","agentId":"main","message":{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"}],"toolCalls":[],"origin":{"kind":"injection","variant":"date"}},"time":1}"#;
        assert!(records(reminder).is_empty());
        let call = r#"{"type":"context.append_loop_event","agentId":"main","event":{"type":"tool.call","uuid":"u2","turnId":"0","step":1,"toolCallId":"c1","name":"Bash","args":{"command":"ls"}},"time":1}"#;
        assert_eq!(
            test_support::summary(&records(call)),
            [("u2".into(), RecordKind::ToolCall)]
        );
        let result = r#"{"type":"context.append_loop_event","agentId":"main","event":{"type":"tool.result","parentUuid":"u2","toolCallId":"c1","result":{"output":"a\n","isError":true}},"time":1}"#;
        assert_eq!(
            records(result)[0].body,
            RecordBody::ToolResult {
                call_id: "c1".into(),
                output: "a\n".into(),
                is_error: true
            }
        );
        let step = r#"{"type":"context.append_loop_event","agentId":"main","event":{"type":"step.end","uuid":"s"},"time":1}"#;
        assert!(records(step).is_empty());
        assert_eq!(
            KimiCode
                .session_cwd(br#"{"id":"session_x","cwd":"/w"}"#)
                .as_deref(),
            Some("/w")
        );
    }
}
