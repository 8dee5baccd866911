//! Session identity: which listed files are sessions (by each harness's own layout rule, never
//! "the newest file"), and resolving what a user typed — an exact id, a unique prefix of at
//! least 6 characters, optionally `HARNESS/ID` — to exactly one of them.

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

/// Shortest prefix accepted for a session id.
pub const MIN_PREFIX: usize = 6;

/// The sessions among a listing's files, sorted by harness and id.
pub fn sessions(files: &[FileEntry]) -> Vec<SessionFile> {
    let mut out: Vec<SessionFile> = files.iter().filter_map(classify).collect();
    out.sort_by(|a, b| (a.harness(), &a.id, &a.entry.rel).cmp(&(b.harness(), &b.id, &b.entry.rel)));
    out
}

fn classify(entry: &FileEntry) -> Option<SessionFile> {
    match entry.harness {
        Harness::Claude => classify_claude(entry),
        Harness::Codex => classify_codex(entry),
        Harness::Pi => classify_pi(entry),
        Harness::Grok => classify_grok(entry),
        Harness::Gemini => classify_gemini(entry),
        // Sessions of a database are its rows: the driver queries them ([`session_row`]).
        Harness::OpenCode | Harness::GrokCli => None,
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

fn session_file(entry: &FileEntry, id: &str, agent: Option<&str>) -> Option<SessionFile> {
    valid_id(id).then(|| SessionFile {
        id: id.to_string(),
        agent: agent.map(str::to_string),
        entry: entry.clone(),
    })
}

/// `sessions/[YYYY/MM/DD/]rollout-<local ts>-<thread uuid>.jsonl` and
/// `archived_sessions/<name>.jsonl`: the id is the trailing UUID (what `codex resume` takes),
/// else the file stem.
fn classify_codex(entry: &FileEntry) -> Option<SessionFile> {
    let rel = std::str::from_utf8(&entry.rel).ok()?;
    let parts: Vec<&str> = rel.split('/').collect();
    let file = match parts.as_slice() {
        ["sessions", .., file] | ["archived_sessions", file] => *file,
        _ => return None,
    };
    let stem = file
        .strip_suffix(".jsonl")
        .or_else(|| file.strip_suffix(".jsonl.zst"))?;
    let id = trailing_uuid(stem).unwrap_or(stem);
    session_file(entry, id, None)
}

/// The last 36 characters of `name` when they are a UUID preceded by `-`.
fn trailing_uuid(name: &str) -> Option<&str> {
    let start = name.len().checked_sub(36)?;
    let uuid = name.get(start..)?;
    let shape = uuid.bytes().enumerate().all(|(i, b)| match i {
        8 | 13 | 18 | 23 => b == b'-',
        _ => b.is_ascii_hexdigit(),
    });
    (shape && name[..start].ends_with('-')).then_some(uuid)
}

/// `sessions/--<cwd>--/<ts>_<id>.jsonl` (or flat under a `--session-dir` root): the id is what
/// follows the first `_` (the header's `id`), else the stem.
fn classify_pi(entry: &FileEntry) -> Option<SessionFile> {
    let rel = std::str::from_utf8(&entry.rel).ok()?;
    let parts: Vec<&str> = rel.split('/').collect();
    let file = match parts.as_slice() {
        ["sessions", _, file] | ["sessions", file] => *file,
        _ => return None,
    };
    let stem = file.strip_suffix(".jsonl")?;
    let id = stem.split_once('_').map_or(stem, |(_, id)| id);
    session_file(entry, id, None)
}

/// `sessions/<pct-encoded-cwd>/<uuid>/chat_history.jsonl`: the id is the directory name.
fn classify_grok(entry: &FileEntry) -> Option<SessionFile> {
    let rel = std::str::from_utf8(&entry.rel).ok()?;
    match rel.split('/').collect::<Vec<_>>().as_slice() {
        ["sessions", _cwd, id, "chat_history.jsonl"] => session_file(entry, id, None),
        _ => None,
    }
}

/// `tmp/<project>/chats/session-<ts>-<8 hex>.jsonl`: the id is the file stem (the listing holds
/// only 8 characters of the header's `sessionId`); subagents in
/// `chats/<parent-session-id>/<id>.jsonl` are `<parent>+<id>`.
fn classify_gemini(entry: &FileEntry) -> Option<SessionFile> {
    let rel = std::str::from_utf8(&entry.rel).ok()?;
    match rel.split('/').collect::<Vec<_>>().as_slice() {
        ["tmp", _project, "chats", file] if file.starts_with("session-") => {
            let stem = file
                .strip_suffix(".jsonl")
                .or_else(|| file.strip_suffix(".json"))?;
            session_file(entry, stem, None)
        }
        ["tmp", _project, "chats", parent, file] if valid_id(parent) => {
            let stem = file.strip_suffix(".jsonl")?;
            session_file(entry, &format!("{parent}+{stem}"), Some(stem))
        }
        _ => None,
    }
}

/// `projects/<dir>/<id>.jsonl` is a session; `projects/<dir>/<id>/subagents/[…/]agent-<a>.jsonl`
/// is its subagent `<id>+agent-<a>`. Anything else under `projects/` is not a transcript.
fn classify_claude(entry: &FileEntry) -> Option<SessionFile> {
    let rel = std::str::from_utf8(&entry.rel).ok()?;
    let parts: Vec<&str> = rel.split('/').collect();
    let stem = |name: &str| {
        name.strip_suffix(".jsonl")
            .filter(|s| valid_id(s))
            .map(str::to_string)
    };
    match parts.as_slice() {
        ["projects", _dir, file] => {
            let id = stem(file)?;
            let agent = id.strip_prefix("agent-").map(str::to_string);
            Some(SessionFile {
                id,
                agent,
                entry: entry.clone(),
            })
        }
        ["projects", _dir, parent, "subagents", .., file] if valid_id(parent) => {
            let agent_file = stem(file)?;
            let agent = agent_file.strip_prefix("agent-")?.to_string();
            Some(SessionFile {
                id: format!("{parent}+{agent_file}"),
                agent: Some(agent),
                entry: entry.clone(),
            })
        }
        _ => None,
    }
}

/// Ids are printable and never contain path separators or characters a shell or a cursor
/// would have to escape.
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 200
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'+'))
        && !id.starts_with('.')
}

