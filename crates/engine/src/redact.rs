//! Redaction: the one table of secret shapes ([`RULES`]), and the pass that replaces each match
//! with `[REDACTED:<rule>]` in a record's text, tool input (string values inside the JSON, at
//! any depth; object keys are kept) and tool output. Pure: strings in, strings out; imports
//! `crate::model` only.
//!
//! Cost. Every string is scanned once for the rules' trigger literals by one Aho-Corasick
//! automaton (a SIMD "Teddy" search on x86-64 and aarch64), and once each for the two short
//! needles (`sk-`, `@`) by `memchr`; a string with none is left untouched and not copied. Only
//! the rules whose triggers occur run their regex: a provider rule searches the string (its
//! regex starts with a literal, so that search is a SIMD skip too), a keyword rule (`anchored`)
//! tries one anchored match at each of its triggers. Triggers are case-sensitive (so the SIMD
//! search applies); keyword triggers leave out the keyword's first letter so that one literal
//! serves `Password` and `password`.
//!
//! Teddy compares 4-byte fingerprints only when every literal is at least 4 bytes long, and
//! then runs about five times faster on transcript text than with 3-byte ones (the strings of
//! `scripts/bench`'s 64 MiB transcript: 32 ms, now 6 ms); so the automaton gets the triggers
//! of 4 bytes or more, and a shorter one
//! is a needle with its own `memchr` scan. [`first_of_each_fingerprint`] says in what order the
//! literals go in.
//!
//! Confidence. Every rule is meant to be high-confidence: provider tokens by their documented
//! prefixes and lengths, keyword rules (`Authorization:`, `PASSWORD=`, `scheme://user:pass@`)
//! only when the value is not a placeholder (`$VAR`, `<token>`, `***`, empty) and, unquoted, not
//! an expression (`api_key=api_key`, `token = os.environ[…]`).

use std::ops::Range;
use std::sync::{LazyLock, OnceLock};

use aho_corasick::{AhoCorasick, MatchKind};
use memchr::memmem;
use regex_automata::meta::Regex;
use regex_automata::util::captures::Captures;
use regex_automata::{Anchored, Input};

use clankie_model::{Record, RecordBody};

/// What part of a match a rule replaces.
#[derive(Debug, Clone, Copy)]
enum Replace {
    /// The whole match.
    Whole,
    /// The first capture group that took part (a value after its key or scheme), unless the
    /// value is a placeholder; the key, quotes and separators stay. A group named `bare`
    /// (an unquoted value) is also kept when it reads as code (`api_key=api_key`,
    /// `token = os.environ[…]`).
    Value,
}

/// One redaction rule: `[REDACTED:<name>]` replaces what `pattern` matches.
struct Rule {
    name: &'static str,
    /// Literals (case-sensitive) of which every match contains at least one; the regex runs
    /// only on strings where one occurs. One shorter than [`FINGERPRINT`] bytes is a needle
    /// with a scan of its own, for a shape with no longer literal (`sk-…`, `user:pass@`).
    triggers: &'static [&'static str],
    pattern: &'static str,
    replace: Replace,
    /// The pattern starts one byte before a trigger (the keyword's first letter, which the
    /// trigger leaves out) and is tried only there, anchored.
    anchored: bool,
}

