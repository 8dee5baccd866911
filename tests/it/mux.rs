//! Connection sharing against the real sshd and the real OpenSSH client: a master
//! started with `ssh -M -N -f` runs `ls`, `read --tail` and `hosts --check` with no connection
//! of ours (a config whose own authentication would fail proves it); ControlPath tokens are
//! expanded as `ssh -G` expands them; a master killed while a command runs through it falls back
//! to a new connection; `ControlMaster auto` + `ControlPersist` starts a master the next call
//! uses (none without ControlPersist); a ControlPath that is not a master (silent, garbage)
//! falls back with a `-v` line within `--timeout`; a socket another user owns or could have put
//! there is never connected to (one warning, our own connection); a master that answers the
//! hello and then never opens the session is given up within ConnectTimeout and the command runs
//! again on our own connection.

use std::io::Write as _;
use std::os::unix::fs::FileTypeExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::common::sshd::{Hostile, Sshd, sshd_or_skip};
use crate::common::{require_tool, run_with_stdin};
use crate::support::{clankie, code, ids, ndjson, page, records, stderr};

const SESSION: &str = "3a3a3a3a-0000-4000-8000-00000000a15c";

/// A transcript of `turns` user/assistant pairs.
fn transcript(turns: usize) -> Vec<u8> {
    let mut out = String::new();
    for i in 0..turns {
        out += &serde_json::json!({"type":"user","uuid":format!("u{i}"),
            "timestamp":"2026-11-02T10:00:00.000Z",
            "message":{"role":"user","content":format!("prompt {i}")}})
        .to_string();
        out.push('\n');
        out += &serde_json::json!({"type":"assistant","uuid":format!("a{i}"),
            "timestamp":"2026-11-02T10:00:01.000Z",
            "message":{"content":[{"type":"text","text":format!("answer {i}")}]}})
        .to_string();
        out.push('\n');
    }
    out.into_bytes()
}

/// A user of these tests only, with a plain `sh` login shell and one Claude session.
fn plain_user(sshd: &Sshd, name: &str) {
    sshd.add_user(name, Path::new("/bin/sh"));
    sshd.put_file(
        name,
        format!(".claude/projects/-mux/{SESSION}.jsonl"),
        &transcript(30),
    );
}

/// An ssh_config with one `Host ALIAS` for `user` on the test sshd, plus `extra` lines. With
/// `identity: false` the only identity is a file that does not exist: a connection of our own
/// cannot authenticate, so whatever works went through a master.
fn config(
    sshd: &Sshd,
    dir: &Path,
    alias: &str,
    user: &str,
    identity: bool,
    extra: &str,
) -> PathBuf {
    let (identity_file, kind) = if identity {
        (sshd.identity().display().to_string(), "key")
    } else {
        (dir.join("no-such-key").display().to_string(), "keyless")
    };
    let text = format!(
        "Host {alias}\n    HostName 127.0.0.1\n    Port {port}\n    User {user}\n    \
         IdentityFile {identity_file}\n    IdentitiesOnly yes\n    IdentityAgent none\n    \
         UserKnownHostsFile {kh}\n    GlobalKnownHostsFile /dev/null\n    \
         StrictHostKeyChecking yes\n    BatchMode yes\n    LogLevel ERROR\n{extra}",
        port = sshd.port(),
        kh = sshd.known_hosts().display(),
    );
    let path = dir.join(format!("{alias}-{kind}.config"));
    std::fs::write(&path, text).unwrap();
    path
}

/// The ControlPath `ssh -G` resolves for `alias` (tokens expanded).
fn control_path(config: &Path, alias: &str) -> PathBuf {
    let out = Command::new("ssh")
        .arg("-G")
        .arg("-F")
        .arg(config)
        .arg(alias)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("controlpath "))
        .unwrap_or_else(|| panic!("no controlpath in ssh -G:\n{text}"));
    PathBuf::from(line)
}

