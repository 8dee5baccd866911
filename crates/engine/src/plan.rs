//! The read planner: a sans-IO state machine behind every read. The driver asks it what to read
//! (`next_read`), does the I/O, and hands the bytes back (`feed`); the planner splits lines,
//! parses them, counts records, validates cursors, and finally yields a [`Page`]. A growing,
//! truncated or replaced file is therefore a plain unit test. Parsing is most of a long
//! forward read and each line's parse is pure, so the caller may parse a chunk's lines ahead,
//! on threads of its own, and hand the outcomes in ([`lines_to_parse_ahead`],
//! [`ReadPlan::parsed_ahead`]); everything else stays here, in order.
//!
//! Bounds: one read request is at most 4 MiB ([`MAX_READ_BYTES`]); one plan reads at most
//! 64 MiB of source ([`MAX_SOURCE_BYTES`]); a line over 1 MiB is never buffered whole.

use std::collections::{HashMap, HashSet, VecDeque};

use super::SourceCtx;
use super::cursor::{Cursor, HEAD_BYTES, LineCursor, WINDOW_BYTES, binding};
use super::filter::RecordFilter;
use super::harness::parse_line;
use super::lines::{LineOutcome, malformed_notice, oversized_notice, synthetic_notice};
use super::page::{Mode, Page, PageRequest, PlanError};
use super::redact;
use clankie_model::{ByteRange, Record};

use clankie_model::limits::{
    FIRST_CHUNK_BYTES, MAX_LIMIT, MAX_READ_BYTES, MAX_RECORD_BYTES, MAX_SOURCE_BYTES,
    UPSERT_REPLAY_BYTES,
};

/// The planner. Create it, then loop `next_read` → I/O → `feed` until `next_read` is `None`;
/// `take_records` may be called between feeds to stream; `finish` gives the page.
#[derive(Debug)]
pub struct ReadPlan {
    ctx: SourceCtx,
    binding: [u8; 16],
    limit: Option<usize>,
    strict: bool,
    /// Whether records leave the plan redacted ([`PageRequest::redact`]).
    redact: bool,
    state: State,
    warnings: Vec<String>,
    reset: bool,
    /// Records produced but not yet taken.
    out: Vec<Record>,
    /// Lines the caller parsed ahead ([`ReadPlan::parsed_ahead`]), in file order.
    ahead: VecDeque<ParsedLine>,
    /// Lines holding something their parser did not understand: (offset, how many things).
    unknown: Vec<(u64, u32)>,
    /// Which records the page holds ([`ReadPlan::with_filter`]); `None` keeps every record.
    filter: Option<RecordFilter>,
    /// Records examined and left out by the filter.
    filtered: usize,
}

/// A line parsed ahead of a forward read by its caller: its offset, its length (without the
/// `\n`) and what [`parse_line`] made of it.
pub type ParsedLine = (u64, u64, LineOutcome);

/// The lines of `chunk` (which starts at byte `start` of the file) that a forward read fed this
/// chunk next parses whole, each with its offset: every line that ends in the chunk, but the
/// piece before the chunk's first `\n` where the chunk starts mid-file (it may end a line begun
/// in an earlier chunk) and any line over the record bound (a notice, never parsed). What its
/// caller may parse ahead, on other threads: [`ReadPlan::parsed_ahead`].
pub fn lines_to_parse_ahead(start: u64, chunk: &[u8]) -> Vec<(u64, &[u8])> {
    let mut lines = Vec::new();
    let mut at = 0;
    if start > 0 {
        match memchr::memchr(b'\n', chunk) {
            Some(nl) => at = nl + 1,
            None => return lines,
        }
    }
    let first = at;
    for nl in memchr::memchr_iter(b'\n', &chunk[first..]).map(|nl| first + nl) {
        let line = &chunk[at..nl];
        if line.len() as u64 <= MAX_RECORD_BYTES {
            lines.push((start + at as u64, line));
        }
        at = nl + 1;
    }
    lines
}

#[derive(Debug)]
enum State {
    Tail(Box<Tail>),
    /// Since: waiting for the validation read.
    Verify {
        cursor: LineCursor,
        ranges: [ByteRange; 3],
    },
    Forward(Box<Forward>),
}

