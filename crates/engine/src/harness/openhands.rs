//! OpenHands CLI conversations (`conversations/<id>/` under `~/.openhands`, where `<id>` is the
//! conversation's UUID without its dashes): a tree of JSON documents, one session several
//! files — `base_state.json` (the conversation's state, rewritten in place: its agent and
//! model, its workspace, its status) and `events/event-NNNNN-<event uuid>.json`, one document
//! per event, each written once, numbered from 0 without gaps. Written by PyPI's `openhands`
//! 1.2 (its SDK 1.2; `tests/fixtures/openhands-1.2.1/` is one conversation the real CLI wrote,
//! resumed).
//!
//! - A session is the directory's events in their number's order; its main file is its
//!   `event-00001-…` (the first prompt, so that `ls` finds the title in its head; the event
//!   with the lowest number when there is none), and its working directory is
//!   `base_state.json`'s `workspace.working_dir`.
//! - Ids: the event's `id`, with `:reasoning`, `:thought` or `:call` for the records of an
//!   action. Times carry no zone (the writer's local time): records have none unless one does.
//! - Read: `MessageEvent` (`llm_message`: the user's prompt or the agent's answer, its
//!   reasoning), `ActionEvent` (its thought, reasoning and tool call: `tool_name`,
//!   `tool_call_id`, the model's `tool_call.arguments` as sent, `security_risk` among them),
//!   `ObservationEvent` (`observation.content`; `is_error`, or a command's non-zero
//!   `metadata.exit_code`, makes it an error), `UserRejectObservation` and `AgentErrorEvent`
//!   (failed results), `PauseEvent`, `ConversationErrorEvent`, `Condensation` and
//!   `CondensationSummaryEvent` (notices).
//! - Skipped on purpose ([`SKIPPED_EVENTS`]): the system prompt and its tools, a condensation
//!   request, token ids and state updates. Any other kind, and a known event without the
//!   fields it needs, count as not understood.
//! - A file is written in place (opened, then written): one caught empty or cut short is not
//!   yet an event, and neither is one after a gap in the numbers; the records stop before it
//!   (`pending_tail`) until it is whole. A `base_state.json` caught mid-write stops them too.
//! - Model: `base_state.json`'s `agent.llm.model`, on the agent's records. Usage is not read:
//!   the state keeps it by response, written after the events, and starts it again on resume.
//! - The CLI records no release of its own. `openhands --resume <uuid>` resumes; no variable
//!   moves the home.

use serde_json::Value;

use crate::SourceCtx;
use crate::harness::{Format, PatchEnvelope, Source, ToolVocabulary};
use crate::records::{Out, image_placeholder, json_arguments, stamp_model, str_of};
use crate::rows::RowRecords;
use crate::session::{SessionFile, session_file, valid_id};
use clankie_model::{DefaultHome, FileEntry, Layout, ListSpec, Storage, TextKind};

/// OpenHands CLI.
pub(super) struct OpenHands;

/// OpenHands's tools: `terminal` (`command`); `file_editor` (`command` of `view`, `create`,
/// `str_replace`, `insert` or `undo_edit`; `path`; `old_str`/`new_str`; `file_text`).
static TOOLS: ToolVocabulary = ToolVocabulary {
    shell_tools: &["terminal"],
    command_keys: &["command"],
    path_keys: &["path"],
    snippet_keys: &[("old_str", "new_str")],
    replace_all_keys: &[],
    edit_list_keys: &[],
    write_tool_marks: &[],
    content_keys: &["file_text"],
    patch_tools: &[],
    patch_keys: &[],
    patch_envelope: &PatchEnvelope::NONE,
    ..ToolVocabulary::NONE
};