// `\b` below is ASCII-only (see `compile`): Unicode word boundaries would make the regex engine
// leave its DFA on non-ASCII text, and every token shape here is ASCII.
//
// Order matters: a rule sees the text as the rules above it left it, so provider tokens go
// before the keyword rules (`API_KEY=sk-ant-…` says `anthropic`, not `assignment`), and a value
// already `[REDACTED:…]` is kept as it is.
const RULES: &[Rule] = &[
    // PEM/OpenSSH/PGP private keys, the whole block; a block cut short (`head key.pem`) up to
    // the end of its base64 lines.
    // e.g. "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA…\n-----END OPENSSH PRIVATE KEY-----"
    Rule {
        name: "private_key",
        // Not `-----BEGIN`: `----` is a Markdown rule, and every one would be a candidate.
        triggers: &["PRIVATE KEY"],
        pattern: r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:(?s:.*?)-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|(?:(?:\s|\\[nr])*[A-Za-z0-9+/=:,-]{16,})*)",
        replace: Replace::Whole,
        anchored: false,
    },
    // Anthropic API and admin keys. Source: console.anthropic.com keys,
    // e.g. "sk-ant-api03-" + 93 base64url chars + "AA"; "sk-ant-admin01-…".
    Rule {
        name: "anthropic",
        triggers: &["sk-"],
        pattern: r"\bsk-ant-[a-z]{0,8}[0-9]{0,3}-?[A-Za-z0-9_-]{32,}",
        replace: Replace::Whole,
        anchored: false,
    },
    // OpenAI: project/service-account/admin keys ("sk-proj-" + ~150 base64url chars), legacy
    // user keys ("sk-" + 20 + "T3BlbkFJ" + 20, or 48 alphanumerics).
    // Source: platform.openai.com/api-keys; gitleaks `openai-api-key`.
    Rule {
        name: "openai",
        triggers: &["sk-"],
        pattern: r"\bsk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}|\bsk-[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}|\bsk-[A-Za-z0-9]{48}\b",
        replace: Replace::Whole,
        anchored: false,
    },
    // GitHub tokens: classic PAT ghp_, OAuth gho_, user-to-server ghu_, server-to-server ghs_,
    // refresh ghr_ (prefix + 36 base62); fine-grained PAT "github_pat_" + 22 + "_" + 59.
    // Source: github.blog 2021-04-05 "Behind GitHub's new authentication token formats".
    Rule {
        name: "github",
        // `hub_pat_`, not `github_pat_`: `gith` starts every github.com URL.
        triggers: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "hub_pat_"],
        pattern: r"\bgh[pousr]_[A-Za-z0-9]{36,251}\b|\bgithub_pat_[A-Za-z0-9_]{40,}",
        replace: Replace::Whole,
        anchored: false,
    },
    // GitLab personal/project/group access tokens: "glpat-" + 20 chars (longer in 17.x).
    // Source: docs.gitlab.com/ee/security/token_overview.html.
    Rule {
        name: "gitlab",
        triggers: &["glpat-"],
        pattern: r"\bglpat-[A-Za-z0-9_.-]{20,}",
        replace: Replace::Whole,
        anchored: false,
    },
    // AWS access key ids: long-term "AKIA", temporary (STS) "ASIA", + 16 upper-case base32.
    // Source: docs.aws.amazon.com IAM identifiers; e.g. "AKIAIOSFODNN7EXAMPLE".
    Rule {
        name: "aws_access_key_id",
        triggers: &["AKIA", "ASIA"],
        pattern: r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b",
        replace: Replace::Whole,
        anchored: false,
    },
    // AWS secret access keys (40 base64 chars), only where assigned to their name, as in
    // ~/.aws/credentials, env files and JSON: "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".
    Rule {
        name: "aws_secret_access_key",
        triggers: &["ecret", "ECRET"],
        pattern: r#"(?i)aws_?secret_?(?:access_?)?key["']?[ \t]*(?:=>|:=|=|:)[ \t]*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
        replace: Replace::Value,
        anchored: false,
    },
    // Slack tokens: bot xoxb-, user xoxp-, app-level xoxa-, refresh xoxr-, legacy xoxs-.
    // Source: api.slack.com/authentication/token-types; e.g. "xoxb-1234567890-1234567890123-AbCd…".
    Rule {
        name: "slack",
        triggers: &["xoxb", "xoxp", "xoxa", "xoxr", "xoxs"],
        pattern: r"\bxox[baprs]-[A-Za-z0-9-]{10,}",
        replace: Replace::Whole,
        anchored: false,
    },
    // Slack incoming webhooks: https://hooks.slack.com/services/T…/B…/<24 chars>.
    // Source: api.slack.com/messaging/webhooks.
    Rule {
        name: "slack_webhook",
        // Not `hooks.`: `hook` is in every Claude Code progress line.
        triggers: &[".slack.com/"],
        pattern: r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{16,}",
        replace: Replace::Whole,
        anchored: false,
    },
    // Stripe secret and restricted keys, live and test: "sk_live_" / "rk_live_" + 24–99 base62.
    // Source: docs.stripe.com/keys.
    Rule {
        name: "stripe",
        triggers: &["k_live_", "k_test_"],
        pattern: r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}",
        replace: Replace::Whole,
        anchored: false,
    },
    // Google API keys: "AIza" + 35 base64url chars. Source: cloud.google.com/docs/authentication/api-keys.
    Rule {
        name: "google_api_key",
        triggers: &["AIza"],
        pattern: r"\bAIza[0-9A-Za-z_-]{35}",
        replace: Replace::Whole,
        anchored: false,
    },
    // Twilio account SIDs ("AC") and API key SIDs ("SK") + 32 lower-case hex, in text that
    // names Twilio (alone, "AC"/"SK" + hex is too common a shape). Twilio auth tokens are
    // 32 hex with no prefix: `TWILIO_AUTH_TOKEN=…` is caught by `assignment`.
    // Source: twilio.com/docs/glossary/what-is-a-sid.
    Rule {
        name: "twilio",
        triggers: &["wilio", "WILIO"],
        pattern: r"\b(?:AC|SK)[0-9a-f]{32}\b",
        replace: Replace::Whole,
        anchored: false,
    },
    // npm access tokens: "npm_" + 36 base62. Source: github.blog 2021-09 npm token format.
    Rule {
        name: "npm",
        triggers: &["npm_"],
        pattern: r"\bnpm_[A-Za-z0-9]{36}\b",
        replace: Replace::Whole,
        anchored: false,
    },
    // PyPI API tokens: "pypi-" + a macaroon whose base64 starts "AgE" (e.g. "pypi-AgEIcHlwaS5vcmc…").
    // Source: pypi.org/help/#apitoken.
    Rule {
        name: "pypi",
        triggers: &["pypi-"],
        pattern: r"\bpypi-AgE[A-Za-z0-9_-]{50,}",
        replace: Replace::Whole,
        anchored: false,
    },
    // JSON Web Tokens: base64url header and payload that both start `{"` ("eyJ"), and a
    // signature (empty for alg "none"). Source: RFC 7519; e.g. "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig".
    Rule {
        name: "jwt",
        // The payload's start: every token has one, and `eyJ` alone is 3 bytes.
        triggers: &[".eyJ"],
        pattern: r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*",
        replace: Replace::Whole,
        anchored: false,
    },
    // HTTP `Authorization:` / `Proxy-Authorization:` values, after the scheme word when there
    // is one: "Authorization: Bearer abc.def", "-H 'authorization: token 0123…'",
    // {"Authorization": "Basic dXNlcjpwYXNz"}. Source: RFC 9110 §11.6.2.
    Rule {
        name: "authorization",
        triggers: &["uthorization", "UTHORIZATION"],
        pattern: r#"(?i-u:authorization)["']?[ \t]*[:=][ \t]*["']?(?:(?i-u:bearer|basic|token|digest|bot|apikey|sso-key)[ \t]+)?(?P<bare>[^\s"'`,;]+)"#,
        replace: Replace::Value,
        anchored: true,
    },
    // Passwords in URLs: scheme://user:PASSWORD@host — only the password goes.
    // Source: RFC 3986 §3.2.1; e.g. "postgres://app:s3cret@db:5432/app".
    Rule {
        name: "url_password",
        triggers: &["@"],
        pattern: r#"\b[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:@/?#"'<>\[\]]+:([^\s@/?#"'<>]+)@"#,
        replace: Replace::Value,
        anchored: false,
    },
    // Secret-named assignments in env files, shells, config and code: the value after
    // `PASSWORD=`, `DB_PASSWORD: `, `"api_key": "…"`, `SECRET_KEY => '…'`, `GITHUB_TOKEN=…`.
    // Source: dotenv / YAML / JSON conventions; gitleaks `generic-api-key` for the key names.
    Rule {
        name: "assignment",
        triggers: &[
            "assw",
            "ASSW",
            "assphrase",
            "ASSPHRASE",
            "ecret",
            "ECRET",
            "oken",
            "OKEN",
            "pi_key",
            "PI_KEY",
            "pi-key",
            "pi-Key",
            "PI-KEY",
            "pikey",
            "piKey",
            "PIKEY",
            "ccess_key",
            "ccessKey",
            "CCESS_KEY",
            "rivate_key",
            "rivateKey",
            "RIVATE_KEY",
        ],
        pattern: r#"(?i-u:passw(?:or)?d|passphrase|secret(?:[_-]?access)?(?:[_-]?key)?|token|api[_-]?key|access[_-]?key|private[_-]?key)["']?[ \t]*(?:=>|:=|=|:)[ \t]*(?:"([^"\n]*)"|'([^'\n]*)'|(?P<bare>[^\s"'`,;)\]}]+))"#,
        replace: Replace::Value,
        anchored: true,
    },
];

