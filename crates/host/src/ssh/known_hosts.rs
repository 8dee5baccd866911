//! Host keys: the verdict on the key or host certificate a server presents, decided as
//! OpenSSH's `check_host_key` decides it (sshconnect.c and hostfile.c), and the one write
//! `accept-new` does.
//!
//! Lookup, as `ssh` does it: entries come from every UserKnownHostsFile then every
//! GlobalKnownHostsFile, matched against one name — HostKeyAlias, else HostName as `host` on
//! port 22 and `[host]:port` elsewhere — by glob patterns (`*`, `?`), `!` negation, comma lists,
//! hashed names (`|1|salt|hash`, HMAC-SHA1), case-insensitively. Among the plain entries for that
//! name, one holding the key makes it known; any other plain entry, whatever its key type, makes
//! it changed; none makes it new. A matching `@revoked` entry holding the key beats everything.
//! `@cert-authority` entries vouch for host certificates only: a certificate whose signer one of
//! them holds, and which names the host, is accepted; any other certificate is judged as the
//! plain key it certifies. A key new on a port other than 22 is still known when the bare host
//! name holds it. Malformed lines are skipped.
//!
//! Policy, as `ssh` does it, but for the differences SPEC sets: a changed or revoked key is
//! refused under every StrictHostKeyChecking value, where OpenSSH's `no` connects with a warning;
//! where OpenSSH versions disagree on certificates, the stricter rule holds. A new key is refused
//! under `yes` (and `ask`, which without a terminal is `yes`), and under `accept-new` and `no`
//! recorded in the first UserKnownHostsFile and announced with OpenSSH's words; with no
//! UserKnownHostsFile, or a HostName holding a character a known_hosts name cannot carry, it is
//! refused instead, as `ssh` refuses it. `tests/it/host_keys.rs` holds both clients to this.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, KeyInit, Mac};
use russh::keys::ssh_key::certificate::CertType;
use russh::keys::{Algorithm, Certificate, EcdsaCurve, HashAlg, PublicKey, PublicKeyOrCertificate};
use sha1::Sha1;

use super::config::{SshTarget, StrictHostKeyChecking};
use super::pattern::glob;
use crate::HostError;

/// What known_hosts says about one key under one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KnownHostsVerdict {
    /// A matching plain entry holds this key.
    Known { file: PathBuf, line: usize },
    /// No matching plain entry: the host is new.
    Unknown,
    /// Matching plain entries hold other keys only (of this type or another: OpenSSH treats a
    /// key of a new type for a known host as a changed key). The last of them.
    Changed { file: PathBuf, line: usize },
    /// A matching `@revoked` entry holds this key.
    Revoked { file: PathBuf, line: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    None,
    Revoked,
    CertAuthority,
}

/// One usable known_hosts line.
struct Line<'a> {
    marker: Marker,
    hosts: &'a str,
    key: PublicKey,
}

/// Parses a line as OpenSSH's `hostkeys_foreach_file` does; `None` for comments, blank and
/// malformed lines.
fn parse_line(line: &str) -> Option<Line<'_>> {
    let line = line.trim_end_matches(['\r', '\n']);
    let rest = line.trim_start_matches([' ', '\t']);
    if rest.is_empty() || rest.starts_with('#') {
        return None;
    }
    let (marker, rest) = split_marker(rest)?;
    let hosts_end = rest.find([' ', '\t'])?;
    let (hosts, rest) = rest.split_at(hosts_end);
    let mut fields = rest.split([' ', '\t']).filter(|f| !f.is_empty());
    let key_type = fields.next()?;
    if key_type.starts_with('#') {
        return None;
    }
    let key_b64 = fields.next()?;
    let key = PublicKey::from_openssh(&format!("{key_type} {key_b64}")).ok()?;
    Some(Line { marker, hosts, key })
}

/// Takes the marker off the front of a line, as OpenSSH's `check_markers` does: a marker ends at
/// the line's first space (or, when it has none, its first tab), and only one is allowed. `None`
/// for an unknown or repeated marker: the line is skipped.
fn split_marker(rest: &str) -> Option<(Marker, &str)> {
    if !rest.starts_with('@') {
        return Some((Marker::None, rest));
    }
    let end = rest.find(' ').or_else(|| rest.find('\t'))?;
    let marker = match &rest[..end] {
        "@cert-authority" => Marker::CertAuthority,
        "@revoked" => Marker::Revoked,
        _ => return None,
    };
    let rest = rest[end..].trim_start_matches([' ', '\t']);
    if rest.starts_with('@') {
        return None;
    }
    Some((marker, rest))
}

/// OpenSSH gives up on a pattern list holding a sub-pattern this long (`match_pattern_list`).
const MAX_SUBPATTERN: usize = 1023;

/// Whether a hosts field matches one (already lowercased) name. A matching `!` pattern wins.
fn hosts_match(hosts: &str, name: &str) -> bool {
    if hosts.starts_with('|') {
        return hashed_match(hosts, name);
    }
    let mut positive = false;
    for pattern in hosts.split(',') {
        let (negated, pattern) = match pattern.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, pattern),
        };
        if pattern.len() >= MAX_SUBPATTERN {
            return false;
        }
        if glob(pattern.to_ascii_lowercase().as_bytes(), name.as_bytes()) {
            if negated {
                return false;
            }
            positive = true;
        }
    }
    positive
}

/// `|1|salt|hash`: the name hashed with the field's 20-byte salt must give the field back
/// exactly, as OpenSSH's `host_hash` compares it.
fn hashed_match(field: &str, name: &str) -> bool {
    let Some((salt_b64, _)) = field
        .strip_prefix("|1|")
        .and_then(|rest| rest.split_once('|'))
    else {
        return false;
    };
    let Ok(salt) = BASE64.decode(salt_b64) else {
        return false;
    };
    if salt.len() != 20 {
        return false;
    }
    let Ok(mut mac) = <Hmac<Sha1> as KeyInit>::new_from_slice(&salt) else {
        return false;
    };
    mac.update(name.as_bytes());
    let hash = mac.finalize().into_bytes();
    let expected = format!("|1|{}|{}", BASE64.encode(&salt), BASE64.encode(hash));
    expected == field
}

