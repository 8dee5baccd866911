//! `--follow` against a transcript written while it is read: random-sized chunks that split
//! lines, locally and over SSH with the connection killed mid-way. Every record arrives exactly
//! once, in order, with the ids a final `--head` read gives; Ctrl-C ends with exit 0. A Gemini
//! message appended again as it gains a result is printed once. The helpers that start and
//! collect a follower serve the SQLite follow tests too.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::sshd::sshd_or_skip;
use crate::support::{code, ids, ndjson, records, stderr};

fn record_line(i: usize) -> String {
    format!(
        "{}\n",
        serde_json::json!({"type":"user","uuid":format!("f-{i}"),"message":{"role":"user","content":format!("event {i}")}})
    )
}

/// Appends `count` records to `path` in chunks of 1..=`max_chunk` bytes, splitting lines
/// anywhere, with short pauses; calls `midway` once half is written.
fn write_slowly(path: &Path, count: usize, max_chunk: usize, mut midway: impl FnMut()) {
    let mut bytes = Vec::new();
    for i in 0..count {
        bytes.extend_from_slice(record_line(i).as_bytes());
    }
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut pos = 0;
    let mut called = false;
    while pos < bytes.len() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let n = (1 + (seed as usize % max_chunk)).min(bytes.len() - pos);
        file.write_all(&bytes[pos..pos + n]).unwrap();
        file.flush().unwrap();
        pos += n;
        if seed.is_multiple_of(8) {
            std::thread::sleep(Duration::from_millis(2));
        }
        if !called && pos >= bytes.len() / 2 {
            called = true;
            midway();
        }
    }
}

/// `[global…] read TARGET --follow --json --interval SECS`.
pub(crate) fn follow_args(global: &[&str], target: &str, interval: &str) -> Vec<String> {
    let tail = ["read", target, "--follow", "--json", "--interval", interval];
    global.iter().chain(&tail).map(|s| s.to_string()).collect()
}

/// Starts `--follow --json` and a thread that forwards its record lines.
pub(crate) fn follow(args: &[String], home: &Path) -> (Child, mpsc::Receiver<Value>) {
    let mut child = crate::support::clankie(home)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let value: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            if tx.send(value).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Collects records until `want` have arrived (or the deadline), then sends Ctrl-C.
pub(crate) fn collect(
    mut child: Child,
    rx: mpsc::Receiver<Value>,
    want: usize,
    deadline: Duration,
) -> (Vec<Value>, String) {
    let start = Instant::now();
    let mut got = Vec::new();
    while got.len() < want && start.elapsed() < deadline {
        if let Ok(value) = rx.recv_timeout(Duration::from_millis(200)) {
            assert_ne!(value["reset"], true, "unexpected reset: {value}");
            if value["type"] == "record" {
                got.push(value);
            }
        }
    }
    // Ctrl-C ends a follow with exit 0.
    let pid = i32::try_from(child.id()).unwrap();
    std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "follow did not exit 0 on Ctrl-C: {err}"
    );
    (got, err)
}

fn assert_exactly_once(got: &[Value], final_ids: &[String], count: usize) {
    assert_eq!(final_ids.len(), count);
    let got_ids = ids(got);
    if got_ids != final_ids {
        let first_diff = got_ids.iter().zip(final_ids).position(|(a, b)| a != b);
        panic!(
            "follow gave {} records, want {count}; first difference at {first_diff:?}",
            got_ids.len()
        );
    }
}