static LAYOUT: Layout = Layout {
    name: "openhands",
    // `~/.openhands`: the CLI takes no variable for it.
    default_home: DefaultHome {
        env_var: None,
        env_relative: "",
        home_relative: ".openhands",
    },
    // `conversations/<id>/base_state.json` and `conversations/<id>/events/event-*.json`.
    list: ListSpec {
        subdirs: &["conversations"],
        suffixes: &[".json"],
        max_depth: 2,
        top_files: &[],
    },
    db_env: None,
    storage: Storage::Tree,
    id_globs: &[
        "conversations/{id}*/events/event-00001-*.json",
        "conversations/{id}*/events/event-00000-*.json",
    ],
};

/// The newest OpenHands CLI this reader is tested against (docs/harnesses.md).
const TESTED: super::Tested = super::Tested {
    product: "OpenHands CLI",
    version: "1.2.1",
};

/// Events read as nothing, on purpose: the system prompt and the tools offered (every
/// conversation starts with it, tens of KiB), a request to condense (its result is read),
/// a model's raw token ids, and a change of the conversation's state.
const SKIPPED_EVENTS: &[&str] = &[
    "SystemPromptEvent",
    "CondensationRequest",
    "TokenEvent",
    "ConversationStateUpdateEvent",
];

/// The state document beside the events.
const BASE_STATE: &str = "base_state.json";

/// What a file of a conversation's directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TreeFile<'f> {
    /// `conversations/<id>/base_state.json`
    State { conversation: &'f str },
    /// `conversations/<id>/events/event-<index>-<event id>.json`
    Event { conversation: &'f str, index: u64 },
}

impl<'f> TreeFile<'f> {
    fn of(entry: &'f FileEntry) -> Option<TreeFile<'f>> {
        let rel = std::str::from_utf8(&entry.rel).ok()?;
        match rel.split('/').collect::<Vec<_>>().as_slice() {
            ["conversations", conversation, name] if *name == BASE_STATE => {
                valid_id(conversation).then_some(TreeFile::State { conversation })
            }
            ["conversations", conversation, "events", name] => {
                let rest = name.strip_prefix("event-")?.strip_suffix(".json")?;
                let (index, event) = rest.split_once('-')?;
                let numbered = index.len() >= 5 && index.bytes().all(|b| b.is_ascii_digit());
                (numbered && valid_id(conversation) && valid_id(event)).then_some(TreeFile::Event {
                    conversation,
                    index: index.parse().ok()?,
                })
            }
            _ => None,
        }
    }
}

/// The files of one listing, by conversation.
struct Tree<'f> {
    /// Conversation id → its state document, and its events by number.
    conversations: std::collections::BTreeMap<&'f str, Conversation<'f>>,
}

#[derive(Default)]
struct Conversation<'f> {
    state: Option<&'f FileEntry>,
    events: std::collections::BTreeMap<u64, &'f FileEntry>,
}

impl<'f> Tree<'f> {
    fn of(files: impl Iterator<Item = &'f FileEntry>) -> Tree<'f> {
        let mut conversations: std::collections::BTreeMap<&str, Conversation<'_>> =
            Default::default();
        for entry in files {
            match TreeFile::of(entry) {
                Some(TreeFile::State { conversation }) => {
                    conversations.entry(conversation).or_default().state = Some(entry);
                }
                Some(TreeFile::Event {
                    conversation,
                    index,
                }) => {
                    // Two files of one number: the first listed (the CLI never writes two).
                    conversations
                        .entry(conversation)
                        .or_default()
                        .events
                        .entry(index)
                        .or_insert(entry);
                }
                None => {}
            }
        }
        Tree { conversations }
    }
}

impl Conversation<'_> {
    /// The file a session is listed as: its event 1, else its first event; none without events.
    fn main(&self) -> Option<&FileEntry> {
        self.events
            .get(&1)
            .or_else(|| self.events.values().next())
            .copied()
    }
}

impl Format for OpenHands {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    fn source(&self, _entry: &FileEntry) -> Source {
        Source::Tree
    }

