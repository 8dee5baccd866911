//! The SSH connection: one russh connection per host ([`SshSession`]), host keys checked against
//! the user's known_hosts, public-key auth, and `exec` of one command with stdin in and bounded
//! stdout out. Nothing is installed or written on the remote side.
//!
//! Every remote step has a time bound, and the timers live here: connecting (TCP, handshake and
//! authentication) within ConnectTimeout, else [`DEFAULT_CONNECT_TIMEOUT`]; each `exec` within
//! its [`ReplyTimeouts`]: no byte for `idle`, or the whole reply not done in `total` (a host that
//! drips a byte a second is caught by the second).

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use russh::keys::Algorithm;
use russh::{ChannelMsg, Disconnect, Preferred, client};
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Semaphore;

use super::auth;
use super::config::{SshTarget, resolve};
use super::kept_shell::{self, KeptShell};
use super::known_hosts::{Acceptance, HostKeyPolicy};
use super::wire_count::{Counted, WireBytes};
use super::{ConnectOptions, ConnectionLog};

use crate::HostError;

/// ConnectTimeout when the config sets none; covers TCP connect, handshake and auth.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// At most this many channels at once on one connection (sshd's MaxSessions default is 10).
pub const MAX_CHANNELS: usize = 8;
/// How long an `exec` may go without a byte of reply ([`ReplyTimeouts::idle`]) by default.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a whole `exec` reply may take ([`ReplyTimeouts::total`]) by default.
pub const DEFAULT_REPLY_TIMEOUT: Duration = Duration::from_secs(300);
/// How long closing a channel that timed out may take before it is dropped instead.
const CLOSE_GRACE: Duration = Duration::from_secs(1);
/// ProxyJump chains longer than this are refused (a `Host *` ProxyJump loops forever otherwise).
const MAX_JUMP_DEPTH: usize = 8;
/// stderr beyond this is dropped (it only ever feeds error messages).
const MAX_STDERR: usize = 64 * 1024;
/// A ProxyCommand's stderr kept for the error message when the connection through it fails.
const MAX_PROXY_STDERR: usize = 2048;
/// How long a failed ProxyCommand gets to exit and finish its stderr before it is killed.
const PROXY_EXIT_GRACE: Duration = Duration::from_secs(2);

/// What one `exec` returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    pub stdout: Vec<u8>,
    /// At most 64 KiB; the rest is dropped.
    pub stderr: Vec<u8>,
    /// `None` when the server sent no exit status (killed by a signal, see `exit_signal`).
    pub exit_status: Option<u32>,
    pub exit_signal: Option<String>,
}

/// The time bounds of one `exec`, counted from when the channel is asked for (after waiting for
/// a free one of the [`MAX_CHANNELS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyTimeouts {
    /// The longest wait for the next byte (stdout or stderr), and for the channel to open.
    pub idle: Duration,
    /// The longest the whole reply may take, however steadily it arrives.
    pub total: Duration,
}

impl Default for ReplyTimeouts {
    fn default() -> ReplyTimeouts {
        ReplyTimeouts {
            idle: DEFAULT_IDLE_TIMEOUT,
            total: DEFAULT_REPLY_TIMEOUT,
        }
    }
}

/// `12.3 ms`: a phase's time as `-v` says it.
pub(crate) fn millis(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}

/// `30 s`, `0.5 s`: a duration as a message says it.
pub(crate) fn seconds(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}

/// Why a reply's deadline passed, as a message says it: the whole reply's bound (`total`,
/// ending at `whole`), or silence (`idle`) before any byte or after `received` of them. Shared
/// by our own channels and the ControlMaster path, which keep the same bounds.
pub(crate) fn stalled_reason(
    received: usize,
    idle: Duration,
    total: Duration,
    whole: tokio::time::Instant,
) -> String {
    if tokio::time::Instant::now() >= whole {
        format!(
            "the reply was not complete after {} ({received} bytes so far)",
            seconds(total)
        )
    } else if received == 0 {
        format!("no reply for {} after the command was sent", seconds(idle))
    } else {
        format!(
            "the reply stopped: no byte for {} after {received} bytes",
            seconds(idle)
        )
    }
}

/// A reply's stdout passed the caller's cap: refused as it passes (exit 6, not a broken wire
/// format).
pub(crate) fn output_over_cap(host: &str, max_stdout: usize) -> HostError {
    HostError::ReplyTooLarge {
        host: host.to_string(),
        reason: format!("remote output over {max_stdout} bytes; refusing it"),
    }
}

