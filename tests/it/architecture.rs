//! The layering rules (STYLE.md, docs/architecture.md), held as facts about the build and the
//! module graph rather than words to grep for:
//!
//! - Crate dependencies, as the real `cargo tree -e normal` prints them: the engine pulls in no
//!   I/O crate (tokio, mio, socket2, russh, ring, rusqlite, libsqlite3-sys) and no host; the host
//!   never depends on the engine; the model depends on no crate of ours; and `cargo test -p
//!   clankie-engine` (dev- and build-dependencies too) compiles neither SSH nor SQLite.
//! - `unsafe_code` is forbidden in the engine and the model.
//! - No import cycle between the modules of any crate. A module depends on another when it
//!   names one of its items, by `use` or by a `crate::`/`super::`/`self::` path in code
//!   (comments, strings and `#[cfg(test)]` code do not count; files named `tests.rs` are test
//!   code). The rule for parents and children: a parent naming its child's items is an edge, and
//!   so is any import between siblings or unrelated modules; a child naming an item *defined* in
//!   one of its ancestors is not an edge, because that is how Rust modules are shaped (a crate
//!   root holds the error type, a `mod.rs` the helpers its children share). When the ancestor only
//!   re-exports the item (`pub use sibling::Item`, or a private `use`), the edge goes to the
//!   module that defines it, so a cycle cannot hide behind a re-export.
//! - No process-global mutable state: no `static mut`, no `thread_local!`, and no `static` whose
//!   type (looked at through the crate's own struct, enum and alias definitions) holds a `Mutex`,
//!   `RwLock`, `Cell`, `RefCell`, `UnsafeCell` or an atomic. A `LazyLock`/`OnceLock` of an
//!   immutable value (a compiled regex, an automaton) is a constant computed once, and is fine.
//!
//! - Inside the root crate (`layers`): the driver names no front end, the MCP server nothing of
//!   the CLI, the renderer no host, and the cache nothing of the engine that parses.
//! - What the docs say of the tree (`docs`): no work-log history outside `vendor/`, every path
//!   of the architecture map's "Where to change what" exists, and every product file over 1,500
//!   lines is one the map names.
//!
//! `source` is the small Rust reader the module rules use; its own tests are beside it.

mod docs;
mod layers;
mod source;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Command;

use source::{Crate, ModPath, show};

fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `path` relative to the workspace root, for messages and for the rules keyed by paths.
fn shown(path: &Path) -> String {
    path.strip_prefix(workspace_root())
        .unwrap_or(path)
        .display()
        .to_string()
}

fn read_toml(path: &Path) -> toml::Table {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: cannot read: {e}", path.display()));
    text.parse()
        .unwrap_or_else(|e| panic!("{}: not TOML: {e}", path.display()))
}

/// A package of the workspace: its name and its directory.
struct Package {
    name: String,
    dir: PathBuf,
}

/// The root package and every workspace member, as the manifests name them.
fn packages() -> Vec<Package> {
    let root = read_toml(&workspace_root().join("Cargo.toml"));
    let members = root["workspace"]["members"]
        .as_array()
        .expect("workspace.members is an array");
    let dirs = std::iter::once(workspace_root().to_path_buf()).chain(
        members
            .iter()
            .map(|m| workspace_root().join(m.as_str().expect("a member is a path"))),
    );
    dirs.map(|dir| {
        let manifest = read_toml(&dir.join("Cargo.toml"));
        let name = manifest["package"]["name"].as_str().unwrap().to_string();
        Package { name, dir }
    })
    .collect()
}

