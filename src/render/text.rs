//! Text for people: one block per record — time, role, text — wrapped to the terminal's width
//! under a hanging indent; the date and zone when the day changes; a tool result right under
//! its call and named by it; shell calls as command lines, edits as unified diffs; thinking
//! dimmed (or left out); tool inputs and results shortened unless `--full` (the interactive
//! view writes each record whole or shortened as its folds say, under its own marks,
//! [`FoldMarks`]). Every string from a transcript or a file name goes through
//! [`clankie_model::sanitize::sanitize`] before it is written, and colour is added only after.

use std::collections::HashMap;
use std::io::{self, Write};

use super::styled::{Line, Style};
use super::tool::{CallView, view};
use super::{HostReport, ResumeReport, change_name, diff, wrap};
use crate::check::Activity;
use clankie_engine::harness::ToolRole;
use clankie_engine::page::Page;
use clankie_model::sanitize::{sanitize, sanitize_line};
use clankie_model::{Harness, Record, RecordBody, RecordKind, TerminalSource, TextKind};

/// Lines of a tool result, a command or thinking shown when not `--full`.
const SHORT_LINES: usize = 6;
/// And characters, for output of few but long lines.
const SHORT_CHARS: usize = 600;
/// Characters of a tool's JSON input shown when not `--full` (one dense line, read for its
/// gist).
const SHORT_INPUT_CHARS: usize = 240;
/// Lines of a diff shown when not `--full` (an edit is read for its change, so it gets more).
const DIFF_LINES: usize = 24;
/// Width of the time + role gutter; continuation lines are indented to it.
const GUTTER: usize = 21;
/// The narrowest body wrapped to, however narrow the terminal: below this, words would be
/// broken in every line.
const MIN_BODY: usize = 20;

#[derive(Debug, Clone, Copy)]
pub struct TextOptions {
    /// `--full`: tool inputs, results and thinking whole.
    pub full: bool,
    pub color: bool,
    /// Columns to wrap to; `None`: no wrapping (stdout is not a terminal and `COLUMNS` unset).
    pub width: Option<usize>,
    /// Show thinking (`--no-thinking` turns it off).
    pub thinking: bool,
    /// Print the page-end line after a page (stdout is a terminal, or `--show-cursor`; not
    /// following): what the page leaves out or what follows it.
    pub cursor_line: bool,
    /// `--show-cursor`: the page-end line holds the page's cursor.
    pub show_cursor: bool,
    /// Print a terminal recording's current screen after a page (not when following: it
    /// would be printed again at every poll).
    pub screen: bool,
}

impl Default for TextOptions {
    fn default() -> TextOptions {
        TextOptions {
            full: false,
            color: false,
            width: None,
            thinking: true,
            cursor_line: true,
            show_cursor: true,
            screen: true,
        }
    }
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
        (_, RecordKind::Terminal) => "35",
    }
}

/// An RFC 3339 timestamp in the local time zone (`TZ`), if it parses.
fn local_time(ts: Option<&str>) -> Option<jiff::ZonedDateTime> {
    // The zone is looked up once per run, not once per record.
    static LOCAL: std::sync::LazyLock<jiff::tz::TimeZone> =
        std::sync::LazyLock::new(jiff::tz::TimeZone::system);
    let t = ts?.parse::<jiff::Timestamp>().ok()?;
    Some(t.to_zoned_datetime(LOCAL.clone()))
}

/// `HH:MM:SS` of a record's time, or blanks. A timestamp that does not parse is shown as the
/// source wrote it, cut to the same width.
fn time_of(ts: Option<&str>, zoned: Option<&jiff::ZonedDateTime>) -> String {
    match (ts, zoned) {
        (_, Some(z)) => z.strftime("%H:%M:%S").to_string(),
        (Some(ts), None) => format!("{:<8.8}", ts.get(11..).unwrap_or(ts)),
        (None, None) => " ".repeat(8),
    }
}

