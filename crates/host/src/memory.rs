//! The in-memory host: the two primitives over a map of files, so that the driver, `follow` and
//! `check` can be tested without a filesystem or a network. It lists and reads as
//! [`LocalHost`](crate::local::LocalHost) does on a tree without symlinks, and lets a test
//! change files between calls (grow, rewrite, truncate, remove, set an mtime), make calls fail
//! and count them.
//!
//! Paths are absolute, `/`-separated bytes. Directories exist implicitly above every file, or
//! explicitly ([`MemoryHost::mkdir`]). There is no environment: a root with `dir: None` is
//! `<home>/<home_relative>` for the host's fake home.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::digest::Algorithm;
use super::{FileRef, Hashed, Host, HostError, check_ranges, check_relative_path};
use clankie_model::{
    ByteRange, FileEntry, Harness, ListSpec, Listing, ReadResult, ResolvedRoot, RootSpec,
    display_path,
};

/// The home directory of a [`MemoryHost::new`] host.
pub const DEFAULT_HOME: &str = "/home/user";

/// The mtime of the first change; each later change is one second after the one before, so a
/// file that changed has a new mtime unless a test sets one ([`MemoryHost::set_mtime`]).
/// Far in the past, so `check` sees every file as settled.
const FIRST_MTIME: i64 = 1_700_000_000;

/// A host whose files live in memory. Every control takes `&self`, so a test can change files
/// while a driver loop holds the host.
pub struct MemoryHost {
    name: String,
    home: Vec<u8>,
    state: Mutex<State>,
}

/// How many times each primitive was called (failed calls included), and how many times the
/// connection was dropped ([`MemoryHost::disconnect`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Calls {
    pub list: usize,
    pub read: usize,
    pub disconnect: usize,
}

type MakeError = Box<dyn Fn() -> HostError + Send>;

struct State {
    files: BTreeMap<Vec<u8>, MemoryFile>,
    /// Directories made explicitly; the others exist because a file lies below them.
    dirs: BTreeSet<Vec<u8>>,
    clock: i64,
    /// The inode numbers given out so far: a file made or replaced gets the next one.
    inodes: u64,
    /// The next `.0` calls fail with what `.1` makes.
    failures: Option<(usize, MakeError)>,
    calls: Calls,
}

struct MemoryFile {
    data: Vec<u8>,
    mtime: i64,
    inode: u64,
    /// The status change time: every change, a set mtime included, moves it to the clock.
    ctime: i64,
}

impl fmt::Debug for MemoryHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state();
        f.debug_struct("MemoryHost")
            .field("name", &self.name)
            .field("home", &display_path(&self.home))
            .field("files", &state.files.len())
            .field("calls", &state.calls)
            .finish_non_exhaustive()
    }
}

impl MemoryHost {
    /// An empty host whose home is [`DEFAULT_HOME`].
    pub fn new(name: impl Into<String>) -> MemoryHost {
        MemoryHost {
            name: name.into(),
            home: DEFAULT_HOME.as_bytes().to_vec(),
            state: Mutex::new(State {
                files: BTreeMap::new(),
                dirs: BTreeSet::new(),
                clock: FIRST_MTIME,
                inodes: 0,
                failures: None,
                calls: Calls::default(),
            }),
        }
    }

    /// The same host with another home (where default roots resolve).
    pub fn with_home(mut self, home: impl AsRef<[u8]>) -> MemoryHost {
        self.home = normal_path(home.as_ref());
        self
    }

    pub fn home(&self) -> &[u8] {
        &self.home
    }

    /// Where a root with `dir: None` resolves: `<home>/<home_relative>`.
    pub fn default_root(&self, harness: Harness) -> Vec<u8> {
        join(&self.home, harness.default_home().home_relative.as_bytes())
    }

    /// Creates or replaces a file.
    ///
    /// # Panics
    /// When `path` is not absolute and normal (no empty, `.` or `..` component).
    pub fn put(&self, path: impl AsRef<[u8]>, data: impl AsRef<[u8]>) {
        let path = normal_path(path.as_ref());
        let mut state = self.state();
        let mtime = state.tick();
        let inode = state.new_inode();
        state.files.insert(
            path,
            MemoryFile {
                data: data.as_ref().to_vec(),
                mtime,
                inode,
                ctime: mtime,
            },
        );
    }