/// A channel being opened ahead of the exec that will take it.
type SpareChannel = tokio::task::JoinHandle<Result<russh::Channel<client::Msg>, russh::Error>>;

/// One authenticated SSH connection. `exec` takes `&self`: up to [`MAX_CHANNELS`] run at once,
/// the rest wait.
pub struct SshSession {
    /// What authentication succeeded with (for `hosts --check`).
    authenticated_with: String,
    host: String,
    /// Shared with the task opening the spare channel.
    handle: Arc<client::Handle<Verifier>>,
    /// A channel being opened (or open) ahead of the next `exec`, so that it does not wait a
    /// round trip for its confirmation: each `exec` takes it and starts the next one.
    spare: Mutex<Option<SpareChannel>>,
    channels: Semaphore,
    /// The bounds of each `exec` (the defaults until [`SshSession::set_reply_timeouts`]).
    timeouts: ReplyTimeouts,
    // Declared after `handle`, so the tunnel outlives the connection inside it.
    jump: Option<Box<SshSession>>,
    /// The ProxyCommand process carrying the connection (killed on drop).
    _proxy: Option<tokio::process::Child>,
    /// Where `-v` lines go.
    log: ConnectionLog,
    /// The `sh -s` kept running for the scripts of a host that keeps one (`kept_shell.rs`).
    kept: KeptShell,
    /// The connection's bytes on the wire so far, each way (for `-v`).
    wire: Arc<WireBytes>,
}

impl std::fmt::Debug for SshSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SshSession")
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

/// Checks the server's host key in russh's handshake. Never accepts what it did not verify; on
/// refusal it leaves the specific error in `failure`, because russh only reports a generic one.
struct Verifier {
    host: String,
    policy: HostKeyPolicy,
    failure: Arc<Mutex<Option<HostError>>>,
    log: ConnectionLog,
    /// What `ssh` says without `-v` (a key added under accept-new).
    notices: ConnectionLog,
}

impl Verifier {
    fn verify(&self, key: &russh::keys::PublicKeyOrCertificate) -> Result<(), HostError> {
        self.log.say(&self.host, || match key {
            russh::keys::PublicKeyOrCertificate::PublicKey { key, .. } => format!(
                "server host key: {} {}",
                key.algorithm().as_str(),
                key.fingerprint(russh::keys::HashAlg::Sha256)
            ),
            russh::keys::PublicKeyOrCertificate::Certificate(cert) => format!(
                "server host certificate: {} {}",
                cert.algorithm().as_str(),
                cert.public_key().fingerprint(russh::keys::HashAlg::Sha256)
            ),
        });
        let accepted = self.policy.verify(&self.host, key)?;
        self.log.say(&self.host, || match &accepted {
            Acceptance::Known { file, line } => format!(
                "host key verified: {} is known at {}:{line}",
                self.policy.lookup_name(),
                file.display()
            ),
            Acceptance::Certified { file, line } => format!(
                "host key verified: {} is certified by the @cert-authority at {}:{line}",
                self.policy.lookup_name(),
                file.display()
            ),
            Acceptance::Added { file, name, .. } => format!(
                "host key accepted: {name} was not known; added to {}",
                file.display()
            ),
            Acceptance::NotAdded { file, reason } => format!(
                "host key accepted: not known; adding it to {} failed: {reason}",
                file.display()
            ),
        });
        // `ssh` says this on stderr at connect time, with or without -v; so do we.
        if let Some(line) = accepted.announcement() {
            self.notices.tell(&line);
        }
        Ok(())
    }
}

impl client::Handler for Verifier {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        server_key: &russh::keys::PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        match self.verify(server_key) {
            Ok(()) => Ok(true),
            Err(e) => {
                *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                Ok(false)
            }
        }
    }
}

fn unreachable(host: &str, reason: impl Into<String>) -> HostError {
    HostError::Unreachable {
        host: host.to_string(),
        reason: reason.into(),
    }
}

/// Host key algorithms in the order OpenSSH offers them for this host (see
/// [`HostKeyPolicy::key_algorithms`]), so both pick the same key of a server that has several.
fn preferred_host_key_algorithms(target: &SshTarget) -> Vec<Algorithm> {
    HostKeyPolicy::for_target(target).key_algorithms(&Preferred::DEFAULT.key)
}

type BoxedConnect<'a> = Pin<Box<dyn Future<Output = Result<SshSession, HostError>> + Send + 'a>>;

