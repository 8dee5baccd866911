//! Round trips over a real sshd: a session is resolved and its first range read in one exec on
//! a fresh connection (`--tail`, `--since`), and still answers right when that one exec cannot
//! (a shared prefix, a file moved, gone or rewritten, hostile names); `check`'s first run
//! reads many sessions in few execs and says what reading them one by one says, and `ls`
//! reads the heads of the rows it shows in one batch. Execs are
//! counted from `-v`, which prints one line per exec.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::sshd::{Sshd, sshd_or_skip};
use crate::support::{code, ndjson, records, stderr};

/// This module's own user: its files are all its own.
const USER: &str = "ck_rtt";

/// The user's alias, with what an earlier run of the test `tag` left removed (the user's
/// files outlive a run). Each test's ids start with its own digits, so that tests running at
/// once never share a prefix.
fn user(sshd: &Sshd, tag: &str) -> String {
    let alias = sshd.add_user(USER, Path::new("/bin/sh"));
    let projects = sshd.home(USER).join(".claude/projects");
    if let Ok(entries) = std::fs::read_dir(&projects) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().contains(tag) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    alias
}

fn run(sshd: &Sshd, home: &Path, args: &[&str]) -> Output {
    let mut full = vec!["--ssh-config", sshd.ssh_config().to_str().unwrap(), "-v"];
    full.extend_from_slice(args);
    crate::support::clankie(home)
        .args(&full)
        .output()
        .expect("run clankie-read")
}

/// How many execs the run made (one `-v` line each).
fn execs(out: &Output) -> usize {
    stderr(out)
        .lines()
        .filter(|l| l.contains("; exec "))
        .count()
}

fn line(uuid: &str, text: &str) -> String {
    format!(
        "{}\n",
        serde_json::json!({"type":"user","uuid":uuid,"timestamp":"2026-11-02T10:00:00.000Z",
            "message":{"role":"user","content":text}})
    )
}

fn transcript(tag: &str, n: usize) -> String {
    (0..n)
        .map(|i| line(&format!("{tag}-{i}"), &format!("prompt {i} 'q' $(not run)")))
        .collect()
}

fn ids(out: &Output) -> Vec<String> {
    assert_eq!(code(out), 0, "{}", stderr(out));
    records(&ndjson(out))
        .iter()
        // A record's id is its line's uuid and its index among the line's records.
        .map(|r| {
            let id = r["id"].as_str().unwrap();
            id.strip_suffix("#0").unwrap_or(id).to_string()
        })
        .collect()
}

fn cursor(out: &Output) -> String {
    ndjson(out)
        .iter()
        .find(|l| l["type"] == "page")
        .and_then(|l| l["cursor"].as_str())
        .expect("a page line with a cursor")
        .to_string()
}

#[test]
fn a_tail_and_a_since_are_one_exec_on_a_fresh_connection() {
    let Some(sshd) = sshd_or_skip() else { return };
    let alias = user(sshd, "-rtt-one");
    let home = tempfile::tempdir().unwrap();
    let id = "a1100001-0000-4000-8000-000000000001";
    // A subagent below the session's directory holds the id in its path too: the file whose
    // name holds it is the one.
    sshd.put_file(
        USER,
        format!(".claude/projects/-rtt-one/{id}.jsonl"),
        transcript("one", 300).as_bytes(),
    );
    sshd.put_file(
        USER,
        format!(".claude/projects/-rtt-one/{id}/subagents/agent-a1.jsonl"),
        transcript("sub", 2).as_bytes(),
    );
    let target = format!("{alias}:{id}");
    let tail = run(sshd, home.path(), &[&target, "--tail", "--json", "-n", "5"]);
    assert_eq!(
        ids(&tail),
        (295..300).map(|i| format!("one-{i}")).collect::<Vec<_>>()
    );
    assert_eq!(execs(&tail), 1, "{}", stderr(&tail));

    let since = cursor(&tail);
    let nothing_new = run(sshd, home.path(), &[&target, "--since", &since, "--json"]);
    assert!(ids(&nothing_new).is_empty());
    assert_eq!(execs(&nothing_new), 1, "{}", stderr(&nothing_new));

    // A prefix of one session and a harness-qualified id take the one exec too.
    let prefix = run(
        sshd,
        home.path(),
        &[
            &format!("{alias}:claude/a1100001-0000-4000-8000-0000000"),
            "--json",
            "-n",
            "1",
        ],
    );
    assert_eq!(ids(&prefix), ["one-299"]);
    assert_eq!(execs(&prefix), 1, "{}", stderr(&prefix));

    // Head pages and subagents give what they gave before (several execs may be needed).
    let head = run(sshd, home.path(), &[&target, "--head", "--json", "-n", "3"]);
    assert_eq!(ids(&head), ["one-0", "one-1", "one-2"]);
    let sub = run(
        sshd,
        home.path(),
        &[&format!("{target}+agent-a1"), "--json"],
    );
    assert_eq!(ids(&sub), ["sub-0", "sub-1"]);
}

