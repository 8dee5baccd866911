//! The store: a database that `sync` copies every host's records into, and that `ls --store`,
//! `grep --store` and `mcp --store` answer from without contacting a host (docs/store.md).
//! I/O code of the root crate: it uses the driver's results ([`HostCheck`]) and the engine's
//! records, never the reverse. Each host's sync is one transaction that writes its new records
//! and advances its sessions' cursors together, so a sync killed at any point leaves the
//! store as the last committed run left it.

#[cfg(feature = "postgres")]
mod pg_trigrams;
#[cfg(feature = "postgres")]
pub mod postgres;
mod rare;
pub mod schema;
pub mod search;
pub mod sqlite;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use crate::check::{Change, HostCheck, HostState, SessionState};
use crate::driver::heads::SessionHead;
use clankie_engine::session::SessionFile;
use clankie_model::{Harness, Record, RecordBody, RecordKind, TerminalSource, TextKind, Usage};

/// Where a store is, as `--into`/`--store` name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// `sqlite:PATH`.
    Sqlite(PathBuf),
    /// `postgres://…` or `postgresql://…` (libpq's connection URI).
    Postgres(String),
}

impl StoreUrl {
    /// Parses `--into`/`--store`; `None` is the default SQLite store.
    pub fn parse(text: Option<&str>) -> Result<StoreUrl, StoreError> {
        let Some(text) = text else {
            return default_sqlite_path().map(StoreUrl::Sqlite);
        };
        if let Some(path) = text.strip_prefix("sqlite:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err(StoreError::Url {
                    url: text.to_string(),
                    reason: "sqlite: needs a path (sqlite:PATH)".into(),
                });
            }
            return Ok(StoreUrl::Sqlite(PathBuf::from(path)));
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Ok(StoreUrl::Postgres(text.to_string()));
        }
        Err(StoreError::Url {
            url: text.to_string(),
            reason: "expected sqlite:PATH, postgres://… or postgresql://…".into(),
        })
    }

    /// The store as its messages name it (a PostgreSQL URL without its password).
    pub fn display(&self) -> String {
        match self {
            StoreUrl::Sqlite(path) => format!("sqlite:{}", path.display()),
            StoreUrl::Postgres(url) => without_password(url),
        }
    }
}

/// `postgres://user:secret@host/db` as `postgres://user@host/db`.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info.split_once(':').map_or(user_info, |(u, _)| u);
            format!("{scheme}://{user}@{host}{tail}")
        }
        None => url.to_string(),
    }
}

/// `$XDG_DATA_HOME/clankie-read/store.db`, else `~/.local/share/clankie-read/store.db`.
fn default_sqlite_path() -> Result<PathBuf, StoreError> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty() && std::path::Path::new(d).is_absolute())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local/share"))
        })
        .ok_or(StoreError::NoDefault)?;
    Ok(data.join("clankie-read").join("store.db"))
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store `{url}`: {reason}")]
    Url { url: String, reason: String },
    #[error("no default store: neither XDG_DATA_HOME nor HOME is set (give --into sqlite:PATH)")]
    NoDefault,
    #[error(
        "{store} holds {held} records; this sync would add {wanted} ones: sync {hint} or into \
         another store"
    )]
    Redaction {
        store: String,
        held: &'static str,
        wanted: &'static str,
        hint: &'static str,
    },
    #[error("{store}: no store there yet (`clankie-read sync --into {store}` makes one)")]
    Missing { store: String },
    #[error(
        "{store}: schema version {found} is newer than this clankie-read's {known}: use a newer \
         clankie-read"
    )]
    Newer {
        store: String,
        found: i64,
        known: i64,
    },
    #[error("{store}: {message}")]
    Database { store: String, message: String },
}

impl StoreError {
    /// Whether the arguments are at fault (exit 2) rather than the database (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            StoreError::Url { .. } | StoreError::NoDefault | StoreError::Redaction { .. }
        )
    }
}

fn redaction_name(redacted: bool) -> &'static str {
    if redacted { "redacted" } else { "unredacted" }
}

