//! Feeding a session to a sink: its first page, then (`--follow`) a poll from the last cursor
//! every interval until a stop signal, each record handed on once. The loop's policies live
//! here: a host error that a later attempt may not see (a dropped connection, a stalled reply)
//! is retried from the last cursor with backoff (1 s, doubling, at most 30 s), so nothing is
//! lost or given twice; any other error ends the loop. The caller brings the output
//! ([`FeedSink`]), the clock ([`Clock`]) and the stop signal (a future), so tests run the loop
//! on a script. [`HostFeed`] follows every session of a host at once (`HOST:*`), polling the
//! listing at the same interval and keeping a cursor for the most recently changed sessions.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::io;
use std::time::Duration;

use super::retry::recovery;
use super::{DriverError, Reader};
use clankie_engine::cursor::Cursor;
use clankie_engine::page::{Mode, Page, PageRequest};
use clankie_engine::session::SessionFile;
use clankie_host::memory::MemoryHost;
use clankie_host::{AnyHost, Host, HostError};
use clankie_model::limits::{
    FOLLOW_WAKE_RECORDS, MAX_DATABASE_SESSIONS_AT_START, MAX_FOLLOWED_SESSIONS, MAX_LIMIT,
};
use clankie_model::{Harness, Record, RootSpec};

/// Where a feed goes: the CLI renders to stdout and warns on stderr; tests record.
pub trait FeedSink {
    /// Records, oldest first, redacted as asked, none of them given before (when following).
    fn records(&mut self, records: &[Record]) -> io::Result<()>;
    /// [`Self::records`] of a batch the sink may keep (`--all`'s streamed batches): a sink
    /// that writes them later, on another thread, need not copy them.
    fn records_owned(&mut self, records: Vec<Record>) -> io::Result<()> {
        self.records(&records)
    }
    /// The end of a page whose records were given.
    fn page_end(&mut self, page: &Page) -> io::Result<()>;
    /// Makes what was given so far visible: after a streamed batch and after each page.
    fn flush(&mut self) -> io::Result<()>;
    /// One line for the user beside the output (an irregular record, a dropped connection).
    fn warning(&mut self, line: &str);
}

/// How the follow loop waits between polls.
#[allow(async_fn_in_trait)]
pub trait Clock {
    async fn sleep(&mut self, delay: Duration);
}

/// The real clock: tokio's timer.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioClock;

impl Clock for TokioClock {
    async fn sleep(&mut self, delay: Duration) {
        tokio::time::sleep(delay).await;
    }
}

/// A host whose connection can be dropped after an error, so that the next call opens a new
/// one.
#[allow(async_fn_in_trait)]
pub trait Reconnect: Host {
    async fn disconnect(&self);
}

impl Reconnect for AnyHost {
    async fn disconnect(&self) {
        AnyHost::disconnect(self).await;
    }
}

impl Reconnect for MemoryHost {
    async fn disconnect(&self) {
        MemoryHost::disconnect(self);
    }
}

/// How to follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowOptions {
    /// Between polls while the host answers.
    pub interval: Duration,
    pub strict: bool,
    pub redact: bool,
    /// Stop after this many polls (failed ones included); `None`: only the stop signal ends.
    pub polls: Option<u64>,
}

/// Reading or handing on failed.
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    #[error(transparent)]
    Read(#[from] DriverError),
    #[error("cannot write output: {0}")]
    Output(#[from] io::Error),
}

/// The first wait after a transient error, and the longest.
const FIRST_RETRY: Duration = Duration::from_secs(1);
const MAX_RETRY: Duration = Duration::from_secs(30);

/// One session fed to a sink, page by page.
#[derive(Debug)]
pub struct SessionFeed<'a, H: Host> {
    reader: &'a Reader<'a, H>,
    session: &'a SessionFile,
    /// When following, the ids given so far: a record whose id comes again in a later poll (a
    /// Gemini message re-appended with its result, a replayed Claude line) is not given again,
    /// as a single read keeps only its first copy.
    seen: Option<HashSet<String>>,
}

