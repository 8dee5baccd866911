//! `clankie-read mcp`: serves the reads as MCP tools on stdio (`crate::mcp`). Here the server's
//! policy is settled before it starts: which hosts calls may name (`local`, the hosts file's,
//! `--allow-host`, and with `--allow-ssh-config` every `Host` alias of the SSH config), where
//! `check` keeps its state, and how long an unused connection stays open.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;

use super::context::{Context, GlobalArgs, positive_secs};
use crate::check::StateError;
use crate::error::{Error, Outcome};
use crate::mcp::{Allowed, HostSource, ServerOptions};
use clankie_engine::resume::Remote;
use clankie_host::ssh::config::plain_host_aliases;
use clankie_host::{AnyHost, Dialect, Transport};
use clankie_model::RootSpec;

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Also allow this host (a `[user@]host[:port]` or an SSH config alias). Repeatable. The
    /// hosts file's hosts and `local` are always allowed.
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_hosts: Vec<String>,
    /// Allow every `Host` alias of the SSH config (patterns with wildcards are not names).
    #[arg(long)]
    pub allow_ssh_config: bool,
    /// The state file of the `check` tool [default: $XDG_STATE_HOME/clankie/mcp-check.json,
    /// else ~/.local/state/clankie/mcp-check.json]; apart from any `check --state` of cron.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Close a host's connection after SECS without a call.
    #[arg(long, value_name = "SECS", default_value_t = 300.0)]
    pub idle_timeout: f64,
    /// Answer the `search` tool from a store (`sqlite:PATH`, `postgres://…`; docs/store.md)
    /// instead of the hosts: its hosts default to every host of the store.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
}

pub(super) async fn run(global: &GlobalArgs, args: McpArgs) -> Result<Outcome, Error> {
    let idle = positive_secs("--idle-timeout", args.idle_timeout)?;
    if let Some(url) = &args.store {
        // A store that is not there is said now, not at the first search.
        crate::store::Store::open(&crate::store::StoreUrl::parse(Some(url))?, None).await?;
    }
    let ctx = Context::new(global)?;
    let checked_by_default = ctx.default_hosts();
    let mut names: BTreeSet<String> = checked_by_default.iter().cloned().collect();
    names.extend(args.allow_hosts.iter().cloned());
    if args.allow_ssh_config {
        let file = global
            .ssh_config
            .clone()
            .or_else(|| home().map(|h| h.join(".ssh/config")));
        if let Some(file) = file {
            // A missing config allows nothing more; one that cannot be read is said once.
            match std::fs::read_to_string(&file) {
                Ok(text) => names.extend(plain_host_aliases(&text)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => super::warn(&[format!("{}: {e}", file.display())]),
            }
        }
    }
    let state = match args.state {
        Some(path) => path,
        None => default_state().ok_or_else(|| StateError::Invalid {
            path: "the MCP check state".to_string(),
            reason: "neither $XDG_STATE_HOME nor $HOME is set; give --state FILE".to_string(),
        })?,
    };
    let options = ServerOptions {
        allowed: Allowed {
            checked_by_default,
            names,
        },
        state,
        idle,
        verbose: ctx.verbose(),
        store: args
            .store
            .as_deref()
            .map(|url| crate::store::StoreUrl::parse(Some(url)))
            .transpose()?,
    };
    let source = Arc::new(CliHosts {
        ctx,
        ssh_config: global.ssh_config.clone(),
    });
    crate::mcp::serve(source, options).await?;
    Ok(Outcome::Done)
}

/// Hosts opened as every subcommand opens them.
struct CliHosts {
    ctx: Context,
    ssh_config: Option<PathBuf>,
}

impl HostSource for CliHosts {
    fn open(&self, name: &str) -> Result<(AnyHost, Vec<RootSpec>), Error> {
        let opened = self.ctx.open(name)?;
        Ok((opened.host, opened.roots))
    }

    fn remote(&self, name: &str, session_root: &[u8]) -> Option<Remote> {
        let config = self.ctx.host_config(name);
        match &config.transport {
            Transport::Local => None,
            Transport::Ssh(destination) => Some(Remote {
                ssh_args: super::resume::ssh_args(destination, self.ssh_config.as_deref()),
                powershell: config.shell == Some(Dialect::PowerShell)
                    || super::resume::is_windows_path(session_root),
            }),
        }
    }

    fn warn(&self, lines: &[String]) {
        super::warn(lines);
    }
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// `$XDG_STATE_HOME/clankie/mcp-check.json`, else under `~/.local/state`.
fn default_state() -> Option<PathBuf> {
    let dir = std::env::var_os("XDG_STATE_HOME")
        .filter(|d| Path::new(d).is_absolute())
        .map(PathBuf::from)
        .or_else(|| home().map(|h| h.join(".local/state")))?;
    Some(dir.join("clankie/mcp-check.json"))
}
