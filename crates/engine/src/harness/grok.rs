//! Grok Build sessions (`sessions/<pct-encoded-cwd>/<uuid>/chat_history.jsonl`): one
//! `{type, …}` object per line with no ids and no timestamps. Follows
//! `research/formats-pi-grok-opencode-gemini.md` §2.3 and §5.3. Ids are the line's byte offset
//! plus the block position (`@<offset>#<i>`); `/rewind` truncates the file, which the cursor's
//! prefix hash turns into a `reset`.
//!
//! A user line's `synthetic_reason` says the runtime wrote it (environment, project
//! instructions, reminders, auto-continue, …: not a prompt), except `interjection`: what the user
//! typed while the agent worked, a prompt like any other. The older history format (v0) wrote
//! chat-completion messages, `{role, content, reasoning_content?, tool_calls?[{id, function:
//! {name, arguments}}]}` and `{role: "tool", tool_call_id, content}`; such a line reads as the
//! line of its role would, and an assistant's inline reasoning (`reasoning_content`, or a later
//! `reasoning: {text}`) is its thinking.

use serde_json::Value;

use crate::SourceCtx;
use crate::harness::{Format, PatchEnvelope, ToolRole, ToolVocabulary};
use crate::lines::LineOutcome;
use crate::records::{Out, image_placeholder, json_arguments, object_line, stamp_model, str_of};
use crate::session::{SessionFile, session_file};
use clankie_model::TextKind;
use clankie_model::{DefaultHome, FileEntry, Layout, ListSpec, Storage};

/// Grok Build.
pub(super) struct Grok;

/// Grok Build's tools: `run_terminal_cmd`; its editing tools are not in the fixtures, so the
/// key shapes of both string-replace editor families are taken (`old_string`/`new_string`,
/// `old_str`/`new_str`).
/// Its file tools: `read_file` (`target_file`), `web_search`.
static TOOLS: ToolVocabulary = ToolVocabulary {
    shell_tools: &["run_terminal_cmd"],
    command_keys: &["command"],
    path_keys: &["file_path", "path"],
    snippet_keys: &[("old_string", "new_string"), ("old_str", "new_str")],
    replace_all_keys: &["replace_all"],
    edit_list_keys: &["edits"],
    write_tool_marks: &["write"],
    content_keys: &["content"],
    patch_tools: &[],
    patch_keys: &[],
    patch_envelope: &PatchEnvelope::NONE,
    roles: &[
        ("read_file", ToolRole::Read),
        ("web_search", ToolRole::WebSearch),
    ],
    read_path_keys: &["target_file"],
    first_line_keys: &["offset", "start_line"],
    line_count_keys: &["limit"],
    last_line_keys: &["end_line"],
    pattern_keys: &["query"],
    ..ToolVocabulary::NONE
};

static LAYOUT: Layout = Layout {
    name: "grok",
    // Reported, not verified against the closed-source CLI.
    default_home: DefaultHome {
        env_var: Some("GROK_HOME"),
        env_relative: "",
        home_relative: ".grok",
    },
    // sessions/<pct-encoded-cwd>/<uuid>/chat_history.jsonl; the other journals in a session
    // directory (updates.jsonl can be gigabytes) are not transcripts.
    list: ListSpec {
        subdirs: &["sessions"],
        suffixes: &["/chat_history.jsonl"],
        max_depth: 2,
        top_files: &[],
    },
    db_env: None,
    storage: Storage::Files,
    id_globs: &["sessions/*/{id}*/chat_history.jsonl"],
};

impl Format for Grok {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    fn session(&self, entry: &FileEntry) -> Option<SessionFile> {
        classify(entry)
    }

    fn parse_line(&self, ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
        parse_line(ctx, offset, line)
    }

    /// The session directory's `summary.json` holds the directory.
    fn cwd_file(&self) -> Option<&'static str> {
        Some("summary.json")
    }

    /// `info.cwd` of `summary.json`.
    fn session_cwd(&self, head: &[u8]) -> Option<String> {
        serde_json::from_slice::<Value>(head)
            .ok()?
            .pointer("/info/cwd")
            .and_then(Value::as_str)
            .map(str::to_string)
    }

    fn tool_vocabulary(&self) -> &'static ToolVocabulary {
        &TOOLS
    }

    fn resume_command(&self, id: &str, _path: &str) -> String {
        format!("grok --resume {}", crate::resume::shell_quote(id))
    }
}

/// `sessions/<pct-encoded-cwd>/<uuid>/chat_history.jsonl`: the id is the directory name.
fn classify(entry: &FileEntry) -> Option<SessionFile> {
    let rel = std::str::from_utf8(&entry.rel).ok()?;
    match rel.split('/').collect::<Vec<_>>().as_slice() {
        ["sessions", _cwd, id, "chat_history.jsonl"] => session_file(entry, id, None),
        _ => None,
    }
}

