//! `grep`'s output. Text as ripgrep prints it: a heading `host:session (harness)` per session
//! with matches, then per record its date and time, kind, and the lines of its text that hold
//! a match, each cut to a window around the match and the match highlighted when colour is
//! on; context records dimmed, `--` between groups. `-c` prints `host:session:COUNT`, `-l`
//! `host:session`. NDJSON: a `match` (or `context`) object per record, `count` objects for
//! `-c`/`-l`, `error` objects, and one `summary` last (docs/ndjson.md). Every string from a
//! transcript goes through the one sanitiser before it reaches text output.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::value::RawValue;

use super::ndjson;
use crate::driver::search::{SessionFound, Unsearched};
use clankie_engine::search::Found;
use clankie_model::Record;
use clankie_model::sanitize::{sanitize, sanitize_line};

/// Lines of one record's text shown (those holding a match); more are counted.
const MOST_LINES: usize = 4;
/// Characters of a line shown when the terminal's width is unknown.
const DEFAULT_WINDOW: usize = 160;
/// Characters shown before the first match of a cut line.
const BEFORE_MATCH: usize = 40;
/// Width of `YYYY-MM-DD HH:MM:SS kind:` before the text (`-` in place of `:` for context,
/// as ripgrep marks its context lines).
const GUTTER: usize = 19 + 1 + 11 + 1;

/// What is printed per session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Matching records (and context).
    Records,
    /// `-c`: a count per session.
    Count,
    /// `-l`: the sessions' names.
    Sessions,
}

/// How `grep` prints, chosen once per run: by the run's renderer (`Renderer::grep`), or by
/// the MCP server, which gives both forms of each match.
#[derive(Debug, Clone, Copy)]
pub struct GrepPrinter {
    pub shape: Shape,
    /// NDJSON, else text.
    pub json: bool,
    pub color: bool,
    /// The terminal's columns, when known.
    pub width: Option<usize>,
}

#[derive(Serialize)]
struct MatchLine<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    host: &'a str,
    harness: &'a str,
    session: &'a str,
    record: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    spans: Option<&'a [[usize; 2]]>,
}

#[derive(Serialize)]
struct CountLine<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    host: &'a str,
    harness: &'a str,
    session: &'a str,
    matches: usize,
}

#[derive(Serialize)]
struct ErrorLine<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    host: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    harness: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a str>,
    message: &'a str,
}

#[derive(Serialize)]
struct SummaryLine {
    #[serde(rename = "type")]
    ty: &'static str,
    matches: usize,
    sessions: usize,
    hosts_failed: usize,
}

/// The heading of one session's records, as `grep` prints it and `check --records` too:
/// `host:session (harness)` (what `read` takes), coloured as ripgrep colours a path.
pub(super) fn session_heading(host: &str, harness: &str, session: &str, color: bool) -> String {
    format!(
        "{} {}",
        name(host, session, color),
        paint(color, "2", &format!("({harness})"))
    )
}

/// `host:session`, coloured as ripgrep colours a path.
fn name(host: &str, session: &str, color: bool) -> String {
    paint(
        color,
        "35",
        &format!("{}:{}", sanitize_line(host), sanitize_line(session)),
    )
}

