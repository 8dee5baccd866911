//! The local cache of session bytes that `grep` searches: the bytes of each session
//! file fetched from a host through the read primitive are kept under the user's cache
//! directory (`$XDG_CACHE_HOME/clankie-read`, else `~/.cache/clankie-read`; directories 0700,
//! files 0600), keyed by host, harness and path. A later fetch reads only what was appended
//! since, after checking that the cached prefix is still the file's (the same verification
//! windows as cursors, the same inode, and for a file of the cached size, the cached mtime and
//! ctime), and fetches again a file whose prefix changed. `docs/cache.md` says what a rewrite
//! would have to do to be missed. A directory another user could change is refused
//! ([`CacheError::Unsafe`]).
//!
//! Used by the driver side only (it reads through [`Host`]); it never parses transcripts.
//! The local host is not cached (its files are already on this disk): callers read it
//! directly.
//!
//! How a fetch goes ([`Cache::fetch_many`]): every file of the call is planned at once and
//! read through [`Host::read_many`] in groups, so thousands of unchanged files cost a few
//! remote commands. A cached file's first read holds its verification windows and what follows
//! the cached end; an uncached one's, its start. Later rounds read on, `MAX_READ_BYTES` a file.
//! Bytes go to disk as they arrive (appended to the data file, or into a temporary file renamed
//! over it), and what comes back is a map of the file: a call never holds many big files in
//! memory. `store` has the files on disk.
//!
//! Runs that share the directory (two processes, or two hosts' fetches of one process) never
//! write one entry at once: a fetch holds the entry's lock file, and a fetch that finds it held
//! reads that file into a private temporary file and keeps nothing of it. A SQLite database is
//! never kept (its pages change anywhere in it).

mod store;

use std::collections::HashSet;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use clankie_host::{FileRef, Host, HostError};
use clankie_model::limits::MAX_READ_BYTES;
use clankie_model::{ByteRange, FileEntry, display_path};
use futures_util::stream::{self, StreamExt};
use store::{Listed, Meta, Store, windows};

/// The default bound of the cache's size on disk (`--cache-max`): 2 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 2 << 30;

/// How a cache is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheOptions {
    /// The directory; `None` is [`default_dir`].
    pub dir: Option<PathBuf>,
    /// The bound of the cache's size on disk; least recently used files go first.
    pub max_bytes: u64,
    /// `false` is `--no-cache`: fetch everything, keep nothing after the run.
    pub enabled: bool,
    /// `--verify`: a cached prefix is used only when the host's hash of those bytes is the
    /// cached copy's (where the host has a hash tool; else its windows decide, as without).
    pub verify: bool,
}

impl Default for CacheOptions {
    fn default() -> CacheOptions {
        CacheOptions {
            dir: None,
            max_bytes: DEFAULT_MAX_BYTES,
            enabled: true,
            verify: false,
        }
    }
}

/// Errors of the cache itself (its directory and files), each one line.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("cache {path}: {reason}")]
    Io { path: String, reason: String },
    #[error("cache: neither $XDG_CACHE_HOME nor $HOME is set")]
    NoDirectory,
    /// A directory another user could change (or reached through their symlink): refused as
    /// OpenSSH refuses such a `~/.ssh`.
    #[error("cache {path}: {reason}, so it is not used")]
    Unsafe { path: String, reason: String },
}

/// The bytes of one file as fetched: its whole current content, up to the size the host
/// reported.
#[derive(Debug)]
pub struct Fetched {
    pub bytes: FetchedBytes,
    /// Bytes read through the host for this file (appended bytes and verification windows).
    pub moved: u64,
}

/// A fetched file's bytes: in memory, or a map of a file (the cache's data file, or a
/// temporary file already unlinked).
#[derive(Debug)]
pub struct FetchedBytes(Bytes);

#[derive(Debug)]
enum Bytes {
    Memory(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl FetchedBytes {
    /// The first `len` bytes of `file`, mapped.
    fn map(file: &File, len: u64) -> std::io::Result<FetchedBytes> {
        if len == 0 {
            // A map of no bytes is an error; nothing to map anyway.
            return Ok(FetchedBytes(Bytes::Memory(Vec::new())));
        }
        let len = usize::try_from(len).map_err(std::io::Error::other)?;
        // SAFETY: a map is only sound while no one truncates or rewrites the mapped bytes.
        // The cache never does either to a data file: it appends past what is mapped, or
        // renames a new file over it (the mapped inode lives on), and temporary files are
        // this process's own. Another program truncating the cache's 0600 files under a
        // running search could still fault it; ripgrep makes the same trade for speed.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(file)? };
        Ok(FetchedBytes(Bytes::Mapped(map)))
    }
}

impl std::ops::Deref for FetchedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Bytes::Memory(bytes) => bytes,
            Bytes::Mapped(map) => map,
        }
    }
}

