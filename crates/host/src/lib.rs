//! Hosts: the I/O layer. A host answers exactly two primitives — list the transcript files
//! under a set of harness roots, and read byte ranges of one of them — and never interprets
//! transcript content. Depends on `clankie_model` only among our crates, never on the engine.
//!
//! This root is the crate's front door: [`open`] builds a host from a [`HostConfig`] (its name,
//! transport and shell), [`AnyHost`] is every kind of host, [`Host`] the two primitives. The
//! kinds: [`local`] (this machine's filesystem), [`ssh`] (generated [`script`]s over one SSH
//! connection) and [`memory`] (a map of files, for tests of what reads through a host).

pub mod digest;
pub mod local;
pub mod memory;
pub mod script;
pub mod ssh;
pub mod unzstd;
#[cfg(windows)]
pub mod windows_shims;

pub use script::{Dialect, ReadEnds, TailFit};

use std::path::Path;

use clankie_model::limits::MAX_READ_BYTES;
use clankie_model::{ByteRange, Harness, Listing, PathHint, ReadResult, RootSpec};
use local::LocalHost;
use ssh::SshHost;

/// A file to read: a resolved root (as a listing returned it) and a path relative to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRef {
    pub harness: Harness,
    pub root: Vec<u8>,
    pub rel: Vec<u8>,
}

/// A file's two ends as a listing read them along ([`Host::list_reading_ends`]): its first
/// `head.len()` and last `tail.len()` bytes when it was `size` bytes long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEnds {
    pub size: u64,
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
}

/// The ranges of a read planned before the file's size is known: fixed ranges (from a
/// cursor), or ranges counted from the file's end (a tail), which the host computes from the
/// size it finds and the decoder recomputes from the size the reply reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FirstRead {
    Ranges(Vec<ByteRange>),
    /// `[0, head)` and `[max(0, size - back), size + ahead)`: the planner's first tail read.
    Tail {
        head: u64,
        back: u64,
        ahead: u64,
    },
}

impl FirstRead {
    /// The ranges read from a file of `size` bytes.
    pub fn ranges(&self, size: u64) -> Vec<ByteRange> {
        match self {
            FirstRead::Ranges(ranges) => ranges.clone(),
            FirstRead::Tail { head, back, ahead } => {
                let start = size.saturating_sub(*back);
                vec![
                    ByteRange::new(0, *head),
                    ByteRange::new(start, size - start + ahead),
                ]
            }
        }
    }
}

/// Ranges of the top files of the roots of one harness that [`Host::find_and_read`] reads
/// when no path below a subdir holds the id: `ranges[k]` of the `k`-th top file the root
/// lists (the layout's `top_files` in their order, or the database variable's file and its
/// `-wal`), each file that is there read as [`Host::read`] reads it. The host does not look
/// inside: the caller says what a later read would ask first (a database's headers and first
/// pages) and is answered in the same round trip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopReads {
    pub harness: Harness,
    pub ranges: Vec<Vec<ByteRange>>,
}

/// What [`Host::find_and_read`] found: the files under the roots whose path holds the id,
/// and, when exactly one transcript file matched, the first read of it (or why it failed).
#[derive(Debug)]
pub struct Found {
    pub listing: Listing,
    /// The file read and its first read: the one file below a subdir whose name holds the id,
    /// else the one whose path does, when there is one.
    pub read: Option<(clankie_model::FileEntry, Result<ReadResult, HostError>)>,
    /// When no path below a subdir held the id: the top files read as the [`TopReads`] asked
    /// (each as the listing names it), with what was read of each or why not. A top file that
    /// is not here was not there (or the host does not read them in the same call).
    pub tops: Vec<(clankie_model::FileEntry, Result<ReadResult, HostError>)>,
}

/// A digest of the first bytes of a file, as [`Host::hash_prefixes`] computed it where the
/// file lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hashed {
    /// The file's size when it was hashed: a digest of fewer bytes than asked when smaller.
    pub size: u64,
    pub algorithm: digest::Algorithm,
    /// As the algorithm's tool prints it ([`digest::Algorithm::digest`]).
    pub digest: String,
}