#[test]
fn a_cursor_whose_file_moved_vanished_or_changed_still_answers_right() {
    let Some(sshd) = sshd_or_skip() else { return };
    let alias = user(sshd, "-rtt-mv-");
    let home = tempfile::tempdir().unwrap();
    let id = "a2200002-0000-4000-8000-000000000002";
    let body = transcript("mv", 40);
    let first = sshd.put_file(
        USER,
        format!(".claude/projects/-rtt-mv-a/{id}.jsonl"),
        body.as_bytes(),
    );
    let target = format!("{alias}:{id}");
    let tail = run(sshd, home.path(), &[&target, "--json", "-n", "2"]);
    let since = cursor(&tail);

    // Moved to another project directory, grown by one record: the cursor's hashes still
    // match, and the one new record follows.
    std::fs::remove_file(&first).unwrap();
    let grown = body.clone() + &line("mv-new", "after the move");
    sshd.put_file(
        USER,
        format!(".claude/projects/-rtt-mv-b/{id}.jsonl"),
        grown.as_bytes(),
    );
    let moved = run(sshd, home.path(), &[&target, "--since", &since, "--json"]);
    assert_eq!(ids(&moved), ["mv-new"]);
    assert_eq!(execs(&moved), 1, "{}", stderr(&moved));

    // Rewritten before the cursor: a reset, from the start.
    let rewritten = grown.replace("prompt 0 ", "PROMPT 0 ");
    sshd.put_file(
        USER,
        format!(".claude/projects/-rtt-mv-b/{id}.jsonl"),
        rewritten.as_bytes(),
    );
    let reset = run(sshd, home.path(), &[&target, "--since", &since, "--json"]);
    let got = ids(&reset);
    assert!(got[0].starts_with("reset@"), "{got:?}");
    assert_eq!(got[1], "mv-0");

    // Gone: no such session, as before.
    std::fs::remove_file(
        sshd.home(USER)
            .join(format!(".claude/projects/-rtt-mv-b/{id}.jsonl")),
    )
    .unwrap();
    let gone = run(sshd, home.path(), &[&target, "--since", &since, "--json"]);
    assert_ne!(code(&gone), 0);
    assert!(stderr(&gone).contains("no session"), "{}", stderr(&gone));
}

/// `cursor` with its path hint replaced (`None`: the kind-1 cursor an earlier version wrote).
fn with_hint(cursor: &str, rel: Option<&[u8]>) -> String {
    use clankie_engine::cursor::{Cursor, PathHint};
    let Ok(Cursor::Lines(mut lines)) = Cursor::decode(cursor) else {
        panic!("a line cursor: {cursor}")
    };
    lines.hint = rel.map(|rel| PathHint {
        harness: "claude".into(),
        rel: rel.to_vec(),
    });
    lines.encode()
}

