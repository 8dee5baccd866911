//! SSH client configuration: turns what the user typed (`alias`, `user@alias`, `user@host:port`)
//! into a fully resolved [`SshTarget`]. Uses `ssh -G` when an OpenSSH client is on PATH (exact:
//! Match, Include, tokens, defaults, system file), else ssh2-config with our own `Host`/`Match`
//! evaluation (refusing the `Match` criteria only OpenSSH can evaluate) and token handling. `~`
//! and `%d` are the passwd home, as for `ssh`. Imports nothing from the crate but `HostError`.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use ssh2_config::{ParseRule, SshConfig};

use crate::HostError;

/// How unknown host keys are treated. Changed and revoked keys are always refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrictHostKeyChecking {
    /// `yes`, and `ask` (we never prompt): unknown keys are refused.
    Yes,
    /// `accept-new`: an unknown key is appended to the first UserKnownHostsFile.
    AcceptNew,
    /// `no`: like `accept-new` here — unlike OpenSSH we never connect to a changed key.
    No,
}

/// Where to find the ssh-agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentityAgent {
    /// `SSH_AUTH_SOCK` (the default, and `IdentityAgent SSH_AUTH_SOCK`).
    Env,
    /// `IdentityAgent none`: do not use an agent.
    None,
    /// A socket path (or, for `$VAR`, the variable's value).
    Path(PathBuf),
}

/// A fully resolved SSH destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    /// What the user typed (used to resolve ProxyJump hops with the same config).
    pub original: String,
    pub host_name: String,
    pub user: String,
    pub port: u16,
    /// Expanded (`~`, `%h`, …); missing files are skipped at auth time.
    pub identity_files: Vec<PathBuf>,
    pub identities_only: bool,
    pub identity_agent: IdentityAgent,
    /// Hops in order, each `[user@]host[:port]` as written; empty for a direct connection.
    pub proxy_jump: Vec<String>,
    /// A command (tokens expanded) whose stdin/stdout carry the connection; used when
    /// `proxy_jump` is empty.
    pub proxy_command: Option<String>,
    pub connect_timeout: Option<Duration>,
    pub user_known_hosts_files: Vec<PathBuf>,
    pub global_known_hosts_files: Vec<PathBuf>,
    pub host_key_alias: Option<String>,
    pub strict_host_key_checking: StrictHostKeyChecking,
    /// The `-F` file this target was resolved with, reused for ProxyJump hops.
    pub ssh_config: Option<PathBuf>,
    /// What read the configuration (for `-v`, and the warning when it was not OpenSSH).
    pub config_source: ConfigSource,
    /// ControlPath, its tokens expanded (`ssh -G` prints it so); `None` for `none` or unset.
    pub control_path: Option<PathBuf>,
    pub control_master: ControlMaster,
    /// ControlPersist; `None` for `no` (the default).
    pub control_persist: Option<ControlPersist>,
}

/// ControlMaster: whether `ssh` itself would become a master for this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlMaster {
    /// `no` (the default): only use a master that is already listening.
    No,
    /// `yes`.
    Yes,
    /// `ask`: `yes`, confirming each session with ssh-askpass.
    Ask,
    /// `auto`: use a listening master, else become one.
    Auto,
    /// `autoask`: `auto`, confirming each session.
    AutoAsk,
}

impl ControlMaster {
    /// Whether, with no master listening, `ssh` would start one (`auto`, `autoask`).
    pub fn starts_a_master(self) -> bool {
        matches!(self, ControlMaster::Auto | ControlMaster::AutoAsk)
    }
}

/// ControlPersist: how long a master outlives its last session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlPersist {
    /// `yes`: until `ssh -O exit`.
    Forever,
    /// A time (`ssh -G` says it in seconds).
    For(Duration),
}

impl ControlPersist {
    /// The value as `ssh -o ControlPersist=…` takes it.
    pub fn as_option_value(self) -> String {
        match self {
            ControlPersist::Forever => "yes".to_string(),
            ControlPersist::For(d) => d.as_secs().to_string(),
        }
    }
}

/// What resolved a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    /// `ssh -G`, with `-F file`, or else reading `home/.ssh/config` and the system file.
    OpenSsh {
        file: Option<PathBuf>,
        home: Option<PathBuf>,
    },
    /// The built-in parser over `file` (none: no config), because `why` (empty when called
    /// directly).
    BuiltIn { file: Option<PathBuf>, why: String },
}

impl std::fmt::Display for ConfigSource {
    /// How `-v` says where the configuration came from.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigSource::OpenSsh {
                file: Some(file), ..
            } => write!(f, "ssh -G -F {}", file.display()),
            ConfigSource::OpenSsh { file: None, home } => {
                let user_file = home.as_ref().map_or_else(
                    || "no user file (no home)".to_string(),
                    |h| h.join(".ssh/config").display().to_string(),
                );
                write!(f, "ssh -G (reads {user_file} and the system file)")
            }
            ConfigSource::BuiltIn { file, why } => {
                let file = file
                    .as_ref()
                    .map_or_else(|| "no file".to_string(), |f| f.display().to_string());
                if why.is_empty() {
                    write!(f, "built-in parser over {file}")
                } else {
                    write!(f, "built-in parser over {file} ({why})")
                }
            }
        }
    }
}

