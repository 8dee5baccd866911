//! The decoder against hostile replies: frames, listings (plain, compressed, reading along),
//! reads of every encoding, batches and their `CAT` blocks, and the bounds of each.

use std::sync::Arc;

use base64::Engine as _;
use clankie_model::limits::{MAX_LIST_ENTRIES, MAX_LIST_REPLY_BYTES};
use clankie_model::{ByteRange, RootSpec};

use super::payload::{PayloadError, gunzip, gzip_isize, unzstd};
use super::*;
use crate::script::hex_encode;
use crate::{FileRef, HostError, MAX_READ_BYTES};

const NONCE: &str = "0123456789abcdef0123456789abcdef";

fn framed(body: &str, rc: i32) -> Vec<u8> {
    format!("motd\n\n{NONCE}:BEGIN Linux\n{body}\n{NONCE}:END {rc}\nlogout\n").into_bytes()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Three small files read whole (caps 10, 10, 3) and one read by its range.
fn cat_reads() -> Vec<(FileRef, Vec<ByteRange>)> {
    let file = |name: &str| FileRef {
        harness: crate::test_support::harness("claude"),
        root: b"/r".to_vec(),
        rel: format!("projects/-p/{name}").into_bytes(),
    };
    vec![
        (file("a.jsonl"), vec![ByteRange::new(0, 10)]),
        (
            file("b.jsonl"),
            vec![ByteRange::new(0, 4), ByteRange::new(0, 10)],
        ),
        (file("c.jsonl"), vec![ByteRange::new(0, 3)]),
        (file("d.jsonl"), vec![ByteRange::new(2, 3)]),
    ]
}

/// A batch reply: a CAT block of a, b, c (`after`: the second STAT's lines), c's own
/// section (larger than its cap), d's.
fn cat_reply(data: &[u8], after: &str) -> Vec<u8> {
    framed(
        &format!(
            "CAT b64 0 1 2\nSTAT\n7 5\n8 6\n9 40\nEND-STAT\nDATA 0\n{}\nEND-DATA 0\n\
             STAT\n{after}END-STAT\n\
             FILE 2\nMETA size=40 enc=b64\nDATA 0\n{}\nEND-DATA 0\nEND-FILE 2\n\
             FILE 3\nMETA size=9 enc=b64\nDATA 0\n{}\nEND-DATA 0\nEND-FILE 3",
            b64(data),
            b64(b"cccc"),
            b64(b"dddddddd"),
        ),
        0,
    )
}

fn answers(reply: &[u8]) -> Vec<String> {
    decode_read_batch("h", NONCE, &cat_reads(), reply)
        .unwrap()
        .into_iter()
        .map(|a| match a {
            BatchRead::Done(Ok(r)) => format!("{} {:?}", r.size, r.chunks),
            BatchRead::Done(Err(e)) => format!("{e}"),
            BatchRead::Again => "again".to_string(),
        })
        .collect()
}

#[test]
fn whole_file_caps_are_reads_from_the_start_to_the_furthest_end() {
    let r = ByteRange::new;
    assert_eq!(whole_file_cap(&[r(0, 1291)]), Some(1291));
    assert_eq!(whole_file_cap(&[r(0, 4096), r(0, 60_000)]), Some(60_000));
    assert_eq!(whole_file_cap(&[r(0, 4096), r(100_000, 65_536)]), None);
    assert_eq!(whole_file_cap(&[r(2, 3)]), None);
    assert_eq!(whole_file_cap(&[r(0, 0)]), None);
    assert_eq!(whole_file_cap(&[]), None);
    assert_eq!(whole_file_cap(&[r(0, MAX_READ_BYTES + 1)]), None);
}

#[test]
fn a_cat_block_is_split_by_its_sizes_and_checked_before_it_answers() {
    let cat = b"aaaaabbbbbb";
    let same = "7 5\n8 6\n";
    let d = "9 [[100, 100, 100]]";
    let whole = vec![
        "5 [[97, 97, 97, 97, 97]]".to_string(),
        "6 [[98, 98, 98, 98], [98, 98, 98, 98, 98, 98]]".to_string(),
        "40 [[99, 99, 99]]".to_string(),
        d.to_string(),
    ];
    assert_eq!(answers(&cat_reply(cat, same)), whole);
    // b changed under the `cat`: a is still right, b is read again.
    let got = answers(&cat_reply(b"aaaaabbbbbbbb", "7 5\n8 8\n"));
    assert_eq!(got[..2], [whole[0].clone(), "again".to_string()]);
    // The length is wrong and no file says why: none is trusted.
    assert_eq!(
        answers(&cat_reply(b"aaaabbbbbb", same))[..2],
        ["again", "again"]
    );
    // The second `stat` failed (or found a symlink): none is trusted.
    assert_eq!(answers(&cat_reply(cat, ""))[..2], ["again", "again"]);
    // Another inode in the same place: replaced.
    assert_eq!(answers(&cat_reply(cat, "7 5\n80 6\n"))[1], "again");
    // Modes, where the script names them: the same regular file's mode answers; b's name
    // became a symlink (the same inode and size, as a link to itself would say): again.
    assert_eq!(answers(&cat_reply(cat, "7 5 8000\n8 6 8000\n")), whole);
    assert_eq!(
        answers(&cat_reply(cat, "7 5 8000\n8 6 a1ff\n"))[..2],
        [whole[0].clone(), "again".to_string()]
    );
    assert_eq!(answers(&cat_reply(cat, same))[3], d);
}

#[test]
fn hostile_cat_blocks_are_refused() {
    let reads = cat_reads();
    let data = b64(b"aaaaabbbbbb");
    let block = |head: &str, stat: &str| {
        framed(
            &format!("{head}\nSTAT\n{stat}END-STAT\nDATA 0\n{data}\nEND-DATA 0\nSTAT\nEND-STAT"),
            0,
        )
    };
    for reply in [
        // d is not read whole.
        block("CAT b64 3", "1 1\n"),
        block("CAT b64 0 0", "1 5\n1 5\n"),
        block("CAT b64 9", "1 5\n"),
        block("CAT rot13 0", "1 5\n"),
        // A line per file, no more, no less, two numbers each.
        block("CAT b64 0 1", "7 5\n"),
        block("CAT b64 0", "7 5\n8 6\n"),
        block("CAT b64 0", "7 x\n"),
        block("CAT b64 0", "7 5 zz\n"),
        block("CAT b64 0", "7 5 81a4 1\n"),
        // c is larger than its cap: its own section must follow (and d's).
        framed(
            &format!(
                "CAT b64 0 1 2\nSTAT\n7 5\n8 6\n9 40\nEND-STAT\nDATA 0\n{data}\n\
                 END-DATA 0\nSTAT\n7 5\n8 6\nEND-STAT"
            ),
            0,
        ),
    ] {
        let err = decode_read_batch("h", NONCE, &reads, &reply).unwrap_err();
        assert!(matches!(err, HostError::Protocol { .. }), "{err}");
    }
}

#[test]
fn alignment() {
    let a = aligned(&ByteRange::new(4097, 10));
    assert_eq!((a.bs, a.skip_blocks, a.count, a.skip), (4096, 1, 1, 1));
    let a = aligned(&ByteRange::new(65_535, 1024 * 1024));
    assert_eq!(
        (a.bs, a.skip_blocks, a.count, a.skip),
        (65536, 0, 17, 65_535)
    );
    assert_eq!(aligned(&ByteRange::new(5, 0)).count, 0);
}

#[test]
fn frame_takes_the_first_begin_and_the_last_end() {
    let out = format!("{NONCE}:BEGIN Darwin\nbody\n{NONCE}:END 0\n\n{NONCE}:END 0\nnoise");
    let frame = parse_frame("h", NONCE, out.as_bytes()).unwrap();
    assert_eq!(frame.uname, "Darwin");
    assert_eq!(frame.rc, 0);
    assert_eq!(frame.body, format!("body\n{NONCE}:END 0\n").as_bytes());
}

#[test]
fn missing_markers_mean_the_shell_is_not_clean() {
    for out in [
        &b"This account is currently not available.\n"[..],
        b"",
        format!("\n{NONCE}:BEGIN Linux\nMETA size=1 enc=b64\n").as_bytes(),
        b"\nffffffffffffffffffffffffffffffff:BEGIN Linux\n\nffffffffffffffffffffffffffffffff:END 0\n",
    ] {
        let err = decode_read("h", NONCE, &[ByteRange::new(0, 1)], out).unwrap_err();
        let HostError::ShellNotClean { first_bytes, .. } = &err else {
            panic!("{err:?}");
        };
        assert!(!first_bytes.contains('\n'), "{first_bytes}");
    }
    let noisy = [b"\x1b[31m".repeat(100), b"\n".to_vec()].concat();
    let err = decode_list("h", NONCE, &crate::test_support::roots(), &noisy)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("\\x1b[31m") && err.contains('…') && !err.contains('\x1b'),
        "{err}"
    );
}