impl<'a, H: Host> SessionFeed<'a, H> {
    /// A feed of `session` read by `reader`; `follow` turns on the id de-duplication a follow
    /// needs (set it for the first page too, so the polls know what that page gave).
    pub fn new(
        reader: &'a Reader<'a, H>,
        session: &'a SessionFile,
        follow: bool,
    ) -> SessionFeed<'a, H> {
        SessionFeed {
            reader,
            session,
            seen: follow.then(HashSet::new),
        }
    }

    /// The reader this feed reads with.
    pub fn reader(&self) -> &'a Reader<'a, H> {
        self.reader
    }

    /// The session this feed reads.
    pub fn session(&self) -> &'a SessionFile {
        self.session
    }

    /// Reads one page into the sink, its page end included even when it has no records. With
    /// `--all` the records are given in batches as they complete.
    pub async fn page(
        &mut self,
        request: PageRequest,
        sink: &mut impl FeedSink,
    ) -> Result<Page, FeedError> {
        let mut write_error = None;
        let seen = &mut self.seen;
        let mut page = (self.reader)
            .read_page(self.session, request, |mut records| {
                keep_unseen(seen, &mut records);
                // The first write error is kept and returned once the read is done (the read
                // cannot be stopped from here); the rest of the batches are dropped.
                if write_error.is_none()
                    && !records.is_empty()
                    && let Err(e) = sink.records_owned(records).and_then(|()| sink.flush())
                {
                    write_error = Some(e);
                }
            })
            .await?;
        if let Some(e) = write_error {
            return Err(FeedError::Output(e));
        }
        self.deliver(&mut page, true, sink)?;
        Ok(page)
    }

    /// Polls from `cursor` every `options.interval` and gives the sink what completed, until
    /// `stop` resolves (or `options.polls` polls ran). Each poll reads pages until caught up.
    /// A host error that the retry policy retries ([`Recovery::retries`]) drops the connection,
    /// warns, and retries from the last cursor after 1 s, then 2 s, … at most 30 s; the first
    /// poll that succeeds after warns that the host is back. Returns the last cursor.
    ///
    /// [`Recovery::retries`]: super::retry::Recovery::retries
    pub async fn follow(
        &mut self,
        cursor: Cursor,
        options: &FollowOptions,
        sink: &mut impl FeedSink,
        clock: &mut impl Clock,
        stop: impl Future<Output = ()>,
    ) -> Result<Cursor, FeedError>
    where
        H: Reconnect,
    {
        let (reader, session) = (self.reader, self.session);
        let host = reader.host();
        let mut cursor = cursor;
        let mut delay = options.interval;
        let mut outage: Option<Duration> = None;
        let mut polls = 0u64;
        tokio::pin!(stop);
        loop {
            if options.polls.is_some_and(|most| polls >= most) {
                return Ok(cursor);
            }
            tokio::select! {
                () = &mut stop => return Ok(cursor),
                () = clock.sleep(delay) => {}
            }
            polls += 1;
            let request = PageRequest {
                mode: Mode::Since(cursor.clone()),
                limit: MAX_LIMIT,
                strict: options.strict,
                redact: options.redact,
            };
            let poll = reader.read_to_end(session, request, |page: &mut Page| {
                self.deliver(page, false, &mut *sink)?;
                // Page by page: a poll that fails after some pages goes on from the last one.
                cursor = page.cursor.clone();
                Ok::<(), FeedError>(())
            });
            let result = tokio::select! {
                () = &mut stop => None,
                result = poll => Some(result),
            };
            let Some(result) = result else {
                return Ok(cursor);
            };
            delay = next_delay(
                &mut outage,
                result.map(|_| ()),
                host,
                options.interval,
                "cursor",
                |line| sink.warning(line),
            )
            .await?;
        }
    }

    /// Hands on one read page: its warnings, its records not given before, and its end — always
    /// with `always_end`, else only when it has records or restarted the source.
    fn deliver(
        &mut self,
        page: &mut Page,
        always_end: bool,
        sink: &mut impl FeedSink,
    ) -> io::Result<()> {
        for warning in &page.warnings {
            sink.warning(warning);
        }
        if page.reset
            && let Some(seen) = &mut self.seen
        {
            // A replaced file is read from its start: its records are new, whatever their ids.
            seen.clear();
        }
        keep_unseen(&mut self.seen, &mut page.records);
        if !page.records.is_empty() {
            sink.records(&page.records)?;
        }
        if always_end || !page.records.is_empty() || page.reset {
            sink.page_end(page)?;
        }
        sink.flush()
    }
}

/// Drops the records whose ids were given before, and notes the others' ids (when following).
fn keep_unseen(seen: &mut Option<HashSet<String>>, records: &mut Vec<Record>) {
    if let Some(seen) = seen {
        records.retain(|r| seen.insert(r.id.clone()));
    }
}

/// What a host-wide follow gives its sink besides a [`FeedSink`]'s records and page ends:
/// which session they are of, said before each session's delivery.
pub trait HostFeedSink: FeedSink {
    /// The records and page end that follow are of `session`; `cwd` is its working directory
    /// where its head says.
    fn session(&mut self, session: &SessionFile, cwd: Option<&str>);
}

/// A session a host-wide follow keeps a cursor for.
#[derive(Debug)]
struct Followed {
    session: SessionFile,
    cwd: Option<String>,
    cursor: Cursor,
    seen: Option<HashSet<String>>,
    /// The poll it last changed in: the one quiet longest is let go at the bound.
    changed_at: u64,
}

