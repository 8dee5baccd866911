//! A mistyped subcommand (`gerp foo`, `chek`) or a read's option without its `--` (`tail X`)
//! is answered with "did you mean" and exit 2, once the word is known to name no session; a
//! session whose id is such a word is read.

use std::path::Path;

use crate::support::{code, run, stderr};

fn home_with_session(id: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join(".claude/projects/-w");
    std::fs::create_dir_all(&project).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude/projects/-fixtures/short.jsonl");
    std::fs::copy(fixture, project.join(format!("{id}.jsonl"))).unwrap();
    home
}

#[test]
fn a_mistyped_subcommand_gets_did_you_mean() {
    let home = home_with_session("short");
    for (args, suggestion) in [
        (&["gerp", "foo"][..], "'grep'"),
        (&["chek"][..], "'check'"),
        (&["tail", "short"][..], "'--tail'"),
        (&["hots"][..], "'hosts'"),
    ] {
        let out = run(home.path(), args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("did you mean {suggestion}?")),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // A word far from every subcommand that names no session is still "not found".
    let out = run(home.path(), &["zzzzzzzz"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(!stderr(&out).contains("did you mean"), "{}", stderr(&out));
}

#[test]
fn a_session_named_like_a_subcommand_is_read() {
    let home = home_with_session("chek");
    let out = run(home.path(), &["chek", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}
