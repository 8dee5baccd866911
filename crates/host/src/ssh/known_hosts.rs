//! known_hosts matching, done the way OpenSSH does it: glob patterns (`*`, `?`), `!` negation,
//! comma lists, hashed names (`|1|salt|hash`, HMAC-SHA1), `[host]:port`, `@revoked`,
//! `@cert-authority` (ignored for plain keys), several files, case-insensitive names, tabs and
//! repeated blanks. Malformed lines are skipped, never fatal. Pure but for reading the files and
//! the one append `accept-new` does.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, KeyInit, Mac};
use russh::keys::{Algorithm, PublicKey};
use sha1::Sha1;

/// The outcome of looking a server key up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KnownHostsVerdict {
    /// A matching entry holds this key.
    Known,
    /// No matching entry holds any key: the host is new.
    Unknown,
    /// The host is known, but only with keys of other types. OpenSSH treats a key of a new type
    /// for a known host as a changed key (`accept-new` does not add it), and so do we.
    OtherTypes { file: PathBuf, line: usize },
    /// A matching entry holds another key of the same type.
    Changed { file: PathBuf, line: usize },
    /// A matching `@revoked` entry holds this key.
    Revoked { file: PathBuf, line: usize },
}

#[derive(Debug, PartialEq, Eq)]
enum Marker {
    None,
    Revoked,
    CertAuthority,
}

/// One usable line of a known_hosts file.
struct Line<'a> {
    marker: Marker,
    hosts: &'a str,
    key: PublicKey,
}

/// Splits a line into blank-separated fields (spaces or tabs, any number).
fn parse_line(line: &str) -> Option<Line<'_>> {
    let line = line.trim_end_matches(['\r', '\n']);
    let mut fields = line.split([' ', '\t']).filter(|f| !f.is_empty());
    let mut first = fields.next()?;
    if first.starts_with('#') {
        return None;
    }
    let marker = match first {
        "@revoked" => Marker::Revoked,
        "@cert-authority" => Marker::CertAuthority,
        m if m.starts_with('@') => return None,
        _ => Marker::None,
    };
    if marker != Marker::None {
        first = fields.next()?;
    }
    let key_type = fields.next()?;
    let key_b64 = fields.next()?;
    let key = PublicKey::from_openssh(&format!("{key_type} {key_b64}")).ok()?;
    Some(Line {
        marker,
        hosts: first,
        key,
    })
}

/// Glob match with `*` (any run) and `?` (one char), over bytes, iterative with backtracking.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == b'?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Whether a hosts field matches one (already lowercased) name. A matching `!` pattern wins.
fn hosts_match(hosts: &str, name: &str) -> bool {
    if let Some(hashed) = hosts.strip_prefix("|1|") {
        return hashed_match(hashed, name);
    }
    let mut positive = false;
    for pattern in hosts.split(',') {
        let pattern = pattern.to_ascii_lowercase();
        let (negated, pattern) = match pattern.strip_prefix('!') {
            Some(p) => (true, p.to_string()),
            None => (false, pattern),
        };
        if glob(pattern.as_bytes(), name.as_bytes()) {
            if negated {
                return false;
            }
            positive = true;
        }
    }
    positive
}

/// `salt|hash`, both base64: HMAC-SHA1(key = salt, message = name) == hash.
fn hashed_match(salt_and_hash: &str, name: &str) -> bool {
    let Some((salt, hash)) = salt_and_hash.split_once('|') else {
        return false;
    };
    let (Ok(salt), Ok(hash)) = (BASE64.decode(salt), BASE64.decode(hash)) else {
        return false;
    };
    let Ok(mut mac) = <Hmac<Sha1> as KeyInit>::new_from_slice(&salt) else {
        return false;
    };
    mac.update(name.as_bytes());
    mac.verify_slice(&hash).is_ok()
}

/// Looks `key` up for any of `host_names` (HostKeyAlias, or the host as `host` / `[host]:port`)
/// in `files`, in order. Missing or unreadable files count as empty. A revoked key wins over
/// everything, then a known key, then a changed one.
pub fn check(files: &[PathBuf], host_names: &[String], key: &PublicKey) -> KnownHostsVerdict {
    let names: Vec<String> = host_names.iter().map(|n| n.to_ascii_lowercase()).collect();
    let mut known = false;
    let mut changed: Option<(PathBuf, usize)> = None;
    let mut other_type: Option<(PathBuf, usize)> = None;
    for file in files {
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        for (index, raw) in text.split('\n').enumerate() {
            let Some(line) = parse_line(raw) else {
                continue;
            };
            if !names.iter().any(|n| hosts_match(line.hosts, n)) {
                continue;
            }
            let same_key = line.key.key_data() == key.key_data();
            match line.marker {
                Marker::Revoked if same_key => {
                    return KnownHostsVerdict::Revoked {
                        file: file.clone(),
                        line: index + 1,
                    };
                }
                Marker::Revoked | Marker::CertAuthority => {}
                Marker::None if same_key => known = true,
                Marker::None if line.key.algorithm() == key.algorithm() => {
                    changed.get_or_insert((file.clone(), index + 1));
                }
                Marker::None => {
                    other_type.get_or_insert((file.clone(), index + 1));
                }
            }
        }
    }
    if known {
        KnownHostsVerdict::Known
    } else if let Some((file, line)) = changed {
        KnownHostsVerdict::Changed { file, line }
    } else if let Some((file, line)) = other_type {
        KnownHostsVerdict::OtherTypes { file, line }
    } else {
        KnownHostsVerdict::Unknown
    }
}

