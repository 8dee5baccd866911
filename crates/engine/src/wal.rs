//! SQLite write-ahead logs, read by a reader that never opens them with SQLite: which frames
//! hold the newest committed version of each page. A reader that fetches a WAL piece by piece
//! (its new part on each load) must not use a frame it caught half written, nor one of an
//! unfinished transaction; [`WalIndex`] stops where SQLite itself stops reading: at the last
//! frame that completes a transaction and whose checksum chain holds. Pure: bytes in, page
//! numbers and offsets out. Format: <https://www.sqlite.org/fileformat2.html#walformat>.

/// The WAL header's size in bytes.
pub const HEADER: usize = 32;
/// A frame header's size in bytes (a page follows it).
pub const FRAME_HEADER: usize = 24;

/// What a valid WAL header says, and how far its frames have been checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalIndex {
    big_endian: bool,
    page_size: usize,
    /// Checkpoint sequence and both salts (header bytes 12..24): a reader's snapshot holds
    /// while they do not change.
    stamp: [u8; 12],
    /// The checksum chain at [`WalIndex::valid_len`].
    sum: (u32, u32),
    valid_len: u64,
    db_pages: Option<u32>,
}

/// The frames of one [`WalIndex::extend`] that a transaction completed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Committed {
    /// (page number, offset of the page's bytes in the slice given), in WAL order: a later
    /// entry for the same page is newer.
    pub pages: Vec<(u32, usize)>,
    /// How many bytes of the slice the completed transactions take; the rest (a transaction
    /// still being written) must be given again, with what follows it, on the next call.
    pub consumed: usize,
}

