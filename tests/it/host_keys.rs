//! Host keys, decided as OpenSSH decides them: a table of cases, each run against the real `ssh`
//! client (`BatchMode yes`, `true` as the command) and against clankie-read (`ls`), with the same
//! ssh_config (`-F`), on sshds offering host keys of chosen types (ed25519, ECDSA, RSA, several,
//! some with host certificates), where each client picks the key by what known_hosts holds. Each
//! row must get the same verdict from both — connect or refuse — but for the rows marked as
//! different on purpose: a changed or revoked key is refused under `StrictHostKeyChecking no`
//! too (SPEC), and where OpenSSH versions disagree on certificates the stricter rule is kept.
//! The known_hosts files must end up byte for byte as `ssh` leaves them: untouched on a
//! refusal, one line added when a new key is accepted, announced with the same words on stderr.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::require_tool;
use crate::common::sshd::{KeyedSshd, Sshd, sshd_or_skip};
use crate::support::{code, stderr};

/// Which host keys a server offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Offers {
    Ed25519,
    Ecdsa,
    Rsa,
    /// All three: the client chooses, putting the types known_hosts holds first.
    All,
    /// ECDSA and RSA.
    EcdsaAndRsa,
    /// The ed25519 key with a host certificate from `{CA}` for `127.0.0.1` and `hk-alias`,
    /// and a plain ECDSA key.
    Certified,
    /// The ed25519 key with a certificate from `{CA}` for the pattern `127.0.0.*`.
    CertifiedByPattern,
    /// The ed25519 key with a certificate from `{CA}` that names no principal.
    CertifiedForAnyone,
    /// The ed25519 key with a certificate from `{CA}` for `127.0.0.1` that expired in 2001.
    CertifiedExpired,
    /// The ed25519 key with a certificate from `{CA}` for `other.example` only.
    CertifiedForAnother,
}

/// What a client did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Connect,
    Refuse,
}
use Verdict::{Connect, Refuse};

/// What clankie-read must do on a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ours {
    /// What `ssh` does.
    Same,
    /// Refuse where `ssh` connects: the deliberate difference SPEC sets (a changed or revoked
    /// key is refused under every StrictHostKeyChecking value).
    IntendedRefusal,
    /// Refuse, where OpenSSH versions differ (the stricter of their rules is kept); `ssh`'s
    /// verdict is not checked.
    Stricter,
}
use Ours::{IntendedRefusal, Same, Stricter};

/// A file that does not exist, in [`Case::user`].
const MISSING: &str = "<missing>";

/// One row. known_hosts texts are templates, one entry per line: `{name}` is the name `ssh`
/// looks the host up under (`[127.0.0.1]:PORT`), `{port}` the port; `{E}`, `{C}`, `{R}` are the
/// server's ed25519, ECDSA and RSA public keys, `{e}`, `{c}`, `{r}` other keys of those types,
/// `{CA}` the key that signed the servers' certificates and `{CA2}` another.
struct Case {
    what: &'static str,
    offers: Offers,
    strict: &'static str,
    alias: Option<&'static str>,
    /// The UserKnownHostsFile list, in order (`MISSING` for a file that is not there).
    user: &'static [&'static str],
    /// The one GlobalKnownHostsFile.
    global: &'static str,
    /// Hash the user files' names with `ssh-keygen -H` first.
    hashed: bool,
    /// OpenSSH's verdict (checked too, so the table documents it).
    ssh: Verdict,
    /// Whether the key is new and accepted, so one line is added to the first user file.
    adds: bool,
    ours: Ours,
}

const fn case(what: &'static str, offers: Offers, strict: &'static str) -> Case {
    Case {
        what,
        offers,
        strict,
        alias: None,
        user: &[""],
        global: "",
        hashed: false,
        ssh: Refuse,
        adds: false,
        ours: Same,
    }
}

