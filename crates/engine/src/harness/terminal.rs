//! Terminal recordings: what a terminal showed, read as labelled terminal text (never as a
//! transcript). A session is one recording file under a configured root (there is no default
//! root): `<root>/{casts,logs,scripts,recordings}/…` down to two directories, named
//! `*.cast` (asciinema v2 or v3), `typescript` / `*.typescript` (util-linux `script`) or
//! `*.log` (a `script` log, or the raw bytes tmux `pipe-pane -o 'cat >> FILE'` writes); its id
//! is the file name's stem. Which program wrote it is told from its first bytes. (Hosts list
//! the files below named directories of a root, not the root's own files: hence the
//! directories.)
//!
//! A recording is read whole (within the 64 MiB source bound) and replayed from its start
//! through a real terminal emulator (`avt`, asciinema's own), at the size its header gives
//! (`--cols`/`--rows` when it gives none or 0, else 80×24). Records are the lines that scrolled off the screen (a
//! clear keeps them too), the last screen of a full-screen program when it leaves the
//! alternate screen, and the whole screen when a recording ends (a `Script done on …`
//! footer, an asciinema v3 exit event, or the next recording in the same file). The current
//! screen is not a record: it is the page's `screen`. Records depend only on the bytes before
//! them, so a longer recording gives the same records and more, and the row cursor stays
//! exact; a file truncated or rewritten under a cursor is a reset. A raw log holding no `\r`
//! (a program's output redirected to a file, not a terminal's) reads each `\n` as a new line
//! until its first `\r`.
//!
//! Bounds: the replay's work and output are bounded by the bytes replayed so far, not by what
//! they ask for (see [`bounds`]): every control sequence's count is clamped to the screen, the
//! operations are costed and counted, and the lines held are counted. Past a bound the replay
//! stops: a `notice` record says where and why (and `--strict` fails), and the rest of the
//! recording is not shown. The bounds depend only on the bytes before a point, so records
//! still depend only on the bytes before them.
//!
//! Pages: a page holds at most [`bounds::MAX_OUTPUT`] of records, then ends with more to
//! come; the next (`--since` its cursor) replays from the start again, hashing the records up
//! to the cursor and letting them go, and holds the records after them.
//!
//! A tail is replayed from a checkpoint near the end where there is one ([`checkpoint`]): a
//! full reset or a recording's start, after which the replay gives what a replay from the
//! start gives; the bytes before it are read for their framing only.
//!
//! Generations: each recording one file holds (a new asciinema header, a new
//! `Script started on …` line) counts from 1, and every record carries its own.

use std::collections::VecDeque;

use avt::observer::{Observation, Observer};
use avt::parser::Function;
use avt::{Line, Operation, ScreenKind};
use serde_json::Value;

use crate::SourceCtx;
use crate::cursor::{PrefixHasher, RowCursor};
use crate::harness::{Format, Source};
use crate::rows::{RowRecords, Skipped, content_hash, rfc3339_millis};
use crate::session::{SessionFile, session_file};
use clankie_model::{
    DefaultHome, FileEntry, Layout, ListSpec, Record, RecordBody, Storage, TerminalSource, TextKind,
};

pub(crate) mod bounds;
mod checkpoint;
#[cfg(test)]
mod paging_tests;

/// Terminal recordings.
pub(super) struct Recordings;

static LAYOUT: Layout = Layout {
    name: "terminal",
    // No default root: recordings are wherever a user keeps them (`--root terminal=DIR`).
    default_home: DefaultHome::NONE,
    list: ListSpec {
        subdirs: &["casts", "logs", "scripts", "recordings"],
        suffixes: SUFFIXES,
        max_depth: 2,
        top_files: &[],
    },
    db_env: None,
    storage: Storage::Files,
    id_globs: &[],
};

/// The file names of recordings; the id is the name without the suffix (`typescript` whole).
const SUFFIXES: &[&str] = &[".cast", ".typescript", "/typescript", ".log"];

/// The size of a terminal whose recording gives none.
const DEFAULT_SIZE: (usize, usize) = (80, 24);

/// The line util-linux `script` starts a typescript with, and the one it ends it with.
const SCRIPT_STARTED: &[u8] = b"Script started on ";
const SCRIPT_DONE: &[u8] = b"Script done on ";

impl Format for Recordings {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    fn session(&self, entry: &FileEntry) -> Option<SessionFile> {
        let rel = std::str::from_utf8(&entry.rel).ok()?;
        let name = rel.rsplit('/').next()?;
        let stem = if name == "typescript" {
            name
        } else {
            SUFFIXES
                .iter()
                .filter(|s| !s.starts_with('/'))
                .find_map(|s| name.strip_suffix(s))?
        };
        session_file(entry, stem, None)
    }

    fn source(&self, _entry: &FileEntry) -> Source {
        Source::Document
    }

    fn parse_document(&self, ctx: &SourceCtx, bytes: &[u8]) -> Result<Vec<Record>, String> {
        Ok(replay(ctx, bytes, None, None, None).records)
    }

    fn parse_document_rows(
        &self,
        ctx: &SourceCtx,
        bytes: &[u8],
        terminal_size: Option<(usize, usize)>,
        newest: Option<usize>,
        after: Option<&RowCursor>,
    ) -> Result<RowRecords, String> {
        Ok(replay(ctx, bytes, terminal_size, newest, after))
    }

    /// The recording's title (asciinema's `title`), else the command it recorded (the cast's
    /// `command`, the typescript's `COMMAND="…"`).
    fn native_title(&self, head: &[u8]) -> Option<String> {
        match source_of(head) {
            TerminalSource::Asciinema => {
                let start = head.iter().position(|&b| !b.is_ascii_whitespace())?;
                let end = start + head[start..].iter().position(|&b| b == b'\n')?;
                let header: Value = serde_json::from_slice(&head[start..end]).ok()?;
                ["title", "command"]
                    .iter()
                    .find_map(|key| header.get(key)?.as_str().map(str::to_string))
            }
            TerminalSource::Script => {
                let line = &head[..head.iter().position(|&b| b == b'\n')?];
                let line = std::str::from_utf8(line).ok()?;
                let at = line.find(" [COMMAND=\"")? + " [COMMAND=\"".len();
                // The command is written unescaped: it ends at the next field, or the `"]`.
                let rest = &line[at..];
                let end = [rest.find("\" TERM=\""), rest.rfind("\"]")]
                    .into_iter()
                    .flatten()
                    .min()?;
                Some(rest[..end].to_string())
            }
            TerminalSource::Raw => None,
        }
    }

