//! Plain shared data: harness tags and layouts, roots, listings, byte ranges, records and the
//! bounds. Depends on no crate of ours, so every layer (engine, hosts, driver, renderers) can
//! speak in these types.

#![forbid(unsafe_code)]

use std::sync::Arc;

pub mod harness;
pub mod invisible;
pub mod limits;
pub mod sanitize;
pub mod text;

pub use harness::{DefaultHome, Harness, Layout, ListSpec, Storage, db_override};
pub use text::LazyText;

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
    /// The resolved home this file lies under, shared by every entry of one root: a listing of
    /// millions of short names under one long root holds that root once, not once per name.
    pub root: Arc<[u8]>,
    /// Path relative to `root`, `/`-separated, never containing `..` or empty components.
    pub rel: Vec<u8>,
    pub size: u64,
    /// Modification time, seconds since the Unix epoch.
    pub mtime: i64,
    /// The file's inode number, from the listing's own `stat`, where the host gives one
    /// (`None`: a Windows host, the `ls` listing mode).
    pub inode: Option<u64>,
    /// The inode's status change time (seconds since the epoch; no user can set it back), where
    /// the host gives one, as [`FileEntry::inode`].
    pub ctime: Option<i64>,
}

impl FileEntry {
    /// `root/rel` as bytes.
    pub fn full_path(&self) -> Vec<u8> {
        // A Windows root (C:\Users\me\.claude, \\server\share) gets Windows separators, so the
        // path shown is one the user can paste on that machine. A POSIX root starts with `/`,
        // whatever it holds: a backslash in it or in `rel` is an ordinary name byte there.
        let windows = !self.root.starts_with(b"/");
        let sep = if windows { b'\\' } else { b'/' };
        let mut path = self.root.to_vec();
        if !path.ends_with(b"/") && !path.ends_with(b"\\") {
            path.push(sep);
        }
        path.extend(self.rel.iter().map(|&b| if b == b'/' { sep } else { b }));
        path
    }
}

/// Where a session's file was when it was last read: its harness and its path below the
/// harness's root, as a line cursor carries it (docs/cursors.md). Only a hint, never filesystem
/// authority: a host that is handed it confines it like any path it is given, and the caller
/// verifies what it reads there (a cursor's hashes); when the file is not there, the session is
/// found as without it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathHint {
    /// The harness's name ([`Harness::name`]), as the cursor's wire form holds it: the cursor is
    /// decoded below the registry that makes tags, and a name no harness has is for no root.
    pub harness: String,
    /// The file's path relative to the harness's root, `/`-separated as [`FileEntry::rel`].
    pub rel: Vec<u8>,
}

impl PathHint {
    /// The hint of `rel` below a root of `harness`.
    pub fn new(harness: Harness, rel: Vec<u8>) -> PathHint {
        PathHint {
            harness: harness.name().to_string(),
            rel,
        }
    }

    /// Whether the hint is for a root of `harness`.
    pub fn is_for(&self, harness: Harness) -> bool {
        self.harness == harness.name()
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

/// What a [`Listing`] holds, counted as it is built against its bounds (by default
/// [`limits::MAX_LIST_ENTRIES`] and [`limits::MAX_LISTING_BYTES`]), so that what a host sends
/// (or a directory tree holds) cannot make the listing larger than they allow: a builder asks
/// before it keeps a root or a file, and stops at the first refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListingBudget {
    entries: usize,
    bytes: usize,
    max_entries: usize,
    max_bytes: usize,
}

/// A listing that would pass one of its bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListingOverCap {
    /// More files than `max`.
    Entries { max: usize },
    /// More bytes held than `max`.
    Bytes { max: usize },
}

impl std::fmt::Display for ListingOverCap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListingOverCap::Entries { max } => {
                write!(f, "listing has more than {max} files; refusing it")
            }
            ListingOverCap::Bytes { max } => {
                write!(f, "listing would hold more than {max} bytes; refusing it")
            }
        }
    }
}

impl std::error::Error for ListingOverCap {}

impl Default for ListingBudget {
    fn default() -> ListingBudget {
        ListingBudget::with_bounds(limits::MAX_LIST_ENTRIES, limits::MAX_LISTING_BYTES)
    }
}

impl ListingBudget {
    /// A budget of other bounds than the product's (tests of what meets them).
    pub fn with_bounds(max_entries: usize, max_bytes: usize) -> ListingBudget {
        ListingBudget {
            entries: 0,
            bytes: 0,
            max_entries,
            max_bytes,
        }
    }

    /// Counts a root whose directory is `dir_len` bytes: its [`ResolvedRoot`] and the copy its
    /// files share.
    pub fn add_root(&mut self, dir_len: usize) -> Result<(), ListingOverCap> {
        self.add_bytes(
            dir_len
                .saturating_mul(2)
                .saturating_add(std::mem::size_of::<ResolvedRoot>()),
        )
    }

    /// Counts one file whose path relative to its root is `rel_len` bytes.
    pub fn add_file(&mut self, rel_len: usize) -> Result<(), ListingOverCap> {
        if self.entries >= self.max_entries {
            return Err(ListingOverCap::Entries {
                max: self.max_entries,
            });
        }
        self.entries += 1;
        self.add_bytes(rel_len.saturating_add(std::mem::size_of::<FileEntry>()))
    }

