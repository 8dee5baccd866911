//! Each parser counts what it does not understand (an unknown entry type, a known entry without
//! the fields it needs, a content block of an unknown kind) and nothing it skips on purpose.
//! Kept apart from the parsers' own tests: one place shows every harness's side of it.

use serde_json::json;

use crate::lines::LineOutcome;
use crate::test_support::{ctx, harness};

/// (records, unknown) of one line of `name`.
fn line(name: &str, value: serde_json::Value) -> (usize, u32) {
    let text = value.to_string();
    let outcome = super::parse_line(&ctx(harness(name)), 0, text.as_bytes());
    let (records, unknown) = outcome.into_parts().expect("not malformed");
    (records.len(), unknown)
}

#[test]
fn claude_counts_unknown_types_blocks_and_missing_messages() {
    assert_eq!(
        line("claude", json!({"type": "summary", "summary": "s"})),
        (0, 0)
    );
    assert_eq!(line("claude", json!({"type": "api-request-shape"})), (0, 0));
    assert_eq!(line("claude", json!({"type": "hologram"})), (0, 1));
    assert_eq!(line("claude", json!({"uuid": "u"})), (0, 1));
    assert_eq!(
        line("claude", json!({"type": "user", "uuid": "u", "mesage": {}})),
        (0, 1)
    );
    let assistant = json!({"type": "assistant", "uuid": "a", "message": {"content": [
        {"type": "text", "text": "hi"}, {"type": "hologram"}]}});
    // The unknown block is also shown as a notice of its own.
    assert_eq!(line("claude", assistant), (2, 1));
}

#[test]
fn codex_counts_unknown_lines_items_events_and_content() {
    let meta = json!({"type": "turn_context", "payload": {}});
    assert_eq!(line("codex", meta), (0, 0));
    assert_eq!(
        line(
            "codex",
            json!({"type": "event_msg", "payload": {"type": "token_count"}})
        ),
        (0, 0)
    );
    assert_eq!(
        line(
            "codex",
            json!({"type": "event_msg", "payload": {"type": "brand_new"}})
        ),
        (0, 1)
    );
    assert_eq!(
        line("codex", json!({"type": "brand_new", "payload": {}})),
        (0, 1)
    );
    assert_eq!(
        line(
            "codex",
            json!({"type": "response_item", "payload": {"type": "ghost_snapshot"}})
        ),
        (0, 0)
    );
    assert_eq!(
        line(
            "codex",
            json!({"type": "response_item", "payload": {"type": "hologram"}})
        ),
        (0, 1)
    );
    assert_eq!(
        line("codex", json!({"type": "response_item", "body": {}})),
        (0, 1)
    );
    let message = json!({"type": "response_item", "payload": {"type": "message", "role": "assistant",
        "content": [{"type": "output_text", "text": "hi"}, {"type": "hologram"}]}});
    assert_eq!(line("codex", message), (1, 1));
    // The legacy header has no type and no payload: metadata.
    assert_eq!(
        line(
            "codex",
            json!({"id": "x", "timestamp": "t", "instructions": ""})
        ),
        (0, 0)
    );
}

#[test]
fn pi_counts_unknown_types_roles_blocks_and_missing_messages() {
    assert_eq!(
        line("pi", json!({"type": "model_change", "id": "m"})),
        (0, 0)
    );
    assert_eq!(line("pi", json!({"type": "hologram", "id": "h"})), (0, 1));
    assert_eq!(
        line("pi", json!({"type": "message", "id": "m", "msg": {}})),
        (0, 1)
    );
    assert_eq!(
        line(
            "pi",
            json!({"type": "message", "id": "m", "message": {"role": "oracle"}})
        ),
        (0, 1)
    );
    let assistant = json!({"type": "message", "id": "m", "message": {"role": "assistant",
        "content": [{"type": "text", "text": "hi"}, {"type": "hologram"}]}});
    assert_eq!(line("pi", assistant), (1, 1));
}

#[test]
fn grok_counts_unknown_types_blocks_and_missing_content() {
    assert_eq!(
        line("grok", json!({"type": "system", "content": "prompt"})),
        (0, 0)
    );
    assert_eq!(line("grok", json!({"type": "hologram"})), (0, 1));
    assert_eq!(
        line("grok", json!({"type": "user", "contents": "hi"})),
        (0, 1)
    );
    assert_eq!(
        line("grok", json!({"type": "assistant", "text": "hi"})),
        (0, 1)
    );
    let user =
        json!({"type": "user", "content": [{"type": "text", "text": "hi"}, {"type": "hologram"}]});
    assert_eq!(line("grok", user), (1, 1));
}

