//! Completion, driven through the real shells: bash's completion function called as bash calls
//! it (`COMP_WORDS`, `COMP_CWORD`, `COMP_LINE`, the word split at `:`), zsh's completer as compinit
//! registers it, with `_describe` capturing what it is given, and fish's `complete -C`. Each
//! completes subcommands, their flags, hosts from the hosts file and the SSH config, and a
//! host's session ids (a local host of the hosts file, and a real sshd); a host that does not
//! answer completes nothing, quietly.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::require_tool;
use crate::common::sshd::sshd_or_skip;
use crate::support::{BIN, code, fixtures_home, run, stderr};

fn stdout_of(args: &[&str]) -> String {
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), args);
    assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// A home with a hosts file (`devbox` over SSH; `here`, this machine with the fixtures as its
/// Claude root) and an SSH config naming `gpu-1`, `bastion` and a pattern, and the completion
/// script of each shell.
struct Setup {
    home: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        let home = tempfile::tempdir().unwrap();
        let config = home.path().join(".config/clankie");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("hosts.toml"),
            format!(
                "[hosts.devbox]\nssh = \"devbox\"\n[hosts.here]\nlocal = true\nroots = {{ claude = \"{}\" }}\n",
                fixtures_home().display()
            ),
        )
        .unwrap();
        let ssh = home.path().join(".ssh");
        std::fs::create_dir_all(&ssh).unwrap();
        // `down` points at a port nothing listens on: completing its sessions fails at once.
        std::fs::write(
            ssh.join("config"),
            "Host gpu-1 *.internal !jump\n  HostName 10.0.0.9\nHost bastion\nHost down\n  HostName 127.0.0.1\n  Port 1\n",
        )
        .unwrap();
        Setup { home }
    }

    fn script(&self, shell: &str) -> PathBuf {
        let out = crate::support::clankie(self.home.path())
            .args(["completions", shell])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let path = self.home.path().join(format!("clankie-read.{shell}"));
        std::fs::write(&path, &out.stdout).unwrap();
        path
    }

    /// A shell with this home and nothing of the runner's environment.
    fn shell(&self, shell: &str) -> Command {
        let mut cmd = Command::new(shell);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("TERM", "dumb");
        cmd
    }
}

fn lines(out: &Output) -> Vec<String> {
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stderr(out), "", "the completion said something on stderr");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect()
}

fn assert_offers(got: &[String], want: &[&str], not: &[&str], line: &str) {
    for w in want {
        assert!(got.iter().any(|g| g == w), "`{line}`: no {w:?} in {got:?}");
    }
    for n in not {
        assert!(!got.iter().any(|g| g == n), "`{line}`: {n:?} in {got:?}");
    }
}

