//! `clankie-read script`: the exact exec string and stdin for each dialect. The POSIX payload
//! is run by a real `sh` and decoded; the PowerShell one is decoded from its `-EncodedCommand`
//! and snapshotted (with the fresh nonce filtered) so that a reviewer sees the script Windows
//! would run.

use std::fs;
use std::process::{Command, Output, Stdio};

use base64::Engine as _;
use clankie_host::script::{decode_list, decode_read};
use clankie_model::ByteRange;

use crate::support::{code, run, stderr};

/// Splits the output into the exec string, the stdin payload and the nonce in it.
fn split(out: &Output) -> (String, Vec<u8>) {
    assert_eq!(code(out), 0, "{}", stderr(out));
    let at = out
        .stdout
        .windows(2)
        .position(|w| w == b"\n\n")
        .expect("exec line, blank line");
    (
        String::from_utf8(out.stdout[..at].to_vec()).unwrap(),
        out.stdout[at + 2..].to_vec(),
    )
}

fn nonce_in(script: &str, prefix: &str) -> String {
    let at = script.find(prefix).expect("nonce assignment") + prefix.len();
    let nonce = &script[at..at + 32];
    assert!(nonce.bytes().all(|b| b.is_ascii_hexdigit()), "{nonce}");
    nonce.to_string()
}

fn sh(home: &std::path::Path, stdin: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut child = Command::new("sh")
        .arg("-s")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap().stdout
}

#[test]
fn posix_scripts_print_sh_s_and_run_as_printed() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    fs::create_dir_all(home.join(".claude/projects/-w")).unwrap();
    fs::write(home.join(".claude/projects/-w/a.jsonl"), b"0123456789").unwrap();

    let (exec, payload) = split(&run(home, &["script", "list"]));
    assert_eq!(exec, "sh -s");
    let nonce = nonce_in(&String::from_utf8_lossy(&payload), "N='");
    let roots: Vec<clankie_model::RootSpec> = clankie_engine::harness::all()
        .map(clankie_model::RootSpec::default_for)
        .collect();
    let listing = decode_list("h", &nonce, &roots, &sh(home, &payload)).unwrap();
    assert_eq!(listing.files.len(), 1);
    assert_eq!(listing.files[0].rel, b"projects/-w/a.jsonl");

    // Read: the default root is this machine's (here: $HOME/.claude).
    let args = [
        "script",
        "read",
        "--shell",
        "posix",
        "--path",
        "projects/-w/a.jsonl",
        "--offset",
        "3",
        "--len",
        "4",
    ];
    let (exec, payload) = split(&run(home, &args));
    assert_eq!(exec, "sh -s");
    let nonce = nonce_in(&String::from_utf8_lossy(&payload), "N='");
    let got = decode_read("h", &nonce, &[ByteRange::new(3, 4)], &sh(home, &payload)).unwrap();
    assert_eq!((got.size, got.chunks), (10, vec![b"3456".to_vec()]));
}

fn powershell_script(exec: &str) -> String {
    let b64 = exec
        .strip_prefix("powershell -NoProfile -NonInteractive -EncodedCommand ")
        .expect("powershell exec string");
    assert!(exec.len() < 8000, "{}", exec.len());
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    let units: Vec<u16> = bytes
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    String::from_utf16(&units).unwrap()
}

#[test]
fn powershell_scripts_print_the_encoded_command() {
    let tmp = tempfile::tempdir().unwrap();
    let (exec, payload) = split(&run(
        tmp.path(),
        &["script", "list", "--shell", "powershell"],
    ));
    // The list script covers every harness's layout; once that is past cmd.exe's bound it
    // travels on stdin behind the bootstrap, like any long script.
    let script = if payload.is_empty() {
        powershell_script(&exec)
    } else {
        assert!(powershell_script(&exec).contains("[Console]::In.ReadToEnd()"));
        String::from_utf8(payload).unwrap()
    };
    let nonce = nonce_in(&script, "$nonce='");
    insta::assert_snapshot!("powershell_list", script.replace(&nonce, "NONCE"));

    // Aider has no home: its listing walks the trees of projects given.
    let (exec, payload) = split(&run(
        tmp.path(),
        &[
            "script",
            "list",
            "--shell",
            "powershell",
            "--root",
            r"aider=C:\Users\me\proj",
        ],
    ));
    let script = if payload.is_empty() {
        powershell_script(&exec)
    } else {
        String::from_utf8(payload).unwrap()
    };
    let aider: Vec<&str> = script
        .lines()
        .filter(|l| l.starts_with("L 'aider'"))
        .collect();
    assert_eq!(
        aider,
        // The directory travels base64-encoded: `C:\Users\me\proj`.
        // A tree of projects: the root itself (`''`), four directories down, and the
        // directories such a walk never enters.
        [
            "L 'aider' (D 'QzpcVXNlcnNcbWVccHJvag==') 4 @('') @() @('.aider.chat.history.md') @() \
             @('.git','.hg','.svn','.jj','node_modules','.venv','__pycache__','.tox','.mypy_cache',\
             '.pytest_cache')"
        ],
        "{script}"
    );

    let args = [
        "script",
        "read",
        "--shell",
        "powershell",
        "--root",
        r"claude=C:\Users\me\.claude",
        "--path",
        "projects/C--Users-me-proj/3f1c2a77-0000-4000-8000-000000000001.jsonl",
        "--offset",
        "5000",
        "--len",
        "300000",
    ];
    let (exec, payload) = split(&run(tmp.path(), &args));
    assert!(payload.is_empty());
    let script = powershell_script(&exec);
    let nonce = nonce_in(&script, "$nonce='");
    insta::assert_snapshot!("powershell_read", script.replace(&nonce, "NONCE"));

    // A path too long for cmd.exe's command line travels on stdin behind a tiny bootstrap.
    let deep = format!("projects/{}/a.jsonl", vec!["d".repeat(200); 6].join("/"));
    let args = [
        "script",
        "read",
        "--shell",
        "powershell",
        "--root",
        r"claude=C:\x",
        "--path",
        &deep,
    ];
    let (exec, payload) = split(&run(tmp.path(), &args));
    assert!(exec.len() < 400, "{exec}");
    assert!(powershell_script(&exec).contains("[Console]::In.ReadToEnd()"));
    let script = String::from_utf8(payload).unwrap();
    assert!(script.is_ascii() && script.contains("function M"));
}

#[test]
fn bad_script_arguments_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        &["script", "read"][..],
        &["script", "read", "--path", "../etc/passwd"],
        &[
            "script",
            "read",
            "--path",
            "projects/a.jsonl",
            "--len",
            "99999999",
        ],
        &["script", "list", "--path", "projects/a.jsonl"],
        &["script", "list", "--shell", "cmd"],
        &["script", "copy"],
    ] {
        let out = run(tmp.path(), args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
