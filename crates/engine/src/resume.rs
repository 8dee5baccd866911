//! `resume`: each harness's own command to continue a session, from the session's working
//! directory as its records (or sidecar) name it. Pure: the driver reads the bytes.

use serde_json::Value;

use clankie_model::Harness;

/// Which file holds a session's working directory, relative to the transcript's directory:
/// the transcript itself (`None`), or a sidecar (Grok's `summary.json`, Gemini's
/// `../.project_root`).
pub fn cwd_source(harness: Harness) -> Option<&'static str> {
    match harness {
        Harness::Grok => Some("summary.json"),
        Harness::Gemini => Some("../.project_root"),
        Harness::Claude | Harness::Codex | Harness::Pi | Harness::OpenCode | Harness::GrokCli => {
            None
        }
    }
}

/// The working directory a session ran in, from the first bytes of the file [`cwd_source`]
/// names: Claude's first line with a `cwd`, Codex's `session_meta.cwd`, Pi's header `cwd`,
/// Grok's `summary.json` `info.cwd`, Gemini's `.project_root`.
pub fn session_cwd(harness: Harness, head: &[u8]) -> Option<String> {
    let found = match harness {
        Harness::Gemini => std::str::from_utf8(head).ok().map(|s| s.trim().to_string()),
        Harness::Grok => serde_json::from_slice::<Value>(head)
            .ok()?
            .pointer("/info/cwd")
            .and_then(Value::as_str)
            .map(str::to_string),
        // Database sessions carry their directory in a column; the driver queries it.
        Harness::OpenCode | Harness::GrokCli => None,
        Harness::Claude | Harness::Codex | Harness::Pi => complete_lines(head).find_map(|v| {
            let cwd = match harness {
                Harness::Codex if v.get("type").and_then(Value::as_str) == Some("session_meta") => {
                    v.pointer("/payload/cwd")
                }
                Harness::Codex => None,
                _ => v.get("cwd"),
            };
            cwd.and_then(Value::as_str).map(str::to_string)
        }),
    };
    found.filter(|cwd| !cwd.is_empty() && !cwd.contains(['\0', '\n']))
}

/// The id the harness's own resume takes when it differs from ours: Gemini's full `sessionId`
/// from the header (file names hold only 8 characters of it).
pub fn native_id(harness: Harness, head: &[u8]) -> Option<String> {
    match harness {
        Harness::Gemini => complete_lines(head)
            .next()?
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_string),
        _ => None,
    }
}

fn complete_lines(head: &[u8]) -> impl Iterator<Item = Value> + '_ {
    let end = head.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    head[..end]
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
}

/// The command line that resumes a session: `cd <cwd> && <harness command>`, without the `cd`
/// when the directory is unknown. `id` is the id the harness takes; `path` the transcript's
/// absolute path (Pi resumes by path, which is exact).
pub fn resume_command(harness: Harness, id: &str, path: &str, cwd: Option<&str>) -> String {
    let command = match harness {
        Harness::Claude => format!("claude --resume {}", shell_quote(id)),
        Harness::Codex => format!("codex resume {}", shell_quote(id)),
        Harness::Pi => format!("pi --session {}", shell_quote(path)),
        Harness::Grok => format!("grok --resume {}", shell_quote(id)),
        Harness::Gemini => format!("gemini --resume {}", shell_quote(id)),
        Harness::OpenCode => format!("opencode --session {}", shell_quote(id)),
        Harness::GrokCli => format!("grok --session {}", shell_quote(id)),
    };
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
    fn cwd_from_each_harness() {
        let claude = b"{\"type\":\"summary\"}\n{\"type\":\"user\",\"cwd\":\"/w/app\"}\n";
        assert_eq!(
            session_cwd(Harness::Claude, claude).as_deref(),
            Some("/w/app")
        );
        let codex = b"{\"type\":\"session_meta\",\"payload\":{\"id\":\"x\",\"cwd\":\"/w/c\"}}\n";
        assert_eq!(session_cwd(Harness::Codex, codex).as_deref(), Some("/w/c"));
        let pi = b"{\"type\":\"session\",\"id\":\"x\",\"cwd\":\"/w/p\"}\n";
        assert_eq!(session_cwd(Harness::Pi, pi).as_deref(), Some("/w/p"));
        let grok = br#"{"info":{"id":"x","cwd":"/w/g"}}"#;
        assert_eq!(session_cwd(Harness::Grok, grok).as_deref(), Some("/w/g"));
        assert_eq!(
            session_cwd(Harness::Gemini, b"/w/m\n").as_deref(),
            Some("/w/m")
        );
        // An incomplete first line is not trusted.
        assert_eq!(session_cwd(Harness::Pi, b"{\"cwd\":\"/w/p\""), None);
        let gemini = b"{\"sessionId\":\"9e000000-1111\",\"projectHash\":\"h\"}\n";
        assert_eq!(
            native_id(Harness::Gemini, gemini).as_deref(),
            Some("9e000000-1111")
        );
    }

    #[test]
    fn commands_are_quoted() {
        assert_eq!(
            resume_command(Harness::Claude, "abc", "/p", Some("/w/it's here")),
            r"cd '/w/it'\''s here' && claude --resume abc"
        );
        assert_eq!(
            resume_command(Harness::Pi, "x", "/h/.pi/a b.jsonl", None),
            "pi --session '/h/.pi/a b.jsonl'"
        );
        assert_eq!(
            resume_command(Harness::Codex, "019a", "/p", Some("/w")),
            "cd /w && codex resume 019a"
        );
        assert_eq!(shell_quote("$(x)"), "'$(x)'");
    }
}