/// One cached file, as `cache ls` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedFileInfo {
    pub host: String,
    pub harness: String,
    /// The file's full path on the host.
    pub path: Vec<u8>,
    pub bytes: u64,
    /// When it was last used (seconds since the epoch).
    pub used: u64,
}

/// What [`Cache::clear`] removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cleared {
    pub files: u64,
    pub bytes: u64,
}

/// The cache directory when none is given: `$XDG_CACHE_HOME/clankie-read`, else
/// `$HOME/.cache/clankie-read`.
pub fn default_dir() -> Result<PathBuf, CacheError> {
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("clankie-read"));
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".cache").join("clankie-read")),
        None => Err(CacheError::NoDirectory),
    }
}

/// A cache of session bytes. One cache may serve several hosts' fetches at once (`&self`);
/// two processes may share a directory.
#[derive(Debug)]
pub struct Cache {
    options: CacheOptions,
    /// The directory, made when the cache is enabled.
    store: Store,
    /// The cached bytes as last counted plus what this process wrote since (`None`: not
    /// counted yet): eviction scans the directory only when this is over the bound.
    counted: Mutex<Option<u64>>,
    /// The entries this process fetched: evicted last.
    used_now: Mutex<HashSet<String>>,
    /// The hosts that `verify` found without a hash tool (their windows decided).
    unhashed: Mutex<HashSet<String>>,
}

/// `read_many` calls of one fetch in flight at once: each is one exec on its own channel of
/// the connection, so the host's shells, the link and the decoding of the replies before
/// overlap; at most this many replies of one batched exec each are in memory.
const CALLS_AT_ONCE: usize = 4;

/// What a file asks ahead in one round of reads (in reads of `MAX_READ_BYTES`): enough to
/// keep [`CALLS_AT_ONCE`] calls busy on one big file. A read that comes back out of step
/// (the file shrank or was cut short while read) drops the rest of the round's replies for
/// that file, which the next round asks again.
const AHEAD_BYTES: u64 = 16 * MAX_READ_BYTES;

/// What a file asks in a fetch's first round: a few reads, so that an SSH connection times its
/// batches' two ways (`ssh/bulk.rs`: four of each, after the four in flight) while the first
/// round's calls are in flight, and the later rounds' calls are cut to its larger batches
/// (`Host::read_many_bytes`).
const FIRST_AHEAD_BYTES: u64 = 4 * MAX_READ_BYTES;

/// Files fetched at once: each holds up to two open files (its entry's lock, and its data or
/// temporary file) until it is done, and several hosts may fetch at once within the usual
/// limit of 1024 open files. 128 files' windows are 1 MiB: a verification of unchanged files
/// still takes one remote command per 128 of them.
const FILES_AT_ONCE: usize = 128;

/// A file read again from its start this many times (it shrank while read) is given up.
const MAX_RESTARTS: u32 = 3;

/// An entry's last use is written again when it is older than this (seconds): a search of
/// thousands of unchanged files should not rewrite thousands of metadata files.
const USED_SLACK: u64 = 600;

impl Cache {
    /// Opens the cache `options` describe, making its directory (0700) when missing. A cache
    /// opened with `enabled: false` makes nothing, and still lists and clears what is there.
    pub fn open(options: CacheOptions) -> Result<Cache, CacheError> {
        let dir = match &options.dir {
            Some(dir) => dir.clone(),
            None => default_dir()?,
        };
        let store = if options.enabled {
            let store = Store::open(dir)?;
            store::check_safe(store.dir()).map_err(|reason| CacheError::Unsafe {
                path: store.dir().display().to_string(),
                reason,
            })?;
            store
        } else {
            Store::at(dir)
        };
        Ok(Cache {
            options,
            store,
            counted: Mutex::new(None),
            used_now: Mutex::new(HashSet::new()),
            unhashed: Mutex::new(HashSet::new()),
        })
    }

