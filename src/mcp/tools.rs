//! The MCP tools as a model sees them: each tool's name, description and JSON Schema, and the
//! typed arguments a call is decoded into (unknown fields and wrong types are refused, so a
//! malformed call never reaches a host). Descriptions are written for a model that has not
//! read the README: what the tool returns, what each argument means, and how to page.
//!
//! Adding a tool: its arguments struct here, its entry in [`all`] (name, description, schema), and its arm in
//! `McpServer::call_tool` that decodes the arguments and calls its handler; [`names`] and the
//! unknown-tool error follow.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde::Deserialize;
use serde_json::json;

use clankie_model::RecordKind;
use clankie_model::limits::MAX_LIMIT;

/// Records (and sessions) a call returns when `limit` is not given.
pub(crate) const DEFAULT_LIMIT: u32 = 50;

/// `list_sessions`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListSessionsArgs {
    pub host: Option<String>,
    pub harness: Option<String>,
    pub modified_within: Option<String>,
    pub limit: Option<u32>,
}

/// How `read_session` pages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ReadMode {
    #[default]
    Tail,
    Head,
    Since,
}

/// `read_session`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadSessionArgs {
    pub target: String,
    #[serde(default)]
    pub mode: ReadMode,
    pub cursor: Option<String>,
    pub limit: Option<u32>,
    #[serde(default)]
    pub kinds: Vec<String>,
}

/// `check`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CheckArgs {
    pub hosts: Option<Vec<String>>,
}

/// `search`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchArgs {
    pub pattern: String,
    #[serde(default)]
    pub fixed: bool,
    #[serde(default)]
    pub ignore_case: bool,
    pub hosts: Option<Vec<String>>,
    pub harness: Option<String>,
    #[serde(default)]
    pub kinds: Vec<String>,
    pub limit: Option<u32>,
}

/// `resume_command`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResumeArgs {
    pub target: String,
}

/// Decodes a call's arguments (absent arguments are an empty object); the error is the one
/// line a model reads to fix its call.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(
    tool: &str,
    arguments: Option<JsonObject>,
) -> Result<T, String> {
    let value = serde_json::Value::Object(arguments.unwrap_or_default());
    serde_json::from_value(value).map_err(|e| format!("{tool}: invalid arguments: {e}"))
}

/// A `limit` argument: 1 to 200, [`DEFAULT_LIMIT`] when absent.
pub(crate) fn limit(tool: &str, limit: Option<u32>) -> Result<usize, String> {
    match limit.unwrap_or(DEFAULT_LIMIT) as usize {
        n @ 1..=MAX_LIMIT => Ok(n),
        n => Err(format!(
            "{tool}: invalid arguments: limit must be 1 to {MAX_LIMIT}, got {n}"
        )),
    }
}

fn schema(value: serde_json::Value) -> Arc<JsonObject> {
    match value {
        serde_json::Value::Object(map) => Arc::new(map),
        _ => unreachable!("tool schemas are written as objects"),
    }
}

fn read_only() -> ToolAnnotations {
    let mut annotations = ToolAnnotations::new();
    annotations.read_only_hint = Some(true);
    annotations.destructive_hint = Some(false);
    annotations.open_world_hint = Some(false);
    annotations
}

/// The record kinds `read_session` filters on, as `read --kind` takes them.
const KINDS: [&str; 7] = [
    "user",
    "assistant",
    "tool_call",
    "tool_result",
    "notice",
    "tools",
    // The kind's name as the model spells it (also a harness's name, which only its module
    // spells).
    RecordKind::Terminal.name(),
];

const TARGET: &str = "The session as `HOST:SESSION`: HOST is `local` or a host name this server \
allows (see list_sessions); SESSION is a session id, a unique prefix of it (at least 6 \
characters), `HARNESS/ID`, or `@latest` for the host's newest session (`@latest/HARNESS` within \
one harness). Take it from list_sessions: `<host>:<session>`.";

/// The tools' names, in the order `tools/list` gives them.
pub(crate) fn names() -> Vec<String> {
    all("").into_iter().map(|t| t.name.into_owned()).collect()
}

