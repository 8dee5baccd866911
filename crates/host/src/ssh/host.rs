//! The SSH host: the two primitives answered by one generated POSIX-sh script per call (`sh -s`,
//! the script in the command when it fits, `inline.rs`, else on stdin), over one russh
//! connection per host per invocation, opened on first use, or through the user's own OpenSSH
//! master when its ControlPath has one (`mux.rs`).
//! Replies are decoded by `script` (framed by a per-call nonce, never trusted).

use std::sync::Arc;

use tokio::sync::Mutex;

use super::ConnectOptions;
use super::bulk::Way;
use super::config::{Resolution, Resolving, SshTarget};
use super::mux::{ConnectionPath, SharedConnection};
use super::session::{ExecOutput, ReplyTimeouts, SshSession};
use crate::script::{self, BatchRead, Dialect, Invocation, posix};
use crate::{
    FileRef, FirstRead, Found, Hashed, Host, HostError, ListedAlong, TopReads,
    default_find_and_read, narrow_and_read,
};
use clankie_model::{ByteRange, Listing, PathHint, ReadResult, RootSpec};

/// A host reached over SSH.
pub struct SshHost {
    name: String,
    /// What the user typed for the destination.
    original: String,
    /// The resolved target, or why it could not be resolved: given at construction, or
    /// `ssh -G`'s answer once it came (`resolving`).
    target: tokio::sync::OnceCell<Result<SshTarget, (String, String)>>,
    /// `ssh -G` still running (`config::Resolving`), until the first call that needs the
    /// target waits for it.
    resolving: std::sync::Mutex<Option<Resolving>>,
    session: Mutex<Option<Arc<SshSession>>>,
    /// The time bounds of each script's reply.
    timeouts: ReplyTimeouts,
    /// The dialect: the configured one, or (`shell = auto`) the one settled on by the first
    /// call; `None` until then.
    dialect: Mutex<Option<Dialect>>,
    /// What `-v` should say (the dialect switch); the CLI prints these.
    notes: std::sync::Mutex<Vec<String>>,
    /// Where the connection's story goes and how to ask for a passphrase.
    options: ConnectOptions,
    /// The user's OpenSSH master for this host, when its ControlPath has one (`mux.rs`):
    /// made from the resolved target.
    shared: tokio::sync::OnceCell<Arc<SharedConnection>>,
    /// While `ssh -G` runs, the connection sharing the built-in parser's guess describes: the
    /// first command goes through it at once, and its answer counts only when `ssh -G`'s
    /// target shares a master the same way ([`SharedConnection::serves`]); then it is kept
    /// as `shared`.
    guessed: Option<Arc<SharedConnection>>,
    /// The encoder a POSIX read reply named (its META line): later reads use it instead of
    /// probing for one, and skip `uname` (the dialect is settled by then), two process
    /// spawns fewer on the host per warm read.
    encoder: std::sync::Mutex<Option<posix::Encoder>>,
    /// A POSIX listing came compressed: `gzip` and `base64 -d` answer on the host, and batched
    /// read scripts go to it compressed ([`posix::compressed_invocation`]).
    gzip: std::sync::atomic::AtomicBool,
    /// A batched read's reply named `zstd` (`enc=zs`): later batches name it and probe for
    /// nothing.
    zstd: std::sync::atomic::AtomicBool,
    /// Whether batched reads go compressed or plain on this connection (`bulk.rs`).
    bulk: super::bulk::BulkChoice,
    /// Scripts run on a kept `sh -s` once the dialect is settled (`kept_shell.rs`), over our
    /// own connection.
    keep_shell: bool,
    /// Reads that each wait on the one before follow (a database's levels,
    /// [`Host::keep_for_reads`]): from then on, scripts run on a kept `sh -s` as for
    /// `keep_shell`.
    keep_for_reads: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for SshHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SshHost")
            .field("name", &self.name)
            .field("target", &self.original)
            .finish()
    }
}