/// Errors a host reports. Each message is the one line a user reads.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{host}: cannot connect: {reason}")]
    Unreachable { host: String, reason: String },
    /// A remote step broke its time bound (a host that accepted the command, then stalled).
    #[error("{host}: {reason}; giving up")]
    TimedOut { host: String, reason: String },
    #[error("{host}: ssh config: {reason}")]
    SshConfig { host: String, reason: String },
    #[error("{host}: authentication failed: {reason}")]
    Auth { host: String, reason: String },
    #[error(
        "{host}: host key for {key_host} is not known ({fingerprint}); connect once with `ssh` to check and add it, or set StrictHostKeyChecking accept-new"
    )]
    HostKeyUnknown {
        host: String,
        key_host: String,
        fingerprint: String,
    },
    #[error(
        "{host}: HOST KEY CHANGED for {key_host}: got {fingerprint}, known_hosts has another key at {known_hosts_line}; refusing (possible man-in-the-middle)"
    )]
    HostKeyChanged {
        host: String,
        key_host: String,
        fingerprint: String,
        known_hosts_line: String,
    },
    #[error(
        "{host}: host key {fingerprint} for {key_host} is marked @revoked at {known_hosts_line}"
    )]
    HostKeyRevoked {
        host: String,
        key_host: String,
        fingerprint: String,
        known_hosts_line: String,
    },
    #[error("{host}: remote shell is not clean (no framed reply); it printed: {first_bytes}")]
    ShellNotClean { host: String, first_bytes: String },
    /// A reply that breaks the wire format (bad framing, a line out of place, invalid or cut-off
    /// base64 or hex): the host's fault, like an unreachable one.
    #[error("{host}: bad reply from remote script: {reason}")]
    Protocol { host: String, reason: String },
    /// A reply over a cap (its bytes, its entries, the size its payload decodes to): refused
    /// unread, like an oversized source.
    #[error("{host}: reply too large: {reason}")]
    ReplyTooLarge { host: String, reason: String },
    #[error("{host}: refused path {path}: {reason}")]
    PathRefused {
        host: String,
        path: String,
        reason: String,
    },
    #[error("{host}: {path}: no such file")]
    NotFound { host: String, path: String },
    #[error("{host}: {path}: {reason}")]
    Io {
        host: String,
        path: String,
        reason: String,
    },
}

impl HostError {
    /// Whether this error is the host's as a whole, not one file's: it could not be reached,
    /// refused who we are, or stalled. A batch of reads (or a listing's side reads) stops at
    /// such an error; any other is the one file's and the rest go on.
    pub fn is_host_wide(&self) -> bool {
        matches!(
            self,
            HostError::Unreachable { .. } | HostError::Auth { .. } | HostError::TimedOut { .. }
        )
    }
}

/// How a host is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// This machine, through its filesystem.
    Local,
    /// An SSH destination: an alias from the SSH config, `user@host` or `user@host:port`.
    Ssh(String),
}

/// What opening a host takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostConfig {
    /// The name the user addressed the host by (`local`, `devbox`); messages start with it.
    pub name: String,
    pub transport: Transport,
    /// The dialect of the scripts it is sent. `None` is `shell = "auto"`: POSIX first, and
    /// PowerShell when the host has no `sh` (settled on the first call). A local host runs no
    /// script and ignores it.
    pub shell: Option<Dialect>,
}

impl HostConfig {
    /// A host the hosts file does not name: `[user@]alias` for the user's SSH config or DNS,
    /// shell detected.
    pub fn ssh(name: &str) -> HostConfig {
        HostConfig {
            name: name.to_string(),
            transport: Transport::Ssh(name.to_string()),
            shell: None,
        }
    }

    /// The shell as the hosts file spells it: `auto`, `posix` or `powershell`.
    pub fn shell_name(&self) -> &'static str {
        self.shell.map_or("auto", Dialect::name)
    }
}

/// Builds the host `config` describes. Nothing is connected yet (an SSH host connects on its
/// first call), but an SSH destination is resolved now against `ssh_config` (`ssh -F FILE`,
/// else `~/.ssh/config`), so a bad configuration fails here; except where the built-in
/// parser's ControlPath holds a socket: there `ssh -G` runs while the first command goes to
/// that master, and a configuration `ssh -G` refuses fails that first call
/// ([`ssh::resolve_ahead`]).
pub fn open(config: &HostConfig, ssh_config: Option<&Path>) -> Result<AnyHost, HostError> {
    Ok(match &config.transport {
        Transport::Local => AnyHost::Local(LocalHost::new(config.name.as_str())),
        Transport::Ssh(destination) => {
            let resolution = ssh::resolve_ahead(destination, ssh_config)?;
            AnyHost::Ssh(Box::new(SshHost::resolving(
                config.name.as_str(),
                resolution,
                config.shell,
            )))
        }
    })
}

