//! `clankie-read ls [HOST…]`: the sessions on each host, in one table for people (a header row
//! on a terminal, whole ids when piped) or NDJSON. Each id's bold prefix is unique among every
//! session of its host's listing, not only the rows shown. On a terminal, a listing that finds
//! nothing says on stderr where it looked; piped or from cron it prints nothing, as `ls` of an
//! empty directory does.

use std::borrow::Borrow;
use std::io::{IsTerminal, Write};
use std::path::{Component, Path, PathBuf};

use clap::Args;

use super::context::{Context, GlobalArgs};
use crate::check::SessionError;
use crate::driver::heads::SessionHead;
use crate::driver::{Reader, roots_for};
use crate::error::{Error, Outcome, UsageError};
use crate::render::ls::unique_prefixes;
use crate::render::progress::Progress;
use crate::render::{LsHost, LsView};
use clankie_engine::filter::parse_time;
use clankie_engine::session::SessionFile;
use clankie_model::sanitize::sanitize_line;
use clankie_model::{Harness, Listing, display_path};

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Hosts to list [default: local].
    #[arg(value_name = "HOST")]
    pub host_names: Vec<String>,
    /// Only this harness.
    #[arg(long, value_name = "NAME")]
    pub harness: Option<String>,
    /// A source that cannot be read (a database, a name that is not UTF-8) makes the exit
    /// status 6; it is reported and the rest is listed either way.
    #[arg(long)]
    pub strict: bool,
    /// List the sessions a store holds (`sqlite:PATH`, `postgres://…`; docs/store.md)
    /// instead of asking the hosts [default hosts: every host of the store].
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    #[command(flatten)]
    pub view: ViewArgs,
}

/// Which sessions are shown, in which order, and how much of each.
#[derive(Debug, Args)]
pub struct ViewArgs {
    /// Order of the rows: newest first (mtime), by id (name), or largest first (size).
    #[arg(long, value_enum, default_value_t = SortKey::Mtime)]
    pub sort: SortKey,
    /// Only sessions modified within this age (30m, 2h, 3d) or since a time (today, yesterday,
    /// 2026-12-01, RFC 3339).
    #[arg(long, value_name = "AGE")]
    pub modified_within: Option<String>,
    /// Only sessions whose working directory is DIR or a directory under it (a relative DIR
    /// is taken from the current directory). Reads the head of every listed session.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// Only sessions whose working directory contains TEXT (any case): `--project parser`.
    /// Reads the head of every listed session.
    #[arg(long, value_name = "TEXT")]
    pub project: Option<String>,
    /// Only sessions whose title contains TEXT (any case). Reads the head of every listed
    /// session.
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// At most N sessions per host [text default: 50; --json: all].
    #[arg(long, short = 'n', value_name = "N", conflicts_with = "all", value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: Option<u32>,
    /// Every session (text output shows the newest 50 otherwise).
    #[arg(long)]
    pub all: bool,
    /// --json: add each session's `title` and `cwd` (read from the head of each listed
    /// transcript; the text output always shows them).
    #[arg(long)]
    pub long: bool,
}

/// How `ls` orders its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SortKey {
    /// Newest first.
    Mtime,
    /// By id.
    Name,
    /// Largest first.
    Size,
}

/// Sessions the text output shows unless `--limit` or `--all`.
const TEXT_ROWS: usize = 50;

/// The filters on what a session's head says: `--cwd`, `--project`, `--title`. All given must
/// hold; a session whose head says nothing of a filtered field is left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct HeadFilter {
    /// An absolute directory, without a trailing separator.
    cwd: Option<String>,
    /// Lower case.
    project: Option<String>,
    /// Lower case.
    title: Option<String>,
}

impl HeadFilter {
    /// The filters of `view`; a relative `--cwd` is made absolute from `current`.
    fn new(view: &ViewArgs, current: &Path) -> HeadFilter {
        HeadFilter {
            cwd: view.cwd.as_deref().map(|dir| absolute_dir(dir, current)),
            project: view.project.as_deref().map(str::to_lowercase),
            title: view.title.as_deref().map(str::to_lowercase),
        }
    }

    fn is_empty(&self) -> bool {
        *self == HeadFilter::default()
    }

