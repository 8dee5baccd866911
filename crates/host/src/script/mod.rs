//! Remote scripts: pure generators for the two primitives (one module per shell dialect) and
//! the one decoder of their framed, typed-line replies. No I/O here except [`new_nonce`]; a
//! transport (ssh) runs the script and hands the stdout bytes back to a decoder.
//!
//! # Wire format
//! A reply is framed by a per-call nonce; whatever an rc file prints around the frame is
//! ignored (the first BEGIN and the last END count):
//! ```text
//! \n<nonce>:BEGIN <uname -s>\n
//! <typed lines>
//! \n<nonce>:END <rc>\n
//! ```
//! Typed lines of a *list* reply, one per root in request order, each followed by its files:
//! ```text
//! MODE <gnu|statc|statf|ls|ps>          how the host listed (informational)
//! ROOT <harness> <0|1> <hex of dir>     resolved (physical) home, and whether one of its subdirs exists
//! ROOTP <harness> <0|1> <dir>           the same, the dir as it is (one without LF or CR; what the
//!                                        find-and-read by globs prints, which needs no `od` then)
//! F <size> <mtime> <path>               path = the rest of the line, relative to the root,
//!                                       optionally prefixed with `./`
//! FX <size> <mtime> <hex of path>       the same, path hex-encoded
//! S                                     one name left out: a lone surrogate UTF-8 cannot
//!                                       carry (Windows)
//! ```
//! Every byte but `/` and NUL is a legal POSIX name byte, LF and CR included, and every such
//! name is listed: a path that a line cannot carry — one holding a LF (it would end the line)
//! or a CR (one before the line end is dropped, see below) — comes as `FX`. The POSIX script
//! prints `F` for every other path (one `find` or `stat` for all of them) and `FX` for those
//! alone (`od` per file); PowerShell prints `FX` for every path.
//! Typed lines of a *read* reply:
//! ```text
//! ERR <code> <hex of path>              refusal or failure; the frame ends (rc 1)
//! META size=<true size> enc=<b64|ossl|uu|hex|gz>
//! DATA <i>                              then the encoded block-aligned bytes of range i
//! END-DATA <i>                          (a line no encoder can produce)
//! ```
//! or, for ranges i to the last at once (one encoder for all: the find-and-read by globs),
//! `DATA <i>-<last>` / their blocks' bytes in order / `END-DATA <i>-<last>`, where every block
//! but the last lies whole below the META size (so each has its aligned length).
//! A *batched read* reply ([`posix::read_many_script`]) holds one such section per file,
//! numbered in the order asked and sent in the script's order (grouped by directory):
//! ```text
//! FILE <i>                              then ERR, or META and the DATA blocks, and ERR raced
//! END-FILE <i>                          (one file's refusal ends its section only)
//! ```
//! or, for the small files of one root read whole ([`whole_file_cap`]), one block:
//! ```text
//! CAT <enc> <i> <j> …                   the files stat'ed, in this order
//! STAT / <inode> <size> [<mode in hex>] per file / END-STAT
//! DATA 0 / the encoded concatenation of those no larger than their cap / END-DATA 0
//! STAT / the same per file concatenated / END-STAT        (empty: read them again)
//! ```
//! followed, later in the reply, by a `FILE` section for each stat'ed file larger than its cap.
//! The decoder splits the concatenation by the first sizes, and answers only the files before
//! the first one whose inode, size or mode differs in the second `STAT`, or whose mode is not a
//! regular file's (and none if the length is wrong before any such file): the others are read
//! again ([`BatchRead::Again`]). A line without a mode is a regular file's.
//! A *find-and-read* reply ([`posix::find_read_script`]) is a list reply of the files that may be
//! the session (found by the harness's id globs, or a walk for the paths that hold the id), then,
//! when one of them is read at once, `HIT <path>` (spelled as on its `F` line) and its read
//! section (its ranges, for a tail, computed from the META size). When none is (by globs), the
//! top files asked for ([`crate::TopReads`]: a database's headers and first pages) follow,
//! each as `TOP <root index> <k> <name>` (its `k`-th top file, named as its `F` line names it)
//! and its read section, which may end in `ERR raced`.
//!
//! Compression: a batched read on a host with `gzip` (probed by the script) names `enc=gz`
//! (META) or `CAT gz`: each payload is one gzip stream of the block, base64-encoded. A listing
//! on such a host may carry its `ROOT`/`F`/`FX` lines as one block, after its `MODE` line:
//! ```text
//! GZ                                    then base64 of one gzip stream of the lines
//! END-GZ
//! ```
//! A listing that reads along ([`posix::list_reading_script`]) carries, in that block, its lines
//! between a `<nonce>:RL` and a `<nonce>:LE` line, and blocks of whole small files with the
//! `stat` lines they are checked by (`RD`: before the read and after; `RF`: after, against the
//! listing's sizes): among the lines, or after them and a `<nonce>:RD` line
//! ([`decode_list_reading`]). A listing without its `LE` line was cut at the reply's budget.
//! Decompressed output is held to the same bounds as the plain one (a reply never decodes to
//! more than an uncompressed reply could hold), gzip's CRC is checked, and nothing may follow
//! the stream.
//!
//! ERR codes: `noroot`, `nodir`, `missing` (→ NotFound); `outside`, `symlink`, `notfile`,
//! `badpath`, `badrange` (→ PathRefused); `unreadable`, `nosize`, `unsafe`, `open`,
//! `restricted` (PowerShell's Constrained Language Mode) (→ Io); `script` (PowerShell: an
//! unexpected exception, its message hex-encoded in place of the path) and any code not listed
//! here (→ Protocol: the reply breaks the wire format). A list reply may carry `ERR unsafe`,
//! `ERR restricted` or `ERR script` too.
//!
//! Dialects: POSIX `sh` ([`posix`]) prints `F` lines and LF line ends; Windows PowerShell
//! ([`powershell`]) prints `FX` lines, CRLF line ends, `enc=b64` and Windows roots (`C:\…`).
//! Lines are split on `\n` and lose one trailing `\r`; whatever precedes the BEGIN marker (a
//! BOM, a CLIXML block) is ignored like rc-file noise.
//!
//! Range `i` is read block-aligned ([`aligned`]): the payload is `count` blocks of `bs` bytes
//! from block `skip_blocks`; the decoder drops the first `skip` bytes and keeps at most the
//! requested length, clipped at the reported size. There is no `pipefail` in `sh`, so the
//! decoded length is the error check.
//!
//! The decoder never trusts the remote: replies over a bound derived from the request are
//! refused before parsing ([`read_reply_limit`], [`MAX_LIST_REPLY_BYTES`]), numbers and paths are
//! validated, and nothing is allocated from a size the remote claims. A reply over a cap is
//! [`HostError::ReplyTooLarge`] (exit 6); one that breaks the format — a wrong nonce or missing
//! markers ([`HostError::ShellNotClean`]), a line out of place, invalid or cut-off base64 or hex,
//! an unknown `ERR` code ([`HostError::Protocol`]) — is the host's fault (exit 3).

pub mod posix;
pub mod powershell;

use std::sync::Arc;

use base64::Engine as _;
use memchr::memmem;

use super::{FileRef, HostError, MAX_READ_BYTES};
use clankie_model::{
    ByteRange, FileEntry, Harness, Listing, ListingBudget, ListingOverCap, ReadResult,
    ResolvedRoot, RootSpec, display_path,
};

/// What to send to run a script: the exec string and the bytes for the channel's stdin. When
/// `stdin` is not empty the sender closes stdin after it (a script read to the end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub exec: String,
    pub stdin: Vec<u8>,
}

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

use clankie_model::limits::{MAX_LIST_REPLY_BYTES, MAX_RANGES};

/// Slack for rc-file noise around a frame, and for typed lines.
const NOISE_SLACK: usize = 1024 * 1024;

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

/// How one range is read on the wire: `count` blocks of `bs` bytes starting at block
/// `skip_blocks`; the wanted bytes start `skip` bytes into that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aligned {
    pub bs: u64,
    pub skip_blocks: u64,
    pub count: u64,
    pub skip: u64,
}

impl Aligned {
    /// Most bytes the aligned read can return.
    pub fn max_bytes(&self) -> u64 {
        self.bs.saturating_mul(self.count)
    }
}