#[test]
fn gemini_counts_unknown_types_parts_and_missing_content() {
    assert_eq!(
        line("gemini", json!({"sessionId": "s", "projectHash": "h"})),
        (0, 0)
    );
    assert_eq!(
        line("gemini", json!({"$set": {"lastUpdated": "t"}})),
        (0, 0)
    );
    assert_eq!(line("gemini", json!({"kind": "?"})), (0, 1));
    assert_eq!(
        line("gemini", json!({"id": "m", "type": "hologram"})),
        (0, 1)
    );
    assert_eq!(
        line("gemini", json!({"id": "m", "type": "user", "parts": "hi"})),
        (0, 1)
    );
    let user = json!({"id": "m", "type": "user", "content": [{"text": "hi"}, {"hologram": {}}]});
    assert_eq!(line("gemini", user), (1, 1));
    // A legacy document keeps where each stands among its records.
    let doc = json!({"sessionId": "s", "messages": [
        {"id": "a", "type": "user", "content": "one"},
        {"id": "b", "type": "hologram"},
        {"id": "c", "type": "user", "content": "two"}]});
    let rows = super::parse_document(
        &ctx(harness("gemini")),
        doc.to_string().as_bytes(),
        None,
        None,
        None,
    )
    .unwrap();
    assert_eq!((rows.records.len(), rows.unknown.clone()), (2, vec![1]));
    assert_eq!((rows.unknown_in(0, 1), rows.unknown_in(1, 2)), (0, 1));
}

#[test]
fn opencode_counts_unknown_roles_and_parts() {
    use super::message_parts::{MessageRow, PartRow, records};
    let message = |id: &str, data: serde_json::Value| MessageRow {
        id: id.into(),
        time_created: 1,
        data: data.to_string(),
    };
    let part = |id: &str, message_id: &str, data: serde_json::Value| PartRow {
        id: id.into(),
        message_id: message_id.into(),
        time_created: 1,
        data: data.to_string(),
    };
    let rows = records(
        &ctx(harness("opencode")),
        &[
            message("m1", json!({"role": "user"})),
            message("m2", json!({"role": "oracle"})),
            message("m3", json!({"rolle": "user"})),
        ],
        &[
            part("p1", "m1", json!({"type": "text", "text": "hi"})),
            part("p2", "m1", json!({"type": "step-start"})),
            part("p3", "m1", json!({"type": "hologram"})),
        ],
    );
    assert_eq!((rows.records.len(), rows.unknown.len()), (1, 3));
}

#[test]
fn grok_cli_counts_unknown_parts_roles_and_missing_content() {
    use super::grokcli::{MessageRow, records};
    let row = |seq: i64, role: &str, json: serde_json::Value| MessageRow {
        seq,
        role: role.into(),
        message_json: json.to_string(),
        created_at: String::new(),
    };
    let rows = records(
        &ctx(harness("grok-cli")),
        &[
            row(0, "user", json!({"role": "user", "content": "hi"})),
            row(
                1,
                "assistant",
                json!({"role": "assistant", "content": [
                {"type": "reasoning", "text": "hm"}, {"type": "hologram"}]}),
            ),
            row(2, "user", json!({"role": "user", "contents": "hi"})),
        ],
        &[],
    );
    assert_eq!((rows.records.len(), rows.unknown.len()), (1, 2));
}

#[test]
fn a_terminal_recording_counts_unknown_event_codes() {
    let cast = "{\"version\": 3, \"term\": {\"cols\": 20, \"rows\": 2}}\n[0.1, \"o\", \"a\\r\\n\"]\n[0.1, \"m\", \"mark\"]\n[0.1, \"z\", \"?\"]\n";
    let rows = super::parse_document(&ctx(harness("terminal")), cast.as_bytes(), None, None, None)
        .unwrap();
    assert_eq!(rows.unknown.len(), 1);
}

#[test]
fn an_outcome_without_unknowns_is_plain_records() {
    assert_eq!(
        LineOutcome::records(Vec::new(), 0),
        LineOutcome::Records(Vec::new())
    );
    assert_eq!(
        LineOutcome::records(Vec::new(), 2).into_parts(),
        Ok((Vec::new(), 2))
    );
}

