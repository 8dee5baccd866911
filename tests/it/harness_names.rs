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
            r#""{name}"|\b{module}::|\bmod {module}\b|\b{ty}\b"#,
            name = regex::escape(harness.name),
            module = harness.module,
            ty = harness.type_name,
        ))
        .unwrap();
        let home = harness_dir.join(format!("{}.rs", harness.module));
        let registry_line = Regex::new(&format!(
            r"^\s*(mod {m};|&{m}::{t},)\s*$",
            m = harness.module,
            t = harness.type_name
        ))
        .unwrap();
        let mut registered_lines = 0;
        for file in files.iter().filter(|f| **f != home) {
            let text = std::fs::read_to_string(file).unwrap();
            for (number, line) in code_lines(&text) {
                if !mention.is_match(line) {
                    continue;
                }
                // The spec's sixth record kind is named `terminal` like the harness whose
                // records are the only ones of that kind: the kind's name is not harness
                // knowledge.
                if line.trim() == r#"RecordKind::Terminal => "terminal","# {
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
