//! The store in PostgreSQL (tokio-postgres). Migrations run in one transaction under
//! `pg_advisory_xact_lock`, so concurrent first syncs take turns; a host's records and cursors
//! are written in one transaction, records many rows per statement (`unnest`), and a repeat
//! of a stored record is a no-op (`ON CONFLICT DO NOTHING`). Substring search uses `pg_trgm`:
//! a GIN array index of each record's `show_trgm` trigrams gives the records that may hold a
//! literal, from the index alone (word-based `tsvector` search would miss a literal inside a
//! word, which `grep` finds).

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::StreamExt;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, NoTls, Row};

use super::{
    HostWrite, Prior, PriorSession, RecordRow, StoreError, StoredSession, kind_name, source_name,
};
use crate::check::SessionState;
use crate::driver::heads::SessionHead;
use clankie_engine::search::search_text;
use clankie_engine::session::SessionFile;
use clankie_model::{FileEntry, Record};

use super::pg_trigrams;
use super::schema::SCHEMA_VERSION;

/// The advisory lock key every migration holds (`clankie-read` in ASCII, as a number).
const MIGRATION_LOCK: i64 = 0x636c_616e_6b69_6500;

/// Records written per statement.
const ROWS_PER_INSERT: usize = 2000;

/// The PostgreSQL migrations: entry `k` takes the schema from version `k` to `k + 1`.
const MIGRATIONS: &[&str] = &[V1, V2, V3];

/// Version 1: docs/store.md's tables, with booleans and bytea where SQLite has integers and
/// blobs, and `search`: the text `grep` matches, indexed by trigrams.
const V1: &str = "
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE TABLE hosts (
    host text PRIMARY KEY,
    first_sync text NOT NULL,
    last_sync text NOT NULL
);
CREATE TABLE sessions (
    host text NOT NULL,
    harness text NOT NULL,
    session text NOT NULL,
    agent text,
    root bytea NOT NULL,
    rel bytea NOT NULL,
    path text NOT NULL,
    size bigint NOT NULL,
    mtime bigint NOT NULL,
    title text,
    cwd text,
    model text,
    writer_version text,
    first_ts text,
    last_ts text,
    records bigint NOT NULL DEFAULT 0,
    input_tokens bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    cursor text NOT NULL,
    settled boolean NOT NULL,
    generation bigint NOT NULL DEFAULT 0,
    next_seq bigint NOT NULL DEFAULT 0,
    ordinal bigint NOT NULL,
    deleted boolean NOT NULL DEFAULT false,
    PRIMARY KEY (host, harness, session)
);
CREATE TABLE records (
    host text NOT NULL,
    harness text NOT NULL,
    session text NOT NULL,
    generation bigint NOT NULL,
    record_id text NOT NULL,
    seq bigint NOT NULL,
    superseded boolean NOT NULL DEFAULT false,
    kind text NOT NULL,
    thinking boolean NOT NULL DEFAULT false,
    ts text,
    agent text,
    sidechain boolean NOT NULL DEFAULT false,
    text text,
    call_id text,
    tool_name text,
    input text,
    is_error boolean,
    terminal_source text,
    terminal_generation bigint,
    model text,
    usage text,
    by_user boolean NOT NULL DEFAULT false,
    search text NOT NULL,
    PRIMARY KEY (host, harness, session, generation, record_id)
);
CREATE INDEX records_in_order ON records (host, harness, session, generation, seq);
CREATE INDEX records_search ON records USING gin (search gin_trgm_ops);
";

/// Version 2: the text index is a GIN array index of each record's `show_trgm` trigrams, whose
/// `@>` the server answers from the index alone (`gin_trgm_ops` rechecks every candidate
/// against its text: read from TOAST, decompressed and lowercased before our regex sees it).
/// The statistics the planner needs are gathered at once (a migrated store of many rows would
/// otherwise wait for autovacuum's).
const V2: &str = "
SET LOCAL maintenance_work_mem = '256MB';
DROP INDEX records_search;
CREATE INDEX records_trigrams ON records USING gin (show_trgm(search));
ANALYZE records;
";

/// Version 3: a record's row is kept whole in its table page where it fits, and compressed with
/// `lz4` where the server has it. A search reads its candidates' text and input: stored out of
/// line (TOAST, by default for a row over about 2 KiB) each value is a lookup of its chunks in
/// the TOAST table, and `pglz` decompresses at a fraction of `lz4`'s speed. With
/// `toast_tuple_target` at 8,160 bytes, a row up to that size stays in the page as it is, and a
/// longer one is compressed first and moved out of line only if it still does not fit.
/// Neither setting changes the values already stored, so the rows are copied into a table made
/// with both (each value made new by `|| ''`, so it is stored afresh) and the indexes are built
/// again on the copy.
const V3: &str = "
SET LOCAL maintenance_work_mem = '256MB';
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_settings
               WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        EXECUTE 'ALTER TABLE records ALTER text SET COMPRESSION lz4, '
                'ALTER input SET COMPRESSION lz4, ALTER usage SET COMPRESSION lz4, '
                'ALTER search SET COMPRESSION lz4';
    END IF;
