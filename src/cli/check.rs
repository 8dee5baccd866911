//! `clankie-read check --state FILE [HOST…]`: one `activity` line per session that changed since
//! the last run (cron), hosts checked concurrently; a failed host keeps its old state and makes
//! the exit status 3 while the others are still saved. The run is bounded (`--run-timeout`,
//! counted from when the state lock is taken): a host still unanswered then has failed, so the
//! lock is never held longer than that and the saving.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clap::Args;

use super::context::{Context, GlobalArgs, OpenHost, positive_secs};
use crate::check::{State, StateError, StateLock, check_host};
use crate::driver::roots_for;
use crate::error::{Error, Outcome, UsageError};
use crate::render::progress::Progress;
use clankie_host::HostError;

/// `--run-timeout` by default.
const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Hosts to check [default: `local` and every host in the hosts file].
    #[arg(value_name = "HOST")]
    pub host_names: Vec<String>,
    /// The state file kept between runs (created on the first run, with its directory, 0700,
    /// when missing).
    #[arg(long, value_name = "FILE")]
    pub state: PathBuf,
    /// Also print the new records of each changed session (text: after the activity lines,
    /// each session's under a `host:session (harness)` heading).
    #[arg(long)]
    pub records: bool,
    /// A session that cannot be read makes the exit status 6 (when no host failed); it is
    /// reported and the host's other sessions are checked and saved either way.
    #[arg(long)]
    pub strict: bool,
    /// Seconds to wait for another run's lock before exiting 75.
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    pub wait: f64,
    /// Seconds the run may take once it holds the lock: a host still unanswered then is
    /// reported as failed and keeps its old cursors; the others are saved.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_RUN_TIMEOUT.as_secs_f64())]
    pub run_timeout: f64,
}

pub(super) async fn run(global: &GlobalArgs, args: CheckArgs) -> Result<Outcome, Error> {
    let wait =
        Duration::try_from_secs_f64(args.wait).map_err(|_| UsageError::Wait { secs: args.wait })?;
    let run_timeout = positive_secs("--run-timeout", args.run_timeout)?;
    let ctx = Context::new(global)?;
    let names: Vec<String> = if args.host_names.is_empty() {
        ctx.default_hosts()
    } else {
        args.host_names.clone()
    };
    let lock = match StateLock::acquire(&args.state, wait) {
        Ok(lock) => lock,
        Err(StateError::Locked { path }) => {
            super::warn(&[format!(
                "{path}: another `check` is running; giving up after {}s",
                wait.as_secs_f64()
            )]);
            return Ok(Outcome::Locked);
        }
        Err(e) => return Err(e.into()),
    };
    // The run's bound starts with the lock: held for at most this, and the saving.
    let deadline = tokio::time::Instant::now() + run_timeout;
    let previous = State::load(&args.state)?;
    let baseline = previous.is_none();
    let previous = Arc::new(previous.unwrap_or_default());
    let mut tasks = tokio::task::JoinSet::new();
    for (index, (name, opened)) in names.iter().zip(open_all(&ctx, &names)).enumerate() {
        let (name, previous, keep) = (name.clone(), previous.clone(), args.records);
        tasks.spawn(async move {
            // At most `check::CONCURRENT_HOSTS` at once: `check_host` waits for a slot.
            let checked = async {
                let opened = opened?;
                let roots = roots_for(&opened.roots, None);
                check_host(
                    &opened.host,
                    &roots,
                    previous.hosts.get(&name),
                    baseline,
                    keep,
                )
                .await
                .map_err(Error::from)
            };
            // Out of time: the host's work is dropped (its connection with it).
            let result = tokio::time::timeout_at(deadline, checked)
                .await
                .unwrap_or_else(|_| {
                    Err(HostError::TimedOut {
                        host: name.clone(),
                        reason: format!(
                            "no complete answer within the run's {} s (--run-timeout); its \
                             old cursors are kept",
                            run_timeout.as_secs_f64()
                        ),
                    }
                    .into())
                });
            (index, name, result)
        });
    }
    // Several hosts may take a while: a line on a terminal's stderr counts them, gone before
    // anything is printed.
    let progress = if names.len() > 1 {
        Progress::steps("checking hosts", names.len() as u64)
    } else {
        Progress::hidden()
    };
    let mut results = super::join_each(&mut tasks, &progress).await;
    results.sort_by_key(|(index, _, _)| *index);

    let mut state = (*previous).clone();
    state.version = 1;
    let mut renderer = ctx.renderer(false);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut failed = 0;
    let mut unreadable = 0;
    for (_, name, result) in results {
        match result {
            Ok(checked) => {
                renderer.checked(&mut out, &checked.activity)?;
                // A session that cannot be read: on stderr, and an `error` object with --json.
                // It kept its old state; the host's other sessions advanced.
                for error in &checked.errors {
                    renderer.session_error(&mut out, error)?;
                }
                if !checked.errors.is_empty() {
                    out.flush()?;
                    super::warn(
                        &checked
                            .errors
                            .iter()
                            .map(|e| with_host(&name, e.message.clone()))
                            .collect::<Vec<_>>(),
                    );
                    unreadable += checked.errors.len();
                }
                if checked.skipped_names > 0 {
                    super::warn(&[format!(
                        "{name}: {} file names the host cannot carry left out",
                        checked.skipped_names
                    )]);
                }
                state.hosts.insert(name, checked.state);
            }
            Err(err) => {
                // The host keeps its old cursors; the others are still saved.
                out.flush()?;
                super::warn(&[with_host(&name, err.to_string())]);
                failed += 1;
            }
        }
    }
    out.flush()?;
    state.save(&args.state)?;
    drop(lock);
    Ok(Outcome::Checked {
        failed,
        strict_failures: if args.strict { unreadable } else { 0 },
    })
}

/// `line` starting with `host: ` (host errors name their host already; others do not).
fn with_host(host: &str, line: String) -> String {
    let prefix = format!("{host}: ");
    if line.starts_with(&prefix) {
        line
    } else {
        format!("{prefix}{line}")
    }
}

/// Opens every host of the run, a few at a time: each SSH host's configuration is resolved by
/// `ssh -G` (a process of a few ms), and a fleet's one after the other would hold every
/// connection back by their sum. In `names`' order.
fn open_all(ctx: &Context, names: &[String]) -> Vec<Result<OpenHost, Error>> {
    // Mostly the child's start and its reading of the configuration: twice the cores keeps
    // them busy, and a few threads cost nothing beside a process each.
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get() * 2)
        .clamp(1, 16)
        .min(names.len());
    if workers <= 1 {
        return names.iter().map(|name| ctx.open(name)).collect();
    }
    let next = AtomicUsize::new(0);
    let mut opened: Vec<Option<Result<OpenHost, Error>>> = names.iter().map(|_| None).collect();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(name) = names.get(index) else {
                            return done;
                        };
                        done.push((index, ctx.open(name)));
                    }
                })
            })
            .collect();
        for worker in workers {
            let done = worker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            for (index, result) in done {
                opened[index] = Some(result);
            }
        }
    });
    opened
        .into_iter()
        .map(|result| result.expect("every host was opened"))
        .collect()
}
