//! Hosts that accept the command and then stall (`common::sshd::Hostile` login shells on the
//! real sshd): every command ends within its time bound with one line on stderr and exit 3,
//! nothing of the reply printed; `check` ends within `--run-timeout`, saves the hosts that
//! answered and keeps the stalled host's old cursors, and does not lock a concurrent run out
//! for longer than that; `--follow` rides out a stall as it does a dropped connection.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::run_with_stdin;
use crate::common::sshd::{Hostile, Sshd, sshd_or_skip};
use crate::support::{code, ids, ndjson, stderr};

/// What a run may take beyond its bound: starting the binary, connecting, a loaded machine.
const SLACK: Duration = Duration::from_secs(8);

fn line(id: &str) -> String {
    format!(
        "{}\n",
        serde_json::json!({"type":"user","uuid":id,"timestamp":"2026-11-02T10:00:00.000Z",
            "message":{"role":"user","content":format!("prompt {id}")}})
    )
}

/// The binary with the fixture's SSH config and `args`; HOME is `home`.
fn clankie(sshd: &Sshd, home: &Path, args: &[&str]) -> Command {
    let mut cmd = crate::support::clankie(home);
    cmd.arg("--ssh-config").arg(sshd.ssh_config()).args(args);
    cmd
}

/// Runs to the end (failing the test if that takes longer than `bound` and the slack twice
/// over); returns the output and how long it took.
fn run_timed(mut cmd: Command, bound: Duration) -> (Output, Duration) {
    let start = Instant::now();
    let out = run_with_stdin(&mut cmd, b"", bound + 2 * SLACK);
    (out, start.elapsed())
}

/// The run gave up on its host when its bound ran out, not before and not much after, with one
/// line naming why, exit 3, and nothing of what the host sent printed.
fn assert_given_up(out: &Output, elapsed: Duration, bound: Duration, says: &str) {
    let err = stderr(out);
    assert_eq!(code(out), 3, "{err}");
    assert!(
        elapsed >= bound && elapsed < bound + SLACK,
        "ended after {elapsed:?}, bound {bound:?}: {err}"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("clankie-read: "), "{err}");
    assert!(err.contains(says), "want {says:?} in: {err}");
    assert!(err.trim_end().ends_with("; giving up"), "{err}");
    assert!(
        out.stdout.is_empty(),
        "stdout: {:?}",
        stderr_of(&out.stdout)
    );
    for raw in ["BEGIN", "xx"] {
        assert!(!err.contains(raw), "printed what the host sent: {err}");
    }
}

