//! Codex, Pi, Grok Build and Gemini CLI end to end: every fixture (tests/fixtures/<harness>/, laid
//! out as that harness's home; see tests/fixtures/LAYOUT.md) reads with zero errors and the kinds
//! its SOURCES entry implies; a generated transcript of each harness pages the same way by
//! `--head`, `--tail` and `--since`, grows by exactly the appended records and resets on a
//! rewrite; `ls --json` over a home holding all five lists each session once.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::support::{code, ids, ndjson, page, records, run, stderr};

fn fixture_home(harness: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/{harness}"))
}

/// `--all --json` of a fixture session; no stderr, exit 0.
fn read_fixture(harness: &str, session: &str) -> Vec<Value> {
    let home = fixture_home(harness);
    let root = format!("{harness}={}", home.display());
    let target = format!("local:{harness}/{session}");
    let out = run(
        &home,
        &["--root", &root, "read", &target, "--all", "--json"],
    );
    assert_eq!(code(&out), 0, "{target}: {}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{target}: {}", stderr(&out));
    let lines = ndjson(&out);
    assert_eq!(page(&lines)["more"], false);
    records(&lines)
}

fn kinds(records: &[Value]) -> [usize; 5] {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in records {
        *counts.entry(r["kind"].as_str().unwrap()).or_default() += 1;
    }
    ["user", "assistant", "tool_call", "tool_result", "notice"]
        .map(|k| counts.get(k).copied().unwrap_or(0))
}

/// (harness, session id, [user, assistant, tool_call, tool_result, notice]).
const EXPECTED: &[(&str, &str, [usize; 5])] = &[
    // One complete turn; 3 user messages (the sanitiser redacted the text, so injected context
    // cannot be told from prompts here), 5 MCP calls paired; 6 commentary/final answers + 6
    // reasoning summaries.
    (
        "codex",
        "019c8bfe-ec25-79e0-97d7-bda6a9c575ff",
        [3, 12, 5, 5, 0],
    ),
    // Ends mid-turn: the last exec_command call has no output.
    (
        "codex",
        "019c8a70-dda7-7f33-98ea-f30553347322",
        [4, 2, 1, 0, 0],
    ),
    // 118 function_call/output pairs, 28 turn_context lines (metadata).
    (
        "codex",
        "019c8a4d-8f45-7010-8b5d-7fad920aa6f9",
        [3, 43, 118, 118, 0],
    ),
    // apply_patch custom_tool_call + output; web_search_call without output.
    (
        "codex",
        "rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.excerpt-L100-L130-apply-patch-websearch",
        [0, 6, 5, 4, 0],
    ),
    // compacted + context_compacted → one notice; the excerpt ends before two outputs.
    (
        "codex",
        "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.excerpt-L1770-L1800-compacted",
        [0, 3, 6, 4, 1],
    ),
    // session_meta, turn_context and token_count only: an empty transcript, which one notice
    // says gave no record.
    ("codex", "parent", [0, 0, 0, 0, 1]),
    // The fork: one notice naming the parent, the copied token_count rows are metadata.
    ("codex", "child", [0, 0, 0, 0, 1]),
    // Synthetic coverage: unknown types tolerated. Its trimming gave several calls one
    // `call_id` ("[trimmed for fixture]"): each call and result is a record of its own.
    (
        "codex",
        "agent-sessions-stage0-codex-small",
        [3, 4, 8, 6, 17],
    ),
    // 0.87.1: system message (metadata), two turns, `call_1` reused as call id.
    (
        "pi",
        "01a0f21b-0595-72a7-84dc-df0fc0d0de3f",
        [2, 2, 2, 2, 0],
    ),
    // Two compactions.
    (
        "pi",
        "019e19b4-eb48-746a-aa6b-8dfcfa37954b",
        [2, 2, 0, 0, 2],
    ),
    // v1 (no entry ids): an aborted empty answer is a notice; the excerpt ends on a call.
    (
        "pi",
        "d703a1a9-1b7b-4fb1-b512-c9738b1fe617",
        [4, 6, 13, 12, 1],
    ),
    // system + environment context skipped; interrupt notice; backend web search w/o result.
    (
        "grok",
        "019f6851-7ec4-7ef0-97d3-03f3eee38755",
        [3, 3, 3, 2, 1],
    ),
    (
        "grok",
        "019f6851-7ec4-7ef0-97d3-03f3eee38756",
        [1, 2, 1, 1, 0],
    ),
    // Header, user, $set, gemini with a finished tool call, gemini text. The id is the
    // header's `sessionId`.
    ("gemini", "gemini_stage0_jsonl", [1, 1, 1, 1, 0]),
];

#[test]
fn every_fixture_reads_with_the_expected_kinds() {
    for (harness, session, want) in EXPECTED {
        let recs = read_fixture(harness, session);
        for r in &recs {
            assert_eq!(r["harness"], *harness);
            assert_eq!(r["session"], *session);
            let text = r["text"].as_str().unwrap_or_default();
            assert!(
                !text.contains("malformed") && !text.contains("not a JSON object"),
                "{session}: irregular record {r}"
            );
        }
        assert_eq!(
            &kinds(&recs),
            want,
            "{harness}/{session}: [user, assistant, tool_call, tool_result, notice]"
        );
        let mut all = ids(&recs);
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), recs.len(), "{session}: duplicate ids");
    }
}

/// Each `call_id` in the file, counted independently of the parser: calls and outputs.
fn codex_calls(path: &Path) -> BTreeMap<String, (usize, usize)> {
    let mut out: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for line in fs::read_to_string(path).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["type"] != "response_item" {
            continue;
        }
        let Some(id) = v["payload"]["call_id"].as_str() else {
            continue;
        };
        let entry = out.entry(id.to_string()).or_default();
        if v["payload"]["type"].as_str().unwrap().ends_with("_output") {
            entry.1 += 1;
        } else {
            entry.0 += 1;
        }
    }
    out
}

#[test]
fn codex_calls_pair_and_a_mid_turn_session_ends_pending() {
    let dir = fixture_home("codex").join("sessions/2026/02/23");
    for (session, file) in [
        (
            "019c8bfe-ec25-79e0-97d7-bda6a9c575ff",
            "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
        ),
        (
            "019c8a4d-8f45-7010-8b5d-7fad920aa6f9",
            "rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl",
        ),
    ] {
        let in_file = codex_calls(&dir.join(file));
        assert!(in_file.values().all(|&(c, r)| c == 1 && r == 1));
        let recs = read_fixture("codex", session);
        let mut got: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for r in &recs {
            let entry = got
                .entry(r["call_id"].as_str().unwrap_or_default().to_string())
                .or_default();
            match r["kind"].as_str().unwrap() {
                "tool_call" => {
                    entry.0 += 1;
                    let prefix = format!("call:{}@", r["call_id"].as_str().unwrap());
                    assert!(r["id"].as_str().unwrap().starts_with(&prefix), "{r}");
                }
                "tool_result" => {
                    entry.1 += 1;
                    let prefix = format!("result:{}@", r["call_id"].as_str().unwrap());
                    assert!(r["id"].as_str().unwrap().starts_with(&prefix), "{r}");
                }
                _ => {}
            }
        }
        got.remove("");
        assert_eq!(
            got, in_file,
            "{session}: one call and one result per call_id"
        );
    }
    let pending = read_fixture("codex", "019c8a70-dda7-7f33-98ea-f30553347322");
    let last = pending.last().unwrap();
    assert_eq!(last["kind"], "tool_call");
    assert_eq!(last["name"], "exec_command");
    let call_id = last["call_id"].as_str().unwrap();
    assert!(
        !pending
            .iter()
            .any(|r| r["kind"] == "tool_result" && r["call_id"] == call_id)
    );
    // The fork child says where its history comes from.
    let child = read_fixture("codex", "child");
    assert_eq!(
        child[0]["text"],
        "forked from session parent-session: the records that follow begin with a copy of its history"
    );
}

