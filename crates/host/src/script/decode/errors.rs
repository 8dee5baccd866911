//! The errors a reply maps to: an `ERR` line's code ([`err_line`]), a reply that breaks the
//! wire format (exit 3) or is over its bound (exit 6), and a line shown in their messages.

use super::fields::{hex_decode, split_word};
use crate::HostError;
use clankie_model::display_path;

/// Maps an `ERR <code> <hex path>` line to the error a user reads.
pub(super) fn err_line(host: &str, rest: &[u8]) -> HostError {
    let (code, hex) = split_word(rest);
    let path = hex_decode(hex)
        .map(|p| display_path(&p))
        .unwrap_or_else(|| "?".to_string());
    let host = host.to_string();
    let refused = |reason: &str| HostError::PathRefused {
        host: host.clone(),
        path: path.clone(),
        reason: reason.to_string(),
    };
    match code {
        b"noroot" | b"nodir" | b"missing" => HostError::NotFound {
            host: host.clone(),
            path: path.clone(),
        },
        b"outside" => refused("leads outside the harness root, or through a symlink"),
        b"symlink" => refused("symlink below the harness root"),
        b"raced" => {
            refused("replaced while it was read (a symlink or another file took its place)")
        }
        b"notfile" => refused("not a regular file"),
        b"badpath" => refused("not a clean relative path"),
        b"badrange" => refused("read request over the per-call cap"),
        b"unsafe" => HostError::Io {
            host: host.clone(),
            path: path.clone(),
            reason: "the remote shell cannot carry this path's bytes in its locale".to_string(),
        },
        b"restricted" => HostError::Io {
            host: host.clone(),
            path: path.clone(),
            reason: "PowerShell runs in Constrained Language Mode (AppLocker/WDAC policy); \
                     file access through .NET is blocked"
                .to_string(),
        },
        b"open" => HostError::Io {
            host: host.clone(),
            path: path.clone(),
            reason: "cannot open the file (locked, or the path is too long)".to_string(),
        },
        // The hex field carries the PowerShell error message here, not a path.
        b"script" => HostError::Protocol {
            host: host.clone(),
            reason: format!("remote PowerShell failed: {path}"),
        },
        b"unreadable" => HostError::Io {
            host: host.clone(),
            path: path.clone(),
            reason: "permission denied".to_string(),
        },
        b"nosize" => HostError::Io {
            host: host.clone(),
            path: path.clone(),
            reason: "cannot read the file's size".to_string(),
        },
        // No script prints another code: the reply is not what was sent.
        other => HostError::Protocol {
            host: host.clone(),
            reason: format!("unknown ERR code {} for {path}", show(other)),
        },
    }
}

pub(super) fn protocol(host: &str, reason: String) -> HostError {
    HostError::Protocol {
        host: host.to_string(),
        reason,
    }
}

pub(super) fn too_large(host: &str, reason: String) -> HostError {
    HostError::ReplyTooLarge {
        host: host.to_string(),
        reason,
    }
}

/// A line for an error message: at most 120 bytes, escaped.
pub(super) fn show(line: &[u8]) -> String {
    let mut s = line[..line.len().min(120)].escape_ascii().to_string();
    if line.len() > 120 {
        s.push('…');
    }
    format!("`{s}`")
}
