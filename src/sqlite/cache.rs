//! The pages of the databases a reader reads, kept for its run (the methods of [`Databases`],
//! which `mod.rs` defines): per database, the pages of its file (at most [`CACHE_BYTES`],
//! oldest dropped first) and of its WAL, what they are valid for ([`Stamp`]), and what the last
//! load and query left for the next ([`Opened`], [`Handover`], [`Seeded`]). A database's load
//! starts here ([`Databases::load`], [`Databases::resume`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use clankie_engine::database::SessionRow;
use clankie_engine::wal::WalIndex;
use clankie_host::{Host, HostError};
use clankie_model::{FileEntry, ReadResult, display_path};

use super::{CACHE_BYTES, DatabaseError, DatabaseKey, Databases, HANDOVER_TIME, Headers, Snapshot};
#[cfg(doc)]
use super::{FIRST_READ, first_reads};

/// What must not change while cached pages are used: the database's change counter, and the
/// WAL's checkpoint sequence and salts (none without a valid WAL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    pub(super) change_counter: [u8; 4],
    pub(super) wal: Option<[u8; 12]>,
}

/// The pages of one database kept for the reader's run, shared with SQLite's thread.
#[derive(Default)]
pub(super) struct Pages {
    /// What the pages below are valid for; `None` before the first load.
    pub(super) stamp: Option<Stamp>,
    /// Counts the changes of what the pages show (a new stamp, new WAL commits): SQLite's
    /// thread reads only pages of the generation it started with, since SQLite keeps pages of
    /// its own and must not mix them with newer ones.
    pub(super) generation: u64,
    /// Pages of the database file, by page number (from 1), and their order of arrival.
    pub(super) file: HashMap<u32, Arc<[u8]>>,
    arrival: VecDeque<u32>,
    pub(super) file_bytes: usize,
    /// The WAL read so far, and the newest committed version of each page it holds.
    pub(super) wal: Option<WalIndex>,
    pub(super) wal_pages: HashMap<u32, Arc<[u8]>>,
    /// What the last load found in the headers: enough to start SQLite again without reading
    /// them ([`Databases::resume`]).
    pub(super) opened: Option<Opened>,
    /// A query whose check after it was left to the next query ([`Snapshot::sessions_to_resolve`]).
    pub(super) handover: Option<Handover>,
    /// What a read made ahead of the next load read of the headers ([`Databases::seed`]).
    pub(super) seeded: Option<Seeded>,
    /// The database's sessions as the last listing found them, and the [`Pages::generation`]
    /// they hold for: a listing of an unchanged database (an idle `--follow` poll) runs no
    /// query, so it reads no page, cached or not ([`Snapshot::sessions`]).
    pub(super) listed: Option<(u64, Arc<[SessionRow]>)>,
}

/// The first reads of a database and its WAL ([`first_reads`]), made before a load by a call
/// that was made anyway, and when that call began.
pub(super) struct Seeded {
    pub(super) at: std::time::Instant,
    pub(super) db: ReadResult,
    /// `None`: there is no WAL.
    pub(super) wal: Option<ReadResult>,
}

/// What [`Snapshot::open`] read of the headers to start SQLite on them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Opened {
    /// When the headers were last read (before the read began).
    pub(super) checked: std::time::Instant,
    pub(super) page_size: usize,
    /// The database's size in pages when the WAL does not give it.
    pub(super) header_pages: u32,
    pub(super) reserved: usize,
}

/// The headers were read at `checked`; since then a query read `file_pages` from the database
/// file without reading them again after it.
pub(super) struct Handover {
    pub(super) checked: std::time::Instant,
    pub(super) file_pages: Vec<u32>,
    /// The headers as the query's last read of pages read them after its pages
    /// ([`Snapshot::headers_after`]), for the next query's check.
    pub(super) headers_after: Option<(std::time::Instant, Headers)>,
}

impl Pages {
    /// Drops every page: they belong to another version of the database.
    pub(super) fn reset(&mut self, stamp: Option<Stamp>) {
        *self = Pages {
            stamp,
            generation: self.generation + 1,
            ..Pages::default()
        };
    }

    pub(super) fn get(&self, page: u32) -> Option<Arc<[u8]>> {
        self.wal_pages
            .get(&page)
            .or_else(|| self.file.get(&page))
            .cloned()
    }

    /// Keeps a page of the file, dropping the oldest past [`CACHE_BYTES`]. Page 1 is never
    /// dropped: with it cached, each later load reads the 100-byte header instead of the
    /// first pages ([`FIRST_READ`]), so a poll of an unchanged database moves the two headers
    /// and nothing else however much was read before it.
    pub(super) fn insert_file_page(&mut self, page: u32, bytes: Arc<[u8]>) {
        let len = bytes.len();
        if let Some(old) = self.file.insert(page, bytes) {
            self.file_bytes -= old.len();
        } else if page != 1 {
            self.arrival.push_back(page);
        }
        self.file_bytes += len;
        self.drop_oldest_past(CACHE_BYTES);
    }

    /// Drops the oldest pages of the file (page 1 aside) until at most `budget` bytes are kept.
    pub(super) fn drop_oldest_past(&mut self, budget: usize) {
        while self.file_bytes > budget {
            let Some(oldest) = self.arrival.pop_front() else {
                break;
            };
            if let Some(old) = self.file.remove(&oldest) {
                self.file_bytes -= old.len();
            }
        }
    }
}

pub(super) fn lock(pages: &Mutex<Pages>) -> std::sync::MutexGuard<'_, Pages> {
    pages.lock().unwrap_or_else(|e| e.into_inner())
}

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
        snapshot
            .keep_shell_if_large(opened.page_size, page_count)
            .await;
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