    /// The options it was opened with.
    pub fn options(&self) -> &CacheOptions {
        &self.options
    }

    /// The cache's directory.
    pub fn dir(&self) -> &std::path::Path {
        self.store.dir()
    }

    /// Whether `--verify` found `host` without a hash tool this run: its cached files were
    /// checked by their windows alone.
    pub fn verified_by_windows(&self, host: &str) -> bool {
        self.unhashed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(host)
    }

    /// The current bytes of each file of `host`, in order (one file's failure is its own;
    /// an error for the host as a whole ends the call). The local host is read directly,
    /// and nothing of it is kept.
    pub async fn fetch_many<H: Host>(
        &self,
        host: &H,
        files: &[FileEntry],
    ) -> Result<Vec<Result<Fetched, HostError>>, HostError> {
        // "local" is reserved for this machine (the hosts file refuses it as a name).
        if host.name() == "local" {
            let mut out = Vec::with_capacity(files.len());
            for entry in files {
                match fetch_whole(host, entry).await {
                    Err(e) if e.is_host_wide() => return Err(e),
                    result => out.push(result),
                }
            }
            return Ok(out);
        }
        let now = now();
        let mut out = Vec::with_capacity(files.len());
        for chunk in files.chunks(FILES_AT_ONCE) {
            let (fetched, added) = self.fetch_chunk(host, chunk, now).await?;
            out.extend(fetched);
            if self.options.enabled {
                // Eviction is housekeeping: a failure of it leaves a cache over its bound,
                // which the next chunk or run evicts again; the bytes fetched are good.
                let _ = self.evict(added);
            }
        }
        Ok(out)
    }

    /// [`Cache::fetch_many`] of at most [`FILES_AT_ONCE`] files: the fetched files and the
    /// bytes this added to the cache.
    async fn fetch_chunk<H: Host>(
        &self,
        host: &H,
        files: &[FileEntry],
        now: u64,
    ) -> Result<(Vec<Result<Fetched, HostError>>, u64), HostError> {
        let mut jobs: Vec<Job> = files
            .iter()
            .map(|entry| self.start(host.name(), entry))
            .collect();
        if self.options.verify {
            self.verify_by_hash(host, &mut jobs).await?;
        }
        for round in 0.. {
            let ahead = if round == 0 {
                FIRST_AHEAD_BYTES
            } else {
                AHEAD_BYTES
            };
            let pending: Vec<(usize, Vec<ByteRange>)> = jobs
                .iter()
                .enumerate()
                .flat_map(|(i, job)| {
                    job.next_reads(ahead)
                        .into_iter()
                        .map(move |ranges| (i, ranges))
                })
                .collect();
            if pending.is_empty() {
                break;
            }
            // The calls are made first (nothing runs until polled; a closure inside the stream
            // would make the tasks that call this not `Send` for every lifetime), then run
            // `CALLS_AT_ONCE` at a time and taken in order as each ends: the link and the
            // host's shells stay busy while the replies before are written out.
            let mut calls = Vec::new();
            // A `read_many` call asks what one batched exec of the host reads (its reply in
            // memory until written out).
            for group in groups(pending, host.read_many_bytes()) {
                let reads: Vec<(FileRef, Vec<ByteRange>)> = group
                    .iter()
                    .map(|(i, ranges)| (jobs[*i].file.clone(), ranges.clone()))
                    .collect();
                calls.push(async move {
                    let results = host.read_many(&reads).await;
                    (group, reads.len(), results)
                });
            }
            let mut replies = stream::iter(calls).buffered(CALLS_AT_ONCE);
            while let Some((group, asked, results)) = replies.next().await {
                let results = results?;
                if results.len() != asked {
                    return Err(HostError::Protocol {
                        host: host.name().to_string(),
                        reason: format!(
                            "{} results to a batched read of {asked} files",
                            results.len(),
                        ),
                    });
                }
                for ((i, ranges), result) in group.into_iter().zip(results) {
                    let job = &mut jobs[i];
                    job.take(&self.store, &ranges, result, self.options.enabled);
                }
            }
        }
        let mut added = 0u64;
        let mut used = Vec::new();
        let out: Vec<Result<Fetched, HostError>> = jobs
            .into_iter()
            .map(|job| {
                let finished = job.finish(&self.store, host.name(), self.options.max_bytes, now);
                if let Some((key, grown)) = finished.kept {
                    added += grown;
                    used.push(key);
                }
                finished.result
            })
            .collect();
        self.used_now
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(used);
        Ok((out, added))
    }