/// Calls `each` with every usable line of `files` matching `name` (lowercased), with its file
/// and 1-based line number. Missing or unreadable files count as empty.
fn for_each_match(files: &[PathBuf], name: &str, mut each: impl FnMut(&Line<'_>, &Path, usize)) {
    let name = name.to_ascii_lowercase();
    for file in files {
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        for (index, raw) in text.split('\n').enumerate() {
            let Some(line) = parse_line(raw) else {
                continue;
            };
            if hosts_match(line.hosts, &name) {
                each(&line, file, index + 1);
            }
        }
    }
}

/// Looks `key` up under `name` in `files`, in order (OpenSSH's `check_key_in_hostkeys`).
pub fn check(files: &[PathBuf], name: &str, key: &PublicKey) -> KnownHostsVerdict {
    let mut known: Option<(PathBuf, usize)> = None;
    let mut changed: Option<(PathBuf, usize)> = None;
    let mut revoked: Option<(PathBuf, usize)> = None;
    for_each_match(files, name, |line, file, number| {
        let same_key = line.key.key_data() == key.key_data();
        match line.marker {
            Marker::Revoked if same_key => {
                revoked.get_or_insert((file.to_path_buf(), number));
            }
            Marker::None if same_key => {
                known.get_or_insert((file.to_path_buf(), number));
            }
            // The last of them, as OpenSSH reports it.
            Marker::None if known.is_none() => changed = Some((file.to_path_buf(), number)),
            Marker::None | Marker::Revoked | Marker::CertAuthority => {}
        }
    });
    if let Some((file, line)) = revoked {
        KnownHostsVerdict::Revoked { file, line }
    } else if let Some((file, line)) = known {
        KnownHostsVerdict::Known { file, line }
    } else if let Some((file, line)) = changed {
        KnownHostsVerdict::Changed { file, line }
    } else {
        KnownHostsVerdict::Unknown
    }
}

/// The key algorithms of the plain (unmarked) entries matching any of `host_names`: the ones
/// OpenSSH puts first when it negotiates (`order_hostkeyalgs`).
pub fn known_algorithms(files: &[PathBuf], host_names: &[String]) -> Vec<Algorithm> {
    let mut found: Vec<Algorithm> = Vec::new();
    for name in host_names {
        for_each_match(files, name, |line, _, _| {
            if line.marker == Marker::None && !found.contains(&line.key.algorithm()) {
                found.push(line.key.algorithm());
            }
        });
    }
    found
}

/// Characters OpenSSH never writes into a known_hosts name (`check_host_key`): a HostName
/// holding one is looked up, but a new key for it is refused rather than recorded.
const UNRECORDABLE: &[char] = &['@', '?', '*', '#', '[', ']', '|', '\'', '"', '\\'];

/// How a server's host key is judged: the name and files to look it up in, and what to do with
/// a new key. Built from a resolved target by [`HostKeyPolicy::for_target`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostKeyPolicy {
    /// HostName, lowercased.
    host_name: String,
    port: u16,
    /// HostKeyAlias, lowercased.
    alias: Option<String>,
    user_files: Vec<PathBuf>,
    global_files: Vec<PathBuf>,
    strict: StrictHostKeyChecking,
}

/// Why a host key was accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acceptance {
    /// known_hosts holds it, at this line.
    Known { file: PathBuf, line: usize },
    /// It came in a host certificate signed by the `@cert-authority` key at this line.
    Certified { file: PathBuf, line: usize },
    /// It was new, and was recorded under `name` (StrictHostKeyChecking accept-new or no).
    Added {
        file: PathBuf,
        name: String,
        /// OpenSSH's name for the key type: `ED25519`, `ECDSA`, `RSA`.
        key_type: &'static str,
    },
    /// It was new and accepted by policy, but could not be recorded (as `ssh`, we go on).
    NotAdded { file: PathBuf, reason: String },
}

impl Acceptance {
    /// What `ssh` prints on stderr for this acceptance, in its words; `None` when the key was
    /// already known.
    pub fn announcement(&self) -> Option<String> {
        match self {
            Acceptance::Known { .. } | Acceptance::Certified { .. } => None,
            Acceptance::Added { name, key_type, .. } => Some(format!(
                "Warning: Permanently added '{name}' ({key_type}) to the list of known hosts."
            )),
            Acceptance::NotAdded { file, reason } => Some(format!(
                "Failed to add the host to the list of known hosts ({}): {reason}.",
                file.display()
            )),
        }
    }
}

impl HostKeyPolicy {
    /// The policy `target`'s configuration sets.
    pub fn for_target(target: &SshTarget) -> HostKeyPolicy {
        HostKeyPolicy {
            host_name: target.host_name.to_ascii_lowercase(),
            port: target.port,
            alias: target
                .host_key_alias
                .as_ref()
                .map(|a| a.to_ascii_lowercase()),
            user_files: target.user_known_hosts_files.clone(),
            global_files: target.global_known_hosts_files.clone(),
            strict: target.strict_host_key_checking,
        }
    }

    /// The name keys are looked up and recorded under: HostKeyAlias, else `host` on port 22
    /// and `[host]:port` elsewhere.
    pub fn lookup_name(&self) -> String {
        match &self.alias {
            Some(alias) => alias.clone(),
            None if self.port == 22 => self.host_name.clone(),
            None => format!("[{}]:{}", self.host_name, self.port),
        }
    }

    fn files(&self) -> Vec<PathBuf> {
        let mut files = self.user_files.clone();
        files.extend(self.global_files.iter().cloned());
        files
    }

