//! Read filters end to end: `--kind`, `--grep` (after redaction) and `--after`/`--before` apply
//! before paging: `-n N` is the N newest (with `--head`, first) records they keep, the page
//! line counts the records examined and left out (`"filtered"`), and the page's cursor
//! continues after the last record examined, so `--since` after a filtered page continues
//! exactly. A filtered `--follow` says nothing until a record matches.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{code, ids, ndjson, page, records, run, stderr};

/// A temp `$HOME` with a session of 20 turns: a prompt, an answer and a tool call with its
/// result, a minute apart from 10:00Z; turn 7's prompt holds a secret.
fn home() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join(".claude/projects/-f");
    fs::create_dir_all(&project).unwrap();
    let mut body = String::new();
    for i in 0..20 {
        let ts = format!("2026-11-02T10:{i:02}:00Z");
        let prompt = if i == 7 {
            "deploy with AKIAIOSFODNN7EXAMPLE please".to_string()
        } else {
            format!("prompt {i}")
        };
        for line in [
            json!({"type":"user","uuid":format!("u{i}"),"timestamp":ts,"message":{"role":"user","content":prompt}}),
            json!({"type":"assistant","uuid":format!("a{i}"),"timestamp":ts,"message":{"role":"assistant","content":[
                {"type":"text","text":format!("answer {i}")},
                {"type":"tool_use","id":format!("t{i}"),"name":"Bash","input":{"command":format!("make step{i}")}}]}}),
            json!({"type":"user","uuid":format!("r{i}"),"timestamp":ts,"message":{"role":"user","content":[
                {"type":"tool_result","tool_use_id":format!("t{i}"),"content":format!("ok {i}")}]}}),
        ] {
            body += &format!("{line}\n");
        }
    }
    fs::write(project.join("f1f1f1f1-0016.jsonl"), body).unwrap();
    let home = dir.path().to_path_buf();
    (dir, home)
}

fn read(home: &Path, args: &[&str]) -> (Vec<Value>, Value) {
    let mut full = vec!["f1f1f1f1", "--json"];
    full.extend_from_slice(args);
    let out = run(home, &full);
    assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
    let lines = ndjson(&out);
    (records(&lines), page(&lines))
}

#[test]
fn kinds_filter_a_page_and_since_continues_exactly_after_it() {
    let (_dir, home) = home();
    let (all, unfiltered) = read(&home, &["--head", "-n", "10"]);
    assert!(unfiltered.get("filtered").is_none(), "{unfiltered}");
    let (users, filtered) = read(&home, &["--head", "-n", "10", "--kind", "user"]);
    let first_ten: Vec<String> = (0..10).map(|i| format!("u{i}#0")).collect();
    assert_eq!(ids(&users), first_ten);
    assert!(users.iter().all(|r| r["kind"] == "user"));
    // Turns 0 to 8 each had three records that are not prompts.
    assert_eq!(filtered["filtered"], 27);
    assert_eq!(filtered["more"], true);
    // The cursor continues after the last record examined, the tenth prompt.
    assert_ne!(filtered["cursor"], unfiltered["cursor"]);
    let cursor = filtered["cursor"].as_str().unwrap();
    let (next, _) = read(&home, &["--since", cursor, "-n", "5"]);
    assert_eq!(ids(&next), ["a9#0", "a9#1", "r9#0", "u10#0", "a10#0"]);
    let (next_users, page) = read(&home, &["--since", cursor, "-n", "50", "--kind", "user"]);
    let the_rest: Vec<String> = (10..20).map(|i| format!("u{i}#0")).collect();
    assert_eq!(ids(&next_users), the_rest);
    // The tenth turn's other records, then three a turn.
    assert_eq!(page["filtered"], 3 + 30);
    assert_eq!(page["more"], false);
    assert_eq!(all.len(), 10);
    // `tools` is both tool kinds; kinds combine.
    let (tools, page) = read(&home, &["--head", "-n", "8", "--kind", "tools"]);
    assert_eq!(
        ids(&tools),
        [
            "a0#1", "r0#0", "a1#1", "r1#0", "a2#1", "r2#0", "a3#1", "r3#0"
        ]
    );
    assert_eq!(page["filtered"], 8);
    let (both, _) = read(&home, &["--head", "-n", "8", "--kind", "user,tool_result"]);
    assert_eq!(
        ids(&both),
        [
            "u0#0", "r0#0", "u1#0", "r1#0", "u2#0", "r2#0", "u3#0", "r3#0"
        ]
    );
}

