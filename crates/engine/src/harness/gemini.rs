//! Gemini CLI sessions (`tmp/<project>/chats/session-<ts>-<8 hex>.jsonl`): a header line, then
//! message lines that are upserts by message id, `{"$set": …}` metadata patches and
//! `{"$rewindTo": id}`. Follows `research/formats-pi-grok-opencode-gemini.md` §4 and §5, and what
//! Gemini CLI 0.61 writes (`tests/fixtures/gemini-0.61/`).
//!
//! A session's id is the header's `sessionId` (a UUID; the file name holds 8 characters of it):
//! the driver reads each file's first line ([`Format::id_in_head`]), and a file that repeats an
//! id — the startup-only file a resume in a later minute writes — is not a second session.
//!
//! Record ids follow the message id: `<id>` (user, info, warning, error), `<id>#thoughts` (the
//! model's reasoning, its `thoughts` as `subject: description` lines), `<id>#text` (the model's
//! text), `<id>#tc:<call id>` (a tool call) and `tr:<call id>` (its result, once the
//! call's status is final). A result is written twice — in the `gemini` message's `toolCalls`
//! and as a `functionResponse` user message — and both give the same id, so it is one record. A
//! message re-appended with more fields gives the same ids again; the read planner keeps the
//! first copy (its position is the first appearance, as Gemini's own loader does), so the
//! re-append only adds what is new (a result, the text). Across pages, a `--since` read that
//! finds new lines replays the source before its cursor (up to `UPSERT_REPLAY_BYTES`) to learn
//! the ids already returned ([`Format::upserts_by_id`]).
//!
//! `{"$set": {"messages": […]}}` is Gemini writing its in-memory history back (at every start,
//! and when a resumed session loads): it lists messages the file already holds and the hidden
//! session context, so it gives no records.

use serde_json::Value;

use crate::SourceCtx;
use crate::harness::{Format, PatchEnvelope, Source, ToolRole, ToolVocabulary};
use crate::lines::LineOutcome;
use crate::records::{Out, count, object_line, stamp_model, str_of};
use crate::session::{SessionFile, session_file, valid_id};
use clankie_model::{DefaultHome, FileEntry, Layout, ListSpec, Storage};
use clankie_model::{TextKind, Usage};

/// Gemini CLI.
pub(super) struct Gemini;

/// Gemini CLI's tools: `run_shell_command`; `replace` (`file_path`, `old_string`/`new_string`);
/// `write_file`; `absolute_path` is where its file tools of earlier versions took the path.
/// Its file tools: `read_file` (`offset` counts from 0), `search_file_content` (`grep` in later
/// versions), `glob`, `list_directory`, `web_fetch`, `google_web_search`.
static TOOLS: ToolVocabulary = ToolVocabulary {
    shell_tools: &["run_shell_command"],
    command_keys: &["command"],
    path_keys: &["file_path", "absolute_path"],
    snippet_keys: &[("old_string", "new_string")],
    replace_all_keys: &[],
    edit_list_keys: &[],
    write_tool_marks: &["write"],
    content_keys: &["content"],
    patch_tools: &[],
    patch_keys: &[],
    patch_envelope: &PatchEnvelope::NONE,
    roles: &[
        ("read_file", ToolRole::Read),
        ("search_file_content", ToolRole::Search),
        ("grep", ToolRole::Search),
        ("glob", ToolRole::Glob),
        ("list_directory", ToolRole::List),
        ("web_fetch", ToolRole::Fetch),
        ("google_web_search", ToolRole::WebSearch),
    ],
    first_line_keys: &["offset"],
    first_line_base: 0,
    line_count_keys: &["limit"],
    pattern_keys: &["pattern", "query"],
    dir_keys: &["dir_path", "path"],
    file_filter_keys: &["include"],
    prompt_keys: &["prompt"],
    ..ToolVocabulary::NONE
};