    /// Appends to a file, creating it when missing (as `>>` does).
    pub fn append(&self, path: impl AsRef<[u8]>, data: impl AsRef<[u8]>) {
        let path = normal_path(path.as_ref());
        let mut state = self.state();
        let mtime = state.tick();
        let inode = state.new_inode();
        let file = state.files.entry(path).or_insert(MemoryFile {
            data: Vec::new(),
            mtime,
            inode,
            ctime: mtime,
        });
        file.data.extend_from_slice(data.as_ref());
        file.mtime = mtime;
        file.ctime = mtime;
    }

    /// Replaces the content of an existing file (a harness rewriting its transcript).
    ///
    /// # Panics
    /// When the file does not exist.
    pub fn rewrite(&self, path: impl AsRef<[u8]>, data: impl AsRef<[u8]>) {
        self.change(path.as_ref(), |file| file.data = data.as_ref().to_vec());
    }

    /// Cuts an existing file to `len` bytes (no-op past its size, but a new mtime).
    ///
    /// # Panics
    /// When the file does not exist.
    pub fn truncate(&self, path: impl AsRef<[u8]>, len: u64) {
        self.change(path.as_ref(), |file| {
            file.data
                .truncate(usize::try_from(len).unwrap_or(usize::MAX));
        });
    }

    /// Removes a file; true when it existed.
    pub fn remove(&self, path: impl AsRef<[u8]>) -> bool {
        let path = normal_path(path.as_ref());
        self.state().files.remove(&path).is_some()
    }

    /// Makes an (empty) directory and its parents.
    pub fn mkdir(&self, path: impl AsRef<[u8]>) {
        let path = normal_path(path.as_ref());
        self.state().dirs.insert(path);
    }

    /// Sets a file's mtime (seconds since the Unix epoch); its ctime moves on, as `touch`'s.
    ///
    /// # Panics
    /// When the file does not exist.
    pub fn set_mtime(&self, path: impl AsRef<[u8]>, mtime: i64) {
        let path = normal_path(path.as_ref());
        let mut state = self.state();
        let ctime = state.tick();
        let file = state
            .files
            .get_mut(&path)
            .unwrap_or_else(|| panic!("no file {}", display_path(&path)));
        file.mtime = mtime;
        file.ctime = ctime;
    }

    /// Sets a file's ctime, which only a changed clock does on a real host.
    ///
    /// # Panics
    /// When the file does not exist.
    pub fn set_ctime(&self, path: impl AsRef<[u8]>, ctime: i64) {
        let path = normal_path(path.as_ref());
        let mut state = self.state();
        let file = state
            .files
            .get_mut(&path)
            .unwrap_or_else(|| panic!("no file {}", display_path(&path)));
        file.ctime = ctime;
    }

    /// A file's (size, mtime, inode, ctime), as a listing gives them.
    pub fn stat(&self, path: impl AsRef<[u8]>) -> Option<(u64, i64, u64, i64)> {
        let path = normal_path(path.as_ref());
        self.state()
            .files
            .get(&path)
            .map(|f| (f.data.len() as u64, f.mtime, f.inode, f.ctime))
    }

    /// A file's content, when it exists.
    pub fn contents(&self, path: impl AsRef<[u8]>) -> Option<Vec<u8>> {
        let path = normal_path(path.as_ref());
        self.state().files.get(&path).map(|f| f.data.clone())
    }

    /// Makes the next `calls` calls of either primitive fail with the error `error` makes
    /// (replacing failures still pending; `0` cancels them).
    pub fn fail_next(&self, calls: usize, error: impl Fn() -> HostError + Send + 'static) {
        self.state().failures = (calls > 0).then(|| (calls, Box::new(error) as MakeError));
    }

    /// The calls counted so far.
    pub fn calls(&self) -> Calls {
        self.state().calls
    }

