//! The query runner: SQLite's thread of a snapshot ([`Worker`], started by
//! [`Snapshot::start`]), and [`Snapshot::run`], which hands a query to it, answers its page
//! requests meanwhile, checks the headers after it, and runs it again (at most
//! [`MAX_ATTEMPTS`] times) when the database changed under it.

use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use clankie_engine::database::{Database, QueryError};
use clankie_host::Host;

#[cfg(doc)]
use super::Databases;
#[cfg(doc)]
use super::cache::Pages;
use super::cache::{Handover, lock};
use super::host_pages::{HostPages, Request};
use super::queries::{Queries, index_roots};
use super::{DatabaseError, MAX_ATTEMPTS, Snapshot, vfs};

/// A query for SQLite's thread: the connection (or why it did not open), and the file it
/// reads (to send hints).
type Job = Box<dyn FnOnce(Result<&Connection, &str>, &HostPages) + Send>;

/// SQLite's thread for one opened snapshot of a database, and what it asks for.
pub(super) struct Worker {
    jobs: std::sync::mpsc::Sender<Job>,
    pub(super) requests: tokio::sync::mpsc::UnboundedReceiver<Request>,
    /// The generation of the pages it reads (see [`Pages::generation`]).
    pub(super) generation: u64,
    /// The database's page size and size in pages, as shown to SQLite.
    pub(super) page_size: usize,
    pub(super) page_count: u32,
    /// Bytes reserved at the end of each page.
    pub(super) reserved: usize,
    /// The page after the last run of pages fetched, and the read-ahead window: a request for
    /// that page means SQLite reads on in order.
    pub(super) next_in_run: u32,
    pub(super) window: u32,
}

impl<'h, H: Host> Snapshot<'h, H> {
    pub(super) fn start(&self, page_size: usize, page_count: u32, reserved: usize) -> Worker {
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
    pub(super) async fn run<R, F>(&self, query: F) -> Result<R, DatabaseError>
    where
        R: Send + 'static,
        F: Fn(&dyn Database) -> Result<R, QueryError> + Send + Sync + 'static,
    {
        self.run_checking(query, false).await
    }

    /// [`Snapshot::run`]; with `check_later`, a query that succeeded leaves the check of the
    /// headers after it to the next query of a [`Databases::resume`] that follows at once.
    pub(super) async fn run_checking<R, F>(
        &self,
        query: F,
        check_later: bool,
    ) -> Result<R, DatabaseError>
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
}
