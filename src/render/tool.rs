//! What a tool call does, read from its name and input, so text output can show it as a person
//! would: a shell command as its command line, an edit as a diff. Which names and input keys
//! mean what is the harnesses' [`ToolVocabulary`], asked of the engine's registry: this module
//! knows the shapes (a command line, a replaced snippet, a file written whole, a patch
//! envelope), never a harness's spelling of them. Every harness's vocabulary is consulted, the
//! record's own first, so a tool of a known shape is shown right whichever harness calls it (a
//! harness's new tool, an OpenCode-shaped edit in a Codex rollout); anything else is `Other`.

use clankie_engine::harness::{PatchEnvelope, ToolRole, ToolVocabulary, all, tool_vocabulary};
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
    /// A patch envelope ([`ToolVocabulary::patch_tools`]) and the grammar it is written in.
    Patch {
        patch: &'a str,
        envelope: &'static PatchEnvelope,
    },
    /// A tool that reads, searches, lists, fetches or starts an agent
    /// ([`ToolVocabulary::roles`]), told in a line (`path (lines 40–120)`, `"pattern" in dir`,
    /// a task's description) and, for an agent, the prompt it was given.
    Role {
        role: ToolRole,
        line: String,
        body: Option<&'a str>,
    },
    Other,
}

/// How text output shows a call of tool `name` with `input` in a record of `harness`.
pub fn view<'a>(harness: Harness, name: &str, input: &'a Value) -> CallView<'a> {
    let tools = Vocabularies::of(harness);
    let lower = name.to_ascii_lowercase();
    if let Some(envelope) = tools.patch_envelope(&lower) {
        let patch = match input {
            Value::String(s) => Some(s.as_str()),
            _ => tools.first_str(input, |t| t.patch_keys),
        };
        // A patch the source left out (a recorder's placeholder) is shown as it is.
        if let Some(patch) = patch.filter(|p| p.trim_start().starts_with(envelope.begin)) {
            return CallView::Patch { patch, envelope };
        }
        return CallView::Other;
    }
    if tools.any(|t| t.shell_tools.contains(&lower.as_str()))
        && let Some(command) = shell_command(&tools, input)
    {
        return CallView::Shell { command };
    }
    if let Some(role) = tools.role(&lower)
        && let Some(view) = role_view(&tools, role, input)
    {
        return view;
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

/// A call of a tool of `role` told in one line, when its input has what that line needs.
fn role_view<'a>(tools: &Vocabularies, role: ToolRole, input: &'a Value) -> Option<CallView<'a>> {
    let text = |keys: fn(&ToolVocabulary) -> &'static [&'static str]| tools.first_text(input, keys);
    let dir = text(|t| t.dir_keys);
    let in_dir = |line: String| match &dir {
        Some(dir) => format!("{line} in {dir}"),
        None => line,
    };
    let (line, body) = match role {
        ToolRole::Read => {
            let path = tools
                .first_str(input, |t| t.path_keys)
                .or_else(|| tools.first_str(input, |t| t.read_path_keys))?;
            (format!("{path}{}", lines_read(tools, input)), None)
        }
        ToolRole::Search => {
            let pattern = text(|t| t.pattern_keys)?;
            let line = in_dir(format!("\"{pattern}\""));
            match text(|t| t.file_filter_keys) {
                Some(filter) => (format!("{line} ({filter})"), None),
                None => (line, None),
            }
        }
        ToolRole::Glob => (in_dir(text(|t| t.pattern_keys)?), None),
        ToolRole::List => (dir?, None),
        ToolRole::WebSearch => (format!("\"{}\"", text(|t| t.pattern_keys)?), None),
        ToolRole::Fetch => (
            text(|t| t.url_keys).or_else(|| text(|t| t.prompt_keys))?,
            None,
        ),
        ToolRole::Agent => {
            let description = text(|t| t.description_keys)?;
            let line = match text(|t| t.agent_type_keys) {
                Some(kind) => format!("{description} ({kind})"),
                None => description,
            };
            (line, tools.first_str(input, |t| t.prompt_keys))
        }
    };
    Some(CallView::Role { role, line, body })
}

