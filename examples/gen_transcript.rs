//! Writes a synthetic transcript of a given size for benchmarks: a Claude Code session shaped
//! like real 2.1.x ones (progress lines between turns, one block per assistant line, tool
//! results of a few KiB), or with `--codex` a Codex rollout (messages, `exec_command` calls and
//! their output). Deterministic: the same arguments give the same bytes; another `--seed`,
//! other text from the same vocabulary.
//!
//! Usage: cargo run --release --example gen_transcript -- BYTES OUT.jsonl [--codex] [--secret-words] [--seed N]
//!
//! The text is drawn from a vocabulary shaped like a real one, so that a rare word is rare: the
//! words of a vocabulary of 50,000 ranked by a Zipf law (a word's frequency is 1 / its rank),
//! the first few hundred English and programming words, the rest identifiers (`snake_case`,
//! `CamelCase`, `camelCase`, `module::item`), paths, flags, made-up names, and now and then a
//! word of programming jargon (`deadlock`, `segfault`); with numbers, hashes and durations in
//! between, sentences that start with a capital, and tool output in lines. [`word_at`] names
//! the word of a rank, so a benchmark can say how often the words it searches occur.
//!
//! No word of the default vocabulary wakes a redaction rule (they are left out, see
//! [`WAKES_REDACTION`]): the text is ordinary transcript text. `--secret-words` mixes such
//! words into it (`token`, `secret`, `password`, URLs, `Authorization:`, `sk-`), so that nearly
//! every string has to run some rule, and every 64th tool result reads a `.env` with two (fake)
//! secrets: the redaction benchmark's harder case.

use std::io::{BufWriter, Write};

/// The vocabulary's size: ranks 1 to this.
const VOCABULARY: usize = 50_000;

/// The most frequent words, most frequent first: English and the words of programming.
const COMMON: &str = "the to a of and is in it that this for we on be with not the test as \
    file can so error if it's now but are at should I from by or you run have let's change \
    fix code build will this line function use need which value type when an check then \
    do what one there new return all add failing case output also first here see because \
    make call its no path update read write just was has other only into get more module \
    tests like would should same instead so that both set config each open some branch \
    struct where error before after found could current look still field first string list \
    start main next result option command expected actual missing issue crate since name \
    default already two without last work doesn't don't keep passes fails passing why \
    right once back trait impl enum match unused variable warning compiled finished \
    target debug release profile dependency version lock import export class method \
    object array index map vector slice buffer byte bytes length size count number \
    empty null none some true false loop while break continue async await future thread \
    spawn task queue channel sender receiver socket stream timeout retry connection host \
    server client request response header body status code handler route endpoint query \
    database table row column schema migration insert select update delete record page \
    cursor tail follow session transcript harness reader writer parser lexer  \
    input parse format render print display debug log trace span event message reply \
    commit merge rebase diff patch review comment docs readme changelog release tag \
    install package registry cache directory folder home root user group permission \
    mode flag option argument parameter variable constant global local remote origin \
    upstream fetch push pull clone checkout stash reset revert bisect blame history \
    let's try again looks good works fine passing green red broken failing flaky \
    slow fast faster slower memory allocation heap stack pointer reference borrow lifetime \
    ownership clone copy move drop closure iterator generic bound where macro derive \
    attribute feature cfg platform linux windows macos shell bash script terminal \
    prompt cwd env environment process signal exit status pid child parent pipe stdin \
    stdout stderr encoding utf-8 ascii unicode escape quote bracket brace paren comma \
    → — ✓ … ünïcode naïve";

/// Words of programming jargon, placed among the rarer ranks: what a person searches for.
const JARGON: &str = "deadlock segfault backpressure idempotent reentrant tombstone mutex \
    semaphore livelock starvation watermark checksum bitflip overflow underflow sentinel \
    trampoline thunk vtable monomorphization backtrace panic unwinding coredump heisenbug \
    regression bisection flamegraph profiler allocator fragmentation compaction \
    tombstoning debounce throttle jitter quorum leader follower failover \
    partition replication snapshot checkpoint journal fsync writeback readahead \
    prefetch mmap pagefault hugepage numa affinity preemption scheduler spinlock rwlock \
    condvar futex epoll kqueue iouring nonblocking handshake keepalive nagle \
    fragmentation multiplexing demultiplexing serializer deserializer protobuf \
    flatbuffer msgpack varint endianness alignment padding bitfield bitmask bitset \
    hashmap btree trie skiplist bloomfilter hyperloglog roaring arena slab bump \
    refcount weakref finalizer destructor constructor initializer singleton factory \
    visitor observer decorator middleware interceptor dispatcher reactor executor \
    runtime coroutine generator continuation callback promise observable debouncer \
    normalizer canonicalization collation transliteration grapheme codepoint \
    surrogate bidi homoglyph punycode idna sanitizer validator linter formatter \
    minifier bundler transpiler polyfill shim vendoring monorepo workspace lockfile \
    changeset rollback rollout canary bluegreen blackhole honeypot";

