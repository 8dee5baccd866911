//! The `local` host: the two primitives on this machine's filesystem, with `pread` and a
//! directory walk that never follows a symlink below a root.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io;
#[cfg(unix)]
use std::os::unix::ffi::OsStrExt;
#[cfg(unix)]
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::digest::Algorithm;
use super::{FileRef, Hashed, Host, HostError, LocalFile, check_ranges, check_relative_path};
#[cfg(windows)]
use crate::windows_shims::{MetadataExt, OsStrExt};
use clankie_model::{
    ByteRange, FileEntry, ListSpec, Listing, ListingBudget, ListingOverCap, ReadResult,
    ResolvedRoot, RootSpec, display_path,
};

/// Reads asking this many bytes or more run on the blocking pool (see [`LocalHost`]'s `read`).
const OFFLOAD_READ_BYTES: u64 = 1 << 20;

/// Reads transcripts on this machine. Roots default to the harnesses' own variables in this
/// process's environment, else `$HOME`.
#[derive(Debug, Clone)]
pub struct LocalHost {
    name: String,
}

impl LocalHost {
    pub fn new(name: impl Into<String>) -> LocalHost {
        LocalHost { name: name.into() }
    }

    /// Where a root is on this machine: the given directory, else the harness's variable, else
    /// `$HOME/<home_relative>`.
    pub fn resolve_root(&self, spec: &RootSpec) -> PathBuf {
        match &spec.dir {
            Some(dir) => PathBuf::from(OsStr::from_bytes(dir)),
            None => {
                let home = spec.harness.default_home();
                match home.env_var.and_then(std::env::var_os) {
                    Some(dir) if !dir.is_empty() => PathBuf::from(dir).join(home.env_relative),
                    _ => home_dir().join(home.home_relative),
                }
            }
        }
    }

    /// Where the harness's database variable ([`clankie_model::Harness::db_env`]) puts the
    /// database on this machine: `(directory, file name)`, for a default root only.
    pub(crate) fn db_override(&self, spec: &RootSpec) -> Option<(PathBuf, Vec<u8>)> {
        if spec.dir.is_some() {
            return None;
        }
        let value = std::env::var_os(spec.harness.db_env()?)?;
        let home = self.resolve_root(spec);
        let (dir, name) =
            clankie_model::db_override(home.as_os_str().as_bytes(), value.as_bytes())?;
        Some((PathBuf::from(OsStr::from_bytes(&dir)), name))
    }

    fn io_error(&self, path: &Path, err: io::Error) -> HostError {
        let path = display_path(path.as_os_str().as_bytes());
        if err.kind() == io::ErrorKind::NotFound {
            HostError::NotFound {
                host: self.name.clone(),
                path,
            }
        } else {
            HostError::Io {
                host: self.name.clone(),
                path,
                reason: err.to_string(),
            }
        }
    }

    fn refused(&self, path: &Path, reason: &str) -> HostError {
        HostError::PathRefused {
            host: self.name.clone(),
            path: display_path(path.as_os_str().as_bytes()),
            reason: reason.to_string(),
        }
    }

