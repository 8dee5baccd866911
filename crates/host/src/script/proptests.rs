//! Property tests over hostile replies: whatever a host prints back, framed with the right nonce
//! or not, the list, read and hash decoders answer with a listing, a read or a `HostError` — never a
//! panic, and never more data than the request allows. `cargo test` runs 256 cases each;
//! `scripts/fuzz` runs many more (`PROPTEST_CASES`).

use proptest::prelude::*;

use super::{decode_hash_many, decode_list, decode_read, hex_encode, read_reply_limit};
use clankie_model::ByteRange;

const NONCE: &str = "0123456789abcdef0123456789abcdef";

/// Reply lines built from the wire format's own words, with hostile values.
fn reply_line() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        Just("ROOT".to_string()),
        Just("F".to_string()),
        Just("FX".to_string()),
        Just("S".to_string()),
        Just("MODE".to_string()),
        Just("META".to_string()),
        Just("DATA 0".to_string()),
        Just("END-DATA 0".to_string()),
        Just("DATA 1".to_string()),
        Just("END-DATA 1".to_string()),
        Just("ERR".to_string()),
        Just("FILE 0".to_string()),
        Just("FILE 1".to_string()),
        Just("END-FILE 0".to_string()),
        Just("END-FILE 1".to_string()),
        Just("NOHASH".to_string()),
        Just("HASH".to_string()),
        Just("sha256".to_string()),
        Just("md5".to_string()),
        Just("cksum".to_string()),
        Just("4294967295".to_string()),
        Just("49f68a5c8493ec2c0bf489821c21fc3b".to_string()),
        Just("claude".to_string()),
        Just("size=1000".to_string()),
        Just("size=18446744073709551615".to_string()),
        Just("enc=b64".to_string()),
        Just("enc=hex".to_string()),
        Just("enc=octal".to_string()),
        Just("-1".to_string()),
        Just("0".to_string()),
        Just("1".to_string()),
        Just("99999999999999999999999".to_string()),
        Just("projects/a.jsonl".to_string()),
        Just("projects/../../etc/passwd.jsonl".to_string()),
        Just(hex_encode(b"/home/u/.claude")),
        Just(format!("{NONCE}:END 0")),
        Just(format!("{NONCE}:BEGIN Linux")),
        "[A-Za-z0-9+/=]{0,80}",
        ".{0,40}",
    ];
    prop::collection::vec(word, 0..6).prop_map(|words| words.join(" "))
}

/// A reply: noise, maybe a frame with the right nonce around hostile lines, maybe more noise.
fn reply() -> impl Strategy<Value = Vec<u8>> {
    (
        ".{0,30}",
        any::<bool>(),
        prop::collection::vec(reply_line(), 0..30),
        prop_oneof![Just(0i64), Just(1), Just(-1), any::<i64>()],
        any::<bool>(),
        prop::collection::vec(any::<u8>(), 0..40),
    )
        .prop_map(|(noise, begin, lines, rc, end, tail)| {
            let mut out = noise.into_bytes();
            if begin {
                out.extend_from_slice(format!("\n{NONCE}:BEGIN Linux\n").as_bytes());
            }
            out.extend_from_slice(lines.join("\n").as_bytes());
            if end {
                out.extend_from_slice(format!("\n{NONCE}:END {rc}\n").as_bytes());
            }
            out.extend_from_slice(&tail);
            out
        })
}

proptest! {
    #[test]
    fn list_replies_decode_or_fail(stdout in reply()) {
        let _ = decode_list("h", NONCE, &crate::test_support::roots(), &stdout);
    }

    #[test]
    fn read_replies_decode_or_fail_within_the_request(
        stdout in reply(),
        start in prop_oneof![Just(0u64), 0u64..5000, Just(u64::MAX - 10)],
        len in 0u64..5000,
        second in any::<bool>(),
    ) {
        let mut ranges = vec![ByteRange::new(start, len)];
        if second {
            ranges.push(ByteRange::new(start / 2, len / 2));
        }
        if let Ok(read) = decode_read("h", NONCE, &ranges, &stdout) {
            prop_assert_eq!(read.chunks.len(), ranges.len());
            for (chunk, range) in read.chunks.iter().zip(&ranges) {
                prop_assert!(chunk.len() as u64 <= range.len);
            }
            prop_assert!(stdout.len() <= read_reply_limit(&ranges));
        }
    }

    /// A hash reply answers every file once, with a digest its algorithm could print, or
    /// fails.
    #[test]
    fn hash_replies_decode_or_fail(stdout in reply(), files in 1usize..3) {
        let asked: Vec<(crate::FileRef, u64)> = (0..files)
            .map(|i| (crate::FileRef {
                harness: crate::test_support::harness("claude"),
                root: b"/home/u/.claude".to_vec(),
                rel: format!("projects/{i}.jsonl").into_bytes(),
            }, 100))
            .collect();
        if let Ok(Some(hashed)) = decode_hash_many("h", NONCE, &asked, &stdout) {
            prop_assert_eq!(hashed.len(), files);
            for h in hashed.iter().flatten() {
                prop_assert!(h.algorithm.is_well_formed(h.digest.as_bytes()));
            }
        }
    }

    /// Arbitrary bytes, framed or not.
    #[test]
    fn any_bytes_decode_or_fail(stdout in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = decode_list("h", NONCE, &crate::test_support::roots(), &stdout);
        let _ = decode_read("h", NONCE, &[ByteRange::new(0, 100)], &stdout);
        let _ = decode_hash_many("h", NONCE, &[], &stdout);
    }
}
