//! `clankie-read ls [HOST…]`: the sessions on each host.

use std::io::Write;

use clap::Args;

use super::common::{GlobalArgs, open_host};
use crate::driver::{list_sessions, roots_for};
use crate::error::{Error, exit};
use crate::model::Harness;

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Hosts to list [default: local].
    pub hosts: Vec<String>,
    /// Only this harness.
    #[arg(long, value_name = "NAME")]
    pub harness: Option<String>,
    /// NDJSON output: one `session` object per line.
    #[arg(long)]
    pub json: bool,
}

pub(super) async fn run(global: &GlobalArgs, args: LsArgs) -> Result<u8, Error> {
    let harness = match &args.harness {
        Some(name) => Some(Harness::from_name(name).ok_or_else(|| {
            Error::Usage(format!(
                "unknown harness `{name}` (supported: {})",
                Harness::supported_names()
            ))
        })?),
        None => None,
    };
    let overrides = global.root_overrides()?;
    let roots = roots_for(&overrides, harness);
    let renderer = global.renderer(args.json, false);
    let hosts = if args.hosts.is_empty() {
        vec!["local".to_string()]
    } else {
        args.hosts.clone()
    };
    let show_host = hosts.len() > 1;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut status = exit::OK;
    for name in &hosts {
        // One failed host is one line on stderr; the others still list.
        let result = match open_host(global, name).await {
            Ok(host) => list_sessions(&host, &roots).await.map_err(Error::from),
            Err(e) => Err(e),
        };
        match result {
            Ok((listing, sessions)) => {
                renderer.sessions(&mut out, name, &sessions, show_host)?;
                if global.verbose {
                    for root in listing.roots.iter().filter(|r| !r.exists) {
                        super::warn(&[format!(
                            "{name}: no {} root at {}",
                            root.harness,
                            String::from_utf8_lossy(&root.dir)
                        )]);
                    }
                }
                if listing.skipped_names > 0 {
                    super::warn(&[format!(
                        "{name}: {} file names with a newline left out",
                        listing.skipped_names
                    )]);
                }
            }
            Err(err) => {
                out.flush()?;
                let code = crate::error::exit_code(&err);
                super::warn(&[err.to_string()]);
                status = status.max(code);
            }
        }
    }
    out.flush()?;
    Ok(status)
}