impl SshTarget {
    /// The names to look up in known_hosts: HostKeyAlias, else HostName (as `[host]:port` when
    /// the port is not 22), lowercased, as OpenSSH does.
    pub fn known_hosts_names(&self) -> Vec<String> {
        let name = match &self.host_key_alias {
            Some(alias) => alias.clone(),
            None if self.port == 22 => self.host_name.clone(),
            None => format!("[{}]:{}", self.host_name, self.port),
        };
        vec![name.to_ascii_lowercase()]
    }

    /// UserKnownHostsFile then GlobalKnownHostsFile.
    pub fn known_hosts_files(&self) -> Vec<PathBuf> {
        let mut files = self.user_known_hosts_files.clone();
        files.extend(self.global_known_hosts_files.iter().cloned());
        files
    }
}

/// The parts of a destination string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Destination {
    pub(crate) user: Option<String>,
    pub(crate) host: String,
    pub(crate) port: Option<u16>,
}

/// Splits `alias`, `user@alias`, `user@host:port`, `[v6]:port`, `ssh://user@host:port`.
pub(crate) fn parse_destination(input: &str, label: &str) -> Result<Destination, HostError> {
    let bad = |reason: &str| HostError::SshConfig {
        host: label.to_string(),
        reason: format!("bad destination {input:?}: {reason}"),
    };
    let rest = input.strip_prefix("ssh://").unwrap_or(input);
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (user, hostport) = match rest.rfind('@') {
        Some(at) => (Some(rest[..at].to_string()), &rest[at + 1..]),
        None => (None, rest),
    };
    if user.as_deref() == Some("") {
        return Err(bad("empty user"));
    }
    let parse_port = |p: &str| -> Result<u16, HostError> {
        p.parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| bad("bad port"))
    };
    let (host, port) = if let Some(inner) = hostport.strip_prefix('[') {
        let close = inner.find(']').ok_or_else(|| bad("unclosed `[`"))?;
        let host = &inner[..close];
        let after = &inner[close + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(parse_port(p)?),
            None if after.is_empty() => None,
            None => return Err(bad("junk after `]`")),
        };
        (host.to_string(), port)
    } else if hostport.matches(':').count() == 1 {
        let (h, p) = hostport.split_once(':').expect("one colon");
        (h.to_string(), Some(parse_port(p)?))
    } else {
        // No colon, or a bare IPv6 address.
        (hostport.to_string(), None)
    };
    if host.is_empty() {
        return Err(bad("empty host"));
    }
    if host.starts_with('-') || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("invalid host name"));
    }
    Ok(Destination { user, host, port })
}

/// Resolves a destination with the user's SSH configuration (`ssh_config` = `-F FILE`, else
/// `$HOME/.ssh/config` as SPEC sets it, and the system file). Inside the configuration `~` and
/// `%d` are the passwd home, as for `ssh`. Uses `ssh -G` when it can be run, else the built-in
/// parser (which [`SshTarget::config_source`] says).
pub fn resolve(
    alias_or_user_at_host: &str,
    ssh_config: Option<&Path>,
) -> Result<SshTarget, HostError> {
    resolve_as(alias_or_user_at_host, ssh_config, &LocalAccount::current())
}

/// [`resolve`] for `account` (whose home is `~` and `%d`).
pub fn resolve_as(
    alias_or_user_at_host: &str,
    ssh_config: Option<&Path>,
    account: &LocalAccount,
) -> Result<SshTarget, HostError> {
    let asked = Asked::new(alias_or_user_at_host, ssh_config, account)?;
    let started = start_openssh(&asked);
    asked.finish(started)
}

/// A destination being resolved: `ssh -G` started and not yet waited for ([`Resolving::finish`]
/// waits), and what the built-in parser makes of the same configuration (the guess: its
/// ControlPath is where a master may already listen). Made by [`resolve_ahead`] only when
/// that ControlPath holds a socket, so that a command can go to the master there while
/// `ssh -G` runs, its answer used only when `ssh -G` names the same ControlPath.
pub struct Resolving {
    asked: Asked,
    child: std::process::Child,
    /// The built-in parser's target.
    pub guess: SshTarget,
}

impl std::fmt::Debug for Resolving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolving")
            .field("guess", &self.guess.original)
            .finish()
    }
}

impl Resolving {
    /// Waits for `ssh -G` and builds the target from its answer, as [`resolve`] does.
    pub fn finish(self) -> Result<SshTarget, HostError> {
        let Resolving { asked, child, .. } = self;
        asked.finish(Ok(child))
    }
}

/// A destination resolved ([`resolve`]), or being resolved ([`Resolving`]).
#[derive(Debug)]
pub enum Resolution {
    Done(Box<SshTarget>),
    Running(Box<Resolving>),
}

/// [`resolve`], except that when the built-in parser gives a ControlPath that holds a socket
/// (a master may listen there), `ssh -G` is left running and returned with that guess
/// ([`Resolution::Running`]) instead of waited for.
pub fn resolve_ahead(
    alias_or_user_at_host: &str,
    ssh_config: Option<&Path>,
) -> Result<Resolution, HostError> {
    let asked = Asked::new(alias_or_user_at_host, ssh_config, &LocalAccount::current())?;
    let started = start_openssh(&asked);
    let guess = match &started {
        Ok(_) => asked.guess(),
        Err(_) => None,
    };
    match (started, guess) {
        (Ok(child), Some(guess)) => Ok(Resolution::Running(Box::new(Resolving {
            asked,
            child,
            guess,
        }))),
        (started, _) => asked.finish(started).map(|t| Resolution::Done(Box::new(t))),
    }
}

