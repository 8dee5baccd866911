//! Harnesses: one module per agent harness, each holding everything about it — where its files
//! live (its [`Layout`], plain data a host reads), how a listed file becomes a session, how
//! its lines, document or database rows become records, and how the harness resumes a session.
//! [`REGISTRY`] lists them; adding a harness is a new module and one line there.
//!
//! Nothing outside a harness's module names it (a test in `tests/it/architecture.rs` holds
//! that): the rest of the engine, the hosts and the driver ask the registry through the
//! [`Harness`] tag a record, root or file carries.

mod claude;
mod codex;
mod gemini;
mod grok;
mod grokcli;
mod opencode;
mod pi;

use clankie_model::{FileEntry, Harness, Layout, Record};

use crate::SourceCtx;
use crate::database::{Database, QueryError, SessionRow};
use crate::lines::LineOutcome;
use crate::rows::RowRecords;
use crate::session::SessionFile;

/// Every harness, in the order they are shown.
static REGISTRY: &[&dyn Format] = &[
    &claude::Claude,
    &codex::Codex,
    &pi::Pi,
    &grok::Grok,
    &gemini::Gemini,
    &opencode::OpenCode,
    &grokcli::GrokCli,
];

/// How a session's source is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// JSON lines, read by byte ranges and paged by the line cursor.
    Lines,
    /// JSON lines in a zstd stream: fetched whole, decompressed, then read as lines.
    ZstdLines,
    /// One JSON document, fetched whole and paged over its records by the row cursor.
    Document,
    /// Rows of an SQLite database, copied and queried, paged by the row cursor.
    Database,
}

impl Source {
    /// Whether the source is paged over whole records (row cursors) rather than by bytes.
    pub fn is_rows(self) -> bool {
        matches!(self, Source::Document | Source::Database)
    }
}

/// Everything the engine knows about one harness. Methods a harness does not need keep their
/// defaults: no lines, no document, no database, no working directory.
pub trait Format: Sync {
    /// Where the harness's files live and how they are stored.
    fn layout(&self) -> &'static Layout;

    /// The session a listed file is, by the harness's own layout rule (never "the newest
    /// file"); `None` for a file that is not a transcript.
    fn session(&self, entry: &FileEntry) -> Option<SessionFile> {
        let _ = entry;
        None
    }

    /// How a session's file is read.
    fn source(&self, entry: &FileEntry) -> Source {
        let _ = entry;
        if self.layout().storage == clankie_model::Storage::Database {
            Source::Database
        } else {
            Source::Lines
        }
    }

    /// The records of one complete line (without its `\n`, CR and blank lines already
    /// handled) that starts at byte `offset`.
    fn parse_line(&self, ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
        let _ = (ctx, offset, line);
        LineOutcome::Malformed("this source is not read line by line".into())
    }

    /// The records of a whole-document session.
    fn parse_document(&self, ctx: &SourceCtx, bytes: &[u8]) -> Result<Vec<Record>, String> {
        let _ = (ctx, bytes);
        Err("this source is not a document".into())
    }

    /// The sessions of a database (its rows), queried on a private read-only copy.
    fn database_sessions(&self, db: &dyn Database) -> Result<Vec<SessionRow>, QueryError> {
        let _ = db;
        Ok(Vec::new())
    }

    /// The records of one session of a database.
    fn database_records(
        &self,
        db: &dyn Database,
        ctx: &SourceCtx,
    ) -> Result<RowRecords, QueryError> {
        let _ = (db, ctx);
        Ok(RowRecords::default())
    }

    /// The working directory a database session ran in, for `resume`.
    fn database_cwd(&self, db: &dyn Database, id: &str) -> Result<Option<String>, QueryError> {
        let _ = (db, id);
        Ok(None)
    }

    /// Which file holds a session's working directory, relative to the transcript's
    /// directory: the transcript itself (`None`), or a sidecar (`summary.json`).
    fn cwd_file(&self) -> Option<&'static str> {
        None
    }

    /// The working directory a session ran in, from the first bytes of the file
    /// [`Format::cwd_file`] names.
    fn session_cwd(&self, head: &[u8]) -> Option<String> {
        let _ = head;
        None
    }

    /// The id the harness's own resume takes when it differs from ours, from the first bytes
    /// of the transcript.
    fn native_id(&self, head: &[u8]) -> Option<String> {
        let _ = head;
        None
    }

    /// Whether the session id of this listed file is in its first line (from
    /// [`Format::native_id`]) rather than its name: the driver then reads the file's head
    /// while listing and [`adopt_native_ids`] renames the session.
    fn id_in_head(&self, entry: &FileEntry) -> bool {
        let _ = entry;
        false
    }

    /// Whether lines are upserts by message id, so a later line may repeat the ids of an
    /// earlier one: a `--since` read then replays the source before its cursor to learn which
    /// ids it already returned.
    fn upserts_by_id(&self) -> bool {
        false
    }

    /// Whether a whole document that did not parse is one still being written (a pending read,
    /// not a malformed source).
    fn document_incomplete(&self, bytes: &[u8]) -> bool {
        let _ = bytes;
        false
    }

    /// The harness's command that resumes session `id` (whose transcript is at `path`),
    /// without any `cd`.
    fn resume_command(&self, id: &str, path: &str) -> String;
}

