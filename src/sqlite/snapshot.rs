//! A database opened for queries ([`Snapshot`], whose state `mod.rs` defines): its load
//! ([`Snapshot::open`]): both headers read in one call (or taken from what a read made ahead of
//! it read) into [`Headers`], the cache kept or dropped by what they say, and the WAL's new
//! frames read whole into the cache.
//! Running a query is `runner.rs`'s, fetching the pages it reads `fetch.rs`'s, and the
//! harnesses' queries `queries.rs`'s.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use clankie_engine::wal::{HEADER, WalIndex};
use clankie_host::{FileRef, Host, HostError};
use clankie_model::limits::{MAX_READ_BYTES, MAX_SOURCE_BYTES};
use clankie_model::{ByteRange, FileEntry, ReadResult, display_path};

#[cfg(doc)]
use super::Databases;
use super::cache::{Opened, Pages, Stamp, lock};
use super::runner::Worker;
use super::{DB_HEADER, DatabaseError, FIRST_READ, HANDOVER_TIME, Headers, Snapshot};

pub(super) fn file_ref(entry: &FileEntry, suffix: &[u8]) -> FileRef {
    let mut rel = entry.rel.clone();
    rel.extend_from_slice(suffix);
    FileRef {
        harness: entry.harness,
        root: entry.root.to_vec(),
        rel,
    }
}

impl Headers {
    pub(super) fn stamp(&self) -> Stamp {
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
    pub(super) fn new(host: &'h H, db: &FileEntry, pages: Arc<Mutex<Pages>>) -> Snapshot<'h, H> {
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

    pub(super) fn charge(&self, bytes: u64) -> Result<(), DatabaseError> {
        let total = self.fetched.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if total > MAX_SOURCE_BYTES {
            return Err(DatabaseError::TooLarge {
                path: self.path.clone(),
            });
        }
        Ok(())
    }

    pub(super) fn sqlite_error(&self, reason: String) -> DatabaseError {
        DatabaseError::Sqlite {
            path: self.path.clone(),
            reason,
        }
    }

    /// Both headers in one call; the database must exist, the WAL need not.
    pub(super) async fn headers(&self) -> Result<Headers, DatabaseError> {
        // Without page 1 cached, the first pages come with the header: SQLite reads page 1
        // first thing, then the roots of what it queries (see `FIRST_READ`).
        let cached = lock(&self.pages).get(1).is_some();
        let db_len = if cached {
            // A load again (a `--follow`'s poll): the host keeps a shell for the polls.
            self.host.keep_for_reads().await;
            DB_HEADER
        } else {
            FIRST_READ
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
    pub(super) fn header_reads(&self, db_len: u64) -> [(FileRef, Vec<ByteRange>); 2] {
        [
            (self.db_ref.clone(), vec![ByteRange::new(0, db_len)]),
            (
                self.wal_ref.clone(),
                vec![ByteRange::new(0, clankie_engine::wal::HEADER as u64)],
            ),
        ]
    }

    /// The headers from the results of [`Snapshot::header_reads`].
    pub(super) fn parse_headers(
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
    pub(super) async fn open(&self) -> Result<Worker, DatabaseError> {
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
        self.keep_shell_if_large(page_size, page_count).await;
        Ok(self.start(page_size, page_count, reserved))
    }

    /// A database larger than its first read is read by queries whose pages are levels of
    /// B-trees, each read waiting on the one before: the host keeps a shell for them
    /// ([`Host::keep_for_reads`]), opened while the load goes on, so that the walk's later
    /// levels start no processes of their own. A database its first read holds whole never
    /// asks for one.
    pub(super) async fn keep_shell_if_large(&self, page_size: usize, page_count: u32) {
        if u64::from(page_count) * page_size as u64 > FIRST_READ {
            self.host.keep_for_reads().await;
        }
    }

    /// Fetches the WAL from where `index` stopped to `wal_size` and keeps the pages of the
    /// transactions it completes; returns their numbers.
    pub(super) async fn read_wal(
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
}
