//! Test support shared by the integration tests: the real sshd fixture (`sshd`), tool checks,
//! and running a child process with a timeout.
// Support code is written ahead of the tests that use it; not every helper has a caller yet.
#![allow(dead_code)]

pub(crate) mod sshd;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// True when running in CI (`CI=true`, as GitHub Actions and most CI systems set it). There a
/// missing tool or an unusable sshd is a failure, not a reason to skip.
pub(crate) fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Finds `name` (a bare program name, or an absolute path) the way a shell would.
pub(crate) fn find_tool(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return is_executable(Path::new(name)).then(|| PathBuf::from(name));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether `name` is installed. Under `CI=true` a missing tool panics (`.ci/install-deps`
/// should have installed it); elsewhere it says so on stderr and returns false, and the test
/// should return early.
pub(crate) fn require_tool(name: &str) -> bool {
    if find_tool(name).is_some() {
        return true;
    }
    skip_or_panic(&format!("`{name}` is not installed (run .ci/install-deps)"))
}

/// Under `CI=true` panics with `why`; elsewhere prints why the test is skipped and returns false.
pub(crate) fn skip_or_panic(why: &str) -> bool {
    if in_ci() {
        panic!("{why}");
    }
    eprintln!("skipping: {why}");
    false
}

/// Runs `cmd` with `stdin` written to it (then closed) and collects stdout and stderr. Panics
/// if it is still running after `timeout`, showing what it printed so far.
pub(crate) fn run_with_stdin(cmd: &mut Command, stdin: &[u8], timeout: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {cmd:?}: {e}"));
    let mut child_stdin = child.stdin.take().expect("piped stdin");
    let input = stdin.to_vec();
    // A separate thread so a child that stops reading cannot deadlock us; a write error (the
    // child exited first) is the child's business and shows in its status.
    let writer = thread::spawn(move || {
        let _ = child_stdin.write_all(&input);
    });
    let stdout = drain(child.stdout.take().expect("piped stdout"));
    let stderr = drain(child.stderr.take().expect("piped stderr"));
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for child") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let out = stdout.join().unwrap_or_default();
            let err = stderr.join().unwrap_or_default();
            panic!(
                "{cmd:?} still running after {timeout:?}\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&err)
            );
        }
        thread::sleep(Duration::from_millis(10));
    };
    let _ = writer.join();
    Output {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    }
}

fn drain(mut from: impl Read + Send + 'static) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = from.read_to_end(&mut buf);
        buf
    })
}

/// Runs `cmd` (empty stdin, killed after `timeout`) under GNU time; returns its output and its
/// peak resident memory in KiB, or `None` (the test skips) when GNU time is missing outside CI.
pub(crate) fn run_measured(cmd: &Command, timeout: Duration) -> Option<(Output, u64)> {
    // GNU time (the `time` package), by absolute path: a shell's `time` keyword has no `-f`.
    const GNU_TIME: &str = "/usr/bin/time";
    if !require_tool(GNU_TIME) {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("time");
    let mut timed = Command::new(GNU_TIME);
    // `clankie` clears the environment and sets what it needs: the same here.
    timed.env_clear();
    for (key, value) in cmd.get_envs() {
        if let Some(value) = value {
            timed.env(key, value);
        }
    }
    timed
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&report)
        .arg(cmd.get_program())
        .args(cmd.get_args());
    let out = run_with_stdin(&mut timed, b"", timeout);
    // A failing command adds a "Command exited with non-zero status" line before the figure.
    let text = std::fs::read_to_string(&report).unwrap();
    let kib = text
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak memory from {GNU_TIME}: {text:?}"));
    Some((out, kib))
}