/// Refuses a sync whose redaction is not the store's.
pub fn check_redaction(store: &str, held: bool, wanted: bool) -> Result<(), StoreError> {
    if held == wanted {
        return Ok(());
    }
    Err(StoreError::Redaction {
        store: store.to_string(),
        held: redaction_name(held),
        wanted: redaction_name(wanted),
        hint: if held {
            "without --no-redact"
        } else {
            "with --no-redact"
        },
    })
}

/// What the store holds of one session, as a sync starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriorSession {
    pub state: SessionState,
    /// How many times the session was replaced under its cursor (its records' generation).
    pub generation: i64,
    /// The position the next record of this generation takes.
    pub next_seq: i64,
    /// Its place in its host's last listing.
    pub ordinal: i64,
    pub deleted: bool,
}

/// Every session of one host the store holds, keyed as `check` keys them (`harness/session`).
pub type Prior = BTreeMap<String, PriorSession>;

/// `check`'s view of the sessions the store holds (deleted ones are forgotten, as `check`
/// forgets them).
pub fn host_state(prior: &Prior) -> HostState {
    HostState {
        sessions: prior
            .iter()
            .filter(|(_, p)| !p.deleted)
            .map(|(k, p)| (k.clone(), p.state.clone()))
            .collect(),
    }
}

/// One session's write of a sync.
#[derive(Debug)]
pub struct SessionWrite {
    pub session: SessionFile,
    pub state: SessionState,
    pub ordinal: i64,
    pub head: Option<SessionHead>,
    pub generation: i64,
    /// The `seq` of the first of `records`.
    pub start_seq: i64,
    /// Replaced under its cursor: the older generations' records are superseded.
    pub reset: bool,
    pub records: Vec<Record>,
}

/// What one host's sync writes, in one transaction.
#[derive(Debug, Default)]
pub struct HostWrite {
    pub sessions: Vec<SessionWrite>,
    /// `(harness, session)` of the sessions gone from the host.
    pub deleted: Vec<(String, String)>,
}

impl HostWrite {
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty() && self.deleted.is_empty()
    }

    /// The records it writes.
    pub fn record_count(&self) -> usize {
        self.sessions.iter().map(|s| s.records.len()).sum()
    }
}

/// The writes of one host's sync: every session whose records, cursor, file or place in the
/// listing changed; nothing for the others (a sync with nothing new writes nothing).
pub fn plan(
    prior: &Prior,
    mut checked: HostCheck,
    mut heads: BTreeMap<String, SessionHead>,
) -> HostWrite {
    let mut activity: BTreeMap<String, (Change, Vec<Record>)> = checked
        .activity
        .drain(..)
        .map(|a| {
            (
                format!("{}/{}", a.harness, a.session),
                (a.change, a.records),
            )
        })
        .collect();
    let mut write = HostWrite::default();
    for (ordinal, session) in checked.sessions.into_iter().enumerate() {
        let ordinal = ordinal as i64;
        let key = format!("{}/{}", session.harness(), session.id);
        // A session that could not be read and was never stored: nothing to write yet.
        let Some(state) = checked.state.sessions.remove(&key) else {
            continue;
        };
        let old = prior.get(&key);
        let (change, records) = activity.remove(&key).unwrap_or((Change::Grew, Vec::new()));
        let same = old.is_some_and(|old| {
            !old.deleted && old.state == state && old.ordinal == ordinal && records.is_empty()
        });
        if same && change != Change::Reset {
            continue;
        }
        let reset = change == Change::Reset;
        let mut records = records;
        if reset
            && records
                .first()
                .is_some_and(|r| r.kind() == RecordKind::Notice && r.id.starts_with("reset@"))
        {
            // The notice a restarted read begins with says what the new generation records;
            // `read --all` of the session has no such record.
            records.remove(0);
        }
        let (generation, next_seq) = old.map_or((0, 0), |o| (o.generation, o.next_seq));
        let (generation, start_seq) = if reset {
            (generation + 1, 0)
        } else {
            (generation, next_seq)
        };
        write.sessions.push(SessionWrite {
            head: heads.remove(&key),
            session,
            state,
            ordinal,
            generation,
            start_seq,
            reset,
            records,
        });
    }
    for (key, (change, _)) in activity {
        if change == Change::Deleted
            && prior.get(&key).is_some_and(|p| !p.deleted)
            && let Some((harness, session)) = key.split_once('/')
        {
            write
                .deleted
                .push((harness.to_string(), session.to_string()));
        }
    }
    write
}

