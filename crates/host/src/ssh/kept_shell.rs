//! A kept shell: one `sh -s` left running on a channel of a warm connection, which runs the
//! POSIX scripts of a host whose dialect is settled, one after another, each in a subshell of
//! its own (`( SCRIPT )`). A call then costs the round trip of its script and reply and the
//! script's own programs, where an exec also starts sshd's session, the login shell and `sh`.
//! A host opts in ([`super::SshHost::keep_shell`]): an MCP server's warm hosts, which an agent
//! polls; or from the moment reads follow that each wait on the one before
//! ([`crate::Host::keep_for_reads`]: a database's B-tree levels, a `--follow`'s polls of it).
//!
//! - A script's reply ends at its frame's `END` line (`<nonce>:END <rc>`, the nonce fresh for
//!   each call), which every script prints last, also when it fails (`fail` exits the
//!   subshell, never the kept shell). What the subshell changes (`cd`, variables, traps) ends
//!   with it; every command inside reads `/dev/null`, never the scripts that follow.
//! - One call at a time: a call that finds the kept shell busy, or not open yet, runs as an exec
//!   of its own. It is opened once the host's dialect is settled as POSIX (in the background:
//!   no call waits for it).
//! - A kept shell that ends (the host's `sh` died or was killed, the channel closed) before a
//!   reply's end is dropped and the call runs as an exec, as if there had been none; one that
//!   breaks the reply's bounds (time, size) is closed and the call fails as an exec's would.
//!   Another is opened behind the call that found one gone; after [`MAX_FAILURES`] shells
//!   that ended, none is opened again on this connection.
//! - No script is sent before the shell says it is ready (after the login shell's rc files),
//!   so an rc file that reads stdin never eats one.
//! - A script sent again (the same text but for its nonce: a `--follow`'s listing and header
//!   read each poll, an MCP server's calls) is held by the shell: it goes whole into a variable
//!   of the kept shell (a script sent as it is, the first time; one sent compressed, the
//!   second) (`_clk_sN='…'`, at most [`HELD`] of them, each at most
//!   [`MAX_HELD`] bytes naming its nonce at most [`MAX_HELD_NONCES`] times) and runs from it, and each time after only a line goes, which puts the
//!   call's nonce in place of the held one's and runs the result (`eval`, in the subshell).
//!   What runs is byte for byte the script the call made (the parts between the nonces are
//!   compared here before the line is sent); a shell that ends takes what it held with it.
//! - Nothing is written on the host: the scripts are those an exec runs, sent on stdin, and
//!   what is held lives in the kept shell's memory.

use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use russh::{ChannelMsg, client};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::ConnectionLog;

/// Kept shells that may end before the connection stops opening them.
const MAX_FAILURES: u32 = 2;

/// The exec string of a kept shell: `sh -s`, the scripts on stdin, after a line that says the
/// login shell's rc files are done (one that reads stdin never sees a script: none is sent
/// before that line).
const KEPT_EXEC: &str = "sh -c 'echo clankie-kept-shell-ready; exec sh -s'";

/// What the kept shell says once it reads its stdin.
const READY: &[u8] = b"clankie-kept-shell-ready\n";

/// The most a login shell may print before [`READY`] (its rc files' noise).
const MAX_NOISE: usize = 64 * 1024;

/// Scripts a kept shell holds at once (the one used longest ago is replaced).
const HELD: usize = 8;

/// The largest script a kept shell holds.
const MAX_HELD: usize = 64 * 1024;

/// The most times a held script may name its nonce: the line that runs it takes the text
/// apart once for each, in the shell.
const MAX_HELD_NONCES: usize = 32;

/// Scripts remembered as sent once (by their text without the nonce), so that the second
/// sending of one is held.
const SEEN: usize = 64;

type Opening = tokio::task::JoinHandle<Result<russh::Channel<client::Msg>, String>>;

/// A connection's kept shell, and whether one may be opened.
#[derive(Debug, Default)]
pub(crate) struct KeptShell {
    state: tokio::sync::Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    shell: Option<Shell>,
    opening: Option<Opening>,
    failures: u32,
}

#[derive(Debug)]
struct Shell {
    read: russh::ChannelReadHalf,
    write: russh::ChannelWriteHalf<client::Msg>,
    held: Held,
}

/// What a kept shell holds (`_clk_s<slot>`), and the scripts it was sent once.
#[derive(Debug, Default)]
struct Held {
    slots: Vec<Slot>,
    seen: VecDeque<u64>,
    calls: u64,
}

