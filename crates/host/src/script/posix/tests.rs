//! The POSIX scripts run under real shells (dash, bash --posix, busybox sh, mksh, yash,
//! zsh --emulate sh, and busybox applets alone on PATH) against a hostile tree, and must agree
//! byte for byte with the local host.

use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::super::{decode_list, decode_read, new_nonce, parse_frame};
use super::*;
use crate::local::LocalHost;
use crate::{Host, HostError};
use clankie_model::{Listing, ReadResult, display_path};

const HOSTILE_DIR: &str = "it's \"q\" $(touch pwned) `touch pwned2` ünï 日本 %s";

/// Names every byte of which but `/` is legal, each with its content: LF and CR anywhere (a
/// trailing one too, which `$(…)` and a CRLF-tolerant decoder would each eat), ESC, a
/// backslash directory as Claude derives it from a Windows working directory.
const ODD_NAMES: [(&[u8], &[u8]); 7] = [
    (b"projects/-p/car\rriage\r.jsonl", b"cr\n"),
    (b"projects/-p/dir\rcr/in\r\n.jsonl", b"crlf\n"),
    (b"projects/-p/trail\n/x.jsonl", b"trailing newline dir\n"),
    (
        b"projects/-p/\x1b[31mred\x1b[0m $(touch pwned).jsonl",
        b"esc\n",
    ),
    (b"projects/C:\\Users\\me\\w/a\\b.jsonl", b"backslash dir\n"),
    (b"projects/-p/\n", b"a bare newline is no transcript name\n"),
    (b"projects/-p/\r\n\r.jsonl", b"only controls\n"),
];

/// One way to run `sh -s`.
#[derive(Clone)]
struct Shell {
    name: &'static str,
    argv: Vec<String>,
    /// Run with `env -i PATH=<dir>`: busybox applets only.
    clean_env: Option<PathBuf>,
}

fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

fn missing(what: &str) {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{what} is not installed (required when CI=true)");
    }
    eprintln!("SKIP: {what} is not installed");
}

/// Every shell that is installed; a missing one is skipped (a failure when CI=true).
fn shells(tmp: &Path) -> Vec<Shell> {
    let table: [(&str, &[&str]); 7] = [
        ("dash", &["dash", "-s"]),
        // posh rejects `-s`; without arguments it reads the script from stdin all the same.
        ("posh", &["posh"]),
        ("bash --posix", &["bash", "--posix", "-s"]),
        ("busybox sh", &["busybox", "sh", "-s"]),
        ("mksh", &["mksh", "-s"]),
        ("yash", &["yash", "-s"]),
        ("zsh --emulate sh", &["zsh", "--emulate", "sh", "-s"]),
    ];
    let mut out = Vec::new();
    for (name, argv) in table {
        if on_path(argv[0]).is_none() {
            missing(argv[0]);
            continue;
        }
        out.push(Shell {
            name,
            argv: argv.iter().map(|s| s.to_string()).collect(),
            clean_env: None,
        });
    }
    if let Some(busybox) = on_path("busybox") {
        let dir = tmp.join("bb-bin");
        fs::create_dir_all(&dir).unwrap();
        let list = Command::new(&busybox).arg("--list").output().unwrap();
        for applet in String::from_utf8(list.stdout).unwrap().lines() {
            symlink(&busybox, dir.join(applet)).unwrap();
        }
        out.push(Shell {
            name: "busybox applets only",
            argv: vec![
                busybox.to_string_lossy().into_owned(),
                "sh".into(),
                "-s".into(),
            ],
            clean_env: Some(dir),
        });
    }
    out
}

struct Tree {
    tmp: tempfile::TempDir,
    /// The root as given: a symlink to the real home.
    root_link: PathBuf,
    big: Vec<u8>,
}

impl Tree {
    fn path(&self) -> &Path {
        self.tmp.path()
    }
    fn home(&self) -> PathBuf {
        self.path().join("claude")
    }
    fn cwd(&self) -> PathBuf {
        self.path().join("cwd")
    }
    fn spec(&self) -> RootSpec {
        RootSpec {
            harness: crate::test_support::harness("claude"),
            dir: Some(self.root_link.as_os_str().as_bytes().to_vec()),
        }
    }
    fn file(&self, rel: &[u8]) -> FileRef {
        FileRef {
            harness: crate::test_support::harness("claude"),
            root: fs::canonicalize(self.home())
                .unwrap()
                .as_os_str()
                .as_bytes()
                .to_vec(),
            rel: rel.to_vec(),
        }
    }
}

