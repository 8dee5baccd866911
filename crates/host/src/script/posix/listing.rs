//! The list script ([`list_script`]): its probes, the `walk` of each root and the lines it
//! prints; and the listing that reads the small files it lists along
//! ([`list_reading_script`]), with the read blocks' scripts.

use super::script::{Script, glob_escape, is_plain_name, list_word, plain_words, root_dir};
use crate::script::{ReadEnds, TailFit};
use clankie_model::{ListSpec, RootSpec};

/// How a listing gets each file's size and mtime (and, but in the `ls` mode, its inode and
/// ctime, for the grep cache). Probed on the host unless forced.
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

/// The listing's probe: `base64 -d` and `gzip -dc` undo a gzip stream of `hi` (a compressed
/// listing tells the client that [`compressed_invocation`] works here too). The way there,
/// `gzip -1 -c | base64`, is not run: every `gzip` that decompresses (GNU, busybox, toybox,
/// BSD, macOS) takes `-1 -c`, and every `base64` that takes `-d` encodes by default (one that
/// spells it `-D`, older macOS, fails here and the listing goes plain). Two processes fewer.
///
/// [`compressed_invocation`]: super::compressed_invocation
const LIST_GZIP_PROBE: &str = "case $(printf '%s\\n' H4sIAAAAAAAE/8vIBACsKpPYAgAAAA== | base64 -d 2>/dev/null | gzip -dc 2>/dev/null) in hi) e=gz ;; esac\n";

/// A listing that reads along (a first `check`, whose stream is mostly files' bytes) probes
/// `zstd` first: `zstd -1` shrinks transcripts as much as `gzip -1` for about half of the
/// host's CPU. `command -v` is a builtin; the probe decodes a zstd frame of `hi` (`base64 -d
/// | zstd -dc`), and sets `e=zs` where it answers; the gzip probe runs only where it does not.
const LIST_ZSTD_PROBE: &str = "if command -v zstd >/dev/null 2>&1; then case $(printf '%s\\n' KLUv/QRIEQAAaGn6OCbq | base64 -d 2>/dev/null | zstd -dc 2>/dev/null) in hi) e=zs ;; esac; fi\n";

/// The list script: for each root a `ROOT` line, then an `F` line per transcript file, or an
/// `FX` line (path hex-encoded) when its path holds a byte a line cannot carry (see the wire
/// format in [`crate::script`]).
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
    /// The ends of every larger file below a subdir: its first `head` and last `tail` bytes
    /// (`RE` blocks, after the listing); `None`: larger files are not read along.
    pub ends: Option<ReadEnds>,
}

/// [`list_script`], which also reads the small files it lists ([`crate::Host::list_reading`]):
/// where the listing is compressed and `stat -c` is the host's (the `gnu` and `statc` modes),
/// its GZ block holds a `<nonce>:RL` line, the listing's lines, and a `<nonce>:LE` line after
/// them, and one read block per `find -exec … {} +` of each root's subdirs (files of at most
/// `max_file` bytes whose path holds no LF or CR). In the `gnu` mode the walk that lists
/// also reads, and the blocks come among the listing's lines (before `LE`); in the `statc`
/// mode a second walk reads, and its blocks follow a `<nonce>:RD` line after `LE`. The whole
/// stream is cut at `budget` bytes: a block cut off answers nothing, and a listing without its
/// `LE` line was cut ([`ListReading::listing`] is then `None`). A block is one of:
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
///
/// RE <root index> <dirs> <files> <head> <tail>   with `ends`: the files over `max_file`
/// RE <root index> <dirs> <files> <head> <tail>:<count>…   with a `TailFit`: runs of files
/// the lines as RD's                               (in the lines' order) and their tails
/// <each file's first <head> bytes, concatenated><each one's last <tail> bytes, concatenated>
/// \n<nonce>:S2\n the same lines again, stat'ed after it, \n<nonce>:E\n
/// ```
///
/// `RE` blocks come after the listing (after a `<nonce>:RD` line that follows `LE`), from a
/// walk of their own over the files larger than `max_file` (a `find -exec` block a few
/// thousand files, five processes: `sh`, two `stat`s, `head -q`, `tail -q`), so that a
/// budget they reach cuts their blocks, never the listing. The decoder holds them to `RD`'s
/// checks: both `stat`s equal byte for byte, every directory on the way one, and the bytes
/// exactly each file's `min(size, head)` then `min(size, tail)`.
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
///
/// [`ListReading::listing`]: crate::script::ListReading::listing
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

