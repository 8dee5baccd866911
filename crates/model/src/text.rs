//! A record's text as the source wrote it, when that can be kept: [`LazyText`] holds either the
//! plain text or the JSON string token it was read from, and gives the plain text on demand.
//!
//! Why: `--all --json` of a Claude transcript spends much of its time unescaping each string
//! into a `String` and escaping it again on the way out. When the source's escaping is exactly
//! the one the JSON writer would produce, and nothing (redaction) changes the text, the token
//! can go from the line to the output as it is.

use std::fmt;
use std::ops::Deref;
use std::sync::{LazyLock, OnceLock};

use memchr::memmem;

/// Text that is plain, or still a JSON string token in its canonical escaping (exactly
/// `serde_json::to_string` of the text); the plain text is made from the token the first time
/// it is asked for, and kept. Compares, hashes and prints as its plain text.
#[derive(Clone)]
pub struct LazyText(Repr);

#[derive(Clone)]
enum Repr {
    Plain(String),
    Token {
        /// The token, quotes included.
        token: Box<str>,
        plain: OnceLock<String>,
    },
}

impl LazyText {
    /// The text of `token`, a JSON string as a JSON parser accepted it (quotes included: what
    /// `serde_json`'s `RawValue` holds), kept as the token when its escaping is the canonical
    /// one; `None` when it is not, for the caller to unescape it another way. An escape JSON
    /// does not write for that character (`\/`, `\u00e9`, `\u001B`) or a short form written
    /// long (`\u000a`) makes it `None`. A token no parser would accept (a raw quote or control,
    /// a bad escape) is the caller's error: checked in debug builds only, since a release build
    /// is given tokens straight from the parser and the check would cost a scan of each.
    pub fn from_json_token(token: &str) -> Option<LazyText> {
        debug_assert!(
            serde_json::from_str::<String>(token).is_ok(),
            "not a JSON string token: {token}"
        );
        is_canonical_token(token.as_bytes()).then(|| {
            LazyText(Repr::Token {
                token: token.into(),
                plain: OnceLock::new(),
            })
        })
    }

    /// The canonical JSON string token of the text (quotes included), when it is held as one:
    /// what a JSON writer may copy instead of escaping the plain text.
    pub fn json_token(&self) -> Option<&str> {
        match &self.0 {
            Repr::Token { token, .. } => Some(token),
            Repr::Plain(_) => None,
        }
    }

    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Plain(text) => text,
            Repr::Token { token, plain } => plain.get_or_init(|| unescape(token)),
        }
    }

    /// Whether the text is empty or white space only (`str::trim`'s), looked at in the token
    /// where it can be: text that starts, after spaces, with a printable ASCII character other
    /// than `\` is not blank, and is not unescaped to find that out.
    pub fn is_blank(&self) -> bool {
        if let Repr::Token { token, .. } = &self.0 {
            let first = token.as_bytes()[1..].iter().find(|&&b| b != b' ');
            if first.is_some_and(|&b| b.is_ascii_graphic() && b != b'\\' && b != b'"') {
                return false;
            }
        }
        self.as_str().trim().is_empty()
    }

    /// The plain text to change in place; the token, which would no longer match it, is
    /// dropped.
    pub fn make_plain(&mut self) -> &mut String {
        if let Repr::Token { token, plain } = &mut self.0 {
            let text = plain.take().unwrap_or_else(|| unescape(token));
            self.0 = Repr::Plain(text);
        }
        match &mut self.0 {
            Repr::Plain(text) => text,
            Repr::Token { .. } => unreachable!("made plain above"),
        }
    }

    pub fn into_string(self) -> String {
        match self.0 {
            Repr::Plain(text) => text,
            Repr::Token { token, plain } => plain.into_inner().unwrap_or_else(|| unescape(&token)),
        }
    }
}

/// The two escapes [`is_canonical_token`] looks for, each searcher built once (building one
/// costs more than searching a short token).
static SLASH_ESCAPE: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"\\/"));
static UNICODE_ESCAPE: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"\\u"));

/// The text of a token [`is_canonical_token`] accepted.
fn unescape(token: &str) -> String {
    serde_json::from_str(token).expect("a canonical JSON string token parses")
}

