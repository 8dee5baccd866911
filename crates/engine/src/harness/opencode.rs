//! OpenCode: where its `opencode.db` lives, its tools and its resume command; the database's
//! rows (1.2+, the `session` / `message` / `part` tables) are read by [`message_parts`], shared
//! with the forks that write the same schema. Sessions from before 1.2 are a tree of JSON files
//! under `storage/` (`session/<project>/<ses>.json`, `message/<ses>/<msg>.json`,
//! `part/<msg>/<prt>.json`): each file is a row of the same shape, its id in its name (as
//! OpenCode's own migration takes it), mapped by the same code. A session in both the database
//! and the tree is read from the database.

use serde_json::Value;

use crate::SourceCtx;
use crate::database::{Database, IndexRead, QueryError, SessionRow};
use crate::harness::message_parts::{self, MessageRow, PartRow, records_until};
use crate::harness::{Format, PatchEnvelope, Source, ToolRole, ToolVocabulary};
use crate::rows::RowRecords;
use crate::session::{SessionFile, session_file, valid_id};
use clankie_model::Storage;
use clankie_model::{DefaultHome, FileEntry, Layout, ListSpec};

/// OpenCode.
pub(super) struct OpenCode;

/// OpenCode's tools: `bash`; `edit` and `multiedit` (`filePath`, `oldString`/`newString`,
/// `replaceAll`, `edits`); `write`; and Codex's `apply_patch` envelope under `patchText`.
/// Its file tools: `read` (`offset` counts from 0), `grep`, `glob`, `list`, `task`, `webfetch`,
/// `websearch`.
static TOOLS: ToolVocabulary = ToolVocabulary {
    shell_tools: &["bash"],
    command_keys: &["command"],
    path_keys: &["filePath"],
    snippet_keys: &[("oldString", "newString")],
    replace_all_keys: &["replaceAll"],
    edit_list_keys: &["edits"],
    write_tool_marks: &["write"],
    content_keys: &["content"],
    patch_tools: &["apply_patch"],
    patch_keys: &["patchText"],
    patch_envelope: &PatchEnvelope::APPLY_PATCH,
    roles: &[
        ("read", ToolRole::Read),
        ("grep", ToolRole::Search),
        ("glob", ToolRole::Glob),
        ("list", ToolRole::List),
        ("task", ToolRole::Agent),
        ("webfetch", ToolRole::Fetch),
        ("websearch", ToolRole::WebSearch),
    ],
    first_line_keys: &["offset"],
    first_line_base: 0,
    line_count_keys: &["limit"],
    pattern_keys: &["pattern", "query"],
    dir_keys: &["path"],
    file_filter_keys: &["include"],
    description_keys: &["description"],
    prompt_keys: &["prompt"],
    agent_type_keys: &["subagent_type"],
    url_keys: &["url"],
    ..ToolVocabulary::NONE
};

static LAYOUT: Layout = Layout {
    name: "opencode",
    // `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode` (Linux and macOS).
    default_home: DefaultHome {
        env_var: Some("XDG_DATA_HOME"),
        env_relative: "opencode",
        home_relative: ".local/share/opencode",
    },
    // The database and its WAL in the data dir itself (or where `OPENCODE_DB` says), and the
    // JSON tree of older versions: `storage/{session,message,part}/<dir>/<id>.json` (its other
    // folders, `project/`, `todo/`, `session_diff/`, are listed too and not read).
    // TODO(#8): `opencode-<channel>.db`, `OPENCODE_DB` in the PowerShell list script.
    list: ListSpec {
        subdirs: &["storage"],
        suffixes: &[".json"],
        max_depth: 2,
        top_files: &["opencode.db", "opencode.db-wal"],
    },
    db_env: Some("OPENCODE_DB"),
    storage: Storage::DatabaseAndTree,
    id_globs: &["storage/session/*/{id}*.json"],
};

/// What a file of the JSON tree is: `storage/<kind>/<dir>/<id>.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TreeFile<'f> {
    /// `storage/session/<project>/<ses>.json`
    Session { id: &'f str },
    /// `storage/message/<ses>/<msg>.json`
    Message { session: &'f str, id: &'f str },
    /// `storage/part/<msg>/<prt>.json`
    Part { message: &'f str, id: &'f str },
}

