//! The read script ([`read_script`]), and what every read shares: the encoder ([`Encoder`],
//! probed or named), one file's confinement checks, the descriptor its ranges are read through
//! ([`descriptor_check`]), its `META` line and its ranges.

use super::script::{Script, assign_name, split_rel};
use crate::script::aligned;
use crate::{FileRef, FirstRead, check_ranges, check_relative_path};
use clankie_model::ByteRange;
use clankie_model::limits::MAX_RANGES;

/// Which tool encodes a read's payload. Probed on the host unless forced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoder {
    Base64,
    Openssl,
    Uuencode,
    Od,
    /// `gzip -1 -c | base64`: what a batched read uses where both answer (transcripts are
    /// JSON, which shrinks three to ten times; the link moves that much less).
    Gzip,
    /// `zstd -1 -c -q | base64`: what a batched read uses where `zstd` answers (it shrinks
    /// transcripts more than `gzip -1` for a third to a quarter of its CPU on the host).
    Zstd,
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
        Encoder::Zstd,
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
            Encoder::Zstd => "zs",
        }
    }
}

/// Sets `e=gz` when `gzip -1 -c | base64` answers as it should (a gzip stream of `hi` is
/// `H4sI…` in base64, whatever its header's time and OS bytes).
pub(super) const GZIP_PROBE: &str =
    "case $(printf hi | gzip -1 -c 2>/dev/null | base64 2>/dev/null) in H4sI*) e=gz ;; esac\n";

/// Sets `e=zs` when `zstd -1 -c -q | base64` answers as it should (a zstd frame starts with
/// the magic `28 b5 2f fd`, `KLUv` in base64); `command -v` (a builtin) spares the processes
/// where there is no `zstd`.
pub(super) const ZSTD_PROBE: &str = "if command -v zstd >/dev/null 2>&1; then case $(printf hi | zstd -1 -c -q 2>/dev/null | base64 2>/dev/null) in KLUv*) e=zs ;; esac; fi\n";

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
    // A path of plain characters is a quoted word (no subshell); any other is assigned
    // without its bytes in the script text.
    assign_name(&mut s, "P", &path);
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
    assign_name(&mut s, "R", &file.root);
    assign_name(&mut s, "D", dir);
    assign_name(&mut s, "B", base);
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

/// Why the client refuses a read without asking (the same `ERR` codes a host prints).
pub(super) fn refusal(file: &FileRef, ranges: &[ByteRange]) -> Option<&'static str> {
    if check_relative_path(&file.rel).is_err() || file.root.is_empty() || file.root.contains(&0) {
        Some("badpath")
    } else if check_ranges(ranges).is_err() || ranges.len() > MAX_RANGES {
        Some("badrange")
    } else {
        None
    }
}

/// What every read script defines before its BEGIN: the encoder (probed unless forced),
/// `enc`, and `rg INDEX START BS SKIP COUNT`, which prints one range's block. With `compress`
/// the probe tries [`Encoder::Zstd`], then [`Encoder::Gzip`], first; a named
/// [`Encoder::Gzip`] is still bettered by `zstd` where it answers (the reply's `META` lines
/// name what was used, so the client names it from then on).
pub(super) fn read_prelude(s: &mut Script, encoder: Option<Encoder>, compress: bool) {
    s.raw("e=");
    s.word(encoder.map(Encoder::wire).unwrap_or_default().as_bytes());
    s.raw("\n");
    if compress && matches!(encoder, None | Some(Encoder::Gzip)) {
        s.raw(ZSTD_PROBE);
        s.raw(&format!("[ -n \"$e\" ] || {}", GZIP_PROBE));
    }
    encoder_probe(s);
}

/// The encoder's probe when `$e` is empty, then `enc` and `rg` (see [`read_prelude`]).
fn encoder_probe(s: &mut Script) {
    s.raw(
        r#"if [ -z "$e" ]; then
  if [ "$(printf hi | base64 2>/dev/null)" = aGk= ]; then e=b64
  elif [ "$(printf hi | openssl base64 2>/dev/null)" = aGk= ]; then e=ossl
  else case $(printf hi | uuencode -m x 2>/dev/null) in *aGk=*) e=uu ;; *) e=hex ;; esac
  fi
fi
enc() { case $e in b64) base64 ;; gz) gzip -1 -c | base64 ;; zs) zstd -1 -c -q | base64 ;; ossl) openssl base64 ;; uu) uuencode -m x ;; *) od -An -v -tx1 ;; esac; }
rg() {
  printf 'DATA %s\n' "$1"
  case $e in b64) E=base64 ;; *) E=enc ;; esac
  if [ "$5" -gt 0 ] && [ "$2" -lt "$z" ]; then dd if="${fq:-$p}" bs="$3" skip="$4" count="$5" 2>/dev/null | $E; fi
  printf '\nEND-DATA %s\n' "$1"
}
"#,
    );
    descriptor_check(s);
}

