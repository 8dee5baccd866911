//! What every harness's resume command needs: reading the working directory from a
//! transcript's first lines, quoting the command for a POSIX shell, and wrapping it for where
//! the session lives ([`Place`]: its directory, the harness's own variable when the session is
//! under a root other than the default, and `ssh -t HOST '…'` for a remote host, in PowerShell's
//! form for a Windows one). Each harness's module says where its directory is written and what
//! its command is; `crate::harness` puts them together.

use base64::Engine as _;
use clankie_model::Harness;
use serde_json::Value;

/// Where a session lives, for what `resume` wraps around the harness's own command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    /// The directory the session ran in.
    pub cwd: Option<String>,
    /// The harness's variable and its value, when the session is under a root the harness
    /// would not look in by itself ([`root_variable`]).
    pub env: Option<(&'static str, String)>,
    /// The host, when it is not this machine.
    pub remote: Option<Remote>,
}

/// A remote host as `ssh` reaches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    /// `ssh`'s options and destination, one word each (`-p`, `2222`, `me@box`).
    pub ssh_args: Vec<String>,
    /// The host runs PowerShell (Windows): the command is written for it.
    pub powershell: bool,
}

/// The variable that points harness `harness` at `root` (its home, as the listing resolved
/// it), and its value: the home itself for a variable that names it (`CLAUDE_CONFIG_DIR`,
/// `CODEX_HOME`), or the directory above it for one the home is below (`XDG_DATA_HOME` for
/// `…/opencode`, `GEMINI_CLI_HOME` for `…/.gemini`). When the home is not named that way, a
/// session of a database file `db_file` (an absolute path) is pointed at by the harness's
/// database variable (`OPENCODE_DB`). `None` when no variable can say it.
pub fn root_variable(
    harness: Harness,
    root: &str,
    db_file: Option<&str>,
) -> Option<(&'static str, String)> {
    let home = harness.default_home();
    if let Some(var) = home.env_var {
        if home.env_relative.is_empty() {
            return Some((var, root.to_string()));
        }
        let trimmed = root.trim_end_matches(['/', '\\']);
        for sep in ['/', '\\'] {
            let relative = home.env_relative.replace('/', &sep.to_string());
            if let Some(above) = trimmed
                .strip_suffix(relative.as_str())
                .and_then(|r| r.strip_suffix(sep))
                .filter(|above| !above.is_empty())
            {
                return Some((var, above.to_string()));
            }
        }
    }
    match (harness.db_env(), db_file) {
        (Some(var), Some(db)) => Some((var, db.to_string())),
        _ => None,
    }
}

/// What `resume` says when a session's root was given (`--root`, the hosts file) but no
/// variable of the harness can name it ([`root_variable`] gives none: a Gemini root not named
/// `.gemini`, an OpenCode tree not named `opencode`): the command it prints runs the harness on
/// its own home, which may not hold the session.
pub fn unnamed_root_note(harness: Harness, root: &str) -> String {
    let name = harness.name();
    let home = harness.default_home();
    match home.env_var {
        Some(var) if !home.env_relative.is_empty() => format!(
            "{name} finds sessions only under ${var}/{rel}, and {root} is not named {rel}: the \
             command resumes it only once the session is under such a directory",
            rel = home.env_relative
        ),
        _ => format!(
            "no variable of {name} names {root}: the command resumes it only from {name}'s own \
             home"
        ),
    }
}

/// The command line `resume` prints: `command` (a harness's command, POSIX-quoted) run in the
/// session's directory with the harness's variable, and for a remote host inside
/// `ssh -t HOST '…'`. The outer line is for the POSIX shell the user types it into.
pub fn command_line(command: String, place: &Place) -> String {
    let powershell = place.remote.as_ref().is_some_and(|r| r.powershell);
    let inner = if powershell {
        powershell_line(&command, place)
    } else {
        let command = match &place.env {
            Some((var, value)) => format!("{var}={} {command}", shell_quote(value)),
            None => command,
        };
        with_cwd(command, place.cwd.as_deref())
    };
    let Some(remote) = &place.remote else {
        return inner;
    };
    let mut words = vec!["ssh".to_string(), "-t".to_string()];
    words.extend(remote.ssh_args.iter().map(|w| shell_quote(w)));
    let remote_command = if powershell {
        powershell_invocation(&inner)
    } else {
        inner
    };
    words.push(shell_quote(&remote_command));
    words.join(" ")
}

