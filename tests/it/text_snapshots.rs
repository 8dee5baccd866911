//! Snapshots of the text output people read, for a Claude and a Codex session, with and without
//! colour (TZ fixed so times are stable). Review changes with `cargo insta review`.

use std::process::Command;

use crate::support::{BIN, code, stderr};

fn text(harness_root: &str, session: &str, color: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(harness_root);
    let out = Command::new(BIN)
        .args([
            "--root",
            &format!("{harness_root}={}", root.display()),
            "--color",
            color,
            &format!("local:{session}"),
            "--all",
        ])
        .env_clear()
        .env("TZ", "UTC")
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn claude_text() {
    insta::assert_snapshot!("claude_short_plain", text("claude", "short", "never"));
    let colored = text("claude", "short", "always");
    assert!(colored.contains("\x1b[1;32m"), "user lines are coloured");
    // Colour only adds SGR sequences around the gutter; the words are the same.
    insta::assert_snapshot!("claude_short_color", colored.replace('\x1b', "<ESC>"));
}

#[test]
fn codex_text() {
    insta::assert_snapshot!("codex_turn_plain", text("codex", "019c8bfe", "never"));
    insta::assert_snapshot!(
        "codex_turn_color",
        text("codex", "019c8bfe", "always").replace('\x1b', "<ESC>")
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
