//! Records as the view's lines: the text renderer's output (`render::text`: dates, results
//! under their calls, diffs, long results and thinking shortened) at the view's width, without
//! colour, cut into lines, each through the one sanitiser. Whatever a transcript holds (escape
//! sequences, OSC 52, carriage returns), a line drawn is plain characters. In the session view
//! each shortened block is a fold ([`Folds`], keys in `model::fold`): shut as `read` shows it,
//! or open, whole; the layout says which lines each record takes ([`Layout`]).

use std::collections::HashSet;
use std::ops::Range;

use clankie_model::sanitize::sanitize_line;
use clankie_model::{Record, RecordBody, RecordKind, TextKind};

use crate::render::text::{FoldMarks, TextOptions, TextPrinter};

/// Which kinds of record the view shows (toggled by `1`–`4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kinds {
    pub user: bool,
    pub assistant: bool,
    pub tools: bool,
    pub thinking: bool,
}

impl Default for Kinds {
    fn default() -> Kinds {
        Kinds {
            user: true,
            assistant: true,
            tools: true,
            thinking: true,
        }
    }
}

impl Kinds {
    /// Whether a record of this kind is shown (notices and terminal text always are).
    pub fn shows(&self, record: &Record) -> bool {
        let thinking = matches!(
            record.body,
            RecordBody::Text {
                kind: TextKind::Thinking,
                ..
            }
        );
        match record.kind() {
            _ if thinking => self.thinking,
            RecordKind::User => self.user,
            RecordKind::Assistant => self.assistant,
            RecordKind::ToolCall | RecordKind::ToolResult => self.tools,
            RecordKind::Notice | RecordKind::Terminal => true,
        }
    }
}

/// The marker line drawn where the records that arrived while the session was open start.
pub const NEW_MARKER: &str = "── new records ──";

/// How the session view's folds are marked: the key that opens or shuts the one in focus.
pub const FOLD_MARKS: FoldMarks = FoldMarks {
    opens: "o opens",
    closes: "o folds",
};

/// How a fold left shut by [`OPEN_FOLDS_BYTES`] is marked.
const FOLD_OVER_BUDGET: FoldMarks = FoldMarks {
    opens: "past the view's 16 MiB of open folds: read --full",
    closes: "o folds",
};

/// Bytes the lines of the open folds of one layout take at most (as [`open_cost`] counts
/// them): a fold past it stays shut (its mark says so), so that opening every fold of the
/// records loaded keeps the view within its memory bound whatever the records hold. (Its mark
/// and `o`'s status line name the 16 MiB.)
pub const OPEN_FOLDS_BYTES: usize = 16 << 20;

/// Which folds of the open session are open: every fold when [`Folds::all_open`], except the
/// records whose ids are in [`Folds::toggled`] (and the other way round).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Folds {
    pub all_open: bool,
    pub toggled: HashSet<String>,
}

impl Folds {
    /// Whether the fold of the record `id` is open.
    pub fn is_open(&self, id: &str) -> bool {
        self.all_open != self.toggled.contains(id)
    }

    /// Whether a fold may be open (every fold shut is when none was opened).
    pub fn any_open(&self) -> bool {
        self.all_open || !self.toggled.is_empty()
    }

    /// Opens the fold of the record `id` if shut, else shuts it.
    pub fn toggle(&mut self, id: &str) {
        if !self.toggled.remove(id) {
            self.toggled.insert(id.to_string());
        }
    }

    /// Every fold open, or (when they all were) every fold shut.
    pub fn toggle_all(&mut self) {
        self.all_open = !self.all_open;
        self.toggled.clear();
    }
}

/// Where one record's lines are in a [`Layout`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// The record's index in the records laid out.
    pub index: usize,
    pub lines: Range<usize>,
    /// The record holds a fold (a block `read` shortens): `Some(open)`.
    pub fold: Option<bool>,
}

/// Records laid out as the view's lines, and where each record's lines are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    pub lines: Vec<String>,
    /// The records shown, in the order of their lines.
    pub placed: Vec<Placed>,
}