fn write(path: impl AsRef<Path>, bytes: &[u8]) {
    let path = path.as_ref();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

fn bytes_path(bytes: &[u8]) -> PathBuf {
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let home = t.join("claude");
    let p = home.join("projects");
    fs::create_dir_all(t.join("cwd")).unwrap();
    write(p.join("-p/a.jsonl"), b"{\"a\":1}\n");
    write(p.join("-p/subagents/agent-1.jsonl"), b"x\n");
    write(p.join(HOSTILE_DIR).join("s p a c e.jsonl"), b"spaces\n");
    write(p.join(HOSTILE_DIR).join("-x.jsonl"), b"dash\n");
    write(p.join(HOSTILE_DIR).join(" lead'q.jsonl"), b"lead\n");
    write(p.join("-p/new\nline.jsonl"), b"newline\n");
    write(p.join("-p/dir\nwith nl/inner.jsonl"), b"inner\n");
    write(p.join("-p/notes.txt"), b"not a transcript\n");
    write(p.join("-p/back\\slash.jsonl"), b"backslash\n");
    for (rel, content) in ODD_NAMES {
        write(home.join(bytes_path(rel)), content);
    }
    write(p.join(bytes_path(b"-p/bad\xff\xfe.jsonl")), b"latin\n");
    fs::create_dir_all(p.join("-p/dir.jsonl")).unwrap();
    write(p.join("1/2/3/4/5/6/ok.jsonl"), b"deep ok\n");
    write(p.join("1/2/3/4/5/6/7/too-deep.jsonl"), b"too deep\n");
    write(p.join("1/2/3/4/5/6/7/n\nl.jsonl"), b"not counted\n");
    write(p.join("1/2/3/4/5/6/n\nl"), b"counted\n");
    write(home.join("top.jsonl"), b"outside the subdir\n");
    write(t.join("outside/secret.jsonl"), b"secret\n");
    symlink(t.join("outside/secret.jsonl"), p.join("-p/link.jsonl")).unwrap();
    symlink(t.join("outside"), p.join("escape")).unwrap();
    symlink(p.join("-p"), p.join("inner-link")).unwrap();
    // 10 MB of xorshift noise.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let big: Vec<u8> = (0..10_000_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    write(p.join("-p/big.jsonl"), &big);
    let root_link = t.join("claude-link");
    symlink(&home, &root_link).unwrap();
    Tree {
        tmp,
        root_link,
        big,
    }
}

/// Runs a script under a shell, with the tree's `cwd` as working directory.
fn run(shell: &Shell, tree: &Tree, envs: &[(&str, &Path)], script: &[u8]) -> Vec<u8> {
    let mut cmd = Command::new(&shell.argv[0]);
    cmd.args(&shell.argv[1..]).current_dir(tree.cwd());
    if let Some(dir) = &shell.clean_env {
        cmd.env_clear().env("PATH", dir);
    }
    for harness in crate::test_support::harnesses() {
        if let Some(var) = harness.default_home().env_var {
            cmd.env_remove(var);
        }
        if let Some(var) = harness.db_env() {
            cmd.env_remove(var);
        }
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let script = script.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&script);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(
        !tree.cwd().join("pwned").exists() && !tree.cwd().join("pwned2").exists(),
        "{}: a name was executed",
        shell.name
    );
    out.stdout
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

fn local_listing(specs: &[RootSpec]) -> Listing {
    block_on(LocalHost::new("local").list(specs)).unwrap()
}

/// `listing` without the inodes and ctimes, as the modes that give none (`ls`, the
/// find-and-read by globs) list it.
fn without_stamps(mut listing: Listing) -> Listing {
    for file in &mut listing.files {
        file.inode = None;
        file.ctime = None;
    }
    listing
}

/// What `mode` lists of `expected`: all of it, but the inodes and ctimes in the `ls` mode.
fn as_listed(expected: &Listing, mode: Option<ListMode>) -> Listing {
    match mode {
        Some(ListMode::LsDate) => without_stamps(expected.clone()),
        _ => expected.clone(),
    }
}

fn list_with(shell: &Shell, tree: &Tree, specs: &[RootSpec], mode: Option<ListMode>) -> Listing {
    let nonce = new_nonce();
    let out = run(shell, tree, &[], &list_script_with(&nonce, specs, mode));
    match decode_list("test", &nonce, &crate::test_support::roots(), &out) {
        Ok(listing) => listing,
        Err(e) => panic!("{} {mode:?}: {e}\n{}", shell.name, out.escape_ascii()),
    }
}

fn mode_of(out: &[u8], nonce: &str) -> String {
    let frame = parse_frame("test", nonce, out).unwrap();
    let line = frame
        .body
        .split(|&b| b == b'\n')
        .find(|l| l.starts_with(b"MODE "))
        .unwrap();
    String::from_utf8_lossy(&line[5..]).into_owned()
}

#[test]
fn listing_matches_the_local_host_in_every_shell() {
    let tree = tree();
    let missing_root = RootSpec {
        harness: crate::test_support::harness("claude"),
        dir: Some(b"/nonexistent/it's $(touch pwned)".to_vec()),
    };
    let specs = [tree.spec(), missing_root];
    let expected = local_listing(&specs);
    let rels: Vec<String> = expected
        .files
        .iter()
        .map(|f| display_path(&f.rel))
        .collect();
    // Every name is carried: newlines and carriage returns too, in files and directories.
    assert_eq!(expected.files.len(), 17, "{rels:#?}");
    assert_eq!(expected.skipped_names, 0);
    assert!(rels.contains(&"projects/1/2/3/4/5/6/ok.jsonl".to_string()));
    for rel in [
        &b"projects/-p/new\nline.jsonl"[..],
        b"projects/-p/dir\nwith nl/inner.jsonl",
    ]
    .into_iter()
    .chain(
        ODD_NAMES
            .iter()
            .map(|(rel, _)| *rel)
            .filter(|rel| rel.ends_with(b".jsonl")),
    ) {
        assert!(
            expected.files.iter().any(|f| f.rel == rel),
            "{} not in {rels:#?}",
            rel.escape_ascii()
        );
    }
    for shell in shells(tree.path()) {
        let got = list_with(&shell, &tree, &specs, None);
        assert_eq!(got, expected, "{}", shell.name);
    }
}

#[test]
fn every_listing_mode_agrees() {
    let tree = tree();
    let specs = [tree.spec()];
    let expected = local_listing(&specs);
    let all = shells(tree.path());
    let mut modes_seen = Vec::new();
    for shell in &all {
        // What the probe picks, and that it is the same listing.
        let nonce = new_nonce();
        let out = run(shell, &tree, &[], &list_script_with(&nonce, &specs, None));
        modes_seen.push((shell.name, mode_of(&out, &nonce)));
        let forced: &[ListMode] = if shell.clean_env.is_some() {
            &[ListMode::StatC, ListMode::LsDate]
        } else if shell.name == "dash" {
            &[ListMode::GnuFind, ListMode::StatC, ListMode::LsDate]
        } else {
            &[ListMode::LsDate]
        };
        for &mode in forced {
            let got = list_with(shell, &tree, &specs, Some(mode));
            assert_eq!(
                got,
                as_listed(&expected, Some(mode)),
                "{} {mode:?}",
                shell.name
            );
        }
    }
    for (name, mode) in &modes_seen {
        let want = if name.contains("applets") {
            "statc"
        } else {
            "gnu"
        };
        assert_eq!(mode, want, "{name}");
    }
}

/// A home holding a session of every harness, plus files beside them that are not transcripts.
fn every_harness_home(base: &Path) -> PathBuf {
    let home = base.join("every");
    for (rel, text) in [
        (".claude/projects/-w/c1.jsonl", "c\n"),
        (
            ".codex/sessions/2026/11/02/rollout-2026-11-02T10-00-00-019a.jsonl",
            "x\n",
        ),
        (".codex/archived_sessions/rollout-old.jsonl", "x\n"),
        (".codex/history.jsonl", "not a transcript\n"),
        (".pi/agent/sessions/--w--/2026_019a.jsonl", "p\n"),
        (".grok/sessions/%2Fw/019a/chat_history.jsonl", "g\n"),
        (
            ".grok/sessions/%2Fw/019a/updates.jsonl",
            "not a transcript\n",
        ),
        (
            ".grok/sessions/%2Fw/prompt_history.jsonl",
            "not a transcript\n",
        ),
        (
            ".gemini/tmp/w/chats/session-2026-11-02T10-00-9e000000.jsonl",
            "m\n",
        ),
        (".gemini/tmp/w/chats/9e000000-full/sub.jsonl", "m\n"),
        (".gemini/tmp/w/logs.json", "[]"),
        (".local/share/opencode/opencode.db", "SQLite format 3\0"),
        (".local/share/opencode/opencode.db-wal", "w"),
        (".local/share/opencode/opencode.db-shm", "not listed"),
        (".local/share/opencode/storage/x.db", "not listed"),
        (".grok/grok.db", "SQLite format 3\0"),
    ] {
        write(home.join(rel), text.as_bytes());
    }
    home
}

#[test]
fn every_harness_lists_alike_from_home_and_variables() {
    let tree = tree();
    let home = every_harness_home(tree.path());
    let explicit: Vec<RootSpec> = crate::test_support::harnesses()
        .into_iter()
        .map(|h| RootSpec {
            harness: h,
            dir: Some(
                home.join(h.default_home().home_relative)
                    .as_os_str()
                    .as_bytes()
                    .to_vec(),
            ),
        })
        .collect();
    let expected = local_listing(&explicit);
    let rels: Vec<String> = expected
        .files
        .iter()
        .map(|f| format!("{} {}", f.harness, display_path(&f.rel)))
        .collect();
    // Gemini lists every `.json` (the legacy documents); `logs.json` is listed and not a session.
    assert_eq!(rels.len(), 11, "{rels:#?}");
    assert!(rels.contains(&"opencode opencode.db-wal".to_string()));
    assert!(rels.contains(&"grok-cli grok.db".to_string()));
    assert!(rels.contains(&"grok sessions/%2Fw/019a/chat_history.jsonl".to_string()));
    let defaults: Vec<RootSpec> = crate::test_support::roots();
    // GEMINI_CLI_HOME names the directory above `.gemini`; the others name the home itself.
    // XDG_DATA_HOME names the directory above `opencode`. grok-cli honours no variable.
    let vars: Vec<(&str, PathBuf)> = crate::test_support::harnesses()
        .into_iter()
        .filter_map(|h| {
            let d = h.default_home();
            let dir = if d.env_relative.is_empty() {
                home.join(d.home_relative)
            } else {
                let above = d.home_relative.strip_suffix(d.env_relative).unwrap();
                home.join(above.trim_end_matches('/'))
            };
            Some((d.env_var?, dir))
        })
        .collect();
    let with_var_files: Vec<_> = expected
        .files
        .iter()
        .filter(|f| f.harness.default_home().env_var.is_some())
        .cloned()
        .collect();
    let mut with_vars: Vec<(&str, &Path)> = vars.iter().map(|(k, v)| (*k, v.as_path())).collect();
    with_vars.push(("HOME", Path::new("/nonexistent")));
    for shell in shells(tree.path()) {
        for mode in [None, Some(ListMode::LsDate)] {
            let nonce = new_nonce();
            let script = list_script_with(&nonce, &explicit, mode);
            let got = decode_list(
                "t",
                &nonce,
                &crate::test_support::roots(),
                &run(&shell, &tree, &[], &script),
            )
            .unwrap();
            assert_eq!(got, as_listed(&expected, mode), "{} {mode:?}", shell.name);
        }
        let nonce = new_nonce();
        let script = list_script(&nonce, &defaults);
        let got = decode_list(
            "t",
            &nonce,
            &crate::test_support::roots(),
            &run(&shell, &tree, &[("HOME", &home)], &script),
        );
        assert_eq!(got.unwrap(), expected, "{} from $HOME", shell.name);
        let got = decode_list(
            "t",
            &nonce,
            &crate::test_support::roots(),
            &run(&shell, &tree, &with_vars, &script),
        );
        assert_eq!(
            got.unwrap().files,
            with_var_files,
            "{} from variables",
            shell.name
        );
    }
}

#[test]
fn opencode_db_names_the_database_in_every_shell() {
    let tree = tree();
    let home = tree.path().join("ochome");
    let data = home.join(".local/share/opencode");
    write(data.join("opencode.db"), b"SQLite format 3\0");
    write(data.join("sub/dev.db"), b"SQLite format 3\0");
    write(data.join("sub/dev.db-wal"), b"w");
    let elsewhere = tree.path().join("else where");
    write(elsewhere.join("my db.sqlite"), b"SQLite format 3\0");
    write(elsewhere.join("my db.sqlite-wal"), b"w");
    write(elsewhere.join("opencode.db"), b"not listed");
    let canon = |p: &Path| fs::canonicalize(p).unwrap().as_os_str().as_bytes().to_vec();
    let spec = [RootSpec::default_for(crate::test_support::harness(
        "opencode",
    ))];
    let listed = |got: &Listing| -> (Vec<u8>, Vec<String>) {
        (
            got.roots[0].dir.clone(),
            got.files.iter().map(|f| display_path(&f.rel)).collect(),
        )
    };
    let memory = Path::new(":memory:");
    let relative = Path::new("sub/dev.db");
    let absolute = elsewhere.join("my db.sqlite");
    let cases: [(Option<&Path>, Vec<u8>, Vec<&str>); 4] = [
        (None, canon(&data), vec!["opencode.db"]),
        (Some(memory), canon(&data), vec!["opencode.db"]),
        (
            Some(relative),
            canon(&data.join("sub")),
            vec!["dev.db", "dev.db-wal"],
        ),
        (
            Some(&absolute),
            canon(&elsewhere),
            vec!["my db.sqlite", "my db.sqlite-wal"],
        ),
    ];
    for shell in shells(tree.path()) {
        for (value, dir, files) in &cases {
            let nonce = new_nonce();
            let script = list_script(&nonce, &spec);
            let mut envs: Vec<(&str, &Path)> = vec![("HOME", &home)];
            envs.extend(value.map(|v| ("OPENCODE_DB", v)));
            let out = run(&shell, &tree, &envs, &script);
            let got = decode_list("t", &nonce, &crate::test_support::roots(), &out)
                .unwrap_or_else(|e| panic!("{}: {e}\n{}", shell.name, out.escape_ascii()));
            let files: Vec<String> = files.iter().map(|f| f.to_string()).collect();
            assert_eq!(
                listed(&got),
                (dir.clone(), files),
                "{} {value:?}",
                shell.name
            );
        }
    }
    // An explicit root ignores the variable (nothing in the environment is consulted).
    let explicit = [RootSpec {
        harness: crate::test_support::harness("opencode"),
        dir: Some(data.as_os_str().as_bytes().to_vec()),
    }];
    let got = local_listing(&explicit);
    assert_eq!(listed(&got).1, ["opencode.db"]);
}

#[test]
fn default_root_comes_from_the_hosts_environment() {
    let tree = tree();
    let home = tree.path().join("home");
    fs::create_dir_all(&home).unwrap();
    symlink(tree.home(), home.join(".claude")).unwrap();
    let expected = local_listing(&[RootSpec {
        harness: crate::test_support::harness("claude"),
        dir: Some(home.join(".claude").as_os_str().as_bytes().to_vec()),
    }]);
    let spec = [RootSpec::default_for(crate::test_support::harness(
        "claude",
    ))];
    for shell in shells(tree.path()) {
        let nonce = new_nonce();
        let script = list_script(&nonce, &spec);
        let out = run(&shell, &tree, &[("HOME", &home)], &script);
        assert_eq!(
            decode_list("t", &nonce, &crate::test_support::roots(), &out).unwrap(),
            expected,
            "{}",
            shell.name
        );
        // The variable wins over $HOME.
        let out = run(
            &shell,
            &tree,
            &[
                ("HOME", Path::new("/nonexistent")),
                ("CLAUDE_CONFIG_DIR", &tree.root_link),
            ],
            &script,
        );
        let got = decode_list("t", &nonce, &crate::test_support::roots(), &out).unwrap();
        assert_eq!(got.files, expected.files, "{}", shell.name);
        // Neither: reported missing, as `$HOME/.claude`.
        let out = run(
            &shell,
            &tree,
            &[("HOME", Path::new("/nonexistent/"))],
            &script,
        );
        let got = decode_list("t", &nonce, &crate::test_support::roots(), &out).unwrap();
        assert_eq!(got.roots[0].dir, b"/nonexistent/.claude", "{}", shell.name);
        assert!(!got.roots[0].exists);
    }
}

fn read_with(
    shell: &Shell,
    tree: &Tree,
    file: &FileRef,
    ranges: &[ByteRange],
    encoder: Option<Encoder>,
) -> Result<ReadResult, HostError> {
    let nonce = new_nonce();
    let out = run(
        shell,
        tree,
        &[],
        &read_script_with(&nonce, file, ranges, encoder),
    );
    decode_read("test", &nonce, ranges, &out)
}

fn expected_chunks(data: &[u8], ranges: &[ByteRange]) -> Vec<Vec<u8>> {
    ranges
        .iter()
        .map(|r| {
            let start = (r.start as usize).min(data.len());
            let end = (r.end() as usize).min(data.len());
            data[start..end].to_vec()
        })
        .collect()
}

#[test]
fn ranges_are_byte_identical_in_every_shell() {
    let tree = tree();
    let size = tree.big.len() as u64;
    let small = [
        ByteRange::new(0, 10),
        ByteRange::new(4095, 2),
        ByteRange::new(65_535, 70_000),
        ByteRange::new(123_457, 300_001),
        ByteRange::new(size - 5, 100),
        ByteRange::new(size + 10, 5),
        ByteRange::new(77, 0),
    ];
    let large = [ByteRange::new(1_000_001, 4 * 1024 * 1024 - 1)];
    let file = tree.file(b"projects/-p/big.jsonl");
    let local = LocalHost::new("local");
    for shell in shells(tree.path()) {
        for ranges in [&small[..], &large[..]] {
            let got = read_with(&shell, &tree, &file, ranges, None)
                .unwrap_or_else(|e| panic!("{}: {e}", shell.name));
            assert_eq!(got.size, size, "{}", shell.name);
            assert!(
                got.chunks == expected_chunks(&tree.big, ranges),
                "{}: chunks differ",
                shell.name
            );
            assert_eq!(got, block_on(local.read(&file, ranges)).unwrap());
        }
    }
}

#[test]
fn every_encoder_round_trips() {
    let tree = tree();
    let ranges = [
        ByteRange::new(65_530, 200_000),
        ByteRange::new(9_999_990, 64),
    ];
    let file = tree.file(b"projects/-p/big.jsonl");
    let all = shells(tree.path());
    let mut exercised = Vec::new();
    for shell in &all {
        let encoders: &[Encoder] = if shell.clean_env.is_some() {
            // busybox has base64 and uuencode, but no openssl.
            &[Encoder::Base64, Encoder::Uuencode, Encoder::Od]
        } else if shell.name == "dash" {
            &[Encoder::Base64, Encoder::Openssl, Encoder::Od]
        } else {
            &[]
        };
        for &encoder in encoders {
            if encoder == Encoder::Openssl && on_path("openssl").is_none() {
                missing("openssl");
                continue;
            }
            if encoder == Encoder::Zstd && on_path("zstd").is_none() {
                missing("zstd");
                continue;
            }
            let got = read_with(shell, &tree, &file, &ranges, Some(encoder))
                .unwrap_or_else(|e| panic!("{} {encoder:?}: {e}", shell.name));
            assert!(
                got.chunks == expected_chunks(&tree.big, &ranges),
                "{encoder:?}"
            );
            exercised.push(encoder);
        }
    }
    eprintln!("encoders exercised: {exercised:?}");
}

#[test]
fn hostile_names_read_and_confinement_holds_in_every_shell() {
    let tree = tree();
    let hostile = format!("projects/{HOSTILE_DIR}/");
    let readable: Vec<(Vec<u8>, &[u8])> = vec![
        (
            [hostile.as_bytes(), b"s p a c e.jsonl"].concat(),
            b"spaces\n",
        ),
        ([hostile.as_bytes(), b"-x.jsonl"].concat(), b"dash\n"),
        ([hostile.as_bytes(), b" lead'q.jsonl"].concat(), b"lead\n"),
        (b"projects/-p/new\nline.jsonl".to_vec(), b"newline\n"),
        (b"projects/-p/bad\xff\xfe.jsonl".to_vec(), b"latin\n"),
        (b"projects/-p/dir\nwith nl/inner.jsonl".to_vec(), b"inner\n"),
        (b"projects/-p/back\\slash.jsonl".to_vec(), b"backslash\n"),
    ];
    let readable: Vec<(Vec<u8>, &[u8])> = readable
        .into_iter()
        .chain(
            ODD_NAMES
                .iter()
                .map(|(rel, content)| (rel.to_vec(), *content)),
        )
        .collect();
    let refused: [&[u8]; 6] = [
        b"projects/-p/link.jsonl",
        b"projects/escape/secret.jsonl",
        b"projects/inner-link/a.jsonl",
        b"projects/../../outside/secret.jsonl",
        b"projects/-p/dir.jsonl",
        b"/etc/passwd",
    ];
    let ranges = [ByteRange::new(0, 100)];
    for shell in shells(tree.path()) {
        for (rel, content) in &readable {
            let got = read_with(&shell, &tree, &tree.file(rel), &ranges, None);
            if shell.name == "yash" && rel.contains(&0xff) {
                // yash cannot hold bytes invalid in its locale: refused, never misread.
                assert!(matches!(got, Err(HostError::Io { .. })), "{got:?}");
                continue;
            }
            let got = got.unwrap_or_else(|e| panic!("{} {}: {e}", shell.name, rel.escape_ascii()));
            assert_eq!(got.chunks, vec![content.to_vec()], "{}", shell.name);
        }
        for rel in refused {
            let got = read_with(&shell, &tree, &tree.file(rel), &ranges, None);
            assert!(
                matches!(got, Err(HostError::PathRefused { .. })),
                "{} {}: {got:?}",
                shell.name,
                rel.escape_ascii()
            );
        }
        let got = read_with(
            &shell,
            &tree,
            &tree.file(b"projects/-p/gone.jsonl"),
            &ranges,
            None,
        );
        assert!(matches!(got, Err(HostError::NotFound { .. })), "{got:?}");
        let mut no_root = tree.file(b"projects/-p/a.jsonl");
        no_root.root = b"/nonexistent/root".to_vec();
        let got = read_with(&shell, &tree, &no_root, &ranges, None);
        assert!(matches!(got, Err(HostError::NotFound { .. })), "{got:?}");
        // The root itself may be a symlink; it is resolved.
        let mut via_link = tree.file(b"projects/-p/a.jsonl");
        via_link.root = tree.root_link.as_os_str().as_bytes().to_vec();
        let got = read_with(&shell, &tree, &via_link, &ranges, None).unwrap();
        assert_eq!(got.chunks, vec![b"{\"a\":1}\n".to_vec()]);
    }
}

/// Where `/proc/self/fdinfo` prints no `ino` (Linux before 5.14), a read holds its descriptor
/// by `stat -c` of the name and `stat -L` of the descriptor, whether or not the host's `stat`
/// takes `-` for its standard input (busybox's does not): the same bytes, the same refusals,
/// in every shell.
#[test]
fn reads_hold_their_descriptor_by_stat_where_fdinfo_has_no_inode_in_every_shell() {
    let tree = tree();
    let bin = tree.path().join("stat-without-dash");
    tool(
        &bin,
        "stat",
        &format!(
            "#!/bin/sh\nfor a do [ \"$a\" = - ] && exit 1; done\nexec '{}' \"$@\"\n",
            on_path("stat").expect("stat").display()
        ),
    );
    let without_dash = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let hostile = format!("projects/{HOSTILE_DIR}/");
    let files: [(Vec<u8>, Option<&[u8]>); 4] = [
        (b"projects/-p/a.jsonl".to_vec(), Some(b"{\"a\":1}\n")),
        (
            [hostile.as_bytes(), b" lead'q.jsonl"].concat(),
            Some(b"lead\n"),
        ),
        (b"projects/-p/new\nline.jsonl".to_vec(), Some(b"newline\n")),
        (b"projects/-p/link.jsonl".to_vec(), None),
    ];
    let ranges = [ByteRange::new(0, 100)];
    for shell in shells(tree.path())
        .into_iter()
        .filter(|s| s.clean_env.is_none())
    {
        for path in [None, Some(without_dash.as_str())] {
            let env: Vec<(&str, &Path)> = path.iter().map(|p| ("PATH", Path::new(*p))).collect();
            for (rel, content) in &files {
                let nonce = new_nonce();
                let script = without_fdinfo_ino(read_script(&nonce, &tree.file(rel), &ranges));
                let out = run(&shell, &tree, &env, &script);
                let got = decode_read("t", &nonce, &ranges, &out);
                let what = format!("{} {} (PATH {path:?})", shell.name, rel.escape_ascii());
                match content {
                    Some(content) => {
                        let got = got.unwrap_or_else(|e| panic!("{what}: {e}"));
                        assert_eq!(got.chunks, vec![content.to_vec()], "{what}");
                    }
                    None => assert!(
                        matches!(got, Err(HostError::PathRefused { .. })),
                        "{what}: {got:?}"
                    ),
                }
            }
        }
    }
}

/// A session's name that is a FIFO, or a symlink to one, is refused before anything opens it
/// (the shell's `-L` and `-f` tests): opening a FIFO for reading waits for a writer, so a read
/// that opened first would hang. A
/// writer opens the FIFO after a while, so that a read that did open it ends (and fails the
/// test) rather than hanging it.
#[test]
fn a_fifo_under_a_session_name_is_refused_without_being_opened_in_every_shell() {
    let tree = tree();
    let dir = tree.home().join("projects/-p");
    let fifo = dir.join("fifo.jsonl");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    symlink(&fifo, dir.join("to-fifo.jsonl")).unwrap();
    let ranges = [ByteRange::new(0, 100)];
    for shell in shells(tree.path()) {
        for rel in [&b"projects/-p/fifo.jsonl"[..], b"projects/-p/to-fifo.jsonl"] {
            let started = std::time::Instant::now();
            let (done, wait) = std::sync::mpsc::channel::<()>();
            let unblock = {
                let fifo = fifo.clone();
                std::thread::spawn(move || {
                    if wait
                        .recv_timeout(std::time::Duration::from_secs(10))
                        .is_err()
                    {
                        // Read and write: Linux opens a FIFO so without waiting for a peer.
                        let _ = fs::OpenOptions::new().read(true).write(true).open(&fifo);
                    }
                })
            };
            let nonce = new_nonce();
            let out = run(
                &shell,
                &tree,
                &[],
                &read_script(&nonce, &tree.file(rel), &ranges),
            );
            let got = decode_read("t", &nonce, &ranges, &out);
            let what = format!("{} {}", shell.name, rel.escape_ascii());
            assert!(
                started.elapsed() < std::time::Duration::from_secs(10),
                "{what}: the read waited on the FIFO"
            );
            let _ = done.send(());
            unblock.join().unwrap();
            assert!(got.is_err(), "{what}: {got:?}");
        }
    }
}

#[test]
fn rc_file_noise_around_the_frame_is_ignored() {
    let tree = tree();
    let Some(shell) = shells(tree.path()).into_iter().next() else {
        return;
    };
    let nonce = new_nonce();
    let ranges = [ByteRange::new(3, 4)];
    let out = run(
        &shell,
        &tree,
        &[],
        &read_script(&nonce, &tree.file(b"projects/-p/a.jsonl"), &ranges),
    );
    let mut noisy = b"BASHRC-NOISE\nWelcome! :BEGIN x\n".to_vec();
    noisy.extend_from_slice(&out);
    noisy.extend_from_slice(b"bye\n\nlogout :END 9\n");
    let got = decode_read("t", &nonce, &ranges, &noisy).unwrap();
    assert_eq!(got.chunks, vec![b"\":1}".to_vec()]);
}

#[test]
fn a_stdin_reading_rc_file_cannot_make_the_script_run_a_fragment() {
    // Whatever prefix an rc file swallows, what remains either fails to parse or is intact:
    // it never runs anything from a name and never yields a wrong frame.
    let tree = tree();
    let nonce = new_nonce();
    let file = tree.file(format!("projects/{HOSTILE_DIR}/-x.jsonl").as_bytes());
    let ranges = [ByteRange::new(0, 5)];
    let script = read_script(&nonce, &file, &ranges);
    for shell in shells(tree.path()) {
        let step = if shell.name == "dash" { 3 } else { 29 };
        for cut in (1..script.len()).step_by(step) {
            // `run` asserts that nothing from a name was executed.
            let out = run(&shell, &tree, &[], &script[cut..]);
            if let Ok(got) = decode_read("t", &nonce, &ranges, &out) {
                assert_eq!(
                    got.chunks,
                    vec![b"dash\n".to_vec()],
                    "{} cut at {cut}",
                    shell.name
                );
            }
        }
    }
}

#[test]
fn scripts_are_ascii_and_write_nothing() {
    let specs = [
        RootSpec {
            harness: crate::test_support::harness("claude"),
            dir: Some(b"/x/it's > y \xff".to_vec()),
        },
        RootSpec::default_for(crate::test_support::harness("claude")),
    ];
    let file = FileRef {
        harness: crate::test_support::harness("claude"),
        root: b"/r>oot".to_vec(),
        rel: b"projects/a > b/c.jsonl".to_vec(),
    };
    let ranges = [ByteRange::new(1, 2)];
    for script in [
        list_script("n", &specs),
        read_script("n", &file, &ranges),
        read_script("n", &file, &[ByteRange::new(0, u64::MAX)]),
    ] {
        assert!(script.is_ascii());
        let text = String::from_utf8(script).unwrap();
        if std::env::var_os("SHOW_SCRIPT").is_some() {
            eprintln!("{text}");
        }
        // The only redirections: to /dev/null, stderr to stdout, and the group's stdin.
        let mut rest = text.as_str();
        while let Some(i) = rest.find('>') {
            let after = &rest[i + 1..];
            assert!(
                after.starts_with("/dev/null") || after.starts_with("&1"),
                "redirection at {:?}",
                &rest[i.saturating_sub(20)..(i + 20).min(rest.len())]
            );
            rest = after;
        }
        assert!(text.starts_with("{\n") && text.ends_with("} </dev/null\n"));
    }
}

#[test]
fn batched_reads_answer_as_reads_one_by_one_in_every_shell() {
    let tree = tree();
    let ranges = vec![ByteRange::new(0, 100)];
    let size = tree.big.len() as u64;
    let mut reads: Vec<(FileRef, Vec<ByteRange>)> = vec![
        (
            tree.file(b"projects/-p/big.jsonl"),
            vec![
                ByteRange::new(0, 4096),
                ByteRange::new(size - 70_000, 200_000),
            ],
        ),
        (
            tree.file(format!("projects/{HOSTILE_DIR}/ lead'q.jsonl").as_bytes()),
            ranges.clone(),
        ),
        (tree.file(b"projects/-p/new\nline.jsonl"), ranges.clone()),
        // Refused, missing and out-of-bounds reads are each their own answer.
        (tree.file(b"projects/-p/link.jsonl"), ranges.clone()),
        (
            tree.file(b"projects/../../outside/secret.jsonl"),
            ranges.clone(),
        ),
        (tree.file(b"projects/-p/gone.jsonl"), ranges.clone()),
        (
            tree.file(b"projects/-p/a.jsonl"),
            vec![ByteRange::new(0, 5 << 20)],
        ),
        (tree.file(b"projects/-p/a.jsonl"), vec![]),
        // Scattered ranges (a database's pages): one encoder for all of them (`DATA 0-3`)…
        (
            tree.file(b"projects/-p/big.jsonl"),
            vec![
                ByteRange::new(4096, 4096),
                ByteRange::new(20_000, 8192),
                ByteRange::new(100_000, 4096),
                ByteRange::new(size - 100, 4096),
            ],
        ),
        // …unless one before the last reaches past the end: then one encoder each.
        (
            tree.file(b"projects/-p/big.jsonl"),
            vec![ByteRange::new(size - 10, 100), ByteRange::new(0, 10)],
        ),
    ];
    reads.extend(
        ODD_NAMES
            .iter()
            .map(|(rel, _)| (tree.file(rel), ranges.clone())),
    );
    let kind = |r: &Result<ReadResult, HostError>| match r {
        Ok(result) => format!("{result:?}"),
        Err(HostError::NotFound { .. }) => "not found".to_string(),
        Err(HostError::PathRefused { .. }) => "refused".to_string(),
        Err(e) => format!("{e}"),
    };
    let local = LocalHost::new("local");
    let expected: Vec<String> = block_on(local.read_many(&reads))
        .unwrap()
        .iter()
        .map(kind)
        .collect();
    assert_eq!(
        expected[1],
        kind(&Ok(ReadResult {
            size: 5,
            chunks: vec![b"lead\n".to_vec()]
        }))
    );
    assert_eq!(expected[3], "refused");
    assert_eq!(expected[5], "not found");
    for shell in shells(tree.path()) {
        let nonce = new_nonce();
        let out = run(&shell, &tree, &[], &read_many_script(&nonce, &reads, None));
        let got = super::super::decode_read_many("test", &nonce, &reads, &out)
            .unwrap_or_else(|e| panic!("{}: {e}", shell.name));
        let got: Vec<String> = got.iter().map(kind).collect();
        assert_eq!(got, expected, "{}", shell.name);
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.contains("\nDATA 0-3\n"),
            "{}: scattered ranges not merged",
            shell.name
        );
        assert!(
            text.contains("\nDATA 1\n"),
            "{}: a range past the end merged",
            shell.name
        );
    }
}

/// What the find-and-read by globs should find of the tree for `id`: the files of the full
/// listing that Claude's id glob matches, not below a symlink, and those with LF or CR in
/// their path left out (`true`: one was, and nothing is read in one go).
fn globbed(listing: &Listing, id: &str) -> (Listing, bool) {
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: true,
    };
    let harness = crate::test_support::harness("claude");
    let patterns: Vec<glob::Pattern> = harness
        .layout()
        .id_globs
        .iter()
        .map(|g| glob::Pattern::new(&glob_escape_id(g, id)).unwrap())
        .collect();
    let mut narrowed = listing.clone();
    let mut odd = false;
    narrowed.files.retain(|f| {
        let rel = String::from_utf8_lossy(&f.rel);
        let hit = patterns.iter().any(|p| p.matches_with(&rel, options));
        if hit && (f.rel.contains(&b'\n') || f.rel.contains(&b'\r')) {
            odd = true;
            return false;
        }
        hit
    });
    (narrowed, odd)
}