/// Where a plain entry for any of `host_names` holds `key`: the first file and its 1-based line
/// (what `-v` says when a key is verified).
pub fn find_known(
    files: &[PathBuf],
    host_names: &[String],
    key: &PublicKey,
) -> Option<(PathBuf, usize)> {
    let names: Vec<String> = host_names.iter().map(|n| n.to_ascii_lowercase()).collect();
    for file in files {
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        for (index, raw) in String::from_utf8_lossy(&bytes).split('\n').enumerate() {
            if let Some(line) = parse_line(raw)
                && line.marker == Marker::None
                && line.key.key_data() == key.key_data()
                && names.iter().any(|n| hosts_match(line.hosts, n))
            {
                return Some((file.clone(), index + 1));
            }
        }
    }
    None
}

/// The key algorithms of the plain (unmarked) entries matching any of `host_names`.
pub fn known_algorithms(files: &[PathBuf], host_names: &[String]) -> Vec<Algorithm> {
    let names: Vec<String> = host_names.iter().map(|n| n.to_ascii_lowercase()).collect();
    let mut found: Vec<Algorithm> = Vec::new();
    for file in files {
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        for raw in String::from_utf8_lossy(&bytes).split('\n') {
            let Some(line) = parse_line(raw) else {
                continue;
            };
            if line.marker == Marker::None
                && names.iter().any(|n| hosts_match(line.hosts, n))
                && !found.contains(&line.key.algorithm())
            {
                found.push(line.key.algorithm());
            }
        }
    }
    found
}

