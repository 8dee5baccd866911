//! `clankie-read grep PATTERN [HOST…]`: the records of every session on the hosts whose text
//! matches. Hosts are searched concurrently, their output printed in the order they
//! were named (the first host's as it comes, the others' once those before them are done); a
//! host that fails is reported and the others still answer. Exit 0 when something matched, 1
//! when nothing did (nothing on stdout), 3 when a host failed.

use std::io::Write;
use std::sync::Arc;

use clap::Args;

use super::context::{Context, GlobalArgs, OutputFormat};
use crate::cache::{Cache, CacheOptions, DEFAULT_MAX_BYTES};
use crate::driver::roots_for;
use crate::driver::search::{HostSearched, search_host};
use crate::error::{Error, Outcome, UsageError};
use crate::render::grep::Shape;
use crate::store::{Store, StoreUrl};
use clankie_engine::filter::RecordFilter;
use clankie_engine::search::{Case, Matcher, PatternOptions, Query};
use clankie_host::AnyHost;

/// Hosts searched at once.
const CONCURRENT_HOSTS: usize = 8;

#[derive(Debug, Args)]
pub struct GrepArgs {
    /// A regex (Rust `regex` syntax), or a fixed string with -F, matched against each record's
    /// text after redaction: a message's text, a tool call's name and input values, a tool
    /// result's output.
    #[arg(value_name = "PATTERN")]
    pub pattern: String,
    /// Hosts to search [default: local].
    #[arg(value_name = "HOST", conflicts_with = "hosts_all")]
    pub host_names: Vec<String>,
    /// Search every host of the hosts file.
    #[arg(long)]
    pub hosts_all: bool,
    /// Only sessions of this harness.
    #[arg(long, value_name = "HARNESS")]
    pub harness: Option<String>,
    /// Only records of these kinds: user, assistant, tool_call, tool_result, notice, terminal,
    /// or `tools` for both tool kinds (comma-separated, repeatable).
    #[arg(long, value_name = "KIND[,KIND…]")]
    pub kind: Vec<String>,
    /// Only records at or after TIME: an age (30m, 2h, 3d), today, yesterday, a date
    /// (2026-12-01; days begin at local midnight) or RFC 3339 (2026-11-02T10:00:00Z).
    #[arg(long, value_name = "TIME")]
    pub after: Option<String>,
    /// Only records before TIME (the same forms as --after).
    #[arg(long, value_name = "TIME")]
    pub before: Option<String>,
    /// PATTERN is a fixed string, not a regex.
    #[arg(short = 'F', long)]
    pub fixed_strings: bool,
    /// Ignore case. Without -i or -s, case is ignored unless PATTERN has an uppercase letter.
    #[arg(short = 'i', long, overrides_with = "case_sensitive")]
    pub ignore_case: bool,
    /// Match case exactly.
    #[arg(short = 's', long, overrides_with = "ignore_case")]
    pub case_sensitive: bool,
    /// Print only the sessions with a match (`host:session`).
    #[arg(short = 'l', long, conflicts_with = "count")]
    pub files_with_matches: bool,
    /// Print the number of matching records per session (`host:session:COUNT`).
    #[arg(short = 'c', long)]
    pub count: bool,
    /// Also show N records after each match (of the same session).
    #[arg(short = 'A', long, value_name = "N")]
    pub after_context: Option<usize>,
    /// Also show N records before each match.
    #[arg(short = 'B', long, value_name = "N")]
    pub before_context: Option<usize>,
    /// Also show N records before and after each match.
    #[arg(short = 'C', long, value_name = "N")]
    pub context: Option<usize>,
    /// At most N matching records per session.
    #[arg(short = 'm', long, value_name = "N")]
    pub max_count: Option<usize>,
    /// The bound of the local cache of remote sessions' bytes (e.g. 512M, 2G) [default: 2G].
    #[arg(long, value_name = "SIZE")]
    pub cache_max: Option<String>,
    /// Keep no cache: fetch every remote session whole.
    #[arg(long)]
    pub no_cache: bool,
    /// Use a cached session only when the host's own hash of the cached bytes (sha256sum,
    /// else md5sum, else cksum) is the cached copy's, instead of trusting its stat and sampled
    /// windows; a host without a hash tool is checked as without (said by -v).
    #[arg(long, conflicts_with = "no_cache")]
    pub verify: bool,
    /// Search the records a store holds (`sqlite:PATH`, `postgres://…`; docs/store.md)
    /// instead of the hosts [default hosts: every host of the store].
    #[arg(long, value_name = "URL", conflicts_with_all = ["cache_max", "no_cache", "verify"])]
    pub store: Option<String>,
}

/// What a host's task says, in order: output as it is rendered, then how it ended.
enum Message {
    Output(Vec<u8>),
    Done(Result<Searched, Error>),
}

/// What a host's search gave, for the run's end.
struct Searched {
    host: HostSearched,
    matches: usize,
    sessions: usize,
}

