//! docs/ndjson.md documents every field printed: the binary runs over the fixtures in every
//! mode that prints NDJSON (`read` of every fixture session, with and without a filter, `ls
//! --json` and `--long`, `check --json --records`, `hosts --json` and `--check`, `resume
//! --json`, `error` objects), every `(type, field)` printed is collected — objects nested in a field as
//! `field.key` — and each must be in the table of its type's section of the doc.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::sshd::sshd_or_skip;
use crate::support::{clankie, code, ndjson, stderr};

/// Fields whose value is the source's own JSON (a tool's input), or an object documented as a
/// type of its own (`grep`'s `record`, a `record` object): not documented inside.
const OPAQUE: &[&str] = &["input", "record"];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// `--root` options for every fixture harness home.
fn root_args() -> Vec<String> {
    let f = fixtures();
    [
        ("claude", f.join("claude")),
        ("codex", f.join("codex")),
        ("pi", f.join("pi")),
        ("gemini", f.join("gemini")),
        ("grok", f.join("grok")),
        ("opencode", f.join("opencode/legacy-1.1.65")),
    ]
    .into_iter()
    .flat_map(|(h, dir)| ["--root".to_string(), format!("{h}={}", dir.display())])
    .collect()
}

/// Runs the binary; exit 0 and NDJSON on stdout, or panics.
fn json_lines(home: &Path, args: &[String]) -> Vec<Value> {
    let out = clankie(home).args(args).output().unwrap();
    assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
    ndjson(&out)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// Adds each field of `value` (and of objects nested in it) as `prefix.key`.
fn collect(prefix: &str, value: &Value, out: &mut BTreeSet<String>) {
    let mut add = |key: &str, v: &Value| {
        let name = if prefix.is_empty() {
            key.to_string()
        } else {
            format!("{prefix}.{key}")
        };
        out.insert(name.clone());
        if OPAQUE.contains(&name.as_str()) {
            return;
        }
        match v {
            Value::Object(_) => collect(&name, v, out),
            Value::Array(items) => items
                .iter()
                .filter(|i| i.is_object())
                .for_each(|i| collect(&name, i, out)),
            _ => {}
        }
    };
    if let Value::Object(map) = value {
        for (k, v) in map {
            add(k, v);
        }
    }
}

/// The fields each type's section of docs/ndjson.md lists: a section is a `## \`TYPE\``
/// heading, its fields the backticked names in the first column of its tables.
fn documented() -> BTreeMap<String, BTreeSet<String>> {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ndjson.md"))
        .unwrap();
    let mut sections: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            current = heading
                .strip_prefix('`')
                .and_then(|h| h.split_once('`'))
                .map(|(ty, _)| ty.to_string());
            continue;
        }
        let (Some(ty), Some(row)) = (&current, line.strip_prefix('|')) else {
            continue;
        };
        let first = row.split('|').next().unwrap_or("");
        let names = first.split('`').skip(1).step_by(2).map(str::to_string);
        sections.entry(ty.clone()).or_default().extend(names);
    }
    sections
}

/// A temp `$HOME` with a Claude session, a Pi session, and a directory whose name is not UTF-8
/// (an `error` object).
fn scratch_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join(".claude/projects/-doc");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::copy(
        fixtures().join("claude/projects/-fixtures/short.jsonl"),
        project.join("0d0c0000-0000-4000-8000-000000000001.jsonl"),
    )
    .unwrap();
    let odd = home
        .path()
        .join(std::ffi::OsStr::from_bytes(b".claude/projects/-caf\xe9"));
    std::fs::create_dir(&odd).unwrap();
    std::fs::write(
        odd.join("0d0c0000-0000-4000-8000-000000000002.jsonl"),
        "{}\n",
    )
    .unwrap();
    home
}