impl<'f> TreeFile<'f> {
    fn of(entry: &'f FileEntry) -> Option<TreeFile<'f>> {
        let rel = std::str::from_utf8(&entry.rel).ok()?;
        let mut parts = rel.split('/');
        let (Some("storage"), Some(kind), Some(dir), Some(file), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return None;
        };
        let id = file.strip_suffix(".json").filter(|id| valid_id(id))?;
        match kind {
            "session" => Some(TreeFile::Session { id }),
            "message" if valid_id(dir) => Some(TreeFile::Message { session: dir, id }),
            "part" if valid_id(dir) => Some(TreeFile::Part { message: dir, id }),
            _ => None,
        }
    }
}

/// The newest OpenCode this reader is tested against (docs/harnesses.md).
const TESTED: super::Tested = super::Tested {
    product: "OpenCode",
    version: "1.18.33",
};

impl Format for OpenCode {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    /// 2.x sessions (`session_v2`) win over the 1.x `session` rows of the same id; a child
    /// session (task tool) is a subagent.
    fn database_sessions(&self, db: &dyn Database) -> Result<Vec<SessionRow>, QueryError> {
        message_parts::sessions(db)
    }

    fn database_records(
        &self,
        db: &dyn Database,
        ctx: &SourceCtx,
    ) -> Result<RowRecords, QueryError> {
        message_parts::records_of(db, ctx)
    }

    fn database_newest_records(
        &self,
        db: &dyn Database,
        ctx: &SourceCtx,
        limit: usize,
    ) -> Result<RowRecords, QueryError> {
        message_parts::newest_records(db, ctx, limit)
    }

    fn database_newest_hint<'a>(&self, id: &'a str, limit: usize) -> Option<IndexRead<'a>> {
        Some(message_parts::newest_hint(id, limit))
    }

    fn database_cwd(&self, db: &dyn Database, id: &str) -> Result<Option<String>, QueryError> {
        message_parts::cwd(db, id)
    }

    fn database_title(&self, db: &dyn Database, id: &str) -> Result<Option<String>, QueryError> {
        message_parts::title(db, id)
    }

    /// A file of the JSON tree is a document; the rest (the database) is rows.
    fn source(&self, entry: &FileEntry) -> Source {
        if TreeFile::of(entry).is_some() {
            Source::Tree
        } else {
            Source::Database
        }
    }

    /// Each `storage/session/<project>/<ses>.json`, with its messages and their parts.
    fn tree_sessions(&self, files: &[&FileEntry]) -> Vec<SessionFile> {
        let tree = Tree::of(files.iter().copied());
        tree.sessions
            .iter()
            .filter_map(|(id, entry)| {
                let mut whole = (*entry).clone();
                for file in tree.files_of(id).into_iter().skip(1) {
                    whole.size += file.size;
                    whole.mtime = whole.mtime.max(file.mtime);
                }
                session_file(&whole, id, None)
            })
            .collect()
    }

    fn tree_files<'f>(&self, files: &'f [FileEntry], id: &str) -> Vec<&'f FileEntry> {
        Tree::of(files.iter()).files_of(id)
    }

    /// Messages and parts as the database has them: a message's id and time from its file,
    /// a part's id and message from its path. OpenCode rewrites a file in place on every
    /// update, so one caught mid-write (empty, or JSON cut short) is not yet a record: the
    /// records stop before it (`pending_tail`) until it is whole; other bad JSON is a notice.
    fn parse_tree(&self, ctx: &SourceCtx, files: &[(&FileEntry, Vec<u8>)]) -> RowRecords {
        let mut messages = Vec::new();
        let mut parts = Vec::new();
        let mut torn = std::collections::HashSet::new();
        for (entry, bytes) in files {
            let data = String::from_utf8_lossy(bytes).into_owned();
            let cut_short = bytes.iter().all(u8::is_ascii_whitespace)
                || serde_json::from_slice::<serde::de::IgnoredAny>(bytes)
                    .is_err_and(|e| e.is_eof());
            match TreeFile::of(entry) {
                Some(TreeFile::Message { id, .. }) => {
                    if cut_short {
                        torn.insert(id.to_string());
                    }
                    // A message being written has no time yet: it goes last, where new ones are.
                    let time_created = serde_json::from_str::<Value>(&data)
                        .ok()
                        .and_then(|v| v.pointer("/time/created").and_then(Value::as_i64))
                        .unwrap_or(if cut_short { i64::MAX } else { 0 });
                    messages.push(MessageRow {
                        id: id.to_string(),
                        time_created,
                        data,
                    });
                }
                Some(TreeFile::Part { message, id }) => {
                    if cut_short {
                        torn.insert(id.to_string());
                    }
                    parts.push(PartRow {
                        id: id.to_string(),
                        message_id: message.to_string(),
                        time_created: 0,
                        data,
                    });
                }
                Some(TreeFile::Session { .. }) | None => {}
            }
        }
        messages.sort_by(|a, b| (a.time_created, &a.id).cmp(&(b.time_created, &b.id)));
        // A part without times of its own is stamped with its message's (as the database's
        // rows are, when the tree is migrated).
        let created: std::collections::HashMap<&str, i64> = messages
            .iter()
            .map(|m| (m.id.as_str(), m.time_created))
            .collect();
        for part in &mut parts {
            part.time_created = created.get(part.message_id.as_str()).copied().unwrap_or(0);
        }
        records_until(ctx, &messages, &parts, &torn)
    }

    /// A session document of the JSON tree (`{id, directory, …}`); database sessions have
    /// theirs in their row.
    fn session_cwd(&self, head: &[u8]) -> Option<String> {
        let session: Value = serde_json::from_slice(head).ok()?;
        session
            .get("directory")
            .and_then(Value::as_str)
            .map(str::to_string)
    }

    /// The release is in its database rows, not read for `ls`.
    fn tested(&self) -> Option<&'static super::Tested> {
        Some(&TESTED)
    }

    fn tool_vocabulary(&self) -> &'static ToolVocabulary {
        &TOOLS
    }

    fn resume_command(&self, id: &str, _path: &str) -> String {
        format!("opencode --session {}", crate::resume::shell_quote(id))
    }
}

