//! SQLite sources (OpenCode's `opencode.db`, grok-cli's `grok.db`) through the two primitives.
//! Used by the driver only: it may import `host` (to read) and the engine's row structs (to hand
//! rows over); the mapping of rows to records is pure and lives in `engine::{opencode, grokcli}`.
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
//! - Bound: above [`MAX_DATABASE_BYTES`] (database + WAL) nothing is copied and the read fails
//!   naming the size (exit 6). A read-only VFS over the range primitive would lift this; not
//!   built.
//! - OpenCode 2.x: sessions with a `session_v2` row (or with `session_message` rows and no
//!   `message` rows) are read from `session_message`; the rest from `message` / `part`.
//!   `OPENCODE_DB` (see `Harness::db_env`) is honoured by the local host and the POSIX list
//!   script, not yet by the PowerShell one.

use std::path::Path;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::engine::session::{self, SessionFile};
use crate::engine::{SourceCtx, grokcli, opencode, rows::RowRecords};
use crate::host::{FileRef, Host, HostError, MAX_READ_BYTES};
use crate::model::{ByteRange, FileEntry, Harness, Listing, display_path};

/// Database plus WAL above this size are not copied.
pub const MAX_DATABASE_BYTES: u64 = 64 * 1024 * 1024;
/// Copies attempted while the database keeps changing under them.
pub const MAX_ATTEMPTS: usize = 3;

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
}

/// A database file found in a listing, with its WAL when one was listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseFiles {
    pub db: FileEntry,
    pub wal: Option<FileEntry>,
}

/// The databases among a listing's files (of the SQLite harnesses).
pub fn databases(listing: &Listing) -> Vec<DatabaseFiles> {
    listing
        .files
        .iter()
        // Top files that are not a WAL: the default `opencode.db`, or whatever `OPENCODE_DB`
        // names.
        .filter(|f| f.harness.is_sqlite() && !f.rel.contains(&b'/') && !f.rel.ends_with(b"-wal"))
        .map(|db| {
            let mut wal_rel = db.rel.clone();
            wal_rel.extend_from_slice(b"-wal");
            let wal = listing
                .files
                .iter()
                .find(|f| f.harness == db.harness && f.root == db.root && f.rel == wal_rel)
                .cloned();
            DatabaseFiles {
                db: db.clone(),
                wal,
            }
        })
        .collect()
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
        root: entry.root.clone(),
        rel,
    }
}

/// Reads a whole file in calls of at most 4 MiB; `None` when it does not exist.
async fn read_whole<H: Host>(
    host: &H,
    file: &FileRef,
    path: &str,
    budget: u64,
) -> Result<Option<Vec<u8>>, crate::driver::DriverError> {
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
            }
            .into());
        }
        let chunk = result.chunks.into_iter().next().unwrap_or_default();
        let got = chunk.len() as u64;
        data.extend_from_slice(&chunk);
        if got < MAX_READ_BYTES || data.len() as u64 >= result.size {
            return Ok(Some(data));
        }
    }
}

/// The header fields of a database and its WAL, read with one small call each.
async fn stamp<H: Host>(host: &H, db: &FileRef, wal: &FileRef) -> Result<Stamp, HostError> {
    let head = host.read(db, &[ByteRange::new(24, 4)]).await?;
    let wal_salts = match host.read(wal, &[ByteRange::new(12, 12)]).await {
        Ok(r) => r.chunks.concat(),
        Err(HostError::NotFound { .. }) => Vec::new(),
        Err(e) => return Err(e),
    };
    Ok(Stamp {
        db_size: head.size,
        change_counter: head.chunks.concat(),
        wal_salts,
    })
}

fn stamp_of(db: &[u8], wal: &[u8]) -> Stamp {
    Stamp {
        db_size: db.len() as u64,
        change_counter: db.get(24..28).unwrap_or_default().to_vec(),
        wal_salts: wal.get(12..24).unwrap_or_default().to_vec(),
    }
}

