//! OpenSSH connection sharing: when the SSH configuration gives a ControlPath and an
//! `ssh` master listens there, each command runs through it — the client side of OpenSSH's
//! multiplexing protocol (`PROTOCOL.mux`, version 4): hello, `MUX_C_NEW_SESSION` with the
//! command, our ends of three socketpairs passed as its stdin, stdout and stderr (SCM_RIGHTS),
//! then the exit message. No key exchange, no authentication: the master did those.
//!
//! With `ControlMaster auto`/`autoask` and a ControlPersist, and no master listening, one is
//! started as `ssh` would start it: the user's own `ssh -M -N -f`. Whatever goes wrong on this
//! path (no master, a socket that is not one, a master that dies, or one that does not open the
//! session within the connect bound) falls back to our own connection, said on `-v`; once the
//! session is open, only the reply's time and size bounds fail a call, as they do on our own
//! connection.
//!
//! A ControlPath another user could have put there is not used (one warning, then our own
//! connection): the socket must be ours, not group- or world-writable, not a symlink, in a
//! directory that is ours or root's and that others cannot write to (unless it is sticky, as
//! `/tmp` is), reached through no symlink of another user; the process listening must run as
//! us ([`control_path_refusal`]). OpenSSH's client trusts any socket there; we read transcripts
//! whose secrets matter.

// Off Unix there are no Unix-domain sockets to pass descriptors over: the master path is never
// taken there, and what only it uses is unused.
#![cfg_attr(not(unix), allow(dead_code, unused_imports))]

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::{Mutex, Semaphore};

use super::config::SshTarget;
use super::session::{ExecOutput, MAX_CHANNELS, ReplyTimeouts};
use super::{ConnectOptions, ConnectionLog};
use crate::HostError;

/// Which way a host's commands go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectionPath {
    /// Through the `ssh` master listening at this ControlPath.
    Master(PathBuf),
    /// Over a connection of our own (key exchange and authentication included).
    New,
}

impl fmt::Display for ConnectionPath {
    /// How `hosts --check` and `-v` say it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectionPath::Master(path) => write!(f, "master at {}", path.display()),
            ConnectionPath::New => f.write_str("new connection"),
        }
    }
}

/// One host's use of connection sharing: its ControlPath and the path settled on by the first
/// call (a master, or our own connection), for the rest of the invocation.
#[derive(Debug)]
pub(crate) struct SharedConnection {
    target: SshTarget,
    /// `None` until the first call has looked.
    settled: Mutex<Option<ConnectionPath>>,
    /// Sessions at once through the master, as on our own connection (sshd's MaxSessions).
    sessions: Semaphore,
}

impl SharedConnection {
    pub(crate) fn new(target: &SshTarget) -> SharedConnection {
        SharedConnection {
            target: target.clone(),
            settled: Mutex::new(None),
            sessions: Semaphore::new(MAX_CHANNELS),
        }
    }

    /// Whether `target` shares a master exactly as this does: the same ControlPath,
    /// ControlMaster, ControlPersist and connect bound.
    pub(crate) fn serves(&self, target: &SshTarget) -> bool {
        self.target.control_path == target.control_path
            && self.target.control_master == target.control_master
            && self.target.control_persist == target.control_persist
            && self.target.connect_timeout == target.connect_timeout
    }

    /// The path commands take: decided on the first call (a master answering at ControlPath,
    /// else one started when ControlMaster and ControlPersist ask for it, else our own
    /// connection) and kept.
    pub(crate) async fn path(
        &self,
        host: &str,
        timeouts: ReplyTimeouts,
        options: &ConnectOptions,
    ) -> ConnectionPath {
        let mut settled = self.settled.lock().await;
        if let Some(path) = settled.as_ref() {
            return path.clone();
        }
        let path = self.look_for_master(host, timeouts, options).await;
        *settled = Some(path.clone());
        path
    }

    /// From now on, our own connection.
    async fn give_up_master(&self) {
        *self.settled.lock().await = Some(ConnectionPath::New);
    }

    /// The longest a session through the master may take to open (hello, request, the
    /// master's answer) before the master is given up and the command runs on our own
    /// connection: the connect bound (ConnectTimeout, else 10 s), within the reply's bounds.
    fn open_bound(&self, timeouts: ReplyTimeouts) -> Duration {
        self.target
            .connect_timeout
            .unwrap_or(super::session::DEFAULT_CONNECT_TIMEOUT)
            .min(timeouts.idle)
            .min(timeouts.total)
    }

    /// Says on `-v` and, once, as a warning, why the ControlPath is not used.
    fn refuse(&self, host: &str, control_path: &Path, why: &str, options: &ConnectOptions) {
        options.warnings.say(host, || {
            format!(
                "ControlPath {}: {why}, so it is not used; a new connection instead",
                control_path.display()
            )
        });
        options.log.say(host, || {
            format!(
                "connection: new connection (ControlPath {} refused: {why})",
                control_path.display()
            )
        });
    }

