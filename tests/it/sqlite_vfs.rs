//! OpenCode databases read page by page over SSH (the SQLite VFS): a database larger
//! than the 64 MiB bound lists its sessions and reads the newest page of one, moving a small
//! part of it over the wire (the bytes of every exec's stdout, from `-v`) with bounded memory
//! (GNU time's `%M`); `--follow` prints rows committed into the WAL, and goes on past a
//! checkpoint that restarts the WAL. A `--tail` page, read from the newest rows only, holds the
//! same records as the last of a read of all, and `--since` its cursor goes on after them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use rusqlite::Connection;

use crate::common::sshd::{Sshd, sshd_or_skip};
use crate::support::{clankie, code, ids, ndjson, page, records, run, stderr};

/// This module's own user: its database is its own.
const USER: &str = "ck_vfs";
/// The session read, and the one whose big rows make the database large.
const SESSION: &str = "ses_1a2b3c4d5e6fVfsReadPageByPage";
const FILLER: &str = "ses_9f8e7d6c5b4aVfsFillerRowsBig";
/// Messages of `SESSION`, one text part each.
const MESSAGES: usize = 120;
/// The filler: rows of this many bytes of JSON text, enough of them to pass 64 MiB.
const FILLER_ROW_BYTES: usize = 14 * 1024 * 1024;
const FILLER_ROWS: usize = 5;
/// Peak resident memory a read of the large database may reach, in KiB.
const MEMORY_BOUND_KIB: u64 = 64 * 1024;

/// OpenCode's tables and indexes for sessions, messages and parts (as OpenCode 1.18 creates
/// them, see `tests/fixtures/opencode/`), in WAL mode with no automatic checkpoint.
const SCHEMA: &str = "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;
    CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text,
      slug text NOT NULL, directory text NOT NULL, title text NOT NULL, version text NOT NULL,
      time_created integer NOT NULL, time_updated integer NOT NULL);
    CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
      time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
    CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
      time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
    CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
    CREATE INDEX part_message_id_id_idx ON part (message_id, id);
    CREATE INDEX part_session_idx ON part (session_id);";

/// One user message with one text part (`row N`) of `session`, created at `N` ms.
fn add_row(conn: &Connection, session: &str, n: usize, text: &str) {
    let message = format!("msg_{n:010}{session}");
    let created = 1_790_000_000_000i64 + n as i64;
    conn.execute(
        "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
        (
            &message,
            session,
            created,
            format!("{{\"role\":\"user\",\"time\":{{\"created\":{created}}}}}"),
        ),
    )
    .unwrap();
    conn.execute(
        "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
        (
            format!("prt_{n:010}{session}"),
            &message,
            session,
            created,
            serde_json::json!({"type": "text", "text": text}).to_string(),
        ),
    )
    .unwrap();
}

fn part_id(n: usize) -> String {
    format!("prt_{n:010}{SESSION}")
}

/// `user`'s OpenCode database made afresh (made by the test user's helper, so the directories
/// are the user's; no WAL or shared memory left from an earlier run), with OpenCode's tables
/// and a session row for each (id, title) of `sessions`; returns the writer and its path.
fn new_database(sshd: &Sshd, user: &str, sessions: &[(&str, &str)]) -> (Connection, PathBuf) {
    let path = sshd.put_file(user, ".local/share/opencode/opencode.db", b"");
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    for (id, title) in sessions {
        conn.execute(
            "INSERT INTO session VALUES (?1, 'p', NULL, 's', '/work/vfs', ?2, '1.18.33', \
             1790000000000, 1790000000000)",
            (id, title),
        )
        .unwrap();
    }
    (conn, path)
}

