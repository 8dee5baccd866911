//! Pi (pi-coding-agent) sessions (`sessions/--<cwd>--/<ts>_<id>.jsonl`): a `session` header line,
//! then `{type, id, parentId, timestamp, …}` entries. Follows
//! `research/formats-pi-grok-opencode-gemini.md` §1 and §5.3.
//!
//! - Ids: `<entryId>#<i>` per content block (`<entryId>` for one-record entries); version-1 files
//!   have no entry ids, so `@<offset>` stands in (Pi rewrites such files with new ids when it next
//!   opens them; the cursor's prefix hash then resets).
//! - Tool call ids are provider ids and repeat within a session (`call_1` in two turns): they are
//!   the records' `call_id`, never their id.
//! - Images are placeholders; thinking blocks are assistant text flagged thinking.
//! - Not done: a notice where the tree branches (an entry whose `parentId` is not the previous
//!   entry's id). That needs the previous line, and parsing stays per line and stateless so that
//!   ids and records are the same whichever page a line is reached from.

use serde_json::Value;

use crate::SourceCtx;
use crate::harness::{Format, PatchEnvelope, ToolRole, ToolVocabulary};
use crate::lines::LineOutcome;
use crate::records::{Out, count, object_line, stamp_model, str_of};
use crate::session::{SessionFile, session_file};
use clankie_model::{DefaultHome, FileEntry, Layout, ListSpec, Storage};
use clankie_model::{TextKind, Usage};

/// Pi (pi-coding-agent).
pub(super) struct Pi;

/// Pi's tools: `bash`; `edit` (`path`, `oldText`/`newText`, or a list of them under `edits`);
/// `write`.
/// Its file tools: `read` (`offset`, `limit`), `grep`, `find`, `ls`.
static TOOLS: ToolVocabulary = ToolVocabulary {
    shell_tools: &["bash"],
    command_keys: &["command"],
    path_keys: &["path"],
    snippet_keys: &[("oldText", "newText")],
    replace_all_keys: &[],
    edit_list_keys: &["edits"],
    write_tool_marks: &["write"],
    content_keys: &["content"],
    patch_tools: &[],
    patch_keys: &[],
    patch_envelope: &PatchEnvelope::NONE,
    roles: &[
        ("read", ToolRole::Read),
        ("grep", ToolRole::Search),
        ("find", ToolRole::Glob),
        ("ls", ToolRole::List),
    ],
    first_line_keys: &["offset"],
    line_count_keys: &["limit"],
    pattern_keys: &["pattern"],
    dir_keys: &["path"],
    file_filter_keys: &["glob"],
    ..ToolVocabulary::NONE
};

static LAYOUT: Layout = Layout {
    name: "pi",
    default_home: DefaultHome {
        env_var: Some("PI_CODING_AGENT_DIR"),
        env_relative: "",
        home_relative: ".pi/agent",
    },
    // sessions/--<cwd>--/<ts>_<id>.jsonl (or flat with --session-dir as a root).
    list: ListSpec {
        subdirs: &["sessions"],
        suffixes: &[".jsonl"],
        max_depth: 1,
        top_files: &[],
    },
    db_env: None,
    storage: Storage::Files,
    id_globs: &["sessions/*{id}*.jsonl", "sessions/*/*{id}*.jsonl"],
};

/// The newest Pi this reader is tested against (docs/harnesses.md).
const TESTED: super::Tested = super::Tested {
    product: "Pi",
    version: "1.6.0",
};

impl Format for Pi {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    fn session(&self, entry: &FileEntry) -> Option<SessionFile> {
        classify(entry)
    }

    fn parse_line(&self, ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
        parse_line(ctx, offset, line)
    }

    /// The header's `cwd`.
    fn session_cwd(&self, head: &[u8]) -> Option<String> {
        crate::resume::first_in_lines(head, "/cwd")
    }