#[test]
fn reads_decode_every_encoding_and_trim_the_aligned_block() {
    let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
    let ranges = [ByteRange::new(4100, 10), ByteRange::new(9_995, 100)];
    let blocks = [&data[4096..8192], &data[8192..]];
    let hex = |b: &[u8]| {
        b.chunks(16)
            .map(|c| c.iter().map(|x| format!(" {x:02x}")).collect::<String>() + "\n")
            .collect::<String>()
    };
    let wrap = |s: String| {
        s.as_bytes()
            .chunks(76)
            .map(|c| String::from_utf8(c.to_vec()).unwrap() + "\n")
            .collect::<String>()
    };
    for (enc, encode) in [
        (
            "b64",
            &(|b: &[u8]| wrap(b64(b))) as &dyn Fn(&[u8]) -> String,
        ),
        ("ossl", &|b: &[u8]| wrap(b64(b))),
        ("uu", &|b: &[u8]| {
            format!("begin-base64 644 x\n{}====\n", wrap(b64(b)))
        }),
        ("hex", &hex),
    ] {
        let body = format!(
            "META size=10000 enc={enc}\nDATA 0\n{}\nEND-DATA 0\nDATA 1\n{}\nEND-DATA 1\n",
            encode(blocks[0]),
            encode(blocks[1])
        );
        let got = decode_read("h", NONCE, &ranges, &framed(&body, 0)).unwrap();
        assert_eq!(got.size, 10_000);
        assert_eq!(
            got.chunks,
            vec![data[4100..4110].to_vec(), data[9_995..].to_vec()]
        );
        // Both blocks as one stream: the first has its aligned length.
        let merged = format!(
            "META size=10000 enc={enc}\nDATA 0-1\n{}\nEND-DATA 0-1\n",
            encode(&[blocks[0], blocks[1]].concat())
        );
        let got = decode_read("h", NONCE, &ranges, &framed(&merged, 0)).unwrap();
        assert_eq!(
            got.chunks,
            vec![data[4100..4110].to_vec(), data[9_995..].to_vec()]
        );
    }
    // A stream whose first block is cut short, or would reach past the end, or that names
    // other ranges than the rest: the host's fault.
    let stream = |size: usize, bytes: &[u8], label: &str| {
        format!(
            "META size={size} enc=b64\nDATA {label}\n{}\nEND-DATA {label}\n",
            b64(bytes)
        )
    };
    for (body, want) in [
        (stream(10_000, &data[4096..6000], "0-1"), "not whole"),
        (stream(8000, &data[4096..], "0-1"), "not whole"),
        (stream(10_000, &data[4096..], "1-1"), "expected DATA 0"),
        (stream(10_000, &data[4096..], "0-2"), "expected DATA 0"),
    ] {
        let err = decode_read("h", NONCE, &ranges, &framed(&body, 0)).unwrap_err();
        assert!(err.to_string().contains(want), "{want}: {err}");
        assert_eq!(variant(&err), "Protocol", "{err}");
    }
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    gz_at(bytes, flate2::Compression::fast())
}

fn gz_best(bytes: &[u8]) -> Vec<u8> {
    gz_at(bytes, flate2::Compression::best())
}

fn gz_at(bytes: &[u8], level: flate2::Compression) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), level);
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

#[test]
fn gzip_payloads_decode_and_hostile_ones_are_refused() {
    let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    let ranges = [ByteRange::new(4100, 10)];
    let reply = |payload: &[u8]| {
        framed(
            &format!(
                "META size=10000 enc=gz\nDATA 0\n{}\nEND-DATA 0\n",
                b64(payload)
            ),
            0,
        )
    };
    let got = decode_read("h", NONCE, &ranges, &reply(&gz(&data[4096..8192]))).unwrap();
    assert_eq!(got.chunks, vec![data[4100..4110].to_vec()]);
    // A stream that inflates past what the aligned read can return (4 KiB here): refused
    // as too large, without inflating all of it.
    let bomb = gz_best(&vec![b'x'; 16 << 20]);
    assert!(bomb.len() < 100_000);
    let err = decode_read("h", NONCE, &ranges, &reply(&bomb)).unwrap_err();
    assert!(matches!(err, HostError::ReplyTooLarge { .. }), "{err}");
    // A wrong CRC, a cut-off stream, bytes after the stream: the wire format is broken.
    let mut bad_crc = gz(&data[4096..8192]);
    let n = bad_crc.len();
    bad_crc[n - 6] ^= 1;
    let whole = gz(&data[4096..8192]);
    let cut = &whole[..whole.len() - 3];
    let trailing = [&whole[..], b"junk"].concat();
    for payload in [&bad_crc[..], cut, &trailing, b"not gzip at all"] {
        let err = decode_read("h", NONCE, &ranges, &reply(payload)).unwrap_err();
        assert!(matches!(err, HostError::Protocol { .. }), "{err}");
    }
}