/// `ssh -O CMD` against the master of `alias`.
fn ssh_control(config: &Path, alias: &str, command: &str) -> Output {
    Command::new("ssh")
        .arg("-F")
        .arg(config)
        .args(["-O", command])
        .arg(alias)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Stops the master of a config when the test ends, however it ends.
struct MasterGuard {
    config: PathBuf,
    alias: String,
}

impl Drop for MasterGuard {
    fn drop(&mut self) {
        let _ = ssh_control(&self.config, &self.alias, "exit");
    }
}

/// Starts `ssh -M -N -f` for `alias` (it returns once the master listens).
fn start_master(config: &Path, alias: &str) -> MasterGuard {
    let out = run_with_stdin(
        Command::new("ssh")
            .arg("-F")
            .arg(config)
            .args(["-M", "-N", "-f"])
            .arg(alias),
        b"",
        Duration::from_secs(30),
    );
    assert!(out.status.success(), "ssh -M: {}", stderr(&out));
    let check = ssh_control(config, alias, "check");
    assert!(check.status.success(), "ssh -O check: {}", stderr(&check));
    MasterGuard {
        config: config.to_path_buf(),
        alias: alias.to_string(),
    }
}

/// The master's pid, as `ssh -O check` says it (`Master running (pid=N)`).
fn master_pid(config: &Path, alias: &str) -> u32 {
    let check = ssh_control(config, alias, "check");
    let said = stderr(&check);
    said.split("pid=")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {said:?}"))
}

fn run(home: &Path, config: &Path, args: &[&str]) -> Output {
    run_with_stdin(
        clankie(home).arg("--ssh-config").arg(config).args(args),
        b"",
        Duration::from_secs(60),
    )
}

/// The `-v` lines of a run, without the `clankie-read: debug: ` prefix.
fn debug_lines(out: &Output) -> Vec<String> {
    stderr(out)
        .lines()
        .filter_map(|l| l.strip_prefix("clankie-read: debug: "))
        .map(String::from)
        .collect()
}

fn said(lines: &[String], what: &str) -> bool {
    lines.iter().any(|l| l.contains(what))
}

fn listed_sessions(out: &Output) -> Vec<String> {
    assert_eq!(code(out), 0, "{}", stderr(out));
    ndjson(out)
        .iter()
        .filter_map(|l| l["session"].as_str().map(String::from))
        .collect()
}

#[test]
fn a_master_runs_every_call_and_no_connection_of_ours_is_made() {
    let Some(sshd) = sshd_or_skip() else { return };
    if !require_tool("ssh") {
        return;
    }
    let user = "ck_mux_master";
    plain_user(sshd, user);
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let alias = "mux-master";
    // Every token OpenSSH documents for ControlPath that names the connection.
    let tokens = format!("    ControlPath {}/%C-%h-%p-%r\n", dir.path().display());
    let good = config(sshd, dir.path(), alias, user, true, &tokens);
    let keyless = config(sshd, dir.path(), alias, user, false, &tokens);
    let socket = control_path(&good, alias);
    let name = socket.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.ends_with(&format!("-127.0.0.1-{}-{user}", sshd.port())) && !name.contains('%'),
        "{name}"
    );
    let _master = start_master(&good, alias);
    assert!(
        std::fs::symlink_metadata(&socket)
            .unwrap()
            .file_type()
            .is_socket()
    );

    // Our own connection could not authenticate with this config: the master did everything.
    let ls = run(home.path(), &keyless, &["-v", "ls", alias, "--json"]);
    assert_eq!(
        listed_sessions(&ls),
        vec![SESSION.to_string()],
        "{}",
        stderr(&ls)
    );
    let lines = debug_lines(&ls);
    let all = lines.join("\n");
    assert!(
        said(
            &lines,
            &format!("{alias}: connection: master at {}", socket.display())
        ),
        "{all}"
    );
    assert!(
        said(&lines, "exec done through the master: exit status 0"),
        "{all}"
    );
    // The script rides in the command (no wait for the channel's window), and the session's
    // time is said.
    assert!(
        lines
            .iter()
            .any(|l| l.contains("open through the master at ")
                && l.contains(" ms; exec \"sh -s\" (script in the command, ")),
        "{all}"
    );
    assert!(!said(&lines, "authenticat"), "{all}");
    assert!(!said(&lines, "connecting to"), "{all}");

    let tail = run(
        home.path(),
        &keyless,
        &[
            "read",
            &format!("{alias}:{SESSION}"),
            "--tail",
            "--json",
            "--limit",
            "5",
        ],
    );
    assert_eq!(code(&tail), 0, "{}", stderr(&tail));
    let lines = ndjson(&tail);
    let got = ids(&records(&lines));
    assert_eq!(got.len(), 5, "{lines:?}");
    assert_eq!(got.last().map(String::as_str), Some("a29#0"), "{lines:?}");
    let _ = page(&lines);

    // `hosts --check` says which way the host goes.
    let check = run(
        home.path(),
        &keyless,
        &["hosts", "--check", "--json", alias],
    );
    assert_eq!(code(&check), 0, "{}", stderr(&check));
    let report = &ndjson(&check)[0];
    assert_eq!(
        report["connection"],
        format!("master at {}", socket.display()),
        "{report}"
    );
    assert_eq!(report["ok"], true, "{report}");
    let text = run(home.path(), &keyless, &["hosts", "--check", alias]);
    assert!(
        String::from_utf8_lossy(&text.stdout)
            .contains(&format!("connection: master at {}", socket.display())),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );

    // The master gone: a new connection, which here cannot authenticate: one clear line.
    let exit = ssh_control(&good, alias, "exit");
    assert!(exit.status.success(), "{}", stderr(&exit));
    let failed = run(home.path(), &keyless, &["ls", alias, "--json"]);
    assert_eq!(code(&failed), 3, "{}", stderr(&failed));
    let failure = stderr(&failed);
    let said_lines: Vec<&str> = failure.lines().collect();
    assert_eq!(said_lines.len(), 1, "{said_lines:?}");
    assert!(
        said_lines[0].contains("authentication failed"),
        "{said_lines:?}"
    );
    // With a key, the new connection works and `-v` says why it was taken.
    let fresh = run(home.path(), &good, &["-v", "ls", alias, "--json"]);
    assert_eq!(listed_sessions(&fresh), vec![SESSION.to_string()]);
    let lines = debug_lines(&fresh);
    assert!(
        said(
            &lines,
            &format!(
                "{alias}: connection: new connection (no master at ControlPath {}",
                socket.display()
            )
        ),
        "{}",
        lines.join("\n")
    );
    assert!(
        said(&lines, "authenticated with identity file"),
        "{}",
        lines.join("\n")
    );
}