fn paint(color: bool, code: &str, text: &str) -> String {
    if color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

impl GrepPrinter {
    /// Text, coloured or not, cut to `width` columns when known.
    pub(super) fn text(shape: Shape, color: bool, width: Option<usize>) -> GrepPrinter {
        GrepPrinter {
            shape,
            json: false,
            color,
            width,
        }
    }

    pub(super) fn ndjson(shape: Shape) -> GrepPrinter {
        GrepPrinter {
            shape,
            json: true,
            color: false,
            width: None,
        }
    }

    /// One session with matches.
    pub fn session(&self, out: &mut impl Write, host: &str, s: &SessionFound) -> io::Result<()> {
        match (self.shape, self.json) {
            (Shape::Count | Shape::Sessions, true) => ndjson::value_line(
                out,
                &CountLine {
                    ty: "count",
                    host,
                    harness: s.harness,
                    session: &s.session,
                    matches: s.matches,
                },
            ),
            (Shape::Count, false) => writeln!(out, "{}:{}", self.name(host, &s.session), s.matches),
            (Shape::Sessions, false) => writeln!(out, "{}", self.name(host, &s.session)),
            (Shape::Records, true) => {
                for found in &s.found {
                    self.json_found(out, host, s, found)?;
                }
                Ok(())
            }
            (Shape::Records, false) => {
                writeln!(
                    out,
                    "{}",
                    session_heading(host, s.harness, &s.session, self.color)
                )?;
                for found in &s.found {
                    self.text_found(out, found)?;
                }
                writeln!(out)
            }
        }
    }

    /// `host:session`, coloured as ripgrep colours a path.
    fn name(&self, host: &str, session: &str) -> String {
        name(host, session, self.color)
    }

    fn paint(&self, code: &str, text: &str) -> String {
        paint(self.color, code, text)
    }

    fn json_found(
        &self,
        out: &mut impl Write,
        host: &str,
        s: &SessionFound,
        found: &Found,
    ) -> io::Result<()> {
        let (ty, record, text, spans) = match found {
            Found::Match {
                record,
                text,
                spans,
            } => ("match", record, Some(text.as_str()), Some(&spans[..])),
            Found::Context { record } => ("context", record, None, None),
            Found::Break => return Ok(()),
        };
        let mut buf = Vec::new();
        ndjson::records(&mut buf, host, std::slice::from_ref(record))?;
        let json = String::from_utf8(buf)
            .map_err(io::Error::other)?
            .trim_end()
            .to_string();
        let raw = RawValue::from_string(json).map_err(io::Error::other)?;
        ndjson::value_line(
            out,
            &MatchLine {
                ty,
                host,
                harness: s.harness,
                session: &s.session,
                record: &raw,
                text,
                spans,
            },
        )
    }

    fn text_found(&self, out: &mut impl Write, found: &Found) -> io::Result<()> {
        match found {
            Found::Break => writeln!(out, "{}", self.paint("2", "--")),
            Found::Context { record } => {
                let text = clankie_engine::search::search_text(record);
                let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                let shown = cut_around(first, None, self.window());
                writeln!(
                    out,
                    "{} {}",
                    self.paint("2", &format!("{}-", gutter(record))),
                    self.paint("2", &shown)
                )
            }
            Found::Match {
                record,
                text,
                spans,
            } => {
                let lines = matching_lines(text, spans);
                let pad = " ".repeat(GUTTER);
                for (i, (line, line_spans)) in lines.iter().take(MOST_LINES).enumerate() {
                    let lead = if i == 0 {
                        self.paint("32", &format!("{}:", gutter(record)))
                    } else {
                        pad.clone()
                    };
                    writeln!(out, "{lead} {}", self.highlight(line, line_spans))?;
                }
                if lines.len() > MOST_LINES {
                    let more = lines.len() - MOST_LINES;
                    let s = if more == 1 { "" } else { "s" };
                    writeln!(
                        out,
                        "{pad} {}",
                        self.paint("2", &format!("… {more} more matching line{s}"))
                    )?;
                }
                Ok(())
            }
        }
    }

    /// Characters of text a line may show.
    fn window(&self) -> usize {
        self.width
            .map_or(DEFAULT_WINDOW, |w| w.saturating_sub(GUTTER + 1).max(40))
    }

    /// One line of text cut to the window around its first match, sanitised, each match
    /// highlighted.
    fn highlight(&self, line: &str, spans: &[[usize; 2]]) -> String {
        let window = self.window();
        let (start, end) = window_of(line, spans.first().map(|s| s[0]), window);
        let mut shown = String::new();
        if start > 0 {
            shown.push('…');
        }
        let mut at = start;
        for &[s, e] in spans {
            let (s, e) = (s.max(at), e.min(end));
            if s >= e {
                continue;
            }
            shown.push_str(&clean(&line[at..s]));
            shown.push_str(&if self.color {
                format!("\x1b[1;31m{}\x1b[0m", clean(&line[s..e]))
            } else {
                clean(&line[s..e])
            });
            at = e;
        }
        if at < end {
            shown.push_str(&clean(&line[at..end]));
        }
        if end < line.len() {
            shown.push('…');
        }
        shown
    }

    /// Errors, as NDJSON only (text output says them on stderr).
    pub fn unsearched(&self, out: &mut impl Write, host: &str, u: &Unsearched) -> io::Result<()> {
        self.error(
            out,
            ErrorLine {
                ty: "error",
                host,
                harness: Some(u.harness),
                session: u.session.as_deref(),
                path: Some(&u.path),
                message: &u.message,
            },
        )
    }

    /// A host that failed as a whole, as NDJSON only.
    pub fn host_failed(&self, out: &mut impl Write, host: &str, message: &str) -> io::Result<()> {
        self.error(
            out,
            ErrorLine {
                ty: "error",
                host,
                harness: None,
                session: None,
                path: None,
                message,
            },
        )
    }

    fn error(&self, out: &mut impl Write, line: ErrorLine<'_>) -> io::Result<()> {
        if !self.json {
            return Ok(());
        }
        ndjson::value_line(out, &line)
    }

    /// The last line of NDJSON output.
    pub fn summary(
        &self,
        out: &mut impl Write,
        matches: usize,
        sessions: usize,
        hosts_failed: usize,
    ) -> io::Result<()> {
        if !self.json {
            return Ok(());
        }
        ndjson::value_line(
            out,
            &SummaryLine {
                ty: "summary",
                matches,
                sessions,
                hosts_failed,
            },
        )
    }
}

/// Sanitised text of one line (tabs as spaces: the line is shown on one line).
fn clean(text: &str) -> String {
    sanitize(text).replace(['\t', '\n'], " ")
}

/// `YYYY-MM-DD HH:MM:SS kind` in fixed columns; the time in the local zone.
fn gutter(record: &Record) -> String {
    static LOCAL: std::sync::LazyLock<jiff::tz::TimeZone> =
        std::sync::LazyLock::new(jiff::tz::TimeZone::system);
    let time = record
        .ts
        .as_deref()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map(|t| {
            t.to_zoned_datetime(LOCAL.clone())
                .strftime("%Y-%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_else(|| " ".repeat(19));
    format!("{time} {:<11}", record.kind().name())
}

/// The lines of `text` that hold a match, each with its spans relative to the line.
fn matching_lines<'t>(text: &'t str, spans: &[[usize; 2]]) -> Vec<(&'t str, Vec<[usize; 2]>)> {
    let mut lines: Vec<(&str, Vec<[usize; 2]>)> = Vec::new();
    let mut line_start = 0;
    let mut spans = spans.iter().peekable();
    for line in text.split('\n') {
        let line_end = line_start + line.len();
        let mut here = Vec::new();
        while let Some(&&[s, e]) = spans.peek() {
            if s > line_end {
                break;
            }
            // A match across lines is shown on each line it covers.
            here.push([s - line_start, e.min(line_end) - line_start]);
            if e > line_end + 1 {
                break;
            }
            spans.next();
        }
        if !here.is_empty() {
            lines.push((line, here));
        }
        line_start = line_end + 1;
    }
    lines
}

/// The byte range of `line` shown in `window` characters: from a little before `first_match`.
fn window_of(line: &str, first_match: Option<usize>, window: usize) -> (usize, usize) {
    let chars = line.chars().count();
    if chars <= window {
        return (0, line.len());
    }
    let match_at = first_match.unwrap_or(0);
    let chars_before = line[..match_at].chars().count();
    let start_char = chars_before
        .saturating_sub(BEFORE_MATCH)
        .min(chars - window);
    let mut indices = line.char_indices().map(|(i, _)| i).chain([line.len()]);
    let start = indices.nth(start_char).unwrap_or(0);
    let end = line[start..]
        .char_indices()
        .nth(window)
        .map_or(line.len(), |(i, _)| start + i);
    (start, end)
}

/// `line`'s first `window` characters (or around `first_match`), with `…` where cut.
fn cut_around(line: &str, first_match: Option<usize>, window: usize) -> String {
    let (start, end) = window_of(line, first_match, window);
    let mut shown = String::new();
    if start > 0 {
        shown.push('…');
    }
    shown.push_str(&clean(&line[start..end]));
    if end < line.len() {
        shown.push('…');
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_lines_carry_their_spans() {
        let text = "one\ntwo deploy\nthree\ndeploy deploy";
        let spans = [[8, 14], [21, 27], [28, 34]];
        let lines = matching_lines(text, &spans);
        assert_eq!(
            lines,
            [
                ("two deploy", vec![[4, 10]]),
                ("deploy deploy", vec![[0, 6], [7, 13]])
            ]
        );
    }

    #[test]
    fn long_lines_are_cut_around_the_match_and_highlighted() {
        let printer = GrepPrinter::text(Shape::Records, true, Some(GUTTER + 1 + 60));
        let line = format!("{}deploy{}", "a".repeat(100), "b".repeat(100));
        let shown = printer.highlight(&line, &[[100, 106]]);
        assert_eq!(
            shown,
            format!(
                "…{}\x1b[1;31mdeploy\x1b[0m{}…",
                "a".repeat(40),
                "b".repeat(14)
            )
        );
        // Controls never reach the terminal.
        let shown = printer.highlight("x\x1b[2Jdeploy", &[[5, 11]]);
        assert_eq!(shown, "x\x1b[1;31mdeploy\x1b[0m");
    }
}