#[test]
fn every_printed_field_is_in_docs_ndjson_md() {
    let home = scratch_home();
    let roots = root_args();
    let with_roots = |args: &[&str]| [roots.clone(), strings(args)].concat();
    let mut lines = Vec::new();

    // Every fixture session read whole, and once with a filter (the page's `filtered`).
    let sessions = json_lines(home.path(), &with_roots(&["ls", "--json", "--long"]));
    assert!(sessions.len() >= 15, "{sessions:?}");
    for s in &sessions {
        let target = format!(
            "local:{}/{}",
            s["harness"].as_str().unwrap(),
            s["session"].as_str().unwrap()
        );
        lines.extend(json_lines(
            home.path(),
            &with_roots(&["read", &target, "--all", "--json"]),
        ));
    }
    lines.extend(sessions);
    lines.extend(json_lines(
        home.path(),
        &with_roots(&["read", "local:claude/short", "--json", "--kind", "user"]),
    ));
    lines.extend(json_lines(home.path(), &with_roots(&["ls", "--json"])));

    // `check`: the baseline, then a new session with its records; `error` objects for the
    // directory whose name is not UTF-8.
    let state = home.path().join("state.json");
    let check = strings(&["check", "--json", "--records", "--state"])
        .into_iter()
        .chain([state.display().to_string(), "local".into()])
        .collect::<Vec<_>>();
    lines.extend(json_lines(home.path(), &check));
    std::fs::copy(
        fixtures().join("claude/projects/-fixtures/tool_heavy.jsonl"),
        home.path()
            .join(".claude/projects/-doc/0d0c0000-0000-4000-8000-000000000003.jsonl"),
    )
    .unwrap();
    let checked = json_lines(home.path(), &check);
    assert!(checked.iter().any(|l| l["type"] == "record"), "{checked:?}");
    assert!(checked.iter().any(|l| l["type"] == "error"), "{checked:?}");
    lines.extend(checked);
    lines.extend(json_lines(home.path(), &strings(&["ls", "--json"])));

    // `hosts`, from the hosts file and checked: locally, and over SSH (the SSH-only fields).
    lines.extend(json_lines(home.path(), &strings(&["hosts", "--json"])));
    lines.extend(json_lines(
        home.path(),
        &strings(&["hosts", "--check", "--json", "local"]),
    ));
    if let Some(sshd) = sshd_or_skip() {
        let config = sshd.ssh_config().display().to_string();
        let alias = sshd.alias("ck_noisy");
        let args = strings(&[
            "--ssh-config",
            &config,
            "hosts",
            "--check",
            "--json",
            &alias,
        ]);
        let out = clankie(home.path()).args(&args).output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        lines.extend(ndjson(&out));
    }

    // `resume`: the command that resumes a session.
    lines.extend(json_lines(
        home.path(),
        &with_roots(&["resume", "--json", "local:claude/short"]),
    ));

    // `grep`: matches with context, counts, the summary, and a host that fails.
    lines.extend(json_lines(
        home.path(),
        &with_roots(&["grep", "--json", "-C", "1", "marker"]),
    ));
    lines.extend(json_lines(
        home.path(),
        &with_roots(&["grep", "--json", "-c", "marker"]),
    ));
    let down = {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("nobody@127.0.0.1:{}", closed.local_addr().unwrap().port())
    };
    let out = clankie(home.path())
        .args(with_roots(&["grep", "--json", "marker", "local", &down]))
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    lines.extend(ndjson(&out));

    let mut printed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in &lines {
        let ty = line["type"]
            .as_str()
            .unwrap_or_else(|| panic!("no type: {line}"));
        collect("", line, printed.entry(ty.to_string()).or_default());
    }
    // Every type the product prints was seen, with what a merge needs to tell lines apart.
    let types: Vec<&str> = printed.keys().map(String::as_str).collect();
    assert_eq!(
        types,
        [
            "activity", "context", "count", "error", "host", "match", "page", "record", "resume",
            "session", "summary"
        ]
    );
    for ty in ["record", "page", "session", "activity", "error"] {
        for field in ["host", "harness", "session"] {
            assert!(printed[ty].contains(field), "{ty} has no {field}");
        }
    }
    // Model and usage where harnesses record them.
    for field in ["model", "usage", "usage.input", "usage.output"] {
        assert!(printed["record"].contains(field), "no record has {field}");
    }

    let documented = documented();
    let mut missing = Vec::new();
    for (ty, fields) in &printed {
        let doc = documented.get(ty);
        for field in fields {
            if !doc.is_some_and(|d| d.contains(field)) {
                missing.push(format!("{ty}.{field}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "printed but not in docs/ndjson.md's tables: {missing:?}"
    );
}
