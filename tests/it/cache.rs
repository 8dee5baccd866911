//! The grep cache over the real test sshd, through the library (`clankie_read::cache`): the
//! first fetch moves each byte once, a second with nothing changed moves only the
//! verification windows, an append moves about what was appended, a rewritten file is
//! fetched again (a same-size one whose mtime was set back, by its ctime); `cache ls|clear`
//! show and empty what it kept, under `$XDG_CACHE_HOME`; and `grep --verify` answers as
//! `--no-cache` where the stat and the windows are fooled, on a dash and a busybox login.

use std::path::Path;

use clankie_host::{AnyHost, Host, HostConfig};
use clankie_model::{FileEntry, RootSpec};
use clankie_read::cache::{Cache, CacheOptions, DEFAULT_MAX_BYTES};

use crate::common::sshd::{Sshd, sshd_or_skip};
use crate::support::{clankie, code, ndjson, stderr};

/// This module's own user.
const USER: &str = "ck_cache";
/// Both windows of a cached file: its first 4 KiB and the 4 KiB before its cached end.
const WINDOWS: u64 = 8192;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// `n` bytes of transcript-like lines, different for each `seed`.
fn lines(seed: u32, n: usize) -> Vec<u8> {
    (0u32..)
        .flat_map(|i| {
            format!(
                "{{\"type\":\"user\",\"uuid\":\"{seed}-{i}\",\"message\":{{\"role\":\"user\",\"content\":\"line {i} of {seed} {}\"}}}}\n",
                "y".repeat(120)
            )
            .into_bytes()
        })
        .take(n)
        .collect()
}

/// The user's sessions: `(name, bytes)` written afresh, whatever an earlier run left.
fn user_with(sshd: &Sshd, sessions: &[(&str, Vec<u8>)]) -> AnyHost {
    let alias = sshd.add_user(USER, Path::new("/bin/sh"));
    let _ = std::fs::remove_dir_all(sshd.home(USER).join(".claude/projects"));
    for (name, bytes) in sessions {
        sshd.put_file(USER, format!(".claude/projects/-cache/{name}.jsonl"), bytes);
    }
    clankie_host::open(&HostConfig::ssh(&alias), Some(sshd.ssh_config())).expect("open the host")
}

async fn listed(host: &AnyHost) -> Vec<FileEntry> {
    let claude = clankie_engine::harness::by_name("claude").unwrap();
    let mut files = host
        .list(&[RootSpec::default_for(claude)])
        .await
        .unwrap()
        .files;
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    files
}

/// Fetches every session through a cache in `dir` (a new one each time, as a new run would):
/// whether each one's bytes are `expected`, and the bytes moved in all.
async fn fetch(dir: &Path, host: &AnyHost, expected: &[&[u8]]) -> u64 {
    let cache = Cache::open(CacheOptions {
        dir: Some(dir.to_path_buf()),
        max_bytes: DEFAULT_MAX_BYTES,
        enabled: true,
        verify: false,
    })
    .unwrap();
    let fetched = cache.fetch_many(host, &listed(host).await).await.unwrap();
    assert_eq!(fetched.len(), expected.len());
    let mut moved = 0;
    for (i, (got, want)) in fetched.iter().zip(expected).enumerate() {
        let got = got.as_ref().unwrap();
        assert!(
            &got.bytes[..] == *want,
            "file {i}: {} bytes, expected {}",
            got.bytes.len(),
            want.len()
        );
        moved += got.moved;
    }
    moved
}

