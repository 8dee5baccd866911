//! One test per rule of the table: a real-shaped (fake) secret is replaced, its near-misses
//! stay. Secrets are assembled at run time so that no scanner mistakes this file for a leak.

use super::*;

fn redacted(text: &str) -> String {
    redact_text(text).map_or_else(|| text.to_string(), |(s, _)| s)
}

/// `text` becomes `want`.
#[track_caller]
fn check(text: &str, want: &str) {
    assert_eq!(redacted(text), want, "input: {text}");
}

/// `text` stays as it is.
#[track_caller]
fn keep(text: &str) {
    assert_eq!(redact_text(text), None, "should keep: {text}");
}

fn base62(n: usize) -> String {
    "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY"
        .chars()
        .cycle()
        .take(n)
        .collect()
}

#[test]
fn private_key_blocks_whole() {
    let body = format!("{}\n{}\n", base62(64), base62(40));
    let block =
        format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{body}-----END OPENSSH PRIVATE KEY-----");
    check(
        &format!("key:\n{block}\ndone"),
        "key:\n[REDACTED:private_key]\ndone",
    );
    let rsa = format!(
        "-----BEGIN RSA PRIVATE KEY-----\\n{}\\n-----END RSA PRIVATE KEY-----\\n",
        base62(64)
    );
    check(
        &format!("\"pk\": \"{rsa}\""),
        "\"pk\": \"[REDACTED:private_key]\\n\"",
    );
    // Cut short by `head`: up to the end of the base64 lines.
    check(
        &format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n{}\n(truncated)",
            base62(64),
            base62(64)
        ),
        "[REDACTED:private_key]\n(truncated)",
    );
    keep("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----");
    keep("-----BEGIN PUBLIC KEY-----");
}

#[test]
fn anthropic() {
    let key = format!("sk-ant-api03-{}AA", base62(93));
    check(
        &format!("export ANTHROPIC_API_KEY={key}"),
        "export ANTHROPIC_API_KEY=[REDACTED:anthropic]",
    );
    check(
        &format!("sk-ant-admin01-{}", base62(40)),
        "[REDACTED:anthropic]",
    );
    keep("keys look like sk-ant-api03-… in the console");
}

#[test]
fn openai() {
    check(
        &format!("key {}", format_args!("sk-proj-{}", base62(120))),
        "key [REDACTED:openai]",
    );
    check(
        &format!("sk-{}T3BlbkFJ{}", base62(20), base62(20)),
        "[REDACTED:openai]",
    );
    check(&format!("'sk-{}'", base62(48)), "'[REDACTED:openai]'");
    keep("use the sk- prefix; run scikit-learn; see task-list and disk-usage-report-for-all");
    keep("sk-learn is not a key");
    keep(&format!("sk-{}", base62(30)));
}

#[test]
fn github() {
    for prefix in ["ghp", "gho", "ghu", "ghs", "ghr"] {
        check(
            &format!("token {prefix}_{}", base62(36)),
            "token [REDACTED:github]",
        );
    }
    check(
        &format!("github_pat_{}_{}", base62(22), base62(59)),
        "[REDACTED:github]",
    );
    keep("ghp_ is the classic prefix; ghp_short123");
}

#[test]
fn gitlab() {
    check(&format!("glpat-{}", base62(20)), "[REDACTED:gitlab]");
    keep("glpat-xyz");
}

#[test]
fn aws() {
    check(
        "id AKIAIOSFODNN7EXAMPLE,",
        "id [REDACTED:aws_access_key_id],",
    );
    check("ASIAY34FZKBOKMUTVV7A", "[REDACTED:aws_access_key_id]");
    keep("AKIA1234 is too short, AKIAIOSFODNN7EXAMPLEXX too long");
    let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    check(
        &format!("[default]\naws_secret_access_key = {secret}\n"),
        "[default]\naws_secret_access_key = [REDACTED:aws_secret_access_key]\n",
    );
    check(
        &format!("{{\"AWS_SECRET_ACCESS_KEY\": \"{secret}\"}}"),
        "{\"AWS_SECRET_ACCESS_KEY\": \"[REDACTED:aws_secret_access_key]\"}",
    );
    keep("set aws_secret_access_key in ~/.aws/credentials");
}

#[test]
fn slack() {
    check(
        &format!("xoxb-1234567890-1234567890123-{}", base62(24)),
        "[REDACTED:slack]",
    );
    check(&format!("xoxp-{}", base62(30)), "[REDACTED:slack]");
    check(
        &format!(
            "curl https://hooks.slack.com/services/T00000000/B00000000/{} -d",
            base62(24)
        ),
        "curl [REDACTED:slack_webhook] -d",
    );
    keep("xoxb- tokens are bot tokens; see https://hooks.slack.com/services/");
}

#[test]
fn stripe() {
    check(&format!("sk_live_{}", base62(24)), "[REDACTED:stripe]");
    check(&format!("rk_live_{}", base62(24)), "[REDACTED:stripe]");
    check(&format!("sk_test_{}", base62(24)), "[REDACTED:stripe]");
    keep("pk_live_ keys are publishable; sk_live_ is secret");
}

