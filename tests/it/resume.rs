//! `resume` prints a command that works where the session lives, and the tests run it: in the
//! session's directory, with the harness's own variable when the root was given (`--root`,
//! the hosts file), inside `ssh -t HOST '…'` for a remote host (run through a real sshd and
//! login shell), the parent session for a Claude subagent, and hostile names (quotes, `$()`,
//! backticks, spaces) quoted so that nothing in them runs.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::json;

use crate::common::sshd::sshd_or_skip;
use crate::support::{BIN, code, ids, ndjson, records, run, stderr};

const ID: &str = "6c0ffee0-1d2c-4e5f-8a9b-0c1d2e3f4a5b";

/// A stand-in for the agent's CLI: says where it ran, with what variable and arguments.
const FAKE_CLI: &str = "#!/bin/sh\nprintf 'pwd=%s\\nconfig=%s\\nargs=%s\\n' \"$(pwd)\" \"${CLAUDE_CONFIG_DIR-unset}\" \"$*\"\n";

/// One POSIX shell word, as a reader of the output would quote it by hand.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// A Claude line of the session (or of one of its subagents) that names `cwd`.
fn claude_line(uuid: &str, cwd: &str, agent: Option<&str>, text: &str) -> String {
    let mut line = json!({"parentUuid": null, "isSidechain": agent.is_some(), "userType": "external",
        "cwd": cwd, "sessionId": ID, "version": "2.0.14", "type": "user",
        "message": {"role": "user", "content": text}, "uuid": uuid,
        "timestamp": "2026-12-01T10:00:00.000Z"});
    if let Some(agent) = agent {
        line["agentId"] = json!(agent);
    }
    format!("{line}\n")
}

/// A Claude home holding a session, a 2.1.x subagent of it (`<id>/subagents/`) and a 2.0.x one
/// (at the project's root, named by the `sessionId` inside).
fn claude_home(claude: &Path, cwd: &str) {
    let project = claude.join("projects/-work");
    fs::create_dir_all(project.join(format!("{ID}/subagents"))).unwrap();
    fs::write(
        project.join(format!("{ID}.jsonl")),
        claude_line("u-main", cwd, None, "start"),
    )
    .unwrap();
    fs::write(
        project.join(format!("{ID}/subagents/agent-a1b2c3d.jsonl")),
        claude_line("u-new", cwd, Some("a1b2c3d"), "search the code"),
    )
    .unwrap();
    fs::write(
        project.join("agent-5e6f7a8.jsonl"),
        claude_line("u-old", cwd, Some("5e6f7a8"), "search the docs"),
    )
    .unwrap();
}

/// Runs a printed command line with `sh -c`, `claude` being [`FAKE_CLI`] in `bin`.
fn run_line(line: &str, bin: &Path) -> Output {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("sh")
        .args(["-c", line])
        .env_clear()
        .env("PATH", path)
        .output()
        .unwrap()
}

fn fake_cli(bin: &Path) {
    fs::create_dir_all(bin).unwrap();
    let cli = bin.join("claude");
    fs::write(&cli, FAKE_CLI).unwrap();
    fs::set_permissions(&cli, fs::Permissions::from_mode(0o755)).unwrap();
}

