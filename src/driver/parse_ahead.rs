//! `--all`'s lines parsed ahead of the plan on two cores, by one helper thread that lives for the
//! whole read.
//!
//! Why one thread for the read and not one a chunk ([`super::on_every_core`]): each new thread
//! gets a fresh allocator heap, and the heap of a thread that has ended is abandoned with the
//! records it made still alive (the writer frees them later). A thread a chunk put each chunk's
//! records and texts on fresh pages, which the kernel faulted in and zeroed: about 14,000 page
//! faults for the bench's 64 MiB, against 9,000 with the heap kept.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use clankie_engine::SourceCtx;
use clankie_engine::plan::{ParsedLine, lines_to_parse_ahead};
use clankie_model::Record;

use crate::handoff::{Handoff, HelperFailed};

/// Below this many lines a chunk is parsed on the calling thread alone: a handoff would cost
/// more than it saves.
const MIN_LINES: usize = 512;

/// A part of a chunk's lines, parsed: its number and its lines.
type Part = (usize, Vec<ParsedLine>);

/// A chunk's lines to parse: where each starts in the file and in the chunk, and its length.
/// A clone is the same job for the other thread: the same lines and parts, taken from the same
/// count.
#[derive(Clone)]
struct Job {
    chunk: Arc<Vec<u8>>,
    /// (offset in the file, start in the chunk, length).
    lines: Arc<Vec<(u64, usize, usize)>>,
    /// The next part to take; parts are taken in turn by both threads, so a thread that
    /// starts late or runs slow takes fewer.
    next: Arc<AtomicUsize>,
    per_part: usize,
    /// Texts unescaped here (see [`ParseAhead::new`]).
    plain: bool,
}

impl Job {
    fn parts(&self) -> usize {
        self.lines.len().div_ceil(self.per_part)
    }

    /// Parses parts until none is left; each with its number.
    fn run(&self, ctx: &SourceCtx) -> Vec<Part> {
        let mut done = Vec::new();
        loop {
            let k = self.next.fetch_add(1, Ordering::Relaxed);
            if k >= self.parts() {
                return done;
            }
            let lines =
                &self.lines[k * self.per_part..((k + 1) * self.per_part).min(self.lines.len())];
            let parsed = lines
                .iter()
                .map(|&(offset, at, len)| {
                    let line = &self.chunk[at..at + len];
                    let mut outcome = clankie_engine::harness::parse_line(ctx, offset, line);
                    if self.plain
                        && let Some(records) = outcome.records_mut()
                    {
                        records.iter_mut().for_each(Record::make_text_plain);
                    }
                    (offset, len as u64, outcome)
                })
                .collect();
            done.push((k, parsed));
        }
    }
}

/// The helper thread, started at the first chunk big enough to share, ended when dropped.
pub(super) struct ParseAhead {
    ctx: Arc<SourceCtx>,
    plain: bool,
    helper: Option<Helper>,
    /// No helper could be started (or there is one core): parse on the calling thread.
    alone: bool,
}

struct Helper {
    /// Jobs are left here rather than sent: the calling thread takes one back if the helper
    /// has not started on it by the time the caller's own parts are done, so it never waits
    /// for a helper that took nothing (see [`crate::handoff`]).
    handoff: Arc<Handoff<Job, Vec<Part>>>,
    thread: JoinHandle<()>,
}

impl ParseAhead {
    /// `plain`: texts a harness keeps as their JSON token are unescaped on the parsing threads,
    /// for a caller that reads them (text output) rather than one that writes them as JSON.
    pub(super) fn new(ctx: SourceCtx, plain: bool) -> ParseAhead {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        ParseAhead {
            ctx: Arc::new(ctx),
            plain,
            helper: None,
            alone: cores < 2,
        }
    }