#[test]
fn a_since_reads_where_its_cursor_says_and_a_tampered_or_old_cursor_still_answers_right() {
    let Some(sshd) = sshd_or_skip() else { return };
    let alias = user(sshd, "-rtt-cp");
    let home = tempfile::tempdir().unwrap();
    let id = "a4400004-0000-4000-8000-000000000004";
    let body = transcript("hint", 30);
    sshd.put_file(
        USER,
        format!(".claude/projects/-rtt-cp-a/{id}.jsonl"),
        body.as_bytes(),
    );
    let target = format!("{alias}:{id}");
    let tail = run(sshd, home.path(), &[&target, "--json", "-n", "2"]);
    let since = cursor(&tail);
    let rel = format!("projects/-rtt-cp-a/{id}.jsonl");
    let Ok(clankie_engine::cursor::Cursor::Lines(decoded)) =
        clankie_engine::cursor::Cursor::decode(&since)
    else {
        panic!("a line cursor")
    };
    assert_eq!(
        decoded.hint.map(|h| (h.harness, h.rel)),
        Some(("claude".to_string(), rel.clone().into_bytes()))
    );

    // A copy of the session in another project: looking for it finds two (the listing says
    // which), the cursor's path names the one it was made from, read in one exec.
    sshd.put_file(
        USER,
        format!(".claude/projects/-rtt-cp-b/{id}.jsonl"),
        transcript("copy", 31).as_bytes(),
    );
    let grown = body.clone() + &line("hint-new", "appended");
    sshd.put_file(
        USER,
        format!(".claude/projects/-rtt-cp-a/{id}.jsonl"),
        grown.as_bytes(),
    );
    let hinted = run(sshd, home.path(), &[&target, "--since", &since, "--json"]);
    assert_eq!(ids(&hinted), ["hint-new"]);
    assert_eq!(execs(&hinted), 1, "{}", stderr(&hinted));
    let old = with_hint(&since, None);
    assert!(old.len() < since.len());
    let looked_for = run(sshd, home.path(), &[&target, "--since", &old, "--json"]);
    assert_ne!(code(&looked_for), 0);
    assert!(
        stderr(&looked_for).contains("ambiguous"),
        "{}",
        stderr(&looked_for)
    );
    std::fs::remove_dir_all(sshd.home(USER).join(".claude/projects/-rtt-cp-b")).unwrap();

    // An old cursor (no hint) still answers in one exec, the session found by its id.
    let got = run(sshd, home.path(), &[&target, "--since", &old, "--json"]);
    assert_eq!(ids(&got), ["hint-new"]);
    assert_eq!(execs(&got), 1, "{}", stderr(&got));

    // A symlinked project directory beside it, holding a file of the same name outside the
    // root: a hint through it is not followed.
    sshd.put_file(
        USER,
        format!("outside-rtt-cp/{id}.jsonl"),
        transcript("outside", 40).as_bytes(),
    );
    let link = sshd.home(USER).join(".claude/projects/-rtt-cp-link");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(sshd.home(USER).join("outside-rtt-cp"), &link).unwrap();

    // Tampered hints (anyone can write a cursor with a good checksum): refused or confined,
    // never run; the session is found as without a hint, in one exec.
    let tampered: [&[u8]; 8] = [
        b"../../../../etc/passwd",
        b"/etc/passwd",
        b"projects/-rtt-cp-a/../../../outside-rtt-cp/a4400004-0000-4000-8000-000000000004.jsonl",
        b"projects/x'$(touch pwned)'/a4400004-0000-4000-8000-000000000004.jsonl",
        b"projects/`touch pwned2`/a4400004-0000-4000-8000-000000000004.jsonl",
        b"projects/-rtt-cp-a/\na4400004-0000-4000-8000-000000000004.jsonl",
        b"projects/-rtt-cp-link/a4400004-0000-4000-8000-000000000004.jsonl",
        b"projects/-rtt-cp-a/a4400004-0000-4000-8000-000000000004.jsonl\"; touch pwned; \"",
    ];
    for hint in tampered {
        let bad = with_hint(&since, Some(hint));
        let got = run(sshd, home.path(), &[&target, "--since", &bad, "--json"]);
        assert_eq!(ids(&got), ["hint-new"], "{}", String::from_utf8_lossy(hint));
        assert_eq!(execs(&got), 1, "{}", stderr(&got));
    }
    for pwned in ["pwned", "pwned2", ".claude/pwned", ".claude/projects/pwned"] {
        assert!(!sshd.home(USER).join(pwned).exists(), "{pwned}");
    }
    std::fs::remove_file(&link).unwrap();
}