/// The list script's body after [`Script::new`], up to its END: probes, `walk`, one walk per
/// root. With `narrow`, only paths holding it are found below the subdirs, and the one match
/// (if exactly one) is left in `$hr` (root) and `$hp` (path below it).
pub(super) fn list_body(
    s: &mut Script,
    roots: &[RootSpec],
    mode: Option<ListMode>,
    narrow: Option<&str>,
    read: Option<ReadAlong>,
) {
    if roots
        .iter()
        .any(|r| r.harness.list_spec().walks_project_tree())
    {
        s.raw("PX=");
        s.word(project_tree_prunes().as_bytes());
        s.raw("\n");
    }
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
    // The probe asks for the very `%Ts:%i:%Cs` the listing uses: toybox `find` has `-printf`
    // but spells the time `%T@`, and refuses `%Ts` with exit 1.
    s.raw(
        r#"
if [ -z "$m" ]; then
  if find /dev/null -prune -printf '%Ts:%i:%Cs' >/dev/null 2>&1; then m=gnu
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
  gnu) s=$(find "$1" -prune -printf '%s %Ts:%i:%Cs' 2>/dev/null) ;;
  statc) s=$(stat -c '%s %Y:%i:%Z' "$1" 2>/dev/null) ;;
  statf) s=$(stat -f '%z %m:%i:%c' "$1" 2>/dev/null) ;;
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
gnu) find "$@" -prune -printf 'F %s %Ts:%i:%Cs %p\n' ;;
statc) stat -c 'F %s %Y:%i:%Z %n' "$@" ;;
statf) stat -f 'F %z %m:%i:%c %N' "$@" ;;
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
# `pt SUBDIR`: where `find` starts (`$sp`) and what else it prunes (`$sx`, split into words
# under `set -f`: plain names only). `.` is the root itself, a tree of projects
# (`ListSpec::PROJECT_TREE`), whose tool trees are never entered (`$PX`).
pt() {
  case $1 in
  .) sp=. sx=$PX ;;
  *) sp=./$1 sx= ;;
  esac
}
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
  if [ -n "$rm" ]; then if [ "$rm" = 2 ]; then we "$@"; else wr "$@"; fi; return 0; fi
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
    gnu) find "./$tf" -prune -type f -printf 'F %s %Ts:%i:%Cs %p\n' ;;
    statc) stat -c 'F %s %Y:%i:%Z %n' "./$tf" ;;
    statf) stat -f 'F %z %m:%i:%c %N' "./$tf" ;;
    *) sh -c "$B" sh "$m" "./$tf" ;;
    esac 2>/dev/null
    done
    IFS=$oi
    for sd in $es; do
    pt "$sd"
    case $m in
    gnu)
      # Reading along (`$fo`, a first `check`): the same walk sends the small files in read
      # blocks (`$RF` under `$RT` bytes, else `$RD`; see [`list_reading_script`]) right after
      # their `F` lines (GNU `find` flushes its own output before it runs a command), from the
      # root as `walk` resolved it.
      if [ -n "$fo" ] && [ "$PWD" = "$r" ]; then
        find "$sp" \( -path "$dp" $sx \) -prune -o -type f -path "$px" \( "$@" \) \( \( -path "*$NL*" -o -path "*$CR*" \) -exec sh -c "$B" sh gnu {} + -o -printf 'F %s %Ts:%i:%Cs %p\n' \( -size "-${RT}c" -exec sh -c "$RF" "$ri" "$N" "$RM" "$RC" {} + -o -size "-${RS}c" -exec sh -c "$RD" "$ri" "$N" "$RM" "$RC" {} + \) \)
      else
        find "$sp" \( -path "$dp" $sx \) -prune -o -type f -path "$px" \( "$@" \) \( \( -path "*$NL*" -o -path "*$CR*" \) -exec sh -c "$B" sh gnu {} + -o -printf 'F %s %Ts:%i:%Cs %p\n' \)
      fi ;;
    *) find "$sp" \( -path "$dp" $sx \) -prune -o -type f -path "$px" \( "$@" \) -exec sh -c "$B" sh "$m" {} + ;;
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
      pt "$sd"
      find "$sp" \( -path "$dp" $sx \) -prune -o -type f -path "$px" \( "$@" \) -size "-${{RS}}c" ! -path "*$NL*" ! -path "*$CR*" -exec sh -c "$RD" "$ri" "$N" "$RM" "$RC" {{}} +
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
        // `we` reads the ends of the files `wr` leaves (larger than `$RM`), each `find -exec`
        // block in one `head -q` and one `tail -q` between its two `stat`s (see
        // [`list_reading_script`]).
        if let Some(ends) = read.ends {
            let middle = match ends.fit {
                Some(fit) => block_fitted_ends(fit),
                None => BLOCK_ENDS.to_string(),
            };
            s.raw("RE=");
            s.word([BLOCK_DIRS, &middle, BLOCK_SECOND_STAT].concat().as_bytes());
            s.raw(&format!(
                r#"
we() {{
  (
    cd -P -- "$r" 2>/dev/null || exit 0
    [ "$PWD" = "$r" ] || exit 0
    for sd in $es; do
      pt "$sd"
      find "$sp" \( -path "$dp" $sx \) -prune -o -type f -path "$px" \( "$@" \) ! -size "-${{RS}}c" ! -path "*$NL*" ! -path "*$CR*" -exec sh -c "$RE" "$ri" "$N" "$EH" "$ET" {{}} +
    done 2>/dev/null
  )
}}
EH={} ET={}
"#,
                ends.head, ends.tail
            ));
        }
    }
    let mut calls = Vec::new();
    for (i, spec) in roots.iter().enumerate() {
        let var = format!("D{i}");
        let db_env = root_dir(s, i, spec);
        let list = spec.harness.list_spec();
        // `./<subdir>` has 1 slash; an entry of a directory `d` levels below it has `d + 1`
        // more. Directories down to `max_depth` are read, so entries with more slashes than
        // that are pruned unseen.
        // The root itself (`.`, a project tree) has no subdir's slash before its entries.
        let project_tree = list.walks_project_tree();
        let slashes = usize::from(!project_tree) + list.max_depth as usize + 2;
        let depth_pattern = vec!["*"; slashes + 1].join("/");
        let mut call = format!("walk {} \"${var}\" ", list_word(spec.harness.name()));
        call.push_str(&list_word(&depth_pattern));
        if project_tree {
            assert_eq!(
                list.subdirs.len(),
                1,
                "a project tree is a layout's only subdir"
            );
            call.push_str(" .");
        } else {
            call.push_str(&plain_words(list.subdirs, "subdir"));
        }
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
        if read.is_some() {
            s.raw(LIST_ZSTD_PROBE);
            s.raw("[ -n \"$e\" ] || ");
        }
        s.raw(LIST_GZIP_PROBE);
        if let Some(read) = read {
            // A `<nonce>:RL` line, the listing, and `<nonce>:LE` once it is whole. Where `find
            // -printf` answers (`gnu`), the same walk reads: the read blocks come among the
            // listing's lines. With `stat -c` alone (`statc`: busybox `find` takes one `-exec … +`
            // at most), a second walk's blocks follow a `<nonce>:RD` line. With `ends`, a walk
            // of their own sends the larger files' `RE` blocks last, after that line (printed
            // for them in the `gnu` mode). The stream is cut at the budget (`head -c`: GNU,
            // busybox and toybox, which both modes imply); the decoder sees where.
            let ends = if read.ends.is_some() {
                "[ \"$m\" = statc ] || printf '%s:RD\\n' \"$N\"; rm=2 ri=-1; la;"
            } else {
                ""
            };
            // The block is `ZS` … `END-ZS` where the `zstd` probe answered, else `GZ` … `END-GZ`.
            s.raw(&format!(
                "if [ -n \"$e\" ]; then if [ \"$e\" = zs ]; then E=ZS; z() {{ zstd -1 -c -q; }}; else E=GZ; z() {{ gzip -1 -c; }}; fi; printf '%s\\n' \"$E\"; case $m in gnu|statc) {{ printf '%s:RL\\n' \"$N\"; [ \"$m\" = statc ] || fo=1; la; printf '\\n%s:LE\\n' \"$N\"; if [ \"$m\" = statc ]; then printf '%s:RD\\n' \"$N\"; rm=1 ri=-1; la; fi; {ends} }} | head -c \"$RB\" ;; *) la ;; esac | z | base64; printf '\\nEND-%s\\n' \"$E\"; else la; fi\n",
            ));
        } else {
            s.raw(
                "if [ \"$e\" = gz ]; then printf 'GZ\\n'; la | gzip -1 -c | base64; printf '\\nEND-GZ\\n'; else la; fi\n",
            );
        }
    }
}

