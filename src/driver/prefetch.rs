//! Reads done ahead of their pages: the first reads of many sessions batched in few round
//! trips (`check`), a session's first read kept from its resolution, and files read whole with
//! a listing. Each is kept by file and served once, to the first read of the page it answers; a
//! tail page whose read is in hand is paged without the host, on any thread ([`InHand`],
//! [`on_every_core`]).

use std::collections::HashMap;

use clankie_engine::harness::{self, Source};
use clankie_engine::page::{Mode, Page, PageRequest};
use clankie_engine::plan::ReadPlan;
use clankie_engine::session::SessionFile;
use clankie_host::{FileRef, Host, HostError};
use clankie_model::ByteRange;

use super::{DriverError, Reader, file_ref, hint_the_path, source_ctx};

/// A tail page whose read is in hand ([`Reader::take_in_hand`]): no host is needed to page
/// it, so many of them can be paged side by side ([`on_every_core`]).
pub struct InHand<'s> {
    plan: ReadPlan,
    /// Cut into the plan's ranges on the thread that pages it (a copy of each small file's
    /// head).
    read: Prefetched,
    session: &'s SessionFile,
}

impl InHand<'_> {
    /// The page, from the bytes in hand, as [`Reader::read_page`] gives it; `None` when the
    /// plan wants more than them (the file changed between the listing and its read): the
    /// caller reads the page the usual way.
    pub fn page(mut self) -> Option<Result<Page, DriverError>> {
        let result = self.read.into_result();
        if let Err(source) = self.plan.feed(result.chunks, result.size) {
            let path = String::from_utf8_lossy(&self.session.entry.full_path()).into_owned();
            return Some(Err(DriverError::Plan { path, source }));
        }
        if self.plan.next_read().is_some() {
            return None;
        }
        let mut page = self.plan.finish();
        hint_the_path(&mut page, self.session);
        Some(Ok(page))
    }
}

/// `work` done on each of `items` on up to as many threads as there are cores, the results in
/// the items' order. For CPU-bound work that needs no host: the pages of thousands of sessions
/// read along with a first `check`'s listing, while the hosts are idle.
pub fn on_every_core<T: Send, R: Send>(items: Vec<T>, work: impl Fn(T) -> R + Sync) -> Vec<R> {
    // Below this many items a thread costs more than it saves.
    const PER_THREAD: usize = 256;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cores.min(items.len() / PER_THREAD).max(1);
    if threads == 1 {
        return items.into_iter().map(work).collect();
    }
    // A few parts a thread, taken in turn: a thread that starts late or runs slow takes fewer.
    let per = items.len().div_ceil(threads * 4);
    let mut parts: Vec<Vec<T>> = Vec::new();
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        parts.push(items.by_ref().take(per).collect());
    }
    let parts = std::sync::Mutex::new(parts.into_iter().enumerate());
    let run = || {
        let mut done = Vec::new();
        loop {
            let next = parts.lock().unwrap_or_else(|e| e.into_inner()).next();
            let Some((k, part)) = next else {
                return done;
            };
            done.push((k, part.into_iter().map(&work).collect::<Vec<R>>()));
        }
    };
    std::thread::scope(|scope| {
        // A thread that cannot be started leaves its parts to the others, this one at least.
        let helpers: Vec<_> = (1..threads)
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(scope, run).ok())
            .collect();
        let mut done = run();
        for helper in helpers {
            match helper.join() {
                Ok(theirs) => done.extend(theirs),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        done.sort_unstable_by_key(|(k, _)| *k);
        done.into_iter().flat_map(|(_, results)| results).collect()
    })
}

/// Files read whole with the listing, by (root, path).
pub(super) type WholeReads = HashMap<FileKey, (FileRef, clankie_model::ReadResult)>;

/// The first read of `session` (`ranges`) cut from its file read whole with the listing, taken
/// out of `whole`: only at the size it was listed at (a file that changed in between is read as
/// usual).
pub(super) fn whole_read(
    whole: &mut WholeReads,
    session: &SessionFile,
    ranges: &[ByteRange],
) -> Option<Prefetched> {
    let size = session.entry.size;
    let key = (session.entry.root.to_vec(), session.entry.rel.clone());
    let (file, result) = whole.remove(&key)?;
    if result.size != size || result.chunks.len() != 1 || result.chunks[0].len() as u64 != size {
        return None;
    }
    let cut = cut_at(ranges, size);
    let parts = cut
        .iter()
        .map(|r| (0, r.start.min(size) as usize..r.end().min(size) as usize))
        .collect();
    Some(Prefetched {
        file,
        ranges: cut,
        size,
        data: result.chunks,
        parts,
    })
}