fn printed(out: &Output) -> String {
    assert_eq!(code(out), 0, "{}", stderr(out));
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn a_local_session_resumes_in_its_directory_with_its_root() {
    let tmp = tempfile::tempdir().unwrap();
    let tmp = fs::canonicalize(tmp.path()).unwrap();
    let home = tmp.join("home");
    let cwd = tmp.join("work dir/it's $(touch pwned) `touch pwned2` \"q\"");
    fs::create_dir_all(&cwd).unwrap();
    let cwd = cwd.to_str().unwrap();
    let root = tmp.join("agents/it's $(x) claude");
    claude_home(&root, cwd);
    let bin = tmp.join("bin");
    fake_cli(&bin);
    let root_arg = format!("claude={}", root.display());

    // The 2.0.x subagent file is listed under its parent, like the 2.1.x one.
    let listed = ndjson(&run(&home, &["--root", &root_arg, "ls", "--json"]));
    let sessions: Vec<&str> = listed
        .iter()
        .map(|s| s["session"].as_str().unwrap())
        .collect();
    assert_eq!(
        sessions,
        [
            ID.to_string(),
            format!("{ID}+agent-5e6f7a8"),
            format!("{ID}+agent-a1b2c3d")
        ]
    );
    let old = ndjson(&run(
        &home,
        &[
            "--root",
            &root_arg,
            "read",
            &format!("local:{ID}+agent-5e6f7a8"),
            "--all",
            "--json",
        ],
    ));
    let old = records(&old);
    assert_eq!(ids(&old), ["u-old#0"]);
    assert_eq!(old[0]["text"], "search the docs");
    // The parent's prefix still names the parent alone.
    let parent = ndjson(&run(
        &home,
        &["--root", &root_arg, "read", "local:6c0ffee0", "--json"],
    ));
    assert_eq!(ids(&records(&parent)), ["u-main#0"]);

    // Every one of them resumes the parent, from its directory, with the root given.
    let want = format!(
        "cd {} && CLAUDE_CONFIG_DIR={} claude --resume {ID}\n",
        quote(cwd),
        quote(root.to_str().unwrap())
    );
    for session in [
        ID.to_string(),
        format!("{ID}+agent-a1b2c3d"),
        format!("{ID}+agent-5e6f7a8"),
    ] {
        let line = printed(&run(
            &home,
            &["--root", &root_arg, "resume", &format!("local:{session}")],
        ));
        assert_eq!(line, want, "{session}");
    }
    // And the line does what it says in a real shell, running nothing of the names.
    let ran = run_line(want.trim_end(), &bin);
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout),
        format!("pwd={cwd}\nconfig={}\nargs=--resume {ID}\n", root.display()),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert!(!cwd_has(&tmp, "pwned") && !cwd_has(&tmp, "pwned2"));

    // Under the default root the harness finds the session itself: no variable.
    claude_home(&home.join(".claude"), "/work");
    let line = printed(&run(
        &home,
        &["resume", &format!("local:{ID}+agent-5e6f7a8")],
    ));
    assert_eq!(line, format!("cd /work && claude --resume {ID}\n"));
}

/// Whether a file named `name` was created anywhere under `dir`.
fn cwd_has(dir: &Path, name: &str) -> bool {
    fs::read_dir(dir)
        .unwrap()
        .flatten()
        .any(|e| e.file_name() == name || (e.path().is_dir() && cwd_has(&e.path(), name)))
}

#[test]
fn a_codex_root_is_given_by_codex_home() {
    let tmp = tempfile::tempdir().unwrap();
    let tmp = fs::canonicalize(tmp.path()).unwrap();
    let codex = tmp.join("codex home");
    let id = "019a0000-0000-7000-8000-00000000c0de";
    let file = codex.join(format!(
        "sessions/2026/12/01/rollout-2026-12-01T10-00-00-{id}.jsonl"
    ));
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(
        &file,
        format!(
            "{}\n",
            json!({"timestamp": "2026-12-01T10:00:00.000Z", "type": "session_meta",
                "payload": {"id": id, "cwd": "/work/app", "cli_version": "0.171.0"}})
        ),
    )
    .unwrap();
    let root = format!("codex={}", codex.display());
    let line = printed(&run(
        &tmp,
        &["--root", &root, "resume", &format!("local:{id}")],
    ));
    assert_eq!(
        line,
        format!(
            "cd /work/app && CODEX_HOME={} codex resume {id}\n",
            quote(codex.to_str().unwrap())
        )
    );
}

/// A login shell that finds the agent's CLI in `~/bin`, where its user installed it.
const LOGIN_SHELL: &str = "#!/bin/sh\nPATH=\"$HOME/bin:$PATH\"; export PATH\nexec /bin/sh \"$@\"\n";