#[test]
fn a_search_again_moves_only_what_changed() {
    let Some(sshd) = sshd_or_skip() else { return };
    let a = lines(1, 2 << 20);
    let mut b = lines(2, 3 << 20);
    let c = lines(3, 300 << 10);
    let host = user_with(
        sshd,
        &[("a", a.clone()), ("b", b.clone()), ("c", c.clone())],
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("xdg/clankie-read");
    let total = (a.len() + b.len() + c.len()) as u64;
    runtime().block_on(async {
        // First: each byte once.
        assert_eq!(fetch(&dir, &host, &[&a, &b, &c]).await, total);
        // Nothing changed: the windows, under 1% of the bytes.
        let again = fetch(&dir, &host, &[&a, &b, &c]).await;
        assert_eq!(again, 3 * WINDOWS);
        assert!(again * 100 <= total, "{again} of {total}");
        // 1 MiB appended to one session: that MiB (and the windows).
        let more = lines(4, 1 << 20);
        let path = sshd.home(USER).join(".claude/projects/-cache/b.jsonl");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, &more))
            .unwrap();
        b.extend_from_slice(&more);
        assert_eq!(
            fetch(&dir, &host, &[&a, &b, &c]).await,
            (1 << 20) + 3 * WINDOWS
        );
        // Rewritten in place, same size, a later mtime: fetched whole without checking its
        // windows first (docs/cache.md); never the old bytes.
        let new_c = lines(5, c.len());
        sshd.put_file(USER, ".claude/projects/-cache/c.jsonl", &new_c);
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(10);
        std::fs::File::options()
            .write(true)
            .open(sshd.home(USER).join(".claude/projects/-cache/c.jsonl"))
            .and_then(|f| f.set_modified(later))
            .unwrap();
        assert_eq!(
            fetch(&dir, &host, &[&a, &b, &new_c]).await,
            2 * WINDOWS + new_c.len() as u64
        );
        // Rewritten in the middle (outside both windows) at the same size, its mtime set back
        // (`touch -d`): the ctime, which no user sets back, moved on (a second later at
        // least), so it is fetched whole without checking its windows; never the old bytes.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let mut newer_c = new_c.clone();
        newer_c[150_000..150_010].copy_from_slice(b"REWRITTEN!");
        sshd.put_file(USER, ".claude/projects/-cache/c.jsonl", &newer_c);
        std::fs::File::options()
            .write(true)
            .open(sshd.home(USER).join(".claude/projects/-cache/c.jsonl"))
            .and_then(|f| f.set_modified(later))
            .unwrap();
        assert_eq!(
            fetch(&dir, &host, &[&a, &b, &newer_c]).await,
            2 * WINDOWS + newer_c.len() as u64
        );
        let new_c = newer_c;
        assert_eq!(fetch(&dir, &host, &[&a, &b, &new_c]).await, 3 * WINDOWS);
    });

    // `cache ls` and `clear`, found through $XDG_CACHE_HOME.
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let cli = |args: &[&str], xdg: bool| {
        let mut cmd = clankie(&home);
        if xdg {
            cmd.env("XDG_CACHE_HOME", tmp.path().join("xdg"));
        }
        let out = cmd.args(args).output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        out
    };
    let listed = ndjson(&cli(&["cache", "ls", "--json"], true));
    assert_eq!(listed.len(), 3);
    let home_dir = sshd.home(USER);
    for (line, (name, size)) in listed
        .iter()
        .zip([("a", a.len()), ("b", b.len()), ("c", c.len())])
    {
        assert_eq!(line["type"], "cached");
        assert_eq!(line["host"], "ck-cache");
        assert_eq!(line["harness"], "claude");
        assert_eq!(line["bytes"], size as u64);
        let path = home_dir.join(format!(".claude/projects/-cache/{name}.jsonl"));
        assert_eq!(line["path"], path.to_str().unwrap());
        assert!(line["used"].as_str().unwrap().ends_with('Z'));
    }
    let text = String::from_utf8(cli(&["cache", "ls", "ck-cache"], true).stdout).unwrap();
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(
        text.lines().next().unwrap().starts_with("ck-cache  claude"),
        "{text}"
    );
    assert!(
        text.ends_with(&format!(
            "3 files, {:.1} MiB\n",
            total as f64 / 1048576.0 + 1.0
        )),
        "{text}"
    );
    // Without $XDG_CACHE_HOME: ~/.cache/clankie-read, empty.
    let text = String::from_utf8(cli(&["cache", "ls"], false).stdout).unwrap();
    assert_eq!(text, "0 files, 0 B\n");
    assert!(!home.join(".cache").exists());

    let cleared = ndjson(&cli(&["cache", "clear", "other-host", "--json"], true));
    assert_eq!(
        cleared,
        [serde_json::json!({"type": "cleared", "host": "other-host", "files": 0, "bytes": 0})]
    );
    let text = String::from_utf8(cli(&["cache", "clear", "ck-cache"], true).stdout).unwrap();
    assert!(
        text.starts_with("removed 3 cached files of ck-cache ("),
        "{text}"
    );
    let text = String::from_utf8(
        cli(
            &["cache", "ls", "--cache-dir", dir.to_str().unwrap()],
            false,
        )
        .stdout,
    )
    .unwrap();
    assert_eq!(text, "0 files, 0 B\n");
}

/// One Claude user record.
fn record(uuid: &str, text: &str) -> String {
    serde_json::json!({"type": "user", "uuid": uuid, "timestamp": "2026-11-02T10:00:00Z",
        "message": {"role": "user", "content": text}})
    .to_string()
        + "\n"
}

