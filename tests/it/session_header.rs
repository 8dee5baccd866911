//! The session header of a page, as a person sees it in a real terminal: a private tmux server
//! with one pane 60 or 120 columns wide, the command typed into its shell with `send-keys`, the
//! screen read back with `capture-pane`. The page starts with the session's title, harness,
//! directory and times, says how many records it shows and that earlier ones exist (and how to
//! see them), and ends without the cursor line unless `--show-cursor` asks for it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::require_tool;
use crate::support::{BIN, stderr};

/// A private tmux server (its own socket, no config) whose one pane runs `sh`.
struct Pane {
    socket: PathBuf,
    /// Runs so far: each run's end marker is its own, so that the screen of the run before
    /// (still there until `clear` has run) is never taken for this one's.
    runs: std::cell::Cell<usize>,
    _dir: tempfile::TempDir,
}

impl Pane {
    fn start(columns: usize) -> Pane {
        let dir = tempfile::tempdir().unwrap();
        let pane = Pane {
            socket: dir.path().join("tmux.sock"),
            runs: std::cell::Cell::new(0),
            _dir: dir,
        };
        let (x, y) = (columns.to_string(), "40");
        let out = pane.tmux(&["new-session", "-d", "-x", &x, "-y", y, "-s", "t", "sh"]);
        assert!(out.status.success(), "tmux: {}", stderr(&out));
        pane
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["-f", "/dev/null"])
            .args(args)
            .env("TERM", "xterm-256color")
            .env("HOME", "/nonexistent")
            .env("TZ", "UTC")
            .env("PS1", "$ ")
            .env_remove("COLUMNS")
            .env_remove("LINES")
            .output()
            .expect("run tmux")
    }

    /// The screen's lines, trailing blanks cut.
    fn screen(&self) -> Vec<String> {
        let out = self.tmux(&["capture-pane", "-p", "-t", "t"]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim_end().to_string())
            .collect()
    }

    /// Types `command` and Enter, then an end marker, and returns what the command printed:
    /// the screen's lines between the command line and the marker.
    fn run(&self, command: &str) -> Vec<String> {
        self.runs.set(self.runs.get() + 1);
        let marker = &format!("END-OF-RUN-{}", self.runs.get());
        let typed = format!("clear; {command}; echo {marker}");
        self.tmux(&["send-keys", "-t", "t", "-l", &typed]);
        self.tmux(&["send-keys", "-t", "t", "Enter"]);
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if let Some(end) = screen.iter().position(|l| l == marker) {
                // The command line the shell echoed may wrap: its last row ends with the marker.
                let first = screen[..end]
                    .iter()
                    .rposition(|l| l.ends_with(marker))
                    .map_or(0, |i| i + 1);
                return screen[first..end].to_vec();
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the pane never showed {marker}: {screen:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

fn quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

/// `clankie-read --root claude=FIXTURES local:short ARGS --no-pager`, as typed into the shell.
fn command(args: &[&str]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude");
    let mut words = vec![
        quote(BIN),
        "--root".into(),
        quote(&format!("claude={}", root.display())),
        "local:short".into(),
        "--no-pager".into(),
    ];
    words.extend(args.iter().map(|a| quote(a)));
    words.join(" ")
}

/// The header's time of last activity is the fixture file's, which a checkout sets.
fn without_file_time(lines: &[String]) -> String {
    let time = regex::Regex::new(r"last activity \d{4}-\d\d-\d\d \d\d:\d\d").unwrap();
    let text = lines.join("\n");
    time.replace_all(&text, "last activity [TIME]").into_owned()
}

#[test]
fn a_page_starts_with_its_session_header_at_60_and_120_columns() {
    if !require_tool("tmux") {
        return;
    }
    for columns in [60, 120] {
        let pane = Pane::start(columns);
        let page = pane.run(&command(&["-n", "3"]));
        assert!(
            page.iter().all(|l| l.chars().count() <= columns),
            "{page:#?}"
        );
        let header = &page[..page.len().min(8)];
        assert!(
            header.iter().any(|l| l.contains("claude local:short")),
            "{page:#?}"
        );
        assert!(
            header.iter().any(|l| l.contains("3 records shown")),
            "{page:#?}"
        );
        assert!(
            page.iter()
                .any(|l| l.trim() == "earlier records not shown (--head, --all)"),
            "{page:#?}"
        );
        // The cursor is for whoever asks for it.
        assert!(
            !page.iter().any(|l| l.starts_with("-- cursor ")),
            "{page:#?}"
        );
        insta::assert_snapshot!(
            format!("session_header_{columns}"),
            without_file_time(&page)
        );

        let page = pane.run(&command(&["-n", "3", "--show-cursor"]));
        assert!(
            page.iter().any(|l| l.starts_with("-- cursor ")),
            "{page:#?}"
        );
        // The whole session: no earlier records, and the time it started.
        let page = pane.run(&command(&["--all"]));
        assert!(
            !page.iter().any(|l| l.contains("earlier records")),
            "{page:#?}"
        );
        assert!(page.iter().any(|l| l.contains("started ")), "{page:#?}");
    }
}

/// Piped, the page is the records alone: no header, no cursor line.
#[test]
fn a_piped_page_has_no_header_and_no_cursor() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude");
    let out = Command::new(BIN)
        .args(["--root", &format!("claude={}", root.display())])
        .args(["local:short", "-n", "3"])
        .env_clear()
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("records shown"), "{text}");
    assert!(!text.contains("-- cursor"), "{text}");
    let out = Command::new(BIN)
        .args(["--root", &format!("claude={}", root.display())])
        .args(["local:short", "-n", "3", "--show-cursor"])
        .env_clear()
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("\n-- cursor "), "{text}");
}
