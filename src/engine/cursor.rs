//! Cursors: opaque, versioned, validated data — never filesystem authority. A line-class cursor
//! binds host, harness and session (as a hash), the position after the last record returned (a
//! line start plus how many of that line's records were already returned), a blake3 hash of a
//! bounded window of bytes ending at the last consumed line end, and a hash of the source's
//! first bytes. A checksum rejects edited or truncated cursors.
//!
//! Wire form: URL-safe base64 without padding (`[A-Za-z0-9_-]`) of
//! `version(1) kind(1) binding(16) resume(8) skip(4) window_end(8) window_len(4)
//! window_hash(16) head_len(4) head_hash(16) flags(1) checksum(4)`, integers big-endian.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::lines::MAX_RECORD_BYTES;

const VERSION: u8 = 1;
const KIND_LINES: u8 = 1;
const ENCODED_LEN: usize = 1 + 1 + 16 + 8 + 4 + 8 + 4 + 16 + 4 + 16 + 1 + 4;
/// Longest cursor string we accept (SPEC: at most 1024 characters).
pub const MAX_CURSOR_CHARS: usize = 1024;
/// Bytes hashed before a cursor's position, and at the head of the source.
pub const WINDOW_BYTES: u64 = 4096;
pub const HEAD_BYTES: u64 = 4096;
const FLAG_RECORDS_BEFORE: u8 = 1;

/// A decoded line-class cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// Hash of (host, harness, session): which source this cursor belongs to.
    pub binding: [u8; 16],
    /// Offset of the line to resume at.
    pub resume: u64,
    /// How many records of the line at `resume` were already returned.
    pub skip: u32,
    /// End of the last consumed line; the hash window ends here.
    pub window_end: u64,
    pub window_len: u32,
    pub window_hash: [u8; 16],
    pub head_len: u32,
    pub head_hash: [u8; 16],
    /// Whether any record came before this position.
    pub records_before: bool,
}

/// Why a cursor string was refused (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    #[error("invalid cursor: {0}")]
    Invalid(&'static str),
    #[error("cursor belongs to another host or session")]
    Foreign,
}