#[test]
fn google() {
    check(
        &format!("key=AIza{}&q=1", base62(35)),
        "key=[REDACTED:google_api_key]&q=1",
    );
    keep("AIzaSy is how they start");
}

#[test]
fn twilio() {
    let hex = "0123456789abcdef0123456789abcdef";
    check(
        &format!("Twilio account AC{hex} and key SK{hex}"),
        "Twilio account [REDACTED:twilio] and key [REDACTED:twilio]",
    );
    // Without the word Twilio, AC/SK + hex is not enough.
    keep(&format!("commit AC{hex}"));
    keep("TWILIO_ACCOUNT_SID=AC123");
}

#[test]
fn npm_and_pypi() {
    check(
        &format!("//registry.npmjs.org/:_authToken=npm_{}", base62(36)),
        "//registry.npmjs.org/:_authToken=[REDACTED:npm]",
    );
    keep("npm_config_cache=/tmp/npm");
    check(
        &format!("password = pypi-AgEIcHlwaS5vcmc{}", base62(60)),
        "password = [REDACTED:pypi]",
    );
    keep("pip install pypi-simple");
}

#[test]
fn jwt() {
    let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    check(
        &format!("cookie: session={jwt}; path=/"),
        "cookie: session=[REDACTED:jwt]; path=/",
    );
    // A base64 JSON blob that is not a JWT, and a lone header.
    keep("data:application/json;base64,eyJhIjoxLCJiIjoyfQ==");
    keep("header eyJhbGciOiJIUzI1NiJ9 only");
}

#[test]
fn authorization_headers() {
    check(
        "curl -H 'Authorization: Bearer abc123.def456-ghi' x",
        "curl -H 'Authorization: Bearer [REDACTED:authorization]' x",
    );
    check(
        "authorization: Basic dXNlcjpwYXNzd29yZA==",
        "authorization: Basic [REDACTED:authorization]",
    );
    check(
        "{\"Authorization\": \"token 0123456789abcdef\"}",
        "{\"Authorization\": \"token [REDACTED:authorization]\"}",
    );
    check(
        "Proxy-Authorization: c2VjcmV0OnBhc3M=",
        "Proxy-Authorization: [REDACTED:authorization]",
    );
    keep("-H \"Authorization: Bearer $TOKEN\"");
    keep("Authorization: Bearer <token>");
    keep("send the Authorization: header with every request");
}

#[test]
fn url_passwords() {
    check(
        "postgres://app:s3cret!@db:5432/app",
        "postgres://app:[REDACTED:url_password]@db:5432/app",
    );
    check(
        "git clone https://user:hunter2@example.com/r.git",
        "git clone https://user:[REDACTED:url_password]@example.com/r.git",
    );
    keep("https://example.com:8080/path?x=1");
    keep("https://user@example.com/ and ssh://git@github.com:22/x");
    keep("redis://:${REDIS_PASSWORD}@cache:6379");
}

#[test]
fn assignments() {
    check("PASSWORD=hunter2", "PASSWORD=[REDACTED:assignment]");
    check(
        "export DB_PASSWORD='p@ss w0rd'",
        "export DB_PASSWORD='[REDACTED:assignment]'",
    );
    check(
        "GITHUB_TOKEN=abc123\nNEXT=1",
        "GITHUB_TOKEN=[REDACTED:assignment]\nNEXT=1",
    );
    check(
        "api_key: \"live-0c3f\"",
        "api_key: \"[REDACTED:assignment]\"",
    );
    check(
        "client_secret => 'Zx9!'",
        "client_secret => '[REDACTED:assignment]'",
    );
    check(
        "SECRET_KEY = \"django-insecure\"",
        "SECRET_KEY = \"[REDACTED:assignment]\"",
    );
    check(
        "TWILIO_AUTH_TOKEN=0123456789abcdef0123456789abcdef",
        "TWILIO_AUTH_TOKEN=[REDACTED:assignment]",
    );
    // Docs with empty values, code that names the variable, placeholders.
    keep("Set PASSWORD= and SECRET= in your .env:\nPASSWORD=\nAPI_KEY=\"\"\n");
    keep("client = OpenAI(api_key=api_key)");
    keep("token = os.environ[\"TOKEN\"]; password = getpass.getpass()");
    keep("PASSWORD=$DB_PASSWORD API_KEY=<your key> TOKEN=*** SECRET=${SECRET}");
    keep("max_tokens: 4096, the token: it expires; input_tokens=12");
    keep("Password: required");
}

#[test]
fn already_redacted_values_are_not_relabelled() {
    let key = format!("sk-ant-api03-{}AA", base62(93));
    check(&format!("API_KEY={key}"), "API_KEY=[REDACTED:anthropic]");
    check(
        &format!("https://x-access-token:ghp_{}@github.com/o/r", base62(36)),
        "https://x-access-token:[REDACTED:github]@github.com/o/r",
    );
}

