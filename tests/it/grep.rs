//! `clankie-read grep` end to end: the records it finds across harnesses are exactly
//! those `read --all --json` gives whose text holds the literal; hosts are searched together
//! (this machine, an SSH test user) and a failing one leaves the others' matches printed with
//! exit 3; secrets are redacted before matching and printing; case, `-F`, JSON-escaped
//! literals, `-l`/`-c`/`-A`/`-B`/`--json` shapes; exit 1 with nothing printed when nothing
//! matches; hostile session names over SSH never reach a shell; over SSH a search again reads
//! only what changed (the cache), and a cache that cannot be opened costs speed, not results.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::common::sshd::sshd_or_skip;
use crate::support::{clankie, code, ndjson, stderr};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// `--root` options for the fixture homes of Claude, Codex, Pi and Gemini.
fn fixture_roots() -> Vec<String> {
    let f = fixtures();
    ["claude", "codex", "pi", "gemini"]
        .into_iter()
        .flat_map(|h| ["--root".to_string(), format!("{h}={}", f.join(h).display())])
        .collect()
}

fn run(home: &Path, args: &[String]) -> Output {
    clankie(home).args(args).output().unwrap()
}

fn args(before: &[String], rest: &[&str]) -> Vec<String> {
    before
        .iter()
        .cloned()
        .chain(rest.iter().map(|s| s.to_string()))
        .collect()
}

/// The pieces of a `record` object's text that `grep` searches: a message's text, a tool
/// call's name and each value of its input, a result's output.
fn record_texts(record: &Value) -> Vec<String> {
    fn leaves(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Null => {}
            Value::String(s) => out.push(s.clone()),
            Value::Bool(_) | Value::Number(_) => out.push(v.to_string()),
            Value::Array(items) => items.iter().for_each(|i| leaves(i, out)),
            Value::Object(map) => map.values().for_each(|i| leaves(i, out)),
        }
    }
    let mut out = Vec::new();
    for key in ["text", "name", "output"] {
        if let Some(s) = record[key].as_str() {
            out.push(s.to_string());
        }
    }
    leaves(&record["input"], &mut out);
    out
}

type Key = (String, String, String);

fn key(record: &Value) -> Key {
    (
        record["harness"].as_str().unwrap().to_string(),
        record["session"].as_str().unwrap().to_string(),
        record["id"].as_str().unwrap().to_string(),
    )
}

#[test]
fn matches_are_exactly_the_records_whose_text_holds_the_literal() {
    let home = tempfile::tempdir().unwrap();
    let roots = fixture_roots();
    // Every record of every session, as `read --all --json` gives it.
    let listed = run(home.path(), &args(&roots, &["ls", "--json"]));
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    let mut all = Vec::new();
    for s in ndjson(&listed) {
        let target = format!(
            "local:{}/{}",
            s["harness"].as_str().unwrap(),
            s["session"].as_str().unwrap()
        );
        let read = run(
            home.path(),
            &args(&roots, &["read", &target, "--all", "--json"]),
        );
        assert_eq!(code(&read), 0, "{target}: {}", stderr(&read));
        all.extend(ndjson(&read).into_iter().filter(|l| l["type"] == "record"));
    }
    let mut harnesses_matched = BTreeSet::new();
    for literal in [
        "marker", "the", "error", "file", "\"", "é", "Codex", "/tmp/",
    ] {
        // The notice standing in for a session that gave no record is the reader's, not the
        // session's: grep never matches it (docs/ndjson.md).
        let expected: BTreeSet<Key> = all
            .iter()
            .filter(|r| !(r["kind"] == "notice" && r["id"].as_str().unwrap().starts_with("empty@")))
            .filter(|r| record_texts(r).iter().any(|t| t.contains(literal)))
            .map(key)
            .collect();
        let out = run(
            home.path(),
            &args(&roots, &["grep", "-F", "-s", "--json", literal]),
        );
        let lines = ndjson(&out);
        let found: BTreeSet<Key> = lines
            .iter()
            .filter(|l| l["type"] == "match")
            .map(|l| {
                assert!(l["record"]["type"] == "record", "{l}");
                key(&l["record"])
            })
            .collect();
        assert_eq!(
            found.symmetric_difference(&expected).collect::<Vec<_>>(),
            Vec::<&Key>::new(),
            "{literal:?}: found (left) or expected (right) only"
        );
        assert_eq!(code(&out), if expected.is_empty() { 1 } else { 0 });
        let summary = lines.last().unwrap();
        assert_eq!(summary["type"], "summary");
        assert_eq!(summary["matches"], expected.len());
        assert_eq!(summary["hosts_failed"], 0);
        harnesses_matched.extend(expected.iter().map(|k| k.0.clone()));
    }
    assert_eq!(
        harnesses_matched.into_iter().collect::<Vec<_>>(),
        ["claude", "codex", "gemini", "pi"]
    );
}

