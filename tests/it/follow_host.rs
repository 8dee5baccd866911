//! `HOST:* --follow`: every session of the host that changes, like `tail -F` over a glob. A
//! session that grows gives what it gained, one created later is given from its start; NDJSON
//! names each line's host, harness and session, text prefixes each line with the session's
//! short id and project. Without --follow it is a usage error (exit 2).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{clankie, code, run, stderr};

const ALPHA: &str = "a1a1a1a1-0000-4000-8000-000000000001";
const BETA: &str = "b2b2b2b2-0000-4000-8000-000000000002";

fn line(uuid: &str, cwd: &str, minute: u32, text: &str) -> String {
    let ts = format!("2026-11-02T10:{minute:02}:00Z");
    format!(
        "{}\n",
        json!({"type":"user","uuid":uuid,"timestamp":ts,"cwd":cwd,"message":{"role":"user","content":text}})
    )
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// A `$HOME` with session ALPHA in project `/w/alpha`; returns where BETA goes.
fn home() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let alpha = home.path().join(".claude/projects/-w-alpha");
    let beta = home.path().join(".claude/projects/-w-beta");
    std::fs::create_dir_all(&alpha).unwrap();
    std::fs::create_dir_all(&beta).unwrap();
    let alpha = alpha.join(format!("{ALPHA}.jsonl"));
    std::fs::write(&alpha, line("a-0", "/w/alpha", 0, "before the follow")).unwrap();
    (home, alpha, beta.join(format!("{BETA}.jsonl")))
}

/// Starts the follower and a thread forwarding its stdout lines.
fn start(home: &Path, extra: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child = clankie(home)
        .args(["local:*", "--follow", "--interval", "0.05"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// The follower prints nothing until something changes: appends a `ping` record to ALPHA
/// until one is printed, so that what the test writes next comes after the follow started.
fn wait_until_following(alpha: &Path, rx: &mpsc::Receiver<String>) {
    let start = Instant::now();
    for i in 0.. {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the follower never printed"
        );
        append(alpha, &line(&format!("ping-{i}"), "/w/alpha", 0, "ping"));
        if rx.recv_timeout(Duration::from_millis(300)).is_ok() {
            return;
        }
    }
}

/// Lines until `done` holds of the ones kept (pings left out), or a minute; then Ctrl-C,
/// which must end the follow with exit 0.
fn collect_until(
    mut child: Child,
    rx: &mpsc::Receiver<String>,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let start = Instant::now();
    let mut kept = Vec::new();
    while !done(&kept) && start.elapsed() < Duration::from_secs(60) {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(200))
            && !line.contains("ping")
        {
            kept.push(line);
        }
    }
    let pid = child.id().to_string();
    std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "{err}");
    kept
}

#[test]
fn ndjson_names_the_session_of_every_line() {
    let (home, alpha, beta) = home();
    let (child, rx) = start(home.path(), &["--json"]);
    wait_until_following(&alpha, &rx);
    append(
        &alpha,
        &[
            line("a-1", "/w/alpha", 1, "more alpha 1"),
            line("a-2", "/w/alpha", 2, "more alpha 2"),
        ]
        .concat(),
    );
    append(
        &beta,
        &[
            line("b-0", "/w/beta", 3, "hello beta"),
            line("b-1", "/w/beta", 4, "bye beta"),
        ]
        .concat(),
    );
    // Until BETA's page line, which ends its records.
    let lines = collect_until(child, &rx, |kept| {
        kept.iter()
            .any(|l| l.contains(r#""type":"page""#) && l.contains(BETA))
    });
    let values: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let records: Vec<(&str, &str)> = values
        .iter()
        .filter(|v| v["type"] == "record")
        .map(|v| (v["session"].as_str().unwrap(), v["id"].as_str().unwrap()))
        .collect();
    assert_eq!(
        records,
        [
            (ALPHA, "a-1#0"),
            (ALPHA, "a-2#0"),
            (BETA, "b-0#0"),
            (BETA, "b-1#0")
        ]
    );
    for v in &values {
        assert_eq!(
            (&v["host"], &v["harness"]),
            (&json!("local"), &json!("claude")),
            "{v}"
        );
    }
    // Each session's records end with its own page line.
    let pages: Vec<&str> = values
        .iter()
        .filter(|v| v["type"] == "page")
        .map(|v| v["session"].as_str().unwrap())
        .collect();
    assert!(pages.contains(&BETA), "{values:?}");
}

#[test]
fn text_lines_are_prefixed_with_the_session_and_project() {
    let (home, alpha, beta) = home();
    let (child, rx) = start(home.path(), &[]);
    wait_until_following(&alpha, &rx);
    append(&alpha, &line("a-1", "/w/alpha", 1, "more alpha"));
    append(&beta, &line("b-0", "/w/beta", 3, "hello beta"));
    let lines = collect_until(child, &rx, |kept| kept.len() >= 2);
    assert_eq!(
        lines,
        [
            "a1a1a1a1 alpha            │ 10:01:00 user        more alpha",
            "b2b2b2b2 beta             │ 10:03:00 user        hello beta",
        ]
    );
}

#[test]
fn a_whole_host_without_follow_is_a_usage_error() {
    let (home, _, _) = home();
    for args in [&["local:*"][..], &["local:claude/*", "--follow", "--all"]] {
        let out = run(home.path(), args);
        assert_eq!(code(&out), 2, "{args:?}");
        let target = args[0];
        assert_eq!(
            stderr(&out),
            format!(
                "clankie-read: error: `{target}` follows every session of the host: it needs \
                 --follow, and takes none of --head, --all, --since (to list them: clankie-read \
                 ls local)\n"
            )
        );
    }
    let out = run(home.path(), &["local:nosuch/*", "--follow"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).starts_with("clankie-read: error: unknown harness `nosuch`"),
        "{}",
        stderr(&out)
    );
}
