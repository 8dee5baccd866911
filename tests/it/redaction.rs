//! Redaction end to end: the real binary over a Claude transcript holding one real-shaped (fake)
//! secret per rule and near-misses that must stay, in text and NDJSON, with and without
//! `--no-redact`; one secret that appears in a tool input, a tool result and a prompt; and a
//! number and an array under secret names in a tool input.
//! Secrets are assembled at run time so that no scanner mistakes this file for a leak.

use std::fs;
use std::path::Path;

use serde_json::{Value, json};

use crate::support::{code, ndjson, records, run, stderr};

const SESSION: &str = "5ec2e75a-0000-4000-8000-000000000007";

fn base62(n: usize) -> String {
    "Qw3Er5Ty7Ui9Op2As4Df6Gh8Jk0Lz1Xc"
        .chars()
        .cycle()
        .take(n)
        .collect()
}

/// (rule, text holding the secret, the secret itself).
fn secrets() -> Vec<(&'static str, String, String)> {
    let hex = "0123456789abcdef0123456789abcdef";
    let pem_body = format!("{}\n{}", base62(64), base62(40));
    let ppk = format!(
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key-20260102\n\
         Public-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAI{}\n{}\nPrivate-Lines: 1\nAAAAI{}\n\
         Private-MAC: {}",
        base62(39),
        base62(20),
        base62(43),
        "0123456789abcdef".repeat(4)
    );
    let docker_auth = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode("dev:s3cr3t-docker")
    };
    let jwt = format!(
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ0ZXN0In0.{}",
        base62(43)
    );
    let list: Vec<(&'static str, String, String)> = vec![
        (
            "anthropic",
            "ANTHROPIC_API_KEY={}".into(),
            format!("sk-ant-api03-{}AA", base62(93)),
        ),
        (
            "openai",
            "the key is {} ok".into(),
            format!("sk-proj-{}", base62(120)),
        ),
        (
            "github",
            "git remote token {}".into(),
            format!("ghp_{}", base62(36)),
        ),
        (
            "github",
            "fine-grained {}".into(),
            format!("github_pat_{}_{}", base62(22), base62(59)),
        ),
        ("gitlab", "GL: {}".into(), format!("glpat-{}", base62(20))),
        (
            "aws_access_key_id",
            "aws_access_key_id = {}".into(),
            "AKIAQWERTYUIOPASDF23".into(),
        ),
        (
            "aws_secret_access_key",
            "aws_secret_access_key = {}".into(),
            format!("{}/{}", base62(20), base62(19)),
        ),
        (
            "slack",
            "SLACK_BOT={}".into(),
            format!("xoxb-1234567890-1234567890123-{}", base62(24)),
        ),
        (
            "slack_webhook",
            "post to {} now".into(),
            format!(
                "https://hooks.slack.com/services/T0000000/B0000000/{}",
                base62(24)
            ),
        ),
        (
            "stripe",
            "charge with {}".into(),
            format!("sk_live_{}", base62(24)),
        ),
        (
            "stripe",
            "restricted {}".into(),
            format!("rk_live_{}", base62(24)),
        ),
        (
            "google_api_key",
            "maps key {}".into(),
            format!("AIza{}", base62(35)),
        ),
        ("twilio", "Twilio account {}".into(), format!("AC{hex}")),
        (
            "npm",
            "//registry.npmjs.org/:_authToken {}".into(),
            format!("npm_{}", base62(36)),
        ),
        (
            "pypi",
            "upload with {}".into(),
            format!("pypi-AgEIcHlwaS5vcmc{}", base62(60)),
        ),
        ("jwt", "session cookie {}".into(), jwt),
        (
            "private_key",
            "id_ed25519:\n{}\n".into(),
            format!(
                "-----BEGIN OPENSSH PRIVATE KEY-----\n{pem_body}\n-----END OPENSSH PRIVATE KEY-----"
            ),
        ),
        (
            "authorization",
            "curl -H 'Authorization: Bearer {}' https://api".into(),
            format!("tk{}", base62(30)),
        ),
        (
            "url_password",
            "DATABASE_URL=postgres://app:{}@db:5432/app".into(),
            "Sup3r-s3cret!".into(),
        ),
        (
            "assignment",
            "PASSWORD={}\nNEXT=1".into(),
            "hunter2-Xy9".into(),
        ),
        (
            "assignment",
            "export GITHUB_TOKEN='{}'".into(),
            "tok3n-v4lue".into(),
        ),
        ("assignment", "api_key: \"{}\"".into(), "c0ffee-b4be".into()),
        (
            "url_password",
            "REDIS_URL=redis://:{}@cache:6379/0".into(),
            "Pa55-w0rd-r3dis".into(),
        ),
        (
            "url_password",
            "DATABASE_URL=postgres://app:{}@db/app".into(),
            "p@ss-w0rd-at".into(),
        ),
        (
            "slack",
            "SLACK_APP_TOKEN={}".into(),
            format!(
                "xapp-1-A0123ABCDEF-4567890123456-{}",
                "0f1e2d3c4b5a69788796a5b4c3d2e1f0".repeat(2)
            ),
        ),
        (
            "slack",
            "rotated {}".into(),
            format!("xoxe.xoxp-1-{}", base62(160)),
        ),
        ("slack", "refresh {}".into(), format!("xoxe-1-{}", base62(140))),
        (
            "google_oauth",
            "gcloud token {}".into(),
            format!("ya29.a0AfB_byC{}", base62(160)),
        ),
        ("huggingface", "HF_TOKEN={}".into(), format!("hf_{}", base62(34))),
        (
            "sendgrid",
            "SENDGRID_API_KEY={}".into(),
            format!("SG.{}.{}", base62(22), base62(43)),
        ),
        (
            "azure_account_key",
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={};EndpointSuffix=core.windows.net"
                .into(),
            format!("{}==", base62(86)),
        ),
        ("putty_private_key", "id.ppk:\n{}\n".into(), ppk),
        (
            "cli_password",
            "mysql -h db -u root -p{} app".into(),
            "S3cr3t-mysql".into(),
        ),
        (
            "cli_password",
            "sshpass -p '{}' ssh deploy@host".into(),
            "S3cr3t-sshpass".into(),
        ),
        (
            "cli_password",
            "curl -u admin:{} https://api.example.com".into(),
            "S3cr3t-curl".into(),
        ),
        (
            "netrc",
            "machine api.example.com login me password {}".into(),
            "S3cr3t-netrc".into(),
        ),
        (
            "docker_auth",
            "{\"auths\": {\"registry.example.com\": {\"auth\": \"{}\"}}}".into(),
            docker_auth,
        ),
        (
            "assignment",
            "{\"api_key\": {}}".into(),
            "12345678901234".into(),
        ),
        (
            "assignment",
            "{\"secret\": [\"{}\"]}".into(),
            "s3cr3t-array-item".into(),
        ),
    ];
    list.into_iter()
        .map(|(rule, template, secret)| (rule, template.replace("{}", &secret), secret))
        .collect()
}