impl SshSession {
    /// Connects and authenticates to `target` (through its ProxyJump hops, if any), within its
    /// ConnectTimeout (default 10 s). `host_label` is the name errors are reported under.
    pub async fn connect(host_label: &str, target: &SshTarget) -> Result<SshSession, HostError> {
        SshSession::connect_with(host_label, target, &ConnectOptions::default()).await
    }

    /// [`SshSession::connect`], telling the story to `options.log` and asking for passphrases
    /// with `options.passphrase`.
    pub async fn connect_with(
        host_label: &str,
        target: &SshTarget,
        options: &ConnectOptions,
    ) -> Result<SshSession, HostError> {
        let timeout = target.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        let in_handshake = AtomicBool::new(false);
        let connecting = connect_via(host_label, target, 0, options, &in_handshake);
        match tokio::time::timeout(timeout, connecting).await {
            Ok(result) => result,
            // As `ssh` says it: the TCP connection was made, the server never said its version.
            Err(_) if in_handshake.load(Ordering::Relaxed) => Err(unreachable(
                host_label,
                format!(
                    "Connection timed out during banner exchange with {}:{} (after {}s, \
                     ConnectTimeout)",
                    target.host_name,
                    target.port,
                    timeout.as_secs_f32()
                ),
            )),
            Err(_) => Err(unreachable(
                host_label,
                format!(
                    "timed out after {}s connecting to {}:{} (ConnectTimeout)",
                    timeout.as_secs_f32(),
                    target.host_name,
                    target.port
                ),
            )),
        }
    }

    /// What authentication succeeded with: an agent key or an identity file.
    pub fn authenticated_with(&self) -> &str {
        &self.authenticated_with
    }

    /// The name this session reports errors under.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Sets the time bounds of every later `exec`.
    pub fn set_reply_timeouts(&mut self, timeouts: ReplyTimeouts) {
        self.timeouts = timeouts;
    }

    /// The time bounds of each `exec`.
    pub fn reply_timeouts(&self) -> ReplyTimeouts {
        self.timeouts
    }

    fn timed_out(&self, reason: String) -> HostError {
        HostError::TimedOut {
            host: self.host.clone(),
            reason,
        }
    }