/// A session as the last listing gave it: `(harness, id)`.
type SessionKey = (&'static str, String);

fn key_of(session: &SessionFile) -> SessionKey {
    (session.harness().name(), session.id.clone())
}

/// What tells that a session changed: its size and modification time. A database's sessions
/// share the database's size, so theirs is the row's update time alone: one session written
/// does not wake every other of the database.
fn change_stamp(session: &SessionFile) -> (u64, i64) {
    let size = if session.harness().is_sqlite() {
        0
    } else {
        session.entry.size
    };
    (size, session.entry.mtime)
}

/// Every session of a host followed at once (`HOST:*` with `--follow`), like `tail -F` over a
/// glob: each poll lists the host, and reads each session whose size or modification time
/// changed, from its cursor. A session created after the start is given from its start; one
/// that was quiet (or let go at [`MAX_FOLLOWED_SESSIONS`]) gives its last
/// [`FOLLOW_WAKE_RECORDS`] records first. At most [`MAX_FOLLOWED_SESSIONS`] cursors are kept:
/// the most recently changed sessions'; the start takes them for at most
/// [`MAX_DATABASE_SESSIONS_AT_START`] sessions in databases.
#[derive(Debug)]
pub struct HostFeed<'a, H: Host> {
    reader: &'a Reader<'a, H>,
    roots: Vec<RootSpec>,
    /// Size and modification time of every session the last listing gave.
    known: HashMap<SessionKey, (u64, i64)>,
    followed: HashMap<SessionKey, Followed>,
    most: usize,
    polls: u64,
    warned_bound: bool,
}

