//! Unit tests of the Claude Code parser: entries, blocks, subagents, slash commands, drift.

use super::*;
use clankie_model::RecordKind;

fn ctx() -> SourceCtx {
    crate::test_support::ctx(crate::test_support::harness("claude"))
}

fn records(line: &str) -> Vec<Record> {
    match parse_line(&ctx(), 0, line.as_bytes()) {
        LineOutcome::Records(r) | LineOutcome::Unread(r, _) => r,
        LineOutcome::Malformed(e) => panic!("malformed: {e}"),
    }
}

/// The texts that hold most of a transcript's bytes keep their JSON token where its
/// escaping is the canonical one, and are unescaped where it is not; either way the text is
/// the same.
#[test]
fn texts_keep_their_token_where_the_escaping_is_canonical() {
    let texts = |line: &str| -> Vec<(String, Option<String>)> {
        records(line)
            .into_iter()
            .filter_map(|r| match r.body {
                RecordBody::Text { text, .. } | RecordBody::ToolResult { output: text, .. } => {
                    Some((text.to_string(), text.json_token().map(str::to_string)))
                }
                RecordBody::ToolCall { .. } => None,
            })
            .collect()
    };
    let assistant = r#"{"type":"assistant","uuid":"a","message":{"role":"assistant","content":[{"type":"thinking","thinking":"why \"x\"?\n"},{"type":"text","text":"caf\u00e9 a\/b"},{"type":"text","text":"line\tone\u001b"}]}}"#;
    assert_eq!(
        texts(assistant),
        [
            ("why \"x\"?\n".into(), Some(r#""why \"x\"?\n""#.into())),
            ("café a/b".into(), None),
            (
                "line\tone\u{1b}".into(),
                Some(r#""line\tone\u001b""#.into())
            ),
        ]
    );
    let result = r#"{"type":"user","uuid":"u","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok\n"},{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"from blocks"}]},{"type":"text","text":"a prompt"},{"type":"tool_result","tool_use_id":"t3","content":null}]}}"#;
    assert_eq!(
        texts(result),
        [
            ("ok\n".into(), Some(r#""ok\n""#.into())),
            ("from blocks".into(), None),
            ("a prompt".into(), Some(r#""a prompt""#.into())),
            (String::new(), None),
        ]
    );
    // Blank text is still no record, found without unescaping where the token says so.
    let blank = r#"{"type":"assistant","uuid":"b","message":{"role":"assistant","content":[{"type":"text","text":"\n\n"},{"type":"text","text":" \u2028 "},{"type":"text","text":" x"}]}}"#;
    assert_eq!(
        texts(blank),
        [(" x".to_string(), Some(r#"" x""#.to_string()))]
    );
}

#[test]
fn usage_reads_as_a_json_value_would() {
    // What `usage_of` read before it had a type of its own: a `Value`, then `as_u64`.
    fn via_value(raw: &str) -> Option<Box<clankie_model::Usage>> {
        use crate::records::count;
        let value: Value = serde_json::from_str(raw).ok()?;
        clankie_model::Usage {
            input: count(&value, "input_tokens"),
            output: count(&value, "output_tokens"),
            cache_read: count(&value, "cache_read_input_tokens"),
            cache_write: count(&value, "cache_creation_input_tokens"),
            reasoning: None,
        }
        .nonempty()
    }
    for raw in [
        r#"{"input_tokens":3,"cache_creation_input_tokens":13835,"cache_read_input_tokens":11515,"output_tokens":13,"service_tier":"standard"}"#,
        r#"{"input_tokens":3,"input_tokens":5}"#,
        r#"{"input_tokens":-1,"output_tokens":2.0,"cache_read_input_tokens":"7","cache_creation_input_tokens":null}"#,
        r#"{"input_tokens":-0,"output_tokens":1e3,"cache_read_input_tokens":18446744073709551615}"#,
        r#"{"input_tokens":18446744073709551616,"output_tokens":[1],"cache_read_input_tokens":{"a":1}}"#,
        r#"{"server_tool_use":{"web_search_requests":0},"\u0069nput_tokens":4,"output_tokens":true}"#,
        r#"{}"#,
        r#"[1,2]"#,
        r#""input_tokens""#,
        r#"42"#,
        r#"null"#,
    ] {
        let parsed = RawValue::from_string(raw.to_string()).unwrap();
        assert_eq!(usage_of(&parsed), via_value(raw), "{raw}");
    }
}

#[test]
fn an_assistant_line_carries_its_model_and_usage_on_its_first_record() {
    let line = r#"{"type":"assistant","uuid":"a","timestamp":"t","message":{"model":"claude-opus-4-5","role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"tool_use","id":"t1","name":"Bash","input":{}}],"usage":{"input_tokens":3,"cache_creation_input_tokens":13835,"cache_read_input_tokens":11515,"output_tokens":13,"service_tier":"standard"}}}"#;
    let got = records(line);
    assert_eq!(got.len(), 2);
    assert!(
        got.iter()
            .all(|r| r.model.as_deref() == Some("claude-opus-4-5"))
    );
    let usage = clankie_model::Usage {
        input: Some(3),
        output: Some(13),
        cache_read: Some(11515),
        cache_write: Some(13835),
        reasoning: None,
    };
    assert_eq!(got[0].usage.as_deref(), Some(&usage));
    assert_eq!(got[1].usage, None);
    // A usage of another shape costs the usage, not the line; synthetic text has no model.
    let odd = r#"{"type":"assistant","uuid":"b","message":{"model":"<synthetic>","content":[{"type":"text","text":"API Error"}],"usage":"n/a"}}"#;
    let got = records(odd);
    assert_eq!(got.len(), 1);
    assert_eq!(
        (got[0].model.as_deref(), got[0].usage.as_deref()),
        (None, None)
    );
    // User records carry neither.
    let user = r#"{"type":"user","uuid":"u","message":{"role":"user","content":"hi","model":"x"}}"#;
    assert_eq!(records(user)[0].model, None);
}

#[test]
fn monitor_event_is_one_notice() {
    let enqueue = r#"{"type":"queue-operation","operation":"enqueue","timestamp":"2026-11-02T10:00:00.000Z","sessionId":"s","content":"<task-notification><summary>Monitor event: &quot;tail log&quot;</summary><event>line 1 &amp; more</event></task-notification>"}"#;
    let attachment = r#"{"type":"attachment","parentUuid":"p","uuid":"u1","timestamp":"2026-11-02T10:00:00.001Z","attachment":{"type":"queued_command","prompt":"<task-notification><summary>Monitor event: &quot;tail log&quot;</summary><event>line 1 &amp; more</event></task-notification>","commandMode":"task-notification","source_uuid":"x","delivery_id":"d"},"sessionId":"s"}"#;
    let remove = r#"{"type":"queue-operation","operation":"remove","timestamp":"2026-11-02T10:00:00.002Z","sessionId":"s","commandUuid":"x","deliveryId":"d","reason":"absorbed_mid_turn"}"#;
    assert!(records(enqueue).is_empty());
    assert!(records(remove).is_empty());
    let got = records(attachment);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].kind(), RecordKind::Notice);
    assert_eq!(got[0].id, "u1#0");
    assert_eq!(
        got[0].body,
        RecordBody::Text {
            kind: TextKind::Notice,
            text: "Monitor event: \"tail log\": line 1 & more".into()
        }
    );
}

#[test]
fn a_background_task_notification_is_a_notice() {
    // 2.1.x: a finished `run_in_background` command comes back as a user line of its own,
    // as a string or as a text block.
    let body = r#"<task-notification>\n<task-id>b7x1k2</task-id>\n<output-file>/tmp/claude-0/tasks/b7x1k2.output</output-file>\n<status>completed</status>\n<summary>Background command \"sleep 1; echo done\" completed (exit code 0)</summary>\n</task-notification>\nRead the output file to retrieve the result: /tmp/claude-0/tasks/b7x1k2.output"#;
    let as_string = format!(
        r#"{{"parentUuid":"p","isSidechain":false,"type":"user","message":{{"role":"user","content":"{body}"}},"uuid":"n1","timestamp":"2026-12-01T10:00:00.000Z","sessionId":"s"}}"#
    );
    let as_block = format!(
        r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"text","text":"{body}"}}]}},"uuid":"n2","sessionId":"s"}}"#
    );
    for line in [as_string, as_block] {
        let got = records(&line);
        assert_eq!(got.len(), 1, "{line}");
        assert_eq!(
            got[0].body,
            RecordBody::Text {
                kind: TextKind::Notice,
                text: "Background command \"sleep 1; echo done\" completed (exit code 0)".into()
            }
        );
    }
    // Without a summary, the notification's words.
    let bare = r#"{"type":"user","uuid":"n3","message":{"role":"user","content":"<task-notification><task-id>t1</task-id><status>failed</status></task-notification>"}}"#;
    assert_eq!(
        records(bare)[0].body,
        RecordBody::Text {
            kind: TextKind::Notice,
            text: "task notification: t1 failed".into()
        }
    );
    // A prompt that only mentions the tag is what the user typed.
    let typed = r#"{"type":"user","uuid":"n4","message":{"role":"user","content":"what is a <task-notification>?"}}"#;
    assert_eq!(records(typed)[0].kind(), RecordKind::User);
}

fn file(rel: &str) -> FileEntry {
    FileEntry {
        harness: crate::test_support::harness("claude"),
        root: b"/h/.claude"[..].into(),
        rel: rel.as_bytes().to_vec(),
        size: 1,
        mtime: 0,
        inode: None,
        ctime: None,
    }
}

#[test]
fn a_root_subagent_file_is_named_by_its_parent() {
    let old = file("projects/-w/agent-5d2c1a9e.jsonl");
    assert!(Claude.named_inside(&old));
    assert_eq!(Claude.session(&old), None);
    // 2.0.x's first line, cut where the listing's read ends (inside the prompt).
    let head = br#"{"parentUuid":null,"isSidechain":true,"userType":"external","cwd":"/w","sessionId":"0b6c1f3e-8a2d-4c55-9e61-2f0d3b7a9c11","version":"2.0.14","gitBranch":"","agentId":"5d2c1a9e","type":"user","message":{"role":"user","content":"Search the code for"#;
    let named = Claude.session_from_head(&old, head).unwrap();
    assert_eq!(
        named.id,
        "0b6c1f3e-8a2d-4c55-9e61-2f0d3b7a9c11+agent-5d2c1a9e"
    );
    assert_eq!(named.agent.as_deref(), Some("5d2c1a9e"));
    // No parent to be found: listed under its own name.
    for head in [
        &b""[..],
        b"{\"type\":\"summary\"}\n",
        b"\xff\xfe",
        b"{\"sessionId\":\"../x\"}",
    ] {
        let named = Claude.session_from_head(&old, head).unwrap();
        assert_eq!(named.id, "agent-5d2c1a9e");
    }
    // Other files are named by their names.
    for rel in [
        "projects/-w/0b6c1f3e.jsonl",
        "projects/-w/0b6c1f3e/subagents/agent-a1.jsonl",
        "projects/-w/agent-.jsonl",
    ] {
        assert!(!Claude.named_inside(&file(rel)), "{rel}");
    }
}

#[test]
fn a_subagent_resumes_its_parent() {
    assert_eq!(
        Claude.resume_command("0b6c1f3e+agent-5d2c1a9e", "/p"),
        "claude --resume 0b6c1f3e"
    );
    assert_eq!(
        Claude.resume_command("0b6c1f3e", "/p"),
        "claude --resume 0b6c1f3e"
    );
}

#[test]
fn tool_call_and_result() {
    let call = r#"{"type":"assistant","uuid":"a","timestamp":"t","message":{"id":"m","role":"assistant","model":"claude","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]}}"#;
    let result = r#"{"type":"user","uuid":"b","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"a\nb"}],"is_error":true}]}}"#;
    let c = records(call);
    assert_eq!(c[0].id, "a#0");
    assert!(
        matches!(&c[0].body, RecordBody::ToolCall { call_id, name, .. } if call_id == "toolu_1" && name == "Bash")
    );
    let r = records(result);
    assert_eq!(
        r[0].body,
        RecordBody::ToolResult {
            call_id: "toolu_1".into(),
            output: "a\nb".into(),
            is_error: true
        }
    );
}

#[test]
fn wrappers_and_metadata() {
    let interrupt = r#"{"type":"user","uuid":"i","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]}}"#;
    assert_eq!(records(interrupt)[0].kind(), RecordKind::Notice);
    let meta = r#"{"type":"user","uuid":"m","isMeta":true,"message":{"role":"user","content":"<local-command-caveat>x</local-command-caveat>"}}"#;
    assert!(records(meta).is_empty());
    let progress = r#"{"type":"progress","uuid":"p","data":{"type":"hook_progress"}}"#;
    assert!(records(progress).is_empty());
    let unknown = r#"{"type":"brand-new-type","x":1}"#;
    assert!(records(unknown).is_empty());
    let blank =
        r#"{"type":"assistant","uuid":"a","message":{"content":[{"type":"text","text":"\n\n"}]}}"#;
    assert!(records(blank).is_empty()); // A wrapper starts with its tag and becomes a notice; a prompt that only mentions one
    // is what the user typed.
    let command = r#"{"type":"user","uuid":"c","message":{"role":"user","content":"<command-message>init</command-message>\n<command-name>/init</command-name>"}}"#;
    let command = records(command);
    assert_eq!(command[0].kind(), RecordKind::Notice);
    assert!(
        matches!(&command[0].body, RecordBody::Text { text, .. } if text == "local command: /init")
    );
    // Typed with arguments, it is the user's request, named by its command.
    let with_args = r#"{"type":"user","uuid":"c","message":{"role":"user","content":"<command-message>review is running…</command-message>\n<command-name>/plugin:review</command-name>\n<command-args>the parser, please</command-args>"}}"#;
    let with_args = records(with_args);
    assert_eq!(with_args[0].kind(), RecordKind::User);
    assert!(
        matches!(&with_args[0].body, RecordBody::Text { text, .. } if text == "/plugin:review the parser, please"),
        "{with_args:?}"
    );
    let typed = r#"{"type":"user","uuid":"t","message":{"role":"user","content":"why does <command-name>/x</command-name> show up?"}}"#;
    let typed = records(typed);
    assert_eq!(typed[0].kind(), RecordKind::User);
    assert!(
        matches!(&typed[0].body, RecordBody::Text { text, .. } if text.starts_with("why does"))
    );
}

#[test]
fn torn_line_is_malformed_and_odd_shape_is_a_notice() {
    assert!(matches!(
        parse_line(&ctx(), 0, br#"{"type":"pr-link","prNu{"parentUuid":1}"#),
        LineOutcome::Malformed(_)
    ));
    let odd = records(r#"{"type":"user","uuid":5}"#);
    assert_eq!(odd[0].kind(), RecordKind::Notice);
    assert_eq!(odd[0].id, "@0");
}

#[test]
fn odd_content_reads_as_empty_not_as_a_failed_line() {
    // A block field of another type reads as empty; content that is no string or array
    // is no content; unknown block fields (a thinking signature) are skipped.
    let odd = records(
        r#"{"type":"assistant","uuid":"a","message":{"content":[{"type":"text","text":null},{"type":"thinking","thinking":"hm","signature":"c2ln"},{"type":"tool_use","id":7,"name":"Bash","input":{"command":"ls"}}]}}"#,
    );
    assert_eq!(odd.len(), 2, "{odd:?}");
    assert!(
        matches!(&odd[0].body, RecordBody::Text { kind: TextKind::Thinking, text } if text == "hm")
    );
    assert!(
        matches!(&odd[1].body, RecordBody::ToolCall { call_id, name, .. } if call_id.is_empty() && name == "Bash")
    );
    // A block that is no object is a notice of its own; the line's other blocks stay.
    let mixed = records(
        r#"{"type":"assistant","uuid":"a","message":{"content":["loose",{"type":"text","text":"kept"},[1],7]}}"#,
    );
    let texts: Vec<String> = mixed
        .iter()
        .map(|r| match &r.body {
            RecordBody::Text { kind, text } => format!("{kind:?}: {text}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        texts,
        [
            "Notice: unsupported assistant block ``",
            "Assistant: kept",
            "Notice: unsupported assistant block ``",
            "Notice: unsupported assistant block ``",
        ]
    );
    for content in ["null", "3", "{\"x\":[1]}", "true"] {
        let line = format!(r#"{{"type":"user","uuid":"u","message":{{"content":{content}}}}}"#);
        assert!(records(&line).is_empty(), "{content}");
    }
}