impl Case {
    const fn user(mut self, files: &'static [&'static str]) -> Case {
        self.user = files;
        self
    }
    const fn global(mut self, text: &'static str) -> Case {
        self.global = text;
        self
    }
    const fn alias(mut self, alias: &'static str) -> Case {
        self.alias = Some(alias);
        self
    }
    const fn hashed(mut self) -> Case {
        self.hashed = true;
        self
    }
    const fn connects(mut self) -> Case {
        self.ssh = Connect;
        self
    }
    const fn adds(mut self) -> Case {
        self.ssh = Connect;
        self.adds = true;
        self
    }
    const fn intended_refusal(mut self) -> Case {
        self.ours = IntendedRefusal;
        self
    }
    const fn stricter(mut self) -> Case {
        self.ours = Stricter;
        self
    }
}

use Offers::{
    All, Certified, CertifiedByPattern, CertifiedExpired, CertifiedForAnother, CertifiedForAnyone,
    Ecdsa, EcdsaAndRsa, Ed25519, Rsa,
};

const CASES: &[Case] = &[
    // StrictHostKeyChecking, for a known, a new and a changed key.
    case("known", Ed25519, "yes")
        .user(&["{name} {E}"])
        .connects(),
    case("new under yes", Ed25519, "yes"),
    case("new under ask (no terminal: yes)", Ed25519, "ask"),
    case("new under accept-new", Ed25519, "accept-new").adds(),
    case("new under no", Ed25519, "no").adds(),
    case("new under off", Ed25519, "off").adds(),
    case("changed under yes", Ed25519, "yes").user(&["{name} {e}"]),
    case("changed under ask", Ed25519, "ask").user(&["{name} {e}"]),
    case("changed under accept-new", Ed25519, "accept-new").user(&["{name} {e}"]),
    case("changed under no", Ed25519, "no")
        .user(&["{name} {e}"])
        .connects()
        .intended_refusal(),
    // Mixes of key types: a key of a type not yet known for a known host is a changed key.
    case("only ECDSA known, ed25519 offered, yes", Ed25519, "yes").user(&["{name} {C}"]),
    case(
        "only ECDSA known, ed25519 offered, accept-new",
        Ed25519,
        "accept-new",
    )
    .user(&["{name} {C}"]),
    case(
        "only RSA known, ed25519 offered, accept-new",
        Ed25519,
        "accept-new",
    )
    .user(&["{name} {R}"]),
    case(
        "only ed25519 known, RSA offered, accept-new",
        Rsa,
        "accept-new",
    )
    .user(&["{name} {E}"]),
    case("only ECDSA known, ed25519 offered, no", Ed25519, "no")
        .user(&["{name} {C}"])
        .connects()
        .intended_refusal(),
    case("ECDSA and ed25519 known, ed25519 offered", Ed25519, "yes")
        .user(&["{name} {C}\n{name} {E}"])
        .connects(),
    case(
        "another ECDSA key and ed25519 known, ed25519 offered",
        Ed25519,
        "yes",
    )
    .user(&["{name} {c}\n{name} {E}"])
    .connects(),
    case("all offered, ECDSA known: ECDSA chosen", All, "yes")
        .user(&["{name} {C}"])
        .connects(),
    case("all offered, RSA known: RSA chosen", All, "yes")
        .user(&["{name} {R}"])
        .connects(),
    case("all offered, another ECDSA key known", All, "accept-new").user(&["{name} {c}"]),
    case(
        "all offered, nothing known: ed25519 added",
        All,
        "accept-new",
    )
    .adds(),
    // With an ed25519 key known, `ssh` keeps its own order (ECDSA before RSA), whatever else
    // is known.
    case(
        "ed25519 and RSA known, ECDSA and RSA offered",
        EcdsaAndRsa,
        "yes",
    )
    .user(&["{name} {E}\n{name} {R}"]),
    case("RSA known, ECDSA and RSA offered", EcdsaAndRsa, "yes")
        .user(&["{name} {R}"])
        .connects(),
    case("ed25519 and RSA known, all offered", All, "yes")
        .user(&["{name} {R}\n{name} {E}"])
        .connects(),
    case("ECDSA offered, new", Ecdsa, "accept-new").adds(),
    case("RSA offered, new", Rsa, "no").adds(),
    case("ECDSA offered, known", Ecdsa, "yes")
        .user(&["{name} {C}"])
        .connects(),
    case("RSA offered, known", Rsa, "yes")
        .user(&["{name} {R}"])
        .connects(),
    // @revoked.
    case("known and revoked", Ed25519, "yes").user(&["{name} {E}\n@revoked * {E}"]),
    case("revoked, accept-new", Ed25519, "accept-new").user(&["@revoked * {E}"]),
    case("revoked, no", Ed25519, "no")
        .user(&["@revoked * {E}"])
        .connects()
        .intended_refusal(),
    case("another key revoked", Ed25519, "yes")
        .user(&["{name} {E}\n@revoked * {e}"])
        .connects(),
    case("revoked in the global file", Ed25519, "yes")
        .user(&["{name} {E}"])
        .global("@revoked {name} {E}"),
    // @cert-authority: the server presents a plain key, which a CA line does not vouch for.
    case("only a CA line, the server's own key", Ed25519, "yes").user(&["@cert-authority * {E}"]),
    case("only a CA line, accept-new", Ed25519, "accept-new")
        .user(&["@cert-authority * {e}"])
        .adds(),
    case("a CA line and the known key", Ed25519, "yes")
        .user(&["@cert-authority * {e}\n{name} {E}"])
        .connects(),
    // Hashed names.
    case("hashed, known", Ed25519, "yes")
        .user(&["{name} {E}"])
        .hashed()
        .connects(),
    case("hashed, changed", Ed25519, "accept-new")
        .user(&["{name} {e}"])
        .hashed(),
    case("hashed, another host", Ed25519, "accept-new")
        .user(&["[127.0.0.1]:1 {e}"])
        .hashed()
        .adds(),
    // `[host]:port` forms.
    case("known on another port only", Ed25519, "yes").user(&["[127.0.0.1]:1 {E}"]),
    case("known under the bare name", Ed25519, "yes")
        .user(&["127.0.0.1 {E}"])
        .connects(),
    case("another key under the bare name, yes", Ed25519, "yes").user(&["127.0.0.1 {e}"]),
    case(
        "another key under the bare name, accept-new",
        Ed25519,
        "accept-new",
    )
    .user(&["127.0.0.1 {e}"])
    .adds(),
    // `ssh` finds the key revoked under the bare name, then goes on to take it as new; a key
    // known_hosts calls revoked is never recorded here.
    case(
        "revoked under the bare name, accept-new",
        Ed25519,
        "accept-new",
    )
    .user(&["@revoked 127.0.0.1 {E}"])
    .adds()
    .intended_refusal(),
    // Wildcards and negation.
    case("wildcard", Ed25519, "yes")
        .user(&["[127.0.0.?]:* {E}"])
        .connects(),
    case("list with a pattern", Ed25519, "yes")
        .user(&["*.example.com,[127.0.0.1]:{port} {E}"])
        .connects(),
    // Negated for `[host]:port`, but `*` still holds the bare name, which `ssh` consults for a
    // key new on another port.
    case("negated, bare name by wildcard", Ed25519, "yes")
        .user(&["!{name},* {E}"])
        .connects(),
    case("negated, both names", Ed25519, "yes").user(&["!127.0.0.1,!{name},* {E}"]),
    case("negated, changed elsewhere", Ed25519, "accept-new")
        .user(&["!{name},* {e}"])
        .adds(),
    case("wildcard holds another key", Ed25519, "accept-new").user(&["* {e}"]),
    // HostKeyAlias.
    case("alias known", Ed25519, "yes")
        .alias("hk-alias")
        .user(&["hk-alias {E}"])
        .connects(),
    case("alias, case", Ed25519, "yes")
        .alias("HK-Alias")
        .user(&["hk-alias {E}"])
        .connects(),
    case("alias, only the real name known", Ed25519, "yes")
        .alias("hk-alias")
        .user(&["{name} {E}"]),
    case("alias, only the bare name known", Ed25519, "yes")
        .alias("hk-alias")
        .user(&["127.0.0.1 {E}"]),
    case("alias changed", Ed25519, "accept-new")
        .alias("hk-alias")
        .user(&["hk-alias {e}"]),
    case("alias new", Ed25519, "accept-new")
        .alias("hk-alias")
        .user(&["{name} {E}"])
        .adds(),
    // Several UserKnownHostsFiles, and GlobalKnownHostsFile.
    case("known in the second user file", Ed25519, "yes")
        .user(&["", "{name} {E}"])
        .connects(),
    case("known in the second, first missing", Ed25519, "yes")
        .user(&[MISSING, "{name} {E}"])
        .connects(),
    case("new, first user file missing", Ed25519, "accept-new")
        .user(&[MISSING, "[127.0.0.1]:1 {E}"])
        .adds(),
    case("changed in the second user file", Ed25519, "accept-new").user(&["", "{name} {e}"]),
    case("known in the global file", Ed25519, "yes")
        .global("{name} {E}")
        .connects(),
    case("changed in the global file", Ed25519, "accept-new").global("{name} {e}"),
    case(
        "changed in a user file, known in the global one",
        Ed25519,
        "yes",
    )
    .user(&["{name} {e}"])
    .global("{name} {E}")
    .connects(),
    // Host certificates and @cert-authority: a certificate is taken when an authority entry for
    // the host holds its signer and it certifies the host; otherwise (unless revoked) it is
    // judged as the plain key it certifies.
    case("certificate from a known authority", Certified, "yes")
        .user(&["@cert-authority * {CA}"])
        .connects(),
    case("authority for [host]:port patterns", Certified, "yes")
        .user(&["@cert-authority [127.0.0.1]:* {CA}"])
        .connects(),
    case("authority under the bare name", Certified, "yes")
        .user(&["@cert-authority 127.0.0.1 {CA}"])
        .connects(),
    case("authority in the global file", Certified, "yes")
        .global("@cert-authority * {CA}")
        .connects(),
    case("another authority", Certified, "yes").user(&["@cert-authority * {CA2}"]),
    case("another authority, accept-new", Certified, "accept-new")
        .user(&["@cert-authority * {CA2}"])
        .adds(),
    case(
        "certificate, nothing known, accept-new",
        Certified,
        "accept-new",
    )
    .adds(),
    case("certificate, nothing known, yes", Certified, "yes"),
    case("certificate, its plain key known", Certified, "yes")
        .user(&["{name} {E}"])
        .connects(),
    case(
        "certificate, its plain key changed",
        Certified,
        "accept-new",
    )
    .user(&["{name} {e}"]),
    case("another authority, the ECDSA key known", Certified, "yes")
        .user(&["@cert-authority * {CA2}\n{name} {C}"]),
    case("the authority, and the ECDSA key known", Certified, "yes")
        .user(&["@cert-authority * {CA}\n{name} {C}"])
        .connects(),
    case("authority revoked", Certified, "yes").user(&["@cert-authority * {CA}\n@revoked * {CA}"]),
    case("certified key revoked", Certified, "accept-new")
        .user(&["@cert-authority * {CA}\n@revoked * {E}"]),
    case("authority revoked, no", Certified, "no")
        .user(&["@cert-authority * {CA}\n@revoked * {CA}"])
        .connects()
        .intended_refusal(),
    case("certificate names the alias", Certified, "yes")
        .alias("hk-alias")
        .user(&["@cert-authority hk-alias {CA}"])
        .connects(),
    case("certificate does not name the alias", Certified, "yes")
        .alias("other-alias")
        .user(&["@cert-authority * {CA}"]),
    // OpenSSH 10.3 matches a host certificate's principals as patterns; earlier versions
    // compare them exactly.
    case("certificate for a pattern", CertifiedByPattern, "yes")
        .user(&["@cert-authority * {CA}"])
        .stricter(),
    // OpenSSH before 10.3 takes a certificate naming no principal for any host; 10.3 takes it
    // for none (CVE-2024-7594).
    case("certificate naming no principal", CertifiedForAnyone, "yes")
        .user(&["@cert-authority * {CA}"])
        .stricter(),
    case("expired certificate", CertifiedExpired, "yes").user(&["@cert-authority * {CA}"]),
    case(
        "expired certificate, its plain key known",
        CertifiedExpired,
        "yes",
    )
    .user(&["@cert-authority * {CA}\n{name} {E}"])
    .connects(),
    case(
        "expired certificate, accept-new",
        CertifiedExpired,
        "accept-new",
    )
    .user(&["@cert-authority * {CA}"])
    .adds(),
    case("certificate for another host", CertifiedForAnother, "yes")
        .user(&["@cert-authority * {CA}"]),
];