    /// `--verify`: the host hashes the cached prefix of every file whose entry its listing
    /// left to verify, and one whose digest is not its cached copy's (or that the host could
    /// not hash) is fetched whole. A host without a hash tool leaves them to their windows.
    async fn verify_by_hash<H: Host>(&self, host: &H, jobs: &mut [Job]) -> Result<(), HostError> {
        let asked: Vec<(usize, u64)> = jobs
            .iter()
            .enumerate()
            .filter_map(|(i, job)| match &job.state {
                State::Verify { meta } => Some((i, meta.size)),
                _ => None,
            })
            .collect();
        if asked.is_empty() {
            return Ok(());
        }
        let files: Vec<(FileRef, u64)> = asked
            .iter()
            .map(|&(i, size)| (jobs[i].file.clone(), size))
            .collect();
        let Some(hashed) = host.hash_prefixes(&files).await? else {
            self.unhashed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(host.name().to_string());
            return Ok(());
        };
        if hashed.len() != files.len() {
            return Err(HostError::Protocol {
                host: host.name().to_string(),
                reason: format!(
                    "{} digests for a hash of {} files",
                    hashed.len(),
                    files.len()
                ),
            });
        }
        for ((i, size), result) in asked.into_iter().zip(hashed) {
            let job = &mut jobs[i];
            let same = match result {
                Ok(hashed) => {
                    hashed.size >= size
                        && job.key.as_deref().is_some_and(|key| {
                            self.store
                                .data_digest(key, size, hashed.algorithm)
                                .is_ok_and(|digest| digest == hashed.digest)
                        })
                }
                Err(e) if e.is_host_wide() => return Err(e),
                // The read that follows says why, if the file still cannot be read.
                Err(_) => false,
            };
            if !same {
                job.state = job.restart(&self.store, self.options.enabled);
            }
        }
        Ok(())
    }

    /// Plans the fetch of one file: from its cached entry when there is a sound one this
    /// call may use, else whole.
    fn start(&self, host: &str, entry: &FileEntry) -> Job {
        let file = FileRef {
            harness: entry.harness,
            root: entry.root.to_vec(),
            rel: entry.rel.clone(),
        };
        let path = entry.full_path();
        let harness = entry.harness.name();
        let mut job = Job {
            host: host.to_string(),
            file,
            path,
            hint: entry.size,
            listed: Listed {
                mtime: entry.mtime,
                inode: entry.inode,
                ctime: entry.ctime,
            },
            key: None,
            lock: None,
            state: State::Failed(None),
            target: None,
            moved: 0,
            restarts: 0,
        };
        let private = |job: &mut Job| {
            // Not kept: an unlinked temporary file (under the cache directory when there is
            // one, so that a big file does not land on a small /tmp).
            let file = if self.options.enabled {
                tempfile::tempfile_in(self.store.dir())
            } else {
                tempfile::tempfile()
            };
            job.state = match file {
                Ok(file) => State::Fresh {
                    sink: Sink::Private(file),
                    pos: 0,
                },
                Err(e) => State::Failed(Some(job.cache_failure(&e))),
            };
        };
        if !self.options.enabled || !appends_only(entry) {
            private(&mut job);
            return job;
        }
        let key = Store::key(host, harness, &job.path);
        match self.store.try_lock_entry(&key) {
            Ok(Some(lock)) => job.lock = Some(lock),
            // Another fetch holds the entry: this one keeps nothing of it.
            Ok(None) | Err(_) => {
                private(&mut job);
                return job;
            }
        }
        if entry.size > self.options.max_bytes {
            // Too big to keep: what was kept of it (when it was smaller) goes.
            self.store.remove(&key);
            private(&mut job);
            return job;
        }
        job.state = match self.store.load(&key, host, harness, &job.path) {
            Some(meta) if unchanged_or_grown(entry, &meta) => State::Verify { meta },
            _ => match self.store.temp() {
                Ok(temp) => State::Fresh {
                    sink: Sink::Temp(temp),
                    pos: 0,
                },
                Err(e) => State::Failed(Some(job.cache_failure(&e))),
            },
        };
        job.key = Some(key);
        job
    }

