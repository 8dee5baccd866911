//! A range's payload: how a read reply encodes it ([`Encoding`]), and its lines decoded
//! (base64, uuencode, hex, gzip, zstd) without ever holding more than the request allows.

use base64::Engine as _;

use super::fields::hex_val;

/// How a read reply encodes its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `base64` or `openssl base64`: base64 with line breaks.
    Base64,
    /// `uuencode -m`: base64 between a `begin-base64` line and `====`.
    Uu,
    /// `od -An -v -tx1`: two hex digits per byte, whitespace-separated.
    Hex,
    /// `gzip -1 -c | base64`: one gzip stream, base64 with line breaks.
    Gzip,
    /// `zstd -1 -c -q | base64`: one zstd frame, base64 with line breaks.
    Zstd,
}

impl Encoding {
    pub(super) fn from_wire(name: &[u8]) -> Option<Encoding> {
        match name {
            b"b64" | b"ossl" => Some(Encoding::Base64),
            b"uu" => Some(Encoding::Uu),
            b"hex" => Some(Encoding::Hex),
            b"gz" => Some(Encoding::Gzip),
            b"zs" => Some(Encoding::Zstd),
            _ => None,
        }
    }
}

/// Why a range's payload was refused.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::script) enum PayloadError {
    /// Not what the encoding produces (the wire format is broken).
    Malformed(String),
    /// It decodes to more than this many bytes, what the aligned read can return.
    TooLarge(usize),
}

impl From<&str> for PayloadError {
    fn from(reason: &str) -> PayloadError {
        PayloadError::Malformed(reason.to_string())
    }
}

/// Decodes one range's payload lines, refusing more than `max` decoded bytes.
pub(in crate::script) fn decode_payload(
    encoding: Encoding,
    lines: &[&[u8]],
    max: u64,
) -> Result<Vec<u8>, PayloadError> {
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    // Nothing to read (an empty range, or one past the end) runs no encoder at all.
    if lines.iter().all(|l| l.trim_ascii().is_empty()) {
        return Ok(Vec::new());
    }
    match encoding {
        Encoding::Gzip => {
            // gzip adds at most a few bytes per 16 KiB block it cannot shrink, and its header.
            let compressed = decode_base64_lines(lines, max.saturating_add(max / 512 + 1024))?;
            gunzip(&compressed, max)
        }
        Encoding::Zstd => {
            // zstd adds at most 3 bytes per 128 KiB block it cannot shrink, and its header.
            let compressed = decode_base64_lines(lines, max.saturating_add(max / 1024 + 1024))?;
            unzstd(&compressed, max)
        }
        Encoding::Base64 | Encoding::Uu => {
            let mut lines = lines;
            if encoding == Encoding::Uu {
                let Some((first, rest)) = lines.split_first() else {
                    return Err("uuencode output without header".into());
                };
                if !first.starts_with(b"begin-base64 ") {
                    return Err("uuencode output without header".into());
                }
                let Some((last, rest)) = rest.split_last() else {
                    return Err("uuencode output without trailer".into());
                };
                if last.trim_ascii() != b"====" {
                    return Err("uuencode output without trailer".into());
                }
                lines = rest;
            }
            decode_base64_lines(lines, max)
        }
        Encoding::Hex => {
            let mut out = Vec::new();
            for line in lines {
                for token in line.split(|b| b.is_ascii_whitespace()) {
                    if token.is_empty() {
                        continue;
                    }
                    let [hi, lo] = token else {
                        return Err("bad hex token".into());
                    };
                    let byte = (hex_val(*hi).ok_or("bad hex digit")? << 4)
                        | hex_val(*lo).ok_or("bad hex digit")?;
                    if out.len() == max {
                        return Err(PayloadError::TooLarge(max));
                    }
                    out.push(byte);
                }
            }
            Ok(out)
        }
    }
}

