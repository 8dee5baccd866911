//! What a tool call does, read from its name and input, so text output can show it as a person
//! would: a shell command as its command line, an edit as a diff. Recognised by the shape of
//! the input (the harnesses name the same fields differently), so a harness's new tool of a
//! known shape is shown right too; anything else is `Other`.

use serde_json::Value;

/// A tool call as text output shows it.
#[derive(Debug, PartialEq)]
pub enum CallView<'a> {
    /// A command line run by a shell (`Bash`, `bash`, `exec_command`, `shell`, …).
    Shell {
        command: String,
    },
    /// Snippets of a file replaced: `(old, new)` each; `every` when each occurrence is.
    Edit {
        path: &'a str,
        edits: Vec<(&'a str, &'a str)>,
        every: bool,
    },
    /// A file written whole.
    Write {
        path: &'a str,
        content: &'a str,
    },
    /// The `apply_patch` envelope (Codex's, and OpenCode's since it took Codex's tool).
    Patch {
        patch: &'a str,
    },
    Other,
}

/// Tool names that run their input as a shell command.
const SHELLS: &[&str] = &[
    "bash",
    "shell",
    "exec_command",
    "local_shell",
    "shell_command",
    "run_shell_command",
    "run_terminal_cmd",
    "execute_command",
];
/// Where each harness keeps the edited file's path.
const PATH_KEYS: &[&str] = &["file_path", "filePath", "path", "absolute_path"];
/// And the old and new text of a replaced snippet (Claude, OpenCode, Pi, and the `str_replace`
/// editors).
const SNIPPET_KEYS: &[(&str, &str)] = &[
    ("old_string", "new_string"),
    ("oldString", "newString"),
    ("oldText", "newText"),
    ("old_str", "new_str"),
];

pub fn view<'a>(name: &str, input: &'a Value) -> CallView<'a> {
    let lower = name.to_ascii_lowercase();
    if lower == "apply_patch" {
        let patch = match input {
            Value::String(s) => Some(s.as_str()),
            // Codex's function-call form, and OpenCode's `apply_patch` (`patchText`).
            _ => ["input", "patch", "patchText"]
                .iter()
                .find_map(|k| input.get(k).and_then(Value::as_str)),
        };
        // A patch the source left out (a recorder's placeholder) is shown as it is.
        if let Some(patch) = patch.filter(|p| p.trim_start().starts_with("*** Begin Patch")) {
            return CallView::Patch { patch };
        }
        return CallView::Other;
    }
    if SHELLS.contains(&lower.as_str())
        && let Some(command) = shell_command(input)
    {
        return CallView::Shell { command };
    }
    let path = PATH_KEYS
        .iter()
        .find_map(|k| input.get(k).and_then(Value::as_str));
    let Some(path) = path else {
        return CallView::Other;
    };
    if let Some(edit) = snippet(input) {
        let every = ["replace_all", "replaceAll"]
            .iter()
            .any(|k| input.get(k).and_then(Value::as_bool) == Some(true));
        return CallView::Edit {
            path,
            edits: vec![edit],
            every,
        };
    }
    if let Some(Value::Array(items)) = input.get("edits") {
        let edits: Option<Vec<_>> = items.iter().map(snippet).collect();
        if let Some(edits) = edits.filter(|e| !e.is_empty()) {
            return CallView::Edit {
                path,
                edits,
                every: false,
            };
        }
    }
    if lower.contains("write")
        && let Some(content) = input.get("content").and_then(Value::as_str)
    {
        return CallView::Write { path, content };
    }
    CallView::Other
}

fn snippet(input: &Value) -> Option<(&str, &str)> {
    SNIPPET_KEYS
        .iter()
        .find_map(|(old, new)| Some((input.get(old)?.as_str()?, input.get(new)?.as_str()?)))
}

/// The command line of a shell call: `command` or `cmd`, a string or an argv; an argv that is
/// `sh -c SCRIPT` (Codex's `["bash", "-lc", "…"]`) is its script.
fn shell_command(input: &Value) -> Option<String> {
    let value = input.get("command").or_else(|| input.get("cmd"))?;
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let argv: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
            let argv = argv?;
            match argv.as_slice() {
                [_, flag, script] if matches!(*flag, "-c" | "-lc" | "-ic") => {
                    Some(script.to_string())
                }
                _ => Some(argv.join(" ")),
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shell_calls_are_their_command_lines() {
        let cases = [
            (
                "Bash",
                json!({"command": "ls -la", "description": "list"}),
                "ls -la",
            ),
            (
                "exec_command",
                json!({"cmd": "rg foo", "workdir": "/w"}),
                "rg foo",
            ),
            (
                "shell",
                json!({"command": ["bash", "-lc", "cargo test"]}),
                "cargo test",
            ),
            ("shell", json!({"command": ["ls", "-l"]}), "ls -l"),
            ("run_shell_command", json!({"command": "pwd"}), "pwd"),
        ];
        for (name, input, want) in cases {
            assert_eq!(
                view(name, &input),
                CallView::Shell {
                    command: want.into()
                },
                "{name}"
            );
        }
        assert_eq!(view("Bash", &json!({"x": 1})), CallView::Other);
    }

    #[test]
    fn edits_of_every_harness_are_recognised() {
        let claude =
            json!({"file_path": "/a", "old_string": "x", "new_string": "y", "replace_all": true});
        let opencode = json!({"filePath": "/a", "oldString": "x", "newString": "y"});
        let pi = json!({"path": "/a", "oldText": "x", "newText": "y"});
        let multi = json!({"file_path": "/a", "edits": [
            {"old_string": "x", "new_string": "y"}, {"old_string": "p", "new_string": "q"}]});
        let edit = |every| CallView::Edit {
            path: "/a",
            edits: vec![("x", "y")],
            every,
        };
        assert_eq!(view("Edit", &claude), edit(true));
        assert_eq!(view("edit", &opencode), edit(false));
        assert_eq!(view("edit", &pi), edit(false));
        assert_eq!(
            view("MultiEdit", &multi),
            CallView::Edit {
                path: "/a",
                edits: vec![("x", "y"), ("p", "q")],
                every: false
            }
        );
        assert_eq!(
            view("Write", &json!({"file_path": "/a", "content": "hi"})),
            CallView::Write {
                path: "/a",
                content: "hi"
            }
        );
        // Reading a file is not writing one, whatever fields it has.
        assert_eq!(
            view("Read", &json!({"file_path": "/a", "content": "hi"})),
            CallView::Other
        );
    }

    #[test]
    fn apply_patch_is_a_patch_unless_the_source_left_it_out() {
        let patch = "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch";
        assert_eq!(
            view("apply_patch", &json!(patch)),
            CallView::Patch { patch }
        );
        assert_eq!(
            view("apply_patch", &json!({"input": patch})),
            CallView::Patch { patch }
        );
        assert_eq!(
            view("apply_patch", &json!({"patchText": patch})),
            CallView::Patch { patch }
        );
        assert_eq!(
            view(
                "apply_patch",
                &json!("[REDACTED_INPUT len=6285 sha=a6f17956]")
            ),
            CallView::Other
        );
    }
}
