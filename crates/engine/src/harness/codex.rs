//! Codex CLI rollouts (`sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`, `archived_sessions/`):
//! `{timestamp, type, payload}` lines. Follows `research/formats-claude-codex.md` §2 and §3.2:
//!
//! - `response_item` is the source of records (every message, reasoning and tool item); the
//!   `event_msg` copies of the same conversation are skipped, and `event_msg` gives only what it
//!   alone carries (aborts, errors, rollbacks, review mode) as notices. Compaction is one notice,
//!   from the `compacted` line (its `event_msg/context_compacted` twin is skipped).
//! - Injected context (`<environment_context>`, AGENTS.md, `<user_instructions>`, …, and the
//!   whole `developer`/`system` roles) is not a prompt and gives nothing.
//! - Ids: `call:<call_id>@<offset>` for a tool call and `result:<call_id>@<offset>` for its
//!   output: a `call_id` can come back later in the same rollout (a resumed session whose model
//!   reuses it), and each such call and result is its own record, paired by `call_id` in order.
//!   Other records `<payload.id>#<i>` or `@<offset>#<i>`, notices `@<offset>`. A line's byte
//!   offset is stable because a rollout only grows.
//! - Forks and subagents: the first line's `session_meta` names the parent; it becomes a notice
//!   saying the records that follow begin with a copy of the parent's history. Parsing is per
//!   line and stateless (ids must not depend on where a page starts), and a copied line carries
//!   nothing that tells it from the child's own (Codex re-stamps copies with new timestamps), so
//!   the copied records themselves are not marked.
//! - The older pre-envelope format (§2.6): a first line `{id, timestamp, instructions}` and
//!   `{"record_type": …}` lines are metadata; bare response items are read like `payload`s.

use serde_json::Value;

use crate::SourceCtx;
use crate::harness::{Format, PatchEnvelope, Source, ToolRole, ToolVocabulary};
use crate::lines::LineOutcome;
use crate::records::{Out, image_placeholder, json_arguments, object_line, str_of};
use crate::session::{SessionFile, session_file};
use clankie_model::TextKind;
use clankie_model::{DefaultHome, FileEntry, Layout, ListSpec, Storage};

/// Codex CLI.
pub(super) struct Codex;

/// Codex's tools: its shells (`shell` and `local_shell` with an argv, `shell_command`,
/// `exec_command` with `cmd`) and the `apply_patch` envelope, the input itself (a custom tool)
/// or under `input` (a function call) or `patch`.
/// Its file tools: `read_file` (`file_path`, `offset`, `limit`), `grep_files`, `list_dir`,
/// `web_search`.
static TOOLS: ToolVocabulary = ToolVocabulary {
    shell_tools: &["shell", "exec_command", "local_shell", "shell_command"],
    command_keys: &["command", "cmd"],
    path_keys: &[],
    snippet_keys: &[],
    replace_all_keys: &[],
    edit_list_keys: &[],
    write_tool_marks: &[],
    content_keys: &[],
    patch_tools: &["apply_patch"],
    patch_keys: &["input", "patch"],
    patch_envelope: &PatchEnvelope::APPLY_PATCH,
    roles: &[
        ("read_file", ToolRole::Read),
        ("grep_files", ToolRole::Search),
        ("list_dir", ToolRole::List),
        ("web_search", ToolRole::WebSearch),
    ],
    read_path_keys: &["file_path"],
    first_line_keys: &["offset"],
    line_count_keys: &["limit"],
    pattern_keys: &["pattern", "query"],
    dir_keys: &["path", "dir_path"],
    file_filter_keys: &["include"],
    ..ToolVocabulary::NONE
};