/// Pieces of made-up names (products, people's handles, internal services).
const SYLLABLES: &[&str] = &[
    "ka", "zu", "mor", "tel", "vin", "dra", "lo", "qua", "ri", "sen", "bel", "tor", "nix", "pa",
    "gro", "fi", "ul", "dex", "ma", "or", "vek", "thi", "ban", "cor", "yel", "ix", "po", "lum",
];

/// Substrings that wake a redaction rule (crates/engine/src/redact.rs's triggers): no word of
/// the default vocabulary holds one.
const WAKES_REDACTION: &[&str] = &[
    "oken",
    "OKEN",
    "ecret",
    "ECRET",
    "assw",
    "ASSW",
    "assphrase",
    "machine",
    "curl",
    "mysql",
    "mariadb",
    "sshpass",
    "@",
    "sk-",
    "hf_",
    "SG.",
    "npm_",
    "pypi-",
    "xox",
    "xapp",
    "ya29",
    "AIza",
    "AKIA",
    "ASIA",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "hub_pat_",
    "glpat-",
    "k_live_",
    "k_test_",
    "wilio",
    "pi_key",
    "pi-key",
    "pikey",
    "piKey",
    "ccess",
    "rivate",
    "uthorization",
    ".eyJ",
    "AccountKey",
    "PuTTY",
    "PRIVATE",
    "slack.com",
];

/// The words of the secret-words mode, each waking some rule.
const SECRET_WORDS: &[&str] = &[
    "token",
    "tokens",
    "secret",
    "password",
    "https://docs.rs/regex",
    "Authorization:",
    "sk-",
];

/// xorshift64: deterministic and fast.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A number in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn words(list: &str) -> Vec<&str> {
    let mut seen = std::collections::HashSet::new();
    list.split_whitespace()
        .filter(|w| seen.insert(*w))
        .collect()
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The word of `rank` (1-based) as the vocabulary spells it: the common words first, then
/// jargon every few hundred ranks, and made-up identifiers, paths and names between them,
/// each derived from its rank alone.
fn word_at(rank: usize, common: &[&str], jargon: &[&str]) -> String {
    if rank <= common.len() {
        return common[rank - 1].to_string();
    }
    let past = rank - common.len();
    if past.is_multiple_of(JARGON_EVERY) && past / JARGON_EVERY <= jargon.len() {
        return jargon[past / JARGON_EVERY - 1].to_string();
    }
    // A multiplicative hash of the rank picks the parts: the same rank, the same word.
    let h = (rank as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let part = |shift: u32| common[((h >> shift) % common.len() as u64) as usize];
    let (a, b) = (part(8), part(24));
    let a = a.trim_end_matches('\'');
    let b = b.trim_end_matches('\'');
    let clean = |w: &str| w.replace(['\'', '-'], "");
    match (h >> 40) % 9 {
        0 | 1 => format!("{}_{}", clean(a), clean(b)),
        2 => format!("{}{}", capitalized(&clean(a)), capitalized(&clean(b))),
        3 => format!("{}{}", clean(a), capitalized(&clean(b))),
        4 => format!("{}::{}", clean(a), clean(b)),
        5 => {
            let ext = ["rs", "ts", "py", "go", "md", "toml", "json"][((h >> 50) % 7) as usize];
            format!("src/{}/{}.{ext}", clean(a), clean(b))
        }
        6 => format!("--{}-{}", clean(a), clean(b)),
        _ => {
            let n = 2 + ((h >> 44) % 3) as usize;
            (0..n)
                .map(|i| SYLLABLES[((h >> (i * 5)) % SYLLABLES.len() as u64) as usize])
                .collect()
        }
    }
}

/// A jargon word every this many ranks past the common words.
const JARGON_EVERY: usize = 211;

/// The vocabulary by rank and the cumulative Zipf weights to draw from it.
struct Vocabulary {
    words: Vec<String>,
    cumulative: Vec<f64>,
}

impl Vocabulary {
    fn new() -> Vocabulary {
        let common = words(COMMON);
        let jargon = words(JARGON);
        let mut words = Vec::with_capacity(VOCABULARY);
        let mut cumulative = Vec::with_capacity(VOCABULARY);
        let mut total = 0.0;
        for rank in 1..=VOCABULARY {
            let word = word_at(rank, &common, &jargon);
            if WAKES_REDACTION.iter().any(|t| word.contains(t)) {
                continue;
            }
            total += 1.0 / rank as f64;
            words.push(word);
            cumulative.push(total);
        }
        for c in &mut cumulative {
            *c /= total;
        }
        Vocabulary { words, cumulative }
    }

    fn draw(&self, rng: &mut Rng) -> &str {
        let u = rng.unit();
        let at = self.cumulative.partition_point(|&c| c < u);
        &self.words[at.min(self.words.len() - 1)]
    }
}

/// Writes text into `out`: words of the vocabulary with numbers, hashes and durations
/// between them.
struct Text<'a> {
    vocabulary: &'a Vocabulary,
    rng: Rng,
    secret_words: bool,
}