/// A session whose few prompts lie among many other records: `--kind user -n 5` is the five
/// newest prompts, read further back than an unfiltered page of five would reach, and a page
/// of them as text says how many records it left out.
#[test]
fn the_newest_records_a_filter_keeps_are_found_further_back() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join(".claude/projects/-f");
    fs::create_dir_all(&project).unwrap();
    let mut body = String::new();
    for p in 0..7 {
        let line = json!({"type":"user","uuid":format!("q{p}"),"timestamp":"2026-11-02T10:00:00Z",
            "message":{"role":"user","content":format!("question {p}")}});
        body += &format!("{line}\n");
        for i in 0..400 {
            let line = json!({"type":"assistant","uuid":format!("a{p}-{i}"),"timestamp":"2026-11-02T10:00:01Z",
                "message":{"role":"assistant","content":[{"type":"text","text":format!("answer {p}.{i}, {}", "words ".repeat(20))}]}});
            body += &format!("{line}\n");
        }
    }
    fs::write(project.join("f1f1f1f1-0017.jsonl"), body).unwrap();
    let home = dir.path();
    let (users, page) = read(home, &["-n", "5", "--kind", "user"]);
    assert_eq!(ids(&users), ["q2#0", "q3#0", "q4#0", "q5#0", "q6#0"]);
    assert_eq!(page["filtered"], 5 * 400);
    assert_eq!(page["older"], true);
    // The cursor is the unfiltered tail's: the session's end.
    let (_, unfiltered) = read(home, &["-n", "5"]);
    assert_eq!(page["cursor"], unfiltered["cursor"]);
    let (first, page) = read(home, &["--head", "-n", "2", "--kind", "user"]);
    assert_eq!(ids(&first), ["q0#0", "q1#0"]);
    assert_eq!(page["filtered"], 400);
    // All seven, however many are asked for.
    let (every, _) = read(home, &["-n", "200", "--kind", "user"]);
    assert_eq!(every.len(), 7);
}

#[test]
fn grep_matches_after_redaction_and_counts_the_rest() {
    let (_dir, home) = home();
    let (hits, page) = read(&home, &["--all", "--grep", "step1[0-9]"]);
    assert_eq!(
        ids(&hits),
        (10..20).map(|i| format!("a{i}#1")).collect::<Vec<_>>()
    );
    assert_eq!(page["filtered"], 80 - 10);
    // The secret is redacted before matching: it cannot be found by its value.
    let (secret, _) = read(&home, &["--all", "--grep", "AKIA"]);
    assert!(ids(&secret).is_empty(), "{secret:?}");
    let (redacted, _) = read(&home, &["--all", "--grep", "REDACTED", "--kind", "user"]);
    assert_eq!(ids(&redacted), ["u7#0"]);
    // With --no-redact it is there to find.
    let (raw, _) = read(&home, &["--all", "--no-redact", "--grep", "AKIA"]);
    assert_eq!(ids(&raw), ["u7#0"]);
}

#[test]
fn a_time_window_keeps_what_lies_inside_it() {
    let (_dir, home) = home();
    let (window, page) = read(
        &home,
        &[
            "--all",
            "--kind",
            "user,tool_result",
            "--after",
            "2026-11-02T10:05:00Z",
            "--before",
            "2026-11-02T11:07:00+01:00",
        ],
    );
    assert_eq!(ids(&window), ["u5#0", "r5#0", "u6#0", "r6#0"]);
    assert_eq!(page["filtered"], 80 - 4);
    // Ages count back from now: these records are in the past.
    let (recent, _) = read(&home, &["--all", "--after", "1h"]);
    assert!(recent.is_empty());
    let (old, _) = read(&home, &["--all", "--before", "1h", "-n", "5"]);
    assert_eq!(old.len(), 80);
}