/// A record as the store's columns hold it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RecordRow {
    pub record_id: String,
    pub kind: &'static str,
    pub thinking: bool,
    pub ts: Option<String>,
    pub agent: Option<String>,
    pub sidechain: bool,
    pub text: Option<String>,
    pub call_id: Option<String>,
    pub tool_name: Option<String>,
    pub input: Option<String>,
    pub is_error: Option<bool>,
    pub terminal_source: Option<&'static str>,
    pub terminal_generation: Option<i64>,
    pub model: Option<String>,
    pub usage: Option<String>,
    /// A tool call the user ran themselves (`"by": "user"`).
    pub by_user: bool,
}

impl RecordRow {
    pub fn of(record: &Record) -> RecordRow {
        let mut row = RecordRow {
            record_id: record.id.clone(),
            kind: record.kind().name(),
            ts: record.ts.clone(),
            agent: record.agent.clone(),
            sidechain: record.sidechain,
            model: record.model.clone(),
            usage: record.usage.as_deref().map(usage_json),
            ..RecordRow::default()
        };
        match &record.body {
            RecordBody::Text { kind, text } => {
                row.text = Some(text.to_string());
                row.thinking = *kind == TextKind::Thinking;
                if let TextKind::Terminal { source, generation } = kind {
                    row.terminal_source = Some(source.name());
                    row.terminal_generation = Some(i64::from(*generation));
                }
            }
            RecordBody::ToolCall {
                call_id,
                name,
                input,
                by_user,
            } => {
                row.call_id = Some(call_id.clone());
                row.tool_name = Some(name.clone());
                row.input = Some(input.to_string());
                row.by_user = *by_user;
            }
            RecordBody::ToolResult {
                call_id,
                output,
                is_error,
            } => {
                row.call_id = Some(call_id.clone());
                row.text = Some(output.to_string());
                row.is_error = Some(*is_error);
            }
        }
        row
    }

    /// The record again, of `harness`'s session `session`; `None` for a row this build does
    /// not know how to read.
    pub fn into_record(self, harness: Harness, session: &str) -> Option<Record> {
        let text = self.text.unwrap_or_default();
        let kind = RECORD_KINDS.into_iter().find(|k| k.name() == self.kind)?;
        let body = match kind {
            RecordKind::User => RecordBody::Text {
                kind: TextKind::User,
                text: text.into(),
            },
            RecordKind::Assistant => RecordBody::Text {
                kind: if self.thinking {
                    TextKind::Thinking
                } else {
                    TextKind::Assistant
                },
                text: text.into(),
            },
            RecordKind::Notice => RecordBody::Text {
                kind: TextKind::Notice,
                text: text.into(),
            },
            RecordKind::Terminal => RecordBody::Text {
                kind: TextKind::Terminal {
                    source: TERMINAL_SOURCES
                        .into_iter()
                        .find(|s| Some(s.name()) == self.terminal_source)?,
                    generation: u32::try_from(self.terminal_generation?).ok()?,
                },
                text: text.into(),
            },
            RecordKind::ToolCall => RecordBody::ToolCall {
                call_id: self.call_id.unwrap_or_default(),
                name: self.tool_name.unwrap_or_default(),
                input: serde_json::from_str(self.input.as_deref()?).ok()?,
                by_user: self.by_user,
            },
            RecordKind::ToolResult => RecordBody::ToolResult {
                call_id: self.call_id.unwrap_or_default(),
                output: text.into(),
                is_error: self.is_error.unwrap_or(false),
            },
        };
        Some(Record {
            id: self.record_id,
            harness,
            session: session.to_string(),
            ts: self.ts,
            agent: self.agent,
            sidechain: self.sidechain,
            body,
            model: self.model,
            usage: self.usage.as_deref().and_then(parse_usage),
        })
    }
}