impl ReadPlan {
    /// `size_hint` is the size the listing reported; it only decides where a tail starts.
    pub fn new(ctx: SourceCtx, request: PageRequest, size_hint: u64) -> ReadPlan {
        let binding = binding(&ctx.host, ctx.harness.name(), &ctx.session);
        let limit = match request.mode {
            Mode::All => None,
            _ => Some(request.limit.clamp(1, MAX_LIMIT)),
        };
        let state = match request.mode {
            Mode::Tail => {
                let mut tail = Tail::new(size_hint);
                tail.upserts = crate::harness::upserts_by_id(ctx.harness);
                State::Tail(Box::new(tail))
            }
            Mode::Head | Mode::All => State::Forward(Box::new(Forward::start())),
            // The driver refuses a row cursor for a file; should one get here, start over.
            Mode::Since(Cursor::Rows(_)) => State::Forward(Box::new(Forward::start())),
            Mode::Before(Cursor::Lines(cursor)) => {
                let mut tail = Tail::before(cursor);
                // A record whose id an earlier line holds is not one `--all` gives (it keeps
                // the first copy): the read goes on past its page, as a tail of upserts does,
                // to learn the ids before it.
                tail.upserts = true;
                State::Tail(Box::new(tail))
            }
            // As above: read back from the end.
            Mode::Before(Cursor::Rows(_)) => State::Tail(Box::new(Tail::new(size_hint))),
            Mode::Since(Cursor::Lines(cursor)) => {
                let head = ByteRange::new(0, HEAD_BYTES);
                let verify_start = cursor
                    .resume
                    .saturating_sub(WINDOW_BYTES)
                    .min(cursor.window_end - u64::from(cursor.window_len));
                let verify = ByteRange::new(verify_start, cursor.window_end - verify_start);
                let data = ByteRange::new(cursor.window_end, FIRST_CHUNK_BYTES);
                State::Verify {
                    cursor,
                    ranges: [head, verify, data],
                }
            }
        };
        ReadPlan {
            ctx,
            binding,
            limit,
            strict: request.strict,
            redact: request.redact,
            state,
            warnings: Vec::new(),
            reset: false,
            ahead: VecDeque::new(),
            out: Vec::new(),
            unknown: Vec::new(),
            filter: None,
            filtered: 0,
        }
    }

    /// This plan, holding only the records `filter` keeps: the page's `limit` counts those, so
    /// a tail reads further back and a forward read further on until the page holds `limit`
    /// of them, the source ends, or the 64 MiB bound of one plan stops it (a warning says so).
    /// The records examined and left out are counted ([`Page::filtered`]); the cursor
    /// continues after the last record examined.
    pub fn with_filter(mut self, filter: &RecordFilter) -> ReadPlan {
        self.filter = filter.is_active().then(|| filter.clone());
        self
    }

    /// This plan, with a tail's first read taking `bytes` before the listed end instead of
    /// [`FIRST_CHUNK_BYTES`] (within one read's bound): a caller that knows how many bytes its
    /// `limit` records take (the MCP server, from its previous read of the session) asks for
    /// that in one read, not a fixed chunk and then a wider one. Other modes ignore it.
    pub fn with_tail_window(mut self, bytes: u64) -> ReadPlan {
        if let State::Tail(tail) = &mut self.state {
            tail.first_back = tail_window(bytes);
        }
        self
    }

    /// This plan, with a tail that reads further back than its first read (its newest records
    /// did not fit) reading `4 × bytes` next, four times more each read after, instead of
    /// starting from [`FIRST_CHUNK_BYTES`]: a caller that gave a small first window
    /// ([`ReadPlan::with_tail_window`]) for many sessions at once (a first `check`) widens
    /// each by what its window suggests, not by a quarter MiB. Other modes ignore it.
    pub fn with_tail_step(mut self, bytes: u64) -> ReadPlan {
        if let State::Tail(tail) = &mut self.state {
            tail.chunk = bytes.clamp(HEAD_BYTES, FIRST_CHUNK_BYTES);
        }
        self
    }

    /// How many bytes of the source the page [`ReadPlan::finish`] gives takes, from its first
    /// record's line to its last line's end: a tail's, once read; `None` for other modes or an
    /// empty page. What sizes a later tail's window ([`ReadPlan::with_tail_window`]).
    pub fn tail_page_bytes(&self) -> Option<u64> {
        match &self.state {
            State::Tail(tail) => tail.page_bytes(self.limit.unwrap_or(MAX_LIMIT)),
            _ => None,
        }
    }

    /// The ranges to read next, or `None` when the page is complete.
    pub fn next_read(&self) -> Option<Vec<ByteRange>> {
        match &self.state {
            State::Tail(tail) => tail.next_read(),
            State::Verify { ranges, .. } => Some(ranges.to_vec()),
            State::Forward(fwd) => fwd.next_read(),
        }
    }

    /// The read that will follow [`ReadPlan::next_read`]'s when that one comes back whole from
    /// a file of `size` bytes, or `None` when there may be none (the page ends with it, or the
    /// plan is not reading forward). A caller may start it early, while it feeds the current
    /// one (`--all` reads the next chunk on another core while this one is parsed).
    pub fn read_after_next(&self, size: u64) -> Option<Vec<ByteRange>> {
        match &self.state {
            State::Forward(fwd) => fwd.read_after_next(size),
            State::Tail(_) | State::Verify { .. } => None,
        }
    }

