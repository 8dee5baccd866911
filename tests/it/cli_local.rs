//! The local slice end to end: the real binary over real files in a temp `$HOME`, written
//! while being read — paging, pending tails, resets, torn lines, bad arguments, exit codes.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{code, ids, ndjson, page, records, run, stderr};

const SESSION: &str = "3f1c2a77-0000-4000-8000-000000000001";

struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_path_buf();
        fs::create_dir_all(home.join(".claude/projects/-work-app")).unwrap();
        Home { _dir: dir, home }
    }
    fn file(&self, id: &str) -> PathBuf {
        self.home
            .join(format!(".claude/projects/-work-app/{id}.jsonl"))
    }
    fn write(&self, id: &str, bytes: &[u8]) {
        fs::write(self.file(id), bytes).unwrap();
    }
    fn append(&self, id: &str, bytes: &[u8]) {
        OpenOptions::new()
            .append(true)
            .open(self.file(id))
            .unwrap()
            .write_all(bytes)
            .unwrap();
    }
    fn run(&self, args: &[&str]) -> std::process::Output {
        run(&self.home, args)
    }
    fn json(&self, args: &[&str]) -> Vec<Value> {
        let out = self.run(args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        ndjson(&out)
    }
}

fn line(value: Value) -> String {
    format!("{value}\n")
}

/// A session with every kind, multi-block lines, metadata between, and monitor events.
fn generated_session(turns: usize) -> String {
    let mut out = String::new();
    for i in 0..turns {
        let ts = format!("2026-11-02T10:{:02}:{:02}.000Z", i / 60 % 60, i % 60);
        out += &line(
            serde_json::json!({"type":"user","uuid":format!("u-{i}"),"timestamp":ts,"message":{"role":"user","content":format!("prompt {i}")}}),
        );
        out += &line(
            serde_json::json!({"type":"progress","uuid":format!("p-{i}"),"data":{"type":"hook_progress"}}),
        );
        out += &line(
            serde_json::json!({"type":"assistant","uuid":format!("a-{i}"),"timestamp":ts,"message":{"id":format!("msg_{i}"),"role":"assistant","content":[
            {"type":"text","text":format!("answer {i}")},
            {"type":"tool_use","id":format!("toolu_{i}"),"name":"Bash","input":{"command":format!("echo {i}")}}]}}),
        );
        out += &line(
            serde_json::json!({"type":"user","uuid":format!("r-{i}"),"timestamp":ts,"message":{"role":"user","content":[
            {"type":"tool_result","tool_use_id":format!("toolu_{i}"),"content":format!("{i}\n"),"is_error":false}]}}),
        );
        if i % 10 == 0 {
            let prompt = format!(
                "<task-notification><summary>Monitor event: &quot;watch&quot;</summary><event>tick {i}</event></task-notification>"
            );
            out += &line(
                serde_json::json!({"type":"queue-operation","operation":"enqueue","timestamp":ts,"sessionId":SESSION,"content":prompt}),
            );
            out += &line(
                serde_json::json!({"type":"attachment","uuid":format!("m-{i}"),"parentUuid":format!("r-{i}"),"timestamp":ts,
                "attachment":{"type":"queued_command","prompt":prompt,"commandMode":"task-notification","source_uuid":format!("s-{i}"),"delivery_id":format!("d-{i}")}}),
            );
            out += &line(
                serde_json::json!({"type":"queue-operation","operation":"remove","timestamp":ts,"sessionId":SESSION,"commandUuid":format!("s-{i}"),"deliveryId":format!("d-{i}")}),
            );
        }
    }
    out
}

fn target() -> String {
    format!("local:{}", &SESSION[..8])
}

