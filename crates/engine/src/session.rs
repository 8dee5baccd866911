//! Session identity: a session as a listed file (or a row of a listed database) with the id users
//! type, and what makes an id valid. Which files are sessions is each harness's own rule
//! (`harness/<name>.rs`); resolving what a user typed is [`crate::resolve`].

use clankie_model::{FileEntry, Harness};

/// A session file found in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFile {
    /// Session id as users type it. Subagent transcripts are `<parent-id>+agent-<agentId>`.
    pub id: String,
    /// The subagent id when the file is a subagent's transcript.
    pub agent: Option<String>,
    pub entry: FileEntry,
}

impl SessionFile {
    pub fn harness(&self) -> Harness {
        self.entry.harness
    }
}

/// A session that is a row of a database file: `entry` is the database (path, size), its
/// `mtime` replaced by the row's update time. `None` when the id is not a valid id.
pub fn session_row(
    entry: &FileEntry,
    id: &str,
    agent: Option<&str>,
    updated: Option<i64>,
) -> Option<SessionFile> {
    let mut entry = entry.clone();
    if let Some(t) = updated {
        entry.mtime = t;
    }
    session_file(&entry, id, agent)
}

pub(crate) fn session_file(
    entry: &FileEntry,
    id: &str,
    agent: Option<&str>,
) -> Option<SessionFile> {
    valid_id(id).then(|| SessionFile {
        id: id.to_string(),
        agent: agent.map(str::to_string),
        entry: entry.clone(),
    })
}

/// Ids are printable and never contain path separators or characters a shell or a cursor
/// would have to escape.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 200
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'+'))
        && !id.starts_with('.')
}
