//! The test sshd fixture itself: every user's login shell runs `sh -s`, the rc files print
//! (or do not print) what `TEST_USERS` says, ck_busybox's PATH holds busybox applets only, and
//! the helpers for files, extra users and dropped connections do what they say.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::sshd::{BUSYBOX_BIN, TEST_USERS, sshd_or_skip};
use crate::common::{run_with_stdin, skip_or_panic};

const TIMEOUT: Duration = Duration::from_secs(30);

/// The first line is there to be stolen by ck_noisy's `read`; the MARK line starts with a
/// newline because ck_noisy's last banner does not end with one.
const MARK_SCRIPT: &str = "echo FIRST-LINE\nprintf '\\nMARK:%s\\n' \"$(uname -s)\"\n";

fn lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn show(output: &Output) -> String {
    format!(
        "status: {}\n--- stdout\n{}--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn sh_s_as(user: &str) {
    let Some(sshd) = sshd_or_skip() else { return };
    if !sshd.users().contains(&user) {
        skip_or_panic(&format!("{user}'s login shell is not installed"));
        return;
    }
    let spec = TEST_USERS
        .iter()
        .find(|u| u.name == user)
        .expect("a built-in user");
    let output = run_with_stdin(
        sshd.ssh(user).args(["sh", "-s"]),
        MARK_SCRIPT.as_bytes(),
        TIMEOUT,
    );
    let context = format!("{user}\n{}\n--- sshd log\n{}", show(&output), sshd.log());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{context}");
    assert!(
        lines(&output.stdout).iter().any(|l| l == "MARK:Linux"),
        "{context}"
    );

    // The banners prove the rc files ran: the tool will face exactly this noise.
    for banner in spec.stdout_noise {
        assert!(
            stdout.contains(banner),
            "missing stdout banner {banner:?}: {context}"
        );
    }
    for banner in spec.stderr_noise {
        assert!(
            stderr.contains(banner),
            "missing stderr banner {banner:?}: {context}"
        );
    }
    for banner in spec.never_printed {
        assert!(
            !stdout.contains(banner) && !stderr.contains(banner),
            "{banner:?} comes from a file this shell should not read: {context}"
        );
    }

    let ran_first_line = stdout.contains("FIRST-LINE\n");
    if user == "ck_noisy" {
        // Its .bashrc steals the first line of stdin when it arrives within 0.1 s (nearly
        // always); either way the line is consumed exactly once.
        let stolen = stderr.contains("NOISY-READ:echo FIRST-LINE");
        assert!(stolen != ran_first_line, "stolen={stolen}: {context}");
    } else {
        assert!(ran_first_line, "{context}");
    }
    if user == "ck_clean" {
        assert_eq!(stdout, "FIRST-LINE\n\nMARK:Linux\n", "{context}");
        assert_eq!(stderr, "", "{context}");
    }
}

macro_rules! sh_s_tests {
    ($($test:ident => $user:literal,)*) => {$(
        #[test]
        fn $test() {
            sh_s_as($user);
        }
    )*};
}

sh_s_tests! {
    sh_s_runs_under_bash => "ck_bash",
    sh_s_runs_under_dash => "ck_dash",
    sh_s_runs_under_zsh => "ck_zsh",
    sh_s_runs_under_fish => "ck_fish",
    sh_s_runs_under_tcsh => "ck_tcsh",
    sh_s_runs_under_mksh => "ck_mksh",
    sh_s_runs_under_yash => "ck_yash",
    sh_s_runs_under_busybox => "ck_busybox",
    sh_s_runs_despite_noisy_bashrc => "ck_noisy",
    sh_s_output_is_exact_for_clean_user => "ck_clean",
}

#[test]
fn every_built_in_user_has_a_test() {
    let Some(sshd) = sshd_or_skip() else { return };
    let source = include_str!("sshd_fixture.rs");
    for user in sshd.users() {
        assert!(
            source.contains(&format!("=> \"{user}\",")),
            "no sh_s test for {user}"
        );
    }
}

#[test]
fn busybox_user_path_holds_only_busybox_applets() {
    let Some(sshd) = sshd_or_skip() else { return };
    if !sshd.users().contains(&"ck_busybox") {
        skip_or_panic("busybox is not installed");
        return;
    }
    let script = "command -v ls\ncommand -v sh\nreadlink /proc/$$/exe\necho \"PATH=$PATH\"\n";
    let output = run_with_stdin(
        sshd.ssh("ck_busybox").args(["sh", "-s"]),
        script.as_bytes(),
        TIMEOUT,
    );
    let context = show(&output);
    assert!(output.status.success(), "{context}");
    let bin = sshd.home("ck_busybox").join(BUSYBOX_BIN);
    let busybox = std::fs::canonicalize(crate::common::find_tool("busybox").unwrap()).unwrap();
    assert_eq!(
        lines(&output.stdout),
        [
            bin.join("ls").display().to_string(),
            bin.join("sh").display().to_string(),
            // The `sh -s` process itself is busybox.
            busybox.display().to_string(),
            format!("PATH={}", bin.display()),
        ],
        "{context}"
    );
    for entry in std::fs::read_dir(&bin).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(
            std::fs::read_link(&path).unwrap(),
            busybox,
            "{}",
            path.display()
        );
    }
}

