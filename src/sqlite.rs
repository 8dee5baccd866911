//! SQLite sources (OpenCode's `opencode.db`, grok-cli's `grok.db`) through the two primitives.
//! Used by the driver only: it may import `host` (to read) and the engine's row structs (to hand
//! rows over); the queries and the mapping of rows to records are each harness's own, in the
//! engine (`harness/opencode.rs`, `harness/grokcli.rs`), run here through `Database`.
//!
//! How a database is read without writing anything on the host:
//! - The database and its `-wal` are fetched through the read primitive (4 MiB per call) into
//!   memory, then written into a private temporary directory on the reading side (mode 0700,
//!   removed on drop), and that copy is opened read-only. The host's files are never opened by
//!   SQLite, so no `-shm` or lock ever appears next to them — for the local host too.
//! - Consistency: the database header's change counter (bytes 24..28) and size, and the WAL
//!   header's checkpoint sequence and salts (bytes 12..24), are read before and after the copy;
//!   when they differ (a checkpoint or WAL restart happened mid-copy) the copy is retried, at
//!   most [`MAX_ATTEMPTS`] times. A WAL that only grew is fine: SQLite ignores frames past the
//!   last valid commit, so the copy is a consistent snapshot.
//! - Cache: the bytes of the last copy of each database stay in memory in the [`Copies`] of
//!   the driver's reader of the host, for the run (at most [`CACHE_BYTES`] in all). A later load (listing, then
//!   resolving, then reading; every `--follow` poll) reads the two headers again: the same
//!   stamp and WAL size reuse the bytes; the same stamp and a longer WAL fetch only the new
//!   frames. That is a consistent snapshot too: until the WAL restarts (new salts) it holds
//!   every frame a checkpoint could have copied into the database since our copy. A restarted
//!   WAL is not truncated: the old frames past the new ones (other salts) are fetched again on
//!   each load, since the next commit writes over them without the file growing.
//! - Bound: above [`MAX_SOURCE_BYTES`] (database + WAL) nothing is copied and the read fails
//!   naming the size (exit 6). A read-only VFS over the range primitive would lift this; not
//!   built.
//! - OpenCode 2.x: sessions with a `session_v2` row (or with `session_message` rows and no
//!   `message` rows) are read from `session_message`; the rest from `message` / `part`.
//!   `OPENCODE_DB` (see `Layout::db_env`) is honoured by the local host and the POSIX list
//!   script, not yet by the PowerShell one.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, OptionalExtension};

use clankie_engine::database::{Database, QueryError, SqlValue};
use clankie_engine::session::{self, SessionFile};
use clankie_engine::{SourceCtx, harness, rows::RowRecords};
use clankie_host::{FileRef, Host, HostError};
use clankie_model::{ByteRange, FileEntry, Harness, display_path};

use clankie_model::limits::{MAX_READ_BYTES, MAX_SOURCE_BYTES};
/// Copies attempted while the database keeps changing under them.
pub const MAX_ATTEMPTS: usize = 3;
/// Copied bytes kept for later loads in one process, all databases together.
pub const CACHE_BYTES: usize = 128 * 1024 * 1024;

/// Why a database could not be read (besides host errors).
#[derive(Debug, thiserror::Error)]
pub enum DatabaseError {
    #[error(
        "{path}: the database and its WAL are {size} bytes ({mib:.1} MiB), over the 64 MiB this reader copies; not read",
        mib = *size as f64 / (1024.0 * 1024.0)
    )]
    TooLarge { path: String, size: u64 },
    #[error(
        "{path}: the database kept changing while it was copied ({attempts} attempts); try again"
    )]
    Unstable { path: String, attempts: usize },
    #[error("{path}: not a readable SQLite database: {reason}")]
    Sqlite { path: String, reason: String },
    /// Reading the database through the host failed.
    #[error(transparent)]
    Host(#[from] HostError),
}

/// A private, read-only copy of a database.
#[derive(Debug)]
pub struct Snapshot {
    harness: Harness,
    path: String,
    conn: Connection,
    // Dropped after the connection (field order): removes the copy.
    _dir: tempfile::TempDir,
}

/// What must not change between the start and the end of a copy.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    db_size: u64,
    change_counter: Vec<u8>,
    /// Checkpoint sequence and both salts; empty without a WAL.
    wal_salts: Vec<u8>,
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