    /// Lists `roots`; a tree holding more than `budget` allows is
    /// [`HostError::ReplyTooLarge`], as an SSH host's reply would be.
    fn list_sync(
        &self,
        roots: &[RootSpec],
        mut budget: ListingBudget,
    ) -> Result<Listing, HostError> {
        let mut listing = Listing::default();
        let over_cap = |cap: ListingOverCap| HostError::ReplyTooLarge {
            host: self.name.clone(),
            reason: cap.to_string(),
        };
        for spec in roots {
            let list_spec = spec.harness.list_spec();
            let (dir, top_files): (PathBuf, Vec<Vec<u8>>) = match self.db_override(spec) {
                Some((dir, name)) => {
                    let mut wal = name.clone();
                    wal.extend_from_slice(b"-wal");
                    (dir, vec![name, wal])
                }
                None => (
                    self.resolve_root(spec),
                    list_spec
                        .top_files
                        .iter()
                        .map(|n| n.as_bytes().to_vec())
                        .collect(),
                ),
            };
            // The home itself may be a symlink (dotfile managers do that); below it, nothing is
            // followed.
            let Ok(canonical) = fs::canonicalize(&dir) else {
                listing.roots.push(ResolvedRoot {
                    harness: spec.harness,
                    dir: dir.as_os_str().as_bytes().to_vec(),
                    exists: false,
                });
                continue;
            };
            #[cfg(windows)]
            let canonical = crate::windows_shims::without_verbatim_prefix(canonical);
            let subdirs: Vec<&str> = list_spec
                .subdirs
                .iter()
                .copied()
                .filter(|sub| {
                    fs::symlink_metadata(canonical.join(sub))
                        .map(|m| m.is_dir())
                        .unwrap_or(false)
                })
                .collect();
            let mut tops = Vec::new();
            for name in top_files {
                let path = canonical.join(OsStr::from_bytes(&name));
                // Never followed, like everything below a root.
                if let Ok(meta) = fs::symlink_metadata(&path)
                    && meta.is_file()
                {
                    tops.push((name, meta));
                }
            }
            let exists = !subdirs.is_empty() || !tops.is_empty();
            let root_bytes: Arc<[u8]> = canonical.as_os_str().as_bytes().into();
            budget.add_root(root_bytes.len()).map_err(over_cap)?;
            for (rel, meta) in tops {
                budget.add_file(rel.len()).map_err(over_cap)?;
                listing.files.push(FileEntry {
                    harness: spec.harness,
                    root: root_bytes.clone(),
                    rel,
                    size: meta.len(),
                    mtime: meta.mtime(),
                    inode: inode_of(&meta),
                    ctime: ctime_of(&meta),
                });
            }
            listing.roots.push(ResolvedRoot {
                harness: spec.harness,
                dir: root_bytes.to_vec(),
                exists,
            });
            // A project tree (`ListSpec::PROJECT_TREE`, the empty subdir) is the root itself:
            // its paths start at its entries' names, and its tool trees are never entered.
            let project_tree = list_spec.walks_project_tree();
            let mut stack: Vec<(PathBuf, Vec<u8>, u32)> = subdirs
                .iter()
                .map(|sub| (canonical.join(sub), sub.as_bytes().to_vec(), 0u32))
                .collect();
            while let Some((dir, rel, depth)) = stack.pop() {
                // An unreadable directory is skipped, like `find` does; the rest still lists.
                let Ok(entries) = fs::read_dir(&dir) else {
                    continue;
                };
                for entry in entries.flatten() {
                    // Every byte but `/` and NUL may be in a name, LF and CR included: all are
                    // listed (the driver leaves out what is not UTF-8, with one line).
                    let name = entry.file_name();
                    let name = name.as_bytes();
                    let Ok(meta) = entry.path().symlink_metadata() else {
                        continue;
                    };
                    let mut child_rel = rel.clone();
                    if !child_rel.is_empty() {
                        child_rel.push(b'/');
                    }
                    child_rel.extend_from_slice(name);
                    if meta.is_dir() {
                        if depth < list_spec.max_depth
                            && !(project_tree && ListSpec::skips_project_dir(name))
                        {
                            stack.push((entry.path(), child_rel, depth + 1));
                        }
                    } else if meta.is_file() && list_spec.matches_name(name) {
                        budget.add_file(child_rel.len()).map_err(over_cap)?;
                        listing.files.push(FileEntry {
                            harness: spec.harness,
                            root: root_bytes.clone(),
                            rel: child_rel,
                            size: meta.len(),
                            mtime: meta.mtime(),
                            inode: inode_of(&meta),
                            ctime: ctime_of(&meta),
                        });
                    }
                }
            }
        }
        listing
            .files
            .sort_by(|a, b| (&a.root, &a.rel).cmp(&(&b.root, &b.rel)));
        Ok(listing)
    }

