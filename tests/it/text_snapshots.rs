//! Snapshots of the text output people read (TZ fixed so times are stable; `COLUMNS` sets the
//! width, as a terminal would): a long real Claude session (edits as diffs, results under their
//! calls, subagent work), a real Codex session with `apply_patch`, the real OpenCode database
//! and a real Pi session with edits, each at 80 and 120 columns, with and without colour. Colour
//! is shown with ESC spelled `<ESC>`. Review changes with `cargo insta review` (or the
//! `.snap.new` files).
//!
//! The public Codex rollouts carry no `apply_patch` body (their recorder replaced every input
//! with `[REDACTED_INPUT len sha]`: that snapshot shows a left-out patch as the source has it),
//! and the public OpenCode database has no edit (its one tool call is `bash`). So the
//! compatibility suite had the real Codex 0.171.0 and OpenCode 1.18.33 make one edit each
//! (`tests/compat/edits.rs`, `tests/fixtures/LAYOUT.md`): their snapshots show the patch and
//! the `edit` as unified diffs. The Pi session (`edit` with `path`/`oldText`/`newText`) shows
//! edits as diffs too.

use std::path::Path;
use std::process::Command;

use crate::support::{BIN, code, stderr};

const WIDTHS: [usize; 2] = [80, 120];

/// The text output of `--all` for `session` under `root` (a `--root` spec, or none to use
/// `home`'s default homes), at `columns` wide.
fn text(root: Option<&str>, home: &Path, session: &str, color: &str, columns: usize) -> String {
    let mut cmd = Command::new(BIN);
    if let Some(root) = root {
        cmd.args(["--root", root]);
    }
    let out = cmd
        .args(["--color", color, &format!("local:{session}"), "--all"])
        .env_clear()
        .env("TZ", "UTC")
        .env("HOME", home)
        .env("COLUMNS", columns.to_string())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

fn fixture_root(harness: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(harness);
    format!("{harness}={}", dir.display())
}

/// Snapshots `name_{80,120}_{plain,color}`, and checks what holds at every width: no line
/// wider than the terminal (a word wider than the body is broken), colour only in the colour
/// runs, and the same words either way.
fn snapshots(name: &str, root: Option<&str>, home: &Path, session: &str) {
    let sgr = regex::Regex::new("\x1b\\[[0-9;]*m").unwrap();
    for columns in WIDTHS {
        let plain = text(root, home, session, "never", columns);
        let colored = text(root, home, session, "always", columns);
        assert!(!plain.contains('\x1b'));
        assert!(colored.contains('\x1b'));
        for line in plain.lines() {
            let width = line.chars().count();
            // Characters, not columns: CJK text may count one per two columns here.
            assert!(width <= columns, "{width} > {columns}: {line}");
        }
        let uncolored = sgr.replace_all(&colored, "");
        assert_eq!(uncolored, plain, "colour adds SGR sequences only");
        insta::assert_snapshot!(format!("{name}_{columns}_plain"), plain);
        insta::assert_snapshot!(
            format!("{name}_{columns}_color"),
            colored.replace('\x1b', "<ESC>")
        );
    }
}

#[test]
fn claude_long_session() {
    let root = fixture_root("claude");
    snapshots(
        "claude_long",
        Some(&root),
        Path::new("/nonexistent"),
        "5c0375b4",
    );
}

#[test]
fn codex_session_with_apply_patch() {
    let root = fixture_root("codex");
    snapshots(
        "codex_apply_patch",
        Some(&root),
        Path::new("/nonexistent"),
        "rollout-2026-02-23T12-40-23",
    );
}

/// A home whose OpenCode database is loaded from the SQL dump `tests/fixtures/opencode/NAME`.
fn opencode_home(dump: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".local/share/opencode");
    std::fs::create_dir_all(&dir).unwrap();
    let dump = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/opencode")
        .join(dump);
    let conn = rusqlite::Connection::open(dir.join("opencode.db")).unwrap();
    conn.execute_batch(&std::fs::read_to_string(dump).unwrap())
        .unwrap();
    drop(conn);
    home
}

#[test]
fn opencode_session() {
    let home = opencode_home("opencode-1.18.33.sql");
    snapshots("opencode", None, home.path(), "ses_f0de500f");
}

