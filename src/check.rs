//! `check` (cron): what changed on each host since the last run, kept in a versioned state
//! file that is locked against a concurrent run and replaced atomically (write `<state>.tmp`,
//! fsync, rename) by the holder of the lock.
//! The per-host comparison reads through the driver like any other read ([`read_to_end`]). A
//! first run (no state file yet) wants each session's cursor and newest record: it reads each
//! session's head and a small window before its end with the listing where the host can (the
//! small sessions whole), else in the same few batched round trips ([`Reader::tail_pages`]);
//! the cursors are those a read of each whole session would leave (docs/cursors.md).
//!
//! [`read_to_end`]: Reader::read_to_end

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
#[cfg(unix)]
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::driver::retry::recovery;
use crate::driver::{DriverError, InHand, Reader, on_every_core};
use clankie_engine::cursor::Cursor;
use clankie_engine::cursor::{HEAD_BYTES, WINDOW_BYTES};
use clankie_engine::page::{Mode, Page, PageRequest};
use clankie_engine::session::SessionFile;
#[cfg(windows)]
use clankie_host::windows_shims::OpenOptionsExt;
use clankie_host::{Host, ReadEnds, TailFit};
use clankie_model::limits::MAX_LIMIT;
use clankie_model::{Record, RootSpec, display_path};

const STATE_VERSION: u32 = 1;

