//! The global search's reads: `grep`'s engine over every host of the view (the driver's
//! `search_host`, remote hosts through grep's cache), each host in a task of its own so hits
//! stream in as hosts answer and Esc stops them; and a hit's session read around the hit
//! (`driver::around`), the pages after it as the view scrolls down, then polled as an open
//! session is.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;

use super::reading::{open_session, poll_growth, say_resume};
use super::{Message, one_line};
use crate::cache::{Cache, CacheOptions};
use crate::cli::context::OpenHost;
use crate::driver::around::read_around;
use crate::driver::roots_for;
use crate::driver::search::{SessionFound, search_host};
use crate::error::Error;
use crate::ui::model::search::{Hit, OpenedAt, SearchAction, matching_line};
use crate::ui::model::{App, HostState, SessionRow};
use clankie_engine::filter::RecordFilter;
use clankie_engine::page::{Mode, PageRequest};
use clankie_engine::resume::Remote;
use clankie_engine::search::{Case, Found, Matcher, PatternOptions, Query};
use clankie_host::AnyHost;
use clankie_model::Record;
use clankie_model::limits::MAX_LIMIT;
use clankie_model::sanitize::sanitize_line;

/// Matches kept per session: the hits list names sessions, it is not a dump of them.
const HITS_PER_SESSION: usize = 100;

/// Characters of a hit's line kept (the row cuts it to the pane's width).
const LINE_CHARS: usize = 400;

/// What the search's tasks tell the loop.
pub(super) enum Event {
    Hits(u64, Vec<Hit>),
    Done(u64, String, Result<usize, String>),
    OpenedAt(SessionRow, Result<OpenedAt, String>),
    Later(SessionRow, Vec<Record>, bool),
}

/// Applies what a task said to the view.
pub(super) fn apply(app: &mut App, event: Event) {
    match event {
        Event::Hits(run, hits) => app.search_hits(run, hits),
        Event::Done(run, host, result) => app.search_done(run, &host, result),
        Event::OpenedAt(row, result) => app.opened_at(&row, result),
        Event::Later(row, records, more) => app.later(&row, records, more),
    }
}

/// The global search's tasks: one per host while a search runs; the open hit's reader is the
/// loop's (it is the open session's), and asks for the pages after the hit through `later`.
pub(super) struct Searcher {
    opened: HashMap<String, Arc<OpenHost>>,
    cache: Option<Arc<Cache>>,
    tasks: Vec<JoinHandle<()>>,
    later: Option<UnboundedSender<()>>,
    tx: UnboundedSender<Message>,
    interval: Duration,
}

impl Searcher {
    pub(super) fn new(
        opened: HashMap<String, Arc<OpenHost>>,
        tx: UnboundedSender<Message>,
        interval: Duration,
    ) -> Searcher {
        Searcher {
            opened,
            cache: None,
            tasks: Vec::new(),
            later: None,
            tx,
            interval,
        }
    }

    /// Carries out `action`; opening a hit replaces `reading`, the open session's task.
    pub(super) fn act(
        &mut self,
        action: SearchAction,
        app: &App,
        reading: &mut Option<JoinHandle<()>>,
        remote: impl Fn(&str) -> Option<Remote>,
    ) {
        match action {
            SearchAction::Start { pattern, run } => self.start(&pattern, run, app),
            SearchAction::Cancel => self.stop(),
            SearchAction::Open { row, record } => {
                if let Some(task) = reading.take() {
                    task.abort();
                }
                let Some(opened) = self.opened.get(&row.host).cloned() else {
                    let said = Err(format!("{} was not opened", row.host));
                    let _ = self.tx.send(Message::Search(Event::OpenedAt(row, said)));
                    return;
                };
                let (later, asked) = unbounded_channel();
                self.later = Some(later);
                let (tx, interval, remote) = (self.tx.clone(), self.interval, remote(&row.host));
                *reading = Some(tokio::spawn(async move {
                    read_at(&opened, row, record, remote, interval, asked, &tx).await;
                }));
            }
            SearchAction::Later(_) => {
                if let Some(later) = &self.later {
                    let _ = later.send(());
                }
            }
        }
    }

    /// Stops the searches under way.
    fn stop(&mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
    }

    fn start(&mut self, pattern: &str, run: u64, app: &App) {
        self.stop();
        let matcher = match Matcher::new(
            pattern,
            PatternOptions {
                fixed: false,
                case: Case::Smart,
            },
        ) {
            Ok(matcher) => matcher,
            Err(e) => {
                // The view checked the pattern; a failure here is every host's.
                for (host, _) in &app.list.hosts {
                    let said = Err(sanitize_line(&e.to_string()));
                    let done = Event::Done(run, host.clone(), said);
                    let _ = self.tx.send(Message::Search(done));
                }
                return;
            }
        };
        let query = Arc::new(Query {
            matcher,
            filter: RecordFilter::default(),
            before: 0,
            after: 0,
            max_count: Some(HITS_PER_SESSION),
            redact: true,
            count_only: false,
        });
        for (host, state) in &app.list.hosts {
            let Some(opened) = self.opened.get(host).cloned() else {
                let said = match state {
                    HostState::Failed(message) => message.clone(),
                    _ => format!("{host} was not opened"),
                };
                let _ = self
                    .tx
                    .send(Message::Search(Event::Done(run, host.clone(), Err(said))));
                continue;
            };
            let local = matches!(opened.host, AnyHost::Local(_));
            let cache = if local { None } else { self.cache() };
            let (tx, query, host) = (self.tx.clone(), query.clone(), host.clone());
            self.tasks.push(tokio::spawn(async move {
                let roots = roots_for(&opened.roots, None);
                let mut sessions = 0;
                let searched =
                    search_host(&opened.host, &roots, &query, cache.as_deref(), |found| {
                        sessions += 1;
                        let hits = hits_of(&host, found);
                        let _ = tx.send(Message::Search(Event::Hits(run, hits)));
                    })
                    .await;
                let result = searched
                    .map(|_| sessions)
                    .map_err(|e| one_line(&Error::from(e)));
                let _ = tx.send(Message::Search(Event::Done(run, host, result)));
            }));
        }
    }