/// Object keys whose string value is a secret as a whole (`{"password": "…"}` in a tool
/// input): the `assignment` key names, and `authorization`.
const KEY_NAME_PATTERN: &str = r"(?i)^[a-z0-9_.-]*(?:password|passwd|passphrase|secret|secret[_-]?key|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|authorization)$";

/// The length of Teddy's fingerprint when every literal is at least this long.
const FINGERPRINT: usize = 4;

/// Every rule's triggers: the long ones in one automaton, the short ones as needles.
struct Triggers {
    /// The distinct literals of [`FINGERPRINT`] bytes or more; `masks[pattern]` says which
    /// rules one wakes.
    automaton: AhoCorasick,
    masks: Vec<u32>,
    /// The shorter ones, each with the rules it wakes; only non-anchored rules have them (they
    /// need no position).
    needles: Vec<(memmem::Finder<'static>, u32)>,
}

static TRIGGERS: LazyLock<Triggers> = LazyLock::new(|| {
    const { assert!(RULES.len() <= 32, "rule masks are u32") };
    let mut literals: Vec<&str> = Vec::new();
    let mut masks: Vec<u32> = Vec::new();
    for (i, rule) in RULES.iter().enumerate() {
        for &t in rule.triggers {
            match literals.iter().position(|l| *l == t) {
                Some(at) => masks[at] |= 1 << i,
                None => {
                    literals.push(t);
                    masks.push(1 << i);
                }
            }
        }
    }
    let (long, short): (Vec<_>, Vec<_>) = literals
        .into_iter()
        .zip(masks)
        .partition(|(literal, _)| literal.len() >= FINGERPRINT);
    let needles = short
        .into_iter()
        .map(|(literal, mask)| (memmem::Finder::new(literal.as_bytes()), mask))
        .collect();
    let (literals, masks): (Vec<_>, Vec<_>) = first_of_each_fingerprint(long).into_iter().unzip();
    // Leftmost-first, because only that kind gets the SIMD prefilter.
    let automaton = AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostFirst)
        .build(&literals)
        .expect("trigger literals build");
    Triggers {
        automaton,
        masks,
        needles,
    }
});