/// Copies a database (and its WAL, whether listed or not) and opens the copy read-only.
pub async fn load<H: Host>(
    host: &H,
    db: &FileEntry,
) -> Result<Snapshot, crate::driver::DriverError> {
    let path = display_path(&db.full_path());
    let db_ref = file_ref(db, b"");
    let wal_ref = file_ref(db, b"-wal");
    for _ in 0..MAX_ATTEMPTS {
        let Some(db_bytes) = read_whole(host, &db_ref, &path, MAX_DATABASE_BYTES).await? else {
            return Err(HostError::NotFound {
                host: host.name().to_string(),
                path,
            }
            .into());
        };
        let budget = MAX_DATABASE_BYTES.saturating_sub(db_bytes.len() as u64);
        let wal_bytes = match read_whole(host, &wal_ref, &path, budget).await {
            Ok(wal) => wal.unwrap_or_default(),
            Err(crate::driver::DriverError::Database(DatabaseError::TooLarge { size, .. })) => {
                return Err(DatabaseError::TooLarge {
                    path,
                    size: size + db_bytes.len() as u64,
                }
                .into());
            }
            Err(e) => return Err(e),
        };
        let before = stamp_of(&db_bytes, &wal_bytes);
        let after = stamp(host, &db_ref, &wal_ref).await?;
        if before == after {
            return open_copy(db.harness, &path, &db_bytes, &wal_bytes).map_err(Into::into);
        }
    }
    Err(DatabaseError::Unstable {
        path,
        attempts: MAX_ATTEMPTS,
    }
    .into())
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
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::File::options()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)
}

impl Snapshot {
    fn fail(&self, e: rusqlite::Error) -> DatabaseError {
        DatabaseError::Sqlite {
            path: self.path.clone(),
            reason: e.to_string(),
        }
    }

