//! Text for people: one block per record — time, role, text; tool calls as name + compact
//! input; tool results shortened unless `--full`. Every string from a transcript or a file
//! name goes through [`clankie_model::sanitize::sanitize`] before it is written.

use std::io::{self, Write};

use super::{HostReport, change_name, rfc3339};
use crate::check::Activity;
use clankie_engine::page::Page;
use clankie_engine::session::SessionFile;
use clankie_model::sanitize::{sanitize, sanitize_line};
use clankie_model::{Record, RecordBody, RecordKind, TextKind, display_path};

/// Lines of a tool result or input shown when not `--full`.
const SHORT_LINES: usize = 6;
const SHORT_CHARS: usize = 600;
/// Width of the time + role gutter; continuation lines are indented to it.
const GUTTER: usize = 21;

#[derive(Debug, Clone, Copy, Default)]
pub struct TextOptions {
    pub full: bool,
    pub color: bool,
}

fn paint(options: &TextOptions, code: &str, text: &str) -> String {
    if options.color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

fn role_color(record: &Record) -> &'static str {
    match (&record.body, record.kind()) {
        (RecordBody::ToolResult { is_error: true, .. }, _) => "31",
        (
            RecordBody::Text {
                kind: TextKind::Thinking,
                ..
            },
            _,
        ) => "2",
        (_, RecordKind::User) => "1;32",
        (_, RecordKind::Assistant) => "1;34",
        (_, RecordKind::ToolCall) => "36",
        (_, RecordKind::ToolResult) => "2",
        (_, RecordKind::Notice) => "33",
    }
}

/// `HH:MM:SS` of an RFC 3339 timestamp, or blanks.
/// `HH:MM:SS` of an RFC 3339 timestamp in the local time zone (`TZ`), or blanks. A timestamp
/// that does not parse is shown as the source wrote it, cut to the same width.
fn time_of(ts: Option<&str>) -> String {
    let Some(ts) = ts else { return " ".repeat(8) };
    // The zone is looked up once per run, not once per record.
    static LOCAL: std::sync::LazyLock<jiff::tz::TimeZone> =
        std::sync::LazyLock::new(jiff::tz::TimeZone::system);
    match ts.parse::<jiff::Timestamp>() {
        Ok(t) => t
            .to_zoned_datetime(LOCAL.clone())
            .strftime("%H:%M:%S")
            .to_string(),
        Err(_) => format!("{:<8.8}", ts.get(11..).unwrap_or(ts)),
    }
}

/// Shortens to `SHORT_LINES` lines and `SHORT_CHARS` characters, saying what was left out.
fn shorten(text: &str, full: bool) -> String {
    if full {
        return text.to_string();
    }
    let total_lines = text.lines().count();
    let mut out: String = text
        .lines()
        .take(SHORT_LINES)
        .collect::<Vec<_>>()
        .join("\n");
    let mut cut = total_lines > SHORT_LINES;
    if out.chars().count() > SHORT_CHARS {
        out = out.chars().take(SHORT_CHARS).collect();
        cut = true;
    }
    if cut {
        let more = total_lines.saturating_sub(out.lines().count());
        if more > 0 {
            out.push_str(&format!(" … (+{more} lines)"));
        } else {
            out.push_str(" …");
        }
    }
    out
}

pub fn record(out: &mut impl Write, record: &Record, options: &TextOptions) -> io::Result<()> {
    let role = match (&record.body, record.kind()) {
        (
            RecordBody::Text {
                kind: TextKind::Thinking,
                ..
            },
            _,
        ) => "thinking",
        (_, kind) => kind.name(),
    };
    let body = match &record.body {
        RecordBody::Text {
            text,
            kind: TextKind::Thinking,
        } => shorten(text, options.full),
        // Notices are the reader's own remarks and the harness's events: marked, so they
        // never read as something a person or the model said.
        RecordBody::Text {
            text,
            kind: TextKind::Notice,
        } => format!("! {text}"),
        RecordBody::Text { text, .. } => text.clone(),
        RecordBody::ToolCall { name, input, .. } => {
            let input = serde_json::to_string(input).unwrap_or_default();
            format!("{name} {}", shorten(&input, options.full))
        }
        RecordBody::ToolResult {
            output, is_error, ..
        } => {
            let mark = if *is_error { "error: " } else { "" };
            format!("{mark}{}", shorten(output.trim_end(), options.full))
        }
    };
    let agent = match (&record.agent, record.sidechain) {
        (Some(agent), _) => format!("[{}] ", sanitize(agent)),
        (None, true) => "[sidechain] ".to_string(),
        _ => String::new(),
    };
    let body = sanitize(&body);
    let indent = " ".repeat(GUTTER);
    let body = body
        .trim_end_matches('\n')
        .replace('\n', &format!("\n{indent}"));
    let head = format!("{} {:<11}", time_of(record.ts.as_deref()), role);
    writeln!(
        out,
        "{} {agent}{body}",
        paint(options, role_color(record), &sanitize(&head))
    )
}