/// How the long blocks of one record are written: whole (`--full`) or shortened to their first
/// lines, a last line saying what was left out; and whether one was long (shortened, or written
/// whole where it would have been).
#[derive(Debug, Clone, Copy)]
struct Cut {
    full: bool,
    /// The view's marks instead of `… N more lines (--full)`.
    folds: Option<FoldMarks>,
    long: bool,
}

impl Cut {
    /// The last line of a shortened block: `count` more `unit`s left out.
    fn left_out(&self, count: usize, unit: &str) -> Line {
        let s = if count == 1 { "" } else { "s" };
        let text = match self.folds {
            Some(marks) => format!("▸ {count} more {unit}{s} ({})", marks.opens),
            None => format!("… {count} more {unit}{s} (--full)"),
        };
        Line::new(Style::Dim, text)
    }
}

/// The interactive view's marks of a fold: the line ending a shortened block says `▸ N more
/// lines (OPENS)`, and a block written whole where it would be shortened ends with `▾ N lines
/// (CLOSES)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FoldMarks {
    pub opens: &'static str,
    pub closes: &'static str,
}

/// `text` as lines of `style`, shortened unless `full` to `SHORT_LINES` lines and
/// `SHORT_CHARS` characters, with a dim last line saying what was left out.
fn shortened(text: &str, style: Style, cut: &mut Cut) -> Vec<Line> {
    shortened_to(text, style, cut, SHORT_CHARS)
}

fn shortened_to(text: &str, style: Style, cut: &mut Cut, most_chars: usize) -> Vec<Line> {
    let all: Vec<&str> = text.split('\n').collect();
    let mut lines = Vec::new();
    let mut chars = 0;
    let mut chars_left = 0;
    for line in all.iter().take(SHORT_LINES) {
        let count = line.chars().count();
        if chars + count > most_chars {
            let keep = most_chars - chars;
            lines.push(Line::new(
                style,
                line.chars().take(keep).collect::<String>(),
            ));
            chars_left = count - keep;
            break;
        }
        chars += count;
        lines.push(Line::new(style, *line));
    }
    let more = all.len() - lines.len();
    cut.long |= more > 0 || chars_left > 0;
    if cut.full {
        return all.into_iter().map(|l| Line::new(style, l)).collect();
    }
    if more > 0 {
        lines.push(cut.left_out(more, "line"));
    } else if chars_left > 0 {
        lines.push(cut.left_out(chars_left, "character"));
    }
    lines
}

/// `lines` cut to `most` unless `full`, saying how many were left out.
fn cut_to(mut lines: Vec<Line>, most: usize, cut: &mut Cut) -> Vec<Line> {
    if lines.len() > most {
        cut.long = true;
        if !cut.full {
            let more = lines.len() - most;
            lines.truncate(most);
            lines.push(cut.left_out(more, "line"));
        }
    }
    lines
}

/// Text output of records. It remembers, across the batches and pages of one run, the day last
/// shown (to date the first record and each change of day) and the name of each call seen (to
/// name a result whose call came earlier).
#[derive(Debug, Clone, Default)]
pub struct TextPrinter {
    pub options: TextOptions,
    day: Option<jiff::civil::Date>,
    call_names: HashMap<String, String>,
    /// The terminal recording (source, generation) whose lines were shown last: a change is
    /// marked with a line saying what the text is.
    terminal: Option<(TerminalSource, u32)>,
    /// The interactive view's fold marks in place of `--full`'s (`None`: `read`'s).
    pub folds: Option<FoldMarks>,
}

impl TextPrinter {
    pub fn new(options: TextOptions) -> TextPrinter {
        TextPrinter {
            options,
            ..TextPrinter::default()
        }
    }

    /// Forgets what the records printed so far showed (the day, the calls' names): the next
    /// records are another session's, under a heading of their own, and date their first.
    pub fn start_session(&mut self) {
        self.day = None;
        self.call_names.clear();
        self.terminal = None;
    }

    /// Records in order, except that a tool result is moved up to just under its call when
    /// both are in `records` (Codex runs calls in parallel: call, call, result, result).
    pub fn records(&mut self, out: &mut impl Write, records: &[Record]) -> io::Result<()> {
        let refs: Vec<&Record> = records.iter().collect();
        for i in self.placed(&refs) {
            self.record(out, &records[i], self.options.full)?;
        }
        Ok(())
    }

