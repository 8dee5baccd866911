//! The tail reader of [`super::ReadPlan`]: a read backward from a source's end (or from a
//! cursor, for a backward read), chunks to the left of what is read, lines found right to left.

use super::*;

/// Reading backward from the end (tail): chunks to the left of `lo`, lines found right to left.
#[derive(Debug)]
pub(super) struct Tail {
    pub(super) size_hint: u64,
    /// How far before the listed end the first read starts.
    pub(super) first_back: u64,
    /// The true size, once known; the region read is `[lo, size)`.
    pub(super) size: Option<u64>,
    pub(super) lo: u64,
    /// Bytes from `lo` up to and including the first `\n` at or after `lo` (capped).
    pub(super) partial: Vec<u8>,
    pub(super) partial_len: u64,
    /// Records found so far, oldest first, grouped by line from the right.
    pub(super) records: VecDeque<Record>,
    /// The offset of each record's line, in step with `records`.
    pub(super) offsets: VecDeque<u64>,
    /// The line offset of each record the filter left out: those at or after the page's first
    /// record are the page's `filtered`.
    pub(super) left_out: Vec<u64>,
    /// End of the last complete line, and the window of bytes before it.
    pub(super) last_line_end: Option<u64>,
    pub(super) window: Vec<u8>,
    pub(super) head: Vec<u8>,
    pub(super) pending_tail: bool,
    pub(super) chunk: u64,
    pub(super) read_total: u64,
    pub(super) done: bool,
    pub(super) retries: u8,
    /// The harness's lines upsert by id ([`crate::harness::upserts_by_id`]): a line near the
    /// end may repeat ids first returned far before it, where `--all` places them. Such a tail
    /// reads on past its page (to the start, or [`UPSERT_REPLAY_BYTES`]) to learn them.
    pub(super) upserts: bool,
    /// A backward read: the records before this cursor, not the source's end.
    pub(super) before: Option<Before>,
    /// The index of each record among its line's records, in step with `records`.
    pub(super) indexes: VecDeque<u32>,
    /// For each line that gave records, its end and the last (up to 4 KiB) bytes ending there:
    /// the window of a cursor at the page's start ([`Page::start`]). At most the bytes read.
    pub(super) windows: HashMap<u64, (u64, Vec<u8>)>,
}

/// What a backward read reads before: the cursor, and where its records end (the cursor's
/// line start, or the end of that line when its first `skip` records come before it).
#[derive(Debug)]
pub(super) struct Before {
    pub(super) cursor: LineCursor,
    pub(super) end: u64,
    /// The source's size when the cursor was checked: bytes after `end` are records after
    /// the page (`more`).
    pub(super) source_size: u64,
}

impl Tail {
    pub(super) fn new(size_hint: u64) -> Tail {
        Tail {
            size_hint,
            first_back: FIRST_CHUNK_BYTES,
            size: None,
            lo: 0,
            partial: Vec::new(),
            partial_len: 0,
            records: VecDeque::new(),
            offsets: VecDeque::new(),
            left_out: Vec::new(),
            last_line_end: None,
            window: Vec::new(),
            head: Vec::new(),
            pending_tail: false,
            chunk: FIRST_CHUNK_BYTES,
            read_total: 0,
            done: false,
            retries: 0,
            upserts: false,
            before: None,
            indexes: VecDeque::new(),
            windows: HashMap::new(),
        }
    }

    /// A backward read of the records before `cursor`.
    pub(super) fn before(cursor: LineCursor) -> Tail {
        let end = if cursor.skip > 0 {
            cursor.window_end
        } else {
            cursor.resume
        };
        let mut tail = Tail::new(end);
        // Nothing precedes the start of an empty source.
        tail.done = end == 0 && cursor.window_end == 0;
        tail.before = Some(Before {
            cursor,
            end,
            source_size: 0,
        });
        tail
    }

    /// The records of the line at `offset` that belong to the read: a backward read whose
    /// cursor is inside that line keeps only those returned before the cursor.
    pub(super) fn own(&self, offset: u64, mut records: Vec<Record>) -> Vec<Record> {
        if let Some(before) = &self.before
            && before.cursor.skip > 0
            && offset == before.cursor.resume
        {
            records.truncate(before.cursor.skip as usize);
        }
        records
    }

    /// Notes the window ending at the end of the line at `offset` (its last bytes, up to
    /// 4 KiB with its `\n`), when the line gave records.
    pub(super) fn note_window(&mut self, offset: u64, line: Option<&[u8]>, len: u64, gave: bool) {
        if !gave {
            return;
        }
        let end = offset + len + 1;
        let mut window = Vec::new();
        if let Some(line) = line {
            let keep = (WINDOW_BYTES as usize - 1).min(line.len());
            window.extend_from_slice(&line[line.len() - keep..]);
            window.push(b'\n');
        }
        self.windows.insert(offset, (end, window));
    }

