//! OpenCode's storage before 1.2, a tree of JSON files under `storage/` where one session is its
//! session file, its messages' files and their parts' files: `ls` lists each session once with
//! the size of all its files, a read assembles its records (the same locally and over SSH),
//! `--head`/`--since` page through them, files written later come in on the next `--since`,
//! and a session also in the database is the database's. `ls` counts a database's WAL in its
//! sessions' size.

use std::fs;
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::common::sshd::sshd_or_skip;
use crate::support::{BIN, code, ids, ndjson, page, records, run, stderr, without_host};

const SESSION: &str = "ses_7f3c1d2e8ffeA1b2C3d4E5f6G7";
const USER_MSG: &str = "msg_80c3e2d17001AbCdEfGhIjKlMn";
const ASSISTANT_MSG: &str = "msg_80c3e2d9a001OpQrStUvWxYz01";
const EMPTY_SESSION: &str = "ses_7f3c1d00fffeZ9y8X7w6V5u4T3";

/// The files of a pre-1.2 tree as OpenCode 1.1 wrote them (pretty JSON, ids in the names),
/// relative to the data dir: a session with one turn (a prompt; a failed bash call, a passing
/// one and an answer) and an empty session in another project.
fn tree_files() -> Vec<(String, Value)> {
    let part = |message: &str, id: &str, body: Value| {
        let mut doc = json!({"id": id, "sessionID": SESSION, "messageID": message});
        doc.as_object_mut()
            .unwrap()
            .extend(body.as_object().unwrap().clone());
        (format!("storage/part/{message}/{id}.json"), doc)
    };
    // A tool part: its call, and the state it ended in over the input and times every state has.
    let tool = |call: &str, command: &str, end: Value| {
        let mut state = json!({"input": {"command": command},
            "time": {"start": 1_760_000_002_000_i64, "end": 1_760_000_002_500_i64}});
        state
            .as_object_mut()
            .unwrap()
            .extend(end.as_object().unwrap().clone());
        json!({"type": "tool", "tool": "bash", "callID": call, "state": state})
    };
    vec![
        (
            format!("storage/session/0a1b2c3d/{SESSION}.json"),
            json!({"id": SESSION, "version": "1.1.40", "projectID": "0a1b2c3d",
                "directory": "/work/it's here", "title": "echo a marker",
                "time": {"created": 1_760_000_000_000_i64, "updated": 1_760_000_003_000_i64}}),
        ),
        (
            format!("storage/session/global/{EMPTY_SESSION}.json"),
            json!({"id": EMPTY_SESSION, "version": "1.1.40", "projectID": "global",
                "directory": "/", "title": "new session",
                "time": {"created": 1_759_000_000_000_i64, "updated": 1_759_000_000_000_i64}}),
        ),
        (
            format!("storage/message/{SESSION}/{USER_MSG}.json"),
            json!({"id": USER_MSG, "sessionID": SESSION, "role": "user",
                "time": {"created": 1_760_000_001_000_i64}}),
        ),
        (
            format!("storage/message/{SESSION}/{ASSISTANT_MSG}.json"),
            json!({"id": ASSISTANT_MSG, "sessionID": SESSION, "role": "assistant",
                "parentID": USER_MSG, "modelID": "m", "providerID": "p", "mode": "build",
                "time": {"created": 1_760_000_001_500_i64, "completed": 1_760_000_003_000_i64}}),
        ),
        part(
            USER_MSG,
            "prt_80c3e2d17002aaaaaaaaaaaaaa",
            json!({"type": "text", "text": "run echo MARKER-7 and also ls /nope"}),
        ),
        part(
            ASSISTANT_MSG,
            "prt_80c3e2d9a002bbbbbbbbbbbbbb",
            json!({"type": "step-start"}),
        ),
        part(
            ASSISTANT_MSG,
            "prt_80c3e2d9a003cccccccccccccc",
            tool(
                "call_ls",
                "ls /nope",
                json!({"status": "error", "error": "ls: cannot access '/nope': No such file or directory"}),
            ),
        ),
        part(
            ASSISTANT_MSG,
            "prt_80c3e2d9a004dddddddddddddd",
            tool(
                "call_echo",
                "echo MARKER-7",
                json!({"status": "completed", "output": "MARKER-7\n", "title": "echo MARKER-7", "metadata": {"exit": 0}}),
            ),
        ),
        part(
            ASSISTANT_MSG,
            "prt_80c3e2d9a005eeeeeeeeeeeeee",
            json!({"type": "text", "text": "Done: MARKER-7.",
                "time": {"start": 1_760_000_002_800_i64, "end": 1_760_000_002_900_i64}}),
        ),
        // Files of the tree that are no session's.
        (
            "storage/project/0a1b2c3d.json".to_string(),
            json!({"id": "0a1b2c3d", "worktree": "/work/it's here"}),
        ),
        (format!("storage/todo/{SESSION}.json"), json!([])),
    ]
}