#[test]
fn a_remote_session_resumes_over_ssh_in_its_directory() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_resume_cli";
    let alias = sshd.add_script_user(user, LOGIN_SHELL);
    let remote_home = sshd.home(user);
    let cwd = remote_home.join("work dir/it's $(touch pwned) `touch pwned2` \"q\"");
    sshd.put_file(
        user,
        cwd.strip_prefix(&remote_home).unwrap().join(".keep"),
        b"",
    );
    let cli = sshd.put_file(user, "bin/claude", FAKE_CLI.as_bytes());
    fs::set_permissions(&cli, fs::Permissions::from_mode(0o755)).unwrap();
    let cwd = cwd.to_str().unwrap();
    sshd.put_file(
        user,
        format!(".claude/projects/-work/{ID}.jsonl"),
        claude_line("u-main", cwd, None, "start").as_bytes(),
    );
    sshd.put_file(
        user,
        ".claude/projects/-work/agent-5e6f7a8.jsonl",
        claude_line("u-old", cwd, Some("5e6f7a8"), "search the docs").as_bytes(),
    );
    let local = tempfile::tempdir().unwrap();
    let config = sshd.ssh_config().to_str().unwrap();
    let resume = |extra: &[&str], session: &str| {
        let out = Command::new(BIN)
            .args(["--ssh-config", config])
            .args(extra)
            .args(["resume", &format!("{alias}:{session}")])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", local.path())
            .output()
            .unwrap();
        printed(&out)
    };
    // The inner command is one word for the shell the line is typed into.
    let inner = format!("cd {} && claude --resume {ID}", quote(cwd));
    let want = format!("ssh -t -F {config} {alias} {}\n", quote(&inner));
    assert_eq!(resume(&[], ID), want);
    assert_eq!(resume(&[], &format!("{ID}+agent-5e6f7a8")), want);
    let ssh = |line: &str| {
        let ran = Command::new("sh")
            .args(["-c", line.trim_end()])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", local.path())
            .output()
            .unwrap();
        assert!(
            ran.status.success(),
            "{}",
            String::from_utf8_lossy(&ran.stderr)
        );
        String::from_utf8(ran.stdout).unwrap()
    };
    // Run for real: ssh, sshd, the user's login shell, the directory, the CLI.
    assert_eq!(
        ssh(&want),
        format!("pwd={cwd}\nconfig=unset\nargs=--resume {ID}\n")
    );
    // A root given for the remote host: the variable, on the remote side.
    let root = remote_home.join(".claude");
    let with_root = resume(&["--root", &format!("claude={}", root.display())], ID);
    let inner = format!(
        "cd {} && CLAUDE_CONFIG_DIR={} claude --resume {ID}",
        quote(cwd),
        root.display()
    );
    assert_eq!(
        with_root,
        format!("ssh -t -F {config} {alias} {}\n", quote(&inner))
    );
    assert_eq!(
        ssh(&with_root),
        format!("pwd={cwd}\nconfig={}\nargs=--resume {ID}\n", root.display())
    );
    assert!(!cwd_has(&remote_home, "pwned") && !cwd_has(&remote_home, "pwned2"));
}

/// The PowerShell statements a resume line for a Windows host carries: decoded from
/// `-EncodedCommand`, or read from `-Command "…"`.
fn powershell_statements(line: &str) -> String {
    use base64::Engine as _;
    // One single-quoted POSIX word after the destination.
    let word = line
        .strip_prefix("ssh -t me@win '")
        .and_then(|w| w.strip_suffix('\''))
        .unwrap_or_else(|| panic!("{line}"))
        .replace(r"'\''", "'");
    if let Some(encoded) = word.strip_prefix("powershell -NoProfile -EncodedCommand ") {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap();
        let units: Vec<u16> = bytes
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        return String::from_utf16(&units).unwrap();
    }
    word.strip_prefix("powershell -NoProfile -Command \"")
        .and_then(|w| w.strip_suffix('"'))
        .unwrap_or_else(|| panic!("{word}"))
        .to_string()
}

/// What a PowerShell host gets parses as PowerShell (the grammar the script generators are
/// checked with), for hostile directories, variables and harness commands alike.
#[test]
fn a_powershell_resume_line_parses_as_powershell() {
    use clankie_engine::resume::{Place, Remote, command_line};
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_powershell::LANGUAGE.into())
        .unwrap();
    let commands = [
        "claude --resume 6c0ffee0-1d2c-4e5f-8a9b-0c1d2e3f4a5b".to_string(),
        r"pi --session 'C:\Users\me\.pi\agent\sessions\it'\''s $(x).jsonl'".to_string(),
    ];
    let cwds = [
        r"C:\Users\me\app",
        r"C:\Users\it's me\$(Remove-Item x) [a] `b` ;c",
        r"D:\100% %PATH% &|<>^!",
        r"E:\ünï côdé",
    ];
    for command in &commands {
        for cwd in cwds {
            for env in [
                None,
                Some(("CLAUDE_CONFIG_DIR", r"D:\agents\it's claude".to_string())),
            ] {
                let place = Place {
                    cwd: Some(cwd.to_string()),
                    env: env.clone(),
                    remote: Some(Remote {
                        ssh_args: vec!["me@win".to_string()],
                        powershell: true,
                    }),
                };
                let line = command_line(command.clone(), &place);
                assert!(
                    line.starts_with("ssh -t me@win 'powershell -NoProfile -"),
                    "{line}"
                );
                let statements = powershell_statements(&line);
                let tree = parser.parse(&statements, None).unwrap();
                assert!(
                    !tree.root_node().has_error(),
                    "{statements}\n{}",
                    tree.root_node().to_sexp()
                );
                // The directory comes back exactly, as one single-quoted string.
                let quoted = format!("'{}'", cwd.replace('\'', "''"));
                assert!(
                    statements.starts_with(&format!("Set-Location -LiteralPath {quoted}; ")),
                    "{statements}"
                );
            }
        }
    }
}