/// Appends `host_name key` to `file` (creating it and its directory, mode 0700, as needed), as
/// `StrictHostKeyChecking accept-new` does. The only write this program ever does.
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
    let needs_newline = match std::fs::read(file) {
        Ok(existing) => !existing.is_empty() && !existing.ends_with(b"\n"),
        Err(_) => false,
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)?;
    let mut line = String::new();
    if needs_newline {
        line.push('\n');
    }
    line.push_str(host_name);
    line.push(' ');
    line.push_str(key_text.trim_end());
    line.push('\n');
    f.write_all(line.as_bytes())?;
    f.sync_all()
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

        fn verdict(&self, contents: &str, name: &str) -> KnownHostsVerdict {
            let f = self.file("kh", contents);
            check(&[f], &[name.to_string()], &self.key)
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
        assert_eq!(
            f.verdict(&format!("myhost {k}\n"), "myhost"),
            KnownHostsVerdict::Known
        );
        assert_eq!(
            f.verdict(&format!("myhost {k} a comment\n"), "myhost"),
            KnownHostsVerdict::Known
        );
        assert_eq!(
            f.verdict(&format!("# myhost {k}\n"), "myhost"),
            KnownHostsVerdict::Unknown
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
            assert_eq!(
                f.verdict(&line, "myhost"),
                KnownHostsVerdict::Known,
                "{line:?}"
            );
        }
        assert_eq!(
            f.verdict(&format!("myhost {}\n", openssh(&f.key)), "MYHOST"),
            KnownHostsVerdict::Known
        );
    }

    #[test]
    fn ports() {
        let f = Fixture::new();
        let k = openssh(&f.key);
        assert_eq!(
            f.verdict(&format!("[myhost]:2222 {k}\n"), "[myhost]:2222"),
            KnownHostsVerdict::Known
        );
        assert!(matches!(
            f.verdict(&format!("myhost {k}\n"), "[myhost]:2222"),
            KnownHostsVerdict::Unknown
        ));
        assert!(matches!(
            f.verdict(&format!("[myhost]:2222 {k}\n"), "myhost"),
            KnownHostsVerdict::Unknown
        ));
    }

    #[test]
    fn wildcards_negation_and_lists() {
        let f = Fixture::new();
        let k = openssh(&f.key);
        let line = format!("!bad.example.com,*.example.com,other {k}\n");
        assert_eq!(
            f.verdict(&line, "good.example.com"),
            KnownHostsVerdict::Known
        );
        assert_eq!(f.verdict(&line, "other"), KnownHostsVerdict::Known);
        assert!(matches!(
            f.verdict(&line, "bad.example.com"),
            KnownHostsVerdict::Unknown
        ));
        assert_eq!(
            f.verdict(&format!("h?st {k}\n"), "host"),
            KnownHostsVerdict::Known
        );
    }

    #[test]
    fn hashed_names() {
        let f = Fixture::new();
        let k = openssh(&f.key);
        assert_eq!(
            f.verdict(&format!("{} {k}\n", hashed("myhost")), "myhost"),
            KnownHostsVerdict::Known
        );
        assert_eq!(
            f.verdict(
                &format!("{} {k}\n", hashed("[myhost]:2222")),
                "[MyHost]:2222"
            ),
            KnownHostsVerdict::Known
        );
        assert!(matches!(
            f.verdict(&format!("{} {k}\n", hashed("myhost")), "otherhost"),
            KnownHostsVerdict::Unknown
        ));
        // Broken hashes are skipped.
        assert!(matches!(
            f.verdict(&format!("|1|!!|!! {k}\n|1|x {k}\n"), "myhost"),
            KnownHostsVerdict::Unknown
        ));
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
        assert_eq!(
            check(&[path], &["[myhost]:2200".to_string()], &f.key),
            KnownHostsVerdict::Known
        );
    }

    #[test]
    fn changed_and_other_types() {
        let f = Fixture::new();
        let other = openssh(&f.other);
        let kh = f.file("kh", &format!("# comment\nmyhost {other}\n"));
        assert_eq!(
            check(std::slice::from_ref(&kh), &["myhost".into()], &f.key),
            KnownHostsVerdict::Changed { file: kh, line: 2 }
        );
        // A known key anywhere wins over a changed line.
        let k = openssh(&f.key);
        assert_eq!(
            f.verdict(&format!("myhost {other}\nmyhost {k}\n"), "myhost"),
            KnownHostsVerdict::Known
        );
        // Only another key type known: not new, as OpenSSH sees it.
        let ecdsa = KEY_ECDSA;
        let kh = f.file("kh", &format!("myhost {ecdsa}\n"));
        assert_eq!(
            check(std::slice::from_ref(&kh), &["myhost".into()], &f.key),
            KnownHostsVerdict::OtherTypes { file: kh, line: 1 }
        );
        // Another host's key of another type does not count.
        assert_eq!(
            f.verdict(&format!("otherhost {ecdsa}\n"), "myhost"),
            KnownHostsVerdict::Unknown
        );
    }

    #[test]
    fn revoked_wins() {
        let f = Fixture::new();
        let k = openssh(&f.key);
        let kh = f.file("kh", &format!("myhost {k}\n@revoked * {k}\n"));
        assert_eq!(
            check(std::slice::from_ref(&kh), &["myhost".into()], &f.key),
            KnownHostsVerdict::Revoked { file: kh, line: 2 }
        );
        // A revoked line for another key does not matter.
        let other = openssh(&f.other);
        assert_eq!(
            f.verdict(&format!("@revoked\tmyhost {other}\nmyhost {k}\n"), "myhost"),
            KnownHostsVerdict::Known
        );
    }

    #[test]
    fn cert_authority_is_not_a_host_key() {
        let f = Fixture::new();
        let k = openssh(&f.key);
        assert!(matches!(
            f.verdict(
                &format!("@cert-authority *.example.com {k}\n"),
                "a.example.com"
            ),
            KnownHostsVerdict::Unknown
        ));
        // Nor is a CA key of the same type a "changed" key.
        let other = openssh(&f.other);
        assert!(matches!(
            f.verdict(&format!("@cert-authority myhost {other}\n"), "myhost"),
            KnownHostsVerdict::Unknown
        ));
        assert!(matches!(
            f.verdict(&format!("@unknown-marker myhost {k}\n"), "myhost"),
            KnownHostsVerdict::Unknown
        ));
    }

    #[test]
    fn bad_lines_are_skipped_and_files_combine() {
        let f = Fixture::new();
        let k = openssh(&f.key);
        let a = f.file("a", "myhost ssh-ed25519 !!!notbase64\nmyhost\n\n   \n");
        let missing = f.dir.path().join("missing");
        let b = f.file("b", &format!("otherhost {k}\nmyhost {k}\n"));
        assert_eq!(
            check(&[missing, a.clone(), b], &["myhost".into()], &f.key),
            KnownHostsVerdict::Known
        );
        assert!(matches!(
            check(&[a], &["myhost".into()], &f.key),
            KnownHostsVerdict::Unknown
        ));
        // Several names: any may match (HostKeyAlias and the host form).
        let c = f.file("c", &format!("alias {k}\n"));
        assert_eq!(
            check(&[c], &["nope".into(), "alias".into()], &f.key),
            KnownHostsVerdict::Known
        );
    }

    #[test]
    fn append_creates_and_is_then_known() {
        let f = Fixture::new();
        let file = f.dir.path().join("new/.ssh/known_hosts");
        append(&file, "[127.0.0.1]:2222", &f.key).unwrap();
        let names = ["[127.0.0.1]:2222".to_string()];
        assert_eq!(
            check(std::slice::from_ref(&file), &names, &f.key),
            KnownHostsVerdict::Known
        );
        // Appending to a file without a final newline keeps lines apart.
        let g = f.file("g", &format!("x {}", openssh(&f.other)));
        append(&g, "y", &f.key).unwrap();
        assert_eq!(
            check(std::slice::from_ref(&g), &["y".into()], &f.key),
            KnownHostsVerdict::Known
        );
        assert!(matches!(
            check(&[g], &["x".into()], &f.key),
            KnownHostsVerdict::Changed { line: 1, .. }
        ));
    }
}
