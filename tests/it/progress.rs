//! Progress on stderr: under a real terminal (`script` runs the binary on a pty), `ls` and
//! `check` of several hosts draw a line that counts the hosts and erase it before their output;
//! with stderr piped or redirected, nothing of it is written.

use std::path::Path;
use std::process::Command;

use crate::common::require_tool;
use crate::support::{BIN, clankie, code, stderr};

fn shell_quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

/// A `$HOME` with one Claude session and a hosts file naming two local hosts.
fn home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("hosts.toml"),
        "[hosts.alpha]\nlocal = true\n[hosts.beta]\nlocal = true\n",
    )
    .unwrap();
    let project = home.path().join(".claude/projects/-p");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/claude/projects/-fixtures/short.jsonl"),
        project.join("c0c0c0c0-0000-4000-8000-000000000001.jsonl"),
    )
    .unwrap();
    home
}

/// `clankie-read --hosts HOME/hosts.toml ARGS` on a pty (`redirect`, if given, is appended to
/// the shell command); what the terminal showed, `\r\n` as `\n`.
fn on_a_terminal(home: &Path, args: &[&str], redirect: &str) -> String {
    let hosts = home.join("hosts.toml").display().to_string();
    let mut command = vec![BIN, "--hosts", &hosts];
    command.extend(args);
    let quoted: Vec<String> = command.iter().map(|a| shell_quote(a)).collect();
    let line = format!("{} {redirect}", quoted.join(" "));
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("SHELL", "/bin/sh")
        .env("TERM", "xterm")
        .env("TZ", "UTC")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    String::from_utf8(out.stdout).unwrap().replace("\r\n", "\n")
}

/// The output lines (the progress line erased, `\r` and the erase sequence gone).
fn after_progress(terminal: &str) -> &str {
    terminal.rsplit("\r\x1b[2K").next().unwrap()
}

#[test]
fn several_hosts_show_a_line_on_a_terminal_that_is_gone_before_the_output() {
    if !require_tool("script") {
        return;
    }
    let home = home();
    for (args, what, first_line) in [
        (
            &["ls", "alpha", "beta"][..],
            "listing hosts 0/2",
            "HOST   HARNESS  ID  ",
        ),
        (
            &["check", "--state", "STATE", "alpha", "beta"][..],
            "checking hosts 0/2",
            "alpha claude/c0c0c0c0-0000-4000-8000-000000000001 new +0 ",
        ),
    ] {
        let state = home.path().join("state.json").display().to_string();
        let args: Vec<&str> = args
            .iter()
            .map(|a| if *a == "STATE" { state.as_str() } else { a })
            .collect();
        let terminal = on_a_terminal(home.path(), &args, "");
        assert!(terminal.contains(what), "{args:?}: {terminal:?}");
        // Erased before the output, which follows whole.
        let output = after_progress(&terminal);
        assert!(output.starts_with(first_line), "{args:?}: {terminal:?}");
        // `ls` on a terminal has a header row over its two rows.
        let lines = if args[0] == "ls" { 3 } else { 2 };
        assert_eq!(output.lines().count(), lines, "{args:?}: {terminal:?}");
        assert!(!output.contains("hosts 0/2"), "{terminal:?}");

        // Stderr redirected, stdout still the terminal: no line, nothing on stderr.
        let err = home.path().join("stderr");
        let redirect = format!("2>{}", shell_quote(&err.display().to_string()));
        let terminal = on_a_terminal(home.path(), &args, &redirect);
        assert!(!terminal.contains("hosts"), "{terminal:?}");
        assert!(!terminal.contains("\r\x1b[2K"), "{terminal:?}");
        assert_eq!(std::fs::read_to_string(&err).unwrap(), "");
        std::fs::remove_file(home.path().join("state.json")).ok();
    }
}

#[test]
fn nothing_is_drawn_when_stderr_is_piped() {
    let home = home();
    let hosts = home.path().join("hosts.toml").display().to_string();
    let state = home.path().join("state.json").display().to_string();
    for args in [
        vec!["--hosts", &hosts, "ls", "alpha", "beta"],
        vec![
            "--hosts", &hosts, "check", "--state", &state, "alpha", "beta",
        ],
    ] {
        let out = clankie(home.path())
            .env("TERM", "xterm")
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
    }
}
