//! What every subcommand shares: global options, `HOST:SESSION` parsing, opening a host,
//! `--root` parsing and choosing the renderer.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::error::Error;
use crate::host::AnyHost;
use crate::host::local::LocalHost;
use crate::model::{Harness, RootSpec};
use crate::render::Renderer;
use crate::render::text::TextOptions;

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
                let harness = Harness::from_name(name).ok_or_else(|| {
                    Error::Usage(format!(
                        "unknown harness `{name}` (supported: {})",
                        Harness::supported_names()
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

/// Opens a host by the name the user gave.
pub(super) async fn open_host(_global: &GlobalArgs, name: &str) -> Result<AnyHost, Error> {
    match name {
        "local" => Ok(AnyHost::Local(LocalHost::new("local"))),
        other => Err(Error::Driver(crate::driver::DriverError::Host(
            crate::host::HostError::Unreachable {
                host: other.to_string(),
                reason: "unknown host (only `local` is supported in this build)".into(),
            },
        ))),
    }
}
