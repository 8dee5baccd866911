//! SQLite write-ahead logs: how much of a copied WAL SQLite would use. A reader that keeps a
//! copy and later fetches only the WAL's new bytes must not keep a frame it caught half
//! written; this finds the end of the last frame that completes a transaction and whose
//! checksum chain holds, which is where SQLite itself stops reading. Pure: bytes in, a length
//! out. Format: <https://www.sqlite.org/fileformat2.html#walformat>.

/// The WAL header's size.
const HEADER: usize = 32;
/// A frame header's size (a page follows it).
const FRAME_HEADER: usize = 24;

/// The length of the prefix of `wal` that SQLite would read: the header and every frame up to
/// the last commit frame of an unbroken checksum chain with the header's salts. 0 when the
/// header itself is not valid (SQLite then ignores the whole file).
pub fn valid_prefix(wal: &[u8]) -> usize {
    let Some(header) = wal.get(..HEADER) else {
        return 0;
    };
    let word = |b: &[u8], at: usize| u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let big_endian = match word(header, 0) {
        0x377f_0682 => false,
        0x377f_0683 => true,
        _ => return 0,
    };
    let page_size = word(header, 8) as usize;
    if !(512..=65536).contains(&page_size) || !page_size.is_power_of_two() {
        return 0;
    }
    let mut sum = checksum((0, 0), &header[..24], big_endian);
    if sum != (word(header, 24), word(header, 28)) {
        return 0;
    }
    let salts = &header[16..24];
    let mut valid = HEADER;
    let mut at = HEADER;
    while let Some(frame) = wal.get(at..at + FRAME_HEADER + page_size) {
        if &frame[8..16] != salts {
            break;
        }
        sum = checksum(sum, &frame[..8], big_endian);
        sum = checksum(sum, &frame[FRAME_HEADER..], big_endian);
        if sum != (word(frame, 16), word(frame, 20)) {
            break;
        }
        at += frame.len();
        // A frame with a database size after it ends a transaction.
        if word(frame, 4) != 0 {
            valid = at;
        }
    }
    valid
}

/// SQLite's WAL checksum, continued from `sum` over `data` (a multiple of 8 bytes), reading
/// 32-bit words in the byte order the header's magic names.
fn checksum(sum: (u32, u32), data: &[u8], big_endian: bool) -> (u32, u32) {
    let (mut s0, mut s1) = sum;
    for pair in data.chunks_exact(8) {
        let word = |b: &[u8]| {
            let b = [b[0], b[1], b[2], b[3]];
            if big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        s0 = s0.wrapping_add(word(&pair[..4])).wrapping_add(s1);
        s1 = s1.wrapping_add(word(&pair[4..])).wrapping_add(s0);
    }
    (s0, s1)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
