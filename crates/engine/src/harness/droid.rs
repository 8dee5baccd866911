//! Factory Droid sessions (`sessions/<cwd-slug>/<uuid>.jsonl` under `~/.factory`, the home
//! under `$FACTORY_HOME_OVERRIDE` when set): a `session_start` line (`id`, `title`, `cwd`), then
//! `{"type":"message","id","parentId","timestamp","message":{role, content}}` lines whose
//! content blocks are Anthropic's (`text`, `thinking`, `tool_use`, `tool_result`). Written by
//! `@factory/cli` 0.225 (`tests/fixtures/droid-0.225.1/` is one session the real CLI wrote).
//!
//! - Ids: `<line id>#<block index>`.
//! - A user message whose id starts `context-` is the context Droid sends in the user's name
//!   (a `<system-reminder>` listing its deferred tools): metadata, not a prompt.
//! - `Execute` ends its result with `[Process exited with code N]` for the model: the record's
//!   output is what the command printed, and a non-zero code (or the block's `is_error`) is an
//!   error.
//! - The model is the assistant message's `modelId`; token counts are only the session's totals
//!   in `<uuid>.settings.json`, not per message: records carry none.
//! - `agent_turn_outcome` is a notice only when the turn did not complete.
//! - What else is skipped is [`SKIPPED_TYPES`]; any other line type, a message without its
//!   `message` or content, and a block of an unknown kind are counted as not understood. The
//!   `session_start` line's `version` is the file format's: no line records the release.

use serde_json::Value;

use crate::SourceCtx;
use crate::harness::{Format, PatchEnvelope, ToolVocabulary};
use crate::lines::LineOutcome;
use crate::records::{Out, image_placeholder, object_line, stamp_model, str_of, text_of};
use crate::session::{SessionFile, session_file};
use clankie_model::{DefaultHome, FileEntry, Layout, ListSpec, Storage, TextKind};

/// Factory Droid.
pub(super) struct Droid;

/// Droid's tools (as 0.225 offers them): `Execute` (`command`); `Edit` (`file_path`,
/// `old_str`/`new_str`, `change_all`); `Create` (`file_path`, `content`).
static TOOLS: ToolVocabulary = ToolVocabulary {
    shell_tools: &["execute"],
    command_keys: &["command"],
    path_keys: &["file_path"],
    snippet_keys: &[("old_str", "new_str")],
    replace_all_keys: &["change_all"],
    edit_list_keys: &[],
    write_tool_marks: &["create"],
    content_keys: &["content"],
    patch_tools: &[],
    patch_keys: &[],
    patch_envelope: &PatchEnvelope::NONE,
    ..ToolVocabulary::NONE
};

static LAYOUT: Layout = Layout {
    name: "droid",
    default_home: DefaultHome {
        env_var: Some("FACTORY_HOME_OVERRIDE"),
        env_relative: ".factory",
        home_relative: ".factory",
    },
    list: ListSpec {
        subdirs: &["sessions"],
        suffixes: &[".jsonl"],
        max_depth: 1,
        top_files: &[],
    },
    db_env: None,
    storage: Storage::Files,
    id_globs: &["sessions/{id}*.jsonl", "sessions/*/{id}*.jsonl"],
};

/// The newest Droid this reader is tested against (docs/harnesses.md).
const TESTED: super::Tested = super::Tested {
    product: "Factory Droid",
    version: "0.225.1",
};

impl Format for Droid {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    /// `sessions/<cwd-slug>/<uuid>.jsonl` (or directly under `sessions/`): the stem is the id.
    fn session(&self, entry: &FileEntry) -> Option<SessionFile> {
        let rel = std::str::from_utf8(&entry.rel).ok()?;
        let file = match rel.split('/').collect::<Vec<_>>().as_slice() {
            ["sessions", _, file] | ["sessions", file] => *file,
            _ => return None,
        };
        session_file(entry, file.strip_suffix(".jsonl")?, None)
    }

    fn parse_line(&self, ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
        parse_line(ctx, offset, line)
    }

    /// The `session_start` line's `cwd`.
    fn session_cwd(&self, head: &[u8]) -> Option<String> {
        crate::resume::first_in_lines(head, "/cwd")
    }

    /// The `session_start` line's `title` (Droid's, or the user's when renamed).
    fn native_title(&self, head: &[u8]) -> Option<String> {
        crate::resume::complete_lines(head)
            .find(|line| str_of(line, "type") == "session_start")
            .and_then(|line| {
                line.get("title")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
    }

    fn tool_vocabulary(&self) -> &'static ToolVocabulary {
        &TOOLS
    }

    fn tested(&self) -> Option<&'static super::Tested> {
        Some(&TESTED)
    }

    fn resume_command(&self, id: &str, _path: &str) -> String {
        format!("droid --resume {}", crate::resume::shell_quote(id))
    }
}

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
    let base = match str_of(&entry, "id") {
        "" => format!("@{offset}"),
        id => id.to_string(),
    };
    let mut out = Out::new(ctx, ts);
    match str_of(&entry, "type") {
        // Context Droid sends in the user's name: skipped on purpose.
        "message" if base.starts_with("context-") => {}
        "message" => match entry.get("message") {
            Some(message) => message_records(&mut out, &base, message),
            // A message line without its message: a renamed field.
            None => out.unknown(),
        },
        "agent_turn_outcome" => {
            let reason = str_of(&entry, "reason");
            if !matches!(reason, "" | "completed") {
                out.text(base, TextKind::Notice, format!("turn ended: {reason}"));
            }
        }
        ty if SKIPPED_TYPES.contains(&ty) => {}
        // A type newer than this reader, or a line without its type.
        _ => out.unknown(),
    }
    out.done()
}

