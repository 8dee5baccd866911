//! A batched read's reply ([`decode_read_batch`]): a `FILE` section per file, and `CAT`
//! blocks of small files read whole, each checked by its two `STAT` blocks before any of
//! its bytes are given to a file.

use clankie_model::limits::MAX_RANGES;
use clankie_model::{ByteRange, ReadResult, display_path};

use super::errors::{err_line, protocol, show};
use super::fields::{FILE_TYPE, REGULAR_FILE, hex_mode, parse_u64, split_word};
use super::frame::{NOISE_SLACK, body_lines, parse_frame};
use super::payload::{Encoding, PayloadError, decode_payload};
use super::ranges::{decode_read_section, read_reply_limit, within_read_limit};
use crate::{FileRef, HostError, MAX_READ_BYTES};

/// The largest reply to a batched read: the sum of each file's bound.
pub fn read_many_reply_limit(reads: &[(FileRef, Vec<ByteRange>)]) -> usize {
    reads
        .iter()
        .map(|(_, ranges)| read_reply_limit(ranges).saturating_sub(NOISE_SLACK) + 64)
        .fold(NOISE_SLACK, usize::saturating_add)
}

/// The length from a file's start that `ranges` cover, when one of them starts at 0 and reaches
/// as far as any (and the read is one the script makes at all): a batch reads such a file whole
/// (`cat`) when its size is at most this, and the ranges are cut from what it read. This is what
/// `check` asks of a small session (its head and its tail window are the whole file).
pub fn whole_file_cap(ranges: &[ByteRange]) -> Option<u64> {
    if ranges.is_empty() || ranges.len() > MAX_RANGES || crate::check_ranges(ranges).is_err() {
        return None;
    }
    let end = ranges.iter().map(|r| r.start.saturating_add(r.len)).max()?;
    let from_start = ranges.iter().any(|r| r.start == 0 && r.len == end);
    (from_start && end > 0 && end <= MAX_READ_BYTES).then_some(end)
}

/// One file's answer in a batched read reply.
#[derive(Debug)]
pub enum BatchRead {
    /// Read, or refused or failed for this file alone.
    Done(Result<ReadResult, HostError>),
    /// Read whole with others, and that file or one read before it changed while they were
    /// read: read it again (the bytes that came are not trusted to be its own).
    Again,
}

/// Decodes a batched read reply ([`posix::read_many_script`]): one result per file, in order,
/// a file that must be read again ([`BatchRead::Again`]) as an error saying so.
///
/// [`posix::read_many_script`]: crate::script::posix::read_many_script
pub fn decode_read_many(
    host: &str,
    nonce: &str,
    reads: &[(FileRef, Vec<ByteRange>)],
    stdout: &[u8],
) -> Result<Vec<Result<ReadResult, HostError>>, HostError> {
    let answers = decode_read_batch(host, nonce, reads, stdout)?;
    Ok(answers
        .into_iter()
        .zip(reads)
        .map(|(answer, (file, _))| match answer {
            BatchRead::Done(result) => result,
            BatchRead::Again => Err(HostError::Io {
                host: host.to_string(),
                path: display_path(&[&file.root[..], b"/", &file.rel[..]].concat()),
                reason: "changed while it was read; read it again".to_string(),
            }),
        })
        .collect())
}

