//! The pager, under a real terminal: `script` (util-linux) runs the binary on a pty, with
//! `CLANKIE_PAGER` a shell command that records what it is given. A page longer than the screen
//! (`LINES`) goes to the pager, whole; a short page, `--no-pager` and `--json` go straight to
//! the terminal. On the terminal the colour is on (`--color auto`), the page starts with its
//! session header, and `--show-cursor` ends it with the cursor line, dim.

use std::path::Path;
use std::process::Command;

use crate::common::require_tool;
use crate::support::{BIN, code, stderr};

/// What one run under a pty showed and what its pager recorded (`None`: no pager ran).
struct Run {
    terminal: String,
    paged: Option<String>,
}

/// Runs `clankie-read --root claude=FIXTURES local:short ARGS` on a pty of `lines` rows.
fn on_a_terminal(lines: usize, args: &[&str]) -> Run {
    on_a_terminal_with_pager(lines, None, args)
}

/// As [`on_a_terminal`], with `CLANKIE_PAGER` set to `pager` instead of the recording one.
fn on_a_terminal_with_pager(lines: usize, pager: Option<&str>, args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("paged");
    let pager = pager.map_or_else(
        || format!("cat > {}", shell_quote_path(&record)),
        str::to_string,
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude");
    let mut command = vec![
        BIN.to_string(),
        "--root".into(),
        format!("claude={}", root.display()),
        "local:short".into(),
    ];
    command.extend(args.iter().map(|a| a.to_string()));
    let quoted: Vec<String> = command.iter().map(|a| shell_quote(a)).collect();
    let out = Command::new("script")
        .args(["-qec", &quoted.join(" "), "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", "/nonexistent")
        .env("SHELL", "/bin/sh")
        .env("TZ", "UTC")
        .env("LINES", lines.to_string())
        .env("COLUMNS", "100")
        .env("CLANKIE_PAGER", pager)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    Run {
        terminal: String::from_utf8(out.stdout).unwrap().replace("\r\n", "\n"),
        paged: std::fs::read_to_string(&record).ok(),
    }
}

fn shell_quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

fn shell_quote_path(path: &Path) -> String {
    shell_quote(&path.display().to_string())
}

/// The session is 11 records, one of them two lines long at 100 columns; with the day, the
/// session header and the cursor line, more than 14 lines.
const RECORD: &str = "mix phx.server doesnt seem to start";

#[test]
fn a_page_longer_than_the_screen_goes_through_the_pager() {
    if !require_tool("script") {
        return;
    }
    let run = on_a_terminal(10, &["--all", "--show-cursor"]);
    let paged = run.paged.expect("the pager ran");
    assert!(paged.contains(RECORD), "{paged}");
    // The pager got the page whole, coloured, with the dim cursor line at its end.
    assert!(paged.contains("\x1b[1;32m"), "{paged:?}");
    assert!(
        paged
            .trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("\x1b[2m-- cursor "),
        "{paged:?}"
    );
    assert!(!run.terminal.contains(RECORD), "{}", run.terminal);
}

#[test]
fn a_short_page_and_no_pager_go_straight_to_the_terminal() {
    if !require_tool("script") {
        return;
    }
    for (lines, args) in [
        (40, &["--all", "--show-cursor"][..]),
        (10, &["--all", "--no-pager", "--show-cursor"][..]),
        (16, &["--limit", "2", "--show-cursor"][..]),
    ] {
        let run = on_a_terminal(lines, args);
        assert_eq!(run.paged, None, "{args:?}");
        assert!(
            run.terminal.contains("\x1b[2m-- cursor "),
            "{args:?}: {}",
            run.terminal
        );
    }
    let run = on_a_terminal(40, &["--all"]);
    assert!(run.terminal.contains(RECORD), "{}", run.terminal);
}

#[test]
fn a_pager_that_does_not_exist_loses_nothing() {
    if !require_tool("script") {
        return;
    }
    let run = on_a_terminal_with_pager(10, Some("no-such-pager-ck -R"), &["--all"]);
    // `script` merges the program's stderr into the terminal it records.
    assert!(
        run.terminal
            .contains("warning: pager `no-such-pager-ck` not found; writing to the terminal"),
        "{}",
        run.terminal
    );
    assert!(run.terminal.contains(RECORD), "{}", run.terminal);
}

#[test]
fn json_is_never_paged() {
    if !require_tool("script") {
        return;
    }
    let run = on_a_terminal(3, &["--all", "--json"]);
    assert_eq!(run.paged, None);
    let lines: Vec<serde_json::Value> = run
        .terminal
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.last().unwrap()["type"], "page");
}