#[test]
fn shared_prefixes_and_hostile_names_fall_back_to_the_listing() {
    let Some(sshd) = sshd_or_skip() else { return };
    let alias = user(sshd, "-rtt-h");
    let home = tempfile::tempdir().unwrap();
    let (a, b) = (
        "a3300003-0000-4000-8000-0000000000a3",
        "a3300003-0000-4000-8000-0000000000b3",
    );
    for (id, tag) in [(a, "pa"), (b, "pb")] {
        sshd.put_file(
            USER,
            format!(".claude/projects/-rtt-h-pre/{id}.jsonl"),
            transcript(tag, 3).as_bytes(),
        );
    }
    let ambiguous = run(
        sshd,
        home.path(),
        &[
            &format!("{alias}:a3300003-0000-4000-8000-0000000000"),
            "--json",
        ],
    );
    assert_ne!(code(&ambiguous), 0);
    assert!(
        stderr(&ambiguous).contains("ambiguous"),
        "{}",
        stderr(&ambiguous)
    );
    assert_eq!(
        ids(&run(
            sshd,
            home.path(),
            &[&format!("{alias}:{b}"), "--json"]
        )),
        ["pb-0", "pb-1", "pb-2"]
    );

    // Names with quotes, `$()`, backquotes and a newline: read, never run.
    let hostile = "-rtt-h it's \"q\" $(touch pwned) `touch pwned2`";
    let c = "a3300003-0000-4000-8000-0000000000c3";
    sshd.put_file(
        USER,
        format!(".claude/projects/{hostile}/{c}.jsonl"),
        transcript("pc", 2).as_bytes(),
    );
    let got = run(sshd, home.path(), &[&format!("{alias}:{c}"), "--json"]);
    assert_eq!(ids(&got), ["pc-0", "pc-1"]);
    assert_eq!(execs(&got), 1, "{}", stderr(&got));
    let d = "a3300003-0000-4000-8000-0000000000d3";
    sshd.put_file(
        USER,
        format!(".claude/projects/-rtt-h new\nline $(touch pwned)/{d}.jsonl"),
        transcript("pd", 2).as_bytes(),
    );
    let got = run(sshd, home.path(), &[&format!("{alias}:{d}"), "--json"]);
    assert_eq!(ids(&got), ["pd-0", "pd-1"]);
    for pwned in ["pwned", "pwned2"] {
        assert!(!sshd.home(USER).join(pwned).exists());
    }
}

#[test]
fn the_first_check_of_many_sessions_takes_few_execs_and_says_what_one_by_one_says() {
    let Some(sshd) = sshd_or_skip() else { return };
    let alias = user(sshd, "-rtt-check");
    let home = tempfile::tempdir().unwrap();
    let root = sshd.home(USER).join("rtt-check/.claude");
    let n = 300;
    for i in 0..=n {
        let id = format!("c4ec0000-0000-4000-8000-{i:012}");
        // About 1 KiB each, the newest record with its own timestamp; the last one over
        // 64 KiB (read by a batch, not with the listing).
        let records = if i == n { 1000 } else { 4 };
        let ts = format!("2026-11-02T10:{:02}:{:02}.000Z", i / 60, i % 60);
        put_session(
            sshd,
            format!("rtt-check/.claude/projects/-p{}/{id}.jsonl", i % 7),
            &format!("c{i}"),
            records,
            &ts,
            i % 300 + 1,
        );
    }
    let hosts = many_hosts_file(home.path(), &alias, &root);
    let state = home.path().join("state.json");
    // `ls` reads the heads of the fifty rows it shows in one batch too.
    let ls = run(
        sshd,
        home.path(),
        &["--hosts", hosts.to_str().unwrap(), "ls", "many"],
    );
    assert_eq!(code(&ls), 0, "{}", stderr(&ls));
    assert_eq!(execs(&ls), 2, "{}", stderr(&ls));
    assert!(String::from_utf8_lossy(&ls.stdout).contains("prompt 0 'q' $(not run)"));

    let out = first_check(sshd, home.path(), &hosts, &state);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // One listing, which reads the 300 small sessions along and the large one's head and
    // tail window.
    assert_eq!(execs(&out), 1, "{} execs:\n{}", execs(&out), stderr(&out));
    let activity: Vec<Value> = ndjson(&out)
        .into_iter()
        .filter(|l| l["type"] == "activity")
        .collect();
    assert_eq!(activity.len(), n + 1);
    for a in &activity {
        let i: usize = a["session"].as_str().unwrap()[24..].parse().unwrap();
        assert_eq!(a["change"], "new");
        assert_eq!(
            a["last_ts"],
            format!("2026-11-02T10:{:02}:{:02}.000Z", i / 60, i % 60),
            "{a}"
        );
    }
    // The same host read as a local root (one read per session, no batch) saves the same
    // state.
    assert_same_state_as_local(sshd, home.path(), &root, &state);
}

/// Writes a Claude session of the test user at `rel`: `records` records tagged `tag`, then a
/// newest one at `ts` whose prompt is `len` bytes.
fn put_session(sshd: &Sshd, rel: String, tag: &str, records: usize, ts: &str, len: usize) {
    let mut body = transcript(tag, records);
    body += &format!(
        "{}\n",
        serde_json::json!({"type":"user","uuid":format!("{tag}-last"),"timestamp":ts,
            "message":{"role":"user","content":"x".repeat(len)}})
    );
    sshd.put_file(USER, rel, body.as_bytes());
}