    /// Evicts least recently used entries (this process's last) until the cache is within
    /// its bound, counting it first when it was not counted yet.
    fn evict(&self, added: u64) -> Result<(), CacheError> {
        let mut counted = self.counted.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(total) = counted.as_mut() {
            *total += added;
            if *total <= self.options.max_bytes {
                return Ok(());
            }
        }
        let _dir_lock = self.store.lock_dir()?;
        let used_now = self.used_now.lock().unwrap_or_else(PoisonError::into_inner);
        let mut entries = self.store.scan()?;
        let mut total: u64 = entries.iter().map(|(_, _, bytes)| bytes).sum();
        // An entry without sound metadata goes first, then the least recently used.
        entries.sort_by_key(|(key, meta, _)| {
            (used_now.contains(key), meta.as_ref().map_or(0, |m| m.used))
        });
        for (key, _, bytes) in entries {
            if total <= self.options.max_bytes {
                break;
            }
            // An entry being fetched into stays.
            if let Ok(Some(_lock)) = self.store.try_lock_entry(&key) {
                self.store.remove(&key);
                self.store.remove_lock(&key);
                total -= bytes;
            }
        }
        *counted = Some(total);
        Ok(())
    }

    /// The cached files, of one host or of all, by host, harness and path.
    pub fn entries(&self, host: Option<&str>) -> Result<Vec<CachedFileInfo>, CacheError> {
        let mut out: Vec<CachedFileInfo> = self
            .store
            .scan()?
            .into_iter()
            .filter_map(|(_, meta, _)| meta)
            .filter(|meta| host.is_none_or(|h| h == meta.host))
            .map(|meta| CachedFileInfo {
                path: meta.path_bytes(),
                host: meta.host,
                harness: meta.harness,
                bytes: meta.size,
                used: meta.used,
            })
            .collect();
        out.sort_by(|a, b| (&a.host, &a.harness, &a.path).cmp(&(&b.host, &b.harness, &b.path)));
        Ok(out)
    }

    /// Removes the cached files of one host, or all (then also what is not a sound entry:
    /// leftovers of runs that ended early). An entry another run is fetching into stays.
    pub fn clear(&self, host: Option<&str>) -> Result<Cleared, CacheError> {
        let mut cleared = Cleared::default();
        if !self.store.dir().exists() {
            return Ok(cleared);
        }
        let _dir_lock = self.store.lock_dir()?;
        for (key, meta, bytes) in self.store.scan()? {
            let ours = match (&meta, host) {
                (_, None) => true,
                (Some(meta), Some(host)) => meta.host == host,
                (None, Some(_)) => false,
            };
            if !ours {
                continue;
            }
            if let Ok(Some(_lock)) = self.store.try_lock_entry(&key) {
                self.store.remove(&key);
                self.store.remove_lock(&key);
                if meta.is_some() {
                    cleared.files += 1;
                    cleared.bytes += bytes;
                }
            }
        }
        if host.is_none() {
            self.store.remove_temps();
        }
        *self.counted.lock().unwrap_or_else(PoisonError::into_inner) = None;
        Ok(cleared)
    }
}

/// Whether the listing of `entry` leaves its cached copy `meta` worth verifying: the same
/// file (inode) at the same size, mtime and ctime (unchanged, or rewritten within the same
/// second without growing: the windows check that), or the same file grown (appended to, or
/// rewritten longer: the windows check that). Another inode is another file (one renamed over
/// it); the same size with another mtime or ctime is a file written in place whose changed part
/// cannot be located: both are fetched whole, whatever their windows say. An inode or ctime
/// that either side lacks (a listing mode without them) is not compared: the size and mtime
/// decide. An entry kept without an mtime (the file grew past its listed size while it was
/// fetched, or a metadata file that lost it) is checked by its windows only once the file has
/// grown past it: at the same size nothing tells an unchanged file from one rewritten in place.
fn unchanged_or_grown(entry: &FileEntry, meta: &Meta) -> bool {
    let differs = |cached: Option<i64>, listed: Option<i64>| matches!((cached, listed), (Some(a), Some(b)) if a != b);
    let other_inode = matches!((meta.inode, entry.inode), (Some(a), Some(b)) if a != b);
    if other_inode {
        return false;
    }
    entry.size > meta.size
        || (entry.size == meta.size
            && meta.mtime == Some(entry.mtime)
            && !differs(meta.ctime, entry.ctime))
}

