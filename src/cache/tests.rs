//! The cache over in-memory hosts: what each fetch moves, what it keeps, and that a changed
//! file is never served from the cache.

use std::path::Path;

use super::*;
use clankie_engine::cursor::{HEAD_BYTES, WINDOW_BYTES};
use clankie_host::memory::MemoryHost;
use clankie_model::RootSpec;

const WINDOWS: u64 = HEAD_BYTES + WINDOW_BYTES;

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

fn session_path(host: &MemoryHost, name: &str) -> Vec<u8> {
    let mut path = host.default_root(clankie_engine::harness::by_name("claude").unwrap());
    path.extend_from_slice(format!("/projects/-home-me-project/{name}.jsonl").as_bytes());
    path
}

/// Every Claude session of the host, as a listing finds it now.
fn listed(host: &MemoryHost) -> Vec<FileEntry> {
    let claude = clankie_engine::harness::by_name("claude").unwrap();
    let mut files = block_on(host.list(&[RootSpec::default_for(claude)]))
        .unwrap()
        .files;
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    files
}

/// `n` bytes of JSON lines, different for each `seed`.
fn lines(seed: u8, n: usize) -> Vec<u8> {
    let line = format!(
        "{{\"type\":\"user\",\"seed\":{seed},\"text\":\"{}\"}}\n",
        "x".repeat(90)
    );
    line.into_bytes().into_iter().cycle().take(n).collect()
}

fn open(dir: &Path, max_bytes: u64) -> Cache {
    Cache::open(CacheOptions {
        dir: Some(dir.to_path_buf()),
        max_bytes,
        enabled: true,
        verify: false,
    })
    .unwrap()
}

/// Bytes as a test compares them: their length and hash (a failure prints no megabytes).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Content(usize, String);

fn content(bytes: &[u8]) -> Content {
    Content(bytes.len(), blake3::hash(bytes).to_hex()[..16].to_string())
}

/// Fetches every listed session: (content, moved) each.
fn fetch(cache: &Cache, host: &MemoryHost) -> Vec<(Content, u64)> {
    block_on(cache.fetch_many(host, &listed(host)))
        .unwrap()
        .into_iter()
        .map(|f| {
            let f = f.unwrap();
            (content(&f.bytes), f.moved)
        })
        .collect()
}

fn host_with(files: &[(&str, Vec<u8>)]) -> MemoryHost {
    let host = MemoryHost::new("devbox");
    for (name, data) in files {
        host.put(session_path(&host, name), data);
    }
    host
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn a_second_fetch_of_unchanged_files_moves_only_their_windows() {
    let tmp = tempfile::tempdir().unwrap();
    let big = lines(1, 9 << 20);
    let small = lines(2, 3000);
    let host = host_with(&[("a", big.clone()), ("b", small.clone())]);
    let cache = open(tmp.path(), DEFAULT_MAX_BYTES);
    let first = fetch(&cache, &host);
    assert_eq!(first[0], (content(&big), big.len() as u64));
    assert_eq!(first[1], (content(&small), small.len() as u64));
    let entries = cache.entries(None).unwrap();
    assert_eq!(
        entries.iter().map(|e| e.bytes).collect::<Vec<_>>(),
        [big.len() as u64, small.len() as u64]
    );
    assert_eq!(entries[0].path, session_path(&host, "a"));
    assert_eq!(
        (entries[0].host.as_str(), entries[0].harness.as_str()),
        ("devbox", "claude")
    );

    // Another run (a new cache over the same directory): windows only.
    let again = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    assert_eq!(again[0], (content(&big), WINDOWS));
    // A file under 8 KiB: its two windows overlap, both read.
    assert_eq!(again[1], (content(&small), 2 * 3000));
}

#[test]
fn appended_bytes_are_all_that_moves() {
    let tmp = tempfile::tempdir().unwrap();
    let mut a = lines(1, 100_000);
    let mut b = lines(2, 200_000);
    let host = host_with(&[("a", a.clone()), ("b", b.clone())]);
    fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);

    let a_more = lines(3, 777);
    // More than one read's worth: read on in later rounds.
    let b_more = lines(4, 5 << 20);
    host.append(session_path(&host, "a"), &a_more);
    host.append(session_path(&host, "b"), &b_more);
    a.extend_from_slice(&a_more);
    b.extend_from_slice(&b_more);
    let got = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    assert_eq!(got[0], (content(&a), WINDOWS + 777));
    assert_eq!(got[1], (content(&b), WINDOWS + (5 << 20)));

    // Appended after the listing: found by the size the read reports.
    let listing = listed(&host);
    host.append(session_path(&host, "a"), b"{\"late\":1}\n");
    a.extend_from_slice(b"{\"late\":1}\n");
    let cache = open(tmp.path(), DEFAULT_MAX_BYTES);
    let got = block_on(cache.fetch_many(&host, &listing)).unwrap();
    let got = got[0].as_ref().unwrap();
    assert_eq!(
        (content(&got.bytes), got.moved),
        (content(&a), WINDOWS + 11)
    );
    assert_eq!(cache.entries(None).unwrap()[0].bytes, a.len() as u64);
}