/// The aligned read for a range. Small ranges use small blocks so that alignment costs little.
pub fn aligned(range: &ByteRange) -> Aligned {
    let bs: u64 = if range.len <= 256 * 1024 { 4096 } else { 65536 };
    let skip_blocks = range.start / bs;
    let end_blocks = range.start.saturating_add(range.len).div_ceil(bs);
    Aligned {
        bs,
        skip_blocks,
        count: if range.len == 0 {
            0
        } else {
            end_blocks - skip_blocks
        },
        skip: range.start % bs,
    }
}

/// The largest read reply accepted for these ranges: hex (the bulkiest encoder, about 3.1
/// characters per byte) of every aligned block, plus slack for rc-file noise.
pub fn read_reply_limit(ranges: &[ByteRange]) -> usize {
    let raw: u64 = ranges
        .iter()
        .map(|r| aligned(r).max_bytes().min(MAX_READ_BYTES + 2 * 65536))
        .fold(0, u64::saturating_add);
    let encoded = raw
        .saturating_mul(4)
        .saturating_add(256 * ranges.len() as u64);
    usize::try_from(encoded)
        .unwrap_or(usize::MAX)
        .saturating_add(NOISE_SLACK)
}

/// The frame of a reply: what `uname -s` said, the script's exit code and the typed lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame<'a> {
    pub uname: String,
    pub rc: i32,
    pub body: &'a [u8],
}

/// Finds the frame: the first `\n<nonce>:BEGIN ` line and the last `\n<nonce>:END <rc>`.
/// Missing markers mean the remote shell printed something else (a `ForceCommand`, `nologin`,
/// a broken rc file): [`HostError::ShellNotClean`] shows what came back.
pub fn parse_frame<'a>(host: &str, nonce: &str, stdout: &'a [u8]) -> Result<Frame<'a>, HostError> {
    let not_clean = || HostError::ShellNotClean {
        host: host.to_string(),
        first_bytes: first_bytes(stdout),
    };
    let begin = format!("\n{nonce}:BEGIN ").into_bytes();
    let end = format!("\n{nonce}:END ").into_bytes();
    // A reply that starts with the marker itself (no rc output, newline eaten) also counts.
    let begin_at = if stdout.starts_with(&begin[1..]) {
        Some(0)
    } else {
        find(stdout, &begin).map(|i| i + 1)
    }
    .ok_or_else(not_clean)?;
    let after_begin = begin_at + begin.len() - 1;
    let uname_len = stdout[after_begin..]
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(not_clean)?;
    let body_start = after_begin + uname_len + 1;
    let end_at = rfind(&stdout[body_start - 1..], &end)
        .map(|i| i + body_start - 1)
        .ok_or_else(not_clean)?;
    let rc_start = end_at + end.len();
    let rc_line = stdout[rc_start..]
        .split(|&b| b == b'\n')
        .next()
        .unwrap_or_default();
    let rc = std::str::from_utf8(rc_line)
        .ok()
        .and_then(|s| s.trim_end_matches('\r').parse::<i32>().ok())
        .ok_or_else(not_clean)?;
    // The END marker's leading newline belongs to the marker; the body keeps its own last one.
    let body = if end_at >= body_start {
        &stdout[body_start..end_at]
    } else {
        &[][..]
    };
    Ok(Frame {
        uname: String::from_utf8_lossy(&stdout[after_begin..after_begin + uname_len])
            .trim_end_matches('\r')
            .to_string(),
        rc,
        body,
    })
}

/// Decodes a list reply into a [`Listing`], files sorted by (root, rel) like every host. Only
/// the harnesses of `roots` (what was asked for) may appear in it.
pub fn decode_list(
    host: &str,
    nonce: &str,
    roots: &[RootSpec],
    stdout: &[u8],
) -> Result<Listing, HostError> {
    decode_list_reading(host, nonce, roots, stdout, None)?
        .listing
        .ok_or_else(|| protocol(host, "a listing cut off".to_string()))
}

/// What a listing that reads along answered ([`decode_list_reading`]).
#[derive(Debug, Default)]
pub struct ListReading {
    /// The listing; `None` when the reply was cut at its budget before the listing was whole
    /// (the host lists again, plainly).
    pub listing: Option<Listing>,
    /// The files read along, each whole, as a read of `[0, size)`; none when the listing was
    /// cut.
    pub reads: Vec<(FileRef, ReadResult)>,
}

/// Decodes the reply of [`posix::list_reading_script`]: the listing, and the files it read
/// along (each whole; at most `max_file` bytes each), by the listing's own roots. A read block
/// that breaks its format or its checks answers none of its files (they are read the usual
/// way); the listing is held to [`decode_list`]'s rules. With `max_file` `None`, a reply that
/// reads along is refused like any other stray line.
pub fn decode_list_reading(
    host: &str,
    nonce: &str,
    roots: &[RootSpec],
    stdout: &[u8],
    max_file: Option<u64>,
) -> Result<ListReading, HostError> {
    let bad = |reason: String| protocol(host, reason);
    if stdout.len() > MAX_LIST_REPLY_BYTES {
        return Err(too_large(
            host,
            format!("list reply over {MAX_LIST_REPLY_BYTES} bytes; refusing it"),
        ));
    }
    let frame = parse_frame(host, nonce, stdout)?;
    let mut lines = body_lines(frame.body);
    let mut listing = decode_list_lines(host, roots, &mut lines)?;
    let mut reads = Vec::new();
    let mut whole = true;
    if lines.peek() == Some(&&b"GZ"[..]) {
        // The lines compressed (after MODE, or an ERR that ended the listing before them).
        if !listing.roots.is_empty() || !listing.files.is_empty() {
            return Err(bad("a GZ block after the listing's lines".to_string()));
        }
        lines.next();
        let mut payload: Vec<&[u8]> = Vec::new();
        loop {
            let line = lines
                .next()
                .ok_or_else(|| bad("GZ block cut off".to_string()))?;
            if line == b"END-GZ" {
                break;
            }
            payload.push(line);
        }
        let text =
            decode_payload(Encoding::Gzip, &payload, MAX_LIST_REPLY_BYTES as u64).map_err(|e| {
                match e {
                    PayloadError::Malformed(reason) => bad(format!("GZ block: {reason}")),
                    PayloadError::TooLarge(max) => too_large(
                        host,
                        format!("list reply decompresses to over {max} bytes; refusing it"),
                    ),
                }
            })?;
        let reading = max_file.and_then(|max| {
            text.strip_prefix(format!("{nonce}:RL\n").as_bytes())
                .map(|rest| (rest, max))
        });
        match reading {
            Some((rest, max)) => {
                let along = split_read_along(nonce, rest);
                whole = along.whole;
                if whole {
                    let mut inner = along.lines.into_iter().filter(|l| !l.is_empty()).peekable();
                    listing = decode_list_lines(host, roots, &mut inner)?;
                    if let Some(extra) = inner.next() {
                        return Err(bad(format!("unexpected line {}", show(extra))));
                    }
                    reads = answer_blocks(&listing, along.blocks, max);
                }
            }
            None => {
                let mut inner = body_lines(&text);
                listing = decode_list_lines(host, roots, &mut inner)?;
                if let Some(extra) = inner.next() {
                    return Err(bad(format!("unexpected line {}", show(extra))));
                }
            }
        }
    }
    if let Some(extra) = lines.next() {
        return Err(bad(format!("unexpected line {}", show(extra))));
    }
    if frame.rc != 0 {
        return Err(bad(format!("list script exited with {}", frame.rc)));
    }
    Ok(ListReading {
        listing: whole.then_some(listing),
        reads,
    })
}

/// A listing that reads along, taken apart (after its `<nonce>:RL` line): its lines (`\r`
/// kept, empty ones included), its read blocks (those among the lines, then those after a
/// `<nonce>:RD` line that follows `<nonce>:LE`), and whether the listing is whole: its `LE`
/// line came, after complete lines and blocks only.
struct ReadAlongParts<'a> {
    lines: Vec<&'a [u8]>,
    blocks: Vec<ReadBlock<'a>>,
    whole: bool,
}

