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

use super::{Invocation, MAX_RANGES, aligned, quote};
use crate::{FileRef, FirstRead, check_ranges, check_relative_path};
use clankie_model::harness::ID_MARK;
use clankie_model::{ByteRange, Harness, PathHint, RootSpec};

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
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder
        .write_all(script)
        .expect("writing into memory cannot fail");
    let compressed = encoder.finish().expect("writing into memory cannot fail");
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

/// Whether a list reply came compressed (a `GZ` line in its frame): the host's `gzip` and
/// `base64` answered both ways, so [`compressed_invocation`] may be sent to it.
pub fn listing_was_compressed(nonce: &str, stdout: &[u8]) -> bool {
    super::parse_frame("", nonce, stdout)
        .is_ok_and(|frame| frame.body.split(|&b| b == b'\n').any(|l| l == b"GZ"))
}

/// How a listing gets each file's size and mtime. Probed on the host unless forced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListMode {
    /// GNU `find -printf`.
    GnuFind,
    /// `stat -c` (GNU coreutils, busybox).
    StatC,
    /// `stat -f` (BSD, macOS).
    StatF,
    /// `ls -ln` for the size and `date -r` for the mtime, one `sh` per batch of files.
    LsDate,
}

impl ListMode {
    fn wire(self) -> &'static str {
        match self {
            ListMode::GnuFind => "gnu",
            ListMode::StatC => "statc",
            ListMode::StatF => "statf",
            ListMode::LsDate => "ls",
        }
    }
}

/// Which tool encodes a read's payload. Probed on the host unless forced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoder {
    Base64,
    Openssl,
    Uuencode,
    Od,
    /// `gzip -1 -c | base64`: what a batched read uses where both answer (transcripts are
    /// JSON, which shrinks five to ten times; the link moves that much less).
    Gzip,
}

/// The encoder a read reply's first `META … enc=NAME` line names (what the host's probe
/// found), so that later reads can force it.
pub fn encoder_named_in(stdout: &[u8]) -> Option<Encoder> {
    const META: &[u8] = b"\nMETA size=";
    let at = stdout.windows(META.len()).position(|w| w == META)?;
    let line = stdout[at + 1..].split(|&b| b == b'\n').next()?;
    let name = line
        .split(|&b| b == b' ')
        .find_map(|w| w.strip_prefix(b"enc="))?;
    [
        Encoder::Base64,
        Encoder::Openssl,
        Encoder::Uuencode,
        Encoder::Od,
        Encoder::Gzip,
    ]
    .into_iter()
    .find(|e| e.wire().as_bytes() == name)
}

impl Encoder {
    fn wire(self) -> &'static str {
        match self {
            Encoder::Base64 => "b64",
            Encoder::Openssl => "ossl",
            Encoder::Uuencode => "uu",
            Encoder::Od => "hex",
            Encoder::Gzip => "gz",
        }
    }
}

/// `hx VALUE`: the value's bytes as lowercase hex on one line, with no newline after it.
const HEX_FN: &str =
    "hx() { printf '%s' $(printf '%s' \"$1\" | { od -An -v -tx1 || xxd -p; } 2>/dev/null); }\n";

/// Sets `e=gz` when `gzip -1 -c | base64` answers as it should (a gzip stream of `hi` is
/// `H4sI…` in base64, whatever its header's time and OS bytes).
const GZIP_PROBE: &str =
    "case $(printf hi | gzip -1 -c 2>/dev/null | base64 2>/dev/null) in H4sI*) e=gz ;; esac\n";

/// The listing's probe: `base64 -d` and `gzip -dc` undo a gzip stream of `hi` (a compressed
/// listing tells the client that [`compressed_invocation`] works here too). The way there,
/// `gzip -1 -c | base64`, is not run: every `gzip` that decompresses (GNU, busybox, toybox,
/// BSD, macOS) takes `-1 -c`, and every `base64` that takes `-d` encodes by default (one that
/// spells it `-D`, older macOS, fails here and the listing goes plain). Two processes fewer.
const LIST_GZIP_PROBE: &str = "case $(printf '%s\\n' H4sIAAAAAAAE/8vIBACsKpPYAgAAAA== | base64 -d 2>/dev/null | gzip -dc 2>/dev/null) in hi) e=gz ;; esac\n";

/// Where the host has no `dd` (toybox), a `dd if= bs= skip= count=` of the one form the read
/// script uses, from `tail -c +N | head -c M`. Its variables are `dd_`-prefixed so that they
/// cannot clobber the script's.
const DD_FALLBACK: &str = r#"command -v dd >/dev/null 2>&1 || dd() {
  for dd_a do case $dd_a in if=*) dd_i=${dd_a#if=} ;; bs=*) dd_b=${dd_a#bs=} ;; skip=*) dd_s=${dd_a#skip=} ;; count=*) dd_c=${dd_a#count=} ;; esac; done
  tail -c +$((dd_s * dd_b + 1)) <"$dd_i" | head -c $((dd_c * dd_b))
}
"#;

/// A script under construction.
struct Script(Vec<u8>);

impl Script {
    /// Opens the group, sets a predictable environment and assigns the nonce.
    fn new(nonce: &str) -> Script {
        let mut s = Script(Vec::with_capacity(4096));
        s.raw("{\n");
        s.raw("N=");
        s.word(nonce.as_bytes());
        s.raw("\nunset CDPATH\nIFS=' \t\n'\nLC_ALL=C; export LC_ALL\nset -f\nNL='\n'\nbad=\n");
        // A function exported from the user's environment (bash `export -f`) must not stand in
        // for a tool.
        s.raw("unset -f cd pwd find stat ls date od tr dd base64 openssl uuencode uname sh 2>/dev/null\n");
        // `hx` hex-encodes a value on one line (a name may hold any byte but NUL). The shell's
        // own field splitting (default IFS, `set -f`) joins `od`'s words: toybox has no `tr`.
        // `xxd -p` stands in where there is no `od` (docs/shells.md).
        s.raw(HEX_FN);
        // toybox has no `dd`: reads fall back to `tail -c +N | head -c M` (docs/shells.md).
        s.raw(DD_FALLBACK);
        s
    }

    fn raw(&mut self, text: &str) {
        self.0.extend_from_slice(text.as_bytes());
    }

    /// One quoted shell word.
    fn word(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(&quote(bytes));
    }

    /// `name=<bytes>` without the bytes ever appearing in the script text (see module doc).
    /// Leaves `$name` empty and `$bad` set when the shell could not carry the value.
    fn assign(&mut self, name: &str, bytes: &[u8]) {
        let mut escaped = Vec::with_capacity(bytes.len() * 4 + 1);
        for b in bytes {
            escaped.extend_from_slice(format!("\\{b:03o}").as_bytes());
        }
        escaped.push(b'X');
        self.raw(&format!("{name}=$(printf "));
        self.word(&escaped);
        self.raw(&format!(
            ")\ncase ${name} in *X) {name}=${{{name}%X}} ;; *) {name}= bad=1 ;; esac\n"
        ));
    }

    fn begin(&mut self) {
        self.raw("printf '\\n%s:BEGIN %s\\n' \"$N\" \"$(uname -s 2>/dev/null)\"\n");
    }

    /// BEGIN with `uname` only where the shell may be a Windows one (Git for Windows, MSYS2 and
    /// Cygwin run bash, which sets `OSTYPE`; see [`super::detect_dialect_switch`]): a shell
    /// that says Linux, or sets neither `OSTYPE` nor `MSYSTEM` (dash, busybox, mksh), costs no
    /// process and prints `-`.
    fn begin_lean(&mut self) {
        self.raw(
            "case ${OSTYPE-}${MSYSTEM-} in ''|linux*) u=- ;; *) u=$(uname -s 2>/dev/null) ;; esac\n\
             printf '\\n%s:BEGIN %s\\n' \"$N\" \"$u\"\n",
        );
    }

    /// BEGIN without `uname` (a subshell and a process): for scripts sent once the host's
    /// dialect is settled, where nothing reads it.
    fn begin_settled(&mut self) {
        self.raw("printf '\\n%s:BEGIN -\\n' \"$N\"\n");
    }

    /// Prints END and closes the group (stdin of everything in it: `/dev/null`).
    fn end(mut self, rc: &str) -> Vec<u8> {
        self.raw(&format!(
            "printf '\\n%s:END {rc}\\n' \"$N\"\n}} </dev/null\n"
        ));
        self.0
    }
}

/// The list script: for each root a `ROOT` line, then an `F` line per transcript file, or an
/// `FX` line (path hex-encoded) when its path holds a byte a line cannot carry (see the wire
/// format in [`super`]).
pub fn list_script(nonce: &str, roots: &[RootSpec]) -> Vec<u8> {
    list_script_with(nonce, roots, None)
}

/// [`list_script`] with the listing tool forced instead of probed (tests, `doctor`).
pub fn list_script_with(nonce: &str, roots: &[RootSpec], mode: Option<ListMode>) -> Vec<u8> {
    let mut s = Script::new(nonce);
    list_body(&mut s, roots, mode, None, None);
    s.end("0")
}

/// What a listing reads along ([`list_reading_script`]): the whole of every file below a
/// subdir of at most `max_file` bytes, in blocks whose files add up to at most `block_cap`
/// bytes (a larger block is left out before it is read), the whole reply cut at `budget`
/// bytes before compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadAlong {
    pub max_file: u64,
    /// The largest file an `RF` block sends (the `gnu` mode: checked by the listing's sizes
    /// and one `stat` after the read, see [`list_reading_script`]); 0: none, every block is
    /// `RD`.
    pub small_file: u64,
    pub block_cap: u64,
    pub budget: u64,
}