fn stderr_of(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_host_that_says_nothing_is_given_up_after_the_timeout() {
    let Some(sshd) = sshd_or_skip() else { return };
    let alias = sshd.add_hostile_user("ck_silent", Hostile::Silent);
    let home = tempfile::tempdir().unwrap();
    let bound = Duration::from_secs(2);
    let (out, elapsed) = run_timed(
        clankie(sshd, home.path(), &["--timeout", "2", "ls", &alias]),
        bound,
    );
    assert_given_up(
        &out,
        elapsed,
        bound,
        &format!("{alias}: no reply for 2 s after the command was sent; giving up"),
    );
    // A read, with the flag after the subcommand and in fractions, and NDJSON asked for.
    let target = format!("{alias}:5e55ed01");
    let bound = Duration::from_millis(1500);
    let args = ["read", &target, "--json", "--timeout", "1.5"];
    let (out, elapsed) = run_timed(clankie(sshd, home.path(), &args), bound);
    assert_given_up(&out, elapsed, bound, "no reply for 1.5 s after the command");
}

#[test]
fn a_host_that_drips_is_given_up_after_the_whole_reply_bound() {
    let Some(sshd) = sshd_or_skip() else { return };
    let alias = sshd.add_hostile_user("ck_drip", Hostile::Drip);
    let home = tempfile::tempdir().unwrap();
    // A byte a second never lets two seconds of silence pass: the whole-reply bound ends it.
    let bound = Duration::from_secs(4);
    let args = ["--timeout", "2", "--reply-timeout", "4", "ls", &alias];
    let (out, elapsed) = run_timed(clankie(sshd, home.path(), &args), bound);
    assert_given_up(
        &out,
        elapsed,
        bound,
        &format!("{alias}: the reply was not complete after 4 s ("),
    );
    // Less patience than a second between bytes: the silence after the first bytes ends it.
    let bound = Duration::from_millis(800);
    let args = ["--timeout", "0.8", "--reply-timeout", "60", "ls", &alias];
    let (out, elapsed) = run_timed(clankie(sshd, home.path(), &args), bound);
    assert_given_up(
        &out,
        elapsed,
        bound,
        &format!("{alias}: the reply stopped: no byte for 0.8 s after "),
    );
}

#[test]
fn bad_time_bounds_are_usage_errors_before_any_connection() {
    let home = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["--timeout", "0", "ls", "nowhere.invalid"][..],
            "--timeout wants a positive number of seconds, got 0",
        ),
        (
            &["--reply-timeout=-1", "ls", "nowhere.invalid"][..],
            "--reply-timeout wants a positive number of seconds, got -1",
        ),
        (
            &[
                "check",
                "--state",
                "s.json",
                "--run-timeout",
                "0",
                "nowhere.invalid",
            ][..],
            "--run-timeout wants a positive number of seconds, got 0",
        ),
    ] {
        let out = crate::support::run(home.path(), args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

/// The `stalled` host (a [`Hostile::StallOnFlag`] user) and the `good` one (local) in a hosts
/// file; returns its path.
fn two_hosts(home: &Path, good_root: &Path, stalled_alias: &str, stalled_root: &Path) -> String {
    let hosts = home.join("hosts.toml");
    std::fs::write(
        &hosts,
        format!(
            "[hosts.good]\nlocal = true\nroots = {{ claude = \"{}\" }}\n\
             [hosts.stalled]\nssh = \"{stalled_alias}\"\nroots = {{ claude = \"{}\" }}\n",
            good_root.display(),
            stalled_root.display()
        ),
    )
    .unwrap();
    hosts.display().to_string()
}

fn saved(state: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(state).unwrap()).unwrap()
}

#[test]
fn check_ends_within_its_bound_saving_the_hosts_that_answered() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_stall_check";
    let alias = sshd.add_hostile_user(user, Hostile::StallOnFlag);
    let flag = sshd.home(user).join("stall");
    let _ = std::fs::remove_file(&flag);
    let stalled_root = sshd.home(user).join(".claude");
    sshd.put_file(
        user,
        ".claude/projects/-stall-check/5a11c0de-0000-4000-8000-000000000001.jsonl",
        line("remote-0").as_bytes(),
    );
    let home = tempfile::tempdir().unwrap();
    let good_root = home.path().join("agent/.claude");
    let session = "600dc0de-0000-4000-8000-000000000001";
    let good_file = good_root.join(format!("projects/-good/{session}.jsonl"));
    std::fs::create_dir_all(good_file.parent().unwrap()).unwrap();
    std::fs::write(&good_file, line("good-0")).unwrap();
    let hosts = two_hosts(home.path(), &good_root, &alias, &stalled_root);
    let state = home.path().join("state.json");
    let state_arg = state.display().to_string();
    // The run's bound, well under the silence bound: it is what ends the run.
    let run_bound = Duration::from_secs(3);
    let args = [
        "--hosts",
        &hosts,
        "--timeout",
        "30",
        "check",
        "--state",
        &state_arg,
        "--json",
        "--run-timeout",
        "3",
        "--wait",
        "10",
    ];

    // Both answer: a baseline of both.
    let (first, _) = run_timed(clankie(sshd, home.path(), &args), run_bound);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let baseline = saved(&state);
    assert_eq!(
        baseline["hosts"]["stalled"]["sessions"]
            .as_object()
            .map(|s| s.len()),
        Some(1),
        "{baseline}"
    );

    // The remote host stalls; the local session grows. Two runs at once on one state file.
    sshd.put_file(user, "stall", b"");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&good_file)
        .unwrap();
    file.write_all(line("good-1").as_bytes()).unwrap();
    let start = Instant::now();
    let runs: Vec<_> = [Duration::ZERO, Duration::from_millis(500)]
        .into_iter()
        .map(|delay| {
            let cmd = clankie(sshd, home.path(), &args);
            thread::spawn(move || {
                thread::sleep(delay);
                run_timed(cmd, 2 * run_bound)
            })
        })
        .collect();
    let mut runs = runs.into_iter().map(|t| t.join().unwrap());
    let (stalled, elapsed) = runs.next().unwrap();
    let (second, second_elapsed) = runs.next().unwrap();
    std::fs::remove_file(&flag).unwrap();

    let err = stderr(&stalled);
    assert_eq!(code(&stalled), 3, "{err}");
    assert!(
        elapsed >= run_bound && elapsed < run_bound + SLACK,
        "ended after {elapsed:?}: {err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "stalled: no complete answer within the run's 3 s (--run-timeout); its old cursors \
             are kept; giving up"
        ),
        "{err}"
    );
    let activity: Vec<Value> = ndjson(&stalled)
        .into_iter()
        .filter(|l| l["type"] == "activity")
        .collect();
    assert_eq!(activity.len(), 1, "{activity:?}");
    assert_eq!(
        (
            &activity[0]["host"],
            &activity[0]["change"],
            &activity[0]["new_records"]
        ),
        (&"good".into(), &"grew".into(), &1.into())
    );

    // The second run waited for the lock (not locked out: no exit 75), found nothing new on
    // the good host (the first had saved it) and gave up on the stalled one in its own bound.
    let err = stderr(&second);
    assert_eq!(code(&second), 3, "{err}");
    assert!(!err.contains("another `check`"), "{err}");
    assert!(err.contains("stalled: no complete answer"), "{err}");
    assert!(ndjson(&second).is_empty(), "{}", stderr_of(&second.stdout));
    assert!(
        second_elapsed < 2 * run_bound + SLACK,
        "the second run took {second_elapsed:?}: {err}"
    );
    assert!(start.elapsed() < Duration::from_secs(15) + SLACK);

    let after = saved(&state);
    assert_eq!(after["hosts"]["stalled"], baseline["hosts"]["stalled"]);
    let good = &after["hosts"]["good"]["sessions"][format!("claude/{session}")];
    assert_eq!(
        good["size"],
        std::fs::metadata(&good_file).unwrap().len(),
        "{after}"
    );
    assert_ne!(
        good["cursor"],
        baseline["hosts"]["good"]["sessions"][format!("claude/{session}")]["cursor"]
    );
}