impl Text<'_> {
    /// A number, a hash or a duration, as tools print them.
    fn number(&mut self, out: &mut String) {
        use std::fmt::Write;
        let roll = self.rng.below(10);
        let magnitude = 10u64.pow(1 + self.rng.below(6) as u32);
        let n = self.rng.next() % magnitude;
        match roll {
            0..=5 => write!(out, "{n}"),
            6 => write!(out, "{:08x}", self.rng.next() as u32),
            7 => write!(out, "{}.{:02}s", n % 100, self.rng.below(100)),
            8 => write!(out, "{}ms", n % 5000),
            _ => write!(out, "{}%", n % 101),
        }
        .expect("writing to a String");
    }

    /// `n` words of prose: sentences that start with a capital, now and then a number or a
    /// `\"quoted\"` word (escaped for a JSON string when `quotes`).
    fn prose(&mut self, n: usize, quotes: bool, out: &mut String) {
        let mut sentence_start = true;
        for i in 0..n {
            if i > 0 {
                out.push(' ');
            }
            let roll = self.rng.below(1000);
            if roll < 50 {
                self.number(out);
            } else if self.secret_words && roll < 290 {
                out.push_str(SECRET_WORDS[self.rng.below(SECRET_WORDS.len())]);
            } else {
                let word = self.vocabulary.draw(&mut self.rng);
                let quoted = quotes && roll >= 990;
                if quoted {
                    out.push_str("\\\"");
                }
                if sentence_start {
                    out.push_str(&capitalized(word));
                } else {
                    out.push_str(word);
                }
                if quoted {
                    out.push_str("\\\"");
                }
            }
            sentence_start = self.rng.below(100) < 7;
            if sentence_start {
                out.push('.');
            }
        }
    }

    fn prose_string(&mut self, n: usize) -> String {
        let mut out = String::new();
        self.prose(n, true, &mut out);
        out
    }

    fn command_string(&mut self, n: usize) -> String {
        let mut out = String::new();
        self.command(n, &mut out);
        out
    }

    fn output_string(&mut self, words: usize) -> String {
        let mut out = String::new();
        self.output(words, &mut out);
        out
    }

    /// A shell command line of `n` words (no quotes: it is nested in JSON twice in Codex).
    fn command(&mut self, n: usize, out: &mut String) {
        const PROGRAMS: &[&str] = &[
            "cargo test",
            "cargo build",
            "rg -n",
            "git diff",
            "git log --oneline",
            "ls -la",
            "sed -n 1,80p",
            "npm test",
            "pytest -q",
            "go test ./...",
            "make",
            "cat",
        ];
        out.push_str(PROGRAMS[self.rng.below(PROGRAMS.len())]);
        for _ in 0..n {
            out.push(' ');
            out.push_str(self.vocabulary.draw(&mut self.rng));
        }
    }

    /// About `words` words of a tool's output: lines of paths, numbers and words, joined by
    /// JSON's `\n`.
    fn output(&mut self, words: usize, out: &mut String) {
        use std::fmt::Write;
        let mut written = 0;
        while written < words {
            if written > 0 {
                out.push_str("\\n");
            }
            let n = 3 + self.rng.below(12);
            match self.rng.below(10) {
                0 | 1 => {
                    let w = self.vocabulary.draw(&mut self.rng).to_string();
                    write!(
                        out,
                        "src/{w}.rs:{}:{}: ",
                        1 + self.rng.below(900),
                        1 + self.rng.below(80)
                    )
                    .expect("writing to a String");
                }
                2 => {
                    let w = self.vocabulary.draw(&mut self.rng).to_string();
                    let verdict = if self.rng.below(20) == 0 {
                        "FAILED"
                    } else {
                        "ok"
                    };
                    write!(out, "test {w} ... {verdict} ").expect("writing to a String");
                }
                3 => write!(out, "{:6}\\t", 1 + self.rng.below(9000)).expect("writing to a String"),
                _ => {}
            }
            self.prose(n, true, out);
            written += n;
        }
        if self.secret_words && self.rng.below(64) == 0 {
            out.push_str(&dot_env());
        }
    }
}