static LAYOUT: Layout = Layout {
    name: "codex",
    default_home: DefaultHome {
        env_var: Some("CODEX_HOME"),
        env_relative: "",
        home_relative: ".codex",
    },
    // sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl, early flat sessions/rollout-….jsonl,
    // archived_sessions/rollout-….jsonl; `.jsonl.zst` once Codex compresses them (after 7 days;
    // decompressed on the reading side).
    list: ListSpec {
        subdirs: &["sessions", "archived_sessions"],
        suffixes: &[".jsonl", ".jsonl.zst"],
        max_depth: 3,
        top_files: &[],
    },
    db_env: None,
    storage: Storage::Files,
    id_globs: &[
        "sessions/*{id}*.jsonl",
        "sessions/*/*{id}*.jsonl",
        "sessions/*/*/*{id}*.jsonl",
        "sessions/*/*/*/*{id}*.jsonl",
        "archived_sessions/*{id}*.jsonl",
        "sessions/*{id}*.jsonl.zst",
        "sessions/*/*{id}*.jsonl.zst",
        "sessions/*/*/*{id}*.jsonl.zst",
        "sessions/*/*/*/*{id}*.jsonl.zst",
        "archived_sessions/*{id}*.jsonl.zst",
    ],
};

impl Format for Codex {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    fn session(&self, entry: &FileEntry) -> Option<SessionFile> {
        classify(entry)
    }

    fn source(&self, entry: &FileEntry) -> Source {
        if entry.rel.ends_with(b".zst") {
            Source::ZstdLines
        } else {
            Source::Lines
        }
    }

    fn parse_line(&self, ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
        parse_line(ctx, offset, line)
    }

    /// `session_meta.payload.cwd`.
    fn session_cwd(&self, head: &[u8]) -> Option<String> {
        crate::resume::complete_lines(head)
            .filter(|v| v.get("type").and_then(Value::as_str) == Some("session_meta"))
            .find_map(|v| {
                v.pointer("/payload/cwd")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
    }

    fn tested(&self) -> Option<&'static super::Tested> {
        Some(&TESTED)
    }

    /// `session_meta.payload.cli_version`: the Codex release that wrote the rollout.
    fn writer_version(&self, head: &[u8]) -> Option<String> {
        super::version_field(head, "cli_version")
    }

    fn tool_vocabulary(&self) -> &'static ToolVocabulary {
        &TOOLS
    }

    fn resume_command(&self, id: &str, _path: &str) -> String {
        format!("codex resume {}", crate::resume::shell_quote(id))
    }
}

/// `sessions/[YYYY/MM/DD/]rollout-<local ts>-<thread uuid>.jsonl` and
/// `archived_sessions/<name>.jsonl`: the id is the trailing UUID (what `codex resume` takes),
/// else the file stem.
fn classify(entry: &FileEntry) -> Option<SessionFile> {
    let rel = std::str::from_utf8(&entry.rel).ok()?;
    let parts: Vec<&str> = rel.split('/').collect();
    let file = match parts.as_slice() {
        ["sessions", .., file] | ["archived_sessions", file] => *file,
        _ => return None,
    };
    let stem = file
        .strip_suffix(".jsonl")
        .or_else(|| file.strip_suffix(".jsonl.zst"))?;
    let id = trailing_uuid(stem).unwrap_or(stem);
    session_file(entry, id, None)
}

/// The last 36 characters of `name` when they are a UUID preceded by `-`.
fn trailing_uuid(name: &str) -> Option<&str> {
    let start = name.len().checked_sub(36)?;
    let uuid = name.get(start..)?;
    let shape = uuid.bytes().enumerate().all(|(i, b)| match i {
        8 | 13 | 18 | 23 => b == b'-',
        _ => b.is_ascii_hexdigit(),
    });
    (shape && name[..start].ends_with('-')).then_some(uuid)
}

/// User-role texts that Codex injects for the model; they are not prompts.
const INJECTED_PREFIXES: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "<turn_aborted>",
    "<subagent_notification>",
    "<context_update>",
    "<user_shell_command>",
    "<skill>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
];

/// Response item types the pre-envelope format writes bare.
const ITEM_TYPES: &[&str] = &[
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
    "tool_search_call",
    "tool_search_output",
    "image_generation_call",
    "agent_message",
];

