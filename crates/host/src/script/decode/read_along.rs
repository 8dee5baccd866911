//! The files a listing reads along ([`crate::script::posix::list_reading_script`]): its
//! stream taken apart into lines and read blocks ([`split_read_along`]), and each block's
//! files answered only when every check holds ([`answer_blocks`]).

use memchr::memmem;

use clankie_model::{FileEntry, Listing, ReadResult};

use super::fields::{DIRECTORY, FILE_TYPE, REGULAR_FILE, hex_mode, parse_u64, split_word};
use crate::{FileEnds, FileRef};

/// A listing that reads along, taken apart (after its `<nonce>:RL` line): its lines (`\r`
/// kept, empty ones included), its read blocks (those among the lines, then those after a
/// `<nonce>:RD` line that follows `<nonce>:LE`), and whether the listing is whole: its `LE`
/// line came, after complete lines and blocks only.
pub(in crate::script) struct ReadAlongParts<'a> {
    pub(super) lines: Vec<&'a [u8]>,
    pub(in crate::script) blocks: Vec<ReadBlock<'a>>,
    pub(super) whole: bool,
}

pub(in crate::script) fn split_read_along<'a>(
    nonce: &str,
    mut rest: &'a [u8],
) -> ReadAlongParts<'a> {
    let markers = BlockMarkers::new(nonce);
    let listing_end = format!("{nonce}:LE");
    let reads_after = format!("{nonce}:RD\n");
    let mut parts = ReadAlongParts {
        lines: Vec::new(),
        blocks: Vec::new(),
        whole: false,
    };
    while !rest.is_empty() {
        if rest.starts_with(b"RD ") || rest.starts_with(b"RF ") {
            // A block cut off, or one that cannot be taken apart, leaves the listing unfinished.
            let Some((block, after)) = next_block(&markers, rest) else {
                return parts;
            };
            parts.blocks.push(block);
            rest = after;
            continue;
        }
        let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
            return parts;
        };
        let line = &rest[..nl];
        rest = &rest[nl + 1..];
        if line == listing_end.as_bytes() {
            parts.whole = true;
            break;
        }
        parts.lines.push(line.strip_suffix(b"\r").unwrap_or(line));
    }
    // The second walk's blocks (`statc`), up to one cut off.
    if let Some(mut blocks) = rest.strip_prefix(reads_after.as_bytes()) {
        while let Some((block, after)) = next_block(&markers, blocks) {
            parts.blocks.push(block);
            blocks = after;
        }
    } else if !rest.is_empty() {
        // Anything else after the listing: a reply this script does not send.
        parts.lines.push(rest);
    }
    parts
}

/// One `stat -c '%i %s %f %n'` line of a read block: size, mode, name (`./<path>`).
pub(in crate::script) fn stat_line(line: &[u8]) -> Option<(u64, u32, &[u8])> {
    let (inode, rest) = split_word(line);
    let (size, rest) = split_word(rest);
    let (mode, name) = split_word(rest);
    parse_u64(inode)?;
    let size = parse_u64(size)?;
    Some((size, hex_mode(mode)?, name))
}

/// The nonce's markers inside a read block: after the files' bytes, and at its end.
struct BlockMarkers {
    second_stat: memmem::Finder<'static>,
    end: memmem::Finder<'static>,
}

impl BlockMarkers {
    fn new(nonce: &str) -> BlockMarkers {
        let finder = |text: String| memmem::Finder::new(text.as_bytes()).into_owned();
        BlockMarkers {
            second_stat: finder(format!("\n{nonce}:S2\n")),
            end: finder(format!("\n{nonce}:E\n")),
        }
    }
}

