//! Qwen Code sessions (`projects/<cwd-slug>/chats/<uuid>.jsonl` under `~/.qwen`): one entry a
//! line in an envelope like Claude Code's (`uuid`, `parentUuid`, `sessionId`, `timestamp`,
//! `type`, `cwd`), holding Gemini-shaped messages (`message.parts` with `text`, `functionCall`,
//! `functionResponse`). Written by `@qwen-code/qwen-code` 0.24 (`tests/fixtures/qwen-0.24.4/`
//! is one session the real CLI wrote, resumed). Not Gemini CLI's layout.
//!
//! - Ids: `<uuid>#<part index>`.
//! - `type: "system"` lines (telemetry, attribution snapshots) are metadata ([`SKIPPED_TYPES`]);
//!   any other type, a message line without its `message.parts`, and a part of an unknown kind
//!   are counted as not understood.
//! - Every line's `version` is the release that wrote it.
//! - A shell call's result is the bare output its `toolCallResult.resultDisplay` keeps (the
//!   `functionResponse` holds it inside a `Command:`/`Output:`/`Exit Code:` report for the
//!   model), an error when its exit code is not 0; another tool's is its `functionResponse`
//!   (`output`, or `error`, an error), and any result whose status is not `success` an error.
//! - Model and usage: the line's `model` and `usageMetadata`.

use serde_json::Value;

use crate::SourceCtx;
use crate::harness::{Format, PatchEnvelope, ToolVocabulary};
use crate::lines::LineOutcome;
use crate::records::{Out, count, object_line, stamp_model, str_of, text_of};
use crate::session::{SessionFile, session_file};
use clankie_model::{DefaultHome, FileEntry, Layout, ListSpec, Storage, TextKind, Usage};

/// Qwen Code.
pub(super) struct Qwen;

/// Qwen Code's tools: `run_shell_command` (`command`); `edit` (`file_path`,
/// `old_string`/`new_string`); `write_file` (`file_path`, `content`).
static TOOLS: ToolVocabulary = ToolVocabulary {
    shell_tools: &["run_shell_command"],
    command_keys: &["command"],
    path_keys: &["file_path"],
    snippet_keys: &[("old_string", "new_string")],
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
    name: "qwen",
    default_home: DefaultHome {
        env_var: None,
        env_relative: "",
        home_relative: ".qwen",
    },
    list: ListSpec {
        subdirs: &["projects"],
        suffixes: &[".jsonl"],
        max_depth: 2,
        top_files: &[],
    },
    db_env: None,
    storage: Storage::Files,
    id_globs: &["projects/*/chats/{id}*.jsonl"],
};

/// The newest Qwen Code this reader is tested against (docs/harnesses.md).
const TESTED: super::Tested = super::Tested {
    product: "Qwen Code",
    version: "0.24.4",
};

impl Format for Qwen {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    /// `projects/<cwd-slug>/chats/<uuid>.jsonl`: the stem is the session id.
    fn session(&self, entry: &FileEntry) -> Option<SessionFile> {
        let rel = std::str::from_utf8(&entry.rel).ok()?;
        match rel.split('/').collect::<Vec<_>>().as_slice() {
            ["projects", _, "chats", file] => {
                session_file(entry, file.strip_suffix(".jsonl")?, None)
            }
            _ => None,
        }
    }

    fn parse_line(&self, ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
        parse_line(ctx, offset, line)
    }

    /// Every entry's `cwd`.
    fn session_cwd(&self, head: &[u8]) -> Option<String> {
        crate::resume::first_in_lines(head, "/cwd")
    }

    fn tool_vocabulary(&self) -> &'static ToolVocabulary {
        &TOOLS
    }

    fn tested(&self) -> Option<&'static super::Tested> {
        Some(&TESTED)
    }

    /// The first line's `version`.
    fn writer_version(&self, head: &[u8]) -> Option<String> {
        super::version_field(head, "version")
    }

    fn resume_command(&self, id: &str, _path: &str) -> String {
        format!("qwen --resume {}", crate::resume::shell_quote(id))
    }
}

/// Line types skipped on purpose: telemetry and attribution snapshots.
const SKIPPED_TYPES: &[&str] = &["system"];