/// Reads a whole file in calls of at most 4 MiB; `None` when it does not exist.
async fn read_whole<H: Host>(
    host: &H,
    file: &FileRef,
    path: &str,
    budget: u64,
) -> Result<Option<Vec<u8>>, DatabaseError> {
    let mut data = Vec::new();
    loop {
        let range = ByteRange::new(data.len() as u64, MAX_READ_BYTES);
        let result = match host.read(file, &[range]).await {
            Ok(r) => r,
            Err(HostError::NotFound { .. }) if data.is_empty() => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        if result.size > budget {
            return Err(DatabaseError::TooLarge {
                path: path.to_string(),
                size: result.size,
            });
        }
        let chunk = result.chunks.into_iter().next().unwrap_or_default();
        let got = chunk.len() as u64;
        data.extend_from_slice(&chunk);
        if got < MAX_READ_BYTES || data.len() as u64 >= result.size {
            return Ok(Some(data));
        }
    }
}

/// The header fields of a database and its WAL, read with one small call each, and the WAL's
/// size (0 without one).
async fn stamp<H: Host>(host: &H, db: &FileRef, wal: &FileRef) -> Result<(Stamp, u64), HostError> {
    let head = host.read(db, &[ByteRange::new(24, 4)]).await?;
    let (wal_salts, wal_size) = match host.read(wal, &[ByteRange::new(12, 12)]).await {
        Ok(r) => (r.chunks.concat(), r.size),
        Err(HostError::NotFound { .. }) => (Vec::new(), 0),
        Err(e) => return Err(e),
    };
    let stamp = Stamp {
        db_size: head.size,
        change_counter: head.chunks.concat(),
        wal_salts,
    };
    Ok((stamp, wal_size))
}

/// The bytes of one copied database and its WAL (empty without one); their stamp is
/// [`stamp_of`] them.
struct Copied {
    db: Vec<u8>,
    wal: Vec<u8>,
}

/// The copies of databases kept for later loads, by host name and database path, oldest first:
/// owned by the driver's reader of a host, for its run. A mutex, not a cell, because a reader's
/// futures may move between threads (`ls` lists hosts in tasks of their own).
#[derive(Default)]
pub struct Copies {
    entries: Mutex<Vec<((String, String), Copied)>>,
}

impl std::fmt::Debug for Copies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let entries = self.lock();
        f.debug_struct("Copies")
            .field("databases", &entries.len())
            .finish()
    }
}

impl Copies {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<((String, String), Copied)>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a copy out (no bytes are copied); a load that uses it puts it back with
    /// [`Copies::remember`], one that finds it stale drops it.
    fn take(&self, key: &(String, String)) -> Option<Copied> {
        let mut cache = self.lock();
        let at = cache.iter().position(|(k, _)| k == key)?;
        Some(cache.remove(at).1)
    }

    /// Keeps a copy for later loads: its WAL only up to the end of its last whole transaction
    /// (a frame caught half written must be fetched again, not kept), which is all SQLite
    /// reads of it.
    fn remember(&self, key: (String, String), mut copied: Copied) {
        let valid = clankie_engine::wal::valid_prefix(&copied.wal);
        if !copied.wal.is_empty() && valid == 0 {
            // No valid WAL header: nothing to extend later; copy again next time.
            return;
        }
        copied.wal.truncate(valid);
        let mut cache = self.lock();
        cache.retain(|(k, _)| *k != key);
        cache.push((key, copied));
        let mut total: usize = cache.iter().map(|(_, c)| c.db.len() + c.wal.len()).sum();
        while total > CACHE_BYTES && cache.len() > 1 {
            let (_, evicted) = cache.remove(0);
            total -= evicted.db.len() + evicted.wal.len();
        }
    }
}

/// The cached copy brought up to date with only header reads and the WAL's new frames, or
/// `None` when it cannot be (nothing cached, the database file or the WAL's salts changed, the
/// WAL shrank, or it changed again while its tail was read). The copy is taken out of the
/// cache meanwhile: after `None` or a host error the next load copies the database whole.
async fn refresh<H: Host>(
    copies: &Copies,
    host: &H,
    key: &(String, String),
    db_ref: &FileRef,
    wal_ref: &FileRef,
) -> Result<Option<Copied>, DatabaseError> {
    let Some(mut copied) = copies.take(key) else {
        return Ok(None);
    };
    let then = stamp_of(&copied.db, &copied.wal);
    let (now, wal_size) = stamp(host, db_ref, wal_ref).await?;
    let have = copied.wal.len() as u64;
    if now != then || wal_size < have {
        return Ok(None);
    }
    // The cached WAL ends after its last whole transaction (see `remember`), so what follows
    // it is new frames, whole or still being written.
    if wal_size > have {
        if copied.db.len() as u64 + wal_size > MAX_SOURCE_BYTES {
            return Ok(None);
        }
        while (copied.wal.len() as u64) < wal_size {
            let at = copied.wal.len() as u64;
            let want = (wal_size - at).min(MAX_READ_BYTES);
            let result = host.read(wal_ref, &[ByteRange::new(at, want)]).await?;
            let chunk = result.chunks.concat();
            if chunk.is_empty() {
                return Ok(None);
            }
            copied.wal.extend_from_slice(&chunk);
        }
        let (after, _) = stamp(host, db_ref, wal_ref).await?;
        if after != then {
            return Ok(None);
        }
    }
    Ok(Some(copied))
}

