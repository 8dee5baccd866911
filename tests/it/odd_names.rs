//! Odd names and one bad session never sink a host: names holding CR, LF, ESC,
//! quotes, `$()`, bidi controls or backslashes are listed and read exactly — locally and over
//! SSH through dash and busybox `sh` on the real sshd — and shown without a raw control byte;
//! a name that is not UTF-8 is left out with one warning naming its directory; a session that
//! cannot be read is reported (stderr, and an `error` object with `--json`) while the rest of
//! its host is listed, read and saved, and `check` with a stalled host, an odd one and a good
//! one ends within its bound with the exit status SPEC gives.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::run_with_stdin;
use crate::common::sshd::{Hostile, Sshd, sshd_or_skip};
use crate::support::{code, ids, ndjson, records, stderr};

/// Project directory names (Claude names them after the working directory), each holding one
/// session. Every byte but `/` and NUL may be in a name.
pub(crate) const ODD_DIRS: [&str; 8] = [
    "-cr\rin the middle",
    "-lf\nin the middle",
    "-ends in lf\n",
    "-ends in cr\r",
    "-esc \x1b[31mred\x1b[0m \x1b]0;title\x07",
    "-q 'single' \"double\" $(touch clankie-pwned) `touch clankie-pwned` ; x",
    "C:\\Users\\me\\project",
    "-bidi \u{202e}desrever\u{202c} and \u{2028}separator",
];

fn session_id(i: usize) -> String {
    format!("0dd0a000-0000-4000-8000-0000000000{i:02}")
}

fn transcript_line(id: &str) -> String {
    format!(
        "{}\n",
        serde_json::json!({"type":"user","uuid":id,"timestamp":"2026-11-02T10:00:00.000Z",
            "message":{"role":"user","content":format!("prompt {id}")}})
    )
}

/// The binary with HOME `home`, the fixture's SSH config when there is one, and `args`.
fn clankie(sshd: Option<&Sshd>, home: &Path, args: &[&str]) -> Output {
    let mut cmd = crate::support::clankie(home);
    if let Some(sshd) = sshd {
        cmd.arg("--ssh-config").arg(sshd.ssh_config());
    }
    cmd.args(args);
    run_with_stdin(&mut cmd, b"", Duration::from_secs(60))
}

/// A root for this test process only under a shared test user's home (other tests list the
/// user's default root), removed when dropped.
struct RemoteRoot<'a> {
    sshd: &'a Sshd,
    user: &'static str,
    /// Relative to the home: `names-<pid>-<tag>/.claude`.
    rel: PathBuf,
}

impl<'a> RemoteRoot<'a> {
    fn new(sshd: &'a Sshd, user: &'static str, tag: &str) -> RemoteRoot<'a> {
        let base = format!("names-{}-{tag}", std::process::id());
        let _ = std::fs::remove_dir_all(sshd.home(user).join(&base));
        RemoteRoot {
            sshd,
            user,
            rel: Path::new(&base).join(".claude"),
        }
    }
    fn dir(&self) -> PathBuf {
        self.sshd.home(self.user).join(&self.rel)
    }
    fn put(&self, rel: impl AsRef<Path>, bytes: &[u8]) -> PathBuf {
        self.sshd.put_file(self.user, self.rel.join(rel), bytes)
    }
}

impl Drop for RemoteRoot<'_> {
    fn drop(&mut self) {
        if let Some(base) = self.rel.parent() {
            let _ = std::fs::remove_dir_all(self.sshd.home(self.user).join(base));
        }
    }
}

fn session_rel(dir: &str, i: usize) -> PathBuf {
    PathBuf::from("projects")
        .join(dir)
        .join(format!("{}.jsonl", session_id(i)))
}