/// Parses one complete line (without its `\n`) that starts at byte `offset`.
pub(super) fn parse_line(ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
    let map = match object_line(ctx, offset, line) {
        Ok(map) => map,
        Err(outcome) => return outcome,
    };
    let ts = map
        .get("timestamp")
        .and_then(Value::as_str)
        .map(str::to_string);
    let null = Value::Null;
    let payload = map.get("payload").unwrap_or(&null);
    let mut out = Out::new(ctx, ts);
    match map.get("type").and_then(Value::as_str) {
        Some("response_item") => item(&mut out, offset, payload),
        Some("event_msg") => event(&mut out, offset, payload),
        Some("compacted") => {
            let summary = str_of(payload, "message").trim();
            let text = if summary.is_empty() {
                "context compacted".to_string()
            } else {
                format!("context compacted; summary:\n{summary}")
            };
            out.text(format!("@{offset}"), TextKind::Notice, text);
        }
        Some("session_meta") if offset == 0 => fork_notice(&mut out, payload),
        Some("inter_agent_communication") => {
            let content = content_text(payload.get("content").unwrap_or(&null));
            out.text(
                format!("@{offset}"),
                TextKind::Notice,
                format!(
                    "{} → {}: {content}",
                    str_of(payload, "author"),
                    str_of(payload, "recipient")
                ),
            );
        }
        // Pre-envelope format: a bare response item with no timestamp.
        Some(ty) if !map.contains_key("payload") && ITEM_TYPES.contains(&ty) => {
            item(&mut out, offset, &Value::Object(map.clone()))
        }
        Some(ty) if SKIPPED_TYPES.contains(&ty) => {}
        // The legacy `{id, timestamp, instructions}` header and `record_type` lines.
        None if !map.contains_key("payload") => {}
        // A type newer than this reader, or an envelope without its type.
        _ => out.unknown(),
    }
    out.done()
}

/// The newest Codex this reader is tested against (docs/harnesses.md).
const TESTED: super::Tested = super::Tested {
    product: "Codex",
    version: "0.171.0",
};

/// Line types skipped on purpose: metadata (`session_meta` after the first line too).
const SKIPPED_TYPES: &[&str] = &[
    "session_meta",
    "turn_context",
    "world_state",
    "token_usage_record",
    "inter_agent_communication_metadata",
];

/// Response item types skipped on purpose: bookkeeping, not conversation.
const SKIPPED_ITEMS: &[&str] = &["compaction", "ghost_snapshot", "additional_tools"];

/// Event types skipped on purpose: each duplicates a response item, or is usage, turn or
/// interface bookkeeping. The few that are records are read in `event`.
const SKIPPED_EVENTS: &[&str] = &[
    "agent_message",
    "agent_message_delta",
    "agent_message_content_delta",
    "agent_reasoning",
    "agent_reasoning_delta",
    "agent_reasoning_raw_content",
    "agent_reasoning_raw_content_delta",
    "agent_reasoning_section_break",
    "reasoning_content_delta",
    "reasoning_raw_content_delta",
    "user_message",
    "token_count",
    "task_started",
    "task_complete",
    "turn_started",
    "turn_complete",
    "context_compacted",
    "item_started",
    "item_completed",
    "exec_command_begin",
    "exec_command_output_delta",
    "exec_command_end",
    "exec_approval_request",
    "apply_patch_approval_request",
    "request_user_input",
    "elicitation_request",
    "patch_apply_begin",
    "patch_apply_end",
    "mcp_tool_call_begin",
    "mcp_tool_call_end",
    "mcp_startup_update",
    "mcp_startup_complete",
    "mcp_list_tools_response",
    "web_search_begin",
    "web_search_end",
    "image_generation_begin",
    "image_generation_end",
    "view_image_tool_call",
    "dynamic_tool_call_request",
    "dynamic_tool_call_response",
    "collab_agent_spawn_begin",
    "collab_agent_spawn_end",
    "collab_agent_interaction_begin",
    "collab_agent_interaction_end",
    "collab_waiting_begin",
    "collab_waiting_end",
    "collab_close_begin",
    "collab_close_end",
    "guardian_assessment",
    "sub_agent_activity",
    "session_configured",
    "thread_name_updated",
    "thread_goal_updated",
    "thread_settings_applied",
    "turn_diff",
    "plan_update",
    "background_event",
    "stream_error",
    "warning",
    "shutdown_complete",
    "undo_started",
    "undo_completed",
    "get_history_entry_response",
    "list_custom_prompts_response",
    "list_skills_response",
    "deprecation_notice",
    "raw_response_item",
];

