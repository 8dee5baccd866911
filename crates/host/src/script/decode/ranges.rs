//! A read's ranges: how each is read on the wire ([`aligned`]), the bound of its reply
//! ([`read_reply_limit`]), and a read reply decoded ([`decode_read`]): `META`, then each
//! range's `DATA` block cut to the bytes asked for.

use clankie_model::limits::MAX_RANGES;
use clankie_model::{ByteRange, ReadResult};

use super::errors::{err_line, protocol, show, too_large};
use super::fields::{parse_u64, split_word};
use super::frame::{NOISE_SLACK, body_lines, parse_frame};
use super::payload::{Encoding, PayloadError, decode_payload};
use crate::{HostError, MAX_READ_BYTES};

/// How one range is read on the wire: `count` blocks of `bs` bytes starting at block
/// `skip_blocks`; the wanted bytes start `skip` bytes into that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aligned {
    pub bs: u64,
    pub skip_blocks: u64,
    pub count: u64,
    pub skip: u64,
}

impl Aligned {
    /// Most bytes the aligned read can return.
    pub fn max_bytes(&self) -> u64 {
        self.bs.saturating_mul(self.count)
    }
}

/// The aligned read for a range. Small ranges use small blocks so that alignment costs little.
pub fn aligned(range: &ByteRange) -> Aligned {
    let bs: u64 = if range.len <= 256 * 1024 { 4096 } else { 65536 };
    let skip_blocks = range.start / bs;
    let end_blocks = range.start.saturating_add(range.len).div_ceil(bs);
    Aligned {
        bs,
        skip_blocks,
        count: if range.len == 0 {
            0
        } else {
            end_blocks - skip_blocks
        },
        skip: range.start % bs,
    }
}

/// The largest read reply accepted for these ranges: hex (the bulkiest encoder, about 3.1
/// characters per byte) of every aligned block, plus slack for rc-file noise.
pub fn read_reply_limit(ranges: &[ByteRange]) -> usize {
    let raw: u64 = ranges
        .iter()
        .map(|r| aligned(r).max_bytes().min(MAX_READ_BYTES + 2 * 65536))
        .fold(0, u64::saturating_add);
    let encoded = raw
        .saturating_mul(4)
        .saturating_add(256 * ranges.len() as u64);
    usize::try_from(encoded)
        .unwrap_or(usize::MAX)
        .saturating_add(NOISE_SLACK)
}

/// Decodes a read reply for `ranges` (the same ranges the script was generated for).
pub fn decode_read(
    host: &str,
    nonce: &str,
    ranges: &[ByteRange],
    stdout: &[u8],
) -> Result<ReadResult, HostError> {
    let bad = |reason: String| protocol(host, reason);
    within_read_limit(host, stdout, read_reply_limit(ranges))?;
    let frame = parse_frame(host, nonce, stdout)?;
    let mut lines = body_lines(frame.body);
    let result = decode_read_lines(host, |_| ranges.to_vec(), &mut lines)?.0;
    if let Some(extra) = lines.next() {
        // The script's check after the read: the file was swapped while it was read.
        if let (b"ERR", rest) = split_word(extra) {
            return Err(err_line(host, rest));
        }
        return Err(bad(format!("unexpected line {}", show(extra))));
    }
    if frame.rc != 0 {
        return Err(bad(format!("read script exited with {}", frame.rc)));
    }
    Ok(result)
}

/// Decodes one file's read section: an `ERR` line, or `META` then each range's `DATA`/
/// `END-DATA` block. `ranges_of` gives the ranges that were read for the size META reports
/// (a read planned from the file's end computes them on the host). Returns the result and
/// those ranges; a block shorter than the META size says is a broken reply.
pub(super) fn decode_read_lines<'a>(
    host: &str,
    ranges_of: impl FnOnce(u64) -> Vec<ByteRange>,
    lines: &mut impl Iterator<Item = &'a [u8]>,
) -> Result<(ReadResult, Vec<ByteRange>), HostError> {
    decode_read_section(host, ranges_of, lines)?.map_err(|reason| protocol(host, reason))
}