    #[cfg(unix)]
    async fn look_for_master(
        &self,
        host: &str,
        timeouts: ReplyTimeouts,
        options: &ConnectOptions,
    ) -> ConnectionPath {
        let log = &options.log;
        let Some(control_path) = &self.target.control_path else {
            return ConnectionPath::New;
        };
        let bound = hello_bound(timeouts);
        let why = match wire::hello(control_path, bound).await {
            Ok(_) => {
                log.say(host, || {
                    format!(
                        "connection: master at {} (ControlPath); no new connection",
                        control_path.display()
                    )
                });
                return ConnectionPath::Master(control_path.clone());
            }
            Err(why) => why,
        };
        if why.found == wire::Found::Unsafe {
            self.refuse(host, control_path, &why.to_string(), options);
            return ConnectionPath::New;
        }
        let persist = self.target.control_persist;
        let Some(persist) = persist
            .filter(|_| self.target.control_master.starts_a_master())
            .filter(|_| why.found != wire::Found::Other)
        else {
            log.say(host, || {
                format!(
                    "connection: new connection (no master at ControlPath {}: {why})",
                    control_path.display()
                )
            });
            return ConnectionPath::New;
        };
        if why.found == wire::Found::Stale {
            // What `ssh` does under ControlMaster auto, so that the master can listen there.
            if std::fs::remove_file(control_path).is_ok() {
                log.say(host, || {
                    format!("stale ControlPath {} removed", control_path.display())
                });
            }
        }
        match start_master(&self.target, persist, host, log).await {
            Ok(()) => match wire::hello(control_path, bound).await {
                Ok(_) => {
                    log.say(host, || {
                        format!(
                            "connection: master at {} (started it); no new connection",
                            control_path.display()
                        )
                    });
                    ConnectionPath::Master(control_path.clone())
                }
                Err(again) if again.found == wire::Found::Unsafe => {
                    self.refuse(host, control_path, &again.to_string(), options);
                    ConnectionPath::New
                }
                Err(again) => {
                    log.say(host, || {
                        format!(
                            "connection: new connection (the master started does not answer at \
                             {}: {again})",
                            control_path.display()
                        )
                    });
                    ConnectionPath::New
                }
            },
            Err(failed) => {
                log.say(host, || {
                    format!("connection: new connection (starting a master failed: {failed})")
                });
                ConnectionPath::New
            }
        }
    }

    #[cfg(not(unix))]
    async fn look_for_master(
        &self,
        _host: &str,
        _timeouts: ReplyTimeouts,
        _options: &ConnectOptions,
    ) -> ConnectionPath {
        ConnectionPath::New
    }