// ---------------------------------------------------------------------------------------------
// Generated transcripts, one writer per harness, under a temp $HOME's default roots.

/// Where a generated session of each harness lives under `$HOME`, and its session id.
struct Layout {
    harness: &'static str,
    rel: &'static str,
    id: &'static str,
}

const LAYOUTS: &[Layout] = &[
    Layout {
        harness: "claude",
        rel: ".claude/projects/-work-app/5a1e0000-0000-4000-8000-00000000c1a0.jsonl",
        id: "5a1e0000-0000-4000-8000-00000000c1a0",
    },
    Layout {
        harness: "codex",
        rel: ".codex/sessions/2026/11/02/rollout-2026-11-02T10-00-00-019a0000-0000-7000-8000-00000000c0de.jsonl",
        id: "019a0000-0000-7000-8000-00000000c0de",
    },
    Layout {
        harness: "pi",
        rel: ".pi/agent/sessions/--work-app--/2026-11-02T10-00-00-000Z_019a0000-0000-7000-8000-0000000000b1.jsonl",
        id: "019a0000-0000-7000-8000-0000000000b1",
    },
    Layout {
        harness: "grok",
        rel: ".grok/sessions/%2Fwork%2Fapp/019a0000-0000-7000-8000-000000000640/chat_history.jsonl",
        id: "019a0000-0000-7000-8000-000000000640",
    },
    Layout {
        harness: "gemini",
        rel: ".gemini/tmp/app/chats/session-2026-11-02T10-00-9e000000.jsonl",
        // The header's `sessionId`; the file name holds 8 characters of it.
        id: "9e000000-1111-4222-8333-444444444444",
    },
];

fn line(value: Value) -> String {
    format!("{value}\n")
}

/// The header lines of a generated session (metadata: no records).
fn header(harness: &str) -> String {
    match harness {
        "codex" => line(
            json!({"timestamp":"2026-11-02T10:00:00.000Z","type":"session_meta","payload":{"id":"019a0000-0000-7000-8000-00000000c0de","timestamp":"2026-11-02T10:00:00.000Z","cwd":"/work/app","originator":"codex_cli_rs","cli_version":"0.104.0","source":"cli"}}),
        ),
        "pi" => line(
            json!({"type":"session","version":3,"id":"019a0000-0000-7000-8000-0000000000b1","timestamp":"2026-11-02T10:00:00.000Z","cwd":"/work/app"}),
        ),
        "grok" => line(json!({"type":"system","content":"You are Grok."})),
        "gemini" => line(
            json!({"sessionId":"9e000000-1111-4222-8333-444444444444","projectHash":"abc","startTime":"2026-11-02T10:00:00.000Z","lastUpdated":"2026-11-02T10:00:00.000Z","kind":"main"}),
        ),
        _ => String::new(),
    }
}