#[test]
fn a_rewritten_file_of_the_same_size_is_fetched_again() {
    let tmp = tempfile::tempdir().unwrap();
    let host = host_with(&[("a", lines(1, 50_000))]);
    fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    let new = lines(2, 50_000);
    host.rewrite(session_path(&host, "a"), &new);
    let got = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    // The listing's new mtime at the same size says it was written in place: fetched whole
    // without checking its windows first.
    assert_eq!(got[0], (content(&new), 50_000));
    // And the cache now holds the new content.
    let again = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    assert_eq!(again[0], (content(&new), WINDOWS));
}

#[test]
fn a_rewritten_file_that_grew_is_fetched_again() {
    let tmp = tempfile::tempdir().unwrap();
    let host = host_with(&[("a", lines(1, 50_000))]);
    fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    let mut new = lines(2, 50_000);
    new.extend_from_slice(&lines(3, 10_000));
    host.rewrite(session_path(&host, "a"), &new);
    let got = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    // The check (with the listed growth read ahead), then the whole file.
    assert_eq!(got[0], (content(&new), WINDOWS + 10_000 + 60_000));
}

#[test]
fn a_big_file_is_read_ahead_in_one_round_and_each_byte_moves_once() {
    let tmp = tempfile::tempdir().unwrap();
    let big = lines(1, (10 * MAX_READ_BYTES + 12_345) as usize);
    let small = lines(2, 20_000);
    let host = host_with(&[("a", big.clone()), ("b", small.clone())]);
    let got = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    assert_eq!(
        got,
        [
            (content(&big), big.len() as u64),
            (content(&small), small.len() as u64)
        ]
    );
    // Kept: the next fetch moves the windows only.
    let again = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    assert_eq!(
        again.iter().map(|(_, moved)| moved).sum::<u64>(),
        2 * WINDOWS
    );
}

#[test]
fn reads_ahead_past_a_file_cut_since_its_listing_keep_only_its_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let data = lines(1, (6 * MAX_READ_BYTES) as usize);
    let host = host_with(&[("a", data.clone())]);
    // Listed at 24 MiB, cut to 5 MiB and a byte before the fetch: the round's reads past
    // the cut come back empty or out of step, and are dropped.
    let stale = listed(&host);
    let cut = (MAX_READ_BYTES + MAX_READ_BYTES / 4 + 1) as usize;
    host.truncate(session_path(&host, "a"), cut as u64);
    let cache = open(tmp.path(), DEFAULT_MAX_BYTES);
    let got = block_on(cache.fetch_many(&host, &stale)).unwrap();
    let got = got[0].as_ref().unwrap();
    assert_eq!(content(&got.bytes), content(&data[..cut]));
    assert_eq!(got.moved, cut as u64);
}

#[test]
fn a_truncated_file_is_fetched_again() {
    let tmp = tempfile::tempdir().unwrap();
    let data = lines(1, 50_000);
    let host = host_with(&[("a", data.clone())]);
    fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    host.truncate(session_path(&host, "a"), 20_000);
    let got = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    assert_eq!(got[0], (content(&data[..20_000]), 20_000));
    // Emptied: nothing served, nothing kept.
    host.truncate(session_path(&host, "a"), 0);
    let got = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    assert_eq!(got[0], (content(b""), 0));
    assert!(
        open(tmp.path(), DEFAULT_MAX_BYTES)
            .entries(None)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_file_that_vanished_is_its_own_error() {
    let tmp = tempfile::tempdir().unwrap();
    let host = host_with(&[("a", lines(1, 5000)), ("b", lines(2, 5000))]);
    let listing = listed(&host);
    host.remove(session_path(&host, "a"));
    let got = block_on(open(tmp.path(), DEFAULT_MAX_BYTES).fetch_many(&host, &listing)).unwrap();
    assert!(
        matches!(got[0], Err(HostError::NotFound { .. })),
        "{:?}",
        got[0]
    );
    assert_eq!(
        content(&got[1].as_ref().unwrap().bytes),
        content(&lines(2, 5000))
    );
}

#[test]
fn the_cache_is_private_to_its_user() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("xdg").join("clankie-read");
    let host = host_with(&[("a", lines(1, 5000))]);
    fetch(&open(&dir, DEFAULT_MAX_BYTES), &host);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&tmp.path().join("xdg")), 0o700);
    let names = files_in(&dir);
    assert_eq!(names.len(), 4, "{names:?}"); // the dir's lock, and the entry's data, meta, lock
    for name in names {
        assert_eq!(mode(&dir.join(&name)), 0o600, "{name}");
    }
}

#[test]
fn corrupt_entries_are_dropped_and_fetched_again() {
    let tmp = tempfile::tempdir().unwrap();
    let data = lines(1, 30_000);
    let host = host_with(&[("a", data.clone())]);
    fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    let named = |ext: &str| {
        let name = files_in(tmp.path())
            .into_iter()
            .find(|n| n.ends_with(ext))
            .unwrap();
        tmp.path().join(name)
    };
    type Damage = fn(&Path);
    let damages: [(&str, Damage); 4] = [
        ("meta", |p| std::fs::write(p, b"{\"version\":1,").unwrap()),
        ("data", |p| {
            let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
            f.set_len(10_000).unwrap();
        }),
        ("data", |p| {
            let mut bytes = std::fs::read(p).unwrap();
            bytes[29_000] ^= 1; // in the tail window
            std::fs::write(p, bytes).unwrap();
        }),
        ("data", |p| {
            // An append that did not finish.
            let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
            f.write_all(b"half a li").unwrap();
        }),
    ];
    for (ext, damage) in damages {
        damage(&named(ext));
        let got = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
        assert_eq!(got[0], (content(&data), 30_000), "damaged {ext}");
        let again = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
        assert_eq!(again[0], (content(&data), WINDOWS), "damaged {ext}");
    }
}