/// What was asked to resolve: the destination, the `-F` file (`ssh_config`, or the default
/// `ssh` would not find by itself) and the account whose home is `~`.
struct Asked {
    original: String,
    dest: Destination,
    ssh_config: Option<PathBuf>,
    account: LocalAccount,
}

impl Asked {
    fn new(
        alias_or_user_at_host: &str,
        ssh_config: Option<&Path>,
        account: &LocalAccount,
    ) -> Result<Asked, HostError> {
        let dest = parse_destination(alias_or_user_at_host, alias_or_user_at_host)?;
        let moved_default = ssh_config
            .is_none()
            .then(|| account.default_config_ssh_would_miss())
            .flatten();
        Ok(Asked {
            original: alias_or_user_at_host.to_string(),
            dest,
            ssh_config: ssh_config.map(Path::to_path_buf).or(moved_default),
            account: account.clone(),
        })
    }

    /// `ssh -G`'s answer (`started`: its process, or why none could be run), else the
    /// built-in parser's.
    fn finish(&self, started: Result<std::process::Child, String>) -> Result<SshTarget, HostError> {
        let ssh_config = self.ssh_config.as_deref();
        let why = match started
            .and_then(|child| openssh_answer(&self.original, child, ssh_config, &self.account))
        {
            Ok(result) => return result,
            Err(why) => why,
        };
        let (file, text) = self.config_text()?;
        let mut target = resolve_with_ssh2_config(
            &self.original,
            &text,
            self.account.home.as_deref(),
            &self.account.user,
            ssh_config,
        )?;
        target.config_source = ConfigSource::BuiltIn { file, why };
        Ok(target)
    }

    /// The config file the built-in parser reads, and its text (empty when the default file
    /// is missing).
    fn config_text(&self) -> Result<(Option<PathBuf>, String), HostError> {
        let file = match &self.ssh_config {
            Some(f) => Some(f.clone()),
            None => self.account.home.as_deref().map(|h| h.join(".ssh/config")),
        };
        let text = match &file {
            Some(f) => match std::fs::read_to_string(f) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && self.ssh_config.is_none() => {
                    String::new()
                }
                Err(e) => {
                    return Err(config_error(
                        &self.original,
                        format!("{}: {e}", f.display()),
                    ));
                }
            },
            None => String::new(),
        };
        Ok((file, text))
    }

    /// The built-in parser's target when its ControlPath holds a socket (a master may listen
    /// there); `None` otherwise, or when it cannot read the configuration.
    fn guess(&self) -> Option<SshTarget> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt as _;
            let (_, text) = self.config_text().ok()?;
            let target = resolve_with_ssh2_config(
                &self.original,
                &text,
                self.account.home.as_deref(),
                &self.account.user,
                self.ssh_config.as_deref(),
            )
            .ok()?;
            let path = target.control_path.as_deref()?;
            std::fs::symlink_metadata(path)
                .is_ok_and(|m| m.file_type().is_socket())
                .then_some(target)
        }
        #[cfg(not(unix))]
        None
    }
}

fn config_error(label: &str, reason: String) -> HostError {
    HostError::SshConfig {
        host: label.to_string(),
        reason,
    }
}

/// Starts `ssh -G` for `asked`; `Err(why)` when no OpenSSH client can be run.
fn start_openssh(asked: &Asked) -> Result<std::process::Child, String> {
    let mut cmd = Command::new("ssh");
    cmd.arg("-G");
    if let Some(file) = &asked.ssh_config {
        cmd.arg("-F").arg(file);
    }
    if let Some(user) = &asked.dest.user {
        cmd.arg("-l").arg(user);
    }
    if let Some(port) = asked.dest.port {
        cmd.arg("-p").arg(port.to_string());
    }
    // `--` keeps a host name from being read as an option (parse_destination also refuses `-`).
    cmd.arg("--").arg(&asked.dest.host);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match cmd.spawn() {
        Ok(child) => Ok(child),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err("no OpenSSH client (`ssh`) on PATH".to_string())
        }
        Err(e) => Err(format!("cannot run `ssh -G`: {e}")),
    }
}

/// Waits for `ssh -G` and reads its answer; `Err(why)` when the `ssh` there has no `-G`.
/// `ssh_config` is `-F`: the file given, or the default `ssh` would not find by itself (see
/// [`LocalAccount::default_config_ssh_would_miss`]).
fn openssh_answer(
    original: &str,
    child: std::process::Child,
    ssh_config: Option<&Path>,
    account: &LocalAccount,
) -> Result<Result<SshTarget, HostError>, String> {
    let output = match child.wait_with_output() {
        Ok(o) => o,
        Err(e) => return Err(format!("cannot run `ssh -G`: {e}")),
    };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        // An OpenSSH older than 6.8 (or another client called `ssh`) has no -G: fall back.
        if stderr.contains("illegal option") || stderr.contains("unknown option") {
            return Err("the `ssh` on PATH has no `-G` (OpenSSH older than 6.8?)".to_string());
        }
        let first = stderr
            .lines()
            .find(|l| !l.starts_with("Pseudo-terminal"))
            .unwrap_or("ssh -G failed")
            .trim()
            .to_string();
        return Ok(Err(config_error(original, first)));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    Ok(target_from_dump(
        original,
        &text,
        account.home.as_deref(),
        &account.user,
        ssh_config,
    ))
}