/// A `.env` a tool result reads in the secret-words mode: two (fake) secrets.
fn dot_env() -> String {
    format!(
        "\\nPASSWORD=hunter2\\nGITHUB_TOKEN=ghp_{}\\n",
        "aB3dE5fG7h".repeat(4).get(..36).unwrap_or_default()
    )
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let usage = || -> ! {
        eprintln!("usage: gen_transcript BYTES OUT.jsonl [--codex] [--secret-words] [--seed N]");
        std::process::exit(2);
    };
    let [_, size, path, flags @ ..] = args.as_slice() else {
        usage()
    };
    let (mut codex, mut secret_words, mut seed) = (false, false, 0u64);
    let mut flags = flags.iter();
    while let Some(flag) = flags.next() {
        match flag.as_str() {
            "--codex" => codex = true,
            "--secret-words" => secret_words = true,
            "--seed" => match flags.next().map(|n| n.parse()) {
                Some(Ok(n)) => seed = n,
                _ => usage(),
            },
            _ => usage(),
        }
    }
    let size: u64 = size.parse().unwrap_or_else(|_| usage());
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    let vocabulary = Vocabulary::new();
    let mut text = Text {
        vocabulary: &vocabulary,
        // xorshift's state must not be zero.
        rng: Rng((0x9e37_79b9_7f4a_7c15 ^ seed.wrapping_mul(0xff51_afd7_ed55_8ccd)) | 1),
        secret_words,
    };
    if codex {
        write_codex(size, &mut text, &mut out)?;
    } else {
        write_claude(size, &mut text, &mut out)?;
    }
    out.flush()
}