/// Parses one complete line (without its `\n`) that starts at byte `offset`.
fn parse_line(ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
    let map = match object_line(ctx, offset, line) {
        Ok(map) => map,
        Err(outcome) => return outcome,
    };
    let entry = Value::Object(map);
    let ts = entry
        .get("timestamp")
        .and_then(Value::as_str)
        .map(str::to_string);
    let base = match str_of(&entry, "uuid") {
        "" => format!("@{offset}"),
        id => id.to_string(),
    };
    let mut out = Out::new(ctx, ts);
    let kind = str_of(&entry, "type");
    if !matches!(kind, "user" | "assistant" | "tool_result") {
        if !SKIPPED_TYPES.contains(&kind) {
            // A type newer than this reader, or a line without its type.
            out.unknown();
        }
        return out.done();
    }
    let Some(parts) = entry.pointer("/message/parts").and_then(Value::as_array) else {
        // A message line without its parts: a renamed field.
        out.unknown();
        return out.done();
    };
    let text_kind = if kind == "assistant" {
        TextKind::Assistant
    } else {
        TextKind::User
    };
    for (i, part) in parts.iter().enumerate() {
        let id = format!("{base}#{i}");
        if let Some(text) = part.get("text").and_then(Value::as_str) {
            let kind = if part.get("thought").and_then(Value::as_bool) == Some(true) {
                TextKind::Thinking
            } else {
                text_kind
            };
            out.text(id, kind, text.to_string());
        } else if let Some(call) = part.get("functionCall") {
            out.call(
                id,
                str_of(call, "id"),
                str_of(call, "name"),
                call.get("args")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Default::default())),
            );
        } else if let Some(response) = part.get("functionResponse") {
            let (output, is_error) = result(&entry, response);
            out.result(id, str_of(response, "id"), output, is_error);
        } else if let Some(data) = part.get("inlineData") {
            let bytes = str_of(data, "data").len() / 4 * 3;
            out.text(
                id,
                text_kind,
                format!("[image {}, {bytes} bytes]", str_of(data, "mimeType")),
            );
        } else {
            // A part of a kind newer than this reader.
            out.unknown();
        }
    }
    if kind == "assistant" {
        let model = Some(str_of(&entry, "model")).filter(|m| !m.is_empty());
        let usage = entry.get("usageMetadata").and_then(|u| {
            Usage {
                input: count(u, "promptTokenCount"),
                output: count(u, "candidatesTokenCount"),
                cache_read: count(u, "cachedContentTokenCount"),
                cache_write: None,
                reasoning: count(u, "thoughtsTokenCount"),
            }
            .nonempty()
        });
        stamp_model(&mut out.records, model, usage);
    }
    out.done()
}

/// A tool's result and whether it failed (see the module's doc).
fn result(entry: &Value, response: &Value) -> (String, bool) {
    let call = entry.get("toolCallResult").unwrap_or(&Value::Null);
    let failed = !matches!(str_of(call, "status"), "" | "success");
    let display = call.get("resultDisplay").unwrap_or(&Value::Null);
    if str_of(display, "type") == "shell_result" {
        let code = display.get("exitCode").and_then(Value::as_i64);
        let output = text_of(display.get("output"));
        return (output, failed || code.is_some_and(|c| c != 0));
    }
    let body = response.get("response").unwrap_or(&Value::Null);
    match (body.get("output"), body.get("error")) {
        (_, Some(error)) if !error.is_null() => (text_of(Some(error)), true),
        (Some(output), _) => (text_of(Some(output)), failed),
        _ => (text_of(Some(body)), failed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use clankie_model::{Record, RecordBody, RecordKind};

    fn records(line: &str) -> Vec<Record> {
        test_support::records(test_support::harness("qwen"), 0, line)
    }

    #[test]
    fn a_turn_with_a_shell_call() {
        let user = r#"{"uuid":"u1","type":"user","cwd":"/w","message":{"role":"user","parts":[{"text":"run it"}]}}"#;
        assert_eq!(
            test_support::summary(&records(user)),
            [("u1#0".into(), RecordKind::User)]
        );
        let assistant = r#"{"uuid":"a1","type":"assistant","model":"m","message":{"role":"model","parts":[{"text":"hm","thought":true},{"text":"ok"},{"functionCall":{"id":"c1","name":"run_shell_command","args":{"command":"ls"}}}]},"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":10}}"#;
        let got = records(assistant);
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|r| r.model.as_deref() == Some("m")));
        assert_eq!(got[0].usage.as_ref().and_then(|u| u.input), Some(20));
        let shell = r#"{"uuid":"r1","type":"tool_result","message":{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"output":"Command: ls\nOutput: a\nExit Code: 2"}}}]},"toolCallResult":{"callId":"c1","status":"success","resultDisplay":{"type":"shell_result","exitCode":2,"output":"a"}}}"#;
        assert_eq!(
            records(shell)[0].body,
            RecordBody::ToolResult {
                call_id: "c1".into(),
                output: "a".into(),
                is_error: true
            }
        );
        let refused = r#"{"uuid":"r2","type":"tool_result","message":{"role":"user","parts":[{"functionResponse":{"id":"c2","name":"x","response":{"error":"no"}}}]}}"#;
        assert_eq!(
            records(refused)[0].body,
            RecordBody::ToolResult {
                call_id: "c2".into(),
                output: "no".into(),
                is_error: true
            }
        );
        let system = r#"{"uuid":"s1","type":"system","subtype":"ui_telemetry","systemPayload":{}}"#;
        assert!(records(system).is_empty());
        assert_eq!(
            Qwen.session_cwd(format!("{user}\n").as_bytes()).as_deref(),
            Some("/w")
        );
    }
}
