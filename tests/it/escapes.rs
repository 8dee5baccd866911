//! Hostile text and odd names end to end: terminal controls in a transcript come out of
//! `--json` escaped (and parse back, with serde_json and with the real `jq`) and out of the
//! text output removed; a directory whose name is not UTF-8 is named in one warning.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{code, ndjson, records, run, stderr};

const SESSION: &str = "e5c0de00-0000-4000-8000-000000000001";

/// Every character JSON lets through raw but a terminal (or JavaScript) acts on, among ordinary
/// text.
const HOSTILE: &str = "del\u{7f} c1\u{85}\u{9b}31m csi \u{202e}evil\u{202c} \u{2066}iso\u{2069} \
                       line\u{2028}para\u{2029} zw\u{200b}j\u{200d} mark\u{200f}\u{61c} ok é 日 🎉 \
                       shy\u{ad} hangul\u{3164} vs\u{fe0f} tag\u{e0041}";

fn escaped_in_json(c: char) -> bool {
    matches!(c, '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}')
        || clankie_model::invisible::is_invisible(c)
}

fn removed_in_text(c: char) -> bool {
    matches!(c, '\u{7f}'..='\u{9f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        || matches!(
            c,
            '\u{200b}'..='\u{200f}' | '\u{2060}' | '\u{feff}' | '\u{61c}'
        )
        || (c < ' ' && c != '\n' && c != '\t')
}

fn home_with_hostile_session() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".claude/projects/-work");
    std::fs::create_dir_all(&dir).unwrap();
    let mut input = serde_json::json!({"command": HOSTILE});
    input[HOSTILE] = 1.into();
    let lines = [
        serde_json::json!({"type":"user","uuid":"u1","timestamp":"2026-11-02T10:00:00.000Z",
            "message":{"role":"user","content":HOSTILE}}),
        serde_json::json!({"type":"assistant","uuid":"a1","timestamp":"2026-11-02T10:00:01.000Z",
            "message":{"id":"m1","role":"assistant","content":[
                {"type":"tool_use","id":"t1","name":"Bash","input":input}]}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join(format!("{SESSION}.jsonl")), text).unwrap();
    home
}

#[test]
fn json_escapes_terminal_controls_and_parses_back_the_same() {
    let home = home_with_hostile_session();
    let out = run(
        home.path(),
        &[&format!("local:{SESSION}"), "--json", "--all"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(
        !stdout.chars().any(escaped_in_json),
        "raw terminal control in {stdout:?}"
    );
    for escape in [
        "\\u007f",
        "\\u0085",
        "\\u009b",
        "\\u202e",
        "\\u2028",
        "\\u2069",
        "\\u200f",
        "\\u061c",
        "\\u200b",
        "\\u00ad",
        "\\u3164",
        "\\ufe0f",
        "\\udb40\\udc41",
    ] {
        assert!(stdout.contains(escape), "{escape} in {stdout}");
    }

    // serde_json reads back the very strings of the transcript.
    let lines = ndjson(&out);
    let recs = records(&lines);
    assert_eq!(recs.len(), 2, "{lines:?}");
    assert_eq!(recs[0]["text"], HOSTILE);
    assert_eq!(recs[1]["input"]["command"], HOSTILE);
    assert_eq!(recs[1]["input"][HOSTILE], 1);

    // So does jq, the tool people pipe this into.
    let mut jq = Command::new("jq")
        .args(["-c", "select(.type == \"record\") | [.text, .input]"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("jq is installed");
    jq.stdin.take().unwrap().write_all(&out.stdout).unwrap();
    let jq_out = jq.wait_with_output().unwrap();
    assert!(jq_out.status.success());
    let parsed: Vec<Value> = String::from_utf8(jq_out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(parsed[0][0], HOSTILE);
    assert_eq!(parsed[1][1]["command"], HOSTILE);
    assert_eq!(parsed[1][1][HOSTILE], 1);
}

#[test]
fn text_output_removes_separators_zero_widths_and_bidi_controls() {
    let home = home_with_hostile_session();
    let out = run(
        home.path(),
        &[
            &format!("local:{SESSION}"),
            "--all",
            "--full",
            "--color",
            "never",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        !stdout.chars().any(removed_in_text),
        "control left in {stdout:?}"
    );
    // What is left reads as the text did, without the invisible parts.
    assert!(
        stdout.contains("del c1 csi evil iso linepara zwj mark ok é 日 🎉"),
        "{stdout}"
    );
}

#[test]
fn a_directory_with_a_non_utf8_name_is_named_in_one_warning() {
    let home = home_with_hostile_session();
    let odd = home
        .path()
        .join(std::ffi::OsStr::from_bytes(b".claude/projects/-caf\xe9"));
    std::fs::create_dir(&odd).unwrap();
    std::fs::write(
        odd.join("0dd00000-0000-4000-8000-000000000002.jsonl"),
        "{\"type\":\"user\",\"uuid\":\"u\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
    )
    .unwrap();
    let out = run(home.path(), &["ls", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines: Vec<Value> = ndjson(&out);
    let sessions: Vec<&Value> = lines.iter().filter(|l| l["type"] == "session").collect();
    assert_eq!(sessions.len(), 1, "{lines:?}");
    assert_eq!(sessions[0]["session"], SESSION);
    // And one `error` object naming the directory (docs/ndjson.md).
    let errors: Vec<&Value> = lines.iter().filter(|l| l["type"] == "error").collect();
    assert_eq!(errors.len(), 1, "{lines:?}");
    assert!(
        errors[0]["path"]
            .as_str()
            .unwrap()
            .ends_with("/.claude/projects/-caf\u{fffd}"),
        "{lines:?}"
    );
    let err = stderr(&out);
    let warnings: Vec<&str> = err.lines().collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].starts_with("clankie-read: warning: local: ")
            && warnings[0].ends_with(
                "/.claude/projects/-caf\u{fffd}: directory name is not UTF-8; its sessions are left out"
            ),
        "{err}"
    );
}