/// The fork or subagent notice on the first line's `session_meta`.
fn fork_notice(out: &mut Out<'_>, meta: &Value) {
    let parent = meta
        .get("forked_from_id")
        .and_then(Value::as_str)
        .map(|p| ("forked from", p))
        .or_else(|| {
            meta.pointer("/source/subagent/thread_spawn/parent_thread_id")
                .and_then(Value::as_str)
                .map(|p| ("subagent of", p))
        });
    if let Some((how, parent)) = parent {
        out.text(
            "@0".to_string(),
            TextKind::Notice,
            format!(
                "{how} session {parent}: the records that follow begin with a copy of its history"
            ),
        );
    }
}

/// The base of a non-tool record's id: the item's own id, else the line's offset.
fn base_id(payload: &Value, offset: u64) -> String {
    // Only an id-shaped value (`msg_…`, `rs_…`): anything else could collide or confuse.
    match payload.get("id").and_then(Value::as_str) {
        Some(id)
            if !id.is_empty()
                && id.len() <= 200
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_')) =>
        {
            id.to_string()
        }
        _ => format!("@{offset}"),
    }
}

fn item(out: &mut Out<'_>, offset: u64, p: &Value) {
    let base = base_id(p, offset);
    let call_id = str_of(p, "call_id");
    let call_record_id = || {
        if call_id.is_empty() {
            base.clone()
        } else {
            format!("call:{call_id}@{offset}")
        }
    };
    match str_of(p, "type") {
        "message" => message(out, &base, p),
        "reasoning" => {
            let mut text = texts(p.get("summary"));
            if text.trim().is_empty() {
                text = texts(p.get("content"));
            }
            out.text(format!("{base}#0"), TextKind::Thinking, text);
        }
        "agent_message" => {
            let text = content_text(p.get("content").unwrap_or(&Value::Null));
            out.text(format!("{base}#0"), TextKind::Assistant, text);
        }
        ty @ ("function_call" | "custom_tool_call" | "tool_search_call") => {
            let name = match (str_of(p, "namespace"), str_of(p, "name")) {
                (_, "") if ty == "tool_search_call" => "tool_search".to_string(),
                ("", name) => name.to_string(),
                (ns, name) => format!("{ns}.{name}"),
            };
            let input = match ty {
                "custom_tool_call" => p.get("input").cloned().unwrap_or(Value::Null),
                _ => json_arguments(p.get("arguments")),
            };
            out.call(call_record_id(), call_id, &name, input);
        }
        "local_shell_call" => {
            let input = p.get("action").cloned().unwrap_or(Value::Null);
            out.call(call_record_id(), call_id, "local_shell", input);
        }
        "web_search_call" => {
            // No call_id and no output item: the call stands alone.
            let input = p
                .get("action")
                .cloned()
                .unwrap_or_else(|| Value::Object(Default::default()));
            let own = str_of(p, "id");
            out.call(base.clone(), own, "web_search", input);
        }
        "image_generation_call" => {
            let input = serde_json::json!({ "revised_prompt": p.get("revised_prompt") });
            out.call(base.clone(), str_of(p, "id"), "image_generation", input);
        }
        "function_call_output" | "custom_tool_call_output" | "tool_search_output" => {
            let raw = p.get("output").or_else(|| p.get("tools"));
            let (output, is_error) = tool_output(raw.unwrap_or(&Value::Null));
            let id = if call_id.is_empty() {
                base.clone()
            } else {
                format!("result:{call_id}@{offset}")
            };
            out.result(id, call_id, output, is_error);
        }
        ty if SKIPPED_ITEMS.contains(&ty) => {}
        // An item type newer than this reader, or an item without its type.
        _ => out.unknown(),
    }
}