static LAYOUT: Layout = Layout {
    name: "gemini",
    // GEMINI_CLI_HOME replaces the user's home directory, not the `.gemini` one.
    default_home: DefaultHome {
        env_var: Some("GEMINI_CLI_HOME"),
        env_relative: ".gemini",
        home_relative: ".gemini",
    },
    // tmp/<project>/chats/session-*.jsonl, subagents in chats/<parent-id>/<id>.jsonl;
    // `.json`: the legacy whole-document sessions.
    list: ListSpec {
        subdirs: &["tmp"],
        suffixes: &[".jsonl", ".json"],
        max_depth: 3,
        top_files: &[],
    },
    db_env: None,
    storage: Storage::Files,
    id_globs: &["tmp/*/chats/{id}*.jsonl", "tmp/*/chats/{id}*.json"],
};

/// The newest Gemini CLI this reader is tested against (docs/harnesses.md).
const TESTED: super::Tested = super::Tested {
    product: "Gemini CLI",
    version: "0.61.0",
};

impl Format for Gemini {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    fn session(&self, entry: &FileEntry) -> Option<SessionFile> {
        classify(entry)
    }

    fn source(&self, entry: &FileEntry) -> Source {
        if entry.rel.ends_with(b".json") {
            Source::Document
        } else {
            Source::Lines
        }
    }

    fn parse_line(&self, ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
        parse_line(ctx, offset, line)
    }

    fn parse_document(
        &self,
        ctx: &SourceCtx,
        bytes: &[u8],
    ) -> Result<Vec<clankie_model::Record>, String> {
        parse_document(ctx, bytes)
    }

    fn parse_document_rows(
        &self,
        ctx: &SourceCtx,
        bytes: &[u8],
        _terminal_size: Option<(usize, usize)>,
        _newest: Option<usize>,
        _after: Option<&crate::cursor::RowCursor>,
    ) -> Result<crate::rows::RowRecords, String> {
        document_rows(ctx, bytes)
    }

    /// The project's `.project_root`, next to its `chats/`.
    fn cwd_file(&self) -> Option<&'static str> {
        Some("../.project_root")
    }

    fn session_cwd(&self, head: &[u8]) -> Option<String> {
        std::str::from_utf8(head).ok().map(|s| s.trim().to_string())
    }

    /// The full `sessionId` (file names hold only 8 characters of it): the header line's, or
    /// a legacy `.json` document's top-level one (what `gemini --resume` accepts; the file
    /// name it rejects).
    fn native_id(&self, head: &[u8]) -> Option<String> {
        crate::resume::complete_lines(head)
            .next()
            .and_then(|v| v.get("sessionId")?.as_str().map(str::to_string))
            .or_else(|| document_session_id(head))
    }

    /// `session-*.jsonl` files. Subagents' files are named by their own id already; a legacy
    /// `.json` document keeps its file name (its `sessionId` is not on a first line of its own).
    fn id_in_head(&self, entry: &FileEntry) -> bool {
        std::str::from_utf8(&entry.rel).is_ok_and(|rel| {
            rel.rsplit('/')
                .next()
                .is_some_and(|f| f.starts_with("session-") && f.ends_with(".jsonl"))
        })
    }

    fn upserts_by_id(&self) -> bool {
        true
    }

    fn document_incomplete(&self, bytes: &[u8]) -> bool {
        super::json_cut_short(bytes)
    }

    /// Its transcripts do not record the release that wrote them.
    fn tested(&self) -> Option<&'static super::Tested> {
        Some(&TESTED)
    }

    fn tool_vocabulary(&self) -> &'static ToolVocabulary {
        &TOOLS
    }

    fn resume_command(&self, id: &str, _path: &str) -> String {
        format!("gemini --resume {}", crate::resume::shell_quote(id))
    }
}

/// `tmp/<project>/chats/session-<ts>-<8 hex>.jsonl`: the id is the file stem (the listing holds
/// only 8 characters of the header's `sessionId`); subagents in
/// `chats/<parent-session-id>/<id>.jsonl` are `<parent>+<id>`.
fn classify(entry: &FileEntry) -> Option<SessionFile> {
    let rel = std::str::from_utf8(&entry.rel).ok()?;
    match rel.split('/').collect::<Vec<_>>().as_slice() {
        ["tmp", _project, "chats", file] if file.starts_with("session-") => {
            let stem = file
                .strip_suffix(".jsonl")
                .or_else(|| file.strip_suffix(".json"))?;
            session_file(entry, stem, None)
        }
        ["tmp", _project, "chats", parent, file] if valid_id(parent) => {
            let stem = file.strip_suffix(".jsonl")?;
            session_file(entry, &format!("{parent}+{stem}"), Some(stem))
        }
        _ => None,
    }
}

