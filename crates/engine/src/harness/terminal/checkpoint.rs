//! A tail read from a checkpoint: a point near a recording's end from which its replay gives
//! the records a replay from the start gives there, so that `--tail` emulates the recording's
//! end only.
//!
//! A checkpoint is where the terminal is a fresh one whatever came before:
//! - a full reset, `ESC c` (RIS): `avt` makes the terminal a new one of the same size (modes,
//!   scroll region, character sets, tab stops, both screens, the saved cursors), the parser
//!   is back in its ground state, insert mode is off, and the collector has handed on every
//!   line the reset cleared. `ESC` leaves any state of the parser (a string, a sequence) for
//!   an escape, so `ESC c` is a reset wherever it stands;
//! - the start of a recording: an asciinema header, a `Script started on …` line, or output
//!   after a recording ended.
//!
//! What the replay after a checkpoint still takes from the bytes before it is their framing,
//! not their emulation: which recording it is (the generation), the terminal's size (the
//! header's, the last asciinema resize), the time of each event (asciinema v3 counts from the
//! previous event), and whether a raw log has shown a `\r` yet. So the bytes before the
//! checkpoint are read without emulating them ([`Dry`]): their headers, footers and events
//! are parsed and their output scanned for the reset, and nothing else is done with them.
//!
//! A clear (`CSI 2 J`, `CSI 3 J`) or entering or leaving the alternate screen is not a
//! checkpoint: modes, the scroll region, the character sets and the screen under a
//! full-screen program stay as they were, so what follows depends on what came before.
//!
//! Records counted from a checkpoint are named by it: `t<generation>@<byte>.<n>`, the `n`th
//! record after the checkpoint at `byte` (where the reset or the recording's header starts),
//! since how many records came before it is what a replay from the start tells. A `--since`
//! with a cursor at such a record replays from the same checkpoint again.
//!
//! Bounds: a replay from a checkpoint is bounded as one from the start, counted from the
//! checkpoint (its output by the bytes after it). A recording whose replay from the start
//! stops at a bound before the checkpoint gives, from the checkpoint, the records after it.

use memchr::memmem;

use super::{Replay, bounds, run, source_of};
use crate::SourceCtx;
use crate::cursor::RowCursor;
use crate::rows::RowRecords;
use clankie_model::TerminalSource;

/// How many checkpoints a tail tries before it replays from the start: each try reads the
/// framing of the bytes before it again.
const MAX_TRIES: usize = 6;

/// The full reset, as a raw log or typescript holds it.
const RIS: &[u8] = b"\x1bc";

/// What a replay keeps of the bytes before its checkpoint: whether a recording is live, and
/// its terminal's size.
pub(super) struct Dry {
    /// The byte at or after which the first full reset or recording start is the checkpoint.
    at: usize,
    /// The size of the live recording's terminal (`None`: no recording is live).
    pub(super) live: Option<(usize, usize)>,
    /// The live recording's output so far ends with `ESC`: a `c` next completes a reset
    /// (`reset` writes byte by byte, and asciinema may record the two in events of their own).
    escape: bool,
}

impl Dry {
    pub(super) fn new(at: usize) -> Dry {
        Dry {
            at,
            live: None,
            escape: false,
        }
    }

    /// A resize of the live recording's terminal.
    pub(super) fn resize(&mut self, size: (usize, usize)) {
        if let Some(live) = &mut self.live {
            *live = size;
        }
    }
}

impl Replay<'_> {
    /// A recording of `size` starts: before the checkpoint it is only noted (true); at or
    /// after it, the replay passes the checkpoint and the recording is emulated (false).
    pub(super) fn dry_start(&mut self, size: (usize, usize)) -> bool {
        let Some(dry) = &mut self.dry else {
            return false;
        };
        if self.spent.consumed as usize <= dry.at {
            dry.live = Some(size);
            dry.escape = false;
            return true;
        }
        self.pass_checkpoint();
        false
    }

    /// Output before the checkpoint: scanned for the full reset that is the checkpoint, and
    /// for a raw log's first `\r`. Returns where in `text` the replay goes live (just after
    /// the reset, or at its start when a recording starts there), or `None` while it does not.
    pub(super) fn dry_output(&mut self, text: &str, start: Option<usize>) -> Option<usize> {
        let live = self.dry.as_ref()?.live;
        if live.is_none() {
            // Output with no recording live starts one.
            self.start(None);
            if self.dry.is_none() {
                return Some(0);
            }
        }
        let (at, escape) = self.dry.as_ref().map(|d| (d.at, d.escape))?;
        // An asciinema event counts whole: its bytes end past the checkpoint.
        let past = |i: usize| match start {
            Some(start) => start + i >= at,
            None => self.spent.consumed as usize > at,
        };
        // Where the reset ends: a `c` after an `ESC` the output before ended with, or the
        // first `ESC c` past the checkpoint.
        let end = if escape && text.starts_with('c') && past(0) {
            Some(1)
        } else {
            memmem::find_iter(text.as_bytes(), RIS)
                .find(|&i| past(i))
                .map(|i| i + RIS.len())
        };
        let scanned = &text[..end.unwrap_or(text.len())];
        if let Some(dry) = &mut self.dry
            && !text.is_empty()
        {
            dry.escape = text.ends_with('\u{1b}');
        }
        if self.bare_newlines && scanned.contains('\r') {
            self.bare_newlines = false;
        }
        if let Some(start) = start {
            self.consumed(start + scanned.len());
        }
        let end = end?;
        self.pass_checkpoint();
        Some(end)
    }

    /// Leaves the bytes before the checkpoint: the bounds count from it, the records are named
    /// by it, and the live recording's terminal is a fresh one.
    fn pass_checkpoint(&mut self) {
        let Some(dry) = self.dry.take() else {
            return;
        };
        self.from = Some(dry.at);
        self.base = dry.at as u64;
        self.spent = bounds::Spent {
            consumed: self.spent.consumed.saturating_sub(self.base),
            ..bounds::Spent::default()
        };
        if let Some((cols, rows)) = dry.live
            && self.spend_work(bounds::screen_cost(cols, rows))
        {
            self.emulator = Some(super::Emulator::new(cols, rows));
        }
    }
}