/// [`decode_read_lines`], with a block shorter than the META size says (the file shrank, or
/// was replaced by a smaller one, after its size was taken) as the inner `Err`, its reason,
/// once the whole section is consumed: in a batch that is the one file's, not the reply's.
pub(super) fn decode_read_section<'a>(
    host: &str,
    ranges_of: impl FnOnce(u64) -> Vec<ByteRange>,
    lines: &mut impl Iterator<Item = &'a [u8]>,
) -> Result<Result<(ReadResult, Vec<ByteRange>), String>, HostError> {
    let bad = |reason: String| protocol(host, reason);
    let first = lines
        .next()
        .ok_or_else(|| bad("empty read reply".to_string()))?;
    let (tag, rest) = split_word(first);
    if tag == b"ERR" {
        return Err(err_line(host, rest));
    }
    if tag != b"META" {
        return Err(bad(format!("expected META, got {}", show(first))));
    }
    let mut size = None;
    let mut encoding = None;
    for field in rest.split(|&b| b == b' ').filter(|f| !f.is_empty()) {
        if let Some(v) = field.strip_prefix(b"size=") {
            size = parse_u64(v);
        } else if let Some(v) = field.strip_prefix(b"enc=") {
            encoding = Encoding::from_wire(v);
        }
    }
    let (Some(size), Some(encoding)) = (size, encoding) else {
        return Err(bad(format!("bad META line {}", show(first))));
    };
    let ranges = ranges_of(size);
    if ranges.len() > MAX_RANGES {
        return Err(bad(format!("{} ranges asked for", ranges.len())));
    }
    let mut chunks = Vec::with_capacity(ranges.len());
    let mut short = None;
    while chunks.len() < ranges.len() {
        let i = chunks.len();
        let data = lines.next().unwrap_or_default();
        // `DATA i`, or `DATA i-j` for ranges i to j (the last) encoded as one stream.
        let label = data
            .strip_prefix(b"DATA ")
            .filter(|label| {
                *label == i.to_string().as_bytes()
                    || (ranges.len() > i + 1
                        && *label == format!("{i}-{}", ranges.len() - 1).as_bytes())
            })
            .ok_or_else(|| bad(format!("expected DATA {i}, got {}", show(data))))?;
        let group = if label.contains(&b'-') {
            &ranges[i..]
        } else {
            &ranges[i..=i]
        };
        let mut end_marker = b"END-DATA ".to_vec();
        end_marker.extend_from_slice(label);
        let mut payload: Vec<&[u8]> = Vec::new();
        loop {
            let line = lines
                .next()
                .ok_or_else(|| bad(format!("payload of range {i} is cut off")))?;
            if line == end_marker.as_slice() {
                break;
            }
            payload.push(line);
        }
        let wires: Vec<Aligned> = group.iter().map(aligned).collect();
        let max = wires
            .iter()
            .map(Aligned::max_bytes)
            .fold(0, u64::saturating_add);
        let stream = decode_payload(encoding, &payload, max).map_err(|e| match e {
            PayloadError::Malformed(reason) => bad(format!("range {i}: {reason}")),
            PayloadError::TooLarge(max) => {
                too_large(host, format!("range {i}: more than {max} bytes of payload"))
            }
        })?;
        let mut rest = stream.as_slice();
        for (k, (range, wire)) in group.iter().zip(&wires).enumerate() {
            let i = i + k;
            // Every block of a stream but the last lies below the file's end, so it is whole
            // (the script encodes them together only then).
            let block = if k + 1 == group.len() {
                std::mem::take(&mut rest)
            } else {
                let end = wire
                    .skip_blocks
                    .saturating_add(wire.count)
                    .saturating_mul(wire.bs);
                let len = usize::try_from(wire.max_bytes()).unwrap_or(usize::MAX);
                if end > size {
                    return Err(bad(format!(
                        "range {i}: a block of a stream that is not whole below the file's end"
                    )));
                }
                if rest.len() < len {
                    // The file shrank while the stream was read: none of its ranges is
                    // trusted, the section is still consumed.
                    short.get_or_insert(format!(
                        "range {i}: a block of a stream that is not whole: {} of {len} bytes (file shrank)",
                        rest.len()
                    ));
                    chunks.extend(std::iter::repeat_with(Vec::new).take(group.len() - k));
                    break;
                }
                let (block, after) = rest.split_at(len);
                rest = after;
                block
            };
            let want = if range.start >= size {
                0
            } else {
                range.len.min(size - range.start)
            };
            if want == 0 {
                // Nothing of the range exists: the script runs no `dd` at all.
                chunks.push(Vec::new());
                continue;
            }
            // Both fit in usize: `block` exists in memory and `want` is at most its length here.
            let need = wire.skip.saturating_add(want);
            if (block.len() as u64) < need {
                short.get_or_insert(format!(
                    "range {i}: got {} bytes, expected at least {need} (file shrank, or dd failed)",
                    block.len()
                ));
                chunks.push(Vec::new());
                continue;
            }
            let start = wire.skip as usize;
            chunks.push(block[start..start + want as usize].to_vec());
        }
    }
    Ok(match short {
        Some(reason) => Err(reason),
        None => Ok((ReadResult { size, chunks }, ranges)),
    })
}

/// A read reply over what its request allows is refused unread (exit 6), whatever it holds.
pub(super) fn within_read_limit(host: &str, stdout: &[u8], limit: usize) -> Result<(), HostError> {
    if stdout.len() <= limit {
        return Ok(());
    }
    Err(too_large(
        host,
        format!(
            "read reply of {} bytes is over the {limit} bytes this request allows",
            stdout.len()
        ),
    ))
}
