//! Harnesses: one module per agent harness, each holding everything about it — where its files
//! live (its [`Layout`], plain data a host reads), how a listed file becomes a session, how
//! its lines, document or database rows become records, and how the harness resumes a session.
//! [`REGISTRY`] lists them; adding a harness is a new module and one line there.
//!
//! Nothing outside a harness's module names it (a test in `tests/it/architecture.rs` holds
//! that): the rest of the engine, the hosts and the driver ask the registry through the
//! [`Harness`] tag a record, root or file carries.

mod aider;
mod claude;
mod cline;
mod codex;
mod r#continue;
mod copilot;
mod droid;
mod gemini;
mod grok;
mod grokcli;
mod kilo;
mod kimi;
mod kimicode;
mod message_parts;
mod opencode;
mod openhands;
mod pi;
mod qwen;
pub(crate) mod terminal;

use clankie_model::{FileEntry, Harness, Layout, Record};

use crate::SourceCtx;
use crate::database::{Database, IndexRead, QueryError, SessionRow};
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
    &copilot::Copilot,
    &droid::Droid,
    &r#continue::Continue,
    &cline::Cline,
    &qwen::Qwen,
    &aider::Aider,
    &kilo::Kilo,
    &kimicode::KimiCode,
    &kimi::KimiCli,
    &openhands::OpenHands,
    &terminal::Recordings,
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
    /// JSON documents of a file tree, several per session ([`Format::tree_files`]): each
    /// fetched whole, assembled into the session's records, paged by the row cursor.
    Tree,
}

impl Source {
    /// Whether the source is paged over whole records (row cursors) rather than by bytes.
    pub fn is_rows(self) -> bool {
        matches!(self, Source::Document | Source::Database | Source::Tree)
    }
}

/// The tools a harness's transcripts call, as text output needs them to show a call as a
/// person would (a shell command as its command line, an edit as a diff): plain data that the
/// renderer asks the registry for ([`tool_vocabulary`]), so a harness that changes its tools
/// changes only its own module. Tool names are lowercase; a call's name is compared ignoring
/// case. Keys are tried in their order, the first present wins.
#[derive(Debug, PartialEq, Eq)]
pub struct ToolVocabulary {
    /// Tools that run their input as a shell command.
    pub shell_tools: &'static [&'static str],
    /// Input keys holding a shell tool's command line: a string, or an argv.
    pub command_keys: &'static [&'static str],
    /// Input keys holding the path of the file a tool edits or writes.
    pub path_keys: &'static [&'static str],
    /// Pairs of input keys holding a replaced snippet's old and new text.
    pub snippet_keys: &'static [(&'static str, &'static str)],
    /// Input keys of the flag saying a snippet replaces every occurrence.
    pub replace_all_keys: &'static [&'static str],
    /// Input keys holding a list of snippets replaced in one file, each with
    /// [`ToolVocabulary::snippet_keys`].
    pub edit_list_keys: &'static [&'static str],
    /// What the name of a tool that writes a file whole contains.
    pub write_tool_marks: &'static [&'static str],
    /// Input keys holding what a write tool writes.
    pub content_keys: &'static [&'static str],
    /// Tools whose input is a patch envelope, itself or under one of
    /// [`ToolVocabulary::patch_keys`].
    pub patch_tools: &'static [&'static str],
    /// Input keys holding the envelope when the input is an object.
    pub patch_keys: &'static [&'static str],
    /// The grammar of the patch envelopes of [`ToolVocabulary::patch_tools`].
    pub patch_envelope: &'static PatchEnvelope,
    /// The tools that read, search, list, fetch or start an agent, each with what it does.
    pub roles: &'static [(&'static str, ToolRole)],
    /// Input keys holding the file a read tool reads, besides [`ToolVocabulary::path_keys`].
    pub read_path_keys: &'static [&'static str],
    /// Input keys holding the first line a read tool reads.
    pub first_line_keys: &'static [&'static str],
    /// What the first line's number counts from: 1, or 0 for a tool that counts lines as an
    /// index.
    pub first_line_base: u64,
    /// Input keys holding how many lines a read tool reads.
    pub line_count_keys: &'static [&'static str],
    /// Input keys holding the last line a read tool reads.
    pub last_line_keys: &'static [&'static str],
    /// Input keys holding a search's pattern, a glob, or a web search's query.
    pub pattern_keys: &'static [&'static str],
    /// Input keys holding the directory (or file) a search, glob or listing looks in.
    pub dir_keys: &'static [&'static str],
    /// Input keys holding the file filter of a search (`*.rs`).
    pub file_filter_keys: &'static [&'static str],
    /// Input keys holding the short description of an agent's task.
    pub description_keys: &'static [&'static str],
    /// Input keys holding the prompt an agent is given.
    pub prompt_keys: &'static [&'static str],
    /// Input keys holding the kind of agent started.
    pub agent_type_keys: &'static [&'static str],
    /// Input keys holding a fetched URL.
    pub url_keys: &'static [&'static str],
}

