//! What a tool call does, read from its name and input, so text output can show it as a person
//! would: a shell command as its command line, an edit as a diff. Which names and input keys
//! mean what is the record's harness's [`ToolVocabulary`], asked of the engine's registry: this
//! module knows the shapes (a command line, a replaced snippet, a file written whole, a patch
//! envelope), never a harness's spelling of them. Edits are recognised by the keys of their
//! input, so a harness's new tool with known keys is shown right too; anything else is `Other`.

use clankie_engine::harness::{ToolVocabulary, tool_vocabulary};
use clankie_model::Harness;
use serde_json::Value;

/// A tool call as text output shows it.
#[derive(Debug, PartialEq)]
pub enum CallView<'a> {
    /// A command line run by a shell tool ([`ToolVocabulary::shell_tools`]).
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
    /// A patch envelope ([`ToolVocabulary::patch_tools`]).
    Patch {
        patch: &'a str,
    },
    Other,
}

/// How text output shows a call of tool `name` with `input` in a record of `harness`.
pub fn view<'a>(harness: Harness, name: &str, input: &'a Value) -> CallView<'a> {
    let tools = tool_vocabulary(harness);
    let lower = name.to_ascii_lowercase();
    if tools.patch_tools.contains(&lower.as_str()) {
        let patch = match input {
            Value::String(s) => Some(s.as_str()),
            _ => first_str(input, tools.patch_keys),
        };
        // A patch the source left out (a recorder's placeholder) is shown as it is.
        if let Some(patch) = patch.filter(|p| p.trim_start().starts_with(tools.patch_begin)) {
            return CallView::Patch { patch };
        }
        return CallView::Other;
    }
    if tools.shell_tools.contains(&lower.as_str())
        && let Some(command) = shell_command(tools, input)
    {
        return CallView::Shell { command };
    }
    let Some(path) = first_str(input, tools.path_keys) else {
        return CallView::Other;
    };
    if let Some(edit) = snippet(tools, input) {
        let every = tools
            .replace_all_keys
            .iter()
            .any(|k| input.get(k).and_then(Value::as_bool) == Some(true));
        return CallView::Edit {
            path,
            edits: vec![edit],
            every,
        };
    }
    if let Some(Value::Array(items)) = tools.edit_list_keys.iter().find_map(|k| input.get(k)) {
        let edits: Option<Vec<_>> = items.iter().map(|item| snippet(tools, item)).collect();
        if let Some(edits) = edits.filter(|e| !e.is_empty()) {
            return CallView::Edit {
                path,
                edits,
                every: false,
            };
        }
    }
    if tools.write_tool_marks.iter().any(|m| lower.contains(m))
        && let Some(content) = first_str(input, tools.content_keys)
    {
        return CallView::Write { path, content };
    }
    CallView::Other
}

/// The string under the first of `keys` that `input` has as a string.
fn first_str<'a>(input: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| input.get(k).and_then(Value::as_str))
}

fn snippet<'a>(tools: &ToolVocabulary, input: &'a Value) -> Option<(&'a str, &'a str)> {
    tools
        .snippet_keys
        .iter()
        .find_map(|(old, new)| Some((input.get(old)?.as_str()?, input.get(new)?.as_str()?)))
}

/// The command line of a shell call: the first command key's value, a string or an argv; an
/// argv that is `sh -c SCRIPT` (`["bash", "-lc", "…"]`) is its script.
fn shell_command(tools: &ToolVocabulary, input: &Value) -> Option<String> {
    let value = tools.command_keys.iter().find_map(|k| input.get(k))?;
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

    fn harness(name: &str) -> Harness {
        clankie_engine::harness::by_name(name).unwrap()
    }

    #[test]
    fn shell_calls_are_their_command_lines() {
        let cases = [
            (
                "claude",
                "Bash",
                json!({"command": "ls -la", "description": "list"}),
                "ls -la",
            ),
            (
                "codex",
                "exec_command",
                json!({"cmd": "rg foo", "workdir": "/w"}),
                "rg foo",
            ),
            (
                "codex",
                "shell",
                json!({"command": ["bash", "-lc", "cargo test"]}),
                "cargo test",
            ),
            ("codex", "shell", json!({"command": ["ls", "-l"]}), "ls -l"),
            (
                "gemini",
                "run_shell_command",
                json!({"command": "pwd"}),
                "pwd",
            ),
        ];
        for (harness_name, name, input, want) in cases {
            assert_eq!(
                view(harness(harness_name), name, &input),
                CallView::Shell {
                    command: want.into()
                },
                "{name}"
            );
        }
        assert_eq!(
            view(harness("claude"), "Bash", &json!({"x": 1})),
            CallView::Other
        );
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
        assert_eq!(view(harness("claude"), "Edit", &claude), edit(true));
        assert_eq!(view(harness("opencode"), "edit", &opencode), edit(false));
        assert_eq!(view(harness("pi"), "edit", &pi), edit(false));
        assert_eq!(
            view(harness("claude"), "MultiEdit", &multi),
            CallView::Edit {
                path: "/a",
                edits: vec![("x", "y"), ("p", "q")],
                every: false
            }
        );
        assert_eq!(
            view(
                harness("claude"),
                "Write",
                &json!({"file_path": "/a", "content": "hi"})
            ),
            CallView::Write {
                path: "/a",
                content: "hi"
            }
        );
        // Reading a file is not writing one, whatever fields it has.
        assert_eq!(
            view(
                harness("claude"),
                "Read",
                &json!({"file_path": "/a", "content": "hi"})
            ),
            CallView::Other
        );
    }

    #[test]
    fn apply_patch_is_a_patch_unless_the_source_left_it_out() {
        let patch = "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch";
        let (codex, opencode) = (harness("codex"), harness("opencode"));
        assert_eq!(
            view(codex, "apply_patch", &json!(patch)),
            CallView::Patch { patch }
        );
        assert_eq!(
            view(codex, "apply_patch", &json!({"input": patch})),
            CallView::Patch { patch }
        );
        assert_eq!(
            view(opencode, "apply_patch", &json!({"patchText": patch})),
            CallView::Patch { patch }
        );
        assert_eq!(
            view(
                codex,
                "apply_patch",
                &json!("[REDACTED_INPUT len=6285 sha=a6f17956]")
            ),
            CallView::Other
        );
    }

    /// A harness's tools are its own: a call of the same name in a record of a harness whose
    /// vocabulary does not hold it is shown by its name and input.
    #[test]
    fn names_are_read_in_the_record_harness_vocabulary() {
        let patch = "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch";
        assert_eq!(
            view(harness("claude"), "apply_patch", &json!(patch)),
            CallView::Other
        );
        assert_eq!(
            view(harness("claude"), "exec_command", &json!({"cmd": "ls"})),
            CallView::Other
        );
        assert_eq!(
            view(harness("terminal"), "bash", &json!({"command": "ls"})),
            CallView::Other
        );
    }
}
