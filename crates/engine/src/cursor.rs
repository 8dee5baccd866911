//! Cursors: opaque, versioned, validated data — never filesystem authority. Two classes share
//! the version byte and the checksum: the line class (byte positions in a file) and the row
//! class (logical keys in a database, [`RowCursor`]).
//!
//! A line-class cursor
//! binds host, harness and session (as a hash), the position after the last record returned (a
//! line start plus how many of that line's records were already returned), a blake3 hash of a
//! bounded window of bytes ending at the last consumed line end, and a hash of the source's
//! first bytes. A checksum rejects edited or truncated cursors.
//!
//! Wire form: URL-safe base64 without padding (`[A-Za-z0-9_-]`) of
//! `version(1) kind(1) binding(16) resume(8) skip(4) window_end(8) window_len(4)
//! window_hash(16) head_len(4) head_hash(16) flags(1) checksum(4)`, integers big-endian.
//! Kind 4 is the same with a [`PathHint`] before the checksum: `harness_len(1) harness
//! rel_len(2) rel`, where the session's file was (kind 1 is what a cursor without one, or one
//! too long for [`MAX_CURSOR_CHARS`] with it, is written as; both are read).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use clankie_model::limits::MAX_RECORD_BYTES;

/// What a line cursor carries of where its file was ([`LineCursor::hint`]).
pub use clankie_model::PathHint;

const VERSION: u8 = 1;
const KIND_LINES: u8 = 1;
const KIND_ROWS: u8 = 2;
/// A row cursor anchored at its key rather than at a position ([`RowCursor::anchored`]).
const KIND_ROWS_ANCHORED: u8 = 3;
/// A line cursor that also names its file below the root ([`LineCursor::hint`]).
const KIND_LINES_HINTED: u8 = 4;
/// Longest record key a row cursor carries.
pub const MAX_KEY_BYTES: usize = 512;
const ENCODED_LEN: usize = 1 + 1 + 16 + 8 + 4 + 8 + 4 + 16 + 4 + 16 + 1 + 4;
/// Longest cursor string we accept (SPEC: at most 1024 characters).
pub const MAX_CURSOR_CHARS: usize = 1024;
/// Bytes hashed before a cursor's position, and at the head of the source.
pub const WINDOW_BYTES: u64 = 4096;
pub const HEAD_BYTES: u64 = 4096;
const FLAG_RECORDS_BEFORE: u8 = 1;

/// A decoded cursor of either class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cursor {
    Lines(LineCursor),
    Rows(RowCursor),
}

impl Cursor {
    pub fn encode(&self) -> String {
        match self {
            Cursor::Lines(c) => c.encode(),
            Cursor::Rows(c) => c.encode(),
        }
    }

    /// Decodes and validates a cursor string of either class. Structure only: whether it
    /// belongs to the source being read is [`Cursor::check_binding`].
    pub fn decode(text: &str) -> Result<Cursor, CursorError> {
        let buf = decode_checked(text)?;
        match buf[1] {
            KIND_LINES | KIND_LINES_HINTED => LineCursor::from_body(&buf).map(Cursor::Lines),
            KIND_ROWS | KIND_ROWS_ANCHORED => RowCursor::from_body(&buf).map(Cursor::Rows),
            _ => Err(CursorError::Invalid("unknown cursor class")),
        }
    }

    /// Refuses a cursor made for another source.
    pub fn check_binding(&self, binding: &[u8; 16]) -> Result<(), CursorError> {
        let own = match self {
            Cursor::Lines(c) => &c.binding,
            Cursor::Rows(c) => &c.binding,
        };
        if own == binding {
            Ok(())
        } else {
            Err(CursorError::Foreign)
        }
    }
}

/// The row-class cursor (SQLite sources): the id of the last record returned (its logical key),
/// how many records precede and include it, and a hash of those records' ids and contents (the
/// normalized prefix). A record changed or deleted before the key changes the hash: `reset`.
///
/// An anchored cursor (a `--tail` page of a database session read from its newest rows only,
/// which does not know how many records precede it) counts and hashes only the records of its
/// page, ending at the key: `--since` finds the key, checks those records, and goes on after it.
///
/// Wire form: `version(1) kind(1)=2 (3: anchored) binding(16) position(8) prefix_hash(16)
/// key_len(2) key checksum(4)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowCursor {
    pub binding: [u8; 16],
    /// Records up to and including the key (0: nothing returned yet, `key` empty); anchored:
    /// the records hashed, the key's and those just before it.
    pub position: u64,
    pub prefix_hash: [u8; 16],
    /// The last returned record's id.
    pub key: String,
    /// The records hashed end at the key but need not start at the source's start.
    pub anchored: bool,
}

