//! GitHub Copilot CLI sessions (`session-state/<uuid>/events.jsonl` under `~/.copilot`, or
//! `$COPILOT_HOME`): one JSON event per line, `{type, data, id, timestamp, parentId}`, the
//! session's id its directory's name. Written by `@github/copilot` 1.0.x (the fixture
//! `tests/fixtures/copilot-1.0.102/` is one session the real CLI wrote).
//!
//! - `user.message` is the prompt as typed (`data.content`; `transformedContent` is what the
//!   model got, with a `<current_datetime>` block in front).
//! - `assistant.message`: its text (`content`), its thinking (`reasoningText`) and one call per
//!   `toolRequests[]` entry, `<event id>#<i>` each; its `model`. Usage is in `session.usage_record`
//!   events of their own, before the message: parsing is per line, so a record carries only the
//!   `outputTokens` its message holds.
//! - `tool.execution_complete`: the result of `toolCallId` (`result.content`, or `error.message`
//!   when `success` is false). The shell tool ends its output with a `<shellId: N completed with
//!   exit code N>` line for the model: the record's output is what the command printed, and a
//!   non-zero exit code is an error.
//! - `session.error`, `session.warning`, `abort`, compaction and truncation are notices; the
//!   start and resume, the system prompt, turn boundaries, usage, a tool's start, titles,
//!   hooks, subagents' lifecycle and shutdown are metadata ([`SKIPPED_TYPES`]). Any other
//!   event, a known one without its `data`, and a tool request of an unknown `type` are
//!   counted as not understood.
//! - `session.start`'s `copilotVersion` is the release that wrote the session.

use serde_json::Value;

use crate::SourceCtx;
use crate::harness::{Format, PatchEnvelope, ToolVocabulary};
use crate::lines::LineOutcome;
use crate::records::{Out, str_of, text_of};
use crate::session::{SessionFile, session_file};
use clankie_model::{DefaultHome, FileEntry, Layout, ListSpec, Storage, TextKind, Usage};

/// GitHub Copilot CLI.
pub(super) struct Copilot;

/// Copilot's tools: `bash` (`powershell` on Windows); `edit` (`path`, `old_str`/`new_str`);
/// `create` (`path`, `file_text`).
static TOOLS: ToolVocabulary = ToolVocabulary {
    shell_tools: &["bash", "powershell"],
    command_keys: &["command"],
    path_keys: &["path"],
    snippet_keys: &[("old_str", "new_str")],
    replace_all_keys: &[],
    edit_list_keys: &[],
    write_tool_marks: &["create"],
    content_keys: &["file_text"],
    patch_tools: &[],
    patch_keys: &[],
    patch_envelope: &PatchEnvelope::NONE,
    ..ToolVocabulary::NONE
};

static LAYOUT: Layout = Layout {
    name: "copilot",
    default_home: DefaultHome {
        env_var: Some("COPILOT_HOME"),
        env_relative: "",
        home_relative: ".copilot",
    },
    list: ListSpec {
        subdirs: &["session-state"],
        suffixes: &["/events.jsonl"],
        max_depth: 1,
        top_files: &[],
    },
    db_env: None,
    storage: Storage::Files,
    id_globs: &["session-state/{id}*/events.jsonl"],
};

/// The newest Copilot CLI this reader is tested against (docs/harnesses.md).
const TESTED: super::Tested = super::Tested {
    product: "GitHub Copilot CLI",
    version: "1.0.102",
};

impl Format for Copilot {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    /// `session-state/<uuid>/events.jsonl`: the directory's name is the session id.
    fn session(&self, entry: &FileEntry) -> Option<SessionFile> {
        let rel = std::str::from_utf8(&entry.rel).ok()?;
        match rel.split('/').collect::<Vec<_>>().as_slice() {
            ["session-state", id, "events.jsonl"] => session_file(entry, id, None),
            _ => None,
        }
    }

    fn parse_line(&self, ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
        parse_line(ctx, offset, line)
    }

    /// `session.start`'s `data.context.cwd`.
    fn session_cwd(&self, head: &[u8]) -> Option<String> {
        crate::resume::first_in_lines(head, "/data/context/cwd")
    }

    /// A `session.title_changed` in the first lines.
    fn native_title(&self, head: &[u8]) -> Option<String> {
        crate::resume::complete_lines(head)
            .filter(|event| str_of(event, "type") == "session.title_changed")
            .filter_map(|event| {
                event
                    .pointer("/data/title")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .last()
    }

    fn tool_vocabulary(&self) -> &'static ToolVocabulary {
        &TOOLS
    }

    fn tested(&self) -> Option<&'static super::Tested> {
        Some(&TESTED)
    }

    /// `session.start`'s `copilotVersion` (its `version` is the event format's).
    fn writer_version(&self, head: &[u8]) -> Option<String> {
        super::version_field(head, "copilotVersion")
    }

    fn resume_command(&self, id: &str, _path: &str) -> String {
        format!("copilot --resume {}", crate::resume::shell_quote(id))
    }
}