    /// Each conversation with at least one event, as its main file with the size of all its
    /// files and the newest mtime among them.
    fn tree_sessions(&self, files: &[&FileEntry]) -> Vec<SessionFile> {
        let tree = Tree::of(files.iter().copied());
        tree.conversations
            .iter()
            .filter_map(|(id, conversation)| {
                let mut whole = conversation.main()?.clone();
                whole.size = 0;
                for file in conversation
                    .state
                    .iter()
                    .chain(conversation.events.values())
                {
                    whole.size += file.size;
                    whole.mtime = whole.mtime.max(file.mtime);
                }
                session_file(&whole, id, None)
            })
            .collect()
    }

    /// The state document first, then the events in their number's order.
    fn tree_files<'f>(&self, files: &'f [FileEntry], id: &str) -> Vec<&'f FileEntry> {
        let tree = Tree::of(files.iter());
        let Some(conversation) = tree.conversations.get(id) else {
            return Vec::new();
        };
        conversation
            .state
            .into_iter()
            .chain(conversation.events.values().copied())
            .collect()
    }

    fn parse_tree(&self, ctx: &SourceCtx, files: &[(&FileEntry, Vec<u8>)]) -> RowRecords {
        let mut rows = RowRecords::default();
        let mut model = None;
        let mut expected = 0;
        for (entry, bytes) in files {
            let cut_short =
                bytes.iter().all(u8::is_ascii_whitespace) || super::json_cut_short(bytes);
            match TreeFile::of(entry) {
                Some(TreeFile::State { .. }) => {
                    if cut_short {
                        rows.pending = true;
                        rows.records.clear();
                        rows.unknown.clear();
                        return rows;
                    }
                    model = serde_json::from_slice::<Value>(bytes)
                        .ok()
                        .and_then(|state| {
                            state
                                .pointer("/agent/llm/model")
                                .and_then(Value::as_str)
                                .filter(|m| !m.is_empty())
                                .map(str::to_string)
                        });
                }
                Some(TreeFile::Event { index, .. }) => {
                    // A gap (a file not listed yet) or a file being written: not yet.
                    if index != expected || cut_short {
                        rows.pending = true;
                        break;
                    }
                    expected += 1;
                    match serde_json::from_slice::<Value>(bytes) {
                        Ok(event) => event_records(ctx, &event, model.as_deref(), &mut rows),
                        Err(e) => {
                            let name = String::from_utf8_lossy(&entry.rel).into_owned();
                            let mut out = Out::new(ctx, None);
                            out.text(
                                format!("event-{index:05}"),
                                TextKind::Notice,
                                format!("event file {name} is not JSON ({e}); skipped"),
                            );
                            rows.records.extend(out.records);
                            rows.malformed.push((name, e.to_string()));
                        }
                    }
                }
                None => {}
            }
        }
        rows
    }

    /// The head of the session's main file: its first prompt, when that event is one.
    fn native_title(&self, head: &[u8]) -> Option<String> {
        let event: Value = serde_json::from_slice(head).ok()?;
        (str_of(&event, "kind") == "MessageEvent" && str_of(&event, "source") == "user")
            .then(|| content_text(event.pointer("/llm_message/content"), &mut 0))
    }

    /// `base_state.json`, beside the `events/` directory of the main file.
    fn cwd_file(&self) -> Option<&'static str> {
        Some("../base_state.json")
    }

    /// `workspace.working_dir` of the state document, even when the head cuts it (a large
    /// agent comes first).
    fn session_cwd(&self, head: &[u8]) -> Option<String> {
        let at = head.windows(12).position(|w| w == b"\"workspace\":")? + 12;
        let mut stream = serde_json::Deserializer::from_slice(&head[at..]).into_iter::<Value>();
        let workspace = stream.next()?.ok()?;
        workspace
            .get("working_dir")
            .and_then(Value::as_str)
            .map(str::to_string)
    }

    fn tool_vocabulary(&self) -> &'static ToolVocabulary {
        &TOOLS
    }

    fn tested(&self) -> Option<&'static super::Tested> {
        Some(&TESTED)
    }

    /// `openhands --resume` takes the conversation's UUID with its dashes.
    fn resume_command(&self, id: &str, _path: &str) -> String {
        format!(
            "openhands --resume {}",
            crate::resume::shell_quote(&dashed(id))
        )
    }
}

