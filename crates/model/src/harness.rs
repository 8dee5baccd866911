//! Harness tags and layouts: what a host must know about a harness to find its files, as plain
//! data. The values themselves live with the rest of each harness's knowledge, in the engine's
//! `harness/<name>.rs`; its registry makes the [`Harness`] tags. A host reads a tag's
//! [`Layout`] to list and confine files, and so never depends on the engine.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

/// Where a harness keeps its sessions on a host and how they are stored.
#[derive(Debug, PartialEq, Eq)]
pub struct Layout {
    /// The name users type (`--root claude=DIR`, `claude/ID`) and NDJSON prints.
    pub name: &'static str,
    /// The home directory when nothing overrides it.
    pub default_home: DefaultHome,
    /// Which files under the home are transcripts.
    pub list: ListSpec,
    /// A variable naming the harness's database file itself (OpenCode's `OPENCODE_DB`: an
    /// absolute path, or a name relative to the default home; `:memory:` means no file). When
    /// the host sets it (non-empty) and the root is the default one, the database's directory
    /// is the root and the database and its `-wal` are its only top files.
    pub db_env: Option<&'static str>,
    pub storage: Storage,
    /// Where a session named by an id lives: shell glob patterns below the home, each with one
    /// [`ID_MARK`] that stands for the id (or a prefix of it). Every file whose session id
    /// (not a subagent's, whose id holds a `+`) starts with a given prefix matches one of them
    /// with the mark replaced by that prefix, as the harness names its files; so a host finds a
    /// session by globbing these instead of walking the home (`find_and_read`). Only `*` and
    /// the characters of plain names. Empty: not known, the home is walked; a harness with no
    /// subdirs needs none (its top files are listed as they are).
    pub id_globs: &'static [&'static str],
}

/// What stands for the id in a [`Layout::id_globs`] pattern.
pub const ID_MARK: &str = "{id}";

/// How a harness stores sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// One file per session (lines, or a whole document).
    Files,
    /// Rows of an SQLite database, listed as the database file and its `-wal`; sessions are
    /// found by querying a private copy.
    Database,
    /// Rows of an SQLite database as [`Storage::Database`], and, from the versions before it,
    /// a tree of JSON documents under the list's subdirs where one session is several files
    /// (OpenCode before 1.2: `storage/session/<project>/<ses>.json`, its messages'
    /// `storage/message/<ses>/<msg>.json` and their parts' `storage/part/<msg>/<prt>.json`).
    /// The listing holds every file of the tree; which files make up a session is the
    /// harness's rule, and a session in both is read from the database.
    DatabaseAndTree,
    /// A tree of JSON documents under the list's subdirs, one session several files of it
    /// (OpenHands: `conversations/<id>/base_state.json` and one `events/event-*.json` per
    /// event), and no database. The listing holds every file of the tree; which files make
    /// up a session is the harness's rule.
    Tree,
}

/// An agent harness whose transcripts we read: a tag made by the engine's registry, carrying
/// the harness's [`Layout`]. Tags compare by their place in the registry, which is also the
/// order harnesses are shown in.
#[derive(Clone, Copy)]
pub struct Harness {
    rank: u8,
    layout: &'static Layout,
}

impl Harness {
    /// The tag of the harness at `rank` in the registry's display order.
    pub const fn new(rank: u8, layout: &'static Layout) -> Harness {
        Harness { rank, layout }
    }

    /// The harness's place in the registry.
    pub fn rank(self) -> usize {
        usize::from(self.rank)
    }

    /// The name users type (`--root claude=DIR`, `claude/ID`) and NDJSON prints.
    pub fn name(self) -> &'static str {
        self.layout.name
    }

    pub fn layout(self) -> &'static Layout {
        self.layout
    }

    /// Where the harness keeps its home on a host when nothing overrides it.
    pub fn default_home(self) -> DefaultHome {
        self.layout.default_home
    }

    /// What a host must list under this harness's home: a generic file filter, no parsing.
    pub fn list_spec(self) -> ListSpec {
        self.layout.list
    }

    /// See [`Layout::db_env`].
    pub fn db_env(self) -> Option<&'static str> {
        self.layout.db_env
    }

    /// Whether the harness keeps sessions as rows of an SQLite database.
    pub fn is_sqlite(self) -> bool {
        matches!(
            self.layout.storage,
            Storage::Database | Storage::DatabaseAndTree
        )
    }

    /// Whether some of the harness's sessions are each a tree of several files
    /// ([`Storage::DatabaseAndTree`], [`Storage::Tree`]).
    pub fn has_file_tree(self) -> bool {
        matches!(
            self.layout.storage,
            Storage::DatabaseAndTree | Storage::Tree
        )
    }
}

impl PartialEq for Harness {
    fn eq(&self, other: &Harness) -> bool {
        self.rank == other.rank && self.layout.name == other.layout.name
    }
}

impl Eq for Harness {}

impl Hash for Harness {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.rank.hash(state);
        self.layout.name.hash(state);
    }
}