    fn resumable(&self) -> bool {
        false
    }

    fn resume_command(&self, _id: &str, _path: &str) -> String {
        String::new()
    }
}

/// Which program wrote a recording, from its first bytes: an asciinema header is a JSON object
/// with a `"version"` on the first line (a raw log may start with other JSON).
pub(crate) fn source_of(bytes: &[u8]) -> TerminalSource {
    let start = bytes.trim_ascii_start();
    let first_line = &start[..memchr::memchr(b'\n', start).unwrap_or(start.len())];
    if start.starts_with(b"{") && memchr::memmem::find(first_line, b"\"version\"").is_some() {
        TerminalSource::Asciinema
    } else if bytes.starts_with(SCRIPT_STARTED) {
        TerminalSource::Script
    } else {
        TerminalSource::Raw
    }
}

/// The records and current screen of a whole recording; `fallback_size` is the terminal's size
/// when the recording gives none (else 80×24). `newest`: only the newest that many records
/// are wanted (a tail page): the older ones are replayed and counted but not kept
/// ([`RowRecords::older_omitted`]). `after`: a `--since` page's cursor: the records up to it
/// are replayed, hashed and let go ([`RowRecords::skipped`]), so that a page holds only its
/// own records. A page holds at most [`bounds::MAX_OUTPUT`] of them, then ends
/// ([`RowRecords::more_after`]).
pub(crate) fn replay(
    ctx: &SourceCtx,
    bytes: &[u8],
    fallback_size: Option<(usize, usize)>,
    newest: Option<usize>,
    after: Option<&RowCursor>,
) -> RowRecords {
    replay_paged(ctx, bytes, fallback_size, newest, after, bounds::MAX_OUTPUT)
}

/// [`replay`] with a page of at most `page_output` (the tests lift it to compare pages with a
/// read of everything at once).
pub(crate) fn replay_paged(
    ctx: &SourceCtx,
    bytes: &[u8],
    fallback_size: Option<(usize, usize)>,
    newest: Option<usize>,
    after: Option<&RowCursor>,
    page_output: u64,
) -> RowRecords {
    if after.is_none()
        && let Some(newest) = newest
    {
        return checkpoint::tail(ctx, bytes, fallback_size, newest, page_output);
    }
    // After a tail page replayed from a checkpoint: from the same checkpoint again.
    if let Some(rows) =
        after.and_then(|after| checkpoint::since(ctx, bytes, fallback_size, after, page_output))
    {
        return rows;
    }
    // Only a cursor counted from the recording's start can be replayed past; an anchored one
    // (a tail page's) is found among all the records.
    if let Some(after) = after.filter(|c| !c.anchored && c.position > 0) {
        let replay = run(
            ctx,
            bytes,
            fallback_size,
            newest,
            Some(after),
            page_output,
            None,
        );
        if !replay.stale {
            return replay.into_rows();
        }
        // The records before the cursor are not the ones it saw: the page starts again at
        // the beginning (a reset), from all the records.
    }
    run(ctx, bytes, fallback_size, newest, None, page_output, None).into_rows()
}

/// The records of a replay and what it spent of its bounds (the property tests check them).
#[cfg(test)]
pub(crate) fn replay_measured(
    ctx: &SourceCtx,
    bytes: &[u8],
    fallback_size: Option<(usize, usize)>,
    newest: Option<usize>,
) -> (RowRecords, bounds::Spent) {
    let replay = run(
        ctx,
        bytes,
        fallback_size,
        newest,
        None,
        bounds::MAX_OUTPUT,
        None,
    );
    let spent = replay.spent.clone();
    (replay.into_rows(), spent)
}

/// Replays a whole recording; from `checkpoint` on, when given: the bytes before the first
/// full reset or recording start at or after that byte are read for their framing only
/// ([`checkpoint`]).
fn run<'c>(
    ctx: &'c SourceCtx,
    bytes: &[u8],
    fallback_size: Option<(usize, usize)>,
    newest: Option<usize>,
    after: Option<&RowCursor>,
    page_output: u64,
    checkpoint: Option<usize>,
) -> Replay<'c> {
    let source = source_of(bytes);
    let mut replay = Replay::new(ctx, source);
    replay.dry = checkpoint.map(checkpoint::Dry::new);
    replay.fallback_size = fallback_size.filter(|&(c, r)| c > 0 && r > 0);
    replay.keep = newest.map(|n| n.max(1));
    replay.after = after.cloned();
    replay.page_output = page_output;
    match source {
        TerminalSource::Asciinema => asciinema(&mut replay, bytes),
        TerminalSource::Script | TerminalSource::Raw => typescript(&mut replay, bytes),
    }
    if replay
        .after
        .as_ref()
        .is_some_and(|after| (replay.counted as u64) < after.position)
    {
        // The recording ends (or a bound stopped it) before the cursor's record.
        replay.stale = true;
    }
    replay
}

