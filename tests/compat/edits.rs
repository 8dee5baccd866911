//! Edits as the real CLIs write them: the scripted model asks Codex for an `apply_patch` and
//! OpenCode for an `edit` of a file in the project directory (one line changed, one added), and
//! the reader must show each as a unified diff of exactly that change.
//!
//! These sessions are also the fixtures of the text snapshots (`tests/it/text_snapshots.rs`):
//! with `CLANKIE_COMPAT_RECORD_DIR=DIR`, each test copies what its CLI wrote into
//! `DIR` (Codex's rollout, OpenCode's database as an `sqlite3 .dump`), to be renamed into
//! `tests/fixtures/` as `tests/fixtures/LAYOUT.md` says.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use crate::clis::{self, Cli};
use crate::server::{ModelServer, OUTPUT, ToolCall};

/// The prompt of the edit session.
pub const PROMPT: &str = "compat edit: bump the size and add the marker line";
/// The file the model edits, relative to the project directory, and its text before the edit.
const FILE: &str = "notes.txt";
const BEFORE: &str = "# Compat notes\ncolour = blue\nsize = 3\n";
/// Its text after: `size` changed, a line holding the server's [`OUTPUT`] added. The request
/// that carries the edit in its history therefore holds [`OUTPUT`], which is what makes the
/// model server give its final answer there.
fn after() -> String {
    format!("# Compat notes\ncolour = blue\nsize = 4\nmarker = {OUTPUT}\n")
}

/// A model of Codex 0.171's built-in catalog, whose `apply_patch_tool_type` is `freeform`.
const CODEX_MODEL: &str = "gpt-5.5";

const CLI_TIMEOUT: Duration = Duration::from_secs(180);

/// Codex offers `apply_patch` as a freeform tool: its input is the patch text itself, which
/// the server sends as a `custom_tool_call` (a string `args`).
fn codex_pick(tools: &[String], _body: &str) -> Option<ToolCall> {
    tools.iter().any(|t| t == "apply_patch").then(|| ToolCall {
        name: "apply_patch".to_string(),
        args: json!(format!(
            "*** Begin Patch\n*** Update File: {FILE}\n@@\n # Compat notes\n colour = blue\n-size = 3\n+size = 4\n+marker = {OUTPUT}\n*** End Patch\n"
        )),
    })
}