/// The tools, in the order `tools/list` gives them.
pub(crate) fn all(allowed_hosts: &str) -> Vec<Tool> {
    let host_note = format!("Hosts this server may reach: {allowed_hosts}.");
    let harness_names: Vec<&str> = clankie_engine::harness::all().map(|h| h.name()).collect();
    let harnesses = harness_names.join(", ");
    vec![
        Tool::new_with_raw(
            "list_sessions",
            Some(format!(
                "List the AI coding agent sessions (harnesses: {harnesses}) on one machine, \
                 newest first: each with its `session` id, `harness`, \
                 `title` (the first prompt), `cwd`, `mtime` (last modified, RFC 3339), `size` in \
                 bytes and `path`. The machine is read over SSH with nothing installed on it. \
                 {host_note} Read a session with read_session, target `<host>:<session>`."
            ).into()),
            schema(json!({
                "type": "object",
                "properties": {
                    "host": {"type": "string", "description": "The machine to list; default `local` (this machine)."},
                    "harness": {"type": "string", "enum": harness_names, "description": "Only sessions of this agent."},
                    "modified_within": {"type": "string", "description": "Only sessions modified within this age (`30m`, `2h`, `3d`) or since an RFC 3339 time."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT, "description": "At most this many sessions (newest first); `more` says how many were left out."}
                },
                "additionalProperties": false
            })),
        )
        .with_title("List agent sessions")
        .with_annotations(read_only()),
        Tool::new_with_raw(
            "read_session",
            Some(format!(
                "Read the records of an agent session: prompts (`user`), replies (`assistant`, \
                 `thinking: true` for reasoning), tool calls (`tool_call`: `name`, `input`), \
                 tool results (`tool_result`: `output`, `is_error`) and `notice`s, oldest first. \
                 Secrets (API keys, tokens, passwords) are always redacted. Each record's text \
                 is cut at {} KiB, marked `truncated: true`. Returns `records` and `page`: \
                 `page.cursor` continues from the last record (mode `since`), `more` says \
                 records follow the page, `older` that records precede it (tail), \
                 `pending_tail` that a record is still being written, `reset` that the \
                 transcript was replaced and read from its start, `unknown` (when present) how \
                 many entries this version could not read. To follow an agent's work, \
                 call again with mode `since` and the last cursor. {host_note}",
                super::MAX_RECORD_TEXT_BYTES >> 10
            ).into()),
            schema(json!({
                "type": "object",
                "properties": {
                    "target": {"type": "string", "description": TARGET},
                    "mode": {"type": "string", "enum": ["tail", "head", "since"], "default": "tail", "description": "`tail`: the newest `limit` records; `head`: the first `limit`; `since`: the next `limit` records after `cursor`."},
                    "cursor": {"type": "string", "description": "With mode `since`: the `page.cursor` of an earlier read_session of this session."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT, "description": "Records in the page."},
                    "kinds": {"type": "array", "items": {"type": "string", "enum": KINDS}, "description": "Only records of these kinds (`tools`: both tool kinds). Applied before paging: `limit` counts the records kept, read further back (or on) within the 64 MiB bound; `page.filtered` counts the records examined and left out, and the cursor continues after the last record examined."}
                },
                "required": ["target"],
                "additionalProperties": false
            })),
        )
        .with_title("Read an agent session")
        .with_annotations(read_only()),
        Tool::new_with_raw(
            "check",
            Some(format!(
                "What changed on each machine since this tool's previous call: one `activity` \
                 per session that is `new`, `grew`, was `reset` (rewritten) or `deleted`, with \
                 `new_records` and `last_ts`. The first call only records where every session \
                 stands (`baseline: true`). A host that cannot be reached is listed in `failed` \
                 and keeps its old position; sessions that cannot be read are in `errors`. \
                 At most {MAX_LIMIT} activities, the newest (`more_activity` counts the rest). \
                 {host_note}"
            ).into()),
            schema(json!({
                "type": "object",
                "properties": {
                    "hosts": {"type": "array", "items": {"type": "string"}, "description": "Machines to check; default every host this server allows."}
                },
                "additionalProperties": false
            })),
        )
        .with_title("What changed since the last check")
        .with_annotations(read_only()),
        Tool::new_with_raw(
            "search",
            Some(format!(
                "Search the records of every agent session (harnesses: {harnesses}) on one or \
                 more machines for a pattern, as `clankie-read grep --json` does: `matches`, \
                 each with `host`, `harness`, `session`, the `record` (as read_session gives \
                 it), its searched `text` and the byte `spans` of the matches in it. The \
                 pattern is a regular expression (Rust `regex` syntax) unless `fixed`; it is \
                 case-insensitive when it has no uppercase letter, or with `ignore_case`. \
                 Secrets are redacted before matching, so a match is never a secret (search \
                 `REDACTED:github` to find where one was). Hosts that fail are in `failed`; \
                 `more` counts matches left out past `limit`. Read a hit's surroundings with \
                 read_session, target `<host>:<session>`. {host_note}"
            ).into()),
            schema(json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "What to find: a regular expression, or the exact text with `fixed`."},
                    "fixed": {"type": "boolean", "default": false, "description": "Take the pattern as plain text, not a regular expression."},
                    "ignore_case": {"type": "boolean", "default": false, "description": "Match case-insensitively even when the pattern has uppercase letters."},
                    "hosts": {"type": "array", "items": {"type": "string"}, "description": "Machines to search; default every host this server allows."},
                    "harness": {"type": "string", "enum": harness_names, "description": "Only sessions of this agent."},
                    "kinds": {"type": "array", "items": {"type": "string", "enum": KINDS}, "description": "Only records of these kinds (`tools`: both tool kinds)."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT, "description": "At most this many matches in all."}
                },
                "required": ["pattern"],
                "additionalProperties": false
            })),
        )
        .with_title("Search agent sessions")
        .with_annotations(read_only()),
        Tool::new_with_raw(
            "resume_command",
            Some(
                "The shell command that resumes a session in its own agent CLI (with `ssh -t` \
                 for a remote machine), as `command`. Nothing is run: give it to the user."
                    .into(),
            ),
            schema(json!({
                "type": "object",
                "properties": {
                    "target": {"type": "string", "description": TARGET}
                },
                "required": ["target"],
                "additionalProperties": false
            })),
        )
        .with_title("Command to resume a session")
        .with_annotations(read_only()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_typed_and_unknown_ones_refused() {
        let args = |v: serde_json::Value| v.as_object().cloned();
        let read: ReadSessionArgs =
            decode("read_session", args(json!({"target": "local:abc123"}))).unwrap();
        assert_eq!(read.mode, ReadMode::Tail);
        let err =
            decode::<ReadSessionArgs>("read_session", args(json!({"target": 5}))).unwrap_err();
        assert!(
            err.starts_with("read_session: invalid arguments: "),
            "{err}"
        );
        let err = decode::<ReadSessionArgs>(
            "read_session",
            args(json!({"target": "a:b", "no_redact": true})),
        )
        .unwrap_err();
        assert!(err.contains("unknown field `no_redact`"), "{err}");
        assert!(decode::<ReadSessionArgs>("read_session", None).is_err());
        assert!(decode::<CheckArgs>("check", None).is_ok());
        assert_eq!(limit("t", None), Ok(50));
        assert_eq!(limit("t", Some(200)), Ok(200));
        assert!(limit("t", Some(201)).is_err());
        assert!(limit("t", Some(0)).is_err());
    }

    #[test]
    fn the_kinds_offered_are_the_kinds_read_filters_on() {
        for kind in KINDS {
            let kinds = [kind.to_string()];
            let now = jiff::ZonedDateTime::now();
            assert!(
                clankie_engine::filter::RecordFilter::parse(&kinds, None, None, None, &now).is_ok(),
                "{kind}"
            );
        }
    }

    #[test]
    fn the_names_are_the_tools() {
        assert_eq!(
            names(),
            [
                "list_sessions",
                "read_session",
                "check",
                "search",
                "resume_command"
            ]
        );
    }

    #[test]
    fn every_tool_has_an_object_schema_and_a_description() {
        for tool in all("local") {
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
            assert!(tool.description.as_ref().is_some_and(|d| d.len() > 80));
        }
    }
}