/// The JSON tree's files of one listing, by what they are.
struct Tree<'f> {
    /// Session id → its file (the first listed when a session is in two projects' folders).
    sessions: std::collections::BTreeMap<&'f str, &'f FileEntry>,
    /// Session id → its message files.
    messages: std::collections::HashMap<&'f str, Vec<(&'f str, &'f FileEntry)>>,
    /// Message id → its part files.
    parts: std::collections::HashMap<&'f str, Vec<&'f FileEntry>>,
}

impl<'f> Tree<'f> {
    fn of(files: impl Iterator<Item = &'f FileEntry>) -> Tree<'f> {
        let mut tree = Tree {
            sessions: Default::default(),
            messages: Default::default(),
            parts: Default::default(),
        };
        for entry in files {
            match TreeFile::of(entry) {
                Some(TreeFile::Session { id }) => {
                    tree.sessions.entry(id).or_insert(entry);
                }
                Some(TreeFile::Message { session, id }) => {
                    tree.messages.entry(session).or_default().push((id, entry));
                }
                Some(TreeFile::Part { message, .. }) => {
                    tree.parts.entry(message).or_default().push(entry);
                }
                None => {}
            }
        }
        tree
    }

    /// A session's files: its own, then each message's followed by its parts'.
    fn files_of(&self, id: &str) -> Vec<&'f FileEntry> {
        let Some(session) = self.sessions.get(id) else {
            return Vec::new();
        };
        let mut out = vec![*session];
        for (message, entry) in self.messages.get(id).into_iter().flatten() {
            out.push(entry);
            out.extend(self.parts.get(message).into_iter().flatten().copied());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Format;
    use crate::harness::message_parts::{SessionMessageRow, records, records_v2};
    use clankie_model::TextKind;
    use clankie_model::{RecordBody, RecordKind};

    fn ctx() -> SourceCtx {
        SourceCtx {
            host: "local".into(),
            harness: crate::test_support::harness("opencode"),
            session: "ses_1".into(),
            agent: None,
        }
    }

    fn msg(id: &str, t: i64, data: &str) -> MessageRow {
        MessageRow {
            id: id.into(),
            time_created: t,
            data: data.into(),
        }
    }

    fn part(id: &str, message: &str, data: &str) -> PartRow {
        PartRow {
            id: id.into(),
            message_id: message.into(),
            time_created: 1,
            data: data.into(),
        }
    }

    fn tool(status: &str) -> String {
        format!(
            r#"{{"type":"tool","tool":"bash","callID":"call_1","state":{{"status":"{status}","input":{{"command":"echo x"}},"output":"x\n","time":{{"start":5}}}}}}"#
        )
    }

    fn session(tool_status: &str, completed: bool) -> RowRecords {
        let assistant = if completed {
            r#"{"role":"assistant","time":{"created":2,"completed":9}}"#
        } else {
            r#"{"role":"assistant","time":{"created":2}}"#
        };
        records(
            &ctx(),
            &[
                msg("msg_1", 1, r#"{"role":"user","time":{"created":1}}"#),
                msg("msg_2", 2, assistant),
            ],
            &[
                part("prt_2", "msg_2", r#"{"type":"step-start"}"#),
                part("prt_3", "msg_2", &tool(tool_status)),
                part("prt_1", "msg_1", r#"{"type":"text","text":"run it"}"#),
            ],
        )
    }

    #[test]
    fn a_tool_is_returned_once_it_completed_with_its_result() {
        for status in ["pending", "running"] {
            let rows = session(status, false);
            assert!(rows.pending);
            assert_eq!(rows.records.len(), 1, "{status}");
            assert_eq!(rows.records[0].kind(), RecordKind::User);
        }
        // The message itself has not completed: its model and usage may still change.
        let rows = session("completed", false);
        let kinds: Vec<_> = rows.records.iter().map(|r| r.kind()).collect();
        assert_eq!(kinds, [RecordKind::User]);
        assert!(rows.pending);
        let rows = session("completed", true);
        assert!(!rows.pending);
        let ids: Vec<_> = rows.records.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["prt_1", "prt_3:call", "prt_3:result"]);
        match &rows.records[2].body {
            RecordBody::ToolResult {
                call_id,
                output,
                is_error,
            } => assert_eq!(
                (call_id.as_str(), output.as_str(), *is_error),
                ("call_1", "x\n", false)
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            rows.records[1].ts.as_deref(),
            Some("1970-01-01T00:00:00.005Z")
        );
    }

    fn v2(id: &str, kind: &str, data: &str) -> SessionMessageRow {
        SessionMessageRow {
            id: id.into(),
            kind: kind.into(),
            time_created: 1,
            data: data.into(),
        }
    }

    #[test]
    fn v2_rows_map_by_type_and_a_running_tool_stops_them() {
        let assistant = |status: &str, finish: &str| {
            format!(
                r#"{{"content":[{{"type":"reasoning","text":"hm"}},{{"type":"text","text":"ok"}},{{"type":"tool","name":"bash","callID":"c1","state":{{"status":"{status}","input":{{"command":"ls"}},"content":[{{"type":"text","text":"a\n"}}]}}}}]{finish},"time":{{"created":5}}}}"#
            )
        };
        let rows = |status: &str, finish: &str| {
            vec![
                v2("m1", "user", r#"{"text":"hi","time":{"created":1}}"#),
                v2("m2", "system", r#"{"text":"sys"}"#),
                v2("m3", "assistant", &assistant(status, finish)),
                v2(
                    "m4",
                    "shell",
                    r#"{"command":"pwd","output":{"output":"/w\n"}}"#,
                ),
            ]
        };
        let done = records_v2(&ctx(), &rows("completed", r#","finish":"stop""#));
        assert!(!done.pending);
        let ids: Vec<_> = done.records.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "m1",
                "m3#0",
                "m3#1",
                "m3#2:call",
                "m3#2:result",
                "m4:call",
                "m4:result"
            ]
        );
        assert_eq!(
            done.records[1].body,
            RecordBody::Text {
                kind: TextKind::Thinking,
                text: "hm".into()
            }
        );
        match &done.records[4].body {
            RecordBody::ToolResult {
                call_id,
                output,
                is_error,
            } => {
                assert_eq!(
                    (call_id.as_str(), output.as_str(), *is_error),
                    ("c1", "a\n", false)
                )
            }
            other => panic!("{other:?}"),
        }
        let running = records_v2(&ctx(), &rows("running", ""));
        assert!(running.pending);
        let ids: Vec<_> = running.records.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["m1"], "unfinished text waits too");
        let aborted = records_v2(&ctx(), &rows("running", r#","finish":"aborted""#));
        assert!(!aborted.pending);
        assert_eq!(aborted.records.len(), 7);
    }

    fn tree_file(rel: &str, size: u64, mtime: i64) -> FileEntry {
        FileEntry {
            harness: crate::test_support::harness("opencode"),
            root: b"/h/.local/share/opencode"[..].into(),
            rel: rel.as_bytes().to_vec(),
            size,
            mtime,
            inode: None,
            ctime: None,
        }
    }

    /// A pre-1.2 tree: two sessions, the first with a user message (one text part) and an
    /// assistant message (a tool part and a text part), plus files that are no part of either.
    fn tree() -> Vec<FileEntry> {
        vec![
            tree_file("opencode.db", 4096, 1),
            tree_file("storage/session/prj_1/ses_a.json", 200, 10),
            tree_file("storage/session/global/ses_b.json", 100, 5),
            tree_file("storage/message/ses_a/msg_1.json", 50, 11),
            tree_file("storage/message/ses_a/msg_2.json", 60, 12),
            tree_file("storage/part/msg_1/prt_1.json", 7, 11),
            tree_file("storage/part/msg_2/prt_3.json", 8, 14),
            tree_file("storage/part/msg_2/prt_2.json", 9, 13),
            tree_file("storage/project/prj_1.json", 1000, 99),
            tree_file("storage/todo/ses_a.json", 1000, 99),
            tree_file("storage/part/msg_9/prt_9.json", 1000, 99),
        ]
    }

    #[test]
    fn a_tree_session_is_its_file_its_messages_and_their_parts() {
        let files = tree();
        let all: Vec<&FileEntry> = files.iter().collect();
        let sessions = OpenCode.tree_sessions(&all);
        let listed: Vec<_> = sessions
            .iter()
            .map(|s| (s.id.as_str(), s.entry.size, s.entry.mtime))
            .collect();
        // Sizes are all the session's files; the mtime the newest of them.
        assert_eq!(listed, [("ses_a", 334, 14), ("ses_b", 100, 5)]);
        let rels = |id: &str| -> Vec<String> {
            OpenCode
                .tree_files(&files, id)
                .iter()
                .map(|f| String::from_utf8_lossy(&f.rel).into_owned())
                .collect()
        };
        assert_eq!(
            rels("ses_a"),
            [
                "storage/session/prj_1/ses_a.json",
                "storage/message/ses_a/msg_1.json",
                "storage/part/msg_1/prt_1.json",
                "storage/message/ses_a/msg_2.json",
                "storage/part/msg_2/prt_3.json",
                "storage/part/msg_2/prt_2.json",
            ]
        );
        assert_eq!(rels("ses_b"), ["storage/session/global/ses_b.json"]);
        assert!(rels("ses_zz").is_empty());
        assert_eq!(OpenCode.source(&files[1]), Source::Tree);
        assert_eq!(OpenCode.source(&files[0]), Source::Database);
    }

    #[test]
    fn a_tree_session_reads_like_its_rows() {
        let files = tree();
        let docs = [
            (
                "storage/session/prj_1/ses_a.json",
                r#"{"id":"ses_a","projectID":"prj_1","directory":"/w/it's here","title":"t","version":"1.1.40","time":{"created":1000,"updated":3000}}"#,
            ),
            (
                "storage/message/ses_a/msg_2.json",
                r#"{"id":"msg_2","sessionID":"ses_a","role":"assistant","parentID":"msg_1","time":{"created":2000,"completed":2900}}"#,
            ),
            (
                "storage/message/ses_a/msg_1.json",
                r#"{"id":"msg_1","sessionID":"ses_a","role":"user","time":{"created":1000}}"#,
            ),
            (
                "storage/part/msg_1/prt_1.json",
                r#"{"id":"prt_1","sessionID":"ses_a","messageID":"msg_1","type":"text","text":"run echo"}"#,
            ),
            (
                "storage/part/msg_2/prt_3.json",
                r#"{"id":"prt_3","sessionID":"ses_a","messageID":"msg_2","type":"text","text":"done","time":{"start":2800,"end":2850}}"#,
            ),
            (
                "storage/part/msg_2/prt_2.json",
                r#"{"id":"prt_2","sessionID":"ses_a","messageID":"msg_2","type":"tool","tool":"bash","callID":"call_1","state":{"status":"error","input":{"command":"false"},"error":"exit 1","time":{"start":2100,"end":2200}}}"#,
            ),
        ];
        let read: Vec<(&FileEntry, Vec<u8>)> = docs
            .iter()
            .map(|(rel, doc)| {
                let entry = files.iter().find(|f| f.rel == rel.as_bytes()).unwrap();
                (entry, doc.as_bytes().to_vec())
            })
            .collect();
        let rows = OpenCode.parse_tree(&ctx(), &read);
        assert!(!rows.pending);
        let ids: Vec<_> = rows.records.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["prt_1", "prt_2:call", "prt_2:result", "prt_3"]);
        // A part without times of its own has its message's.
        assert_eq!(
            rows.records[0].ts.as_deref(),
            Some("1970-01-01T00:00:01.000Z")
        );
        assert_eq!(
            rows.records[2].body,
            RecordBody::ToolResult {
                call_id: "call_1".into(),
                output: "exit 1".into(),
                is_error: true
            }
        );
        assert_eq!(
            OpenCode.session_cwd(docs[0].1.as_bytes()).as_deref(),
            Some("/w/it's here")
        );
    }

    #[test]
    fn a_tree_file_caught_mid_write_waits_and_other_bad_json_is_a_notice() {
        let files = tree();
        let entry = |rel: &str| files.iter().find(|f| f.rel == rel.as_bytes()).unwrap();
        let user = r#"{"id":"msg_1","role":"user","time":{"created":1000}}"#;
        let assistant =
            r#"{"id":"msg_2","role":"assistant","time":{"created":2000,"completed":2500}}"#;
        let text =
            |t: &str| format!(r#"{{"type":"text","text":"{t}","time":{{"start":1,"end":2}}}}"#);
        let read = |user: &str, p1: &str, p2: &str, p3: &str| {
            let docs = [
                ("storage/message/ses_a/msg_1.json", user.to_string()),
                ("storage/message/ses_a/msg_2.json", assistant.to_string()),
                ("storage/part/msg_1/prt_1.json", p1.to_string()),
                ("storage/part/msg_2/prt_2.json", p2.to_string()),
                ("storage/part/msg_2/prt_3.json", p3.to_string()),
            ];
            let read: Vec<(&FileEntry, Vec<u8>)> = docs
                .iter()
                .map(|(rel, doc)| (entry(rel), doc.as_bytes().to_vec()))
                .collect();
            let rows = OpenCode.parse_tree(&ctx(), &read);
            let ids: Vec<String> = rows.records.iter().map(|r| r.id.clone()).collect();
            (ids, rows.pending, rows.malformed.len())
        };
        let whole = read(user, &text("hi"), &text("a"), &text("b"));
        assert_eq!(
            whole,
            (
                vec!["prt_1".into(), "prt_2".into(), "prt_3".into()],
                false,
                0
            )
        );
        // A part cut short or emptied by its rewrite: what comes before it, and pending.
        let cut = &text("a")[..20];
        assert_eq!(
            read(user, &text("hi"), cut, &text("b")),
            (vec!["prt_1".into()], true, 0)
        );
        assert_eq!(
            read(user, &text("hi"), &text("a"), ""),
            (vec!["prt_1".into(), "prt_2".into()], true, 0)
        );
        // A message cut short has no time yet: it goes last, where a message being written is,
        // and waits.
        assert_eq!(
            read(&user[..10], &text("hi"), &text("a"), &text("b")),
            (vec!["prt_2".into(), "prt_3".into()], true, 0)
        );
        // JSON that is whole but wrong is a notice and the read goes on.
        let (ids, pending, malformed) = read(user, &text("hi"), "{\"type\":}", &text("b"));
        assert_eq!((ids.len(), pending, malformed), (3, false, 1));
    }

    #[test]
    fn a_command_that_exits_nonzero_is_a_failed_result() {
        let bash = |exit: &str| {
            format!(
                r#"{{"type":"tool","tool":"bash","callID":"c","state":{{"status":"completed","input":{{"command":"x"}},"output":"out","metadata":{{"exit":{exit}}}}}}}"#
            )
        };
        for (exit, failed) in [("2", true), ("0", false), ("null", false)] {
            let rows = records(
                &ctx(),
                &[msg(
                    "msg_1",
                    1,
                    r#"{"role":"assistant","time":{"created":1,"completed":2}}"#,
                )],
                &[part("prt_1", "msg_1", &bash(exit))],
            );
            assert!(
                matches!(&rows.records[1].body, RecordBody::ToolResult { is_error, .. } if *is_error == failed),
                "exit {exit}: {:?}",
                rows.records
            );
        }
    }

    #[test]
    fn a_malformed_row_is_a_notice() {
        let rows = records(&ctx(), &[msg("msg_1", 1, "{torn")], &[]);
        assert_eq!(rows.malformed.len(), 1);
        assert_eq!(rows.records[0].kind(), RecordKind::Notice);
    }
}