/// Builds a target from `ssh -G` output (`key value` lines, keys lowercased).
pub(crate) fn target_from_dump(
    original: &str,
    dump: &str,
    home: Option<&Path>,
    local_user: &str,
    ssh_config: Option<&Path>,
) -> Result<SshTarget, HostError> {
    let mut raw = RawOptions::default();
    for line in dump.lines() {
        let Some((key, value)) = line.trim().split_once(' ') else {
            continue;
        };
        let value = value.trim().to_string();
        match key.to_ascii_lowercase().as_str() {
            "hostname" => raw.host_name = Some(value),
            "user" => raw.user = Some(value),
            "port" => raw.port = Some(value),
            "identityfile" => raw.identity_files.push(value),
            "identitiesonly" => raw.identities_only = Some(value),
            "identityagent" => raw.identity_agent = Some(value),
            "proxyjump" => raw.proxy_jump = Some(value),
            "proxycommand" => raw.proxy_command = Some(value),
            "connecttimeout" => raw.connect_timeout = Some(value),
            // `ssh -G` prints these lists space-separated without quoting.
            "userknownhostsfile" => {
                raw.user_known_hosts = Some(value.split_whitespace().map(String::from).collect())
            }
            "globalknownhostsfile" => {
                raw.global_known_hosts = Some(value.split_whitespace().map(String::from).collect())
            }
            "hostkeyalias" => raw.host_key_alias = Some(value),
            "stricthostkeychecking" => raw.strict = Some(value),
            // Printed with its tokens expanded (OpenSSH 9.x), so taken as it is.
            "controlpath" => raw.control_path = Some(ControlPathValue::Expanded(value)),
            "controlmaster" => raw.control_master = Some(value),
            "controlpersist" => raw.control_persist = Some(value),
            _ => {}
        }
    }
    let source = ConfigSource::OpenSsh {
        file: ssh_config.map(Path::to_path_buf),
        home: home.map(Path::to_path_buf),
    };
    raw.finish(original, home, local_user, ssh_config, source)
}

/// Option values as read, before defaults and expansion.
#[derive(Debug, Default)]
struct RawOptions {
    host_name: Option<String>,
    user: Option<String>,
    port: Option<String>,
    identity_files: Vec<String>,
    identities_only: Option<String>,
    identity_agent: Option<String>,
    proxy_jump: Option<String>,
    proxy_command: Option<String>,
    connect_timeout: Option<String>,
    user_known_hosts: Option<Vec<String>>,
    global_known_hosts: Option<Vec<String>>,
    host_key_alias: Option<String>,
    strict: Option<String>,
    control_path: Option<ControlPathValue>,
    control_master: Option<String>,
    control_persist: Option<String>,
}

/// A ControlPath as read: `ssh -G` has expanded its tokens already (expanding again would turn
/// a `%%`'s `%` into a token); the built-in parser has not.
#[derive(Debug)]
enum ControlPathValue {
    Expanded(String),
    AsWritten(String),
}

