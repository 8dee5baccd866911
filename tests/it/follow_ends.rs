//! How a follow begins and ends for a person: `--follow | head -1` ends once `head` has its
//! line, with exit 0, as `tail -f` does, even while nothing new is written; `'HOST:*' --follow`
//! says on a terminal what it follows before its first record.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::require_tool;
use crate::support::{BIN, clankie};

/// A home with two Claude sessions of one record each.
fn home() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join(".claude/projects/-w");
    std::fs::create_dir_all(&project).unwrap();
    for (i, id) in ["dddddddd-0001", "dddddddd-0002"].into_iter().enumerate() {
        let line = json!({"type":"user","uuid":format!("u{i}"),"timestamp":"2026-12-01T10:00:00Z",
            "message":{"role":"user","content":format!("hello {i}")}});
        std::fs::write(project.join(format!("{id}.jsonl")), format!("{line}\n")).unwrap();
    }
    dir
}

/// Waits at most `limit` for `child` to exit; its exit code, or `None` (then it is killed).
fn exits_within(child: &mut Child, limit: Duration) -> Option<i32> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

fn follower(home: &Path, args: &[&str]) -> Child {
    clankie(home)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Polls 30 s apart: an end within 3 s is the closed stdout noticed between polls, not a write
/// that failed.
#[test]
fn a_follow_ends_with_exit_0_once_its_reader_is_gone_even_while_idle() {
    let dir = home();
    let mut child = follower(
        dir.path(),
        &["dddddddd-0001", "--follow", "--interval", "30"],
    );
    // `head -1`: one line read, then the pipe closed.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(!first.is_empty());
    drop(stdout);
    assert_eq!(exits_within(&mut child, Duration::from_secs(3)), Some(0));

    // A host-wide follow that has printed nothing yet ends the same way.
    let mut child = follower(dir.path(), &["local:*", "--follow", "--interval", "30"]);
    std::thread::sleep(Duration::from_millis(300));
    drop(child.stdout.take());
    assert_eq!(exits_within(&mut child, Duration::from_secs(3)), Some(0));
}

/// On a terminal (`script` runs it on a pty) the host-wide follow names what it follows
/// before anything else; with stderr not a terminal it says nothing of it.
#[test]
fn a_host_wide_follow_says_what_it_follows_on_a_terminal() {
    if !require_tool("script") {
        return;
    }
    let dir = home();
    let line = format!("timeout --preserve-status -s INT 2 '{BIN}' 'local:*' --follow");
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("TERM", "xterm")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert_eq!(
        shown,
        "following 2 sessions on local (claude 2) and every new one; Ctrl-C ends\n"
    );

    let child = clankie(dir.path())
        .args(["local:*", "--follow", "--interval", "0.1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let pid = child.id().to_string();
    Command::new("kill").args(["-INT", &pid]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
