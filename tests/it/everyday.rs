//! The everyday moves, each with its exact stderr line and exit code: a bare
//! `SESSION` is `local:SESSION`, `-n N`, a prefix under 6 characters, a session not found, a
//! `--root` that is missing, and an `--all` stopped by the 64 MiB bound of one run, continued
//! with the command it prints.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{code, ids, ndjson, page, records, run, stderr};

const SESSION: &str = "e7e7da11-0000-4000-8000-000000000016";

/// A temp `$HOME` with one Claude session of `turns` prompts and answers.
fn home_with_session(turns: usize) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join(".claude/projects/-work-app");
    fs::create_dir_all(&project).unwrap();
    let mut body = String::new();
    for i in 0..turns {
        body += &format!(
            "{}\n{}\n",
            json!({"type":"user","uuid":format!("u{i}"),"timestamp":"2026-11-02T10:00:00Z","message":{"role":"user","content":format!("prompt {i}")}}),
            json!({"type":"assistant","uuid":format!("a{i}"),"timestamp":"2026-11-02T10:00:01Z","message":{"role":"assistant","content":[{"type":"text","text":format!("answer {i}")}]}})
        );
    }
    let path = project.join(format!("{SESSION}.jsonl"));
    fs::write(&path, body).unwrap();
    let home = dir.path().to_path_buf();
    (dir, home)
}

fn json_ok(home: &Path, args: &[&str]) -> Vec<Value> {
    let out = run(home, args);
    assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
    ndjson(&out)
}

#[test]
fn a_bare_session_is_a_local_one_and_n_is_limit() {
    let (_dir, home) = home_with_session(10);
    let bare = json_ok(&home, &["e7e7da11", "-n", "3", "--json"]);
    let local = json_ok(&home, &["local:e7e7da11", "--limit", "3", "--json"]);
    assert_eq!(ids(&records(&bare)), ["a8#0", "u9#0", "a9#0"]);
    assert_eq!(bare, local);
    // After global options too, and as `read SESSION`.
    let read = json_ok(
        &home,
        &["--color", "never", "read", SESSION, "-n", "3", "--json"],
    );
    assert_eq!(read, local);
}

