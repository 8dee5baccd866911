//! What the docs say about the tree, held to the tree:
//!
//! - No work-log history outside `vendor/`: docs and comments describe the product as it is, and
//!   git keeps how it got there. [`HISTORY`] is the shapes a work log takes (a work session or
//!   an issue of our tracker by number, a numbered pass, a dated heading, what there was before); the
//!   product's own words for an agent's sessions ("session id", "sessions") do not match them.
//! - Every path the architecture map's "Where to change what" table names exists.
//! - A product file over 1,500 lines is one of the named exceptions of the map's "Files over
//!   1,500 lines", and each exception named is such a file.

use std::path::{Path, PathBuf};

use regex::Regex;

/// The shapes of work-log history, each with what it is.
const HISTORY: &[(&str, &str)] = &[
    (r"\b[Ss]ession \d+\b", "a work session by number"),
    // Not a Gemini file name (`session-2026-11-02T10-00-….jsonl`, `session-0.json`).
    (r"\b[Ss]ession-\d{1,2}(\s|'s\b)", "a work session by number"),
    (r"\b[Ii]ssues? \d+", "an issue of our tracker by number"),
    (
        r"(?i)\b(third|fourth|fifth|sixth|seventh|eighth|ninth|tenth) pass\b",
        "a numbered pass of past work",
    ),
    (r"(?m)^#{1,6} .*\b20\d\d-\d\d", "a dated heading"),
    (
        r"\b[Tt]he old (walk|way|one|code|design|version|binary|script)\b",
        "what there was before",
    ),
];

/// Files of data rather than prose (transcripts, recordings, snapshots of output, lock files):
/// what they hold is what a harness or a command wrote.
const DATA_EXTENSIONS: &[&str] = &[
    "jsonl", "json", "cast", "snap", "lock", "sql", "db", "zst", "gz", "png",
];

/// Each line of `text` that reads as work-log history: `line: text (what it is)`.
pub fn history_in(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (pattern, what) in HISTORY {
        let regex = Regex::new(pattern).unwrap();
        for hit in regex.find_iter(text) {
            let line = text[..hit.start()].matches('\n').count() + 1;
            let line_text = text.lines().nth(line - 1).unwrap_or_default().trim();
            found.push(format!(
                "{line}: {line_text} ({what}: \"{}\")",
                hit.as_str()
            ));
        }
    }
    found
}

/// Every file of the tree that holds prose or code: not `vendor/`, not a build's output, not
/// git's, not data.
fn prose_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            let skipped = ["vendor", "target", ".git"].contains(&name.as_str())
                || (name.starts_with('.') && name != ".ci" && name != ".github");
            if !skipped {
                prose_files(&path, out);
            }
        } else if name.starts_with('.') {
            // A hidden file is a tool's, like a hidden directory: aider's histories in the
            // fixtures (`.aider.chat.history.md`) are transcripts, not prose.
        } else {
            let data = path
                .extension()
                .is_some_and(|e| DATA_EXTENSIONS.contains(&e.to_string_lossy().as_ref()));
            if !data {
                out.push(path);
            }
        }
    }
}

#[test]
fn history_shapes_are_found_and_the_products_sessions_are_not() {
    // Built from pieces, so that this file holds no history of its own.
    let s = "Sess".to_string() + "ion";
    let i = "Iss".to_string() + "ue";
    let planted = [
        format!("## {s} 13: every mode again"),
        format!("| bound | {} 12 | met |", s.to_lowercase()),
        format!("the {}-9 binary", s.to_lowercase()),
        format!(
            "// Connection sharing ({} 15): the master",
            i.to_lowercase()
        ),
        format!("- **Added since ({}s 13–20)**", i.to_lowercase()),
        format!("### Sixth {}: what redaction costs", "pass"),
        "## 2026-11-02: the tail got faster".to_string(),
        format!("The {} walk named 12 places", "old"),
    ];
    for text in &planted {
        assert_eq!(history_in(text).len(), 1, "not found: {text}");
    }
    let product = [
        "the session id names one session; sessions 3f1c and 9a2b",
        "a `session` argument: HOST:SESSION",
        "`--limit 50` records of session `3f1c2a`",
        "PowerShell issues #3223 and #2068 (upstream)",
        "TODO(#8): opencode-<channel>.db",
        "the first pass over the lines; a second pass",
        "the cursor no longer matches the source",
        "10,000 sessions of 1 KiB; a session of 300 KiB",
        "chats/session-2026-11-02T10-00-0199a8f2.jsonl and chats/session-0.json",
    ];
    for text in product {
        assert_eq!(history_in(text), Vec::<String>::new(), "{text}");
    }
}

