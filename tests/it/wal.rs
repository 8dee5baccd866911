//! The engine's WAL validation against write-ahead logs that SQLite itself wrote: the engine
//! crate cannot link SQLite (it stays pure), so these tests live here.

use clankie_engine::wal::{HEADER, valid_prefix};

/// A WAL-mode database in a temporary directory with `commits` transactions of one row each
/// still in its WAL; returns the WAL's bytes.
fn wal_with(commits: usize) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    conn.execute_batch("CREATE TABLE t (x TEXT)").unwrap();
    for i in 0..commits {
        conn.execute("INSERT INTO t VALUES (?1)", [format!("row {i}")])
            .unwrap();
    }
    let wal = std::fs::read(dir.path().join("t.db-wal")).unwrap();
    drop(conn);
    wal
}

#[test]
fn a_whole_wal_is_valid_to_its_end() {
    let wal = wal_with(3);
    assert!(wal.len() > HEADER);
    assert_eq!(valid_prefix(&wal), wal.len());
}

#[test]
fn a_torn_or_damaged_tail_is_cut_at_the_last_whole_commit() {
    let wal = wal_with(3);
    let whole = valid_prefix(&wal);
    // Cut anywhere inside the last frame: the valid prefix ends before it.
    let last_commit = valid_prefix(&wal[..wal.len() - 1]);
    assert!(last_commit < whole && last_commit > HEADER);
    for cut in [wal.len() - 1, wal.len() - 100, last_commit + 1] {
        assert_eq!(valid_prefix(&wal[..cut]), last_commit, "cut at {cut}");
    }
    // A changed byte in the last frame's page breaks its checksum.
    let mut damaged = wal.clone();
    *damaged.last_mut().unwrap() ^= 1;
    assert_eq!(valid_prefix(&damaged), last_commit);
    // A frame with other salts (left over from before a restart) ends the log.
    let mut stale = wal.clone();
    stale[last_commit + 8] ^= 1;
    assert_eq!(valid_prefix(&stale), last_commit);
}

#[test]
fn no_header_or_a_bad_one_is_nothing() {
    let wal = wal_with(1);
    assert_eq!(valid_prefix(&wal[..HEADER - 1]), 0);
    assert_eq!(valid_prefix(&[]), 0);
    let mut bad = wal.clone();
    bad[20] ^= 1; // a salt, under the header checksum
    assert_eq!(valid_prefix(&bad), 0);
    bad = wal;
    bad[0] = 0;
    assert_eq!(valid_prefix(&bad), 0);
}
