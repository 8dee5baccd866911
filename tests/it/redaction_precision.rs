//! Redaction precision end to end: over every transcript in `tests/fixtures/` (the real ones of
//! each harness, the OpenCode dumps loaded into databases) and the code-heavy precision corpus
//! `tests/fixtures/precision/`, the real binary's `--all --json` output differs from its
//! `--all --json --no-redact` output in exactly the redactions of the reviewed list
//! `tests/fixtures/precision/expected-redactions.tsv`: (file, record id, rule, the value
//! replaced). A redaction not in the list (a false positive on code) or a listed one missing
//! (a secret left) fails, as does a marker that splits an escape sequence.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{code, ndjson, records, run, stderr};

/// Every harness home under `tests/fixtures/` (see `LAYOUT.md`), and the precision corpus.
pub(crate) const HOMES: &[(&str, &str)] = &[
    ("claude", "claude"),
    ("claude", "claude-code-2.1.197"),
    ("claude", "claude-code-2.1.332"),
    ("claude", "claude-code-2.1.332-mcp"),
    ("codex", "codex"),
    ("codex", "codex-0.171.0"),
    ("codex", "codex-0.171.0-apply-patch"),
    ("gemini", "gemini"),
    ("gemini", "gemini-cli-0.61.0"),
    ("grok", "grok"),
    ("opencode", "opencode/legacy-1.1.65"),
    ("pi", "pi"),
    ("pi", "pi-0.73.1"),
    ("pi", "pi-1.6.0"),
    ("copilot", "copilot-1.0.102"),
    ("droid", "droid-0.225.1"),
    ("continue", "continue-1.5.47"),
    ("cline", "cline-3.0.65"),
    ("qwen", "qwen-0.24.4"),
    ("aider", "aider-0.86.2/project"),
    ("kimi-code", "kimi-code-2.1.0"),
    ("kimi", "kimi-1.51.0"),
    ("openhands", "openhands-1.2.1"),
    ("claude", "precision/claude"),
];

/// The `sqlite3 .dump`s of the database harnesses: (harness, its database's file name, the
/// dump), each dump loaded into that file to be read.
pub(crate) const DUMPS: &[(&str, &str, &str)] = &[
    ("opencode", "opencode.db", "opencode/opencode-1.18.33.sql"),
    (
        "opencode",
        "opencode.db",
        "opencode/opencode-1.18.33-edit.sql",
    ),
    ("kilo", "kilo.db", "kilo-7.7.7/kilo.sql"),
];

/// What `tests/fixtures/` holds besides the homes and dumps above: documents, and a terminal
/// recording that is no transcript.
const NOT_TRANSCRIPTS: &[&str] = &[
    "LAYOUT.md",
    "SOURCES-claude-codex.md",
    "SOURCES-pi-grok-opencode-gemini.md",
    "terminal",
];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// One redaction: (file under `tests/fixtures/`, record id, rule, the value replaced as a JSON
/// string).
type Redaction = (String, String, String, String);

/// The reviewed list: one tab-separated line per redaction; `#` starts a comment.
fn expected() -> BTreeSet<Redaction> {
    let text = std::fs::read_to_string(fixtures().join("precision/expected-redactions.tsv"))
        .expect("the reviewed list");
    let mut out = BTreeSet::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(fields.len(), 4, "four fields: {line:?}");
        let fresh = out.insert((
            fields[0].to_string(),
            fields[1].to_string(),
            fields[2].to_string(),
            fields[3].to_string(),
        ));
        assert!(fresh, "listed twice: {line:?}");
    }
    out
}

/// `--all --json` records of one session, redacted or not.
fn read(home: &Path, root: &str, target: &str, redact: bool) -> Vec<Value> {
    let mut args = vec!["--root", root, "read", target, "--all", "--json"];
    if !redact {
        args.push("--no-redact");
    }
    let out = run(home, &args);
    assert_eq!(code(&out), 0, "{target}: {}", stderr(&out));
    records(&ndjson(&out))
}