impl Ord for Harness {
    fn cmp(&self, other: &Harness) -> Ordering {
        (self.rank, self.layout.name).cmp(&(other.rank, other.layout.name))
    }
}

impl PartialOrd for Harness {
    fn partial_cmp(&self, other: &Harness) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for Harness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Harness({})", self.layout.name)
    }
}

impl fmt::Display for Harness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl DefaultHome {
    /// No default home: the harness is read only under a root the user gives.
    pub const NONE: DefaultHome = DefaultHome {
        env_var: None,
        env_relative: "",
        home_relative: "",
    };

    /// Whether there is a default home ([`DefaultHome::NONE`] is none).
    pub fn exists(&self) -> bool {
        *self != DefaultHome::NONE
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
/// starting with `/` is a whole file name (`/chat_history.jsonl`); subdirs are single names,
/// or [`ListSpec::PROJECT_TREE`], the root itself. Also every regular file directly in the
/// home named exactly one of `top_files` (a database and its WAL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListSpec {
    pub subdirs: &'static [&'static str],
    pub suffixes: &'static [&'static str],
    pub max_depth: u32,
    pub top_files: &'static [&'static str],
}

impl ListSpec {
    /// The subdir that is the root itself, walked as a tree of the user's projects rather
    /// than a harness's own home (aider writes its history in each project directory): the
    /// walk starts at the root, listed paths have no subdir before them, and it never enters
    /// a directory named one of [`ListSpec::PROJECT_TREE_SKIPS`]. It is a layout's only subdir.
    pub const PROJECT_TREE: &'static str = "";

    /// The directories a walk of [`ListSpec::PROJECT_TREE`] never enters: version control's
    /// own stores and the dependency and tool trees that package managers and test runners
    /// make inside a project. None is a project directory a person runs an agent in, and each
    /// can hold thousands of directories. Ordinary words a project may be named (`build`,
    /// `target`, `vendor`) and hidden directories at large (a project may be `~/.config/nvim`)
    /// are walked. Compared byte for byte (a Windows host compares them ignoring case).
    pub const PROJECT_TREE_SKIPS: &'static [&'static str] = &[
        ".git",
        ".hg",
        ".svn",
        ".jj",
        "node_modules",
        ".venv",
        "__pycache__",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
    ];

    /// Whether the walk is of the root itself ([`ListSpec::PROJECT_TREE`]).
    pub fn walks_project_tree(&self) -> bool {
        self.subdirs.contains(&Self::PROJECT_TREE)
    }

    /// Whether a walk of a project tree leaves out a directory of this name.
    pub fn skips_project_dir(name: &[u8]) -> bool {
        Self::PROJECT_TREE_SKIPS
            .iter()
            .any(|skip| skip.as_bytes() == name)
    }

    /// What a warning about a root that holds none of [`ListSpec::subdirs`] adds: where under it
    /// sessions are looked for (` (sessions are read from its casts/, logs/ or scripts/
    /// directory)`); empty when they are looked for in the root itself.
    pub fn where_sessions_go(&self) -> String {
        let dirs: Vec<String> = self
            .subdirs
            .iter()
            .filter(|d| **d != Self::PROJECT_TREE)
            .map(|d| format!("{d}/"))
            .collect();
        match dirs.as_slice() {
            [] => String::new(),
            [one] => format!(" (sessions are read from its {one} directory)"),
            [init @ .., last] => format!(
                " (sessions are read from its {} or {last} directory)",
                init.join(", ")
            ),
        }
    }

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

/// Where a [`Layout::db_env`] value puts the database, given the default home it is relative
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
    }

    #[test]
    fn suffixes_match_endings_or_whole_names() {
        let spec = ListSpec {
            subdirs: &["sessions"],
            suffixes: &[".jsonl", "/chat_history.json"],
            max_depth: 1,
            top_files: &[],
        };
        assert!(spec.matches_name(b"a.jsonl"));
        assert!(spec.matches_name(b"chat_history.json"));
        assert!(!spec.matches_name(b"old_chat_history.json"));
        assert!(!spec.matches_name(b"a.json"));
    }

    #[test]
    fn a_project_tree_is_the_root_itself_without_its_tool_trees() {
        let tree = ListSpec {
            subdirs: &[ListSpec::PROJECT_TREE],
            suffixes: &["/.history"],
            max_depth: 4,
            top_files: &[],
        };
        assert!(tree.walks_project_tree());
        assert_eq!(tree.where_sessions_go(), "");
        let home = ListSpec {
            subdirs: &["sessions"],
            ..tree
        };
        assert!(!home.walks_project_tree());
        for skipped in [".git", "node_modules", ".venv"] {
            assert!(ListSpec::skips_project_dir(skipped.as_bytes()), "{skipped}");
        }
        for walked in ["target", "build", ".config", "git", "node_modules2", ".GIT"] {
            assert!(!ListSpec::skips_project_dir(walked.as_bytes()), "{walked}");
        }
    }
}