    /// Its header's `version` is the file format's, not the release's.
    fn tested(&self) -> Option<&'static super::Tested> {
        Some(&TESTED)
    }

    fn tool_vocabulary(&self) -> &'static ToolVocabulary {
        &TOOLS
    }

    /// Pi resumes by path, which is exact.
    fn resume_command(&self, _id: &str, path: &str) -> String {
        format!("pi --session {}", crate::resume::shell_quote(path))
    }
}

/// `sessions/--<cwd>--/<ts>_<id>.jsonl` (or flat under a `--session-dir` root): the id is what
/// follows the first `_` (the header's `id`), else the stem.
fn classify(entry: &FileEntry) -> Option<SessionFile> {
    let rel = std::str::from_utf8(&entry.rel).ok()?;
    let parts: Vec<&str> = rel.split('/').collect();
    let file = match parts.as_slice() {
        ["sessions", _, file] | ["sessions", file] => *file,
        _ => return None,
    };
    let stem = file.strip_suffix(".jsonl")?;
    let id = stem.split_once('_').map_or(stem, |(_, id)| id);
    session_file(entry, id, None)
}

/// Parses one complete line (without its `\n`) that starts at byte `offset`.
pub(super) fn parse_line(ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
    let map = match object_line(ctx, offset, line) {
        Ok(map) => map,
        Err(outcome) => return outcome,
    };
    let entry = Value::Object(map);
    let ts = entry
        .get("timestamp")
        .and_then(Value::as_str)
        .map(str::to_string);
    let base = match entry.get("id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => id.to_string(),
        _ => format!("@{offset}"),
    };
    let mut out = Out::new(ctx, ts);
    match str_of(&entry, "type") {
        "message" => match entry.get("message") {
            Some(message) => message_records(&mut out, &base, message),
            // A message entry without its message: a renamed field.
            None => out.unknown(),
        },
        "compaction" => {
            let tokens = entry
                .get("tokensBefore")
                .and_then(Value::as_u64)
                .map(|n| format!(" ({n} tokens before)"))
                .unwrap_or_default();
            let summary = str_of(&entry, "summary").trim();
            let text = if summary.is_empty() {
                format!("context compacted{tokens}")
            } else {
                format!("context compacted{tokens}; summary:\n{summary}")
            };
            out.text(base, TextKind::Notice, text);
        }
        "branch_summary" => out.text(
            base,
            TextKind::Notice,
            format!("branch summary: {}", str_of(&entry, "summary")),
        ),
        "custom_message" if entry.get("display").and_then(Value::as_bool) == Some(true) => {
            let text = blocks_text(entry.get("content").unwrap_or(&Value::Null));
            out.text(
                base,
                TextKind::Notice,
                format!("{}: {text}", str_of(&entry, "customType")),
            );
        }
        // Tokens spent outside an answer (a cache warm-up, …): a notice saying how many (a
        // notice carries no `usage` field, which counts model replies only).
        "usage" => {
            let mut text = format!("usage: {}", str_of(&entry, "kind"));
            if let Some(note) = Some(str_of(&entry, "note")).filter(|n| !n.is_empty()) {
                text.push_str(&format!(" ({note})"));
            }
            if let Some(model) = Some(str_of(&entry, "model")).filter(|m| !m.is_empty()) {
                text.push_str(&format!(", {model}"));
            }
            if let Some(usage) = entry.get("usage").and_then(usage_of) {
                let counts = [
                    ("input", usage.input),
                    ("output", usage.output),
                    ("cache read", usage.cache_read),
                    ("cache write", usage.cache_write),
                    ("reasoning", usage.reasoning),
                ];
                let counts: Vec<String> = counts
                    .iter()
                    .filter_map(|(what, n)| n.filter(|n| *n > 0).map(|n| format!("{n} {what}")))
                    .collect();
                if !counts.is_empty() {
                    text.push_str(&format!(": {}", counts.join(", ")));
                }
            }
            out.text(base, TextKind::Notice, text);
        }
        // What the model sees of an earlier entry changes from here on; that entry, as written,
        // stays as it is in the records.
        "context_edit" => {
            let target = str_of(&entry, "targetId");
            let text = match entry.get("replacement") {
                Some(Value::Object(_)) => {
                    format!("context edit: the model sees entry {target} with new content")
                }
                _ => format!("context edit: entry {target} left out of the model's context"),
            };
            out.text(base, TextKind::Notice, text);
        }
        ty if SKIPPED_TYPES.contains(&ty) => {}
        // A type newer than this reader, or an entry without its type.
        _ => out.unknown(),
    }
    out.done()
}