/// Nothing a terminal would act on, raw: C0 controls but LF, DEL, C1, bidi and separators.
pub(crate) fn assert_no_raw_controls(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let bad: Vec<char> = text
        .chars()
        .filter(|&c| {
            (c.is_control() && c != '\n')
                || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect();
    assert!(bad.is_empty(), "{what}: raw {bad:?} in {text:?}");
}

/// `ls` (text and JSON) and `read` of the odd sessions under `root` on `host`: every one listed
/// at its exact path, read whole, and shown without a raw control byte.
fn lists_and_reads_every_odd_name(sshd: Option<&Sshd>, host: &str, root: &Path) {
    let home = tempfile::tempdir().unwrap();
    let root_arg = format!("claude={}", root.display());
    let ls = clankie(
        sshd,
        home.path(),
        &["--root", &root_arg, "ls", host, "--json"],
    );
    assert_eq!(code(&ls), 0, "{host}: {}", stderr(&ls));
    assert_eq!(stderr(&ls), "", "{host}: no warning");
    assert_no_raw_controls(&format!("{host} ls --json"), &ls.stdout);
    let listed = ndjson(&ls);
    assert_eq!(listed.len(), ODD_DIRS.len(), "{host}: {listed:#?}");
    for (i, dir) in ODD_DIRS.iter().enumerate() {
        let id = session_id(i);
        let line = listed
            .iter()
            .find(|l| l["session"] == id.as_str())
            .unwrap_or_else(|| panic!("{host}: {dir:?} not listed: {listed:#?}"));
        // The exact path, every byte of the name, after JSON decoding.
        let want = root.join(session_rel(dir, i));
        assert_eq!(line["path"], want.to_str().unwrap(), "{host}");
        let target = format!("{host}:{id}");
        let read = clankie(
            sshd,
            home.path(),
            &["read", &target, "--json", "--all", "--root", &root_arg],
        );
        assert_eq!(code(&read), 0, "{host} {dir:?}: {}", stderr(&read));
        assert_eq!(
            ids(&records(&ndjson(&read))),
            [format!("{id}-0#0")],
            "{host} {dir:?}"
        );
    }
    let text = clankie(sshd, home.path(), &["--root", &root_arg, "ls", host]);
    assert_eq!(code(&text), 0, "{host}: {}", stderr(&text));
    assert_no_raw_controls(&format!("{host} ls"), &text.stdout);
    // One line per session: no name broke a line.
    let out = String::from_utf8_lossy(&text.stdout).into_owned();
    assert_eq!(out.lines().count(), ODD_DIRS.len(), "{host}: {out}");
    for i in 0..ODD_DIRS.len() {
        assert!(out.contains(&session_id(i)), "{host}: {out}");
    }
    // The text table shows ids, not paths: the backslash directory's exact path is checked in
    // the JSON above.
}

#[test]
fn odd_names_are_listed_and_read_locally() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join(".claude");
    for (i, dir) in ODD_DIRS.iter().enumerate() {
        let path = root.join(session_rel(dir, i));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, transcript_line(&format!("{}-0", session_id(i)))).unwrap();
    }
    lists_and_reads_every_odd_name(None, "local", &root);
    assert!(!tmp.path().join("clankie-pwned").exists());
}

#[test]
fn odd_names_are_listed_and_read_over_ssh_in_every_sh() {
    let Some(sshd) = sshd_or_skip() else { return };
    // ck_dash and ck_bash run `sh -s` with dash, ck_busybox with busybox sh and its applets.
    for user in ["ck_dash", "ck_busybox", "ck_bash"] {
        if !sshd.users().contains(&user) {
            continue;
        }
        let root = RemoteRoot::new(sshd, user, "odd");
        for (i, dir) in ODD_DIRS.iter().enumerate() {
            root.put(
                session_rel(dir, i),
                transcript_line(&format!("{}-0", session_id(i))).as_bytes(),
            );
        }
        lists_and_reads_every_odd_name(Some(sshd), &sshd.alias(user), &root.dir());
        for place in [
            sshd.home(user),
            root.dir(),
            std::env::current_dir().unwrap(),
        ] {
            assert!(
                !place.join("clankie-pwned").exists(),
                "a name was run in {place:?}"
            );
        }
    }
}

/// A directory whose name is not UTF-8 holds a session: one warning naming the directory, an
/// `error` object with `--json`, the other session listed; exit 0, and 6 with `--strict`.
fn non_utf8_is_left_out_with_one_line(sshd: Option<&Sshd>, host: &str, root: &Path) {
    let home = tempfile::tempdir().unwrap();
    let root_arg = format!("claude={}", root.display());
    let shown = format!("{}/projects/-caf\u{fffd}", root.display());
    for json in [false, true] {
        let mut args = vec!["--root", &root_arg, "ls", host];
        if json {
            args.push("--json");
        }
        let ls = clankie(sshd, home.path(), &args);
        assert_eq!(code(&ls), 0, "{host}: {}", stderr(&ls));
        let err = stderr(&ls);
        assert_eq!(
            err,
            format!(
                "clankie-read: warning: {host}: {shown}: directory name is not UTF-8; its \
                 sessions are left out\n"
            ),
            "{host}"
        );
        let out = String::from_utf8_lossy(&ls.stdout).into_owned();
        assert!(out.contains(&session_id(1)), "{host}: {out}");
        assert!(!out.contains(&session_id(2)), "{host}: {out}");
        if json {
            let errors: Vec<Value> = ndjson(&ls)
                .into_iter()
                .filter(|l| l["type"] == "error")
                .collect();
            assert_eq!(errors.len(), 1, "{errors:?}");
            assert_eq!(errors[0]["host"], host);
            assert_eq!(errors[0]["harness"], "claude");
            assert_eq!(errors[0]["session"], Value::Null);
            assert_eq!(errors[0]["path"], shown.as_str());
        }
    }
    let strict = clankie(
        sshd,
        home.path(),
        &["--root", &root_arg, "ls", host, "--strict"],
    );
    assert_eq!(code(&strict), 6, "{host}: {}", stderr(&strict));
}