    /// Whether the next read goes to a forward read, whose lines its caller may parse ahead
    /// ([`lines_to_parse_ahead`], [`ReadPlan::parsed_ahead`]).
    pub fn reads_forward(&self) -> bool {
        matches!(self.state, State::Forward(_))
    }

    /// Lines of the next chunk that the caller parsed ahead, in file order (on other threads:
    /// parsing is most of a long forward read, and [`parse_line`] is pure). Each serves the
    /// line at its offset and length in place of parsing it again; the plan's rules (bounds,
    /// `--strict`, repeated ids, the page's limit) are applied to it as to any other, and a line
    /// given that the plan does not reach is dropped.
    pub fn parsed_ahead(&mut self, lines: Vec<ParsedLine>) {
        self.ahead = lines.into();
    }

    /// Feeds the answer to the last `next_read`: one chunk per range (clipped at the file's
    /// end) and the file's true size.
    pub fn feed(&mut self, chunks: Vec<Vec<u8>>, size: u64) -> Result<(), PlanError> {
        let requested = self.next_read().unwrap_or_default();
        if chunks.len() != requested.len() {
            return Err(PlanError::ShortRead {
                got: chunks.len() as u64,
                want: requested.len() as u64,
            });
        }
        for (range, chunk) in requested.iter().zip(&chunks) {
            let want = range.len.min(size.saturating_sub(range.start));
            if chunk.len() as u64 != want {
                return Err(PlanError::ShortRead {
                    got: chunk.len() as u64,
                    want,
                });
            }
        }
        let mut sink = Sink {
            ctx: &self.ctx,
            strict: self.strict,
            warnings: &mut self.warnings,
            ahead: &mut self.ahead,
            unknown: &mut self.unknown,
            filter: self.filter.as_ref(),
            redact: self.redact,
            filtered: &mut self.filtered,
        };
        if let State::Tail(tail) = &mut self.state
            && tail.size.is_none()
            && let Some(before) = &tail.before
        {
            match before_stale_reason(before, &chunks, requested[1].start, size) {
                None => {
                    let end = before.end;
                    tail.head = chunks[0].clone();
                    tail.size = Some(end);
                    tail.lo = end;
                    if let Some(before) = &mut tail.before {
                        before.source_size = size;
                    }
                }
                Some(reason) if self.strict => return Err(PlanError::Stale { reason }),
                Some(reason) => {
                    // The page restarts from the source's end: a tail, one read later.
                    self.reset = true;
                    self.out.push(synthetic_notice(
                        &self.ctx,
                        format!("reset@{size}"),
                        format!("the cursor no longer matches the source ({reason}); reading back from its end"),
                    ));
                    **tail = Tail {
                        first_back: tail.first_back,
                        upserts: tail.upserts,
                        ..Tail::new(size)
                    };
                    return Ok(());
                }
            }
        }
        match &mut self.state {
            State::Tail(tail) => tail.feed(
                &mut sink,
                self.limit.unwrap_or(MAX_LIMIT),
                requested,
                chunks,
                size,
            ),
            State::Forward(fwd) => {
                let start = requested[0].start;
                let chunk = chunks.into_iter().next().unwrap_or_default();
                fwd.feed(&mut sink, self.limit, start, &chunk, size, &mut self.out)
            }
            State::Verify { cursor, .. } => {
                let cursor = cursor.clone();
                let mut chunks = chunks.into_iter();
                let head = chunks.next().unwrap_or_default();
                let verify = chunks.next().unwrap_or_default();
                let data = chunks.next().unwrap_or_default();
                let stale = stale_reason(&cursor, &head, requested[1].start, &verify, size);
                let fwd = match stale {
                    // Lines that upsert by id may repeat ids returned before the cursor: when
                    // something follows the cursor, read again from before it, learning those
                    // ids, and emit from the cursor on.
                    None if crate::harness::upserts_by_id(self.ctx.harness)
                        && (size > cursor.window_end || cursor.skip > 0) =>
                    {
                        Forward::replaying(&cursor, &head)
                    }
                    None => {
                        let mut fwd = Forward::resume(&cursor, requested[1].start, &verify, &head);
                        let resume_at = (cursor.resume - requested[1].start) as usize;
                        let line = verify[resume_at..].to_vec();
                        fwd.feed(
                            &mut sink,
                            self.limit,
                            cursor.resume,
                            &line,
                            size,
                            &mut self.out,
                        )?;
                        if !fwd.done {
                            fwd.feed(
                                &mut sink,
                                self.limit,
                                cursor.window_end,
                                &data,
                                size,
                                &mut self.out,
                            )?;
                        }
                        fwd
                    }
                    Some(reason) if self.strict => return Err(PlanError::Stale { reason }),
                    Some(reason) => {
                        self.reset = true;
                        self.out.push(synthetic_notice(
                            &self.ctx,
                            format!("reset@{size}"),
                            format!("the cursor no longer matches the source ({reason}); restarting from its beginning"),
                        ));
                        Forward::start()
                    }
                };
                self.state = State::Forward(Box::new(fwd));
                Ok(())
            }
        }
    }