impl RawOptions {
    fn finish(
        self,
        original: &str,
        home: Option<&Path>,
        local_user: &str,
        ssh_config: Option<&Path>,
        config_source: ConfigSource,
    ) -> Result<SshTarget, HostError> {
        let dest = parse_destination(original, original)?;
        let err = |what: &str, v: &str| config_error(original, format!("bad {what} {v:?}"));
        let host_name = self.host_name.unwrap_or_else(|| dest.host.clone());
        let user = self
            .user
            .or_else(|| dest.user.clone())
            .unwrap_or_else(|| local_user.to_string());
        let port = match self.port {
            Some(p) => p.parse::<u16>().map_err(|_| err("Port", &p))?,
            None => dest.port.unwrap_or(22),
        };
        // `%C` hashes the host of the last ProxyJump hop (the one next to the target), as
        // OpenSSH 9.6+ keeps it (`%j`).
        let jump_host = self
            .proxy_jump
            .as_deref()
            .filter(|v| !v.eq_ignore_ascii_case("none"))
            .and_then(|v| v.rsplit(',').next())
            .and_then(|hop| parse_destination(hop.trim(), original).ok())
            .map(|hop| hop.host)
            .unwrap_or_default();
        let tokens = Tokens {
            host_name: &host_name,
            original_host: &dest.host,
            port,
            remote_user: &user,
            local_user,
            home,
            jump_host: &jump_host,
        };
        let identity_files = if self.identity_files.is_empty() {
            [
                "id_rsa",
                "id_ecdsa",
                "id_ecdsa_sk",
                "id_ed25519",
                "id_ed25519_sk",
            ]
            .iter()
            .map(|f| PathBuf::from(tokens.expand(&format!("~/.ssh/{f}"))))
            .collect()
        } else {
            self.identity_files
                .iter()
                .map(|f| PathBuf::from(tokens.expand(f)))
                .collect()
        };
        let identities_only = match self.identities_only.as_deref() {
            None => false,
            Some(v) => parse_bool(v).ok_or_else(|| err("IdentitiesOnly", v))?,
        };
        let identity_agent = match self.identity_agent.as_deref() {
            None => IdentityAgent::Env,
            Some(v) if v.eq_ignore_ascii_case("none") => IdentityAgent::None,
            Some("SSH_AUTH_SOCK") | Some("$SSH_AUTH_SOCK") => IdentityAgent::Env,
            Some(v) => match v.strip_prefix('$') {
                Some(var) => match std::env::var_os(var) {
                    Some(p) => IdentityAgent::Path(PathBuf::from(p)),
                    None => IdentityAgent::None,
                },
                None => IdentityAgent::Path(PathBuf::from(tokens.expand(v))),
            },
        };
        let proxy_jump = match self.proxy_jump.as_deref() {
            None => Vec::new(),
            Some(v) if v.eq_ignore_ascii_case("none") => Vec::new(),
            Some(v) => v
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect(),
        };
        let proxy_command = self
            .proxy_command
            .filter(|c| !c.eq_ignore_ascii_case("none"))
            .map(|c| tokens.expand(&c));
        let connect_timeout = match self.connect_timeout.as_deref() {
            None => None,
            Some(v) if v.eq_ignore_ascii_case("none") => None,
            Some(v) => match v.parse::<u64>() {
                Ok(0) => None,
                Ok(s) => Some(Duration::from_secs(s)),
                Err(_) => return Err(err("ConnectTimeout", v)),
            },
        };
        let paths = |list: Option<Vec<String>>, default: &[&str]| -> Vec<PathBuf> {
            let list = list.unwrap_or_else(|| default.iter().map(|s| s.to_string()).collect());
            list.iter()
                .filter(|s| !s.eq_ignore_ascii_case("none"))
                .map(|s| PathBuf::from(tokens.expand(s)))
                .collect()
        };
        let user_known_hosts_files = paths(
            self.user_known_hosts,
            &["~/.ssh/known_hosts", "~/.ssh/known_hosts2"],
        );
        let global_known_hosts_files = paths(
            self.global_known_hosts,
            &["/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"],
        );
        let strict_host_key_checking = match self.strict.as_deref().map(str::to_ascii_lowercase) {
            None => StrictHostKeyChecking::Yes,
            Some(v) => match v.as_str() {
                "yes" | "true" | "ask" => StrictHostKeyChecking::Yes,
                "accept-new" => StrictHostKeyChecking::AcceptNew,
                "no" | "false" | "off" => StrictHostKeyChecking::No,
                _ => return Err(err("StrictHostKeyChecking", &v)),
            },
        };
        let control_path = match self.control_path {
            None => None,
            Some(ControlPathValue::Expanded(v) | ControlPathValue::AsWritten(v))
                if v.eq_ignore_ascii_case("none") =>
            {
                None
            }
            Some(ControlPathValue::Expanded(v)) => Some(PathBuf::from(v)),
            Some(ControlPathValue::AsWritten(v)) => Some(PathBuf::from(tokens.expand(&v))),
        };
        let control_master = match self.control_master.as_deref().map(str::to_ascii_lowercase) {
            None => ControlMaster::No,
            Some(v) => match v.as_str() {
                "no" | "false" => ControlMaster::No,
                "yes" | "true" => ControlMaster::Yes,
                "ask" => ControlMaster::Ask,
                "auto" => ControlMaster::Auto,
                "autoask" => ControlMaster::AutoAsk,
                _ => return Err(err("ControlMaster", &v)),
            },
        };
        let control_persist = match self.control_persist.as_deref().map(str::to_ascii_lowercase) {
            None => None,
            Some(v) => match v.as_str() {
                "no" | "false" => None,
                "yes" | "true" => Some(ControlPersist::Forever),
                // `0` is `yes` to OpenSSH too (a master that stays until told to exit).
                time => match parse_time(time) {
                    Some(Duration::ZERO) => Some(ControlPersist::Forever),
                    Some(d) => Some(ControlPersist::For(d)),
                    None => return Err(err("ControlPersist", &v)),
                },
            },
        };
        Ok(SshTarget {
            original: original.to_string(),
            host_name,
            user,
            port,
            identity_files,
            identities_only,
            identity_agent,
            proxy_jump,
            proxy_command,
            connect_timeout,
            user_known_hosts_files,
            global_known_hosts_files,
            host_key_alias: self
                .host_key_alias
                .filter(|a| !a.eq_ignore_ascii_case("none")),
            strict_host_key_checking,
            ssh_config: ssh_config.map(Path::to_path_buf),
            config_source,
            control_path,
            control_master,
            control_persist,
        })
    }
}

/// A time as ssh_config(5) writes one: seconds, or numbers each followed by `s`, `m`, `h`,
/// `d` or `w` (`1h30m`); `None` when it is not one.
fn parse_time(text: &str) -> Option<Duration> {
    if let Ok(seconds) = text.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let mut total = 0u64;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c.to_ascii_lowercase() {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'w' => 604_800,
            _ => return None,
        };
        let n: u64 = std::mem::take(&mut number).parse().ok()?;
        total = total.checked_add(n.checked_mul(unit)?)?;
    }
    if !number.is_empty() {
        total = total.checked_add(number.parse().ok()?)?;
    }
    Some(Duration::from_secs(total))
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "yes" | "true" => Some(true),
        "no" | "false" => Some(false),
        _ => None,
    }
}

/// Values for `%` tokens and `~`.
struct Tokens<'a> {
    host_name: &'a str,
    original_host: &'a str,
    port: u16,
    remote_user: &'a str,
    local_user: &'a str,
    home: Option<&'a Path>,
    /// The host of the last ProxyJump hop (empty without one): part of `%C` since OpenSSH 9.6.
    jump_host: &'a str,
}