    /// The order [`TextPrinter::records`] writes `records` in (indices into it), every call
    /// among them named for the results written after.
    pub fn placed(&mut self, records: &[&Record]) -> Vec<usize> {
        let mut result_at: HashMap<&str, usize> = HashMap::new();
        for (i, r) in records.iter().enumerate() {
            if let RecordBody::ToolResult { call_id, .. } = &r.body
                && !call_id.is_empty()
            {
                result_at.entry(call_id.as_str()).or_insert(i);
            }
        }
        // Every call of the batch is named first, so that a result listed before its call (the
        // source's order is not always the order of events) is named too.
        for r in records {
            if let RecordBody::ToolCall { call_id, name, .. } = &r.body
                && !call_id.is_empty()
            {
                self.call_names.insert(call_id.clone(), name.clone());
            }
        }
        let mut order = Vec::with_capacity(records.len());
        let mut placed = vec![false; records.len()];
        for (i, r) in records.iter().enumerate() {
            if placed[i] {
                continue;
            }
            order.push(i);
            if let RecordBody::ToolCall { call_id, .. } = &r.body
                && let Some(&j) = result_at.get(call_id.as_str())
                && j > i
                && !placed[j]
            {
                placed[j] = true;
                order.push(j);
            }
        }
        order
    }

    /// Writes one record, its long blocks whole when `full`, else shortened; with
    /// [`TextPrinter::folds`], the line that ends a shortened block is the view's fold mark.
    /// Returns whether the record holds a long block (one shortened, or written whole where
    /// it would have been): a fold.
    pub fn record(
        &mut self,
        out: &mut impl Write,
        record: &Record,
        full: bool,
    ) -> io::Result<bool> {
        let options = self.options;
        let thinking = matches!(
            record.body,
            RecordBody::Text {
                kind: TextKind::Thinking,
                ..
            }
        );
        if thinking && !options.thinking {
            return Ok(false);
        }
        let mut cut = Cut {
            full,
            folds: self.folds,
            long: false,
        };
        if let RecordBody::Text {
            kind: TextKind::Terminal { source, generation },
            ..
        } = record.body
            && self.terminal != Some((source, generation))
        {
            self.terminal = Some((source, generation));
            let line = format!(
                "── {TERMINAL_MARKER} ({} recording, generation {generation})",
                source.name()
            );
            writeln!(out, "{}", paint(&options, "1;35", &sanitize(&line)))?;
        }
        let zoned = local_time(record.ts.as_deref());
        if let Some(z) = &zoned
            && self.day != Some(z.date())
        {
            self.day = Some(z.date());
            let line = format!("── {}", z.strftime("%Y-%m-%d %A (%Z)"));
            writeln!(out, "{}", paint(&options, "1", &sanitize(&line)))?;
        }
        let role = if thinking {
            "thinking"
        } else {
            record.kind().name()
        };
        let mut lines = match &record.body {
            RecordBody::Text { text, kind } => {
                let text = text.trim_end_matches('\n');
                match kind {
                    TextKind::Thinking => shortened(text, Style::Dim, &mut cut),
                    // Notices are the reader's own remarks and the harness's events: marked, so
                    // they never read as something a person or the model said.
                    TextKind::Notice => vec![Line::new(Style::Plain, format!("! {text}"))],
                    _ => vec![Line::new(Style::Plain, text)],
                }
            }
            RecordBody::ToolCall { name, input, .. } => {
                call_lines(record.harness, name, input, &mut cut)
            }
            RecordBody::ToolResult {
                call_id,
                output,
                is_error,
            } => {
                let mut lines = shortened(output.trim_end(), Style::Plain, &mut cut);
                let name = self.call_names.get(call_id).map(|n| format!("{n}: "));
                let mark = if *is_error { "error: " } else { "" };
                let first = &mut lines[0];
                first.text = format!("{}{mark}{}", name.unwrap_or_default(), first.text);
                lines
            }
        };
        let agent = match (&record.agent, record.sidechain) {
            (Some(agent), _) => format!("[{agent}] "),
            (None, true) => "[sidechain] ".to_string(),
            _ => String::new(),
        };
        if let Some(first) = lines.first_mut() {
            first.text.insert_str(0, &agent);
        }
        let head = format!(
            "{} {:<11}",
            time_of(record.ts.as_deref(), zoned.as_ref()),
            role
        );
        if let Some(marks) = self.folds
            && cut.long
            && full
        {
            let s = if lines.len() == 1 { "" } else { "s" };
            let text = format!("▾ {} line{s} ({})", lines.len(), marks.closes);
            lines.push(Line::new(Style::Dim, text));
        }
        self.block(out, &head, role_color(record), &lines)?;
        Ok(cut.long)
    }