/// A script held in the variable `_clk_s<its index>`: its text as sent, with that call's nonce.
#[derive(Debug)]
struct Slot {
    text: Vec<u8>,
    nonce: String,
    used: u64,
}

/// What a kept shell's call needs of its connection, and the bounds of its reply (those of an
/// exec's).
pub(crate) struct Connection<'a, H: client::Handler> {
    pub handle: &'a Arc<client::Handle<H>>,
    /// The connection's channels: a kept shell holds one for as long as it lives.
    pub channels: &'a Semaphore,
    pub host: &'a str,
    pub log: &'a ConnectionLog,
    /// The longest wait for the next byte.
    pub idle: Duration,
    /// The longest a whole reply may take.
    pub total: Duration,
    /// The most stdout a reply may hold.
    pub max_stdout: usize,
    /// The most stderr kept (the rest is dropped).
    pub max_stderr: usize,
    /// How long closing a shell may take before it is dropped instead.
    pub close_grace: Duration,
}

/// A reply from the kept shell: its stdout through the script's `END` line, and the stderr
/// that came meanwhile; and how the script went.
#[derive(Debug)]
pub(crate) struct Reply {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The bytes sent for the script.
    pub sent: usize,
    /// Whether it ran from what the shell held.
    pub held: bool,
}

/// How a reply broke its bounds (the shell is closed; the call fails).
#[derive(Debug)]
pub(crate) enum Broke {
    /// No byte within `idle`, or not done by `whole`, after `received` bytes.
    Stalled { received: usize, whole: Instant },
    /// Over `max_stdout`.
    TooLarge,
    /// The script could not be sent within `idle`.
    NoRoom,
}

/// Why a call did not get its reply from the kept shell.
enum Ended {
    /// The shell or its channel ended before the reply did: the call may run as an exec.
    Gone(String),
    /// The reply broke its bounds: the call fails.
    Failed(Broke),
}

impl KeptShell {
    /// Starts opening the kept shell when there is none (the host's dialect has just been
    /// settled as POSIX), so that the next call finds it open.
    pub(crate) async fn prepare<H: client::Handler + 'static>(&self, conn: &Connection<'_, H>) {
        let Ok(mut state) = self.state.try_lock() else {
            return;
        };
        if state.shell.is_none() {
            state.take_opened(conn).await;
        }
        if state.shell.is_none() {
            state.open(conn);
        }
    }

    /// Runs `script` (a POSIX script that prints its frame, `nonce`'s `END` line last) on the
    /// kept shell; `plain` is the script it runs (`script` itself, or what a compressed
    /// `script` unpacks to), which the shell may hold. `None` when there is none ready (one is
    /// opened meanwhile) or it is busy, or when it ended before the reply: the caller runs the
    /// script as an exec.
    pub(crate) async fn run<H: client::Handler + 'static>(
        &self,
        conn: &Connection<'_, H>,
        script: &[u8],
        plain: &[u8],
        nonce: &str,
    ) -> Option<Result<Reply, Broke>> {
        let mut state = self.state.try_lock().ok()?;
        if state.shell.is_none() {
            state.take_opened(conn).await;
        }
        let Some(shell) = state.shell.as_mut() else {
            state.open(conn);
            return None;
        };
        match shell.call(conn, script, plain, nonce).await {
            Ok(reply) => Some(Ok(reply)),
            Err(ended) => {
                let shell = state.shell.take()?;
                shell.close(conn.close_grace).await;
                conn.channels.add_permits(1);
                match ended {
                    Ended::Gone(why) => {
                        state.failures += 1;
                        conn.log.say(conn.host, || {
                            format!("kept shell: {why}; the command runs as an exec")
                        });
                        // Another for the calls after this one.
                        state.open(conn);
                        None
                    }
                    Ended::Failed(broke) => Some(Err(broke)),
                }
            }
        }
    }
}