/// The literals in the order the automaton gets them, which decides its speed but not its
/// matches (no trigger is a prefix of another). Teddy sorts literals into 16 buckets and, for a
/// 4-byte window, only checks "could some literal of this bucket start here", a bucket's
/// literals mixed nibble by nibble; so two unlike literals in one bucket accept windows that
/// are neither (`etho`, from `glpa` and `utho`), and each such window costs a check. Literals
/// that agree in the low nibble of their first four bytes (`oken` and `OKEN`) share a bucket
/// whatever their place; every other literal goes to a bucket by its place. Putting one
/// literal of each such group first spreads the groups over the buckets before any shares;
/// the case variants follow. On the benchmark transcript this took the scan from 19 ms to 6.
fn first_of_each_fingerprint<T>(literals: Vec<(&str, T)>) -> Vec<(&str, T)> {
    let low_nibbles =
        |l: &str| -> [u8; FINGERPRINT] { std::array::from_fn(|i| l.as_bytes()[i] & 0x0f) };
    let mut seen = Vec::new();
    let (mut firsts, rest): (Vec<_>, Vec<_>) = literals.into_iter().partition(|(l, _)| {
        let key = low_nibbles(l);
        let first = !seen.contains(&key);
        if first {
            seen.push(key);
        }
        first
    });
    firsts.extend(rest);
    firsts
}

/// How far past its trigger an anchored rule's match may reach: keyword, separator and value.
/// A longer value is left as it is (nobody's password is 1 KiB).
const ANCHORED_WINDOW: usize = 1024;

/// Each rule's regex, compiled the first time a trigger wakes it (most reads need none).
static REGEXES: [OnceLock<Regex>; RULES.len()] = [const { OnceLock::new() }; RULES.len()];

fn regex(i: usize) -> &'static Regex {
    REGEXES[i].get_or_init(|| {
        // ASCII `\b`: a Unicode word boundary would make the engine leave its DFA on non-ASCII
        // text, and every token shape here is ASCII.
        Regex::new(&RULES[i].pattern.replace(r"\b", r"(?-u:\b)")).expect("rule regex")
    })
}

static KEY_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(KEY_NAME_PATTERN).expect("key name regex"));

/// Where triggers occur in `text`: (start, rules woken), in order. Matches do not overlap, so
/// a trigger inside another's occurrence is not seen; `tests::triggers_are_consistent` keeps
/// the table free of triggers that could hide each other.
fn hits(text: &str) -> Vec<(usize, u32)> {
    let t = &*TRIGGERS;
    t.automaton
        .find_iter(text)
        .map(|m| (m.start(), t.masks[m.pattern().as_usize()]))
        .collect()
}