/// Decodes a batched read reply ([`posix::read_many_script`]): one answer per file, in order.
/// A file's `ERR` is its own result; a reply that breaks the format fails the whole call.
///
/// A `CAT` block is checked before any of its bytes are given to a file: both `STAT` blocks
/// must list the same inode and size for a file, and the concatenation must be exactly as long
/// as the sizes say. Files before the first one that changed are answered; that one and every
/// file after it in the block are [`BatchRead::Again`], as is every file of a block whose
/// length is wrong.
///
/// [`posix::read_many_script`]: crate::script::posix::read_many_script
pub fn decode_read_batch(
    host: &str,
    nonce: &str,
    reads: &[(FileRef, Vec<ByteRange>)],
    stdout: &[u8],
) -> Result<Vec<BatchRead>, HostError> {
    let bad = |reason: String| protocol(host, reason);
    within_read_limit(host, stdout, read_many_reply_limit(reads))?;
    let frame = parse_frame(host, nonce, stdout)?;
    let mut lines = body_lines(frame.body);
    // The files come in the script's order (grouped by directory), each once.
    let mut out: Vec<Option<BatchRead>> = Vec::new();
    out.resize_with(reads.len(), || None);
    let mut answered = 0;
    while answered < reads.len() {
        let line = lines.next().unwrap_or_default();
        if let (b"CAT", rest) = split_word(line) {
            let block = decode_cat_block(host, reads, &out, rest, &mut lines)?;
            for (i, answer) in block {
                out[i] = Some(answer);
                answered += 1;
            }
            continue;
        }
        let i = match split_word(line) {
            (b"FILE", n) => parse_u64(n)
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n < reads.len() && out[n].is_none()),
            _ => None,
        }
        .ok_or_else(|| bad(format!("expected a FILE line, got {}", show(line))))?;
        let ranges = &reads[i].1;
        let result = match lines.peek() {
            Some(line) if split_word(line).0 == b"ERR" => {
                let err = err_line(host, split_word(line).1);
                lines.next();
                Err(err)
            }
            // A file that shrank (or was replaced) after its size was taken is its own
            // failure: the check after the read usually says `raced` as well (below).
            _ => match decode_read_section(host, |_| ranges.clone(), &mut lines) {
                Ok(Ok((result, _))) => Ok(result),
                Ok(Err(reason)) => Err(HostError::Io {
                    host: host.to_string(),
                    path: display_path(&[&reads[i].0.root[..], b"/", &reads[i].0.rel[..]].concat()),
                    reason: format!("changed while it was read: {reason}"),
                }),
                Err(e) => Err(e),
            },
        };
        // A reply that breaks the format is the host's fault, whichever file it is in.
        if let Err(e @ (HostError::Protocol { .. } | HostError::ReplyTooLarge { .. })) = result {
            return Err(e);
        }
        let mut result = result;
        let mut line = lines.next().unwrap_or_default();
        if let (b"ERR", rest) = split_word(line) {
            // The check after the read: the file was swapped while it was read.
            result = Err(err_line(host, rest));
            line = lines.next().unwrap_or_default();
        }
        if line != format!("END-FILE {i}").as_bytes() {
            return Err(bad(format!("expected END-FILE {i}, got {}", show(line))));
        }
        out[i] = Some(BatchRead::Done(result));
        answered += 1;
    }
    if let Some(extra) = lines.next() {
        return Err(bad(format!("unexpected line {}", show(extra))));
    }
    if frame.rc != 0 {
        return Err(bad(format!("read script exited with {}", frame.rc)));
    }
    Ok(out.into_iter().flatten().collect())
}

