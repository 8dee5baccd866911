//! The database file as SQLite's thread sees it ([`HostPages`], the [`vfs::PageFile`] of its
//! connection): a page from the cache, else a request to the async side ([`Request`]) and a
//! wait for the answer; and the guesses of what SQLite reads next from what it read
//! ([`Tracker`], [`Siblings`]), asked with the request.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

#[cfg(doc)]
use clankie_engine::database::Database;

use super::cache::{Pages, lock};
use super::walk::IndexHint;
use super::{MAX_READ_AHEAD_PAGES, btree, vfs};

/// A page SQLite's thread waits for, and where to send it.
pub(super) struct PageWanted {
    pub(super) page: u32,
    /// Pages likely read next, fetched with it ([`Siblings`]).
    pub(super) also: Vec<u32>,
    pub(super) reply: std::sync::mpsc::Sender<Result<Arc<[u8]>, ()>>,
}

/// What SQLite's thread asks of the async side.
pub(super) enum Request {
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

/// Which B-tree SQLite reads, from the pages it asks for, to guess the pages it reads next.
#[derive(Default)]
pub(super) struct Tracker {
    /// Index root page → (its table's root page, its columns with the rowid).
    pub(super) indexes: HashMap<u32, (u32, usize)>,
    /// The index whose root SQLite read last: the index of the leaves it reads next.
    pub(super) index: Option<u32>,
    /// Index leaves whose rows were asked for already.
    asked: HashSet<u32>,
    /// Per index, the first column of the entries whose rows were asked for last: a scan that
    /// goes on to the next leaf goes on with the same key.
    last_key: HashMap<u32, Vec<u8>>,
    /// Index name → root page, and table name → root page, for hints.
    pub(super) names: HashMap<String, u32>,
    pub(super) tables: HashMap<String, u32>,
    /// The roots of every B-tree went with a hint already.
    pub(super) roots_sent: bool,
    /// The current query said what it reads ([`Database::will_read`]): no guessing for it.
    pub(super) hinted: bool,
    /// A read that follows the next scan ([`Database::will_read_after_scan`]): walked with it.
    pub(super) after_scan: Option<IndexHint>,
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

/// The database file as SQLite's thread sees it: cached pages, or a request to the async side.
pub(super) struct HostPages {
    pub(super) pages: Arc<Mutex<Pages>>,
    /// The generation of `pages` this thread's SQLite started with.
    pub(super) generation: u64,
    pub(super) requests: tokio::sync::mpsc::UnboundedSender<Request>,
    pub(super) page_size: usize,
    pub(super) page_count: u32,
    /// Bytes reserved at the end of each page (database header byte 20).
    pub(super) reserved: usize,
    pub(super) tracker: Mutex<Tracker>,
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
