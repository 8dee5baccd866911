//! The newest records of many sessions of lines at once, as a first `check` wants them: each
//! session's head (its cursor's hash) and a window before its end, read for every session in
//! few batched round trips ([`Host::read_many`]), whatever the sessions' sizes. A session whose
//! newest records do not fit its window is read further back in the next batch, with the
//! others that need more; a file no larger than its window comes whole (with the listing, when
//! it was read along with it), and a larger one's first read comes from its ends when the
//! listing read them along ([`Host::list_reading_ends`]), its window then the tail the host
//! sent (sized to the session's last lines where the host measured them). Each page, and so
//! each cursor, is the one [`Reader::read_page`] gives: the same planner reads the same bytes,
//! only the reads of many sessions go together.

use clankie_engine::harness::{self, Source};
use clankie_engine::page::{Mode, Page, PageRequest};
use clankie_engine::plan::ReadPlan;
use clankie_engine::session::SessionFile;
use clankie_host::{FileRef, Host, HostError};
use clankie_model::{ByteRange, ReadResult};

use super::prefetch::whole_read;
use super::{DriverError, Reader, file_ref, hint_the_path, on_every_core, source_ctx};

/// One session's tail being read.
struct Pending<'s> {
    /// Its place in the caller's list.
    at: usize,
    session: &'s SessionFile,
    plan: ReadPlan,
    /// Ask for the plan's ranges as they are: a read cut at the listed size came back short
    /// (the file grew since the listing).
    uncut: bool,
}

/// What one batched read asks of a file for a plan: the plan's ranges, and the spans that
/// cover them (overlapping or touching ranges asked for once: a small file's head and tail
/// are one read of the whole file).
struct Ask {
    wanted: Vec<ByteRange>,
    spans: Vec<ByteRange>,
    /// Whether `wanted` was cut at the listed size.
    cut: bool,
}

impl Ask {
    fn new(ranges: Vec<ByteRange>, listed: Option<u64>) -> Ask {
        let cut = listed.is_some();
        let asked: Vec<ByteRange> = match listed {
            Some(size) => ranges
                .iter()
                .map(|r| ByteRange::new(r.start, r.len.min(size.saturating_sub(r.start))))
                .collect(),
            None => ranges.clone(),
        };
        let mut sorted = asked;
        sorted.sort_by_key(|r| r.start);
        let mut spans: Vec<ByteRange> = Vec::with_capacity(sorted.len());
        for r in sorted {
            match spans.last_mut() {
                Some(last) if r.start <= last.end() => {
                    let end = last.end().max(r.end());
                    last.len = end - last.start;
                }
                _ => spans.push(r),
            }
        }
        Ask {
            wanted: ranges,
            spans,
            cut,
        }
    }

    /// The plan's ranges cut out of the spans' chunks, as the host would answer them; `None`
    /// when a cut read missed bytes the file has now (it grew past the listed size).
    fn answer(&self, result: ReadResult) -> Option<ReadResult> {
        let size = result.size;
        let mut chunks = Vec::with_capacity(self.wanted.len());
        for r in &self.wanted {
            let want = r.len.min(size.saturating_sub(r.start));
            let (span, chunk) = self
                .spans
                .iter()
                .zip(&result.chunks)
                .find(|(s, _)| s.start <= r.start && r.start <= s.end())?;
            let from = (r.start - span.start) as usize;
            let to = (from as u64 + want) as usize;
            let bytes = chunk.get(from..to.min(chunk.len()))?;
            if bytes.len() as u64 != want {
                return None;
            }
            chunks.push(bytes.to_vec());
        }
        Some(ReadResult { size, chunks })
    }
}

impl<'h, H: Host> Reader<'h, H> {
    /// How many bytes before its end a session's listing read along (its tail, as long as
    /// the host sized it), when it did and the file was the size it is listed at: its first
    /// read asks for that window, which its ends then answer.
    fn ends_window(&self, session: &SessionFile) -> Option<u64> {
        let key = (session.entry.root.to_vec(), session.entry.rel.clone());
        let kept = self.ends.lock().unwrap_or_else(|e| e.into_inner());
        let ends = kept.get(&key)?;
        (ends.size == session.entry.size).then_some(ends.tail.len() as u64)
    }