#[test]
fn a_name_that_is_not_utf8_is_left_out_with_one_warning_locally_and_over_ssh() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join(".claude");
    for (rel, i) in [(&b"projects/-ok"[..], 1), (b"projects/-caf\xe9", 2)] {
        let dir = root.join(OsStr::from_bytes(rel));
        std::fs::create_dir_all(&dir).unwrap();
        let id = session_id(i);
        std::fs::write(
            dir.join(format!("{id}.jsonl")),
            transcript_line(&format!("{id}-0")),
        )
        .unwrap();
    }
    non_utf8_is_left_out_with_one_line(None, "local", &root);

    let Some(sshd) = sshd_or_skip() else { return };
    let remote = RemoteRoot::new(sshd, "ck_dash", "utf8");
    for (rel, i) in [(&b"projects/-ok"[..], 1), (b"projects/-caf\xe9", 2)] {
        let id = session_id(i);
        let mut path = rel.to_vec();
        path.extend_from_slice(format!("/{id}.jsonl").as_bytes());
        remote.put(
            PathBuf::from(OsStr::from_bytes(&path)),
            transcript_line(&format!("{id}-0")).as_bytes(),
        );
    }
    non_utf8_is_left_out_with_one_line(Some(sshd), &sshd.alias("ck_dash"), &remote.dir());
}

fn saved(state: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(state).unwrap()).unwrap()
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// What a run may take beyond its bound: starting the binary, connecting, a loaded machine.
const SLACK: Duration = Duration::from_secs(8);