/// Texts that look like secrets to a careless rule and must stay.
fn near_misses() -> Vec<String> {
    vec![
        "prefix keys with sk- and never commit them; run scikit-learn; sk-learn".into(),
        "AKIA1234 is too short for an access key id".into(),
        "base64 that is no JWT: eyJhIjoxLCJiIjoyfQ== and a lone header eyJhbGciOiJIUzI1NiJ9".into(),
        "see https://example.com:8443/docs and https://user@example.com/path".into(),
        "in your .env set PASSWORD= and API_KEY= (leave them empty in docs)".into(),
        "client = OpenAI(api_key=api_key); token = os.environ[\"TOKEN\"]".into(),
        "-H \"Authorization: Bearer $TOKEN\" and Authorization: Bearer <token>".into(),
        "max_tokens: 4096 and the token: it expires".into(),
        format!(
            "commit AC{} without the provider's name",
            "fedcba9876543210fedcba9876543210"
        ),
        "redis://cache:6379/0 and redis://:6379, mail ops@example.com".into(),
        "https://example.com:8443/users/@alice and git@github.com:org/repo.git".into(),
        "app tokens start xapp-1- and rotating ones xoxe.xoxp-1-".into(),
        "access tokens start with ya29. and last an hour".into(),
        "shelf_life; hf_hub_download(repo_id); the hf_ prefix; HF_TOKEN=$HF_TOKEN".into(),
        "Keys start SG. and then two dotted parts; SG.Team will review".into(),
        "AccountName=acct;AccountKey=<your key>;EndpointSuffix=core.windows.net".into(),
        "PuTTYgen saves PuTTY-User-Key-File-3: files with Private-Lines: counts".into(),
        "ssh -p 22 host; mysql -P 3306 -h db; mysql -u root -p app; psql -p 5432".into(),
        "find /var/lib/mysql -perm 600; docker run --name mysql -p3306:3306 mysql:8".into(),
        "sshpass -e ssh -p 22 host; sshpass -p \"$SSHPASS\" ssh h".into(),
        "curl -u admin https://x (it prompts); curl -u \"$USER:$PASS\" https://x".into(),
        "reset the machine password and login again".into(),
        "{\"auth\": \"passwordless\", \"x\": {\"auth\": \"required\"}}".into(),
        "{\"max_tokens\": 4096, \"api_key_id\": 12}".into(),
        "{\"secrets\": [\"db\", \"api\"], \"secret\": [\"$A\", \"<b>\"]}".into(),
    ]
}

