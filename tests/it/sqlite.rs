//! SQLite-backed harnesses (OpenCode, grok-cli): the real OpenCode 1.18.33 dump loaded with the
//! `sqlite3` CLI into a WAL-mode database reads locally and over SSH into the same records; a
//! tool that goes pending → running → completed is returned once, completed; rows a writer
//! commits into the WAL appear on the next `--since`, and once each while `--follow`ing (locally
//! and over SSH, through the kept pages' WAL refresh); nothing is created or touched next to
//! the database by the reader.

use std::path::{Path, PathBuf};
use std::process::Command;

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::common::sshd::{Sshd, sshd_or_skip};
use crate::support::{BIN, clankie, code, ids, ndjson, page, records, run, stderr, without_host};

const SESSION: &str = "ses_f0de500f8ffeXvsiYJDOg5JtrU";
const TOOL_PART: &str = "prt_0f21b02d5001NcGUD0hmNfrPyr";
const ASSISTANT: &str = "msg_0f21b0104001XDVLEwtN0JiIZk";

/// `$HOME/.local/share/opencode/opencode.db`, loaded from the real dump with the sqlite3 CLI,
/// in WAL mode.
fn opencode_home() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".local/share/opencode");
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("opencode.db");
    let dump =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/opencode/opencode-1.18.33.sql");
    let status = Command::new("sqlite3")
        .arg(&db)
        .arg(format!(".read {}", dump.display()))
        .status()
        .expect("the sqlite3 CLI (installed by .ci/install-deps)");
    assert!(status.success());
    let out = Command::new("sqlite3")
        .arg(&db)
        .arg("PRAGMA journal_mode=WAL;")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "wal");
    (home, db)
}

/// A writer that keeps its rows in the WAL (no checkpoint) for as long as it is open.
fn writer(db: &Path) -> Connection {
    let conn = Connection::open(db).unwrap();
    conn.execute_batch("PRAGMA wal_autocheckpoint=0;").unwrap();
    conn
}

