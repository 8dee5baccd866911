//! The cache's files on disk: one data file per (host, harness, full path), named by the blake3
//! hex of that key (`KEY.data`), a metadata file beside it (`KEY.meta`: host, harness, path,
//! cached size, the listed mtime, inode and ctime, the hashes of the verification windows, last
//! use) and a lock file (`KEY.lock`) that one process at a time holds while it fetches into the
//! entry. `lock` (the directory's
//! own) is held while entries are evicted or cleared.
//!
//! Directories are made 0700 and files 0600 when they are created (never chmod-ed after, so no
//! moment exists where they are wider, whatever the umask). A data file only ever grows in
//! place (appends past what any reader mapped) or is replaced whole by a rename, so a reader's
//! map stays valid. Nothing read back is trusted: an entry whose metadata does not parse, names
//! another file, or whose data file's size or windows disagree with it is dropped. Every file
//! is opened without following a symlink (`O_NOFOLLOW`) and without blocking (`O_NONBLOCK`, so
//! a FIFO put in place of a file cannot hang a search), and anything that is not a regular file
//! is refused. A directory another user could change is refused whole ([`Store::check_safe`]).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::CacheError;
use clankie_engine::cursor::{HEAD_BYTES, WINDOW_BYTES, hash16};
use clankie_model::ByteRange;

/// The metadata format; another version is dropped as corrupt.
const META_VERSION: u32 = 3;
const DATA: &str = "data";
const META: &str = "meta";
const LOCK: &str = "lock";
/// Prefix of the temporary files (data being fetched whole, metadata being replaced).
pub(super) const TEMP_PREFIX: &str = ".tmp-";

/// What the metadata file of an entry holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Meta {
    pub(super) version: u32,
    pub(super) host: String,
    pub(super) harness: String,
    /// The file's full path on the host, hex (paths are bytes).
    pub(super) path: String,
    /// Bytes cached: the data file's size.
    pub(super) size: u64,
    /// The file's mtime as the listing that fetched it said (seconds since the epoch), when
    /// that listing's size is the cached size (`None`: the file grew while it was fetched, so
    /// the listed mtime may be older than the bytes cached).
    pub(super) mtime: Option<i64>,
    /// The file's inode number as that listing said, on the same terms as `mtime` (`None` also
    /// where the host's listing gives none).
    pub(super) inode: Option<u64>,
    /// The file's ctime as that listing said, on the same terms as `inode`.
    pub(super) ctime: Option<i64>,
    /// hash16 of the head window, hex.
    pub(super) head: String,
    /// hash16 of the window ending at `size`, hex.
    pub(super) tail: String,
    /// Last use, seconds since the epoch.
    pub(super) used: u64,
}

impl Meta {
    /// The metadata of `bytes`, the cached content of a file.
    pub(super) fn describe(
        host: &str,
        harness: &str,
        path: &[u8],
        bytes: &[u8],
        listed: Option<Listed>,
        used: u64,
    ) -> Meta {
        let size = bytes.len() as u64;
        let [head, tail] = windows(size);
        Meta {
            version: META_VERSION,
            host: host.to_string(),
            harness: harness.to_string(),
            path: hex(path),
            size,
            mtime: listed.map(|l| l.mtime),
            inode: listed.and_then(|l| l.inode),
            ctime: listed.and_then(|l| l.ctime),
            head: hex(&hash16(slice(bytes, head))),
            tail: hex(&hash16(slice(bytes, tail))),
            used,
        }
    }

    /// The path, decoded (an undecodable one reads as empty: the entry is dropped).
    pub(super) fn path_bytes(&self) -> Vec<u8> {
        unhex(&self.path).unwrap_or_default()
    }

    /// Whether `head` and `tail`, the windows of a file as read now, are the cached ones.
    pub(super) fn windows_match(&self, head: &[u8], tail: &[u8]) -> bool {
        hex(&hash16(head)) == self.head && hex(&hash16(tail)) == self.tail
    }
}

/// What the listing said of a file besides its size, kept with the bytes of the size it listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Listed {
    pub(super) mtime: i64,
    pub(super) inode: Option<u64>,
    pub(super) ctime: Option<i64>,
}

/// The verification windows of a file of `size` bytes: its first `HEAD_BYTES` and the last
/// `WINDOW_BYTES` before `size` (as cursors check their prefix).
pub(super) fn windows(size: u64) -> [ByteRange; 2] {
    let tail = size.min(WINDOW_BYTES);
    [
        ByteRange::new(0, size.min(HEAD_BYTES)),
        ByteRange::new(size - tail, tail),
    ]
}

