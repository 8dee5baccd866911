//! One module per harness: everything about a harness is in `crates/engine/src/harness/<name>.rs`,
//! and the registry in `harness/mod.rs` names it once. This test fails when code anywhere else
//! in the workspace (tests and comments aside) names a harness: by its name as a string
//! literal (`"claude"`), by its module path (`claude::`) or by its type (`Claude`). Such a
//! mention is knowledge about the harness that the next format change would have to find.

use std::path::PathBuf;

use regex::Regex;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The product's code: every file a crate compiles outside tests (`#[cfg(test)]` modules and
/// the files only they declare are left out), as the architecture test's reader finds them.
fn code_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = crate::architecture::crates()
        .into_iter()
        .flat_map(|krate| krate.files)
        .collect();
    files.sort();
    files.dedup();
    files
}

/// The lines of a file's code: up to its test module, without comments.
fn code_lines(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, l)| l.trim() != "#[cfg(test)]")
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l.split(" // ").next().unwrap_or(l)))
        .collect()
}

/// A registered harness: its name, and the module and type the registry names.
struct Registered {
    name: &'static str,
    module: String,
    type_name: String,
}

fn registered() -> Vec<Registered> {
    let dir = workspace().join("crates/engine/src/harness");
    let implemented = Regex::new(r"impl Format for (\w+)").unwrap();
    clankie_engine::harness::all()
        .map(|harness| {
            let module = harness.name().replace('-', "");
            let path = dir.join(format!("{module}.rs"));
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                panic!(
                    "harness `{}` has no module {}: {e}",
                    harness.name(),
                    path.display()
                )
            });
            let type_name = implemented
                .captures(&text)
                .unwrap_or_else(|| panic!("{} has no `impl Format for …`", path.display()))[1]
                .to_string();
            Registered {
                name: harness.name(),
                module,
                type_name,
            }
        })
        .collect()
}

#[test]
fn every_harness_is_named_only_in_its_module_and_its_registration() {
    let harnesses = registered();
    assert!(harnesses.len() >= 7, "{} harnesses", harnesses.len());
    let files = code_files();
    assert!(files.len() > 30, "{} code files found", files.len());
    let harness_dir = workspace().join("crates/engine/src/harness");
    let registration = harness_dir.join("mod.rs");
    let mut misplaced = Vec::new();
    for harness in &harnesses {
        let mention = Regex::new(&format!(
            r#""{name}"|\b{module}::|\bmod (r#)?{module}\b|\b{ty}\b"#,
            name = regex::escape(harness.name),
            module = harness.module,
            ty = harness.type_name,
        ))
        .unwrap();
        let home = harness_dir.join(format!("{}.rs", harness.module));
        let registry_line = Regex::new(&format!(
            // A module named by a keyword (`continue`) is declared and named raw (`r#continue`).
            r"^\s*((pub\(crate\) )?mod (r#)?{m};|&(r#)?{m}::{t},)\s*$",
            m = harness.module,
            t = harness.type_name
        ))
        .unwrap();
        let mut registered_lines = 0;
        for file in files.iter().filter(|f| **f != home) {
            let text = std::fs::read_to_string(file).unwrap();
            for (number, line) in code_lines(&text) {
                // crossterm's `terminal` module shares the recordings harness's module name;
                // a path into that crate is not harness knowledge.
                if !mention.is_match(&line.replace("crossterm::terminal::", "crossterm::")) {
                    continue;
                }
                // The spec's sixth record kind is named `terminal` like the harness whose
                // records are the only ones of that kind: the kind's name is not harness
                // knowledge.
                if line.trim() == r#"RecordKind::Terminal => "terminal","# {
                    continue;
                }
                // A harness's shell tool named like another harness (OpenHands's `terminal`)
                // is a tool's name.
                if line.trim_start().starts_with("shell_tools: &[") {
                    continue;
                }
                if *file == registration && registry_line.is_match(line) {
                    registered_lines += 1;
                    continue;
                }
                misplaced.push(format!(
                    "{}:{number}: names harness `{}`: {}",
                    file.strip_prefix(workspace()).unwrap().display(),
                    harness.name,
                    line.trim()
                ));
            }
        }
        assert_eq!(
            registered_lines,
            2,
            "harness `{}` should be registered by `mod {};` and one registry line in {}",
            harness.name,
            harness.module,
            registration.display()
        );
    }
    assert!(
        misplaced.is_empty(),
        "harness knowledge outside its module:\n{}",
        misplaced.join("\n")
    );
}