/// `--all --json` of a session of several chunks writes its record lines on a thread of their
/// own (`render::ndjson::Pipeline`): every record comes out once, in order, before the page
/// line, the same as a filtered read (which writes them on the reading thread); and a reader
/// that stops after the first line ends it quietly, with the broken pipe's exit code 0.
#[test]
fn all_of_several_chunks_writes_every_record_in_order_and_stops_at_a_closed_pipe() {
    let home = Home::new();
    let turns = 24_000;
    // A key in every 1,000th prompt: the batches are redacted on the writing thread, and
    // before the filter on the other path.
    let key = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    let session = generated_session(turns).replace("\"prompt 7", &format!("\"prompt 7 {key}"));
    home.write(SESSION, session.as_bytes());
    assert!(fs::metadata(home.file(SESSION)).unwrap().len() > 12 << 20);
    let out = home.run(&["read", &target(), "--all", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains(key));
    assert_eq!(
        text.matches("[REDACTED:github]").count(),
        session.matches(key).count()
    );
    assert!(session.matches(key).count() > 1000);
    let lines = ndjson(&out);
    let (last, record_lines) = lines.split_last().unwrap();
    assert_eq!(last["type"], "page");
    assert!(record_lines.iter().all(|l| l["type"] == "record"));
    let all_ids = ids(&records(&lines));
    assert_eq!(all_ids.len(), turns * 4 + turns / 10);
    let unique: std::collections::HashSet<_> = all_ids.iter().collect();
    assert_eq!(unique.len(), all_ids.len());
    // Written on the reading thread: a filter that keeps every record.
    let every_kind = "user,assistant,tool_call,tool_result,notice,terminal";
    let filtered = home.run(&["read", &target(), "--all", "--json", "--kind", every_kind]);
    assert_eq!(code(&filtered), 0, "{}", stderr(&filtered));
    assert_eq!(ids(&records(&ndjson(&filtered))), all_ids);
    // The same record lines, byte for byte (the page line says what the filter left out).
    let record_bytes = |stdout: &[u8]| {
        let text = String::from_utf8_lossy(stdout).into_owned();
        let end = text.trim_end().rfind('\n').unwrap();
        text[..end].to_string()
    };
    assert!(record_bytes(&filtered.stdout) == record_bytes(&out.stdout));
    let plain = home.run(&["read", &target(), "--all", "--json", "--no-redact"]);
    assert_eq!(
        String::from_utf8_lossy(&plain.stdout).matches(key).count(),
        session.matches(key).count()
    );

    let mut child = crate::support::clankie(&home.home)
        .args(["read", &target(), "--all", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    assert!(first.starts_with("{\"type\":\"record\""), "{first}");
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
}

#[test]
fn head_since_tail_and_all_agree() {
    let home = Home::new();
    home.write(SESSION, generated_session(80).as_bytes());
    let all = home.json(&["read", &target(), "--all", "--json"]);
    let all_ids = ids(&records(&all));
    // 80 × (user, text, tool_call, tool_result) + 8 monitor events.
    assert_eq!(all_ids.len(), 80 * 4 + 8);
    let monitor: Vec<_> = records(&all)
        .into_iter()
        .filter(|r| r["kind"] == "notice")
        .collect();
    assert_eq!(monitor.len(), 8, "one notice per monitor event");
    assert_eq!(monitor[0]["text"], "Monitor event: \"watch\": tick 0");
    for limit in ["1", "37", "200"] {
        let mut lines = home.json(&["read", &target(), "--head", "--json", "--limit", limit]);
        let mut paged = Vec::new();
        loop {
            paged.extend(ids(&records(&lines)));
            let p = page(&lines);
            assert_eq!(p["session"], SESSION);
            if p["more"] == false {
                break;
            }
            let cursor = p["cursor"].as_str().unwrap().to_string();
            assert!(
                cursor.len() <= 1024
                    && cursor
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            );
            lines = home.json(&[
                "read",
                &target(),
                "--since",
                &cursor,
                "--json",
                "--limit",
                limit,
            ]);
        }
        assert_eq!(paged, all_ids, "paging with --limit {limit}");
        let tail = home.json(&["read", &target(), "--tail", "--json", "--limit", limit]);
        let n: usize = limit.parse().unwrap();
        assert_eq!(
            ids(&records(&tail)),
            all_ids[all_ids.len() - n..],
            "tail --limit {limit}"
        );
    }
    // The default is the tail of 50, in text (a record's first line is its time; continuation
    // lines are indented, a change of day is headed `── DATE`).
    let text = home.run(&[&target()]);
    assert_eq!(code(&text), 0);
    assert_eq!(
        String::from_utf8_lossy(&text.stdout)
            .lines()
            .filter(|l| !l.starts_with("  ") && !l.starts_with("-- ") && !l.starts_with("── "))
            .count(),
        50
    );
}

#[test]
fn pending_tail_and_growth() {
    let home = Home::new();
    home.write(SESSION, generated_session(3).as_bytes());
    let first = home.json(&["read", &target(), "--json"]);
    let cursor = page(&first)["cursor"].as_str().unwrap().to_string();
    let late = line(
        serde_json::json!({"type":"user","uuid":"late","message":{"role":"user","content":"late prompt"}}),
    );
    let (a, b) = late.as_bytes().split_at(25);
    home.append(SESSION, a);
    for args in [
        vec!["--since", cursor.as_str()],
        vec!["--tail"],
        vec!["--head", "--limit", "200"],
    ] {
        let mut all = vec!["read", "local:3f1c2a77", "--json"];
        all.extend(args);
        let lines = home.json(&all);
        assert_eq!(page(&lines)["pending_tail"], true, "{all:?}");
        assert!(!ids(&records(&lines)).contains(&"late#0".to_string()));
    }
    let pending = home.json(&["read", &target(), "--since", &cursor, "--json"]);
    assert!(records(&pending).is_empty());
    home.append(SESSION, b);
    let done = home.json(&[
        "read",
        &target(),
        "--since",
        page(&pending)["cursor"].as_str().unwrap(),
        "--json",
    ]);
    assert_eq!(ids(&records(&done)), ["late#0"]);
    let p = page(&done);
    assert_eq!(
        (
            p["pending_tail"].clone(),
            p["reset"].clone(),
            p["older"].clone()
        ),
        (false.into(), false.into(), true.into())
    );
}

#[test]
fn rewritten_or_truncated_sources_reset() {
    let home = Home::new();
    let original = generated_session(10);
    home.write(SESSION, original.as_bytes());
    let head = home.json(&["read", &target(), "--head", "--limit", "5", "--json"]);
    let cursor = page(&head)["cursor"].as_str().unwrap().to_string();
    // Same size, one byte before the cursor changed.
    let rewritten = original.replacen("prompt 0", "prompt X", 1);
    assert_eq!(rewritten.len(), original.len());
    // Truncated, then regrown past the old size by another writer.
    let truncated = original[..200].to_string();
    for changed in [rewritten, truncated] {
        home.write(SESSION, changed.as_bytes());
        let lines = home.json(&["read", &target(), "--since", &cursor, "--json"]);
        let p = page(&lines);
        assert_eq!(p["reset"], true);
        let recs = records(&lines);
        assert_eq!(recs[0]["kind"], "notice");
        assert!(recs[0]["text"].as_str().unwrap().contains("restarting"));
        let strict = home.run(&["read", &target(), "--since", &cursor, "--json", "--strict"]);
        assert_eq!(code(&strict), 5, "{}", stderr(&strict));
        assert_eq!(stderr(&strict).lines().count(), 1);
    }
}

#[test]
fn torn_line_mid_file() {
    let home = Home::new();
    let mut text = generated_session(2);
    let torn_at = text.len();
    text +=
        "{\"type\":\"pr-link\",\"sessionId\":\"x\",\"prNu{\"parentUuid\":null,\"type\":\"user\"\n";
    text += &generated_session(1)
        .replace("u-0", "u-next")
        .replace("a-0", "a-next")
        .replace("r-0", "r-next")
        .replace("m-0", "m-next");
    home.write(SESSION, text.as_bytes());
    let out = home.run(&["read", &target(), "--all", "--json"]);
    assert_eq!(code(&out), 0);
    assert!(
        stderr(&out).contains(&format!("byte {torn_at}")),
        "{}",
        stderr(&out)
    );
    let recs = records(&ndjson(&out));
    let torn: Vec<_> = recs
        .iter()
        .filter(|r| r["id"] == format!("@{torn_at}"))
        .collect();
    assert_eq!(torn.len(), 1);
    assert_eq!(torn[0]["kind"], "notice");
    assert!(
        ids(&recs).contains(&"u-next#0".to_string()),
        "the read goes on after the torn line"
    );
    let strict = home.run(&["read", &target(), "--all", "--json", "--strict"]);
    assert_eq!(code(&strict), 6);
    assert!(
        stderr(&strict).contains(&format!("byte {torn_at}")) && stderr(&strict).contains(SESSION)
    );
}

#[test]
fn usage_errors_exit_2_before_any_read() {
    let home = Home::new();
    home.write(SESSION, generated_session(2).as_bytes());
    home.write(
        "3f1c2a99-0000-4000-8000-000000000002",
        generated_session(2).as_bytes(),
    );
    let other = home.json(&["read", "local:3f1c2a99", "--json"]);
    let foreign = page(&other)["cursor"].as_str().unwrap().to_string();
    let mine = page(&home.json(&["read", &target(), "--json"]))["cursor"]
        .as_str()
        .unwrap()
        .to_string();
    let mut tampered = mine.clone().into_bytes();
    tampered[10] = if tampered[10] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let t = target();
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["read", &t, "--limit", "0"], 2),
        (vec!["read", &t, "--limit", "201"], 2),
        (vec!["read", &t, "--since", "not a cursor!"], 2),
        (vec!["read", &t, "--since", &tampered], 2),
        (vec!["read", &t, "--since", &foreign], 2),
        (vec!["read", &t, "--head", "--tail"], 2),
        (vec!["--root", "nosuch=/tmp", "read", &t], 2),
        (vec!["read", "local:nosuch/3f1c2a"], 2),
        (vec!["read", "local:3f1c2a"], 4), // ambiguous: two sessions share it
        (vec!["read", "local:3f1c"], 2),   // too short to be a prefix
        (vec!["read", "local:ffffffff"], 4),
        (vec!["read", "nohost"], 4), // a bare SESSION is on `local`
        (vec!["read", "no:"], 2),
        // Every subcommand that reaches hosts parses --root first, `hosts` too.
        (vec!["--root", "claude", "hosts"], 2),
        (vec!["--root", "claude=", "hosts", "--check"], 2),
        (vec!["--root", "nosuch=/tmp", "ls"], 2),
    ];
    for (args, want) in cases {
        let out = home.run(&args);
        assert_eq!(code(&out), want, "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
        assert!(!stderr(&out).is_empty(), "{args:?}: silent failure");
    }
    let ambiguous = home.run(&["read", "local:3f1c2a"]);
    let err = stderr(&ambiguous);
    assert!(
        err.contains(SESSION) && err.contains("3f1c2a99-0000-4000-8000-000000000002"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1);
    assert!(
        home.json(&["read", "local:claude/3f1c2a99", "--json"])
            .len()
            > 1
    );
}

#[test]
fn text_output_holds_no_control_bytes() {
    let home = Home::new();
    let nasty = "red \x1b[31mX\x1b[0m osc \x1b]0;pwned\x07 clip \x1b]52;c;aGk=\x1b\\ dcs \x1bPq#0\x1b\\ bel \x07 bs \x08 cr \r c1 \u{9b}2J \u{85} bidi \u{202e}txt\u{202c} \u{2066}iso\u{2069} del \x7f";
    let mut text = String::new();
    text += &line(
        serde_json::json!({"type":"user","uuid":"u","timestamp":"2026-11-02T10:00:00.000Z","message":{"role":"user","content":nasty}}),
    );
    text += &line(
        serde_json::json!({"type":"assistant","uuid":"a","message":{"content":[{"type":"tool_use","id":"t","name":format!("Ba\x1b[2Jsh{nasty}"),"input":{"k":nasty}}]}}),
    );
    text += &line(
        serde_json::json!({"type":"user","uuid":"r","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":nasty}]}}),
    );
    text += &line(
        serde_json::json!({"type":"system","uuid":"s","subtype":"local_command","content":format!("<local-command-stdout>{nasty}</local-command-stdout>")}),
    );
    home.write(SESSION, text.as_bytes());
    for extra in [&[][..], &["--full"][..], &["--color", "never"][..]] {
        let mut args = vec!["read", "local:3f1c2a77", "--all"];
        args.extend_from_slice(extra);
        let out = home.run(&args);
        assert_eq!(code(&out), 0);
        let stdout = String::from_utf8(out.stdout.clone()).unwrap();
        assert!(
            stdout.contains("red X") && stdout.contains("Bash"),
            "{stdout}"
        );
        for c in stdout.chars() {
            let bad = (c < ' ' && c != '\n' && c != '\t')
                || ('\u{7f}'..='\u{9f}').contains(&c)
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c);
            assert!(!bad, "control {c:?} in text output");
        }
    }
    // Error messages too.
    let out = home.run(&["read", "local:abc\x1b[31mdef\x07"]);
    assert_eq!(code(&out), 2);
    assert!(
        !out.stderr.iter().any(|&b| b == 0x1b || b == 0x07),
        "{}",
        stderr(&out)
    );
}