impl RowCursor {
    pub fn encode(&self) -> String {
        let key = self.key.as_bytes();
        let mut buf = Vec::with_capacity(1 + 1 + 16 + 8 + 16 + 2 + key.len() + 4);
        buf.push(VERSION);
        buf.push(if self.anchored {
            KIND_ROWS_ANCHORED
        } else {
            KIND_ROWS
        });
        buf.extend_from_slice(&self.binding);
        buf.extend_from_slice(&self.position.to_be_bytes());
        buf.extend_from_slice(&self.prefix_hash);
        buf.extend_from_slice(&(key.len() as u16).to_be_bytes());
        buf.extend_from_slice(key);
        let check = blake3::hash(&buf);
        buf.extend_from_slice(&check.as_bytes()[..4]);
        URL_SAFE_NO_PAD.encode(buf)
    }

    fn from_body(body: &[u8]) -> Result<RowCursor, CursorError> {
        const FIXED: usize = 1 + 1 + 16 + 8 + 16 + 2;
        if body.len() < FIXED {
            return Err(CursorError::Invalid("wrong length"));
        }
        let mut r = Reader { buf: &body[2..] };
        let binding = r.array();
        let position = r.u64();
        let prefix_hash = r.array();
        let key_len = usize::from(u16::from_be_bytes(r.take::<2>()));
        if r.buf.len() != key_len || key_len > MAX_KEY_BYTES {
            return Err(CursorError::Invalid("wrong length"));
        }
        let key = std::str::from_utf8(r.buf)
            .map_err(|_| CursorError::Invalid("key is not UTF-8"))?
            .to_string();
        if (position == 0) != key.is_empty() {
            return Err(CursorError::Invalid("inconsistent fields"));
        }
        Ok(RowCursor {
            binding,
            position,
            prefix_hash,
            key,
            anchored: body[1] == KIND_ROWS_ANCHORED,
        })
    }
}

/// The prefix hash of a row cursor: blake3 over each record's id and content hash, in order.
pub fn prefix_hash<'a>(items: impl IntoIterator<Item = (&'a str, &'a [u8; 16])>) -> [u8; 16] {
    let mut hasher = PrefixHasher::default();
    for (id, content) in items {
        hasher.push(id, content);
    }
    hasher.finish()
}

/// [`prefix_hash`] a record at a time: a source that pages past records it does not hold (a
/// terminal recording replayed past a cursor) hashes them as they go by.
#[derive(Debug, Clone, Default)]
pub struct PrefixHasher(blake3::Hasher);

impl PrefixHasher {
    /// Adds the next record: its id and content hash.
    pub fn push(&mut self, id: &str, content: &[u8; 16]) {
        self.0.update(&(id.len() as u64).to_be_bytes());
        self.0.update(id.as_bytes());
        self.0.update(content);
    }

    /// The prefix hash of the records pushed so far.
    pub fn finish(&self) -> [u8; 16] {
        truncated(self.0.finalize())
    }
}

// Hashers compare by what they would give: `RowRecords` compares whole in tests.
impl PartialEq for PrefixHasher {
    fn eq(&self, other: &PrefixHasher) -> bool {
        self.finish() == other.finish()
    }
}

/// Checks length, alphabet, version and checksum; returns the body without the checksum.
fn decode_checked(text: &str) -> Result<Vec<u8>, CursorError> {
    if text.is_empty() || text.len() > MAX_CURSOR_CHARS {
        return Err(CursorError::Invalid("wrong length"));
    }
    if !text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(CursorError::Invalid("characters outside [A-Za-z0-9_-]"));
    }
    let mut buf = URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| CursorError::Invalid("not base64"))?;
    if buf.first() != Some(&VERSION) {
        return Err(CursorError::Invalid("unknown version"));
    }
    if buf.len() < 2 + 4 {
        return Err(CursorError::Invalid("wrong length"));
    }
    let split = buf.len() - 4;
    if blake3::hash(&buf[..split]).as_bytes()[..4] != buf[split..] {
        return Err(CursorError::Invalid(
            "checksum mismatch (edited or truncated)",
        ));
    }
    buf.truncate(split);
    Ok(buf)
}

/// A decoded line-class cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineCursor {
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
    /// Where the source's file was when the cursor was made: not part of what it verifies.
    pub hint: Option<PathHint>,
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