/// The value of the first `"sessionId"` key in the first bytes of a legacy document (Gemini
/// writes it before `messages`; pretty-printed, so it is on no line of its own), when it is an
/// id.
fn document_session_id(head: &[u8]) -> Option<String> {
    const KEY: &[u8] = b"\"sessionId\"";
    let at = head
        .windows(KEY.len())
        .enumerate()
        .find(|&(i, w)| w == KEY && (i == 0 || head[i - 1] != b'\\'))?
        .0;
    let rest = head[at + KEY.len()..]
        .trim_ascii_start()
        .strip_prefix(b":")?;
    let id = serde_json::Deserializer::from_slice(rest.trim_ascii_start())
        .into_iter::<String>()
        .next()?
        .ok()?;
    valid_id(&id).then_some(id)
}

/// Parses a legacy whole-document session (`session-*.json`: `{sessionId, messages: [...]}`).
/// Its messages have the shape of the JSONL message lines, so each goes through [`parse_line`]
/// with its ordinal standing in for the offset (ids come from message ids, so they do not
/// depend on it). A document that is not JSON, or has no `messages` array, is an error.
pub(super) fn parse_document(
    ctx: &SourceCtx,
    bytes: &[u8],
) -> Result<Vec<clankie_model::Record>, String> {
    document_rows(ctx, bytes).map(|rows| rows.records)
}

/// [`parse_document`], with where each message it did not understand stands among the records.
fn document_rows(ctx: &SourceCtx, bytes: &[u8]) -> Result<crate::rows::RowRecords, String> {
    let doc: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("not a JSON document: {e}"))?;
    let messages = doc
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| "no `messages` array: not a Gemini session document".to_string())?;
    let mut rows = crate::rows::RowRecords::default();
    for (ordinal, message) in messages.iter().enumerate() {
        let line = serde_json::to_vec(message).expect("a JSON value serializes");
        let (mut records, unknown) = parse_line(ctx, ordinal as u64, &line).into_parts()?;
        rows.records.append(&mut records);
        for _ in 0..unknown {
            rows.unknown_here();
        }
    }
    Ok(rows)
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
    let mut out = Out::new(ctx, ts);
    if let Some(target) = entry.get("$rewindTo") {
        let target = target.as_str().unwrap_or_default();
        out.text(
            format!("@{offset}"),
            TextKind::Notice,
            format!("rewound: messages from {target} on were removed"),
        );
        return out.done();
    }
    if entry.get("$set").is_some() {
        // Metadata, and the history written back (see the module doc): no records.
        return out.done();
    }
    let id = str_of(&entry, "id");
    if id.is_empty() {
        // The header is metadata; any other entry without an id is not understood.
        if entry.get("sessionId").is_none() {
            out.unknown();
        }
        return out.done();
    }
    for _ in 0..unknown_parts(entry.get("content")) {
        out.unknown();
    }
    match str_of(&entry, "type") {
        "user" => {
            if entry.get("content").is_none() {
                // A message without its content: a renamed field.
                out.unknown();
            }
            let content = entry.get("content").unwrap_or(&Value::Null);
            let shown = entry.get("displayContent").unwrap_or(content);
            let text = parts_text(shown);
            if let Some(results) = function_responses(content) {
                // Parts that are all tool results are results, not something the user typed.
                for (call_id, output, is_error) in results {
                    out.result(result_id(&call_id), &call_id, output, is_error);
                }
            } else {
                out.text(id.to_string(), TextKind::User, text);
            }
        }
        "gemini" => {
            out.text(
                format!("{id}#thoughts"),
                TextKind::Thinking,
                thoughts_text(entry.get("thoughts")),
            );
            out.text(
                format!("{id}#text"),
                TextKind::Assistant,
                parts_text(entry.get("content").unwrap_or(&Value::Null)),
            );
            let calls = entry.get("toolCalls").and_then(Value::as_array);
            for call in calls.into_iter().flatten() {
                let call_id = str_of(call, "id");
                out.call(
                    format!("{id}#tc:{call_id}"),
                    call_id,
                    str_of(call, "name"),
                    call.get("args").cloned().unwrap_or(Value::Null),
                );
                let status = str_of(call, "status");
                if matches!(status, "success" | "error" | "cancelled") {
                    // What the user was shown (a shell command's output) when it is text;
                    // otherwise what the model was sent.
                    let output = match call.get("resultDisplay") {
                        Some(Value::String(shown)) if !shown.is_empty() => shown.clone(),
                        _ => call
                            .get("result")
                            .and_then(function_responses)
                            .map(|r| {
                                r.into_iter()
                                    .map(|(_, o, _)| o)
                                    .collect::<Vec<_>>()
                                    .join("\n")
                            })
                            .unwrap_or_default(),
                    };
                    out.result(result_id(call_id), call_id, output, status != "success");
                }
            }
            let usage = entry.get("tokens").and_then(|t| {
                Usage {
                    input: count(t, "input"),
                    output: count(t, "output"),
                    cache_read: count(t, "cached"),
                    cache_write: None,
                    reasoning: count(t, "thoughts"),
                }
                .nonempty()
            });
            let model = Some(str_of(&entry, "model")).filter(|m| !m.is_empty());
            stamp_model(&mut out.records, model, usage);
        }
        kind @ ("info" | "warning" | "error") => {
            let text = parts_text(entry.get("content").unwrap_or(&Value::Null));
            let text = if kind == "info" {
                text
            } else {
                format!("{kind}: {text}")
            };
            out.text(id.to_string(), TextKind::Notice, text);
        }
        // A type newer than this reader, or a message without its type.
        _ => out.unknown(),
    }
    out.done()
}