/// `--follow --json` with its stdout (records) and stderr (lines) forwarded as they come.
fn follow(cmd: &mut Command) -> (Child, mpsc::Receiver<Value>, mpsc::Receiver<String>) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (records, out_rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let value: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if value["type"] == "record" && records.send(value).is_err() {
                break;
            }
        }
    });
    let (lines, err_rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    (child, out_rx, err_rx)
}

/// Waits (at most `within`) for `want` more values; returns them.
fn wait_for<T>(rx: &mpsc::Receiver<T>, want: usize, within: Duration) -> Vec<T> {
    let deadline = Instant::now() + within;
    let mut got = Vec::new();
    while got.len() < want {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(value) => got.push(value),
            Err(_) => break,
        }
    }
    got
}

#[test]
fn follow_rides_out_a_stall_like_a_dropped_connection() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_stall_follow";
    let alias = sshd.add_hostile_user(user, Hostile::StallOnFlag);
    let flag = sshd.home(user).join("stall");
    let _ = std::fs::remove_file(&flag);
    let session = "5a11f011-0000-4000-8000-000000000001";
    let path = sshd.put_file(
        user,
        format!(".claude/projects/-stall-follow/{session}.jsonl"),
        line("f-0").as_bytes(),
    );
    let home = tempfile::tempdir().unwrap();
    let target = format!("{alias}:{session}");
    let args = [
        "--timeout",
        "1",
        "read",
        &target,
        "--follow",
        "--json",
        "--interval",
        "0.2",
    ];
    let (mut child, records, lines) = follow(&mut clankie(sshd, home.path(), &args));
    let mut got = wait_for(&records, 1, SLACK);
    assert_eq!(ids(&got), ["f-0#0"]);

    // The host stalls: the follow says so and retries, it does not give up.
    sshd.put_file(user, "stall", b"");
    let mut err: Vec<String> = Vec::new();
    let deadline = Instant::now() + SLACK;
    while !err.iter().any(|l| l.contains("retrying in")) && Instant::now() < deadline {
        err.extend(wait_for(&lines, 1, Duration::from_millis(200)));
    }
    std::fs::remove_file(&flag).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    for id in ["f-1", "f-2", "f-3"] {
        file.write_all(line(id).as_bytes()).unwrap();
    }
    got.extend(wait_for(&records, 3, 2 * SLACK));
    // A moment for a record given twice to show.
    got.extend(wait_for(&records, 1, Duration::from_millis(600)));
    let pid = child.id().to_string();
    Command::new("kill").args(["-INT", &pid]).status().unwrap();
    let status = child.wait().unwrap();
    err.extend(lines.iter());
    let err = err.join("\n");
    assert_eq!(status.code(), Some(0), "{err}");
    assert_eq!(ids(&got), ["f-0#0", "f-1#0", "f-2#0", "f-3#0"], "{err}");
    assert!(
        err.contains(&format!(
            "{alias}: no reply for 1 s after the command was sent; retrying in 1s"
        )),
        "{err}"
    );
    assert!(err.contains("reconnected"), "{err}");
    assert!(!err.contains("giving up"), "{err}");
}