/// The lines of `records` at `width` columns, the kinds `kinds` shows; with `new_from`, the
/// [`NEW_MARKER`] line before the record of that index. Long blocks are shortened as `read`
/// shortens them.
pub fn record_lines(
    records: &[Record],
    kinds: Kinds,
    width: usize,
    new_from: Option<usize>,
) -> Vec<String> {
    layout(records, kinds, width, new_from, None).lines
}

/// [`record_lines`] with where each record is; with `folds`, each long block is a fold, shut
/// (shortened as `read` shortens it, under a [`FOLD_MARKS`] mark) or open (whole, then its
/// mark), the open ones holding at most [`OPEN_FOLDS_BYTES`].
pub fn layout(
    records: &[Record],
    kinds: Kinds,
    width: usize,
    new_from: Option<usize>,
    folds: Option<&Folds>,
) -> Layout {
    let mut printer = TextPrinter::new(TextOptions {
        full: false,
        color: false,
        width: Some(width.max(1)),
        thinking: kinds.thinking,
        cursor_line: false,
        show_cursor: false,
        screen: false,
    });
    let split = new_from.unwrap_or(records.len()).min(records.len());
    let mut layout = Layout::default();
    let mut open_bytes = 0;
    let mut out = Vec::new();
    for (from, to) in [(0, split), (split, records.len())] {
        if from == split && new_from.is_some() {
            layout.lines.push(NEW_MARKER.to_string());
        }
        let shown: Vec<usize> = (from..to).filter(|&i| kinds.shows(&records[i])).collect();
        let refs: Vec<&Record> = shown.iter().map(|&i| &records[i]).collect();
        for k in printer.placed(&refs) {
            let index = shown[k];
            let record = &records[index];
            let mut open = folds.is_some_and(|f| f.is_open(&record.id));
            printer.folds = folds.map(|_| FOLD_MARKS);
            if open {
                let bytes = open_cost(record, width);
                if open_bytes + bytes > OPEN_FOLDS_BYTES {
                    open = false;
                    printer.folds = Some(FOLD_OVER_BUDGET);
                } else {
                    open_bytes += bytes;
                }
            }
            out.clear();
            // Writing to memory does not fail.
            let long = printer.record(&mut out, record, open).unwrap_or(false);
            let start = layout.lines.len();
            push_lines(&mut layout.lines, &String::from_utf8_lossy(&out), width);
            layout.placed.push(Placed {
                index,
                lines: start..layout.lines.len(),
                fold: (long && folds.is_some()).then_some(open),
            });
        }
    }
    layout
}

/// What the lines of `record` whole take at `width` columns, at most: its text (a control
/// shown as `\xNN` takes four bytes), and for each line (one per line of the text, and one per
/// row its wrapping may add) a `String` and the gutter.
fn open_cost(record: &Record, width: usize) -> usize {
    /// A `String` (24 bytes) and the renderer's 21 columns of gutter, rounded up.
    const LINE_COST: usize = 48;
    let input;
    let text = match &record.body {
        RecordBody::Text { text, .. } => text.as_str(),
        RecordBody::ToolCall { input: value, .. } => {
            input = value.to_string();
            input.as_str()
        }
        RecordBody::ToolResult { output, .. } => output.as_str(),
    };
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    let controls = text.bytes().filter(|&b| b < b' ' || b == 0x7f).count();
    // The renderer wraps to no fewer than 20 columns past its 21 of gutter.
    let rows = text.len() / width.saturating_sub(21).max(20);
    text.len() + 3 * controls + LINE_COST * (newlines + 1 + rows)
}

/// The renderer's `text` as lines: each plain, and below the renderer's narrowest body cut
/// into rows of the width.
fn push_lines(lines: &mut Vec<String>, text: &str, width: usize) {
    for line in text.lines().map(plain) {
        let chars: Vec<char> = line.chars().collect();
        if chars.len() <= width {
            lines.push(line);
        } else {
            lines.extend(chars.chunks(width.max(1)).map(|c| c.iter().collect()));
        }
    }
}

/// A record of `kind` saying `text`, for the view's tests.
#[cfg(test)]
pub(crate) fn test_record(kind: TextKind, text: &str) -> Record {
    Record {
        id: format!("@{}", text.len()),
        harness: clankie_engine::harness::by_name("claude").expect("claude is a harness"),
        session: "s1".into(),
        ts: Some("2026-12-01T10:00:00Z".into()),
        agent: None,
        sidechain: false,
        body: RecordBody::Text {
            kind,
            text: text.into(),
        },
        model: None,
        usage: None,
    }
}