/// Every record kind, for reading the `kind` column back.
const RECORD_KINDS: [RecordKind; 6] = [
    RecordKind::User,
    RecordKind::Assistant,
    RecordKind::ToolCall,
    RecordKind::ToolResult,
    RecordKind::Notice,
    RecordKind::Terminal,
];

/// A row's `kind` column as the `'static` name of a kind this build knows (else `unknown`,
/// which [`RecordRow::into_record`] leaves out).
pub fn kind_name(kind: &str) -> &'static str {
    RECORD_KINDS
        .into_iter()
        .map(RecordKind::name)
        .find(|name| *name == kind)
        .unwrap_or("unknown")
}

/// Every terminal recording's source.
const TERMINAL_SOURCES: [TerminalSource; 3] = [
    TerminalSource::Asciinema,
    TerminalSource::Script,
    TerminalSource::Raw,
];

/// A row's `terminal_source` column as the `'static` name of a source this build knows.
pub fn source_name(source: &str) -> &'static str {
    TERMINAL_SOURCES
        .into_iter()
        .map(TerminalSource::name)
        .find(|name| *name == source)
        .unwrap_or("unknown")
}

fn usage_json(usage: &Usage) -> String {
    let mut map = serde_json::Map::new();
    for (name, count) in [
        ("input", usage.input),
        ("output", usage.output),
        ("cache_read", usage.cache_read),
        ("cache_write", usage.cache_write),
        ("reasoning", usage.reasoning),
    ] {
        if let Some(count) = count {
            map.insert(name.into(), count.into());
        }
    }
    serde_json::Value::Object(map).to_string()
}

fn parse_usage(json: &str) -> Option<Box<Usage>> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let count = |name: &str| value.get(name).and_then(serde_json::Value::as_u64);
    Usage {
        input: count("input"),
        output: count("output"),
        cache_read: count("cache_read"),
        cache_write: count("cache_write"),
        reasoning: count("reasoning"),
    }
    .nonempty()
}

/// How the text index narrows a search: alternatives, each a set of pieces that must all be
/// in a record's searched text (compared ignoring case when the second value says so); `None`
/// when the pattern has no literal the index can look up (every record is then matched).
///
/// Every match contains one of the pattern's required literals. Ignoring case, the regex folds
/// `k` and `s` with the Kelvin sign and the long s, and non-ASCII letters by Unicode's rules,
/// which an index need not share: a literal is cut at those characters, and each piece of at
/// least three characters must be in the text (trigram indexes look up nothing shorter).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub fn index_terms(matcher: &clankie_engine::search::Matcher) -> Option<(Vec<Vec<String>>, bool)> {
    let literals = matcher.required_literals()?;
    let insensitive = matcher.is_case_insensitive();
    let mut alternatives = Vec::new();
    for literal in literals {
        let pieces: Vec<&str> = if insensitive {
            literal
                .split(|c: char| !c.is_ascii() || matches!(c, 'k' | 'K' | 's' | 'S'))
                .collect()
        } else {
            vec![literal.as_str()]
        };
        let terms: Vec<String> = pieces
            .into_iter()
            .filter(|p| p.chars().count() >= 3)
            .map(str::to_string)
            .collect();
        if terms.is_empty() {
            return None;
        }
        alternatives.push(terms);
    }
    (!alternatives.is_empty()).then_some((alternatives, insensitive))
}

/// [`index_terms`] as an FTS5 query over the trigram index (which folds case, so an exact
/// literal is still found, with others the regex then refuses).
pub fn fts_query(matcher: &clankie_engine::search::Matcher) -> Option<String> {
    fts_query_with(matcher, |_| Ok::<_, std::convert::Infallible>(None))
        .unwrap_or_else(|e| match e {})
}