    /// Records completed so far that were not yet taken (oldest first), redacted as the request
    /// asked. For streaming.
    pub fn take_records(&mut self) -> Vec<Record> {
        let mut records = std::mem::take(&mut self.out);
        if self.redact {
            redact::redact_records(&mut records);
        }
        records
    }

    /// The page, once `next_read` is `None` (or earlier, for a partial page), its records
    /// redacted as the request asked.
    pub fn finish(self) -> Page {
        let redact = self.redact;
        let mut page = self.finish_unredacted();
        if redact {
            redact::redact_records(&mut page.records);
        }
        page
    }

    fn finish_unredacted(mut self) -> Page {
        let binding = self.binding;
        let limit = self.limit.unwrap_or(MAX_LIMIT);
        let filtering = self.filter.is_some();
        let ctx = self.ctx;
        let unknown = std::mem::take(&mut self.unknown);
        match self.state {
            State::Tail(tail) => {
                let short = filtering && tail.stopped_at_the_bound(limit);
                let mut page =
                    tail.finish(&ctx, binding, limit, self.warnings, &unknown, filtering);
                if self.reset {
                    page.reset = true;
                    let mut records = std::mem::take(&mut self.out);
                    records.append(&mut page.records);
                    page.records = records;
                }
                if short {
                    page.warnings.push(format!(
                        "{} of {limit} records found by the filter in the newest {} MiB (the bound of one read); older records were not examined",
                        page.records.len(),
                        MAX_SOURCE_BYTES >> 20
                    ));
                }
                page
            }
            State::Verify { cursor, .. } => Page {
                records: self.out,
                cursor: Cursor::Lines(cursor),
                start: None,
                older: false,
                more: false,
                pending_tail: false,
                reset: false,
                warnings: self.warnings,
                screen: Vec::new(),
                unknown: 0,
                no_records: false,
                writer_version: None,
                filtered: 0,
            },
            State::Forward(fwd) => {
                let records = std::mem::take(&mut self.out);
                let short = filtering && self.limit.is_some() && fwd.stopped_at_the_bound();
                let mut page = fwd.finish(
                    &ctx,
                    binding,
                    records,
                    self.reset,
                    self.warnings,
                    Tallies {
                        unknown: &unknown,
                        filtered: self.filtered,
                    },
                );
                if short {
                    page.warnings.push(format!(
                        "{} of {limit} records found by the filter in {} MiB (the bound of one read); continue with --since {}",
                        page.records.len(),
                        MAX_SOURCE_BYTES >> 20,
                        page.cursor.encode()
                    ));
                }
                page
            }
        }
    }
}

/// The records of the line at `offset` that the page holds; the offset of each one left out
/// is noted in `left_out`.
fn keep_at(
    sink: &mut Sink<'_>,
    left_out: &mut Vec<u64>,
    offset: u64,
    records: Vec<Record>,
) -> Vec<Record> {
    let all = records.len();
    let kept = sink.kept(records);
    left_out.extend(std::iter::repeat_n(offset, all - kept.len()));
    kept
}

/// Why a cursor no longer matches the source, or `None` when it does.
fn stale_reason(
    cursor: &LineCursor,
    head: &[u8],
    verify_start: u64,
    verify: &[u8],
    size: u64,
) -> Option<&'static str> {
    if size < cursor.window_end {
        return Some("the source is shorter than the cursor's position: truncated or replaced");
    }
    let head_len = cursor.head_len as usize;
    if head.len() < head_len || super::cursor::hash16(&head[..head_len]) != cursor.head_hash {
        return Some("the start of the source changed: replaced or rewritten");
    }
    let window_start = (cursor.window_end - u64::from(cursor.window_len) - verify_start) as usize;
    if verify.len() as u64 != cursor.window_end - verify_start
        || super::cursor::hash16(&verify[window_start..]) != cursor.window_hash
    {
        return Some("the bytes before the cursor changed: rewritten");
    }
    None
}

/// Why a backward read's cursor no longer matches the source (its first read: the head and
/// the bytes from `data_start` to the cursor's window end), or `None` when it does. Beside the
/// hashes, the cursor's position must be a line start, and a line whose first records were
/// returned must end at the window's end.
fn before_stale_reason(
    before: &Before,
    chunks: &[Vec<u8>],
    data_start: u64,
    size: u64,
) -> Option<&'static str> {
    let cursor = &before.cursor;
    let (head, data) = (&chunks[0], &chunks[1]);
    let verify = &data[..data.len().min((cursor.window_end - data_start) as usize)];
    if let Some(reason) = stale_reason(cursor, head, data_start, verify, size) {
        return Some(reason);
    }
    let at = |offset: u64| offset.checked_sub(data_start).map(|i| verify[i as usize]);
    let line_start = cursor.resume == 0 || at(cursor.resume - 1).is_none_or(|b| b == b'\n');
    let line_whole = cursor.skip == 0 || {
        let from = cursor.resume.max(data_start) - data_start;
        let line = &verify[from as usize..];
        line.last() == Some(&b'\n') && !line[..line.len() - 1].contains(&b'\n')
    };
    (!line_start || !line_whole).then_some("the cursor's line changed: rewritten")
}