    /// Judges the key a server presented (for host `label`, as the user named it), and under
    /// `accept-new` and `no` records a new plain key, as OpenSSH's `check_host_key` does. A
    /// certificate is accepted when a matching `@cert-authority` entry holds the key that signed
    /// it and it is a valid host certificate for HostKeyAlias, else HostName; otherwise (but for
    /// a revoked one) it is judged again as the plain key it certifies.
    pub fn verify(
        &self,
        label: &str,
        key: &PublicKeyOrCertificate,
    ) -> Result<Acceptance, HostError> {
        let presented = match key {
            PublicKeyOrCertificate::PublicKey { key, .. } => Presented::Plain(key.clone()),
            PublicKeyOrCertificate::Certificate(cert) => Presented::Certificate(cert),
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.judge(label, presented, false, now)
    }

    /// Judges a plain key; see [`HostKeyPolicy::verify`].
    pub fn verify_key(&self, label: &str, key: &PublicKey) -> Result<Acceptance, HostError> {
        self.judge(label, Presented::Plain(key.clone()), false, 0)
    }

    /// One `check_host_key`: under the lookup name, or (`bare`) under the host name without
    /// its port, where only a match counts and nothing is recorded. A certificate that fails
    /// (but for being revoked) is judged again as its plain key.
    fn judge(
        &self,
        label: &str,
        mut presented: Presented<'_>,
        bare: bool,
        now: u64,
    ) -> Result<Acceptance, HostError> {
        loop {
            match (self.judge_once(label, &presented, bare, now), &presented) {
                (Err(e), Presented::Certificate(cert))
                    if !matches!(e, HostError::HostKeyRevoked { .. }) =>
                {
                    presented = Presented::Plain(PublicKey::new(cert.public_key().clone(), ""));
                }
                (result, _) => return result,
            }
        }
    }

    fn judge_once(
        &self,
        label: &str,
        presented: &Presented<'_>,
        bare: bool,
        now: u64,
    ) -> Result<Acceptance, HostError> {
        let name = match (&self.alias, bare) {
            (Some(alias), _) => alias.clone(),
            (None, true) => self.host_name.clone(),
            (None, false) => self.lookup_name(),
        };
        let files = self.files();
        let plain = presented.plain();
        let fingerprint = || plain.fingerprint(HashAlg::Sha256).to_string();
        let at = |file: PathBuf, line: usize| format!("{}:{line}", file.display());
        let unknown = || HostError::HostKeyUnknown {
            host: label.to_string(),
            key_host: name.clone(),
            fingerprint: fingerprint(),
        };
        let verdict = match presented {
            Presented::Plain(key) => check(&files, &name, key),
            Presented::Certificate(cert) => check_certificate(&files, &name, cert),
        };
        match verdict {
            KnownHostsVerdict::Known { file, line } => match presented {
                Presented::Plain(_) => Ok(Acceptance::Known { file, line }),
                Presented::Certificate(cert) => {
                    let principal = self.alias.as_deref().unwrap_or(&self.host_name);
                    if certifies_host(cert, principal, now) {
                        Ok(Acceptance::Certified { file, line })
                    } else {
                        Err(unknown())
                    }
                }
            },
            // Refused under `no` too: the deliberate difference from OpenSSH (SPEC).
            KnownHostsVerdict::Changed { file, line } => Err(HostError::HostKeyChanged {
                host: label.to_string(),
                key_host: name.clone(),
                fingerprint: fingerprint(),
                known_hosts_line: at(file, line),
            }),
            KnownHostsVerdict::Revoked { file, line } => Err(HostError::HostKeyRevoked {
                host: label.to_string(),
                key_host: name.clone(),
                fingerprint: fingerprint(),
                known_hosts_line: at(file, line),
            }),
            KnownHostsVerdict::Unknown => {
                // OpenSSH's "checking without port identifier": a key new on another port is
                // known if the bare host name holds it. Only a match counts there, but a key
                // the bare name calls revoked is refused (OpenSSH would go on and treat it as
                // new; a key known_hosts calls revoked is never recorded here).
                if self.alias.is_none() && self.port != 22 && !bare {
                    match self.judge(label, presented.clone(), true, now) {
                        Ok(accepted) => return Ok(accepted),
                        Err(e @ HostError::HostKeyRevoked { .. }) => return Err(e),
                        Err(_) => {}
                    }
                }
                if bare || matches!(presented, Presented::Certificate(_)) {
                    return Err(unknown());
                }
                let file = match (self.strict, self.user_files.first()) {
                    (StrictHostKeyChecking::Yes, _) | (_, None) => return Err(unknown()),
                    (StrictHostKeyChecking::AcceptNew | StrictHostKeyChecking::No, Some(f)) => f,
                };
                if self.host_name.contains(UNRECORDABLE) {
                    return Err(unknown());
                }
                match append(file, &name, &plain) {
                    Ok(()) => Ok(Acceptance::Added {
                        file: file.clone(),
                        name,
                        key_type: key_type_name(&plain.algorithm()),
                    }),
                    Err(e) => Ok(Acceptance::NotAdded {
                        file: file.clone(),
                        reason: e.to_string(),
                    }),
                }
            }
        }
    }

    /// The plain host key algorithms of `default` (most preferred first) reordered as OpenSSH
    /// orders them (`order_hostkeyalgs`): as they are when known_hosts holds an ed25519 key for
    /// the host (the type OpenSSH prefers most), else with the types it holds first. So a host
    /// known by its RSA key is not reported as unknown for offering ed25519, and a host known by
    /// ed25519 and RSA keys that offers ECDSA and RSA is refused as `ssh` refuses it.
    pub fn key_algorithms(&self, default: &[Algorithm]) -> Vec<Algorithm> {
        let known = known_algorithms(&self.files(), &[self.lookup_name()]);
        let is_known = |a: &Algorithm| known.iter().any(|k| same_key_type(k, a));
        if is_known(&Algorithm::Ed25519) {
            return default.to_vec();
        }
        let mut ordered: Vec<Algorithm> = default.iter().filter(|a| is_known(a)).cloned().collect();
        ordered.extend(default.iter().filter(|a| !is_known(a)).cloned());
        ordered
    }

    /// The host certificate algorithms to advertise, most preferred first, as OpenSSH orders
    /// them (`order_hostkeyalgs`): all of them when known_hosts has a `@cert-authority` entry
    /// for the host, or an ed25519 key, or nothing; else those whose plain type it holds (the
    /// others, which OpenSSH lists after every plain type it holds, are left out: russh puts
    /// certificates ahead of plain keys, and a certificate no authority vouches for is judged
    /// as its plain key anyway).
    pub fn certificate_algorithms(&self) -> Vec<Algorithm> {
        let all = [
            Algorithm::Ed25519,
            Algorithm::Ecdsa {
                curve: EcdsaCurve::NistP256,
            },
            Algorithm::Ecdsa {
                curve: EcdsaCurve::NistP384,
            },
            Algorithm::Ecdsa {
                curve: EcdsaCurve::NistP521,
            },
            Algorithm::Rsa {
                hash: Some(HashAlg::Sha512),
            },
            Algorithm::Rsa {
                hash: Some(HashAlg::Sha256),
            },
        ];
        let files = self.files();
        let name = self.lookup_name();
        let mut authority = false;
        for_each_match(&files, &name, |line, _, _| {
            authority |= line.marker == Marker::CertAuthority;
        });
        let known = known_algorithms(&files, std::slice::from_ref(&name));
        let is_known = |a: &Algorithm| known.iter().any(|k| same_key_type(k, a));
        if authority || known.is_empty() || is_known(&Algorithm::Ed25519) {
            return all.to_vec();
        }
        all.into_iter().filter(is_known).collect()
    }
}

/// Whether two algorithms are one key type (RSA whatever its hash).
fn same_key_type(a: &Algorithm, b: &Algorithm) -> bool {
    a == b || (matches!(a, Algorithm::Rsa { .. }) && matches!(b, Algorithm::Rsa { .. }))
}

/// What a server presented.
#[derive(Clone)]
enum Presented<'a> {
    Plain(PublicKey),
    Certificate(&'a Certificate),
}

impl Presented<'_> {
    /// The plain key (a certificate's own).
    fn plain(&self) -> PublicKey {
        match self {
            Presented::Plain(key) => key.clone(),
            Presented::Certificate(cert) => PublicKey::new(cert.public_key().clone(), ""),
        }
    }
}