/// Every crate of every package: its library, its `main.rs` and its `src/bin/` programs.
pub(crate) fn crates() -> Vec<Crate> {
    let mut out = Vec::new();
    for package in packages() {
        let src = package.dir.join("src");
        let mut roots = vec![
            ("lib".to_string(), src.join("lib.rs")),
            ("bin".to_string(), src.join("main.rs")),
        ];
        if let Ok(bins) = std::fs::read_dir(src.join("bin")) {
            for bin in bins {
                let path = bin.unwrap().path();
                let root = if path.is_dir() {
                    path.join("main.rs")
                } else {
                    path.clone()
                };
                let name = path.file_stem().unwrap().to_string_lossy();
                roots.push((format!("bin {name}"), root));
            }
        }
        for (kind, root) in roots {
            if root.is_file() {
                out.push(source::load_crate(
                    &format!("{} ({kind})", package.name),
                    &root,
                ));
            }
        }
    }
    out
}

/// The package names in `cargo tree -p <package> -e <edges>`, versions stripped.
fn cargo_tree(package: &str, edges: &str) -> BTreeSet<String> {
    let output = Command::new(env!("CARGO"))
        .arg("tree")
        .arg("--offline")
        .arg("--manifest-path")
        .arg(workspace_root().join("Cargo.toml"))
        .args(["--package", package, "--edges", edges])
        .args(["--prefix", "none", "--format", "{p}", "--color", "never"])
        .output()
        .expect("run cargo tree");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "cargo tree -p {package} -e {edges} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Each line is `name vX.Y.Z [(path)] [(proc-macro)] [(*)]`.
    let names: BTreeSet<String> = stdout
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect();
    assert!(
        names.contains(package),
        "cargo tree -p {package} -e {edges} does not list {package} itself:\n{stdout}"
    );
    names
}

