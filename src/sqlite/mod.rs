//! SQLite sources (OpenCode's `opencode.db`, grok-cli's `grok.db`) through the two primitives.
//! Used by the driver only: it may import `host` (to read) and the engine's row structs (to hand
//! rows over); the queries and the mapping of rows to records are each harness's own, in the
//! engine (`harness/opencode.rs`, `harness/grokcli.rs`), run here through `Database`.
//!
//! How a database is read without copying it and without writing anything on the host:
//! - SQLite opens it through a read-only VFS ([`vfs`]) whose file is the host's database, page
//!   by page: SQLite runs on a thread of its own (one per [`Snapshot`]); a read of a page it
//!   does not have sends the page number over a channel and waits; the async side (the
//!   snapshot's methods, awaiting the query) answers by reading the host, with the pages
//!   queued meanwhile and, when SQLite reads a run of adjacent pages (a table scan, an
//!   overflow chain) or the next children of an interior page (`host_pages::Siblings`), a
//!   read-ahead window that doubles up to [`MAX_READ_AHEAD_PAGES`]. So any tokio runtime works,
//!   the current-thread one too. The host's files are never opened by SQLite, so no `-shm`,
//!   journal or lock ever appears next to them.
//! - Round trips: pages that depend on each other (a B-tree's levels) cost a read each, so
//!   what can be known ahead is fetched a level at a time, all of a level in one read: the
//!   harness says what its next queries read ([`Database::will_read`]: an index and its keys,
//!   then a second index keyed by the entries found; [`Database::will_scan`]), and the async
//!   side walks those B-trees itself ([`walk::Walk`], [`btree`]) before SQLite runs the query on
//!   cached pages; without a hint, an index leaf SQLite reads has its rows fetched so
//!   (`guess_next`).
//! - WAL: its header and then its frames, whole (their checksums cover the pages, and a frame
//!   caught half written can only be told by them), from where the last load stopped; the
//!   newest committed version of each page is served from them ([`clankie_engine::wal`]). SQLite
//!   is shown a rollback-journal database (header bytes 18 and 19 are 1) of the size the last
//!   commit frame gives, so it never looks for `-wal` or `-shm`.
//! - Cache: the pages fetched stay in the [`Databases`] of the driver's reader of the host, for
//!   the run ([`CACHE_BYTES`] of database pages per database, oldest dropped first, page 1
//!   never; the WAL's pages all). Each load reads the two headers again (one round trip, 132
//!   bytes once page 1 is cached): the same change counter (bytes 24..28) and the same WAL
//!   checkpoint sequence and salts (bytes 12..24) keep the cache and fetch only the WAL's new
//!   frames, whose pages replace the cached ones (so a `--follow` poll fetches only those
//!   frames and the pages a query newly touches); anything else drops the cache. The sessions
//!   a listing found are kept with the cache's generation: listing a database that did not
//!   change since (an idle `HOST:* --follow` poll) runs no query and fetches the two headers
//!   and nothing else. After a query that fetched pages of the database file, the headers
//!   are read again: when they changed (a checkpoint wrote pages meanwhile, or the WAL
//!   restarted) the cache is dropped and the query runs again, at most [`MAX_ATTEMPTS`] times.
//! - Bound: one load ([`Databases::load`] and the queries of its snapshot) fetches at most
//!   [`MAX_SOURCE_BYTES`] of pages and WAL; past that the read fails naming the database
//!   (exit 6). The database's own size does not matter.
//! - OpenCode 2.x: sessions with a `session_v2` row (or with `session_message` rows and no
//!   `message` rows) are read from `session_message`; the rest from `message` / `part`.
//!   `OPENCODE_DB` (see `Layout::db_env`) is honoured by the local host and the POSIX list
//!   script, not yet by the PowerShell one.
//!
//! Its files, by concern:
//! - `mod.rs` (this file): the bounds, [`DatabaseError`], and the types several files share:
//!   [`Databases`], [`Snapshot`] and `Headers`, their definitions only. They are defined here,
//!   their methods in the files below, so that no two files import each other.
//! - `cache.rs`: the pages kept per database for the reader's run, and the methods of
//!   [`Databases`]: the loads that start from them.
//! - `snapshot.rs`: the load of a [`Snapshot`], a database opened for queries: both headers,
//!   the cache kept or dropped, the WAL's new frames.
//! - `runner.rs`: SQLite's thread of a snapshot, and a query run on it, checked after it and
//!   run again when the database changed under it.
//! - `fetch.rs`: the async side's answers to SQLite's thread: pages read in batches with the
//!   read-ahead window, and the walks of hints and guesses read a level at a time.
//! - `walk.rs`: those walks down the B-trees, over the cached pages.
//! - `host_pages.rs`: the database file as SQLite's thread sees it, and its guesses of what
//!   SQLite reads next.
//! - `queries.rs`: the harnesses' queries a snapshot answers, and the hints they give.
//! - `btree.rs`: enough of SQLite's B-tree page format for the walks and the guesses.
//! - `vfs.rs`: the read-only VFS SQLite opens the database through.
//! - `tests.rs`: the reader against real databases, counting what it reads.

