//! `hosts --check` as `ssh` would say it: a server that closes the connection in the handshake
//! is "Connection closed by HOST port N", one that never sends its version is "Connection timed
//! out during banner exchange"; and only the harnesses the user uses are warned about.

use std::net::TcpListener;
use std::time::Duration;

use crate::support::{code, ndjson, run, stderr};

/// A TCP server on 127.0.0.1 that accepts connections and, with `hold`, keeps them open
/// without a word, else closes them at once. Its thread ends with the test process.
fn server(hold: bool) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            if hold {
                held.push(stream);
            }
        }
    });
    port
}

fn check_error(args: &[&str]) -> String {
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), args);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let report = &ndjson(&out)[0];
    assert_eq!(report["ok"], false, "{report}");
    report["error"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_handshake_closed_or_silent_is_named_as_ssh_names_it() {
    let port = server(false);
    let error = check_error(&[
        "hosts",
        "--check",
        "--json",
        &format!("nobody@127.0.0.1:{port}"),
    ]);
    assert!(
        error.contains(&format!("Connection closed by 127.0.0.1 port {port}")),
        "{error}"
    );
    let port = server(true);
    let start = std::time::Instant::now();
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), "Host *\n    ConnectTimeout 1\n").unwrap();
    let error = check_error(&[
        "--ssh-config",
        config.path().to_str().unwrap(),
        "hosts",
        "--check",
        "--json",
        &format!("nobody@127.0.0.1:{port}"),
    ]);
    assert!(
        error.contains("Connection timed out during banner exchange"),
        "{error}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn only_the_harnesses_in_use_are_warned_about() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".claude/projects")).unwrap();
    let out = run(home.path(), &["hosts", "--check", "local"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!text.contains("warning: no "), "{text}");
    // A root the user named and that is not there is warned about.
    let missing = home.path().join("gone");
    let root = format!("codex={}", missing.display());
    let out = run(home.path(), &["--root", &root, "hosts", "--check", "local"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("warning: no codex root at"), "{text}");
}