/// Parses one complete line (without its `\n`) that starts at byte `offset`.
pub(super) fn parse_line(ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
    let map = match object_line(ctx, offset, line) {
        Ok(map) => map,
        Err(outcome) => return outcome,
    };
    let entry = Value::Object(map);
    let id = |i: usize| format!("@{offset}#{i}");
    let mut out = Out::new(ctx, None);
    // The v0 format names a line's kind by its chat role.
    let kind = match (str_of(&entry, "type"), str_of(&entry, "role")) {
        ("", "tool") => "tool_result",
        ("", role) => role,
        (kind, _) => kind,
    };
    match kind {
        // Injected context (environment, project instructions, reminders) is not a prompt; an
        // interjection is the user's.
        "user"
            if entry
                .get("synthetic_reason")
                .is_some_and(|r| !r.is_null() && r.as_str() != Some("interjection")) => {}
        "user" => {
            if let Some(reason) = entry.get("prior_turn_interrupt").and_then(Value::as_str) {
                out.text(
                    format!("@{offset}"),
                    TextKind::Notice,
                    format!("previous turn interrupted ({reason})"),
                );
            }
            match entry.get("content") {
                Some(Value::String(text)) => out.text(id(0), TextKind::User, text.clone()),
                Some(Value::Array(blocks)) => {
                    for (i, block) in blocks.iter().enumerate() {
                        let text = match str_of(block, "type") {
                            "text" => str_of(block, "text").to_string(),
                            "image" => image_placeholder(str_of(block, "url")),
                            _ => {
                                out.unknown();
                                continue;
                            }
                        };
                        out.text(id(i), TextKind::User, text);
                    }
                }
                // A user entry without its content: a renamed field.
                _ => out.unknown(),
            }
        }
        "assistant" => {
            // Inline reasoning of the older formats (its own `reasoning` line since).
            let inline = match entry.get("reasoning_content") {
                Some(Value::String(text)) => text.clone(),
                _ => entry
                    .pointer("/reasoning/text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            };
            if entry.get("content").is_none() && entry.get("tool_calls").is_none() {
                out.unknown();
            }
            out.text(format!("@{offset}#r"), TextKind::Thinking, inline);
            let text = match entry.get("content") {
                Some(Value::Array(blocks)) => blocks
                    .iter()
                    .filter(|b| str_of(b, "type") == "text")
                    .map(|b| str_of(b, "text"))
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => str_of(&entry, "content").to_string(),
            };
            out.text(id(0), TextKind::Assistant, text);
            let calls = entry.get("tool_calls").and_then(Value::as_array);
            for (k, call) in calls.into_iter().flatten().enumerate() {
                // v0: `{id, type: "function", function: {name, arguments}}`.
                let function = call.get("function").unwrap_or(call);
                out.call(
                    id(k + 1),
                    str_of(call, "id"),
                    str_of(function, "name"),
                    json_arguments(function.get("arguments")),
                );
            }
            // Grok Build records the model with the message, but no token counts.
            let model = Some(str_of(&entry, "model_id")).filter(|m| !m.is_empty());
            stamp_model(&mut out.records, model, None);
        }
        "reasoning" => {
            let summary = entry.get("summary").and_then(Value::as_array);
            let text = summary
                .into_iter()
                .flatten()
                .map(|s| str_of(s, "text"))
                .filter(|t| !t.is_empty())
                .collect::<Vec<_>>()
                .join("\n\n");
            out.text(id(0), TextKind::Thinking, text);
        }
        "tool_result" => {
            let mut output = match entry.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            for image in entry
                .get("images")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                output.push('\n');
                output.push_str(&image_placeholder(image.as_str().unwrap_or_default()));
            }
            // Grok Build does not record whether a tool failed.
            out.result(id(0), str_of(&entry, "tool_call_id"), output, false);
        }
        "backend_tool_call" => {
            // A server-side tool (web search): no result line follows.
            let kind = entry.get("kind").unwrap_or(&Value::Null);
            let name = match str_of(kind, "tool_type") {
                "" => "backend_tool",
                name => name,
            };
            let input = kind.get("action").cloned().unwrap_or(Value::Null);
            out.call(id(0), str_of(kind, "id"), name, input);
        }
        ty if SKIPPED_TYPES.contains(&ty) => {}
        // A type newer than this reader, or an entry without its type.
        _ => out.unknown(),
    }
    out.done()
}

/// Entry types skipped on purpose: the system prompt.
const SKIPPED_TYPES: &[&str] = &["system"];

#[cfg(test)]
mod tests {
    use crate::test_support;
    use clankie_model::{Record, RecordBody, RecordKind};

    fn records(line: &str) -> Vec<Record> {
        test_support::records(crate::test_support::harness("grok"), 7, line)
    }

    fn summary(line: &str) -> Vec<(String, RecordKind)> {
        test_support::summary(&records(line))
    }

    #[test]
    fn an_assistant_line_carries_its_model() {
        let got = records(
            r#"{"type":"assistant","content":"I'll count them.","tool_calls":[{"id":"c0","name":"run_terminal_cmd","arguments":"{}"}],"model_id":"grok-4.5"}"#,
        );
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|r| r.model.as_deref() == Some("grok-4.5")));
        assert!(got.iter().all(|r| r.usage.is_none()));
    }

    #[test]
    fn an_interjection_is_the_users_and_other_synthetic_lines_are_not() {
        let typed = r#"{"type":"user","content":[{"type":"text","text":"also check the tests"}],"synthetic_reason":"interjection"}"#;
        assert_eq!(summary(typed), [("@7#0".into(), RecordKind::User)]);
        let wake = r#"{"type":"user","content":[{"type":"text","text":"task done"}],"synthetic_reason":"task_completed"}"#;
        assert!(records(wake).is_empty());
    }

    #[test]
    fn the_v0_chat_message_lines_read_by_their_role() {
        let user = r#"{"role":"user","content":"list the files"}"#;
        assert_eq!(summary(user), [("@7#0".into(), RecordKind::User)]);
        let assistant = r#"{"role":"assistant","content":"Listing.","reasoning_content":"ls will do","tool_calls":[{"id":"call_1","type":"function","function":{"name":"run_terminal_cmd","arguments":"{\"command\":\"ls\"}"}}]}"#;
        let got = records(assistant);
        assert_eq!(
            test_support::summary(&got),
            [
                ("@7#r".into(), RecordKind::Assistant),
                ("@7#0".into(), RecordKind::Assistant),
                ("@7#1".into(), RecordKind::ToolCall)
            ]
        );
        assert!(
            matches!(&got[0].body, RecordBody::Text { kind: clankie_model::TextKind::Thinking, text } if text == "ls will do")
        );
        assert!(
            matches!(&got[2].body, RecordBody::ToolCall { call_id, name, input, .. }
            if call_id == "call_1" && name == "run_terminal_cmd" && input["command"] == "ls")
        );
        let tool = r#"{"role":"tool","tool_call_id":"call_1","content":"a.txt\n"}"#;
        assert!(
            matches!(&records(tool)[0].body, RecordBody::ToolResult { call_id, output, .. }
            if call_id == "call_1" && output == "a.txt\n")
        );
        assert!(records(r#"{"role":"system","content":"You are Grok"}"#).is_empty());
        // The intermediate form: a `type` line with its reasoning inline.
        let inline =
            r#"{"type":"assistant","content":"answer","reasoning":{"text":"step by step"}}"#;
        assert_eq!(
            summary(inline),
            [
                ("@7#r".into(), RecordKind::Assistant),
                ("@7#0".into(), RecordKind::Assistant)
            ]
        );
    }

    #[test]
    fn kinds_and_line_based_ids() {
        assert!(records(r#"{"type":"system","content":"You are Grok"}"#).is_empty());
        assert!(
            records(r#"{"type":"user","content":[{"type":"text","text":"<user_info>"}],"synthetic_reason":"environment_context"}"#)
                .is_empty()
        );
        assert_eq!(
            summary(
                r#"{"type":"user","content":[{"type":"text","text":"hi"}],"prompt_index":0,"prior_turn_interrupt":"mid_turn_abort"}"#
            ),
            [
                ("@7".into(), RecordKind::Notice),
                ("@7#0".into(), RecordKind::User)
            ]
        );
        assert_eq!(
            summary(
                r#"{"type":"assistant","content":"","tool_calls":[{"id":"c0","name":"read_file","arguments":"{\"f\":1}"},{"id":"c1","name":"x","arguments":"{}"}]}"#
            ),
            [
                ("@7#1".into(), RecordKind::ToolCall),
                ("@7#2".into(), RecordKind::ToolCall)
            ]
        );
        let result = records(r#"{"type":"tool_result","tool_call_id":"c0","content":"ok\n"}"#);
        assert_eq!(
            result[0].body,
            RecordBody::ToolResult {
                call_id: "c0".into(),
                output: "ok\n".into(),
                is_error: false
            }
        );
        assert_eq!(
            summary(
                r#"{"type":"backend_tool_call","kind":{"tool_type":"web_search","action":{"query":"q"},"id":"ws_1","status":"completed"}}"#
            ),
            [("@7#0".into(), RecordKind::ToolCall)]
        );
    }
}