/// Whether some process has `needle` in its command line (a stalled login shell is the only
/// one with its own path there).
fn running(needle: &str) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(needle))
    })
}

#[test]
fn a_master_killed_while_a_command_runs_falls_back_to_a_new_connection() {
    let Some(sshd) = sshd_or_skip() else { return };
    if !require_tool("ssh") {
        return;
    }
    let user = "ck_mux_killed";
    let alias = sshd.add_hostile_user(user, Hostile::StallOnFlag);
    sshd.put_file(
        user,
        format!(".claude/projects/-mux/{SESSION}.jsonl"),
        &transcript(3),
    );
    let stall = sshd.put_file(user, "stall", b"");
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let extra = format!("    ControlPath {}/%C\n", dir.path().display());
    let good = config(sshd, dir.path(), &alias, user, true, &extra);
    let _master = start_master(&good, &alias);
    let pid = master_pid(&good, &alias);

    let child = clankie(home.path())
        .arg("--ssh-config")
        .arg(&good)
        .args(["-v", "ls", &alias, "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The command is running through the master once the user's login shell is stalled.
    let shell = format!("/home/{user}/.ck-login-shell");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !running(&shell) {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::remove_file(&stall).unwrap();
    let killed = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(listed_sessions(&out), vec![SESSION.to_string()]);
    let lines = debug_lines(&out);
    let all = lines.join("\n");
    assert!(
        said(&lines, &format!("{alias}: connection: master at ")),
        "{all}"
    );
    assert!(
        said(
            &lines,
            "failed (it ended the session without an exit status and no longer answers); new connection from now on"
        ),
        "{all}"
    );
    assert!(said(&lines, "authenticated with identity file"), "{all}");
}

#[test]
fn control_master_auto_with_persist_starts_a_master_the_next_call_uses() {
    let Some(sshd) = sshd_or_skip() else { return };
    if !require_tool("ssh") {
        return;
    }
    let user = "ck_mux_auto";
    plain_user(sshd, user);
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();

    // Without ControlPersist, `auto` starts nothing (a master would die with its only client).
    let alias = "mux-auto-once";
    let extra = format!(
        "    ControlPath {}/once-%C\n    ControlMaster auto\n",
        dir.path().display()
    );
    let once = config(sshd, dir.path(), alias, user, true, &extra);
    let out = run(home.path(), &once, &["-v", "ls", alias, "--json"]);
    assert_eq!(listed_sessions(&out), vec![SESSION.to_string()]);
    let lines = debug_lines(&out);
    assert!(
        said(
            &lines,
            "connection: new connection (no master at ControlPath"
        ),
        "{}",
        lines.join("\n")
    );
    assert!(!said(&lines, "starting one"), "{}", lines.join("\n"));
    assert!(!control_path(&once, alias).exists());

    let alias = "mux-auto";
    let extra = format!(
        "    ControlPath {}/%C\n    ControlMaster auto\n    ControlPersist 60\n",
        dir.path().display()
    );
    let auto = config(sshd, dir.path(), alias, user, true, &extra);
    let _master = MasterGuard {
        config: auto.clone(),
        alias: alias.to_string(),
    };
    let socket = control_path(&auto, alias);
    let first = run(home.path(), &auto, &["-v", "ls", alias, "--json"]);
    assert_eq!(listed_sessions(&first), vec![SESSION.to_string()]);
    let lines = debug_lines(&first);
    let all = lines.join("\n");
    assert!(
        said(
            &lines,
            "no master listening; starting one (ControlMaster auto, ControlPersist 60): ssh -F "
        ),
        "{all}"
    );
    assert!(
        said(
            &lines,
            &format!("connection: master at {} (started it)", socket.display())
        ),
        "{all}"
    );
    assert!(!said(&lines, "authenticat"), "{all}");
    let check = ssh_control(&auto, alias, "check");
    assert!(check.status.success(), "{}", stderr(&check));

    let second = run(home.path(), &auto, &["-v", "ls", alias, "--json"]);
    assert_eq!(listed_sessions(&second), vec![SESSION.to_string()]);
    let lines = debug_lines(&second);
    let all = lines.join("\n");
    assert!(
        said(
            &lines,
            &format!(
                "connection: master at {} (ControlPath); no new connection",
                socket.display()
            )
        ),
        "{all}"
    );
    assert!(!said(&lines, "starting one"), "{all}");
    let exit = ssh_control(&auto, alias, "exit");
    assert!(exit.status.success(), "{}", stderr(&exit));
}

/// A ControlPath where something listens that is not a master: it says nothing, or garbage.
#[test]
fn a_control_path_that_is_not_a_master_falls_back_within_the_timeout() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_mux_hostile";
    plain_user(sshd, user);
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    for (name, reply) in [
        ("silent", &b""[..]),
        ("garbage", &b"\0\0\0\x08garbage!\xff\xff"[..]),
    ] {
        let socket = dir.path().join(name);
        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let reply = reply.to_vec();
        // Accepts one connection at a time, answers `reply` and keeps it open until the next.
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for conn in listener.incoming().flatten() {
                let mut conn = conn;
                let _ = conn.write_all(&reply);
                held.push(conn);
            }
        });
        let alias = format!("mux-{name}");
        // `auto` with ControlPersist: still no master is started over a socket that is not one.
        let extra = format!(
            "    ControlPath {}\n    ControlMaster auto\n    ControlPersist 60\n",
            socket.display()
        );
        let cfg = config(sshd, dir.path(), &alias, user, true, &extra);
        let out = run(
            home.path(),
            &cfg,
            &["--timeout", "1", "-v", "ls", &alias, "--json"],
        );
        assert_eq!(listed_sessions(&out), vec![SESSION.to_string()]);
        let lines = debug_lines(&out);
        let all = lines.join("\n");
        let expected = if name == "silent" {
            "not a master: no hello within 1 s"
        } else {
            "not a master: its first message is not a hello"
        };
        assert!(
            said(
                &lines,
                &format!(
                    "{alias}: connection: new connection (no master at ControlPath {}: {expected})",
                    socket.display()
                )
            ),
            "{all}"
        );
        assert!(!said(&lines, "starting one"), "{all}");
        assert!(said(&lines, "authenticated with identity file"), "{all}");
        // The socket is left as it was.
        assert!(
            std::fs::symlink_metadata(&socket)
                .unwrap()
                .file_type()
                .is_socket()
        );
    }
}