#[test]
fn check_goes_on_past_a_stalled_host_and_an_unreadable_session() {
    let Some(sshd) = sshd_or_skip() else { return };
    // The stalled host: its own user, so that no other test's run sees it stall.
    let stall_user = "ck_names_stall";
    let stalled_alias = sshd.add_hostile_user(stall_user, Hostile::StallOnFlag);
    let flag = sshd.home(stall_user).join("stall");
    let _ = std::fs::remove_file(&flag);
    let stalled = RemoteRoot::new(sshd, stall_user, "check");
    stalled.put(
        session_rel("-stall", 0),
        transcript_line("stall-0").as_bytes(),
    );
    // The odd host: a backslash directory and a CR/LF one that grow, and a session that
    // becomes unreadable.
    let odd = RemoteRoot::new(sshd, "ck_dash", "check");
    let growing = [
        odd.put(
            session_rel("C:\\Users\\me\\w", 1),
            transcript_line("odd1-0").as_bytes(),
        ),
        odd.put(
            session_rel("-x\r\ny", 2),
            transcript_line("odd2-0").as_bytes(),
        ),
    ];
    let locked = odd.put(
        session_rel("-locked", 3),
        transcript_line("odd3-0").as_bytes(),
    );
    // The good host: local.
    let home = tempfile::tempdir().unwrap();
    let good_root = home.path().join("agent/.claude");
    let good_file = good_root.join(session_rel("-good", 4));
    std::fs::create_dir_all(good_file.parent().unwrap()).unwrap();
    std::fs::write(&good_file, transcript_line("good-0")).unwrap();
    let hosts = home.path().join("hosts.toml");
    std::fs::write(
        &hosts,
        format!(
            "[hosts.good]\nlocal = true\nroots = {{ claude = \"{}\" }}\n\
             [hosts.odd]\nssh = \"{}\"\nroots = {{ claude = \"{}\" }}\n\
             [hosts.stalled]\nssh = \"{stalled_alias}\"\nroots = {{ claude = \"{}\" }}\n",
            good_root.display(),
            sshd.alias("ck_dash"),
            odd.dir().display(),
            stalled.dir().display(),
        ),
    )
    .unwrap();
    let state = home.path().join("state.json");
    let (hosts_arg, state_arg) = (hosts.display().to_string(), state.display().to_string());
    let check = |extra: &[&str]| {
        let mut args = vec![
            "--hosts",
            &hosts_arg,
            "--timeout",
            "30",
            "check",
            "--state",
            &state_arg,
            "--json",
            "--run-timeout",
            "3",
        ];
        args.extend_from_slice(extra);
        let start = Instant::now();
        let out = clankie(Some(sshd), home.path(), &args);
        (out, start.elapsed())
    };

    // A baseline of all three.
    let (first, _) = check(&[]);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let baseline = saved(&state);
    for (host, n) in [("good", 1), ("odd", 3), ("stalled", 1)] {
        assert_eq!(
            baseline["hosts"][host]["sessions"]
                .as_object()
                .map(|s| s.len()),
            Some(n),
            "{host}: {baseline}"
        );
    }

    // The stalled host stalls; on the odd host two sessions grow and one cannot be read; the
    // good host grows.
    sshd.put_file(stall_user, "stall", b"");
    for (i, path) in growing.iter().enumerate() {
        append(path, &transcript_line(&format!("odd{}-1", i + 1)));
    }
    append(&locked, &transcript_line("odd3-1"));
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    append(&good_file, &transcript_line("good-1"));
    let (second, elapsed) = check(&[]);
    std::fs::remove_file(&flag).unwrap();

    let err = stderr(&second);
    // A host failed: 3 (SPEC), and the run ended within its bound.
    assert_eq!(code(&second), 3, "{err}");
    assert!(
        elapsed < Duration::from_secs(3) + SLACK,
        "took {elapsed:?}: {err}"
    );
    assert!(
        err.contains("stalled: no complete answer within the run's 3 s"),
        "{err}"
    );
    let locked_id = session_id(3);
    let odd_lines: Vec<&str> = err.lines().filter(|l| l.contains(": odd: ")).collect();
    assert_eq!(odd_lines.len(), 1, "{err}");
    assert!(odd_lines[0].contains(&locked_id), "{err}");
    assert_eq!(err.lines().count(), 2, "{err}");
    assert_no_raw_controls("check stderr", &second.stderr);
    assert_no_raw_controls("check stdout", &second.stdout);
    let lines = ndjson(&second);
    let mut grew: Vec<(String, String)> = lines
        .iter()
        .filter(|l| l["type"] == "activity")
        .map(|l| {
            assert_eq!(l["change"], "grew", "{l}");
            assert_eq!(l["new_records"], 1, "{l}");
            (
                l["host"].as_str().unwrap().to_string(),
                l["session"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    grew.sort();
    let want: Vec<(String, String)> = [("good", 4), ("odd", 1), ("odd", 2)]
        .iter()
        .map(|(h, i)| (h.to_string(), session_id(*i)))
        .collect();
    assert_eq!(grew, want);
    let errors: Vec<&Value> = lines.iter().filter(|l| l["type"] == "error").collect();
    assert_eq!(errors.len(), 1, "{lines:?}");
    assert_eq!(errors[0]["host"], "odd");
    assert_eq!(errors[0]["harness"], "claude");
    assert_eq!(errors[0]["session"], locked_id.as_str());
    assert_eq!(errors[0]["path"], locked.to_str().unwrap());
    assert!(errors[0]["message"].as_str().unwrap().contains("-locked"));

    // Saved: the good host and the odd host's readable sessions advanced; the unreadable one
    // and the stalled host kept their old state.
    let after = saved(&state);
    assert_eq!(after["hosts"]["stalled"], baseline["hosts"]["stalled"]);
    let key = |i: usize| format!("claude/{}", session_id(i));
    for (host, i, path) in [
        ("good", 4, &good_file),
        ("odd", 1, &growing[0]),
        ("odd", 2, &growing[1]),
    ] {
        let now = &after["hosts"][host]["sessions"][key(i)];
        assert_eq!(
            now["size"],
            std::fs::metadata(path).unwrap().len(),
            "{after}"
        );
        assert_ne!(
            now["cursor"],
            baseline["hosts"][host]["sessions"][key(i)]["cursor"]
        );
    }
    assert_eq!(
        after["hosts"]["odd"]["sessions"][key(3)],
        baseline["hosts"]["odd"]["sessions"][key(3)]
    );

    // Without the stalled host: the unreadable session alone is exit 0, and 6 with --strict;
    // it is still reported each time, never forgotten.
    for (strict, want) in [(false, 0), (true, 6)] {
        let mut args = vec!["--hosts", &hosts_arg, "check", "--state", &state_arg, "odd"];
        if strict {
            args.push("--strict");
        }
        let out = clankie(Some(sshd), home.path(), &args);
        assert_eq!(code(&out), want, "{}", stderr(&out));
        assert!(stderr(&out).contains(&locked_id), "{}", stderr(&out));
        // Text output: nothing on stdout for the error, nothing new to report.
        assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    }
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (recovered, _) = check(&["odd"]);
    assert_eq!(code(&recovered), 0, "{}", stderr(&recovered));
    let recovered: Vec<Value> = ndjson(&recovered);
    assert_eq!(recovered.len(), 1, "{recovered:?}");
    assert_eq!(recovered[0]["session"], locked_id.as_str());
    assert_eq!(recovered[0]["change"], "grew");
    assert_eq!(recovered[0]["new_records"], 1);
}