    /// Drops the (pretend) connection, as a caller does after a transient error; only counted.
    pub fn disconnect(&self) {
        self.state().calls.disconnect += 1;
    }

    fn change(&self, path: &[u8], edit: impl FnOnce(&mut MemoryFile)) {
        let path = normal_path(path);
        let mut state = self.state();
        let mtime = state.tick();
        let file = state
            .files
            .get_mut(&path)
            .unwrap_or_else(|| panic!("no file {}", display_path(&path)));
        edit(file);
        file.mtime = mtime;
        file.ctime = mtime;
    }

    // A test that panicked while holding the lock leaves consistent data (every change is one
    // statement), so a poisoned lock is used as it is rather than failing every later test call.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn refused(&self, path: &[u8], reason: &str) -> HostError {
        HostError::PathRefused {
            host: self.name.clone(),
            path: display_path(path),
            reason: reason.to_string(),
        }
    }

    fn not_found(&self, path: &[u8]) -> HostError {
        HostError::NotFound {
            host: self.name.clone(),
            path: display_path(path),
        }
    }

    fn read_now(
        &self,
        state: &State,
        file: &FileRef,
        ranges: &[ByteRange],
    ) -> Result<ReadResult, HostError> {
        let root = trim_slash(&file.root);
        let path = join(root, &file.rel);
        check_relative_path(&file.rel).map_err(|reason| self.refused(&path, reason))?;
        check_ranges(ranges).map_err(|reason| self.refused(&path, reason))?;
        if !state.is_dir(root) {
            return Err(self.not_found(root));
        }
        // Every directory on the way must be one, as a walk of real components would find.
        let mut probe = root.to_vec();
        let components: Vec<&[u8]> = file.rel.split(|&b| b == b'/').collect();
        for component in &components[..components.len() - 1] {
            probe = join(&probe, component);
            if state.files.contains_key(&probe) {
                return Err(self.refused(&path, "not a directory"));
            }
        }
        let Some(found) = state.files.get(&path) else {
            return Err(if state.is_dir(&path) {
                self.refused(&path, "not a regular file")
            } else {
                self.not_found(&path)
            });
        };
        let size = found.data.len() as u64;
        let chunks = ranges
            .iter()
            .map(|r| found.data[r.start.min(size) as usize..r.end().min(size) as usize].to_vec())
            .collect();
        Ok(ReadResult { size, chunks })
    }
}

impl State {
    /// The mtime of a change made now.
    fn tick(&mut self) -> i64 {
        self.clock += 1;
        self.clock
    }

    /// An inode number no file of the host had.
    fn new_inode(&mut self) -> u64 {
        self.inodes += 1;
        self.inodes
    }

    /// The error of a call, when a failure is pending.
    fn take_failure(&mut self) -> Result<(), HostError> {
        let Some((left, make)) = &mut self.failures else {
            return Ok(());
        };
        let error = make();
        *left -= 1;
        if *left == 0 {
            self.failures = None;
        }
        Err(error)
    }

    fn is_dir(&self, path: &[u8]) -> bool {
        if path == b"/" {
            return true;
        }
        let mut prefix = path.to_vec();
        prefix.push(b'/');
        self.dirs.contains(path)
            || self
                .files
                .range(prefix.clone()..)
                .next()
                .is_some_and(|(k, _)| k.starts_with(&prefix))
            || self
                .dirs
                .range(prefix.clone()..)
                .next()
                .is_some_and(|k| k.starts_with(&prefix))
    }