/// Looks a certificate up under `name` (OpenSSH's `check_key_in_hostkeys` for a certificate):
/// known when a matching `@cert-authority` entry holds the key that signed it, changed when
/// only other authorities match, revoked when a matching `@revoked` entry holds its key or its
/// signer's.
fn check_certificate(files: &[PathBuf], name: &str, cert: &Certificate) -> KnownHostsVerdict {
    let mut known: Option<(PathBuf, usize)> = None;
    let mut changed: Option<(PathBuf, usize)> = None;
    let mut revoked: Option<(PathBuf, usize)> = None;
    for_each_match(files, name, |line, file, number| {
        let key = line.key.key_data();
        match line.marker {
            Marker::Revoked if key == cert.public_key() || key == cert.signature_key() => {
                revoked.get_or_insert((file.to_path_buf(), number));
            }
            Marker::CertAuthority if key == cert.signature_key() => {
                known.get_or_insert((file.to_path_buf(), number));
            }
            Marker::CertAuthority if known.is_none() => {
                changed = Some((file.to_path_buf(), number))
            }
            Marker::None | Marker::Revoked | Marker::CertAuthority => {}
        }
    });
    if let Some((file, line)) = revoked {
        KnownHostsVerdict::Revoked { file, line }
    } else if let Some((file, line)) = known {
        KnownHostsVerdict::Known { file, line }
    } else if let Some((file, line)) = changed {
        KnownHostsVerdict::Changed { file, line }
    } else {
        KnownHostsVerdict::Unknown
    }
}

/// Whether `cert` is a valid host certificate for `principal` at `now` (OpenSSH's
/// `sshkey_cert_check_host`): signed by its signer, a host certificate, within its validity,
/// naming the principal exactly, no critical options, and signed with an algorithm
/// CASignatureAlgorithms allows by default (not SHA-1 RSA, not DSA). Where OpenSSH versions
/// differ, the stricter rule: a certificate with no principals certifies nothing (OpenSSH
/// before 10.3 took it for any host, CVE-2024-7594), and a principal is not a pattern (OpenSSH
/// 10.3 matches host principals as patterns, earlier versions do not).
fn certifies_host(cert: &Certificate, principal: &str, now: u64) -> bool {
    let signer = cert.signature_key().fingerprint(HashAlg::Sha256);
    let allowed_signature = !matches!(
        cert.signature().algorithm(),
        Algorithm::Rsa { hash: None } | Algorithm::Dsa
    );
    cert.cert_type() == CertType::Host
        && cert.validate_at(now, [&signer]).is_ok()
        && cert.valid_principals().iter().any(|p| p == principal)
        && cert.critical_options().is_empty()
        && allowed_signature
}

/// OpenSSH's short name for a key type (`sshkey_type`), as its messages say it.
fn key_type_name(algorithm: &Algorithm) -> &'static str {
    match algorithm {
        Algorithm::Ed25519 => "ED25519",
        Algorithm::Ecdsa { .. } => "ECDSA",
        Algorithm::Rsa { .. } => "RSA",
        Algorithm::Dsa => "DSA",
        Algorithm::SkEd25519 => "ED25519-SK",
        Algorithm::SkEcdsaSha2NistP256 => "ECDSA-SK",
        _ => "unknown",
    }
}

/// Appends `host_name key` to `file`, as `StrictHostKeyChecking accept-new` does: one line in
/// one write to a file opened for appending, so a concurrent reader or writer never sees half a
/// line, after a newline when the file does not end with one; an existing file keeps its mode,
/// a new one is made 0600 and its missing directories 0700. Synced before it returns.
pub fn append(file: &Path, host_name: &str, key: &PublicKey) -> std::io::Result<()> {
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.exists()
    {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
    }
    let key_text = PublicKey::new(key.key_data().clone(), "")
        .to_openssh()
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true).read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut f = options.open(file)?;
    let mut line = String::new();
    if !ends_with_newline(&f)? {
        line.push('\n');
    }
    line.push_str(host_name);
    line.push(' ');
    line.push_str(key_text.trim_end());
    line.push('\n');
    f.write_all(line.as_bytes())?;
    f.sync_all()
}

