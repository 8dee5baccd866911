//! One home holding a session of every harness in the registry, each the transcript its real
//! CLI wrote (`tests/fixtures/`; Grok Build's from fixtures, grok-cli's the hand-made database
//! of `sqlite.rs`: no real one exists here), placed where the harness keeps it, aider's project
//! and the terminal recording under the roots given with `--root`. `clankie-read ls` (text,
//! and `--json --long`) lists each session exactly once with its harness, title and cwd, locally
//! and over the test sshd. A harness added to the registry without a case here fails the test,
//! naming it.
//!
//! Where the format records no working directory, `cwd` is absent: Kimi CLI (only `kimi.json`
//! holds it, keyed by an md5, not read) and the terminal recording (an asciinema file names
//! no directory).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use rusqlite::Connection;
use serde_json::Value;

use crate::common::sshd::{Sshd, sshd_or_skip};
use crate::support::{clankie, code, ndjson, stderr};

/// The first prompt of every session the compatibility suite drives.
const COMPAT_TITLE: &str = "compat turn one: run the marker command";

/// A session `ls` must list once: its id (or, for aider, whose id holds a hash of where the
/// project lies, the id's start), title and working directory.
#[derive(Debug)]
struct Expected {
    id: String,
    title: String,
    cwd: Option<String>,
}

