//! `clankie-read cache ls|clear [HOST]`: what the local cache of session bytes (the one `grep`
//! searches, [`crate::cache`]) holds, and emptying it, of one host or of all.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::cache::{Cache, CacheOptions, CachedFileInfo};
use crate::error::{Error, Outcome};
use crate::render::{ls::human_size, ndjson, rfc3339};
use clankie_model::display_path;
use clankie_model::sanitize::sanitize_line;

#[derive(Debug, Args)]
pub struct CacheArgs {
    /// `ls`: the cached files (host, harness, size, last use, path) and their total;
    /// `clear`: remove them, and say what went.
    #[arg(value_enum)]
    pub action: CacheAction,
    /// Only this host's files [default: every host's].
    #[arg(value_name = "HOST")]
    pub host: Option<String>,
    /// NDJSON output: one `cached` object per file (`ls`), one `cleared` object (`clear`).
    #[arg(long)]
    pub json: bool,
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

/// The `cleared` line of `cache clear --json`.
#[derive(Serialize)]
struct ClearedLine<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    host: Option<&'a str>,
    files: u64,
    bytes: u64,
}

pub(super) fn run(args: CacheArgs) -> Result<Outcome, Error> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let cache = open(args.cache_dir)?;
    let host = args.host.as_deref();
    match args.action {
        CacheAction::Ls => {
            let files = cache.entries(host)?;
            if args.json {
                for file in &files {
                    ndjson::line(&mut out, &cached_line(file))?;
                }
            } else {
                ls_text(&mut out, &files)?;
            }
        }
        CacheAction::Clear => {
            let cleared = cache.clear(host)?;
            if args.json {
                let line = ClearedLine {
                    ty: "cleared",
                    host,
                    files: cleared.files,
                    bytes: cleared.bytes,
                };
                ndjson::line(&mut out, &line)?;
            } else {
                let whose = host.map_or(String::new(), |h| format!(" of {}", sanitize_line(h)));
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
