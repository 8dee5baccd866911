//! Reading over SSH through a real sshd on 127.0.0.1: every login shell, a busybox-only PATH and
//! noisy rc files give exactly the records a local read gives; hostile names are read and never
//! run; symlinks out of a root are neither listed nor read; host-key and auth failures exit 3.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::sshd::{Sshd, TEST_USERS, sshd_or_skip};
use crate::support::{code, ids, ndjson, page, records, stderr, without_host};

/// Runs the binary with the fixture's SSH config; HOME is a fresh temp dir so nothing of the
/// runner's own ~/.ssh leaks in.
fn run_ssh(sshd: &Sshd, home: &Path, args: &[&str]) -> Output {
    let mut full = vec!["--ssh-config", sshd.ssh_config().to_str().unwrap()];
    full.extend_from_slice(args);
    crate::support::clankie(home)
        .args(&full)
        .output()
        .expect("run clankie-read")
}

fn transcript(tag: &str, turns: usize) -> Vec<u8> {
    let mut out = String::new();
    for i in 0..turns {
        out += &serde_json::json!({"type":"user","uuid":format!("{tag}-u{i}"),"timestamp":"2026-11-02T10:00:00.000Z",
            "message":{"role":"user","content":format!("prompt {i} with 'quotes' $(not run) `nor this` ünï")}}).to_string();
        out.push('\n');
        out += &serde_json::json!({"type":"assistant","uuid":format!("{tag}-a{i}"),"message":{"content":[
            {"type":"text","text":"x".repeat(i * 97 % 3000)},
            {"type":"tool_use","id":format!("t{i}"),"name":"Bash","input":{"command":"ls"}}]}}).to_string();
        out.push('\n');
        out +=
            &serde_json::json!({"type":"user","uuid":format!("{tag}-r{i}"),"message":{"content":[
            {"type":"tool_result","tool_use_id":format!("t{i}"),"content":"y\n".repeat(i % 50)}]}})
            .to_string();
        out.push('\n');
    }
    out.into_bytes()
}

/// Records and page flags of a JSON read, without the host-bound cursor.
fn read_json(out: &Output) -> (Vec<Value>, Value) {
    assert_eq!(code(out), 0, "{}", stderr(out));
    let lines = ndjson(out);
    (records(&lines), page(&lines))
}

#[test]
fn every_login_shell_reads_what_a_local_read_gives() {
    let Some(sshd) = sshd_or_skip() else { return };
    let home = tempfile::tempdir().unwrap();
    let session = "5e55ed01-0000-4000-8000-00000000abcd";
    let body = transcript("every", 60);
    let mut users: Vec<&str> = TEST_USERS.iter().map(|u| u.name).collect();
    users.sort_unstable();
    assert!(users.len() >= 9, "{users:?}");
    for user in users {
        let path = sshd.put_file(
            user,
            format!(".claude/projects/-ssh-every/{session}.jsonl"),
            &body,
        );
        let local_root = format!(
            "claude={}",
            path.parent()
                .unwrap()
                .parent()
                .unwrap()
                .parent()
                .unwrap()
                .display()
        );
        let local = run_ssh(
            sshd,
            home.path(),
            &[
                "--root",
                &local_root,
                "read",
                "local:5e55ed01",
                "--all",
                "--json",
            ],
        );
        // Compared without the host each record names.
        let (local_records, _) = read_json(&local);
        let local_records = without_host(local_records);
        assert_eq!(local_records.len(), 60 * 4 - 1); // the first text block is empty
        let alias = sshd.alias(user);
        let remote = run_ssh(
            sshd,
            home.path(),
            &["read", &format!("{alias}:5e55ed01"), "--all", "--json"],
        );
        let (remote_records, remote_page) = read_json(&remote);
        assert!(remote_records.iter().all(|r| r["host"] == alias.as_str()));
        let remote_records = without_host(remote_records);
        assert_eq!(
            remote_records, local_records,
            "{user}: records over SSH differ from the local read"
        );
        assert_eq!(remote_page["host"], alias.as_str());
        // Paging with --since over SSH gives the same sequence as paging locally.
        let mut paged = Vec::new();
        let mut args = vec!["--head".to_string()];
        loop {
            let mut full = vec![
                "read".to_string(),
                format!("{alias}:{session}"),
                "--json".into(),
                "--limit".into(),
                "70".into(),
            ];
            full.extend(args.clone());
            let full: Vec<&str> = full.iter().map(String::as_str).collect();
            let (recs, p) = read_json(&run_ssh(sshd, home.path(), &full));
            paged.extend(ids(&recs));
            if p["more"] == false {
                break;
            }
            args = vec!["--since".into(), p["cursor"].as_str().unwrap().to_string()];
        }
        assert_eq!(
            paged,
            ids(&local_records),
            "{user}: --since paging over SSH"
        );
        let tail = run_ssh(
            sshd,
            home.path(),
            &[
                "read",
                &format!("{alias}:{session}"),
                "--json",
                "--limit",
                "7",
            ],
        );
        assert_eq!(
            without_host(read_json(&tail).0),
            local_records[local_records.len() - 7..],
            "{user}: tail"
        );
    }
}

