//! What the generators write values with: a single-quoted shell word ([`quote`]), hex
//! ([`hex_encode`]), and the per-call nonce that frames a reply ([`new_nonce`]).

/// Quotes bytes as one single-quoted shell word: `'` becomes `'\''`. Byte-exact for every byte
/// but NUL (which no path contains).
pub fn quote(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + 2);
    out.push(b'\'');
    for &b in bytes {
        if b == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(b);
        }
    }
    out.push(b'\'');
    out
}

/// A fresh per-call nonce: 16 random bytes from the OS, as 32 lowercase hex digits.
pub fn new_nonce() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness: fall back to the std hasher's per-process random keys and the
        // clock. Weaker, but a nonce only has to be unguessable by the authors of file content.
        use std::hash::{BuildHasher, Hasher};
        for half in bytes.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or(0),
            );
            half.copy_from_slice(&h.finish().to_le_bytes());
        }
    }
    hex_encode(&bytes)
}

pub(crate) fn hex_encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_is_single_quotes_with_escaped_quotes() {
        assert_eq!(quote(b"a b"), b"'a b'");
        assert_eq!(quote(b"it's"), b"'it'\\''s'");
        assert_eq!(quote(b""), b"''");
        assert_eq!(quote(b"\xff$(x)`y`"), b"'\xff$(x)`y`'");
    }

    #[test]
    fn nonces_are_fresh_hex() {
        let (a, b) = (new_nonce(), new_nonce());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
