//! Redaction: the one table of secret shapes ([`RULES`]), and the pass that replaces each match
//! with `[REDACTED:<rule>]` in a record's text, tool input (string values inside the JSON, at
//! any depth; object keys are kept) and tool output. Pure: strings in, strings out; imports
//! `crate::model` only.
//!
//! Cost. Every string is scanned once for the rules' trigger literals of 4 bytes or more by a
//! SIMD "Teddy" search (aho-corasick's `packed` searcher; an Aho-Corasick automaton where the
//! CPU has no Teddy), and once for the four needles of 3 bytes (`sk-`, `hf_`, `SG.`, `://`) by
//! a second Teddy search; a string with none is left untouched and not copied, and a JSON
//! token woken by a word that only holds a trigger (`broken`) stays a token. Only the rules
//! whose triggers occur run their regex: a provider rule searches the string (its regex starts
//! with a literal, so that search is a SIMD skip too), a keyword rule (`anchored`) tries one
//! anchored match at each of its triggers. Triggers are case-sensitive (so the SIMD search
//! applies); keyword triggers leave out the keyword's first letter so that one literal serves
//! `Password` and `password`.
//!
//! Teddy compares 4-byte fingerprints only when every literal is at least 4 bytes long, and
//! then runs about five times faster on transcript text than with 3-byte ones (the strings of
//! `scripts/bench`'s 64 MiB transcript: 6 ms against 32 ms); so the automaton gets the
//! triggers of 4 bytes or more, and a shorter one is a needle. A needle is for a shape that no
//! literal of 4 bytes marks: `sk-` (then `ant-`, `proj-` or 48 alphanumerics), `://` (a URL's
//! `user:pass@`), `hf_` and `SG.` (Hugging Face and SendGrid: base62 or base64url right after
//! the prefix). The URL's trigger is its `://`, not its `@`: a needle of one byte would be a
//! `memchr` pass of its own, where a fourth 3-byte literal costs the needles' Teddy nothing.
//! On the strings of a 16 MiB `gen_transcript` session (12 MB of text) the long triggers'
//! search runs 28.5 M instructions, the needles' 10.8 M (a `memmem` scan each: 12.6 M for the
//! first three, and `@`'s `memchr` 1.7 M more); so a new shape gets a needle only when
//! it has no longer literal. Teddy takes at
//! most 64 literals, and which literals share its buckets decides how many windows it has to
//! check: [`teddy_order`] plans that.
//!
//! Confidence. Every rule is meant to be high-confidence: provider tokens by their documented
//! prefixes and lengths, keyword rules (`Authorization:`, `PASSWORD=`, `scheme://user:pass@`,
//! `mysql -pSECRET`, `.netrc`'s `password`) only when the value is not a placeholder (`$VAR`,
//! `<token>`, `***`, empty) and, unquoted, not an expression (`api_key=api_key`,
//! `token = os.environ[…]`); `assignment`, whose keywords name variables in every program,
//! only when the value reads as a secret ([`is_secret_value`]: no call, path of names, type,
//! template, word, message or file path). A marker replaces a whole token: in text that is
//! itself escaped (a JSON line, a string literal) it never takes part of an escape sequence
//! (`\"`, `\n`). Each rule's test in `redact/tests.rs` keeps near-misses beside its secrets:
//! prose that names the shape, ports (`ssh -p 22`, `mysql -P 3306`), identifiers
//! (`shelf_life`, `hf_hub_download`), code. Over every transcript in `tests/fixtures/` and
//! the code-heavy corpus `tests/fixtures/precision/`, the redactions made are exactly a
//! reviewed list (`tests/it/redaction_precision.rs`).

use std::ops::Range;
use std::sync::{LazyLock, OnceLock};

use aho_corasick::{AhoCorasick, MatchKind, packed};
use memchr::memmem;
use regex_automata::meta::Regex;
use regex_automata::util::captures::Captures;
use regex_automata::{Anchored, Input};

use clankie_model::{LazyText, Record, RecordBody};
use serde_json::Value;

/// What part of a match a rule replaces.
#[derive(Debug, Clone, Copy)]
enum Replace {
    /// The whole match.
    Whole,
    /// The first capture group that took part (a value after its key or scheme), unless the
    /// value is a placeholder; the key, quotes and separators stay. A group named `bare`
    /// (an unquoted value) is also kept when it reads as code (`api_key=api_key`,
    /// `token = os.environ[…]`). A group named `items` (a JSON array of strings) has each of
    /// its strings replaced, placeholders kept. A group named `basic` is replaced only when
    /// it is the base64 of `user:password`.
    Value,
    /// As `Value`, and only a value that reads as a secret ([`is_secret_value`]): a quoted
    /// literal that is no word, prose, path, URL or template; an unquoted token that is no
    /// expression. A quoted value wrapped in escaped quotes (`"\"s3cr3t\""`) loses them first.
    SecretValue,
}

