//! Plain shared data: harnesses, roots, listings, records. Imports nothing from the crate, so
//! every layer (engine, hosts, driver, renderers) can speak in these types.

pub mod limits;
pub mod sanitize;

use std::fmt;

/// An agent harness whose transcripts we read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Harness {
    Claude,
    Codex,
    Pi,
    Grok,
    Gemini,
    /// OpenCode 1.2+: sessions are rows of `opencode.db` (SQLite, WAL).
    OpenCode,
    /// The community grok-cli (`grok-dev`): sessions are rows of `~/.grok/grok.db`.
    GrokCli,
}

impl Harness {
    /// Every supported harness, in display order.
    pub const ALL: [Harness; 7] = [
        Harness::Claude,
        Harness::Codex,
        Harness::Pi,
        Harness::Grok,
        Harness::Gemini,
        Harness::OpenCode,
        Harness::GrokCli,
    ];

    /// The name users type (`--root claude=DIR`, `claude/ID`) and NDJSON prints.
    pub fn name(self) -> &'static str {
        match self {
            Harness::Claude => "claude",
            Harness::Codex => "codex",
            Harness::Pi => "pi",
            Harness::Grok => "grok",
            Harness::Gemini => "gemini",
            Harness::OpenCode => "opencode",
            Harness::GrokCli => "grok-cli",
        }
    }

    /// Parses a harness name as users type it.
    pub fn from_name(name: &str) -> Option<Harness> {
        Harness::ALL.into_iter().find(|h| h.name() == name)
    }

    /// Comma-separated list of supported names, for error messages.
    pub fn supported_names() -> String {
        Harness::ALL.map(|h| h.name()).join(", ")
    }

    /// Whether the harness keeps sessions as rows of an SQLite database (listed as the database
    /// file and its `-wal`; sessions are found by querying a private copy).
    pub fn is_sqlite(self) -> bool {
        matches!(self, Harness::OpenCode | Harness::GrokCli)
    }

    /// A variable naming the harness's database file itself (OpenCode's `OPENCODE_DB`: an
    /// absolute path, or a name relative to the default home; `:memory:` means no file). When
    /// the host sets it (non-empty) and the root is the default one, the database's directory
    /// is the root and the database and its `-wal` are its only top files.
    pub fn db_env(self) -> Option<&'static str> {
        match self {
            Harness::OpenCode => Some("OPENCODE_DB"),
            _ => None,
        }
    }

    /// Where the harness keeps its home on a host when nothing overrides it: the environment
    /// variable the harness itself honours, else a directory relative to `$HOME`.
    pub fn default_home(self) -> DefaultHome {
        match self {
            Harness::Claude => DefaultHome {
                env_var: Some("CLAUDE_CONFIG_DIR"),
                env_relative: "",
                home_relative: ".claude",
            },
            Harness::Codex => DefaultHome {
                env_var: Some("CODEX_HOME"),
                env_relative: "",
                home_relative: ".codex",
            },
            Harness::Pi => DefaultHome {
                env_var: Some("PI_CODING_AGENT_DIR"),
                env_relative: "",
                home_relative: ".pi/agent",
            },
            // Reported, not verified against the closed-source CLI.
            Harness::Grok => DefaultHome {
                env_var: Some("GROK_HOME"),
                env_relative: "",
                home_relative: ".grok",
            },
            // GEMINI_CLI_HOME replaces the user's home directory, not the `.gemini` one.
            Harness::Gemini => DefaultHome {
                env_var: Some("GEMINI_CLI_HOME"),
                env_relative: ".gemini",
                home_relative: ".gemini",
            },
            // `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode` (Linux and macOS).
            Harness::OpenCode => DefaultHome {
                env_var: Some("XDG_DATA_HOME"),
                env_relative: "opencode",
                home_relative: ".local/share/opencode",
            },
            // grok-cli hard-codes `os.homedir()/.grok`; no variable moves it.
            Harness::GrokCli => DefaultHome {
                env_var: None,
                env_relative: "",
                home_relative: ".grok",
            },
        }
    }

    /// What a host must list under this harness's home: a generic file filter, no parsing.
    pub fn list_spec(self) -> ListSpec {
        match self {
            // projects/<enc-cwd>/<uuid>.jsonl, …/<uuid>/subagents/agent-*.jsonl,
            // …/subagents/workflows/<id>/agent-*.jsonl.
            Harness::Claude => ListSpec {
                subdirs: &["projects"],
                suffixes: &[".jsonl"],
                max_depth: 6,
                top_files: &[],
            },
            // sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl, early flat sessions/rollout-….jsonl,
            // archived_sessions/rollout-….jsonl; `.jsonl.zst` once Codex compresses them (after
            // 7 days; decompressed on the reading side).
            Harness::Codex => ListSpec {
                subdirs: &["sessions", "archived_sessions"],
                suffixes: &[".jsonl", ".jsonl.zst"],
                max_depth: 3,
                top_files: &[],
            },
            // sessions/--<cwd>--/<ts>_<id>.jsonl (or flat with --session-dir as a root).
            Harness::Pi => ListSpec {
                subdirs: &["sessions"],
                suffixes: &[".jsonl"],
                max_depth: 1,
                top_files: &[],
            },
            // sessions/<pct-encoded-cwd>/<uuid>/chat_history.jsonl; the other journals in a
            // session directory (updates.jsonl can be gigabytes) are not transcripts.
            Harness::Grok => ListSpec {
                subdirs: &["sessions"],
                suffixes: &["/chat_history.jsonl"],
                max_depth: 2,
                top_files: &[],
            },
            // tmp/<project>/chats/session-*.jsonl, subagents in chats/<parent-id>/<id>.jsonl.
            // TODO(#6): legacy whole-document `session-*.json` (needs the document cursor class).
            Harness::Gemini => ListSpec {
                subdirs: &["tmp"],
                // `.json`: the legacy whole-document sessions.
                suffixes: &[".jsonl", ".json"],
                max_depth: 3,
                top_files: &[],
            },
            // The database and its WAL in the data dir itself (or where `OPENCODE_DB` says, see
            // `db_env`). TODO(#8): `opencode-<channel>.db`, the legacy JSON tree under `storage/`,
            // `OPENCODE_DB` in the PowerShell list script.
            Harness::OpenCode => ListSpec {
                subdirs: &[],
                suffixes: &[],
                max_depth: 0,
                top_files: &["opencode.db", "opencode.db-wal"],
            },
            Harness::GrokCli => ListSpec {
                subdirs: &[],
                suffixes: &[],
                max_depth: 0,
                top_files: &["grok.db", "grok.db-wal"],
            },
        }
    }
}

