//! Windows PowerShell 5.1 scripts for the two primitives. Pure generators: [`exec_string`]
//! wraps a script into what the SSH exec request carries; the reply uses the same framing and
//! typed lines as the POSIX scripts and is decoded by [`super::decode_list`] and
//! [`super::decode_read`].
//!
//! How the scripts stay safe on a machine where nothing can be run to test them here:
//! - Windows PowerShell 5.1 (.NET Framework 4.6+) only: no `??`, no `?.`, no .NET Core APIs
//!   (`LinkTarget`, `EnumerationOptions`); `::new()` (PS 5.0+) is fine. The tests parse every
//!   generated script with the tree-sitter PowerShell grammar and lint its names.
//! - ASCII only. Every path travels as a base64 UTF-8 literal decoded in the script (with a
//!   throwing decoder), never as script text, and comes back hex-encoded (`FX`, `ROOT`, `ERR`),
//!   so no code page, BOM or quoting rule can alter a byte.
//! - Output goes through one buffered ASCII writer on the raw stdout stream, lines end in CRLF,
//!   nothing reaches the PowerShell pipeline (so no formatting, no width wrapping), and
//!   `$ProgressPreference` comes first so no CLIXML progress record is produced.
//! - PowerShell scoping is dynamic and its names are case-insensitive: a function sees its
//!   caller's locals, and `$P` is `$p`. Script-wide names are therefore long and no function
//!   uses them for locals; locals are single letters.
//! - Listing walks directories by hand (a stack, try/catch per directory) and skips reparse
//!   points (junctions, symlinks): `EnumerateFiles` follows junctions and aborts on the first
//!   access-denied folder. Sizes come from an open stream's `Length` (directory entries are
//!   stale while a file is being written), falling back to the entry's size when the open fails.
//! - Reading confines the path: `GetFullPath` must give back exactly `<root>\<rel>` (which also
//!   refuses the trailing dots and spaces Windows would strip, and device names), the
//!   case-insensitive root prefix holds, no `:` after the drive (alternate data streams), no
//!   `\\?\` or `\\.\`, and no reparse point on any component below the root. The file is opened
//!   with `FileShare 'ReadWrite, Delete'` so a writing agent is never disturbed.
//! - Constrained Language Mode blocks the .NET calls; the script says so with `ERR restricted`
//!   through plain pipeline output instead of failing obscurely.

use base64::Engine as _;

use super::{Invocation, aligned, hex_encode};
use crate::{FileRef, check_ranges, check_relative_path};
use clankie_model::limits::MAX_RANGES;
use clankie_model::{ByteRange, ListSpec, RootSpec};

/// cmd.exe takes at most 8191 characters; stay clearly below.
pub const EXEC_LIMIT: usize = 8000;

/// The start of every exec string.
pub const EXEC_PREFIX: &str = "powershell -NoProfile -NonInteractive -EncodedCommand ";

/// The script a bootstrapped exec string runs: it reads stdin to the end and runs it as one
/// script block (never `-Command -`, which runs stdin line by line and drops multi-line
/// statements). The sender must close stdin after the script.
pub const BOOTSTRAP: &str =
    "$ProgressPreference='SilentlyContinue';&([ScriptBlock]::Create([Console]::In.ReadToEnd()))";

/// `powershell … -EncodedCommand <base64 of UTF-16LE>` when that stays under [`EXEC_LIMIT`]
/// characters, else the [`BOOTSTRAP`] as the command and the script on stdin.
pub fn exec_string(script: &str) -> Invocation {
    let direct = encoded_command(script);
    if direct.len() < EXEC_LIMIT {
        return Invocation {
            exec: direct,
            stdin: Vec::new(),
        };
    }
    Invocation {
        exec: encoded_command(BOOTSTRAP),
        stdin: script.as_bytes().to_vec(),
    }
}