#[test]
fn gunzip_sizes_its_output_from_the_trailer_and_never_trusts_it() {
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let honest = gz(&data);
    assert_eq!(gzip_isize(&honest), data.len());
    // Allocated once, at the length the trailer gives.
    let out = gunzip(&honest, 1 << 20).unwrap();
    assert_eq!(out, data);
    assert_eq!(out.capacity(), data.len());
    // Exactly at the bound, and one byte over it.
    assert_eq!(gunzip(&honest, data.len()).unwrap(), data);
    assert!(matches!(
        gunzip(&honest, data.len() - 1),
        Err(PayloadError::TooLarge(_))
    ));
    let with_isize = |stream: &[u8], isize: u32| {
        let mut stream = stream.to_vec();
        let n = stream.len();
        stream[n - 4..].copy_from_slice(&isize.to_le_bytes());
        stream
    };
    // A trailer that lies (smaller, larger, far beyond the bound): the stream is refused
    // as broken, whatever was reserved for it.
    for lie in [0, 10, data.len() as u32 + 1, u32::MAX] {
        let err = gunzip(&with_isize(&honest, lie), 1 << 20).unwrap_err();
        assert!(matches!(err, PayloadError::Malformed(_)), "{lie}: {err:?}");
    }
    // A bomb whose trailer claims little is still cut at the bound, as too large.
    let bomb = with_isize(&gz_best(&vec![b'x'; 16 << 20]), 10);
    assert!(matches!(
        gunzip(&bomb, 1 << 20),
        Err(PayloadError::TooLarge(_))
    ));
    // No trailer at all (cut off, or too short to hold one): broken, not a panic.
    for cut in [
        &honest[..honest.len() - 8],
        &honest[..10],
        &honest[..3],
        &[][..],
    ] {
        assert_eq!(gzip_isize(&cut[..cut.len().min(17)]), 0);
        let err = gunzip(cut, 1 << 20).unwrap_err();
        assert!(matches!(err, PayloadError::Malformed(_)), "{err:?}");
    }
    // An empty stream decodes to nothing.
    assert_eq!(gunzip(&gz(b""), 1 << 20).unwrap(), b"");
}

fn zs(bytes: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(bytes, ruzstd::encoding::CompressionLevel::Fastest)
}

#[test]
fn zstd_payloads_decode_and_hostile_ones_are_refused() {
    let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    let ranges = [ByteRange::new(4100, 10)];
    let reply = |payload: &[u8]| {
        framed(
            &format!(
                "META size=10000 enc=zs\nDATA 0\n{}\nEND-DATA 0\n",
                b64(payload)
            ),
            0,
        )
    };
    let got = decode_read("h", NONCE, &ranges, &reply(&zs(&data[4096..8192]))).unwrap();
    assert_eq!(got.chunks, vec![data[4100..4110].to_vec()]);
    // A frame that inflates past what the aligned read can return (4 KiB here): refused as
    // too large, without inflating all of it.
    let bomb = zs(&vec![b'x'; 16 << 20]);
    assert!(bomb.len() < 100_000);
    let err = decode_read("h", NONCE, &ranges, &reply(&bomb)).unwrap_err();
    assert!(matches!(err, HostError::ReplyTooLarge { .. }), "{err}");
    // A wrong checksum, a frame cut anywhere, bytes after the frame, no frame at all, a
    // gzip stream named zstd: the wire format is broken, and nothing of it is answered.
    let whole = zs(&data[4096..8192]);
    let mut bad_sum = whole.clone();
    let n = bad_sum.len();
    bad_sum[n - 1] ^= 1;
    let trailing = [&whole[..], b"junk"].concat();
    let mut hostile: Vec<Vec<u8>> = vec![
        bad_sum,
        trailing,
        b"not zstd at all".to_vec(),
        gz(&data[4096..8192]),
    ];
    for cut in [
        1,
        4,
        5,
        9,
        whole.len() / 2,
        whole.len() - 4,
        whole.len() - 1,
    ] {
        hostile.push(whole[..cut].to_vec());
    }
    for payload in hostile {
        let err = decode_read("h", NONCE, &ranges, &reply(&payload)).unwrap_err();
        assert!(matches!(err, HostError::Protocol { .. }), "{err}");
    }
}

#[test]
fn unzstd_holds_its_output_to_the_bound_and_reads_frames_without_a_checksum() {
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let frame = zs(&data);
    // Exactly at the bound, and one byte over it.
    assert_eq!(unzstd(&frame, data.len()).unwrap(), data);
    assert!(matches!(
        unzstd(&frame, data.len() - 1),
        Err(PayloadError::TooLarge(_))
    ));
    // The frame header's checksum flag cleared and the checksum dropped: a frame as
    // `zstd --no-check` writes it, held to its blocks.
    let descriptor = frame[4];
    assert_ne!(descriptor & 0b100, 0, "ruzstd writes a checksum");
    let mut unchecked = frame[..frame.len() - 4].to_vec();
    unchecked[4] = descriptor & !0b100;
    assert_eq!(unzstd(&unchecked, 1 << 20).unwrap(), data);
    // An empty input decodes to nothing.
    assert_eq!(unzstd(&zs(b""), 1 << 20).unwrap(), b"");
}

#[test]
fn a_cat_block_of_zstd_answers_as_one_of_base64() {
    let reply = framed(
        &format!(
            "CAT zs 0 1 2\nSTAT\n7 5\n8 6\n9 40\nEND-STAT\nDATA 0\n{}\nEND-DATA 0\n\
             STAT\n7 5\n8 6\nEND-STAT\n\
             FILE 2\nMETA size=40 enc=zs\nDATA 0\n{}\nEND-DATA 0\nEND-FILE 2\n\
             FILE 3\nMETA size=9 enc=zs\nDATA 0\n{}\nEND-DATA 0\nEND-FILE 3",
            b64(&zs(b"aaaaabbbbbb")),
            b64(&zs(b"cccc")),
            b64(&zs(b"dddddddd")),
        ),
        0,
    );
    assert_eq!(
        answers(&reply),
        answers(&cat_reply(b"aaaaabbbbbb", "7 5\n8 6\n"))
    );
    // The CAT block's frame cut short: none of its files is answered.
    let whole = zs(b"aaaaabbbbbb");
    let cut = framed(
        &format!(
            "CAT zs 0 1 2\nSTAT\n7 5\n8 6\n9 40\nEND-STAT\nDATA 0\n{}\nEND-DATA 0\n\
             STAT\n7 5\n8 6\nEND-STAT",
            b64(&whole[..whole.len() - 2]),
        ),
        0,
    );
    let err = decode_read_batch("h", NONCE, &cat_reads(), &cut).unwrap_err();
    assert!(matches!(err, HostError::Protocol { .. }), "{err}");
}

/// The listing lines of /r with a, b and c below `projects/-p`.
const READ_ALONG_LISTING: &[u8] = b"ROOTP claude 1 /r\nF 3 1 ./projects/-p/a.jsonl\nF 2 1 ./projects/-p/b.jsonl\nF 9 1 ./projects/-p/c.jsonl\n";

/// A reply whose GZ block holds `text`.
fn gz_reply(text: &[u8]) -> Vec<u8> {
    framed(&format!("MODE gnu\nGZ\n{}\nEND-GZ", b64(&gz(text))), 0)
}

