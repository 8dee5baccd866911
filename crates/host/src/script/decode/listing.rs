//! A list reply decoded into a [`Listing`] ([`decode_list`]): its `ROOT` and `F`/`FX` lines,
//! plain or in a `GZ` block, each path held to its harness's filter and the listing's bounds;
//! and a listing that reads along ([`decode_list_reading`]), its read blocks answered by
//! `read_along.rs`.

use std::sync::Arc;

use clankie_model::limits::MAX_LIST_REPLY_BYTES;
use clankie_model::{
    FileEntry, Harness, ListSpec, Listing, ListingBudget, ListingOverCap, ReadResult, ResolvedRoot,
    RootSpec,
};

use super::errors::{err_line, protocol, show, too_large};
use super::fields::{hex_decode, parse_i64, parse_u64, split_word};
use super::frame::{body_lines, parse_frame};
use super::payload::{Encoding, PayloadError, decode_payload};
use super::read_along::{answer_blocks, split_read_along};
use crate::{FileEnds, FileRef, HostError};

/// Decodes a list reply into a [`Listing`], files sorted by (root, rel) like every host. Only
/// the harnesses of `roots` (what was asked for) may appear in it.
pub fn decode_list(
    host: &str,
    nonce: &str,
    roots: &[RootSpec],
    stdout: &[u8],
) -> Result<Listing, HostError> {
    decode_list_reading(host, nonce, roots, stdout, None)?
        .listing
        .ok_or_else(|| protocol(host, "a listing cut off".to_string()))
}

/// What a listing that reads along answered ([`decode_list_reading`]).
#[derive(Debug, Default)]
pub struct ListReading {
    /// The listing; `None` when the reply was cut at its budget before the listing was whole
    /// (the host lists again, plainly).
    pub listing: Option<Listing>,
    /// The files read along, each whole, as a read of `[0, size)`; none when the listing was
    /// cut.
    pub reads: Vec<(FileRef, ReadResult)>,
    /// The ends of the larger files read along (`RE` blocks); none when the listing was cut.
    pub ends: Vec<(FileRef, FileEnds)>,
}

/// Decodes the reply of [`posix::list_reading_script`]: the listing, and the files it read
/// along (each whole; at most `max_file` bytes each), by the listing's own roots. A read block
/// that breaks its format or its checks answers none of its files (they are read the usual
/// way); the listing is held to [`decode_list`]'s rules. With `max_file` `None`, a reply that
/// reads along is refused like any other stray line.
///
/// [`posix::list_reading_script`]: crate::script::posix::list_reading_script
pub fn decode_list_reading(
    host: &str,
    nonce: &str,
    roots: &[RootSpec],
    stdout: &[u8],
    max_file: Option<u64>,
) -> Result<ListReading, HostError> {
    let bad = |reason: String| protocol(host, reason);
    if stdout.len() > MAX_LIST_REPLY_BYTES {
        return Err(too_large(
            host,
            format!("list reply over {MAX_LIST_REPLY_BYTES} bytes; refusing it"),
        ));
    }
    let frame = parse_frame(host, nonce, stdout)?;
    let mut lines = body_lines(frame.body);
    let mut listing = decode_list_lines(host, roots, &mut lines)?;
    let mut reads = Vec::new();
    let mut ends = Vec::new();
    let mut whole = true;
    // The lines compressed (after MODE, or an ERR that ended the listing before them): a `GZ`
    // block, or a `ZS` block where a listing that reads along found `zstd`.
    let block = match lines.peek() {
        Some(&b"GZ") => Some((Encoding::Gzip, "GZ", &b"END-GZ"[..])),
        Some(&b"ZS") if max_file.is_some() => Some((Encoding::Zstd, "ZS", &b"END-ZS"[..])),
        _ => None,
    };
    if let Some((encoding, tag, end)) = block {
        if !listing.roots.is_empty() || !listing.files.is_empty() {
            return Err(bad(format!("a {tag} block after the listing's lines")));
        }
        lines.next();
        let mut payload: Vec<&[u8]> = Vec::new();
        loop {
            let line = lines
                .next()
                .ok_or_else(|| bad(format!("{tag} block cut off")))?;
            if line == end {
                break;
            }
            payload.push(line);
        }
        let text = decode_payload(encoding, &payload, MAX_LIST_REPLY_BYTES as u64).map_err(
            |e| match e {
                PayloadError::Malformed(reason) => bad(format!("{tag} block: {reason}")),
                PayloadError::TooLarge(max) => too_large(
                    host,
                    format!("list reply decompresses to over {max} bytes; refusing it"),
                ),
            },
        )?;
        let reading = max_file.and_then(|max| {
            text.strip_prefix(format!("{nonce}:RL\n").as_bytes())
                .map(|rest| (rest, max))
        });
        match reading {
            Some((rest, max)) => {
                let along = split_read_along(nonce, rest);
                whole = along.whole;
                if whole {
                    let mut inner = along.lines.into_iter().filter(|l| !l.is_empty()).peekable();
                    listing = decode_list_lines(host, roots, &mut inner)?;
                    if let Some(extra) = inner.next() {
                        return Err(bad(format!("unexpected line {}", show(extra))));
                    }
                    let answered = answer_blocks(&listing, along.blocks, max);
                    reads = answered.reads;
                    ends = answered.ends;
                }
            }
            None => {
                let mut inner = body_lines(&text);
                listing = decode_list_lines(host, roots, &mut inner)?;
                if let Some(extra) = inner.next() {
                    return Err(bad(format!("unexpected line {}", show(extra))));
                }
            }
        }
    }
    if let Some(extra) = lines.next() {
        return Err(bad(format!("unexpected line {}", show(extra))));
    }
    if frame.rc != 0 {
        return Err(bad(format!("list script exited with {}", frame.rc)));
    }
    Ok(ListReading {
        listing: whole.then_some(listing),
        reads,
        ends,
    })
}

