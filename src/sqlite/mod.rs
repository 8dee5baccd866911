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
//!   overflow chain) or the next children of an interior page ([`Siblings`]), a read-ahead
//!   window that doubles up to [`MAX_READ_AHEAD_PAGES`]. So any tokio runtime works, the
//!   current-thread one too. The host's files are never opened by SQLite, so no `-shm`,
//!   journal or lock ever appears next to them.
//! - Round trips: pages that depend on each other (a B-tree's levels) cost a read each, so
//!   what can be known ahead is fetched a level at a time, all of a level in one read: the
//!   harness says what its next queries read ([`Database::will_read`]: an index and its keys,
//!   then a second index keyed by the entries found; [`Database::will_scan`]), and the async
//!   side walks those B-trees itself ([`Walk`], [`btree`]) before SQLite runs the query on
//!   cached pages; without a hint, an index leaf SQLite reads has its rows fetched so
//!   (`guess_next`).
//! - WAL: its header and then its frames, whole (their checksums cover the pages, and a frame
//!   caught half written can only be told by them), from where the last load stopped; the
//!   newest committed version of each page is served from them ([`clankie_engine::wal`]). SQLite
//!   is shown a rollback-journal database (header bytes 18 and 19 are 1) of the size the last
//!   commit frame gives, so it never looks for `-wal` or `-shm`.
//! - Cache: the pages fetched stay in the [`Databases`] of the driver's reader of the host, for
//!   the run ([`CACHE_BYTES`] of database pages per database, oldest dropped first; the WAL's
//!   pages all). Each load reads the two headers again (one round trip): the same change
//!   counter (bytes 24..28) and the same WAL checkpoint sequence and salts (bytes 12..24) keep
//!   the cache and fetch only the WAL's new frames, whose pages replace the cached ones (so a
//!   `--follow` poll fetches only those frames and the pages a query newly touches); anything
//!   else drops the cache. After a query that fetched pages of the database file, the headers
//!   are read again: when they changed (a checkpoint wrote pages meanwhile, or the WAL
//!   restarted) the cache is dropped and the query runs again, at most [`MAX_ATTEMPTS`] times.
//! - Bound: one load ([`Databases::load`] and the queries of its snapshot) fetches at most
//!   [`MAX_SOURCE_BYTES`] of pages and WAL; past that the read fails naming the database
//!   (exit 6). The database's own size does not matter.
//! - OpenCode 2.x: sessions with a `session_v2` row (or with `session_message` rows and no
//!   `message` rows) are read from `session_message`; the rest from `message` / `part`.
//!   `OPENCODE_DB` (see `Layout::db_env`) is honoured by the local host and the POSIX list
//!   script, not yet by the PowerShell one.

mod btree;
mod vfs;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension};

use clankie_engine::database::{Database, IndexRead, QueryError, SqlValue};
use clankie_engine::session::{self, SessionFile};
use clankie_engine::wal::{HEADER, WalIndex};
use clankie_engine::{SourceCtx, harness, rows::RowRecords};
use clankie_host::{FileRef, Host, HostError};
use clankie_model::{ByteRange, FileEntry, Harness, ReadResult, display_path};

use clankie_model::limits::{MAX_RANGES, MAX_READ_BYTES, MAX_SOURCE_BYTES};

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

/// What must not change while cached pages are used: the database's change counter, and the
/// WAL's checkpoint sequence and salts (none without a valid WAL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    change_counter: [u8; 4],
    wal: Option<[u8; 12]>,
}

/// The pages of one database kept for the reader's run, shared with SQLite's thread.
#[derive(Default)]
struct Pages {
    /// What the pages below are valid for; `None` before the first load.
    stamp: Option<Stamp>,
    /// Counts the changes of what the pages show (a new stamp, new WAL commits): SQLite's
    /// thread reads only pages of the generation it started with, since SQLite keeps pages of
    /// its own and must not mix them with newer ones.
    generation: u64,
    /// Pages of the database file, by page number (from 1), and their order of arrival.
    file: HashMap<u32, Arc<[u8]>>,
    arrival: VecDeque<u32>,
    file_bytes: usize,
    /// The WAL read so far, and the newest committed version of each page it holds.
    wal: Option<WalIndex>,
    wal_pages: HashMap<u32, Arc<[u8]>>,
    /// What the last load found in the headers: enough to start SQLite again without reading
    /// them ([`Databases::resume`]).
    opened: Option<Opened>,
    /// A query whose check after it was left to the next query ([`Snapshot::sessions_to_resolve`]).
    handover: Option<Handover>,
    /// What a read made ahead of the next load read of the headers ([`Databases::seed`]).
    seeded: Option<Seeded>,
}

/// The first reads of a database and its WAL ([`first_reads`]), made before a load by a call
/// that was made anyway, and when that call began.
struct Seeded {
    at: std::time::Instant,
    db: ReadResult,
    /// `None`: there is no WAL.
    wal: Option<ReadResult>,
}

/// What [`Snapshot::open`] read of the headers to start SQLite on them.
#[derive(Debug, Clone, Copy)]
struct Opened {
    /// When the headers were last read (before the read began).
    checked: std::time::Instant,
    page_size: usize,
    /// The database's size in pages when the WAL does not give it.
    header_pages: u32,
    reserved: usize,
}

/// The headers were read at `checked`; since then a query read `file_pages` from the database
/// file without reading them again after it.
struct Handover {
    checked: std::time::Instant,
    file_pages: Vec<u32>,
    /// The headers as the query's last read of pages read them after its pages
    /// ([`Snapshot::headers_after`]), for the next query's check.
    headers_after: Option<(std::time::Instant, Headers)>,
}

impl Pages {
    /// Drops every page: they belong to another version of the database.
    fn reset(&mut self, stamp: Option<Stamp>) {
        *self = Pages {
            stamp,
            generation: self.generation + 1,
            ..Pages::default()
        };
    }

    fn get(&self, page: u32) -> Option<Arc<[u8]>> {
        self.wal_pages
            .get(&page)
            .or_else(|| self.file.get(&page))
            .cloned()
    }

    fn insert_file_page(&mut self, page: u32, bytes: Arc<[u8]>) {
        let len = bytes.len();
        if let Some(old) = self.file.insert(page, bytes) {
            self.file_bytes -= old.len();
        } else {
            self.arrival.push_back(page);
        }
        self.file_bytes += len;
        while self.file_bytes > CACHE_BYTES {
            let Some(oldest) = self.arrival.pop_front() else {
                break;
            };
            if let Some(old) = self.file.remove(&oldest) {
                self.file_bytes -= old.len();
            }
        }
    }
}

fn lock(pages: &Mutex<Pages>) -> std::sync::MutexGuard<'_, Pages> {
    pages.lock().unwrap_or_else(|e| e.into_inner())
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

impl std::fmt::Debug for Databases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("Databases")
            .field("databases", &entries.len())
            .finish()
    }
}

impl Databases {
    /// The page cache of `db` on `host`, made empty the first time.
    fn pages_of<H: Host>(&self, host: &H, db: &FileEntry) -> Arc<Mutex<Pages>> {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(database_key(host, db))
            .or_default()
            .clone()
    }

    /// Opens a database (and its WAL, whether listed or not) for queries, reading its two
    /// headers and the WAL's frames not read before; pages are read as queries need them.
    pub async fn load<'h, H: Host>(
        &'h self,
        host: &'h H,
        db: &FileEntry,
    ) -> Result<Snapshot<'h, H>, DatabaseError> {
        let pages = self.pages_of(host, db);
        let snapshot = Snapshot::new(host, db, pages);
        let worker = snapshot.open().await?;
        *snapshot.worker.lock().await = Some(worker);
        Ok(snapshot)
    }

    /// [`Databases::load`], except right after a query left its check to the next query
    /// ([`Snapshot::sessions_to_resolve`], within [`HANDOVER_TIME`]): then SQLite starts on
    /// what that load read, without reading the headers again (one round trip less), and the
    /// check after the next query that reads the database file covers the pages both read
    /// (they were read of the version those headers describe, or the query runs again).
    pub async fn resume<'h, H: Host>(
        &'h self,
        host: &'h H,
        db: &FileEntry,
    ) -> Result<Snapshot<'h, H>, DatabaseError> {
        let pages = self
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&database_key(host, db))
            .cloned();
        let resumed = pages.and_then(|pages| {
            let mut locked = lock(&pages);
            let handover = locked.handover.take()?;
            let opened = locked.opened?;
            (locked.stamp.is_some()
                && handover.checked == opened.checked
                && opened.checked.elapsed() < HANDOVER_TIME)
                .then(|| {
                    let page_count = locked
                        .wal
                        .as_ref()
                        .and_then(WalIndex::db_pages)
                        .unwrap_or(opened.header_pages);
                    (
                        opened,
                        page_count,
                        handover.file_pages,
                        handover.headers_after,
                    )
                })
                .map(|resumed| (pages.clone(), resumed))
        });
        let Some((pages, (opened, page_count, carried, headers_after))) = resumed else {
            return self.load(host, db).await;
        };
        let snapshot = Snapshot::new(host, db, pages);
        *snapshot.carried.lock().unwrap_or_else(|e| e.into_inner()) = carried;
        // The headers the last read of the query before read after its pages: the check after
        // the next query uses them unless it reads pages itself.
        *snapshot
            .handed_headers
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = headers_after;
        let worker = snapshot.start(opened.page_size, page_count, opened.reserved);
        *snapshot.worker.lock().await = Some(worker);
        Ok(snapshot)
    }

    /// Keeps what a call that began at `at` read of `db` and its WAL ([`first_reads`]; the
    /// WAL's error `NotFound` when there is none) for the next load of `db` within
    /// [`HANDOVER_TIME`]: it starts from them instead of reading the headers (one round trip
    /// less). They were read in one script, as a load reads them; the check after the first
    /// query that reads the database file holds the pages to the headers read then, so a
    /// change since is seen as one since a load. Anything else read of the WAL is not kept.
    pub fn seed<H: Host>(
        &self,
        host: &H,
        db: &FileEntry,
        at: std::time::Instant,
        db_read: ReadResult,
        wal_read: Result<ReadResult, HostError>,
    ) {
        let wal = match wal_read {
            Ok(wal) => Some(wal),
            Err(HostError::NotFound { .. }) => None,
            Err(_) => return,
        };
        let pages = self.pages_of(host, db);
        lock(&pages).seeded = Some(Seeded {
            at,
            db: db_read,
            wal,
        });
    }

    /// Bytes of database pages and WAL frames held for later reads, all databases together.
    pub fn cached_bytes(&self) -> usize {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .values()
            .map(|pages| {
                let pages = lock(pages);
                pages.file_bytes + pages.wal_pages.values().map(|p| p.len()).sum::<usize>()
            })
            .sum()
    }
}

/// Where [`Databases`] keeps a database's pages: its host and path.
fn database_key<H: Host>(host: &H, db: &FileEntry) -> DatabaseKey {
    (host.name().to_string(), display_path(&db.full_path()))
}

fn file_ref(entry: &FileEntry, suffix: &[u8]) -> FileRef {
    let mut rel = entry.rel.clone();
    rel.extend_from_slice(suffix);
    FileRef {
        harness: entry.harness,
        root: entry.root.to_vec(),
        rel,
    }
}

/// A page SQLite's thread waits for, and where to send it.
struct PageWanted {
    page: u32,
    /// Pages likely read next, fetched with it ([`Siblings`]).
    also: Vec<u32>,
    reply: std::sync::mpsc::Sender<Result<Arc<[u8]>, ()>>,
}

/// What SQLite's thread asks of the async side.
enum Request {
    Page(PageWanted),
    /// SQLite read an index leaf of `table`'s index: the rows its entries point to are likely
    /// next, so the pages down to them are fetched a level at a time, all rows at once.
    Rows {
        table: u32,
        rowids: Vec<i64>,
    },
    /// A query is about to read rows through an index for known keys ([`Database::will_read`]):
    /// the index is descended for them a level at a time, then their rows; `done` is told
    /// when the pages are in the cache (or the guess gave up).
    Hint {
        hint: IndexHint,
        done: std::sync::mpsc::Sender<()>,
    },
    /// A query is about to read every row of a table ([`Database::will_scan`]): its pages are
    /// fetched a level at a time, all of each level at once (with `roots`, as for a hint).
    Scan {
        table: u32,
        roots: Vec<u32>,
        /// A read that follows ([`Database::will_read_after_scan`]), walked with the scan.
        then: Option<IndexHint>,
        done: std::sync::mpsc::Sender<()>,
    },
}

