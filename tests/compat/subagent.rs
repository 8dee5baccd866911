//! A Claude Code subagent as the release under test writes it. The scripted model answers the
//! prompt with an `Agent` call (in the foreground); the subagent, a conversation of its own whose
//! requests carry the task, runs the marker command and answers with the final text (fake
//! secrets); the parent's next request holds that answer, and the turn ends. The reader must
//! list the subagent as `<parent>+agent-<id>`, read both sessions' records as scripted (secrets
//! redacted), and resume the subagent as its parent.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::clis::{BIN, ClaudeScenario};
use crate::server::{self, ToolCall};
use crate::session::ndjson;

/// How long the turn may take (two conversations, one inside the other).
const TURN_TIMEOUT: Duration = Duration::from_secs(180);

/// The parent's prompt; it names neither the task nor the marker.
const PROMPT: &str = "compat subagent: delegate the scripted work";
/// The subagent's task, as the parent's `Agent` call gives it.
const TASK: &str = "compat subagent task: run the marker command";

/// The subagent's requests carry its task: they get the shell call; the parent's get the
/// `Agent` call. (A request whose history holds the marker's output gets the final answer
/// before any picker is asked: `server`'s script.)
fn pick(tools: &[String], body: &str) -> Option<ToolCall> {
    let offered = |name: &str| tools.iter().any(|t| t == name);
    if body.contains(TASK) {
        return offered("Bash").then(|| ToolCall {
            name: "Bash".to_string(),
            args: json!({"command": server::COMMAND, "description": "Print the marker"}),
        });
    }
    offered("Agent").then(|| ToolCall {
        name: "Agent".to_string(),
        args: json!({
            "description": "Run the marker",
            "prompt": TASK,
            "subagent_type": "general-purpose",
            "run_in_background": false,
        }),
    })
}

/// `(kind, text or tool name)` of each record.
fn shown(records: &[Value]) -> Vec<(String, String)> {
    records
        .iter()
        .map(|r| {
            let text = r["text"]
                .as_str()
                .or(r["name"].as_str())
                .unwrap_or_default();
            (r["kind"].as_str().unwrap().to_string(), text.to_string())
        })
        .collect()
}

pub fn claude_delegates_to_a_subagent() {
    let scenario = ClaudeScenario::start("subagent", pick);
    let (server, setup) = (&scenario.server, &scenario.setup);
    let fail = |what: &str| -> ! { scenario.fail(what) };
    scenario.turn(
        &["-p", PROMPT, "--allowedTools", "Agent,Bash"],
        TURN_TIMEOUT,
    );
    if server.called_tools() != ["Agent", "Bash"] {
        fail(&format!("tool calls {:?}", server.called_tools()));
    }

    let reader = |args: &[&str]| -> Vec<Value> {
        let out = setup.command(BIN).args(args).output().unwrap();
        if !out.status.success() {
            fail(&format!(
                "clankie-read {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        ndjson(&out.stdout)
    };
    let listed = reader(&["ls", "--json"]);
    let ids: Vec<&str> = listed
        .iter()
        .filter(|l| l["type"] == "session" && l["harness"] == "claude")
        .map(|l| l["session"].as_str().unwrap())
        .collect();
    let [parent, agent] = ids[..] else {
        fail(&format!("listed {listed:?}"))
    };
    let (parent, agent) = if agent.contains('+') {
        (parent, agent)
    } else {
        (agent, parent)
    };
    assert!(
        agent.starts_with(&format!("{parent}+agent-")),
        "the subagent {agent} is named under its parent {parent}"
    );
    // 2.1.x keeps a subagent in `<parent>/subagents/`.
    let agent_path = listed
        .iter()
        .find(|l| l["session"] == agent)
        .and_then(|l| l["path"].as_str())
        .map(PathBuf::from)
        .unwrap();
    assert!(
        agent_path
            .to_string_lossy()
            .contains(&format!("/{parent}/subagents/")),
        "{}",
        agent_path.display()
    );

    let records = |session: &str| -> Vec<Value> {
        let mut lines = reader(&["read", &format!("local:{session}"), "--all", "--json"]);
        let page = lines.pop().expect("a page line");
        assert_eq!(page["type"], "page", "{page}");
        lines
    };
    let theirs = records(agent);
    let answer = server::final_text();
    let redacted = |text: &str| server::SECRETS.iter().all(|secret| !text.contains(secret));
    assert_eq!(
        shown(&theirs),
        [
            ("user".to_string(), TASK.to_string()),
            ("assistant".to_string(), server::TEXT_1.to_string()),
            ("tool_call".to_string(), "Bash".to_string()),
            ("tool_result".to_string(), String::new()),
            (
                "assistant".to_string(),
                theirs[4]["text"].as_str().unwrap_or_default().to_string()
            ),
        ],
        "the subagent's records: {theirs:#?}"
    );
    assert!(theirs.iter().all(|r| r["session"] == agent));
    assert_eq!(theirs[3]["call_id"], theirs[2]["call_id"]);
    assert!(
        theirs[3]["output"]
            .as_str()
            .unwrap_or_default()
            .contains(server::OUTPUT),
        "{}",
        theirs[3]
    );
    let their_answer = theirs[4]["text"].as_str().unwrap();
    assert!(
        their_answer.contains(server::OUTPUT) && redacted(their_answer),
        "{their_answer} (scripted: {answer})"
    );

    let ours = records(parent);
    let kinds: Vec<String> = shown(&ours).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        kinds,
        ["user", "assistant", "tool_call", "tool_result", "assistant"],
        "the parent's records: {ours:#?}"
    );
    assert_eq!(ours[0]["text"], PROMPT);
    assert_eq!(ours[2]["name"], "Agent");
    assert_eq!(ours[2]["input"]["prompt"], TASK);
    assert_eq!(ours[3]["call_id"], ours[2]["call_id"]);
    // The subagent's answer comes back to the parent as the call's result, redacted.
    let result = ours[3]["output"].as_str().unwrap_or_default();
    assert!(
        result.contains(server::OUTPUT) && redacted(result),
        "{result}"
    );

    // Claude resumes a subagent as the session that started it.
    let printed = setup.ours(&["resume", &format!("local:{agent}")]);
    let printed = String::from_utf8_lossy(&printed);
    assert!(
        printed.contains(&format!("claude --resume {parent}")),
        "{printed}"
    );
}