/// `check --json` of the hosts file `hosts` with the state file `state` (`-v`).
fn first_check(sshd: &Sshd, home: &Path, hosts: &Path, state: &Path) -> Output {
    let (hosts, state) = (hosts.to_str().unwrap(), state.to_str().unwrap());
    run(
        sshd,
        home,
        &["--hosts", hosts, "check", "--state", state, "--json"],
    )
}

/// A hosts file in `home` whose host `many` is `alias` with the Claude root `root`.
fn many_hosts_file(home: &Path, alias: &str, root: &Path) -> std::path::PathBuf {
    let hosts = home.join("hosts.toml");
    std::fs::write(
        &hosts,
        format!(
            "[hosts.many]\nssh = \"{alias}\"\nroots = {{ claude = \"{}\" }}\n",
            root.display()
        ),
    )
    .unwrap();
    hosts
}

/// A first `check` of the root `root` (host `many`), as a local root sees it, saves the state
/// the one at `state` holds (but for `settled`, which depends on the clock).
fn assert_same_state_as_local(sshd: &Sshd, home: &Path, root: &Path, state: &Path) {
    let local_hosts = home.join("local.toml");
    std::fs::write(
        &local_hosts,
        format!(
            "[hosts.many]\nlocal = true\nroots = {{ claude = \"{}\" }}\n",
            root.display()
        ),
    )
    .unwrap();
    let local_state = home.join("local-state.json");
    let local = first_check(sshd, home, &local_hosts, &local_state);
    assert_eq!(code(&local), 0, "{}", stderr(&local));
    let saved =
        |p: &Path| -> Value { serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap() };
    let strip = |mut v: Value| {
        // The cursor binds the host's name, the same here; `settled` depends on the clock.
        for s in v["hosts"]["many"]["sessions"]
            .as_object_mut()
            .unwrap()
            .values_mut()
        {
            s.as_object_mut().unwrap().remove("settled");
        }
        v
    };
    assert_eq!(strip(saved(state)), strip(saved(&local_state)));
}

/// A host whose small sessions add up past what a listing reads along (32 MiB): the reply is
/// cut before its listing is whole, the host is listed again, and the sessions are read by
/// batches; nothing is lost.
#[test]
fn a_first_check_whose_listing_was_cut_at_its_budget_lists_again_and_loses_nothing() {
    let Some(sshd) = sshd_or_skip() else { return };
    let alias = user(sshd, "-rtt-cut");
    let home = tempfile::tempdir().unwrap();
    let root = sshd.home(USER).join("rtt-cut/.claude");
    // About 3.5 KiB each (a read block of them stays under its 8 MiB cap), 51 MiB in all: over
    // the 44 MiB budget of a first check's listing.
    let n = 15_000;
    for i in 0..n {
        let id = format!("c7c70000-0000-4000-8000-{i:012}");
        let ts = format!(
            "2026-11-03T{:02}:{:02}:{:02}.000Z",
            i / 3600,
            i / 60 % 60,
            i % 60
        );
        put_session(
            sshd,
            format!("rtt-cut/.claude/projects/-p{}/{id}.jsonl", i % 11),
            &format!("k{i}"),
            20,
            &ts,
            i % 500 + 1,
        );
    }
    let hosts = many_hosts_file(home.path(), &alias, &root);
    let state = home.path().join("state.json");
    let out = first_check(sshd, home.path(), &hosts, &state);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("listing again"), "{}", stderr(&out));
    let new = ndjson(&out)
        .into_iter()
        .filter(|l| l["type"] == "activity" && l["change"] == "new")
        .count();
    assert_eq!(new, n);
    assert_same_state_as_local(sshd, home.path(), &root, &state);
}

