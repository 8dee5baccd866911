//! `shell = auto` against a login shell that answers like Windows' cmd.exe: the POSIX attempt
//! is recognised as "no sh", PowerShell is tried next (and `-v` says so); when PowerShell is
//! missing too, the run exits 3 naming both attempts.

use crate::common::sshd::sshd_or_skip;
use crate::support::{code, stderr};

/// A login shell that answers every command the way cmd.exe does when the program is missing.
const CMD_IMITATION: &str = r#"#!/bin/sh
# sshd runs: <shell> -c "<exec string>"
prog=${2%% *}
printf "'%s' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n" "$prog" >&2
exit 1
"#;

#[test]
fn auto_switches_to_powershell_and_names_both_attempts() {
    let Some(sshd) = sshd_or_skip() else { return };
    let alias = sshd.add_script_user("ck_wincmd", CMD_IMITATION);
    let home = tempfile::tempdir().unwrap();
    let out = crate::support::clankie(home.path())
        .args([
            "--ssh-config",
            sshd.ssh_config().to_str().unwrap(),
            "-v",
            "ls",
            &alias,
        ])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(code(&out), 3, "{err}");
    assert!(
        err.contains("switching to PowerShell"),
        "-v says it switched: {err}"
    );
    assert!(
        err.contains("'sh' is not recognized"),
        "names the POSIX attempt: {err}"
    );
    assert!(
        err.contains("'powershell' is not recognized"),
        "names the PowerShell attempt: {err}"
    );
    // Without -v: one line.
    let quiet = crate::support::clankie(home.path())
        .args([
            "--ssh-config",
            sshd.ssh_config().to_str().unwrap(),
            "ls",
            &alias,
        ])
        .output()
        .unwrap();
    assert_eq!(code(&quiet), 3);
    assert_eq!(
        stderr(&quiet).trim_end().lines().count(),
        1,
        "{}",
        stderr(&quiet)
    );
}
