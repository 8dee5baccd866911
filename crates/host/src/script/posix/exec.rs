//! How a POSIX script is sent: as `sh -s` with the script on stdin ([`invocation`]), or
//! gzip-compressed to a host whose listing came compressed ([`compressed_invocation`]).

use crate::script::{Invocation, parse_frame};

/// The exec string for every POSIX host: plain words that every login shell passes unchanged.
pub const POSIX_EXEC: &str = "sh -s";

/// The invocation of a POSIX script: [`POSIX_EXEC`], the script on stdin.
pub fn invocation(script: Vec<u8>) -> Invocation {
    Invocation {
        exec: POSIX_EXEC.to_string(),
        stdin: script,
    }
}

/// The exec string of a script sent gzip-compressed on stdin ([`compressed_invocation`]).
pub const POSIX_GZIP_EXEC: &str = "sh -c 'gzip -dc|sh -s'";

/// What ends a command that carries a compressed script ([`compressed_invocation`]).
pub const COMPRESSED_TAIL: &str = "\"|base64 -d|gzip -dc|sh -s'";

/// The longest exec string [`compressed_invocation`] carries a script in (as the inline
/// command does, `ssh::inline`: Linux refuses one argument over 128 KiB).
const MAX_COMPRESSED_COMMAND: usize = 64 * 1024;

/// The invocation of a POSIX script for a host whose listing came compressed (so `gzip` and
/// `base64 -d` answer there): the script gzip-compressed, in the command as base64 when that
/// fits (`sh -c 'printf "…"|base64 -d|gzip -dc|sh -s'`: base64 holds no byte that printf or any
/// login shell's single quotes would read), else on stdin (`sh -c 'gzip -dc|sh -s'`). A batch
/// of thousands of files names each one: its script shrinks several times, and one in the
/// command waits no round trip for the channel's window. A stream cut short (an rc file that
/// ate stdin) leaves `sh` a script whose group never closes, which it refuses to run.
pub fn compressed_invocation(script: &[u8]) -> Invocation {
    use base64::Engine as _;
    let compressed = gzip(script);
    let text = base64::engine::general_purpose::STANDARD.encode(&compressed);
    let command = format!("sh -c 'printf \"{text}{COMPRESSED_TAIL}");
    if command.len() <= MAX_COMPRESSED_COMMAND {
        return Invocation {
            exec: command,
            stdin: Vec::new(),
        };
    }
    Invocation {
        exec: POSIX_GZIP_EXEC.to_string(),
        stdin: compressed,
    }
}

/// A script that runs `script` sent gzip-compressed (for a kept shell of a host whose listing
/// came compressed, as [`compressed_invocation`] sends it to an exec): one line,
/// `printf %s '…'|base64 -d|gzip -dc|sh -s`, the base64 in single quotes (it holds no `'`). The
/// inner `sh` reads the script from the pipe, never the kept shell's stdin; a stream cut short
/// leaves it a script whose group never closes, which it refuses to run.
pub fn compressed_pipe(script: &[u8]) -> Vec<u8> {
    use base64::Engine as _;
    let text = base64::engine::general_purpose::STANDARD.encode(gzip(script));
    format!("printf %s '{text}'|base64 -d|gzip -dc|sh -s\n").into_bytes()
}

fn gzip(script: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder
        .write_all(script)
        .expect("writing into memory cannot fail");
    encoder.finish().expect("writing into memory cannot fail")
}

/// Whether a list reply came compressed (a `GZ` line in its frame): the host's `gzip` and
/// `base64` answered both ways, so [`compressed_invocation`] may be sent to it.
pub fn listing_was_compressed(nonce: &str, stdout: &[u8]) -> bool {
    listing_block_is(nonce, stdout, b"GZ")
}

/// Whether a listing that reads along came through `zstd` (a `ZS` line in its frame): the
/// host's `zstd -1 -c -q | base64` answered, which a batched read may name.
pub fn listing_was_zstd(nonce: &str, stdout: &[u8]) -> bool {
    listing_block_is(nonce, stdout, b"ZS")
}

fn listing_block_is(nonce: &str, stdout: &[u8], tag: &[u8]) -> bool {
    parse_frame("", nonce, stdout)
        .is_ok_and(|frame| frame.body.split(|&b| b == b'\n').any(|l| l == tag))
}