/// Whether an open file is empty or ends with `\n`.
fn ends_with_newline(f: &std::fs::File) -> std::io::Result<bool> {
    let len = f.metadata()?.len();
    if len == 0 {
        return Ok(true);
    }
    let mut last = [0u8; 1];
    #[cfg(unix)]
    std::os::unix::fs::FileExt::read_exact_at(f, &mut last, len - 1)?;
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = f;
        f.seek(SeekFrom::Start(len - 1))?;
        f.read_exact(&mut last)?;
    }
    Ok(last[0] == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY_A: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAID5OaRbGYlKM6HBZ58thepRrXmb9coghcSAYj1paQinh";
    const KEY_B: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPl+31BVA4oL7vulFo2+345cM4g/UpKAdMm36I9tvJdS";
    const KEY_ECDSA: &str = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBDy2hAk+/B8rEKgG7xacKgvyqSyXJ/OZZPVeBkYnDDPonH5dv3aZPTUkQI/FIBlw9M8sA+odf3egmgnFrPsYG6k=";

    fn key(text: &str) -> PublicKey {
        PublicKey::from_openssh(text).unwrap()
    }

    fn openssh(key: &PublicKey) -> String {
        key.to_openssh().unwrap()
    }

    /// A verdict without its location, for tables.
    fn short(verdict: &KnownHostsVerdict) -> &'static str {
        match verdict {
            KnownHostsVerdict::Known { .. } => "known",
            KnownHostsVerdict::Unknown => "unknown",
            KnownHostsVerdict::Changed { .. } => "changed",
            KnownHostsVerdict::Revoked { .. } => "revoked",
        }
    }

    struct Fixture {
        dir: tempfile::TempDir,
        key: PublicKey,
        other: PublicKey,
    }

    impl Fixture {
        fn new() -> Self {
            Fixture {
                dir: tempfile::tempdir().unwrap(),
                key: key(KEY_A),
                other: key(KEY_B),
            }
        }

        fn file(&self, name: &str, contents: &str) -> PathBuf {
            let p = self.dir.path().join(name);
            std::fs::write(&p, contents).unwrap();
            p
        }

        /// The verdict on `self.key` under `name`, with `contents` as the only file.
        fn verdict(&self, contents: &str, name: &str) -> &'static str {
            let f = self.file("kh", contents);
            short(&check(&[f], name, &self.key))
        }

        fn policy(&self, host: &str, port: u16, strict: StrictHostKeyChecking) -> HostKeyPolicy {
            HostKeyPolicy {
                host_name: host.to_string(),
                port,
                alias: None,
                user_files: vec![self.dir.path().join("user")],
                global_files: vec![self.dir.path().join("global")],
                strict,
            }
        }
    }

    fn hashed(name: &str) -> String {
        let salt = [7u8; 20];
        let mut mac = <Hmac<Sha1> as KeyInit>::new_from_slice(&salt).unwrap();
        mac.update(name.as_bytes());
        let hash = mac.finalize().into_bytes();
        format!("|1|{}|{}", BASE64.encode(salt), BASE64.encode(hash))
    }

    #[test]
    fn glob_patterns() {
        assert!(glob(b"*.example.com", b"a.example.com"));
        assert!(!glob(b"*.example.com", b"example.com"));
        assert!(glob(b"h?st", b"host"));
        assert!(!glob(b"h?st", b"hst"));
        assert!(glob(b"*", b""));
        assert!(glob(b"a*b*c", b"axxbyyc"));
        assert!(!glob(b"a*b*c", b"axxbyy"));
        assert!(glob(b"[*]:2222", b"[h]:2222"));
    }

    #[test]
    fn plain_match_and_comment() {
        let f = Fixture::new();
        let k = openssh(&f.key);
        assert_eq!(f.verdict(&format!("myhost {k}\n"), "myhost"), "known");
        assert_eq!(
            f.verdict(&format!("myhost {k} a comment\n"), "myhost"),
            "known"
        );
        assert_eq!(f.verdict(&format!("# myhost {k}\n"), "myhost"), "unknown");
        assert_eq!(f.verdict(&format!("  # myhost {k}\n"), "myhost"), "unknown");
        // Where it was found.
        let kh = f.file("kh", &format!("\n# c\nmyhost {k}\n"));
        assert_eq!(
            check(std::slice::from_ref(&kh), "myhost", &f.key),
            KnownHostsVerdict::Known { file: kh, line: 3 }
        );
    }

    #[test]
    fn tabs_blanks_crlf_and_case() {
        let f = Fixture::new();
        let k = openssh(&f.key).replacen(' ', "\t", 1);
        for line in [
            format!("myhost\t{k}\n"),
            format!("  myhost   {k}\r\n"),
            format!("MyHost {k}\n"),
        ] {
            assert_eq!(f.verdict(&line, "myhost"), "known", "{line:?}");
        }
        assert_eq!(
            f.verdict(&format!("myhost {}\n", openssh(&f.key)), "MYHOST"),
            "known"
        );
    }

    #[test]
    fn ports() {
        let f = Fixture::new();
        let k = openssh(&f.key);
        assert_eq!(
            f.verdict(&format!("[myhost]:2222 {k}\n"), "[myhost]:2222"),
            "known"
        );
        assert_eq!(
            f.verdict(&format!("myhost {k}\n"), "[myhost]:2222"),
            "unknown"
        );
        assert_eq!(
            f.verdict(&format!("[myhost]:2222 {k}\n"), "myhost"),
            "unknown"
        );
    }

    #[test]
    fn wildcards_negation_and_lists() {
        let f = Fixture::new();
        let k = openssh(&f.key);
        let line = format!("!bad.example.com,*.example.com,other {k}\n");
        assert_eq!(f.verdict(&line, "good.example.com"), "known");
        assert_eq!(f.verdict(&line, "other"), "known");
        assert_eq!(f.verdict(&line, "bad.example.com"), "unknown");
        assert_eq!(f.verdict(&format!("h?st {k}\n"), "host"), "known");
        // A negation alone matches nothing.
        assert_eq!(f.verdict(&format!("!other {k}\n"), "host"), "unknown");
        // OpenSSH gives up on a list holding an over-long sub-pattern.
        let long = "x".repeat(MAX_SUBPATTERN);
        assert_eq!(f.verdict(&format!("host,{long} {k}\n"), "host"), "unknown");
    }

    #[test]
    fn hashed_names() {
        let f = Fixture::new();
        let k = openssh(&f.key);
        assert_eq!(
            f.verdict(&format!("{} {k}\n", hashed("myhost")), "myhost"),
            "known"
        );
        assert_eq!(
            f.verdict(
                &format!("{} {k}\n", hashed("[myhost]:2222")),
                "[MyHost]:2222"
            ),
            "known"
        );
        assert_eq!(
            f.verdict(&format!("{} {k}\n", hashed("myhost")), "otherhost"),
            "unknown"
        );
        // Broken hashes, and salts that are not 20 bytes, are skipped.
        let short_salt = format!(
            "|1|{}|{}",
            BASE64.encode([1u8; 8]),
            BASE64.encode([2u8; 20])
        );
        assert_eq!(
            f.verdict(
                &format!("|1|!!|!! {k}\n|1|x {k}\n{short_salt} {k}\n"),
                "myhost"
            ),
            "unknown"
        );
        // Trailing bytes after the hash: not the same field.
        assert_eq!(
            f.verdict(&format!("{}x {k}\n", hashed("myhost")), "myhost"),
            "unknown"
        );
    }

    #[test]
    fn hashed_by_ssh_keygen() {
        // Interoperate with the real `ssh-keygen -H` when it is installed.
        let f = Fixture::new();
        let path = f.file("kh", &format!("[myhost]:2200 {}\n", openssh(&f.key)));
        let Ok(status) = std::process::Command::new("ssh-keygen")
            .arg("-H")
            .arg("-f")
            .arg(&path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
        else {
            return;
        };
        assert!(status.success());
        assert!(std::fs::read_to_string(&path).unwrap().starts_with("|1|"));
        assert_eq!(short(&check(&[path], "[myhost]:2200", &f.key)), "known");
    }

    #[test]
    fn any_other_plain_key_is_a_changed_key() {
        let f = Fixture::new();
        let other = openssh(&f.other);
        let kh = f.file("kh", &format!("# comment\nmyhost {other}\n"));
        assert_eq!(
            check(std::slice::from_ref(&kh), "myhost", &f.key),
            KnownHostsVerdict::Changed { file: kh, line: 2 }
        );
        // A known key anywhere wins over a changed line.
        let k = openssh(&f.key);
        assert_eq!(
            f.verdict(&format!("myhost {other}\nmyhost {k}\n"), "myhost"),
            "known"
        );
        // Only another key type known: changed, as OpenSSH sees it.
        assert_eq!(
            f.verdict(&format!("myhost {KEY_ECDSA}\n"), "myhost"),
            "changed"
        );
        // The last offending line is the one reported, as OpenSSH reports it.
        let kh = f.file("kh", &format!("myhost {KEY_ECDSA}\nmyhost {other}\n"));
        assert_eq!(
            check(std::slice::from_ref(&kh), "myhost", &f.key),
            KnownHostsVerdict::Changed { file: kh, line: 2 }
        );
        // Another host's key does not count.
        assert_eq!(
            f.verdict(&format!("otherhost {KEY_ECDSA}\n"), "myhost"),
            "unknown"
        );
    }

    #[test]
    fn revoked_wins() {
        let f = Fixture::new();
        let k = openssh(&f.key);
        let kh = f.file("kh", &format!("myhost {k}\n@revoked * {k}\n"));
        assert_eq!(
            check(std::slice::from_ref(&kh), "myhost", &f.key),
            KnownHostsVerdict::Revoked { file: kh, line: 2 }
        );
        // A revoked line for another key does not matter.
        let other = openssh(&f.other);
        assert_eq!(
            f.verdict(&format!("@revoked myhost {other}\nmyhost {k}\n"), "myhost"),
            "known"
        );
        // Revoked with no plain line at all.
        assert_eq!(
            f.verdict(&format!("@revoked   myhost {k}\n"), "myhost"),
            "revoked"
        );
    }

    #[test]
    fn markers_are_read_as_openssh_reads_them() {
        let f = Fixture::new();
        let k = openssh(&f.key);
        let bare = k.replacen(' ', "\t", 1);
        // A marker ends at the line's first space: with a tab after the marker and a space
        // later in the line, OpenSSH sees one unknown marker and skips the line.
        assert_eq!(
            f.verdict(&format!("@revoked\tmyhost {k}\n"), "myhost"),
            "unknown"
        );
        // With no space anywhere, the tab ends it.
        assert_eq!(
            f.verdict(&format!("@revoked\tmyhost\t{bare}\n"), "myhost"),
            "revoked"
        );
        // Two markers, or an unknown one: skipped.
        assert_eq!(
            f.verdict(&format!("@revoked @revoked myhost {k}\n"), "myhost"),
            "unknown"
        );
        assert_eq!(
            f.verdict(&format!("@unknown-marker myhost {k}\n"), "myhost"),
            "unknown"
        );
    }

    #[test]
    fn cert_authority_is_not_a_host_key() {
        let f = Fixture::new();
        let k = openssh(&f.key);
        assert_eq!(
            f.verdict(
                &format!("@cert-authority *.example.com {k}\n"),
                "a.example.com"
            ),
            "unknown"
        );
        // Nor is a CA key of the same type a "changed" key.
        let other = openssh(&f.other);
        assert_eq!(
            f.verdict(&format!("@cert-authority myhost {other}\n"), "myhost"),
            "unknown"
        );
    }

    #[test]
    fn bad_lines_are_skipped_and_files_combine() {
        let f = Fixture::new();
        let k = openssh(&f.key);
        let a = f.file(
            "a",
            "myhost ssh-ed25519 !!!notbase64\nmyhost\n\n   \nmyhost #ssh-ed25519 x\n",
        );
        let missing = f.dir.path().join("missing");
        let b = f.file("b", &format!("otherhost {k}\nmyhost {k}\n"));
        assert_eq!(
            check(&[missing, a.clone(), b.clone()], "myhost", &f.key),
            KnownHostsVerdict::Known { file: b, line: 2 }
        );
        assert_eq!(short(&check(&[a], "myhost", &f.key)), "unknown");
        // A mismatched key type and blob is not a key.
        let blob = KEY_A.split_once(' ').unwrap().1;
        assert_eq!(
            f.verdict(&format!("myhost ssh-rsa {blob}\n"), "myhost"),
            "unknown"
        );
    }

    #[test]
    fn the_lookup_name() {
        let f = Fixture::new();
        let mut p = f.policy("h", 22, StrictHostKeyChecking::Yes);
        assert_eq!(p.lookup_name(), "h");
        p.port = 2222;
        assert_eq!(p.lookup_name(), "[h]:2222");
        p.alias = Some("alias".into());
        assert_eq!(p.lookup_name(), "alias");
    }

    #[test]
    fn policy_for_new_changed_and_revoked_keys() {
        use StrictHostKeyChecking::{AcceptNew, No, Yes};
        let f = Fixture::new();
        let k = openssh(&f.key);
        let other = openssh(&f.other);
        let user = f.dir.path().join("user");
        let global = f.dir.path().join("global");
        // (user file, global file, strictness, accepted?, user file written?)
        let cases: &[(&str, &str, StrictHostKeyChecking, bool, bool)] = &[
            ("", "", Yes, false, false),
            ("", "", AcceptNew, true, true),
            ("", "", No, true, true),
            ("", &format!("[h]:2222 {k}\n"), Yes, true, false),
            (&format!("[h]:2222 {other}\n"), "", No, false, false),
            (
                &format!("[h]:2222 {KEY_ECDSA}\n"),
                "",
                AcceptNew,
                false,
                false,
            ),
            (
                &format!("[h]:2222 {k}\n"),
                &format!("@revoked * {k}\n"),
                No,
                false,
                false,
            ),
            // The bare host name holds the key: known on another port.
            (&format!("h {k}\n"), "", Yes, true, false),
            // The bare host name holds another key: still new, not changed.
            (&format!("h {other}\n"), "", Yes, false, false),
            (&format!("h {other}\n"), "", AcceptNew, true, true),
            // Revoked under the bare name: refused (OpenSSH would record it under accept-new).
            (&format!("@revoked h {k}\n"), "", AcceptNew, false, false),
        ];
        for (index, (user_text, global_text, strict, accepted, written)) in cases.iter().enumerate()
        {
            std::fs::write(&user, user_text).unwrap();
            std::fs::write(&global, global_text).unwrap();
            let policy = f.policy("h", 2222, *strict);
            let result = policy.verify_key("box", &f.key);
            assert_eq!(result.is_ok(), *accepted, "case {index}: {result:?}");
            let now = std::fs::read_to_string(&user).unwrap();
            if *written {
                assert_eq!(now, format!("{user_text}[h]:2222 {k}\n"), "case {index}");
                assert_eq!(
                    result.unwrap().announcement().unwrap(),
                    "Warning: Permanently added '[h]:2222' (ED25519) to the list of known hosts."
                );
            } else {
                assert_eq!(&now, user_text, "case {index}");
            }
            assert_eq!(&std::fs::read_to_string(&global).unwrap(), global_text);
        }
    }

    #[test]
    fn new_keys_that_cannot_be_recorded_are_refused() {
        let f = Fixture::new();
        // No UserKnownHostsFile (`none`).
        let mut p = f.policy("h", 22, StrictHostKeyChecking::AcceptNew);
        p.user_files.clear();
        assert!(matches!(
            p.verify_key("box", &f.key),
            Err(HostError::HostKeyUnknown { .. })
        ));
        // A HostName OpenSSH will not write into known_hosts.
        let p = f.policy("we*rd", 22, StrictHostKeyChecking::No);
        assert!(matches!(
            p.verify_key("box", &f.key),
            Err(HostError::HostKeyUnknown { .. })
        ));
        assert!(!f.dir.path().join("user").exists());
        // A write that fails is said, and the key is still accepted, as `ssh` does.
        let mut p = f.policy("h", 22, StrictHostKeyChecking::AcceptNew);
        p.user_files = vec![f.dir.path().to_path_buf()];
        let accepted = p.verify_key("box", &f.key).unwrap();
        assert!(
            accepted
                .announcement()
                .unwrap()
                .starts_with("Failed to add the host to the list of known hosts"),
            "{accepted:?}"
        );
    }

    #[test]
    fn key_type_names_are_openssh_s() {
        assert_eq!(key_type_name(&key(KEY_A).algorithm()), "ED25519");
        assert_eq!(key_type_name(&key(KEY_ECDSA).algorithm()), "ECDSA");
    }

    #[cfg(unix)]
    #[test]
    fn append_creates_private_files_and_keeps_modes() {
        use std::os::unix::fs::PermissionsExt;
        let f = Fixture::new();
        let file = f.dir.path().join("new/.ssh/known_hosts");
        append(&file, "[127.0.0.1]:2222", &f.key).unwrap();
        assert_eq!(
            short(&check(
                std::slice::from_ref(&file),
                "[127.0.0.1]:2222",
                &f.key
            )),
            "known"
        );
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(file.parent().unwrap()), 0o700);
        assert_eq!(mode(&f.dir.path().join("new")), 0o700);
        // An existing file keeps its mode.
        let g = f.file("g", &format!("x {}", openssh(&f.other)));
        std::fs::set_permissions(&g, std::fs::Permissions::from_mode(0o644)).unwrap();
        append(&g, "y", &f.key).unwrap();
        assert_eq!(mode(&g), 0o644);
        // Appending to a file without a final newline keeps lines apart.
        assert_eq!(
            short(&check(std::slice::from_ref(&g), "y", &f.key)),
            "known"
        );
        assert_eq!(
            check(std::slice::from_ref(&g), "x", &f.key),
            KnownHostsVerdict::Changed {
                file: g.clone(),
                line: 1
            }
        );
        let text = std::fs::read_to_string(&g).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn certificate_algorithms_follow_openssh_s_order() {
        let f = Fixture::new();
        let user = f.dir.path().join("user");
        let policy = f.policy("h", 22, StrictHostKeyChecking::Yes);
        let all = policy.certificate_algorithms();
        assert_eq!(all.len(), 6);
        assert_eq!(all[0], Algorithm::Ed25519);
        // An ed25519 key known: OpenSSH's list as it is.
        std::fs::write(&user, format!("h {}\n", openssh(&f.key))).unwrap();
        assert_eq!(policy.certificate_algorithms(), all);
        // Only an ECDSA key known: only ECDSA certificates (of its curve) go first.
        std::fs::write(&user, format!("h {KEY_ECDSA}\n")).unwrap();
        assert_eq!(
            policy.certificate_algorithms(),
            vec![Algorithm::Ecdsa {
                curve: EcdsaCurve::NistP256
            }]
        );
        // An authority for the host: all of them.
        std::fs::write(
            &user,
            format!("h {KEY_ECDSA}\n@cert-authority * {}\n", openssh(&f.other)),
        )
        .unwrap();
        assert_eq!(policy.certificate_algorithms(), all);
    }

    #[test]
    fn key_algorithms_follow_openssh_s_order() {
        let f = Fixture::new();
        let user = f.dir.path().join("user");
        let policy = f.policy("h", 22, StrictHostKeyChecking::Yes);
        let default = [
            Algorithm::Ed25519,
            Algorithm::Ecdsa {
                curve: EcdsaCurve::NistP256,
            },
            Algorithm::Rsa {
                hash: Some(HashAlg::Sha512),
            },
        ];
        assert_eq!(policy.key_algorithms(&default), default);
        // Only ECDSA known: ECDSA first.
        std::fs::write(&user, format!("h {KEY_ECDSA}\n")).unwrap();
        assert_eq!(
            policy.key_algorithms(&default),
            [default[1].clone(), default[0].clone(), default[2].clone()]
        );
        // ed25519 known too: OpenSSH's order as it is (ECDSA before RSA, whatever is known).
        std::fs::write(&user, format!("h {KEY_ECDSA}\nh {}\n", openssh(&f.key))).unwrap();
        assert_eq!(policy.key_algorithms(&default), default);
    }

    /// Runs `ssh-keygen` with `args`; false (the test skips) when it is not installed.
    fn ssh_keygen(args: &[&str]) -> bool {
        let Ok(status) = std::process::Command::new("ssh-keygen")
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
        else {
            eprintln!("SKIP: ssh-keygen is not installed");
            return false;
        };
        assert!(status.success(), "ssh-keygen {args:?}");
        true
    }

    #[test]
    fn host_certificates_made_by_ssh_keygen() {
        let f = Fixture::new();
        let d = f.dir.path();
        let path = |name: &str| d.join(name).to_str().unwrap().to_string();
        for key in ["ca", "host"] {
            if !ssh_keygen(&["-q", "-t", "ed25519", "-N", "", "-C", "", "-f", &path(key)]) {
                return;
            }
        }
        let ca_public = std::fs::read_to_string(d.join("ca.pub")).unwrap();
        // (name, ssh-keygen options) → certificate
        let sign = |name: &str, options: &[&str]| -> Certificate {
            std::fs::copy(d.join("host.pub"), d.join(format!("{name}.pub"))).unwrap();
            let mut args = vec!["-q", "-s"];
            let ca = path("ca");
            args.push(&ca);
            args.extend_from_slice(&["-I", name]);
            args.extend_from_slice(options);
            let public = path(&format!("{name}.pub"));
            args.push(&public);
            assert!(ssh_keygen(&args));
            Certificate::read_file(&d.join(format!("{name}-cert.pub"))).unwrap()
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let good = sign("good", &["-h", "-n", "h,alias"]);
        assert!(certifies_host(&good, "h", now));
        assert!(certifies_host(&good, "alias", now));
        assert!(!certifies_host(&good, "other", now));
        assert!(!certifies_host(
            &sign("pattern", &["-h", "-n", "h*"]),
            "h",
            now
        ));
        assert!(!certifies_host(&sign("anyone", &["-h"]), "h", now));
        assert!(!certifies_host(&sign("user", &["-n", "h"]), "h", now));
        let expired = sign("expired", &["-h", "-n", "h", "-V", "20000101:20010101"]);
        assert!(!certifies_host(&expired, "h", now));

        // Judged through known_hosts.
        let user = d.join("user");
        let key = PublicKeyOrCertificate::Certificate(good.clone());
        let policy = f.policy("h", 22, StrictHostKeyChecking::Yes);
        std::fs::write(&user, format!("@cert-authority * {ca_public}")).unwrap();
        assert_eq!(
            policy.verify("box", &key).unwrap(),
            Acceptance::Certified {
                file: user.clone(),
                line: 1
            }
        );
        // Another authority: judged as the plain key, which is new.
        std::fs::write(&user, format!("@cert-authority * {}\n", openssh(&f.other))).unwrap();
        assert!(matches!(
            policy.verify("box", &key),
            Err(HostError::HostKeyUnknown { .. })
        ));
        // ... and known.
        let host_public = std::fs::read_to_string(d.join("host.pub")).unwrap();
        std::fs::write(&user, format!("h {host_public}")).unwrap();
        assert!(matches!(
            policy.verify("box", &key),
            Ok(Acceptance::Known { .. })
        ));
        // A revoked signer is refused, with no second chance as a plain key.
        std::fs::write(
            &user,
            format!("h {host_public}@cert-authority * {ca_public}@revoked * {ca_public}"),
        )
        .unwrap();
        assert!(matches!(
            policy.verify("box", &key),
            Err(HostError::HostKeyRevoked { .. })
        ));
    }
}