/// Decodes a `CAT` block after its `CAT` word (`rest`: the encoder and the indexes of the
/// files stat'ed): the answers of the files concatenated (those no larger than their
/// [`whole_file_cap`]); the others come later in `FILE` sections of their own.
fn decode_cat_block<'a>(
    host: &str,
    reads: &[(FileRef, Vec<ByteRange>)],
    answered: &[Option<BatchRead>],
    rest: &[u8],
    lines: &mut impl Iterator<Item = &'a [u8]>,
) -> Result<Vec<(usize, BatchRead)>, HostError> {
    let bad = |reason: String| protocol(host, reason);
    let (enc, indexes) = split_word(rest);
    let encoding = Encoding::from_wire(enc).ok_or_else(|| bad("bad CAT line".to_string()))?;
    let mut members: Vec<(usize, u64)> = Vec::new();
    for word in indexes.split(|&b| b == b' ').filter(|w| !w.is_empty()) {
        let i = parse_u64(word)
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n < reads.len() && answered[n].is_none())
            .filter(|n| members.iter().all(|(m, _)| m != n))
            .ok_or_else(|| bad(format!("bad index in a CAT line: {}", show(word))))?;
        let cap = whole_file_cap(&reads[i].1)
            .ok_or_else(|| bad(format!("CAT names file {i}, which is not read whole")))?;
        members.push((i, cap));
    }
    let before = stat_block(host, lines, members.len())?.ok_or_else(|| {
        bad(format!(
            "expected {} lines of inode and size",
            members.len()
        ))
    })?;
    // The files concatenated: those no larger than their cap, in order (as the script chose).
    let concatenated: Vec<(usize, Stat)> = members
        .iter()
        .zip(&before)
        .filter(|((_, cap), (_, size, _))| size <= cap)
        .map(|((i, _), stat)| (*i, *stat))
        .collect();
    let total: u64 = concatenated
        .iter()
        .map(|(_, (_, size, _))| *size)
        .fold(0, u64::saturating_add);
    if lines.next() != Some(b"DATA 0") {
        return Err(bad("expected DATA 0 in a CAT block".to_string()));
    }
    let mut payload: Vec<&[u8]> = Vec::new();
    loop {
        let line = lines
            .next()
            .ok_or_else(|| bad("payload of a CAT block is cut off".to_string()))?;
        if line == b"END-DATA 0" {
            break;
        }
        payload.push(line);
    }
    // A file that grew under the `cat` sends more than the sizes say; the reply's own bound
    // keeps that in check.
    let data = match decode_payload(encoding, &payload, total.saturating_add(MAX_READ_BYTES)) {
        Ok(data) => Some(data),
        Err(PayloadError::TooLarge(_)) => None,
        Err(PayloadError::Malformed(reason)) => return Err(bad(format!("CAT block: {reason}"))),
    };
    let after = stat_block(host, lines, concatenated.len())?;
    // The first file whose inode, size or mode is not what it was before the `cat`, or whose
    // mode is not a regular file's (the first of all when the second `stat` failed, or the
    // script emptied it: a directory on the way moved or was not one). The files before it were read at
    // the sizes the first `stat` gave, so their bytes are where those sizes say, provided the
    // concatenation holds them all; with a wrong length and no change seen, none is trusted.
    let length = data.as_ref().map(|d| d.len() as u64);
    let first_changed = match &after {
        None => 0,
        Some(after) => concatenated
            .iter()
            .zip(after)
            .position(|((_, stat), again)| stat != again || !is_regular(stat))
            .unwrap_or(concatenated.len()),
    };
    let prefix: u64 = concatenated[..first_changed]
        .iter()
        .map(|(_, (_, size, _))| *size)
        .sum();
    let first_changed = match length {
        Some(length) if length == total => first_changed,
        Some(length) if first_changed < concatenated.len() && length >= prefix => first_changed,
        _ => 0,
    };
    let data = data.unwrap_or_default();
    let mut answers = Vec::with_capacity(concatenated.len());
    let mut at = 0usize;
    for (k, (i, (_, size, _))) in concatenated.into_iter().enumerate() {
        if k >= first_changed {
            answers.push((i, BatchRead::Again));
            continue;
        }
        // Within `data`: the sizes before `first_changed` sum to at most its length.
        let len = size as usize;
        let content = &data[at..at + len];
        at += len;
        let chunks = reads[i]
            .1
            .iter()
            .map(|range| {
                let start = range.start.min(size) as usize;
                let end = range.start.saturating_add(range.len).min(size) as usize;
                content[start..end.max(start)].to_vec()
            })
            .collect();
        answers.push((i, BatchRead::Done(Ok(ReadResult { size, chunks }))));
    }
    Ok(answers)
}

/// A `STAT` line: inode, size and mode.
type Stat = (u64, u64, u32);

/// Whether a `STAT` line's mode is a regular file's.
fn is_regular((_, _, mode): &Stat) -> bool {
    mode & FILE_TYPE == REGULAR_FILE
}

/// A `STAT` block of `count` lines of inode, size and (optionally) mode in hex; `None` when it
/// holds another number of lines (a `stat` that failed for a file).
fn stat_block<'a>(
    host: &str,
    lines: &mut impl Iterator<Item = &'a [u8]>,
    count: usize,
) -> Result<Option<Vec<Stat>>, HostError> {
    let bad = |reason: String| protocol(host, reason);
    if lines.next() != Some(b"STAT") {
        return Err(bad("expected STAT in a CAT block".to_string()));
    }
    let mut stats = Vec::new();
    loop {
        let line = lines
            .next()
            .ok_or_else(|| bad("STAT block cut off".to_string()))?;
        if line == b"END-STAT" {
            break;
        }
        let (inode, rest) = split_word(line);
        let (size, mode) = split_word(rest);
        // The file's mode in hex, where the script names it (`stat -c %f`); a file is regular.
        let mode = match mode {
            b"" => Some(REGULAR_FILE),
            hex => hex_mode(hex),
        };
        let stat = parse_u64(inode)
            .zip(parse_u64(size))
            .zip(mode)
            .map(|((inode, size), mode)| (inode, size, mode))
            .ok_or_else(|| bad(format!("bad STAT line {}", show(line))))?;
        if stats.len() == count {
            return Err(bad("more STAT lines than files".to_string()));
        }
        stats.push(stat);
    }
    Ok((stats.len() == count).then_some(stats))
}