mod btree;
mod cache;
mod fetch;
mod host_pages;
mod queries;
mod runner;
mod snapshot;
mod vfs;
mod walk;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

#[cfg(doc)]
use clankie_engine::database::Database;
use clankie_engine::wal::WalIndex;
use clankie_host::{FileRef, HostError};
use clankie_model::limits::MAX_SOURCE_BYTES;
use clankie_model::{ByteRange, Harness};

use cache::Pages;
use runner::Worker;

/// Times a query runs while the database keeps changing under it.
pub const MAX_ATTEMPTS: usize = 3;
/// Pages of a database's file kept for later reads in one process, per database.
pub const CACHE_BYTES: usize = 32 * 1024 * 1024;
/// The most pages read beyond the one SQLite asked for, when it reads adjacent pages.
pub const MAX_READ_AHEAD_PAGES: u32 = 64;
/// The database header's size: what a load reads of the file before any page.
const DB_HEADER: u64 = 100;
/// How long after a load [`Databases::resume`] may start from what it read instead of reading
/// the headers again: the resolution of a session and the read of its page that follows it at
/// once, not a later read.
const HANDOVER_TIME: std::time::Duration = std::time::Duration::from_secs(2);
/// What a load reads of the file when page 1 is not cached: page 1 and the pages after it,
/// where the root pages of the tables and indexes a database is created with lie (OpenCode's
/// are pages 2 to 65 at 4 KiB a page): the first query then finds its B-trees' roots cached
/// instead of fetching them in a round trip of its own. Mostly small, sparse pages: gzip
/// makes them a fraction of this on the wire.
const FIRST_READ: u64 = 256 * 1024;
/// What a read made ahead of a load ([`Databases::seed`], the find-and-read) takes of the WAL:
/// its header and the frames after it up to this, which the load would read next.
const WAL_FIRST_READ: u64 = 256 * 1024;

/// The ranges of a database's top files (the database, then its WAL) that its load reads
/// first: what a read made ahead of it asks ([`Databases::seed`]).
pub fn first_reads() -> Vec<Vec<ByteRange>> {
    vec![
        vec![ByteRange::new(0, FIRST_READ)],
        vec![ByteRange::new(0, WAL_FIRST_READ)],
    ]
}

/// Why a database could not be read (besides host errors).
#[derive(Debug, thiserror::Error)]
pub enum DatabaseError {
    #[error(
        "{path}: reading it needs more than the {mib} MiB of pages one read may fetch; not read",
        mib = MAX_SOURCE_BYTES / (1024 * 1024)
    )]
    TooLarge { path: String },
    #[error(
        "{path}: the database kept changing while it was read ({attempts} attempts); try again"
    )]
    Unstable { path: String, attempts: usize },
    #[error("{path}: not a readable SQLite database: {reason}")]
    Sqlite { path: String, reason: String },
    /// Reading the database through the host failed.
    #[error(transparent)]
    Host(#[from] HostError),
}

/// The pages of the databases read, by host name and database path: owned by the driver's
/// reader of a host, for its run. A mutex, not a cell, because a reader's futures may move
/// between threads (`ls` lists hosts in tasks of their own).
#[derive(Default)]
pub struct Databases {
    entries: Mutex<HashMap<DatabaseKey, Arc<Mutex<Pages>>>>,
}

/// A database by host name and path.
type DatabaseKey = (String, String);

/// A database opened for queries: SQLite on a thread of its own, reading pages of the host's
/// file through the cache of the [`Databases`] it was loaded from.
pub struct Snapshot<'h, H> {
    host: &'h H,
    harness: Harness,
    path: String,
    db_ref: FileRef,
    wal_ref: FileRef,
    pages: Arc<Mutex<Pages>>,
    /// Bytes fetched from the host by this load and its queries (the [`MAX_SOURCE_BYTES`]
    /// bound).
    fetched: AtomicU64,
    /// `None` after the cache was dropped: the next query opens the database again.
    worker: tokio::sync::Mutex<Option<Worker>>,
    /// What stopped a fetch during a query (the query itself then fails with an I/O error,
    /// which this explains).
    failure: Mutex<Option<DatabaseError>>,
    /// Pages the current query read from the database file (not the cache, not the WAL).
    file_pages_read: Mutex<Vec<u32>>,
    /// Pages an earlier query read from the database file since the headers were last read
    /// ([`Databases::resume`]): the next check covers them too.
    carried: Mutex<Vec<u32>>,
    /// The headers as a read of pages that ended a walk read them after its pages, and when
    /// that read began: the check after the query, unless it read pages after them.
    headers_after: Mutex<Option<(std::time::Instant, Headers)>>,
    /// Such headers of the query a [`Databases::resume`] follows, for the first query's check.
    handed_headers: Mutex<Option<(std::time::Instant, Headers)>>,
}

/// The header fields a load needs, and the two files' sizes.
struct Headers {
    db: Vec<u8>,
    db_size: u64,
    wal: Option<WalIndex>,
    wal_size: u64,
}