/// A Claude line of `uuid` with the user's `text`.
fn user_line(uuid: &str, minute: u32, text: &str) -> String {
    json!({"type":"user","uuid":uuid,"timestamp":format!("2026-11-02T10:{minute:02}:00Z"),
        "message":{"role":"user","content":text}})
    .to_string()
        + "\n"
}

const SECRET: &str = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5";
const SESSION: &str = "9e9e0000-0000-4000-8000-000000000001";

/// A temp `$HOME` with one Claude session of a few prompts; returns it and the session file.
fn scratch() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".claude/projects/-g");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{SESSION}.jsonl"));
    let mut body = String::new();
    body += &user_line("u0", 0, "Deploy the \"quoted\" thing");
    body += &user_line("u1", 1, "nothing here");
    body += &user_line("u2", 2, &format!("my token is {SECRET}"));
    body += &user_line("u3", 3, "a.b(c is literal");
    body += &user_line("u4", 4, "nothing again");
    body += &user_line("u5", 5, "another deploy");
    body += &user_line("u6", 6, "café au lait");
    // The same character written as JSON escapes it (as Python writes it).
    body += "{\"type\":\"user\",\"uuid\":\"u7\",\"timestamp\":\"2026-11-02T10:07:00Z\",\"message\":{\"role\":\"user\",\"content\":\"caf\\u00e9 noir\"}}\n";
    std::fs::write(&file, body).unwrap();
    (home, file)
}

fn grep(home: &Path, rest: &[&str]) -> Output {
    run(home, &args(&["grep".to_string()], rest))
}