#[test]
fn least_recently_used_files_go_over_the_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let host = host_with(&[
        ("a", lines(1, 10_000)),
        ("b", lines(2, 10_000)),
        ("c", lines(3, 10_000)),
    ]);
    let all = listed(&host);
    let bound = 25_000;
    let cached = |cache: &Cache| -> Vec<Vec<u8>> {
        let mut paths: Vec<Vec<u8>> = cache
            .entries(None)
            .unwrap()
            .into_iter()
            .map(|e| e.path)
            .collect();
        paths.sort();
        paths
    };
    let path = |name| session_path(&host, name);
    // a, then b (each by a run of its own): both fit.
    for i in [0, 1] {
        block_on(open(tmp.path(), bound).fetch_many(&host, &all[i..=i])).unwrap();
    }
    set_used(tmp.path(), &path("a"), 1000);
    set_used(tmp.path(), &path("b"), 2000);
    // c: over the bound; a was used longest ago.
    let cache = open(tmp.path(), bound);
    block_on(cache.fetch_many(&host, &all[2..])).unwrap();
    assert_eq!(cached(&cache), [path("b"), path("c")]);
    // a again, by a run that has b's use older than c's: b goes, though c was never used by
    // this run either. Then what this run used is kept over what it did not.
    set_used(tmp.path(), &path("b"), 3000);
    set_used(tmp.path(), &path("c"), 4000);
    let cache = open(tmp.path(), bound);
    block_on(cache.fetch_many(&host, &all[..1])).unwrap();
    assert_eq!(cached(&cache), [path("a"), path("c")]);
    set_used(tmp.path(), &path("a"), 5000);
    set_used(tmp.path(), &path("c"), 100);
    let cache = open(tmp.path(), bound);
    block_on(cache.fetch_many(&host, &all[1..2])).unwrap();
    assert_eq!(cached(&cache), [path("a"), path("b")]);
}

#[test]
fn a_file_over_the_bound_is_served_and_not_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let data = lines(1, 40_000);
    let host = host_with(&[("a", data.clone())]);
    let cache = open(tmp.path(), 30_000);
    assert_eq!(fetch(&cache, &host)[0], (content(&data), 40_000));
    assert!(cache.entries(None).unwrap().is_empty());
    // Grew past the bound after being cached: served, and the stale entry goes.
    host.truncate(session_path(&host, "a"), 20_000);
    fetch(&cache, &host);
    assert_eq!(cache.entries(None).unwrap().len(), 1);
    host.append(session_path(&host, "a"), &data[20_000..]);
    assert_eq!(fetch(&cache, &host)[0].0, content(&data));
    assert!(cache.entries(None).unwrap().is_empty());
}

#[test]
fn no_cache_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cache");
    let data = lines(1, 6 << 20);
    let host = host_with(&[("a", data.clone())]);
    let cache = Cache::open(CacheOptions {
        dir: Some(dir.clone()),
        max_bytes: DEFAULT_MAX_BYTES,
        enabled: false,
        verify: false,
    })
    .unwrap();
    for _ in 0..2 {
        assert_eq!(fetch(&cache, &host)[0], (content(&data), 6 << 20));
    }
    assert!(!dir.exists());
    assert!(cache.entries(None).unwrap().is_empty());
    assert_eq!(cache.clear(None).unwrap(), Cleared::default());
}

#[test]
fn the_local_host_is_read_directly_and_not_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let host = MemoryHost::new("local");
    let data = lines(1, 5000);
    host.put(session_path(&host, "a"), &data);
    let cache = open(tmp.path(), DEFAULT_MAX_BYTES);
    assert_eq!(fetch(&cache, &host)[0], (content(&data), 5000));
    assert!(cache.entries(None).unwrap().is_empty());
}

#[test]
fn an_entry_another_fetch_holds_is_served_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let host = host_with(&[("a", lines(1, 5000))]);
    let cache = open(tmp.path(), DEFAULT_MAX_BYTES);
    fetch(&cache, &host);
    let key = Store::key("devbox", "claude", &session_path(&host, "a"));
    let held = cache.store.try_lock_entry(&key).unwrap().unwrap();
    let new = lines(2, 6000);
    host.rewrite(session_path(&host, "a"), &new);
    assert_eq!(fetch(&cache, &host)[0], (content(&new), 6000));
    assert_eq!(cache.entries(None).unwrap()[0].bytes, 5000);
    drop(held);
    // The check, with the 1000 bytes the listing says it grew, then the whole file.
    assert_eq!(
        fetch(&cache, &host)[0],
        (content(&new), WINDOWS + 1000 + 6000)
    );
    assert_eq!(cache.entries(None).unwrap()[0].bytes, 6000);
}

#[test]
fn many_unchanged_files_are_checked_in_few_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let host = MemoryHost::new("devbox");
    for i in 0..300 {
        host.put(
            session_path(&host, &format!("s{i:03}")),
            lines(i as u8, 20_000),
        );
    }
    fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    let got = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    assert_eq!(
        got.iter().map(|(_, moved)| moved).sum::<u64>(),
        300 * WINDOWS
    );
    assert_eq!(got[7].0, content(&lines(7, 20_000)));
}