impl fmt::Display for Harness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The default home of a harness: `$<env_var>/<env_relative>` when the host sets the variable
/// (`env_relative` empty: the variable names the home itself), else `$HOME/<home_relative>`.
/// `env_var: None`: the harness honours no variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultHome {
    pub env_var: Option<&'static str>,
    pub env_relative: &'static str,
    pub home_relative: &'static str,
}

/// Which files under a harness home are transcripts: regular files at most `max_depth`
/// directories below one of `<home>/<subdir>` whose path ends in one of `suffixes`. A suffix
/// starting with `/` is a whole file name (`/chat_history.jsonl`); subdirs are single names.
/// Also every regular file directly in the home named exactly one of `top_files` (a database
/// and its WAL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListSpec {
    pub subdirs: &'static [&'static str],
    pub suffixes: &'static [&'static str],
    pub max_depth: u32,
    pub top_files: &'static [&'static str],
}

/// Where a [`Harness::db_env`] value puts the database, given the default home it is relative
/// to: `(directory, file name)`. `None` when the value names no file (`:memory:`, empty, or a
/// name ending in `/`, `.` or `..`); a file name that holds a newline is refused too.
pub fn db_override(home: &[u8], value: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    if value.is_empty() || value == b":memory:" {
        return None;
    }
    let mut path = if value.starts_with(b"/") {
        value.to_vec()
    } else {
        let mut p = home.to_vec();
        if !p.ends_with(b"/") {
            p.push(b'/');
        }
        p.extend_from_slice(value);
        p
    };
    let cut = path.iter().rposition(|&b| b == b'/')?;
    let name = path.split_off(cut + 1);
    if matches!(name.as_slice(), b"" | b"." | b"..") || name.contains(&b'\n') {
        return None;
    }
    if path.len() > 1 {
        path.pop();
    }
    Some((path, name))
}

impl ListSpec {
    /// Whether a file name (no directory) matches one of the suffixes.
    pub fn matches_name(&self, name: &[u8]) -> bool {
        self.suffixes
            .iter()
            .any(|suffix| match suffix.strip_prefix('/') {
                Some(whole) => name == whole.as_bytes(),
                None => name.ends_with(suffix.as_bytes()),
            })
    }
}

/// One harness root to list on a host. `dir: None` means the harness's default home as the host
/// itself resolves it (its environment, its `$HOME`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootSpec {
    pub harness: Harness,
    pub dir: Option<Vec<u8>>,
}

impl RootSpec {
    pub fn default_for(harness: Harness) -> RootSpec {
        RootSpec { harness, dir: None }
    }
}

/// A root as the host resolved it: the absolute home directory (bytes, as the host spells it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedRoot {
    pub harness: Harness,
    /// Absolute path of the harness home, physical (symlinks resolved) where the host can tell.
    pub dir: Vec<u8>,
    /// False when the directory (or its transcript subdirectory) does not exist.
    pub exists: bool,
}

/// One transcript file found under a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    pub harness: Harness,
    /// The resolved home this file lies under.
    pub root: Vec<u8>,
    /// Path relative to `root`, `/`-separated, never containing `..` or empty components.
    pub rel: Vec<u8>,
    pub size: u64,
    /// Modification time, seconds since the Unix epoch.
    pub mtime: i64,
}