/// `ssh-keygen -s ca -h -I … [-n principals] [-V validity]` over a copy of `key`'s public half,
/// named `name`; returns the certificate's path.
fn certify(key: &Key, ca: &Key, name: &str, principals: &str, validity: Option<&str>) -> PathBuf {
    let dir = key.path.parent().unwrap();
    let public = dir.join(format!("{name}.pub"));
    std::fs::copy(key.path.with_extension("pub"), &public).unwrap();
    let mut cmd = Command::new("ssh-keygen");
    cmd.arg("-q")
        .arg("-s")
        .arg(&ca.path)
        .args(["-h", "-I", name]);
    if !principals.is_empty() {
        cmd.args(["-n", principals]);
    }
    if let Some(validity) = validity {
        cmd.args(["-V", validity]);
    }
    let status = cmd
        .arg(&public)
        .stdin(Stdio::null())
        .status()
        .expect("ssh-keygen -s");
    assert!(status.success(), "ssh-keygen -s for {name}");
    dir.join(format!("{name}-cert.pub"))
}

/// A key pair made with `ssh-keygen`: the private key's path and `<type> <base64>`.
struct Key {
    path: PathBuf,
    public: String,
}

fn keygen(dir: &Path, name: &str, kind: &str) -> Key {
    let path = dir.join(name);
    let mut cmd = Command::new("ssh-keygen");
    cmd.args(["-q", "-t", kind, "-N", "", "-C", "", "-f"])
        .arg(&path);
    if kind == "rsa" {
        cmd.args(["-b", "2048"]);
    }
    let status = cmd.stdin(Stdio::null()).status().expect("ssh-keygen");
    assert!(status.success(), "ssh-keygen -t {kind}");
    let text = std::fs::read_to_string(path.with_extension("pub")).unwrap();
    let public = text
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    Key { path, public }
}

