//! `ls` made for people, end to end: newest first; columns harness, id, modified, size,
//! project and title (the harness's own title, else the first prompt) read from the heads of
//! the rows shown; `--sort`, `--limit`/`-n`, `--all`, `--modified-within`, `--cwd`,
//! `--project`, `--title`; the text output's 50-row default with the rest counted on stderr;
//! bold prefixes unique among every session, whole ids when piped; several hosts in one
//! aligned table; `--json --long`; and the same over SSH.

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
    if !crate::common::require_tool("script") {
        return;
    }
    let (_dir, home) = local_home();
    // A terminal of 60 columns: rows are cut to it (piped, nothing is cut).
    let (text, status) =
        crate::tables::on_a_terminal(&home, 60, &["ls", "--color", "always"], None);
    assert_eq!(status, 0, "{text}");
    let plain = text.replace("\x1b[1m", "").replace("\x1b[0m", "");
    assert!(plain.lines().all(|l| l.chars().count() <= 60), "{plain}");
    // Too narrow for whole ids beside a project: each is cut after what tells it apart.
    let first = text.lines().nth(1).unwrap();
    assert!(
        first.starts_with("claude   \x1b[1maaaa11\x1b[0m… "),
        "{first:?}"
    );
}

/// `ls --color always ARGS`, piped.
fn ls_coloured(home: &Path, args: &[&str]) -> String {
    let out = clankie(home)
        .args(["ls", "--color", "always"])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// The id column of each text row, and the part of it in bold.
fn bold_ids(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(|l| {
            let id = l.split_whitespace().nth(1).unwrap();
            let bold = id
                .strip_prefix("\x1b[1m")
                .and_then(|rest| rest.split_once("\x1b[0m"))
                .unwrap_or_else(|| panic!("no bold prefix: {l:?}"));
            (format!("{}{}", bold.0, bold.1), bold.0.to_string())
        })
        .collect()
}

#[test]
fn a_bold_prefix_is_unique_among_every_session_not_only_those_shown() {
    let dir = tempfile::tempdir().unwrap();
    let projects = dir.path().join(".claude/projects/-w");
    let (newest, older) = (
        "cafe0001-aaaa-4000-8000-000000000001",
        "cafe0001-bbbb-4000-8000-000000000002",
    );
    put(
        &projects.join(format!("{newest}.jsonl")),
        &transcript("/w", None, "p", 1),
        MINUTE,
    );
    put(
        &projects.join(format!("{older}.jsonl")),
        &transcript("/w", None, "p", 1),
        HOUR,
    );
    // Only the newest is shown; the older one still makes `cafe00` ambiguous.
    let text = ls_coloured(dir.path(), &["-n", "1"]);
    let shown = bold_ids(&text);
    assert_eq!(
        shown,
        [(newest.to_string(), "cafe0001-a".to_string())],
        "{text:?}"
    );
    let read = run(
        dir.path(),
        &["read", &format!("local:{}", shown[0].1), "--json"],
    );
    assert_eq!(code(&read), 0, "{}", stderr(&read));
}

#[test]
fn subagent_ids_are_whole_when_piped_and_their_bold_prefix_runs_past_the_plus() {
    let dir = tempfile::tempdir().unwrap();
    let parent = "5ab0a9e0-0000-4000-8000-000000000000";
    let projects = dir.path().join(".claude/projects/-w");
    put(
        &projects.join(format!("{parent}.jsonl")),
        &transcript("/w", None, "p", 1),
        MINUTE,
    );
    for (agent, age) in [("a1b2c3d4", 2 * MINUTE), ("a1b2ffff", 3 * MINUTE)] {
        put(
            &projects.join(format!("{parent}/subagents/agent-{agent}.jsonl")),
            &transcript("/w", None, "p", 1),
            age,
        );
    }
    let text = ls_coloured(dir.path(), &[]);
    let shown = bold_ids(&text);
    let whole: Vec<&str> = shown.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        whole,
        [
            parent.to_string(),
            format!("{parent}+agent-a1b2c3d4"),
            format!("{parent}+agent-a1b2ffff"),
        ],
        "{text:?}"
    );
    let bold: Vec<&str> = shown.iter().map(|(_, bold)| bold.as_str()).collect();
    assert_eq!(
        bold,
        [
            "5ab0a9",
            &format!("{parent}+agent-a1b2c")[..],
            &format!("{parent}+agent-a1b2f")[..]
        ]
    );
    for (id, prefix) in &shown {
        let read = run(dir.path(), &["read", &format!("local:{prefix}"), "--json"]);
        assert_eq!(code(&read), 0, "{prefix}: {}", stderr(&read));
        assert_eq!(ndjson(&read).last().unwrap()["session"], id.as_str());
    }
}

