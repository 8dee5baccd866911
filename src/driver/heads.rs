//! What `ls` shows of a session beyond its file: a title and the working directory, from the
//! first bytes of its transcript (or its database row). Only the rows shown are read.

use super::{Reader, source_ctx};
use clankie_engine::harness::{self, Source};
use clankie_engine::session::SessionFile;
use clankie_host::{FileRef, Host};
use clankie_model::ByteRange;
use clankie_model::limits::LS_HEAD_BYTES;

/// A session's title and working directory, each when found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionHead {
    pub title: Option<String>,
    pub cwd: Option<String>,
    /// The version of the CLI that wrote the session, where its transcript records it.
    pub writer_version: Option<String>,
}

impl<H: Host> Reader<'_, H> {
    /// The heads of `sessions`, in their order: the first [`LS_HEAD_BYTES`] of every
    /// transcript, read in one batch ([`Host::read_many`]: few round trips), then one read of a
    /// sidecar where the harness keeps the directory there, one query per database row. A
    /// session that cannot be read has an empty head: `ls` still lists it.
    pub async fn session_heads(&self, sessions: &[SessionFile]) -> Vec<SessionHead> {
        let batched: Vec<usize> = (0..sessions.len())
            .filter(|&i| reads_a_head(&sessions[i]))
            .collect();
        let reads: Vec<(FileRef, Vec<ByteRange>)> = batched
            .iter()
            .map(|&i| {
                let entry = &sessions[i].entry;
                // Cut at the listed size: a small session costs its size in the batch.
                let range = ByteRange::new(0, LS_HEAD_BYTES.min(entry.size));
                (super::file_ref(entry), vec![range])
            })
            .collect();
        let mut firsts: Vec<Option<Vec<u8>>> = vec![None; sessions.len()];
        // A batch that fails as a whole leaves each head to its own read below.
        if let Ok(results) = self.host.read_many(&reads).await {
            for ((&i, (_, ranges)), result) in batched.iter().zip(&reads).zip(results) {
                let Ok(result) = result else { continue };
                // A file that grew past a cut read is read again whole-head.
                if ranges[0].len < LS_HEAD_BYTES && result.size > ranges[0].len {
                    continue;
                }
                firsts[i] = Some(result.chunks.concat());
            }
        }
        let mut heads = Vec::with_capacity(sessions.len());
        for (session, first) in sessions.iter().zip(firsts) {
            heads.push(self.session_head(session, first).await.unwrap_or_default());
        }
        heads
    }

    /// One session's head; `first`, when given, is its transcript's first bytes, read already.
    async fn session_head(
        &self,
        session: &SessionFile,
        first: Option<Vec<u8>>,
    ) -> Option<SessionHead> {
        let harness = session.harness();
        // A session of OpenCode's pre-1.2 tree is a file of that tree, not a database row.
        if harness.is_sqlite() && harness::source(session) == Source::Database {
            let snapshot = self.databases.load(self.host, &session.entry).await.ok()?;
            return Some(SessionHead {
                title: snapshot.session_title(&session.id).await.ok().flatten(),
                cwd: snapshot.session_cwd(&session.id).await.ok().flatten(),
                writer_version: None,
            });
        }
        // A compressed transcript's first bytes say nothing until all of it is decompressed.
        if harness::source(session) == Source::ZstdLines {
            return None;
        }
        let file = FileRef {
            harness,
            root: session.entry.root.to_vec(),
            rel: session.entry.rel.clone(),
        };
        let range = [ByteRange::new(0, LS_HEAD_BYTES)];
        let head = match first {
            Some(head) => head,
            None => self.host.read(&file, &range).await.ok()?.chunks.concat(),
        };
        let title = match harness::source(session) {
            Source::Lines => harness::session_title(&source_ctx(self.host.name(), session), &head),
            // A document's head (a tree's main file's) is not whole lines: only a title the
            // harness finds there.
            Source::Document | Source::Tree => harness::native_title(harness, &head),
            _ => None,
        };
        let cwd = match harness::cwd_source(harness) {
            None => harness::session_cwd(harness, &head),
            Some(sidecar) => {
                let rel = super::resume::sidecar_rel(&session.entry.rel, sidecar);
                let sidecar = FileRef { rel, ..file };
                match self.host.read(&sidecar, &range).await {
                    Ok(result) => harness::session_cwd(harness, &result.chunks.concat()),
                    Err(_) => None,
                }
            }
        }
        .or_else(|| harness::cwd_from_location(session));
        let writer_version = harness::writer_version(harness, &head);
        Some(SessionHead {
            title,
            cwd,
            writer_version,
        })
    }
}

/// Whether a session's head is the first bytes of its own file (not a database row, not a
/// compressed transcript, whose first bytes say nothing).
fn reads_a_head(session: &SessionFile) -> bool {
    !session.harness().is_sqlite() && harness::source(session) != Source::ZstdLines
}