/// The servers' keys and the others, and one sshd per [`Offers`].
struct Bench {
    /// Holds the key files while the sshds live.
    _keys: tempfile::TempDir,
    /// `{E}`, `{C}`, `{R}`, `{e}`, `{c}`, `{r}`.
    publics: Vec<(&'static str, String)>,
    servers: Vec<(Offers, KeyedSshd)>,
}

impl Bench {
    fn start(sshd: &Sshd) -> Bench {
        let keys = tempfile::tempdir().unwrap();
        let d = keys.path();
        let ed = keygen(d, "host_ed25519", "ed25519");
        let ec = keygen(d, "host_ecdsa", "ecdsa");
        let rsa = keygen(d, "host_rsa", "rsa");
        let publics = vec![
            ("{E}", ed.public.clone()),
            ("{C}", ec.public.clone()),
            ("{R}", rsa.public.clone()),
            ("{e}", keygen(d, "other_ed25519", "ed25519").public),
            ("{c}", keygen(d, "other_ecdsa", "ecdsa").public),
            ("{r}", keygen(d, "other_rsa", "rsa").public),
        ];
        let ca = keygen(d, "ca", "ed25519");
        let mut publics = publics;
        publics.push(("{CA}", ca.public.clone()));
        publics.push(("{CA2}", keygen(d, "ca2", "ed25519").public));
        let certified = certify(&ed, &ca, "certified", "127.0.0.1,hk-alias", None);
        let by_pattern = certify(&ed, &ca, "by_pattern", "127.0.0.*", None);
        let expired = certify(&ed, &ca, "expired", "127.0.0.1", Some("20000101:20010101"));
        let for_another = certify(&ed, &ca, "for_another", "other.example", None);
        let for_anyone = certify(&ed, &ca, "for_anyone", "", None);
        let servers = vec![
            (Ed25519, sshd.start_with_host_keys(&[&ed.path])),
            (Ecdsa, sshd.start_with_host_keys(&[&ec.path])),
            (Rsa, sshd.start_with_host_keys(&[&rsa.path])),
            (
                All,
                sshd.start_with_host_keys(&[&rsa.path, &ec.path, &ed.path]),
            ),
            (
                EcdsaAndRsa,
                sshd.start_with_host_keys(&[&rsa.path, &ec.path]),
            ),
            (
                Certified,
                sshd.start_with_host_certificates(&[&ed.path, &ec.path], &[&certified]),
            ),
            (
                CertifiedByPattern,
                sshd.start_with_host_certificates(&[&ed.path], &[&by_pattern]),
            ),
            (
                CertifiedForAnyone,
                sshd.start_with_host_certificates(&[&ed.path], &[&for_anyone]),
            ),
            (
                CertifiedExpired,
                sshd.start_with_host_certificates(&[&ed.path], &[&expired]),
            ),
            (
                CertifiedForAnother,
                sshd.start_with_host_certificates(&[&ed.path], &[&for_another]),
            ),
        ];
        Bench {
            _keys: keys,
            publics,
            servers,
        }
    }