/// `script read` with several `--path` prints one batched POSIX script; run by `sh`, its reply
/// decodes to each file's range (a missing one is its own error).
#[test]
fn script_read_of_several_paths_is_one_script() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let dir = home.join(".claude/projects/-w");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.jsonl"), b"0123456789").unwrap();
    std::fs::write(dir.join("it's $(b).jsonl"), b"abcdefghij").unwrap();
    let paths = [
        "projects/-w/a.jsonl",
        "projects/-w/it's $(b).jsonl",
        "projects/-w/gone.jsonl",
    ];
    let mut args = vec!["script", "read", "--offset", "2", "--len", "3"];
    for p in &paths {
        args.extend(["--path", p]);
    }
    let out = crate::support::clankie(home).args(&args).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = out.stdout;
    let payload = &text[text.windows(2).position(|w| w == b"\n\n").unwrap() + 2..];
    assert!(text.starts_with(b"sh -s\n\n"));
    let script = String::from_utf8_lossy(payload);
    let at = script.find("N='").unwrap() + 3;
    let nonce = script[at..at + 32].to_string();
    let mut child = std::process::Command::new("sh")
        .arg("-s")
        .env("HOME", home)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload).unwrap();
    let reply = child.wait_with_output().unwrap().stdout;
    let root = std::fs::canonicalize(home.join(".claude")).unwrap();
    let reads: Vec<(clankie_host::FileRef, Vec<clankie_model::ByteRange>)> = paths
        .iter()
        .map(|p| {
            let file = clankie_host::FileRef {
                harness: clankie_engine::harness::by_name("claude").unwrap(),
                root: root.to_str().unwrap().as_bytes().to_vec(),
                rel: p.as_bytes().to_vec(),
            };
            (file, vec![clankie_model::ByteRange::new(2, 3)])
        })
        .collect();
    let got = clankie_host::script::decode_read_many("h", &nonce, &reads, &reply).unwrap();
    assert_eq!(got[0].as_ref().unwrap().chunks, [b"234".to_vec()]);
    assert_eq!(got[1].as_ref().unwrap().chunks, [b"cde".to_vec()]);
    assert!(matches!(
        got[2],
        Err(clankie_host::HostError::NotFound { .. })
    ));
}

/// The bytes a run's execs brought back on stdout, from `-v`'s `exec done` lines.
fn stdout_bytes(out: &Output) -> usize {
    stderr(out)
        .lines()
        .filter_map(|l| {
            l.split_once("exec done: ")?
                .1
                .split_once("; ")?
                .1
                .split_once(" bytes on stdout")
        })
        .map(|(n, _)| n.parse::<usize>().unwrap())
        .sum()
}

/// A host whose OpenCode database is big (20 MiB, generated here): a Claude session's `--tail`
/// and `--since` by its id load no database, so they move a few KiB, in one exec.
#[test]
fn a_claude_session_beside_a_big_opencode_db_loads_no_database() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_rtt_db";
    let alias = sshd.add_user(user, Path::new("/bin/sh"));
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("opencode.db");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let dump = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/opencode/opencode-1.18.33.sql");
        conn.execute_batch(&std::fs::read_to_string(dump).unwrap())
            .unwrap();
        conn.execute_batch(
            "CREATE TABLE ballast (b BLOB);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20)
             INSERT INTO ballast SELECT randomblob(1048576) FROM n;",
        )
        .unwrap();
    }
    let db_bytes = std::fs::read(&db).unwrap();
    assert!(db_bytes.len() > 20 << 20);
    sshd.put_file(user, ".local/share/opencode/opencode.db", &db_bytes);
    let id = "a5500005-0000-4000-8000-000000000005";
    sshd.put_file(
        user,
        format!(".claude/projects/-rtt-db/{id}.jsonl"),
        transcript("db", 50).as_bytes(),
    );
    let target = format!("{alias}:{id}");
    let tail = run(sshd, home.path(), &[&target, "--tail", "--json", "-n", "3"]);
    assert_eq!(ids(&tail), ["db-47", "db-48", "db-49"]);
    assert_eq!(execs(&tail), 1, "{}", stderr(&tail));
    assert!(stdout_bytes(&tail) < 64 << 10, "{}", stderr(&tail));
    // No database read follows: no shell is kept for one.
    assert!(!stderr(&tail).contains("kept shell"), "{}", stderr(&tail));

    let since = run(
        sshd,
        home.path(),
        &[&target, "--since", &cursor(&tail), "--json"],
    );
    assert!(ids(&since).is_empty());
    assert_eq!(execs(&since), 1, "{}", stderr(&since));
    assert!(stdout_bytes(&since) < 64 << 10, "{}", stderr(&since));

    // The database is there, and read when a session of it is asked for.
    let opencode = run(
        sshd,
        home.path(),
        &[
            &format!("{alias}:opencode/ses_f0de500f8ffeXvsiYJDOg5JtrU"),
            "--json",
            "-n",
            "1",
        ],
    );
    assert_eq!(ids(&opencode).len(), 1, "{}", stderr(&opencode));
}