/// The records the session's turn gives, in order.
const IDS: [&str; 6] = [
    "prt_80c3e2d17002aaaaaaaaaaaaaa",
    "prt_80c3e2d9a003cccccccccccccc:call",
    "prt_80c3e2d9a003cccccccccccccc:result",
    "prt_80c3e2d9a004dddddddddddddd:call",
    "prt_80c3e2d9a004dddddddddddddd:result",
    "prt_80c3e2d9a005eeeeeeeeeeeeee",
];

fn pretty(doc: &Value) -> Vec<u8> {
    serde_json::to_vec_pretty(doc).unwrap()
}

/// A HOME whose OpenCode data dir holds the tree; returns the data dir too.
fn tree_home() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join(".local/share/opencode");
    for (rel, doc) in tree_files() {
        write(&data.join(rel), &pretty(&doc));
    }
    (home, data)
}

fn write(path: &Path, bytes: &[u8]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

fn json_lines(home: &Path, args: &[&str]) -> Vec<Value> {
    let out = run(home, args);
    assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{args:?}: {}", stderr(&out));
    ndjson(&out)
}

fn kinds(records: &[Value]) -> Vec<&str> {
    records
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect()
}

#[test]
fn a_legacy_tree_session_lists_once_and_reads_its_records() {
    let (home, data) = tree_home();
    let listed = json_lines(home.path(), &["ls", "--json"]);
    let sessions: Vec<(&str, &str)> = listed
        .iter()
        .map(|s| (s["session"].as_str().unwrap(), s["path"].as_str().unwrap()))
        .collect();
    let session_file = data.join(format!("storage/session/0a1b2c3d/{SESSION}.json"));
    let empty_file = data.join(format!("storage/session/global/{EMPTY_SESSION}.json"));
    assert_eq!(
        sessions,
        [
            (EMPTY_SESSION, empty_file.to_str().unwrap()),
            (SESSION, session_file.to_str().unwrap()),
        ]
    );
    // A session's size is all its files': its own, its messages' and their parts'.
    let size_of_session: u64 = tree_files()
        .iter()
        .filter(|(rel, _)| {
            rel.contains(SESSION) && !rel.starts_with("storage/todo/")
                || rel.contains(USER_MSG)
                || rel.contains(ASSISTANT_MSG)
        })
        .map(|(_, doc)| pretty(doc).len() as u64)
        .sum();
    assert_eq!(listed[1]["size"], size_of_session);
    assert_eq!(listed[1]["harness"], "opencode");

    let all = json_lines(
        home.path(),
        &["read", "local:ses_7f3c1d2e", "--all", "--json"],
    );
    let recs = records(&all);
    assert_eq!(ids(&recs), IDS);
    assert_eq!(
        kinds(&recs),
        [
            "user",
            "tool_call",
            "tool_result",
            "tool_call",
            "tool_result",
            "assistant"
        ]
    );
    assert_eq!(recs[0]["text"], "run echo MARKER-7 and also ls /nope");
    assert_eq!(recs[0]["ts"], "2025-10-09T08:53:21.000Z");
    assert_eq!(recs[1]["name"], "bash");
    assert_eq!(recs[1]["input"], json!({"command": "ls /nope"}));
    assert_eq!(recs[2]["call_id"], "call_ls");
    assert_eq!(recs[2]["is_error"], true);
    assert_eq!(recs[4]["output"], "MARKER-7\n");
    assert_eq!(recs[4]["is_error"], false);
    assert_eq!(recs[5]["text"], "Done: MARKER-7.");
    let p = page(&all);
    assert_eq!(
        (p["more"].clone(), p["pending_tail"].clone()),
        (json!(false), json!(false))
    );

    // The empty session reads as no records.
    let empty = json_lines(
        home.path(),
        &["read", &format!("local:{EMPTY_SESSION}"), "--all", "--json"],
    );
    assert!(records(&empty).is_empty());

    // Paging by 1, 2 and 4 gives the same records as --all.
    for limit in ["1", "2", "4"] {
        let mut paged = Vec::new();
        let mut args = vec!["--head".to_string()];
        loop {
            let mut full: Vec<String> = ["read", "local:ses_7f3c1d2e", "--json", "--limit", limit]
                .map(String::from)
                .to_vec();
            full.extend(args);
            let full: Vec<&str> = full.iter().map(String::as_str).collect();
            let lines = json_lines(home.path(), &full);
            paged.extend(ids(&records(&lines)));
            let p = page(&lines);
            if p["more"] == false {
                break;
            }
            args = vec!["--since".into(), p["cursor"].as_str().unwrap().to_string()];
        }
        assert_eq!(paged, IDS, "--limit {limit}");
    }

    // resume runs OpenCode in the session's directory.
    let out = run(home.path(), &["resume", "local:ses_7f3c1d2e"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("cd '/work/it'\\''s here' && opencode --session {SESSION}\n")
    );
}

#[test]
fn files_written_later_come_in_on_the_next_since() {
    let (home, data) = tree_home();
    let first = json_lines(
        home.path(),
        &["read", "local:ses_7f3c1d2e", "--all", "--json"],
    );
    let cursor = page(&first)["cursor"].as_str().unwrap().to_string();
    // A second turn: a new user message and its part, as OpenCode writes them.
    let next_msg = "msg_80c3e3000001ZzZzZzZzZzZzZz";
    write(
        &data.join(format!("storage/message/{SESSION}/{next_msg}.json")),
        &pretty(
            &json!({"id": next_msg, "sessionID": SESSION, "role": "user",
            "time": {"created": 1_760_000_010_000_i64}}),
        ),
    );
    write(
        &data.join(format!(
            "storage/part/{next_msg}/prt_80c3e3000002ffffffffffffff.json"
        )),
        &pretty(
            &json!({"id": "prt_80c3e3000002ffffffffffffff", "sessionID": SESSION,
            "messageID": next_msg, "type": "text", "text": "and again"}),
        ),
    );
    let next = json_lines(
        home.path(),
        &["read", "local:ses_7f3c1d2e", "--since", &cursor, "--json"],
    );
    let recs = records(&next);
    assert_eq!(ids(&recs), ["prt_80c3e3000002ffffffffffffff"]);
    assert_eq!(recs[0]["text"], "and again");
    assert_eq!(page(&next)["reset"], false);
    assert_eq!(page(&next)["older"], true);
}

/// A database in WAL mode with one OpenCode 1.2+ session, its newest rows held in the WAL by
/// the returned writer.
fn database_with_wal(data: &Path, id: &str) -> Connection {
    fs::create_dir_all(data).unwrap();
    let conn = Connection::open(data.join("opencode.db")).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;
         CREATE TABLE session (id text PRIMARY KEY, parent_id text, directory text NOT NULL,
           time_created integer NOT NULL, time_updated integer NOT NULL);
         CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
           time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
         CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
           time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);",
    )
    .unwrap();
    conn.execute(
        "INSERT INTO session VALUES (?1, NULL, '/work/db', 1760000000000, 1760000000000)",
        [id],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO message VALUES ('msg_db', ?1, 1760000000000, 1760000000000, \
         '{\"role\":\"user\",\"time\":{\"created\":1760000000000}}')",
        [id],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO part VALUES ('prt_db', 'msg_db', ?1, 1760000000000, 1760000000000, \
         '{\"type\":\"text\",\"text\":\"from the database\"}')",
        [id],
    )
    .unwrap();
    conn
}

