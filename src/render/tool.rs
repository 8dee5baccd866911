//! What a tool call does, read from its name and input, so text output can show it as a person
//! would: a shell command as its command line, an edit as a diff. Which names and input keys
//! mean what is the harnesses' [`ToolVocabulary`], asked of the engine's registry: this module
//! knows the shapes (a command line, a replaced snippet, a file written whole, a patch
//! envelope), never a harness's spelling of them. Every harness's vocabulary is consulted, the
//! record's own first, so a tool of a known shape is shown right whichever harness calls it (a
//! harness's new tool, an OpenCode-shaped edit in a Codex rollout); anything else is `Other`.

use clankie_engine::harness::{ToolVocabulary, all, tool_vocabulary};
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
    let tools = Vocabularies::of(harness);
    let lower = name.to_ascii_lowercase();
    if let Some(begin) = tools.patch_begin(&lower) {
        let patch = match input {
            Value::String(s) => Some(s.as_str()),
            _ => tools.first_str(input, |t| t.patch_keys),
        };
        // A patch the source left out (a recorder's placeholder) is shown as it is.
        if let Some(patch) = patch.filter(|p| p.trim_start().starts_with(begin)) {
            return CallView::Patch { patch };
        }
        return CallView::Other;
    }
    if tools.any(|t| t.shell_tools.contains(&lower.as_str()))
        && let Some(command) = shell_command(&tools, input)
    {
        return CallView::Shell { command };
    }
    let Some(path) = tools.first_str(input, |t| t.path_keys) else {
        return CallView::Other;
    };
    if let Some(edit) = tools.snippet(input) {
        let every = tools.any(|t| {
            t.replace_all_keys
                .iter()
                .any(|k| input.get(k).and_then(Value::as_bool) == Some(true))
        });
        return CallView::Edit {
            path,
            edits: vec![edit],
            every,
        };
    }
    if let Some(Value::Array(items)) = tools.first(input, |t| t.edit_list_keys) {
        let edits: Option<Vec<_>> = items.iter().map(|item| tools.snippet(item)).collect();
        if let Some(edits) = edits.filter(|e| !e.is_empty()) {
            return CallView::Edit {
                path,
                edits,
                every: false,
            };
        }
    }
    if tools.any(|t| t.write_tool_marks.iter().any(|m| lower.contains(m)))
        && let Some(content) = tools.first_str(input, |t| t.content_keys)
    {
        return CallView::Write { path, content };
    }
    CallView::Other
}

/// The vocabularies a record's call is read with: its harness's, then every other harness's in
/// the registry's order.
struct Vocabularies(Vec<&'static ToolVocabulary>);

impl Vocabularies {
    fn of(harness: Harness) -> Vocabularies {
        let others = all().filter(|h| *h != harness);
        Vocabularies(
            std::iter::once(harness)
                .chain(others)
                .map(tool_vocabulary)
                .collect(),
        )
    }

    fn any(&self, holds: impl Fn(&ToolVocabulary) -> bool) -> bool {
        self.0.iter().any(|t| holds(t))
    }

    /// The value under the first key of `keys` (in the vocabularies' order) that `input` has.
    fn first<'a>(
        &self,
        input: &'a Value,
        keys: fn(&ToolVocabulary) -> &'static [&'static str],
    ) -> Option<&'a Value> {
        self.0
            .iter()
            .flat_map(|t| keys(t))
            .find_map(|k| input.get(k))
    }

    /// The string under the first key of `keys` that `input` has as a string.
    fn first_str<'a>(
        &self,
        input: &'a Value,
        keys: fn(&ToolVocabulary) -> &'static [&'static str],
    ) -> Option<&'a str> {
        self.0
            .iter()
            .flat_map(|t| keys(t))
            .find_map(|k| input.get(k).and_then(Value::as_str))
    }

    /// The old and new text of a replaced snippet, under the first pair of keys `input` has.
    fn snippet<'a>(&self, input: &'a Value) -> Option<(&'a str, &'a str)> {
        self.0
            .iter()
            .flat_map(|t| t.snippet_keys)
            .find_map(|(old, new)| Some((input.get(old)?.as_str()?, input.get(new)?.as_str()?)))
    }

    /// What an envelope of patch tool `lower` starts with, when a vocabulary names it one.
    fn patch_begin(&self, lower: &str) -> Option<&'static str> {
        self.0
            .iter()
            .find(|t| t.patch_tools.contains(&lower))
            .map(|t| t.patch_begin)
    }
}

/// The command line of a shell call: the first command key's value, a string or an argv; an
/// argv that is `sh -c SCRIPT` (`["bash", "-lc", "…"]`) is its script.
fn shell_command(tools: &Vocabularies, input: &Value) -> Option<String> {
    let value = tools.first(input, |t| t.command_keys)?;
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

    /// A call of a known shape is recognised in a record of any harness; where keys of two
    /// harnesses are both there, the record's own harness's win.
    #[test]
    fn every_vocabulary_is_read_the_record_harness_first() {
        let opencode_edit = json!({"filePath": "/a", "oldString": "x", "newString": "y"});
        assert_eq!(
            view(harness("codex"), "edit", &opencode_edit),
            CallView::Edit {
                path: "/a",
                edits: vec![("x", "y")],
                every: false
            }
        );
        assert_eq!(
            view(harness("terminal"), "bash", &json!({"command": "ls"})),
            CallView::Shell {
                command: "ls".into()
            }
        );
        let both = json!({"path": "/p", "filePath": "/f", "content": "hi"});
        let written = |path| CallView::Write {
            path,
            content: "hi",
        };
        assert_eq!(view(harness("opencode"), "write", &both), written("/f"));
        assert_eq!(view(harness("pi"), "write", &both), written("/p"));
    }
}