/// The real Codex 0.171.0 writing an `apply_patch` (a freeform tool: the patch is the input)
/// that changes one line of `notes.txt` and adds one (`tests/compat/edits.rs`).
#[test]
fn codex_0_171_apply_patch() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex-0.171.0-apply-patch");
    let root = format!("codex={}", dir.display());
    snapshots(
        "codex_0_171_apply_patch",
        Some(&root),
        Path::new("/nonexistent"),
        "01a23184",
    );
}

/// The real OpenCode 1.18.33 writing an `edit` (`oldString` → `newString`) of the same change.
#[test]
fn opencode_1_18_33_edit() {
    let home = opencode_home("opencode-1.18.33-edit.sql");
    snapshots("opencode_1_18_33_edit", None, home.path(), "ses_dce7b61a");
}

/// The compatibility suite's scripted session as a real CLI of one of the harnesses read from
/// its events wrote it (`tests/fixtures/<dir>/`): prompt, text, shell call and its result,
/// redacted answer, resumed turn.
fn real_cli_session(name: &str, dir: &str, harness: &str, session: &str) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir);
    let root = format!("{harness}={}", fixture.display());
    snapshots(
        name,
        Some(&root),
        Path::new("/nonexistent"),
        &format!("{harness}/{session}"),
    );
}

#[test]
fn copilot_1_0_102() {
    real_cli_session("copilot_1_0_102", "copilot-1.0.102", "copilot", "b8a67622");
}

#[test]
fn droid_0_225_1() {
    real_cli_session("droid_0_225_1", "droid-0.225.1", "droid", "9cc2e2ac");
}

#[test]
fn continue_1_5_47() {
    real_cli_session("continue_1_5_47", "continue-1.5.47", "continue", "e37d3067");
}

#[test]
fn cline_3_0_65() {
    real_cli_session("cline_3_0_65", "cline-3.0.65", "cline", "1796519374410");
}

#[test]
fn qwen_0_24_4() {
    real_cli_session("qwen_0_24_4", "qwen-0.24.4", "qwen", "a897da87");
}

#[test]
fn aider_0_86_2() {
    real_cli_session(
        "aider_0_86_2",
        "aider-0.86.2/project",
        "aider",
        "aider-20261206-033628",
    );
}

#[test]
fn pi_session_with_edits() {
    let root = fixture_root("pi");
    snapshots(
        "pi_edits",
        Some(&root),
        Path::new("/nonexistent"),
        "d703a1a9",
    );
}

#[test]
fn claude_text() {
    let root = fixture_root("claude");
    let nowhere = Path::new("/nonexistent");
    // No COLUMNS and not a terminal: no wrapping.
    let out = Command::new(BIN)
        .args(["--root", &root, "--color", "never", "local:short", "--all"])
        .env_clear()
        .env("TZ", "UTC")
        .env("HOME", nowhere)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    insta::assert_snapshot!("claude_short_plain", String::from_utf8(out.stdout).unwrap());
    let colored = text(Some(&root), nowhere, "short", "always", 100);
    assert!(colored.contains("\x1b[1;32m"), "user lines are coloured");
    // Colour only adds SGR sequences around the gutter; the words are the same.
    insta::assert_snapshot!("claude_short_color", colored.replace('\x1b', "<ESC>"));
}

#[test]
fn codex_text() {
    let root = fixture_root("codex");
    let nowhere = Path::new("/nonexistent");
    insta::assert_snapshot!(
        "codex_turn_plain",
        text(Some(&root), nowhere, "019c8bfe", "never", 100)
    );
    insta::assert_snapshot!(
        "codex_turn_color",
        text(Some(&root), nowhere, "019c8bfe", "always", 100).replace('\x1b', "<ESC>")
    );
}

#[test]
fn no_color_wins_over_auto() {
    // Not a terminal and NO_COLOR: plain, whatever --color auto would pick.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude");
    let out = Command::new(BIN)
        .args([
            "--root",
            &format!("claude={}", root.display()),
            "local:short",
            "--all",
        ])
        .env_clear()
        .env("NO_COLOR", "1")
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    assert!(!out.stdout.contains(&0x1b));
}