fn line(value: Value) -> String {
    format!("{value}\n")
}

/// The transcript: one prompt per secret, one assistant text per near-miss, and the shared
/// secret in a prompt, a tool input and a tool result.
fn transcript(shared: &str) -> String {
    let mut out = String::new();
    let ts = "2026-11-02T10:00:00.000Z";
    for (i, (_, text, _)) in secrets().iter().enumerate() {
        out += &line(json!({"type":"user","uuid":format!("s-{i}"),"timestamp":ts,
            "message":{"role":"user","content":text}}));
    }
    for (i, text) in near_misses().iter().enumerate() {
        out += &line(
            json!({"type":"assistant","uuid":format!("n-{i}"),"timestamp":ts,
            "message":{"id":format!("msg_n{i}"),"role":"assistant","content":[{"type":"text","text":text}]}}),
        );
    }
    out += &line(json!({"type":"user","uuid":"shared-prompt","timestamp":ts,
        "message":{"role":"user","content":format!("use my token {shared} to push")}}));
    out += &line(
        json!({"type":"assistant","uuid":"shared-call","timestamp":ts,
        "message":{"id":"msg_shared","role":"assistant","content":[{"type":"tool_use","id":"toolu_shared","name":"Bash",
        "input":{"command":format!("git push https://x-access-token:{shared}@github.com/o/r"),
                 "env":{"GH":[format!("{shared}")]},"description":"push"}}]}}),
    );
    out += &line(
        json!({"type":"assistant","uuid":"named-call","timestamp":ts,
        "message":{"id":"msg_named","role":"assistant","content":[{"type":"tool_use","id":"toolu_named","name":"mcp__vault__put",
        "input":{"api_key":12345678901234_u64,"secret":["s3cr3t-x1","$KEEP"],"max_tokens":4096}}]}}),
    );
    out += &line(json!({"type":"user","uuid":"shared-result","timestamp":ts,
        "message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_shared",
        "content":format!("remote: token {shared} accepted\n"),"is_error":false}]}}));
    out
}

struct Corpus {
    _dir: tempfile::TempDir,
    shared: String,
}

impl Corpus {
    fn new() -> Corpus {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join(".claude/projects/-work-app");
        fs::create_dir_all(&project).unwrap();
        let shared = format!("ghp_{}", base62(36).chars().rev().collect::<String>());
        fs::write(
            project.join(format!("{SESSION}.jsonl")),
            transcript(&shared),
        )
        .unwrap();
        Corpus { _dir: dir, shared }
    }
    fn home(&self) -> &Path {
        self._dir.path()
    }
    fn stdout(&self, extra: &[&str]) -> String {
        let mut args = vec!["read", "local:5ec2e75a", "--all", "--full"];
        args.extend(extra);
        let out = run(self.home(), &args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    }
    fn json(&self, extra: &[&str]) -> Vec<Value> {
        let mut args = vec!["read", "local:5ec2e75a", "--all", "--json"];
        args.extend(extra);
        let out = run(self.home(), &args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        records(&ndjson(&out))
    }
}

fn by_id<'a>(records: &'a [Value], id: &str) -> &'a Value {
    records
        .iter()
        .find(|r| r["id"].as_str().is_some_and(|i| i.starts_with(id)))
        .unwrap_or_else(|| panic!("no record {id}"))
}