/// Moves hits past the ranges just replaced by `[REDACTED:<name>]` (`label_len` bytes) and
/// drops those inside them.
fn shift(hits: &mut Vec<(usize, u32)>, ranges: &[Range<usize>], label_len: usize) {
    let mut next = 0;
    let mut delta: isize = 0;
    hits.retain_mut(|(at, _)| {
        while next < ranges.len() && ranges[next].end <= *at {
            delta += label_len as isize - ranges[next].len() as isize;
            next += 1;
        }
        if next < ranges.len() && ranges[next].start <= *at {
            return false;
        }
        *at = at
            .checked_add_signed(delta)
            .expect("shifted hit stays in the text");
        true
    });
}

/// A cheap look before an anchored rule's regex: after the keyword, an optional quote and
/// blanks, is there an `=` or `:`? Prose ("the token is", "tokens") stops here.
fn may_assign(text: &str, trigger_at: usize) -> bool {
    let mut rest = text.as_bytes()[trigger_at..]
        .iter()
        .skip_while(|b| b.is_ascii_alphanumeric() || **b == b'_' || **b == b'-')
        .peekable();
    rest.next_if(|b| matches!(b, b'"' | b'\''));
    rest.find(|b| !matches!(b, b' ' | b'\t'))
        .is_some_and(|b| matches!(b, b'=' | b':'))
}

/// A value that stands for a secret rather than being one: empty, a variable or template
/// (`$TOKEN`, `${X}`, `<token>`, `{{x}}`, `%X%`), a mask (`***`, `xxxx`, `…`), a literal
/// (`null`, `true`), or a value already redacted.
fn is_placeholder(value: &str) -> bool {
    let v = value.trim();
    if v.is_empty()
        || v.starts_with("[REDACTED")
        || v.starts_with(['$', '<', '{', '%', '(', '['])
        || v.chars()
            .all(|c| matches!(c, '*' | 'x' | 'X' | '.' | '•' | '…' | '-' | '#'))
    {
        return true;
    }
    const WORDS: &[&str] = &[
        "null",
        "none",
        "nil",
        "true",
        "false",
        "undefined",
        "string",
        "str",
        "required",
        "optional",
        "redacted",
        "hidden",
        "secret",
        "password",
        "token",
        "changeme",
    ];
    WORDS.iter().any(|w| v.eq_ignore_ascii_case(w))
}

/// An unquoted value that reads as code, not as a secret: an identifier or dotted path with no
/// digit, possibly called or indexed (`api_key`, `self.token`, `getpass()`, `os.environ[`).
/// Real secrets nearly always hold a digit or a symbol; a purely alphabetic password is missed
/// on purpose, for the sake of code like `Client(api_key=api_key)`.
fn is_code(value: &str) -> bool {
    let head = value.split(['(', '[']).next().unwrap_or("");
    let identifier = head.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && head
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || b == b'_' || b == b'.');
    // A short all-digit value is a count or a port (`max_token=4096`), not a secret.
    let number = value.len() < 6 && value.bytes().all(|b| b.is_ascii_digit());
    identifier || number
}

/// What to replace in one match of `rule`, or `None` to keep it.
fn target(rule: &Rule, caps: &Captures, haystack: &str) -> Option<Range<usize>> {
    let whole = caps.get_match()?.range();
    match rule.replace {
        Replace::Whole => Some(whole),
        Replace::Value => {
            let value = (1..caps.group_len())
                .find_map(|g| caps.get_group(g))?
                .range();
            let bare = caps
                .get_group_by_name("bare")
                .is_some_and(|b| b.range() == value);
            let text = &haystack[value.clone()];
            if is_placeholder(text) || (bare && is_code(text)) {
                return None;
            }
            Some(value)
        }
    }
}