/// One read block ([`posix::list_reading_script`]), taken apart but not yet checked.
///
/// [`posix::list_reading_script`]: crate::script::posix::list_reading_script
pub(in crate::script) struct ReadBlock<'a> {
    root: u64,
    pub(in crate::script) dirs: u64,
    files: u64,
    /// What the sizes and the types after the read are checked against.
    pub(in crate::script) before: SizesBefore<'a>,
    /// The files' bytes, up to the `S2` marker.
    data: &'a [u8],
    /// The `stat` after the read: its text, up to the `E` marker.
    pub(in crate::script) second: &'a [u8],
    /// An `RE` block's lengths: each file's first `head` bytes and its last bytes are its
    /// data.
    ends: Option<BlockEnds>,
}

/// What an `RE` block sends of each file: its first `head` bytes, and its last bytes, as
/// many as its run says (`runs`: a tail length and how many files, in the files' order,
/// send it; the counts add up to the block's files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::script) struct BlockEnds {
    head: u64,
    runs: Vec<(u64, u64)>,
}

impl BlockEnds {
    /// The header's lengths after its file count: `<head> <tail>` (every file the same), or
    /// `<head>` and runs of `<tail>:<count>` whose counts add up to `files`.
    fn parse(words: &[u8], files: u64) -> Option<BlockEnds> {
        let (head, rest) = split_word(words);
        let head = parse_u64(head)?;
        let mut runs = Vec::new();
        let mut counted = 0u64;
        for word in rest.split(|&b| b == b' ') {
            match word.iter().position(|&b| b == b':') {
                None if runs.is_empty() && counted == 0 && word == rest => {
                    runs.push((parse_u64(word)?, files));
                    counted = files;
                }
                Some(colon) => {
                    let count = parse_u64(&word[colon + 1..])?;
                    runs.push((parse_u64(&word[..colon])?, count));
                    counted = counted.checked_add(count)?;
                }
                None => return None,
            }
        }
        (counted == files).then_some(BlockEnds { head, runs })
    }

    /// Each file's tail length, in the files' order.
    fn tails(&self) -> impl Iterator<Item = u64> + '_ {
        self.runs
            .iter()
            .flat_map(|&(tail, count)| std::iter::repeat_n(tail, count as usize))
    }

    /// The bytes the block sends of a file of `size` bytes whose tail length is `tail`.
    fn sent_of(&self, size: u64, tail: u64) -> u64 {
        size.min(self.head).saturating_add(size.min(tail))
    }
}

/// Where a read block's sizes before its read come from.
pub(in crate::script) enum SizesBefore<'a> {
    /// An `RD` block's own `stat` before the read, which the one after must equal byte for
    /// byte (inodes, sizes, modes).
    FirstStat {
        /// Its lines, as many as the block says (fewer where it sent fewer).
        lines: Vec<&'a [u8]>,
        /// Its text, to compare with the second's.
        text: &'a [u8],
    },
    /// An `RF` block's: the listing's `F` lines (`find`'s `lstat` before it handed the files
    /// on), which every file's size after the read must equal. No inode is compared: a file
    /// replaced by one of the same size in between is not seen (the bytes are either one's).
    Listing,
}

