//! `clankie-read resume HOST:SESSION`: prints the harness's own resume command (with
//! `--format json`, a `resume` object naming the session too); runs nothing.

use std::io::Write;

use clap::Args;

use super::context::{Context, GlobalArgs, split_target};
use crate::driver::{Reader, roots_for};
use crate::error::{Error, Outcome};
use crate::render::ResumeReport;
use clankie_engine::resolve::SessionQuery;
use clankie_engine::resume::Remote;
use clankie_host::{Dialect, Transport};

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The session: `HOST:SESSION`, where SESSION is an id, a unique prefix of at least 6
    /// characters, `HARNESS/ID`, or `@latest` for the host's newest session (`@latest/HARNESS`
    /// within one harness).
    #[arg(value_name = "HOST:SESSION")]
    pub target: String,
}

pub(super) async fn run(global: &GlobalArgs, args: ResumeArgs) -> Result<Outcome, Error> {
    let (host_name, session_arg) = split_target(&args.target)?;
    let query = SessionQuery::parse(session_arg)?;
    let ctx = Context::new(global)?;
    let opened = ctx.open(host_name)?;
    let host = opened.host;
    let reader = Reader::new(&host);
    let session = reader
        .resolve_session(&roots_for(&opened.roots, query.harness), &query)
        .await?;
    if !clankie_engine::harness::resumable(session.harness()) {
        return Err(crate::error::UsageError::NothingToResume {
            harness: session.harness().name().to_string(),
            session: session.id.clone(),
        }
        .into());
    }
    if let Some((parent, _)) = session.id.split_once('+')
        && session.agent.is_some()
    {
        // The harness resumes a subagent as its parent: a command naming a parent whose
        // transcript is gone would fail, so none is printed.
        let query = SessionQuery::parse(&format!("{}/{parent}", session.harness().name()))?;
        let found = reader
            .resolve_session(&roots_for(&opened.roots, query.harness), &query)
            .await;
        let present = match found {
            Ok(found) => found.id == parent,
            Err(
                crate::driver::DriverError::NotFound { .. }
                | crate::driver::DriverError::Resolve(_),
            ) => false,
            Err(e) => return Err(e.into()),
        };
        if !present {
            return Err(crate::error::UsageError::ParentGone {
                harness: session.harness().name().to_string(),
                session: session.id.clone(),
            }
            .into());
        }
    }
    let explicit_root = opened
        .roots
        .iter()
        .any(|r| r.harness == session.harness() && r.dir.is_some());
    let config = ctx.host_config(host_name);
    let remote = match &config.transport {
        Transport::Local => None,
        Transport::Ssh(destination) => Some(Remote {
            ssh_args: ssh_args(destination, global.ssh_config.as_deref()),
            // A host set to PowerShell, or one whose harness home is a Windows path (a host
            // left on `auto` that turned out to have no POSIX sh).
            powershell: config.shell == Some(Dialect::PowerShell)
                || is_windows_path(&session.entry.root),
        }),
    };
    let command = reader
        .resume_command(&session, explicit_root, remote)
        .await?;
    if let Some(note) = crate::driver::unnamed_root_note(&session, explicit_root) {
        super::warn(&[note]);
    }
    let report = ResumeReport {
        host: host_name,
        harness: session.harness().name(),
        session: &session.id,
        command: &command,
    };
    let mut out = std::io::stdout().lock();
    ctx.renderer(false).resume(&mut out, &report)?;
    out.flush()?;
    Ok(Outcome::Done)
}

/// `ssh`'s words for a destination as the hosts file or the command line wrote it: `-F FILE`
/// when `--ssh-config` was given, and `user@host:port` split into `-p PORT user@host` (ssh
/// itself takes no port in the destination).
pub(super) fn ssh_args(destination: &str, ssh_config: Option<&std::path::Path>) -> Vec<String> {
    let mut args = Vec::new();
    if let Some(file) = ssh_config {
        args.push("-F".to_string());
        args.push(file.to_string_lossy().into_owned());
    }
    match destination.rsplit_once(':') {
        Some((host, port))
            if !host.is_empty()
                && !host.contains(':')
                && !port.is_empty()
                && port.bytes().all(|b| b.is_ascii_digit()) =>
        {
            args.extend(["-p".to_string(), port.to_string(), host.to_string()]);
        }
        _ => args.push(destination.to_string()),
    }
    args
}

/// Whether a path is written the Windows way: `C:\…`, `C:/…` or `\\server\…`.
pub(super) fn is_windows_path(path: &[u8]) -> bool {
    match path {
        [b'\\', b'\\', ..] => true,
        [drive, b':', b'\\' | b'/', ..] => drive.is_ascii_alphabetic(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_takes_the_port_apart_from_the_destination() {
        assert_eq!(ssh_args("devbox", None), ["devbox"]);
        assert_eq!(
            ssh_args("me@10.0.0.5:2222", Some(std::path::Path::new("/c f"))),
            ["-F", "/c f", "-p", "2222", "me@10.0.0.5"]
        );
        // Not a port: left as written.
        assert_eq!(ssh_args("box:x", None), ["box:x"]);
        assert!(is_windows_path(b"C:\\Users\\me\\.claude"));
        assert!(is_windows_path(b"\\\\srv\\share"));
        assert!(!is_windows_path(b"/home/me/.claude"));
    }
}
