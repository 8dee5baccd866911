//! Every Claude fixture (real transcripts from public projects, see
//! tests/fixtures/SOURCES-claude-codex.md) reads with zero errors, with the record kinds and
//! counts its SOURCES entry implies. Tool counts are checked against an independent count of
//! the blocks in the file.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::support::{code, fixtures_home, ndjson, records, run, stderr};

const MAIN: &str = "ae4a77f8-aedd-4bc1-888f-c94edc91af04";

/// (session id, path under projects/, [user, assistant, tool_call, tool_result, notice]).
const EXPECTED: &[(&str, &str, [usize; 5])] = &[
    // /init wrapper → notice; the isMeta expansion is not a prompt; 12 tools, one is_error.
    (
        "1af7fc5e-8455-4414-9ccd-011d40f70b2a",
        "-fixtures/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
        [0, 3, 12, 12, 1],
    ),
    // three Task calls, inline sidechains, split assistant messages; the first prompt is a
    // slash command typed with arguments (a user record).
    (
        "5c0375b4-57a5-4f26-b12d-d022ee4e51b7",
        "-fixtures/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
        [3, 7, 21, 21, 0],
    ),
    // summary line (metadata), parallel Bash, a denied call, an interrupt notice.
    (
        "fed8ce56-bc79-401f-a83e-af084253362f",
        "-fixtures/fed8ce56-bc79-401f-a83e-af084253362f.jsonl",
        [2, 3, 7, 7, 1],
    ),
    // only a summary line: no record of its own, so one notice says the session gave none.
    (
        "ff71dbed-a4f2-4284-a4fc-fe2fb90de929",
        "-fixtures/ff71dbed-a4f2-4284-a4fc-fe2fb90de929.jsonl",
        [0, 0, 0, 0, 1],
    ),
    // thinking + text, two denied calls, interrupt, /model local command (2 notices).
    ("short", "-fixtures/short.jsonl", [1, 2, 2, 2, 3]),
    // queue-operation lines are metadata; /mcp as user wrapper and as local_command.
    ("tool_heavy", "-fixtures/tool_heavy.jsonl", [2, 2, 6, 6, 6]),
    // the Task call's parent side: agent_progress copies are skipped.
    (
        "ae4a77f8-aedd-4bc1-888f-c94edc91af04.excerpt-L71-L99-task-subagent",
        "-fixtures/ae4a77f8-aedd-4bc1-888f-c94edc91af04.excerpt-L71-L99-task-subagent.jsonl",
        [0, 0, 2, 1, 0],
    ),
    // /compact: boundary + summary + command output as notices; `/compact` typed with its
    // instructions is the user's.
    (
        "ae4a77f8-aedd-4bc1-888f-c94edc91af04.excerpt-L1470-L1495-compact",
        "-fixtures/ae4a77f8-aedd-4bc1-888f-c94edc91af04.excerpt-L1470-L1495-compact.jsonl",
        [2, 3, 1, 1, 3],
    ),
    (
        "ae4a77f8-aedd-4bc1-888f-c94edc91af04+agent-aac57f5",
        "-fixtures/ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-aac57f5.jsonl",
        [1, 3, 12, 12, 0],
    ),
    (
        "ae4a77f8-aedd-4bc1-888f-c94edc91af04+agent-acompact-946d2b",
        "-fixtures/ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-acompact-946d2b.jsonl",
        [1, 1, 0, 0, 0],
    ),
    // synthetic coverage file: unknown types and blocks tolerated.
    (
        "jz-stage0-small",
        "-synthetic/jz-stage0-small.jsonl",
        [4, 6, 3, 3, 5],
    ),
];

fn read_all(session: &str) -> Vec<Value> {
    let home = fixtures_home();
    let out = run(
        &home,
        &[
            "--root",
            &format!("claude={}", home.display()),
            "read",
            &format!("local:{session}"),
            "--all",
            "--json",
        ],
    );
    assert_eq!(code(&out), 0, "{session}: {}", stderr(&out));
    assert!(
        stderr(&out).is_empty(),
        "{session}: warnings: {}",
        stderr(&out)
    );
    ndjson(&out)
}

