//! The SSH configuration and the story of a connection, through the real binary against the
//! test sshd: `-v` on a good and a failing connection, a failing ProxyCommand's own stderr, the
//! built-in parser when no `ssh` is on PATH (one warning, `Match` evaluated or refused), the config
//! under `$HOME` with `~` and `%d` the passwd home when they differ, and the passphrase prompt under a pty.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::sshd::{Sshd, sshd_or_skip};
use crate::common::{find_tool, require_tool};
use crate::support::{BIN, clankie, code, ndjson, stderr};

/// A login target of the fixture that every test here may read (read-only use).
const USER: &str = "ck_dash";

/// A directory the test's PATH may be: everything but `ssh`.
fn path_without_ssh() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    // The binary needs no tool for an SSH host when there is no ssh; `sh` is for ProxyCommand.
    for tool in ["sh"] {
        if let Some(found) = find_tool(tool) {
            std::os::unix::fs::symlink(found, dir.path().join(tool)).unwrap();
        }
    }
    dir
}

/// An ssh_config for the fixture's sshd with `body` after a `Host NAME` line that sets what
/// every connection needs (host key file, identity, no agent).
fn config_with(sshd: &Sshd, dir: &Path, name: &str, body: &str) -> PathBuf {
    let text = format!(
        "Host {name}\n    HostName 127.0.0.1\n    UserKnownHostsFile {kh}\n    \
         GlobalKnownHostsFile /dev/null\n    StrictHostKeyChecking yes\n    IdentityAgent none\n    \
         IdentitiesOnly yes\n    BatchMode yes\n{body}",
        kh = sshd.known_hosts().display(),
    );
    let path = dir.join(format!("{name}.config"));
    std::fs::write(&path, text).unwrap();
    path
}

fn run(home: &Path, path_env: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = clankie(home);
    if let Some(p) = path_env {
        cmd.env("PATH", p);
    }
    cmd.args(args).output().expect("run clankie-read")
}

/// The `debug:` lines of a run, without the `clankie-read: debug: ` prefix.
fn debug_lines(out: &Output) -> Vec<String> {
    stderr(out)
        .lines()
        .filter_map(|l| l.strip_prefix("clankie-read: debug: "))
        .map(String::from)
        .collect()
}

fn has_line(lines: &[String], wanted: &str) -> bool {
    lines.iter().any(|l| l == wanted)
}

fn has_prefix(lines: &[String], wanted: &str) -> bool {
    lines.iter().any(|l| l.starts_with(wanted))
}