impl State {
    /// Starts opening a kept shell unless one is being opened, too many ended, or the
    /// connection has no channel to spare for it.
    fn open<H: client::Handler + 'static>(&mut self, conn: &Connection<'_, H>) {
        if self.opening.is_some() || self.failures >= MAX_FAILURES {
            return;
        }
        // One channel always stays for the calls' own execs.
        if conn.channels.available_permits() < 2 {
            return;
        }
        let Ok(permit) = conn.channels.try_acquire() else {
            return;
        };
        permit.forget();
        let handle = Arc::clone(conn.handle);
        let bound = conn.idle.min(conn.total);
        self.opening = Some(tokio::spawn(async move {
            let mut channel = handle
                .channel_open_session()
                .await
                .map_err(|e| e.to_string())?;
            let started = async {
                channel
                    .exec(true, KEPT_EXEC)
                    .await
                    .map_err(|e| e.to_string())?;
                ready(&mut channel).await
            };
            let why = match tokio::time::timeout(bound, started).await {
                Ok(Ok(())) => return Ok(channel),
                Ok(Err(why)) => why,
                Err(_) => "no ready line in time".to_string(),
            };
            let _ = tokio::time::timeout(bound, channel.close()).await;
            Err(why)
        }));
    }

    /// Takes the shell being opened when it is open.
    async fn take_opened<H: client::Handler + 'static>(&mut self, conn: &Connection<'_, H>) {
        if !self.opening.as_ref().is_some_and(|o| o.is_finished()) {
            return;
        }
        let Some(opening) = self.opening.take() else {
            return;
        };
        match opening.await {
            Ok(Ok(channel)) => {
                let (read, write) = channel.split();
                self.shell = Some(Shell {
                    read,
                    write,
                    held: Held::default(),
                });
                conn.log.say(conn.host, || {
                    format!("kept shell: {KEPT_EXEC:?} open for the next scripts")
                });
            }
            Ok(Err(e)) => {
                self.failures += 1;
                conn.channels.add_permits(1);
                conn.log
                    .say(conn.host, || format!("kept shell: not opened ({e})"));
            }
            Err(_) => {
                self.failures += 1;
                conn.channels.add_permits(1);
            }
        }
    }
}

/// Waits for the kept shell's [`READY`] line (whatever the login shell printed before it).
async fn ready(channel: &mut russh::Channel<client::Msg>) -> Result<(), String> {
    let mut seen = Vec::new();
    loop {
        match channel.wait().await {
            Some(ChannelMsg::Data { data }) => {
                seen.extend_from_slice(&data);
                if memchr::memmem::find(&seen, READY).is_some() {
                    return Ok(());
                }
                if seen.len() > MAX_NOISE {
                    return Err("no ready line".to_string());
                }
            }
            None | Some(ChannelMsg::Eof | ChannelMsg::Close | ChannelMsg::Failure) => {
                return Err("the shell ended".to_string());
            }
            Some(ChannelMsg::ExitStatus { exit_status }) => {
                return Err(format!("the shell exited ({exit_status})"));
            }
            Some(_) => {}
        }
    }
}

impl Shell {
    /// Sends `script` in a subshell (or the line that runs `plain` from what the shell holds)
    /// and reads until its `END` line, within the bounds an exec's reply has.
    async fn call<H: client::Handler + 'static>(
        &mut self,
        conn: &Connection<'_, H>,
        script: &[u8],
        plain: &[u8],
        nonce: &str,
    ) -> Result<Reply, Ended> {
        let (idle, total) = (conn.idle, conn.total);
        let start = Instant::now();
        let whole = start + total;
        let (sent, held) = self.held.wrap(script, plain, nonce);
        let writing = self.write.data(&sent[..]);
        match tokio::time::timeout_at((start + idle).min(whole), writing).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(Ended::Gone(format!("sending the script: {e}"))),
            Err(_) => return Err(Ended::Failed(Broke::NoRoom)),
        }
        let end = format!("\n{nonce}:END ").into_bytes();
        let mut out = Reply {
            stdout: Vec::new(),
            stderr: Vec::new(),
            sent: sent.len(),
            held,
        };
        let deadline = tokio::time::sleep_until((start + idle).min(whole));
        tokio::pin!(deadline);
        let mut received = 0usize;
        loop {
            tokio::select! {
                () = &mut deadline => {
                    return Err(Ended::Failed(Broke::Stalled { received, whole }));
                }
                msg = self.read.wait() => match msg {
                    Some(ChannelMsg::Data { data }) => {
                        received += data.len();
                        deadline.as_mut().reset((Instant::now() + idle).min(whole));
                        if out.stdout.len() + data.len() > conn.max_stdout {
                            return Err(Ended::Failed(Broke::TooLarge));
                        }
                        let scan_from = out.stdout.len().saturating_sub(end.len() + 16);
                        out.stdout.extend_from_slice(&data);
                        if let Some(len) = through_end(&out.stdout, scan_from, &end) {
                            // Nothing follows a script's END line; what would is not this
                            // call's.
                            out.stdout.truncate(len);
                            return Ok(out);
                        }
                    }
                    Some(ChannelMsg::ExtendedData { data, ext: 1 }) => {
                        received += data.len();
                        deadline.as_mut().reset((Instant::now() + idle).min(whole));
                        let room = conn.max_stderr.saturating_sub(out.stderr.len());
                        out.stderr.extend_from_slice(&data[..data.len().min(room)]);
                    }
                    None | Some(ChannelMsg::Eof | ChannelMsg::Close) => {
                        return Err(Ended::Gone("the shell's channel ended".to_string()));
                    }
                    Some(ChannelMsg::ExitStatus { exit_status }) => {
                        return Err(Ended::Gone(format!("the shell exited ({exit_status})")));
                    }
                    Some(ChannelMsg::ExitSignal { signal_name, .. }) => {
                        return Err(Ended::Gone(format!("the shell was killed ({signal_name:?})")));
                    }
                    Some(ChannelMsg::Failure) => {
                        return Err(Ended::Gone("the server refused to run it".to_string()));
                    }
                    Some(_) => {}
                },
            }
        }
    }

    /// Closes the channel (the server then ends the shell), or drops it when even that stalls.
    async fn close(self, grace: Duration) {
        let _ = tokio::time::timeout(grace, self.write.close()).await;
    }
}