/// A listing of /r with a, b and c below `projects/-p`, and read blocks after it (as a
/// second walk sends them).
fn read_along_reply(blocks: &[u8]) -> Vec<u8> {
    let mut text = format!("{NONCE}:RL\n").into_bytes();
    text.extend_from_slice(READ_ALONG_LISTING);
    text.extend_from_slice(format!("\n{NONCE}:LE\n{NONCE}:RD\n").as_bytes());
    text.extend_from_slice(blocks);
    gz_reply(&text)
}

/// What the reply of [`read_along_reply`] with `blocks` answers (at most 8 bytes a file),
/// by path: the size and the chunks of each file read along. Its listing is whole.
fn answered_along(blocks: &[u8]) -> Vec<(String, u64, Vec<Vec<u8>>)> {
    let roots = crate::test_support::roots();
    let answer =
        decode_list_reading("h", NONCE, &roots, &read_along_reply(blocks), Some(8)).unwrap();
    assert_eq!(answer.listing.unwrap().files.len(), 3);
    answer
        .reads
        .into_iter()
        .map(|(f, r)| (String::from_utf8(f.rel).unwrap(), r.size, r.chunks))
        .collect()
}

/// A read block of the root `k`: its `stat` lines before and after, and the bytes.
fn block(k: usize, dirs: &[&str], files: &[&str], data: &[u8], after: Option<&str>) -> Vec<u8> {
    let first = [dirs, files].concat().join("\n");
    let mut out = format!("RD {k} {} {}\n{first}\n", dirs.len(), files.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(
        format!("\n{NONCE}:S2\n{}\n{NONCE}:E\n", after.unwrap_or(&first)).as_bytes(),
    );
    out
}

#[test]
fn files_read_along_are_answered_only_when_every_check_holds() {
    let roots = crate::test_support::roots();
    let decode = answered_along;
    let dirs = ["1 4096 41ed ./projects/-p", "2 4096 41ed ./projects"];
    let ab = [
        "3 3 81a4 ./projects/-p/a.jsonl",
        "4 2 81a4 ./projects/-p/b.jsonl",
    ];
    let good = block(0, &dirs, &ab, b"AAABB", None);
    assert_eq!(
        decode(&good),
        vec![
            ("projects/-p/a.jsonl".to_string(), 3, vec![b"AAA".to_vec()]),
            ("projects/-p/b.jsonl".to_string(), 2, vec![b"BB".to_vec()]),
        ]
    );
    // Each of these answers nothing of its block, and the good block after it is read.
    let changed = "1 4096 41ed ./projects/-p\n2 4096 41ed ./projects\n3 4 81a4 ./projects/-p/a.jsonl\n4 2 81a4 ./projects/-p/b.jsonl";
    let bad = [
        // Another size in the second `stat`, and the bytes of the first.
        block(0, &dirs, &ab, b"AAABB", Some(changed)),
        // The bytes one short of what the `stat`s say.
        block(0, &dirs, &ab, b"AAAB", None),
        // A directory on the way that is a symlink (mode a1ff), or not named.
        block(0, &["1 9 a1ff ./projects/-p", dirs[1]], &ab, b"AAABB", None),
        block(0, &dirs[1..], &ab, b"AAABB", None),
        // A file that is not a regular one, one over the cap, one with `..`.
        block(0, &dirs, &["3 3 a1ff ./projects/-p/a.jsonl"], b"AAA", None),
        block(
            0,
            &dirs,
            &["5 9 81a4 ./projects/-p/c.jsonl"],
            b"CCCCCCCCC",
            None,
        ),
        block(
            0,
            &dirs,
            &["3 3 81a4 ./projects/-p/../a.jsonl"],
            b"AAA",
            None,
        ),
        // A root that was not listed.
        block(7, &dirs, &ab, b"AAABB", None),
    ];
    for b in &bad {
        let mut blocks = b.clone();
        blocks.extend_from_slice(&good);
        assert_eq!(decode(&blocks).len(), 2, "{}", b.escape_ascii());
        assert!(decode(b).is_empty(), "{}", b.escape_ascii());
    }
    // A file not listed is left out; a block cut off (the budget) ends the reads.
    let unlisted = block(0, &dirs, &["6 1 81a4 ./projects/-p/z.jsonl"], b"Z", None);
    assert!(decode(&unlisted).is_empty());
    let mut cut = good.clone();
    cut.extend_from_slice(&good[..good.len() - 5]);
    assert_eq!(decode(&cut).len(), 2);
    // Without asking to read along, the marker and what follows are stray lines.
    assert!(decode_list("h", NONCE, &roots, &read_along_reply(&good)).is_err());
}

#[test]
fn blocks_of_megabytes_among_and_after_the_lines_are_answered_whole() {
    let roots = crate::test_support::roots();
    // 60 files of 60 KiB (3.5 MiB), each its own bytes.
    let names: Vec<String> = (0..60)
        .map(|i| format!("./projects/-p/{i:02}.jsonl"))
        .collect();
    let body = |i: usize| vec![b'a' + (i % 26) as u8; 60 << 10];
    let mut listing = b"ROOTP claude 1 /r\n".to_vec();
    for name in &names {
        listing.extend_from_slice(format!("F {} 1 {name}\n", 60 << 10).as_bytes());
    }
    let dirs = ["1 4096 41ed ./projects/-p", "2 4096 41ed ./projects"];
    let stat: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, name)| format!("{} {} 81a4 {name}", i + 10, 60 << 10))
        .collect();
    let stat: Vec<&str> = stat.iter().map(String::as_str).collect();
    let data: Vec<u8> = (0..names.len()).flat_map(body).collect();
    let one = block(0, &dirs, &stat, &data, None);
    let rl = format!("{NONCE}:RL\n").into_bytes();
    let le = format!("\n{NONCE}:LE\n").into_bytes();
    let rd = format!("{NONCE}:RD\n").into_bytes();
    // Among the listing's lines (gnu), after them (statc), and both.
    let replies = [
        [&rl[..], &listing, &one, &le].concat(),
        [&rl[..], &listing, &le, &rd, &one].concat(),
        [&rl[..], &listing, &one, &le, &rd, &one].concat(),
    ];
    for (k, text) in replies.iter().enumerate() {
        let answer =
            decode_list_reading("h", NONCE, &roots, &gz_reply(text), Some(64 << 10)).unwrap();
        assert_eq!(answer.listing.unwrap().files.len(), names.len(), "{k}");
        let copies = if k == 2 { 2 } else { 1 };
        assert_eq!(answer.reads.len(), names.len() * copies, "{k}");
        for (file, result) in &answer.reads {
            let i: usize = std::str::from_utf8(&file.rel[12..14])
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(result.chunks, vec![body(i)], "{k} {i}");
        }
    }
    // Cut in the middle of the block among the lines: no listing; after them: the listing,
    // and the blocks before the cut.
    let cut = &replies[0][..rl.len() + listing.len() + one.len() / 2];
    let answer = decode_list_reading("h", NONCE, &roots, &gz_reply(cut), Some(64 << 10));
    assert!(answer.unwrap().listing.is_none());
    let cut = &replies[2][..replies[2].len() - one.len() / 2];
    let answer = decode_list_reading("h", NONCE, &roots, &gz_reply(cut), Some(64 << 10)).unwrap();
    assert!(answer.listing.is_some());
    assert_eq!(answer.reads.len(), names.len());
}