/// The state file: per host, per session, where the last run stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub version: u32,
    pub hosts: BTreeMap<String, HostState>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostState {
    /// Keyed by `harness/session`.
    pub sessions: BTreeMap<String, SessionState>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionState {
    pub cursor: String,
    pub size: u64,
    pub mtime: i64,
    pub last_ts: Option<String>,
    /// The mtime was at least [`SETTLE_SECS`] old when recorded, so an unchanged size and mtime
    /// prove the file unchanged (mtimes have one-second resolution on some hosts; a rewrite in
    /// the same second is otherwise invisible — git calls this the racy-clean problem).
    #[serde(default)]
    pub settled: bool,
}

const SETTLE_SECS: i64 = 2;

/// A session whose size and settled mtime are what the last run recorded: not read again.
fn unchanged(old: Option<&SessionState>, session: &SessionFile) -> bool {
    old.is_some_and(|old| {
        old.settled && old.size == session.entry.size && old.mtime == session.entry.mtime
    })
}

/// The first page a run reads of a session: after the cursor the last run left; for a new
/// session on the first run (a baseline) only its newest record, which gives `last_ts`; for a
/// new session later, from its start.
fn first_request(old: Option<&SessionState>, baseline: bool, redact: bool) -> PageRequest {
    let mode = match old.and_then(|o| Cursor::decode(&o.cursor).ok()) {
        Some(cursor) => Mode::Since(cursor),
        None if baseline => Mode::Tail,
        None => Mode::Head,
    };
    PageRequest {
        limit: if matches!(mode, Mode::Tail) {
            1
        } else {
            MAX_LIMIT
        },
        mode,
        strict: false,
        redact,
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A session that could not be read, or a source a listing left out, while its host went on
/// (`ls`, `check`). Text output prints nothing for it on stdout (the CLI warns on stderr);
/// NDJSON prints an `error` object (`render`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionError {
    pub host: String,
    pub harness: String,
    /// `None` when no session is known (a database that cannot be opened, a directory left
    /// out).
    pub session: Option<String>,
    /// The file or directory, as the host spells it (lossily, when it is not UTF-8).
    pub path: String,
    /// The one line a user reads.
    pub message: String,
}

/// How a session changed since the last run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    New,
    Grew,
    Reset,
    Deleted,
}

/// One changed session.
#[derive(Debug, Clone, PartialEq)]
pub struct Activity {
    pub host: String,
    pub harness: String,
    pub session: String,
    pub change: Change,
    pub new_records: usize,
    pub last_ts: Option<String>,
    /// The new records themselves (kept only when asked for).
    pub records: Vec<Record>,
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("{path}: {reason}")]
    Invalid { path: String, reason: String },
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: another `check` holds the lock")]
    Locked { path: String },
    /// The state file's directory is missing and cannot be made.
    #[error("{path}: cannot create the state file's directory {dir}: {source}")]
    Directory {
        path: String,
        dir: String,
        source: std::io::Error,
    },
    /// The lock beside the state file cannot be opened (a directory not writable).
    #[error("{path}: cannot open its lock file {lock}: {source}")]
    Lock {
        path: String,
        lock: String,
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> StateError + '_ {
    move |source| StateError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// An exclusive lock on `<state>.lock`, held until dropped. Only its holder reads or writes the
/// state file and its temporary file.
#[derive(Debug)]
pub struct StateLock {
    _file: File,
}

impl StateLock {
    /// Takes the lock, waiting up to `wait`, and removes the temporary file a run killed while
    /// saving left behind. The state file's directory is made first when missing (0700, as
    /// `mkdir -p`: `--state ~/.cache/x.json` from cron on a home without `~/.cache`).
    pub fn acquire(state: &Path, wait: Duration) -> Result<StateLock, StateError> {
        make_dir_of(state)?;
        let path = lock_path(state);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| StateError::Lock {
                path: state.display().to_string(),
                lock: path.display().to_string(),
                source,
            })?;
        let start = Instant::now();
        loop {
            // An flock-style lock: the kernel releases it when the process dies, so a crashed
            // run never leaves a stale lock behind.
            if file.try_lock().is_ok() {
                remove_leftover(state)?;
                return Ok(StateLock { _file: file });
            }
            if start.elapsed() >= wait {
                return Err(StateError::Locked {
                    path: state.display().to_string(),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Makes the directory `state` is in, and its missing parents, each 0700 (it holds where every
/// session was read up to); an existing directory is left as it is.
fn make_dir_of(state: &Path) -> Result<(), StateError> {
    let Some(dir) = state.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|source| StateError::Directory {
        path: state.display().to_string(),
        dir: dir.display().to_string(),
        source,
    })
}

fn lock_path(state: &Path) -> PathBuf {
    sibling(state, ".lock")
}

/// `<state>.tmp`, where [`State::save`] writes before the rename. One fixed name is safe because
/// only the holder of the [`StateLock`] writes it; and a run killed while saving leaves at most
/// this one file, which the next holder of the lock finds and removes.
fn temp_path(state: &Path) -> PathBuf {
    sibling(state, ".tmp")
}

fn sibling(state: &Path, suffix: &str) -> PathBuf {
    let mut name = state.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    state.with_file_name(name)
}

/// Removes `<state>.tmp` if a killed run left it (call it holding the lock).
fn remove_leftover(state: &Path) -> Result<(), StateError> {
    let tmp = temp_path(state);
    match fs::remove_file(&tmp) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(&tmp)(e)),
    }
}

impl State {
    /// Loads the state; a missing file is `None` (the first run).
    pub fn load(path: &Path) -> Result<Option<State>, StateError> {
        let text = match fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(path)(e)),
        };
        let state: State = serde_json::from_str(&text).map_err(|e| StateError::Invalid {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        if state.version != STATE_VERSION {
            return Err(StateError::Invalid {
                path: path.display().to_string(),
                reason: format!("state version {} is not {STATE_VERSION}", state.version),
            });
        }
        Ok(Some(state))
    }

    /// Replaces the state file atomically: `<state>.tmp` in the same directory (mode 0600),
    /// fsync, rename, fsync of the directory. Call it holding the [`StateLock`]: the temporary
    /// file's name is fixed.
    pub fn save(&self, path: &Path) -> Result<(), StateError> {
        #[cfg(unix)]
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let tmp = temp_path(path);
        remove_leftover(path)?;
        let written = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|file| {
                // Written as it is serialized: the state of 10,000 sessions is 4 MB of JSON,
                // which a string would grow through 8 MB of fresh memory (docs/performance.md).
                let mut out = std::io::BufWriter::with_capacity(1 << 16, file);
                serde_json::to_writer_pretty(&mut out, self).map_err(std::io::Error::from)?;
                out.write_all(b"\n")?;
                out.into_inner().map_err(|e| e.into_error())?.sync_all()
            })
            .and_then(|()| fs::rename(&tmp, path));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(io(path)(e));
        }
        // Windows opens no directory as a file (and its rename is not made durable this way).
        #[cfg(unix)]
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io(path))?;
        Ok(())
    }
}

fn key(session: &SessionFile) -> String {
    format!("{}/{}", session.harness(), session.id)
}

/// Whether an error met reading one session fails its whole host: the host could not be
/// reached or answered outside the wire format (SPEC: the host's fault, exit 3). Everything
/// else — a file refused, gone, unreadable, over a cap, malformed — is that session's alone:
/// it is reported and the host's other sessions go on. The driver's retry policy decides
/// ([`Recovery::fails_the_host`](crate::driver::retry::Recovery::fails_the_host)).
pub fn fails_the_host(error: &DriverError) -> bool {
    matches!(error, DriverError::Host(e) if recovery(e).fails_the_host())
}

/// What checking one host found.
#[derive(Debug, Default)]
pub struct HostCheck {
    /// The host's new state: the cursors of the sessions read, the old entries of those that
    /// could not be read.
    pub state: HostState,
    /// Sessions that changed, oldest session first.
    pub activity: Vec<Activity>,
    /// Sessions (and listed sources) that could not be read; the rest of the host went on.
    pub errors: Vec<SessionError>,
    /// Names the host could not carry (`Listing::skipped_names`).
    pub skipped_names: u64,
    /// Every session the listing found, in its order.
    pub sessions: Vec<SessionFile>,
}

/// How [`check_host_with`] reads.
#[derive(Debug, Clone, Copy)]
pub struct CheckOptions {
    /// The first run: no history is read.
    pub baseline: bool,
    /// Keep the new records of each changed session.
    pub keep_records: bool,
    /// Redact the records read (always, but for `sync --no-redact`).
    pub redact: bool,
}

/// Hosts checked at once in one process (`check`, and the MCP server's `check` tool). Each
/// holds, while it runs, one connection (a socket; three more descriptors while a command runs
/// through a ControlMaster), its listing (at most `MAX_LIST_ENTRIES` files) and one batched read
/// reply (at most 4 MiB of payload, about 5.5 MiB as base64). The others wait for a slot
/// before they connect, so 1,000 hosts cost 32 hosts' descriptors and memory at a time.
pub const CONCURRENT_HOSTS: usize = 32;

/// The largest session a host's first `check` reads with the listing when the state has
/// sessions of other hosts (not a baseline): a new session is then read from its start, and
/// one this small is its first read whole anyway.
const READ_ALONG_MAX_FILE: u64 = clankie_model::limits::FIRST_CHUNK_BYTES;

/// How far before its end a baseline reads a session whose last lines the host does not
/// measure ([`BASELINE_ENDS`]): its newest record is almost always within it (a prompt, an
/// answer, a tool result: Claude Code cuts a tool's output at 30,000 characters). One whose
/// newest record is not within its first read is read this much further back (then four
/// times more each time) in one more batch with the others that need it. A widening costs a
/// batch, whose host runs a few processes a file, so the first read is sized to hold the
/// newest record rather than to be small.
pub const FIRST_CHECK_TAIL_BYTES: u64 = 32 * 1024;

/// What a baseline's listing reads of each session larger than it reads whole: the head its
/// cursor hashes, and a tail the host sizes to the session's last lines ([`TailFit`]): at
/// least the window a cursor hashes before its position, at most the window a `--tail` reads
/// first; a session the host cannot measure sends [`FIRST_CHECK_TAIL_BYTES`]. Most sessions'
/// newest record is a few KiB, so most send far less than a fixed window would, and one whose
/// last line is a long tool result sends all of it rather than being read again.
const BASELINE_ENDS: ReadEnds = ReadEnds {
    head: HEAD_BYTES,
    tail: FIRST_CHECK_TAIL_BYTES,
    fit: Some(TailFit {
        min: WINDOW_BYTES,
        max: clankie_model::limits::FIRST_TAIL_WINDOW_BYTES,
    }),
};

/// The largest session a baseline reads with the listing whole: its head and a fixed tail
/// window would cover it, so reading it whole costs no more bytes than its ends could.
const BASELINE_READ_ALONG_MAX_FILE: u64 = FIRST_CHECK_TAIL_BYTES + HEAD_BYTES;

/// The slots of [`CONCURRENT_HOSTS`]: every [`check_host`] holds one while it runs.
static HOST_SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(CONCURRENT_HOSTS);

/// Checks one host against its previous state. `baseline` is the first run (no history is
/// read). A session that cannot be read keeps its old state and is one of the result's
/// `errors`; only what [`fails_the_host`] fails the host.
pub async fn check_host<H: Host>(
    host: &H,
    roots: &[RootSpec],
    previous: Option<&HostState>,
    baseline: bool,
    keep_records: bool,
) -> Result<HostCheck, DriverError> {
    let options = CheckOptions {
        baseline,
        keep_records,
        redact: true,
    };
    check_host_with(host, roots, previous, options).await
}

/// [`check_host`] with every option.
pub async fn check_host_with<H: Host>(
    host: &H,
    roots: &[RootSpec],
    previous: Option<&HostState>,
    options: CheckOptions,
) -> Result<HostCheck, DriverError> {
    let listed = list_host(host, roots, previous.is_none(), options).await?;
    check_listed(listed, previous).await
}

/// A host listed for a check ([`list_host`]), waiting for its previous state
/// ([`check_listed`]). It holds its host's slot of [`CONCURRENT_HOSTS`] until it is checked.
pub struct ListedHost<'h, H: Host> {
    reader: Reader<'h, H>,
    listing: clankie_model::Listing,
    sessions: Vec<SessionFile>,
    options: CheckOptions,
    _slot: tokio::sync::SemaphorePermit<'static>,
}

/// The first step of [`check_host_with`]: takes a slot and lists the host. `first` (no
/// previous state: every session will be read) has the small sessions read with the listing,
/// in its one call (no batch has to name them, docs/performance.md). Needs nothing of the
/// previous state but whether there is one, so a caller may list while it fetches that state.
pub async fn list_host<'h, H: Host>(
    host: &'h H,
    roots: &[RootSpec],
    first: bool,
    options: CheckOptions,
) -> Result<ListedHost<'h, H>, DriverError> {
    // Never closed: waiting for a slot cannot fail.
    let slot = HOST_SLOTS
        .acquire()
        .await
        .expect("the host slots are never closed");
    let reader = Reader::new(host);
    let (listing, sessions) = if first {
        let read_along = if options.baseline {
            BASELINE_READ_ALONG_MAX_FILE
        } else {
            READ_ALONG_MAX_FILE
        };
        if options.baseline {
            // Each larger session's head and tail window come with the listing too: the
            // baseline's first reads (`baseline_pages`) need no batch.
            reader
                .list_sessions_reading_ends(roots, read_along, BASELINE_ENDS)
                .await?
        } else {
            reader.list_sessions_reading(roots, read_along).await?
        }
    } else {
        reader.list_sessions(roots).await?
    };
    Ok(ListedHost {
        reader,
        listing,
        sessions,
        options,
        _slot: slot,
    })
}