    fn add_bytes(&mut self, bytes: usize) -> Result<(), ListingOverCap> {
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes > self.max_bytes {
            return Err(ListingOverCap::Bytes {
                max: self.max_bytes,
            });
        }
        Ok(())
    }
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

/// The normalized record kinds: the five of a transcript, and `terminal` (a line a terminal
/// showed, never a transcript record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordKind {
    User,
    Assistant,
    ToolCall,
    ToolResult,
    Notice,
    Terminal,
}

impl RecordKind {
    pub const fn name(self) -> &'static str {
        match self {
            RecordKind::User => "user",
            RecordKind::Assistant => "assistant",
            RecordKind::ToolCall => "tool_call",
            RecordKind::ToolResult => "tool_result",
            RecordKind::Notice => "notice",
            RecordKind::Terminal => "terminal",
        }
    }
}

/// The kind-specific content of a record.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordBody {
    /// user, assistant and notice records.
    Text { kind: TextKind, text: LazyText },
    ToolCall {
        call_id: String,
        name: String,
        input: serde_json::Value,
        /// The user ran it themselves (Pi's `!cmd`), not the agent: `"by": "user"` on the wire.
        by_user: bool,
    },
    ToolResult {
        call_id: String,
        output: LazyText,
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
    /// A line a terminal showed, from a recording of it: terminal text, not a transcript.
    /// `generation` counts the recordings (processes) one file holds, from 1.
    Terminal {
        source: TerminalSource,
        generation: u32,
    },
}

/// Which program wrote a terminal recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TerminalSource {
    /// An asciinema `.cast` (v2 or v3).
    Asciinema,
    /// A util-linux `script` typescript.
    Script,
    /// The raw bytes a terminal was sent (tmux `pipe-pane`).
    Raw,
}

impl TerminalSource {
    /// The name NDJSON prints (`source`).
    pub fn name(self) -> &'static str {
        match self {
            TerminalSource::Asciinema => "asciinema",
            TerminalSource::Script => "script",
            TerminalSource::Raw => "raw",
        }
    }
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
    /// The model that wrote the record (assistant text, thinking and tool calls), where the
    /// harness records it with the message.
    pub model: Option<String>,
    /// The token usage of the message the record belongs to, on the message's first record
    /// only, where the harness records it with the message. Boxed: most records have none.
    pub usage: Option<Box<Usage>>,
}

/// Token counts of one model reply as the harness recorded them; a count the harness does not
/// record is `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    /// Input tokens as the harness counts them: Claude and Pi leave out the cache reads,
    /// Gemini counts them in.
    pub input: Option<u64>,
    pub output: Option<u64>,
    /// Input tokens read from the prompt cache.
    pub cache_read: Option<u64>,
    /// Input tokens written to the prompt cache.
    pub cache_write: Option<u64>,
    /// Reasoning (thinking) tokens, where counted apart from `output`.
    pub reasoning: Option<u64>,
}

impl Usage {
    /// `None` when no count is known.
    pub fn nonempty(self) -> Option<Box<Usage>> {
        (self != Usage::default()).then(|| Box::new(self))
    }
}

impl Record {
    /// Unescapes the record's text now if it is still held as its JSON token
    /// ([`LazyText`]): for a reader that will read it, on the thread that has time for it.
    pub fn make_text_plain(&mut self) {
        match &mut self.body {
            RecordBody::Text { text, .. } => {
                text.make_plain();
            }
            RecordBody::ToolResult { output, .. } => {
                output.make_plain();
            }
            RecordBody::ToolCall { .. } => {}
        }
    }

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
            RecordBody::Text {
                kind: TextKind::Terminal { .. },
                ..
            } => RecordKind::Terminal,
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
        id_globs: &[],
    };
    const TEST_HARNESS: Harness = Harness::new(0, &TEST_LAYOUT);

    #[test]
    fn a_listing_budget_refuses_past_either_bound() {
        let mut budget = ListingBudget::default();
        budget.add_root(4000).unwrap();
        for _ in 0..limits::MAX_LIST_ENTRIES {
            budget.add_file(16).unwrap();
        }
        let entries = ListingOverCap::Entries {
            max: limits::MAX_LIST_ENTRIES,
        };
        assert_eq!(budget.add_file(16), Err(entries));

        // Long names reach the byte bound first.
        let mut budget = ListingBudget::default();
        let long = 4096;
        let fit = limits::MAX_LISTING_BYTES / (std::mem::size_of::<FileEntry>() + long);
        assert!(fit < limits::MAX_LIST_ENTRIES);
        for _ in 0..fit {
            budget.add_file(long).unwrap();
        }
        let bytes = ListingOverCap::Bytes {
            max: limits::MAX_LISTING_BYTES,
        };
        assert_eq!(budget.add_file(long), Err(bytes));
        assert_eq!(
            bytes.to_string(),
            "listing would hold more than 50331648 bytes; refusing it"
        );
        // So does one huge root, and the count cannot wrap.
        let mut budget = ListingBudget::default();
        assert_eq!(budget.add_root(usize::MAX), Err(bytes));
        assert_eq!(budget.add_root(1), Err(bytes));
    }

    #[test]
    fn full_paths_use_the_host_separator() {
        let entry = |root: &[u8]| FileEntry {
            harness: TEST_HARNESS,
            root: root.into(),
            rel: b"projects/C--Users-me-p/a.jsonl".to_vec(),
            size: 0,
            mtime: 0,
            inode: None,
            ctime: None,
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