/// [`list_script`], which also reads the small files it lists ([`crate::Host::list_reading`]):
/// where the listing is compressed and `stat -c` is the host's (the `gnu` and `statc` modes),
/// its GZ block holds a `<nonce>:RL` line, the listing's lines, and a `<nonce>:LE` line after
/// them, and one read block per `find -exec … {} +` of each root's subdirs (files of at most
/// `max_file` bytes whose path holds no LF or CR). In the `gnu` mode the walk that lists
/// also reads, and the blocks come among the listing's lines (before `LE`); in the `statc`
/// mode a second walk reads, and its blocks follow a `<nonce>:RD` line after `LE`. The whole
/// stream is cut at `budget` bytes: a block cut off answers nothing, and a listing without its
/// `LE` line was cut ([`super::ListReading::listing`] is then `None`). A block is one of:
///
/// ```text
/// RD <root index> <dirs> <files>       the root: the index of its ROOT line
/// <inode> <size> <mode in hex> ./<path>  per directory on the way (each of them), then per file
/// <the files' bytes, concatenated>
/// \n<nonce>:S2\n the same lines again, stat'ed after it, \n<nonce>:E\n
///
/// RF <root index> <dirs> <files>       the `gnu` mode's files of at most `small_file` bytes
/// <the files' bytes, concatenated>      cut at `block_cap` bytes
/// \n<nonce>:S2\n the lines as RD's, stat'ed after it, \n<nonce>:E\n
/// ```
///
/// The `find` walks from inside the root (entered by `cd -P`, checked against the listing's
/// own resolution) without following anything; one `stat` names every directory on the way to
/// the files and the files, by their paths below the root (`stat` does not follow the last
/// component: a directory swapped for a symlink is not a directory, a file swapped for one not
/// a regular file). Names reach `find`, `stat` and `head` only as `find`'s arguments to `sh -c`.
///
/// An `RD` block `stat`s before `head -q -c` sends the files and after; one whose files and
/// directories add up to more than `block_cap` is left out before anything is read. The
/// decoder answers a file only when both `stat`s agree byte for byte, every directory on its
/// way is one, it is a regular file, and the concatenation has exactly the first `stat`'s
/// sizes (the `S2` marker, which no file can spell without the nonce, ends it where they say).
///
/// An `RF` block has no `stat` before the read (on 10,000 files of 1.3 KiB, that `stat` and
/// the loop over its sizes were ~90 ms of a ~480 ms exec): its sizes before are the listing's,
/// from the `lstat` `find` took for each file's `F` line before it handed the file on. The
/// decoder answers its files only when every one is listed with the size the `stat` after the
/// read gives, the concatenation has exactly those sizes (so one cut at the cap answers
/// nothing), and the directories and files are as `RD`'s must be; a file not listed or of
/// another size refuses the whole block. What it cannot see: a file replaced by another of
/// the same size between `find`'s `lstat` and the `stat` after the read (there is no inode to
/// compare; the bytes sent are either version's, whole), and, as `RD`'s two `stat`s could
/// not either, a directory swapped for a symlink and back while `head` read.
pub fn list_reading_script(
    nonce: &str,
    roots: &[RootSpec],
    mode: Option<ListMode>,
    read: ReadAlong,
) -> Vec<u8> {
    let mut s = Script::new(nonce);
    list_body(&mut s, roots, mode, None, Some(read));
    s.end("0")
}

/// The find-and-read script ([`crate::Host::find_and_read`]): a listing of the files that may
/// be the session `id` names (top files as usual), then, when exactly one such file below a
/// subdir was found and its path fits an `F` line, a `HIT <path>` line and the read of `first`
/// of it as [`read_many_script`] reads one file (its `FILE`/`END-FILE` lines left out).
///
/// Where every root's harness says where a session named by an id lives
/// ([`clankie_model::Layout::id_globs`]), the files are found by globbing those patterns
/// (no walk of the root; see [`find_read_by_globs`]); a `hint` (a cursor's path of the
/// session's file) that is such a match is tried first. Otherwise every root is walked for the
/// paths that hold the id ([`find_read_by_walk`]).
pub fn find_read_script(
    nonce: &str,
    roots: &[RootSpec],
    id: &str,
    first: &FirstRead,
    hint: Option<&PathHint>,
) -> Vec<u8> {
    find_read_script_with(nonce, roots, id, first, hint, &[])
}

/// [`find_read_script`], and when no path below a subdir holds the id (by globs; the walk
/// reads none), `tops` of the top files each root lists: for each, a `TOP <root> <k> <name>`
/// line and its read as [`read_script`] reads a file (ERR, or META and its ranges, and `ERR
/// raced` after a swap; gzip-compressed where the read script's probe finds it), in a subshell
/// of its own so that a refusal ends that file's section only. Only files that are there,
/// regular and no symlink, below the root as it resolved for the listing; the name is the
/// listed one (a plain top file, or the database variable's file, which holds no LF or CR),
/// reaching the script as a quoted word or a variable's value.
pub fn find_read_script_with(
    nonce: &str,
    roots: &[RootSpec],
    id: &str,
    first: &FirstRead,
    hint: Option<&PathHint>,
    tops: &[crate::TopReads],
) -> Vec<u8> {
    if !crate::is_plain_id(id) {
        // Never reached from the driver (ids are validated); refused like an unsafe value.
        let mut s = Script::new(nonce);
        s.begin();
        s.raw("printf 'ERR unsafe\\n'\n");
        return s.end("1");
    }
    let globbed = roots.iter().all(|r| {
        let layout = r.harness.layout();
        layout.list.subdirs.is_empty() || !layout.id_globs.is_empty()
    });
    if globbed {
        find_read_by_globs(nonce, roots, id, first, hint, tops)
    } else {
        find_read_by_walk(nonce, roots, id, first)
    }
}

/// The usable part of a cursor's path hint for a root of `harness` and the session `id`: a
/// relative path of plain characters that one of the harness's id globs matches (so exactly a
/// file the glob would have found), else nothing. A hint is data from a cursor, which anyone
/// can write: this keeps `..`, absolute paths, quotes, `$`, newlines and anything the globs
/// would not find out of the script.
fn usable_hint<'h>(hint: Option<&'h PathHint>, harness: Harness, id: &str) -> Option<&'h [u8]> {
    let hint = hint.filter(|h| h.is_for(harness))?;
    let rel = std::str::from_utf8(&hint.rel).ok()?;
    let plain = rel.bytes().all(|b| {
        b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'.' | b'_' | b'-' | b'+' | b'/' | b'%' | b'@' | b'=' | b',' | b':'
            )
    });
    if !plain || check_relative_path(&hint.rel).is_err() || rel.starts_with('-') {
        return None;
    }
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: true,
    };
    harness
        .layout()
        .id_globs
        .iter()
        .filter_map(|g| glob::Pattern::new(&g.replace(ID_MARK, id)).ok())
        .any(|p| p.matches_with(rel, options))
        .then_some(&hint.rel[..])
}

