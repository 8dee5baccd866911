//! No PowerShell runs here: every generated script is parsed with the tree-sitter PowerShell
//! grammar (zero ERROR or MISSING nodes), linted for the mistakes a parser accepts (unknown or
//! case-colliding variable names under PowerShell's dynamic scoping, unknown commands), checked
//! to be ASCII and to fit cmd.exe's command line; and a reply written byte for byte as the
//! script prints it decodes like the POSIX reply.

use std::collections::{BTreeMap, BTreeSet};

use super::super::{decode_list, decode_read, parse_frame};
use super::*;
use crate::HostError;

const NONCE: &str = "0123456789abcdef0123456789abcdef";

/// Hostile names: quotes of every kind PowerShell knows (including the typographic ones it
/// treats as quotes), backticks, `$`, subexpressions, spaces, non-ASCII, a 250-character name.
fn hostile_names() -> Vec<String> {
    vec![
        "plain".to_string(),
        // Legal in a Windows name.
        "it's $(Remove-Item x) `$HOME` ${x} @(1) ;& %TEMP% [a] {b} #c ~d".to_string(),
        // Not legal in a Windows name (`"`, `|`, `>`): read scripts refuse them up front.
        "it's \"q\" $(Remove-Item x) `$env:PATH` ${x} @(1) ;& | > %TEMP%".to_string(),
        "\u{2018}single\u{2019} \u{201c}double\u{201d} \u{201e}low".to_string(),
        "ünï 日本 \u{1f600} e\u{301}".to_string(),
        "trailing backtick `".to_string(),
        "x".repeat(250),
        format!("{}é", "ä".repeat(200)),
    ]
}

fn windows_roots() -> Vec<String> {
    let mut roots = vec![
        r"C:\Users\me\.claude".to_string(),
        r"C:\".to_string(),
        r"\\server\sharepoint\agent home\.claude\".to_string(),
        "D:/mixed/slashes".to_string(),
    ];
    for name in hostile_names() {
        roots.push(format!(r"C:\Users\{name}\.claude"));
    }
    // A deep root: 12 components of 250 characters.
    roots.push(format!(r"C:\{}", vec!["d".repeat(250); 12].join("\\")));
    roots
}

fn rels() -> Vec<String> {
    let mut rels =
        vec!["projects/C--Users-me-proj/3f1c2a77-0000-4000-8000-000000000001.jsonl".to_string()];
    for name in hostile_names() {
        rels.push(format!("projects/{name}/{name}.jsonl"));
    }
    rels.push(format!(
        "projects/{}/agent-1.jsonl",
        vec!["s".repeat(250); 6].join("/")
    ));
    rels
}

fn parse(script: &str) -> tree_sitter::Tree {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_powershell::LANGUAGE.into())
        .unwrap();
    parser.parse(script, None).unwrap()
}

fn nodes(tree: &tree_sitter::Tree) -> Vec<tree_sitter::Node<'_>> {
    let mut out = Vec::new();
    let mut cursor = tree.walk();
    'walk: loop {
        out.push(cursor.node());
        if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    out
}

/// Variables PowerShell defines itself (lowercase).
const AUTOMATIC: &[&str] = &[
    "$_",
    "$null",
    "$true",
    "$false",
    "$progresspreference",
    "$erroractionpreference",
    "$executioncontext",
    "$psversiontable",
    "$env:userprofile",
];

/// The one cmdlet the scripts call; everything else is their own functions.
const CMDLETS: &[&str] = &["new-object"];