/// Every harness, in display order.
pub fn all() -> impl Iterator<Item = Harness> {
    (0..REGISTRY.len()).map(tag)
}

fn tag(rank: usize) -> Harness {
    Harness::new(rank as u8, REGISTRY[rank].layout())
}

/// The harness users call `name`.
pub fn by_name(name: &str) -> Option<Harness> {
    all().find(|h| h.name() == name)
}

/// Comma-separated list of supported names, for error messages.
pub fn supported_names() -> String {
    all().map(Harness::name).collect::<Vec<_>>().join(", ")
}

/// What the engine knows about a harness.
pub fn format(harness: Harness) -> &'static dyn Format {
    let format = REGISTRY[harness.rank()];
    debug_assert_eq!(format.layout().name, harness.name());
    format
}

/// Parses one complete line (without its `\n`) starting at byte `offset` of the source.
pub fn parse_line(ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
    // A writer on Windows may end lines with CRLF.
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return LineOutcome::Records(Vec::new());
    }
    format(ctx.harness).parse_line(ctx, offset, line)
}

/// The sessions among a listing's files, sorted by harness and id.
pub fn sessions(files: &[FileEntry]) -> Vec<SessionFile> {
    let mut out: Vec<SessionFile> = files
        .iter()
        .filter_map(|entry| format(entry.harness).session(entry))
        .collect();
    out.sort_by(|a, b| (a.harness(), &a.id, &a.entry.rel).cmp(&(b.harness(), &b.id, &b.entry.rel)));
    out
}

/// Whether a listed session's id is in its file's first line ([`Format::id_in_head`]); the
/// driver reads that head and hands it to [`adopt_native_ids`].
pub fn id_in_head(session: &SessionFile) -> bool {
    session.agent.is_none() && format(session.harness()).id_in_head(&session.entry)
}

/// Gives each session whose id is in its head ([`id_in_head`]) the id its head holds, and
/// folds files that repeat an id into one session: the `.jsonl` before a legacy `.json` (a
/// resumed legacy session continues in `<name>.jsonl`), then the earliest name (the file the
/// session began in; a resume in a later minute writes a startup-only file with the same id).
/// `head` gives a session's first bytes, `None` when they could not be read (the file name
/// stays its id). The result is sorted like [`sessions`].
pub fn adopt_native_ids(
    sessions: Vec<SessionFile>,
    mut head: impl FnMut(&SessionFile) -> Option<Vec<u8>>,
) -> Vec<SessionFile> {
    let mut renamed: Vec<(bool, SessionFile)> = Vec::with_capacity(sessions.len());
    for mut session in sessions {
        let mut from_head = false;
        if id_in_head(&session)
            && let Some(id) = head(&session)
                .and_then(|bytes| native_id(session.harness(), &bytes))
                .filter(|id| crate::session::valid_id(id))
        {
            session.id = id;
            from_head = true;
        }
        renamed.push((from_head, session));
    }
    // Preference among files with one id: a `.jsonl`, then the earliest name.
    renamed.sort_by(|(_, a), (_, b)| {
        (
            a.harness(),
            &a.id,
            a.entry.rel.ends_with(b".json"),
            &a.entry.rel,
        )
            .cmp(&(
                b.harness(),
                &b.id,
                b.entry.rel.ends_with(b".json"),
                &b.entry.rel,
            ))
    });
    let mut out: Vec<SessionFile> = Vec::with_capacity(renamed.len());
    for (from_head, session) in renamed {
        let repeat = from_head
            && out
                .last()
                .is_some_and(|kept| kept.harness() == session.harness() && kept.id == session.id);
        if !repeat {
            out.push(session);
        }
    }
    out.sort_by(|a, b| (a.harness(), &a.id, &a.entry.rel).cmp(&(b.harness(), &b.id, &b.entry.rel)));
    out
}

/// Whether a session's lines are upserts by id ([`Format::upserts_by_id`]).
pub fn upserts_by_id(harness: Harness) -> bool {
    format(harness).upserts_by_id()
}

