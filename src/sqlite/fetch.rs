//! How the async side answers SQLite's thread: the requests it serves ([`Snapshot::serve`]),
//! the pages asked for read in one batch with the read-ahead window, and the walks of hints
//! and guesses ([`Walk`]) read a level at a time, all of a level in one read. Every page goes
//! into the cache through [`Snapshot::fetch_pages_then`], charged to the load's bound.

use std::collections::{BTreeMap, BTreeSet};

use clankie_engine::database::QueryError;
use clankie_host::{FileRef, Host};
use clankie_model::ByteRange;
use clankie_model::limits::{MAX_RANGES, MAX_READ_BYTES, MAX_SOURCE_BYTES};

use super::cache::lock;
use super::host_pages::{PageWanted, Request};
use super::runner::Worker;
use super::walk::{Walk, children_of, descend};
use super::{DB_HEADER, DatabaseError, MAX_READ_AHEAD_PAGES, Snapshot};

impl<'h, H: Host> Snapshot<'h, H> {
    /// Answers SQLite's page requests until the job's result arrives.
    pub(super) async fn serve<R>(
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
        // A query's pages are levels of its B-trees, each read waiting on the one before: the
        // host keeps a shell for the next ones (this one does not wait for it).
        self.host.keep_for_reads().await;
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
}