/// Decodes the typed lines of a listing up to a line that is not one of them (left in
/// `lines`'s peek), files sorted by (root, rel).
pub(super) fn decode_list_lines<'a>(
    host: &str,
    roots: &[RootSpec],
    lines: &mut std::iter::Peekable<impl Iterator<Item = &'a [u8]>>,
) -> Result<Listing, HostError> {
    let bad = |reason: String| protocol(host, reason);
    let mut listing = Listing::default();
    let mut budget = ListingBudget::default();
    let over_cap = |cap: ListingOverCap| too_large(host, cap.to_string());
    // The root the following files belong to (shared by them), with its harness's filter.
    let mut current: Option<(Harness, Arc<[u8]>, bool)> = None;
    while let Some(&line) = lines.peek() {
        let (tag, rest) = split_word(line);
        if !matches!(
            tag,
            b"MODE" | b"ERR" | b"S" | b"ROOT" | b"ROOTP" | b"F" | b"FX"
        ) {
            break;
        }
        lines.next();
        match tag {
            b"MODE" => {}
            b"ERR" => return Err(err_line(host, rest)),
            b"S" if rest.is_empty() => {
                listing.skipped_names += 1;
            }
            b"ROOT" | b"ROOTP" => {
                let (harness, rest) = split_word(rest);
                let (exists, dir) = split_word(rest);
                let harness = roots
                    .iter()
                    .map(|r| r.harness)
                    .find(|h| h.name().as_bytes() == harness)
                    .ok_or_else(|| bad(format!("unknown harness in {}", show(line))))?;
                let exists = match exists {
                    b"0" => false,
                    b"1" => true,
                    _ => return Err(bad(format!("bad ROOT line {}", show(line)))),
                };
                let dir = match tag {
                    b"ROOTP" => Some(dir.to_vec()),
                    _ => hex_decode(dir),
                }
                .ok_or_else(|| bad(format!("bad ROOT line {}", show(line))))?;
                if dir.contains(&0) || (exists && !is_absolute(&dir)) {
                    return Err(bad(format!("bad root directory in {}", show(line))));
                }
                // One ROOT line per root asked for: more would let a reply grow the listing by
                // its roots alone.
                if listing.roots.len() >= roots.len() {
                    return Err(bad(format!(
                        "more ROOT lines than the {} roots asked for",
                        roots.len()
                    )));
                }
                budget.add_root(dir.len()).map_err(over_cap)?;
                current = Some((harness, dir.as_slice().into(), exists));
                listing.roots.push(ResolvedRoot {
                    harness,
                    dir,
                    exists,
                });
            }
            b"F" | b"FX" => {
                let Some((harness, root, true)) = &current else {
                    return Err(bad(format!(
                        "file outside an existing root: {}",
                        show(line)
                    )));
                };
                let (size, rest) = split_word(rest);
                let (stamp, path) = split_word(rest);
                let size =
                    parse_u64(size).ok_or_else(|| bad(format!("bad size in {}", show(line))))?;
                let (mtime, inode, ctime) = parse_stamp(stamp)
                    .ok_or_else(|| bad(format!("bad mtime in {}", show(line))))?;
                let path = if tag == b"FX" {
                    hex_decode(path).ok_or_else(|| bad(format!("bad path in {}", show(line))))?
                } else {
                    path.to_vec()
                };
                let rel = path.strip_prefix(b"./").unwrap_or(&path).to_vec();
                check_listed_path(*harness, &rel)
                    .map_err(|reason| bad(format!("{reason}: {}", show(line))))?;
                budget.add_file(rel.len()).map_err(over_cap)?;
                listing.files.push(FileEntry {
                    harness: *harness,
                    root: root.clone(),
                    rel,
                    size,
                    mtime,
                    inode,
                    ctime,
                });
            }
            _ => return Err(bad(format!("unexpected line {}", show(line)))),
        }
    }
    listing
        .files
        .sort_by(|a, b| (&a.root, &a.rel).cmp(&(&b.root, &b.rel)));
    Ok(listing)
}