/// A listing, the files read whole with it, and the larger files' ends
/// ([`Host::list_reading_ends`]).
pub type ListedAlong = (
    Listing,
    Vec<(FileRef, ReadResult)>,
    Vec<(FileRef, FileEnds)>,
);

/// The two primitives every host answers.
///
/// `async fn` in a trait is fine here: hosts run on one tokio runtime and are used through
/// generics or the `AnyHost` enum, never as `dyn Host`.
#[allow(async_fn_in_trait)]
pub trait Host {
    /// The name the user addressed this host by (`local`, `devbox`).
    fn name(&self) -> &str;

    /// Lists the transcript files under each root (per the harness's `ListSpec`).
    async fn list(&self, roots: &[RootSpec]) -> Result<Listing, HostError>;

    /// [`Host::list`], and the whole of small files it found (each at most `max_file` bytes)
    /// read in the same call where the host can (a first `check`, which reads every session:
    /// no batch has to name them). What is read is a read of `[0, size)` of the file, `size`
    /// its true size then; a file left out (over a budget, a name the host cannot read along,
    /// one that changed while it was read) is read the usual way. The default lists and reads
    /// nothing.
    async fn list_reading(
        &self,
        roots: &[RootSpec],
        max_file: u64,
    ) -> Result<(Listing, Vec<(FileRef, ReadResult)>), HostError> {
        let _ = max_file;
        Ok((self.list(roots).await?, Vec::new()))
    }

    /// [`Host::list_reading`], and of each larger file below a subdir its first `ends.head`
    /// bytes and its last bytes ([`FileEnds`]: `ends.tail` of them, or as many as
    /// `ends.fit` sizes to its last lines where the host measures them), where the host can
    /// read them in the same call (a first `check`: each session's head hash and newest
    /// record, without a process per file). A file left out is read the usual way. The
    /// default reads no ends.
    async fn list_reading_ends(
        &self,
        roots: &[RootSpec],
        max_file: u64,
        ends: ReadEnds,
    ) -> Result<ListedAlong, HostError> {
        let _ = ends;
        let (listing, reads) = self.list_reading(roots, max_file).await?;
        Ok((listing, reads, Vec::new()))
    }

    /// Reads follow that each wait on the one before (a database's B-tree levels, and the
    /// polls of a `--follow` of it): a host whose every call starts processes of its own keeps
    /// one running for them from now on, for as long as its connection (an SSH host: a kept
    /// `sh -s`, `ssh/kept_shell.rs`). A plain read of a file never asks for it: opening one
    /// costs more than it saves there. The default does nothing.
    async fn keep_for_reads(&self) {}

    /// Reads byte ranges of one file (at most `MAX_READ_BYTES` in all) and the file's true size.
    async fn read(&self, file: &FileRef, ranges: &[ByteRange]) -> Result<ReadResult, HostError>;

    /// Most bytes a [`Host::read_many`] call is best asked at once: what one batched exec reads
    /// on a host that batches (the default: one read call's `MAX_READ_BYTES`).
    fn read_many_bytes(&self) -> u64 {
        MAX_READ_BYTES
    }

    /// Reads ranges of several files, one result per file in order (one file's failure is its
    /// own). The default reads them one by one; a host that can, batches them into few round
    /// trips, each request within `MAX_READ_BYTES` of aligned blocks.
    async fn read_many(
        &self,
        reads: &[(FileRef, Vec<ByteRange>)],
    ) -> Result<Vec<Result<ReadResult, HostError>>, HostError> {
        let mut out = Vec::with_capacity(reads.len());
        for (file, ranges) in reads {
            match self.read(file, ranges).await {
                Err(e) if e.is_host_wide() => return Err(e),
                result => out.push(result),
            }
        }
        Ok(out)
    }