    /// Opens `rel` below `root` one component at a time, each relative to the directory opened
    /// before it and with `O_NOFOLLOW`, and returns the file's descriptor. What is read is
    /// then what that descriptor names: swapping a directory for a symlink while a read is
    /// under way cannot lead it out of the root, because no path below the root is resolved
    /// twice. (Checking each component with `lstat` and then opening the path by name left
    /// that window open.) A symlink anywhere below the root is refused, not only one that
    /// leads out: the listing never returns one, so the client has no business asking for it.
    #[cfg(unix)]
    fn open_beneath(&self, root: &Path, rel: &[u8], path: &Path) -> Result<File, HostError> {
        use rustix::fs::{Mode, OFlags, openat};
        use rustix::io::Errno;
        // The root itself may be a symlink (`~/.claude` kept elsewhere): it is the user's
        // choice, resolved once here.
        let canonical_root = fs::canonicalize(root).map_err(|e| self.io_error(root, e))?;
        let mut dir = rustix::fs::open(
            &canonical_root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| self.io_error(root, e.into()))?;
        let components: Vec<&[u8]> = rel.split(|&b| b == b'/').collect();
        let last = components.len() - 1;
        for (i, component) in components.iter().enumerate() {
            let name = OsStr::from_bytes(component);
            let flags = if i < last {
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
            } else {
                // NONBLOCK: a FIFO planted under the root must not hang the read.
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC
            };
            dir = match openat(&dir, name, flags, Mode::empty()) {
                Ok(fd) => fd,
                // O_NOFOLLOW on a symlink: ELOOP (Linux, macOS); O_DIRECTORY on a non-directory:
                // ENOTDIR. Tell the two apart for the message.
                Err(Errno::LOOP | Errno::NOTDIR) => {
                    let meta =
                        rustix::fs::statat(&dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW);
                    let is_link = meta.is_ok_and(|st| {
                        rustix::fs::FileType::from_raw_mode(st.st_mode)
                            == rustix::fs::FileType::Symlink
                    });
                    return Err(self.refused(
                        path,
                        if is_link {
                            "symlink below the harness root"
                        } else {
                            "not a directory"
                        },
                    ));
                }
                Err(e) => return Err(self.io_error(path, e.into())),
            };
        }
        Ok(File::from(dir))
    }

    /// Windows has no `openat`: each component below the root is checked with
    /// `symlink_metadata` (a symlink or a junction is refused, as on Unix), then the file is
    /// opened by its whole path. A directory swapped for a link between the check and the open
    /// is not caught here, unlike the Unix walk (`docs/platforms.md`).
    #[cfg(windows)]
    fn open_beneath(&self, root: &Path, rel: &[u8], path: &Path) -> Result<File, HostError> {
        let mut at = fs::canonicalize(root).map_err(|e| self.io_error(root, e))?;
        let components: Vec<&[u8]> = rel.split(|&b| b == b'/').collect();
        let last = components.len() - 1;
        for (i, component) in components.iter().enumerate() {
            at.push(OsStr::from_bytes(component));
            let meta = fs::symlink_metadata(&at).map_err(|e| self.io_error(path, e))?;
            if meta.file_type().is_symlink() {
                return Err(self.refused(path, "symlink below the harness root"));
            }
            if i < last && !meta.is_dir() {
                return Err(self.refused(path, "not a directory"));
            }
        }
        File::open(&at).map_err(|e| self.io_error(path, e))
    }

    /// Opens a file below its root (confined as [`Self::open_beneath`] says) and checks that it
    /// is a regular file.
    fn open_sync(&self, file: &FileRef) -> Result<LocalFile, HostError> {
        let root = PathBuf::from(OsStr::from_bytes(&file.root));
        let path = root.join(OsStr::from_bytes(&file.rel));
        check_relative_path(&file.rel).map_err(|reason| self.refused(&path, reason))?;
        let handle = self.open_beneath(&root, &file.rel, &path)?;
        let meta = handle.metadata().map_err(|e| self.io_error(&path, e))?;
        if !meta.is_file() {
            return Err(self.refused(&path, "not a regular file"));
        }
        Ok(LocalFile {
            file: handle,
            size: meta.len(),
        })
    }

    fn read_sync(&self, file: &FileRef, ranges: &[ByteRange]) -> Result<ReadResult, HostError> {
        self.read_sync_into(file, ranges, Vec::new())
    }