/// The second step of [`check_host_with`]: checks a listed host against its previous state.
pub async fn check_listed<H: Host>(
    listed: ListedHost<'_, H>,
    previous: Option<&HostState>,
) -> Result<HostCheck, DriverError> {
    let ListedHost {
        reader,
        listing,
        sessions,
        options,
        _slot,
    } = listed;
    let CheckOptions {
        baseline,
        keep_records,
        redact,
    } = options;
    let host = reader.host();
    let mut next = HostState::default();
    // One entry for each session on a first run: sized once rather than grown through copies.
    let mut activity = Vec::with_capacity(sessions.len());
    let mut errors: Vec<SessionError> = listing
        .unreadable
        .iter()
        .map(|left_out| SessionError {
            host: host.name().to_string(),
            harness: left_out.harness.name().to_string(),
            session: None,
            path: display_path(&left_out.path),
            message: left_out.message.clone(),
        })
        .collect();
    let empty = HostState::default();
    let previous = previous.unwrap_or(&empty);
    // Each session's key, and the first page it is read from (none when it is unchanged).
    let keys: Vec<String> = sessions.iter().map(key).collect();
    let firsts: Vec<Option<PageRequest>> = sessions
        .iter()
        .zip(&keys)
        .map(|(session, key)| {
            let old = previous.sessions.get(key);
            (!unchanged(old, session)).then(|| first_request(old, baseline, redact))
        })
        .collect();
    let paged = if baseline {
        baseline_pages(&reader, &sessions, &firsts).await?
    } else {
        first_pages(&reader, &sessions, &firsts).await?
    };
    let each = sessions.iter().zip(keys).zip(firsts).zip(paged);
    for (((session, key), first), in_hand) in each {
        let old = previous.sessions.get(&key);
        let Some(first) = first else {
            // Unchanged since the last run: it keeps where that run stopped.
            if let Some(old) = old {
                next.sessions.insert(key, old.clone());
            }
            continue;
        };
        let mut records = Vec::new();
        let mut count = 0;
        let mut reset = false;
        let mut last_ts = old.and_then(|o| o.last_ts.clone());
        let counted = !(baseline && old.is_none());
        let on_page = |page: &mut Page| {
            reset |= page.reset;
            if let Some(ts) = page.records.iter().rev().find_map(|r| r.ts.clone()) {
                last_ts = Some(ts);
            }
            if counted {
                count += page.records.len();
                if keep_records {
                    records.append(&mut page.records);
                }
            }
            Ok::<(), DriverError>(())
        };
        let read = match in_hand {
            Some(Err(e)) => Err(e),
            Some(Ok(page)) => {
                reader
                    .read_to_end_from(session, first, Some(page), on_page)
                    .await
            }
            None => reader.read_to_end(session, first, on_page).await,
        };
        let cursor = match read {
            Ok(cursor) => cursor,
            Err(e) if fails_the_host(&e) => return Err(e),
            Err(e) => {
                // This session alone: it keeps where the last run stopped (and is not reported
                // deleted), and the next run tries it again.
                if let Some(old) = old {
                    next.sessions.insert(key, old.clone());
                }
                errors.push(SessionError {
                    host: host.name().to_string(),
                    harness: session.harness().name().to_string(),
                    session: Some(session.id.clone()),
                    path: display_path(&session.entry.full_path()),
                    message: e.to_string(),
                });
                continue;
            }
        };
        let change = match (old, reset) {
            (None, _) => Some(Change::New),
            (Some(_), true) => Some(Change::Reset),
            (Some(_), false) if count > 0 => Some(Change::Grew),
            _ => None,
        };
        if let Some(change) = change {
            activity.push(Activity {
                host: host.name().to_string(),
                harness: session.harness().name().to_string(),
                session: session.id.clone(),
                change,
                new_records: count,
                last_ts: last_ts.clone(),
                records,
            });
        }
        next.sessions.insert(
            key,
            SessionState {
                cursor: cursor.encode(),
                size: session.entry.size,
                mtime: session.entry.mtime,
                last_ts,
                // Remote clocks may differ from ours; a few seconds of skew only costs a re-read.
                settled: session.entry.mtime + SETTLE_SECS < unix_now(),
            },
        );
    }
    for (key, old) in &previous.sessions {
        if !next.sessions.contains_key(key) {
            let (harness, session) = key.split_once('/').unwrap_or(("", key));
            activity.push(Activity {
                host: host.name().to_string(),
                harness: harness.to_string(),
                session: session.to_string(),
                change: Change::Deleted,
                new_records: 0,
                last_ts: old.last_ts.clone(),
                records: Vec::new(),
            });
        }
    }
    Ok(HostCheck {
        state: next,
        activity,
        errors,
        skipped_names: listing.skipped_names,
        sessions,
    })
}