/// What a forward page counts beside its records: the lines whose parser did not understand
/// something (offset, how many things), and the records the filter examined and left out.
struct Tallies<'a> {
    unknown: &'a [(u64, u32)],
    filtered: usize,
}

/// Where parsed lines go: counts irregularities, applies `--strict`, de-duplicates ids.
struct Sink<'a> {
    ctx: &'a SourceCtx,
    strict: bool,
    warnings: &'a mut Vec<String>,
    ahead: &'a mut VecDeque<ParsedLine>,
    unknown: &'a mut Vec<(u64, u32)>,
    filter: Option<&'a RecordFilter>,
    /// Whether records leave the plan redacted: `--grep` matches what is shown.
    redact: bool,
    /// Records examined and left out by the filter.
    filtered: &'a mut usize,
}

impl Sink<'_> {
    /// Whether the page holds `record` (the filter keeps it, or there is none); a record left
    /// out is counted.
    fn keeps(&mut self, record: &Record) -> bool {
        let Some(filter) = self.filter else {
            return true;
        };
        let kept = filter.keeps_shown(record, self.redact);
        if !kept {
            *self.filtered += 1;
        }
        kept
    }

    /// The records of `records` the page holds ([`Sink::keeps`]).
    fn kept(&mut self, mut records: Vec<Record>) -> Vec<Record> {
        if self.filter.is_some() {
            records.retain(|r| self.keeps(r));
        }
        records
    }

    /// What `line` at `offset` holds: its outcome parsed ahead when the caller gave it (at
    /// this offset and length), else parsed here. Lines given for offsets already passed are
    /// dropped on the way.
    fn parse(&mut self, offset: u64, line: &[u8]) -> LineOutcome {
        if self
            .ahead_at(offset)
            .is_some_and(|(_, len, _)| *len == line.len() as u64)
            && let Some((_, _, outcome)) = self.ahead.pop_front()
        {
            return outcome;
        }
        parse_line(self.ctx, offset, line)
    }

    /// The line parsed ahead at `offset`, if one was given; those for offsets already passed
    /// are dropped on the way.
    fn ahead_at(&mut self, offset: u64) -> Option<&ParsedLine> {
        while self.ahead.front().is_some_and(|(at, _, _)| *at < offset) {
            self.ahead.pop_front();
        }
        self.ahead.front().filter(|(at, _, _)| *at == offset)
    }

    /// The length of the line at `offset` when one parsed ahead starts there: its end was
    /// found when the caller split the chunk, and need not be looked for again.
    fn given_len(&mut self, offset: u64) -> Option<usize> {
        self.ahead_at(offset).map(|(_, len, _)| *len as usize)
    }

    /// Records of one complete line (`len` includes no `\n`), or the error `--strict` demands.
    fn line(
        &mut self,
        offset: u64,
        line: Option<&[u8]>,
        len: u64,
    ) -> Result<Vec<Record>, PlanError> {
        let records = match line {
            None => {
                if self.strict {
                    return Err(PlanError::Oversized { offset, len });
                }
                self.warnings.push(format!("record at byte {offset} is {len} bytes, over the 1 MiB limit; shown as a notice"));
                vec![oversized_notice(self.ctx, offset, len)]
            }
            Some(bytes) => match self.parse(offset, bytes) {
                LineOutcome::Records(records) => records,
                LineOutcome::Unread(records, unknown) => {
                    self.unknown.push((offset, unknown));
                    records
                }
                LineOutcome::Malformed(reason) => {
                    if self.strict {
                        return Err(PlanError::Malformed {
                            offset,
                            len,
                            reason,
                        });
                    }
                    self.warnings.push(format!(
                        "malformed record at byte {offset} ({len} bytes); shown as a notice"
                    ));
                    vec![malformed_notice(self.ctx, offset, len, &reason)]
                }
            },
        };
        Ok(records)
    }
}

/// The ids a forward read has met, for dropping repeats. Not a `HashSet<String>`: that cost an
/// allocation per record and a table of 24-byte entries, together about 5% of `--all`. Here
/// every id is appended to one string and the table holds its span; equal means equal bytes,
/// as before.
#[derive(Default)]
struct SeenIds {
    text: String,
    spans: hashbrown::HashTable<(usize, usize)>,
    hasher: hashbrown::DefaultHashBuilder,
}