    /// Lists only the transcript files under `roots` whose path below the root holds `id`
    /// (databases and other top files are listed as usual), and when exactly one file below a
    /// subdir matched, reads `first` of it: resolving a session and reading its first range in
    /// one round trip. `id` is a session id (letters, digits, `-`, `_`, `.`, `+`). A `hint`
    /// (where the session's file was) lets a host skip looking for it when the file is still
    /// there; the listing is then that file alone. When no file below a subdir matched, a host
    /// may also read `tops` of the top files it lists ([`Found::tops`]). The default lists and
    /// reads in two calls, and reads no top file.
    async fn find_and_read(
        &self,
        roots: &[RootSpec],
        id: &str,
        first: &FirstRead,
        hint: Option<&PathHint>,
        tops: &[TopReads],
    ) -> Result<Found, HostError> {
        let _ = (hint, tops);
        default_find_and_read(self, roots, id, first).await
    }

    /// Hashes the first `len` bytes of each file where it lies (with the checks `read` makes),
    /// one result per file in order (one file's failure is its own), with the strongest
    /// algorithm the host has ([`digest::Algorithm`]): `grep --verify` compares them with its
    /// cached copies without moving the bytes. `None`: the host has no hash tool (the
    /// default).
    async fn hash_prefixes(
        &self,
        files: &[(FileRef, u64)],
    ) -> Result<Option<Vec<Result<Hashed, HostError>>>, HostError> {
        let _ = files;
        Ok(None)
    }

    /// Opens a file of this machine, with the checks `read` makes, for a caller that goes
    /// through it from start to end on a thread of its own (grep: positioned reads into one
    /// buffer it reuses cost a third of `read`'s fresh chunks). `None` (the default): this
    /// host's files are not this machine's; read them through `read`.
    async fn open_local(&self, file: &FileRef) -> Result<Option<LocalFile>, HostError> {
        let _ = file;
        Ok(None)
    }
}

/// A file of this machine opened by [`Host::open_local`].
#[derive(Debug)]
pub struct LocalFile {
    /// Open for reading, positioned at its start.
    pub file: std::fs::File,
    /// Its size when it was opened.
    pub size: u64,
}

/// [`Host::find_and_read`] in two calls: list, then read the one match.
pub async fn default_find_and_read<H: Host + ?Sized>(
    host: &H,
    roots: &[RootSpec],
    id: &str,
    first: &FirstRead,
) -> Result<Found, HostError> {
    let mut listing = host.list(roots).await?;
    Ok(narrow_and_read(host, &mut listing, id, first).await)
}

/// Keeps the files of a full listing that [`Host::find_and_read`] would have found, and reads
/// `first` of the one below a subdir, if there is exactly one.
pub async fn narrow_and_read<H: Host + ?Sized>(
    host: &H,
    listing: &mut Listing,
    id: &str,
    first: &FirstRead,
) -> Found {
    let below = |f: &clankie_model::FileEntry| f.rel.contains(&b'/');
    listing.files.retain(|f| {
        !below(f) || id.is_empty() || f.rel.windows(id.len()).any(|w| w == id.as_bytes())
    });
    let by_path: Vec<&clankie_model::FileEntry> =
        listing.files.iter().filter(|f| below(f)).collect();
    let name_of = |f: &clankie_model::FileEntry| {
        f.rel
            .rsplit(|&b| b == b'/')
            .next()
            .unwrap_or_default()
            .to_vec()
    };
    let by_name: Vec<&clankie_model::FileEntry> = by_path
        .iter()
        .copied()
        .filter(|f| {
            name_of(f)
                .windows(id.len().max(1))
                .any(|w| w == id.as_bytes())
        })
        .collect();
    let hit = match (by_name.as_slice(), by_path.as_slice()) {
        ([one], _) | ([], [one]) => Some((*one).clone()),
        _ => None,
    };
    let read = match hit {
        Some(entry) => {
            let file = FileRef {
                harness: entry.harness,
                root: entry.root.to_vec(),
                rel: entry.rel.clone(),
            };
            let result = host.read(&file, &first.ranges(entry.size)).await;
            Some((entry, result))
        }
        None => None,
    };
    Found {
        listing: std::mem::take(listing),
        read,
        tops: Vec::new(),
    }
}

