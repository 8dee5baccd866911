//! The hosts file (`~/.config/clankie/hosts.toml`, `$CLANKIE_HOSTS`, `--hosts FILE`): named
//! hosts with their transport, shell dialect and harness roots (SPEC "Hosts file"). Unknown
//! keys are errors naming the key and line.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use clankie_model::RootSpec;

/// Which remote shell dialect a host speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShellChoice {
    /// POSIX first; PowerShell when `sh` is missing.
    #[default]
    Auto,
    Posix,
    Powershell,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    hosts: BTreeMap<String, RawHost>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHost {
    ssh: Option<String>,
    #[serde(default)]
    local: bool,
    shell: Option<ShellChoice>,
    #[serde(default)]
    roots: BTreeMap<String, String>,
}

/// How a configured host is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    Local,
    /// An SSH destination: an alias from the SSH config, `user@host` or `user@host:port`.
    Ssh(String),
}

/// One host from the hosts file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostConfig {
    pub name: String,
    pub transport: Transport,
    pub shell: ShellChoice,
    pub roots: Vec<RootSpec>,
}

/// Every host of a hosts file, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostsFile {
    pub path: Option<PathBuf>,
    pub hosts: Vec<HostConfig>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {reason}")]
    Invalid { path: String, reason: String },
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
}

impl HostsFile {
    /// Parses hosts-file text. `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<HostsFile, ConfigError> {
        let invalid = |reason: String| ConfigError::Invalid {
            path: path.display().to_string(),
            reason,
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| invalid(one_line(&e.to_string())))?;
        let mut hosts = Vec::new();
        for (name, host) in raw.hosts {
            if name.is_empty() || name == "local" || name.contains([':', '/', ' ']) {
                return Err(invalid(format!(
                    "host name `{name}` is reserved or holds `:`, `/` or a space"
                )));
            }
            let transport = match (host.ssh, host.local) {
                (Some(dest), false) if !dest.trim().is_empty() => Transport::Ssh(dest),
                (None, true) => Transport::Local,
                (Some(_), true) => {
                    return Err(invalid(format!(
                        "host `{name}`: `ssh` and `local = true` exclude each other"
                    )));
                }
                _ => {
                    return Err(invalid(format!(
                        "host `{name}` needs `ssh = \"alias\"` or `local = true`"
                    )));
                }
            };
            let mut roots = Vec::new();
            for (harness, dir) in host.roots {
                let harness = clankie_engine::harness::by_name(&harness).ok_or_else(|| {
                    invalid(format!(
                        "host `{name}`: unknown harness `{harness}` in roots (supported: {})",
                        clankie_engine::harness::supported_names()
                    ))
                })?;
                roots.push(RootSpec {
                    harness,
                    dir: Some(OsString::from(dir).into_vec()),
                });
            }
            hosts.push(HostConfig {
                name,
                transport,
                shell: host.shell.unwrap_or_default(),
                roots,
            });
        }
        Ok(HostsFile {
            path: Some(path.to_path_buf()),
            hosts,
        })
    }

    /// Loads `explicit`, else `$CLANKIE_HOSTS`, else `~/.config/clankie/hosts.toml`. A missing
    /// default file is an empty hosts file; a missing explicit one is an error.
    pub fn load(explicit: Option<&Path>) -> Result<HostsFile, ConfigError> {
        let (path, must_exist) = match explicit {
            Some(p) => (p.to_path_buf(), true),
            None => match std::env::var_os("CLANKIE_HOSTS").filter(|v| !v.is_empty()) {
                Some(p) => (PathBuf::from(p), true),
                None => (
                    clankie_host::local::home_dir().join(".config/clankie/hosts.toml"),
                    false,
                ),
            },
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => HostsFile::parse(&text, &path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !must_exist => {
                Ok(HostsFile::default())
            }
            Err(source) => Err(ConfigError::Read {
                path: path.display().to_string(),
                source,
            }),
        }
    }

    pub fn get(&self, name: &str) -> Option<&HostConfig> {
        self.hosts.iter().find(|h| h.name == name)
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_file_parses_with_every_key() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("hosts.example.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let file = HostsFile::parse(&text, &path).unwrap();
        let devbox = file.get("devbox").unwrap();
        assert_eq!(devbox.transport, Transport::Ssh("devbox".into()));
        assert_eq!(devbox.shell, ShellChoice::Auto);
        assert_eq!(
            devbox.roots[0].dir.as_deref(),
            Some(&b"/srv/agent/.claude"[..])
        );
        assert_eq!(file.get("james-pc").unwrap().shell, ShellChoice::Powershell);
        assert_eq!(file.get("here").unwrap().transport, Transport::Local);
        // Every key the parser knows appears in the example.
        for key in ["ssh", "shell", "roots", "local"] {
            assert!(
                text.contains(&format!("{key} =")),
                "hosts.example.toml lacks `{key}`"
            );
        }
    }

    #[test]
    fn unknown_keys_name_the_key_and_line() {
        let err = HostsFile::parse(
            "[hosts.a]\nssh = \"a\"\nshel = \"posix\"\n",
            Path::new("h.toml"),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("shel") && msg.contains("line 3"), "{msg}");
        assert!(!msg.contains('\n'));
        let err = HostsFile::parse(
            "[hosts.a]\nssh = \"a\"\nroots = { codexx = \"/x\" }\n",
            Path::new("h.toml"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("codexx"));
        assert!(
            HostsFile::parse("[hosts.a]\nlocal = true\nssh = \"a\"\n", Path::new("h")).is_err()
        );
        assert!(HostsFile::parse("[hosts.a]\n", Path::new("h")).is_err());
        assert!(HostsFile::parse("[hosts.local]\nlocal = true\n", Path::new("h")).is_err());
        assert!(
            HostsFile::parse("[hosts.a]\nshell = \"cmd\"\nssh = \"a\"\n", Path::new("h")).is_err()
        );
    }
}
