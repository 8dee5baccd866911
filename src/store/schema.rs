//! The store's schema version, and its SQL for SQLite (docs/store.md describes every table and
//! column; PostgreSQL's is in postgres.rs).
//! Versioned: `meta.schema_version` says which of [`SQLITE_MIGRATIONS`] have been applied;
//! each migration runs inside the one transaction that also bumps the version.

/// The schema version this build writes and reads (one number for both databases).
pub const SCHEMA_VERSION: i64 = 3;

/// The SQLite migrations, in order: entry `k` takes the schema from version `k` to `k + 1`.
/// Versions 2 and 3 change PostgreSQL's text index and storage only: nothing in SQLite.
pub const SQLITE_MIGRATIONS: &[&str] = &[SQLITE_V1, "", ""];

/// Version 1: hosts, sessions (with `check`'s cursor of each), records, and the trigram
/// full-text index over each record's searched text.
const SQLITE_V1: &str = "
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE hosts (
    host TEXT PRIMARY KEY,
    first_sync TEXT NOT NULL,
    last_sync TEXT NOT NULL
);
CREATE TABLE sessions (
    host TEXT NOT NULL,
    harness TEXT NOT NULL,
    session TEXT NOT NULL,
    agent TEXT,
    root BLOB NOT NULL,
    rel BLOB NOT NULL,
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime INTEGER NOT NULL,
    title TEXT,
    cwd TEXT,
    model TEXT,
    writer_version TEXT,
    first_ts TEXT,
    last_ts TEXT,
    records INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cursor TEXT NOT NULL,
    settled INTEGER NOT NULL,
    generation INTEGER NOT NULL DEFAULT 0,
    next_seq INTEGER NOT NULL DEFAULT 0,
    ordinal INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (host, harness, session)
);
CREATE TABLE records (
    host TEXT NOT NULL,
    harness TEXT NOT NULL,
    session TEXT NOT NULL,
    generation INTEGER NOT NULL,
    record_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    superseded INTEGER NOT NULL DEFAULT 0,
    kind TEXT NOT NULL,
    thinking INTEGER NOT NULL DEFAULT 0,
    ts TEXT,
    agent TEXT,
    sidechain INTEGER NOT NULL DEFAULT 0,
    text TEXT,
    call_id TEXT,
    tool_name TEXT,
    input TEXT,
    is_error INTEGER,
    terminal_source TEXT,
    terminal_generation INTEGER,
    model TEXT,
    usage TEXT,
    by_user INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (host, harness, session, generation, record_id)
);
CREATE INDEX records_in_order ON records (host, harness, session, generation, seq);
CREATE VIRTUAL TABLE records_text USING fts5 (
    text,
    content = '',
    tokenize = 'trigram'
);
";
