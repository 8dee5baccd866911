//! Read filters end to end: `--kind`, `--grep` (after redaction) and `--after`/`--before` keep
//! a page's records they match, the page line counts the rest (`"filtered"`), and the page's
//! cursor is the unfiltered one, so `--since` after a filtered page continues exactly.

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
    assert_eq!(ids(&users), ["u0#0", "u1#0", "u2#0"]);
    assert!(users.iter().all(|r| r["kind"] == "user"));
    assert_eq!(filtered["filtered"], 7);
    // The cursor is the unfiltered page's: the next page starts after its 10th record.
    assert_eq!(filtered["cursor"], unfiltered["cursor"]);
    let cursor = filtered["cursor"].as_str().unwrap();
    let (next, _) = read(&home, &["--since", cursor, "-n", "5"]);
    let (twenty, _) = read(&home, &["--head", "-n", "15"]);
    assert_eq!(ids(&next), ids(&twenty)[10..]);
    assert_eq!(ids(&all), ids(&twenty)[..10]);
    // `tools` is both tool kinds; kinds combine.
    let (tools, page) = read(&home, &["--head", "-n", "8", "--kind", "tools"]);
    assert_eq!(ids(&tools), ["a0#1", "r0#0", "a1#1", "r1#0"]);
    assert_eq!(page["filtered"], 4);
    let (both, _) = read(&home, &["--head", "-n", "8", "--kind", "user,tool_result"]);
    assert_eq!(ids(&both), ["u0#0", "r0#0", "u1#0", "r1#0"]);
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
            "-- 4 records left out by the filter",
        ],
        "{text}"
    );
    // One left out: singular. None left out: no line.
    let one = run(&home, &["f1f1f1f1", "--head", "-n", "2", "--kind", "user"]);
    let one = String::from_utf8(one.stdout).unwrap();
    assert!(
        one.ends_with("\n-- 1 record left out by the filter\n"),
        "{one}"
    );
    let none = run(&home, &["f1f1f1f1", "--head", "-n", "1", "--kind", "user"]);
    assert!(!String::from_utf8(none.stdout).unwrap().contains("-- "));
}