/// [`fts_query`], where `rare` may name, for an alternative's pieces, the few of their
/// trigrams to look up in place of the pieces whole (module `rare`).
pub fn fts_query_with<E>(
    matcher: &clankie_engine::search::Matcher,
    mut rare: impl FnMut(&[String]) -> Result<Option<Vec<String>>, E>,
) -> Result<Option<String>, E> {
    let Some((alternatives, _)) = index_terms(matcher) else {
        return Ok(None);
    };
    let mut query = Vec::new();
    for pieces in &alternatives {
        let terms = rare(pieces)?.unwrap_or_else(|| pieces.clone());
        let terms: Vec<String> = terms
            .iter()
            .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
            .collect();
        query.push(format!("({})", terms.join(" AND ")));
    }
    Ok(Some(query.join(" OR ")))
}

/// A session the store holds, for `ls --store` and `grep --store`.
#[derive(Debug, Clone)]
pub struct StoredSession {
    pub session: SessionFile,
    pub head: SessionHead,
    pub generation: i64,
}

/// One opened store.
pub enum Store {
    Sqlite(sqlite::SqliteStore),
    #[cfg(feature = "postgres")]
    Postgres(Box<postgres::PgStore>),
}

impl Store {
    /// Opens the store at `url`; `create` (the redaction a new store records) makes it when
    /// missing and migrates an older schema.
    pub async fn open(url: &StoreUrl, create: Option<bool>) -> Result<Store, StoreError> {
        Store::open_as(url, create, false).await
    }

    /// Opens the store at `url` for `grep --store` and the MCP server's searches: a
    /// PostgreSQL store opens the search's second connection with the first.
    pub async fn open_to_search(url: &StoreUrl) -> Result<Store, StoreError> {
        Store::open_as(url, None, true).await
    }

    async fn open_as(
        url: &StoreUrl,
        create: Option<bool>,
        #[cfg_attr(not(feature = "postgres"), allow(unused_variables))] to_search: bool,
    ) -> Result<Store, StoreError> {
        match url {
            StoreUrl::Sqlite(path) => Ok(Store::Sqlite(sqlite::SqliteStore::open(
                path,
                &url.display(),
                create,
            )?)),
            #[cfg(feature = "postgres")]
            StoreUrl::Postgres(conninfo) => Ok(Store::Postgres(Box::new(
                postgres::PgStore::open(conninfo, &url.display(), create, to_search).await?,
            ))),
            #[cfg(not(feature = "postgres"))]
            StoreUrl::Postgres(_) => Err(StoreError::Url {
                url: url.display(),
                reason: "this build has no PostgreSQL support (built without the `postgres` \
                         feature)"
                    .into(),
            }),
        }
    }

    /// Whether the store holds redacted records.
    pub fn redacted(&self) -> bool {
        match self {
            Store::Sqlite(s) => s.redacted(),
            #[cfg(feature = "postgres")]
            Store::Postgres(s) => s.redacted(),
        }
    }

    /// What the store holds of each of `hosts`, in their order.
    pub async fn priors(&mut self, hosts: &[String]) -> Result<Vec<Prior>, StoreError> {
        match self {
            Store::Sqlite(s) => hosts.iter().map(|host| s.prior(host)).collect(),
            #[cfg(feature = "postgres")]
            Store::Postgres(s) => s.priors(hosts).await,
        }
    }

    /// Writes one host's sync in one transaction; returns the records actually added.
    pub async fn apply(&mut self, host: &str, write: &HostWrite) -> Result<usize, StoreError> {
        match self {
            Store::Sqlite(s) => s.apply(host, write),
            #[cfg(feature = "postgres")]
            Store::Postgres(s) => s.apply(host, write).await,
        }
    }

    /// The hosts the store holds, by name.
    pub async fn hosts(&mut self) -> Result<Vec<String>, StoreError> {
        match self {
            Store::Sqlite(s) => s.hosts(),
            #[cfg(feature = "postgres")]
            Store::Postgres(s) => s.hosts().await,
        }
    }

    /// A host's sessions (not deleted), in its last listing's order.
    pub async fn sessions(&mut self, host: &str) -> Result<Vec<StoredSession>, StoreError> {
        match self {
            Store::Sqlite(s) => s.sessions(host),
            #[cfg(feature = "postgres")]
            Store::Postgres(s) => s.sessions(host).await,
        }
    }