/// A home with one Codex rollout holding an `apply_patch` (in the envelope Codex writes) and
/// one OpenCode-shaped `edit` call, each followed by its output.
fn home_with_edits() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".codex/sessions/2026/11/02");
    std::fs::create_dir_all(&dir).unwrap();
    let patch = "*** Begin Patch\n*** Update File: src/main.rs\n@@ fn main() {\n-    println!(\"hi\");\n+    println!(\"hello\");\n }\n*** End Patch\n";
    let edit = serde_json::json!({"filePath": "/w/a.txt", "oldString": "one\ntwo\n", "newString": "one\n2\n"});
    let item = |ts: &str, payload: serde_json::Value| {
        serde_json::json!({"timestamp": ts, "type": "response_item", "payload": payload})
            .to_string()
    };
    let lines = [
        serde_json::json!({"timestamp":"2026-11-02T10:00:00.000Z","type":"session_meta","payload":{"id":"0000aaaa-0000-7000-8000-000000000001","timestamp":"2026-11-02T10:00:00.000Z","cwd":"/w"}}).to_string(),
        item("2026-11-02T10:00:01.000Z", serde_json::json!({"type":"custom_tool_call","status":"completed","call_id":"c1","name":"apply_patch","input":patch})),
        item("2026-11-02T10:00:02.000Z", serde_json::json!({"type":"function_call","name":"edit","arguments":edit.to_string(),"call_id":"c2"})),
        item("2026-11-02T10:00:03.000Z", serde_json::json!({"type":"custom_tool_call_output","call_id":"c1","output":"Success. Updated the following files:\nM src/main.rs\n"})),
        item("2026-11-02T10:00:04.000Z", serde_json::json!({"type":"function_call_output","call_id":"c2","output":"ok"})),
    ];
    std::fs::write(
        dir.join("rollout-2026-11-02T10-00-00-0000aaaa-0000-7000-8000-000000000001.jsonl"),
        lines.join("\n") + "\n",
    )
    .unwrap();
    home
}

#[test]
fn edits_are_diffs_end_to_end() {
    let home = home_with_edits();
    let plain = text(None, home.path(), "0000aaaa", "never", 80);
    assert!(plain.starts_with("── 2026-11-02 Monday (UTC)\n"), "{plain}");
    let body: Vec<&str> = plain
        .lines()
        .skip(1)
        .map(|l| l.get(21..).unwrap_or(""))
        .collect();
    assert_eq!(
        body,
        [
            "apply_patch",
            "--- a/src/main.rs",
            "+++ b/src/main.rs",
            "@@ fn main() {",
            "-    println!(\"hi\");",
            "+    println!(\"hello\");",
            " }",
            "apply_patch: Success. Updated the following files:",
            "M src/main.rs",
            "edit /w/a.txt",
            " one",
            "-two",
            "+2",
            "edit: ok",
        ],
        "{plain}"
    );
    let colored = text(None, home.path(), "0000aaaa", "always", 80);
    for painted in [
        "\x1b[31m-    println!(\"hi\");\x1b[0m",
        "\x1b[32m+    println!(\"hello\");\x1b[0m",
        "\x1b[36m@@ fn main() {\x1b[0m",
    ] {
        assert!(colored.contains(painted), "{painted:?} in {colored}");
    }
}

#[test]
fn no_thinking_leaves_thinking_out_and_full_shows_results_whole() {
    let root = fixture_root("claude");
    let run = |session: &str, args: &[&str]| {
        let out = Command::new(BIN)
            .args(["--root", &root, "--color", "never", session, "--all"])
            .args(args)
            .env_clear()
            .env("TZ", "UTC")
            .env("HOME", "/nonexistent")
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let thinking = |text: &str| {
        text.lines()
            .filter(|l| l.get(9..20) == Some("thinking   "))
            .count()
    };
    assert_eq!(thinking(&run("local:short", &[])), 1);
    let without = run("local:short", &["--no-thinking"]);
    assert_eq!(thinking(&without), 0, "{without}");
    assert!(without.contains("assistant   Let me check"), "{without}");
    let short = run("local:5c0375b4", &[]);
    // Shortened: a result says how many lines it left out; --full leaves none out.
    assert!(short.contains(" more lines (--full)"), "{short}");
    let full = run("local:5c0375b4", &["--full"]);
    assert!(!full.contains("(--full)"), "{full}");
    assert!(full.lines().count() > short.lines().count() + 100);
}
