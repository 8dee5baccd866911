//! Bulk reads over the real sshd, as the first `grep` of a host makes them: sessions of many
//! MiB fetched through the cache, several reads of one file in flight, on a host whose
//! replies come through `zstd`, one with `gzip` only, and one with neither (plain base64);
//! each gives exactly the bytes of the files, and `grep` over SSH counts what it counts on
//! the same files read locally.

use std::os::unix::fs::PermissionsExt;

use clankie_host::{AnyHost, Host, HostConfig};
use clankie_model::{FileEntry, RootSpec};
use clankie_read::cache::{Cache, CacheOptions, DEFAULT_MAX_BYTES};

use crate::common::sshd::{Sshd, sshd_or_skip};
use crate::support::{clankie, code, stderr};

/// A login shell whose PATH is `~/.ck-bulk-bin` only: the host's tools as the test chose them.
const BULK_BIN_SHELL: &str =
    "#!/bin/sh\nPATH=$HOME/.ck-bulk-bin\nexport PATH\nexec /bin/sh \"$@\"\n";

/// A tool that logs each run to `~/NAME.log`, then is the real one (`{real}`).
const LOGGING_TOOL: &str = "#!/bin/sh\necho \"$*\" >> \"$HOME/{name}.log\"\nexec '{real}' \"$@\"\n";

/// Whether `name` (a program of /usr/bin or /bin) compresses or decompresses gzip or zstd:
/// left out of the test's PATH unless the test names it.
fn is_compressor(name: &str) -> bool {
    [
        "gzip", "gunzip", "zcat", "zstd", "unzstd", "pigz", "unpigz", "pzstd",
    ]
    .iter()
    .any(|c| {
        name == *c || name.starts_with(&format!("{c}mt")) || name.starts_with(&format!("{c}cat"))
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// `n` bytes of transcript-like lines whose text varies (so that it compresses as text does,
/// not as one repeated letter), different for each `seed`.
fn lines(seed: u32, n: usize) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "cargo",
        "build",
        "the",
        "error",
        "fn",
        "main",
        "src/lib.rs",
        "tokio",
        "runtime",
        "of",
        "test",
        "failed",
        "at",
        "line",
        "value",
        "expected",
        "found",
        "struct",
        "impl",
        "async",
    ];
    let mut out = Vec::with_capacity(n + 512);
    let mut x = u64::from(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut i = 0u64;
    while out.len() < n {
        let mut text = String::new();
        for _ in 0..40 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            text.push_str(WORDS[(x % WORDS.len() as u64) as usize]);
            text.push(' ');
            if x % 11 == 0 {
                text.push_str(&format!("{:x} ", x >> 20));
            }
        }
        out.extend_from_slice(
            format!(
                "{{\"type\":\"user\",\"uuid\":\"{seed}-{i}\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\"}}}}\n"
            )
            .as_bytes(),
        );
        i += 1;
    }
    out
}

/// A user whose PATH holds the programs of /usr/bin and /bin but the compressors, and the `compressors` named (each logging its runs to
/// `~/<name>.log`). Returns its alias.
fn user_with_tools(sshd: &Sshd, user: &str, compressors: &[&str]) -> String {
    let alias = sshd.add_script_user(user, BULK_BIN_SHELL);
    let bin = sshd.home(user).join(".ck-bulk-bin");
    let _ = std::fs::remove_dir_all(&bin);
    std::fs::create_dir_all(&bin).unwrap();
    // Every program of /bin and /usr/bin but the compressors (the first found of a name).
    for dir in ["/usr/bin", "/bin"] {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name();
            let link = bin.join(&name);
            if is_compressor(&name.to_string_lossy()) || link.symlink_metadata().is_ok() {
                continue;
            }
            std::os::unix::fs::symlink(entry.path(), link).unwrap();
        }
    }
    for name in compressors {
        let real = crate::common::find_tool(name).unwrap_or_else(|| panic!("{name}"));
        let body = LOGGING_TOOL
            .replace("{name}", name)
            .replace("{real}", real.to_str().unwrap());
        let path = sshd.put_file(user, format!(".ck-bulk-bin/{name}"), body.as_bytes());
        std::fs::set_permissions(&path, PermissionsExt::from_mode(0o755)).unwrap();
        let _ = std::fs::remove_file(sshd.home(user).join(format!("{name}.log")));
    }
    alias
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

/// The test sshd, where this machine has `zstd` to give the hosts (`None`, saying why,
/// where either is missing; under `CI=true` that fails the test).
fn sshd_with_zstd() -> Option<&'static Sshd> {
    let sshd = sshd_or_skip()?;
    if crate::common::find_tool("zstd").is_none() {
        crate::common::skip_or_panic("zstd is not installed (.ci/install-deps installs it)");
        return None;
    }
    Some(sshd)
}

/// `user`'s host with only `compressors` among its tools and `sessions` (name, bytes) as its
/// Claude sessions: its ssh alias and the host opened on it.
fn host_holding(
    sshd: &Sshd,
    user: &str,
    compressors: &[&str],
    sessions: &[(String, Vec<u8>)],
) -> (String, AnyHost) {
    let alias = user_with_tools(sshd, user, compressors);
    let _ = std::fs::remove_dir_all(sshd.home(user).join(".claude/projects"));
    for (name, bytes) in sessions {
        sshd.put_file(user, format!(".claude/projects/-bulk/{name}.jsonl"), bytes);
    }
    let host = clankie_host::open(&HostConfig::ssh(&alias), Some(sshd.ssh_config())).unwrap();
    (alias, host)
}