    fn matches(&self, head: &SessionHead) -> bool {
        let contains = |field: &Option<String>, text: &Option<String>| match text {
            None => true,
            Some(text) => field
                .as_deref()
                .is_some_and(|field| field.to_lowercase().contains(text.as_str())),
        };
        let under = match &self.cwd {
            None => true,
            Some(dir) => head.cwd.as_deref().is_some_and(|cwd| {
                let cwd = trim_separators(cwd);
                // `dir` ends in a separator only when it is a root (`/`, `C:\\`).
                cwd == dir
                    || cwd.strip_prefix(dir.as_str()).is_some_and(|rest| {
                        rest.starts_with(['/', '\\']) || dir.ends_with(['/', '\\'])
                    })
            }),
        };
        under && contains(&head.cwd, &self.project) && contains(&head.title, &self.title)
    }
}

/// A directory without its trailing separators (`/` stays `/`).
fn trim_separators(dir: &str) -> &str {
    let trimmed = dir.trim_end_matches(['/', '\\']);
    if trimmed.is_empty() {
        &dir[..dir.len().min(1)]
    } else {
        trimmed
    }
}

/// `--cwd`'s directory as the heads spell theirs: absolute (a relative one is joined to
/// `current`, `.` and `..` resolved by name), without a trailing separator. A Windows path
/// (`C:\\…`, `\\\\server\\…`) is absolute as given.
fn absolute_dir(dir: &str, current: &Path) -> String {
    let windows = dir.starts_with('\\') || dir.as_bytes().get(1) == Some(&b':');
    if dir.starts_with('/') || windows {
        return trim_separators(dir).to_string();
    }
    let mut path = PathBuf::new();
    for component in current.join(dir).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                path.pop();
            }
            other => path.push(other),
        }
    }
    trim_separators(&path.to_string_lossy()).to_string()
}

/// A session listed, with what `ls` knows of it so far.
#[derive(Debug, Clone)]
struct Listed {
    session: SessionFile,
    /// How many of its id's characters tell it from every session of its host.
    unique: usize,
    /// Its title and directory, once read.
    head: Option<SessionHead>,
}

impl Borrow<SessionFile> for Listed {
    fn borrow(&self) -> &SessionFile {
        &self.session
    }
}

/// Keeps the sessions modified at or after `since` (Unix seconds), when given.
fn modified_since<T: Borrow<SessionFile>>(sessions: &mut Vec<T>, since: Option<i64>) {
    if let Some(since) = since {
        sessions.retain(|s| s.borrow().entry.mtime >= since);
    }
}

impl ViewArgs {
    /// The shown sessions of one host's (filtered) listing, in order, and how many more
    /// matched.
    fn select<T: Borrow<SessionFile>>(&self, mut sessions: Vec<T>, json: bool) -> (Vec<T>, usize) {
        match self.sort {
            SortKey::Mtime => sessions.sort_by(|a, b| {
                let (a, b): (&SessionFile, &SessionFile) = (a.borrow(), b.borrow());
                (b.entry.mtime, &a.id).cmp(&(a.entry.mtime, &b.id))
            }),
            SortKey::Name => sessions.sort_by(|a, b| {
                let (a, b): (&SessionFile, &SessionFile) = (a.borrow(), b.borrow());
                (&a.id, a.harness()).cmp(&(&b.id, b.harness()))
            }),
            SortKey::Size => sessions.sort_by(|a, b| {
                let (a, b): (&SessionFile, &SessionFile) = (a.borrow(), b.borrow());
                (b.entry.size, &a.id).cmp(&(a.entry.size, &b.id))
            }),
        }
        let shown = match (self.limit, self.all || json) {
            (Some(n), _) => n as usize,
            (None, true) => usize::MAX,
            (None, false) => TEXT_ROWS,
        };
        let more = sessions.len().saturating_sub(shown);
        sessions.truncate(shown);
        (sessions, more)
    }

    /// The filters given, by their flags, for a line that says none matched.
    fn filters_given(&self) -> Vec<&'static str> {
        [
            ("--modified-within", self.modified_within.is_some()),
            ("--cwd", self.cwd.is_some()),
            ("--project", self.project.is_some()),
            ("--title", self.title.is_some()),
        ]
        .into_iter()
        .filter_map(|(flag, given)| given.then_some(flag))
        .collect()
    }
}