impl std::fmt::Debug for SeenIds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeenIds")
            .field("len", &self.spans.len())
            .finish()
    }
}

impl SeenIds {
    /// Adds `id`; false when it was there already.
    fn insert(&mut self, id: &str) -> bool {
        use std::hash::BuildHasher;
        let hasher = &self.hasher;
        let hash = hasher.hash_one(id);
        let text = &self.text;
        match self.spans.entry(
            hash,
            |&(start, end)| &text[start..end] == id,
            |&(start, end)| hasher.hash_one(&text[start..end]),
        ) {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(slot) => {
                let start = self.text.len();
                slot.insert((start, start + id.len()));
                self.text.push_str(id);
                true
            }
        }
    }
}

/// A position after some record: resume at line `resume`, skipping `skip` of its records;
/// the last consumed line ends at `window_end`.
#[derive(Debug, Clone)]
struct Cut {
    resume: u64,
    skip: u32,
    window_end: u64,
    window: Vec<u8>,
}

/// Reading forward from a line start (head, all, since).
#[derive(Debug)]
struct Forward {
    /// Next byte to request.
    pos: u64,
    /// Start of the line being assembled in `partial`.
    line_start: u64,
    partial: Vec<u8>,
    /// True length of the partial line (more than `partial.len()` once it is oversized).
    partial_len: u64,
    /// The last bytes of an oversized partial line, for the hash window.
    oversized_tail: Vec<u8>,
    /// Records of the line at `line_start` already returned by the previous page.
    skip_first: u32,
    /// The last bytes consumed, ending at `rolling_end` (a line end).
    rolling: Vec<u8>,
    rolling_end: u64,
    head: Vec<u8>,
    chunk: u64,
    read_total: u64,
    size: Option<u64>,
    emitted: usize,
    records_before: bool,
    cut: Option<Cut>,
    more: bool,
    done: bool,
    seen: SeenIds,
    /// Lines starting before this offset were returned by earlier pages: their ids go into
    /// `seen`, nothing is emitted ([`Forward::replaying`]).
    replay_until: u64,
    /// The read starts at the source's start (not after a cursor).
    from_start: bool,
}

impl Forward {
    fn start() -> Forward {
        Forward {
            pos: 0,
            line_start: 0,
            partial: Vec::new(),
            partial_len: 0,
            oversized_tail: Vec::new(),
            skip_first: 0,
            rolling: Vec::new(),
            rolling_end: 0,
            head: Vec::new(),
            chunk: FIRST_CHUNK_BYTES,
            read_total: 0,
            size: None,
            emitted: 0,
            records_before: false,
            cut: None,
            more: false,
            done: false,
            seen: SeenIds::default(),
            replay_until: 0,
            from_start: true,
        }
    }

    /// Continues after a validated cursor by reading again from up to [`UPSERT_REPLAY_BYTES`]
    /// before it: lines before the cursor only teach which ids were returned, so a line after
    /// it that repeats one (an upsert) adds only what is new. A replay that starts inside a
    /// line parses a fragment first, which is never a JSON object, so it teaches nothing.
    fn replaying(cursor: &LineCursor, head: &[u8]) -> Forward {
        let mut fwd = Forward::start();
        let from = cursor.resume.saturating_sub(UPSERT_REPLAY_BYTES);
        fwd.pos = from;
        fwd.line_start = from;
        fwd.replay_until = cursor.resume;
        fwd.from_start = false;
        fwd.skip_first = cursor.skip;
        fwd.records_before = cursor.records_before || cursor.skip > 0;
        fwd.head = head.to_vec();
        fwd
    }

    /// Continues after a validated cursor. `verify` holds the bytes from `verify_start` to the
    /// cursor's window end.
    fn resume(cursor: &LineCursor, verify_start: u64, verify: &[u8], head: &[u8]) -> Forward {
        let mut fwd = Forward::start();
        fwd.pos = cursor.resume;
        fwd.line_start = cursor.resume;
        fwd.from_start = false;
        fwd.skip_first = cursor.skip;
        fwd.records_before = cursor.records_before || cursor.skip > 0;
        let before = &verify[..(cursor.resume - verify_start) as usize];
        fwd.rolling = before[before.len().saturating_sub(WINDOW_BYTES as usize)..].to_vec();
        fwd.rolling_end = cursor.resume;
        fwd.head = head.to_vec();
        fwd
    }

    fn next_read(&self) -> Option<Vec<ByteRange>> {
        if self.done {
            return None;
        }
        if self.size.is_some_and(|size| self.pos >= size) {
            return None;
        }
        let budget = MAX_SOURCE_BYTES.saturating_sub(self.read_total);
        let len = self.chunk.min(MAX_READ_BYTES).min(budget);
        if len == 0 {
            return None;
        }
        Some(vec![ByteRange::new(self.pos, len)])
    }