/// [`find_read_script`] by globs: the roots' directories are resolved and named on `ROOTP`
/// lines as they are (no `od`), and below each the harness's id globs (or the hint) name the
/// candidates: regular files, no symlink on the way, no LF or CR in the name (such a name
/// means no read in one go). One `stat` lists them and the top files with their inodes; the
/// one match is read with the size and inode that `stat` gave (checked again after the read).
/// No tool is probed that the host usually has: `stat -c`, else `stat -f`, else `find
/// -printf`, else `ls`; `base64` when `command -v` finds it, else the probes of the read.
fn find_read_by_globs(
    nonce: &str,
    roots: &[RootSpec],
    id: &str,
    first: &FirstRead,
    hint: Option<&PathHint>,
    tops: &[crate::TopReads],
) -> Vec<u8> {
    let mut s = Script::new(nonce);
    // A carriage return as it is (inside quotes it is a plain character): no subshell.
    s.raw("CR='\r'\n");
    lean_encoder(&mut s);
    // The read is the script's last part and runs in its shell (no subshell): a refusal ends
    // the frame itself.
    s.raw(
        r#"fail() { printf 'ERR %s ' "$1"; hx "$P"; printf '\n\n%s:END 0\n' "$N"; exit 0; }
sl() { q=$1; while :; do case $q in */*) q=${q%/*}; [ -L "$q" ] && return 0 ;; *) return 1 ;; esac; done; }
fs() {
  o=$(stat -c '%i F %s %Y %n' "$@" 2>/dev/null)
  case $o in [0-9]*' F '[0-9]*) return 0 ;; esac
  o=$(stat -f '%i F %z %m %N' "$@" 2>/dev/null)
  case $o in [0-9]*' F '[0-9]*) return 0 ;; esac
  o=$(find "$@" -prune -printf '%i F %s %Ts %p\n' 2>/dev/null)
  case $o in [0-9]*' F '[0-9]*) return 0 ;; esac
  o=
  for f do
    s=$(ls -lni "$f" 2>/dev/null) && t=$(date -r "$f" +%s 2>/dev/null) || continue
    set -- $s
    case $6 in ''|*[!0-9]*) continue ;; esac
    o="$o${o:+$NL}$1 F $6 $t $f"
  done
}
gl() {
  h=$1 x=$2 hn=$3; shift 3
  eval "r=\$R$x rv=\${R$x:-\$D$x}"
  case $r in /) rs= ;; *) rs=$r ;; esac
  es=
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    if [ -n "$r" ] && [ -d "$rs/$1" ] && [ ! -L "$rs/$1" ]; then es=1; fi
    shift
  done
  shift
  et=
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    if [ -n "$r" ] && [ -f "$rs/$1" ] && [ ! -L "$rs/$1" ]; then et="$et$NL./$1"; fi
    shift
  done
  shift
  if [ -n "$es$et" ]; then ex=1; else ex=0; fi
  [ -n "$r" ] || ex=0
  case $rv in
  *"$NL"*|*"$CR"*) printf 'ROOT %s %s ' "$h" "$ex"; hx "$rv"; printf '\n' ;;
  *) printf 'ROOTP %s %s %s\n' "$h" "$ex" "$rv" ;;
  esac
  [ -n "$r" ] || return 0
  [ "$ex" = 1 ] && cd -P -- "$r" 2>/dev/null || return 0
  gm=
  if [ -n "$es" ] && [ -n "$hn" ] && [ -f "$hn" ] && [ ! -L "$hn" ] && ! sl "$hn"; then
    gm=$NL./$hn
  elif [ -n "$es" ]; then
    # yash cannot carry a name byte that is invalid in its locale (see the module doc): its
    # globs leave such names out unseen, so a match it saw may not be the only one.
    [ -z "${YASH_VERSION-}" ] || fx=1
    for gp do
      set +f
      for f in $gp; do
        [ -f "$f" ] && [ ! -L "$f" ] || continue
        sl "$f" && continue
        case $f in *"$NL"*|*"$CR"*) fx=1; continue ;; esac
        gm=$gm$NL./$f
      done
      set -f
    done
  fi
  [ -n "$gm$et" ] || return 0
  oi=$IFS; IFS=$NL
  set -- $et $gm
  IFS=$oi
  fs "$@"
  oi=$IFS; IFS=$NL
  for l in $o; do
    case $l in [0-9]*' F '[0-9]*) ;; *) continue ;; esac
    li=${l%% *} l=${l#* }
    printf '%s\n' "$l"
    l=${l#F }; lz=${l%% *}; l=${l#* }; l=${l#* }
    case $gm$NL in *"$NL$l$NL"*) nm=$((nm + 1)) hr=$r hp=${l#./} hi=$li hz=$lz ;; esac
  done
  IFS=$oi
}
nm=0 fx= hp=
"#,
    );

    // Per root: `gl HARNESS INDEX HINT SUBDIR… -- TOP-FILE… -- PATTERN…`.
    let mut calls = Vec::new();
    for (i, spec) in roots.iter().enumerate() {
        let db_env = root_dir(&mut s, i, spec);
        let layout = spec.harness.layout();
        let mut head = format!("gl {} {i} ", list_word(spec.harness.name()));
        match usable_hint(hint, spec.harness, id) {
            Some(rel) => head.push_str(&String::from_utf8(quote(rel)).expect("a plain hint")),
            None => head.push_str("''"),
        }
        head.push_str(&plain_words(layout.list.subdirs, "subdir"));
        head.push_str(" --");
        let tops = plain_words(layout.list.top_files, "top file");
        // No two patterns of a harness match one path (their depths or endings differ).
        let mut tail = String::from(" --");
        for glob in layout.id_globs {
            let pattern = glob.replace(ID_MARK, id);
            assert!(
                pattern
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"*/._-+".contains(&b)),
                "id glob `{glob}` must hold only plain characters and `*`"
            );
            tail.push(' ');
            tail.push_str(&list_word(&pattern));
        }
        calls.push(if db_env.is_some() {
            // `OPENCODE_DB` names the database: it and its WAL are the only top files.
            format!(
                "if [ -n \"$T{i}\" ]; then {head} \"$T{i}\" \"$T{i}-wal\"{tail}; else {head}{tops}{tail}; fi"
            )
        } else {
            format!("{head}{tops}{tail}")
        });
    }
    // Each root resolved: after `cd -P`, `$PWD` is the physical directory (POSIX; no subshell
    // for `pwd -P`), and the shell goes back where it started for the next (a root may be
    // relative). Its ROOT line then names it as it is (`ROOTP`) unless it holds LF or CR (then
    // hex-encoded, by `od`).
    s.raw("W0=$PWD\n");
    for i in 0..roots.len() {
        s.raw(&format!(
            "R{i}=; if [ -d \"$D{i}\" ] && cd -P -- \"$D{i}\" 2>/dev/null; then R{i}=$PWD; cd -- \"$W0\" 2>/dev/null; fi\n"
        ));
    }
    s.begin_lean();
    s.raw("[ -z \"${bad:-}\" ] || { printf 'ERR unsafe\\n\\n%s:END 1\\n' \"$N\"; exit 0; }\n");
    for call in calls {
        s.raw(&call);
        s.raw("\n");
    }
    s.raw(
        r#"if [ "$nm" = 1 ] && [ -z "$fx" ]; then
printf 'HIT %s\n' "$hp"
R=$hr D= B=$hp i=$hi z=$hz
case $hp in */*) D=${hp%/*} B=${hp##*/} ;; esac
P=$R/$hp
"#,
    );
    read_file_body(&mut s, first, true);
    s.raw("fi\n");
    top_reads(&mut s, roots, tops);
    s.end("0")
}

/// The reads of `tops` of [`find_read_script_with`], after the globs' listing (`$R<i>`: root
/// `i` resolved, empty when it did not; `$nm`: the matches below the subdirs).
fn top_reads(s: &mut Script, roots: &[RootSpec], tops: &[crate::TopReads]) {
    let mut calls = String::new();
    for (i, spec) in roots.iter().enumerate() {
        let Some(top) = tops.iter().find(|t| t.harness == spec.harness) else {
            continue;
        };
        let layout = spec.harness.layout();
        let mut plain = String::new();
        let mut by_env = String::new();
        for (k, ranges) in top.ranges.iter().enumerate() {
            let body = {
                let mut b = Script(Vec::new());
                read_file_body(&mut b, &FirstRead::Ranges(ranges.clone()), false);
                String::from_utf8(b.0).expect("the read's text is ASCII")
            };
            let read = format!("then (\n{body})\nfi\n");
            if let Some(name) = layout.list.top_files.get(k) {
                plain.push_str(&format!("if tq {i} {k} {}; {read}", list_word(name)));
            }
            let suffix = ["", "-wal"].get(k);
            if let Some(suffix) = suffix {
                by_env.push_str(&format!("if tq {i} {k} \"$T{i}{suffix}\"; {read}"));
            }
        }
        // `OPENCODE_DB` names the database: it and its WAL are the root's top files.
        if spec.harness.db_env().is_some() && spec.dir.is_none() {
            calls.push_str(&format!(
                "if [ -n \"$T{i}\" ]; then\n{by_env}else\n{plain}fi\n"
            ));
        } else {
            calls.push_str(&plain);
        }
    }
    if calls.is_empty() {
        return;
    }
    // `tq ROOT K NAME`: the top file `NAME` of root `ROOT` is there to be read; sets what the
    // read's body uses, and names it. A refusal inside the subshell ends its section.
    s.raw(
        r#"tq() {
  eval "R=\$R$1"; D= B=$3
  [ -n "$R" ] && [ -f "$R/$B" ] && [ ! -L "$R/$B" ] || return 1
  case $R in /) P=/$B ;; *) P=$R/$B ;; esac
  printf 'TOP %s %s %s\n' "$1" "$2" "$B"
}
fail() { printf 'ERR %s ' "$1"; hx "$P"; printf '\n'; exit 0; }
if [ "$nm" = 0 ]; then
"#,
    );
    // A database's first pages are mostly empty: through gzip where it answers (as a read
    // batch's), a fraction of their size on the wire.
    s.raw(GZIP_PROBE);
    s.raw(&calls);
    s.raw("fi\n");
}

/// [`find_read_script`] by walking every root: a listing of the files whose path below a root
/// holds `id` (top files as usual), then, when exactly one file below a subdir has the id in its
/// name (else exactly one below a subdir matched) and its path fits an `F` line, the `HIT` line
/// and the read.
fn find_read_by_walk(nonce: &str, roots: &[RootSpec], id: &str, first: &FirstRead) -> Vec<u8> {
    let mut s = Script::new(nonce);
    list_body(&mut s, roots, None, Some(id), None);
    // After the listing: `walk` uses `$e` for itself.
    read_prelude(&mut s, None, false);
    s.raw(
        r#"fail() { printf 'ERR %s ' "$1"; hx "$P"; printf '\n'; exit 0; }
"#,
    );
    // The one match: the one file whose name holds the id, else the one path that does (a
    // subagent's path holds its parent's id too). A name only an FX line carries (or one the
    // shell could not carry) means no read in one go.
    s.raw(
        r#"if [ "$nn" = 1 ]; then hr=$nr hp=$np; elif [ "$nm" != 1 ]; then hp=; fi
if [ -z "$fx" ] && [ -n "$hp" ]; then
printf 'HIT %s\n' "$hp"
(
R=$hr D= B=$hp
case $hp in */*) D=${hp%/*} B=${hp##*/} ;; esac
P=$R/$hp
"#,
    );
    read_file_body(&mut s, first, false);
    s.raw(")\nfi\n");
    s.end("0")
}