#[test]
fn every_secret_is_redacted_in_ndjson_and_every_near_miss_kept() {
    let corpus = Corpus::new();
    let recs = corpus.json(&[]);
    for (i, (rule, text, secret)) in secrets().iter().enumerate() {
        let got = by_id(&recs, &format!("s-{i}#"))["text"].as_str().unwrap();
        assert!(
            !got.contains(secret.as_str()),
            "{rule}: secret left in {got:?}"
        );
        assert_eq!(
            got,
            text.replace(secret.as_str(), &format!("[REDACTED:{rule}]")),
            "{rule}"
        );
    }
    for (i, text) in near_misses().iter().enumerate() {
        assert_eq!(by_id(&recs, &format!("n-{i}#"))["text"], text.as_str());
    }
}

#[test]
fn every_secret_is_redacted_in_text_and_every_near_miss_kept() {
    let corpus = Corpus::new();
    let text = corpus.stdout(&[]);
    for (rule, _, secret) in secrets() {
        // A PEM block spans lines, which text output indents: look for each of its lines.
        for part in secret.lines().filter(|l| !l.starts_with("-----")) {
            assert!(!text.contains(part), "{rule}: {part:?} printed:\n{text}");
        }
        assert!(text.contains(&format!("[REDACTED:{rule}]")), "{rule}");
    }
    for near in near_misses() {
        assert!(text.contains(&near), "near-miss changed: {near:?}\n{text}");
    }
    assert!(!text.contains(&corpus.shared));
}

#[test]
fn no_redact_shows_everything() {
    let corpus = Corpus::new();
    let recs = corpus.json(&["--no-redact"]);
    for (i, (rule, text, _)) in secrets().iter().enumerate() {
        assert_eq!(
            by_id(&recs, &format!("s-{i}#"))["text"],
            text.as_str(),
            "{rule}"
        );
    }
    let text = corpus.stdout(&["--no-redact"]);
    for (rule, _, secret) in secrets() {
        let first = secret.lines().next().unwrap();
        assert!(text.contains(first), "{rule}: {first:?} not shown");
    }
    assert!(!text.contains("[REDACTED:"));
}

#[test]
fn a_secret_in_a_tool_input_a_tool_result_and_a_prompt_is_redacted_in_all_three() {
    let corpus = Corpus::new();
    let recs = corpus.json(&[]);
    let prompt = by_id(&recs, "shared-prompt#");
    assert_eq!(prompt["text"], "use my token [REDACTED:github] to push");
    let call = by_id(&recs, "shared-call#");
    assert_eq!(call["kind"], "tool_call");
    assert_eq!(
        call["input"],
        json!({"command":"git push https://x-access-token:[REDACTED:github]@github.com/o/r",
               "env":{"GH":["[REDACTED:github]"]},"description":"push"})
    );
    let result = by_id(&recs, "shared-result#");
    assert_eq!(result["kind"], "tool_result");
    assert_eq!(
        result["output"],
        "remote: token [REDACTED:github] accepted\n"
    );
    // Nowhere in the whole output, in either format.
    let all = serde_json::to_string(&recs).unwrap();
    assert!(!all.contains(&corpus.shared));
    assert!(!corpus.stdout(&[]).contains(&corpus.shared));
    // And all three are there with --no-redact.
    let raw = serde_json::to_string(&corpus.json(&["--no-redact"])).unwrap();
    assert_eq!(raw.matches(corpus.shared.as_str()).count(), 4);
}

#[test]
fn a_long_number_and_an_array_under_secret_names_in_a_tool_input_are_redacted() {
    let corpus = Corpus::new();
    let call = by_id(&corpus.json(&[]), "named-call#").clone();
    assert_eq!(
        call["input"],
        json!({"api_key":"[REDACTED:assignment]","secret":["[REDACTED:assignment]","$KEEP"],
               "max_tokens":4096})
    );
    let raw = by_id(&corpus.json(&["--no-redact"]), "named-call#").clone();
    assert_eq!(
        raw["input"],
        json!({"api_key":12345678901234_u64,"secret":["s3cr3t-x1","$KEEP"],"max_tokens":4096})
    );
}