    /// Runs `command` (no PTY), writes `stdin` then EOF, and collects stdout and stderr until
    /// the channel closes. Fails with [`HostError::ReplyTooLarge`] once stdout would exceed
    /// `max_stdout` bytes, without ever holding more than that, and with [`HostError::TimedOut`] (the channel closed) when the
    /// reply breaks its [`ReplyTimeouts`].
    pub async fn exec(
        &self,
        command: &str,
        stdin: &[u8],
        max_stdout: usize,
    ) -> Result<ExecOutput, HostError> {
        let _permit = self
            .channels
            .acquire()
            .await
            .map_err(|_| unreachable(&self.host, "connection closed"))?;
        let lost = |what: &str, e: russh::Error| {
            if self.handle.is_closed() {
                unreachable(&self.host, format!("connection lost ({what}: {e})"))
            } else {
                unreachable(&self.host, format!("{what}: {e}"))
            }
        };
        let ReplyTimeouts { idle, total } = self.timeouts;
        let start = tokio::time::Instant::now();
        let whole = start + total;
        let (wire_up, wire_down) = (self.wire.up(), self.wire.down());
        let opening = async {
            // This exec takes the spare channel (asked for by the exec before it, or with
            // authentication) and asks for the next exec's: its confirmation comes back with
            // this command's reply (or with this exec's own channel's, when there was no spare),
            // one round trip saved for every exec after the first. It is asked for once the
            // spare is in, so that it goes up with the exec request and nothing splits the
            // flight that brings the spare (the authentication's success and the channel's
            // confirmation come together). A spare that failed (MaxSessions) costs nothing: the
            // exec opens its own. The slot is only ever filled when empty, under its lock, so
            // that no spare is dropped unused (a dropped channel stays open on the server, and
            // counts against MaxSessions).
            let spare = self.spare.lock().unwrap_or_else(|p| p.into_inner()).take();
            let opened = match spare {
                Some(spare) => spare.await.ok().and_then(Result::ok),
                None => None,
            };
            {
                let mut slot = self.spare.lock().unwrap_or_else(|p| p.into_inner());
                if slot.is_none() {
                    let handle = Arc::clone(&self.handle);
                    *slot = Some(tokio::spawn(
                        async move { handle.channel_open_session().await },
                    ));
                }
            }
            let channel = match opened {
                Some(channel) => channel,
                None => self
                    .handle
                    .channel_open_session()
                    .await
                    .map_err(|e| lost("opening a channel", e))?,
            };
            channel
                .exec(true, command)
                .await
                .map_err(|e| lost("starting the command", e))?;
            Ok(channel)
        };
        let channel = match tokio::time::timeout_at((start + idle).min(whole), opening).await {
            Ok(opened) => {
                let channel = opened?;
                self.log.say(&self.host, || {
                    format!(
                        "channel {} open after {}; {}",
                        channel.id(),
                        millis(start.elapsed()),
                        super::inline::shown_command(command, stdin.len())
                    )
                });
                channel
            }
            // Dropping the half-opened channel closes it.
            Err(_) => {
                return Err(self.timed_out(format!(
                    "no answer for {} to opening a channel for the command",
                    seconds(idle.min(total))
                )));
            }
        };
        let (mut read, write) = channel.split();
        let writer = async {
            write.data(stdin).await?;
            write.eof().await
        };
        tokio::pin!(writer);
        let mut writer_done = false;
        let mut out = ExecOutput {
            stdout: Vec::new(),
            stderr: Vec::new(),
            exit_status: None,
            exit_signal: None,
        };
        // Moved on by every byte of stdout or stderr, never past `whole`.
        let deadline = tokio::time::sleep_until((start + idle).min(whole));
        tokio::pin!(deadline);
        let mut received = 0usize;
        let mut first_byte = None;
        loop {
            tokio::select! {
                // The command may exit without reading its stdin; that is its business.
                _ = &mut writer, if !writer_done => writer_done = true,
                () = &mut deadline => {
                    // The command is not waited for: its channel is closed (or, on a link so
                    // wedged that even that stalls, dropped).
                    let _ = tokio::time::timeout(CLOSE_GRACE, write.close()).await;
                    return Err(self.timed_out(stalled_reason(received, idle, total, whole)));
                }
                msg = read.wait() => match msg {
                    None | Some(ChannelMsg::Close) => break,
                    Some(ChannelMsg::Data { data }) => {
                        first_byte.get_or_insert_with(|| start.elapsed());
                        received += data.len();
                        deadline.as_mut().reset((tokio::time::Instant::now() + idle).min(whole));
                        let new_len = out.stdout.len() + data.len();
                        // Over the caller's cap (the bound its reply kind allows): refused
                        // as it passes, before more of it is held, and a cap is exit 6, not
                        // a broken wire format.
                        if new_len > max_stdout {
                            let _ = write.close().await;
                            return Err(output_over_cap(&self.host, max_stdout));
                        }
                        if new_len > out.stdout.capacity() {
                            let want = (out.stdout.capacity() * 2).clamp(new_len, max_stdout);
                            out.stdout.reserve_exact(want - out.stdout.len());
                        }
                        out.stdout.extend_from_slice(&data);
                    }
                    Some(ChannelMsg::ExtendedData { data, ext: 1 }) => {
                        first_byte.get_or_insert_with(|| start.elapsed());
                        received += data.len();
                        deadline.as_mut().reset((tokio::time::Instant::now() + idle).min(whole));
                        let room = MAX_STDERR.saturating_sub(out.stderr.len());
                        out.stderr.extend_from_slice(&data[..data.len().min(room)]);
                    }
                    Some(ChannelMsg::ExitStatus { exit_status }) => out.exit_status = Some(exit_status),
                    Some(ChannelMsg::ExitSignal { signal_name, error_message, .. }) => {
                        out.exit_signal = Some(if error_message.is_empty() {
                            format!("{signal_name:?}")
                        } else {
                            format!("{signal_name:?} ({error_message})")
                        });
                    }
                    Some(ChannelMsg::Failure) => {
                        let _ = write.close().await;
                        return Err(HostError::Protocol {
                            host: self.host.clone(),
                            reason: "the server refused to run the command".into(),
                        });
                    }
                    Some(_) => {}
                },
            }
        }
        if out.exit_status.is_none() && out.exit_signal.is_none() && self.handle.is_closed() {
            return Err(unreachable(
                &self.host,
                "connection lost while running a command",
            ));
        }
        self.log.say(&self.host, || {
            let ended = match (&out.exit_status, &out.exit_signal) {
                (Some(status), _) => format!("exit status {status}"),
                (None, Some(signal)) => format!("killed by signal {signal}"),
                (None, None) => "no exit status".to_string(),
            };
            let first = first_byte.map_or("no output".to_string(), |t| {
                format!("first byte after {}", millis(t))
            });
            format!(
                "exec done: {ended}; {} bytes on stdout, {} on stderr; {first}, done after {}; \
                 this exec moved up {}, down {} bytes on the wire",
                out.stdout.len(),
                out.stderr.len(),
                millis(start.elapsed()),
                self.wire.up() - wire_up,
                self.wire.down() - wire_down,
            )
        });
        Ok(out)
    }