    pub(super) fn next_read(&self) -> Option<Vec<ByteRange>> {
        if self.done {
            return None;
        }
        match self.size {
            // A backward read's first: the head, and the bytes before the cursor's position
            // through its window (both checked against the cursor's hashes).
            None if let Some(before) = &self.before => {
                let cursor = &before.cursor;
                let window_start = cursor.window_end - u64::from(cursor.window_len);
                let start = before.end.saturating_sub(self.first_back).min(window_start);
                let end = before.end.max(cursor.window_end);
                Some(vec![
                    ByteRange::new(0, HEAD_BYTES),
                    ByteRange::new(start, end - start),
                ])
            }
            // First read: the head (for the cursor) and a window around the listed end, so
            // that a file that grew a little since the listing needs no extra round trip.
            None => {
                let start = self.size_hint.saturating_sub(self.first_back);
                Some(vec![
                    ByteRange::new(0, HEAD_BYTES),
                    ByteRange::new(start, self.size_hint - start + FIRST_CHUNK_BYTES),
                ])
            }
            Some(_) => {
                let budget = MAX_SOURCE_BYTES.saturating_sub(self.read_total);
                let len = self.chunk.min(self.lo).min(budget);
                if len == 0 {
                    return None;
                }
                Some(vec![ByteRange::new(self.lo - len, len)])
            }
        }
    }

    pub(super) fn feed(
        &mut self,
        sink: &mut Sink<'_>,
        limit: usize,
        requested: Vec<ByteRange>,
        mut chunks: Vec<Vec<u8>>,
        size: u64,
    ) -> Result<(), PlanError> {
        let data = chunks.pop().unwrap_or_default();
        let range = *requested.last().expect("one range at least");
        if self.size.is_none() {
            self.head = chunks.pop().unwrap_or_default();
            // The file moved past what we read around the listed size: start over at its
            // true end (a few times at most; a file growing that fast is still read).
            let read_end = range.start + data.len() as u64;
            if read_end < size || range.start > size {
                self.size_hint = size;
                self.retries += 1;
                if self.retries <= 3 {
                    return Ok(());
                }
                // Give up chasing the end: read what we have, the rest is for `--since`.
            }
            self.size = Some(read_end.min(size));
            self.lo = read_end.min(size);
            // The bytes at the right end past the last `\n` are the pending tail.
        } else if size < self.lo {
            if self.before.is_some() {
                // Before a cursor whose bytes are gone: the next read finds it stale.
                return Err(PlanError::Moving { size });
            }
            // The file shrank below what is still to be read: it was truncated or replaced
            // under the read. Start over at its new end, with the same few retries as above.
            let retries = self.retries + 1;
            if retries > 3 {
                return Err(PlanError::Moving { size });
            }
            *self = Tail {
                first_back: self.first_back,
                upserts: self.upserts,
                ..Tail::new(size)
            };
            self.retries = retries;
            return Ok(());
        }
        self.read_total += data.len() as u64;
        self.chunk = (self.chunk * 4).min(MAX_READ_BYTES);
        // After the retries a file may end before the range read around its old end: there is
        // nothing right of `lo` then, and the tail is read leftwards from the file's true end.
        let start = range.start.min(self.lo);
        let data = &data[..(self.lo - start) as usize];
        // Newlines right to left. `right` is the end (exclusive, relative to `start`) of the
        // segment right of the current newline; while `right_in_partial`, that segment goes on
        // into `partial` (the bytes from `lo` to the first `\n` at or after it).
        let mut right_in_partial = true;
        let mut right = data.len();
        let mut found: Vec<(u64, Vec<Record>)> = Vec::new();
        // The offsets of the lines of records the filter left out.
        let mut left_out = Vec::new();
        // Where the parse stopped once the page was full: the start of its oldest line.
        let mut full_at = None;
        for nl in memchr::memrchr_iter(b'\n', data) {
            let seg_start = nl + 1;
            let offset = start + seg_start as u64;
            if self.last_line_end.is_none() {
                // The rightmost `\n` of the file ends its last complete line; whatever
                // follows it is the pending tail, never returned.
                self.last_line_end = Some(offset);
                self.window =
                    data[seg_start.saturating_sub(WINDOW_BYTES as usize)..seg_start].to_vec();
                let tail_len = (right - seg_start) as u64
                    + if right_in_partial {
                        self.partial_len
                    } else {
                        0
                    };
                self.pending_tail = tail_len > 0;
                self.partial.clear();
                self.partial_len = 0;
            } else if right_in_partial {
                let (bytes, len) = self.join_partial(&data[seg_start..right]);
                let records = self.own(offset, sink.line(offset, bytes.as_deref(), len)?);
                let records = keep_at(sink, &mut left_out, offset, records);
                self.note_window(offset, bytes.as_deref(), len, !records.is_empty());
                found.push((offset, records));
            } else {
                // The segment ends with the `\n` found on the previous turn.
                let seg = &data[seg_start..right - 1];
                let len = seg.len() as u64;
                let bytes = if len > MAX_RECORD_BYTES {
                    None
                } else {
                    Some(seg)
                };
                let records = self.own(offset, sink.line(offset, bytes, len)?);
                let records = keep_at(sink, &mut left_out, offset, records);
                self.note_window(offset, bytes, len, !records.is_empty());
                found.push((offset, records));
            }
            right_in_partial = false;
            right = seg_start;
            if !sink.strict && !self.upserts && self.page_is_full(&found, limit) {
                full_at = Some(seg_start);
                break;
            }
        }
        if let Some(line_start) = full_at {
            // The lines left of the page are never parsed (a 64 KiB read of a session is
            // mostly older lines; a first `check` wants only its newest record). What is
            // left of them is as if the read had started here: the line before ends with
            // the `\n` just left of `line_start`, so nothing of it is pending.
            self.partial.clear();
            self.partial_len = 0;
            self.lo = start + line_start as u64;
        } else {
            // The leftmost piece of this chunk starts (or continues) the new partial line.
            if !right_in_partial {
                self.partial.clear();
                self.partial_len = 0;
            }
            self.prepend_partial(&data[..right]);
            self.lo = start;
        }
        self.left_out.extend(left_out);
        for (offset, records) in found {
            for (index, record) in records.into_iter().enumerate().rev() {
                self.records.push_front(record);
                self.offsets.push_front(offset);
                self.indexes.push_front(index as u32);
            }
        }
        if self.lo == 0 {
            if self.partial_len > 0 {
                if self.last_line_end.is_some() {
                    // The first line of the file.
                    let (bytes, len) = self.take_partial_line();
                    let records = self.own(0, sink.line(0, bytes.as_deref(), len)?);
                    let mut left = Vec::new();
                    let records = keep_at(sink, &mut left, 0, records);
                    self.note_window(0, bytes.as_deref(), len, !records.is_empty());
                    self.left_out.extend(left);
                    for (index, record) in records.into_iter().enumerate().rev() {
                        self.records.push_front(record);
                        self.offsets.push_front(0);
                        self.indexes.push_front(index as u32);
                    }
                } else {
                    // No newline anywhere: the whole file is one incomplete record.
                    self.pending_tail = true;
                }
            }
            self.done = true;
        }
        let enough = if self.upserts {
            self.read_total >= UPSERT_REPLAY_BYTES
        } else {
            self.records.len() >= limit
        };
        if enough || self.read_total >= MAX_SOURCE_BYTES {
            self.done = true;
        }
        Ok(())
    }