/// An id glob with its mark replaced by `id`, the id's glob characters escaped.
fn glob_escape_id(glob: &str, id: &str) -> String {
    glob.replace(ID_MARK, &glob::Pattern::escape(id))
}

#[test]
fn find_and_read_by_globs_reads_the_one_match_as_a_listing_and_a_read_would_in_every_shell() {
    let tree = tree();
    let specs = [tree.spec()];
    // A tail, and the ranges of a `--since` (head, window, what follows: one stream when the
    // file is larger than the first two, and the last past its end).
    let firsts = [
        FirstRead::Tail {
            head: 4096,
            back: 65536,
            ahead: 65536,
        },
        FirstRead::Ranges(vec![
            ByteRange::new(0, 4096),
            ByteRange::new(4_000_000, 5000),
            ByteRange::new(4_005_000, 65536),
        ]),
        FirstRead::Ranges(vec![
            ByteRange::new(0, 4096),
            ByteRange::new(9_999_000, 1000),
            ByteRange::new(10_000_000, 65536),
        ]),
    ];
    let local = LocalHost::new("local");
    let full = block_on(local.list(&specs)).unwrap();
    let all = shells(tree.path());
    // One match (a big file, also reachable through a symlinked directory, which is not
    // followed; a name with spaces; a hostile directory); several; none (a directory, a
    // symlink, one only a symlinked directory holds, too deep); one whose name holds LF or CR.
    for (tail, (id, reads)) in firsts.iter().flat_map(|f| {
        [
            ("big", true),
            ("s", true),
            ("-x", true),
            ("a", false),
            ("b", false),
            ("dir", false),
            ("link", false),
            ("secret", false),
            ("ok", false),
            ("new", false),
            ("car", false),
            ("nothing", false),
        ]
        .map(|case| (f, case))
    }) {
        let (expected, odd) = globbed(&full, id);
        let expected = without_stamps(expected);
        let hit = (expected.files.len() == 1 && !odd).then(|| expected.files[0].clone());
        assert_eq!(hit.is_some(), reads, "{id}: {:?}", expected.files);
        let expected_read = hit.as_ref().map(|entry| {
            let file = FileRef {
                harness: entry.harness,
                root: entry.root.to_vec(),
                rel: entry.rel.clone(),
            };
            block_on(local.read(&file, &tail.ranges(entry.size))).unwrap()
        });
        for shell in &all {
            let nonce = new_nonce();
            let script = find_read_script(&nonce, &specs, id, tail, None);
            let out = run(shell, &tree, &[], &script);
            let got = super::super::decode_find_read("test", &nonce, &specs, tail, &out)
                .unwrap_or_else(|e| panic!("{} {id}: {e}\n{}", shell.name, out.escape_ascii()));
            if shell.name == "yash" {
                // It cannot carry every name (see `find_read_by_globs`): no read in one go by
                // globbing.
                assert!(got.read.is_none(), "yash {id}");
                continue;
            }
            assert_eq!(got.listing, expected, "{} {id}", shell.name);
            match (&got.read, &hit, &expected_read) {
                (Some((fa, Ok(a))), Some(fb), Some(b)) => {
                    assert_eq!(fa, fb, "{} {id}", shell.name);
                    assert!(a == b, "{} {id}: reads differ", shell.name);
                }
                (None, None, None) => {}
                (a, b, _) => panic!("{} {id}: {a:?} vs {b:?}", shell.name),
            }
            // The big file's ranges below its end go to one encoder (the third read's second
            // range ends in the file's last block, past its end: one by one).
            if id == "big" && !std::ptr::eq(tail, &firsts[2]) {
                assert!(out.windows(8).any(|w| w == b"\nDATA 0-"), "{}", shell.name);
            }
            // No walk, and `base64` taken when `command -v` finds it.
            let text = String::from_utf8_lossy(&script);
            assert!(!text.contains("find \"./$sd\"") && !text.contains("walk "));
            assert!(text.contains("command -v base64 >/dev/null 2>&1 && e=b64"));
        }
    }
}

/// Roots, `OPENCODE_DB`, id, and what is read of the top files.
type TopCase<'a> = (
    Vec<RootSpec>,
    Option<&'a Path>,
    &'a str,
    Vec<(String, u64, Vec<u8>)>,
);

/// What [`find_read_script_with`] read of the top files, by name: size and bytes.
fn tops_read(found: &crate::Found) -> Vec<(String, u64, Vec<u8>)> {
    found
        .tops
        .iter()
        .map(|(entry, read)| {
            let read = read.as_ref().unwrap_or_else(|e| panic!("{e}"));
            (display_path(&entry.rel), read.size, read.chunks.concat())
        })
        .collect()
}

