//! The batched read script ([`read_many_script`]): many files in one exec, grouped by
//! directory, each read by its ranges, or the small files of a root read whole in one `CAT`
//! block.

use super::read::{Encoder, read_prelude, refusal};
use super::script::{Script, assign_name, split_rel};
use crate::FileRef;
use crate::script::{aligned, whole_file_cap};
use clankie_model::ByteRange;

/// The batched read script ([`crate::Host::read_many`]): for each file `i`, a `FILE i` line,
/// then what [`read_script`] prints for it (an `ERR` line, or META and its ranges, and `ERR
/// raced` after a swap), then `END-FILE i`; or, for the small files of a directory read whole,
/// one `CAT` block (below). The files of one directory are read together, in the order of their
/// first appearance (`FILE` lines are numbered, not ordered): the root and the directory are
/// resolved and checked once (`cd -P` and `$PWD`, as for one file). A file read by its ranges
/// then costs its own checks (shell builtins), `ls` before and after, a `stat` of the one
/// descriptor its ranges are read through (held to the inode of that `ls`: see `fo` in
/// `read.rs`), and a `dd` per range,
/// all into one encoder (`DATA 0-<last>`, as `emit_ranges` merges them) when every range but
/// the last lies whole below the file's end, else each into its own (the database's scattered
/// pages: one encoder for a few hundred ranges instead of one each); a refusal ends that file's
/// section only.
///
/// A file whose ranges start at 0 and reach its end ([`whole_file_cap`]: what `check`
/// asks of a small session, whose head and tail are the whole file) is read whole with the
/// other such files of its root (every directory of it in the batch), in few processes: one
/// `stat` of their inodes, sizes and modes (each directory on the way named first: it must still
/// be a directory, not a symlink) and one `stat` again after the read, from the root by their
/// paths below it, and between them one `cat` a directory of those no larger than their cap, run
/// from inside that directory (entered with `cd -P` and checked), into one encoder. Each
/// directory is checked (physically exactly below the root) when its files join, just before the
/// first `stat`, before its `cat`, and again after the read: a directory moved in between makes
/// every file of the block be read again, each from inside its own directory. A directory
/// swapped for a link and back cannot move a `cat`, which names its files from the directory it
/// stands in; a `stat` it moves sees other files than the `cat` read, and the lengths or the
/// second `stat` differ. Where no `stat` answers (or it does not answer for every file) they
/// are read one by one after all. With `encoder` named (a host whose listing came compressed
/// names [`Encoder::Gzip`]) nothing is probed and BEGIN carries no `uname`. See
/// [`crate::script`] for the `CAT` block, and [`read_many_script_with`].
///
/// [`read_script`]: super::read_script
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
    s.raw(FILE_CHECKS);
    s.raw(
        r#"mw() {
  while [ $# -gt 4 ]; do [ $((($3 + $4) * $2)) -le "$z" ] || return 1; shift 4; done
}
ms() {
  if [ -n "$hp" ]; then
    PERL5OPT= PERL5LIB= PERLLIB= PERLIO= perl -e "$PM" -- "${fq:-$p}" "$z" "$@"
    return
  fi
  while [ $# -gt 4 ]; do
    [ "$4" -gt 0 ] && dd if="${fq:-$p}" bs="$2" skip="$3" count="$4" 2>/dev/null
    shift 4
  done
  if [ "$4" -gt 0 ] && [ "$1" -lt "$z" ]; then dd if="${fq:-$p}" bs="$2" skip="$3" count="$4" 2>/dev/null; fi
}
pf() {
  pn=$1; shift
  printf 'FILE %s\n' "$pn"
  case $D in '') P=$R/$B ;; *) P=$R/$D/$B ;; esac
  if ck; then
    fk=
    {
      fk=1 fd_4=1
      if fo; then
        printf 'META size=%s enc=%s\n' "$z" "$e"
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
      else
        fl raced
      fi
    } 2>/dev/null 3<"$p" 4<.
    fd_4=
    [ -n "$fk" ] || fl raced
  fi
  printf 'END-FILE %s\n' "$pn"
}
"#,
    );
    let candidates: Vec<Option<u64>> = reads
        .iter()
        .map(|(file, ranges)| {
            whole
                .then(|| whole_file_cap(ranges))
                .flatten()
                .filter(|_| refusal(file, ranges).is_none())
        })
        .collect();
    // `gd` enters directory `$D` of the current root and checks that it is physically exactly
    // `<root>/<dir>` (`$g`: the verdict, an ERR code; empty when it is), as `read_script` checks
    // one file's directory. `cd -P` sets `$PWD` to the physical directory it entered (POSIX;
    // dash, bash, busybox, mksh, posh, yash and zsh do, newline-ended names included): the
    // `$(pwd -P)` subshell of `read_script` would cost a process per directory, twice.
    s.raw(DIR_CHECK);
    if candidates.iter().any(Option::is_some) {
        // `cw INDEX CAP RANGE…` (`$D` the directory, checked and entered by `gd`; `$B` the
        // name): a file that passes the checks a read makes before `ls` joins its directory's
        // candidates (`$WD` their indexes, `$LD` the words that name them below the root for
        // `eval`; `f<i>`, `d<i>`, `c<i>`, `r<i>` its path below the root, its directory, cap
        // and ranges), any other is read by its ranges at once, which reports why not. `ds K`
        // adds a directory's candidates to the root's (`$W`, `$LA`; `w<K>` the directory's own).
        // Lists grow a directory at a time: a string grown a file at a time costs sh time in the
        // square of its length. `ca` reads the candidates of every directory of the root at
        // once: every directory (`$G`, the groups' numbers; `q<k>`, each one's
        // directory) is checked again with `gd` just before, then one `stat` (`st`) names each
        // directory on the way (`$LT`, `$nt` of them: each must still be one, `sx`) and every
        // candidate by its path below the root (regular files; their inodes, sizes and modes
        // are what the decoder holds the read to; one process a root, not one a directory);
        // those no larger than their cap (`$KP`, their words from the root; `y<k>`, from their
        // directory; `$CQ` the others) go into the encoder one `cat` a directory, each run in a
        // subshell from inside its directory once `gd` has entered and checked it (a directory
        // that fails the check gives nothing: the length is wrong), and are stat'ed again from
        // the root, the directories first again; then every directory is checked again: one
        // moved or no longer a directory empties the second `STAT`, and every file is read
        // again. A `cat` reads the files of the directory it stands in, whatever its name leads
        // to meanwhile; a `stat` that a swapped name led elsewhere saw other files than the
        // `cat` read, which gives another inode, size or mode in the other `stat`, or another
        // length (the decoder answers none of the files from a wrong length). Without a `stat`
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
    eval "f$cj=\$p n$cj=./\$B d$cj=\$D c$cj=\$cz r$cj=\"\$*\""
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
      kd= kn=
      for cj in $wk; do
        [ $# -ge 3 ] || { sf=1; break 2; }
        case $1$2 in *[!0-9]*) sf=1; break 2 ;; esac
        case $3 in 8???) ;; *) sf=1; break 2 ;; esac
        eval "cz=\$c$cj"
        if [ "$2" -le "$cz" ]; then kd="$kd \"\$f$cj\"" kn="$kn \"\$n$cj\""; else CQ="$CQ $cj"; fi
        shift 3
      done
      KP="$KP$kd"
      eval "y$k=\$kn"
    done
    [ $# = 0 ] || sf=1
  fi
  if [ -n "$sf" ]; then
    for cj in $W; do po; done
    return 0
  fi
  printf 'CAT %s%s\nSTAT\n%s\nEND-STAT\nDATA 0\n' "$e" "$W" "$S1"
  [ -z "$KP" ] || {
    for k in $G; do
      eval "D=\$q$k yk=\$y$k"
      [ -n "$yk" ] || continue
      gd
      [ -n "$g" ] || eval "cat $yk"
    done
  } 2>/dev/null | enc
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

/// `fl CODE` prints an `ERR` line for `$P`; `ck` makes the checks a read makes before it opens
/// `./$B` (in the directory `gd` entered; `$g` its verdict, `$bad` the name's) and sets `$i` and
/// `$z` to its inode and size (`ls -lni`), or prints why not; `af`, after the read, checks that
/// the name is still that inode and no symlink.
pub(super) const FILE_CHECKS: &str = r#"fl() { printf 'ERR %s ' "$1"; hx "$P"; printf '\n'; }
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
  case $2 in -*) ;; *) fl raced; return 1 ;; esac
  case $z in '' | *[!0-9]*) fl nosize; return 1 ;; esac
}
af() {
  [ -L "$p" ] && { fl raced; return 0; }
  s=$(ls -lni "$p" 2>/dev/null) || { fl raced; return 0; }
  set -- $s
  [ "$1" = "$i" ] || fl raced
}
"#;

/// `gd` enters directory `$D` of the current root (`$rr`, resolved, `$gr` its verdict) and
/// checks that it is physically exactly `<root>/<dir>` (`$g`: the verdict, an ERR code; empty
/// when it is).
pub(super) const DIR_CHECK: &str = r#"gd() {
  g=$gr
  if [ -z "$g" ]; then
    case $rr in /) rb= ;; *) rb=$rr ;; esac
    if [ -n "$D" ]; then w="$rb/$D"; cd -P -- "$w" 2>/dev/null || g=nodir
    else w=$rr; cd -P -- "$rr" 2>/dev/null || g=noroot; fi
  fi
  [ -n "$g" ] || [ "$PWD" = "$w" ] || g=outside
}
"#;

/// A root or directory the script must not be handed: what `refusal` refuses for every file.
pub(super) fn bad_group_value(root: &[u8], dir: &[u8]) -> bool {
    root.is_empty() || root.contains(&0) || dir.contains(&0)
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