impl SshHost {
    /// The listing that reads along ([`Host::list_reading`], with `ends`
    /// [`Host::list_reading_ends`]).
    async fn listing_along(
        &self,
        roots: &[RootSpec],
        max_file: u64,
        ends: Option<posix::ReadEnds>,
    ) -> Result<ListedAlong, HostError> {
        let read = posix::ReadAlong {
            max_file,
            small_file: READ_ALONG_SMALL_FILE,
            block_cap: READ_ALONG_BLOCK_CAP,
            budget: if ends.is_some() {
                READ_ALONG_ENDS_BUDGET
            } else {
                READ_ALONG_BUDGET
            },
            ends,
        };
        let (nonce, out) = self
            .run_script(
                |d, n| match d {
                    Dialect::Posix => {
                        posix::invocation(posix::list_reading_script(n, roots, None, read))
                    }
                    Dialect::PowerShell => d.list(n, roots),
                },
                clankie_model::limits::MAX_LIST_REPLY_BYTES,
            )
            .await?;
        let posix = *self.dialect.lock().await == Some(Dialect::Posix);
        let answer = script::decode_list_reading(
            &self.name,
            &nonce,
            roots,
            &out.stdout,
            posix.then_some(max_file),
        )
        .map_err(|e| self.explain(e, &out))?;
        if posix && posix::listing_was_compressed(&nonce, &out.stdout) {
            self.gzip.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        if posix && posix::listing_was_zstd(&nonce, &out.stdout) {
            self.zstd.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        match answer.listing {
            Some(listing) => Ok((listing, answer.reads, answer.ends)),
            None => {
                drop(out);
                self.options.log.say(&self.name, || {
                    format!(
                        "the listing that reads along was cut at {} bytes; listing again",
                        read.budget
                    )
                });
                Ok((self.list(roots).await?, Vec::new(), Vec::new()))
            }
        }
    }

    /// A host named `name` (as the user addressed it) at a resolved SSH target. Nothing is
    /// connected until the first call.
    pub fn new(name: impl Into<String>, target: SshTarget) -> SshHost {
        SshHost::with_shell(name, target, None)
    }

    /// [`SshHost::new`] speaking `shell`; `None` is `shell = auto`: POSIX first, PowerShell
    /// when the answer says `sh` is missing (settled once per invocation).
    pub fn with_shell(
        name: impl Into<String>,
        target: SshTarget,
        shell: Option<Dialect>,
    ) -> SshHost {
        SshHost::resolving(name, Resolution::Done(Box::new(target)), shell)
    }

    /// [`SshHost::with_shell`] at a target that may still be resolving: with `ssh -G` running
    /// ([`Resolution::Running`]) nothing waits for it until a call needs the target, and the
    /// first command goes to the master the built-in parser's ControlPath names meanwhile
    /// (kept only if `ssh -G` agrees).
    pub fn resolving(
        name: impl Into<String>,
        resolution: Resolution,
        shell: Option<Dialect>,
    ) -> SshHost {
        let (original, target, guessed, resolving) = match resolution {
            Resolution::Done(target) => (
                target.original.clone(),
                tokio::sync::OnceCell::new_with(Some(Ok(*target))),
                None,
                None,
            ),
            Resolution::Running(running) => (
                running.guess.original.clone(),
                tokio::sync::OnceCell::new(),
                Some(Arc::new(SharedConnection::new(&running.guess))),
                Some(*running),
            ),
        };
        SshHost {
            name: name.into(),
            original,
            target,
            resolving: std::sync::Mutex::new(resolving),
            shared: tokio::sync::OnceCell::new(),
            guessed,
            session: Mutex::new(None),
            timeouts: ReplyTimeouts::default(),
            dialect: Mutex::new(shell),
            notes: std::sync::Mutex::new(Vec::new()),
            options: ConnectOptions::default(),
            encoder: std::sync::Mutex::new(None),
            gzip: std::sync::atomic::AtomicBool::new(false),
            zstd: std::sync::atomic::AtomicBool::new(false),
            bulk: super::bulk::BulkChoice::default(),
            keep_shell: false,
            keep_for_reads: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Keeps a `sh -s` running on the connection for the POSIX scripts of the calls after the
    /// first (`kept_shell.rs`): for a host that is polled (an MCP server's), each call then
    /// starts no session, login shell or `sh` on the host.
    pub fn keep_shell(&mut self) {
        self.keep_shell = true;
    }

    /// Whether scripts run on a kept `sh -s` ([`SshHost::keep_shell`],
    /// [`Host::keep_for_reads`]).
    fn keeps_shell(&self) -> bool {
        self.keep_shell
            || self
                .keep_for_reads
                .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets where `-v` lines go and how a passphrase is asked for (from the next connection
    /// on).
    pub fn set_connect_options(&mut self, options: ConnectOptions) {
        self.options = options;
    }

    /// Sets the time bounds of each script's reply (from the next connection on).
    pub fn set_reply_timeouts(&mut self, timeouts: ReplyTimeouts) {
        self.timeouts = timeouts;
    }

    /// The time bounds of each script's reply.
    pub fn reply_timeouts(&self) -> ReplyTimeouts {
        self.timeouts
    }

    /// Notes for `-v` gathered so far (taken: each is returned once).
    pub fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut *self.notes.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn note(&self, text: String) {
        self.notes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text);
    }

    /// Runs a script in the host's dialect, settling the dialect on the first call under
    /// `shell = auto`. `make` builds the invocation for a dialect and a nonce.
    async fn run_script(
        &self,
        make: impl Fn(Dialect, &str) -> Invocation,
        max_stdout: usize,
    ) -> Result<(String, ExecOutput), HostError> {
        let settled = *self.dialect.lock().await;
        let dialect = settled.unwrap_or(Dialect::Posix);
        let nonce = script::new_nonce();
        let invocation = make(dialect, &nonce);
        if settled == Some(Dialect::Posix)
            && let Some(out) = self
                .run_kept(&invocation, &invocation.stdin, &nonce, max_stdout)
                .await
        {
            return Ok((nonce, out?));
        }
        let out = self.exec(&invocation, max_stdout).await?;
        // A configured dialect is settled from the start.
        if settled.is_some() {
            return Ok((nonce, out));
        }
        if !script::detect_dialect_switch(&out.stdout, &out.stderr, out.exit_status) {
            *self.dialect.lock().await = Some(Dialect::Posix);
            self.prepare_kept().await;
            return Ok((nonce, out));
        }
        let posix_said = answer_of(&out);
        self.note(format!(
            "{}: no POSIX sh ({posix_said}); switching to PowerShell",
            self.name
        ));
        let nonce = script::new_nonce();
        let again = self
            .exec(&make(Dialect::PowerShell, &nonce), max_stdout)
            .await?;
        if script::parse_frame(&self.name, &nonce, &again.stdout).is_err() {
            return Err(HostError::ShellNotClean {
                host: self.name.clone(),
                first_bytes: format!(
                    "tried POSIX sh ({posix_said}) and PowerShell ({}); neither answered",
                    answer_of(&again)
                ),
            });
        }
        *self.dialect.lock().await = Some(Dialect::PowerShell);
        Ok((nonce, again))
    }

    /// Runs a POSIX script (`invocation` of [`posix::POSIX_EXEC`]) on the kept shell of our own
    /// connection, for a host that keeps one: `None` when the script is for an exec (no kept
    /// shell, or not ready, busy or gone, or the commands go through a master).
    async fn run_kept(
        &self,
        invocation: &Invocation,
        plain: &[u8],
        nonce: &str,
        max_stdout: usize,
    ) -> Option<Result<ExecOutput, HostError>> {
        if !self.keeps_shell()
            || invocation.exec != posix::POSIX_EXEC
            || invocation.stdin.is_empty()
        {
            return None;
        }
        let shared = match self.shared().await {
            Ok(shared) => shared,
            Err(e) => return Some(Err(e)),
        };
        let path = shared.path(&self.name, self.timeouts, &self.options).await;
        if path != ConnectionPath::New {
            return None;
        }
        let session = match self.session().await {
            Ok(session) => session,
            Err(e) => return Some(Err(e)),
        };
        let result = session
            .run_kept(&invocation.stdin, plain, nonce, max_stdout)
            .await?;
        if let Err(HostError::TimedOut { .. }) = &result {
            self.disconnect().await;
        }
        Some(result)
    }

    /// Starts opening the kept shell of a host that keeps one, on our own connection (once the
    /// dialect is settled as POSIX), so that the next script finds it open.
    async fn prepare_kept(&self) {
        if !self.keeps_shell() {
            return;
        }
        let Ok(shared) = self.shared().await else {
            return;
        };
        let path = shared.path(&self.name, self.timeouts, &self.options).await;
        if path != ConnectionPath::New {
            return;
        }
        if let Some(session) = self.session.lock().await.clone() {
            session.prepare_kept().await;
        }
    }

    /// Runs one invocation; a failure that means the connection is gone, or a reply that timed
    /// out (the link may be what stalled), forgets it, so a caller that retries reconnects.
    async fn exec(
        &self,
        invocation: &Invocation,
        max_stdout: usize,
    ) -> Result<ExecOutput, HostError> {
        // A POSIX script rides in the command rather than on stdin: one round trip less
        // (`inline.rs`).
        let inline = super::inline::inline_command(&invocation.exec, &invocation.stdin);
        let (command, stdin) = match &inline {
            Some(command) => (command.as_str(), &[][..]),
            None => (invocation.exec.as_str(), &invocation.stdin[..]),
        };
        // Connection sharing: the user's master at ControlPath runs the command when
        // there is one; `None` is our own connection. While `ssh -G` runs, the command goes
        // to the master at the guessed ControlPath meanwhile, and its answer counts only if
        // `ssh -G` names the same (`shared` is then the guess's).
        let run = |shared: Arc<SharedConnection>| async move {
            shared
                .exec(
                    &self.name,
                    command,
                    stdin,
                    max_stdout,
                    self.timeouts,
                    &self.options,
                )
                .await
        };
        let guessed = self.guessed.clone().filter(|_| !self.target.initialized());
        let out = match guessed {
            Some(guessed) => {
                let (out, shared) = tokio::join!(run(guessed.clone()), self.shared());
                let shared = shared?;
                if Arc::ptr_eq(&shared, &guessed) {
                    out?
                } else {
                    self.options.log.say(&self.name, || {
                        "`ssh -G` does not share a master as the built-in parser's guess did; \
                         the answer through the guess is dropped"
                            .to_string()
                    });
                    run(shared).await?
                }
            }
            None => run(self.shared().await?).await?,
        };
        if let Some(out) = out {
            return Ok(out);
        }
        let session = self.session().await?;
        match session.exec(command, stdin, max_stdout).await {
            Ok(out) => Ok(out),
            Err(err) => {
                if matches!(
                    err,
                    HostError::Unreachable { .. } | HostError::TimedOut { .. }
                ) {
                    self.disconnect().await;
                }
                Err(err)
            }
        }
    }

    /// The resolved target; `None` while `ssh -G` still runs (or when it failed).
    pub fn target(&self) -> Option<&SshTarget> {
        self.target.get().and_then(|t| t.as_ref().ok())
    }

    /// The resolved target, waiting for `ssh -G` when it still runs.
    pub async fn resolved(&self) -> Result<&SshTarget, HostError> {
        let target = self
            .target
            .get_or_init(|| async {
                let running = self
                    .resolving
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take();
                let Some(running) = running else {
                    return Err((self.original.clone(), "`ssh -G` was lost".to_string()));
                };
                match tokio::task::spawn_blocking(move || running.finish()).await {
                    Ok(Ok(target)) => {
                        if let super::config::ConfigSource::BuiltIn { why, .. } =
                            &target.config_source
                        {
                            // `ssh` ran but has no `-G`: said as the CLI says it for a
                            // target resolved at once.
                            self.options.warnings.say(&self.name, || {
                                format!(
                                    "{why}: reading the SSH configuration with the built-in \
                                     parser"
                                )
                            });
                        }
                        Ok(target)
                    }
                    Ok(Err(HostError::SshConfig { host, reason })) => Err((host, reason)),
                    Ok(Err(other)) => Err((self.original.clone(), other.to_string())),
                    Err(e) => Err((self.original.clone(), format!("`ssh -G`: {e}"))),
                }
            })
            .await;
        let target = target
            .as_ref()
            .map_err(|(host, reason)| HostError::SshConfig {
                host: host.clone(),
                reason: reason.clone(),
            })?;
        Ok(target)
    }

    /// The connection sharing of the resolved target: the guess's when it shares a master
    /// the same way (its path, settled or not, is kept), else one of its own.
    async fn shared(&self) -> Result<Arc<SharedConnection>, HostError> {
        let target = self.resolved().await?;
        Ok(self
            .shared
            .get_or_init(|| async {
                match &self.guessed {
                    Some(guessed) if guessed.serves(target) => guessed.clone(),
                    _ => Arc::new(SharedConnection::new(target)),
                }
            })
            .await
            .clone())
    }

    /// The connection, opened on first use and reused afterwards.
    pub async fn session(&self) -> Result<Arc<SshSession>, HostError> {
        let mut slot = self.session.lock().await;
        if let Some(session) = slot.as_ref() {
            return Ok(session.clone());
        }
        let target = self.resolved().await?;
        let mut session = SshSession::connect_with(&self.name, target, &self.options).await?;
        session.set_reply_timeouts(self.timeouts);
        let session = Arc::new(session);
        *slot = Some(session.clone());
        Ok(session)
    }

    /// Forgets the connection (after it dropped); the next call connects again.
    pub async fn disconnect(&self) {
        self.session.lock().await.take();
    }

    /// A reply without a frame: say what came back, from stdout or else stderr (`nologin` and
    /// `ForceCommand` answer there).
    fn explain(&self, err: HostError, out: &ExecOutput) -> HostError {
        match err {
            HostError::ShellNotClean { host, first_bytes }
                if out.stdout.iter().all(u8::is_ascii_whitespace) =>
            {
                let stderr = String::from_utf8_lossy(&out.stderr[..out.stderr.len().min(200)])
                    .trim()
                    .to_string();
                let status = out
                    .exit_status
                    .map(|s| format!(" (exit {s})"))
                    .unwrap_or_default();
                let shown = if stderr.is_empty() {
                    first_bytes
                } else {
                    format!("{stderr:?} on stderr")
                };
                HostError::ShellNotClean {
                    host,
                    first_bytes: format!("{shown}{status}"),
                }
            }
            other => other,
        }
    }
}

/// What `hosts --check` learns from one host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// Connect, key exchange, host key check and authentication.
    pub connect: std::time::Duration,
    /// One exec round trip on the open connection.
    pub exec: std::time::Duration,
    /// `uname -s` as the remote script reported it.
    pub uname: String,
    /// What the login shell printed outside our frame (rc-file banners); empty when clean.
    pub noise: Vec<u8>,
    /// What authentication succeeded with.
    pub auth: String,
    /// Which way the commands went: the user's master, or a new connection.
    pub connection: ConnectionPath,
}

impl SshHost {
    /// Connects (if needed) and runs an empty framed script, to time the connection and see
    /// whether the login shell is clean.
    pub async fn probe(&self) -> Result<Probe, HostError> {
        let start = std::time::Instant::now();
        // Through a master there is nothing of ours to connect.
        let path = self
            .shared()
            .await?
            .path(&self.name, self.timeouts, &self.options)
            .await;
        if path == ConnectionPath::New {
            self.session().await?;
        }
        let connect = start.elapsed();
        let nonce = script::new_nonce();
        let invocation = Invocation {
            exec: posix::POSIX_EXEC.to_string(),
            stdin: posix::list_script(&nonce, &[]),
        };
        let start = std::time::Instant::now();
        let out = self
            .exec(&invocation, clankie_model::limits::MAX_LIST_REPLY_BYTES)
            .await?;
        let exec = start.elapsed();
        // Settled by now, and a master that failed during the exec was given up.
        let connection = self
            .shared()
            .await?
            .path(&self.name, self.timeouts, &self.options)
            .await;
        let auth = match &connection {
            ConnectionPath::Master(_) => "the master's own authentication".to_string(),
            ConnectionPath::New => self.session().await?.authenticated_with().to_string(),
        };
        let frame = script::parse_frame(&self.name, &nonce, &out.stdout)
            .map_err(|e| self.explain(e, &out))?;
        let begin = format!("{nonce}:BEGIN");
        let end = format!("{nonce}:END");
        let text = String::from_utf8_lossy(&out.stdout);
        let before = text.find(&begin).map_or("", |i| &text[..i]);
        let after = text.rfind(&end).map_or("", |i| {
            text[i..].split_once('\n').map_or("", |(_, rest)| rest)
        });
        let noise = format!("{}{}", before.trim(), after.trim()).into_bytes();
        Ok(Probe {
            connect,
            exec,
            uname: frame.uname,
            noise,
            auth,
            connection,
        })
    }
}

/// A short, one-line account of what a failed attempt printed.
fn answer_of(out: &ExecOutput) -> String {
    let pick = if out.stderr.iter().all(u8::is_ascii_whitespace) {
        &out.stdout
    } else {
        &out.stderr
    };
    let text = String::from_utf8_lossy(&pick[..pick.len().min(160)]);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match out.exit_status {
        Some(status) => format!("{text:?}, exit {status}"),
        None => format!("{text:?}"),
    }
}

impl Host for SshHost {
    fn name(&self) -> &str {
        &self.name
    }

    /// Keeps a `sh -s` on our own connection for the scripts from now on (`kept_shell.rs`),
    /// opened at once when the dialect is settled as POSIX (else once it is): each read then
    /// starts no session, login shell or `sh` on the host.
    async fn keep_for_reads(&self) {
        let was = self
            .keep_for_reads
            .swap(true, std::sync::atomic::Ordering::Relaxed);
        if !was && *self.dialect.lock().await == Some(Dialect::Posix) {
            self.prepare_kept().await;
        }
    }

    async fn list(&self, roots: &[RootSpec]) -> Result<Listing, HostError> {
        let (nonce, out) = self
            .run_script(
                |d, n| d.list(n, roots),
                clankie_model::limits::MAX_LIST_REPLY_BYTES,
            )
            .await?;
        let listing = script::decode_list(&self.name, &nonce, roots, &out.stdout)
            .map_err(|e| self.explain(e, &out))?;
        if *self.dialect.lock().await == Some(Dialect::Posix)
            && posix::listing_was_compressed(&nonce, &out.stdout)
        {
            self.gzip.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(listing)
    }

    /// POSIX hosts: one script lists and reads the small files below the subdirs along
    /// ([`posix::list_reading_script`]), up to [`READ_ALONG_BUDGET`] bytes in all. A reply cut
    /// there before its listing was whole is followed by a plain listing (the reads are
    /// dropped: they are read the usual way). PowerShell hosts list only.
    async fn list_reading(
        &self,
        roots: &[RootSpec],
        max_file: u64,
    ) -> Result<(Listing, Vec<(FileRef, ReadResult)>), HostError> {
        let (listing, reads, _) = self.listing_along(roots, max_file, None).await?;
        Ok((listing, reads))
    }

    /// POSIX hosts: [`SshHost::list_reading`]'s script also sends the ends of the larger files
    /// (`RE` blocks, after the listing, within the same budget: a cut there loses only ends).
    async fn list_reading_ends(
        &self,
        roots: &[RootSpec],
        max_file: u64,
        ends: posix::ReadEnds,
    ) -> Result<ListedAlong, HostError> {
        self.listing_along(roots, max_file, Some(ends)).await
    }

    async fn read(&self, file: &FileRef, ranges: &[ByteRange]) -> Result<ReadResult, HostError> {
        let limit = script::read_reply_limit(ranges);
        let known = *self.encoder.lock().unwrap_or_else(|e| e.into_inner());
        let (nonce, out) = self
            .run_script(
                |d, n| match (d, known) {
                    (Dialect::Posix, Some(encoder)) => {
                        posix::invocation(posix::read_script_with(n, file, ranges, Some(encoder)))
                    }
                    _ => d.read(n, file, ranges),
                },
                limit,
            )
            .await?;
        let result = script::decode_read(&self.name, &nonce, ranges, &out.stdout)
            .map_err(|e| self.explain(e, &out))?;
        if known.is_none() && *self.dialect.lock().await == Some(Dialect::Posix) {
            *self.encoder.lock().unwrap_or_else(|e| e.into_inner()) =
                posix::encoder_named_in(&out.stdout);
        }
        Ok(result)
    }

    /// POSIX hosts: batches of files read by one script each, each batch within
    /// [`SshHost::batch_bytes`] (a small file read whole counts its size, any other its
    /// aligned blocks).
    /// A file a batch answers [`BatchRead::Again`] (it changed while a `cat` read it with
    /// others) goes into a batch of its own kind once more, then into one that reads every file
    /// by its ranges. PowerShell hosts (and a host whose dialect is not settled yet, for its
    /// first file) read file by file.
    fn read_many_bytes(&self) -> u64 {
        self.batch_bytes()
    }

    async fn read_many(
        &self,
        reads: &[(FileRef, Vec<ByteRange>)],
    ) -> Result<Vec<Result<ReadResult, HostError>>, HostError> {
        let mut out: Vec<Option<Result<ReadResult, HostError>>> = Vec::new();
        out.resize_with(reads.len(), || None);
        let mut first = 0;
        // Only the dialect's first call goes one by one (it may turn out to be PowerShell).
        while first < reads.len() && *self.dialect.lock().await != Some(Dialect::Posix) {
            let (file, ranges) = &reads[first];
            match self.read(file, ranges).await {
                Err(e) if e.is_host_wide() => return Err(e),
                result => out[first] = Some(result),
            }
            first += 1;
        }
        let mut pending: Vec<usize> = (first..reads.len()).collect();
        // A batch costs the host's shell a few processes per directory: the files of one
        // directory go into as few batches as they can.
        let directory = |i: &usize| {
            let (file, _) = &reads[*i];
            let dir = file.rel.iter().rposition(|&b| b == b'/').unwrap_or(0);
            (&file.root[..], &file.rel[..dir])
        };
        pending.sort_by(|a, b| directory(a).cmp(&directory(b)));
        for attempt in 0..=WHOLE_READ_ATTEMPTS {
            if pending.is_empty() {
                break;
            }
            let whole = attempt < WHOLE_READ_ATTEMPTS;
            let wanted: Vec<(FileRef, Vec<ByteRange>)> =
                pending.iter().map(|&i| reads[i].clone()).collect();
            let answers = self.read_batches(&wanted, whole).await?;
            let mut again = Vec::new();
            for (i, answer) in pending.into_iter().zip(answers) {
                match answer {
                    BatchRead::Done(result) => out[i] = Some(result),
                    BatchRead::Again => again.push(i),
                }
            }
            pending = again;
        }
        Ok(out.into_iter().flatten().collect())
    }

    async fn hash_prefixes(
        &self,
        files: &[(FileRef, u64)],
    ) -> Result<Option<Vec<Result<Hashed, HostError>>>, HostError> {
        self.hash_batches(files).await
    }

    /// POSIX hosts: one script lists the matches and reads the one file. PowerShell hosts
    /// (and a host whose dialect is not settled yet, which may turn out to be one) list and
    /// read in two calls.
    async fn find_and_read(
        &self,
        roots: &[RootSpec],
        id: &str,
        first: &FirstRead,
        hint: Option<&PathHint>,
        tops: &[TopReads],
    ) -> Result<Found, HostError> {
        let plain = match first {
            FirstRead::Ranges(ranges) => crate::check_ranges(ranges).is_ok(),
            FirstRead::Tail { .. } => true,
        };
        let posix = match *self.dialect.lock().await {
            Some(dialect) => dialect == Dialect::Posix,
            // `shell = auto`, nothing run yet: try POSIX; a Windows host answers in a way
            // `run_script` recognises, and the two-call path takes over.
            None => true,
        };
        let tops: Vec<TopReads> = tops
            .iter()
            .filter(|t| t.ranges.iter().all(|r| crate::check_ranges(r).is_ok()))
            .cloned()
            .collect();
        if !posix || !plain || !crate::is_plain_id(id) {
            return default_find_and_read(self, roots, id, first).await;
        }
        let (nonce, out) = self
            .run_script(
                |d, n| match d {
                    Dialect::Posix => posix::invocation(posix::find_read_script_with(
                        n, roots, id, first, hint, &tops,
                    )),
                    // Only the listing: the read follows in a call of its own.
                    Dialect::PowerShell => d.list(n, roots),
                },
                script::find_read_reply_limit(roots, &tops),
            )
            .await?;
        if *self.dialect.lock().await == Some(Dialect::PowerShell) {
            let mut listing = script::decode_list(&self.name, &nonce, roots, &out.stdout)
                .map_err(|e| self.explain(e, &out))?;
            return Ok(narrow_and_read(self, &mut listing, id, first).await);
        }
        script::decode_find_read_with(&self.name, &nonce, roots, first, &tops, &out.stdout)
            .map_err(|e| self.explain(e, &out))
    }
}

impl SshHost {
    /// [`Host::hash_prefixes`] on this host: POSIX hosts run [`posix::hash_many_script`] in
    /// batches of [`HASH_BATCH_FILES`] (one exec each, a few in flight); a PowerShell host
    /// answers `None` (its hash is not built: the caller checks by the windows).
    async fn hash_batches(
        &self,
        files: &[(FileRef, u64)],
    ) -> Result<Option<Vec<Result<Hashed, HostError>>>, HostError> {
        use futures_util::stream::{self, StreamExt};
        if files.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let mut batches = files.chunks(HASH_BATCH_FILES);
        let first = batches.next().unwrap_or_default();
        // The first batch settles the dialect when nothing did yet (a PowerShell host is
        // sent only a listing of nothing).
        let (nonce, out) = self
            .run_script(
                |d, n| match d {
                    Dialect::Posix => posix::invocation(posix::hash_many_script(n, first)),
                    Dialect::PowerShell => d.list(n, &[]),
                },
                script::hash_many_reply_limit(first),
            )
            .await?;
        if *self.dialect.lock().await != Some(Dialect::Posix) {
            return Ok(None);
        }
        let Some(mut hashed) = script::decode_hash_many(&self.name, &nonce, first, &out.stdout)
            .map_err(|e| self.explain(e, &out))?
        else {
            return Ok(None);
        };
        let mut pending = Vec::new();
        for batch in batches {
            pending.push(async move {
                let nonce = script::new_nonce();
                let invocation = posix::invocation(posix::hash_many_script(&nonce, batch));
                let out = self
                    .exec(&invocation, script::hash_many_reply_limit(batch))
                    .await?;
                script::decode_hash_many(&self.name, &nonce, batch, &out.stdout)
                    .map_err(|e| self.explain(e, &out))
            });
        }
        let answered: Vec<_> = stream::iter(pending)
            .buffered(BATCHES_AT_ONCE)
            .collect()
            .await;
        for answer in answered {
            match answer? {
                Some(more) => hashed.extend(more),
                None => return Ok(None),
            }
        }
        Ok(Some(hashed))
    }

    /// `reads` on a POSIX host, in batches of [`batch_len`], one exec each, up to
    /// [`BATCHES_AT_ONCE`] of them in flight on the connection (each its own channel); `whole`
    /// lets a batch read small files whole ([`posix::read_many_script_with`]).
    async fn read_batches(
        &self,
        reads: &[(FileRef, Vec<ByteRange>)],
        whole: bool,
    ) -> Result<Vec<BatchRead>, HostError> {
        use futures_util::stream::{self, StreamExt};
        let mut batches = Vec::new();
        let mut rest = reads;
        let bound = self.batch_bytes();
        while !rest.is_empty() {
            let batch = &rest[..batch_len(rest, whole, bound)];
            rest = &rest[batch.len()..];
            batches.push(batch);
        }
        // The futures are made first (nothing runs until polled): a closure inside the stream
        // would make the spawned tasks that call this not `Send` for every lifetime.
        let mut pending = Vec::with_capacity(batches.len());
        for batch in batches {
            pending.push(self.read_batch(batch, whole));
        }
        let answered: Vec<Result<Vec<BatchRead>, HostError>> = stream::iter(pending)
            .buffered(BATCHES_AT_ONCE)
            .collect()
            .await;
        let mut out = Vec::with_capacity(reads.len());
        for answers in answered {
            out.extend(answers?);
        }
        Ok(out)
    }

    /// Most bytes one batch asks: `MAX_BATCH_BYTES` once the connection chose how batches
    /// travel, one read call's worth while the choice times them.
    fn batch_bytes(&self) -> u64 {
        if self.bulk.chosen() {
            clankie_model::limits::MAX_BATCH_BYTES
        } else {
            clankie_model::limits::MAX_READ_BYTES
        }
    }

    /// One batch, one exec.
    async fn read_batch(
        &self,
        batch: &[(FileRef, Vec<ByteRange>)],
        whole: bool,
    ) -> Result<Vec<BatchRead>, HostError> {
        let nonce = script::new_nonce();
        // A compressed listing proved `gzip -1 -c | base64` on this host, a batch's reply
        // `zstd -1 -c -q | base64`: the batch's encoder is named (`zstd` is still probed
        // where only `gzip` is known: a builtin where there is none), and BEGIN needs no
        // `uname`. Where either answered, `base64` alone is named instead when the connection
        // moves plain bytes faster (`bulk.rs`).
        let gzip = self.gzip.load(std::sync::atomic::Ordering::Relaxed);
        let zstd = self.zstd.load(std::sync::atomic::Ordering::Relaxed);
        let asked: u64 = batch
            .iter()
            .map(
                |(_, ranges)| match script::whole_file_cap(ranges).filter(|_| whole) {
                    Some(cap) => cap,
                    None => ranges.iter().map(|r| script::aligned(r).max_bytes()).sum(),
                },
            )
            .sum();
        let compressor = gzip || zstd;
        let way = self.bulk.way(asked, compressor, std::time::Instant::now());
        let encoder = match way {
            Way::Plain => Some(posix::Encoder::Base64),
            Way::Compressed if zstd => Some(posix::Encoder::Zstd),
            Way::Compressed => gzip.then_some(posix::Encoder::Gzip),
        };
        let script = posix::read_many_script_with(&nonce, batch, encoder, whole);
        let limit = script::read_many_reply_limit(batch);
        // On a kept shell the script goes as it would in the command: compressed where the
        // host's listing proved `gzip` and `base64 -d`.
        let kept = match (self.keeps_shell(), gzip) {
            (false, _) => None,
            (true, true) => Some(posix::invocation(posix::compressed_pipe(&script))),
            (true, false) => Some(posix::invocation(script.clone())),
        };
        let ran = match &kept {
            Some(kept) => self.run_kept(kept, &script, &nonce, limit).await,
            None => None,
        };
        let output = match ran {
            Some(output) => output?,
            None => {
                let invocation = if gzip {
                    posix::compressed_invocation(&script)
                } else {
                    posix::invocation(script)
                };
                self.exec(&invocation, limit).await?
            }
        };
        // Decoded on the blocking pool: base64 and the decompression of one reply run on
        // another core while the connection's thread takes in the next replies.
        let (answers, output) = {
            let host = self.name.clone();
            let batch = batch.to_vec();
            let decode = move || {
                let answers = script::decode_read_batch(&host, &nonce, &batch, &output.stdout);
                (answers, output)
            };
            match tokio::task::spawn_blocking(decode).await {
                Ok(decoded) => decoded,
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            }
        };
        let answers = answers.map_err(|e| self.explain(e, &output))?;
        if !zstd && posix::encoder_named_in(&output.stdout) == Some(posix::Encoder::Zstd) {
            self.zstd.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        if asked >= super::bulk::SAMPLE_BYTES && compressor {
            let decoded: usize = answers
                .iter()
                .filter_map(|answer| match answer {
                    BatchRead::Done(Ok(read)) => {
                        Some(read.chunks.iter().map(Vec::len).sum::<usize>())
                    }
                    _ => None,
                })
                .sum();
            let wire = output.stdout.len() as u64;
            let now = std::time::Instant::now();
            if let Some((compressed, plain)) = self.bulk.record(way, decoded as u64, wire, now) {
                self.options.log.say(&self.name, || match plain {
                    Some(plain) => format!(
                        "batched reads go {}: {:.0} MB/s decoded plain, {:.0} MB/s compressed",
                        if plain > compressed {
                            "plain"
                        } else {
                            "compressed"
                        },
                        plain / 1e6,
                        compressed / 1e6
                    ),
                    None => format!(
                        "batched reads go compressed: {:.0} MB/s decoded on a slow link",
                        compressed / 1e6
                    ),
                });
            }
        }
        Ok(answers)
    }
}

/// How many of `reads` (at least one) go into one batched script: as many as fit `bound`
/// bytes and `MAX_BATCH_FILES` files. A file a batch may read whole (`whole`)
/// counts the bytes it may send, its [`script::whole_file_cap`] (what it was listed at); any
/// other its aligned blocks.
fn batch_len(reads: &[(FileRef, Vec<ByteRange>)], whole: bool, bound: u64) -> usize {
    let mut total = 0u64;
    let mut n = 0;
    for (_, ranges) in reads {
        let cost: u64 = match script::whole_file_cap(ranges).filter(|_| whole) {
            Some(cap) => cap,
            None => ranges.iter().map(|r| script::aligned(r).max_bytes()).sum(),
        };
        if n > 0 && (total + cost > bound || n >= MAX_BATCH_FILES) {
            break;
        }
        total += cost;
        n += 1;
    }
    n.max(1)
}

/// Most files one batched read script names (its text grows with it, and a file read by its
/// ranges costs the host's shell a few processes).
const MAX_BATCH_FILES: usize = 3000;

/// Most files one hash script names: each costs the host's shell a few processes and the
/// hashing of its bytes, and a reply is held to a few lines a file.
const HASH_BATCH_FILES: usize = 256;

/// Batched reads of one host in flight at once: the link's round trips and the host's shells
/// overlap, within the connection's channels (`session::MAX_CHANNELS`) and a few replies in
/// memory (each at most `MAX_BATCH_BYTES` of payload).
const BATCHES_AT_ONCE: usize = 4;

/// What a listing that reads along sends at most ([`Host::list_reading`]), before
/// compression, its lines and its reads together: the payload of the [`BATCHES_AT_ONCE`]
/// batches in flight the reads stand in for, and as much again for the listing (some 150,000
/// sessions' lines) and the reads' `stat` lines.
const READ_ALONG_BUDGET: u64 = 2 * BATCHES_AT_ONCE as u64 * clankie_model::limits::MAX_READ_BYTES;

/// [`READ_ALONG_BUDGET`] for a listing that also reads the larger files' ends
/// ([`Host::list_reading_ends`]: a first `check`, 36 KiB a session): their bytes stand in for
/// batches too, and the budget stays where even bytes gzip cannot shrink, as base64, fit the
/// reply's bound (`MAX_LIST_REPLY_BYTES`, 64 MiB: 44 MiB is 59.5 MiB as base64's lines).
const READ_ALONG_ENDS_BUDGET: u64 = 44 << 20;

/// A read block of a listing that reads along whose files add up to more than this is left out
/// before it is read (its files are read by batches): half the batches' payload, so that one
/// block never takes the whole of it.
const READ_ALONG_BLOCK_CAP: u64 =
    BATCHES_AT_ONCE as u64 * clankie_model::limits::MAX_READ_BYTES / 2;

/// The largest file a listing that reads along sends in a block checked by the listing's sizes
/// and one `stat` after the read (`RF`, see [`posix::list_reading_script`]): most sessions'
/// first check is of thousands of files of a few KiB, where the `RD` block's `stat` before the
/// read and the loop over its sizes took a fifth of the host's exec.
const READ_ALONG_SMALL_FILE: u64 = 4096;

/// Batches that may read small files whole before the files still unanswered are read by
/// their ranges (a file that changes under every `cat` is read the slow way, never wrongly).
const WHOLE_READ_ATTEMPTS: usize = 2;