impl<'a, H: Host> HostFeed<'a, H> {
    pub fn new(reader: &'a Reader<'a, H>, roots: Vec<RootSpec>) -> HostFeed<'a, H> {
        HostFeed {
            reader,
            roots,
            known: HashMap::new(),
            followed: HashMap::new(),
            most: MAX_FOLLOWED_SESSIONS,
            polls: 0,
            warned_bound: false,
        }
    }

    /// Another bound than [`MAX_FOLLOWED_SESSIONS`] (tests of what meets it).
    pub fn with_bound(mut self, most: usize) -> HostFeed<'a, H> {
        self.most = most.max(1);
        self
    }

    /// How many sessions have a cursor now.
    pub fn followed(&self) -> usize {
        self.followed.len()
    }

    /// The harnesses of the sessions that have a cursor now, each with how many, in the
    /// registry's order.
    pub fn followed_harnesses(&self) -> Vec<(Harness, usize)> {
        let mut counts: Vec<(Harness, usize)> = Vec::new();
        for followed in self.followed.values() {
            let harness = followed.session.harness();
            match counts.iter_mut().find(|(h, _)| *h == harness) {
                Some((_, n)) => *n += 1,
                None => counts.push((harness, 1)),
            }
        }
        counts.sort_by_key(|(h, _)| *h);
        counts
    }

    /// Lists the host and takes the end of its most recently modified sessions (at most the
    /// bound, and of the sessions in databases at most [`MAX_DATABASE_SESSIONS_AT_START`]) as
    /// where to give records from; nothing is given.
    pub async fn start(&mut self, options: &FollowOptions) -> Result<(), FeedError> {
        let (_, mut sessions) = self
            .reader
            .list_sessions(&self.roots)
            .await
            .map_err(DriverError::from)?;
        sessions.sort_by_key(|s| std::cmp::Reverse(s.entry.mtime));
        let (mut taken, mut in_databases) = (0, 0);
        for session in sessions {
            let key = key_of(&session);
            self.known.insert(key.clone(), change_stamp(&session));
            if taken >= self.most {
                continue;
            }
            if session.harness().is_sqlite() {
                if in_databases >= MAX_DATABASE_SESSIONS_AT_START {
                    continue;
                }
                in_databases += 1;
            }
            taken += 1;
            let request = PageRequest {
                mode: Mode::Tail,
                limit: 1,
                strict: options.strict,
                redact: options.redact,
            };
            match self.reader.read_page(&session, request, |_| {}).await {
                Ok(page) => {
                    let cwd = self.cwd_of(&session).await;
                    self.followed.insert(
                        key,
                        Followed {
                            session,
                            cwd,
                            cursor: page.cursor,
                            seen: Some(page.records.iter().map(|r| r.id.clone()).collect()),
                            changed_at: 0,
                        },
                    );
                }
                Err(DriverError::Host(err)) if recovery(&err).retries() => {
                    return Err(DriverError::Host(err).into());
                }
                // A session that cannot be read now is tried again when it changes.
                Err(_) => {}
            }
        }
        Ok(())
    }

    async fn cwd_of(&self, session: &SessionFile) -> Option<String> {
        let heads = self
            .reader
            .session_heads(std::slice::from_ref(session))
            .await;
        heads.into_iter().next().and_then(|h| h.cwd)
    }

    /// One poll: lists the host and gives the sink what each changed session completed, oldest
    /// change first. A transient host error ends the poll (the caller retries; what was given
    /// is not given again); a session that cannot be read is one warning, and is tried again
    /// when it changes again.
    pub async fn poll(
        &mut self,
        options: &FollowOptions,
        sink: &mut impl HostFeedSink,
    ) -> Result<(), FeedError> {
        self.polls += 1;
        let (_, mut sessions) = self
            .reader
            .list_sessions(&self.roots)
            .await
            .map_err(DriverError::from)?;
        sessions.sort_by_key(|s| s.entry.mtime);
        let listed: HashSet<SessionKey> = sessions.iter().map(key_of).collect();
        self.known.retain(|k, _| listed.contains(k));
        self.followed.retain(|k, _| listed.contains(k));
        for session in sessions {
            let key = key_of(&session);
            let now = change_stamp(&session);
            let before = self.known.get(&key).copied();
            if before == Some(now) {
                continue;
            }
            match self
                .give(key.clone(), session, before.is_none(), options, sink)
                .await
            {
                Ok(()) => {}
                Err(FeedError::Read(DriverError::Host(err))) if recovery(&err).retries() => {
                    return Err(DriverError::Host(err).into());
                }
                Err(FeedError::Read(err)) => sink.warning(&err.to_string()),
                Err(err) => return Err(err),
            }
            // Only once given (or reported): a poll cut short reads the rest next time.
            self.known.insert(key, now);
        }
        Ok(())
    }

    /// Gives what `session` completed since its cursor; without one, from its start when it is
    /// `new`, else its last [`FOLLOW_WAKE_RECORDS`] records.
    async fn give(
        &mut self,
        key: SessionKey,
        session: SessionFile,
        new: bool,
        options: &FollowOptions,
        sink: &mut impl HostFeedSink,
    ) -> Result<(), FeedError> {
        let mut followed = match self.followed.remove(&key) {
            Some(mut followed) => {
                followed.session = session;
                followed
            }
            None => {
                let cwd = self.cwd_of(&session).await;
                let request = PageRequest {
                    mode: if new { Mode::Head } else { Mode::Tail },
                    limit: if new { MAX_LIMIT } else { FOLLOW_WAKE_RECORDS },
                    strict: options.strict,
                    redact: options.redact,
                };
                sink.session(&session, cwd.as_deref());
                let reader = self.reader;
                let mut feed = SessionFeed::new(reader, &session, true);
                let page = feed.page(request, sink).await?;
                let (cursor, seen) = (page.cursor, feed.seen.take());
                self.make_room(sink);
                Followed {
                    session,
                    cwd,
                    cursor,
                    seen,
                    changed_at: self.polls,
                }
            }
        };
        // From the cursor to the end: a new session's first page may not have been all of it.
        sink.session(&followed.session, followed.cwd.as_deref());
        let mut feed = SessionFeed {
            reader: self.reader,
            session: &followed.session,
            seen: followed.seen.take(),
        };
        let request = PageRequest {
            mode: Mode::Since(followed.cursor.clone()),
            limit: MAX_LIMIT,
            strict: options.strict,
            redact: options.redact,
        };
        let mut cursor = followed.cursor.clone();
        let read = self
            .reader
            .read_to_end(&followed.session, request, |page: &mut Page| {
                feed.deliver(page, false, &mut *sink)?;
                cursor = page.cursor.clone();
                Ok::<(), FeedError>(())
            })
            .await;
        followed.seen = feed.seen.take();
        followed.cursor = cursor;
        followed.changed_at = self.polls;
        self.followed.insert(key, followed);
        read.map(|_| ())
    }

    /// At the bound, lets go of the session quiet longest (and says so, once per run).
    fn make_room(&mut self, sink: &mut impl HostFeedSink) {
        if self.followed.len() < self.most {
            return;
        }
        let quietest = self
            .followed
            .iter()
            .min_by_key(|(_, f)| f.changed_at)
            .map(|(k, _)| k.clone());
        if let Some(key) = quietest {
            self.followed.remove(&key);
        }
        if !self.warned_bound {
            self.warned_bound = true;
            sink.warning(&format!(
                "{}: following the {} most recently changed sessions at once; one quiet longer is \
                 let go, and shows its last {FOLLOW_WAKE_RECORDS} records when it changes again",
                self.reader.host().name(),
                self.most
            ));
        }
    }

    /// Polls every `options.interval` until `stop` resolves (or `options.polls` polls ran),
    /// retrying a transient host error as [`SessionFeed::follow`] does.
    pub async fn follow(
        &mut self,
        options: &FollowOptions,
        sink: &mut impl HostFeedSink,
        clock: &mut impl Clock,
        stop: impl Future<Output = ()>,
    ) -> Result<(), FeedError>
    where
        H: Reconnect,
    {
        let host = self.reader.host();
        let mut delay = options.interval;
        let mut outage: Option<Duration> = None;
        let mut polls = 0u64;
        tokio::pin!(stop);
        loop {
            if options.polls.is_some_and(|most| polls >= most) {
                return Ok(());
            }
            tokio::select! {
                () = &mut stop => return Ok(()),
                () = clock.sleep(delay) => {}
            }
            polls += 1;
            let result = tokio::select! {
                () = &mut stop => return Ok(()),
                result = self.poll(options, &mut *sink) => result,
            };
            delay = next_delay(
                &mut outage,
                result,
                host,
                options.interval,
                "cursors",
                |line| sink.warning(line),
            )
            .await?;
        }
    }
}