fn message(out: &mut Out<'_>, base: &str, p: &Value) {
    let kind = match str_of(p, "role") {
        "user" => TextKind::User,
        "assistant" => TextKind::Assistant,
        // developer and system messages are instructions, not conversation.
        _ => return,
    };
    let items: Vec<Value> = match p.get("content") {
        Some(Value::Array(items)) => items.clone(),
        Some(Value::String(s)) => vec![serde_json::json!({"type": "input_text", "text": s})],
        // A message without its content: a renamed field.
        _ => return out.unknown(),
    };
    for (i, item) in items.iter().enumerate() {
        let id = format!("{base}#{i}");
        match str_of(item, "type") {
            "input_text" | "output_text" | "text" => {
                let text = str_of(item, "text");
                if kind == TextKind::User && is_injected(text) {
                    continue;
                }
                out.text(id, kind, text.to_string());
            }
            "input_image" => out.text(
                id,
                TextKind::User,
                image_placeholder(str_of(item, "image_url")),
            ),
            "refusal" => out.text(
                id,
                TextKind::Notice,
                format!("refusal: {}", str_of(item, "refusal")),
            ),
            _ => out.unknown(),
        }
    }
}

/// Whether a user-role text is context Codex injected rather than something the user typed.
fn is_injected(text: &str) -> bool {
    let text = text.trim_start();
    INJECTED_PREFIXES.iter().any(|p| text.starts_with(p))
}

fn event(out: &mut Out<'_>, offset: u64, p: &Value) {
    let id = format!("@{offset}");
    let text = match str_of(p, "type") {
        "turn_aborted" => match str_of(p, "reason") {
            "" => "turn aborted".to_string(),
            reason => format!("turn aborted ({reason})"),
        },
        "error" => format!("error: {}", str_of(p, "message")),
        "thread_rolled_back" => match p.get("num_turns").and_then(Value::as_u64) {
            Some(n) => format!("thread rolled back by {n} turns"),
            None => "thread rolled back".to_string(),
        },
        "entered_review_mode" => "entered review mode".to_string(),
        "exited_review_mode" => "exited review mode".to_string(),
        ty if SKIPPED_EVENTS.contains(&ty) => return,
        _ => {
            out.unknown();
            return;
        }
    };
    out.text(id, TextKind::Notice, text);
}

/// The text items of `[{type, text}]`, joined by blank lines.
fn texts(value: Option<&Value>) -> String {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| str_of(i, "text"))
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => String::new(),
    }
}

/// Text of message-like content: a string, or items of text and images.
fn content_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|item| match str_of(item, "type") {
                "input_image" => image_placeholder(str_of(item, "image_url")),
                _ if item.is_string() => item.as_str().unwrap_or_default().to_string(),
                // Encrypted and other opaque items are not shown.
                _ => str_of(item, "text").to_string(),
            })
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A tool output (a string, items, or an object) as text, and whether it says it failed. The
/// older shell tool wrote `{"output": …, "metadata": {"exit_code": …}}` as a JSON string.
fn tool_output(value: &Value) -> (String, bool) {
    let decoded;
    let value = match value {
        Value::String(s) if s.starts_with('{') => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) if v.get("output").is_some() => {
                decoded = v;
                &decoded
            }
            _ => return exec_output(s),
        },
        Value::String(s) => return exec_output(s),
        other => other,
    };
    match value {
        Value::Object(map) => {
            let failed = map.get("success").and_then(Value::as_bool) == Some(false)
                || value
                    .pointer("/metadata/exit_code")
                    .and_then(Value::as_i64)
                    .is_some_and(|c| c != 0);
            let text = map
                .get("output")
                .or_else(|| map.get("content"))
                .map(content_text)
                .unwrap_or_else(|| value.to_string());
            (text, failed)
        }
        // Items: the wrapper, when there is one, is in their text.
        other => exec_output(&content_text(other)),
    }
}

