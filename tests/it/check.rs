//! `check --state FILE` as cron runs it: a baseline, then new / grew / reset / deleted; a host
//! that is down exits 3 while the good host's activity is printed and saved; concurrent runs
//! never corrupt the state file.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::support::{code, ndjson, stderr};

fn line(uuid: &str) -> String {
    format!(
        "{}\n",
        serde_json::json!({"type":"user","uuid":uuid,"timestamp":"2026-11-02T10:00:00.000Z","message":{"role":"user","content":format!("p {uuid}")}})
    )
}

fn run(home: &Path, args: &[&str]) -> Output {
    crate::support::clankie(home).args(args).output().unwrap()
}

fn activity(out: &Output) -> Vec<Value> {
    ndjson(out)
        .into_iter()
        .filter(|l| l["type"] == "activity")
        .collect()
}

fn change_of<'a>(lines: &'a [Value], session: &str) -> Option<&'a str> {
    lines
        .iter()
        .find(|l| l["session"] == session)
        .and_then(|l| l["change"].as_str())
}

#[test]
fn baseline_then_changes_with_a_host_down() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("agent/.claude");
    let dir = root.join("projects/-p");
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b, c) = ("aaaaaaaa-1", "bbbbbbbb-2", "cccccccc-3");
    for id in [a, b, c] {
        std::fs::write(
            dir.join(format!("{id}.jsonl")),
            line(&format!("{id}-0")) + &line(&format!("{id}-1")),
        )
        .unwrap();
    }
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let hosts = home.path().join("hosts.toml");
    std::fs::write(
        &hosts,
        format!("[hosts.good]\nlocal = true\nroots = {{ claude = \"{}\" }}\n[hosts.down]\nssh = \"nobody@127.0.0.1:{closed}\"\n", root.display()),
    )
    .unwrap();
    let state = home.path().join("state.json");
    let args = [
        "--hosts",
        hosts.to_str().unwrap(),
        "check",
        "--state",
        state.to_str().unwrap(),
        "--json",
    ];

    let first = run(home.path(), &args);
    assert_eq!(code(&first), 3, "{}", stderr(&first));
    assert!(stderr(&first).contains("down"), "{}", stderr(&first));
    let lines = activity(&first);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(
        lines
            .iter()
            .all(|l| l["change"] == "new" && l["host"] == "good" && l["new_records"] == 0)
    );
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(
        saved["hosts"]["good"]["sessions"]
            .as_object()
            .unwrap()
            .len(),
        3
    );
    assert!(saved["hosts"].get("down").is_none());

    // Nothing changed: no activity.
    let quiet = run(home.path(), &args);
    assert_eq!(code(&quiet), 3);
    assert!(activity(&quiet).is_empty());

    // a grows by two records, b is deleted, c is rewritten (same size).
    let mut grown = std::fs::read_to_string(dir.join(format!("{a}.jsonl"))).unwrap();
    grown += &line("aaaaaaaa-1-new1");
    grown += &line("aaaaaaaa-1-new2");
    std::fs::write(dir.join(format!("{a}.jsonl")), grown).unwrap();
    std::fs::remove_file(dir.join(format!("{b}.jsonl"))).unwrap();
    let rewritten = std::fs::read_to_string(dir.join(format!("{c}.jsonl")))
        .unwrap()
        .replace("p cccccccc-3-0", "p CCCCCCCC-3-0");
    std::fs::write(dir.join(format!("{c}.jsonl")), rewritten).unwrap();
    let second = run(home.path(), &args);
    assert_eq!(code(&second), 3);
    let lines = activity(&second);
    assert_eq!(change_of(&lines, a), Some("grew"));
    assert_eq!(
        lines.iter().find(|l| l["session"] == a).unwrap()["new_records"],
        2
    );
    assert_eq!(change_of(&lines, b), Some("deleted"));
    assert_eq!(change_of(&lines, c), Some("reset"));
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(
        saved["hosts"]["good"]["sessions"]
            .as_object()
            .unwrap()
            .len(),
        2
    );

    // --records prints what is new, before its activity line.
    std::fs::write(
        dir.join(format!("{a}.jsonl")),
        std::fs::read_to_string(dir.join(format!("{a}.jsonl"))).unwrap() + &line("late"),
    )
    .unwrap();
    let mut with_records = args.to_vec();
    with_records.push("--records");
    let third = ndjson(&run(home.path(), &with_records));
    let kinds: Vec<&str> = third.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["record", "activity"]);
    assert_eq!(third[0]["id"], "late#0");
}