/// A scripted master at a socket: it answers the mux hello (protocol 4) on every connection and
/// then answers nothing; it counts the connections and the session requests it is sent.
struct FakeMaster {
    connections: Arc<AtomicUsize>,
    session_requests: Arc<AtomicUsize>,
}

fn read_mux_packet(conn: &mut std::os::unix::net::UnixStream) -> Option<Vec<u8>> {
    use std::io::Read as _;
    let mut len = [0u8; 4];
    conn.read_exact(&mut len).ok()?;
    let mut body = vec![0u8; u32::from_be_bytes(len).min(1 << 20) as usize];
    conn.read_exact(&mut body).ok()?;
    Some(body)
}

fn fake_master(socket: &Path) -> FakeMaster {
    let listener = std::os::unix::net::UnixListener::bind(socket).unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let session_requests = Arc::new(AtomicUsize::new(0));
    let (seen, asked) = (connections.clone(), session_requests.clone());
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            let asked = asked.clone();
            std::thread::spawn(move || {
                use std::io::Read as _;
                let mut conn = conn;
                if read_mux_packet(&mut conn).is_none() {
                    return;
                }
                let hello = [0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 4];
                if conn.write_all(&hello).is_err() {
                    return;
                }
                // MUX_C_NEW_SESSION: counted, never answered.
                if read_mux_packet(&mut conn).is_some_and(|p| p.starts_with(&[0x10, 0, 0, 2])) {
                    asked.fetch_add(1, Ordering::SeqCst);
                }
                let mut sink = [0u8; 4096];
                while conn.read(&mut sink).is_ok_and(|n| n > 0) {}
            });
        }
    });
    FakeMaster {
        connections,
        session_requests,
    }
}