/// The rows queries are about to read through an index ([`IndexRead`]), in pages: the index's
/// root, its table's, and its columns with the rowid.
struct IndexHint {
    index: u32,
    table: u32,
    fields: usize,
    keys: Vec<Vec<u8>>,
    last: Option<usize>,
    /// The next index, whose keys are this column of the entries found.
    then: Option<(Box<IndexHint>, usize)>,
    /// The root pages of the schema's other B-trees, with the first hint of a snapshot: the
    /// next hints need theirs, and they cost nothing in the same read.
    roots: Vec<u32>,
}

/// Entries an index page holds at the least, for keys as short as ids (a guess): how many
/// pages of a level an [`IndexRead::last`] follows.
const ENTRIES_PER_PAGE: usize = 16;

/// A page of an index on a walk down to some keys: its place in index order (the child or
/// cell indexes from the root), and which of the keys it may hold.
struct IndexStep {
    page: u32,
    place: Vec<usize>,
    keys: Vec<usize>,
}

/// One descent of [`Snapshot::prefetch`] in progress.
enum Walk {
    /// Down an index to the entries of its keys; `found`: the entries so far, by place.
    Index {
        hint: IndexHint,
        level: Vec<IndexStep>,
        found: Vec<(Vec<usize>, btree::IndexEntry)>,
    },
    /// Down a table to rows: the pages of the level, each with the rowids below it.
    Rows { level: BTreeMap<u32, Vec<i64>> },
    /// Pages with nothing below them (overflow pages).
    Pages(Vec<u32>),
    /// Every page of a table's B-tree, a level at a time (a scan; overflow pages left out).
    Table(Vec<u32>),
    /// The upper levels of a B-tree the walk reaches later, read ahead while each whole level
    /// fits in `left` pages ([`AHEAD_BYTES`]): see [`Walk::ahead`].
    Ahead { level: Vec<u32>, left: usize },
}

/// How much of each B-tree a hinted walk reaches later (the hint's table, the next index and
/// its table) is read ahead, level by level from its root, with the walk's own levels: a level
/// is read only while the whole of it fits. The rows' pages sit a few levels down each tree,
/// and each level is a round trip once the keys are known; the upper levels are few pages (a
/// 1 GiB database's message table: 11 pages under its root, the parts' index: 2 and then 93),
/// so reading them before the keys are known takes those round trips out of the walk. A
/// level past this is left to the walk (that database's parts table: 434 pages under its
/// root), and a small tree may come whole (its leaves are then a level that fits): bytes for
/// round trips, at most this much per tree, each level within `MAX_READ_BYTES`.
const AHEAD_BYTES: usize = 512 * 1024;

impl Walk {
    fn index(hint: IndexHint) -> Walk {
        let step = IndexStep {
            page: hint.index,
            place: Vec::new(),
            keys: (0..hint.keys.len()).collect(),
        };
        Walk::Index {
            hint,
            level: vec![step],
            found: Vec::new(),
        }
    }

    /// The trees `hint`'s walk reaches after its first index (its table, the next index and
    /// that index's table), read ahead from their roots ([`AHEAD_BYTES`]).
    fn ahead(hint: &IndexHint, page_size: usize) -> Vec<Walk> {
        let mut roots = vec![hint.table];
        if let Some((then, _)) = &hint.then {
            roots.extend([then.index, then.table]);
        }
        roots.sort_unstable();
        roots.dedup();
        roots.retain(|&root| root != hint.index);
        let left = AHEAD_BYTES / page_size.max(512);
        roots
            .into_iter()
            .map(|root| Walk::Ahead {
                level: vec![root],
                left,
            })
            .collect()
    }

    /// The pages of its current level.
    fn pages(&self) -> Vec<u32> {
        match self {
            Walk::Index { level, .. } => level.iter().map(|step| step.page).collect(),
            Walk::Rows { level } => level.keys().copied().collect(),
            Walk::Pages(pages) | Walk::Table(pages) | Walk::Ahead { level: pages, .. } => {
                pages.clone()
            }
        }
    }

    /// Goes one level down from the pages read: pushes what goes on (itself, the rows its
    /// entries point to, the next index) onto `out`.
    fn step(self, pages: &Pages, reserved: usize, out: &mut Vec<Walk>) {
        match self {
            Walk::Index {
                hint,
                level,
                mut found,
            } => {
                let mut next = Vec::new();
                for step in level {
                    let Some(bytes) = pages.get(step.page) else {
                        continue;
                    };
                    let page = btree::Page::new(step.page, &bytes, reserved);
                    let Some((cells, right)) = page.index_cells(hint.fields) else {
                        continue;
                    };
                    index_step(&hint, &step, &cells, right, &mut next, &mut found);
                }
                if let Some(last) = hint.last {
                    let keep = 2 + last / ENTRIES_PER_PAGE;
                    next.drain(..next.len().saturating_sub(keep));
                }
                if !next.is_empty() {
                    out.push(Walk::Index {
                        hint,
                        level: next,
                        found,
                    });
                    return;
                }
                found.sort_by(|a, b| a.0.cmp(&b.0));
                if let Some(last) = hint.last {
                    found.drain(..found.len().saturating_sub(last));
                }
                if !found.is_empty() {
                    let rowids = found.iter().map(|(_, entry)| entry.rowid).collect();
                    out.push(Walk::Rows {
                        level: BTreeMap::from([(hint.table, rowids)]),
                    });
                }
                if let Some((mut then, column)) = hint.then {
                    then.keys = found
                        .iter()
                        .filter_map(|(_, entry)| match entry.columns.get(column) {
                            Some(btree::KeyColumn::Text(text)) => Some(text.clone()),
                            _ => None,
                        })
                        .collect();
                    then.keys.sort();
                    then.keys.dedup();
                    if !then.keys.is_empty() {
                        out.push(Walk::index(*then));
                    }
                }
            }
            Walk::Rows { level } => {
                let mut next: BTreeMap<u32, Vec<i64>> = BTreeMap::new();
                let mut overflow = BTreeSet::new();
                for (number, rowids) in level {
                    let Some(bytes) = pages.get(number) else {
                        continue;
                    };
                    let page = btree::Page::new(number, &bytes, reserved);
                    for rowid in rowids {
                        if let Some(child) = page.table_child(rowid) {
                            next.entry(child).or_default().push(rowid);
                        } else if let Some((first, count)) = page.overflow(rowid) {
                            overflow.extend((first..first.saturating_add(count)).take(64));
                        }
                    }
                }
                if !next.is_empty() {
                    out.push(Walk::Rows { level: next });
                }
                if !overflow.is_empty() {
                    out.push(Walk::Pages(overflow.into_iter().collect()));
                }
            }
            Walk::Pages(_) => {}
            Walk::Ahead { level, left } => {
                let next = children_of(&level, pages, reserved);
                if !next.is_empty() && next.len() <= left {
                    out.push(Walk::Ahead {
                        left: left - next.len(),
                        level: next,
                    });
                }
            }
            Walk::Table(level) => {
                let next = children_of(&level, pages, reserved);
                if !next.is_empty() {
                    out.push(Walk::Table(next));
                }
            }
        }
    }
}

/// The children of the cached interior pages of `level`, in order: the B-trees' next level
/// (leaves and pages not cached have none).
fn children_of(level: &[u32], pages: &Pages, reserved: usize) -> Vec<u32> {
    level
        .iter()
        .filter_map(|&number| {
            let bytes = pages.get(number)?;
            btree::Page::new(number, &bytes, reserved).children()
        })
        .flatten()
        .collect()
}

/// Steps each of `walks` down from the level just read, and on down through every level
/// already cached (read ahead, or by an earlier walk), so that a walk's next read is the
/// first level it lacks: a level each walk has cached costs no round trip, even beside a
/// walk that still reads its own.
fn descend(walks: Vec<Walk>, pages: &Pages, reserved: usize) -> Vec<Walk> {
    let mut next = Vec::new();
    let mut todo: Vec<(Walk, usize)> = walks.into_iter().map(|walk| (walk, 0)).collect();
    while let Some((walk, depth)) = todo.pop() {
        let mut stepped = Vec::new();
        walk.step(pages, reserved, &mut stepped);
        for walk in stepped {
            // Bounded: a corrupt tree whose pages point back up cannot loop here.
            let cached = walk.pages().iter().all(|&page| pages.get(page).is_some());
            if cached && depth < 10 {
                todo.push((walk, depth + 1));
            } else {
                next.push(walk);
            }
        }
    }
    next
}

/// One index page of a walk: the children that may hold the step's keys go to `next` (each
/// with the keys it may hold), the entries of its keys to `found`. An entry not understood
/// bounds nothing: the children on both sides of it may hold any key.
fn index_step(
    hint: &IndexHint,
    step: &IndexStep,
    cells: &[btree::IndexCell],
    right: Option<u32>,
    next: &mut Vec<IndexStep>,
    found: &mut Vec<(Vec<usize>, btree::IndexEntry)>,
) {
    let at = |i: usize| {
        let mut place = step.place.clone();
        place.push(i);
        place
    };
    // The keys between two bounds (`None`: unbounded on that side).
    let between = |low: Option<&btree::KeyColumn>, high: Option<&btree::KeyColumn>| {
        step.keys
            .iter()
            .copied()
            .filter(|&k| {
                let key = &hint.keys[k];
                low.is_none_or(|low| low.cmp_key(key).is_le())
                    && high.is_none_or(|high| high.cmp_key(key).is_ge())
            })
            .collect::<Vec<usize>>()
    };
    let mut low: Option<&btree::KeyColumn> = None;
    let mut low_known = true;
    for (i, cell) in cells.iter().enumerate() {
        let first = cell.first();
        if let Some(child) = cell.child {
            let keys = between(low.filter(|_| low_known), first);
            if !keys.is_empty() {
                next.push(IndexStep {
                    page: child,
                    place: at(2 * i),
                    keys,
                });
            }
        }
        if let (Some(first), Some(entry)) = (first, &cell.entry)
            && step
                .keys
                .iter()
                .any(|&k| first.cmp_key(&hint.keys[k]).is_eq())
        {
            found.push((at(2 * i + 1), entry.clone()));
        }
        low = first;
        low_known = first.is_some();
    }
    if let Some(right) = right {
        let keys = between(low.filter(|_| low_known), None);
        if !keys.is_empty() {
            next.push(IndexStep {
                page: right,
                place: at(2 * cells.len()),
                keys,
            });
        }
    }
}

/// Which B-tree SQLite reads, from the pages it asks for, to guess the pages it reads next.
#[derive(Default)]
struct Tracker {
    /// Index root page → (its table's root page, its columns with the rowid).
    indexes: HashMap<u32, (u32, usize)>,
    /// The index whose root SQLite read last: the index of the leaves it reads next.
    index: Option<u32>,
    /// Index leaves whose rows were asked for already.
    asked: HashSet<u32>,
    /// Per index, the first column of the entries whose rows were asked for last: a scan that
    /// goes on to the next leaf goes on with the same key.
    last_key: HashMap<u32, Vec<u8>>,
    /// Index name → root page, and table name → root page, for hints.
    names: HashMap<String, u32>,
    tables: HashMap<String, u32>,
    /// The roots of every B-tree went with a hint already.
    roots_sent: bool,
    /// The current query said what it reads ([`Database::will_read`]): no guessing for it.
    hinted: bool,
    /// A read that follows the next scan ([`Database::will_read_after_scan`]): walked with it.
    after_scan: Option<IndexHint>,
    siblings: Siblings,
}