/// Whether a session id may be put in a script's path pattern: what `valid_id` allows.
pub fn is_plain_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 256
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'+'))
}

/// Every kind of host, for callers that pick one at run time.
#[derive(Debug)]
pub enum AnyHost {
    Local(local::LocalHost),
    Ssh(Box<ssh::SshHost>),
}

impl AnyHost {
    /// Notes for `-v` (such as a shell dialect switch), each returned once.
    pub fn take_notes(&self) -> Vec<String> {
        match self {
            AnyHost::Ssh(h) => h.take_notes(),
            AnyHost::Local(_) => Vec::new(),
        }
    }

    /// Sets the time bounds of each remote command (no-op for local: nothing remote).
    pub fn set_reply_timeouts(&mut self, timeouts: ssh::ReplyTimeouts) {
        if let AnyHost::Ssh(h) = self {
            h.set_reply_timeouts(timeouts);
        }
    }

    /// Keeps a shell running on the host's connection for the scripts of later calls (SSH
    /// hosts; see [`ssh::SshHost::keep_shell`]): for a host that is polled.
    pub fn keep_shell(&mut self) {
        if let AnyHost::Ssh(h) = self {
            h.keep_shell();
        }
    }

    /// Forgets a dropped connection so the next call opens a new one (no-op for local).
    pub async fn disconnect(&self) {
        if let AnyHost::Ssh(h) = self {
            h.disconnect().await;
        }
    }
}

impl Host for AnyHost {
    fn name(&self) -> &str {
        match self {
            AnyHost::Local(h) => h.name(),
            AnyHost::Ssh(h) => h.name(),
        }
    }

    async fn list(&self, roots: &[RootSpec]) -> Result<Listing, HostError> {
        match self {
            AnyHost::Local(h) => h.list(roots).await,
            AnyHost::Ssh(h) => h.list(roots).await,
        }
    }

    async fn list_reading(
        &self,
        roots: &[RootSpec],
        max_file: u64,
    ) -> Result<(Listing, Vec<(FileRef, ReadResult)>), HostError> {
        match self {
            AnyHost::Local(h) => h.list_reading(roots, max_file).await,
            AnyHost::Ssh(h) => h.list_reading(roots, max_file).await,
        }
    }

    async fn list_reading_ends(
        &self,
        roots: &[RootSpec],
        max_file: u64,
        ends: ReadEnds,
    ) -> Result<ListedAlong, HostError> {
        match self {
            AnyHost::Local(h) => h.list_reading_ends(roots, max_file, ends).await,
            AnyHost::Ssh(h) => h.list_reading_ends(roots, max_file, ends).await,
        }
    }

    async fn keep_for_reads(&self) {
        match self {
            AnyHost::Local(h) => h.keep_for_reads().await,
            AnyHost::Ssh(h) => h.keep_for_reads().await,
        }
    }

    async fn read(&self, file: &FileRef, ranges: &[ByteRange]) -> Result<ReadResult, HostError> {
        match self {
            AnyHost::Local(h) => h.read(file, ranges).await,
            AnyHost::Ssh(h) => h.read(file, ranges).await,
        }
    }

    fn read_many_bytes(&self) -> u64 {
        match self {
            AnyHost::Local(h) => h.read_many_bytes(),
            AnyHost::Ssh(h) => h.read_many_bytes(),
        }
    }

    async fn read_many(
        &self,
        reads: &[(FileRef, Vec<ByteRange>)],
    ) -> Result<Vec<Result<ReadResult, HostError>>, HostError> {
        match self {
            AnyHost::Local(h) => h.read_many(reads).await,
            AnyHost::Ssh(h) => h.read_many(reads).await,
        }
    }

    async fn find_and_read(
        &self,
        roots: &[RootSpec],
        id: &str,
        first: &FirstRead,
        hint: Option<&PathHint>,
        tops: &[TopReads],
    ) -> Result<Found, HostError> {
        match self {
            AnyHost::Local(h) => h.find_and_read(roots, id, first, hint, tops).await,
            AnyHost::Ssh(h) => h.find_and_read(roots, id, first, hint, tops).await,
        }
    }