    /// Runs the POSIX script `script`, whose frame is `nonce`'s, on the connection's kept
    /// shell (`kept_shell.rs`): `None` when that shell is not open (yet), busy or gone, and the
    /// script is for an exec to run. `plain` is the script `script` runs (itself, or what a
    /// compressed one unpacks to), which the shell may hold.
    pub(crate) async fn run_kept(
        &self,
        script: &[u8],
        plain: &[u8],
        nonce: &str,
        max_stdout: usize,
    ) -> Option<Result<ExecOutput, HostError>> {
        let start = tokio::time::Instant::now();
        let (wire_up, wire_down) = (self.wire.up(), self.wire.down());
        let conn = self.kept_connection(max_stdout);
        let reply = match self.kept.run(&conn, script, plain, nonce).await? {
            Ok(reply) => reply,
            Err(broke) => {
                let ReplyTimeouts { idle, total } = self.timeouts;
                return Some(Err(match broke {
                    kept_shell::Broke::Stalled { received, whole } => {
                        self.timed_out(stalled_reason(received, idle, total, whole))
                    }
                    kept_shell::Broke::TooLarge => output_over_cap(&self.host, max_stdout),
                    kept_shell::Broke::NoRoom => self.timed_out(format!(
                        "no room for {} to send the script to the kept shell",
                        seconds(idle.min(total))
                    )),
                }));
            }
        };
        self.log.say(&self.host, || {
            let how = if reply.held {
                format!(" ({} sent, held by the shell)", reply.sent)
            } else {
                String::new()
            };
            format!(
                "kept shell: script of {} bytes{how}, reply of {} bytes after {}; it moved up {}, \
                 down {} bytes on the wire",
                script.len(),
                reply.stdout.len(),
                millis(start.elapsed()),
                self.wire.up() - wire_up,
                self.wire.down() - wire_down,
            )
        });
        Some(Ok(ExecOutput {
            stdout: reply.stdout,
            stderr: reply.stderr,
            exit_status: None,
            exit_signal: None,
        }))
    }

    /// Starts opening the kept shell, when none is open or being opened (`kept_shell.rs`).
    pub(crate) async fn prepare_kept(&self) {
        self.kept.prepare(&self.kept_connection(0)).await;
    }

    fn kept_connection(&self, max_stdout: usize) -> kept_shell::Connection<'_, Verifier> {
        kept_shell::Connection {
            handle: &self.handle,
            channels: &self.channels,
            host: &self.host,
            log: &self.log,
            idle: self.timeouts.idle,
            total: self.timeouts.total,
            max_stdout,
            max_stderr: MAX_STDERR,
            close_grace: CLOSE_GRACE,
        }
    }

    /// Says goodbye to the server (dropping the session also ends it, less politely).
    pub async fn close(self) {
        let _ = self
            .handle
            .disconnect(Disconnect::ByApplication, "", "en")
            .await;
        if let Some(jump) = self.jump {
            Box::pin(jump.close()).await;
        }
    }
}