/// The block at the start of `rest`, and what follows it; `None` where none starts there or it
/// is cut off (its end cannot be found).
fn next_block<'a>(markers: &BlockMarkers, rest: &'a [u8]) -> Option<(ReadBlock<'a>, &'a [u8])> {
    let nl = memchr::memchr(b'\n', rest)?;
    let (tag, words) = split_word(&rest[..nl]);
    let (k, words) = split_word(words);
    let (nd, words) = split_word(words);
    let (nf, lengths) = match tag {
        b"RE" => split_word(words),
        _ => (words, &b""[..]),
    };
    let (root, dirs, files) = (parse_u64(k)?, parse_u64(nd)?, parse_u64(nf)?);
    let ends = match tag {
        b"RE" => Some(BlockEnds::parse(lengths, files)?),
        _ => None,
    };
    let body = &rest[nl + 1..];
    let s2_len = markers.second_stat.needle().len();
    let end_len = markers.end.needle().len();
    let (before, data, after) = match tag {
        b"RD" | b"RE" => {
            // The first `stat`'s lines, as many as the block says (a `stat` that left one out
            // is caught by the sizes or the second `stat`), then the concatenation, then `S2`.
            let lines_wanted = dirs.saturating_add(files).min(body.len() as u64) as usize;
            let mut at = 0;
            let mut lines = Vec::with_capacity(lines_wanted);
            for _ in 0..lines_wanted {
                let len = memchr::memchr(b'\n', &body[at..])?;
                lines.push(&body[at..at + len]);
                at += len + 1;
            }
            let first = &body[..at.saturating_sub(1)];
            let data = &body[at..];
            // Where the first `stat` says the files end (where the marker is unless something
            // changed), else wherever the marker is.
            let file_lines = &lines[(dirs as usize).min(lines.len())..];
            let expected = match &ends {
                Some(ends) => file_lines
                    .iter()
                    .zip(ends.tails())
                    .filter_map(|(line, tail)| Some((stat_line(line)?.0, tail)))
                    .try_fold(0usize, |total, (size, tail)| {
                        total.checked_add(ends.sent_of(size, tail).try_into().ok()?)
                    }),
                None => file_lines
                    .iter()
                    .filter_map(|line| stat_line(line))
                    .try_fold(0usize, |total, (size, ..)| {
                        total.checked_add(size.try_into().ok()?)
                    }),
            };
            let s2 = markers.second_stat.needle();
            let marker = match expected {
                Some(at) if data.get(at..).is_some_and(|d| d.starts_with(s2)) => at,
                _ => markers.second_stat.find(data)?,
            };
            let after = &data[marker + s2_len..];
            let before = SizesBefore::FirstStat { lines, text: first };
            (before, &data[..marker], after)
        }
        b"RF" => {
            // No sizes before the read in the block: its bytes end at the first `S2` marker.
            let marker = markers.second_stat.find(body)?;
            (
                SizesBefore::Listing,
                &body[..marker],
                &body[marker + s2_len..],
            )
        }
        _ => return None,
    };
    let end = markers.end.needle();
    let stop = match &before {
        SizesBefore::FirstStat { text, .. }
            if after.starts_with(text)
                && after.get(text.len()..).is_some_and(|t| t.starts_with(end)) =>
        {
            text.len()
        }
        _ => markers.end.find(after)?,
    };
    let block = ReadBlock {
        root,
        dirs,
        files,
        before,
        data,
        second: &after[..stop],
        ends,
    };
    Some((block, &after[stop + end_len..]))
}

/// What the read blocks of a listing answer ([`answer_blocks`]): files read whole, and the
/// ends of larger files.
#[derive(Default)]
pub(super) struct Answered {
    pub(super) reads: Vec<(FileRef, ReadResult)>,
    pub(super) ends: Vec<(FileRef, FileEnds)>,
}

