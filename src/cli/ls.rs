//! `clankie-read ls [HOST…]`: the sessions on each host.

use std::io::Write;

use clap::Args;

use super::context::{Context, GlobalArgs};
use crate::check::SessionError;
use crate::driver::{Reader, roots_for};
use crate::error::{Error, Outcome, UsageError};
use clankie_model::display_path;

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Hosts to list [default: local].
    #[arg(value_name = "HOST")]
    pub host_names: Vec<String>,
    /// Only this harness.
    #[arg(long, value_name = "NAME")]
    pub harness: Option<String>,
    /// NDJSON output: one `session` object per line (and an `error` object per source that
    /// cannot be read).
    #[arg(long)]
    pub json: bool,
    /// A source that cannot be read (a database, a name that is not UTF-8) makes the exit
    /// status 6; it is reported and the rest is listed either way.
    #[arg(long)]
    pub strict: bool,
}

pub(super) async fn run(global: &GlobalArgs, args: LsArgs) -> Result<Outcome, Error> {
    let harness = match &args.harness {
        Some(name) => Some(
            clankie_engine::harness::by_name(name)
                .ok_or_else(|| UsageError::UnknownHarness { name: name.clone() })?,
        ),
        None => None,
    };
    let ctx = Context::new(global)?;
    let renderer = ctx.renderer(args.json, false);
    let names = if args.host_names.is_empty() {
        vec!["local".to_string()]
    } else {
        args.host_names.clone()
    };
    let show_host = names.len() > 1;
    // Every host lists at once; results print in the order given.
    let verbose = ctx.verbose();
    let mut tasks = tokio::task::JoinSet::new();
    for (index, name) in names.iter().enumerate() {
        let opened = ctx.open(name);
        let name = name.clone();
        tasks.spawn(async move {
            let result = match opened {
                Ok(opened) => {
                    let roots = roots_for(&opened.roots, harness);
                    let result = Reader::new(&opened.host)
                        .list_sessions(&roots)
                        .await
                        .map_err(Error::from);
                    if verbose {
                        super::warn(&opened.host.take_notes());
                    }
                    result
                }
                Err(e) => Err(e),
            };
            (index, name, result)
        });
    }
    let mut results: Vec<_> = tasks.join_all().await;
    results.sort_by_key(|(index, _, _)| *index);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut failed = Vec::new();
    let mut unreadable = 0;
    for (_, name, result) in results {
        match result {
            Ok((listing, sessions)) => {
                renderer.sessions(&mut out, &name, &sessions, show_host)?;
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
                for root in listing.roots.iter().filter(|r| !r.exists) {
                    if verbose {
                        super::warn(&[format!(
                            "{name}: no {} root at {}",
                            root.harness,
                            String::from_utf8_lossy(&root.dir)
                        )]);
                    }
                }
                out.flush()?;
                for left_out in &listing.unreadable {
                    super::warn(&[format!("{name}: {}", left_out.message)]);
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
