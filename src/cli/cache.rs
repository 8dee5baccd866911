//! `clankie-read cache ls|clear [HOST]`: what the local cache of session bytes (the one `grep`
//! searches, [`crate::cache`]) holds, and emptying it, of one host or of all.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::context::GlobalArgs;
use crate::cache::{Cache, CacheOptions};
use crate::error::{Error, Outcome};

#[derive(Debug, Args)]
pub struct CacheArgs {
    /// `ls`: the cached files (host, harness, size, last use, path) and their total;
    /// `clear`: remove them, and say what went.
    #[arg(value_enum)]
    pub action: CacheAction,
    /// Only this host's files [default: every host's].
    #[arg(value_name = "HOST")]
    pub host: Option<String>,
    /// The cache directory [default: $XDG_CACHE_HOME/clankie-read, else
    /// ~/.cache/clankie-read].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CacheAction {
    /// The cached files and their total.
    Ls,
    /// Remove the cached files.
    Clear,
}

/// Prints through the run's renderer: with `--format json`, one `cached` object per file
/// (`ls`), one `cleared` object (`clear`).
pub(super) fn run(global: &GlobalArgs, args: CacheArgs) -> Result<Outcome, Error> {
    let renderer = global.renderer();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let cache = open(args.cache_dir)?;
    let host = args.host.as_deref();
    match args.action {
        CacheAction::Ls => renderer.cached(&mut out, &cache.entries(host)?)?,
        CacheAction::Clear => {
            let cleared = cache.clear(host)?;
            renderer.cleared(&mut out, host, &cleared, cache.dir())?;
        }
    }
    out.flush()?;
    Ok(Outcome::Done)
}

/// The cache, to read and clear only: nothing is made when it does not exist.
fn open(dir: Option<PathBuf>) -> Result<Cache, Error> {
    Ok(Cache::open(CacheOptions {
        dir,
        enabled: false,
        ..CacheOptions::default()
    })?)
}