    /// [`Self::read_sync`], reading the first range into `first` (emptied; its capacity is
    /// kept when large enough).
    fn read_sync_into(
        &self,
        file: &FileRef,
        ranges: &[ByteRange],
        first: Vec<u8>,
    ) -> Result<ReadResult, HostError> {
        let mut first = Some(first);
        let path = PathBuf::from(OsStr::from_bytes(&file.root)).join(OsStr::from_bytes(&file.rel));
        check_ranges(ranges).map_err(|reason| self.refused(&path, reason))?;
        let LocalFile { file: handle, size } = self.open_sync(file)?;
        let mut chunks = Vec::with_capacity(ranges.len());
        for range in ranges {
            let start = range.start.min(size);
            let end = range.end().min(size);
            // Read into spare capacity, not a zeroed buffer: zeroing 4 MiB a call was a fifth
            // of `--all`'s time. A file truncated since fstat gives what exists (EOF ends it);
            // one that grew gives no more than the range.
            let mut buf = first.take().unwrap_or_default();
            buf.clear();
            buf.reserve_exact((end - start) as usize);
            let mut reader = &handle;
            io::Seek::seek(&mut reader, io::SeekFrom::Start(start))
                .and_then(|_| {
                    io::Read::read_to_end(&mut io::Read::take(reader, end - start), &mut buf)
                })
                .map_err(|e| self.io_error(&path, e))?;
            chunks.push(buf);
        }
        Ok(ReadResult { size, chunks })
    }
}

impl Host for LocalHost {
    fn name(&self) -> &str {
        &self.name
    }

    async fn list(&self, roots: &[RootSpec]) -> Result<Listing, HostError> {
        self.list_sync(roots, ListingBudget::default())
    }

    async fn read(&self, file: &FileRef, ranges: &[ByteRange]) -> Result<ReadResult, HostError> {
        // A big read goes to the runtime's blocking pool, so that a caller that reads its next
        // chunk while it works on this one (grep) has the copy out of the page cache run on
        // the other core; a small one (the thousands of heads of a listing) stays inline,
        // where a thread handoff would cost more than the read.
        let asked: u64 = ranges.iter().map(|r| r.len).sum();
        if asked < OFFLOAD_READ_BYTES || tokio::runtime::Handle::try_current().is_err() {
            return self.read_sync(file, ranges);
        }
        let (host, file, ranges) = (self.clone(), file.clone(), ranges.to_vec());
        // The first range's buffer is allocated here, on the thread that will also free it
        // once the chunk is parsed: mimalloc then hands the same memory to the next chunk,
        // where a buffer allocated on the pool's thread and freed here went back to that
        // thread's heap only later, and each chunk faulted in fresh pages.
        let first_len = ranges.first().map_or(0, |r| r.len);
        let first =
            Vec::with_capacity(first_len.min(clankie_model::limits::MAX_READ_BYTES) as usize);
        match tokio::task::spawn_blocking(move || host.read_sync_into(&file, &ranges, first)).await
        {
            Ok(result) => result,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }

    async fn open_local(&self, file: &FileRef) -> Result<Option<LocalFile>, HostError> {
        self.open_sync(file).map(Some)
    }

    /// Hashes each file here, opened as `read` opens it, with SHA-256.
    async fn hash_prefixes(
        &self,
        files: &[(FileRef, u64)],
    ) -> Result<Option<Vec<Result<Hashed, HostError>>>, HostError> {
        let hash = |file: &FileRef, len: u64| -> Result<Hashed, HostError> {
            let LocalFile { file: handle, size } = self.open_sync(file)?;
            let (digest, _) = Algorithm::Sha256.digest_reader(&handle, len).map_err(|e| {
                let path =
                    PathBuf::from(OsStr::from_bytes(&file.root)).join(OsStr::from_bytes(&file.rel));
                self.io_error(&path, e)
            })?;
            Ok(Hashed {
                size,
                algorithm: Algorithm::Sha256,
                digest,
            })
        };
        Ok(Some(
            files.iter().map(|(file, len)| hash(file, *len)).collect(),
        ))
    }
}

/// `$HOME`, else (Windows) `%USERPROFILE%`, else `/`. (A host without a home has no default
/// harness roots worth reading.)
pub fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        // Windows sets USERPROFILE (`C:\Users\me`, where the harnesses keep `.claude`,
        // `.codex`…); HOME only under MSYS or Cygwin.
        .or_else(|| std::env::var_os("USERPROFILE").filter(|h| cfg!(windows) && !h.is_empty()))
        .map(PathBuf::from)
        .unwrap_or_else(|| "/".into())
}