/// Connects to `target`, directly or through its last ProxyJump hop (itself connected the same
/// way, so chains and a hop's own ProxyJump work).
fn connect_via<'a>(
    label: &'a str,
    target: &'a SshTarget,
    depth: usize,
    options: &'a ConnectOptions,
    in_handshake: &'a AtomicBool,
) -> BoxedConnect<'a> {
    Box::pin(async move {
        let log = &options.log;
        log.say(label, || format!("configuration: {}", target.config_source));
        log.say(label, || {
            format!(
                "resolved: host {} port {} user {}",
                target.host_name, target.port, target.user
            )
        });
        let Some((last, earlier)) = target.proxy_jump.split_last() else {
            if let Some(command) = &target.proxy_command {
                log.say(label, || format!("proxy: ProxyCommand {command}"));
                let (stream, mut proxy) = spawn_proxy_command(label, command, log)?;
                return match handshake(
                    label,
                    target,
                    stream,
                    None,
                    depth == 0,
                    options,
                    in_handshake,
                )
                .await
                {
                    Ok(mut session) => {
                        session._proxy = Some(proxy.child);
                        Ok(session)
                    }
                    // What the command said is the reason the user needs (`nc: …refused`).
                    Err(HostError::Unreachable { host, reason }) => Err(HostError::Unreachable {
                        host,
                        reason: format!("{reason}; {}", proxy.account(command).await),
                    }),
                    Err(other) => Err(other),
                };
            }
            log.say(label, || "proxy: none (direct TCP)".to_string());
            let stream = tcp_connect(label, &target.host_name, target.port, log).await?;
            return handshake(
                label,
                target,
                stream,
                None,
                depth == 0,
                options,
                in_handshake,
            )
            .await;
        };
        log.say(label, || {
            format!("proxy: ProxyJump {}", target.proxy_jump.join(","))
        });
        if depth >= MAX_JUMP_DEPTH {
            return Err(unreachable(
                label,
                format!("ProxyJump chain deeper than {MAX_JUMP_DEPTH} hops (a loop?)"),
            ));
        }
        let hop_input = last.clone();
        let config_file = target.ssh_config.clone();
        let mut hop =
            tokio::task::spawn_blocking(move || resolve(&hop_input, config_file.as_deref()))
                .await
                .map_err(|e| unreachable(label, format!("resolving jump host {last}: {e}")))??;
        if !earlier.is_empty() {
            hop.proxy_jump = earlier.to_vec();
        }
        let jump_label = format!("{label} (via jump host {last})");
        let jump = connect_via(&jump_label, &hop, depth + 1, options, in_handshake)
            .await
            .map_err(|e| match e {
                HostError::Unreachable { reason, .. } => {
                    unreachable(label, format!("jump host {last}: {reason}"))
                }
                other => other,
            })?;
        let tunnel = jump
            .handle
            .channel_open_direct_tcpip(
                target.host_name.clone(),
                u32::from(target.port),
                "127.0.0.1",
                0,
            )
            .await
            .map_err(|e| {
                unreachable(
                    label,
                    format!(
                        "jump host {last} could not open a tunnel to {}:{}: {e}",
                        target.host_name, target.port
                    ),
                )
            })?;
        log.say(label, || {
            format!(
                "tunnel open through jump host {last} to {}:{}",
                target.host_name, target.port
            )
        });
        handshake(
            label,
            target,
            tunnel.into_stream(),
            Some(Box::new(jump)),
            depth == 0,
            options,
            in_handshake,
        )
        .await
    })
}

/// A running ProxyCommand: the process, and the task reading its stderr (each line goes to the
/// log; the first [`MAX_PROXY_STDERR`] bytes are kept for an error message).
struct ProxyProcess {
    child: tokio::process::Child,
    stderr: tokio::task::JoinHandle<Vec<u8>>,
}

impl ProxyProcess {
    /// What the command did, for the error when the connection through it failed: its exit
    /// status and what it printed on stderr (given [`PROXY_EXIT_GRACE`] to finish, then killed).
    async fn account(&mut self, command: &str) -> String {
        let status = match tokio::time::timeout(PROXY_EXIT_GRACE, self.child.wait()).await {
            Ok(Ok(status)) => match status.code() {
                Some(code) => format!("exited with status {code}"),
                None => "was killed by a signal".to_string(),
            },
            Ok(Err(e)) => format!("could not be waited for ({e})"),
            Err(_) => {
                let _ = self.child.kill().await;
                "was still running (killed)".to_string()
            }
        };
        let said = match tokio::time::timeout(PROXY_EXIT_GRACE, &mut self.stderr).await {
            Ok(Ok(bytes)) => String::from_utf8_lossy(&bytes)
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" / "),
            _ => String::new(),
        };
        if said.is_empty() {
            format!("ProxyCommand `{command}` {status} and printed nothing on stderr")
        } else {
            format!("ProxyCommand `{command}` {status}: {said}")
        }
    }
}

/// Runs a ProxyCommand through the shell; its stdout/stdin are the connection, its stderr is
/// read (not shown raw: `-v` tells it line by line, and a failure quotes it).
fn spawn_proxy_command(
    label: &str,
    command: &str,
    log: &ConnectionLog,
) -> Result<
    (
        tokio::io::Join<tokio::process::ChildStdout, tokio::process::ChildStdin>,
        ProxyProcess,
    ),
    HostError,