fn stamp_of(db: &[u8], wal: &[u8]) -> Stamp {
    Stamp {
        db_size: db.len() as u64,
        change_counter: db.get(24..28).unwrap_or_default().to_vec(),
        wal_salts: wal.get(12..24).unwrap_or_default().to_vec(),
    }
}

impl Copies {
    /// Copies a database (and its WAL, whether listed or not) and opens the copy read-only,
    /// starting from the copy kept of it when there is one.
    pub async fn load<H: Host>(&self, host: &H, db: &FileEntry) -> Result<Snapshot, DatabaseError> {
        load(self, host, db).await
    }
}

async fn load<H: Host>(
    copies: &Copies,
    host: &H,
    db: &FileEntry,
) -> Result<Snapshot, DatabaseError> {
    let path = display_path(&db.full_path());
    let db_ref = file_ref(db, b"");
    let wal_ref = file_ref(db, b"-wal");
    let key = (host.name().to_string(), path.clone());
    if let Some(copied) = refresh(copies, host, &key, &db_ref, &wal_ref).await? {
        let snapshot = open_copy(db.harness, &path, &copied.db, &copied.wal)?;
        copies.remember(key, copied);
        return Ok(snapshot);
    }
    for _ in 0..MAX_ATTEMPTS {
        let Some(db_bytes) = read_whole(host, &db_ref, &path, MAX_SOURCE_BYTES).await? else {
            return Err(HostError::NotFound {
                host: host.name().to_string(),
                path,
            }
            .into());
        };
        let budget = MAX_SOURCE_BYTES.saturating_sub(db_bytes.len() as u64);
        let wal_bytes = match read_whole(host, &wal_ref, &path, budget).await {
            Ok(wal) => wal.unwrap_or_default(),
            Err(DatabaseError::TooLarge { size, .. }) => {
                return Err(DatabaseError::TooLarge {
                    path,
                    size: size + db_bytes.len() as u64,
                });
            }
            Err(e) => return Err(e),
        };
        let before = stamp_of(&db_bytes, &wal_bytes);
        let (after, _) = stamp(host, &db_ref, &wal_ref).await?;
        if before == after {
            let snapshot = open_copy(db.harness, &path, &db_bytes, &wal_bytes)?;
            let copied = Copied {
                db: db_bytes,
                wal: wal_bytes,
            };
            copies.remember(key, copied);
            return Ok(snapshot);
        }
    }
    Err(DatabaseError::Unstable {
        path,
        attempts: MAX_ATTEMPTS,
    })
}

fn open_copy(
    harness: Harness,
    path: &str,
    db: &[u8],
    wal: &[u8],
) -> Result<Snapshot, DatabaseError> {
    let fail = |reason: String| DatabaseError::Sqlite {
        path: path.to_string(),
        reason,
    };
    let dir = tempfile::Builder::new()
        .prefix("clankie-db-")
        .tempdir()
        .map_err(|e| fail(format!("cannot make a private copy: {e}")))?;
    let copy = dir.path().join("copy.db");
    write_private(&copy, db).map_err(|e| fail(format!("cannot make a private copy: {e}")))?;
    // Always a WAL next to the copy (empty when the host has none), so that a read-only
    // connection never needs to create one.
    write_private(&dir.path().join("copy.db-wal"), wal)
        .map_err(|e| fail(format!("cannot make a private copy: {e}")))?;
    let conn = Connection::open_with_flags(
        &copy,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| fail(e.to_string()))?;
    // Touch the schema now so that a file that is not a database fails here, clearly.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    })
    .map_err(|e| fail(e.to_string()))?;
    Ok(Snapshot {
        harness,
        path: path.to_string(),
        conn,
        _dir: dir,
    })
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    #[cfg(windows)]
    use clankie_host::windows_shims::OpenOptionsExt;
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::File::options()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)
}

impl Snapshot {
    fn fail(&self, e: rusqlite::Error) -> QueryError {
        QueryError(e.to_string())
    }

    /// Says which database a harness's query failed on.
    fn database_error(&self, e: QueryError) -> DatabaseError {
        DatabaseError::Sqlite {
            path: self.path.clone(),
            reason: e.0,
        }
    }