#[test]
fn a_walk_that_lists_and_reads_is_decoded_and_a_cut_listing_is_seen() {
    let roots = crate::test_support::roots();
    let decode =
        |text: &[u8]| decode_list_reading("h", NONCE, &roots, &gz_reply(text), Some(8)).unwrap();
    let dirs = ["1 4096 41ed ./projects/-p", "2 4096 41ed ./projects"];
    let ab = [
        "3 3 81a4 ./projects/-p/a.jsonl",
        "4 2 81a4 ./projects/-p/b.jsonl",
    ];
    let good = block(0, &dirs, &ab, b"AAABB", None);
    // The block among the listing's lines, after the `F` lines of its files (as GNU `find`
    // sends it), then the rest of the listing and its end.
    let lines = READ_ALONG_LISTING.split_inclusive(|&b| b == b'\n');
    let (head, tail): (Vec<&[u8]>, Vec<&[u8]>) = {
        let all: Vec<&[u8]> = lines.collect();
        (all[..3].to_vec(), all[3..].to_vec())
    };
    let mut text = format!("{NONCE}:RL\n").into_bytes();
    text.extend_from_slice(&head.concat());
    text.extend_from_slice(&good);
    text.extend_from_slice(&tail.concat());
    let whole_len = text.len();
    text.extend_from_slice(format!("\n{NONCE}:LE\n").as_bytes());
    let answer = decode(&text);
    let plain = decode_list("h", NONCE, &roots, &gz_reply(READ_ALONG_LISTING)).unwrap();
    assert_eq!(answer.listing.as_ref(), Some(&plain));
    let read: Vec<_> = answer
        .reads
        .iter()
        .map(|(f, r)| (&f.rel[..], &r.chunks))
        .collect();
    assert_eq!(
        read,
        [
            (&b"projects/-p/a.jsonl"[..], &vec![b"AAA".to_vec()]),
            (&b"projects/-p/b.jsonl"[..], &vec![b"BB".to_vec()]),
        ]
    );
    // Cut anywhere before its `LE` line (in a line, in the block, between lines): no
    // listing and no reads.
    let first_line = NONCE.len() + 4;
    for at in [
        whole_len - 3,
        whole_len,
        first_line + head.concat().len() + 20,
        first_line + head.concat().len(),
        first_line + 12,
        first_line,
    ] {
        let answer = decode(&text[..at]);
        assert!(answer.listing.is_none() && answer.reads.is_empty(), "{at}");
    }
    // What follows `LE` is the second walk's blocks or nothing: another line is refused.
    let mut stray = text.clone();
    stray.extend_from_slice(b"F 1 1 ./projects/-p/d.jsonl\n");
    assert!(decode_list_reading("h", NONCE, &roots, &gz_reply(&stray), Some(8)).is_err());
    // A reply that does not read along is a plain listing.
    let answer = decode(READ_ALONG_LISTING);
    assert_eq!(answer.listing.as_ref(), Some(&plain));
    assert!(answer.reads.is_empty());
}

/// An `RF` block of the root `k` (no `stat` before its bytes): `after` are the lines of
/// the `stat` after the read, of which the first `dirs` are directories; `files` is what
/// its header says.
fn small_block(k: usize, dirs: usize, files: usize, after: &[&str], data: &[u8]) -> Vec<u8> {
    let mut out = format!("RF {k} {dirs} {files}\n").into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(format!("\n{NONCE}:S2\n{}\n{NONCE}:E\n", after.join("\n")).as_bytes());
    out
}

#[test]
fn files_of_an_rf_block_are_answered_only_when_the_listing_and_the_stat_after_agree() {
    let roots = crate::test_support::roots();
    let decode = answered_along;
    let (dir_p, dir_projects) = ("1 4096 41ed ./projects/-p", "2 4096 41ed ./projects");
    let (a, b) = (
        "3 3 81a4 ./projects/-p/a.jsonl",
        "4 2 81a4 ./projects/-p/b.jsonl",
    );
    let good = small_block(0, 2, 2, &[dir_p, dir_projects, a, b], b"AAABB");
    assert_eq!(
        decode(&good),
        vec![
            ("projects/-p/a.jsonl".to_string(), 3, vec![b"AAA".to_vec()]),
            ("projects/-p/b.jsonl".to_string(), 2, vec![b"BB".to_vec()]),
        ]
    );
    // An empty block of bytes: its marker right after the header.
    let empty = "9 0 81a4 ./projects/-p/e.jsonl";
    let mut listing = READ_ALONG_LISTING.to_vec();
    listing.extend_from_slice(b"F 0 1 ./projects/-p/e.jsonl\n");
    let mut text = format!("{NONCE}:RL\n").into_bytes();
    text.extend_from_slice(&listing);
    text.extend_from_slice(&small_block(0, 2, 1, &[dir_p, dir_projects, empty], b""));
    text.extend_from_slice(format!("\n{NONCE}:LE\n").as_bytes());
    let answer = decode_list_reading("h", NONCE, &roots, &gz_reply(&text), Some(8)).unwrap();
    assert_eq!(answer.reads.len(), 1);
    assert_eq!(answer.reads[0].1.chunks, vec![Vec::<u8>::new()]);
    // Each of these answers nothing of its block, and the good block after it is read.
    let bad = [
        // A size after the read that is not the listing's (it grew under the read), the
        // bytes adding up to it.
        small_block(
            0,
            2,
            2,
            &[dir_p, dir_projects, "3 4 81a4 ./projects/-p/a.jsonl", b],
            b"AAAABB",
        ),
        // A file that is not listed, beside two that are.
        small_block(
            0,
            2,
            3,
            &[dir_p, dir_projects, a, b, "6 1 81a4 ./projects/-p/z.jsonl"],
            b"AAABBZ",
        ),
        // Cut short (at the block cap): the bytes one short of the sizes.
        small_block(0, 2, 2, &[dir_p, dir_projects, a, b], b"AAAB"),
        // A file the `stat` after the read left out (it vanished), and counts that do not
        // add up.
        small_block(0, 2, 2, &[dir_p, dir_projects, a], b"AAA"),
        small_block(
            0,
            u64::MAX as usize,
            1,
            &[dir_p, dir_projects, a, b],
            b"AAABB",
        ),
        // A directory on the way that is a symlink (mode a1ff), or not named.
        small_block(
            0,
            2,
            2,
            &["1 9 a1ff ./projects/-p", dir_projects, a, b],
            b"AAABB",
        ),
        small_block(0, 1, 2, &[dir_projects, a, b], b"AAABB"),
        // A file that is a symlink, one over the cap (listed at that size), one with `..`.
        small_block(
            0,
            2,
            1,
            &[dir_p, dir_projects, "3 3 a1ff ./projects/-p/a.jsonl"],
            b"AAA",
        ),
        small_block(
            0,
            2,
            1,
            &[dir_p, dir_projects, "5 9 81a4 ./projects/-p/c.jsonl"],
            b"CCCCCCCCC",
        ),
        small_block(
            0,
            2,
            1,
            &[dir_p, dir_projects, "3 3 81a4 ./projects/-p/../-p/a.jsonl"],
            b"AAA",
        ),
        // A root that was not listed.
        small_block(7, 2, 2, &[dir_p, dir_projects, a, b], b"AAABB"),
    ];
    for block in &bad {
        let mut blocks = block.clone();
        blocks.extend_from_slice(&good);
        assert_eq!(decode(&blocks).len(), 2, "{}", block.escape_ascii());
        assert!(decode(block).is_empty(), "{}", block.escape_ascii());
    }
    // Beside an `RD` block of the same files: both answered.
    let rd = block(0, &[dir_p, dir_projects], &[a, b], b"AAABB", None);
    assert_eq!(decode(&[&rd[..], &good].concat()).len(), 4);
    // A block cut off (the budget) ends the reads.
    let mut cut = good.clone();
    cut.extend_from_slice(&good[..good.len() - 5]);
    assert_eq!(decode(&cut).len(), 2);
}

