//! The bounds of the product contract (SPEC.md "Bounds"), each defined once: hosts enforce the
//! per-call ones, the engine and the driver the per-source ones.

/// At most this many bytes come back from one `read` call, over all its ranges.
pub const MAX_READ_BYTES: u64 = 4 * 1024 * 1024;

/// Most bytes one batched read of an SSH host asks in one exec once its connection chose how
/// batches travel (`ssh/bulk.rs`; until then, one read call's [`MAX_READ_BYTES`], so that the
/// choice is timed on batches of that size): several read calls' worth.
/// Each exec costs the host an `sshd` session, its login shell, `sh` and the read's programs:
/// a first `grep` of 512 MiB over the loopback sshd in 4 MiB execs (130 of them) cost the
/// host 4.1 s of CPU sent plain, in 16 MiB ones after the choice (46 execs in all) 3.4 s. A batch's reply is held in memory until
/// decoded, and a host keeps a few in flight.
pub const MAX_BATCH_BYTES: u64 = 4 * MAX_READ_BYTES;

/// At most this many bytes of one source are read in one run (`--all`, a whole document, a
/// decompressed transcript), and at most this many of a database's pages and WAL are fetched
/// by one load of it (its own size does not matter).
pub const MAX_SOURCE_BYTES: u64 = 64 * 1024 * 1024;

/// A native record over this many bytes is not parsed; it becomes a notice.
pub const MAX_RECORD_BYTES: u64 = 1024 * 1024;

/// Records per page, at most (`--limit`).
pub const MAX_LIMIT: usize = 200;

/// Each record's text (a prompt, a reply, a tool's output or its JSON input) is cut to this many
/// bytes in an MCP answer (`clankie-read mcp`), so that [`MAX_LIMIT`] records stay within what
/// a model's context can take.
pub const MAX_RECORD_TEXT_BYTES: usize = 8 << 10;

/// The first read of a `--tail`: this many bytes from the end, grown as needed.
pub const FIRST_CHUNK_BYTES: u64 = 64 * 1024;

/// The first read of a `--tail` of one session (the `read` command): this many bytes before
/// its end, so that a page of records of a few KiB each comes in one read (one exec over SSH,
/// where each further read costs a round trip). Reads of many sessions (`check`) keep
/// [`FIRST_CHUNK_BYTES`], and the MCP server sizes its own from its last read.
pub const FIRST_TAIL_WINDOW_BYTES: u64 = 256 * 1024;

/// A `list` reply over this many bytes is refused (a host that does not stop talking).
pub const MAX_LIST_REPLY_BYTES: usize = 64 * 1024 * 1024;

/// A listing (one `list` call, over all its roots) of more files than this is refused (exit 6),
/// locally as over SSH. A heavy user keeps a few thousand transcripts per harness (Claude Code
/// prunes them after 30 days by default); this is fifty times that. The list reply's byte bound
/// alone would let a host send some three million short lines, at about 100 bytes each once
/// decoded and as much again once made into sessions.
pub const MAX_LIST_ENTRIES: usize = 250_000;

/// A listing that would hold more bytes than this is refused (exit 6): per file its entry and
/// its relative path, per root its directory (see [`crate::ListingBudget`]). Entries share their
/// root, so this follows what the reply carried, not its shape times the root's length. At the
/// entry bound it leaves some 130 bytes of path per file, more than a typical transcript path.
/// A run that lists, makes sessions of and searches a listing at either bound peaks near
/// 180 MiB (tests/it/hostile.rs measures it under 256 MiB): the reply, the listing and the
/// sessions each take about this much.
pub const MAX_LISTING_BYTES: usize = 48 * 1024 * 1024;

/// At most this many ranges in one `read` call. A database's scattered pages are a range each,
/// and each call costs the host its checks and its processes (`ls` before and after, the
/// copy, the encoder: about 10 ms on a busy host), so a walk's level of a few hundred pages is
/// best a call or two (a script's range is about 25 bytes of its text).
pub const MAX_RANGES: usize = 256;

/// A listing reads this much of the start of a transcript whose session id is written inside
/// it rather than in its name: Claude Code 2.0.x subagent files carry their parent's id, Gemini
/// CLI's header (about 250 bytes) its `sessionId`.
pub const NAMING_HEAD_BYTES: u64 = 4 * 1024;
/// A `--since` read of a harness whose lines upsert by id (Gemini) replays at most this much of
/// the source before its cursor to learn which ids it returned. Gemini appends a message again
/// only while it is the newest one, so its first copy is never far back.
pub const UPSERT_REPLAY_BYTES: u64 = 4 * 1024 * 1024;

/// `resume` reads this much of a transcript's start to find its working directory and id.
pub const RESUME_HEAD_BYTES: u64 = 64 * 1024;

/// `ls` reads this much of each shown transcript's start for its title and working directory.
pub const LS_HEAD_BYTES: u64 = 32 * 1024;

/// A host-wide `--follow` (`HOST:*`) keeps a cursor for at most this many sessions at once: the
/// most recently changed. A session past the bound that changes takes the place of the one
/// quiet longest (a warning says so, once per run), and shows its last
/// [`FOLLOW_WAKE_RECORDS`] records when it comes back.
pub const MAX_FOLLOWED_SESSIONS: usize = 64;

/// Of the sessions in databases, a host-wide `--follow` takes a cursor at its start for at most
/// this many (the most recently changed): each one's is a query of its own, several dependent
/// reads of the database. The others are known by their row's update time, read nothing while
/// it stays, and show their last [`FOLLOW_WAKE_RECORDS`] records when it moves.
pub const MAX_DATABASE_SESSIONS_AT_START: usize = 4;

/// Records shown of a session a host-wide follow did not follow when it changed (quiet since
/// before the follow started, or let go at the bound), as `tail -F` shows a file's last lines.
pub const FOLLOW_WAKE_RECORDS: usize = 10;