/// Tool blocks counted straight from the file, independently of the parser.
fn tool_blocks(path: &str) -> (usize, usize) {
    let text = std::fs::read_to_string(fixtures_home().join("projects").join(path)).unwrap();
    let (mut calls, mut results) = (0, 0);
    for line in text.lines() {
        let value: Value = serde_json::from_str(line).unwrap();
        if let Some(Value::Array(blocks)) = value.pointer("/message/content") {
            for block in blocks {
                match block["type"].as_str() {
                    Some("tool_use") => calls += 1,
                    Some("tool_result") => results += 1,
                    _ => {}
                }
            }
        }
    }
    (calls, results)
}

#[test]
fn every_fixture_reads_with_the_expected_kinds() {
    for (session, path, want) in EXPECTED {
        let lines = read_all(session);
        let records = records(&lines);
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for r in &records {
            *counts.entry(r["kind"].as_str().unwrap()).or_default() += 1;
            assert!(
                !r["id"].as_str().unwrap().starts_with('@'),
                "{session}: irregular record {r}"
            );
            assert_eq!(r["session"], *session);
            assert_eq!(r["harness"], "claude");
        }
        let got = ["user", "assistant", "tool_call", "tool_result", "notice"]
            .map(|k| counts.get(k).copied().unwrap_or(0));
        assert_eq!(
            &got, want,
            "{session}: [user, assistant, tool_call, tool_result, notice]"
        );
        let (calls, results) = tool_blocks(path);
        assert_eq!(
            (got[2], got[3]),
            (calls, results),
            "{session}: tool records vs tool blocks in the file"
        );
        // Ids are unique within a session.
        let mut ids: Vec<&str> = records.iter().map(|r| r["id"].as_str().unwrap()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), records.len(), "{session}: duplicate ids");
    }
}

#[test]
fn fixture_specifics() {
    // A denied call is an error result; the interrupt is a notice.
    let fed = records(&read_all("fed8ce56"));
    assert!(
        fed.iter()
            .any(|r| r["kind"] == "tool_result" && r["is_error"] == true)
    );
    assert!(
        fed.iter()
            .any(|r| r["kind"] == "notice" && r["text"].as_str().unwrap().contains("interrupted"))
    );

    // Inline sidechains (1.0.108) are marked; the failed Task's result is an error.
    let side = records(&read_all("5c0375b4"));
    assert!(side.iter().filter(|r| r["sidechain"] == true).count() >= 10);
    assert!(side.iter().any(|r| r["kind"] == "tool_result"
        && r["is_error"] == true
        && r["output"].as_str().unwrap().contains("tool_use_error")));

    // Subagent files carry the agent id on every record.
    let agent = records(&read_all(&format!("{MAIN}+agent-aac57f5")));
    assert!(
        agent
            .iter()
            .all(|r| r["agent"] == "aac57f5" && r["sidechain"] == true)
    );

    // Compaction is a notice with its trigger.
    let compact = records(&read_all(&format!("{MAIN}.excerpt-L1470-L1495-compact")));
    assert!(compact.iter().any(|r| {
        r["kind"] == "notice"
            && r["text"]
                .as_str()
                .unwrap()
                .starts_with("conversation compacted (manual")
    }));

    // The local command's ANSI colours are kept in NDJSON (exact) but never in text.
    let short = records(&read_all("short"));
    assert!(short.iter().any(|r| {
        r["text"]
            .as_str()
            .is_some_and(|t| t.contains("local command: /model"))
    }));
    let home = fixtures_home();
    let text = run(
        &home,
        &[
            "--root",
            &format!("claude={}", home.display()),
            "local:short",
            "--all",
            "--full",
        ],
    );
    assert_eq!(code(&text), 0);
    assert!(
        !text
            .stdout
            .iter()
            .any(|&b| b < 0x20 && b != b'\n' && b != b'\t' || b == 0x7f)
    );

    // Tool calls pair with results by call id.
    for session in ["fed8ce56", "short", "tool_heavy", "1af7fc5e"] {
        let recs = records(&read_all(session));
        let calls: Vec<&str> = recs
            .iter()
            .filter(|r| r["kind"] == "tool_call")
            .map(|r| r["call_id"].as_str().unwrap())
            .collect();
        for result in recs.iter().filter(|r| r["kind"] == "tool_result") {
            assert!(
                calls.contains(&result["call_id"].as_str().unwrap()),
                "{session}: result without call {result}"
            );
        }
    }
}
