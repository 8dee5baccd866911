//! SSH: the host whose two primitives are generated scripts run over SSH ([`SshHost`], in
//! `host.rs`), the russh connection it runs them on ([`SshSession`], in `session.rs`), and
//! what that connection needs: the user's SSH configuration (`config.rs`), known_hosts
//! (`known_hosts.rs`) and authentication (`auth.rs`), or instead the user's own OpenSSH master
//! (`mux.rs`, connection sharing through ControlPath). Here: what a caller lends every
//! connection ([`ConnectOptions`]): a [`ConnectionLog`] for `-v`, a [`PassphrasePrompt`].

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

mod auth;
mod bulk;
pub mod config;
mod host;
mod inline;
mod kept_shell;
pub mod known_hosts;
mod mux;
mod pattern;
mod session;
mod wire_count;

pub use config::{
    ConfigSource, ControlMaster, ControlPersist, LocalAccount, Resolution, Resolving, SshTarget,
    StrictHostKeyChecking, resolve, resolve_ahead, resolve_as,
};
pub use host::{Probe, SshHost};
pub use mux::ConnectionPath;
pub use session::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_REPLY_TIMEOUT, ExecOutput, MAX_CHANNELS,
    ReplyTimeouts, SshSession,
};

/// Where `-v` tells the story of a connection, one line per step as `ssh -v` does: the config
/// source, the resolved host, port and user, the proxy, the host key and how it was verified,
/// each identity offered and the answer, each channel and exec. Off unless given a sink; the
/// caller's sink is cloned into each connection (no global state).
#[derive(Clone, Default)]
pub struct ConnectionLog(Option<Arc<LineSink>>);

/// What receives `-v` lines.
type LineSink = dyn Fn(&str) + Send + Sync;

/// What asks for a passphrase, given the prompt.
type AskPassphrase = dyn Fn(&str) -> Option<String> + Send + Sync;

impl ConnectionLog {
    /// A log that hands each line (`HOST: step`) to `sink`.
    pub fn to(sink: impl Fn(&str) + Send + Sync + 'static) -> ConnectionLog {
        ConnectionLog(Some(Arc::new(sink)))
    }

    /// Whether anyone listens.
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Hands `line` to the sink as it is (no host prefix): a notice in `ssh`'s own words.
    pub(crate) fn tell(&self, line: &str) {
        if let Some(sink) = &self.0 {
            sink(line);
        }
    }

    /// Tells one step of `host`'s connection; `line` is only built when someone listens.
    pub(crate) fn say(&self, host: &str, line: impl FnOnce() -> String) {
        if let Some(sink) = &self.0 {
            sink(&format!("{host}: {}", line()));
        }
    }
}

impl std::fmt::Debug for ConnectionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_on() {
            "ConnectionLog(on)"
        } else {
            "ConnectionLog(off)"
        })
    }
}

/// Asks for an encrypted identity file's passphrase: given the prompt, returns what was typed
/// (`None` or empty: skip the key). The caller decides whether there is anyone to ask (a
/// terminal); the host layer only calls it, one prompt at a time, at most three times a key,
/// and keeps an unlocked key for the other hosts of the run.
#[derive(Clone)]
pub struct PassphrasePrompt {
    ask: Arc<AskPassphrase>,
    /// Keys unlocked so far, by path; the lock also keeps two prompts from interleaving.
    unlocked: Arc<tokio::sync::Mutex<HashMap<PathBuf, Arc<russh::keys::PrivateKey>>>>,
}

impl PassphrasePrompt {
    /// A prompt that calls `ask` (it blocks: it runs off the async threads).
    pub fn new(ask: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> PassphrasePrompt {
        PassphrasePrompt {
            ask: Arc::new(ask),
            unlocked: Arc::default(),
        }
    }
}

impl std::fmt::Debug for PassphrasePrompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PassphrasePrompt")
    }
}

/// What the caller lends every SSH connection it opens: where `-v` lines go, where what `ssh`
/// says even without `-v` goes (`Warning: Permanently added …`), where our own warnings go (a
/// ControlPath refused because another user could have put a master there), and whether (and
/// how) to ask for a passphrase. The default says nothing and never asks (cron).
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    pub log: ConnectionLog,
    pub notices: ConnectionLog,
    /// One line each, `HOST: what`, without a program prefix (the caller adds its own).
    pub warnings: ConnectionLog,
    pub passphrase: Option<PassphrasePrompt>,
}