#[test]
fn hostile_names_are_read_and_never_run() {
    let Some(sshd) = sshd_or_skip() else { return };
    let home = tempfile::tempdir().unwrap();
    let user = "ck_dash";
    // No `/` in a name: the command would run in the remote shell's working directory, so
    // that (the home) and the local working directory are where a marker would appear.
    let marker = "clankie-pwned";
    let dir = format!("-it's \"q\" $(touch {marker}) `touch {marker}` ; ünï 日本 sp");
    let session = "ba5e0001-0000-4000-8000-00000000beef";
    sshd.put_file(
        user,
        format!(".claude/projects/{dir}/{session}.jsonl"),
        &transcript("hostile", 3),
    );
    let alias = sshd.alias(user);
    let ls = run_ssh(sshd, home.path(), &["ls", &alias, "--json"]);
    assert_eq!(code(&ls), 0, "{}", stderr(&ls));
    let listed: Vec<Value> = ndjson(&ls)
        .into_iter()
        .filter(|s| s["session"] == session)
        .collect();
    assert_eq!(listed.len(), 1);
    assert!(
        listed[0]["path"].as_str().unwrap().contains(&dir),
        "{}",
        listed[0]["path"]
    );
    let (recs, _) = read_json(&run_ssh(
        sshd,
        home.path(),
        &["read", &format!("{alias}:{session}"), "--all", "--json"],
    ));
    assert_eq!(recs.len(), 3 * 4 - 1);
    for place in [
        sshd.home(user),
        std::env::current_dir().unwrap(),
        "/".into(),
    ] {
        assert!(
            !place.join(marker).exists(),
            "a file name was executed (in {})",
            place.display()
        );
    }
}

#[test]
fn symlinks_out_of_the_root_are_neither_listed_nor_read() {
    let Some(sshd) = sshd_or_skip() else { return };
    let home = tempfile::tempdir().unwrap();
    let user = "ck_mksh";
    let outside = sshd.put_file(
        user,
        "outside-secret/11111111-0000-4000-8000-000000000000.jsonl",
        &transcript("secret", 1),
    );
    let inside = sshd.put_file(
        user,
        ".claude/projects/-links/keep0001-0000-4000-8000-000000000000.jsonl",
        &transcript("keep", 1),
    );
    let link = inside
        .parent()
        .unwrap()
        .join("11111111-0000-4000-8000-000000000000.jsonl");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let dir_link = inside.parent().unwrap().parent().unwrap().join("-escape");
    let _ = std::fs::remove_file(&dir_link);
    std::os::unix::fs::symlink(outside.parent().unwrap(), &dir_link).unwrap();
    let alias = sshd.alias(user);
    let ls = run_ssh(sshd, home.path(), &["ls", &alias, "--json"]);
    let sessions: Vec<String> = ndjson(&ls)
        .iter()
        .map(|s| s["session"].as_str().unwrap().to_string())
        .collect();
    assert!(
        sessions.contains(&"keep0001-0000-4000-8000-000000000000".to_string()),
        "{sessions:?}"
    );
    assert!(
        !sessions.iter().any(|s| s.starts_with("11111111")),
        "a symlink was listed: {sessions:?}"
    );
    let read = run_ssh(
        sshd,
        home.path(),
        &["read", &format!("{alias}:11111111"), "--json"],
    );
    assert_eq!(code(&read), 4, "{}", stderr(&read));
}

