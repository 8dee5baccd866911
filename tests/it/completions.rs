//! Completion scripts and the man page, generated from the clap definitions: every shell gets a
//! script that knows the read options, bash accepts its script, and the man page is roff.

use std::process::Command;

use crate::support::{code, run, stderr};

fn stdout_of(args: &[&str]) -> String {
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), args);
    assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_shell_gets_a_script_that_knows_the_read_options() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let script = stdout_of(&["completions", shell]);
        assert!(!script.trim().is_empty(), "{shell}: empty script");
        // fish spells long options `-l since`.
        for option in ["since", "no-redact"] {
            assert!(
                script.contains(&format!("--{option}")) || script.contains(&format!("-l {option}")),
                "{shell}: no --{option}"
            );
        }
    }
}

#[test]
fn bash_accepts_the_bash_script() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("clankie-read.bash");
    std::fs::write(&path, stdout_of(&["completions", "bash"])).unwrap();
    let check = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(
        check.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&check.stderr)
    );
}

#[test]
fn unknown_shell_is_a_usage_error() {
    let home = tempfile::tempdir().unwrap();
    assert_eq!(code(&run(home.path(), &["completions", "tcsh"])), 2);
}

#[test]
fn man_page_is_roff() {
    let page = stdout_of(&["man"]);
    assert!(page.contains(".TH"), "{page}");
    assert!(page.contains("clankie\\-read"));
    assert!(page.contains("completions"));
}