/// One recording's emulator, and the records of all the file's recordings so far.
struct Replay<'c> {
    ctx: &'c SourceCtx,
    source: TerminalSource,
    /// The recording being replayed (0 before the first).
    generation: u32,
    /// The size of a terminal whose recording gives none (`--cols`/`--rows`).
    fallback_size: Option<(usize, usize)>,
    emulator: Option<Emulator>,
    /// The records kept: all of them, or the newest `keep`.
    records: VecDeque<Record>,
    /// How many records there are, kept or not: the next record's index.
    counted: usize,
    /// Keep only the newest this many records (a tail page).
    keep: Option<usize>,
    /// A record was left out for `keep`.
    older_omitted: bool,
    malformed: Vec<(String, String)>,
    /// Events of a kind this reader does not know, each as the number of records before it.
    unknown: Vec<usize>,
    /// A raw log with no `\r` so far: a program's output redirected to a file, never through a
    /// terminal (whose driver turns each `\n` into `\r\n`), so `\n` is a new line.
    bare_newlines: bool,
    /// What the replay has spent of its bounds.
    spent: bounds::Spent,
    /// A bound stopped the replay, or the page is full: nothing after it is replayed.
    stopped: bool,
    /// A `--since` page's cursor: the records up to its position are hashed and let go.
    after: Option<RowCursor>,
    /// The prefix hash of the records let go.
    skipped: PrefixHasher,
    /// The records let go are not the ones the cursor saw.
    stale: bool,
    /// What each record kept costs of the page's output, and their sum.
    costs: VecDeque<u64>,
    held_output: u64,
    /// The most output a page holds.
    page_output: u64,
    /// The page is full: records follow it.
    more_after: bool,
    /// Before the checkpoint a tail replays from: only the framing is read.
    dry: Option<checkpoint::Dry>,
    /// The checkpoint the replay passed (the records' ids name it, and count from it).
    from: Option<usize>,
    /// The file offset the bytes replayed count from: the checkpoint's, else 0.
    base: u64,
}

/// One recording's terminal: the parser is ours, so that every operation is clamped and
/// costed before the terminal runs it.
struct Emulator {
    terminal: avt::Terminal,
    parser: avt::Parser,
    collector: Collector,
    /// The terminal is in insert mode (IRM): every character printed shifts its row.
    insert: bool,
}

impl Emulator {
    /// A fresh terminal of `cols`×`rows` (each at least 1).
    fn new(cols: usize, rows: usize) -> Emulator {
        Emulator {
            terminal: avt::Terminal::new(cols, rows).expect("a size of at least 1×1"),
            parser: avt::Parser::new(),
            collector: Collector::default(),
            insert: false,
        }
    }
}

