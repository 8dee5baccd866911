//! Opening a host: what a host needs to be reached ([`HostConfig`]: its name, transport and
//! shell dialect) and the one function that builds it ([`open`]). Callers name hosts; they do
//! not assemble `LocalHost`s and `SshHost`s themselves.

use std::path::Path;

use super::local::LocalHost;
use super::script::Dialect;
use super::ssh::SshHost;
use super::{AnyHost, HostError, ssh};

/// How a host is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// This machine, through its filesystem.
    Local,
    /// An SSH destination: an alias from the SSH config, `user@host` or `user@host:port`.
    Ssh(String),
}

/// What opening a host takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostConfig {
    /// The name the user addressed the host by (`local`, `devbox`); messages start with it.
    pub name: String,
    pub transport: Transport,
    /// The dialect of the scripts it is sent. `None` is `shell = "auto"`: POSIX first, and
    /// PowerShell when the host has no `sh` (settled on the first call). A local host runs no
    /// script and ignores it.
    pub shell: Option<Dialect>,
}

impl HostConfig {
    /// A host the hosts file does not name: `[user@]alias` for the user's SSH config or DNS,
    /// shell detected.
    pub fn ssh(name: &str) -> HostConfig {
        HostConfig {
            name: name.to_string(),
            transport: Transport::Ssh(name.to_string()),
            shell: None,
        }
    }

    /// The shell as the hosts file spells it: `auto`, `posix` or `powershell`.
    pub fn shell_name(&self) -> &'static str {
        self.shell.map_or("auto", Dialect::name)
    }
}

/// Builds the host `config` describes. Nothing is connected yet (an SSH host connects on its
/// first call), but an SSH destination is resolved now against `ssh_config` (`ssh -F FILE`,
/// else `~/.ssh/config`), so a bad configuration fails here.
pub fn open(config: &HostConfig, ssh_config: Option<&Path>) -> Result<AnyHost, HostError> {
    Ok(match &config.transport {
        Transport::Local => AnyHost::Local(LocalHost::new(config.name.as_str())),
        Transport::Ssh(destination) => {
            let target = ssh::resolve(destination, ssh_config)?;
            AnyHost::Ssh(Box::new(SshHost::with_shell(
                config.name.as_str(),
                target,
                config.shell,
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Host;

    #[test]
    fn opens_local_hosts_by_their_name() {
        let config = HostConfig {
            name: "here".into(),
            transport: Transport::Local,
            shell: None,
        };
        let host = open(&config, None).unwrap();
        assert!(matches!(host, AnyHost::Local(_)));
        assert_eq!(host.name(), "here");
    }

    #[test]
    fn shell_names_are_the_hosts_file_spelling() {
        let mut config = HostConfig::ssh("me@box");
        assert_eq!(config.transport, Transport::Ssh("me@box".into()));
        assert_eq!(config.shell_name(), "auto");
        config.shell = Some(Dialect::Posix);
        assert_eq!(config.shell_name(), "posix");
        config.shell = Some(Dialect::PowerShell);
        assert_eq!(config.shell_name(), "powershell");
        for dialect in Dialect::ALL {
            assert_eq!(Dialect::from_name(dialect.name()), Some(dialect));
        }
        assert_eq!(Dialect::from_name("auto"), None);
    }
}
