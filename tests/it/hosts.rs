//! `hosts --check` against the real sshd: a noisy `.bashrc` is flagged with the fix, a missing
//! harness root is named, an unreachable host fails with exit 3.

use std::process::Output;

use serde_json::Value;

use crate::common::sshd::{Sshd, sshd_or_skip};
use crate::support::{code, ndjson, stderr};

fn run(sshd: &Sshd, home: &std::path::Path, args: &[&str]) -> Output {
    crate::support::clankie(home)
        .args(["--ssh-config", sshd.ssh_config().to_str().unwrap()])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn check_flags_noisy_shells_and_missing_roots() {
    let Some(sshd) = sshd_or_skip() else { return };
    let home = tempfile::tempdir().unwrap();
    sshd.put_file(
        "ck_clean",
        ".claude/projects/-hosts/ab12cd34-0000-4000-8000-000000000000.jsonl",
        b"{}\n",
    );
    let noisy = sshd.alias("ck_noisy");
    let clean = sshd.alias("ck_clean");
    let out = run(
        sshd,
        home.path(),
        &["hosts", "--check", "--json", &noisy, &clean],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let reports: Vec<Value> = ndjson(&out);
    assert_eq!(reports.len(), 2);
    let (n, c) = (&reports[0], &reports[1]);
    assert_eq!(n["ok"], true);
    assert_eq!(n["clean_shell"], false, "{n}");
    assert!(n["warnings"].to_string().contains("case $- in *i*)"), "{n}");
    assert_eq!(c["clean_shell"], true, "{c}");
    assert_eq!(c["uname"], "Linux");
    assert!(c["connect_ms"].as_u64().is_some() && c["exec_ms"].as_u64().is_some());
    let identity = sshd.identity().display().to_string();
    assert_eq!(c["auth"], format!("identity file {identity}"), "{c}");
    let roots = c["roots"].as_array().unwrap();
    assert!(
        roots.iter().any(|r| r["harness"] == "claude"
            && r["exists"] == true
            && r["sessions"].as_u64() >= Some(1)),
        "{c}"
    );

    // A missing root is named, in text too.
    let text = run(
        sshd,
        home.path(),
        &[
            "--root",
            "claude=/nonexistent/agent-home",
            "hosts",
            "--check",
            &clean,
        ],
    );
    assert_eq!(code(&text), 0, "{}", stderr(&text));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("no claude root at /nonexistent/agent-home"),
        "{text}"
    );

    // An unreachable host: one report, exit 3.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let down = run(
        sshd,
        home.path(),
        &[
            "hosts",
            "--check",
            "--json",
            &format!("nobody@127.0.0.1:{closed}"),
        ],
    );
    assert_eq!(code(&down), 3);
    assert_eq!(ndjson(&down)[0]["ok"], false);
}