impl<'c> Replay<'c> {
    fn new(ctx: &'c SourceCtx, source: TerminalSource) -> Replay<'c> {
        Replay {
            ctx,
            source,
            generation: 0,
            fallback_size: None,
            emulator: None,
            records: VecDeque::new(),
            counted: 0,
            keep: None,
            older_omitted: false,
            malformed: Vec::new(),
            unknown: Vec::new(),
            bare_newlines: source == TerminalSource::Raw,
            spent: bounds::Spent::default(),
            stopped: false,
            after: None,
            skipped: PrefixHasher::default(),
            stale: false,
            costs: VecDeque::new(),
            held_output: 0,
            page_output: bounds::MAX_OUTPUT,
            more_after: false,
            dry: None,
            from: None,
            base: 0,
        }
    }

    /// Starts the next recording, on a fresh terminal of `size` (0 in either: the default).
    fn start(&mut self, size: Option<(usize, usize)>) {
        self.finish(None);
        if self.stopped {
            return;
        }
        self.generation += 1;
        let given = size.filter(|&(cols, rows)| cols > 0 && rows > 0);
        let (cols, rows) = terminal_size(given.or(self.fallback_size));
        if self.dry_start((cols, rows)) {
            return;
        }
        if !self.spend_work(bounds::screen_cost(cols, rows)) {
            return;
        }
        self.emulator = Some(Emulator::new(cols, rows));
    }

    /// Marks the bytes up to `offset` replayed: the bounds grow with them.
    fn consumed(&mut self, offset: usize) {
        let replayed = (offset as u64).saturating_sub(self.base);
        self.spent.consumed = self.spent.consumed.max(replayed);
    }

    /// Feeds output of the current recording (starting one when none is). `start`: the byte
    /// offset of `text` in the file when it is the file's own bytes (a raw log, a
    /// typescript), so that each character replayed counts; an asciinema event counts whole.
    fn output(&mut self, text: &str, ts: Option<&str>, start: Option<usize>) {
        if self.stopped {
            return;
        }
        let (text, start) = match self.dry_output(text, start) {
            Some(live) => (&text[live..], start.map(|s| s + live)),
            None if self.dry.is_some() => return,
            None => (text, start),
        };
        if self.emulator.is_none() {
            self.start(None);
        }
        for (at, ch) in text.char_indices() {
            if let Some(start) = start {
                self.consumed(start + at + ch.len_utf8());
            }
            if self.bare_newlines {
                // Until the first `\r`: what comes after is read as a terminal wrote it, so a
                // longer log never changes the records of the bytes before.
                if ch == '\r' {
                    self.bare_newlines = false;
                } else if ch == '\n' && !self.feed_char('\r', ts) {
                    return;
                }
            }
            if !self.feed_char(ch, ts) {
                return;
            }
        }
    }

    /// Feeds one character to the current recording's terminal; false once the replay stopped.
    fn feed_char(&mut self, ch: char, ts: Option<&str>) -> bool {
        let Some(emulator) = &mut self.emulator else {
            return false;
        };
        let Some(mut function) = emulator.parser.feed(ch) else {
            return true;
        };
        let (cols, rows) = emulator.terminal.size();
        let cost = bounds::clamp(&mut function, cols, rows, &mut emulator.insert);
        if !self.spend_work(cost) {
            return false;
        }
        let Some(emulator) = &mut self.emulator else {
            return false;
        };
        emulator
            .terminal
            .execute_with(function, &mut emulator.collector);
        self.take_lines(ts);
        !self.stopped
    }

    fn resize(&mut self, cols: usize, rows: usize, ts: Option<&str>) {
        let (cols, rows) = terminal_size(Some((cols.max(1), rows.max(1))));
        if let Some(dry) = &mut self.dry {
            dry.resize((cols, rows));
            return;
        }
        if self.stopped
            || self.emulator.is_none()
            || !self.spend_work(bounds::screen_cost(cols, rows))
        {
            return;
        }
        if let Some(emulator) = &mut self.emulator {
            emulator
                .terminal
                .resize_with(cols, rows, &mut emulator.collector);
        }
        self.take_lines(ts);
    }

    /// Ends the current recording: what its terminal still shows becomes records.
    fn finish(&mut self, ts: Option<&str>) {
        if self.stopped {
            return;
        }
        if let Some(dry) = &mut self.dry {
            dry.live = None;
            return;
        }
        if let Some(mut emulator) = self.emulator.take() {
            let (cols, rows) = emulator.terminal.size();
            if !self.spend_work(bounds::screen_cost(cols, rows)) {
                return;
            }
            let terminal = &emulator.terminal;
            if terminal.active_screen_kind() == ScreenKind::Alternate {
                emulator.collector.primary_then_alternate(terminal);
            } else {
                emulator.collector.finish_primary(terminal);
            }
            self.emulator = Some(emulator);
            self.take_lines(ts);
            self.emulator = None;
        }
    }

    /// Spends `cost` of the work bound; past it, stops the replay (false).
    fn spend_work(&mut self, cost: u64) -> bool {
        if self.stopped {
            return false;
        }
        // Not spent when over: the work counted never passes the bound.
        let work = self.spent.work.saturating_add(cost);
        if work <= self.spent.work_bound() {
            self.spent.work = work;
        } else {
            self.stop(format!(
                "its replay reached the work bound of {} steps ({} per byte replayed, at most {})",
                self.spent.work_bound(),
                bounds::WORK_PER_BYTE,
                bounds::MAX_WORK
            ));
        }
        !self.stopped
    }

    /// Stops the replay at the bytes consumed so far: a notice says where and why, and the
    /// current screen is not shown (the recording did not end there).
    fn stop(&mut self, why: String) {
        self.stopped = true;
        self.emulator = None;
        let offset = self.base + self.spent.consumed;
        let key = format!("bound@{offset}");
        // Not the file's size: the notice depends only on the bytes before it, like the
        // records, so that a recording still growing keeps it.
        let reason = format!(
            "the recording's replay stopped at byte {offset}: {why}; the rest is not shown"
        );
        self.push(
            crate::lines::synthetic_notice(self.ctx, key.clone(), reason.clone()),
            0,
        );
        self.malformed.push((key, reason));
    }

    /// Whether the next record is one a `--since` page goes past (before its cursor).
    fn skipping(&self) -> bool {
        self.after
            .as_ref()
            .is_some_and(|after| (self.counted as u64) < after.position)
    }

    /// Whether a record of `cost` more output would overflow the page: then the page ends
    /// (records follow it, the next page's). A page that holds nothing yet takes it whole, and
    /// a tail page lets its oldest records go instead.
    fn page_full(&mut self, cost: u64) -> bool {
        if self.skipping()
            || self.keep.is_some()
            || self.records.is_empty()
            || self.held_output.saturating_add(cost) <= self.page_output
        {
            return false;
        }
        self.stopped = true;
        self.more_after = true;
        self.emulator = None;
        true
    }

    /// Keeps a record of `cost` output: all of them, or the newest `keep` within the page's
    /// output; before a `--since` page's cursor, hashes it and lets it go.
    fn push(&mut self, record: Record, cost: u64) {
        let index = self.counted;
        self.counted += 1;
        if let Some(after) = &self.after
            && (index as u64) < after.position
        {
            self.skipped.push(&record.id, &content_hash(&record));
            if index as u64 + 1 == after.position
                && (record.id != after.key || self.skipped.finish() != after.prefix_hash)
            {
                self.stale = true;
                self.stopped = true;
                self.emulator = None;
            }
            return;
        }
        self.records.push_back(record);
        self.costs.push_back(cost);
        self.held_output += cost;
        if let Some(keep) = self.keep {
            while self.records.len() > 1
                && (self.records.len() > keep || self.held_output > self.page_output)
            {
                self.records.pop_front();
                self.held_output -= self.costs.pop_front().unwrap_or(0);
                self.older_omitted = true;
            }
        }
    }

    /// Turns the lines the collector completed into records, within the output bounds.
    fn take_lines(&mut self, ts: Option<&str>) {
        let Some(emulator) = &mut self.emulator else {
            return;
        };
        let ready = std::mem::take(&mut emulator.collector.ready);
        let pending = emulator.collector.pending.len() as u64;
        for text in ready {
            let cost = text.len() as u64 + bounds::LINE_COST;
            if self.page_full(cost) {
                return;
            }
            if let Some(why) = self.spent.spend_line(text.len() as u64) {
                self.stop(why);
                return;
            }
            let index = self.counted;
            self.push(
                Record {
                    id: match self.from {
                        Some(at) => format!("t{}@{at}.{index}", self.generation),
                        None => format!("t{}.{index}", self.generation),
                    },
                    harness: self.ctx.harness,
                    session: self.ctx.session.clone(),
                    ts: ts.map(str::to_string),
                    agent: self.ctx.agent.clone(),
                    sidechain: self.ctx.agent.is_some(),
                    model: None,
                    usage: None,
                    body: RecordBody::Text {
                        kind: TextKind::Terminal {
                            source: self.source,
                            generation: self.generation,
                        },
                        text: text.into(),
                    },
                },
                cost,
            );
        }
        // A line still scrolling off (wrapped, not ended) is output already: within the bound
        // of the bytes replayed, and of a page (it becomes one page's record).
        if let Some(why) = self.spent.check_pending(pending) {
            self.stop(why);
        } else if pending > self.page_output {
            self.stop(format!(
                "one line reached the {} MiB a page holds",
                self.page_output >> 20
            ));
        } else {
            let _ = self.page_full(pending);
        }
    }

    fn malformed(&mut self, offset: usize, reason: String) {
        // Before a tail's checkpoint: its notice is one of the records before the page.
        if self.stopped || self.dry.is_some() {
            return;
        }
        let key = format!("@{offset}");
        // A notice is held like a line: a file of torn lines is bounded as one of lines.
        let len = (key.len() + reason.len()) as u64;
        if self.page_full(len + bounds::LINE_COST) {
            return;
        }
        if let Some(why) = self.spent.spend_line(len) {
            self.stop(why);
            return;
        }
        self.push(
            crate::lines::synthetic_notice(
                self.ctx,
                key.clone(),
                format!("malformed recording line at byte {offset} skipped: {reason}"),
            ),
            len + bounds::LINE_COST,
        );
        self.malformed.push((key, reason));
    }

    fn into_rows(self) -> RowRecords {
        let omitted = self.counted.saturating_sub(self.records.len());
        let screen = match &self.emulator {
            Some(emulator) => screen_lines(&emulator.terminal, &emulator.collector.pending),
            None => Vec::new(),
        };
        RowRecords {
            pending: !screen.is_empty(),
            records: self.records.into(),
            malformed: self.malformed,
            screen,
            history_is_the_source: true,
            // Records before the checkpoint were not replayed.
            older_omitted: self.older_omitted || self.from.is_some(),
            // Positions among the records kept: what came before a tail's newest is not theirs.
            unknown: self
                .unknown
                .into_iter()
                .filter_map(|at| at.checked_sub(omitted))
                .collect(),
            skipped: self.after.map(|after| Skipped {
                count: after.position as usize,
                hasher: self.skipped,
            }),
            more_after: self.more_after,
            note: None,
        }
    }
}

/// The terminal size a header gave, or the default for a missing or zero one.
fn terminal_size(size: Option<(usize, usize)>) -> (usize, usize) {
    match size {
        // A bound on what a header may ask for: an emulator of a million columns is memory.
        Some((cols, rows)) if cols > 0 && rows > 0 => (cols.min(1000), rows.min(1000)),
        _ => DEFAULT_SIZE,
    }
}

/// The lines of the active screen: rows wrapped onto the next joined with it (the first with
/// `above`, the start of its line that already scrolled off), each without trailing blanks,
/// trailing blank lines left out.
fn screen_lines(terminal: &avt::Terminal, above: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut pending = above.to_string();
    for line in terminal.screen().visible_lines() {
        pending.extend(line.chars());
        if !line.is_wrapped() {
            lines.push(pending.trim_end().to_string());
            pending.clear();
        }
    }
    if !pending.trim_end().is_empty() {
        lines.push(pending.trim_end().to_string());
    }
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

/// Collects the lines a person saw go by: the primary screen's lines as they scroll off (a
/// row wrapped onto the next joined with it, as `avt`'s own transcript does), and a
/// full-screen program's last screen as it leaves the alternate screen.
#[derive(Default)]
struct Collector {
    /// The start of a wrapped line whose rows are scrolling off.
    pending: String,
    ready: Vec<String>,
    /// The alternate screen, taken before an operation that may leave it.
    alternate: Option<Vec<String>>,
}

impl Collector {
    fn push(&mut self, line: &Line) {
        self.pending.extend(line.chars());
        if !line.is_wrapped() {
            self.ready.push(self.pending.trim_end().to_string());
            self.pending.clear();
        }
    }

    /// Everything the primary screen holds, trailing blank lines left out.
    fn finish_primary(&mut self, terminal: &avt::Terminal) {
        let start = self.ready.len();
        for line in terminal.primary_screen().all_lines() {
            self.push(line);
        }
        if !self.pending.is_empty() {
            self.ready
                .push(std::mem::take(&mut self.pending).trim_end().to_string());
        }
        while self.ready.len() > start && self.ready.last().is_some_and(String::is_empty) {
            self.ready.pop();
        }
    }

    /// A recording that ends inside a full-screen program: the screen under it, then its own.
    fn primary_then_alternate(&mut self, terminal: &avt::Terminal) {
        self.finish_primary(terminal);
        self.ready.extend(screen_lines(terminal, ""));
    }
}

impl Observer for Collector {
    type Output = ();

    fn before(&mut self, context: &mut Observation<'_>, operation: &Operation) {
        let terminal = context.terminal();
        let Operation::Function(function) = operation else {
            return;
        };
        if terminal.active_screen_kind() == ScreenKind::Alternate
            && matches!(function, Function::Decrst(_) | Function::Ris)
        {
            self.alternate = Some(screen_lines(terminal, ""));
        }
        if matches!(function, Function::Ris) {
            // A hard reset clears the screen: what it showed was seen.
            self.finish_primary(terminal);
        }
    }

    fn after(&mut self, context: &mut Observation<'_>, _operation: &Operation) {
        if let Some(rows) = self.alternate.take()
            && context.terminal().active_screen_kind() == ScreenKind::Primary
        {
            self.ready.extend(rows);
        }
    }

    fn evicted(&mut self, _context: &mut Observation<'_>, line: &Line) {
        self.push(line);
    }

    fn end(&mut self, _context: &mut Observation<'_>) {}
}

/// An asciinema recording: a header line, then one event per line. v2 events carry seconds
/// since the start, v3 events seconds since the previous one. A header line later in the file
/// starts the next recording. A last line without its newline may be half written: it waits.
fn asciinema(replay: &mut Replay, bytes: &[u8]) {
    let complete = &bytes[..bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)];
    let mut version = 2u64;
    let mut start_ms: Option<i64> = None;
    let mut elapsed = 0f64;
    let mut offset = 0usize;
    for raw in complete.split_inclusive(|&b| b == b'\n') {
        if replay.stopped {
            return;
        }
        let at = offset;
        offset += raw.len();
        // An event line is replayed whole: its bytes count before it runs.
        replay.consumed(offset);
        let line = raw.trim_ascii();
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        let value: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => {
                replay.malformed(at, e.to_string());
                continue;
            }
        };
        if let Value::Object(header) = &value {
            version = header.get("version").and_then(Value::as_u64).unwrap_or(2);
            let size = |v: Option<&Value>| v.and_then(Value::as_u64).map(|n| n as usize);
            let (cols, rows) = if version >= 3 {
                let term = header.get("term");
                (
                    size(term.and_then(|t| t.get("cols"))),
                    size(term.and_then(|t| t.get("rows"))),
                )
            } else {
                (size(header.get("width")), size(header.get("height")))
            };
            start_ms = header
                .get("timestamp")
                .and_then(Value::as_f64)
                .map(|s| (s * 1000.0) as i64);
            elapsed = 0.0;
            replay.start(cols.zip(rows));
            continue;
        }
        let Some([time, code, data]) = value.as_array().map(Vec::as_slice) else {
            replay.malformed(at, "not an event array of three".into());
            continue;
        };
        let (Some(time), Some(code), Some(data)) = (time.as_f64(), code.as_str(), data.as_str())
        else {
            replay.malformed(at, "not [time, code, data]".into());
            continue;
        };
        elapsed = if version >= 3 { elapsed + time } else { time };
        let ts = start_ms.map(|ms| rfc3339_millis(ms + (elapsed * 1000.0) as i64));
        match code {
            "o" => replay.output(data, ts.as_deref(), None),
            "r" => {
                if let Some((cols, rows)) = data.split_once('x')
                    && let (Ok(cols), Ok(rows)) = (cols.parse(), rows.parse())
                {
                    replay.resize(cols, rows, ts.as_deref());
                }
            }
            "x" => replay.finish(ts.as_deref()),
            // Input, markers: not what the terminal showed.
            "i" | "m" => {}
            // An event code newer than this reader.
            _ if replay.dry.is_none() => replay.unknown.push(replay.counted),
            _ => {}
        }
    }
}

/// A `script` typescript or a raw log: bytes as the terminal got them. Each `Script started on
/// … [… COLUMNS="80" LINES="24"]` line (at the start of a line) starts a recording at that
/// size; a `Script done on …` line ends one; the bytes of a raw log are one recording.
fn typescript(replay: &mut Replay, bytes: &[u8]) {
    let mut rest = bytes;
    loop {
        if replay.stopped {
            return;
        }
        let at = bytes.len() - rest.len();
        if rest.starts_with(SCRIPT_STARTED) {
            let Some(eol) = rest.iter().position(|&b| b == b'\n') else {
                // The header is still being written.
                return;
            };
            replay.consumed(at + eol + 1);
            replay.start(script_size(&rest[..eol]));
            rest = &rest[eol + 1..];
            continue;
        }
        // Output up to the next line that starts or ends a recording.
        let mut cut = None;
        let mut search = 0;
        while let Some(nl) = memchr::memchr(b'\n', &rest[search..]) {
            let next = search + nl + 1;
            let after = &rest[next..];
            if after.starts_with(SCRIPT_STARTED) || after.starts_with(SCRIPT_DONE) {
                cut = Some(next);
                break;
            }
            search = next;
        }
        let (mut output, after) = rest.split_at(cut.unwrap_or(rest.len()));
        if after.starts_with(SCRIPT_DONE) {
            // `script` writes the footer after a newline of its own, which is not output.
            output = output.strip_suffix(b"\n").unwrap_or(output);
        }
        feed_bytes(replay, output, at);
        if after.starts_with(SCRIPT_DONE) {
            replay.consumed(bytes.len() - after.len());
            replay.finish(None);
            rest = match after.iter().position(|&b| b == b'\n') {
                Some(eol) => &after[eol + 1..],
                None => &[],
            };
        } else {
            rest = after;
        }
        if rest.is_empty() {
            return;
        }
    }
}

/// Feeds raw terminal bytes that start at byte `offset` of the file: invalid UTF-8 is shown as
/// U+FFFD, and a character cut off at the end (still being written) waits. Fed as they are
/// decoded, a valid run at a time: never copied whole.
fn feed_bytes(replay: &mut Replay, mut bytes: &[u8], mut offset: usize) {
    while !bytes.is_empty() && !replay.stopped {
        let (valid, skip) = match std::str::from_utf8(bytes) {
            Ok(s) => (s, None),
            Err(e) => {
                let (valid, _) = bytes.split_at(e.valid_up_to());
                match e.error_len() {
                    Some(n) => (std::str::from_utf8(valid).unwrap_or_default(), Some(n)),
                    // A character cut off at the end waits.
                    None => (std::str::from_utf8(valid).unwrap_or_default(), None),
                }
            }
        };
        if !valid.is_empty() {
            replay.output(valid, None, Some(offset));
        }
        offset += valid.len();
        bytes = &bytes[valid.len()..];
        match skip {
            Some(n) => {
                replay.output("\u{FFFD}", None, None);
                replay.consumed(offset + n);
                offset += n;
                bytes = &bytes[n..];
            }
            None => break,
        }
    }
}

/// The size a `script` header gives (`COLUMNS="80" LINES="24"`, util-linux 2.35 and later).
fn script_size(header: &[u8]) -> Option<(usize, usize)> {
    let header = std::str::from_utf8(header).ok()?;
    let field = |name: &str| -> Option<usize> {
        let at = header.find(&format!(" {name}=\""))? + name.len() + 3;
        header[at..].split('"').next()?.parse().ok()
    };
    Some((field("COLUMNS")?, field("LINES")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> SourceCtx {
        crate::test_support::ctx(crate::harness::by_name("terminal").unwrap())
    }

    fn replay_at(ctx: &SourceCtx, bytes: &[u8]) -> RowRecords {
        replay(ctx, bytes, None, None, None)
    }

    #[test]
    fn a_recording_without_a_size_takes_the_one_given_else_80_by_24() {
        // 30 lines: how many scrolled off tells the rows.
        let log = "a\r\n".repeat(30);
        let scrolled = |bytes: &[u8], size| replay(&ctx(), bytes, size, None, None).records.len();
        assert_eq!(scrolled(log.as_bytes(), None), 30 - 23);
        assert_eq!(scrolled(log.as_bytes(), Some((10, 3))), 30 - 2);
        // A header's size wins; a header's 0 is no size.
        let events = format!("[0.1, \"o\", \"{}\"]\n", log.replace("\r\n", "\\r\\n"));
        let cast = |w: u32, h: u32| {
            format!("{{\"version\": 2, \"width\": {w}, \"height\": {h}}}\n{events}")
        };
        assert_eq!(scrolled(cast(0, 0).as_bytes(), Some((50, 5))), 30 - 4);
        assert_eq!(scrolled(cast(0, 0).as_bytes(), None), 30 - 23);
        assert_eq!(scrolled(cast(25, 10).as_bytes(), Some((50, 5))), 30 - 9);
        // Columns: a long line is joined, on the screen as in the records.
        let long = "x".repeat(100);
        let narrow = replay(&ctx(), long.as_bytes(), Some((10, 3)), None, None);
        // The rows that scrolled off are the start of one wrapped line, not finished yet.
        assert!(narrow.records.is_empty());
        assert_eq!(narrow.screen, std::slice::from_ref(&long));
        let wrapped = replay(
            &ctx(),
            format!("{long}\r\nb\r\nc\r\n").as_bytes(),
            Some((10, 3)),
            None,
            None,
        );
        assert_eq!(wrapped.records.len(), 1);
        assert_eq!(texts(&wrapped), [long]);
    }

    fn texts(rows: &RowRecords) -> Vec<String> {
        rows.records
            .iter()
            .map(|r| match &r.body {
                RecordBody::Text { text, .. } => text.to_string(),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    fn generations(rows: &RowRecords) -> Vec<u32> {
        rows.records
            .iter()
            .map(|r| match &r.body {
                RecordBody::Text {
                    kind: TextKind::Terminal { generation, .. },
                    ..
                } => *generation,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn lines_that_scroll_off_are_records_and_the_screen_is_not() {
        let cast = concat!(
            r#"{"version": 2, "width": 20, "height": 3, "timestamp": 1700000000}"#,
            "\n",
            r#"[0.5, "o", "\u001b[31mred\u001b[0m\r\n"]"#,
            "\n",
            r#"[0.6, "o", "10%\r50%\r100%\r\n"]"#,
            "\n",
            r#"[0.7, "o", "a\r\nb\r\n$ "]"#,
            "\n",
        );
        let rows = replay_at(&ctx(), cast.as_bytes());
        assert_eq!(texts(&rows), ["red", "100%"]);
        assert_eq!(rows.screen, ["a", "b", "$"]);
        assert!(rows.pending);
        assert_eq!(
            rows.records[0].ts.as_deref(),
            Some("2023-11-14T22:13:20.700Z")
        );
        assert_eq!(rows.records[0].id, "t1.0");
        // A half-written last line waits.
        let cut = &cast.as_bytes()[..cast.len() - 5];
        let waiting = replay_at(&ctx(), cut);
        assert!(waiting.records.is_empty());
        assert_eq!(waiting.screen, ["red", "100%"]);
    }

    #[test]
    fn a_full_screen_program_gives_its_last_screen_when_it_leaves() {
        let cast = concat!(
            r#"{"version": 3, "term": {"cols": 10, "rows": 3}}"#,
            "\n",
            r#"[0.1, "o", "$ less f\r\n"]"#,
            "\n",
            r#"[0.1, "o", "\u001b[?1049h\u001b[Hpage one\r\n(END)"]"#,
            "\n",
            r#"[0.1, "o", "\u001b[?1049l$ "]"#,
            "\n",
            r#"[0.1, "x", "0"]"#,
            "\n",
        );
        let rows = replay_at(&ctx(), cast.as_bytes());
        assert_eq!(texts(&rows), ["page one", "(END)", "$ less f", "$"]);
        assert!(rows.screen.is_empty());
    }

    #[test]
    fn each_script_header_is_a_generation_and_a_footer_ends_one() {
        let log = concat!(
            "Script started on 2026-12-01 11:00:00+00:00 [COMMAND=\"x\" TERM=\"xterm\" TTY=\"/dev/pts/1\" COLUMNS=\"30\" LINES=\"5\"]\n",
            "one\r\ntwo\r\n",
            "\nScript done on 2026-12-01 11:00:01+00:00 [COMMAND_EXIT_CODE=\"0\"]\n",
            "Script started on 2026-12-01 11:01:00+00:00 [COMMAND=\"x\" TERM=\"xterm\" TTY=\"/dev/pts/1\" COLUMNS=\"30\" LINES=\"5\"]\n",
            "three\r\nfour",
        );
        let rows = replay_at(&ctx(), log.as_bytes());
        assert_eq!(texts(&rows), ["one", "two"]);
        assert_eq!(generations(&rows), [1, 1]);
        assert_eq!(rows.screen, ["three", "four"]);
        assert_eq!(
            script_size(log.lines().next().unwrap().as_bytes()),
            Some((30, 5))
        );
    }

    #[test]
    fn raw_bytes_keep_a_cut_character_waiting() {
        let mut log = "x\r\n".repeat(30).into_bytes();
        log.extend_from_slice("é".as_bytes());
        log.pop();
        let rows = replay_at(&ctx(), &log);
        assert_eq!(texts(&rows).len(), 30 - 23);
        assert!(rows.records.iter().all(|r| matches!(
            r.body,
            RecordBody::Text {
                kind: TextKind::Terminal {
                    source: TerminalSource::Raw,
                    generation: 1
                },
                ..
            }
        )));
    }

    #[test]
    fn more_bytes_only_add_records() {
        let mut log = Vec::new();
        for i in 0..100 {
            log.extend_from_slice(format!("line {i} \x1b[32mok\x1b[0m\r\n").as_bytes());
        }
        let whole = replay_at(&ctx(), &log);
        for cut in (0..log.len()).step_by(37) {
            let part = replay_at(&ctx(), &log[..cut]);
            assert_eq!(part.records, whole.records[..part.records.len()], "{cut}");
        }
    }

    #[test]
    fn titles_are_the_recording_title_else_its_command() {
        let title = |head: &str| Recordings.native_title(head.as_bytes());
        assert_eq!(
            title(
                "{\"version\": 2, \"width\": 80, \"height\": 24, \"command\": \"make test\"}\n[0.1"
            ),
            Some("make test".into())
        );
        assert_eq!(
            title("{\"version\": 3, \"term\": {}, \"title\": \"demo\", \"command\": \"sh\"}\n"),
            Some("demo".into())
        );
        assert_eq!(title("{\"version\": 2, \"command\": \"cut"), None);
        assert_eq!(
            title(
                "Script started on 2026-12-01 11:00:00+00:00 [COMMAND=\"sh -c \"ls\"\" TERM=\"xterm\" TTY=\"/dev/pts/1\" COLUMNS=\"80\" LINES=\"24\"]\n"
            ),
            Some("sh -c \"ls\"".into())
        );
        assert_eq!(
            title("Script started on 2026-12-01 11:00:00+00:00 [TERM=\"xterm\"]\n"),
            None
        );
        assert_eq!(title("plain bytes\n"), None);
    }

    #[test]
    fn raw_output_that_starts_with_json_is_raw_and_sizes_are_bounded() {
        assert_eq!(source_of(b"{\"a\": 1}\r\nok\r\n"), TerminalSource::Raw);
        assert_eq!(
            source_of(b"  {\"version\": 2}\n"),
            TerminalSource::Asciinema
        );
        let cast = concat!(
            r#"{"version": 2, "width": 4000000, "height": 3}"#,
            "\n",
            r#"[0.1, "r", "9999999x9999999"]"#,
            "\n",
            r#"[0.2, "o", "fits\r\n"]"#,
            "\n",
        );
        assert_eq!(replay_at(&ctx(), cast.as_bytes()).screen, ["fits"]);
    }

    /// The bound's notice, if the replay stopped: its text.
    fn bound_notice(rows: &RowRecords) -> Option<String> {
        let last = rows.records.last()?;
        match &last.body {
            RecordBody::Text {
                kind: TextKind::Notice,
                text,
            } if last.id.starts_with("bound@") => Some(text.to_string()),
            _ => None,
        }
    }

    #[test]
    fn a_few_bytes_that_ask_for_millions_of_cells_stop_at_the_output_bound() {
        // A character repeated 65,535 times, then a screen scrolled off, on 1000×1000.
        let event = r#"[0.1, "o", "x\u001b[65535b\u001b[999S\r\n"]"#;
        let cast = format!(
            "{{\"version\": 2, \"width\": 1000, \"height\": 1000}}\n{}",
            format!("{event}\n").repeat(50)
        );
        let rows = replay_at(&ctx(), cast.as_bytes());
        let notice = bound_notice(&rows).expect("the replay stops");
        assert!(notice.contains("its output reached the bound"), "{notice}");
        assert!(rows.screen.is_empty() && !rows.pending);
        assert_eq!(rows.malformed.len(), 1);
        let lines = &texts(&rows)[..rows.records.len() - 1];
        let text: usize = lines.iter().map(String::len).sum();
        assert!(text as u64 <= bounds::OUTPUT_PER_BYTE * cast.len() as u64);
        // Each repeat is clamped to a row: the character and 1000 repeats, not 65,536.
        assert!(lines.iter().all(|t| t.chars().count() <= 1001));
        // A longer recording gives the same records: the bound grows with the bytes before.
        let longer = replay_at(&ctx(), format!("{cast}{event}\n").as_bytes());
        assert_eq!(longer.records, rows.records);
    }

    #[test]
    fn a_file_of_torn_lines_is_bounded_as_one_of_lines() {
        let cast = format!("{{\"version\": 2}}\n{}", "x\n".repeat(100_000));
        let rows = replay_at(&ctx(), cast.as_bytes());
        assert!(bound_notice(&rows).is_some());
        assert!(rows.records.len() < 1000, "{}", rows.records.len());
    }

    #[test]
    fn a_tail_keeps_the_newest_records_only() {
        let log = "line\r\n".repeat(100);
        let whole = replay(&ctx(), log.as_bytes(), None, None, None);
        let tail = replay(&ctx(), log.as_bytes(), None, Some(5), None);
        assert!(tail.older_omitted && !whole.older_omitted);
        assert_eq!(tail.records, whole.records[whole.records.len() - 5..]);
        assert_eq!(tail.screen, whole.screen);
        // The tail page shows the live screen, as a page of all records does.
        let request = |mode| crate::page::PageRequest {
            mode,
            limit: 5,
            strict: false,
            redact: false,
        };
        let page = crate::rows::page(&ctx(), tail, &request(crate::page::Mode::Tail)).unwrap();
        let all = crate::rows::page(&ctx(), whole, &request(crate::page::Mode::All)).unwrap();
        assert!(!page.screen.is_empty());
        assert_eq!(page.screen, all.screen);
        assert_eq!(page.records, all.records[all.records.len() - 5..]);
    }

    #[test]
    fn sessions_are_named_by_their_stem() {
        let entry = |rel: &str| FileEntry {
            harness: crate::harness::by_name("terminal").unwrap(),
            root: b"/r".as_slice().into(),
            rel: rel.as_bytes().to_vec(),
            size: 1,
            mtime: 0,
            inode: None,
            ctime: None,
        };
        let id = |rel: &str| Recordings.session(&entry(rel)).map(|s| s.id);
        assert_eq!(id("casts/demo.cast").as_deref(), Some("demo"));
        assert_eq!(id("logs/a/pane-1.log").as_deref(), Some("pane-1"));
        assert_eq!(id("scripts/typescript").as_deref(), Some("typescript"));
        assert_eq!(id("scripts/build.typescript").as_deref(), Some("build"));
    }

    /// A program's output redirected to a file (`\n` alone) reads as lines, not a staircase;
    /// once a `\r` comes, the log is read as a terminal wrote it.
    #[test]
    fn a_raw_log_without_carriage_returns_reads_newlines_as_new_lines() {
        let rows = replay(&ctx(), b"alpha\nbeta\ngamma\n", Some((20, 5)), None, None);
        let all: Vec<String> = rows
            .records
            .iter()
            .filter_map(|r| match &r.body {
                RecordBody::Text { text, .. } => Some(text.to_string()),
                _ => None,
            })
            .chain(rows.screen.iter().cloned())
            .collect();
        assert!(all.iter().any(|l| l == "beta"), "{all:?}");
        assert!(all.iter().any(|l| l == "gamma"), "{all:?}");
        assert!(!all.iter().any(|l| l.starts_with(' ')), "{all:?}");
    }
}
