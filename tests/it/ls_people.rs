//! `ls` made for people, end to end: newest first; columns harness, id, modified, size,
//! project and title (the harness's own title, else the first prompt) read from the heads of
//! the rows shown; `--sort`, `--limit`/`-n`, `--all`, `--modified-within`; the text output's
//! 50-row default with the rest counted on stderr; `--json --long`; and the same over SSH.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::common::sshd::sshd_or_skip;
use crate::support::{clankie, code, ndjson, run, stderr};

const RENAMED: &str = "aaaa1111-0000-4000-8000-000000000001";
const PROMPTED: &str = "aaaa2222-0000-4000-8000-000000000002";
const UNTITLED: &str = "bbbb3333-0000-4000-8000-000000000003";

/// A transcript whose first lines carry `cwd`, an optional title line, and a first prompt.
fn transcript(cwd: &str, title: Option<&str>, prompt: &str, padding: usize) -> Vec<u8> {
    let mut lines = Vec::new();
    if let Some(title) = title {
        lines.push(json!({"type":"custom-title","sessionId":"s","customTitle":title}));
    }
    lines.push(
        json!({"type":"user","uuid":"u0","cwd":cwd,"timestamp":"2026-11-02T10:00:00Z",
        "message":{"role":"user","content":prompt}}),
    );
    lines.push(
        json!({"type":"assistant","uuid":"a0","cwd":cwd,"timestamp":"2026-11-02T10:00:01Z",
        "message":{"role":"assistant","content":[{"type":"text","text":"x".repeat(padding)}]}}),
    );
    lines
        .iter()
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        .into_bytes()
}

/// Writes a transcript at `path` (directories too) modified `age` ago.
fn put(path: &Path, bytes: &[u8], age: Duration) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - age).unwrap();
}

const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(86_400);

/// Three sessions under `claude_home/projects`: renamed (3 minutes old, small), prompted (3
/// hours, middling), and one whose head says nothing (5 days, largest).
fn three_sessions(claude_home: &Path) {
    let dir = claude_home.join("projects/-w");
    put(
        &dir.join(format!("{RENAMED}.jsonl")),
        &transcript("/w/alpha", Some("Renamed by me"), "first words", 10),
        3 * MINUTE,
    );
    put(
        &dir.join(format!("{PROMPTED}.jsonl")),
        &transcript("/w/beta", None, "fix the\n  parser  please", 3000),
        3 * HOUR,
    );
    // A first line longer than the 32 KiB head: neither title nor directory is read from it.
    put(
        &dir.join(format!("{UNTITLED}.jsonl")),
        &transcript("/w/gamma", None, &"long ".repeat(8000), 100_000),
        5 * DAY,
    );
}

fn local_home() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    three_sessions(&dir.path().join(".claude"));
    let home = dir.path().to_path_buf();
    (dir, home)
}

fn ls_text(home: &Path, args: &[&str]) -> (String, String) {
    let out = clankie(home)
        .env("COLUMNS", "200")
        .args(["ls", "--color", "never"])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
    let err = stderr(&out);
    (String::from_utf8(out.stdout).unwrap(), err)
}

/// The id column of each text row.
fn ids_of(text: &str) -> Vec<&str> {
    text.lines()
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect()
}

#[test]
fn text_rows_are_newest_first_with_every_column() {
    let (_dir, home) = local_home();
    let (text, err) = ls_text(&home, &[]);
    assert_eq!(err, "");
    let rows = regex::Regex::new(concat!(
        r"(?m)^claude  aaaa1111-0000-4000-8000-000000000001  +3m ago  +[0-9]+ B  /w/alpha  Renamed by me\n",
        r"claude  aaaa2222-0000-4000-8000-000000000002  +3h ago  +3\.[0-9] KiB  /w/beta   fix the parser please\n",
        r"claude  bbbb3333-0000-4000-8000-000000000003  +5d ago  +1[0-9]{2} KiB  -\n\z",
    ))
    .unwrap();
    assert!(rows.is_match(&text), "{text}");
    let (by_size, _) = ls_text(&home, &["--sort", "size"]);
    assert_eq!(ids_of(&by_size), [UNTITLED, PROMPTED, RENAMED]);
    let (by_name, _) = ls_text(&home, &["--sort", "name"]);
    assert_eq!(ids_of(&by_name), [RENAMED, PROMPTED, UNTITLED]);
    let (recent, err) = ls_text(&home, &["--modified-within", "1h"]);
    assert_eq!(ids_of(&recent), [RENAMED]);
    assert_eq!(err, "");
    let (first, err) = ls_text(&home, &["-n", "1"]);
    assert_eq!(ids_of(&first), [RENAMED]);
    assert_eq!(
        err,
        "clankie-read: 2 more sessions not shown (--all shows every one, --limit N the first N)\n"
    );
}