fn split_read_along<'a>(nonce: &str, mut rest: &'a [u8]) -> ReadAlongParts<'a> {
    let markers = BlockMarkers::new(nonce);
    let listing_end = format!("{nonce}:LE");
    let reads_after = format!("{nonce}:RD\n");
    let mut parts = ReadAlongParts {
        lines: Vec::new(),
        blocks: Vec::new(),
        whole: false,
    };
    while !rest.is_empty() {
        if rest.starts_with(b"RD ") || rest.starts_with(b"RF ") {
            // A block cut off, or one that cannot be taken apart, leaves the listing unfinished.
            let Some((block, after)) = next_block(&markers, rest) else {
                return parts;
            };
            parts.blocks.push(block);
            rest = after;
            continue;
        }
        let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
            return parts;
        };
        let line = &rest[..nl];
        rest = &rest[nl + 1..];
        if line == listing_end.as_bytes() {
            parts.whole = true;
            break;
        }
        parts.lines.push(line.strip_suffix(b"\r").unwrap_or(line));
    }
    // The second walk's blocks (`statc`), up to one cut off.
    if let Some(mut blocks) = rest.strip_prefix(reads_after.as_bytes()) {
        while let Some((block, after)) = next_block(&markers, blocks) {
            parts.blocks.push(block);
            blocks = after;
        }
    } else if !rest.is_empty() {
        // Anything else after the listing: a reply this script does not send.
        parts.lines.push(rest);
    }
    parts
}

/// One `stat -c '%i %s %f %n'` line of a read block: size, mode, name (`./<path>`).
fn stat_line(line: &[u8]) -> Option<(u64, u32, &[u8])> {
    let (inode, rest) = split_word(line);
    let (size, rest) = split_word(rest);
    let (mode, name) = split_word(rest);
    parse_u64(inode)?;
    let size = parse_u64(size)?;
    Some((size, hex_mode(mode)?, name))
}

/// The nonce's markers inside a read block: after the files' bytes, and at its end.
struct BlockMarkers {
    second_stat: memmem::Finder<'static>,
    end: memmem::Finder<'static>,
}

impl BlockMarkers {
    fn new(nonce: &str) -> BlockMarkers {
        let finder = |text: String| memmem::Finder::new(text.as_bytes()).into_owned();
        BlockMarkers {
            second_stat: finder(format!("\n{nonce}:S2\n")),
            end: finder(format!("\n{nonce}:E\n")),
        }
    }
}

/// One read block ([`posix::list_reading_script`]), taken apart but not yet checked.
struct ReadBlock<'a> {
    root: u64,
    dirs: u64,
    files: u64,
    /// What the sizes and the types after the read are checked against.
    before: SizesBefore<'a>,
    /// The files' bytes, up to the `S2` marker.
    data: &'a [u8],
    /// The `stat` after the read: its text, up to the `E` marker.
    second: &'a [u8],
}

/// Where a read block's sizes before its read come from.
enum SizesBefore<'a> {
    /// An `RD` block's own `stat` before the read, which the one after must equal byte for
    /// byte (inodes, sizes, modes).
    FirstStat {
        /// Its lines, as many as the block says (fewer where it sent fewer).
        lines: Vec<&'a [u8]>,
        /// Its text, to compare with the second's.
        text: &'a [u8],
    },
    /// An `RF` block's: the listing's `F` lines (`find`'s `lstat` before it handed the files
    /// on), which every file's size after the read must equal. No inode is compared: a file
    /// replaced by one of the same size in between is not seen (the bytes are either one's).
    Listing,
}

/// The block at the start of `rest`, and what follows it; `None` where none starts there or it
/// is cut off (its end cannot be found).
fn next_block<'a>(markers: &BlockMarkers, rest: &'a [u8]) -> Option<(ReadBlock<'a>, &'a [u8])> {
    let nl = memchr::memchr(b'\n', rest)?;
    let (tag, words) = split_word(&rest[..nl]);
    let (k, words) = split_word(words);
    let (nd, nf) = split_word(words);
    let (root, dirs, files) = (parse_u64(k)?, parse_u64(nd)?, parse_u64(nf)?);
    let body = &rest[nl + 1..];
    let s2_len = markers.second_stat.needle().len();
    let end_len = markers.end.needle().len();
    let (before, data, after) = match tag {
        b"RD" => {
            // The first `stat`'s lines, as many as the block says (a `stat` that left one out
            // is caught by the sizes or the second `stat`), then the concatenation, then `S2`.
            let lines_wanted = dirs.saturating_add(files).min(body.len() as u64) as usize;
            let mut at = 0;
            let mut lines = Vec::with_capacity(lines_wanted);
            for _ in 0..lines_wanted {
                let len = memchr::memchr(b'\n', &body[at..])?;
                lines.push(&body[at..at + len]);
                at += len + 1;
            }
            let first = &body[..at.saturating_sub(1)];
            let data = &body[at..];
            // Where the first `stat` says the files end (where the marker is unless something
            // changed), else wherever the marker is.
            let expected = lines[(dirs as usize).min(lines.len())..]
                .iter()
                .filter_map(|line| stat_line(line))
                .try_fold(0usize, |total, (size, ..)| total.checked_add(size as usize));
            let s2 = markers.second_stat.needle();
            let marker = match expected {
                Some(at) if data.get(at..).is_some_and(|d| d.starts_with(s2)) => at,
                _ => markers.second_stat.find(data)?,
            };
            let after = &data[marker + s2_len..];
            let before = SizesBefore::FirstStat { lines, text: first };
            (before, &data[..marker], after)
        }
        b"RF" => {
            // No sizes before the read in the block: its bytes end at the first `S2` marker.
            let marker = markers.second_stat.find(body)?;
            (
                SizesBefore::Listing,
                &body[..marker],
                &body[marker + s2_len..],
            )
        }
        _ => return None,
    };
    let end = markers.end.needle();
    let stop = match &before {
        SizesBefore::FirstStat { text, .. }
            if after.starts_with(text)
                && after.get(text.len()..).is_some_and(|t| t.starts_with(end)) =>
        {
            text.len()
        }
        _ => markers.end.find(after)?,
    };
    let block = ReadBlock {
        root,
        dirs,
        files,
        before,
        data,
        second: &after[..stop],
    };
    Some((block, &after[stop + end_len..]))
}

/// The files of each block that passes every check, by the listing's files they are; a block
/// that fails a check answers none of its files. A file not listed is left out of an `RD`
/// block (its two `stat`s vouch for it) and refuses an `RF` block (the listing is its only
/// `stat` before the read).
fn answer_blocks(
    listing: &Listing,
    blocks: Vec<ReadBlock<'_>>,
    max_file: u64,
) -> Vec<(FileRef, ReadResult)> {
    let listed: std::collections::HashMap<(&[u8], &[u8]), &FileEntry> = listing
        .files
        .iter()
        .map(|f| ((&f.root[..], &f.rel[..]), f))
        .collect();
    let mut out = Vec::new();
    'blocks: for block in blocks {
        let by_listing = matches!(block.before, SizesBefore::Listing);
        let stat: Vec<&[u8]> = match block.before {
            SizesBefore::FirstStat { lines, text } if block.second == text => lines,
            SizesBefore::FirstStat { .. } => continue,
            SizesBefore::Listing => block.second.split(|&b| b == b'\n').collect(),
        };
        if block.dirs.checked_add(block.files) != Some(stat.len() as u64) {
            continue;
        }
        let Some(root) = usize::try_from(block.root)
            .ok()
            .and_then(|k| listing.roots.get(k))
        else {
            continue;
        };
        if !root.exists {
            continue;
        }
        let (dirs, files) = stat.split_at(block.dirs as usize);
        let mut dir_names = std::collections::HashSet::new();
        for line in dirs {
            match stat_line(line) {
                Some((_, mode, name))
                    if mode & FILE_TYPE == DIRECTORY && name.starts_with(b"./") =>
                {
                    dir_names.insert(name);
                }
                _ => continue 'blocks,
            }
        }
        let mut total = 0u64;
        let mut parsed = Vec::with_capacity(files.len());
        for line in files {
            let Some((size, mode, name)) = stat_line(line) else {
                continue 'blocks;
            };
            let Some(rel) = name.strip_prefix(b"./") else {
                continue 'blocks;
            };
            if mode & FILE_TYPE != REGULAR_FILE
                || size > max_file
                || crate::check_relative_path(rel).is_err()
            {
                continue 'blocks;
            }
            // Every directory on the way was one (in both `stat`s of an `RD` block).
            let on_the_way = name
                .iter()
                .enumerate()
                .skip(2)
                .filter(|&(_, &b)| b == b'/')
                .all(|(i, _)| dir_names.contains(&name[..i]));
            if !on_the_way {
                continue 'blocks;
            }
            let entry = listed.get(&(&root.dir[..], rel)).copied();
            // An `RF` block's sizes before the read are the listing's.
            if by_listing && entry.is_none_or(|e| e.size != size) {
                continue 'blocks;
            }
            total += size;
            parsed.push((size, rel, entry));
        }
        if total != block.data.len() as u64 {
            continue;
        }
        let mut offset = 0usize;
        for (size, rel, entry) in parsed {
            let bytes = &block.data[offset..offset + size as usize];
            offset += size as usize;
            let Some(entry) = entry else {
                continue;
            };
            out.push((
                FileRef {
                    harness: entry.harness,
                    root: entry.root.to_vec(),
                    rel: rel.to_vec(),
                },
                ReadResult {
                    size,
                    chunks: vec![bytes.to_vec()],
                },
            ));
        }
    }
    out
}