/// What one host's listing gives `ls` to print.
struct HostListing {
    listing: Listing,
    /// Sessions the listing found, before any filter.
    listed: usize,
    /// The sessions shown, in order, each with its head when read.
    shown: Vec<Listed>,
    /// Sessions that matched but are not shown (`--limit`, the text output's 50).
    more: usize,
    /// Harnesses whose root was given (`--root`, the hosts file), not defaulted.
    explicit: Vec<Harness>,
}

pub(super) async fn run(global: &GlobalArgs, args: LsArgs) -> Result<Outcome, Error> {
    let harness = match &args.harness {
        Some(name) => Some(
            clankie_engine::harness::by_name(name)
                .ok_or_else(|| UsageError::UnknownHarness { name: name.clone() })?,
        ),
        None => None,
    };
    let now = jiff::ZonedDateTime::now();
    let since = args
        .view
        .modified_within
        .as_deref()
        .map(|age| parse_time("--modified-within", age, &now))
        .transpose()
        .map_err(UsageError::from)?
        .map(|t| t.as_second());
    let current = std::env::current_dir().unwrap_or_default();
    let filter = std::sync::Arc::new(HeadFilter::new(&args.view, &current));
    let ctx = Context::new(global)?;
    let renderer = ctx.renderer(false);
    // NDJSON lists every session, and reads their heads only when asked (`--long`) or to
    // filter on them.
    let json = renderer.is_ndjson();
    let want_heads = !json || args.view.long;
    let view = std::sync::Arc::new(args.view);
    let mut store = match &args.store {
        Some(url) => {
            Some(crate::store::Store::open(&crate::store::StoreUrl::parse(Some(url))?, None).await?)
        }
        None => None,
    };
    let names = if !args.host_names.is_empty() {
        args.host_names.clone()
    } else if let Some(store) = &mut store {
        store.hosts().await?
    } else {
        vec!["local".to_string()]
    };
    let show_host = names.len() > 1;
    // Every host lists at once; results print in the order given.
    let verbose = ctx.verbose();
    // Several hosts may take a while: a line on a terminal's stderr counts them, gone before
    // anything is printed.
    let progress = if names.len() > 1 {
        Progress::steps("listing hosts", names.len() as u64)
    } else {
        Progress::hidden()
    };
    let mut tasks = tokio::task::JoinSet::new();
    let mut stored = Vec::new();
    for (index, name) in names.iter().enumerate() {
        if let Some(store) = &mut store {
            let result = stored_listing(store, name, harness, since, &filter, &view, json).await;
            stored.push((index, name.clone(), result));
            continue;
        }
        let opened = ctx.open(name);
        let name = name.clone();
        let (view, filter) = (view.clone(), filter.clone());
        let progress = progress.clone();
        tasks.spawn(async move {
            let result = match opened {
                Ok(opened) => {
                    let roots = roots_for(&opened.roots, harness);
                    let explicit = opened
                        .roots
                        .iter()
                        .filter(|r| r.dir.is_some())
                        .map(|r| r.harness)
                        .collect();
                    let reader = Reader::new(&opened.host);
                    let result = match reader.list_sessions(&roots).await {
                        Ok((listing, sessions)) => {
                            // Over every session listed: a prefix shown is one that resolves.
                            let unique = unique_prefixes(&sessions, &sessions);
                            let listed = sessions.len();
                            let mut rows: Vec<Listed> = sessions
                                .into_iter()
                                .zip(unique)
                                .map(|(session, unique)| Listed {
                                    session,
                                    unique,
                                    head: None,
                                })
                                .collect();
                            modified_since(&mut rows, since);
                            if !filter.is_empty() {
                                let sessions: Vec<SessionFile> =
                                    rows.iter().map(|r| r.session.clone()).collect();
                                let heads = reader.session_heads(&sessions).await;
                                rows = rows
                                    .into_iter()
                                    .zip(heads)
                                    .filter(|(_, head)| filter.matches(head))
                                    .map(|(row, head)| Listed {
                                        head: Some(head),
                                        ..row
                                    })
                                    .collect();
                            }
                            let (mut shown, more) = view.select(rows, json);
                            if want_heads && filter.is_empty() {
                                let sessions: Vec<SessionFile> =
                                    shown.iter().map(|r| r.session.clone()).collect();
                                let heads = reader.session_heads(&sessions).await;
                                for (row, head) in shown.iter_mut().zip(heads) {
                                    row.head = Some(head);
                                }
                            }
                            Ok(HostListing {
                                listing,
                                listed,
                                shown,
                                more,
                                explicit,
                            })
                        }
                        Err(e) => Err(Error::from(e)),
                    };
                    if verbose {
                        progress.suspend(|| super::warn(&opened.host.take_notes()));
                    }
                    result
                }
                Err(e) => Err(e),
            };
            (index, name, result)
        });
    }
    let mut results = super::join_each(&mut tasks, &progress).await;
    results.append(&mut stored);
    results.sort_by_key(|(index, _, _)| *index);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());

    // The table (or the NDJSON lines) of every host that answered, at once: text aligns its
    // columns across the hosts.
    struct Drawn {
        sessions: Vec<SessionFile>,
        heads: Option<Vec<SessionHead>>,
        unique: Vec<usize>,
        errors: Vec<SessionError>,
    }
    let drawn: Vec<(usize, Drawn)> = results
        .iter()
        .enumerate()
        .filter_map(|(k, (_, name, result))| {
            let listed = result.as_ref().ok()?;
            let errors = listed
                .listing
                .unreadable
                .iter()
                .map(|left_out| SessionError {
                    host: name.clone(),
                    harness: left_out.harness.name().to_string(),
                    session: None,
                    path: display_path(&left_out.path),
                    message: left_out.message.clone(),
                })
                .collect();
            let heads = want_heads.then(|| {
                listed
                    .shown
                    .iter()
                    .map(|r| r.head.clone().unwrap_or_default())
                    .collect()
            });
            Some((
                k,
                Drawn {
                    sessions: listed.shown.iter().map(|r| r.session.clone()).collect(),
                    heads,
                    unique: listed.shown.iter().map(|r| r.unique).collect(),
                    errors,
                },
            ))
        })
        .collect();
    let hosts: Vec<LsHost<'_>> = drawn
        .iter()
        .map(|(k, d)| LsHost {
            name: &results[*k].1,
            sessions: &d.sessions,
            heads: d.heads.as_deref(),
            unique: &d.unique,
            errors: &d.errors,
        })
        .collect();
    renderer.sessions(
        &mut out,
        &hosts,
        &LsView {
            show_host,
            terminal: crate::render::tty::stdout_is_terminal(),
            now: now.timestamp().as_second(),
        },
    )?;
    out.flush()?;
    let answered = hosts.len();

    let mut failed = Vec::new();
    let mut unreadable = 0;
    let mut found_nothing = Vec::new();
    for (_, name, result) in results {
        match result {
            Ok(HostListing {
                listing,
                listed,
                shown,
                more,
                explicit,
            }) => {
                unreadable += listing.unreadable.len();
                if more > 0 {
                    let on = if show_host {
                        format!(" on {name}")
                    } else {
                        String::new()
                    };
                    eprintln!(
                        "clankie-read: {more} more session{}{on} not shown (--all shows every one, --limit N the first N)",
                        if more == 1 { "" } else { "s" }
                    );
                }
                for root in listing.roots.iter().filter(|r| !r.exists) {
                    // A root the user named that is not there is worth saying; a harness
                    // that is simply not installed is not (unless -v).
                    if verbose || explicit.contains(&root.harness) {
                        super::warn(&[format!(
                            "{name}: no {} root at {}{}",
                            root.harness,
                            String::from_utf8_lossy(&root.dir),
                            root.harness.list_spec().where_sessions_go()
                        )]);
                    }
                }
                for left_out in &listing.unreadable {
                    super::warn(&[on_host(&name, &left_out.message)]);
                }
                if listing.skipped_names > 0 {
                    super::warn(&[format!(
                        "{name}: {} file names the host cannot carry left out",
                        listing.skipped_names
                    )]);
                }
                if shown.is_empty() {
                    found_nothing.push(nothing_found(&name, &listing, listed, &view));
                }
            }
            Err(err) => {
                // One failed host is one line; the others still list.
                super::warn(&[err.to_string()]);
                failed.push(err);
            }
        }
    }
    // Nothing shown by any host that answered: a person reading text is told where `ls` looked
    // (a script or cron, with stderr not a terminal or NDJSON asked for, is told nothing, as
    // `ls` of an empty directory).
    if answered > 0
        && found_nothing.len() == answered
        && !renderer.is_ndjson()
        && std::io::stderr().is_terminal()
    {
        eprintln!("clankie-read: {}", sanitize_line(&found_nothing.join("; ")));
    }
    Ok(Outcome::Listed {
        failed,
        strict_failures: if args.strict { unreadable } else { 0 },
    })
}

