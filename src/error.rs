//! The top-level error and the one function that decides exit codes (SPEC "Exit codes").

use crate::driver::DriverError;
use clankie_engine::cursor::CursorError;
use clankie_engine::page::PlanError;
use clankie_engine::resolve::ResolveError;
use clankie_host::HostError;

/// Exit codes, as SPEC.md lists them.
pub mod exit {
    pub const OK: u8 = 0;
    pub const FAILURE: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const HOST: u8 = 3;
    pub const NOT_FOUND: u8 = 4;
    pub const STALE: u8 = 5;
    pub const SOURCE: u8 = 6;
    /// `check`: another run holds the state file.
    pub const LOCKED: u8 = 75;
}

/// Anything that ends an invocation with a non-zero status.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Driver(#[from] DriverError),
    #[error("{0}")]
    Other(String),
    /// Writing the output failed (a closed pipe ends the run quietly, like other filters).
    #[error("cannot write output: {0}")]
    Output(#[from] std::io::Error),
}

impl From<HostError> for Error {
    fn from(e: HostError) -> Error {
        Error::Driver(DriverError::Host(e))
    }
}

impl From<CursorError> for Error {
    fn from(e: CursorError) -> Error {
        Error::Driver(DriverError::Cursor(e))
    }
}

impl From<ResolveError> for Error {
    fn from(e: ResolveError) -> Error {
        Error::Driver(DriverError::Resolve(e))
    }
}

/// The exit status for an error.
pub fn exit_code(error: &Error) -> u8 {
    match error {
        Error::Usage(_) => exit::USAGE,
        Error::Other(_) | Error::Output(_) => exit::FAILURE,
        Error::Driver(e) => match e {
            DriverError::Cursor(_) => exit::USAGE,
            DriverError::Resolve(ResolveError::UnknownHarness(_) | ResolveError::InvalidId(_)) => {
                exit::USAGE
            }
            DriverError::Resolve(ResolveError::NotFound(_) | ResolveError::Ambiguous { .. }) => {
                exit::NOT_FOUND
            }
            DriverError::Host(h) => host_exit_code(h),
            DriverError::Source { .. } => exit::SOURCE,
            DriverError::Database(_) => exit::SOURCE,
            DriverError::Plan { source, .. } => match source {
                PlanError::Stale { .. } => exit::STALE,
                PlanError::Malformed { .. }
                | PlanError::MalformedRow { .. }
                | PlanError::Oversized { .. } => exit::SOURCE,
                PlanError::ShortRead { .. } => exit::HOST,
            },
        },
    }
}

pub fn host_exit_code(error: &HostError) -> u8 {
    match error {
        HostError::Unreachable { .. }
        | HostError::Auth { .. }
        | HostError::HostKeyUnknown { .. }
        | HostError::HostKeyChanged { .. }
        | HostError::HostKeyRevoked { .. }
        | HostError::ShellNotClean { .. }
        | HostError::Protocol { .. }
        | HostError::SshConfig { .. } => exit::HOST,
        HostError::NotFound { .. } => exit::NOT_FOUND,
        HostError::PathRefused { .. } => exit::SOURCE,
        HostError::Io { .. } => exit::FAILURE,
    }
}