/// Decodes the typed lines of a listing up to a line that is not one of them (left in
/// `lines`'s peek), files sorted by (root, rel).
fn decode_list_lines<'a>(
    host: &str,
    roots: &[RootSpec],
    lines: &mut std::iter::Peekable<impl Iterator<Item = &'a [u8]>>,
) -> Result<Listing, HostError> {
    let bad = |reason: String| protocol(host, reason);
    let mut listing = Listing::default();
    let mut budget = ListingBudget::default();
    let over_cap = |cap: ListingOverCap| too_large(host, cap.to_string());
    // The root the following files belong to (shared by them), with its harness's filter.
    let mut current: Option<(Harness, Arc<[u8]>, bool)> = None;
    while let Some(&line) = lines.peek() {
        let (tag, rest) = split_word(line);
        if !matches!(
            tag,
            b"MODE" | b"ERR" | b"S" | b"ROOT" | b"ROOTP" | b"F" | b"FX"
        ) {
            break;
        }
        lines.next();
        match tag {
            b"MODE" => {}
            b"ERR" => return Err(err_line(host, rest)),
            b"S" if rest.is_empty() => {
                listing.skipped_names += 1;
            }
            b"ROOT" | b"ROOTP" => {
                let (harness, rest) = split_word(rest);
                let (exists, dir) = split_word(rest);
                let harness = roots
                    .iter()
                    .map(|r| r.harness)
                    .find(|h| h.name().as_bytes() == harness)
                    .ok_or_else(|| bad(format!("unknown harness in {}", show(line))))?;
                let exists = match exists {
                    b"0" => false,
                    b"1" => true,
                    _ => return Err(bad(format!("bad ROOT line {}", show(line)))),
                };
                let dir = match tag {
                    b"ROOTP" => Some(dir.to_vec()),
                    _ => hex_decode(dir),
                }
                .ok_or_else(|| bad(format!("bad ROOT line {}", show(line))))?;
                if dir.contains(&0) || (exists && !is_absolute(&dir)) {
                    return Err(bad(format!("bad root directory in {}", show(line))));
                }
                // One ROOT line per root asked for: more would let a reply grow the listing by
                // its roots alone.
                if listing.roots.len() >= roots.len() {
                    return Err(bad(format!(
                        "more ROOT lines than the {} roots asked for",
                        roots.len()
                    )));
                }
                budget.add_root(dir.len()).map_err(over_cap)?;
                current = Some((harness, dir.as_slice().into(), exists));
                listing.roots.push(ResolvedRoot {
                    harness,
                    dir,
                    exists,
                });
            }
            b"F" | b"FX" => {
                let Some((harness, root, true)) = &current else {
                    return Err(bad(format!(
                        "file outside an existing root: {}",
                        show(line)
                    )));
                };
                let (size, rest) = split_word(rest);
                let (mtime, path) = split_word(rest);
                let size =
                    parse_u64(size).ok_or_else(|| bad(format!("bad size in {}", show(line))))?;
                let mtime =
                    parse_i64(mtime).ok_or_else(|| bad(format!("bad mtime in {}", show(line))))?;
                let path = if tag == b"FX" {
                    hex_decode(path).ok_or_else(|| bad(format!("bad path in {}", show(line))))?
                } else {
                    path.to_vec()
                };
                let rel = path.strip_prefix(b"./").unwrap_or(&path).to_vec();
                check_listed_path(*harness, &rel)
                    .map_err(|reason| bad(format!("{reason}: {}", show(line))))?;
                budget.add_file(rel.len()).map_err(over_cap)?;
                listing.files.push(FileEntry {
                    harness: *harness,
                    root: root.clone(),
                    rel,
                    size,
                    mtime,
                });
            }
            _ => return Err(bad(format!("unexpected line {}", show(line)))),
        }
    }
    listing
        .files
        .sort_by(|a, b| (&a.root, &a.rel).cmp(&(&b.root, &b.rel)));
    Ok(listing)
}

/// The non-empty lines of a frame body. A trailing `\r` is dropped: PowerShell ends lines in
/// CRLF, and no typed line of either dialect ends in one (a path holding a CR comes as `FX`).
fn body_lines(body: &[u8]) -> std::iter::Peekable<impl Iterator<Item = &[u8]>> {
    body.split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .filter(|line| !line.is_empty())
        .peekable()
}

/// An absolute directory as a POSIX host (`/…`) or a Windows host (`C:\…`, `C:/…`, `\\server\…`)
/// spells it.
fn is_absolute(dir: &[u8]) -> bool {
    match dir {
        [b'/', ..] | [b'\\', b'\\', ..] => true,
        [drive, b':', b'\\' | b'/', ..] => drive.is_ascii_alphabetic(),
        _ => false,
    }
}

/// A listed path must be what the harness's filter allows: `<subdir>/…`, relative, no `..`,
/// at most `max_depth` directories below one of the subdirs, with a transcript file name; or
/// exactly one of the harness's `top_files` (any name directly in the root for a harness whose
/// database a variable may name).
fn check_listed_path(harness: Harness, rel: &[u8]) -> Result<(), &'static str> {
    // Not `check_relative_path`: a backslash is an ordinary byte in a POSIX name, and the
    // local host lists such files too.
    if rel.is_empty() || rel.starts_with(b"/") || rel.contains(&0) {
        return Err("not a relative path");
    }
    if rel
        .split(|&b| b == b'/')
        .any(|c| matches!(c, b"" | b"." | b".."))
    {
        return Err("empty, `.` or `..` component in path");
    }
    let spec = harness.list_spec();
    if spec.top_files.iter().any(|name| rel == name.as_bytes()) {
        return Ok(());
    }
    // The database a variable named (`OPENCODE_DB`): any name directly in its directory.
    if harness.db_env().is_some() && !rel.contains(&b'/') {
        return Ok(());
    }
    let below = spec
        .subdirs
        .iter()
        .find_map(|sub| {
            rel.strip_prefix(sub.as_bytes())
                .and_then(|r| r.strip_prefix(b"/"))
        })
        .ok_or("path outside the transcript directory")?;
    let depth = below.iter().filter(|&&b| b == b'/').count();
    if depth > spec.max_depth as usize {
        return Err("path deeper than the listing allows");
    }
    let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
    if !spec.matches_name(name) {
        return Err("path without the transcript suffix");
    }
    Ok(())
}

/// How a read reply encodes its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `base64` or `openssl base64`: base64 with line breaks.
    Base64,
    /// `uuencode -m`: base64 between a `begin-base64` line and `====`.
    Uu,
    /// `od -An -v -tx1`: two hex digits per byte, whitespace-separated.
    Hex,
    /// `gzip -1 -c | base64`: one gzip stream, base64 with line breaks.
    Gzip,
}

impl Encoding {
    fn from_wire(name: &[u8]) -> Option<Encoding> {
        match name {
            b"b64" | b"ossl" => Some(Encoding::Base64),
            b"uu" => Some(Encoding::Uu),
            b"hex" => Some(Encoding::Hex),
            b"gz" => Some(Encoding::Gzip),
            _ => None,
        }
    }
}

