//! SQLite write-ahead logs: how much of a copied WAL SQLite would use. A reader that keeps a
//! copy and later fetches only the WAL's new bytes must not keep a frame it caught half
//! written; this finds the end of the last frame that completes a transaction and whose
//! checksum chain holds, which is where SQLite itself stops reading. Pure: bytes in, a length
//! out. Format: <https://www.sqlite.org/fileformat2.html#walformat>.

/// The WAL header's size.
/// The WAL header's size in bytes.
pub const HEADER: usize = 32;
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