#[test]
fn cwd_project_and_title_choose_the_sessions_in_text_and_json() {
    let (_dir, home) = local_home();
    for (args, expected) in [
        (&["--cwd", "/w/alpha"][..], &[RENAMED][..]),
        (&["--cwd", "/w/alpha/"][..], &[RENAMED][..]),
        (&["--cwd", "/w"][..], &[RENAMED, PROMPTED][..]),
        (&["--cwd", "/w/al"][..], &[][..]),
        (&["--project", "BET"][..], &[PROMPTED][..]),
        (&["--title", "renamed"][..], &[RENAMED][..]),
        (&["--title", "parser", "--cwd", "/w/alpha"][..], &[][..]),
        (
            &["--project", "a", "--sort", "name"][..],
            &[RENAMED, PROMPTED][..],
        ),
    ] {
        let (text, _) = ls_text(&home, args);
        assert_eq!(ids_of(&text), expected, "{args:?}: {text}");
        let json = run(&home, &[&["ls", "--json"][..], args].concat());
        assert_eq!(code(&json), 0, "{args:?}: {}", stderr(&json));
        let lines = ndjson(&json);
        let ids: Vec<&str> = lines
            .iter()
            .map(|l| l["session"].as_str().unwrap())
            .collect();
        assert_eq!(ids, expected, "{args:?}");
        // Filtering reads the heads; the lines carry them only with --long, as ever.
        assert!(lines.iter().all(|l| l.get("title").is_none()), "{lines:?}");
    }
    // `-n` counts the sessions that pass the filters.
    let (text, err) = ls_text(&home, &["--cwd", "/w", "-n", "1"]);
    assert_eq!(ids_of(&text), [RENAMED]);
    assert!(err.contains("1 more session not shown"), "{err}");
}

#[test]
fn rows_of_several_hosts_are_aligned_in_one_table() {
    let dir = tempfile::tempdir().unwrap();
    let (one, two) = (
        dir.path().join("one/.claude"),
        dir.path().join("two/.claude"),
    );
    put(
        &one.join("projects/-w/short-id.jsonl"),
        &transcript("/w/a", None, "first", 1),
        MINUTE,
    );
    put(
        &two.join(format!("projects/-w/{PROMPTED}.jsonl")),
        &transcript("/w/a-much-longer-directory", None, "second", 5000),
        HOUR,
    );
    let hosts = dir.path().join("hosts.toml");
    fs::write(
        &hosts,
        format!(
            "[hosts.one]\nlocal = true\nroots = {{ claude = \"{}\" }}\n\
             [hosts.second-host]\nlocal = true\nroots = {{ claude = \"{}\" }}\n",
            one.display(),
            two.display()
        ),
    )
    .unwrap();
    let (text, err) = ls_text(
        dir.path(),
        &["--hosts", hosts.to_str().unwrap(), "one", "second-host"],
    );
    assert_eq!(err, "");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("one          claude  short-id  "),
        "{text}"
    );
    assert!(
        lines[1].starts_with("second-host  claude  aaaa2222-"),
        "{text}"
    );
    // Every column starts where the other host's does.
    for column in ["ago", "/w/a", "first"] {
        let at = lines[0].find(column).unwrap();
        let other = if column == "first" { "second" } else { column };
        assert_eq!(lines[1].rfind(other), Some(at), "{column}: {text}");
    }
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