/// Decodes a read reply for `ranges` (the same ranges the script was generated for).
pub fn decode_read(
    host: &str,
    nonce: &str,
    ranges: &[ByteRange],
    stdout: &[u8],
) -> Result<ReadResult, HostError> {
    let bad = |reason: String| protocol(host, reason);
    within_read_limit(host, stdout, read_reply_limit(ranges))?;
    let frame = parse_frame(host, nonce, stdout)?;
    let mut lines = body_lines(frame.body);
    let result = decode_read_lines(host, |_| ranges.to_vec(), &mut lines)?.0;
    if let Some(extra) = lines.next() {
        // The script's check after the read: the file was swapped while it was read.
        if let (b"ERR", rest) = split_word(extra) {
            return Err(err_line(host, rest));
        }
        return Err(bad(format!("unexpected line {}", show(extra))));
    }
    if frame.rc != 0 {
        return Err(bad(format!("read script exited with {}", frame.rc)));
    }
    Ok(result)
}

/// Decodes one file's read section: an `ERR` line, or `META` then each range's `DATA`/
/// `END-DATA` block. `ranges_of` gives the ranges that were read for the size META reports
/// (a read planned from the file's end computes them on the host). Returns the result and
/// those ranges; a block shorter than the META size says is a broken reply.
fn decode_read_lines<'a>(
    host: &str,
    ranges_of: impl FnOnce(u64) -> Vec<ByteRange>,
    lines: &mut impl Iterator<Item = &'a [u8]>,
) -> Result<(ReadResult, Vec<ByteRange>), HostError> {
    decode_read_section(host, ranges_of, lines)?.map_err(|reason| protocol(host, reason))
}

/// [`decode_read_lines`], with a block shorter than the META size says (the file shrank, or
/// was replaced by a smaller one, after its size was taken) as the inner `Err`, its reason,
/// once the whole section is consumed: in a batch that is the one file's, not the reply's.
fn decode_read_section<'a>(
    host: &str,
    ranges_of: impl FnOnce(u64) -> Vec<ByteRange>,
    lines: &mut impl Iterator<Item = &'a [u8]>,
) -> Result<Result<(ReadResult, Vec<ByteRange>), String>, HostError> {
    let bad = |reason: String| protocol(host, reason);
    let first = lines
        .next()
        .ok_or_else(|| bad("empty read reply".to_string()))?;
    let (tag, rest) = split_word(first);
    if tag == b"ERR" {
        return Err(err_line(host, rest));
    }
    if tag != b"META" {
        return Err(bad(format!("expected META, got {}", show(first))));
    }
    let mut size = None;
    let mut encoding = None;
    for field in rest.split(|&b| b == b' ').filter(|f| !f.is_empty()) {
        if let Some(v) = field.strip_prefix(b"size=") {
            size = parse_u64(v);
        } else if let Some(v) = field.strip_prefix(b"enc=") {
            encoding = Encoding::from_wire(v);
        }
    }
    let (Some(size), Some(encoding)) = (size, encoding) else {
        return Err(bad(format!("bad META line {}", show(first))));
    };
    let ranges = ranges_of(size);
    if ranges.len() > MAX_RANGES {
        return Err(bad(format!("{} ranges asked for", ranges.len())));
    }
    let mut chunks = Vec::with_capacity(ranges.len());
    let mut short = None;
    while chunks.len() < ranges.len() {
        let i = chunks.len();
        let data = lines.next().unwrap_or_default();
        // `DATA i`, or `DATA i-j` for ranges i to j (the last) encoded as one stream.
        let label = data
            .strip_prefix(b"DATA ")
            .filter(|label| {
                *label == i.to_string().as_bytes()
                    || (ranges.len() > i + 1
                        && *label == format!("{i}-{}", ranges.len() - 1).as_bytes())
            })
            .ok_or_else(|| bad(format!("expected DATA {i}, got {}", show(data))))?;
        let group = if label.contains(&b'-') {
            &ranges[i..]
        } else {
            &ranges[i..=i]
        };
        let mut end_marker = b"END-DATA ".to_vec();
        end_marker.extend_from_slice(label);
        let mut payload: Vec<&[u8]> = Vec::new();
        loop {
            let line = lines
                .next()
                .ok_or_else(|| bad(format!("payload of range {i} is cut off")))?;
            if line == end_marker.as_slice() {
                break;
            }
            payload.push(line);
        }
        let wires: Vec<Aligned> = group.iter().map(aligned).collect();
        let max = wires
            .iter()
            .map(Aligned::max_bytes)
            .fold(0, u64::saturating_add);
        let stream = decode_payload(encoding, &payload, max).map_err(|e| match e {
            PayloadError::Malformed(reason) => bad(format!("range {i}: {reason}")),
            PayloadError::TooLarge(max) => {
                too_large(host, format!("range {i}: more than {max} bytes of payload"))
            }
        })?;
        let mut rest = stream.as_slice();
        for (k, (range, wire)) in group.iter().zip(&wires).enumerate() {
            let i = i + k;
            // Every block of a stream but the last lies below the file's end, so it is whole
            // (the script encodes them together only then).
            let block = if k + 1 == group.len() {
                std::mem::take(&mut rest)
            } else {
                let end = wire
                    .skip_blocks
                    .saturating_add(wire.count)
                    .saturating_mul(wire.bs);
                let len = usize::try_from(wire.max_bytes()).unwrap_or(usize::MAX);
                if end > size {
                    return Err(bad(format!(
                        "range {i}: a block of a stream that is not whole below the file's end"
                    )));
                }
                if rest.len() < len {
                    // The file shrank while the stream was read: none of its ranges is
                    // trusted, the section is still consumed.
                    short.get_or_insert(format!(
                        "range {i}: a block of a stream that is not whole: {} of {len} bytes (file shrank)",
                        rest.len()
                    ));
                    chunks.extend(std::iter::repeat_with(Vec::new).take(group.len() - k));
                    break;
                }
                let (block, after) = rest.split_at(len);
                rest = after;
                block
            };
            let want = if range.start >= size {
                0
            } else {
                range.len.min(size - range.start)
            };
            if want == 0 {
                // Nothing of the range exists: the script runs no `dd` at all.
                chunks.push(Vec::new());
                continue;
            }
            // Both fit in usize: `block` exists in memory and `want` is at most its length here.
            let need = wire.skip.saturating_add(want);
            if (block.len() as u64) < need {
                short.get_or_insert(format!(
                    "range {i}: got {} bytes, expected at least {need} (file shrank, or dd failed)",
                    block.len()
                ));
                chunks.push(Vec::new());
                continue;
            }
            let start = wire.skip as usize;
            chunks.push(block[start..start + want as usize].to_vec());
        }
    }
    Ok(match short {
        Some(reason) => Err(reason),
        None => Ok((ReadResult { size, chunks }, ranges)),
    })
}

/// The largest reply to a batched read: the sum of each file's bound.
pub fn read_many_reply_limit(reads: &[(FileRef, Vec<ByteRange>)]) -> usize {
    reads
        .iter()
        .map(|(_, ranges)| read_reply_limit(ranges).saturating_sub(NOISE_SLACK) + 64)
        .fold(NOISE_SLACK, usize::saturating_add)
}

/// The length from a file's start that `ranges` cover, when one of them starts at 0 and reaches
/// as far as any (and the read is one the script makes at all): a batch reads such a file whole
/// (`cat`) when its size is at most this, and the ranges are cut from what it read. This is what
/// `check` asks of a small session (its head and its tail window are the whole file).
pub fn whole_file_cap(ranges: &[ByteRange]) -> Option<u64> {
    if ranges.is_empty() || ranges.len() > MAX_RANGES || super::check_ranges(ranges).is_err() {
        return None;
    }
    let end = ranges.iter().map(|r| r.start.saturating_add(r.len)).max()?;
    let from_start = ranges.iter().any(|r| r.start == 0 && r.len == end);
    (from_start && end > 0 && end <= MAX_READ_BYTES).then_some(end)
}

/// One file's answer in a batched read reply.
#[derive(Debug)]
pub enum BatchRead {
    /// Read, or refused or failed for this file alone.
    Done(Result<ReadResult, HostError>),
    /// Read whole with others, and that file or one read before it changed while they were
    /// read: read it again (the bytes that came are not trusted to be its own).
    Again,
}