/// Whether a file only grows at its end or is written anew, so that its verification windows
/// tell whether a cached copy is a prefix of it. An SQLite database changes pages anywhere
/// (and its change counter need not move in WAL mode): it is fetched whole, never kept.
// TODO(#17): cache databases as pages, verified as the SQLite reader copies them.
fn appends_only(entry: &FileEntry) -> bool {
    !entry.harness.is_sqlite() || entry.rel.ends_with(b".json")
}

/// Splits planned reads into `read_many` calls of at most `bound` bytes asked (at least one
/// file each).
fn groups(pending: Vec<(usize, Vec<ByteRange>)>, bound: u64) -> Vec<Vec<(usize, Vec<ByteRange>)>> {
    let mut out: Vec<Vec<(usize, Vec<ByteRange>)>> = Vec::new();
    let mut total = 0;
    for read in pending {
        let cost: u64 = read.1.iter().map(|r| r.len).sum();
        match out.last_mut() {
            Some(group) if total + cost <= bound => {
                total += cost;
                group.push(read);
            }
            _ => {
                total = cost;
                out.push(vec![read]);
            }
        }
    }
    out
}

/// One file's fetch through the rounds of [`Cache::fetch_many`].
struct Job {
    /// The host's name, for errors.
    host: String,
    file: FileRef,
    /// The file's full path on the host.
    path: Vec<u8>,
    /// Its size as listed: what the first read asks for.
    hint: u64,
    /// Its mtime, inode and ctime as listed: kept with the entry.
    listed: Listed,
    /// The entry's key, when this fetch may keep the file.
    key: Option<String>,
    /// The entry's lock, held to the end of the fetch.
    lock: Option<File>,
    state: State,
    /// The size the file had when its reading started: it is read up to there.
    target: Option<u64>,
    moved: u64,
    restarts: u32,
}

enum State {
    /// A sound entry, whose windows the first read checks.
    Verify { meta: Meta },
    /// Checked: the bytes from `pos` on are appended to the data file.
    Append { meta: Meta, data: File, pos: u64 },
    /// Fetched whole, from its start, into `sink`.
    Fresh { sink: Sink, pos: u64 },
    /// Failed (`None` only while a job is being made).
    Failed(Option<HostError>),
}

/// Where a file fetched whole goes.
enum Sink {
    /// A named temporary file in the cache directory, renamed over the data file at the end.
    Temp(tempfile::NamedTempFile),
    /// An unlinked temporary file: nothing kept.
    Private(File),
}

impl Sink {
    fn file(&self) -> &File {
        match self {
            Sink::Temp(temp) => temp.as_file(),
            Sink::Private(file) => file,
        }
    }
}

/// How a job ended: its result, and the entry it kept with the bytes it added to the cache.
struct Finished {
    result: Result<Fetched, HostError>,
    kept: Option<(String, u64)>,
}

impl Job {
    /// The reads of this job's next round, each the ranges of one read, in the file's order;
    /// none when it is done. A cached file's round is its verification; a file read from a
    /// known position asks up to [`AHEAD_BYTES`] at once, in reads of `MAX_READ_BYTES`, up to
    /// the size it had when its reading started (before the first reply: the listed size).
    fn next_reads(&self, ahead: u64) -> Vec<Vec<ByteRange>> {
        match &self.state {
            State::Verify { meta, .. } => {
                let [head, tail] = windows(meta.size);
                let room = MAX_READ_BYTES - head.len - tail.len;
                let mut ranges = vec![head, tail];
                // The listing says it grew: the first of what follows comes with the check.
                let ahead = self.hint.saturating_sub(meta.size).min(room);
                if ahead > 0 {
                    ranges.push(ByteRange::new(meta.size, ahead));
                }
                vec![ranges]
            }
            State::Append { pos, .. } | State::Fresh { pos, .. } => {
                let (start, end) = match self.target {
                    // The first read always goes (its reply gives the size), the listed size
                    // says how many more go with it.
                    None => (0, self.hint.max(1)),
                    Some(target) if *pos < target => (*pos, target),
                    Some(_) => return Vec::new(),
                };
                let end = end.min(start.saturating_add(ahead));
                let mut reads = Vec::new();
                let mut at = start;
                while at < end {
                    let len = (end - at).min(MAX_READ_BYTES);
                    reads.push(vec![ByteRange::new(at, len)]);
                    at += len;
                }
                reads
            }
            State::Failed(_) => Vec::new(),
        }
    }