    /// The sessions in the database, each as a session of the database file `db` (its size
    /// counting the `wal_size` bytes of its WAL, where the newest rows are until a checkpoint);
    /// a child session (task tool) is a subagent, its records marked sidechain.
    pub fn sessions(
        &self,
        db: &FileEntry,
        wal_size: u64,
    ) -> Result<Vec<SessionFile>, DatabaseError> {
        let rows = harness::format(self.harness)
            .database_sessions(self)
            .map_err(|e| self.database_error(e))?;
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

    /// The session's working directory, for `resume`.
    pub fn session_cwd(&self, id: &str) -> Result<Option<String>, DatabaseError> {
        harness::format(self.harness)
            .database_cwd(self, id)
            .map_err(|e| self.database_error(e))
    }

    /// The session's title as its row holds it, for `ls`.
    pub fn session_title(&self, id: &str) -> Result<Option<String>, DatabaseError> {
        harness::database_title(self.harness, self, id).map_err(|e| self.database_error(e))
    }

    /// The records of one session, mapped by its harness.
    pub fn records(&self, ctx: &SourceCtx) -> Result<RowRecords, DatabaseError> {
        harness::format(self.harness)
            .database_records(self, ctx)
            .map_err(|e| self.database_error(e))
    }
}

/// The harnesses' queries run on the private copy.
impl Database for Snapshot {
    fn has_table(&self, name: &str) -> Result<bool, QueryError> {
        self.conn
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [name],
                |_| Ok(()),
            )
            .optional()
            .map(|r| r.is_some())
            .map_err(|e| self.fail(e))
    }

    fn query(&self, sql: &str, params: &[&str]) -> Result<Vec<Vec<SqlValue>>, QueryError> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.fail(e))?;
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
            .map_err(|e| self.fail(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.fail(e))
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use clankie_host::local::LocalHost;
    use clankie_model::{Listing, RootSpec};

    /// The local host, counting the bytes it returns.
    struct Counting {
        inner: LocalHost,
        bytes: Cell<u64>,
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
            let result = self.inner.read(file, ranges).await?;
            let got: usize = result.chunks.iter().map(Vec::len).sum();
            self.bytes.set(self.bytes.get() + got as u64);
            Ok(result)
        }
    }

    impl Counting {
        fn take(&self) -> u64 {
            self.bytes.replace(0)
        }
    }

    fn rows(snapshot: &Snapshot) -> i64 {
        snapshot
            .conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap()
    }

    #[tokio::test]
    async fn later_loads_fetch_only_the_headers_and_new_wal_frames() {
        let dir = tempfile::tempdir().unwrap();
        let db_path = dir.path().join("opencode.db");
        // A writer that stays open, so that its WAL is neither checkpointed nor removed.
        let writer = Connection::open(&db_path).unwrap();
        writer.pragma_update(None, "journal_mode", "WAL").unwrap();
        writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        writer.execute_batch("CREATE TABLE t (x BLOB)").unwrap();
        let add = |n: usize| {
            for _ in 0..n {
                writer
                    .execute("INSERT INTO t VALUES (zeroblob(3000))", [])
                    .unwrap();
            }
        };
        add(20);
        let entry = FileEntry {
            harness: clankie_engine::harness::by_name("opencode").unwrap(),
            root: dir.path().as_os_str().as_encoded_bytes().into(),
            rel: b"opencode.db".to_vec(),
            size: 0,
            mtime: 0,
        };
        let size = |suffix: &str| {
            std::fs::metadata(dir.path().join(format!("opencode.db{suffix}")))
                .map_or(0, |m| m.len())
        };
        // The copies a reader of the host keeps for its run.
        let copies = Copies::default();
        let host = Counting {
            inner: LocalHost::new("local"),
            bytes: Cell::new(0),
        };

        // The first load copies both files (and reads the headers to check the copy).
        let first = copies.load(&host, &entry).await.unwrap();
        assert_eq!(rows(&first), 20);
        assert_eq!(host.take(), size("") + size("-wal") + 16);

        // Nothing changed: two header reads.
        let second = copies.load(&host, &entry).await.unwrap();
        assert_eq!(rows(&second), 20);
        assert_eq!(host.take(), 16);

        // New commits in the WAL: the headers, the new frames, the headers again.
        let wal_before = size("-wal");
        add(5);
        let third = copies.load(&host, &entry).await.unwrap();
        assert_eq!(rows(&third), 25);
        assert_eq!(host.take(), 16 + (size("-wal") - wal_before) + 16);

        // A checkpoint that truncates the WAL changes its salts: a whole copy again.
        writer
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        add(1);
        let fourth = copies.load(&host, &entry).await.unwrap();
        assert_eq!(rows(&fourth), 26);
        assert_eq!(host.take(), 16 + size("") + size("-wal") + 16);

        // Copies belong to their owner: another reader's copies start empty.
        let other = Copies::default();
        let fifth = other.load(&host, &entry).await.unwrap();
        assert_eq!(rows(&fifth), 26);
        assert_eq!(host.take(), size("") + size("-wal") + 16);
    }
}