    /// A first read (`ask`, cut at the listed size) answered by the file's ends read with the
    /// listing, taken out of them: only when the file was the size it was listed at and
    /// every span the read asks lies within its head or its tail, or within the file where
    /// the two cover it (a file that grew is read as usual).
    fn ends_read(&self, session: &SessionFile, ask: &Ask) -> Option<ReadResult> {
        let key = (session.entry.root.to_vec(), session.entry.rel.clone());
        let mut kept = self.ends.lock().unwrap_or_else(|e| e.into_inner());
        let ends = kept.remove(&key)?;
        let size = session.entry.size;
        if ends.size != size || !ask.cut {
            return None;
        }
        let tail_start = size - (ends.tail.len() as u64).min(size);
        let head_len = ends.head.len() as u64;
        // The pieces known: the head and the tail, or the whole file where they meet.
        let whole;
        let pieces: Vec<(u64, &[u8])> = if head_len >= tail_start {
            whole = [&ends.head[..tail_start as usize], &ends.tail[..]].concat();
            vec![(0, &whole[..])]
        } else {
            vec![(0, &ends.head[..]), (tail_start, &ends.tail[..])]
        };
        let mut chunks = Vec::with_capacity(ask.spans.len());
        for span in &ask.spans {
            let (start, bytes) = pieces.iter().find(|(start, bytes)| {
                *start <= span.start && span.end() <= start + bytes.len() as u64
            })?;
            let from = (span.start - start) as usize;
            chunks.push(bytes[from..from + span.len as usize].to_vec());
        }
        ask.answer(ReadResult { size, chunks })
    }

