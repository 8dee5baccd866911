//! What the server keeps of a session between calls, so that an agent that polls it is cheap:
//! where the session is (its resolved file: a warm read lists nothing), and how many bytes its
//! records take (a warm tail asks for its page in one read, sized by `limit`). A kept
//! resolution is only a shortcut: a read through it that fails for any reason but the host's
//! is done again from a fresh resolution, and a file rewritten in place is caught by the
//! cursor's hashes as for any read.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use clankie_engine::session::SessionFile;
use clankie_host::{AnyHost, FileRef, FirstRead, Found, Host, HostError};
use clankie_model::{ByteRange, Listing, ReadResult, RootSpec};

/// Sessions kept per host; the least recently read goes first (a poller reads a few).
const MAX_KEPT_SESSIONS: usize = 64;

/// A session as the last read left it.
#[derive(Debug, Clone)]
pub(crate) struct Kept {
    /// The resolution: root, path, harness, id, and the size it had (where a tail starts).
    pub session: SessionFile,
    /// The bytes one record took in the last tail read that had to widen (an overestimate:
    /// the planner widens by whole chunks), for the next tail's window.
    pub bytes_per_record: Option<u64>,
}

impl Kept {
    /// How far before the end the next tail of `limit` records starts reading, when known.
    pub(crate) fn tail_window(&self, limit: usize) -> Option<u64> {
        self.bytes_per_record
            .map(|per| per.saturating_mul(limit as u64))
    }
}

/// The kept sessions of one host, by the session argument the calls gave.
#[derive(Debug, Default)]
pub(crate) struct KeptSessions {
    /// Least recently read first.
    entries: Mutex<Vec<(String, Kept)>>,
}

impl KeptSessions {
    pub(crate) fn get(&self, key: &str) -> Option<Kept> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, kept)| kept.clone())
    }

    /// Keeps `kept` for `key` as the most recently read, dropping the least recent beyond the
    /// bound.
    pub(crate) fn keep(&self, key: &str, kept: Kept) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|(k, _)| k != key);
        if entries.len() >= MAX_KEPT_SESSIONS {
            entries.remove(0);
        }
        entries.push((key.to_string(), kept));
    }

    pub(crate) fn forget(&self, key: &str) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|(k, _)| k != key);
    }
}

/// A host that counts the reads of one page and the bytes they brought back (a read answered
/// with a session's resolution included), so that the next tail of the session can be sized.
/// Listings and batched side reads are not counted: they are not the page's.
#[derive(Debug)]
pub(crate) struct Metered<'h> {
    host: &'h AnyHost,
    reads: AtomicU64,
    bytes: AtomicU64,
}

impl<'h> Metered<'h> {
    pub(crate) fn new(host: &'h AnyHost) -> Metered<'h> {
        Metered {
            host,
            reads: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }

    /// Reads done, and the bytes they brought back.
    pub(crate) fn counted(&self) -> (u64, u64) {
        (
            self.reads.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        )
    }

    fn count(&self, result: &ReadResult) {
        let bytes: usize = result.chunks.iter().map(Vec::len).sum();
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

impl Host for Metered<'_> {
    fn name(&self) -> &str {
        self.host.name()
    }

    async fn list(&self, roots: &[RootSpec]) -> Result<Listing, HostError> {
        self.host.list(roots).await
    }

    async fn read(&self, file: &FileRef, ranges: &[ByteRange]) -> Result<ReadResult, HostError> {
        let result = self.host.read(file, ranges).await?;
        self.count(&result);
        Ok(result)
    }

    async fn read_many(
        &self,
        reads: &[(FileRef, Vec<ByteRange>)],
    ) -> Result<Vec<Result<ReadResult, HostError>>, HostError> {
        self.host.read_many(reads).await
    }

    async fn find_and_read(
        &self,
        roots: &[RootSpec],
        id: &str,
        first: &FirstRead,
    ) -> Result<Found, HostError> {
        let found = self.host.find_and_read(roots, id, first).await?;
        if let Some((_, Ok(result))) = &found.read {
            self.count(result);
        }
        Ok(found)
    }
}

/// What one record of a tail page cost: the bytes its reads brought back over its records.
/// `None` when the page says nothing about the next one's window: it read the whole file (no
/// `older` records), or had no records.
pub(crate) fn bytes_per_record(bytes: u64, records: usize, older: bool) -> Option<u64> {
    (older && records > 0).then(|| bytes.div_ceil(records as u64).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clankie_model::FileEntry;

    fn kept(rel: &str) -> Kept {
        Kept {
            session: SessionFile {
                id: rel.to_string(),
                agent: None,
                entry: FileEntry {
                    harness: clankie_engine::harness::by_name("claude").unwrap(),
                    root: b"/r".to_vec().into(),
                    rel: rel.as_bytes().to_vec(),
                    size: 10,
                    mtime: 0,
                },
            },
            bytes_per_record: Some(100),
        }
    }

    #[test]
    fn the_least_recently_read_goes_first() {
        let sessions = KeptSessions::default();
        for i in 0..MAX_KEPT_SESSIONS {
            sessions.keep(&i.to_string(), kept(&i.to_string()));
        }
        // Read again: now the most recent.
        sessions.keep("0", kept("0"));
        sessions.keep("new", kept("new"));
        assert!(sessions.get("0").is_some());
        assert!(sessions.get("1").is_none(), "the least recent was dropped");
        assert_eq!(sessions.get("new").unwrap().session.id, "new");
        sessions.forget("new");
        assert!(sessions.get("new").is_none());
    }

    #[test]
    fn a_window_is_sized_by_the_limit() {
        assert_eq!(kept("a").tail_window(50), Some(5000));
        assert_eq!(bytes_per_record(1000, 3, true), Some(334));
        assert_eq!(bytes_per_record(1000, 3, false), None);
        assert_eq!(bytes_per_record(1000, 0, true), None);
    }
}