/// A cache of its own in `dir`, fetching without verification windows.
fn cache_in(dir: &std::path::Path) -> Cache {
    Cache::open(CacheOptions {
        dir: Some(dir.join("cache")),
        max_bytes: DEFAULT_MAX_BYTES,
        enabled: true,
        verify: false,
    })
    .unwrap()
}

/// The first `grep` of a host, byte for byte: a 9 MiB session (three reads of one file in
/// one round, in flight together), one of 600 KiB and small ones, fetched through an empty
/// cache, give the files' bytes whichever compressor the host has; the replies came through
/// the one it has; and `grep -c` over SSH counts what it counts on the same files locally.
#[test]
fn a_first_fetch_reads_the_files_exactly_with_zstd_gzip_or_neither() {
    let Some(sshd) = sshd_with_zstd() else { return };
    let sessions: Vec<(String, Vec<u8>)> = [(1, 9 << 20), (2, 600 << 10), (3, 3000), (4, 100)]
        .into_iter()
        .map(|(seed, n)| (format!("s{seed}"), lines(seed, n)))
        .collect();
    for (user, compressors, used) in [
        ("ck_bulk_zstd", &["zstd", "gzip"][..], Some("zstd")),
        ("ck_bulk_gzip", &["gzip"][..], Some("gzip")),
        ("ck_bulk_plain", &[][..], None),
    ] {
        let (alias, host) = host_holding(sshd, user, compressors, &sessions);
        let tmp = tempfile::tempdir().unwrap();
        runtime().block_on(async {
            let cache = cache_in(tmp.path());
            let files = listed(&host).await;
            let fetched = cache.fetch_many(&host, &files).await.unwrap();
            assert_eq!(fetched.len(), sessions.len(), "{user}");
            let mut moved = 0;
            for ((name, want), got) in sessions.iter().zip(&fetched) {
                let got = got
                    .as_ref()
                    .unwrap_or_else(|e| panic!("{user} {name}: {e}"));
                assert!(
                    got.bytes[..] == want[..],
                    "{user} {name}: {} bytes, expected {}",
                    got.bytes.len(),
                    want.len()
                );
                moved += got.moved;
            }
            // Each byte once: no read of a round was asked twice.
            let total: usize = sessions.iter().map(|(_, b)| b.len()).sum();
            assert_eq!(moved, total as u64, "{user}");
        });
        // The batches' replies came through the compressor the host has: `zstd -1` where it
        // answers (gzip then runs for the listing only), `gzip -1` where it alone does.
        let runs = |name: &str| {
            std::fs::read_to_string(sshd.home(user).join(format!("{name}.log"))).unwrap_or_default()
        };
        match used {
            Some("zstd") => assert!(
                runs("zstd").contains("-1 -c -q"),
                "{user}: {}",
                runs("zstd")
            ),
            Some(_) => {
                assert!(
                    runs("gzip").matches("-1 -c").count() >= 3,
                    "{user}: {}",
                    runs("gzip")
                );
            }
            None => {}
        }

        // `grep -c` over SSH (an empty cache) and on the same files here.
        let home = tempfile::tempdir().unwrap();
        let root = sshd.home(user).join(".claude");
        let count = |remote: bool| {
            let mut cmd = clankie(home.path());
            cmd.env("XDG_CACHE_HOME", home.path().join("xdg"));
            if remote {
                cmd.args(["--ssh-config", &sshd.ssh_config().display().to_string()])
                    .args(["grep", "-c", "runtime", alias.as_str()]);
            } else {
                cmd.args(["--root", &format!("claude={}", root.display())])
                    .args(["grep", "-c", "runtime"]);
            }
            let out = cmd.output().unwrap();
            assert_eq!(code(&out), 0, "{user}: {}", stderr(&out));
            let mut counts: Vec<(String, u64)> = String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .map(|l| {
                    let (who, n) = l.rsplit_once(':').unwrap();
                    let session = who.rsplit(':').next().unwrap().to_string();
                    (session, n.parse().unwrap())
                })
                .collect();
            counts.sort();
            counts
        };
        let here = count(false);
        assert_eq!(here.len(), sessions.len(), "{user}: {here:?}");
        assert!(here.iter().all(|(_, n)| *n > 0), "{user}: {here:?}");
        assert_eq!(count(true), here, "{user}");
    }
}

/// A fetch long enough for the connection to time both ways of its batches (four compressed,
/// then four plain, `ssh/bulk.rs`) and keep one: the bytes are exactly the file's whichever
/// way each batch came, and `-v` says which way was kept.
#[test]
fn a_fetch_that_tries_both_ways_reads_the_file_exactly() {
    let Some(sshd) = sshd_with_zstd() else { return };
    let user = "ck_bulk_ways";
    let bytes = lines(7, 48 << 20);
    let sessions = [("ways".to_string(), bytes.clone())];
    let (alias, host) = host_holding(sshd, user, &["zstd", "gzip"], &sessions);
    let tmp = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let cache = cache_in(tmp.path());
        let files = listed(&host).await;
        let fetched = cache.fetch_many(&host, &files).await.unwrap();
        let got = fetched[0].as_ref().unwrap();
        assert!(got.bytes[..] == bytes[..], "{} bytes", got.bytes.len());
        assert_eq!(got.moved, bytes.len() as u64);
    });
    let home = tempfile::tempdir().unwrap();
    let out = clankie(home.path())
        .env("XDG_CACHE_HOME", home.path().join("xdg"))
        .args([
            "-v",
            "--ssh-config",
            &sshd.ssh_config().display().to_string(),
        ])
        .args(["grep", "-c", "runtime", alias.as_str()])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("batched reads go "),
        "{}",
        stderr(&out)
    );
}
