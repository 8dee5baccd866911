//! Property tests over hostile input for what parses bytes it does not control: every
//! harness's line parser, the document parser and the cursor decoder must answer every input
//! with records, a notice or an error — never a panic. `cargo test` runs 256 cases each;
//! `scripts/fuzz` runs many more (`PROPTEST_CASES`).

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