/// The list script's body after [`Script::new`], up to its END: probes, `walk`, one walk per
/// root. With `narrow`, only paths holding it are found below the subdirs, and the one match
/// (if exactly one) is left in `$hr` (root) and `$hp` (path below it).
fn list_body(
    s: &mut Script,
    roots: &[RootSpec],
    mode: Option<ListMode>,
    narrow: Option<&str>,
    read: Option<ReadAlong>,
) {
    s.raw("px=");
    match narrow {
        Some(id) => s.word(format!("*{id}*").as_bytes()),
        None => s.word(b"*"),
    }
    s.raw("\nnw=");
    s.word(if narrow.is_some() { b"1" } else { b"" });
    s.raw("\nnm=0 hr= hp= nn=0 nr= np= fx= rm= fo= ri=-1\n");
    s.raw("m=");
    s.word(mode.map(ListMode::wire).unwrap_or_default().as_bytes());
    // The probe asks for the very `%Ts` the listing uses: toybox `find` has `-printf` but
    // spells the time `%T@`, and refuses `%Ts` with exit 1.
    s.raw(
        r#"
if [ -z "$m" ]; then
  if find /dev/null -prune -printf '%Ts' >/dev/null 2>&1; then m=gnu
  elif [ "$(stat -c X /dev/null 2>/dev/null)" = X ]; then m=statc
  elif [ "$(stat -f X /dev/null 2>/dev/null)" = X ]; then m=statf
  else m=ls; fi
fi
CR=$(printf '\r')
"#,
    );
    // The per-batch script, run by `find -exec sh -c "$B" sh MODE FILE… +` (and for a top
    // file in the ls mode). Every byte but `/` and NUL is a legal name byte, and a path holding
    // a newline or a carriage return cannot travel on an `F` line: such a path gets its size
    // and mtime alone (`sz`) and goes out hex-encoded on an `FX` line. The rest go to one
    // `stat` (or `find -printf`) for the batch, or to `ls -ln` + `date -r` one by one in the
    // ls mode. One `-exec … {} +` per `find`: busybox `find` mishandles two in one expression.
    // `set -f` because `$s` is split into fields and a name may hold glob characters; a file
    // that vanished or does not stat is left out, as `find` does, and the `case` in `sz` keeps
    // a failed probe from printing a line the decoder would refuse.
    s.raw("B=");
    s.word(
        br#"set -f
NL='
'
CR=$(printf '\r')
m=$1; shift; n=$#
sz() {
  case $m in
  gnu) s=$(find "$1" -prune -printf '%s %Ts' 2>/dev/null) ;;
  statc) s=$(stat -c '%s %Y' "$1" 2>/dev/null) ;;
  statf) s=$(stat -f '%z %m' "$1" 2>/dev/null) ;;
  *) s=$(ls -ln "$1" 2>/dev/null) && t=$(date -r "$1" +%s 2>/dev/null) || return 1; set -- $s; s="$5 $t" ;;
  esac
  case $s in [0-9]*" "*[0-9]) ;; *) return 1 ;; esac
}
for f do
  case $f in
  *"$NL"*|*"$CR"*) if sz "$f"; then printf 'FX %s ' "$s"; printf '%s' $(printf '%s' "$f" | { od -An -v -tx1 || xxd -p; } 2>/dev/null); printf '\n'; fi ;;
  *) set -- "$@" "$f" ;;
  esac
done
shift "$n"
[ $# -gt 0 ] || exit 0
case $m in
gnu) find "$@" -prune -printf 'F %s %Ts %p\n' ;;
statc) stat -c 'F %s %Y %n' "$@" ;;
statf) stat -f 'F %z %m %N' "$@" ;;
*) for f do sz "$f" && printf 'F %s %s\n' "$s" "$f"; done ;;
esac 2>/dev/null"#,
    );
    // walk HARNESS DIR DEPTH-PATTERN SUBDIR… -- TOP-FILE… -- NAME-PATTERN…. A root that does not resolve is
    // reported as given; below a resolved root nothing is followed (`find` without -L/-H, run
    // from inside the root so that every printed path is `./<subdir>/…`). Subdirs are plain
    // names (checked by the generator), so `$es` splits safely under `set -f`; top files may be
    // a name from `OPENCODE_DB`, so `$et` is newline-separated and split on newlines; the name
    // patterns become `-name P1 -o -name P2 …` in the positional parameters (the `for` list is
    // expanded before `set --` changes them).
    s.raw(
        r#"
W0=$PWD
rp() {
  case $2 in
  ''|*"$NL"*|*"$CR"*) printf 'ROOT %s ' "$1"; hx "$2"; printf '\n' ;;
  *) printf 'ROOTP %s %s\n' "$1" "$2" ;;
  esac
}
walk() {
  h=$1 d=$2 dp=$3 ri=$((ri + 1)); shift 3
  # `cd -P` sets `$PWD` to the physical directory (POSIX), newline-ended names included: no
  # subshell for `pwd -P`. The shell goes back where it started for the next root (one may be
  # relative).
  r=
  if cd -P -- "$d" 2>/dev/null; then r=$PWD; cd -- "$W0" 2>/dev/null; fi
  case $r in /) rs= ;; *) rs=$r ;; esac
  es=
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    if [ -n "$r" ] && [ -d "$rs/$1" ] && [ ! -L "$rs/$1" ]; then es="$es $1"; fi
    shift
  done
  shift
  et=
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    if [ -n "$r" ] && [ -f "$rs/$1" ] && [ ! -L "$rs/$1" ]; then et="$et$NL$1"; fi
    shift
  done
  shift
  if [ -z "$r" ]; then [ -n "$rm" ] || rp "$h 0" "$d"; return 0; fi
  if [ -n "$es$et" ]; then e=1; else e=0; fi
  [ -n "$rm" ] || rp "$h $e" "$r"
  [ "$e" = 1 ] || return 0
  n=$#
  if [ "$n" -gt 0 ]; then
    for a do set -- "$@" -o -name "$a"; done
    shift "$n"; shift
  fi
  if [ -n "$rm" ]; then wr "$@"; return 0; fi
  if [ -z "$nw" ]; then wf "$@"; return 0; fi
  # Narrowed: the matches are kept to count them; the one below a subdir is remembered.
  o=$(wf "$@"; echo X)
  # A shell that cannot carry a byte of a name drops the rest (yash, see the module doc): the
  # sentinel is gone, and the files are listed again directly, with no read in one go.
  case $o in *X) o=${o%X} ;; *) wf "$@"; fx=1; return 0 ;; esac
  printf '%s' "$o"
  oi=$IFS; IFS=$NL
  for l in $o; do
    case $l in
    'F '*) l=${l#F }; l=${l#* }; l=${l#* }; l=${l#./}
      case $l in */*)
        nm=$((nm + 1)) hr=$r hp=$l
        case ${l##*/} in $px) nn=$((nn + 1)) nr=$r np=$l ;; esac ;;
      esac ;;
    'FX '*) fx=1 ;;
    esac
  done
  IFS=$oi
}
wf() {
  (
    cd -P -- "$r" || exit 0
    oi=$IFS; IFS=$NL
    for tf in $et; do
    case $m in
    gnu) find "./$tf" -prune -type f -printf 'F %s %Ts %p\n' ;;
    statc) stat -c 'F %s %Y %n' "./$tf" ;;
    statf) stat -f 'F %z %m %N' "./$tf" ;;
    *) sh -c "$B" sh "$m" "./$tf" ;;
    esac 2>/dev/null
    done
    IFS=$oi
    for sd in $es; do
    case $m in
    gnu)
      # Reading along (`$fo`, a first `check`): the same walk sends the small files in read
      # blocks (`$RF` under `$RT` bytes, else `$RD`; see [`list_reading_script`]) right after
      # their `F` lines (GNU `find` flushes its own output before it runs a command), from the
      # root as `walk` resolved it.
      if [ -n "$fo" ] && [ "$PWD" = "$r" ]; then
        find "./$sd" -path "$dp" -prune -o -type f -path "$px" \( "$@" \) \( \( -path "*$NL*" -o -path "*$CR*" \) -exec sh -c "$B" sh gnu {} + -o -printf 'F %s %Ts %p\n' \( -size "-${RT}c" -exec sh -c "$RF" "$ri" "$N" "$RM" "$RC" {} + -o -size "-${RS}c" -exec sh -c "$RD" "$ri" "$N" "$RM" "$RC" {} + \) \)
      else
        find "./$sd" -path "$dp" -prune -o -type f -path "$px" \( "$@" \) \( \( -path "*$NL*" -o -path "*$CR*" \) -exec sh -c "$B" sh gnu {} + -o -printf 'F %s %Ts %p\n' \)
      fi ;;
    *) find "./$sd" -path "$dp" -prune -o -type f -path "$px" \( "$@" \) -exec sh -c "$B" sh "$m" {} + ;;
    esac 2>/dev/null
    done
  )
}
"#,
    );
    // Read along (a first `check`): `wr` reads the small files of the subdirs of the root
    // `walk` resolved, from inside it, by `find -exec sh -c "$RD" <root index> <nonce> <max>
    // <block cap> {} +`. A block whose files add up to more than the block cap sends nothing
    // (it would take too much of the budget, read for nothing): its files are read by batches.
    // The files go out through `head -q -c <max>` rather than `cat`: GNU `cat` maps and
    // unmaps a 128 KiB buffer per file, which costs 10,000 small files three times the system
    // time (0.22 s against 0.09 s here), and no file sends more than its cap.
    // `$RD` and `$RF` (the `gnu` mode's blocks of files under `$RT` bytes) are built from the
    // same pieces (see [`BLOCK_DIRS`]); see [`list_reading_script`] for what each sends.
    if let Some(read) = read {
        s.raw("RD=");
        s.word(
            [BLOCK_DIRS, BLOCK_FIRST_STAT, BLOCK_SECOND_STAT]
                .concat()
                .as_bytes(),
        );
        s.raw("\nRF=");
        s.word(
            [BLOCK_DIRS, BLOCK_SMALL, BLOCK_SECOND_STAT]
                .concat()
                .as_bytes(),
        );
        s.raw(&format!(
            r#"
wr() {{
  (
    cd -P -- "$r" 2>/dev/null || exit 0
    [ "$PWD" = "$r" ] || exit 0
    for sd in $es; do
      find "./$sd" -path "$dp" -prune -o -type f -path "$px" \( "$@" \) -size "-${{RS}}c" ! -path "*$NL*" ! -path "*$CR*" -exec sh -c "$RD" "$ri" "$N" "$RM" "$RC" {{}} +
    done 2>/dev/null
  )
}}
RB={} RM={} RS={} RT={} RC={}
"#,
            read.budget,
            read.max_file,
            read.max_file + 1,
            small_file_bound(read),
            read.block_cap
        ));
    }
    let mut calls = Vec::new();
    for (i, spec) in roots.iter().enumerate() {
        let var = format!("D{i}");
        let db_env = root_dir(s, i, spec);
        let list = spec.harness.list_spec();
        // `./<subdir>` has 1 slash; an entry of a directory `d` levels below it has `d + 1`
        // more. Directories down to `max_depth` are read, so entries with more slashes than
        // that are pruned unseen.
        let slashes = 1 + list.max_depth as usize + 2;
        let depth_pattern = vec!["*"; slashes + 1].join("/");
        let mut call = format!("walk {} \"${var}\" ", list_word(spec.harness.name()));
        call.push_str(&list_word(&depth_pattern));
        call.push_str(&plain_words(list.subdirs, "subdir"));
        call.push_str(" --");
        let tops = plain_words(list.top_files, "top file");
        let mut tail = String::from(" --");
        for suffix in list.suffixes {
            let pattern = match suffix.strip_prefix('/') {
                Some(whole) => glob_escape(whole),
                None => format!("*{}", glob_escape(suffix)),
            };
            tail.push(' ');
            tail.push_str(&list_word(&pattern));
        }
        if db_env.is_some() {
            calls.push(format!(
                "if [ -n \"$T{i}\" ]; then {call} \"$T{i}\" \"$T{i}-wal\"{tail}; else {call}{tops}{tail}; fi"
            ));
        } else {
            calls.push(format!("{call}{tops}{tail}"));
        }
    }
    if read.is_some() {
        // A first `check`'s listing: its BEGIN line serves the dialect's detection alone (the
        // plain listing's, `hosts --check`, shows the host's `uname`).
        s.begin_lean();
    } else {
        s.begin();
    }
    s.raw("[ -z \"${bad:-}\" ] || { printf 'ERR unsafe\\n\\n%s:END 1\\n' \"$N\"; exit 0; }\n");
    s.raw("printf 'MODE %s\\n' \"$m\"\n");
    // A full listing goes through gzip where it answers (one GZ block: about 80 bytes a session
    // shrink several times). A narrowed one stays plain: it is small, and `walk` must set the
    // match's variables in this shell, not in a pipeline's subshell.
    let compress = narrow.is_none() && !calls.is_empty();
    if compress {
        s.raw("la() {\n");
    }
    for call in calls {
        s.raw(&call);
        s.raw("\n");
    }
    if compress {
        s.raw("}\ne=\n");
        s.raw(LIST_GZIP_PROBE);
        if read.is_some() {
            // A `<nonce>:RL` line, the listing, and `<nonce>:LE` once it is whole. Where `find
            // -printf` answers (`gnu`), the same walk reads: the read blocks come among the
            // listing's lines. With `stat -c` alone (`statc`: busybox `find` takes one `-exec … +`
            // at most), a second walk's blocks follow a `<nonce>:RD` line. The stream is cut at
            // the budget (`head -c`: GNU, busybox and toybox, which both modes imply); the
            // decoder sees where.
            s.raw(
                "if [ \"$e\" = gz ]; then printf 'GZ\\n'; case $m in gnu|statc) { printf '%s:RL\\n' \"$N\"; [ \"$m\" = statc ] || fo=1; la; printf '\\n%s:LE\\n' \"$N\"; if [ \"$m\" = statc ]; then printf '%s:RD\\n' \"$N\"; rm=1 ri=-1; la; fi; } | head -c \"$RB\" ;; *) la ;; esac | gzip -1 -c | base64; printf '\\nEND-GZ\\n'; else la; fi\n",
            );
        } else {
            s.raw(
                "if [ \"$e\" = gz ]; then printf 'GZ\\n'; la | gzip -1 -c | base64; printf '\\nEND-GZ\\n'; else la; fi\n",
            );
        }
    }
}