fn encoded_command(script: &str) -> String {
    let utf16: Vec<u8> = script.encode_utf16().flat_map(u16::to_le_bytes).collect();
    format!(
        "{EXEC_PREFIX}{}",
        base64::engine::general_purpose::STANDARD.encode(utf16)
    )
}

/// Script-wide helpers. `W` writes a line, `D` decodes a base64 UTF-8 literal, `X` hex-encodes
/// a string's UTF-8 bytes (both throw on what UTF-8 cannot carry, e.g. a lone surrogate).
const PRELUDE: &str = r#"
$ProgressPreference='SilentlyContinue'
$ErrorActionPreference='Stop'
"#;

/// Opens the frame (after the language-mode check) and defines the helpers.
const OPEN: &str = r#"
$wr=[IO.StreamWriter]::new([Console]::OpenStandardOutput(),[Text.Encoding]::ASCII,65536)
$u8=[Text.UTF8Encoding]::new($false,$true)
function W($s){$wr.Write($s);$wr.Write("`r`n")}
function X($s){[BitConverter]::ToString($u8.GetBytes($s)).Replace('-','')}
W ''
W ($nonce+':BEGIN WindowsPowerShell '+$PSVersionTable.PSVersion+' '+$lm)
"#;

/// `D base64`: a path or root passed as base64 UTF-8 (left out of scripts that pass none, to
/// keep the default list on the command line).
const DECODE_FN: &str = r#"
function D($b){$u8.GetString([Convert]::FromBase64String($b))}
"#;

/// Closes the frame: a failure anywhere is one `ERR script <hex of message>` line.
const CLOSE: &str = r#"
W ''
W ($nonce+':END '+$rc)
$wr.Flush()
"#;

