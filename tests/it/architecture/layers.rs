//! The rules between the modules of the root crate (docs/architecture.md, "The rules, and what
//! holds them"): the driver knows no front end, the MCP server imports nothing from the CLI,
//! rendering opens no host, and the cache never parses a transcript.
//!
//! A rule is a list of paths a directory's code never names. [`violations`] checks one file,
//! given its path and its text, so that the rules are tested on planted sources as well as on
//! the tree. A path is resolved before it is compared: `super::super::cli::run` in
//! `src/mcp/tools.rs` is `crate::cli::run`. Comments, strings and `#[cfg(test)]` code do not
//! count (the source reader drops them), and neither do files only tests compile.

use super::source::{self, ModPath};

/// What one directory of the root crate never names, and why.
struct Rule {
    /// The directory, from the workspace root: `src/mcp/`.
    dir: &'static str,
    /// Paths (resolved: `crate::…`, or an external crate's name first) never named, nor
    /// anything below them.
    never: &'static [&'static str],
    /// Paths below a `never` entry that may be named after all.
    except: &'static [&'static str],
    why: &'static str,
}

const RULES: &[Rule] = &[
    Rule {
        dir: "src/driver/",
        never: &["crate::cli", "crate::render", "crate::mcp"],
        except: &[],
        why: "the driver serves every front end and prints nothing",
    },
    Rule {
        dir: "src/mcp/",
        never: &["crate::cli"],
        except: &[],
        why: "the MCP server and the CLI are two front ends over the driver",
    },
    Rule {
        dir: "src/render/",
        never: &[
            "clankie_host",
            "crate::cli",
            "crate::mcp",
            "crate::sqlite",
            "crate::driver::Reader",
            "crate::cache::Cache",
        ],
        except: &[],
        why: "rendering turns what was read into output; it opens no host",
    },
    Rule {
        dir: "src/cache/",
        never: &[
            "clankie_engine",
            "crate::driver",
            "crate::sqlite",
            "crate::render",
            "crate::cli",
            "crate::mcp",
        ],
        except: &["clankie_engine::cursor"],
        why: "the cache moves bytes and never parses a transcript",
    },
];

/// The module of a root-crate file: `src/mcp/tools.rs` is `["mcp", "tools"]`, `src/mcp/mod.rs`
/// is `["mcp"]`.
fn module_of(path: &str) -> ModPath {
    let inside = path.strip_prefix("src/").unwrap_or(path);
    let inside = inside.strip_suffix(".rs").unwrap_or(inside);
    let mut module: ModPath = inside.split('/').map(str::to_string).collect();
    if module
        .last()
        .is_some_and(|last| last == "mod" || last == "lib")
    {
        module.pop();
    }
    module
}

/// `path` as named in `module`, made absolute: `crate::a::b`, or an external crate's path
/// (`clankie_host::open`). A path that starts with another name (a local item, or one brought
/// in by a `use` that is itself checked) is given as written.
fn resolve(module: &[String], path: &[String]) -> Vec<String> {
    let path = match path.first().map(String::as_str) {
        Some("::") => &path[1..],
        _ => path,
    };
    match path.first().map(String::as_str) {
        Some("crate") => path.to_vec(),
        Some("self") => std::iter::once("crate".to_string())
            .chain(module.iter().cloned())
            .chain(path[1..].iter().cloned())
            .collect(),
        Some("super") => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let kept = module.len().saturating_sub(ups);
            std::iter::once("crate".to_string())
                .chain(module[..kept].iter().cloned())
                .chain(path[ups..].iter().cloned())
                .collect()
        }
        _ => path.to_vec(),
    }
}

/// Whether `path` is `prefix` or lies below it.
fn below(path: &[String], prefix: &str) -> bool {
    let prefix: Vec<&str> = prefix.split("::").collect();
    path.len() >= prefix.len() && path.iter().zip(&prefix).all(|(a, b)| a == b)
}

/// Every rule `source`, the text of the file at `path` (from the workspace root, with `/`),
/// breaks: one line each, `path:line: names `…`: why`.
pub fn violations(path: &str, source: &str) -> Vec<String> {
    let Some(rule) = RULES.iter().find(|r| path.starts_with(r.dir)) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for (module, reference) in source::named_paths(&module_of(path), source) {
        let named = resolve(&module, &reference.path);
        let broken = rule.never.iter().any(|never| below(&named, never))
            && !rule.except.iter().any(|except| below(&named, except));
        if broken {
            found.push(format!(
                "{path}:{}: names `{}`: {}",
                reference.line,
                named.join("::"),
                rule.why
            ));
        }
    }
    found
}