/// A `gemini` message's `thoughts` (`[{subject, description, timestamp}]`), one
/// `subject: description` paragraph each.
fn thoughts_text(thoughts: Option<&Value>) -> String {
    let Some(Value::Array(thoughts)) = thoughts else {
        return String::new();
    };
    thoughts
        .iter()
        .map(
            |t| match (str_of(t, "subject").trim(), str_of(t, "description").trim()) {
                ("", d) => d.to_string(),
                (s, "") => s.to_string(),
                (s, d) => format!("{s}: {d}"),
            },
        )
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The id of a tool call's result: the call id alone, as the `gemini` message's `toolCalls`
/// and the `functionResponse` user message both carry it.
fn result_id(call_id: &str) -> String {
    format!("tr:{call_id}")
}

/// A tool's output without Gemini's `<untrusted_context>` fence, which marks it for the model
/// as data rather than instructions.
fn unfenced(output: &str) -> &str {
    output
        .trim()
        .strip_prefix("<untrusted_context>")
        .and_then(|rest| rest.strip_suffix("</untrusted_context>"))
        .map_or(output, |inner| inner.trim_matches('\n'))
}

/// Text of a `PartListUnion`: a string, a part, or parts (text joined; media as placeholders).
fn parts_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(parts_text)
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Object(part) => {
            if let Some(text) = part.get("text").and_then(Value::as_str) {
                text.to_string()
            } else if let Some(data) = part.get("inlineData") {
                format!("[{}]", str_of(data, "mimeType"))
            } else if let Some(file) = part.get("fileData") {
                format!("[file {}]", str_of(file, "fileUri"))
            } else {
                String::new()
            }
        }
        _ => String::new(),
    }
}

/// The keys a content part is read by (or skipped by on purpose: a model's thought, code it
/// ran); a part with none of them is of a kind this reader does not know.
const PART_KEYS: &[&str] = &[
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "thought",
    "thoughtSignature",
    "executableCode",
    "codeExecutionResult",
    "videoMetadata",
];