    async fn hash_prefixes(
        &self,
        files: &[(FileRef, u64)],
    ) -> Result<Option<Vec<Result<Hashed, HostError>>>, HostError> {
        match self {
            AnyHost::Local(h) => h.hash_prefixes(files).await,
            AnyHost::Ssh(h) => h.hash_prefixes(files).await,
        }
    }

    async fn open_local(&self, file: &FileRef) -> Result<Option<LocalFile>, HostError> {
        match self {
            AnyHost::Local(h) => h.open_local(file).await,
            AnyHost::Ssh(h) => h.open_local(file).await,
        }
    }
}

/// Checks a relative path the way every host must before touching it: non-empty, relative,
/// `/`-separated, no empty, `.` or `..` component, no NUL. Every other byte is a legal POSIX
/// name byte: a backslash too (Claude names project directories after the working directory,
/// which may hold one), and LF and CR. Windows hosts refuse what Windows cannot hold
/// themselves ([`script::powershell`]). Returns a reason on refusal.
pub fn check_relative_path(rel: &[u8]) -> Result<(), &'static str> {
    if rel.is_empty() {
        return Err("empty path");
    }
    if rel.contains(&0) {
        return Err("NUL byte in path");
    }
    if rel[0] == b'/' {
        return Err("not a relative path");
    }
    for component in rel.split(|&b| b == b'/') {
        match component {
            b"" => return Err("empty path component"),
            b"." | b".." => return Err("`.` or `..` in path"),
            _ => {}
        }
    }
    Ok(())
}

/// Total requested bytes must stay within the per-call cap.
pub fn check_ranges(ranges: &[ByteRange]) -> Result<(), &'static str> {
    let total: u64 = ranges
        .iter()
        .map(|r| r.len)
        .fold(0u64, |a, b| a.saturating_add(b));
    if total > MAX_READ_BYTES {
        Err("read request over 4 MiB")
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_confined() {
        assert!(check_relative_path(b"projects/a/b.jsonl").is_ok());
        assert!(check_relative_path(b"projects/it's $(x)/b.jsonl").is_ok());
        assert!(check_relative_path(b"projects/C:\\w\\p/\r\n\x1b.jsonl").is_ok());
        for bad in [
            &b""[..],
            b"/etc/passwd",
            b"a/../b",
            b"..",
            b"a//b",
            b"./a",
            b"a\0b",
        ] {
            assert!(
                check_relative_path(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn range_cap() {
        assert!(check_ranges(&[ByteRange::new(0, MAX_READ_BYTES)]).is_ok());
        assert!(check_ranges(&[ByteRange::new(0, MAX_READ_BYTES), ByteRange::new(0, 1)]).is_err());
    }

    #[test]
    fn opens_local_hosts_by_their_name() {
        let config = HostConfig {
            name: "here".into(),
            transport: Transport::Local,
            shell: None,
        };
        let host = open(&config, None).unwrap();
        assert!(matches!(host, AnyHost::Local(_)));
        assert_eq!(host.name(), "here");
    }

    #[test]
    fn shell_names_are_the_hosts_file_spelling() {
        let mut config = HostConfig::ssh("me@box");
        assert_eq!(config.transport, Transport::Ssh("me@box".into()));
        assert_eq!(config.shell_name(), "auto");
        config.shell = Some(Dialect::Posix);
        assert_eq!(config.shell_name(), "posix");
        config.shell = Some(Dialect::PowerShell);
        assert_eq!(config.shell_name(), "powershell");
        for dialect in Dialect::ALL {
            assert_eq!(Dialect::from_name(dialect.name()), Some(dialect));
        }
        assert_eq!(Dialect::from_name("auto"), None);
    }
}

/// What the host tests share: harness tags as the engine's registry makes them (the engine is
/// a dev-dependency only: hosts never use it).
#[cfg(test)]
pub(crate) mod test_support {
    use clankie_model::{Harness, RootSpec};

    /// The harness users call `name`.
    pub(crate) fn harness(name: &str) -> Harness {
        clankie_engine::harness::by_name(name).unwrap()
    }

    /// Every harness, in display order.
    pub(crate) fn harnesses() -> Vec<Harness> {
        clankie_engine::harness::all().collect()
    }

    /// Every harness's default root: enough for decoding any list reply.
    pub(crate) fn roots() -> Vec<RootSpec> {
        harnesses().into_iter().map(RootSpec::default_for).collect()
    }
}
