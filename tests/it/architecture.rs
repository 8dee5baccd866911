//! The layering rules of STYLE.md, held by a test: the engine does no I/O and knows no host;
//! hosts never parse transcripts.

use std::path::Path;

fn sources(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push((
                path.display().to_string(),
                std::fs::read_to_string(&path).unwrap(),
            ));
        }
    }
    out
}

/// Code lines, without comments (a doc comment may name what the code must not use).
fn code(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn engine_is_pure() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/engine/src");
    let forbidden = [
        "crate::host",
        "crate::driver",
        "crate::cli",
        "crate::render",
        "tokio",
        "russh",
        "rusqlite",
        "std::fs",
        "std::process",
        "std::net",
        "std::env",
        "SystemTime",
        "Instant",
        "std::thread",
        "rand::",
        "std::io::stdin",
        "println!",
        "eprintln!",
    ];
    let files = sources(&root);
    assert!(files.len() >= 5, "engine sources found: {}", files.len());
    for (path, text) in files {
        // Tests inside engine files may build fixtures; only the code above them counts.
        let text = code(text.split("#[cfg(test)]").next().unwrap());
        for word in forbidden {
            assert!(
                !text.contains(word),
                "{path} uses `{word}`: the engine must stay pure"
            );
        }
    }
}

#[test]
fn hosts_never_parse_transcripts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/host/src");
    for (path, text) in sources(&root) {
        let text = code(&text);
        for word in [
            "crate::engine",
            "crate::driver",
            "crate::render",
            "crate::cli",
        ] {
            assert!(
                !text.contains(word),
                "{path} uses `{word}`: hosts only move bytes"
            );
        }
    }
}

#[test]
fn model_imports_nothing_from_the_crate() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/model/src/lib.rs"),
    )
    .unwrap();
    assert!(
        !code(&text).contains("crate::"),
        "model.rs must not import from the crate"
    );
}