END $$;
CREATE TABLE records_v3 (LIKE records INCLUDING ALL EXCLUDING INDEXES)
    WITH (toast_tuple_target = 8160);
INSERT INTO records_v3 (host, harness, session, generation, record_id, seq, superseded, kind,
    thinking, ts, agent, sidechain, text, call_id, tool_name, input, is_error, terminal_source,
    terminal_generation, model, usage, by_user, search)
SELECT host, harness, session, generation, record_id, seq, superseded, kind, thinking, ts,
    agent, sidechain, text || '', call_id, tool_name, input || '', is_error, terminal_source,
    terminal_generation, model, usage || '', by_user, search || ''
FROM records;
DROP TABLE records;
ALTER TABLE records_v3 RENAME TO records;
ALTER TABLE records ADD CONSTRAINT records_pkey
    PRIMARY KEY (host, harness, session, generation, record_id);
CREATE INDEX records_in_order ON records (host, harness, session, generation, seq);
CREATE INDEX records_trigrams ON records USING gin (show_trgm(search));
ANALYZE records;
";

/// A store's second connection: opened by the first search, or with the first connection
/// when the store is opened to search.
enum Second {
    NotAsked,
    /// Connecting, then reading the index's most common trigrams and the database's
    /// lowercasing ([`open_second`]).
    Opening(tokio::task::JoinHandle<Result<Opened, tokio_postgres::Error>>),
    Open(Client),
    /// It could not be opened: searches read over the first connection alone.
    Failed,
}

pub struct PgStore {
    client: Client,
    /// How to connect again: a search's candidates are read over two connections.
    config: tokio_postgres::Config,
    /// The second connection a search reads over.
    second: Second,
    name: String,
    redacted: bool,
    /// The ASCII letters the database lowercases to something else (read once, when a search
    /// first needs them).
    lowered_otherwise: Option<Vec<char>>,
    /// The trigram index's most common trigrams, as the second connection read them when it
    /// opened.
    common: Option<CommonTrigrams>,
}

/// Trigrams among the most common elements of the `show_trgm` index in the server's
/// statistics of it (kept by `ANALYZE`), with the share of records holding each; empty when
/// it has no statistics.
type CommonTrigrams = HashMap<String, f64>;

/// PostgreSQL text holds no NUL character: NUL is stored as [`ESCAPE`] `0`, and [`ESCAPE`]
/// itself (a private-use character) doubled.
const ESCAPE: char = '\u{E000}';