/// `grep --verify` on a dash and a busybox login: a session rewritten in the middle (outside
/// both windows) at the same size and inode, its mtime set back (`touch -d`), and its cached
/// entry's ctime made the file's new one, as a write within the second of the caching listing
/// leaves it (no user can set a ctime back, so the entry is what is moved): the windows serve
/// the old text, `--verify` answers as `--no-cache` does.
#[test]
fn verify_catches_a_rewrite_that_the_stat_and_the_windows_miss() {
    use std::os::unix::fs::MetadataExt;
    let Some(sshd) = sshd_or_skip() else { return };
    const SESSION: &str = "9e9e0000-0000-4000-8000-00000000fe01";
    for user in ["ck_dash", "ck_busybox"] {
        let base = format!("verify-{}", std::process::id());
        let mut body = String::new();
        for i in 0..120 {
            body += &record(&format!("a{i}"), &"filler before ".repeat(12));
        }
        body += &record("mid", "the marker OLDWORD1 in the middle");
        for i in 0..120 {
            body += &record(&format!("b{i}"), &"filler after ".repeat(12));
        }
        let at = body.find("OLDWORD1").unwrap();
        assert!(
            at > 8192 && body.len() - at > 8192,
            "{at} of {}",
            body.len()
        );
        let remote = sshd.put_file(
            user,
            Path::new(&base).join(format!(".claude/projects/-v/{SESSION}.jsonl")),
            body.as_bytes(),
        );
        let root = format!(
            "claude={}",
            sshd.home(user).join(&base).join(".claude").display()
        );
        let alias = sshd.alias(user);
        let config = sshd.ssh_config().display().to_string();
        let home = tempfile::tempdir().unwrap();
        let cache = home.path().join("xdg");
        let grep = |flags: &[&str], pattern: &str| {
            let out = clankie(home.path())
                .env("XDG_CACHE_HOME", &cache)
                .args([
                    "-v",
                    "--ssh-config",
                    &config,
                    "--root",
                    &root,
                    "grep",
                    "--json",
                ])
                .args(flags)
                .args([pattern, alias.as_str()])
                .output()
                .unwrap();
            assert!(
                !stderr(&out).contains("no hash tool"),
                "{user}: {}",
                stderr(&out)
            );
            out
        };
        let first = grep(&[], "OLDWORD1");
        assert_eq!(code(&first), 0, "{user}: {}", stderr(&first));

        // In place: the same inode and size, the windows untouched, the mtime set back.
        let mtime = std::fs::metadata(&remote).unwrap().modified().unwrap();
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(&remote)
            .unwrap();
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(at as u64)).unwrap();
        std::io::Write::write_all(&mut file, b"NEWWORD1").unwrap();
        file.set_modified(mtime).unwrap();
        drop(file);
        let now = std::fs::metadata(&remote).unwrap();
        // The entry's ctime made the file's: a write within the listing's second.
        let meta_path = std::fs::read_dir(cache.join("clankie-read"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "meta"))
            .unwrap();
        let mut meta: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&meta_path).unwrap()).unwrap();
        assert_eq!(meta["inode"], now.ino(), "{user}");
        assert_eq!(meta["mtime"], now.mtime(), "{user}");
        assert_eq!(meta["size"], body.len() as u64, "{user}");
        meta["ctime"] = now.ctime().into();
        std::fs::write(&meta_path, meta.to_string()).unwrap();

        // The windows alone: the old text, stale (docs/cache.md says when).
        let stale = grep(&[], "OLDWORD1");
        assert_eq!(
            code(&stale),
            0,
            "{user}: the construction no longer fools the windows"
        );
        // Verified: as no cache at all, both for the old text and the new.
        for pattern in ["OLDWORD1", "NEWWORD1"] {
            let verified = grep(&["--verify"], pattern);
            let uncached = grep(&["--no-cache"], pattern);
            assert_eq!(
                (code(&verified), stdout_text(&verified)),
                (code(&uncached), stdout_text(&uncached)),
                "{user}: {pattern}"
            );
        }
        assert_eq!(code(&grep(&["--verify"], "NEWWORD1")), 0, "{user}");
        assert_eq!(code(&grep(&["--verify"], "OLDWORD1")), 1, "{user}");
        // The cache holds the new bytes now: a search without --verify finds them too.
        assert_eq!(code(&grep(&[], "NEWWORD1")), 0, "{user}");
        let _ = std::fs::remove_dir_all(sshd.home(user).join(&base));
    }
}

fn stdout_text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}