/// The children of the interior pages SQLite read, to tell a scan: SQLite reading the next
/// child of the same parent goes on through that parent's children (a table scan, a range of
/// an index), so those that follow are fetched with it, a window that doubles per parent up
/// to [`MAX_READ_AHEAD_PAGES`]. A seek reads one child of each parent: nothing more.
#[derive(Default)]
struct Siblings {
    /// Interior page → its children in key order (the right-most last).
    children: HashMap<u32, Vec<u32>>,
    /// Page → (its parent, its place among the parent's children).
    parent: HashMap<u32, (u32, usize)>,
    /// Parent → the place of the child SQLite read last, and the window.
    last: HashMap<u32, (usize, u32)>,
}

impl Siblings {
    /// Notes what SQLite read: an interior page's children, and which child of its parent.
    fn read(&mut self, number: u32, page: &btree::Page<'_>) {
        if let Some(&(parent, place)) = self.parent.get(&number) {
            let window = self.last.get(&parent).map_or(0, |&(_, window)| window);
            self.last.insert(parent, (place, window));
        }
        if self.children.contains_key(&number) {
            return;
        }
        if let Some(children) = page.children() {
            for (place, &child) in children.iter().enumerate() {
                self.parent.insert(child, (number, place));
            }
            self.children.insert(number, children);
        }
    }

    /// The siblings to fetch with `number`, when SQLite read the one before it last.
    fn ahead_of(&mut self, number: u32) -> Vec<u32> {
        let Some(&(parent, place)) = self.parent.get(&number) else {
            return Vec::new();
        };
        let Some(&(last, window)) = self.last.get(&parent) else {
            return Vec::new();
        };
        if place != last + 1 {
            return Vec::new();
        }
        let window = (window * 2).clamp(8, MAX_READ_AHEAD_PAGES);
        self.last.insert(parent, (last, window));
        self.children[&parent]
            .iter()
            .skip(place + 1)
            .take(window as usize)
            .copied()
            .collect()
    }
}

/// An index's root page → (its table's root page, its columns with the rowid).
type IndexRoots = HashMap<u32, (u32, usize)>;

/// The indexes of rowid tables, from the schema, by root page and by name; and the tables'
/// root pages by name.
type Schema = (IndexRoots, HashMap<String, u32>, HashMap<String, u32>);

/// The schema's B-trees ([`Schema`]).
fn index_roots(conn: &Connection) -> rusqlite::Result<Schema> {
    let tables = conn
        .prepare("SELECT name, rootpage FROM sqlite_master WHERE type = 'table' AND rootpage > 0")?
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, u32>(1)?)))?
        .collect::<rusqlite::Result<HashMap<_, _>>>()?;
    let mut stmt = conn.prepare(
        "SELECT i.name, i.rootpage, t.rootpage FROM sqlite_master i \
         JOIN sqlite_master t ON t.type = 'table' AND t.name = i.tbl_name \
         WHERE i.type = 'index' AND i.rootpage > 0 AND t.rootpage > 0 \
         AND t.sql NOT LIKE '%WITHOUT ROWID%'",
    )?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, u32>(1)?,
                r.get::<_, u32>(2)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut roots = HashMap::new();
    let mut names = HashMap::new();
    for (name, root, table) in rows {
        let columns: u32 =
            conn.query_row("SELECT count(*) FROM pragma_index_info(?1)", [&name], |r| {
                r.get(0)
            })?;
        roots.insert(root, (table, columns as usize + 1));
        names.insert(name, root);
    }
    Ok((roots, names, tables))
}

/// A query for SQLite's thread: the connection (or why it did not open), and the file it
/// reads (to send hints).
type Job = Box<dyn FnOnce(Result<&Connection, &str>, &HostPages) + Send>;

/// SQLite's thread for one opened snapshot of a database, and what it asks for.
struct Worker {
    jobs: std::sync::mpsc::Sender<Job>,
    requests: tokio::sync::mpsc::UnboundedReceiver<Request>,
    /// The generation of the pages it reads (see [`Pages::generation`]).
    generation: u64,
    /// The database's page size and size in pages, as shown to SQLite.
    page_size: usize,
    page_count: u32,
    /// Bytes reserved at the end of each page.
    reserved: usize,
    /// The page after the last run of pages fetched, and the read-ahead window: a request for
    /// that page means SQLite reads on in order.
    next_in_run: u32,
    window: u32,
}

/// The database file as SQLite's thread sees it: cached pages, or a request to the async side.
struct HostPages {
    pages: Arc<Mutex<Pages>>,
    /// The generation of `pages` this thread's SQLite started with.
    generation: u64,
    requests: tokio::sync::mpsc::UnboundedSender<Request>,
    page_size: usize,
    page_count: u32,
    /// Bytes reserved at the end of each page (database header byte 20).
    reserved: usize,
    tracker: Mutex<Tracker>,
}

impl HostPages {
    fn page(&self, page: u32) -> Result<Arc<[u8]>, ()> {
        let bytes = self.cached_or_fetched(page, |tracker| tracker.siblings.ahead_of(page))?;
        self.tracker
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .siblings
            .read(page, &btree::Page::new(page, &bytes, self.reserved));
        self.guess_next(page, &bytes);
        Ok(bytes)
    }

    /// The page from the cache, else fetched with the pages `also` guesses (asked only then).
    fn cached_or_fetched(
        &self,
        page: u32,
        also: impl FnOnce(&mut Tracker) -> Vec<u32>,
    ) -> Result<Arc<[u8]>, ()> {
        {
            let pages = lock(&self.pages);
            if pages.generation != self.generation {
                return Err(());
            }
            if let Some(bytes) = pages.get(page) {
                return Ok(bytes);
            }
        }
        let also = also(&mut self.tracker.lock().unwrap_or_else(|e| e.into_inner()));
        let (reply, answer) = std::sync::mpsc::channel();
        self.requests
            .send(Request::Page(PageWanted { page, also, reply }))
            .map_err(|_| ())?;
        // The async side answers every request it takes; when it is gone, so is `reply`.
        answer.recv().map_err(|_| ())?
    }

    /// Asks for the rows of an index leaf SQLite just read, when it is a leaf of the index
    /// whose root it read last.
    fn guess_next(&self, page: u32, bytes: &[u8]) {
        let mut tracker = self.tracker.lock().unwrap_or_else(|e| e.into_inner());
        if tracker.hinted {
            return;
        }
        if tracker.indexes.contains_key(&page) {
            tracker.index = Some(page);
        }
        let Some(index) = tracker.index else {
            return;
        };
        let Some(&(table, fields)) = tracker.indexes.get(&index) else {
            return;
        };
        let leaf = btree::Page::new(page, bytes, self.reserved);
        if leaf.kind() != Some(btree::Kind::IndexLeaf) || !tracker.asked.insert(page) {
            return;
        }
        let entries = leaf.index_entries(fields);
        // The rows of one key: the key the last leaf's scan was on when this leaf has it (the
        // scan goes on), else the key of most entries (a leaf's entries of its neighbours'
        // keys are rarely read: fetching them would cost more than it saves).
        let mut counts: HashMap<&[u8], usize> = HashMap::new();
        for (key, _) in &entries {
            *counts.entry(key.as_slice()).or_default() += 1;
        }
        let key = match tracker.last_key.get(&index) {
            Some(last) if counts.contains_key(last.as_slice()) => last.clone(),
            _ => match counts.into_iter().max_by_key(|&(_, count)| count) {
                Some((key, _)) => key.to_vec(),
                None => return,
            },
        };
        let rowids: Vec<i64> = entries
            .iter()
            .filter(|(k, _)| *k == key)
            .map(|&(_, rowid)| rowid)
            .collect();
        tracker.last_key.insert(index, key);
        // One row is what SQLite reads next anyway.
        if rowids.len() > 1 {
            let _ = self.requests.send(Request::Rows { table, rowids });
        }
    }
}

impl vfs::PageFile for HostPages {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<bool, ()> {
        let size = self.size();
        let page_size = self.page_size as u64;
        let mut at = offset;
        let end = offset + buf.len() as u64;
        while at < end.min(size) {
            let page = at / page_size;
            let within = (at - page * page_size) as usize;
            let bytes = self.page(page as u32 + 1)?;
            let take = (bytes.len().saturating_sub(within)).min((end - at) as usize);
            let into = (at - offset) as usize;
            if take == 0 {
                break;
            }
            buf[into..into + take].copy_from_slice(&bytes[within..within + take]);
            at += take as u64;
        }
        let filled = (at - offset) as usize;
        buf[filled..].fill(0);
        // Bytes 18 and 19 of the header: file format versions 1, rollback journal, so that
        // SQLite reads no WAL of its own (this file already has the WAL's pages applied).
        for byte in 18..20u64 {
            if (offset..offset + filled as u64).contains(&byte) {
                buf[(byte - offset) as usize] = 1;
            }
        }
        Ok(filled == buf.len())
    }

    fn size(&self) -> u64 {
        u64::from(self.page_count) * self.page_size as u64
    }
}

/// The header fields a load needs, and the two files' sizes.
struct Headers {
    db: Vec<u8>,
    db_size: u64,
    wal: Option<WalIndex>,
    wal_size: u64,
}

impl Headers {
    fn stamp(&self) -> Stamp {
        let mut change_counter = [0; 4];
        if let Some(counter) = self.db.get(24..28) {
            change_counter.copy_from_slice(counter);
        }
        Stamp {
            change_counter,
            wal: self.wal.as_ref().map(|wal| *wal.stamp()),
        }
    }

    fn word(&self, at: usize) -> Option<u32> {
        let b = self.db.get(at..at + 4)?;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The page size the header gives (an empty file: SQLite's default).
    fn page_size(&self) -> Result<usize, String> {
        if self.db.is_empty() {
            return Ok(4096);
        }
        if !self.db.starts_with(b"SQLite format 3\0") || self.db.len() < DB_HEADER as usize {
            return Err("file is not a database".to_string());
        }
        let size = match u16::from_be_bytes([self.db[16], self.db[17]]) {
            1 => 65536,
            n => usize::from(n),
        };
        if !(512..=65536).contains(&size) || !size.is_power_of_two() {
            return Err(format!("page size {size} in the header"));
        }
        Ok(size)
    }
}

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

impl<H> std::fmt::Debug for Snapshot<'_, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("path", &self.path)
            .field("fetched", &self.fetched.load(Ordering::Relaxed))
            .finish()
    }
}

