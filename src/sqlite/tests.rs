//! The SQLite reader against real databases on the local host, counting what it reads (bytes,
//! round trips, reads of the headers), with commits and checkpoints made while it reads.

use std::cell::{Cell, RefCell};

use rusqlite::Connection;

use clankie_engine::SourceCtx;
use clankie_engine::database::{QueryError, SqlValue};
use clankie_host::local::LocalHost;
use clankie_host::{FileRef, Host, HostError};
use clankie_model::limits::{MAX_RANGES, MAX_READ_BYTES, MAX_SOURCE_BYTES};
use clankie_model::{ByteRange, FileEntry, Listing, RootSpec};

use super::cache::lock;
use super::snapshot::file_ref;
use super::{DB_HEADER, DatabaseError, Databases, FIRST_READ, Snapshot, first_reads};

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
        if reads.len() == 2 && headers.contains(&reads[0].1) && reads[1].0.rel.ends_with(b"-wal") {
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
        inode: None,
        ctime: None,
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
        std::fs::metadata(dir.path().join(format!("opencode.db{suffix}"))).map_or(0, |m| m.len())
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
    // it (the WAL restarts: new salts). The part is of the newest completed message: the
    // last ones are still being written and held back.
    let path = dir.path().join("opencode.db");
    *host.on_page_read.borrow_mut() = Some(Box::new(move || {
        let other = Connection::open(&path).unwrap();
        other
            .execute_batch(
                "UPDATE part SET data = json_set(data, '$.text', 'the newest')
                   WHERE id = 'prt_000011730';
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

/// OpenCode's tables (as [`opencode_database`]) with `total` messages of about 1.5 KB in two
/// parts each, one in `every` of them `ses_read`'s and the rest another session's, and both
/// sessions' rows: a database whose size does not depend on how long `ses_read` is. The
/// writer stays open, so that the WAL stays (empty) beside the database.
fn opencode_database_of(
    dir: &std::path::Path,
    total: usize,
    every: usize,
) -> (Connection, FileEntry) {
    let (writer, entry) = opencode_database(dir, 0);
    writer
        .execute_batch(
            "CREATE TABLE session (id text PRIMARY KEY, parent_id text,
               time_updated integer NOT NULL);
             INSERT INTO session VALUES ('ses_read', NULL, 1000), ('ses_other', NULL, 1000);
             BEGIN",
        )
        .unwrap();
    for n in 0..total {
        let session = if n % every == 0 {
            "ses_read"
        } else {
            "ses_other"
        };
        let message = format!("msg_{n:08}");
        writer
            .execute(
                "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
                (
                    &message,
                    session,
                    1000 + n as i64,
                    r#"{"role":"assistant","time":{"created":1,"completed":2}}"#,
                ),
            )
            .unwrap();
        for k in 0..2 {
            let data = serde_json::json!({"type": "text", "text": format!("{n} {k} {}", "w ".repeat(370)),
                "time": {"end": 1}});
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
async fn a_newest_page_fetches_as_much_of_a_long_session_as_of_a_short_one() {
    // The same database twice, 6,000 messages, but for whose they are: `ses_read` has 120 of
    // them in one, 1,200 in the other.
    let mut fetched = Vec::new();
    for every in [50, 5] {
        let dir = tempfile::tempdir().unwrap();
        let (_writer, entry) = opencode_database_of(dir.path(), 6000, every);
        let ctx = read_ctx(&entry);
        let databases = Databases::default();
        let host = Counting::new();
        let snapshot = databases.load(&host, &entry).await.unwrap();
        let loaded = host.take();
        let newest = snapshot.newest_records(&ctx, 50).await.unwrap();
        assert!(newest.records.len() >= 50 && newest.older_omitted);
        // The newest record is the session's last part.
        let last = 6000 - every;
        assert_eq!(
            newest.records.last().map(|r| r.id.as_str()),
            Some(format!("prt_{last:08}1").as_str())
        );
        let size = std::fs::metadata(dir.path().join("opencode.db"))
            .unwrap()
            .len();
        fetched.push((every, size, loaded, host.take(), host.calls.get()));
    }
    let [
        (_, size, loaded, short_bytes, short_calls),
        (_, _, _, long_bytes, long_calls),
    ] = fetched[..]
    else {
        unreachable!()
    };
    let summary = format!("{fetched:?} (every, db size, load, query bytes, calls)");
    eprintln!("{summary}");
    // Through the indexes: the newest messages' rows and their parts' (and the trees' upper
    // levels on the way), the same for a session ten times as long.
    assert!(long_bytes <= short_bytes + short_bytes / 4, "{summary}");
    assert!(long_calls <= short_calls + 1, "{summary}");
    // A small part of the database, and a few reads (a level of every tree in each).
    assert!(loaded + long_bytes < size / 8, "{summary}");
    assert!(long_calls <= 8, "{summary}");
}

#[tokio::test]
async fn an_idle_poll_of_a_listed_database_fetches_its_headers_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let (writer, entry) = opencode_database_of(dir.path(), 3000, 10);
    let databases = Databases::default();
    let host = Counting::new();
    // What a host-wide follow's start does: the listing, then the newest page of a session.
    let snapshot = databases.load(&host, &entry).await.unwrap();
    let listed = snapshot.sessions(&entry, 0).await.unwrap();
    assert_eq!(listed.len(), 2);
    let newest = snapshot
        .newest_records(&read_ctx(&entry), 10)
        .await
        .unwrap();
    assert!(newest.records.len() >= 10);
    drop(snapshot);
    // Every page the cache may drop dropped, as a long run's reads would.
    for pages in databases.entries.lock().unwrap().values() {
        lock(pages).drop_oldest_past(0);
    }
    let poll = || async {
        host.take();
        let calls = host.calls.get();
        let snapshot = databases.load(&host, &entry).await.unwrap();
        let ids: Vec<String> = snapshot
            .sessions(&entry, 0)
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        (ids, host.take(), host.calls.get() - calls)
    };
    let ids: Vec<String> = listed.iter().map(|s| s.id.clone()).collect();
    for _ in 0..3 {
        // The two headers (the database's 100 bytes, the WAL's), in one call.
        let (got, bytes, calls) = poll().await;
        assert_eq!(got, ids);
        assert!(bytes <= DB_HEADER + 32, "{bytes} bytes");
        assert_eq!(calls, 1);
    }
    // A commit into the WAL: the next poll lists the new session, then is idle again.
    writer
        .execute("INSERT INTO session VALUES ('ses_new', NULL, 2000)", [])
        .unwrap();
    let (got, bytes, _) = poll().await;
    assert!(got.contains(&"ses_new".to_string()), "{got:?}");
    assert!(bytes > DB_HEADER + 32, "{bytes} bytes");
    let (again, bytes, calls) = poll().await;
    assert_eq!(again, got);
    assert!(
        bytes <= DB_HEADER + 32 && calls == 1,
        "{bytes} bytes, {calls} calls"
    );
}

/// What a host-wide follow gives: the records, and the warnings (none expected).
#[derive(Default)]
struct Given {
    records: Vec<String>,
    warnings: Vec<String>,
}

impl crate::driver::follow::FeedSink for Given {
    fn records(&mut self, records: &[clankie_model::Record]) -> std::io::Result<()> {
        self.records.extend(records.iter().map(|r| r.id.clone()));
        Ok(())
    }
    fn page_end(&mut self, _: &clankie_engine::page::Page) -> std::io::Result<()> {
        Ok(())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn warning(&mut self, line: &str) {
        self.warnings.push(line.to_string());
    }
}

impl crate::driver::follow::HostFeedSink for Given {
    fn session(&mut self, _: &clankie_engine::session::SessionFile, _: Option<&str>) {}
}

#[tokio::test]
async fn an_idle_host_wide_follow_of_a_database_fetches_its_headers_each_poll() {
    use crate::driver::follow::{FollowOptions, HostFeed};
    let dir = tempfile::tempdir().unwrap();
    let (writer, entry) = opencode_database_of(dir.path(), 3000, 10);
    let host = Counting::new();
    let reader = crate::driver::Reader::new(&host);
    let root = clankie_model::RootSpec {
        harness: entry.harness,
        dir: Some(dir.path().as_os_str().as_encoded_bytes().to_vec()),
    };
    let mut feed = HostFeed::new(&reader, vec![root]);
    let options = FollowOptions {
        interval: std::time::Duration::from_millis(1),
        strict: false,
        redact: true,
        polls: None,
    };
    feed.start(&options).await.unwrap();
    assert_eq!(feed.followed(), 2);
    let started = host.take();
    let mut given = Given::default();
    for poll in 0..5 {
        feed.poll(&options, &mut given).await.unwrap();
        let fetched = host.take();
        // The two headers, not the first pages again nor a page of the session table.
        assert!(
            fetched <= 4 * 1024,
            "poll {poll}: {fetched} bytes (the start: {started})"
        );
    }
    assert!(given.records.is_empty() && given.warnings.is_empty());
    // A message committed into the WAL is given by the next poll, once.
    writer
        .execute_batch(
            "INSERT INTO message VALUES ('msg_99999999', 'ses_read', 99999, 99999,
               '{\"role\":\"user\",\"time\":{\"created\":99999}}');
             INSERT INTO part VALUES ('prt_999999990', 'msg_99999999', 'ses_read', 99999, 99999,
               '{\"type\":\"text\",\"text\":\"new\"}');
             UPDATE session SET time_updated = 99999000 WHERE id = 'ses_read';",
        )
        .unwrap();
    feed.poll(&options, &mut given).await.unwrap();
    assert_eq!(given.records, ["prt_999999990"], "{:?}", given.warnings);
    assert!(host.take() > 0);
    // Idle again: the headers, with the new frames' pages kept.
    feed.poll(&options, &mut given).await.unwrap();
    assert_eq!(given.records.len(), 1);
    let fetched = host.take();
    assert!(fetched <= 4 * 1024, "{fetched} bytes");
}
