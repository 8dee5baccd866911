//! SSH: the host whose two primitives are generated scripts run over SSH ([`SshHost`], in
//! `host.rs`), the russh connection it runs them on ([`SshSession`], in `session.rs`), and
//! what that connection needs: the user's SSH configuration (`config.rs`), known_hosts
//! (`known_hosts.rs`) and authentication (`auth.rs`).

mod auth;
pub mod config;
mod host;
pub mod known_hosts;
mod session;

pub use config::{ConfigSource, LocalAccount, SshTarget, StrictHostKeyChecking, resolve, resolve_as};
pub use host::{Probe, SshHost};
pub use session::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_REPLY_TIMEOUT, ExecOutput, MAX_CHANNELS,
    ReplyTimeouts, SshSession,
};
