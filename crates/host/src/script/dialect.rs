//! Which dialect a host speaks: [`Dialect`] picks the generator of a script, and
//! [`detect_dialect_switch`] tells from a POSIX script's reply that the host is Windows.

use super::decode::find;
use super::{Invocation, posix, powershell};
use crate::FileRef;
use clankie_model::{ByteRange, RootSpec};

/// The script dialect a host speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `sh -s` with the script on stdin ([`posix`]).
    Posix,
    /// Windows PowerShell 5.1 through `-EncodedCommand` ([`powershell`]).
    PowerShell,
}

impl Dialect {
    /// Every dialect.
    pub const ALL: [Dialect; 2] = [Dialect::Posix, Dialect::PowerShell];

    /// The name the hosts file (`shell = …`) and `script --shell` use.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Posix => "posix",
            Dialect::PowerShell => "powershell",
        }
    }

    /// The dialect of a [`Dialect::name`].
    pub fn from_name(name: &str) -> Option<Dialect> {
        Dialect::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The invocation of a list script for `roots`.
    pub fn list(self, nonce: &str, roots: &[RootSpec]) -> Invocation {
        match self {
            Dialect::Posix => posix::invocation(posix::list_script(nonce, roots)),
            Dialect::PowerShell => powershell::exec_string(&powershell::list_script(nonce, roots)),
        }
    }

    /// The invocation of a read script for `ranges` of `file`.
    pub fn read(self, nonce: &str, file: &FileRef, ranges: &[ByteRange]) -> Invocation {
        match self {
            Dialect::Posix => posix::invocation(posix::read_script(nonce, file, ranges)),
            Dialect::PowerShell => {
                powershell::exec_string(&powershell::read_script(nonce, file, ranges))
            }
        }
    }
}

/// For `shell = auto`: whether the reply to a POSIX script says the host is Windows and the
/// PowerShell dialect should be tried instead. True when no BEGIN line came back and the shell
/// said that `sh` does not exist — cmd.exe (`'sh' is not recognized as an internal or external
/// command`, exit status 9009 in any language) or PowerShell (`The term 'sh' is not recognized`,
/// possibly inside a CLIXML error record) — or when a BEGIN line came back from a
/// Git-for-Windows, MSYS2 or Cygwin `sh` (`uname -s` is `MINGW64_NT-…`, `MSYS_NT-…`,
/// `CYGWIN_NT-…`), whose POSIX view of the disk is not where Windows agents keep transcripts.
pub fn detect_dialect_switch(stdout: &[u8], stderr: &[u8], exit: Option<u32>) -> bool {
    let unames: Vec<&[u8]> = stdout
        .split(|&b| b == b'\n')
        .filter_map(begin_uname)
        .collect();
    if !unames.is_empty() {
        return unames.iter().any(|uname| {
            let upper = uname.to_ascii_uppercase();
            [&b"MINGW"[..], b"MSYS", b"CYGWIN"]
                .iter()
                .any(|p| upper.starts_with(p))
        });
    }
    let says_no_sh = |text: &[u8]| {
        find(text, b"'sh' is not recognized").is_some()
            || find(text, b"&apos;sh&apos; is not recognized").is_some()
    };
    says_no_sh(stderr) || says_no_sh(stdout) || exit == Some(9009)
}

/// The uname of a `<32 hex>:BEGIN <uname>` line (any nonce), trimmed.
fn begin_uname(line: &[u8]) -> Option<&[u8]> {
    let at = find(line, b":BEGIN ")?;
    let nonce = line[..at].rsplit(|b| !b.is_ascii_hexdigit()).next()?;
    (nonce.len() == 32).then(|| line[at + 7..].trim_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONCE: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn dialect_switch_on_a_missing_sh_or_a_windows_posix_layer() {
        let cmd = b"'sh' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n";
        assert!(detect_dialect_switch(b"", cmd, Some(1)));
        // Another language: cmd's exit status still says "no such command".
        assert!(detect_dialect_switch(
            b"",
            "Der Befehl \"sh\" ist entweder falsch geschrieben".as_bytes(),
            Some(9009)
        ));
        let ps51 = b"sh : The term 'sh' is not recognized as the name of a cmdlet, function, script file, or operable program.\r\n";
        assert!(detect_dialect_switch(b"", ps51, Some(1)));
        let pwsh = b"sh: The term 'sh' is not recognized as a name of a cmdlet, function, script file, or executable program.";
        assert!(detect_dialect_switch(b"", pwsh, Some(1)));
        let clixml = b"#< CLIXML\r\n<Objs Version=\"1.1.0.1\"><S S=\"Error\">sh : The term &apos;sh&apos; is not recognized as the name of a cmdlet_x000D__x000A_</S></Objs>";
        assert!(detect_dialect_switch(b"", clixml, Some(1)));
        for uname in [
            "MINGW64_NT-10.0-19045",
            "MSYS_NT-10.0-22631",
            "CYGWIN_NT-10.0",
            "mingw32_nt-6.1",
        ] {
            let out = format!("\n{NONCE}:BEGIN {uname}\r\nMODE statc\n\n{NONCE}:END 0\n");
            assert!(
                detect_dialect_switch(out.as_bytes(), b"", Some(0)),
                "{uname}"
            );
        }
        // A POSIX host answered: no switch, whatever else was printed.
        let linux = format!("motd\n\n{NONCE}:BEGIN Linux\n\n{NONCE}:END 0\n");
        assert!(!detect_dialect_switch(linux.as_bytes(), cmd, Some(0)));
        assert!(!detect_dialect_switch(
            format!("\n{NONCE}:BEGIN Darwin\n").as_bytes(),
            b"",
            None
        ));
        // Other failures are not a reason to switch.
        for (out, err, exit) in [
            (
                &b"This account is currently not available.\n"[..],
                &b""[..],
                Some(1),
            ),
            (b"", b"sh: 1: syntax error", Some(2)),
            (b"", b"bash: sh: command not found", Some(127)),
            (b"", b"", None),
            (b"x:BEGIN MINGW64", b"", Some(0)),
        ] {
            assert!(
                !detect_dialect_switch(out, err, exit),
                "{:?}",
                String::from_utf8_lossy(err)
            );
        }
    }
}