/// The command as PowerShell statements: `Set-Location -LiteralPath '…'; $env:VAR='…'; …`.
fn powershell_line(command: &str, place: &Place) -> String {
    let mut statements = Vec::new();
    if let Some(cwd) = &place.cwd {
        statements.push(format!(
            "Set-Location -LiteralPath {}",
            powershell_quote(cwd)
        ));
    }
    if let Some((var, value)) = &place.env {
        statements.push(format!("$env:{var}={}", powershell_quote(value)));
    }
    // The harness's words were quoted for POSIX sh, where a quote inside a quoted word is
    // `'\''`; in PowerShell it is `''`, and nothing else differs for single-quoted words.
    statements.push(command.replace(r"'\''", "''"));
    statements.join("; ")
}

/// What Windows' sshd runs to get `statements` run by PowerShell, whichever of cmd.exe or
/// PowerShell its default shell is: plain `-Command "…"` when nothing in it means something to
/// either shell inside double quotes, else `-EncodedCommand` (UTF-16LE, base64).
fn powershell_invocation(statements: &str) -> String {
    let plain = statements
        .bytes()
        .all(|b| (b' '..=b'~').contains(&b) && !b"\"$%`^!".contains(&b));
    if plain {
        format!("powershell -NoProfile -Command \"{statements}\"")
    } else {
        let utf16: Vec<u8> = statements
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let encoded = base64::engine::general_purpose::STANDARD.encode(utf16);
        format!("powershell -NoProfile -EncodedCommand {encoded}")
    }
}

/// One PowerShell single-quoted string (a quote doubled inside).
fn powershell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The complete lines of a transcript's first bytes that are JSON (a cut last line is not
/// trusted).
pub(crate) fn complete_lines(head: &[u8]) -> impl Iterator<Item = Value> + '_ {
    let end = head.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    head[..end]
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
}

/// The first string at `pointer` in the complete JSON lines of `head`.
pub(crate) fn first_in_lines(head: &[u8], pointer: &str) -> Option<String> {
    complete_lines(head).find_map(|v| {
        v.pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_string)
    })
}

/// `cd <cwd> && <command>`, or the command alone when the directory is unknown.
pub(crate) fn with_cwd(command: String, cwd: Option<&str>) -> String {
    match cwd {
        Some(cwd) => format!("cd {} && {command}", shell_quote(cwd)),
        None => command,
    }
}

