//! Writes a synthetic Claude Code transcript of a given size, shaped like real 2.1.x sessions
//! (progress lines between turns, one block per assistant line, tool results of a few KiB),
//! for benchmarks. Deterministic: the same size gives the same bytes.
//!
//! Usage: cargo run --release --example gen_transcript -- BYTES OUT.jsonl [--secret-words]
//!
//! `--secret-words` mixes words that wake the redaction rules into the text (`token`, `secret`,
//! `password`, URLs, `Authorization:`, `sk-`), so that nearly every string has to run some rule,
//! and every 64th tool result reads a `.env` with two (fake) secrets: the redaction benchmark's
//! harder case.

use std::io::{BufWriter, Write};

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (size, path, secret_words) = match args.as_slice() {
        [_, size, path] => (size, path, false),
        [_, size, path, flag] if flag == "--secret-words" => (size, path, true),
        _ => {
            eprintln!("usage: gen_transcript BYTES OUT.jsonl [--secret-words]");
            std::process::exit(2);
        }
    };
    let size: u64 = size.parse().expect("BYTES is a number");
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    let seed = std::cell::Cell::new(0x9e37_79b9_7f4a_7c15_u64);
    let next = || {
        let mut x = seed.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        seed.set(x);
        x
    };
    let words = [
        "the",
        "build",
        "fails",
        "because",
        "cargo",
        "test",
        "passes",
        "on",
        "main",
        "fix",
        "a",
        "flaky",
        "socket",
        "timeout",
        "in",
        "src/lib.rs",
        "let",
        "x",
        "=",
        "Some(1);",
        "\\\"quoted\\\"",
        "ünïcode",
    ];
    let dot_env = format!(
        "\\nPASSWORD=hunter2\\nGITHUB_TOKEN=ghp_{}\\n",
        "aB3dE5fG7h".repeat(4).get(..36).unwrap_or_default()
    );
    let mut words: Vec<&str> = words.to_vec();
    if secret_words {
        words.extend([
            "token",
            "tokens",
            "secret",
            "password",
            "https://docs.rs/regex",
            "Authorization:",
            "sk-",
        ]);
    }
    let text = |n: usize| -> String {
        (0..n)
            .map(|_| words[(next() % words.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join(" ")
    };
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
        lines.push(format!(
            r#"{{"type":"user",{},"message":{{"role":"user","content":"{}"}}}}"#,
            envelope(format!("u{turn}"), format!("r{}", turn.wrapping_sub(1))),
            text(30)
        ));
        for p in 0..3 {
            lines.push(format!(r#"{{"type":"progress",{},"data":{{"type":"hook_progress","hookEvent":"PreToolUse","hookName":"PreToolUse:Bash","command":"{}"}},"parentToolUseID":"toolu_{turn}","toolUseID":"toolu_{turn}"}}"#, envelope(format!("p{turn}-{p}"), format!("u{turn}")), text(8)));
        }
        lines.push(format!(r#"{{"type":"assistant",{},"message":{{"id":"msg_{turn}","type":"message","role":"assistant","model":"claude-opus-4","content":[{{"type":"text","text":"{}"}}],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":1200,"output_tokens":300,"cache_read_input_tokens":50000}}}},"requestId":"req_{turn}"}}"#, envelope(format!("a{turn}"), format!("p{turn}-2")), text(120)));
        lines.push(format!(r#"{{"type":"assistant",{},"message":{{"id":"msg_{turn}","type":"message","role":"assistant","model":"claude-opus-4","content":[{{"type":"tool_use","id":"toolu_{turn}","name":"Bash","input":{{"command":"cargo test -- {}","description":"{}"}}}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{{"input_tokens":1200,"output_tokens":320}}}},"requestId":"req_{turn}"}}"#, envelope(format!("t{turn}"), format!("a{turn}")), text(4), text(6)));
        let result_words = 200 + (next() % 1200) as usize;
        lines.push(format!(r#"{{"type":"user",{},"message":{{"role":"user","content":[{{"tool_use_id":"toolu_{turn}","type":"tool_result","content":"{}","is_error":false}}]}},"toolUseResult":{{"stdout":"…","stderr":"","interrupted":false}}}}"#, envelope(format!("r{turn}"), format!("t{turn}")), text(result_words).replace(" main ", "\\n") + if secret_words && turn.is_multiple_of(64) { &dot_env } else { "" }));
        for line in lines {
            out.write_all(line.as_bytes())?;
            out.write_all(b"\n")?;
            written += line.len() as u64 + 1;
        }
        turn += 1;
    }
    out.flush()
}
