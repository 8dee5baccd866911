//! Property tests over hostile input for what parses bytes it does not control: every
//! harness's line parser, the document parser and the cursor decoder must answer every input
//! with records, a notice or an error — never a panic; a terminal recording's replay, fed
//! random escape sequences, must also stay within its work and output bounds. `cargo test`
//! runs 256 cases each; `scripts/fuzz` runs many more (`PROPTEST_CASES`).

use proptest::prelude::*;

use crate::cursor::Cursor;
use crate::harness;
use crate::lines::LineOutcome;
use crate::test_support::ctx;

/// JSON shaped like transcripts: objects whose keys come from the harnesses' vocabularies,
/// nested a few levels, with strings, numbers, booleans, nulls and arrays at the leaves.
fn transcript_json() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    const KEYS: &[&str] = &[
        "type",
        "message",
        "content",
        "role",
        "text",
        "payload",
        "uuid",
        "id",
        "parentId",
        "timestamp",
        "tool_use_id",
        "name",
        "input",
        "output",
        "call_id",
        "arguments",
        "is_error",
        "thinking",
        "parts",
        "functionCall",
        "functionResponse",
        "toolCalls",
        "result",
        "status",
        "session",
        "cwd",
        "sessionId",
        "$set",
        "$rewindTo",
        "messages",
        "isSidechain",
        "agentId",
        "attachment",
        "data",
        "summary",
        "error",
        "usage",
        "model",
        "entries",
        "tool_calls",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,40}".prop_map(Value::String),
        prop::sample::select(KEYS).prop_map(|k| Value::String(k.to_string())),
        prop::sample::select(
            &[
                "user",
                "assistant",
                "tool_use",
                "tool_result",
                "text",
                "response_item",
                "function_call",
                "function_call_output",
                "message",
                "session",
                "gemini",
                "info",
                "reasoning",
                "event_msg",
                "session_meta",
                "compacted"
            ][..]
        )
        .prop_map(|k| Value::String(k.to_string())),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..8).prop_map(|pairs| {
                Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

/// What every outcome must satisfy: records have ids and belong to the harness they were read
/// as; a malformed line says why.
fn check_outcome(harness: clankie_model::Harness, outcome: &LineOutcome) {
    match outcome {
        LineOutcome::Records(records) | LineOutcome::Unread(records, _) => {
            for record in records {
                assert!(!record.id.is_empty(), "{record:?}");
                assert_eq!(record.harness, harness);
            }
        }
        LineOutcome::Malformed(reason) => assert!(!reason.is_empty()),
    }
}

/// A piece of terminal output: text, a line end, or a control sequence with counts anywhere
/// from 0 to 65535, of the kinds that move, repeat, insert, scroll, clear and switch screens.
fn terminal_piece() -> impl Strategy<Value = String> {
    const FINALS: &[&str] = &[
        "b", "@", "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "P", "S", "T",
        "X", "Z", "d", "e", "f", "r", "m", "h", "l", "?1049h", "?1049l", "?47h", "?7l", "4h", "4l",
    ];
    let count = prop_oneof![
        0u32..4,
        0u32..100,
        Just(999u32),
        Just(65535u32),
        0u32..70000
    ];
    prop_oneof![
        "[a-z ]{0,20}",
        Just("\r\n".to_string()),
        Just("\n".to_string()),
        Just("\r".to_string()),
        (
            prop::collection::vec(count, 0..3),
            prop::sample::select(FINALS)
        )
            .prop_map(|(counts, last)| {
                let counts: Vec<String> = counts.iter().map(u32::to_string).collect();
                match last.strip_prefix('?') {
                    Some(mode) => format!("\x1b[?{}{mode}", counts.join(";")),
                    None => format!("\x1b[{}{last}", counts.join(";")),
                }
            }),
        prop::sample::select(
            &[
                "\x1bc", "\x1b7", "\x1b8", "\x1bM", "\x1bD", "\x1bE", "\x1b#8"
            ][..]
        )
        .prop_map(str::to_string),
        // Anything at all: controls, a lone ESC, a cut sequence.
        prop::collection::vec(any::<char>(), 0..4).prop_map(String::from_iter),
    ]
}

/// A recording of `pieces` in one of the three forms: a raw log, a typescript with a header of
/// some size, an asciinema cast with events and resizes.
fn recording(pieces: &[String], form: u8, cols: u16, rows: u16) -> Vec<u8> {
    match form % 3 {
        0 => pieces.concat().into_bytes(),
        1 => {
            let mut out = format!(
                "Script started on 2026-12-01 11:00:00+00:00 [COMMAND=\"x\" TERM=\"xterm\" COLUMNS=\"{cols}\" LINES=\"{rows}\"]\n"
            );
            out.push_str(&pieces.concat());
            out.into_bytes()
        }
        _ => {
            let mut out = format!("{{\"version\": 2, \"width\": {cols}, \"height\": {rows}}}\n");
            for (i, piece) in pieces.iter().enumerate() {
                let event = if i % 7 == 6 {
                    serde_json::json!([i, "r", format!("{}x{}", rows, cols)])
                } else {
                    serde_json::json!([i, "o", piece])
                };
                out.push_str(&event.to_string());
                out.push('\n');
            }
            out.into_bytes()
        }
    }
}

/// `--all` over bytes in memory, as a host would serve them.
fn read_all(file: &[u8]) -> crate::page::Page {
    use crate::page::{Mode, PageRequest};
    let harness = harness::by_name("claude").unwrap();
    let request = PageRequest {
        mode: Mode::All,
        limit: 10,
        strict: false,
        redact: false,
    };
    let mut plan = crate::plan::ReadPlan::new(ctx(harness), request, file.len() as u64);
    while let Some(ranges) = plan.next_read() {
        let size = file.len() as u64;
        let chunks = ranges
            .iter()
            .map(|r| file[r.start.min(size) as usize..r.end().min(size) as usize].to_vec())
            .collect();
        plan.feed(chunks, size).unwrap();
    }
    plan.finish()
}

proptest! {
    /// Arbitrary bytes, as a torn or hostile line.
    #[test]
    fn line_parsers_take_any_bytes(line in prop::collection::vec(any::<u8>(), 0..400)) {
        for harness in harness::all() {
            check_outcome(harness, &harness::parse_line(&ctx(harness), 7, &line));
        }
    }

    /// Transcript-shaped JSON with the wrong types, missing fields and odd nesting.
    #[test]
    fn line_parsers_take_any_transcript_shaped_json(value in transcript_json()) {
        let line = serde_json::to_vec(&value).unwrap();
        for harness in harness::all() {
            check_outcome(harness, &harness::parse_line(&ctx(harness), 7, &line));
        }
    }

    /// Whole documents (Gemini's legacy sessions), valid JSON or not.
    #[test]
    fn document_parsers_take_any_document(value in transcript_json(), junk in any::<bool>()) {
        let mut bytes = serde_json::to_vec(&value).unwrap();
        if junk {
            bytes.truncate(bytes.len() / 2);
        }
        for harness in harness::all() {
            let _ = harness::format(harness).parse_document(&ctx(harness), &bytes);
        }
    }

    /// A terminal recording of random escape sequences: the replay ends within its bounds
    /// (the work counted, the records' text and their number, each in proportion to the
    /// recording's size), and a tail page's newest records are the whole replay's last.
    #[test]
    fn terminal_replays_stay_within_their_bounds(
        pieces in prop::collection::vec(terminal_piece(), 0..60),
        form in any::<u8>(),
        // The largest screens are the costly cases: drawn now and then, not every time.
        cols in prop_oneof![12 => 1u16..200, 1 => Just(1000u16), 1 => Just(65535u16)],
        rows in prop_oneof![12 => 1u16..60, 1 => Just(1000u16)],
        newest in 1usize..20,
    ) {
        use crate::harness::terminal::{bounds, replay_measured};
        use clankie_model::{RecordBody, TextKind};
        let bytes = recording(&pieces, form, cols, rows);
        let harness = harness::by_name("terminal").unwrap();
        let ctx = ctx(harness);
        let (rows_read, spent) = replay_measured(&ctx, &bytes, None, None);
        let len = bytes.len() as u64;
        prop_assert!(spent.consumed <= len);
        prop_assert!(spent.work <= bounds::WORK_PER_BYTE * len + bounds::WORK_ALLOWANCE);
        prop_assert!(spent.work <= bounds::MAX_WORK);
        let lines: Vec<&str> = rows_read
            .records
            .iter()
            .filter_map(|r| match &r.body {
                RecordBody::Text { kind: TextKind::Terminal { .. }, text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let notices: u64 = rows_read
            .malformed
            .iter()
            .filter(|(key, _)| !key.starts_with("bound@"))
            .map(|(key, reason)| (key.len() + reason.len()) as u64 + bounds::LINE_COST)
            .sum();
        let output = lines.iter().map(|t| t.len() as u64 + bounds::LINE_COST).sum::<u64>() + notices;
        prop_assert_eq!(output, spent.output);
        prop_assert!(output <= (bounds::OUTPUT_PER_BYTE * len).min(bounds::MAX_OUTPUT));
        prop_assert!(lines.len() as u64 <= bounds::MAX_LINES);
        prop_assert!(rows_read.screen.len() <= 1000);
        let stopped = rows_read.records.last().is_some_and(|r| r.id.starts_with("bound@"));
        prop_assert_eq!(stopped, rows_read.malformed.iter().any(|(k, _)| k.starts_with("bound@")));
        // A tail page keeps the newest records only, the same ones.
        let (tail, _) = replay_measured(&ctx, &bytes, None, Some(newest));
        let n = rows_read.records.len();
        prop_assert_eq!(&tail.records[..], &rows_read.records[n.saturating_sub(newest)..]);
        prop_assert_eq!(tail.older_omitted, n > newest);
        prop_assert_eq!(tail.screen, rows_read.screen);
    }

    /// Any text a user pastes as `--since`: decoded or refused.
    #[test]
    fn cursors_decode_or_refuse_any_text(text in ".{0,1100}") {
        let _ = Cursor::decode(&text);
    }

    /// A real cursor with characters changed, cut or added: decoded only to a cursor that
    /// encodes back to the same text, else refused.
    #[test]
    fn tampered_cursors_are_refused_or_exact(
        cut in 0usize..200,
        at in 0usize..200,
        with in prop::sample::select(&['A', '_', '-', '0', 'z', '=', '.', ' '][..]),
    ) {
        let line = br#"{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}
{"type":"user","uuid":"u2","message":{"role":"user","content":"there"}}
"#;
        let page = read_all(line);
        let text = page.cursor.encode();
        let mut chars: Vec<char> = text.chars().collect();
        if !chars.is_empty() {
            let i = at % chars.len();
            chars[i] = with;
        }
        chars.truncate(chars.len().saturating_sub(cut % 4));
        let tampered: String = chars.into_iter().collect();
        if let Ok(cursor) = Cursor::decode(&tampered) {
            prop_assert_eq!(cursor.encode(), tampered);
        }
    }
}
