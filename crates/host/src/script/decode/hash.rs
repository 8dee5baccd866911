//! A hash script's reply ([`decode_hash_many`]): `NOHASH`, or a `FILE` section per file with
//! its size and the digest of its first bytes.

use clankie_model::display_path;

use super::errors::{err_line, protocol, show, too_large};
use super::fields::{parse_u64, split_word};
use super::frame::{NOISE_SLACK, body_lines, parse_frame};
use crate::digest::Algorithm;
use crate::{FileRef, Hashed, HostError};

/// The largest reply to a hash script: a few short lines per file, and an `ERR` line with its
/// path in hex.
pub fn hash_many_reply_limit(files: &[(FileRef, u64)]) -> usize {
    files
        .iter()
        .map(|(file, _)| 256 + 2 * (file.root.len() + file.rel.len() + 1))
        .fold(NOISE_SLACK, usize::saturating_add)
}

/// Decodes the reply to [`posix::hash_many_script`]: `None` when the host has no hash tool,
/// else one result per file, in order. A file's `ERR` is its own result, as is a digest the
/// tool did not print; a reply that breaks the format fails the whole call.
///
/// [`posix::hash_many_script`]: crate::script::posix::hash_many_script
pub fn decode_hash_many(
    host: &str,
    nonce: &str,
    files: &[(FileRef, u64)],
    stdout: &[u8],
) -> Result<Option<Vec<Result<Hashed, HostError>>>, HostError> {
    let bad = |reason: String| protocol(host, reason);
    let limit = hash_many_reply_limit(files);
    if stdout.len() > limit {
        return Err(too_large(
            host,
            format!(
                "hash reply of {} bytes is over the {limit} bytes this request allows",
                stdout.len()
            ),
        ));
    }
    let frame = parse_frame(host, nonce, stdout)?;
    let mut lines = body_lines(frame.body);
    if lines.peek() == Some(&&b"NOHASH"[..]) {
        lines.next();
        if let Some(extra) = lines.next() {
            return Err(bad(format!("unexpected line {}", show(extra))));
        }
        return Ok(None);
    }
    let mut out: Vec<Option<Result<Hashed, HostError>>> = Vec::new();
    out.resize_with(files.len(), || None);
    for _ in 0..files.len() {
        let line = lines.next().unwrap_or_default();
        let i = match split_word(line) {
            (b"FILE", n) => parse_u64(n)
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n < files.len() && out[n].is_none()),
            _ => None,
        }
        .ok_or_else(|| bad(format!("expected a FILE line, got {}", show(line))))?;
        let file = &files[i].0;
        let path = || display_path(&[&file.root[..], b"/", &file.rel[..]].concat());
        let line = lines.next().unwrap_or_default();
        let mut result = match split_word(line) {
            (b"ERR", rest) => Err(err_line(host, rest)),
            (b"META", rest) => {
                let size = rest
                    .strip_prefix(b"size=")
                    .and_then(parse_u64)
                    .ok_or_else(|| bad(format!("bad META line {}", show(line))))?;
                let line = lines.next().unwrap_or_default();
                let (algorithm, digest) = match split_word(line) {
                    (b"HASH", rest) => split_word(rest),
                    _ => return Err(bad(format!("expected a HASH line, got {}", show(line)))),
                };
                let algorithm = Algorithm::from_name(algorithm)
                    .ok_or_else(|| bad(format!("unknown hash in {}", show(line))))?;
                if digest.is_empty() {
                    Err(HostError::Io {
                        host: host.to_string(),
                        path: path(),
                        reason: format!("{} printed no digest", algorithm.name()),
                    })
                } else if algorithm.is_well_formed(digest) {
                    Ok(Hashed {
                        size,
                        algorithm,
                        // Well formed: ASCII digits and lowercase hex.
                        digest: String::from_utf8_lossy(digest).into_owned(),
                    })
                } else {
                    return Err(bad(format!("malformed digest in {}", show(line))));
                }
            }
            _ => return Err(bad(format!("expected ERR or META, got {}", show(line)))),
        };
        let mut line = lines.next().unwrap_or_default();
        if let (b"ERR", rest) = split_word(line) {
            // The check after the read: the name was swapped while it was hashed.
            result = Err(err_line(host, rest));
            line = lines.next().unwrap_or_default();
        }
        if let Err(e @ HostError::Protocol { .. }) = result {
            return Err(e);
        }
        if line != format!("END-FILE {i}").as_bytes() {
            return Err(bad(format!("expected END-FILE {i}, got {}", show(line))));
        }
        out[i] = Some(result);
    }
    if let Some(extra) = lines.next() {
        return Err(bad(format!("unexpected line {}", show(extra))));
    }
    if frame.rc != 0 {
        return Err(bad(format!("hash script exited with {}", frame.rc)));
    }
    Ok(Some(out.into_iter().flatten().collect()))
}
