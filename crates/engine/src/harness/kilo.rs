//! Kilo Code's CLI (`kilo`, an OpenCode fork): where its `kilo.db` lives, its tools, the release
//! it is tested against and its resume command. Its database is the session / message / part
//! schema of the fork's origin (with tables of its own beside them, `kilo_board`, `event`, …,
//! not read), so its rows are read by [`message_parts`], shared with that origin: the same ids,
//! order and holding back of unfinished messages. It keeps no JSON tree of older versions.

use crate::SourceCtx;
use crate::database::{Database, IndexRead, QueryError, SessionRow};
use crate::harness::message_parts;
use crate::harness::{Format, PatchEnvelope, ToolRole, ToolVocabulary};
use crate::rows::RowRecords;
use clankie_model::{DefaultHome, Layout, ListSpec, Storage};

/// Kilo Code's CLI.
pub(super) struct Kilo;

/// Kilo's tools, its origin's: `bash`; `edit` and `multiedit` (`filePath`,
/// `oldString`/`newString`, `replaceAll`, `edits`); `write`; `apply_patch` under `patchText`.
/// Its file tools: `read` (`offset` counts from 0), `grep`, `glob`, `list`, `task`, `webfetch`,
/// `websearch`.
static TOOLS: ToolVocabulary = ToolVocabulary {
    shell_tools: &["bash"],
    command_keys: &["command"],
    path_keys: &["filePath"],
    snippet_keys: &[("oldString", "newString")],
    replace_all_keys: &["replaceAll"],
    edit_list_keys: &["edits"],
    write_tool_marks: &["write"],
    content_keys: &["content"],
    patch_tools: &["apply_patch"],
    patch_keys: &["patchText"],
    patch_envelope: &PatchEnvelope::APPLY_PATCH,
    roles: &[
        ("read", ToolRole::Read),
        ("grep", ToolRole::Search),
        ("glob", ToolRole::Glob),
        ("list", ToolRole::List),
        ("task", ToolRole::Agent),
        ("webfetch", ToolRole::Fetch),
        ("websearch", ToolRole::WebSearch),
    ],
    first_line_keys: &["offset"],
    first_line_base: 0,
    line_count_keys: &["limit"],
    pattern_keys: &["pattern", "query"],
    dir_keys: &["path"],
    file_filter_keys: &["include"],
    description_keys: &["description"],
    prompt_keys: &["prompt"],
    agent_type_keys: &["subagent_type"],
    url_keys: &["url"],
    ..ToolVocabulary::NONE
};

static LAYOUT: Layout = Layout {
    name: "kilo",
    // `$XDG_DATA_HOME/kilo`, else `~/.local/share/kilo` (Linux and macOS).
    default_home: DefaultHome {
        env_var: Some("XDG_DATA_HOME"),
        env_relative: "kilo",
        home_relative: ".local/share/kilo",
    },
    // The database and its WAL (a short run leaves every row in the WAL) in the data dir itself,
    // or where `KILO_DB` says.
    list: ListSpec {
        subdirs: &[],
        suffixes: &[],
        max_depth: 0,
        top_files: &["kilo.db", "kilo.db-wal"],
    },
    db_env: Some("KILO_DB"),
    storage: Storage::Database,
    id_globs: &[],
};

/// The newest Kilo Code CLI this reader is tested against (docs/harnesses.md).
const TESTED: super::Tested = super::Tested {
    product: "Kilo Code CLI",
    version: "7.7.7",
};

impl Format for Kilo {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    fn database_sessions(&self, db: &dyn Database) -> Result<Vec<SessionRow>, QueryError> {
        message_parts::sessions(db)
    }

    fn database_records(
        &self,
        db: &dyn Database,
        ctx: &SourceCtx,
    ) -> Result<RowRecords, QueryError> {
        message_parts::records_of(db, ctx)
    }

    fn database_newest_records(
        &self,
        db: &dyn Database,
        ctx: &SourceCtx,
        limit: usize,
    ) -> Result<RowRecords, QueryError> {
        message_parts::newest_records(db, ctx, limit)
    }

    fn database_newest_hint<'a>(&self, id: &'a str, limit: usize) -> Option<IndexRead<'a>> {
        Some(message_parts::newest_hint(id, limit))
    }

    fn database_cwd(&self, db: &dyn Database, id: &str) -> Result<Option<String>, QueryError> {
        message_parts::cwd(db, id)
    }

    fn database_title(&self, db: &dyn Database, id: &str) -> Result<Option<String>, QueryError> {
        message_parts::title(db, id)
    }

    /// The release is in its database rows, not read for `ls`.
    fn tested(&self) -> Option<&'static super::Tested> {
        Some(&TESTED)
    }

    fn tool_vocabulary(&self) -> &'static ToolVocabulary {
        &TOOLS
    }

    /// `kilo --session ID` opens the session in its TUI (`kilo run --session ID PROMPT` adds a
    /// turn without one).
    fn resume_command(&self, id: &str, _path: &str) -> String {
        format!("kilo --session {}", crate::resume::shell_quote(id))
    }
}