#[test]
fn find_and_read_reads_the_top_files_first_ranges_when_no_path_holds_the_id_in_every_shell() {
    let tree = tree();
    let opencode = crate::test_support::harness("opencode");
    let home = tree.path().join("ochome");
    let data = home.join(".local/share/opencode");
    // A database larger than what is asked of it, its WAL, and one session of the JSON tree.
    let mut db = b"SQLite format 3\0".to_vec();
    db.extend((0..300_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    write(data.join("opencode.db"), &db);
    write(data.join("opencode.db-wal"), b"0123456789 wal bytes");
    write(data.join("storage/session/p/ses_file.json"), b"{}");
    // Named by `OPENCODE_DB`: a name with a space and a quote, no WAL.
    let elsewhere = tree.path().join("else where");
    write(elsewhere.join("my 'db.sqlite"), &db[..5000]);
    let ranges = vec![
        vec![ByteRange::new(0, 256 * 1024)],
        vec![ByteRange::new(0, 256 * 1024)],
    ];
    let tops = [crate::TopReads {
        harness: opencode,
        ranges,
    }];
    let first = FirstRead::Ranges(vec![ByteRange::new(0, 64)]);
    let explicit = RootSpec {
        harness: opencode,
        dir: Some(data.as_os_str().as_bytes().to_vec()),
    };
    let by_default = RootSpec::default_for(opencode);
    let named = elsewhere.join("my 'db.sqlite");
    let db_and_wal = vec![
        (
            "opencode.db".to_string(),
            db.len() as u64,
            db[..256 * 1024].to_vec(),
        ),
        (
            "opencode.db-wal".to_string(),
            20,
            b"0123456789 wal bytes".to_vec(),
        ),
    ];
    // (roots, OPENCODE_DB, id, what is read of the top files)
    let cases: Vec<TopCase> = vec![
        // The claude root first: the database's root is the second.
        (
            vec![tree.spec(), explicit.clone()],
            None,
            "ses_db",
            db_and_wal.clone(),
        ),
        (vec![by_default.clone()], None, "ses_db", db_and_wal.clone()),
        // A path holds the id: that file is read, no top file.
        (
            vec![tree.spec(), explicit.clone()],
            None,
            "ses_file",
            vec![],
        ),
        (
            vec![by_default],
            Some(&named),
            "ses_db",
            vec![("my 'db.sqlite".to_string(), 5000, db[..5000].to_vec())],
        ),
    ];
    let all = shells(tree.path());
    for shell in &all {
        for (specs, env, id, expected) in &cases {
            let nonce = new_nonce();
            let script = find_read_script_with(&nonce, specs, id, &first, None, &tops);
            let mut envs: Vec<(&str, &Path)> = vec![("HOME", &home)];
            envs.extend(env.map(|v| ("OPENCODE_DB", v)));
            let out = run(shell, &tree, &envs, &script);
            let found =
                super::super::decode_find_read_with("test", &nonce, specs, &first, &tops, &out)
                    .unwrap_or_else(|e| panic!("{} {id}: {e}\n{}", shell.name, out.escape_ascii()));
            // yash reads no match in one go by globbing (see `find_read_by_globs`).
            if shell.name != "yash" {
                assert_eq!(
                    found.read.is_some(),
                    expected.is_empty(),
                    "{} {id}",
                    shell.name
                );
            }
            let got = tops_read(&found);
            assert!(
                got == *expected,
                "{} {id} {env:?}: {:?}",
                shell.name,
                got.iter()
                    .map(|(n, z, b)| (n, z, b.len()))
                    .collect::<Vec<_>>()
            );
            // Through gzip, which every shell here finds.
            if !expected.is_empty() {
                assert!(
                    out.windows(6).any(|w| w == b"enc=gz"),
                    "{} {id}",
                    shell.name
                );
            }
            // Each as the listing names it.
            for (entry, _) in &found.tops {
                assert!(found.listing.files.contains(entry), "{} {id}", shell.name);
            }
        }
    }
    // A database that is a symlink is neither listed nor read; the WAL beside it still is.
    fs::rename(
        data.join("opencode.db"),
        tree.path().join("outside/real.db"),
    )
    .unwrap();
    symlink(
        tree.path().join("outside/real.db"),
        data.join("opencode.db"),
    )
    .unwrap();
    let specs = [explicit];
    for shell in &all {
        let nonce = new_nonce();
        let script = find_read_script_with(&nonce, &specs, "ses_db", &first, None, &tops);
        let out = run(shell, &tree, &[], &script);
        let found =
            super::super::decode_find_read_with("test", &nonce, &specs, &first, &tops, &out)
                .unwrap_or_else(|e| panic!("{}: {e}\n{}", shell.name, out.escape_ascii()));
        let names: Vec<String> = tops_read(&found).into_iter().map(|(n, _, _)| n).collect();
        assert_eq!(names, ["opencode.db-wal"], "{}", shell.name);
    }
}

#[test]
fn a_path_hint_is_read_when_it_is_there_and_confined_or_left_out_when_not() {
    let tree = tree();
    let specs = [tree.spec()];
    let first = FirstRead::Ranges(vec![ByteRange::new(0, 64)]);
    let p = tree.home().join("projects");
    // The id in two projects: globbing finds both (no read in one go), the hint names one.
    write(p.join("-q/dupe.jsonl"), b"{\"q\":1}\n");
    write(p.join("-r/dupe.jsonl"), b"{\"r\":1}\n");
    // A symlinked project directory that holds the id too, and one file with it outside.
    write(tree.path().join("outside/dupe.jsonl"), b"outside\n");
    symlink(tree.path().join("outside"), p.join("-s")).unwrap();
    let claude = crate::test_support::harness("claude");
    let hint = |rel: &[u8]| PathHint::new(claude, rel.to_vec());
    let all = shells(tree.path());
    let run_with = |shell: &Shell, hint: Option<&PathHint>| {
        let nonce = new_nonce();
        let script = find_read_script(&nonce, &specs, "dupe", &first, hint);
        let out = run(shell, &tree, &[], &script);
        let found = super::super::decode_find_read("test", &nonce, &specs, &first, &out)
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", shell.name, out.escape_ascii()));
        (String::from_utf8_lossy(&script).into_owned(), found)
    };
    for shell in &all {
        let (_, none) = run_with(shell, None);
        assert!(none.read.is_none(), "{}", shell.name);
        if shell.name != "yash" {
            assert_eq!(none.listing.files.len(), 2, "{}", shell.name);
        }
        let (script, hinted) = run_with(shell, Some(&hint(b"projects/-r/dupe.jsonl")));
        let (entry, read) = hinted
            .read
            .unwrap_or_else(|| panic!("{}: {:?}\n{script}", shell.name, hinted.listing));
        assert_eq!(entry.rel, b"projects/-r/dupe.jsonl", "{}", shell.name);
        assert_eq!(
            read.unwrap().chunks,
            [b"{\"r\":1}\n".to_vec()],
            "{}",
            shell.name
        );
        assert_eq!(hinted.listing.files.len(), 1, "{}", shell.name);
        // Gone: found as without the hint.
        let (_, gone) = run_with(shell, Some(&hint(b"projects/-gone/dupe.jsonl")));
        assert!(gone.read.is_none(), "{}", shell.name);
        // Through a symlinked directory: not followed, found as without the hint.
        let (_, linked) = run_with(shell, Some(&hint(b"projects/-s/dupe.jsonl")));
        assert!(linked.read.is_none(), "{}", shell.name);
        assert!(
            linked
                .listing
                .files
                .iter()
                .all(|f| !f.rel.starts_with(b"projects/-s/")),
            "{}",
            shell.name
        );
    }
    // What a cursor's hint cannot be: never in the script, found as without it.
    for bad in [
        &b"../claude/projects/-r/dupe.jsonl"[..],
        b"projects/-r/../-q/dupe.jsonl",
        b"/etc/passwd",
        b"projects/it's/dupe.jsonl",
        b"projects/$(touch pwned)/dupe.jsonl",
        b"projects/-r/dupe\n.jsonl",
        b"projects/-r/other.jsonl",
        b"projects/-r/x/dupe.jsonl",
        b"",
    ] {
        let (script, found) = run_with(&all[0], Some(&hint(bad)));
        assert!(
            !script.contains(&*String::from_utf8_lossy(bad)) || bad.is_empty(),
            "{}",
            String::from_utf8_lossy(bad)
        );
        assert!(found.read.is_none());
        assert_eq!(found.listing.files.len(), 2);
    }
    // A hint for another harness is not this root's.
    let other = PathHint::new(
        crate::test_support::harness("codex"),
        b"projects/-r/dupe.jsonl".to_vec(),
    );
    assert!(run_with(&all[0], Some(&other)).1.read.is_none());
    assert!(!tree.path().join("cwd/pwned").exists());
}

#[test]
fn a_root_whose_name_holds_a_newline_is_named_hex_encoded_and_read() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("a\nroot $(x)\r");
    write(root.join("projects/-p/nl.jsonl"), b"{}\n");
    let specs = [RootSpec {
        harness: crate::test_support::harness("claude"),
        dir: Some(root.as_os_str().as_bytes().to_vec()),
    }];
    let first = FirstRead::Ranges(vec![ByteRange::new(0, 64)]);
    let tree = tree();
    for shell in shells(tree.path()) {
        let nonce = new_nonce();
        let out = run(
            &shell,
            &tree,
            &[],
            &find_read_script(&nonce, &specs, "nl", &first, None),
        );
        let found = super::super::decode_find_read("test", &nonce, &specs, &first, &out)
            .unwrap_or_else(|e| panic!("{}: {e}", shell.name));
        assert_eq!(
            found.listing.roots[0].dir,
            root.as_os_str().as_bytes(),
            "{}",
            shell.name
        );
        if shell.name != "yash" {
            let (entry, read) = found.read.expect("read in one go");
            assert_eq!(entry.rel, b"projects/-p/nl.jsonl");
            assert_eq!(read.unwrap().chunks, [b"{}\n".to_vec()], "{}", shell.name);
        }
    }
}

/// A refusal of the one match's read (here forced: as root every file is readable) ends the
/// frame as the decoder expects, in every shell.
#[test]
fn a_refused_read_of_the_one_match_ends_the_frame() {
    let tree = tree();
    let specs = [tree.spec()];
    let first = FirstRead::Ranges(vec![ByteRange::new(0, 64)]);
    // yash reads nothing in one go by globs (see above).
    for shell in shells(tree.path()).into_iter().filter(|s| s.name != "yash") {
        let nonce = new_nonce();
        let script = String::from_utf8(find_read_script(&nonce, &specs, "big", &first, None))
            .unwrap()
            .replace("[ -r \"$p\" ] || fail unreadable\n", "fail unreadable\n");
        let out = run(&shell, &tree, &[], script.as_bytes());
        let found = super::super::decode_find_read("test", &nonce, &specs, &first, &out)
            .unwrap_or_else(|e| panic!("{}: {e}", shell.name));
        let (_, read) = found.read.expect("the one match");
        assert!(
            matches!(read, Err(HostError::Io { .. })),
            "{}: {read:?}",
            shell.name
        );
    }
}

#[test]
fn find_and_read_by_walking_reads_the_one_match_as_a_listing_and_a_read_would_in_every_shell() {
    let tree = tree();
    let specs = [tree.spec()];
    let tail = FirstRead::Tail {
        head: 4096,
        back: 65536,
        ahead: 65536,
    };
    let local = LocalHost::new("local");
    let all = shells(tree.path());
    // One match (a big file, a hostile name); several; none; one that only an FX line carries.
    for (id, reads) in [
        ("big", true),
        ("lead", true),
        ("agent", true),
        ("a.json", true),
        ("jsonl", false),
        ("nothing", false),
    ] {
        let expected = block_on(local.find_and_read(&specs, id, &tail, None, &[])).unwrap();
        assert_eq!(expected.read.is_some(), reads, "{id}");
        for shell in &all {
            let nonce = new_nonce();
            let out = run(
                shell,
                &tree,
                &[],
                &find_read_by_walk(&nonce, &specs, id, &tail),
            );
            let got = super::super::decode_find_read("test", &nonce, &specs, &tail, &out)
                .unwrap_or_else(|e| panic!("{} {id}: {e}\n{}", shell.name, out.escape_ascii()));
            assert_eq!(got.listing, expected.listing, "{} {id}", shell.name);
            match (&got.read, &expected.read) {
                (Some((fa, Ok(a))), Some((fb, Ok(b)))) => {
                    assert_eq!(fa, fb, "{} {id}", shell.name);
                    assert!(a == b, "{} {id}: reads differ", shell.name);
                }
                (None, None) => {}
                (a, b) => panic!("{} {id}: {a:?} vs {b:?}", shell.name),
            }
        }
    }
    // A name that only an FX line can carry is listed and not read in one go.
    let nonce = new_nonce();
    let shell = &all[0];
    let out = run(
        shell,
        &tree,
        &[],
        &find_read_by_walk(&nonce, &specs, "line", &tail),
    );
    let got = super::super::decode_find_read("test", &nonce, &specs, &tail, &out).unwrap();
    assert_eq!(got.listing.files.len(), 1);
    assert!(got.read.is_none());
}

/// What `check` asks of a listed session: its head and the window at its end, cut at the listed
/// size (for a small session, the whole file, once).
fn check_ranges_of(listed: u64) -> Vec<ByteRange> {
    if listed <= 4096 {
        vec![ByteRange::new(0, listed)]
    } else {
        vec![ByteRange::new(0, 4096), ByteRange::new(0, listed)]
    }
}

/// The reads of a batch of small sessions in two directories (one of them with hostile names)
/// beside the tree's odd names, a file larger than its listed size, a symlink, a missing file
/// and an empty one: each read as `check` reads it.
fn small_sessions(tree: &Tree) -> Vec<(FileRef, Vec<ByteRange>)> {
    let p = tree.home().join("projects");
    let mut rels: Vec<Vec<u8>> = Vec::new();
    for i in 0..40u32 {
        let rel = format!("projects/-many/{i:08x}-0000-4000-8000-000000000000.jsonl");
        let body: Vec<u8> = (0..(i * 97 % 6000))
            .map(|k| b'a' + (k % 26) as u8)
            .collect();
        write(tree.home().join(&rel), &body);
        rels.push(rel.into_bytes());
    }
    for name in ["s p a c e.jsonl", "-x.jsonl", " lead'q.jsonl"] {
        rels.push(format!("projects/{HOSTILE_DIR}/{name}").into_bytes());
    }
    write(
        p.join(HOSTILE_DIR).join("$(touch pwned)\n`x`.jsonl"),
        b"nl\n",
    );
    rels.push(format!("projects/{HOSTILE_DIR}/$(touch pwned)\n`x`.jsonl").into_bytes());
    rels.extend(ODD_NAMES.iter().map(|(rel, _)| rel.to_vec()));
    rels.push(b"projects/-p/new\nline.jsonl".to_vec());
    let mut reads: Vec<(FileRef, Vec<ByteRange>)> = rels
        .iter()
        .map(|rel| {
            let size = fs::metadata(tree.home().join(bytes_path(rel)))
                .unwrap()
                .len();
            (tree.file(rel), check_ranges_of(size))
        })
        .collect();
    // Listed smaller than it is now (it grew): read by its ranges in the same batch.
    reads.push((tree.file(b"projects/-p/big.jsonl"), check_ranges_of(3000)));
    reads.push((tree.file(b"projects/-p/link.jsonl"), check_ranges_of(7)));
    reads.push((tree.file(b"projects/-p/gone.jsonl"), check_ranges_of(7)));
    // Through a directory that is a symlink, out of the root and within it: refused.
    reads.push((
        tree.file(b"projects/escape/secret.jsonl"),
        check_ranges_of(7),
    ));
    reads.push((
        tree.file(b"projects/inner-link/a.jsonl"),
        check_ranges_of(8),
    ));
    write(p.join("-many/empty.jsonl"), b"");
    reads.push((tree.file(b"projects/-many/empty.jsonl"), check_ranges_of(0)));
    reads
}

/// How a read came out, for comparing hosts: the result, or the kind of error.
fn outcome(r: &Result<ReadResult, HostError>) -> String {
    match r {
        Ok(result) => format!("{result:?}"),
        Err(HostError::NotFound { .. }) => "not found".to_string(),
        Err(HostError::PathRefused { .. }) => "refused".to_string(),
        Err(e) => format!("{e}"),
    }
}

fn batch_answers(out: &[u8], nonce: &str, reads: &[(FileRef, Vec<ByteRange>)]) -> Vec<String> {
    super::super::decode_read_batch("test", nonce, reads, out)
        .unwrap_or_else(|e| panic!("{e}\n{}", out.escape_ascii()))
        .iter()
        .map(|answer| match answer {
            super::super::BatchRead::Done(r) => outcome(r),
            super::super::BatchRead::Again => "again".to_string(),
        })
        .collect()
}

#[test]
fn small_files_read_whole_in_one_cat_agree_with_reads_one_by_one_in_every_shell() {
    let tree = tree();
    let reads = small_sessions(&tree);
    let local = LocalHost::new("local");
    let expected: Vec<String> = block_on(local.read_many(&reads))
        .unwrap()
        .iter()
        .map(outcome)
        .collect();
    assert!(expected[0].starts_with("ReadResult"), "{}", expected[0]);
    let big = reads.len() - 6;
    assert!(
        expected[big].contains("size: 10000000"),
        "{}",
        expected[big]
    );
    assert_eq!(
        expected[big + 1..big + 5],
        ["refused", "not found", "refused", "refused"]
    );
    let shells = shells(tree.path());
    for shell in &shells {
        let nonce = new_nonce();
        let out = run(shell, &tree, &[], &read_many_script(&nonce, &reads, None));
        assert_eq!(
            batch_answers(&out, &nonce, &reads),
            expected,
            "{}",
            shell.name
        );
        // The small files of every directory of the root went through one `cat`; the others
        // one by one. zstd compressed them where it is on PATH, else gzip (busybox's applet
        // too).
        let text = out.escape_ascii().to_string();
        assert!(
            text.contains("\\nCAT gz ") || text.contains("\\nCAT zs "),
            "{}: not compressed",
            shell.name
        );
        let cats = text.matches("\\nCAT ").count();
        assert_eq!(cats, 1, "{}: {cats} CAT blocks\n{text}", shell.name);
        let one_by_one = text.matches("\\nFILE ").count();
        assert!(
            one_by_one < 8,
            "{}: {one_by_one} files one by one",
            shell.name
        );
        // The same reads, file by file: the same answers.
        let nonce = new_nonce();
        let script = read_many_script_with(&nonce, &reads, None, false);
        let out = run(shell, &tree, &[], &script);
        assert!(!out.windows(5).any(|w| w == b"\nCAT "), "{}", shell.name);
        assert_eq!(
            batch_answers(&out, &nonce, &reads),
            expected,
            "{}",
            shell.name
        );
    }
    // Every encoder carries a CAT block (uuencode: busybox's applet).
    for shell in &shells {
        let encoders: &[Encoder] = if shell.clean_env.is_some() {
            &[Encoder::Uuencode, Encoder::Od]
        } else if shell.name == "dash" {
            &[Encoder::Openssl, Encoder::Od, Encoder::Zstd]
        } else {
            &[]
        };
        for &encoder in encoders {
            if encoder == Encoder::Openssl && on_path("openssl").is_none() {
                missing("openssl");
                continue;
            }
            if encoder == Encoder::Zstd && on_path("zstd").is_none() {
                missing("zstd");
                continue;
            }
            let nonce = new_nonce();
            let out = run(
                shell,
                &tree,
                &[],
                &read_many_script(&nonce, &reads, Some(encoder)),
            );
            assert_eq!(batch_answers(&out, &nonce, &reads), expected, "{encoder:?}");
        }
    }
}

#[test]
fn without_gzip_batches_and_listings_fall_back_to_plain_encoders() {
    let tree = tree();
    let reads = small_sessions(&tree);
    let specs = [tree.spec()];
    // A `gzip` and a `zstd` that are there but do not work (stubs, as on a host that lacks
    // them), and a `zstd` alone that does not.
    use std::os::unix::fs::PermissionsExt;
    let stub = |dir: &str, tool: &str| {
        let bin = tree.path().join(dir);
        write(
            bin.join(tool),
            format!("#!/bin/sh\necho '{tool}: not found' >&2\nexit 127\n").as_bytes(),
        );
        fs::set_permissions(bin.join(tool), fs::Permissions::from_mode(0o755)).unwrap();
        format!("{}:{}", bin.display(), std::env::var("PATH").unwrap())
    };
    let no_zstd = stub("no-zstd", "zstd");
    stub("no-gzip", "zstd");
    let no_gzip = stub("no-gzip", "gzip");
    let without = [("PATH", Path::new(&no_gzip))];
    let gzip_only = [("PATH", Path::new(&no_zstd))];
    let zstd_here = on_path("zstd").is_some();
    for shell in shells(tree.path())
        .into_iter()
        .filter(|s| s.clean_env.is_none())
    {
        let mut answers = Vec::new();
        let mut listings = Vec::new();
        for envs in [&[][..], &gzip_only[..], &without[..]] {
            let nonce = new_nonce();
            let out = run(&shell, &tree, envs, &read_many_script(&nonce, &reads, None));
            let text = out.escape_ascii().to_string();
            let compressed = envs != &without[..];
            let zstd = envs.is_empty() && zstd_here;
            assert_eq!(text.contains("\\nCAT zs "), zstd, "{}", shell.name);
            assert_eq!(
                text.contains("\\nCAT gz "),
                compressed && !zstd,
                "{}",
                shell.name
            );
            assert_eq!(text.contains("\\nCAT b64 "), !compressed, "{}", shell.name);
            answers.push(batch_answers(&out, &nonce, &reads));
            let nonce = new_nonce();
            let out = run(&shell, &tree, envs, &list_script(&nonce, &specs));
            assert_eq!(
                out.windows(4).any(|w| w == b"\nGZ\n"),
                compressed,
                "{}",
                shell.name
            );
            listings.push(
                super::super::decode_list("test", &nonce, &specs, &out)
                    .unwrap_or_else(|e| panic!("{}: {e}", shell.name)),
            );
        }
        assert_eq!(answers[0], answers[1], "{}", shell.name);
        assert_eq!(answers[0], answers[2], "{}", shell.name);
        assert_eq!(listings[0], listings[1], "{}", shell.name);
        assert_eq!(listings[0], listings[2], "{}", shell.name);
        assert_eq!(listings[0], local_listing(&specs), "{}", shell.name);
    }
}

#[test]
fn a_compressed_batch_script_runs_as_the_plain_one_from_every_shell() {
    let tree = tree();
    let reads = small_sessions(&tree);
    // A comment of incompressible bytes after the script keeps it over the command's bound:
    // the stdin form.
    let mut noise = Vec::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..120_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        noise.push(b'a' + (x % 26) as u8);
    }
    for shell in shells(tree.path()) {
        let nonce = new_nonce();
        let script = read_many_script(&nonce, &reads, None);
        let plain = batch_answers(&run(&shell, &tree, &[], &script), &nonce, &reads);
        let long = [&script[..], b"# ", &noise, b"\n"].concat();
        // As a kept shell runs it (`ssh/kept_shell.rs`): a line on its stdin, in a subshell.
        let kept = [&b"(\n"[..], &compressed_pipe(&script), b"\n)\n"].concat();
        let out = run(&shell, &tree, &[], &kept);
        assert_eq!(
            batch_answers(&out, &nonce, &reads),
            plain,
            "{} (kept)",
            shell.name
        );
        for (script, inline) in [(script.clone(), true), (long, false)] {
            let invocation = compressed_invocation(&script);
            assert_eq!(invocation.stdin.is_empty(), inline, "{}", shell.name);
            assert!(invocation.exec.len() <= 64 * 1024);
            // As sshd runs a command: the login shell's `-c`.
            let mut login = shell.clone();
            login.argv.retain(|a| a != "-s");
            login.argv.push("-c".into());
            login.argv.push(invocation.exec.clone());
            let out = run(&login, &tree, &[], &invocation.stdin);
            assert_eq!(
                batch_answers(&out, &nonce, &reads),
                plain,
                "{} (inline: {inline})",
                shell.name
            );
        }
    }
}