#[test]
fn verbose_tells_the_story_of_a_good_connection() {
    let Some(sshd) = sshd_or_skip() else { return };
    let home = tempfile::tempdir().unwrap();
    let alias = sshd.alias(USER);
    let config = sshd.ssh_config().to_str().unwrap();
    let out = run(
        home.path(),
        None,
        &["--ssh-config", config, "-v", "ls", &alias, "--json"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines = debug_lines(&out);
    let port = sshd.port();
    let said = |what: &str| format!("{what}\nall of it:\n{}", lines.join("\n"));
    let exact = [
        format!("{alias}: configuration: ssh -G -F {config}"),
        format!("{alias}: resolved: host 127.0.0.1 port {port} user {USER}"),
        format!("{alias}: proxy: none (direct TCP)"),
        format!("{alias}: connecting to 127.0.0.1:{port}"),
        format!("{alias}: connected to 127.0.0.1:{port}"),
        format!("{alias}: authenticating as {USER} (public key)"),
        format!("{alias}: no ssh-agent: SSH_AUTH_SOCK not set"),
        format!(
            "{alias}: authenticated with identity file {}",
            sshd.identity().display()
        ),
    ];
    for line in &exact {
        // A phase's line may go on with its time (`connected to … (TCP) after 1.2 ms`).
        assert!(
            has_line(&lines, line) || has_prefix(&lines, &format!("{line} ")),
            "{}",
            said(line)
        );
    }
    let prefixes = [
        format!("{alias}: server host key: ssh-ed25519 SHA256:"),
        format!(
            "{alias}: host key verified: [127.0.0.1]:{port} is known at {}:",
            sshd.known_hosts().display()
        ),
        format!(
            "{alias}: identity file {} (ssh-ed25519 SHA256:",
            sshd.identity().display()
        ),
        format!("{alias}: channel "),
        format!("{alias}: exec done: exit status 0; "),
        format!("{alias}: version and key exchange done after "),
    ];
    for prefix in &prefixes {
        assert!(has_prefix(&lines, prefix), "{}", said(prefix));
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("{alias}: channel ")) && l.contains("exec \"sh -s\"")),
        "{}",
        said("the exec")
    );
    // Each phase says its time and the bytes it moved.
    let exec_done = lines.iter().find(|l| l.starts_with(&prefixes[4])).unwrap();
    assert!(
        exec_done.contains("first byte after ") && exec_done.contains(" bytes on the wire"),
        "{exec_done}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with(&exact[7])
            && l.contains(" after ")
            && l.ends_with(" bytes on the wire")),
        "{}",
        said("authentication's time and bytes")
    );
    // The steps come in the order they happen.
    let at = |prefix: &str| lines.iter().position(|l| l.starts_with(prefix)).unwrap();
    assert!(at(&exact[0]) < at(&exact[3]));
    assert!(at(&exact[3]) < at(&prefixes[0]));
    assert!(at(&prefixes[1]) < at(&exact[5]));
    assert!(at(&exact[7]) < at(&prefixes[3]));
    // Without -v, none of it.
    let quiet = run(home.path(), None, &["--ssh-config", config, "ls", &alias]);
    assert_eq!(code(&quiet), 0, "{}", stderr(&quiet));
    assert!(debug_lines(&quiet).is_empty(), "{}", stderr(&quiet));
}

#[test]
fn verbose_tells_which_key_was_refused_on_a_failing_connection() {
    let Some(sshd) = sshd_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("id_stranger");
    keygen(&key, "");
    let config = config_with(
        sshd,
        dir.path(),
        "strangerbox",
        &format!(
            "    Port {}\n    User {USER}\n    IdentityFile {}\n    IdentityFile {}/id_missing\n",
            sshd.port(),
            key.display(),
            dir.path().display()
        ),
    );
    let out = run(
        dir.path(),
        None,
        &[
            "--ssh-config",
            config.to_str().unwrap(),
            "-v",
            "ls",
            "strangerbox",
        ],
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let lines = debug_lines(&out);
    let all = lines.join("\n");
    assert!(
        has_line(
            &lines,
            &format!(
                "strangerbox: identity file {}/id_missing: not there, skipped",
                dir.path().display()
            )
        ),
        "{all}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with(&format!(
            "strangerbox: identity file {} (ssh-ed25519 SHA256:",
            key.display()
        )) && l.ends_with("): refused")),
        "{all}"
    );
    assert!(
        has_prefix(&lines, "strangerbox: host key verified: "),
        "{all}"
    );
    // The error itself is the last line, after the story.
    let last = stderr(&out).lines().last().unwrap().to_string();
    assert!(
        last.starts_with("clankie-read: ") && last.contains("authentication failed"),
        "{last}"
    );
}

