//! The hosts file (`~/.config/clankie/hosts.toml`, `$CLANKIE_HOSTS`, `--hosts FILE`): named
//! hosts with their transport, shell dialect and harness roots (SPEC "Hosts file"). Unknown
//! keys are errors naming the key and line. What a host needs to be opened is the host
//! crate's [`HostConfig`]; this file adds the roots.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
#[cfg(unix)]
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self, Deserializer, EnumAccess, VariantAccess, Visitor};

#[cfg(windows)]
use clankie_host::windows_shims::OsStringExt;
use clankie_host::{Dialect, HostConfig, Transport};
use clankie_model::RootSpec;

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
    shell: Option<ShellSetting>,
    #[serde(default)]
    roots: BTreeMap<String, String>,
}

/// `shell = "auto" | "posix" | "powershell"`: a [`Dialect`], or `None` for `auto`.
///
/// Read the way serde reads a unit-variant enum (`deserialize_enum`, the name as an
/// identifier), so that toml words a wrong value as it words any other enum: `unknown variant
/// `cmd`, expected one of `auto`, `posix`, `powershell`` at the value, `wanted string or table`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ShellSetting(Option<Dialect>);

/// The spellings of `shell`, as messages list them.
const SHELLS: &[&str] = &["auto", "posix", "powershell"];

impl<'de> Deserialize<'de> for ShellSetting {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name(ShellSetting);
        impl<'de> Deserialize<'de> for Name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_identifier(NameVisitor)
            }
        }
        struct NameVisitor;
        impl Visitor<'_> for NameVisitor {
            type Value = Name;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a shell name")
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Name, E> {
                match name {
                    "auto" => Ok(Name(ShellSetting(None))),
                    _ => Dialect::from_name(name)
                        .map(|d| Name(ShellSetting(Some(d))))
                        .ok_or_else(|| E::unknown_variant(name, SHELLS)),
                }
            }
        }
        struct SettingVisitor;
        impl<'de> Visitor<'de> for SettingVisitor {
            type Value = ShellSetting;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a shell: auto, posix or powershell")
            }
            fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<ShellSetting, A::Error> {
                let (Name(setting), variant) = data.variant()?;
                variant.unit_variant()?;
                Ok(setting)
            }
        }
        deserializer.deserialize_enum("Shell", SHELLS, SettingVisitor)
    }
}

/// One host from the hosts file: how it is opened, and its roots (like `--root`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostEntry {
    pub config: HostConfig,
    pub roots: Vec<RootSpec>,
}

/// Every host of a hosts file, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostsFile {
    pub path: Option<PathBuf>,
    pub hosts: Vec<HostEntry>,
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
            hosts.push(HostEntry {
                config: HostConfig {
                    name,
                    transport,
                    shell: host.shell.and_then(|s| s.0),
                },
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

    pub fn get(&self, name: &str) -> Option<&HostEntry> {
        self.hosts.iter().find(|h| h.config.name == name)
    }

    /// The hosts' names, in the file's order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.hosts.iter().map(|h| h.config.name.as_str())
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
        assert_eq!(devbox.config.transport, Transport::Ssh("devbox".into()));
        assert_eq!(devbox.config.shell, None);
        assert_eq!(
            devbox.roots[0].dir.as_deref(),
            Some(&b"/srv/agent/.claude"[..])
        );
        let james = &file.get("james-pc").unwrap().config;
        assert_eq!(james.shell, Some(Dialect::PowerShell));
        assert_eq!(file.get("here").unwrap().config.transport, Transport::Local);
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
        // A wrong shell is worded as toml words any enum value (hosts-file messages are stable).
        let shell = |value: &str| {
            let text = format!("[hosts.a]\nssh = \"a\"\nshell = {value}\n");
            HostsFile::parse(&text, Path::new("h")).map(|f| f.hosts[0].config.shell)
        };
        let err = shell("\"cmd\"").unwrap_err().to_string();
        assert!(
            err.contains("line 3, column 9")
                && err.ends_with(
                    "unknown variant `cmd`, expected one of `auto`, `posix`, `powershell`"
                ),
            "{err}"
        );
        assert!(
            shell("3")
                .unwrap_err()
                .to_string()
                .ends_with("wanted string or table")
        );
        assert!(
            shell("{ x = 1 }")
                .unwrap_err()
                .to_string()
                .contains("unknown variant `x`")
        );
        assert_eq!(shell("\"auto\"").unwrap(), None);
        assert_eq!(shell("\"posix\"").unwrap(), Some(Dialect::Posix));
        assert_eq!(shell("\"powershell\"").unwrap(), Some(Dialect::PowerShell));
    }
}
