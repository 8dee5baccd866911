//! The POSIX script carried in the exec string instead of on stdin:
//! `sh -c 'eval "$(printf "…")"'`.
//!
//! Why: sshd opens a session channel with a window of 0 and widens it only once the command
//! runs, so a script sent on stdin waits one round trip for that WINDOW_ADJUST. A script in the
//! command starts as soon as the exec request arrives, and its reply comes back one round trip
//! after the channel opened, as `ssh host CMD`'s does (docs/performance.md).
//!
//! How it passes every login shell unchanged: sshd runs `$SHELL -c COMMAND`, and the login shell
//! may be sh, bash, zsh, ksh, yash, fish, tcsh or (on Windows) cmd.exe or PowerShell. COMMAND is
//! `sh -c '…'`: the single-quoted part holds no `'`, no `\` followed by `\` or `'` (fish's only
//! escapes in single quotes), no `!` (csh history) and no newline (csh refuses one in quotes),
//! so each of those shells hands it to `sh` as it is; a shell without `sh` says
//! `'sh' is not recognized`, which `shell = auto` already takes for Windows. Inside, the script
//! is a double-quoted `printf` format: every byte that sh would read in double quotes (`$`, `` ` ``,
//! `"`, `\`) or that the outer quoting forbids, and every byte that is not printable ASCII,
//! is a three-digit octal escape `\ooo`, and `%` is `%%`; `printf` turns them back into the
//! script's own bytes, which `eval` runs as `sh -s` would run them from the channel.
//!
//! Why `eval` and not `printf "…"|sh -s`: the command substitution forks once and execs
//! nothing (`printf` is a builtin), where the pipe starts a second `sh`; on a loaded host
//! that exec is most of what the invocation costs beyond `sh` itself. The difference in
//! meaning does not reach a script: each is one `{ …; } </dev/null` group, parsed whole before
//! any of it runs and reading nothing from stdin, whose text is ASCII without NUL, so the
//! newlines that command substitution strips from its end are all it loses.

use crate::script::posix::{COMPRESSED_TAIL, POSIX_EXEC};

/// The longest exec string that carries a script. Linux refuses a single argument over
/// 128 KiB (`MAX_ARG_STRLEN`), and the login shell gets the command as one; a script whose
/// command would be longer stays on stdin (one round trip more, and only for batched reads of
/// many files).
pub(crate) const MAX_INLINE_COMMAND: usize = 64 * 1024;

/// What is written before and after the escaped script.
const HEAD: &str = "sh -c 'eval \"$(printf \"";
const TAIL: &str = "\")\"'";

/// The exec string that runs `stdin` as a POSIX script, when `exec` is the POSIX invocation and
/// the command fits [`MAX_INLINE_COMMAND`]; `None` keeps the script on stdin.
pub(crate) fn inline_command(exec: &str, stdin: &[u8]) -> Option<String> {
    if exec != POSIX_EXEC || stdin.is_empty() {
        return None;
    }
    let mut command = String::with_capacity(HEAD.len() + stdin.len() * 5 / 4 + TAIL.len());
    command.push_str(HEAD);
    for &byte in stdin {
        match byte {
            b'%' => command.push_str("%%"),
            b'\'' | b'\\' | b'!' | b'$' | b'`' | b'"' => push_octal(&mut command, byte),
            b' '..=b'~' => command.push(char::from(byte)),
            _ => push_octal(&mut command, byte),
        }
        if command.len() + TAIL.len() > MAX_INLINE_COMMAND {
            return None;
        }
    }
    command.push_str(TAIL);
    Some(command)
}

fn push_octal(command: &mut String, byte: u8) {
    command.push_str(&format!("\\{byte:03o}"));
}

/// How `-v` names a command: an inline script (plain, or compressed by
/// `posix::compressed_invocation`) as `"sh -s"` and its size (the escaped script would fill the
/// terminal), anything else as it is, with what goes on stdin.
pub(crate) fn shown_command(command: &str, stdin_len: usize) -> String {
    if command.starts_with(HEAD) && command.ends_with(TAIL) {
        format!(
            "exec {POSIX_EXEC:?} (script in the command, {} bytes)",
            command.len()
        )
    } else if command.starts_with("sh -c 'printf \"") && command.ends_with(COMPRESSED_TAIL) {
        format!(
            "exec {POSIX_EXEC:?} (gzip-compressed script in the command, {} bytes)",
            command.len()
        )
    } else {
        format!("exec {command:?} ({stdin_len} bytes of script on stdin)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quoted_part_holds_nothing_a_login_shell_reads() {
        let script: Vec<u8> = (0u8..=255).collect();
        let command = inline_command(POSIX_EXEC, &script).unwrap();
        let quoted = &command[HEAD.len()..command.len() - TAIL.len()];
        assert!(quoted.is_ascii());
        for forbidden in ["'", "!", "\n", "\r", "$", "`", "\"", "\\\\"] {
            assert!(!quoted.contains(forbidden), "{forbidden:?} in {quoted}");
        }
        // Every backslash starts a three-digit octal escape.
        for (at, _) in quoted.match_indices('\\') {
            let digits = &quoted[at + 1..at + 4];
            assert!(
                digits.bytes().all(|b| (b'0'..=b'7').contains(&b)),
                "{digits}"
            );
        }
    }

    #[test]
    fn only_the_posix_invocation_and_only_a_script_that_fits() {
        assert_eq!(inline_command("powershell -NoProfile", b"x"), None);
        assert_eq!(inline_command(POSIX_EXEC, b""), None);
        assert!(inline_command(POSIX_EXEC, &vec![b'a'; MAX_INLINE_COMMAND / 2]).is_some());
        assert_eq!(
            inline_command(POSIX_EXEC, &vec![b'a'; MAX_INLINE_COMMAND]),
            None
        );
        assert_eq!(
            inline_command(POSIX_EXEC, &vec![b'\''; MAX_INLINE_COMMAND / 3]),
            None
        );
    }

    /// Every login shell on this machine hands the command to `sh`, and `sh` runs the script's
    /// exact bytes.
    #[cfg(unix)]
    #[test]
    fn every_login_shell_here_runs_the_exact_script() {
        let data: Vec<u8> = (1u8..=255).filter(|&b| b != b'\'').collect();
        let mut script = b"printf '%s' '".to_vec();
        script.extend_from_slice(&data);
        script.extend_from_slice(
            b"' | od -An -v -tx1\n{ printf '%s\\n' 'a \\\\ $HOME `x` \"q\" 100% !'; } </dev/null\n",
        );
        let command = inline_command(POSIX_EXEC, &script).unwrap();
        // The script holds bytes that are not UTF-8; run it from a pipe as `sh -s` would.
        let want = {
            use std::io::Write;
            let mut child = std::process::Command::new("sh")
                .arg("-s")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(&script).unwrap();
            child.wait_with_output().unwrap().stdout
        };
        assert!(want.ends_with(b"a \\\\ $HOME `x` \"q\" 100% !\n"));
        for shell in ["sh", "dash", "bash", "zsh", "mksh", "yash", "fish", "tcsh"] {
            let Ok(out) = std::process::Command::new(shell)
                .arg("-c")
                .arg(&command)
                .output()
            else {
                continue;
            };
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&want),
                "{shell}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