/// Parses `script` and checks what a parse alone cannot: every variable is assigned in the
/// function that uses it or script-wide (or is automatic); no function local shares a name
/// (case-insensitively) with a script-wide variable, since a function sees its caller's locals;
/// every command is a defined function or a known cmdlet.
fn check(script: &str) {
    assert!(script.is_ascii(), "not ASCII:\n{script}");
    let tree = parse(script);
    let all = nodes(&tree);
    let broken: Vec<String> = all
        .iter()
        .filter(|n| n.is_error() || n.is_missing())
        .map(|n| {
            format!(
                "{} at {}:{}: {:?}",
                n.kind(),
                n.start_position().row + 1,
                n.start_position().column + 1,
                &script[n.byte_range()].chars().take(60).collect::<String>()
            )
        })
        .collect();
    assert!(broken.is_empty(), "{broken:#?}\n{script}");

    let text = |n: &tree_sitter::Node<'_>| script[n.byte_range()].to_ascii_lowercase();
    let function_of = |n: &tree_sitter::Node<'_>| {
        let mut up = n.parent();
        while let Some(p) = up {
            if p.kind() == "function_statement" {
                return Some(p.id());
            }
            up = p.parent();
        }
        None
    };
    let is_definition = |n: &tree_sitter::Node<'_>| {
        let mut up = n.parent();
        while let Some(p) = up {
            match p.kind() {
                "left_assignment_expression" | "script_parameter" => return true,
                "foreach_statement" => {
                    return p.named_child(0).is_some_and(|c| c.id() == n.id());
                }
                "pipeline" | "statement_block" | "script_block" => return false,
                _ => up = p.parent(),
            }
        }
        false
    };
    let mut defined: BTreeMap<Option<usize>, BTreeSet<String>> = BTreeMap::new();
    let mut functions = BTreeSet::new();
    for n in &all {
        if n.kind() == "variable" && is_definition(n) {
            defined.entry(function_of(n)).or_default().insert(text(n));
        }
        if n.kind() == "function_name" {
            functions.insert(text(n));
        }
    }
    let globals = defined.get(&None).cloned().unwrap_or_default();
    for (function, locals) in &defined {
        if function.is_some() {
            let shared: Vec<_> = locals.intersection(&globals).collect();
            assert!(
                shared.is_empty(),
                "function locals {shared:?} collide with script-wide names\n{script}"
            );
        }
    }
    for n in &all {
        if n.kind() == "variable" {
            let name = text(n);
            let known = AUTOMATIC.contains(&name.as_str())
                || globals.contains(&name)
                || defined
                    .get(&function_of(n))
                    .is_some_and(|locals| locals.contains(&name));
            assert!(known, "variable {name} is never assigned\n{script}");
        }
        if n.kind() == "command_name" {
            let name = text(n);
            assert!(
                functions.contains(&name) || CMDLETS.contains(&name.as_str()),
                "unknown command {name}\n{script}"
            );
        }
    }
}

/// The script an invocation runs, decoded back from its exec string (or its stdin).
fn script_of(invocation: &Invocation) -> String {
    assert!(
        invocation.exec.len() < EXEC_LIMIT,
        "{}",
        invocation.exec.len()
    );
    let b64 = invocation.exec.strip_prefix(EXEC_PREFIX).unwrap();
    assert!(
        b64.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b))
    );
    let utf16 = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    let units: Vec<u16> = utf16
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let command = String::from_utf16(&units).unwrap();
    if invocation.stdin.is_empty() {
        command
    } else {
        assert_eq!(command, BOOTSTRAP);
        assert!(invocation.exec.len() < 400, "{}", invocation.exec);
        String::from_utf8(invocation.stdin.clone()).unwrap()
    }
}

fn checked(script: String) -> Invocation {
    check(&script);
    // Paths are base64 literals, never script text.
    for name in [
        "Remove-Item",
        "TEMP",
        "plain",
        "xxxxxxxxxx",
        "Users",
        "sharepoint",
    ] {
        assert!(!script.contains(name), "{name} in\n{script}");
    }
    let invocation = exec_string(&script);
    assert_eq!(script_of(&invocation), script);
    invocation
}

#[test]
fn the_bootstrap_parses_and_is_tiny() {
    check(BOOTSTRAP);
    let big = format!("{}\n", "$x=1\n".repeat(2000));
    let inv = exec_string(&big);
    assert!(!inv.stdin.is_empty());
    assert_eq!(script_of(&inv), big);
    let small = exec_string("$x=1");
    assert!(small.stdin.is_empty());
    assert_eq!(script_of(&small), "$x=1");
}

