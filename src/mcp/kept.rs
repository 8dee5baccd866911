//! What the server keeps of a session between calls, so that an agent that polls it is cheap:
//! where the session is (its resolved file: a warm read lists nothing), and how many bytes its
//! records take (a warm tail asks for its page in one read, sized by `limit`). A kept
//! resolution is only a shortcut: a read through it that fails because the file is gone or is
//! no longer one to read is done again from a fresh resolution, and a file rewritten in place
//! is caught by the cursor's hashes as for any read.

use std::sync::Mutex;

use clankie_engine::session::SessionFile;

/// Sessions kept per host; the least recently read goes first (a poller reads a few).
const MAX_KEPT_SESSIONS: usize = 64;

/// A session as the last read left it.
#[derive(Debug, Clone)]
pub(crate) struct Kept {
    /// The resolution: root, path, harness, id, and the size it had (where a tail starts).
    pub session: SessionFile,
    /// The bytes one record took in the last tail page (`Reader::last_tail_bytes` over its
    /// records), for the next tail's window.
    pub bytes_per_record: Option<u64>,
}

impl Kept {
    /// How far before the end the next tail of `limit` records starts reading, when known:
    /// what `limit` records took last time, a quarter more for records longer than those, and
    /// a block. (The read also goes on past the end last seen, for records written since.)
    pub(crate) fn tail_window(&self, limit: usize) -> Option<u64> {
        self.bytes_per_record.map(|per| {
            let page = per.saturating_mul(limit as u64);
            page.saturating_add(page / 4).saturating_add(4096)
        })
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

/// What one record of a tail page took: the bytes the page spans over its records (`None`
/// for an empty page).
pub(crate) fn bytes_per_record(page_bytes: u64, records: usize) -> Option<u64> {
    (records > 0).then(|| page_bytes.div_ceil(records as u64).max(1))
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
                    inode: None,
                    ctime: None,
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
        assert_eq!(kept("a").tail_window(40), Some(4000 + 1000 + 4096));
        assert_eq!(bytes_per_record(1000, 3), Some(334));
        assert_eq!(bytes_per_record(1000, 0), None);
    }
}