    /// Runs `command` through the master when the host's path is one; `Ok(None)`: it is not
    /// (or the master failed before answering, or did not open the session within the
    /// connect bound: said on `-v`, and our own connection is used from now on), so the
    /// caller runs it on its own connection. Errors are the reply's bounds, as
    /// [`super::SshSession::exec`] reports them.
    pub(crate) async fn exec(
        &self,
        host: &str,
        command: &str,
        stdin: &[u8],
        max_stdout: usize,
        timeouts: ReplyTimeouts,
        options: &ConnectOptions,
    ) -> Result<Option<ExecOutput>, HostError> {
        let log = &options.log;
        let ConnectionPath::Master(control_path) = self.path(host, timeouts, options).await else {
            log.say(host, || {
                "exec on our own connection (no master)".to_string()
            });
            return Ok(None);
        };
        #[cfg(unix)]
        {
            let _permit = self.sessions.acquire().await;
            let session = wire::MuxExec {
                host,
                control_path: &control_path,
                timeouts,
                open_bound: self.open_bound(timeouts),
                log,
            };
            match session.run(command, stdin, max_stdout).await {
                Ok(out) => Ok(Some(out)),
                Err(wire::MuxFailure::Bound(err)) => Err(err),
                Err(wire::MuxFailure::Refused(why)) => {
                    log.say(host, || {
                        format!(
                            "the master refused a session ({why}); this exec on a new connection"
                        )
                    });
                    Ok(None)
                }
                Err(wire::MuxFailure::Gone(why)) => {
                    log.say(host, || {
                        format!(
                            "the master at {} failed ({why}); new connection from now on, \
                             this command again on it",
                            control_path.display()
                        )
                    });
                    self.give_up_master().await;
                    Ok(None)
                }
                Err(wire::MuxFailure::Unsafe(why)) => {
                    self.refuse(host, &control_path, &why, options);
                    self.give_up_master().await;
                    Ok(None)
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = (command, stdin, max_stdout, &self.sessions, control_path);
            Ok(None)
        }
    }
}

/// How long a master gets to say hello: it is a local process that answers at once, and a
/// socket that says nothing must not cost a whole `--timeout` before our own connection.
#[cfg(unix)]
const HELLO_TIMEOUT: Duration = Duration::from_secs(2);

#[cfg(unix)]
fn hello_bound(timeouts: ReplyTimeouts) -> Duration {
    HELLO_TIMEOUT.min(timeouts.idle)
}

/// Why a master at `control_path` must not be used, if it must not: another user could have
/// put it there or could replace it. The socket (when there is one) must be ours, not group-
/// or world-writable, and not a symlink (never followed); the directory holding it must be
/// ours or root's, and writable by nobody else unless it is sticky (as `/tmp` is: there nobody
/// else can remove or rename our socket); no symlink of another user may lead there. Something
/// there that is not a socket is no master anyway (connecting says so).
#[cfg(unix)]
pub(crate) fn control_path_refusal(control_path: &Path) -> Option<String> {
    use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
    let uid = nix::unistd::getuid().as_raw();
    let mut walked = PathBuf::new();
    for component in control_path.components() {
        walked.push(component);
        let Ok(meta) = std::fs::symlink_metadata(&walked) else {
            break;
        };
        if meta.file_type().is_symlink() && meta.uid() != uid && meta.uid() != 0 {
            return Some(format!(
                "reached through {}, a symlink owned by another user (uid {})",
                walked.display(),
                meta.uid()
            ));
        }
    }
    if let Ok(meta) = std::fs::symlink_metadata(control_path) {
        if meta.file_type().is_symlink() {
            return Some("a symlink (a master's socket never is one)".to_string());
        }
        if meta.file_type().is_socket() {
            if meta.uid() != uid {
                return Some(format!(
                    "a socket owned by another user (uid {}, not {uid})",
                    meta.uid()
                ));
            }
            if meta.mode() & 0o022 != 0 {
                return Some(format!(
                    "a group- or world-writable socket (mode {:o})",
                    meta.mode() & 0o7777
                ));
            }
        }
    }
    let dir = match control_path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let meta = std::fs::metadata(dir).ok()?;
    if meta.uid() != uid && meta.uid() != 0 {
        return Some(format!(
            "in {}, a directory owned by another user (uid {})",
            dir.display(),
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 && meta.mode() & 0o1000 == 0 {
        return Some(format!(
            "in {}, a group- or world-writable directory (mode {:o}) without the sticky bit",
            dir.display(),
            meta.mode() & 0o7777
        ));
    }
    None
}

/// What the master's start printed on stderr, kept for `-v`.
#[cfg(unix)]
const MAX_MASTER_STDERR: usize = 2048;

/// Starts the user's own master, `ssh -M -N -f -o ControlPersist=…` for the same destination
/// and configuration, and waits (within ConnectTimeout, else 10 s) for it to go to the
/// background: `-f` forks once authenticated, with the control socket listening. BatchMode:
/// it never prompts beside our own connection's prompts; a key that needs typing means no
/// master (our own connection asks for it).
#[cfg(unix)]
async fn start_master(
    target: &SshTarget,
    persist: super::config::ControlPersist,
    host: &str,
    log: &ConnectionLog,
) -> Result<(), String> {
    use tokio::io::AsyncReadExt as _;
    let dest =
        super::config::parse_destination(&target.original, host).map_err(|e| e.to_string())?;
    let mut cmd = tokio::process::Command::new("ssh");
    if let Some(file) = &target.ssh_config {
        cmd.arg("-F").arg(file);
    }
    cmd.args(["-M", "-N", "-f", "-o"])
        .arg(format!("ControlPersist={}", persist.as_option_value()))
        .args(["-o", "BatchMode=yes"]);
    if let Some(user) = &dest.user {
        cmd.arg("-l").arg(user);
    }
    if let Some(port) = dest.port {
        cmd.arg("-p").arg(port.to_string());
    }
    cmd.arg("--").arg(&dest.host);
    log.say(host, || {
        let shown: Vec<String> = std::iter::once("ssh".to_string())
            .chain(
                cmd.as_std()
                    .get_args()
                    .map(|a| a.to_string_lossy().into_owned()),
            )
            .collect();
        format!(
            "no master listening; starting one (ControlMaster {}, ControlPersist {}): {}",
            format!("{:?}", target.control_master).to_ascii_lowercase(),
            persist.as_option_value(),
            shown.join(" ")
        )
    });
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        // Only the foreground `ssh` (before it forks) is killed, when it takes too long.
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run ssh: {e}"))?;
    let mut stderr = child.stderr.take().ok_or("no stderr pipe")?;
    let bound = target
        .connect_timeout
        .unwrap_or(super::session::DEFAULT_CONNECT_TIMEOUT);
    let status = match tokio::time::timeout(bound, child.wait()).await {
        Ok(Ok(status)) => status,
        Ok(Err(e)) => return Err(format!("waiting for ssh: {e}")),
        Err(_) => {
            let _ = child.kill().await;
            return Err(format!(
                "ssh was not in the background after {} (ConnectTimeout); killed",
                super::session::seconds(bound)
            ));
        }
    };
    // The background master points its stderr at /dev/null, so this ends at once.
    let mut said = Vec::new();
    let _ = tokio::time::timeout(
        Duration::from_millis(500),
        (&mut stderr)
            .take(MAX_MASTER_STDERR as u64)
            .read_to_end(&mut said),
    )
    .await;
    let said = String::from_utf8_lossy(&said)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" / ");
    if status.success() {
        Ok(())
    } else {
        let status = status
            .code()
            .map_or_else(|| "killed by a signal".to_string(), |c| format!("exit {c}"));
        Err(if said.is_empty() {
            format!("ssh -M: {status}")
        } else {
            format!("ssh -M: {status}: {said}")
        })
    }
}

/// The wire protocol: packets, hello, one session.
#[cfg(unix)]
mod wire {
    use std::io::IoSlice;
    use std::mem::MaybeUninit;
    use std::os::fd::AsFd;
    use std::path::Path;

    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::UnixStream;

    use super::super::ConnectionLog;
    use super::super::session::{
        ExecOutput, ReplyTimeouts, millis, output_over_cap, seconds, stalled_reason,
    };
    use crate::HostError;

    const MUX_MSG_HELLO: u32 = 0x0000_0001;
    const MUX_C_NEW_SESSION: u32 = 0x1000_0002;
    const MUX_S_OK: u32 = 0x8000_0001;
    const MUX_S_PERMISSION_DENIED: u32 = 0x8000_0002;
    const MUX_S_FAILURE: u32 = 0x8000_0003;
    const MUX_S_EXIT_MESSAGE: u32 = 0x8000_0004;
    const MUX_S_SESSION_OPENED: u32 = 0x8000_0006;
    const MUX_S_TTY_ALLOC_FAIL: u32 = 0x8000_0008;
    /// The protocol version we speak; a master speaking another is not used.
    const MUX_VERSION: u32 = 4;
    /// No escape character (the session has no tty anyway).
    const NO_ESCAPE_CHAR: u32 = 0xffff_ffff;
    /// Larger packets are not a master's: its replies are a few words.
    const MAX_PACKET: usize = 64 * 1024;
    /// stderr beyond this is dropped (it only ever feeds error messages), as on our own
    /// connection.
    const MAX_STDERR: usize = 64 * 1024;

    /// Why the master path could not be taken.
    #[derive(Debug)]
    pub(super) struct NoMaster {
        reason: String,
        pub(super) found: Found,
    }

    /// What is at the ControlPath when no master answers there.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) enum Found {
        /// Nothing: a master may be started there.
        Nothing,
        /// A socket file nobody listens on (a master that died): `ssh` removes it under
        /// ControlMaster auto, so a new master can listen there.
        Stale,
        /// Something that is not a master of our protocol version (or could not be reached):
        /// left alone, and no master is started over it (`ssh -M` would run without one).
        Other,
        /// A path another user could have put a master at ([`super::control_path_refusal`]),
        /// or a master running as another user: not used, not removed, nothing started there.
        Unsafe,
    }

    impl std::fmt::Display for NoMaster {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.reason)
        }
    }

    fn no_master(reason: impl Into<String>) -> NoMaster {
        NoMaster {
            reason: reason.into(),
            found: Found::Other,
        }
    }

    /// Connects to the control socket and exchanges hellos within `bound`: the open control
    /// connection when a master of our protocol version answers.
    pub(super) async fn hello(
        control_path: &Path,
        bound: std::time::Duration,
    ) -> Result<UnixStream, NoMaster> {
        if let Some(reason) = super::control_path_refusal(control_path) {
            return Err(NoMaster {
                reason,
                found: Found::Unsafe,
            });
        }
        let talk = async {
            let mut stream = match UnixStream::connect(control_path).await {
                Ok(stream) => stream,
                Err(e) => {
                    return Err(NoMaster {
                        found: match e.kind() {
                            std::io::ErrorKind::NotFound => Found::Nothing,
                            // Refused is also what a plain file answers: only a socket is stale.
                            std::io::ErrorKind::ConnectionRefused if is_socket(control_path) => {
                                Found::Stale
                            }
                            _ => Found::Other,
                        },
                        reason: format!("connecting: {e}"),
                    });
                }
            };
            // The socket was checked by its path; the process that listens on it is checked
            // too (the path could have changed between the check and the connect).
            let ours = nix::unistd::getuid().as_raw();
            match stream.peer_cred() {
                Ok(peer) if peer.uid() == ours => {}
                Ok(peer) => {
                    return Err(NoMaster {
                        reason: format!(
                            "the process listening there runs as another user (uid {}, not \
                             {ours})",
                            peer.uid()
                        ),
                        found: Found::Unsafe,
                    });
                }
                Err(e) => {
                    return Err(no_master(format!("who listens there cannot be told: {e}")));
                }
            }
            let mut ours = Vec::new();
            put_u32(&mut ours, MUX_MSG_HELLO);
            put_u32(&mut ours, MUX_VERSION);
            write_packet(&mut stream, &ours)
                .await
                .map_err(|e| no_master(format!("sending hello: {e}")))?;
            let theirs = read_packet(&mut stream)
                .await
                .map_err(|e| no_master(format!("not a master: {e}")))?
                .ok_or_else(|| no_master("not a master: closed without a hello"))?;
            let mut reader = Reader::new(&theirs);
            match (reader.u32(), reader.u32()) {
                (Some(MUX_MSG_HELLO), Some(MUX_VERSION)) => Ok(stream),
                (Some(MUX_MSG_HELLO), Some(other)) => Err(no_master(format!(
                    "the master speaks mux protocol {other}, not {MUX_VERSION}"
                ))),
                _ => Err(no_master("not a master: its first message is not a hello")),
            }
        };
        match tokio::time::timeout(bound, talk).await {
            Ok(result) => result,
            Err(_) => Err(no_master(format!(
                "not a master: no hello within {}",
                seconds(bound)
            ))),
        }
    }

    fn is_socket(path: &Path) -> bool {
        use std::os::unix::fs::FileTypeExt as _;
        std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket())
    }