#[test]
fn list_scripts_parse_for_hostile_roots_and_fit() {
    let default = crate::test_support::roots();
    let script = list_script(NONCE, &default);
    for harness in crate::test_support::harnesses() {
        assert!(
            script.contains(&format!("L '{}' (H '", harness.name())),
            "{script}"
        );
    }
    // The default list covers every harness's layout: past cmd.exe's bound (with OpenCode's
    // JSON tree it is, by a few characters) it travels on stdin behind the bootstrap, and
    // either way it is exactly the script.
    let inv = checked(script);
    assert!(inv.stdin.is_empty() || inv.exec.len() < 400);
    for root in windows_roots() {
        let mut roots = crate::test_support::roots();
        roots[0].dir = Some(root.clone().into_bytes());
        let script = list_script(NONCE, &roots);
        checked(script);
    }
    // A root that is not UTF-8 cannot be a Windows path: the reply is `ERR unsafe`.
    let bad = [RootSpec {
        harness: crate::test_support::harness("claude"),
        dir: Some(b"C:\\\xff".to_vec()),
    }];
    let script = list_script(NONCE, &bad);
    checked(script.clone());
    assert!(script.contains("W 'ERR unsafe '"));
}

#[test]
fn read_scripts_parse_for_hostile_paths_and_fit() {
    let ranges = [
        ByteRange::new(0, 10),
        ByteRange::new(4100, 300_000),
        ByteRange::new(u64::MAX - 5, 5),
    ];
    let mut bootstrapped = 0;
    for root in windows_roots() {
        for rel in rels() {
            let file = FileRef {
                harness: crate::test_support::harness("claude"),
                root: root.clone().into_bytes(),
                rel: rel.into_bytes(),
            };
            let script = read_script(NONCE, &file, &ranges);
            let windows_name = !file.rel.iter().any(|b| b"\"|>".contains(b));
            if windows_name {
                assert!(
                    script.contains("G $f $z 2 9223372036854775807 9223372036854775807 4096"),
                    "{script}"
                );
            } else {
                assert!(script.contains("W 'ERR badpath "), "{script}");
            }
            let inv = checked(script);
            bootstrapped += usize::from(!inv.stdin.is_empty());
        }
    }
    // Long names take the bootstrap; ordinary ones do not.
    assert!(bootstrapped > 0);
    let file = FileRef {
        harness: crate::test_support::harness("claude"),
        root: br"C:\Users\me\.claude".to_vec(),
        rel: rels()[0].clone().into_bytes(),
    };
    let inv = checked(read_script(NONCE, &file, &ranges));
    assert!(inv.stdin.is_empty());
}

#[test]
fn refusals_are_decided_before_sending_and_travel_as_err_lines() {
    let file = |root: &[u8], rel: &[u8]| FileRef {
        harness: crate::test_support::harness("claude"),
        root: root.to_vec(),
        rel: rel.to_vec(),
    };
    let one = [ByteRange::new(0, 1)];
    for (f, ranges, code) in [
        (file(b"C:\\r", b"projects/../x.jsonl"), &one[..], "badpath"),
        (file(b"C:\\r", b"projects\\x.jsonl"), &one, "badpath"),
        (file(b"C:\\r", b"projects/x.jsonl:stream"), &one, "badpath"),
        (file(b"C:\\r", b"projects/a\nb.jsonl"), &one, "badpath"),
        (file(b"", b"projects/x.jsonl"), &one, "badpath"),
        (file(b"C:\\\xff", b"projects/x.jsonl"), &one, "unsafe"),
        (
            file(b"C:\\r", b"projects/x.jsonl"),
            &[ByteRange::new(0, crate::MAX_READ_BYTES + 1)],
            "badrange",
        ),
    ] {
        let script = read_script(NONCE, &f, ranges);
        checked(script.clone());
        assert!(
            script.contains(&format!("W 'ERR {code} ")),
            "{code}\n{script}"
        );
        assert!(!script.contains("function M"), "{script}");
    }
}

