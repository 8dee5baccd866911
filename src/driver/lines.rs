//! The lines path: a transcript of lines (or of zstd-compressed lines, decompressed here) read
//! through the engine's planner, range by range; `--all` reads the next chunk while this one
//! is parsed, and parses each chunk's lines ahead of the plan on every core.

use clankie_engine::SourceCtx;
use clankie_engine::harness::Source;
use clankie_engine::page::{Mode, Page, PageRequest};
use clankie_engine::plan::ReadPlan;
use clankie_engine::session::SessionFile;
use clankie_host::{FileRef, Host, HostError};
use clankie_model::{ByteRange, Record};

use super::{DriverError, Reader, fetch_whole, file_ref, hint_the_path, parse_ahead};

impl<'h, H: Host> Reader<'h, H> {
    /// The lines path of [`Reader::read_page`]: the planner's reads, each served from what
    /// was read ahead, from the decompressed stream, or by the host, until the page is
    /// complete; `--all` emits each chunk's records as they complete.
    pub(super) async fn read_lines(
        &self,
        session: &SessionFile,
        ctx: SourceCtx,
        source: Source,
        request: PageRequest,
        mut emit: impl FnMut(Vec<Record>),
    ) -> Result<Page, DriverError> {
        let stream = matches!(request.mode, Mode::All);
        let file = file_ref(&session.entry);
        let path = String::from_utf8_lossy(&session.entry.full_path()).into_owned();
        // A compressed transcript (Codex after 7 days) is fetched whole and decompressed here; the
        // plan then reads the decompressed stream, so offsets and cursors refer to it.
        let decompressed = if source == Source::ZstdLines {
            Some(fetch_decompressed(self.host, &file, session.entry.size, &path).await?)
        } else {
            None
        };
        let size_hint = decompressed
            .as_ref()
            .map_or(session.entry.size, |d| d.len() as u64);
        // The batches `--all` streams go out unredacted when the caller redacts them (the CLI,
        // on the thread that writes them); the page's own records are redacted at its end.
        let redact_aside = stream && request.redact && self.streams_unredacted();
        let request = PageRequest {
            redact: request.redact && !redact_aside,
            ..request
        };
        // `--all` parses each chunk's lines ahead of the plan on every core (the plan is
        // sequential: repeated ids, the page's bounds), with the context the plan gets.
        let mut parse_ahead =
            stream.then(|| parse_ahead::ParseAhead::new(ctx.clone(), !self.texts_as_json_tokens));
        let mut plan = ReadPlan::new(ctx, request, size_hint).with_filter(&self.filter);
        if let Some(bytes) = self.tail_window {
            plan = plan.with_tail_window(bytes);
        }
        let mut first_read = true;
        // `--all` reads the next chunk (on the runtime's blocking pool, for a local file)
        // while this one is parsed.
        let mut read_ahead: Option<ReadAhead<_>> = None;
        while let Some(ranges) = plan.next_read() {
            let ahead = match first_read && decompressed.is_none() {
                true => self.take_prefetched(&file, &ranges),
                false => None,
            };
            first_read = false;
            let result = match (&decompressed, ahead, read_ahead.take()) {
                (Some(data), ..) => serve_from_memory(data, &ranges),
                (None, Some(result), _) => result,
                (None, None, Some(guessed)) if guessed.ranges == ranges => guessed.result().await?,
                (None, None, guessed) => {
                    // A read started ahead that the plan no longer wants runs to its end
                    // rather than being cancelled halfway.
                    if let Some(guessed) = guessed {
                        let _ = guessed.result().await;
                    }
                    self.host.read(&file, &ranges).await?
                }
            };
            if stream
                && decompressed.is_none()
                && let Some(next) = plan.read_after_next(result.size)
            {
                let (host, file, ranges) = (self.host, &file, next.clone());
                let read = async move { host.read(file, &ranges).await };
                read_ahead = Some(ReadAhead::start(read, next).await);
            }
            let mut result = result;
            if let Some(parse_ahead) = &mut parse_ahead
                && plan.reads_forward()
                && let (Some(range), Some(chunk)) = (ranges.first(), result.chunks.first_mut())
            {
                let (back, parsed) = parse_ahead.parse(range.start, std::mem::take(chunk));
                *chunk = back;
                plan.parsed_ahead(parsed);
            }
            plan.feed(result.chunks, result.size)
                .map_err(|source| DriverError::Plan {
                    path: path.clone(),
                    source,
                })?;
            if stream {
                let records = plan.take_records();
                if !records.is_empty() {
                    emit(records);
                }
            }
        }
        if let Some(guessed) = read_ahead.take() {
            let _ = guessed.result().await;
        }
        *self
            .last_tail_bytes
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = plan.tail_page_bytes();
        let mut page = plan.finish();
        if redact_aside {
            clankie_engine::redact::redact_records(&mut page.records);
        }
        hint_the_path(&mut page, session);
        Ok(page)
    }
}

