//! Remote scripts: pure generators for the two primitives (one module per shell dialect) and
//! the one decoder of their framed, typed-line replies. No I/O here except [`new_nonce`]; a
//! transport (ssh) runs the script and hands the stdout bytes back to a decoder.
//!
//! # Files
//! - [`posix`] and [`powershell`]: the generators, one module per dialect. Each writes a script
//!   from a request and nothing else (`posix/` and `powershell/` hold their tests, which run
//!   the scripts under real shells).
//! - `dialect.rs`: [`Dialect`], which picks a generator, and [`detect_dialect_switch`], which
//!   tells from a POSIX script's reply that the host is Windows.
//! - `words.rs`: what both generators write values with: a quoted shell word ([`quote`]), hex,
//!   and the per-call nonce ([`new_nonce`]).
//! - `decode/`: the one decoder of every reply, a file per part of the wire format below:
//!   `frame.rs` (the frame, [`parse_frame`]), `listing.rs` (a list reply, [`decode_list`]),
//!   `read_along.rs` (the files a listing reads along, [`decode_list_reading`]), `ranges.rs`
//!   (a read's ranges on the wire and its reply, [`aligned`], [`decode_read`]), `payload.rs`
//!   (a range's encoded bytes, [`Encoding`]), `batch.rs` (a batched read,
//!   [`decode_read_batch`]), `find_read.rs` (a find-and-read, [`decode_find_read_with`]),
//!   `hash.rs` (a hash reply, [`decode_hash_many`]);
//!   `fields.rs` and `errors.rs` hold the words of a typed line and the errors a reply maps to.
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
//!                                       (<mtime> is `<mtime>:<inode>:<ctime>` where the
//!                                       listing's `stat` gives them: `gnu`, `statc`, `statf`;
//!                                       the `ls` mode and PowerShell give the mtime alone)
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
//! or, for a listing that reads along on a host whose `zstd` answers, `ZS` … `END-ZS`: base64
//! of one zstd frame of the same text.
//! A listing that reads along ([`posix::list_reading_script`]) carries, in that block, its lines
//! between a `<nonce>:RL` and a `<nonce>:LE` line, and blocks of whole small files with the
//! `stat` lines they are checked by (`RD`: before the read and after; `RF`: after, against the
//! listing's sizes): among the lines, or after them and a `<nonce>:RD` line
//! ([`decode_list_reading`]). A listing without its `LE` line was cut at the reply's budget.
//! Decompressed output is held to the same bounds as the plain one (a reply never decodes to
//! more than an uncompressed reply could hold), gzip's CRC is checked, and nothing may follow
//! the stream.
//!
//! A *hash* reply ([`posix::hash_many_script`], `grep --verify`) is `NOHASH` alone (no hash
//! tool on the host), or a section per file: `FILE <i>`, then `ERR`, or `META size=<size>` and
//! `HASH <sha256|md5|cksum> <digest>` (of the file's first bytes asked; empty when the tool
//! failed) and the `ERR raced` of the check after, then `END-FILE <i>`.
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
//!
//! [`MAX_LIST_REPLY_BYTES`]: clankie_model::limits::MAX_LIST_REPLY_BYTES
//! [`HostError::ReplyTooLarge`]: crate::HostError::ReplyTooLarge
//! [`HostError::ShellNotClean`]: crate::HostError::ShellNotClean
//! [`HostError::Protocol`]: crate::HostError::Protocol

mod decode;
mod dialect;
pub mod posix;
pub mod powershell;
mod words;

pub use decode::{
    Aligned, BatchRead, Encoding, Frame, ListReading, aligned, decode_find_read,
    decode_find_read_with, decode_hash_many, decode_list, decode_list_reading, decode_read,
    decode_read_batch, decode_read_many, find_read_reply_limit, hash_many_reply_limit, parse_frame,
    read_many_reply_limit, read_reply_limit, whole_file_cap,
};
pub use dialect::{Dialect, detect_dialect_switch};
pub(crate) use words::hex_encode;
pub use words::{new_nonce, quote};

// The POSIX tests (`posix/tests.rs`) take the reply of a listing that reads along apart with
// these, as `super::super::…`.
#[cfg(all(test, unix))]
use decode::{SizesBefore, decode_payload, split_read_along, stat_line};

/// How much of each end of a file too large to read whole a listing reads along
/// ([`posix::ReadAlong::ends`]): what a first `check` needs of a session (its cursor's head hash and
/// the window before its end that holds its newest record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadEnds {
    pub head: u64,
    /// The last bytes of each file, where `fit` is `None` or cannot measure the file.
    pub tail: u64,
    /// Each file's tail sized to its last lines instead ([`TailFit`]).
    pub fit: Option<TailFit>,
}

/// A tail sized to a file's last lines: the host measures each file's last two lines (one
/// `tail -n 2` and one `awk` for a block of files) and sends the last `t` bytes, `t` the
/// smallest of `min`, 1.5 × `min`, 2 × `min`, 3 × `min`, 4 × `min`, … that holds the last line
/// and the newline before it, and the line before that too when the last one is shorter than
/// `min` (a line that gives no record, a short one). A file whose lines need more than `max`,
/// or that cannot be measured, gets [`ReadEnds::tail`]. The length only decides how much is
/// sent: what a file's bytes are is checked as any read's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TailFit {
    pub min: u64,
    pub max: u64,
}

/// What to send to run a script: the exec string and the bytes for the channel's stdin. When
/// `stdin` is not empty the sender closes stdin after it (a script read to the end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub exec: String,
    pub stdin: Vec<u8>,
}

#[cfg(test)]
mod proptests;