/// The files of each block that passes every check, by the listing's files they are; a block
/// that fails a check answers none of its files. A file not listed is left out of an `RD`
/// or `RE` block (its two `stat`s vouch for it) and refuses an `RF` block (the listing is its
/// only `stat` before the read). An `RE` block answers each file's ends (a file of any size
/// over `max_file`), the others each file whole (at most `max_file` bytes).
pub(super) fn answer_blocks(
    listing: &Listing,
    blocks: Vec<ReadBlock<'_>>,
    max_file: u64,
) -> Answered {
    let listed: std::collections::HashMap<(&[u8], &[u8]), &FileEntry> = listing
        .files
        .iter()
        .map(|f| ((&f.root[..], &f.rel[..]), f))
        .collect();
    let mut out = Answered::default();
    'blocks: for block in blocks {
        let by_listing = matches!(block.before, SizesBefore::Listing);
        let stat: Vec<&[u8]> = match block.before {
            SizesBefore::FirstStat { lines, text } if block.second == text => lines,
            SizesBefore::FirstStat { .. } => continue,
            SizesBefore::Listing => block.second.split(|&b| b == b'\n').collect(),
        };
        if block.dirs.checked_add(block.files) != Some(stat.len() as u64) {
            continue;
        }
        let Some(root) = usize::try_from(block.root)
            .ok()
            .and_then(|k| listing.roots.get(k))
        else {
            continue;
        };
        if !root.exists {
            continue;
        }
        let (dirs, files) = stat.split_at(block.dirs as usize);
        let mut dir_names = std::collections::HashSet::new();
        for line in dirs {
            match stat_line(line) {
                Some((_, mode, name))
                    if mode & FILE_TYPE == DIRECTORY && name.starts_with(b"./") =>
                {
                    dir_names.insert(name);
                }
                _ => continue 'blocks,
            }
        }
        let mut total = 0u64;
        let mut parsed = Vec::with_capacity(files.len());
        // Each file's tail length (an `RE` block's), in step with its `stat` line.
        let mut tails = block.ends.as_ref().map(|ends| ends.tails());
        for line in files {
            let Some((size, mode, name)) = stat_line(line) else {
                continue 'blocks;
            };
            let Some(rel) = name.strip_prefix(b"./") else {
                continue 'blocks;
            };
            let fits = match block.ends {
                Some(_) => size > max_file,
                None => size <= max_file,
            };
            if mode & FILE_TYPE != REGULAR_FILE || !fits || crate::check_relative_path(rel).is_err()
            {
                continue 'blocks;
            }
            // Every directory on the way was one (in both `stat`s of an `RD` block).
            let on_the_way = name
                .iter()
                .enumerate()
                .skip(2)
                .filter(|&(_, &b)| b == b'/')
                .all(|(i, _)| dir_names.contains(&name[..i]));
            if !on_the_way {
                continue 'blocks;
            }
            let entry = listed.get(&(&root.dir[..], rel)).copied();
            // An `RF` block's sizes before the read are the listing's.
            if by_listing && entry.is_none_or(|e| e.size != size) {
                continue 'blocks;
            }
            let tail = match tails.as_mut() {
                Some(tails) => match tails.next() {
                    Some(tail) => tail,
                    None => continue 'blocks,
                },
                None => 0,
            };
            total += match &block.ends {
                Some(ends) => ends.sent_of(size, tail),
                None => size,
            };
            parsed.push((size, rel, entry, tail));
        }
        if total != block.data.len() as u64 {
            continue;
        }
        if let Some(ends) = &block.ends {
            // Every file's head, then every file's tail.
            let heads: u64 = parsed.iter().map(|(size, ..)| (*size).min(ends.head)).sum();
            let (mut at_head, mut at_tail) = (0usize, heads as usize);
            for (size, rel, entry, tail) in parsed {
                let head = &block.data[at_head..at_head + size.min(ends.head) as usize];
                let tail = &block.data[at_tail..at_tail + size.min(tail) as usize];
                at_head += head.len();
                at_tail += tail.len();
                let Some(entry) = entry else {
                    continue;
                };
                out.ends.push((
                    FileRef {
                        harness: entry.harness,
                        root: entry.root.to_vec(),
                        rel: rel.to_vec(),
                    },
                    FileEnds {
                        size,
                        head: head.to_vec(),
                        tail: tail.to_vec(),
                    },
                ));
            }
            continue;
        }
        let mut offset = 0usize;
        for (size, rel, entry, _) in parsed {
            let bytes = &block.data[offset..offset + size as usize];
            offset += size as usize;
            let Some(entry) = entry else {
                continue;
            };
            out.reads.push((
                FileRef {
                    harness: entry.harness,
                    root: entry.root.to_vec(),
                    rel: rel.to_vec(),
                },
                ReadResult {
                    size,
                    chunks: vec![bytes.to_vec()],
                },
            ));
        }
    }
    out
}