fn write_claude(size: u64, text: &mut Text<'_>, out: &mut impl Write) -> std::io::Result<()> {
    let mut written: u64 = 0;
    let mut turn: u64 = 0;
    let session = "b3nch000-0000-4000-8000-000000000000";
    while written < size {
        let ts = format!(
            "2026-11-02T{:02}:{:02}:{:02}.000Z",
            turn / 3600 % 24,
            turn / 60 % 60,
            turn % 60
        );
        let envelope = |uuid: String, parent: String| {
            format!(
                r#""parentUuid":"{parent}","isSidechain":false,"userType":"external","cwd":"/home/dev/app","sessionId":"{session}","version":"2.1.39","gitBranch":"main","uuid":"{uuid}","timestamp":"{ts}""#
            )
        };
        let mut lines = Vec::new();
        let prompt_words = 8 + text.rng.below(50);
        lines.push(format!(
            r#"{{"type":"user",{},"message":{{"role":"user","content":"{}"}}}}"#,
            envelope(format!("u{turn}"), format!("r{}", turn.wrapping_sub(1))),
            text.prose_string(prompt_words)
        ));
        for p in 0..3 {
            lines.push(format!(r#"{{"type":"progress",{},"data":{{"type":"hook_progress","hookEvent":"PreToolUse","hookName":"PreToolUse:Bash","command":"{}"}},"parentToolUseID":"toolu_{turn}","toolUseID":"toolu_{turn}"}}"#, envelope(format!("p{turn}-{p}"), format!("u{turn}")), text.command_string(4)));
        }
        let answer_words = 20 + text.rng.below(200);
        lines.push(format!(r#"{{"type":"assistant",{},"message":{{"id":"msg_{turn}","type":"message","role":"assistant","model":"claude-opus-4","content":[{{"type":"text","text":"{}"}}],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":1200,"output_tokens":300,"cache_read_input_tokens":50000}}}},"requestId":"req_{turn}"}}"#, envelope(format!("a{turn}"), format!("p{turn}-2")), text.prose_string(answer_words)));
        lines.push(format!(r#"{{"type":"assistant",{},"message":{{"id":"msg_{turn}","type":"message","role":"assistant","model":"claude-opus-4","content":[{{"type":"tool_use","id":"toolu_{turn}","name":"Bash","input":{{"command":"{}","description":"{}"}}}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{{"input_tokens":1200,"output_tokens":320}}}},"requestId":"req_{turn}"}}"#, envelope(format!("t{turn}"), format!("a{turn}")), text.command_string(3), text.prose_string(6)));
        let result_words = 200 + text.rng.below(1200);
        lines.push(format!(r#"{{"type":"user",{},"message":{{"role":"user","content":[{{"tool_use_id":"toolu_{turn}","type":"tool_result","content":"{}","is_error":false}}]}},"toolUseResult":{{"stdout":"…","stderr":"","interrupted":false}}}}"#, envelope(format!("r{turn}"), format!("t{turn}")), text.output_string(result_words)));
        for line in lines {
            out.write_all(line.as_bytes())?;
            out.write_all(b"\n")?;
            written += line.len() as u64 + 1;
        }
        turn += 1;
    }
    Ok(())
}

fn write_codex(size: u64, text: &mut Text<'_>, out: &mut impl Write) -> std::io::Result<()> {
    let session = "019c0000-0000-7000-8000-00000000b3c0";
    let mut lines = vec![format!(
        r#"{{"timestamp":"2026-11-02T10:00:00.000Z","type":"session_meta","payload":{{"id":"{session}","timestamp":"2026-11-02T10:00:00.000Z","cwd":"/home/dev/app","cli_version":"0.171.0"}}}}"#
    )];
    let mut written: u64 = 0;
    let mut turn: u64 = 0;
    while written < size {
        let ts = format!(
            "2026-11-02T{:02}:{:02}:{:02}.000Z",
            10 + turn / 3600 % 14,
            turn / 60 % 60,
            turn % 60
        );
        let item = |payload: String| {
            format!(r#"{{"timestamp":"{ts}","type":"response_item","payload":{payload}}}"#)
        };
        // Codex writes each message twice: the response item and its event's twin.
        let event = |payload: String| {
            format!(r#"{{"timestamp":"{ts}","type":"event_msg","payload":{payload}}}"#)
        };
        let prompt_words = 8 + text.rng.below(50);
        let prompt = text.prose_string(prompt_words);
        lines.push(item(format!(r#"{{"type":"message","id":"msg_{turn}_u","role":"user","content":[{{"type":"input_text","text":"{prompt}"}}]}}"#)));
        lines.push(event(format!(
            r#"{{"type":"user_message","message":"{prompt}","images":[]}}"#
        )));
        let answer_words = 20 + text.rng.below(200);
        let answer = text.prose_string(answer_words);
        lines.push(item(format!(r#"{{"type":"message","id":"msg_{turn}_a","role":"assistant","content":[{{"type":"output_text","text":"{answer}","annotations":[]}}]}}"#)));
        lines.push(event(format!(
            r#"{{"type":"agent_message","message":"{answer}"}}"#
        )));
        lines.push(event(format!(
            r#"{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{},"cached_input_tokens":{},"output_tokens":{}}}}}}}"#,
            1200 * (turn + 1),
            1000 * turn,
            300 * (turn + 1)
        )));
        let command = text.command_string(3);
        lines.push(item(format!(r#"{{"type":"function_call","id":"fc_{turn}","name":"exec_command","arguments":"{{\"cmd\":\"{command}\"}}","call_id":"call_{turn}"}}"#)));
        let result_words = 200 + text.rng.below(1200);
        let output = text.output_string(result_words);
        lines.push(item(format!(r#"{{"type":"function_call_output","call_id":"call_{turn}","output":"Process exited with code 0\nOutput:\n{output}"}}"#)));
        for line in lines.drain(..) {
            out.write_all(line.as_bytes())?;
            out.write_all(b"\n")?;
            written += line.len() as u64 + 1;
        }
        turn += 1;
    }
    Ok(())
}
