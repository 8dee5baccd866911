//! `clankie-read ls [HOST…]`: the sessions on each host.

use std::io::Write;

use clap::Args;

use super::context::{Context, GlobalArgs};
use crate::check::SessionError;
use crate::driver::heads::SessionHead;
use crate::driver::{Reader, roots_for};
use crate::error::{Error, Outcome, UsageError};
use crate::render::progress::Progress;
use clankie_engine::filter::parse_time;
use clankie_engine::session::SessionFile;
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

impl ViewArgs {
    /// The shown sessions of one host's listing, in order, and how many more matched.
    fn select(
        &self,
        mut sessions: Vec<SessionFile>,
        since: Option<i64>,
        json: bool,
    ) -> (Vec<SessionFile>, usize) {
        if let Some(since) = since {
            sessions.retain(|s| s.entry.mtime >= since);
        }
        match self.sort {
            SortKey::Mtime => {
                sessions.sort_by(|a, b| (b.entry.mtime, &a.id).cmp(&(a.entry.mtime, &b.id)))
            }
            SortKey::Name => {
                sessions.sort_by(|a, b| (&a.id, a.harness()).cmp(&(&b.id, b.harness())))
            }
            SortKey::Size => {
                sessions.sort_by(|a, b| (b.entry.size, &a.id).cmp(&(a.entry.size, &b.id)))
            }
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
}

/// What one host's listing gives `ls` to print.
struct HostListing {
    listing: Listing,
    sessions: Vec<SessionFile>,
    /// The title and directory of each shown session, when asked for.
    heads: Option<Vec<SessionHead>>,
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
    let ctx = Context::new(global)?;
    let renderer = ctx.renderer(false);
    // NDJSON lists every session, and reads their heads only when asked (`--long`).
    let json = renderer.is_ndjson();
    let want_heads = !json || args.view.long;
    let view = std::sync::Arc::new(args.view);
    let names = if args.host_names.is_empty() {
        vec!["local".to_string()]
    } else {
        args.host_names.clone()
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
    for (index, name) in names.iter().enumerate() {
        let opened = ctx.open(name);
        let name = name.clone();
        let view = view.clone();
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
                            let (sessions, more) = view.select(sessions, since, json);
                            let heads = if want_heads {
                                Some(reader.session_heads(&sessions).await)
                            } else {
                                None
                            };
                            Ok(HostListing {
                                listing,
                                sessions,
                                heads,
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
    results.sort_by_key(|(index, _, _)| *index);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut failed = Vec::new();
    let mut unreadable = 0;
    for (_, name, result) in results {
        match result {
            Ok(HostListing {
                listing,
                sessions,
                heads,
                more,
                explicit,
            }) => {
                renderer.sessions(
                    &mut out,
                    &name,
                    show_host,
                    &sessions,
                    heads.as_deref(),
                    now.timestamp().as_second(),
                )?;
                for left_out in &listing.unreadable {
                    // On stderr always, and as an `error` object with --json; the host goes on.
                    renderer.session_error(
                        &mut out,
                        &SessionError {
                            host: name.clone(),
                            harness: left_out.harness.name().to_string(),
                            session: None,
                            path: display_path(&left_out.path),
                            message: left_out.message.clone(),
                        },
                    )?;
                    unreadable += 1;
                }
                if more > 0 {
                    out.flush()?;
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
                            "{name}: no {} root at {}",
                            root.harness,
                            String::from_utf8_lossy(&root.dir)
                        )]);
                    }
                }
                out.flush()?;
                for left_out in &listing.unreadable {
                    super::warn(&[on_host(&name, &left_out.message)]);
                }
                if listing.skipped_names > 0 {
                    super::warn(&[format!(
                        "{name}: {} file names the host cannot carry left out",
                        listing.skipped_names
                    )]);
                }
            }
            Err(err) => {
                // One failed host is one line; the others still list.
                out.flush()?;
                super::warn(&[err.to_string()]);
                failed.push(err);
            }
        }
    }
    out.flush()?;
    Ok(Outcome::Listed {
        failed,
        strict_failures: if args.strict { unreadable } else { 0 },
    })
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
            },
        }
    }

    #[test]
    fn selection_filters_sorts_and_limits() {
        let view = |sort, limit, all| ViewArgs {
            sort,
            modified_within: None,
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
            ids(by_mtime.select(sessions(), None, false)),
            (vec!["a".into(), "c".into(), "b".into()], 0)
        );
        assert_eq!(
            ids(by_mtime.select(sessions(), Some(200), false)),
            (vec!["a".into(), "c".into()], 0)
        );
        let by_size = view(SortKey::Size, Some(2), false);
        assert_eq!(
            ids(by_size.select(sessions(), None, true)),
            (vec!["b".into(), "c".into()], 1)
        );
        let by_name = view(SortKey::Name, Some(1), false);
        assert_eq!(
            ids(by_name.select(sessions(), None, false)),
            (vec!["a".into()], 2)
        );
        // Text shows the newest 50 unless --all; --json every one unless --limit.
        let many: Vec<SessionFile> = (0..60)
            .map(|i| session(&format!("s{i:02}"), 1, i))
            .collect();
        assert_eq!(by_mtime.select(many.clone(), None, false).1, 10);
        assert_eq!(by_mtime.select(many.clone(), None, true).1, 0);
        assert_eq!(
            view(SortKey::Mtime, None, true).select(many, None, false).1,
            0
        );
    }
}