/// A command's output as Codex wraps it for the model, and whether the command failed: the
/// unified exec tool writes `Chunk ID: …`, `Wall time: …`, `Process exited with code N` (or
/// `Process running with session ID N` while it runs on), `Original token count: …`, then
/// `Output:` and the output; the older shell tool `Exit code: N`, `Wall time: …`, `Output:`.
/// The text is the output alone, and a non-zero exit code is an error. Text that is not such a
/// wrapper (every line before `Output:` one of those headers) is kept whole and not an error.
///
/// The `exec_command_end` event carries the same exit code, but on a line of its own before the
/// output item: parsing is per line (a record's fields cannot depend on where a page starts),
/// so the wrapper, on the output item itself, is what is read.
fn exec_output(text: &str) -> (String, bool) {
    const HEADERS: [&str; 7] = [
        "Command: ",
        "Chunk ID: ",
        "Wall time: ",
        "Wall time ",
        "Process running with session ID ",
        "Original token count: ",
        "Total output lines: ",
    ];
    let mut exit_code = None;
    let mut rest = text;
    let mut headers = 0;
    loop {
        let (line, after) = match rest.split_once('\n') {
            Some(split) => split,
            None if rest == "Output:" => (rest, ""),
            None => return (text.to_string(), false),
        };
        if line == "Output:" {
            if headers == 0 {
                return (text.to_string(), false);
            }
            return (after.to_string(), exit_code.is_some_and(|code| code != 0));
        }
        let code = line
            .strip_prefix("Process exited with code ")
            .or_else(|| line.strip_prefix("Exit code: "));
        match code {
            Some(code) => match code.trim().parse::<i64>() {
                Ok(code) => exit_code = Some(code),
                Err(_) => return (text.to_string(), false),
            },
            None if HEADERS.iter().any(|h| line.starts_with(h)) => {}
            None => return (text.to_string(), false),
        }
        headers += 1;
        rest = after;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clankie_model::{Record, RecordBody, RecordKind};

    fn ctx() -> SourceCtx {
        SourceCtx {
            host: "local".into(),
            harness: crate::test_support::harness("codex"),
            session: "s".into(),
            agent: None,
        }
    }

    fn at(offset: u64, line: &str) -> Vec<Record> {
        match parse_line(&ctx(), offset, line.as_bytes()) {
            LineOutcome::Records(r) | LineOutcome::Unread(r, _) => r,
            LineOutcome::Malformed(e) => panic!("malformed: {e}"),
        }
    }

    fn records(line: &str) -> Vec<Record> {
        at(100, line)
    }

    fn summary(records: &[Record]) -> Vec<(String, RecordKind)> {
        records.iter().map(|r| (r.id.clone(), r.kind())).collect()
    }

    #[test]
    fn messages_skip_injected_context_and_developer() {
        let injected = r##"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>x</INSTRUCTIONS>"},{"type":"input_text","text":"<environment_context>\n<cwd>/w</cwd></environment_context>"}]}}"##;
        assert!(records(injected).is_empty());
        let dev = r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions>"}]}}"#;
        assert!(records(dev).is_empty());
        let prompt = r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}}"#;
        let got = records(prompt);
        assert_eq!(
            summary(&got),
            [
                ("@100#0".into(), RecordKind::User),
                ("@100#1".into(), RecordKind::User)
            ]
        );
        assert_eq!(got[0].ts.as_deref(), Some("t"));
        let answer = r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"assistant","id":"msg_1","phase":"final_answer","content":[{"type":"output_text","text":"done"}]}}"#;
        assert_eq!(
            summary(&records(answer)),
            [("msg_1#0".into(), RecordKind::Assistant)]
        );
        // The event_msg twins are skipped.
        let twin = r#"{"timestamp":"t","type":"event_msg","payload":{"type":"user_message","message":"fix it"}}"#;
        assert!(records(twin).is_empty());
    }

    /// The result record of a `function_call_output` whose output is `output` (a JSON value).
    fn result_of(output: serde_json::Value) -> RecordBody {
        let line = serde_json::json!({
            "timestamp": "2026-12-01T10:00:01.000Z",
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "call_7", "output": output},
        });
        records(&line.to_string()).remove(0).body
    }

    fn result(output: &str, is_error: bool) -> RecordBody {
        RecordBody::ToolResult {
            call_id: "call_7".into(),
            output: output.into(),
            is_error,
        }
    }

    #[test]
    fn a_command_result_is_its_output_and_fails_on_a_nonzero_exit() {
        // The unified exec tool's wrapper, as 0.17x writes it.
        let ok = "Chunk ID: 3f2a1b\nWall time: 0.0512 seconds\nProcess exited with code 0\nOriginal token count: 3\nOutput:\nMARKER-42\n";
        assert_eq!(result_of(ok.into()), result("MARKER-42\n", false));
        let failed = "Chunk ID: 9c0d11\nWall time: 0.0100 seconds\nProcess exited with code 2\nOriginal token count: 9\nOutput:\nls: cannot access 'nope': No such file or directory\n";
        assert_eq!(
            result_of(failed.into()),
            result(
                "ls: cannot access 'nope': No such file or directory\n",
                true
            )
        );
        // Still running: no exit code, no error.
        let running = "Chunk ID: 1\nWall time: 10.0020 seconds\nProcess running with session ID 73\nOriginal token count: 1\nOutput:\nstarted";
        assert_eq!(result_of(running.into()), result("started", false));
        // Empty output.
        let empty = "Chunk ID: 2\nWall time: 0.0001 seconds\nProcess exited with code 1\nOriginal token count: 0\nOutput:\n";
        assert_eq!(result_of(empty.into()), result("", true));
        // The older shell tool's wrapper.
        let older = "Exit code: 127\nWall time: 0.4 seconds\nOutput:\nsh: nope: not found\n";
        assert_eq!(
            result_of(older.into()),
            result("sh: nope: not found\n", true)
        );
        // Items holding the wrapper.
        let items = serde_json::json!([{"type": "input_text", "text": ok}]);
        assert_eq!(result_of(items), result("MARKER-42\n", false));
        // Text that only looks like one is kept whole and is no error.
        for whole in [
            "Output:\nx",
            "Process exited with code 1",
            "Chunk ID: 1\nsomething else\nOutput:\nx",
            "Exit code: one\nOutput:\nx",
            "plain output\n",
        ] {
            assert_eq!(result_of(whole.into()), result(whole, false), "{whole:?}");
        }
    }

    #[test]
    fn tools_pair_by_call_id() {
        let call = r#"{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"call_1"}}"#;
        let got = records(call);
        assert_eq!(got[0].id, "call:call_1@100");
        assert_eq!(
            got[0].body,
            RecordBody::ToolCall {
                call_id: "call_1".into(),
                name: "exec_command".into(),
                input: serde_json::json!({"cmd":"ls"}),
                by_user: false,
            }
        );
        let result = r#"{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"boom\",\"metadata\":{\"exit_code\":2}}"}}"#;
        assert_eq!(
            records(result)[0].body,
            RecordBody::ToolResult {
                call_id: "call_1".into(),
                output: "boom".into(),
                is_error: true
            }
        );
        assert_eq!(records(result)[0].id, "result:call_1@100");
        let patch = r#"{"timestamp":"t","type":"response_item","payload":{"type":"custom_tool_call","status":"completed","call_id":"c2","name":"apply_patch","input":"*** Begin Patch"}}"#;
        assert_eq!(records(patch)[0].id, "call:c2@100");
        let items = r#"{"timestamp":"t","type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"c2","output":[{"type":"input_text","text":"ok"}]}}"#;
        assert!(
            matches!(&records(items)[0].body, RecordBody::ToolResult { output, .. } if output == "ok")
        );
        let search = r#"{"timestamp":"t","type":"response_item","payload":{"type":"web_search_call","status":"completed"}}"#;
        assert_eq!(
            summary(&records(search)),
            [("@100".into(), RecordKind::ToolCall)]
        );
    }

    #[test]
    fn a_call_id_used_again_later_gives_records_of_its_own() {
        // A resumed session whose model reuses a call_id: the pair is appended again.
        let call = r#"{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{}","call_id":"call_1"}}"#;
        let result = r#"{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"x"}}"#;
        let ids: Vec<String> = [(0, call), (200, result), (400, call), (600, result)]
            .into_iter()
            .flat_map(|(offset, line)| at(offset, line))
            .map(|r| r.id)
            .collect();
        assert_eq!(
            ids,
            [
                "call:call_1@0",
                "result:call_1@200",
                "call:call_1@400",
                "result:call_1@600"
            ]
        );
    }

    #[test]
    fn events_only_for_what_they_alone_carry() {
        let n = |line: &str| summary(&records(line));
        for (line, text) in [
            (
                r#"{"timestamp":"t","type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted"}}"#,
                "turn aborted (interrupted)",
            ),
            (
                r#"{"timestamp":"t","type":"event_msg","payload":{"type":"error","message":"stream disconnected"}}"#,
                "error: stream disconnected",
            ),
            (
                r#"{"timestamp":"t","type":"event_msg","payload":{"type":"thread_rolled_back","num_turns":2}}"#,
                "thread rolled back by 2 turns",
            ),
            (
                r#"{"timestamp":"t","type":"compacted","payload":{"message":"","replacement_history":[]}}"#,
                "context compacted",
            ),
        ] {
            let got = records(line);
            assert_eq!(n(line), [("@100".into(), RecordKind::Notice)]);
            assert!(matches!(&got[0].body, RecordBody::Text { text: t, .. } if t == text));
        }
        for quiet in [
            r#"{"timestamp":"t","type":"event_msg","payload":{"type":"context_compacted"}}"#,
            r#"{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":null}}"#,
            r#"{"timestamp":"t","type":"event_msg","payload":{"type":"agent_message","message":"x"}}"#,
            r#"{"timestamp":"t","type":"turn_context","payload":{"cwd":"/w"}}"#,
            r#"{"timestamp":"t","type":"brand_new","payload":{}}"#,
        ] {
            assert!(records(quiet).is_empty(), "{quiet}");
        }
    }

    #[test]
    fn fork_is_announced_on_the_first_line_only() {
        let meta = r#"{"timestamp":"t","type":"session_meta","payload":{"id":"child","forked_from_id":"parent"}}"#;
        assert_eq!(summary(&at(0, meta)), [("@0".into(), RecordKind::Notice)]);
        assert!(at(500, meta).is_empty());
        let own =
            r#"{"timestamp":"t","type":"session_meta","payload":{"id":"p","forked_from_id":null}}"#;
        assert!(at(0, own).is_empty());
        let sub = r#"{"timestamp":"t","type":"session_meta","payload":{"id":"c","source":{"subagent":{"thread_spawn":{"parent_thread_id":"p","depth":1}}}}}"#;
        assert_eq!(at(0, sub).len(), 1);
    }

    /// Synthetic input written from the description of the pre-envelope format (formats doc
    /// §2.6); no real sample was found.
    #[test]
    fn pre_envelope_format_synthetic() {
        let header = r#"{"id":"0198a0b1-0000-7000-8000-000000000001","timestamp":"2025-07-01T10:00:00.000Z","instructions":null,"git":{"branch":"main"}}"#;
        assert!(at(0, header).is_empty());
        assert!(records(r#"{"record_type":"state"}"#).is_empty());
        let user =
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]}"#;
        let got = records(user);
        assert_eq!(summary(&got), [("@100#0".into(), RecordKind::User)]);
        assert_eq!(got[0].ts, None);
        let call = r#"{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_9"}"#;
        assert_eq!(records(call)[0].id, "call:call_9@100");
        let output = r#"{"type":"function_call_output","call_id":"call_9","output":"{\"output\":\"a\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.1}}"}"#;
        assert_eq!(
            records(output)[0].body,
            RecordBody::ToolResult {
                call_id: "call_9".into(),
                output: "a\n".into(),
                is_error: false
            }
        );
    }

    #[test]
    fn torn_lines_are_malformed() {
        assert!(matches!(
            parse_line(&ctx(), 0, br#"{"timestamp":"t","type":"resp"#),
            LineOutcome::Malformed(_)
        ));
        assert_eq!(
            summary(&records("[1,2]")),
            [("@100".into(), RecordKind::Notice)]
        );
    }
}