> {
    use tokio::io::AsyncBufReadExt as _;
    let mut cmd = if cfg!(windows) {
        let mut c = tokio::process::Command::new("cmd");
        c.arg("/C");
        c
    } else {
        let mut c = tokio::process::Command::new("sh");
        c.arg("-c");
        c
    };
    let mut child = cmd
        .arg(command)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| unreachable(label, format!("ProxyCommand `{command}`: {e}")))?;
    let (Some(stdout), Some(stdin), Some(stderr)) =
        (child.stdout.take(), child.stdin.take(), child.stderr.take())
    else {
        return Err(unreachable(label, "ProxyCommand: no pipes"));
    };
    let (log, label_owned) = (log.clone(), label.to_string());
    let stderr = tokio::spawn(async move {
        let mut kept = Vec::new();
        let mut lines = tokio::io::BufReader::new(stderr);
        let mut line = Vec::new();
        // Read to the end, so the command never blocks on a full pipe.
        while let Ok(n) = lines.read_until(b'\n', &mut line).await {
            if n == 0 {
                break;
            }
            let room = MAX_PROXY_STDERR.saturating_sub(kept.len());
            kept.extend_from_slice(&line[..line.len().min(room)]);
            log.say(&label_owned, || {
                format!(
                    "ProxyCommand stderr: {}",
                    String::from_utf8_lossy(&line).trim_end()
                )
            });
            line.clear();
        }
        kept
    });
    Ok((
        tokio::io::join(stdout, stdin),
        ProxyProcess { child, stderr },
    ))
}

/// Resolves and connects, with a one-line reason on failure.
async fn tcp_connect(
    label: &str,
    host: &str,
    port: u16,
    log: &ConnectionLog,
) -> Result<tokio::net::TcpStream, HostError> {
    let addrs: Vec<_> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| unreachable(label, format!("cannot resolve {host}: {e}")))?
        .collect();
    let mut last_error = format!("cannot resolve {host}: no address");
    for addr in addrs {
        log.say(label, || format!("connecting to {addr}"));
        let start = std::time::Instant::now();
        match tokio::net::TcpStream::connect(addr).await {
            Ok(stream) => {
                log.say(label, || {
                    format!(
                        "connected to {addr} (TCP) after {}",
                        millis(start.elapsed())
                    )
                });
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(e) => {
                log.say(label, || format!("connecting to {addr} failed: {e}"));
                last_error = format!("{addr}: {e}");
            }
        }
    }
    Err(unreachable(label, last_error))
}

/// Why a handshake failed, in `ssh`'s words where it has them: a server that closes the
/// connection before or during the key exchange (MaxStartups, a `sshd` refusing the address,
/// a port that is not SSH) is `Connection closed by HOST port N`, not russh's "Disconnected".
fn handshake_failure(target: &SshTarget, e: &russh::Error) -> String {
    let closed = match e {
        russh::Error::Disconnect | russh::Error::HUP => true,
        russh::Error::IO(io) => matches!(
            io.kind(),
            std::io::ErrorKind::UnexpectedEof
                | std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::ConnectionAborted
                | std::io::ErrorKind::BrokenPipe
        ),
        _ => false,
    };
    if closed {
        format!(
            "Connection closed by {} port {} during the SSH handshake",
            target.host_name, target.port
        )
    } else {
        format!(
            "SSH handshake with {}:{} failed: {e}",
            target.host_name, target.port
        )
    }
}

