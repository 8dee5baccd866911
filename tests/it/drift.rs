//! Drift is loud: for every harness of the registry, a real transcript (tests/fixtures; grok-cli,
//! which has none, its hand-made database) read as written and with an unknown entry type, an
//! unknown content-block kind and a renamed field planted in it. The planted read counts them
//! on its page (`unknown`), says so in text, exits 6 under `--strict`, and gives the records
//! around them unchanged. A harness added to the registry without a case here fails the test.
//! Also: a non-empty source that gives no record is a notice.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::support::{code, ndjson, page, records, run, stderr};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// One session to read twice: as written, then planted.
struct Case {
    /// What the case reads (for messages).
    name: String,
    home: tempfile::TempDir,
    /// `--root HARNESS=DIR`, when the harness's default home is not used.
    root: Option<String>,
    harness: String,
    /// Plants the drift into the session's files under `home`; how many things it planted that
    /// the harness's reader cannot read.
    plant: Box<dyn Fn(&Path) -> u32>,
}

impl Case {
    fn args<'a>(&'a self, rest: &[&'a str]) -> Vec<&'a str> {
        let mut args = Vec::new();
        if let Some(root) = &self.root {
            args.extend(["--root", root.as_str()]);
        }
        args.extend_from_slice(rest);
        args
    }

    /// The case's one session, as `local:HARNESS/ID`.
    fn target(&self) -> String {
        let out = run(
            self.home.path(),
            &self.args(&["ls", "--json", "--harness", &self.harness]),
        );
        assert_eq!(code(&out), 0, "{}: {}", self.name, stderr(&out));
        let sessions = ndjson(&out);
        assert_eq!(sessions.len(), 1, "{}: {sessions:?}", self.name);
        format!(
            "local:{}/{}",
            self.harness,
            sessions[0]["session"].as_str().unwrap()
        )
    }
}

/// A home holding `files` (relative to tests/fixtures/`from`) under `root` of the home.
fn copied(from: &str, files: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("root");
    for file in files {
        let to = root.join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(fixture(&format!("{from}/{file}")), &to).unwrap();
    }
    (home, root)
}

fn lines_of(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn write_lines(path: &Path, lines: &[Value]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// How a transcript of JSON lines is planted: the unknown entry, the line given an unknown
/// content block (the first that `block_line` accepts, at `block_path`), and the line copied
/// with a field renamed (the first `rename_line` accepts: `from` → `to` at the top, its id
/// key set to a fresh id).
struct LinePlan {
    entry: Value,
    block_line: fn(&Value) -> bool,
    block_path: &'static str,
    block: Value,
    rename_line: fn(&Value) -> bool,
    rename: (&'static str, &'static str),
    fresh_id: Option<(&'static str, &'static str)>,
    /// Keys dropped from the renamed copy (a second field that would stand in for it).
    drop: &'static [&'static str],
}

/// Plants a [`LinePlan`] into the JSON lines at `path`: the new lines go in the middle.
fn plant_lines(path: &Path, plan: &LinePlan) -> u32 {
    let mut lines = lines_of(path);
    let block_at = lines
        .iter()
        .position(plan.block_line)
        .unwrap_or_else(|| panic!("{}: no line for the block", path.display()));
    let target = lines[block_at].pointer_mut(plan.block_path).unwrap();
    match target {
        Value::Array(items) => items.push(plan.block.clone()),
        // A content given as a string becomes the same text as a part, then the block.
        Value::String(text) => *target = json!([{"text": text.clone()}, plan.block.clone()]),
        other => panic!("{}: cannot plant a block into {other}", path.display()),
    }
    let mut renamed = lines
        .iter()
        .find(|l| (plan.rename_line)(l))
        .unwrap_or_else(|| panic!("{}: no line to rename", path.display()))
        .clone();
    let map = renamed.as_object_mut().unwrap();
    let value = map.remove(plan.rename.0).unwrap();
    map.insert(plan.rename.1.to_string(), value);
    if let Some((key, id)) = plan.fresh_id {
        map.insert(key.to_string(), json!(id));
    }
    for key in plan.drop {
        map.remove(*key);
    }
    let mid = lines.len() / 2;
    lines.insert(mid, renamed);
    lines.insert(mid, plan.entry.clone());
    write_lines(path, &lines);
    3
}

/// Plants a [`LinePlan`] into the array under `key` of the JSON document at `path`, its items
/// taken as lines.
fn plant_document(path: &Path, key: &str, plan: &LinePlan) -> u32 {
    let mut doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let items = doc[key].take();
    let lines_path = path.with_extension("lines");
    write_lines(&lines_path, items.as_array().unwrap());
    let planted = plant_lines(&lines_path, plan);
    doc[key] = Value::Array(lines_of(&lines_path));
    std::fs::remove_file(&lines_path).unwrap();
    std::fs::write(path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    planted
}

fn is_type(line: &Value, ty: &str) -> bool {
    line["type"] == ty
}

/// A JSON-lines case: `files` of tests/fixtures/`from`, the first one planted by `plan`.
fn lines_case(harness: &str, from: &str, files: &[&str], plan: LinePlan) -> Case {
    let (home, root) = copied(from, files);
    let planted = root.join(files[0]);
    Case {
        name: format!("{harness} {from}/{}", files[0]),
        root: Some(format!("{harness}={}", root.display())),
        home,
        harness: harness.to_string(),
        plant: Box::new(move |_| plant_lines(&planted, &plan)),
    }
}

fn sqlite3(db: &Path, sql: &str) {
    let status = Command::new("sqlite3")
        .arg(db)
        .arg(sql)
        .status()
        .expect("the sqlite3 CLI (installed by .ci/install-deps)");
    assert!(status.success(), "{sql}");
}

/// The cases of one harness of the registry: a real transcript each, and how to plant it.
fn cases(harness: &str) -> Vec<Case> {
    match harness {
        "claude" => vec![lines_case(
            harness,
            "claude-code-2.1.332",
            &["projects/-compat-project/7859452f-ede6-4d17-bc8f-81d08b87b59e.jsonl"],
            LinePlan {
                entry: json!({"type": "drift-entry-kind", "uuid": "drift-entry", "sessionId": "7859452f-ede6-4d17-bc8f-81d08b87b59e"}),
                block_line: |l| is_type(l, "assistant") && l["message"]["content"].is_array(),
                block_path: "/message/content",
                block: json!({"type": "drift_block", "data": "?"}),
                rename_line: |l| is_type(l, "user") && l["message"]["content"].is_string(),
                rename: ("message", "mesage"),
                fresh_id: Some(("uuid", "drift-renamed")),
                drop: &[],
            },
        )],
        "codex" => vec![lines_case(
            harness,
            "codex-0.171.0",
            &[
                "sessions/2026/12/01/rollout-2026-12-01T11-17-51-01a23153-4790-7660-8b79-1ac09239b292.jsonl",
            ],
            LinePlan {
                entry: json!({"timestamp": "2026-12-01T11:17:52.000Z", "type": "drift_entry_kind", "payload": {}}),
                block_line: |l| {
                    is_type(l, "response_item")
                        && l["payload"]["type"] == "message"
                        && l["payload"]["role"] == "assistant"
                },
                block_path: "/payload/content",
                block: json!({"type": "drift_block"}),
                rename_line: |l| is_type(l, "response_item") && l["payload"]["type"] == "message",
                rename: ("payload", "payload_v2"),
                fresh_id: None,
                drop: &[],
            },
        )],
        "pi" => vec![lines_case(
            harness,
            "pi-0.73.1",
            &[
                "sessions/--compat-project--/2026-12-01T11-17-41-237Z_01a23153-20f4-7763-ada7-12a9044fc8ee.jsonl",
            ],
            LinePlan {
                entry: json!({"type": "drift_entry_kind", "id": "drift001", "timestamp": "2026-12-01T11:17:42.000Z"}),
                block_line: |l| is_type(l, "message") && l["message"]["role"] == "assistant",
                block_path: "/message/content",
                block: json!({"type": "drift_block"}),
                rename_line: |l| is_type(l, "message") && l["message"]["role"] == "user",
                rename: ("message", "msg"),
                fresh_id: Some(("id", "drift002")),
                drop: &[],
            },
        )],
        "grok" => {
            let dir = "sessions/%2Ftmp%2Fas-agent-lab%2Fgrok%2Fproject/019f6851-7ec4-7ef0-97d3-03f3eee38755";
            vec![lines_case(
                harness,
                "grok",
                &[
                    &format!("{dir}/chat_history.jsonl"),
                    &format!("{dir}/summary.json"),
                ],
                LinePlan {
                    entry: json!({"type": "drift_entry_kind"}),
                    // Not injected context (which is skipped whole).
                    block_line: |l| {
                        is_type(l, "user")
                            && l["content"].is_array()
                            && l["synthetic_reason"].is_null()
                    },
                    block_path: "/content",
                    block: json!({"type": "drift_block"}),
                    rename_line: |l| {
                        is_type(l, "user")
                            && l["content"].is_array()
                            && l["synthetic_reason"].is_null()
                    },
                    rename: ("content", "contents"),
                    fresh_id: None,
                    drop: &[],
                },
            )]
        }
        "gemini" => {
            let plan = || LinePlan {
                entry: json!({"id": "drift-entry", "type": "drift_entry_kind", "timestamp": "2026-12-01T10:54:30.000Z"}),
                block_line: |l| {
                    is_type(l, "user")
                        && (l["content"].is_string()
                            || l["content"][0]["text"].is_string()
                            || l["content"]["text"].is_string())
                },
                block_path: "/content",
                block: json!({"driftPart": {"x": 1}}),
                rename_line: |l| is_type(l, "user"),
                rename: ("content", "parts"),
                fresh_id: Some(("id", "drift-renamed")),
                drop: &["displayContent"],
            };
            let mut jsonl = lines_case(
                harness,
                "gemini-cli-0.61.0",
                &[
                    "tmp/project/chats/session-2026-12-01T10-54-8f60115e.jsonl",
                    "tmp/project/.project_root",
                ],
                plan(),
            );
            jsonl.name.push_str(" (lines)");
            // The legacy whole-document session: its messages planted the same way.
            let file = "tmp/fixtures/chats/session-2026-04-29T21-00-legacysm.json";
            let (home, root) = copied("gemini", &[file, "tmp/fixtures/.project_root"]);
            let path = root.join(file);
            let document = Case {
                name: format!("gemini gemini/{file} (document)"),
                root: Some(format!("gemini={}", root.display())),
                home,
                harness: harness.to_string(),
                plant: Box::new(move |_| {
                    let mut doc: Value =
                        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
                    let messages = doc["messages"].take();
                    let lines_path = path.with_extension("lines");
                    write_lines(&lines_path, messages.as_array().unwrap());
                    let planted = plant_lines(&lines_path, &plan());
                    doc["messages"] = Value::Array(lines_of(&lines_path));
                    std::fs::remove_file(&lines_path).unwrap();
                    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
                    planted
                }),
            };
            vec![jsonl, document]
        }
        "opencode" => {
            let home = tempfile::tempdir().unwrap();
            let dir = home.path().join(".local/share/opencode");
            std::fs::create_dir_all(&dir).unwrap();
            let db = dir.join("opencode.db");
            let dump = fixture("opencode/opencode-1.18.33.sql");
            sqlite3(&db, &format!(".read {}", dump.display()));
            vec![Case {
                name: "opencode opencode/opencode-1.18.33.sql".into(),
                home,
                root: None,
                harness: harness.to_string(),
                plant: Box::new(move |_| {
                    let session = "ses_f0de500f8ffeXvsiYJDOg5JtrU";
                    sqlite3(
                        &db,
                        &format!(
                            "INSERT INTO message VALUES('msg_0f21aff2e001zzzzzzzzzzzzz1','{session}',1790768250671,1790768250671,'{{\"role\":\"drift-role\",\"time\":{{\"created\":1790768250671}}}}');
                             INSERT INTO message VALUES('msg_0f21aff2e001zzzzzzzzzzzzz2','{session}',1790768250672,1790768250672,'{{\"rolle\":\"user\",\"time\":{{\"created\":1790768250672}}}}');
                             INSERT INTO part VALUES('prt_0f21aff33001zzzzzzzzzzzzz1','msg_0f21aff2e001y84CAhBLtC5Dm9','{session}',1790768251130,1790768251130,'{{\"type\":\"drift-part\"}}');"
                        ),
                    );
                    3
                }),
            }]
        }
        "kilo" => {
            let home = tempfile::tempdir().unwrap();
            let dir = home.path().join(".local/share/kilo");
            std::fs::create_dir_all(&dir).unwrap();
            let db = dir.join("kilo.db");
            let dump = fixture("kilo-7.7.7/kilo.sql");
            sqlite3(&db, &format!(".read {}", dump.display()));
            vec![Case {
                name: "kilo kilo-7.7.7/kilo.sql".into(),
                home,
                root: None,
                harness: harness.to_string(),
                // After the session's last message: one of an unknown role, one without its
                // role; and a part of an unknown type in its first assistant message.
                plant: Box::new(move |_| {
                    sqlite3(
                        &db,
                        "INSERT INTO message SELECT 'msg_zzzzzzzzzzzzzzzzzzzzzzzzz1', session_id, max(time_created) + 1, max(time_created) + 1, '{\"role\":\"drift-role\",\"time\":{\"created\":1}}' FROM message;
                         INSERT INTO message SELECT 'msg_zzzzzzzzzzzzzzzzzzzzzzzzz2', session_id, max(time_created) + 2, max(time_created) + 2, '{\"rolle\":\"user\",\"time\":{\"created\":2}}' FROM message;
                         INSERT INTO part SELECT 'prt_zzzzzzzzzzzzzzzzzzzzzzzzz1', id, session_id, time_created, time_created, '{\"type\":\"drift-part\"}' FROM message WHERE data LIKE '%\"role\":\"assistant\"%' ORDER BY time_created, id LIMIT 1;",
                    );
                    3
                }),
            }]
        }
        "grok-cli" => {
            // No real grok-cli transcript exists here (it is not on the npm registry): its
            // hand-made database stands in.
            let home = tempfile::tempdir().unwrap();
            let dir = home.path().join(".grok");
            std::fs::create_dir_all(&dir).unwrap();
            let db = dir.join("grok.db");
            sqlite3(&db, crate::sqlite::GROK_DDL);
            vec![Case {
                name: "grok-cli (hand-made database)".into(),
                home,
                root: None,
                harness: harness.to_string(),
                plant: Box::new(move |_| {
                    sqlite3(
                        &db,
                        "UPDATE messages SET message_json = '{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Listing.\"},{\"type\":\"tool-call\",\"toolCallId\":\"call_9\",\"toolName\":\"bash\",\"input\":{\"command\":\"ls\"}},{\"type\":\"drift-part\"}]}' WHERE seq = 1;
                         INSERT INTO messages VALUES ('0a1b2c3d4e5f', 3, 'drift', '{\"role\":\"drift\",\"content\":[{\"type\":\"text\",\"text\":\"?\"}]}', '2026-11-02T10:00:03.000Z');
                         INSERT INTO messages VALUES ('0a1b2c3d4e5f', 4, 'user', '{\"role\":\"user\",\"contents\":\"renamed\"}', '2026-11-02T10:00:04.000Z');",
                    );
                    3
                }),
            }]
        }
        "terminal" => {
            // An asciinema event of an unknown code; a recording has no content blocks or
            // named fields to rename.
            let (home, root) = copied("terminal", &["v3.cast"]);
            std::fs::create_dir_all(root.join("casts")).unwrap();
            let path = root.join("casts/v3.cast");
            std::fs::rename(root.join("v3.cast"), &path).unwrap();
            vec![Case {
                name: "terminal terminal/v3.cast".into(),
                root: Some(format!("terminal={}", root.display())),
                home,
                harness: harness.to_string(),
                plant: Box::new(move |_| {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let mut lines: Vec<&str> = text.lines().collect();
                    lines.insert(3, r#"[0.0, "z", "drift"]"#);
                    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
                    1
                }),
            }]
        }
        "copilot" => vec![lines_case(
            harness,
            "copilot-1.0.102",
            &[
                "session-state/b8a67622-abfc-4674-841e-f3fb689a3154/events.jsonl",
                "session-state/b8a67622-abfc-4674-841e-f3fb689a3154/workspace.yaml",
            ],
            LinePlan {
                entry: json!({"type": "drift.entry_kind", "data": {}, "id": "drift-entry", "timestamp": "2026-12-06T00:20:00.000Z"}),
                block_line: |l| {
                    is_type(l, "assistant.message")
                        && l["data"]["toolRequests"]
                            .as_array()
                            .is_some_and(|r| !r.is_empty())
                },
                block_path: "/data/toolRequests",
                block: json!({"type": "drift_request", "toolCallId": "drift-call", "name": "bash", "arguments": {}}),
                rename_line: |l| is_type(l, "user.message"),
                rename: ("data", "payload"),
                fresh_id: Some(("id", "drift-renamed")),
                drop: &[],
            },
        )],
        "droid" => vec![lines_case(
            harness,
            "droid-0.225.1",
            &[
                "sessions/-compat-project/9cc2e2ac-30fd-455f-88c2-6317dc8fe643.jsonl",
                "sessions/-compat-project/9cc2e2ac-30fd-455f-88c2-6317dc8fe643.settings.json",
            ],
            LinePlan {
                entry: json!({"type": "drift_entry_kind", "id": "drift-entry", "timestamp": "2026-12-06T00:47:50.000Z"}),
                block_line: |l| is_type(l, "message") && l["message"]["role"] == "assistant",
                block_path: "/message/content",
                block: json!({"type": "drift_block"}),
                // A prompt, not the context Droid sends in the user's name.
                rename_line: |l| {
                    is_type(l, "message")
                        && l["message"]["role"] == "user"
                        && !l["id"].as_str().unwrap_or("").starts_with("context-")
                },
                rename: ("message", "msg"),
                fresh_id: Some(("id", "drift-renamed")),
                drop: &[],
            },
        )],
        "qwen" => vec![lines_case(
            harness,
            "qwen-0.24.4",
            &["projects/-compat-project/chats/a897da87-0c01-4883-995c-54fdbc25e6f2.jsonl"],
            LinePlan {
                entry: json!({"type": "drift_entry_kind", "uuid": "drift-entry", "timestamp": "2026-12-06T01:31:36.000Z"}),
                block_line: |l| is_type(l, "assistant") && l["message"]["parts"].is_array(),
                block_path: "/message/parts",
                block: json!({"driftPart": {"x": 1}}),
                rename_line: |l| is_type(l, "user"),
                rename: ("message", "msg"),
                fresh_id: Some(("uuid", "drift-renamed")),
                drop: &[],
            },
        )],
        "kimi" => {
            // The wire's events have no arrays to plant a block in: the unknown part comes as
            // an event of its own.
            let dir = "sessions/bac215266cfbffecfe4e7184be52e595";
            let session = std::fs::read_dir(fixture(&format!("kimi-1.51.0/{dir}")))
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .file_name();
            let file = format!("{dir}/{}/wire.jsonl", session.to_str().unwrap());
            let (home, root) = copied("kimi-1.51.0", &[file.as_str()]);
            let path = root.join(&file);
            vec![Case {
                name: format!("kimi kimi-1.51.0/{file}"),
                root: Some(format!("kimi={}", root.display())),
                home,
                harness: harness.to_string(),
                plant: Box::new(move |_| {
                    let mut lines = lines_of(&path);
                    let mut renamed = lines
                        .iter()
                        .find(|l| l["message"]["type"] == "TurnBegin")
                        .unwrap()
                        .clone();
                    let value = renamed["message"]["payload"]["user_input"].take();
                    renamed["message"]["payload"]["input"] = value;
                    let mid = lines.len() / 2;
                    lines.insert(mid, renamed);
                    lines.insert(mid, json!({"timestamp": 1796528291.5, "message": {"type": "ContentPart", "payload": {"type": "drift_part"}}}));
                    lines.insert(mid, json!({"timestamp": 1796528291.5, "message": {"type": "DriftEvent", "payload": {}}}));
                    write_lines(&path, &lines);
                    3
                }),
            }]
        }
        "openhands" => {
            // One file per event: the planted ones are events after the last, each of its own
            // file (an unknown kind; an answer whose only part is of an unknown kind; an
            // observation whose `observation` is renamed).
            let dir = std::fs::read_dir(fixture("openhands-1.2.1/conversations"))
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .file_name();
            let dir = format!("conversations/{}", dir.to_str().unwrap());
            let mut files = vec![format!("{dir}/base_state.json")];
            for event in
                std::fs::read_dir(fixture(&format!("openhands-1.2.1/{dir}/events"))).unwrap()
            {
                let name = event.unwrap().file_name();
                files.push(format!("{dir}/events/{}", name.to_str().unwrap()));
            }
            let refs: Vec<&str> = files.iter().map(String::as_str).collect();
            let (home, root) = copied("openhands-1.2.1", &refs);
            let events = root.join(&dir).join("events");
            vec![Case {
                name: format!("openhands openhands-1.2.1/{dir}"),
                root: Some(format!("openhands={}", root.display())),
                home,
                harness: harness.to_string(),
                plant: Box::new(move |_| {
                    let count = std::fs::read_dir(&events).unwrap().count();
                    let observation = std::fs::read_dir(&events)
                        .unwrap()
                        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
                        .find(|text| text.contains("\"kind\": \"ObservationEvent\""))
                        .unwrap();
                    let mut renamed: Value = serde_json::from_str(&observation).unwrap();
                    let inner = renamed["observation"].take();
                    renamed.as_object_mut().unwrap().remove("observation");
                    renamed["obs"] = inner;
                    renamed["id"] = json!("d0000000-0000-4000-8000-000000000003");
                    let planted = [
                        json!({"kind": "DriftEvent", "id": "d0000000-0000-4000-8000-000000000001", "timestamp": "2026-12-06T06:00:00.000000", "source": "agent"}),
                        json!({"kind": "MessageEvent", "id": "d0000000-0000-4000-8000-000000000002", "timestamp": "2026-12-06T06:00:01.000000", "source": "agent", "llm_message": {"role": "assistant", "content": [{"type": "drift_part"}]}}),
                        renamed,
                    ];
                    for (i, event) in planted.iter().enumerate() {
                        let name = format!(
                            "event-{:05}-{}.json",
                            count + i,
                            event["id"].as_str().unwrap()
                        );
                        std::fs::write(events.join(name), event.to_string()).unwrap();
                    }
                    3
                }),
            }]
        }
        "kimi-code" => {
            let dir =
                "sessions/wd_project_4ce322e1a64c/session_80d38fc3-fb2a-498c-bce6-a07681573a37";
            vec![lines_case(
                harness,
                "kimi-code-2.1.0",
                &[
                    &format!("{dir}/agents/main/wire.jsonl"),
                    &format!("{dir}/state.json"),
                ],
                LinePlan {
                    entry: json!({"type": "drift.entry_kind", "agentId": "main", "time": 1796527586000_i64}),
                    block_line: |l| {
                        is_type(l, "context.append_message")
                            && l["message"]["origin"]["kind"] == "user"
                    },
                    block_path: "/message/content",
                    block: json!({"type": "drift_part"}),
                    rename_line: |l| {
                        is_type(l, "context.append_message")
                            && l["message"]["origin"]["kind"] == "user"
                    },
                    rename: ("message", "msg"),
                    fresh_id: None,
                    drop: &[],
                },
            )]
        }
        "cline" => {
            let dir = "sessions/1796519374410_97c6t";
            let file = format!("{dir}/1796519374410_97c6t.messages.json");
            let (home, root) = copied(
                "cline-3.0.65",
                &[&file, &format!("{dir}/1796519374410_97c6t.json")],
            );
            let path = root.join(&file);
            vec![Case {
                name: format!("cline cline-3.0.65/{file}"),
                root: Some(format!("cline={}", root.display())),
                home,
                harness: harness.to_string(),
                plant: Box::new(move |_| {
                    plant_document(
                        &path,
                        "messages",
                        &LinePlan {
                            entry: json!({"id": "drift-entry", "role": "drift-role", "content": [], "ts": 1796519375000_i64}),
                            block_line: |l| l["role"] == "assistant" && l["content"].is_array(),
                            block_path: "/content",
                            block: json!({"type": "drift_block"}),
                            rename_line: |l| {
                                l["role"] == "user" && l["content"][0]["type"] == "text"
                            },
                            rename: ("content", "contents"),
                            fresh_id: Some(("id", "drift-renamed")),
                            drop: &[],
                        },
                    )
                }),
            }]
        }
        "continue" => {
            // History items are identified by their index: the drift goes after them.
            let file = "sessions/e37d3067-df04-454c-b89d-c167e3b21c10.json";
            let (home, root) = copied("continue-1.5.47", &[file, "sessions/sessions.json"]);
            let path = root.join(file);
            vec![Case {
                name: format!("continue continue-1.5.47/{file}"),
                root: Some(format!("continue={}", root.display())),
                home,
                harness: harness.to_string(),
                plant: Box::new(move |_| {
                    let mut doc: Value =
                        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
                    let history = doc["history"].as_array_mut().unwrap();
                    let assistant = history
                        .iter_mut()
                        .find(|item| item["message"]["role"] == "assistant")
                        .unwrap();
                    let text = assistant["message"]["content"].take();
                    assistant["message"]["content"] =
                        json!([{"type": "text", "text": text}, {"type": "drift_part"}]);
                    history.push(json!({"message": {"role": "drift-role", "content": "?"}, "contextItems": []}));
                    history.push(json!({"mesage": {"role": "user", "content": "renamed"}, "contextItems": []}));
                    std::fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
                    3
                }),
            }]
        }
        "aider" => {
            // Markdown has no entry types, blocks or field names: the drift is a header of
            // aider's own it does not write yet, after the last run.
            let file = ".aider.chat.history.md";
            let (home, root) = copied("aider-0.86.2/project", &[file]);
            let path = root.join(file);
            vec![Case {
                name: format!("aider aider-0.86.2/project/{file}"),
                root: Some(format!("aider={}", root.display())),
                home,
                harness: harness.to_string(),
                plant: Box::new(move |_| {
                    let text = std::fs::read_to_string(&path).unwrap();
                    std::fs::write(
                        &path,
                        format!("{text}\n# aider chat resumed at 2026-12-06 03:30:00\n\n"),
                    )
                    .unwrap();
                    1
                }),
            }]
        }
        other => panic!(
            "harness `{other}` has no drift case: add one to tests/it/drift.rs (a real transcript, and where to plant an unknown entry, content block and renamed field)"
        ),
    }
}

/// A record compared across the two reads: ids made of byte offsets move with the planted
/// lines, so they are left out.
fn comparable(record: &Value) -> Value {
    let mut record = record.clone();
    if record["id"].as_str().is_some_and(|id| id.contains('@')) {
        record.as_object_mut().unwrap().remove("id");
    }
    record
}

/// Records other than notices (a planted block may be shown as a notice of its own).
fn conversation(records: &[Value]) -> Vec<Value> {
    records
        .iter()
        .filter(|r| r["kind"] != "notice")
        .map(comparable)
        .collect()
}

#[test]
fn planted_drift_is_counted_shown_and_strict_for_every_harness() {
    let mut covered = Vec::new();
    for harness in clankie_engine::harness::all() {
        for case in cases(harness.name()) {
            let target = case.target();
            let all = |extra: &[&str]| {
                let mut rest = vec!["read", target.as_str(), "--all"];
                rest.extend_from_slice(extra);
                run(case.home.path(), &case.args(&rest))
            };
            let before = all(&["--json"]);
            assert_eq!(code(&before), 0, "{}: {}", case.name, stderr(&before));
            let before = ndjson(&before);
            assert!(
                page(&before).get("unknown").is_none(),
                "{}: the real transcript reads whole: {}",
                case.name,
                page(&before)
            );
            let strict = all(&["--json", "--strict"]);
            assert_eq!(code(&strict), 0, "{}: {}", case.name, stderr(&strict));

            let planted = (case.plant)(case.home.path());
            let after = all(&["--json"]);
            assert_eq!(code(&after), 0, "{}: {}", case.name, stderr(&after));
            let after = ndjson(&after);
            assert_eq!(
                page(&after)["unknown"],
                planted,
                "{}: {}",
                case.name,
                page(&after)
            );
            // The records around the planted drift are read as before.
            assert_eq!(
                conversation(&records(&after)),
                conversation(&records(&before)),
                "{}",
                case.name
            );
            let notices = |recs: &[Value]| -> Vec<Value> {
                recs.iter()
                    .filter(|r| r["kind"] == "notice")
                    .map(comparable)
                    .collect()
            };
            let after_notices = notices(&records(&after));
            for notice in notices(&records(&before)) {
                assert!(after_notices.contains(&notice), "{}: {notice}", case.name);
            }
            // Text says it, dim, once for the page.
            let text = all(&[]);
            assert_eq!(code(&text), 0, "{}: {}", case.name, stderr(&text));
            let entries = if planted == 1 { "entry" } else { "entries" };
            let line = format!(
                "-- {planted} {entries} of a kind this version does not read (--strict fails)"
            );
            let stdout = String::from_utf8_lossy(&text.stdout);
            assert_eq!(stdout.matches(&line).count(), 1, "{}:\n{stdout}", case.name);
            let strict = all(&["--json", "--strict"]);
            assert_eq!(code(&strict), 6, "{}: {}", case.name, stderr(&strict));
            assert!(
                stderr(&strict).contains("of a kind this version does not read"),
                "{}: {}",
                case.name,
                stderr(&strict)
            );
            covered.push(case.name);
        }
    }
    assert!(
        covered.len() >= clankie_engine::harness::all().count(),
        "{covered:?}"
    );
}

#[test]
fn a_source_that_gives_no_record_is_a_notice_and_strict_fails() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("root");
    let dir = root.join("projects/-p");
    std::fs::create_dir_all(&dir).unwrap();
    // Only entries read and skipped on purpose: understood, yet nothing to show.
    std::fs::write(
        dir.join("0199a8f2-1c3d-7e4f-8a9b-0c1d2e3f4a5b.jsonl"),
        "{\"type\":\"summary\",\"summary\":\"t\",\"leafUuid\":\"l\"}\n{\"type\":\"last-prompt\"}\n",
    )
    .unwrap();
    let root_arg = format!("claude={}", root.display());
    let target = "local:claude/0199a8f2";
    for mode in ["--tail", "--all", "--head"] {
        let out = run(
            home.path(),
            &["--root", &root_arg, "read", target, mode, "--json"],
        );
        assert_eq!(code(&out), 0, "{mode}: {}", stderr(&out));
        let recs = records(&ndjson(&out));
        assert_eq!(recs.len(), 1, "{mode}: {recs:?}");
        assert_eq!(recs[0]["kind"], "notice");
        assert!(
            recs[0]["text"]
                .as_str()
                .unwrap()
                .contains("gave no record this version reads"),
            "{}",
            recs[0]
        );
    }
    let strict = run(
        home.path(),
        &["--root", &root_arg, "read", target, "--strict"],
    );
    assert_eq!(code(&strict), 6, "{}", stderr(&strict));
    // An entry of no known kind: counted too.
    std::fs::write(
        dir.join("0199a8f2-1c3d-7e4f-8a9b-0c1d2e3f4a5b.jsonl"),
        "{\"type\":\"brand-new\"}\n",
    )
    .unwrap();
    let out = run(
        home.path(),
        &["--root", &root_arg, "read", target, "--json"],
    );
    let lines = ndjson(&out);
    assert_eq!(page(&lines)["unknown"], 1);
    assert_eq!(records(&lines).len(), 1);
}

#[test]
fn a_session_written_by_a_newer_release_gives_one_hint_and_ls_long_its_version() {
    let file = "sessions/2026/12/01/rollout-2026-12-01T11-17-51-01a23153-4790-7660-8b79-1ac09239b292.jsonl";
    let (home, root) = copied("codex-0.171.0", &[file]);
    let root_arg = format!("codex={}", root.display());
    let target = "local:codex/01a23153-4790";
    let ls = |home: &Path| {
        let out = run(
            home,
            &[
                "--root",
                &root_arg,
                "ls",
                "--json",
                "--long",
                "--harness",
                "codex",
            ],
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        ndjson(&out)[0]["writer_version"].clone()
    };
    // The tested release: its version listed, nothing said.
    assert_eq!(ls(home.path()), "0.171.0");
    let out = run(home.path(), &["--root", &root_arg, "read", target, "--all"]);
    assert_eq!(code(&out), 0);
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    // A newer one: one line on stderr, however many pages; the output and status unchanged.
    let path = root.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replacen(
            "\"cli_version\":\"0.171.0\"",
            "\"cli_version\":\"0.180.2\"",
            1,
        ),
    )
    .unwrap();
    assert_eq!(ls(home.path()), "0.180.2");
    let hint = "clankie-read: hint: codex session written by Codex 0.180.2, tested up to 0.171.0: report what looks wrong\n";
    for args in [
        vec!["read", target, "--all", "--json"],
        vec!["read", target, "--tail", "2"],
    ] {
        let mut all = vec!["--root", root_arg.as_str()];
        all.extend(args);
        let out = run(home.path(), &all);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(stderr(&out), hint);
    }
    // Paged one record at a time over --since, each run says it once.
    let first = run(
        home.path(),
        &["--root", &root_arg, "read", target, "--head", "1", "--json"],
    );
    let cursor = page(&ndjson(&first))["cursor"]
        .as_str()
        .unwrap()
        .to_string();
    let next = run(
        home.path(),
        &[
            "--root", &root_arg, "read", target, "--since", &cursor, "--json",
        ],
    );
    assert_eq!(stderr(&next), hint);
}

/// The table of docs/harnesses.md and the harness modules name the same tested releases: the
/// first version of its "versions the suite passes" column is the module's `TESTED`.
#[test]
fn docs_tested_versions_are_the_modules_data() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/harnesses.md"))
            .unwrap();
    let mut checked = 0;
    for harness in clankie_engine::harness::all() {
        let row = doc.lines().find(|l| {
            l.starts_with(&format!("| `{}` |", harness.name()))
                || l.starts_with(&format!("| `{}` |", harness.name().replace('-', "")))
        });
        let tested = clankie_engine::harness::tested(harness);
        let Some(row) = row else {
            assert!(
                tested.is_none(),
                "{}: tested but not in the table",
                harness.name()
            );
            continue;
        };
        let column = row.split('|').nth(3).unwrap().trim();
        let first = column
            .split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .find(|w| w.contains('.'));
        assert_eq!(
            first,
            tested.map(|t| t.version),
            "{}: docs/harnesses.md says `{column}`",
            harness.name()
        );
        checked += 1;
    }
    assert!(checked >= 5, "{checked}");
}

/// For each harness read from files whose skipped entries are plain to write: a session of
/// only those (understood, yet nothing to show) is the notice and fails `--strict`.
#[test]
fn a_session_of_skipped_entries_only_is_a_notice_for_the_file_harnesses() {
    let id = "0199a8f2-1c3d-7e4f-8a9b-0c1d2e3f4a5b";
    let cases: &[(&str, String, &str)] = &[
        (
            "copilot",
            format!("session-state/{id}/events.jsonl"),
            "{\"type\":\"session.start\",\"data\":{\"sessionId\":\"s\",\"context\":{\"cwd\":\"/p\"}},\"id\":\"e\"}\n",
        ),
        (
            "droid",
            format!("sessions/-p/{id}.jsonl"),
            "{\"type\":\"session_start\",\"id\":\"s\",\"title\":\"t\",\"cwd\":\"/p\"}\n",
        ),
        (
            "qwen",
            format!("projects/-p/chats/{id}.jsonl"),
            "{\"uuid\":\"u\",\"type\":\"system\",\"subtype\":\"x\",\"version\":\"0.24.4\"}\n",
        ),
        (
            "cline",
            "sessions/1796519374410_97c6t/1796519374410_97c6t.messages.json".to_string(),
            "{\"version\":1,\"messages\":[]}",
        ),
        (
            "continue",
            format!("sessions/{id}.json"),
            "{\"sessionId\":\"s\",\"title\":\"t\",\"history\":[{\"message\":{\"role\":\"system\",\"content\":\"You are\"}}]}",
        ),
    ];
    for (harness, rel, text) in cases {
        let home = tempfile::tempdir().unwrap();
        let root = home.path().join("root");
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        let case = Case {
            name: format!("{harness} {rel}"),
            root: Some(format!("{harness}={}", root.display())),
            home,
            harness: harness.to_string(),
            plant: Box::new(|_| 0),
        };
        let target = case.target();
        let out = run(
            case.home.path(),
            &case.args(&["read", &target, "--all", "--json"]),
        );
        assert_eq!(code(&out), 0, "{}: {}", case.name, stderr(&out));
        let recs = records(&ndjson(&out));
        assert_eq!(recs.len(), 1, "{}: {recs:?}", case.name);
        assert_eq!(recs[0]["kind"], "notice", "{}", case.name);
        assert!(
            recs[0]["text"]
                .as_str()
                .unwrap()
                .contains("gave no record this version reads"),
            "{}: {}",
            case.name,
            recs[0]
        );
        let strict = run(
            case.home.path(),
            &case.args(&["read", &target, "--all", "--strict"]),
        );
        assert_eq!(code(&strict), 6, "{}: {}", case.name, stderr(&strict));
    }
}