fn to_pg(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\0', ESCAPE]) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\0' => {
                out.push(ESCAPE);
                out.push('0');
            }
            ESCAPE => {
                out.push(ESCAPE);
                out.push(ESCAPE);
            }
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

fn from_pg(text: String) -> String {
    if !text.contains(ESCAPE) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, c == ESCAPE) {
            (_, true) => match chars.next() {
                Some('0') => out.push('\0'),
                Some(other) => out.push(other),
                None => out.push(ESCAPE),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

fn opt_to_pg(text: &Option<String>) -> Option<String> {
    text.as_deref().map(|t| to_pg(t).into_owned())
}

impl PgStore {
    pub async fn open(
        conninfo: &str,
        name: &str,
        create: Option<bool>,
        to_search: bool,
    ) -> Result<PgStore, StoreError> {
        let db = |e: tokio_postgres::Error| StoreError::Database {
            store: name.to_string(),
            message: one_line(&e),
        };
        let config = with_passfile(conninfo).map_err(|message| StoreError::Url {
            url: name.to_string(),
            reason: message,
        })?;
        // A search's second connection starts while the first connects and reads `meta`:
        // its backend's start is then off the search's path.
        let mut second = if to_search {
            let config = config.clone();
            Second::Opening(tokio::spawn(async move { open_second(&config).await }))
        } else {
            Second::NotAsked
        };
        let mut common = None;
        let mut lowered_otherwise = None;
        let mut client = match (connect(&config).await, second) {
            (Ok(client), opening) => {
                second = opening;
                client
            }
            // A server that takes one more connection (its or the role's limit) may take
            // the second instead: a search then reads over that one alone.
            (Err(e), Second::Opening(opening)) => {
                second = Second::Failed;
                match opening.await {
                    Ok(Ok(opened)) => {
                        common = Some(opened.common);
                        lowered_otherwise = Some(opened.lowered_otherwise);
                        opened.client
                    }
                    // Both refused: a server counts the connections starting with it, so
                    // two at once may each see the other over a limit that one alone is not.
                    _ => match connect(&config).await {
                        Ok(client) => client,
                        Err(_) => return Err(db(e)),
                    },
                }
            }
            (Err(e), _) => return Err(db(e)),
        };
        // A store already at this build's schema is the common case: one round trip reads
        // that, and no migration transaction (nor its lock) is taken.
        let mut stored = read_meta(&client).await.map_err(db)?;
        if let Some(redact) = create
            && stored.version.is_none_or(|v| v < SCHEMA_VERSION)
        {
            migrate(&mut client, redact).await.map_err(db)?;
            stored = read_meta(&client).await.map_err(db)?;
        }
        match stored.version {
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
        let redacted = stored.redacted != Some(0);
        Ok(PgStore {
            client,
            config,
            second,
            name: name.to_string(),
            redacted,
            lowered_otherwise,
            common,
        })
    }

    fn db(&self) -> impl Fn(tokio_postgres::Error) -> StoreError + '_ {
        |e| StoreError::Database {
            store: self.name.clone(),
            message: one_line(&e),
        }
    }

    pub fn redacted(&self) -> bool {
        self.redacted
    }

    /// What the store holds of each of `hosts`, in their order: one query, one round trip
    /// (typed parameters: parse, bind and execute go together).
    pub async fn priors(&mut self, hosts: &[String]) -> Result<Vec<Prior>, StoreError> {
        let rows = self
            .client
            .query_typed(
                "SELECT host, harness, session, cursor, size, mtime, last_ts, settled, \
                 generation, next_seq, ordinal, deleted FROM sessions WHERE host = ANY($1)",
                &[(&hosts, Type::TEXT_ARRAY)],
            )
            .await
            .map_err(self.db())?;
        let mut priors: Vec<Prior> = vec![Prior::new(); hosts.len()];
        let at: std::collections::HashMap<&str, usize> = hosts
            .iter()
            .enumerate()
            .map(|(k, h)| (h.as_str(), k))
            .collect();
        for row in rows {
            let Some(&k) = at.get(row.get::<_, &str>(0)) else {
                continue;
            };
            let key = format!("{}/{}", row.get::<_, &str>(1), row.get::<_, &str>(2));
            priors[k].insert(
                key,
                PriorSession {
                    state: SessionState {
                        cursor: row.get(3),
                        size: row.get::<_, i64>(4) as u64,
                        mtime: row.get(5),
                        last_ts: row.get(6),
                        settled: row.get(7),
                    },
                    generation: row.get(8),
                    next_seq: row.get(9),
                    ordinal: row.get(10),
                    deleted: row.get(11),
                },
            );
        }
        // A host named twice is read once and given to each naming.
        for (k, host) in hosts.iter().enumerate() {
            if at[host.as_str()] != k {
                priors[k] = priors[at[host.as_str()]].clone();
            }
        }
        Ok(priors)
    }

    pub async fn apply(&mut self, host: &str, write: &HostWrite) -> Result<usize, StoreError> {
        let name = self.name.clone();
        let db = move |e: tokio_postgres::Error| StoreError::Database {
            store: name.clone(),
            message: one_line(&e),
        };
        let now = jiff::Timestamp::now().to_string();
        let add_host = "INSERT INTO hosts (host, first_sync, last_sync) VALUES ($1, $2, $2) \
                        ON CONFLICT (host) DO NOTHING";
        if write.is_empty() {
            // Nothing new: one statement of its own (no transaction around it, one round
            // trip), which writes nothing once the host is known.
            self.client
                .query_typed(add_host, &[(&host, Type::TEXT), (&now, Type::TEXT)])
                .await
                .map_err(&db)?;
            return Ok(0);
        }
        let tx = self.client.transaction().await.map_err(&db)?;
        tx.execute(add_host, &[&host, &now]).await.map_err(&db)?;
        tx.execute(
            "UPDATE hosts SET last_sync = $2 WHERE host = $1",
            &[&host, &now],
        )
        .await
        .map_err(&db)?;
        let insert = tx
            .prepare(
                "INSERT INTO records (host, harness, session, generation, record_id, seq, kind, \
                 thinking, ts, agent, sidechain, text, call_id, tool_name, input, is_error, \
                 terminal_source, terminal_generation, model, usage, search, by_user) \
                 SELECT $1, $2, $3, $4, * FROM unnest($5::text[], $6::bigint[], $7::text[], \
                 $8::bool[], $9::text[], $10::text[], $11::bool[], $12::text[], $13::text[], \
                 $14::text[], $15::text[], $16::bool[], $17::text[], $18::bigint[], \
                 $19::text[], $20::text[], $21::text[], $22::bool[]) \
                 ON CONFLICT DO NOTHING RETURNING seq",
            )
            .await
            .map_err(&db)?;
        let upsert = tx
            .prepare(
                "INSERT INTO sessions AS s (host, harness, session, agent, root, rel, path, size, \
                 mtime, title, cwd, model, first_ts, last_ts, records, input_tokens, \
                 output_tokens, cursor, settled, generation, next_seq, ordinal, deleted, \
                 writer_version) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
                 $17, $18, $19, $20, $21, $22, false, $23) \
                 ON CONFLICT (host, harness, session) DO UPDATE SET agent = excluded.agent, \
                 root = excluded.root, rel = excluded.rel, path = excluded.path, \
                 size = excluded.size, mtime = excluded.mtime, \
                 title = coalesce(excluded.title, s.title), \
                 cwd = coalesce(excluded.cwd, s.cwd), \
                 model = coalesce(excluded.model, CASE WHEN s.generation = \
                 excluded.generation THEN s.model END), \
                 first_ts = CASE WHEN s.generation = excluded.generation THEN \
                 coalesce(s.first_ts, excluded.first_ts) ELSE excluded.first_ts END, \
                 last_ts = excluded.last_ts, \
                 records = excluded.records + CASE WHEN s.generation = excluded.generation \
                 THEN s.records ELSE 0 END, \
                 input_tokens = excluded.input_tokens + CASE WHEN s.generation = \
                 excluded.generation THEN s.input_tokens ELSE 0 END, \
                 output_tokens = excluded.output_tokens + CASE WHEN s.generation = \
                 excluded.generation THEN s.output_tokens ELSE 0 END, \
                 cursor = excluded.cursor, settled = excluded.settled, \
                 generation = excluded.generation, next_seq = excluded.next_seq, \
                 ordinal = excluded.ordinal, deleted = false, \
                 writer_version = coalesce(excluded.writer_version, s.writer_version)",
            )
            .await
            .map_err(&db)?;
        let mut added = 0;
        for s in &write.sessions {
            let harness = s.session.harness().name();
            let id = s.session.id.as_str();
            if s.reset {
                tx.execute(
                    "UPDATE records SET superseded = true WHERE host = $1 AND harness = $2 AND \
                     session = $3 AND generation < $4 AND NOT superseded",
                    &[&host, &harness, &id, &s.generation],
                )
                .await
                .map_err(&db)?;
            }
            let (mut count, mut input_tokens, mut output_tokens) = (0i64, 0i64, 0i64);
            let mut first_ts = None;
            let mut model = None;
            for (chunk_index, chunk) in s.records.chunks(ROWS_PER_INSERT).enumerate() {
                let first_seq = s.start_seq + (chunk_index * ROWS_PER_INSERT) as i64;
                let rows: Vec<RecordRow> = chunk.iter().map(RecordRow::of).collect();
                let column = |f: &dyn Fn(&RecordRow) -> Option<String>| -> Vec<Option<String>> {
                    rows.iter()
                        .map(|r| f(r).map(|t| to_pg(&t).into_owned()))
                        .collect()
                };
                let ids: Vec<String> = rows.iter().map(|r| to_pg(&r.record_id).into()).collect();
                let seqs: Vec<i64> = (0..rows.len() as i64).map(|k| first_seq + k).collect();
                let kinds: Vec<&str> = rows.iter().map(|r| r.kind).collect();
                let thinking: Vec<bool> = rows.iter().map(|r| r.thinking).collect();
                let ts = column(&|r| r.ts.clone());
                let agents = column(&|r| r.agent.clone());
                let sidechain: Vec<bool> = rows.iter().map(|r| r.sidechain).collect();
                let texts = column(&|r| r.text.clone());
                let call_ids = column(&|r| r.call_id.clone());
                let tool_names = column(&|r| r.tool_name.clone());
                let inputs = column(&|r| r.input.clone());
                let is_error: Vec<Option<bool>> = rows.iter().map(|r| r.is_error).collect();
                let sources: Vec<Option<&str>> = rows.iter().map(|r| r.terminal_source).collect();
                let generations: Vec<Option<i64>> =
                    rows.iter().map(|r| r.terminal_generation).collect();
                let models = column(&|r| r.model.clone());
                let usages = column(&|r| r.usage.clone());
                let by_user: Vec<bool> = rows.iter().map(|r| r.by_user).collect();
                let searches: Vec<String> = chunk
                    .iter()
                    .map(|r| to_pg(&search_text(r)).into_owned())
                    .collect();
                let inserted = tx
                    .query(
                        &insert,
                        &[
                            &host,
                            &harness,
                            &id,
                            &s.generation,
                            &ids,
                            &seqs,
                            &kinds,
                            &thinking,
                            &ts,
                            &agents,
                            &sidechain,
                            &texts,
                            &call_ids,
                            &tool_names,
                            &inputs,
                            &is_error,
                            &sources,
                            &generations,
                            &models,
                            &usages,
                            &searches,
                            &by_user,
                        ],
                    )
                    .await
                    .map_err(&db)?;
                // Rows another sync of the same host wrote first come back as nothing.
                let mut new: Vec<usize> = inserted
                    .iter()
                    .map(|row| (row.get::<_, i64>(0) - first_seq) as usize)
                    .collect();
                new.sort_unstable();
                for k in new {
                    let record = &chunk[k];
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
            }
            added += count as usize;
            let entry = &s.session.entry;
            let head = s.head.clone().unwrap_or_default();
            let next_seq = s.start_seq + s.records.len() as i64;
            tx.execute(
                &upsert,
                &[
                    &host,
                    &harness,
                    &id,
                    &opt_to_pg(&s.session.agent),
                    &&entry.root[..],
                    &entry.rel,
                    &to_pg(&clankie_model::display_path(&entry.full_path())).as_ref(),
                    &(entry.size as i64),
                    &entry.mtime,
                    &opt_to_pg(&head.title),
                    &opt_to_pg(&head.cwd),
                    &opt_to_pg(&model),
                    &first_ts,
                    &s.state.last_ts,
                    &count,
                    &input_tokens,
                    &output_tokens,
                    &s.state.cursor,
                    &s.state.settled,
                    &s.generation,
                    &next_seq,
                    &s.ordinal,
                    &opt_to_pg(&head.writer_version),
                ],
            )
            .await
            .map_err(&db)?;
        }
        for (harness, session) in &write.deleted {
            tx.execute(
                "UPDATE sessions SET deleted = true WHERE host = $1 AND harness = $2 AND \
                 session = $3",
                &[&host, harness, session],
            )
            .await
            .map_err(&db)?;
        }
        tx.commit().await.map_err(&db)?;
        Ok(added)
    }

    pub async fn hosts(&mut self) -> Result<Vec<String>, StoreError> {
        let rows = self
            .client
            .query_typed("SELECT host FROM hosts ORDER BY host", &[])
            .await
            .map_err(self.db())?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    pub async fn sessions(&mut self, host: &str) -> Result<Vec<StoredSession>, StoreError> {
        let rows = self
            .client
            .query_typed(
                "SELECT harness, session, agent, root, rel, size, mtime, title, cwd, generation, \
                 writer_version FROM sessions WHERE host = $1 AND NOT deleted ORDER BY ordinal",
                &[(&host, Type::TEXT)],
            )
            .await
            .map_err(self.db())?;
        let mut sessions = Vec::new();
        for row in rows {
            // A harness a newer build stored: left out.
            let Some(harness) = clankie_engine::harness::by_name(row.get(0)) else {
                continue;
            };
            sessions.push(StoredSession {
                session: SessionFile {
                    id: row.get(1),
                    agent: row.get::<_, Option<String>>(2).map(from_pg),
                    entry: FileEntry {
                        harness,
                        root: Arc::from(row.get::<_, Vec<u8>>(3)),
                        rel: row.get(4),
                        size: row.get::<_, i64>(5) as u64,
                        mtime: row.get(6),
                        inode: None,
                        ctime: None,
                    },
                },
                head: SessionHead {
                    title: row.get::<_, Option<String>>(7).map(from_pg),
                    cwd: row.get::<_, Option<String>>(8).map(from_pg),
                    writer_version: row.get::<_, Option<String>>(10).map(from_pg),
                },
                generation: row.get(9),
            });
        }
        Ok(sessions)
    }

    pub async fn records(
        &mut self,
        host: &str,
        session: &StoredSession,
    ) -> Result<Vec<Record>, StoreError> {
        let harness = session.session.harness();
        let rows = self
            .client
            .query(
                &format!(
                    "SELECT {RECORD_COLUMNS} FROM records WHERE host = $1 AND harness = $2 AND \
                     session = $3 AND generation = $4 ORDER BY seq"
                ),
                &[
                    &host,
                    &harness.name(),
                    &session.session.id,
                    &session.generation,
                ],
            )
            .await
            .map_err(self.db())?;
        Ok(rows
            .iter()
            .filter_map(|row| record_row(row, 0).into_record(harness, &session.session.id))
            .collect())
    }

    /// The ASCII letters the database lowercases to something else ([`lowered`]: asked once,
    /// then kept).
    async fn lowered_otherwise(&self) -> Result<Vec<char>, StoreError> {
        match &self.lowered_otherwise {
            Some(odd) => Ok(odd.clone()),
            None => lowered(&self.client).await.map_err(self.db()),
        }
    }

    /// The current records whose searched text holds every piece of one of `terms`'
    /// alternatives (compared ignoring case when the second value says so); `None` when only
    /// reading every record can say.
    ///
    /// Each alternative's trigrams ([`pg_trigrams`]) are looked up in the `show_trgm` index,
    /// which answers without reading any record's text; a record it gives may lack the
    /// pieces, and our regex then refuses it. An alternative with no trigram to look up makes
    /// the server scan every record with `LIKE`/`ILIKE` instead (or, ignoring case in a
    /// database that lowercases some ASCII letter otherwise, the caller scans).
    pub async fn candidates(
        &mut self,
        host: &str,
        sessions: &[StoredSession],
        terms: &(Vec<Vec<String>>, bool),
        mut each: impl FnMut(usize, i64, Record),
    ) -> Result<bool, StoreError> {
        let (alternatives, insensitive) = terms;
        // The second connection opens (or finishes opening, with the index's statistics and
        // the database's lowercasing); without it, the first asks the lowercasing.
        let opening = match std::mem::replace(&mut self.second, Second::Failed) {
            Second::NotAsked => {
                let config = self.config.clone();
                Some(tokio::spawn(async move { open_second(&config).await }))
            }
            Second::Opening(opening) => Some(opening),
            open => {
                self.second = open;
                None
            }
        };
        let opened = async {
            match opening {
                Some(opening) => Some(opening.await),
                None => None,
            }
        };
        match opened.await {
            Some(Ok(Ok(opened))) => {
                self.second = Second::Open(opened.client);
                self.common = Some(opened.common);
                self.lowered_otherwise = Some(opened.lowered_otherwise);
            }
            Some(_) => self.second = Second::Failed,
            None => {}
        }
        let odd = self.lowered_otherwise().await?;
        self.lowered_otherwise = Some(odd.clone());
        let common = match &self.common {
            Some(common) => common.clone(),
            None => {
                // No second connection read them: the literal's own, over the first.
                let every: Vec<String> = alternatives
                    .iter()
                    .filter_map(|pieces| pg_trigrams::trigrams(pieces, &[]))
                    .flatten()
                    .collect();
                common_trigrams(&self.client, Some(&every))
                    .await
                    .map_err(self.db())?
            }
        };
        let looked_up: Option<Vec<Vec<String>>> = alternatives
            .iter()
            .map(|pieces| {
                pg_trigrams::trigrams(pieces, &odd)
                    .map(|trigrams| super::rare::to_look_up(&trigrams, |t| common.get(t).copied()))
            })
            .collect();
        // Each parameter with its type: the queries go without a round trip to prepare them.
        let mut params: Vec<(Box<dyn ToSql + Sync + Send>, Type)> =
            vec![(Box::new(host.to_string()), Type::TEXT)];
        let mut clauses = Vec::new();
        match looked_up {
            Some(sets) => {
                for set in sets {
                    params.push((Box::new(set), Type::TEXT_ARRAY));
                    clauses.push(format!("show_trgm(search) @> ${}::text[]", params.len()));
                }
            }
            None if *insensitive && !odd.is_empty() => return Ok(false),
            None => {
                let like = if *insensitive { "ILIKE" } else { "LIKE" };
                for pieces in alternatives {
                    let mut all = Vec::new();
                    for piece in pieces {
                        params.push((
                            Box::new(format!("%{}%", like_escape(&to_pg(piece)))),
                            Type::TEXT,
                        ));
                        all.push(format!("search {like} ${}", params.len()));
                    }
                    clauses.push(format!("({})", all.join(" AND ")));
                }
            }
        }
        let sql = format!(
            "SELECT harness, session, {RECORD_COLUMNS} FROM records WHERE host = $1 AND NOT \
             superseded AND ({})",
            clauses.join(" OR ")
        );
        let params = || {
            params
                .iter()
                .map(|(p, ty)| (p.as_ref() as &(dyn ToSql + Sync), ty.clone()))
        };
        let at = super::session_places(sessions);
        // Each row is made a record and handed on as it arrives, while the server still
        // sends: nothing holds every candidate's text at once.
        let mut hand_on = |row: Row| {
            let harness: &str = row.get(0);
            let session: &str = row.get(1);
            let Some(&k) = at.get(&(harness, session)) else {
                return;
            };
            let stored = &sessions[k];
            let seq: i64 = row.get(2 + SEQ_COLUMN);
            if let Some(record) =
                record_row(&row, 2).into_record(stored.session.harness(), &stored.session.id)
            {
                each(k, seq, record);
            }
        };
        // Reading the candidates' text back (from TOAST, decompressed) is most of a search's
        // time and one server process's work: two connections read half each, their rows
        // taken as they come from either; without a second connection the first reads both
        // halves.
        let (even_seqs, odd_seqs) = (
            format!("{sql} AND seq % 2 = 0"),
            format!("{sql} AND seq % 2 = 1"),
        );
        let name = self.name.clone();
        let db = |e: tokio_postgres::Error| StoreError::Database {
            store: name.clone(),
            message: one_line(&e),
        };
        match &self.second {
            Second::Open(second) => {
                let (first_half, second_half) = tokio::try_join!(
                    self.client.query_typed_raw(&even_seqs, params()),
                    second.query_typed_raw(&odd_seqs, params())
                )
                .map_err(db)?;
                let mut rows =
                    futures_util::stream::select(Box::pin(first_half), Box::pin(second_half));
                while let Some(row) = rows.next().await {
                    hand_on(row.map_err(db)?);
                }
            }
            _ => {
                // No second connection: the first reads both halves.
                for half in [&even_seqs, &odd_seqs] {
                    let mut rows = Box::pin(
                        self.client
                            .query_typed_raw(half, params())
                            .await
                            .map_err(db)?,
                    );
                    while let Some(row) = rows.next().await {
                        hand_on(row.map_err(db)?);
                    }
                }
            }
        }
        Ok(true)
    }
}

/// `%`, `_` and `\` taken literally by `LIKE`.
fn like_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The columns [`record_row`] reads, in order.
const RECORD_COLUMNS: &str = "record_id, kind, thinking, ts, agent, sidechain, text, call_id, \
                              tool_name, input, is_error, terminal_source, terminal_generation, \
                              model, usage, seq, by_user";
/// Where `seq` is among [`RECORD_COLUMNS`].
const SEQ_COLUMN: usize = 15;

fn record_row(row: &Row, at: usize) -> RecordRow {
    let text = |i: usize| row.get::<_, Option<String>>(at + i).map(from_pg);
    RecordRow {
        record_id: from_pg(row.get(at)),
        kind: kind_name(row.get(at + 1)),
        thinking: row.get(at + 2),
        ts: text(3),
        agent: text(4),
        sidechain: row.get(at + 5),
        text: text(6),
        call_id: text(7),
        tool_name: text(8),
        input: text(9),
        is_error: row.get(at + 10),
        terminal_source: row.get::<_, Option<&str>>(at + 11).map(source_name),
        terminal_generation: row.get(at + 12),
        model: text(13),
        usage: text(14),
        by_user: row.get(at + 16),
    }
}

/// What `meta` says of the store: nothing when it has no `meta` table.
#[derive(Debug, Default)]
struct Meta {
    version: Option<i64>,
    redacted: Option<i64>,
}

/// The store's `meta`, in one round trip.
async fn read_meta(client: &Client) -> Result<Meta, tokio_postgres::Error> {
    let messages = match client
        .simple_query("SELECT key, value FROM meta WHERE key IN ('schema_version', 'redacted')")
        .await
    {
        Ok(messages) => messages,
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) => {
            return Ok(Meta::default());
        }
        Err(e) => return Err(e),
    };
    let mut meta = Meta::default();
    for message in &messages {
        if let tokio_postgres::SimpleQueryMessage::Row(row) = message {
            let value = row.get(1).and_then(|v| v.parse().ok());
            match row.get(0) {
                Some("schema_version") => meta.version = value,
                Some("redacted") => meta.redacted = value,
                _ => {}
            }
        }
    }
    Ok(meta)
}

/// A connection to the database, its messages handled on a task of their own (which ends when
/// the client is dropped; its error is met again by the next query).
/// A search's second connection, and what it read as it opened.
struct Opened {
    client: Client,
    common: CommonTrigrams,
    /// The ASCII letters the database lowercases to something else.
    lowered_otherwise: Vec<char>,
}

/// The second connection of a search, and the index's most common trigrams and the
/// database's lowercasing read over it (in one round trip) while the first connection reads
/// the store's metadata and sessions: neither is needed before the candidates' query.
async fn open_second(config: &tokio_postgres::Config) -> Result<Opened, tokio_postgres::Error> {
    let client = connect(config).await?;
    let (common, lowered) = tokio::join!(common_trigrams(&client, None), lowered(&client));
    Ok(Opened {
        common: common.unwrap_or_default(),
        lowered_otherwise: lowered?,
        client,
    })
}

/// The ASCII letters `lower()` (and so `show_trgm`) gives as something other than their
/// ASCII lowercase in this database (a Turkish locale's `I`): none in most.
async fn lowered(client: &Client) -> Result<Vec<char>, tokio_postgres::Error> {
    let rows = client
        .query_typed(
            "SELECT lower($1::text)",
            &[(&pg_trigrams::ASCII_LETTERS, Type::TEXT)],
        )
        .await?;
    Ok(pg_trigrams::letters_lowered_otherwise(
        rows.first().map_or("", |r| r.get(0)),
    ))
}

/// The most common trigrams of the `show_trgm` index: those of `among`, or all of them.
async fn common_trigrams(
    client: &Client,
    among: Option<&[String]>,
) -> Result<CommonTrigrams, tokio_postgres::Error> {
    let rows = client
        .query_typed(
            "SELECT e.trigram, e.share FROM pg_stats s, unnest(s.most_common_elems::text::text[], \
             s.most_common_elem_freqs) AS e(trigram, share) WHERE s.schemaname = current_schema() \
             AND s.tablename = 'records_trigrams' AND e.trigram IS NOT NULL AND ($1::text[] IS \
             NULL OR e.trigram = ANY($1))",
            &[(&among, Type::TEXT_ARRAY)],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|row| (row.get::<_, String>(0), f64::from(row.get::<_, f32>(1))))
        .collect())
}

async fn connect(config: &tokio_postgres::Config) -> Result<Client, tokio_postgres::Error> {
    let (client, connection) = config.connect(NoTls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// Takes the schema to [`SCHEMA_VERSION`] in one transaction under the migration lock (a
/// concurrent first sync waits, then finds the work done), recording `redact` in a new store.
async fn migrate(client: &mut Client, redact: bool) -> Result<(), tokio_postgres::Error> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS meta (key text PRIMARY KEY, value text NOT NULL)")
        .await?;
    let version = tx
        .query_opt("SELECT value FROM meta WHERE key = 'schema_version'", &[])
        .await?
        .and_then(|r| r.get::<_, String>(0).parse::<i64>().ok())
        .unwrap_or(0);
    if version < SCHEMA_VERSION {
        for migration in &MIGRATIONS[version as usize..] {
            tx.batch_execute(migration).await?;
        }
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', $1) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&SCHEMA_VERSION.to_string()],
        )
        .await?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('redacted', $1) ON CONFLICT (key) DO NOTHING",
            &[&i64::from(redact).to_string()],
        )
        .await?;
    }
    tx.commit().await
}

/// The error as one line (with the server's message when there is one).
fn one_line(e: &tokio_postgres::Error) -> String {
    let text = match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                text = format!("{text}: {s}");
                source = s.source();
            }
            text
        }
    };
    text.replace('\n', " ")
}

