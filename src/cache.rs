//! The local cache of session bytes that `grep` searches (issue 17): the bytes of each session
//! file fetched from a host through the read primitive are kept under the user's cache
//! directory (`$XDG_CACHE_HOME/clankie-read`, else `~/.cache/clankie-read`; directories 0700,
//! files 0600), keyed by host, harness and path. A later fetch reads only what was appended
//! since, after checking that the cached prefix is still the file's (the same verification
//! windows as cursors), and fetches again a file whose prefix changed: never a stale hit.
//!
//! Used by the driver side only (it reads through [`Host`]); it never parses transcripts.
//! The local host is not cached (its files are already on this disk): callers read it
//! directly.
//!
//! This first cut is the API the `grep` command builds on; it fetches every file whole and
//! keeps nothing.

use std::path::PathBuf;

use clankie_host::{FileRef, Host, HostError};
use clankie_model::limits::MAX_READ_BYTES;
use clankie_model::{ByteRange, FileEntry};

/// The default bound of the cache's size on disk (`--cache-max`): 2 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 2 << 30;

/// How a cache is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheOptions {
    /// The directory; `None` is [`default_dir`].
    pub dir: Option<PathBuf>,
    /// The bound of the cache's size on disk; least recently used files go first.
    pub max_bytes: u64,
    /// `false` is `--no-cache`: fetch everything, keep nothing after the run.
    pub enabled: bool,
}

impl Default for CacheOptions {
    fn default() -> CacheOptions {
        CacheOptions {
            dir: None,
            max_bytes: DEFAULT_MAX_BYTES,
            enabled: true,
        }
    }
}

/// Errors of the cache itself (its directory and files), each one line.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("cache {path}: {reason}")]
    Io { path: String, reason: String },
    #[error("cache: neither $XDG_CACHE_HOME nor $HOME is set")]
    NoDirectory,
}

/// The bytes of one file as fetched: its whole current content, up to the size the host
/// reported.
#[derive(Debug)]
pub struct Fetched {
    pub bytes: FetchedBytes,
    /// Bytes read through the host for this file (appended bytes and verification windows).
    pub moved: u64,
}

/// A fetched file's bytes: in memory, or mapped from the cache.
#[derive(Debug)]
pub struct FetchedBytes(Vec<u8>);

impl std::ops::Deref for FetchedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// One cached file, as `cache ls` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedFileInfo {
    pub host: String,
    pub harness: String,
    /// The file's full path on the host.
    pub path: Vec<u8>,
    pub bytes: u64,
    /// When it was last used (seconds since the epoch).
    pub used: u64,
}

/// What [`Cache::clear`] removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cleared {
    pub files: u64,
    pub bytes: u64,
}

/// The cache directory when none is given: `$XDG_CACHE_HOME/clankie-read`, else
/// `$HOME/.cache/clankie-read`.
pub fn default_dir() -> Result<PathBuf, CacheError> {
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("clankie-read"));
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".cache").join("clankie-read")),
        None => Err(CacheError::NoDirectory),
    }
}

/// A cache of session bytes.
#[derive(Debug)]
pub struct Cache {
    options: CacheOptions,
}

impl Cache {
    /// Opens (creating when missing) the cache `options` describe.
    pub fn open(options: CacheOptions) -> Result<Cache, CacheError> {
        Ok(Cache { options })
    }

    /// The options it was opened with.
    pub fn options(&self) -> &CacheOptions {
        &self.options
    }

    /// The current bytes of each file of `host`, in order (one file's failure is its own;
    /// an error for the host as a whole ends the call).
    pub async fn fetch_many<H: Host>(
        &self,
        host: &H,
        files: &[FileEntry],
    ) -> Result<Vec<Result<Fetched, HostError>>, HostError> {
        let mut out = Vec::with_capacity(files.len());
        for entry in files {
            match fetch_whole(host, entry).await {
                Err(e) if e.is_host_wide() => return Err(e),
                result => out.push(result),
            }
        }
        Ok(out)
    }

    /// The cached files, of one host or of all.
    pub fn entries(&self, _host: Option<&str>) -> Result<Vec<CachedFileInfo>, CacheError> {
        Ok(Vec::new())
    }

    /// Removes the cached files of one host, or all.
    pub fn clear(&self, _host: Option<&str>) -> Result<Cleared, CacheError> {
        Ok(Cleared::default())
    }
}

/// Reads a whole file through the host, `MAX_READ_BYTES` a call.
async fn fetch_whole<H: Host>(host: &H, entry: &FileEntry) -> Result<Fetched, HostError> {
    let file = FileRef {
        harness: entry.harness,
        root: entry.root.to_vec(),
        rel: entry.rel.clone(),
    };
    let mut bytes = Vec::with_capacity(entry.size as usize);
    loop {
        let start = bytes.len() as u64;
        let result = host
            .read(&file, &[ByteRange::new(start, MAX_READ_BYTES)])
            .await?;
        let chunk = result.chunks.into_iter().next().unwrap_or_default();
        bytes.extend_from_slice(&chunk);
        if bytes.len() as u64 >= result.size || chunk.is_empty() {
            let moved = bytes.len() as u64;
            return Ok(Fetched {
                bytes: FetchedBytes(bytes),
                moved,
            });
        }
    }
}
