//! `clankie-read cache ls|clear [HOST]`: what the local cache of session bytes (the one `grep`
//! searches, [`crate::cache`]) holds, and emptying it, of one host or of all.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde::Serialize;

use crate::cache::{Cache, CacheOptions, CachedFileInfo};
use crate::error::{Error, Outcome};
use crate::render::{ls::human_size, ndjson, rfc3339};
use clankie_model::display_path;
use clankie_model::sanitize::sanitize_line;

#[derive(Debug, Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub action: CacheAction,
}

#[derive(Debug, Subcommand)]
pub enum CacheAction {
    /// The cached files (host, harness, size, last use, path) and their total.
    Ls(CacheLsArgs),
    /// Removes the cached files, of one host or all, and says what it removed.
    Clear(CacheClearArgs),
}

#[derive(Debug, Args)]
pub struct CacheLsArgs {
    /// Only this host's files.
    #[arg(value_name = "HOST")]
    pub host: Option<String>,
    /// NDJSON output: one `cached` object per file.
    #[arg(long)]
    pub json: bool,
    /// The cache directory [default: $XDG_CACHE_HOME/clankie-read, else
    /// ~/.cache/clankie-read].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CacheClearArgs {
    /// Only this host's files.
    #[arg(value_name = "HOST")]
    pub host: Option<String>,
    /// The cache directory [default: $XDG_CACHE_HOME/clankie-read, else
    /// ~/.cache/clankie-read].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

/// A `cached` line of `cache ls --json`.
#[derive(Serialize)]
struct CachedLine<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    host: &'a str,
    harness: &'a str,
    path: String,
    bytes: u64,
    used: String,
}

pub(super) fn run(args: CacheArgs) -> Result<Outcome, Error> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.action {
        CacheAction::Ls(args) => {
            let cache = open(args.cache_dir)?;
            let files = cache.entries(args.host.as_deref())?;
            if args.json {
                for file in &files {
                    ndjson::line(&mut out, &cached_line(file))?;
                }
            } else {
                ls_text(&mut out, &files)?;
            }
        }
        CacheAction::Clear(args) => {
            let cache = open(args.cache_dir)?;
            let cleared = cache.clear(args.host.as_deref())?;
            let whose = args
                .host
                .map_or(String::new(), |h| format!(" of {}", sanitize_line(&h)));
            writeln!(
                out,
                "removed {} cached file{}{whose} ({}) from {}",
                cleared.files,
                if cleared.files == 1 { "" } else { "s" },
                human_size(cleared.bytes),
                sanitize_line(&cache.dir().display().to_string()),
            )?;
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

fn cached_line(file: &CachedFileInfo) -> CachedLine<'_> {
    CachedLine {
        ty: "cached",
        host: &file.host,
        harness: &file.harness,
        path: display_path(&file.path),
        bytes: file.bytes,
        used: rfc3339(i64::try_from(file.used).unwrap_or(i64::MAX)),
    }
}

/// One line per file: host, harness, size, last use, path; then the total.
fn ls_text(out: &mut impl Write, files: &[CachedFileInfo]) -> std::io::Result<()> {
    let host_width = files.iter().map(|f| f.host.len()).max().unwrap_or(0);
    let harness_width = files.iter().map(|f| f.harness.len()).max().unwrap_or(0);
    for file in files {
        writeln!(
            out,
            "{:host_width$}  {:harness_width$}  {:>9}  {}  {}",
            sanitize_line(&file.host),
            sanitize_line(&file.harness),
            human_size(file.bytes),
            rfc3339(i64::try_from(file.used).unwrap_or(i64::MAX)),
            sanitize_line(&display_path(&file.path)),
        )?;
    }
    let total: u64 = files.iter().map(|f| f.bytes).sum();
    writeln!(
        out,
        "{} file{}, {}",
        files.len(),
        if files.len() == 1 { "" } else { "s" },
        human_size(total)
    )
}
