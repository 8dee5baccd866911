//! The bounds of the product contract (SPEC.md "Bounds"), each defined once: hosts enforce the
//! per-call ones, the engine and the driver the per-source ones.

/// At most this many bytes come back from one `read` call, over all its ranges.
pub const MAX_READ_BYTES: u64 = 4 * 1024 * 1024;

/// At most this many bytes of one source are read in one run (`--all`, a whole document, a
/// decompressed transcript), and at most this many of a database and its WAL are copied.
pub const MAX_SOURCE_BYTES: u64 = 64 * 1024 * 1024;

/// A native record over this many bytes is not parsed; it becomes a notice.
pub const MAX_RECORD_BYTES: u64 = 1024 * 1024;

/// Records per page, at most (`--limit`).
pub const MAX_LIMIT: usize = 200;

/// The first read of a `--tail`: this many bytes from the end, grown as needed.
pub const FIRST_CHUNK_BYTES: u64 = 64 * 1024;

/// A `list` reply over this many bytes is refused (a host that does not stop talking).
pub const MAX_LIST_REPLY_BYTES: usize = 64 * 1024 * 1024;

/// At most this many ranges in one `read` call.
pub const MAX_RANGES: usize = 16;

/// A `--since` read of a harness whose lines upsert by id (Gemini) replays at most this much of
/// the source before its cursor to learn which ids it returned. Gemini appends a message again
/// only while it is the newest one, so its first copy is never far back.
pub const UPSERT_REPLAY_BYTES: u64 = 4 * 1024 * 1024;

/// Listing reads this much of a transcript whose session id is in its first line (Gemini's
/// header, about 250 bytes) to find that id.
pub const ID_HEAD_BYTES: u64 = 4096;

/// `resume` reads this much of a transcript's start to find its working directory and id.
pub const RESUME_HEAD_BYTES: u64 = 64 * 1024;