/// Hosts whose replies are hostile in shape, not in timing: a flood far over the
/// reply cap, a list of millions of short names under one long root, a frame with another
/// nonce, truncated and invalid base64. Each run ends with one clear line and the documented
/// exit code (3 for a broken wire format, 6 for a cap), prints no raw control byte, and peaks
/// under [`bad_replies::MEMORY_BOUND_KIB`] of resident memory; so does a run over listings at
/// the entry bound and at the byte bound (`crates/model/src/limits.rs`).
///
/// Peak memory is GNU time's `%M`: the child's own `ru_maxrss` from `wait4`, exact however
/// short the peak, with no `unsafe` in the tests (the workspace forbids it) and no crate added
/// for one system call; polling `/proc` could miss a peak between two samples. `.ci/install-deps`
/// installs `time`.
mod bad_replies {
    use std::process::{Command, Output};
    use std::time::Duration;

    use base64::Engine as _;
    use clankie_model::limits::{MAX_LIST_ENTRIES, MAX_LIST_REPLY_BYTES, MAX_LISTING_BYTES};
    use clankie_model::{FileEntry, ResolvedRoot};

    use super::{SLACK, clankie, line, stderr_of};
    use crate::common::sshd::{Sshd, sshd_or_skip};
    use crate::support::{code, stderr};

    /// Peak resident memory a run may reach, in KiB (`%M`'s unit).
    pub(super) const MEMORY_BOUND_KIB: u64 = 256 * 1024;

    /// Every hostile shell starts here: it reads the script on stdin, takes its nonce (the
    /// script's line `N='…'`) and tells a list script (the one defining `walk`) from a read.
    const PREAMBLE: &str = r#"#!/bin/sh
# A hostile login shell (tests/it/hostile.rs, bad_replies): reads the script, takes its nonce,
# then answers as below.
# The script: in the command (`sh -c 'eval "$(printf "…")"'`, crates/host/src/ssh/inline.rs),
# whose printf is run alone, else on stdin.
h="sh -c 'eval \"\$(" t=")\"'"
case $2 in "$h"*"$t") c=${2#"$h"}; s=$(eval "${c%"$t"}") ;; *) s=$(cat) ;; esac
n=$(printf '%s\n' "$s" | sed -n "s/^N='\([0-9a-f]*\)'\$/\1/p")
case $s in *'walk() {'*|*'gl() {'*) list=1 ;; *) list= ;; esac
# A find-and-read script (a listing that may read its one match at once, by a walk or by
# globs) is made a plain listing: it starts as if a name no line can carry had been found, so
# it reads nothing, and the read comes as a read script of its own.
case $s in *"printf 'HIT "*) s=$(printf '%s\n' "$s" | sed 's/^nm=0 hr= hp= nn=0 nr= np= fx=$/nm=0 hr= hp= nn=0 nr= np= fx=1/; s/^nm=0 fx= hp=$/nm=0 fx=1 hp=/') ;; esac
"#;

    /// Opens the frame, then sends far more than any cap allows, terminal escapes included;
    /// `yes` ends when the client hangs up.
    const FLOOD: &str = r#"printf '\n%s:BEGIN Linux\n' "$n"
exec yes "$(printf 'F 1 2 projects/\033[2J\r\007.jsonl')"
"#;

    /// A well-formed list reply: one root (`@ROOT@`, hex) and `@LINES@` lines from `seq -f`.
    const MANY_FILES: &str = r#"printf '\n%s:BEGIN Linux\nROOT claude 1 @ROOT@\n' "$n"