/// A UUID written without dashes (32 hex digits) with them; anything else as it is.
fn dashed(id: &str) -> String {
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return id.to_string();
    }
    format!(
        "{}-{}-{}-{}-{}",
        &id[..8],
        &id[8..12],
        &id[12..16],
        &id[16..20],
        &id[20..]
    )
}

/// The time of an event, when it says its zone (the CLI writes local time without one).
fn zoned(ts: &str) -> Option<String> {
    let time = ts.split_once('T')?.1;
    let zoned = time.ends_with('Z') || time.contains('+') || time.contains('-');
    zoned.then(|| ts.to_string())
}

/// The records of one event, into `rows`.
fn event_records(ctx: &SourceCtx, event: &Value, model: Option<&str>, rows: &mut RowRecords) {
    let ts = event
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(zoned);
    let mut out = Out::new(ctx, ts);
    let id = str_of(event, "id");
    let kind = str_of(event, "kind");
    if id.is_empty() {
        // An event without its id: a renamed field.
        rows.unknown_here();
        return;
    }
    match kind {
        "MessageEvent" => message(&mut out, id, event),
        "ActionEvent" => action(&mut out, id, event),
        "ObservationEvent" => match event.get("observation") {
            Some(observation) => {
                let output = text_in(&mut out, observation.get("content"));
                let exit = observation
                    .pointer("/metadata/exit_code")
                    .and_then(Value::as_i64);
                let failed = observation.get("is_error").and_then(Value::as_bool) == Some(true)
                    || exit.is_some_and(|code| code > 0);
                out.result(id.into(), str_of(event, "tool_call_id"), output, failed);
            }
            None => out.unknown(),
        },
        "UserRejectObservation" => out.result(
            id.into(),
            str_of(event, "tool_call_id"),
            format!(
                "rejected by the user: {}",
                str_of(event, "rejection_reason")
            ),
            true,
        ),
        "AgentErrorEvent" => out.result(
            id.into(),
            str_of(event, "tool_call_id"),
            str_of(event, "error").to_string(),
            true,
        ),
        "PauseEvent" => out.text(id.into(), TextKind::Notice, "paused by the user".into()),
        "ConversationErrorEvent" => out.text(
            id.into(),
            TextKind::Notice,
            format!(
                "conversation error {}: {}",
                str_of(event, "code"),
                str_of(event, "detail")
            ),
        ),
        "Condensation" => {
            let forgotten = event
                .get("forgotten_event_ids")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let mut text =
                format!("context condensed: {forgotten} events left out of the model's view");
            if let Some(summary) = event.get("summary").and_then(Value::as_str) {
                text.push_str(": ");
                text.push_str(summary);
            }
            out.text(id.into(), TextKind::Notice, text);
        }
        "CondensationSummaryEvent" => out.text(
            id.into(),
            TextKind::Notice,
            format!(
                "summary of the condensed context: {}",
                str_of(event, "summary")
            ),
        ),
        kind if SKIPPED_EVENTS.contains(&kind) => {}
        // An event kind newer than this reader.
        _ => out.unknown(),
    }
    if str_of(event, "source") == "agent" {
        stamp_model(&mut out.records, model, None);
    }
    // What it did not understand stands after the event's own records.
    rows.records.extend(out.records);
    for _ in 0..out.unknown {
        rows.unknown_here();
    }
}

/// A message of the user or the agent, with the agent's reasoning before its text.
fn message(out: &mut Out<'_>, id: &str, event: &Value) {
    let Some(message) = event.get("llm_message") else {
        out.unknown();
        return;
    };
    let kind = match str_of(message, "role") {
        "assistant" => TextKind::Assistant,
        "user" => TextKind::User,
        "system" => TextKind::Notice,
        _ => {
            out.unknown();
            return;
        }
    };
    reasoning(out, id, message);
    let text = text_in(out, message.get("content"));
    out.text(id.into(), kind, text);
}

