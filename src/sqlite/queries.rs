//! The queries a snapshot answers: the harnesses' SQL ([`Snapshot::sessions`],
//! [`Snapshot::records`], …) run on SQLite's thread through [`Database`] ([`Queries`]), whose
//! hints ([`Database::will_read`], [`Database::will_scan`]) are sent to the async side in
//! pages, from the schema's root pages ([`index_roots`]).

use std::collections::HashMap;
use std::sync::Arc;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension};

use clankie_engine::database::{Database, IndexRead, QueryError, SessionRow, SqlValue};
use clankie_engine::session::{self, SessionFile};
use clankie_engine::{SourceCtx, harness, rows::RowRecords};
use clankie_host::Host;
use clankie_model::FileEntry;

use super::DatabaseError;
#[cfg(doc)]
use super::Databases;
use super::Snapshot;
use super::cache::lock;
use super::host_pages::{HostPages, Request, Tracker};
use super::walk::IndexHint;

/// An index's root page → (its table's root page, its columns with the rowid).
type IndexRoots = HashMap<u32, (u32, usize)>;

/// The indexes of rowid tables, from the schema, by root page and by name; and the tables'
/// root pages by name.
type Schema = (IndexRoots, HashMap<String, u32>, HashMap<String, u32>);

/// The schema's B-trees ([`Schema`]).
pub(super) fn index_roots(conn: &Connection) -> rusqlite::Result<Schema> {
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

impl<'h, H: Host> Snapshot<'h, H> {
    /// The sessions in the database, each as a session of the database file `db` (its size
    /// counting the `wal_size` bytes of its WAL, where the newest rows are until a checkpoint);
    /// a child session (task tool) is a subagent, its records marked sidechain. The rows of a
    /// database unchanged since its last listing in this run are that listing's: no query runs.
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
        // A plain listing of a database unchanged since the last one (the same generation of
        // its pages: no new stamp, no new commit in the WAL) has the same rows.
        let remembered = !check_later && ahead.is_none();
        let listed = remembered
            .then(|| {
                let pages = lock(&self.pages);
                pages
                    .listed
                    .as_ref()
                    .filter(|(generation, _)| *generation == pages.generation)
                    .map(|(_, rows)| rows.clone())
            })
            .flatten();
        let rows = match listed {
            Some(rows) => rows,
            None => {
                let began = lock(&self.pages).generation;
                let rows: Arc<[SessionRow]> = self
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
                    .await?
                    .into();
                let mut pages = lock(&self.pages);
                // Checked after the query (or read from cached pages only) and nothing
                // arrived meanwhile: the rows of this generation.
                if remembered && pages.generation == began {
                    pages.listed = Some((began, rows.clone()));
                }
                rows
            }
        };
        let mut db = db.clone();
        db.size += wal_size;
        let db = &db;
        Ok(rows
            .iter()
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
pub(super) struct Queries<'c> {
    pub(super) conn: &'c Connection,
    pub(super) file: &'c HostPages,
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