    /// Whether the 64 MiB bound ended the read with fewer than `limit` records found and
    /// older bytes left unread.
    pub(super) fn stopped_at_the_bound(&self, limit: usize) -> bool {
        self.read_total >= MAX_SOURCE_BYTES && self.lo > 0 && self.records.len() < limit
    }

    /// Whether the records found so far (`found`, this chunk's, and those of the chunks
    /// before) fill a page of `limit` and show that older ones exist (the page's `older`):
    /// one distinct id more than it holds (`finish` keeps one copy of each). Only small
    /// pages are counted so; a larger one reads its window whole.
    pub(super) fn page_is_full(&self, found: &[(u64, Vec<Record>)], limit: usize) -> bool {
        const COUNTED_LIMIT: usize = 64;
        if limit > COUNTED_LIMIT {
            return false;
        }
        let newer = self.records.iter();
        let mut records = found.iter().flat_map(|(_, r)| r).chain(newer);
        let mut ids = HashSet::with_capacity(limit + 1);
        records.any(|r| ids.insert(r.id.as_str()) && ids.len() > limit)
    }

    /// `segment` ends with `\n` and is the left part of the partial line: the complete line
    /// (without `\n`), or `None` when it is over the record limit, and its length.
    pub(super) fn join_partial(&mut self, segment: &[u8]) -> (Option<Vec<u8>>, u64) {
        self.prepend_partial(segment);
        self.take_partial_line()
    }

    pub(super) fn take_partial_line(&mut self) -> (Option<Vec<u8>>, u64) {
        let mut bytes = std::mem::take(&mut self.partial);
        let mut len = self.partial_len;
        self.partial_len = 0;
        if bytes.last() == Some(&b'\n') {
            bytes.pop();
            len -= 1;
        }
        if len > MAX_RECORD_BYTES {
            (None, len)
        } else {
            (Some(bytes), len)
        }
    }