/// An agent's action: its reasoning, its thought (the text before the call), and the call.
fn action(out: &mut Out<'_>, id: &str, event: &Value) {
    reasoning(out, id, event);
    let thought = text_in(out, event.get("thought"));
    out.text(format!("{id}:thought"), TextKind::Assistant, thought);
    let name = str_of(event, "tool_name");
    let call_id = str_of(event, "tool_call_id");
    // The arguments as the model sent them; without the call, the action the CLI made.
    let input = match event.get("tool_call") {
        Some(call) => json_arguments(call.get("arguments")),
        None => event.get("action").cloned().unwrap_or(Value::Null),
    };
    if name.is_empty() || call_id.is_empty() || input.is_null() {
        out.unknown();
        return;
    }
    out.call(format!("{id}:call"), call_id, name, input);
}

/// Reasoning the model returned with a message or an action: its `reasoning_content`, and
/// its thinking blocks.
fn reasoning(out: &mut Out<'_>, id: &str, holder: &Value) {
    let mut text: Vec<String> = Vec::new();
    if let Some(content) = holder.get("reasoning_content").and_then(Value::as_str) {
        text.push(content.to_string());
    }
    for block in holder
        .get("thinking_blocks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match str_of(block, "type") {
            "thinking" => text.push(str_of(block, "thinking").to_string()),
            "redacted_thinking" => text.push("[redacted thinking]".into()),
            _ => out.unknown(),
        }
    }
    out.text(
        format!("{id}:reasoning"),
        TextKind::Thinking,
        text.join("\n"),
    );
}