/// Parses one complete line (without its `\n`) that starts at byte `offset`.
fn parse_line(ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
    let map = match crate::records::object_line(ctx, offset, line) {
        Ok(map) => map,
        Err(outcome) => return outcome,
    };
    let event = Value::Object(map);
    let ts = event
        .get("timestamp")
        .and_then(Value::as_str)
        .map(str::to_string);
    let base = match str_of(&event, "id") {
        "" => format!("@{offset}"),
        id => id.to_string(),
    };
    let ty = str_of(&event, "type");
    let mut out = Out::new(ctx, ts);
    if SKIPPED_TYPES.contains(&ty) {
        return out.done();
    }
    let Some(data) = event.get("data").filter(|data| data.is_object()) else {
        // An event without its data: a renamed field, or no type at all.
        out.unknown();
        return out.done();
    };
    match ty {
        "user.message" => match data.get("content") {
            Some(Value::String(text)) => out.text(base, TextKind::User, text.clone()),
            _ => out.unknown(),
        },
        "assistant.message" => assistant(&mut out, &base, data),
        "assistant.reasoning" => out.text(
            base,
            TextKind::Thinking,
            str_of(data, "content").to_string(),
        ),
        "tool.execution_complete" => {
            let call_id = str_of(data, "toolCallId");
            if data.get("success").and_then(Value::as_bool) == Some(false) {
                let error = data.get("error").unwrap_or(&Value::Null);
                let message = match error.get("message") {
                    Some(message) => text_of(Some(message)),
                    None => text_of(data.get("result").and_then(|r| r.get("content"))),
                };
                out.result(base, call_id, message, true);
            } else {
                let content = text_of(data.get("result").and_then(|r| r.get("content")));
                let (output, failed) = shell_output(&content);
                out.result(base, call_id, output, failed);
            }
        }
        "session.error" => out.text(
            base,
            TextKind::Notice,
            format!("error: {}", str_of(data, "message")),
        ),
        "session.warning" => out.text(
            base,
            TextKind::Notice,
            format!("warning: {}", str_of(data, "message")),
        ),
        "abort" => out.text(
            base,
            TextKind::Notice,
            format!("turn aborted: {}", text_of(data.get("reason"))),
        ),
        "session.compaction_complete" => {
            let summary = str_of(data, "summaryContent").trim();
            let text = if summary.is_empty() {
                "context compacted".to_string()
            } else {
                format!("context compacted; summary:\n{summary}")
            };
            out.text(base, TextKind::Notice, text);
        }
        "session.truncation" => out.text(
            base,
            TextKind::Notice,
            format!(
                "context truncated: {} messages removed",
                text_of(data.get("messagesRemovedDuringTruncation"))
            ),
        ),
        // An event newer than this reader.
        _ => out.unknown(),
    }
    out.done()
}

/// Events skipped on purpose: the start and a resume, the system prompt, turn boundaries,
/// usage records, a tool's start and progress (its call is the message's request, its result
/// the completion), title, model, mode, plan and workspace changes, informational events, idle
/// and shutdown, hooks, skills and subagents' lifecycle (their own events are the thread's).
/// The names are those the suite's sessions write and the Copilot SDK's event schema lists.
const SKIPPED_TYPES: &[&str] = &[
    "session.start",
    "session.resume",
    "session.shutdown",
    "session.idle",
    "session.info",
    "session.usage_record",
    "session.usage_info",
    "session.title_changed",
    "session.model_change",
    "session.mode_changed",
    "session.plan_changed",
    "session.workspace_file_changed",
    "session.handoff",
    "session.compaction_start",
    "system.message",
    "assistant.turn_start",
    "assistant.turn_end",
    "assistant.intent",
    "assistant.usage",
    "tool.execution_start",
    "tool.execution_partial_result",
    "tool.execution_progress",
    "skill.invoked",
    "subagent.started",
    "subagent.completed",
    "subagent.failed",
    "subagent.selected",
    "hook.start",
    "hook.end",
];

fn assistant(out: &mut Out<'_>, base: &str, data: &Value) {
    if data.get("content").is_none() && data.get("toolRequests").is_none() {
        // A message without what it says: a renamed field.
        out.unknown();
    }
    out.text(
        format!("{base}#thinking"),
        TextKind::Thinking,
        str_of(data, "reasoningText").to_string(),
    );
    out.text(
        format!("{base}#0"),
        TextKind::Assistant,
        str_of(data, "content").to_string(),
    );
    for (i, request) in data
        .get("toolRequests")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if !matches!(str_of(request, "type"), "" | "function") {
            // A kind of request newer than this reader.
            out.unknown();
            continue;
        }
        out.call(
            format!("{base}#{}", i + 1),
            str_of(request, "toolCallId"),
            str_of(request, "name"),
            crate::records::json_arguments(request.get("arguments")),
        );
    }
    let usage = Usage {
        output: crate::records::count(data, "outputTokens"),
        ..Usage::default()
    }
    .nonempty();
    let model = Some(str_of(data, "model")).filter(|m| !m.is_empty());
    crate::records::stamp_model(&mut out.records, model, usage);
}

