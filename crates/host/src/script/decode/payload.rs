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
fn decode_base64_lines(lines: &[&[u8]], max: usize) -> Result<Vec<u8>, PayloadError> {
    let total: usize = lines.iter().map(|l| l.len()).sum();
    // Four characters per three bytes: refuse before decoding anything oversized.
    if total / 4 * 3 > max.saturating_add(3) {
        return Err(PayloadError::TooLarge(max));
    }
    // The encoders break lines only between characters: each line's ends trimmed and the
    // lines copied whole is the text, unless a line holds whitespace inside, which the
    // decoder refuses; then the text is made again without any whitespace.
    let mut text = Vec::with_capacity(total);
    for line in lines {
        text.extend_from_slice(line.trim_ascii());
    }
    let engine = base64::engine::general_purpose::STANDARD;
    let decoded = match engine.decode(&text) {
        Ok(decoded) => decoded,
        Err(_) => {
            text.clear();
            for line in lines {
                text.extend(line.iter().filter(|b| !b.is_ascii_whitespace()));
            }
            engine
                .decode(&text)
                .map_err(|e| PayloadError::Malformed(format!("bad base64: {e}")))?
        }
    };
    if decoded.len() > max {
        return Err(PayloadError::TooLarge(max));
    }
    Ok(decoded)
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

/// The largest window a zstd frame of a reply may ask the decoder to keep.
const MAX_ZSTD_WINDOW: u64 = 8 << 20;

/// One zstd frame and nothing after it, decompressed to at most `max` bytes (refused as soon
/// as it inflates to more). The frame must end (its last block), and a frame that carries a
/// content checksum (`zstd` writes one by default) must match it; a frame without one is held
/// to its blocks' own structure only, as `zstd -d` holds it.
pub(super) fn unzstd(compressed: &[u8], max: usize) -> Result<Vec<u8>, PayloadError> {
    use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
    let bad = |e: &dyn std::fmt::Display| PayloadError::Malformed(format!("bad zstd stream: {e}"));
    let mut source = compressed;
    let mut frame = FrameDecoder::new();
    // `zstd -1` keeps a window of 512 KiB at most: a frame that asks more is not its output.
    frame.set_max_window_size(MAX_ZSTD_WINDOW);
    frame.reset(&mut source).map_err(|e| bad(&e))?;
    let mut out = Vec::new();
    while !frame.is_finished() {
        let before = source.len();
        frame
            .decode_blocks(&mut source, BlockDecodingStrategy::UptoBytes(1 << 20))
            .map_err(|e| bad(&e))?;
        if frame.can_collect() > 0 {
            if out.len() + frame.can_collect() > max {
                return Err(PayloadError::TooLarge(max));
            }
            frame.collect_to_writer(&mut out).map_err(|e| bad(&e))?;
        }
        if !frame.is_finished() && source.len() == before {
            return Err("zstd stream cut short".into());
        }
    }
    if frame.can_collect() > 0 {
        if out.len() + frame.can_collect() > max {
            return Err(PayloadError::TooLarge(max));
        }
        frame.collect_to_writer(&mut out).map_err(|e| bad(&e))?;
    }
    if let Some(sent) = frame.get_checksum_from_data()
        && Some(sent) != frame.get_calculated_checksum()
    {
        return Err("zstd stream's checksum does not match its bytes".into());
    }
    if !source.is_empty() {
        return Err("bytes after the zstd stream".into());
    }
    Ok(out)
}
