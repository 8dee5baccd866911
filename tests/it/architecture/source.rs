//! Reading the workspace's own Rust sources just well enough to check the module rules: a lexer
//! (comments, doc comments, strings and lifetimes are never mistaken for code), the module tree
//! of a crate found by following its `mod` declarations from the crate root, and per module the
//! names it defines, what it imports with `use`, the `crate::`/`super::`/`self::` paths its code
//! names, and its `static` items. `#[cfg(test)]` items, modules and files are skipped, and so is
//! any file named `tests.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path inside its crate: `[]` is the crate root, `["script", "posix"]` is
/// `crate::script::posix`.
pub type ModPath = Vec<String>;

/// `crate::script::posix` for `["script", "posix"]`, `crate` for the root.
pub fn show(module: &[String]) -> String {
    std::iter::once("crate")
        .chain(module.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("::")
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
    Lifetime,
    Literal,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub tok: Tok,
    pub line: usize,
}

fn ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn ident_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Where a raw string (`r"…"`, `r#"…"#`, `br"…"`, `cr"…"`) starting at `i` ends, if one does.
fn raw_string_end(c: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if matches!(c.get(j), Some('b' | 'c')) {
        j += 1;
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while c.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if c.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < c.len() {
        if c[j] == '"' && (1..=hashes).all(|k| c.get(j + k) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(c.len())
}

/// The end of a quoted literal whose opening quote is at `i`.
fn quoted_end(c: &[char], i: usize, quote: char) -> usize {
    let mut j = i + 1;
    while j < c.len() && c[j] != quote {
        j += if c[j] == '\\' { 2 } else { 1 };
    }
    (j + 1).min(c.len())
}

/// The tokens of a Rust source file. Comments (doc comments included) are dropped, and every
/// string, char and number literal is one `Literal` token, so words inside them are never code.
pub fn lex(src: &str) -> Vec<Token> {
    let c: Vec<char> = src.chars().collect();
    let at = |k: usize| c.get(k).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while i < c.len() {
        let ch = c[i];
        let start = i;
        let start_line = line;
        let tok = if ch.is_whitespace() {
            i += 1;
            None
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
            None
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            None
        } else if let Some(end) = raw_string_end(&c, i) {
            i = end;
            Some(Tok::Literal)
        } else if ch == '"' {
            i = quoted_end(&c, i, '"');
            Some(Tok::Literal)
        } else if matches!(ch, 'b' | 'c') && at(i + 1) == '"' {
            i = quoted_end(&c, i + 1, '"');
            Some(Tok::Literal)
        } else if ch == 'b' && at(i + 1) == '\'' {
            i = quoted_end(&c, i + 1, '\'');
            Some(Tok::Literal)
        } else if ch == '\'' {
            if at(i + 1) == '\\' || (at(i + 1) != '\0' && at(i + 2) == '\'') {
                i = quoted_end(&c, i, '\'');
                Some(Tok::Literal)
            } else if ident_start(at(i + 1)) {
                i += 1;
                while i < c.len() && ident_continue(c[i]) {
                    i += 1;
                }
                Some(Tok::Lifetime)
            } else {
                i += 1;
                Some(Tok::Punct('\''))
            }
        } else if ident_start(ch) {
            // A raw identifier (`r#type`) is the identifier.
            let begin = if ch == 'r' && at(i + 1) == '#' && ident_start(at(i + 2)) {
                i + 2
            } else {
                i
            };
            i = begin;
            while i < c.len() && ident_continue(c[i]) {
                i += 1;
            }
            Some(Tok::Ident(c[begin..i].iter().collect()))
        } else if ch.is_ascii_digit() {
            while i < c.len()
                && (ident_continue(c[i]) || (c[i] == '.' && at(i + 1).is_ascii_digit()))
            {
                i += 1;
            }
            Some(Tok::Literal)
        } else if ch == ':' && at(i + 1) == ':' {
            i += 2;
            Some(Tok::PathSep)
        } else {
            i += 1;
            Some(Tok::Punct(ch))
        };
        line += c[start..i].iter().filter(|&&x| x == '\n').count();
        if let Some(tok) = tok {
            out.push(Token {
                tok,
                line: start_line,
            });
        }
    }
    out
}

/// One name a `use` brings in (`name: None` for a glob or `as _`), with the path as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    pub path: Vec<String>,
    pub name: Option<String>,
    pub glob: bool,
}

/// A path the code of a module names: from a `use` or from the code itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub path: Vec<String>,
    pub line: usize,
}

/// What one module defines, imports and names.
#[derive(Debug, Clone, Default)]
pub struct Module {
    pub file: PathBuf,
    pub defines: BTreeSet<String>,
    pub imports: Vec<Import>,
    pub references: Vec<Reference>,
}

/// A `static` item (or a `thread_local!`), with the identifiers of its type.
#[derive(Debug, Clone)]
pub struct Static {
    pub file: PathBuf,
    pub line: usize,
    pub name: String,
    pub mutable: bool,
    pub thread_local: bool,
    pub type_idents: Vec<String>,
}

/// A `mod name;` declaration: the module that declares it, and whether it is test-only.
#[derive(Debug, Clone)]
struct ModDecl {
    parent: ModPath,
    name: String,
    test: bool,
    path_attr: bool,
}

/// What one file holds.
#[derive(Debug, Default)]
struct FileFacts {
    modules: BTreeMap<ModPath, Module>,
    decls: Vec<ModDecl>,
    statics: Vec<Static>,
    /// Each struct, enum, union or type alias: its name and the identifiers of its body.
    types: Vec<(String, Vec<String>)>,
    /// The file opens with `#![cfg(test)]`.
    test_only: bool,
}

fn ident(toks: &[Token], i: usize) -> Option<&str> {
    match toks.get(i).map(|t| &t.tok) {
        Some(Tok::Ident(s)) => Some(s),
        _ => None,
    }
}

fn punct(toks: &[Token], i: usize, p: char) -> bool {
    toks.get(i).is_some_and(|t| t.tok == Tok::Punct(p))
}

fn path_sep(toks: &[Token], i: usize) -> bool {
    toks.get(i).is_some_and(|t| t.tok == Tok::PathSep)
}

/// The index after the group that opens at `i` (`(`, `[` or `{`).
fn group_end(toks: &[Token], i: usize) -> usize {
    let mut depth = 0usize;
    let mut j = i;
    while j < toks.len() {
        match toks[j].tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    toks.len()
}

/// The index after the item that starts at `i`: through its `;` or its `{ … }` body.
fn item_end(toks: &[Token], i: usize) -> usize {
    let mut j = i;
    while j < toks.len() {
        match toks[j].tok {
            Tok::Punct('(' | '[') => j = group_end(toks, j),
            Tok::Punct('{') => return group_end(toks, j),
            Tok::Punct(';') => return j + 1,
            // The enclosing block ends: the item was its last expression.
            Tok::Punct('}' | ')' | ']') => return j,
            _ => j += 1,
        }
    }
    toks.len()
}

/// The identifiers from `i` up to the end of the item (a type's body, a static's type).
fn idents_until_end(toks: &[Token], i: usize, stop_at_eq: bool) -> Vec<String> {
    let end = if stop_at_eq {
        let mut j = i;
        let mut depth = 0i32;
        while j < toks.len() {
            match toks[j].tok {
                Tok::Punct('<' | '(' | '[') => depth += 1,
                Tok::Punct('>') if !punct(toks, j.wrapping_sub(1), '-') => depth -= 1,
                Tok::Punct(')' | ']') => depth -= 1,
                Tok::Punct('=' | ';') if depth <= 0 => break,
                _ => {}
            }
            j += 1;
        }
        j
    } else {
        item_end(toks, i)
    };
    toks[i..end.min(toks.len())]
        .iter()
        .filter_map(|t| match &t.tok {
            Tok::Ident(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

/// `#[cfg(test)]` or `#[cfg(all(test, …))]`: the tokens between the brackets.
fn is_test_cfg(attr: &[Token]) -> bool {
    let words: Vec<&Tok> = attr.iter().map(|t| &t.tok).collect();
    let id = |s: &str| Tok::Ident(s.to_string());
    match words.as_slice() {
        [a, Tok::Punct('('), b, Tok::Punct(')')] => **a == id("cfg") && **b == id("test"),
        [a, Tok::Punct('('), b, Tok::Punct('('), c, ..] => {
            **a == id("cfg") && **b == id("all") && **c == id("test")
        }
        _ => false,
    }
}

/// The names a `use` tree starting at `*i` brings in, with `prefix` before them.
fn use_tree(toks: &[Token], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Import>) {
    let mut path = prefix;
    if path.is_empty() && path_sep(toks, *i) {
        // `use ::name` names an external crate.
        path.push("::".to_string());
        *i += 1;
    }
    loop {
        match toks.get(*i).map(|t| &t.tok) {
            Some(Tok::Ident(s)) => {
                path.push(s.clone());
                *i += 1;
                if path_sep(toks, *i) {
                    *i += 1;
                    continue;
                }
                let mut name = path.last().cloned();
                if path.len() > 1 && path.last().is_some_and(|s| s == "self") {
                    path.pop();
                    name = path.last().cloned();
                }
                if ident(toks, *i) == Some("as") {
                    name = ident(toks, *i + 1).map(str::to_string);
                    *i += 2;
                }
                let name = name.filter(|n| n != "_");
                out.push(Import {
                    path,
                    name,
                    glob: false,
                });
                return;
            }
            Some(Tok::Punct('*')) => {
                *i += 1;
                out.push(Import {
                    path,
                    name: None,
                    glob: true,
                });
                return;
            }
            Some(Tok::Punct('{')) => {
                *i += 1;
                while *i < toks.len() && !punct(toks, *i, '}') {
                    let before = *i;
                    use_tree(toks, i, path.clone(), out);
                    // Past the `,`, or past a token that is no use tree (never loop).
                    if punct(toks, *i, ',') || *i == before {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            _ => return,
        }
    }
}

const ITEM_KEYWORDS: [&str; 8] = [
    "fn", "struct", "enum", "union", "trait", "type", "const", "static",
];

/// Scans one file whose module is `module`.
fn scan_file(file: &Path, module: &[String], src: &str) -> FileFacts {
    let toks = lex(src);
    let mut facts = FileFacts::default();
    let new_module = || Module {
        file: file.to_path_buf(),
        ..Module::default()
    };
    facts.modules.insert(module.to_vec(), new_module());
    // The open modules: the file's, then each inline `mod name { … }` with the depth it opened at.
    let mut stack: Vec<(ModPath, usize)> = vec![(module.to_vec(), 0)];
    let mut depth = 0usize;
    let mut pending_test = false;
    let mut pending_path_attr = false;
    let mut i = 0;
    while i < toks.len() {
        let current = stack.last().unwrap().0.clone();
        let tok = &toks[i].tok;
        let line = toks[i].line;
        if *tok == Tok::Punct('#') {
            let inner = punct(&toks, i + 1, '!');
            let open = if inner { i + 2 } else { i + 1 };
            if punct(&toks, open, '[') {
                let end = group_end(&toks, open);
                let attr = &toks[open + 1..end - 1];
                if is_test_cfg(attr) {
                    if inner && depth == 0 {
                        facts.test_only = true;
                    } else if !inner {
                        pending_test = true;
                    }
                }
                if !inner && ident(attr, 0) == Some("path") {
                    pending_path_attr = true;
                }
                i = end;
                continue;
            }
        }
        if pending_test {
            pending_test = false;
            // Test-only: skip the item, but remember a test module's file so it is accounted for.
            let mut j = i;
            if ident(&toks, j) == Some("pub") {
                j += 1;
                if punct(&toks, j, '(') {
                    j = group_end(&toks, j);
                }
            }
            if ident(&toks, j) == Some("mod") && punct(&toks, j + 2, ';') {
                facts.decls.push(ModDecl {
                    parent: current.clone(),
                    name: ident(&toks, j + 1).unwrap_or_default().to_string(),
                    test: true,
                    path_attr: pending_path_attr,
                });
            }
            pending_path_attr = false;
            i = item_end(&toks, i);
            continue;
        }
        let here = facts
            .modules
            .entry(current.clone())
            .or_insert_with(new_module);
        match tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                if stack.len() > 1 && stack.last().unwrap().1 == depth {
                    stack.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Punct(';') => pending_path_attr = false,
            Tok::Ident(kw) if kw == "mod" => {
                if let Some(name) = ident(&toks, i + 1) {
                    here.defines.insert(name.to_string());
                    if punct(&toks, i + 2, '{') {
                        let mut inner = current.clone();
                        inner.push(name.to_string());
                        facts.modules.insert(inner.clone(), new_module());
                        depth += 1;
                        stack.push((inner, depth));
                        i += 3;
                        continue;
                    }
                    if punct(&toks, i + 2, ';') {
                        facts.decls.push(ModDecl {
                            parent: current.clone(),
                            name: name.to_string(),
                            test: false,
                            path_attr: pending_path_attr,
                        });
                    }
                }
            }
            Tok::Ident(kw) if kw == "use" => {
                let mut j = i + 1;
                let mut imports = Vec::new();
                use_tree(&toks, &mut j, Vec::new(), &mut imports);
                for import in imports {
                    here.references.push(Reference {
                        path: import.path.clone(),
                        line,
                    });
                    here.imports.push(import);
                }
                while j < toks.len() && !punct(&toks, j, ';') {
                    j += 1;
                }
                i = j;
                continue;
            }
            Tok::Ident(kw) if kw == "thread_local" && punct(&toks, i + 1, '!') => {
                facts.statics.push(Static {
                    file: file.to_path_buf(),
                    line,
                    name: "thread_local!".to_string(),
                    mutable: false,
                    thread_local: true,
                    type_idents: idents_until_end(&toks, i + 2, false),
                });
            }
            Tok::Ident(kw) if kw == "macro_rules" && punct(&toks, i + 1, '!') => {
                if let Some(name) = ident(&toks, i + 2) {
                    here.defines.insert(name.to_string());
                }
            }
            Tok::Ident(kw) if ITEM_KEYWORDS.contains(&kw.as_str()) => {
                let mutable = kw == "static" && ident(&toks, i + 1) == Some("mut");
                let name_at = if mutable { i + 2 } else { i + 1 };
                if let Some(name) = ident(&toks, name_at) {
                    here.defines.insert(name.to_string());
                    if kw == "static" && punct(&toks, name_at + 1, ':') {
                        facts.statics.push(Static {
                            file: file.to_path_buf(),
                            line,
                            name: name.to_string(),
                            mutable,
                            thread_local: false,
                            type_idents: idents_until_end(&toks, name_at + 2, true),
                        });
                    }
                    if matches!(kw.as_str(), "struct" | "enum" | "union" | "type") {
                        let body = idents_until_end(&toks, name_at + 1, false);
                        facts.types.push((name.to_string(), body));
                    }
                }
            }
            Tok::Ident(first) if path_sep(&toks, i + 1) => {
                let after_sep = i > 0 && path_sep(&toks, i - 1);
                // `pub(in crate::x)` restricts visibility; it names no item.
                let visibility = i >= 3
                    && ident(&toks, i - 1) == Some("in")
                    && punct(&toks, i - 2, '(')
                    && ident(&toks, i - 3) == Some("pub");
                if !after_sep && !visibility {
                    // `$crate::x` in a macro is `crate::x`: `$` is a token of its own.
                    let mut path = vec![first.clone()];
                    let mut j = i + 1;
                    while path_sep(&toks, j) {
                        match ident(&toks, j + 1) {
                            Some(s) => path.push(s.to_string()),
                            None => break,
                        }
                        j += 2;
                    }
                    here.references.push(Reference { path, line });
                    i = j;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    facts
}

/// The paths the code of one source file names, each with the module whose code names it (the
/// file's module `module`, or an inline module inside it): `use` trees and the
/// `crate::`/`super::`/`self::`/`other_crate::` paths of its code, as written. Test-only code is
/// left out as everywhere in this reader, and a file that is test-only as a whole names nothing.
pub fn named_paths(module: &[String], src: &str) -> Vec<(ModPath, Reference)> {
    let facts = scan_file(Path::new(""), module, src);
    if facts.test_only {
        return Vec::new();
    }
    facts
        .modules
        .into_iter()
        .flat_map(|(at, module)| module.references.into_iter().map(move |r| (at.clone(), r)))
        .collect()
}

/// One crate: its modules (file and inline, test-only ones left out) and its statics.
#[derive(Debug, Default)]
pub struct Crate {
    pub name: String,
    pub modules: BTreeMap<ModPath, Module>,
    pub statics: Vec<Static>,
    pub types: Vec<(String, Vec<String>)>,
    /// Every file of the crate's code.
    pub files: BTreeSet<PathBuf>,
    /// Files (and directories) that only tests compile.
    pub test_paths: BTreeSet<PathBuf>,
}

/// The crate whose root file is `root` (a `lib.rs` or `main.rs`), found by following its
/// `mod` declarations. Panics, naming the file, where a declared module has no file or uses
/// `#[path]` (which this reader does not follow).
pub fn load_crate(name: &str, root: &Path) -> Crate {
    let mut krate = Crate {
        name: name.to_string(),
        ..Crate::default()
    };
    let mut queue: Vec<(ModPath, PathBuf)> = vec![(Vec::new(), root.to_path_buf())];
    while let Some((module, file)) = queue.pop() {
        let src = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{}: cannot read: {e}", file.display()));
        let facts = scan_file(&file, &module, &src);
        if facts.test_only {
            krate.test_paths.insert(file.clone());
            continue;
        }
        krate.files.insert(file.clone());
        // `lib.rs`, `main.rs` and `mod.rs` declare their children beside them; `a.rs` in `a/`.
        let stem = file.file_stem().unwrap().to_string_lossy().to_string();
        let base = if ["lib", "main", "mod"].contains(&stem.as_str()) {
            file.parent().unwrap().to_path_buf()
        } else {
            file.with_extension("")
        };
        for decl in facts.decls {
            let mut dir = base.clone();
            for seg in &decl.parent[module.len()..] {
                dir.push(seg);
            }
            let flat = dir.join(format!("{}.rs", decl.name));
            let nested = dir.join(&decl.name).join("mod.rs");
            if decl.test || decl.name == "tests" {
                krate.test_paths.extend([flat, dir.join(&decl.name)]);
                continue;
            }
            assert!(
                !decl.path_attr,
                "{}: `mod {}` uses #[path]; teach tests/it/architecture/source.rs to follow it",
                file.display(),
                decl.name
            );
            let mut child = decl.parent.clone();
            child.push(decl.name.clone());
            let found = [flat, nested].into_iter().find(|p| p.is_file());
            let found = found.unwrap_or_else(|| {
                panic!(
                    "{}: `mod {}` has no file {}.rs or {}/mod.rs",
                    file.display(),
                    decl.name,
                    decl.name,
                    decl.name
                )
            });
            queue.push((child, found));
        }
        krate.modules.extend(facts.modules);
        krate.statics.extend(facts.statics);
        krate.types.extend(facts.types);
    }
    krate
}

/// Where one module's import edge came from, for the failure message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witness {
    pub file: PathBuf,
    pub line: usize,
    pub path: String,
}

/// The module graph: for each module, the modules it depends on (with the first place it does).
pub type Graph = BTreeMap<ModPath, BTreeMap<ModPath, Witness>>;

/// How deep re-exports are followed before giving up (a guard against `use` loops).
const MAX_HOPS: usize = 16;

impl Crate {
    /// The absolute path `path`, named in module `from`, stands for; `None` for a path outside
    /// the crate (`std::…`, another crate, `Self::…`, a local variable's type).
    fn absolute(&self, from: &[String], path: &[String], hops: usize) -> Option<ModPath> {
        let first = path.first()?;
        if hops > MAX_HOPS {
            return None;
        }
        match first.as_str() {
            "crate" => Some(path[1..].to_vec()),
            "self" => Some([from, &path[1..]].concat()),
            "super" => {
                let mut module = from.to_vec();
                let mut k = 0;
                while path.get(k).is_some_and(|s| s == "super") {
                    module.pop()?;
                    k += 1;
                }
                Some([&module[..], &path[k..]].concat())
            }
            "::" => None,
            name => {
                let module = self.modules.get(from)?;
                if let Some(import) = module
                    .imports
                    .iter()
                    // `use name::{self}` names itself: that is the child module below.
                    .find(|im| {
                        im.name.as_deref() == Some(name)
                            && im.path.first().map(String::as_str) != Some(name)
                    })
                {
                    let base = self.absolute(from, &import.path, hops + 1)?;
                    return Some([&base[..], &path[1..]].concat());
                }
                let child = [from, &[name.to_string()]].concat();
                self.modules
                    .contains_key(&child)
                    .then(|| [from, path].concat())
            }
        }
    }

    /// The longest prefix of `path` that is a module of the crate, and the rest.
    fn split(&self, path: &[String]) -> (ModPath, ModPath) {
        let mut k = path.len();
        while !self.modules.contains_key(&path[..k]) {
            k -= 1;
        }
        (path[..k].to_vec(), path[k..].to_vec())
    }

    /// Where `name`, as seen in `module`, really comes from when the module only imports it
    /// (`use sibling::Name;`, `pub use sibling::*;`); `None` when the module defines it, or it
    /// comes from outside the crate, or it cannot be told.
    fn origin(&self, module: &[String], name: &str, hops: usize) -> Option<ModPath> {
        let facts = self.modules.get(module)?;
        if facts.defines.contains(name) || hops > MAX_HOPS {
            return None;
        }
        if let Some(import) = facts
            .imports
            .iter()
            .find(|im| im.name.as_deref() == Some(name))
        {
            return self.absolute(module, &import.path, hops + 1);
        }
        facts
            .imports
            .iter()
            .filter(|im| im.glob)
            .filter_map(|im| self.absolute(module, &im.path, hops + 1))
            .filter(|source| {
                self.modules.get(source).is_some_and(|m| {
                    m.defines.contains(name)
                        || m.imports.iter().any(|im| im.name.as_deref() == Some(name))
                })
            })
            .map(|source| [&source[..], &[name.to_string()]].concat())
            .next()
    }

    /// The module that `from` depends on by naming the absolute path `path`, by the rule in
    /// `architecture.rs`: `None` for itself, or for an item defined in one of its ancestors.
    fn target(&self, from: &[String], path: &[String], hops: usize) -> Option<ModPath> {
        let (module, rest) = self.split(path);
        if module == from {
            return None;
        }
        if !from.starts_with(&module) {
            return Some(module);
        }
        // An ancestor: follow the name to where it is defined, if the ancestor only imports it.
        let origin = self.origin(&module, rest.first()?, hops + 1)?;
        let origin = [&origin[..], &rest[1..]].concat();
        if hops > MAX_HOPS {
            return None;
        }
        self.target(from, &origin, hops + 1)
    }

    /// The module `use` graph of the crate.
    pub fn graph(&self) -> Graph {
        let mut graph = Graph::new();
        for (module, facts) in &self.modules {
            let edges = graph.entry(module.clone()).or_default();
            for reference in &facts.references {
                let Some(path) = self.absolute(module, &reference.path, 0) else {
                    continue;
                };
                if let Some(to) = self.target(module, &path, 0) {
                    edges.entry(to).or_insert_with(|| Witness {
                        file: facts.file.clone(),
                        line: reference.line,
                        path: reference.path.join("::"),
                    });
                }
            }
        }
        graph
    }
}

/// The identifiers a type names that mean interior mutability.
pub fn is_interior_mutable(ident: &str) -> bool {
    ident.starts_with("Atomic")
        || ident.contains("Mutex")
        || ident.contains("RwLock")
        || matches!(
            ident,
            "Cell" | "RefCell" | "UnsafeCell" | "SyncUnsafeCell" | "ReentrantLock" | "Condvar"
        )
}

impl Crate {
    /// Why a static is process-global mutable state (`static mut`, `thread_local!`, or the
    /// interior-mutable type it names, looked for through the crate's own type definitions),
    /// or `None` when it is an immutable value (a `LazyLock<Regex>` is one).
    pub fn mutable_static(&self, item: &Static) -> Option<String> {
        if item.mutable {
            return Some("`static mut`".to_string());
        }
        if item.thread_local {
            return Some("`thread_local!`".to_string());
        }
        let mut seen = BTreeSet::new();
        let mut todo: Vec<(String, Option<String>)> =
            item.type_idents.iter().map(|i| (i.clone(), None)).collect();
        while let Some((ident, via)) = todo.pop() {
            if is_interior_mutable(&ident) {
                return Some(match via {
                    Some(via) => format!("`{ident}` (inside `{via}`)"),
                    None => format!("`{ident}`"),
                });
            }
            if !seen.insert(ident.clone()) {
                continue;
            }
            for (name, body) in &self.types {
                if *name == ident {
                    let via = via.clone().unwrap_or_else(|| name.clone());
                    todo.extend(body.iter().map(|b| (b.clone(), Some(via.clone()))));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idents(src: &str) -> Vec<String> {
        lex(src)
            .into_iter()
            .filter_map(|t| match t.tok {
                Tok::Ident(s) => Some(s),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn lexer_drops_comments_strings_and_lifetimes() {
        let src = "// crate::a\n/// crate::b\n/* crate::c /* nested */ crate::d */\n\
                   let s = \"crate::e\"; let r = r#\"crate::f\"#; let c = '\"'; \
                   fn f<'a>(x: &'a str) -> &'static str { b\"x\"; 'q' }";
        assert_eq!(
            idents(src),
            [
                "let", "s", "let", "r", "let", "c", "fn", "f", "x", "str", "str"
            ]
        );
        let lines: Vec<usize> = lex("a\n/* \n */ b\n\"\n\" c")
            .iter()
            .map(|t| t.line)
            .collect();
        assert_eq!(lines, [1, 3, 4, 5]);
    }

    #[test]
    fn use_trees_expand_to_one_import_per_name() {
        let toks = lex("crate::a::{self, b::C as D, e::*, f::{g, h}};");
        let mut out = Vec::new();
        use_tree(&toks, &mut 0, Vec::new(), &mut out);
        let shown: Vec<String> = out
            .iter()
            .map(|i| format!("{} {:?} {}", i.path.join("::"), i.name, i.glob))
            .collect();
        assert_eq!(
            shown,
            [
                "crate::a Some(\"a\") false",
                "crate::a::b::C Some(\"D\") false",
                "crate::a::e None true",
                "crate::a::f::g Some(\"g\") false",
                "crate::a::f::h Some(\"h\") false",
            ]
        );
    }

    #[test]
    fn statics_and_test_items_are_told_apart() {
        let src = "static A: LazyLock<Regex> = LazyLock::new(|| x());\n\
                   static mut B: u8 = 0;\n\
                   static C: [OnceLock<Mutex<u8>>; 2] = [const { OnceLock::new() }; 2];\n\
                   struct S { inner: RefCell<u8> }\n\
                   static D: LazyLock<S> = LazyLock::new(S::default);\n\
                   static E: &'static str = \"Mutex\";\n\
                   #[cfg(test)]\n\
                   static F: Mutex<u8> = Mutex::new(0);\n\
                   #[cfg(test)]\n\
                   mod tests { static G: AtomicU8 = AtomicU8::new(0); }\n";
        let facts = scan_file(Path::new("x.rs"), &[], src);
        let krate = Crate {
            types: facts.types.clone(),
            ..Crate::default()
        };
        let verdicts: Vec<(String, Option<String>)> = facts
            .statics
            .iter()
            .map(|s| (s.name.clone(), krate.mutable_static(s)))
            .collect();
        assert_eq!(
            verdicts,
            [
                ("A".to_string(), None),
                ("B".to_string(), Some("`static mut`".to_string())),
                ("C".to_string(), Some("`Mutex`".to_string())),
                ("D".to_string(), Some("`RefCell` (inside `S`)".to_string())),
                ("E".to_string(), None),
            ]
        );
        assert!(!facts.modules.contains_key(&vec!["tests".to_string()]));
    }

    /// A crate in a temporary directory, from `(relative path, source)` pairs.
    fn krate(files: &[(&str, &str)]) -> (tempfile::TempDir, Crate) {
        let dir = tempfile::tempdir().unwrap();
        for (path, src) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, src).unwrap();
        }
        let krate = load_crate("t", &dir.path().join("lib.rs"));
        (dir, krate)
    }

    fn edges(krate: &Crate) -> Vec<String> {
        let mut out = Vec::new();
        for (from, tos) in krate.graph() {
            for to in tos.keys() {
                out.push(format!("{} -> {}", show(&from), show(to)));
            }
        }
        out
    }

    #[test]
    fn child_to_ancestor_items_are_allowed_and_reexports_followed() {
        let (_dir, krate) = krate(&[
            (
                "lib.rs",
                "pub mod a; pub mod b; mod c; mod gone;\n\
                 pub use c::Reexported;\n\
                 pub struct Ctx;\n\
                 #[cfg(test)] mod tests;\n",
            ),
            (
                "a.rs",
                "//! Uses crate::c only in a comment.\n\
                 use super::Ctx;\n\
                 use crate::Reexported;\n\
                 pub fn f() { b::g(); crate::b::g(); }\n",
            ),
            ("b.rs", "pub mod inner;\npub fn g() { inner::h(); }\n"),
            (
                "b/inner.rs",
                "use super::g;\nuse crate::a::f;\npub fn h() { let _ = \"crate::c\"; }\n",
            ),
            ("c.rs", "pub struct Reexported;\n"),
            ("gone.rs", "#![cfg(test)]\nuse crate::a;\n"),
            ("tests.rs", "use crate::b;\n"),
        ]);
        assert_eq!(
            edges(&krate),
            [
                "crate -> crate::c",
                "crate::a -> crate::b",
                "crate::a -> crate::c",
                "crate::b -> crate::b::inner",
                "crate::b::inner -> crate::a",
            ]
        );
    }
}