    /// The tail pages of `sessions` whose request is a tail of a file of lines, their reads
    /// batched: the first reads of all of them in one [`Host::read_many`] (the plan's head and
    /// a `window` before the listed end, cut at that end), then one batch per round of those
    /// that need more, the first reading `window` further back, four times more each round
    /// after ([`ReadPlan::with_tail_step`]). A file read whole with the listing answers its first
    /// read without the host, and so does one whose ends the listing read, its first window
    /// then the tail the listing read of it. One result per session, in order: `None` for a session this
    /// does not read (another source or mode), which the caller reads as usual; a session's
    /// own error is its own. Only an error that fails the whole host ends the call.
    pub async fn tail_pages(
        &self,
        sessions: &[(&SessionFile, PageRequest)],
        window: u64,
    ) -> Result<Vec<Option<Result<Page, DriverError>>>, HostError> {
        let mut out: Vec<Option<Result<Page, DriverError>>> = std::iter::repeat_with(|| None)
            .take(sessions.len())
            .collect();
        let mut active: Vec<Pending<'_>> = Vec::new();
        for (at, (session, request)) in sessions.iter().enumerate() {
            if !matches!(request.mode, Mode::Tail) || harness::source(session) != Source::Lines {
                continue;
            }
            let ctx = source_ctx(self.host.name(), session);
            let first_window = self.ends_window(session).unwrap_or(window);
            let plan = ReadPlan::new(ctx, request.clone(), session.entry.size)
                .with_filter(&self.filter)
                .with_tail_window(first_window)
                // The first widening adds a window's worth (a tool result of up to twice the
                // window completes there), then four times more each round.
                .with_tail_step(window / 4);
            active.push(Pending {
                at,
                session,
                plan,
                uncut: false,
            });
        }
        let mut first = true;
        while !active.is_empty() {
            let mut asking: Vec<(Pending<'_>, Ask)> = Vec::new();
            let mut in_hand: Vec<(Pending<'_>, ReadResult)> = Vec::new();
            for pending in active.drain(..) {
                let Some(ranges) = pending.plan.next_read() else {
                    let Pending {
                        at, session, plan, ..
                    } = pending;
                    let mut page = plan.finish();
                    hint_the_path(&mut page, session);
                    out[at] = Some(Ok(page));
                    continue;
                };
                if first {
                    let whole = whole_read(
                        &mut self.whole.lock().unwrap_or_else(|e| e.into_inner()),
                        pending.session,
                        &ranges,
                    );
                    if let Some(read) = whole {
                        in_hand.push((pending, read.into_result()));
                        continue;
                    }
                }
                // The first read reaches past the listed end (for a file that grew a little):
                // cut there, so that a small session costs its size.
                let listed = (first && !pending.uncut).then_some(pending.session.entry.size);
                let ask = Ask::new(ranges, listed);
                if first && let Some(read) = self.ends_read(pending.session, &ask) {
                    in_hand.push((pending, read));
                    continue;
                }
                asking.push((pending, ask));
            }
            first = false;
            if !asking.is_empty() {
                let reads: Vec<(FileRef, Vec<ByteRange>)> = asking
                    .iter()
                    .map(|(p, ask)| (file_ref(&p.session.entry), ask.spans.clone()))
                    .collect();
                let results = self.host.read_many(&reads).await?;
                for ((mut pending, ask), result) in asking.into_iter().zip(results) {
                    match result {
                        Err(e) if e.is_host_wide() => return Err(e),
                        Err(e) => out[pending.at] = Some(Err(DriverError::Host(e))),
                        Ok(result) => match ask.answer(result) {
                            Some(answer) => in_hand.push((pending, answer)),
                            None if ask.cut => {
                                pending.uncut = true;
                                active.push(pending);
                            }
                            None => {
                                let path =
                                    String::from_utf8_lossy(&pending.session.entry.full_path())
                                        .into_owned();
                                out[pending.at] = Some(Err(DriverError::Source {
                                    path,
                                    reason: "the host answered fewer bytes than it holds".into(),
                                }));
                            }
                        },
                    }
                }
            }
            // Fed on every core: thousands of sessions' lines are parsed here.
            for (pending, fed) in on_every_core(in_hand, |(mut pending, read)| {
                let fed = pending.plan.feed(read.chunks, read.size);
                (pending, fed)
            }) {
                match fed {
                    Ok(()) => active.push(pending),
                    Err(source) => {
                        let path = String::from_utf8_lossy(&pending.session.entry.full_path())
                            .into_owned();
                        out[pending.at] = Some(Err(DriverError::Plan { path, source }));
                    }
                }
            }
            // A session cut short by a file that grew asks again uncut; the round after the
            // first reads no whole file in hand (those were taken).
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: u64, len: u64) -> ByteRange {
        ByteRange::new(start, len)
    }

    #[test]
    fn a_small_files_head_and_tail_are_one_span() {
        // 10 KiB: the head [0, 4K) and the window [0, 10K + 64K) cut at 10K.
        let ask = Ask::new(vec![r(0, 4096), r(0, 10_240 + 65_536)], Some(10_240));
        assert_eq!(ask.spans, [r(0, 10_240)]);
        let file: Vec<u8> = (0..10_240u32).map(|i| i as u8).collect();
        let answer = ask
            .answer(ReadResult {
                size: 10_240,
                chunks: vec![file.clone()],
            })
            .unwrap();
        assert_eq!(answer.chunks, [file[..4096].to_vec(), file.clone()]);
    }

    #[test]
    fn a_large_files_head_and_tail_are_two_spans() {
        let size = 1 << 20;
        let ask = Ask::new(
            vec![r(0, 4096), r(size - 16_384, 16_384 + 65_536)],
            Some(size),
        );
        assert_eq!(ask.spans, [r(0, 4096), r(size - 16_384, 16_384)]);
        let answer = ask
            .answer(ReadResult {
                size,
                chunks: vec![vec![1; 4096], vec![2; 16_384]],
            })
            .unwrap();
        assert_eq!(answer.chunks, [vec![1; 4096], vec![2; 16_384]]);
    }

    #[test]
    fn a_cut_read_of_a_file_that_grew_is_not_an_answer() {
        let ask = Ask::new(vec![r(0, 4096), r(4096, 16_384 + 65_536)], Some(20_480));
        // The file is 30,000 bytes now: the cut read misses what the plan asked past 20,480.
        let grown = ReadResult {
            size: 30_000,
            chunks: vec![vec![0; 20_480]],
        };
        assert!(ask.answer(grown).is_none());
        let same = ReadResult {
            size: 20_480,
            chunks: vec![vec![0; 20_480]],
        };
        let answer = ask.answer(same).unwrap();
        assert_eq!(answer.chunks[1].len(), 16_384);
    }
}