fn word(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl WalIndex {
    /// The index of a WAL whose first [`HEADER`] bytes are `header`, before any frame; `None`
    /// when the header is not valid (SQLite then ignores the whole file).
    pub fn new(header: &[u8]) -> Option<WalIndex> {
        let header = header.get(..HEADER)?;
        let big_endian = match word(header, 0) {
            0x377f_0682 => false,
            0x377f_0683 => true,
            _ => return None,
        };
        let page_size = word(header, 8) as usize;
        if !(512..=65536).contains(&page_size) || !page_size.is_power_of_two() {
            return None;
        }
        let sum = checksum((0, 0), &header[..24], big_endian);
        if sum != (word(header, 24), word(header, 28)) {
            return None;
        }
        let mut stamp = [0; 12];
        stamp.copy_from_slice(&header[12..24]);
        Some(WalIndex {
            big_endian,
            page_size,
            stamp,
            sum,
            valid_len: HEADER as u64,
            db_pages: None,
        })
    }

    /// The database page size the WAL's frames carry.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Checkpoint sequence and salts (header bytes 12..24).
    pub fn stamp(&self) -> &[u8; 12] {
        &self.stamp
    }

    /// Where the frames checked so far end: the end of the last completed transaction, where
    /// the next [`WalIndex::extend`] starts.
    pub fn valid_len(&self) -> u64 {
        self.valid_len
    }

    /// The database's size in pages after the last completed transaction, if any completed.
    pub fn db_pages(&self) -> Option<u32> {
        self.db_pages
    }

    /// The size of one frame, header and page.
    pub fn frame_len(&self) -> usize {
        FRAME_HEADER + self.page_size
    }

    /// Checks the frames in `bytes`, which are the WAL's bytes from [`WalIndex::valid_len`]
    /// on, and returns the pages of the transactions they complete. Stops at the first frame
    /// with other salts, a broken checksum chain or a partial frame; frames after the last
    /// commit frame are left for the next call.
    pub fn extend(&mut self, bytes: &[u8]) -> Committed {
        let mut committed = Committed::default();
        let mut pending = Vec::new();
        let mut sum = self.sum;
        let mut at = 0;
        let frame_len = self.frame_len();
        while let Some(frame) = bytes.get(at..at + frame_len) {
            if frame[8..16] != self.stamp[4..12] {
                break;
            }
            sum = checksum(sum, &frame[..8], self.big_endian);
            sum = checksum(sum, &frame[FRAME_HEADER..], self.big_endian);
            if sum != (word(frame, 16), word(frame, 20)) {
                break;
            }
            pending.push((word(frame, 0), at + FRAME_HEADER));
            at += frame_len;
            // A frame with a database size after it ends a transaction.
            let db_pages = word(frame, 4);
            if db_pages != 0 {
                committed.pages.append(&mut pending);
                committed.consumed = at;
                self.sum = sum;
                self.db_pages = Some(db_pages);
            }
        }
        self.valid_len += committed.consumed as u64;
        committed
    }
}

/// The length of the prefix of `wal` that SQLite would read: the header and every frame up to
/// the last commit frame of an unbroken checksum chain with the header's salts. 0 when the
/// header itself is not valid (SQLite then ignores the whole file).
pub fn valid_prefix(wal: &[u8]) -> usize {
    let Some(mut index) = WalIndex::new(wal) else {
        return 0;
    };
    index.extend(&wal[HEADER..]);
    index.valid_len() as usize
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

    const PAGE: usize = 512;

    /// A WAL as SQLite writes it (little-endian checksums), built frame by frame.
    struct Writer {
        bytes: Vec<u8>,
        sum: (u32, u32),
        salts: [u8; 8],
    }

    impl Writer {
        fn new(salts: [u8; 8]) -> Writer {
            let mut header = Vec::new();
            header.extend_from_slice(&0x377f_0682u32.to_be_bytes());
            header.extend_from_slice(&3_007_000u32.to_be_bytes());
            header.extend_from_slice(&(PAGE as u32).to_be_bytes());
            header.extend_from_slice(&7u32.to_be_bytes()); // checkpoint sequence
            header.extend_from_slice(&salts);
            let sum = checksum((0, 0), &header, false);
            header.extend_from_slice(&sum.0.to_be_bytes());
            header.extend_from_slice(&sum.1.to_be_bytes());
            Writer {
                bytes: header,
                sum,
                salts,
            }
        }

        /// A frame of page `page` filled with `fill`; `db_pages` non-zero makes it a commit.
        fn frame(&mut self, page: u32, db_pages: u32, fill: u8) -> &mut Writer {
            let mut head = Vec::new();
            head.extend_from_slice(&page.to_be_bytes());
            head.extend_from_slice(&db_pages.to_be_bytes());
            head.extend_from_slice(&self.salts);
            let data = vec![fill; PAGE];
            self.sum = checksum(self.sum, &head[..8], false);
            self.sum = checksum(self.sum, &data, false);
            head.extend_from_slice(&self.sum.0.to_be_bytes());
            head.extend_from_slice(&self.sum.1.to_be_bytes());
            self.bytes.extend_from_slice(&head);
            self.bytes.extend_from_slice(&data);
            self
        }
    }

    fn pages(bytes: &[u8], committed: &Committed) -> Vec<(u32, u8)> {
        committed
            .pages
            .iter()
            .map(|&(page, at)| (page, bytes[at]))
            .collect()
    }

    #[test]
    fn only_completed_transactions_count() {
        let mut wal = Writer::new([1, 2, 3, 4, 5, 6, 7, 8]);
        wal.frame(2, 0, 0xa).frame(3, 5, 0xb).frame(2, 0, 0xc);
        let mut index = WalIndex::new(&wal.bytes).unwrap();
        let frames = &wal.bytes[HEADER..];
        let done = index.extend(frames);
        assert_eq!(pages(frames, &done), [(2, 0xa), (3, 0xb)]);
        assert_eq!(done.consumed, 2 * (FRAME_HEADER + PAGE));
        assert_eq!(index.db_pages(), Some(5));
        assert_eq!(index.valid_len() as usize, HEADER + done.consumed);
        assert_eq!(valid_prefix(&wal.bytes), HEADER + done.consumed);

        // The open transaction commits: a later call, from where the last one stopped, gets it.
        wal.frame(4, 6, 0xd);
        let rest = &wal.bytes[index.valid_len() as usize..];
        let done = index.extend(rest);
        assert_eq!(pages(rest, &done), [(2, 0xc), (4, 0xd)]);
        assert_eq!(index.db_pages(), Some(6));
        assert_eq!(index.valid_len() as usize, wal.bytes.len());
    }

    #[test]
    fn a_torn_frame_or_stale_salts_end_the_log() {
        let mut wal = Writer::new([9; 8]);
        wal.frame(2, 3, 0xa).frame(3, 3, 0xb);
        // A frame of an earlier generation of the log (other salts) after the valid ones.
        let mut stale = Writer::new([8; 8]);
        stale.frame(1, 0, 0).frame(1, 0, 0).frame(5, 9, 0xee);
        let mut bytes = wal.bytes.clone();
        bytes.extend_from_slice(&stale.bytes[HEADER + 2 * (FRAME_HEADER + PAGE)..]);
        let mut index = WalIndex::new(&bytes).unwrap();
        let done = index.extend(&bytes[HEADER..]);
        assert_eq!(done.pages.len(), 2);
        assert_eq!(index.db_pages(), Some(3));

        // A commit frame whose page was torn (one byte differs) is not used.
        let mut torn = wal.bytes.clone();
        let last = torn.len() - 1;
        torn[last] ^= 1;
        let mut index = WalIndex::new(&torn).unwrap();
        let done = index.extend(&torn[HEADER..]);
        assert_eq!(done.pages, [(2, FRAME_HEADER)]);
        // A partial frame waits for the rest.
        let mut index = WalIndex::new(&wal.bytes).unwrap();
        let done = index.extend(&wal.bytes[HEADER..wal.bytes.len() - 1]);
        assert_eq!(done.pages.len(), 1);
    }

    #[test]
    fn a_bad_header_is_no_log() {
        let wal = Writer::new([1; 8]);
        assert!(WalIndex::new(&wal.bytes[..HEADER - 1]).is_none());
        let mut bad = wal.bytes.clone();
        bad[20] ^= 1;
        assert!(WalIndex::new(&bad).is_none());
        assert_eq!(valid_prefix(&bad), 0);
        let index = WalIndex::new(&wal.bytes).unwrap();
        assert_eq!(index.stamp()[..4], 7u32.to_be_bytes());
        assert_eq!(index.page_size(), PAGE);
    }
}
