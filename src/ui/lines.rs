//! Records as the view's lines: the text renderer's output (`render::text`: dates, results
//! under their calls, diffs, long results and thinking shortened) at the view's width, without
//! colour, cut into lines, each through the one sanitiser. Whatever a transcript holds (escape
//! sequences, OSC 52, carriage returns), a line drawn is plain characters.

use clankie_model::sanitize::sanitize_line;
use clankie_model::{Record, RecordBody, RecordKind, TextKind};

use crate::render::text::{TextOptions, TextPrinter};

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

/// The lines of `records` at `width` columns, the kinds `kinds` shows; with `new_from`, the
/// [`NEW_MARKER`] line before the record of that index.
pub fn record_lines(
    records: &[Record],
    kinds: Kinds,
    width: usize,
    new_from: Option<usize>,
) -> Vec<String> {
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
    let (old, new) = records.split_at(split);
    let mut lines = Vec::new();
    let print = |printer: &mut TextPrinter, records: &[Record], lines: &mut Vec<String>| {
        let shown: Vec<Record> = records.iter().filter(|r| kinds.shows(r)).cloned().collect();
        let mut out = Vec::new();
        // Writing to memory does not fail.
        let _ = printer.records(&mut out, &shown);
        let text = String::from_utf8_lossy(&out);
        // Below the renderer's narrowest body, a line is cut into rows of the width.
        for line in text.lines().map(plain) {
            let chars: Vec<char> = line.chars().collect();
            if chars.len() <= width {
                lines.push(line);
            } else {
                lines.extend(chars.chunks(width.max(1)).map(|c| c.iter().collect()));
            }
        }
    };
    print(&mut printer, old, &mut lines);
    if new_from.is_some() {
        lines.push(NEW_MARKER.to_string());
        print(&mut printer, new, &mut lines);
    }
    lines
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

#[cfg(test)]
mod tests {
    use super::*;

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