#[test]
fn rows_fit_the_width_and_the_unique_prefix_is_bold() {
    let (_dir, home) = local_home();
    let out = clankie(&home)
        .env("COLUMNS", "60")
        .args(["ls", "--color", "always"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let plain = text.replace("\x1b[1m", "").replace("\x1b[0m", "");
    assert!(plain.lines().all(|l| l.chars().count() <= 60), "{plain}");
    // Too narrow for whole ids beside a project: each is cut after what tells it apart.
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with("claude  \x1b[1maaaa11\x1b[0m… "),
        "{first:?}"
    );
}

#[test]
fn text_shows_fifty_unless_asked_and_json_shows_all() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..53 {
        put(
            &dir.path()
                .join(format!(".claude/projects/-n/cafe{i:04}-0000.jsonl")),
            &transcript("/w", None, "p", 1),
            (i + 1) * MINUTE,
        );
    }
    let (text, err) = ls_text(dir.path(), &[]);
    assert_eq!(text.lines().count(), 50);
    assert_eq!(ids_of(&text)[0], "cafe0000-0000");
    assert_eq!(
        err,
        "clankie-read: 3 more sessions not shown (--all shows every one, --limit N the first N)\n"
    );
    let (all, err) = ls_text(dir.path(), &["--all"]);
    assert_eq!(all.lines().count(), 53);
    assert_eq!(err, "");
    let json = run(dir.path(), &["ls", "--json"]);
    assert_eq!(ndjson(&json).len(), 53);
    assert_eq!(stderr(&json), "");
    let limited = run(dir.path(), &["ls", "--json", "--limit", "2"]);
    assert_eq!(ndjson(&limited).len(), 2);
}

/// `(session, title, cwd)` of `ls --json --long` lines, which must carry both fields.
fn long_fields(lines: &[Value]) -> Vec<(String, Value, Value)> {
    lines
        .iter()
        .map(|l| {
            let obj = l.as_object().unwrap();
            assert!(obj.contains_key("title") && obj.contains_key("cwd"), "{l}");
            (
                l["session"].as_str().unwrap().to_string(),
                l["title"].clone(),
                l["cwd"].clone(),
            )
        })
        .collect()
}

fn expected_long() -> Vec<(String, Value, Value)> {
    vec![
        (RENAMED.into(), json!("Renamed by me"), json!("/w/alpha")),
        (
            PROMPTED.into(),
            json!("fix the parser please"),
            json!("/w/beta"),
        ),
        (UNTITLED.into(), Value::Null, Value::Null),
    ]
}

#[test]
fn json_adds_title_and_cwd_only_with_long() {
    let (_dir, home) = local_home();
    let plain = run(&home, &["ls", "--json"]);
    assert_eq!(code(&plain), 0, "{}", stderr(&plain));
    for line in ndjson(&plain) {
        let obj = line.as_object().unwrap();
        assert!(
            !obj.contains_key("title") && !obj.contains_key("cwd"),
            "{line}"
        );
    }
    let long = run(&home, &["ls", "--json", "--long"]);
    assert_eq!(code(&long), 0, "{}", stderr(&long));
    assert_eq!(long_fields(&ndjson(&long)), expected_long());
}

#[test]
fn over_ssh_the_heads_of_the_shown_rows_are_read_too() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = sshd.users()[0];
    let base = format!("ls-people-{}", std::process::id());
    let claude_home = sshd.home(user).join(&base).join(".claude");
    // Written through the fixture so the user owns every directory on the way.
    for (id, title, cwd, prompt, age) in [
        (
            RENAMED,
            Some("Renamed by me"),
            "/w/alpha",
            "first words",
            3 * MINUTE,
        ),
        (
            PROMPTED,
            None,
            "/w/beta",
            "fix the\n  parser  please",
            3 * HOUR,
        ),
    ] {
        let rel = format!("{base}/.claude/projects/-w/{id}.jsonl");
        let path = sshd.put_file(user, &rel, &transcript(cwd, title, prompt, 10));
        fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(SystemTime::now() - age)
            .unwrap();
    }
    let home = tempfile::tempdir().unwrap();
    let alias = sshd.alias(user);
    let root = format!("claude={}", claude_home.display());
    let ls = |args: &[&str]| {
        let out = clankie(home.path())
            .env("COLUMNS", "200")
            .args(["--ssh-config", sshd.ssh_config().to_str().unwrap()])
            .args([
                "--root",
                &root,
                "ls",
                &alias,
                "--harness",
                "claude",
                "--color",
                "never",
            ])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        out
    };
    let long = ls(&["--json", "--long"]);
    assert_eq!(long_fields(&ndjson(&long)), expected_long()[..2].to_vec());
    let text = String::from_utf8(ls(&[]).stdout).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 2, "{text}");
    assert!(rows[0].ends_with("/w/alpha  Renamed by me"), "{text}");
    assert!(
        rows[1].ends_with("/w/beta   fix the parser please"),
        "{text}"
    );
    let _ = fs::remove_dir_all(sshd.home(user).join(&base));
}