#[test]
fn ls_and_roots() {
    let home = Home::new();
    home.write(SESSION, generated_session(1).as_bytes());
    let listed = home.json(&["ls", "--json"]);
    assert_eq!(listed.len(), 1);
    let s = &listed[0];
    assert_eq!(
        (
            s["type"].as_str(),
            s["harness"].as_str(),
            s["session"].as_str()
        ),
        (Some("session"), Some("claude"), Some(SESSION))
    );
    assert_eq!(s["size"], fs::metadata(home.file(SESSION)).unwrap().len());
    assert!(s["mtime"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        Path::new(s["path"].as_str().unwrap()),
        fs::canonicalize(home.file(SESSION)).unwrap()
    );
    // CLAUDE_CONFIG_DIR and --root move the home.
    let other = tempfile::tempdir().unwrap();
    fs::create_dir_all(other.path().join("projects/-x")).unwrap();
    fs::write(
        other.path().join("projects/-x/abcdef12.jsonl"),
        generated_session(1),
    )
    .unwrap();
    let out = std::process::Command::new(crate::support::BIN)
        .args(["ls", "--json"])
        .env_clear()
        .env("HOME", &home.home)
        .env("CLAUDE_CONFIG_DIR", other.path())
        .output()
        .unwrap();
    assert_eq!(ndjson(&out)[0]["session"], "abcdef12");
    let root = format!("claude={}", other.path().display());
    assert_eq!(
        home.json(&["--root", &root, "ls", "--json"])[0]["session"],
        "abcdef12"
    );
    assert_eq!(code(&home.run(&["ls", "--harness", "nosuch"])), 2);
}