#[test]
fn a_failing_proxy_command_says_why() {
    let Some(sshd) = sshd_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = config_with(
        sshd,
        dir.path(),
        "proxied",
        &format!(
            "    Port {}\n    User {USER}\n    IdentityFile {}\n    \
             ProxyCommand sh -c 'echo \"proxy-broke: no route to %h\" >&2; exit 7'\n",
            sshd.port(),
            sshd.identity().display()
        ),
    );
    let args = ["--ssh-config", config.to_str().unwrap(), "ls", "proxied"];
    let out = run(dir.path(), None, &args);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("exited with status 7: proxy-broke: no route to 127.0.0.1"),
        "{err}"
    );
    let verbose = run(dir.path(), None, &[&["-v"][..], &args[..]].concat());
    let lines = debug_lines(&verbose);
    assert!(
        has_line(
            &lines,
            "proxied: ProxyCommand stderr: proxy-broke: no route to 127.0.0.1"
        ),
        "{}",
        stderr(&verbose)
    );
    assert!(has_prefix(&lines, "proxied: proxy: ProxyCommand sh -c "));
    // A ProxyCommand that works carries the connection (OpenSSH's own `ssh -W` here).
    if !require_tool("ssh") {
        return;
    }
    let config = config_with(
        sshd,
        dir.path(),
        "viassh",
        &format!(
            "    Port {}\n    User {USER}\n    IdentityFile {}\n    \
             ProxyCommand ssh -F {} -W %h:%p {}\n",
            sshd.port(),
            sshd.identity().display(),
            sshd.ssh_config().display(),
            sshd.alias(USER)
        ),
    );
    let out = run(
        dir.path(),
        None,
        &[
            "--ssh-config",
            config.to_str().unwrap(),
            "ls",
            "viassh",
            "--json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn without_ssh_on_path_one_warning_and_match_is_evaluated() {
    let Some(sshd) = sshd_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let no_ssh = path_without_ssh();
    // Without Match evaluated, this connects to port 22 as the wrong user.
    let config = config_with(
        sshd,
        dir.path(),
        "matchbox",
        &format!(
            "Host other\n    User nobody\nMatch originalhost matchbox\n    Port {}\n    User {USER}\n    \
             IdentityFile {}\nMatch host 127.0.0.1 !user root\n    ConnectTimeout 9\n",
            sshd.port(),
            sshd.identity().display()
        ),
    );
    let config = config.to_str().unwrap();
    let fixture = sshd.ssh_config().to_str().unwrap();
    for ssh_config in [config, fixture] {
        let hosts = if ssh_config == config {
            vec!["matchbox", "matchbox"]
        } else {
            vec!["ck-dash", "ck-bash"]
        };
        let mut args = vec!["--ssh-config", ssh_config, "ls", "--json"];
        args.extend(&hosts);
        let out = run(dir.path(), Some(no_ssh.path()), &args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let err = stderr(&out);
        let warnings: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("clankie-read: warning: "))
            .filter(|l| l.contains("no OpenSSH client (`ssh`) on PATH"))
            .collect();
        assert_eq!(warnings.len(), 1, "{}", stderr(&out));
        assert!(warnings[0].contains("built-in parser"), "{}", warnings[0]);
        ndjson(&out);
    }
    let out = run(
        dir.path(),
        Some(no_ssh.path()),
        &["--ssh-config", config, "-v", "ls", "matchbox"],
    );
    let lines = debug_lines(&out);
    assert!(
        has_line(
            &lines,
            &format!(
                "matchbox: configuration: built-in parser over {config} (no OpenSSH client (`ssh`) on PATH)"
            )
        ),
        "{}",
        stderr(&out)
    );
    assert!(
        has_line(
            &lines,
            &format!(
                "matchbox: resolved: host 127.0.0.1 port {} user {USER}",
                sshd.port()
            )
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn match_exec_is_refused_without_ssh_and_evaluated_with_it() {
    let Some(sshd) = sshd_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let no_ssh = path_without_ssh();
    let config = config_with(
        sshd,
        dir.path(),
        "execbox",
        &format!(
            "    User {USER}\n    IdentityFile {}\nMatch exec \"true\"\n    Port {}\n",
            sshd.identity().display(),
            sshd.port()
        ),
    );
    let args = ["--ssh-config", config.to_str().unwrap(), "ls", "execbox"];
    let out = run(dir.path(), Some(no_ssh.path()), &args);
    // A config error is exit 3, like any host that cannot be reached (SPEC).
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("execbox: ssh config: `Match exec` needs OpenSSH to evaluate"),
        "{err}"
    );
    assert!(!err.contains("cannot connect"), "never tried: {err}");
    if require_tool("ssh") {
        let out = run(dir.path(), None, &args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
}

/// `env -i HOME=elsewhere` (cron): the config file is `$HOME/.ssh/config`, as SPEC sets the
/// default `--ssh-config` (handed to `ssh -G` as `-F`, since `ssh` itself would read the passwd
/// home's), while `~` and `%d` inside it are the passwd home, as OpenSSH takes them — with
/// `ssh -G` and without it.
#[test]
fn config_under_home_with_tilde_the_passwd_home() {
    let Some(sshd) = sshd_or_skip() else { return };
    let runner = "ck_sshcfg_home";
    sshd.add_user(runner, Path::new("/bin/sh"));
    let passwd_home = sshd.home(runner);
    let config = format!(
        "Host homebox\n    HostName 127.0.0.1\n    Port {}\n    User {USER}\n    \
         IdentityFile ~/.ssh/id_homebox\n    IdentitiesOnly yes\n    IdentityAgent none\n    \
         UserKnownHostsFile %d/.ssh/known_hosts_homebox\n    GlobalKnownHostsFile /dev/null\n    \
         StrictHostKeyChecking yes\n",
        sshd.port()
    );
    // A decoy where `ssh` alone would look; SPEC's default is under $HOME.
    sshd.put_file(
        runner,
        ".ssh/config",
        b"Host homebox\n    Port 1\n    User decoy\n",
    );
    sshd.put_file(
        runner,
        ".ssh/id_homebox",
        &std::fs::read(sshd.identity()).unwrap(),
    );
    sshd.put_file(
        runner,
        ".ssh/known_hosts_homebox",
        &std::fs::read(sshd.known_hosts()).unwrap(),
    );
    let other = tempfile::tempdir().unwrap();
    std::fs::set_permissions(other.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(other.path().join(".ssh")).unwrap();
    std::fs::write(other.path().join(".ssh/config"), &config).unwrap();
    std::fs::set_permissions(
        other.path().join(".ssh/config"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let (uid, gid) = ids_of(runner);
    let no_ssh = path_without_ssh();
    std::fs::set_permissions(no_ssh.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let with_ssh = std::env::var_os("PATH").unwrap_or_default();
    for path in [with_ssh.as_os_str(), no_ssh.path().as_os_str()] {
        let out = Command::new(BIN)
            .env_clear()
            .env("PATH", path)
            .env("HOME", other.path())
            .args(["-v", "ls", "homebox", "--json"])
            .uid(uid)
            .gid(gid)
            .current_dir("/")
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "PATH={path:?}: {}", stderr(&out));
        let lines = debug_lines(&out);
        let all = stderr(&out);
        assert!(
            has_line(
                &lines,
                &format!(
                    "homebox: resolved: host 127.0.0.1 port {} user {USER}",
                    sshd.port()
                )
            ),
            "{all}"
        );
        assert!(
            has_prefix(
                &lines,
                &format!(
                    "homebox: identity file {}/.ssh/id_homebox (ssh-ed25519",
                    passwd_home.display()
                )
            ),
            "{all}"
        );
        assert!(
            has_prefix(
                &lines,
                &format!(
                    "homebox: host key verified: [127.0.0.1]:{} is known at {}/.ssh/known_hosts_homebox:",
                    sshd.port(),
                    passwd_home.display()
                )
            ),
            "{all}"
        );
    }
}

#[test]
fn an_encrypted_key_asks_for_its_passphrase_on_a_terminal_only() {
    let Some(sshd) = sshd_or_skip() else { return };
    if !require_tool("script") {
        return;
    }
    let user = "ck_sshcfg_pass";
    sshd.add_user(user, Path::new("/bin/sh"));
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("id_locked");
    keygen(&key, "open sesame");
    // The fixture authorizes its own key; this one too, for this user only.
    let authorized = sshd.dir().join("authorized_keys").join(user);
    let mut keys = std::fs::read_to_string(&authorized).unwrap();
    keys.push_str(&std::fs::read_to_string(key.with_extension("pub")).unwrap());
    std::fs::write(&authorized, keys).unwrap();
    let config = config_with(
        sshd,
        dir.path(),
        "lockedbox",
        &format!(
            "    Port {}\n    User {user}\n    IdentityFile {}\n",
            sshd.port(),
            key.display()
        ),
    );
    let command = format!(
        "env -i PATH={path} HOME={home} {BIN} --ssh-config {config} ls lockedbox --json",
        path = std::env::var("PATH").unwrap(),
        home = dir.path().display(),
        config = config.display(),
    );

    // No terminal (cron): the clear message, nothing asked.
    let out = Command::new("sh")
        .args(["-c", &command])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot ask for a passphrase here"),
        "{}",
        stderr(&out)
    );

    // A terminal: asked, given a wrong one, asked again, given the right one.
    let (status, screen) = in_pty(
        &command,
        &[
            ("Enter passphrase for key", "wrong one\n"),
            ("Bad passphrase, try again for", "open sesame\n"),
        ],
    );
    assert!(status.success(), "{screen}");
    assert!(
        screen.contains(&format!("Enter passphrase for key '{}': ", key.display())),
        "{screen}"
    );
    assert!(!screen.contains("authentication failed"), "{screen}");
    // The listing came out (no sessions there: nothing, or only JSON lines).
    for line in screen
        .lines()
        .skip_while(|l| !l.contains("try again"))
        .skip(1)
    {
        let line = line.trim();
        assert!(
            line.is_empty() || line.starts_with('{'),
            "{line:?} in {screen}"
        );
    }

    // A terminal, and an empty answer: the key is skipped, with the error that says so.
    let (status, screen) = in_pty(&command, &[("Enter passphrase for key", "\n")]);
    assert_eq!(status.code(), Some(3), "{screen}");
    assert!(
        screen.contains("no passphrase that unlocks it was given"),
        "{screen}"
    );
}

/// Runs `command` under a pty (util-linux `script`), answering each prompt (waited for on the
/// screen) with its text. Returns the exit status and everything the screen showed.
fn in_pty(command: &str, answers: &[(&str, &str)]) -> (std::process::ExitStatus, String) {
    let mut child = Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut screen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = 0;
    for (prompt, answer) in answers {
        loop {
            let text = String::from_utf8_lossy(&screen[seen..]).into_owned();
            if let Some(at) = text.find(prompt) {
                seen += at + prompt.len();
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(bytes) => screen.extend(bytes),
                Err(_) => {
                    let _ = child.kill();
                    panic!(
                        "no {prompt:?} on the screen: {}",
                        String::from_utf8_lossy(&screen)
                    );
                }
            }
        }
        stdin.write_all(answer.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
    // Keep stdin open until the end: `script` ends the session when its input closes.
    while let Ok(bytes) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        screen.extend(bytes);
    }
    drop(stdin);
    let status = child.wait().unwrap();
    (status, String::from_utf8_lossy(&screen).into_owned())
}

fn keygen(path: &Path, passphrase: &str) {
    let status = Command::new("ssh-keygen")
        .args([
            "-q", "-t", "ed25519", "-a", "1", "-N", passphrase, "-C", "", "-f",
        ])
        .arg(path)
        .stdin(Stdio::null())
        .status()
        .expect("ssh-keygen");
    assert!(status.success());
}

/// A user's uid and gid, from `id`.
fn ids_of(user: &str) -> (u32, u32) {
    let id = |flag: &str| -> u32 {
        let out = Command::new("id").args([flag, user]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    };
    (id("-u"), id("-g"))
}