fn read(home: &Path, args: &[&str]) -> (Vec<Value>, Value) {
    let out = run(home, args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines = ndjson(&out);
    (records(&lines), page(&lines))
}

/// Names, sizes and mtimes of a directory's entries.
fn snapshot(dir: &Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                m.len(),
                m.modified().unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

fn set_tool_status(conn: &Connection, status: &str, completed: bool) {
    conn.execute(
        "UPDATE part SET data = json_set(data, '$.state.status', ?1) WHERE id = ?2",
        (status, TOOL_PART),
    )
    .unwrap();
    let sql = if completed {
        "UPDATE message SET data = json_set(data, '$.time.completed', 1790768251673) WHERE id = ?1"
    } else {
        "UPDATE message SET data = json_remove(data, '$.time.completed') WHERE id = ?1"
    };
    conn.execute(sql, [ASSISTANT]).unwrap();
}

fn kinds(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| r["kind"].as_str().unwrap().to_string())
        .collect()
}

/// The next page of the fixture's session after `cursor`.
fn since(home: &Path, cursor: &str) -> (Vec<Value>, Value) {
    read(
        home,
        &["read", "local:ses_f0de50", "--since", cursor, "--json"],
    )
}

#[test]
fn opencode_reads_the_real_dump_and_lists_its_session() {
    let (home, db) = opencode_home();
    let before = snapshot(db.parent().unwrap());
    let out = run(home.path(), &["ls", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let sessions = ndjson(&out);
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0]["harness"], "opencode");
    assert_eq!(sessions[0]["session"], SESSION);
    assert_eq!(sessions[0]["path"], db.to_str().unwrap());
    for query in [SESSION, "ses_f0de50", "opencode/ses_f0de500f"] {
        let (recs, p) = read(home.path(), &["read", &format!("local:{query}"), "--json"]);
        assert_eq!(
            ids(&recs),
            [
                "prt_0f21aff33001a2Ikz6KYrhKnir",
                "prt_0f21b02d5001NcGUD0hmNfrPyr:call",
                "prt_0f21b02d5001NcGUD0hmNfrPyr:result",
                "prt_0f21b0337001GtX6vvuhLhelY7",
            ]
        );
        assert_eq!(
            kinds(&recs),
            ["user", "tool_call", "tool_result", "assistant"]
        );
        assert_eq!(recs[0]["text"], "\"run echo fixture please\"");
        assert_eq!(recs[1]["input"]["command"], "echo fixture");
        assert_eq!(recs[2]["output"], "fixture\n");
        assert_eq!(p["pending_tail"], false);
    }
    // --head/--since page through the same records.
    let (first, p1) = read(
        home.path(),
        &[
            "read",
            "local:ses_f0de50",
            "--head",
            "--limit",
            "2",
            "--json",
        ],
    );
    assert_eq!(p1["more"], true);
    let (rest, p2) = since(home.path(), p1["cursor"].as_str().unwrap());
    assert_eq!(p2["older"], true);
    assert_eq!(ids(&first).len() + ids(&rest).len(), 4);
    let (tail, _) = read(
        home.path(),
        &["read", "local:ses_f0de50", "--limit", "1", "--json"],
    );
    assert_eq!(ids(&tail), ["prt_0f21b0337001GtX6vvuhLhelY7"]);
    // The reader created and touched nothing next to the database.
    assert_eq!(snapshot(db.parent().unwrap()), before);
}

#[test]
fn a_tool_is_shown_once_completed_and_wal_rows_appear_on_the_next_since() {
    let (home, db) = opencode_home();
    let conn = writer(&db);
    set_tool_status(&conn, "pending", false);
    let dir = db.parent().unwrap();
    let before = snapshot(dir);
    assert!(
        before.iter().any(|(n, _, _)| n == "opencode.db-wal"),
        "{before:?}"
    );
    let (recs, p) = read(home.path(), &["read", "local:ses_f0de50", "--json"]);
    assert_eq!(kinds(&recs), ["user"]);
    assert_eq!(p["pending_tail"], true);
    assert_eq!(
        snapshot(dir),
        before,
        "the reader touched files next to the database"
    );
    set_tool_status(&conn, "running", false);
    let (recs, p2) = since(home.path(), p["cursor"].as_str().unwrap());
    assert!(recs.is_empty(), "{recs:?}");
    assert_eq!(p2["pending_tail"], true);
    assert_eq!(p2["reset"], false);
    // A writer holding a write transaction: its rows are not visible until it commits.
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    set_tool_status(&conn, "completed", true);
    let (recs, _) = since(home.path(), p2["cursor"].as_str().unwrap());
    assert!(recs.is_empty(), "uncommitted rows were read: {recs:?}");
    conn.execute_batch("COMMIT").unwrap();
    let (recs, p3) = since(home.path(), p2["cursor"].as_str().unwrap());
    assert_eq!(kinds(&recs), ["tool_call", "tool_result", "assistant"]);
    assert_eq!(recs[1]["output"], "fixture\n");
    assert_eq!(p3["pending_tail"], false);
    // New rows committed into the WAL appear on the next --since, once.
    conn.execute(
        "INSERT INTO message VALUES('msg_0f21b0400001zzzzzzzzzzzzzz', ?1, 1790768260000, 1790768260000, \
         '{\"role\":\"user\",\"time\":{\"created\":1790768260000}}')",
        [SESSION],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO part VALUES('prt_0f21b0400002zzzzzzzzzzzzzz', 'msg_0f21b0400001zzzzzzzzzzzzzz', ?1, \
         1790768260001, 1790768260001, '{\"type\":\"text\",\"text\":\"and again\"}')",
        [SESSION],
    )
    .unwrap();
    let (recs, p4) = since(home.path(), p3["cursor"].as_str().unwrap());
    assert_eq!(ids(&recs), ["prt_0f21b0400002zzzzzzzzzzzzzz"]);
    assert_eq!(recs[0]["text"], "and again");
    assert_eq!(p4["reset"], false);
    // A row changed before the cursor: reset, or exit 5 with --strict.
    conn.execute(
        "UPDATE part SET data = json_set(data, '$.text', 'rewritten') WHERE id = 'prt_0f21aff33001a2Ikz6KYrhKnir'",
        [],
    )
    .unwrap();
    let cursor = p4["cursor"].as_str().unwrap();
    let (recs, p5) = since(home.path(), cursor);
    assert_eq!(p5["reset"], true);
    assert_eq!(recs[0]["kind"], "notice");
    let strict = run(
        home.path(),
        &["read", "local:ses_f0de50", "--since", cursor, "--strict"],
    );
    assert_eq!(code(&strict), 5, "{}", stderr(&strict));
    drop(conn);
}

/// Copies a database and its WAL to `user`'s OpenCode data dir; returns the database's path.
fn put_opencode_db(sshd: &Sshd, user: &str, db: &Path) -> PathBuf {
    let at = ".local/share/opencode/opencode.db";
    let path = sshd.put_file(user, at, &std::fs::read(db).unwrap());
    let wal = std::fs::read(db.with_file_name("opencode.db-wal")).unwrap();
    sshd.put_file(user, format!("{at}-wal"), &wal);
    path
}

#[test]
fn opencode_over_ssh_reads_the_same_records_and_ids() {
    let Some(sshd) = sshd_or_skip() else { return };
    let (home, db) = opencode_home();
    // Rows in the WAL too: a writer keeps them there while the files are copied to the user.
    let conn = writer(&db);
    conn.execute(
        "INSERT INTO part VALUES('prt_0f21b033b001zzzzzzzzzzzzzz', ?1, ?2, 1790768251708, 1790768251708, \
         '{\"type\":\"text\",\"text\":\"from the WAL\",\"time\":{\"start\":1,\"end\":2}}')",
        (ASSISTANT, SESSION),
    )
    .unwrap();
    let db_path = put_opencode_db(sshd, "ck_clean", &db);
    let remote_dir = db_path.parent().unwrap().to_path_buf();
    let before = snapshot(&remote_dir);
    let local = run(
        home.path(),
        &["read", "local:ses_f0de50", "--all", "--json"],
    );
    let alias = sshd.alias("ck_clean");
    let remote = Command::new(BIN)
        .args(["--ssh-config", sshd.ssh_config().to_str().unwrap()])
        .args(["read", &format!("{alias}:ses_f0de50"), "--all", "--json"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert_eq!(code(&remote), 0, "{}", stderr(&remote));
    let (local, remote) = (records(&ndjson(&local)), records(&ndjson(&remote)));
    assert_eq!(local.len(), 5, "{local:?}");
    assert!(ids(&local).contains(&"prt_0f21b033b001zzzzzzzzzzzzzz".to_string()));
    // The same records, but for the host each names.
    assert_eq!(without_host(remote), without_host(local));
    assert_eq!(
        snapshot(&remote_dir),
        before,
        "the reader touched the host's files"
    );
    drop(conn);
}

#[test]
fn opencode_db_names_the_database_listed_and_read() {
    let (home, db) = opencode_home();
    // Moved out of the data dir, renamed: only OPENCODE_DB finds it.
    let elsewhere = home.path().join("else where");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let moved = elsewhere.join("dev.sqlite");
    std::fs::rename(&db, &moved).unwrap();
    let before = snapshot(&elsewhere);
    let empty = run(home.path(), &["ls", "--json"]);
    assert_eq!(ndjson(&empty).len(), 0, "{}", stderr(&empty));
    let data = db.parent().unwrap();
    std::fs::create_dir_all(data.join("sub")).unwrap();
    std::fs::copy(&moved, data.join("sub/rel.db")).unwrap();
    for (value, path) in [
        (moved.to_str().unwrap(), moved.clone()),
        ("sub/rel.db", data.join("sub/rel.db")),
    ] {
        let out = clankie(home.path())
            .env("OPENCODE_DB", value)
            .args(["ls", "--json"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let sessions = ndjson(&out);
        assert_eq!(sessions.len(), 1, "{sessions:?}");
        assert_eq!(sessions[0]["session"], SESSION);
        assert_eq!(sessions[0]["path"], path.to_str().unwrap());
        let out = clankie(home.path())
            .env("OPENCODE_DB", value)
            .args(["read", "local:ses_f0de50", "--all", "--json"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(records(&ndjson(&out)).len(), 4);
    }
    // `:memory:` names no file: the default one is looked for (and is not there).
    let out = clankie(home.path())
        .env("OPENCODE_DB", ":memory:")
        .args(["ls", "--json"])
        .output()
        .unwrap();
    assert_eq!(ndjson(&out).len(), 0);
    assert_eq!(snapshot(&elsewhere), before);
}

/// OpenCode 2.x: `session_v2` (columns per the formats doc §3.4, trimmed) and `session_message`.
#[test]
fn opencode_v2_sessions_come_from_session_v2_and_the_old_tables_fill_in() {
    let (home, db) = opencode_home();
    let conn = writer(&db);
    conn.execute_batch(
        // 1.18.33's `session_message` is keyed to `session`; a 2.x database keys it to
        // `session_v2`.
        "PRAGMA foreign_keys=OFF;
         CREATE TABLE session_v2 (id text PRIMARY KEY, project_id text NOT NULL, parent_id text, \
           slug text NOT NULL, directory text NOT NULL, title text NOT NULL, \
           time_created integer NOT NULL, time_updated integer NOT NULL);
         INSERT INTO session_v2 VALUES ('ses_v2only', 'global', NULL, 's', '/w2', 't', 1790768250000, 1790768260000);
         INSERT INTO session_v2 VALUES ('ses_v2child', 'global', 'ses_v2only', 's', '/w2', 't', 1790768250000, 1790768260000);
         INSERT INTO session_message VALUES ('sm_1', 'ses_v2only', 'user', 0, 1790768250000, 1790768250000,
           '{\"text\":\"hello v2\",\"time\":{\"created\":1790768250000}}');
         INSERT INTO session_message VALUES ('sm_2', 'ses_v2only', 'assistant', 1, 1790768251000, 1790768252000,
           '{\"content\":[{\"type\":\"text\",\"text\":\"running ls\"},{\"type\":\"tool\",\"name\":\"bash\",\"callID\":\"call_v2\",\"state\":{\"status\":\"completed\",\"input\":{\"command\":\"ls\"},\"content\":[{\"type\":\"text\",\"text\":\"a\\n\"}]}}],\"finish\":\"tool-calls\",\"time\":{\"created\":1790768251000}}');
         INSERT INTO session_message VALUES ('sm_3', 'ses_v2only', 'assistant', 2, 1790768253000, 1790768253000,
           '{\"content\":[{\"type\":\"tool\",\"name\":\"bash\",\"callID\":\"call_v3\",\"state\":{\"status\":\"running\",\"input\":{}}}],\"time\":{\"created\":1790768253000}}');",
    )
    .unwrap();
    let out = run(home.path(), &["ls", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mut listed: Vec<String> = ndjson(&out)
        .iter()
        .map(|s| s["session"].as_str().unwrap().to_string())
        .collect();
    listed.sort();
    assert!(listed.contains(&SESSION.to_string()), "{listed:?}");
    assert!(listed.contains(&"ses_v2only".to_string()), "{listed:?}");
    let out = run(home.path(), &["ls", "--json", "--long"]);
    let v2 = ndjson(&out)
        .into_iter()
        .find(|s| s["session"] == "ses_v2only")
        .unwrap();
    assert_eq!((&v2["title"], &v2["cwd"]), (&json!("t"), &json!("/w2")));
    let (recs, p) = read(
        home.path(),
        &["read", "local:ses_v2only", "--all", "--json"],
    );
    assert_eq!(
        ids(&recs),
        ["sm_1", "sm_2#0", "sm_2#1:call", "sm_2#1:result"]
    );
    assert_eq!(
        kinds(&recs),
        ["user", "assistant", "tool_call", "tool_result"]
    );
    assert_eq!(recs[3]["output"], "a\n");
    assert_eq!(p["pending_tail"], true, "sm_3's tool is still running");
    // The 1.x session, absent from session_v2, still reads from message / part.
    let (old, _) = read(
        home.path(),
        &["read", "local:ses_f0de50", "--all", "--json"],
    );
    assert_eq!(old.len(), 4);
    drop(conn);
}

/// grok-cli's schema (`src/storage/migrations.ts`), in WAL mode.
pub(crate) const GROK_DDL: &str = "
PRAGMA journal_mode=WAL;
CREATE TABLE workspaces (id TEXT PRIMARY KEY, scope_key TEXT NOT NULL UNIQUE, canonical_path TEXT NOT NULL,
  git_root TEXT, display_name TEXT NOT NULL, last_seen_at TEXT NOT NULL) STRICT;
CREATE TABLE sessions (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  title TEXT, recap_text TEXT, recap_model TEXT, recap_updated_at TEXT, model TEXT NOT NULL, mode TEXT NOT NULL,
  cwd_at_start TEXT NOT NULL, cwd_last TEXT NOT NULL, status TEXT NOT NULL, created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL) STRICT;
CREATE TABLE messages (session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, seq INTEGER NOT NULL,
  role TEXT NOT NULL, message_json TEXT NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY (session_id, seq)) STRICT;
CREATE TABLE tool_calls (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id)
  ON DELETE CASCADE, message_seq INTEGER NOT NULL, tool_call_id TEXT NOT NULL, tool_name TEXT NOT NULL,
  args_json TEXT NOT NULL, status TEXT NOT NULL, started_at TEXT NOT NULL, completed_at TEXT,
  UNIQUE(session_id, tool_call_id)) STRICT;
CREATE TABLE tool_results (id INTEGER PRIMARY KEY AUTOINCREMENT, tool_call_row_id INTEGER NOT NULL
  REFERENCES tool_calls(id) ON DELETE CASCADE, output_kind TEXT NOT NULL, output_json TEXT NOT NULL,
  success INTEGER NOT NULL, created_at TEXT NOT NULL) STRICT;
INSERT INTO workspaces VALUES ('w1', '/w', '/w', NULL, 'w', '2026-11-02T10:00:00.000Z');
INSERT INTO sessions VALUES ('0a1b2c3d4e5f', 'w1', 'list files', NULL, NULL, NULL, 'grok-4', 'agent', '/w', '/w',
  'active', '2026-11-02T10:00:00.000Z', '2026-11-02T10:00:05.000Z');
INSERT INTO messages VALUES ('0a1b2c3d4e5f', 0, 'user', '{\"role\":\"user\",\"content\":\"list files\"}', '2026-11-02T10:00:00.000Z');
INSERT INTO messages VALUES ('0a1b2c3d4e5f', 1, 'assistant', '{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Listing.\"},{\"type\":\"tool-call\",\"toolCallId\":\"call_9\",\"toolName\":\"bash\",\"input\":{\"command\":\"ls\"}}]}', '2026-11-02T10:00:01.000Z');
INSERT INTO messages VALUES ('0a1b2c3d4e5f', 2, 'tool', '{\"role\":\"tool\",\"content\":[{\"type\":\"tool-result\",\"toolCallId\":\"call_9\",\"toolName\":\"bash\",\"output\":{\"type\":\"text\",\"value\":\"a\\nb\\n\"}}]}', '2026-11-02T10:00:02.000Z');
INSERT INTO tool_calls VALUES (1, '0a1b2c3d4e5f', 1, 'call_9', 'bash', '{\"command\":\"ls\"}', 'completed', '2026-11-02T10:00:01.000Z', '2026-11-02T10:00:02.000Z');
INSERT INTO tool_results VALUES (1, 1, 'text', '\"a\\nb\\n\"', 1, '2026-11-02T10:00:02.000Z');
";

#[test]
fn grok_cli_database_reads_the_same_way() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".grok");
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("grok.db");
    let conn = writer(&db);
    conn.execute_batch(GROK_DDL).unwrap();
    let out = run(home.path(), &["ls", "--json", "--harness", "grok-cli"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let sessions = ndjson(&out);
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0]["harness"], "grok-cli");
    assert_eq!(sessions[0]["mtime"], "2026-11-02T10:00:05Z");
    // `ls --long`: the row's own title and working directory.
    let out = run(
        home.path(),
        &["ls", "--json", "--long", "--harness", "grok-cli"],
    );
    let long = ndjson(&out);
    assert_eq!(
        (&long[0]["title"], &long[0]["cwd"]),
        (&json!("list files"), &json!("/w"))
    );
    let (recs, p) = read(home.path(), &["read", "local:grok-cli/0a1b2c", "--json"]);
    assert_eq!(ids(&recs), ["0#0", "1#0", "1#1", "2#0"]);
    assert_eq!(
        kinds(&recs),
        ["user", "assistant", "tool_call", "tool_result"]
    );
    assert_eq!(recs[3]["output"], "a\nb\n");
    assert_eq!(recs[3]["is_error"], false);
    assert_eq!(p["pending_tail"], false);
    // A new tool call still running: the page stops before it; it appears once completed.
    conn.execute_batch(
        "INSERT INTO messages VALUES ('0a1b2c3d4e5f', 3, 'assistant', '{\"role\":\"assistant\",\"content\":[{\"type\":\"tool-call\",\"toolCallId\":\"call_10\",\"toolName\":\"bash\",\"input\":{\"command\":\"pwd\"}}]}', '2026-11-02T10:00:03.000Z');
         INSERT INTO tool_calls VALUES (2, '0a1b2c3d4e5f', 3, 'call_10', 'bash', '{}', 'running', '2026-11-02T10:00:03.000Z', NULL);",
    )
    .unwrap();
    let cursor = p["cursor"].as_str().unwrap().to_string();
    let (recs, p2) = read(
        home.path(),
        &["read", "local:0a1b2c", "--since", &cursor, "--json"],
    );
    assert!(recs.is_empty());
    assert_eq!(p2["pending_tail"], true);
    conn.execute_batch("UPDATE tool_calls SET status = 'completed' WHERE id = 2;")
        .unwrap();
    let (recs, _) = read(
        home.path(),
        &[
            "read",
            "local:0a1b2c",
            "--since",
            p2["cursor"].as_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(ids(&recs), ["3#0"]);
    drop(conn);
}

/// A large file that is not a database fails on its header, without reading the rest (the
/// 64 MiB bound counts pages read, not the file's size: `sqlite_vfs` reads a larger database).
#[test]
fn a_large_file_that_is_not_a_database_fails_naming_it() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".local/share/opencode");
    std::fs::create_dir_all(&dir).unwrap();
    let file = std::fs::File::create(dir.join("opencode.db")).unwrap();
    file.set_len(65 * 1024 * 1024).unwrap(); // sparse: costs no disk
    let out = run(home.path(), &["read", "local:ses_f0de50"]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("opencode.db: not a readable SQLite database"),
        "{}",
        stderr(&out)
    );
    // ls still lists (nothing here) and says why the database was left out.
    let out = run(home.path(), &["ls"]);
    assert_eq!(code(&out), 0);
    assert!(
        stderr(&out).contains("not a readable SQLite database"),
        "{}",
        stderr(&out)
    );
}

/// Commits one user message with one text part (`row N`) into `conn`'s WAL.
fn add_user_row(conn: &Connection, n: u32) {
    let message = format!("msg_0f21b05000{n:02}zzzzzzzzzzzzzz");
    conn.execute(
        "INSERT INTO message VALUES(?1, ?2, 1790768270000, 1790768270000, \
         '{\"role\":\"user\",\"time\":{\"created\":1790768270000}}')",
        (&message, SESSION),
    )
    .unwrap();
    conn.execute(
        "INSERT INTO part VALUES(?1, ?2, ?3, 1790768270001, 1790768270001, ?4)",
        (
            format!("prt_0f21b05000{n:02}zzzzzzzzzzzzzz"),
            &message,
            SESSION,
            format!("{{\"type\":\"text\",\"text\":\"row {n}\"}}"),
        ),
    )
    .unwrap();
}

/// Follows `target` while `conn` commits three rows into the WAL, one per few polls: each poll
/// refreshes the kept pages with the WAL's new frames (crate::sqlite's cache), and what they
/// commit is printed once, in order, as a later whole read gives it.
fn follow_prints_wal_rows_once(home: &Path, global: &[&str], target: &str, conn: &Connection) {
    let args = crate::follow::follow_args(global, target, "0.05");
    let (child, rx) = crate::follow::follow(&args, home);
    for n in 1..=3 {
        std::thread::sleep(std::time::Duration::from_millis(400));
        add_user_row(conn, n);
    }
    std::thread::sleep(std::time::Duration::from_millis(400));
    let whole_args: Vec<&str> = global
        .iter()
        .copied()
        .chain(["read", target, "--all", "--json"])
        .collect();
    let (whole, _) = read(home, &whole_args);
    // One more than expected, for a short while: a record printed twice would show.
    let (got, err) = crate::follow::collect(
        child,
        rx,
        whole.len() + 1,
        std::time::Duration::from_secs(3),
    );
    assert_eq!(ids(&got), ids(&whole), "{err}");
    assert!(ids(&got).contains(&"prt_0f21b0500003zzzzzzzzzzzzzz".to_string()));
}

/// OpenCode 1.18 writes an assistant message's row before its parts, with zero tokens and no
/// `time.completed` (the real dump's first `message.updated.1` event of the message holds that
/// row). Under `--follow` the message waits, pending, until it completes; then its records are
/// printed once, with the final model and usage, exactly as a later `--all` gives them.
#[test]
fn follow_holds_an_assistant_message_back_until_it_completes() {
    let (home, db) = opencode_home();
    let conn = writer(&db);
    let done: String = conn
        .query_row("SELECT data FROM message WHERE id = ?1", [ASSISTANT], |r| {
            r.get(0)
        })
        .unwrap();
    let first: String = conn
        .query_row(
            "SELECT json_extract(data, '$.info') FROM event WHERE type = 'message.updated.1' \
             AND json_extract(data, '$.info.id') = ?1 ORDER BY seq LIMIT 1",
            [ASSISTANT],
            |r| r.get(0),
        )
        .unwrap();
    assert!(!first.contains("completed"), "{first}");
    conn.execute(
        "UPDATE message SET data = ?1 WHERE id = ?2",
        (&first, ASSISTANT),
    )
    .unwrap();
    let (recs, p) = read(home.path(), &["read", "local:ses_f0de50", "--json"]);
    assert_eq!(kinds(&recs), ["user"]);
    assert_eq!(p["pending_tail"], true);
    let args = crate::follow::follow_args(&[], "local:ses_f0de50", "0.05");
    let (child, rx) = crate::follow::follow(&args, home.path());
    std::thread::sleep(std::time::Duration::from_millis(800));
    conn.execute(
        "UPDATE message SET data = ?1 WHERE id = ?2",
        (&done, ASSISTANT),
    )
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(400));
    let (whole, p) = read(
        home.path(),
        &["read", "local:ses_f0de50", "--all", "--json"],
    );
    assert_eq!(p["pending_tail"], false);
    let (got, err) = crate::follow::collect(
        child,
        rx,
        whole.len() + 1,
        std::time::Duration::from_secs(3),
    );
    assert_eq!(without_host(got), without_host(whole.clone()), "{err}");
    let call = whole.iter().find(|r| r["kind"] == "tool_call").unwrap();
    assert_eq!(call["model"], "fake-model", "{call}");
    assert_eq!(call["usage"]["input"], 120, "{call}");
    drop(conn);
}

#[test]
fn follow_prints_rows_committed_into_the_wal_once() {
    let (home, db) = opencode_home();
    let conn = writer(&db);
    follow_prints_wal_rows_once(home.path(), &[], "local:ses_f0de50", &conn);
    drop(conn);
}

#[test]
fn follow_over_ssh_fetches_rows_committed_into_the_wal_once() {
    // The same over SSH: the new WAL frames come through the POSIX read script at their
    // offsets, on the one connection the follower keeps.
    let Some(sshd) = sshd_or_skip() else { return };
    let (home, db) = opencode_home();
    let local = writer(&db);
    add_user_row(&local, 0);
    // A user of its own: the test above puts its database at the same place for ck_clean.
    let user = "ck_follow_db";
    let alias = sshd.add_user(user, Path::new("/bin/sh"));
    let remote_db = put_opencode_db(sshd, user, &db);
    drop(local);
    let conn = writer(&remote_db);
    let ssh_config = sshd.ssh_config().display().to_string();
    let target = format!("{alias}:ses_f0de50");
    follow_prints_wal_rows_once(home.path(), &["--ssh-config", &ssh_config], &target, &conn);
    drop(conn);
}
