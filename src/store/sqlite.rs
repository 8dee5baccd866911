//! The store in a SQLite file (rusqlite): WAL, so readers never wait for a sync's writes;
//! every write transaction `BEGIN IMMEDIATE`, so two syncs take turns instead of deadlocking
//! on a lock upgrade; migrations inside one such transaction.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

use super::schema::{SCHEMA_VERSION, SQLITE_MIGRATIONS};
use super::{
    HostWrite, Prior, PriorSession, RecordRow, StoreError, StoredSession, kind_name, source_name,
};
use crate::check::SessionState;
use crate::driver::heads::SessionHead;
use clankie_engine::search::search_text;
use clankie_engine::session::SessionFile;
use clankie_model::{FileEntry, Record};

/// How long a write waits for another sync's transaction (each is one host's records).
const BUSY_TIMEOUT: Duration = Duration::from_secs(120);

pub struct SqliteStore {
    conn: Connection,
    name: String,
    redacted: bool,
}

impl SqliteStore {
    /// Opens the store; `create` (the redaction a new store records) makes it and its
    /// directory when missing, and migrates an older schema.
    pub fn open(path: &Path, name: &str, create: Option<bool>) -> Result<SqliteStore, StoreError> {
        let db = |e: rusqlite::Error| StoreError::Database {
            store: name.to_string(),
            message: e.to_string(),
        };
        if create.is_none() && !path.exists() {
            return Err(StoreError::Missing {
                store: name.to_string(),
            });
        }
        if create.is_some()
            && let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(dir).map_err(|e| StoreError::Database {
                store: name.to_string(),
                message: format!("cannot create {}: {e}", dir.display()),
            })?;
        }
        let flags = if create.is_some() {
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE
        } else {
            OpenFlags::SQLITE_OPEN_READ_ONLY
        };
        let mut conn = Connection::open_with_flags(path, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .map_err(db)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db)?;
        if create.is_none() {
            // A reader visits the records the index names in rowid order, each page about
            // once: SQLite's default 2 MiB page cache would only fault in fresh memory for
            // pages never read again (about half a search's page faults for a literal).
            conn.pragma_update(None, "cache_size", READER_CACHE_KIB)
                .map_err(db)?;
        }
        if let Some(redact) = create {
            use_wal(&conn).map_err(db)?;
            conn.pragma_update(None, "synchronous", "normal")
                .map_err(db)?;
            migrate(&mut conn, redact).map_err(db)?;
        }
        let version: Option<i64> = meta(&conn, "schema_version").map_err(db)?;
        match version {
            None => {
                return Err(StoreError::Missing {
                    store: name.to_string(),
                });
            }
            Some(found) if found > SCHEMA_VERSION => {
                return Err(StoreError::Newer {
                    store: name.to_string(),
                    found,
                    known: SCHEMA_VERSION,
                });
            }
            Some(_) => {}
        }
        let redacted = meta(&conn, "redacted").map_err(db)? != Some(0);
        Ok(SqliteStore {
            conn,
            name: name.to_string(),
            redacted,
        })
    }

    fn db(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        |e| StoreError::Database {
            store: self.name.clone(),
            message: e.to_string(),
        }
    }

    pub fn redacted(&self) -> bool {
        self.redacted
    }

    pub fn prior(&mut self, host: &str) -> Result<Prior, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT harness, session, cursor, size, mtime, last_ts, settled, generation, \
                 next_seq, ordinal, deleted FROM sessions WHERE host = ?1",
            )
            .map_err(self.db())?;
        let rows = stmt
            .query_map([host], |row| {
                let key = format!("{}/{}", row.get::<_, String>(0)?, row.get::<_, String>(1)?);
                Ok((
                    key,
                    PriorSession {
                        state: SessionState {
                            cursor: row.get(2)?,
                            size: row.get::<_, i64>(3)? as u64,
                            mtime: row.get(4)?,
                            last_ts: row.get(5)?,
                            settled: row.get(6)?,
                        },
                        generation: row.get(7)?,
                        next_seq: row.get(8)?,
                        ordinal: row.get(9)?,
                        deleted: row.get(10)?,
                    },
                ))
            })
            .map_err(self.db())?;
        let mut prior = BTreeMap::new();
        for row in rows {
            let (key, session) = row.map_err(self.db())?;
            prior.insert(key, session);
        }
        Ok(prior)
    }

    pub fn apply(&mut self, host: &str, write: &HostWrite) -> Result<usize, StoreError> {
        let name = self.name.clone();
        let db = move |e: rusqlite::Error| StoreError::Database {
            store: name.clone(),
            message: e.to_string(),
        };
        let now = jiff::Timestamp::now().to_string();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&db)?;
        tx.execute(
            "INSERT INTO hosts (host, first_sync, last_sync) VALUES (?1, ?2, ?2) \
             ON CONFLICT (host) DO NOTHING",
            params![host, now],
        )
        .map_err(&db)?;
        if write.is_empty() {
            tx.commit().map_err(&db)?;
            return Ok(0);
        }
        tx.execute(
            "UPDATE hosts SET last_sync = ?2 WHERE host = ?1",
            params![host, now],
        )
        .map_err(&db)?;
        let mut added = 0;
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO records (host, harness, session, generation, record_id, seq, \
                     kind, thinking, ts, agent, sidechain, text, call_id, tool_name, input, \
                     is_error, terminal_source, terminal_generation, model, usage, by_user) VALUES \
                     (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, \
                     ?17, ?18, ?19, ?20, ?21) ON CONFLICT DO NOTHING",
                )
                .map_err(&db)?;
            let mut index = tx
                .prepare_cached("INSERT INTO records_text (rowid, text) VALUES (?1, ?2)")
                .map_err(&db)?;
            let mut supersede = tx
                .prepare_cached(
                    "UPDATE records SET superseded = 1 WHERE host = ?1 AND harness = ?2 AND \
                     session = ?3 AND generation < ?4 AND superseded = 0",
                )
                .map_err(&db)?;
            let mut upsert = tx
                .prepare_cached(
                    "INSERT INTO sessions (host, harness, session, agent, root, rel, path, size, \
                     mtime, title, cwd, model, first_ts, last_ts, records, input_tokens, \
                     output_tokens, cursor, settled, generation, next_seq, ordinal, deleted, \
                     writer_version) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, \
                     ?16, ?17, ?18, ?19, ?20, ?21, ?22, 0, ?23) \
                     ON CONFLICT (host, harness, session) DO UPDATE SET agent = excluded.agent, \
                     root = excluded.root, rel = excluded.rel, path = excluded.path, \
                     size = excluded.size, mtime = excluded.mtime, \
                     title = coalesce(excluded.title, sessions.title), \
                     cwd = coalesce(excluded.cwd, sessions.cwd), \
                     model = coalesce(excluded.model, CASE WHEN sessions.generation = \
                     excluded.generation THEN sessions.model END), \
                     first_ts = CASE WHEN sessions.generation = excluded.generation THEN \
                     coalesce(sessions.first_ts, excluded.first_ts) ELSE excluded.first_ts END, \
                     last_ts = excluded.last_ts, \
                     records = excluded.records + CASE WHEN sessions.generation = \
                     excluded.generation THEN sessions.records ELSE 0 END, \
                     input_tokens = excluded.input_tokens + CASE WHEN sessions.generation = \
                     excluded.generation THEN sessions.input_tokens ELSE 0 END, \
                     output_tokens = excluded.output_tokens + CASE WHEN sessions.generation = \
                     excluded.generation THEN sessions.output_tokens ELSE 0 END, \
                     cursor = excluded.cursor, settled = excluded.settled, \
                     generation = excluded.generation, next_seq = excluded.next_seq, \
                     ordinal = excluded.ordinal, deleted = 0, \
                     writer_version = coalesce(excluded.writer_version, sessions.writer_version)",
                )
                .map_err(&db)?;
            for s in &write.sessions {
                let harness = s.session.harness().name();
                let id = s.session.id.as_str();
                if s.reset {
                    supersede
                        .execute(params![host, harness, id, s.generation])
                        .map_err(&db)?;
                }
                let (mut count, mut input_tokens, mut output_tokens) = (0i64, 0i64, 0i64);
                let mut first_ts = None;
                let mut model = None;
                for (k, record) in s.records.iter().enumerate() {
                    let row = RecordRow::of(record);
                    let inserted = insert
                        .execute(params![
                            host,
                            harness,
                            id,
                            s.generation,
                            row.record_id,
                            s.start_seq + k as i64,
                            row.kind,
                            row.thinking,
                            row.ts,
                            row.agent,
                            row.sidechain,
                            row.text,
                            row.call_id,
                            row.tool_name,
                            row.input,
                            row.is_error,
                            row.terminal_source,
                            row.terminal_generation,
                            row.model,
                            row.usage,
                            row.by_user,
                        ])
                        .map_err(&db)?;
                    if inserted == 0 {
                        // Another sync of the same host wrote it first.
                        continue;
                    }
                    index
                        .execute(params![
                            tx.last_insert_rowid(),
                            search_text(record).as_ref()
                        ])
                        .map_err(&db)?;
                    count += 1;
                    if let Some(usage) = &record.usage {
                        input_tokens += usage.input.unwrap_or(0) as i64;
                        output_tokens += usage.output.unwrap_or(0) as i64;
                    }
                    if first_ts.is_none() {
                        first_ts = record.ts.clone();
                    }
                    if record.model.is_some() {
                        model = record.model.clone();
                    }
                }
                added += count as usize;
                let entry = &s.session.entry;
                let head = s.head.clone().unwrap_or_default();
                upsert
                    .execute(params![
                        host,
                        harness,
                        id,
                        s.session.agent,
                        &entry.root[..],
                        entry.rel,
                        clankie_model::display_path(&entry.full_path()),
                        entry.size as i64,
                        entry.mtime,
                        head.title,
                        head.cwd,
                        model,
                        first_ts,
                        s.state.last_ts,
                        count,
                        input_tokens,
                        output_tokens,
                        s.state.cursor,
                        s.state.settled,
                        s.generation,
                        s.start_seq + s.records.len() as i64,
                        s.ordinal,
                        head.writer_version,
                    ])
                    .map_err(&db)?;
            }
            let mut delete = tx
                .prepare_cached(
                    "UPDATE sessions SET deleted = 1 WHERE host = ?1 AND harness = ?2 AND \
                     session = ?3",
                )
                .map_err(&db)?;
            for (harness, session) in &write.deleted {
                delete
                    .execute(params![host, harness, session])
                    .map_err(&db)?;
            }
        }
        tx.commit().map_err(&db)?;
        Ok(added)
    }

    pub fn hosts(&mut self) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT host FROM hosts ORDER BY host")
            .map_err(self.db())?;
        let names = stmt
            .query_map([], |row| row.get(0))
            .map_err(self.db())?
            .collect::<Result<Vec<String>, _>>()
            .map_err(self.db())?;
        Ok(names)
    }

    pub fn sessions(&mut self, host: &str) -> Result<Vec<StoredSession>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT harness, session, agent, root, rel, size, mtime, title, cwd, generation, \
                 writer_version FROM sessions WHERE host = ?1 AND deleted = 0 ORDER BY ordinal",
            )
            .map_err(self.db())?;
        let rows = stmt
            .query_map([host], |row| {
                let harness: String = row.get(0)?;
                Ok((
                    harness,
                    StoredSession {
                        session: SessionFile {
                            id: row.get(1)?,
                            agent: row.get(2)?,
                            entry: FileEntry {
                                // Replaced below: a harness this build knows.
                                harness: clankie_engine::harness::all().next().expect("a harness"),
                                root: Arc::from(row.get::<_, Vec<u8>>(3)?),
                                rel: row.get(4)?,
                                size: row.get::<_, i64>(5)? as u64,
                                mtime: row.get(6)?,
                                inode: None,
                                ctime: None,
                            },
                        },
                        head: SessionHead {
                            title: row.get(7)?,
                            cwd: row.get(8)?,
                            writer_version: row.get(10)?,
                        },
                        generation: row.get(9)?,
                    },
                ))
            })
            .map_err(self.db())?;
        let mut sessions = Vec::new();
        for row in rows {
            let (harness, mut stored) = row.map_err(self.db())?;
            // A harness a newer build stored: left out.
            let Some(harness) = clankie_engine::harness::by_name(&harness) else {
                continue;
            };
            stored.session.entry.harness = harness;
            sessions.push(stored);
        }
        Ok(sessions)
    }

    pub fn records(
        &mut self,
        host: &str,
        session: &StoredSession,
    ) -> Result<Vec<Record>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {RECORD_COLUMNS} FROM records WHERE host = ?1 AND harness = ?2 AND \
                 session = ?3 AND generation = ?4 ORDER BY seq"
            ))
            .map_err(self.db())?;
        let harness = session.session.harness();
        let rows = stmt
            .query_map(
                params![host, harness.name(), session.session.id, session.generation],
                record_row,
            )
            .map_err(self.db())?;
        let mut records = Vec::new();
        for row in rows {
            let row = row.map_err(self.db())?;
            if let Some(record) = row.into_record(harness, &session.session.id) {
                records.push(record);
            }
        }
        Ok(records)
    }

    /// Of the trigrams of an alternative's `pieces`, the ones few records hold: the
    /// [`PROBES`] likeliest to be rare ([`super::rare::rarest_first`]) are counted in the
    /// index up to [`FEW`] records, and those under it are looked up in place of the pieces'
    /// every trigram (`None`: none of them is rare). Counting a common trigram stops after
    /// [`FEW`] entries of its list, where looking it up for every candidate walks the list.
    pub fn rare_trigrams(&self, pieces: &[String]) -> Result<Option<Vec<String>>, StoreError> {
        let likeliest =
            super::rare::rarest_first(pieces.iter().flat_map(|p| super::rare::windows(p)));
        let mut count = self
            .conn
            .prepare_cached(
                "SELECT count(*) FROM (SELECT rowid FROM records_text WHERE records_text MATCH ?1 \
                 LIMIT ?2)",
            )
            .map_err(self.db())?;
        let mut rare = Vec::new();
        for trigram in likeliest.into_iter().take(PROBES) {
            let phrase = format!("\"{}\"", trigram.replace('"', "\"\""));
            let held: i64 = count
                .query_row(params![phrase, FEW], |row| row.get(0))
                .map_err(self.db())?;
            if held < FEW {
                rare.push(trigram);
            }
        }
        Ok((!rare.is_empty()).then_some(rare))
    }

    pub fn candidates(
        &mut self,
        host: &str,
        sessions: &[StoredSession],
        query: &str,
        mut each: impl FnMut(usize, i64, Record),
    ) -> Result<(), StoreError> {
        let at = super::session_places(sessions);
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT r.harness, r.session, {} FROM records_text t JOIN records r ON \
                 r.rowid = t.rowid WHERE records_text MATCH ?2 AND r.host = ?1 AND \
                 r.superseded = 0",
                RECORD_COLUMNS
                    .split(", ")
                    .map(|c| format!("r.{c}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .map_err(self.db())?;
        let mut rows = stmt.query(params![host, query]).map_err(self.db())?;
        while let Some(row) = rows.next().map_err(self.db())? {
            let harness = row.get_ref(0).map_err(self.db())?;
            let session = row.get_ref(1).map_err(self.db())?;
            let (Ok(harness), Ok(session)) = (harness.as_str(), session.as_str()) else {
                continue;
            };
            let Some(&k) = at.get(&(harness, session)) else {
                continue;
            };
            let seq: i64 = row.get(2 + SEQ_COLUMN).map_err(self.db())?;
            let stored = &sessions[k];
            let record = record_row_at(row, 2).map_err(self.db())?;
            if let Some(record) = record.into_record(stored.session.harness(), &stored.session.id) {
                each(k, seq, record);
            }
        }
        Ok(())
    }
}

/// A reader's page cache, in KiB (negative: SQLite's unit for a size in KiB).
const READER_CACHE_KIB: i64 = -256;

/// How many of a search's trigrams [`SqliteStore::rare_trigrams`] counts.
const PROBES: usize = 3;
/// Under how many records a trigram is rare: reading that many candidates costs about what
/// walking a common trigram's list for each of them does.
const FEW: i64 = 2000;

/// The columns [`record_row`] reads, in order.
const RECORD_COLUMNS: &str = "record_id, kind, thinking, ts, agent, sidechain, text, call_id, \
                              tool_name, input, is_error, terminal_source, terminal_generation, \
                              model, usage, seq, by_user";
/// Where `seq` is among [`RECORD_COLUMNS`].
const SEQ_COLUMN: usize = 15;

fn record_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RecordRow> {
    record_row_at(row, 0)
}

fn record_row_at(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<RecordRow> {
    Ok(RecordRow {
        record_id: row.get(at)?,
        kind: kind_name(&row.get::<_, String>(at + 1)?),
        thinking: row.get(at + 2)?,
        ts: row.get(at + 3)?,
        agent: row.get(at + 4)?,
        sidechain: row.get(at + 5)?,
        text: row.get(at + 6)?,
        call_id: row.get(at + 7)?,
        tool_name: row.get(at + 8)?,
        input: row.get(at + 9)?,
        is_error: row.get(at + 10)?,
        terminal_source: row
            .get::<_, Option<String>>(at + 11)?
            .map(|s| source_name(&s)),
        terminal_generation: row.get(at + 12)?,
        model: row.get(at + 13)?,
        usage: row.get(at + 14)?,
        by_user: row.get(at + 16)?,
    })
}

/// Puts the file in WAL mode (persistent, so once per store). Changing the journal mode
/// takes an exclusive lock without calling the busy handler, so a second sync making the
/// same new store at the same moment is told "locked" at once: it waits and tries again here.
fn use_wal(conn: &Connection) -> rusqlite::Result<()> {
    let started = std::time::Instant::now();
    loop {
        match conn.pragma_update(None, "journal_mode", "wal") {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && started.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            done => return done,
        }
    }
}

/// A `meta` value as an integer; `None` when the table or the key is missing.
fn meta(conn: &Connection, key: &str) -> rusqlite::Result<Option<i64>> {
    let exists: bool = conn.query_row(
        "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
        [],
        |row| row.get(0),
    )?;
    if !exists {
        return Ok(None);
    }
    conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |row| {
        row.get::<_, String>(0)
    })
    .optional()
    .map(|v| v.and_then(|v| v.parse().ok()))
}

/// Creates or migrates the schema in one `BEGIN IMMEDIATE` transaction; a new store records
/// `redact`.
fn migrate(conn: &mut Connection, redact: bool) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version = meta(&tx, "schema_version")?.unwrap_or(0);
    if version < SCHEMA_VERSION {
        for migration in &SQLITE_MIGRATIONS[version as usize..] {
            tx.execute_batch(migration)?;
        }
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?1) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [SCHEMA_VERSION.to_string()],
        )?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('redacted', ?1) ON CONFLICT (key) DO NOTHING",
            [i64::from(redact).to_string()],
        )?;
    }
    tx.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Syncs started together (cron) all make the same new store: each waits its turn.
    #[test]
    fn syncs_making_the_same_new_store_at_once_all_open_it() {
        for _ in 0..40 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s.db");
            let barrier = Arc::new(std::sync::Barrier::new(6));
            let opens: Vec<_> = (0..6)
                .map(|_| {
                    let (path, barrier) = (path.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        SqliteStore::open(&path, "s", Some(true)).map(|_| ())
                    })
                })
                .collect();
            for open in opens {
                if let Err(e) = open.join().unwrap() {
                    panic!("{e}");
                }
            }
        }
    }

    /// The likeliest-rare trigrams are counted in the index: those under [`FEW`] records are
    /// looked up, a common one is not, and none rare leaves the pieces whole.
    #[test]
    fn only_the_trigrams_few_records_hold_are_looked_up() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("s.db"), "s", Some(true)).unwrap();
        let tx = store.conn.unchecked_transaction().unwrap();
        for rowid in 0..FEW + 10 {
            let text = if rowid % 1000 == 0 {
                "zqj xkv jq"
            } else {
                " jq jq"
            };
            tx.execute(
                "INSERT INTO records_text (rowid, text) VALUES (?1, ?2)",
                params![rowid, text],
            )
            .unwrap();
        }
        tx.commit().unwrap();
        let pieces = |p: &str| vec![p.to_string()];
        // `zqj` and `xkv` rank first and are in three records; ` jq`, next, is in every one.
        assert_eq!(
            store.rare_trigrams(&pieces("zqj xkv jq")).unwrap(),
            Some(vec!["zqj".to_string(), "xkv".to_string()])
        );
        assert_eq!(store.rare_trigrams(&pieces(" jq jq")).unwrap(), None);
    }
}