/// The start of both read blocks' scripts (`$RD`, `$RF`), run as `sh -c SCRIPT <root index>
/// <nonce> <max> <block cap> FILE…`: gathers the directories on the way to the files into
/// `$ds` and counts them in `$nd` (a directory is looked at when it differs from the last
/// file's, then up to one seen already), and leaves `IFS` a newline: `$ds` is split on
/// newlines alone (no path here holds one), and `set -f` keeps its glob characters.
const BLOCK_DIRS: &str = r#"set -f
NL='
'
k=$0 n=$1 m=$2 c=$3; shift 3
pd= ds=$NL nd=0
for f do
  d=${f%/*}
  [ "$d" = "$pd" ] && continue
  pd=$d
  while :; do
    case $d in */*) ;; *) break ;; esac
    case $ds in *"$NL$d$NL"*) break ;; esac
    ds=$ds$d$NL nd=$((nd + 1)); d=${d%/*}
  done
done
IFS=$NL
"#;

/// The `RD` block's middle: the first `stat` of the directories and the files, its sizes added
/// up against the block cap (over it, the block sends nothing), the header and that `stat`'s
/// lines, the files.
const BLOCK_FIRST_STAT: &str = r#"s1=$(stat -c '%i %s %f %n' $ds "$@" 2>/dev/null)
t=0
for l in $s1; do
  l=${l#* }; l=${l%% *}
  case $l in ''|*[!0-9]*) l=$c ;; esac
  t=$((t + l))
  [ "$t" -le "$c" ] || exit 0
done
printf 'RD %s %s %s\n%s\n' "$k" "$nd" "$#" "$s1"
head -q -c "$m" "$@" 2>/dev/null
"#;

/// The `RF` block's middle: the header and the files, no `stat` before them. The block cap is
/// a guard here, not a check: `find`'s `-exec … +` hands a block about 128 KiB of paths, so
/// small files stay far under it in any real layout, and a block cut at it does not add up to
/// its sizes (the decoder refuses it).
const BLOCK_SMALL: &str = r#"printf 'RF %s %s %s\n' "$k" "$nd" "$#"
head -q -c "$m" "$@" 2>/dev/null | head -c "$c"
"#;

/// The end of both blocks: the `stat` after the read, between the nonce's markers.
const BLOCK_SECOND_STAT: &str = r#"s2=$(stat -c '%i %s %f %n' $ds "$@" 2>/dev/null)
printf '\n%s:S2\n%s\n%s:E\n' "$n" "$s2" "$n""#;

/// `$RT`: `find -size -${RT}c` picks the files an `RF` block sends (at most
/// [`ReadAlong::small_file`] bytes, and never over `max_file`); 0 picks none.
fn small_file_bound(read: ReadAlong) -> u64 {
    match read.small_file {
        0 => 0,
        small => small.min(read.max_file) + 1,
    }
}

/// Assigns root `i`'s directory to `D<i>` (as given, else the harness's default home on the
/// host), and for a default root of a harness with a database variable (`OPENCODE_DB`) its
/// file name to `T<i>` (then `D<i>` is its directory). Returns that variable, if any.
fn root_dir(s: &mut Script, i: usize, spec: &RootSpec) -> Option<&'static str> {
    let var = format!("D{i}");
    let home = spec.harness.default_home();
    match &spec.dir {
        // Given explicitly: used as bytes, never expanded by the shell (a plain one as a
        // quoted word, which costs no subshell).
        Some(dir) => assign_name(s, &var, dir),
        None => {
            // `$VAR` when set and non-empty, else `$HOME/<rel>` (`/` without a HOME),
            // joined the way `Path::join` does.
            let env = home.env_var.unwrap_or("");
            debug_assert!(env.is_empty() || is_name(env));
            assign_name(s, "H", home.home_relative.as_bytes());
            if env.is_empty() {
                s.raw(&format!("{var}=\n"));
            } else {
                s.raw(&format!("{var}=${{{env}:-}}\n"));
            }
            s.raw(&format!(
                "if [ -z \"${var}\" ]; then h=${{HOME:-/}}; case $h in */) {var}=$h$H ;; *) {var}=$h/$H ;; esac; fi\n"
            ));
            if !env.is_empty() && !home.env_relative.is_empty() {
                // The variable names a directory above the home (`$GEMINI_CLI_HOME/.gemini`).
                assign_name(s, "H", home.env_relative.as_bytes());
                s.raw(&format!(
                    "if [ -n \"${{{env}:-}}\" ]; then case ${var} in */) {var}=${var}$H ;; *) {var}=${var}/$H ;; esac; fi\n"
                ));
            }
        }
    }
    // The harness's database variable (`OPENCODE_DB`), for a default root: `T<i>` is the
    // file name and `D<i>` its directory, as `model::db_override` puts them.
    let db_env = spec.harness.db_env().filter(|_| spec.dir.is_none());
    if let Some(env) = db_env {
        debug_assert!(is_name(env));
        s.raw(&format!(
            "T{i}=\nif [ -n \"${{{env}:-}}\" ] && [ \"${env}\" != :memory: ]; then\n\
             case ${env} in /*) p=${env} ;; *) case ${var} in */) p=${var}${env} ;; *) p=${var}/${env} ;; esac ;; esac\n\
             t=${{p##*/}}\n\
             case $t in ''|.|..|*\"$NL\"*|*\"$CR\"*) ;; *) T{i}=$t {var}=${{p%/*}}; [ -n \"${var}\" ] || {var}=/ ;; esac\n\
             fi\n"
        ));
    }
    db_env
}

/// The read script: confinement checks (an `ERR` line on refusal), a `META` line with the
/// file's true size and the encoder, then each range's aligned block between `DATA i` and
/// `END-DATA i`.
pub fn read_script(nonce: &str, file: &FileRef, ranges: &[ByteRange]) -> Vec<u8> {
    read_script_with(nonce, file, ranges, None)
}

/// [`read_script`] with the encoder forced instead of probed (tests, `doctor`).
pub fn read_script_with(
    nonce: &str,
    file: &FileRef,
    ranges: &[ByteRange],
    encoder: Option<Encoder>,
) -> Vec<u8> {
    let mut s = Script::new(nonce);
    let (dir, base) = split_rel(&file.rel);
    let mut path = file.root.clone();
    path.push(b'/');
    path.extend_from_slice(&file.rel);
    s.assign("P", &path);
    // Refusals the client can decide alone still travel as the same ERR lines, so that every
    // caller handles one error path.
    let refusal = refusal(file, ranges);
    s.raw(
        r#"fail() { printf 'ERR %s ' "$1"; hx "$P"; printf '\n'; printf '\n%s:END 1\n' "$N"; exit 0; }
"#,
    );
    if let Some(code) = refusal {
        s.begin();
        s.raw(&format!("fail {code}\n"));
        return s.end("1");
    }
    s.assign("R", &file.root);
    s.assign("D", dir);
    s.assign("B", base);
    read_prelude(&mut s, encoder, false);
    // An encoder is forced by a host that has read before: its dialect is settled.
    match encoder {
        Some(_) => s.begin_settled(),
        None => s.begin(),
    }
    s.raw("[ -z \"${bad:-}\" ] || fail unsafe\n");
    read_file_body(&mut s, &FirstRead::Ranges(ranges.to_vec()), false);
    s.end("0")
}