    /// Takes the reply to the read of `ranges`.
    fn take(
        &mut self,
        store: &Store,
        ranges: &[ByteRange],
        result: Result<clankie_model::ReadResult, HostError>,
        keep: bool,
    ) {
        // A read of a round that no longer follows what was written (a reply before it came
        // short, failed, or started the file over) is dropped, and so is its error: the next
        // round asks again.
        let in_step = match (&self.state, self.target) {
            (State::Failed(_), _) => false,
            (State::Append { pos, .. } | State::Fresh { pos, .. }, Some(_)) => {
                ranges.first().is_some_and(|r| r.start == *pos)
            }
            _ => true,
        };
        let reply = match result {
            Ok(reply) => reply,
            Err(e) => {
                if in_step {
                    self.state = State::Failed(Some(e));
                }
                return;
            }
        };
        self.moved += reply.chunks.iter().map(|c| c.len() as u64).sum::<u64>();
        if !in_step {
            return;
        }
        let state = std::mem::replace(&mut self.state, State::Failed(None));
        self.state = match state {
            State::Verify { meta } => {
                let sound = reply.size >= meta.size
                    && reply.chunks.len() >= 2
                    && meta.windows_match(&reply.chunks[0], &reply.chunks[1]);
                let key = self.key.as_deref().unwrap_or_default();
                if sound {
                    self.target = Some(reply.size);
                    let appended = reply.chunks.get(2).map_or(&[][..], Vec::as_slice);
                    let pos = meta.size;
                    match store.open_data(key) {
                        Ok(data) => self.write(State::Append { meta, data, pos }, appended),
                        Err(e) => State::Failed(Some(self.cache_failure(&e))),
                    }
                } else {
                    // Rewritten or truncated: fetched again from its start, never served.
                    self.restart(store, keep)
                }
            }
            State::Append { .. } | State::Fresh { .. } if self.target.is_none() => {
                self.target = Some(reply.size);
                let chunk = reply.chunks.first().map_or(&[][..], Vec::as_slice);
                self.write(state, chunk)
            }
            State::Append { pos, .. } | State::Fresh { pos, .. } if reply.size < pos => {
                // It shrank while read: what was read is not a prefix of it any more.
                self.restarts += 1;
                if self.restarts > MAX_RESTARTS {
                    State::Failed(Some(HostError::Io {
                        host: self.host.clone(),
                        path: display_path(&self.path),
                        reason: "the file keeps shrinking while it is read".into(),
                    }))
                } else {
                    self.restart(store, keep)
                }
            }
            state => {
                let chunk = reply.chunks.first().map_or(&[][..], Vec::as_slice);
                if chunk.is_empty() {
                    // Nothing more where the size said there was: read no further.
                    self.target = Some(ranges.first().map_or(0, |r| r.start));
                }
                self.write(state, chunk)
            }
        };
    }

    /// Starts the file over, into a new temporary file.
    fn restart(&mut self, store: &Store, keep: bool) -> State {
        self.target = None;
        let sink = if keep && self.key.is_some() {
            store.temp().map(Sink::Temp)
        } else {
            tempfile::tempfile().map(Sink::Private)
        };
        match sink {
            Ok(sink) => State::Fresh { sink, pos: 0 },
            Err(e) => State::Failed(Some(self.cache_failure(&e))),
        }
    }

    /// Writes `chunk` at the end of what `state` holds.
    fn write(&mut self, state: State, chunk: &[u8]) -> State {
        let len = chunk.len() as u64;
        let written = match &state {
            State::Append { data, .. } => (&*data).write_all(chunk),
            State::Fresh { sink, .. } => sink.file().write_all(chunk),
            _ => Ok(()),
        };
        if let Err(e) = written {
            return State::Failed(Some(self.cache_failure(&e)));
        }
        match state {
            State::Append { meta, data, pos } => State::Append {
                meta,
                data,
                pos: pos + len,
            },
            State::Fresh { sink, pos } => State::Fresh {
                sink,
                pos: pos + len,
            },
            state => state,
        }
    }