#[test]
fn clear_removes_one_hosts_files_or_all() {
    let tmp = tempfile::tempdir().unwrap();
    let devbox = host_with(&[("a", lines(1, 5000)), ("b", lines(2, 7000))]);
    let other = MemoryHost::new("other");
    other.put(session_path(&other, "c"), lines(3, 3000));
    let cache = open(tmp.path(), DEFAULT_MAX_BYTES);
    fetch(&cache, &devbox);
    fetch(&cache, &other);
    assert_eq!(cache.entries(Some("other")).unwrap().len(), 1);
    assert_eq!(
        cache.clear(Some("devbox")).unwrap(),
        Cleared {
            files: 2,
            bytes: 12_000
        }
    );
    let left = cache.entries(None).unwrap();
    assert_eq!((left.len(), left[0].host.as_str()), (1, "other"));
    assert_eq!(
        cache.clear(None).unwrap(),
        Cleared {
            files: 1,
            bytes: 3000
        }
    );
    // Nothing but the directory's own lock file is left.
    assert_eq!(files_in(tmp.path()), ["lock"]);
}

/// Sets the last use of a cached file (as if an earlier run had used it then).
fn set_used(dir: &Path, path: &[u8], used: u64) {
    let store = Store::at(dir.to_path_buf());
    let key = Store::key("devbox", "claude", path);
    let mut meta = store.read_meta(&key).unwrap();
    meta.used = used;
    store.write_meta(&key, &meta).unwrap();
}

#[test]
fn a_database_is_fetched_whole_and_never_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let host = MemoryHost::new("devbox");
    let opencode = clankie_engine::harness::by_name("opencode").unwrap();
    let root = host.default_root(opencode);
    let mut path = root.clone();
    path.extend_from_slice(b"/opencode.db");
    let data = lines(1, 20_000);
    host.put(&path, &data);
    let entry = FileEntry {
        harness: opencode,
        root: root.into(),
        rel: b"opencode.db".to_vec(),
        size: 20_000,
        mtime: 0,
        inode: None,
        ctime: None,
    };
    let cache = open(tmp.path(), DEFAULT_MAX_BYTES);
    for _ in 0..2 {
        let got = block_on(cache.fetch_many(&host, std::slice::from_ref(&entry))).unwrap();
        let got = got[0].as_ref().unwrap();
        assert_eq!((content(&got.bytes), got.moved), (content(&data), 20_000));
    }
    assert!(cache.entries(None).unwrap().is_empty());
}

/// `grep` shares one cache between the tasks of its hosts.
#[test]
fn a_cache_can_be_shared_between_tasks() {
    fn shared<T: Send + Sync>() {}
    shared::<Cache>();
    shared::<Fetched>();
}

/// Runs sharing a directory while the files grow: each gets a true prefix of its file (at least
/// what it was before the run), and what the cache keeps stays sound.
#[test]
fn runs_sharing_a_directory_never_serve_or_keep_a_wrong_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let names = ["a", "b", "c", "d"];
    let host = host_with(&names.map(|n| (n, lines(1, 20_000))));
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            for i in 0..200u32 {
                let name = names[i as usize % names.len()];
                host.append(session_path(&host, name), lines(2 + (i % 7) as u8, 3000));
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        let runs: Vec<_> = (0..3)
            .map(|_| {
                scope.spawn(|| {
                    let mut fetches = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) || fetches < 3 {
                        let before = listed(&host);
                        let cache = open(tmp.path(), DEFAULT_MAX_BYTES);
                        let got = block_on(cache.fetch_many(&host, &before)).unwrap();
                        for (entry, got) in before.iter().zip(got) {
                            let got = got.unwrap();
                            let now = block_on(host.read(
                                &FileRef {
                                    harness: entry.harness,
                                    root: entry.root.to_vec(),
                                    rel: entry.rel.clone(),
                                },
                                &[ByteRange::new(0, MAX_READ_BYTES)],
                            ))
                            .unwrap();
                            assert!(got.bytes.len() as u64 >= entry.size);
                            assert!(now.chunks[0].starts_with(&got.bytes), "not a prefix");
                        }
                        fetches += 1;
                    }
                })
            })
            .collect();
        writer.join().unwrap();
        for run in runs {
            run.join().unwrap();
        }
    });
    // Nothing changes now: one more run serves every file right. An entry kept while its file
    // grew past the listing has no mtime, so at the file's final size it cannot tell the file
    // from one rewritten in place and is fetched whole once; every other entry moves only its
    // windows and what was appended since it was kept.
    let cache = open(tmp.path(), DEFAULT_MAX_BYTES);
    let kept = cache.entries(None).unwrap();
    assert_eq!(kept.len(), names.len());
    let got = fetch(&cache, &host);
    let mut sizes = Vec::new();
    for ((name, (got, moved)), kept) in names.iter().zip(got).zip(kept) {
        let want = block_on(host.read(
            &FileRef {
                harness: clankie_engine::harness::by_name("claude").unwrap(),
                root: b"/".to_vec(),
                rel: session_path(&host, name)[1..].to_vec(),
            },
            &[ByteRange::new(0, MAX_READ_BYTES)],
        ))
        .unwrap();
        assert_eq!(got, content(&want.chunks[0]));
        assert_eq!(kept.path, session_path(&host, name));
        let from_entry = WINDOWS + want.size - kept.bytes;
        assert!(
            moved == from_entry || (kept.bytes == want.size && moved == want.size),
            "{name}: moved {moved}, kept {} of {}",
            kept.bytes,
            want.size
        );
        sizes.push(want.size);
    }
    // From then on every entry holds its file's listed size and mtime: only the windows move.
    let again = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    for ((got, moved), size) in again.into_iter().zip(sizes) {
        assert_eq!(got.0 as u64, size);
        assert_eq!(moved, WINDOWS);
    }
}

