//! Which failed host calls are tried again, and which fail a whole host: one policy on
//! [`HostError`] ([`recovery`]), for `--follow`'s polls, `check` and the MCP server's calls.

use clankie_host::HostError;

/// What a host error says about the host and about trying again (see [`recovery`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// The connection broke: it could not be made, dropped, stalled past its time bound, or
    /// answered outside the wire format. The host fails as a whole; a new connection may
    /// answer.
    Reconnect,
    /// The host refused who we are or how we reach it (authentication, a host key, the SSH
    /// configuration): the host fails as a whole, and asking again gets the same answer.
    Refused,
    /// One file could not be read just now (gone, an I/O error): its session fails and the rest
    /// of the host goes on; a later read may find it again (a file replaced by a rename).
    FileForNow,
    /// One file is not read as it is (a path refused, a reply over a cap): its session fails,
    /// and asking again would fetch the same refusal (or the same oversized reply) again.
    FileAsItIs,
}

/// How a failed host call recovers: the one retry policy, which every caller applies.
///
/// - `--follow` ([`SessionFeed::follow`], [`HostFeed::follow`]): after an error that
///   [`Recovery::retries`], the connection is dropped and the poll runs again from the last
///   cursor after 1 s, 2 s, … at most 30 s; any other error ends the follow.
/// - The MCP server: a call runs once more, on a new connection, only when the error
///   [`Recovery::retries`] and the connection that failed was kept from an earlier call
///   ([`Recovery::retries_call`]): a kept connection may have been dropped meanwhile (the other
///   side restarted, a NAT forgot it), while a new one that fails is the host's answer now.
/// - `check` does not try again within a run: the next run does, from the cursors kept.
///   [`Recovery::fails_the_host`] says whether an error fails the host (exit 3) or only the
///   session it met, the others going on.
///
/// Trying again is safe: a read changes nothing on the host, and a page read again from the
/// same cursor gives the same records (a follow gives none twice). It is never done for what
/// cannot change by itself: who we are, a host key, the SSH configuration, a refused path, a
/// reply over a cap (asking every few seconds would fetch it again and again).
///
/// [`SessionFeed::follow`]: super::follow::SessionFeed::follow
/// [`HostFeed::follow`]: super::follow::HostFeed::follow
pub fn recovery(err: &HostError) -> Recovery {
    match err {
        HostError::Unreachable { .. }
        | HostError::TimedOut { .. }
        | HostError::ShellNotClean { .. }
        | HostError::Protocol { .. } => Recovery::Reconnect,
        HostError::SshConfig { .. }
        | HostError::Auth { .. }
        | HostError::HostKeyUnknown { .. }
        | HostError::HostKeyChanged { .. }
        | HostError::HostKeyRevoked { .. } => Recovery::Refused,
        HostError::NotFound { .. } | HostError::Io { .. } => Recovery::FileForNow,
        HostError::PathRefused { .. } | HostError::ReplyTooLarge { .. } => Recovery::FileAsItIs,
    }
}

impl Recovery {
    /// Whether a later attempt may succeed where this one failed: the connection broke, or a
    /// file could not be read just now.
    pub fn retries(self) -> bool {
        match self {
            Recovery::Reconnect | Recovery::FileForNow => true,
            Recovery::Refused | Recovery::FileAsItIs => false,
        }
    }

    /// Whether one call (the MCP server's) runs once more on a new connection: only when the
    /// connection that failed was kept from an earlier call (`connection_was_kept`).
    pub fn retries_call(self, connection_was_kept: bool) -> bool {
        connection_was_kept && self.retries()
    }

    /// Whether the error fails the whole host (it could not be reached, refused who we are, or
    /// answered outside the wire format) rather than the one session it met.
    pub fn fails_the_host(self) -> bool {
        match self {
            Recovery::Reconnect | Recovery::Refused => true,
            Recovery::FileForNow | Recovery::FileAsItIs => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retries(err: &HostError) -> bool {
        recovery(err).retries()
    }

    #[test]
    fn only_connection_errors_are_transient() {
        let host = || "h".to_string();
        assert!(retries(&HostError::Unreachable {
            host: host(),
            reason: "reset".into()
        }));
        assert!(retries(&HostError::Protocol {
            host: host(),
            reason: "eof".into()
        }));
        assert!(retries(&HostError::TimedOut {
            host: host(),
            reason: "no reply for 30 s after the command was sent".into()
        }));
        assert!(!retries(&HostError::ReplyTooLarge {
            host: host(),
            reason: "remote output over 67108864 bytes; refusing it".into()
        }));
        assert!(!retries(&HostError::Auth {
            host: host(),
            reason: "denied".into()
        }));
        assert!(!retries(&HostError::HostKeyChanged {
            host: host(),
            key_host: "h".into(),
            fingerprint: "SHA256:x".into(),
            known_hosts_line: "~/.ssh/known_hosts:1".into(),
        }));
    }

    #[test]
    fn a_call_is_tried_again_only_on_a_kept_connection() {
        let dropped = recovery(&HostError::Unreachable {
            host: "h".into(),
            reason: "reset".into(),
        });
        assert!(dropped.retries_call(true));
        assert!(!dropped.retries_call(false));
        let refused = recovery(&HostError::Auth {
            host: "h".into(),
            reason: "denied".into(),
        });
        assert!(!refused.retries_call(true));
    }

    #[test]
    fn the_host_fails_for_its_connection_and_who_we_are_and_a_session_for_its_file() {
        let h = || "h".to_string();
        let fails = |err: HostError| recovery(&err).fails_the_host();
        assert!(fails(HostError::Unreachable {
            host: h(),
            reason: "r".into()
        }));
        assert!(fails(HostError::ShellNotClean {
            host: h(),
            first_bytes: "motd".into()
        }));
        assert!(fails(HostError::SshConfig {
            host: h(),
            reason: "r".into()
        }));
        assert!(!fails(HostError::NotFound {
            host: h(),
            path: "p".into()
        }));
        assert!(!fails(HostError::PathRefused {
            host: h(),
            path: "p".into(),
            reason: "r".into()
        }));
        assert!(!fails(HostError::Io {
            host: h(),
            path: "p".into(),
            reason: "r".into()
        }));
    }
}