impl LineCursor {
    /// Builds a cursor from the consumed window bytes (ending at `window_end`) and head bytes.
    pub fn new(
        binding: [u8; 16],
        resume: u64,
        skip: u32,
        window_end: u64,
        window: &[u8],
        head: &[u8],
        records_before: bool,
    ) -> LineCursor {
        let window_hash = hash16(window);
        // A file of at most 4 KiB is its own head and window (the bulk of a first `check` of
        // small sessions): hashed once, the same bytes give the same hash.
        let head_hash = if head == window {
            window_hash
        } else {
            hash16(head)
        };
        LineCursor {
            binding,
            resume,
            skip,
            window_end,
            window_len: window.len() as u32,
            window_hash,
            head_len: head.len() as u32,
            head_hash,
            records_before,
            hint: None,
        }
    }

    /// This cursor, with the path where its file is.
    pub fn with_hint(mut self, hint: PathHint) -> LineCursor {
        self.hint = Some(hint);
        self
    }

    /// The cursor string: kind 4 with its hint, kind 1 without one or when the hint would
    /// make it longer than [`MAX_CURSOR_CHARS`].
    pub fn encode(&self) -> String {
        if let Some(hint) = &self.hint
            && let (Ok(harness_len), Ok(rel_len)) = (
                u8::try_from(hint.harness.len()),
                u16::try_from(hint.rel.len()),
            )
        {
            let mut buf = self.body(KIND_LINES_HINTED);
            buf.push(harness_len);
            buf.extend_from_slice(hint.harness.as_bytes());
            buf.extend_from_slice(&rel_len.to_be_bytes());
            buf.extend_from_slice(&hint.rel);
            let text = checksummed(buf);
            if text.len() <= MAX_CURSOR_CHARS {
                return text;
            }
        }
        checksummed(self.body(KIND_LINES))
    }

    /// The fields both kinds share, after the version and `kind`.
    fn body(&self, kind: u8) -> Vec<u8> {
        let mut buf = Vec::with_capacity(ENCODED_LEN);
        buf.push(VERSION);
        buf.push(kind);
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
        buf
    }