/// Base64 with line breaks, refusing more than `max` decoded bytes before decoding any.
///
/// The lines go to the decoder in runs of whole quads through a buffer that stays in cache,
/// straight into the output allocated once: no copy of the whole text is made (a first
/// `check`'s listing is about 11 MB of it). A line with whitespace inside or a length that is
/// not whole quads (no encoder writes one) is decoded the slow way, as one text.
fn decode_base64_lines(lines: &[&[u8]], max: usize) -> Result<Vec<u8>, PayloadError> {
    let total: usize = lines.iter().map(|l| l.len()).sum();
    // Four characters per three bytes: refuse before decoding anything oversized.
    if total / 4 * 3 > max.saturating_add(3) {
        return Err(PayloadError::TooLarge(max));
    }
    let decoded = match decode_base64_runs(lines, total) {
        Some(decoded) => decoded?,
        None => decode_base64_text(lines, total)?,
    };
    if decoded.len() > max {
        return Err(PayloadError::TooLarge(max));
    }
    Ok(decoded)
}

/// How many characters of base64 go to the decoder at once (whole quads).
const BASE64_RUN: usize = 64 * 1024;

fn bad_base64(e: impl std::fmt::Display) -> PayloadError {
    PayloadError::Malformed(format!("bad base64: {e}"))
}

/// [`decode_base64_lines`] in runs of whole lines; `None` when a line is not whole quads
/// without whitespace inside, or padding comes before the last line.
fn decode_base64_runs(lines: &[&[u8]], total: usize) -> Option<Result<Vec<u8>, PayloadError>> {
    let trimmed = lines
        .iter()
        .map(|l| l.trim_ascii())
        .filter(|l| !l.is_empty());
    let count = trimmed.clone().count();
    let plain = trimmed.clone().enumerate().all(|(k, line)| {
        line.len() % 4 == 0
            && !line.iter().any(|b| b.is_ascii_whitespace())
            && (k + 1 == count || line.last() != Some(&b'='))
    });
    if !plain {
        return None;
    }
    Some(decode_runs(trimmed, total / 4 * 3))
}

/// Whole quads of each line, decoded a run at a time into an output of `len` bytes at most.
fn decode_runs<'a>(
    lines: impl Iterator<Item = &'a [u8]>,
    len: usize,
) -> Result<Vec<u8>, PayloadError> {
    use base64::engine::general_purpose::STANDARD;
    let mut out = vec![0u8; len];
    let mut at = 0;
    let mut run: Vec<u8> = Vec::with_capacity(BASE64_RUN);
    let mut flush = |run: &mut Vec<u8>| -> Result<(), PayloadError> {
        at += STANDARD
            .decode_slice(&run[..], &mut out[at..])
            .map_err(bad_base64)?;
        run.clear();
        Ok(())
    };
    for line in lines {
        if run.len() + line.len() > BASE64_RUN && !run.is_empty() {
            flush(&mut run)?;
        }
        // A line longer than a run (an encoder without line breaks) is a run of its own.
        run.extend_from_slice(line);
        if run.len() >= BASE64_RUN {
            flush(&mut run)?;
        }
    }
    flush(&mut run)?;
    out.truncate(at);
    Ok(out)
}

/// [`decode_base64_lines`] as one text: every line's characters but whitespace.
fn decode_base64_text(lines: &[&[u8]], total: usize) -> Result<Vec<u8>, PayloadError> {
    let mut text = Vec::with_capacity(total);
    for line in lines {
        text.extend(line.iter().filter(|b| !b.is_ascii_whitespace()));
    }
    base64::engine::general_purpose::STANDARD
        .decode(&text)
        .map_err(bad_base64)
}

/// One gzip stream and nothing after it, decompressed to at most `max` bytes (a stream that
/// inflates to more is refused as soon as it does: a small reply cannot make us hold a large
/// one). The stream's CRC and length are checked.
///
/// The output is allocated once, at the length the stream's trailer gives ([`gzip_isize`]),
/// so that 15 MB of a first `check`'s reply are not grown through 2, 4, 8 and 16 MB copies
/// (each fresh memory the kernel zeroes first, docs/performance.md). The trailer is only a
/// hint: never trusted beyond `max`, only memory reserved (not touched) when it is too large,
/// and the vector grows as usual when it is too small; the inflate checks it anyway.
pub(super) fn gunzip(compressed: &[u8], max: usize) -> Result<Vec<u8>, PayloadError> {
    use std::io::Read as _;
    let mut out = Vec::with_capacity(gzip_isize(compressed).min(max));
    let mut stream = flate2::bufread::GzDecoder::new(compressed);
    (&mut stream)
        .take(max as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| PayloadError::Malformed(format!("bad gzip stream: {e}")))?;
    if out.len() > max {
        return Err(PayloadError::TooLarge(max));
    }
    if !stream.into_inner().is_empty() {
        return Err("bytes after the gzip stream".into());
    }
    Ok(out)
}