/// How many parts of a `PartListUnion` are of a kind this reader does not know.
fn unknown_parts(value: Option<&Value>) -> usize {
    let part_unknown = |part: &Value| {
        part.as_object()
            .is_some_and(|p| !PART_KEYS.iter().any(|k| p.contains_key(*k)))
    };
    match value {
        Some(Value::Array(parts)) => parts.iter().filter(|p| part_unknown(p)).count(),
        Some(part @ Value::Object(_)) => usize::from(part_unknown(part)),
        _ => 0,
    }
}

/// `(call id, output, is_error)` of parts that are all `functionResponse`s; `None` otherwise.
fn function_responses(value: &Value) -> Option<Vec<(String, String, bool)>> {
    let parts = value.as_array().filter(|p| !p.is_empty())?;
    parts
        .iter()
        .map(|part| {
            let response = part.get("functionResponse")?;
            let body = response.get("response").unwrap_or(&Value::Null);
            let (output, is_error) = match (body.get("output"), body.get("error")) {
                (_, Some(err)) if !err.is_null() => {
                    (unfenced(&display_text(Some(err))).to_string(), true)
                }
                (Some(out), _) => (unfenced(&display_text(Some(out))).to_string(), false),
                _ => (body.to_string(), false),
            };
            Some((str_of(response, "id").to_string(), output, is_error))
        })
        .collect()
}