/// `ranges` cut where a file of `size` bytes ends.
fn cut_at(ranges: &[ByteRange], size: u64) -> Vec<ByteRange> {
    ranges
        .iter()
        .map(|r| ByteRange::new(r.start, r.len.min(size.saturating_sub(r.start))))
        .collect()
}

/// A file's root and path below it: what reads done ahead are kept by.
pub(super) type FileKey = (Vec<u8>, Vec<u8>);

/// A read done ahead of its plan: the ranges read of a file and what came back.
///
/// The bytes are kept once each: a small file's head and tail are the same bytes (and a file
/// read whole with the listing holds every range), and are copied apart only when the read is
/// served ([`Prefetched::into_result`]), one session at a time: a first `check` keeps reads
/// of thousands of sessions at once, and every byte held at once is fresh memory the kernel
/// zeroes first (docs/performance.md).
#[derive(Debug)]
pub(super) struct Prefetched {
    pub(super) file: FileRef,
    pub(super) ranges: Vec<ByteRange>,
    /// The file's size the read saw.
    pub(super) size: u64,
    /// The bytes read, each once.
    pub(super) data: Vec<Vec<u8>>,
    /// For each of `ranges`: which of `data` answers it, and the part of it.
    pub(super) parts: Vec<(usize, std::ops::Range<usize>)>,
}

impl Prefetched {
    /// A read as the host returned it: one chunk for each range.
    pub(super) fn of_read(
        file: FileRef,
        ranges: Vec<ByteRange>,
        result: clankie_model::ReadResult,
    ) -> Self {
        let parts = result
            .chunks
            .iter()
            .enumerate()
            .map(|(k, chunk)| (k, 0..chunk.len()))
            .collect();
        Prefetched {
            file,
            ranges,
            size: result.size,
            data: result.chunks,
            parts,
        }
    }

    /// The read as the host would return it: each range's bytes, the last range that is all
    /// of a chunk taking it as it is and any other a copy of its part.
    pub(super) fn into_result(mut self) -> clankie_model::ReadResult {
        let whole = |k: usize, part: &std::ops::Range<usize>| {
            part.start == 0 && self.data.get(k).is_some_and(|d| d.len() == part.end)
        };
        let takers: Vec<Option<usize>> = (0..self.data.len())
            .map(|k| self.parts.iter().rposition(|(j, p)| *j == k && whole(k, p)))
            .collect();
        let mut chunks: Vec<Vec<u8>> = self
            .parts
            .iter()
            .enumerate()
            .map(|(i, (k, part))| match takers.get(*k) {
                Some(&Some(taker)) if taker == i => Vec::new(),
                _ => self
                    .data
                    .get(*k)
                    .and_then(|d| d.get(part.clone()))
                    .unwrap_or_default()
                    .to_vec(),
            })
            .collect();
        for (k, taker) in takers.into_iter().enumerate() {
            if let Some(i) = taker {
                chunks[i] = std::mem::take(&mut self.data[k]);
            }
        }
        clankie_model::ReadResult {
            size: self.size,
            chunks,
        }
    }

    /// Whether this answers a read of `wanted` of `file` exactly as the host would now (the
    /// same bytes as a fresh read, give or take what changed since): the same starts, and each
    /// range as long as wanted or cut where the file ended anyway.
    pub(super) fn answers(&self, file: &FileRef, wanted: &[ByteRange]) -> bool {
        self.file == *file
            && self.ranges.len() == wanted.len()
            && self.ranges.iter().zip(wanted).all(|(got, want)| {
                got.start == want.start
                    && (got.len == want.len || (got.len < want.len && self.size <= got.end()))
            })
    }
}