/// What a tool that is neither a shell, an edit, a write nor a patch does, as text output
/// names it: `Read path (lines 40–120)`, `Grep "pattern" in path`, `Task: description`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolRole {
    /// Reads a file, or a window of its lines.
    Read,
    /// Searches files' content for a pattern.
    Search,
    /// Finds files by a glob pattern.
    Glob,
    /// Lists a directory.
    List,
    /// Starts an agent on a task.
    Agent,
    /// Fetches a URL.
    Fetch,
    /// Searches the web.
    WebSearch,
}

impl ToolVocabulary {
    /// A harness whose calls text output shows by their name and input only.
    pub const NONE: ToolVocabulary = ToolVocabulary {
        shell_tools: &[],
        command_keys: &[],
        path_keys: &[],
        snippet_keys: &[],
        replace_all_keys: &[],
        edit_list_keys: &[],
        write_tool_marks: &[],
        content_keys: &[],
        patch_tools: &[],
        patch_keys: &[],
        patch_envelope: &PatchEnvelope::NONE,
        roles: &[],
        read_path_keys: &[],
        first_line_keys: &[],
        first_line_base: 1,
        line_count_keys: &[],
        last_line_keys: &[],
        pattern_keys: &[],
        dir_keys: &[],
        file_filter_keys: &[],
        description_keys: &[],
        prompt_keys: &[],
        agent_type_keys: &[],
        url_keys: &[],
    };
}

/// The markers of a patch envelope: a diff whose files are introduced by marker lines instead
/// of `---`/`+++` headers. Each marker is the line's whole prefix; what follows it is a path.
#[derive(Debug, PartialEq, Eq)]
pub struct PatchEnvelope {
    /// What an envelope starts with (after blanks): an input that does not is something the
    /// source wrote in the patch's place (a recorder's placeholder).
    pub begin: &'static str,
    /// A file changed in place.
    pub update_file: &'static str,
    /// A file created.
    pub add_file: &'static str,
    /// A file removed.
    pub delete_file: &'static str,
    /// The new name of the file being updated.
    pub move_to: &'static str,
    /// Lines that frame the envelope and say nothing of its content.
    pub framing: &'static [&'static str],
}

impl PatchEnvelope {
    /// No envelope: a harness without patch tools.
    pub const NONE: PatchEnvelope = PatchEnvelope {
        begin: "",
        update_file: "",
        add_file: "",
        delete_file: "",
        move_to: "",
        framing: &[],
    };