    fn has_table(&self, name: &str) -> Result<bool, DatabaseError> {
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

    /// The sessions in the database, each as a session of the database file `db`.
    /// OpenCode 2.x sessions (`session_v2`) win over the 1.x `session` rows of the same id.
    pub fn sessions(&self, db: &FileEntry) -> Result<Vec<SessionFile>, DatabaseError> {
        let queries: &[(&str, &str)] = match self.harness {
            Harness::OpenCode => &[
                (
                    "SELECT id, parent_id, time_updated / 1000 FROM session_v2",
                    "session_v2",
                ),
                (
                    "SELECT id, parent_id, time_updated / 1000 FROM session",
                    "session",
                ),
            ],
            _ => &[(
                "SELECT id, NULL, CAST(strftime('%s', updated_at) AS INTEGER) FROM sessions",
                "sessions",
            )],
        };
        let mut out: Vec<SessionFile> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (sql, table) in queries {
            if !self.has_table(table)? {
                continue;
            }
            for (id, parent, updated) in self.session_rows(sql)? {
                if !seen.insert(id.clone()) {
                    continue;
                }
                // A child session (task tool) is a subagent: its records are marked sidechain.
                let agent = parent.is_some().then_some(id.as_str());
                out.extend(session::session_row(db, &id, agent, updated));
            }
        }
        Ok(out)
    }

    #[allow(clippy::type_complexity)]
    fn session_rows(
        &self,
        sql: &str,
    ) -> Result<Vec<(String, Option<String>, Option<i64>)>, DatabaseError> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.fail(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, Option<i64>>(2)?,
                ))
            })
            .map_err(|e| self.fail(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.fail(e))
    }

    /// Whether an OpenCode session is read from `session_message` (2.x): it has a `session_v2`
    /// row, or (1.18.33 already has the table, keyed to `session`) it has `session_message`
    /// rows and no `message` rows.
    fn is_v2(&self, id: &str) -> Result<bool, DatabaseError> {
        if self.harness != Harness::OpenCode || !self.has_table("session_message")? {
            return Ok(false);
        }
        let exists = |sql: &str| {
            self.conn
                .query_row(sql, [id], |_| Ok(()))
                .optional()
                .map(|r| r.is_some())
                .map_err(|e| self.fail(e))
        };
        if self.has_table("session_v2")? && exists("SELECT 1 FROM session_v2 WHERE id = ?1")? {
            return Ok(true);
        }
        Ok(
            exists("SELECT 1 FROM session_message WHERE session_id = ?1 LIMIT 1")?
                && !(self.has_table("message")?
                    && exists("SELECT 1 FROM message WHERE session_id = ?1 LIMIT 1")?),
        )
    }

    /// The session's working directory, for `resume`.
    pub fn session_cwd(&self, id: &str) -> Result<Option<String>, DatabaseError> {
        let sqls: &[(&str, &str)] = match self.harness {
            Harness::OpenCode => &[
                (
                    "session_v2",
                    "SELECT directory FROM session_v2 WHERE id = ?1",
                ),
                ("session", "SELECT directory FROM session WHERE id = ?1"),
            ],
            _ => &[("sessions", "SELECT cwd_last FROM sessions WHERE id = ?1")],
        };
        for (table, sql) in sqls {
            if !self.has_table(table)? {
                continue;
            }
            let cwd = self
                .conn
                .query_row(sql, [id], |r| r.get::<_, Option<String>>(0))
                .optional()
                .map(Option::flatten)
                .map_err(|e| self.fail(e))?;
            if cwd.is_some() {
                return Ok(cwd);
            }
        }
        Ok(None)
    }

    /// The records of one session, mapped by the engine.
    pub fn records(&self, ctx: &SourceCtx) -> Result<RowRecords, DatabaseError> {
        match self.harness {
            Harness::OpenCode => self.opencode_records(ctx),
            _ => self.grokcli_records(ctx),
        }
    }

    fn opencode_records(&self, ctx: &SourceCtx) -> Result<RowRecords, DatabaseError> {
        if self.is_v2(&ctx.session)? {
            let mut stmt = self
                .conn
                .prepare(
                    "SELECT id, type, time_created, data FROM session_message \
                     WHERE session_id = ?1 ORDER BY seq",
                )
                .map_err(|e| self.fail(e))?;
            let rows = stmt
                .query_map([&ctx.session], |r| {
                    Ok(opencode::SessionMessageRow {
                        id: r.get(0)?,
                        kind: r.get(1)?,
                        time_created: r.get(2)?,
                        data: r.get(3)?,
                    })
                })
                .and_then(Iterator::collect::<Result<Vec<_>, _>>)
                .map_err(|e| self.fail(e))?;
            return Ok(opencode::records_v2(ctx, &rows));
        }
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, time_created, data FROM message WHERE session_id = ?1 \
                 ORDER BY time_created, id",
            )
            .map_err(|e| self.fail(e))?;
        let messages = stmt
            .query_map([&ctx.session], |r| {
                Ok(opencode::MessageRow {
                    id: r.get(0)?,
                    time_created: r.get(1)?,
                    data: r.get(2)?,
                })
            })
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| self.fail(e))?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, message_id, time_created, data FROM part WHERE session_id = ?1 \
                 ORDER BY message_id, id",
            )
            .map_err(|e| self.fail(e))?;
        let parts = stmt
            .query_map([&ctx.session], |r| {
                Ok(opencode::PartRow {
                    id: r.get(0)?,
                    message_id: r.get(1)?,
                    time_created: r.get(2)?,
                    data: r.get(3)?,
                })
            })
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| self.fail(e))?;
        Ok(opencode::records(ctx, &messages, &parts))
    }

    fn grokcli_records(&self, ctx: &SourceCtx) -> Result<RowRecords, DatabaseError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT seq, role, message_json, created_at FROM messages WHERE session_id = ?1 \
                 ORDER BY seq",
            )
            .map_err(|e| self.fail(e))?;
        let messages = stmt
            .query_map([&ctx.session], |r| {
                Ok(grokcli::MessageRow {
                    seq: r.get(0)?,
                    role: r.get(1)?,
                    message_json: r.get(2)?,
                    created_at: r.get(3)?,
                })
            })
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| self.fail(e))?;
        let calls = if self.has_table("tool_calls")? {
            let mut stmt = self
                .conn
                .prepare(
                    "SELECT c.tool_call_id, c.status, \
                     (SELECT r.success FROM tool_results r WHERE r.tool_call_row_id = c.id \
                      ORDER BY r.id DESC LIMIT 1) \
                     FROM tool_calls c WHERE c.session_id = ?1",
                )
                .map_err(|e| self.fail(e))?;
            stmt.query_map([&ctx.session], |r| {
                Ok(grokcli::ToolCallRow {
                    tool_call_id: r.get(0)?,
                    status: r.get(1)?,
                    success: r.get::<_, Option<i64>>(2)?.map(|s| s != 0),
                })
            })
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| self.fail(e))?
        } else {
            Vec::new()
        };
        Ok(grokcli::records(ctx, &messages, &calls))
    }
}
