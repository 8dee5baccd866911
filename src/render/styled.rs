//! A line of text output before it is sanitised, wrapped and coloured, and how it is coloured:
//! what the record renderer and the diff renderer hand each other.

/// How one line of a record's body is coloured (when colour is on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Plain,
    Dim,
    Added,
    Removed,
    Hunk,
    FileHeader,
}

impl Style {
    /// The SGR parameters that colour it; `None`: left as the terminal has it.
    pub fn sgr(self) -> Option<&'static str> {
        match self {
            Style::Plain => None,
            Style::Dim => Some("2"),
            Style::Added => Some("32"),
            Style::Removed => Some("31"),
            Style::Hunk => Some("36"),
            Style::FileHeader => Some("1"),
        }
    }
}

/// One line of a record's body, before sanitising, wrapping and colour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub style: Style,
    pub text: String,
    /// Columns its wrapped continuations are indented past the gutter (a diff line's go past
    /// its sign).
    pub hang: usize,
}

impl Line {
    pub fn new(style: Style, text: impl Into<String>) -> Line {
        Line {
            style,
            text: text.into(),
            hang: 0,
        }
    }

    /// A line of a diff: `sign` then `text`, its continuations under the text.
    pub fn diff(style: Style, sign: char, text: &str) -> Line {
        Line {
            hang: 1,
            ..Line::new(style, format!("{sign}{text}"))
        }
    }
}