/// The redactions in every session under `root` (`HARNESS=DIR`); `file` names each session's
/// file as the list does.
fn redactions_under(
    home: &Path,
    harness: &str,
    root: &str,
    file: &dyn Fn(&str) -> String,
    out: &mut Vec<Redaction>,
) {
    let listed = run(
        home,
        &["--root", root, "ls", "--json", "--harness", harness],
    );
    assert_eq!(code(&listed), 0, "{root}: {}", stderr(&listed));
    let sessions = ndjson(&listed);
    assert!(!sessions.is_empty(), "{root}: no session listed");
    for session in sessions {
        let id = session["session"].as_str().expect("session id");
        let path = file(session["path"].as_str().expect("path"));
        let target = format!("local:{harness}/{id}");
        let redacted = read(home, root, &target, true);
        let plain = read(home, root, &target, false);
        assert_eq!(redacted.len(), plain.len(), "{target}: record counts");
        for (r, p) in redacted.iter().zip(&plain) {
            let record = r["id"].as_str().expect("record id");
            assert_eq!(r["id"], p["id"], "{target}: records in one order");
            let mut found = Vec::new();
            diff(r, p, &mut found);
            out.extend(found.into_iter().map(|(rule, value)| {
                (path.clone(), record.to_string(), rule, json_string(&value))
            }));
        }
    }
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

/// The redactions that make `plain` into `redacted`, anywhere in a record: (rule, value).
fn diff(redacted: &Value, plain: &Value, out: &mut Vec<(String, String)>) {
    match (redacted, plain) {
        (Value::Object(r), Value::Object(p)) => {
            assert_eq!(
                r.keys().collect::<Vec<_>>(),
                p.keys().collect::<Vec<_>>(),
                "keys stay"
            );
            for (key, value) in r {
                diff(value, &p[key], out);
            }
        }
        (Value::Array(r), Value::Array(p)) => {
            assert_eq!(r.len(), p.len(), "arrays keep their length");
            for (r, p) in r.iter().zip(p) {
                diff(r, p, out);
            }
        }
        (Value::String(r), Value::String(p)) => align(r, p, out),
        // A number under a secret name becomes a marker.
        (Value::String(r), other) if r.starts_with("[REDACTED:") && r.ends_with(']') => {
            out.push((r[10..r.len() - 1].to_string(), other.to_string()));
        }
        (r, p) => assert_eq!(r, p, "only strings are redacted"),
    }
}

/// The markers of `redacted` against `plain`: the text between them is the same in both, and
/// each marker stands for the value it replaced, which never starts or ends inside an escape
/// sequence (`\"`, `\n`). A marker already in `plain` (a transcript quoting a redacted one)
/// is text, not a redaction.
fn align(redacted: &str, plain: &str, out: &mut Vec<(String, String)>) {
    const OPEN: &str = "[REDACTED:";
    let mut at = 0; // in `plain`
    let mut rest = redacted;
    loop {
        let Some(start) = rest.find(OPEN) else {
            assert_eq!(&plain[at..], rest, "the text after the last marker stays");
            return;
        };
        let (before, marker_on) = rest.split_at(start);
        assert!(
            plain[at..].starts_with(before),
            "the text before a marker stays: {before:?} in {plain:?}"
        );
        at += before.len();
        let end = marker_on.find(']').expect("a marker closes") + 1;
        let marker = &marker_on[..end];
        rest = &marker_on[end..];
        if plain[at..].starts_with(marker) {
            at += marker.len();
            continue;
        }
        // The value runs to where the text after the marker, up to the next one, resumes.
        let next = rest.find(OPEN).unwrap_or(rest.len());
        let after = &rest[..next];
        assert!(!after.is_empty() || next == rest.len(), "adjacent markers");
        let value_end = if next == rest.len() {
            assert!(plain.ends_with(after), "the text after a marker stays");
            plain.len() - after.len()
        } else {
            at + 1
                + plain[at + 1..]
                    .find(after)
                    .expect("the text after a marker stays")
        };
        let value = &plain[at..value_end];
        let rule = marker[OPEN.len()..marker.len() - 1].to_string();
        let odd_backslashes =
            |text: &str| text.bytes().rev().take_while(|b| *b == b'\\').count() % 2 == 1;
        assert!(
            !odd_backslashes(&plain[..at]) && !odd_backslashes(value),
            "[REDACTED:{rule}] splits an escape: {value:?} in {plain:?}"
        );
        out.push((rule, value.to_string()));
        at = value_end;
    }
}

/// `tests/fixtures/<dump>` loaded into `<dir>/<db>`.
pub(crate) fn load_dump(dump: &str, db: &str, dir: &Path) {
    let status = Command::new("sqlite3")
        .arg(dir.join(db))
        .arg(format!(".read {}", fixtures().join(dump).display()))
        .status()
        .expect("the sqlite3 CLI (installed by .ci/install-deps)");
    assert!(status.success(), "{dump} loads");
}

/// Every redaction over every fixture and the precision corpus.
fn actual() -> Vec<Redaction> {
    let base = fixtures();
    let home = tempfile::tempdir().unwrap();
    let relative = |path: &str| {
        Path::new(path)
            .strip_prefix(&base)
            .unwrap_or_else(|_| panic!("{path} is under tests/fixtures"))
            .display()
            .to_string()
    };
    let mut out = Vec::new();
    for (harness, dir) in HOMES {
        let root = format!("{harness}={}", base.join(dir).display());
        redactions_under(home.path(), harness, &root, &relative, &mut out);
    }
    for (harness, db, dump) in DUMPS {
        let dir = tempfile::tempdir().unwrap();
        load_dump(dump, db, dir.path());
        let root = format!("{harness}={}", dir.path().display());
        let named = |_: &str| dump.to_string();
        redactions_under(home.path(), harness, &root, &named, &mut out);
    }
    out
}

#[test]
fn the_redactions_over_every_fixture_and_the_precision_corpus_are_the_reviewed_list() {
    let got = actual();
    let got_set: BTreeSet<Redaction> = got.iter().cloned().collect();
    assert_eq!(
        got.len(),
        got_set.len(),
        "one value redacted twice in a record"
    );
    let want = expected();
    if got_set != want {
        let line =
            |(file, record, rule, value): &Redaction| format!("{file}\t{record}\t{rule}\t{value}");
        let unexpected: Vec<String> = got_set.difference(&want).map(line).collect();
        let missing: Vec<String> = want.difference(&got_set).map(line).collect();
        let all: Vec<String> = got_set.iter().map(line).collect();
        panic!(
            "redactions differ from tests/fixtures/precision/expected-redactions.tsv\n\
             not in the list (false positives?):\n{}\n\
             listed but not made (secrets left?):\n{}\n\
             all redactions made:\n{}",
            unexpected.join("\n"),
            missing.join("\n"),
            all.join("\n")
        );
    }
}

#[test]
fn every_transcript_in_the_fixtures_is_covered() {
    let mut covered: BTreeSet<String> = HOMES
        .iter()
        .map(|(_, dir)| dir.split('/').next().unwrap().to_string())
        .chain(
            DUMPS
                .iter()
                .map(|(_, _, d)| d.split('/').next().unwrap().to_string()),
        )
        .chain(NOT_TRANSCRIPTS.iter().map(|s| s.to_string()))
        .collect();
    covered.insert("precision".into());
    let present: BTreeSet<String> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        present, covered,
        "a fixture directory that this test does not read"
    );
    // Within `opencode/`, the legacy home and every dump.
    let mut opencode: Vec<String> = std::fs::read_dir(fixtures().join("opencode"))
        .unwrap()
        .map(|e| format!("opencode/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    opencode.sort();
    let mut read: Vec<String> = DUMPS
        .iter()
        .map(|(_, _, d)| d.to_string())
        .filter(|d| d.starts_with("opencode/"))
        .collect();
    read.push("opencode/legacy-1.1.65".into());
    read.sort();
    assert_eq!(opencode, read);
}