impl Held {
    /// What to send for a call: `script` in a subshell; or `plain` held (`_clk_sN='…'`) and run
    /// from there, when `script` is `plain` or was sent before; or, for one held, the line that runs it from
    /// there with `nonce` in place of the held one's. Whether it runs from what is held.
    fn wrap(&mut self, script: &[u8], plain: &[u8], nonce: &str) -> (Vec<u8>, bool) {
        self.calls += 1;
        let holdable = plain.len() <= MAX_HELD
            && !plain.contains(&0)
            && nonce_is_plain(nonce)
            && memchr::memmem::find(plain, nonce.as_bytes()).is_some();
        if !holdable {
            return (in_subshell(script), false);
        }
        let parts = split_at(plain, nonce);
        if parts.len() > MAX_HELD_NONCES + 1 {
            return (in_subshell(script), false);
        }
        if let Some(slot) = self
            .slots
            .iter()
            .position(|held| split_at(&held.text, &held.nonce) == parts)
        {
            self.slots[slot].used = self.calls;
            let old = &self.slots[slot].nonce;
            let line = format!(
                "(\n_clk_v=$_clk_s{slot}; _clk_r=\n\
                 while :; do case $_clk_v in *{old}*) _clk_r=$_clk_r${{_clk_v%%{old}*}}{nonce}; \
                 _clk_v=${{_clk_v#*{old}}} ;; *) break ;; esac; done\n\
                 _clk_v=$_clk_r$_clk_v; unset _clk_r; eval \"$_clk_v\"\n)\n"
            );
            return (line.into_bytes(), true);
        }
        let mut fingerprint = DefaultHasher::new();
        parts.hash(&mut fingerprint);
        let fingerprint = fingerprint.finish();
        if !self.seen.contains(&fingerprint) {
            if self.seen.len() >= SEEN {
                self.seen.pop_front();
            }
            self.seen.push_back(fingerprint);
            // A script sent compressed is sent so the first time: held, it would go whole.
            if script != plain {
                return (in_subshell(script), false);
            }
        }
        let slot = if self.slots.len() < HELD {
            self.slots.push(Slot {
                text: Vec::new(),
                nonce: String::new(),
                used: 0,
            });
            self.slots.len() - 1
        } else {
            (0..self.slots.len())
                .min_by_key(|&i| self.slots[i].used)
                .unwrap_or(0)
        };
        self.slots[slot] = Slot {
            text: plain.to_vec(),
            nonce: nonce.to_string(),
            used: self.calls,
        };
        let mut sent = format!("_clk_s{slot}='").into_bytes();
        for &byte in plain {
            if byte == b'\'' {
                sent.extend_from_slice(b"'\\''");
            } else {
                sent.push(byte);
            }
        }
        sent.extend_from_slice(format!("'\n(\neval \"$_clk_s{slot}\"\n)\n").as_bytes());
        (sent, true)
    }
}

/// `script` in a subshell of the kept shell.
fn in_subshell(script: &[u8]) -> Vec<u8> {
    let mut sent = Vec::with_capacity(script.len() + 4);
    sent.extend_from_slice(b"(\n");
    sent.extend_from_slice(script);
    sent.extend_from_slice(b"\n)\n");
    sent
}

/// A nonce a held script's line may name in a `case` pattern and a parameter expansion: a
/// non-empty word of letters and digits.
fn nonce_is_plain(nonce: &str) -> bool {
    !nonce.is_empty() && nonce.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// `text`'s parts between the occurrences of `nonce`, leftmost first, as the shell's
/// `${v%%NONCE*}` and `${v#*NONCE}` take them apart.
fn split_at<'t>(text: &'t [u8], nonce: &str) -> Vec<&'t [u8]> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(at) = memchr::memmem::find(rest, nonce.as_bytes()) {
        parts.push(&rest[..at]);
        rest = &rest[at + nonce.len()..];
    }
    parts.push(rest);
    parts
}