fn display_text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;

    #[test]
    fn legacy_document_reads_like_lines() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/gemini/tmp/fixtures/chats/session-2026-04-29T21-00-legacysm.json"
        );
        let bytes = std::fs::read(path).unwrap();
        let got = parse_document(
            &test_support::ctx(crate::test_support::harness("gemini")),
            &bytes,
        )
        .unwrap();
        let kinds: Vec<RecordKind> = got.iter().map(Record::kind).collect();
        assert!(
            kinds.contains(&RecordKind::User) && kinds.contains(&RecordKind::Assistant),
            "{kinds:?}"
        );
        assert!(got.iter().all(|r| !r.id.starts_with('@')));
        assert!(
            parse_document(
                &test_support::ctx(crate::test_support::harness("gemini")),
                b"{}"
            )
            .is_err()
        );
        assert!(
            parse_document(
                &test_support::ctx(crate::test_support::harness("gemini")),
                b"[1"
            )
            .is_err()
        );
    }
    use clankie_model::{Record, RecordBody, RecordKind};

    fn records(line: &str) -> Vec<Record> {
        test_support::records(crate::test_support::harness("gemini"), 9, line)
    }

    fn summary(line: &str) -> Vec<(String, RecordKind)> {
        test_support::summary(&records(line))
    }

    #[test]
    fn a_gemini_message_carries_its_model_and_tokens() {
        let got = records(
            r#"{"id":"g1","timestamp":"t","type":"gemini","content":"listed","tokens":{"input":11855,"output":81,"cached":0,"thoughts":7,"tool":0,"total":11936},"model":"gemini-3-flash-preview","toolCalls":[{"id":"ls_1","name":"run_shell_command","args":{},"status":"success","result":[]}]}"#,
        );
        // Text, call, result: the model on what the model wrote, the tokens on the first.
        let models: Vec<Option<&str>> = got.iter().map(|r| r.model.as_deref()).collect();
        let flash = Some("gemini-3-flash-preview");
        assert_eq!(models, [flash, flash, None]);
        let usage = clankie_model::Usage {
            input: Some(11855),
            output: Some(81),
            cache_read: Some(0),
            cache_write: None,
            reasoning: Some(7),
        };
        assert_eq!(got[0].usage.as_deref(), Some(&usage));
        assert!(got[1..].iter().all(|r| r.usage.is_none()));
    }

    #[test]
    fn thoughts_are_thinking_before_the_text() {
        let line = r#"{"id":"g1","timestamp":"t","type":"gemini","content":"done","thoughts":[{"subject":"Planning","description":"List the files first.","timestamp":"t"},{"subject":"Checking","description":"","timestamp":"t"}]}"#;
        let got = records(line);
        assert_eq!(
            summary(line),
            [
                ("g1#thoughts".into(), RecordKind::Assistant),
                ("g1#text".into(), RecordKind::Assistant)
            ]
        );
        assert_eq!(
            got[0].body,
            RecordBody::Text {
                kind: TextKind::Thinking,
                text: "Planning: List the files first.\n\nChecking".into()
            }
        );
    }

    #[test]
    fn a_legacy_document_resumes_by_its_session_id() {
        let doc = b"{\n  \"sessionId\": \"3739ef95-1c2d-4e5f-8a9b-0c1d2e3f4a5b\",\n  \"projectHash\": \"ab\",\n  \"messages\": [\n    {\n      \"id\": \"m1\",\n      \"type\": \"user\",\n      \"content\": \"say \\\"sessionId\\\": \\\"no\\\"\"";
        assert_eq!(
            Gemini.native_id(doc).as_deref(),
            Some("3739ef95-1c2d-4e5f-8a9b-0c1d2e3f4a5b")
        );
        let quoted_only = b"{\"messages\":[{\"content\":\"\\\"sessionId\\\": \\\"x\\\"\"}]}";
        assert_eq!(Gemini.native_id(quoted_only), None);
    }

    #[test]
    fn header_set_and_rewind() {
        assert!(records(r#"{"sessionId":"x","projectHash":"h","startTime":"t","lastUpdated":"t","kind":"main"}"#).is_empty());
        assert!(records(r#"{"$set":{"lastUpdated":"t"}}"#).is_empty());
        assert_eq!(
            summary(r#"{"$rewindTo":"m2"}"#),
            [("@9".into(), RecordKind::Notice)]
        );
        // The history written back at every start is not a notice.
        assert!(records(r#"{"$set":{"messages":[]}}"#).is_empty());
    }

    #[test]
    fn upserted_message_gives_the_same_ids_and_the_result_once_final() {
        let pending = r#"{"id":"g1","timestamp":"t","type":"gemini","content":"","toolCalls":[{"id":"ls_1","name":"run_shell_command","args":{"command":"ls"},"status":"executing"}]}"#;
        assert_eq!(
            summary(pending),
            [("g1#tc:ls_1".into(), RecordKind::ToolCall)]
        );
        let done = r#"{"id":"g1","timestamp":"t","type":"gemini","content":"listed","toolCalls":[{"id":"ls_1","name":"run_shell_command","args":{"command":"ls"},"status":"success","result":[{"functionResponse":{"id":"ls_1","name":"run_shell_command","response":{"output":"a\nb"}}}]}]}"#;
        assert_eq!(
            summary(done),
            [
                ("g1#text".into(), RecordKind::Assistant),
                ("g1#tc:ls_1".into(), RecordKind::ToolCall),
                ("tr:ls_1".into(), RecordKind::ToolResult)
            ]
        );
        assert!(
            matches!(&records(done)[2].body, RecordBody::ToolResult { output, is_error: false, .. } if output == "a\nb")
        );
        let user = r#"{"id":"u1","timestamp":"t","type":"user","content":[{"text":"expanded @file"}],"displayContent":[{"text":"@file"}]}"#;
        assert!(
            matches!(&records(user)[0].body, RecordBody::Text { text, kind: TextKind::User } if text == "@file")
        );
        assert_eq!(
            summary(r#"{"id":"e1","type":"error","content":"quota"}"#),
            [("e1".into(), RecordKind::Notice)]
        );
    }

    /// What Gemini CLI 0.61.0 wrote for a scripted session (`tests/fixtures/LAYOUT.md`).
    const CLI_0_61: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/gemini-cli-0.61.0/tmp/project/chats/"
    );
    const MAIN_FILE: &str = "session-2026-12-01T10-54-8f60115e.jsonl";
    const STARTUP_ONLY_FILE: &str = "session-2026-12-01T10-55-8f60115e.jsonl";
    const SESSION_ID: &str = "8f60115e-68fb-4ce6-aa55-6c67027a9884";

    /// Runs a read plan over `file` in memory, as a host would serve it.
    fn serve(file: &[u8], mode: crate::page::Mode, limit: usize) -> crate::page::Page {
        serve_as(file, mode, limit, true)
    }

    fn serve_as(
        file: &[u8],
        mode: crate::page::Mode,
        limit: usize,
        strict: bool,
    ) -> crate::page::Page {
        let request = crate::page::PageRequest {
            mode,
            limit,
            strict,
            redact: false,
        };
        let ctx = test_support::ctx(test_support::harness("gemini"));
        let mut plan = crate::plan::ReadPlan::new(ctx, request, file.len() as u64);
        let mut records = Vec::new();
        while let Some(ranges) = plan.next_read() {
            let chunks = ranges
                .iter()
                .map(|r| {
                    let end = r.end().min(file.len() as u64) as usize;
                    file[(r.start as usize).min(end)..end].to_vec()
                })
                .collect();
            plan.feed(chunks, file.len() as u64).unwrap();
            records.extend(plan.take_records());
        }
        let mut page = plan.finish();
        records.append(&mut page.records);
        page.records = records;
        page
    }

    #[test]
    fn a_tail_is_the_end_of_all_when_an_older_message_is_rewritten_at_the_end() {
        // The real 0.61 session, each of its lines in turn appended again: a message written
        // back with the ids it already had, which `--all` keeps where they first appeared.
        let file = std::fs::read(format!("{CLI_0_61}{MAIN_FILE}")).unwrap();
        let lines: Vec<&[u8]> = file.split_inclusive(|&b| b == b'\n').collect();
        for line in &lines {
            let rewritten = [&file[..], line].concat();
            let all: Vec<String> = serve_as(&rewritten, crate::page::Mode::All, 200, false)
                .records
                .into_iter()
                .map(|r| r.id)
                .collect();
            for limit in 1..=all.len() + 1 {
                let tail: Vec<String> = serve_as(&rewritten, crate::page::Mode::Tail, limit, false)
                    .records
                    .into_iter()
                    .map(|r| r.id)
                    .collect();
                assert_eq!(
                    tail,
                    all[all.len().saturating_sub(limit)..],
                    "limit {limit}, appended again: {}",
                    String::from_utf8_lossy(line)
                );
            }
        }
    }

    #[test]
    fn a_0_61_session_reads_exactly() {
        let file = std::fs::read(format!("{CLI_0_61}{MAIN_FILE}")).unwrap();
        let page = serve(&file, crate::page::Mode::All, 200);
        let kinds: Vec<RecordKind> = page.records.iter().map(Record::kind).collect();
        // The startup `$set`s (history written back, twice) are not notices; the result
        // written in the `gemini` message and again as a user message is one record.
        assert_eq!(
            kinds,
            [
                RecordKind::User,
                RecordKind::Assistant,
                RecordKind::ToolCall,
                RecordKind::ToolResult,
                RecordKind::Assistant,
                RecordKind::User,
                RecordKind::Assistant,
            ],
            "{:#?}",
            page.records
        );
        match &page.records[2].body {
            RecordBody::ToolCall { name, input, .. } => {
                assert_eq!(name, "run_shell_command");
                assert_eq!(input["command"], "echo compat-4''2-marker");
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(&page.records[3].body, RecordBody::ToolResult { output, is_error: false, .. } if output == "compat-42-marker"),
            "{:?}",
            page.records[3]
        );
        assert!(!page.pending_tail && !page.more);
    }

    #[test]
    fn the_user_message_form_of_a_result_is_unfenced_and_shares_the_id() {
        let line = r#"{"id":"u9","type":"user","content":[{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"output":"<untrusted_context>\nOutput: hi\n</untrusted_context>"}}}]}"#;
        let got = records(line);
        assert_eq!(summary(line), [("tr:c1".into(), RecordKind::ToolResult)]);
        assert!(
            matches!(&got[0].body, RecordBody::ToolResult { output, .. } if output == "Output: hi")
        );
    }

    #[test]
    fn since_pages_never_repeat_a_reappended_message_nor_lose_what_it_added() {
        use crate::page::Mode;
        let file = std::fs::read(format!("{CLI_0_61}{MAIN_FILE}")).unwrap();
        let all = serve(&file, Mode::All, 200).records;
        // With pages of 2 the first page ends on the model's text, whose message is appended
        // again (with its tool call and result) after the boundary.
        for limit in 1..=4 {
            let mut page = serve(&file, Mode::Head, limit);
            let mut got = std::mem::take(&mut page.records);
            while page.more {
                page = serve(&file, Mode::Since(page.cursor.clone()), limit);
                got.append(&mut page.records);
            }
            assert_eq!(got, all, "pages of {limit}");
        }
    }

    #[test]
    fn a_startup_only_file_repeating_an_id_is_not_a_second_session() {
        let entry = |name: &str| FileEntry {
            harness: test_support::harness("gemini"),
            root: format!("{CLI_0_61}../../..").into_bytes().into(),
            rel: format!("tmp/project/chats/{name}").into_bytes(),
            size: 1,
            mtime: 0,
            inode: None,
            ctime: None,
        };
        let listed = crate::harness::sessions(&[entry(STARTUP_ONLY_FILE), entry(MAIN_FILE)]);
        assert_eq!(listed.len(), 2);
        let sessions = crate::harness::adopt_native_ids(listed, |s| {
            std::fs::read(String::from_utf8(s.entry.full_path()).unwrap()).ok()
        });
        assert_eq!(sessions.len(), 1, "{sessions:#?}");
        assert_eq!(sessions[0].id, SESSION_ID);
        assert!(sessions[0].entry.rel.ends_with(MAIN_FILE.as_bytes()));
        // The full id, a prefix and the file name find it.
        for typed in [SESSION_ID, "8f6011", "session-2026-12-01T10-54-8f60115e"] {
            let query = crate::resolve::SessionQuery::parse(typed).unwrap();
            assert_eq!(
                crate::resolve::resolve(&sessions, &query).unwrap().id,
                SESSION_ID
            );
        }
        // A head that cannot be read leaves the file name as the id.
        let unread =
            crate::harness::adopt_native_ids(crate::harness::sessions(&[entry(MAIN_FILE)]), |_| {
                None
            });
        assert_eq!(unread[0].id, "session-2026-12-01T10-54-8f60115e");
    }

    #[test]
    fn a_document_cut_short_is_incomplete_and_garbage_is_not() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/gemini/tmp/fixtures/chats/session-2026-04-29T21-00-legacysm.json"
        );
        let whole = std::fs::read(path).unwrap();
        assert!(!super::super::json_cut_short(&whole));
        let end = whole.trim_ascii_end().len();
        for cut in [0, 1, whole.len() / 2, end - 1] {
            assert!(super::super::json_cut_short(&whole[..cut]), "cut at {cut}");
        }
        assert!(!super::super::json_cut_short(b"{]"));
        assert!(!super::super::json_cut_short(b"{} trailing"));
    }

    #[test]
    fn a_reappend_far_into_a_long_session_adds_only_what_is_new() {
        use crate::page::Mode;
        // Over 4 MiB of earlier messages, so the replay before the cursor starts mid-file (and
        // mid-line).
        let mut file = String::from(r#"{"sessionId":"s","projectHash":"p","kind":"main"}"#);
        file.push('\n');
        let mut n = 0;
        while file.len() < 5 * 1024 * 1024 {
            file += &format!(
                r#"{{"id":"u{n}","type":"user","content":[{{"text":"{} {n}"}}]}}"#,
                "filler ".repeat(20)
            );
            file.push('\n');
            n += 1;
        }
        file += r#"{"id":"g1","type":"gemini","content":"Running it."}"#;
        file.push('\n');
        let before = serve(file.as_bytes(), Mode::All, 200);
        assert_eq!(before.records.len(), n + 1);
        file += r#"{"$set":{"lastUpdated":"t"}}"#;
        file.push('\n');
        file += r#"{"id":"g1","type":"gemini","content":"Running it.","toolCalls":[{"id":"c1","name":"run_shell_command","args":{"command":"ls"},"status":"success","resultDisplay":"a b"}]}"#;
        file.push('\n');
        let after = serve(file.as_bytes(), Mode::Since(before.cursor), 200);
        assert_eq!(
            test_support::summary(&after.records),
            [
                ("g1#tc:c1".into(), RecordKind::ToolCall),
                ("tr:c1".into(), RecordKind::ToolResult)
            ]
        );
        assert!(!after.reset);
    }
}
