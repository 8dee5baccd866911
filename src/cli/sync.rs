//! `clankie-read sync --into URL [HOST…]`: every new record of the hosts' sessions copied into
//! a store (docs/store.md), read as `check` reads (the same cursors, kept in the store). Hosts
//! are read concurrently; each host's records and cursors are written in one transaction as
//! it finishes, so a failed host, a killed run or a database gone mid-run leaves every host
//! where its last committed sync left it. Bounded like `check` (`--run-timeout`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::time::Duration;

use clap::Args;

use super::context::{Context, GlobalArgs, positive_secs};
use crate::check::{CheckOptions, check_listed, list_host};
use crate::driver::{Reader, roots_for};
use crate::error::{Error, Outcome};
use crate::render::progress::Progress;
use crate::store::{self, Prior, Store, StoreUrl};
use clankie_host::HostError;

/// `--run-timeout` by default.
const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(Debug, Args)]
pub struct SyncArgs {
    /// Hosts to sync [default: `local` and every host in the hosts file].
    #[arg(value_name = "HOST")]
    pub host_names: Vec<String>,
    /// The store: `sqlite:PATH` or `postgres://…` [default:
    /// sqlite:$XDG_DATA_HOME/clankie-read/store.db].
    #[arg(long, value_name = "URL")]
    pub into: Option<String>,
    /// Store secrets as they are (the store must have been made with --no-redact too).
    #[arg(long)]
    pub no_redact: bool,
    /// A session that cannot be read makes the exit status 6 (when no host failed).
    #[arg(long)]
    pub strict: bool,
    /// Seconds the run may take: a host still unanswered then is reported as failed and keeps
    /// its stored cursors; the others are written.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_RUN_TIMEOUT.as_secs_f64())]
    pub run_timeout: f64,
}

pub(super) async fn run(global: &GlobalArgs, args: SyncArgs) -> Result<Outcome, Error> {
    let run_timeout = positive_secs("--run-timeout", args.run_timeout)?;
    let url = StoreUrl::parse(args.into.as_deref())?;
    let redact = !args.no_redact;
    let ctx = Context::new(global)?;
    let names: Vec<String> = if args.host_names.is_empty() {
        ctx.default_hosts()
    } else {
        args.host_names.clone()
    };
    let mut store = Store::open(&url, Some(redact)).await?;
    store::check_redaction(&url.display(), store.redacted(), redact)?;
    let deadline = tokio::time::Instant::now() + run_timeout;
    // Which hosts the store has synced decides how each is listed (a first sync reads the
    // small sessions with the listing); their stored cursors are needed only after it. So the
    // hosts are listed while their cursors are read: a sync's wall time is its listing or its
    // cursors' read, whichever is longer, then the check (docs/performance.md, "The store").
    let synced: BTreeSet<String> = store.hosts().await?.into_iter().collect();
    let mut tasks = tokio::task::JoinSet::new();
    let mut prior_senders = Vec::with_capacity(names.len());
    for (index, name) in names.iter().enumerate() {
        let opened = ctx.open(name);
        let name = name.clone();
        let first = !synced.contains(&name);
        let (prior_sender, prior_receiver) = tokio::sync::oneshot::channel::<Prior>();
        prior_senders.push(prior_sender);
        tasks.spawn(async move {
            let synced = async {
                let opened = opened?;
                let roots = roots_for(&opened.roots, None);
                let options = CheckOptions {
                    baseline: false,
                    keep_records: true,
                    redact,
                };
                let listed = list_host(&opened.host, &roots, first, options).await?;
                // The sender is dropped only when the run ends before the cursors are read
                // (the store failed): this task then waits to be aborted with the others,
                // never checking against cursors it does not have.
                let Ok(prior) = prior_receiver.await else {
                    return std::future::pending().await;
                };
                let previous = store::host_state(&prior);
                let previous = (!prior.is_empty()).then_some(&previous);
                let checked = check_listed(listed, previous).await?;
                // Titles and directories of the sessions that changed (one batched read).
                let changed: std::collections::BTreeSet<String> = checked
                    .activity
                    .iter()
                    .map(|a| format!("{}/{}", a.harness, a.session))
                    .collect();
                let sessions: Vec<_> = checked
                    .sessions
                    .iter()
                    .filter(|s| changed.contains(&format!("{}/{}", s.harness(), s.id)))
                    .cloned()
                    .collect();
                let heads = Reader::new(&opened.host).session_heads(&sessions).await;
                let heads: BTreeMap<String, _> = sessions
                    .iter()
                    .map(|s| format!("{}/{}", s.harness(), s.id))
                    .zip(heads)
                    .collect();
                let errors = checked.errors.clone();
                let skipped = checked.skipped_names;
                Ok::<_, Error>((store::plan(&prior, checked, heads), errors, skipped))
            };
            let result = tokio::time::timeout_at(deadline, synced)
                .await
                .unwrap_or_else(|_| {
                    Err(HostError::TimedOut {
                        host: name.clone(),
                        reason: format!(
                            "no complete answer within the run's {} s (--run-timeout); its \
                             stored cursors are kept",
                            run_timeout.as_secs_f64()
                        ),
                    }
                    .into())
                });
            (index, name, result)
        });
    }
    let priors: Vec<Prior> = store.priors(&names).await?;
    for (prior_sender, prior) in prior_senders.into_iter().zip(priors) {
        // A host already failed (its listing) has dropped its receiver: nothing waits for it.
        let _ = prior_sender.send(prior);
    }
    let progress = if names.len() > 1 {
        Progress::steps("syncing hosts", names.len() as u64)
    } else {
        Progress::hidden()
    };
    let mut failed = 0;
    let mut unreadable = 0;
    let renderer = ctx.renderer(false);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    // Each host is written as it finishes: its transaction holds its records and cursors.
    while let Some(joined) = tasks.join_next().await {
        let (_, name, result) = match joined {
            Ok(done) => done,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        };
        progress.inc(1);
        match result {
            Ok((write, errors, skipped)) => {
                let records = write.record_count();
                let sessions = write.sessions.len();
                // A database that cannot take the write ends the run: the hosts not yet
                // written keep their stored cursors.
                let added = store.apply(&name, &write).await?;
                if global.verbose {
                    super::warn(&[format!(
                        "{name}: {added} records added ({records} read) in {sessions} sessions"
                    )]);
                }
                for error in &errors {
                    renderer.session_error(&mut out, error)?;
                }
                if !errors.is_empty() {
                    out.flush()?;
                    super::warn(
                        &errors
                            .iter()
                            .map(|e| format!("{name}: {}", e.message))
                            .collect::<Vec<_>>(),
                    );
                    unreadable += errors.len();
                }
                if skipped > 0 {
                    super::warn(&[format!(
                        "{name}: {skipped} file names the host cannot carry left out"
                    )]);
                }
            }
            Err(err) => {
                out.flush()?;
                let line = err.to_string();
                super::warn(&[if line.starts_with(&format!("{name}: ")) {
                    line
                } else {
                    format!("{name}: {line}")
                }]);
                failed += 1;
            }
        }
    }
    progress.finish();
    out.flush()?;
    Ok(Outcome::Checked {
        failed,
        strict_failures: if args.strict { unreadable } else { 0 },
    })
}