/// The uid of `nobody`, another user than the one the tests run as.
fn nobody() -> u32 {
    nix::unistd::User::from_name("nobody")
        .unwrap()
        .expect("no user nobody")
        .uid
        .as_raw()
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A master socket that another user owns, or that anyone could have put there (a 0777 socket
/// in a 0777 directory), is never connected to: one warning names why, the host is read over
/// our own connection, and `hosts --check` says so.
#[test]
fn a_master_socket_another_user_could_have_put_there_is_not_used() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_mux_forged";
    plain_user(sshd, user);
    let home = tempfile::tempdir().unwrap();
    let other_uid = nobody();
    let me = nix::unistd::getuid().as_raw();
    for case in ["another-owner", "world-writable"] {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("cm");
        let fake = fake_master(&socket);
        let expected = if case == "another-owner" {
            set_mode(&socket, 0o600);
            std::os::unix::fs::lchown(&socket, Some(other_uid), None).unwrap();
            format!("a socket owned by another user (uid {other_uid}, not {me})")
        } else {
            set_mode(dir.path(), 0o777);
            set_mode(&socket, 0o777);
            "a group- or world-writable socket (mode 777)".to_string()
        };
        let alias = format!("mux-{case}");
        let extra = format!("    ControlPath {}\n", socket.display());
        let cfg = config(sshd, dir.path(), &alias, user, true, &extra);

        let out = run(home.path(), &cfg, &["ls", &alias, "--json"]);
        assert_eq!(listed_sessions(&out), vec![SESSION.to_string()]);
        let warned = stderr(&out);
        assert_eq!(
            warned.lines().collect::<Vec<_>>(),
            vec![format!(
                "clankie-read: warning: {alias}: ControlPath {}: {expected}, so it is not used; \
                 a new connection instead",
                socket.display()
            )],
            "{case}"
        );

        let verbose = run(home.path(), &cfg, &["-v", "ls", &alias, "--json"]);
        assert_eq!(listed_sessions(&verbose), vec![SESSION.to_string()]);
        let lines = debug_lines(&verbose);
        let all = lines.join("\n");
        assert!(
            said(
                &lines,
                &format!(
                    "{alias}: connection: new connection (ControlPath {} refused: {expected})",
                    socket.display()
                )
            ),
            "{all}"
        );
        assert!(said(&lines, "authenticated with identity file"), "{all}");

        let check = run(home.path(), &cfg, &["hosts", "--check", "--json", &alias]);
        assert_eq!(code(&check), 0, "{}", stderr(&check));
        let report = &ndjson(&check)[0];
        assert_eq!(report["connection"], "new connection", "{report}");
        assert_eq!(report["ok"], true, "{report}");

        // Never connected to, so never asked for a session.
        assert_eq!(fake.connections.load(Ordering::SeqCst), 0, "{case}");
        assert_eq!(fake.session_requests.load(Ordering::SeqCst), 0, "{case}");
    }
}

/// A master that answers the hello and then never opens the session: given up within
/// ConnectTimeout (not the 30 s reply bound), the command runs once more on our own connection,
/// and `-v` says so.
#[test]
fn a_master_that_stalls_after_the_hello_falls_back_within_the_connect_bound() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_mux_stall";
    plain_user(sshd, user);
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("cm");
    let fake = fake_master(&socket);
    set_mode(&socket, 0o600);
    let alias = "mux-stall";
    let extra = format!(
        "    ControlPath {}\n    ConnectTimeout 2\n",
        socket.display()
    );
    let cfg = config(sshd, dir.path(), alias, user, true, &extra);

    let start = Instant::now();
    let out = run(home.path(), &cfg, &["-v", "ls", alias, "--json"]);
    let took = start.elapsed();
    assert_eq!(listed_sessions(&out), vec![SESSION.to_string()]);
    let lines = debug_lines(&out);
    let all = lines.join("\n");
    assert!(
        said(
            &lines,
            &format!(
                "{alias}: connection: master at {} (ControlPath)",
                socket.display()
            )
        ),
        "{all}"
    );
    assert!(
        said(
            &lines,
            &format!(
                "{alias}: the master at {} failed (the session was not open within 2 s (the \
                 connect bound)); new connection from now on, this command again on it",
                socket.display()
            )
        ),
        "{all}"
    );
    assert!(said(&lines, "authenticated with identity file"), "{all}");
    // The master was asked once, then given up for the rest of the invocation.
    assert_eq!(fake.session_requests.load(Ordering::SeqCst), 1, "{all}");
    assert!(took < Duration::from_secs(15), "{took:?}");

    let check = run(home.path(), &cfg, &["hosts", "--check", "--json", alias]);
    assert_eq!(code(&check), 0, "{}", stderr(&check));
    let report = &ndjson(&check)[0];
    assert_eq!(report["connection"], "new connection", "{report}");
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(fake.session_requests.load(Ordering::SeqCst), 2);
}