/// The first page of each session to read (`firsts`) on a first run: the newest record of
/// every session of lines, each session's head and tail read in the same few batches
/// ([`Reader::tail_pages`]); `None` for the others, read as usual.
async fn baseline_pages<H: Host>(
    reader: &Reader<'_, H>,
    sessions: &[SessionFile],
    firsts: &[Option<PageRequest>],
) -> Result<Vec<Option<Result<Page, DriverError>>>, DriverError> {
    let (at, tails): (Vec<usize>, Vec<(&SessionFile, PageRequest)>) = sessions
        .iter()
        .zip(firsts)
        .enumerate()
        .filter_map(|(k, (session, first))| Some((k, (session, first.clone()?))))
        .unzip();
    let mut paged: Vec<Option<Result<Page, DriverError>>> = std::iter::repeat_with(|| None)
        .take(sessions.len())
        .collect();
    match reader.tail_pages(&tails, FIRST_CHECK_TAIL_BYTES).await {
        Ok(pages) => {
            for (k, page) in at.into_iter().zip(pages) {
                paged[k] = page;
            }
        }
        Err(e) => {
            let e = DriverError::Host(e);
            // Anything but a lost host is met again, session by session, by the reads.
            if fails_the_host(&e) {
                return Err(e);
            }
        }
    }
    Ok(paged)
}