#[test]
fn a_prefix_under_six_characters_says_so() {
    let (_dir, home) = home_with_session(1);
    let out = run(&home, &["e7e7d"]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        stderr(&out),
        "clankie-read: error: `e7e7d` is too short for a session id prefix: give at least 6 characters (or the whole id)\n"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn no_session_names_the_host_and_the_roots_and_suggests_ls() {
    let (_dir, home) = home_with_session(1);
    let out = run(&home, &["local:0000000000"]);
    assert_eq!(code(&out), 4);
    let claude = fs::canonicalize(home.join(".claude")).unwrap();
    assert_eq!(
        stderr(&out),
        format!(
            "clankie-read: error: no session `0000000000` on local (searched {}); list its sessions with `clankie-read ls local`\n",
            claude.display()
        )
    );
    // With no harness directory at all, it says that instead.
    let empty = tempfile::tempdir().unwrap();
    let out = run(empty.path(), &["0000000000"]);
    assert_eq!(code(&out), 4);
    assert_eq!(
        stderr(&out),
        "clankie-read: error: no session `0000000000` on local (no harness directory exists there); list its sessions with `clankie-read ls local`\n"
    );
}

#[test]
fn a_missing_root_is_a_warning_without_verbose() {
    let (_dir, home) = home_with_session(1);
    let missing = home.join("no-such-dir");
    let root = format!("claude={}", missing.display());
    let out = run(&home, &["--root", &root, "ls", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert_eq!(
        stderr(&out),
        format!(
            "clankie-read: warning: local: no claude root at {} (sessions are read from its projects/ directory)\n",
            missing.display()
        )
    );
    // A default root that is not there (a harness not installed) is not worth a line.
    let out = run(&home, &["ls", "--json"]);
    assert_eq!(stderr(&out), "");
    // A read that finds nothing names the missing root in its one error line.
    let out = run(&home, &["--root", &root, "read", "claude/e7e7da11"]);
    assert_eq!(code(&out), 4);
    assert_eq!(
        stderr(&out),
        format!(
            "clankie-read: error: no session `e7e7da11` on local (no harness directory exists there; no claude root at {} (sessions are read from its projects/ directory)); list its sessions with `clankie-read ls local`\n",
            missing.display()
        )
    );
}

#[test]
fn all_stopped_by_the_bound_says_how_to_go_on_and_that_command_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join(".claude/projects/-big");
    fs::create_dir_all(&project).unwrap();
    // 70 lines just over 1 MiB each: each becomes a notice without being parsed, so the run
    // spends its time reading, not parsing. 64 MiB is reached before the last lines.
    let mut body = Vec::new();
    let filler = "x".repeat(1 << 20);
    for i in 0..70 {
        body.extend_from_slice(
            json!({"type":"user","uuid":format!("big{i}"),"message":{"content":filler}})
                .to_string()
                .as_bytes(),
        );
        body.push(b'\n');
    }
    body.extend_from_slice(
        format!(
            "{}\n",
            json!({"type":"user","uuid":"last","message":{"content":"the end"}})
        )
        .as_bytes(),
    );
    fs::write(project.join("b16b16b1-0000.jsonl"), &body).unwrap();
    let home = dir.path();
    let first = run(home, &["b16b16b1", "--all", "--json"]);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let lines = ndjson(&first);
    let first_page = page(&lines);
    assert_eq!(first_page["more"], true);
    let cursor = first_page["cursor"].as_str().unwrap();
    let warning = stderr(&first)
        .lines()
        .find(|l| l.contains("MiB bound"))
        .unwrap_or_else(|| panic!("{}", stderr(&first)))
        .to_string();
    assert_eq!(
        warning,
        format!(
            "clankie-read: warning: stopped at the 64 MiB bound of one run; continue with: clankie-read local:b16b16b1-0000 --all --since {cursor}"
        )
    );
    let first_ids = ids(&records(&lines));
    // The printed command, run as printed, reads on to the end.
    let args: Vec<&str> = warning
        .split(": clankie-read ")
        .nth(1)
        .unwrap()
        .split(' ')
        .chain(["--json"])
        .collect();
    let rest = run(home, &args);
    assert_eq!(code(&rest), 0, "{}", stderr(&rest));
    let rest_lines = ndjson(&rest);
    assert_eq!(page(&rest_lines)["more"], false);
    assert!(!stderr(&rest).contains("MiB bound"), "{}", stderr(&rest));
    let rest_ids = ids(&records(&rest_lines));
    assert_eq!(rest_ids.last().map(String::as_str), Some("last#0"));
    assert_eq!(
        first_ids.len() + rest_ids.len(),
        71,
        "{first_ids:?} {rest_ids:?}"
    );
}

#[test]
fn all_since_a_cursor_streams_every_record_after_it() {
    let (_dir, home) = home_with_session(300);
    let head = json_ok(&home, &["e7e7da11", "--head", "-n", "3", "--json"]);
    let cursor = page(&head)["cursor"].as_str().unwrap().to_string();
    // 597 records after the cursor: more than the 200 of one page, in one run.
    let rest = json_ok(&home, &["e7e7da11", "--all", "--since", &cursor, "--json"]);
    let all = json_ok(&home, &["e7e7da11", "--all", "--json"]);
    let mut joined = ids(&records(&head));
    joined.extend(ids(&records(&rest)));
    assert_eq!(joined, ids(&records(&all)));
    assert_eq!(joined.len(), 600);
    assert_eq!(page(&rest)["more"], false);
    assert_eq!(page(&rest)["cursor"], page(&all)["cursor"]);
}