/// `$fq`, the name that reopens descriptor 3 (`/proc/self/fd/3`, where the host has it: Linux's
/// magic link opens the very file the descriptor holds, at offset 0, in whichever process opens
/// it), empty where there is none; and `fo`, which holds descriptor 3 (opened on `./$B` by a
/// `{ …; } 3<"$p"` group, which every `sh` passes on to its commands, unlike `exec 3<` in ksh)
/// to inode `$i` of the no-follow `stat` or `ls` (or the listing's `stat`) of the path: the
/// descriptor's file must have that inode and lie where the directory it was opened in lies.
/// Where the read's group also holds descriptor 4 on that directory (`$fd_4` set: `4<.`; no
/// variable of a batch, a letter and an index, has that name), the shell reads both from
/// `/proc/self/fdinfo` with its own `read` (Linux 5.14 and later print the `ino`): descriptor
/// 3's inode, and the same `mnt_id` (mount) for both, with no process;
/// else `stat -L` of `$fq` and `.` (GNU or busybox: the same device), else `ls -Lnid` (the
/// inode alone). Every range is then read through `$fq`, so no later swap of the name can
/// move a read. Without `$fq` `fo` holds nothing and the ranges are read by the path, checked
/// before and after (see [`read_file_body`]).
/// `fo` also names the stream's encoder, `$E`: `base64` itself where that is the encoder (a
/// pipeline into the `enc` function forks once more to run it), else `enc`. `nf` is the
/// no-follow check of `./$B`: its inode and size into `$i` and `$z` by `stat -c '%i %f %s'`
/// (GNU, busybox, toybox; `%f` the raw mode in hex, a regular file's `8` and three digits),
/// else by `ls -lni`; status 1 when neither answers, 2 when it is not a regular file.
/// `nf` runs before the descriptor is opened where no listing's `stat` told the file's inode,
/// so that a name swapped between the check and the open is refused (the descriptor holds
/// another inode), not read; the shell's own `-L` and `-f` tests before it keep a symlink, a
/// FIFO (whose open would wait for a writer) or a device from being opened at all.
pub(super) fn descriptor_check(s: &mut Script) {
    s.raw(
        r#"fq= fd_4=
[ -r /proc/self/fd/0 ] && fq=/proc/self/fd/3
fi4() {
  f3i= f3m= f4m=
  [ -n "$fd_4" ] || return 1
  while read -r k v; do case $k in ino:) f3i=$v ;; mnt_id:) f3m=$v ;; esac; done </proc/self/fdinfo/3
  while read -r k v; do case $k in mnt_id:) f4m=$v ;; esac; done </proc/self/fdinfo/4
  [ -n "$f3i" ] && [ -n "$f3m" ] && [ "$f3m" = "$f4m" ]
}
fo() {
  case $e in b64) E=base64 ;; *) E=enc ;; esac
  [ -n "$fq" ] || return 0
  if fi4; then [ "$f3i" = "$i" ]; return; fi
  fv=$(stat -L -c '%d %i' "$fq" . 2>/dev/null) || fv=
  if [ -n "$fv" ]; then
    set -- $fv
    [ $# = 4 ] && [ "$2" = "$i" ] && [ "$1" = "$3" ]
    return
  fi
  fv=$(ls -Lnid "$fq" 2>/dev/null) || return 1
  set -- $fv
  [ "$1" = "$i" ]
}
nf() {
  s=$(stat -c '%i %f %s' -- "$p" 2>/dev/null) || s=
  set -- $s
  if [ $# = 3 ]; then
    i=$1 z=$3
    case $2 in 8???) ;; *) return 2 ;; esac
  else
    s=$(ls -lni "$p" 2>/dev/null) || return 1
    set -- $s
    i=$1 z=$6
    case $2 in -*) ;; *) return 2 ;; esac
  fi
}
"#,
    );
}

/// What [`read_prelude`] defines, with `base64` taken without a probe when `command -v` (a
/// builtin) finds it; the other encoders are probed as there.
pub(super) fn lean_encoder(s: &mut Script) {
    s.raw("e=\ncommand -v base64 >/dev/null 2>&1 && e=b64\n");
    encoder_probe(s);
}