#[test]
fn copilot_counts_unknown_events_requests_and_missing_data() {
    for skipped in [
        "session.start",
        "assistant.turn_end",
        "tool.execution_start",
    ] {
        assert_eq!(
            line("copilot", json!({"type": skipped, "data": {}})),
            (0, 0)
        );
    }
    assert_eq!(
        line("copilot", json!({"type": "session.hologram", "data": {}})),
        (0, 1)
    );
    assert_eq!(line("copilot", json!({"id": "e", "data": {}})), (0, 1));
    assert_eq!(
        line(
            "copilot",
            json!({"type": "user.message", "payload": {"content": "hi"}})
        ),
        (0, 1)
    );
    assert_eq!(
        line(
            "copilot",
            json!({"type": "user.message", "data": {"text": "hi"}})
        ),
        (0, 1)
    );
    let assistant = json!({"type": "assistant.message", "id": "a", "data": {"content": "hi",
        "toolRequests": [{"type": "function", "toolCallId": "c", "name": "bash"},
                         {"type": "hologram", "toolCallId": "d", "name": "x"}]}});
    assert_eq!(line("copilot", assistant), (2, 1));
    let head =
        b"{\"type\":\"session.start\",\"data\":{\"version\":1,\"copilotVersion\":\"1.0.102\"}}\n";
    assert_eq!(
        super::writer_version(harness("copilot"), head).as_deref(),
        Some("1.0.102")
    );
}

#[test]
fn droid_counts_unknown_types_blocks_and_missing_messages() {
    assert_eq!(
        line("droid", json!({"type": "session_start", "id": "s"})),
        (0, 0)
    );
    let context = json!({"type": "message", "id": "context-1", "message": {"role": "user",
        "content": [{"type": "hologram"}]}});
    assert_eq!(line("droid", context), (0, 0));
    assert_eq!(
        line("droid", json!({"type": "hologram", "id": "h"})),
        (0, 1)
    );
    assert_eq!(
        line("droid", json!({"type": "message", "id": "m", "msg": {}})),
        (0, 1)
    );
    let assistant = json!({"type": "message", "id": "a", "message": {"role": "assistant",
        "content": [{"type": "text", "text": "hi"}, {"type": "hologram"}]}});
    assert_eq!(line("droid", assistant), (1, 1));
}

#[test]
fn qwen_counts_unknown_types_parts_and_missing_parts() {
    assert_eq!(
        line(
            "qwen",
            json!({"type": "system", "uuid": "s", "subtype": "x"})
        ),
        (0, 0)
    );
    assert_eq!(
        line("qwen", json!({"type": "hologram", "uuid": "h"})),
        (0, 1)
    );
    assert_eq!(
        line(
            "qwen",
            json!({"type": "user", "uuid": "u", "msg": {"parts": []}})
        ),
        (0, 1)
    );
    let assistant = json!({"type": "assistant", "uuid": "a", "message": {"role": "model",
        "parts": [{"text": "hi"}, {"hologram": {}}]}});
    assert_eq!(line("qwen", assistant), (1, 1));
    let head = b"{\"uuid\":\"u\",\"type\":\"user\",\"version\":\"0.24.4\",\"message\":{}}\n";
    assert_eq!(
        super::writer_version(harness("qwen"), head).as_deref(),
        Some("0.24.4")
    );
}

/// (records, where each thing not understood stands) of a whole document of `name`.
fn document(name: &str, doc: serde_json::Value) -> (usize, Vec<usize>) {
    let rows = super::parse_document(
        &ctx(harness(name)),
        doc.to_string().as_bytes(),
        None,
        None,
        None,
    )
    .unwrap();
    (rows.records.len(), rows.unknown)
}

#[test]
fn cline_counts_unknown_roles_blocks_and_missing_content() {
    let doc = json!({"version": 1, "messages": [
        {"id": "a", "role": "user", "content": "one"},
        {"id": "b", "role": "hologram", "content": "?"},
        {"id": "c", "role": "user", "contents": "renamed"},
        {"id": "d", "role": "assistant", "content": [
            {"type": "text", "text": "two"}, {"type": "hologram"}]}]});
    assert_eq!(document("cline", doc), (2, vec![1, 1, 2]));
    let head = br#"{"version": 1, "origin": {"source": "cli", "version": "3.0.65"}, "messages": ["#;
    assert_eq!(
        super::writer_version(harness("cline"), head).as_deref(),
        Some("3.0.65")
    );
}

#[test]
fn continue_counts_unknown_roles_parts_and_missing_messages() {
    let doc = json!({"sessionId": "s", "history": [
        {"message": {"role": "system", "content": "You are"}},
        {"message": {"role": "user", "content": "one"}},
        {"message": {"role": "hologram", "content": "?"}},
        {"mesage": {"role": "user", "content": "renamed"}},
        {"message": {"role": "assistant", "content": [
            {"type": "text", "text": "two"}, {"type": "hologram"}]}}]});
    assert_eq!(document("continue", doc), (2, vec![1, 1, 1]));
}