/// The text of a content list (`[{type: text, text}, {type: image, image_urls}]`), its parts
/// on lines of their own; `unknown` counts the parts of another kind.
fn content_text(content: Option<&Value>, unknown: &mut u32) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| match str_of(part, "type") {
                "text" => Some(str_of(part, "text").to_string()),
                "image" => Some(
                    part.get("image_urls")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(image_placeholder)
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
                // A part newer than this reader.
                _ => {
                    *unknown += 1;
                    None
                }
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// [`content_text`] into `out`, counting what it does not read there.
fn text_in(out: &mut Out<'_>, content: Option<&Value>) -> String {
    let mut unknown = 0;
    let text = content_text(content, &mut unknown);
    out.unknown += unknown;
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use clankie_model::{RecordBody, RecordKind};
    use std::sync::Arc;

    const CONVERSATION: &str = "6e26241cf9b84e659e7a57a77e9b7a80";

    fn entry(rel: &str, size: u64, mtime: i64) -> FileEntry {
        FileEntry {
            harness: test_support::harness("openhands"),
            root: Arc::from(&b"/h/.openhands"[..]),
            rel: rel.as_bytes().to_vec(),
            size,
            mtime,
            inode: None,
            ctime: None,
        }
    }

    fn event_rel(index: u64, id: &str) -> String {
        format!("conversations/{CONVERSATION}/events/event-{index:05}-{id}.json")
    }

    const STATE: &str = r#"{"id":"6e26241c-f9b8-4e65-9e7a-57a77e9b7a80","agent":{"kind":"Agent","llm":{"model":"openai/compat-model","api_key":"**********"}},"workspace":{"kind":"LocalWorkspace","working_dir":"/w/project"},"execution_status":"finished"}"#;

    /// One turn as 1.2.1 writes it: system prompt, prompt, action, observation, answer.
    fn events() -> Vec<(String, String)> {
        vec![
            (
                event_rel(0, "e0"),
                r#"{"kind":"SystemPromptEvent","id":"e0","timestamp":"2026-12-06T05:41:34.302195","source":"agent","system_prompt":{"type":"text","text":"You are OpenHands agent"},"tools":[]}"#.into(),
            ),
            (
                event_rel(1, "e1"),
                r#"{"kind":"MessageEvent","id":"e1","timestamp":"2026-12-06T05:41:34.321262","source":"user","llm_message":{"role":"user","content":[{"type":"text","text":"run the marker command"}]},"activated_skills":[],"extended_content":[]}"#.into(),
            ),
            (
                event_rel(2, "e2"),
                r#"{"kind":"ActionEvent","id":"e2","timestamp":"2026-12-06T05:41:40.505610","source":"agent","thought":[{"type":"text","text":"I will run it."}],"thinking_blocks":[],"action":{"kind":"ExecuteBashAction","command":"echo hi"},"tool_name":"terminal","tool_call_id":"call_1","tool_call":{"id":"call_1","name":"terminal","arguments":"{\"command\": \"echo hi\", \"security_risk\": \"LOW\"}","origin":"completion"},"llm_response_id":"r1","security_risk":"LOW"}"#.into(),
            ),
            (
                event_rel(3, "e3"),
                r#"{"kind":"ObservationEvent","id":"e3","timestamp":"2026-12-06T05:41:57.038772","source":"environment","tool_name":"terminal","tool_call_id":"call_1","observation":{"kind":"ExecuteBashObservation","content":[{"type":"text","text":"hi"}],"is_error":false,"metadata":{"exit_code":0}},"action_id":"e2"}"#.into(),
            ),
            (
                event_rel(4, "e4"),
                r#"{"kind":"MessageEvent","id":"e4","timestamp":"2026-12-06T05:41:57.253657","source":"agent","llm_message":{"role":"assistant","content":[{"type":"text","text":"It printed hi."}],"reasoning_content":"Done."},"llm_response_id":"r2"}"#.into(),
            ),
        ]
    }

    fn parse(files: &[(String, String)]) -> RowRecords {
        let entries: Vec<FileEntry> = files
            .iter()
            .map(|(rel, text)| entry(rel, text.len() as u64, 1))
            .collect();
        let pairs: Vec<(&FileEntry, Vec<u8>)> = entries
            .iter()
            .zip(files)
            .map(|(e, (_, text))| (e, text.clone().into_bytes()))
            .collect();
        OpenHands.parse_tree(
            &test_support::ctx(test_support::harness("openhands")),
            &pairs,
        )
    }

    fn with_state(mut events: Vec<(String, String)>) -> Vec<(String, String)> {
        events.insert(
            0,
            (
                format!("conversations/{CONVERSATION}/base_state.json"),
                STATE.into(),
            ),
        );
        events
    }

    #[test]
    fn a_turn_reads_as_prompt_thought_call_result_and_answer() {
        let rows = parse(&with_state(events()));
        assert!(!rows.pending && rows.unknown.is_empty(), "{rows:?}");
        assert_eq!(
            test_support::summary(&rows.records),
            [
                ("e1".to_string(), RecordKind::User),
                ("e2:thought".to_string(), RecordKind::Assistant),
                ("e2:call".to_string(), RecordKind::ToolCall),
                ("e3".to_string(), RecordKind::ToolResult),
                ("e4:reasoning".to_string(), RecordKind::Assistant),
                ("e4".to_string(), RecordKind::Assistant),
            ]
        );
        match &rows.records[2].body {
            RecordBody::ToolCall {
                call_id,
                name,
                input,
                ..
            } => {
                assert_eq!((call_id.as_str(), name.as_str()), ("call_1", "terminal"));
                assert_eq!(
                    input,
                    &serde_json::json!({"command": "echo hi", "security_risk": "LOW"})
                );
            }
            other => panic!("{other:?}"),
        }
        match &rows.records[3].body {
            RecordBody::ToolResult {
                call_id,
                output,
                is_error,
            } => assert_eq!(
                (call_id.as_str(), output.as_str(), *is_error),
                ("call_1", "hi", false)
            ),
            other => panic!("{other:?}"),
        }
        // The model on the agent's records; the writer's local times have no zone.
        assert_eq!(
            rows.records[1].model.as_deref(),
            Some("openai/compat-model")
        );
        assert_eq!(rows.records[0].model, None);
        assert!(rows.records.iter().all(|r| r.ts.is_none()));
    }

    #[test]
    fn an_event_being_written_or_after_a_gap_stops_the_records() {
        let mut torn = events();
        torn[3].1.truncate(40);
        let rows = parse(&torn);
        assert!(rows.pending);
        assert_eq!(rows.records.len(), 3, "{rows:?}");
        let mut empty = events();
        empty[4].1.clear();
        assert!(parse(&empty).pending);
        let mut gap = events();
        gap.remove(2);
        let rows = parse(&gap);
        assert!(rows.pending);
        assert_eq!(test_support::summary(&rows.records).len(), 1);
        // A state document caught mid-write: nothing yet.
        let mut state = with_state(events());
        state[0].1.truncate(30);
        let rows = parse(&state);
        assert!(rows.pending && rows.records.is_empty());
    }

    #[test]
    fn failures_unknown_kinds_and_parts_are_told() {
        let mut files = events();
        files[3].1 = files[3].1.replace("\"exit_code\":0", "\"exit_code\":2");
        files.push((
            event_rel(5, "e5"),
            r#"{"kind":"AgentErrorEvent","id":"e5","source":"agent","tool_name":"terminal","tool_call_id":"call_2","error":"bad args"}"#.into(),
        ));
        files.push((
            event_rel(6, "e6"),
            r#"{"kind":"DriftEvent","id":"e6","source":"agent"}"#.into(),
        ));
        files.push((
            event_rel(7, "e7"),
            r#"{"kind":"MessageEvent","id":"e7","source":"agent","llm_message":{"role":"assistant","content":[{"type":"drift"},{"type":"text","text":"ok"}]}}"#.into(),
        ));
        let rows = parse(&files);
        let errors: Vec<bool> = rows
            .records
            .iter()
            .filter_map(|r| match &r.body {
                RecordBody::ToolResult { is_error, .. } => Some(*is_error),
                _ => None,
            })
            .collect();
        assert_eq!(errors, [true, true]);
        assert_eq!(rows.unknown.len(), 2, "{:?}", rows.unknown);
        assert_eq!(rows.records.last().unwrap().id, "e7");
    }

    #[test]
    fn a_conversation_is_one_session_listed_as_its_first_prompt() {
        let mut files = vec![entry(
            &format!("conversations/{CONVERSATION}/base_state.json"),
            100,
            9,
        )];
        for (i, (rel, text)) in events().iter().enumerate() {
            files.push(entry(rel, text.len() as u64, i as i64));
        }
        // Not a conversation's file: no session, nothing of one.
        files.push(entry("conversations/x/events/notes.json", 5, 50));
        let refs: Vec<&FileEntry> = files.iter().collect();
        let sessions = OpenHands.tree_sessions(&refs);
        let [session] = sessions.as_slice() else {
            panic!("{sessions:?}")
        };
        assert_eq!(session.id, CONVERSATION);
        assert_eq!(session.entry.rel, event_rel(1, "e1").as_bytes());
        let total: u64 = 100 + events().iter().map(|(_, t)| t.len() as u64).sum::<u64>();
        assert_eq!((session.entry.size, session.entry.mtime), (total, 9));
        let read: Vec<&[u8]> = OpenHands
            .tree_files(&files, CONVERSATION)
            .iter()
            .map(|f| &f.rel[..])
            .collect();
        assert_eq!(read.len(), 6);
        assert!(read[0].ends_with(b"base_state.json"));
        assert_eq!(
            OpenHands.native_title(events()[1].1.as_bytes()).as_deref(),
            Some("run the marker command")
        );
        assert_eq!(OpenHands.native_title(events()[2].1.as_bytes()), None);
    }

    #[test]
    fn cwd_and_resume() {
        // The working directory even when the head cuts the document after it.
        let head = &STATE.as_bytes()[..STATE.find("execution_status").unwrap()];
        assert_eq!(OpenHands.session_cwd(head).as_deref(), Some("/w/project"));
        assert_eq!(
            OpenHands.resume_command(CONVERSATION, "/p"),
            "openhands --resume 6e26241c-f9b8-4e65-9e7a-57a77e9b7a80"
        );
    }
}