/// The connection settings of `conninfo`, with the password from the password file when it
/// gives none (libpq's `PGPASSFILE`, else `~/.pgpass`: `host:port:database:user:password`
/// lines, `*` for any).
fn with_passfile(conninfo: &str) -> Result<tokio_postgres::Config, String> {
    let mut config: tokio_postgres::Config = conninfo.parse().map_err(|e| format!("{e}"))?;
    if config.get_password().is_some() {
        return Ok(config);
    }
    if config.get_user().is_none()
        && let Ok(user) = std::env::var("PGUSER").or_else(|_| std::env::var("USER"))
    {
        config.user(user);
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".pgpass")));
    let Some(text) = file.and_then(|f| std::fs::read_to_string(f).ok()) else {
        return Ok(config);
    };
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        _ => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config.get_user().unwrap_or_default().to_string();
    let database = config.get_dbname().unwrap_or(&user).to_string();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let fields = split_pgpass(line);
        if let [h, p, d, u, password] = fields.as_slice()
            && [(h, &host), (p, &port), (d, &database), (u, &user)]
                .iter()
                .all(|(field, value)| field.as_str() == "*" || field == value)
        {
            config.password(password.as_str());
            break;
        }
    }
    Ok(config)
}

/// A `.pgpass` line's five fields (`\:` and `\\` escaped).
fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields.last_mut().expect("one field").push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().expect("one field").push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_characters_round_trip() {
        for text in [
            "plain",
            "a\0b",
            "\u{E000}",
            "x\u{E000}0\0y\u{E000}\u{E000}\0",
        ] {
            let stored = to_pg(text).into_owned();
            assert!(!stored.contains('\0'));
            assert_eq!(from_pg(stored), text);
        }
    }

    #[test]
    fn pgpass_fields_unescape() {
        assert_eq!(
            split_pgpass(r"db\:1:5432:*:me:pa\:ss:word"),
            ["db:1", "5432", "*", "me", "pa:ss:word"]
        );
    }
}