impl FileEntry {
    /// `root/rel` as bytes.
    pub fn full_path(&self) -> Vec<u8> {
        // A Windows root (C:\Users\me\.claude, \\server\share) gets Windows separators, so the
        // path shown is one the user can paste on that machine.
        let windows = self.root.contains(&b'\\') || (self.root.len() >= 2 && self.root[1] == b':');
        let sep = if windows { b'\\' } else { b'/' };
        let mut path = self.root.clone();
        if !path.ends_with(b"/") && !path.ends_with(b"\\") {
            path.push(sep);
        }
        path.extend(self.rel.iter().map(|&b| if b == b'/' { sep } else { b }));
        path
    }
}

/// What one `list` call found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    pub roots: Vec<ResolvedRoot>,
    pub files: Vec<FileEntry>,
    /// Names left out because they cannot be carried safely (a newline in the name).
    pub skipped_names: u64,
    /// Sources listed but not readable as sessions (a database too large or damaged): one
    /// line each, for stderr.
    pub unreadable: Vec<String>,
}

/// A half-open byte range `[start, start + len)` of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    pub start: u64,
    pub len: u64,
}

impl ByteRange {
    pub fn new(start: u64, len: u64) -> ByteRange {
        ByteRange { start, len }
    }
    pub fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// What one `read` call returned: the file's true size at the time of the read, and for each
/// requested range the bytes that exist (clipped at the size; empty past it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadResult {
    pub size: u64,
    pub chunks: Vec<Vec<u8>>,
}

/// The five normalized record kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordKind {
    User,
    Assistant,
    ToolCall,
    ToolResult,
    Notice,
}

impl RecordKind {
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::User => "user",
            RecordKind::Assistant => "assistant",
            RecordKind::ToolCall => "tool_call",
            RecordKind::ToolResult => "tool_result",
            RecordKind::Notice => "notice",
        }
    }
}

/// The kind-specific content of a record.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordBody {
    /// user, assistant and notice records.
    Text { kind: TextKind, text: String },
    ToolCall {
        call_id: String,
        name: String,
        input: serde_json::Value,
    },
    ToolResult {
        call_id: String,
        output: String,
        is_error: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    User,
    Assistant,
    /// Model reasoning, shown as assistant text flagged `thinking`.
    Thinking,
    Notice,
}

/// One normalized record.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Stable id: native id plus block position (`<uuid>#<i>`), or `@<offset>` where the source
    /// has none.
    pub id: String,
    pub harness: Harness,
    pub session: String,
    /// RFC 3339 timestamp as the source wrote it.
    pub ts: Option<String>,
    /// Set on records written by a subagent (sidechain); the subagent's id when known.
    pub agent: Option<String>,
    pub sidechain: bool,
    pub body: RecordBody,
}

impl Record {
    pub fn kind(&self) -> RecordKind {
        match &self.body {
            RecordBody::Text {
                kind: TextKind::User,
                ..
            } => RecordKind::User,
            RecordBody::Text {
                kind: TextKind::Assistant | TextKind::Thinking,
                ..
            } => RecordKind::Assistant,
            RecordBody::Text {
                kind: TextKind::Notice,
                ..
            } => RecordKind::Notice,
            RecordBody::ToolCall { .. } => RecordKind::ToolCall,
            RecordBody::ToolResult { .. } => RecordKind::ToolResult,
        }
    }
}

/// Lossy display of path bytes (for messages and NDJSON `path`).
pub fn display_path(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_override_is_absolute_or_relative_to_the_home() {
        let split = |home: &str, value: &str| {
            db_override(home.as_bytes(), value.as_bytes())
                .map(|(d, n)| (String::from_utf8(d).unwrap(), String::from_utf8(n).unwrap()))
        };
        let pair = |d: &str, n: &str| Some((d.to_string(), n.to_string()));
        assert_eq!(
            split("/h/opencode", "/srv/x/my.db"),
            pair("/srv/x", "my.db")
        );
        assert_eq!(split("/h/opencode", "/my.db"), pair("/", "my.db"));
        assert_eq!(
            split("/h/opencode", "dev.db"),
            pair("/h/opencode", "dev.db")
        );
        assert_eq!(
            split("/h/opencode/", "a/dev.db"),
            pair("/h/opencode/a", "dev.db")
        );
        for none in ["", ":memory:", "/srv/", "x/..", "."] {
            assert_eq!(split("/h/opencode", none), None, "{none}");
        }
        assert_eq!(Harness::OpenCode.db_env(), Some("OPENCODE_DB"));
        assert_eq!(Harness::GrokCli.db_env(), None);
    }

    #[test]
    fn full_paths_use_the_host_separator() {
        let entry = |root: &[u8]| FileEntry {
            harness: Harness::Claude,
            root: root.to_vec(),
            rel: b"projects/C--Users-me-p/a.jsonl".to_vec(),
            size: 0,
            mtime: 0,
        };
        assert_eq!(
            entry(b"/home/me/.claude").full_path(),
            b"/home/me/.claude/projects/C--Users-me-p/a.jsonl"
        );
        assert_eq!(
            entry(br"C:\Users\me\.claude").full_path(),
            br"C:\Users\me\.claude\projects\C--Users-me-p\a.jsonl"
        );
    }
}