#[test]
fn bad_filters_exit_2_before_reading() {
    let (_dir, home) = home();
    for (args, line) in [
        (
            &["--kind", "users"][..],
            "clankie-read: error: --kind: unknown kind `users` (kinds: user, assistant, tool_call, tool_result, tools, notice, terminal)\n",
        ),
        (
            &["--grep", "(oops"][..],
            "clankie-read: error: --grep: unclosed group\n",
        ),
        (
            &["--after", "last week"][..],
            "clankie-read: error: --after wants a time (2h, 30m, today, yesterday, 2026-12-01, RFC 3339), got `last week`\n",
        ),
    ] {
        // A host that does not exist: parsing fails first, so it is never reached.
        let mut full = vec!["nohost.invalid:f1f1f1f1"];
        full.extend_from_slice(args);
        let out = run(&home, &full);
        assert_eq!(code(&out), 2, "{args:?}");
        assert_eq!(stderr(&out), line);
    }
}

#[test]
fn the_text_page_says_how_many_records_the_filter_left_out() {
    let (_dir, home) = home();
    let out = run(&home, &["f1f1f1f1", "--head", "-n", "6", "--kind", "user"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "── 2026-11-02 Monday (UTC)",
            "10:00:00 user        prompt 0",
            "10:01:00 user        prompt 1",
            "10:02:00 user        prompt 2",
            "10:03:00 user        prompt 3",
            "10:04:00 user        prompt 4",
            "10:05:00 user        prompt 5",
            "-- 15 records left out by the filter",
        ],
        "{text}"
    );
    // One left out: singular. None left out: no line.
    let one = run(
        &home,
        &["f1f1f1f1", "--head", "-n", "2", "--kind", "user,tool_call"],
    );
    let one = String::from_utf8(one.stdout).unwrap();
    assert!(
        one.ends_with("\n-- 1 record left out by the filter\n"),
        "{one}"
    );
    let none = run(&home, &["f1f1f1f1", "--head", "-n", "1", "--kind", "user"]);
    assert!(!String::from_utf8(none.stdout).unwrap().contains("-- "));
}

/// A filtered `--follow` on a file written while it is read prints nothing while the records
/// written do not match (no "left out" line a poll), then the record that matches.
#[test]
fn a_filtered_follow_is_quiet_until_a_record_matches() {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join(".claude/projects/-f");
    fs::create_dir_all(&project).unwrap();
    let answer = |i: usize| {
        let line = json!({"type":"assistant","uuid":format!("a{i}"),"timestamp":"2026-11-02T10:00:00Z",
            "message":{"role":"assistant","content":[{"type":"text","text":format!("answer {i}")}]}});
        format!("{line}\n")
    };
    let path = project.join("f1f1f1f1-0018.jsonl");
    fs::write(&path, answer(0)).unwrap();
    let mut child = crate::support::clankie(dir.path())
        .args([
            "f1f1f1f1",
            "--follow",
            "--kind",
            "user",
            "--interval",
            "0.05",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let wait = std::time::Duration::from_secs(20);
    // The first page: nothing kept, and what it left out.
    assert_eq!(
        rx.recv_timeout(wait).unwrap(),
        "-- 1 record left out by the filter"
    );
    let mut file = fs::OpenOptions::new().append(true).open(&path).unwrap();
    for i in 1..40 {
        file.write_all(answer(i).as_bytes()).unwrap();
        file.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Many polls read records the filter leaves out: not a line.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let said: Vec<String> = rx.try_iter().collect();
    assert!(said.is_empty(), "{said:?}");
    let prompt = json!({"type":"user","uuid":"u1","timestamp":"2026-11-02T10:00:02Z",
        "message":{"role":"user","content":"the prompt that matches"}});
    file.write_all(format!("{prompt}\n").as_bytes()).unwrap();
    file.flush().unwrap();
    let mut said = Vec::new();
    let start = std::time::Instant::now();
    while start.elapsed() < wait && !said.iter().any(|l: &String| l.contains("matches")) {
        if let Ok(line) = rx.recv_timeout(std::time::Duration::from_millis(100)) {
            said.push(line);
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    said.extend(rx.try_iter());
    let pid = child.id().to_string();
    std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_eq!(
        said,
        [
            "── 2026-11-02 Monday (UTC)",
            "10:00:02 user        the prompt that matches"
        ],
        "{said:?}"
    );
}