/// The check itself finds a mention: a harness named in the driver would fail it.
#[test]
fn a_mention_outside_the_module_is_found() {
    let harness = &registered()[0];
    let mention = Regex::new(&format!(
        r#""{}"|\b{}::|\b{}\b"#,
        regex::escape(harness.name),
        harness.module,
        harness.type_name
    ))
    .unwrap();
    let code = format!(
        "let h = by_name(\"{}\");\n// {}\n",
        harness.name, harness.name
    );
    let found: Vec<_> = code_lines(&code)
        .into_iter()
        .filter(|(_, l)| mention.is_match(l))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
}

/// Every tool name the harnesses' vocabularies hold (`Format::tool_vocabulary`): shell tools,
/// patch tools and their envelopes' markers, the read, search, list and agent tools. A harness added to the registry adds its names
/// here.
fn tool_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = clankie_engine::harness::all()
        .flat_map(|harness| {
            let tools = clankie_engine::harness::tool_vocabulary(harness);
            let envelope = tools.patch_envelope;
            let markers = [
                envelope.begin,
                envelope.update_file,
                envelope.add_file,
                envelope.delete_file,
                envelope.move_to,
            ];
            tools
                .shell_tools
                .iter()
                .chain(tools.patch_tools)
                .copied()
                .chain(tools.roles.iter().map(|(name, _)| *name))
                .chain(markers)
                .chain(envelope.framing.iter().copied())
        })
        .filter(|name| !name.is_empty())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The code lines of `text` that spell one of the tool `names` as a string literal, in any case
/// (`"apply_patch"`, `"Bash"`), but for a literal all in capitals: a column title (`"SHELL"`),
/// which no harness's tool is named.
fn tool_name_literals<'t>(text: &'t str, names: &[&str]) -> Vec<(usize, &'t str)> {
    let alternatives: Vec<String> = names.iter().map(|n| regex::escape(n)).collect();
    let literal = Regex::new(&format!(r#"(?i)"(?:{})""#, alternatives.join("|"))).unwrap();
    let is_name = |found: &str| found.chars().any(|c| c.is_lowercase());
    code_lines(text)
        .into_iter()
        .filter(|(_, line)| literal.find_iter(line).any(|m| is_name(m.as_str())))
        .collect()
}

/// The renderer shows a tool call by asking the registry for the harnesses' tool vocabularies:
/// it spells no harness's tool name, so a harness that renames a tool changes only its module.
#[test]
fn the_renderer_spells_no_tool_name() {
    let names = tool_names();
    assert!(
        names.contains(&"apply_patch") && names.len() >= 5,
        "{names:?}"
    );
    let render = workspace().join("src/render");
    let files: Vec<PathBuf> = code_files()
        .into_iter()
        .filter(|f| f.starts_with(&render))
        .collect();
    assert!(files.len() > 5, "{} render files found", files.len());
    let mut spelled = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (number, line) in tool_name_literals(&text, &names) {
            spelled.push(format!(
                "{}:{number}: {}",
                file.strip_prefix(workspace()).unwrap().display(),
                line.trim()
            ));
        }
    }
    assert!(
        spelled.is_empty(),
        "tool names spelled in the renderer (ask `clankie_engine::harness::tool_vocabulary`):\n{}",
        spelled.join("\n")
    );
}

/// The check itself finds a tool name planted in renderer code, whatever its case, and not one
/// in a comment or a test.
#[test]
fn a_tool_name_in_the_renderer_is_found() {
    let names = tool_names();
    let code = "fn view(name: &str) -> bool {\n    name == \"apply_patch\"\n}\n\
                // \"apply_patch\" in a comment\n\
                const SHELLS: &[&str] = &[\"Bash\"];\n\
                const FILE: &str = \"*** Update File: \";\n\
                const TITLES: [&str; 2] = [\"HOST\", \"SHELL\"];\n\
                #[cfg(test)]\nmod tests { const P: &str = \"apply_patch\"; }\n";
    let found: Vec<usize> = tool_name_literals(code, &names)
        .into_iter()
        .map(|(number, _)| number)
        .collect();
    assert_eq!(found, [2, 5, 6]);
}