fn matched_ids(out: &Output) -> Vec<String> {
    ndjson(out)
        .iter()
        .filter(|l| l["type"] == "match")
        .map(|l| l["record"]["id"].as_str().unwrap().to_string())
        .collect()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn case_fixed_strings_and_json_escaped_literals() {
    let (home, _) = scratch();
    let h = home.path();
    // Smart case: lowercase ignores case, an uppercase letter makes it exact.
    assert_eq!(
        matched_ids(&grep(h, &["--json", "deploy"])),
        ["u0#0", "u5#0"]
    );
    assert_eq!(matched_ids(&grep(h, &["--json", "Deploy"])), ["u0#0"]);
    assert_eq!(matched_ids(&grep(h, &["--json", "-s", "deploy"])), ["u5#0"]);
    assert_eq!(
        matched_ids(&grep(h, &["--json", "-i", "DEPLOY"])),
        ["u0#0", "u5#0"]
    );
    // -F takes metacharacters as they are; as a regex the same text is refused (exit 2).
    assert_eq!(matched_ids(&grep(h, &["--json", "-F", "a.b(c"])), ["u3#0"]);
    let bad = grep(h, &["a.b(c"]);
    assert_eq!(code(&bad), 2, "{}", stderr(&bad));
    assert!(stderr(&bad).contains("unclosed group"), "{}", stderr(&bad));
    assert!(bad.stdout.is_empty());
    // A quote and a non-ASCII character, raw or escaped in the line.
    assert_eq!(
        matched_ids(&grep(h, &["--json", "-F", "\"quoted\" thing"])),
        ["u0#0"]
    );
    assert_eq!(matched_ids(&grep(h, &["--json", "café"])), ["u6#0", "u7#0"]);
    assert_eq!(
        matched_ids(&grep(h, &["--json", "-s", "café"])),
        ["u6#0", "u7#0"]
    );
    // Spans are byte offsets into `text`.
    let out = grep(h, &["--json", "-s", "noir"]);
    let m = &ndjson(&out)[0];
    assert_eq!(m["text"], "café noir");
    assert_eq!(m["spans"], json!([[6, 10]]));
}

#[test]
fn nothing_matched_is_exit_1_with_nothing_printed() {
    let (home, _) = scratch();
    for extra in [&[][..], &["-c"], &["-l"]] {
        let out = grep(home.path(), &[extra, &["zzz-not-there"]].concat());
        assert_eq!(code(&out), 1, "{extra:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{extra:?}: {}", stdout(&out));
        assert_eq!(stderr(&out), "");
    }
    // NDJSON still ends with its summary.
    let out = grep(home.path(), &["--json", "zzz-not-there"]);
    assert_eq!(code(&out), 1);
    assert_eq!(
        ndjson(&out),
        [json!({"type":"summary","matches":0,"sessions":0,"hosts_failed":0})]
    );
}

#[test]
fn secrets_are_never_printed_and_their_rule_can_be_searched() {
    let (home, _) = scratch();
    let h = home.path();
    for extra in [&["--json"][..], &[], &["-C", "2"]] {
        let out = grep(h, &[extra, &["-F", SECRET]].concat());
        assert_eq!(code(&out), 1, "{extra:?}");
        assert!(!stdout(&out).contains("ghp_"), "{}", stdout(&out));
        assert!(!stdout(&out).contains("\"match\""), "{}", stdout(&out));
        let out = grep(h, &[extra, &["-F", "my token"]].concat());
        assert_eq!(code(&out), 0, "{extra:?}");
        assert!(!stdout(&out).contains(SECRET), "{}", stdout(&out));
        assert!(
            stdout(&out).contains("[REDACTED:github]"),
            "{}",
            stdout(&out)
        );
    }
    assert_eq!(
        matched_ids(&grep(h, &["--json", "REDACTED:github"])),
        ["u2#0"]
    );
    assert_eq!(
        matched_ids(&grep(h, &["--json", "-F", "[REDACTED"])),
        ["u2#0"]
    );
}

#[test]
fn counts_sessions_context_and_json_shapes() {
    let (home, _) = scratch();
    let h = home.path();
    let out = grep(h, &["-c", "deploy"]);
    assert_eq!(code(&out), 0);
    assert_eq!(stdout(&out), format!("local:{SESSION}:2\n"));
    let out = grep(h, &["-l", "deploy"]);
    assert_eq!(stdout(&out), format!("local:{SESSION}\n"));
    let out = grep(h, &["-c", "--json", "deploy"]);
    assert_eq!(
        ndjson(&out),
        [
            json!({"type":"count","host":"local","harness":"claude","session":SESSION,"matches":2}),
            json!({"type":"summary","matches":2,"sessions":1,"hosts_failed":0}),
        ]
    );
    // -m: at most N per session.
    assert_eq!(
        matched_ids(&grep(h, &["--json", "-m", "1", "deploy"])),
        ["u0#0"]
    );
    assert_eq!(
        stdout(&grep(h, &["-c", "-m", "1", "deploy"])),
        format!("local:{SESSION}:1\n")
    );

    // Context records of the same session, in order, typed `context`.
    let out = grep(h, &["--json", "-A", "1", "-B", "1", "-s", "deploy|a.b"]);
    let shape: Vec<(String, String)> = ndjson(&out)
        .iter()
        .filter(|l| l["type"] != "summary")
        .map(|l| {
            assert_eq!(l["host"], "local");
            assert_eq!(l["session"], SESSION);
            (
                l["type"].as_str().unwrap().to_string(),
                l["record"]["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("context", "u2#0"),
        ("match", "u3#0"),
        ("context", "u4#0"),
        ("match", "u5#0"),
        ("context", "u6#0"),
    ]
    .iter()
    .map(|(t, id)| (t.to_string(), id.to_string()))
    .collect();
    assert_eq!(shape, want);
    // Text: a heading, match lines marked `:`, context lines `-`, `--` between groups.
    let out = grep(h, &["-C", "1", "-s", "Deploy|lait", "--color", "never"]);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("local:{SESSION} (claude)"));
    assert!(
        lines[1].ends_with(": Deploy the \"quoted\" thing"),
        "{text}"
    );
    assert!(lines[1].contains("user"), "{text}");
    assert!(lines[2].ends_with("- nothing here"), "{text}");
    assert_eq!(lines[3], "--", "{text}");
    assert!(lines[4].ends_with("- another deploy"), "{text}");
    assert!(lines[5].ends_with(": café au lait"), "{text}");
    assert!(lines[6].ends_with("- café noir"), "{text}");
    // Colour on request: the match highlighted.
    let out = grep(h, &["-s", "lait", "--color", "always"]);
    assert!(
        stdout(&out).contains("\x1b[1;31mlait\x1b[0m"),
        "{}",
        stdout(&out)
    );
}

/// A date in `--after` begins at midnight in the local time zone (`$TZ`), which a search reads
/// only when a time is asked for: the scratch session's records are written from 10:00 UTC on
/// 2026-11-02, which is still the day before in UTC−12 and already that day in UTC+12.
#[test]
fn a_date_in_after_begins_at_local_midnight() {
    let (home, _) = scratch();
    let in_zone = |tz: &str| {
        clankie(home.path())
            .env("TZ", tz)
            .args(["grep", "--json", "--after", "2026-11-02", "deploy"])
            .output()
            .unwrap()
    };
    // POSIX `TZ` offsets are west of UTC: `UTC+12` is twelve hours behind.
    let behind = in_zone("UTC+12");
    assert_eq!(code(&behind), 1, "{}", stderr(&behind));
    assert!(matched_ids(&behind).is_empty());
    let ahead = in_zone("UTC-12");
    assert_eq!(code(&ahead), 0, "{}", stderr(&ahead));
    assert_eq!(matched_ids(&ahead), ["u0#0", "u5#0"]);
}

#[test]
fn kind_and_time_filters_narrow_the_search() {
    let (home, _) = scratch();
    let h = home.path();
    assert_eq!(
        matched_ids(&grep(
            h,
            &["--json", "--after", "2026-11-02T10:03:00Z", "deploy"]
        )),
        ["u5#0"]
    );
    assert_eq!(
        matched_ids(&grep(
            h,
            &["--json", "--before", "2026-11-02T10:03:00Z", "deploy"]
        )),
        ["u0#0"]
    );
    let out = grep(h, &["--kind", "assistant", "deploy"]);
    assert_eq!(code(&out), 1);
    let out = grep(h, &["--kind", "nope", "deploy"]);
    assert_eq!(code(&out), 2);
    let out = grep(h, &["--harness", "codex", "deploy"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let out = grep(h, &["--harness", "nope", "deploy"]);
    assert_eq!(code(&out), 2);
}

/// A free port nothing listens on: a host there is unreachable.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_failing_host_is_reported_and_the_others_answer_with_exit_3() {
    let (home, _) = scratch();
    let h = home.path();
    let hosts = h.join("hosts.toml");
    let mut toml = format!(
        "[hosts.good]\nlocal = true\nroots = {{ claude = \"{}\" }}\n[hosts.down]\nssh = \"nobody@127.0.0.1:{}\"\n",
        h.join(".claude").display(),
        closed_port()
    );
    // The same session on an SSH test user, when the test sshd runs.
    let sshd = sshd_or_skip();
    let remote = sshd.map(|sshd| {
        let user = "ck_dash";
        let base = format!("grep-{}-two", std::process::id());
        let file = sshd.put_file(
            user,
            Path::new(&base).join(format!(".claude/projects/-g/{SESSION}.jsonl")),
            &std::fs::read(h.join(format!(".claude/projects/-g/{SESSION}.jsonl"))).unwrap(),
        );
        toml += &format!(
            "[hosts.remote]\nssh = \"{}\"\nroots = {{ claude = \"{}\" }}\n",
            sshd.alias(user),
            sshd.home(user).join(&base).join(".claude").display()
        );
        (sshd, file)
    });
    std::fs::write(&hosts, toml).unwrap();
    let mut base = vec!["--hosts".to_string(), hosts.display().to_string()];
    if let Some((sshd, _)) = &remote {
        base.extend([
            "--ssh-config".to_string(),
            sshd.ssh_config().display().to_string(),
        ]);
    }
    let names: Vec<&str> = if remote.is_some() {
        vec!["good", "down", "remote"]
    } else {
        vec!["good", "down"]
    };
    let out = run(
        h,
        &args(&base, &[&["grep", "--json", "deploy"][..], &names].concat()),
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("down: "), "{}", stderr(&out));
    let lines = ndjson(&out);
    let hosts_matched: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l["type"] == "match")
        .map(|l| {
            (
                l["host"].as_str().unwrap(),
                l["record"]["id"].as_str().unwrap(),
            )
        })
        .collect();
    let mut want = vec![("good", "u0#0"), ("good", "u5#0")];
    if remote.is_some() {
        want.extend([("remote", "u0#0"), ("remote", "u5#0")]);
    }
    assert_eq!(hosts_matched, want);
    let error = lines.iter().find(|l| l["type"] == "error").unwrap();
    assert_eq!(error["host"], "down");
    let summary = lines.last().unwrap();
    assert_eq!(summary["hosts_failed"], 1);
    assert_eq!(summary["matches"], want.len());
    // Text: the good hosts' matches on stdout, still exit 3.
    let out = run(
        h,
        &args(&base, &[&["grep", "-c", "deploy"][..], &names].concat()),
    );
    assert_eq!(code(&out), 3);
    let mut counted = format!("good:{SESSION}:2\n");
    if remote.is_some() {
        counted += &format!("remote:{SESSION}:2\n");
    }
    assert_eq!(stdout(&out), counted);
    // Nothing matched anywhere, and a host failed: still 3.
    let out = run(
        h,
        &args(&base, &[&["grep", "zzz-none"][..], &names].concat()),
    );
    assert_eq!(code(&out), 3);
    if let Some((_, file)) = remote {
        let _ = std::fs::remove_dir_all(file.ancestors().nth(4).unwrap());
    }
}

#[test]
fn hostile_session_names_over_ssh_are_searched_and_never_run() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_dash";
    let base = format!("grep-{}-odd", std::process::id());
    let root = sshd.home(user).join(&base).join(".claude");
    let dirs = crate::odd_names::ODD_DIRS;
    for (i, dir) in dirs.iter().enumerate() {
        let id = format!("0dd0b000-0000-4000-8000-0000000000{i:02}");
        sshd.put_file(
            user,
            Path::new(&base)
                .join(".claude/projects")
                .join(dir)
                .join(format!("{id}.jsonl")),
            user_line(&format!("{id}-0"), 0, &format!("needle {i}")).as_bytes(),
        );
    }
    let home = tempfile::tempdir().unwrap();
    let root_arg = format!("claude={}", root.display());
    let alias = sshd.alias(user);
    let base_args = [
        "--ssh-config".to_string(),
        sshd.ssh_config().display().to_string(),
        "--root".to_string(),
        root_arg,
    ];
    let out = run(
        home.path(),
        &args(&base_args, &["grep", "-c", "needle", &alias]),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), dirs.len(), "{text}");
    crate::odd_names::assert_no_raw_controls("grep -c", &out.stdout);
    let out = run(home.path(), &args(&base_args, &["grep", "needle", &alias]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    crate::odd_names::assert_no_raw_controls("grep", &out.stdout);
    let out = run(
        home.path(),
        &args(&base_args, &["grep", "--json", "needle", &alias]),
    );
    assert_eq!(matched_count(&out), dirs.len());
    for place in [
        sshd.home(user),
        root.clone(),
        std::env::current_dir().unwrap(),
    ] {
        assert!(
            !place.join("clankie-pwned").exists(),
            "a name was run in {place:?}"
        );
    }
    let _ = std::fs::remove_dir_all(sshd.home(user).join(&base));
}

/// grep over SSH goes through the cache: a second search reads only the verification windows,
/// one after an append reads the appended bytes (and finds the new match), and a cache that
/// cannot be opened is searched without, with a warning and the same matches.
#[test]
fn searches_over_ssh_read_only_what_changed_and_a_broken_cache_costs_only_speed() {
    let Some(sshd) = sshd_or_skip() else { return };
    let (local, file) = scratch();
    let mut body = std::fs::read(&file).unwrap();
    for i in 0..200 {
        body.extend_from_slice(user_line(&format!("f{i}"), 9, &"filler ".repeat(60)).as_bytes());
    }
    let user = "ck_dash";
    let base = format!("grep-{}-cache", std::process::id());
    let remote = sshd.put_file(
        user,
        Path::new(&base).join(format!(".claude/projects/-g/{SESSION}.jsonl")),
        &body,
    );
    let root = format!(
        "claude={}",
        sshd.home(user).join(&base).join(".claude").display()
    );
    let alias = sshd.alias(user);
    let config = sshd.ssh_config().display().to_string();
    // -> (output, the bytes of session files `-v` says the search read)
    let search = |cache: &Path| {
        let out = clankie(local.path())
            .env("XDG_CACHE_HOME", cache)
            .args(["-v", "--ssh-config", &config, "--root", &root])
            .args(["grep", "-c", "deploy", &alias])
            .output()
            .unwrap();
        let read = stderr(&out)
            .lines()
            .find_map(|l| l.strip_suffix(" bytes of session files read"))
            .and_then(|l| l.rsplit(' ').next())
            .unwrap_or_else(|| panic!("no bytes line: {}", stderr(&out)))
            .parse::<u64>()
            .unwrap();
        (out, read)
    };
    let cache = local.path().join("cache");
    let size = body.len() as u64;
    let (out, first) = search(&cache);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{alias}:{SESSION}:2\n"));
    assert_eq!(first, size);
    let (out, second) = search(&cache);
    assert_eq!(stdout(&out), format!("{alias}:{SESSION}:2\n"));
    assert!(second <= 8192 && second < size / 4, "{second} of {size}");
    let more = user_line("u9", 10, "deploy once more");
    let mut appended = std::fs::OpenOptions::new()
        .append(true)
        .open(&remote)
        .unwrap();
    std::io::Write::write_all(&mut appended, more.as_bytes()).unwrap();
    drop(appended);
    let (out, third) = search(&cache);
    assert_eq!(stdout(&out), format!("{alias}:{SESSION}:3\n"));
    assert!(
        third >= more.len() as u64 && third <= more.len() as u64 + 8192,
        "{third} for {} appended",
        more.len()
    );
    // A cache directory that cannot be made (its parent is a file): searched without it.
    let blocked = local.path().join("not-a-dir");
    std::fs::write(&blocked, b"").unwrap();
    let (out, read) = search(&blocked);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("searching without the cache"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out), format!("{alias}:{SESSION}:3\n"));
    assert_eq!(read, size + more.len() as u64);
    let _ = std::fs::remove_dir_all(sshd.home(user).join(&base));
}

fn matched_count(out: &Output) -> usize {
    ndjson(out).iter().filter(|l| l["type"] == "match").count()
}

/// This machine's sessions are searched several at once (one per core) in buffers smaller
/// than their records: every match is counted once, a record that straddles two reads is
/// whole, a last line still being written is not searched, and the sessions come out in the
/// listing's order (by session id), however long each one's search takes.
#[test]
fn local_sessions_searched_at_once_keep_the_listing_order_and_every_record() {
    let home = tempfile::tempdir().unwrap();
    let mut expected = std::collections::BTreeMap::new();
    for i in 0..10u32 {
        let dir = home.path().join(format!(".claude/projects/-p{}", i % 3));
        std::fs::create_dir_all(&dir).unwrap();
        let id = format!("9e9e0000-0000-4000-8000-{i:012}");
        let mut body = String::new();
        let mut planted = 0;
        // Records of 1 KiB to 600 KiB, so that the reads (256 KiB) cut through some of them.
        for n in 0..(8 + i * 3) {
            let kib = if n == 4 {
                300
            } else {
                1 + (n * 37 + i * 101) % 40
            };
            let filler = "x".repeat(kib as usize * 1024);
            let text = if n % 3 == 1 {
                planted += 1;
                format!("{filler} the needle {n} {filler}")
            } else {
                filler
            };
            body += &user_line(&format!("u{n}"), n % 60, &text);
        }
        // A last line without its newline is still being written: not searched.
        body += user_line("partial", 59, "needle not yet whole").trim_end();
        std::fs::write(dir.join(format!("{id}.jsonl")), body).unwrap();
        expected.insert(id, planted);
    }
    // Sessions of 0.8 to 1.5 MiB in three directories, the largest last: a search that handed
    // them on as they finished would print them in another order.
    let out = grep(home.path(), &["-c", "needle"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let want: Vec<String> = expected
        .iter()
        .map(|(id, planted)| format!("local:{id}:{planted}"))
        .collect();
    assert_eq!(stdout(&out).lines().collect::<Vec<_>>(), want);
    // The matches themselves are the planted records, whole.
    let out = grep(home.path(), &["--json", "-F", "the needle"]);
    let matches: Vec<Value> = ndjson(&out)
        .into_iter()
        .filter(|l| l["type"] == "match")
        .collect();
    assert_eq!(matches.len(), expected.values().sum::<u32>() as usize);
    for m in &matches {
        let text = m["text"].as_str().unwrap();
        assert!(
            text.starts_with("xxx") && text.ends_with("xxx"),
            "{}",
            &text[..80]
        );
    }
}