/// `USER`'s OpenCode database, over 64 MiB after a checkpoint, and a writer that keeps its new
/// rows in the WAL; returns the writer and the database's path.
fn large_database(sshd: &Sshd) -> (Connection, PathBuf) {
    let (conn, path) = new_database(
        sshd,
        USER,
        &[(SESSION, "read page by page"), (FILLER, "big rows")],
    );
    conn.execute_batch("BEGIN").unwrap();
    let big = "x".repeat(FILLER_ROW_BYTES);
    for n in 0..FILLER_ROWS {
        add_row(&conn, FILLER, n, &big);
    }
    for n in 0..MESSAGES {
        add_row(&conn, SESSION, 1000 + n, &format!("row {n}"));
    }
    conn.execute_batch("COMMIT; PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 64 * 1024 * 1024, "{size}");
    (conn, path)
}

/// The bytes all scripts of a `-v` run printed on stdout: its execs' (`exec done` lines) and
/// its kept shell's (`kept shell: script of N bytes, reply of M bytes`).
fn bytes_moved(out: &Output) -> u64 {
    stderr(out)
        .lines()
        .filter_map(|l| {
            if let Some((_, rest)) = l.split_once("kept shell: script of ") {
                let (_, rest) = rest.split_once(", reply of ")?;
                return rest.split_once(" bytes")?.0.parse::<u64>().ok();
            }
            let (_, rest) = l.split_once("exec done: ")?;
            let (_, rest) = rest.split_once("; ")?;
            rest.split_once(" bytes on stdout")?.0.parse::<u64>().ok()
        })
        .sum()
}

/// Runs `cmd` under GNU time: its output and its peak resident memory in KiB, or `None` (the
/// test skips) when GNU time is missing outside CI.
fn run_measured(cmd: &Command) -> Option<(Output, u64)> {
    crate::common::run_measured(cmd, std::time::Duration::from_secs(300))
}

fn reader(sshd: &Sshd, home: &Path, args: &[&str]) -> Command {
    let mut cmd = clankie(home);
    cmd.args(["--ssh-config", sshd.ssh_config().to_str().unwrap(), "-v"])
        .args(args);
    cmd
}

#[test]
fn a_database_over_64_mib_lists_and_reads_its_newest_page_fetching_little() {
    let Some(sshd) = sshd_or_skip() else { return };
    let alias = sshd.add_user(USER, Path::new("/bin/sh"));
    let (conn, path) = large_database(sshd);
    let size = std::fs::metadata(&path).unwrap().len();
    let home = tempfile::tempdir().unwrap();

    let listed = reader(sshd, home.path(), &["ls", &alias, "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(text.contains(SESSION) && text.contains(FILLER), "{text}");
    let moved = bytes_moved(&listed);
    assert!(
        moved > 0 && moved < 1024 * 1024,
        "ls moved {moved} bytes of {size}"
    );

    let target = format!("{alias}:{SESSION}");
    let Some((read, peak_kib)) = run_measured(&reader(
        sshd,
        home.path(),
        &["read", &target, "--json", "--limit", "50"],
    )) else {
        return;
    };
    assert_eq!(code(&read), 0, "{}", stderr(&read));
    let got = records(&ndjson(&read));
    let newest: Vec<String> = (MESSAGES - 50..MESSAGES)
        .map(|n| part_id(1000 + n))
        .collect();
    let got_parts: Vec<String> = ids(&got)
        .into_iter()
        .filter(|id| id.starts_with("prt_"))
        .collect();
    assert_eq!(got_parts, newest);
    let moved = bytes_moved(&read);
    assert!(
        moved < 4 * 1024 * 1024,
        "read moved {moved} bytes of {size}"
    );
    assert!(
        peak_kib < MEMORY_BOUND_KIB,
        "peak {peak_kib} KiB reading a {size}-byte database"
    );

    // --since the page's cursor reads the newest rows again, not all: nothing new, then the
    // one row committed since.
    let cursor = page(&ndjson(&read))["cursor"].as_str().unwrap().to_string();
    let since = || {
        let out = reader(
            sshd,
            home.path(),
            &["read", &target, "--json", "--since", &cursor],
        )
        .output()
        .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let moved = bytes_moved(&out);
        assert!(moved < 4 * 1024 * 1024, "--since moved {moved} bytes");
        ids(&records(&ndjson(&out)))
    };
    assert!(since().is_empty());
    add_row(&conn, SESSION, 1000 + MESSAGES, "new");
    assert_eq!(since(), [part_id(1000 + MESSAGES)]);
    drop(conn);
}

#[test]
fn follow_prints_rows_committed_into_the_wal_across_a_checkpoint() {
    let Some(sshd) = sshd_or_skip() else { return };
    // A user of its own: the test above writes its database at the same place for ck_vfs.
    let user = "ck_vfs_follow";
    let alias = sshd.add_user(user, Path::new("/bin/sh"));
    let (conn, _) = new_database(sshd, user, &[(SESSION, "t")]);
    add_row(&conn, SESSION, 0, "row 0");
    let home = tempfile::tempdir().unwrap();
    let ssh_config = sshd.ssh_config().display().to_string();
    let target = format!("{alias}:{SESSION}");
    let args = crate::follow::follow_args(&["--ssh-config", &ssh_config, "-v"], &target, "0.05");
    let (child, rx) = crate::follow::follow(&args, home.path());
    for n in 1..=4 {
        std::thread::sleep(Duration::from_millis(400));
        add_row(&conn, SESSION, n, &format!("row {n}"));
        if n == 2 {
            // The checkpoint copies the WAL into the database and restarts it: new salts, the
            // follower's cached pages dropped, the next commits written over the old frames.
            conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .unwrap();
        }
    }
    std::thread::sleep(Duration::from_millis(400));
    // More than expected, for a short while: a record printed twice would show.
    let (got, err) = crate::follow::collect(child, rx, 100, Duration::from_secs(3));
    let parts: Vec<String> = ids(&got)
        .into_iter()
        .filter(|id| id.starts_with("prt_"))
        .collect();
    let want: Vec<String> = (0..=4).map(|n| format!("prt_{n:010}{SESSION}")).collect();
    // The follow starts at the newest page (row 0), then prints each new row once.
    assert_eq!(parts, want, "{err}");
    // Its polls load the database again and again: they run on a kept shell (opened by the
    // first poll), the checkpoint and the restarted WAL seen through it as through an exec.
    assert!(err.contains("kept shell: script of "), "{err}");
    drop(conn);
}

/// The real OpenCode 1.18.33 dump (`tests/fixtures/opencode/`), its session's three messages
/// and seven parts (a user prompt, a tool call with its step parts, an answer) copied `rounds`
/// times after it, each round later than the last: `$HOME/.local/share/opencode/opencode.db`.
fn real_database_grown(home: &Path, rounds: usize) -> (Connection, PathBuf) {
    let dir = home.join(".local/share/opencode");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("opencode.db");
    let dump =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/opencode/opencode-1.18.33.sql");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(&std::fs::read_to_string(dump).unwrap())
        .unwrap();
    conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;")
        .unwrap();
    for round in 1..=rounds {
        add_round(&conn, round);
    }
    (conn, path)
}

/// One more copy of the dump's session's messages and parts, `round` hours after it.
fn add_round(conn: &Connection, round: usize) {
    let later = round as i64 * 3_600_000;
    let suffix = format!("{round:04}");
    conn.execute(
        "INSERT INTO message SELECT id || ?1, session_id, time_created + ?2, \
         time_updated + ?2, data FROM message WHERE length(id) = 30",
        (&suffix, later),
    )
    .unwrap();
    conn.execute(
        "INSERT INTO part SELECT id || ?1, message_id || ?1, session_id, time_created + ?2, \
         time_updated + ?2, data FROM part WHERE length(id) = 30",
        (&suffix, later),
    )
    .unwrap();
}

#[test]
fn a_tail_from_the_newest_rows_is_the_end_of_a_read_of_all_and_since_goes_on() {
    const REAL_SESSION: &str = "ses_f0de500f8ffeXvsiYJDOg5JtrU";
    let home = tempfile::tempdir().unwrap();
    let (conn, _path) = real_database_grown(home.path(), 40);
    let target = format!("local:{REAL_SESSION}");
    let read = |args: &[&str]| {
        let mut all_args = vec!["read", &target, "--json"];
        all_args.extend_from_slice(args);
        let out = run(home.path(), &all_args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let lines = ndjson(&out);
        (records(&lines), page(&lines))
    };
    let (all, _) = read(&["--all"]);
    // Four records a round (the step parts give none), the dump's own round first.
    assert_eq!(all.len(), 4 * 41);
    for limit in [1, 2, 3, 4, 5, 9, 50, 163, 164, 200] {
        let (tail, p) = read(&["--tail", "--limit", &limit.to_string()]);
        let want = &all[all.len() - limit.min(all.len())..];
        assert_eq!(ids(&tail), ids(want), "--tail --limit {limit}");
        assert_eq!(tail, want, "--tail --limit {limit}");
        assert_eq!(p["older"], limit < all.len(), "--limit {limit}");
        assert_eq!(
            (&p["more"], &p["pending_tail"]),
            (&false.into(), &false.into())
        );
    }
    // The default page, and --since its cursor: nothing new, then the next round.
    let (tail, p) = read(&["--tail"]);
    assert_eq!(tail, all[all.len() - tail.len()..]);
    let cursor = p["cursor"].as_str().unwrap().to_string();
    let (none, p) = read(&["--since", &cursor]);
    assert!(none.is_empty(), "{none:?}");
    assert_eq!(p["reset"], false);
    add_round(&conn, 41);
    let (next, p) = read(&["--since", &cursor]);
    assert_eq!(p["reset"], false);
    let (grown, _) = read(&["--all"]);
    assert_eq!(next, grown[all.len()..]);
    assert_eq!(next.len(), 4);
    // A record of the tail page changed under its cursor: the read starts again.
    conn.execute(
        "UPDATE part SET data = json_set(data, '$.text', 'edited') \
         WHERE id = 'prt_0f21b0337001GtX6vvuhLhelY70040'",
        [],
    )
    .unwrap();
    let (_, p) = read(&["--since", &cursor]);
    assert_eq!(p["reset"], true);
}

/// How many scripts a `-v` run sent, each a round trip: its execs and the scripts it ran on a
/// kept shell (one line each; the line that says a kept shell opened is neither).
fn calls(out: &Output) -> usize {
    stderr(out)
        .lines()
        .filter(|l| {
            (l.contains("; exec ") && !l.contains("kept shell: "))
                || l.contains("kept shell: script of ")
        })
        .count()
}

/// How many of them ran on a kept shell.
fn kept_calls(out: &Output) -> usize {
    stderr(out)
        .lines()
        .filter(|l| l.contains("kept shell: script of "))
        .count()
}

#[test]
fn a_session_only_a_larger_database_holds_costs_the_find_and_read_and_its_walk() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_vfs_big_execs";
    let alias = sshd.add_user(user, Path::new("/bin/sh"));
    // 300 sessions (the session table more than a page), 3,000 messages of 1 KiB parts, one
    // in 50 of the session read: about 4 MiB, far past the first 256 KiB.
    let others: Vec<String> = (0..300)
        .map(|i| format!("ses_{i:04}OtherSessionOfMany"))
        .collect();
    let sessions: Vec<(&str, &str)> = std::iter::once(SESSION)
        .chain(others.iter().map(String::as_str))
        .map(|id| (id, "title"))
        .collect();
    let (conn, _) = new_database(sshd, user, &sessions);
    let text = "x".repeat(1024);
    conn.execute_batch("BEGIN").unwrap();
    for n in 0..3000 {
        let session = if n % 50 == 0 {
            SESSION
        } else {
            &others[n % others.len()]
        };
        add_row(&conn, session, n, &text);
    }
    conn.execute_batch("COMMIT").unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    // The newest rows in the WAL: they come with the find-and-read's read of it.
    for n in 3000..3002 {
        add_row(&conn, SESSION, n, &format!("row {n}"));
    }
    let home = tempfile::tempdir().unwrap();
    let mut want: Vec<String> = (50..60)
        .map(|k| format!("prt_{:010}{SESSION}", k * 50))
        .collect();
    want.drain(..2);
    want.extend((3000..3002).map(|n| format!("prt_{n:010}{SESSION}")));
    let out = reader(
        sshd,
        home.path(),
        &[
            "read",
            &format!("{alias}:{SESSION}"),
            "--json",
            "--tail",
            "--limit",
            "10",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let parts: Vec<String> = ids(&records(&ndjson(&out)))
        .into_iter()
        .filter(|id| id.starts_with("prt_"))
        .collect();
    assert_eq!(parts, want);
    // The find-and-read (the narrowed listing, and the database's headers with its first
    // pages and the WAL whole: no load of its own), then the walk's levels, each read once
    // for the sessions' scan and the read's newest rows together (the session table's
    // leaves with the message index's), and the check after the query. No read of the
    // session table of its own, no load for the read (it resumes the resolution's). The
    // trees the walk reaches later come ahead with its first level (a database this small:
    // whole, their leaves a level that fits `AHEAD_BYTES`), so the walk is its first level,
    // the message index's leaves, and the parts' rows with their overflow pages and the
    // headers (6 execs without reading ahead). The database larger than its first read, the
    // first level's read opens a kept shell, which the levels after it run on once it is open
    // (the first level goes as an exec meanwhile).
    assert_eq!(calls(&out), 4, "{}", stderr(&out));
    assert!(kept_calls(&out) <= 3, "{}", stderr(&out));
    drop(conn);
}

#[test]
fn a_session_no_path_names_is_resolved_from_its_database_and_read_on_the_same_load() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_vfs_execs";
    let alias = sshd.add_user(user, Path::new("/bin/sh"));
    let (conn, _) = new_database(sshd, user, &[(SESSION, "read"), (FILLER, "other")]);
    for n in 0..30 {
        add_row(&conn, SESSION, n, &format!("row {n}"));
    }
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let want: Vec<String> = (20..30).map(|n| format!("prt_{n:010}{SESSION}")).collect();
    for target in [
        format!("{alias}:{SESSION}"),
        format!("{alias}:opencode/{SESSION}"),
    ] {
        let out = reader(
            sshd,
            home.path(),
            &["read", &target, "--json", "--tail", "--limit", "10"],
        )
        .output()
        .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let parts: Vec<String> = ids(&records(&ndjson(&out)))
            .into_iter()
            .filter(|id| id.starts_with("prt_"))
            .collect();
        assert_eq!(parts, want, "{target}");
        // The find-and-read alone: its narrowed listing holds the database, and no path
        // holding the id, it also read the database's headers with its first pages (this
        // small database whole), which the load starts from. No full listing, no load of its
        // own, no second load for the read, and no check after it: every page came with the
        // headers. Nothing follows it: no kept shell is opened.
        assert_eq!(calls(&out), 1, "{target}: {}", stderr(&out));
        assert!(!stderr(&out).contains("kept shell"), "{}", stderr(&out));
    }
    // A prefix is not settled by the databases alone: the full listing answers it.
    let prefix = format!("{alias}:{}", &SESSION[..12]);
    let out = reader(
        sshd,
        home.path(),
        &["read", &prefix, "--json", "--tail", "--limit", "10"],
    )
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(ids(&records(&ndjson(&out))), want);
    assert!(calls(&out) > 2, "{}", stderr(&out));
    drop(conn);
}

/// The scripts of a `-v` run's stderr, one line each: its execs and the scripts it ran on a
/// kept shell.
fn script_lines(err: &str) -> Vec<&str> {
    err.lines()
        .filter(|l| {
            (l.contains("; exec ") && !l.contains("kept shell: "))
                || l.contains("kept shell: script of ")
        })
        .collect()
}

/// The bytes a script's `-v` line says it moved on the wire, up and down.
fn wire_bytes(line: &str) -> Option<u64> {
    let (_, rest) = line.split_once("moved up ")?;
    let (up, rest) = rest.split_once(", down ")?;
    let down = rest.split_once(' ')?.0;
    Some(up.parse::<u64>().ok()? + down.parse::<u64>().ok()?)
}

#[test]
fn an_idle_host_wide_follow_of_a_database_of_many_sessions_starts_small_and_polls_small() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_vfs_idle";
    let alias = sshd.add_user(user, Path::new("/bin/sh"));
    // 100 sessions whose rows interleave, some 2 MiB: larger than a load's first read.
    let sessions: Vec<String> = (0..100)
        .map(|i| format!("ses_{i:04}IdleHostWideFollowOf"))
        .collect();
    let titled: Vec<(&str, &str)> = sessions.iter().map(|s| (s.as_str(), "idle")).collect();
    let (conn, _) = new_database(sshd, user, &titled);
    conn.execute_batch("BEGIN").unwrap();
    let text = "word ".repeat(200);
    for n in 0..2000 {
        add_row(&conn, &sessions[n % sessions.len()], n, &text);
    }
    conn.execute_batch("COMMIT; PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let ssh_config = sshd.ssh_config().display().to_string();
    let args = crate::follow::follow_args(
        &["--ssh-config", &ssh_config, "-v"],
        &format!("{alias}:*"),
        "0.3",
    );
    let (child, rx) = crate::follow::follow(&args, home.path());
    // Nothing is written: nothing comes, for 8 s.
    let (got, err) = crate::follow::collect(child, rx, 1, Duration::from_secs(8));
    assert!(got.is_empty(), "{got:?}");
    let scripts = script_lines(&err);
    // The start: the listing and the newest page of the 4 sessions changed last (not of 64,
    // some 7 scripts each); then at most 27 polls of 0.3 s, two scripts each.
    assert!(
        scripts.len() <= 40 + 2 * 27,
        "{} scripts:\n{err}",
        scripts.len()
    );
    // An idle poll: the listing and the read of the two headers, both held by the kept shell
    // (a line goes up, not the script), each under 2 KiB on the wire.
    let last = &scripts[scripts.len().saturating_sub(6)..];
    assert!(last.len() == 6, "{err}");
    for line in last {
        assert!(line.contains("held by the shell"), "{line}\n{err}");
        let moved = wire_bytes(line).unwrap_or(u64::MAX);
        assert!(moved <= 2048, "{moved} bytes: {line}");
    }
    drop(conn);
}
