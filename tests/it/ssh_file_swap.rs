//! A session file swapped for a symlink to a file outside the root, and back, continuously while
//! it is read over SSH: no read may return a byte of the outside file, on any login shell of the
//! test sshd. The fast suite runs 200 reads on two shells; `CLANKIE_SWAP_READS=2000` runs that
//! many reads on every login shell (`scripts/swap-bench`).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clankie_host::{Host, HostConfig};
use clankie_model::{ByteRange, RootSpec};

use crate::common::sshd::{Sshd, sshd_or_skip};

/// What one login shell's run gave.
#[derive(Debug)]
struct SwapRun {
    read: usize,
    failed: usize,
    leaked: usize,
    swaps: u64,
}

/// How long the real file stays in place between two swaps, in turn. The symlink stays 200 µs
/// each time; the real file's stays vary so that a read, which takes several milliseconds over
/// SSH (longer on a loaded machine), has a chance to run clean now and then, and otherwise meets
/// a swap at every point of its script.
const INSIDE_HOLDS_MICROS: [u64; 6] = [200, 200, 200, 1_000, 5_000, 30_000];

/// Swaps `file` for a symlink to `outside` and back until `stop`; returns the number of swaps.
fn swapper(file: PathBuf, outside: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    let parked = file.with_extension("parked");
    std::thread::spawn(move || {
        let mut swaps = 0u64;
        while !stop.load(Ordering::Relaxed) {
            std::fs::rename(&file, &parked).unwrap();
            std::os::unix::fs::symlink(&outside, &file).unwrap();
            std::thread::sleep(Duration::from_micros(200));
            std::fs::remove_file(&file).unwrap();
            std::fs::rename(&parked, &file).unwrap();
            let hold = INSIDE_HOLDS_MICROS[swaps as usize % INSIDE_HOLDS_MICROS.len()];
            std::thread::sleep(Duration::from_micros(hold));
            swaps += 1;
        }
        swaps
    })
}

/// `reads` reads of a session file of `user` under a continuous swapper, on one connection.
fn swap_run(sshd: &Sshd, user: &str, reads: usize) -> SwapRun {
    let inside = b"INSIDE-0123456789\n".repeat(8);
    let file = sshd.put_file(user, ".claude/projects/-swap-ssh/s.jsonl", &inside);
    let outside = sshd.put_file(user, "swap-outside/s.jsonl", &b"OUTSIDE\n".repeat(18));
    let host = clankie_host::open(&HostConfig::ssh(&sshd.alias(user)), Some(sshd.ssh_config()))
        .expect("open the test host");
    let claude = clankie_engine::harness::by_name("claude").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The root as the host resolves it, as a listing would give it (before the swapper runs).
    let root = runtime.block_on(async {
        let listing = host.list(&[RootSpec::default_for(claude)]).await.unwrap();
        listing.roots[0].dir.clone()
    });
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = swapper(file.clone(), outside, Arc::clone(&stop));
    let (mut read, mut failed, mut leaked) = (0, 0, 0);
    runtime.block_on(async {
        let session = clankie_host::FileRef {
            harness: claude,
            root,
            rel: b"projects/-swap-ssh/s.jsonl".to_vec(),
        };
        for n in 0..reads {
            // Two ranges on every other read: the script's several `dd`s, not only one.
            let ranges = if n % 2 == 0 {
                vec![ByteRange::new(0, 200)]
            } else {
                vec![ByteRange::new(0, 10), ByteRange::new(40, 60)]
            };
            match host.read(&session, &ranges).await {
                Ok(result)
                    if result
                        .chunks
                        .iter()
                        .any(|c| c.windows(7).any(|w| w == b"OUTSIDE")) =>
                {
                    leaked += 1
                }
                Ok(result) => {
                    let want: Vec<&[u8]> = ranges
                        .iter()
                        .map(|r| &inside[r.start as usize..(r.end() as usize).min(inside.len())])
                        .collect();
                    let got: Vec<&[u8]> = result.chunks.iter().map(Vec::as_slice).collect();
                    assert_eq!(got, want, "{user}: a read gave other bytes");
                    read += 1;
                }
                Err(_) => failed += 1,
            }
        }
    });
    stop.store(true, Ordering::Relaxed);
    let swaps = swaps.join().unwrap();
    let _ = std::fs::remove_dir_all(sshd.home(user).join("swap-outside"));
    SwapRun {
        read,
        failed,
        leaked,
        swaps,
    }
}

#[test]
fn a_file_swapped_for_a_symlink_mid_read_never_leaks_over_ssh() {
    let Some(sshd) = sshd_or_skip() else { return };
    let full: Option<usize> = std::env::var("CLANKIE_SWAP_READS")
        .ok()
        .map(|n| n.parse().expect("CLANKIE_SWAP_READS is a number"));
    let (users, reads): (Vec<&str>, usize) = match full {
        Some(reads) => (sshd.users().to_vec(), reads),
        None => (
            sshd.users()
                .iter()
                .copied()
                .filter(|u| ["ck_dash", "ck_busybox"].contains(u))
                .collect(),
            200,
        ),
    };
    assert!(!users.is_empty(), "no login shell to read through");
    let mut leaks = Vec::new();
    for user in users {
        let started = Instant::now();
        let run = swap_run(sshd, user, reads);
        eprintln!(
            "{user}: {} of {reads} reads leaked ({} read, {} refused, {} swaps, {:.1} s)",
            run.leaked,
            run.read,
            run.failed,
            run.swaps,
            started.elapsed().as_secs_f64()
        );
        assert!(run.swaps > 20, "{user}: only {} swaps", run.swaps);
        assert!(run.read > 0, "{user}: no read succeeded: {run:?}");
        if run.leaked > 0 {
            leaks.push(format!("{user}: {} of {reads}", run.leaked));
        }
    }
    assert!(
        leaks.is_empty(),
        "reads returned the outside file: {leaks:?}"
    );
}