/// Decodes a batched read reply ([`posix::read_many_script`]): one result per file, in order,
/// a file that must be read again ([`BatchRead::Again`]) as an error saying so.
pub fn decode_read_many(
    host: &str,
    nonce: &str,
    reads: &[(FileRef, Vec<ByteRange>)],
    stdout: &[u8],
) -> Result<Vec<Result<ReadResult, HostError>>, HostError> {
    let answers = decode_read_batch(host, nonce, reads, stdout)?;
    Ok(answers
        .into_iter()
        .zip(reads)
        .map(|(answer, (file, _))| match answer {
            BatchRead::Done(result) => result,
            BatchRead::Again => Err(HostError::Io {
                host: host.to_string(),
                path: display_path(&[&file.root[..], b"/", &file.rel[..]].concat()),
                reason: "changed while it was read; read it again".to_string(),
            }),
        })
        .collect())
}

/// A read reply over what its request allows is refused unread (exit 6), whatever it holds.
fn within_read_limit(host: &str, stdout: &[u8], limit: usize) -> Result<(), HostError> {
    if stdout.len() <= limit {
        return Ok(());
    }
    Err(too_large(
        host,
        format!(
            "read reply of {} bytes is over the {limit} bytes this request allows",
            stdout.len()
        ),
    ))
}

/// Decodes a batched read reply ([`posix::read_many_script`]): one answer per file, in order.
/// A file's `ERR` is its own result; a reply that breaks the format fails the whole call.
///
/// A `CAT` block is checked before any of its bytes are given to a file: both `STAT` blocks
/// must list the same inode and size for a file, and the concatenation must be exactly as long
/// as the sizes say. Files before the first one that changed are answered; that one and every
/// file after it in the block are [`BatchRead::Again`], as is every file of a block whose
/// length is wrong.
pub fn decode_read_batch(
    host: &str,
    nonce: &str,
    reads: &[(FileRef, Vec<ByteRange>)],
    stdout: &[u8],
) -> Result<Vec<BatchRead>, HostError> {
    let bad = |reason: String| protocol(host, reason);
    within_read_limit(host, stdout, read_many_reply_limit(reads))?;
    let frame = parse_frame(host, nonce, stdout)?;
    let mut lines = body_lines(frame.body);
    // The files come in the script's order (grouped by directory), each once.
    let mut out: Vec<Option<BatchRead>> = Vec::new();
    out.resize_with(reads.len(), || None);
    let mut answered = 0;
    while answered < reads.len() {
        let line = lines.next().unwrap_or_default();
        if let (b"CAT", rest) = split_word(line) {
            let block = decode_cat_block(host, reads, &out, rest, &mut lines)?;
            for (i, answer) in block {
                out[i] = Some(answer);
                answered += 1;
            }
            continue;
        }
        let i = match split_word(line) {
            (b"FILE", n) => parse_u64(n)
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n < reads.len() && out[n].is_none()),
            _ => None,
        }
        .ok_or_else(|| bad(format!("expected a FILE line, got {}", show(line))))?;
        let ranges = &reads[i].1;
        let result = match lines.peek() {
            Some(line) if split_word(line).0 == b"ERR" => {
                let err = err_line(host, split_word(line).1);
                lines.next();
                Err(err)
            }
            // A file that shrank (or was replaced) after its size was taken is its own
            // failure: the check after the read usually says `raced` as well (below).
            _ => match decode_read_section(host, |_| ranges.clone(), &mut lines) {
                Ok(Ok((result, _))) => Ok(result),
                Ok(Err(reason)) => Err(HostError::Io {
                    host: host.to_string(),
                    path: display_path(&[&reads[i].0.root[..], b"/", &reads[i].0.rel[..]].concat()),
                    reason: format!("changed while it was read: {reason}"),
                }),
                Err(e) => Err(e),
            },
        };
        // A reply that breaks the format is the host's fault, whichever file it is in.
        if let Err(e @ (HostError::Protocol { .. } | HostError::ReplyTooLarge { .. })) = result {
            return Err(e);
        }
        let mut result = result;
        let mut line = lines.next().unwrap_or_default();
        if let (b"ERR", rest) = split_word(line) {
            // The check after the read: the file was swapped while it was read.
            result = Err(err_line(host, rest));
            line = lines.next().unwrap_or_default();
        }
        if line != format!("END-FILE {i}").as_bytes() {
            return Err(bad(format!("expected END-FILE {i}, got {}", show(line))));
        }
        out[i] = Some(BatchRead::Done(result));
        answered += 1;
    }
    if let Some(extra) = lines.next() {
        return Err(bad(format!("unexpected line {}", show(extra))));
    }
    if frame.rc != 0 {
        return Err(bad(format!("read script exited with {}", frame.rc)));
    }
    Ok(out.into_iter().flatten().collect())
}

/// Decodes a `CAT` block after its `CAT` word (`rest`: the encoder and the indexes of the
/// files stat'ed): the answers of the files concatenated (those no larger than their
/// [`whole_file_cap`]); the others come later in `FILE` sections of their own.
fn decode_cat_block<'a>(
    host: &str,
    reads: &[(FileRef, Vec<ByteRange>)],
    answered: &[Option<BatchRead>],
    rest: &[u8],
    lines: &mut impl Iterator<Item = &'a [u8]>,
) -> Result<Vec<(usize, BatchRead)>, HostError> {
    let bad = |reason: String| protocol(host, reason);
    let (enc, indexes) = split_word(rest);
    let encoding = Encoding::from_wire(enc).ok_or_else(|| bad("bad CAT line".to_string()))?;
    let mut members: Vec<(usize, u64)> = Vec::new();
    for word in indexes.split(|&b| b == b' ').filter(|w| !w.is_empty()) {
        let i = parse_u64(word)
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n < reads.len() && answered[n].is_none())
            .filter(|n| members.iter().all(|(m, _)| m != n))
            .ok_or_else(|| bad(format!("bad index in a CAT line: {}", show(word))))?;
        let cap = whole_file_cap(&reads[i].1)
            .ok_or_else(|| bad(format!("CAT names file {i}, which is not read whole")))?;
        members.push((i, cap));
    }
    let before = stat_block(host, lines, members.len())?.ok_or_else(|| {
        bad(format!(
            "expected {} lines of inode and size",
            members.len()
        ))
    })?;
    // The files concatenated: those no larger than their cap, in order (as the script chose).
    let concatenated: Vec<(usize, Stat)> = members
        .iter()
        .zip(&before)
        .filter(|((_, cap), (_, size, _))| size <= cap)
        .map(|((i, _), stat)| (*i, *stat))
        .collect();
    let total: u64 = concatenated
        .iter()
        .map(|(_, (_, size, _))| *size)
        .fold(0, u64::saturating_add);
    if lines.next() != Some(b"DATA 0") {
        return Err(bad("expected DATA 0 in a CAT block".to_string()));
    }
    let mut payload: Vec<&[u8]> = Vec::new();
    loop {
        let line = lines
            .next()
            .ok_or_else(|| bad("payload of a CAT block is cut off".to_string()))?;
        if line == b"END-DATA 0" {
            break;
        }
        payload.push(line);
    }
    // A file that grew under the `cat` sends more than the sizes say; the reply's own bound
    // keeps that in check.
    let data = match decode_payload(encoding, &payload, total.saturating_add(MAX_READ_BYTES)) {
        Ok(data) => Some(data),
        Err(PayloadError::TooLarge(_)) => None,
        Err(PayloadError::Malformed(reason)) => return Err(bad(format!("CAT block: {reason}"))),
    };
    let after = stat_block(host, lines, concatenated.len())?;
    // The first file whose inode, size or mode is not what it was before the `cat`, or whose
    // mode is not a regular file's (the first of all when the second `stat` failed, or the
    // script emptied it: a directory on the way moved or was not one). The files before it were read at
    // the sizes the first `stat` gave, so their bytes are where those sizes say, provided the
    // concatenation holds them all; with a wrong length and no change seen, none is trusted.
    let length = data.as_ref().map(|d| d.len() as u64);
    let first_changed = match &after {
        None => 0,
        Some(after) => concatenated
            .iter()
            .zip(after)
            .position(|((_, stat), again)| stat != again || !is_regular(stat))
            .unwrap_or(concatenated.len()),
    };
    let prefix: u64 = concatenated[..first_changed]
        .iter()
        .map(|(_, (_, size, _))| *size)
        .sum();
    let first_changed = match length {
        Some(length) if length == total => first_changed,
        Some(length) if first_changed < concatenated.len() && length >= prefix => first_changed,
        _ => 0,
    };
    let data = data.unwrap_or_default();
    let mut answers = Vec::with_capacity(concatenated.len());
    let mut at = 0usize;
    for (k, (i, (_, size, _))) in concatenated.into_iter().enumerate() {
        if k >= first_changed {
            answers.push((i, BatchRead::Again));
            continue;
        }
        // Within `data`: the sizes before `first_changed` sum to at most its length.
        let len = size as usize;
        let content = &data[at..at + len];
        at += len;
        let chunks = reads[i]
            .1
            .iter()
            .map(|range| {
                let start = range.start.min(size) as usize;
                let end = range.start.saturating_add(range.len).min(size) as usize;
                content[start..end.max(start)].to_vec()
            })
            .collect();
        answers.push((i, BatchRead::Done(Ok(ReadResult { size, chunks }))));
    }
    Ok(answers)
}