    /// The `apply_patch` envelope, as the harnesses whose patch tool writes it define it.
    pub const APPLY_PATCH: PatchEnvelope = PatchEnvelope {
        begin: "*** Begin Patch",
        update_file: "*** Update File: ",
        add_file: "*** Add File: ",
        delete_file: "*** Delete File: ",
        move_to: "*** Move to: ",
        framing: &["*** Begin Patch", "*** End Patch", "*** End of File"],
    };
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
        match self.layout().storage {
            clankie_model::Storage::Database | clankie_model::Storage::DatabaseAndTree => {
                Source::Database
            }
            clankie_model::Storage::Files => Source::Lines,
            clankie_model::Storage::Tree => Source::Tree,
        }
    }

    /// Whether a listed file is a session whose id is written inside it rather than in its
    /// name: the listing reads its first [`NAMING_HEAD_BYTES`] and asks
    /// [`Format::session_from_head`].
    ///
    /// [`NAMING_HEAD_BYTES`]: clankie_model::limits::NAMING_HEAD_BYTES
    fn named_inside(&self, entry: &FileEntry) -> bool {
        let _ = entry;
        false
    }

    /// Whether a session named inside its file could be what a user typed, `id` (an id or a
    /// prefix of one): when it cannot, resolving it need not read the files' first bytes.
    fn may_be_named_inside(&self, id: &str) -> bool {
        let _ = id;
        true
    }

    /// The session a file [`Format::named_inside`] is, from its first bytes (possibly cut
    /// mid-line, or empty when they could not be read).
    fn session_from_head(&self, entry: &FileEntry, head: &[u8]) -> Option<SessionFile> {
        let _ = (entry, head);
        None
    }

    /// The sessions that are each several files of a listing's tree ([`Storage::DatabaseAndTree`],
    /// [`Storage::Tree`]), each as its main file with the size of all its files and the newest
    /// mtime among them. `files` are this harness's files of one listing.
    ///
    /// [`Storage::DatabaseAndTree`]: clankie_model::Storage::DatabaseAndTree
    /// [`Storage::Tree`]: clankie_model::Storage::Tree
    fn tree_sessions(&self, files: &[&FileEntry]) -> Vec<SessionFile> {
        let _ = files;
        Vec::new()
    }

    /// The files of a listing that make up tree session `id`, in the order
    /// [`Format::parse_tree`] takes them.
    fn tree_files<'f>(&self, files: &'f [FileEntry], id: &str) -> Vec<&'f FileEntry> {
        let _ = (files, id);
        Vec::new()
    }

    /// The records of a tree session from its files' bytes, as [`Format::tree_files`] named
    /// them (a file gone before it could be read is left out).
    fn parse_tree(&self, ctx: &SourceCtx, files: &[(&FileEntry, Vec<u8>)]) -> RowRecords {
        let _ = (ctx, files);
        RowRecords::default()
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

    /// The records of a whole-document session with what a page says besides them: whether
    /// the source ends in something not final yet, and a terminal's current screen.
    /// `terminal_size`: the columns and rows of a terminal recording whose header gives none.
    /// `newest`: only a tail page of that many records is wanted; a source may then keep its
    /// newest records only ([`RowRecords::older_omitted`]). `after`: the cursor of a
    /// `--since` page; a source may then go past the records up to it without holding them
    /// ([`RowRecords::skipped`]).
    fn parse_document_rows(
        &self,
        ctx: &SourceCtx,
        bytes: &[u8],
        terminal_size: Option<(usize, usize)>,
        newest: Option<usize>,
        after: Option<&crate::cursor::RowCursor>,
    ) -> Result<RowRecords, String> {
        let _ = (terminal_size, newest, after);
        Ok(RowRecords {
            records: self.parse_document(ctx, bytes)?,
            ..RowRecords::default()
        })
    }

    /// Whether the harness can resume a session (a terminal recording has nothing to resume).
    fn resumable(&self) -> bool {
        true
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

    /// The newest records of one session of a database, at least `limit` of them when it has
    /// as many, read from its newest rows only where the harness can ([`RowRecords::older_omitted`]
    /// says so); else all of them, as [`Format::database_records`].
    fn database_newest_records(
        &self,
        db: &dyn Database,
        ctx: &SourceCtx,
        limit: usize,
    ) -> Result<RowRecords, QueryError> {
        let _ = limit;
        self.database_records(db, ctx)
    }

    /// The first read [`Format::database_newest_records`] makes for the session `id` and
    /// `limit`, as its hint ([`Database::will_read`]), without running it: so that a query
    /// made before it (the resolution's listing of the sessions) fetches those pages in the
    /// same reads as its own ([`Database::will_read_after_scan`]). `None`: no such hint.
    fn database_newest_hint<'a>(&self, id: &'a str, limit: usize) -> Option<IndexRead<'a>> {
        let _ = (id, limit);
        None
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

    /// The working directory a session ran in when the transcript's place says it and its
    /// bytes do not: a history written into the directory it ran in (`root`, `rel` of the
    /// listed file).
    fn cwd_from_location(&self, root: &[u8], rel: &[u8]) -> Option<String> {
        let _ = (root, rel);
        None
    }

    /// The working directory a session ran in, from the first bytes of the file
    /// [`Format::cwd_file`] names.
    fn session_cwd(&self, head: &[u8]) -> Option<String> {
        let _ = head;
        None
    }

    /// The title the harness itself gave the session (a user's rename, a generated summary),
    /// from the first bytes of the transcript, where it records one there.
    fn native_title(&self, head: &[u8]) -> Option<String> {
        let _ = head;
        None
    }

    /// The title a database session's row holds.
    fn database_title(&self, db: &dyn Database, id: &str) -> Result<Option<String>, QueryError> {
        let _ = (db, id);
        Ok(None)
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

    /// The tools the harness's transcripts call, as text output shows them.
    fn tool_vocabulary(&self) -> &'static ToolVocabulary {
        &ToolVocabulary::NONE
    }

    /// The newest version of the harness's CLI this reader is tested against
    /// (`docs/harnesses.md`), where one is.
    fn tested(&self) -> Option<&'static Tested> {
        None
    }

    /// The version of the CLI that wrote a session, from the first bytes of its transcript
    /// (possibly cut mid-line), where the transcript records it.
    fn writer_version(&self, head: &[u8]) -> Option<String> {
        let _ = head;
        None
    }

    /// The harness's command that resumes session `id` (whose transcript is at `path`),
    /// without any `cd`.
    fn resume_command(&self, id: &str, path: &str) -> String;
}