/// The lines a read tool reads, as ` (lines 40–120)`, ` (from line 40)` or ` (lines 1–80)`;
/// nothing for the whole file. Numbers count from 1 whatever the harness counts from.
fn lines_read(tools: &Vocabularies, input: &Value) -> String {
    let number = |keys: fn(&ToolVocabulary) -> &'static [&'static str]| {
        tools
            .0
            .iter()
            .flat_map(|t| keys(t))
            .find_map(|k| input.get(k).and_then(Value::as_u64))
    };
    let base = tools
        .0
        .iter()
        .find(|t| t.first_line_keys.iter().any(|k| input.get(k).is_some()))
        .map_or(1, |t| t.first_line_base);
    let first = number(|t| t.first_line_keys).map(|n| (n + 1 - base.min(1)).max(1));
    let last = number(|t| t.last_line_keys).or_else(|| {
        number(|t| t.line_count_keys).map(|count| first.unwrap_or(1) + count.max(1) - 1)
    });
    match (first, last) {
        (_, Some(last)) => format!(" (lines {}–{last})", first.unwrap_or(1)),
        (Some(first), None) if first > 1 => format!(" (from line {first})"),
        _ => String::new(),
    }
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

    /// The value under the first key of `keys` that `input` has as a non-empty string or a
    /// number, as text.
    fn first_text(
        &self,
        input: &Value,
        keys: fn(&ToolVocabulary) -> &'static [&'static str],
    ) -> Option<String> {
        self.0
            .iter()
            .flat_map(|t| keys(t))
            .find_map(|k| match input.get(k)? {
                Value::String(s) if !s.is_empty() => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
    }

    /// What tool `lower` does, as the first vocabulary naming it says.
    fn role(&self, lower: &str) -> Option<ToolRole> {
        self.0.iter().find_map(|t| {
            t.roles
                .iter()
                .find(|(name, _)| *name == lower)
                .map(|(_, role)| *role)
        })
    }

    /// The old and new text of a replaced snippet, under the first pair of keys `input` has.
    fn snippet<'a>(&self, input: &'a Value) -> Option<(&'a str, &'a str)> {
        self.0
            .iter()
            .flat_map(|t| t.snippet_keys)
            .find_map(|(old, new)| Some((input.get(old)?.as_str()?, input.get(new)?.as_str()?)))
    }

    /// The envelope grammar of patch tool `lower`, when a vocabulary names it one.
    fn patch_envelope(&self, lower: &str) -> Option<&'static PatchEnvelope> {
        self.0
            .iter()
            .find(|t| t.patch_tools.contains(&lower))
            .map(|t| t.patch_envelope)
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
            CallView::Role {
                role: ToolRole::Read,
                line: "/a".into(),
                body: None
            }
        );
    }

    #[test]
    fn apply_patch_is_a_patch_unless_the_source_left_it_out() {
        let patch = "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch";
        let (codex, opencode) = (harness("codex"), harness("opencode"));
        assert_eq!(
            view(codex, "apply_patch", &json!(patch)),
            CallView::Patch {
                patch,
                envelope: &PatchEnvelope::APPLY_PATCH
            }
        );
        assert_eq!(
            view(codex, "apply_patch", &json!({"input": patch})),
            CallView::Patch {
                patch,
                envelope: &PatchEnvelope::APPLY_PATCH
            }
        );
        assert_eq!(
            view(opencode, "apply_patch", &json!({"patchText": patch})),
            CallView::Patch {
                patch,
                envelope: &PatchEnvelope::APPLY_PATCH
            }
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

    fn role_line(harness_name: &str, name: &str, input: Value) -> Option<String> {
        match view(harness(harness_name), name, &input) {
            CallView::Role { line, .. } => Some(line),
            _ => None,
        }
    }

    /// Read, search, list and agent tools of every harness are told in a line: the file and
    /// its lines (counted from 1 whatever the harness counts from), the pattern and where.
    #[test]
    fn read_search_list_and_agent_tools_read_as_a_line() {
        let cases = [
            (
                "claude",
                "Read",
                json!({"file_path": "/a.rs", "offset": 40, "limit": 81}),
                "/a.rs (lines 40–120)",
            ),
            ("claude", "Read", json!({"file_path": "/a.rs"}), "/a.rs"),
            (
                "claude",
                "Read",
                json!({"file_path": "/a.rs", "offset": 7}),
                "/a.rs (from line 7)",
            ),
            (
                "claude",
                "Grep",
                json!({"pattern": "fn main", "path": "src", "glob": "*.rs"}),
                "\"fn main\" in src (*.rs)",
            ),
            ("claude", "Grep", json!({"pattern": "todo"}), "\"todo\""),
            (
                "claude",
                "Glob",
                json!({"pattern": "mix.exs", "path": "/p"}),
                "mix.exs in /p",
            ),
            ("claude", "LS", json!({"path": "/p"}), "/p"),
            (
                "claude",
                "Task",
                json!({"description": "Find tests", "prompt": "Look", "subagent_type": "Explore"}),
                "Find tests (Explore)",
            ),
            (
                "claude",
                "WebFetch",
                json!({"url": "https://x.test/", "prompt": "sum"}),
                "https://x.test/",
            ),
            ("claude", "WebSearch", json!({"query": "rust"}), "\"rust\""),
            (
                "codex",
                "read_file",
                json!({"file_path": "/a", "offset": 3, "limit": 2}),
                "/a (lines 3–4)",
            ),
            (
                "codex",
                "grep_files",
                json!({"pattern": "x", "path": "/w", "include": "*.py"}),
                "\"x\" in /w (*.py)",
            ),
            ("codex", "list_dir", json!({"dir_path": "/w"}), "/w"),
            (
                "gemini",
                "read_file",
                json!({"absolute_path": "/a", "offset": 0, "limit": 10}),
                "/a (lines 1–10)",
            ),
            (
                "gemini",
                "search_file_content",
                json!({"pattern": "p", "dir_path": "/d"}),
                "\"p\" in /d",
            ),
            ("gemini", "glob", json!({"pattern": "**/*.ts"}), "**/*.ts"),
            ("gemini", "list_directory", json!({"dir_path": "/d"}), "/d"),
            (
                "opencode",
                "read",
                json!({"filePath": "/a", "offset": 39, "limit": 81}),
                "/a (lines 40–120)",
            ),
            (
                "opencode",
                "grep",
                json!({"pattern": "p", "path": "/d", "include": "*.go"}),
                "\"p\" in /d (*.go)",
            ),
            (
                "opencode",
                "task",
                json!({"description": "d", "prompt": "p", "subagent_type": "general"}),
                "d (general)",
            ),
            (
                "pi",
                "read",
                json!({"path": "/a", "offset": 5, "limit": 5}),
                "/a (lines 5–9)",
            ),
            (
                "pi",
                "find",
                json!({"pattern": "*.md", "path": "/d"}),
                "*.md in /d",
            ),
            ("pi", "ls", json!({"path": "/d"}), "/d"),
            (
                "grok",
                "read_file",
                json!({"target_file": "/t/hello.py"}),
                "/t/hello.py",
            ),
            (
                "grok-cli",
                "view_file",
                json!({"path": "/a", "start_line": 2, "end_line": 9}),
                "/a (lines 2–9)",
            ),
        ];
        for (harness_name, name, input, want) in cases {
            assert_eq!(
                role_line(harness_name, name, input).as_deref(),
                Some(want),
                "{harness_name} {name}"
            );
        }
        // An agent's prompt goes under its line; a read without a path stays as it was.
        let task = json!({"description": "d", "prompt": "look here"});
        assert!(matches!(
            view(harness("claude"), "Task", &task),
            CallView::Role {
                role: ToolRole::Agent,
                body: Some("look here"),
                ..
            }
        ));
        assert_eq!(
            view(harness("claude"), "Read", &json!({"x": 1})),
            CallView::Other
        );
    }
}