/// The binding hash of a source.
pub fn binding(host: &str, harness: &str, session: &str) -> [u8; 16] {
    let mut hasher = blake3::Hasher::new();
    for part in [host, harness, session] {
        hasher.update(&(part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    truncated(hasher.finalize())
}

/// A truncated blake3 of `bytes`.
pub fn hash16(bytes: &[u8]) -> [u8; 16] {
    truncated(blake3::hash(bytes))
}

fn truncated(hash: blake3::Hash) -> [u8; 16] {
    let mut out = [0u8; 16];
    out.copy_from_slice(&hash.as_bytes()[..16]);
    out
}

impl Cursor {
    /// Builds a cursor from the consumed window bytes (ending at `window_end`) and head bytes.
    pub fn new(
        binding: [u8; 16],
        resume: u64,
        skip: u32,
        window_end: u64,
        window: &[u8],
        head: &[u8],
        records_before: bool,
    ) -> Cursor {
        Cursor {
            binding,
            resume,
            skip,
            window_end,
            window_len: window.len() as u32,
            window_hash: hash16(window),
            head_len: head.len() as u32,
            head_hash: hash16(head),
            records_before,
        }
    }

    pub fn encode(&self) -> String {
        let mut buf = Vec::with_capacity(ENCODED_LEN);
        buf.push(VERSION);
        buf.push(KIND_LINES);
        buf.extend_from_slice(&self.binding);
        buf.extend_from_slice(&self.resume.to_be_bytes());
        buf.extend_from_slice(&self.skip.to_be_bytes());
        buf.extend_from_slice(&self.window_end.to_be_bytes());
        buf.extend_from_slice(&self.window_len.to_be_bytes());
        buf.extend_from_slice(&self.window_hash);
        buf.extend_from_slice(&self.head_len.to_be_bytes());
        buf.extend_from_slice(&self.head_hash);
        buf.push(if self.records_before {
            FLAG_RECORDS_BEFORE
        } else {
            0
        });
        let check = blake3::hash(&buf);
        buf.extend_from_slice(&check.as_bytes()[..4]);
        URL_SAFE_NO_PAD.encode(buf)
    }

    /// Decodes and validates a cursor string. Structure only: whether it belongs to the source
    /// being read is [`Cursor::check_binding`].
    pub fn decode(text: &str) -> Result<Cursor, CursorError> {
        if text.is_empty() || text.len() > MAX_CURSOR_CHARS {
            return Err(CursorError::Invalid("wrong length"));
        }
        if !text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(CursorError::Invalid("characters outside [A-Za-z0-9_-]"));
        }
        let buf = URL_SAFE_NO_PAD
            .decode(text)
            .map_err(|_| CursorError::Invalid("not base64"))?;
        if buf.first() != Some(&VERSION) {
            return Err(CursorError::Invalid("unknown version"));
        }
        if buf.len() != ENCODED_LEN {
            return Err(CursorError::Invalid("wrong length"));
        }
        let (body, check) = buf.split_at(ENCODED_LEN - 4);
        if &blake3::hash(body).as_bytes()[..4] != check {
            return Err(CursorError::Invalid(
                "checksum mismatch (edited or truncated)",
            ));
        }
        if body[1] != KIND_LINES {
            return Err(CursorError::Invalid("unknown cursor class"));
        }
        let mut r = Reader { buf: &body[2..] };
        let cursor = Cursor {
            binding: r.array(),
            resume: r.u64(),
            skip: r.u32(),
            window_end: r.u64(),
            window_len: r.u32(),
            window_hash: r.array(),
            head_len: r.u32(),
            head_hash: r.array(),
            records_before: r.buf[0] & FLAG_RECORDS_BEFORE != 0,
        };
        let consistent = cursor.resume <= cursor.window_end
            && cursor.window_end - cursor.resume <= MAX_RECORD_BYTES + 1
            && (cursor.skip == 0) == (cursor.resume == cursor.window_end)
            && u64::from(cursor.window_len) <= cursor.window_end.min(WINDOW_BYTES)
            && u64::from(cursor.head_len) <= cursor.window_end.min(HEAD_BYTES);
        if !consistent {
            return Err(CursorError::Invalid("inconsistent fields"));
        }
        Ok(cursor)
    }

    /// Refuses a cursor made for another source.
    pub fn check_binding(&self, binding: &[u8; 16]) -> Result<(), CursorError> {
        if &self.binding == binding {
            Ok(())
        } else {
            Err(CursorError::Foreign)
        }
    }
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        out.copy_from_slice(&self.buf[..N]);
        self.buf = &self.buf[N..];
        out
    }
    fn array(&mut self) -> [u8; 16] {
        self.take::<16>()
    }
    fn u64(&mut self) -> u64 {
        u64::from_be_bytes(self.take::<8>())
    }
    fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.take::<4>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Cursor {
        Cursor::new(
            binding("local", "claude", "abc"),
            100,
            0,
            100,
            b"window",
            b"head",
            true,
        )
    }

    #[test]
    fn round_trips_within_the_alphabet() {
        let c = sample();
        let text = c.encode();
        assert!(text.len() <= MAX_CURSOR_CHARS);
        assert!(
            text.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_eq!(Cursor::decode(&text).unwrap(), c);
    }

    #[test]
    fn tampering_is_refused() {
        let text = sample().encode();
        let mut chars: Vec<char> = text.chars().collect();
        for i in [0, 5, 20, chars.len() - 1] {
            let orig = chars[i];
            chars[i] = if orig == 'A' { 'B' } else { 'A' };
            let edited: String = chars.iter().collect();
            assert!(Cursor::decode(&edited).is_err(), "edit at {i} accepted");
            chars[i] = orig;
        }
        for bad in [
            "",
            "abc",
            "!!!!",
            &text[..text.len() - 2],
            &"A".repeat(2000),
        ] {
            assert!(Cursor::decode(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn foreign_binding_is_refused() {
        let c = sample();
        assert!(c.check_binding(&binding("local", "claude", "abc")).is_ok());
        assert_eq!(
            c.check_binding(&binding("devbox", "claude", "abc")),
            Err(CursorError::Foreign)
        );
        assert_eq!(
            c.check_binding(&binding("local", "claude", "abd")),
            Err(CursorError::Foreign)
        );
    }
}