/// What the list script prints for a root with two transcripts and one name UTF-8 cannot
/// carry, preceded by the CLIXML block PowerShell writes when its progress stream is not
/// silenced (it belongs on stderr; here it lands in stdout to prove the framing ignores it).
fn powershell_list_reply(root: &str, files: &[(u64, i64, &str)]) -> Vec<u8> {
    let mut out = String::from(
        "#< CLIXML\r\n<Objs Version=\"1.1.0.1\" xmlns=\"http://schemas.microsoft.com/powershell/2004/04\"><Obj S=\"progress\" RefId=\"0\"><TN RefId=\"0\"><T>System.Management.Automation.PSCustomObject</T><T>System.Object</T></TN><MS><I64 N=\"SourceId\">1</I64><PR N=\"Record\"><AV>Preparing modules for first use.</AV><AI>0</AI><Nil /><PI>-1</PI><PC>-1</PC><T>Completed</T><SR>-1</SR><SD> </SD></PR></MS></Obj></Objs>\r\n",
    );
    out += &format!("\r\n{NONCE}:BEGIN WindowsPowerShell 5.1.19041.4291 FullLanguage\r\n");
    out += "MODE ps\r\n";
    out += &format!("ROOT claude 1 {}\r\n", upper_hex(root.as_bytes()));
    for (size, mtime, rel) in files {
        out += &format!("FX {size} {mtime} {}\r\n", upper_hex(rel.as_bytes()));
    }
    out += "S\r\n";
    out += &format!("\r\n{NONCE}:END 0\r\n");
    out.into_bytes()
}

/// `[BitConverter]::ToString(...).Replace('-','')` prints uppercase hex.
fn upper_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

fn posix_list_reply(root: &str, files: &[(u64, i64, &str)]) -> Vec<u8> {
    let mut out = format!("motd\n\n{NONCE}:BEGIN Linux\nMODE gnu\n");
    out += &format!("ROOT claude 1 {}\n", hex_encode(root.as_bytes()));
    for (size, mtime, rel) in files {
        out += &format!("F {size} {mtime} ./{rel}\n");
    }
    out += "S\n";
    out += &format!("\n{NONCE}:END 0\n");
    out.into_bytes()
}

#[test]
fn a_powershell_reply_decodes_like_the_posix_one() {
    let root = r"C:\Users\Zoë\.claude";
    let files = [
        (
            1234,
            1_764_000_000,
            "projects/C--Users-Zo--proj/3f1c2a77-0000-4000-8000-000000000001.jsonl",
        ),
        (
            0,
            -5,
            "projects/C--Users-Zo--proj/3f1c2a77-0000-4000-8000-000000000001/subagents/agent-ä b.jsonl",
        ),
    ];
    let ps = decode_list(
        "h",
        NONCE,
        &crate::test_support::roots(),
        &powershell_list_reply(root, &files),
    )
    .unwrap();
    let posix = decode_list(
        "h",
        NONCE,
        &crate::test_support::roots(),
        &posix_list_reply(root, &files),
    )
    .unwrap();
    assert_eq!(ps, posix);
    assert_eq!(ps.files.len(), 2);
    assert_eq!(ps.skipped_names, 1);
    assert_eq!(ps.roots[0].dir, root.as_bytes());
    assert!(ps.roots[0].exists);
    let reply = powershell_list_reply(root, &files);
    let frame = parse_frame("h", NONCE, &reply).unwrap();
    assert_eq!(frame.uname, "WindowsPowerShell 5.1.19041.4291 FullLanguage");

    // A read: two ranges, the second past the end; one base64 line per range, CRLF.
    let data: Vec<u8> = (0..10_000u32).map(|i| (i * 13) as u8).collect();
    let ranges = [ByteRange::new(4100, 10), ByteRange::new(20_000, 5)];
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let ps = format!(
        "\r\n{NONCE}:BEGIN WindowsPowerShell 5.1 FullLanguage\r\nMETA size=10000 enc=b64\r\nDATA 0\r\n{}\r\nEND-DATA 0\r\nDATA 1\r\nEND-DATA 1\r\n\r\n{NONCE}:END 0\r\n",
        b64(&data[4096..8192])
    );
    let posix = format!(
        "\n{NONCE}:BEGIN Linux\nMETA size=10000 enc=b64\nDATA 0\n{}\n\nEND-DATA 0\nDATA 1\n\nEND-DATA 1\n\n{NONCE}:END 0\n",
        b64(&data[4096..8192])
            .as_bytes()
            .chunks(76)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect::<Vec<_>>()
            .join("\n")
    );
    let got = decode_read("h", NONCE, &ranges, ps.as_bytes()).unwrap();
    assert_eq!(
        got,
        decode_read("h", NONCE, &ranges, posix.as_bytes()).unwrap()
    );
    assert_eq!(got.chunks, vec![data[4100..4110].to_vec(), Vec::new()]);

    // Refusals and failures as the script prints them.
    let path = r"C:\Users\Zoë\.claude\projects\x.jsonl";
    let err = |line: String| {
        let out = format!(
            "\r\n{NONCE}:BEGIN WindowsPowerShell 5.1 FullLanguage\r\n{line}\r\n\r\n{NONCE}:END 1\r\n"
        );
        decode_read("h", NONCE, &ranges, out.as_bytes()).unwrap_err()
    };
    let e = err(format!("ERR symlink {}", upper_hex(path.as_bytes())));
    assert!(matches!(e, HostError::PathRefused { .. }), "{e:?}");
    assert!(e.to_string().contains(path), "{e}");
    let e = err(format!(
        "ERR script {}",
        upper_hex(b"Exception calling \"Open\"")
    ));
    assert!(matches!(e, HostError::Protocol { .. }), "{e:?}");
    assert!(e.to_string().contains("Exception calling"), "{e}");
    // Constrained Language Mode answers through the pipeline: same frame, CRLF.
    let out = format!(
        "\r\n{NONCE}:BEGIN WindowsPowerShell restricted\r\nERR restricted \r\n\r\n{NONCE}:END 1\r\n"
    );
    let e = decode_list("h", NONCE, &crate::test_support::roots(), out.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("Constrained Language Mode"), "{e}");
}