/// `L harness dir max-depth subdirs endings names top-files skips`: a `ROOT` line (exists = one
/// of the subdirs is a real directory), then for each existing subdir an `FX` line per file
/// whose name ends in one of `endings` or is one of `names` (an `S` line per name UTF-8 cannot
/// carry). Files `d` directories below a subdir are listed for `d <= max-depth`. The empty
/// subdir is the root itself (a project tree: its paths start at its entries' names), and no
/// directory named one of `skips` is entered.
const LIST_FN: &str = r#"
function L($h,$d,[int]$m,$ss,$xe,$xw,$tf,$xs){
$r=$null
try{$r=[IO.Path]::GetFullPath($d);if($r.Length -gt 3){$r=$r.TrimEnd('\')}}catch{}
if(!$r -or ![IO.Directory]::Exists($r)){W ('ROOT '+$h+' 0 '+(X $d));return}
$e=0
$g=$r.TrimEnd('\')+'\'
$k=[Collections.Stack]::new()
foreach($s in $ss){
$t=$g+$s.Replace('/','\')
try{if(([int]([IO.File]::GetAttributes($t)) -band 1040) -eq 16){$e=1;$k.Push(@([IO.DirectoryInfo]::new($t),$s,0))}}catch{}
}
$q=@()
foreach($w in $tf){try{$i=[IO.FileInfo]::new($g+$w);if($i.Exists -and !([int]$i.Attributes -band 1024)){$e=1;$q+=,$i}}catch{}}
W ('ROOT '+$h+' '+$e+' '+(X $r))
foreach($i in $q){W ('FX '+$i.Length+' '+[DateTimeOffset]::new($i.LastWriteTimeUtc).ToUnixTimeSeconds()+' '+(X $i.Name))}
while($k.Count -gt 0){
$c=$k.Pop()
try{$l=$c[0].GetFileSystemInfos()}catch{continue}
foreach($i in $l){
$a=[int]$i.Attributes
if($a -band 1024){continue}
$n=$i.Name
if($c[1]){$n=$c[1]+'/'+$n}
if($a -band 16){if($c[2] -lt $m -and $xs -notcontains $i.Name){$k.Push(@($i,$n,($c[2]+1)))};continue}
$ok=$false
foreach($w in $xe){if($i.Name.EndsWith($w,'Ordinal')){$ok=$true}}
foreach($w in $xw){if($i.Name -ceq $w){$ok=$true}}
if(!$ok){continue}
try{$y=X $n}catch{W 'S';continue}
$z=$i.Length
try{$f=[IO.File]::Open($i.FullName,'Open','Read','ReadWrite, Delete');$z=$f.Length;$f.Dispose()}catch{}
$v=[DateTimeOffset]::new($i.LastWriteTimeUtc).ToUnixTimeSeconds()
W ('FX '+$z+' '+$v+' '+$y)
}
}
}
"#;

/// `H variable env-relative home-relative`: a harness's default home. `%variable%` when set and
/// non-empty (joined with `env-relative` when that is not empty: the variable names a directory
/// above the home), else `<profile>\<home-relative>`, the profile being `%USERPROFILE%` or, when
/// that is empty, what the OS says.
const HOME_FN: &str = r#"
function H($v,$a,$b){
$d=$null
if($v){$d=[Environment]::GetEnvironmentVariable($v)}
if($d -and $a){$d=$d.TrimEnd('\')+'\'+$a}
if(!$d){$p=$env:USERPROFILE;if(!$p){$p=[Environment]::GetFolderPath('UserProfile')};$d=$p.TrimEnd('\')+'\'+$b}
$d
}
"#;

/// `G stream size index start offset count`: one range, `count` bytes from `offset` (the
/// aligned block) as one base64 line between `DATA i` and `END-DATA i`; nothing when the range
/// starts at or past the end.
const RANGE_FN: &str = r#"
function G($f,[long]$z,[int]$i,[long]$s,[long]$q,[int]$n){
W ('DATA '+$i)
if($n -gt 0 -and $s -lt $z){
$b=New-Object byte[] $n
[void]$f.Seek($q,'Begin')
$k=0
while($k -lt $n){$m=$f.Read($b,$k,$n-$k);if($m -le 0){break};$k+=$m}
W ([Convert]::ToBase64String($b,0,$k))
}
W ('END-DATA '+$i)
}
"#;

/// `M`: confinement checks, then `META` and the ranges. Returns an ERR code on refusal (then
/// nothing else was written), nothing on success. Expects `$rootpath` and `$relpath` (with
/// backslashes); the range calls are appended inside the `try`. A .NET exception may reach a
/// `catch` wrapped in a `MethodInvocationException`, so the open failure looks at the inner one
/// instead of relying on a typed `catch`.
const READ_FN_HEAD: &str = r#"
function M{
try{$r=[IO.Path]::GetFullPath($rootpath)}catch{return 'noroot'}
if($r.Length -gt 3){$r=$r.TrimEnd('\')}
if($r.StartsWith('\\?\') -or $r.StartsWith('\\.\')){return 'badpath'}
if(![IO.Directory]::Exists($r)){return 'noroot'}
$b=$r.TrimEnd('\')+'\'
try{$p=[IO.Path]::GetFullPath($b+$relpath)}catch{return 'badpath'}
if(!$p.StartsWith($b,[StringComparison]::OrdinalIgnoreCase)){return 'outside'}
if($p -cne ($b+$relpath) -or $p.IndexOf(':',2) -ge 0 -or $p.StartsWith('\\?\') -or $p.StartsWith('\\.\')){return 'badpath'}
$d=[IO.Path]::GetDirectoryName($p)
while($d.Length -gt $r.Length){
if(![IO.Directory]::Exists($d)){return 'nodir'}
if([int]([IO.File]::GetAttributes($d)) -band 1024){return 'outside'}
$d=[IO.Path]::GetDirectoryName($d)
}
try{$a=[int]([IO.File]::GetAttributes($p))}catch{return 'missing'}
if($a -band 1024){return 'symlink'}
if($a -band 16){return 'notfile'}
try{$f=[IO.File]::Open($p,'Open','Read','ReadWrite, Delete')}catch{
$x=$_.Exception
if($x.InnerException){$x=$x.InnerException}
if($x -is [UnauthorizedAccessException]){return 'unreadable'}
return 'open'
}
try{
$z=$f.Length
W ('META size='+$z+' enc=b64')
"#;

const READ_FN_TAIL: &str = r#"
}finally{$f.Dispose()}
}
"#;

/// A script under construction: lines are written indented for reading here and emitted
/// without leading whitespace or blank lines (the length bound is tight).
struct Script(String);

impl Script {
    /// The prelude, the nonce, and the Constrained Language Mode check; then the frame opens.
    fn new(nonce: &str) -> Script {
        // The nonce is ours (hex from `new_nonce`); anything else would be script text.
        assert!(
            !nonce.is_empty() && nonce.bytes().all(|b| b.is_ascii_alphanumeric()),
            "nonce must be ASCII alphanumeric"
        );
        let mut s = Script(String::with_capacity(3072));
        s.raw(PRELUDE);
        s.raw(&format!("$nonce='{nonce}'\n$rc=0\n"));
        // In Constrained Language Mode only core types work, so this reply is plain pipeline
        // output; everything else sits in the `else` branch.
        s.raw(
            "$lm=$ExecutionContext.SessionState.LanguageMode\nif($lm -ne 'FullLanguage'){\n\
             ''\n$nonce+':BEGIN WindowsPowerShell restricted'\n'ERR restricted '\n''\n$nonce+':END 1'\n\
             }else{\n",
        );
        s.raw(OPEN);
        s
    }

    fn raw(&mut self, text: &str) {
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            self.0.push_str(line);
            self.0.push('\n');
        }
    }

    /// Runs `body` (statements) so that any exception becomes an `ERR script` line, then closes
    /// the frame and the language-mode `else`.
    fn finish(mut self, body: &str) -> String {
        self.raw("try{\n");
        self.raw(body);
        self.raw("}catch{W ('ERR script '+(X $_.Exception.Message));$rc=1}\n");
        self.raw(CLOSE);
        self.raw("}\n");
        self.0
    }
}

/// A base64 literal of a string's UTF-8 bytes, decoded by the script's `D`.
fn b64_literal(text: &str) -> String {
    format!(
        "(D '{}')",
        base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
    )
}

/// A static ASCII value from the model (harness names, subdirs, suffixes, variable names,
/// home-relative directories): single-quoted, so only `'` would be special, and it is refused.
fn static_literal(text: &str) -> String {
    assert!(
        text.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-/\\".contains(&b)),
        "unexpected character in static value {text:?}"
    );
    format!("'{text}'")
}

/// The list script: for each root a `ROOT` line, then an `FX` line per transcript file (see the
/// wire format in [`super`]). Roots given explicitly must be UTF-8 (Windows paths are); one that
/// is not makes the reply `ERR unsafe`.
pub fn list_script(nonce: &str, roots: &[RootSpec]) -> String {
    let mut s = Script::new(nonce);
    let mut body = String::new();
    if roots.iter().any(|r| {
        r.dir
            .as_deref()
            .is_some_and(|d| std::str::from_utf8(d).is_err())
    }) {
        body.push_str("W 'ERR unsafe '\n$rc=1\n");
        return s.finish(&body);
    }
    s.raw(LIST_FN);
    if roots.iter().any(|r| r.dir.is_some()) {
        s.raw(DECODE_FN);
    }
    if roots.iter().any(|r| r.dir.is_none()) {
        s.raw(HOME_FN);
    }
    for spec in roots {
        let dir = match &spec.dir {
            Some(dir) => b64_literal(std::str::from_utf8(dir).expect("checked above")),
            None => {
                let home = spec.harness.default_home();
                format!(
                    "(H {} {} {})",
                    static_literal(home.env_var.unwrap_or("")),
                    static_literal(&home.env_relative.replace('/', "\\")),
                    static_literal(&home.home_relative.replace('/', "\\")),
                )
            }
        };
        let list = spec.harness.list_spec();
        let (names, endings): (Vec<&str>, Vec<&str>) =
            list.suffixes.iter().partition(|s| s.starts_with('/'));
        let array = |items: &[&str]| {
            let items: Vec<String> = items.iter().map(|s| static_literal(s)).collect();
            format!("@({})", items.join(","))
        };
        let names: Vec<&str> = names.iter().map(|n| &n[1..]).collect();
        let skips: &[&str] = if list.walks_project_tree() {
            ListSpec::PROJECT_TREE_SKIPS
        } else {
            &[]
        };
        body.push_str(&format!(
            "L {} {dir} {} {} {} {} {} {}\n",
            static_literal(spec.harness.name()),
            list.max_depth,
            array(list.subdirs),
            array(&endings),
            array(&names),
            array(list.top_files),
            array(skips),
        ));
    }
    s.finish(&body)
}

/// The read script: confinement checks (an `ERR` line on refusal), a `META` line with the
/// file's true size (`enc=b64`), then each range's aligned block between `DATA i` and
/// `END-DATA i`. `file.root` is a root as a listing returned it; `file.rel` is `/`-separated.
pub fn read_script(nonce: &str, file: &FileRef, ranges: &[ByteRange]) -> String {
    let mut s = Script::new(nonce);
    let root = std::str::from_utf8(&file.root).ok();
    let rel = std::str::from_utf8(&file.rel).ok();
    // Refusals the client can decide alone still travel as the same ERR lines, so that every
    // caller handles one error path.
    let refusal = match (root, rel) {
        (Some(root), Some(rel)) => {
            if check_relative_path(file.rel.as_slice()).is_err()
                || root.is_empty()
                || root.contains('\0')
                // Names Windows cannot hold, or that would address a stream or a device; a
                // backslash is a separator here, not the name byte it is on POSIX hosts.
                || rel.contains([':', '*', '?', '"', '<', '>', '|', '\\'])
                || rel.chars().any(|c| c.is_control())
            {
                Some("badpath")
            } else if check_ranges(ranges).is_err() || ranges.len() > MAX_RANGES {
                Some("badrange")
            } else {
                None
            }
        }
        _ => Some("unsafe"),
    };
    let mut display = file.root.clone();
    if !display.ends_with(b"\\") && !display.ends_with(b"/") {
        display.push(b'\\');
    }
    display.extend(file.rel.iter().map(|&b| if b == b'/' { b'\\' } else { b }));
    if let Some(code) = refusal {
        let body = format!("W 'ERR {code} {}'\n$rc=1\n", hex_encode(&display));
        return s.finish(&body);
    }
    let (root, rel) = (root.expect("checked"), rel.expect("checked"));
    s.raw(DECODE_FN);
    s.raw(RANGE_FN);
    s.raw(READ_FN_HEAD);
    for (i, range) in ranges.iter().enumerate() {
        let wire = aligned(range);
        // Offsets past what a .NET long holds are past every end of file anyway.
        let start = range.start.min(i64::MAX as u64);
        let offset = wire
            .bs
            .saturating_mul(wire.skip_blocks)
            .min(i64::MAX as u64);
        // At most the 4 MiB cap plus two blocks (checked above): fits an int.
        let count = wire.max_bytes();
        s.raw(&format!("G $f $z {i} {start} {offset} {count}\n"));
    }
    s.raw(READ_FN_TAIL);
    // The ERR path is rebuilt in the script: a hex literal would cost twice the path's length
    // of the command line.
    let body = format!(
        "$rootpath={}\n$relpath={}\n$e=M\n\
         if($e){{W ('ERR '+$e+' '+(X ($rootpath.TrimEnd('\\')+'\\'+$relpath)));$rc=1}}\n",
        b64_literal(root),
        b64_literal(&rel.replace('/', "\\")),
    );
    s.finish(&body)
}

#[cfg(test)]
mod tests;