/// A read of the chunk after the one being parsed, started before the parse (`--all`).
struct ReadAhead<F> {
    ranges: Vec<ByteRange>,
    read: ReadState<F>,
}

enum ReadState<F> {
    Running(std::pin::Pin<Box<F>>),
    Done(Result<clankie_model::ReadResult, HostError>),
}

impl<F: std::future::Future<Output = Result<clankie_model::ReadResult, HostError>>> ReadAhead<F> {
    /// Polls the read once, which starts it (a local read of a chunk goes to the blocking
    /// pool; a small one may even be done).
    async fn start(read: F, ranges: Vec<ByteRange>) -> ReadAhead<F> {
        let mut read = Box::pin(read);
        let first = std::future::poll_fn(|cx| std::task::Poll::Ready(read.as_mut().poll(cx))).await;
        let read = match first {
            std::task::Poll::Ready(result) => ReadState::Done(result),
            std::task::Poll::Pending => ReadState::Running(read),
        };
        ReadAhead { ranges, read }
    }

    async fn result(self) -> Result<clankie_model::ReadResult, HostError> {
        match self.read {
            ReadState::Running(read) => read.await,
            ReadState::Done(result) => result,
        }
    }
}

/// Reads a whole compressed file (at most the 64 MiB source bound) and decompresses it (the
/// same bound on the output).
async fn fetch_decompressed<H: Host>(
    host: &H,
    file: &FileRef,
    size_hint: u64,
    path: &str,
) -> Result<Vec<u8>, DriverError> {
    use clankie_host::unzstd::{Frames, UnzstdError, decompress};
    use clankie_model::limits::MAX_SOURCE_BYTES;
    let compressed = fetch_whole(host, file, size_hint, path).await?;
    // The C decoder's own default limit on a frame's window (128 MiB).
    const WINDOW_LOG: u32 = 27;
    let max = usize::try_from(MAX_SOURCE_BYTES).unwrap_or(usize::MAX);
    decompress(&compressed, max, WINDOW_LOG, Frames::Many).map_err(|e| {
        let reason = match e {
            UnzstdError::Malformed(reason) => format!("corrupt zstd stream: {reason}"),
            UnzstdError::TooLarge => format!(
                "the decompressed transcript is over the {} MiB bound of one read",
                MAX_SOURCE_BYTES >> 20
            ),
        };
        DriverError::Source {
            path: path.to_string(),
            reason,
        }
    })
}

/// Answers a read request from bytes in memory, as a host would.
fn serve_from_memory(data: &[u8], ranges: &[ByteRange]) -> clankie_model::ReadResult {
    let size = data.len() as u64;
    let chunks = ranges
        .iter()
        .map(|r| data[r.start.min(size) as usize..r.end().min(size) as usize].to_vec())
        .collect();
    clankie_model::ReadResult { size, chunks }
}