/// The newest release of a harness's CLI this reader is tested against: data each harness
/// module holds, from `docs/harnesses.md`.
#[derive(Debug, PartialEq, Eq)]
pub struct Tested {
    /// The CLI's name as its makers write it (`Codex`).
    pub product: &'static str,
    /// Its version (`0.171.0`).
    pub version: &'static str,
}

/// The newest release of `harness`'s CLI this reader is tested against, where one is.
pub fn tested(harness: Harness) -> Option<&'static Tested> {
    format(harness).tested()
}

/// The version of the CLI that wrote a session, from its transcript's first bytes, where the
/// transcript records one.
pub fn writer_version(harness: Harness, head: &[u8]) -> Option<String> {
    format(harness).writer_version(head)
}

/// The one-line hint for a session written by a newer release of its CLI than any this reader
/// is tested against (`written by Codex 0.180.0, tested up to 0.171.0: …`); `None` when the
/// version is not newer, or cannot be compared.
pub fn untested_writer(harness: Harness, version: &str) -> Option<String> {
    let tested = tested(harness)?;
    let newer = numeric_version(version)? > numeric_version(tested.version)?;
    newer.then(|| {
        format!(
            "{} session written by {} {version}, tested up to {}: report what looks wrong",
            harness.name(),
            tested.product,
            tested.version
        )
    })
}