    /// Maps what was fetched, and records it in the cache when it is kept.
    fn finish(self, store: &Store, host: &str, max_bytes: u64, now: u64) -> Finished {
        let failed = |e: HostError| Finished {
            result: Err(e),
            kept: None,
        };
        let harness = self.file.harness.name();
        // What is kept with `size` cached bytes: the listing's stat, when it listed that size.
        let (hint, listed) = (self.hint, self.listed);
        let listed_stat = |size: u64| (size == hint).then_some(listed);
        let (bytes, kept) = match self.state {
            State::Failed(e) => {
                return failed(e.unwrap_or_else(|| self_failure(host, &self.path)));
            }
            State::Verify { .. } => return failed(self_failure(host, &self.path)),
            State::Append { meta, data, pos } => {
                let bytes = match FetchedBytes::map(&data, pos) {
                    Ok(bytes) => bytes,
                    Err(e) => return failed(io_failure(host, &self.path, &e)),
                };
                let key = self.key.unwrap_or_default();
                let grown = pos - meta.size;
                if grown > 0 || meta.used + USED_SLACK < now {
                    let new =
                        Meta::describe(host, harness, &self.path, &bytes, listed_stat(pos), now);
                    if store.write_meta(&key, &new).is_err() {
                        // The next run finds the data longer than its metadata: dropped.
                        return Finished {
                            result: Ok(Fetched {
                                bytes,
                                moved: self.moved,
                            }),
                            kept: None,
                        };
                    }
                }
                (bytes, Some((key, grown)))
            }
            State::Fresh { sink, pos } => {
                let bytes = match FetchedBytes::map(sink.file(), pos) {
                    Ok(bytes) => bytes,
                    Err(e) => return failed(io_failure(host, &self.path, &e)),
                };
                let kept = match (sink, self.key) {
                    (Sink::Temp(temp), Some(key)) if pos > 0 && pos <= max_bytes => {
                        let meta = Meta::describe(
                            host,
                            harness,
                            &self.path,
                            &bytes,
                            listed_stat(pos),
                            now,
                        );
                        let published = store.publish(&key, temp, &meta);
                        if published.is_err() {
                            store.remove(&key);
                        }
                        published.ok().map(|()| (key, pos))
                    }
                    // Emptied, or grown past the bound: the old entry is not the file.
                    (_, Some(key)) => {
                        store.remove(&key);
                        None
                    }
                    (_, None) => None,
                };
                (bytes, kept)
            }
        };
        // The entry's lock goes once its files are written.
        drop(self.lock);
        Finished {
            result: Ok(Fetched {
                bytes,
                moved: self.moved,
            }),
            kept,
        }
    }

    /// A failure of the cache's own files while fetching this file, as the file's error.
    fn cache_failure(&self, e: &std::io::Error) -> HostError {
        io_failure(&self.host, &self.path, e)
    }
}

fn io_failure(host: &str, path: &[u8], e: &std::io::Error) -> HostError {
    HostError::Io {
        host: host.to_string(),
        path: display_path(path),
        reason: format!("cache: {e}"),
    }
}

/// A job that ended without a result: a bug, reported as the file's error.
fn self_failure(host: &str, path: &[u8]) -> HostError {
    HostError::Io {
        host: host.to_string(),
        path: display_path(path),
        reason: "cache: the fetch ended unfinished".into(),
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Reads a whole file through the host into memory, `MAX_READ_BYTES` a call.
async fn fetch_whole<H: Host>(host: &H, entry: &FileEntry) -> Result<Fetched, HostError> {
    let file = FileRef {
        harness: entry.harness,
        root: entry.root.to_vec(),
        rel: entry.rel.clone(),
    };
    let mut bytes = Vec::with_capacity(entry.size as usize);
    loop {
        let start = bytes.len() as u64;
        let result = host
            .read(&file, &[ByteRange::new(start, MAX_READ_BYTES)])
            .await?;
        let chunk = result.chunks.into_iter().next().unwrap_or_default();
        bytes.extend_from_slice(&chunk);
        if bytes.len() as u64 >= result.size || chunk.is_empty() {
            let moved = bytes.len() as u64;
            return Ok(Fetched {
                bytes: FetchedBytes(Bytes::Memory(bytes)),
                moved,
            });
        }
    }
}

// Unix only: the tests replace files that an earlier fetch mapped, and check Unix modes.
#[cfg(all(test, unix))]
mod tests;