/// Kills a master by its pid when the test ends (its socket was renamed: `ssh -O exit` cannot
/// find it).
struct KillGuard(u32);

impl Drop for KillGuard {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.0.to_string()).status();
    }
}

#[test]
fn a_guessed_control_path_ssh_g_does_not_name_is_dropped() {
    let Some(sshd) = sshd_or_skip() else { return };
    if !require_tool("ssh") {
        return;
    }
    // The built-in parser leaves `${CK_MUX}` as it is written, `ssh -G` expands it: the guess
    // names a live master (another user's), `ssh -G` a path where nothing listens.
    const OTHER: &str = "3a3a3a3a-0000-4000-8000-00000000b0b0";
    let (guessed, asked) = ("ck_mux_guess_a", "ck_mux_guess_b");
    plain_user(sshd, guessed);
    sshd.add_user(asked, Path::new("/bin/sh"));
    sshd.put_file(
        asked,
        format!(".claude/projects/-mux/{OTHER}.jsonl"),
        &transcript(3),
    );
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let first = dir.path().join("cm");
    let extra = format!("    ControlPath {}\n", first.display());
    let master_config = config(sshd, dir.path(), "mux-guess-a", guessed, true, &extra);
    let _master = start_master(&master_config, "mux-guess-a");
    let _kill = KillGuard(master_pid(&master_config, "mux-guess-a"));
    let literal = dir.path().join("${CK_MUX}");
    std::fs::rename(&first, &literal).unwrap();
    let extra = format!("    ControlPath {}/${{CK_MUX}}\n", dir.path().display());
    let asked_config = config(sshd, dir.path(), "mux-guess-b", asked, true, &extra);

    let out = run_with_stdin(
        clankie(home.path())
            .env("CK_MUX", "nothing-here")
            .arg("--ssh-config")
            .arg(&asked_config)
            .args(["-v", "ls", "mux-guess-b", "--json"]),
        b"",
        Duration::from_secs(60),
    );
    let lines = debug_lines(&out);
    let all = lines.join("\n");
    assert_eq!(listed_sessions(&out), vec![OTHER.to_string()], "{all}");
    assert!(
        said(
            &lines,
            &format!("connection: master at {}", literal.display())
        ),
        "{all}"
    );
    assert!(
        said(&lines, "the answer through the guess is dropped"),
        "{all}"
    );
    assert!(said(&lines, "exec on our own connection"), "{all}");
}
