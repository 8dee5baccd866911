//! zstd frames decompressed by the reference C decoder (`zstd-safe`), straight into an output
//! allocated once when the frame says its size, never past a bound: a small reply cannot make
//! us hold a large one.

use zstd_safe::{DCtx, DParameter, InBuffer, OutBuffer};

/// The four bytes every zstd frame begins with.
const MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Why a zstd stream was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum UnzstdError {
    /// Not a zstd stream, cut short, with bytes after it, or its checksum does not match.
    Malformed(String),
    /// It decompresses to more than the bound.
    TooLarge,
}

/// How many frames a stream may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frames {
    /// Exactly one, and nothing after it (what `zstd -c` of a pipe writes).
    One,
    /// One or more, back to back (what `zstd -d` reads from a file).
    Many,
}

/// Decompresses `compressed` to at most `max` bytes. A frame's window may be at most
/// `2^window_log` bytes; a frame that carries a content checksum must match it.
pub fn decompress(
    compressed: &[u8],
    max: usize,
    window_log: u32,
    frames: Frames,
) -> Result<Vec<u8>, UnzstdError> {
    let bad = |what: &str| UnzstdError::Malformed(what.to_string());
    if !compressed.starts_with(&MAGIC) {
        return Err(bad("not a zstd frame"));
    }
    let mut ctx = DCtx::create();
    ctx.set_parameter(DParameter::WindowLogMax(window_log))
        .map_err(|code| bad(zstd_safe::get_error_name(code)))?;
    let bound = max.saturating_add(1);
    let mut out = Vec::with_capacity(first_capacity(compressed).min(bound));
    let mut input = InBuffer::around(compressed);
    loop {
        if out.len() == out.capacity() {
            if out.len() > max {
                return Err(UnzstdError::TooLarge);
            }
            let more = out.capacity().max(64 << 10).min(bound - out.len());
            out.reserve_exact(more);
        }
        let at = out.len();
        let room = out.capacity() - at;
        let mut buffer = OutBuffer::around_pos(&mut out, at);
        let hint = ctx
            .decompress_stream(&mut buffer, &mut input)
            .map_err(|code| bad(zstd_safe::get_error_name(code)))?;
        let wrote = out.len() - at;
        if out.len() > max {
            return Err(UnzstdError::TooLarge);
        }
        let rest = &compressed[input.pos()..];
        if hint == 0 {
            // A frame ended: the stream ends with it, or (`Many`) the next frame follows.
            match (frames, rest.is_empty()) {
                (_, true) => break,
                (Frames::One, false) => return Err(bad("bytes after the zstd stream")),
                (Frames::Many, false) if rest.starts_with(&MAGIC) => continue,
                (Frames::Many, false) => return Err(bad("bytes after the zstd stream")),
            }
        }
        // All the input given and room left over, yet the frame goes on: it was cut.
        if rest.is_empty() && wrote < room {
            return Err(bad("zstd stream cut short"));
        }
    }
    Ok(out)
}

/// What the output is allocated at first: the frame's own content size where its header
/// gives it, else eight times the compressed bytes (transcripts shrink 3–4×; the memory is
/// only reserved, not touched, where it is not written).
fn first_capacity(compressed: &[u8]) -> usize {
    match zstd_safe::get_frame_content_size(compressed) {
        Ok(Some(size)) => usize::try_from(size).unwrap_or(usize::MAX),
        _ => compressed.len().saturating_mul(8),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(zstd_safe::compress_bound(bytes.len()));
        zstd_safe::compress(&mut out, bytes, 1).unwrap();
        out
    }

    #[test]
    fn frames_decompress_within_their_bound_and_broken_ones_are_refused() {
        let data: Vec<u8> = (0..200_000u32).flat_map(|k| k.to_le_bytes()).collect();
        let one = frame(&data);
        assert_eq!(decompress(&one, data.len(), 23, Frames::One).unwrap(), data);
        assert_eq!(
            decompress(&one, data.len() - 1, 23, Frames::One),
            Err(UnzstdError::TooLarge)
        );
        let mut two = one.clone();
        two.extend_from_slice(&frame(b"more"));
        let mut both = data.clone();
        both.extend_from_slice(b"more");
        assert_eq!(decompress(&two, 1 << 30, 23, Frames::Many).unwrap(), both);
        assert!(matches!(
            decompress(&two, 1 << 30, 23, Frames::One),
            Err(UnzstdError::Malformed(_))
        ));
        let cut = &one[..one.len() - 10];
        assert!(matches!(
            decompress(cut, 1 << 30, 23, Frames::One),
            Err(UnzstdError::Malformed(_))
        ));
        assert!(matches!(
            decompress(b"not zstd", 1 << 30, 23, Frames::One),
            Err(UnzstdError::Malformed(_))
        ));
        let mut garbage_after = one.clone();
        garbage_after.extend_from_slice(b"xyz");
        assert!(matches!(
            decompress(&garbage_after, 1 << 30, 23, Frames::Many),
            Err(UnzstdError::Malformed(_))
        ));
    }
}