impl<'h, H: Host> Snapshot<'h, H> {
    /// A snapshot of `db` on `pages`, SQLite not started.
    fn new(host: &'h H, db: &FileEntry, pages: Arc<Mutex<Pages>>) -> Snapshot<'h, H> {
        Snapshot {
            host,
            harness: db.harness,
            path: display_path(&db.full_path()),
            db_ref: file_ref(db, b""),
            wal_ref: file_ref(db, b"-wal"),
            pages,
            fetched: AtomicU64::new(0),
            worker: tokio::sync::Mutex::new(None),
            failure: Mutex::new(None),
            file_pages_read: Mutex::new(Vec::new()),
            carried: Mutex::new(Vec::new()),
            headers_after: Mutex::new(None),
            handed_headers: Mutex::new(None),
        }
    }

    /// Bytes this load and its queries fetched from the host so far.
    pub fn fetched_bytes(&self) -> u64 {
        self.fetched.load(Ordering::Relaxed)
    }

    fn charge(&self, bytes: u64) -> Result<(), DatabaseError> {
        let total = self.fetched.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if total > MAX_SOURCE_BYTES {
            return Err(DatabaseError::TooLarge {
                path: self.path.clone(),
            });
        }
        Ok(())
    }

    fn sqlite_error(&self, reason: String) -> DatabaseError {
        DatabaseError::Sqlite {
            path: self.path.clone(),
            reason,
        }
    }

    /// Both headers in one call; the database must exist, the WAL need not.
    async fn headers(&self) -> Result<Headers, DatabaseError> {
        // Without page 1 cached, the first pages come with the header: SQLite reads page 1
        // first thing, then the roots of what it queries (see `FIRST_READ`).
        let db_len = match lock(&self.pages).get(1) {
            Some(_) => DB_HEADER,
            None => FIRST_READ,
        };
        let reads = self.header_reads(db_len);
        let results = self.host.read_many(&reads).await?;
        self.parse_headers(results.into_iter())
    }

    /// The headers for a load, and when they were read (before that read began), with what
    /// was read of the WAL from its start: a seed's ([`Databases::seed`]), else read now.
    async fn headers_for_load(
        &self,
    ) -> Result<(std::time::Instant, Headers, Vec<u8>), DatabaseError> {
        let seeded = lock(&self.pages)
            .seeded
            .take()
            .filter(|seeded| seeded.at.elapsed() < HANDOVER_TIME);
        let Some(seeded) = seeded else {
            let checked = std::time::Instant::now();
            return Ok((checked, self.headers().await?, Vec::new()));
        };
        let wal_read = seeded.wal;
        let wal_bytes = wal_read
            .as_ref()
            .map(|wal| wal.chunks.concat())
            .unwrap_or_default();
        // The WAL's header alone: the frames after it are charged when they are used.
        let wal_head = wal_read.map(|wal| ReadResult {
            size: wal.size,
            chunks: vec![wal_bytes[..wal_bytes.len().min(HEADER)].to_vec()],
        });
        let results = [
            Ok(seeded.db),
            wal_head.ok_or_else(|| HostError::NotFound {
                host: self.host.name().to_string(),
                path: self.path.clone(),
            }),
        ];
        let headers = self.parse_headers(results.into_iter())?;
        Ok((seeded.at, headers, wal_bytes))
    }

    /// The reads of both headers, `db_len` bytes of the database file.
    fn header_reads(&self, db_len: u64) -> [(FileRef, Vec<ByteRange>); 2] {
        [
            (self.db_ref.clone(), vec![ByteRange::new(0, db_len)]),
            (
                self.wal_ref.clone(),
                vec![ByteRange::new(0, clankie_engine::wal::HEADER as u64)],
            ),
        ]
    }

    /// The headers from the results of [`Snapshot::header_reads`].
    fn parse_headers(
        &self,
        mut results: impl Iterator<Item = Result<clankie_model::ReadResult, HostError>>,
    ) -> Result<Headers, DatabaseError> {
        let db = results.next().ok_or_else(|| self.missing())??;
        let (wal_head, wal_size) = match results.next() {
            Some(Ok(wal)) => (wal.chunks.concat(), wal.size),
            Some(Err(HostError::NotFound { .. })) | None => (Vec::new(), 0),
            Some(Err(e)) => return Err(e.into()),
        };
        let db_bytes = db.chunks.concat();
        self.charge((db_bytes.len() + wal_head.len()) as u64)?;
        let wal = WalIndex::new(&wal_head);
        Ok(Headers {
            db: db_bytes,
            db_size: db.size,
            wal,
            wal_size,
        })
    }

    fn missing(&self) -> DatabaseError {
        HostError::NotFound {
            host: self.host.name().to_string(),
            path: self.path.clone(),
        }
        .into()
    }

    /// Reads the headers and the WAL's new frames, drops the cache if it is stale, and starts
    /// SQLite's thread on what they describe.
    async fn open(&self) -> Result<Worker, DatabaseError> {
        let (checked, headers, wal_read) = self.headers_for_load().await?;
        let page_size = match (&headers.wal, headers.db.is_empty()) {
            // Nothing checkpointed yet: the WAL says.
            (Some(wal), true) => wal.page_size(),
            _ => headers.page_size().map_err(|e| self.sqlite_error(e))?,
        };
        let stamp = headers.stamp();
        let mut wal = {
            let mut pages = lock(&self.pages);
            let stale = pages.stamp != Some(stamp)
                || pages
                    .wal
                    .as_ref()
                    .is_some_and(|wal| wal.valid_len() > headers.wal_size);
            if stale {
                pages.reset(Some(stamp));
            }
            pages.wal.clone().or(headers.wal.clone())
        };
        if let Some(index) = &mut wal
            && index.page_size() == page_size
        {
            self.read_wal_from(index, headers.wal_size, &wal_read)
                .await?;
        } else {
            // A WAL of another page size is one SQLite would not use either.
            wal = None;
        }
        let header_pages = match (headers.word(28), headers.word(92)) {
            // The header's page count holds when it was written by the same change.
            (Some(count), Some(valid_for)) if count > 0 && headers.word(24) == Some(valid_for) => {
                count
            }
            _ => (headers.db_size / page_size as u64) as u32,
        };
        let page_count = wal
            .as_ref()
            .and_then(WalIndex::db_pages)
            .unwrap_or(header_pages);
        let reserved = headers.db.get(20).map_or(0, |&r| usize::from(r));
        {
            let mut pages = lock(&self.pages);
            pages.wal = wal;
            pages.opened = Some(Opened {
                checked,
                page_size,
                header_pages,
                reserved,
            });
            // What a query read before is as good as this load (see `Databases::resume`).
            pages.handover = None;
            // The pages read with the header are of the version it describes.
            for (i, bytes) in headers.db.chunks_exact(page_size).enumerate() {
                let number = i as u32 + 1;
                if !pages.wal_pages.contains_key(&number) && pages.get(number).is_none() {
                    pages.insert_file_page(number, bytes.into());
                }
            }
        }
        Ok(self.start(page_size, page_count, reserved))
    }

    /// Fetches the WAL from where `index` stopped to `wal_size` and keeps the pages of the
    /// transactions it completes; returns their numbers.
    async fn read_wal(
        &self,
        index: &mut WalIndex,
        wal_size: u64,
    ) -> Result<Vec<u32>, DatabaseError> {
        self.read_wal_from(index, wal_size, &[]).await
    }

    /// [`Snapshot::read_wal`], given `read`, the WAL's first bytes as the same load read them
    /// (a seed's): what of them lies after where `index` stopped is taken from there.
    async fn read_wal_from(
        &self,
        index: &mut WalIndex,
        wal_size: u64,
        read: &[u8],
    ) -> Result<Vec<u32>, DatabaseError> {
        let mut changed = Vec::new();
        let mut at = index.valid_len();
        // Bytes after the last completed transaction, given again with the next chunk.
        let mut carried = Vec::new();
        let mut ahead = read
            .get(usize::try_from(at).unwrap_or(usize::MAX)..)
            .filter(|rest| !rest.is_empty() && (read.len() as u64) <= wal_size);
        while at < wal_size {
            let chunk = match ahead.take() {
                Some(rest) => rest.to_vec(),
                None => {
                    let want = (wal_size - at).min(MAX_READ_BYTES);
                    let result = self
                        .host
                        .read(&self.wal_ref, &[ByteRange::new(at, want)])
                        .await?;
                    result.chunks.concat()
                }
            };
            if chunk.is_empty() {
                break;
            }
            self.charge(chunk.len() as u64)?;
            at += chunk.len() as u64;
            carried.extend_from_slice(&chunk);
            let done = index.extend(&carried);
            let mut pages = lock(&self.pages);
            if !done.pages.is_empty() {
                pages.generation += 1;
            }
            for (page, offset) in done.pages {
                changed.push(page);
                let bytes: Arc<[u8]> = carried[offset..offset + index.page_size()].into();
                pages.wal_pages.insert(page, bytes);
                if let Some(old) = pages.file.remove(&page) {
                    pages.file_bytes -= old.len();
                }
            }
            drop(pages);
            carried.drain(..done.consumed);
            // A transaction larger than what is left cannot complete within this read.
            if carried.len() as u64 > MAX_SOURCE_BYTES {
                break;
            }
        }
        Ok(changed)
    }

    fn start(&self, page_size: usize, page_count: u32, reserved: usize) -> Worker {
        let (requests_tx, requests) = tokio::sync::mpsc::unbounded_channel();
        let (jobs, jobs_rx) = std::sync::mpsc::channel::<Job>();
        let generation = lock(&self.pages).generation;
        let file = Arc::new(HostPages {
            pages: self.pages.clone(),
            generation,
            requests: requests_tx,
            page_size,
            page_count,
            reserved,
            tracker: Mutex::default(),
        });
        // The thread ends when the worker (its job sender) is dropped.
        let spawned = std::thread::Builder::new()
            .name("clankie-sqlite".to_string())
            .spawn(move || {
                let conn = vfs::open(file.clone()).and_then(|conn| {
                    // Sorts stay in memory: no temporary file on the reading side either.
                    conn.pragma_update(None, "temp_store", "MEMORY")?;
                    // SQLite keeps few pages of its own, so that it reads an index's root
                    // through the VFS whenever it enters the index (`guess_next`); the pages
                    // stay in the cache of `Pages`.
                    conn.pragma_update(None, "cache_size", 16)?;
                    Ok(conn)
                });
                if let Ok(conn) = &conn
                    && let Ok((roots, names, tables)) = index_roots(conn)
                {
                    let mut tracker = file.tracker.lock().unwrap_or_else(|e| e.into_inner());
                    tracker.indexes = roots;
                    tracker.names = names;
                    tracker.tables = tables;
                }
                for job in jobs_rx {
                    {
                        let mut tracker = file.tracker.lock().unwrap_or_else(|e| e.into_inner());
                        tracker.hinted = false;
                        tracker.after_scan = None;
                    }
                    match &conn {
                        Ok(conn) => job(Ok(conn), &file),
                        Err(e) => job(Err(&e.to_string()), &file),
                    }
                }
            });
        // Without a thread the job receiver is gone: every query fails saying so (`run`).
        drop(spawned);
        Worker {
            jobs,
            requests,
            generation,
            page_size,
            page_count,
            reserved,
            next_in_run: 0,
            window: 0,
        }
    }

    /// Runs `query` on SQLite's thread, answering its page requests meanwhile; again on a fresh
    /// cache when the database changed under it.
    async fn run<R, F>(&self, query: F) -> Result<R, DatabaseError>
    where
        R: Send + 'static,
        F: Fn(&dyn Database) -> Result<R, QueryError> + Send + Sync + 'static,
    {
        self.run_checking(query, false).await
    }

    /// [`Snapshot::run`]; with `check_later`, a query that succeeded leaves the check of the
    /// headers after it to the next query of a [`Databases::resume`] that follows at once.
    async fn run_checking<R, F>(&self, query: F, check_later: bool) -> Result<R, DatabaseError>
    where
        R: Send + 'static,
        F: Fn(&dyn Database) -> Result<R, QueryError> + Send + Sync + 'static,
    {
        let query = Arc::new(query);
        let mut guard = self.worker.lock().await;
        for _ in 0..MAX_ATTEMPTS {
            if guard
                .as_ref()
                .is_some_and(|worker| worker.generation != lock(&self.pages).generation)
            {
                // Newer pages arrived since SQLite started (another load): start it afresh.
                *guard = None;
            }
            let worker = match &mut *guard {
                Some(worker) => worker,
                empty => empty.insert(self.open().await?),
            };
            let (done_tx, done) = tokio::sync::oneshot::channel();
            let job_query = query.clone();
            let job: Job = Box::new(move |conn, file| {
                let result = match conn {
                    Ok(conn) => job_query(&Queries { conn, file }),
                    Err(e) => Err(QueryError(e.to_string())),
                };
                let _ = done_tx.send(result);
            });
            self.file_pages_read
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
            // Headers read after earlier pages hold only as a query before this snapshot's
            // first handed them over ([`Databases::resume`]).
            let handed = self
                .handed_headers
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            *self.headers_after.lock().unwrap_or_else(|e| e.into_inner()) = handed;
            let result = match worker.jobs.send(job) {
                Ok(()) => self.serve(worker, done).await,
                Err(_) => Err(QueryError("SQLite's thread did not start".to_string())),
            };
            let generation = worker.generation;
            if result.is_err() && lock(&self.pages).generation != generation {
                // Another load of the database changed its pages under this query: again, on
                // what they show now.
                *guard = None;
                continue;
            }
            if let Some(failure) = self
                .failure
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
            {
                // The query failed because a fetch did: say why.
                *guard = None;
                return Err(failure);
            }
            // What an earlier query read unchecked counts as read by this one.
            let carried =
                std::mem::take(&mut *self.carried.lock().unwrap_or_else(|e| e.into_inner()));
            let read_file = !carried.is_empty()
                || !self
                    .file_pages_read
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .is_empty();
            if check_later && result.is_ok() {
                let mut pages = lock(&self.pages);
                if let Some(opened) = pages.opened
                    && pages.generation == generation
                {
                    let mut file_pages = carried;
                    file_pages.extend(
                        self.file_pages_read
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .iter(),
                    );
                    let headers_after = self
                        .headers_after
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .take();
                    pages.handover = Some(Handover {
                        checked: opened.checked,
                        file_pages,
                        headers_after,
                    });
                    return result.map_err(|e| self.sqlite_error(e.0));
                }
            }
            if read_file {
                // Read after the query's last pages already, or now.
                let after = self
                    .headers_after
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take();
                let (checked, headers) = match after {
                    Some(read) => read,
                    None => (std::time::Instant::now(), self.headers().await?),
                };
                if lock(&self.pages).stamp != Some(headers.stamp()) {
                    // Pages from before and after a change may have been mixed: start over.
                    lock(&self.pages).reset(None);
                    *guard = None;
                    continue;
                }
                // Transactions committed since the load: a page read from the file that one of
                // them names may be newer than the rest (a checkpoint copied it meanwhile).
                let index = lock(&self.pages).wal.clone();
                if let Some(mut index) = index
                    && headers.wal_size > index.valid_len()
                {
                    let changed = self.read_wal(&mut index, headers.wal_size).await?;
                    lock(&self.pages).wal = Some(index);
                    let read = self
                        .file_pages_read
                        .lock()
                        .unwrap_or_else(|e| e.into_inner());
                    if changed
                        .iter()
                        .any(|page| read.contains(page) || carried.contains(page))
                    {
                        *guard = None;
                        continue;
                    }
                }
                // The headers just read hold for what is cached now.
                if let Some(opened) = &mut lock(&self.pages).opened {
                    opened.checked = checked;
                }
            }
            if lock(&self.pages).generation != generation {
                // New pages arrived: the next query starts SQLite afresh on them.
                *guard = None;
            }
            return result.map_err(|e| self.sqlite_error(e.0));
        }
        Err(DatabaseError::Unstable {
            path: self.path.clone(),
            attempts: MAX_ATTEMPTS,
        })
    }

    /// Answers SQLite's page requests until the job's result arrives.
    async fn serve<R>(
        &self,
        worker: &mut Worker,
        mut done: tokio::sync::oneshot::Receiver<Result<R, QueryError>>,
    ) -> Result<R, QueryError> {
        loop {
            tokio::select! {
                biased;
                result = &mut done => {
                    return result
                        .unwrap_or_else(|_| Err(QueryError("SQLite's thread stopped".to_string())));
                }
                Some(first) = worker.requests.recv() => {
                    let mut wanted = Vec::new();
                    let mut rows = Vec::new();
                    let mut hints = Vec::new();
                    let mut scans = Vec::new();
                    for request in std::iter::once(first)
                        .chain(std::iter::from_fn(|| worker.requests.try_recv().ok()))
                    {
                        match request {
                            Request::Page(page) => wanted.push(page),
                            Request::Rows { table, rowids } => rows.push((table, rowids)),
                            Request::Hint { hint, done } => hints.push((hint, done)),
                            Request::Scan { table, roots, then, done } => {
                                scans.push((table, roots, then, done))
                            }
                        }
                    }
                    for (table, roots, then, done) in scans {
                        match then {
                            // The read that follows, walked with the scan: a level of each
                            // in one read.
                            Some(hint) => {
                                let mut walks = Walk::ahead(&hint, worker.page_size);
                                walks.extend([Walk::Table(vec![table]), Walk::index(hint)]);
                                self.prefetch_all(worker, walks, roots).await;
                            }
                            None => self.prefetch_table(worker, table, roots).await,
                        }
                        let _ = done.send(());
                    }
                    for (mut hint, done) in hints {
                        let roots = std::mem::take(&mut hint.roots);
                        let mut walks = Walk::ahead(&hint, worker.page_size);
                        walks.push(Walk::index(hint));
                        self.prefetch_all(worker, walks, roots).await;
                        let _ = done.send(());
                    }
                    // The rows first: the page asked for next is likely among them.
                    for (table, rowids) in rows {
                        self.fetch_rows(worker, table, rowids).await;
                    }
                    if !wanted.is_empty() {
                        self.fetch(worker, wanted).await;
                    }
                }
            }
        }
    }

    /// Fetches the pages asked for (and the read-ahead) in one read and answers each request.
    async fn fetch(&self, worker: &mut Worker, batch: Vec<PageWanted>) {
        let page_size = worker.page_size;
        let max_pages = (MAX_READ_BYTES / page_size as u64) as usize;
        let mut want = BTreeSet::new();
        {
            let pages = lock(&self.pages);
            for wanted in &batch {
                if pages.get(wanted.page).is_none() {
                    want.insert(wanted.page);
                }
            }
            if let Some(&first) = want.first() {
                worker.window = if first == worker.next_in_run {
                    (worker.window * 2).clamp(2, MAX_READ_AHEAD_PAGES)
                } else {
                    0
                };
                let last = *want.last().unwrap_or(&first);
                let ahead = (last + 1..=last.saturating_add(worker.window))
                    .take_while(|&page| page <= worker.page_count && pages.get(page).is_none());
                for page in ahead {
                    if want.len() >= max_pages {
                        break;
                    }
                    want.insert(page);
                }
                worker.next_in_run = want.last().map_or(0, |&last| last + 1);
            }
            for wanted in &batch {
                for &page in &wanted.also {
                    if want.len() >= max_pages {
                        break;
                    }
                    if page >= 1 && page <= worker.page_count && pages.get(page).is_none() {
                        want.insert(page);
                    }
                }
            }
        }
        if !want.is_empty() {
            let outcome = self.fetch_pages(&want, page_size).await;
            if let Err(e) = outcome {
                *self.failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
            }
        }
        let pages = lock(&self.pages);
        for wanted in batch {
            let answer = match pages.get(wanted.page) {
                Some(bytes) => Ok(bytes),
                // Past the host's file and not in the WAL: SQLite will find it empty.
                None if self.failure_is_none() => Ok(vec![0; page_size].into()),
                None => Err(()),
            };
            let _ = wanted.reply.send(answer);
        }
    }

    /// Fetches the pages down `table`'s B-tree to each of `rowids` and their rows' overflow
    /// pages, a level at a time (one read per level), as far as the pages say.
    async fn fetch_rows(&self, worker: &Worker, table: u32, rowids: Vec<i64>) {
        let walk = Walk::Rows {
            level: BTreeMap::from([(table, rowids)]),
        };
        self.prefetch(worker, walk, Vec::new()).await;
    }

    /// Runs `first` and the walks it leads to together, one read per level of all of them
    /// (`roots` with the first): what a level of one needs is read with the others'. A guess:
    /// it stops quietly at the bound, at a page it does not understand, or at a host error
    /// (the read SQLite makes next will meet it again and report it).
    async fn prefetch(&self, worker: &Worker, first: Walk, roots: Vec<u32>) {
        self.prefetch_all(worker, vec![first], roots).await;
    }

    /// [`Snapshot::prefetch`] of several walks together, one read per level of all of them.
    async fn prefetch_all(&self, worker: &Worker, walks: Vec<Walk>, roots: Vec<u32>) {
        let max_pages = (MAX_READ_BYTES / worker.page_size as u64) as usize;
        let mut walks = walks;
        let mut extra = roots;
        // A B-tree deeper than 10 is not one SQLite writes below 2^64 rows; two indexes, a
        // table each and the overflow pages stay well within this.
        for _ in 0..40 {
            // What is read ahead never costs a read of its own: it rides with the walk's.
            if walks.iter().all(|walk| matches!(walk, Walk::Ahead { .. })) {
                break;
            }
            let numbers: Vec<u32> = walks
                .iter()
                .flat_map(Walk::pages)
                .chain(std::mem::take(&mut extra))
                .collect();
            // Overflow pages lead nowhere: the last read of the walk, which reads the headers
            // after its pages for the check after the query (one round trip less).
            let last = walks
                .iter()
                .all(|walk| matches!(walk, Walk::Pages(_) | Walk::Ahead { .. }));
            if !self
                .fetch_quietly(numbers.into_iter(), worker, max_pages, last)
                .await
            {
                return;
            }
            let pages = lock(&self.pages);
            walks = descend(walks, &pages, worker.reserved);
        }
    }

    /// Fetches every page of `table`'s B-tree, a level at a time (one read per level, `roots`
    /// with the first), for a query that reads all its rows. Overflow pages are left to the
    /// query. A guess: it stops quietly at the bound or at a failed read.
    async fn prefetch_table(&self, worker: &Worker, table: u32, roots: Vec<u32>) {
        let max_pages = (MAX_READ_BYTES / worker.page_size as u64) as usize;
        let mut level = vec![table];
        let mut extra = roots;
        for _ in 0..10 {
            if level.is_empty() {
                break;
            }
            let numbers = level.iter().copied().chain(std::mem::take(&mut extra));
            if !self.fetch_quietly(numbers, worker, max_pages, false).await {
                return;
            }
            level = children_of(&level, &lock(&self.pages), worker.reserved);
        }
    }

    /// Fetches those of `numbers` (in the database) not cached, in reads of at most
    /// `max_pages` (the last also reading the headers after them, `with_headers`); false when
    /// a read failed or would pass the bound.
    async fn fetch_quietly(
        &self,
        numbers: impl Iterator<Item = u32>,
        worker: &Worker,
        max_pages: usize,
        with_headers: bool,
    ) -> bool {
        let want: Vec<u32> = {
            let pages = lock(&self.pages);
            numbers
                .filter(|&n| n >= 1 && n <= worker.page_count && pages.get(n).is_none())
                .collect()
        };
        let chunks = want.chunks(max_pages).count();
        for (i, chunk) in want.chunks(max_pages).enumerate() {
            let bytes = chunk.len() as u64 * worker.page_size as u64;
            if self.fetched_bytes() + bytes > MAX_SOURCE_BYTES {
                return false;
            }
            let chunk: BTreeSet<u32> = chunk.iter().copied().collect();
            let headers = with_headers && i + 1 == chunks;
            if self
                .fetch_pages_then(&chunk, worker.page_size, headers)
                .await
                .is_err()
            {
                return false;
            }
        }
        true
    }

    fn failure_is_none(&self) -> bool {
        self.failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }

    /// Reads `want` (sorted page numbers) from the database file in one call, as runs of
    /// adjacent pages, into the cache.
    async fn fetch_pages(
        &self,
        want: &BTreeSet<u32>,
        page_size: usize,
    ) -> Result<(), DatabaseError> {
        self.fetch_pages_then(want, page_size, false).await
    }

    /// [`Snapshot::fetch_pages`]; with `headers`, the same call reads both headers after the
    /// pages ([`Snapshot::headers_after`]). Any read of pages makes earlier such headers moot.
    async fn fetch_pages_then(
        &self,
        want: &BTreeSet<u32>,
        page_size: usize,
        headers: bool,
    ) -> Result<(), DatabaseError> {
        let began = std::time::Instant::now();
        *self.headers_after.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for &page in want {
            match runs.last_mut() {
                Some((start, len)) if *start + *len == page => *len += 1,
                _ => runs.push((page, 1)),
            }
        }
        self.charge(want.len() as u64 * page_size as u64)?;
        // A read takes at most MAX_RANGES ranges; several reads of one batch go in one call.
        let groups: Vec<&[(u32, u32)]> = runs.chunks(MAX_RANGES).collect();
        let mut reads: Vec<(FileRef, Vec<ByteRange>)> = groups
            .iter()
            .map(|group| {
                let ranges = group
                    .iter()
                    .map(|&(start, len)| {
                        ByteRange::new(
                            u64::from(start - 1) * page_size as u64,
                            u64::from(len) * page_size as u64,
                        )
                    })
                    .collect();
                (self.db_ref.clone(), ranges)
            })
            .collect();
        if headers {
            // Read by the host after the pages, in order.
            reads.extend(self.header_reads(DB_HEADER));
        }
        let mut results = self.host.read_many(&reads).await?;
        let header_results = results.split_off(groups.len().min(results.len()));
        for (group, result) in groups.iter().zip(results) {
            let result = result?;
            let mut pages = lock(&self.pages);
            for (&(start, _), chunk) in group.iter().zip(&result.chunks) {
                for (i, bytes) in chunk.chunks(page_size).enumerate() {
                    let mut page = bytes.to_vec();
                    // The host's file ended inside the page (it is being extended): zeros, as
                    // SQLite would read.
                    page.resize(page_size, 0);
                    let number = start + i as u32;
                    self.file_pages_read
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(number);
                    if !pages.wal_pages.contains_key(&number) {
                        pages.insert_file_page(number, page.into());
                    }
                }
            }
        }
        if headers {
            let read = self.parse_headers(header_results.into_iter())?;
            *self.headers_after.lock().unwrap_or_else(|e| e.into_inner()) = Some((began, read));
        }
        Ok(())
    }

    /// The sessions in the database, each as a session of the database file `db` (its size
    /// counting the `wal_size` bytes of its WAL, where the newest rows are until a checkpoint);
    /// a child session (task tool) is a subagent, its records marked sidechain.
    pub async fn sessions(
        &self,
        db: &FileEntry,
        wal_size: u64,
    ) -> Result<Vec<SessionFile>, DatabaseError> {
        self.sessions_checking(db, wal_size, false, None).await
    }

    async fn sessions_checking(
        &self,
        db: &FileEntry,
        wal_size: u64,
        check_later: bool,
        ahead: Option<(String, usize)>,
    ) -> Result<Vec<SessionFile>, DatabaseError> {
        let harness = self.harness;
        let rows = self
            .run_checking(
                move |db| {
                    let format = harness::format(harness);
                    if let Some((id, limit)) = &ahead
                        && let Some(read) = format.database_newest_hint(id, *limit)
                    {
                        db.will_read_after_scan(&read)?;
                    }
                    format.database_sessions(db)
                },
                check_later,
            )
            .await?;
        let mut db = db.clone();
        db.size += wal_size;
        let db = &db;
        Ok(rows
            .into_iter()
            .filter_map(|row| {
                let agent = row.parent.is_some().then_some(row.id.as_str());
                session::session_row(db, &row.id, agent, row.updated)
            })
            .collect())
    }

    /// [`Snapshot::sessions`] for the resolution of a session that is read at once: the check
    /// of the headers after the query is left to the read's ([`Databases::resume`]), one
    /// round trip less. A database changed meanwhile makes the read run again on what it
    /// shows now; the session found was there when the query began.
    ///
    /// With `ahead` (an exact id and a tail page's limit), the newest rows of that session are
    /// fetched with the sessions, a level of each in one read
    /// ([`harness::Format::database_newest_hint`]): the read that follows finds them cached,
    /// and the check after it uses the headers this query's last read read after its pages.
    /// If the id is not in the database, those pages were only bytes.
    pub async fn sessions_to_resolve(
        &self,
        db: &FileEntry,
        wal_size: u64,
        ahead: Option<(String, usize)>,
    ) -> Result<Vec<SessionFile>, DatabaseError> {
        self.sessions_checking(db, wal_size, true, ahead).await
    }

    /// The session's working directory, for `resume`.
    pub async fn session_cwd(&self, id: &str) -> Result<Option<String>, DatabaseError> {
        let harness = self.harness;
        let id = id.to_string();
        self.run(move |db| harness::format(harness).database_cwd(db, &id))
            .await
    }

    /// The session's title as its row holds it, for `ls`.
    pub async fn session_title(&self, id: &str) -> Result<Option<String>, DatabaseError> {
        let harness = self.harness;
        let id = id.to_string();
        self.run(move |db| harness::database_title(harness, db, &id))
            .await
    }

    /// The newest records of one session, at least `limit` when it has as many, read from its
    /// newest rows where its harness can (see [`RowRecords::older_omitted`]).
    pub async fn newest_records(
        &self,
        ctx: &SourceCtx,
        limit: usize,
    ) -> Result<RowRecords, DatabaseError> {
        let harness = self.harness;
        let ctx = ctx.clone();
        self.run(move |db| harness::format(harness).database_newest_records(db, &ctx, limit))
            .await
    }

    /// The records of one session, mapped by its harness.
    pub async fn records(&self, ctx: &SourceCtx) -> Result<RowRecords, DatabaseError> {
        let harness = self.harness;
        let ctx = ctx.clone();
        self.run(move |db| harness::format(harness).database_records(db, &ctx))
            .await
    }
}

/// The harnesses' queries, run on SQLite's thread, and the file it reads (for hints).
struct Queries<'c> {
    conn: &'c Connection,
    file: &'c HostPages,
}