#[test]
fn follows_a_growing_local_file() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".claude/projects/-follow");
    std::fs::create_dir_all(&dir).unwrap();
    let path: PathBuf = dir.join("f0110c41-0000-4000-8000-000000000001.jsonl");
    std::fs::write(&path, record_line(usize::MAX - 1)).unwrap();
    let args = follow_args(&[], "local:f0110c41", "0.02");
    let (child, rx) = follow(&args, home.path());
    // The first page is the record already there; appending starts once it is out (a follow
    // started late on a busy machine would otherwise begin with a tail page of appended
    // records, rightly leaving the first out).
    let first = loop {
        let value = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the record already in the file");
        if value["type"] == "record" {
            break value;
        }
    };
    let count = 5_000;
    write_slowly(&path, count, 300, || {});
    let (rest, _) = collect(child, rx, count, Duration::from_secs(60));
    let got: Vec<Value> = std::iter::once(first).chain(rest).collect();
    let out = crate::support::run(home.path(), &["read", "local:f0110c41", "--all", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_exactly_once(&got, &ids(&records(&ndjson(&out))), count + 1);
}

#[test]
fn follows_over_ssh_through_a_dropped_connection() {
    let Some(sshd) = sshd_or_skip() else { return };
    // A user of its own: the test kills its connections (tests/it/common/sshd.rs), which
    // would break whatever else runs as a shared user meanwhile.
    let user = "ck_follow_drop";
    sshd.add_user(user, std::path::Path::new("/bin/sh"));
    let home = tempfile::tempdir().unwrap();
    let session = "f0110c42-0000-4000-8000-000000000002";
    let path = sshd.put_file(
        user,
        format!(".claude/projects/-follow-ssh/{session}.jsonl"),
        record_line(usize::MAX - 1).as_bytes(),
    );
    let alias = sshd.alias(user);
    let ssh_config = sshd.ssh_config().display().to_string();
    let args = follow_args(
        &["--ssh-config", &ssh_config],
        &format!("{alias}:{session}"),
        "0.05",
    );
    let (child, rx) = follow(&args, home.path());
    // Let the follower connect before writing.
    std::thread::sleep(Duration::from_millis(500));
    let count = 100_000;
    let mut killed = 0;
    write_slowly(&path, count, 4096, || {
        killed = sshd.kill_connections_of(user)
    });
    assert!(killed > 0, "no connection was killed");
    let (got, err) = collect(child, rx, count + 1, Duration::from_secs(300));
    assert!(err.contains("retrying"), "the drop was not reported: {err}");
    let out = crate::support::clankie(home.path())
        .args([
            "--ssh-config",
            &ssh_config,
            "read",
            &format!("{alias}:{session}"),
            "--all",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_exactly_once(&got, &ids(&records(&ndjson(&out))), count + 1);
}

#[test]
fn a_gemini_message_appended_again_is_not_printed_again() {
    // Gemini CLI upserts a message by appending it again, whole, as it gains a tool result:
    // across polls the follower prints each record once, the result when it arrives.
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".gemini/tmp/proj/chats");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("session-2026-11-30T10-00-f0110c42.jsonl");
    let header = r#"{"sessionId":"f0110c42","projectHash":"p","startTime":"2026-11-30T10:00:00.000Z","kind":"main"}"#;
    let user = r#"{"id":"u1","timestamp":"2026-11-30T10:00:01.000Z","type":"user","content":[{"text":"list files"}]}"#;
    let call = |status: &str, result: &str| {
        format!(
            r#"{{"id":"m1","timestamp":"2026-11-30T10:00:02.000Z","type":"gemini","content":"","toolCalls":[{{"id":"c1","name":"run_shell_command","args":{{"command":"ls"}},"status":"{status}"{result}}}]}}"#
        )
    };
    let done = call(
        "success",
        r#","result":[{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"output":"a b"}}}]"#,
    );
    let answer = r#"{"id":"m2","timestamp":"2026-11-30T10:00:03.000Z","type":"gemini","content":"Two files."}"#;
    std::fs::write(&path, format!("{header}\n{user}\n")).unwrap();
    let args = follow_args(&[], "local:session-2026-11-30T10-00-f0110c42", "0.05");
    let (child, rx) = follow(&args, home.path());
    let append = |line: &str| {
        std::thread::sleep(Duration::from_millis(400));
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        writeln!(file, "{line}").unwrap();
    };
    append(&call("executing", ""));
    append(&done);
    append(user);
    append(answer);
    std::thread::sleep(Duration::from_millis(400));
    // One more than expected, for a short while: a record printed twice would show.
    let (got, err) = collect(child, rx, 5, Duration::from_secs(3));
    let out = crate::support::run(
        home.path(),
        &[
            "read",
            "local:session-2026-11-30T10-00-f0110c42",
            "--all",
            "--json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let want = ids(&records(&ndjson(&out)));
    assert_eq!(want, ["u1", "m1#tc:c1", "tr:c1", "m2#text"], "{err}");
    assert_eq!(ids(&got), want, "{err}");
}

#[test]
fn follow_waits_out_a_gemini_document_caught_mid_rewrite() {
    // Gemini CLI rewrites a legacy `.json` session in place: a poll may see it cut short. That
    // poll is pending (no error, nothing printed); the next whole document prints each record
    // once.
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".gemini/tmp/proj/chats");
    std::fs::create_dir_all(&dir).unwrap();
    let whole =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "tests/fixtures/gemini/tmp/fixtures/chats/session-2026-04-29T21-00-legacysm.json",
        ))
        .unwrap();
    let path = dir.join("session-2026-04-29T21-00-legacysm.json");
    std::fs::write(&path, &whole[..whole.len() / 3]).unwrap();
    let target = "local:gemini/session-2026-04-29T21-00-legacysm";
    let (child, rx) = follow(&follow_args(&[], target, "0.05"), home.path());
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(&path, &whole).unwrap();
    let out = crate::support::run(home.path(), &["read", target, "--all", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let want = ids(&records(&ndjson(&out)));
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(&path, &whole[..whole.len() / 2]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(&path, &whole).unwrap();
    // One more than expected, for a short while: a record printed twice would show.
    let (got, err) = collect(child, rx, want.len() + 1, Duration::from_secs(2));
    assert_eq!(ids(&got), want, "{err}");
}