impl Tokens<'_> {
    /// `%C`: the hex SHA-1 of `%l%h%p%r%j`, as OpenSSH hashes a connection (OpenSSH before 9.6
    /// left `%j` out; the two agree without a ProxyJump).
    fn connection_hash(&self) -> String {
        use sha1::Digest as _;
        let mut hash = sha1::Sha1::new();
        for part in [
            local_host_name().as_str(),
            self.host_name,
            &self.port.to_string(),
            self.remote_user,
            self.jump_host,
        ] {
            hash.update(part.as_bytes());
        }
        hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Expands a leading `~` / `~/` (to `$HOME`) and `%h %p %r %u %d %n %l %L %C %%`. Unknown
    /// tokens are kept as written.
    fn expand(&self, input: &str) -> String {
        let home = self.home.map(|h| h.to_string_lossy().into_owned());
        let mut s = String::with_capacity(input.len());
        let rest = if input == "~" || input.starts_with("~/") {
            match &home {
                Some(h) => {
                    s.push_str(h);
                    &input[1..]
                }
                None => input,
            }
        } else {
            input
        };
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                s.push(c);
                continue;
            }
            match chars.next() {
                Some('h') => s.push_str(self.host_name),
                Some('n') => s.push_str(self.original_host),
                Some('p') => s.push_str(&self.port.to_string()),
                Some('r') => s.push_str(self.remote_user),
                Some('u') => s.push_str(self.local_user),
                Some('d') => s.push_str(home.as_deref().unwrap_or("~")),
                Some('l') => s.push_str(&local_host_name()),
                Some('L') => s.push_str(local_host_name().split('.').next().unwrap_or("")),
                Some('C') => s.push_str(&self.connection_hash()),
                Some('%') => s.push('%'),
                Some(other) => {
                    s.push('%');
                    s.push(other);
                }
                None => s.push('%'),
            }
        }
        s
    }
}

/// This machine's host name (`%l`), as `gethostname` gives it.
fn local_host_name() -> String {
    #[cfg(unix)]
    {
        rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned()
    }
    #[cfg(not(unix))]
    {
        std::env::var("COMPUTERNAME").unwrap_or_default()
    }
}

/// The fallback without an OpenSSH client: ssh2-config over `config_text`, after [`preprocess`]
/// has evaluated `Host` and `Match` blocks and inlined `Include`s. `~` is `home`. Tokens and
/// defaults are ours. Does not read the system file. Callable directly, whether or not `ssh`
/// exists. A `Match` it cannot evaluate is an error.
pub fn resolve_with_ssh2_config(
    original: &str,
    config_text: &str,
    home: Option<&Path>,
    local_user: &str,
    ssh_config: Option<&Path>,
) -> Result<SshTarget, HostError> {
    let dest = parse_destination(original, original)?;
    let mut text = String::with_capacity(config_text.len());
    let mut context = MatchContext {
        original_host: &dest.host,
        local_user,
        home,
        host_name: None,
        user: dest.user.clone(),
    };
    preprocess(config_text, &mut context, 0, false, &mut text)
        .map_err(|reason| config_error(original, reason))?;
    let mut config = SshConfig::default();
    if let Some(h) = home {
        config = config.home_dir(h);
    }
    let config = config
        .parse(
            &mut BufReader::new(text.as_bytes()),
            ParseRule::ALLOW_UNKNOWN_FIELDS | ParseRule::ALLOW_UNSUPPORTED_FIELDS,
        )
        .map_err(|e| config_error(original, e.to_string()))?;
    // Every block that applies is `Host *` now.
    let params = config.query(&dest.host);
    let unsupported =
        |key: &str| -> Option<Vec<String>> { params.unsupported_fields.get(key).cloned() };
    let first = |key: &str| unsupported(key).and_then(|v| v.into_iter().next());
    let raw = RawOptions {
        host_name: params.host_name.clone(),
        // Command-line user/port win over the config, as with `ssh -l`/`-p`.
        user: dest.user.clone().or_else(|| params.user.clone()),
        port: dest.port.or(params.port).map(|p| p.to_string()),
        identity_files: params
            .identity_file
            .clone()
            .unwrap_or_default()
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect(),
        identities_only: first("identitiesonly"),
        identity_agent: first("identityagent"),
        proxy_jump: params.proxy_jump.as_ref().map(|hops| hops.join(",")),
        // ssh2-config splits the command on blanks (quoting is lost): good enough for the
        // usual `ssh -W %h:%p gw` / `nc %h %p`.
        proxy_command: unsupported("proxycommand").map(|words| words.join(" ")),
        connect_timeout: params.connect_timeout.map(|d| d.as_secs().to_string()),
        user_known_hosts: unsupported("userknownhostsfile"),
        global_known_hosts: unsupported("globalknownhostsfile"),
        host_key_alias: first("hostkeyalias"),
        strict: first("stricthostkeychecking"),
        control_path: first("controlpath").map(ControlPathValue::AsWritten),
        control_master: first("controlmaster"),
        control_persist: first("controlpersist"),
    };
    let source = ConfigSource::BuiltIn {
        file: ssh_config.map(Path::to_path_buf),
        why: String::new(),
    };
    raw.finish(original, home, local_user, ssh_config, source)
}

/// `Include` nesting deeper than this is ignored (OpenSSH's limit is 16 too).
const MAX_INCLUDE_DEPTH: usize = 16;

/// Host pattern that no real name matches: a block header the preprocessing turned off.
const NO_MATCH_HOST: &str = "Host clankie-read.no-match.invalid\n";

