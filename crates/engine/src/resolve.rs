//! Resolving what a user typed — an exact id, a unique prefix of at least 6 characters, or the
//! session file's name without its extension (a Gemini session's id is the UUID in its header,
//! its file is `session-<time>-<8 hex>.jsonl`), optionally `HARNESS/ID` — to exactly one of the
//! sessions a listing holds. `@latest` (`@latest/HARNESS`, or `HARNESS/@latest`) names the
//! newest session, the one `ls` lists first: the latest activity, subagents aside.

use crate::harness;
use crate::session::{SessionFile, valid_id};
use clankie_model::Harness;

/// The session argument that names the newest session ([`SessionQuery::is_latest`]).
pub const LATEST: &str = "@latest";

/// Shortest prefix accepted for a session id.
pub const MIN_PREFIX: usize = 6;

/// Why a session argument resolved to nothing or to several sessions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("unknown harness `{0}` (supported: {supported})", supported = harness::supported_names())]
    UnknownHarness(String),
    #[error("invalid session id `{0}`: ids are letters, digits, `-`, `_`, `.` and `+`")]
    InvalidId(String),
    #[error("no session `{0}`")]
    NotFound(String),
    /// No session has this exact id, and it is too short to be taken as a prefix.
    #[error(
        "`{0}` is too short for a session id prefix: give at least {MIN_PREFIX} characters (or the whole id)"
    )]
    TooShort(String),
    #[error("`{query}` is ambiguous: {}", candidates.join(", "))]
    Ambiguous {
        query: String,
        candidates: Vec<String>,
    },
}

/// A parsed session argument: `[HARNESS/]ID`, or `@latest[/HARNESS]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionQuery {
    pub harness: Option<Harness>,
    /// The id or prefix typed, or [`LATEST`].
    pub id: String,
}

impl SessionQuery {
    pub fn parse(text: &str) -> Result<SessionQuery, ResolveError> {
        let turned;
        let text = match text.strip_prefix(LATEST).and_then(|h| h.strip_prefix('/')) {
            // `@latest/HARNESS` is `HARNESS/@latest`.
            Some(harness) => {
                turned = format!("{harness}/{LATEST}");
                turned.as_str()
            }
            None => text,
        };
        let (harness, id) = match text.split_once('/') {
            Some((h, id)) => {
                let harness = harness::by_name(h)
                    .ok_or_else(|| ResolveError::UnknownHarness(h.to_string()))?;
                (Some(harness), id)
            }
            None => (None, text),
        };
        if id != LATEST && !valid_id(id) {
            return Err(ResolveError::InvalidId(id.to_string()));
        }
        Ok(SessionQuery {
            harness,
            id: id.to_string(),
        })
    }

    /// Whether the query names the newest session (`@latest`), not an id.
    pub fn is_latest(&self) -> bool {
        self.id == LATEST
    }
}

/// The file name of a session's transcript without its extension (`.jsonl`).
fn file_stem(session: &SessionFile) -> Option<&str> {
    let rel = std::str::from_utf8(&session.entry.rel).ok()?;
    let name = rel.rsplit('/').next()?;
    Some(name.split_once('.').map_or(name, |(stem, _)| stem))
}

/// Resolves a query: an exact id wins, then the exact file name (without extension) of a
/// session whose id is in its file's head; otherwise a prefix of at least [`MIN_PREFIX`]
/// characters that matches exactly one session. A prefix without `+` never matches a subagent, so the
/// parent's prefix stays unambiguous.
pub fn resolve<'s>(
    sessions: &'s [SessionFile],
    query: &SessionQuery,
) -> Result<&'s SessionFile, ResolveError> {
    let in_scope = |s: &&SessionFile| query.harness.is_none_or(|h| h == s.harness());
    if query.is_latest() {
        // As `ls` sorts: the latest activity first, then the id.
        return sessions
            .iter()
            .filter(in_scope)
            .filter(|s| s.agent.is_none())
            .max_by(|a, b| (a.entry.mtime, &b.id).cmp(&(b.entry.mtime, &a.id)))
            .ok_or_else(|| ResolveError::NotFound(query.id.clone()));
    }
    let exact: Vec<&SessionFile> = sessions
        .iter()
        .filter(in_scope)
        .filter(|s| s.id == query.id)
        .collect();
    // Where the id is not the file name (Gemini's), the file name still names the session.
    let exact = if exact.is_empty() {
        sessions
            .iter()
            .filter(in_scope)
            .filter(|s| harness::id_in_head(s))
            .filter(|s| file_stem(s) == Some(query.id.as_str()))
            .collect()
    } else {
        exact
    };
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
        [] if query.id.chars().count() < MIN_PREFIX => {
            Err(ResolveError::TooShort(query.id.clone()))
        }
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