/// One host's listing as a store holds it: its sessions as of its last sync, with the titles
/// and directories the sync read (no host is contacted).
async fn stored_listing(
    store: &mut crate::store::Store,
    name: &str,
    harness: Option<Harness>,
    since: Option<i64>,
    filter: &HeadFilter,
    view: &ViewArgs,
    json: bool,
) -> Result<HostListing, Error> {
    let mut sessions = store.sessions(name).await?;
    if let Some(harness) = harness {
        sessions.retain(|s| s.session.harness() == harness);
    }
    let files: Vec<SessionFile> = sessions.iter().map(|s| s.session.clone()).collect();
    let unique = unique_prefixes(&files, &files);
    let listed = sessions.len();
    let mut rows: Vec<Listed> = sessions
        .into_iter()
        .zip(unique)
        .map(|(stored, unique)| Listed {
            session: stored.session,
            unique,
            head: Some(stored.head),
        })
        .filter(|row| row.head.as_ref().is_none_or(|head| filter.matches(head)))
        .collect();
    modified_since(&mut rows, since);
    let (shown, more) = view.select(rows, json);
    Ok(HostListing {
        listing: Listing::default(),
        listed,
        shown,
        more,
        explicit: Vec::new(),
    })
}

/// Why a host showed nothing: no session where it looked (the roots, and `--root` to look
/// elsewhere), or none of those it listed passed the filters.
fn nothing_found(host: &str, listing: &Listing, listed: usize, view: &ViewArgs) -> String {
    if listed > 0 {
        return format!(
            "no session on {host} matches {} ({listed} listed)",
            view.filters_given().join(", ")
        );
    }
    // Each directory once: two harnesses may share one (`~/.grok`).
    let mut roots: Vec<String> = Vec::new();
    for root in &listing.roots {
        let dir = String::from_utf8_lossy(&root.dir).into_owned();
        if !roots.contains(&dir) {
            roots.push(dir);
        }
    }
    if roots.is_empty() {
        return format!("no sessions on {host} (no harness root to look in; --root HARNESS=DIR)");
    }
    format!(
        "no sessions on {host} (looked in {}); --root HARNESS=DIR looks in another harness home",
        roots.join(", ")
    )
}