/// Turn `i` of a generated session: five records (user, assistant text, tool call, tool
/// result, assistant text), four for Gemini (one text), with metadata lines between.
fn turn(harness: &str, i: usize) -> String {
    let ts = format!("2026-11-02T10:{:02}:{:02}.000Z", i / 60 % 60, i % 60);
    let call = format!("call_{i}");
    match harness {
        "claude" => [
            json!({"type":"user","uuid":format!("u-{i}"),"timestamp":ts,"message":{"role":"user","content":format!("prompt {i}")}}),
            json!({"type":"assistant","uuid":format!("a-{i}"),"timestamp":ts,"message":{"role":"assistant","content":[
                {"type":"text","text":format!("working {i}")},
                {"type":"tool_use","id":call,"name":"Bash","input":{"command":"ls"}}]}}),
            json!({"type":"user","uuid":format!("r-{i}"),"timestamp":ts,"message":{"role":"user","content":[
                {"type":"tool_result","tool_use_id":call,"content":"ok"}]}}),
            json!({"type":"assistant","uuid":format!("f-{i}"),"timestamp":ts,"message":{"role":"assistant","content":[{"type":"text","text":format!("done {i}")}]}}),
        ]
        .map(line)
        .concat(),
        "codex" => [
            json!({"timestamp":ts,"type":"turn_context","payload":{"cwd":"/work/app","model":"gpt"}}),
            json!({"timestamp":ts,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>x</environment_context>"}]}}),
            json!({"timestamp":ts,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":format!("prompt {i}")}]}}),
            json!({"timestamp":ts,"type":"event_msg","payload":{"type":"user_message","message":format!("prompt {i}")}}),
            json!({"timestamp":ts,"type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":format!("thinking {i}")}],"encrypted_content":"x"}}),
            json!({"timestamp":ts,"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":call}}),
            json!({"timestamp":ts,"type":"response_item","payload":{"type":"function_call_output","call_id":call,"output":"ok"}}),
            json!({"timestamp":ts,"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":format!("done {i}")}]}}),
            json!({"timestamp":ts,"type":"event_msg","payload":{"type":"token_count","info":null}}),
        ]
        .map(line)
        .concat(),
        "pi" => [
            json!({"type":"message","id":format!("u{i:07}"),"parentId":format!("f{:07}", i.wrapping_sub(1)),"timestamp":ts,"message":{"role":"user","content":[{"type":"text","text":format!("prompt {i}")}]}}),
            json!({"type":"message","id":format!("a{i:07}"),"parentId":format!("u{i:07}"),"timestamp":ts,"message":{"role":"assistant","content":[
                {"type":"text","text":format!("working {i}")},
                {"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"ls"}}],"stopReason":"toolUse"}}),
            json!({"type":"message","id":format!("r{i:07}"),"parentId":format!("a{i:07}"),"timestamp":ts,"message":{"role":"toolResult","toolCallId":"call_1","toolName":"bash","content":[{"type":"text","text":"ok"}],"isError":false}}),
            json!({"type":"message","id":format!("f{i:07}"),"parentId":format!("r{i:07}"),"timestamp":ts,"message":{"role":"assistant","content":[{"type":"text","text":format!("done {i}")}],"stopReason":"stop"}}),
        ]
        .map(line)
        .concat(),
        "grok" => [
            json!({"type":"user","content":[{"type":"text","text":"<user_info>"}],"synthetic_reason":"system_reminder"}),
            json!({"type":"user","content":[{"type":"text","text":format!("prompt {i}")}],"prompt_index":i}),
            json!({"type":"assistant","content":format!("working {i}"),"tool_calls":[{"id":call,"name":"run_terminal_cmd","arguments":"{\"command\":\"ls\"}"}],"model_id":"grok-4.5"}),
            json!({"type":"tool_result","tool_call_id":call,"content":"ok"}),
            json!({"type":"assistant","content":format!("done {i}"),"model_id":"grok-4.5"}),
        ]
        .map(line)
        .concat(),
        "gemini" => [
            json!({"id":format!("u-{i}"),"timestamp":ts,"type":"user","content":[{"text":format!("prompt {i}")}]}),
            json!({"$set":{"lastUpdated":ts}}),
            json!({"id":format!("g-{i}"),"timestamp":ts,"type":"gemini","content":format!("done {i}"),"model":"gemini-3","toolCalls":[{"id":call,"name":"run_shell_command","args":{"command":"ls"},"status":"success","result":[{"functionResponse":{"id":call,"name":"run_shell_command","response":{"output":"ok"}}}]}]}),
            json!({"$set":{"lastUpdated":ts}}),
        ]
        .map(line)
        .concat(),
        other => panic!("no generator for {other}"),
    }
}

fn records_per_turn(harness: &str) -> usize {
    if harness == "gemini" { 4 } else { 5 }
}

fn session_text(harness: &str, turns: std::ops::Range<usize>) -> String {
    let mut out = header(harness);
    for i in turns {
        out += &turn(harness, i);
    }
    out
}

struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_path_buf();
        Home { _dir: dir, home }
    }
    fn path(&self, layout: &Layout) -> PathBuf {
        self.home.join(layout.rel)
    }
    fn write(&self, layout: &Layout, text: &str) {
        let path = self.path(layout);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    fn append(&self, layout: &Layout, text: &str) {
        OpenOptions::new()
            .append(true)
            .open(self.path(layout))
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    fn json(&self, args: &[&str]) -> Vec<Value> {
        let out = run(&self.home, args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).is_empty(), "{args:?}: {}", stderr(&out));
        ndjson(&out)
    }
}

#[test]
fn generated_sessions_page_alike_grow_and_reset() {
    for layout in LAYOUTS {
        let home = Home::new();
        let h = layout.harness;
        let turns = 40;
        home.write(layout, &session_text(h, 0..turns));
        let target = format!("local:{h}/{}", layout.id);
        let all_lines = home.json(&["read", &target, "--all", "--json"]);
        let all = ids(&records(&all_lines));
        assert_eq!(all.len(), turns * records_per_turn(h), "{h}: {all:?}");
        for r in records(&all_lines) {
            assert_eq!(r["session"], layout.id);
        }
        for limit in ["1", "7", "200"] {
            let mut lines = home.json(&["read", &target, "--head", "--json", "--limit", limit]);
            let mut paged = Vec::new();
            loop {
                paged.extend(ids(&records(&lines)));
                let p = page(&lines);
                if p["more"] == false {
                    break;
                }
                let cursor = p["cursor"].as_str().unwrap().to_string();
                lines = home.json(&[
                    "read", &target, "--since", &cursor, "--json", "--limit", limit,
                ]);
            }
            assert_eq!(paged, all, "{h}: --head/--since with --limit {limit}");
            let n: usize = limit.parse().unwrap();
            let tail = home.json(&["read", &target, "--tail", "--json", "--limit", limit]);
            assert_eq!(
                ids(&records(&tail)),
                all[all.len().saturating_sub(n)..],
                "{h}: --tail --limit {limit}"
            );
        }
        // Appending gives exactly the new records.
        let end = home.json(&["read", &target, "--tail", "--json", "--limit", "1"]);
        let cursor = page(&end)["cursor"].as_str().unwrap().to_string();
        home.append(layout, &turn(h, turns));
        home.append(layout, &turn(h, turns + 1));
        let grown = home.json(&["read", &target, "--since", &cursor, "--json"]);
        let all_now = ids(&records(&home.json(&["read", &target, "--all", "--json"])));
        assert_eq!(ids(&records(&grown)), all_now[all.len()..], "{h}: appended");
        assert_eq!(
            records(&grown).len(),
            2 * records_per_turn(h),
            "{h}: appended"
        );
        assert_eq!(page(&grown)["reset"], false);
        // A rewrite before the cursor resets.
        let original = fs::read_to_string(home.path(layout)).unwrap();
        let rewritten = original.replacen("prompt 0", "prompt X", 1);
        assert_ne!(rewritten, original, "{h}");
        home.write(layout, &rewritten);
        let reset = home.json(&[
            "read",
            &target,
            "--since",
            page(&grown)["cursor"].as_str().unwrap(),
            "--json",
        ]);
        assert_eq!(
            page(&reset)["reset"],
            true,
            "{h}: rewrite before the cursor"
        );
        assert_eq!(records(&reset)[0]["kind"], "notice");
    }
}

#[test]
fn ls_lists_every_harness_once() {
    let home = Home::new();
    let mtime = SystemTime::UNIX_EPOCH + Duration::from_secs(1_793_613_600);
    for layout in LAYOUTS {
        home.write(layout, &session_text(layout.harness, 0..2));
        fs::File::options()
            .write(true)
            .open(home.path(layout))
            .unwrap()
            .set_modified(mtime)
            .unwrap();
    }
    // Files beside the transcripts that are not sessions.
    let grok_dir = home.path(&LAYOUTS[3]).parent().unwrap().to_path_buf();
    fs::write(grok_dir.join("updates.jsonl"), "{}\n").unwrap();
    fs::write(grok_dir.join("summary.json"), "{}").unwrap();
    fs::write(home.home.join(".gemini/tmp/app/logs.json"), "[]").unwrap();
    fs::write(home.home.join(".codex/history.jsonl"), "{}\n").unwrap();
    let listed = home.json(&["ls", "--json"]);
    assert_eq!(listed.len(), LAYOUTS.len(), "{listed:?}");
    for layout in LAYOUTS {
        let found: Vec<&Value> = listed
            .iter()
            .filter(|s| s["harness"] == layout.harness)
            .collect();
        assert_eq!(found.len(), 1, "{}: {listed:?}", layout.harness);
        let s = found[0];
        assert_eq!(s["type"], "session");
        assert_eq!(s["host"], "local");
        assert_eq!(s["session"], layout.id);
        assert_eq!(
            Path::new(s["path"].as_str().unwrap()),
            fs::canonicalize(home.path(layout)).unwrap()
        );
        assert_eq!(s["size"], fs::metadata(home.path(layout)).unwrap().len());
        assert_eq!(s["mtime"], "2026-11-02T10:00:00Z");
        // --harness filters, and HARNESS/ID resolves exactly.
        let only = home.json(&["ls", "--harness", layout.harness, "--json"]);
        assert_eq!(only.len(), 1);
        let target = format!("local:{}/{}", layout.harness, layout.id);
        let read = home.json(&["read", &target, "--json", "--limit", "1"]);
        assert_eq!(page(&read)["harness"], layout.harness);
    }
}

#[test]
fn resume_prints_each_harness_command_from_its_directory() {
    let home = Home::new();
    for layout in LAYOUTS {
        home.write(layout, &session_text(layout.harness, 0..1));
    }
    // Claude names its cwd on the lines; Grok and Gemini in sidecar files.
    let claude = &LAYOUTS[0];
    let text = fs::read_to_string(home.path(claude)).unwrap();
    home.write(
        claude,
        &text.replacen(
            "\"type\":\"user\"",
            "\"cwd\":\"/work/it's app\",\"type\":\"user\"",
            1,
        ),
    );
    let grok_dir = home.path(&LAYOUTS[3]).parent().unwrap().to_path_buf();
    fs::write(
        grok_dir.join("summary.json"),
        r#"{"info":{"id":"019a0000-0000-7000-8000-000000000640","cwd":"/work/app"}}"#,
    )
    .unwrap();
    fs::write(
        home.home.join(".gemini/tmp/app/.project_root"),
        "/work/app\n",
    )
    .unwrap();
    let pi_path = fs::canonicalize(home.path(&LAYOUTS[2])).unwrap();
    let want = [
        r"cd '/work/it'\''s app' && claude --resume 5a1e0000-0000-4000-8000-00000000c1a0"
            .to_string(),
        "cd /work/app && codex resume 019a0000-0000-7000-8000-00000000c0de".to_string(),
        format!("cd /work/app && pi --session {}", pi_path.display()),
        "cd /work/app && grok --resume 019a0000-0000-7000-8000-000000000640".to_string(),
        "cd /work/app && gemini --resume 9e000000-1111-4222-8333-444444444444".to_string(),
    ];
    for (layout, want) in LAYOUTS.iter().zip(want) {
        let target = format!("local:{}/{}", layout.harness, layout.id);
        let out = run(&home.home, &["resume", &target]);
        assert_eq!(code(&out), 0, "{target}: {}", stderr(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), want);
    }
    assert_eq!(code(&run(&home.home, &["resume", "local:nosuch"])), 4);
}

/// Codex compresses rollouts older than a week to `.jsonl.zst`: such a session lists under the
/// same id and reads into exactly the records of the uncompressed file, cursors included.
#[test]
fn compressed_codex_rollouts_read_like_plain_ones() {
    let plain = fixture_home("codex").join("sessions/2026/02/23/rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl");
    let bytes = fs::read(&plain).unwrap();
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("codex/sessions/2026/02/23");
    fs::create_dir_all(&dir).unwrap();
    let compressed =
        ruzstd::encoding::compress_to_vec(&bytes[..], ruzstd::encoding::CompressionLevel::Fastest);
    fs::write(
        dir.join("rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl.zst"),
        compressed,
    )
    .unwrap();
    let root = format!("codex={}", home.path().join("codex").display());
    let listed = ndjson(&run(
        home.path(),
        &["--root", &root, "ls", "--json", "--harness", "codex"],
    ));
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["session"], "019c8a4d-8f45-7010-8b5d-7fad920aa6f9");
    let from_zst = run(
        home.path(),
        &["--root", &root, "read", "local:019c8a4d", "--all", "--json"],
    );
    assert_eq!(code(&from_zst), 0, "{}", stderr(&from_zst));
    let plain_root = format!("codex={}", fixture_home("codex").display());
    let from_plain = run(
        home.path(),
        &[
            "--root",
            &plain_root,
            "read",
            "local:019c8a4d",
            "--all",
            "--json",
        ],
    );
    assert_eq!(records(&ndjson(&from_zst)), records(&ndjson(&from_plain)));
    // Paging the compressed file with --since gives the same ids.
    let first = ndjson(&run(
        home.path(),
        &[
            "--root",
            &root,
            "read",
            "local:019c8a4d",
            "--head",
            "--limit",
            "40",
            "--json",
        ],
    ));
    let cursor = page(&first)["cursor"].as_str().unwrap().to_string();
    let rest = ndjson(&run(
        home.path(),
        &[
            "--root",
            &root,
            "read",
            "local:019c8a4d",
            "--since",
            &cursor,
            "--limit",
            "200",
            "--json",
        ],
    ));
    let mut paged = ids(&records(&first));
    paged.extend(ids(&records(&rest)));
    assert_eq!(
        paged[..],
        ids(&records(&ndjson(&from_plain)))[..paged.len()]
    );
    // A cursor taken on the plain file carries over to the compressed one.
    let plain_head = ndjson(&run(
        home.path(),
        &[
            "--root",
            &plain_root,
            "read",
            "local:019c8a4d",
            "--head",
            "--limit",
            "40",
            "--json",
        ],
    ));
    let plain_cursor = page(&plain_head)["cursor"].as_str().unwrap().to_string();
    let after = ndjson(&run(
        home.path(),
        &[
            "--root",
            &root,
            "read",
            "local:019c8a4d",
            "--since",
            &plain_cursor,
            "--limit",
            "200",
            "--json",
        ],
    ));
    assert_eq!(page(&after)["reset"], false);
    assert_eq!(ids(&records(&after)), ids(&records(&rest)));
    // A corrupt one is a clear error, exit 6.
    fs::write(
        dir.join("rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl.zst"),
        b"not zstd",
    )
    .unwrap();
    let bad = run(home.path(), &["--root", &root, "read", "local:019c8a4d"]);
    assert_eq!(code(&bad), 6, "{}", stderr(&bad));
}

/// Gemini's legacy whole-document sessions (`session-*.json`) are listed and read whole, paged
/// with row cursors; a rewritten document before the cursor gives `reset`.
#[test]
fn gemini_legacy_documents_read_and_page() {
    let home = tempfile::tempdir().unwrap();
    let chats = home.path().join("gemini/tmp/p/chats");
    fs::create_dir_all(&chats).unwrap();
    let fixture =
        fixture_home("gemini").join("tmp/fixtures/chats/session-2026-04-29T21-00-legacysm.json");
    let mut doc: Value = serde_json::from_slice(&fs::read(&fixture).unwrap()).unwrap();
    // Enough messages to page through.
    let template = doc["messages"].as_array().unwrap().clone();
    let mut messages = Vec::new();
    for i in 0..20 {
        for m in &template {
            let mut m = m.clone();
            m["id"] = json!(format!("{}-{i}", m["id"].as_str().unwrap()));
            messages.push(m);
        }
    }
    doc["messages"] = json!(messages);
    let path = chats.join("session-2026-04-29T21-00-legacysm.json");
    fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let root = format!("gemini={}", home.path().join("gemini").display());
    let target = "local:gemini/session-2026-04-29T21-00-legacysm";
    let all = ndjson(&run(
        home.path(),
        &["--root", &root, "read", target, "--all", "--json"],
    ));
    let all_ids = ids(&records(&all));
    assert!(all_ids.len() >= 40, "{all_ids:?}");
    let mut paged = Vec::new();
    let mut lines = ndjson(&run(
        home.path(),
        &[
            "--root", &root, "read", target, "--head", "--limit", "7", "--json",
        ],
    ));
    loop {
        paged.extend(ids(&records(&lines)));
        let p = page(&lines);
        if p["more"] == false {
            break;
        }
        let cursor = p["cursor"].as_str().unwrap().to_string();
        lines = ndjson(&run(
            home.path(),
            &[
                "--root", &root, "read", target, "--since", &cursor, "--limit", "7", "--json",
            ],
        ));
    }
    assert_eq!(paged, all_ids);
    let tail = ndjson(&run(
        home.path(),
        &["--root", &root, "read", target, "--limit", "5", "--json"],
    ));
    assert_eq!(ids(&records(&tail)), all_ids[all_ids.len() - 5..]);
    // Rewrite the first message: the cursor from the head page is stale.
    let head = ndjson(&run(
        home.path(),
        &[
            "--root", &root, "read", target, "--head", "--limit", "7", "--json",
        ],
    ));
    let cursor = page(&head)["cursor"].as_str().unwrap().to_string();
    doc["messages"][0]["displayContent"] = json!("rewritten");
    fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let reset = ndjson(&run(
        home.path(),
        &[
            "--root", &root, "read", target, "--since", &cursor, "--json",
        ],
    ));
    assert_eq!(page(&reset)["reset"], true);
    let strict = run(
        home.path(),
        &[
            "--root", &root, "read", target, "--since", &cursor, "--strict",
        ],
    );
    assert_eq!(code(&strict), 5, "{}", stderr(&strict));
}

/// A legacy `.json` session resumes by its `sessionId` (`gemini --resume` rejects the file
/// name): the fixture's document, pretty-printed as Gemini writes it, with a UUID session id.
#[test]
fn gemini_legacy_document_resumes_by_its_session_id() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join(".gemini/tmp/p");
    fs::create_dir_all(project.join("chats")).unwrap();
    fs::write(project.join(".project_root"), "/work/app\n").unwrap();
    let fixture =
        fixture_home("gemini").join("tmp/fixtures/chats/session-2026-04-29T21-00-legacysm.json");
    let mut doc: Value = serde_json::from_slice(&fs::read(&fixture).unwrap()).unwrap();
    let uuid = "3739ef95-1c2d-4e5f-8a9b-0c1d2e3f4a5b";
    doc["sessionId"] = json!(uuid);
    fs::write(
        project.join("chats/session-2026-04-29T21-00-3739ef95.json"),
        serde_json::to_vec_pretty(&doc).unwrap(),
    )
    .unwrap();
    let out = run(
        home.path(),
        &["resume", "local:gemini/session-2026-04-29T21-00-3739ef95"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        format!("cd /work/app && gemini --resume {uuid}")
    );
}

/// A Gemini root given by `--root` but not named `.gemini` cannot be put in `GEMINI_CLI_HOME`
/// (Gemini appends `.gemini`): `resume` still prints the command, and says so in one line.
#[test]
fn gemini_root_not_named_dot_gemini_is_said_not_dropped() {
    let home = tempfile::tempdir().unwrap();
    let root_dir = home.path().join("gem-copy");
    let project = root_dir.join("tmp/p");
    fs::create_dir_all(project.join("chats")).unwrap();
    fs::write(project.join(".project_root"), "/work/app\n").unwrap();
    fs::copy(
        fixture_home("gemini").join("tmp/fixtures/chats/session-2026-04-29T21-00-legacysm.json"),
        project.join("chats/session-2026-04-29T21-00-legacysm.json"),
    )
    .unwrap();
    let root = format!("gemini={}", root_dir.display());
    let out = run(
        home.path(),
        &[
            "--root",
            &root,
            "resume",
            "local:gemini/session-2026-04-29T21-00-legacysm",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("cd /work/app && gemini --resume "),
        "{:?}",
        out.stdout
    );
    let note = stderr(&out);
    assert_eq!(note.lines().count(), 1, "{note}");
    assert!(
        note.contains("$GEMINI_CLI_HOME/.gemini") && note.contains(&root_dir.display().to_string()),
        "{note}"
    );
    // Named `.gemini`, the root is the variable's, and there is nothing to say.
    let named = home.path().join("h/.gemini");
    fs::create_dir_all(named.parent().unwrap()).unwrap();
    fs::rename(&root_dir, &named).unwrap();
    let root = format!("gemini={}", named.display());
    let out = run(
        home.path(),
        &[
            "--root",
            &root,
            "resume",
            "local:gemini/session-2026-04-29T21-00-legacysm",
        ],
    );
    assert_eq!(stderr(&out), "");
    assert!(String::from_utf8_lossy(&out.stdout).contains("GEMINI_CLI_HOME="));
}

/// Grok Build: a session written in the older (v0) chat-message format reads into its records
/// (it gave none), and an interjection the user typed mid-turn is a user record, beside the
/// fixture's `summary.json`.
#[test]
fn grok_v0_history_and_interjections_read() {
    let home = tempfile::tempdir().unwrap();
    let id = "019f6851-7ec4-7ef0-97d3-03f3eee38755";
    let source = fixture_home("grok")
        .join("sessions/%2Ftmp%2Fas-agent-lab%2Fgrok%2Fproject")
        .join(id);
    let dir = home.path().join(".grok/sessions/%2Fw").join(id);
    fs::create_dir_all(&dir).unwrap();
    fs::copy(source.join("summary.json"), dir.join("summary.json")).unwrap();
    let lines = [
        json!({"role": "system", "content": "You are Grok"}),
        json!({"role": "user", "content": "list the files"}),
        json!({"role": "assistant", "content": "", "reasoning_content": "ls will do",
            "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "run_terminal_cmd", "arguments": "{\"command\":\"ls\"}"}}]}),
        json!({"type": "user", "content": [{"type": "text", "text": "only .rs files"}],
            "synthetic_reason": "interjection"}),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "a.rs\n"}),
        json!({"role": "assistant", "content": "One file: a.rs."}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(dir.join("chat_history.jsonl"), text).unwrap();
    let out = run(
        home.path(),
        &["read", &format!("local:grok/{id}"), "--all", "--json"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let recs = records(&ndjson(&out));
    let shown: Vec<(&str, bool)> = recs
        .iter()
        .map(|r| (r["kind"].as_str().unwrap(), r["thinking"] == true))
        .collect();
    assert_eq!(
        shown,
        [
            ("user", false),
            ("assistant", true),
            ("tool_call", false),
            ("user", false),
            ("tool_result", false),
            ("assistant", false)
        ],
        "{recs:#?}"
    );
    assert_eq!(recs[3]["text"], "only .rs files");
}

/// A rollout Codex 0.171 wrote (see SOURCES): a failed command is an error and a passing one is
/// not, each result the command's output without the unified exec wrapper; the injected
/// context and the developer message are not prompts.
#[test]
fn codex_0_171_command_results_are_their_output_and_fail_on_a_nonzero_exit() {
    let recs = read_fixture("codex", "01a2314a-c183-7dd3-bfba-bca7ab24ea65");
    let shown: Vec<Value> = recs
        .iter()
        .map(|r| {
            let mut r = r.clone();
            let r = r.as_object_mut().unwrap();
            for key in ["type", "harness", "session", "ts", "host"] {
                r.remove(key);
            }
            Value::Object(r.clone())
        })
        .collect();
    assert_eq!(
        shown,
        [
            json!({"id": "msg_01a2314a-c1ca-7b73-97b3-7d3068c051ae#0", "kind": "user",
                "text": "list a missing dir, then echo a marker"}),
            json!({"id": "call:call_fail@32331", "kind": "tool_call", "call_id": "call_fail",
                "name": "exec_command", "input": {"cmd": "ls /nonexistent-hf-dir"}}),
            json!({"id": "result:call_fail@34296", "kind": "tool_result", "call_id": "call_fail",
                "output": "ls: cannot access '/nonexistent-hf-dir': No such file or directory\n",
                "is_error": true}),
            json!({"id": "call:call_ok@35653", "kind": "tool_call", "call_id": "call_ok",
                "name": "exec_command", "input": {"cmd": "echo MARKER-HF"}}),
            json!({"id": "result:call_ok@37508", "kind": "tool_result", "call_id": "call_ok",
                "output": "MARKER-HF\n", "is_error": false}),
            json!({"id": "msg_2#0", "kind": "assistant", "text": "Done: MARKER-HF."}),
        ]
    );
}

/// The real Codex 0.171 session with its call and result appended again, as a resumed session
/// whose model reuses the `call_id` writes them: both pairs are read, each call followed by its
/// own result, with distinct ids that a second read gives again.
#[test]
fn codex_0_171_call_id_used_again_after_a_resume_reads_both_pairs() {
    let home = tempfile::tempdir().unwrap();
    let source = fixture_home("codex-0.171.0");
    let rel = "sessions/2026/12/01/rollout-2026-12-01T11-17-51-01a23153-4790-7660-8b79-1ac09239b292.jsonl";
    let text = fs::read_to_string(source.join(rel)).unwrap();
    let pair: String = text
        .lines()
        .filter(|l| {
            l.contains(r#""call_id":"call_compat01""#)
                && (l.contains(r#""type":"function_call""#)
                    || l.contains(r#""type":"function_call_output""#))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(pair.lines().count(), 2, "the fixture's call and result");
    let path = home.path().join(".codex").join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, format!("{text}{pair}")).unwrap();
    let target = "local:codex/01a23153-4790-7660-8b79-1ac09239b292";
    let read = || {
        let out = run(home.path(), &["read", target, "--all", "--json"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        records(&ndjson(&out))
    };
    let recs = read();
    let tools: Vec<&Value> = recs
        .iter()
        .filter(|r| r["call_id"] == "call_compat01")
        .collect();
    let kinds: Vec<&str> = tools.iter().map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["tool_call", "tool_result", "tool_call", "tool_result"],
        "{recs:#?}"
    );
    let tool_ids: Vec<&str> = tools.iter().map(|r| r["id"].as_str().unwrap()).collect();
    let mut distinct = tool_ids.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 4, "{tool_ids:?}");
    assert_eq!(ids(&read()), ids(&recs), "ids are stable");
}

/// Real Claude Code sessions (1.0.108, 2.1.39) where the user typed a slash command with
/// arguments: a `user` record naming the command, shown by `--kind user`.
#[test]
fn claude_slash_command_with_arguments_is_the_users_request() {
    let home = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude");
    let root = format!("claude={}", home.display());
    for (session, want) in [
        (
            "5c0375b4-57a5-4f26-b12d-d022ee4e51b7",
            "/orchestrator @CLAUDE.md を最新の状態にアップデートしてください",
        ),
        (
            "ae4a77f8-aedd-4bc1-888f-c94edc91af04.excerpt-L1470-L1495-compact",
            "/compact and continue with the reamining tasks",
        ),
    ] {
        let target = format!("local:claude/{session}");
        let out = run(
            &home,
            &[
                "--root", &root, "read", &target, "--all", "--kind", "user", "--json",
            ],
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let recs = records(&ndjson(&out));
        assert!(
            recs.iter()
                .any(|r| r["kind"] == "user" && r["text"] == want),
            "{session}: {recs:#?}"
        );
    }
}

/// Real Claude Code subagents (2.1.39 under `<parent>/subagents/`, 2.0.77 at the project's
/// root) whose parent transcript is gone: `ls` lists each under an id that reads it, and
/// `resume` names no parent (Claude would reject it), failing with a line that says why.
#[test]
fn claude_subagent_whose_parent_is_gone_lists_and_resumes_truthfully() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude/projects");
    for (dir, parent) in [
        (
            "-fixtures/ae4a77f8-aedd-4bc1-888f-c94edc91af04",
            "ae4a77f8-aedd-4bc1-888f-c94edc91af04",
        ),
        ("-claude-2.0.77", "194d1d00-2427-4b27-a0d5-8064117bcc38"),
    ] {
        let home = tempfile::tempdir().unwrap();
        let project = home.path().join(".claude/projects/-w");
        let source = fixtures.join(dir);
        let to = if dir.starts_with("-fixtures/") {
            project.join(parent)
        } else {
            project.clone()
        };
        copy_tree(&source, &to);
        let _ = fs::remove_file(project.join(format!("{parent}.jsonl")));
        let ls = run(home.path(), &["ls", "--harness", "claude"]);
        assert_eq!(code(&ls), 0, "{}", stderr(&ls));
        let listed: Vec<String> = String::from_utf8_lossy(&ls.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
            .collect();
        assert!(!listed.is_empty(), "{dir}");
        for id in &listed {
            assert!(id.starts_with(&format!("{parent}+")), "{dir}: {id}");
            let read = run(home.path(), &["read", id, "--limit", "1", "--json"]);
            assert_eq!(code(&read), 0, "{id}: {}", stderr(&read));
            assert_eq!(page(&ndjson(&read))["type"], "page", "{id}");
            let resume = run(home.path(), &["resume", id]);
            assert_ne!(code(&resume), 0, "{id}");
            assert!(resume.stdout.is_empty(), "{id}: {:?}", resume.stdout);
            assert!(
                stderr(&resume).contains("is gone"),
                "{id}: {}",
                stderr(&resume)
            );
        }
    }
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A `!cmd` the user ran in Pi (a `bashExecution` message, appended to the real 0.73.1
/// session in the shape Pi writes it): a `bash` call marked `"by": "user"` and its result; the
/// agent's own call in the same session carries no `by`.
#[test]
fn pi_user_run_command_is_a_call_by_the_user() {
    let home = tempfile::tempdir().unwrap();
    let source = fixture_home("pi-0.73.1");
    let rel = "sessions/--compat-project--/2026-12-01T11-17-41-237Z_01a23153-20f4-7763-ada7-12a9044fc8ee.jsonl";
    let text = fs::read_to_string(source.join(rel)).unwrap();
    let bash = json!({"type": "message", "id": "b7e1c0de", "parentId": "9ecb2add",
        "timestamp": "2026-12-01T11:18:00.000Z",
        "message": {"role": "bashExecution", "command": "git status --short", "output": " M a.rs\n",
            "exitCode": 0, "cancelled": false, "truncated": false, "timestamp": 1796123880000u64}});
    let path = home.path().join(".pi/agent").join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, format!("{text}{bash}\n")).unwrap();
    let out = run(
        home.path(),
        &[
            "read",
            "local:pi/01a23153-20f4-7763-ada7-12a9044fc8ee",
            "--all",
            "--json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let recs = records(&ndjson(&out));
    let calls: Vec<&Value> = recs.iter().filter(|r| r["kind"] == "tool_call").collect();
    assert_eq!(calls.len(), 2, "{recs:#?}");
    assert!(calls[0].get("by").is_none(), "{}", calls[0]);
    assert_eq!(calls[1]["by"], "user", "{}", calls[1]);
    assert_eq!(calls[1]["input"]["command"], "git status --short");
    let last = recs.last().unwrap();
    assert_eq!(last["kind"], "tool_result");
    assert_eq!(last["call_id"], calls[1]["call_id"]);
}

/// `read TARGET --all --json` over the Claude home `home` (exit 0): its records, and stderr.
fn claude_all(home: &Path, target: &str) -> (Vec<Value>, String) {
    let root = format!("claude={}", home.display());
    let out = run(home, &["--root", &root, "read", target, "--all", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    (records(&ndjson(&out)), stderr(&out))
}

/// Each record as a reader sees it at a glance: its kind, and its text or tool name.
fn shown(recs: &[Value]) -> Vec<(&str, &str)> {
    recs.iter()
        .map(|r| {
            let text = r["text"].as_str().or(r["name"].as_str());
            (r["kind"].as_str().unwrap(), text.unwrap_or_default())
        })
        .collect()
}

/// A session Claude Code 2.1.197 wrote (see SOURCES): the background task's end, a user line
/// holding a `<task-notification>`, is a notice saying how it ended, not a prompt.
#[test]
fn claude_2_1_197_background_task_notification_is_a_notice() {
    let home = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude");
    let (recs, _) = claude_all(&home, "local:claude/33140648-4f85-4620-94b8-9e4c94e89290");
    assert_eq!(
        shown(&recs),
        [
            ("user", "run a marker in the background"),
            ("tool_call", "Bash"),
            ("tool_result", ""),
            ("assistant", "Started it in the background."),
            (
                "notice",
                "Background command \"background marker\" completed (exit code 0)"
            ),
            ("assistant", "The background task finished: MARKER-BG."),
        ]
    );
    assert_eq!(recs[4]["id"], "4ba102b4-4612-43f1-b100-afeb01d2e91c#0");
}

/// The compatibility suite's MCP turn as Claude Code 2.1.332 wrote it (`tests/compat/mcp.rs`):
/// this release defers MCP tools, so the model first loads ours with `ToolSearch`, whose result
/// is a `tool_reference`, then calls it. The release's new metadata lines (`api-request-shape`,
/// `api-request-blob` copies of the request, `prompt_snapshot` and `deferred_tools_delta`
/// attachments) are skipped without a notice or a warning.
#[test]
fn claude_2_1_332_loads_a_deferred_mcp_tool_then_calls_it() {
    let (recs, warnings) = claude_all(&fixture_home("claude-code-2.1.332-mcp"), "local:5486921d");
    assert_eq!(warnings, "", "no warning");
    assert_eq!(
        shown(&recs),
        [
            ("user", "compat mcp: read the codex session through clankie"),
            ("assistant", "I will run the marker command."),
            ("tool_call", "ToolSearch"),
            ("tool_result", ""),
            ("assistant", "I will run the marker command."),
            ("tool_call", "mcp__clankie__read_session"),
            ("tool_result", ""),
            ("assistant", "Goodbye from the compat model."),
        ]
    );
    assert_eq!(
        recs[2]["input"]["query"],
        "select:mcp__clankie__read_session"
    );
    assert_eq!(recs[3]["call_id"], recs[2]["call_id"]);
    assert_eq!(recs[3]["output"], "[tool mcp__clankie__read_session]");
    assert_eq!(recs[6]["call_id"], recs[5]["call_id"]);
    assert_ne!(recs[5]["call_id"], recs[2]["call_id"]);
    // Our own server's answer, as Claude recorded it: the Codex session's records, redacted.
    let result = recs[6]["output"].as_str().unwrap();
    assert!(result.contains("compat-42-marker"), "{result}");
    assert!(result.contains("[REDACTED:anthropic]"), "{result}");
}

/// Sessions Claude Code 2.0.77 wrote (see SOURCES): its subagent files at the project's root are
/// listed, read and resumed as `<parent>+agent-<id>` of the session named inside them.
#[test]
fn claude_2_0_77_root_subagent_files_belong_to_their_parent() {
    let home = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude");
    let parent = "194d1d00-2427-4b27-a0d5-8064117bcc38";
    let root = format!("claude={}", home.display());
    let listed = ndjson(&run(&home, &["--root", &root, "ls", "--json"]));
    let ours: Vec<&str> = listed
        .iter()
        .filter(|s| s["path"].as_str().unwrap().contains("/-claude-2.0.77/"))
        .map(|s| s["session"].as_str().unwrap())
        .collect();
    assert_eq!(
        ours,
        [
            parent.to_string(),
            format!("{parent}+agent-a1c3496"),
            format!("{parent}+agent-a76c24f"),
            format!("{parent}+agent-a99c2d4"),
            format!("{parent}+agent-aab544e"),
        ]
    );
    // The parent's prefix names the parent alone; the subagent's its own records.
    let main = run(
        &home,
        &["--root", &root, "read", "local:194d1d00", "--all", "--json"],
    );
    assert_eq!(code(&main), 0, "{}", stderr(&main));
    let main = records(&ndjson(&main));
    assert_eq!(main.len(), 4, "{main:?}");
    let sub = run(
        &home,
        &[
            "--root",
            &root,
            "read",
            &format!("local:{parent}+agent-a1c3496"),
            "--all",
            "--json",
        ],
    );
    assert_eq!(code(&sub), 0, "{}", stderr(&sub));
    let sub = records(&ndjson(&sub));
    let texts: Vec<&str> = sub.iter().map(|r| r["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["find the marker", "found MARKER-SUB"]);
    assert!(
        sub.iter()
            .all(|r| r["session"] == format!("{parent}+agent-a1c3496"))
    );
    // Resuming a subagent resumes its parent.
    let resume = run(
        &home,
        &[
            "--root",
            &root,
            "resume",
            &format!("local:{parent}+agent-a1"),
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&resume.stdout),
        format!(
            "cd /tmp/clis-harnessfix/claude20-run/work && CLAUDE_CONFIG_DIR={} claude --resume {parent}\n",
            home.display()
        )
    );
}

/// A legacy Gemini document caught in the middle of Gemini's in-place rewrite (cut short) is a
/// pending read: exit 0, no records, `pending_tail`, and a cursor that still continues; exit 6
/// only with `--strict`. A document that is not JSON at all stays an error.
#[test]
fn gemini_document_cut_short_is_a_pending_read() {
    let home = tempfile::tempdir().unwrap();
    let chats = home.path().join("gemini/tmp/p/chats");
    fs::create_dir_all(&chats).unwrap();
    let whole = fs::read(
        fixture_home("gemini").join("tmp/fixtures/chats/session-2026-04-29T21-00-legacysm.json"),
    )
    .unwrap();
    let path = chats.join("session-2026-04-29T21-00-legacysm.json");
    let root = format!("gemini={}", home.path().join("gemini").display());
    let target = "local:gemini/session-2026-04-29T21-00-legacysm";
    let read = |extra: &[&str]| {
        let mut args = vec!["--root", &root, "read", target, "--json"];
        args.extend_from_slice(extra);
        run(home.path(), &args)
    };
    fs::write(&path, &whole).unwrap();
    let complete = read(&["--all"]);
    assert_eq!(code(&complete), 0, "{}", stderr(&complete));
    let all = ids(&records(&ndjson(&complete)));
    assert!(all.len() >= 2, "{all:?}");
    let first = read(&["--head", "--limit", "1"]);
    let cursor = page(&ndjson(&first))["cursor"]
        .as_str()
        .unwrap()
        .to_string();

    fs::write(&path, &whole[..whole.len() / 2]).unwrap();
    for extra in [&["--all"][..], &["--since", &cursor][..]] {
        let torn = read(extra);
        assert_eq!(code(&torn), 0, "{extra:?}: {}", stderr(&torn));
        let lines = ndjson(&torn);
        assert!(records(&lines).is_empty(), "{extra:?}: {lines:?}");
        assert_eq!(page(&lines)["pending_tail"], true, "{extra:?}");
        assert_eq!(page(&lines)["reset"], false, "{extra:?}");
        let strict = read(&[extra, &["--strict"][..]].concat());
        assert_eq!(code(&strict), 6, "{extra:?}: {}", stderr(&strict));
    }
    let torn_page = page(&ndjson(&read(&["--since", &cursor])));
    let torn_cursor = torn_page["cursor"].as_str().unwrap().to_string();

    // Rewritten whole again: the cursor kept through the torn read continues.
    fs::write(&path, &whole).unwrap();
    let rest = read(&["--since", &torn_cursor, "--limit", "200"]);
    assert_eq!(code(&rest), 0, "{}", stderr(&rest));
    assert_eq!(ids(&records(&ndjson(&rest))), all[1..]);

    fs::write(&path, b"{not json at all}").unwrap();
    let bad = read(&["--all"]);
    assert_eq!(code(&bad), 6, "{}", stderr(&bad));
}

/// A session Gemini CLI 0.61.0 wrote (and resumed in a later minute, which left a startup-only
/// second file with the same `sessionId`): one session, whose id is the header's UUID in `ls`,
/// reads, `resume` and `check`; the full id, a prefix and the file name all find it.
#[test]
fn gemini_0_61_session_is_its_header_id_everywhere() {
    let fixture = fixture_home("gemini-cli-0.61.0");
    let root = format!("gemini={}", fixture.display());
    let home = tempfile::tempdir().unwrap();
    let uuid = "8f60115e-68fb-4ce6-aa55-6c67027a9884";
    let json = |args: &[&str]| {
        let out = run(home.path(), &[&["--root", &root][..], args].concat());
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        ndjson(&out)
    };
    let listed: Vec<Value> = json(&["ls", "--json"])
        .into_iter()
        .filter(|l| l["type"] == "session" && l["harness"] == "gemini")
        .collect();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["session"], uuid);
    assert!(
        listed[0]["path"]
            .as_str()
            .unwrap()
            .ends_with("session-2026-12-01T10-54-8f60115e.jsonl")
    );
    let all = records(&json(&[
        "read",
        &format!("local:{uuid}"),
        "--all",
        "--json",
    ]));
    let kinds: Vec<&str> = all.iter().map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "user",
            "assistant",
            "tool_call",
            "tool_result",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert!(all.iter().all(|r| r["session"] == uuid));
    for typed in ["8f6011", "gemini/session-2026-12-01T10-54-8f60115e"] {
        let again = records(&json(&[
            "read",
            &format!("local:{typed}"),
            "--all",
            "--json",
        ]));
        assert_eq!(again, all, "{typed}");
    }
    let resume = run(
        home.path(),
        &["--root", &root, "resume", &format!("local:{uuid}")],
    );
    assert_eq!(code(&resume), 0, "{}", stderr(&resume));
    assert!(
        String::from_utf8_lossy(&resume.stdout).contains(&format!("gemini --resume {uuid}")),
        "{}",
        String::from_utf8_lossy(&resume.stdout)
    );
    let state = home.path().join("state.json");
    let check = json(&[
        "check",
        "--state",
        state.to_str().unwrap(),
        "--json",
        "local",
    ]);
    let sessions: Vec<&Value> = check
        .iter()
        .filter(|l| l["type"] == "activity" && l["harness"] == "gemini")
        .collect();
    assert_eq!(sessions.len(), 1, "{check:?}");
    assert_eq!(sessions[0]["session"], uuid);
}

/// The compatibility suite's scripted session as the real CLIs wrote it (`tests/compat/`,
/// `tests/fixtures/LAYOUT.md`): a prompt, text and one shell call, its result, an answer with
/// fake secrets (redacted), then the resumed turn (none for a CLI that cannot resume offline).
#[test]
fn real_cli_sessions_read_the_scripted_records() {
    for (dir, harness, tool, resumed) in [
        ("claude-code-2.1.197", "claude", "Bash", true),
        ("claude-code-2.1.332", "claude", "Bash", true),
        ("codex-0.171.0", "codex", "exec_command", true),
        ("gemini-cli-0.61.0", "gemini", "run_shell_command", true),
        ("pi-0.73.1", "pi", "bash", true),
        ("pi-1.6.0", "pi", "bash", true),
        ("copilot-1.0.102", "copilot", "bash", true),
        ("droid-0.225.1", "droid", "Execute", false),
        ("continue-1.5.47", "continue", "Bash", true),
        ("cline-3.0.65", "cline", "run_commands", false),
        ("qwen-0.24.4", "qwen", "run_shell_command", true),
        ("kimi-code-2.1.0", "kimi-code", "Bash", true),
        ("kimi-1.51.0", "kimi", "Shell", true),
        ("openhands-1.2.1", "openhands", "terminal", true),
    ] {
        let root = format!("{harness}={}", fixture_home(dir).display());
        let home = tempfile::tempdir().unwrap();
        let listed = ndjson(&run(home.path(), &["--root", &root, "ls", "--json"]));
        let sessions: Vec<&Value> = listed
            .iter()
            .filter(|l| l["type"] == "session" && l["harness"] == harness)
            .collect();
        assert_eq!(sessions.len(), 1, "{dir}: {listed:?}");
        let target = format!(
            "local:{harness}/{}",
            sessions[0]["session"].as_str().unwrap()
        );
        let out = run(
            home.path(),
            &["--root", &root, "read", &target, "--all", "--json"],
        );
        assert_eq!(code(&out), 0, "{dir}: {}", stderr(&out));
        let recs = records(&ndjson(&out));
        let kinds: Vec<&str> = recs.iter().map(|r| r["kind"].as_str().unwrap()).collect();
        let turns = [
            "user",
            "assistant",
            "tool_call",
            "tool_result",
            "assistant",
            "user",
            "assistant",
        ];
        assert_eq!(kinds, turns[..if resumed { 7 } else { 5 }], "{dir}");
        assert_eq!(
            recs[0]["text"], "compat turn one: run the marker command",
            "{dir}"
        );
        assert_eq!(recs[2]["name"], tool, "{dir}");
        assert_eq!(recs[3]["call_id"], recs[2]["call_id"], "{dir}");
        assert_eq!(recs[3]["is_error"], false, "{dir}");
        assert!(
            recs[3]["output"]
                .as_str()
                .unwrap()
                .contains("compat-42-marker"),
            "{dir}: {}",
            recs[3]
        );
        let answer = recs[4]["text"].as_str().unwrap();
        assert!(answer.contains("compat-42-marker"), "{dir}: {answer}");
        assert!(
            !answer.contains("sk-ant-api03-") && !answer.contains("ghp_Compat"),
            "{dir}: not redacted: {answer}"
        );
        if resumed {
            assert_eq!(recs[6]["text"], "Goodbye from the compat model.", "{dir}");
        }
    }
}

/// The conversation OpenHands 1.2.1 wrote, resumed once (a tree of one file per event):
/// listed once with its first prompt as the title and its state's working directory, and
/// resumed with the UUID the CLI takes, dashed.
#[test]
fn openhands_1_2_1_conversation_lists_with_title_cwd_and_resume() {
    let root_dir = fixture_home("openhands-1.2.1");
    let conversation = fs::read_dir(root_dir.join("conversations"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let state: Value =
        serde_json::from_slice(&fs::read(conversation.join("base_state.json")).unwrap()).unwrap();
    let root = format!("openhands={}", root_dir.display());
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &["--root", &root, "ls", "--json", "--long"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed: Vec<Value> = ndjson(&out)
        .into_iter()
        .filter(|l| l["harness"] == "openhands")
        .collect();
    assert_eq!(listed.len(), 1, "{listed:#?}");
    let id = listed[0]["session"].as_str().unwrap();
    assert_eq!(id, state["id"].as_str().unwrap().replace('-', ""));
    assert_eq!(
        listed[0]["title"],
        "compat turn one: run the marker command"
    );
    assert_eq!(listed[0]["cwd"], state["workspace"]["working_dir"]);
    let out = run(
        home.path(),
        &["--root", &root, "resume", &format!("local:openhands/{id}")],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains(&format!(
            "openhands --resume {}",
            state["id"].as_str().unwrap()
        )),
        "{printed}"
    );
}

/// The history aider 0.86.2 wrote over two runs (the second restored the first): read only
/// under the root given, one session named by its first run, with the project as its cwd,
/// the prompts and answers in order among aider's notices, and the model on the answers.
#[test]
fn aider_0_86_2_history_is_one_session_of_prompts_and_answers() {
    let project = fixture_home("aider-0.86.2/project");
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &["ls", "--json", "--harness", "aider"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(ndjson(&out).is_empty(), "no default root: nothing listed");

    let root = format!("aider={}", project.display());
    let out = run(home.path(), &["--root", &root, "ls", "--json", "--long"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed: Vec<Value> = ndjson(&out)
        .into_iter()
        .filter(|l| l["harness"] == "aider")
        .collect();
    assert_eq!(listed.len(), 1, "{listed:#?}");
    // The first run's start, and a hash of the project directory.
    let id = listed[0]["session"].as_str().unwrap();
    assert!(id.starts_with("aider-20261206-033628-"), "{id}");
    assert_eq!(id.len(), "aider-20261206-033628-".len() + 8, "{id}");
    assert_eq!(
        listed[0]["title"],
        "compat turn one: run the marker command"
    );
    assert_eq!(
        listed[0]["cwd"],
        fs::canonicalize(&project).unwrap().to_str().unwrap()
    );
    assert_eq!(listed[0]["writer_version"], "0.86.2");

    let out = run(
        home.path(),
        &[
            "--root",
            &root,
            "read",
            "local:aider/aider-20261206-033628",
            "--all",
            "--json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let recs = records(&ndjson(&out));
    let talk: Vec<(&str, &str)> = recs
        .iter()
        .filter(|r| r["kind"] != "notice")
        .map(|r| (r["kind"].as_str().unwrap(), r["text"].as_str().unwrap()))
        .collect();
    assert_eq!(talk.len(), 4, "{recs:#?}");
    assert_eq!(talk[0], ("user", "compat turn one: run the marker command"));
    assert!(
        talk[1]
            .1
            .starts_with("The command printed compat-42-marker.")
    );
    assert_eq!(talk[2], ("user", "compat turn two: say goodbye"));
    assert_eq!(talk[3], ("assistant", "Goodbye from the compat model."));
    let starts: Vec<&str> = recs
        .iter()
        .filter_map(|r| r["text"].as_str())
        .filter(|t| t.starts_with("aider chat started at "))
        .collect();
    assert_eq!(starts.len(), 2, "one notice per run");
    for r in recs.iter().filter(|r| r["kind"] == "assistant") {
        assert_eq!(r["model"], "openai/compat-model", "{r}");
    }
}