seq -f '@FORMAT@' 1 @LINES@
printf '\n%s:END 0\n' "$n"
"#;

    /// A whole frame, under another nonce, with terminal escapes in it.
    const WRONG_NONCE: &str = r#"o=0123456789abcdef0123456789abcdef
printf '\n%s:BEGIN Linux\nROOT claude 1 2f\n\033]0;owned\007\033[2J\n\n%s:END 0\n' "$o" "$o"
"#;

    /// Lists with the real `sh`; answers every read with range 0's payload `@PAYLOAD@` (a
    /// printf format) for a file of `@SIZE@` bytes.
    const READ_PAYLOAD: &str = r#"if [ -n "$list" ]; then printf '%s\n' "$s" | /bin/sh -s; exit; fi
printf '\n%s:BEGIN Linux\nMETA size=@SIZE@ enc=b64\nDATA 0\n@PAYLOAD@\nEND-DATA 0\n\n%s:END 0\n' "$n" "$n"
"#;

    /// `/rrr…` of `len` bytes, hex-encoded as a ROOT line carries it.
    fn long_root_hex(len: usize) -> String {
        let mut root = b"/".to_vec();
        root.resize(len, b'r');
        root.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Runs `cmd` under GNU time within `bound` (and slack): its output and peak memory.
    fn run_measured(cmd: &Command, bound: Duration) -> Option<(Output, u64)> {
        crate::common::run_measured(cmd, bound + 2 * SLACK)
    }

    /// The run ended with one line naming `says`, exit `want`, nothing on stdout, no raw
    /// control or bidi character, and under the memory bound.
    fn assert_refused(out: &Output, peak_kib: u64, want: i32, says: &str) {
        let err = stderr(out);
        assert_eq!(code(out), want, "{err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.starts_with("clankie-read: "), "{err}");
        assert!(err.contains(says), "want {says:?} in: {err}");
        assert!(
            out.stdout.is_empty(),
            "stdout: {:?}",
            stderr_of(&out.stdout)
        );
        let raw = err.trim_end_matches('\n').chars().find(|&c| {
            c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        });
        assert_eq!(
            raw, None,
            "a raw control character reached the terminal: {err:?}"
        );
        assert!(
            peak_kib < MEMORY_BOUND_KIB,
            "peak memory {peak_kib} KiB, over {MEMORY_BOUND_KIB} KiB: {err}"
        );
    }

    /// The hostile user `user`, its login shell [`PREAMBLE`] then `body`; returns its alias.
    fn hostile(sshd: &Sshd, user: &str, body: &str) -> String {
        sshd.add_script_user(user, &format!("{PREAMBLE}{body}"))
    }

    #[test]
    fn a_flood_past_the_reply_cap_is_refused_as_it_passes() {
        let Some(sshd) = sshd_or_skip() else { return };
        let alias = hostile(sshd, "ck_mem_flood", FLOOD);
        let home = tempfile::tempdir().unwrap();
        let cmd = clankie(sshd, home.path(), &["--timeout", "20", "ls", &alias]);
        let Some((out, peak)) = run_measured(&cmd, Duration::from_secs(20)) else {
            return;
        };
        assert_refused(
            &out,
            peak,
            6,
            &format!(
                "{alias}: reply too large: remote output over {MAX_LIST_REPLY_BYTES} bytes; \
                 refusing it"
            ),
        );
    }

    #[test]
    fn millions_of_names_under_one_long_root_stop_at_the_entry_bound() {
        let Some(sshd) = sshd_or_skip() else { return };
        // Two million short lines (some 48 MB, under the byte cap) under a 4,000-byte root:
        // a copy of the root per entry would take 8 GB before the count was even looked at.
        let lines = 2_000_000;
        let body = MANY_FILES
            .replace("@ROOT@", &long_root_hex(4000))
            .replace("@FORMAT@", "F 1 2 projects/%.0f.jsonl")
            .replace("@LINES@", &lines.to_string());
        let alias = hostile(sshd, "ck_mem_huge", &body);
        let home = tempfile::tempdir().unwrap();
        let cmd = clankie(sshd, home.path(), &["--timeout", "20", "ls", &alias]);
        let Some((out, peak)) = run_measured(&cmd, Duration::from_secs(20)) else {
            return;
        };
        assert_refused(
            &out,
            peak,
            6,
            &format!(
                "{alias}: reply too large: listing has more than {MAX_LIST_ENTRIES} files; \
                 refusing it"
            ),
        );
    }

    #[test]
    fn listings_at_either_bound_under_a_long_root_fit_in_memory() {
        let Some(sshd) = sshd_or_skip() else { return };
        const ROOT_LEN: usize = 4000;
        // Transcript-like names, `%012.0f` standing for 12 digits.
        let name = |dir: &str| format!("projects/-{dir}/00000000-0000-4000-8000-%012.0f.jsonl");
        let rel_len = |name: &str| name.len() - "%012.0f".len() + 12;
        // The entry bound with short directories; the byte bound (all it leaves after the
        // root, in entries of 250-character directories) with long ones.
        let long = name(&"d".repeat(249));
        let at_byte_bound = (MAX_LISTING_BYTES - size_of::<ResolvedRoot>() - 2 * ROOT_LEN)
            / (size_of::<FileEntry>() + rel_len(&long));
        assert!(at_byte_bound < MAX_LIST_ENTRIES);
        for (user, name, lines) in [
            ("ck_mem_entries", name("p"), MAX_LIST_ENTRIES),
            ("ck_mem_bytes", long, at_byte_bound),
        ] {
            let body = MANY_FILES
                .replace("@ROOT@", &long_root_hex(ROOT_LEN))
                .replace("@FORMAT@", &format!("F 1 2 {name}"))
                .replace("@LINES@", &lines.to_string());
            let alias = hostile(sshd, user, &body);
            // Listed, made sessions of and looked through for an id not among them: a read
            // that prints nothing of the list.
            let home = tempfile::tempdir().unwrap();
            let missing = "5e55ed01-0000-4000-8000-000000000000";
            let target = format!("{alias}:{missing}");
            let cmd = clankie(sshd, home.path(), &["--timeout", "20", "read", &target]);
            let Some((out, peak)) = run_measured(&cmd, Duration::from_secs(20)) else {
                return;
            };
            assert_refused(&out, peak, 4, &format!("no session `{missing}`"));
        }
    }

    #[test]
    fn a_frame_under_another_nonce_is_the_hosts_fault() {
        let Some(sshd) = sshd_or_skip() else { return };
        let alias = hostile(sshd, "ck_mem_nonce", WRONG_NONCE);
        let home = tempfile::tempdir().unwrap();
        let cmd = clankie(sshd, home.path(), &["--timeout", "20", "ls", &alias]);
        let Some((out, peak)) = run_measured(&cmd, Duration::from_secs(20)) else {
            return;
        };
        assert_refused(
            &out,
            peak,
            3,
            &format!("{alias}: remote shell is not clean (no framed reply)"),
        );
    }

    /// A user whose reads answer `payload` (a printf format) for a real session file; returns
    /// the `read` target.
    fn bad_payload(sshd: &Sshd, user: &str, payload: &str) -> String {
        let session = "5e55ed01-0000-4000-8000-000000000001";
        let content = line("m-0");
        let body = READ_PAYLOAD
            .replace("@SIZE@", &content.len().to_string())
            .replace("@PAYLOAD@", payload);
        let alias = hostile(sshd, user, &body);
        sshd.put_file(
            user,
            format!(".claude/projects/-mem/{session}.jsonl"),
            content.as_bytes(),
        );
        format!("{alias}:{session}")
    }

    #[test]
    fn truncated_and_invalid_base64_are_the_hosts_fault() {
        let Some(sshd) = sshd_or_skip() else { return };
        let whole = base64::engine::general_purpose::STANDARD.encode(line("m-0"));
        // Cut three characters short: a length no base64 encoder ends on.
        let truncated = &whole[..whole.len() - 3];
        for (user, payload, says) in [
            ("ck_mem_b64cut", truncated, "range 0: bad base64"),
            (
                "ck_mem_b64bad",
                r"SGVs\033[2J#!*\007",
                "range 0: bad base64",
            ),
        ] {
            let target = bad_payload(sshd, user, payload);
            let home = tempfile::tempdir().unwrap();
            let cmd = clankie(sshd, home.path(), &["--timeout", "20", "read", &target]);
            let Some((out, peak)) = run_measured(&cmd, Duration::from_secs(20)) else {
                return;
            };
            assert_refused(&out, peak, 3, says);
        }
    }
}

/// A host whose file really moves under every read: before each read script runs, the hostile
/// login shell rewrites the session to 2e6, 3e6, 4e6, then 1000 bytes and round again (a
/// counter in its home), so the file grows past what was listed three times and is then shorter
/// than where the read started. The file is one record line repeated, so each size is a prefix
/// of the next. Each run ends within its time bound either with one whole page (exit 0: a read
/// caught the file between moves) or, past the retries, with one line and exit 6 (SPEC: a
/// source that cannot be read) — never a panic (101).
mod moving_sizes {
    use std::time::Duration;

    use super::{SLACK, clankie, line, run_timed};
    use crate::common::sshd::sshd_or_skip;
    use crate::support::{code, ndjson, stderr};

    const MOVING_SHELL: &str = r#"#!/bin/sh
# A hostile login shell (tests/it/hostile.rs, moving_sizes): lists with the real sh; before each
# read, rewrites the session file (its path in ~/target) to the next size of the walk.
# The script: in the command (`sh -c 'eval "$(printf "…")"'`, crates/host/src/ssh/inline.rs),
# whose printf is run alone, else on stdin.
h="sh -c 'eval \"\$(" t=")\"'"
case $2 in "$h"*"$t") c=${2#"$h"}; s=$(eval "${c%"$t"}") ;; *) s=$(cat) ;; esac
case $s in *'walk() {'*|*'gl() {'*) printf '%s\n' "$s" | /bin/sh -s; exit ;; esac
c=$(cat "$HOME/reads" 2>/dev/null || echo 0)
echo $((c + 1)) >"$HOME/reads"
case $((c % 4)) in 0) z=2000000 ;; 1) z=3000000 ;; 2) z=4000000 ;; *) z=1000 ;; esac
f=$(cat "$HOME/target")
yes "$(cat "$HOME/line")" | head -c "$z" >"$f.new" && mv "$f.new" "$f"
printf '%s\n' "$s" | exec /bin/sh -s
"#;

    #[test]
    fn a_file_that_grows_then_shrinks_under_every_read_ends_in_one_line_not_a_panic() {
        let Some(sshd) = sshd_or_skip() else { return };
        let user = "ck_moving_sizes";
        let alias = sshd.add_script_user(user, MOVING_SHELL);
        let session = "5e55ed02-0000-4000-8000-000000000002";
        let rel = format!(".claude/projects/-moving/{session}.jsonl");
        let record = line("m");
        let target = format!("{alias}:{session}");
        let bound = Duration::from_secs(20);
        for args in [
            &["read", &target, "--tail", "--json"][..],
            &["read", &target, "--all", "--json"][..],
        ] {
            // 40 KiB to list: a tail starts well inside the file, past the 1000 bytes it
            // shrinks to.
            sshd.put_file(user, &rel, record.repeat(40_000 / record.len()).as_bytes());
            sshd.put_file(user, "line", record.trim_end().as_bytes());
            sshd.put_file(
                user,
                "target",
                sshd.home(user).join(&rel).to_str().unwrap().as_bytes(),
            );
            let _ = std::fs::remove_file(sshd.home(user).join("reads"));
            let home = tempfile::tempdir().unwrap();
            let mut cmd = clankie(sshd, home.path(), &["--timeout", "20"]);
            cmd.args(args);
            let (out, elapsed) = run_timed(cmd, bound + SLACK);
            let err = stderr(&out);
            assert_ne!(code(&out), 101, "{args:?} panicked: {err}");
            assert!(elapsed < bound + SLACK, "{args:?}: took {elapsed:?}");
            match code(&out) {
                // It caught the file between two moves: one whole page, nothing else said.
                0 => {
                    assert_eq!(err, "", "{args:?}");
                    let lines = ndjson(&out);
                    let (page, records) = lines.split_last().expect("a page line");
                    assert_eq!(page["type"], "page", "{args:?}: {lines:#?}");
                    assert!(
                        records.iter().all(|r| r["type"] == "record"),
                        "{args:?}: {lines:#?}"
                    );
                }
                // It kept moving past the retries: one line, nothing half-read printed.
                6 => {
                    assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
                    assert!(
                        err.contains("the file kept changing while it was read"),
                        "{args:?}: {err}"
                    );
                    assert!(
                        !String::from_utf8_lossy(&out.stdout).contains("\"type\":\"record\""),
                        "{args:?}"
                    );
                }
                other => panic!("{args:?}: exit {other}: {err}"),
            }
        }
    }
}