#[test]
fn counts_and_no_copy_without_triggers() {
    assert_eq!(redact_text("plain text, nothing to see"), None);
    let (_, n) = redact_text(&format!("ghp_{0} and ghp_{0}", base62(36))).unwrap();
    assert_eq!(n, 2);
    // A trigger without a match is still no change.
    assert_eq!(redact_text("the token is short-lived"), None);
}

#[test]
fn json_strings_recursively_keys_kept() {
    let gh = format!("ghp_{}", base62(36));
    let mut input = serde_json::json!({
        "command": format!("git push https://x:{gh}@github.com/o/r"),
        "env": {"password": "hunter2", "API_KEY": "$KEY", "nested": [format!("Bearer {gh}")]},
        "headers": {"Authorization": "Bearer abc123def456"},
        format!("{gh}"): 1,
    });
    let n = redact_json(&mut input);
    assert_eq!(n, 4, "{input}");
    assert_eq!(
        input,
        serde_json::json!({
            "command": "git push https://x:[REDACTED:github]@github.com/o/r",
            "env": {"password": "[REDACTED:assignment]", "API_KEY": "$KEY", "nested": ["Bearer [REDACTED:github]"]},
            "headers": {"Authorization": "Bearer [REDACTED:authorization]"},
            format!("{gh}"): 1,
        })
    );
}

#[test]
fn every_rule_is_exercised_and_triggers_are_consistent() {
    // Every pattern compiles.
    for i in 0..RULES.len() {
        regex(i);
    }
    // A trigger that is a prefix of another (starting at the same byte) would hide it from
    // the leftmost-first scan; share one trigger between rules instead.
    let all: Vec<&str> = RULES
        .iter()
        .flat_map(|r| r.triggers.iter().copied())
        .collect();
    for a in &all {
        for b in &all {
            assert!(a == b || !b.starts_with(a), "trigger {a:?} hides {b:?}");
        }
    }
    // An anchored rule starts one byte before its trigger (the keyword's first letter): every
    // trigger, in the keywords that hold it, must lead to a redaction — no dead triggers.
    let keywords = [
        "password",
        "passwd",
        "passphrase",
        "secret",
        "secret_key",
        "token",
        "api_key",
        "api-key",
        "Api-Key",
        "apikey",
        "apiKey",
        "access_key",
        "accessKey",
        "private_key",
        "privateKey",
        "authorization",
    ];
    for rule in RULES.iter().filter(|r| r.anchored) {
        for t in rule.triggers {
            // A short trigger is a needle, which gives no position to anchor at.
            assert!(
                t.len() >= FINGERPRINT,
                "{}: anchored trigger {t:?} is shorter than {FINGERPRINT} bytes",
                rule.name
            );
            let spellings: Vec<String> = keywords
                .iter()
                .flat_map(|k| {
                    [
                        k.to_string(),
                        k.to_ascii_uppercase(),
                        format!("{}{}", k[..1].to_ascii_uppercase(), &k[1..]),
                    ]
                })
                .filter(|k| k.contains(t))
                .collect();
            assert!(
                !spellings.is_empty(),
                "{}: trigger {t:?} in no keyword",
                rule.name
            );
            for k in spellings {
                let got = redacted(&format!("{k}=s3cr3t-Value9"));
                assert!(
                    got.contains(&format!("[REDACTED:{}]", rule.name)),
                    "{}: {k}= is not redacted: {got}",
                    rule.name
                );
            }
        }
    }
    // Every rule name is distinct.
    let mut names: Vec<&str> = RULES.iter().map(|r| r.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), RULES.len());
}

#[test]
fn the_automaton_gets_one_literal_of_each_fingerprint_first() {
    let order = first_of_each_fingerprint(vec![
        ("oken", 0),
        ("OKEN", 1),
        ("ghp_", 2),
        ("ecret", 3),
        ("ECRET", 4),
        ("gho_", 5),
    ]);
    let literals: Vec<&str> = order.iter().map(|(l, _)| *l).collect();
    assert_eq!(literals, ["oken", "ghp_", "ecret", "gho_", "OKEN", "ECRET"]);
    // Each literal keeps what it carries.
    assert!(
        order
            .iter()
            .all(|(l, i)| ["oken", "OKEN", "ghp_", "ecret", "ECRET", "gho_"][*i] == *l)
    );
}

#[test]
fn short_triggers_are_needles_and_long_ones_go_to_the_automaton() {
    let t = &*TRIGGERS;
    assert_eq!(t.needles.len(), 2, "sk- and @");
    assert_eq!(t.automaton.patterns_len(), t.masks.len());
    // A string whose only trigger is a needle still wakes its rule.
    assert!(
        redacted(&format!("sk-ant-api03-{}AA", "A".repeat(93))).contains("[REDACTED:anthropic]")
    );
    assert!(redacted("mysql://root:pa55word@db").contains("[REDACTED:url_password]"));
}