/// The length of `stdout` through the end of its `END` line (`end` is `\n<nonce>:END `, found
/// at or after `from`), when that line is complete.
fn through_end(stdout: &[u8], from: usize, end: &[u8]) -> Option<usize> {
    let at = memchr::memmem::find(&stdout[from..], end)? + from;
    let rest = &stdout[at + end.len()..];
    let newline = memchr::memchr(b'\n', rest)?;
    Some(at + end.len() + newline + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_ends_with_its_end_line() {
        let end = b"\nabc:END ";
        assert_eq!(through_end(b"x\nabc:END 0", 0, end), None);
        assert_eq!(through_end(b"x\nabc:END 0\n", 0, end), Some(12));
        assert_eq!(through_end(b"x\nabc:END 0\nmore", 0, end), Some(12));
        assert_eq!(through_end(b"x\nabd:END 0\n", 0, end), None);
    }

    /// A script with `nonce`: quotes, a backslash, `%` and `*`, the nonce several times (once
    /// inside a word), its END line, and a comment of 800 bytes.
    fn script_of(nonce: &str, tag: &str) -> Vec<u8> {
        format!(
            "x='it'\\''s {tag} \\ 100% *'; printf '%s\\n' \"$x\" {nonce}-{nonce}x \"${{y:-none}}\"\n\
             y=set; printf '%s:END 0\\n' {nonce}\n# {}\n",
            "padding ".repeat(100)
        )
        .into_bytes()
    }

    /// `input` run by `shell -s` (`None` where that shell is missing).
    fn run_by(shell: &str, input: &[u8]) -> Option<Vec<u8>> {
        use std::io::Write;
        let mut words = shell.split(' ');
        let mut child = std::process::Command::new(words.next()?)
            .args(words)
            .arg("-s")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .ok()?;
        child.stdin.take()?.write_all(input).ok()?;
        Some(child.wait_with_output().ok()?.stdout)
    }

    fn sh(input: &[u8]) -> Vec<u8> {
        run_by("sh", input).unwrap()
    }

    #[cfg(unix)]
    #[test]
    fn a_script_sent_again_is_held_and_runs_byte_for_byte_as_sent() {
        let mut held = Held::default();
        let (mut input, mut want, mut how) = (Vec::new(), Vec::new(), Vec::new());
        for call in 0..5 {
            let nonce = format!("N{call}q7");
            // Calls 0, 1, 3 and 4 send the same script (but for the nonce); call 2 another.
            let tag = if call == 2 { "other" } else { "same" };
            let script = script_of(&nonce, tag);
            let (sent, was_held) = held.wrap(&script, &script, &nonce);
            how.push((was_held, sent.len() < 400));
            input.extend_from_slice(&sent);
            want.extend_from_slice(&sh(&script));
        }
        // Held the first time (sent whole); then a line; the other script held whole.
        assert_eq!(
            how,
            [
                (true, false),
                (true, true),
                (true, false),
                (true, true),
                (true, true)
            ]
        );
        // A script sent compressed goes so the first time, and is held the second.
        let mut how = Vec::new();
        for call in 0..3 {
            let nonce = format!("Z{call}q7");
            let script = script_of(&nonce, "packed");
            let packed = crate::script::posix::compressed_pipe(&script);
            let (sent, was_held) = held.wrap(&packed, &script, &nonce);
            how.push((was_held, sent.starts_with(b"(\n_clk_v=")));
            input.extend_from_slice(&sent);
            want.extend_from_slice(&sh(&script));
        }
        assert_eq!(how, [(false, false), (true, false), (true, true)]);
        for shell in ["sh", "dash", "bash", "busybox sh", "mksh", "yash", "ksh"] {
            let Some(got) = run_by(shell, &input) else {
                continue;
            };
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want),
                "{shell}"
            );
        }
    }

    #[test]
    fn only_a_script_that_names_its_plain_nonce_is_held() {
        let mut held = Held::default();
        for _ in 0..3 {
            let script = script_of("a*b", "x");
            assert!(!held.wrap(&script, &script, "a*b").1);
            let script = "n1 ".repeat(MAX_HELD_NONCES + 1).into_bytes();
            assert!(!held.wrap(&script, &script, "n1").1);
            let script = b"echo no nonce".to_vec();
            assert!(!held.wrap(&script, &script, "abc").1);
        }
        assert!(held.slots.is_empty());
    }
}