/// Entry types skipped on purpose: the header (and a duplicated one), model and thinking-level
/// changes, labels, names, extension state, and custom messages not displayed.
const SKIPPED_TYPES: &[&str] = &[
    "session",
    "model_change",
    "thinking_level_change",
    "session_info",
    "label",
    "custom",
    "custom_message",
];

fn message_records(out: &mut Out<'_>, base: &str, message: &Value) {
    let content = message.get("content").unwrap_or(&Value::Null);
    match str_of(message, "role") {
        "user" => match content {
            Value::String(text) => out.text(format!("{base}#0"), TextKind::User, text.clone()),
            Value::Array(blocks) => {
                for (i, block) in blocks.iter().enumerate() {
                    let id = format!("{base}#{i}");
                    match str_of(block, "type") {
                        "text" => out.text(id, TextKind::User, str_of(block, "text").to_string()),
                        "image" => out.text(id, TextKind::User, image(block)),
                        _ => out.unknown(),
                    }
                }
            }
            _ => {}
        },
        "assistant" => {
            let blocks: &[Value] = content.as_array().map(Vec::as_slice).unwrap_or_default();
            for (i, block) in blocks.iter().enumerate() {
                let id = format!("{base}#{i}");
                match str_of(block, "type") {
                    "text" => out.text(id, TextKind::Assistant, str_of(block, "text").to_string()),
                    "thinking" => {
                        let text = if block.get("redacted").and_then(Value::as_bool) == Some(true) {
                            "[redacted thinking]".to_string()
                        } else {
                            str_of(block, "thinking").to_string()
                        };
                        out.text(id, TextKind::Thinking, text);
                    }
                    "toolCall" => out.call(
                        id,
                        str_of(block, "id"),
                        str_of(block, "name"),
                        block
                            .get("arguments")
                            .cloned()
                            .unwrap_or_else(|| Value::Object(Default::default())),
                    ),
                    _ => out.unknown(),
                }
            }
            let usage = message.get("usage").and_then(usage_of);
            let model = Some(str_of(message, "model")).filter(|m| !m.is_empty());
            stamp_model(&mut out.records, model, usage);
            if matches!(str_of(message, "stopReason"), "error" | "aborted") {
                let reason = match str_of(message, "errorMessage") {
                    "" => str_of(message, "stopReason").to_string(),
                    m => m.to_string(),
                };
                out.text(
                    format!("{base}#{}", blocks.len()),
                    TextKind::Notice,
                    format!("assistant stopped: {reason}"),
                );
            }
        }
        "toolResult" => {
            let is_error = message.get("isError").and_then(Value::as_bool) == Some(true);
            out.result(
                base.to_string(),
                str_of(message, "toolCallId"),
                blocks_text(content),
                is_error,
            );
        }
        "bashExecution" => {
            // A command the user ran with `!`: a call and its result in one entry.
            let command = str_of(message, "command");
            out.user_call(
                format!("{base}#call"),
                base,
                "bash",
                serde_json::json!({ "command": command }),
            );
            let failed = message.get("cancelled").and_then(Value::as_bool) == Some(true)
                || message
                    .get("exitCode")
                    .and_then(Value::as_i64)
                    .is_some_and(|c| c != 0);
            out.result(
                format!("{base}#result"),
                base,
                str_of(message, "output").to_string(),
                failed,
            );
        }
        "custom" | "hookMessage"
            if message.get("display").and_then(Value::as_bool) != Some(false) =>
        {
            out.text(
                base.to_string(),
                TextKind::Notice,
                format!(
                    "{}: {}",
                    str_of(message, "customType"),
                    blocks_text(content)
                ),
            );
        }
        // Prompt and tool snapshots (`system`: the prompt's sections and the tools added or
        // removed), and custom messages not displayed.
        "system" | "custom" | "hookMessage" => {}
        // A role newer than this reader, or a message without its role.
        _ => out.unknown(),
    }
}