pub(super) async fn run(global: &GlobalArgs, args: GrepArgs) -> Result<Outcome, Error> {
    // Everything is validated before any I/O.
    let case = if args.ignore_case {
        Case::Insensitive
    } else if args.case_sensitive {
        Case::Sensitive
    } else {
        Case::Smart
    };
    let matcher = Matcher::new(
        &args.pattern,
        PatternOptions {
            fixed: args.fixed_strings,
            case,
        },
    )
    .map_err(UsageError::from)?;
    let filter = RecordFilter::parse(
        &args.kind,
        None,
        args.after.as_deref(),
        args.before.as_deref(),
        // Finding the system's time zone walks the zone database, a few milliseconds of a
        // search's start: only a time asked for is read in it.
        &if args.after.is_some() || args.before.is_some() {
            jiff::ZonedDateTime::now()
        } else {
            jiff::Timestamp::now().to_zoned_datetime(jiff::tz::TimeZone::UTC)
        },
    )
    .map_err(UsageError::from)?;
    let harness = args
        .harness
        .as_deref()
        .map(|name| {
            clankie_engine::harness::by_name(name).ok_or_else(|| UsageError::UnknownHarness {
                name: name.to_string(),
            })
        })
        .transpose()?;
    let cache_max = match &args.cache_max {
        Some(size) => parse_size(size).ok_or_else(|| UsageError::Size {
            flag: "--cache-max",
            text: size.clone(),
        })?,
        None => DEFAULT_MAX_BYTES,
    };
    let shape = match (args.count, args.files_with_matches) {
        (true, _) => Shape::Count,
        (_, true) => Shape::Sessions,
        _ => Shape::Records,
    };
    let records = shape == Shape::Records;
    let query = Arc::new(Query {
        matcher,
        filter,
        before: records
            .then(|| args.before_context.or(args.context))
            .flatten()
            .unwrap_or(0),
        after: records
            .then(|| args.after_context.or(args.context))
            .flatten()
            .unwrap_or(0),
        // A session's name is printed once: its first match is enough (NDJSON counts all).
        max_count: match shape {
            Shape::Sessions if global.output_format() == OutputFormat::Text => Some(1),
            _ => args.max_count,
        },
        redact: true,
        count_only: !records,
    });

    let ctx = Context::new(global)?;
    if let Some(url) = &args.store {
        let printer = ctx.renderer(false).grep(shape);
        let names = (!args.host_names.is_empty() || args.hosts_all).then(|| {
            if args.hosts_all {
                ctx.hosts_file().names().map(String::from).collect()
            } else {
                args.host_names.clone()
            }
        });
        return grep_store(url, names, harness, &query, &printer).await;
    }
    let names: Vec<String> = if args.hosts_all {
        ctx.hosts_file().names().map(String::from).collect()
    } else if args.host_names.is_empty() {
        vec!["local".to_string()]
    } else {
        args.host_names.clone()
    };
    if names.is_empty() {
        return Err(UsageError::NoHostsToSearch.into());
    }
    let printer = ctx.renderer(false).grep(shape);
    let opened: Vec<_> = names.iter().map(|name| ctx.open(name)).collect();
    // This machine's files are read where they are; only remote hosts go through the cache.
    let remote = opened.iter().any(|o| {
        o.as_ref()
            .is_ok_and(|o| !matches!(o.host, AnyHost::Local(_)))
    });
    let cache = if remote {
        let options = CacheOptions {
            dir: None,
            max_bytes: cache_max,
            enabled: !args.no_cache,
            verify: args.verify,
        };
        // A cache that cannot be opened costs speed, not results: search without keeping
        // anything (exit 1 is grep's "nothing matched", so failing here would lie).
        let cache = match Cache::open(options.clone()) {
            Ok(cache) => cache,
            Err(e) => {
                super::warn(&[format!("{e}; searching without the cache")]);
                Cache::open(CacheOptions {
                    enabled: false,
                    ..options
                })?
            }
        };
        Some(Arc::new(cache))
    } else {
        None
    };

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, Message)>();
    let limit = Arc::new(tokio::sync::Semaphore::new(CONCURRENT_HOSTS));
    let mut tasks = tokio::task::JoinSet::new();
    for (index, (name, opened)) in names.iter().zip(opened).enumerate() {
        let (tx, limit, query, cache) = (tx.clone(), limit.clone(), query.clone(), cache.clone());
        let name = name.clone();
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await;
            let result = async {
                let opened = opened?;
                let local = matches!(opened.host, AnyHost::Local(_));
                let roots = roots_for(&opened.roots, harness);
                let mut matches = 0;
                let mut sessions = 0;
                let cache = if local { None } else { cache.as_deref() };
                let host = search_host(&opened.host, &roots, &query, cache, |found| {
                    matches += found.matches;
                    sessions += 1;
                    let mut buf = Vec::new();
                    // Writing to memory cannot fail.
                    let _ = printer.session(&mut buf, &name, &found);
                    let _ = tx.send((index, Message::Output(buf)));
                })
                .await?;
                Ok(Searched {
                    host,
                    matches,
                    sessions,
                })
            }
            .await;
            let _ = tx.send((index, Message::Done(result)));
        });
    }
    drop(tx);

    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    // Output of hosts after the one being printed waits here until its turn.
    let mut held: Vec<Vec<u8>> = vec![Vec::new(); names.len()];
    let mut ended: Vec<Option<Result<Searched, Error>>> = (0..names.len()).map(|_| None).collect();
    let mut next = 0;
    let (mut matches, mut sessions, mut failed) = (0, 0, 0);
    while let Some((index, message)) = rx.recv().await {
        match message {
            Message::Output(bytes) if index == next => out.write_all(&bytes)?,
            Message::Output(bytes) => held[index].extend_from_slice(&bytes),
            Message::Done(result) => ended[index] = Some(result),
        }
        // Hosts done in order are reported, and the next one's held output goes out.
        while next < names.len()
            && let Some(result) = ended[next].take()
        {
            let name = &names[next];
            match result {
                Ok(searched) => {
                    matches += searched.matches;
                    sessions += searched.sessions;
                    if global.verbose {
                        // What the search cost the host: the bench's bytes-moved figure.
                        super::warn(&[format!(
                            "{name}: {} bytes of session files read",
                            searched.host.bytes_moved
                        )]);
                    }
                    if global.verbose && cache.as_ref().is_some_and(|c| c.verified_by_windows(name))
                    {
                        super::warn(&[format!(
                            "{name}: no hash tool (sha256sum, md5sum, cksum): --verify checked the cached sessions by their size, times and windows"
                        )]);
                    }
                    for u in &searched.host.unsearched {
                        printer.unsearched(&mut out, name, u)?;
                    }
                    if !searched.host.unsearched.is_empty() {
                        out.flush()?;
                        super::warn(
                            &searched
                                .host
                                .unsearched
                                .iter()
                                .map(|u| format!("{name}: {}: {}", u.path, u.message))
                                .collect::<Vec<_>>(),
                        );
                    }
                }
                Err(err) => {
                    failed += 1;
                    let message = err.to_string();
                    printer.host_failed(&mut out, name, &message)?;
                    out.flush()?;
                    let line = if message.starts_with(&format!("{name}: ")) {
                        message
                    } else {
                        format!("{name}: {message}")
                    };
                    super::warn(&[line]);
                }
            }
            next += 1;
            if next < names.len() {
                out.write_all(&std::mem::take(&mut held[next]))?;
            }
        }
    }
    // Their results came through the channel; a task's panic is still this run's.
    super::join_each(&mut tasks, &crate::render::progress::Progress::hidden()).await;
    printer.summary(&mut out, matches, sessions, failed)?;
    out.flush()?;
    Ok(Outcome::Searched {
        matched: matches > 0,
        hosts_failed: failed,
    })
}