fn session(id: &str, title: &str, cwd: Option<&str>) -> Expected {
    Expected {
        id: id.to_string(),
        title: title.to_string(),
        cwd: cwd.map(str::to_string),
    }
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// Copies the tree `from` to `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The SQLite database at `db` made from `sql` (a `sqlite3 .dump`, or a schema and rows).
fn database(db: &Path, sql: &str) {
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let conn = Connection::open(db).unwrap();
    if let Err(e) = conn.execute_batch(sql) {
        panic!("{}: {e:?}", db.display());
    }
}

/// Places harness `name`'s session under `home` (its default home), or under `roots_dir` and
/// returns the `--root` it needs; and says what `ls` must list of it.
fn place(name: &str, home: &Path, roots_dir: &Path) -> (Option<String>, Vec<Expected>) {
    let compat = |id| vec![session(id, COMPAT_TITLE, None)];
    let with_cwd = |id, cwd| vec![session(id, COMPAT_TITLE, Some(cwd))];
    let copy = |from: &str, to: &str| copy_tree(&fixture(from), &home.join(to));
    match name {
        "claude" => {
            copy("claude-code-2.1.332", ".claude");
            (
                None,
                with_cwd(
                    "7859452f-ede6-4d17-bc8f-81d08b87b59e",
                    "/work/main/target/tmp/compat-claude-eviEOC/project",
                ),
            )
        }
        "codex" => {
            copy("codex-0.171.0", ".codex");
            (
                None,
                with_cwd(
                    "01a23153-4790-7660-8b79-1ac09239b292",
                    "/work/wt-compat/target/tmp/compat-codex-tN6xdI/project",
                ),
            )
        }
        "pi" => {
            copy("pi-1.6.0", ".pi/agent");
            (
                None,
                with_cwd(
                    "01a24966-d0b1-745d-84a8-d7bb86abf539",
                    "/work/wt/kilo-target/tmp/compat-pi-MYWAnD/project",
                ),
            )
        }
        "grok" => {
            copy("grok", ".grok");
            // Grok Build's two sessions of one project.
            let cwd = Some("/tmp/as-agent-lab/grok/project");
            (
                None,
                vec![
                    session(
                        "019f6851-7ec4-7ef0-97d3-03f3eee38755",
                        "Read hello.py and summarize what it prints without editing files.",
                        cwd,
                    ),
                    session(
                        "019f6851-7ec4-7ef0-97d3-03f3eee38756",
                        "Count the Python files under the project root and report the number.",
                        cwd,
                    ),
                ],
            )
        }
        "gemini" => {
            copy("gemini-cli-0.61.0", ".gemini");
            // The cwd is the project's `.project_root`, as the suite's HOME had it.
            (
                None,
                with_cwd(
                    "8f60115e-68fb-4ce6-aa55-6c67027a9884",
                    "/tmp/gfix/home/project",
                ),
            )
        }
        "opencode" => {
            let dump = std::fs::read_to_string(fixture("opencode/opencode-1.18.33.sql")).unwrap();
            database(&home.join(".local/share/opencode/opencode.db"), &dump);
            (
                None,
                vec![session(
                    "ses_f0de500f8ffeXvsiYJDOg5JtrU",
                    "The command printed fixture.",
                    Some("/work/proj"),
                )],
            )
        }
        "grok-cli" => {
            database(&home.join(".grok/grok.db"), crate::sqlite::GROK_DDL);
            (
                None,
                vec![session("0a1b2c3d4e5f", "list files", Some("/w"))],
            )
        }
        "copilot" => {
            copy("copilot-1.0.102", ".copilot");
            (
                None,
                with_cwd(
                    "b8a67622-abfc-4674-841e-f3fb689a3154",
                    "/work/wt/harnesses-target/tmp/compat-copilot-8TT9ac/project",
                ),
            )
        }
        "droid" => {
            copy("droid-0.225.1", ".factory");
            (
                None,
                with_cwd(
                    "9cc2e2ac-30fd-455f-88c2-6317dc8fe643",
                    "/work/wt/harnesses-target/tmp/compat-droid-OwoQ8w/project",
                ),
            )
        }
        "continue" => {
            copy("continue-1.5.47", ".continue");
            (
                None,
                with_cwd(
                    "e37d3067-df04-454c-b89d-c167e3b21c10",
                    "/work/wt/harnesses-target/tmp/compat-continue-kb7zrR/project",
                ),
            )
        }
        "cline" => {
            copy("cline-3.0.65", ".cline/data");
            (
                None,
                with_cwd(
                    "1796519374410",
                    "/work/wt/harnesses-target/tmp/compat-cline-vHdfBT/project",
                ),
            )
        }
        "qwen" => {
            copy("qwen-0.24.4", ".qwen");
            (
                None,
                with_cwd(
                    "a897da87-0c01-4883-995c-54fdbc25e6f2",
                    "/work/wt/harnesses-target/tmp/compat-qwen-fgfsn4/project",
                ),
            )
        }
        "aider" => {
            let projects = roots_dir.join("projects");
            copy_tree(&fixture("aider-0.86.2/project"), &projects.join("compat"));
            let cwd = std::fs::canonicalize(projects.join("compat")).unwrap();
            (
                Some(format!("aider={}", projects.display())),
                vec![session(
                    "aider-20261206-033628-",
                    COMPAT_TITLE,
                    Some(cwd.to_str().unwrap()),
                )],
            )
        }
        "kilo" => {
            let dump = std::fs::read_to_string(fixture("kilo-7.7.7/kilo.sql")).unwrap();
            database(&home.join(".local/share/kilo/kilo.db"), &dump);
            // `kilo run` leaves the title its row was made with (docs/harnesses.md).
            (
                None,
                vec![session(
                    "ses_db69b4271ffeQzZgzpUcXYKvAQ",
                    "New session - 2026-12-06T03:27:48.623Z",
                    Some("/compat/project"),
                )],
            )
        }
        "kimi-code" => {
            copy("kimi-code-2.1.0", ".kimi-code");
            (
                None,
                with_cwd(
                    "session_80d38fc3-fb2a-498c-bce6-a07681573a37",
                    "/compat/project",
                ),
            )
        }
        "kimi" => {
            copy("kimi-1.51.0", ".kimi");
            (None, compat("1fd2cf33-60ef-48de-b894-9cf089666e9e"))
        }
        "openhands" => {
            copy("openhands-1.2.1", ".openhands");
            (
                None,
                with_cwd("c28716849b974776b17ee9b2130ebbaf", "/compat/project"),
            )
        }
        "terminal" => {
            let recordings = roots_dir.join("recordings");
            std::fs::create_dir_all(recordings.join("casts")).unwrap();
            std::fs::copy(
                fixture("terminal/v3.cast"),
                recordings.join("casts/v3.cast"),
            )
            .unwrap();
            (
                Some(format!("terminal={}", recordings.display())),
                // A recording's title is the command it recorded.
                vec![session("v3", "/bin/sh", None)],
            )
        }
        other => panic!(
            "harness `{other}` has no case in tests/it/all_harnesses.rs: add one (its real \
             fixture placed where it keeps sessions, and the id, title and cwd `ls` must list)"
        ),
    }
}

/// A home with every harness's session, the `--root` flags it needs, and what each harness
/// must list.
struct EveryHarness {
    _dir: tempfile::TempDir,
    home: PathBuf,
    roots: Vec<String>,
    expected: BTreeMap<&'static str, Vec<Expected>>,
}

impl EveryHarness {
    /// Built under `base` (a temporary directory when `None`).
    fn new(base: Option<&Path>) -> EveryHarness {
        let dir = tempfile::tempdir().unwrap();
        let base = base.unwrap_or(dir.path()).to_path_buf();
        // A base left by an earlier run is made again.
        let _ = std::fs::remove_dir_all(&base);
        let home = base.join("home");
        let roots_dir = base.join("roots");
        std::fs::create_dir_all(&home).unwrap();
        let mut roots = Vec::new();
        let mut expected = BTreeMap::new();
        for harness in clankie_engine::harness::all() {
            let (root, sessions) = place(harness.name(), &home, &roots_dir);
            roots.extend(root);
            expected.insert(harness.name(), sessions);
        }
        EveryHarness {
            _dir: dir,
            home,
            roots,
            expected,
        }
    }

    fn args<'a>(&'a self, rest: &[&'a str]) -> Vec<&'a str> {
        let mut args = Vec::new();
        for root in &self.roots {
            args.extend(["--root", root.as_str()]);
        }
        args.extend_from_slice(rest);
        args
    }

    /// Every harness lists exactly its sessions, each once, with its title and cwd.
    fn assert_listed(&self, out: &Output, context: &str) {
        assert_eq!(code(out), 0, "{context}: {}", stderr(out));
        let lines = ndjson(out);
        let mut by_harness: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
        for line in &lines {
            let harness = line["harness"].as_str().unwrap_or_else(|| panic!("{line}"));
            by_harness
                .entry(harness.to_string())
                .or_default()
                .push(line);
        }
        for (harness, sessions) in &self.expected {
            let listed = by_harness.remove(*harness).unwrap_or_default();
            assert_eq!(
                listed.len(),
                sessions.len(),
                "{context}: {harness} lists {listed:#?}, expected {sessions:#?}"
            );
            for want in sessions {
                let found: Vec<&&Value> = listed
                    .iter()
                    .filter(|l| {
                        l["session"]
                            .as_str()
                            .is_some_and(|id| id.starts_with(&want.id))
                    })
                    .collect();
                assert_eq!(
                    found.len(),
                    1,
                    "{context}: {harness} {want:?} in {listed:#?}"
                );
                let line = found[0];
                assert_eq!(line["title"], want.title, "{context}: {harness} {line}");
                match &want.cwd {
                    Some(cwd) => {
                        assert_eq!(line["cwd"], cwd.as_str(), "{context}: {harness} {line}")
                    }
                    None => assert!(
                        line.get("cwd").is_none_or(Value::is_null),
                        "{context}: {harness} {line}"
                    ),
                }
            }
        }
        assert!(
            by_harness.is_empty(),
            "{context}: unexpected {by_harness:#?}"
        );
    }

    /// `ls`'s text: a line per session naming its harness and its title.
    fn assert_text(&self, out: &Output, context: &str) {
        assert_eq!(code(out), 0, "{context}: {}", stderr(out));
        let text = String::from_utf8(out.stdout.clone()).unwrap();
        for (harness, sessions) in &self.expected {
            for want in sessions {
                let lines: Vec<&str> = text
                    .lines()
                    .filter(|l| {
                        l.split_whitespace().any(|w| w == *harness) && l.contains(&want.title)
                    })
                    .collect();
                assert!(
                    !lines.is_empty(),
                    "{context}: no line of {harness} {want:?} in\n{text}"
                );
            }
        }
    }
}

#[test]
fn ls_lists_every_harness_session_once_with_its_title_and_cwd() {
    let every = EveryHarness::new(None);
    let out = clankie(&every.home)
        .args(every.args(&["ls", "--json", "--long"]))
        .output()
        .unwrap();
    every.assert_listed(&out, "local");
    let out = clankie(&every.home)
        .args(every.args(&["ls", "--long"]))
        .env("COLUMNS", "400")
        .output()
        .unwrap();
    every.assert_text(&out, "local text");
}

fn run_ssh(sshd: &Sshd, home: &Path, args: &[&str]) -> Output {
    let mut full = vec!["--ssh-config", sshd.ssh_config().to_str().unwrap()];
    full.extend_from_slice(args);
    clankie(home).args(&full).output().unwrap()
}

/// The same home as a test user's own, listed over SSH.
#[test]
fn ls_over_ssh_lists_every_harness_session_once_with_its_title_and_cwd() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_allharness";
    let alias = sshd.add_user(user, Path::new("/bin/bash"));
    let user_home = sshd.home(user);
    let local = EveryHarness::new(None);
    // The user's files, owned by it: each file of the local home put under its home.
    let mut stack = vec![local.home.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                let rel = entry
                    .path()
                    .strip_prefix(&local.home)
                    .unwrap()
                    .to_path_buf();
                sshd.put_file(user, rel, &std::fs::read(entry.path()).unwrap());
            }
        }
    }
    let remote = EveryHarness::new(Some(&user_home.join("every-roots-base")));
    let client_home = tempfile::tempdir().unwrap();
    let mut args = remote.args(&["ls", &alias, "--json", "--long"]);
    // Only the roots' directories are the remote `EveryHarness`'s; its home is the user's.
    let out = run_ssh(sshd, client_home.path(), &args);
    remote.assert_listed(&out, "ssh");
    args.retain(|a| *a != "--json");
    let out = run_ssh(sshd, client_home.path(), &args);
    remote.assert_text(&out, "ssh text");
    let _ = std::fs::remove_dir_all(user_home.join("every-roots-base"));
}
