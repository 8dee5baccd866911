//! One output switch: `--format json` prints what `--json` prints, byte for byte, on every
//! subcommand that has both (`read`, `ls`, `grep`, `check`, `hosts`, `resume`, `cache`), after
//! the subcommand or before it; the last of `--format` and `--json` wins; and the subcommands
//! that print no NDJSON (`script`, `completions`, `man`, `mcp`) refuse it with exit 2 and one
//! line on stderr. All over the fixtures on this machine: no host is reached.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::support::{clankie, code, ndjson, stderr};

/// The spellings of NDJSON output, each a way to write the same run.
const JSON_SPELLINGS: usize = 3;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A temp `$HOME` with a Claude session of its own (for `check`), a hosts file, and an empty
/// cache directory.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join(".claude/projects/-format");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::copy(
            fixtures().join("claude/projects/-fixtures/short.jsonl"),
            project.join("0f0f0000-0000-4000-8000-000000000001.jsonl"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("hosts.toml"),
            "[hosts.devbox]\nssh = \"me@devbox\"\n\n[hosts.here]\nlocal = true\n",
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("cache")).unwrap();
        Home { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs the binary with the hosts file and `args`.
    fn run(&self, args: &[String]) -> Output {
        clankie(self.path())
            .env("XDG_CACHE_HOME", self.path().join("cache"))
            .arg("--hosts")
            .arg(self.path().join("hosts.toml"))
            .args(args)
            .output()
            .unwrap()
    }

    /// The run `args(spelling)` asks for NDJSON in each spelling: `--json` and `--format json`
    /// after the subcommand's arguments, `--format=json` before the subcommand. `args` is given
    /// the spelling's index (for a state file of its own).
    fn each_spelling(&self, args: impl Fn(usize) -> Vec<String>) -> Vec<Output> {
        (0..JSON_SPELLINGS)
            .map(|spelling| {
                let args = args(spelling);
                let args = match spelling {
                    0 => [args, strings(&["--json"])].concat(),
                    1 => [args, strings(&["--format", "json"])].concat(),
                    _ => [strings(&["--format=json"]), args].concat(),
                };
                self.run(&args)
            })
            .collect()
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// `args` on the fixtures: `--root` options for their Claude and Codex homes first.
fn on_fixtures(args: &[&str]) -> Vec<String> {
    let claude = format!("claude={}", fixtures().join("claude").display());
    let codex = format!("codex={}", fixtures().join("codex").display());
    [
        strings(&["--root", &claude, "--root", &codex]),
        strings(args),
    ]
    .concat()
}

/// Every spelling's run ended alike and printed the same bytes; returns them.
fn same_bytes(what: &str, outputs: &[Output], status: i32) -> Vec<u8> {
    for (spelling, out) in outputs.iter().enumerate() {
        assert_eq!(
            code(out),
            status,
            "{what} (spelling {spelling}): {}",
            stderr(out)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&outputs[0].stdout),
            "{what}: spelling {spelling} printed other bytes than --json"
        );
        assert_eq!(out.stdout, outputs[0].stdout, "{what}");
    }
    // What was printed is NDJSON.
    ndjson(&outputs[0]);
    outputs[0].stdout.clone()
}

/// `same_bytes`, and something was printed.
fn same_lines(what: &str, outputs: &[Output]) -> Vec<Value> {
    let bytes = same_bytes(what, outputs, 0);
    assert!(!bytes.is_empty(), "{what}: nothing printed");
    ndjson(&outputs[0])
}

#[test]
fn format_json_prints_what_json_prints_on_every_subcommand_that_has_both() {
    let home = Home::new();
    let fixed = |args: &[&str]| {
        let args = on_fixtures(args);
        move |_| args.clone()
    };

    // `ls`, plain and `--long`.
    let sessions = same_lines("ls", &home.each_spelling(fixed(&["ls"])));
    assert!(sessions.iter().all(|s| s["type"] == "session"));
    same_lines("ls --long", &home.each_spelling(fixed(&["ls", "--long"])));

    // `read`: a tail, every record, a filtered page, a page after a cursor.
    let tail = same_lines("read", &home.each_spelling(fixed(&["read", "local:short"])));
    assert_eq!(tail.last().unwrap()["type"], "page");
    same_lines(
        "read --all",
        &home.each_spelling(fixed(&["read", "local:claude/tool_heavy", "--all"])),
    );
    same_lines(
        "read --kind",
        &home.each_spelling(fixed(&["local:claude/short", "--kind", "user"])),
    );
    let head = same_lines(
        "read --head",
        &home.each_spelling(fixed(&[
            "read",
            "local:claude/tool_heavy",
            "--head",
            "-n",
            "2",
        ])),
    );
    let cursor = head.last().unwrap()["cursor"].as_str().unwrap().to_string();
    same_lines(
        "read --since",
        &home.each_spelling(fixed(&[
            "read",
            "local:claude/tool_heavy",
            "--since",
            &cursor,
        ])),
    );

    // `grep`: matches with context, counts, sessions; and nothing matched (exit 1).
    same_lines(
        "grep -C",
        &home.each_spelling(fixed(&["grep", "-C", "1", "marker"])),
    );
    same_lines(
        "grep -c",
        &home.each_spelling(fixed(&["grep", "-c", "marker"])),
    );
    same_lines(
        "grep -l",
        &home.each_spelling(fixed(&["grep", "-l", "marker"])),
    );
    same_bytes(
        "grep, no match",
        &home.each_spelling(fixed(&["grep", "-F", "no such text anywhere 0f0f"])),
        1,
    );

    // `check` of the home's own sessions: each spelling with a state file of its own, which
    // sees the same changes.
    let state = |spelling: usize| home.path().join(format!("state-{spelling}.json"));
    let check = |spelling: usize| {
        [
            strings(&["check", "--records", "--state"]),
            vec![state(spelling).display().to_string(), "local".into()],
        ]
        .concat()
    };
    same_bytes("check, first run", &home.each_spelling(check), 0);
    std::fs::copy(
        fixtures().join("claude/projects/-fixtures/tool_heavy.jsonl"),
        home.path()
            .join(".claude/projects/-format/0f0f0000-0000-4000-8000-000000000002.jsonl"),
    )
    .unwrap();
    let changed = same_lines("check, a new session", &home.each_spelling(check));
    assert!(
        changed.iter().any(|l| l["type"] == "activity"),
        "{changed:?}"
    );
    assert!(changed.iter().any(|l| l["type"] == "record"), "{changed:?}");

    // `hosts`: the hosts file's; checked, the same but for the times measured.
    same_lines("hosts", &home.each_spelling(fixed(&["hosts"])));
    let checked: Vec<Vec<Value>> = home
        .each_spelling(fixed(&["hosts", "--check", "here"]))
        .iter()
        .map(|out| {
            assert_eq!(code(out), 0, "hosts --check: {}", stderr(out));
            let mut lines = ndjson(out);
            for line in &mut lines {
                line.as_object_mut()
                    .unwrap()
                    .retain(|k, _| !k.ends_with("_ms"));
            }
            lines
        })
        .collect();
    assert!(
        checked.iter().all(|lines| *lines == checked[0]),
        "{checked:?}"
    );
    assert_eq!(checked[0][0]["ok"], true);

    // `resume`: one `resume` object.
    let resume = same_lines(
        "resume",
        &home.each_spelling(fixed(&["resume", "local:short"])),
    );
    assert_eq!(resume.len(), 1);
    assert_eq!(resume[0]["type"], "resume");
    assert_eq!(resume[0]["session"], "short");

    // `cache`: an empty cache lists nothing; clearing it says so.
    same_bytes("cache ls", &home.each_spelling(fixed(&["cache", "ls"])), 0);
    let cleared = same_lines(
        "cache clear",
        &home.each_spelling(fixed(&["cache", "clear"])),
    );
    assert_eq!(cleared[0]["type"], "cleared");
    same_lines(
        "cache clear HOST",
        &home.each_spelling(fixed(&["cache", "clear", "devbox"])),
    );
}

#[test]
fn the_last_of_format_and_json_wins_and_text_is_the_default() {
    let home = Home::new();
    let stdout = |args: &[&str]| {
        let out = home.run(&on_fixtures(args));
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    for command in [&["hosts"][..], &["resume", "local:short"]] {
        let text = stdout(command);
        assert!(!text.starts_with('{'), "{text}");
        let json = stdout(&[command, &["--json"]].concat());
        assert!(json.starts_with('{'), "{json}");
        assert_eq!(stdout(&[command, &["--format", "text"]].concat()), text);
        assert_eq!(
            stdout(&[command, &["--json", "--format", "text"]].concat()),
            text
        );
        assert_eq!(
            stdout(&[command, &["--format", "text", "--json"]].concat()),
            json
        );
        assert_eq!(
            stdout(&[&["--json"][..], command, &["--format=text"]].concat()),
            text
        );
    }
}

#[test]
fn subcommands_without_ndjson_refuse_format_json_in_one_line() {
    let home = Home::new();
    for command in [
        &["script", "list"][..],
        &["completions", "bash"],
        &["man"],
        &["mcp"],
    ] {
        let name = command[0];
        for spelling in [
            [command, &["--format", "json"]].concat(),
            [command, &["--json"]].concat(),
            [&["--format=json"][..], command].concat(),
        ] {
            let out = home.run(&strings(&spelling));
            let err = stderr(&out);
            assert_eq!(code(&out), 2, "{spelling:?}: {err}");
            assert!(out.stdout.is_empty(), "{spelling:?} printed something");
            assert_eq!(err.lines().count(), 1, "{spelling:?}: {err}");
            assert!(
                err.starts_with(&format!(
                    "clankie-read: error: `{name}` prints no NDJSON: --format json is for "
                )),
                "{spelling:?}: {err}"
            );
        }
    }
    // Text is theirs to print.
    for command in [&["script", "list"][..], &["man"]] {
        let out = home.run(&strings(&[command, &["--format", "text"]].concat()));
        assert_eq!(code(&out), 0, "{command:?}: {}", stderr(&out));
        assert!(!out.stdout.is_empty());
    }
}