#[test]
fn a_file_that_grows_under_the_cat_is_read_again_never_wrongly() {
    let tree = tree();
    let mut reads = small_sessions(&tree);
    // A `stat` that appends to the 5th session of `-many` each time it runs: the file grows
    // between the sizes the batch reads and its `cat`, and again before the second `stat`.
    let grows = tree
        .home()
        .join("projects/-many/00000004-0000-4000-8000-000000000000.jsonl");
    let bin = tree.path().join("growing-stat");
    let real = on_path("stat").expect("stat");
    write(
        bin.join("stat"),
        format!(
            "#!/bin/sh\n'{}' \"$@\"; rc=$?\nprintf 'grown\\n' >> '{}'\nexit $rc\n",
            real.display(),
            grows.display()
        )
        .as_bytes(),
    );
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(bin.join("stat"), fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let index = |rel: &str| {
        reads
            .iter()
            .position(|(f, _)| f.rel == rel.as_bytes())
            .unwrap()
    };
    let grown = index("projects/-many/00000004-0000-4000-8000-000000000000.jsonl");
    // Its cap leaves room for the growth before the first `stat` (the probe's): it is read
    // whole, and grows again under the `cat`.
    reads[grown].1 = vec![ByteRange::new(0, 100_000)];
    for shell in shells(tree.path())
        .into_iter()
        .filter(|s| s.clean_env.is_none())
    {
        let before = fs::read(&grows).unwrap();
        let nonce = new_nonce();
        let out = run(
            &shell,
            &tree,
            &[("PATH", Path::new(&path))],
            &read_many_script(&nonce, &reads, None),
        );
        let answers = super::super::decode_read_batch("test", &nonce, &reads, &out)
            .unwrap_or_else(|e| panic!("{}: {e}", shell.name));
        // The files before it in the `cat` (of every directory of the root) are answered and
        // right; it and the ones after it are to be read again; the files read one by one are
        // not concerned.
        let cat_order: Vec<usize> = {
            let text = String::from_utf8_lossy(&out);
            let line = text.lines().find(|l| l.starts_with("CAT ")).unwrap();
            line.split(' ')
                .skip(2)
                .map(|w| w.parse().unwrap())
                .collect()
        };
        // A file stat'ed with the others but larger than its cap is read by its ranges.
        let in_cat = |i: usize| {
            let alone = format!("\nFILE {i}\n");
            let alone = out.windows(alone.len()).any(|w| w == alone.as_bytes());
            cat_order.iter().position(|&j| j == i).filter(|_| !alone)
        };
        let grown_at = in_cat(grown).unwrap();
        for (i, answer) in answers.iter().enumerate() {
            match answer {
                super::super::BatchRead::Again => {
                    assert!(
                        in_cat(i).is_some_and(|k| k >= grown_at),
                        "{}: {i} again",
                        shell.name
                    );
                }
                super::super::BatchRead::Done(Ok(result)) => {
                    assert!(
                        in_cat(i).is_none_or(|k| k < grown_at),
                        "{}: {i} answered\n{}",
                        shell.name,
                        out.escape_ascii()
                    );
                    let rel = &reads[i].0.rel;
                    let now = fs::read(tree.home().join(bytes_path(rel))).unwrap();
                    let data = &now[..result.size as usize];
                    assert_eq!(
                        result.chunks,
                        expected_chunks(data, &reads[i].1),
                        "{}: {i}",
                        shell.name
                    );
                }
                super::super::BatchRead::Done(Err(_)) => {}
            }
        }
        assert!(matches!(answers[grown], super::super::BatchRead::Again));
        // Read again by its ranges, it is what the file holds.
        let nonce = new_nonce();
        let script = read_many_script_with(&nonce, &reads[grown..grown + 1], None, false);
        let out = run(&shell, &tree, &[("PATH", Path::new(&path))], &script);
        let again = super::super::decode_read_batch("test", &nonce, &reads[grown..grown + 1], &out)
            .unwrap();
        let super::super::BatchRead::Done(Ok(result)) = &again[0] else {
            panic!("{}: {again:?}", shell.name);
        };
        let now = fs::read(&grows).unwrap();
        assert!(now.len() > before.len());
        assert!(result.size as usize >= before.len());
        assert_eq!(
            result.chunks,
            expected_chunks(&now[..result.size as usize], &reads[grown].1)
        );
    }
}

#[test]
fn the_encoder_a_reply_named_is_found_and_a_forced_one_skips_uname() {
    let reply = b"motd\n\nabc:BEGIN Linux\nMETA size=40 enc=ossl\nDATA 0\n";
    assert_eq!(encoder_named_in(reply), Some(Encoder::Openssl));
    assert_eq!(
        encoder_named_in(b"\nMETA size=1 enc=hex\n"),
        Some(Encoder::Od)
    );
    assert_eq!(encoder_named_in(b"\nMETA size=1 enc=zip\n"), None);
    assert_eq!(encoder_named_in(b"\nERR noroot 2f\n"), None);
    let file = FileRef {
        harness: crate::test_support::harness("claude"),
        root: b"/r".to_vec(),
        rel: b"a.jsonl".to_vec(),
    };
    let ranges = [ByteRange::new(0, 10)];
    let probed = String::from_utf8(read_script_with("n", &file, &ranges, None)).unwrap();
    let forced =
        String::from_utf8(read_script_with("n", &file, &ranges, Some(Encoder::Base64))).unwrap();
    assert!(probed.contains("uname") && probed.contains("base64 2>/dev/null)\" = aGk="));
    let after_unset = forced.split_once("2>/dev/null\n").unwrap().1;
    assert!(!after_unset.contains("$(uname"), "{forced}");
    assert!(forced.contains(":BEGIN -"));
}

/// A directory of links to every program of `PATH` but perl's: a host without perl.
fn path_without_perl(tmp: &Path) -> PathBuf {
    let dir = tmp.join("no-perl-bin");
    fs::create_dir_all(&dir).unwrap();
    let path = std::env::var_os("PATH").unwrap();
    for from in std::env::split_paths(&path) {
        let Ok(entries) = fs::read_dir(&from) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let link = dir.join(&name);
            if name.as_bytes().starts_with(b"perl") || link.symlink_metadata().is_ok() {
                continue;
            }
            symlink(entry.path(), link).unwrap();
        }
    }
    dir
}

#[test]
fn scattered_ranges_read_by_one_perl_equal_the_dd_loop_in_every_shell() {
    let tree = tree();
    let Some(perl) = on_path("perl") else {
        missing("perl");
        return;
    };
    let size = tree.big.len() as u64;
    // A database's pages, scattered and out of order, in reads of at most MAX_RANGES ranges:
    // the last of one reaching past the end of the file, of another beginning past it, and
    // one before the last of a third reaching past it (range by range, `dd`).
    let pages: Vec<ByteRange> = (0..40u64)
        .map(|i| ByteRange::new((i * 7919) % (size / 4096) * 4096, 4096 * (1 + i % 3)))
        .collect();
    let file = tree.file(b"projects/-p/big.jsonl");
    let mut reads: Vec<(FileRef, Vec<ByteRange>)> = pages
        .chunks(15)
        .map(|chunk| (file.clone(), chunk.to_vec()))
        .collect();
    reads[0].1.push(ByteRange::new(size - 100, 4096));
    reads[1].1.push(ByteRange::new(size + 4096, 4096));
    reads[2].1.insert(0, ByteRange::new(size - 10, 4096));
    // And one read of as many ranges as a call takes (a walk's level of scattered pages).
    let many = (0..MAX_RANGES as u64)
        .map(|i| ByteRange::new((i * 7919) % (size / 512) * 512, 512))
        .collect();
    reads.push((file.clone(), many));
    assert!(reads.iter().all(|(_, r)| r.len() <= MAX_RANGES));
    let expected: Vec<String> = reads
        .iter()
        .map(|(_, ranges)| {
            outcome(&Ok(ReadResult {
                size,
                chunks: expected_chunks(&tree.big, ranges),
            }))
        })
        .collect();
    // Counts the calls of perl: a wrapper of the real one, first on PATH.
    let counted = tree.path().join("counted-perl");
    let calls = tree.path().join("perl-calls");
    write(
        counted.join("perl"),
        format!(
            "#!/bin/sh\necho x >>'{}'\nexec '{}' \"$@\"\n",
            calls.display(),
            perl.display()
        )
        .as_bytes(),
    );
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(counted.join("perl"), fs::Permissions::from_mode(0o755)).unwrap();
    let with_perl = format!("{}:{}", counted.display(), std::env::var("PATH").unwrap());
    let without_perl = path_without_perl(tree.path());
    for shell in shells(tree.path()) {
        let envs: Vec<(&str, &Path)> = match &shell.clean_env {
            // busybox applets only: no perl, the `dd` loop.
            Some(_) => vec![],
            None => vec![("PATH", Path::new(&with_perl))],
        };
        for (envs, perl_calls) in [
            (
                envs,
                if shell.clean_env.is_some() {
                    0
                } else {
                    reads.len() - 1
                },
            ),
            (vec![("PATH", without_perl.as_path())], 0),
        ] {
            let _ = fs::remove_file(&calls);
            let nonce = new_nonce();
            let out = run(
                &shell,
                &tree,
                &envs,
                &read_many_script(&nonce, &reads, None),
            );
            assert_eq!(
                batch_answers(&out, &nonce, &reads),
                expected,
                "{} (perl called {perl_calls} times)",
                shell.name
            );
            let text = String::from_utf8_lossy(&out);
            assert_eq!(text.matches("\nDATA 0-").count(), reads.len() - 1);
            let called = fs::read_to_string(&calls).map_or(0, |c| c.lines().count());
            assert_eq!(
                called, perl_calls,
                "{}: perl called {called} times",
                shell.name
            );
        }
    }
}