#[test]
fn an_rf_block_among_the_lines_cut_anywhere_leaves_the_listing_unfinished() {
    let roots = crate::test_support::roots();
    let decode =
        |text: &[u8]| decode_list_reading("h", NONCE, &roots, &gz_reply(text), Some(8)).unwrap();
    let good = small_block(
        0,
        2,
        2,
        &[
            "1 4096 41ed ./projects/-p",
            "2 4096 41ed ./projects",
            "3 3 81a4 ./projects/-p/a.jsonl",
            "4 2 81a4 ./projects/-p/b.jsonl",
        ],
        b"AAABB",
    );
    // After the `F` lines of its files, as GNU `find` sends it.
    let all: Vec<&[u8]> = READ_ALONG_LISTING
        .split_inclusive(|&b| b == b'\n')
        .collect();
    let rl = format!("{NONCE}:RL\n").into_bytes();
    let head = all[..3].concat();
    let text = [&rl[..], &head, &good, &all[3..].concat()].concat();
    let whole_len = text.len();
    let text = [&text[..], format!("\n{NONCE}:LE\n").as_bytes()].concat();
    let answer = decode(&text);
    assert_eq!(
        answer.listing.as_ref(),
        Some(&decode_list("h", NONCE, &roots, &gz_reply(READ_ALONG_LISTING)).unwrap())
    );
    assert_eq!(answer.reads.len(), 2);
    // Cut anywhere before its `LE` line (in the header, in the bytes, in or after either
    // marker, in the `stat` lines, after the block): no listing and no reads.
    let block_at = rl.len() + head.len();
    let marker_at = block_at + "RF 0 2 2\n".len() + 5;
    for at in (block_at..block_at + good.len()).chain([
        whole_len - 3,
        whole_len,
        text.len() - 1,
        marker_at + 1,
    ]) {
        let answer = decode(&text[..at]);
        assert!(
            answer.listing.is_none() && answer.reads.is_empty(),
            "{at}: {}",
            text[..at].escape_ascii()
        );
    }
}

#[test]
fn a_compressed_listing_decodes_as_the_plain_one() {
    let plain = format!(
        "ROOT claude 1 {}\nF 10 20 ./projects/-a/x.jsonl\nFX 11 21 {}\n",
        hex_encode(b"/home/u/.claude"),
        hex_encode(b"./projects/-a/new\nline.jsonl")
    );
    let roots = crate::test_support::roots();
    let want = decode_list(
        "h",
        NONCE,
        &roots,
        &framed(&format!("MODE gnu\n{plain}"), 0),
    )
    .unwrap();
    assert_eq!(want.files.len(), 2);
    let compressed = format!("MODE gnu\nGZ\n{}\nEND-GZ\n", b64(&gz(plain.as_bytes())));
    assert_eq!(
        decode_list("h", NONCE, &roots, &framed(&compressed, 0)).unwrap(),
        want
    );
    // Lines after the block, lines before it, a block cut off, a listing that inflates
    // past the listing's bound.
    let big = gz_best(&vec![b'\n'; MAX_LIST_REPLY_BYTES + 1]);
    for body in [
        format!("{compressed}F 1 2 projects/a.jsonl\n"),
        format!(
            "MODE gnu\n{plain}GZ\n{}\nEND-GZ\n",
            b64(&gz(plain.as_bytes()))
        ),
        format!("MODE gnu\nGZ\n{}\n", b64(&gz(plain.as_bytes()))),
        format!("MODE gnu\nGZ\n{}\nEND-GZ\n", b64(&gz(b"HELLO\n"))),
    ] {
        let err = decode_list("h", NONCE, &roots, &framed(&body, 0)).unwrap_err();
        assert!(matches!(err, HostError::Protocol { .. }), "{body}: {err}");
    }
    let body = format!("MODE gnu\nGZ\n{}\nEND-GZ\n", b64(&big));
    let err = decode_list("h", NONCE, &roots, &framed(&body, 0)).unwrap_err();
    assert!(matches!(err, HostError::ReplyTooLarge { .. }), "{err}");
}

#[test]
fn a_file_that_shrank_under_its_read_fails_alone_in_a_batch() {
    let reads = cat_reads();
    // `d` (3 bytes from offset 2) was listed at 40 bytes and is 1 when `dd` runs: a short
    // block, then the check after the read (another file now). `a` is read as usual.
    let body = format!(
        "FILE 3\nMETA size=40 enc=b64\nDATA 0\n{}\nEND-DATA 0\nERR raced {}\nEND-FILE 3\n\
         FILE 0\nMETA size=10 enc=b64\nDATA 0\n{}\nEND-DATA 0\nEND-FILE 0\n\
         FILE 1\nERR missing {}\nEND-FILE 1\nFILE 2\nERR missing {}\nEND-FILE 2\n",
        b64(b"x"),
        hex_encode(b"/r/projects/-p/d.jsonl"),
        b64(b"0123456789"),
        hex_encode(b"/r/projects/-p/b.jsonl"),
        hex_encode(b"/r/projects/-p/c.jsonl"),
    );
    let answers = decode_read_many("h", NONCE, &reads, &framed(&body, 0)).unwrap();
    assert_eq!(
        answers[0].as_ref().unwrap().chunks,
        vec![b"0123456789".to_vec()]
    );
    assert!(
        matches!(answers[3], Err(HostError::PathRefused { .. })),
        "{:?}",
        answers[3]
    );
    // Without the check's word (it shrank in place): the file's own failure all the same.
    let body = body.replace(
        &format!("ERR raced {}\n", hex_encode(b"/r/projects/-p/d.jsonl")),
        "",
    );
    let answers = decode_read_many("h", NONCE, &reads, &framed(&body, 0)).unwrap();
    let Err(HostError::Io { reason, .. }) = &answers[3] else {
        panic!("{:?}", answers[3]);
    };
    assert!(reason.contains("changed while it was read"), "{reason}");
    assert!(answers[0].is_ok());
}