/// What a fetch through no cache gives: what every cached fetch must equal.
fn uncached(host: &MemoryHost) -> Vec<Content> {
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::open(CacheOptions {
        dir: Some(tmp.path().to_path_buf()),
        max_bytes: DEFAULT_MAX_BYTES,
        enabled: false,
        verify: false,
    })
    .unwrap();
    fetch(&cache, host).into_iter().map(|(c, _)| c).collect()
}

#[test]
fn a_same_size_rewrite_in_the_middle_is_never_a_stale_hit() {
    let tmp = tempfile::tempdir().unwrap();
    let old = lines(1, 50_000);
    let host = host_with(&[("a", old.clone())]);
    fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    for round in 0..4u8 {
        // Past the head window and before the tail window: the windows alone cannot see it.
        let mut new = old.clone();
        new[20_000..20_010].copy_from_slice(format!("REWRITE{round:03}").as_bytes());
        host.rewrite(session_path(&host, "a"), &new);
        let got = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
        assert_eq!(got[0], (content(&new), 50_000), "round {round}");
        assert_eq!(vec![got[0].0.clone()], uncached(&host));
    }
}

#[test]
fn another_inode_at_the_same_size_and_times_is_not_a_hit() {
    let tmp = tempfile::tempdir().unwrap();
    let old = lines(1, 50_000);
    let host = host_with(&[("a", old.clone())]);
    let path = session_path(&host, "a");
    fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    let (_, mtime, inode, ctime) = host.stat(&path).unwrap();
    // Another file renamed over it, its mtime and (as only a changed clock could) its ctime
    // set back: the inode alone tells, and the middle is past both windows.
    let mut new = old.clone();
    new[20_000..20_010].copy_from_slice(b"REPLACED!!");
    host.put(&path, &new);
    host.set_mtime(&path, mtime);
    host.set_ctime(&path, ctime);
    let now = host.stat(&path).unwrap();
    assert_eq!((now.0, now.1, now.3), (50_000, mtime, ctime));
    assert_ne!(now.2, inode);
    let got = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    assert_eq!(got[0], (content(&new), 50_000));
    assert_eq!(vec![got[0].0.clone()], uncached(&host));
}

#[test]
fn another_ctime_at_the_same_size_mtime_and_inode_is_not_a_hit() {
    let tmp = tempfile::tempdir().unwrap();
    let old = lines(1, 50_000);
    let host = host_with(&[("a", old.clone())]);
    let path = session_path(&host, "a");
    fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    let (_, mtime, inode, ctime) = host.stat(&path).unwrap();
    // Written in place and `touch -d` back to the old mtime: the ctime moved on.
    let mut new = old.clone();
    new[20_000..20_010].copy_from_slice(b"IN PLACE!!");
    host.rewrite(&path, &new);
    host.set_mtime(&path, mtime);
    let now = host.stat(&path).unwrap();
    assert_eq!((now.0, now.1, now.2), (50_000, mtime, inode));
    assert_ne!(now.3, ctime);
    let got = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    assert_eq!(got[0], (content(&new), 50_000));
    assert_eq!(vec![got[0].0.clone()], uncached(&host));
    // Unchanged since: a hit again, its windows checked.
    let again = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    assert_eq!(again[0], (content(&new), WINDOWS));
}

/// The path of the one file of the cache directory named `*.EXT`.
fn entry_file(dir: &Path, ext: &str) -> std::path::PathBuf {
    let name = files_in(dir)
        .into_iter()
        .find(|n| n.len() > 64 && n.ends_with(ext))
        .unwrap();
    dir.join(name)
}

/// Runs `f` on a thread of its own, failing the test when it takes over 30 s (a hang).
fn within_30s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(f());
    });
    receive
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the fetch hung")
}