/// Fails naming every crate of `forbidden` in the tree of `package`; and when the tree lacks
/// one of `expected`, because then the tree was not read and the check would hold vacuously.
fn assert_tree(package: &str, edges: &str, forbidden: &[&str], expected: &[&str], why: &str) {
    let names = cargo_tree(package, edges);
    for name in expected {
        assert!(
            names.contains(*name),
            "cargo tree -p {package} -e {edges} does not list {name}; the tree was not read: {names:?}"
        );
    }
    let found: Vec<String> = forbidden
        .iter()
        .filter(|name| names.contains(**name))
        .map(|name| format!("{package} depends on {name} (cargo tree -e {edges}): {why}"))
        .collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// What only the I/O layer may pull in.
const IO_CRATES: [&str; 7] = [
    "tokio",
    "mio",
    "socket2",
    "russh",
    "ring",
    "rusqlite",
    "libsqlite3-sys",
];

#[test]
fn engine_depends_on_no_io_crate_and_no_host() {
    let forbidden: Vec<&str> = IO_CRATES
        .into_iter()
        .chain(["clankie-host", "clankie-read"])
        .collect();
    assert_tree(
        "clankie-engine",
        "normal",
        &forbidden,
        &["clankie-model", "serde_json"],
        "the engine is pure",
    );
}

#[test]
fn host_never_depends_on_the_engine() {
    assert_tree(
        "clankie-host",
        "normal",
        &["clankie-engine", "clankie-read"],
        &["clankie-model", "tokio"],
        "hosts only move bytes",
    );
}

#[test]
fn model_depends_on_no_crate_of_ours() {
    let ours: Vec<String> = packages()
        .into_iter()
        .map(|p| p.name)
        .filter(|name| name != "clankie-model")
        .collect();
    assert!(ours.len() >= 3, "workspace packages: {ours:?}");
    let ours: Vec<&str> = ours.iter().map(String::as_str).collect();
    assert_tree(
        "clankie-model",
        "normal",
        &ours,
        &["serde_json"],
        "the model is plain data",
    );
}

#[test]
fn engine_tests_compile_neither_ssh_nor_sqlite() {
    // What `cargo test -p clankie-engine` compiles: dev- and build-dependencies too.
    assert_tree(
        "clankie-engine",
        "normal,build,dev",
        &[
            "russh",
            "ring",
            "rusqlite",
            "libsqlite3-sys",
            "clankie-host",
        ],
        &["clankie-model", "serde_json"],
        "`cargo test -p clankie-engine` must build without SSH or SQLite",
    );
}

/// `#![forbid(unsafe_code)]` among the inner attributes of a crate root.
fn forbids_unsafe_in_source(lib: &Path) -> bool {
    use source::Tok;
    let text = std::fs::read_to_string(lib).unwrap();
    let toks: Vec<Tok> = source::lex(&text).into_iter().map(|t| t.tok).collect();
    toks.windows(4).enumerate().any(|(i, w)| {
        w[0] == Tok::Punct('#')
            && w[1] == Tok::Punct('!')
            && w[2] == Tok::Punct('[')
            && w[3] == Tok::Ident("forbid".to_string())
            && toks[i + 4..]
                .iter()
                .take_while(|t| **t != Tok::Punct(']'))
                .any(|t| *t == Tok::Ident("unsafe_code".to_string()))
    })
}

/// `unsafe_code = "forbid"` (or `{ level = "forbid", … }`) in a `[lints.rust]` table.
fn forbids_unsafe(rust_lints: Option<&toml::Value>) -> bool {
    let level = rust_lints.and_then(|l| l.get("unsafe_code"));
    let level = level.and_then(|l| l.as_str().or_else(|| l.get("level")?.as_str()));
    level == Some("forbid")
}

#[test]
fn engine_and_model_forbid_unsafe_code() {
    let root = read_toml(&workspace_root().join("Cargo.toml"));
    let workspace_forbids = forbids_unsafe(
        root.get("workspace")
            .and_then(|w| w.get("lints"))
            .and_then(|l| l.get("rust")),
    );
    let mut failures = Vec::new();
    for package in packages()
        .into_iter()
        .filter(|p| ["clankie-engine", "clankie-model"].contains(&p.name.as_str()))
    {
        let manifest = read_toml(&package.dir.join("Cargo.toml"));
        let lints = manifest.get("lints");
        let inherits = lints
            .and_then(|l| l.get("workspace"))
            .and_then(toml::Value::as_bool)
            == Some(true);
        let own = forbids_unsafe(lints.and_then(|l| l.get("rust")));
        let lib = package.dir.join("src/lib.rs");
        if !(inherits && workspace_forbids || own || forbids_unsafe_in_source(&lib)) {
            failures.push(format!(
                "{}: unsafe_code is not forbidden: {} has no #![forbid(unsafe_code)], and its \
                 Cargo.toml neither inherits `[workspace.lints.rust] unsafe_code = \"forbid\"` \
                 (inherits: {inherits}, workspace forbids: {workspace_forbids}) nor sets it",
                package.name,
                shown(&lib)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The strongly connected components of `graph` that hold a cycle (more than one node, or a
/// node with an edge to itself), each sorted, in order (Tarjan's algorithm).
fn cycles<N: Ord + Clone>(graph: &BTreeMap<N, BTreeSet<N>>) -> Vec<Vec<N>> {
    struct Tarjan<'g, N> {
        graph: &'g BTreeMap<N, BTreeSet<N>>,
        index: BTreeMap<N, usize>,
        low: BTreeMap<N, usize>,
        stack: Vec<N>,
        on_stack: BTreeSet<N>,
        components: Vec<Vec<N>>,
    }
    impl<N: Ord + Clone> Tarjan<'_, N> {
        fn visit(&mut self, v: &N) {
            let i = self.index.len();
            self.index.insert(v.clone(), i);
            self.low.insert(v.clone(), i);
            self.stack.push(v.clone());
            self.on_stack.insert(v.clone());
            for w in self.graph.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v.clone(), low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v.clone(), low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                loop {
                    let w = self.stack.pop().unwrap();
                    self.on_stack.remove(&w);
                    let done = w == *v;
                    component.push(w);
                    if done {
                        break;
                    }
                }
                component.sort();
                self.components.push(component);
            }
        }
    }
    let mut tarjan = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for v in graph.keys() {
        if !tarjan.index.contains_key(v) {
            tarjan.visit(v);
        }
    }
    let mut out: Vec<Vec<N>> = tarjan
        .components
        .into_iter()
        .filter(|c| c.len() > 1 || graph.get(&c[0]).is_some_and(|e| e.contains(&c[0])))
        .collect();
    out.sort();
    out
}

/// A shortest cycle through the first node of `component`, as `[a, b, …, a]`.
fn shortest_cycle<N: Ord + Clone>(graph: &BTreeMap<N, BTreeSet<N>>, component: &[N]) -> Vec<N> {
    let start = &component[0];
    let mut came_from: BTreeMap<N, N> = BTreeMap::new();
    let mut queue = VecDeque::from([start.clone()]);
    while let Some(v) = queue.pop_front() {
        for w in graph.get(&v).into_iter().flatten() {
            if w == start {
                let mut path = vec![v.clone()];
                let mut at = v;
                while at != *start {
                    at = came_from[&at].clone();
                    path.push(at.clone());
                }
                path.reverse();
                path.push(start.clone());
                return path;
            }
            if component.contains(w) && !came_from.contains_key(w) && w != start {
                came_from.insert(w.clone(), v.clone());
                queue.push_back(w.clone());
            }
        }
    }
    unreachable!("a strongly connected component holds a cycle through each of its nodes")
}

#[test]
fn cycle_finder_finds_every_cycle_of_a_small_graph() {
    let graph = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    // a → b → c → a, and c → d → e → d, f → g (no cycle), h → h.
    let g = graph(&[
        ("a", "b"),
        ("b", "c"),
        ("c", "a"),
        ("c", "d"),
        ("d", "e"),
        ("e", "d"),
        ("f", "g"),
        ("h", "h"),
    ]);
    assert_eq!(cycles(&g), [vec!["a", "b", "c"], vec!["d", "e"], vec!["h"]]);
    assert_eq!(
        shortest_cycle(&g, &["a", "b", "c"].map(String::from)),
        ["a", "b", "c", "a"]
    );
    assert_eq!(
        shortest_cycle(&g, &["d", "e"].map(String::from)),
        ["d", "e", "d"]
    );
    assert_eq!(shortest_cycle(&g, &["h"].map(String::from)), ["h", "h"]);
    // A diamond and a chain hold no cycle.
    let dag = graph(&[("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("d", "e")]);
    assert!(cycles(&dag).is_empty());
    // A cycle reached only through a node outside it is still found, once.
    let tail = graph(&[("x", "y"), ("y", "z"), ("z", "y")]);
    assert_eq!(cycles(&tail), [vec!["y", "z"]]);
}

#[test]
fn no_import_cycle_between_modules() {
    let crates = crates();
    assert!(crates.len() >= 4, "crates found: {}", crates.len());
    let mut report = Vec::new();
    for krate in &crates {
        let graph = krate.graph();
        let plain: BTreeMap<ModPath, BTreeSet<ModPath>> = graph
            .iter()
            .map(|(from, tos)| (from.clone(), tos.keys().cloned().collect()))
            .collect();
        for component in cycles(&plain) {
            let cycle: Vec<String> = shortest_cycle(&plain, &component)
                .iter()
                .map(|m| show(m))
                .collect();
            let members: Vec<String> = component.iter().map(|m| show(m)).collect();
            report.push(format!(
                "{}: import cycle {} (all modules in it: {})",
                krate.name,
                cycle.join(" -> "),
                members.join(", ")
            ));
            for from in &component {
                for (to, witness) in &graph[from] {
                    if component.contains(to) {
                        report.push(format!(
                            "    {} -> {}: {}:{} names `{}`",
                            show(from),
                            show(to),
                            shown(&witness.file),
                            witness.line,
                            witness.path
                        ));
                    }
                }
            }
        }
    }
    assert!(
        report.is_empty(),
        "modules import each other (a child naming an item defined in its ancestor is allowed; \
         see tests/it/architecture.rs):\n{}",
        report.join("\n")
    );
}

#[test]
fn module_graph_is_read_from_every_crate() {
    // The cycle test cannot pass vacuously: the graph has the edges every reader sees.
    let crates = crates();
    let edge = |krate: &str, from: &[&str], to: &[&str]| {
        let krate = crates.iter().find(|c| c.name == krate).unwrap();
        let from: ModPath = from.iter().map(|s| s.to_string()).collect();
        let to: ModPath = to.iter().map(|s| s.to_string()).collect();
        assert!(
            krate
                .graph()
                .get(&from)
                .is_some_and(|e| e.contains_key(&to)),
            "{}: no edge {} -> {} found; the reader has stopped seeing imports",
            krate.name,
            show(&from),
            show(&to)
        );
    };
    edge("clankie-engine (lib)", &["plan"], &["cursor"]);
    edge("clankie-host (lib)", &["ssh", "host"], &["script"]);
    edge("clankie-read (lib)", &["cli", "read"], &["driver"]);
}

#[test]
fn every_source_file_is_read() {
    // A file the reader never reaches from a crate root would hide its imports and statics.
    let crates = crates();
    let mut missed = Vec::new();
    for package in packages() {
        let mut stack = vec![package.dir.join("src")];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let read = crates.iter().any(|c| {
                    c.files.contains(&path) || c.test_paths.iter().any(|t| path.starts_with(t))
                });
                let test_file = path.file_name().is_some_and(|n| n == "tests.rs");
                if path.extension().is_some_and(|e| e == "rs") && !read && !test_file {
                    missed.push(format!(
                        "{}: not reached by `mod` declarations from a crate root",
                        shown(&path)
                    ));
                }
            }
        }
    }
    assert!(missed.is_empty(), "{}", missed.join("\n"));
}

#[test]
fn no_process_global_mutable_state() {
    let crates = crates();
    let mut found = Vec::new();
    let mut statics = 0;
    for krate in &crates {
        for item in &krate.statics {
            statics += 1;
            if let Some(why) = krate.mutable_static(item) {
                found.push(format!(
                    "{}:{}: static {} is process-global mutable state ({why}); keep it in a value \
                     its owner holds and passes down",
                    shown(&item.file),
                    item.line,
                    item.name
                ));
            }
        }
    }
    // The engine's compiled regexes are statics: the scan sees statics at all.
    assert!(statics > 0, "no static item found in any crate");
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `cargo tree` cannot see the standard library: the engine and the model also name none of
/// its I/O, clock, process or thread items in code (tests aside: they may build fixtures).
#[test]
fn engine_and_model_use_no_io_clock_or_threads_from_std() {
    let forbidden = [
        "std::fs",
        "std::net",
        "std::process",
        "std::env",
        "std::thread",
        "std::io::stdin",
        "std::io::stdout",
        "SystemTime",
        "Instant::now",
        "println!",
        "eprintln!",
        "print!",
        "eprint!",
    ];
    let mut files = Vec::new();
    for krate in ["crates/engine/src", "crates/model/src"] {
        rust_files(&workspace_root().join(krate), &mut files);
    }
    files.retain(|p| p.file_name().is_none_or(|n| n != "tests.rs"));
    assert!(
        files.len() >= 10,
        "engine and model sources found: {}",
        files.len()
    );
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let code = text
            .lines()
            .enumerate()
            .take_while(|(_, l)| l.trim() != "#[cfg(test)]")
            .filter(|(_, l)| !l.trim_start().starts_with("//"));
        for (number, line) in code {
            for word in forbidden.iter().filter(|w| line.contains(*w)) {
                found.push(format!("{}:{}: uses `{word}`", shown(file), number + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the engine and the model do no I/O:\n{}",
        found.join("\n")
    );
}