pub fn page_end(out: &mut impl Write, page: &Page, options: &TextOptions) -> io::Result<()> {
    let mut notes = Vec::new();
    if page.reset {
        notes.push("the source changed under the cursor: restarted from its beginning");
    }
    if page.pending_tail {
        notes.push("an incomplete record at the end is not shown yet");
    }
    if page.more {
        notes.push("more records follow");
    }
    let mut line = format!("-- cursor {}", page.cursor.encode());
    if !notes.is_empty() {
        line.push_str(&format!(" ({})", notes.join("; ")));
    }
    writeln!(out, "{}", paint(options, "2", &line))
}

pub fn sessions(
    out: &mut impl Write,
    host: &str,
    sessions: &[SessionFile],
    show_host: bool,
) -> io::Result<()> {
    // Columns as wide as this listing needs (ids run from 6 to ~100 characters by harness).
    let id_width = sessions
        .iter()
        .map(|s| s.id.chars().count())
        .max()
        .unwrap_or(0)
        .min(100);
    let harness_width = sessions
        .iter()
        .map(|s| s.harness().name().len())
        .max()
        .unwrap_or(0);
    for s in sessions {
        let host_col = if show_host {
            format!("{:<12} ", sanitize(host))
        } else {
            String::new()
        };
        writeln!(
            out,
            "{host_col}{:<harness_width$} {:<id_width$} {:>10} {}  {}",
            s.harness().name(),
            sanitize(&s.id),
            s.entry.size,
            &rfc3339(s.entry.mtime)[..16].replace('T', " "),
            sanitize_line(&display_path(&s.entry.full_path())),
        )?;
    }
    Ok(())
}

/// One `check` line: `host harness/session change +new_records last_ts`.
pub fn activity(out: &mut impl Write, a: &Activity) -> io::Result<()> {
    writeln!(
        out,
        "{} {}/{} {} +{} {}",
        sanitize(&a.host),
        a.harness,
        sanitize(&a.session),
        change_name(a.change),
        a.new_records,
        sanitize(a.last_ts.as_deref().unwrap_or("-"))
    )
}

/// One `hosts` entry: name, transport, shell and status, then what `--check` found, indented.
pub fn host(out: &mut impl Write, r: &HostReport) -> io::Result<()> {
    let status = match (r.ok, &r.error) {
        (None, _) => String::new(),
        (Some(true), _) => "  ok".into(),
        (Some(false), Some(e)) => format!("  FAILED: {e}"),
        (Some(false), None) => "  FAILED".into(),
    };
    writeln!(
        out,
        "{}  {}  shell={}{}",
        sanitize(&r.name),
        sanitize(&r.transport),
        r.shell,
        sanitize(&status)
    )?;
    if let (Some(c), Some(e)) = (r.connect_ms, r.exec_ms) {
        let uname = r.uname.as_deref().unwrap_or("?");
        let auth = r.auth.as_deref().unwrap_or("?");
        writeln!(
            out,
            "    connect {c} ms, exec {e} ms, {}, host key known, authenticated with {}",
            sanitize(uname),
            sanitize(auth)
        )?;
    }
    for root in &r.roots {
        let what = if root.exists {
            format!("{} sessions", root.sessions)
        } else {
            "missing".into()
        };
        writeln!(
            out,
            "    {}: {} ({what})",
            root.harness,
            sanitize(&root.dir)
        )?;
    }
    for w in &r.warnings {
        writeln!(out, "    warning: {}", sanitize(w))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortening_says_what_was_left_out() {
        let long = (0..20)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let short = shorten(&long, false);
        assert_eq!(short.lines().count(), SHORT_LINES);
        assert!(short.ends_with("(+14 lines)"), "{short}");
        assert_eq!(shorten(&long, true), long);
        assert_eq!(shorten("ok", false), "ok");
    }
}