/// `text` with each range replaced by `[REDACTED:<name>]`; ranges are in order, disjoint.
fn splice(text: &str, ranges: &[Range<usize>], name: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for range in ranges {
        out.push_str(&text[at..range.start]);
        out.push_str("[REDACTED:");
        out.push_str(name);
        out.push(']');
        at = range.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Redacts `text`: `Some((redacted, count))` when anything was replaced, `None` (and no copy)
/// otherwise.
pub fn redact_text(text: &str) -> Option<(String, usize)> {
    // The common case: no trigger at all, a few SIMD scans.
    let mut hits = hits(text);
    let woken = TRIGGERS
        .needles
        .iter()
        .filter(|(needle, _)| needle.find(text.as_bytes()).is_some())
        .fold(0, |mask, (_, rules)| mask | rules);
    let woken = hits.iter().fold(woken, |mask, hit| mask | hit.1);
    if woken == 0 {
        return None;
    }
    let mut current: Option<String> = None;
    let mut count = 0;
    for (i, rule) in RULES.iter().enumerate() {
        let bit = 1u32 << i;
        if woken & bit == 0 {
            continue;
        }
        let haystack = current.as_deref().unwrap_or(text);
        let re = regex(i);
        let mut ranges = Vec::new();
        if rule.anchored {
            let mut caps = re.create_captures();
            let mut done = 0;
            for &(at, mask) in &hits {
                if mask & bit == 0 || at == 0 || at - 1 < done || !may_assign(haystack, at) {
                    continue;
                }
                // A bounded window: the capture engine's cost grows with the span it is given.
                let end = haystack.len().min(at + ANCHORED_WINDOW);
                let input = Input::new(haystack)
                    .span(at - 1..end)
                    .anchored(Anchored::Yes);
                re.search_captures(&input, &mut caps);
                if let Some(m) = caps.get_match() {
                    done = m.end();
                    ranges.extend(target(rule, &caps, haystack));
                }
            }
        } else {
            for caps in re.captures_iter(haystack) {
                ranges.extend(target(rule, &caps, haystack));
            }
        }
        if !ranges.is_empty() {
            count += ranges.len();
            let redacted = splice(haystack, &ranges, rule.name);
            // Later rules see the redacted text; the triggers move with it.
            shift(&mut hits, &ranges, "[REDACTED:]".len() + rule.name.len());
            current = Some(redacted);
        }
    }
    current.map(|s| (s, count))
}

/// Redacts a string in place; returns how many secrets were replaced.
pub fn redact_string(text: &mut String) -> usize {
    match redact_text(text) {
        Some((redacted, count)) => {
            *text = redacted;
            count
        }
        None => 0,
    }
}

/// Redacts every string value inside a JSON value, at any depth. Object keys stay; a string
/// under a secret-named key (`"password"`, `"api_key"`, `"Authorization"`) is redacted whole
/// (after its scheme word, for `Authorization`) unless it is a placeholder.
pub fn redact_json(value: &mut serde_json::Value) -> usize {
    match value {
        serde_json::Value::String(s) => redact_string(s),
        serde_json::Value::Array(items) => items.iter_mut().map(redact_json).sum(),
        serde_json::Value::Object(map) => map
            .iter_mut()
            .map(|(key, v)| match v {
                serde_json::Value::String(s)
                    if TRIGGERS.automaton.is_match(key.as_str())
                        && KEY_NAME.is_match(key.as_str())
                        && !is_placeholder(s) =>
                {
                    let n = redact_string(s);
                    if n > 0 { n } else { redact_named_value(key, s) }
                }
                _ => redact_json(v),
            })
            .sum(),
        _ => 0,
    }
}

/// `{"password": "hunter2"}` → `{"password": "[REDACTED:assignment]"}`; an `Authorization`
/// value keeps its scheme word.
fn redact_named_value(key: &str, value: &mut String) -> usize {
    let (rule, keep) = if key.to_ascii_lowercase().ends_with("authorization") {
        let scheme = value.split_once(' ').map(|(s, _)| s.len() + 1).unwrap_or(0);
        ("authorization", scheme)
    } else {
        ("assignment", 0)
    };
    if is_placeholder(&value[keep..]) {
        return 0;
    }
    value.truncate(keep);
    value.push_str(&format!("[REDACTED:{rule}]"));
    1
}

/// Redacts every record in place: what a page does before anyone renders it.
pub fn redact_records(records: &mut [Record]) {
    for record in records {
        redact_record(record);
    }
}

/// Redacts a record's text, tool input or tool output in place; returns how many secrets were
/// replaced. Ids, names and timestamps are not secrets and stay.
pub fn redact_record(record: &mut Record) -> usize {
    match &mut record.body {
        RecordBody::Text { text, .. } => redact_string(text),
        RecordBody::ToolCall { input, .. } => redact_json(input),
        RecordBody::ToolResult { output, .. } => redact_string(output),
    }
}

#[cfg(test)]
mod tests;
