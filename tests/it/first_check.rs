//! A first `check` reads each session's head and tail, and the cursor it keeps is the one a
//! read of the whole session leaves: on every fixture harness whose sessions are files of
//! lines, each session cut to its first half, a first check, the rest appended, and the next
//! `check --records` shows exactly the records appended — on this machine and over the test
//! sshd.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::sshd::sshd_or_skip;
use crate::support::{clankie, code, ndjson, stderr};

/// The fixture homes whose transcripts are files of lines, and their harness.
const HOMES: &[(&str, &str)] = &[
    ("claude", "claude"),
    ("claude-code-2.1.197", "claude"),
    ("claude-code-2.1.332", "claude"),
    ("codex", "codex"),
    ("codex-0.171.0", "codex"),
    ("copilot-1.0.102", "copilot"),
    ("droid-0.225.1", "droid"),
    ("gemini-cli-0.61.0", "gemini"),
    ("grok", "grok"),
    ("kimi-1.51.0", "kimi"),
    ("kimi-code-2.1.0", "kimi-code"),
    ("pi", "pi"),
    ("pi-1.6.0", "pi"),
    ("qwen-0.24.4", "qwen"),
];

/// Where a run reads: this machine, or a user of the test sshd.
struct Target {
    host: String,
    /// Options before the subcommand (`--ssh-config`).
    options: Vec<String>,
    /// Where the copied fixture homes live, as the host sees them.
    base: PathBuf,
}

/// The `.jsonl` files of a fixture home, by path below it.
fn transcripts(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                out.push(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// A transcript's first half of lines and the rest.
fn halves(text: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let ends: Vec<usize> = text
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(k, _)| k + 1)
        .collect();
    let cut = ends
        .get(ends.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0);
    (text[..cut].to_vec(), text[cut..].to_vec())
}

fn run(home: &Path, target: &Target, root: &str, args: &[&str]) -> Vec<Value> {
    let out = clankie(home)
        .args(&target.options)
        .args(["--root", root])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
    ndjson(&out)
}

/// Every session's records read from `since` (its cursor) or whole (`--all`): their ids and
/// the page's cursor, by session.
fn reads_by_session(
    home: &Path,
    target: &Target,
    root: &str,
    harness: &str,
    since: &BTreeMap<String, (Vec<String>, String)>,
) -> BTreeMap<String, (Vec<String>, String)> {
    let mut out = BTreeMap::new();
    for listed in run(home, target, root, &["ls", &target.host, "--json"]) {
        if listed["type"] != "session" || listed["harness"] != harness {
            continue;
        }
        let id = listed["session"].as_str().unwrap().to_string();
        let session = format!("{}:{harness}/{id}", target.host);
        let mut args = vec!["read", &session, "--json"];
        match since.get(&id) {
            Some((_, cursor)) => args.extend(["--since", cursor, "-n", "200"]),
            None => args.push("--all"),
        }
        let lines = run(home, target, root, &args);
        let ids = lines
            .iter()
            .filter(|l| l["type"] == "record")
            .map(|l| l["id"].as_str().unwrap().to_string())
            .collect();
        let page = lines.iter().rfind(|l| l["type"] == "page").unwrap();
        out.insert(id, (ids, page["cursor"].as_str().unwrap().to_string()));
    }
    out
}

/// The records `check --records --json` shows, by session (each session's records come
/// before its activity line).
fn shown_by_session(lines: &[Value]) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let mut records = Vec::new();
    for line in lines {
        match line["type"].as_str() {
            Some("record") => records.push(line["id"].as_str().unwrap().to_string()),
            Some("activity") => {
                let session = line["session"].as_str().unwrap().to_string();
                out.insert(session, std::mem::take(&mut records));
            }
            _ => {}
        }
    }
    assert!(
        records.is_empty(),
        "records after the last activity: {records:?}"
    );
    out
}

/// Cuts every home's transcripts in half (`put` writes a file where the host reads it), runs a
/// first check, appends the rest, and checks that the next run shows exactly what a read from
/// a whole read's cursor of each half shows.
fn the_next_check_shows_what_was_appended(target: &Target, put: &dyn Fn(&Path, &[u8]) -> PathBuf) {
    let mut checked = 0;
    for (dir, harness) in HOMES {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(dir);
        let home = tempfile::tempdir().unwrap();
        let state = home.path().join("state.json");
        let state = state.to_str().unwrap();
        let mut rests = Vec::new();
        for rel in transcripts(&fixture) {
            let (first, rest) = halves(&std::fs::read(fixture.join(&rel)).unwrap());
            let written = put(&Path::new(dir).join(&rel), &first);
            rests.push((written, rest));
        }
        let root = format!("{harness}={}", target.base.join(dir).display());
        let before = reads_by_session(home.path(), target, &root, harness, &BTreeMap::new());
        assert!(!before.is_empty(), "{dir}: no session listed");
        let baseline = run(
            home.path(),
            target,
            &root,
            &["check", "--state", state, "--json", &target.host],
        );
        let new: HashSet<&str> = baseline
            .iter()
            .filter(|l| l["type"] == "activity" && l["change"] == "new" && l["harness"] == *harness)
            .map(|l| l["session"].as_str().unwrap())
            .collect();
        assert_eq!(new.len(), before.len(), "{dir}: {baseline:?}");
        for (path, rest) in &rests {
            std::fs::OpenOptions::new()
                .append(true)
                .open(path)
                .unwrap()
                .write_all(rest)
                .unwrap();
        }
        let after = reads_by_session(home.path(), target, &root, harness, &before);
        let next = run(
            home.path(),
            target,
            &root,
            &[
                "check",
                "--state",
                state,
                "--json",
                "--records",
                &target.host,
            ],
        );
        let shown = shown_by_session(&next);
        for (session, (appended, _)) in &after {
            let got: Vec<String> = shown.get(session).cloned().unwrap_or_default();
            assert_eq!(&got, appended, "{dir}: {session}");
        }
        checked += 1;
    }
    assert_eq!(checked, HOMES.len());
}

#[test]
fn the_next_check_after_a_first_shows_exactly_what_was_appended_locally() {
    let base = tempfile::tempdir().unwrap();
    let target = Target {
        host: "local".into(),
        options: Vec::new(),
        base: base.path().to_path_buf(),
    };
    the_next_check_shows_what_was_appended(&target, &|rel, bytes| {
        let path = base.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        path
    });
}

#[test]
fn the_next_check_after_a_first_shows_exactly_what_was_appended_over_ssh() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = sshd.users()[0];
    let base = Path::new(".first-check");
    let target = Target {
        host: sshd.alias(user),
        options: vec![
            "--ssh-config".into(),
            sshd.ssh_config().display().to_string(),
        ],
        base: sshd.home(user).join(base),
    };
    the_next_check_shows_what_was_appended(&target, &|rel, bytes| {
        sshd.put_file(user, base.join(rel), bytes)
    });
}
