//! Test support for the driver, `follow` and `check`: Claude sessions made of real transcript
//! lines (the repository's fixtures) on a [`MemoryHost`], a sink that records what it is given,
//! and a clock that runs a script instead of waiting.

use std::collections::VecDeque;
use std::io;
use std::time::Duration;

use super::follow::{Clock, FeedSink};
use super::{Reader, roots_for};
use clankie_engine::page::{Mode, Page, PageRequest};
use clankie_engine::resolve::SessionQuery;
use clankie_engine::session::SessionFile;
use clankie_host::HostError;
use clankie_host::memory::MemoryHost;
use clankie_model::{Harness, Record, RecordKind};

/// A Claude Code session (Claude Code 2.1.38): a snapshot, hook progress, a user prompt, and
/// assistant turns with tool calls and results.
pub(crate) const SHORT: &str =
    include_str!("../../tests/fixtures/claude/projects/-fixtures/short.jsonl");
/// Another, heavy on tool calls.
pub(crate) const TOOL_HEAVY: &str =
    include_str!("../../tests/fixtures/claude/projects/-fixtures/tool_heavy.jsonl");

/// The lines of a transcript, each with its newline.
/// The harness users call `name`.
pub(crate) fn named(name: &str) -> Harness {
    clankie_engine::harness::by_name(name).unwrap()
}

pub(crate) fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// `n` user prompts, for a session longer than a page: the real prompt line of [`SHORT`] (its
/// fourth) again and again, each under a uuid of its own.
pub(crate) fn prompts(n: usize) -> String {
    let line = lines(SHORT)[3];
    let uuid = "7d48cbd2-6615-4dd8-87f6-38f12b8167d6";
    assert!(line.contains(&format!(r#""uuid":"{uuid}""#)), "{line}");
    (0..n)
        .map(|i| line.replace(uuid, &format!("7d48cbd2-6615-4dd8-87f6-{i:012}")))
        .collect()
}

/// Where a Claude session's file lives on the host, under the default root.
pub(crate) fn claude_path(host: &MemoryHost, id: &str) -> Vec<u8> {
    let mut path = host.default_root(named("claude"));
    path.extend_from_slice(format!("/projects/-home-marco-projects-spotter/{id}.jsonl").as_bytes());
    path
}

/// Resolves a session as `read` does (listing every default root).
pub(crate) async fn resolve(host: &MemoryHost, id: &str) -> SessionFile {
    let query = SessionQuery::parse(id).unwrap();
    Reader::new(host)
        .resolve_session(&roots_for(&[], None), &query)
        .await
        .unwrap()
}

/// The ids a single `--all` read of the session gives now: what a follower must have given,
/// in order, once each.
pub(crate) async fn all_ids(host: &MemoryHost, session: &SessionFile) -> Vec<String> {
    let request = PageRequest {
        mode: Mode::All,
        limit: 1,
        strict: false,
        redact: true,
    };
    let mut ids = Vec::new();
    let page = Reader::new(host)
        .read_page(session, request, |records| {
            ids.extend(records.into_iter().map(|r| r.id));
        })
        .await
        .unwrap();
    assert!(!page.more, "the test session is over one --all read");
    ids.extend(page.records.into_iter().map(|r| r.id));
    ids
}

/// The error of a dropped connection.
pub(crate) fn dropped(host: &MemoryHost) -> impl Fn() -> HostError + Send + 'static {
    let name = clankie_host::Host::name(host).to_string();
    move || HostError::Unreachable {
        host: name.clone(),
        reason: "connection reset by peer".into(),
    }
}

/// One thing a sink was given.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Event {
    Records(Vec<String>),
    PageEnd { reset: bool, more: bool },
    Warning(String),
}

/// A sink that keeps what it is given.
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    pub(crate) events: Vec<Event>,
    pub(crate) records: Vec<Record>,
}

impl Recorder {
    /// The ids given, in order.
    pub(crate) fn ids(&self) -> Vec<String> {
        self.records.iter().map(|r| r.id.clone()).collect()
    }

    /// The ids given, notices left out.
    pub(crate) fn transcript_ids(&self) -> Vec<String> {
        self.records
            .iter()
            .filter(|r| r.kind() != RecordKind::Notice)
            .map(|r| r.id.clone())
            .collect()
    }

    pub(crate) fn warnings(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Warning(w) => Some(w.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The page ends given, as `(reset, more)`.
    pub(crate) fn page_ends(&self) -> Vec<(bool, bool)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::PageEnd { reset, more } => Some((*reset, *more)),
                _ => None,
            })
            .collect()
    }
}

impl FeedSink for Recorder {
    fn records(&mut self, records: &[Record]) -> io::Result<()> {
        self.events.push(Event::Records(
            records.iter().map(|r| r.id.clone()).collect(),
        ));
        self.records.extend_from_slice(records);
        Ok(())
    }

    fn page_end(&mut self, page: &Page) -> io::Result<()> {
        self.events.push(Event::PageEnd {
            reset: page.reset,
            more: page.more,
        });
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn warning(&mut self, line: &str) {
        self.events.push(Event::Warning(line.to_string()));
    }
}

/// A clock that does not wait: each sleep is noted and runs the next step of a script (the
/// host changing between polls). Once the script is done, a sleep returns at once; or, when a
/// [`stop_signal`](ScriptClock::stop_signal) was taken, fires it and never ends, so a follow
/// without a poll bound ends by its stop signal, never by a timer.
pub(crate) struct ScriptClock<'a> {
    pub(crate) sleeps: Vec<Duration>,
    steps: VecDeque<Box<dyn FnOnce() + 'a>>,
    stopped: Option<tokio::sync::oneshot::Sender<()>>,
}

impl<'a> ScriptClock<'a> {
    pub(crate) fn new() -> ScriptClock<'a> {
        ScriptClock {
            sleeps: Vec::new(),
            steps: VecDeque::new(),
            stopped: None,
        }
    }

    /// Adds a step, run during the next sleep not yet scripted.
    pub(crate) fn then(mut self, step: impl FnOnce() + 'a) -> ScriptClock<'a> {
        self.steps.push_back(Box::new(step));
        self
    }

    /// A stop signal that fires when the script is done.
    pub(crate) fn stop_signal(&mut self) -> impl Future<Output = ()> + use<'a> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.stopped = Some(tx);
        async move {
            let _ = rx.await;
        }
    }
}

impl Clock for ScriptClock<'_> {
    async fn sleep(&mut self, delay: Duration) {
        self.sleeps.push(delay);
        match self.steps.pop_front() {
            Some(step) => step(),
            None => {
                if let Some(tx) = self.stopped.take() {
                    let _ = tx.send(());
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}

/// Runs a future on a current-thread runtime with a timer (as the CLI's runtime has).
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(future)
}