impl Queries<'_> {
    fn fail(e: rusqlite::Error) -> QueryError {
        QueryError(e.to_string())
    }
}

impl Database for Queries<'_> {
    fn has_table(&self, name: &str) -> Result<bool, QueryError> {
        self.conn
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [name],
                |_| Ok(()),
            )
            .optional()
            .map(|r| r.is_some())
            .map_err(Self::fail)
    }

    fn query(&self, sql: &str, params: &[&str]) -> Result<Vec<Vec<SqlValue>>, QueryError> {
        let mut stmt = self.conn.prepare(sql).map_err(Self::fail)?;
        let columns = stmt.column_count();
        let rows = stmt
            .query_map(rusqlite::params_from_iter(params), |row| {
                (0..columns)
                    .map(|i| {
                        Ok(match row.get_ref(i)? {
                            ValueRef::Null => SqlValue::Null,
                            ValueRef::Integer(n) => SqlValue::Integer(n),
                            ValueRef::Real(x) => SqlValue::Real(x),
                            ValueRef::Text(t) => {
                                SqlValue::Text(String::from_utf8_lossy(t).into_owned())
                            }
                            ValueRef::Blob(b) => SqlValue::Blob(b.to_vec()),
                        })
                    })
                    .collect::<Result<Vec<_>, rusqlite::Error>>()
            })
            .map_err(Self::fail)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(Self::fail)
    }

    /// Sends the hint to the async side and waits until it fetched what it guessed; an index
    /// not in the schema (or not of a rowid table) is no hint.
    fn will_read(&self, read: &IndexRead<'_>) -> Result<(), QueryError> {
        let hint = {
            let mut tracker = self.file.tracker.lock().unwrap_or_else(|e| e.into_inner());
            let Some(mut hint) = index_hint(&tracker, read) else {
                return Ok(());
            };
            tracker.hinted = true;
            hint.roots = all_roots(&mut tracker);
            hint
        };
        let (done, wait) = std::sync::mpsc::channel();
        if self
            .file
            .requests
            .send(Request::Hint { hint, done })
            .is_ok()
        {
            // Gone: the query's own reads will say why.
            let _ = wait.recv();
        }
        Ok(())
    }

    fn will_read_after_scan(&self, read: &IndexRead<'_>) -> Result<(), QueryError> {
        self.keep_after_scan(read);
        Ok(())
    }

    /// Sends the scan to the async side and waits until it fetched the table's pages (and
    /// those of the read said to follow it, [`Database::will_read_after_scan`]).
    fn will_scan(&self, table: &str) -> Result<(), QueryError> {
        let (table, roots, then) = {
            let mut tracker = self.file.tracker.lock().unwrap_or_else(|e| e.into_inner());
            let Some(&root) = tracker.tables.get(table) else {
                return Ok(());
            };
            tracker.hinted = true;
            let then = tracker.after_scan.take();
            (root, all_roots(&mut tracker), then)
        };
        let (done, wait) = std::sync::mpsc::channel();
        if self
            .file
            .requests
            .send(Request::Scan {
                table,
                roots,
                then,
                done,
            })
            .is_ok()
        {
            let _ = wait.recv();
        }
        Ok(())
    }
}