#[test]
fn a_session_in_the_database_and_the_tree_is_the_databases_and_its_size_counts_the_wal() {
    let (home, data) = tree_home();
    // OpenCode 1.2 copied the tree's session into its database and left the tree on disk.
    let conn = database_with_wal(&data, SESSION);
    let db = data.join("opencode.db");
    let wal = data.join("opencode.db-wal");
    let wal_size = fs::metadata(&wal).unwrap().len();
    assert!(wal_size > 0, "the writer keeps its rows in the WAL");
    let listed = json_lines(home.path(), &["ls", "--json"]);
    let sessions: Vec<(&str, &str, u64)> = listed
        .iter()
        .map(|s| {
            (
                s["session"].as_str().unwrap(),
                s["path"].as_str().unwrap(),
                s["size"].as_u64().unwrap(),
            )
        })
        .collect();
    let db_size = fs::metadata(&db).unwrap().len();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert_eq!(
        sessions[1],
        (SESSION, db.to_str().unwrap(), db_size + wal_size)
    );
    assert_eq!(sessions[0].0, EMPTY_SESSION);
    let read = json_lines(
        home.path(),
        &["read", "local:ses_7f3c1d2e", "--all", "--json"],
    );
    assert_eq!(ids(&records(&read)), ["prt_db"]);
    let out = run(home.path(), &["resume", "local:ses_7f3c1d2e"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("cd /work/db && opencode --session {SESSION}\n")
    );
    drop(conn);
}

#[test]
fn a_legacy_tree_reads_the_same_over_ssh() {
    let Some(sshd) = sshd_or_skip() else { return };
    let (home, _data) = tree_home();
    let user = "ck_clean";
    // A directory of this run's own, so that other tests' OpenCode files are not in it.
    let dir = format!("hf-opencode-tree-{}/opencode", std::process::id());
    for (rel, doc) in tree_files() {
        sshd.put_file(user, format!("{dir}/{rel}"), &pretty(&doc));
    }
    let root = format!("opencode={}", sshd.home(user).join(&dir).display());
    let local = json_lines(
        home.path(),
        &["read", "local:ses_7f3c1d2e", "--all", "--json"],
    );
    let alias = sshd.alias(user);
    let ssh = |args: &[&str]| {
        let out = std::process::Command::new(BIN)
            .args(["--ssh-config", sshd.ssh_config().to_str().unwrap()])
            .args(["--root", &root])
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        out
    };
    let remote = ndjson(&ssh(&[
        "read",
        &format!("{alias}:ses_7f3c1d2e"),
        "--all",
        "--json",
    ]));
    // The same records, but for the host each names.
    assert_eq!(
        without_host(records(&remote)),
        without_host(records(&local))
    );
    // The user's home is shared with other tests: only OpenCode's sessions are this one's.
    let listed = ndjson(&ssh(&["ls", &alias, "--harness", "opencode", "--json"]));
    let ids: Vec<&str> = listed
        .iter()
        .map(|s| s["session"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [EMPTY_SESSION, SESSION]);
    // Over SSH with the root given: the harness's variable, inside `ssh -t`.
    let resume = ssh(&["resume", &format!("{alias}:ses_7f3c1d2e")]);
    assert_eq!(
        String::from_utf8_lossy(&resume.stdout),
        format!(
            "ssh -t -F {config} {alias} 'cd '\\''/work/it'\\''\\'\\'''\\''s here'\\'' && XDG_DATA_HOME={data} opencode --session {SESSION}'\n",
            config = sshd.ssh_config().display(),
            data = sshd
                .home(user)
                .join(dir.trim_end_matches("/opencode"))
                .display(),
        )
    );
}

/// The tree OpenCode 1.1.65 wrote (see SOURCES): its session reads into the scripted turn, the
/// command that exited 2 a failed result.
#[test]
fn the_tree_opencode_1_1_65_wrote_reads_exactly() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/opencode/legacy-1.1.65");
    let home = tempfile::tempdir().unwrap();
    let root = format!("opencode={}", data.display());
    let lines = json_lines(
        home.path(),
        &[
            "--root",
            &root,
            "read",
            "local:ses_dceb0a",
            "--all",
            "--json",
        ],
    );
    let shown: Vec<Value> = records(&lines)
        .into_iter()
        .map(|mut r| {
            let r = r.as_object_mut().unwrap();
            for key in ["type", "harness", "session", "ts", "host"] {
                r.remove(key);
            }
            Value::Object(r.clone())
        })
        .collect();
    assert_eq!(
        shown,
        [
            json!({"id": "prt_2314f5cc80012aG9r17Sqdml0O", "kind": "user",
                "text": "\"list a missing dir, then echo a marker\"\n"}),
            json!({"id": "prt_2314f5d7a0010BoPa6j21xB07E:call", "kind": "tool_call",
                "call_id": "call_fail", "name": "bash",
                "input": {"command": "ls /nonexistent-oc-dir", "description": "run"},
                "model": "m",
                "usage": {"input": 10, "output": 5, "reasoning": 0, "cache_read": 0, "cache_write": 0}}),
            json!({"id": "prt_2314f5d7a0010BoPa6j21xB07E:result", "kind": "tool_result",
                "call_id": "call_fail",
                "output": "ls: cannot access '/nonexistent-oc-dir': No such file or directory\n",
                "is_error": true}),
            json!({"id": "prt_2314f5dd4001seHMZ5NYryfRV8:call", "kind": "tool_call",
                "call_id": "call_ok", "name": "bash",
                "input": {"command": "echo MARKER-OC", "description": "run"},
                "model": "m",
                "usage": {"input": 10, "output": 5, "reasoning": 0, "cache_read": 0, "cache_write": 0}}),
            json!({"id": "prt_2314f5dd4001seHMZ5NYryfRV8:result", "kind": "tool_result",
                "call_id": "call_ok", "output": "MARKER-OC\n", "is_error": false}),
            // Each step is a message of its own, with the model and the step's tokens.
            json!({"id": "prt_2314f5dec001lxJ3qhHY9rCd8Z", "kind": "assistant",
                "text": "Done: MARKER-OC.", "model": "m",
                "usage": {"input": 10, "output": 5, "reasoning": 0, "cache_read": 0, "cache_write": 0}}),
        ]
    );
    let listed = json_lines(home.path(), &["--root", &root, "ls", "--json"]);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["session"], "ses_dceb0a358ffe05ut6vbYpCxqM3");
    let resume = run(
        home.path(),
        &["--root", &root, "resume", "local:ses_dceb0a"],
    );
    assert_eq!(
        String::from_utf8_lossy(&resume.stdout),
        "cd /tmp/clis-harnessfix/oc-run/work && opencode --session ses_dceb0a358ffe05ut6vbYpCxqM3\n"
    );
    // The root is not named `opencode`, so no variable points OpenCode at it: said, not dropped.
    let note = String::from_utf8_lossy(&resume.stderr);
    assert!(
        note.starts_with(
            "clankie-read: warning: opencode finds sessions only under $XDG_DATA_HOME/opencode"
        ) && note.contains(&data.display().to_string()),
        "{note}"
    );
    // `ls --long` knows the directory `resume` uses.
    let long = json_lines(home.path(), &["--root", &root, "ls", "--json", "--long"]);
    assert_eq!(
        long[0]["cwd"], "/tmp/clis-harnessfix/oc-run/work",
        "{long:?}"
    );
}