/// `host: line`, unless the line already starts with the host's name (a host error names its
/// host itself): the host is said once.
fn on_host(host: &str, line: &str) -> String {
    match line.strip_prefix(host) {
        Some(rest) if rest.starts_with(": ") => line.to_string(),
        _ => format!("{host}: {line}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_is_said_once() {
        assert_eq!(on_host("devbox", "x.db: damaged"), "devbox: x.db: damaged");
        assert_eq!(
            on_host("devbox", "devbox: x.db: gone"),
            "devbox: x.db: gone"
        );
        assert_eq!(on_host("dev", "devbox: x"), "dev: devbox: x");
    }

    fn session(id: &str, size: u64, mtime: i64) -> SessionFile {
        SessionFile {
            id: id.into(),
            agent: None,
            entry: clankie_model::FileEntry {
                harness: clankie_engine::harness::by_name("claude").unwrap(),
                root: b"/h"[..].into(),
                rel: format!("projects/-p/{id}.jsonl").into_bytes(),
                size,
                mtime,
                inode: None,
                ctime: None,
            },
        }
    }

    #[test]
    fn selection_filters_sorts_and_limits() {
        let view = |sort, limit, all| ViewArgs {
            sort,
            modified_within: None,
            cwd: None,
            project: None,
            title: None,
            limit,
            all,
            long: false,
        };
        let sessions = || {
            vec![
                session("b", 30, 100),
                session("a", 10, 300),
                session("c", 20, 200),
            ]
        };
        let ids = |(shown, more): (Vec<SessionFile>, usize)| {
            (shown.into_iter().map(|s| s.id).collect::<Vec<_>>(), more)
        };
        let by_mtime = view(SortKey::Mtime, None, false);
        assert_eq!(
            ids(by_mtime.select(sessions(), false)),
            (vec!["a".into(), "c".into(), "b".into()], 0)
        );
        assert_eq!(
            ids({
                let mut recent = sessions();
                modified_since(&mut recent, Some(200));
                by_mtime.select(recent, false)
            }),
            (vec!["a".into(), "c".into()], 0)
        );
        let by_size = view(SortKey::Size, Some(2), false);
        assert_eq!(
            ids(by_size.select(sessions(), true)),
            (vec!["b".into(), "c".into()], 1)
        );
        let by_name = view(SortKey::Name, Some(1), false);
        assert_eq!(
            ids(by_name.select(sessions(), false)),
            (vec!["a".into()], 2)
        );
        // Text shows the newest 50 unless --all; --json every one unless --limit.
        let many: Vec<SessionFile> = (0..60)
            .map(|i| session(&format!("s{i:02}"), 1, i))
            .collect();
        assert_eq!(by_mtime.select(many.clone(), false).1, 10);
        assert_eq!(by_mtime.select(many.clone(), true).1, 0);
        assert_eq!(view(SortKey::Mtime, None, true).select(many, false).1, 0);
    }

    #[test]
    fn head_filters_match_the_directory_its_subdirectories_and_words_in_any_case() {
        let view = |cwd: Option<&str>, project: Option<&str>, title: Option<&str>| ViewArgs {
            sort: SortKey::Mtime,
            modified_within: None,
            cwd: cwd.map(String::from),
            project: project.map(String::from),
            title: title.map(String::from),
            limit: None,
            all: false,
            long: false,
        };
        // A relative --cwd is joined to this machine's current directory, in its own spelling.
        let (here, parser, b) = if cfg!(windows) {
            (
                r"C:\home\me\src",
                r"C:\home\me\src\parser",
                r"C:\home\me\src\b",
            )
        } else {
            ("/home/me/src", "/home/me/src/parser", "/home/me/src/b")
        };
        let here = Path::new(here);
        let head = |cwd: Option<&str>, title: Option<&str>| SessionHead {
            cwd: cwd.map(String::from),
            title: title.map(String::from),
            writer_version: None,
        };
        let filter = HeadFilter::new(&view(Some("parser/"), None, None), here);
        assert_eq!(filter.cwd.as_deref(), Some(parser));
        assert!(filter.matches(&head(Some(parser), None)));
        assert!(filter.matches(&head(Some(&format!("{parser}/crates/x/")), None)));
        assert!(!filter.matches(&head(Some(&format!("{parser}-old")), None)));
        assert!(!filter.matches(&head(None, None)));
        let dots = HeadFilter::new(&view(Some("./a/../b"), None, None), here);
        assert_eq!(dots.cwd.as_deref(), Some(b));
        let windows = HeadFilter::new(&view(Some("C:\\work\\"), None, None), here);
        assert!(windows.matches(&head(Some("C:\\work\\app"), None)));
        let root = HeadFilter::new(&view(Some("/"), None, None), here);
        assert!(root.matches(&head(Some("/srv"), None)));
        let words = HeadFilter::new(&view(None, Some("PARSER"), Some("fix")), here);
        assert!(words.matches(&head(Some("/w/Parser-x"), Some("Fix the parser"))));
        assert!(!words.matches(&head(Some("/w/Parser-x"), None)));
        assert!(!words.matches(&head(Some("/w/lexer"), Some("fix"))));
        assert!(HeadFilter::new(&view(None, None, None), here).is_empty());
    }
}
