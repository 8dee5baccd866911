//! A terminal root as people lay it out: recordings directly in the root are not read, and the
//! warning says where they go; a program's output redirected to a log (`\n` alone) reads as
//! lines.

use crate::support::{code, ndjson, records, run, stderr};

#[test]
fn recordings_directly_in_the_root_are_told_where_they_go() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        root.path().join("demo.cast"),
        "{\"version\": 2, \"width\": 80, \"height\": 24}\n[0.1, \"o\", \"hi\\r\\n\"]\n",
    )
    .unwrap();
    let spec = format!("terminal={}", root.path().display());
    let out = run(home.path(), &["ls", "--root", &spec]);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "no terminal root at {} (sessions are read from its casts/, logs/, scripts/ or \
             recordings/ directory)",
            root.path().display()
        )),
        "{err}"
    );
}

#[test]
fn a_log_of_output_redirected_to_a_file_reads_as_lines() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("logs")).unwrap();
    std::fs::write(root.path().join("logs/build.log"), "alpha\nbeta\ngamma\n").unwrap();
    let spec = format!("terminal={}", root.path().display());
    let out = run(
        home.path(),
        &["--root", &spec, "local:terminal/build", "--all", "--json"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines = ndjson(&out);
    let mut texts: Vec<String> = records(&lines)
        .iter()
        .filter_map(|r| r["text"].as_str().map(str::to_string))
        .collect();
    let page = lines.last().unwrap();
    if let Some(screen) = page["screen"].as_array() {
        texts.extend(screen.iter().filter_map(|l| l.as_str().map(str::to_string)));
    }
    assert!(
        texts.iter().any(|t| t.lines().any(|l| l == "beta")),
        "{texts:?}"
    );
    assert!(
        !texts.iter().any(|t| t.lines().any(|l| l.starts_with(' '))),
        "{texts:?}"
    );
}
