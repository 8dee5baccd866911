//! The find-and-read script ([`find_read_script`]): a listing narrowed to the files that may
//! be one session (by its harness's id globs, or a walk), and the read of the one match, or
//! of the top files asked for, in the same exec.

use super::listing::list_body;
use super::read::{GZIP_PROBE, lean_encoder, read_file_body, read_prelude};
use super::script::{Script, list_word, plain_words, root_dir};
use crate::script::quote;
use crate::{FirstRead, check_relative_path};
use clankie_model::harness::ID_MARK;
use clankie_model::{Harness, PathHint, RootSpec};

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
///
/// [`read_many_script`]: super::read_many_script
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
///
/// [`read_script`]: super::read_script
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
    // Each distinct read body once, as a function `tb<n>` that every top file it reads calls
    // in a subshell (a refusal's `exit` ends that subshell, as it ends an inline one): the
    // databases' files are read alike, and the command carries the body once.
    let mut bodies: Vec<String> = Vec::new();
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
            let n = match bodies.iter().position(|b| *b == body) {
                Some(n) => n,
                None => {
                    bodies.push(body);
                    bodies.len() - 1
                }
            };
            let read = format!("then (tb{n})\nfi\n");
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
"#,
    );
    for (n, body) in bodies.iter().enumerate() {
        s.raw(&format!("tb{n}() {{\n{body}}}\n"));
    }
    s.raw("if [ \"$nm\" = 0 ]; then\n");
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
pub(super) fn find_read_by_walk(
    nonce: &str,
    roots: &[RootSpec],
    id: &str,
    first: &FirstRead,
) -> Vec<u8> {
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

#[cfg(test)]
mod proptests {
    //! `scripts/fuzz`'s path-hint target: a cursor's hint, which anyone can write, is used only
    //! as a plain relative path one of the harness's id globs matches, whatever it holds.

    use proptest::prelude::*;

    use super::*;

    fn hint_bytes() -> impl Strategy<Value = Vec<u8>> {
        let parts = prop_oneof![
            Just(b"projects".to_vec()),
            Just(b"..".to_vec()),
            Just(b".".to_vec()),
            Just(b"".to_vec()),
            Just(b"-x".to_vec()),
            Just(b"sessions".to_vec()),
            Just(b"abc123.jsonl".to_vec()),
            Just(b"$(id)".to_vec()),
            Just(b"a\nb".to_vec()),
            prop::collection::vec(any::<u8>(), 0..12),
        ];
        prop::collection::vec(parts, 0..6).prop_map(|parts| parts.join(&b'/'))
    }

    proptest! {
        #[test]
        fn a_usable_hint_is_plain_relative_and_globbed(
            rel in hint_bytes(),
            harness in 0usize..64,
            id in prop_oneof![Just("abc123".to_string()), "[a-z0-9-]{1,12}"],
            other_harness in any::<bool>(),
        ) {
            let all: Vec<Harness> = clankie_engine::harness::all().collect();
            let harness = all[harness % all.len()];
            let hint = PathHint {
                harness: if other_harness { "nobody".into() } else { harness.name().into() },
                rel: rel.clone(),
            };
            if let Some(used) = usable_hint(Some(&hint), harness, &id) {
                prop_assert!(!other_harness);
                prop_assert_eq!(used, &rel[..]);
                prop_assert!(check_relative_path(used).is_ok());
                prop_assert!(!used.starts_with(b"-") && !used.starts_with(b"/"));
                prop_assert!(used.split(|&b| b == b'/').all(|p| p != b".." && p != b"." && !p.is_empty()));
                prop_assert!(used.iter().all(|b| b.is_ascii_alphanumeric() || b"._-+/%@=,:".contains(b)));
            }
        }
    }
}
