//! The bounds of a terminal recording's replay: what its bytes may make the emulator do and
//! print, in proportion to the bytes replayed so far, so that a few bytes that ask for a lot
//! (`CSI 65535 b` repeats a character 65,535 times, `CSI 999 S` scrolls a screen of lines
//! off) cost a notice instead of gigabytes and minutes.
//!
//! - Every count a control sequence carries is clamped to the screen: repeats, insertions,
//!   deletions and erasures to its columns, scrolls, line insertions and cursor moves to its
//!   rows. One sequence therefore moves at most one screen of lines (at most 1000).
//! - Work: every operation costs one step, and the cells it touches one step per 16; the
//!   replay may spend [`WORK_PER_BYTE`] steps per byte replayed, plus [`WORK_ALLOWANCE`], and
//!   never more than [`MAX_WORK`]. Steps are counted, not timed, so a replay stops at the same
//!   byte on every machine.
//! - Output: the lines that become records cost their text plus [`LINE_COST`] bytes; they may
//!   cost [`OUTPUT_PER_BYTE`] times the bytes replayed. At most [`MAX_LINES`] lines come of
//!   one replay.
//! - A page holds at most [`MAX_OUTPUT`] of that output: the records past it are the next
//!   page's (the page ends with `more` and a cursor), not lost.
//!
//! The emulator keeps no scrollback of its own (`avt`'s limit of 0): a line that scrolls off
//! is handed to the collector at once and becomes a record, within the bounds above.

use avt::parser::{AnsiMode, DecMode, Function};

/// The output (the records' text and [`LINE_COST`] each) one byte replayed may give.
pub(crate) const OUTPUT_PER_BYTE: u64 = 16;
/// The most output one page of a recording holds, however large the recording: the records
/// after it are the next page's.
pub(crate) const MAX_OUTPUT: u64 = 64 << 20;
/// What a line costs of the output bound besides its text: its share of what holding and
/// printing one record costs (a record's NDJSON framing alone is over 100 bytes).
pub(crate) const LINE_COST: u64 = 32;
/// The most lines (records) one replay of a recording gives.
pub(crate) const MAX_LINES: u64 = 200_000;
/// The work steps one byte replayed may cost.
pub(crate) const WORK_PER_BYTE: u64 = 32;
/// Work steps any recording may spend besides its bytes' share: a few dozen clears of the
/// largest screen (1000×1000).
pub(crate) const WORK_ALLOWANCE: u64 = 4 << 20;
/// The most work steps one replay spends, however large the recording.
pub(crate) const MAX_WORK: u64 = 256 << 20;

/// What a replay has spent of its bounds, and the bytes it has replayed (which the bounds grow
/// with).
#[derive(Debug, Default, Clone)]
pub(crate) struct Spent {
    /// Bytes of the file replayed so far.
    pub(crate) consumed: u64,
    pub(crate) work: u64,
    pub(crate) output: u64,
    pub(crate) lines: u64,
}

impl Spent {
    /// The work steps the bytes replayed so far allow.
    pub(crate) fn work_bound(&self) -> u64 {
        WORK_PER_BYTE
            .saturating_mul(self.consumed)
            .saturating_add(WORK_ALLOWANCE)
            .min(MAX_WORK)
    }

    /// The output the bytes replayed so far allow.
    pub(crate) fn output_bound(&self) -> u64 {
        OUTPUT_PER_BYTE.saturating_mul(self.consumed)
    }

    /// Spends a line of `text_len` bytes of text, or says which bound it would cross.
    pub(crate) fn spend_line(&mut self, text_len: u64) -> Option<String> {
        if self.lines >= MAX_LINES {
            return Some(format!(
                "it scrolled {MAX_LINES} lines, the most one replay gives"
            ));
        }
        let cost = text_len.saturating_add(LINE_COST);
        if self.output.saturating_add(cost) > self.output_bound() {
            return Some(self.output_reason());
        }
        self.output += cost;
        self.lines += 1;
        None
    }

    /// Whether a line still scrolling off (`pending` bytes so far) fits the output bound.
    pub(crate) fn check_pending(&self, pending: u64) -> Option<String> {
        (self.output.saturating_add(pending) > self.output_bound()).then(|| self.output_reason())
    }

    fn output_reason(&self) -> String {
        format!(
            "its output reached the bound of {} bytes ({OUTPUT_PER_BYTE}× the {} bytes replayed)",
            self.output_bound(),
            self.consumed,
        )
    }
}