#[test]
fn a_fifo_or_a_symlink_in_the_cache_is_refused() {
    let data = lines(1, 30_000);
    for ext in ["data", "meta"] {
        for kind in ["fifo", "symlink"] {
            let tmp = tempfile::tempdir().unwrap();
            let host = host_with(&[("a", data.clone())]);
            fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
            let victim = entry_file(tmp.path(), ext);
            let original = std::fs::read(&victim).unwrap();
            std::fs::remove_file(&victim).unwrap();
            if kind == "fifo" {
                // Made in-process: a child process (`mkfifo`) would hold copies of the other
                // tests' entry locks between its fork and exec, and their fetches would then
                // keep nothing.
                rustix::fs::mknodat(
                    rustix::fs::CWD,
                    &victim,
                    rustix::fs::FileType::Fifo,
                    rustix::fs::Mode::from_raw_mode(0o600),
                    0,
                )
                .unwrap();
            } else {
                // Another file holding what the entry held: sound in every byte, and still
                // not the cache's own file.
                let elsewhere = tmp.path().join("elsewhere");
                std::fs::write(&elsewhere, &original).unwrap();
                std::os::unix::fs::symlink(&elsewhere, &victim).unwrap();
            }
            let (dir, host2) = (tmp.path().to_path_buf(), host_with(&[("a", data.clone())]));
            let got = within_30s(move || fetch(&open(&dir, DEFAULT_MAX_BYTES), &host2));
            assert_eq!(got[0].0, content(&data), "{kind} as {ext}");
            assert_eq!(vec![got[0].0.clone()], uncached(&host), "{kind} as {ext}");
            assert_eq!(
                got[0].1, 30_000,
                "{kind} as {ext}: fetched again, not served"
            );
        }
    }
}

#[test]
fn an_unsafe_cache_directory_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let host = host_with(&[("a", lines(1, 5000))]);
    let dir = tmp.path().join("cache");
    fetch(&open(&dir, DEFAULT_MAX_BYTES), &host);
    let options = |dir: &Path| CacheOptions {
        dir: Some(dir.to_path_buf()),
        max_bytes: DEFAULT_MAX_BYTES,
        enabled: true,
        verify: false,
    };
    let refused = |dir: &Path| match Cache::open(options(dir)) {
        Err(e @ CacheError::Unsafe { .. }) => e.to_string(),
        other => panic!("{} not refused: {other:?}", dir.display()),
    };
    for mode in [0o777, 0o770, 0o702] {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        assert!(refused(&dir).contains("writable"), "{mode:o}");
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert!(Cache::open(options(&dir)).is_ok());
    let me = nix::unistd::getuid().as_raw();
    let other = if me == 0 { 4242 } else { me };
    if me == 0 {
        // Owned by another user.
        std::os::unix::fs::chown(&dir, Some(other), None).unwrap();
        assert!(refused(&dir).contains("another user"));
        std::os::unix::fs::chown(&dir, Some(me), None).unwrap();
        // Reached through another user's symlink.
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(other), None).unwrap();
        assert!(refused(&link).contains("symlink owned by another user"));
        // The user's own symlink is followed.
        std::os::unix::fs::lchown(&link, Some(me), None).unwrap();
        assert!(Cache::open(options(&link)).is_ok());
    } else if std::env::var_os("CI").is_some() {
        panic!("the ownership cases need root (chown) under CI");
    }
}

mod proptests {
    //! `scripts/fuzz`'s cache target: whatever an entry's metadata and data files hold (bytes
    //! from anywhere, or the real ones with bytes changed), and however the file changed on
    //! the host since, a fetch gives exactly what a fetch through no cache gives.

    use proptest::prelude::*;

    use super::*;

    /// What is done to the entry on disk before the next fetch.
    #[derive(Debug, Clone)]
    enum Damage {
        Meta(Vec<u8>),
        MetaField(String, serde_json::Value),
        DataByte(prop::sample::Index, u8),
        DataLen(prop::sample::Index),
    }