/// The inode the grep cache holds a file to (docs/cache.md); Windows gives none.
#[cfg(unix)]
fn inode_of(meta: &fs::Metadata) -> Option<u64> {
    Some(meta.ino())
}

#[cfg(not(unix))]
fn inode_of(_meta: &fs::Metadata) -> Option<u64> {
    None
}

/// The ctime the grep cache holds a file to (docs/cache.md); Windows gives none.
#[cfg(unix)]
fn ctime_of(meta: &fs::Metadata) -> Option<i64> {
    Some(meta.ctime())
}

#[cfg(not(unix))]
fn ctime_of(_meta: &fs::Metadata) -> Option<i64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    use std::os::unix::fs::symlink;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn setup() -> (tempfile::TempDir, RootSpec) {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("claude");
        fs::create_dir_all(home.join("projects/-p")).unwrap();
        fs::write(home.join("projects/-p/a.jsonl"), b"0123456789").unwrap();
        let spec = RootSpec {
            harness: crate::test_support::harness("claude"),
            dir: Some(home.as_os_str().as_bytes().to_vec()),
        };
        (tmp, spec)
    }

    #[test]
    fn lists_and_reads_ranges_with_true_size() {
        let (_tmp, spec) = setup();
        let host = LocalHost::new("local");
        let listing = block_on(host.list(std::slice::from_ref(&spec))).unwrap();
        assert_eq!(listing.files.len(), 1);
        let entry = &listing.files[0];
        assert_eq!(entry.rel, b"projects/-p/a.jsonl");
        let file = FileRef {
            harness: crate::test_support::harness("claude"),
            root: entry.root.to_vec(),
            rel: entry.rel.clone(),
        };
        let got =
            block_on(host.read(&file, &[ByteRange::new(2, 3), ByteRange::new(8, 100)])).unwrap();
        assert_eq!(got.size, 10);
        assert_eq!(got.chunks, vec![b"234".to_vec(), b"89".to_vec()]);
    }

    /// A read of a megabyte or more goes to the blocking pool with its first buffer allocated
    /// by the caller: the same bytes as the inline read, ranges cut at the file's end (and one
    /// past it empty), and a range over the read bound refused, not allocated.
    #[test]
    fn big_reads_on_the_pool_give_the_bytes_of_the_file() {
        let (tmp, _spec) = setup();
        let rel = b"projects/-p/big.jsonl".to_vec();
        let mut state = 7u32;
        let data: Vec<u8> = (0..3 * 1024 * 1024 + 5)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (state >> 24) as u8
            })
            .collect();
        fs::write(
            tmp.path().join("claude").join(OsStr::from_bytes(&rel)),
            &data,
        )
        .unwrap();
        let file = FileRef {
            harness: crate::test_support::harness("claude"),
            root: tmp.path().join("claude").as_os_str().as_bytes().to_vec(),
            rel,
        };
        let host = LocalHost::new("local");
        let size = data.len() as u64;
        let cases: [&[ByteRange]; 4] = [
            &[ByteRange::new(0, 4 * 1024 * 1024)],
            &[ByteRange::new(1, 1024 * 1024)],
            &[
                ByteRange::new(size - 10, 1024 * 1024),
                ByteRange::new(5, 7),
                ByteRange::new(size + 3, 10),
            ],
            &[ByteRange::new(1024 * 1024, 2 * 1024 * 1024 + 5)],
        ];
        for ranges in cases {
            let got = block_on(host.read(&file, ranges)).unwrap();
            let want: Vec<Vec<u8>> = ranges
                .iter()
                .map(|r| data[r.start.min(size) as usize..r.end().min(size) as usize].to_vec())
                .collect();
            assert_eq!(got.size, size);
            assert!(got.chunks == want, "{ranges:?}");
            assert!(
                host.read_sync(&file, ranges).unwrap().chunks == want,
                "{ranges:?}"
            );
        }
        let over = [ByteRange::new(0, u64::MAX / 2)];
        let err = block_on(host.read(&file, &over)).unwrap_err();
        assert!(matches!(err, HostError::PathRefused { .. }), "{err}");
    }

    #[test]
    #[cfg(unix)]
    fn symlinks_out_of_the_root_are_neither_listed_nor_read() {
        let (tmp, spec) = setup();
        let outside = tmp.path().join("secret.jsonl");
        fs::write(&outside, b"secret\n").unwrap();
        let home = tmp.path().join("claude");
        symlink(&outside, home.join("projects/-p/link.jsonl")).unwrap();
        symlink(tmp.path(), home.join("projects/escape")).unwrap();
        let host = LocalHost::new("local");
        let listing = block_on(host.list(std::slice::from_ref(&spec))).unwrap();
        assert_eq!(listing.files.len(), 1, "{listing:?}");
        let root = listing.roots[0].dir.clone();
        for rel in [
            &b"projects/-p/link.jsonl"[..],
            b"projects/escape/secret.jsonl",
            b"projects/../../secret.jsonl",
        ] {
            let file = FileRef {
                harness: crate::test_support::harness("claude"),
                root: root.clone(),
                rel: rel.to_vec(),
            };
            let err = block_on(host.read(&file, &[ByteRange::new(0, 10)])).unwrap_err();
            assert!(matches!(err, HostError::PathRefused { .. }), "{err}");
        }
    }

    /// Windows has no `openat`: the component check refuses the links instead (see
    /// `open_beneath`'s Windows branch).
    #[test]
    #[cfg(windows)]
    fn windows_symlinks_out_of_the_root_are_neither_listed_nor_read() {
        use std::os::windows::fs::{symlink_dir, symlink_file};
        let (tmp, spec) = setup();
        let outside = tmp.path().join("secret.jsonl");
        fs::write(&outside, b"secret\n").unwrap();
        let home = tmp.path().join("claude");
        symlink_file(&outside, home.join("projects/-p/link.jsonl")).unwrap();
        symlink_dir(tmp.path(), home.join("projects/escape")).unwrap();
        let host = LocalHost::new("local");
        let listing = block_on(host.list(std::slice::from_ref(&spec))).unwrap();
        assert_eq!(listing.files.len(), 1, "{listing:?}");
        let root = listing.roots[0].dir.clone();
        assert!(!root.starts_with(br"\\?\"), "{root:?}");
        for rel in [
            &b"projects/-p/link.jsonl"[..],
            b"projects/escape/secret.jsonl",
            b"projects/../../secret.jsonl",
        ] {
            let file = FileRef {
                harness: crate::test_support::harness("claude"),
                root: root.clone(),
                rel: rel.to_vec(),
            };
            let err = block_on(host.read(&file, &[ByteRange::new(0, 10)])).unwrap_err();
            // Under wine 8 the symlink to a file that wine itself made does not stat at all
            // (not found); Windows stats it as a link (refused). Either way nothing is read.
            assert!(
                matches!(
                    err,
                    HostError::PathRefused { .. } | HostError::NotFound { .. }
                ),
                "{err}"
            );
        }
    }

    #[test]
    #[cfg(unix)]
    fn every_name_byte_but_slash_and_nul_is_listed_and_read() {
        let (tmp, spec) = setup();
        let names: [&[u8]; 5] = [
            b"projects/-p/new\nline.jsonl",
            b"projects/-p/car\rriage\r.jsonl",
            b"projects/-p/\x1b[31mred $(x) 'q'.jsonl",
            b"projects/C:\\Users\\me\\w/a\\b.jsonl",
            b"projects/-caf\xe9\n/b\xff.jsonl",
        ];
        let home = tmp.path().join("claude");
        for (i, rel) in names.iter().enumerate() {
            let path = home.join(OsStr::from_bytes(rel));
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, format!("content {i}\n")).unwrap();
        }
        let host = LocalHost::new("local");
        let listing = block_on(host.list(std::slice::from_ref(&spec))).unwrap();
        let mut want: Vec<&[u8]> = names.to_vec();
        want.push(b"projects/-p/a.jsonl");
        want.sort();
        let rels: Vec<&[u8]> = listing.files.iter().map(|f| &f.rel[..]).collect();
        assert_eq!(rels, want);
        assert_eq!(listing.skipped_names, 0);
        for (i, rel) in names.iter().enumerate() {
            let file = FileRef {
                harness: spec.harness,
                root: listing.roots[0].dir.clone(),
                rel: rel.to_vec(),
            };
            let got = block_on(host.read(&file, &[ByteRange::new(0, 100)])).unwrap();
            assert_eq!(got.chunks, [format!("content {i}\n").into_bytes()]);
        }
    }

    #[test]
    fn a_tree_over_a_listing_bound_is_refused_with_the_reply_cap() {
        let (tmp, spec) = setup();
        let home = tmp.path().join("claude");
        fs::write(home.join("projects/-p/b.jsonl"), b"").unwrap();
        fs::write(home.join("projects/-p/c.jsonl"), b"").unwrap();
        let host = LocalHost::new("local");
        let roots = std::slice::from_ref(&spec);
        let listing = host.list_sync(roots, ListingBudget::with_bounds(3, 1 << 20));
        assert_eq!(listing.unwrap().files.len(), 3);
        for (budget, says) in [
            (
                ListingBudget::with_bounds(2, 1 << 20),
                "local: reply too large: listing has more than 2 files; refusing it",
            ),
            (
                ListingBudget::with_bounds(3, 200),
                "local: reply too large: listing would hold more than 200 bytes; refusing it",
            ),
        ] {
            let err = host.list_sync(roots, budget).unwrap_err();
            assert!(matches!(err, HostError::ReplyTooLarge { .. }), "{err}");
            assert_eq!(err.to_string(), says);
        }
    }

    #[test]
    fn missing_root_is_reported_not_an_error() {
        let host = LocalHost::new("local");
        let spec = RootSpec {
            harness: crate::test_support::harness("claude"),
            dir: Some(b"/nonexistent/claude".to_vec()),
        };
        let listing = block_on(host.list(&[spec])).unwrap();
        assert!(!listing.roots[0].exists);
        assert!(listing.files.is_empty());
    }

    /// A thread swaps a directory below the root for a symlink to a directory outside it, and
    /// back, as fast as it can, while reads of a file in it run: no read may ever return the
    /// outside file. (Checking each component, then opening by path, let 4 to 65 of these 50,000 through.)
    #[test]
    #[cfg(unix)]
    fn a_directory_swapped_for_a_symlink_mid_read_never_leads_out() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};

        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("claude");
        let inside = home.join("projects/-p");
        let parked = home.join("projects/-p.real");
        let outside = tmp.path().join("outside/-p");
        fs::create_dir_all(&inside).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(inside.join("a.jsonl"), b"INSIDE").unwrap();
        fs::write(outside.join("a.jsonl"), b"OUTSIDE").unwrap();
        let file = FileRef {
            harness: crate::test_support::harness("claude"),
            root: home.as_os_str().as_bytes().to_vec(),
            rel: b"projects/-p/a.jsonl".to_vec(),
        };

        let stop = Arc::new(AtomicBool::new(false));
        let flipper = {
            let stop = Arc::clone(&stop);
            let (inside, parked, outside) = (inside.clone(), parked.clone(), outside.clone());
            std::thread::spawn(move || {
                let mut flips = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    fs::rename(&inside, &parked).unwrap();
                    symlink(&outside, &inside).unwrap();
                    fs::remove_file(&inside).unwrap();
                    fs::rename(&parked, &inside).unwrap();
                    flips += 1;
                }
                flips
            })
        };
        let host = LocalHost::new("local");
        let (mut read, mut refused, mut escaped) = (0, 0, 0);
        for _ in 0..50_000 {
            match host.read_sync(&file, &[ByteRange::new(0, 100)]) {
                Ok(result) if result.chunks[0] == b"OUTSIDE" => escaped += 1,
                Ok(result) => {
                    assert_eq!(result.chunks[0], b"INSIDE");
                    read += 1;
                }
                Err(_) => refused += 1,
            }
        }
        stop.store(true, Ordering::Relaxed);
        let flips = flipper.join().unwrap();
        assert_eq!(escaped, 0, "{escaped} reads escaped the root");
        // The race really ran: the swap happened many times, and reads landed on both sides
        // of it (read whole, or refused while the symlink was in place).
        assert!(flips > 100, "only {flips} swaps");
        assert!(read > 0 && refused > 0, "read {read}, refused {refused}");
    }
}