    /// The lines of `chunk` (at byte `start` of the file) that the plan would parse whole,
    /// parsed: the plan's [`lines_to_parse_ahead`], shared with the helper. The chunk is lent to
    /// the helper for the call and given back.
    pub(super) fn parse(&mut self, start: u64, chunk: Vec<u8>) -> (Vec<u8>, Vec<ParsedLine>) {
        let lines: Vec<(u64, usize, usize)> = lines_to_parse_ahead(start, &chunk)
            .into_iter()
            .map(|(offset, line)| (offset, (offset - start) as usize, line.len()))
            .collect();
        let chunk = Arc::new(chunk);
        let mine = Job {
            chunk: chunk.clone(),
            // Small parts: the calling thread waits at most for the one the helper is on.
            per_part: lines.len().div_ceil(PARTS).max(1),
            lines: Arc::new(lines),
            next: Arc::new(AtomicUsize::new(0)),
            plain: self.plain,
        };
        let helper = match mine.lines.len() >= MIN_LINES && !self.alone {
            true => self.helper(),
            false => None,
        };
        if let Some(helper) = helper {
            helper.handoff.push([mine.clone()]);
        }
        let mut done = mine.run(&self.ctx);
        if let Some(helper) = &self.helper {
            // Out of parts: a job the helper never started goes back (its parts are done);
            // else the wait is for the part the helper is on.
            drop(helper.handoff.take_unstarted());
            match helper.handoff.wait_idle() {
                Ok(theirs) => done.extend(theirs.into_iter().flatten()),
                // The helper panicked halfway: raised again here.
                Err(HelperFailed) => self.end_helper(),
            }
        }
        drop(mine);
        done.sort_unstable_by_key(|(k, _)| *k);
        let parsed = done.into_iter().flat_map(|(_, lines)| lines).collect();
        let chunk = Arc::try_unwrap(chunk).unwrap_or_else(|shared| (*shared).clone());
        (chunk, parsed)
    }

    fn helper(&mut self) -> Option<&Helper> {
        if self.helper.is_none() && !self.alone {
            let handoff: Arc<Handoff<Job, _>> = Arc::default();
            let ctx = self.ctx.clone();
            let serving = handoff.clone();
            let started = std::thread::Builder::new()
                .name("parse-ahead".into())
                .spawn(move || serving.serve(|job| job.run(&ctx)));
            match started {
                Ok(thread) => self.helper = Some(Helper { handoff, thread }),
                Err(_) => self.alone = true,
            }
        }
        self.helper.as_ref()
    }

    /// Ends the helper thread, raising its panic here if it panicked.
    fn end_helper(&mut self) {
        if let Some(Helper { handoff, thread }) = self.helper.take() {
            handoff.close();
            if let Err(panic) = thread.join() {
                std::panic::resume_unwind(panic);
            }
        }
        self.alone = true;
    }
}

/// A chunk's parts are spread over this many: the calling thread, done with the parts it took,
/// waits for the one the helper is on, so a part is kept short.
const PARTS: usize = 32;

impl Drop for ParseAhead {
    fn drop(&mut self) {
        if let Some(Helper { handoff, thread }) = self.helper.take() {
            handoff.close();
            // Its panic, if any, was raised by `parse` already; none can start now.
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cores() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }

    fn ctx() -> SourceCtx {
        SourceCtx {
            host: "local".into(),
            harness: clankie_engine::harness::by_name("claude").unwrap(),
            session: "s".into(),
            agent: None,
        }
    }

    /// The lines of several chunks, big and small, come back as the calling thread alone would
    /// parse them, in order, and the chunk comes back as it was lent; one helper thread serves
    /// every chunk.
    #[test]
    fn every_chunk_comes_back_parsed_in_order_with_its_bytes() {
        let mut ahead = ParseAhead::new(ctx(), false);
        let line = |i: usize| {
            format!(
                r#"{{"type":"user","uuid":"u{i}","message":{{"role":"user","content":"prompt {i} \"q\""}}}}"#
            )
        };
        let mut start = 0u64;
        let mut helper = None;
        for lines in [3usize, 5_000, 0, 700, 20_000] {
            let chunk: Vec<u8> = (0..lines)
                .map(|i| line(i) + "\n")
                .collect::<String>()
                .into_bytes();
            let (back, parsed) = ahead.parse(start, chunk.clone());
            assert_eq!(back, chunk);
            let alone: Vec<ParsedLine> = lines_to_parse_ahead(start, &chunk)
                .into_iter()
                .map(|(offset, line)| {
                    let outcome = clankie_engine::harness::parse_line(&ctx(), offset, line);
                    (offset, line.len() as u64, outcome)
                })
                .collect();
            assert_eq!(format!("{parsed:?}"), format!("{alone:?}"), "{lines} lines");
            // One helper for the read, started by the first chunk big enough to share.
            let now = ahead.helper.as_ref().map(|h| h.thread.thread().id());
            if cores() > 1 && lines >= MIN_LINES {
                assert!(now.is_some(), "{lines} lines: no helper");
            }
            assert!(
                helper.is_none() || now == helper,
                "{lines} lines: a new helper"
            );
            helper = now;
            start += chunk.len() as u64;
        }
    }
}