/// One POSIX shell word: bare when every character is safe, else single-quoted.
pub fn shell_quote(text: &str) -> String {
    let safe = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:@%+=,".contains(&b));
    if safe {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_only_when_needed() {
        assert_eq!(shell_quote("$(x)"), "'$(x)'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("/w/a-b_c.d"), "/w/a-b_c.d");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(with_cwd("x".into(), Some("/w")), "cd /w && x");
        assert_eq!(with_cwd("x".into(), None), "x");
    }

    fn harness(name: &str) -> Harness {
        crate::harness::by_name(name).unwrap()
    }

    fn var(name: &'static str, value: &str) -> Option<(&'static str, String)> {
        Some((name, value.to_string()))
    }

    #[test]
    fn each_harness_is_pointed_at_its_root_by_its_own_variable() {
        let root = |h: &str, root: &str, db: Option<&str>| root_variable(harness(h), root, db);
        assert_eq!(
            root("claude", "/srv/a/.claude", None),
            var("CLAUDE_CONFIG_DIR", "/srv/a/.claude")
        );
        assert_eq!(root("codex", "/srv/c", None), var("CODEX_HOME", "/srv/c"));
        assert_eq!(
            root("gemini", "/srv/g/.gemini", None),
            var("GEMINI_CLI_HOME", "/srv/g")
        );
        assert_eq!(root("gemini", "/srv/g/gem", None), None);
        assert_eq!(
            root("opencode", "/srv/d/opencode", None),
            var("XDG_DATA_HOME", "/srv/d")
        );
        assert_eq!(
            root("opencode", r"C:\data\opencode", None),
            var("XDG_DATA_HOME", r"C:\data")
        );
        // A data dir not named `opencode`: its database by its own variable.
        assert_eq!(
            root("opencode", "/srv/oc", Some("/srv/oc/opencode.db")),
            var("OPENCODE_DB", "/srv/oc/opencode.db")
        );
        assert_eq!(root("opencode", "/srv/oc", None), None);
        assert_eq!(root("opencode", "/opencode", None), None);
        assert_eq!(
            root("grok", "/srv/x/.grok", None),
            var("GROK_HOME", "/srv/x/.grok")
        );
    }

    fn remote(powershell: bool) -> Option<Remote> {
        Some(Remote {
            ssh_args: vec!["-p".into(), "2222".into(), "me@box".into()],
            powershell,
        })
    }

    #[test]
    fn a_command_is_wrapped_for_where_the_session_lives() {
        let cmd = || "claude --resume abc".to_string();
        let hostile = "/w/it's $(rm -rf ~) `x` \"q\"";
        let local = Place {
            cwd: Some(hostile.into()),
            env: var("CLAUDE_CONFIG_DIR", "/srv/my claude"),
            remote: None,
        };
        assert_eq!(
            command_line(cmd(), &local),
            r#"cd '/w/it'\''s $(rm -rf ~) `x` "q"' && CLAUDE_CONFIG_DIR='/srv/my claude' claude --resume abc"#
        );
        let over_ssh = Place {
            cwd: Some("/w/it's".into()),
            env: None,
            remote: remote(false),
        };
        // The remote command is one word for the user's shell; the remote shell unquotes it.
        assert_eq!(
            command_line(cmd(), &over_ssh),
            r#"ssh -t -p 2222 me@box 'cd '\''/w/it'\''\'\'''\''s'\'' && claude --resume abc'"#
        );
        let plain = Place {
            cwd: Some("/w".into()),
            env: None,
            remote: remote(false),
        };
        assert_eq!(
            command_line(cmd(), &plain),
            "ssh -t -p 2222 me@box 'cd /w && claude --resume abc'"
        );
    }

    #[test]
    fn a_powershell_host_gets_powershell() {
        let cmd = || "claude --resume abc".to_string();
        let plain = Place {
            cwd: Some(r"C:\Users\me\app".into()),
            env: None,
            remote: remote(true),
        };
        assert_eq!(
            command_line(cmd(), &plain),
            r#"ssh -t -p 2222 me@box 'powershell -NoProfile -Command "Set-Location -LiteralPath '\''C:\Users\me\app'\''; claude --resume abc"'"#
        );
        // A variable, or a name cmd.exe or PowerShell would expand inside double quotes: the
        // statements go encoded.
        let with_env = Place {
            cwd: Some(r"C:\Users\me\it's 100%".into()),
            env: var("CLAUDE_CONFIG_DIR", r"D:\agents\claude"),
            remote: remote(true),
        };
        let line = command_line(cmd(), &with_env);
        let encoded = line
            .strip_prefix("ssh -t -p 2222 me@box 'powershell -NoProfile -EncodedCommand ")
            .and_then(|rest| rest.strip_suffix('\''))
            .unwrap_or_else(|| panic!("{line}"));
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap();
        let utf16: Vec<u16> = bytes
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(
            String::from_utf16(&utf16).unwrap(),
            r"Set-Location -LiteralPath 'C:\Users\me\it''s 100%'; $env:CLAUDE_CONFIG_DIR='D:\agents\claude'; claude --resume abc"
        );
        // A POSIX-quoted word of the harness's command becomes PowerShell's.
        assert_eq!(
            powershell_line(r"pi --session 'C:\p\it'\''s.jsonl'", &Place::default()),
            r"pi --session 'C:\p\it''s.jsonl'"
        );
    }

    #[test]
    fn only_complete_lines_are_read() {
        assert_eq!(
            first_in_lines(b"{\"cwd\":\"/w\"}\n", "/cwd").as_deref(),
            Some("/w")
        );
        assert_eq!(first_in_lines(b"{\"cwd\":\"/w\"}", "/cwd"), None);
    }
}