#[test]
fn no_work_log_history_outside_vendor() {
    let root = super::workspace_root();
    let mut files = Vec::new();
    prose_files(root, &mut files);
    files.sort();
    assert!(
        files.iter().any(|f| f.ends_with("docs/performance.md")),
        "the scan did not reach docs/: {} files",
        files.len()
    );
    let mut found = Vec::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue; // not text
        };
        for hit in history_in(&text) {
            found.push(format!("{}:{hit}", super::shown(file)));
        }
    }
    assert!(
        found.is_empty(),
        "work-log history: docs and comments say what is, git keeps how it came to be:\n{}",
        found.join("\n")
    );
}

/// The lines of the section of docs/architecture.md under `## {title}`.
fn architecture_section(title: &str) -> Vec<String> {
    let path = super::workspace_root().join("docs/architecture.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let heading = format!("## {title}");
    let lines: Vec<String> = text
        .lines()
        .skip_while(|l| l.trim() != heading)
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .map(str::to_string)
        .collect();
    assert!(
        !lines.is_empty(),
        "docs/architecture.md has no section \"{heading}\""
    );
    lines
}

/// The `backticked` spans of `line` that are paths in the tree: they hold a `/` or name a
/// file by its extension, and no space.
fn paths_named(line: &str) -> Vec<String> {
    line.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| !span.contains(' '))
        .filter(|span| {
            span.contains('/') || [".rs", ".md", ".toml"].iter().any(|e| span.ends_with(e))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn paths_are_found_in_a_table_row() {
    assert_eq!(
        paths_named(
            "| add a tool | `src/mcp/tools.rs` and `Format::session`; `crates/engine/src/harness/` | `README.md` `--format json` |"
        ),
        [
            "src/mcp/tools.rs",
            "crates/engine/src/harness/",
            "README.md"
        ]
    );
}

#[test]
fn where_to_change_what_names_paths_that_exist() {
    let root = super::workspace_root();
    let rows: Vec<String> = architecture_section("Where to change what")
        .into_iter()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---"))
        .collect();
    for task in [
        "changed its format",
        "add a harness",
        "add an output format",
        "retry policy",
        "add an MCP tool",
    ] {
        assert!(
            rows.iter().any(|r| r.contains(task)),
            "the table has no row for \"{task}\""
        );
    }
    let paths: Vec<String> = rows.iter().flat_map(|r| paths_named(r)).collect();
    assert!(paths.len() >= 10, "paths named: {paths:?}");
    let missing: Vec<&String> = paths.iter().filter(|p| !root.join(p).exists()).collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md, \"Where to change what\", names paths that do not exist: {missing:?}"
    );
}

/// The line count past which a product file is a named exception.
const LONG_FILE_LINES: usize = 1_500;

#[test]
fn files_over_1500_lines_are_the_named_exceptions() {
    let named: Vec<String> = architecture_section("Files over 1,500 lines")
        .iter()
        .filter(|l| l.starts_with("- "))
        .filter_map(|l| paths_named(l).into_iter().next())
        .collect();
    assert!(
        named.len() <= 2,
        "at most two named exceptions; the map names {named:?}"
    );
    let mut long = Vec::new();
    for krate in super::crates() {
        for file in &krate.files {
            let lines = std::fs::read_to_string(file).unwrap().lines().count();
            if lines > LONG_FILE_LINES {
                long.push((super::shown(file).replace('\\', "/"), lines));
            }
        }
    }
    long.sort();
    long.dedup();
    let unnamed: Vec<String> = long
        .iter()
        .filter(|(path, _)| !named.contains(path))
        .map(|(path, lines)| format!("{path} ({lines} lines)"))
        .collect();
    assert!(
        unnamed.is_empty(),
        "product files over {LONG_FILE_LINES} lines that docs/architecture.md does not name as \
         exceptions (split them, or name them there): {unnamed:?}"
    );
    let stale: Vec<&String> = named
        .iter()
        .filter(|path| !long.iter().any(|(p, _)| p == *path))
        .collect();
    assert!(
        stale.is_empty(),
        "named as over {LONG_FILE_LINES} lines, but missing or not over: {stale:?}"
    );
}