/// Writes an executable shell script `name` into `dir`.
fn tool(dir: &Path, name: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    write(dir.join(name), body.as_bytes());
    fs::set_permissions(dir.join(name), fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_directory_swapped_for_a_symlink_around_the_stats_of_a_root_is_never_read() {
    let tree = tree();
    let reads = small_sessions(&tree);
    let local = LocalHost::new("local");
    let expected: Vec<String> = block_on(local.read_many(&reads))
        .unwrap()
        .iter()
        .map(outcome)
        .collect();
    // Outside the root, a directory with the same names at the same sizes, other bytes: what
    // `-many` leads to while it is swapped for a symlink.
    let many = tree.home().join("projects/-many");
    let parked = tree.home().join("projects/-many.real");
    let outside = tree.path().join("outside-many");
    for entry in fs::read_dir(&many).unwrap() {
        let entry = entry.unwrap();
        let len = entry.metadata().unwrap().len() as usize;
        write(outside.join(entry.file_name()), &vec![b'Z'; len]);
    }
    let real = on_path("stat").expect("stat");
    let count = tree.path().join("stat-runs");
    let swap = format!(
        "mv '{m}' '{p}' && ln -s '{o}' '{m}'",
        m = many.display(),
        p = parked.display(),
        o = outside.display()
    );
    let back = format!(
        "rm '{m}' && mv '{p}' '{m}'",
        m = many.display(),
        p = parked.display()
    );
    // The batch runs `stat` twice for the root: before its `cat` and after. `early`: the
    // directory is a symlink for the whole of both (the first `stat`, the `cat` and the second
    // lead out alike, and it is back in place for the check after); else from just after the
    // first `stat` (the `cat` and the second lead out).
    let shells: Vec<Shell> = shells(tree.path())
        .into_iter()
        .filter(|s| s.clean_env.is_none())
        .collect();
    for early in [true, false] {
        let bin = tree.path().join(format!("swapping-stat-{early}"));
        let (first_before, first_after) = if early {
            (swap.as_str(), ":")
        } else {
            (":", swap.as_str())
        };
        // Only the root's `stat`s count (their format): a file read by its ranges `stat`s its
        // descriptor too.
        changing_stat(
            &bin,
            &real,
            &count,
            Some("*%f*"),
            first_before,
            first_after,
            &back,
        );
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        for shell in &shells {
            let _ = fs::remove_file(&count);
            let nonce = new_nonce();
            let out = run(
                shell,
                &tree,
                &[("PATH", Path::new(&path))],
                &read_many_script(&nonce, &reads, None),
            );
            // Seen at the first `stat`, the swap leaves no second one to undo it.
            if early && many.is_symlink() {
                fs::remove_file(&many).unwrap();
                fs::rename(&parked, &many).unwrap();
            }
            assert!(many.is_dir() && !many.is_symlink(), "{}", shell.name);
            let answers = batch_answers(&out, &nonce, &reads);
            let text = out.escape_ascii().to_string();
            for (i, (got, want)) in answers.iter().zip(&expected).enumerate() {
                assert!(
                    !got.contains("90, 90, 90"),
                    "{} ({early}): {i} read outside",
                    shell.name
                );
                // Answered from the `cat`: only what the file holds. Read again, or refused
                // (the directory is still a symlink when a read one by one meets it): not
                // answered wrongly.
                if got.starts_with("ReadResult") {
                    assert_eq!(got, want, "{} ({early}): {i}\n{text}", shell.name);
                }
            }
            // Every session of `-many` read whole met the swap: none is answered from the `cat`
            // (the empty one is read by its ranges before any `stat`).
            let swapped: Vec<usize> = (0..reads.len())
                .filter(|&i| reads[i].0.rel.starts_with(b"projects/-many/"))
                .filter(|&i| super::super::whole_file_cap(&reads[i].1).is_some())
                .collect();
            assert!(swapped.len() > 30);
            assert!(
                swapped
                    .iter()
                    .all(|&i| !answers[i].starts_with("ReadResult")),
                "{} ({early}): {answers:?}",
                shell.name
            );
            // The other files are not concerned.
            assert!(
                answers.iter().any(|a| a.starts_with("ReadResult")),
                "{}",
                shell.name
            );
        }
    }
}

#[test]
fn batches_read_whole_with_a_bsd_stat_and_one_by_one_without_any() {
    let tree = tree();
    let reads = small_sessions(&tree);
    let local = LocalHost::new("local");
    let expected: Vec<String> = block_on(local.read_many(&reads))
        .unwrap()
        .iter()
        .map(outcome)
        .collect();
    let real = on_path("stat").expect("stat");
    // BSD's `stat -f FORMAT` (with the one format a batch asks for), and no `-c`.
    let bsd = tree.path().join("bsd-stat");
    tool(
        &bsd,
        "stat",
        &format!(
            "#!/bin/sh\n[ \"$1\" = -f ] || {{ echo 'stat: illegal option' >&2; exit 1; }}\n\
             [ \"$2\" = '%i %z %Xp' ] || exit 1\nshift 2\nexec '{}' -c '%i %s %f' \"$@\"\n",
            real.display()
        ),
    );
    let none = tree.path().join("no-stat");
    tool(
        &none,
        "stat",
        "#!/bin/sh\necho 'stat: not found' >&2\nexit 127\n",
    );
    for shell in shells(tree.path())
        .into_iter()
        .filter(|s| s.clean_env.is_none())
    {
        for (bin, whole) in [(&bsd, true), (&none, false)] {
            let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
            let nonce = new_nonce();
            let out = run(
                &shell,
                &tree,
                &[("PATH", Path::new(&path))],
                &read_many_script(&nonce, &reads, None),
            );
            let text = out.escape_ascii().to_string();
            assert_eq!(text.contains("\\nCAT "), whole, "{}: {text}", shell.name);
            assert_eq!(
                batch_answers(&out, &nonce, &reads),
                expected,
                "{} ({})",
                shell.name,
                bin.display()
            );
        }
    }
}

/// What a first `check` reads along with the listing: at most 64 KiB a file, files of at most
/// 4 KiB in `RF` blocks where `find -printf` answers, blocks of at most 8 MiB, a 32 MiB budget.
const READ_ALONG: ReadAlong = ReadAlong {
    max_file: 64 * 1024,
    small_file: 4096,
    block_cap: 8 << 20,
    budget: 32 << 20,
    ends: None,
};

/// [`READ_ALONG`] in `RD` blocks alone: for what their two `stat`s and their cap (of the
/// files' and the directories' sizes, before the read) must catch.
const READ_ALONG_RD: ReadAlong = ReadAlong {
    small_file: 0,
    ..READ_ALONG
};

/// [`READ_ALONG`] in `RF` blocks alone where `find -printf` answers: every file read along
/// is a small one.
const READ_ALONG_RF: ReadAlong = ReadAlong {
    small_file: READ_ALONG.max_file,
    ..READ_ALONG
};

/// [`READ_ALONG`] with files over 2 KiB read along by their ends: a 100-byte head and a
/// 700-byte tail.
const READ_ENDS_ALONG: ReadAlong = ReadAlong {
    max_file: 2048,
    ends: Some(ReadEnds {
        head: 100,
        tail: 700,
        fit: None,
    }),
    ..READ_ALONG
};

/// Runs the listing that reads along: its nonce and its raw reply.
fn list_reading_reply(
    shell: &Shell,
    tree: &Tree,
    envs: &[(&str, &Path)],
    mode: Option<ListMode>,
    read: ReadAlong,
) -> (String, Vec<u8>) {
    let nonce = new_nonce();
    let out = run(
        shell,
        tree,
        envs,
        &list_reading_script(&nonce, &[tree.spec()], mode, read),
    );
    (nonce, out)
}

/// Decodes the reply of a listing that reads along.
fn decode_along(
    shell: &Shell,
    nonce: &str,
    out: &[u8],
    read: ReadAlong,
) -> super::super::ListReading {
    super::super::decode_list_reading(
        "test",
        nonce,
        &crate::test_support::roots(),
        out,
        Some(read.max_file),
    )
    .unwrap_or_else(|e| panic!("{}: {e}\n{}", shell.name, out.escape_ascii()))
}

/// Runs the listing that reads along and decodes it.
fn list_reading_answer(
    shell: &Shell,
    tree: &Tree,
    envs: &[(&str, &Path)],
    mode: Option<ListMode>,
    read: ReadAlong,
) -> super::super::ListReading {
    let (nonce, out) = list_reading_reply(shell, tree, envs, mode, read);
    decode_along(shell, &nonce, &out, read)
}

/// The read blocks of a listing that reads along, from its raw reply (its GZ block inflated):
/// each one's tag (`RF` or `RD`) and the files its `stat` after the read names, below the
/// root.
fn read_blocks(out: &[u8], nonce: &str) -> Vec<(&'static str, Vec<Vec<u8>>)> {
    let frame = parse_frame("test", nonce, out).unwrap();
    let lines: Vec<&[u8]> = frame.body.split(|&b| b == b'\n').collect();
    // A `ZS` block where `zstd` is on the host's PATH, else a `GZ` block.
    let (tag, end, encoding) = match lines.iter().any(|l| *l == b"ZS") {
        true => (&b"ZS"[..], &b"END-ZS"[..], super::super::Encoding::Zstd),
        false => (&b"GZ"[..], &b"END-GZ"[..], super::super::Encoding::Gzip),
    };
    let gz = lines
        .iter()
        .position(|l| *l == tag)
        .expect("a GZ or ZS block");
    let end = lines.iter().position(|l| *l == end).expect("its end");
    let text = super::super::decode_payload(
        encoding,
        &lines[gz + 1..end],
        clankie_model::limits::MAX_LIST_REPLY_BYTES as u64,
    )
    .unwrap();
    let rest = text
        .strip_prefix(format!("{nonce}:RL\n").as_bytes())
        .expect("a listing that reads along");
    super::super::split_read_along(nonce, rest)
        .blocks
        .iter()
        .map(|block| {
            let tag = match block.before {
                super::super::SizesBefore::Listing => "RF",
                super::super::SizesBefore::FirstStat { .. } => "RD",
            };
            let files = block
                .second
                .split(|&b| b == b'\n')
                .skip(block.dirs as usize)
                .map(|line| {
                    let (_, _, name) = super::super::stat_line(line).unwrap();
                    name.strip_prefix(b"./").unwrap().to_vec()
                })
                .collect();
            (tag, files)
        })
        .collect()
}

/// Runs the listing that reads along and decodes it: the listing (whole), and each file read
/// along by its path (its root checked).
fn list_reading_with(
    shell: &Shell,
    tree: &Tree,
    envs: &[(&str, &Path)],
    mode: Option<ListMode>,
    read: ReadAlong,
) -> (Listing, Vec<(Vec<u8>, ReadResult)>) {
    let answer = list_reading_answer(shell, tree, envs, mode, read);
    let listing = answer
        .listing
        .unwrap_or_else(|| panic!("{} {mode:?}: the listing was cut", shell.name));
    let reads = answer
        .reads
        .into_iter()
        .map(|(file, result)| {
            assert_eq!(file.root, tree.file(b"x").root, "{}", shell.name);
            (file.rel, result)
        })
        .collect();
    (listing, reads)
}

/// The files of `listing` a listing reads along: below a subdir, at most `max_file` bytes, no
/// LF or CR in the path.
fn readable_along(listing: &Listing, max_file: u64) -> Vec<Vec<u8>> {
    listing
        .files
        .iter()
        .filter(|f| f.rel.contains(&b'/') && f.size <= max_file)
        .filter(|f| !f.rel.iter().any(|&b| b == b'\n' || b == b'\r'))
        .map(|f| f.rel.clone())
        .collect()
}

#[test]
fn a_listing_reads_its_small_files_along_as_reads_would_in_every_shell() {
    let tree = tree();
    let _ = small_sessions(&tree);
    let spec = tree.spec();
    let local = local_listing(std::slice::from_ref(&spec));
    let wanted = readable_along(&local, READ_ALONG.max_file);
    assert!(wanted.len() > 45, "{wanted:?}");
    // What the one read block's `stat` sizes add up to: its files and the directories on
    // their way.
    let mut dirs = std::collections::BTreeSet::new();
    for rel in &wanted {
        for (at, &b) in rel.iter().enumerate() {
            if b == b'/' {
                dirs.insert(rel[..at].to_vec());
            }
        }
    }
    let size_of = |rel: &[u8]| {
        fs::symlink_metadata(tree.home().join(bytes_path(rel)))
            .unwrap()
            .len()
    };
    let block_bytes: u64 = wanted.iter().chain(&dirs).map(|rel| size_of(rel)).sum();
    for shell in shells(tree.path()) {
        for mode in [None, Some(ListMode::StatC)] {
            let (listing, reads) = list_reading_with(&shell, &tree, &[], mode, READ_ALONG);
            assert_eq!(listing, local, "{} {mode:?}", shell.name);
            for (rel, result) in &reads {
                let now = fs::read(tree.home().join(bytes_path(rel))).unwrap();
                assert_eq!(result.size, now.len() as u64, "{}", shell.name);
                assert_eq!(result.chunks, vec![now], "{} {mode:?}", shell.name);
            }
            // Every small file below a subdir came, each once; the large one, the symlinks
            // and what lies through them did not.
            let mut got: Vec<Vec<u8>> = reads.iter().map(|(rel, _)| rel.clone()).collect();
            got.sort();
            let mut want = wanted.clone();
            want.sort();
            assert_eq!(got, want, "{} {mode:?}", shell.name);
        }
        // A block cap that the only block is over (by far, by one byte): the block is left
        // out before it is read, the listing is whole.
        for block_cap in [1500, block_bytes - 1] {
            let capped = ReadAlong {
                block_cap,
                ..READ_ALONG_RD
            };
            let (listing, reads) = list_reading_with(&shell, &tree, &[], None, capped);
            assert_eq!(listing, local, "{}", shell.name);
            assert!(reads.is_empty(), "{}: {}", shell.name, reads.len());
        }
        let (_, reads) = list_reading_with(
            &shell,
            &tree,
            &[],
            None,
            ReadAlong {
                block_cap: block_bytes,
                ..READ_ALONG_RD
            },
        );
        assert_eq!(reads.len(), wanted.len(), "{}", shell.name);
        // A budget the reply is cut at before its listing is whole: no listing, no reads (the
        // host lists again).
        for mode in [None, Some(ListMode::StatC)] {
            let cut = ReadAlong {
                budget: 200,
                ..READ_ALONG
            };
            let answer = list_reading_answer(&shell, &tree, &[], mode, cut);
            assert!(answer.listing.is_none(), "{} {mode:?}", shell.name);
            assert!(answer.reads.is_empty(), "{} {mode:?}", shell.name);
        }
    }
}

/// A first `check`'s listing where `find -printf` answers walks each root once: one `find`
/// of its files lists and reads them (`find`'s other runs, its probe and the size of a name
/// holding a newline, walk nothing).
/// Its BEGIN line costs no `uname` where the shell says Linux or nothing, while a plain
/// listing (`hosts --check` shows it) still names the system.
#[test]
fn a_listing_that_reads_along_walks_once_and_runs_no_uname_in_every_shell() {
    let tree = tree();
    let _ = small_sessions(&tree);
    let real = on_path("find").expect("find");
    let count = tree.path().join("find-walks");
    let bin = tree.path().join("counting-find");
    tool(
        &bin,
        "find",
        &format!(
            "#!/bin/sh\ncase \" $* \" in *\" -type f \"*) echo walk >> '{}' ;; esac\nexec '{}' \"$@\"\n",
            count.display(),
            real.display()
        ),
    );
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let shells: Vec<Shell> = shells(tree.path())
        .into_iter()
        .filter(|s| s.clean_env.is_none())
        .collect();
    for shell in &shells {
        let _ = fs::remove_file(&count);
        let nonce = new_nonce();
        let script = list_reading_script(&nonce, &[tree.spec()], None, READ_ALONG);
        let out = run(shell, &tree, &[("PATH", Path::new(&path))], &script);
        let runs = fs::read_to_string(&count).unwrap_or_default();
        assert_eq!(runs.lines().count(), 1, "{}: one walk", shell.name);
        let answer = super::super::decode_list_reading(
            "test",
            &nonce,
            &crate::test_support::roots(),
            &out,
            Some(READ_ALONG.max_file),
        )
        .unwrap();
        assert!(answer.listing.is_some(), "{}", shell.name);
        assert!(answer.reads.len() > 45, "{}: it read along", shell.name);
        let frame = super::super::parse_frame("test", &nonce, &out).unwrap();
        assert_eq!(frame.uname, "-", "{}", shell.name);
        let nonce = new_nonce();
        let out = run(shell, &tree, &[], &list_script(&nonce, &[tree.spec()]));
        let frame = super::super::parse_frame("test", &nonce, &out).unwrap();
        assert_eq!(frame.uname, "Linux", "{}", shell.name);
    }
}

/// The paths the read-along race tests swap around: the directory `-many` of the small
/// sessions and where it is parked, an outside copy of it (each file the same size, all `Z`),
/// and one of its files, where it is parked and its outside copy.
struct RaceTree {
    many: PathBuf,
    parked: PathBuf,
    outside: PathBuf,
    one: PathBuf,
    one_parked: PathBuf,
    one_outside: PathBuf,
}

fn race_tree(tree: &Tree) -> RaceTree {
    let many = tree.home().join("projects/-many");
    let outside = tree.path().join("outside-many");
    for entry in fs::read_dir(&many).unwrap() {
        let entry = entry.unwrap();
        let len = entry.metadata().unwrap().len() as usize;
        write(outside.join(entry.file_name()), &vec![b'Z'; len]);
    }
    let name = "0000000a-0000-4000-8000-000000000000.jsonl";
    RaceTree {
        parked: tree.home().join("projects/-many.real"),
        one: many.join(name),
        one_parked: tree.path().join("one-parked"),
        one_outside: outside.join(name),
        many,
        outside,
    }
}

#[test]
fn a_file_or_directory_that_changes_around_a_read_along_is_never_answered_wrongly() {
    let tree = tree();
    let _ = small_sessions(&tree);
    let RaceTree {
        many,
        parked,
        outside,
        one,
        one_parked,
        one_outside,
    } = race_tree(&tree);
    let (m, p, o) = (many.display(), parked.display(), outside.display());
    let (f, fp, fo) = (one.display(), one_parked.display(), one_outside.display());
    // (name, before the first `stat`, after it, after the second): the second `stat` of a read
    // block sees what the `cat` read.
    let cases: Vec<(&str, String, String, String)> = vec![
        // The control: the same `stat`, nothing changes, the block is answered.
        ("nothing changed", ":".into(), ":".into(), ":".into()),
        (
            "directory a symlink from before the first stat",
            format!("mv '{m}' '{p}' && ln -s '{o}' '{m}'"),
            ":".into(),
            format!("rm '{m}' && mv '{p}' '{m}'"),
        ),
        (
            "directory a symlink after the first stat",
            ":".into(),
            format!("mv '{m}' '{p}' && ln -s '{o}' '{m}'"),
            format!("rm '{m}' && mv '{p}' '{m}'"),
        ),
        (
            "file a symlink after the first stat",
            ":".into(),
            format!("mv '{f}' '{fp}' && ln -s '{fo}' '{f}'"),
            format!("rm '{f}' && mv '{fp}' '{f}'"),
        ),
        (
            "file grown after the first stat",
            ":".into(),
            format!("printf 'grown\\n' >> '{f}'"),
            ":".into(),
        ),
        (
            "file shrunk after the first stat",
            ":".into(),
            format!("cp '{f}' '{fp}' && : > '{f}'"),
            format!("cat '{fp}' > '{f}' && rm '{fp}'"),
        ),
    ];
    let real = on_path("stat").expect("stat");
    let count = tree.path().join("stat-runs");
    let shells: Vec<Shell> = shells(tree.path())
        .into_iter()
        .filter(|s| s.clean_env.is_none())
        .collect();
    let original = fs::read(&one).unwrap();
    for (k, (name, before, after, back)) in cases.iter().enumerate() {
        let bin = tree.path().join(format!("changing-stat-{k}"));
        // Only the read blocks' `stat`s count (their format); the listing's pass through.
        changing_stat(&bin, &real, &count, Some("*%f*"), before, after, back);
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        for shell in &shells {
            let _ = fs::remove_file(&count);
            fs::write(&one, &original).unwrap();
            let (_, reads) = list_reading_with(
                shell,
                &tree,
                &[("PATH", Path::new(&path))],
                None,
                READ_ALONG_RD,
            );
            assert!(
                many.is_dir() && !many.is_symlink() && one.is_file() && !one.is_symlink(),
                "{name}: {}",
                shell.name
            );
            let runs = fs::read_to_string(&count).unwrap_or_default();
            assert_eq!(runs.trim(), "2", "{name}: {}: one read block", shell.name);
            if k == 0 {
                assert!(reads.len() > 45, "{name}: {}: {}", shell.name, reads.len());
                for (rel, result) in &reads {
                    let now = fs::read(tree.home().join(bytes_path(rel))).unwrap();
                    assert_eq!(result.chunks, vec![now], "{}", shell.name);
                }
                continue;
            }
            // The one block met the change: nothing of it is answered.
            assert!(
                reads.is_empty(),
                "{name}: {}: {:?}",
                shell.name,
                reads
                    .iter()
                    .map(|(r, _)| r.escape_ascii().to_string())
                    .collect::<Vec<_>>()
            );
        }
    }
    fs::write(&one, &original).unwrap();
}

/// A `stat` in `bin` that counts its runs in `count` (those whose format matches `format`,
/// when given; the others run the real one untouched) and changes the tree around the real
/// `stat` (`real`): `before` and `after` the first counted run, `back` after the second. A
/// script that runs `stat` before and after its read sees a change between the two.
fn changing_stat(
    bin: &Path,
    real: &Path,
    count: &Path,
    format: Option<&str>,
    before: &str,
    after: &str,
    back: &str,
) {
    let pass = match format {
        Some(pattern) => format!(
            "case $2 in {pattern}) ;; *) exec '{}' \"$@\" ;; esac\n",
            real.display()
        ),
        None => String::new(),
    };
    tool(
        bin,
        "stat",
        &format!(
            "#!/bin/sh\n{pass}n=$(cat '{c}' 2>/dev/null); n=$((n + 1)); echo $n > '{c}'\n\
             [ $n = 1 ] && {{ {before}; }}\n\
             '{r}' \"$@\"; rc=$?\n\
             [ $n = 1 ] && {{ {after}; }}\n\
             [ $n = 2 ] && {{ {back}; }}\n\
             exit $rc\n",
            c = count.display(),
            r = real.display(),
        ),
    );
}

#[test]
fn small_files_are_read_in_rf_blocks_and_larger_ones_in_rd_blocks_all_whole_in_every_shell() {
    let tree = tree();
    let _ = small_sessions(&tree);
    // Beside the sessions of up to 5.7 KiB, files of up to 64 KiB below a deeper subdir, at
    // the edges of each kind of block (4096 and 4097 bytes; 64 KiB, and one more byte, which
    // is not read along).
    for (i, size) in [
        1,
        3000,
        4096,
        4097,
        10 << 10,
        40 << 10,
        64 << 10,
        (64 << 10) + 1,
    ]
    .into_iter()
    .enumerate()
    {
        let body: Vec<u8> = (0..size).map(|k| b'0' + ((k * 7 + i) % 10) as u8).collect();
        write(
            tree.home()
                .join(format!("projects/-mixed/subagents/{i}.jsonl")),
            &body,
        );
    }
    let spec = tree.spec();
    let local = local_listing(std::slice::from_ref(&spec));
    let mut wanted = readable_along(&local, READ_ALONG.max_file);
    wanted.sort();
    let size_of = |rel: &[u8]| {
        fs::symlink_metadata(tree.home().join(bytes_path(rel)))
            .unwrap()
            .len()
    };
    let small = wanted
        .iter()
        .filter(|rel| size_of(rel) <= READ_ALONG.small_file)
        .count();
    assert!(
        small > 40 && wanted.len() - small >= 4,
        "{small} of {}",
        wanted.len()
    );
    let shells: Vec<Shell> = shells(tree.path())
        .into_iter()
        .filter(|s| s.clean_env.is_none())
        .collect();
    for shell in &shells {
        let (nonce, out) = list_reading_reply(shell, &tree, &[], None, READ_ALONG);
        assert_eq!(mode_of(&out, &nonce), "gnu", "{}", shell.name);
        let answer = decode_along(shell, &nonce, &out, READ_ALONG);
        assert_eq!(answer.listing.as_ref(), Some(&local), "{}", shell.name);
        let mut got = Vec::new();
        for (file, result) in &answer.reads {
            let now = fs::read(tree.home().join(bytes_path(&file.rel))).unwrap();
            assert_eq!(result.chunks, vec![now], "{}", shell.name);
            got.push(file.rel.clone());
        }
        got.sort();
        assert_eq!(got, wanted, "{}", shell.name);
        // Both kinds of block came, each with its own files.
        let blocks = read_blocks(&out, &nonce);
        for tag in ["RF", "RD"] {
            assert!(
                blocks.iter().any(|(t, _)| *t == tag),
                "{}: no {tag} block",
                shell.name
            );
        }
        for (tag, files) in &blocks {
            for rel in files {
                let is_small = size_of(rel) <= READ_ALONG.small_file;
                assert_eq!(
                    is_small,
                    *tag == "RF",
                    "{}: {}",
                    shell.name,
                    rel.escape_ascii()
                );
            }
        }
    }
}

#[test]
fn a_file_or_directory_that_changes_around_an_rf_block_is_never_answered_wrongly() {
    let tree = tree();
    let _ = small_sessions(&tree);
    let RaceTree {
        many,
        parked,
        outside,
        one,
        one_parked,
        one_outside,
    } = race_tree(&tree);
    let original = fs::read(&one).unwrap();
    let same_size = tree.path().join("same-size");
    write(&same_size, &vec![b'R'; original.len()]);
    let (m, p, o) = (many.display(), parked.display(), outside.display());
    let (f, fp, fo) = (one.display(), one_parked.display(), one_outside.display());
    let ss = same_size.display();
    // (name, before the `head` that reads the block's files, after it (before the `stat`),
    // whether the block is answered). `find` listed (and `lstat`ed) the files before either.
    let cases: Vec<(&str, String, String, bool)> = vec![
        ("nothing changed", ":".into(), ":".into(), true),
        (
            "file grown before the read",
            format!("printf 'grown\\n' >> '{f}'"),
            ":".into(),
            false,
        ),
        (
            "file grown after the read",
            ":".into(),
            format!("printf 'grown\\n' >> '{f}'"),
            false,
        ),
        (
            "file shrunk before the read",
            format!(": > '{f}'"),
            ":".into(),
            false,
        ),
        (
            "file shrunk after the read",
            ":".into(),
            format!(": > '{f}'"),
            false,
        ),
        (
            "file a symlink before the read",
            format!("mv '{f}' '{fp}' && ln -s '{fo}' '{f}'"),
            ":".into(),
            false,
        ),
        (
            "file a symlink after the read",
            ":".into(),
            format!("mv '{f}' '{fp}' && ln -s '{fo}' '{f}'"),
            false,
        ),
        (
            "directory a symlink before the read",
            format!("mv '{m}' '{p}' && ln -s '{o}' '{m}'"),
            ":".into(),
            false,
        ),
        (
            "directory a symlink after the read",
            ":".into(),
            format!("mv '{m}' '{p}' && ln -s '{o}' '{m}'"),
            false,
        ),
        // What an `RF` block cannot see (no inode to compare): a file renamed over by another
        // of its size. The bytes it answers are the new file's, whole.
        (
            "file renamed over by one of its size before the read",
            format!("cp '{ss}' '{fp}' && mv '{fp}' '{f}'"),
            ":".into(),
            true,
        ),
    ];
    let restore = || {
        if many.is_symlink() {
            fs::remove_file(&many).unwrap();
            fs::rename(&parked, &many).unwrap();
        }
        if one.is_symlink() {
            fs::remove_file(&one).unwrap();
        }
        let _ = fs::remove_file(&one_parked);
        fs::write(&one, &original).unwrap();
    };
    let real = on_path("head").expect("head");
    let count = tree.path().join("head-runs");
    let shells: Vec<Shell> = shells(tree.path())
        .into_iter()
        .filter(|s| s.clean_env.is_none())
        .collect();
    for (k, (name, before, after, answered)) in cases.iter().enumerate() {
        let bin = tree.path().join(format!("changing-head-{k}"));
        changing_head(&bin, &real, &count, before, after);
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        for shell in &shells {
            let _ = fs::remove_file(&count);
            let (nonce, out) = list_reading_reply(
                shell,
                &tree,
                &[("PATH", Path::new(&path))],
                None,
                READ_ALONG_RF,
            );
            let runs = fs::read_to_string(&count).unwrap_or_default();
            assert_eq!(runs.trim(), "1", "{name}: {}: one read", shell.name);
            let blocks = read_blocks(&out, &nonce);
            assert_eq!(blocks.len(), 1, "{name}: {}", shell.name);
            assert_eq!(blocks[0].0, "RF", "{name}: {}", shell.name);
            let answer = decode_along(shell, &nonce, &out, READ_ALONG_RF);
            assert!(answer.listing.is_some(), "{name}: {}", shell.name);
            if *answered {
                assert!(answer.reads.len() > 45, "{name}: {}", shell.name);
                for (file, result) in &answer.reads {
                    let now = fs::read(tree.home().join(bytes_path(&file.rel))).unwrap();
                    assert_eq!(result.chunks, vec![now], "{name}: {}", shell.name);
                }
            } else {
                // The one block met the change: nothing of it is answered.
                assert!(
                    answer.reads.is_empty(),
                    "{name}: {}: {:?}",
                    shell.name,
                    answer
                        .reads
                        .iter()
                        .map(|(f, _)| f.rel.escape_ascii().to_string())
                        .collect::<Vec<_>>()
                );
            }
            restore();
        }
    }
}

#[test]
fn an_rf_block_over_its_cap_is_cut_and_answers_nothing_in_every_shell() {
    let tree = tree();
    let _ = small_sessions(&tree);
    let spec = tree.spec();
    let local = local_listing(std::slice::from_ref(&spec));
    let wanted = readable_along(&local, READ_ALONG_RF.max_file);
    // What the one block's bytes add up to: its files alone.
    let block_bytes: u64 = wanted
        .iter()
        .map(|rel| {
            fs::symlink_metadata(tree.home().join(bytes_path(rel)))
                .unwrap()
                .len()
        })
        .sum();
    let shells: Vec<Shell> = shells(tree.path())
        .into_iter()
        .filter(|s| s.clean_env.is_none())
        .collect();
    for shell in &shells {
        for (block_cap, answered) in [(1500, 0), (block_bytes - 1, 0), (block_bytes, wanted.len())]
        {
            let read = ReadAlong {
                block_cap,
                ..READ_ALONG_RF
            };
            let (nonce, out) = list_reading_reply(shell, &tree, &[], None, read);
            let blocks = read_blocks(&out, &nonce);
            assert_eq!(blocks.len(), 1, "{} {block_cap}", shell.name);
            assert_eq!(blocks[0].0, "RF", "{} {block_cap}", shell.name);
            let answer = decode_along(shell, &nonce, &out, read);
            assert_eq!(
                answer.listing.as_ref(),
                Some(&local),
                "{} {block_cap}",
                shell.name
            );
            assert_eq!(answer.reads.len(), answered, "{} {block_cap}", shell.name);
        }
    }
}

/// A `head` in `bin` that counts in `count` the runs that send a read block's files (`head
/// -q`; the others run the real one untouched) and changes the tree `before` and `after` the
/// real `head` (`real`) of the first of them.
fn changing_head(bin: &Path, real: &Path, count: &Path, before: &str, after: &str) {
    tool(
        bin,
        "head",
        &format!(
            "#!/bin/sh\ncase $1 in -q) ;; *) exec '{r}' \"$@\" ;; esac\n\
             n=$(cat '{c}' 2>/dev/null); n=$((n + 1)); echo $n > '{c}'\n\
             [ $n = 1 ] && {{ {before}; }}\n\
             '{r}' \"$@\"; rc=$?\n\
             [ $n = 1 ] && {{ {after}; }}\n\
             exit $rc\n",
            c = count.display(),
            r = real.display(),
        ),
    );
}

/// A session's name swapped for a symlink to a file outside the root just after the read's
/// no-follow check (`stat`, or `ls` where `stat` cannot), and back once a `dd` has read: a read
/// by name passes the checks before and after with the outside bytes; through the descriptor
/// held to the checked inode (checked by `/proc/self/fdinfo`, or without its `ino` by `stat -L`,
/// whether or not `stat` takes `-`) it is refused.
#[test]
fn a_file_swapped_for_a_symlink_and_back_around_the_checks_is_never_read() {
    for fdinfo in [true, false] {
        for stat_dash in [false, true] {
            file_swapped_around_the_checks(fdinfo, stat_dash);
        }
    }
}

/// The read script as a host whose `/proc/self/fdinfo` prints no `ino` (Linux before 5.14)
/// runs it: its descriptor is held by `stat -L`.
fn without_fdinfo_ino(script: Vec<u8>) -> Vec<u8> {
    let (from, to) = (&b"ino:) f3i=$v"[..], &b"no-ino:) f3i=$v"[..]);
    let at = script
        .windows(from.len())
        .position(|w| w == from)
        .expect("the fdinfo check");
    [&script[..at], to, &script[at + from.len()..]].concat()
}

fn file_swapped_around_the_checks(fdinfo: bool, stat_dash: bool) {
    let tree = tree();
    let file = tree.file(b"projects/-p/a.jsonl");
    let inside = tree.home().join("projects/-p/a.jsonl");
    let parked = tree.path().join("a-parked");
    let outside = tree.path().join("a-outside");
    write(&outside, b"{\"Z\":1}\n");
    let count = tree.path().join("check-runs");
    let bin = tree.path().join("swapping-check");
    let (f, p, o) = (inside.display(), parked.display(), outside.display());
    // A `stat` that refuses `-` as busybox's does.
    let refuse = if stat_dash {
        ""
    } else {
        "for a do [ \"$a\" = - ] && exit 1; done\n"
    };
    // Whichever of the two runs first is the no-follow check; the swap follows it.
    for name in ["ls", "stat"] {
        tool(
            &bin,
            name,
            &format!(
                "#!/bin/sh\n{refuse}n=$(cat '{c}' 2>/dev/null); n=$((n + 1)); echo $n > '{c}'\n\
                 '{r}' \"$@\"; rc=$?\n\
                 [ $n = 1 ] && {{ mv '{f}' '{p}' && ln -s '{o}' '{f}'; }}\n\
                 exit $rc\n",
                c = count.display(),
                r = on_path(name).expect(name).display(),
            ),
        );
    }
    // Back in place once a `dd` has read, before the checks after the read.
    tool(
        &bin,
        "dd",
        &format!(
            "#!/bin/sh\n'{r}' \"$@\"; rc=$?\n\
             [ -L '{f}' ] && rm '{f}' && mv '{p}' '{f}'\n\
             exit $rc\n",
            r = on_path("dd").expect("dd").display(),
        ),
    );
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let ranges = [ByteRange::new(0, 8)];
    for shell in shells(tree.path())
        .into_iter()
        .filter(|s| s.clean_env.is_none())
    {
        let _ = fs::remove_file(&count);
        let nonce = new_nonce();
        let out = run(
            &shell,
            &tree,
            &[("PATH", Path::new(&path))],
            &if fdinfo {
                read_script(&nonce, &file, &ranges)
            } else {
                without_fdinfo_ino(read_script(&nonce, &file, &ranges))
            },
        );
        if inside.is_symlink() {
            fs::remove_file(&inside).unwrap();
            fs::rename(&parked, &inside).unwrap();
        }
        let runs = fs::read_to_string(&count).unwrap_or_default();
        assert!(
            !runs.trim().is_empty(),
            "{}: the swap never ran",
            shell.name
        );
        // Refused (`ERR raced`): neither the outside bytes nor the inside ones, which the
        // descriptor no longer holds.
        let got = decode_read("t", &nonce, &ranges, &out);
        assert!(
            got.is_err(),
            "{} (fdinfo: {fdinfo}, stat takes `-`: {stat_dash}): {got:?}",
            shell.name
        );
    }
}

/// A tree of projects (aider's layout, `ListSpec::PROJECT_TREE`): the root given as a symlink
/// to it, histories in the root and down to the depth bound, one past it, some in the
/// directories such a walk never enters, one in a hidden project, in hostile and newline
/// names, and behind symlinks out of the root.
fn project_tree(base: &Path) -> (PathBuf, Vec<Vec<u8>>) {
    const H: &str = ".aider.chat.history.md";
    let projects = base.join("projects");
    let listed: Vec<Vec<u8>> = [
        H.to_string(),
        format!("a/{H}"),
        format!("a/b/c/d/{H}"),
        format!(".config/nvim/{H}"),
        format!("{HOSTILE_DIR}/{H}"),
        format!("-x/ lead'q/{H}"),
        format!("new\nline/{H}"),
        format!("car\rriage/{H}"),
        format!("target/{H}"),
    ]
    .into_iter()
    .map(String::into_bytes)
    .collect();
    for rel in &listed {
        write(projects.join(bytes_path(rel)), b"#### hi\n");
    }
    for rel in [
        format!("a/b/c/d/e/{H}"),
        format!(".git/{H}"),
        format!("a/node_modules/pkg/{H}"),
        format!("a/.venv/lib/{H}"),
        format!("a/b/__pycache__/{H}"),
        "a/notes.md".to_string(),
        format!("a/old{H}"),
    ] {
        write(projects.join(rel), b"#### not listed\n");
    }
    write(base.join(format!("outside/{H}")), b"#### outside\n");
    write(base.join(format!("outside/deeper/{H}")), b"#### outside\n");
    symlink(base.join("outside"), projects.join("escape")).unwrap();
    symlink(
        base.join(format!("outside/{H}")),
        projects.join(format!("a/b/{H}")),
    )
    .unwrap();
    fs::create_dir_all(projects.join(format!("dir/{H}"))).unwrap();
    let link = base.join("projects-link");
    symlink(&projects, &link).unwrap();
    let mut listed = listed;
    listed.sort();
    (link, listed)
}

#[test]
fn a_project_tree_lists_alike_in_every_shell_and_mode_within_its_bounds() {
    let tree = tree();
    let (root, want) = project_tree(tree.path());
    let specs = [RootSpec {
        harness: crate::test_support::harness("aider"),
        dir: Some(root.as_os_str().as_bytes().to_vec()),
    }];
    let expected = local_listing(&specs);
    let rels: Vec<Vec<u8>> = expected.files.iter().map(|f| f.rel.clone()).collect();
    assert_eq!(
        rels,
        want,
        "{:#?}",
        rels.iter().map(|r| display_path(r)).collect::<Vec<_>>()
    );
    assert_eq!(
        expected.roots[0].dir,
        fs::canonicalize(&root).unwrap().as_os_str().as_bytes()
    );
    assert!(expected.roots[0].exists);
    for shell in shells(tree.path()) {
        let forced: &[Option<ListMode>] = if shell.clean_env.is_some() {
            &[None, Some(ListMode::LsDate)]
        } else {
            &[None, Some(ListMode::StatC), Some(ListMode::LsDate)]
        };
        for &mode in forced {
            let got = list_with(&shell, &tree, &specs, mode);
            assert_eq!(got, as_listed(&expected, mode), "{} {mode:?}", shell.name);
        }
    }
    assert!(!tree.cwd().join("pwned").exists());
}

/// What a hash of `len` bytes of `file` should say, in `algorithm`: the size and the digest of
/// the bytes as this process reads them; a refused or missing file as a word.
fn expected_hash(file: &FileRef, len: u64, algorithm: crate::digest::Algorithm) -> String {
    let local = block_on(LocalHost::new("local").hash_prefixes(&[(file.clone(), len)]))
        .unwrap()
        .unwrap();
    match &local[0] {
        Ok(hashed) => {
            let path = bytes_path(&[&file.root[..], b"/", &file.rel[..]].concat());
            let bytes = fs::read(path).unwrap();
            let end = (len as usize).min(bytes.len());
            format!("{} {}", hashed.size, algorithm.digest(&bytes[..end]))
        }
        Err(HostError::NotFound { .. }) => "not found".to_string(),
        Err(HostError::PathRefused { .. }) => "refused".to_string(),
        Err(e) => format!("{e}"),
    }
}

fn hash_outcome(r: &Result<crate::Hashed, HostError>) -> String {
    match r {
        Ok(hashed) => format!("{} {}", hashed.size, hashed.digest),
        Err(HostError::NotFound { .. }) => "not found".to_string(),
        Err(HostError::PathRefused { .. }) => "refused".to_string(),
        Err(e) => format!("{e}"),
    }
}

/// Files of the tree to hash: a big one cut at an odd length (64 KiB blocks and a rest), whole
/// small ones, one asked past its end, hostile names, and refused and missing ones.
fn files_to_hash(tree: &Tree) -> Vec<(FileRef, u64)> {
    let mut files = vec![
        (tree.file(b"projects/-p/big.jsonl"), 9_876_543),
        (tree.file(b"projects/-p/big.jsonl"), 65_536),
        (tree.file(b"projects/-p/a.jsonl"), 8),
        (
            tree.file(format!("projects/{HOSTILE_DIR}/ lead'q.jsonl").as_bytes()),
            100,
        ),
        (tree.file(b"projects/-p/new\nline.jsonl"), 3),
        (tree.file(b"projects/-p/a.jsonl"), 0),
        (tree.file(b"projects/-p/link.jsonl"), 7),
        (tree.file(b"projects/../../outside/secret.jsonl"), 7),
        (tree.file(b"projects/-p/gone.jsonl"), 7),
        (tree.file(b"projects/-p/dir.jsonl"), 7),
    ];
    files.extend(ODD_NAMES.iter().map(|(rel, _)| (tree.file(rel), 5)));
    files
}

#[test]
fn hashes_agree_with_the_local_host_in_every_shell() {
    use crate::digest::Algorithm;
    let tree = tree();
    let files = files_to_hash(&tree);
    let expected: Vec<String> = files
        .iter()
        .map(|(file, len)| expected_hash(file, *len, Algorithm::Sha256))
        .collect();
    assert_eq!(
        expected[3],
        expected_hash(&files[3].0, 5, Algorithm::Sha256)
    );
    assert_eq!(expected[6], "refused");
    assert_eq!(expected[8], "not found");
    for shell in shells(tree.path()) {
        let nonce = new_nonce();
        let out = run(&shell, &tree, &[], &hash_many_script(&nonce, &files));
        let got = super::super::decode_hash_many("test", &nonce, &files, &out)
            .unwrap_or_else(|e| panic!("{}: {e}", shell.name))
            .unwrap_or_else(|| panic!("{}: no hash tool", shell.name));
        for hashed in got.iter().flatten() {
            assert_eq!(hashed.algorithm, Algorithm::Sha256, "{}", shell.name);
        }
        let got: Vec<String> = got.iter().map(hash_outcome).collect();
        assert_eq!(got, expected, "{}", shell.name);
    }
}

/// A `PATH` of only these tools (the script needs `ls`; the rest is what is probed): busybox's
/// applets, or this system's own where busybox has none (Debian's has no `cksum`).
fn applets_only(tmp: &Path, name: &str, applets: &[&str]) -> Option<Shell> {
    let Some(busybox) = on_path("busybox") else {
        missing("busybox");
        return None;
    };
    let list = Command::new(&busybox).arg("--list").output().unwrap();
    let has: Vec<String> = String::from_utf8(list.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let dir = tmp.join(name);
    fs::create_dir_all(&dir).unwrap();
    for applet in applets {
        let tool = if has.iter().any(|a| a == applet) {
            busybox.clone()
        } else {
            on_path(applet).unwrap_or_else(|| panic!("neither busybox nor the system has {applet}"))
        };
        symlink(tool, dir.join(applet)).unwrap();
    }
    Some(Shell {
        name: "busybox with a few applets",
        argv: vec![
            busybox.to_string_lossy().into_owned(),
            "sh".into(),
            "-s".into(),
        ],
        clean_env: Some(dir),
    })
}

#[test]
fn the_strongest_hash_tool_there_is_is_used_and_none_is_said() {
    use crate::digest::Algorithm;
    let tree = tree();
    let files = files_to_hash(&tree);
    let cases: [(&str, &[&str], Option<Algorithm>); 5] = [
        (
            "md5",
            &["ls", "head", "md5sum", "cksum"],
            Some(Algorithm::Md5),
        ),
        ("crc", &["ls", "head", "cksum"], Some(Algorithm::Cksum)),
        // No `head -c`: whole blocks and the rest, each cut by `dd`.
        ("dd", &["ls", "dd", "sha256sum"], Some(Algorithm::Sha256)),
        ("dd-crc", &["ls", "dd", "cksum"], Some(Algorithm::Cksum)),
        ("none", &["ls", "head", "dd"], None),
    ];
    for (name, applets, algorithm) in cases {
        let Some(shell) = applets_only(tree.path(), name, applets) else {
            return;
        };
        let nonce = new_nonce();
        let out = run(&shell, &tree, &[], &hash_many_script(&nonce, &files));
        let got = super::super::decode_hash_many("test", &nonce, &files, &out)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let Some(algorithm) = algorithm else {
            assert!(got.is_none(), "{name}: a hash without a tool");
            continue;
        };
        let got = got.unwrap_or_else(|| panic!("{name}: no hash tool found"));
        for hashed in got.iter().flatten() {
            assert_eq!(hashed.algorithm, algorithm, "{name}");
        }
        let expected: Vec<String> = files
            .iter()
            .map(|(file, len)| expected_hash(file, *len, algorithm))
            .collect();
        let got: Vec<String> = got.iter().map(hash_outcome).collect();
        assert_eq!(got, expected, "{name}");
    }
}

/// A first `check`'s listing with `ends`: the files over `max_file` come as their first and
/// last bytes (`RE` blocks after the listing), exactly the file's, in every shell and both
/// modes that read along; the small files still come whole, and a budget that cuts the ends
/// leaves the listing whole.
#[test]
fn a_listing_reads_the_ends_of_its_larger_files_along_in_every_shell() {
    let tree = tree();
    let _ = small_sessions(&tree);
    let spec = tree.spec();
    let local = local_listing(std::slice::from_ref(&spec));
    let read = READ_ENDS_ALONG;
    let small = readable_along(&local, read.max_file);
    let mut larger: Vec<Vec<u8>> = readable_along(&local, u64::MAX)
        .into_iter()
        .filter(|rel| !small.contains(rel))
        .collect();
    larger.sort();
    assert!(larger.len() > 10, "{larger:?}");
    for shell in shells(tree.path()) {
        for mode in [None, Some(ListMode::StatC)] {
            let answer = list_reading_answer(&shell, &tree, &[], mode, read);
            assert_eq!(
                answer.listing.as_ref(),
                Some(&local),
                "{} {mode:?}",
                shell.name
            );
            assert_eq!(answer.reads.len(), small.len(), "{} {mode:?}", shell.name);
            let mut got = Vec::new();
            for (file, ends) in &answer.ends {
                let now = fs::read(tree.home().join(bytes_path(&file.rel))).unwrap();
                let label = format!("{} {mode:?} {}", shell.name, file.rel.escape_ascii());
                assert_eq!(ends.size, now.len() as u64, "{label}");
                assert_eq!(ends.head, now[..100], "{label}");
                assert_eq!(ends.tail, now[now.len() - 700..], "{label}");
                got.push(file.rel.clone());
            }
            got.sort();
            assert_eq!(got, larger, "{} {mode:?}", shell.name);
        }
        // A budget that the listing fits in and the ends do not (the smallest such, found by
        // growing it 4 KiB at a time): the listing is whole, and what ends came are the
        // files' own.
        let cut = (1..16)
            .map(|step| {
                let cut = ReadAlong {
                    budget: step << 12,
                    ..read
                };
                list_reading_answer(&shell, &tree, &[], None, cut)
            })
            .find(|answer| answer.listing.is_some())
            .unwrap_or_else(|| panic!("{}: no budget under 64 KiB holds the listing", shell.name));
        assert_eq!(cut.listing.as_ref(), Some(&local), "{}", shell.name);
        assert!(cut.ends.len() < larger.len(), "{}", shell.name);
        for (file, ends) in &cut.ends {
            let now = fs::read(tree.home().join(bytes_path(&file.rel))).unwrap();
            assert_eq!(ends.tail, now[now.len() - 700..], "{}", shell.name);
        }
    }
}

/// A first `check`'s listing with a [`TailFit`]: each larger file's tail is the smallest of
/// the ladder (512, 768, 1024, 1536, 2048, 3072, … here) that holds its last line and the
/// newline before it, and the line before that too when the last is short; a file whose
/// lines need more than the fit's `max` sends the plain tail, as every file does where `awk`
/// does not answer. In every shell, names of every kind among the files.
#[test]
fn a_listing_sizes_each_larger_files_tail_to_its_last_lines_in_every_shell() {
    let tree = tree();
    let line = |len: usize, fill: u8| {
        let mut line = vec![fill; len];
        line.push(b'\n');
        line
    };
    // Well over `max_file` before the lines that size the tail.
    let before: Vec<u8> = (0..30).flat_map(|_| line(99, b'o')).collect();
    let utf8_line = {
        let mut l = "é".repeat(500).into_bytes();
        l.push(b'\n');
        l
    };
    let cases: [(String, Vec<u8>, u64); 7] = [
        // A short last line: the line before it too (300 + 100 + 3 bytes).
        (
            "-fit/short.jsonl".into(),
            [line(300, b'a'), line(100, b'b')].concat(),
            512,
        ),
        ("-fit/kib.jsonl".into(), line(1000, b'c'), 1024),
        ("-fit/three.jsonl".into(), line(3000, b'd'), 3072),
        // Over the fit's `max`: the plain tail.
        ("-fit/long.jsonl".into(), line(9000, b'e'), 700),
        // A line being written (no newline yet) after a long one: both.
        (
            "-fit/open.jsonl".into(),
            [line(2000, b'f'), vec![b'g'; 50]].concat(),
            3072,
        ),
        // Bytes, not characters: 1,000 bytes of `é`.
        ("-fit/utf8.jsonl".into(), utf8_line, 1024),
        (format!("{HOSTILE_DIR}/-fit q'.jsonl"), line(600, b'h'), 768),
    ];
    for (rel, end, _) in &cases {
        write(
            tree.home().join("projects").join(rel),
            &[&before[..], end].concat(),
        );
    }
    let read = ReadAlong {
        max_file: 2048,
        ends: Some(ReadEnds {
            head: 100,
            tail: 700,
            fit: Some(TailFit {
                min: 512,
                max: 8192,
            }),
        }),
        ..READ_ALONG
    };
    // An `awk` that is there but does not work: every tail the plain one.
    use std::os::unix::fs::PermissionsExt;
    let bin = tree.path().join("no-awk");
    write(bin.join("awk"), b"#!/bin/sh\nexit 127\n");
    fs::set_permissions(bin.join("awk"), fs::Permissions::from_mode(0o755)).unwrap();
    let no_awk = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let without_awk = [("PATH", Path::new(&no_awk))];
    for shell in shells(tree.path()) {
        for envs in [&[][..], &without_awk[..]] {
            if !envs.is_empty() && shell.clean_env.is_some() {
                continue;
            }
            let answer = list_reading_answer(&shell, &tree, envs, None, read);
            for (rel, _, tail) in &cases {
                let rel = format!("projects/{rel}").into_bytes();
                let label = format!("{} {envs:?} {}", shell.name, rel.escape_ascii());
                let (_, ends) = answer
                    .ends
                    .iter()
                    .find(|(f, _)| f.rel == rel)
                    .unwrap_or_else(|| panic!("{label}: no ends"));
                let now = fs::read(tree.home().join(bytes_path(&rel))).unwrap();
                let tail = if envs.is_empty() { *tail } else { 700 } as usize;
                assert_eq!(ends.size, now.len() as u64, "{label}");
                assert_eq!(ends.head, now[..100], "{label}");
                assert_eq!(ends.tail, now[now.len() - tail..], "{label}");
            }
        }
    }
}

/// A first `check`'s listing comes as a `ZS` block where `zstd` answers and as a `GZ` block
/// where only `gzip` does, and both answer the same listing, files and ends.
#[test]
fn a_listing_that_reads_along_is_zstd_where_it_answers_and_gzip_where_only_it_does() {
    let tree = tree();
    let _ = small_sessions(&tree);
    if on_path("zstd").is_none() {
        missing("zstd");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let bin = tree.path().join("no-zstd");
    write(bin.join("zstd"), b"#!/bin/sh\nexit 127\n");
    fs::set_permissions(bin.join("zstd"), fs::Permissions::from_mode(0o755)).unwrap();
    let no_zstd = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let gzip_only = [("PATH", Path::new(&no_zstd))];
    let read = READ_ENDS_ALONG;
    let ends_of = |answer: &super::super::ListReading| {
        let mut ends: Vec<_> = answer
            .ends
            .iter()
            .map(|(f, e)| (f.rel.clone(), e.clone()))
            .collect();
        ends.sort_by(|a, b| a.0.cmp(&b.0));
        ends
    };
    for shell in shells(tree.path())
        .into_iter()
        .filter(|s| s.clean_env.is_none())
    {
        let mut answers = Vec::new();
        for (envs, tag) in [(&[][..], &b"\nZS\n"[..]), (&gzip_only[..], &b"\nGZ\n"[..])] {
            let (nonce, out) = list_reading_reply(&shell, &tree, envs, None, read);
            assert!(
                out.windows(tag.len()).any(|w| w == tag),
                "{} {envs:?}: {}",
                shell.name,
                out.escape_ascii()
            );
            answers.push(decode_along(&shell, &nonce, &out, read));
        }
        let (zstd, gzip) = (&answers[0], &answers[1]);
        assert!(zstd.listing.is_some(), "{}", shell.name);
        assert_eq!(zstd.listing, gzip.listing, "{}", shell.name);
        assert_eq!(zstd.reads.len(), gzip.reads.len(), "{}", shell.name);
        assert!(!zstd.ends.is_empty(), "{}", shell.name);
        assert_eq!(ends_of(zstd), ends_of(gzip), "{}", shell.name);
    }
}
