//! Completion by key presses: bash, zsh and fish each run interactively on a pty (a tmux pane
//! with no configuration), source the completion script, and are sent a half-typed line and a
//! Tab; the test reads the line off the screen. Nothing is set by hand (no `COMP_WORDS`), so
//! the shell splits the line as it does for a person: bash's word after `HOST:` is empty.
//! Covers `HOST:` right after the colon (a local host, a host of the hosts file, and a real
//! sshd), after `read` and `resume`, and the values of `--harness`, `--kind` and `--sort`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::require_tool;
use crate::common::sshd::sshd_or_skip;
use crate::support::{code, fixtures_home, stderr};

/// How long a Tab may take to show its completion (a remote listing included).
const SCREEN_DEADLINE: Duration = Duration::from_secs(20);

/// The prompt every shell is given, so the line under the cursor is recognisable.
const PROMPT: &str = "ck$";

/// The one session of the home's `~/.claude` (what `local:` completes to).
const LOCAL_SESSION: &str = "short";
/// The one session of the hosts file's `devbox` (a local host with a root of its own).
const DEVBOX_SESSION: &str = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7";

/// A home whose `~/.claude` holds one session and whose hosts file names `devbox`, another
/// local host holding one other session: `HOST:` then completes to a whole id.
fn home_with_one_session_per_host() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let projects = fixtures_home().join("projects/-fixtures");
    let put = |root: &Path, id: &str| {
        let dir = root.join("projects/-p");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(
            projects.join(format!("{id}.jsonl")),
            dir.join(format!("{id}.jsonl")),
        )
        .unwrap();
    };
    put(&home.path().join(".claude"), LOCAL_SESSION);
    let devbox = home.path().join("devbox-root");
    put(&devbox, DEVBOX_SESSION);
    let config = home.path().join(".config/clankie");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("hosts.toml"),
        format!(
            "[hosts.devbox]\nlocal = true\nroots = {{ claude = \"{}\" }}\n",
            devbox.display()
        ),
    )
    .unwrap();
    home
}

/// The completion script of `shell`, written into `home`.
fn script(home: &Path, shell: &str) -> PathBuf {
    let out = crate::support::clankie(home)
        .args(["completions", shell])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let path = home.join(format!("clankie-read.{shell}"));
    std::fs::write(&path, &out.stdout).unwrap();
    path
}