/// Splits a config line into its keyword and the rest (`Key value`, `Key=value`).
fn split_keyword(line: &str) -> (&str, &str) {
    let trimmed = line.trim_start();
    let end = trimmed
        .find(|c: char| c.is_whitespace() || c == '=')
        .unwrap_or(trimmed.len());
    let args = trimmed[end..].trim_start().trim_start_matches('=').trim();
    (&trimmed[..end], args)
}

/// Glob match as OpenSSH's `match_pattern`: `*` any run, `?` one byte, case-insensitive
/// (host and user names are compared lowercased there).
fn glob_match(pattern: &str, text: &str) -> bool {
    super::pattern::glob(
        pattern.to_lowercase().as_bytes(),
        text.to_lowercase().as_bytes(),
    )
}

/// A pattern list (`a b` on a Host line, `a,b` after a Match criterion): some pattern matches
/// and no `!` pattern does (a matching negation wins, as in OpenSSH).
fn pattern_list_matches<'a>(patterns: impl Iterator<Item = &'a str>, text: &str) -> bool {
    let mut matched = false;
    for pattern in patterns
        .map(|p| p.trim_matches('"'))
        .filter(|p| !p.is_empty())
    {
        match pattern.strip_prefix('!') {
            Some(negated) if glob_match(negated, text) => return false,
            Some(_) => {}
            None => matched |= glob_match(pattern, text),
        }
    }
    matched
}

/// What `Match` lines are evaluated against, and the options seen so far that change it: the
/// first `HostName` and `User` of the blocks that applied (first value wins, as in OpenSSH).
struct MatchContext<'a> {
    /// The host as typed.
    original_host: &'a str,
    local_user: &'a str,
    home: Option<&'a Path>,
    host_name: Option<String>,
    /// `user@` on the command line, else the first `User` that applied.
    user: Option<String>,
}

impl MatchContext<'_> {
    /// Whether a Host line's patterns match the host as typed.
    fn host_line_matches(&self, args: &str) -> bool {
        pattern_list_matches(args.split_whitespace(), self.original_host)
    }

    /// Evaluates a `Match` line as OpenSSH does for the criteria that need nothing but names:
    /// `all`, `host` (the HostName so far, `%h` expanded), `originalhost`, `user` (the User so
    /// far) and `localuser`, each maybe negated with `!`. Any other criterion is refused with
    /// the reason: evaluating it differently would connect somewhere else.
    fn match_line_matches(&self, args: &str) -> Result<bool, String> {
        let words: Vec<&str> = args
            .split_whitespace()
            .map(|w| w.trim_matches('"'))
            .collect();
        let mut result = true;
        let mut i = 0;
        while i < words.len() {
            let (negated, criterion) = match words[i].strip_prefix('!') {
                Some(c) => (true, c.to_ascii_lowercase()),
                None => (false, words[i].to_ascii_lowercase()),
            };
            i += 1;
            let subject = match criterion.as_str() {
                "all" => {
                    result &= !negated;
                    continue;
                }
                "host" => self
                    .host_name
                    .as_deref()
                    .map(|h| h.replace("%h", self.original_host))
                    .unwrap_or_else(|| self.original_host.to_string()),
                "originalhost" => self.original_host.to_string(),
                "user" => self
                    .user
                    .clone()
                    .unwrap_or_else(|| self.local_user.to_string()),
                "localuser" => self.local_user.to_string(),
                "exec" | "canonical" | "final" | "localnetwork" | "tagged" | "command"
                | "version" | "sessiontype" => {
                    return Err(format!(
                        "`Match {criterion}` needs OpenSSH to evaluate and no `ssh` is on PATH; \
                         install the OpenSSH client or use another config (--ssh-config)"
                    ));
                }
                other => {
                    return Err(format!(
                        "`Match {other}` is not a criterion this program knows and no `ssh` is \
                         on PATH to evaluate it"
                    ));
                }
            };
            let Some(list) = words.get(i) else {
                return Err(format!("`Match {criterion}` without its patterns"));
            };
            i += 1;
            result &= pattern_list_matches(list.split(','), &subject) != negated;
        }
        Ok(result)
    }

    /// Notes the options a line sets while its block applies.
    fn record(&mut self, keyword: &str, args: &str) {
        let value = args.split_whitespace().next().map(|v| v.trim_matches('"'));
        let Some(value) = value else { return };
        if keyword.eq_ignore_ascii_case("hostname") && self.host_name.is_none() {
            self.host_name = Some(value.to_string());
        } else if keyword.eq_ignore_ascii_case("user") && self.user.is_none() {
            self.user = Some(value.to_string());
        }
    }
}