/// Many hosts are opened side by side (`cli::check::open_all`: each SSH host's `ssh -G`): every
/// host still gets its own roots and its own result, the ones that cannot be reached included.
#[test]
fn every_host_of_many_is_checked_with_its_own_roots() {
    let home = tempfile::tempdir().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut hosts_file = String::new();
    let mut names = Vec::new();
    for i in 0..14 {
        let name = format!("h{i:02}");
        if i % 5 == 3 {
            hosts_file += &format!("[hosts.{name}]\nssh = \"nobody@127.0.0.1:{closed}\"\n");
        } else {
            let root = home.path().join(&name).join(".claude");
            let dir = root.join("projects/-p");
            std::fs::create_dir_all(&dir).unwrap();
            let id = format!("{i:08}-own");
            std::fs::write(dir.join(format!("{id}.jsonl")), line(&id)).unwrap();
            hosts_file += &format!(
                "[hosts.{name}]\nlocal = true\nroots = {{ claude = \"{}\" }}\n",
                root.display()
            );
        }
        names.push(name);
    }
    let hosts = home.path().join("hosts.toml");
    std::fs::write(&hosts, hosts_file).unwrap();
    let state = home.path().join("state.json");
    let mut args = vec![
        "--hosts",
        hosts.to_str().unwrap(),
        "check",
        "--state",
        state.to_str().unwrap(),
        "--json",
    ];
    args.extend(names.iter().map(String::as_str));
    let out = run(home.path(), &args);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let mut seen: Vec<(String, String)> = activity(&out)
        .iter()
        .map(|l| {
            let host = l["host"].as_str().unwrap().to_string();
            (host, l["session"].as_str().unwrap().to_string())
        })
        .collect();
    seen.sort();
    let expected: Vec<(String, String)> = (0..14)
        .filter(|i| i % 5 != 3)
        .map(|i| (format!("h{i:02}"), format!("{i:08}-own")))
        .collect();
    assert_eq!(seen, expected);
    for down in ["h03", "h08", "h13"] {
        assert!(stderr(&out).contains(down), "{down}: {}", stderr(&out));
    }
}

#[test]
fn concurrent_runs_never_corrupt_the_state() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".claude/projects/-p");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..20 {
        std::fs::write(
            dir.join(format!("dddddddd-{i:02}.jsonl")),
            line(&format!("d{i}")),
        )
        .unwrap();
    }
    let state = home.path().join("state.json");
    for round in 0..6 {
        std::fs::write(dir.join("dddddddd-00.jsonl"), line("x").repeat(round + 1)).unwrap();
        let wait = if round % 2 == 0 { "0" } else { "20" };
        let spawn = || {
            crate::support::clankie(home.path())
                .args([
                    "check",
                    "local",
                    "--state",
                    state.to_str().unwrap(),
                    "--json",
                    "--wait",
                    wait,
                ])
                .output()
        };
        let (one, two) = std::thread::scope(|s| {
            let a = s.spawn(spawn);
            let b = s.spawn(spawn);
            (a.join().unwrap().unwrap(), b.join().unwrap().unwrap())
        });
        for out in [&one, &two] {
            let c = code(out);
            assert!(
                c == 0 || (c == 75 && wait == "0"),
                "round {round}: exit {c}: {}",
                stderr(out)
            );
        }
        let saved: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap())
            .expect("state is valid JSON");
        assert_eq!(
            saved["hosts"]["local"]["sessions"]
                .as_object()
                .unwrap()
                .len(),
            20
        );
    }
}

#[test]
fn a_temporary_file_left_by_a_killed_run_is_removed() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".claude/projects/-p");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("eeeeeeee-1.jsonl"), line("e1")).unwrap();
    let states = home.path().join("states");
    std::fs::create_dir(&states).unwrap();
    let state = states.join("state.json");
    // What a run killed while saving leaves: the state half written under the temporary name.
    let leftover = states.join("state.json.tmp");
    std::fs::write(&leftover, vec![b' '; 1_500_000]).unwrap();
    let check = || {
        run(
            home.path(),
            &[
                "check",
                "local",
                "--state",
                state.to_str().unwrap(),
                "--json",
            ],
        )
    };
    let out = check();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mut names: Vec<String> = std::fs::read_dir(&states)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["state.json", "state.json.lock"]);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(
        saved["hosts"]["local"]["sessions"]
            .as_object()
            .unwrap()
            .len(),
        1
    );
    // A later run finds one too (a killed run between two good ones).
    std::fs::write(&leftover, b"{").unwrap();
    let out = check();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!leftover.exists());
}