/// Whether a whole document that did not parse is still being written
/// ([`Format::document_incomplete`]).
pub fn document_incomplete(harness: Harness, bytes: &[u8]) -> bool {
    format(harness).document_incomplete(bytes)
}

/// The databases among a listing's files, whose sessions are their rows: files directly in a
/// database harness's root (the default `opencode.db`, or whatever `OPENCODE_DB` names) that
/// are not a WAL.
pub fn databases(files: &[FileEntry]) -> impl Iterator<Item = &FileEntry> {
    files
        .iter()
        .filter(|f| f.harness.is_sqlite() && !f.rel.contains(&b'/') && !f.rel.ends_with(b"-wal"))
}

/// How a session is read.
pub fn source(session: &SessionFile) -> Source {
    format(session.harness()).source(&session.entry)
}

/// Which file holds a session's working directory, relative to the transcript's directory:
/// the transcript itself (`None`), or a sidecar (Grok's `summary.json`).
pub fn cwd_source(harness: Harness) -> Option<&'static str> {
    format(harness).cwd_file()
}

/// The working directory a session ran in, from the first bytes of the file [`cwd_source`]
/// names; never empty, and never with a NUL or a newline.
pub fn session_cwd(harness: Harness, head: &[u8]) -> Option<String> {
    format(harness)
        .session_cwd(head)
        .filter(|cwd| !cwd.is_empty() && !cwd.contains(['\0', '\n']))
}

/// The id the harness's own resume takes when it differs from ours (file names that hold only
/// part of it).
pub fn native_id(harness: Harness, head: &[u8]) -> Option<String> {
    format(harness).native_id(head)
}

/// The command line that resumes a session: `cd <cwd> && <harness command>`, without the `cd`
/// when the directory is unknown. `id` is the id the harness takes; `path` the transcript's
/// absolute path (Pi resumes by path, which is exact).
pub fn resume_command(harness: Harness, id: &str, path: &str, cwd: Option<&str>) -> String {
    crate::resume::with_cwd(format(harness).resume_command(id, path), cwd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_tags_follow_the_registry() {
        let names: Vec<&str> = all().map(Harness::name).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        for (rank, harness) in all().enumerate() {
            assert_eq!(harness.rank(), rank);
            assert_eq!(by_name(harness.name()), Some(harness));
            assert_eq!(format(harness).layout().name, harness.name());
        }
        assert_eq!(by_name("nope"), None);
        assert!(supported_names().starts_with("claude, codex"));
    }

    fn named(name: &str) -> Harness {
        by_name(name).unwrap()
    }

    #[test]
    fn cwd_from_each_harness() {
        let claude = b"{\"type\":\"summary\"}\n{\"type\":\"user\",\"cwd\":\"/w/app\"}\n";
        assert_eq!(
            session_cwd(named("claude"), claude).as_deref(),
            Some("/w/app")
        );
        let codex = b"{\"type\":\"session_meta\",\"payload\":{\"id\":\"x\",\"cwd\":\"/w/c\"}}\n";
        assert_eq!(session_cwd(named("codex"), codex).as_deref(), Some("/w/c"));
        let pi = b"{\"type\":\"session\",\"id\":\"x\",\"cwd\":\"/w/p\"}\n";
        assert_eq!(session_cwd(named("pi"), pi).as_deref(), Some("/w/p"));
        let grok = br#"{"info":{"id":"x","cwd":"/w/g"}}"#;
        assert_eq!(session_cwd(named("grok"), grok).as_deref(), Some("/w/g"));
        assert_eq!(
            session_cwd(named("gemini"), b"/w/m\n").as_deref(),
            Some("/w/m")
        );
        // An incomplete first line is not trusted.
        assert_eq!(session_cwd(named("pi"), b"{\"cwd\":\"/w/p\""), None);
        let gemini = b"{\"sessionId\":\"9e000000-1111\",\"projectHash\":\"h\"}\n";
        assert_eq!(
            native_id(named("gemini"), gemini).as_deref(),
            Some("9e000000-1111")
        );
    }

    #[test]
    fn commands_are_quoted() {
        assert_eq!(
            resume_command(named("claude"), "abc", "/p", Some("/w/it's here")),
            r"cd '/w/it'\''s here' && claude --resume abc"
        );
        assert_eq!(
            resume_command(named("pi"), "x", "/h/.pi/a b.jsonl", None),
            "pi --session '/h/.pi/a b.jsonl'"
        );
        assert_eq!(
            resume_command(named("codex"), "019a", "/p", Some("/w")),
            "cd /w && codex resume 019a"
        );
    }
}