/// `--follow` on a tree session while OpenCode writes a new turn the way it does, rewriting each
/// file in place: a file caught half-written is waited for, and every record is printed once,
/// in order, as a later whole read gives it.
#[test]
fn follow_prints_what_is_written_into_the_tree_once() {
    let (home, data) = tree_home();
    let args = crate::follow::follow_args(&[], "local:ses_7f3c1d2e", "0.05");
    let (child, rx) = crate::follow::follow(&args, home.path());
    let pause = || std::thread::sleep(std::time::Duration::from_millis(300));
    pause();
    let next_msg = "msg_80c3e3000001ZzZzZzZzZzZzZz";
    write(
        &data.join(format!("storage/message/{SESSION}/{next_msg}.json")),
        &pretty(
            &json!({"id": next_msg, "sessionID": SESSION, "role": "user",
            "time": {"created": 1_760_000_010_000_i64}}),
        ),
    );
    let part = data.join(format!(
        "storage/part/{next_msg}/prt_80c3e3000002ffffffffffffff.json"
    ));
    let whole = pretty(
        &json!({"id": "prt_80c3e3000002ffffffffffffff", "sessionID": SESSION,
        "messageID": next_msg, "type": "text", "text": "and again"}),
    );
    // Half a document for a few polls, then the rest.
    write(&part, &whole[..whole.len() / 2]);
    pause();
    write(&part, &whole);
    pause();
    let whole_read = json_lines(
        home.path(),
        &["read", "local:ses_7f3c1d2e", "--all", "--json"],
    );
    let want = records(&whole_read);
    assert_eq!(want.len(), IDS.len() + 1);
    // One more than expected, for a short while: a record printed twice would show.
    let (got, err) =
        crate::follow::collect(child, rx, want.len() + 1, std::time::Duration::from_secs(3));
    assert_eq!(ids(&got), ids(&want), "{err}");
    assert!(!err.contains("malformed"), "{err}");
}