/// `--state` in a directory that is not there yet (cron, on a home without `~/.cache`): it is
/// made, 0700; one that cannot be made is said as such, naming the state file.
#[test]
fn the_state_files_directory_is_made_or_said_to_be_impossible() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".claude/projects/-p");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ffffffff-1.jsonl"), line("f1")).unwrap();
    let state = home.path().join(".cache/clankie/state.json");
    let out = run(
        home.path(),
        &["check", "local", "--state", state.to_str().unwrap()],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(state.is_file());
    #[cfg(unix)]
    for made in [".cache", ".cache/clankie"] {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(home.path().join(made))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "{made}: {mode:o}");
    }
    // A file where the directory would be.
    let blocked = home.path().join("not-a-dir");
    std::fs::write(&blocked, "").unwrap();
    let state = blocked.join("state.json");
    let out = run(
        home.path(),
        &["check", "local", "--state", state.to_str().unwrap()],
    );
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{}: cannot create the state file's directory {}: ",
            state.display(),
            blocked.display()
        )),
        "{err}"
    );
    assert!(!err.contains(".lock"), "{err}");
}

/// `check --records` in text: the activity lines, then each session's new records under its
/// heading (`host:session (harness)`, as `grep` heads a session), never a record before the
/// line that says whose it is.
#[test]
fn text_records_are_grouped_under_their_sessions_heading() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".claude/projects/-p");
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = ("aaaaaaaa-7", "bbbbbbbb-7");
    for id in [a, b] {
        std::fs::write(dir.join(format!("{id}.jsonl")), line(&format!("{id}-0"))).unwrap();
    }
    let state = home.path().join("state.json");
    let args = [
        "check",
        "local",
        "--state",
        state.to_str().unwrap(),
        "--records",
        "--color",
        "never",
    ];
    assert_eq!(code(&run(home.path(), &args)), 0);
    for id in [a, b] {
        let path = dir.join(format!("{id}.jsonl"));
        let grown = std::fs::read_to_string(&path).unwrap() + &line(&format!("late-{id}"));
        std::fs::write(&path, grown).unwrap();
    }
    let out = run(home.path(), &args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let activity = regex::Regex::new(r"^local claude/(\S+) grew \+1 2026-11-02T10:00:00").unwrap();
    let changed: Vec<&str> = lines[..2]
        .iter()
        .map(|l| activity.captures(l).unwrap_or_else(|| panic!("{text}"))[1].to_string())
        .map(|id| if id == a { a } else { b })
        .collect();
    let mut sorted = changed.clone();
    sorted.sort();
    assert_eq!(sorted, [a, b], "{text}");
    // Then a blank line and, per session in the same order, its heading, its records and a
    // blank line, as `grep` prints a session's matches.
    assert_eq!(lines[2], "", "{text}");
    let mut rest = &lines[3..];
    for id in changed {
        assert_eq!(rest[0], format!("local:{id} (claude)"), "{text}");
        let end = rest
            .iter()
            .position(|l| l.is_empty())
            .unwrap_or_else(|| panic!("{text}"));
        let records = rest[1..end].join("\n");
        assert!(records.contains(&format!("p late-{id}")), "{text}");
        assert_eq!(records.matches("p late-").count(), 1, "{text}");
        rest = &rest[end + 1..];
    }
    assert!(rest.is_empty(), "{text}");
}

/// `check` naming no host goes over `local` and every host of the hosts file, as MCP's `check`
/// does: without a hosts file that is `local` alone, never "no hosts to check".
#[test]
fn no_host_named_checks_local_and_the_hosts_files_hosts() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".claude/projects/-p");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("aaaaaaaa-1.jsonl"), line("aaaaaaaa-1-0")).unwrap();
    let state = home.path().join("state.json");
    let state = state.to_str().unwrap();

    let alone = run(home.path(), &["check", "--state", state, "--json"]);
    assert_eq!(code(&alone), 0, "{}", stderr(&alone));
    let lines = activity(&alone);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["host"], "local");
    assert_eq!(lines[0]["change"], "new");

    let other = home.path().join("other/.claude");
    std::fs::create_dir_all(other.join("projects/-q")).unwrap();
    std::fs::write(
        other.join("projects/-q/bbbbbbbb-2.jsonl"),
        line("bbbbbbbb-2-0"),
    )
    .unwrap();
    let hosts = home.path().join("hosts.toml");
    std::fs::write(
        &hosts,
        format!(
            "[hosts.other]\nlocal = true\nroots = {{ claude = \"{}\" }}\n",
            other.display()
        ),
    )
    .unwrap();
    let both = run(
        home.path(),
        &[
            "--hosts",
            hosts.to_str().unwrap(),
            "check",
            "--state",
            state,
            "--json",
        ],
    );
    assert_eq!(code(&both), 0, "{}", stderr(&both));
    let lines = activity(&both);
    assert_eq!(
        lines.len(),
        1,
        "local's session is known; other's is new: {lines:?}"
    );
    assert_eq!(lines[0]["host"], "other");
    assert_eq!(lines[0]["session"], "bbbbbbbb-2");
}