#[test]
fn a_planted_import_of_the_cli_in_the_mcp_server_is_found() {
    let planted = "//! A tool.\nuse crate::cli::context::Context;\n";
    assert_eq!(
        violations("src/mcp/tools.rs", planted),
        [
            "src/mcp/tools.rs:2: names `crate::cli::context::Context`: the MCP server and the CLI \
          are two front ends over the driver"
        ]
    );
    // Through `super`, in braces, or as a path in code: the same module.
    for planted in [
        "use super::super::cli;",
        "use crate::{render, cli::read::ReadArgs};",
        "fn f() { crate::cli::main(); }",
        "fn f() { super::super::cli::main(); }",
    ] {
        assert_eq!(
            violations("src/mcp/tools.rs", planted).len(),
            1,
            "not found in src/mcp/tools.rs: {planted}"
        );
    }
    assert_eq!(violations("src/mcp/mod.rs", "use super::cli::x;").len(), 1);
}

#[test]
fn a_planted_host_call_in_the_renderer_is_found() {
    let planted = "fn show() {\n    let host = clankie_host::open(&config, None);\n}\n";
    assert_eq!(
        violations("src/render/text.rs", planted),
        [
            "src/render/text.rs:2: names `clankie_host::open`: rendering turns what was read into \
          output; it opens no host"
        ]
    );
    for planted in [
        "use clankie_host::{AnyHost, Host};",
        "use ::clankie_host::Host;",
        "fn f(ctx: &crate::cli::context::Context) { ctx.open(\"devbox\"); }",
        "use crate::driver::Reader;",
        "use crate::cache::Cache;",
    ] {
        assert!(
            !violations("src/render/mod.rs", planted).is_empty(),
            "not found in src/render/mod.rs: {planted}"
        );
    }
}

#[test]
fn planted_front_ends_in_the_driver_and_parsing_in_the_cache_are_found() {
    for planted in [
        "use crate::render::Renderer;",
        "use super::super::mcp::tools;",
        "fn f() { crate::cli::main(); }",
    ] {
        assert_eq!(
            violations("src/driver/follow.rs", planted).len(),
            1,
            "not found in src/driver/follow.rs: {planted}"
        );
    }
    for planted in [
        "use clankie_engine::harness::parse_line;",
        "fn f() { clankie_engine::plan::ReadPlan::new(); }",
        "use crate::driver::Reader;",
    ] {
        assert_eq!(
            violations("src/cache/mod.rs", planted).len(),
            1,
            "not found in src/cache/mod.rs: {planted}"
        );
    }
}

#[test]
fn what_the_rules_allow_is_not_a_violation() {
    let allowed = [
        // The cache hashes heads as the cursors do.
        (
            "src/cache/store.rs",
            "use clankie_engine::cursor::{HEAD_BYTES, hash16};",
        ),
        // The renderer prints what the cache and the driver hand it.
        (
            "src/render/mod.rs",
            "use crate::cache::{CachedFileInfo, Cleared};",
        ),
        ("src/render/ls.rs", "use crate::driver::heads::SessionHead;"),
        // The MCP server answers in the renderer's NDJSON.
        ("src/mcp/mod.rs", "use crate::render::ndjson;"),
        // Words in comments and strings are not code.
        (
            "src/mcp/mod.rs",
            "// use crate::cli::x;\nfn f() { let _ = \"crate::cli::x\"; }",
        ),
        // Test code may build what it needs.
        (
            "src/driver/mod.rs",
            "#[cfg(test)]\nmod tests {\n    use crate::render::Renderer;\n}",
        ),
        (
            "src/driver/tests.rs",
            "#![cfg(test)]\nuse crate::cli::main;",
        ),
        // The CLI is where the front end meets everything.
        (
            "src/cli/read.rs",
            "use crate::render::Renderer; use clankie_host::open;",
        ),
    ];
    for (path, source) in allowed {
        assert_eq!(
            violations(path, source),
            Vec::<String>::new(),
            "{path}: {source}"
        );
    }
}

#[test]
fn root_crate_layers_hold() {
    let root = super::workspace_root();
    let krate = super::crates()
        .into_iter()
        .find(|c| c.name == "clankie-read (lib)")
        .expect("the root crate's library");
    let mut found = Vec::new();
    let mut checked: Vec<&str> = Vec::new();
    for file in &krate.files {
        let path = super::shown(file);
        let path = path.replace('\\', "/");
        if let Some(rule) = RULES.iter().find(|r| path.starts_with(r.dir)) {
            checked.push(rule.dir);
            let text = std::fs::read_to_string(file).unwrap();
            found.extend(violations(&path, &text));
        }
    }
    // Every rule saw its directory: the scan cannot pass because it read nothing.
    for rule in RULES {
        assert!(
            checked.contains(&rule.dir),
            "no file of {} was checked (files of the crate under {}: {:?})",
            rule.dir,
            root.display(),
            krate.files.len()
        );
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}