impl Queries<'_> {
    /// Keeps `read` for the next scan ([`Database::will_scan`]), which walks it with its own.
    fn keep_after_scan(&self, read: &IndexRead<'_>) {
        let mut tracker = self.file.tracker.lock().unwrap_or_else(|e| e.into_inner());
        tracker.after_scan = index_hint(&tracker, read);
    }
}

/// `read` in pages: its indexes' roots, tables and columns, as the schema gives them; `None`
/// for an index the schema does not have, or no key.
fn index_hint(tracker: &Tracker, read: &IndexRead<'_>) -> Option<IndexHint> {
    let resolve = |index: &str, keys: &[&str]| {
        let root = *tracker.names.get(index)?;
        let &(table, fields) = tracker.indexes.get(&root)?;
        Some(IndexHint {
            index: root,
            table,
            fields,
            keys: keys.iter().map(|k| k.as_bytes().to_vec()).collect(),
            last: None,
            then: None,
            roots: Vec::new(),
        })
    };
    let mut hint = resolve(read.index, &read.keys)?;
    hint.last = read.last;
    hint.then = read
        .then
        .and_then(|(index, column)| Some((Box::new(resolve(index, &[])?), column)));
    (!hint.keys.is_empty()).then_some(hint)
}

/// The root pages of every table and index, the first time a hint asks (then none).
fn all_roots(tracker: &mut Tracker) -> Vec<u32> {
    if std::mem::replace(&mut tracker.roots_sent, true) {
        return Vec::new();
    }
    let mut roots: Vec<u32> = tracker
        .tables
        .values()
        .chain(tracker.names.values())
        .copied()
        .collect();
    roots.sort_unstable();
    roots.dedup();
    roots
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};

    use super::*;
    use clankie_host::local::LocalHost;
    use clankie_model::{Listing, RootSpec};

    /// The local host, counting the bytes it returns, and running `on_page_read` once after
    /// the first read of database pages (not headers) that follows its setting.
    struct Counting {
        inner: LocalHost,
        bytes: Cell<u64>,
        calls: Cell<u64>,
        /// Reads of the WAL's header: one per load, and per check after a query.
        header_reads: Cell<u64>,
        /// Calls that read the headers and nothing else.
        header_only_calls: Cell<u64>,
        on_page_read: RefCell<Option<Box<dyn FnOnce()>>>,
    }

    impl Host for Counting {
        fn name(&self) -> &str {
            self.inner.name()
        }
        async fn list(&self, roots: &[RootSpec]) -> Result<Listing, HostError> {
            self.inner.list(roots).await
        }
        async fn read(
            &self,
            file: &FileRef,
            ranges: &[ByteRange],
        ) -> Result<clankie_model::ReadResult, HostError> {
            // What an SSH host refuses ("badrange"); the local host takes any number.
            assert!(ranges.len() <= MAX_RANGES, "{} ranges", ranges.len());
            let result = self.inner.read(file, ranges).await?;
            let got: usize = result.chunks.iter().map(Vec::len).sum();
            self.bytes.set(self.bytes.get() + got as u64);
            self.calls.set(self.calls.get() + 1);
            if file.rel.ends_with(b"-wal")
                && ranges == [ByteRange::new(0, clankie_engine::wal::HEADER as u64)]
            {
                self.header_reads.set(self.header_reads.get() + 1);
            }
            if !file.rel.ends_with(b"-wal")
                && ranges.iter().all(|r| r.len > DB_HEADER)
                && let Some(hook) = self.on_page_read.borrow_mut().take()
            {
                hook();
            }
            Ok(result)
        }

        /// One call, as an SSH host batches it: the calls count round trips.
        async fn read_many(
            &self,
            reads: &[(FileRef, Vec<ByteRange>)],
        ) -> Result<Vec<Result<clankie_model::ReadResult, HostError>>, HostError> {
            let headers = [DB_HEADER, FIRST_READ].map(|len| vec![ByteRange::new(0, len)]);
            if reads.len() == 2
                && headers.contains(&reads[0].1)
                && reads[1].0.rel.ends_with(b"-wal")
            {
                self.header_only_calls.set(self.header_only_calls.get() + 1);
            }
            let mut out = Vec::new();
            for (file, ranges) in reads {
                out.push(self.read(file, ranges).await);
            }
            self.calls.set(self.calls.get() + 1 - reads.len() as u64);
            Ok(out)
        }
    }

    impl Counting {
        fn new() -> Counting {
            Counting {
                inner: LocalHost::new("local"),
                bytes: Cell::new(0),
                calls: Cell::new(0),
                header_reads: Cell::new(0),
                header_only_calls: Cell::new(0),
                on_page_read: RefCell::new(None),
            }
        }
        fn take(&self) -> u64 {
            self.bytes.replace(0)
        }
    }

    async fn rows(snapshot: &Snapshot<'_, Counting>) -> i64 {
        rows_checking(snapshot, false).await
    }

    async fn rows_checking(snapshot: &Snapshot<'_, Counting>, check_later: bool) -> i64 {
        snapshot
            .run_checking(
                |db| match db.query("SELECT count(*) FROM t", &[])?[0][0] {
                    SqlValue::Integer(n) => Ok(n),
                    _ => Err(QueryError("not a count".into())),
                },
                check_later,
            )
            .await
            .unwrap()
    }

    /// A WAL-mode database of one table `t`, and a writer that stays open so that its WAL is
    /// neither checkpointed nor removed.
    fn database(dir: &std::path::Path) -> (Connection, FileEntry) {
        let writer = Connection::open(dir.join("opencode.db")).unwrap();
        writer.pragma_update(None, "journal_mode", "WAL").unwrap();
        writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        writer.execute_batch("CREATE TABLE t (x BLOB)").unwrap();
        let entry = FileEntry {
            harness: clankie_engine::harness::by_name("opencode").unwrap(),
            root: dir.as_os_str().as_encoded_bytes().into(),
            rel: b"opencode.db".to_vec(),
            size: 0,
            mtime: 0,
        };
        (writer, entry)
    }

    /// A table of one big row, so that the rows added after it lie past what a load reads
    /// with the headers ([`FIRST_READ`]): a query reads them from the file.
    fn pad(writer: &Connection) {
        writer
            .execute_batch(&format!(
                "CREATE TABLE pad (x BLOB); INSERT INTO pad VALUES (zeroblob({FIRST_READ}));"
            ))
            .unwrap();
    }

    fn add(writer: &Connection, n: usize, size: usize) {
        for _ in 0..n {
            writer
                .execute("INSERT INTO t VALUES (zeroblob(?1))", [size as i64])
                .unwrap();
        }
    }

    /// Both headers, as each load reads them.
    const HEADERS: u64 = DB_HEADER + clankie_engine::wal::HEADER as u64;

    #[tokio::test]
    async fn later_loads_fetch_only_the_headers_and_new_wal_frames() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, entry) = database(dir.path());
        add(&writer, 20, 3000);
        let size = |suffix: &str| {
            std::fs::metadata(dir.path().join(format!("opencode.db{suffix}")))
                .map_or(0, |m| m.len())
        };
        let databases = Databases::default();
        let host = Counting::new();

        // The first load reads the headers (page 1 of the file with the database's) and the
        // WAL, where all the other pages are so far.
        let first = databases.load(&host, &entry).await.unwrap();
        assert_eq!(rows(&first).await, 20);
        assert_eq!(host.take(), size("").min(FIRST_READ) + size("-wal"));
        drop(first);

        // Nothing changed: the headers only.
        let second = databases.load(&host, &entry).await.unwrap();
        assert_eq!(rows(&second).await, 20);
        assert_eq!(host.take(), HEADERS);
        drop(second);

        // New commits in the WAL: the headers and the new frames.
        let wal_before = size("-wal");
        add(&writer, 5, 3000);
        let third = databases.load(&host, &entry).await.unwrap();
        assert_eq!(rows(&third).await, 25);
        assert_eq!(host.take(), HEADERS + (size("-wal") - wal_before));
        assert_eq!(third.fetched_bytes(), HEADERS + (size("-wal") - wal_before));
        drop(third);

        // A checkpoint that truncates the WAL changes its salts: the cache is dropped, and the
        // pages are read again, now from the database file.
        writer
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        add(&writer, 1, 3000);
        let fourth = databases.load(&host, &entry).await.unwrap();
        assert_eq!(rows(&fourth).await, 26);
        let fetched = host.take();
        assert!(fetched > HEADERS + size("-wal"), "{fetched}");
        assert!(
            fetched <= 2 * HEADERS + size("-wal") + size(""),
            "{fetched}"
        );
        drop(fourth);

        // Pages belong to their reader: another reader's cache starts empty.
        let other = Databases::default();
        let fifth = other.load(&host, &entry).await.unwrap();
        assert_eq!(rows(&fifth).await, 26);
        assert!(host.take() > HEADERS);
    }

    #[tokio::test]
    async fn a_query_reads_only_the_pages_it_needs_of_a_large_database() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, entry) = database(dir.path());
        // 8 MiB of rows, then a small table created after them.
        add(&writer, 128, 64 * 1024);
        writer
            .execute_batch(
                "CREATE TABLE small (x); INSERT INTO small VALUES (1), (2); \
                 PRAGMA wal_checkpoint(TRUNCATE);",
            )
            .unwrap();
        let databases = Databases::default();
        let host = Counting::new();
        let snapshot = databases.load(&host, &entry).await.unwrap();
        let sum = snapshot
            .run(|db| Ok(db.query("SELECT sum(x) FROM small", &[])?.len()))
            .await
            .unwrap();
        assert_eq!(sum, 1);
        // The first pages with the headers, and the small table's.
        let fetched = snapshot.fetched_bytes();
        assert!(fetched < FIRST_READ + 64 * 1024, "{fetched}");
        assert_eq!(fetched, host.take());
    }

    #[tokio::test]
    async fn rows_found_through_an_index_are_fetched_a_level_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, entry) = database(dir.path());
        // 3000 rows of ten sessions, interleaved: one session's 300 rows are on 300 leaves
        // (two rows a page), some with a row that overflows onto the next pages.
        writer
            .execute_batch(
                "CREATE TABLE part (id INTEGER PRIMARY KEY, session TEXT, data TEXT);
                 CREATE INDEX part_session ON part (session);
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
                 INSERT INTO part SELECT i, 's' || (i % 10),
                   printf('%.*c', CASE WHEN i % 100 = 3 THEN 9000 ELSE 1500 END, 'x') FROM n;
                 PRAGMA wal_checkpoint(TRUNCATE);",
            )
            .unwrap();
        let databases = Databases::default();
        let host = Counting::new();
        let snapshot = databases.load(&host, &entry).await.unwrap();
        let total = snapshot
            .run(|db| {
                match db.query(
                    "SELECT count(*), sum(length(data)) FROM part WHERE session = 's3'",
                    &[],
                )?[0][..]
                {
                    [SqlValue::Integer(n), SqlValue::Integer(bytes)] => Ok((n, bytes)),
                    _ => Err(QueryError("not a count".into())),
                }
            })
            .await
            .unwrap();
        assert_eq!(total, (300, 270 * 1500 + 30 * 9000));
        // Without the guess, a read (a round trip) per row and per overflow page.
        let calls = host.calls.get();
        assert!(calls < 30, "{calls} reads");
    }

    /// OpenCode's tables and indexes (as `tests/fixtures/opencode/` creates them) with
    /// `messages` messages of `ses_read` among nine times as many of other sessions, each with
    /// two parts of about 5 KB (each on a leaf of its own, with an overflow page), the newest
    /// message an assistant's still being written.
    fn opencode_database(dir: &std::path::Path, messages: usize) -> (Connection, FileEntry) {
        let (writer, entry) = database(dir);
        writer
            .execute_batch(
                "CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
                   time_created integer NOT NULL, time_updated integer NOT NULL,
                   data text NOT NULL);
                 CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL,
                   session_id text NOT NULL, time_created integer NOT NULL,
                   time_updated integer NOT NULL, data text NOT NULL);
                 CREATE INDEX message_session_time_created_id_idx
                   ON message (session_id, time_created, id);
                 CREATE INDEX part_message_id_id_idx ON part (message_id, id);
                 CREATE INDEX part_session_idx ON part (session_id);",
            )
            .unwrap();
        writer.execute_batch("BEGIN").unwrap();
        for n in 0..messages * 10 {
            let session = if n % 10 == 3 { "ses_read" } else { "ses_other" };
            let message = format!("msg_{n:08}");
            let role = if n % 20 == 3 { "user" } else { "assistant" };
            let done = if n + 10 >= messages * 10 {
                ""
            } else {
                ",\"completed\":2"
            };
            writer
                .execute(
                    "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
                    (
                        &message,
                        session,
                        1000 + n as i64,
                        format!("{{\"role\":\"{role}\",\"time\":{{\"created\":1{done}}}}}"),
                    ),
                )
                .unwrap();
            for k in 0..2 {
                let text = format!("{n} {k} {}", "y".repeat(5000));
                let data = if k == 1 && role == "assistant" && n % 40 == 13 {
                    // A tool part: two records.
                    serde_json::json!({"type": "tool", "tool": "bash", "callID": format!("c{n}"),
                        "state": {"status": "completed", "input": {"command": "ls"},
                        "output": text}})
                } else {
                    serde_json::json!({"type": "text", "text": text, "time": {"end": 1}})
                };
                writer
                    .execute(
                        "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                        (
                            format!("prt_{n:08}{k}"),
                            &message,
                            session,
                            1000 + n as i64,
                            data.to_string(),
                        ),
                    )
                    .unwrap();
            }
        }
        writer
            .execute_batch("COMMIT; PRAGMA wal_checkpoint(TRUNCATE);")
            .unwrap();
        (writer, entry)
    }

    #[tokio::test]
    async fn a_resolution_told_the_read_that_follows_leaves_it_nothing_to_fetch() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, entry) = opencode_database(dir.path(), 120);
        writer
            .execute_batch(
                "CREATE TABLE session (id text PRIMARY KEY, parent_id text,
                   time_updated integer NOT NULL);
                 INSERT INTO session VALUES ('ses_read', NULL, 1000), ('ses_other', NULL, 1000);",
            )
            .unwrap();
        // More sessions than a page holds: the scan reads the table's leaves after its root.
        for i in 0..300 {
            writer
                .execute(
                    "INSERT INTO session VALUES (?1, NULL, 1000)",
                    [format!("ses_{i:04}_{}", "z".repeat(40))],
                )
                .unwrap();
        }
        writer
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        let ctx = read_ctx(&entry);
        let resolve_and_read = |ahead: Option<(String, usize)>| {
            let entry = entry.clone();
            let ctx = ctx.clone();
            async move {
                let databases = Databases::default();
                let host = Counting::new();
                let resolution = databases.load(&host, &entry).await.unwrap();
                let sessions = resolution
                    .sessions_to_resolve(&entry, 0, ahead)
                    .await
                    .unwrap();
                drop(resolution);
                let resolved = host.calls.get();
                let read = databases.resume(&host, &entry).await.unwrap();
                let rows = read.newest_records(&ctx, 10).await.unwrap();
                let ids: Vec<String> = sessions.iter().map(|s| s.id.clone()).collect();
                (ids, rows, resolved, host.calls.get())
            }
        };
        let (ids, plain, _, plain_calls) = resolve_and_read(None).await;
        let (ahead_ids, ahead, resolved, calls) =
            resolve_and_read(Some(("ses_read".to_string(), 10))).await;
        assert_eq!(ahead_ids, ids);
        assert!(ahead.records.len() >= 10);
        assert_eq!(ahead.records, plain.records);
        // The read found its pages cached, and its check used the headers the resolution's
        // last read brought after its pages: no call at all.
        assert_eq!(calls, resolved, "the read fetched nothing");
        assert!(calls < plain_calls, "{calls} calls, {plain_calls} without");
    }

    #[tokio::test]
    async fn the_newest_records_from_the_newest_rows_are_the_newest_of_all_for_few_reads() {
        let dir = tempfile::tempdir().unwrap();
        let (_writer, entry) = opencode_database(dir.path(), 120);
        let ctx = SourceCtx {
            host: "local".into(),
            harness: entry.harness,
            session: "ses_read".into(),
            agent: None,
        };
        let databases = Databases::default();
        let host = Counting::new();
        let all = databases
            .load(&host, &entry)
            .await
            .unwrap()
            .records(&ctx)
            .await
            .unwrap();
        assert!(!all.older_omitted && all.pending);
        let full_bytes = host.take();
        for limit in [1, 2, 7, 50, 400] {
            // A reader of its own: nothing cached.
            let databases = Databases::default();
            let host = Counting::new();
            let snapshot = databases.load(&host, &entry).await.unwrap();
            let newest = snapshot.newest_records(&ctx, limit).await.unwrap();
            let n = newest.records.len();
            assert!(n >= limit.min(all.records.len()), "{limit}: {n}");
            assert_eq!(newest.records[..], all.records[all.records.len() - n..]);
            assert_eq!(newest.pending, all.pending);
            assert_eq!(newest.older_omitted, n < all.records.len(), "{limit}");
            if limit <= 50 {
                // Each level of each B-tree in one read, not a read per row.
                let calls = host.calls.get();
                assert!(calls <= 16, "{limit}: {calls} reads");
                let bytes = host.take();
                assert!(bytes < full_bytes / 2, "{limit}: {bytes} of {full_bytes}");
            }
        }
    }

    #[tokio::test]
    async fn reading_more_than_the_bound_fails_naming_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, entry) = database(dir.path());
        // Rows past the bound, all read by a query that looks at every byte.
        add(&writer, 68, 1024 * 1024);
        writer
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        let databases = Databases::default();
        let host = Counting::new();
        let snapshot = databases.load(&host, &entry).await.unwrap();
        let err = snapshot
            .run(|db| Ok(db.query("SELECT sum(length(hex(x))) FROM t", &[])?.len()))
            .await
            .unwrap_err();
        assert!(matches!(err, DatabaseError::TooLarge { .. }), "{err}");
        assert!(err.to_string().contains("opencode.db"), "{err}");
        // What it fetched stayed within the bound (plus the one read that crossed it).
        assert!(host.take() <= MAX_SOURCE_BYTES + MAX_READ_BYTES);
    }

    #[tokio::test]
    async fn a_checkpoint_during_a_query_drops_the_cache_and_runs_it_again() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, entry) = database(dir.path());
        pad(&writer);
        add(&writer, 40, 3000);
        writer
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        add(&writer, 2, 3000);
        let databases = Databases::default();
        let host = Counting::new();
        let snapshot = databases.load(&host, &entry).await.unwrap();
        // While the query reads the database file, another writer commits and checkpoints:
        // the WAL restarts with new salts.
        let path = dir.path().join("opencode.db");
        *host.on_page_read.borrow_mut() = Some(Box::new(move || {
            let other = Connection::open(&path).unwrap();
            other
                .execute("INSERT INTO t VALUES (zeroblob(10))", [])
                .unwrap();
            other
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .unwrap();
        }));
        // The second run sees the new row.
        assert_eq!(rows(&snapshot).await, 43);
        assert!(host.on_page_read.borrow().is_none());
    }

    #[tokio::test]
    async fn a_commit_checkpointed_during_a_query_into_pages_it_read_runs_it_again() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, entry) = database(dir.path());
        pad(&writer);
        add(&writer, 40, 3000);
        writer
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        add(&writer, 1, 3000);
        let databases = Databases::default();
        let host = Counting::new();
        let snapshot = databases.load(&host, &entry).await.unwrap();
        // While the query reads the database file, a commit lands in the WAL and a passive
        // checkpoint copies it into the file: the WAL keeps its salts, only grows.
        let path = dir.path().join("opencode.db");
        // The first row is in a page the query reads from the file, not from the WAL.
        *host.on_page_read.borrow_mut() = Some(Box::new(move || {
            let other = Connection::open(&path).unwrap();
            other
                .execute("UPDATE t SET x = zeroblob(10) WHERE rowid = 1", [])
                .unwrap();
            other
                .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                .unwrap();
        }));
        let total = || {
            snapshot.run(
                |db| match db.query("SELECT sum(length(x)) FROM t", &[])?[0][0] {
                    SqlValue::Integer(n) => Ok(n),
                    _ => Err(QueryError("not a sum".into())),
                },
            )
        };
        assert_eq!(total().await.unwrap(), 40 * 3000 + 10);
        assert!(host.on_page_read.borrow().is_none());
    }

    #[tokio::test]
    async fn a_snapshot_outlived_by_a_newer_load_reads_the_newer_pages() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, entry) = database(dir.path());
        add(&writer, 10, 3000);
        let databases = Databases::default();
        let host = Counting::new();
        let older = databases.load(&host, &entry).await.unwrap();
        assert_eq!(rows(&older).await, 10);
        add(&writer, 3, 3000);
        let newer = databases.load(&host, &entry).await.unwrap();
        assert_eq!(rows(&newer).await, 13);
        // The older snapshot's SQLite may hold pages of its own from before: it starts again.
        assert_eq!(rows(&older).await, 13);
    }

    /// 40 rows in the database file past what a load reads with the headers, 2 in the WAL.
    fn checkpointed_database(dir: &std::path::Path) -> (Connection, FileEntry) {
        let (writer, entry) = database(dir);
        pad(&writer);
        add(&writer, 40, 3000);
        writer
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        add(&writer, 2, 3000);
        (writer, entry)
    }

    #[tokio::test]
    async fn the_read_after_a_resolution_starts_on_its_load_and_one_check_covers_both() {
        let dir = tempfile::tempdir().unwrap();
        let (_writer, entry) = checkpointed_database(dir.path());
        let databases = Databases::default();
        let host = Counting::new();
        // The resolution: a load, a query that reads the file, no check after it.
        let resolution = databases.load(&host, &entry).await.unwrap();
        assert_eq!(rows_checking(&resolution, true).await, 42);
        drop(resolution);
        assert_eq!(host.header_reads.get(), 1);
        // The read: no load of its own; its check (the pages are all cached, but the
        // resolution's were not checked) is the only one.
        let read = databases.resume(&host, &entry).await.unwrap();
        assert_eq!(host.header_reads.get(), 1);
        assert_eq!(rows(&read).await, 42);
        assert_eq!(host.header_reads.get(), 2);
        drop(read);
        // Once only: the next resume is a load.
        let later = databases.resume(&host, &entry).await.unwrap();
        assert_eq!(host.header_reads.get(), 3);
        assert_eq!(rows(&later).await, 42);
        assert_eq!(host.header_reads.get(), 3);
        // And a query checked as usual leaves nothing to resume.
        drop(later);
        let checked = databases.load(&host, &entry).await.unwrap();
        assert_eq!(rows(&checked).await, 42);
        drop(checked);
        let _ = databases.resume(&host, &entry).await.unwrap();
        assert_eq!(host.header_reads.get(), 5);
    }

    #[tokio::test]
    async fn a_change_between_the_resolution_and_the_read_makes_the_read_run_on_it() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, entry) = checkpointed_database(dir.path());
        let databases = Databases::default();
        let host = Counting::new();
        let resolution = databases.load(&host, &entry).await.unwrap();
        assert_eq!(rows_checking(&resolution, true).await, 42);
        drop(resolution);
        // A commit checkpointed into the file and a new WAL (new salts), then one more.
        add(&writer, 1, 3000);
        writer
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        add(&writer, 1, 3000);
        let read = databases.resume(&host, &entry).await.unwrap();
        assert_eq!(rows(&read).await, 44);
        drop(read);
        // A commit to the WAL only: the check reads the new frame; it changes no page either
        // query read from the file, so the answer (as of the resolution's load: consistent)
        // stands, and the next load shows the new row.
        let resolution = databases.load(&host, &entry).await.unwrap();
        assert_eq!(rows_checking(&resolution, true).await, 44);
        drop(resolution);
        add(&writer, 1, 3000);
        let read = databases.resume(&host, &entry).await.unwrap();
        assert_eq!(rows(&read).await, 44);
        drop(read);
        let next = databases.load(&host, &entry).await.unwrap();
        assert_eq!(rows(&next).await, 45);
    }

    /// What the find-and-read reads of the database and its WAL ([`first_reads`]), read
    /// beside `host`'s count, handed to the next load.
    async fn seed(databases: &Databases, host: &Counting, entry: &FileEntry) {
        let at = std::time::Instant::now();
        let reads: Vec<(FileRef, Vec<ByteRange>)> = [b"".as_slice(), b"-wal"]
            .into_iter()
            .zip(first_reads())
            .map(|(suffix, ranges)| (file_ref(entry, suffix), ranges))
            .collect();
        let mut results = host.inner.read_many(&reads).await.unwrap().into_iter();
        let db = results.next().unwrap().unwrap();
        databases.seed(host, entry, at, db, results.next().unwrap());
    }

    #[tokio::test]
    async fn a_load_seeded_by_the_find_and_read_reads_nothing_and_a_change_since_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, entry) = checkpointed_database(dir.path());
        let databases = Databases::default();
        let host = Counting::new();
        // The load starts from the seed: no headers, no WAL frames read (the two rows in the
        // WAL came with it); the query reads the rows past the first pages, and its check.
        seed(&databases, &host, &entry).await;
        let snapshot = databases.load(&host, &entry).await.unwrap();
        assert_eq!(host.calls.get(), 0);
        assert_eq!(rows(&snapshot).await, 42);
        assert_eq!(host.header_reads.get(), 1);
        drop(snapshot);
        // Changed after the find-and-read, before the walk (nothing cached yet): a commit
        // checkpointed into the file and a new WAL (new salts), then one more. The seeded
        // pages are of the older version and the query reads newer ones from the file; the
        // check after it sees the change and the query runs again on the new version.
        let databases = Databases::default();
        seed(&databases, &host, &entry).await;
        add(&writer, 1, 3000);
        writer
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        add(&writer, 1, 3000);
        let calls = host.calls.get();
        let snapshot = databases.load(&host, &entry).await.unwrap();
        assert_eq!(host.calls.get(), calls, "the load started from the seed");
        assert_eq!(rows(&snapshot).await, 44);
        drop(snapshot);
        // A seed is used once, and not after its time: the next load reads the headers.
        let before = host.header_reads.get();
        let snapshot = databases.load(&host, &entry).await.unwrap();
        assert_eq!(host.header_reads.get(), before + 1);
        assert_eq!(rows(&snapshot).await, 44);
    }

    fn read_ctx(entry: &FileEntry) -> SourceCtx {
        SourceCtx {
            host: "local".into(),
            harness: entry.harness,
            session: "ses_read".into(),
            agent: None,
        }
    }

    #[tokio::test]
    async fn a_walk_ending_in_overflow_pages_reads_the_headers_after_them_for_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let (_writer, entry) = opencode_database(dir.path(), 120);
        let databases = Databases::default();
        let host = Counting::new();
        let snapshot = databases.load(&host, &entry).await.unwrap();
        assert_eq!(host.header_only_calls.get(), 1);
        let newest = snapshot
            .newest_records(&read_ctx(&entry), 10)
            .await
            .unwrap();
        assert!(newest.records.len() >= 10);
        // The load's, and none for the check: its headers came with the overflow pages.
        assert_eq!(host.header_only_calls.get(), 1);
        assert_eq!(host.header_reads.get(), 2);
    }

    #[tokio::test]
    async fn a_checkpoint_during_a_walk_is_seen_in_the_headers_of_its_last_read() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, entry) = opencode_database(dir.path(), 120);
        // A commit in the WAL (its salts are part of what the check compares).
        writer
            .execute(
                "INSERT INTO message VALUES ('msg_x', 'ses_other', 1, 1, '{}')",
                [],
            )
            .unwrap();
        let databases = Databases::default();
        let host = Counting::new();
        let snapshot = databases.load(&host, &entry).await.unwrap();
        // While the walk reads the file, a part of the page is changed and checkpointed into
        // it (the WAL restarts: new salts).
        let path = dir.path().join("opencode.db");
        *host.on_page_read.borrow_mut() = Some(Box::new(move || {
            let other = Connection::open(&path).unwrap();
            other
                .execute_batch(
                    "UPDATE part SET data = json_set(data, '$.text', 'the newest')
                       WHERE id = 'prt_000011930';
                     PRAGMA wal_checkpoint(TRUNCATE);",
                )
                .unwrap();
        }));
        let after = snapshot
            .newest_records(&read_ctx(&entry), 10)
            .await
            .unwrap();
        assert!(host.on_page_read.borrow().is_none());
        // Run again on the new version (a second load), with no read of the headers alone
        // for either check: they came with each walk's overflow pages.
        assert_eq!(host.header_only_calls.get(), 2);
        assert_eq!(host.header_reads.get(), 4);
        assert!(
            after
                .records
                .iter()
                .any(|r| format!("{r:?}").contains("the newest")),
            "{} header reads",
            host.header_reads.get()
        );
    }
}
