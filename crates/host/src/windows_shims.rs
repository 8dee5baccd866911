//! On Windows, stand-ins for the few `std::os::unix` extension traits the crates use, with the
//! same names and methods, so that a file that uses one changes only its `use` line
//! (`#[cfg(unix)] use std::os::unix::…; #[cfg(windows)] use clankie_host::windows_shims::…;`).
//!
//! Paths travel as bytes everywhere in the program (listings, cursors, the wire). On Windows
//! those bytes are the OS string's own encoding (WTF-8: UTF-8 for every name that is Unicode,
//! which is every name a harness writes). See `docs/platforms.md`.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::time::UNIX_EPOCH;

/// `std::os::unix::ffi::OsStrExt`.
pub trait OsStrExt {
    fn as_bytes(&self) -> &[u8];
    /// Bytes that are not UTF-8 cannot be borrowed as a Windows string; they come only from a
    /// name holding an unpaired surrogate, which the listing already leaves out as not UTF-8.
    /// They become U+FFFD, a name the read then does not find.
    fn from_bytes(bytes: &[u8]) -> &Self;
}

impl OsStrExt for OsStr {
    fn as_bytes(&self) -> &[u8] {
        self.as_encoded_bytes()
    }

    fn from_bytes(bytes: &[u8]) -> &OsStr {
        OsStr::new(std::str::from_utf8(bytes).unwrap_or("\u{FFFD}"))
    }
}

/// `std::os::unix::ffi::OsStringExt`.
pub trait OsStringExt {
    fn into_vec(self) -> Vec<u8>;
}

impl OsStringExt for OsString {
    fn into_vec(self) -> Vec<u8> {
        self.into_encoded_bytes()
    }
}

/// `std::os::unix::fs::MetadataExt`, the one method used.
pub trait MetadataExt {
    /// Seconds since the Unix epoch of the last modification, as `st_mtime`.
    fn mtime(&self) -> i64;
}

impl MetadataExt for std::fs::Metadata {
    fn mtime(&self) -> i64 {
        match self.modified().map(|t| t.duration_since(UNIX_EPOCH)) {
            Ok(Ok(after)) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
            Ok(Err(before)) => -i64::try_from(before.duration().as_secs()).unwrap_or(i64::MAX),
            Err(_) => 0,
        }
    }
}

/// `std::os::unix::fs::OpenOptionsExt`, the one method used.
pub trait OpenOptionsExt {
    /// Ignored: a new file inherits its directory's ACL, which under the user's profile
    /// (`%USERPROFILE%`, `%APPDATA%`) grants the user alone.
    fn mode(&mut self, mode: u32) -> &mut Self;
}

impl OpenOptionsExt for std::fs::OpenOptions {
    fn mode(&mut self, _mode: u32) -> &mut Self {
        self
    }
}

/// `C:\Users\me` for the `\\?\C:\Users\me` that `fs::canonicalize` returns, so that listed
/// paths read as the user writes them; a path with no plain spelling (a UNC share, a path too
/// long for one) is kept as it is.
pub fn without_verbatim_prefix(path: PathBuf) -> PathBuf {
    let Some(plain) = path.to_str().and_then(|p| p.strip_prefix(r"\\?\")) else {
        return path;
    };
    let drive = plain.as_bytes();
    let is_drive = drive.len() >= 3 && drive[0].is_ascii_alphabetic() && &drive[1..3] == b":\\";
    if is_drive && plain.len() < 260 {
        PathBuf::from(plain)
    } else {
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drive_path_loses_its_verbatim_prefix_and_a_share_keeps_it() {
        let plain = |p: &str| without_verbatim_prefix(PathBuf::from(p));
        assert_eq!(
            plain(r"\\?\C:\Users\me\.claude"),
            PathBuf::from(r"C:\Users\me\.claude")
        );
        assert_eq!(plain(r"C:\Users\me"), PathBuf::from(r"C:\Users\me"));
        let share = r"\\?\UNC\server\share\.claude";
        assert_eq!(plain(share), PathBuf::from(share));
        let long = format!(r"\\?\C:\{}", "a".repeat(300));
        assert_eq!(plain(&long), PathBuf::from(&long));
    }

    #[test]
    fn bytes_are_the_strings_own_and_mtime_is_unix_seconds() {
        let name = OsStr::new("séance-✓.jsonl");
        assert_eq!(name.as_bytes(), "séance-✓.jsonl".as_bytes());
        assert_eq!(OsStr::from_bytes(name.as_bytes()), name);
        assert_eq!(OsStr::from_bytes(b"\xff"), OsStr::new("\u{FFFD}"));
        assert_eq!(OsString::from("ab").into_vec(), b"ab");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"0123456789").unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let mtime = std::fs::metadata(&path).unwrap().mtime();
        assert!((now - 60..=now + 60).contains(&mtime), "{mtime} vs {now}");
    }
}