/// The batched read script ([`crate::Host::read_many`]): for each file `i`, a `FILE i` line,
/// then what [`read_script`] prints for it (an `ERR` line, or META and its ranges, and `ERR
/// raced` after a swap), then `END-FILE i`; or, for the small files of a directory read whole,
/// one `CAT` block (below). The files of one directory are read together, in the order of their
/// first appearance (`FILE` lines are numbered, not ordered): the root and the directory are
/// resolved and checked once (`cd -P` and `$PWD`, as for one file). A file read by its ranges
/// then costs its own checks (shell builtins), `ls` before and after, and a `dd` per range,
/// all into one encoder (`DATA 0-<last>`, as [`emit_ranges`] merges them) when every range but
/// the last lies whole below the file's end, else each into its own (the database's scattered
/// pages: one encoder for a few hundred ranges instead of one each); a refusal ends that file's
/// section only.
///
/// A file whose ranges start at 0 and reach its end ([`super::whole_file_cap`]: what `check`
/// asks of a small session, whose head and tail are the whole file) is read whole with the
/// other such files of its root (every directory of it in the batch), in a constant number of
/// processes for all of them: one `stat` of their inodes, sizes and modes (each directory on the
/// way named first: it must still be a directory, not a symlink), one `cat … | encoder` of those
/// no larger than their cap, one `stat` again, all from the root by their paths below it. Each
/// directory is checked (physically exactly below the root) when its files join, just before the
/// first `stat`, and again after the read: a directory moved in between makes every file of the
/// block be read again, each from inside its own directory. (A directory swapped for a link and
/// back while `cat` runs is not seen, as a file's own name swapped and back while `dd` runs is
/// not: see docs/shells.md.) Where no `stat` answers (or it does not answer for every file) they
/// are read one by one after all. With `encoder` named (a host whose listing came compressed
/// names [`Encoder::Gzip`]) nothing is probed and BEGIN carries no `uname`. See [`super`] for
/// the `CAT` block, and [`read_many_script_with`].
pub fn read_many_script(
    nonce: &str,
    reads: &[(FileRef, Vec<ByteRange>)],
    encoder: Option<Encoder>,
) -> Vec<u8> {
    read_many_script_with(nonce, reads, encoder, true)
}