/// One redaction rule: `[REDACTED:<name>]` replaces what `pattern` matches.
struct Rule {
    name: &'static str,
    /// Literals (case-sensitive) of which every match contains at least one; the regex runs
    /// only on strings where one occurs. One shorter than [`FINGERPRINT`] bytes is a needle,
    /// for a shape with no longer literal (`sk-…`, the `://` of `scheme://user:pass@`).
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
    // PuTTY private keys (.ppk, versions 2 and 3), from the header through the private lines
    // and their MAC; the lines may be real line breaks or `\n` escapes. A file cut short after
    // `Private-Lines:` goes up to the end of its base64 lines; one cut short before holds only
    // the public key and stays.
    // Source: the PuTTY manual, appendix C "PPK file format";
    // e.g. "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: …\nPublic-Lines: 2\n…\nPrivate-Lines: 1\n…\nPrivate-MAC: 3f…"
    Rule {
        name: "putty_private_key",
        triggers: &["PuTTY-User-Key-File"],
        pattern: r"PuTTY-User-Key-File-[0-9]+: [^\r\n\\]*(?:(?:\r?\n|\\r\\n|\\n)(?:[A-Za-z0-9-]+: [^\r\n\\]*|[A-Za-z0-9+/=]+))*?(?:\r?\n|\\r\\n|\\n)Private-Lines: [0-9]+(?:(?:(?:\r?\n|\\r\\n|\\n)[A-Za-z0-9+/=]+)*?(?:\r?\n|\\r\\n|\\n)Private-(?:MAC|Hash): [0-9a-fA-F]*|(?:(?:\r?\n|\\r\\n|\\n)[A-Za-z0-9+/=]+)*)",
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
    // Slack tokens: bot xoxb-, user xoxp-, app-level xoxa-, refresh xoxr-, legacy xoxs-;
    // app-level "xapp-1-A…-…-<64 hex>"; rotating ones, "xoxe.xoxp-1-…" (access) and "xoxe-1-…"
    // (refresh).
    // Source: api.slack.com/authentication/token-types and /authentication/rotation;
    // e.g. "xoxb-1234567890-1234567890123-AbCd…", "xapp-1-A0123ABCDEF-4567890123456-0f1e…".
    Rule {
        name: "slack",
        triggers: &["xoxb", "xoxp", "xoxa", "xoxr", "xoxs", "xoxe", "xapp"],
        pattern: r"\bxox[baprs]-[A-Za-z0-9-]{10,}|\bxoxe(?:\.xox[bp])?-[0-9]-[A-Za-z0-9-]{20,}|\bxapp-[0-9]-[A-Za-z0-9-]{20,}",
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
    // Google OAuth 2.0 access tokens: "ya29." + base64url, 100–2000 chars; a service
    // account's start "ya29.c." and so may hold short dotted parts.
    // Source: developers.google.com/identity/protocols/oauth2 (token types); gitleaks `gcp-…`.
    Rule {
        name: "google_oauth",
        triggers: &["ya29"],
        pattern: r"\bya29\.(?:[0-9A-Za-z_-]{1,8}\.)*[0-9A-Za-z_-]{30,}",
        replace: Replace::Whole,
        anchored: false,
    },
    // Hugging Face user access tokens: "hf_" + 34 letters (alphanumerics accepted).
    // Source: huggingface.co/docs/hub/security-tokens; gitleaks `huggingface-access-token`.
    Rule {
        name: "huggingface",
        // A needle: the byte after `hf_` is any of 62, so no 4-byte literal marks the shape.
        triggers: &["hf_"],
        pattern: r"\bhf_[A-Za-z0-9]{34}\b",
        replace: Replace::Whole,
        anchored: false,
    },
    // SendGrid API keys: "SG." + 22 base64url (the key id) + "." + 43 base64url (the secret).
    // Source: docs.sendgrid.com API keys; gitleaks `sendgrid-api-token`.
    Rule {
        name: "sendgrid",
        // A needle, as `hf_`: what follows `SG.` is free.
        triggers: &["SG."],
        pattern: r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
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
    // Azure Storage account keys in connection strings (64 bytes, 88 base64 chars):
    // "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=<88>;EndpointSuffix=…"; only the
    // key goes. (`SharedAccessKey=` of Service Bus is an `assignment`.)
    // Source: learn.microsoft.com azure/storage/common/storage-configure-connection-string.
    Rule {
        name: "azure_account_key",
        triggers: &["AccountKey="],
        pattern: r"AccountKey=([A-Za-z0-9+/]{20,}={0,2})(?:[^A-Za-z0-9+/=]|$)",
        replace: Replace::Value,
        anchored: false,
    },
    // Docker registry credentials in ~/.docker/config.json: `"auth": "<base64 of user:pass>"`
    // under "auths"; only the base64 goes, and only when it decodes to `user:password`
    // (`"auth": "passwordless"` stays). Source: docs.docker.com/reference/cli/docker/login.
    Rule {
        name: "docker_auth",
        triggers: &["\"auth\""],
        pattern: r#""auth"[ \t]*:[ \t]*"(?P<basic>(?:[A-Za-z0-9+/]{4}){2,}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)""#,
        replace: Replace::Value,
        anchored: false,
    },
    // HTTP `Authorization:` / `Proxy-Authorization:` values, after the scheme word when there
    // is one: "Authorization: Bearer abc.def", "-H 'authorization: token 0123…'",
    // {"Authorization": "Basic dXNlcjpwYXNz"}, and in escaped text `\"Authorization\": \"…\"`.
    // Source: RFC 9110 §11.6.2.
    Rule {
        name: "authorization",
        triggers: &["uthorization", "UTHORIZATION"],
        pattern: r#"(?i-u:authorization)(?:\\?["'])?[ \t]*[:=][ \t]*(?:\\?["'])?(?:(?i-u:bearer|basic|token|digest|bot|apikey|sso-key)[ \t]+)?(?P<bare>[^\s"'`,;]+)"#,
        replace: Replace::Value,
        anchored: true,
    },
    // Passwords in URLs: scheme://user:PASSWORD@host — only the password goes. The user may
    // be empty (`redis://:pw@cache`), and a password may hold a raw `@` (`p@ss`): it runs to
    // the last `@` before the path.
    // Source: RFC 3986 §3.2.1; e.g. "postgres://app:s3cret@db:5432/app".
    Rule {
        name: "url_password",
        // `://`, not `@`: a 3-byte needle shares the Teddy search of `sk-`, `hf_` and `SG.`,
        // where `@` would be a scan of its own (every match holds both).
        triggers: &["://"],
        pattern: r#"\b[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:@/?#"'<>\[\]]*:([^\s/?#"'<>]+)@"#,
        replace: Replace::Value,
        anchored: false,
    },
    // Passwords given on a command line: `mysql -pSECRET` (attached; a bare `-p` prompts and
    // `-P` is the port), `sshpass -p SECRET`, `curl -u user:SECRET` (`--user`). An attached
    // mysql value that reads as code (`find /var/lib/mysql -perm …`) or as a port mapping
    // (`--name mysql -p3306:3306`) stays. Source: the mysql, sshpass and curl manuals.
    Rule {
        name: "cli_password",
        triggers: &["mysql", "mariadb", "sshpass", "curl"],
        pattern: concat!(
            r#"\b(?:mysql[a-z]*|mariadb(?:-[a-z]+)?)(?:[ \t]+-[^\s|;&<>]*(?:[ \t]+(?:"[^"\n]*"|'[^'\n]*'|[^\s|;&<>-][^\s|;&<>]*))?)*?[ \t]+-p(?:"([^"\n]*)"|'([^'\n]*)'|(?P<bare>[^\s"'`;|&<>)]+))"#,
            r#"|\bsshpass(?:[ \t]+-[dfP][ \t]*[^\s-][^\s|;&<>]*|[ \t]+-[ehvV]+)*[ \t]+-p[ \t]*(?:"([^"\n]*)"|'([^'\n]*)'|([^\s"'`;|&<>)]+))"#,
            r#"|\bcurl(?:[ \t]+[^\s|;&<>]+){0,24}?[ \t]+(?:-u|--user)(?:[ \t]*|=)(?:"[^"\n:]*:([^"\n]+)"|'[^'\n:]*:([^'\n]+)'|[^\s"':;|&<>]*:([^\s"'`;|&<>)]+))"#,
        ),
        replace: Replace::Value,
        anchored: false,
    },
    // .netrc entries: the password after `machine HOST` (and `login USER`, in any order), on
    // one line or several. After a `login`, any value; else not a value that reads as code
    // (prose: "the machine ID password is …").
    // Source: the GNU inetutils manual, "The .netrc file"; e.g. "machine api.x.com login me password s3cr3t".
    Rule {
        name: "netrc",
        triggers: &["machine"],
        pattern: concat!(
            r#"\bmachine[ \t]+\S+(?:(?:\s|\\[nrt])+(?:login|account)[ \t]+\S+)+(?:\s|\\[nrt])+password[ \t]+(?:"([^"\n]*)"|([^\s"]+))"#,
            r#"|\bmachine[ \t]+\S+(?:\s|\\[nrt])+password[ \t]+(?:"([^"\n]*)"|(?P<bare>[^\s"'`,;)\]}]+))"#,
        ),
        replace: Replace::Value,
        anchored: false,
    },
    // Secret-named assignments in env files, shells, config and code: the value after
    // `PASSWORD=`, `DB_PASSWORD: `, `"api_key": "…"`, `SECRET_KEY => '…'`, `GITHUB_TOKEN=…`,
    // `secret_key_base: "…"` (Rails, Phoenix), `"api_key": 12345678901234`; each string of an
    // array, `"secret": ["…", "…"]`; in text that is itself escaped (a JSON line or a string
    // literal printed as it is), between escaped quotes, `\"token\": \"…\"`. Only a value
    // that reads as a secret goes (`Replace::SecretValue`): code assigns expressions
    // (`token = Base.url_encode64(…)`, `token: &str`, `api_key = settings.API_KEY`), and a
    // quoted value may be a word or a message (`test_token = "music"`,
    // `password: "Password is required"`).
    //
    // A value is a whole token: a quoted one runs to its closing quote past any escaped one
    // (`\"`), an unquoted one stops at a quote, a blank, a separator, a shell operator or an
    // escape (`\n`, `\"`), and takes no backslash that starts one; so no marker splits an
    // escape sequence or leaves a dangling backslash.
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
        pattern: concat!(
            r#"(?i-u:passw(?:or)?d|passphrase|secret(?:[_-]?access)?(?:[_-]?key)?(?:[_-]?base)?|token|api[_-]?key|access[_-]?key|private[_-]?key)"#,
            r#"(?:\\?["'])?[ \t]*(?:=>|:=|=|:)[ \t]*"#,
            r#"(?:"((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)'"#,
            r#"|\\"((?:[^"\\\n]|\\[^"\n])*)\\"|\\'((?:[^'\\\n]|\\[^'\n])*)\\'"#,
            r#"|(?P<items>\[\s*"[^"\n]*"(?:\s*,\s*"[^"\n]*")*\s*,?\s*\])"#,
            r#"|(?P<bare>(?:[^\s"'`,;)\]}&|<>\\]|\\[^\s"'nrt\\]|\\\\)+))"#,
        ),
        replace: Replace::SecretValue,
        anchored: true,
    },
];

/// Object keys whose string value is a secret as a whole (`{"password": "…"}` in a tool
/// input): the `assignment` key names, and `authorization`.
const KEY_NAME_PATTERN: &str = r"(?i)^[a-z0-9_.-]*(?:password|passwd|passphrase|secret|secret[_-]?key|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|authorization)$";

/// The length of Teddy's fingerprint when every literal is at least this long.
const FINGERPRINT: usize = 4;

/// Every rule's triggers: the long ones in one search, the short ones as needles.
struct Triggers {
    /// The distinct literals of [`FINGERPRINT`] bytes or more; `masks[pattern]` says which
    /// rules one wakes.
    automaton: Scanner,
    masks: Vec<u32>,
    /// The shorter ones, each with the rules it wakes; only non-anchored rules have them (they
    /// need no position).
    needles: Needles,
}

static TRIGGERS: LazyLock<Triggers> = LazyLock::new(|| Triggers::of(trigger_literals()));

/// The triggers as a canonical JSON string token holds them: JSON-escaped (`"auth"` as
/// `\"auth\"`; the others, with no character JSON escapes, as they are). See
/// [`may_wake_in_token`].
static TOKEN_TRIGGERS: LazyLock<Triggers> = LazyLock::new(|| {
    let escaped: Vec<(String, u32)> = trigger_literals()
        .into_iter()
        .map(|(literal, mask)| {
            let token = serde_json::to_string(literal).expect("a string serializes");
            (token[1..token.len() - 1].to_string(), mask)
        })
        .collect();
    Triggers::of(
        escaped
            .iter()
            .map(|(l, mask)| (l.as_str(), *mask))
            .collect(),
    )
});

impl Triggers {
    fn of(literals: Vec<(&str, u32)>) -> Triggers {
        let (long, short): (Vec<_>, Vec<_>) = literals
            .into_iter()
            .partition(|(literal, _)| literal.len() >= FINGERPRINT);
        let needles = Needles::of(short);
        let (literals, masks): (Vec<_>, Vec<_>) = teddy_order(long).into_iter().unzip();
        let automaton = Scanner::of(&literals);
        Triggers {
            automaton,
            masks,
            needles,
        }
    }
}

/// The triggers shorter than [`FINGERPRINT`] bytes.
struct Needles {
    /// Those of 3 bytes, in one Teddy search of 3-byte fingerprints (one pass for all of them
    /// where a `memmem` each would make one pass each), with the rules each wakes.
    triples: Option<(packed::Searcher, Vec<u32>)>,
    /// The others (and every one where the CPU has no Teddy), a `memchr`/`memmem` pass each.
    each: Vec<(memmem::Finder<'static>, u32)>,
}

impl Needles {
    fn of(short: Vec<(&str, u32)>) -> Needles {
        let finder = |&(literal, mask): &(&str, u32)| {
            (memmem::Finder::new(literal.as_bytes()).into_owned(), mask)
        };
        let triples: Vec<(&str, u32)> = short
            .iter()
            .copied()
            .filter(|(l, _)| l.len() == 3)
            .collect();
        let teddy = packed::Config::new()
            .match_kind(packed::MatchKind::LeftmostFirst)
            .builder()
            .extend(triples.iter().map(|(literal, _)| literal))
            .build();
        match teddy {
            Some(teddy) => Needles {
                triples: Some((teddy, triples.iter().map(|(_, mask)| *mask).collect())),
                each: short
                    .iter()
                    .filter(|(l, _)| l.len() != 3)
                    .map(finder)
                    .collect(),
            },
            None => Needles {
                triples: None,
                each: short.iter().map(finder).collect(),
            },
        }
    }

    /// How many needles there are.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.triples.as_ref().map_or(0, |(_, masks)| masks.len()) + self.each.len()
    }

    /// Whether any occurs in `haystack`.
    fn any(&self, haystack: &[u8]) -> bool {
        self.triples
            .as_ref()
            .is_some_and(|(teddy, _)| teddy.find(haystack).is_some())
            || self
                .each
                .iter()
                .any(|(needle, _)| needle.find(haystack).is_some())
    }

    /// The rules the needles that occur in `haystack` wake.
    fn woken(&self, haystack: &[u8]) -> u32 {
        let triples = self.triples.as_ref().map_or(0, |(teddy, masks)| {
            teddy
                .find_iter(haystack)
                .fold(0, |woken, m| woken | masks[m.pattern().as_usize()])
        });
        self.each
            .iter()
            .filter(|(needle, _)| needle.find(haystack).is_some())
            .fold(triples, |woken, (_, rules)| woken | rules)
    }
}

/// The search for the long triggers: Teddy where the CPU has it (with 16 buckets, "fat", over
/// 32 literals on x86-64 with AVX2), else an Aho-Corasick automaton.
enum Scanner {
    /// The searcher and how many literals it has.
    Teddy(
        packed::Searcher,
        #[cfg_attr(not(test), allow(dead_code))] usize,
    ),
    Automaton(AhoCorasick),
}

impl Scanner {
    fn of(literals: &[&str]) -> Scanner {
        let teddy = packed::Config::new()
            .match_kind(packed::MatchKind::LeftmostFirst)
            .builder()
            .extend(literals)
            .build();
        match teddy {
            Some(teddy) => Scanner::Teddy(teddy, literals.len()),
            // Leftmost-first, because only that kind gets the SIMD prefilter.
            None => Scanner::Automaton(
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostFirst)
                    .build(literals)
                    .expect("trigger literals build"),
            ),
        }
    }

    fn is_match(&self, haystack: &[u8]) -> bool {
        match self {
            Scanner::Teddy(t, _) => t.find(haystack).is_some(),
            Scanner::Automaton(a) => a.is_match(haystack),
        }
    }

    /// (start, `masks[pattern]`) of each match, leftmost-first, not overlapping.
    fn hits(&self, haystack: &str, masks: &[u32]) -> Vec<(usize, u32)> {
        match self {
            Scanner::Teddy(t, _) => t
                .find_iter(haystack)
                .map(|m| (m.start(), masks[m.pattern().as_usize()]))
                .collect(),
            Scanner::Automaton(a) => a
                .find_iter(haystack)
                .map(|m| (m.start(), masks[m.pattern().as_usize()]))
                .collect(),
        }
    }

    #[cfg(test)]
    fn patterns_len(&self) -> usize {
        match self {
            Scanner::Teddy(_, len) => *len,
            Scanner::Automaton(a) => a.patterns_len(),
        }
    }
}

/// Every distinct trigger with the rules it wakes (a bit per rule), in table order.
fn trigger_literals() -> Vec<(&'static str, u32)> {
    const { assert!(RULES.len() <= 32, "rule masks are u32") };
    let mut literals: Vec<(&'static str, u32)> = Vec::new();
    for (i, rule) in RULES.iter().enumerate() {
        for &t in rule.triggers {
            match literals.iter_mut().find(|(l, _)| *l == t) {
                Some((_, mask)) => *mask |= 1 << i,
                None => literals.push((t, 1 << i)),
            }
        }
    }
    literals
}

/// The literals in the order the automaton gets them, which decides its speed but not its
/// matches (no trigger is a prefix of another, so at most one matches at a place).
///
/// Teddy sorts literals into buckets (16 with AVX2 and over 32 literals) and, for a 4-byte
/// window, only checks "could some literal of this bucket start here", a bucket's literals
/// mixed nibble by nibble; so unlike literals in one bucket accept windows that are neither
/// (`sshpass` and `ccess_key` accept `sses`, as in "passes"), and each such window costs a
/// check. Literals that agree in the low nibble of their first four bytes (`oken` and
/// `OKEN`) form a group that shares a bucket; a group's first literal goes to bucket
/// `15 - place % 16` (aho-corasick's `teddy/generic.rs`).
///
/// So the groups are planned into buckets here, most frequent first (by [`Accepts::rate`]),
/// each into the bucket where it adds the fewest accepted windows and no bucket holding more
/// than its share; then each group's first literal is put at a place that lands it in its
/// bucket, the other literals filling the places in between. With the 11 triggers of issue
/// 14 added in table order, Teddy's checks on `scripts/bench`'s transcript went from none to
/// 678,000 (14 ms); planned, none again.
fn teddy_order<T>(literals: Vec<(&str, T)>) -> Vec<(&str, T)> {
    let key = |l: &str| -> [u8; FINGERPRINT] { std::array::from_fn(|i| l.as_bytes()[i] & 0x0f) };
    let mut groups: Vec<Vec<(&str, T)>> = Vec::new();
    for (literal, value) in literals {
        match groups.iter_mut().find(|g| key(g[0].0) == key(literal)) {
            Some(group) => group.push((literal, value)),
            None => groups.push(vec![(literal, value)]),
        }
    }
    let accepts: Vec<Accepts> = groups
        .iter()
        .map(|g| g.iter().fold(Accepts::default(), |a, (l, _)| a.with(l)))
        .collect();
    let rates: Vec<f64> = accepts.iter().map(Accepts::rate).collect();
    let mut hottest: Vec<usize> = (0..groups.len()).collect();
    hottest.sort_by(|&a, &b| rates[b].total_cmp(&rates[a]));
    let share = groups.len().div_ceil(BUCKETS);
    let mut plan: [Vec<usize>; BUCKETS] = Default::default();
    let mut bucket_accepts = [Accepts::default(); BUCKETS];
    let mut bucket_rates = [0.0; BUCKETS];
    for g in hottest {
        let (b, rate) = (0..BUCKETS)
            .filter(|&b| plan[b].len() < share)
            .map(|b| (b, bucket_accepts[b].union(accepts[g]).rate()))
            .min_by(|(a, rate_a), (b, rate_b)| {
                (rate_a - bucket_rates[*a]).total_cmp(&(rate_b - bucket_rates[*b]))
            })
            .expect("the shares hold every group");
        bucket_accepts[b] = bucket_accepts[b].union(accepts[g]);
        bucket_rates[b] = rate;
        plan[b].push(g);
    }
    let mut groups: Vec<Option<Vec<(&str, T)>>> = groups.into_iter().map(Some).collect();
    let mut out = Vec::new();
    let mut fillers = Vec::new();
    let mut next = [0; BUCKETS];
    let mut pending: usize = plan.iter().map(Vec::len).sum();
    while pending > 0 {
        let here = BUCKETS - 1 - out.len() % BUCKETS;
        // This place's bucket, if a group waits for it; else a literal whose group is placed
        // (it goes to its group's bucket wherever it stands); else, for want of one, the next
        // waiting group lands here, off its plan.
        let bucket = if next[here] < plan[here].len() || fillers.is_empty() {
            (0..BUCKETS)
                .map(|i| (here + BUCKETS - i) % BUCKETS)
                .find(|&b| next[b] < plan[b].len())
        } else {
            None
        };
        match bucket {
            Some(b) => {
                let mut group = groups[plan[b][next[b]]]
                    .take()
                    .expect("placed once")
                    .into_iter();
                next[b] += 1;
                pending -= 1;
                out.extend(group.next());
                fillers.extend(group);
            }
            None => out.extend(fillers.pop()),
        }
    }
    out.extend(fillers);
    out
}

/// How often each byte occurs in transcript text, per 10,000, roughly: English letter
/// frequencies, capitals a tenth as often, spaces, some punctuation, digits.
static TEXT_FREQUENCY: [u32; 256] = {
    const LETTERS: [u32; 26] = [
        820, 150, 280, 430, 1270, 220, 200, 610, 700, 20, 80, 400, 240, 670, 750, 190, 10, 600,
        630, 910, 280, 100, 240, 20, 200, 10,
    ];
    let mut table = [10; 256];
    let mut i = 0;
    while i < 26 {
        table[b'a' as usize + i] = LETTERS[i];
        table[b'A' as usize + i] = LETTERS[i] / 10;
        i += 1;
    }
    let mut digit = b'0';
    while digit <= b'9' {
        table[digit as usize] = 50;
        digit += 1;
    }
    table[b' ' as usize] = 1800;
    let punctuation = b"_-./\":=,\n";
    let mut p = 0;
    while p < punctuation.len() {
        table[punctuation[p] as usize] = 100;
        p += 1;
    }
    table
};

/// Teddy's buckets with AVX2 ("fat" Teddy, for over 32 literals); elsewhere it has 8, and
/// the planned buckets `b` and `b + 8` share one.
const BUCKETS: usize = 16;

/// The bytes a Teddy bucket accepts at each place of the fingerprint: those whose low nibble
/// is in `low` and high nibble in `high`, as bit sets.
#[derive(Debug, Clone, Copy, Default)]
struct Accepts {
    low: [u16; FINGERPRINT],
    high: [u16; FINGERPRINT],
}

impl Accepts {
    fn with(mut self, literal: &str) -> Accepts {
        for (i, b) in literal.bytes().take(FINGERPRINT).enumerate() {
            self.low[i] |= 1 << (b & 0x0f);
            self.high[i] |= 1 << (b >> 4);
        }
        self
    }

    fn union(mut self, other: Accepts) -> Accepts {
        for i in 0..FINGERPRINT {
            self.low[i] |= other.low[i];
            self.high[i] |= other.high[i];
        }
        self
    }

    /// About how often a window of transcript text is accepted: per place, the share of text
    /// bytes accepted there ([`TEXT_FREQUENCY`]), multiplied.
    fn rate(&self) -> f64 {
        (0..FINGERPRINT)
            .map(|i| {
                let mut share = 0;
                for high in (0..16).filter(|n| self.high[i] & (1 << n) != 0) {
                    for low in (0..16).filter(|n| self.low[i] & (1 << n) != 0) {
                        share += TEXT_FREQUENCY[high << 4 | low];
                    }
                }
                f64::from(share) / 10_000.0
            })
            .product()
    }
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
    t.automaton.hits(text, &t.masks)
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

/// A cheap look before an anchored rule's regex: after the keyword, an optional quote (or
/// escaped quote, `\"`) and blanks, is there an `=` or `:`? Prose ("the token is", "tokens")
/// stops here.
fn may_assign(text: &str, trigger_at: usize) -> bool {
    let mut rest = text.as_bytes()[trigger_at..]
        .iter()
        .skip_while(|b| b.is_ascii_alphanumeric() || **b == b'_' || **b == b'-')
        .peekable();
    rest.next_if(|b| **b == b'\\');
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
/// on purpose, for the sake of code like `Client(api_key=api_key)`. Numbers too: a short count
/// (`max_token=4096`), a port mapping or address (`-p3306:3306`, `127.0.0.1:80`).
fn is_code(value: &str) -> bool {
    let head = value.split(['(', '[']).next().unwrap_or("");
    let identifier = head.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && head
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || b == b'_' || b == b'.');
    // A short all-digit value is a count or a port (`max_token=4096`), not a secret.
    let number = value.len() < 6 && value.bytes().all(|b| b.is_ascii_digit());
    // Digits joined by `:` are a port mapping or an address (`-p3306:3306`, `127.0.0.1:80`).
    let mapping = value.contains(':')
        && value
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b':' || b == b'.');
    identifier || number || mapping
}

/// Adds to `ranges` what to replace in one match of `rule` (nothing, to keep it).
fn targets(rule: &Rule, caps: &Captures, haystack: &str, ranges: &mut Vec<Range<usize>>) {
    let Some(whole) = caps.get_match() else {
        return;
    };
    match rule.replace {
        Replace::Whole => ranges.push(whole.range()),
        Replace::Value | Replace::SecretValue => {
            let Some(value) = (1..caps.group_len()).find_map(|g| caps.get_group(g)) else {
                return;
            };
            let value = value.range();
            let secret_only = matches!(rule.replace, Replace::SecretValue);
            let is = |name| {
                caps.get_group_by_name(name)
                    .is_some_and(|g| g.range() == value)
            };
            if is("items") {
                // `["a", "b"]`: the pattern let no `"` into a string, so quotes pair up.
                let quotes: Vec<usize> =
                    memchr::memchr_iter(b'"', haystack[value.clone()].as_bytes())
                        .map(|at| value.start + at)
                        .collect();
                ranges.extend(
                    quotes
                        .chunks_exact(2)
                        .map(|pair| pair[0] + 1..pair[1])
                        .filter(|item| {
                            let text = &haystack[item.clone()];
                            !is_placeholder(text) && (!secret_only || is_secret_value(text, false))
                        }),
                );
                return;
            }
            let bare = is("bare");
            let basic = is("basic");
            let value = whole_token(haystack, value, bare);
            let value = if secret_only && !bare {
                unwrap_escaped_quotes(haystack, value)
            } else {
                value
            };
            let text = &haystack[value.clone()];
            if is_placeholder(text)
                || (bare && is_code(text))
                || (basic && !is_user_password_base64(text))
                || (secret_only && !is_secret_value(text, bare))
            {
                return;
            }
            ranges.push(value);
        }
    }
}

/// `value` cut so that its marker replaces a whole token: an unquoted value ends before an
/// escape that stands for a line break, a tab or a quote (`abc\nNEXT=1`, `abc\"` in text that
/// is itself escaped), and no value ends on the lone backslash of an escape its closing
/// quote completes.
fn whole_token(haystack: &str, value: Range<usize>, bare: bool) -> Range<usize> {
    let bytes = haystack.as_bytes();
    let mut end = value.end;
    if bare {
        let mut at = value.start;
        while at < end {
            if bytes[at] == b'\\' {
                match bytes.get(at + 1) {
                    Some(b'\\') => {
                        at += 2;
                        continue;
                    }
                    Some(b'n' | b'r' | b't' | b'"' | b'\'') | None => {
                        end = at;
                        break;
                    }
                    Some(_) => {}
                }
            }
            at += 1;
        }
    }
    let backslashes = bytes[value.start..end]
        .iter()
        .rev()
        .take_while(|b| **b == b'\\')
        .count();
    if backslashes % 2 == 1 {
        end -= 1;
    }
    value.start..end
}

/// A quoted value's inside without the escaped quotes that wrap it (`"\"s3cr3t\""`, a string
/// holding a quoted string); the marker goes between them.
fn unwrap_escaped_quotes(haystack: &str, value: Range<usize>) -> Range<usize> {
    let text = &haystack[value.clone()];
    for quote in ["\\\"", "\\'"] {
        if text.len() >= 2 * quote.len() && text.starts_with(quote) && text.ends_with(quote) {
            return value.start + quote.len()..value.end - quote.len();
        }
    }
    value
}

/// Whether an assigned value reads as a secret rather than as code or a word; `bare` when it
/// stood unquoted. Either way, four characters at least and no template (`${X}`, `#{x}`,
/// `{{x}}`, `$(cmd)`).
///
/// Unquoted, code assigns expressions: a call or an index (`Base.url_encode64(…)`, `keys[0]`),
/// a path of names (`settings.API_KEY`, `req.headers.authorization`, `data2.get`,
/// `env::var`), a snake-case name with a number (`token_v2`, `api_key_2`), a reference,
/// alias, atom, instance variable or tag (`*token`, `:token`, `@token`, `!vault`), an
/// optional chain (`res?.token`), a type (`Option<String>`, `String?`, `u128`). Those stay; a
/// password or token with digits or symbols goes (`hunter2`, `abc123`, `S3cr3t-pw`).
///
/// Quoted, a literal is a secret unless it is a word, a name or prose (`"music"`,
/// `"YOUR_API_KEY"`, `"Password is required"`, anything with two blanks or a `, `; a long
/// random mix of capitals and small letters is a secret), a stand-in (`your-key-here`), a URL
/// (`url_password` sees to its password), a file path (`"~/.ssh/id_ed25519"`,
/// `"/etc/app/token"`), or a short number.
fn is_secret_value(value: &str, bare: bool) -> bool {
    const TEMPLATES: &[&str] = &["${", "#{", "{{", "$(", "%("];
    if value.chars().count() < 4
        || TEMPLATES.iter().any(|t| value.contains(t))
        || is_stand_in(value)
    {
        return false;
    }
    if bare {
        !is_expression(value)
    } else {
        !is_word_or_prose(value) && !is_location(value) && !is_short_number(value)
    }
}

/// A value an example file puts where the secret goes: `your-api-key-here`, `changeme123`,
/// `replace_me`, anything holding `example` or `placeholder`. (Only for `assignment`: the AWS
/// documentation's own example key is still an `aws_secret_access_key`.)
fn is_stand_in(value: &str) -> bool {
    let v = value.to_ascii_lowercase();
    const WORDS: &[&str] = &[
        "placeholder",
        "changeme",
        "change-me",
        "change_me",
        "replace-me",
        "replace_me",
        "replaceme",
        "example",
    ];
    v.starts_with("your") || v.ends_with("here") || WORDS.iter().any(|w| v.contains(w))
}

/// An unquoted value that is an expression (see [`is_secret_value`]).
fn is_expression(value: &str) -> bool {
    // A non-null assertion or a try (`process.env.API_KEY!`, `token?`) ends an expression.
    let value = value.trim_end_matches(['!', '?']);
    const MARKS: &[&str] = &[
        "(", ")", "[", "]", "{", "}", "<", ">", "$", "`", "::", "->", "?.", "!.",
    ];
    let is_name = |part: &str| {
        part.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    let path = value.contains('.') && value.split('.').all(is_name);
    let sigil = value
        .strip_prefix(['*', ':', '@', '!'])
        .is_some_and(|rest| rest.split('.').all(is_name));
    // `token_v2`, `API_KEY_2`: words joined by `_`, each of one case, digits only at its end.
    let snake = value.contains('_')
        && is_name(value)
        && value.split('_').filter(|w| !w.is_empty()).all(|word| {
            let letters = word.trim_end_matches(|c: char| c.is_ascii_digit());
            (letters.is_empty() && word.len() <= 2)
                || (!letters.is_empty()
                    && letters.bytes().all(|b| b.is_ascii_alphabetic())
                    && (letters.bytes().all(|b| b.is_ascii_lowercase())
                        || letters.bytes().all(|b| b.is_ascii_uppercase())))
        });
    let primitive = matches!(value, "u128" | "i128" | "f128");
    MARKS.iter().any(|m| value.contains(m)) || path || sigil || snake || primitive || is_code(value)
}

/// A quoted value that is a word, a name or prose (see [`is_secret_value`]).
fn is_word_or_prose(value: &str) -> bool {
    // Two blanks or a `, ` make a sentence or code (`getpass("Password: ", stream=err)` quotes
    // from its `: ` to the next string), not a password.
    if value.matches(' ').count() >= 2 || value.contains(", ") {
        return true;
    }
    let letters_only = value
        .chars()
        .all(|c| c.is_alphabetic() || matches!(c, '_' | ' ' | '.' | ',' | '!' | '?' | '\''));
    if !letters_only {
        return false;
    }
    // Random letters: long, no blank, and capitals and small letters each a third or more.
    let len = value.chars().count();
    let upper = value.chars().filter(char::is_ascii_uppercase).count();
    let lower = value.chars().filter(char::is_ascii_lowercase).count();
    let random = len >= 16 && !value.contains(' ') && upper * 3 >= len && lower * 3 >= len;
    !random
}

/// A URL or a file path (see [`is_secret_value`]).
fn is_location(value: &str) -> bool {
    value.contains("://")
        || value.starts_with("~/")
        || value.starts_with("./")
        || value.starts_with("../")
        || (value.starts_with('/')
            && value[1..].starts_with(|c: char| c.is_ascii_lowercase())
            && value
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_./-".contains(&b)))
}

/// Digits alone, fewer than six: a count or a port, as [`is_code`] has it unquoted.
fn is_short_number(value: &str) -> bool {
    value.len() < 6 && value.bytes().all(|b| b.is_ascii_digit())
}

/// Whether `text` is base64 of `user:password`, as HTTP Basic and Docker's `"auth"` carry
/// it (`"auth": "passwordless"` is base64 too, of nothing like that).
fn is_user_password_base64(text: &str) -> bool {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .is_ok_and(|bytes| bytes.contains(&b':') && std::str::from_utf8(&bytes).is_ok())
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
    let woken = TRIGGERS.needles.woken(text.as_bytes());
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
                    targets(rule, &caps, haystack, &mut ranges);
                }
            }
        } else if rule.name != "url_password" || memchr::memchr(b'@', haystack.as_bytes()).is_some()
        {
            // `url_password` is woken by its `://`; every match also holds an `@`, which a
            // URL in text rarely has: looked for in the woken strings only, before the regex.
            for caps in re.captures_iter(haystack) {
                targets(rule, &caps, haystack, &mut ranges);
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

/// Builds the trigger automata now rather than at the first text redacted (about a
/// millisecond of work): a caller that has other work first can run this on another thread.
pub fn prepare() {
    LazyLock::force(&TRIGGERS);
    LazyLock::force(&TOKEN_TRIGGERS);
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

/// Redacts a record's text in place; returns how many secrets were replaced. Text still held
/// as its JSON token ([`LazyText`]) is looked at in the token first: with no trigger there it
/// stays a token (no copy, no unescaping), which is what lets `--all --json` copy it out.
pub fn redact_lazy(text: &mut LazyText) -> usize {
    if text
        .json_token()
        .is_some_and(|token| !may_wake_in_token(token))
    {
        return 0;
    }
    // A token woken by a word that holds a trigger (`broken`) and left as it was stays a
    // token, to be copied out rather than escaped again.
    match redact_text(text.as_str()) {
        Some((redacted, count)) => {
            *text = LazyText::from(redacted);
            count
        }
        None => 0,
    }
}

/// Whether a canonical JSON string token may hold a trigger in its text. Escaping maps each
/// character on its own, so a trigger in the text is its escaped form in the token, which
/// [`TOKEN_TRIGGERS`] looks for. No trigger in the token, none in the text: [`redact_text`]
/// would change nothing. (A match the token's escapes make up, `n` of `\n`, only costs the
/// full look.)
fn may_wake_in_token(token: &str) -> bool {
    may_wake_in_json(token.as_bytes())
}

/// Whether JSON as a writer made it (every string, keys included, in the canonical escaping;
/// a character escaped as `\uXXXX` besides is none a trigger holds) may hold a trigger in one
/// of its strings. With none, [`redact_json`] of the value written changes nothing, so a
/// writer may write a tool input first and look at it as written: the one scan of the JSON
/// costs less than [`redact_json`]'s scans of each key and string, most of them short.
pub fn may_wake_in_json(json: &[u8]) -> bool {
    let t = &*TOKEN_TRIGGERS;
    t.automaton.is_match(json) || t.needles.any(json)
}

/// Redacts every string value inside a JSON value, at any depth. Object keys stay; under a
/// secret-named key (`"password"`, `"api_key"`, `"Authorization"`) a string is redacted whole
/// (after its scheme word, for `Authorization`) unless it is a placeholder, so is an integer
/// that is no short count (`{"api_key": 12345678901234}` becomes a string), and so is each
/// string or integer of an array (`{"secret": ["a", "b"]}`).
pub fn redact_json(value: &mut Value) -> usize {
    match value {
        Value::String(s) => redact_string(s),
        Value::Array(items) => items.iter_mut().map(redact_json).sum(),
        Value::Object(map) => map
            .iter_mut()
            .map(|(key, v)| match v {
                Value::String(_) | Value::Number(_) | Value::Array(_) if is_secret_key(key) => {
                    redact_named(key, v)
                }
                _ => redact_json(v),
            })
            .sum(),
        _ => 0,
    }
}

/// A key whose value is a secret as a whole (the automaton first: most keys hold no trigger).
fn is_secret_key(key: &str) -> bool {
    TRIGGERS.automaton.is_match(key.as_bytes()) && KEY_NAME.is_match(key)
}

/// Redacts a value found under the secret-named `key`.
fn redact_named(key: &str, value: &mut Value) -> usize {
    match value {
        Value::String(s) if !is_placeholder(s) => {
            let n = redact_string(s);
            if n > 0 { n } else { redact_named_value(key, s) }
        }
        // An integer of six digits or more; a float or a short count (`4096`) stays.
        Value::Number(n) if !n.is_f64() && !is_code(&n.to_string()) => {
            *value = Value::String(format!("[REDACTED:{}]", named_rule(key)));
            1
        }
        Value::Array(items) => items.iter_mut().map(|item| redact_named(key, item)).sum(),
        _ => redact_json(value),
    }
}

/// The rule a value under the secret-named `key` is redacted by.
fn named_rule(key: &str) -> &'static str {
    if key.to_ascii_lowercase().ends_with("authorization") {
        "authorization"
    } else {
        "assignment"
    }
}

/// `{"password": "hunter2"}` → `{"password": "[REDACTED:assignment]"}`; an `Authorization`
/// value keeps its scheme word.
fn redact_named_value(key: &str, value: &mut String) -> usize {
    let rule = named_rule(key);
    let keep = match rule {
        "authorization" => value.split_once(' ').map(|(s, _)| s.len() + 1).unwrap_or(0),
        _ => 0,
    };
    if is_placeholder(&value[keep..]) {
        return 0;
    }
    value.truncate(keep);
    value.push_str(&format!("[REDACTED:{rule}]"));
    1
}

/// The rule names a redaction writes (`[REDACTED:<name>]`): a search whose pattern could match
/// inside one cannot skip lines by their raw bytes (`search`'s prefilter).
pub fn rule_names() -> impl Iterator<Item = &'static str> {
    RULES.iter().map(|r| r.name)
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
        RecordBody::Text { text, .. } => redact_lazy(text),
        RecordBody::ToolCall { input, .. } => redact_json(input),
        RecordBody::ToolResult { output, .. } => redact_lazy(output),
    }
}

#[cfg(test)]
mod tests;
