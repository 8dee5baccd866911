//! Batched reads over the real sshd: the small sessions `check` reads whole, many
//! to a `cat`, give byte for byte what reads one by one and a local read give, under every
//! test user's shell (the script runs under `/bin/sh`, busybox's or toybox's), hostile names
//! included; and a session that grows while the batch reads it is read again, never wrongly.

use std::path::Path;

use clankie_host::{FileRef, Host, HostConfig, HostError};
use clankie_model::{ByteRange, ReadResult, RootSpec};

use crate::common::sshd::{Sshd, sshd_or_skip};

/// Names a batch must carry as they are: quotes, `$(…)`, backquotes, a leading dash, spaces, a
/// newline and a carriage return, glob characters.
const HOSTILE_NAMES: &[&str] = &[
    "it's \"q\" $(touch pwned) `touch pwned2`.jsonl",
    "-x.jsonl",
    " lead space.jsonl",
    "new\nline.jsonl",
    "car\rriage.jsonl",
    "*[a]?.jsonl",
];

/// What `check` asks of a session listed at `size`: its head and the window at its end, cut at
/// the size (a small session: the whole file, once).
fn check_ranges(size: u64) -> Vec<ByteRange> {
    if size <= 4096 {
        vec![ByteRange::new(0, size)]
    } else {
        vec![
            ByteRange::new(0, 4096),
            ByteRange::new(size.saturating_sub(65536), size.min(65536)),
        ]
    }
}

/// A session of about `len` bytes of JSON lines, different for every `seed`.
fn session(seed: usize, len: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut k = 0;
    while out.len() < len {
        out.extend(
            format!(
                "{{\"type\":\"user\",\"uuid\":\"{seed}-{k}\",\"message\":{{\"content\":\"{}\"}}}}\n",
                "x".repeat((seed * 7 + k * 13) % 300)
            )
            .bytes(),
        );
        k += 1;
    }
    out
}

/// Puts the sessions of the test under `~/.claude/projects/<project>-*` of `user`: two plain
/// directories of small sessions, one of hostile names, and a session past the 64 KiB window.
/// Returns their paths below the root.
fn put_sessions(sshd: &Sshd, user: &str, project: &str) -> Vec<String> {
    let mut rels = Vec::new();
    for i in 0..30 {
        let dir = if i % 2 == 0 { "a" } else { "b" };
        rels.push(format!(
            "projects/{project}-{dir}/{i:08x}-0000-4000-8000-000000000000.jsonl"
        ));
    }
    for name in HOSTILE_NAMES {
        rels.push(format!("projects/{project}-$(touch pwned) 'q'/{name}"));
    }
    rels.push(format!("projects/{project}-a/big.jsonl"));
    for (i, rel) in rels.iter().enumerate() {
        let len = match i {
            _ if rel.ends_with("big.jsonl") => 300_000,
            // A few around check's 4 KiB head, one at its 64 KiB window.
            3 => 4096,
            5 => 4097,
            7 => 65_000,
            _ => 200 + i * 131,
        };
        sshd.put_file(user, Path::new(".claude").join(rel), &session(i, len));
    }
    rels
}