/// What bash offers for `words` (as bash splits them: `:` is a word of its own), the last
/// being the word under the cursor, by calling the registered function as bash's programmable
/// completion does: `COMP_LINE` without blanks around a `:`, and an empty current word right
/// after a `:`.
fn bash_complete(setup: &Setup, script: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect();
    let mut line = String::new();
    for (i, word) in words.iter().enumerate() {
        if i > 0 && *word != ":" && words[i - 1] != ":" {
            line.push(' ');
        }
        line.push_str(word);
    }
    let program = format!(
        r#"source "$1" || exit 9
function=$(complete -p clankie-read | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
[[ -n $function ]] || exit 8
COMP_WORDS=({words})
COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))
COMP_LINE=$2
COMP_POINT=${{#COMP_LINE}}
prev=""
((COMP_CWORD > 0)) && prev=${{COMP_WORDS[COMP_CWORD-1]}}
current=${{COMP_WORDS[COMP_CWORD]}}
[[ $current == : ]] && current=""
"$function" clankie-read "$current" "$prev"
printf '%s\n' "${{COMPREPLY[@]}}"
"#,
        words = quoted.join(" ")
    );
    let out = setup
        .shell("bash")
        .args(["--norc", "--noprofile", "-c", &program, "bash"])
        .arg(script)
        .arg(&line)
        .output()
        .unwrap();
    lines(&out).into_iter().filter(|l| !l.is_empty()).collect()
}

#[test]
fn bash_completes_subcommands_flags_hosts_and_session_ids() {
    if !require_tool("bash") {
        return;
    }
    let setup = Setup::new();
    let script = setup.script("bash");
    let cases: &[(&[&str], &[&str], &[&str])] = &[
        (&["clankie-read", "l"], &["ls"], &[]),
        (
            &["clankie-read", "ls", "--h"],
            &["--harness", "--help"],
            &[],
        ),
        (
            &["clankie-read", "read", "--no-"],
            &["--no-pager", "--no-redact", "--no-thinking"],
            &[],
        ),
        (
            &["clankie-read", "grep", "x", "--no-c"],
            &["--no-cache"],
            &[],
        ),
        (&["clankie-read", "grep", "x", "--veri"], &["--verify"], &[]),
        (
            &["clankie-read", "check", "--st"],
            &["--state", "--strict"],
            &[],
        ),
        // The first word: a subcommand, or a host of the shorthand `HOST:SESSION`.
        (&["clankie-read", "d"], &["devbox:", "down:"], &["ls"]),
        (
            &["clankie-read", ""],
            &[
                "ls", "read", "local:", "here:", "devbox:", "gpu-1:", "bastion:",
            ],
            &["*.internal:", "!jump:", "jump:"],
        ),
        (&["clankie-read", "ls", "g"], &["gpu-1"], &[]),
        (&["clankie-read", "hosts", "b"], &["bastion"], &[]),
        // bash gives `here:sh` as `here`, `:`, `sh` and replaces only what follows the `:`.
        (
            &["clankie-read", "here", ":", "sh"],
            &["short"],
            &["here:short"],
        ),
        (
            &["clankie-read", "resume", "here", ":", "sh"],
            &["short"],
            &[],
        ),
        (
            &["clankie-read", "here", ":", "short", "--no-p"],
            &["--no-pager"],
            &[],
        ),
        (&["clankie-read", "down", ":", ""], &[], &["short"]),
    ];
    for (words, want, not) in cases {
        let got = bash_complete(&setup, &script, words);
        assert_offers(&got, want, not, &words.join(" "));
    }
    // `here:` alone: every session of the fixtures, the host part left to bash.
    let got = bash_complete(&setup, &script, &["clankie-read", "here", ":"]);
    assert!(got.len() > 5, "{got:?}");
    assert!(got.contains(&"short".to_string()), "{got:?}");
}

/// What zsh's completer gives `_describe` for `words` (the last under the cursor): the values,
/// unescaped, without their descriptions.
fn zsh_complete(setup: &Setup, script: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect();
    // The real compinit registers the script's function in `_comps`; `_describe` (what the
    // function hands its candidates to, as the name of an array of `value:description`) is
    // replaced to print them.
    let program = format!(
        r#"autoload -Uz compinit && compinit -u -D || exit 7
source "$1" || exit 9
[[ -n ${{_comps[clankie-read]}} ]] || exit 8
_describe() {{ print -rl -- "${{(@P)3}}" }}
words=({words})
CURRENT=${{#words}}
"${{_comps[clankie-read]}}"
"#,
        words = quoted.join(" ")
    );
    let out = setup
        .shell("zsh")
        .args(["-f", "-c", &program, "zsh"])
        .arg(script)
        .output()
        .unwrap();
    lines(&out).iter().map(|l| zsh_value(l)).collect()
}

/// The value of `_describe`'s `value:description`, where the value escapes `:` and `\`.
fn zsh_value(item: &str) -> String {
    let mut value = String::new();
    let mut chars = item.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => value.extend(chars.next()),
            ':' => break,
            c => value.push(c),
        }
    }
    value
}

#[test]
fn zsh_completes_subcommands_flags_hosts_and_session_ids() {
    if !require_tool("zsh") {
        return;
    }
    let setup = Setup::new();
    let script = setup.script("zsh");
    let cases: &[(&[&str], &[&str], &[&str])] = &[
        (&["clankie-read", "l"], &["ls"], &[]),
        (
            &["clankie-read", "ls", "--h"],
            &["--harness", "--help"],
            &[],
        ),
        (
            &["clankie-read", "read", "--no-"],
            &["--no-pager", "--no-redact", "--no-thinking"],
            &[],
        ),
        (
            &["clankie-read", "grep", "x", "--no-c"],
            &["--no-cache"],
            &[],
        ),
        (&["clankie-read", "grep", "x", "--veri"], &["--verify"], &[]),
        (&["clankie-read", "d"], &["devbox:", "down:"], &["ls"]),
        (&["clankie-read", "ls", "g"], &["gpu-1"], &["*.internal"]),
        (&["clankie-read", "here:sh"], &["here:short"], &[]),
        (
            &["clankie-read", "here:short", "--no-p"],
            &["--no-pager"],
            &[],
        ),
    ];
    for (words, want, not) in cases {
        let got = zsh_complete(&setup, &script, words);
        assert_offers(&got, want, not, &words.join(" "));
    }
}

/// What fish offers for the command line `line` (`complete -C`), without descriptions.
fn fish_complete(setup: &Setup, script: &Path, line: &str) -> Vec<String> {
    let out = setup
        .shell("fish")
        .args([
            "--no-config",
            "-c",
            "source $argv[1]; and complete -C $argv[2]",
        ])
        .arg(script)
        .arg(line)
        .output()
        .unwrap();
    lines(&out)
        .into_iter()
        .map(|l| l.split('\t').next().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn fish_completes_subcommands_flags_hosts_and_session_ids() {
    if !require_tool("fish") {
        return;
    }
    let setup = Setup::new();
    let script = setup.script("fish");
    let cases: &[(&str, &[&str], &[&str])] = &[
        ("clankie-read l", &["ls"], &[]),
        ("clankie-read ls --h", &["--harness", "--help"], &[]),
        ("clankie-read ls --sort ", &["mtime", "name", "size"], &[]),
        (
            "clankie-read read --no-",
            &["--no-pager", "--no-redact", "--no-thinking"],
            &[],
        ),
        ("clankie-read d", &["devbox:", "down:"], &["ls"]),
        ("clankie-read ls g", &["gpu-1"], &["*.internal"]),
        ("clankie-read here:sh", &["here:short"], &[]),
        ("clankie-read resume here:sh", &["here:short"], &[]),
        ("clankie-read here:short --no-p", &["--no-pager"], &[]),
        ("clankie-read down:", &[], &["down:short"]),
        ("clankie-read grep x --veri", &["--verify"], &[]),
    ];
    for (line, want, not) in cases {
        let got = fish_complete(&setup, &script, line);
        assert_offers(&got, want, not, line);
    }
}

#[test]
fn session_ids_of_a_host_over_ssh_complete_and_an_unreachable_host_completes_nothing() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_bash";
    let session = "c0c0a001-0000-4000-8000-00000000c0de";
    let line = r#"{"type":"user","uuid":"u1","timestamp":"2026-11-02T10:00:00.000Z","message":{"role":"user","content":"hello"}}"#;
    sshd.put_file(
        user,
        format!(".claude/projects/-complete/{session}.jsonl"),
        format!("{line}\n").as_bytes(),
    );
    let home = tempfile::tempdir().unwrap();
    let alias = sshd.alias(user);
    let complete = |words: &[&str]| {
        crate::support::clankie(home.path())
            .env("CLANKIE_COMPLETE", "fish")
            .arg("--")
            .arg("clankie-read")
            .args(["--ssh-config", sshd.ssh_config().to_str().unwrap()])
            .args(words)
            .output()
            .unwrap()
    };
    // The host from the --ssh-config given on the line being completed.
    let hosts = lines(&complete(&["ck-b"]));
    assert!(
        hosts.iter().any(|l| l.starts_with(&format!("{alias}:\t"))),
        "{hosts:?}"
    );
    let ids = lines(&complete(&[&format!("{alias}:c0c0")]));
    assert_eq!(ids, [format!("{alias}:{session}\tclaude")]);
    // Nothing listens on port 1: no candidate, no word on stderr, exit 0.
    let ssh_config = home.path().join("down.config");
    std::fs::write(&ssh_config, "Host down\n  HostName 127.0.0.1\n  Port 1\n").unwrap();
    let out = crate::support::clankie(home.path())
        .env("CLANKIE_COMPLETE", "fish")
        .args(["--", "clankie-read", "--ssh-config"])
        .arg(&ssh_config)
        .arg("down:")
        .output()
        .unwrap();
    assert_eq!(lines(&out), Vec::<String>::new());
}

#[test]
fn a_host_that_accepts_and_never_speaks_completes_nothing_within_the_budget() {
    // A listener that accepts and says nothing: the SSH handshake would wait for the SSH
    // config's ConnectTimeout (10 s); completion gives up sooner, quietly.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let home = tempfile::tempdir().unwrap();
    let ssh_config = home.path().join("silent.config");
    std::fs::write(
        &ssh_config,
        format!("Host silent\n  HostName 127.0.0.1\n  Port {port}\n"),
    )
    .unwrap();
    let out = crate::support::clankie(home.path())
        .env("CLANKIE_COMPLETE", "fish")
        .args(["--", "clankie-read", "--ssh-config"])
        .arg(&ssh_config)
        .arg("silent:")
        .output()
        .unwrap();
    assert_eq!(lines(&out), Vec::<String>::new());
    // The connection was made: it waits in the backlog (closed now that the process is gone).
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_ok(), "completion never connected");
}

#[test]
fn powershell_gets_a_script_that_knows_the_read_options() {
    let script = stdout_of(&["completions", "powershell"]);
    for option in ["--since", "--no-redact"] {
        assert!(script.contains(option), "no {option}");
    }
}

#[test]
fn the_scripts_call_back_the_binary_that_printed_them() {
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout_of(&["completions", shell]);
        assert!(script.contains(BIN), "{shell}: {script}");
        assert!(script.contains("CLANKIE_COMPLETE"), "{shell}: {script}");
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