/// The type bits of a regular file's and a directory's mode (`S_IFREG`, `S_IFDIR`), and the
/// mask that holds them.
const REGULAR_FILE: u32 = 0o100000;
const DIRECTORY: u32 = 0o040000;
const FILE_TYPE: u32 = 0o170000;

/// A mode as `stat -c %f` prints it (hex, at most 8 digits).
fn hex_mode(hex: &[u8]) -> Option<u32> {
    std::str::from_utf8(hex)
        .ok()
        .filter(|h| !h.is_empty() && h.len() <= 8)
        .and_then(|h| u32::from_str_radix(h, 16).ok())
}

/// A `STAT` line: inode, size and mode.
type Stat = (u64, u64, u32);

/// Whether a `STAT` line's mode is a regular file's.
fn is_regular((_, _, mode): &Stat) -> bool {
    mode & FILE_TYPE == REGULAR_FILE
}

/// A `STAT` block of `count` lines of inode, size and (optionally) mode in hex; `None` when it
/// holds another number of lines (a `stat` that failed for a file).
fn stat_block<'a>(
    host: &str,
    lines: &mut impl Iterator<Item = &'a [u8]>,
    count: usize,
) -> Result<Option<Vec<Stat>>, HostError> {
    let bad = |reason: String| protocol(host, reason);
    if lines.next() != Some(b"STAT") {
        return Err(bad("expected STAT in a CAT block".to_string()));
    }
    let mut stats = Vec::new();
    loop {
        let line = lines
            .next()
            .ok_or_else(|| bad("STAT block cut off".to_string()))?;
        if line == b"END-STAT" {
            break;
        }
        let (inode, rest) = split_word(line);
        let (size, mode) = split_word(rest);
        // The file's mode in hex, where the script names it (`stat -c %f`); a file is regular.
        let mode = match mode {
            b"" => Some(REGULAR_FILE),
            hex => hex_mode(hex),
        };
        let stat = parse_u64(inode)
            .zip(parse_u64(size))
            .zip(mode)
            .map(|((inode, size), mode)| (inode, size, mode))
            .ok_or_else(|| bad(format!("bad STAT line {}", show(line))))?;
        if stats.len() == count {
            return Err(bad("more STAT lines than files".to_string()));
        }
        stats.push(stat);
    }
    Ok((stats.len() == count).then_some(stats))
}

/// The largest reply to a find-and-read: a listing's, the first read's, and the reads of
/// `tops` for each root of their harness.
pub fn find_read_reply_limit(roots: &[RootSpec], tops: &[crate::TopReads]) -> usize {
    let first = MAX_LIST_REPLY_BYTES.saturating_add(read_reply_limit(&[
        ByteRange::new(0, MAX_READ_BYTES),
        ByteRange::new(0, MAX_READ_BYTES),
    ]));
    roots
        .iter()
        .filter_map(|r| tops.iter().find(|t| t.harness == r.harness))
        .flat_map(|t| t.ranges.iter())
        .map(|ranges| read_reply_limit(ranges).saturating_add(256))
        .fold(first, usize::saturating_add)
}

/// Decodes a find-and-read reply ([`posix::find_read_script`]): the narrowed listing, and the
/// read of its one file when a `HIT` line says it follows.
pub fn decode_find_read(
    host: &str,
    nonce: &str,
    roots: &[RootSpec],
    first: &crate::FirstRead,
    stdout: &[u8],
) -> Result<crate::Found, HostError> {
    decode_find_read_with(host, nonce, roots, first, &[], stdout)
}

/// [`decode_find_read`] of [`posix::find_read_script_with`]'s reply: also the `TOP` sections,
/// the reads of `tops` (each of a top file the listing names: one it does not name is skipped).
pub fn decode_find_read_with(
    host: &str,
    nonce: &str,
    roots: &[RootSpec],
    first: &crate::FirstRead,
    tops: &[crate::TopReads],
    stdout: &[u8],
) -> Result<crate::Found, HostError> {
    let bad = |reason: String| protocol(host, reason);
    if stdout.len() > find_read_reply_limit(roots, tops) {
        return Err(too_large(
            host,
            "find-and-read reply over its bound".to_string(),
        ));
    }
    let frame = parse_frame(host, nonce, stdout)?;
    let mut lines = body_lines(frame.body);
    let listing = decode_list_lines(host, roots, &mut lines)?;
    let mut read = None;
    if let Some(line) = lines.peek().copied()
        && split_word(line).0 == b"HIT"
    {
        lines.next();
        // The path as its F line spells it (an F line holds no LF or CR), below the root.
        let rel = split_word(line).1;
        let rel = rel.strip_prefix(b"./").unwrap_or(rel).to_vec();
        let hit = listing
            .files
            .iter()
            .find(|f| f.rel == rel && f.rel.contains(&b'/'))
            .cloned()
            .ok_or_else(|| bad(format!("HIT names a file not listed: {}", show(line))))?;
        let result = match lines.peek() {
            Some(line) if split_word(line).0 == b"ERR" => {
                let err = err_line(host, split_word(line).1);
                lines.next();
                Err(err)
            }
            _ => decode_read_lines(host, |size| first.ranges(size), &mut lines).map(|(r, _)| r),
        };
        if let Err(e @ (HostError::Protocol { .. } | HostError::ReplyTooLarge { .. })) = result {
            return Err(e);
        }
        let mut result = result;
        if let Some(line) = lines.next() {
            match split_word(line) {
                (b"ERR", rest) => result = Err(err_line(host, rest)),
                _ => return Err(bad(format!("unexpected line {}", show(line)))),
            }
        }
        read = Some((hit, result));
    }
    let mut top_files = Vec::new();
    while let Some(line) = lines.peek().copied()
        && split_word(line).0 == b"TOP"
    {
        lines.next();
        let (root, rest) = split_word(split_word(line).1);
        let (k, name) = split_word(rest);
        let at = |word: &[u8]| {
            std::str::from_utf8(word)
                .ok()
                .and_then(|w| w.parse::<usize>().ok())
        };
        let (Some(root), Some(k)) = (at(root), at(k)) else {
            return Err(bad(format!("bad TOP line {}", show(line))));
        };
        let ranges = roots
            .get(root)
            .and_then(|spec| tops.iter().find(|t| t.harness == spec.harness))
            .and_then(|t| t.ranges.get(k))
            .filter(|_| !name.is_empty() && !name.contains(&b'/'))
            .ok_or_else(|| bad(format!("TOP names no read asked for: {}", show(line))))?;
        let result = decode_read_lines(host, |_| ranges.clone(), &mut lines).map(|(r, _)| r);
        if let Err(e @ (HostError::Protocol { .. } | HostError::ReplyTooLarge { .. })) = result {
            return Err(e);
        }
        let mut result = result;
        if let Some(line) = lines.peek().copied()
            && split_word(line).0 == b"ERR"
        {
            lines.next();
            result = Err(err_line(host, split_word(line).1));
        }
        // The file as the listing names it; one it does not (it appeared after the listing's
        // `stat`) is left out, as it would be of the listing.
        let listed = listing.roots.get(root).and_then(|r| {
            listing
                .files
                .iter()
                .find(|f| f.harness == r.harness && *f.root == *r.dir && f.rel == name)
        });
        if let Some(entry) = listed {
            top_files.push((entry.clone(), result));
        }
    }
    if let Some(extra) = lines.next() {
        return Err(bad(format!("unexpected line {}", show(extra))));
    }
    if frame.rc != 0 {
        return Err(bad(format!(
            "find-and-read script exited with {}",
            frame.rc
        )));
    }
    Ok(crate::Found {
        listing,
        read,
        tops: top_files,
    })
}