/// Prepares a config for ssh2-config, which only matches `Host` lines against one name:
/// - every `Host` and `Match` block is evaluated here, in order, and its header rewritten to
///   `Host *` when it applies and to a pattern no name matches when it does not, so ssh2-config
///   only merges (first value wins). `Match` is evaluated as far as [`MatchContext`] can, and a
///   criterion it cannot evaluate is an error, never a guess;
/// - `Include` is inlined here (globs, `~`, paths relative to `~/.ssh`; missing files skipped),
///   its blocks never applying when the `Include` sits in a block that does not, and the
///   enclosing block's header is repeated after the included text so the lines that follow
///   stay in their block.
fn preprocess(
    text: &str,
    context: &mut MatchContext<'_>,
    depth: usize,
    never_match: bool,
    out: &mut String,
) -> Result<(), String> {
    let mut applies = !never_match;
    for line in text.lines() {
        let (keyword, args) = split_keyword(line);
        if keyword.eq_ignore_ascii_case("match") {
            // Evaluated even where it cannot apply (OpenSSH does too), so a criterion we cannot
            // evaluate is refused wherever it is.
            let matched = context.match_line_matches(args)?;
            applies = matched && !never_match;
            out.push_str(if applies { "Host *\n" } else { NO_MATCH_HOST });
        } else if keyword.eq_ignore_ascii_case("host") {
            applies = context.host_line_matches(args) && !never_match;
            out.push_str(if applies { "Host *\n" } else { NO_MATCH_HOST });
        } else if keyword.eq_ignore_ascii_case("include") {
            if depth < MAX_INCLUDE_DEPTH {
                for file in include_files(args, context.home) {
                    if let Ok(included) = std::fs::read_to_string(&file) {
                        preprocess(&included, context, depth + 1, !applies, out)?;
                    }
                }
            }
            out.push_str(if applies { "Host *\n" } else { NO_MATCH_HOST });
        } else {
            if applies {
                context.record(keyword, args);
            }
            out.push_str(line);
            out.push('\n');
        }
    }
    Ok(())
}

/// The files an `Include` line names, each glob's matches sorted, as OpenSSH does.
fn include_files(args: &str, home: Option<&Path>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for arg in args.split_whitespace() {
        let arg = arg.trim_matches('"');
        let path = if let Some(rest) = arg.strip_prefix("~/") {
            match home {
                Some(h) => h.join(rest),
                None => continue,
            }
        } else if Path::new(arg).is_absolute() {
            PathBuf::from(arg)
        } else {
            match home {
                Some(h) => h.join(".ssh").join(arg),
                None => continue,
            }
        };
        let Ok(paths) = glob::glob(&path.to_string_lossy()) else {
            continue;
        };
        let mut matched: Vec<PathBuf> = paths.filter_map(Result::ok).collect();
        matched.sort();
        files.extend(matched);
    }
    files
}

/// This user's name and home as OpenSSH takes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalAccount {
    /// `%u`, and the User when none is set.
    pub user: String,
    /// `~` and `%d`: the passwd home.
    pub home: Option<PathBuf>,
    /// `$HOME`, under which SPEC puts the default `--ssh-config` (`$HOME/.ssh/config`).
    pub env_home: Option<PathBuf>,
}

impl LocalAccount {
    /// The passwd entry of the real user id, as `ssh` reads it: OpenSSH ignores `$HOME` (cron's
    /// `env -i HOME=…` changes nothing for `ssh`), so `~` and `%d` mean the passwd home here
    /// too, in the config file's location, in `ssh -G`'s output and in identity file lookup
    /// alike. Without a passwd entry (or off Unix), `$HOME`/`%USERPROFILE%` and `$USER`.
    pub fn current() -> LocalAccount {
        #[cfg(unix)]
        if let Ok(Some(entry)) = nix::unistd::User::from_uid(nix::unistd::getuid()) {
            return LocalAccount {
                user: entry.name,
                home: Some(entry.dir).filter(|d| !d.as_os_str().is_empty()),
                env_home: std::env::var_os("HOME")
                    .filter(|h| !h.is_empty())
                    .map(PathBuf::from),
            };
        }
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .or_else(|| std::env::var_os("USERPROFILE"))
            .map(PathBuf::from);
        LocalAccount {
            user: std::env::var("USER")
                .or_else(|_| std::env::var("USERNAME"))
                .or_else(|_| std::env::var("LOGNAME"))
                .unwrap_or_else(|_| "root".to_string()),
            env_home: home.clone(),
            home,
        }
    }

    /// The default config file as `-F`, when `ssh` would not read it by itself: SPEC puts it
    /// at `$HOME/.ssh/config`, `ssh` at the passwd home's, and the two differ when `$HOME` is
    /// not the passwd home (cron's `env -i HOME=…`). `/dev/null` when `$HOME` has none, so the
    /// passwd home's is not read in its place. `None` when the two agree: then no `-F`, and
    /// `ssh` reads the system file too.
    pub fn default_config_ssh_would_miss(&self) -> Option<PathBuf> {
        let env_home = self.env_home.as_ref()?;
        let same = |a: &Path, b: &Path| {
            a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
        };
        if self.home.as_deref().is_some_and(|h| same(h, env_home)) {
            return None;
        }
        let file = env_home.join(".ssh/config");
        Some(if file.is_file() {
            file
        } else {
            PathBuf::from("/dev/null")
        })
    }
}

/// The names an SSH config's `Host` lines give (`Host a b`, `Host=a`): every pattern without a
/// wildcard or negation, the hosts a user can address by name (MCP's `--allow-ssh-config`,
/// completions). `Include`d files are not followed.
pub fn plain_host_aliases(config: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in config.lines() {
        let line = line.trim();
        let (keyword, rest) = match line.find(|c: char| c.is_whitespace() || c == '=') {
            Some(at) => (&line[..at], &line[at..]),
            None => continue,
        };
        if !keyword.eq_ignore_ascii_case("host") {
            continue;
        }
        let rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '=');
        names.extend(
            rest.split_whitespace()
                .map(|p| p.trim_matches('"'))
                .take_while(|p| !p.starts_with('#'))
                .filter(|p| !p.is_empty() && !p.contains(['*', '?', '!']))
                .map(String::from),
        );
    }
    names
}

#[cfg(test)]
mod tests;