    /// Writes one record: the gutter, then its lines, each sanitised, wrapped to the width with
    /// continuation lines indented to the gutter, and coloured.
    fn block(
        &self,
        out: &mut impl Write,
        head: &str,
        head_color: &str,
        lines: &[Line],
    ) -> io::Result<()> {
        let options = &self.options;
        let body_width = options
            .width
            .map(|w| w.saturating_sub(GUTTER).max(MIN_BODY));
        let indent = " ".repeat(GUTTER);
        write!(out, "{} ", paint(options, head_color, &sanitize(head)))?;
        let mut first = true;
        for line in lines {
            let text = sanitize(&line.text);
            for source in text.split('\n') {
                let pieces = match body_width {
                    Some(width) => wrap::wrap(source, width, line.hang),
                    None => vec![source.to_string()],
                };
                for piece in &pieces {
                    // Trailing blanks show nothing; cut, they cannot push a line past the width.
                    let piece = piece.trim_end();
                    if !first && !piece.is_empty() {
                        out.write_all(indent.as_bytes())?;
                    }
                    first = false;
                    match line.style.sgr() {
                        Some(code) if !piece.is_empty() => {
                            writeln!(out, "{}", paint(options, code, piece))?
                        }
                        _ => writeln!(out, "{piece}")?,
                    }
                }
            }
        }
        if first {
            writeln!(out)?;
        }
        Ok(())
    }
}

/// A tool call's lines: a shell command as `$ command`, an edit as a diff under the file's
/// name, anything else as its name and compact JSON input.
fn call_lines(harness: Harness, name: &str, input: &serde_json::Value, cut: &mut Cut) -> Vec<Line> {
    match view(harness, name, input) {
        CallView::Shell { command } => {
            let mut lines = shortened(command.trim_end_matches('\n'), Style::Plain, cut);
            lines[0].text = format!("{name} $ {}", lines[0].text);
            lines
        }
        CallView::Edit { path, edits, every } => {
            let every = if every { " (every occurrence)" } else { "" };
            let mut lines = vec![Line::new(Style::Plain, format!("{name} {path}{every}"))];
            lines.extend(cut_to(diff::snippets(&edits), DIFF_LINES, cut));
            lines
        }
        CallView::Write { path, content } => {
            let mut lines = vec![Line::new(Style::Plain, format!("{name} {path}"))];
            lines.extend(cut_to(diff::new_file(content), DIFF_LINES, cut));
            lines
        }
        CallView::Patch { patch, envelope } => {
            let mut lines = vec![Line::new(Style::Plain, name)];
            lines.extend(cut_to(
                diff::patch_envelope(patch, envelope),
                DIFF_LINES,
                cut,
            ));
            lines
        }
        CallView::Role { role, line, body } => {
            // An agent's task reads as `Task: description`; the other tools as a command
            // would: `Read path`, `Grep "pattern" in dir`.
            let separator = if role == ToolRole::Agent { ": " } else { " " };
            let mut lines = vec![Line::new(Style::Plain, format!("{name}{separator}{line}"))];
            if let Some(body) = body {
                lines.extend(shortened(body.trim_end(), Style::Dim, cut));
            }
            lines
        }
        CallView::Other => {
            let input = serde_json::to_string(input).unwrap_or_default();
            let mut lines = shortened_to(&input, Style::Plain, cut, SHORT_INPUT_CHARS);
            lines[0].text = format!("{name} {}", lines[0].text);
            lines
        }
    }
}