/// [`read_many_script`], with `whole` false reading every file by its ranges (the way a batch
/// is read again when its `CAT` block says that a file changed while it was read).
pub fn read_many_script_with(
    nonce: &str,
    reads: &[(FileRef, Vec<ByteRange>)],
    encoder: Option<Encoder>,
    whole: bool,
) -> Vec<u8> {
    let mut s = Script::new(nonce);
    read_prelude(&mut s, encoder, true);
    perl_probe(&mut s);
    s.raw(
        r#"fl() { printf 'ERR %s ' "$1"; hx "$P"; printf '\n'; }
ck() {
  [ -z "$bad" ] || { fl unsafe; return 1; }
  [ -z "$g" ] || { fl "$g"; return 1; }
  p=./$B
  [ -L "$p" ] && { fl symlink; return 1; }
  [ -e "$p" ] || { fl missing; return 1; }
  [ -f "$p" ] || { fl notfile; return 1; }
  [ -r "$p" ] || { fl unreadable; return 1; }
  s=$(ls -lni "$p" 2>/dev/null) || { fl nosize; return 1; }
  set -- $s
  i=$1 z=$6
  case $z in '' | *[!0-9]*) fl nosize; return 1 ;; esac
  printf 'META size=%s enc=%s\n' "$z" "$e"
}
af() {
  [ -L "$p" ] && { fl raced; return 0; }
  s=$(ls -lni "$p" 2>/dev/null) || { fl raced; return 0; }
  set -- $s
  [ "$1" = "$i" ] || fl raced
}
mw() {
  while [ $# -gt 4 ]; do [ $((($3 + $4) * $2)) -le "$z" ] || return 1; shift 4; done
}
ms() {
  if [ -n "$hp" ]; then
    PERL5OPT= PERL5LIB= PERLLIB= PERLIO= perl -e "$PM" -- "$p" "$z" "$@"
    return
  fi
  while [ $# -gt 4 ]; do
    [ "$4" -gt 0 ] && dd if="$p" bs="$2" skip="$3" count="$4" 2>/dev/null
    shift 4
  done
  if [ "$4" -gt 0 ] && [ "$1" -lt "$z" ]; then dd if="$p" bs="$2" skip="$3" count="$4" 2>/dev/null; fi
}
pf() {
  pn=$1; shift
  printf 'FILE %s\n' "$pn"
  case $D in '') P=$R/$B ;; *) P=$R/$D/$B ;; esac
  if ck; then
    if [ $# -gt 4 ] && mw "$@"; then
      pl=$(($# / 4 - 1))
      printf 'DATA 0-%s\n' "$pl"
      ms "$@" | enc
      printf '\nEND-DATA 0-%s\n' "$pl"
    else
      pk=0
      while [ $# -ge 4 ]; do rg "$pk" "$1" "$2" "$3" "$4"; pk=$((pk + 1)); shift 4; done
    fi
    af
  fi
  printf 'END-FILE %s\n' "$pn"
}
"#,
    );
    let candidates: Vec<Option<u64>> = reads
        .iter()
        .map(|(file, ranges)| {
            whole
                .then(|| super::whole_file_cap(ranges))
                .flatten()
                .filter(|_| refusal(file, ranges).is_none())
        })
        .collect();
    // `gd` enters directory `$D` of the current root and checks that it is physically exactly
    // `<root>/<dir>` (`$g`: the verdict, an ERR code; empty when it is), as `read_script` checks
    // one file's directory. `cd -P` sets `$PWD` to the physical directory it entered (POSIX;
    // dash, bash, busybox, mksh, posh, yash and zsh do, newline-ended names included): the
    // `$(pwd -P)` subshell of `read_script` would cost a process per directory, twice.
    s.raw(
        r#"gd() {
  g=$gr
  if [ -z "$g" ]; then
    case $rr in /) rb= ;; *) rb=$rr ;; esac
    if [ -n "$D" ]; then w="$rb/$D"; cd -P -- "$w" 2>/dev/null || g=nodir
    else w=$rr; cd -P -- "$rr" 2>/dev/null || g=noroot; fi
  fi
  [ -n "$g" ] || [ "$PWD" = "$w" ] || g=outside
}
"#,
    );
    if candidates.iter().any(Option::is_some) {
        // `cw INDEX CAP RANGE…` (`$D` the directory, checked and entered by `gd`; `$B` the
        // name): a file that passes the checks a read makes before `ls` joins its directory's
        // candidates (`$WD` their indexes, `$LD` the words that name them below the root for
        // `eval`; `f<i>`, `d<i>`, `c<i>`, `r<i>` its path below the root, its directory, cap
        // and ranges), any other is read by its ranges at once, which reports why not. `ds K`
        // adds a directory's candidates to the root's (`$W`, `$LA`; `w<K>` the directory's own).
        // Lists grow a directory at a time: a string grown a file at a time costs sh time in the
        // square of its length. `ca` reads the candidates of every directory of the root at
        // once, from the root: every directory (`$G`, the groups' numbers; `q<k>`, each one's
        // directory) is checked again with `gd` just before, then one `stat` (`st`) names each
        // directory on the way (`$LT`, `$nt` of them: each must still be one, `sx`) and every
        // candidate by its path below the root (regular files; their inodes, sizes and modes
        // are what the decoder holds the read to; one process a root, not one a directory);
        // `$KP` (the words of those no larger than their cap; `$CQ` the others) is
        // concatenated into the encoder and stat'ed again, the directories first again; then
        // every directory is checked again: one moved or no longer a directory empties the
        // second `STAT`, and every file is read again. A file whose path led elsewhere during
        // the `cat` alone gives another inode, size or mode in the second `stat`, or another
        // length (the decoder answers none of the files from a wrong length); one that led
        // elsewhere from the first `stat` on had a symlink on its way there. Without a `stat`
        // that answers for every file (`-c`, else BSD's `-f`), the files are read one by one.
        // `$CQ` are read by their ranges after it, each from inside its own directory. Names
        // only ever reach a command as the values of variables. (Walking the sizes with `for`
        // instead of `shift` costs dash twice as much, whatever the length.)
        s.raw(
            r#"sm=c
st() {
  if [ "$sm" = c ]; then
    o=$(stat -c '%i %s %f' "$@" 2>/dev/null)
    case $o in [0-9]*' '[0-9]*' '[0-9a-f]*) return 0 ;; esac
  fi
  o=$(stat -f '%i %z %Xp' "$@" 2>/dev/null)
  case $o in [0-9]*' '[0-9]*' '[0-9a-fA-F]*) sm=f; return 0 ;; esac
  o=
}
sx() {
  so=$o n=$nt
  while [ "$n" -gt 0 ]; do
    case $so in *"$NL"*) ;; *) return 1 ;; esac
    l=${so%%"$NL"*} so=${so#*"$NL"}
    case $l in *' '4???) ;; *) return 1 ;; esac
    n=$((n - 1))
  done
}
cw() {
  cj=$1 cz=$2; shift 2
  p=./$B
  if [ -z "$bad$g" ] && [ ! -L "$p" ] && [ -f "$p" ] && [ -r "$p" ]; then
    case $D in '') ;; *) p=./$D/$B ;; esac
    eval "f$cj=\$p d$cj=\$D c$cj=\$cz r$cj=\"\$*\""
    WD="$WD $cj" LD="$LD \"\$f$cj\""
  else
    pf "$cj" "$@"
  fi
}
ds() { eval "w$1=\$WD"; W="$W$WD" LA="$LA$LD" LD= WD=; }
po() { eval "p=\$f$cj cr=\$r$cj D=\$d$cj"; B=${p##*/} bad=; gd; pf "$cj" $cr; }
ca() {
  g=
  for k in $G; do eval "D=\$q$k"; gd; [ -z "$g" ] || break; done
  [ -n "$g" ] || { D=; gd; }
  sf=$g
  if [ -z "$sf" ]; then
    eval "st$LT$LA"
    sx || sf=1
  fi
  if [ -z "$sf" ]; then
    S1=$so
    set -- $so
    for k in $G; do
      eval "wk=\$w$k"
      kd=
      for cj in $wk; do
        [ $# -ge 3 ] || { sf=1; break 2; }
        case $1$2 in *[!0-9]*) sf=1; break 2 ;; esac
        case $3 in 8???) ;; *) sf=1; break 2 ;; esac
        eval "cz=\$c$cj"
        if [ "$2" -le "$cz" ]; then kd="$kd \"\$f$cj\""; else CQ="$CQ $cj"; fi
        shift 3
      done
      KP="$KP$kd"
    done
    [ $# = 0 ] || sf=1
  fi
  if [ -n "$sf" ]; then
    for cj in $W; do po; done
    return 0
  fi
  printf 'CAT %s%s\nSTAT\n%s\nEND-STAT\nDATA 0\n' "$e" "$W" "$S1"
  [ -z "$KP" ] || eval "cat $KP" 2>/dev/null | enc
  printf '\nEND-DATA 0\n'
  s2=
  [ -z "$KP" ] || { eval "st$LT$KP"; sx && s2=$so; }
  for k in $G; do eval "D=\$q$k"; gd; [ -z "$g" ] || s2=; done
  printf 'STAT\n%s\nEND-STAT\n' "$s2"
  for cj in $CQ; do po; done
}
"#,
        );
    }
    // An encoder is named by a client that knows the host (its dialect is settled).
    match encoder {
        Some(_) => s.begin_settled(),
        None => s.begin(),
    }
    // Files grouped by directory, each group in the order it first appears.
    let mut groups: Vec<(&[u8], &[u8], Vec<usize>)> = Vec::new();
    for (i, (file, _)) in reads.iter().enumerate() {
        let (dir, _) = split_rel(&file.rel);
        match groups
            .iter_mut()
            .find(|(root, d, _)| *root == file.root.as_slice() && *d == dir)
        {
            Some(group) => group.2.push(i),
            None => groups.push((file.root.as_slice(), dir, vec![i])),
        }
    }
    // The candidates of a root are read by one `ca` once its last directory is done (the
    // processes of a read whole are paid once per root, not per directory).
    let flush = |s: &mut Script, any: bool| {
        if any {
            s.raw("[ -z \"$W\" ] || ca\n");
        }
    };
    let mut previous_root: Option<&[u8]> = None;
    let mut root_has_candidates = false;
    // The directories below the current root named so far, and their `t<m>` numbers.
    let mut ancestors: Vec<(&[u8], usize)> = Vec::new();
    let mut next_ancestor = 0usize;
    for (k, (root, dir, members)) in groups.into_iter().enumerate() {
        // The root is resolved once for the groups of it that follow one another (`$gr`, its
        // verdict; `$rr`, where it leads: the `$PWD` that `cd -P` sets, no subshell), each
        // directory once.
        if previous_root != Some(root) {
            flush(&mut s, root_has_candidates);
            root_has_candidates = false;
            s.raw("bad=\n");
            s.assign("R", root);
            s.raw(
                r#"gr=; [ -z "$bad" ] || gr=unsafe
if [ -z "$gr" ]; then if cd -P -- "$R" 2>/dev/null; then rr=$PWD; else gr=noroot; fi; fi
W= G= LD= LA= LT= nt=0 WD= S1= sf= KP= CQ=
"#,
            );
            previous_root = Some(root);
            ancestors.clear();
        }
        s.raw("bad=\n");
        assign_name(&mut s, "D", dir);
        // The directory and each one above it below the root, as `./<path>` in `t<m>`
        // (assigned once a root): the `stat`s of a read whole check that each is a directory.
        let mut dir_words = String::new();
        let mut dirs = 0;
        for (at, &b) in dir.iter().enumerate().chain([(dir.len(), &b'/')]) {
            if b != b'/' || at == 0 || dir.is_empty() {
                continue;
            }
            let prefix = &dir[..at];
            let m = match ancestors.iter().find(|(p, _)| *p == prefix) {
                Some((_, m)) => *m,
                None => {
                    let m = next_ancestor;
                    next_ancestor += 1;
                    ancestors.push((prefix, m));
                    assign_name(&mut s, &format!("t{m}"), &[b"./", prefix].concat());
                    m
                }
            };
            dir_words.push_str(&format!(" \\\"\\$t{m}\\\""));
            dirs += 1;
        }
        // The group's verdict (`g`, an ERR code) is every member's: the root resolved and the
        // directory entered physically exactly below it.
        s.raw("gd; [ -z \"$bad\" ] || g=unsafe\n");
        let group_bad = bad_group_value(root, dir);
        let reads_whole = members
            .iter()
            .any(|&i| candidates[i].is_some() && !group_bad);
        if reads_whole {
            // Only a directory that passed is checked again after the read.
            s.raw(&format!(
                "[ -n \"$g\" ] || q{k}=$D G=\"$G {k}\" LT=\"$LT{dir_words}\" nt=$((nt + {dirs}))\n"
            ));
            root_has_candidates = true;
        }
        for &i in &members {
            let (file, ranges) = &reads[i];
            let (_, base) = split_rel(&file.rel);
            let refused = refusal(file, ranges).or(group_bad.then_some("unsafe"));
            s.raw("bad=\n");
            assign_name(&mut s, "B", base);
            if let Some(code) = refused {
                s.raw(&format!(
                    "printf 'FILE {i}\\n'\ncase $D in '') P=$R/$B ;; *) P=$R/$D/$B ;; esac\n\
                     fl {code}\nprintf 'END-FILE {i}\\n'\n"
                ));
                continue;
            }
            match candidates[i] {
                Some(cap) => s.raw(&format!("cw {i} {cap}")),
                None => s.raw(&format!("pf {i}")),
            }
            for range in ranges {
                let wire = aligned(range);
                // Offsets past what `sh` arithmetic holds are past every end of file anyway.
                let start = range.start.min(i64::MAX as u64);
                for n in [start, wire.bs, wire.skip_blocks, wire.count] {
                    s.raw(&format!(" {n}"));
                }
            }
            s.raw("\n");
        }
        if reads_whole {
            s.raw(&format!("[ -z \"$WD\" ] || ds {k}\n"));
        }
    }
    flush(&mut s, root_has_candidates);
    s.end("0")
}

/// A root or directory the script must not be handed: what `refusal` refuses for every file.
fn bad_group_value(root: &[u8], dir: &[u8]) -> bool {
    root.is_empty() || root.contains(&0) || dir.contains(&0)
}

/// `name=<bytes>`: a name or path of plain characters (what session ids, their suffixes and
/// project directories are made of) is written as a quoted word, which costs the shell
/// nothing; any other goes through [`Script::assign`] (no byte of it in the script text).
fn assign_name(s: &mut Script, name: &str, bytes: &[u8]) {
    let plain = !bytes.is_empty()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'+' | b'/'));
    if plain {
        s.raw(&format!("{name}="));
        s.word(bytes);
        s.raw("\n");
    } else {
        s.assign(name, bytes);
    }
}

/// Why the client refuses a read without asking (the same `ERR` codes a host prints).
fn refusal(file: &FileRef, ranges: &[ByteRange]) -> Option<&'static str> {
    if check_relative_path(&file.rel).is_err() || file.root.is_empty() || file.root.contains(&0) {
        Some("badpath")
    } else if check_ranges(ranges).is_err() || ranges.len() > MAX_RANGES {
        Some("badrange")
    } else {
        None
    }
}

/// ` NAME…` as words of a script: the subdirs or top files of a harness's layout, which are
/// plain names (a layout holding another is a bug, not input).
fn plain_words(names: &[&str], what: &str) -> String {
    let mut words = String::new();
    for name in names {
        assert!(is_plain_name(name), "{what} `{name}` must be a plain name");
        words.push(' ');
        words.push_str(&list_word(name));
    }
    words
}

/// A relative path's directory and file name.
fn split_rel(rel: &[u8]) -> (&[u8], &[u8]) {
    match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&b""[..], rel),
    }
}

/// What every read script defines before its BEGIN: the encoder (probed unless forced),
/// `enc`, and `rg INDEX START BS SKIP COUNT`, which prints one range's block. With `compress`
/// the probe tries [`Encoder::Gzip`] first.
fn read_prelude(s: &mut Script, encoder: Option<Encoder>, compress: bool) {
    s.raw("e=");
    s.word(encoder.map(Encoder::wire).unwrap_or_default().as_bytes());
    if compress {
        s.raw(&format!("\n[ -n \"$e\" ] || {}", GZIP_PROBE));
    }
    s.raw("\n");
    encoder_probe(s);
}