    fn port(&self, offers: Offers) -> u16 {
        self.servers
            .iter()
            .find(|(o, _)| *o == offers)
            .map(|(_, s)| s.port())
            .unwrap()
    }

    /// A known_hosts template filled in for a server on `port`.
    fn fill(&self, template: &str, port: u16) -> String {
        if template.is_empty() {
            return String::new();
        }
        let mut text = template
            .replace("{name}", &format!("[127.0.0.1]:{port}"))
            .replace("{port}", &port.to_string());
        for (slot, public) in &self.publics {
            text = text.replace(slot, public);
        }
        text.push('\n');
        text
    }
}

/// The known_hosts files of one run, and the ssh_config naming them.
struct Run {
    dir: PathBuf,
    user: Vec<PathBuf>,
    global: PathBuf,
    config: PathBuf,
}

impl Run {
    /// Copies the case's prepared files into `dir` and writes an ssh_config for host `hk`.
    fn prepare(
        dir: PathBuf,
        prepared: &[Option<String>],
        global: &str,
        c: &Case,
        sshd: &Sshd,
        port: u16,
    ) -> Run {
        std::fs::create_dir_all(&dir).unwrap();
        let mut user = Vec::new();
        for (index, text) in prepared.iter().enumerate() {
            let path = dir.join(format!("known_hosts_{index}"));
            if let Some(text) = text {
                std::fs::write(&path, text).unwrap();
            }
            user.push(path);
        }
        let global_path = dir.join("global_known_hosts");
        std::fs::write(&global_path, global).unwrap();
        // KexAlgorithms: `ssh`'s default (sntrup761) costs a fifth of a second a connection, and
        // host keys do not depend on it.
        let mut config = format!(
            "Host hk\n  HostName 127.0.0.1\n  Port {port}\n  User ck_clean\n  IdentityFile {id}\n  \
             IdentitiesOnly yes\n  IdentityAgent none\n  BatchMode yes\n  ConnectTimeout 10\n  \
             KexAlgorithms curve25519-sha256\n  \
             StrictHostKeyChecking {strict}\n  GlobalKnownHostsFile {global}\n  UserKnownHostsFile",
            id = sshd.identity().display(),
            strict = c.strict,
            global = global_path.display(),
        );
        for path in &user {
            write!(config, " {}", path.display()).unwrap();
        }
        config.push('\n');
        if let Some(alias) = c.alias {
            writeln!(config, "  HostKeyAlias {alias}").unwrap();
        }
        let config_path = dir.join("ssh_config");
        std::fs::write(&config_path, config).unwrap();
        Run {
            dir,
            user,
            global: global_path,
            config: config_path,
        }
    }