/// The time word of an `F`/`FX` line: `<mtime>`, or `<mtime>:<inode>:<ctime>` where the
/// listing's `stat` gives those. The mtime must parse; an inode or ctime that does not (a tool
/// that printed its directive back) is `None`, which leaves the cache to the size and mtime.
fn parse_stamp(word: &[u8]) -> Option<(i64, Option<u64>, Option<i64>)> {
    let mut parts = word.split(|&b| b == b':');
    let mtime = parse_i64(parts.next()?)?;
    let inode = parts.next().and_then(parse_u64);
    let ctime = parts.next().and_then(parse_i64);
    if parts.next().is_some() {
        return None;
    }
    Some((mtime, inode, ctime))
}

/// An absolute directory as a POSIX host (`/…`) or a Windows host (`C:\…`, `C:/…`, `\\server\…`)
/// spells it.
fn is_absolute(dir: &[u8]) -> bool {
    match dir {
        [b'/', ..] | [b'\\', b'\\', ..] => true,
        [drive, b':', b'\\' | b'/', ..] => drive.is_ascii_alphabetic(),
        _ => false,
    }
}

/// A listed path must be what the harness's filter allows: `<subdir>/…`, relative, no `..`,
/// at most `max_depth` directories below one of the subdirs, with a transcript file name; or
/// exactly one of the harness's `top_files` (any name directly in the root for a harness whose
/// database a variable may name).
fn check_listed_path(harness: Harness, rel: &[u8]) -> Result<(), &'static str> {
    // Not `check_relative_path`: a backslash is an ordinary byte in a POSIX name, and the
    // local host lists such files too.
    if rel.is_empty() || rel.starts_with(b"/") || rel.contains(&0) {
        return Err("not a relative path");
    }
    if rel
        .split(|&b| b == b'/')
        .any(|c| matches!(c, b"" | b"." | b".."))
    {
        return Err("empty, `.` or `..` component in path");
    }
    let spec = harness.list_spec();
    if spec.top_files.iter().any(|name| rel == name.as_bytes()) {
        return Ok(());
    }
    // The database a variable named (`OPENCODE_DB`): any name directly in its directory.
    if harness.db_env().is_some() && !rel.contains(&b'/') {
        return Ok(());
    }
    let below = if spec.walks_project_tree() {
        // The root itself: no directory on the way may be one such a walk never enters.
        let dirs = rel.split(|&b| b == b'/');
        if dirs
            .take(rel.iter().filter(|&&b| b == b'/').count())
            .any(ListSpec::skips_project_dir)
        {
            return Err("path through a directory a project tree's walk skips");
        }
        rel
    } else {
        spec.subdirs
            .iter()
            .find_map(|sub| {
                rel.strip_prefix(sub.as_bytes())
                    .and_then(|r| r.strip_prefix(b"/"))
            })
            .ok_or("path outside the transcript directory")?
    };
    let depth = below.iter().filter(|&&b| b == b'/').count();
    if depth > spec.max_depth as usize {
        return Err("path deeper than the listing allows");
    }
    let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
    if !spec.matches_name(name) {
        return Err("path without the transcript suffix");
    }
    Ok(())
}