impl<'h, H: Host> Reader<'h, H> {
    /// Reads the first range of many sessions in few round trips ([`Host::read_many`]) and
    /// keeps them for their pages: the newest record of each (`check`'s first run, with
    /// `mode` tail), or the start of each. Ranges are cut at the listed size, so that a small
    /// session costs its size in a batch; one that grew since its listing is read again by its
    /// page. Only files of lines are read ahead.
    pub async fn prefetch_first_reads(
        &self,
        sessions: &[(&SessionFile, PageRequest)],
    ) -> Result<(), HostError> {
        let mut reads = Vec::new();
        // Per read: the ranges the plan asks for (cut), and which asked range answers each.
        let mut wanted: Vec<(Vec<ByteRange>, Vec<usize>)> = Vec::new();
        let mut whole = std::mem::take(&mut *self.whole.lock().unwrap_or_else(|e| e.into_inner()));
        for (session, request) in sessions {
            if harness::source(session) != Source::Lines {
                continue;
            }
            let ctx = source_ctx(self.host.name(), session);
            let size = session.entry.size;
            let Some(ranges) = ReadPlan::new(ctx, request.clone(), size).next_read() else {
                continue;
            };
            if let Some(read) = whole_read(&mut whole, session, &ranges) {
                self.prefetch(read);
                continue;
            }
            let cut = cut_at(&ranges, size);
            // A small file's head and tail are the same whole file: asked for once.
            let mut unique: Vec<ByteRange> = Vec::new();
            let which: Vec<usize> = cut
                .iter()
                .map(|r| match unique.iter().position(|u| u == r) {
                    Some(k) => k,
                    None => {
                        unique.push(*r);
                        unique.len() - 1
                    }
                })
                .collect();
            reads.push((file_ref(&session.entry), unique));
            wanted.push((cut, which));
        }
        if reads.is_empty() {
            return Ok(());
        }
        let results = self.host.read_many(&reads).await?;
        for (((file, _), (ranges, which)), result) in reads.into_iter().zip(wanted).zip(results) {
            // A file that could not be read is read again by its page, which reports why.
            // Each range answered by its chunk, copied apart when served.
            if let Ok(result) = result {
                let parts = which
                    .iter()
                    .map(|&k| (k, 0..result.chunks.get(k).map_or(0, Vec::len)))
                    .collect();
                self.prefetch(Prefetched {
                    file,
                    ranges,
                    size: result.size,
                    data: result.chunks,
                    parts,
                });
            }
        }
        Ok(())
    }

    pub(super) fn prefetch(&self, read: Prefetched) {
        self.prefetched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((read.file.root.clone(), read.file.rel.clone()))
            // Mostly one read a file: no room for four.
            .or_insert_with(|| Vec::with_capacity(1))
            .push(read);
    }

    /// The read done ahead that answers `ranges` of `file`, the first read of a page; every
    /// read kept for `file` is dropped (each serves one page's first read, once).
    pub(super) fn take_prefetched(
        &self,
        file: &FileRef,
        ranges: &[ByteRange],
    ) -> Option<clankie_model::ReadResult> {
        self.take_answer(file, ranges).map(Prefetched::into_result)
    }

    /// What was read ahead of `file` that answers `ranges`, as it was kept.
    fn take_answer(&self, file: &FileRef, ranges: &[ByteRange]) -> Option<Prefetched> {
        let mut kept = self.prefetched.lock().unwrap_or_else(|e| e.into_inner());
        // Whatever else was read ahead of this file is stale from now on: a later page (a
        // follow's poll) reads afresh.
        let of_file = kept.remove(&(file.root.clone(), file.rel.clone()))?;
        of_file.into_iter().find(|p| p.answers(file, ranges))
    }

    /// The read of a tail page of a file of lines when it is in hand (read along with the
    /// listing, [`Reader::list_sessions_reading`]): taken out of what was read ahead, with the
    /// plan it answers, for [`InHand::page`] to page on any thread. `None` for any other page
    /// or source, or when nothing read ahead answers the plan's first read (the page is then
    /// read the usual way, [`Reader::read_page`]).
    pub fn take_in_hand<'s>(
        &self,
        session: &'s SessionFile,
        request: &PageRequest,
    ) -> Option<InHand<'s>> {
        if !matches!(request.mode, Mode::Tail) || harness::source(session) != Source::Lines {
            return None;
        }
        let ctx = source_ctx(self.host.name(), session);
        let mut plan =
            ReadPlan::new(ctx, request.clone(), session.entry.size).with_filter(&self.filter);
        if let Some(bytes) = self.tail_window {
            plan = plan.with_tail_window(bytes);
        }
        let ranges = plan.next_read()?;
        let file = FileRef {
            harness: session.harness(),
            root: session.entry.root.to_vec(),
            rel: session.entry.rel.clone(),
        };
        let whole = whole_read(
            &mut self.whole.lock().unwrap_or_else(|e| e.into_inner()),
            session,
            &ranges,
        );
        let read = whole.or_else(|| self.take_answer(&file, &ranges))?;
        Some(InHand {
            plan,
            read,
            session,
        })
    }
}