    /// Every known_hosts file's contents (`None`: not there).
    fn files(&self) -> Vec<Option<Vec<u8>>> {
        self.user
            .iter()
            .chain(std::iter::once(&self.global))
            .map(|p| std::fs::read(p).ok())
            .collect()
    }
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).map_or(0, |m| m.permissions().mode() & 0o7777)
}

/// The `Warning: Permanently added …` lines of a client's stderr.
fn announcements(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("Warning: Permanently added"))
        .collect()
}

fn ssh_verdict(out: &Output) -> Result<Verdict, String> {
    let err = stderr(out);
    match out.status.code() {
        Some(0) => Ok(Connect),
        Some(255) if err.contains("Host key verification failed") => Ok(Refuse),
        _ => Err(format!("ssh failed otherwise ({}): {err}", out.status)),
    }
}

fn our_verdict(out: &Output) -> Result<Verdict, String> {
    let err = stderr(out);
    match code(out) {
        0 => Ok(Connect),
        3 if err.to_ascii_lowercase().contains("host key") => Ok(Refuse),
        other => Err(format!(
            "clankie-read failed otherwise (exit {other}): {err}"
        )),
    }
}

/// Runs one row; `Err` says how it went wrong.
fn run_case(c: &Case, bench: &Bench, sshd: &Sshd, root: &Path, index: usize) -> Result<(), String> {
    let port = bench.port(c.offers);
    let case_dir = root.join(format!("case-{index}"));
    // The files as both clients get them (hashed once, so both see the same salts).
    let prep = case_dir.join("prepared");
    std::fs::create_dir_all(&prep).unwrap();
    let mut prepared = Vec::new();
    for (i, template) in c.user.iter().enumerate() {
        if *template == MISSING {
            prepared.push(None);
            continue;
        }
        let path = prep.join(format!("u{i}"));
        std::fs::write(&path, bench.fill(template, port)).unwrap();
        if c.hashed && !template.is_empty() {
            let status = Command::new("ssh-keygen")
                .arg("-q")
                .arg("-H")
                .arg("-f")
                .arg(&path)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("ssh-keygen -H");
            assert!(status.success());
            assert!(std::fs::read_to_string(&path).unwrap().starts_with("|1|"));
        }
        prepared.push(Some(std::fs::read_to_string(&path).unwrap()));
    }
    let global = bench.fill(c.global, port);
    let home = case_dir.join("home");
    std::fs::create_dir_all(&home).unwrap();

    let theirs = Run::prepare(case_dir.join("ssh"), &prepared, &global, c, sshd, port);
    let before = theirs.files();
    let ssh_out = Command::new("ssh")
        .arg("-F")
        .arg(&theirs.config)
        .args(["hk", "true"])
        .env("HOME", &home)
        .stdin(Stdio::null())
        .output()
        .expect("run ssh");
    let ssh = ssh_verdict(&ssh_out)?;
    if ssh != c.ssh && c.ours != Stricter {
        return Err(format!(
            "ssh: {ssh:?}, the table says {:?}: {}",
            c.ssh,
            stderr(&ssh_out)
        ));
    }
    let after_ssh = theirs.files();

    let ours_run = Run::prepare(case_dir.join("ours"), &prepared, &global, c, sshd, port);
    let out = crate::support::clankie(&home)
        .args([
            "--ssh-config",
            ours_run.config.to_str().unwrap(),
            "ls",
            "hk",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("run clankie-read");
    let ours = our_verdict(&out)?;
    let after_ours = ours_run.files();
    let want = match c.ours {
        Same => ssh,
        IntendedRefusal | Stricter => Refuse,
    };
    if ours != want {
        return Err(format!(
            "clankie-read: {ours:?}, want {want:?}: {}",
            stderr(&out)
        ));
    }
    // What was written.
    let ssh_said = announcements(&stderr(&ssh_out)).join("\n");
    let we_said = announcements(&stderr(&out)).join("\n");
    match (c.adds, c.ours) {
        (true, Same) => {
            let first_before = before[0].clone().unwrap_or_default();
            let first_after = after_ours[0].clone().unwrap_or_default();
            let added = first_after
                .strip_prefix(first_before.as_slice())
                .map(|a| String::from_utf8_lossy(a).into_owned());
            let one_line = added
                .as_deref()
                .is_some_and(|a| a.ends_with('\n') && a.lines().count() == 1);
            if !one_line {
                return Err(format!("not one line added to the first file: {added:?}"));
            }
            if before[0].is_none() && mode(&ours_run.user[0]) != 0o600 {
                return Err(format!(
                    "a new known_hosts file is {:o}, not 600",
                    mode(&ours_run.user[0])
                ));
            }
            if after_ours[1..] != before[1..] {
                return Err("a file other than the first user file changed".into());
            }
            if after_ours != after_ssh {
                return Err(format!(
                    "known_hosts differ: ssh left {:?}, clankie-read {:?}",
                    after_ssh
                        .iter()
                        .map(|f| f.as_deref().map(String::from_utf8_lossy))
                        .collect::<Vec<_>>(),
                    after_ours
                        .iter()
                        .map(|f| f.as_deref().map(String::from_utf8_lossy))
                        .collect::<Vec<_>>(),
                ));
            }
            if ssh_said.is_empty() || ssh_said != we_said {
                return Err(format!(
                    "ssh said {ssh_said:?}, clankie-read said {we_said:?}"
                ));
            }
        }
        _ => {
            if after_ours != before {
                return Err("clankie-read changed a known_hosts file".into());
            }
            if ssh == Refuse && after_ssh != before {
                return Err("ssh changed a known_hosts file on a refusal".into());
            }
            if !we_said.is_empty() {
                return Err(format!("clankie-read announced {we_said:?}"));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&theirs.dir);
    let _ = std::fs::remove_dir_all(&ours_run.dir);
    Ok(())
}

#[test]
fn every_row_gets_the_verdict_ssh_gives() {
    let Some(sshd) = sshd_or_skip() else { return };
    if !require_tool("ssh-keygen") {
        return;
    }
    let bench = Bench::start(sshd);
    let root = tempfile::tempdir().unwrap();
    // A few rows at a time: each mostly waits on its two clients.
    const LANES: usize = 6;
    let mut failures: Vec<String> = std::thread::scope(|scope| {
        let lanes: Vec<_> = (0..LANES)
            .map(|lane| {
                let (bench, root) = (&bench, root.path());
                scope.spawn(move || {
                    let mut failures = Vec::new();
                    for (index, c) in CASES.iter().enumerate().skip(lane).step_by(LANES) {
                        if let Err(why) = run_case(c, bench, sshd, root, index) {
                            failures.push(format!(
                                "row {index} ({}; offers {:?}; StrictHostKeyChecking {}): {why}",
                                c.what, c.offers, c.strict
                            ));
                        }
                    }
                    failures
                })
            })
            .collect();
        lanes
            .into_iter()
            .flat_map(|lane| lane.join().expect("a lane panicked"))
            .collect()
    });
    failures.sort();
    assert!(
        failures.is_empty(),
        "{} of {} rows differ:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}