/// The work steps of clearing or allocating a screen of `cols`×`rows`.
pub(crate) fn screen_cost(cols: usize, rows: usize) -> u64 {
    1 + (cols as u64 * rows as u64) / 16
}

/// Clamps the counts of `function` to a screen of `cols`×`rows` and returns its work steps;
/// `insert` follows the insert mode (IRM), in which every character printed shifts its row.
pub(crate) fn clamp(function: &mut Function, cols: usize, rows: usize, insert: &mut bool) -> u64 {
    use Function::*;
    let row_cells = 1 + cols as u64 / 16;
    let screen = screen_cost(cols, rows);
    let print = if *insert { row_cells } else { 1 };
    let at_most = |n: &mut u16, max: usize| *n = (*n).min(u16::try_from(max).unwrap_or(u16::MAX));
    // avt reads a count of 0 as 1.
    let count = |n: u16| u64::from(n.max(1));
    match function {
        Print(_) => print,
        Rep(n) => {
            at_most(n, cols);
            count(*n) * print
        }
        Ich(n) | Dch(n) | Ech(n) => {
            at_most(n, cols);
            row_cells
        }
        // Tab stops are walked one by one.
        Cht(n) | Cbt(n) => {
            at_most(n, cols);
            count(*n)
        }
        Cuf(n) | Cub(n) | Cha(n) => {
            at_most(n, cols);
            1
        }
        Cud(n) | Cuu(n) | Cnl(n) | Cpl(n) | Vpr(n) | Vpa(n) => {
            at_most(n, rows);
            1
        }
        Cup(row, col) => {
            at_most(row, rows);
            at_most(col, cols);
            1
        }
        Decstbm(top, bottom) => {
            at_most(top, rows);
            at_most(bottom, rows);
            1
        }
        Il(n) | Dl(n) | Su(n) | Sd(n) => {
            at_most(n, rows);
            rows as u64 + count(*n) * row_cells
        }
        // A move down at the bottom scrolls a line off.
        Lf | Nel | Ri => row_cells,
        El(_) => row_cells,
        Ed(_) | Decaln => screen,
        Ris | Decstr => {
            *insert = false;
            screen
        }
        Decset(modes) | Decrst(modes) => modes
            .as_slice()
            .iter()
            .map(|mode| match mode {
                // Switching screens clears or copies one.
                DecMode::AltScreenBuffer | DecMode::SaveCursorAltScreenBuffer => screen,
                _ => 1,
            })
            .sum::<u64>()
            .max(1),
        Sm(modes) => {
            if modes.as_slice().contains(&AnsiMode::Insert) {
                *insert = true;
            }
            modes.as_slice().len().max(1) as u64
        }
        Rm(modes) => {
            if modes.as_slice().contains(&AnsiMode::Insert) {
                *insert = false;
            }
            modes.as_slice().len().max(1) as u64
        }
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_clamped_to_the_screen_and_cost_what_they_touch() {
        let mut insert = false;
        let mut rep = Function::Rep(65535);
        assert_eq!(clamp(&mut rep, 80, 24, &mut insert), 80);
        assert_eq!(rep, Function::Rep(80));
        let mut su = Function::Su(9999);
        assert_eq!(clamp(&mut su, 80, 24, &mut insert), 24 + 24 * 6);
        assert_eq!(su, Function::Su(24));
        let mut cup = Function::Cup(60000, 60000);
        clamp(&mut cup, 80, 24, &mut insert);
        assert_eq!(cup, Function::Cup(24, 80));
        // Insert mode makes every character printed shift its row.
        let mut sm = Function::Sm(vec![AnsiMode::Insert].into());
        clamp(&mut sm, 1000, 10, &mut insert);
        assert!(insert);
        assert_eq!(clamp(&mut Function::Print('x'), 1000, 10, &mut insert), 63);
        clamp(&mut Function::Ris, 1000, 10, &mut insert);
        assert!(!insert);
        assert_eq!(clamp(&mut Function::Print('x'), 1000, 10, &mut insert), 1);
    }

    #[test]
    fn bounds_grow_with_the_bytes_replayed() {
        let mut spent = Spent {
            consumed: 10,
            ..Spent::default()
        };
        assert_eq!(spent.output_bound(), 160);
        assert!(spent.spend_line(100).is_none());
        assert!(spent.spend_line(100).is_some(), "160 < 2 × 132");
        assert!(spent.check_pending(28).is_none());
        assert!(spent.check_pending(29).is_some());
        spent.consumed = u64::MAX;
        assert_eq!(spent.output_bound(), u64::MAX);
        assert_eq!(spent.work_bound(), MAX_WORK);
    }
}