#[test]
fn err_lines_map_to_host_errors() {
    let path = "/r/projects/x.jsonl";
    let hex = hex_encode(path.as_bytes());
    for (code, want) in [
        ("symlink", "PathRefused"),
        ("outside", "PathRefused"),
        ("notfile", "PathRefused"),
        ("missing", "NotFound"),
        ("noroot", "NotFound"),
        ("unreadable", "Io"),
        ("nosize", "Io"),
        ("unsafe", "Io"),
        ("open", "Io"),
        ("badpath", "PathRefused"),
        ("badrange", "PathRefused"),
        ("nodir", "NotFound"),
        // No script prints it: the reply is not what was sent.
        ("weird", "Protocol"),
    ] {
        let out = framed(&format!("ERR {code} {hex}"), 1);
        let err = decode_read("h", NONCE, &[ByteRange::new(0, 1)], &out).unwrap_err();
        assert!(format!("{err:?}").starts_with(want), "{code}: {err:?}");
        assert!(err.to_string().contains(path), "{err}");
    }
}

/// The variant's name, as `Debug` starts with it.
fn variant(err: &HostError) -> String {
    let debug = format!("{err:?}");
    debug[..debug.find([' ', '{']).unwrap_or(debug.len())].to_string()
}

#[test]
fn hostile_read_replies_are_refused_without_trusting_them() {
    let ranges = [ByteRange::new(0, 10)];
    // Each with the error it must be: ReplyTooLarge for a reply over a cap (exit 6),
    // Protocol for one that breaks the wire format (exit 3).
    let cases: Vec<(String, &str, &str)> = vec![
        // A huge claimed size allocates nothing: the payload is still short.
        (
            format!(
                "META size=18446744073709551615 enc=b64\nDATA 0\n{}\nEND-DATA 0",
                b64(b"abc")
            ),
            "expected at least 10",
            "Protocol",
        ),
        // Truncated payload: the END-DATA never comes.
        (
            format!("META size=10 enc=b64\nDATA 0\n{}", b64(b"0123456789")),
            "cut off",
            "Protocol",
        ),
        // Truncated base64: a character short of a whole quantum.
        (
            format!(
                "META size=10 enc=b64\nDATA 0\n{}\nEND-DATA 0",
                &b64(b"0123456789")[..15]
            ),
            "bad base64",
            "Protocol",
        ),
        (
            "META size=10 enc=uu\nDATA 0\nbegin-base64 644 x\nMDEy\nEND-DATA 0".into(),
            "without trailer",
            "Protocol",
        ),
        // More payload than the aligned block can hold.
        (
            format!(
                "META size=10 enc=b64\nDATA 0\n{}\nEND-DATA 0",
                b64(&[0u8; 5000])
            ),
            "more than 4096",
            "ReplyTooLarge",
        ),
        (
            format!(
                "META size=10 enc=hex\nDATA 0\n{}\nEND-DATA 0",
                " 00".repeat(4097)
            ),
            "more than 4096",
            "ReplyTooLarge",
        ),
        (
            "META size=-1 enc=b64\nDATA 0\nEND-DATA 0".into(),
            "bad META",
            "Protocol",
        ),
        (
            "META size=10 enc=rot13\nDATA 0\nEND-DATA 0".into(),
            "bad META",
            "Protocol",
        ),
        (
            "META size=10 enc=b64\nDATA 1\nEND-DATA 1".into(),
            "expected DATA 0",
            "Protocol",
        ),
        (
            "META size=10 enc=hex\nDATA 0\n 0g\nEND-DATA 0".into(),
            "bad hex",
            "Protocol",
        ),
        (
            "META size=10 enc=b64\nDATA 0\n!!!!\nEND-DATA 0".into(),
            "bad base64",
            "Protocol",
        ),
        (
            format!(
                "META size=10 enc=b64\nDATA 0\n{}\nEND-DATA 0\nextra",
                b64(b"0123456789")
            ),
            "unexpected line",
            "Protocol",
        ),
        ("HELLO".into(), "expected META", "Protocol"),
        (String::new(), "empty read reply", "Protocol"),
        ("ERR nosuchcode 2f78".into(), "unknown ERR code", "Protocol"),
    ];
    for (body, want, kind) in cases {
        let err = decode_read("h", NONCE, &ranges, &framed(&body, 0)).unwrap_err();
        assert!(err.to_string().contains(want), "{want}: {err}");
        assert_eq!(variant(&err), kind, "{want}: {err}");
    }
    // A wrong nonce, or no frame at all: the shell printed something else.
    let other = "f".repeat(32);
    let other_nonce = format!("\n{other}:BEGIN Linux\nMETA size=10 enc=b64\n\n{other}:END 0\n");
    for out in [other_nonce.as_bytes(), b"garbage\n"] {
        let err = decode_read("h", NONCE, &ranges, out).unwrap_err();
        assert_eq!(variant(&err), "ShellNotClean", "{err}");
    }
    // A reply over the bound is refused before it is parsed.
    let limit = read_reply_limit(&ranges);
    assert!(limit < 2 * 1024 * 1024, "{limit}");
    let huge = framed(&"A".repeat(limit), 0);
    let err = decode_read("h", NONCE, &ranges, &huge).unwrap_err();
    assert!(err.to_string().contains("over the"), "{err}");
    assert!(matches!(err, HostError::ReplyTooLarge { .. }), "{err:?}");
    // The bound grows with the request, up to hex of 4 MiB and its alignment.
    let big = read_reply_limit(&[ByteRange::new(1, MAX_READ_BYTES)]);
    assert!(big > 16 * 1024 * 1024 && big < 20 * 1024 * 1024, "{big}");
}