/// Pi's `usage` object (`input`, `output`, `cacheRead`, `cacheWrite`, `reasoning`; its `cost`
/// and `totalTokens` are not kept).
fn usage_of(u: &Value) -> Option<Box<Usage>> {
    Usage {
        input: count(u, "input"),
        output: count(u, "output"),
        cache_read: count(u, "cacheRead"),
        cache_write: count(u, "cacheWrite"),
        reasoning: count(u, "reasoning"),
    }
    .nonempty()
}

fn image(block: &Value) -> String {
    let bytes = str_of(block, "data").len() / 4 * 3;
    match str_of(block, "mimeType") {
        "" => format!("[image, {bytes} bytes]"),
        mime => format!("[image {mime}, {bytes} bytes]"),
    }
}

/// Text of a string or of text/image blocks.
fn blocks_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match str_of(b, "type") {
                "image" => image(b),
                _ => str_of(b, "text").to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use clankie_model::{Record, RecordBody, RecordKind};

    fn records(line: &str) -> Vec<Record> {
        test_support::records(crate::test_support::harness("pi"), 40, line)
    }

    fn summary(line: &str) -> Vec<(String, RecordKind)> {
        test_support::summary(&records(line))
    }

    /// Pi 1.6's entries: a `system` message is skipped, a `usage` entry is a notice carrying
    /// its tokens, a `context_edit` a notice naming the entry it edits (which stays as written),
    /// and a tool result's `durationMs` changes nothing.
    #[test]
    fn pi_1_6_entries_read_as_what_they_are() {
        let system = r#"{"type":"message","id":"s1","parentId":null,"timestamp":"t","message":{"role":"system","content":"","sections":{"cwd":"/p"},"toolsAdded":[{"name":"read"}],"timestamp":1}}"#;
        assert!(records(system).is_empty());
        let usage = r#"{"type":"usage","id":"u1","parentId":"s1","timestamp":"t","kind":"cache_warm","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":500,"cacheWrite":0,"totalTokens":500}}"#;
        let got = records(usage);
        assert_eq!(summary(usage), [("u1".to_string(), RecordKind::Notice)]);
        match &got[0].body {
            RecordBody::Text { text, .. } => {
                assert_eq!(&**text, "usage: cache_warm, m: 500 cache read")
            }
            other => panic!("{other:?}"),
        }
        let omitted = r#"{"type":"context_edit","id":"e1","parentId":"u1","timestamp":"t","targetId":"r1","replacement":null}"#;
        let replaced = r#"{"type":"context_edit","id":"e2","parentId":"e1","timestamp":"t","targetId":"r1","replacement":{"content":"short"}}"#;
        for (line, says) in [(omitted, "left out"), (replaced, "new content")] {
            match &records(line)[0].body {
                RecordBody::Text { text, .. } => {
                    assert!(text.contains("r1") && text.contains(says), "{}", &**text)
                }
                other => panic!("{other:?}"),
            }
        }
        let level = r#"{"type":"thinking_level_change","id":"l1","parentId":"e2","timestamp":"t","thinkingLevel":"high"}"#;
        assert!(records(level).is_empty());
        let result = r#"{"type":"message","id":"r1","parentId":"a1","timestamp":"t","message":{"role":"toolResult","toolCallId":"call_1","toolName":"bash","content":[{"type":"text","text":"x"}],"isError":false,"durationMs":12,"timestamp":2}}"#;
        assert_eq!(
            summary(result),
            [("r1".to_string(), RecordKind::ToolResult)]
        );
    }

    #[test]
    fn an_assistant_message_carries_its_model_and_usage() {
        let line = r#"{"id":"c9","message":{"content":[{"arguments":{"command":"ls"},"id":"call_1","name":"bash","type":"toolCall"},{"text":"ok","type":"text"}],"model":"fake-model","role":"assistant","usage":{"cacheRead":100,"cacheWrite":0,"cost":{"total":0.1},"input":50,"output":6,"reasoning":0,"totalTokens":156}},"timestamp":"t","type":"message"}"#;
        let got = records(line);
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|r| r.model.as_deref() == Some("fake-model")));
        let usage = clankie_model::Usage {
            input: Some(50),
            output: Some(6),
            cache_read: Some(100),
            cache_write: Some(0),
            reasoning: Some(0),
        };
        assert_eq!(got[0].usage.as_deref(), Some(&usage));
        assert_eq!(got[1].usage, None);
    }

    #[test]
    fn header_and_settings_are_metadata() {
        for line in [
            r#"{"type":"session","version":3,"id":"019e","timestamp":"t","cwd":"/w"}"#,
            r#"{"type":"model_change","id":"a","parentId":null,"provider":"p","modelId":"m"}"#,
            r#"{"type":"message","id":"b","parentId":"a","message":{"role":"system","content":""}}"#,
            r#"{"type":"label","id":"c","parentId":"b","targetId":"a","label":"x"}"#,
        ] {
            assert!(records(line).is_empty(), "{line}");
        }
    }

    #[test]
    fn turn_with_tools_images_and_thinking() {
        let user = r#"{"type":"message","id":"u1","parentId":"a","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","data":"AAAA","mimeType":"image/png"}]}}"#;
        let got = records(user);
        assert_eq!(got[0].ts.as_deref(), Some("2026-01-01T00:00:00Z"));
        assert_eq!(
            got[1].body,
            RecordBody::Text {
                kind: TextKind::User,
                text: "[image image/png, 3 bytes]".into()
            }
        );
        let assistant = r#"{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"run"},{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"ls"}}],"stopReason":"toolUse"}}"#;
        assert_eq!(
            summary(assistant),
            [
                ("a1#0".into(), RecordKind::Assistant),
                ("a1#1".into(), RecordKind::Assistant),
                ("a1#2".into(), RecordKind::ToolCall)
            ]
        );
        let result = r#"{"type":"message","id":"r1","parentId":"a1","message":{"role":"toolResult","toolCallId":"call_1","toolName":"bash","content":[{"type":"text","text":"x"}],"isError":true}}"#;
        assert_eq!(
            records(result)[0].body,
            RecordBody::ToolResult {
                call_id: "call_1".into(),
                output: "x".into(),
                is_error: true
            }
        );
    }

    #[test]
    fn v1_entries_use_offsets_and_aborts_are_notices() {
        let aborted = r#"{"type":"message","timestamp":"t","message":{"role":"assistant","content":[],"stopReason":"aborted","errorMessage":"Request was aborted"}}"#;
        assert_eq!(summary(aborted), [("@40#0".into(), RecordKind::Notice)]);
        let compaction = r#"{"type":"compaction","id":"c1","parentId":"x","summary":"did things","tokensBefore":19}"#;
        assert_eq!(summary(compaction), [("c1".into(), RecordKind::Notice)]);
        let bash = r#"{"type":"message","id":"b1","parentId":"x","message":{"role":"bashExecution","command":"ls","output":"a","exitCode":1,"cancelled":false}}"#;
        assert_eq!(
            summary(bash),
            [
                ("b1#call".into(), RecordKind::ToolCall),
                ("b1#result".into(), RecordKind::ToolResult)
            ]
        );
        assert!(
            matches!(
                &records(bash)[0].body,
                RecordBody::ToolCall { by_user: true, .. }
            ),
            "the user ran it"
        );
    }
}
