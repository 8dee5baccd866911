//! `resume`: each harness's own command to continue a session, from the session's working
//! directory as its records (or sidecar) name it. Pure: the driver reads the bytes; each
//! harness's module says where the directory is written and what its command is.

use serde_json::Value;

use crate::harness;
use clankie_model::Harness;

/// Which file holds a session's working directory, relative to the transcript's directory:
/// the transcript itself (`None`), or a sidecar (Grok's `summary.json`).
pub fn cwd_source(harness: Harness) -> Option<&'static str> {
    harness::format(harness).cwd_file()
}

/// The working directory a session ran in, from the first bytes of the file [`cwd_source`]
/// names; never empty, and never with a NUL or a newline.
pub fn session_cwd(harness: Harness, head: &[u8]) -> Option<String> {
    harness::format(harness)
        .session_cwd(head)
        .filter(|cwd| !cwd.is_empty() && !cwd.contains(['\0', '\n']))
}

/// The id the harness's own resume takes when it differs from ours (file names that hold only
/// part of it).
pub fn native_id(harness: Harness, head: &[u8]) -> Option<String> {
    harness::format(harness).native_id(head)
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

/// The command line that resumes a session: `cd <cwd> && <harness command>`, without the `cd`
/// when the directory is unknown. `id` is the id the harness takes; `path` the transcript's
/// absolute path (Pi resumes by path, which is exact).
pub fn resume_command(harness: Harness, id: &str, path: &str, cwd: Option<&str>) -> String {
    let command = harness::format(harness).resume_command(id, path);
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

    fn named(name: &str) -> Harness {
        harness::by_name(name).unwrap()
    }

    #[test]
    fn cwd_from_each_harness() {
        let claude = b"{\"type\":\"summary\"}\n{\"type\":\"user\",\"cwd\":\"/w/app\"}\n";
        assert_eq!(
            session_cwd(named("claude"), claude).as_deref(),
            Some("/w/app")
        );
        let codex = b"{\"type\":\"session_meta\",\"payload\":{\"id\":\"x\",\"cwd\":\"/w/c\"}}\n";
        assert_eq!(session_cwd(named("codex"), codex).as_deref(), Some("/w/c"));
        let pi = b"{\"type\":\"session\",\"id\":\"x\",\"cwd\":\"/w/p\"}\n";
        assert_eq!(session_cwd(named("pi"), pi).as_deref(), Some("/w/p"));
        let grok = br#"{"info":{"id":"x","cwd":"/w/g"}}"#;
        assert_eq!(session_cwd(named("grok"), grok).as_deref(), Some("/w/g"));
        assert_eq!(
            session_cwd(named("gemini"), b"/w/m\n").as_deref(),
            Some("/w/m")
        );
        // An incomplete first line is not trusted.
        assert_eq!(session_cwd(named("pi"), b"{\"cwd\":\"/w/p\""), None);
        let gemini = b"{\"sessionId\":\"9e000000-1111\",\"projectHash\":\"h\"}\n";
        assert_eq!(
            native_id(named("gemini"), gemini).as_deref(),
            Some("9e000000-1111")
        );
    }

    #[test]
    fn commands_are_quoted() {
        assert_eq!(
            resume_command(named("claude"), "abc", "/p", Some("/w/it's here")),
            r"cd '/w/it'\''s here' && claude --resume abc"
        );
        assert_eq!(
            resume_command(named("pi"), "x", "/h/.pi/a b.jsonl", None),
            "pi --session '/h/.pi/a b.jsonl'"
        );
        assert_eq!(
            resume_command(named("codex"), "019a", "/p", Some("/w")),
            "cd /w && codex resume 019a"
        );
        assert_eq!(shell_quote("$(x)"), "'$(x)'");
    }
}