/// For each id, how many of its first characters tell it from every other id given: the
/// shortest unique prefix, but never under [`MIN_PREFIX`] (what [`resolve`] accepts) nor over
/// the id's length. For `ls`, which highlights it.
pub fn unique_prefix_lens(ids: &[&str]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by_key(|&i| ids[i]);
    let common = |a: &str, b: &str| a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let mut lens = vec![0; ids.len()];
    for (k, &i) in order.iter().enumerate() {
        // In sorted order the id sharing the longest prefix with this one is a neighbour.
        let before = k
            .checked_sub(1)
            .map_or(0, |j| common(ids[i], ids[order[j]]));
        let after = order.get(k + 1).map_or(0, |&j| common(ids[i], ids[j]));
        let chars = ids[i].chars().count();
        lens[i] = (before.max(after) + 1).max(MIN_PREFIX).min(chars);
    }
    lens
}

#[cfg(test)]
mod tests {
    use super::*;
    use clankie_model::FileEntry;

    fn entry(rel: &str) -> FileEntry {
        FileEntry {
            harness: harness::by_name("claude").unwrap(),
            root: b"/h/.claude".as_slice().into(),
            rel: rel.as_bytes().to_vec(),
            size: 1,
            mtime: 0,
            inode: None,
            ctime: None,
        }
    }

    fn all() -> Vec<SessionFile> {
        harness::sessions(&[
            entry("projects/-p/3f1c2a00-aaaa.jsonl"),
            entry("projects/-p/3f1c2b00-bbbb.jsonl"),
            entry("projects/-p/3f1c2a00-aaaa/subagents/agent-a1.jsonl"),
            entry("projects/-p/3f1c2a00-aaaa/tool-results/x.jsonl"),
            entry("projects/-q/agent-old.jsonl"),
            entry("projects/-q/it's bad.jsonl"),
        ])
    }

    /// `@latest` is the session of the latest activity, subagents aside, within a harness when
    /// one is named (either way round); an empty scope is no session.
    #[test]
    fn latest_is_the_newest_session() {
        let mut sessions = all();
        for s in &mut sessions {
            s.entry.mtime = match s.id.as_str() {
                "3f1c2a00-aaaa" => 100,
                "3f1c2b00-bbbb" => 200,
                _ => 300,
            };
        }
        let latest = SessionQuery::parse("@latest").unwrap();
        assert!(latest.is_latest() && latest.harness.is_none());
        assert_eq!(resolve(&sessions, &latest).unwrap().id, "3f1c2b00-bbbb");
        for text in ["@latest/claude", "claude/@latest"] {
            let query = SessionQuery::parse(text).unwrap();
            assert_eq!(query.harness, harness::by_name("claude"), "{text}");
            assert_eq!(resolve(&sessions, &query).unwrap().id, "3f1c2b00-bbbb");
        }
        let codex = SessionQuery::parse("@latest/codex").unwrap();
        assert_eq!(
            resolve(&sessions, &codex),
            Err(ResolveError::NotFound("@latest".into()))
        );
        assert!(matches!(
            SessionQuery::parse("@latest/nope"),
            Err(ResolveError::UnknownHarness(_))
        ));
        assert!(matches!(
            SessionQuery::parse("@latestx"),
            Err(ResolveError::InvalidId(_))
        ));
    }

    #[test]
    fn layout_rule() {
        let ids: Vec<String> = all().into_iter().map(|s| s.id).collect();
        assert_eq!(
            ids,
            ["3f1c2a00-aaaa", "3f1c2a00-aaaa+agent-a1", "3f1c2b00-bbbb",]
        );
        // A 2.0.x subagent file at a project's root is named by the parent inside it.
        let old = entry("projects/-q/agent-old.jsonl");
        let listed = [old.clone()];
        assert_eq!(harness::named_inside(&listed).count(), 1);
        let head = br#"{"parentUuid":null,"isSidechain":true,"sessionId":"3f1c2a00-aaaa","agentId":"old","type":"user","message":{"#;
        let named = harness::session_from_head(&old, head).unwrap();
        assert_eq!(named.id, "3f1c2a00-aaaa+agent-old");
        assert_eq!(named.agent.as_deref(), Some("old"));
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
        assert!(resolve(&s, &q("3f1c2a00")).is_ok());
        // Under 6 characters only an exact id matches; a shorter prefix says so.
        let err = resolve(&s, &q("3f1c2")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "`3f1c2` is too short for a session id prefix: give at least 6 characters (or the whole id)"
        );
        assert!(matches!(
            resolve(&s, &q("3f1c20")),
            Err(ResolveError::NotFound(_))
        ));
        let err = resolve(&s, &q("3f1c20")).unwrap_err();
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
    fn unique_prefixes_are_at_least_six_characters() {
        let ids = [
            "3f1c2a00-aaaa",
            "3f1c2a11-bbbb",
            "9e",
            "3f1c2a00-aaaa+agent-a1",
            "abcdefgh",
        ];
        // An id that begins another (a subagent's) is told apart by being whole.
        assert_eq!(unique_prefix_lens(&ids), [13, 7, 2, 14, 6]);
        assert_eq!(unique_prefix_lens(&[]), Vec::<usize>::new());
    }

    #[test]
    fn ambiguous_prefix_lists_candidates() {
        let s = harness::sessions(&[
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
