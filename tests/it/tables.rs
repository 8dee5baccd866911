//! `ls` and `hosts` as tables, under a real terminal where that is what they draw for: `script`
//! (util-linux) runs the binary on a pty, as `pager.rs` does. On a terminal `ls` and `hosts`
//! have a header row; piped they have none. An `ls` that finds nothing says where it looked,
//! on stderr, when stderr is a terminal; piped (cron) it prints nothing.

use std::path::Path;
use std::process::Command;

use crate::common::require_tool;
use crate::support::{BIN, clankie, code, stderr};

/// What a run of `clankie-read ARGS` under a pty of `columns` showed (stdout and stderr both,
/// `\r\n` made `\n`), and its exit status. With `stdout_to`, stdout goes to that file instead
/// (piped) while stderr stays on the terminal.
pub(crate) fn on_a_terminal(
    home: &Path,
    columns: usize,
    args: &[&str],
    stdout_to: Option<&Path>,
) -> (String, i32) {
    let mut command: Vec<String> = std::iter::once(BIN)
        .chain(args.iter().copied())
        .map(shell_quote)
        .collect();
    if let Some(file) = stdout_to {
        command.push(format!(">{}", shell_quote(&file.display().to_string())));
    }
    let out = Command::new("script")
        .args(["-qec", &command.join(" "), "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("SHELL", "/bin/sh")
        .env("TZ", "UTC")
        .env("COLUMNS", columns.to_string())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let shown = String::from_utf8(out.stdout.clone())
        .unwrap()
        .replace("\r\n", "\n");
    (shown, code(&out))
}

fn shell_quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

/// A home with one Claude session of a known id.
fn home_with_one_session() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".claude/projects/-w");
    std::fs::create_dir_all(&dir).unwrap();
    let line = serde_json::json!({"type":"user","uuid":"u0","cwd":"/w/alpha",
        "timestamp":"2026-11-02T10:00:00Z","message":{"role":"user","content":"hello there"}});
    std::fs::write(
        dir.join("cafe0001-0000-4000-8000-000000000001.jsonl"),
        format!("{line}\n"),
    )
    .unwrap();
    home
}

#[test]
fn ls_on_a_terminal_has_a_header_row_and_piped_has_none() {
    if !require_tool("script") {
        return;
    }
    let home = home_with_one_session();
    let (shown, status) = on_a_terminal(home.path(), 200, &["ls", "--color", "never"], None);
    assert_eq!(status, 0, "{shown}");
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines.len(), 2, "{shown}");
    let header = regex::Regex::new(
        r"^HARNESS  ID                                    MODIFIED   +SIZE  PROJECT   TITLE$",
    )
    .unwrap();
    assert!(header.is_match(lines[0]), "{shown}");
    assert!(
        lines[1].starts_with("claude   cafe0001-0000-4000-8000-000000000001  "),
        "{shown}"
    );
    // Each column starts under its name.
    for name in ["ID", "PROJECT", "TITLE"] {
        let at = lines[0].find(name).unwrap();
        assert_ne!(&lines[1][at..at + 1], " ", "{name}: {shown}");
        assert_eq!(&lines[1][at - 1..at], " ", "{name}: {shown}");
    }
    // Piped: the rows alone.
    let piped = clankie(home.path())
        .args(["ls", "--color", "never"])
        .output()
        .unwrap();
    let piped = String::from_utf8(piped.stdout).unwrap();
    assert_eq!(piped.lines().count(), 1, "{piped}");
    assert!(piped.starts_with("claude  cafe0001-"), "{piped}");
}

#[test]
fn ls_finding_nothing_says_where_it_looked_on_a_terminal_and_nothing_piped() {
    if !require_tool("script") {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let (shown, status) = on_a_terminal(home.path(), 200, &["ls"], None);
    assert_eq!(status, 0, "{shown}");
    let claude = home.path().join(".claude").display().to_string();
    let hint = regex::Regex::new(&format!(
        r"^clankie-read: no sessions on local \(looked in {}, [^)]+\); --root HARNESS=DIR looks in another harness home\n\z",
        regex::escape(&claude)
    ))
    .unwrap();
    assert!(hint.is_match(&shown), "{shown:?}");
    // Each directory once, though two harnesses share one.
    let dirs: Vec<&str> = shown[shown.find('(').unwrap() + 1..shown.find(')').unwrap()]
        .split(", ")
        .collect();
    let mut once = dirs.clone();
    once.sort();
    once.dedup();
    assert_eq!(once.len(), dirs.len(), "{shown}");
    // The hint is stderr's: stdout piped to a file gets nothing, the terminal still the line.
    let file = home.path().join("stdout");
    let (shown, status) = on_a_terminal(home.path(), 200, &["ls"], Some(&file));
    assert_eq!(status, 0, "{shown}");
    assert!(hint.is_match(&shown), "{shown:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "");
    // Piped both ways (cron): nothing at all, exit 0.
    let quiet = clankie(home.path()).arg("ls").output().unwrap();
    assert_eq!(code(&quiet), 0);
    assert_eq!(
        (quiet.stdout.as_slice(), stderr(&quiet).as_str()),
        (&b""[..], "")
    );

    // Sessions there, none passing the filters: that is said instead.
    let home = home_with_one_session();
    let (shown, status) = on_a_terminal(
        home.path(),
        200,
        &["ls", "--title", "nothing like it", "--harness", "claude"],
        None,
    );
    assert_eq!(status, 0, "{shown}");
    assert_eq!(
        shown,
        "clankie-read: no session on local matches --title (1 listed)\n"
    );
    // Only the harness asked for is looked for.
    let empty = tempfile::tempdir().unwrap();
    let (shown, _) = on_a_terminal(empty.path(), 200, &["ls", "--harness", "claude"], None);
    assert_eq!(
        shown,
        format!(
            "clankie-read: no sessions on local (looked in {}); --root HARNESS=DIR looks in another harness home\n",
            empty.path().join(".claude").display()
        )
    );
}

/// A hosts file of hosts none of which is reached: `hosts` without `--check` connects nowhere.
fn hosts_file(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("hosts.toml");
    std::fs::write(
        &path,
        "[hosts.devbox]\nssh = \"me@devbox.example\"\nshell = \"posix\"\n\
         [hosts.w]\nssh = \"w\"\nshell = \"powershell\"\n",
    )
    .unwrap();
    path
}

#[test]
fn hosts_is_one_aligned_table_with_a_header_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = hosts_file(dir.path());
    let out = clankie(dir.path())
        .args(["--hosts", hosts.to_str().unwrap(), "hosts"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "local   local                  posix\n\
         devbox  ssh me@devbox.example  posix\n\
         w       ssh w                  powershell\n"
    );
    if !require_tool("script") {
        return;
    }
    let (shown, status) = on_a_terminal(
        dir.path(),
        200,
        &["--hosts", hosts.to_str().unwrap(), "hosts"],
        None,
    );
    assert_eq!(status, 0, "{shown}");
    assert_eq!(
        shown,
        "HOST    TRANSPORT              SHELL\n\
         local   local                  posix\n\
         devbox  ssh me@devbox.example  posix\n\
         w       ssh w                  powershell\n"
    );
}