/// OpenCode's `edit` replaces `oldString` with `newString` in `filePath` (relative paths are
/// the project's).
fn opencode_pick(tools: &[String], _body: &str) -> Option<ToolCall> {
    tools.iter().any(|t| t == "edit").then(|| ToolCall {
        name: "edit".to_string(),
        args: json!({
            "filePath": FILE,
            "oldString": "size = 3\n",
            "newString": format!("size = 4\nmarker = {OUTPUT}\n"),
        }),
    })
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn codex_apply_patch() {
    let home = edit_session(&clis::CODEX, codex_pick);
    record(&home, "codex", |home, out| {
        for rollout in files_named(&home.join(".codex/sessions"), "rollout-") {
            std::fs::copy(&rollout, out.join(rollout.file_name().unwrap())).unwrap();
        }
    });
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn opencode_edit() {
    let home = edit_session(&clis::OPENCODE, opencode_pick);
    record(&home, "opencode", |home, out| {
        let db = home.join(".local/share/opencode/opencode.db");
        let dump = Command::new("sqlite3")
            .arg(&db)
            .arg(".dump")
            .output()
            .expect("running sqlite3 (to dump OpenCode's database)");
        assert!(dump.status.success(), "sqlite3 .dump {}", db.display());
        std::fs::write(out.join("opencode.sql"), dump.stdout).unwrap();
    });
}

/// Runs `cli` on the edit prompt in a fresh HOME against a server that answers with `pick`'s
/// call; checks the file was edited and the reader shows the edit as a diff. Returns the HOME.
fn edit_session(cli: &Cli, pick: crate::server::ToolPicker) -> tempfile::TempDir {
    let install = PathBuf::from(
        std::env::var_os("CLANKIE_COMPAT_DIR")
            .unwrap_or_else(|| panic!("CLANKIE_COMPAT_DIR is not set: run scripts/compat")),
    );
    let server = ModelServer::start(pick);
    // Codex refuses to make its helper links under /tmp: its HOME is under target/. OpenCode
    // records the git repository around its directory, with every worktree of it: its HOME is
    // under /tmp, outside any, so that it records the project alone.
    let parent = match cli.harness {
        "codex" => PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
        _ => std::env::temp_dir(),
    };
    let home = tempfile::Builder::new()
        .prefix(&format!("compat-edit-{}-", cli.harness))
        .disable_cleanup(std::env::var_os("CLANKIE_COMPAT_KEEP").is_some())
        .tempdir_in(parent)
        .unwrap();
    let setup = cli.prepare(home.path(), server.port, &install);
    std::fs::write(setup.work.join(FILE), BEFORE).unwrap();
    if cli.harness == "codex" {
        // Codex offers `apply_patch` only to the models of its catalog (a `compat-model` gets
        // none): this session names one of them.
        let config = setup.home.join(".codex/config.toml");
        let text = std::fs::read_to_string(&config).unwrap();
        assert!(text.contains("model = \"compat-model\""), "{text}");
        let text = text.replace(
            "model = \"compat-model\"",
            &format!("model = \"{CODEX_MODEL}\""),
        );
        std::fs::write(&config, text).unwrap();
    }

    let out = crate::common::run_with_stdin(&mut cli.first_turn(&setup, PROMPT), b"", CLI_TIMEOUT);
    // Whole bodies for a look when something fails (the tools each CLI offers are there).
    let full: String = server
        .log()
        .iter()
        .map(|l| format!("{} {} -> {}\n{}\n\n", l.method, l.path, l.step, l.body))
        .collect();
    let dump =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("compat-edit-{}.log", cli.harness));
    std::fs::write(&dump, full).unwrap();
    let log = || {
        format!(
            "(whole bodies in {})\n{}",
            dump.display(),
            server.describe()
        )
    };
    assert!(
        out.status.success(),
        "{}: the edit turn failed ({}):\nstdout: {}\nstderr: {}\n--- server ---\n{}",
        cli.harness,
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        log()
    );
    assert_eq!(server.tool_calls().len(), 1, "{}", log());
    assert!(
        server.log().iter().any(|l| l.step == "final"),
        "no request carried the edit back: {}",
        log()
    );
    let edited = std::fs::read_to_string(setup.work.join(FILE)).unwrap();
    assert_eq!(
        edited,
        after(),
        "{}: the CLI did not apply the edit",
        cli.harness
    );

    // The reader shows the edit as a diff: the changed line old and new, the added line.
    let text = first_session_text(&setup, cli.harness);
    for line in ["-size = 3", "+size = 4", &format!("+marker = {OUTPUT}")] {
        assert!(
            text.lines().any(|l| l.ends_with(line)),
            "{}: no diff line {line:?} in\n{text}",
            cli.harness
        );
    }
    assert!(
        !text.lines().any(|l| l.ends_with("-colour = blue")),
        "{}: an unchanged line shown as removed:\n{text}",
        cli.harness
    );
    home
}

/// The text output of the one session of `harness` the CLI wrote.
fn first_session_text(setup: &clis::Setup, harness: &str) -> String {
    let ls = setup.ours(&["ls", "--json"]);
    let ids: Vec<String> = String::from_utf8_lossy(&ls)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|l| l["type"] == "session" && l["harness"] == harness)
        .map(|l| l["session"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 1, "{harness}: sessions {ids:?}");
    let target = format!("local:{harness}/{}", ids[0]);
    String::from_utf8(setup.ours(&["--color", "never", "read", &target, "--all"])).unwrap()
}

/// Where a recorded file says the throwaway HOME was (it names a directory of this machine).
const RECORDED_HOME: &str = "/home/compat";

/// With `CLANKIE_COMPAT_RECORD_DIR` set, `copy` puts what the CLI wrote under `DIR/<harness>`,
/// and each file there then names the HOME [`RECORDED_HOME`].
fn record(home: &tempfile::TempDir, harness: &str, copy: impl Fn(&Path, &Path)) {
    let Some(dir) = std::env::var_os("CLANKIE_COMPAT_RECORD_DIR") else {
        return;
    };
    let out = PathBuf::from(dir).join(harness);
    std::fs::create_dir_all(&out).unwrap();
    copy(home.path(), &out);
    // Absolute, and relative to `/` (OpenCode's `path` of a session outside any repository).
    let here = home.path().to_str().unwrap();
    for file in std::fs::read_dir(&out).unwrap().flatten() {
        let text = std::fs::read_to_string(file.path())
            .unwrap()
            .replace(here, RECORDED_HOME)
            .replace(&here[1..], &RECORDED_HOME[1..]);
        std::fs::write(file.path(), text).unwrap();
    }
}

/// Files under `dir` (recursively) whose name starts with `prefix`.
fn files_named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if entry.file_name().to_string_lossy().starts_with(prefix) {
                found.push(path);
            }
        }
    }
    found
}