/// One file's read, after `$R` (root), `$D` (directory below it, may be empty), `$B` (file
/// name) and `$P` (the path, for messages) are set and `fail CODE` is defined: the
/// confinement checks, META, each range of `first`, and the check after the read. `listed`:
/// `$R` is physical already and `$i` and `$z` hold the inode and size a `stat` of the file
/// just gave (the find-and-read's listing), so neither is looked up again; the directory is
/// checked with the `$PWD` that `cd -P` sets (no subshell). The ranges below the end go
/// through one encoder.
pub(super) fn read_file_body(s: &mut Script, first: &FirstRead, listed: bool) {
    // The script enters the file's directory (`cd -P`, in its own shell) and checks that it is
    // physically exactly `<root>/<dir>`: that refuses `..`, a symlink anywhere below the root,
    // and anything leading outside it, like the local host. From then on the file is named
    // relative to that directory, which a later swap of a directory on the path cannot move.
    // A shell cannot open a file without following a symlink at its last component, so the
    // file is opened once, on descriptor 3, held to the inode of the no-follow checks (`fo`),
    // and every range is read through `/proc/self/fd/3`: a later swap of the name cannot move a
    // read. Where the host has no `/proc/self/fd` the ranges are read by name; there the inode
    // and type checked again after the read catch a swap still in place, not one made and undone
    // while `dd` runs (docs/shells.md). Either way a changed file fails the read (`ERR raced`).
    // After `cd -P`, `$PWD` is the physical directory, as `pwd -P` would print it (POSIX): no
    // subshell. The root is entered in the script's own shell, which enters the file's
    // directory by its physical path next.
    if listed {
        s.raw("rr=$R\n");
    } else {
        s.raw("cd -P -- \"$R\" 2>/dev/null || fail noroot\nrr=$PWD\n");
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
    s.raw("h=$PWD\n");
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
        // The no-follow inode, type and size: `stat -c` (GNU, busybox, toybox; a lighter
        // program than `ls`), where it answers with them, else `ls -lni`. `%f` is the raw mode
        // in hex: a regular file's is `8` and three more digits. Before the open (`nf` above).
        s.raw("nf || case $? in 1) fail nosize ;; *) fail raced ;; esac\n");
    }
    // The ranges are read through descriptor 3, held to the file just checked (`fo`): a
    // redirection that cannot open fails the group, not the shell, and `$fk` tells.
    s.raw(
        r#"case $z in '' | *[!0-9]*) fail nosize ;; esac
fk=
{
fk=1 fd_4=1
fo || fail raced
"#,
    );
    s.raw("printf 'META size=%s enc=%s\\n' \"$z\" \"$e\"\n");
    emit_ranges(s, first);
    s.raw("} 2>/dev/null 3<\"$p\" 4<.\nfd_4=\n[ -n \"$fk\" ] || fail raced\n");
    // Read by name (no `$fq`): the same file, still not a symlink, after the read (see
    // above). Through the descriptor `fo` held to inode `$i`, no swap of the name can have
    // moved the read, so no `ls` runs.
    s.raw(
        r#"if [ -z "$fq" ]; then
[ -L "$p" ] && fail raced
s=$(ls -lni "$p" 2>/dev/null) || fail raced
set -- $s
[ "$1" = "$i" ] || fail raced
fi
"#,
    );
}

/// The `rg` calls of `first`: fixed ranges, or the tail's computed from the size `$z`. When
/// every range but the last lies whole below the end of the file, they are encoded as one
/// stream (`DATA 0-<last>`: one encoder for all, see [`crate::script`]), else one by one.
fn emit_ranges(s: &mut Script, first: &FirstRead) {
    let dd = |bs: u64, skip: u64, count: u64| {
        format!("dd if=\"${{fq:-$p}}\" bs={bs} skip={skip} count={count} 2>/dev/null")
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
            let Some((last, before)) = ranges.split_last().filter(|_| ranges.len() > 1) else {
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
            stream.push_str("; } | $E");
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
            let head_end = head
                .skip_blocks
                .saturating_add(head.count)
                .saturating_mul(head.bs);
            s.raw(&format!(
                "if [ \"$z\" -ge {head_end} ]; then\nprintf 'DATA 0-1\\n'\n\
                 {{ {}; if [ \"$c\" -gt 0 ] && [ \"$a\" -lt \"$z\" ]; then dd if=\"${{fq:-$p}}\" bs=\"$k\" skip=$((a / k)) count=\"$c\" 2>/dev/null; fi; }} | $E\n\
                 printf '\\nEND-DATA 0-1\\n'\nelse\n{one_by_one}fi\n",
                dd(head.bs, head.skip_blocks, head.count)
            ));
        }
    }
}
