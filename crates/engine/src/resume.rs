//! What every harness's resume command needs: reading the working directory from a
//! transcript's first lines, and quoting the command for a POSIX shell. Each harness's module
//! says where its directory is written and what its command is; `crate::harness` puts them
//! together.

use serde_json::Value;

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

    #[test]
    fn only_complete_lines_are_read() {
        assert_eq!(
            first_in_lines(b"{\"cwd\":\"/w\"}\n", "/cwd").as_deref(),
            Some("/w")
        );
        assert_eq!(first_in_lines(b"{\"cwd\":\"/w\"}", "/cwd"), None);
    }
}
