//! Plain shared data: harness tags and layouts, roots, listings, byte ranges, records and the
//! bounds. Depends on no crate of ours, so every layer (engine, hosts, driver, renderers) can
//! speak in these types.

#![forbid(unsafe_code)]

pub mod harness;
pub mod limits;
pub mod sanitize;

pub use harness::{DefaultHome, Harness, Layout, ListSpec, Storage, db_override};

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
        // path shown is one the user can paste on that machine. A POSIX root starts with `/`,
        // whatever it holds: a backslash in it or in `rel` is an ordinary name byte there.
        let windows = !self.root.starts_with(b"/");
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
    /// Names left out because the host cannot carry them (a lone UTF-16 surrogate on Windows).
    pub skipped_names: u64,
    /// Sources listed but not readable as sessions (a database too large or damaged, a name
    /// that is not UTF-8).
    pub unreadable: Vec<LeftOut>,
}

/// A source a listing found but left out of the sessions, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    pub harness: Harness,
    /// The file or directory left out, as the host spells it.
    pub path: Vec<u8>,
    /// The one line a user reads (it names the path).
    pub message: String,
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

    static TEST_LAYOUT: Layout = Layout {
        name: "test",
        default_home: DefaultHome {
            env_var: None,
            env_relative: "",
            home_relative: ".test",
        },
        list: ListSpec {
            subdirs: &["projects"],
            suffixes: &[".jsonl"],
            max_depth: 1,
            top_files: &[],
        },
        db_env: None,
        storage: Storage::Files,
    };
    const TEST_HARNESS: Harness = Harness::new(0, &TEST_LAYOUT);

    #[test]
    fn full_paths_use_the_host_separator() {
        let entry = |root: &[u8]| FileEntry {
            harness: TEST_HARNESS,
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
        assert_eq!(
            entry(br"\\server\share\.claude").full_path(),
            br"\\server\share\.claude\projects\C--Users-me-p\a.jsonl"
        );
        // A backslash is an ordinary byte of a POSIX name, in the root as in `rel`.
        let mut posix = entry(br"/srv/a\b/.claude");
        posix.rel = br"projects/C:\w\p/a.jsonl".to_vec();
        assert_eq!(
            posix.full_path(),
            br"/srv/a\b/.claude/projects/C:\w\p/a.jsonl"
        );
    }
}
