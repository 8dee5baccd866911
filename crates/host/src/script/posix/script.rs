//! A POSIX script under construction ([`Script`]: its group, environment, BEGIN and END),
//! and what every script writes with it: a value assigned without its bytes in the script
//! text, a root's directory, plain words.

use crate::script::quote;
use clankie_model::RootSpec;

/// `hx VALUE`: the value's bytes as lowercase hex on one line, with no newline after it.
const HEX_FN: &str =
    "hx() { printf '%s' $(printf '%s' \"$1\" | { od -An -v -tx1 || xxd -p; } 2>/dev/null); }\n";

/// Where the host has no `dd` (toybox), a `dd if= bs= skip= count=` of the one form the read
/// script uses, from `tail -c +N | head -c M`. Its variables are `dd_`-prefixed so that they
/// cannot clobber the script's.
const DD_FALLBACK: &str = r#"command -v dd >/dev/null 2>&1 || dd() {
  for dd_a do case $dd_a in if=*) dd_i=${dd_a#if=} ;; bs=*) dd_b=${dd_a#bs=} ;; skip=*) dd_s=${dd_a#skip=} ;; count=*) dd_c=${dd_a#count=} ;; esac; done
  tail -c +$((dd_s * dd_b + 1)) <"$dd_i" | head -c $((dd_c * dd_b))
}
"#;

/// A script under construction.
pub(super) struct Script(pub(super) Vec<u8>);

impl Script {
    /// Opens the group, sets a predictable environment and assigns the nonce.
    pub(super) fn new(nonce: &str) -> Script {
        let mut s = Script(Vec::with_capacity(4096));
        s.raw("{\n");
        s.raw("N=");
        s.word(nonce.as_bytes());
        s.raw("\nunset CDPATH\nIFS=' \t\n'\nLC_ALL=C; export LC_ALL\nset -f\nNL='\n'\nbad=\n");
        // Every time a script prints is seconds since the epoch, which no zone changes; with
        // `TZ` unset, glibc looks at /etc/localtime again for each time GNU `find -printf`
        // formats (`%Ts`, `%Cs`: a `stat` each), which is most of a listing's time.
        s.raw("TZ=UTC0; export TZ\n");
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

    pub(super) fn raw(&mut self, text: &str) {
        self.0.extend_from_slice(text.as_bytes());
    }

    /// One quoted shell word.
    pub(super) fn word(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(&quote(bytes));
    }

    /// `name=<bytes>` without the bytes ever appearing in the script text (see module doc).
    /// Leaves `$name` empty and `$bad` set when the shell could not carry the value.
    pub(super) fn assign(&mut self, name: &str, bytes: &[u8]) {
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

    pub(super) fn begin(&mut self) {
        self.raw("printf '\\n%s:BEGIN %s\\n' \"$N\" \"$(uname -s 2>/dev/null)\"\n");
    }

    /// BEGIN with `uname` only where the shell may be a Windows one (Git for Windows, MSYS2 and
    /// Cygwin run bash, which sets `OSTYPE`; see [`detect_dialect_switch`]): a shell
    /// that says Linux, or sets neither `OSTYPE` nor `MSYSTEM` (dash, busybox, mksh), costs no
    /// process and prints `-`.
    ///
    /// [`detect_dialect_switch`]: crate::script::detect_dialect_switch
    pub(super) fn begin_lean(&mut self) {
        self.raw(
            "case ${OSTYPE-}${MSYSTEM-} in ''|linux*) u=- ;; *) u=$(uname -s 2>/dev/null) ;; esac\n\
             printf '\\n%s:BEGIN %s\\n' \"$N\" \"$u\"\n",
        );
    }

    /// BEGIN without `uname` (a subshell and a process): for scripts sent once the host's
    /// dialect is settled, where nothing reads it.
    pub(super) fn begin_settled(&mut self) {
        self.raw("printf '\\n%s:BEGIN -\\n' \"$N\"\n");
    }

    /// Prints END and closes the group (stdin of everything in it: `/dev/null`).
    pub(super) fn end(mut self, rc: &str) -> Vec<u8> {
        self.raw(&format!(
            "printf '\\n%s:END {rc}\\n' \"$N\"\n}} </dev/null\n"
        ));
        self.0
    }
}

/// Assigns root `i`'s directory to `D<i>` (as given, else the harness's default home on the
/// host), and for a default root of a harness with a database variable (`OPENCODE_DB`) its
/// file name to `T<i>` (then `D<i>` is its directory). Returns that variable, if any.
pub(super) fn root_dir(s: &mut Script, i: usize, spec: &RootSpec) -> Option<&'static str> {
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

/// `name=<bytes>`: an empty value, or a name or path of plain characters (what session ids,
/// their suffixes and project directories are made of), is written as a quoted word, which
/// costs the shell nothing; any other goes through [`Script::assign`] (no byte of it in the
/// script text).
pub(super) fn assign_name(s: &mut Script, name: &str, bytes: &[u8]) {
    let plain = bytes
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

/// ` NAME…` as words of a script: the subdirs or top files of a harness's layout, which are
/// plain names (a layout holding another is a bug, not input).
pub(super) fn plain_words(names: &[&str], what: &str) -> String {
    let mut words = String::new();
    for name in names {
        assert!(is_plain_name(name), "{what} `{name}` must be a plain name");
        words.push(' ');
        words.push_str(&list_word(name));
    }
    words
}

/// A relative path's directory and file name.
pub(super) fn split_rel(rel: &[u8]) -> (&[u8], &[u8]) {
    match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&b""[..], rel),
    }
}

/// A directory name that needs no quoting once split from `$es`, and is not `--`.
pub(super) fn is_plain_name(name: &str) -> bool {
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
pub(super) fn glob_escape(text: &str) -> String {
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
pub(super) fn list_word(text: &str) -> String {
    String::from_utf8(quote(text.as_bytes())).expect("quoting ASCII stays ASCII")
}