/// Whether a parser-accepted JSON string token escapes the way serde_json (and
/// `JSON.stringify`) writes: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, and `\u00xx` in
/// lowercase for the other controls below 0x20, and nothing else. Since the parser accepted
/// it, every raw quote and control is already escaped and every escape is well formed; what
/// is left to find is a `\/` or a `\u` that is not one of those. A search for the two bytes
/// together rarely stops in text, where most escapes are `\n` and `\"`.
fn is_canonical_token(token: &[u8]) -> bool {
    let Some(inner) = token
        .strip_prefix(b"\"")
        .and_then(|rest| rest.strip_suffix(b"\""))
    else {
        return false;
    };
    let escape_starts_at = |at: usize| {
        // An odd run of backslashes before `at` escapes this one: it is text, not an escape.
        let before = inner[..at]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        before % 2 == 0
    };
    if SLASH_ESCAPE.find_iter(inner).any(escape_starts_at) {
        return false;
    }
    UNICODE_ESCAPE
        .find_iter(inner)
        .filter(|&at| escape_starts_at(at))
        .all(|at| {
            inner
                .get(at..at + 6)
                .is_some_and(is_canonical_unicode_escape)
        })
}

/// Whether `\uXXXX` is how serde_json writes its character: a control below 0x20 with no
/// short form, in lowercase hex.
fn is_canonical_unicode_escape(escape: &[u8]) -> bool {
    match escape {
        [
            b'\\',
            b'u',
            b'0',
            b'0',
            high @ (b'0' | b'1'),
            low @ (b'0'..=b'9' | b'a'..=b'f'),
        ] => {
            let code = ((high - b'0') << 4) | (*low as char).to_digit(16).unwrap_or(0) as u8;
            !matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d)
        }
        _ => false,
    }
}

impl Deref for LazyText {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for LazyText {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Default for LazyText {
    fn default() -> Self {
        LazyText(Repr::Plain(String::new()))
    }
}

impl From<String> for LazyText {
    fn from(text: String) -> Self {
        LazyText(Repr::Plain(text))
    }
}

impl From<&str> for LazyText {
    fn from(text: &str) -> Self {
        LazyText(Repr::Plain(text.to_string()))
    }
}

impl From<LazyText> for String {
    fn from(text: LazyText) -> Self {
        text.into_string()
    }
}

impl PartialEq for LazyText {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for LazyText {}

impl PartialEq<str> for LazyText {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for LazyText {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for LazyText {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl std::hash::Hash for LazyText {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl fmt::Debug for LazyText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for LazyText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every character class the escaping treats differently.
    const SAMPLES: &[&str] = &[
        "",
        "plain words",
        "say \"hi\" to C:\\dir",
        "lines\nand\ttabs\r\n",
        "controls \u{0} \u{1} \u{8} \u{b} \u{c} \u{1b}[31m \u{1f}",
        "DEL \u{7f}, C1 \u{9b}, separators \u{2028}\u{2029}, bidi \u{202e}",
        "ünïcode, emoji 🦀, slash / and </script>",
    ];

    #[test]
    fn a_token_written_by_serde_json_is_kept_and_gives_its_text() {
        for &text in SAMPLES {
            let token = serde_json::to_string(text).unwrap();
            let lazy = LazyText::from_json_token(&token).expect(&token);
            assert_eq!(lazy.json_token(), Some(token.as_str()));
            assert_eq!(lazy.as_str(), text);
            assert_eq!(lazy.clone().into_string(), text);
            assert_eq!(lazy, LazyText::from(text));
        }
    }

    #[test]
    fn a_token_escaped_another_way_is_refused() {
        for token in [
            r#""a\/b""#,
            r#""caf\u00e9""#,
            r#""\u001B""#,
            r#""\u000a""#,
            r#""\u0009""#,
            r#""\ud83e\udd80""#,
            r#""\\\/ after an escaped backslash""#,
            r#""\\\u0041""#,
        ] {
            assert!(LazyText::from_json_token(token).is_none(), "{token}");
        }
    }

    #[test]
    fn an_escaped_backslash_before_a_slash_or_u_is_text() {
        for token in [r#""C:\\u\\x""#, r#""a\\/b""#, r#""\\\\u0041""#] {
            let lazy = LazyText::from_json_token(token).expect(token);
            assert_eq!(
                lazy.as_str(),
                serde_json::from_str::<String>(token).unwrap()
            );
        }
    }

    #[test]
    fn made_plain_the_token_is_dropped_and_the_change_kept() {
        let mut lazy = LazyText::from_json_token(r#""a \"b\"""#).unwrap();
        lazy.make_plain().push_str(" c");
        assert_eq!(lazy.json_token(), None);
        assert_eq!(lazy, "a \"b\" c");
    }
}