/// `grep --store`: every host the store holds (or those named), answered from the store; the
/// output is what the hosts' would be.
async fn grep_store(
    url: &str,
    names: Option<Vec<String>>,
    harness: Option<clankie_model::Harness>,
    query: &Query,
    printer: &crate::render::grep::GrepPrinter,
) -> Result<Outcome, Error> {
    let mut store = Store::open_to_search(&StoreUrl::parse(Some(url))?).await?;
    let names = match names {
        Some(names) => names,
        None => store.hosts().await?,
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let (mut matches, mut sessions) = (0, 0);
    for name in &names {
        let mut written = Ok(());
        crate::store::search::search_host(&mut store, name, harness, query, |found| {
            matches += found.matches;
            sessions += 1;
            if written.is_ok() {
                written = printer.session(&mut out, name, &found);
            }
        })
        .await?;
        written?;
    }
    printer.summary(&mut out, matches, sessions, 0)?;
    out.flush()?;
    Ok(Outcome::Searched {
        matched: matches > 0,
        hosts_failed: 0,
    })
}

/// A size as `--cache-max` takes it: bytes, or a number with K, M, G or T (powers of 1024,
/// an optional `iB` or `B` after).
fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let number: u64 = text[..digits].parse().ok()?;
    let unit = text[digits..].trim().to_ascii_uppercase();
    let unit = unit
        .strip_suffix("IB")
        .or_else(|| unit.strip_suffix('B'))
        .unwrap_or(&unit);
    let shift = match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return None,
    };
    number.checked_mul(1u64 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_units() {
        assert_eq!(parse_size("1024"), Some(1024));
        assert_eq!(parse_size("512M"), Some(512 << 20));
        assert_eq!(parse_size("2G"), Some(2 << 30));
        assert_eq!(parse_size("2GiB"), Some(2 << 30));
        assert_eq!(parse_size("3kb"), Some(3 << 10));
        for bad in ["", "G", "2X", "-1", "1.5G"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }
}