    fn from_body(body: &[u8]) -> Result<LineCursor, CursorError> {
        const FIXED: usize = ENCODED_LEN - 4;
        let (body, hint) = match body[1] {
            KIND_LINES_HINTED if body.len() > FIXED => {
                (&body[..FIXED], Some(hint_of(&body[FIXED..])?))
            }
            KIND_LINES if body.len() == FIXED => (body, None),
            _ => return Err(CursorError::Invalid("wrong length")),
        };
        let mut r = Reader { buf: &body[2..] };
        let cursor = LineCursor {
            binding: r.array(),
            resume: r.u64(),
            skip: r.u32(),
            window_end: r.u64(),
            window_len: r.u32(),
            window_hash: r.array(),
            head_len: r.u32(),
            head_hash: r.array(),
            records_before: r.buf[0] & FLAG_RECORDS_BEFORE != 0,
            hint,
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
}

/// A hint's bytes: `harness_len(1) harness rel_len(2) rel`, nothing after. What the path may
/// hold is not checked here: every host confines it as any path it is given.
fn hint_of(bytes: &[u8]) -> Result<PathHint, CursorError> {
    let bad = CursorError::Invalid("bad path hint");
    let (&harness_len, rest) = bytes.split_first().ok_or(bad.clone())?;
    let harness = rest.get(..usize::from(harness_len)).ok_or(bad.clone())?;
    let rest = &rest[harness.len()..];
    let rel_len = rest.get(..2).ok_or(bad.clone())?;
    let rel = &rest[2..];
    if usize::from(u16::from_be_bytes([rel_len[0], rel_len[1]])) != rel.len() || rel.is_empty() {
        return Err(bad);
    }
    let harness = std::str::from_utf8(harness).map_err(|_| bad.clone())?;
    Ok(PathHint {
        harness: harness.to_string(),
        rel: rel.to_vec(),
    })
}

/// `buf` with its checksum, as the cursor string.
fn checksummed(mut buf: Vec<u8>) -> String {
    let check = blake3::hash(&buf);
    buf.extend_from_slice(&check.as_bytes()[..4]);
    URL_SAFE_NO_PAD.encode(buf)
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
        Cursor::Lines(LineCursor::new(
            binding("local", "claude", "abc"),
            100,
            0,
            100,
            b"window",
            b"head",
            true,
        ))
    }

    #[test]
    fn row_cursors_round_trip_and_refuse_edits() {
        let c = Cursor::Rows(RowCursor {
            binding: binding("local", "opencode", "ses_1"),
            position: 3,
            prefix_hash: hash16(b"p"),
            key: "prt_0f21b02d5001NcGUD0hmNfrPyr:result".into(),
            anchored: false,
        });
        let text = c.encode();
        assert!(text.len() <= MAX_CURSOR_CHARS);
        assert_eq!(Cursor::decode(&text).unwrap(), c);
        assert!(Cursor::decode(&text[..text.len() - 1]).is_err());
        let long = Cursor::Rows(RowCursor {
            binding: [0; 16],
            position: 1,
            prefix_hash: [0; 16],
            key: "k".repeat(MAX_KEY_BYTES),
            anchored: false,
        });
        assert!(long.encode().len() <= MAX_CURSOR_CHARS);
        assert_eq!(Cursor::decode(&long.encode()).unwrap(), long);
        let anchored = Cursor::Rows(RowCursor {
            binding: [1; 16],
            position: 50,
            prefix_hash: [2; 16],
            key: "prt_1".into(),
            anchored: true,
        });
        assert_eq!(Cursor::decode(&anchored.encode()).unwrap(), anchored);
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

    /// A cursor an earlier version wrote (kind 1, no hint), as `read --tail --json` printed it.
    const OLD_CURSOR: &str = "AQE9BXxro2NkIZI8PiWJmMyYAAAAAEAAEUYAAAAAAAAAAEAAEUYAABAAKqwN1zi63bPxQMhgtCLQjgAAEADioo61XNaOHyhjdjsjGoIxAefQSHI";

    #[test]
    fn a_path_hint_round_trips_and_cursors_without_one_are_read_as_before() {
        let Cursor::Lines(plain) = sample() else {
            unreachable!()
        };
        let hint = PathHint {
            harness: "claude".into(),
            rel: b"projects/-w-app/abc.jsonl".to_vec(),
        };
        let hinted = plain.clone().with_hint(hint.clone());
        let text = hinted.encode();
        assert!(text.len() <= MAX_CURSOR_CHARS);
        assert_eq!(
            Cursor::decode(&text).unwrap(),
            Cursor::Lines(hinted.clone())
        );
        // Without a hint the string is what it always was (kind 1).
        assert!(plain.encode().len() < text.len());
        assert_eq!(
            URL_SAFE_NO_PAD.decode(plain.encode()).unwrap()[1],
            KIND_LINES
        );
        let Cursor::Lines(old) = Cursor::decode(OLD_CURSOR).unwrap() else {
            panic!("an old cursor is a line cursor")
        };
        assert_eq!(old.hint, None);
        assert_eq!(old.encode(), OLD_CURSOR);
        // A hint that would make the cursor too long is left out.
        let long = plain.clone().with_hint(PathHint {
            harness: "claude".into(),
            rel: vec![b'a'; 900],
        });
        let Cursor::Lines(decoded) = Cursor::decode(&long.encode()).unwrap() else {
            unreachable!()
        };
        assert_eq!(decoded.hint, None);
        assert_eq!(decoded, plain);
        // Edits are refused by the checksum; well-formed hint bytes are required even with a
        // good one.
        let mut chars: Vec<char> = text.chars().collect();
        let at = chars.len() - 10;
        chars[at] = if chars[at] == 'A' { 'B' } else { 'A' };
        assert!(Cursor::decode(&chars.into_iter().collect::<String>()).is_err());
        let body = plain.body(KIND_LINES_HINTED);
        for tail in [
            &[][..],
            &[6, b'c'],
            &[1, b'c', 0, 5, b'x'],
            &[1, b'c', 0, 0],
        ] {
            let mut bytes = body.clone();
            bytes.extend_from_slice(tail);
            assert!(Cursor::decode(&checksummed(bytes)).is_err(), "{tail:?}");
        }
    }

    /// The hint is written as the harness's name, so the strings already issued still decode;
    /// a name no harness has is read as it is (it is for no root).
    #[test]
    fn a_hint_names_its_harness_on_the_wire() {
        let Cursor::Lines(plain) = sample() else {
            unreachable!()
        };
        let claude = crate::harness::by_name("claude").unwrap();
        let rel = b"projects/-w-app/abc.jsonl";
        let wire = |name: &str| {
            let mut bytes = plain.body(KIND_LINES_HINTED);
            bytes.push(name.len() as u8);
            bytes.extend_from_slice(name.as_bytes());
            bytes.extend_from_slice(&(rel.len() as u16).to_be_bytes());
            bytes.extend_from_slice(rel);
            checksummed(bytes)
        };
        let hinted = plain.clone().with_hint(PathHint::new(claude, rel.to_vec()));
        assert_eq!(hinted.encode(), wire("claude"));
        let Cursor::Lines(decoded) = Cursor::decode(&wire("claude")).unwrap() else {
            unreachable!()
        };
        assert_eq!(decoded, hinted);
        assert!(decoded.hint.as_ref().is_some_and(|h| h.is_for(claude)));
        let Cursor::Lines(stranger) = Cursor::decode(&wire("no-such-harness")).unwrap() else {
            unreachable!()
        };
        assert!(crate::harness::all().all(|h| !stranger.hint.as_ref().unwrap().is_for(h)));
    }
}