#[test]
fn put_file_is_owned_by_and_readable_for_the_user() {
    let Some(sshd) = sshd_or_skip() else { return };
    let rel = Path::new(".claude/projects/-ck-fixture-put-file/session.jsonl");
    let path = sshd.put_file("ck_dash", rel, b"{\"type\":\"user\"}\n");
    assert_eq!(path, sshd.home("ck_dash").join(rel));
    let script = "cd -P ~/.claude/projects/-ck-fixture-put-file && test -O session.jsonl && \
                  test -O . && test -O .. && cat session.jsonl\n";
    let output = run_with_stdin(
        sshd.ssh("ck_dash").args(["sh", "-s"]),
        script.as_bytes(),
        TIMEOUT,
    );
    assert!(output.status.success(), "{}", show(&output));
    assert_eq!(output.stdout, b"{\"type\":\"user\"}\n", "{}", show(&output));
}

#[test]
fn script_login_shell_can_imitate_windows_cmd() {
    let Some(sshd) = sshd_or_skip() else { return };
    // sshd runs `<shell> -c '<command>'`; cmd.exe answers a missing program like this.
    let script = "#!/bin/sh\n\
                  printf \"'%s' is not recognized as an internal or external command,\\r\\n\
                  operable program or batch file.\\r\\n\" \"${2%% *}\" >&2\n\
                  exit 1\n";
    sshd.add_script_user("ck_fixture_cmd", script);
    let output = run_with_stdin(
        sshd.ssh("ck_fixture_cmd").args(["sh", "-s"]),
        MARK_SCRIPT.as_bytes(),
        TIMEOUT,
    );
    assert_eq!(output.status.code(), Some(1), "{}", show(&output));
    assert_eq!(output.stdout, b"", "{}", show(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "'sh' is not recognized as an internal or external command,\r\n\
         operable program or batch file.\r\n"
    );
}

#[test]
fn kill_connections_of_drops_a_live_connection() {
    let Some(sshd) = sshd_or_skip() else { return };
    // A user of its own: killing connections must not disturb tests running in parallel.
    let user = "ck_fixture_drop";
    let bash = crate::common::find_tool("bash").expect("bash");
    sshd.add_user(user, &bash);
    assert_eq!(sshd.kill_connections_of(user), 0, "no connection yet");

    let mut child = sshd
        .ssh(user)
        .args(["sh", "-s"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Stdin stays open: the remote sh waits for more script until the connection dies.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"echo READY\n").unwrap();
    stdin.flush().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let _ = tx.send(line);
        }
    });
    let first = rx
        .recv_timeout(TIMEOUT)
        .expect("READY within the timeout")
        .unwrap();
    assert_eq!(first, "READY", "sshd log: {}", sshd.log());

    assert_eq!(sshd.kill_connections_of(user), 1);
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("ssh still running 10 s after its connection was killed");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // OpenSSH's client exits 255 when the connection fails.
    assert_eq!(status.code(), Some(255));
    drop(stdin);
    assert_eq!(sshd.kill_connections_of(user), 0, "nothing left to kill");

    // The listener is unharmed: the next connection works.
    let output = run_with_stdin(sshd.ssh(user).args(["sh", "-s"]), b"echo again\n", TIMEOUT);
    assert_eq!(output.stdout, b"again\n", "{}", show(&output));
}

#[test]
fn ssh_config_parses_strictly_with_ssh2_config() {
    let Some(sshd) = sshd_or_skip() else { return };
    let mut reader = BufReader::new(std::fs::File::open(sshd.ssh_config()).unwrap());
    let config = ssh2_config::SshConfig::default()
        .parse(&mut reader, ssh2_config::ParseRule::STRICT)
        .unwrap_or_else(|e| panic!("{}: {e}", sshd.ssh_config().display()));
    for user in sshd.users() {
        let params = config.query(sshd.alias(user));
        assert_eq!(params.host_name.as_deref(), Some("127.0.0.1"));
        assert_eq!(params.port, Some(sshd.port()));
        assert_eq!(params.user.as_deref(), Some(*user));
        assert_eq!(params.identity_file, Some(vec![sshd.identity().to_owned()]));
    }
    let known_hosts = std::fs::read_to_string(sshd.known_hosts()).unwrap();
    assert!(
        known_hosts.starts_with(&format!("[127.0.0.1]:{} ssh-ed25519 ", sshd.port())),
        "{known_hosts}"
    );
}