/// What marks terminal text in the text output: it is what a terminal showed, never what a
/// person or a model said.
pub const TERMINAL_MARKER: &str = "terminal text, not a transcript";

/// The end of a page: a terminal recording's current screen under a line that labels it; how
/// many records a filter left out (when any did); then the cursor line, dim, only where it
/// helps (a person at a terminal, not following) — scripts use `--json`.
pub fn page_end(
    out: &mut impl Write,
    page: &Page,
    options: &TextOptions,
    filtered: Option<usize>,
) -> io::Result<()> {
    if options.screen && !page.screen.is_empty() {
        let label = format!("── live screen ({TERMINAL_MARKER}; not records yet)");
        writeln!(out, "{}", paint(options, "1;35", &label))?;
        for row in &page.screen {
            writeln!(out, "│ {}", sanitize(row))?;
        }
        writeln!(out, "{}", paint(options, "1;35", "── end of live screen"))?;
    }
    // Said whenever it is not zero: a page shorter than --limit, or empty, is otherwise a
    // puzzle, piped or not.
    if let Some(n @ 1..) = filtered {
        let records = if n == 1 { "record" } else { "records" };
        let line = format!("-- {n} {records} left out by the filter");
        writeln!(out, "{}", paint(options, "2", &line))?;
    }
    unknown_line(out, page, options, "")?;
    if !options.cursor_line {
        return Ok(());
    }
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
    let line = match (options.show_cursor, notes.is_empty()) {
        (true, true) => format!("-- cursor {}", page.cursor.encode()),
        (true, false) => format!("-- cursor {} ({})", page.cursor.encode(), notes.join("; ")),
        (false, false) => format!("-- {}", notes.join("; ")),
        (false, true) => return Ok(()),
    };
    writeln!(out, "{}", paint(options, "2", &line))
}

/// Said, dim, on every page that has any, like the filter's count: a format that drifted must
/// never read as a quiet session. `prefix` starts the line (a host-wide follow's session).
pub fn unknown_line(
    out: &mut impl Write,
    page: &Page,
    options: &TextOptions,
    prefix: &str,
) -> io::Result<()> {
    let n = page.unknown;
    if n == 0 {
        return Ok(());
    }
    let entries = if n == 1 { "entry" } else { "entries" };
    let line = format!("-- {n} {entries} of a kind this version does not read (--strict fails)");
    writeln!(out, "{prefix}{}", paint(options, "2", &line))
}

/// What the header of a page on a terminal says of its session, each part where known.
#[derive(Debug, Clone, Default)]
pub struct SessionHeader {
    pub host: String,
    pub harness: String,
    pub session: String,
    pub title: Option<String>,
    pub cwd: Option<String>,
    /// The model of the page's last record that names one.
    pub model: Option<String>,
    /// The first record's time, when the page starts at the session's start.
    pub started: Option<String>,
    /// When the session's file last changed (Unix seconds).
    pub last_activity: Option<i64>,
    /// Records on the page.
    pub records: usize,
    /// Tokens of the page's records, summed where the harness counts them.
    pub tokens: TokenTotals,
    /// Records exist before the page.
    pub earlier: bool,
}

/// Tokens summed over records; `None` where no record counted that kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenTotals {
    pub input: Option<u64>,
    pub output: Option<u64>,
    pub cache_read: Option<u64>,
}

impl TokenTotals {
    pub fn add(&mut self, usage: &clankie_model::Usage) {
        let sum = |total: &mut Option<u64>, more: Option<u64>| {
            if let Some(more) = more {
                *total = Some(total.unwrap_or(0).saturating_add(more));
            }
        };
        sum(&mut self.input, usage.input);
        sum(&mut self.output, usage.output);
        sum(&mut self.cache_read, usage.cache_read);
    }
}

