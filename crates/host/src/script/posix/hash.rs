//! The hash script ([`hash_many_script`]): the first bytes of many files hashed where they lie
//! (`grep --verify`), grouped by directory as a batched read groups them, each file checked and
//! opened as a batched read opens it.

use super::batch::{DIR_CHECK, FILE_CHECKS, bad_group_value};
use super::read::descriptor_check;
use super::script::{Script, assign_name, split_rel};
use crate::{FileRef, check_relative_path};

/// The hash script ([`crate::Host::hash_prefixes`]): before BEGIN it probes the strongest hash
/// tool the host has — `sha256sum`, else `shasum -a 256` (macOS), else `md5sum`, else `cksum` —
/// each held to its digest of `hi`; without any, the reply is `NOHASH` alone. Then, for each
/// file `i` and length `len`, a `FILE i` line and either an `ERR` line or `META size=<size>` and
/// `HASH <sha256|md5|cksum> <digest of its first len bytes>` (an empty digest when the tool
/// failed), the `ERR raced` of the check after the read when the name was swapped meanwhile,
/// and `END-FILE i`. The directory is entered and checked once per group (`gd`), each file
/// checked (`ck`) and opened once on descriptor 3, held to the inode of those checks (`fo`),
/// and its bytes read through `/proc/self/fd/3` where the host has it, else by name (as a read
/// does: `read.rs`). The bytes are cut with `head -c` where it answers, else with two `dd`s
/// (whole 64 KiB blocks, then the rest a byte a block).
pub fn hash_many_script(nonce: &str, files: &[(FileRef, u64)]) -> Vec<u8> {
    let mut s = Script::new(nonce);
    descriptor_check(&mut s);
    s.raw(FILE_CHECKS);
    s.raw(DIR_CHECK);
    s.raw(HASH_FNS);
    s.begin_settled();
    s.raw("[ -n \"$ht\" ] || { printf 'NOHASH\\n'; printf '\\n%s:END 0\\n' \"$N\"; exit 0; }\n");
    // Files grouped by directory, each group in the order it first appears.
    let mut groups: Vec<(&[u8], &[u8], Vec<usize>)> = Vec::new();
    for (i, (file, _)) in files.iter().enumerate() {
        let (dir, _) = split_rel(&file.rel);
        match groups
            .iter_mut()
            .find(|(root, d, _)| *root == file.root.as_slice() && *d == dir)
        {
            Some(group) => group.2.push(i),
            None => groups.push((file.root.as_slice(), dir, vec![i])),
        }
    }
    let mut previous_root: Option<&[u8]> = None;
    for (root, dir, members) in groups {
        if previous_root != Some(root) {
            s.raw("bad=\n");
            s.assign("R", root);
            s.raw(
                r#"gr=; [ -z "$bad" ] || gr=unsafe
if [ -z "$gr" ]; then if cd -P -- "$R" 2>/dev/null; then rr=$PWD; else gr=noroot; fi; fi
"#,
            );
            previous_root = Some(root);
        }
        s.raw("bad=\n");
        assign_name(&mut s, "D", dir);
        s.raw("gd; [ -z \"$bad\" ] || g=unsafe\n");
        let group_bad = bad_group_value(root, dir);
        for i in members {
            let (file, len) = &files[i];
            let (_, base) = split_rel(&file.rel);
            s.raw("bad=\n");
            assign_name(&mut s, "B", base);
            if group_bad || check_relative_path(&file.rel).is_err() {
                let code = if group_bad { "unsafe" } else { "badpath" };
                s.raw(&format!(
                    "printf 'FILE {i}\\n'\ncase $D in '') P=$R/$B ;; *) P=$R/$D/$B ;; esac\n\
                     fl {code}\nprintf 'END-FILE {i}\\n'\n"
                ));
                continue;
            }
            // Lengths past what `sh` arithmetic holds are past every end of file anyway.
            s.raw(&format!("hf {i} {}\n", (*len).min(i64::MAX as u64)));
        }
    }
    s.end("0")
}

/// The probe (`$ht`, the tool; `$hn`, its algorithm's name on the wire), `hs` (the tool over
/// stdin), `hr LEN` (the first LEN bytes of the file opened for `hf`) and `hf INDEX LEN` (one
/// file's section). Every tool is held to what it prints for `hi`, so a tool of that name that
/// computes something else is not used.
const HASH_FNS: &str = r#"unset -f sha256sum shasum md5sum cksum head 2>/dev/null
hs() { case $ht in sha256) sha256sum ;; shasum) shasum -a 256 ;; md5) md5sum ;; *) cksum ;; esac; }
for ht in sha256 shasum md5 cksum ''; do
  [ -n "$ht" ] || break
  set -- $(printf hi | hs 2>/dev/null)
  case $ht:${1:-} in
    sha256:8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4) break ;;
    shasum:8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4) break ;;
    md5:49f68a5c8493ec2c0bf489821c21fc3b) break ;;
    cksum:2352138605) break ;;
  esac
done
case $ht in shasum) hn=sha256 ;; *) hn=$ht ;; esac
hc=
[ "$(printf abc | head -c 2 2>/dev/null)" = ab ] && hc=1
hr() {
  if [ -n "$hc" ]; then head -c "$1" <"${fq:-$p}"
  else
    hq=$(($1 / 65536)) hm=$(($1 % 65536))
    [ "$hq" -gt 0 ] && dd if="${fq:-$p}" bs=65536 count="$hq"
    [ "$hm" -gt 0 ] && dd if="${fq:-$p}" bs=1 skip=$((hq * 65536)) count="$hm"
  fi
} 2>/dev/null
hf() {
  hj=$1 hl=$2
  printf 'FILE %s\n' "$hj"
  case $D in '') P=$R/$B ;; *) P=$R/$D/$B ;; esac
  if ck; then
    fk=
    {
      fk=1 fd_4=1
      if fo; then
        printf 'META size=%s\n' "$z"
        hv=$(hr "$hl" | hs)
        set -- $hv
        printf 'HASH %s %s\n' "$hn" "${1:-}"
        af
      else
        fl raced
      fi
    } 2>/dev/null 3<"$p" 4<.
    fd_4=
    [ -n "$fk" ] || fl raced
  fi
  printf 'END-FILE %s\n' "$hj"
}
"#;