/// SSH handshake (with host key verification) and authentication over `stream`. With
/// `for_commands` (not a jump host, which only carries tunnels), a key file's authentication
/// asks for the first exec's channel in the same round trip.
async fn handshake<S>(
    label: &str,
    target: &SshTarget,
    stream: S,
    jump: Option<Box<SshSession>>,
    for_commands: bool,
    options: &ConnectOptions,
    in_handshake: &AtomicBool,
) -> Result<SshSession, HostError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let failure = Arc::new(Mutex::new(None));
    let verifier = Verifier {
        host: label.to_string(),
        policy: HostKeyPolicy::for_target(target),
        failure: Arc::clone(&failure),
        log: options.log.clone(),
        notices: options.notices.clone(),
    };
    let config = client::Config {
        nodelay: true,
        keepalive_interval: Some(Duration::from_secs(15)),
        keepalive_max: 3,
        inactivity_timeout: None,
        // Our patched russh (vendor/russh/PATCHES.md): authentication costs one round trip
        // instead of three. The first request goes right behind the service request, and a
        // key file's request goes signed, without asking first whether the key would do (a
        // refused key is answered USERAUTH_FAILURE all the same and the next one is tried).
        // Agent keys still ask first: the agent may make its user confirm each signature.
        sign_publickey_at_once: true,
        pipeline_auth_request: true,
        // And the first session channel is asked for behind a key file's signed request, so
        // that it opens with the success instead of a round trip later (RFC 4252 §5.1).
        pipeline_channel_open: true,
        preferred: Preferred {
            key: Cow::Owned(preferred_host_key_algorithms(target)),
            host_key_certificates: Cow::Owned(
                HostKeyPolicy::for_target(target).certificate_algorithms(),
            ),
            ..Preferred::DEFAULT
        },
        ..Default::default()
    };
    let wire = Arc::new(WireBytes::default());
    let stream = Counted::new(stream, wire.clone());
    let start = std::time::Instant::now();
    in_handshake.store(true, Ordering::Relaxed);
    let connected = client::connect_stream(Arc::new(config), stream, verifier).await;
    in_handshake.store(false, Ordering::Relaxed);
    let mut handle = match connected {
        Ok(handle) => handle,
        Err(e) => {
            if let Some(err) = failure.lock().unwrap_or_else(|p| p.into_inner()).take() {
                return Err(err);
            }
            return Err(unreachable(label, handshake_failure(target, &e)));
        }
    };
    options.log.say(label, || {
        format!(
            "version and key exchange done after {}; {}",
            millis(start.elapsed()),
            wire.said()
        )
    });
    let start = std::time::Instant::now();
    let authenticated =
        auth::authenticate(&mut handle, label, target, for_commands, options).await?;
    let authenticated_with = authenticated.with;
    options.log.say(label, || {
        format!(
            "authenticated with {authenticated_with} after {}{}; {}",
            millis(start.elapsed()),
            if authenticated.channel.is_some() {
                "; a channel asked for in the same round trip"
            } else {
                ""
            },
            wire.said()
        )
    });
    // The channel asked for with the request that succeeded is the first exec's spare: its
    // confirmation is in, or right behind the success.
    let spare = authenticated
        .channel
        .map(|opening| tokio::spawn(opening.confirmed()));
    Ok(SshSession {
        authenticated_with,
        host: label.to_string(),
        handle: Arc::new(handle),
        spare: Mutex::new(spare),
        channels: Semaphore::new(MAX_CHANNELS),
        timeouts: ReplyTimeouts::default(),
        jump,
        _proxy: None,
        log: options.log.clone(),
        kept: KeptShell::default(),
        wire,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The driver spawns these on a multi-threaded runtime.
    #[allow(dead_code)]
    fn futures_are_send(session: &SshSession, target: &SshTarget) {
        fn is_send<T: Send>(_: T) {}
        is_send(session.exec("true", b"", 1));
        is_send(SshSession::connect("h", target));
        is_send(session);
    }

    #[test]
    fn bounds_are_said_in_seconds() {
        assert_eq!(seconds(DEFAULT_IDLE_TIMEOUT), "30 s");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(
            ReplyTimeouts::default(),
            ReplyTimeouts {
                idle: Duration::from_secs(30),
                total: Duration::from_secs(300)
            }
        );
    }

    #[test]
    fn known_host_key_types_are_preferred() {
        let dir = tempfile::tempdir().unwrap();
        let kh = dir.path().join("known_hosts");
        std::fs::write(
            &kh,
            "[h]:2222 ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBDy2hAk+/B8rEKgG7xacKgvyqSyXJ/OZZPVeBkYnDDPonH5dv3aZPTUkQI/FIBlw9M8sA+odf3egmgnFrPsYG6k=\n",
        )
        .unwrap();
        let target = super::super::config::resolve_with_ssh2_config(
            "h:2222",
            &format!("UserKnownHostsFile {}\n", kh.display()),
            None,
            "me",
            None,
        )
        .unwrap();
        let order = preferred_host_key_algorithms(&target);
        assert_eq!(order.len(), Preferred::DEFAULT.key.len());
        assert!(
            matches!(order[0], Algorithm::Ecdsa { .. }),
            "{:?}",
            order[0]
        );
        // Nothing known: russh's own order.
        let target =
            super::super::config::resolve_with_ssh2_config("other", "", None, "me", None).unwrap();
        assert_eq!(
            preferred_host_key_algorithms(&target),
            Preferred::DEFAULT.key.to_vec()
        );
    }
}