/// Why a session argument resolved to nothing or to several sessions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("unknown harness `{0}` (supported: {supported})", supported = Harness::supported_names())]
    UnknownHarness(String),
    #[error("invalid session id `{0}`: ids are letters, digits, `-`, `_`, `.` and `+`")]
    InvalidId(String),
    #[error("no session `{0}`")]
    NotFound(String),
    #[error("`{query}` is ambiguous: {}", candidates.join(", "))]
    Ambiguous {
        query: String,
        candidates: Vec<String>,
    },
}

/// A parsed session argument: `[HARNESS/]ID`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionQuery {
    pub harness: Option<Harness>,
    pub id: String,
}

impl SessionQuery {
    pub fn parse(text: &str) -> Result<SessionQuery, ResolveError> {
        let (harness, id) = match text.split_once('/') {
            Some((h, id)) => {
                let harness = Harness::from_name(h)
                    .ok_or_else(|| ResolveError::UnknownHarness(h.to_string()))?;
                (Some(harness), id)
            }
            None => (None, text),
        };
        if !valid_id(id) {
            return Err(ResolveError::InvalidId(id.to_string()));
        }
        Ok(SessionQuery {
            harness,
            id: id.to_string(),
        })
    }
}

/// Resolves a query: an exact id wins; otherwise a prefix of at least [`MIN_PREFIX`] characters
/// that matches exactly one session. A prefix without `+` never matches a subagent, so the
/// parent's prefix stays unambiguous.
pub fn resolve<'s>(
    sessions: &'s [SessionFile],
    query: &SessionQuery,
) -> Result<&'s SessionFile, ResolveError> {
    let in_scope = |s: &&SessionFile| query.harness.is_none_or(|h| h == s.harness());
    let exact: Vec<&SessionFile> = sessions
        .iter()
        .filter(in_scope)
        .filter(|s| s.id == query.id)
        .collect();
    let candidates = if !exact.is_empty() {
        exact
    } else if query.id.chars().count() >= MIN_PREFIX {
        let wants_subagent = query.id.contains('+');
        sessions
            .iter()
            .filter(in_scope)
            .filter(|s| {
                s.id.starts_with(&query.id)
                    && (wants_subagent || s.agent.is_none() || !s.id.contains('+'))
            })
            .collect()
    } else {
        Vec::new()
    };
    match candidates.as_slice() {
        [one] => Ok(one),
        [] => Err(ResolveError::NotFound(query.id.clone())),
        many => Err(ResolveError::Ambiguous {
            query: query.id.clone(),
            candidates: many
                .iter()
                .map(|s| {
                    format!(
                        "{}/{} ({})",
                        s.harness(),
                        s.id,
                        String::from_utf8_lossy(&s.entry.full_path())
                    )
                })
                .collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(rel: &str) -> FileEntry {
        FileEntry {
            harness: Harness::Claude,
            root: b"/h/.claude".to_vec(),
            rel: rel.as_bytes().to_vec(),
            size: 1,
            mtime: 0,
        }
    }

    fn all() -> Vec<SessionFile> {
        sessions(&[
            entry("projects/-p/3f1c2a00-aaaa.jsonl"),
            entry("projects/-p/3f1c2b00-bbbb.jsonl"),
            entry("projects/-p/3f1c2a00-aaaa/subagents/agent-a1.jsonl"),
            entry("projects/-p/3f1c2a00-aaaa/tool-results/x.jsonl"),
            entry("projects/-q/agent-old.jsonl"),
            entry("projects/-q/it's bad.jsonl"),
        ])
    }

    #[test]
    fn layout_rule() {
        let ids: Vec<String> = all().into_iter().map(|s| s.id).collect();
        assert_eq!(
            ids,
            [
                "3f1c2a00-aaaa",
                "3f1c2a00-aaaa+agent-a1",
                "3f1c2b00-bbbb",
                "agent-old"
            ]
        );
    }

    #[test]
    fn resolution() {
        let s = all();
        let q = |t: &str| SessionQuery::parse(t).unwrap();
        assert_eq!(resolve(&s, &q("3f1c2a")).unwrap().id, "3f1c2a00-aaaa");
        assert_eq!(
            resolve(&s, &q("claude/3f1c2b")).unwrap().id,
            "3f1c2b00-bbbb"
        );
        assert_eq!(
            resolve(&s, &q("3f1c2a00-aaaa+agent")).unwrap().id,
            "3f1c2a00-aaaa+agent-a1"
        );
        assert!(matches!(
            resolve(&s, &q("3f1c2")),
            Err(ResolveError::NotFound(_))
        ));
        assert!(resolve(&s, &q("3f1c2a00")).is_ok());
        match resolve(&s, &q("3f1c2")) {
            Err(ResolveError::NotFound(_)) => {}
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            resolve(&s, &q("3f1c20")),
            Err(ResolveError::NotFound(_))
        ));
        let err = resolve(&s, &q("3f1c2")).unwrap_err();
        assert!(err.to_string().contains("no session"));
        assert!(matches!(
            SessionQuery::parse("codexx/abc"),
            Err(ResolveError::UnknownHarness(_))
        ));
        assert!(SessionQuery::parse("../etc").is_err());
        assert!(matches!(
            SessionQuery::parse("a b"),
            Err(ResolveError::InvalidId(_))
        ));
    }

    #[test]
    fn ambiguous_prefix_lists_candidates() {
        let s = sessions(&[
            entry("projects/-p/3f1c2a00-aaaa.jsonl"),
            entry("projects/-p/3f1c2a11-bbbb.jsonl"),
        ]);
        let err = resolve(&s, &SessionQuery::parse("3f1c2a").unwrap()).unwrap_err();
        match err {
            ResolveError::Ambiguous { candidates, .. } => assert_eq!(candidates.len(), 2),
            other => panic!("{other:?}"),
        }
    }
}
