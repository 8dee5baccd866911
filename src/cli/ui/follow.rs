//! The host-wide follow's reads: the driver's `HostFeed` (what `read 'HOST:*' --follow` runs)
//! over the chosen host in a task of its own, after the newest records of the host's most
//! recently changed sessions; each record it gives goes to the view with its session, each
//! session it reads to the list.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use super::{Message, one_line};
use crate::cli::context::OpenHost;
use crate::driver::follow::{
    FeedError, FeedSink, FollowOptions, HostFeed, HostFeedSink, TokioClock,
};
use crate::driver::{Reader, roots_for};
use crate::error::Error;
use crate::ui::model::follow::{FollowAction, Followed};
use crate::ui::model::{App, SessionRow};
use clankie_engine::page::{Mode, Page, PageRequest};
use clankie_engine::resolve::SessionQuery;
use clankie_engine::session::SessionFile;
use clankie_model::Record;
use clankie_model::sanitize::sanitize_line;

/// The newest records of each recent session shown before the marker.
const CONTEXT_RECORDS: usize = 4;

/// What the follow's task tells the loop.
pub(super) enum Event {
    Started(String, Result<usize, String>),
    Context(String, Vec<Followed>),
    Records(String, Vec<Followed>),
    Warning(String, String),
    Seen(SessionRow),
}

/// Applies what the task said to the view.
pub(super) fn apply(app: &mut App, event: Event) {
    match event {
        Event::Started(host, result) => app.follow_started(&host, result),
        Event::Context(host, records) => app.follow_context(&host, records),
        Event::Records(host, records) => app.follow_records(&host, records),
        Event::Warning(host, line) => app.follow_warning(&host, line),
        Event::Seen(row) => app.session_seen(row),
    }
}

/// The host-wide follow's task, while the merged view is open.
pub(super) struct Follower {
    opened: HashMap<String, Arc<OpenHost>>,
    task: Option<JoinHandle<()>>,
    tx: UnboundedSender<Message>,
    interval: Duration,
}

impl Follower {
    pub(super) fn new(
        opened: HashMap<String, Arc<OpenHost>>,
        tx: UnboundedSender<Message>,
        interval: Duration,
    ) -> Follower {
        Follower {
            opened,
            task: None,
            tx,
            interval,
        }
    }

    pub(super) fn act(&mut self, action: FollowAction) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        let FollowAction::Start { host, recent } = action else {
            return;
        };
        let Some(opened) = self.opened.get(&host).cloned() else {
            let said = Err(format!("{host} was not opened"));
            let _ = self.tx.send(Message::Follow(Event::Started(host, said)));
            return;
        };
        let (tx, interval) = (self.tx.clone(), self.interval);
        self.task = Some(tokio::spawn(async move {
            follow_host(&opened, host, recent, interval, &tx).await;
        }));
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Starts a host-wide follow of `host` (each session's cursor at its end), sends the newest
/// records of its `recent` sessions, then polls until the task is aborted.
async fn follow_host(
    opened: &OpenHost,
    host: String,
    recent: Vec<SessionRow>,
    interval: Duration,
    tx: &UnboundedSender<Message>,
) {
    let reader = Reader::new(&opened.host);
    let roots = roots_for(&opened.roots, None);
    let mut feed = HostFeed::new(&reader, roots.clone());
    let options = FollowOptions {
        interval,
        strict: false,
        redact: true,
        polls: None,
    };
    let started = feed
        .start(&options)
        .await
        .map(|()| feed.followed())
        .map_err(feed_error);
    let failed = started.is_err();
    let _ = tx.send(Message::Follow(Event::Started(host.clone(), started)));
    if failed {
        return;
    }
    // Read after the start: a record both read here and given by the first poll is shown once
    // (the view drops a record of the context given again).
    let mut context = Vec::new();
    for row in recent.iter().rev() {
        let Ok(query) = SessionQuery::parse(&format!("{}/{}", row.harness, row.id)) else {
            continue;
        };
        let Ok(session) = reader.resolve_session(&roots, &query).await else {
            continue;
        };
        let request = PageRequest {
            mode: Mode::Tail,
            limit: CONTEXT_RECORDS,
            strict: false,
            redact: true,
        };
        if let Ok(page) = reader.read_page_whole(&session, request).await {
            context.extend(page.records.into_iter().map(|record| Followed {
                session: row.id.clone(),
                cwd: row.cwd.clone(),
                record,
            }));
        }
    }
    // Oldest first across the sessions (a record without a time keeps its place).
    context.sort_by(|a, b| match (&a.record.ts, &b.record.ts) {
        (Some(a), Some(b)) => a.cmp(b),
        _ => std::cmp::Ordering::Equal,
    });
    let _ = tx.send(Message::Follow(Event::Context(host.clone(), context)));
    let mut sink = ViewSink {
        host: host.clone(),
        tx,
        session: String::new(),
        cwd: None,
    };
    let followed = feed
        .follow(&options, &mut sink, &mut TokioClock, std::future::pending())
        .await;
    if let Err(e) = followed {
        let _ = tx.send(Message::Follow(Event::Warning(host, feed_error(e))));
    }
}

/// A feed's error as the one line the view shows.
fn feed_error(error: FeedError) -> String {
    one_line(&Error::from(error))
}

/// Hands the feed's records to the view, each with its session.
struct ViewSink<'a> {
    host: String,
    tx: &'a UnboundedSender<Message>,
    session: String,
    cwd: Option<String>,
}

impl HostFeedSink for ViewSink<'_> {
    fn session(&mut self, session: &SessionFile, cwd: Option<&str>) {
        self.session.clone_from(&session.id);
        self.cwd = cwd.map(String::from);
        let row = SessionRow {
            host: self.host.clone(),
            harness: session.harness().name().to_string(),
            id: session.id.clone(),
            mtime: session.entry.mtime,
            size: session.entry.size,
            title: None,
            cwd: self.cwd.clone(),
        };
        let _ = self.tx.send(Message::Follow(Event::Seen(row)));
    }
}

impl FeedSink for ViewSink<'_> {
    fn records(&mut self, records: &[Record]) -> std::io::Result<()> {
        let records = records
            .iter()
            .map(|record| Followed {
                session: self.session.clone(),
                cwd: self.cwd.clone(),
                record: record.clone(),
            })
            .collect();
        let event = Event::Records(self.host.clone(), records);
        self.tx
            .send(Message::Follow(event))
            .map_err(|_| std::io::Error::other("the view is gone"))
    }

    fn page_end(&mut self, _page: &Page) -> std::io::Result<()> {
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }

    fn warning(&mut self, line: &str) {
        let event = Event::Warning(self.host.clone(), sanitize_line(line));
        let _ = self.tx.send(Message::Follow(event));
    }
}
