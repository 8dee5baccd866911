//! A find-and-read's reply ([`decode_find_read_with`]): the narrowed listing, the read of
//! its one match (`HIT`), and the reads of the top files (`TOP`).

use clankie_model::limits::MAX_LIST_REPLY_BYTES;
use clankie_model::{ByteRange, RootSpec};

use super::errors::{err_line, protocol, show, too_large};
use super::fields::split_word;
use super::frame::{body_lines, parse_frame};
use super::listing::decode_list_lines;
use super::ranges::{decode_read_lines, read_reply_limit};
use crate::{HostError, MAX_READ_BYTES};

/// The largest reply to a find-and-read: a listing's, the first read's, and the reads of
/// `tops` for each root of their harness.
pub fn find_read_reply_limit(roots: &[RootSpec], tops: &[crate::TopReads]) -> usize {
    let first = MAX_LIST_REPLY_BYTES.saturating_add(read_reply_limit(&[
        ByteRange::new(0, MAX_READ_BYTES),
        ByteRange::new(0, MAX_READ_BYTES),
    ]));
    roots
        .iter()
        .filter_map(|r| tops.iter().find(|t| t.harness == r.harness))
        .flat_map(|t| t.ranges.iter())
        .map(|ranges| read_reply_limit(ranges).saturating_add(256))
        .fold(first, usize::saturating_add)
}

/// Decodes a find-and-read reply ([`posix::find_read_script`]): the narrowed listing, and the
/// read of its one file when a `HIT` line says it follows.
///
/// [`posix::find_read_script`]: crate::script::posix::find_read_script
pub fn decode_find_read(
    host: &str,
    nonce: &str,
    roots: &[RootSpec],
    first: &crate::FirstRead,
    stdout: &[u8],
) -> Result<crate::Found, HostError> {
    decode_find_read_with(host, nonce, roots, first, &[], stdout)
}

/// [`decode_find_read`] of [`posix::find_read_script_with`]'s reply: also the `TOP` sections,
/// the reads of `tops` (each of a top file the listing names: one it does not name is skipped).
///
/// [`posix::find_read_script_with`]: crate::script::posix::find_read_script_with
pub fn decode_find_read_with(
    host: &str,
    nonce: &str,
    roots: &[RootSpec],
    first: &crate::FirstRead,
    tops: &[crate::TopReads],
    stdout: &[u8],
) -> Result<crate::Found, HostError> {
    let bad = |reason: String| protocol(host, reason);
    if stdout.len() > find_read_reply_limit(roots, tops) {
        return Err(too_large(
            host,
            "find-and-read reply over its bound".to_string(),
        ));
    }
    let frame = parse_frame(host, nonce, stdout)?;
    let mut lines = body_lines(frame.body);
    let listing = decode_list_lines(host, roots, &mut lines)?;
    let mut read = None;
    if let Some(line) = lines.peek().copied()
        && split_word(line).0 == b"HIT"
    {
        lines.next();
        // The path as its F line spells it (an F line holds no LF or CR), below the root.
        let rel = split_word(line).1;
        let rel = rel.strip_prefix(b"./").unwrap_or(rel).to_vec();
        let hit = listing
            .files
            .iter()
            .find(|f| f.rel == rel && f.rel.contains(&b'/'))
            .cloned()
            .ok_or_else(|| bad(format!("HIT names a file not listed: {}", show(line))))?;
        let result = match lines.peek() {
            Some(line) if split_word(line).0 == b"ERR" => {
                let err = err_line(host, split_word(line).1);
                lines.next();
                Err(err)
            }
            _ => decode_read_lines(host, |size| first.ranges(size), &mut lines).map(|(r, _)| r),
        };
        if let Err(e @ (HostError::Protocol { .. } | HostError::ReplyTooLarge { .. })) = result {
            return Err(e);
        }
        let mut result = result;
        if let Some(line) = lines.next() {
            match split_word(line) {
                (b"ERR", rest) => result = Err(err_line(host, rest)),
                _ => return Err(bad(format!("unexpected line {}", show(line)))),
            }
        }
        read = Some((hit, result));
    }
    let mut top_files = Vec::new();
    while let Some(line) = lines.peek().copied()
        && split_word(line).0 == b"TOP"
    {
        lines.next();
        let (root, rest) = split_word(split_word(line).1);
        let (k, name) = split_word(rest);
        let at = |word: &[u8]| {
            std::str::from_utf8(word)
                .ok()
                .and_then(|w| w.parse::<usize>().ok())
        };
        let (Some(root), Some(k)) = (at(root), at(k)) else {
            return Err(bad(format!("bad TOP line {}", show(line))));
        };
        let ranges = roots
            .get(root)
            .and_then(|spec| tops.iter().find(|t| t.harness == spec.harness))
            .and_then(|t| t.ranges.get(k))
            .filter(|_| !name.is_empty() && !name.contains(&b'/'))
            .ok_or_else(|| bad(format!("TOP names no read asked for: {}", show(line))))?;
        let result = decode_read_lines(host, |_| ranges.clone(), &mut lines).map(|(r, _)| r);
        if let Err(e @ (HostError::Protocol { .. } | HostError::ReplyTooLarge { .. })) = result {
            return Err(e);
        }
        let mut result = result;
        if let Some(line) = lines.peek().copied()
            && split_word(line).0 == b"ERR"
        {
            lines.next();
            result = Err(err_line(host, split_word(line).1));
        }
        // The file as the listing names it; one it does not (it appeared after the listing's
        // `stat`) is left out, as it would be of the listing.
        let listed = listing.roots.get(root).and_then(|r| {
            listing
                .files
                .iter()
                .find(|f| f.harness == r.harness && *f.root == *r.dir && f.rel == name)
        });
        if let Some(entry) = listed {
            top_files.push((entry.clone(), result));
        }
    }
    if let Some(extra) = lines.next() {
        return Err(bad(format!("unexpected line {}", show(extra))));
    }
    if frame.rc != 0 {
        return Err(bad(format!(
            "find-and-read script exited with {}",
            frame.rc
        )));
    }
    Ok(crate::Found {
        listing,
        read,
        tops: top_files,
    })
}