/// `$hp` set when the host has `perl` (`command -v`: a builtin, no process), and `$PM`, the
/// program `ms` hands it: it copies the ranges `START BS SKIP COUNT…` of file `$1` (size `$2`)
/// to stdout as the `dd` loop would, the last only when it starts before the end, in one
/// process instead of one `dd` per range. Names and numbers reach perl only as its arguments;
/// the program is a constant. Debian's perl-base is Essential and macOS ships perl; where
/// there is none (busybox, toybox) `ms` runs the `dd` loop.
fn perl_probe(s: &mut Script) {
    s.raw("unset -f perl 2>/dev/null\nhp=\ncommand -v perl >/dev/null 2>&1 && hp=1\nPM=");
    s.word(PERL_RANGES.as_bytes());
    s.raw("\n");
}

/// The perl program of [`perl_probe`]. A failure to open or seek prints nothing more: the
/// decoder then finds the stream short, as when `dd` fails.
const PERL_RANGES: &str = "open(my $f, '<', shift) or exit 1; binmode $f; binmode STDOUT; \
my $z = shift; \
while (@ARGV >= 4) { my ($s, $b, $k, $c) = splice(@ARGV, 0, 4); \
next if $c <= 0 || (!@ARGV && $s >= $z); \
seek($f, $k * $b, 0) or exit 1; my $n = $c * $b; \
while ($n > 0) { my $r = read($f, my $buf, $n < 1048576 ? $n : 1048576); last unless $r; print $buf; $n -= $r; } }";

/// The encoder's probe when `$e` is empty, then `enc` and `rg` (see [`read_prelude`]).
fn encoder_probe(s: &mut Script) {
    s.raw(
        r#"if [ -z "$e" ]; then
  if [ "$(printf hi | base64 2>/dev/null)" = aGk= ]; then e=b64
  elif [ "$(printf hi | openssl base64 2>/dev/null)" = aGk= ]; then e=ossl
  else case $(printf hi | uuencode -m x 2>/dev/null) in *aGk=*) e=uu ;; *) e=hex ;; esac
  fi
fi
enc() { case $e in b64) base64 ;; gz) gzip -1 -c | base64 ;; ossl) openssl base64 ;; uu) uuencode -m x ;; *) od -An -v -tx1 ;; esac; }
rg() {
  printf 'DATA %s\n' "$1"
  if [ "$5" -gt 0 ] && [ "$2" -lt "$z" ]; then dd if="$p" bs="$3" skip="$4" count="$5" 2>/dev/null | enc; fi
  printf '\nEND-DATA %s\n' "$1"
}
"#,
    );
}

/// What [`read_prelude`] defines, with `base64` taken without a probe when `command -v` (a
/// builtin) finds it; the other encoders are probed as there.
fn lean_encoder(s: &mut Script) {
    s.raw("e=\ncommand -v base64 >/dev/null 2>&1 && e=b64\n");
    encoder_probe(s);
}

/// One file's read, after `$R` (root), `$D` (directory below it, may be empty), `$B` (file
/// name) and `$P` (the path, for messages) are set and `fail CODE` is defined: the
/// confinement checks, META, each range of `first`, and the check after the read. `listed`:
/// `$R` is physical already and `$i` and `$z` hold the inode and size a `stat` of the file
/// just gave (the find-and-read's listing), so neither is looked up again; the directory is
/// checked with the `$PWD` that `cd -P` sets (no subshell), and the ranges below the end go
/// through one encoder.
fn read_file_body(s: &mut Script, first: &FirstRead, listed: bool) {
    // The script enters the file's directory (`cd -P`, in its own shell) and checks that it is
    // physically exactly `<root>/<dir>`: that refuses `..`, a symlink anywhere below the root,
    // and anything leading outside it, like the local host. From then on the file is named
    // relative to that directory, which a later swap of a directory on the path cannot move.
    // What a shell cannot close is the file's own name being swapped for a symlink while `dd`
    // runs: its inode and type are checked again after the read, and a change fails the read
    // (`ERR raced`) instead of returning what was read (docs/shells.md says what remains).
    if listed {
        s.raw("rr=$R\n");
    } else {
        s.raw(
            r#"rr=$(cd -P -- "$R" 2>/dev/null && pwd -P && echo X) || fail noroot
rr=${rr%X}; rr=${rr%"$NL"}
"#,
        );
    }
    s.raw(
        r#"case $rr in /) rb= ;; *) rb=$rr ;; esac
if [ -n "$D" ]; then
  cd -P -- "$rb/$D" 2>/dev/null || fail nodir
  w="$rb/$D"
else
  cd -P -- "$rr" 2>/dev/null || fail noroot
  w=$rr
fi
"#,
    );
    if listed {
        // `cd -P` set `$PWD` to the physical directory, as `pwd -P` would print it.
        s.raw("h=$PWD\n");
    } else {
        s.raw(
            r#"h=$(pwd -P && echo X) || fail outside
h=${h%X}; h=${h%"$NL"}
"#,
        );
    }
    s.raw(
        r#"[ "$h" = "$w" ] || fail outside
p=./$B
[ -L "$p" ] && fail symlink
[ -e "$p" ] || fail missing
[ -f "$p" ] || fail notfile
[ -r "$p" ] || fail unreadable
"#,
    );
    if !listed {
        s.raw(
            r#"s=$(ls -lni "$p" 2>/dev/null) || fail nosize
set -- $s
i=$1 z=$6
"#,
        );
    }
    s.raw(
        r#"case $z in '' | *[!0-9]*) fail nosize ;; esac
printf 'META size=%s enc=%s\n' "$z" "$e"
"#,
    );
    emit_ranges(s, first, listed);
    // The same file, still not a symlink, after the read (see above).
    s.raw(
        r#"[ -L "$p" ] && fail raced
s=$(ls -lni "$p" 2>/dev/null) || fail raced
set -- $s
[ "$1" = "$i" ] || fail raced
"#,
    );
}

/// The `rg` calls of `first`: fixed ranges, or the tail's computed from the size `$z`. With
/// `merge`, when every range but the last lies whole below the end of the file, they are
/// encoded as one stream (`DATA 0-<last>`: one encoder for all, see [`super`]), else one by one.
fn emit_ranges(s: &mut Script, first: &FirstRead, merge: bool) {
    let dd = |bs: u64, skip: u64, count: u64| {
        format!("dd if=\"$p\" bs={bs} skip={skip} count={count} 2>/dev/null")
    };
    match first {
        FirstRead::Ranges(ranges) => {
            let mut one_by_one = String::new();
            for (i, range) in ranges.iter().enumerate() {
                let wire = aligned(range);
                // Offsets past what `sh` arithmetic holds are past every end of file anyway.
                let start = range.start.min(i64::MAX as u64);
                one_by_one.push_str(&format!(
                    "rg {i} {start} {} {} {}\n",
                    wire.bs, wire.skip_blocks, wire.count
                ));
            }
            let Some((last, before)) = ranges.split_last().filter(|_| merge && ranges.len() > 1)
            else {
                s.raw(&one_by_one);
                return;
            };
            let mut whole = Vec::new();
            let mut stream = String::from("{ :");
            for range in before {
                let wire = aligned(range);
                let end = wire
                    .skip_blocks
                    .saturating_add(wire.count)
                    .saturating_mul(wire.bs);
                whole.push(format!("[ \"$z\" -ge {} ]", end.min(i64::MAX as u64)));
                if wire.count > 0 {
                    stream.push_str("; ");
                    stream.push_str(&dd(wire.bs, wire.skip_blocks, wire.count));
                }
            }
            let wire = aligned(last);
            if wire.count > 0 {
                stream.push_str(&format!(
                    "; if [ {} -lt \"$z\" ]; then {}; fi",
                    last.start.min(i64::MAX as u64),
                    dd(wire.bs, wire.skip_blocks, wire.count)
                ));
            }
            stream.push_str("; } | enc");
            let label = format!("0-{}", ranges.len() - 1);
            s.raw(&format!(
                "if {}; then\nprintf 'DATA {label}\\n'\n{stream}\nprintf '\\nEND-DATA {label}\\n'\nelse\n{one_by_one}fi\n",
                whole.join(" && ")
            ));
        }
        FirstRead::Tail { head, back, ahead } => {
            // The ranges of `FirstRead::ranges` for the size `z` just found, aligned as
            // `aligned` does (the decoder recomputes both from the META size).
            let head = aligned(&ByteRange::new(0, *head));
            s.raw(&format!(
                "a=0; [ \"$z\" -gt {back} ] && a=$((z - {back}))\nl=$((z - a + {ahead}))\n\
                 if [ \"$l\" -le {small} ]; then k=4096; else k=65536; fi\n\
                 if [ \"$l\" -gt 0 ]; then c=$(( (a + l + k - 1) / k - a / k )); else c=0; fi\n",
                small = 256 * 1024
            ));
            let one_by_one = format!(
                "rg 0 0 {} {} {}\nrg 1 \"$a\" \"$k\" $((a / k)) \"$c\"\n",
                head.bs, head.skip_blocks, head.count
            );
            if !merge {
                s.raw(&one_by_one);
                return;
            }
            let head_end = head
                .skip_blocks
                .saturating_add(head.count)
                .saturating_mul(head.bs);
            s.raw(&format!(
                "if [ \"$z\" -ge {head_end} ]; then\nprintf 'DATA 0-1\\n'\n\
                 {{ {}; if [ \"$c\" -gt 0 ] && [ \"$a\" -lt \"$z\" ]; then dd if=\"$p\" bs=\"$k\" skip=$((a / k)) count=\"$c\" 2>/dev/null; fi; }} | enc\n\
                 printf '\\nEND-DATA 0-1\\n'\nelse\n{one_by_one}fi\n",
                dd(head.bs, head.skip_blocks, head.count)
            ));
        }
    }
}

/// A directory name that needs no quoting once split from `$es`, and is not `--`.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Escapes `find -name`/`-path` pattern characters.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A quoted word for a static ASCII value.
fn list_word(text: &str) -> String {
    String::from_utf8(quote(text.as_bytes())).expect("quoting ASCII stays ASCII")
}

// They run the scripts under real Unix shells.
#[cfg(all(test, unix))]
mod tests;