/// A word quoted for the shells' command lines.
fn quoted(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// An interactive shell on a pty: a detached tmux session on a socket of its own, without
/// any tmux configuration, whose shell has only PATH and HOME from the test's environment.
struct Pane {
    shell: &'static str,
    /// Holds tmux's socket; removed after the server is killed.
    dir: tempfile::TempDir,
}

impl Pane {
    /// `shell` (`bash`, `zsh` or `fish`) with `home`, the completion script sourced and the
    /// prompt set to [`PROMPT`], waiting at an empty line on a cleared screen. None when tmux or
    /// the shell is not installed (a failure under `CI=true`).
    fn start(shell: &'static str, home: &Path) -> Option<Pane> {
        if !require_tool("tmux") || !require_tool(shell) {
            return None;
        }
        let script = quoted(&script(home, shell));
        let (command, setup) = match shell {
            "bash" => (
                "bash --norc --noprofile".to_string(),
                format!("source {script}; PS1='{PROMPT} '"),
            ),
            "zsh" => (
                "zsh -f".to_string(),
                format!(
                    "autoload -Uz compinit && compinit -u -D && source {script}; PROMPT='{PROMPT} '"
                ),
            ),
            "fish" => (
                "fish --no-config".to_string(),
                // Autosuggestions would show text after the cursor that capture-pane cannot
                // tell from typed text.
                format!(
                    "source {script}; set -g fish_autosuggestion_enabled 0; function fish_prompt; echo -n '{PROMPT} '; end"
                ),
            ),
            other => panic!("no pane for {other}"),
        };
        let pane = Pane {
            shell,
            dir: tempfile::tempdir().unwrap(),
        };
        let out = pane
            .tmux()
            .env("HOME", home)
            .args(["new-session", "-d", "-x", "200", "-y", "50", &command])
            .output()
            .unwrap();
        assert!(out.status.success(), "tmux new-session: {}", stderr(&out));
        pane.keys(&["-l", &setup]);
        pane.keys(&["Enter"]);
        pane.wait_for("the prompt", |screen| {
            last_line(screen).is_some_and(|line| line == PROMPT)
        });
        pane.clear();
        Some(pane)
    }

    /// tmux, on this pane's socket, without the runner's environment.
    fn tmux(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .arg("-S")
            .arg(self.dir.path().join("tmux"))
            .args(["-f", "/dev/null"]);
        cmd
    }

    fn keys(&self, keys: &[&str]) {
        let out = self.tmux().arg("send-keys").args(keys).output().unwrap();
        assert!(out.status.success(), "tmux send-keys: {}", stderr(&out));
    }

    /// What the pane shows, one string per row, without trailing blanks.
    fn screen(&self) -> Vec<String> {
        let out: Output = self.tmux().args(["capture-pane", "-p"]).output().unwrap();
        assert!(out.status.success(), "tmux capture-pane: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|line| line.trim_end().to_string())
            .collect()
    }

    /// Polls the screen until `done` holds; panics with the screen at the deadline.
    fn wait_for(&self, what: &str, done: impl Fn(&[String]) -> bool) -> Vec<String> {
        let deadline = Instant::now() + SCREEN_DEADLINE;
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            if Instant::now() >= deadline {
                panic!(
                    "{}: no {what} within {SCREEN_DEADLINE:?}; the screen:\n{}",
                    self.shell,
                    screen.join("\n").trim_end()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Empties the line and the screen, and waits for the lone prompt.
    fn clear(&self) {
        self.keys(&["C-e", "C-u", "C-l"]);
        self.wait_for("cleared screen", |screen| {
            screen.iter().filter(|line| !line.is_empty()).eq([PROMPT])
        });
    }

    /// Types `typed`, presses Tab and waits for the line to read `want` (both after the
    /// prompt); then clears the line.
    fn completes(&self, typed: &str, want: &str) {
        self.keys(&["-l", typed]);
        self.wait_for(&format!("`{typed}` typed"), |screen| {
            last_line(screen).is_some_and(|line| line == format!("{PROMPT} {typed}"))
        });
        self.keys(&["Tab"]);
        let wanted = format!("{PROMPT} {want}");
        self.wait_for(
            &format!("`{typed}` + Tab completed to `{want}`"),
            |screen| screen.contains(&wanted),
        );
        self.clear();
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").output();
    }
}

/// The last row that is not empty.
fn last_line(screen: &[String]) -> Option<&str> {
    screen
        .iter()
        .rev()
        .find(|line| !line.is_empty())
        .map(String::as_str)
}

/// What each shell must complete: the typed line, and the line after one Tab.
fn cases() -> Vec<(String, String)> {
    let devbox = format!("devbox:{DEVBOX_SESSION}");
    let local = format!("local:{LOCAL_SESSION}");
    [
        ("clankie-read local:", format!("clankie-read {local}")),
        ("clankie-read devbox:", format!("clankie-read {devbox}")),
        (
            "clankie-read read devbox:",
            format!("clankie-read read {devbox}"),
        ),
        (
            "clankie-read resume local:",
            format!("clankie-read resume {local}"),
        ),
        ("clankie-read devbox:5c", format!("clankie-read {devbox}")),
        (
            "clankie-read ls --harness cod",
            "clankie-read ls --harness codex".into(),
        ),
        (
            "clankie-read grep x --harness=cla",
            "clankie-read grep x --harness=claude".into(),
        ),
        (
            "clankie-read ls --sort si",
            "clankie-read ls --sort size".into(),
        ),
        (
            "clankie-read ls --sort=na",
            "clankie-read ls --sort=name".into(),
        ),
        (
            "clankie-read read local:short --kind user,tool_r",
            "clankie-read read local:short --kind user,tool_result".into(),
        ),
        (
            "clankie-read grep x --kind=assi",
            "clankie-read grep x --kind=assistant".into(),
        ),
    ]
    .into_iter()
    .map(|(typed, want)| (typed.to_string(), want))
    .collect()
}

fn completes_by_key_presses(shell: &'static str) {
    let home = home_with_one_session_per_host();
    let Some(pane) = Pane::start(shell, home.path()) else {
        return;
    };
    for (typed, want) in cases() {
        pane.completes(&typed, &want);
    }
}

#[test]
fn bash_completes_host_colon_and_option_values_by_key_presses() {
    completes_by_key_presses("bash");
}

#[test]
fn zsh_completes_host_colon_and_option_values_by_key_presses() {
    completes_by_key_presses("zsh");
}

#[test]
fn fish_completes_host_colon_and_option_values_by_key_presses() {
    completes_by_key_presses("fish");
}

#[test]
fn host_colon_completes_a_session_id_over_ssh_by_key_presses() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_tab_keys";
    let alias = sshd.add_user(user, Path::new("/bin/sh"));
    let session = "c0c0a002-0000-4000-8000-00000000face";
    let line = r#"{"type":"user","uuid":"u1","timestamp":"2026-11-02T10:00:00.000Z","message":{"role":"user","content":"hello"}}"#;
    sshd.put_file(
        user,
        format!(".claude/projects/-keys/{session}.jsonl"),
        format!("{line}\n").as_bytes(),
    );
    let home = tempfile::tempdir().unwrap();
    // A short path keeps the typed line on one row.
    let ssh_config = home.path().join("ssh.conf");
    std::fs::copy(sshd.ssh_config(), &ssh_config).unwrap();
    let typed = format!(
        "clankie-read --ssh-config {} {alias}:",
        ssh_config.display()
    );
    for shell in ["bash", "zsh", "fish"] {
        let Some(pane) = Pane::start(shell, home.path()) else {
            continue;
        };
        pane.completes(&typed, &format!("{typed}{session}"));
    }
}