    /// How a session through the master failed.
    #[derive(Debug)]
    pub(super) enum MuxFailure {
        /// The master is gone or is not one: our own connection from now on (this command
        /// is read-only, so it is run again there).
        Gone(String),
        /// The master refused this session (the server's MaxSessions, ControlMaster ask):
        /// this command on our own connection.
        Refused(String),
        /// The ControlPath became one another user could have put there, or the master runs
        /// as another user: our own connection from now on, with a warning.
        Unsafe(String),
        /// A bound of the reply (time, size): the call fails, as on our own connection.
        Bound(HostError),
    }

    /// One command through the master at `control_path`.
    pub(super) struct MuxExec<'a> {
        pub(super) host: &'a str,
        pub(super) control_path: &'a Path,
        pub(super) timeouts: ReplyTimeouts,
        /// How long the session may take to open (hello to the master's answer); past it the
        /// master is given up ([`MuxFailure::Gone`]), not the call.
        pub(super) open_bound: std::time::Duration,
        pub(super) log: &'a ConnectionLog,
    }

    impl MuxExec<'_> {
        fn timed_out(&self, reason: String) -> MuxFailure {
            MuxFailure::Bound(HostError::TimedOut {
                host: self.host.to_string(),
                reason,
            })
        }

        /// Opens a session running `command`, writes `stdin` then EOF, and collects stdout
        /// (at most `max_stdout` bytes) and stderr until both end and the exit message (or the
        /// control connection's end) arrives; within [`ReplyTimeouts`] counted from the start.
        /// A session not open within [`MuxExec::open_bound`] gives the master up.
        pub(super) async fn run(
            &self,
            command: &str,
            stdin: &[u8],
            max_stdout: usize,
        ) -> Result<ExecOutput, MuxFailure> {
            let ReplyTimeouts { idle, total } = self.timeouts;
            let start = tokio::time::Instant::now();
            let whole = start + total;
            let gone = |what: &str, e: std::io::Error| MuxFailure::Gone(format!("{what}: {e}"));
            let (stdin_ours, stdin_theirs) =
                std::os::unix::net::UnixStream::pair().map_err(|e| gone("socketpair", e))?;
            let (stdout_ours, stdout_theirs) =
                std::os::unix::net::UnixStream::pair().map_err(|e| gone("socketpair", e))?;
            let (stderr_ours, stderr_theirs) =
                std::os::unix::net::UnixStream::pair().map_err(|e| gone("socketpair", e))?;
            let request_id = 1;
            let opening = async {
                let mut control = hello(self.control_path, super::hello_bound(self.timeouts))
                    .await
                    .map_err(|e| match e.found {
                        Found::Unsafe => MuxFailure::Unsafe(e.to_string()),
                        _ => MuxFailure::Gone(e.to_string()),
                    })?;
                let mut request = Vec::with_capacity(64 + command.len());
                put_u32(&mut request, MUX_C_NEW_SESSION);
                put_u32(&mut request, request_id);
                put_string(&mut request, b""); // reserved
                put_u32(&mut request, 0); // want tty
                put_u32(&mut request, 0); // want X11 forwarding
                put_u32(&mut request, 0); // want agent forwarding
                put_u32(&mut request, 0); // subsystem
                put_u32(&mut request, NO_ESCAPE_CHAR);
                put_string(&mut request, b""); // terminal type
                put_string(&mut request, command.as_bytes());
                write_packet(&mut control, &request)
                    .await
                    .map_err(|e| gone("sending the session request", e))?;
                // One descriptor a message, each with one byte: the master receives them so.
                for fd in [&stdin_theirs, &stdout_theirs, &stderr_theirs] {
                    send_fd(&control, fd.as_fd())
                        .await
                        .map_err(|e| gone("passing a descriptor", e))?;
                }
                // The master holds its own copies now; ours would keep stdout from ever ending.
                drop((stdin_theirs, stdout_theirs, stderr_theirs));
                loop {
                    let packet = read_packet(&mut control)
                        .await
                        .map_err(|e| gone("reading the session reply", e))?
                        .ok_or_else(|| {
                            MuxFailure::Gone("closed before the session opened".into())
                        })?;
                    let mut reader = Reader::new(&packet);
                    let (kind, id) = (reader.u32(), reader.u32());
                    match kind {
                        Some(MUX_S_SESSION_OPENED) if id == Some(request_id) => {
                            return match reader.u32() {
                                Some(session_id) => Ok((control, session_id)),
                                None => Err(MuxFailure::Gone("a malformed session reply".into())),
                            };
                        }
                        Some(MUX_S_PERMISSION_DENIED | MUX_S_FAILURE) => {
                            let reason = reader.string().unwrap_or_default();
                            return Err(MuxFailure::Refused(
                                String::from_utf8_lossy(&reason).into_owned(),
                            ));
                        }
                        Some(MUX_S_OK) => {}
                        other => {
                            return Err(MuxFailure::Gone(format!(
                                "an unexpected reply {other:#010x?} to the session request"
                            )));
                        }
                    }
                }
            };
            // A master that stalls before the session is open costs the connect bound, then
            // the command runs on our own connection; past this point it is the command's
            // reply, bounded as on our own connection.
            let (mut control, session_id) =
                match tokio::time::timeout(self.open_bound, opening).await {
                    Ok(opened) => opened?,
                    Err(_) => {
                        return Err(MuxFailure::Gone(format!(
                            "the session was not open within {} (the connect bound)",
                            seconds(self.open_bound)
                        )));
                    }
                };
            self.log.say(self.host, || {
                format!(
                    "session {session_id} open through the master at {} after {}; {}",
                    self.control_path.display(),
                    millis(start.elapsed()),
                    super::super::inline::shown_command(command, stdin.len())
                )
            });
            let from_std = |s: std::os::unix::net::UnixStream| {
                s.set_nonblocking(true)?;
                UnixStream::from_std(s)
            };
            let mut stdin_ours = from_std(stdin_ours).map_err(|e| gone("stdin", e))?;
            let mut stdout_ours = from_std(stdout_ours).map_err(|e| gone("stdout", e))?;
            let mut stderr_ours = from_std(stderr_ours).map_err(|e| gone("stderr", e))?;
            let writer = async move {
                // The command may exit without reading its stdin; that is its business.
                let _ = stdin_ours.write_all(stdin).await;
                let _ = stdin_ours.shutdown().await;
            };
            tokio::pin!(writer);
            let exit = exit_message(&mut control, session_id);
            tokio::pin!(exit);
            let mut out = ExecOutput {
                stdout: Vec::new(),
                stderr: Vec::new(),
                exit_status: None,
                exit_signal: None,
            };
            let (mut writer_done, mut stdout_done, mut stderr_done) = (false, false, false);
            let mut exit_status: Option<Option<u32>> = None;
            let deadline = tokio::time::sleep_until((start + idle).min(whole));
            tokio::pin!(deadline);
            let mut received = 0usize;
            let mut chunk = vec![0u8; 32 * 1024];
            let mut err_chunk = vec![0u8; 8 * 1024];
            while !(stdout_done && stderr_done && exit_status.is_some()) {
                tokio::select! {
                    () = &mut writer, if !writer_done => writer_done = true,
                    () = &mut deadline => {
                        // Dropping the control connection makes the master close the session.
                        return Err(self.timed_out(stalled_reason(received, idle, total, whole)));
                    }
                    read = stdout_ours.read(&mut chunk), if !stdout_done => match read {
                        Ok(0) | Err(_) => stdout_done = true,
                        Ok(n) => {
                            received += n;
                            deadline.as_mut().reset((tokio::time::Instant::now() + idle).min(whole));
                            let new_len = out.stdout.len() + n;
                            if new_len > max_stdout {
                                return Err(MuxFailure::Bound(output_over_cap(self.host, max_stdout)));
                            }
                            out.stdout.extend_from_slice(&chunk[..n]);
                        }
                    },
                    read = stderr_ours.read(&mut err_chunk), if !stderr_done => match read {
                        Ok(0) | Err(_) => stderr_done = true,
                        Ok(n) => {
                            received += n;
                            deadline.as_mut().reset((tokio::time::Instant::now() + idle).min(whole));
                            let room = MAX_STDERR.saturating_sub(out.stderr.len());
                            out.stderr.extend_from_slice(&err_chunk[..n.min(room)]);
                        }
                    },
                    status = &mut exit, if exit_status.is_none() => {
                        exit_status = Some(status.map_err(MuxFailure::Gone)?);
                    }
                }
            }
            match exit_status.flatten() {
                Some(status) => out.exit_status = Some(status),
                None => {
                    // No exit message: the command was killed by a signal (the master only
                    // relays an exit status), or the master died. A master that still answers
                    // says which.
                    if hello(self.control_path, super::hello_bound(self.timeouts))
                        .await
                        .is_err()
                    {
                        return Err(MuxFailure::Gone(
                            "it ended the session without an exit status and no longer answers"
                                .into(),
                        ));
                    }
                    out.exit_signal = Some("unknown (no exit status through the master)".into());
                }
            }
            self.log.say(self.host, || {
                let ended = match (&out.exit_status, &out.exit_signal) {
                    (Some(status), _) => format!("exit status {status}"),
                    (None, Some(signal)) => format!("killed by signal {signal}"),
                    (None, None) => "no exit status".to_string(),
                };
                format!(
                    "exec done through the master: {ended}; {} bytes on stdout, {} on stderr; \
                     done after {}; up {} bytes (command and stdin)",
                    out.stdout.len(),
                    out.stderr.len(),
                    millis(start.elapsed()),
                    command.len() + stdin.len()
                )
            });
            Ok(out)
        }
    }

    /// Reads the control connection after the session opened: `Some(status)` from the exit
    /// message, `None` when it closed without one; `Err` for what no master sends.
    async fn exit_message(
        control: &mut UnixStream,
        session_id: u32,
    ) -> Result<Option<u32>, String> {
        let mut status = None;
        loop {
            let packet = match read_packet(control).await {
                Ok(Some(packet)) => packet,
                // The master closes the control connection once the session is over.
                Ok(None) => return Ok(status),
                Err(e) => return Err(format!("reading the control connection: {e}")),
            };
            let mut reader = Reader::new(&packet);
            match (reader.u32(), reader.u32()) {
                (Some(MUX_S_EXIT_MESSAGE), Some(id)) if id == session_id => {
                    status = reader.u32();
                    // The session is over; the descriptors end on their own.
                    return Ok(status);
                }
                (Some(MUX_S_TTY_ALLOC_FAIL), _) => {}
                (kind, _) => {
                    return Err(format!(
                        "an unexpected message {kind:#010x?} during the session"
                    ));
                }
            }
        }
    }

    /// Passes `fd` over the control connection, with the one byte of data the message needs.
    async fn send_fd(control: &UnixStream, fd: std::os::fd::BorrowedFd<'_>) -> std::io::Result<()> {
        loop {
            control.writable().await?;
            let sent = control.try_io(tokio::io::Interest::WRITABLE, || {
                let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
                let mut ancillary = SendAncillaryBuffer::new(&mut space);
                let fds = [fd];
                ancillary.push(SendAncillaryMessage::ScmRights(&fds));
                // No MSG_NOSIGNAL (macOS has none): the Rust runtime ignores SIGPIPE, so a
                // master gone is an EPIPE here.
                rustix::net::sendmsg(
                    control,
                    &[IoSlice::new(&[0])],
                    &mut ancillary,
                    SendFlags::empty(),
                )
                .map_err(std::io::Error::from)
            });
            match sent {
                Ok(1) => return Ok(()),
                Ok(_) => return Err(std::io::Error::other("the descriptor was not sent")),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
    }

    fn put_u32(out: &mut Vec<u8>, value: u32) {
        out.extend_from_slice(&value.to_be_bytes());
    }

    fn put_string(out: &mut Vec<u8>, bytes: &[u8]) {
        let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
        put_u32(out, len);
        out.extend_from_slice(bytes);
    }

    async fn write_packet(stream: &mut UnixStream, body: &[u8]) -> std::io::Result<()> {
        let len = u32::try_from(body.len())
            .map_err(|_| std::io::Error::other("a mux packet over 4 GiB"))?;
        let mut packet = Vec::with_capacity(4 + body.len());
        put_u32(&mut packet, len);
        packet.extend_from_slice(body);
        stream.write_all(&packet).await
    }

    /// One packet; `None` at a clean end before its first byte.
    async fn read_packet(stream: &mut UnixStream) -> std::io::Result<Option<Vec<u8>>> {
        let mut len = [0u8; 4];
        let mut have = 0;
        while have < 4 {
            match stream.read(&mut len[have..]).await? {
                0 if have == 0 => return Ok(None),
                0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                n => have += n,
            }
        }
        let len = u32::from_be_bytes(len) as usize;
        if len > MAX_PACKET {
            return Err(std::io::Error::other(format!(
                "a {len}-byte packet (over {MAX_PACKET})"
            )));
        }
        let mut body = vec![0u8; len];
        stream.read_exact(&mut body).await?;
        Ok(Some(body))
    }

    /// Reads SSH wire values (big-endian `uint32`, `string`) from a packet.
    struct Reader<'a>(&'a [u8]);

    impl<'a> Reader<'a> {
        fn new(bytes: &'a [u8]) -> Reader<'a> {
            Reader(bytes)
        }

        fn u32(&mut self) -> Option<u32> {
            let (head, rest) = self.0.split_first_chunk::<4>()?;
            self.0 = rest;
            Some(u32::from_be_bytes(*head))
        }

        fn string(&mut self) -> Option<Vec<u8>> {
            let len = self.u32()? as usize;
            if len > self.0.len() {
                return None;
            }
            let (value, rest) = self.0.split_at(len);
            self.0 = rest;
            Some(value.to_vec())
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn wire_values_round_trip() {
            let mut packet = Vec::new();
            put_u32(&mut packet, MUX_S_FAILURE);
            put_u32(&mut packet, 7);
            put_string(&mut packet, b"no");
            let mut reader = Reader::new(&packet);
            assert_eq!(reader.u32(), Some(MUX_S_FAILURE));
            assert_eq!(reader.u32(), Some(7));
            assert_eq!(reader.string().as_deref(), Some(&b"no"[..]));
            assert_eq!(reader.u32(), None);
            // A string longer than what is left is refused, not read past the end.
            let mut reader = Reader::new(&[0, 0, 0, 9, b'x']);
            assert_eq!(reader.string(), None);
        }

        /// A socket that answers garbage, a huge length, or a hello of another version is not
        /// a master; one that says nothing is given up on within the bound.
        #[tokio::test]
        async fn what_is_not_a_master() {
            let dir = tempfile::tempdir().unwrap();
            let cases: [(&str, Vec<u8>); 4] = [
                ("garbage", b"HTTP/1.0 400 Bad Request\r\n\r\n".to_vec()),
                ("huge", vec![0x7f, 0xff, 0xff, 0xff]),
                ("v3", {
                    let mut p = Vec::new();
                    put_u32(&mut p, 8);
                    put_u32(&mut p, MUX_MSG_HELLO);
                    put_u32(&mut p, 3);
                    p
                }),
                ("silent", Vec::new()),
            ];
            for (name, reply) in cases {
                let path = dir.path().join(name);
                let listener = tokio::net::UnixListener::bind(&path).unwrap();
                let server = tokio::spawn(async move {
                    let (mut conn, _) = listener.accept().await.unwrap();
                    if !reply.is_empty() {
                        conn.write_all(&reply).await.unwrap();
                    }
                    // Keep it open, saying nothing more.
                    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                });
                let err = hello(&path, std::time::Duration::from_millis(300))
                    .await
                    .unwrap_err();
                let said = err.to_string();
                match name {
                    "v3" => assert!(said.contains("protocol 3"), "{said}"),
                    "silent" => assert!(said.contains("no hello within 0.3 s"), "{said}"),
                    "huge" => assert!(said.contains("packet (over"), "{said}"),
                    _ => assert!(said.starts_with("not a master"), "{said}"),
                }
                assert_eq!(err.found, Found::Other);
                server.abort();
            }
            // Nothing there at all, and a socket file nobody listens on (stale).
            let err = hello(
                &dir.path().join("absent"),
                std::time::Duration::from_secs(1),
            )
            .await
            .unwrap_err();
            assert_eq!(err.found, Found::Nothing);
            assert!(err.to_string().starts_with("connecting:"), "{err}");
            let stale = dir.path().join("stale");
            drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
            let err = hello(&stale, std::time::Duration::from_secs(1))
                .await
                .unwrap_err();
            assert_eq!(err.found, Found::Stale, "{err}");
            let file = dir.path().join("file");
            std::fs::write(&file, "not a socket").unwrap();
            let err = hello(&file, std::time::Duration::from_secs(1))
                .await
                .unwrap_err();
            assert_eq!(err.found, Found::Other, "{err}");
        }

        /// A socket another user could have put there or could replace is refused before any
        /// connect; our own socket in our own directory (or a sticky one) is used.
        #[tokio::test]
        async fn a_control_path_others_could_write_is_refused() {
            use std::os::unix::fs::PermissionsExt as _;
            let refusal = super::super::control_path_refusal;
            let chmod = |path: &Path, mode: u32| {
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
            };
            let dir = tempfile::tempdir().unwrap();
            chmod(dir.path(), 0o700);
            let socket = dir.path().join("cm");
            let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
            chmod(&socket, 0o600);
            assert_eq!(refusal(&socket), None);
            assert_eq!(refusal(&dir.path().join("nothing-yet")), None);
            chmod(&socket, 0o777);
            let why = refusal(&socket).unwrap();
            assert_eq!(why, "a group- or world-writable socket (mode 777)");
            let err = hello(&socket, std::time::Duration::from_secs(1))
                .await
                .unwrap_err();
            assert_eq!(err.found, Found::Unsafe, "{err}");
            chmod(&socket, 0o600);
            chmod(dir.path(), 0o777);
            let why = refusal(&socket).unwrap();
            assert!(
                why.ends_with(
                    "a group- or world-writable directory (mode 777) without the sticky bit"
                ),
                "{why}"
            );
            // Nothing there yet: no master is started where another user could swap it.
            assert!(refusal(&dir.path().join("nothing-yet")).is_some());
            chmod(dir.path(), 0o1777);
            assert_eq!(refusal(&socket), None, "a sticky directory, as /tmp is");
            chmod(dir.path(), 0o700);
            let link = dir.path().join("link");
            std::os::unix::fs::symlink(&socket, &link).unwrap();
            assert_eq!(
                refusal(&link).unwrap(),
                "a symlink (a master's socket never is one)"
            );
            if nix::unistd::getuid().is_root() {
                std::os::unix::fs::lchown(&socket, Some(65534), None).unwrap();
                let why = refusal(&socket).unwrap();
                assert_eq!(why, "a socket owned by another user (uid 65534, not 0)");
            }
        }

        /// A master that says hello and then never answers the session request is given up
        /// within the open bound (not the reply's idle bound): the caller falls back.
        #[tokio::test]
        async fn a_master_silent_after_hello_is_given_up_within_the_open_bound() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("cm");
            let listener = tokio::net::UnixListener::bind(&path).unwrap();
            let master = tokio::spawn(async move {
                let (mut conn, _) = listener.accept().await.unwrap();
                let mut hello = Vec::new();
                put_u32(&mut hello, MUX_MSG_HELLO);
                put_u32(&mut hello, MUX_VERSION);
                write_packet(&mut conn, &hello).await.unwrap();
                // Reads whatever comes, answers nothing.
                let mut sink = vec![0u8; 4096];
                while conn.read(&mut sink).await.is_ok_and(|n| n > 0) {}
            });
            let log = ConnectionLog::default();
            let session = MuxExec {
                host: "h",
                control_path: &path,
                timeouts: ReplyTimeouts {
                    idle: std::time::Duration::from_secs(30),
                    total: std::time::Duration::from_secs(300),
                },
                open_bound: std::time::Duration::from_millis(400),
                log: &log,
            };
            let start = std::time::Instant::now();
            match session.run("true", b"", 1024).await {
                Err(MuxFailure::Gone(why)) => assert_eq!(
                    why,
                    "the session was not open within 0.4 s (the connect bound)"
                ),
                other => panic!("{other:?}"),
            }
            assert!(start.elapsed() < std::time::Duration::from_secs(3));
            master.abort();
        }
    }

    /// The mux client against a scripted master: whatever packets a master answers with (a
    /// hello or not, replies of every kind with hostile ids and lengths, cut anywhere), a
    /// session ends in an output or a failure as soon as the master closes (never a panic,
    /// never a wait for a bound). `scripts/fuzz` runs many cases.
    #[cfg(test)]
    mod proptests {
        use proptest::prelude::*;

        use super::*;

        fn packet() -> impl Strategy<Value = Vec<u8>> {
            let kind = prop_oneof![
                Just(MUX_MSG_HELLO),
                Just(MUX_S_OK),
                Just(MUX_S_PERMISSION_DENIED),
                Just(MUX_S_FAILURE),
                Just(MUX_S_EXIT_MESSAGE),
                Just(MUX_S_SESSION_OPENED),
                Just(MUX_S_TTY_ALLOC_FAIL),
                any::<u32>(),
            ];
            let word = prop_oneof![Just(0u32), Just(1), Just(4), Just(u32::MAX), any::<u32>()];
            (
                kind,
                proptest::collection::vec(word, 0..4),
                proptest::collection::vec(any::<u8>(), 0..12),
                prop_oneof![8 => Just(None), 1 => any::<u32>().prop_map(Some)],
            )
                .prop_map(|(kind, words, tail, length)| {
                    let mut body = Vec::new();
                    put_u32(&mut body, kind);
                    for word in words {
                        put_u32(&mut body, word);
                    }
                    body.extend_from_slice(&tail);
                    let mut packet = Vec::new();
                    put_u32(&mut packet, length.unwrap_or(body.len() as u32));
                    packet.extend_from_slice(&body);
                    packet
                })
        }

        /// A master's whole answer: usually our hello first, often the session opened, then
        /// packets, maybe cut short.
        fn script() -> impl Strategy<Value = Vec<u8>> {
            (
                prop_oneof![6 => Just(true), 1 => Just(false)],
                any::<bool>(),
                proptest::collection::vec(packet(), 0..6),
                any::<prop::sample::Index>(),
                any::<bool>(),
            )
                .prop_map(|(greets, opens, packets, cut, whole)| {
                    let mut out = Vec::new();
                    if greets {
                        put_u32(&mut out, 8);
                        put_u32(&mut out, MUX_MSG_HELLO);
                        put_u32(&mut out, MUX_VERSION);
                    }
                    // Half the masters open the session, so what follows is the session's.
                    if opens {
                        put_u32(&mut out, 12);
                        put_u32(&mut out, MUX_S_SESSION_OPENED);
                        put_u32(&mut out, 1);
                        put_u32(&mut out, 7);
                    }
                    out.extend(packets.concat());
                    if !whole && !out.is_empty() {
                        out.truncate(cut.index(out.len() + 1));
                    }
                    out
                })
        }

        /// Reads our hello and answers `script`; when that began with a whole hello, reads the
        /// session request and the three descriptors' bytes (dropping the descriptors); closes.
        async fn scripted_master(listener: tokio::net::UnixListener, script: Vec<u8>) {
            let Ok((mut conn, _)) = listener.accept().await else {
                return;
            };
            drop(listener);
            if !matches!(read_packet(&mut conn).await, Ok(Some(_))) {
                return;
            }
            let _ = conn.write_all(&script).await;
            if !script.starts_with(&[0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 4]) {
                return;
            }
            let _ = read_packet(&mut conn).await;
            let mut fd_byte = [0u8; 1];
            for _ in 0..3 {
                let read = tokio::time::timeout(
                    std::time::Duration::from_millis(50),
                    conn.read(&mut fd_byte),
                );
                if !matches!(read.await, Ok(Ok(1))) {
                    break;
                }
            }
        }

        proptest! {
            #[test]
            fn a_scripted_master_ends_every_session(script in script()) {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("cm");
                let outcome = runtime.block_on(async {
                    let listener = tokio::net::UnixListener::bind(&path).unwrap();
                    let master = tokio::spawn(scripted_master(listener, script));
                    let log = ConnectionLog::default();
                    let session = MuxExec {
                        host: "h",
                        control_path: &path,
                        timeouts: ReplyTimeouts {
                            idle: std::time::Duration::from_secs(20),
                            total: std::time::Duration::from_secs(40),
                        },
                        open_bound: std::time::Duration::from_secs(10),
                        log: &log,
                    };
                    let outcome = tokio::time::timeout(
                        std::time::Duration::from_secs(5),
                        session.run("true", b"input", 1024),
                    )
                    .await;
                    master.abort();
                    outcome
                });
                // Every bound is seconds beyond the master's close: none may be what ended it.
                match outcome {
                    Err(_) => prop_assert!(false, "the session outlived a closed master"),
                    Ok(Ok(out)) => prop_assert!(out.stdout.is_empty()),
                    Ok(Err(MuxFailure::Bound(err))) => prop_assert!(false, "a bound fired: {err}"),
                    Ok(Err(MuxFailure::Gone(_) | MuxFailure::Refused(_) | MuxFailure::Unsafe(_))) => {}
                }
            }
        }
    }
}
