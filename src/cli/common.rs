//! What every subcommand shares: global options, `HOST:SESSION` parsing, opening a host,
//! `--root` parsing and choosing the renderer.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::config::{HostsFile, ShellChoice, Transport};
use crate::error::Error;
use crate::render::Renderer;
use crate::render::text::TextOptions;
use clankie_host::AnyHost;
use clankie_host::local::LocalHost;
use clankie_host::remote::ShellMode;
use clankie_host::remote::SshHost;
use clankie_host::script::Dialect;
use clankie_model::RootSpec;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset.
    Auto,
    Always,
    Never,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Hosts file [default: $CLANKIE_HOSTS, else ~/.config/clankie/hosts.toml].
    #[arg(long, global = true, value_name = "FILE")]
    pub hosts: Option<PathBuf>,
    /// SSH configuration file, like `ssh -F` [default: ~/.ssh/config].
    #[arg(long, global = true, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// A harness's home directory on the addressed host, replacing its default
    /// (e.g. `claude=/srv/agent/.claude`). Repeatable.
    #[arg(long = "root", global = true, value_name = "HARNESS=DIR")]
    pub roots: Vec<String>,
    /// When to colour text output.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Say more on stderr.
    #[arg(short, long, global = true)]
    pub verbose: bool,
}

impl GlobalArgs {
    /// Parses `--root HARNESS=DIR` options. Unknown harness → usage error naming the supported.
    pub fn root_overrides(&self) -> Result<Vec<RootSpec>, Error> {
        self.roots
            .iter()
            .map(|spec| {
                let (name, dir) = spec.split_once('=').ok_or_else(|| {
                    Error::Usage(format!("--root wants HARNESS=DIR, got `{spec}`"))
                })?;
                let harness = clankie_engine::harness::by_name(name).ok_or_else(|| {
                    Error::Usage(format!(
                        "unknown harness `{name}` (supported: {})",
                        clankie_engine::harness::supported_names()
                    ))
                })?;
                if dir.is_empty() {
                    return Err(Error::Usage(format!("--root {name}= needs a directory")));
                }
                Ok(RootSpec {
                    harness,
                    dir: Some(OsString::from(dir).into_vec()),
                })
            })
            .collect()
    }

    pub fn color_enabled(&self) -> bool {
        match self.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::io::stdout().is_terminal()
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }

    pub fn renderer(&self, json: bool, full: bool) -> Renderer {
        if json {
            Renderer::Ndjson
        } else {
            Renderer::Text(TextOptions {
                full,
                color: self.color_enabled(),
            })
        }
    }
}

/// `HOST:SESSION`, split at the first `:`.
pub(super) fn split_target(target: &str) -> Result<(&str, &str), Error> {
    match target.split_once(':') {
        Some((host, session)) if !host.is_empty() && !session.is_empty() => Ok((host, session)),
        _ => Err(Error::Usage(format!(
            "expected HOST:SESSION (e.g. local:3f1c2a), got `{target}`"
        ))),
    }
}

/// A host as the user addressed it, opened (not yet connected), with its roots: `--root`
/// replaces the hosts file's roots, which replace the harnesses' defaults.
#[derive(Debug)]
pub(super) struct OpenHost {
    pub host: AnyHost,
    pub roots: Vec<RootSpec>,
}

/// Opens a host by name: `local`, a name from the hosts file, or `[user@]alias` for the SSH
/// config. Nothing is connected yet.
pub(super) fn open_host(
    global: &GlobalArgs,
    hosts: &HostsFile,
    name: &str,
) -> Result<OpenHost, Error> {
    let cli_roots = global.root_overrides()?;
    let merge = |file_roots: &[RootSpec]| -> Vec<RootSpec> {
        let mut roots = cli_roots.clone();
        roots.extend(
            file_roots
                .iter()
                .filter(|r| !cli_roots.iter().any(|c| c.harness == r.harness))
                .cloned(),
        );
        roots
    };
    if name == "local" {
        return Ok(OpenHost {
            host: AnyHost::Local(LocalHost::new("local")),
            roots: merge(&[]),
        });
    }
    let (transport, file_roots, shell) = match hosts.get(name) {
        Some(config) => (config.transport.clone(), config.roots.clone(), config.shell),
        None => (
            Transport::Ssh(name.to_string()),
            Vec::new(),
            ShellChoice::Auto,
        ),
    };
    let mode = match shell {
        ShellChoice::Auto => ShellMode::Auto,
        ShellChoice::Posix => ShellMode::Fixed(Dialect::Posix),
        ShellChoice::Powershell => ShellMode::Fixed(Dialect::PowerShell),
    };
    let host = match transport {
        Transport::Local => AnyHost::Local(LocalHost::new(name)),
        Transport::Ssh(dest) => {
            let target = clankie_host::ssh::resolve(&dest, global.ssh_config.as_deref())?;
            AnyHost::Ssh(Box::new(SshHost::with_shell(name, target, mode)))
        }
    };
    Ok(OpenHost {
        host,
        roots: merge(&file_roots),
    })
}

/// Loads the hosts file named by `--hosts`, `$CLANKIE_HOSTS` or the default path.
pub(super) fn hosts_file(global: &GlobalArgs) -> Result<HostsFile, Error> {
    HostsFile::load(global.hosts.as_deref()).map_err(|e| Error::Usage(e.to_string()))
}
