//! An agent reads another agent's session through our MCP server: Claude Code, configured with
//! `clankie-read mcp` (`--mcp-config`), is scripted by the model server to call
//! `mcp__clankie__read_session` on a Codex session; Claude runs the tool, and the model request
//! that follows must carry a tool result holding that session's records as
//! `clankie-read read --json` gives them, redacted.
//!
//! The session read is the one Codex 0.171.0 wrote under this suite's own script
//! (`tests/fixtures/codex-0.171.0`): its records hold the script's prompts and the marker's
//! output, so the server answers the request that carries them without a further tool call, and
//! the turn ends.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::clis::{BIN, ClaudeScenario};
use crate::server::{self, ToolCall};
use crate::session::ndjson;

/// How long Claude's turn may take (it starts the MCP server and lists its tools first).
const TURN_TIMEOUT: Duration = Duration::from_secs(180);

/// The Codex session read (the fixture rollout's id).
const CODEX_SESSION: &str = "01a23153-4790-7660-8b79-1ac09239b292";
/// Our `read_session` tool as Claude Code names it: `mcp__<server>__<tool>`.
const READ_TOOL: &str = "mcp__clankie__read_session";
/// The prompt; it names neither the marker's output nor the second prompt, which only the tool's
/// result brings into the conversation.
const PROMPT: &str = "compat mcp: read the codex session through clankie";

/// Claude Code's tool that loads deferred tools. Current releases (2.1.332) defer MCP tools:
/// the first request only names them, in a system message, and offers this tool, whose
/// `select:<name>` query loads a tool's schema so that the next request offers it.
const TOOL_SEARCH: &str = "ToolSearch";

/// Calls `read_session` on the Codex session when the request offers it, else (a release that
/// defers MCP tools) loads it with [`TOOL_SEARCH`].
fn pick_read_session(tools: &[String], _body: &str) -> Option<ToolCall> {
    let offered = |name: &str| tools.iter().any(|t| t == name);
    if offered(READ_TOOL) {
        return Some(ToolCall {
            name: READ_TOOL.to_string(),
            args: json!({"target": format!("local:{CODEX_SESSION}"), "mode": "tail"}),
        });
    }
    offered(TOOL_SEARCH).then(|| ToolCall {
        name: TOOL_SEARCH.to_string(),
        args: json!({"query": format!("select:{READ_TOOL}")}),
    })
}

/// The Codex home holding the session.
fn codex_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex-0.171.0")
}

/// The reader's global options that point it at the Codex home.
fn root_args() -> Vec<String> {
    vec![
        "--root".to_string(),
        format!("codex={}", codex_root().display()),
    ]
}

/// The text of Claude's `tool_result` for its call of [`READ_TOOL`] in an Anthropic Messages
/// request, and whether it is marked an error; `None` when the request carries no such result.
fn read_tool_result(body: &Value) -> Option<(String, bool)> {
    let blocks: Vec<&Value> = body
        .get("messages")?
        .as_array()?
        .iter()
        .filter_map(|m| m.get("content")?.as_array())
        .flatten()
        .collect();
    let call_id = blocks
        .iter()
        .find(|b| b["type"] == "tool_use" && b["name"] == READ_TOOL)?["id"]
        .clone();
    let block = blocks
        .iter()
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == call_id)?;
    let text = match &block["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    };
    Some((text, block["is_error"] == true))
}

pub fn claude_reads_codex() {
    let scenario = ClaudeScenario::start("mcp", pick_read_session);
    let (server, setup) = (&scenario.server, &scenario.setup);
    let fail = |what: &str| -> ! { scenario.fail(what) };

    let mut mcp_args = root_args();
    mcp_args.push("mcp".to_string());
    let config = scenario.home.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"clankie": {"command": BIN, "args": mcp_args}}}).to_string(),
    )
    .unwrap();
    let config = config.to_string_lossy();
    let out = scenario.turn(
        &[
            "-p",
            PROMPT,
            "--mcp-config",
            &config,
            "--strict-mcp-config",
            "--allowedTools",
            READ_TOOL,
        ],
        TURN_TIMEOUT,
    );
    // One call of our tool, after at most one search that loaded it.
    let called = server.called_tools();
    let reads = called.iter().filter(|c| *c == READ_TOOL).count();
    let searches = called.iter().filter(|c| *c == TOOL_SEARCH).count();
    if reads != 1 || searches > 1 || reads + searches != called.len() {
        fail(&format!(
            "tool calls {called:?}: Claude never offered {READ_TOOL} (the MCP server did not start?)"
        ));
    }

    // The request after the tool call carries Claude's result of our tool.
    let (result, is_error) = server
        .log()
        .iter()
        .filter(|l| {
            l.path
                .split('?')
                .next()
                .unwrap_or_default()
                .ends_with("/messages")
        })
        .filter_map(|l| serde_json::from_str::<Value>(&l.body).ok())
        .find_map(|body| read_tool_result(&body))
        .unwrap_or_else(|| fail("no request carries the tool's result"));
    assert!(!is_error, "read_session failed:\n{result}");

    // The same read by the CLI (`--tail`, as the call asked).
    let target = format!("local:{CODEX_SESSION}");
    let roots = root_args();
    let mut args: Vec<&str> = roots.iter().map(String::as_str).collect();
    args.extend(["read", &target, "--tail", "--json"]);
    let mut lines = ndjson(&setup.ours(&args));
    let page = lines.pop().expect("a page line");
    assert_eq!(page["type"], "page", "{page}");
    assert_eq!(lines.len(), 7, "the fixture's records: {lines:#?}");
    // Claude Code (2.1.197, 2.1.332) hands the model the structured result (as JSON text), not
    // the text rendering: it must be the CLI's records and page, field for field.
    let structured: Value = serde_json::from_str(&result)
        .unwrap_or_else(|e| panic!("the tool result is not the structured JSON ({e}):\n{result}"));
    assert_eq!(structured["records"], Value::Array(lines), "{result}");
    assert_eq!(structured["page"], page, "{result}");
    // The fixture holds the fake secrets; the model saw them redacted.
    assert!(result.contains("[REDACTED:anthropic]"), "{result}");
    for secret in server::SECRETS {
        assert!(
            !result.contains(secret),
            "{secret} reached the model:\n{result}"
        );
    }
    // And Claude went on with the answer the result brought.
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(answer.contains(server::TEXT_3), "Claude printed: {answer}");
}
