//! POSIX `sh` scripts for the two primitives. Pure generators: the exec string is always
//! [`POSIX_EXEC`] and the script goes on stdin; the reply is decoded by [`super::decode_list`]
//! (a first `check`'s listing that reads along by [`super::decode_list_reading`]) and
//! [`super::decode_read`].
//!
//! How the scripts stay safe and portable:
//! - The whole script is one `{ …; } </dev/null` group. The shell parses all of it before it runs
//!   any of it, so a partly eaten script (rc files that read stdin) fails to parse instead of
//!   running a fragment, and every command inside reads `/dev/null`, never the rest of the script.
//! - Every value is single-quoted by [`super::quote`], and what is quoted is the value's bytes
//!   as `printf` octal escapes plus a sentinel `X`: the script text stays ASCII (yash cannot parse
//!   other bytes) and holds no shell syntax from any path even if parsing starts mid-value. The
//!   sentinel also detects a shell that cannot carry a byte (yash drops everything after a byte
//!   that is invalid in its locale): such a value is refused, never truncated into another path.
//! - Nothing is written anywhere: no temp files, the only redirections go to `/dev/null`.
//! - Listing probes its tools instead of guessing: GNU `find -printf`, else `stat -c`
//!   (GNU, busybox), else BSD `stat -f`, else `ls -ln` + `date -r`. Depth is limited with a POSIX
//!   `-path '*/*/…' -prune` rather than `-maxdepth` (not POSIX): `-path` does not treat `/`
//!   specially, so a pattern of k stars matches every path with at least k-1 slashes, whatever
//!   the names, and the same expression runs on GNU, BSD and busybox.
//! - Every name is listed and read, whatever bytes it holds (all but `/` and NUL are legal):
//!   a path holding LF or CR goes out hex-encoded on an `FX` line (a per-batch `sh -c` sorts
//!   them out, so only such paths cost an `od`), and `pwd -P` is compared with its own newline
//!   cut by hand, since `$(…)` would cut one that ends a directory's name too.
//! - A file is read through one descriptor: a `{ …; } 3<./<name>` group opens it once after the
//!   no-follow checks, `/proc/self/fd/3` must have the inode those checks saw (and the device of
//!   its directory), and every range is read through `/proc/self/fd/3`, which opens that very
//!   file again (Linux), so a name swapped for a symlink and back cannot move a read. A host
//!   without `/proc/self/fd` reads by name, checked before and after (docs/shells.md).
//! - Reading probes one encoder: `base64`, else `openssl base64`, else `uuencode -m`, else
//!   `od -An -v -tx1`, and names it in the META line (the find-and-read takes `base64` without
//!   a probe when `command -v` finds it). A batched read first tries `gzip -1 -c | base64`
//!   (`gz`), and a listing sends its lines through it when both answer: fewer bytes on the link
//!   for a few processes more on the host.
//! - The find-and-read finds a session by the globs its harness gives (`Layout::id_globs`), not
//!   by a walk: names reach the shell only as the expansion of those patterns (the id is a
//!   plain word) or of a cursor's hint that one of them matches, and go on only as quoted
//!   variables.
//! - A batch reads the small files of all the directories of a root whole in a constant number
//!   of processes (`stat -c` or `stat -f` of all, `cat` of all into one encoder, `stat` again)
//!   instead of a few per file or per directory; names reach those commands only through `eval`
//!   of `"$f<i>"` words, never as script text. Without a `stat` that answers for every file,
//!   they are read one by one.
//!
//! The files: `exec.rs` (how a script is sent), `script.rs` (a script under construction and
//! the shell fragments every script shares), `listing.rs` (the list script, and the listing
//! that reads along), `read.rs` (the read script, the encoder and one file's read),
//! `batch.rs` (the batched read), `find_read.rs` (the find-and-read), `hash.rs` (the first
//! bytes of files hashed where they lie, for `grep --verify`).

mod batch;
mod exec;
mod find_read;
mod hash;
mod listing;
mod read;
mod script;

pub use batch::{read_many_script, read_many_script_with};
pub use exec::{
    COMPRESSED_TAIL, POSIX_EXEC, POSIX_GZIP_EXEC, compressed_invocation, compressed_pipe,
    invocation, listing_was_compressed, listing_was_zstd,
};
pub use find_read::{find_read_script, find_read_script_with};
pub use hash::hash_many_script;
pub use listing::{ListMode, ReadAlong, list_reading_script, list_script, list_script_with};
// A listing's ends, named where the generator's callers name its other parts.
pub use crate::script::{ReadEnds, TailFit};
pub use read::{Encoder, encoder_named_in, read_script, read_script_with};

// What the tests beside name through `use super::*`.
#[cfg(all(test, unix))]
use {
    crate::{FileRef, FirstRead},
    clankie_model::harness::ID_MARK,
    clankie_model::limits::MAX_RANGES,
    clankie_model::{ByteRange, PathHint, RootSpec},
    find_read::find_read_by_walk,
};

// They run the scripts under real Unix shells.
#[cfg(all(test, unix))]
mod tests;