/// The numbers of a dotted version (`0.171.0`, `2.1.332-beta`: its leading digits each), for
/// comparing; `None` when it does not start with one.
fn numeric_version(version: &str) -> Option<Vec<u64>> {
    let parts: Vec<u64> = version
        .split('.')
        .map_while(|part| {
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect();
    (!parts.is_empty()).then_some(parts)
}

/// The string value of the first `"key":"…"` (or `"key": "…"`) in a transcript's first bytes,
/// when it looks like a version: what the harnesses that record their writer's version
/// share. Inside a JSON string every quote is escaped, so the pattern only meets real keys;
/// the first is the envelope's, written before any content.
pub(crate) fn version_field(head: &[u8], key: &str) -> Option<String> {
    let text = String::from_utf8_lossy(head);
    let needle = format!("\"{key}\":");
    let at = text.find(&needle)? + needle.len();
    let rest = text[at..].trim_start().strip_prefix('"')?;
    let value = &rest[..rest.find('"')?];
    let plausible = !value.is_empty()
        && value.len() <= 40
        && value.starts_with(|c: char| c.is_ascii_digit())
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
    plausible.then(|| value.to_string())
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

/// The sessions among a listing's files, sorted by harness and id: one file each, or several
/// files of a tree. Files whose session is named inside them ([`named_inside`]) are not among
/// them until their first bytes are read ([`session_from_head`]).
pub fn sessions(files: &[FileEntry]) -> Vec<SessionFile> {
    let mut out: Vec<SessionFile> = files
        .iter()
        .filter_map(|entry| format(entry.harness).session(entry))
        .collect();
    for harness in all().filter(|h| h.has_file_tree()) {
        let mine: Vec<&FileEntry> = files.iter().filter(|f| f.harness == harness).collect();
        out.extend(format(harness).tree_sessions(&mine));
    }
    out.sort_by(|a, b| (a.harness(), &a.id, &a.entry.rel).cmp(&(b.harness(), &b.id, &b.entry.rel)));
    out
}

/// The files of a listing whose session id is written inside them: each is read
/// ([`clankie_model::limits::NAMING_HEAD_BYTES`]) and given to [`session_from_head`].
pub fn named_inside(files: &[FileEntry]) -> impl Iterator<Item = &FileEntry> {
    files.iter().filter(|f| format(f.harness).named_inside(f))
}

/// Whether `file`, a file [`named_inside`], could be the session a user typed as `id`.
pub fn may_be_named_inside(file: &FileEntry, id: &str) -> bool {
    format(file.harness).may_be_named_inside(id)
}

/// The session a file [`named_inside`] lists is, from its first bytes.
pub fn session_from_head(entry: &FileEntry, head: &[u8]) -> Option<SessionFile> {
    format(entry.harness).session_from_head(entry, head)
}

/// The files of a listing that make up tree session `session`, in reading order.
pub fn tree_files<'f>(files: &'f [FileEntry], session: &SessionFile) -> Vec<&'f FileEntry> {
    format(session.harness()).tree_files(files, &session.id)
}

/// The records of a tree session from the bytes of the files [`tree_files`] named.
pub fn parse_tree(ctx: &SourceCtx, files: &[(&FileEntry, Vec<u8>)]) -> RowRecords {
    format(ctx.harness).parse_tree(ctx, files)
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

/// The records of a whole-document session, and what its page says besides them;
/// `terminal_size` is the size of a terminal recording whose header gives none; `newest`, the
/// size of the tail page wanted, if that is what is wanted; `after`, a `--since` page's cursor.
pub fn parse_document(
    ctx: &SourceCtx,
    bytes: &[u8],
    terminal_size: Option<(usize, usize)>,
    newest: Option<usize>,
    after: Option<&crate::cursor::RowCursor>,
) -> Result<RowRecords, String> {
    format(ctx.harness).parse_document_rows(ctx, bytes, terminal_size, newest, after)
}

/// The tools `harness`'s transcripts call ([`Format::tool_vocabulary`]).
pub fn tool_vocabulary(harness: Harness) -> &'static ToolVocabulary {
    format(harness).tool_vocabulary()
}

/// Whether sessions of `harness` can be resumed.
pub fn resumable(harness: Harness) -> bool {
    format(harness).resumable()
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

/// The working directory a session's place says it ran in ([`Format::cwd_from_location`]),
/// never empty, and never with a NUL or a newline.
pub fn cwd_from_location(session: &SessionFile) -> Option<String> {
    format(session.harness())
        .cwd_from_location(&session.entry.root, &session.entry.rel)
        .filter(|cwd| !cwd.is_empty() && !cwd.contains(['\0', '\n']))
}

/// A session's title for `ls`, from the first bytes of its line transcript: the harness's own
/// title where it records one there, else the text of the first user prompt among the
/// complete lines; on one line, at most [`TITLE_CHARS`] characters. `None` when neither is there.
pub fn session_title(ctx: &SourceCtx, head: &[u8]) -> Option<String> {
    if let Some(title) = format(ctx.harness)
        .native_title(head)
        .as_deref()
        .and_then(one_line)
    {
        return Some(title);
    }
    // The bytes after the last newline may be a cut-off line: only complete ones are parsed.
    let complete = &head[..head.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)];
    let mut offset = 0u64;
    let mut fallback = None;
    for line in complete.split_inclusive(|&b| b == b'\n') {
        let start = offset;
        offset += line.len() as u64;
        let Ok((records, _)) = parse_line(ctx, start, &line[..line.len() - 1]).into_parts() else {
            continue;
        };
        let prompt = records.iter().find_map(|r| match &r.body {
            clankie_model::RecordBody::Text {
                kind: clankie_model::TextKind::User,
                text,
            } if !r.sidechain && !injected(text) => one_line(text),
            _ => None,
        });
        if prompt.is_some() {
            return prompt;
        }
        // A session opened with a command (`/init`) has no prompt of its own in its first lines:
        // the command stands for it.
        if fallback.is_none() {
            fallback = records.iter().find_map(|r| match &r.body {
                clankie_model::RecordBody::Text {
                    kind: clankie_model::TextKind::Notice,
                    text,
                } => text.strip_prefix("local command: ").and_then(one_line),
                _ => None,
            });
        }
    }
    fallback
}

/// Whether a user message is text the harness sent in the user's name rather than a prompt
/// the user typed: a tagged block (`<environment_context>`, `<user_instructions>`,
/// `<system-reminder>`) or Codex's `# AGENTS.md instructions`. A title skips it.
fn injected(text: &str) -> bool {
    let text = text.trim_start();
    text.starts_with('<') || text.starts_with("# AGENTS.md instructions")
}

/// Titles are cut to this many characters (a terminal row shows fewer).
pub const TITLE_CHARS: usize = 200;

/// `text` on one line: whitespace runs (newlines too) become one space; cut to
/// [`TITLE_CHARS`]; `None` when nothing is left.
fn one_line(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let joined = words.join(" ");
    let cut: String = joined.chars().take(TITLE_CHARS).collect();
    (!cut.is_empty()).then_some(cut)
}

/// The title the harness itself gave a session, from the first bytes of its file, on one line.
pub fn native_title(harness: Harness, head: &[u8]) -> Option<String> {
    format(harness)
        .native_title(head)
        .as_deref()
        .and_then(one_line)
}

/// The title a database session's row holds, on one line.
pub fn database_title(
    harness: Harness,
    db: &dyn Database,
    id: &str,
) -> Result<Option<String>, QueryError> {
    Ok(format(harness)
        .database_title(db, id)?
        .as_deref()
        .and_then(one_line))
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

/// The command line `resume` prints for a session where it lives: the harness's command in the
/// session's directory, with the harness's variable for a root it would not look in by itself,
/// over `ssh -t` for a remote host ([`crate::resume::command_line`]).
pub fn resume_line(harness: Harness, id: &str, path: &str, place: &crate::resume::Place) -> String {
    crate::resume::command_line(format(harness).resume_command(id, path), place)
}

#[cfg(test)]
mod drift_tests;

/// Whether `bytes` are a JSON document cut short (the end of input came before the document
/// did, or it is empty): a whole-document transcript caught while it is rewritten in place
/// (truncated, then written). A document that is malformed or has trailing bytes is not cut short.
pub(super) fn json_cut_short(bytes: &[u8]) -> bool {
    match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
        Ok(_) => false,
        Err(e) => e.is_eof(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clankie_model::harness::ID_MARK;
    use std::sync::Arc;

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
    fn titles_are_the_harness_own_else_the_first_prompt() {
        let ctx = |h: &str| crate::test_support::ctx(named(h));
        let claude = concat!(
            r#"{"type":"summary","summary":"Fix  the\nparser","leafUuid":"l"}"#,
            "\n",
            r#"{"type":"user","uuid":"u1","message":{"role":"user","content":"first prompt"}}"#,
            "\n"
        );
        assert_eq!(
            session_title(&ctx("claude"), claude.as_bytes()).as_deref(),
            Some("Fix the parser")
        );
        // A user's rename wins over the generated title, wherever it is in the head.
        let renamed = format!(
            "{claude}{}\n{}\n",
            r#"{"type":"ai-title","sessionId":"s","aiTitle":"AI title"}"#,
            r#"{"type":"custom-title","sessionId":"s","customTitle":"Mine"}"#
        );
        assert_eq!(
            session_title(&ctx("claude"), renamed.as_bytes()).as_deref(),
            Some("Mine")
        );
        let untitled = concat!(
            r#"{"type":"file-history-snapshot","messageId":"m","snapshot":{}}"#,
            "\n",
            r#"{"type":"user","uuid":"u1","message":{"role":"user","content":"  make ls\n  nicer  "}}"#,
            "\n",
            r#"{"type":"user","uuid":"u2","message":{"role":"user","content":"second"}}"#
        );
        assert_eq!(
            session_title(&ctx("claude"), untitled.as_bytes()).as_deref(),
            Some("make ls nicer")
        );
        // The prompt's line is cut off by the head: no title rather than half a line.
        let cut = &untitled.as_bytes()[..untitled.find("nicer").unwrap()];
        assert_eq!(session_title(&ctx("claude"), cut), None);
        let codex = concat!(
            r#"{"timestamp":"2026-02-23T12:40:23.000Z","type":"session_meta","payload":{"id":"x","cwd":"/w"}}"#,
            "\n",
            r##"{"timestamp":"2026-02-23T12:40:24.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md instructions for /w\n\nbe brief"}]}}"##,
            "\n",
            r#"{"timestamp":"2026-02-23T12:40:24.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"}]}}"#,
            "\n",
            r#"{"timestamp":"2026-02-23T12:40:24.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"codex prompt"}]}}"#,
            "\n"
        );
        assert_eq!(
            session_title(&ctx("codex"), codex.as_bytes()).as_deref(),
            Some("codex prompt")
        );
        let long = format!(
            "{}\n",
            serde_json::json!({"type":"user","uuid":"u","message":{"role":"user","content":"x".repeat(500)}})
        );
        assert_eq!(
            session_title(&ctx("claude"), long.as_bytes()).map(|t| t.chars().count()),
            Some(TITLE_CHARS)
        );
    }

    #[test]
    fn writer_versions_and_the_hint_for_a_newer_one() {
        let claude = named("claude");
        let head = br#"{"type":"queue-operation"}
{"parentUuid":null,"type":"user","message":{"content":"\"version\":\"9.9.9\""},"version":"2.1.332","cwd":"/w"}"#;
        // Quoted inside a string is not the field; the envelope's is.
        assert_eq!(writer_version(claude, head).as_deref(), Some("2.1.332"));
        let codex = named("codex");
        let head = br#"{"type":"session_meta","payload":{"id":"x","cli_version": "0.180.0","instructions":"#;
        assert_eq!(writer_version(codex, head).as_deref(), Some("0.180.0"));
        assert_eq!(writer_version(codex, b"{\"cli_version\":\"$(rm)\"}"), None);
        assert_eq!(
            untested_writer(codex, "0.180.0").as_deref(),
            Some(
                "codex session written by Codex 0.180.0, tested up to 0.171.0: report what looks wrong"
            )
        );
        assert_eq!(untested_writer(codex, "0.171.0"), None);
        assert_eq!(untested_writer(codex, "0.99.12"), None);
        assert!(untested_writer(claude, "2.1.400").is_some());
        assert!(untested_writer(claude, "2.2.0-beta.1").is_some());
        assert_eq!(untested_writer(claude, "2.1.197"), None);
        assert_eq!(untested_writer(claude, "next"), None);
        // Every harness with a tested release names one that compares.
        for harness in all() {
            if let Some(t) = tested(harness) {
                assert!(numeric_version(t.version).is_some(), "{t:?}");
            }
        }
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

    /// Whether `path` matches `pattern`, a [`Layout::id_globs`] pattern with its mark replaced:
    /// `*` is any run of characters but `/`, as a shell glob's.
    fn glob_matches(pattern: &str, path: &str) -> bool {
        fn part(p: &[u8], s: &[u8]) -> bool {
            match p.split_first() {
                None => s.is_empty(),
                Some((b'*', rest)) => (0..=s.len()).any(|i| part(rest, &s[i..])),
                Some((c, rest)) => s.first() == Some(c) && part(rest, &s[1..]),
            }
        }
        let (ps, ss): (Vec<&str>, Vec<&str>) =
            (pattern.split('/').collect(), path.split('/').collect());
        ps.len() == ss.len()
            && ps
                .iter()
                .zip(&ss)
                .all(|(p, s)| part(p.as_bytes(), s.as_bytes()))
    }

    /// Every session as a harness names its files (not a subagent's) is found by the harness's
    /// id globs, with its whole id and with any prefix of it: a host that globs instead of
    /// walking finds every session a prefix could resolve to.
    #[test]
    fn id_globs_find_every_session_by_its_id_and_its_prefixes() {
        let cases: &[(&str, &str)] = &[
            (
                "claude",
                "projects/-home-me-app/0199a8f2-1c3d-7e4f-8a9b-0c1d2e3f4a5b.jsonl",
            ),
            (
                "codex",
                "sessions/2026/11/02/rollout-2026-11-02T10-00-00-0199a8f2-1c3d-7e4f-8a9b-0c1d2e3f4a5b.jsonl",
            ),
            (
                "codex",
                "sessions/2026/11/02/rollout-2026-11-02T10-00-00-0199a8f2-1c3d-7e4f-8a9b-0c1d2e3f4a5b.jsonl.zst",
            ),
            (
                "codex",
                "sessions/rollout-2026-11-02T10-00-00-0199a8f2-1c3d-7e4f-8a9b-0c1d2e3f4a5b.jsonl",
            ),
            (
                "codex",
                "archived_sessions/rollout-2026-11-02T10-00-00-0199a8f2-1c3d-7e4f-8a9b-0c1d2e3f4a5b.jsonl",
            ),
            ("codex", "sessions/2026/11/plain-name.jsonl"),
            (
                "pi",
                "sessions/--home-me-app--/2026-11-02T10-00-00-000Z_0199a8f2-1c3d-7e4f-8a9b-0c1d2e3f4a5b.jsonl",
            ),
            ("pi", "sessions/0199a8f2-1c3d-7e4f-8a9b-0c1d2e3f4a5b.jsonl"),
            (
                "grok",
                "sessions/%2Fhome%2Fme/0199a8f2-1c3d-7e4f-8a9b-0c1d2e3f4a5b/chat_history.jsonl",
            ),
            (
                "gemini",
                "tmp/abc123/chats/session-2026-11-02T10-00-0199a8f2.jsonl",
            ),
            (
                "gemini",
                "tmp/abc123/chats/session-2026-11-02T10-00-0199a8f2.json",
            ),
            (
                "opencode",
                "storage/session/global/ses_0199a8f21c3d7e4f.json",
            ),
            (
                "droid",
                "sessions/-home-me-app/0199a8f2-1c3d-7e4f-8a9b-0c1d2e3f4a5b.jsonl",
            ),
            (
                "continue",
                "sessions/0199a8f2-1c3d-7e4f-8a9b-0c1d2e3f4a5b.json",
            ),
            (
                "cline",
                "sessions/1796519025127_hb7nq/1796519025127_hb7nq.messages.json",
            ),
            (
                "qwen",
                "projects/-home-me-app/chats/0199a8f2-1c3d-7e4f-8a9b-0c1d2e3f4a5b.jsonl",
            ),
            (
                "copilot",
                "session-state/0199a8f2-1c3d-7e4f-8a9b-0c1d2e3f4a5b/events.jsonl",
            ),
            (
                "kimi",
                "sessions/b74c57912d7af62e15de0dd3fbd7b776/0199a8f2-1c3d-7e4f-8a9b-0c1d2e3f4a5b/wire.jsonl",
            ),
            (
                "kimi-code",
                "sessions/wd_app_05cea098cd11/session_0199a8f2-1c3d-7e4f-8a9b-0c1d2e3f4a5b/agents/main/wire.jsonl",
            ),
            (
                "openhands",
                "conversations/0199a8f21c3d7e4f8a9b0c1d2e3f4a5b/events/event-00001-6f1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f.json",
            ),
        ];
        for (name, rel) in cases {
            let harness = named(name);
            let entry = FileEntry {
                harness,
                root: Arc::from(&b"/h"[..]),
                rel: rel.as_bytes().to_vec(),
                size: 1,
                mtime: 0,
                inode: None,
                ctime: None,
            };
            let found = sessions(&[entry]);
            let [session] = found.as_slice() else {
                panic!("{name} {rel}: {found:?}")
            };
            assert!(
                session.agent.is_none() && !session.id.contains('+'),
                "{rel}"
            );
            let id = &session.id;
            for prefix in [id.as_str(), &id[..id.len().min(8)], &id[..id.len() / 2]] {
                let globs = harness.layout().id_globs;
                assert!(
                    globs
                        .iter()
                        .any(|g| glob_matches(&g.replace(ID_MARK, prefix), rel)),
                    "{name}: {rel} (id {id}) not found by {globs:?} with {prefix}"
                );
            }
        }
        // Only plain characters, one mark each; a harness with subdirs and no globs is walked.
        for harness in all() {
            for glob in harness.layout().id_globs {
                assert_eq!(glob.matches(ID_MARK).count(), 1, "{glob}");
                assert!(
                    glob.replace(ID_MARK, "")
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"*/._-".contains(&b)),
                    "{glob}"
                );
            }
        }
    }
}