    /// What [`Forward::next_read`] will be once the current read came back whole: the
    /// same arithmetic as [`Forward::feed`]'s.
    fn read_after_next(&self, size: u64) -> Option<Vec<ByteRange>> {
        if self.cut.is_some() {
            return None;
        }
        let len = self.next_read()?.first()?.len;
        let pos = self.pos + len;
        let read_total = self.read_total + len;
        if pos >= size || read_total >= MAX_SOURCE_BYTES {
            return None;
        }
        let chunk = (self.chunk * 4).min(MAX_READ_BYTES);
        let next_len = chunk.min(MAX_SOURCE_BYTES - read_total);
        (next_len > 0).then(|| vec![ByteRange::new(pos, next_len)])
    }

    fn feed(
        &mut self,
        sink: &mut Sink<'_>,
        limit: Option<usize>,
        start: u64,
        chunk: &[u8],
        size: u64,
        out: &mut Vec<Record>,
    ) -> Result<(), PlanError> {
        debug_assert_eq!(start, self.pos);
        self.size = Some(size);
        self.read_total += chunk.len() as u64;
        self.chunk = (self.chunk * 4).min(MAX_READ_BYTES);
        let have = self.head.len();
        if have < HEAD_BYTES as usize
            && start <= have as u64
            && start + chunk.len() as u64 > have as u64
        {
            let from = have - start as usize;
            let take = (HEAD_BYTES as usize - have).min(chunk.len().saturating_sub(from));
            self.head.extend_from_slice(&chunk[from..from + take]);
        }
        let mut rest = chunk;
        while !self.done {
            // With no partial line, `rest` starts at `line_start`; a line parsed ahead there
            // says where it ends (the `\n` checked, as cheap as it is).
            let given = (self.partial_len == 0)
                .then(|| sink.given_len(self.line_start))
                .flatten()
                .filter(|&len| rest.get(len) == Some(&b'\n'));
            debug_assert!(given.is_none_or(|len| !rest[..len].contains(&b'\n')));
            let Some(nl) = given.or_else(|| memchr::memchr(b'\n', rest)) else {
                break;
            };
            let piece = &rest[..nl];
            // A line wholly inside this chunk is parsed in place; only a line that began in
            // an earlier chunk is assembled in `partial` (copying every line cost ~7% of --all).
            let line: Option<std::borrow::Cow<'_, [u8]>> =
                if self.partial_len == 0 && piece.len() as u64 <= MAX_RECORD_BYTES {
                    self.partial_len = piece.len() as u64;
                    Some(std::borrow::Cow::Borrowed(piece))
                } else {
                    self.append_partial(piece);
                    if self.partial_len > MAX_RECORD_BYTES {
                        None
                    } else {
                        Some(std::borrow::Cow::Owned(std::mem::take(&mut self.partial)))
                    }
                };
            let line_len = self.partial_len;
            let line_start = self.line_start;
            let line_end = line_start + line_len + 1;
            // Roll the hash window forward over the whole line and its `\n`.
            match &line {
                Some(bytes) => self.roll(bytes),
                None => {
                    let tail = std::mem::take(&mut self.oversized_tail);
                    self.roll(&tail);
                }
            }
            self.roll(b"\n");
            self.rolling_end = line_end;
            if line_start < self.replay_until {
                // Returned by an earlier page: learn its ids (irregular lines were reported
                // then, and their notices' ids never repeat).
                if let Some(bytes) = &line
                    && let Ok((records, _)) = sink.parse(line_start, bytes).into_parts()
                {
                    for record in &records {
                        self.seen.insert(&record.id);
                    }
                }
                self.partial.clear();
                self.partial_len = 0;
                self.line_start = line_end;
                rest = &rest[nl + 1..];
                continue;
            }
            let records = sink.line(line_start, line.as_deref(), line_len)?;
            self.partial.clear();
            self.partial_len = 0;
            self.line_start = line_end;
            let skip = std::mem::take(&mut self.skip_first) as usize;
            let total = records.len();
            for (i, record) in records.into_iter().enumerate() {
                if !self.seen.insert(&record.id) || i < skip {
                    // A repeat, or returned before the cursor (whose id a later line may
                    // repeat).
                    continue;
                }
                if self.cut.is_some() {
                    // Lookahead past the page: one complete record proves `more`.
                    self.more = true;
                    self.done = true;
                    break;
                }
                if !sink.keeps(&record) {
                    continue;
                }
                out.push(record);
                self.emitted += 1;
                if Some(self.emitted) == limit {
                    let cut = if i + 1 < total {
                        Cut {
                            resume: line_start,
                            skip: (i + 1) as u32,
                            window_end: line_end,
                            window: self.rolling.clone(),
                        }
                    } else {
                        Cut {
                            resume: line_end,
                            skip: 0,
                            window_end: line_end,
                            window: self.rolling.clone(),
                        }
                    };
                    self.cut = Some(cut);
                }
            }
            rest = &rest[nl + 1..];
        }
        if !self.done {
            self.append_partial(rest);
        }
        self.pos = start + chunk.len() as u64;
        if self.pos >= size {
            self.done = true;
        }
        if self.read_total >= MAX_SOURCE_BYTES && self.pos < size {
            self.done = true;
            self.more = true;
        }
        Ok(())
    }