/// The length a gzip stream says it decompresses to (its last four bytes, ISIZE: the length
/// modulo 2^32, little-endian), or 0 for a stream too short to have a trailer.
pub(super) fn gzip_isize(compressed: &[u8]) -> usize {
    match compressed.last_chunk::<4>() {
        Some(trailer) if compressed.len() >= 18 => {
            usize::try_from(u32::from_le_bytes(*trailer)).unwrap_or(usize::MAX)
        }
        _ => 0,
    }
}

/// The largest window a zstd frame of a reply may ask the decoder to keep (8 MiB).
const MAX_ZSTD_WINDOW_LOG: u32 = 23;

/// One zstd frame and nothing after it, decompressed to at most `max` bytes (refused as soon
/// as it inflates to more) by the reference decoder ([`crate::unzstd`]). The frame must end
/// (its last block), and a frame that carries a content checksum (`zstd` writes one by
/// default) must match it; a frame without one is held to its blocks' own structure only, as
/// `zstd -d` holds it.
pub(super) fn unzstd(compressed: &[u8], max: usize) -> Result<Vec<u8>, PayloadError> {
    use crate::unzstd::{Frames, UnzstdError, decompress};
    // `zstd -1` keeps a window of 512 KiB at most: a frame that asks more is not its output.
    decompress(compressed, max, MAX_ZSTD_WINDOW_LOG, Frames::One).map_err(|e| match e {
        UnzstdError::TooLarge => PayloadError::TooLarge(max),
        UnzstdError::Malformed(reason) => {
            PayloadError::Malformed(format!("bad zstd stream: {reason}"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `data` as base64 in lines of `width` characters (0: one line), each ending `eol`.
    fn wrapped(data: &[u8], width: usize, eol: &str) -> Vec<u8> {
        let text = base64::engine::general_purpose::STANDARD.encode(data);
        let width = if width == 0 { text.len().max(1) } else { width };
        let mut out = Vec::new();
        for line in text.as_bytes().chunks(width) {
            out.extend_from_slice(line);
            out.extend_from_slice(eol.as_bytes());
        }
        out
    }

    fn lines(text: &[u8]) -> Vec<&[u8]> {
        text.split(|&b| b == b'\n').collect()
    }

    #[test]
    fn base64_lines_decode_in_runs_as_one_text() {
        let data: Vec<u8> = (0..300_000u32).map(|k| (k * 7 % 251) as u8).collect();
        for len in [0, 1, 2, 3, 57, 58, 100_000, 300_000] {
            let data = &data[..len];
            // `base64`'s 76, `openssl`'s 64, one line longer than a run, and a width that is
            // not whole quads (decoded as one text).
            for (width, eol) in [(76, "\n"), (64, "\r\n"), (0, "\n"), (30, "\n")] {
                let text = wrapped(data, width, eol);
                // The bound is checked first against every character of the lines, `\r` too.
                let max = if eol == "\n" { len } else { len + len / 32 };
                let decoded = decode_base64_lines(&lines(&text), max).unwrap();
                assert_eq!(decoded, data, "{len} bytes in lines of {width}");
                if len > 3 && eol == "\n" {
                    assert_eq!(
                        decode_base64_lines(&lines(&text), len - 3),
                        Err(PayloadError::TooLarge(len - 3))
                    );
                }
            }
        }
        // Padding before the last line, or a character outside the alphabet: refused.
        for bad in [&b"QQ==\nQUJD\n"[..], b"QUJD\nQU*D\n", b"QUJ\n"] {
            assert!(
                matches!(
                    decode_base64_lines(&lines(bad), 100),
                    Err(PayloadError::Malformed(_))
                ),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