    /// Every path (files and explicit directories) strictly below `dir`, as the part after it.
    fn below<'s>(&'s self, dir: &[u8]) -> impl Iterator<Item = (&'s [u8], Option<&'s MemoryFile>)> {
        let mut prefix = dir.to_vec();
        prefix.push(b'/');
        let cut = prefix.len();
        let files = self
            .files
            .range(prefix.clone()..)
            .take_while({
                let prefix = prefix.clone();
                move |(k, _)| k.starts_with(&prefix)
            })
            .map(move |(k, f)| (&k[cut..], Some(f)));
        let dirs = self
            .dirs
            .range(prefix.clone()..)
            .take_while(move |k| k.starts_with(&prefix))
            .map(move |k| (&k[cut..], None));
        files.chain(dirs)
    }

    fn list(&self, home: &[u8], roots: &[RootSpec]) -> Listing {
        let mut listing = Listing::default();
        for spec in roots {
            let list_spec = spec.harness.list_spec();
            let dir = match &spec.dir {
                Some(dir) => normal_root(dir),
                None => join(home, spec.harness.default_home().home_relative.as_bytes()),
            };
            if !self.is_dir(&dir) {
                listing.roots.push(ResolvedRoot {
                    harness: spec.harness,
                    dir,
                    exists: false,
                });
                continue;
            }
            // The empty subdir (`ListSpec::PROJECT_TREE`) is the root itself.
            let subdir_path = |sub: &str| match sub {
                ListSpec::PROJECT_TREE => dir.clone(),
                sub => join(&dir, sub.as_bytes()),
            };
            let subdirs: Vec<&str> = list_spec
                .subdirs
                .iter()
                .copied()
                .filter(|sub| self.is_dir(&subdir_path(sub)))
                .collect();
            // One copy of the root, shared by its files.
            let shared: Arc<[u8]> = dir.as_slice().into();
            let mut tops = 0;
            for name in list_spec.top_files {
                if let Some(file) = self.files.get(&join(&dir, name.as_bytes())) {
                    tops += 1;
                    listing
                        .files
                        .push(entry(spec.harness, &shared, name.as_bytes(), file));
                }
            }
            listing.roots.push(ResolvedRoot {
                harness: spec.harness,
                dir: dir.clone(),
                exists: !subdirs.is_empty() || tops > 0,
            });
            for sub in subdirs {
                let sub_path = subdir_path(sub);
                let project_tree = sub == ListSpec::PROJECT_TREE;
                // Every name is listed, a newline in it or not, as the local host lists it.
                for (rest, file) in self.below(&sub_path) {
                    let components: Vec<&[u8]> = rest.split(|&b| b == b'/').collect();
                    let Some(file) = file else { continue };
                    let depth = components.len() - 1;
                    let name = components[depth];
                    let skipped = project_tree
                        && components[..depth]
                            .iter()
                            .any(|dir| ListSpec::skips_project_dir(dir));
                    if depth as u64 <= u64::from(list_spec.max_depth)
                        && !skipped
                        && list_spec.matches_name(name)
                    {
                        let rel = if project_tree {
                            rest.to_vec()
                        } else {
                            join(sub.as_bytes(), rest)
                        };
                        listing.files.push(entry(spec.harness, &shared, &rel, file));
                    }
                }
            }
        }
        listing
            .files
            .sort_by(|a, b| (&a.root, &a.rel).cmp(&(&b.root, &b.rel)));
        listing
    }
}

impl Host for MemoryHost {
    fn name(&self) -> &str {
        &self.name
    }

    async fn list(&self, roots: &[RootSpec]) -> Result<Listing, HostError> {
        let mut state = self.state();
        state.calls.list += 1;
        state.take_failure()?;
        Ok(state.list(&self.home, roots))
    }

    async fn read(&self, file: &FileRef, ranges: &[ByteRange]) -> Result<ReadResult, HostError> {
        let mut state = self.state();
        state.calls.read += 1;
        state.take_failure()?;
        self.read_now(&state, file, ranges)
    }

    /// Hashes each file, found as `read` finds it, with SHA-256 (counted as a read, and
    /// failing as one when a failure is pending).
    async fn hash_prefixes(
        &self,
        files: &[(FileRef, u64)],
    ) -> Result<Option<Vec<Result<Hashed, HostError>>>, HostError> {
        let mut state = self.state();
        state.calls.read += 1;
        state.take_failure()?;
        let out = files
            .iter()
            .map(|(file, len)| {
                let size = self.read_now(&state, file, &[])?.size;
                let data = &state.files[&join(trim_slash(&file.root), &file.rel)].data;
                let end = (*len).min(size) as usize;
                Ok(Hashed {
                    size,
                    algorithm: Algorithm::Sha256,
                    digest: Algorithm::Sha256.digest(&data[..end]),
                })
            })
            .collect();
        Ok(Some(out))
    }
}