/// The wait before the next poll, after one that ended with `result`: the interval after a
/// good poll (saying so once when it ends an outage); after a dropped or stalled connection, a
/// disconnect and a doubling wait (1 s to 30 s), said at each try. Any other error ends the
/// follow. `outage` is the wait of the last failed try, `None` while the host answers.
async fn next_delay<H: Reconnect>(
    outage: &mut Option<Duration>,
    result: Result<(), FeedError>,
    host: &H,
    interval: Duration,
    cursors: &str,
    mut warn: impl FnMut(&str),
) -> Result<Duration, FeedError> {
    match result {
        Ok(()) => {
            if outage.take().is_some() {
                warn(&format!(
                    "{}: reconnected; continuing from the last {cursors}",
                    host.name()
                ));
            }
            Ok(interval)
        }
        Err(FeedError::Read(DriverError::Host(err))) if recovery(&err).retries() => {
            host.disconnect().await;
            let wait = outage.map_or(FIRST_RETRY, |w| (w * 2).min(MAX_RETRY));
            warn(&retry_line(&err, wait));
            *outage = Some(wait);
            Ok(wait)
        }
        Err(err) => Err(err),
    }
}

/// The warning for a transient error: the error, and when the next attempt is.
fn retry_line(err: &HostError, wait: Duration) -> String {
    let retrying = format!("retrying in {}s", wait.as_secs());
    match err {
        // A stall is a dropped connection here: the loop does not give up.
        HostError::TimedOut { host, reason } => format!("{host}: {reason}; {retrying}"),
        err => format!("{err}; {retrying}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::roots_for;
    use crate::driver::testing::{
        Event, Recorder, SHORT, ScriptClock, all_ids, block_on, claude_path, dropped, lines,
        prompts, resolve,
    };

    const ID: &str = "55604662-cf2a-4331-851a-ec234028f8ca";
    const INTERVAL: Duration = Duration::from_secs(2);

    fn options(polls: u64) -> FollowOptions {
        FollowOptions {
            interval: INTERVAL,
            strict: false,
            redact: true,
            polls: Some(polls),
        }
    }

    /// The CLI's default first page.
    fn tail() -> PageRequest {
        PageRequest {
            mode: Mode::Tail,
            limit: 50,
            strict: false,
            redact: true,
        }
    }

    /// A host holding the first `n` lines of [`SHORT`] as session [`ID`].
    fn short_host(n: usize) -> (MemoryHost, Vec<u8>) {
        let host = MemoryHost::new("mem");
        let path = claude_path(&host, ID);
        host.put(&path, lines(SHORT)[..n].concat());
        (host, path)
    }

    /// Follows for `polls` polls after a first `--tail` page; returns what the sink got.
    async fn follow_for(
        host: &MemoryHost,
        clock: &mut ScriptClock<'_>,
        polls: u64,
    ) -> (Recorder, Result<Cursor, FeedError>) {
        let session = resolve(host, ID).await;
        let mut sink = Recorder::default();
        let reader = Reader::new(host);
        let mut feed = SessionFeed::new(&reader, &session, true);
        let first = feed.page(tail(), &mut sink).await.unwrap();
        let end = feed
            .follow(
                first.cursor,
                &options(polls),
                &mut sink,
                clock,
                std::future::pending(),
            )
            .await;
        (sink, end)
    }

    #[test]
    fn a_growing_file_gives_each_record_once_in_order() {
        block_on(async {
            let all = &lines(SHORT);
            let (host, path) = short_host(4);
            let (host, path) = (&host, &path);
            let mut clock = ScriptClock::new();
            // Each line lands in two writes, so half the polls find an incomplete last line.
            for line in &all[4..] {
                let (a, b) = line.split_at(line.len() / 2);
                clock = clock
                    .then(move || host.append(path, a))
                    .then(move || host.append(path, b));
            }
            let polls = 2 * (all.len() - 4) as u64;
            let (sink, end) = follow_for(host, &mut clock, polls).await;
            end.unwrap();
            let session = resolve(host, ID).await;
            let want = all_ids(host, &session).await;
            assert_eq!(want.len(), 10, "{want:?}");
            assert_eq!(sink.ids(), want);
            assert!(sink.warnings().is_empty(), "{:?}", sink.events);
            assert_eq!(clock.sleeps, vec![INTERVAL; polls as usize]);
            // A poll that completed nothing ends no page: every page end after the first one
            // follows records.
            for pair in sink.events.windows(2).skip(1) {
                if let [before, Event::PageEnd { reset, more }] = pair {
                    assert!(matches!(before, Event::Records(_)), "{:?}", sink.events);
                    assert!(!reset && !more);
                }
            }
        });
    }

    #[test]
    fn a_line_replayed_in_a_later_poll_is_not_given_again() {
        block_on(async {
            let all = &lines(SHORT);
            let (host, path) = short_host(8);
            let (host, path) = (&host, &path);
            let session = resolve(host, ID).await;
            let before = all_ids(host, &session).await;
            // Line 3 is the user's prompt (it makes a record), written again; line 9 a tool call.
            let replayed = [all[3], all[9]].concat();
            let mut clock = ScriptClock::new().then(move || host.append(path, replayed));
            let (sink, end) = follow_for(host, &mut clock, 1).await;
            end.unwrap();
            let after = all_ids(host, &session).await;
            assert!(after.len() > before.len());
            assert_eq!(sink.ids(), after);
            assert_eq!(
                sink.events[2],
                Event::Records(after[before.len()..].to_vec()),
                "{:?}",
                sink.events
            );
        });
    }

    #[test]
    fn a_rewritten_file_restarts_and_is_given_again() {
        block_on(async {
            let all = &lines(SHORT);
            let (host, path) = short_host(10);
            let (host, path) = (&host, &path);
            let session = resolve(host, ID).await;
            let before = all_ids(host, &session).await;
            // The same records and one more, but the bytes under the cursor differ (a hook
            // progress line, which makes no record, is gone).
            let mut rewritten = all[..10].to_vec();
            rewritten.remove(1);
            rewritten.push(all[10]);
            let mut clock = ScriptClock::new()
                .then(move || host.rewrite(path, rewritten.concat()))
                .then(move || host.append(path, all[11]));
            let (sink, end) = follow_for(host, &mut clock, 2).await;
            end.unwrap();
            let after = all_ids(host, &session).await;
            assert!(after.starts_with(&before) && after.len() > before.len());
            let ends = sink.page_ends();
            assert_eq!(ends[1], (true, false), "{:?}", sink.events);
            // After the restart every record is given again, whatever its id, after one notice.
            let given = sink.ids();
            let restart = &given[before.len()..];
            let notices = sink.records[before.len()..]
                .iter()
                .filter(|r| r.kind() == clankie_model::RecordKind::Notice)
                .count();
            assert_eq!(notices, 1, "{restart:?}");
            assert_eq!(sink.transcript_ids()[before.len()..], after[..]);
        });
    }

    #[test]
    fn a_truncated_file_restarts_from_what_is_left() {
        block_on(async {
            let all = &lines(SHORT);
            let (host, path) = short_host(12);
            let (host, path) = (&host, &path);
            let kept = all[..6].concat().len() as u64;
            let mut clock = ScriptClock::new()
                .then(move || host.truncate(path, kept))
                .then(|| {})
                .then(move || host.append(path, all[6..12].concat()));
            let (sink, end) = follow_for(host, &mut clock, 3).await;
            end.unwrap();
            let session = resolve(host, ID).await;
            let full = all_ids(host, &session).await;
            host.truncate(path, kept);
            let short = all_ids(host, &session).await;
            assert!(short.len() < full.len());
            let given = sink.transcript_ids();
            // The first page, then what the truncation left (after a notice), then the rest.
            assert_eq!(given, [&full[..], &full[..]].concat());
            assert_eq!(
                sink.page_ends(),
                [(false, false), (true, false), (false, false)]
            );
            let restart = sink
                .events
                .iter()
                .position(|e| matches!(e, Event::PageEnd { reset: true, .. }))
                .unwrap();
            let Event::Records(ids) = &sink.events[restart - 1] else {
                panic!("{:?}", sink.events)
            };
            assert_eq!(ids[1..], short[..], "a notice, then what is left");
        });
    }

    #[test]
    fn a_dropped_connection_is_retried_with_backoff_and_nothing_is_lost() {
        block_on(async {
            let all = &lines(SHORT);
            let (host, path) = short_host(4);
            let (host, path) = (&host, &path);
            let mut clock = ScriptClock::new()
                .then(move || {
                    host.append(path, all[4..9].concat());
                    host.fail_next(2, dropped(host));
                })
                .then(|| {})
                .then(|| {})
                .then(move || host.append(path, all[9..].concat()));
            let (sink, end) = follow_for(host, &mut clock, 4).await;
            end.unwrap();
            let session = resolve(host, ID).await;
            assert_eq!(sink.ids(), all_ids(host, &session).await);
            assert_eq!(
                clock.sleeps,
                [
                    INTERVAL,
                    Duration::from_secs(1),
                    Duration::from_secs(2),
                    INTERVAL
                ]
            );
            assert_eq!(
                sink.warnings(),
                [
                    "mem: cannot connect: connection reset by peer; retrying in 1s",
                    "mem: cannot connect: connection reset by peer; retrying in 2s",
                    "mem: reconnected; continuing from the last cursor",
                ]
            );
            assert_eq!(host.calls().disconnect, 2);
        });
    }

    #[test]
    fn a_stalled_host_is_retried_like_a_dropped_connection() {
        block_on(async {
            let all = &lines(SHORT);
            let (host, path) = short_host(4);
            let (host, path) = (&host, &path);
            let mut clock = ScriptClock::new()
                .then(move || {
                    host.append(path, all[4..].concat());
                    host.fail_next(1, || HostError::TimedOut {
                        host: "mem".into(),
                        reason: "no reply for 30 s after the command was sent".into(),
                    });
                })
                .then(|| {});
            let (sink, end) = follow_for(host, &mut clock, 2).await;
            end.unwrap();
            let session = resolve(host, ID).await;
            assert_eq!(sink.ids(), all_ids(host, &session).await);
            assert_eq!(clock.sleeps, [INTERVAL, Duration::from_secs(1)]);
            assert_eq!(
                sink.warnings(),
                [
                    // Not "giving up": the follow goes on.
                    "mem: no reply for 30 s after the command was sent; retrying in 1s",
                    "mem: reconnected; continuing from the last cursor",
                ]
            );
            assert_eq!(host.calls().disconnect, 1);
        });
    }

    #[test]
    fn backoff_doubles_up_to_thirty_seconds() {
        block_on(async {
            let (host, _) = short_host(4);
            let host = &host;
            let mut clock = ScriptClock::new().then(move || host.fail_next(7, dropped(host)));
            let (sink, end) = follow_for(host, &mut clock, 8).await;
            end.unwrap();
            let secs: Vec<u64> = clock.sleeps[1..].iter().map(Duration::as_secs).collect();
            assert_eq!(secs, [1, 2, 4, 8, 16, 30, 30]);
            assert_eq!(clock.sleeps[0], INTERVAL);
            assert_eq!(sink.warnings().len(), 8, "seven retries, one reconnection");
        });
    }

    /// A sink that drops the connection once, after the first page end it is given past the
    /// first page: the next read of the same poll fails.
    struct DropAfterPage<'a> {
        inner: Recorder,
        host: &'a MemoryHost,
        pages: usize,
    }

    impl FeedSink for DropAfterPage<'_> {
        fn records(&mut self, records: &[Record]) -> io::Result<()> {
            self.inner.records(records)
        }
        fn page_end(&mut self, page: &Page) -> io::Result<()> {
            self.pages += 1;
            if self.pages == 2 {
                self.host.fail_next(1, dropped(self.host));
            }
            self.inner.page_end(page)
        }
        fn flush(&mut self) -> io::Result<()> {
            self.inner.flush()
        }
        fn warning(&mut self, line: &str) {
            self.inner.warning(line);
        }
    }

    #[test]
    fn a_poll_that_fails_between_pages_goes_on_from_the_last_page() {
        block_on(async {
            let (host, path) = short_host(15);
            let (host, path) = (&host, &path);
            let session = resolve(host, ID).await;
            let mut sink = DropAfterPage {
                inner: Recorder::default(),
                host,
                pages: 0,
            };
            // No de-duplication: only the cursor kept page by page keeps the records of the
            // page before the failure from coming twice.
            let reader = Reader::new(host);
            let mut feed = SessionFeed::new(&reader, &session, false);
            let first = feed.page(tail(), &mut sink).await.unwrap();
            // More than two pages of records arrive at once.
            let mut clock = ScriptClock::new()
                .then(move || host.append(path, prompts(450)))
                .then(|| {});
            feed.follow(
                first.cursor,
                &options(2),
                &mut sink,
                &mut clock,
                std::future::pending(),
            )
            .await
            .unwrap();
            let sink = sink.inner;
            let want = all_ids(host, &session).await;
            assert_eq!(want.len(), 460);
            assert_eq!(sink.ids(), want);
            assert_eq!(sink.page_ends()[1], (false, true), "{:?}", sink.page_ends());
            assert_eq!(
                sink.warnings(),
                [
                    "mem: cannot connect: connection reset by peer; retrying in 1s",
                    "mem: reconnected; continuing from the last cursor",
                ]
            );
        });
    }

    #[test]
    fn an_error_that_retrying_cannot_fix_ends_the_follow() {
        block_on(async {
            let (host, _) = short_host(4);
            let host = &host;
            let mut clock = ScriptClock::new().then(move || {
                host.fail_next(1, || HostError::PathRefused {
                    host: "mem".into(),
                    path: "/home/user/.claude/projects/x".into(),
                    reason: "symlink below the harness root".into(),
                });
            });
            let (sink, end) = follow_for(host, &mut clock, 5).await;
            let err = end.unwrap_err();
            assert!(
                matches!(
                    err,
                    FeedError::Read(DriverError::Host(HostError::PathRefused { .. }))
                ),
                "{err}"
            );
            assert_eq!(clock.sleeps.len(), 1);
            assert!(sink.warnings().is_empty());
            assert_eq!(host.calls().disconnect, 0);
        });
    }

    #[test]
    fn the_stop_signal_ends_a_follow_at_its_last_cursor() {
        block_on(async {
            let all = &lines(SHORT);
            let (host, path) = short_host(4);
            let (host, path) = (&host, &path);
            let session = resolve(host, ID).await;
            let mut sink = Recorder::default();
            let reader = Reader::new(host);
            let mut feed = SessionFeed::new(&reader, &session, true);
            let first = feed.page(tail(), &mut sink).await.unwrap();
            let mut clock = ScriptClock::new()
                .then(move || host.append(path, all[4..].concat()))
                .then(|| {});
            let stop = clock.stop_signal();
            let unbounded = FollowOptions {
                polls: None,
                ..options(0)
            };
            let cursor = feed
                .follow(first.cursor, &unbounded, &mut sink, &mut clock, stop)
                .await
                .unwrap();
            assert_eq!(clock.sleeps.len(), 3, "two polls, then the stop");
            assert_eq!(sink.ids(), all_ids(host, &session).await);
            // The cursor returned is where the follow stopped: nothing after it.
            let mut rest = Recorder::default();
            let reader = Reader::new(host);
            let page = SessionFeed::new(&reader, &session, false)
                .page(
                    PageRequest {
                        mode: Mode::Since(cursor),
                        ..tail()
                    },
                    &mut rest,
                )
                .await
                .unwrap();
            assert!(page.records.is_empty() && !page.more && !page.reset);
        });
    }

    /// What a host-wide follow gave, session by session.
    #[derive(Default)]
    struct BySession {
        current: String,
        /// (session, record ids) per batch given.
        given: Vec<(String, Vec<String>)>,
        inner: Recorder,
    }

    impl BySession {
        fn ids_of(&self, session: &str) -> Vec<String> {
            self.given
                .iter()
                .filter(|(s, _)| s == session)
                .flat_map(|(_, ids)| ids.clone())
                .collect()
        }
    }

    impl HostFeedSink for BySession {
        fn session(&mut self, session: &SessionFile, cwd: Option<&str>) {
            assert_eq!(cwd, Some("/home/marco/projects/spotter"));
            self.current.clone_from(&session.id);
        }
    }

    impl FeedSink for BySession {
        fn records(&mut self, records: &[Record]) -> io::Result<()> {
            let ids = records.iter().map(|r| r.id.clone()).collect();
            self.given.push((self.current.clone(), ids));
            self.inner.records(records)
        }
        fn page_end(&mut self, page: &Page) -> io::Result<()> {
            self.inner.page_end(page)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
        fn warning(&mut self, line: &str) {
            self.inner.warning(line);
        }
    }

    const OTHER: &str = "55604662-cf2a-4331-851a-ec234028f8cb";
    const NEW: &str = "55604662-cf2a-4331-851a-ec234028f8cc";

    #[test]
    fn a_host_wide_follow_gives_what_changed_and_new_sessions_from_their_start() {
        block_on(async {
            let all = &lines(SHORT);
            let (host, path) = short_host(8);
            let other = claude_path(&host, OTHER);
            host.put(&other, all[..6].concat());
            let (host, path, other) = (&host, &path, &other);
            let fresh = claude_path(host, NEW);
            let (id_before, other_before) = (
                all_ids(host, &resolve(host, ID).await).await,
                all_ids(host, &resolve(host, OTHER).await).await,
            );
            let reader = Reader::new(host);
            let mut feed = HostFeed::new(&reader, roots_for(&[], None));
            feed.start(&options(0)).await.unwrap();
            assert_eq!(feed.followed(), 2);
            let mut clock = ScriptClock::new()
                .then(move || {
                    host.append(path, all[8..14].concat());
                    host.put(&fresh, all[..5].concat());
                })
                .then(|| {})
                .then(move || host.append(other, all[6..10].concat()));
            let mut sink = BySession::default();
            feed.follow(&options(3), &mut sink, &mut clock, std::future::pending())
                .await
                .unwrap();
            let id_after = all_ids(host, &resolve(host, ID).await).await;
            let other_after = all_ids(host, &resolve(host, OTHER).await).await;
            assert!(id_after.len() > id_before.len() && other_after.len() > other_before.len());
            // What came after the start, once each; the new session from its start.
            assert_eq!(sink.ids_of(ID), id_after[id_before.len()..]);
            assert_eq!(sink.ids_of(OTHER), other_after[other_before.len()..]);
            assert_eq!(
                sink.ids_of(NEW),
                all_ids(host, &resolve(host, NEW).await).await
            );
            // The changes in the order they came: the first poll's, then the third's.
            let order: Vec<&str> = sink.given.iter().map(|(s, _)| s.as_str()).collect();
            assert_eq!(order.last(), Some(&OTHER), "{order:?}");
            assert!(sink.inner.warnings().is_empty(), "{:?}", sink.inner.events);
        });
    }

    #[test]
    fn a_host_wide_follow_keeps_the_most_recently_changed_sessions_at_the_bound() {
        block_on(async {
            let all = &lines(SHORT);
            let (host, path) = short_host(12);
            let other = claude_path(&host, OTHER);
            // Newer than ID: the one followed from the start.
            host.put(&other, all[..12].concat());
            let (host, path, other) = (&host, &path, &other);
            let reader = Reader::new(host);
            let mut feed = HostFeed::new(&reader, roots_for(&[], None)).with_bound(1);
            feed.start(&options(0)).await.unwrap();
            assert_eq!(feed.followed(), 1);
            let mut clock = ScriptClock::new()
                .then(move || host.append(path, all[12..14].concat()))
                .then(move || host.append(other, all[12..14].concat()));
            let mut sink = BySession::default();
            feed.follow(&options(2), &mut sink, &mut clock, std::future::pending())
                .await
                .unwrap();
            assert_eq!(feed.followed(), 1);
            // Each session, not followed when it changed, shows its last records (at most
            // FOLLOW_WAKE_RECORDS), the new ones among them.
            for id in [ID, OTHER] {
                let now = all_ids(host, &resolve(host, id).await).await;
                let wake = now.len().min(FOLLOW_WAKE_RECORDS);
                assert_eq!(sink.ids_of(id), now[now.len() - wake..], "{id}");
            }
            assert_eq!(
                sink.inner.warnings(),
                [
                    "mem: following the 1 most recently changed sessions at once; one quiet \
                  longer is let go, and shows its last 10 records when it changes again"
                ]
            );
        });
    }
}