impl SessionHeader {
    /// Takes in what `records` tell of the session (model, tokens, the first time).
    pub fn note_records(&mut self, records: &[Record]) {
        if self.records == 0 {
            self.started = records.first().and_then(|r| r.ts.clone());
        }
        self.records += records.len();
        for r in records {
            if let Some(model) = &r.model {
                self.model = Some(model.clone());
            }
            if let Some(usage) = &r.usage {
                self.tokens.add(usage);
            }
        }
    }
}

/// A count of tokens as people read it: `950`, `12.3k`, `4.1M`.
fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// The header of a page on a terminal: the session's title (else its id) in bold, then under
/// it, dim, one line each where known: harness and `host:id`; its directory; model; started and
/// last activity; records and tokens on the page; and whether earlier records exist and how to
/// see them. Each line is cut to the width with `…`, so that a narrow terminal keeps one line a
/// part.
pub fn session_header(
    out: &mut impl Write,
    header: &SessionHeader,
    options: &TextOptions,
) -> io::Result<()> {
    let id = format!("{}:{}", header.host, header.session);
    let title = header.title.as_deref().unwrap_or(&id);
    let mut lines = vec![format!("{} {id}", header.harness)];
    if let Some(cwd) = &header.cwd {
        lines.push(format!("cwd {cwd}"));
    }
    if let Some(model) = &header.model {
        lines.push(format!("model {model}"));
    }
    let when = |ts: &str| {
        local_time(Some(ts)).map_or_else(
            || ts.to_string(),
            |z| z.strftime("%Y-%m-%d %H:%M").to_string(),
        )
    };
    let mut times = Vec::new();
    if let Some(started) = header.started.as_deref().filter(|_| !header.earlier) {
        times.push(format!("started {}", when(started)));
    }
    if let Some(last) = header.last_activity {
        times.push(format!("last activity {}", when(&super::rfc3339(last))));
    }
    if !times.is_empty() {
        lines.push(times.join(" · "));
    }
    let s = if header.records == 1 { "" } else { "s" };
    let mut counts = format!("{} record{s} shown", header.records);
    let t = header.tokens;
    let mut spent = Vec::new();
    if let Some(n) = t.input {
        spent.push(format!("{} in", tokens(n)));
    }
    if let Some(n) = t.cache_read {
        spent.push(format!("{} cached", tokens(n)));
    }
    if let Some(n) = t.output {
        spent.push(format!("{} out", tokens(n)));
    }
    if !spent.is_empty() {
        counts.push_str(&format!(" · tokens {}", spent.join(", ")));
    }
    lines.push(counts);
    if header.earlier {
        lines.push("earlier records not shown (--head, --all)".to_string());
    }
    let fit = |line: &str| {
        let line = sanitize_line(line);
        match options.width {
            Some(width) if line.chars().count() > width => {
                let kept: String = line.chars().take(width.saturating_sub(1)).collect();
                format!("{kept}…")
            }
            _ => line,
        }
    };
    writeln!(out, "{}", paint(options, "1", &fit(&format!("── {title}"))))?;
    for line in &lines {
        writeln!(out, "{}", paint(options, "2", &fit(&format!("   {line}"))))?;
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

/// `resume`: the command alone, ready to paste. It holds names from the host, so it goes
/// through the sanitiser like everything else (quoting already made it one line).
pub fn resume(out: &mut impl Write, r: &ResumeReport<'_>) -> io::Result<()> {
    writeln!(out, "{}", sanitize(r.command))
}

/// `hosts`: a table of the hosts — name, transport, shell, and with `--check` the status —
/// aligned across them, with a header row on a terminal (`header`); under each checked host,
/// indented, what the check found.
pub fn hosts(out: &mut impl Write, reports: &[HostReport], header: bool) -> io::Result<()> {
    let status = |r: &HostReport| match (r.ok, &r.error) {
        (None, _) => String::new(),
        (Some(true), _) => "ok".into(),
        (Some(false), Some(e)) => format!("FAILED: {e}"),
        (Some(false), None) => "FAILED".into(),
    };
    let checked = reports.iter().any(|r| r.ok.is_some());
    let rows: Vec<[String; 4]> = reports
        .iter()
        .map(|r| {
            [
                sanitize_line(&r.name),
                sanitize_line(&r.transport),
                r.shell.to_string(),
                sanitize_line(&status(r)),
            ]
        })
        .collect();
    let header = (header && !reports.is_empty())
        .then(|| ["HOST", "TRANSPORT", "SHELL", "STATUS"].map(String::from));
    let width = |column: usize| {
        rows.iter()
            .chain(&header)
            .map(|row| row[column].chars().count())
            .max()
            .unwrap_or(0)
    };
    let (name_width, transport_width, shell_width) = (width(0), width(1), width(2));
    let line = |[name, transport, shell, status]: &[String; 4]| {
        let line = if checked {
            format!(
                "{name:<name_width$}  {transport:<transport_width$}  {shell:<shell_width$}  {status}"
            )
        } else {
            format!("{name:<name_width$}  {transport:<transport_width$}  {shell}")
        };
        line.trim_end().to_string()
    };
    if let Some(header) = &header {
        writeln!(out, "{}", line(header))?;
    }
    for (row, report) in rows.iter().zip(reports) {
        writeln!(out, "{}", line(row))?;
        host_details(out, report)?;
    }
    Ok(())
}

/// What `hosts --check` found of one host, indented under its row.
fn host_details(out: &mut impl Write, r: &HostReport) -> io::Result<()> {
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
    if let Some(connection) = &r.connection {
        writeln!(out, "    connection: {}", sanitize(connection))?;
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

    /// `read`'s shortening (`full` for `--full`).
    fn read_cut(full: bool) -> Cut {
        Cut {
            full,
            folds: None,
            long: false,
        }
    }

    fn texts(lines: &[Line]) -> Vec<&str> {
        lines.iter().map(|l| l.text.as_str()).collect()
    }

    #[test]
    fn shortening_says_what_was_left_out() {
        let long = (0..20)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let short = shortened(&long, Style::Plain, &mut read_cut(false));
        assert_eq!(short.len(), SHORT_LINES + 1);
        assert_eq!(short[SHORT_LINES].text, "… 14 more lines (--full)");
        assert_eq!(short[SHORT_LINES].style, Style::Dim);
        assert_eq!(
            shortened(&long, Style::Plain, &mut read_cut(true)).len(),
            20
        );
        assert_eq!(
            texts(&shortened("ok", Style::Plain, &mut read_cut(false))),
            ["ok"]
        );
        let wide = "x".repeat(SHORT_CHARS + 5);
        assert_eq!(
            texts(&shortened(&wide, Style::Plain, &mut read_cut(false)))[1],
            "… 5 more characters (--full)"
        );
    }

    fn record(ts: &str, body: RecordBody) -> Record {
        Record {
            id: "r".into(),
            harness: clankie_engine::harness::by_name("claude").unwrap(),
            session: "s".into(),
            ts: Some(ts.into()),
            agent: None,
            sidechain: false,
            body,
            model: None,
            usage: None,
        }
    }

    fn call(id: &str, name: &str, input: serde_json::Value) -> RecordBody {
        RecordBody::ToolCall {
            call_id: id.into(),
            name: name.into(),
            input,
            by_user: false,
        }
    }

    fn result(id: &str, output: &str) -> RecordBody {
        RecordBody::ToolResult {
            call_id: id.into(),
            output: output.into(),
            is_error: false,
        }
    }

    fn render(printer: &mut TextPrinter, records: &[Record]) -> String {
        let mut out = Vec::new();
        printer.records(&mut out, records).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn results_go_under_their_calls_and_carry_their_names() {
        let mut printer = TextPrinter::new(TextOptions::default());
        let a = serde_json::json!({"cmd": "ls"});
        let b = serde_json::json!({"cmd": "pwd"});
        let page = [
            record("2026-11-02T10:00:00Z", call("a", "exec_command", a)),
            record("2026-11-02T10:00:01Z", call("b", "exec_command", b)),
            record("2026-11-02T10:00:02Z", result("a", "file")),
            record("2026-11-02T10:00:03Z", result("b", "/w")),
        ];
        let text = render(&mut printer, &page);
        let lines: Vec<&str> = text.lines().map(|l| &l[9..]).collect();
        assert_eq!(
            lines[1..],
            [
                "tool_call   exec_command $ ls",
                "tool_result exec_command: file",
                "tool_call   exec_command $ pwd",
                "tool_result exec_command: /w",
            ]
        );
        // A later page's result of a call seen before is named; of a call never seen, not.
        let later = [
            record("2026-11-02T10:00:04Z", result("a", "again")),
            record("2026-11-02T10:00:05Z", result("zz", "stranger")),
        ];
        let text = render(&mut printer, &later);
        assert!(text.contains("tool_result exec_command: again"), "{text}");
        assert!(text.contains("tool_result stranger"), "{text}");
    }

    #[test]
    fn the_day_and_zone_head_the_first_record_and_each_new_day() {
        let mut printer = TextPrinter::new(TextOptions::default());
        let user = |ts: &str| {
            record(
                ts,
                RecordBody::Text {
                    kind: TextKind::User,
                    text: "hi".into(),
                },
            )
        };
        let page = [
            user("2026-11-02T23:59:00Z"),
            user("2026-11-02T23:59:30Z"),
            user("2026-11-03T00:00:10Z"),
        ];
        let text = render(&mut printer, &page);
        let heads: Vec<&str> = text.lines().filter(|l| l.starts_with("──")).collect();
        // The zone is the test process's own (TZ), so only its presence is checked here; the
        // snapshots fix TZ=UTC.
        assert_eq!(heads.len(), 2, "{text}");
        assert_eq!(text.lines().count(), 5, "{text}");
    }

    #[test]
    fn long_lines_wrap_under_a_hanging_indent() {
        let options = TextOptions {
            width: Some(GUTTER + 20),
            ..TextOptions::default()
        };
        let mut printer = TextPrinter::new(options);
        let text = "one two three four five six seven eight nine ten".to_string();
        let page = [record(
            "2026-11-02T10:00:00Z",
            RecordBody::Text {
                kind: TextKind::Assistant,
                text: text.into(),
            },
        )];
        let out = render(&mut printer, &page);
        let lines: Vec<&str> = out.lines().skip(1).collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert!(
            lines[0].ends_with("assistant   one two three four"),
            "{out}"
        );
        assert_eq!(
            lines[1],
            format!("{}five six seven eight", " ".repeat(GUTTER))
        );
        assert!(lines.iter().all(|l| l.chars().count() <= GUTTER + 20));
    }

    #[test]
    fn thinking_is_dimmed_or_left_out() {
        let thought = || {
            record(
                "2026-11-02T10:00:00Z",
                RecordBody::Text {
                    kind: TextKind::Thinking,
                    text: "hmm".into(),
                },
            )
        };
        let options = TextOptions {
            color: true,
            ..TextOptions::default()
        };
        let shown = render(&mut TextPrinter::new(options), &[thought()]);
        assert!(shown.contains("\x1b[2mhmm\x1b[0m"), "{shown:?}");
        let options = TextOptions {
            thinking: false,
            ..options
        };
        assert_eq!(render(&mut TextPrinter::new(options), &[thought()]), "");
    }

    #[test]
    fn edits_are_diffs_and_colour_comes_after_sanitising() {
        let options = TextOptions {
            color: true,
            ..TextOptions::default()
        };
        let input = serde_json::json!({"filePath": "/a.rs", "oldString": "x\n",
            "newString": "y\x1b[2J\n"});
        let page = [record("2026-11-02T10:00:00Z", call("c", "edit", input))];
        let out = render(&mut TextPrinter::new(options), &page);
        assert!(out.contains("edit /a.rs\n"), "{out:?}");
        assert!(out.contains("\x1b[31m-x\x1b[0m"), "{out:?}");
        assert!(out.contains("\x1b[32m+y\x1b[0m"), "{out:?}");
        assert!(!out.contains("\x1b[2J"), "{out:?}");
    }
}