#[test]
fn hostile_listings_are_refused() {
    let root = format!("ROOT claude 1 {}", hex_encode(b"/home/u/.claude"));
    let cases = [
        "F 1 2 projects/a.jsonl".to_string(),
        format!("{root}\nF 1 2 projects/../../etc/passwd.jsonl"),
        format!("{root}\nF 1 2 /etc/passwd.jsonl"),
        format!("{root}\nF 1 2 ./projects/./a.jsonl"),
        format!("{root}\nF 1 2 projects//a.jsonl"),
        format!("{root}\nF 1 2 other/a.jsonl"),
        format!("{root}\nF 1 2 projects/a.txt"),
        format!("{root}\nF 1 2 projects/1/2/3/4/5/6/7/a.jsonl"),
        format!("{root}\nF -1 2 projects/a.jsonl"),
        format!("{root}\nF 99999999999999999999999 2 projects/a.jsonl"),
        format!("{root}\nF 1 x projects/a.jsonl"),
        format!("{root}\nFX 1 2 zz"),
        format!("ROOT nosuch 1 {}", hex_encode(b"/x")),
        format!("ROOT claude 1 {}", hex_encode(b"relative")),
        format!(
            "ROOT claude 0 {}\nF 1 2 projects/a.jsonl",
            hex_encode(b"/x")
        ),
        format!("{root}\nHELLO"),
    ];
    for body in cases {
        let err =
            decode_list("h", NONCE, &crate::test_support::roots(), &framed(&body, 0)).unwrap_err();
        assert!(matches!(err, HostError::Protocol { .. }), "{body}: {err}");
    }
    // A root of a harness that was not asked for is refused like an unknown one.
    let only_codex = [RootSpec::default_for(crate::test_support::harness("codex"))];
    let err = decode_list("h", NONCE, &only_codex, &framed(&root, 0)).unwrap_err();
    assert!(matches!(err, HostError::Protocol { .. }), "{err}");
    let ok = format!(
        "MODE gnu\n{root}\nF 1 -2 ./projects/b c.jsonl\nFX 3 4 {}\nS\nS\nFX 5 6 {}",
        hex_encode(b"projects/1/2/3/4/5/6/a\xff.jsonl"),
        // LF and CR are name bytes like any other: carried by FX.
        hex_encode(b"./projects/-p\r\n\\/x\r.jsonl"),
    );
    let listing = decode_list("h", NONCE, &crate::test_support::roots(), &framed(&ok, 0)).unwrap();
    assert_eq!(listing.skipped_names, 2);
    assert_eq!(listing.files.len(), 3);
    assert_eq!(listing.files[0].rel, b"projects/-p\r\n\\/x\r.jsonl");
    assert_eq!(listing.files[1].rel, b"projects/1/2/3/4/5/6/a\xff.jsonl");
    assert_eq!((listing.files[2].size, listing.files[2].mtime), (1, -2));
    // Over the cap: refused unread (exit 6), not a broken reply (exit 3).
    let over = vec![b'x'; MAX_LIST_REPLY_BYTES + 1];
    assert!(matches!(
        decode_list("h", NONCE, &crate::test_support::roots(), &over).unwrap_err(),
        HostError::ReplyTooLarge { .. }
    ));
    let unknown = framed(&format!("{root}\nERR nosuchcode "), 1);
    assert!(matches!(
        decode_list("h", NONCE, &crate::test_support::roots(), &unknown).unwrap_err(),
        HostError::Protocol { .. }
    ));
}

/// A list reply of `files` short names under one root of `root_len` bytes.
fn many_files(root_len: usize, files: usize) -> Vec<u8> {
    let mut root = b"/".to_vec();
    root.resize(root_len, b'r');
    let mut body = format!("ROOT claude 1 {}\n", hex_encode(&root));
    for i in 0..files {
        body.push_str(&format!("F 1 2 projects/{i}.jsonl\n"));
    }
    framed(&body, 0)
}

#[test]
fn entries_share_their_root_up_to_the_entry_bound() {
    let claude = [RootSpec::default_for(crate::test_support::harness(
        "claude",
    ))];
    let at_bound = many_files(4000, MAX_LIST_ENTRIES);
    assert!(at_bound.len() < MAX_LIST_REPLY_BYTES);
    let listing = decode_list("h", NONCE, &claude, &at_bound).unwrap();
    assert_eq!(listing.files.len(), MAX_LIST_ENTRIES);
    // One copy of the 4,000-byte root, whatever the number of files.
    let first = &listing.files[0].root;
    assert_eq!(first.len(), 4000);
    assert!(listing.files.iter().all(|f| Arc::ptr_eq(&f.root, first)));
    drop(listing);

    // One file more is over the bound: exit 6, one line saying which bound.
    let err =
        decode_list("h", NONCE, &claude, &many_files(4000, MAX_LIST_ENTRIES + 1)).unwrap_err();
    let HostError::ReplyTooLarge { reason, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(
        reason,
        &format!("listing has more than {MAX_LIST_ENTRIES} files; refusing it")
    );
}

#[test]
fn a_root_line_per_root_asked_for_and_no_more() {
    let claude = [RootSpec::default_for(crate::test_support::harness(
        "claude",
    ))];
    let root = format!("ROOT claude 1 {}", hex_encode(b"/home/u/.claude"));
    assert!(decode_list("h", NONCE, &claude, &framed(&root, 0)).is_ok());
    let twice = framed(&format!("{root}\n{root}"), 0);
    let err = decode_list("h", NONCE, &claude, &twice).unwrap_err();
    assert!(
        matches!(&err, HostError::Protocol { reason, .. } if reason.contains("more ROOT lines")),
        "{err}"
    );
}

/// An `RE` block of the root 0 (a, b and c below `projects/-p`): the `stat` lines before and
/// after, each file's head, then each file's tail, and the lengths of its header after the
/// file count.
fn ends_block(lengths: &str, data: &[u8]) -> Vec<u8> {
    let lines = [
        "1 4096 41ed ./projects/-p",
        "2 4096 41ed ./projects",
        "3 3 81a4 ./projects/-p/a.jsonl",
        "4 2 81a4 ./projects/-p/b.jsonl",
        "5 9 81a4 ./projects/-p/c.jsonl",
    ]
    .join("\n");
    let mut out = format!("RE 0 2 3 {lengths}\n{lines}\n").into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(format!("\n{NONCE}:S2\n{lines}\n{NONCE}:E\n").as_bytes());
    out
}

/// The ends an `RE` block answers (every file over 1 byte), by path: size, head, tail.
fn answered_ends(block: &[u8]) -> Vec<(String, u64, Vec<u8>, Vec<u8>)> {
    let roots = crate::test_support::roots();
    let answer =
        decode_list_reading("h", NONCE, &roots, &read_along_reply(block), Some(1)).unwrap();
    assert_eq!(answer.listing.unwrap().files.len(), 3);
    let mut ends: Vec<_> = answer
        .ends
        .into_iter()
        .map(|(f, e)| (String::from_utf8(f.rel).unwrap(), e.size, e.head, e.tail))
        .collect();
    ends.sort();
    ends
}

#[test]
fn an_ends_block_answers_each_file_by_its_runs_tail_length() {
    // a = "abc", b = "de", c = "fghijklmn"; heads of 1 byte; tails of 2 (a, b), then 4 (c).
    let data = b"adf" as &[u8];
    let fitted = [data, b"bc", b"de", b"klmn"].concat();
    let want = |tails: [&[u8]; 3]| {
        vec![
            (
                "projects/-p/a.jsonl".to_string(),
                3,
                b"a".to_vec(),
                tails[0].to_vec(),
            ),
            (
                "projects/-p/b.jsonl".to_string(),
                2,
                b"d".to_vec(),
                tails[1].to_vec(),
            ),
            (
                "projects/-p/c.jsonl".to_string(),
                9,
                b"f".to_vec(),
                tails[2].to_vec(),
            ),
        ]
    };
    assert_eq!(
        answered_ends(&ends_block("1 2:2 4:1", &fitted)),
        want([b"bc", b"de", b"klmn"])
    );
    // One tail for every file: the bare length.
    let same = [data, b"bc", b"de", b"mn"].concat();
    assert_eq!(
        answered_ends(&ends_block("1 2", &same)),
        want([b"bc", b"de", b"mn"])
    );
    // Runs that do not add up to the files, a bare length beside runs, a run's length that
    // is not a number, and runs whose lengths do not add up to the bytes: nothing answered.
    for lengths in [
        "1 2:2 4:2",
        "1 2:2",
        "1 2 4:1",
        "1 2:2 x:1",
        "1 4:1 2:2",
        "1",
        "1 2:3",
    ] {
        assert!(
            answered_ends(&ends_block(lengths, &fitted)).is_empty(),
            "{lengths}"
        );
    }
}
