//! `HOST:@latest`: the host's newest session (the one `ls` lists first), `@latest/HARNESS`
//! within one harness, a bare `@latest` on this machine; read, followed and resumed, looked for
//! again by every run.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::follow::{collect, follow, follow_args};
use crate::support::{code, ids, ndjson, page, records, run, stderr};

pub(crate) const OLDER: &str = "aaaaaaaa-0000-4000-8000-000000000001";
pub(crate) const NEWER: &str = "bbbbbbbb-0000-4000-8000-000000000002";

pub(crate) fn line(uuid: &str, text: &str) -> String {
    let line = json!({"type":"user","uuid":uuid,"cwd":"/work","timestamp":"2026-12-01T10:00:00Z",
        "message":{"role":"user","content":text}});
    format!("{line}\n")
}

/// Sets a file's modification time `age` ago.
pub(crate) fn age(path: &Path, age: Duration) {
    let file = fs::OpenOptions::new().append(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - age).unwrap();
}

/// A home with two Claude sessions, the second the newer, and a subagent newer than both.
pub(crate) fn home(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let project = dir.join(".claude/projects/-work");
    fs::create_dir_all(project.join(format!("{OLDER}/subagents"))).unwrap();
    let older = project.join(format!("{OLDER}.jsonl"));
    let newer = project.join(format!("{NEWER}.jsonl"));
    fs::write(&older, line("o1", "the older session")).unwrap();
    fs::write(&newer, line("n1", "the newer session")).unwrap();
    let agent = project.join(format!("{OLDER}/subagents/agent-a1.jsonl"));
    fs::write(&agent, line("s1", "a subagent")).unwrap();
    age(&older, Duration::from_secs(3600));
    age(&newer, Duration::from_secs(60));
    (older, newer)
}

fn session_read(home: &Path, target: &str) -> (Vec<String>, String) {
    let out = run(home, &[target, "--json"]);
    assert_eq!(code(&out), 0, "{target}: {}", stderr(&out));
    let lines = ndjson(&out);
    let session = page(&lines)["session"].as_str().unwrap().to_string();
    (ids(&records(&lines)), session)
}

#[test]
fn latest_names_the_newest_session_of_a_host() {
    let dir = tempfile::tempdir().unwrap();
    let home_dir = dir.path();
    let (older, _newer) = home(home_dir);
    for target in [
        "@latest",
        "local:@latest",
        "local:@latest/claude",
        "local:claude/@latest",
    ] {
        let (got, session) = session_read(home_dir, target);
        assert_eq!(session, NEWER, "{target}");
        assert_eq!(got, ["n1#0"], "{target}");
    }
    // Within a harness that has no session: no session, named as typed.
    let out = run(home_dir, &["local:@latest/codex", "--json"]);
    assert_ne!(code(&out), 0);
    assert!(stderr(&out).contains("@latest"), "{}", stderr(&out));

    // Resumed as the session it names.
    let out = run(home_dir, &["resume", "local:@latest"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("cd /work && claude --resume {NEWER}\n")
    );

    // Each run looks again: the older session written to is now the newest.
    fs::OpenOptions::new()
        .append(true)
        .open(&older)
        .and_then(|mut f| std::io::Write::write_all(&mut f, line("o2", "back to it").as_bytes()))
        .unwrap();
    let (got, session) = session_read(home_dir, "@latest");
    assert_eq!(session, OLDER);
    assert_eq!(got, ["o1#0", "o2#0"]);

    // Followed: the records written to the newest session after the first page.
    let args = follow_args(&[], "local:@latest", "0.05");
    let (child, rx) = follow(&args, home_dir);
    let first = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(first["session"], OLDER, "{first}");
    let mut file = fs::OpenOptions::new().append(true).open(&older).unwrap();
    std::io::Write::write_all(&mut file, line("o3", "while followed").as_bytes()).unwrap();
    let (got, _) = collect(child, rx, 2, Duration::from_secs(20));
    assert_eq!(ids(&got), ["o2#0", "o3#0"]);
}