    pub(super) fn prepend_partial(&mut self, bytes: &[u8]) {
        self.partial_len += bytes.len() as u64;
        if self.partial_len > MAX_RECORD_BYTES + 1 {
            // Oversized: its bytes are never needed, only its length.
            self.partial.clear();
        } else {
            let mut joined = Vec::with_capacity(bytes.len() + self.partial.len());
            joined.extend_from_slice(bytes);
            joined.extend_from_slice(&self.partial);
            self.partial = joined;
        }
    }

    /// The bytes of the page [`Tail::finish`] gives: from its first record's line to the end
    /// of its last line.
    pub(super) fn page_bytes(&self, limit: usize) -> Option<u64> {
        let end = self.last_line_end?;
        // The records `finish` keeps: the first copy of each id, then the newest `limit`.
        let mut seen = HashSet::new();
        let kept: Vec<u64> = self
            .records
            .iter()
            .zip(&self.offsets)
            .filter(|(r, _)| seen.insert(r.id.as_str()))
            .map(|(_, &offset)| offset)
            .collect();
        let first = *kept.get(kept.len().saturating_sub(limit))?;
        Some(end.saturating_sub(first))
    }

    pub(super) fn finish(
        mut self,
        ctx: &SourceCtx,
        binding: [u8; 16],
        limit: usize,
        warnings: Vec<String>,
        unknown: &[(u64, u32)],
        filtering: bool,
    ) -> Page {
        // A replayed line repeats its ids; keep the first copy, as a forward read does.
        let mut seen = HashSet::new();
        let mut indexes = Vec::new();
        let mut kept: Vec<(Record, u64)> = std::mem::take(&mut self.records)
            .into_iter()
            .zip(std::mem::take(&mut self.offsets))
            .zip(std::mem::take(&mut self.indexes))
            .filter(|((r, _), _)| seen.insert(r.id.clone()))
            .map(|(kept, index)| {
                indexes.push(index);
                kept
            })
            .collect();
        let dropped = kept.len().saturating_sub(limit);
        // The page's lines start at its first record's (all lines read when it has none).
        let first_line = kept.get(dropped).map_or(0, |&(_, at)| at);
        let unknown = unknown
            .iter()
            .filter(|(offset, _)| *offset >= first_line)
            .map(|(_, n)| n)
            .sum();
        // What the filter left out of the span the page covers (all it examined, for a page
        // of nothing).
        let filtered = match kept.get(dropped) {
            Some(&(_, first)) => self.left_out.iter().filter(|&&at| at >= first).count(),
            None => self.left_out.len(),
        };
        let older = dropped > 0 || self.lo > 0;
        // Where a backward read continues: before the page's first record, a line start and
        // how many of that line's records come before it (counted as a forward read counts
        // them, so a filtered page has none).
        let start = kept
            .get(dropped)
            .filter(|_| !filtering)
            .and_then(|&(_, line)| {
                let (line_end, window) = self.windows.get(&line)?;
                let head =
                    &self.head[..(self.head.len() as u64).min(*line_end).min(HEAD_BYTES) as usize];
                Some(Cursor::Lines(LineCursor::new(
                    binding,
                    line,
                    indexes[dropped],
                    *line_end,
                    window,
                    head,
                    older,
                )))
            });
        let records: Vec<Record> = kept.drain(dropped..).map(|(r, _)| r).collect();
        let end = self.last_line_end.unwrap_or(0);
        let head = &self.head[..(self.head.len() as u64).min(end).min(HEAD_BYTES) as usize];
        let window = if end == 0 { &[][..] } else { &self.window[..] };
        let cursor = LineCursor::new(
            binding,
            end,
            0,
            end,
            window,
            head,
            older || !records.is_empty(),
        );
        let mut page = Page {
            records,
            cursor: Cursor::Lines(cursor),
            start,
            older,
            more: false,
            pending_tail: self.pending_tail,
            reset: false,
            warnings,
            screen: Vec::new(),
            unknown,
            no_records: false,
            writer_version: crate::harness::writer_version(ctx.harness, &self.head),
            filtered,
        };
        if let Some(before) = self.before {
            // A backward page's cursor is its start (the cursor given, for a page of nothing);
            // the cursor's records follow it.
            page.cursor = page.start.clone().unwrap_or(Cursor::Lines(before.cursor));
            page.more = before.source_size > before.end;
            page.pending_tail = false;
            if self.lo == 0 && self.done {
                page.mark_no_records(ctx, end, false);
            }
        } else if self.lo == 0 && self.done {
            page.mark_no_records(ctx, end, false);
        }
        page
    }
}