/// One line as the view draws it: tabs as spaces, every control and invisible character shown
/// as what it is (never acting).
pub fn plain(line: &str) -> String {
    sanitize_line(&line.replace('\t', "    "))
}

/// A tool result of `output` answering the call `call_id`, for the view's tests.
#[cfg(test)]
pub(crate) fn test_result(id: &str, output: &str) -> Record {
    Record {
        id: id.into(),
        body: RecordBody::ToolResult {
            call_id: format!("call-{id}"),
            output: output.into(),
            is_error: false,
        },
        ..test_record(TextKind::Assistant, "")
    }
}

/// `n` numbered lines, `word` on each.
#[cfg(test)]
pub(crate) fn numbered(word: &str, n: usize) -> String {
    (0..n)
        .map(|i| format!("{word} {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_id(id: &str, kind: TextKind, text: &str) -> Record {
        Record {
            id: id.into(),
            ..test_record(kind, text)
        }
    }

    #[test]
    fn a_shut_fold_is_reads_shortening_under_the_views_mark() {
        let records = [
            with_id("p", TextKind::User, "a prompt"),
            with_id("t", TextKind::Thinking, &numbered("pondering", 20)),
            test_result("r", &numbered("output", 30)),
        ];
        let folds = Folds::default();
        let folded = layout(&records, Kinds::default(), 80, None, Some(&folds));
        let read = record_lines(&records, Kinds::default(), 80, None);
        // Line for line what `read` shows, but for each mark.
        assert_eq!(folded.lines.len(), read.len());
        for (view, read) in folded.lines.iter().zip(&read) {
            match read.find("… ") {
                Some(at) => {
                    let count = read[at..].split(' ').nth(1).unwrap();
                    assert_eq!(
                        view,
                        &format!("{}▸ {count} more lines (o opens)", &read[..at])
                    );
                }
                None => assert_eq!(view, read),
            }
        }
        let all = folded.lines.join("\n");
        assert!(all.contains("▸ 14 more lines (o opens)"), "{all}");
        assert!(all.contains("▸ 24 more lines (o opens)"), "{all}");
        assert!(
            !all.contains("pondering 6") && !all.contains("output 6"),
            "{all}"
        );
        // Each record's lines, in order; the thinking and the result are shut folds.
        let placed: Vec<(usize, Option<bool>)> =
            folded.placed.iter().map(|p| (p.index, p.fold)).collect();
        assert_eq!(placed, [(0, None), (1, Some(false)), (2, Some(false))]);
        assert_eq!(folded.placed[0].lines.start, 0);
        assert_eq!(folded.placed[2].lines.end, folded.lines.len());
        for pair in folded.placed.windows(2) {
            assert_eq!(pair[0].lines.end, pair[1].lines.start);
        }
    }

    #[test]
    fn an_open_fold_is_whole_then_its_mark_and_the_others_stay_shut() {
        let records = [
            with_id("t", TextKind::Thinking, &numbered("pondering", 20)),
            test_result("r", &numbered("output", 30)),
        ];
        let mut folds = Folds::default();
        folds.toggle("r");
        let shown = layout(&records, Kinds::default(), 80, None, Some(&folds));
        let result = &shown.placed[1];
        assert_eq!(result.fold, Some(true));
        let lines = &shown.lines[result.lines.clone()];
        for i in 0..30 {
            assert!(
                lines.iter().any(|l| l.ends_with(&format!("output {i}"))),
                "{lines:?}"
            );
        }
        assert!(
            lines.last().unwrap().ends_with("▾ 30 lines (o folds)"),
            "{lines:?}"
        );
        assert_eq!(shown.placed[0].fold, Some(false));
        // Every fold open but the result's, then shut again.
        folds.toggle_all();
        assert!(folds.is_open("t") && folds.is_open("r"));
        folds.toggle("r");
        let shown = layout(&records, Kinds::default(), 80, None, Some(&folds));
        let folds_now: Vec<_> = shown.placed.iter().map(|p| p.fold).collect();
        assert_eq!(folds_now, [Some(true), Some(false)]);
        folds.toggle_all();
        assert!(!folds.is_open("t") && !folds.is_open("r"));
    }

    #[test]
    fn an_open_fold_shows_its_hidden_text_through_the_sanitiser_and_kinds_still_hide() {
        let hostile = format!("{}\nend\x1b]52;c;aGk=\x07\x1b[2J here", numbered("x", 10));
        let records = [
            with_id("t", TextKind::Thinking, &numbered("pondering", 20)),
            test_result("r", &hostile),
        ];
        let mut folds = Folds::default();
        folds.toggle_all();
        let shown = layout(&records, Kinds::default(), 80, None, Some(&folds));
        let all = shown.lines.join("\n");
        assert!(all.contains("here"), "{all}");
        for line in &shown.lines {
            assert!(!line.chars().any(|c| c.is_control()), "{line:?}");
        }
        let no_thinking = Kinds {
            thinking: false,
            ..Kinds::default()
        };
        let shown = layout(&records, no_thinking, 80, None, Some(&folds));
        assert!(!shown.lines.join("\n").contains("pondering"));
        assert_eq!(shown.placed.len(), 1);
        assert_eq!(shown.placed[0].index, 1);
    }

    #[test]
    fn open_folds_past_the_bytes_bound_stay_shut_and_say_so() {
        // Seventeen results of 1 MiB each (the most a record holds): the first few fit the bound.
        let big = "y".repeat(63) + "\n";
        let output = big.repeat((1 << 20) / 64);
        let records: Vec<Record> = (0..17)
            .map(|i| test_result(&format!("r{i}"), &output))
            .collect();
        let mut folds = Folds::default();
        folds.toggle_all();
        let shown = layout(&records, Kinds::default(), 100, None, Some(&folds));
        let open = shown.placed.iter().filter(|p| p.fold == Some(true)).count();
        assert!((1..17).contains(&open), "{open} open");
        assert_eq!(
            shown.placed[..open]
                .iter()
                .map(|p| p.fold)
                .collect::<Vec<_>>(),
            vec![Some(true); open]
        );
        for last in &shown.placed[open..] {
            assert_eq!(last.fold, Some(false));
            let mark = &shown.lines[last.lines.end - 1];
            assert!(
                mark.contains(
                    "▸ 16378 more lines (past the view's 16 MiB of open folds: read --full)"
                ),
                "{mark:?}"
            );
        }
        // What the lines take: a String and its text each.
        let bytes: usize = shown.lines.iter().map(|l| l.len() + 24).sum();
        assert!(bytes < OPEN_FOLDS_BYTES, "{bytes}");
    }

    fn text(kind: TextKind, text: &str) -> Record {
        test_record(kind, text)
    }

    #[test]
    fn escape_sequences_in_a_transcript_become_plain_characters() {
        let hostile = "a\x1b]52;c;aGk=\x07b\x1b]0;title\x07c\x1b[2J\x1b[H\x1b[?1049h\rd\u{9b}31m";
        let lines = record_lines(&[text(TextKind::User, hostile)], Kinds::default(), 80, None);
        assert!(!lines.is_empty());
        for line in &lines {
            assert!(
                !line.chars().any(|c| c.is_control()),
                "a control reached a line: {line:?}"
            );
        }
        assert!(lines.concat().contains('d'));
    }

    #[test]
    fn kinds_hide_records_and_the_marker_starts_the_new_ones() {
        let records = [
            text(TextKind::User, "first prompt"),
            text(TextKind::Assistant, "an answer"),
            text(TextKind::User, "second prompt"),
        ];
        let all = record_lines(&records, Kinds::default(), 80, Some(2)).join("\n");
        let marker = all.find(NEW_MARKER).unwrap();
        assert!(all.find("an answer").unwrap() < marker);
        assert!(all.find("second prompt").unwrap() > marker);
        let no_user = Kinds {
            user: false,
            ..Kinds::default()
        };
        let shown = record_lines(&records, no_user, 80, None).join("\n");
        assert!(!shown.contains("prompt") && shown.contains("an answer"));
    }
}