fn outcome(r: &Result<ReadResult, HostError>) -> String {
    match r {
        Ok(result) => format!("{} {:?}", result.size, result.chunks),
        // The kind of error: the messages name different hosts.
        Err(e) => format!("{e:?}")
            .split([' ', '{'])
            .next()
            .unwrap()
            .to_string(),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The reads of `rels` as `check` makes them, against the root the host resolves.
async fn reads_of(host: &impl Host, rels: &[String]) -> (Vec<(FileRef, Vec<ByteRange>)>, Vec<u8>) {
    let claude = clankie_engine::harness::by_name("claude").unwrap();
    let listing = host.list(&[RootSpec::default_for(claude)]).await.unwrap();
    let root = listing.roots[0].dir.clone();
    let reads = rels
        .iter()
        .map(|rel| {
            let size = listing
                .files
                .iter()
                .find(|f| f.rel == rel.as_bytes())
                .unwrap_or_else(|| panic!("{rel:?} is not listed"))
                .size;
            let file = FileRef {
                harness: claude,
                root: root.clone(),
                rel: rel.as_bytes().to_vec(),
            };
            (file, check_ranges(size))
        })
        .collect();
    (reads, root)
}

#[test]
fn a_batch_of_small_sessions_reads_as_one_by_one_under_every_login_shell() {
    let Some(sshd) = sshd_or_skip() else { return };
    let mut users: Vec<String> = sshd.users().iter().map(|u| u.to_string()).collect();
    if sshd.toybox_user().is_some() {
        users.push(crate::common::sshd::TOYBOX_USER.to_string());
    }
    let local = clankie_host::local::LocalHost::new("local");
    for user in &users {
        let rels = put_sessions(sshd, user, "-batch-reads");
        let host = clankie_host::open(&HostConfig::ssh(&sshd.alias(user)), Some(sshd.ssh_config()))
            .unwrap();
        runtime().block_on(async {
            let (mut reads, root) = reads_of(&host, &rels).await;
            // A missing session and a symlink out of the root, inside the batch: each its own
            // answer.
            let claude = reads[0].0.harness;
            let link = sshd
                .home(user)
                .join(".claude/projects/-batch-reads-a/link.jsonl");
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink("/etc/passwd", &link).unwrap();
            for rel in [
                "projects/-batch-reads-a/gone.jsonl",
                "projects/-batch-reads-a/link.jsonl",
            ] {
                let file = FileRef {
                    harness: claude,
                    root: root.clone(),
                    rel: rel.as_bytes().to_vec(),
                };
                reads.push((file, check_ranges(100)));
            }
            let batched = host.read_many(&reads).await.unwrap();
            let expected = local.read_many(&reads).await.unwrap();
            assert_eq!(batched.len(), reads.len());
            for (i, (got, want)) in batched.iter().zip(&expected).enumerate() {
                assert_eq!(outcome(got), outcome(want), "{user}: {:?}", rels.get(i));
            }
            let n = reads.len();
            assert!(
                matches!(batched[n - 2], Err(HostError::NotFound { .. })),
                "{user}"
            );
            assert!(
                matches!(batched[n - 1], Err(HostError::PathRefused { .. })),
                "{user}"
            );
            assert!(batched[..n - 2].iter().all(Result::is_ok), "{user}");
            // Reads one by one (one exec each) agree, for the hostile names and a few others.
            for i in (0..n - 2).filter(|i| i % 5 == 0 || *i >= 30) {
                let (file, ranges) = &reads[i];
                let one = host.read(file, ranges).await;
                assert_eq!(outcome(&one), outcome(&batched[i]), "{user}: {:?}", rels[i]);
            }
        });
        assert!(
            !sshd.home(user).join("pwned").exists() && !sshd.home(user).join("pwned2").exists(),
            "{user}: a name was run"
        );
    }
}

/// The login shell of `ck_batch_grow`: `/bin/sh` with [`GROWING_STAT`] first on PATH.
const GROWING_STAT_SHELL: &str =
    "#!/bin/sh\nPATH=$HOME/.ck-growing-bin:$PATH\nexport PATH\nexec /bin/sh \"$@\"\n";

/// A `stat` that appends a line to `~/.claude/projects/-batch-grow/grows.jsonl` each time it
/// runs for sizes (`{}` is the real one). A batch reads sizes with `stat`, then `cat`s, then
/// `stat`s again: the file grows between each. The identity check of a file read by its ranges
/// (`stat -L … /proc/self/fd/3`) leaves it alone: it is not a batch's size read.
const GROWING_STAT: &str = "#!/bin/sh\n'{}' \"$@\"; rc=$?\n\
    case \"$*\" in *\" /proc/self/fd/\"*) ;; *) \
    printf '{\"type\":\"user\",\"grown\":1}\\n' >> \"$HOME/.claude/projects/-batch-grow/grows.jsonl\" ;; esac\n\
    exit $rc\n";

#[test]
fn a_session_growing_under_the_batch_is_read_again_and_right() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_batch_grow";
    let alias = sshd.add_script_user(user, GROWING_STAT_SHELL);
    let real = crate::common::find_tool("stat").expect("stat");
    let wrapper = sshd.put_file(
        user,
        ".ck-growing-bin/stat",
        GROWING_STAT
            .replacen("{}", real.to_str().unwrap(), 1)
            .as_bytes(),
    );
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let mut rels = Vec::new();
    for i in 0..12 {
        let rel = format!("projects/-batch-grow/{i:08x}-0000-4000-8000-000000000000.jsonl");
        sshd.put_file(
            user,
            Path::new(".claude").join(&rel),
            &session(i, 500 + i * 40),
        );
        rels.push(rel);
        if i == 3 {
            let rel = "projects/-batch-grow/grows.jsonl".to_string();
            sshd.put_file(user, Path::new(".claude").join(&rel), &session(99, 800));
            rels.push(rel);
        }
    }
    let grows = sshd
        .home(user)
        .join(".claude/projects/-batch-grow/grows.jsonl");
    let host = clankie_host::open(&HostConfig::ssh(&alias), Some(sshd.ssh_config())).unwrap();
    let local = clankie_host::local::LocalHost::new("local");
    runtime().block_on(async {
        let (mut reads, _) = reads_of(&host, &rels).await;
        let grown = rels
            .iter()
            .position(|r| r.ends_with("grows.jsonl"))
            .unwrap();
        // Listed a little larger than it is, as if it had grown a line since its listing was
        // taken: still read whole, and it grows under the `cat`.
        let listed = reads[grown].1[0].len;
        reads[grown].1 = vec![ByteRange::new(0, listed + 2048)];
        let before = std::fs::metadata(&grows).unwrap().len();
        let batched = host.read_many(&reads).await.unwrap();
        let now = std::fs::read(&grows).unwrap();
        // Two batches read it whole (a `stat` before and after the `cat`, each a line: the
        // host's gzip is known from the listing, and nothing is probed), and each saw it
        // change: then it was read by its ranges.
        let grown_lines = now[before as usize..]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        assert_eq!(grown_lines, 4, "the growing stat ran {grown_lines} times");
        for (i, result) in batched.iter().enumerate() {
            let result = result
                .as_ref()
                .unwrap_or_else(|e| panic!("{}: {e}", rels[i]));
            if i == grown {
                // Whatever size the read saw, the bytes are the file's at that size.
                assert!(result.size >= before, "{} < {before}", result.size);
                let at_size = &now[..result.size as usize];
                let want: Vec<Vec<u8>> = reads[i]
                    .1
                    .iter()
                    .map(|r| {
                        at_size[r.start as usize..(r.end() as usize).min(at_size.len())].to_vec()
                    })
                    .collect();
                assert_eq!(result.chunks, want);
            } else {
                let want = local.read(&reads[i].0, &reads[i].1).await.unwrap();
                assert_eq!(result, &want, "{}", rels[i]);
            }
        }
    });
}

/// A login shell that puts `~/.ck-gzip-bin` first on PATH (a `gzip` of the test's own).
const GZIP_BIN_SHELL: &str =
    "#!/bin/sh\nPATH=$HOME/.ck-gzip-bin:$PATH\nexport PATH\nexec /bin/sh \"$@\"\n";

/// A `gzip` that logs each run to `~/gzip.log`, then is the real one (`{}`).
const LOGGING_GZIP: &str = "#!/bin/sh\necho \"$*\" >> \"$HOME/gzip.log\"\nexec '{}' \"$@\"\n";

/// A `gzip` that is not there, as far as a script can tell.
const MISSING_GZIP: &str = "#!/bin/sh\necho 'gzip: not found' >&2\nexit 127\n";

/// A user whose `gzip` is `body` (its `{}` the real one's path). Returns its alias.
fn user_with_gzip(sshd: &Sshd, user: &str, body: &str) -> String {
    let alias = sshd.add_script_user(user, GZIP_BIN_SHELL);
    let real = crate::common::find_tool("gzip").expect("gzip");
    let gzip = sshd.put_file(
        user,
        ".ck-gzip-bin/gzip",
        body.replacen("{}", real.to_str().unwrap(), 1).as_bytes(),
    );
    std::fs::set_permissions(&gzip, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    alias
}

/// The listing and the batched reads (scripts sent compressed, replies compressed) give what
/// the local host gives; on a host whose `gzip` does not work, the plain ones give the same.
#[test]
fn listings_and_batches_compressed_or_not_read_as_the_local_host() {
    let Some(sshd) = sshd_or_skip() else { return };
    let local = clankie_host::local::LocalHost::new("local");
    let claude = clankie_engine::harness::by_name("claude").unwrap();
    for (user, gzip, compressed) in [
        ("ck_gzip_yes", LOGGING_GZIP, true),
        ("ck_gzip_no", MISSING_GZIP, false),
    ] {
        let alias = user_with_gzip(sshd, user, gzip);
        let rels = put_sessions(sshd, user, "-gzip");
        let log = sshd.home(user).join("gzip.log");
        let _ = std::fs::remove_file(&log);
        let host = clankie_host::open(&HostConfig::ssh(&alias), Some(sshd.ssh_config())).unwrap();
        runtime().block_on(async {
            let (reads, root) = reads_of(&host, &rels).await;
            // The listing: as the local host lists the same root.
            let spec = RootSpec {
                harness: claude,
                dir: Some(root.clone()),
            };
            let remote = host.list(std::slice::from_ref(&spec)).await.unwrap();
            let here = local.list(std::slice::from_ref(&spec)).await.unwrap();
            let files = |l: &clankie_model::Listing| {
                l.files
                    .iter()
                    .map(|f| (f.rel.clone(), f.size, f.mtime))
                    .collect::<Vec<_>>()
            };
            assert_eq!(files(&remote), files(&here), "{user}");
            let batched = host.read_many(&reads).await.unwrap();
            let expected = local.read_many(&reads).await.unwrap();
            for (i, (got, want)) in batched.iter().zip(&expected).enumerate() {
                assert_eq!(outcome(got), outcome(want), "{user}: {}", rels[i]);
            }
            assert!(batched.iter().all(Result::is_ok), "{user}");
        });
        let runs = std::fs::read_to_string(&log).unwrap_or_default();
        if compressed {
            // Compressing the listing and the replies, decompressing the scripts.
            assert!(runs.contains("-1 -c"), "{user}: {runs:?}");
            // The probe's, and at least the batch's script.
            assert!(runs.matches("-dc").count() >= 2, "{user}: {runs:?}");
        } else {
            assert!(!runs.contains("-dc"), "{user}: {runs:?}");
        }
    }
}

/// A thread swaps a directory below the root for a symlink to a directory outside it (whose
/// files have the same names, and other sizes), and back, while batches read its small files
/// whole over SSH: no answer is an outside file's. A batch that meets the swap reads the files
/// again, or fails them; the others are the inside files byte for byte.
#[test]
fn a_directory_swapped_under_a_batch_never_leads_out() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_dash";
    let mut rels = Vec::new();
    for i in 0..20 {
        let rel = format!("projects/-race-batch/{i:08x}-0000-4000-8000-000000000000.jsonl");
        let name = rel.rsplit('/').next().unwrap().to_string();
        sshd.put_file(user, Path::new(".claude").join(&rel), &session(i, 300 + i));
        sshd.put_file(
            user,
            Path::new("race-batch-outside/-race-batch").join(&name),
            format!("OUTSIDE {i}\n").as_bytes(),
        );
        rels.push(rel);
    }
    // One in another directory: not concerned by the swap.
    let other = "projects/-race-batch-other/00000099-0000-4000-8000-000000000000.jsonl";
    sshd.put_file(user, Path::new(".claude").join(other), &session(99, 500));
    rels.push(other.to_string());
    let inside = sshd.home(user).join(".claude/projects/-race-batch");
    let outside = sshd.home(user).join("race-batch-outside/-race-batch");
    let parked = inside.with_extension("real");
    let host =
        clankie_host::open(&HostConfig::ssh(&sshd.alias(user)), Some(sshd.ssh_config())).unwrap();
    let local = clankie_host::local::LocalHost::new("local");
    runtime().block_on(async {
        let (reads, _) = reads_of(&host, &rels).await;
        let expected = local.read_many(&reads).await.unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flipper = {
            let stop = Arc::clone(&stop);
            let (inside, parked, outside) = (inside.clone(), parked.clone(), outside.clone());
            std::thread::spawn(move || {
                let mut flips = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    std::fs::rename(&inside, &parked).unwrap();
                    std::os::unix::fs::symlink(&outside, &inside).unwrap();
                    std::thread::sleep(std::time::Duration::from_micros(300));
                    std::fs::remove_file(&inside).unwrap();
                    std::fs::rename(&parked, &inside).unwrap();
                    std::thread::sleep(std::time::Duration::from_micros(300));
                    flips += 1;
                }
                flips
            })
        };
        let (mut right, mut failed) = (0, 0);
        for _ in 0..40 {
            let batched = host.read_many(&reads).await.unwrap();
            for (i, (got, want)) in batched.iter().zip(&expected).enumerate() {
                match got {
                    Ok(result) => {
                        assert!(
                            !result.chunks.iter().any(|c| c.starts_with(b"OUTSIDE")),
                            "{}: an outside file was read",
                            rels[i]
                        );
                        assert_eq!(result, want.as_ref().unwrap(), "{}", rels[i]);
                        right += 1;
                    }
                    Err(_) => failed += 1,
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        let flips = flipper.join().unwrap();
        assert!(flips > 20, "only {flips} swaps");
        assert!(right > 0, "right {right}, failed {failed}");
    });
}

/// A thread replaces a session with the other of two versions of it (`rename` over it, as an
/// editor saves) every 100 ms while batches read it with others: every answer is one
/// version's bytes, whole, at that version's size (a change seen under the `cat` reads it
/// again, one under a ranged read is `raced`). Each version keeps a name of its own (a hard
/// link), so that no inode is freed and given to the next file. What is not held: a file
/// replaced and put back within one ranged read (between its `ls` before and after `dd`), as
/// docs/shells.md says.
#[test]
fn a_session_replaced_under_a_batch_is_one_version_or_the_other() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_dash";
    let mut rels = Vec::new();
    for i in 0..10 {
        let rel = format!("projects/-swap-batch/{i:08x}-0000-4000-8000-000000000000.jsonl");
        sshd.put_file(
            user,
            Path::new(".claude").join(&rel),
            &session(i, 400 + i * 50),
        );
        rels.push(rel);
    }
    let swapped = 4;
    let versions = [session(40, 900), session(41, 1700)];
    let path = sshd.home(user).join(".claude").join(&rels[swapped]);
    let kept: Vec<std::path::PathBuf> = (0..2)
        .map(|k| {
            sshd.put_file(
                user,
                format!(".claude/projects/-swap-batch/v{k}.kept"),
                &versions[k],
            )
        })
        .collect();
    let staged = path.with_extension("tmp");
    let _ = std::fs::remove_file(&staged);
    std::fs::hard_link(&kept[0], &staged).unwrap();
    std::fs::rename(&staged, &path).unwrap();
    let host =
        clankie_host::open(&HostConfig::ssh(&sshd.alias(user)), Some(sshd.ssh_config())).unwrap();
    let local = clankie_host::local::LocalHost::new("local");
    runtime().block_on(async {
        let (mut reads, _) = reads_of(&host, &rels).await;
        // Listed at the larger version's size: read whole whichever it is.
        reads[swapped].1 = check_ranges(versions[1].len() as u64);
        let expected = local.read_many(&reads).await.unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let swapper = {
            let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
            let (path, staged, kept) = (path.clone(), staged.clone(), kept.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    // The other version than the one in place (a rename onto the same inode
                    // does nothing).
                    let k = 1 - (swaps.load(Ordering::Relaxed) % 2) as usize;
                    std::fs::hard_link(&kept[k], &staged).unwrap();
                    std::fs::rename(&staged, &path).unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let mut seen = [0; 2];
        // At least 30 batches, and as many as it takes to meet a few swaps (however fast the
        // batches are).
        let mut batches = 0;
        while batches < 30 || (swaps.load(Ordering::Relaxed) <= 5 && batches < 3000) {
            batches += 1;
            let batched = host.read_many(&reads).await.unwrap();
            for (i, got) in batched.iter().enumerate() {
                if i != swapped {
                    assert_eq!(outcome(got), outcome(&expected[i]), "{}", rels[i]);
                    continue;
                }
                let Ok(result) = got else { continue };
                let k = versions
                    .iter()
                    .position(|v| v.len() as u64 == result.size)
                    .unwrap_or_else(|| panic!("a size of neither version: {}", result.size));
                assert_eq!(result.chunks, vec![versions[k].clone()], "version {k}");
                seen[k] += 1;
            }
        }
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        let swaps = swaps.load(Ordering::Relaxed);
        assert!(swaps > 5, "only {swaps} swaps");
        assert!(seen[0] > 0 && seen[1] > 0, "{seen:?}");
    });
}

/// A login shell that puts `~/.ck-stat-bin` first on PATH (a `stat` of the test's own).
const STAT_BIN_SHELL: &str =
    "#!/bin/sh\nPATH=$HOME/.ck-stat-bin:$PATH\nexport PATH\nexec /bin/sh \"$@\"\n";

/// A `stat` that logs each run to `~/stat.log`, then is not there, as far as a script can tell.
const MISSING_STAT: &str =
    "#!/bin/sh\necho \"$*\" >> \"$HOME/stat.log\"\necho 'stat: not found' >&2\nexit 127\n";

/// On a host where `stat` does not answer, a batch reads its small sessions one by one (each by
/// its ranges, `ls` for the size) and gives what the local host gives; the other hosts' batches
/// tried it once a root and gave up.
#[test]
fn a_host_without_stat_reads_a_batch_one_by_one_as_the_local_host() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_stat_no";
    let alias = sshd.add_script_user(user, STAT_BIN_SHELL);
    let stat = sshd.put_file(user, ".ck-stat-bin/stat", MISSING_STAT.as_bytes());
    std::fs::set_permissions(&stat, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let rels = put_sessions(sshd, user, "-no-stat");
    let log = sshd.home(user).join("stat.log");
    let _ = std::fs::remove_file(&log);
    let host = clankie_host::open(&HostConfig::ssh(&alias), Some(sshd.ssh_config())).unwrap();
    let local = clankie_host::local::LocalHost::new("local");
    runtime().block_on(async {
        let (reads, _) = reads_of(&host, &rels).await;
        let batched = host.read_many(&reads).await.unwrap();
        let expected = local.read_many(&reads).await.unwrap();
        for (i, (got, want)) in batched.iter().zip(&expected).enumerate() {
            assert_eq!(outcome(got), outcome(want), "{}", rels[i]);
        }
        assert!(batched.iter().all(Result::is_ok));
    });
    // Asked (`-c`, then BSD's `-f`) for the root's files, with their directories first. The
    // identity checks of the files read by their ranges come from `/proc/self/fdinfo` where
    // the kernel prints the `ino` there (no `stat`), else they asked it too and fell back to
    // `ls`.
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    let fdinfo_ino = std::fs::read_to_string("/proc/self/fdinfo/0")
        .is_ok_and(|info| info.lines().any(|l| l.starts_with("ino:")));
    assert_eq!(
        logged.contains("-L -c %d %i /proc/self/fd/3 .\n"),
        !fdinfo_ino,
        "{logged:?}"
    );
    let runs: String = logged
        .split_inclusive('\n')
        .filter(|run| !run.contains("/proc/self/fd/3"))
        .collect();
    assert!(
        runs.starts_with("-c %i %s %f ./projects ./projects/-no-stat-"),
        "{runs:?}"
    );
    assert!(
        runs.contains(
            " ./projects ./projects/-no-stat-a ./projects ./projects/-no-stat-b ./projects/-no-stat-"
        ),
        "{runs:?}"
    );
    assert!(runs.contains("-f %i %z %Xp"), "{runs:?}");
}