    fn damage() -> impl Strategy<Value = Damage> {
        let field = prop_oneof![
            Just("version"),
            Just("host"),
            Just("harness"),
            Just("path"),
            Just("size"),
            Just("mtime"),
            Just("inode"),
            Just("ctime"),
            Just("head"),
            Just("tail"),
            Just("used"),
        ]
        .prop_map(String::from);
        let value = prop_oneof![
            any::<i64>().prop_map(serde_json::Value::from),
            any::<u64>().prop_map(serde_json::Value::from),
            "[0-9a-f]{0,40}".prop_map(serde_json::Value::from),
            Just(serde_json::Value::Null),
        ];
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..300).prop_map(Damage::Meta),
            (field, value).prop_map(|(f, v)| Damage::MetaField(f, v)),
            (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Damage::DataByte(i, b)),
            any::<prop::sample::Index>().prop_map(Damage::DataLen),
        ]
    }

    /// How the file changes on the host.
    #[derive(Debug, Clone)]
    enum Change {
        None,
        Append(usize),
        Rewrite(prop::sample::Index, u8),
        Truncate(prop::sample::Index),
    }

    fn change() -> impl Strategy<Value = Change> {
        prop_oneof![
            Just(Change::None),
            (1usize..20_000).prop_map(Change::Append),
            (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Change::Rewrite(i, b)),
            any::<prop::sample::Index>().prop_map(Change::Truncate),
        ]
    }

    fn apply(dir: &Path, damage: &Damage) {
        let meta = entry_file(dir, "meta");
        let data = entry_file(dir, "data");
        match damage {
            Damage::Meta(bytes) => std::fs::write(meta, bytes).unwrap(),
            Damage::MetaField(field, value) => {
                // After another damage the metadata may be no JSON object to change.
                let Ok(serde_json::Value::Object(mut json)) =
                    serde_json::from_slice(&std::fs::read(&meta).unwrap())
                else {
                    return;
                };
                json.insert(field.clone(), value.clone());
                std::fs::write(meta, serde_json::to_vec(&json).unwrap()).unwrap();
            }
            Damage::DataByte(at, byte) => {
                // In a verification window: bytes between them are trusted as the user's own
                // (the directory is 0700, checked to be theirs alone), as docs/cache.md says.
                let mut bytes = std::fs::read(&data).unwrap();
                let len = bytes.len();
                let head = len.min(HEAD_BYTES as usize);
                let tail = len.min(WINDOW_BYTES as usize);
                let at = at.index(head + tail);
                let at = if at < head {
                    at
                } else {
                    len - tail + (at - head)
                };
                bytes[at] = *byte;
                std::fs::write(data, bytes).unwrap();
            }
            Damage::DataLen(len) => {
                let file = std::fs::OpenOptions::new().write(true).open(&data).unwrap();
                let len = len.index(file.metadata().unwrap().len() as usize * 2 + 1);
                file.set_len(len as u64).unwrap();
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]
        #[test]
        fn any_entry_on_disk_gives_what_no_cache_gives(
            size in 1usize..40_000,
            damages in prop::collection::vec(damage(), 0..3),
            change in change(),
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let host = host_with(&[("a", lines(1, size))]);
            fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
            for damage in &damages {
                apply(tmp.path(), damage);
            }
            let path = session_path(&host, "a");
            let mut now = host.contents(&path).unwrap();
            match change {
                Change::None => {}
                Change::Append(n) => {
                    host.append(&path, lines(2, n));
                    now.extend_from_slice(&lines(2, n));
                }
                Change::Rewrite(at, byte) => {
                    let at = at.index(now.len());
                    now[at] = byte;
                    host.rewrite(&path, &now);
                }
                Change::Truncate(len) => {
                    let len = len.index(now.len());
                    host.truncate(&path, len as u64);
                    now.truncate(len);
                }
            }
            let got = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
            prop_assert_eq!(&got[0].0, &content(&now));
            prop_assert_eq!(vec![got[0].0.clone()], uncached(&host));
        }

        /// With `--verify` no byte is trusted on either side: a byte of the cached data changed
        /// anywhere, and a byte of the file rewritten anywhere with its mtime and ctime set back
        /// (what the windows and the stat cannot see), still give what no cache gives.
        #[test]
        fn verified_any_byte_changed_anywhere_gives_what_no_cache_gives(
            size in 1usize..40_000,
            cached in prop::option::of((any::<prop::sample::Index>(), any::<u8>())),
            rewritten in prop::option::of((any::<prop::sample::Index>(), any::<u8>())),
            appended in 0usize..3000,
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let host = host_with(&[("a", lines(1, size))]);
            fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
            if let Some((at, byte)) = cached {
                let data = entry_file(tmp.path(), "data");
                let mut bytes = std::fs::read(&data).unwrap();
                let at = at.index(bytes.len());
                bytes[at] = byte;
                std::fs::write(data, bytes).unwrap();
            }
            let path = session_path(&host, "a");
            let (_, mtime, _, ctime) = host.stat(&path).unwrap();
            let mut now = host.contents(&path).unwrap();
            if let Some((at, byte)) = rewritten {
                let at = at.index(now.len());
                now[at] = byte;
                host.rewrite(&path, &now);
                host.set_mtime(&path, mtime);
                host.set_ctime(&path, ctime);
            }
            if appended > 0 {
                host.append(&path, lines(2, appended));
                now.extend_from_slice(&lines(2, appended));
            }
            let got = fetch(&open_verifying(tmp.path()), &host);
            prop_assert_eq!(&got[0].0, &content(&now));
            prop_assert_eq!(vec![got[0].0.clone()], uncached(&host));
        }
    }
}

fn open_verifying(dir: &Path) -> Cache {
    Cache::open(CacheOptions {
        dir: Some(dir.to_path_buf()),
        max_bytes: DEFAULT_MAX_BYTES,
        enabled: true,
        verify: true,
    })
    .unwrap()
}

/// A same-size rewrite in the middle that leaves the windows, the size, the inode, the mtime
/// and the ctime as cached (what a write within the second of the caching listing leaves, or
/// one who sets the clock back): the windows serve the old bytes; `--verify` does not.
#[test]
fn a_rewrite_that_the_stat_and_the_windows_miss_is_caught_by_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let old = lines(1, 50_000);
    let host = host_with(&[("a", old.clone())]);
    let path = session_path(&host, "a");
    fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    let (_, mtime, inode, ctime) = host.stat(&path).unwrap();
    let mut new = old.clone();
    new[20_000..20_010].copy_from_slice(b"SAME STAT!");
    host.rewrite(&path, &new);
    host.set_mtime(&path, mtime);
    host.set_ctime(&path, ctime);
    assert_eq!(host.stat(&path).unwrap(), (50_000, mtime, inode, ctime));

    // What the windows decide: the old bytes (the case docs/cache.md names).
    let stale = fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    assert_eq!(stale[0], (content(&old), WINDOWS));
    // Verified: the host's digest differs, so the file is fetched whole.
    let got = fetch(&open_verifying(tmp.path()), &host);
    assert_eq!(got[0], (content(&new), 50_000));
    assert_eq!(vec![got[0].0.clone()], uncached(&host));
    // And unchanged since: served from the cache, no byte more than the windows moved.
    let again = fetch(&open_verifying(tmp.path()), &host);
    assert_eq!(again[0], (content(&new), WINDOWS));
}