    /// Whether the 64 MiB bound ended the read before the page was full, with more of the
    /// source unread.
    fn stopped_at_the_bound(&self) -> bool {
        self.cut.is_none()
            && self.read_total >= MAX_SOURCE_BYTES
            && self.size.is_some_and(|size| self.pos < size)
    }

    fn append_partial(&mut self, piece: &[u8]) {
        self.partial_len += piece.len() as u64;
        if self.partial_len > MAX_RECORD_BYTES {
            // Stop buffering: keep only the last bytes for the hash window.
            if !self.partial.is_empty() {
                let old = std::mem::take(&mut self.partial);
                self.keep_oversized_tail(&old);
            }
            self.keep_oversized_tail(piece);
        } else {
            self.partial.extend_from_slice(piece);
        }
    }

    fn keep_oversized_tail(&mut self, bytes: &[u8]) {
        self.oversized_tail.extend_from_slice(bytes);
        let keep = WINDOW_BYTES as usize;
        if self.oversized_tail.len() > 2 * keep {
            let drop = self.oversized_tail.len() - keep;
            self.oversized_tail.drain(..drop);
        }
    }

    fn roll(&mut self, bytes: &[u8]) {
        let keep = WINDOW_BYTES as usize;
        if bytes.len() >= keep {
            self.rolling.clear();
            self.rolling.extend_from_slice(&bytes[bytes.len() - keep..]);
            return;
        }
        self.rolling.extend_from_slice(bytes);
        if self.rolling.len() > 4 * keep {
            let drop = self.rolling.len() - keep;
            self.rolling.drain(..drop);
        }
    }

    fn finish(
        self,
        ctx: &SourceCtx,
        binding: [u8; 16],
        records: Vec<Record>,
        reset: bool,
        warnings: Vec<String>,
        tallies: Tallies<'_>,
    ) -> Page {
        let Tallies { unknown, filtered } = tallies;
        // Without a cut by the limit, continue after the last complete line consumed.
        let cut = self.cut.clone().unwrap_or_else(|| Cut {
            resume: self.rolling_end,
            skip: 0,
            window_end: self.rolling_end,
            window: self.rolling.clone(),
        });
        let window = &cut.window[cut.window.len().saturating_sub(WINDOW_BYTES as usize)..];
        let head =
            &self.head[..(self.head.len() as u64).min(cut.window_end).min(HEAD_BYTES) as usize];
        let records_before = self.records_before || self.emitted > 0;
        let cursor = LineCursor::new(
            binding,
            cut.resume,
            cut.skip,
            cut.window_end,
            window,
            head,
            records_before,
        );
        let pending_tail = self.partial_len > 0 && self.size.is_some_and(|s| self.pos >= s);
        // What this page's lines held that was not understood: the lines up to its cut (a
        // line cut inside is counted by the page that finishes it).
        let unknown = unknown
            .iter()
            .filter(|(offset, _)| self.cut.as_ref().is_none_or(|cut| *offset < cut.resume))
            .map(|(_, n)| n)
            .sum();
        let mut page = Page {
            records,
            cursor: Cursor::Lines(cursor),
            start: None,
            older: self.records_before,
            more: self.more,
            pending_tail,
            reset,
            warnings,
            screen: Vec::new(),
            unknown,
            no_records: false,
            writer_version: crate::harness::writer_version(ctx.harness, &self.head),
            filtered,
        };
        if self.from_start && self.done {
            page.mark_no_records(ctx, self.rolling_end, self.emitted > 0);
        }
        page
    }
}

/// The widest first tail window ([`ReadPlan::with_tail_window`]): with the head and the read
/// ahead of the listed end, one read stays within [`MAX_READ_BYTES`].
const MAX_TAIL_WINDOW: u64 = MAX_READ_BYTES - HEAD_BYTES - FIRST_CHUNK_BYTES;

/// How far before the listed end a tail's first read starts when asked for `bytes`
/// ([`ReadPlan::with_tail_window`]): what a caller that reads that range ahead of the plan
/// must ask for too.
pub fn tail_window(bytes: u64) -> u64 {
    bytes.clamp(HEAD_BYTES, MAX_TAIL_WINDOW)
}

mod tail;
use tail::{Before, Tail};

#[cfg(test)]
mod tests;
