//! A toybox-only remote (Android's userland: Debian's `toybox`, no `tr`, no `dd`, `/bin/sh` as
//! the shell) gives what a local read of the same files gives: the listing, every record, the
//! records a follow prints as the file grows, and `check`'s activity.

use std::io::Write;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use crate::common::sshd::{Sshd, TOYBOX_USER, sshd_or_skip};
use crate::follow::{collect, follow, follow_args};
use crate::support::{code, ids, ndjson, records, stderr};

/// Real Claude Code transcripts from `tests/fixtures/claude`.
const FIXTURES: &[&str] = &[
    "fed8ce56-bc79-401f-a83e-af084253362f.jsonl",
    "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
    "tool_heavy.jsonl",
];

fn fixture(name: &str) -> Vec<u8> {
    let path = crate::support::fixtures_home()
        .join("projects/-fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn run_ssh(sshd: &Sshd, home: &Path, args: &[&str]) -> Output {
    let mut full = vec!["--ssh-config", sshd.ssh_config().to_str().unwrap()];
    full.extend_from_slice(args);
    crate::support::clankie(home)
        .args(&full)
        .output()
        .expect("run clankie-read")
}

fn ok_lines(out: &Output) -> Vec<Value> {
    assert_eq!(code(out), 0, "{}", stderr(out));
    ndjson(out)
}

/// The `session` lines of a listing whose path lies under `dir`, without the host name.
fn sessions_under(lines: &[Value], dir: &str) -> Vec<Value> {
    let mut found: Vec<Value> = lines
        .iter()
        .filter(|l| {
            l["type"] == "session" && l["path"].as_str().is_some_and(|p| p.starts_with(dir))
        })
        .map(|l| {
            let mut l = l.clone();
            l.as_object_mut().unwrap().remove("host");
            l
        })
        .collect();
    found.sort_by_key(|l| l["path"].as_str().unwrap().to_string());
    found
}

fn user_line(uuid: &str) -> String {
    format!(
        "{}\n",
        serde_json::json!({"type":"user","uuid":uuid,"timestamp":"2026-11-02T10:00:00.000Z",
            "message":{"role":"user","content":format!("prompt {uuid}")}})
    )
}

#[test]
fn toybox_lists_and_reads_what_a_local_read_gives() {
    let Some(sshd) = sshd_or_skip() else { return };
    let Some(alias) = sshd.toybox_user() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    // A project directory whose name holds a newline: its files travel hex-encoded (`FX`),
    // through the shell's own field splitting of `od` where toybox has no `tr`.
    let projects = ["-toybox-ls-plain", "-toybox-ls-odd\nname"];
    // Homes outlive a run: start from empty project directories.
    for project in projects {
        let _ = std::fs::remove_dir_all(
            sshd.home(TOYBOX_USER)
                .join(".claude/projects")
                .join(project),
        );
    }
    let mut files = Vec::new();
    for (n, project) in projects.iter().enumerate() {
        for name in FIXTURES {
            // A session id is its file's name: one per project, so each is read by its id.
            files.push(sshd.put_file(
                TOYBOX_USER,
                format!(".claude/projects/{project}/p{n}-{name}"),
                &fixture(name),
            ));
        }
    }
    let claude_root = sshd.home(TOYBOX_USER).join(".claude");
    let local_root = format!("claude={}", claude_root.display());
    let under = claude_root.join("projects/-toybox-ls-");
    let under = under.to_str().unwrap();

    let local = sessions_under(
        &ok_lines(&run_ssh(
            sshd,
            home.path(),
            &["--root", &local_root, "ls", "--json"],
        )),
        under,
    );
    assert_eq!(local.len(), files.len(), "{local:?}");
    let remote = sessions_under(
        &ok_lines(&run_ssh(sshd, home.path(), &["ls", &alias, "--json"])),
        under,
    );
    assert_eq!(
        remote, local,
        "the toybox listing differs from the local one"
    );

    for session in &local {
        let id = session["session"].as_str().unwrap();
        let read = |target: &str, global: &[&str], extra: &[&str]| {
            let mut args = global.to_vec();
            args.extend(["read", target, "--json"]);
            args.extend_from_slice(extra);
            // Records name their host; the rest must be the same.
            crate::support::without_host(records(&ok_lines(&run_ssh(sshd, home.path(), &args))))
        };
        let local_records = read(&format!("local:{id}"), &["--root", &local_root], &["--all"]);
        assert!(!local_records.is_empty(), "{id}");
        let remote_target = format!("{alias}:{id}");
        assert_eq!(
            read(&remote_target, &[], &["--all"]),
            local_records,
            "{id}: records over toybox differ from the local read"
        );
        // A tail page reads byte ranges from the end: toybox has no `dd`.
        let tail = read(&remote_target, &[], &["--limit", "5"]);
        assert_eq!(
            tail,
            local_records[local_records.len().saturating_sub(5)..],
            "{id}: tail"
        );
    }
}

#[test]
fn toybox_follow_prints_each_appended_record_once() {
    let Some(sshd) = sshd_or_skip() else { return };
    let Some(alias) = sshd.toybox_user() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let session = "70b0f011-0000-4000-8000-000000000001";
    let rel = format!(".claude/projects/-toybox-follow/{session}.jsonl");
    let path = sshd.put_file(TOYBOX_USER, &rel, user_line("tf-0").as_bytes());
    let ssh_config = sshd.ssh_config().display().to_string();
    let args = follow_args(
        &["--ssh-config", &ssh_config],
        &format!("{alias}:{session}"),
        "0.05",
    );
    let (child, rx) = follow(&args, home.path());
    let count = 40;
    for i in 1..=count {
        // Appended as an agent does: the same file grows.
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(user_line(&format!("tf-{i}")).as_bytes())
            .unwrap();
        if i % 10 == 0 {
            std::thread::sleep(Duration::from_millis(150));
        }
    }
    let (got, err) = collect(child, rx, count + 1, Duration::from_secs(60));
    let claude_root = sshd.home(TOYBOX_USER).join(".claude");
    let local = run_ssh(
        sshd,
        home.path(),
        &[
            "--root",
            &format!("claude={}", claude_root.display()),
            "read",
            &format!("local:{session}"),
            "--all",
            "--json",
        ],
    );
    let local_ids = ids(&records(&ok_lines(&local)));
    assert_eq!(local_ids.len(), count + 1);
    assert_eq!(ids(&got), local_ids, "follow over toybox: {err}");
}

#[test]
fn toybox_check_reports_what_a_local_check_reports() {
    let Some(sshd) = sshd_or_skip() else { return };
    let Some(alias) = sshd.toybox_user() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    // Its own root, so sessions other tests leave in the shared home stay out of the counts.
    let root_rel = ".ck-toybox-check/.claude";
    let (a, b) = (
        "70b0c0ec-0000-4000-8000-00000000000a",
        "70b0c0ec-0000-4000-8000-00000000000b",
    );
    let rel = |id: &str| format!("{root_rel}/projects/-check/{id}.jsonl");
    for id in [a, b] {
        sshd.put_file(
            TOYBOX_USER,
            rel(id),
            user_line(&format!("{id}-0")).as_bytes(),
        );
    }
    let root = sshd.home(TOYBOX_USER).join(root_rel);
    let hosts = home.path().join("hosts.toml");
    std::fs::write(
        &hosts,
        format!(
            "[hosts.here]\nlocal = true\nroots = {{ claude = \"{root}\" }}\n\
             [hosts.toy]\nssh = \"{alias}\"\nroots = {{ claude = \"{root}\" }}\n",
            root = root.display()
        ),
    )
    .unwrap();
    let state = home.path().join("state.json");
    let check = || {
        let out = run_ssh(
            sshd,
            home.path(),
            &[
                "--hosts",
                hosts.to_str().unwrap(),
                "check",
                "--state",
                state.to_str().unwrap(),
                "--json",
            ],
        );
        // Per host: (session, change, new_records), sorted.
        let mut by_host: [Vec<(String, String, String)>; 2] = Default::default();
        for line in ok_lines(&out).iter().filter(|l| l["type"] == "activity") {
            let slot = match line["host"].as_str() {
                Some("here") => 0,
                Some("toy") => 1,
                other => panic!("activity of an unknown host {other:?}"),
            };
            by_host[slot].push((
                line["session"].as_str().unwrap().to_string(),
                line["change"].as_str().unwrap().to_string(),
                line["new_records"].to_string(),
            ));
        }
        by_host.iter_mut().for_each(|v| v.sort());
        by_host
    };
    let [here, toy] = check();
    assert_eq!(here.len(), 2, "{here:?}");
    assert!(
        here.iter().all(|(_, change, _)| change == "new"),
        "{here:?}"
    );
    assert_eq!(toy, here, "baseline");

    let grown = user_line(&format!("{a}-0"))
        + &user_line(&format!("{a}-1"))
        + &user_line(&format!("{a}-2"));
    sshd.put_file(TOYBOX_USER, rel(a), grown.as_bytes());
    let [here, toy] = check();
    assert_eq!(here, [(a.to_string(), "grew".to_string(), "2".to_string())]);
    assert_eq!(toy, here, "after growth");
}