/// Line types skipped on purpose: the session's header (its id, title and working directory
/// are read from the head by the listing and resume).
const SKIPPED_TYPES: &[&str] = &["session_start"];

fn message_records(out: &mut Out<'_>, base: &str, message: &Value) {
    let role = str_of(message, "role");
    let content = message.get("content").unwrap_or(&Value::Null);
    let blocks: Vec<Value> = match content {
        Value::String(text) => vec![serde_json::json!({"type": "text", "text": text})],
        Value::Array(blocks) => blocks.clone(),
        _ => {
            // A message without its content, or a content of another shape.
            out.unknown();
            Vec::new()
        }
    };
    let text_kind = if role == "assistant" {
        TextKind::Assistant
    } else {
        TextKind::User
    };
    for (i, block) in blocks.iter().enumerate() {
        let id = format!("{base}#{i}");
        match str_of(block, "type") {
            "text" => out.text(id, text_kind, str_of(block, "text").to_string()),
            "thinking" => out.text(
                id,
                TextKind::Thinking,
                str_of(block, "thinking").to_string(),
            ),
            "redacted_thinking" => out.text(id, TextKind::Thinking, "[redacted thinking]".into()),
            "image" => {
                let source = block.get("source").unwrap_or(&Value::Null);
                let url = match str_of(source, "type") {
                    "base64" => format!(
                        "data:{};base64,{}",
                        str_of(source, "media_type"),
                        str_of(source, "data")
                    ),
                    _ => str_of(source, "url").to_string(),
                };
                out.text(id, text_kind, image_placeholder(&url));
            }
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
                let text = result_text(block.get("content"));
                let (output, failed) = exec_output(&text);
                let is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
                out.result(id, str_of(block, "tool_use_id"), output, is_error || failed);
            }
            // A block newer than this reader.
            _ => out.unknown(),
        }
    }
    if role == "assistant" {
        let model = Some(str_of(message, "modelId")).filter(|m| !m.is_empty());
        stamp_model(&mut out.records, model, None);
    }
}

/// A result's content: a string, or the text of its blocks.
fn result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(|b| match str_of(b, "type") {
                "text" => str_of(b, "text").to_string(),
                "image" => "[image]".to_string(),
                _ => b.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => text_of(other),
    }
}

/// A command's output without the `[Process exited with code N]` line `Execute` ends it with
/// (and the blank lines before it), and whether N is non-zero; other text as it is.
fn exec_output(text: &str) -> (String, bool) {
    let trimmed = text.trim_end_matches('\n');
    let (body, last) = trimmed.rsplit_once('\n').unwrap_or(("", trimmed));
    let code = last
        .strip_prefix("[Process exited with code ")
        .and_then(|rest| rest.strip_suffix(']'))
        .and_then(|code| code.parse::<i64>().ok());
    match code {
        Some(code) => (body.trim_end_matches('\n').to_string(), code != 0),
        None => (text.to_string(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use clankie_model::{Record, RecordBody, RecordKind};

    fn records(line: &str) -> Vec<Record> {
        test_support::records(test_support::harness("droid"), 3, line)
    }

    #[test]
    fn a_turn_reads_with_its_model_and_the_exit_code() {
        let context = r#"{"type":"message","id":"context-1","message":{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"}]}}"#;
        assert!(records(context).is_empty());
        let user = r#"{"type":"message","id":"u1","parentId":"context-1","timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}"#;
        assert_eq!(
            test_support::summary(&records(user)),
            [("u1#0".into(), RecordKind::User)]
        );
        let assistant = r#"{"type":"message","id":"a1","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"run"},{"type":"tool_use","id":"c1","name":"Execute","input":{"command":"ls"}}],"modelId":"custom:m-0"}}"#;
        let got = records(assistant);
        assert_eq!(
            test_support::summary(&got),
            [
                ("a1#0".into(), RecordKind::Assistant),
                ("a1#1".into(), RecordKind::Assistant),
                ("a1#2".into(), RecordKind::ToolCall)
            ]
        );
        assert!(got.iter().all(|r| r.model.as_deref() == Some("custom:m-0")));
        let result = r#"{"type":"message","id":"r1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","is_error":false,"content":"a\n\n\n[Process exited with code 2]"}]}}"#;
        assert_eq!(
            records(result)[0].body,
            RecordBody::ToolResult {
                call_id: "c1".into(),
                output: "a".into(),
                is_error: true
            }
        );
    }

    #[test]
    fn outcomes_and_the_header() {
        let done = r#"{"type":"agent_turn_outcome","turnId":"u1","reason":"completed"}"#;
        assert!(records(done).is_empty());
        let cut = r#"{"type":"agent_turn_outcome","turnId":"u1","reason":"interrupted"}"#;
        assert_eq!(
            test_support::summary(&records(cut)),
            [("@3".into(), RecordKind::Notice)]
        );
        let head =
            b"{\"type\":\"session_start\",\"id\":\"e\",\"title\":\"Fix it\",\"cwd\":\"/w/p\"}\n";
        assert!(records(std::str::from_utf8(head).unwrap().trim()).is_empty());
        assert_eq!(Droid.session_cwd(head).as_deref(), Some("/w/p"));
        assert_eq!(Droid.native_title(head).as_deref(), Some("Fix it"));
        assert_eq!(exec_output("plain"), ("plain".into(), false));
    }
}