fn slice(bytes: &[u8], range: ByteRange) -> &[u8] {
    &bytes[range.start as usize..range.end() as usize]
}

/// The cache directory.
#[derive(Debug)]
pub(super) struct Store {
    dir: PathBuf,
}

impl Store {
    /// The store in `dir`, made (0700, with any missing parent) when missing.
    pub(super) fn open(dir: PathBuf) -> Result<Store, CacheError> {
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&dir).map_err(|e| io_error(&dir, &e))?;
        Ok(Store { dir })
    }

    /// The store in `dir`, made or not (for listing and clearing only).
    pub(super) fn at(dir: PathBuf) -> Store {
        Store { dir }
    }

    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of a file: hex blake3 of host, harness and full path, each length-prefixed.
    pub(super) fn key(host: &str, harness: &str, path: &[u8]) -> String {
        let mut hasher = blake3::Hasher::new();
        for part in [host.as_bytes(), harness.as_bytes(), path] {
            hasher.update(&(part.len() as u64).to_be_bytes());
            hasher.update(part);
        }
        hasher.finalize().to_hex().to_string()
    }

    fn file(&self, key: &str, kind: &str) -> PathBuf {
        self.dir.join(format!("{key}.{kind}"))
    }

    /// Takes the entry's lock without waiting: `None` when another fetch (of this process or
    /// another) holds it.
    pub(super) fn try_lock_entry(&self, key: &str) -> io::Result<Option<File>> {
        let file = open_regular(
            &self.file(key, LOCK),
            create_options().read(true).write(true),
        )?;
        match file.try_lock() {
            Ok(()) => Ok(Some(file)),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(e)) => Err(e),
        }
    }

    /// Takes the directory's lock (evicting, clearing), waiting for it.
    pub(super) fn lock_dir(&self) -> Result<File, CacheError> {
        let path = self.dir.join(LOCK);
        let file = open_regular(&path, create_options().read(true).write(true))
            .map_err(|e| io_error(&path, &e))?;
        file.lock().map_err(|e| io_error(&path, &e))?;
        Ok(file)
    }

    /// The entry's metadata, if it parses (and names a file at all).
    pub(super) fn read_meta(&self, key: &str) -> Option<Meta> {
        let mut text = Vec::new();
        open_regular(&self.file(key, META), OpenOptions::new().read(true))
            .ok()?
            .read_to_end(&mut text)
            .ok()?;
        let meta: Meta = serde_json::from_slice(&text).ok()?;
        (meta.version == META_VERSION && unhex(&meta.path).is_some()).then_some(meta)
    }

    /// The entry's data file, open to read and append (the caller holds its lock).
    pub(super) fn open_data(&self, key: &str) -> io::Result<File> {
        open_regular(
            &self.file(key, DATA),
            OpenOptions::new().read(true).append(true),
        )
    }

    /// The digest of the first `len` bytes of the entry's data file in `algorithm` (an error
    /// when it holds fewer).
    pub(super) fn data_digest(
        &self,
        key: &str,
        len: u64,
        algorithm: clankie_host::digest::Algorithm,
    ) -> io::Result<String> {
        let data = open_regular(&self.file(key, DATA), OpenOptions::new().read(true))?;
        let (digest, read) = algorithm.digest_reader(&data, len)?;
        if read != len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the data file is shorter than its metadata",
            ));
        }
        Ok(digest)
    }

    /// The metadata of the entry of `key` for this file, when it and the data file are sound;
    /// an entry that is not is removed (the caller holds its lock).
    pub(super) fn load(&self, key: &str, host: &str, harness: &str, path: &[u8]) -> Option<Meta> {
        let sound = self.read_meta(key).filter(|m| {
            m.host == host && m.harness == harness && m.path_bytes() == path && m.size > 0
        });
        let loaded = sound.and_then(|meta| {
            let data = open_regular(&self.file(key, DATA), OpenOptions::new().read(true)).ok()?;
            let len = data.metadata().ok()?.len();
            let [head, tail] = windows(meta.size);
            let head = read_range(&data, head).ok()?;
            let tail = read_range(&data, tail).ok()?;
            // A data file longer than its metadata says is an append that did not finish.
            (len == meta.size && meta.windows_match(&head, &tail)).then_some(meta)
        });
        if loaded.is_none() {
            self.remove(key);
        }
        loaded
    }

    /// A new temporary file in the cache directory (0600), for data fetched whole; it becomes
    /// an entry's data file by [`Store::publish`], or vanishes when dropped.
    pub(super) fn temp(&self) -> io::Result<tempfile::NamedTempFile> {
        tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .tempfile_in(&self.dir)
    }

    /// Makes `data` the entry's data file and `meta` its metadata.
    pub(super) fn publish(
        &self,
        key: &str,
        data: tempfile::NamedTempFile,
        meta: &Meta,
    ) -> io::Result<()> {
        // The metadata goes first: between the two renames, the old data with the new
        // metadata fails the size or window check and is dropped, never served.
        self.write_meta(key, meta)?;
        data.persist(self.file(key, DATA)).map_err(|e| e.error)?;
        Ok(())
    }

    /// Replaces the entry's metadata (write to a temporary file, then rename).
    pub(super) fn write_meta(&self, key: &str, meta: &Meta) -> io::Result<()> {
        let mut temp = self.temp()?;
        serde_json::to_writer(&mut temp, meta)?;
        temp.write_all(b"\n")?;
        temp.persist(self.file(key, META)).map_err(|e| e.error)?;
        Ok(())
    }

    /// Removes an entry's files (those that exist).
    pub(super) fn remove(&self, key: &str) {
        for kind in [META, DATA] {
            let _ = fs::remove_file(self.file(key, kind));
        }
    }

    /// Removes an entry's lock file too (its holder is the caller).
    pub(super) fn remove_lock(&self, key: &str) {
        let _ = fs::remove_file(self.file(key, LOCK));
    }

    /// The keys of every entry present (by its metadata, data or lock file), with its
    /// metadata when that parses, and its data file's size.
    pub(super) fn scan(&self) -> Result<Vec<(String, Option<Meta>, u64)>, CacheError> {
        let mut keys = std::collections::BTreeSet::new();
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error(&self.dir, &e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| io_error(&self.dir, &e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some((key, kind)) = name.split_once('.')
                && is_key(key)
                && [DATA, META, LOCK].contains(&kind)
            {
                keys.insert(key.to_string());
            }
        }
        Ok(keys
            .into_iter()
            .map(|key| {
                let meta = self.read_meta(&key);
                let bytes = fs::metadata(self.file(&key, DATA)).map_or(0, |m| m.len());
                (key, meta, bytes)
            })
            .collect())
    }

    /// Removes the temporary files left by runs that ended before renaming them.
    pub(super) fn remove_temps(&self) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

/// Whether `dir` is safe to keep a cache in: owned by the user, not group- or world-writable,
/// and not reached through a symlink owned by another user (root's are trusted: `/tmp` on
/// macOS). The reason it is not, as the user reads it.
#[cfg(unix)]
pub(super) fn check_safe(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let uid = nix::unistd::getuid().as_raw();
    let mut walked = PathBuf::new();
    for component in dir.components() {
        walked.push(component);
        let Ok(meta) = fs::symlink_metadata(&walked) else {
            continue;
        };
        if meta.file_type().is_symlink() && meta.uid() != uid && meta.uid() != 0 {
            return Err(format!(
                "reached through {}, a symlink owned by another user (uid {})",
                walked.display(),
                meta.uid()
            ));
        }
    }
    let meta = fs::metadata(dir).map_err(|e| e.to_string())?;
    if !meta.is_dir() {
        return Err("not a directory".to_string());
    }
    if meta.uid() != uid {
        return Err(format!(
            "owned by another user (uid {}, not {uid})",
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "group- or world-writable (mode {:o})",
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

/// Other systems keep no owners this checks.
#[cfg(not(unix))]
pub(super) fn check_safe(_dir: &Path) -> Result<(), String> {
    Ok(())
}

/// Opens `path` with `options` only when it is a regular file: never through a symlink, never
/// blocking on a FIFO or device (which is then refused).
fn open_regular(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    #[cfg(unix)]
    {
        use rustix::fs::OFlags;
        std::os::unix::fs::OpenOptionsExt::custom_flags(
            options,
            (OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32,
        );
    }
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a regular file",
        ));
    }
    Ok(file)
}

/// Options that create a file 0600 (on Unix), when it is missing.
fn create_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
}

fn is_key(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Reads `range` of `file` (which must hold it).
pub(super) fn read_range(mut file: &File, range: ByteRange) -> io::Result<Vec<u8>> {
    let mut out = vec![0; range.len as usize];
    file.seek(SeekFrom::Start(range.start))?;
    file.read_exact(&mut out)?;
    Ok(out)
}

pub(super) fn io_error(path: &Path, e: &io::Error) -> CacheError {
    CacheError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

pub(super) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}