/// `-o -name NAME` for each directory a project tree's walk never enters
/// ([`ListSpec::PROJECT_TREE_SKIPS`]), one value the script splits into `find`'s words.
fn project_tree_prunes() -> String {
    let mut words = String::new();
    for name in ListSpec::PROJECT_TREE_SKIPS {
        assert!(
            is_plain_name(name),
            "a skipped directory `{name}` must be a plain name"
        );
        words.push_str(" -o -name ");
        words.push_str(name);
    }
    words
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

/// The `RE` block's middle: the first `stat` of the directories and the files, the header
/// (with the lengths `<head> <tail>`, `$m` and `$c` here) and that `stat`'s lines, each file's
/// head, then each file's tail. No cap: a file sends at most `head + tail` bytes, and the
/// budget cuts the stream after the listing.
const BLOCK_ENDS: &str = r#"s1=$(stat -c '%i %s %f %n' $ds "$@" 2>/dev/null)
printf 'RE %s %s %s %s %s\n%s\n' "$k" "$nd" "$#" "$m" "$c" "$s1"
head -q -c "$m" "$@" 2>/dev/null
tail -q -c "$c" "$@" 2>/dev/null
"#;

/// The `RE` block's middle with [`TailFit`]: each file's tail sized to its last lines. One
/// `tail -n 2` of the block's files and one `awk` give each file's tail length (`awk` reads
/// `tail`'s sections between its `==> ./<path> <==` headers; the empty line before each header
/// but the first is the header's own), the files are ordered by that length, and each length
/// is one `tail -q -c` of its files. The header's runs (`<tail>:<count>`, in the files' order)
/// say which file sent how many. Where the lengths do not come one per file (no `awk`, a
/// `tail` that prints its headers otherwise, a file gone), every file sends `$c`, the header a
/// bare `<tail>`. Names reach `tail` as `"$@"` or as the unquoted `$b<length>`, split on
/// newlines alone (`IFS`, `set -f`; no path here holds one) after `eval` names the variable:
/// the length is digits, checked.
fn block_fitted_ends(fit: TailFit) -> String {
    let TailFit { min, max } = fit;
    format!(
        r#"r=$(tail -n 2 "$@" 2>/dev/null | LC_ALL=C awk '
function emit(sep) {{
  if (sep && n > 0 && b == 0) {{ b = a; a = p; n-- }}
  if (n == 0) {{ print "-"; return }}
  need = b + 2
  if (n > 1 && b < {min}) need = a + b + 3
  if (need > {max}) {{ print "-"; return }}
  t = {min}; i = 0
  while (t < need) t = (i++ % 2) ? t * 4 / 3 : t * 3 / 2
  print t
}}
/^==> \.\/.* <==$/ {{ if (s) emit(1); s = 1; n = 0; a = b = p = 0; next }}
{{ p = a; a = b; b = length; n++ }}
END {{ if (s || n) emit(0) }}' 2>/dev/null)$NL
u= ts=$NL
for f do
  case $r in
  *"$NL"*) t=${{r%%"$NL"*}} r=${{r#*"$NL"}} ;;
  *) u=1; break ;;
  esac
  case $t in
  -) t=$c ;;
  ''|*[!0-9]*) u=1; break ;;
  esac
  eval "b$t=\$b$t\$f\$NL"
  case $ts in *"$NL$t$NL"*) ;; *) ts=$ts$t$NL ;; esac
done
[ -z "$r" ] || u=1
if [ -n "$u" ]; then
  rn=" $c"
else
  rn=
  set --
  for t in $ts; do
    o=$#
    eval "set -- "\$@" \$b$t"
    rn="$rn $t:$(($# - o))"
  done
fi
s1=$(stat -c '%i %s %f %n' $ds "$@" 2>/dev/null)
printf 'RE %s %s %s %s%s\n%s\n' "$k" "$nd" "$#" "$m" "$rn" "$s1"
head -q -c "$m" "$@" 2>/dev/null
if [ -n "$u" ]; then
  tail -q -c "$c" "$@"
else
  for t in $ts; do eval "tail -q -c $t \$b$t"; done
fi 2>/dev/null
"#
    )
}

/// The end of every block: the `stat` after the read, between the nonce's markers.
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