#[test]
fn windows_roots_are_absolute_and_relative_ones_are_not() {
    for (root, ok) in [
        (r"C:\Users\me\.claude", true),
        ("c:/x", true),
        (r"\\server\share", true),
        (r"C:relative", false),
        (r".claude", false),
        (r"\single", false),
    ] {
        let out = format!(
            "\n{NONCE}:BEGIN x\nROOT claude 1 {}\n\n{NONCE}:END 0\n",
            hex_encode(root.as_bytes())
        );
        assert_eq!(
            decode_list("h", NONCE, &crate::test_support::roots(), out.as_bytes()).is_ok(),
            ok,
            "{root}"
        );
    }
}

#[test]
fn the_checker_catches_what_a_parse_alone_misses() {
    let fails = |script: &str| std::panic::catch_unwind(|| check(script)).is_err();
    assert!(!fails("function W($s){$wr.Write($s)}\n$wr=1\nW 'x'"));
    // Parse errors.
    assert!(fails("if($x -eq 1 { $x }"));
    assert!(fails("function W($s){$wr.Write($s)"));
    assert!(fails("$x=(1"));
    // `$N:BEGIN` parses as a scope-qualified variable that is never assigned.
    assert!(fails("$N='a'\n$o=\"$N:BEGIN\""));
    // A function local named like a script-wide variable (case-insensitively) would shadow
    // it for every function called from there.
    assert!(fails("$P='a'\nfunction F($x){$p=1;$x}"));
    assert!(fails("function F{$undefined}"));
    assert!(fails("Remove-Item x"));
    assert!(fails("$x='\u{e9}'"));
}

#[test]
fn sizes() {
    let list = list_script(NONCE, &crate::test_support::roots());
    let file = FileRef {
        harness: crate::test_support::harness("claude"),
        root: br"C:\Users\me\.claude".to_vec(),
        rel: rels()[0].clone().into_bytes(),
    };
    let read = read_script(NONCE, &file, &[ByteRange::new(0, 65536)]);
    for script in [list, read] {
        let exec = exec_string(&script).exec;
        eprintln!(
            "script {} characters, exec string {}",
            script.len(),
            exec.len()
        );
        // The issue's bound (cmd.exe takes 8191). The default list of all seven harnesses sits
        // just under it; a longer script goes through the stdin bootstrap automatically.
        assert!(exec.len() < 8000, "{}", exec.len());
    }
    eprintln!(
        "bootstrap exec string {}",
        exec_string(&"#".repeat(9000)).exec.len()
    );
}
