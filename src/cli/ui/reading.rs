//! The steps of reading an open session that the global search's hits share with the view's
//! session reads: resolving the session of a row, saying its resume command, and polling it
//! for the records after a cursor, as `--follow` polls. The view's reader and its two reads
//! (the newest page, the page before a cursor) are public for `examples/ui_bench.rs`, which
//! measures the view on them.

use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use super::{Message, one_line};
use crate::cli::context::OpenHost;
use crate::driver::Reader;
use crate::driver::request::{Pages, ReadRequest};
use crate::ui::model::SessionRow;
use clankie_engine::cursor::Cursor;
use clankie_engine::filter::RecordFilter;
use clankie_engine::page::{Mode, PageRequest};
use clankie_engine::resolve::SessionQuery;
use clankie_engine::resume::Remote;
use clankie_engine::session::SessionFile;
use clankie_host::AnyHost;
use clankie_model::limits::{FIRST_TAIL_WINDOW_BYTES, MAX_LIMIT};
use clankie_model::sanitize::sanitize_line;

/// Resolves `row`'s session on its host; when it cannot be, sends what `failed` makes of the
/// reason and gives `None`.
pub(super) async fn open_session<'a>(
    opened: &'a OpenHost,
    row: &SessionRow,
    tx: &UnboundedSender<Message>,
    failed: impl FnOnce(SessionRow, String) -> Message,
) -> Option<(Reader<'a, AnyHost>, SessionFile)> {
    let request = match tail_request(row) {
        Ok(request) => request,
        Err(e) => {
            let _ = tx.send(failed(row.clone(), e));
            return None;
        }
    };
    let reader = view_reader(&opened.host);
    match request.resolve(&reader, &opened.roots).await {
        Ok(session) => Some((reader, session)),
        Err(e) => {
            let _ = tx.send(failed(row.clone(), one_line(&e.into())));
            None
        }
    }
}

/// The view's first read of a session: its newest page, redacted (the error a line to show).
pub fn tail_request(row: &SessionRow) -> Result<ReadRequest, String> {
    let query = SessionQuery::parse(&format!("{}/{}", row.harness, row.id))
        .map_err(|e| sanitize_line(&e.to_string()))?;
    Ok(ReadRequest::new(
        &row.host,
        query,
        Pages::Tail,
        MAX_LIMIT,
        RecordFilter::default(),
    )
    .redacted(true))
}

/// The view's reader of a host: a first tail window sized for one screen of pages, and the
/// row before a database page read too, where reading back continues.
pub fn view_reader(host: &AnyHost) -> Reader<'_, AnyHost> {
    Reader::new(host)
        .with_tail_window(FIRST_TAIL_WINDOW_BYTES)
        .with_backward_reads()
}

/// The view's backward read: the page before `start` (the loaded records' start cursor),
/// redacted.
pub fn back_request(start: Cursor) -> PageRequest {
    PageRequest {
        mode: Mode::Before(start),
        limit: MAX_LIMIT,
        strict: false,
        redact: true,
    }
}

/// Sends the session's resume command, when its harness has one.
pub(super) async fn say_resume(
    opened: &OpenHost,
    reader: &Reader<'_, AnyHost>,
    session: &SessionFile,
    row: &SessionRow,
    remote: Option<Remote>,
    tx: &UnboundedSender<Message>,
) {
    if !clankie_engine::harness::resumable(session.harness()) {
        return;
    }
    let explicit_root = opened
        .roots
        .iter()
        .any(|r| r.harness == session.harness() && r.dir.is_some());
    if let Ok(command) = reader.resume_command(session, explicit_root, remote).await {
        let _ = tx.send(Message::Resume(row.clone(), command));
    }
}

/// Polls the session every `interval` for the records after `cursor`, sending each batch,
/// until the task is aborted or the loop is gone. A poll that fails is tried again at the
/// next one, as `--follow` does.
pub(super) async fn poll_growth(
    reader: &Reader<'_, AnyHost>,
    session: &SessionFile,
    mut cursor: Cursor,
    row: &SessionRow,
    interval: Duration,
    tx: &UnboundedSender<Message>,
) {
    loop {
        tokio::time::sleep(interval).await;
        let request = PageRequest {
            mode: Mode::Since(cursor.clone()),
            limit: MAX_LIMIT,
            strict: false,
            redact: true,
        };
        if let Ok(page) = reader.read_page_whole(session, request).await {
            cursor = page.cursor;
            if !page.records.is_empty()
                && tx.send(Message::Grew(row.clone(), page.records)).is_err()
            {
                return;
            }
        }
    }
}