/// Verified, an appended file moves what was appended, and a file the host cannot hash any
/// more (gone) is the read's own error, the other files served.
#[test]
fn verify_keeps_appends_cheap_and_failures_their_own() {
    let tmp = tempfile::tempdir().unwrap();
    let mut a = lines(1, 100_000);
    let b = lines(2, 30_000);
    let host = host_with(&[("a", a.clone()), ("b", b.clone())]);
    fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    let more = lines(3, 999);
    host.append(session_path(&host, "a"), &more);
    a.extend_from_slice(&more);
    let got = fetch(&open_verifying(tmp.path()), &host);
    assert_eq!(got[0], (content(&a), WINDOWS + 999));
    assert_eq!(got[1], (content(&b), WINDOWS));

    let listing = listed(&host);
    host.remove(session_path(&host, "b"));
    let got = block_on(open_verifying(tmp.path()).fetch_many(&host, &listing)).unwrap();
    assert_eq!(content(&got[0].as_ref().unwrap().bytes), content(&a));
    assert!(
        matches!(got[1], Err(HostError::NotFound { .. })),
        "{:?}",
        got[1]
    );
}

/// A memory host without a hash tool: [`Host::hash_prefixes`] as the trait answers by
/// default.
struct NoHashTool(MemoryHost);

impl Host for NoHashTool {
    fn name(&self) -> &str {
        self.0.name()
    }
    async fn list(&self, roots: &[RootSpec]) -> Result<clankie_model::Listing, HostError> {
        self.0.list(roots).await
    }
    async fn read(
        &self,
        file: &FileRef,
        ranges: &[ByteRange],
    ) -> Result<clankie_model::ReadResult, HostError> {
        self.0.read(file, ranges).await
    }
}

#[test]
fn a_host_without_a_hash_tool_is_checked_by_its_windows_and_said_so() {
    let tmp = tempfile::tempdir().unwrap();
    let old = lines(1, 50_000);
    let host = host_with(&[("a", old.clone())]);
    fetch(&open(tmp.path(), DEFAULT_MAX_BYTES), &host);
    let plain = NoHashTool(host);
    let cache = open_verifying(tmp.path());
    assert!(!cache.verified_by_windows("devbox"));
    let got = block_on(cache.fetch_many(&plain, &listed(&plain.0))).unwrap();
    let got = got[0].as_ref().unwrap();
    assert_eq!((content(&got.bytes), got.moved), (content(&old), WINDOWS));
    assert!(cache.verified_by_windows("devbox"));
}

/// A memory host that takes `read_many` calls of several read calls' worth once `larger` is
/// set (as an SSH connection does once it has timed its batches' two ways), and counts what
/// each call asked.
struct LargerCalls {
    host: MemoryHost,
    larger: std::sync::atomic::AtomicBool,
    asked: std::sync::Mutex<Vec<u64>>,
}

impl Host for LargerCalls {
    fn name(&self) -> &str {
        self.host.name()
    }
    async fn list(&self, roots: &[RootSpec]) -> Result<clankie_model::Listing, HostError> {
        self.host.list(roots).await
    }
    async fn read(
        &self,
        file: &FileRef,
        ranges: &[ByteRange],
    ) -> Result<clankie_model::ReadResult, HostError> {
        self.host.read(file, ranges).await
    }
    fn read_many_bytes(&self) -> u64 {
        if self.larger.load(std::sync::atomic::Ordering::Relaxed) {
            clankie_model::limits::MAX_BATCH_BYTES
        } else {
            MAX_READ_BYTES
        }
    }
    async fn read_many(
        &self,
        reads: &[(FileRef, Vec<ByteRange>)],
    ) -> Result<Vec<Result<clankie_model::ReadResult, HostError>>, HostError> {
        let asked = reads.iter().flat_map(|(_, r)| r).map(|r| r.len).sum();
        self.asked.lock().unwrap().push(asked);
        // The choice is made while the first round's calls are in flight.
        self.larger
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.host.read_many(reads).await
    }
}

#[test]
fn rounds_after_the_first_ask_the_host_s_larger_calls_and_each_byte_moves_once() {
    let tmp = tempfile::tempdir().unwrap();
    let big = lines(3, (40 * MAX_READ_BYTES + 777) as usize);
    let small = lines(4, 30_000);
    let host = LargerCalls {
        host: host_with(&[("a", big.clone()), ("b", small.clone())]),
        larger: false.into(),
        asked: Default::default(),
    };
    let cache = open(tmp.path(), DEFAULT_MAX_BYTES);
    let got = block_on(cache.fetch_many(&host, &listed(&host.host))).unwrap();
    let got: Vec<(Content, u64)> = got
        .into_iter()
        .map(|f| {
            let f = f.unwrap();
            (content(&f.bytes), f.moved)
        })
        .collect();
    assert_eq!(
        got,
        [
            (content(&big), big.len() as u64),
            (content(&small), small.len() as u64)
        ]
    );
    let asked = host.asked.lock().unwrap().clone();
    // The first round: 4 MiB calls; the later ones up to the larger size, most of them full.
    assert!(
        asked
            .iter()
            .all(|&a| a <= clankie_model::limits::MAX_BATCH_BYTES),
        "{asked:?}"
    );
    let larger = asked.iter().filter(|&&a| a > MAX_READ_BYTES).count();
    assert!(larger >= 6, "{asked:?}");
    assert!(asked.len() < 20, "{asked:?}");
}