/// The newest `newest` records of a recording and its screen, replayed from the latest
/// checkpoint after which at least that many records come (from the start when there is
/// none); the note says which, for `-v`.
pub(super) fn tail(
    ctx: &SourceCtx,
    bytes: &[u8],
    fallback_size: Option<(usize, usize)>,
    newest: usize,
    page_output: u64,
) -> RowRecords {
    let source = source_of(bytes);
    let mut before = bytes.len();
    let mut why = "it holds no full reset (ESC c) and no later recording start";
    for _ in 0..MAX_TRIES {
        let Some(at) = last_candidate(source, &bytes[..before]) else {
            break;
        };
        let replay = run(
            ctx,
            bytes,
            fallback_size,
            Some(newest),
            None,
            page_output,
            Some(at),
        );
        if replay.from.is_none() {
            // Bytes that read as a reset but are not one (an escaped backslash, a `c` in an
            // event's text): the one before them.
            before = at;
            why = "it holds no full reset (ESC c) and no later recording start";
            continue;
        }
        if replay.counted >= newest.max(1) || replay.stopped {
            let mut rows = replay.into_rows();
            rows.note = Some(format!(
                "the tail was replayed from the checkpoint at byte {at} of {} (a full reset or a recording's start): the bytes before it were read for their framing only",
                bytes.len()
            ));
            return rows;
        }
        // Too few records after it: a checkpoint at least four times as far from the end.
        why = "the records asked for reach back past its checkpoints";
        let distance = (bytes.len() - at).saturating_mul(4);
        before = at.min(bytes.len().saturating_sub(distance));
    }
    let mut rows = run(
        ctx,
        bytes,
        fallback_size,
        Some(newest),
        None,
        page_output,
        None,
    )
    .into_rows();
    rows.note = Some(format!(
        "the tail replayed the recording from its start: {why}"
    ));
    rows
}

/// The page after an anchored cursor at a record counted from a checkpoint: the records from
/// that checkpoint again. `None` when the cursor names no checkpoint, or the bytes there are no
/// longer one or no longer give its record (then the read is from the start, and resets).
pub(super) fn since(
    ctx: &SourceCtx,
    bytes: &[u8],
    fallback_size: Option<(usize, usize)>,
    after: &RowCursor,
    page_output: u64,
) -> Option<RowRecords> {
    if !after.anchored {
        return None;
    }
    let at = named_checkpoint(&after.key)?;
    let replay = run(ctx, bytes, fallback_size, None, None, page_output, Some(at));
    if replay.from != Some(at) || !replay.records.iter().any(|r| r.id == after.key) {
        return None;
    }
    Some(replay.into_rows())
}

/// The checkpoint a record id counted from one names (`t<g>@<byte>.<n>`).
fn named_checkpoint(id: &str) -> Option<usize> {
    let rest = id.strip_prefix('t')?;
    let (_, rest) = rest.split_once('@')?;
    rest.split_once('.')?.0.parse().ok()
}

/// Where the last place in `bytes` that may be a checkpoint starts: a full reset, or a line
/// that starts a recording.
fn last_candidate(source: TerminalSource, bytes: &[u8]) -> Option<usize> {
    let line_start = |needle: &[u8]| memmem::rfind(bytes, needle).map(|i| i + 1);
    match source {
        // An event's string holds the reset JSON-escaped.
        TerminalSource::Asciinema => [
            memmem::rfind(bytes, br"\u001bc"),
            memmem::rfind(bytes, br"\u001Bc"),
            // An event that ends with the reset's `ESC`, its `c` in the next.
            memmem::rfind(bytes, br#"\u001b"]"#),
            memmem::rfind(bytes, br#"\u001B"]"#),
            line_start(b"\n{"),
        ]
        .into_iter()
        .flatten()
        .max(),
        TerminalSource::Script | TerminalSource::Raw => [
            memmem::rfind(bytes, RIS),
            line_start(b"\nScript started on "),
            line_start(b"\nScript done on "),
        ]
        .into_iter()
        .flatten()
        .max(),
    }
}

#[cfg(test)]
mod tests;