/// The output of a shell call without the `<shellId: N completed with exit code N>` line the
/// shell tool ends it with, and whether that exit code is non-zero; other text as it is.
fn shell_output(content: &str) -> (String, bool) {
    let trimmed = content.trim_end_matches('\n');
    let (body, last) = match trimmed.rsplit_once('\n') {
        Some((body, last)) => (body, last),
        None => ("", trimmed),
    };
    let code = last
        .strip_prefix("<shellId: ")
        .and_then(|rest| rest.strip_suffix('>'))
        .and_then(|rest| rest.split_once(" completed with exit code "))
        .and_then(|(shell, code)| {
            shell.bytes().all(|b| b.is_ascii_digit()).then_some(code)?;
            code.parse::<i64>().ok()
        });
    match code {
        Some(code) => (body.to_string(), code != 0),
        None => (content.to_string(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use clankie_model::{Record, RecordBody, RecordKind};

    fn records(line: &str) -> Vec<Record> {
        test_support::records(test_support::harness("copilot"), 7, line)
    }

    #[test]
    fn a_turn_reads_as_prompt_text_call_and_result() {
        let user = r#"{"type":"user.message","data":{"content":"hi","transformedContent":"<current_datetime>x</current_datetime>\n\nhi"},"id":"u1","timestamp":"t"}"#;
        assert_eq!(
            records(user)[0].body,
            RecordBody::Text {
                kind: TextKind::User,
                text: "hi".into()
            }
        );
        let assistant = r#"{"type":"assistant.message","data":{"model":"m","content":"run","reasoningText":"hmm","outputTokens":7,"toolRequests":[{"toolCallId":"c1","name":"bash","arguments":{"command":"ls"}}]},"id":"a1"}"#;
        let got = records(assistant);
        assert_eq!(
            test_support::summary(&got),
            [
                ("a1#thinking".into(), RecordKind::Assistant),
                ("a1#0".into(), RecordKind::Assistant),
                ("a1#1".into(), RecordKind::ToolCall)
            ]
        );
        assert!(got.iter().all(|r| r.model.as_deref() == Some("m")));
        assert_eq!(got[0].usage.as_ref().and_then(|u| u.output), Some(7));
        let done = r#"{"type":"tool.execution_complete","data":{"toolCallId":"c1","success":true,"result":{"content":"a\nb\n<shellId: 0 completed with exit code 2>"}},"id":"r1"}"#;
        assert_eq!(
            records(done)[0].body,
            RecordBody::ToolResult {
                call_id: "c1".into(),
                output: "a\nb".into(),
                is_error: true
            }
        );
        let failed = r#"{"type":"tool.execution_complete","data":{"toolCallId":"c2","success":false,"error":{"message":"denied"}},"id":"r2"}"#;
        assert_eq!(
            records(failed)[0].body,
            RecordBody::ToolResult {
                call_id: "c2".into(),
                output: "denied".into(),
                is_error: true
            }
        );
    }

    #[test]
    fn shell_trailers_are_cut_only_when_they_are_one() {
        assert_eq!(
            shell_output("x\n<shellId: 0 completed with exit code 0>"),
            ("x".into(), false)
        );
        assert_eq!(
            shell_output("<shellId: 3 completed with exit code 1>"),
            ("".into(), true)
        );
        for kept in [
            "plain",
            "x\n<shellId: a completed with exit code 0>",
            "x\n<b>",
        ] {
            assert_eq!(shell_output(kept), (kept.into(), false));
        }
    }

    #[test]
    fn metadata_and_notices() {
        for line in [
            r#"{"type":"session.start","data":{"sessionId":"s","context":{"cwd":"/w"}},"id":"e"}"#,
            r#"{"type":"system.message","data":{"role":"system","content":"You are"},"id":"e"}"#,
            r#"{"type":"session.usage_record","data":{"usage":{"inputTokens":1}},"id":"e"}"#,
            r#"{"type":"tool.execution_start","data":{"toolCallId":"c1"},"id":"e"}"#,
            r#"{"type":"assistant.turn_end","data":{"turnId":"0"},"id":"e"}"#,
        ] {
            assert!(records(line).is_empty(), "{line}");
        }
        let error = r#"{"type":"session.error","data":{"message":"boom"},"id":"e1"}"#;
        assert_eq!(
            test_support::summary(&records(error)),
            [("e1".into(), RecordKind::Notice)]
        );
        let head = b"{\"type\":\"session.start\",\"data\":{\"context\":{\"cwd\":\"/w/p\"}}}\n{\"type\":\"session.title_changed\",\"data\":{\"title\":\"Named\"}}\n";
        assert_eq!(Copilot.session_cwd(head).as_deref(), Some("/w/p"));
        assert_eq!(Copilot.native_title(head).as_deref(), Some("Named"));
    }
}