    /// The current records of one session, in order.
    pub async fn records(
        &mut self,
        host: &str,
        session: &StoredSession,
    ) -> Result<Vec<Record>, StoreError> {
        match self {
            Store::Sqlite(s) => s.records(host, session),
            #[cfg(feature = "postgres")]
            Store::Postgres(s) => s.records(host, session).await,
        }
    }

    /// Hands `each` the current records of `host` the index finds for `matcher`, one at a
    /// time as they are read, in no set order: `(index into sessions, the record's place in
    /// its session, record)`. A caller keeps what it needs, so a search holds its matches,
    /// never every candidate's text. `false` (nothing handed): the index has nothing to look
    /// up for `matcher`.
    pub async fn candidates(
        &mut self,
        host: &str,
        sessions: &[StoredSession],
        matcher: &clankie_engine::search::Matcher,
        each: impl FnMut(usize, i64, Record),
    ) -> Result<bool, StoreError> {
        match self {
            Store::Sqlite(s) => {
                let Some(query) = fts_query_with(matcher, |pieces| s.rare_trigrams(pieces))? else {
                    return Ok(false);
                };
                s.candidates(host, sessions, &query, each)?;
                Ok(true)
            }
            #[cfg(feature = "postgres")]
            Store::Postgres(s) => {
                let Some(terms) = index_terms(matcher) else {
                    return Ok(false);
                };
                s.candidates(host, sessions, &terms, each).await
            }
        }
    }
}

/// Where each session of `sessions` is, by harness name and session id.
fn session_places(sessions: &[StoredSession]) -> HashMap<(&str, &str), usize> {
    sessions
        .iter()
        .enumerate()
        .map(|(k, s)| ((s.session.harness().name(), s.session.id.as_str()), k))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clankie_engine::search::{Case, Matcher, PatternOptions};

    fn fts(pattern: &str, fixed: bool, case: Case) -> Option<String> {
        fts_query(&Matcher::new(pattern, PatternOptions { fixed, case }).unwrap())
    }

    #[test]
    fn urls() {
        assert_eq!(
            StoreUrl::parse(Some("sqlite:/x/s.db")).unwrap(),
            StoreUrl::Sqlite("/x/s.db".into())
        );
        assert_eq!(
            StoreUrl::parse(Some("sqlite:rel.db")).unwrap(),
            StoreUrl::Sqlite("rel.db".into())
        );
        assert!(matches!(
            StoreUrl::parse(Some("postgresql://u@h/db")),
            Ok(StoreUrl::Postgres(_))
        ));
        for bad in ["sqlite:", "mysql://x", "store.db"] {
            let err = StoreUrl::parse(Some(bad)).unwrap_err();
            assert!(err.is_usage(), "{bad}");
        }
        assert_eq!(
            StoreUrl::Postgres("postgres://me:secret@db:5432/agents?sslmode=disable".into())
                .display(),
            "postgres://me@db:5432/agents?sslmode=disable"
        );
    }

    #[test]
    fn the_index_looks_up_only_what_every_match_holds() {
        // Exact: the literal whole; the index folds case, the regex decides.
        assert_eq!(
            fts("Deploy", false, Case::Smart).as_deref(),
            Some("(\"Deploy\")")
        );
        assert_eq!(
            fts("foo|barbaz", false, Case::Sensitive).as_deref(),
            Some("(\"foo\") OR (\"barbaz\")")
        );
        // Ignoring case: cut at k, s and non-ASCII letters (folded otherwise by the regex).
        assert_eq!(
            fts("deploys", false, Case::Insensitive).as_deref(),
            Some("(\"deploy\")")
        );
        assert_eq!(
            fts("make things", false, Case::Insensitive).as_deref(),
            Some("(\"e thing\")")
        );
        assert_eq!(fts("é", false, Case::Insensitive), None);
        // Nothing to look up: shorter than a trigram, or no literal at all.
        assert_eq!(fts("ab", true, Case::Sensitive), None);
        assert_eq!(fts(r"\w+\d", false, Case::Sensitive), None);
        assert_eq!(
            fts("say \"hi there\"", true, Case::Sensitive).as_deref(),
            Some("(\"say \"\"hi there\"\"\")")
        );
    }
}