/// Why a range's payload was refused.
#[derive(Debug, PartialEq, Eq)]
enum PayloadError {
    /// Not what the encoding produces (the wire format is broken).
    Malformed(String),
    /// It decodes to more than this many bytes, what the aligned read can return.
    TooLarge(usize),
}

impl From<&str> for PayloadError {
    fn from(reason: &str) -> PayloadError {
        PayloadError::Malformed(reason.to_string())
    }
}

/// Decodes one range's payload lines, refusing more than `max` decoded bytes.
fn decode_payload(encoding: Encoding, lines: &[&[u8]], max: u64) -> Result<Vec<u8>, PayloadError> {
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    // Nothing to read (an empty range, or one past the end) runs no encoder at all.
    if lines.iter().all(|l| l.trim_ascii().is_empty()) {
        return Ok(Vec::new());
    }
    match encoding {
        Encoding::Gzip => {
            // gzip adds at most a few bytes per 16 KiB block it cannot shrink, and its header.
            let compressed = decode_base64_lines(lines, max.saturating_add(max / 512 + 1024))?;
            gunzip(&compressed, max)
        }
        Encoding::Base64 | Encoding::Uu => {
            let mut lines = lines;
            if encoding == Encoding::Uu {
                let Some((first, rest)) = lines.split_first() else {
                    return Err("uuencode output without header".into());
                };
                if !first.starts_with(b"begin-base64 ") {
                    return Err("uuencode output without header".into());
                }
                let Some((last, rest)) = rest.split_last() else {
                    return Err("uuencode output without trailer".into());
                };
                if last.trim_ascii() != b"====" {
                    return Err("uuencode output without trailer".into());
                }
                lines = rest;
            }
            decode_base64_lines(lines, max)
        }
        Encoding::Hex => {
            let mut out = Vec::new();
            for line in lines {
                for token in line.split(|b| b.is_ascii_whitespace()) {
                    if token.is_empty() {
                        continue;
                    }
                    let [hi, lo] = token else {
                        return Err("bad hex token".into());
                    };
                    let byte = (hex_val(*hi).ok_or("bad hex digit")? << 4)
                        | hex_val(*lo).ok_or("bad hex digit")?;
                    if out.len() == max {
                        return Err(PayloadError::TooLarge(max));
                    }
                    out.push(byte);
                }
            }
            Ok(out)
        }
    }
}

/// Base64 with line breaks, refusing more than `max` decoded bytes before decoding any.
fn decode_base64_lines(lines: &[&[u8]], max: usize) -> Result<Vec<u8>, PayloadError> {
    let total: usize = lines.iter().map(|l| l.len()).sum();
    // Four characters per three bytes: refuse before decoding anything oversized.
    if total / 4 * 3 > max.saturating_add(3) {
        return Err(PayloadError::TooLarge(max));
    }
    let mut text = Vec::with_capacity(total);
    for line in lines {
        text.extend(line.iter().filter(|b| !b.is_ascii_whitespace()));
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(&text)
        .map_err(|e| PayloadError::Malformed(format!("bad base64: {e}")))?;
    if decoded.len() > max {
        return Err(PayloadError::TooLarge(max));
    }
    Ok(decoded)
}

/// One gzip stream and nothing after it, decompressed to at most `max` bytes (a stream that
/// inflates to more is refused as soon as it does: a small reply cannot make us hold a large
/// one). The stream's CRC and length are checked.
///
/// The output is allocated once, at the length the stream's trailer gives ([`gzip_isize`]),
/// so that 15 MB of a first `check`'s reply are not grown through 2, 4, 8 and 16 MB copies
/// (each fresh memory the kernel zeroes first, docs/performance.md). The trailer is only a
/// hint: never trusted beyond `max`, only memory reserved (not touched) when it is too large,
/// and the vector grows as usual when it is too small; the inflate checks it anyway.
fn gunzip(compressed: &[u8], max: usize) -> Result<Vec<u8>, PayloadError> {
    use std::io::Read as _;
    let mut out = Vec::with_capacity(gzip_isize(compressed).min(max));
    let mut stream = flate2::bufread::GzDecoder::new(compressed);
    (&mut stream)
        .take(max as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| PayloadError::Malformed(format!("bad gzip stream: {e}")))?;
    if out.len() > max {
        return Err(PayloadError::TooLarge(max));
    }
    if !stream.into_inner().is_empty() {
        return Err("bytes after the gzip stream".into());
    }
    Ok(out)
}

/// The length a gzip stream says it decompresses to (its last four bytes, ISIZE: the length
/// modulo 2^32, little-endian), or 0 for a stream too short to have a trailer.
fn gzip_isize(compressed: &[u8]) -> usize {
    match compressed.last_chunk::<4>() {
        Some(trailer) if compressed.len() >= 18 => {
            usize::try_from(u32::from_le_bytes(*trailer)).unwrap_or(usize::MAX)
        }
        _ => 0,
    }
}

/// Maps an `ERR <code> <hex path>` line to the error a user reads.
fn err_line(host: &str, rest: &[u8]) -> HostError {
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

fn protocol(host: &str, reason: String) -> HostError {
    HostError::Protocol {
        host: host.to_string(),
        reason,
    }
}

fn too_large(host: &str, reason: String) -> HostError {
    HostError::ReplyTooLarge {
        host: host.to_string(),
        reason,
    }
}

/// The first ~200 bytes of a reply, escaped so that nothing in them reaches a terminal raw.
fn first_bytes(stdout: &[u8]) -> String {
    let head = &stdout[..stdout.len().min(200)];
    let mut s = head.escape_ascii().to_string();
    if stdout.len() > 200 {
        s.push('…');
    }
    if s.is_empty() {
        s.push_str("(nothing)");
    }
    s
}

/// A line for an error message: at most 120 bytes, escaped.
fn show(line: &[u8]) -> String {
    let mut s = line[..line.len().min(120)].escape_ascii().to_string();
    if line.len() > 120 {
        s.push('…');
    }
    format!("`{s}`")
}

/// Splits off the first space-separated word (the rest keeps any further spaces).
fn split_word(line: &[u8]) -> (&[u8], &[u8]) {
    match line.iter().position(|&b| b == b' ') {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => (line, &[]),
    }
}

fn parse_u64(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 20 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

fn parse_i64(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix(b"-") {
        Some(d) => (true, d),
        None => (false, text),
    };
    let value = i64::try_from(parse_u64(digits)?).ok()?;
    Some(if negative { -value } else { value })
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes hex digits, ignoring ASCII whitespace.
fn hex_decode(text: &[u8]) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks(2)
        .map(|p| Some((hex_val(p[0])? << 4) | hex_val(p[1])?))
        .collect()
}

pub(crate) fn hex_encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod tests {
    use super::*;
    use clankie_model::limits::MAX_LIST_ENTRIES;

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
                &format!(
                    "{head}\nSTAT\n{stat}END-STAT\nDATA 0\n{data}\nEND-DATA 0\nSTAT\nEND-STAT"
                ),
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
        let answer =
            decode_list_reading("h", NONCE, &roots, &gz_reply(cut), Some(64 << 10)).unwrap();
        assert!(answer.listing.is_some());
        assert_eq!(answer.reads.len(), names.len());
    }

    #[test]
    fn a_walk_that_lists_and_reads_is_decoded_and_a_cut_listing_is_seen() {
        let roots = crate::test_support::roots();
        let decode = |text: &[u8]| {
            decode_list_reading("h", NONCE, &roots, &gz_reply(text), Some(8)).unwrap()
        };
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
        out.extend_from_slice(
            format!("\n{NONCE}:S2\n{}\n{NONCE}:E\n", after.join("\n")).as_bytes(),
        );
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
        let decode = |text: &[u8]| {
            decode_list_reading("h", NONCE, &roots, &gz_reply(text), Some(8)).unwrap()
        };
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
            let err = decode_list("h", NONCE, &crate::test_support::roots(), &framed(&body, 0))
                .unwrap_err();
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
        let listing =
            decode_list("h", NONCE, &crate::test_support::roots(), &framed(&ok, 0)).unwrap();
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
}