/// The first page of each session to read (`firsts`) on a later run, when it is in hand; the
/// first read of every other session batched into few round trips ahead of its page (a page
/// that wants more than was read is read as usual).
async fn first_pages<H: Host>(
    reader: &Reader<'_, H>,
    sessions: &[SessionFile],
    firsts: &[Option<PageRequest>],
) -> Result<Vec<Option<Result<Page, DriverError>>>, DriverError> {
    // Pages of sessions read along with the listing need no host: they are paged on every
    // core, the host idle by then (docs/performance.md).
    let mut in_hand: Vec<(usize, InHand)> = Vec::new();
    let mut to_read: Vec<(&SessionFile, PageRequest)> = Vec::new();
    for (k, (session, first)) in sessions.iter().zip(firsts).enumerate() {
        let Some(request) = first else { continue };
        match reader.take_in_hand(session, request) {
            Some(hand) => in_hand.push((k, hand)),
            None => to_read.push((session, request.clone())),
        }
    }
    if let Err(e) = reader.prefetch_first_reads(&to_read).await {
        let e = DriverError::Host(e);
        // Anything but a lost host is met again, session by session, by the reads themselves.
        if fails_the_host(&e) {
            return Err(e);
        }
    }
    drop(to_read);
    let mut paged: Vec<Option<Result<Page, DriverError>>> = std::iter::repeat_with(|| None)
        .take(sessions.len())
        .collect();
    for (k, page) in on_every_core(in_hand, |(k, hand)| (k, hand.page())) {
        paged[k] = page;
    }
    Ok(paged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::roots_for;
    use crate::driver::testing::{
        SHORT, TOOL_HEAVY, all_ids, block_on, claude_path, dropped, lines, resolve,
    };
    use clankie_host::HostError;
    use clankie_host::memory::MemoryHost;

    /// Three Claude Code sessions, by the ids of their fixtures.
    const A: &str = "55604662-cf2a-4331-851a-ec234028f8ca";
    const B: &str = "d6e0bada-1959-4eec-a9d2-0bfade768d8f";
    const C: &str = "fed8ce56-bc79-401f-a83e-af084253362f";
    const C_TEXT: &str = include_str!(
        "../tests/fixtures/claude/projects/-fixtures/fed8ce56-bc79-401f-a83e-af084253362f.jsonl"
    );

    /// A host with A (the first 8 lines of its transcript: 4 records) and B.
    fn host() -> MemoryHost {
        let host = MemoryHost::new("mem");
        host.put(claude_path(&host, A), lines(SHORT)[..8].concat());
        host.put(claude_path(&host, B), TOOL_HEAVY);
        host
    }

    fn check(
        host: &MemoryHost,
        previous: Option<&HostState>,
        keep_records: bool,
    ) -> (HostState, Vec<Activity>) {
        let checked = check_with_errors(host, previous, keep_records);
        assert!(checked.errors.is_empty(), "{:?}", checked.errors);
        (checked.state, checked.activity)
    }

    fn check_with_errors(
        host: &MemoryHost,
        previous: Option<&HostState>,
        keep_records: bool,
    ) -> HostCheck {
        let roots = roots_for(&[], None);
        block_on(check_host(
            host,
            &roots,
            previous,
            previous.is_none(),
            keep_records,
        ))
        .unwrap()
    }

    /// `(session, change, new_records)` of each activity.
    fn changes(activity: &[Activity]) -> Vec<(&str, Change, usize)> {
        activity
            .iter()
            .map(|a| (a.session.as_str(), a.change, a.new_records))
            .collect()
    }

    /// The timestamp of a session's newest record.
    fn newest_ts(host: &MemoryHost, id: &str) -> Option<String> {
        block_on(async {
            let session = resolve(host, id).await;
            let request = PageRequest {
                mode: Mode::Tail,
                limit: 1,
                strict: false,
                redact: true,
            };
            let page = crate::driver::Reader::new(host)
                .read_page(&session, request, |_| {})
                .await
                .unwrap();
            page.records.last().and_then(|r| r.ts.clone())
        })
    }

    fn ids_of(host: &MemoryHost, id: &str) -> Vec<String> {
        block_on(async { all_ids(host, &resolve(host, id).await).await })
    }

    /// A host whose listing counts the checks under way (`now`, the most in `most`) and waits
    /// until a whole wave of [`CONCURRENT_HOSTS`] of them is.
    struct Gated {
        inner: MemoryHost,
        wave: std::sync::Arc<tokio::sync::Barrier>,
        now: std::sync::Arc<std::sync::atomic::AtomicUsize>,
        most: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Host for Gated {
        fn name(&self) -> &str {
            self.inner.name()
        }

        async fn list(
            &self,
            roots: &[RootSpec],
        ) -> Result<clankie_model::Listing, clankie_host::HostError> {
            use std::sync::atomic::Ordering::SeqCst;
            let now = self.now.fetch_add(1, SeqCst) + 1;
            self.most.fetch_max(now, SeqCst);
            self.wave.wait().await;
            self.now.fetch_sub(1, SeqCst);
            self.inner.list(roots).await
        }

        async fn read(
            &self,
            file: &clankie_host::FileRef,
            ranges: &[clankie_model::ByteRange],
        ) -> Result<clankie_model::ReadResult, clankie_host::HostError> {
            self.inner.read(file, ranges).await
        }
    }

    #[test]
    fn no_more_than_concurrent_hosts_are_checked_at_once() {
        use std::sync::Arc;
        use std::sync::atomic::AtomicUsize;
        let wave = Arc::new(tokio::sync::Barrier::new(CONCURRENT_HOSTS));
        let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        // Three waves: without the bound all of them would be listing at once (and the
        // barrier would let them all through); with a smaller one the first wave never fills.
        let checked = block_on(async {
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..3 * CONCURRENT_HOSTS {
                let host = Gated {
                    inner: host(),
                    wave: wave.clone(),
                    now: now.clone(),
                    most: most.clone(),
                };
                tasks.spawn(async move {
                    let roots = roots_for(&[], None);
                    check_host(&host, &roots, None, true, false).await.is_ok()
                });
            }
            tasks.join_all().await
        });
        assert!(checked.into_iter().all(|ok| ok));
        assert_eq!(
            most.load(std::sync::atomic::Ordering::SeqCst),
            CONCURRENT_HOSTS
        );
    }

    #[test]
    fn the_first_run_records_a_baseline() {
        let host = host();
        let (state, activity) = check(&host, None, true);
        assert_eq!(
            changes(&activity),
            [(A, Change::New, 0), (B, Change::New, 0)],
            "no history is counted or kept"
        );
        assert!(
            activity
                .iter()
                .all(|a| a.records.is_empty() && a.host == "mem")
        );
        assert_eq!(activity[0].last_ts, newest_ts(&host, A));
        assert_eq!(activity[1].last_ts, newest_ts(&host, B));
        assert!(activity[0].last_ts.is_some());
        let a = &state.sessions[&format!("claude/{A}")];
        assert_eq!(
            a.size,
            host.contents(claude_path(&host, A)).unwrap().len() as u64
        );
        assert!(a.settled, "{a:?}");
        assert!(Cursor::decode(&a.cursor).is_ok());
        assert_eq!(state.sessions.len(), 2);
    }

    #[test]
    fn a_later_run_reports_what_changed_and_reads_nothing_else() {
        let host = host();
        let (first, _) = check(&host, None, false);

        // Nothing changed: nothing to report, and no file is read (size and mtime say so).
        let reads = host.calls().read;
        let (second, activity) = check(&host, Some(&first), false);
        assert!(activity.is_empty(), "{:?}", changes(&activity));
        assert_eq!(second, first);
        assert_eq!(host.calls().read, reads);

        // A grows by three records, B is rewritten, C appears.
        let before = ids_of(&host, A);
        host.append(claude_path(&host, A), lines(SHORT)[8..12].concat());
        let mut rewritten = lines(TOOL_HEAVY);
        rewritten.remove(1);
        host.rewrite(claude_path(&host, B), rewritten.concat());
        host.put(claude_path(&host, C), C_TEXT);
        let (third, activity) = check(&host, Some(&second), true);
        let grown = ids_of(&host, A);
        assert_eq!(grown.len(), before.len() + 3);
        assert_eq!(
            changes(&activity),
            [
                (A, Change::Grew, 3),
                // The restarted read: a notice saying why, then every record.
                (B, Change::Reset, ids_of(&host, B).len() + 1),
                // Not a baseline any more: all of a new session's history is new.
                (C, Change::New, ids_of(&host, C).len()),
            ]
        );
        let new_ids: Vec<&str> = activity[0].records.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(new_ids, grown[before.len()..]);
        assert_eq!(activity[0].last_ts, newest_ts(&host, A));
        assert_ne!(
            third.sessions[&format!("claude/{A}")],
            second.sessions[&format!("claude/{A}")]
        );

        // Gone: reported once, and forgotten.
        assert!(host.remove(claude_path(&host, A)));
        let (fourth, activity) = check(&host, Some(&third), false);
        assert_eq!(changes(&activity), [(A, Change::Deleted, 0)]);
        assert_eq!(
            activity[0].last_ts,
            third.sessions[&format!("claude/{A}")].last_ts
        );
        assert_eq!(fourth.sessions.len(), 2);
        assert!(!fourth.sessions.contains_key(&format!("claude/{A}")));
    }

    #[test]
    fn a_temporary_file_left_by_a_killed_save_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let leftover = dir.path().join("state.json.tmp");
        let names = || {
            let mut names: Vec<String> = fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            names.sort();
            names
        };
        // A run killed between writing and renaming: 1.5 MB of half a state.
        fs::write(&leftover, vec![b'{'; 1_500_000]).unwrap();
        let lock = StateLock::acquire(&path, Duration::ZERO).unwrap();
        assert!(!leftover.exists(), "the lock holder removes it");
        // Killed again, then saved over by the same run.
        fs::write(&leftover, b"{").unwrap();
        let mut state = State {
            version: STATE_VERSION,
            ..State::default()
        };
        state.hosts.insert("h".into(), HostState::default());
        state.save(&path).unwrap();
        drop(lock);
        assert_eq!(names(), ["state.json", "state.json.lock"]);
        assert_eq!(State::load(&path).unwrap(), Some(state));
        #[cfg(unix)]
        use std::os::unix::fs::PermissionsExt;
        #[cfg(unix)]
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        #[cfg(unix)]
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        // A run that waits for the lock and gives up removes nothing the holder is writing.
        let _held = StateLock::acquire(&path, Duration::ZERO).unwrap();
        fs::write(&leftover, b"being written").unwrap();
        assert!(matches!(
            StateLock::acquire(&path, Duration::ZERO),
            Err(StateError::Locked { .. })
        ));
        assert!(leftover.exists());
    }

    #[test]
    fn a_session_that_cannot_be_read_is_reported_and_the_others_advance() {
        let host = host();
        let (first, _) = check(&host, None, false);
        // B's stored cursor is A's: B cannot be read from it. A grows, and a compressed Codex
        // transcript that is not zstd appears.
        let mut previous = first.clone();
        let a_key = format!("claude/{A}");
        let b_key = format!("claude/{B}");
        let a_state = previous.sessions[&a_key].clone();
        previous.sessions.get_mut(&b_key).unwrap().cursor = a_state.cursor.clone();
        previous.sessions.get_mut(&b_key).unwrap().settled = false;
        host.append(claude_path(&host, A), lines(SHORT)[8..12].concat());
        let mut zst = host.default_root(clankie_engine::harness::by_name("codex").unwrap());
        zst.extend_from_slice(
            b"/sessions/2026/11/02/rollout-2026-11-02T10-00-00-0badc0de.jsonl.zst",
        );
        host.put(&zst, b"not zstd at all");

        let checked = check_with_errors(&host, Some(&previous), false);
        assert_eq!(changes(&checked.activity), [(A, Change::Grew, 3)]);
        let errors: Vec<(&str, Option<&str>)> = checked
            .errors
            .iter()
            .map(|e| (e.harness.as_str(), e.session.as_deref()))
            .collect();
        assert_eq!(
            errors,
            [
                ("claude", Some(B)),
                ("codex", Some("rollout-2026-11-02T10-00-00-0badc0de")),
            ],
            "{:?}",
            checked.errors
        );
        assert!(checked.errors.iter().all(|e| e.host == "mem"));
        assert!(
            checked.errors[1].path.ends_with(".jsonl.zst"),
            "{:?}",
            checked.errors
        );
        assert!(
            checked.errors[1].message.contains("zstd"),
            "{:?}",
            checked.errors
        );
        // B keeps where it was (not reported deleted, retried next run); A advanced; the
        // Codex file has no state yet.
        assert_eq!(checked.state.sessions[&b_key], previous.sessions[&b_key]);
        assert_ne!(checked.state.sessions[&a_key], a_state);
        assert_eq!(checked.state.sessions.len(), 2);
    }

    /// A Claude prompt line of about `len` bytes under `uuid`.
    fn prompt(uuid: &str, len: usize) -> String {
        let text: String = (0..len / 6).map(|i| ["word ", "text. "][i % 2]).collect();
        format!(
            "{}\n",
            serde_json::json!({"type":"user","uuid":uuid,"timestamp":"2026-11-02T10:00:00.000Z",
                "message":{"role":"user","content":text}})
        )
    }

    /// A host that counts its batched reads and the bytes they return.
    struct Counted {
        inner: MemoryHost,
        batches: std::sync::atomic::AtomicUsize,
        bytes: std::sync::atomic::AtomicU64,
    }

    impl Host for Counted {
        fn name(&self) -> &str {
            self.inner.name()
        }

        async fn list(
            &self,
            roots: &[RootSpec],
        ) -> Result<clankie_model::Listing, clankie_host::HostError> {
            self.inner.list(roots).await
        }

        async fn read(
            &self,
            file: &clankie_host::FileRef,
            ranges: &[clankie_model::ByteRange],
        ) -> Result<clankie_model::ReadResult, clankie_host::HostError> {
            let result = self.inner.read(file, ranges).await?;
            let bytes: usize = result.chunks.iter().map(Vec::len).sum();
            self.bytes
                .fetch_add(bytes as u64, std::sync::atomic::Ordering::SeqCst);
            Ok(result)
        }

        async fn read_many(
            &self,
            reads: &[(clankie_host::FileRef, Vec<clankie_model::ByteRange>)],
        ) -> Result<Vec<Result<clankie_model::ReadResult, HostError>>, HostError> {
            self.batches
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut out = Vec::new();
            for (file, ranges) in reads {
                out.push(self.read(file, ranges).await);
            }
            Ok(out)
        }
    }

    /// A host whose listing reads each larger file's ends along, its tail as long as
    /// `tail_of` says for the file's bytes (as a host sizes it to the last lines, or not), and
    /// that counts its batches.
    struct WithEnds {
        inner: MemoryHost,
        tail_of: fn(&[u8]) -> u64,
        batches: std::sync::atomic::AtomicUsize,
    }

    impl Host for WithEnds {
        fn name(&self) -> &str {
            self.inner.name()
        }

        async fn list(
            &self,
            roots: &[RootSpec],
        ) -> Result<clankie_model::Listing, clankie_host::HostError> {
            self.inner.list(roots).await
        }

        async fn list_reading_ends(
            &self,
            roots: &[RootSpec],
            max_file: u64,
            ends: ReadEnds,
        ) -> Result<clankie_host::ListedAlong, HostError> {
            let listing = self.inner.list(roots).await?;
            let mut read = Vec::new();
            for entry in listing.files.iter().filter(|f| f.size > max_file) {
                let file = clankie_host::FileRef {
                    harness: entry.harness,
                    root: entry.root.to_vec(),
                    rel: entry.rel.clone(),
                };
                let whole = self
                    .inner
                    .read(&file, &[clankie_model::ByteRange::new(0, entry.size)])
                    .await?;
                let bytes = &whole.chunks[0];
                let tail = ((self.tail_of)(bytes) as usize).min(bytes.len());
                let head = (ends.head as usize).min(bytes.len());
                let found = clankie_host::FileEnds {
                    size: entry.size,
                    head: bytes[..head].to_vec(),
                    tail: bytes[bytes.len() - tail..].to_vec(),
                };
                read.push((file, found));
            }
            Ok((listing, Vec::new(), read))
        }

        async fn read(
            &self,
            file: &clankie_host::FileRef,
            ranges: &[clankie_model::ByteRange],
        ) -> Result<clankie_model::ReadResult, clankie_host::HostError> {
            self.inner.read(file, ranges).await
        }

        async fn read_many(
            &self,
            reads: &[(clankie_host::FileRef, Vec<clankie_model::ByteRange>)],
        ) -> Result<Vec<Result<clankie_model::ReadResult, HostError>>, HostError> {
            self.batches
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut out = Vec::new();
            for (file, ranges) in reads {
                out.push(self.inner.read(file, ranges).await);
            }
            Ok(out)
        }
    }

    #[test]
    fn a_first_run_serves_each_session_from_the_tail_its_host_sized_and_keeps_a_whole_reads_cursor()
    {
        // Each session's tail as a host that measured its last line sends it (the line and
        // the newline before it, at least the 4 KiB a cursor hashes), but the one whose
        // newest record is too long for any first read: that one gets 4 KiB and is widened.
        fn fitted(bytes: &[u8]) -> u64 {
            let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
            let last = body.rsplit(|&b| b == b'\n').next().unwrap_or(body).len() as u64;
            if last > 100_000 {
                4096
            } else {
                (last + 2).max(4096)
            }
        }
        let shapes: [(&str, &[usize]); 5] = [
            // Short lines: the 4 KiB window holds the newest.
            ("bbbbbbbb-0000-4000-8000-000000000001", &[2_000; 30]),
            // A long newest record: all of it, and no more.
            ("bbbbbbbb-0000-4000-8000-000000000002", &[3_000; 20]),
            (
                "bbbbbbbb-0000-4000-8000-000000000003",
                &[3_000, 2_000, 30_000, 25_000],
            ),
            // Its tail meets its head: the whole file.
            ("bbbbbbbb-0000-4000-8000-000000000004", &[1_000, 39_000]),
            // Newer than any first read holds: read further back in batches.
            ("bbbbbbbb-0000-4000-8000-000000000005", &[40_000, 150_000]),
        ];
        let memory = MemoryHost::new("mem");
        for (id, sizes) in shapes {
            let text: String = sizes
                .iter()
                .enumerate()
                .map(|(k, &len)| prompt(&format!("{id}-{k}"), len))
                .collect();
            memory.put(claude_path(&memory, id), text);
        }
        let host = WithEnds {
            inner: memory,
            tail_of: fitted,
            batches: Default::default(),
        };
        let roots = roots_for(&[], None);
        let first = block_on(check_host(&host, &roots, None, true, true)).unwrap();
        assert!(first.errors.is_empty(), "{:?}", first.errors);
        // Only the session whose newest record is over 100 KB is read again: its widenings
        // (32 KiB, then 128 KiB more) are the run's only batches.
        assert_eq!(host.batches.load(std::sync::atomic::Ordering::SeqCst), 2);
        for (id, _) in shapes {
            let session = block_on(resolve(&host.inner, id));
            let request = PageRequest {
                mode: Mode::Head,
                limit: clankie_model::limits::MAX_LIMIT,
                strict: false,
                redact: true,
            };
            let whole = block_on(
                Reader::new(&host.inner)
                    .read_to_end(&session, request, |_| Ok::<_, DriverError>(())),
            )
            .unwrap();
            let kept = &first.state.sessions[&format!("claude/{id}")];
            assert_eq!(kept.cursor, whole.encode(), "{id}");
            let activity = first.activity.iter().find(|a| a.session == id).unwrap();
            assert_eq!(activity.last_ts, newest_ts(&host.inner, id), "{id}");
        }
    }

    #[test]
    fn a_first_run_reads_heads_and_tails_in_batches_and_keeps_a_whole_reads_cursor() {
        use clankie_model::limits::MAX_LIMIT;
        // Sessions whose newest record fits the tail window or does not (by once or twice its
        // widening), small ones read whole, and one whose last line is still being written.
        let half = prompt("aaaaaaaa-0000-4000-8000-000000000006-pending", 600);
        let (written, rest) = half.split_at(300);
        let shapes: [(&str, &[usize], &str); 6] = [
            ("aaaaaaaa-0000-4000-8000-000000000001", &[300; 8], ""),
            ("aaaaaaaa-0000-4000-8000-000000000002", &[2_000; 500], ""),
            (
                "aaaaaaaa-0000-4000-8000-000000000003",
                &[3_000, 2_000, 30_000],
                "",
            ),
            ("aaaaaaaa-0000-4000-8000-000000000004", &[5_000; 200], ""),
            (
                "aaaaaaaa-0000-4000-8000-000000000005",
                &[4_000, 150_000, 90_000],
                "",
            ),
            (
                "aaaaaaaa-0000-4000-8000-000000000006",
                &[1_500; 100],
                written,
            ),
        ];
        let memory = MemoryHost::new("mem");
        let mut total = 0;
        for (id, sizes, pending) in shapes {
            let text: String = sizes
                .iter()
                .enumerate()
                .map(|(k, &len)| prompt(&format!("{id}-{k}"), len))
                .collect::<String>()
                + pending;
            total += text.len();
            memory.put(claude_path(&memory, id), text);
        }
        let host = Counted {
            inner: memory,
            batches: Default::default(),
            bytes: Default::default(),
        };
        let roots = roots_for(&[], None);
        let first = block_on(check_host(&host, &roots, None, true, true)).unwrap();
        assert!(first.errors.is_empty(), "{:?}", first.errors);
        let read = host.bytes.load(std::sync::atomic::Ordering::SeqCst) as usize;
        assert!(
            read * 4 < total,
            "{read} bytes read of {total}: heads and tails only"
        );
        // The first reads, then the two widenings of the session whose newest record is far
        // back: three batches, whatever the number of sessions.
        assert_eq!(host.batches.load(std::sync::atomic::Ordering::SeqCst), 3);
        for (id, _, _) in shapes {
            let session = block_on(resolve(&host.inner, id));
            let request = PageRequest {
                mode: Mode::Head,
                limit: MAX_LIMIT,
                strict: false,
                redact: true,
            };
            let whole = block_on(
                Reader::new(&host.inner)
                    .read_to_end(&session, request, |_| Ok::<_, DriverError>(())),
            )
            .unwrap();
            let kept = &first.state.sessions[&format!("claude/{id}")];
            assert_eq!(kept.cursor, whole.encode(), "{id}");
            let activity = first.activity.iter().find(|a| a.session == id).unwrap();
            assert_eq!(activity.last_ts, newest_ts(&host.inner, id), "{id}");
        }
        // The next run shows exactly what was appended since.
        for (k, (id, _, pending)) in shapes.into_iter().enumerate() {
            let path = claude_path(&host.inner, id);
            let mut more = String::new();
            if !pending.is_empty() {
                more.push_str(rest);
            }
            for n in 0..k {
                more.push_str(&prompt(&format!("{id}-new-{n}"), 700 * (n + 1)));
            }
            host.inner.append(&path, more);
        }
        let next = block_on(check_host(&host, &roots, Some(&first.state), false, true)).unwrap();
        assert!(next.errors.is_empty(), "{:?}", next.errors);
        for (k, (id, _, _)) in shapes.into_iter().enumerate() {
            let shown: Vec<&str> = next
                .activity
                .iter()
                .filter(|a| a.session == id)
                .flat_map(|a| a.records.iter().map(|r| r.id.as_str()))
                .collect();
            // A Claude line's records are numbered within it (`#0`).
            let appended: Vec<String> = (0..k).map(|n| format!("{id}-new-{n}#0")).collect();
            let mut expected: Vec<&str> = appended.iter().map(String::as_str).collect();
            if id.ends_with('6') {
                // The line being written when the first run read, completed by the append.
                expected.insert(0, "aaaaaaaa-0000-4000-8000-000000000006-pending#0");
            }
            assert_eq!(shown, expected, "{id}");
        }
    }

    #[test]
    fn a_host_that_fails_is_an_error_not_an_empty_state() {
        let host = host();
        let (first, _) = check(&host, None, false);
        host.fail_next(1, dropped(&host));
        let roots = roots_for(&[], None);
        let result = block_on(check_host(&host, &roots, Some(&first), false, false));
        assert!(matches!(
            result,
            Err(DriverError::Host(HostError::Unreachable { .. }))
        ));
    }
}