    /// grep's cache of remote sessions, opened on first use; without it (it cannot be opened)
    /// remote sessions are fetched whole, as `grep --no-cache` fetches them.
    fn cache(&mut self) -> Option<Arc<Cache>> {
        if self.cache.is_none() {
            let options = CacheOptions::default();
            let cache = Cache::open(options.clone()).or_else(|_| {
                Cache::open(CacheOptions {
                    enabled: false,
                    ..options
                })
            });
            self.cache = cache.ok().map(Arc::new);
        }
        self.cache.clone()
    }
}

impl Drop for Searcher {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The hits of one session: each match's first matching line, with the record's local time.
fn hits_of(host: &str, found: SessionFound) -> Vec<Hit> {
    found
        .found
        .into_iter()
        .filter_map(|f| match f {
            Found::Match {
                record,
                text,
                spans,
            } => {
                let start = spans.first().map_or(0, |s| s[0]);
                let line: String = sanitize_line(matching_line(&text, start))
                    .chars()
                    .take(LINE_CHARS)
                    .collect();
                Some(Hit {
                    host: host.to_string(),
                    harness: found.harness.to_string(),
                    session: found.session.clone(),
                    record: record.id,
                    time: local_time(record.ts.as_deref()),
                    line,
                })
            }
            Found::Context { .. } | Found::Break => None,
        })
        .collect()
}

/// `12-01 10:17`, in the local time zone; empty for a record without a time.
fn local_time(ts: Option<&str>) -> String {
    ts.and_then(|ts| ts.parse::<jiff::Timestamp>().ok())
        .map(|t| {
            t.to_zoned_datetime(jiff::tz::TimeZone::system())
                .strftime("%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_default()
}

/// Reads `row`'s session around the record `record`, says its resume command, reads the page
/// after the last record read each time `later` asks, and once none is left polls it for new
/// records every `interval`, until the task is aborted.
async fn read_at(
    opened: &OpenHost,
    row: SessionRow,
    record: String,
    remote: Option<Remote>,
    interval: Duration,
    mut later: UnboundedReceiver<()>,
    tx: &UnboundedSender<Message>,
) {
    let Some((reader, session)) = open_session(opened, &row, tx, |row, said| {
        Message::Search(Event::OpenedAt(row, Err(said)))
    })
    .await
    else {
        return;
    };
    let around = match read_around(&reader, &session, &record, true).await {
        Ok(around) => around,
        Err(e) => {
            let said = Err(one_line(&e.into()));
            let _ = tx.send(Message::Search(Event::OpenedAt(row, said)));
            return;
        }
    };
    let (mut cursor, mut more) = (around.cursor, around.later);
    let opened_at = OpenedAt {
        records: around.records,
        at: around.at,
        earlier: around.earlier,
        later: around.later,
    };
    let _ = tx.send(Message::Search(Event::OpenedAt(row.clone(), Ok(opened_at))));
    say_resume(opened, &reader, &session, &row, remote, tx).await;
    while more {
        if later.recv().await.is_none() {
            return;
        }
        let request = PageRequest {
            mode: Mode::Since(cursor.clone()),
            limit: MAX_LIMIT,
            strict: false,
            redact: true,
        };
        // A page that cannot be read now is asked for again on the next scroll.
        let (records, next) = match reader.read_page_whole(&session, request).await {
            Ok(page) => {
                cursor = page.cursor;
                more = page.more;
                (page.records, more)
            }
            Err(_) => (Vec::new(), true),
        };
        let event = Event::Later(row.clone(), records, next);
        if tx.send(Message::Search(event)).is_err() {
            return;
        }
    }
    poll_growth(&reader, &session, cursor, &row, interval, tx).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hit_is_the_line_of_its_first_match_with_its_local_time() {
        let record = crate::ui::lines::test_record(
            clankie_model::TextKind::User,
            "first line\n  deploy the \u{1b}[31mservice\n last",
        );
        let text = "first line\n  deploy the \u{1b}[31mservice\n last".to_string();
        let start = text.find("deploy").unwrap();
        let found = SessionFound {
            harness: "claude",
            session: "s1".into(),
            found: vec![
                Found::Break,
                Found::Match {
                    record,
                    text,
                    spans: vec![[start, start + 6]],
                },
            ],
            matches: 1,
        };
        let hits = hits_of("devbox", found);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].host, "devbox");
        assert_eq!(hits[0].session, "s1");
        assert!(
            hits[0].line.starts_with("deploy the "),
            "{:?}",
            hits[0].line
        );
        assert!(
            !hits[0].line.chars().any(char::is_control),
            "{:?}",
            hits[0].line
        );
        assert_eq!(hits[0].time.len(), "12-01 10:00".len());
    }
}