fn entry(harness: Harness, root: &Arc<[u8]>, rel: &[u8], file: &MemoryFile) -> FileEntry {
    FileEntry {
        harness,
        root: root.clone(),
        rel: rel.to_vec(),
        size: file.data.len() as u64,
        mtime: file.mtime,
        inode: Some(file.inode),
        ctime: Some(file.ctime),
    }
}

/// `dir/rel`, with one separator.
fn join(dir: &[u8], rel: &[u8]) -> Vec<u8> {
    let mut path = trim_slash(dir).to_vec();
    if path != b"/" {
        path.push(b'/');
    }
    path.extend_from_slice(rel);
    path
}

/// A path without its trailing `/` (except the root itself).
fn trim_slash(path: &[u8]) -> &[u8] {
    match path.strip_suffix(b"/") {
        Some(rest) if !rest.is_empty() => trim_slash(rest),
        _ => path,
    }
}

/// A root as a listing reports it: without a trailing `/`, as a canonical path has none.
fn normal_root(dir: &[u8]) -> Vec<u8> {
    trim_slash(dir).to_vec()
}

/// A path a test names, checked: absolute, without empty, `.` or `..` components.
fn normal_path(path: &[u8]) -> Vec<u8> {
    let path = trim_slash(path);
    let valid = path == b"/"
        || path
            .strip_prefix(b"/")
            .is_some_and(|rel| check_relative_path(rel).is_ok());
    assert!(
        valid,
        "MemoryHost wants an absolute, normal path: {:?}",
        display_path(path)
    );
    path.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn file_ref(entry: &FileEntry) -> FileRef {
        FileRef {
            harness: entry.harness,
            root: entry.root.to_vec(),
            rel: entry.rel.clone(),
        }
    }

    fn rels(listing: &Listing) -> Vec<String> {
        listing.files.iter().map(|f| display_path(&f.rel)).collect()
    }

    fn unreachable(host: &str) -> impl Fn() -> HostError + Send + 'static {
        let host = host.to_string();
        move || HostError::Unreachable {
            host: host.clone(),
            reason: "connection reset".into(),
        }
    }

    #[test]
    fn default_roots_resolve_under_the_fake_home() {
        let host = MemoryHost::new("mem").with_home("/home/me/");
        assert_eq!(
            host.default_root(crate::test_support::harness("pi")),
            b"/home/me/.pi/agent"
        );
        host.put("/home/me/.claude/projects/-p/a.jsonl", "x\n");
        let listing = block_on(host.list(&[
            RootSpec::default_for(crate::test_support::harness("claude")),
            RootSpec::default_for(crate::test_support::harness("codex")),
        ]))
        .unwrap();
        assert_eq!(
            listing.roots,
            [
                ResolvedRoot {
                    harness: crate::test_support::harness("claude"),
                    dir: b"/home/me/.claude".to_vec(),
                    exists: true,
                },
                ResolvedRoot {
                    harness: crate::test_support::harness("codex"),
                    dir: b"/home/me/.codex".to_vec(),
                    exists: false,
                },
            ]
        );
        assert_eq!(
            listing.files,
            [FileEntry {
                harness: crate::test_support::harness("claude"),
                root: b"/home/me/.claude".as_slice().into(),
                rel: b"projects/-p/a.jsonl".to_vec(),
                size: 2,
                mtime: FIRST_MTIME + 1,
                inode: Some(1),
                ctime: Some(FIRST_MTIME + 1),
            }]
        );
    }

    #[test]
    fn listing_applies_the_harness_spec() {
        let host = MemoryHost::new("mem");
        let claude = b"/srv/c".to_vec();
        for rel in [
            "projects/-p/a.jsonl",
            "projects/-p/a.jsonl.bak",
            "projects/-p/a/subagents/agent-1.jsonl",
            "projects/-p/a/subagents/workflows/w/agent-2.jsonl",
            // Seven directories below `projects`: past Claude's max_depth of 6.
            "projects/1/2/3/4/5/6/7/deep.jsonl",
            "projects/1/2/3/4/5/6/ok.jsonl",
            "top.jsonl",
            "other/b.jsonl",
        ] {
            host.put([&claude[..], b"/", rel.as_bytes()].concat(), "{}\n");
        }
        let spec = |h, dir: &str| RootSpec {
            harness: h,
            dir: Some(dir.as_bytes().to_vec()),
        };
        let listing =
            block_on(host.list(&[spec(crate::test_support::harness("claude"), "/srv/c/")]))
                .unwrap();
        assert_eq!(listing.roots[0].dir, claude);
        assert_eq!(
            rels(&listing),
            [
                "projects/-p/a.jsonl",
                "projects/-p/a/subagents/agent-1.jsonl",
                "projects/-p/a/subagents/workflows/w/agent-2.jsonl",
                "projects/1/2/3/4/5/6/ok.jsonl",
            ]
        );

        // The `/whole-name` form: only `chat_history.jsonl`, two levels below `sessions`.
        host.put("/srv/g/sessions/cwd/id/chat_history.jsonl", "{}\n");
        host.put("/srv/g/sessions/cwd/id/updates.jsonl", "{}\n");
        host.put("/srv/g/sessions/cwd/id/x_chat_history.jsonl", "{}\n");
        // Top files: the database and its WAL directly in the home, nothing else.
        host.put("/srv/o/opencode.db", "SQLite");
        host.put("/srv/o/opencode.db-wal", "");
        host.put("/srv/o/sub/opencode.db", "SQLite");
        let listing = block_on(host.list(&[
            spec(crate::test_support::harness("grok"), "/srv/g"),
            spec(crate::test_support::harness("opencode"), "/srv/o"),
        ]))
        .unwrap();
        assert_eq!(
            rels(&listing),
            [
                "sessions/cwd/id/chat_history.jsonl",
                "opencode.db",
                "opencode.db-wal",
            ]
        );
        assert!(listing.roots.iter().all(|r| r.exists));
    }

    #[test]
    // Its tree holds names with a newline, which Windows refuses.
    #[cfg(unix)]
    fn lists_what_the_local_host_lists_for_the_same_tree() {
        use std::os::unix::ffi::OsStrExt;
        let tree: &[&str] = &[
            ".claude/projects/-p/a.jsonl",
            ".claude/projects/-p/a/subagents/agent-1.jsonl",
            ".claude/projects/-p/a/subagents/workflows/w/agent-2.jsonl",
            ".claude/projects/1/2/3/4/5/6/7/too-deep.jsonl",
            ".claude/projects/-p/notes.txt",
            ".claude/projects/-p/odd\nname.jsonl",
            ".claude/projects/odd\ndir/b.jsonl",
            ".claude/todos/x.jsonl",
            ".codex/sessions/2026/02/23/rollout-1.jsonl",
            ".codex/sessions/2026/02/23/rollout-2.jsonl.zst",
            ".codex/sessions/2026/02/23/x/too-deep.jsonl",
            ".codex/archived_sessions/rollout-0.jsonl",
            ".pi/agent/sessions/--w--/t_1.jsonl",
            ".pi/agent/sessions/--w--/deeper/t_2.jsonl",
            ".grok/sessions/cwd/id/chat_history.jsonl",
            ".grok/sessions/cwd/id/updates.jsonl",
            ".grok/grok.db",
            ".gemini/tmp/p/chats/session-1.jsonl",
            ".gemini/tmp/p/chats/session-0.json",
            ".local/share/opencode/opencode.db",
            ".local/share/opencode/opencode.db-wal",
            ".local/share/opencode/storage/x.json",
        ];
        let tmp = tempfile::tempdir().unwrap();
        let disk_home = std::fs::canonicalize(tmp.path()).unwrap();
        let host = MemoryHost::new("mem").with_home("/m");
        for (i, rel) in tree.iter().enumerate() {
            let data = "x".repeat(i + 1);
            let path = disk_home.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &data).unwrap();
            host.put(format!("/m/{rel}"), &data);
        }
        let roots: Vec<RootSpec> = crate::test_support::harnesses()
            .into_iter()
            .map(|harness| RootSpec {
                harness,
                dir: Some(harness.default_home().home_relative.as_bytes().to_vec()),
            })
            .collect();
        // The same roots, absolute under each home.
        let under = |home: &[u8]| -> Vec<RootSpec> {
            roots
                .iter()
                .map(|r| RootSpec {
                    harness: r.harness,
                    dir: Some(join(home, r.dir.as_ref().unwrap())),
                })
                .collect()
        };
        let local = crate::local::LocalHost::new("local");
        let on_disk = block_on(local.list(&under(disk_home.as_os_str().as_bytes()))).unwrap();
        let in_memory = block_on(host.list(&under(b"/m"))).unwrap();
        // Equal but for the home and the mtimes.
        let strip = |listing: &Listing, home: &[u8]| {
            let files: Vec<_> = listing
                .files
                .iter()
                .map(|f| {
                    (
                        f.harness,
                        f.root[home.len()..].to_vec(),
                        f.rel.clone(),
                        f.size,
                    )
                })
                .collect();
            let roots: Vec<_> = listing
                .roots
                .iter()
                .map(|r| (r.harness, r.dir[home.len()..].to_vec(), r.exists))
                .collect();
            (files, roots, listing.skipped_names)
        };
        let want = strip(&on_disk, disk_home.as_os_str().as_bytes());
        assert_eq!(strip(&in_memory, b"/m"), want);
        // Names with a newline are listed too, and OpenCode's `storage/` JSON tree.
        assert_eq!(want.0.len(), 16, "{:?}", rels(&on_disk));
        assert_eq!(want.2, 0);
    }

    #[test]
    fn names_with_newlines_are_listed() {
        let host = MemoryHost::new("mem");
        host.put("/h/.claude/projects/-p/bad\nname.jsonl", "{}\n");
        host.put("/h/.claude/projects/bad\ndir/a.jsonl", "{}\n");
        host.put("/h/.claude/projects/-p/good.jsonl", "{}\n");
        let spec = RootSpec {
            harness: crate::test_support::harness("claude"),
            dir: Some(b"/h/.claude".to_vec()),
        };
        let listing = block_on(host.list(&[spec])).unwrap();
        assert_eq!(
            rels(&listing),
            [
                "projects/-p/bad\nname.jsonl",
                "projects/-p/good.jsonl",
                "projects/bad\ndir/a.jsonl"
            ]
        );
        assert_eq!(listing.skipped_names, 0);
    }

    #[test]
    fn an_empty_subdir_makes_the_root_exist() {
        let host = MemoryHost::new("mem");
        host.mkdir("/h/.claude/projects");
        host.put("/h/.codex/notes.txt", "");
        let roots = [
            (crate::test_support::harness("claude"), "/h/.claude"),
            (crate::test_support::harness("codex"), "/h/.codex"),
        ]
        .map(|(harness, dir)| RootSpec {
            harness,
            dir: Some(dir.as_bytes().to_vec()),
        });
        let listing = block_on(host.list(&roots)).unwrap();
        assert!(listing.roots[0].exists);
        // The home exists but holds neither `sessions` nor `archived_sessions`.
        assert!(!listing.roots[1].exists, "{listing:?}");
        assert!(listing.files.is_empty());
    }

    #[test]
    fn reads_clip_at_the_true_size_and_follow_changes() {
        let host = MemoryHost::new("mem");
        let path = "/home/user/.claude/projects/-p/a.jsonl";
        host.put(path, "0123456789");
        let listing = block_on(
            host.list(&[RootSpec::default_for(crate::test_support::harness(
                "claude",
            ))]),
        )
        .unwrap();
        let file = file_ref(&listing.files[0]);
        let read = |ranges: &[ByteRange]| block_on(host.read(&file, ranges)).unwrap();
        let got = read(&[
            ByteRange::new(2, 3),
            ByteRange::new(8, 100),
            ByteRange::new(50, 1),
        ]);
        assert_eq!(got.size, 10);
        assert_eq!(got.chunks, [&b"234"[..], b"89", b""]);

        host.append(path, "ab");
        assert_eq!(read(&[ByteRange::new(9, 10)]).chunks, [b"9ab"]);
        host.truncate(path, 4);
        assert_eq!(read(&[ByteRange::new(0, 10)]).size, 4);
        host.rewrite(path, "xyz");
        assert_eq!(read(&[ByteRange::new(0, 10)]).chunks, [b"xyz"]);
        assert_eq!(host.contents(path).unwrap(), b"xyz");

        // Each change is a new mtime; a set one stays.
        let mtime = |host: &MemoryHost| {
            block_on(
                host.list(&[RootSpec::default_for(crate::test_support::harness(
                    "claude",
                ))]),
            )
            .unwrap()
            .files[0]
                .mtime
        };
        assert_eq!(mtime(&host), FIRST_MTIME + 4);
        host.set_mtime(path, 42);
        assert_eq!(mtime(&host), 42);

        assert!(host.remove(path));
        let err = block_on(host.read(&file, &[ByteRange::new(0, 1)])).unwrap_err();
        assert!(matches!(err, HostError::NotFound { .. }), "{err}");
    }

    #[test]
    fn paths_and_ranges_are_checked_like_every_host() {
        let host = MemoryHost::new("mem");
        host.put("/r/projects/a.jsonl", "x");
        host.put("/secret.jsonl", "s");
        let at = |rel: &str| FileRef {
            harness: crate::test_support::harness("claude"),
            root: b"/r".to_vec(),
            rel: rel.as_bytes().to_vec(),
        };
        let refused = |file: FileRef, ranges: &[ByteRange]| {
            let err = block_on(host.read(&file, ranges)).unwrap_err();
            assert!(matches!(err, HostError::PathRefused { .. }), "{err}");
        };
        let one = [ByteRange::new(0, 1)];
        for rel in [
            "../secret.jsonl",
            "projects/../../secret.jsonl",
            "/secret.jsonl",
            "",
            "a//b",
        ] {
            refused(at(rel), &one);
        }
        refused(at("projects"), &one);
        refused(at("projects/a.jsonl/x"), &one);
        let over = clankie_model::limits::MAX_READ_BYTES;
        refused(
            at("projects/a.jsonl"),
            &[ByteRange::new(0, over), ByteRange::new(0, 1)],
        );
        let err = block_on(host.read(&at("projects/b.jsonl"), &one)).unwrap_err();
        assert!(matches!(err, HostError::NotFound { .. }), "{err}");
        assert!(block_on(host.read(&at("projects/a.jsonl"), &[ByteRange::new(0, over)])).is_ok());
    }

    #[test]
    fn failures_are_injected_and_calls_counted() {
        let host = MemoryHost::new("mem");
        host.put("/home/user/.claude/projects/-p/a.jsonl", "x");
        let roots = [RootSpec::default_for(crate::test_support::harness(
            "claude",
        ))];
        host.fail_next(2, unreachable("mem"));
        let err = block_on(host.list(&roots)).unwrap_err();
        assert!(matches!(err, HostError::Unreachable { .. }), "{err}");
        let file = FileRef {
            harness: crate::test_support::harness("claude"),
            root: host.default_root(crate::test_support::harness("claude")),
            rel: b"projects/-p/a.jsonl".to_vec(),
        };
        assert!(block_on(host.read(&file, &[ByteRange::new(0, 1)])).is_err());
        assert_eq!(
            block_on(host.read(&file, &[ByteRange::new(0, 1)]))
                .unwrap()
                .chunks,
            [b"x"]
        );
        assert_eq!(block_on(host.list(&roots)).unwrap().files.len(), 1);
        host.fail_next(1, unreachable("mem"));
        host.fail_next(0, unreachable("mem"));
        assert!(block_on(host.list(&roots)).is_ok(), "0 cancels");
        host.disconnect();
        assert_eq!(
            host.calls(),
            Calls {
                list: 3,
                read: 2,
                disconnect: 1
            }
        );
    }
}
