//! Digests of a file's bytes as a host's own hash tools print them, for `grep --verify`: a host
//! hashes the cached part of a file where it lies ([`crate::Host::hash_prefixes`]) and the
//! caller hashes its cached copy with the same algorithm here ([`Algorithm::digest`]). The
//! algorithms are the ones the tools found on hosts compute: `sha256sum` (SHA-256),
//! `md5sum` (MD5) and POSIX `cksum` (its CRC-32 over the bytes and their length).

use std::io::Read;

use md5::Md5;
use sha2::{Digest as _, Sha256};

/// A hash a host's tool computes, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// `sha256sum`: lowercase hex of SHA-256.
    Sha256,
    /// `md5sum`: lowercase hex of MD5.
    Md5,
    /// POSIX `cksum`: its CRC in decimal.
    Cksum,
}

impl Algorithm {
    /// The name the scripts print (`HASH <name> <digest>`).
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Sha256 => "sha256",
            Algorithm::Md5 => "md5",
            Algorithm::Cksum => "cksum",
        }
    }

    /// The algorithm a script names.
    pub fn from_name(name: &[u8]) -> Option<Algorithm> {
        [Algorithm::Sha256, Algorithm::Md5, Algorithm::Cksum]
            .into_iter()
            .find(|a| a.name().as_bytes() == name)
    }

    /// Whether `digest` is spelled as this algorithm's tool prints one (the decoder refuses
    /// anything else).
    pub fn is_well_formed(self, digest: &[u8]) -> bool {
        let hex = |n: usize| {
            digest.len() == n
                && digest
                    .iter()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
        };
        match self {
            Algorithm::Sha256 => hex(64),
            Algorithm::Md5 => hex(32),
            Algorithm::Cksum => {
                (1..=10).contains(&digest.len())
                    && std::str::from_utf8(digest)
                        .ok()
                        .and_then(|s| s.parse::<u32>().ok())
                        .is_some_and(|n| n.to_string().as_bytes() == digest)
            }
        }
    }

    /// The digest of `bytes`, spelled as the host's tool prints it.
    pub fn digest(self, bytes: &[u8]) -> String {
        let mut hasher = Hasher::new(self);
        hasher.update(bytes);
        hasher.finish()
    }

    /// The digest of the first `len` bytes `reader` gives (fewer when it ends first), and how
    /// many it gave.
    pub fn digest_reader(self, reader: impl Read, len: u64) -> std::io::Result<(String, u64)> {
        let mut hasher = Hasher::new(self);
        let mut reader = reader.take(len);
        let mut buf = vec![0u8; 256 * 1024];
        let mut read = 0u64;
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            hasher.update(&buf[..n]);
            read += n as u64;
        }
        Ok((hasher.finish(), read))
    }
}

/// An incremental digest of one algorithm.
pub struct Hasher(Inner);

enum Inner {
    Sha256(Sha256),
    Md5(Md5),
    Cksum { crc: u32, len: u64 },
}

impl Hasher {
    pub fn new(algorithm: Algorithm) -> Hasher {
        Hasher(match algorithm {
            Algorithm::Sha256 => Inner::Sha256(Sha256::new()),
            Algorithm::Md5 => Inner::Md5(Md5::new()),
            Algorithm::Cksum => Inner::Cksum { crc: 0, len: 0 },
        })
    }

    pub fn update(&mut self, bytes: &[u8]) {
        match &mut self.0 {
            Inner::Sha256(h) => h.update(bytes),
            Inner::Md5(h) => h.update(bytes),
            Inner::Cksum { crc, len } => {
                *crc = crc_update(*crc, bytes);
                *len += bytes.len() as u64;
            }
        }
    }

    /// The digest as the tool prints it.
    pub fn finish(self) -> String {
        match self.0 {
            Inner::Sha256(h) => hex(&h.finalize()),
            Inner::Md5(h) => hex(&h.finalize()),
            Inner::Cksum { mut crc, len } => {
                // POSIX: after the data, the length's bytes, least significant first, as
                // many as it takes (none for an empty file); then the complement.
                let mut n = len;
                while n > 0 {
                    crc = crc_update(crc, &[n as u8]);
                    n >>= 8;
                }
                (!crc).to_string()
            }
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// POSIX `cksum`'s CRC step: polynomial 0x04C11DB7, most significant bit first, starting
/// from 0 (not reflected, unlike zlib's CRC-32).
fn crc_update(mut crc: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        crc = (crc << 8) ^ CRC_TABLE[((crc >> 24) as u8 ^ b) as usize];
    }
    crc
}

const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = (i as u32) << 24;
        let mut k = 0;
        while k < 8 {
            c = if c & 0x8000_0000 != 0 {
                (c << 1) ^ 0x04C1_1DB7
            } else {
                c << 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    // What GNU coreutils' `sha256sum`, `md5sum` and `cksum` print for these inputs.
    #[test]
    fn digests_are_the_tools() {
        assert_eq!(
            Algorithm::Sha256.digest(b"hi"),
            "8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"
        );
        assert_eq!(
            Algorithm::Md5.digest(b"hi"),
            "49f68a5c8493ec2c0bf489821c21fc3b"
        );
        assert_eq!(Algorithm::Cksum.digest(b"hi"), "2352138605");
        assert_eq!(Algorithm::Cksum.digest(b""), "4294967295");
        assert_eq!(Algorithm::Cksum.digest(b"abc"), "1219131554");
    }

    #[test]
    fn a_reader_is_hashed_up_to_its_length() {
        let bytes: Vec<u8> = (0..700_000u32).map(|i| (i * 7) as u8).collect();
        for algorithm in [Algorithm::Sha256, Algorithm::Md5, Algorithm::Cksum] {
            let (digest, read) = algorithm.digest_reader(&bytes[..], 600_001).unwrap();
            assert_eq!(
                (digest, read),
                (algorithm.digest(&bytes[..600_001]), 600_001)
            );
            assert!(algorithm.is_well_formed(algorithm.digest(&bytes).as_bytes()));
        }
    }

    #[test]
    fn malformed_digests_are_refused() {
        assert!(!Algorithm::Sha256.is_well_formed(b"8F43"));
        assert!(!Algorithm::Md5.is_well_formed(&[b'a'; 31]));
        assert!(!Algorithm::Cksum.is_well_formed(b"4294967296"));
        assert!(!Algorithm::Cksum.is_well_formed(b"012"));
        assert!(!Algorithm::Cksum.is_well_formed(b""));
    }
}