/// A thread here swaps a directory below the root for a symlink to a directory outside it, and
/// back, while reads of a file in it run over SSH on one connection: no read may return the
/// outside file. (The script checked the directory, then ran `dd` by path: 115 of 400 reads
/// escaped as root.) A read that meets the swap is refused or fails; the rest read the file.
#[test]
fn a_directory_swapped_for_a_symlink_mid_read_never_leads_out_over_ssh() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use clankie_host::{Host, HostConfig};
    use clankie_model::{ByteRange, RootSpec};

    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_dash";
    let file = sshd.put_file(user, ".claude/projects/-race-ssh/a.jsonl", b"INSIDE\n");
    let outside = sshd.put_file(user, "race-outside/-race-ssh/a.jsonl", b"OUTSIDE\n");
    let (inside_dir, outside_dir) = (file.parent().unwrap(), outside.parent().unwrap());
    let parked = inside_dir.with_extension("real");

    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let stop = Arc::clone(&stop);
        let (inside, parked, outside) = (
            inside_dir.to_path_buf(),
            parked.clone(),
            outside_dir.to_path_buf(),
        );
        std::thread::spawn(move || {
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                std::fs::rename(&inside, &parked).unwrap();
                std::os::unix::fs::symlink(&outside, &inside).unwrap();
                std::thread::sleep(std::time::Duration::from_micros(200));
                std::fs::remove_file(&inside).unwrap();
                std::fs::rename(&parked, &inside).unwrap();
                std::thread::sleep(std::time::Duration::from_micros(200));
                flips += 1;
            }
            flips
        })
    };

    let host = clankie_host::open(&HostConfig::ssh(&sshd.alias(user)), Some(sshd.ssh_config()))
        .expect("open the test host");
    let claude = clankie_engine::harness::by_name("claude").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut read, mut failed, mut escaped) = (0, 0, 0);
    runtime.block_on(async {
        // The root as the host resolves it, as a listing would give it.
        let listing = host.list(&[RootSpec::default_for(claude)]).await.unwrap();
        let root = listing.roots[0].dir.clone();
        let file = clankie_host::FileRef {
            harness: claude,
            root,
            rel: b"projects/-race-ssh/a.jsonl".to_vec(),
        };
        for _ in 0..400 {
            match host.read(&file, &[ByteRange::new(0, 100)]).await {
                Ok(result) if result.chunks[0].starts_with(b"OUTSIDE") => escaped += 1,
                Ok(result) => {
                    assert_eq!(result.chunks[0], b"INSIDE\n");
                    read += 1;
                }
                Err(_) => failed += 1,
            }
        }
    });
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    assert_eq!(
        escaped, 0,
        "{escaped} of 400 reads escaped the root ({read} read, {failed} failed)"
    );
    assert!(flips > 50, "only {flips} swaps");
    assert!(read > 0 && failed > 0, "read {read}, failed {failed}");
}

#[test]
fn host_key_and_auth_failures_exit_3_with_one_line() {
    let Some(sshd) = sshd_or_skip() else { return };
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let port = sshd.port();
    let identity = sshd.identity().display().to_string();
    let real_known = std::fs::read_to_string(sshd.known_hosts()).unwrap();
    let host_key = real_known
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .skip(1)
        .collect::<Vec<_>>()
        .join(" ");
    let other_key =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBhOOiD9U6p2Xr5L3Jb5OQ3pAaJoRgCq7pDLeHn0xMdJ";
    let wrong_identity = dir.path().join("wrong");
    let status = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&wrong_identity)
        .status()
        .unwrap();
    assert!(status.success());
    let files = [
        ("unknown", String::new()),
        ("changed", format!("[127.0.0.1]:{port} {other_key}\n")),
        (
            "revoked",
            format!("@revoked [127.0.0.1]:{port} {host_key}\n[127.0.0.1]:{port} {host_key}\n"),
        ),
        ("good", real_known.clone()),
    ];
    let mut config = String::new();
    for (name, known) in &files {
        let known_path = dir.path().join(format!("known_{name}"));
        std::fs::write(&known_path, known).unwrap();
        config += &format!(
            "Host t-{name}\n  HostName 127.0.0.1\n  Port {port}\n  User ck_clean\n  IdentityFile {identity}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  StrictHostKeyChecking yes\n",
            known_path.display()
        );
    }
    config += &format!(
        "Host t-refused\n  HostName 127.0.0.1\n  Port {port}\n  User ck_clean\n  IdentityFile {}\n  IdentitiesOnly yes\n  IdentityAgent none\n  UserKnownHostsFile {}\n",
        wrong_identity.display(),
        dir.path().join("known_good").display()
    );
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    config += &format!(
        "Host t-closed\n  HostName 127.0.0.1\n  Port {closed}\n  User ck_clean\n  ConnectTimeout 3\n"
    );
    let config_path = dir.path().join("config");
    std::fs::write(&config_path, config).unwrap();
    let cases = [
        ("t-unknown", "not known"),
        ("t-changed", "CHANGED"),
        ("t-revoked", "revoked"),
        ("t-refused", "authentication"),
        ("t-closed", "connect"),
    ];
    for (alias, says) in cases {
        let out = crate::support::clankie(home.path())
            .args(["--ssh-config", config_path.to_str().unwrap(), "ls", alias])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(code(&out), 3, "{alias}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{alias}: {err}");
        assert!(err.contains(says), "{alias}: {err}");
        assert!(out.stdout.is_empty());
    }
    // The unknown key was not written anywhere (StrictHostKeyChecking yes).
    assert_eq!(
        std::fs::read_to_string(dir.path().join("known_unknown")).unwrap(),
        ""
    );
    let good = crate::support::clankie(home.path())
        .args([
            "--ssh-config",
            config_path.to_str().unwrap(),
            "ls",
            "t-good",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&good), 0, "{}", stderr(&good));
}
