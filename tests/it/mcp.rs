//! `clankie-read mcp`: the binary spoken to as an MCP client speaks (JSON-RPC lines on stdio),
//! its answers checked against the CLI's `--json` output for the same reads; a second read of
//! an SSH host reuses the connection; hosts not allowed are refused; and the MCP Inspector, a
//! real client, lists and calls every tool.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::sshd::sshd_or_skip;
use crate::common::{require_tool, skip_or_panic};
use crate::support::{clankie, code, fixtures_home, ndjson, page, records, stderr};

/// How long one answer may take before the test fails (a hung server, not a slow one).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// A running `clankie-read mcp`, spoken to line by line.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

impl Server {
    /// Starts `clankie-read ARGS mcp MCP_ARGS` (HOME `home`) and initializes the session.
    fn start(home: &Path, global: &[&str], mcp: &[&str]) -> Server {
        let mut child = clankie(home)
            .args(global)
            .arg("mcp")
            .args(mcp)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn clankie-read mcp");
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut server = Server {
            child,
            stdin,
            lines,
            next_id: 0,
        };
        let init = server.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "clankie-test", "version": "1"}}),
        );
        assert_eq!(
            init["result"]["serverInfo"]["name"], "clankie-read",
            "{init}"
        );
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "{init}"
        );
        server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a raw line and returns the first error that comes back (a request too broken to
    /// be read has no id to answer with).
    fn raw(&mut self, line: &str) -> Value {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        loop {
            let line = self
                .lines
                .recv_timeout(ANSWER_TIMEOUT)
                .unwrap_or_else(|e| panic!("no answer to a broken request: {e}"));
            let message: Value = serde_json::from_str(&line).unwrap();
            if message.get("error").is_some() {
                return message;
            }
        }
    }

    fn answer(&mut self, id: u64) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(ANSWER_TIMEOUT)
                .unwrap_or_else(|e| panic!("no answer to request {id}: {e}"));
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            // Notifications (logging, progress) have no id.
            if message["id"] == id {
                return message;
            }
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.answer(id)
    }

    /// Calls a tool and returns the whole JSON-RPC answer.
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// Calls a tool that must succeed and returns its structured content.
    fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.call(tool, arguments.clone());
        let result = &answer["result"];
        assert_eq!(
            result["isError"], false,
            "{tool} {arguments} failed: {answer}"
        );
        assert!(
            result["content"][0]["text"]
                .as_str()
                .is_some_and(|t| !t.is_empty()),
            "{tool}: a text rendering: {answer}"
        );
        result["structuredContent"].clone()
    }

    /// Closes stdin, waits for the server to exit, and returns its stderr.
    fn finish(mut self) -> String {
        drop(self.stdin.take());
        let mut err = String::new();
        if let Some(mut stderr) = self.child.stderr.take() {
            std::io::Read::read_to_string(&mut stderr, &mut err).unwrap();
        }
        let status = self.child.wait().unwrap();
        assert!(status.success(), "mcp exited with {status}: {err}");
        err
    }
}

/// A copy of the shipped Claude fixtures that the test may change, and its `--root` option.
fn fixture_root(dir: &Path) -> (PathBuf, String) {
    let root = dir.join("claude");
    let status = Command::new("cp")
        .arg("-r")
        .arg(fixtures_home())
        .arg(&root)
        .status()
        .unwrap();
    assert!(status.success());
    let option = format!("claude={}", root.display());
    (root, option)
}

fn cli_json(home: &Path, args: &[&str]) -> Vec<Value> {
    let out = clankie(home).args(args).output().unwrap();
    assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
    ndjson(&out)
}

#[test]
fn every_tool_answers_as_the_cli_does_and_bad_calls_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (root, root_option) = fixture_root(home);
    let global = ["--root", root_option.as_str()];
    let state = home.join("state/mcp.json");
    let mut server = Server::start(home, &global, &["--state", state.to_str().unwrap()]);

    let tools = server.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "list_sessions",
            "read_session",
            "check",
            "search",
            "resume_command"
        ]
    );
    for tool in tools["result"]["tools"].as_array().unwrap() {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert!(tool["description"].as_str().unwrap().len() > 100, "{tool}");
    }

    // list_sessions: the `ls --json --long` objects, newest first.
    let listed = server.ok("list_sessions", json!({"limit": 3}));
    let mut cli = cli_json(
        home,
        &[&global[..], &["ls", "--json", "--long", "-n", "3"]].concat(),
    );
    for line in &mut cli {
        line.as_object_mut().unwrap().remove("type");
    }
    let mut ours = listed["sessions"].as_array().unwrap().clone();
    for line in &mut ours {
        line.as_object_mut().unwrap().remove("type");
    }
    assert_eq!(ours, cli);
    let all = cli_json(home, &[&global[..], &["ls", "--json"]].concat());
    assert_eq!(listed["more"], all.len() - 3);

    // read_session: tail, head and since, as `read --json`.
    for (arguments, cli_args) in [
        (
            json!({"target": "local:short", "limit": 4}),
            vec!["-n", "4"],
        ),
        (
            json!({"target": "local:short", "mode": "head", "limit": 3}),
            vec!["--head", "-n", "3"],
        ),
        (
            json!({"target": "short", "kinds": ["user", "tools"]}),
            vec!["--kind", "user,tools"],
        ),
    ] {
        let read = server.ok("read_session", arguments.clone());
        let cli = cli_json(
            home,
            &[
                &global[..],
                &["read", "local:short", "--json"],
                &cli_args[..],
            ]
            .concat(),
        );
        assert_eq!(
            read["records"].as_array().unwrap(),
            &records(&cli),
            "{arguments}"
        );
        assert_eq!(read["page"], page(&cli), "{arguments}");
    }
    let head = server.ok(
        "read_session",
        json!({"target": "local:short", "mode": "head", "limit": 3}),
    );
    let cursor = head["page"]["cursor"].as_str().unwrap();
    let next = server.ok(
        "read_session",
        json!({"target": "local:short", "mode": "since", "cursor": cursor, "limit": 3}),
    );
    let cli = cli_json(
        home,
        &[
            &global[..],
            &[
                "read",
                "local:short",
                "--json",
                "-n",
                "3",
                "--since",
                cursor,
            ],
        ]
        .concat(),
    );
    assert_eq!(next["records"].as_array().unwrap(), &records(&cli));
    assert_eq!(next["page"], page(&cli));

    // A record over the text bound is cut and marked; the CLI gives it whole.
    let big = "Z".repeat(20_000);
    let long_session = "0b1e0000-0000-4000-8000-000000000001";
    std::fs::create_dir_all(root.join("projects/-mcp-long")).unwrap();
    std::fs::write(
        root.join(format!("projects/-mcp-long/{long_session}.jsonl")),
        format!(
            "{}\n",
            json!({"type": "user", "uuid": "u1", "timestamp": "2026-11-02T10:00:00.000Z",
                   "message": {"role": "user", "content": big}})
        ),
    )
    .unwrap();
    let long = server.ok("read_session", json!({"target": long_session}));
    let record = &long["records"][0];
    assert_eq!(record["truncated"], true, "{record}");
    assert_eq!(record["text"].as_str().unwrap(), &big[..8192]);

    // resume_command: the line `resume` prints.
    let resume = server.ok("resume_command", json!({"target": "local:short"}));
    let out = clankie(home)
        .args(global)
        .args(["resume", "local:short"])
        .output()
        .unwrap();
    assert_eq!(
        format!("{}\n", resume["command"].as_str().unwrap()),
        String::from_utf8(out.stdout).unwrap()
    );

    // check: a baseline, then what grew since, in its own state file.
    let first = server.ok("check", json!({}));
    assert_eq!(first["baseline"], true, "{first}");
    assert!(state.exists());
    let quiet = server.ok("check", json!({"hosts": ["local"]}));
    assert_eq!(quiet["baseline"], false);
    assert_eq!(quiet["activity"], json!([]), "{quiet}");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(root.join(format!("projects/-mcp-long/{long_session}.jsonl")))
        .unwrap();
    writeln!(
        file,
        "{}",
        json!({"type": "user", "uuid": "u2", "timestamp": "2026-11-02T10:01:00.000Z",
               "message": {"role": "user", "content": "and one more"}})
    )
    .unwrap();
    drop(file);
    let grew = server.ok("check", json!({}));
    let activity = grew["activity"].as_array().unwrap();
    assert_eq!(activity.len(), 1, "{grew}");
    assert_eq!(activity[0]["type"], "activity");
    assert_eq!(activity[0]["session"], long_session);
    assert_eq!(activity[0]["change"], "grew");
    assert_eq!(activity[0]["new_records"], 1);

    // search: `grep --json`'s match lines, in its order; `limit` keeps the first and counts
    // the rest; nothing found is an empty answer, not an error.
    let grep_matches = |args: &[&str]| -> Vec<Value> {
        let out = clankie(home)
            .args(global)
            .args(["grep", "--json"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        ndjson(&out)
            .into_iter()
            .filter(|line| line["type"] == "match")
            .collect()
    };
    // A record over the text bound is cut as read_session cuts it (the CLI gives it whole).
    let same_matches = |ours: &Value, cli: &[Value]| {
        let ours = ours.as_array().unwrap();
        assert_eq!(ours.len(), cli.len());
        let mut cut = 0;
        for (ours, cli) in ours.iter().zip(cli) {
            if ours["record"]["truncated"] == true {
                cut += 1;
                assert_eq!(ours["record"]["id"], cli["record"]["id"]);
                // Cut around the first match, marked where it was cut; the match is inside.
                let text = ours["text"].as_str().unwrap();
                assert!(text.len() <= 8192 + 64, "{}", text.len());
                let kept = text
                    .split_once("bytes cut] ")
                    .map_or(text, |(_, kept)| kept);
                let kept = kept.rsplit_once(" [").map_or(kept, |(kept, _)| kept);
                let cli_text = cli["text"].as_str().unwrap();
                assert!(cli_text.contains(kept));
                let span = |line: &Value, text: &str| {
                    let [start, end] = [0, 1].map(|i| line["spans"][0][i].as_u64().unwrap());
                    text[start as usize..end as usize].to_string()
                };
                assert_eq!(span(ours, text), span(cli, cli_text));
            } else {
                assert_eq!(ours, cli);
            }
        }
        cut
    };
    let cli = grep_matches(&["README"]);
    assert!(cli.len() >= 10, "{cli:?}");
    let found = server.ok("search", json!({"pattern": "README", "limit": 200}));
    assert!(same_matches(&found["matches"], &cli) < cli.len());
    assert_eq!(found["more"], 0);
    let first = server.ok("search", json!({"pattern": "README", "limit": 3}));
    same_matches(&first["matches"], &cli[..3]);
    assert_eq!(first["more"], cli.len() - 3);
    let cli = grep_matches(&["-F", "-i", "readme.", "--kind", "tool_call"]);
    assert!(!cli.is_empty());
    let found = server.ok(
        "search",
        json!({"pattern": "readme.", "fixed": true, "ignore_case": true,
               "kinds": ["tool_call"], "harness": "claude", "hosts": ["local"], "limit": 200}),
    );
    same_matches(&found["matches"], &cli);
    let none = server.ok("search", json!({"pattern": "Xyzzy-none"}));
    assert_eq!(none["matches"], json!([]), "{none}");

    // Malformed calls are JSON-RPC errors, and the server goes on.
    for (tool, arguments, says) in [
        ("read_session", json!({"target": 5}), "invalid type"),
        ("read_session", json!({}), "missing field `target`"),
        (
            "read_session",
            json!({"target": "local:short", "no_redact": true}),
            "unknown field `no_redact`",
        ),
        (
            "read_session",
            json!({"target": "local:short", "limit": 201}),
            "limit must be 1 to 200",
        ),
        (
            "read_session",
            json!({"target": "local:short", "mode": "since"}),
            "needs `cursor`",
        ),
        (
            "read_session",
            json!({"target": "local:short", "mode": "since", "cursor": "garbage!"}),
            "cursor",
        ),
        ("read_session", json!({"target": "local:"}), "HOST:SESSION"),
        (
            "list_sessions",
            json!({"harness": "vim"}),
            "unknown harness",
        ),
        ("no_such_tool", json!({}), "unknown tool `no_such_tool`"),
        ("search", json!({"pattern": "("}), "bad pattern"),
        ("search", json!({}), "missing field `pattern`"),
        (
            "search",
            json!({"pattern": "x", "hosts": ["elsewhere"]}),
            "host `elsewhere` is not allowed through MCP",
        ),
        (
            "read_session",
            json!({"target": "elsewhere:short"}),
            "host `elsewhere` is not allowed through MCP",
        ),
        (
            "check",
            json!({"hosts": ["local", "elsewhere"]}),
            "--allow-host elsewhere",
        ),
    ] {
        let answer = server.call(tool, arguments.clone());
        let error = &answer["error"];
        assert_eq!(error["code"], -32602, "{tool} {arguments}: {answer}");
        assert!(
            error["message"].as_str().unwrap().contains(says),
            "{tool} {arguments}: {answer}"
        );
    }
    let answer = server.raw(r#"{"jsonrpc":"2.0","id":900,"method":"tools/call","params":"x"}"#);
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    // A session that is not there is the tool's error, for the model to read, naming the
    // tool that lists the sessions (not a command of the CLI).
    let missing = server.call("read_session", json!({"target": "local:claude/0000000"}));
    assert_eq!(missing["result"]["isError"], true, "{missing}");
    let says = missing["result"]["content"][0]["text"].as_str().unwrap();
    assert!(says.contains("no session"), "{missing}");
    assert!(says.contains("the list_sessions tool"), "{says}");
    assert!(!says.contains("clankie-read"), "{says}");
    // Still serving.
    server.ok("read_session", json!({"target": "local:short", "limit": 1}));
    server.finish();
}

#[test]
fn a_second_read_of_an_ssh_host_reuses_its_connection_and_a_bad_host_stops_nothing() {
    let Some(sshd) = sshd_or_skip() else { return };
    // Its own user: the test drops the user's connections.
    let user = "ck_mcp_warm";
    sshd.add_user(user, Path::new("/bin/sh"));
    let session = "3c900000-0000-4000-8000-00000000a11d";
    let mut body = String::new();
    for i in 0..30 {
        body += &json!({"type": "user", "uuid": format!("mcp-u{i}"),
            "timestamp": "2026-11-02T10:00:00.000Z",
            "message": {"role": "user", "content": format!("prompt {i}")}})
        .to_string();
        body.push('\n');
    }
    sshd.put_file(
        user,
        format!(".claude/projects/-mcp-warm/{session}.jsonl"),
        body.as_bytes(),
    );
    let alias = sshd.alias(user);
    let home = tempfile::tempdir().unwrap();
    let ssh_config = sshd.ssh_config().to_str().unwrap();
    let unreachable = "ck_nobody@127.0.0.1:1";
    let mut server = Server::start(
        home.path(),
        &["--ssh-config", ssh_config, "-v"],
        &[
            "--allow-host",
            &alias,
            "--allow-host",
            unreachable,
            "--state",
            home.path().join("state.json").to_str().unwrap(),
        ],
    );
    let target = format!("{alias}:{session}");
    let first = server.ok(
        "read_session",
        json!({"target": target, "mode": "head", "limit": 10}),
    );
    let cursor = first["page"]["cursor"].as_str().unwrap().to_string();
    // A host that cannot be reached fails its own call only.
    let down = server.call("list_sessions", json!({"host": unreachable}));
    assert_eq!(down["result"]["isError"], true, "{down}");
    let second = server.ok(
        "read_session",
        json!({"target": target, "mode": "since", "cursor": cursor, "limit": 10}),
    );
    let refused = server.call("list_sessions", json!({"host": sshd.alias("ck_sh")}));
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is not allowed through MCP"),
        "{refused}"
    );
    // `check` goes on past a host that fails, on the same warm connection for the other.
    let checked = server.ok("check", json!({"hosts": [alias, unreachable]}));
    assert_eq!(checked["baseline"], true, "{checked}");
    let failed = checked["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{checked}");
    assert_eq!(failed[0]["host"], unreachable);
    let authentications = |log: &str| {
        log.lines()
            .filter(|l| l.contains(&format!("{alias}: authenticating as")))
            .count()
    };
    // A warm connection the other side dropped: the call reconnects once and answers.
    assert!(sshd.kill_connections_of(user) >= 1);
    let again = server.ok(
        "read_session",
        json!({"target": target, "mode": "since", "cursor": cursor, "limit": 10}),
    );
    assert_eq!(again["records"], second["records"]);
    let log = server.finish();
    // `-v` tells each connection's story once: one authentication for two reads and a check,
    // one more after the connection was dropped.
    assert_eq!(authentications(&log), 2, "{log}");

    let cli = cli_json(
        home.path(),
        &[
            "--ssh-config",
            ssh_config,
            "read",
            &target,
            "--json",
            "-n",
            "10",
            "--since",
            &cursor,
        ],
    );
    assert_eq!(second["records"].as_array().unwrap(), &records(&cli));
    assert_eq!(second["page"], page(&cli));
    assert_eq!(second["records"][0]["id"], "mcp-u10#0");
}

/// The MCP Inspector release the test drives (pinned: its CLI's output is what is parsed).
const INSPECTOR: &str = "@modelcontextprotocol/inspector@0.15.0";

/// Installs the MCP Inspector (npm) into a cache dir under the target directory; `None` (or a
/// panic under CI) when it cannot be.
fn inspector() -> Option<PathBuf> {
    if !require_tool("npm") || !require_tool("node") {
        return None;
    }
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-inspector-0.15.0");
    let bin = cache.join("node_modules/.bin/mcp-inspector");
    if bin.exists() {
        return Some(bin);
    }
    std::fs::create_dir_all(&cache).unwrap();
    let out = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(&cache)
        .arg(INSPECTOR)
        .output()
        .unwrap();
    if !out.status.success() || !bin.exists() {
        let why = format!(
            "cannot install @modelcontextprotocol/inspector: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        skip_or_panic(&why);
        return None;
    }
    Some(bin)
}

#[test]
fn the_mcp_inspector_lists_and_calls_every_tool() {
    let Some(bin) = inspector() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (_, root_option) = fixture_root(dir.path());
    let state = dir.path().join("state.json");
    let inspect = |method: &[&str]| -> Value {
        let out = Command::new(&bin)
            .env("HOME", dir.path())
            .args([
                "--cli",
                crate::support::BIN,
                "--root",
                &root_option,
                "mcp",
                "--state",
            ])
            .arg(&state)
            .args(method)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{method:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{method:?}: not JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    };
    let listed = inspect(&["--method", "tools/list"]);
    assert_eq!(listed["tools"].as_array().unwrap().len(), 5, "{listed}");
    let call = |tool: &str, args: &[&str]| -> Value {
        let mut method = vec!["--method", "tools/call", "--tool-name", tool];
        for arg in args {
            method.extend(["--tool-arg", arg]);
        }
        let result = inspect(&method);
        assert_ne!(result["isError"], true, "{tool}: {result}");
        result
    };
    let sessions = call("list_sessions", &["limit=2"]);
    assert_eq!(
        sessions["structuredContent"]["sessions"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "{sessions}"
    );
    let read = call(
        "read_session",
        &["target=local:short", "mode=head", "limit=3"],
    );
    let records = read["structuredContent"]["records"].as_array().unwrap();
    assert_eq!(records.len(), 3, "{read}");
    assert_eq!(read["structuredContent"]["page"]["more"], true);
    let check = call("check", &[]);
    assert_eq!(check["structuredContent"]["baseline"], true, "{check}");
    let search = call("search", &["pattern=README", "limit=2"]);
    assert_eq!(
        search["structuredContent"]["matches"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "{search}"
    );
    let resume = call("resume_command", &["target=local:short"]);
    assert!(
        resume["structuredContent"]["command"]
            .as_str()
            .unwrap()
            .contains("claude --resume short"),
        "{resume}"
    );
}

/// `read_session` finds the session and reads its first window in one exec, as the CLI's read
/// does: a small session over SSH is one command on the (new) connection, not a listing and
/// then a read.
#[test]
fn a_read_of_a_small_ssh_session_is_one_exec() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_mcp_one_exec";
    sshd.add_user(user, Path::new("/bin/sh"));
    let session = "3c900000-0000-4000-8000-00000000e7ec";
    let line = json!({"type": "user", "uuid": "mcp-one", "timestamp": "2026-11-02T10:00:00.000Z",
        "message": {"role": "user", "content": "one exec"}})
    .to_string();
    sshd.put_file(
        user,
        format!(".claude/projects/-mcp-one/{session}.jsonl"),
        format!("{line}\n").as_bytes(),
    );
    let alias = sshd.alias(user);
    let home = tempfile::tempdir().unwrap();
    let ssh_config = sshd.ssh_config().to_str().unwrap();
    let mut server = Server::start(
        home.path(),
        &["--ssh-config", ssh_config, "-v"],
        &["--allow-host", &alias],
    );
    let read = server.ok(
        "read_session",
        json!({"target": format!("{alias}:{session}"), "mode": "tail"}),
    );
    assert_eq!(read["records"][0]["id"], "mcp-one#0", "{read}");
    let log = server.finish();
    let execs = log
        .lines()
        .filter(|l| l.contains(&format!("{alias}: exec on our own connection")))
        .count();
    assert_eq!(execs, 1, "{log}");
}

/// A transcript of `n` prompts of about `text_len` bytes each.
fn prompts(n: usize, text_len: usize, tag: &str) -> String {
    let mut body = String::new();
    for i in 0..n {
        body += &json!({"type": "user", "uuid": format!("{tag}-u{i}"),
            "timestamp": "2026-11-02T10:00:00.000Z",
            "message": {"role": "user", "content": format!("{tag} prompt {i} {}", "x".repeat(text_len))}})
        .to_string();
        body.push('\n');
    }
    body
}

/// How many commands the server ran on its own connection to `alias` (execs, and scripts on
/// the shell it keeps there), and how many times it authenticated there, from its `-v` log.
fn execs_and_connections(log: &str, alias: &str) -> (usize, usize) {
    (
        count_said(log, alias, "exec on our own connection")
            + count_said(log, alias, "kept shell: script of"),
        count_said(log, alias, "authenticating as"),
    )
}

/// How many of the `-v` log's lines say `what` of `alias`.
fn count_said(log: &str, alias: &str, what: &str) -> usize {
    log.lines()
        .filter(|l| l.contains(&format!("{alias}: {what}")))
        .count()
}

/// A warm `read_session` of an SSH session reads it from its kept resolution: no new
/// connection, no listing, and a tail sized by `limit` from the last read, so one command on
/// the host per call, where the first (cold) call needs more (its tail widens past the default
/// first window). Once the shell kept on the connection is open, a warm call's script runs
/// there (no exec). The pages are the CLI's.
#[test]
fn a_warm_read_of_an_ssh_session_is_one_exec_on_the_same_connection() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_mcp_kept";
    sshd.add_user(user, Path::new("/bin/sh"));
    let session = "3c900000-0000-4000-8000-0000000c0ded";
    // 120 prompts of ~3 KiB: 50 of them are past the default first window (64 KiB).
    sshd.put_file(
        user,
        format!(".claude/projects/-mcp-kept/{session}.jsonl"),
        prompts(120, 3000, "kept").as_bytes(),
    );
    let alias = sshd.alias(user);
    let home = tempfile::tempdir().unwrap();
    let ssh_config = sshd.ssh_config().to_str().unwrap();
    let target = format!("{alias}:{session}");
    let tail = |limit: u64| json!({"target": target, "mode": "tail", "limit": limit});
    let start = || {
        Server::start(
            home.path(),
            &["--ssh-config", ssh_config, "-v"],
            &["--allow-host", &alias],
        )
    };

    // What a cold read costs, alone.
    let mut cold = start();
    let first = cold.ok("read_session", tail(50));
    let (cold_execs, connections) = execs_and_connections(&cold.finish(), &alias);
    assert_eq!(connections, 1);
    assert!(cold_execs >= 2, "the cold tail widens: {cold_execs} execs");

    // The same read, then three warm ones (the last with a smaller limit).
    let mut server = start();
    assert_eq!(server.ok("read_session", tail(50)), first);
    let warm = server.ok("read_session", tail(50));
    assert_eq!(server.ok("read_session", tail(50)), warm);
    let small = server.ok("read_session", tail(5));
    let log = server.finish();
    assert_eq!(
        execs_and_connections(&log, &alias),
        (cold_execs + 3, 1),
        "one command per warm call, on the first connection: {log}"
    );
    assert!(
        count_said(&log, &alias, "kept shell: script of") >= 2,
        "the warm calls after the first run on the kept shell: {log}"
    );

    for (read, limit) in [(&warm, "50"), (&small, "5")] {
        let cli = cli_json(
            home.path(),
            &[
                "--ssh-config",
                ssh_config,
                "read",
                &target,
                "--json",
                "-n",
                limit,
            ],
        );
        assert_eq!(read["records"].as_array().unwrap(), &records(&cli));
        assert_eq!(read["page"], page(&cli));
    }
    assert_eq!(warm["records"][49]["id"], "kept-u119#0");
}

/// A session the server keeps (its resolution) that is rewritten, moved or removed between
/// two calls is never read stale: a rewrite in place is caught by the cursor's hashes (the
/// page says `reset`, as the CLI's does), a moved one is found again at its new place, a
/// removed one is not found, and one put back is read again.
#[test]
fn a_kept_session_rewritten_moved_or_removed_is_read_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (root, root_option) = fixture_root(home);
    let global = ["--root", root_option.as_str()];
    let mut server = Server::start(
        home,
        &global,
        &["--state", home.join("state.json").to_str().unwrap()],
    );
    let session = "0b1e0000-0000-4000-8000-00000000a9a1";
    let path = root.join(format!("projects/-mcp-kept/{session}.jsonl"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, prompts(10, 10, "before")).unwrap();
    let target = format!("local:{}", &session[..12]);
    let as_cli = |server: &mut Server, arguments: Value, cli_args: &[&str]| {
        let read = server.ok("read_session", arguments.clone());
        let cli = cli_json(
            home,
            &[&global[..], &["read", &target, "--json"], cli_args].concat(),
        );
        assert_eq!(
            read["records"].as_array().unwrap(),
            &records(&cli),
            "{arguments}"
        );
        assert_eq!(read["page"], page(&cli), "{arguments}");
        read
    };
    let first = as_cli(
        &mut server,
        json!({"target": target, "limit": 5}),
        &["-n", "5"],
    );
    assert_eq!(first["records"][4]["id"], "before-u9#0");
    let cursor = first["page"]["cursor"].as_str().unwrap().to_string();

    // Rewritten in place (longer, so the cursor's position is still inside it).
    std::fs::write(&path, prompts(12, 10, "after")).unwrap();
    let since = as_cli(
        &mut server,
        json!({"target": target, "mode": "since", "cursor": cursor, "limit": 50}),
        &["--since", &cursor, "-n", "50"],
    );
    assert_eq!(since["page"]["reset"], true, "{since}");
    assert!(
        since["records"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == "after-u0#0"),
        "{since}"
    );
    let tail = as_cli(
        &mut server,
        json!({"target": target, "limit": 3}),
        &["-n", "3"],
    );
    assert_eq!(tail["records"][2]["id"], "after-u11#0");

    // Moved to another project: found again where it is now.
    let moved = root.join(format!("projects/-mcp-moved/{session}.jsonl"));
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&path, &moved).unwrap();
    std::fs::remove_dir(path.parent().unwrap()).unwrap();
    let found = as_cli(
        &mut server,
        json!({"target": target, "limit": 3}),
        &["-n", "3"],
    );
    assert_eq!(found["records"], tail["records"]);

    // Removed: not found, as the CLI says.
    std::fs::remove_file(&moved).unwrap();
    let gone = server.call("read_session", json!({"target": target}));
    assert_eq!(gone["result"]["isError"], true, "{gone}");
    assert!(
        gone["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("no session"),
        "{gone}"
    );
    // Put back: read again.
    std::fs::write(&moved, prompts(2, 10, "back")).unwrap();
    let back = as_cli(&mut server, json!({"target": target}), &[]);
    assert_eq!(back["records"][1]["id"], "back-u1#0");
    server.finish();
}

/// The shell kept on a warm connection that dies between two calls (killed on the host) costs
/// the next call nothing but an exec of its own, on the same connection, with the same page;
/// the calls after it run on a kept shell again, and two calls at once both answer.
#[test]
fn a_kept_shell_that_died_leaves_the_call_to_an_exec() {
    let Some(sshd) = sshd_or_skip() else { return };
    // Its own user: the test kills the user's shells.
    let user = "ck_mcp_kept_dies";
    sshd.add_user(user, Path::new("/bin/sh"));
    let session = "3c900000-0000-4000-8000-0000000de1d5";
    sshd.put_file(
        user,
        format!(".claude/projects/-mcp-dies/{session}.jsonl"),
        prompts(40, 200, "dies").as_bytes(),
    );
    let alias = sshd.alias(user);
    let home = tempfile::tempdir().unwrap();
    let ssh_config = sshd.ssh_config().to_str().unwrap();
    let target = format!("{alias}:{session}");
    let tail = json!({"target": target, "mode": "tail", "limit": 10});
    let mut server = Server::start(
        home.path(),
        &["--ssh-config", ssh_config, "-v"],
        &["--allow-host", &alias],
    );
    // The first call settles the host's dialect, which opens the kept shell; the second runs
    // on it.
    let first = server.ok("read_session", tail.clone());
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(server.ok("read_session", tail.clone()), first);
    assert!(sshd.kill_shells_of(user) >= 1);
    // This one finds the shell gone and runs as an exec, the next on a kept shell again.
    assert_eq!(server.ok("read_session", tail.clone()), first);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(server.ok("read_session", tail.clone()), first);
    // Two calls at once: one on the kept shell, the other as an exec; both answer the page.
    let ids = [server.next_id + 1, server.next_id + 2];
    server.next_id += 2;
    for id in ids {
        server.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "read_session", "arguments": tail}}));
    }
    let mut answered = 0;
    while answered < 2 {
        let line = server.lines.recv_timeout(ANSWER_TIMEOUT).unwrap();
        let message: Value = serde_json::from_str(&line).unwrap();
        if ids.iter().any(|&id| message["id"] == id) {
            assert_eq!(message["result"]["structuredContent"], first, "{message}");
            answered += 1;
        }
    }
    let log = server.finish();
    assert_eq!(count_said(&log, &alias, "authenticating as"), 1, "{log}");
    // The second call, the one after the shell that died, and one or both of the two at once
    // (the other, when it came while the first ran, as an exec).
    let on_kept = count_said(&log, &alias, "kept shell: script of");
    assert!(
        (3..=4).contains(&on_kept),
        "{on_kept} calls ran on a kept shell: {log}"
    );
    assert!(
        log.contains(&format!("{alias}: kept shell: the shell")),
        "the dead shell is said: {log}"
    );
    assert!(
        log.contains("the command runs as an exec"),
        "the call ran as an exec: {log}"
    );
}

/// A host no call used for `--idle-timeout` is closed; the next call connects again (and
/// finds the session again: what was kept of it went with the host).
#[test]
fn an_idle_connection_is_closed_and_the_next_call_reconnects() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_mcp_idle";
    sshd.add_user(user, Path::new("/bin/sh"));
    let session = "3c900000-0000-4000-8000-0000000001d1";
    sshd.put_file(
        user,
        format!(".claude/projects/-mcp-idle/{session}.jsonl"),
        prompts(3, 10, "idle").as_bytes(),
    );
    let alias = sshd.alias(user);
    let home = tempfile::tempdir().unwrap();
    let ssh_config = sshd.ssh_config().to_str().unwrap();
    let mut server = Server::start(
        home.path(),
        &["--ssh-config", ssh_config, "-v"],
        &["--allow-host", &alias, "--idle-timeout", "0.3"],
    );
    let target = format!("{alias}:{session}");
    let first = server.ok("read_session", json!({"target": target}));
    // Well past the idle time (the server looks every 100 ms).
    std::thread::sleep(Duration::from_secs(2));
    let again = server.ok("read_session", json!({"target": target}));
    assert_eq!(again, first);
    let log = server.finish();
    let (execs, connections) = execs_and_connections(&log, &alias);
    assert_eq!(connections, 2, "{log}");
    assert_eq!(
        execs, 2,
        "each call on its new connection finds and reads at once: {log}"
    );
}

/// `read_session` with `@latest` reads the host's newest session, looked for again by every
/// call (a session that became the newest is found, not the one a call before resolved).
#[test]
fn read_session_at_latest_reads_the_newest_session_each_call() {
    use crate::latest::{NEWER, OLDER, age, home, line};
    let dir = tempfile::tempdir().unwrap();
    let (older, _) = home(dir.path());
    let mut server = Server::start(dir.path(), &[], &[]);
    let read = server.ok("read_session", json!({"target": "local:@latest"}));
    assert_eq!(read["page"]["session"], NEWER, "{read}");
    let read = server.ok("read_session", json!({"target": "@latest/claude"}));
    assert_eq!(read["page"]["session"], NEWER, "{read}");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&older)
        .unwrap();
    file.write_all(line("o2", "back to it").as_bytes()).unwrap();
    drop(file);
    age(&older, Duration::from_secs(1));
    let read = server.ok("read_session", json!({"target": "local:@latest"}));
    assert_eq!(read["page"]["session"], OLDER, "{read}");
    server.finish();
}

/// `search` gives the match inside the text it returns however far into a long record it
/// lies (cut around it, marked), and a host that fails is named once in what it says.
#[test]
fn search_cuts_around_the_match_and_names_a_failed_host_once() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join(".claude/projects/-w");
    std::fs::create_dir_all(&project).unwrap();
    let long = format!("{}NEEDLE-42{}", "a".repeat(15_000), " b".repeat(5_000));
    let line = json!({"type":"user","uuid":"u1","timestamp":"2026-12-01T10:00:00Z",
        "message":{"role":"user","content":long}});
    std::fs::write(project.join("eeeeeeee-0001.jsonl"), format!("{line}\n")).unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let hosts = dir.path().join("hosts.toml");
    std::fs::write(
        &hosts,
        format!("[hosts.down]\nssh = \"nobody@127.0.0.1:{closed}\"\n"),
    )
    .unwrap();
    let hosts = hosts.display().to_string();
    let mut server = Server::start(dir.path(), &["--hosts", &hosts], &["--allow-host", "down"]);
    let found = server.ok(
        "search",
        json!({"pattern": "NEEDLE-[0-9]+", "hosts": ["local", "down"]}),
    );
    let matched = &found["matches"][0];
    let text = matched["text"].as_str().unwrap();
    let [start, end] = [0, 1].map(|i| matched["spans"][0][i].as_u64().unwrap() as usize);
    assert_eq!(&text[start..end], "NEEDLE-42", "{text}");
    assert!(
        text.starts_with("[… ") && text.ends_with(" bytes cut …]"),
        "{text}"
    );
    assert!(text.len() <= 8192 + 64);
    assert_eq!(matched["record"]["truncated"], true);
    assert!(
        matched["record"]["text"]
            .as_str()
            .unwrap()
            .contains("NEEDLE-42"),
        "{matched}"
    );
    let failed = &found["failed"][0];
    assert_eq!(failed["host"], "down", "{found}");
    let message = failed["message"].as_str().unwrap();
    assert!(!message.starts_with("down:"), "{message}");
    server.finish();
}

/// The peak resident memory of process `pid` in KiB (`VmHWM`), where the system says it.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// What the server may hold at its peak while refusing the hostile requests below: its own
/// working set plus one request of at most 4 MiB (`docs/mcp.md`) and its parse.
const MCP_PEAK_RSS_KIB: u64 = 64 * 1024;

#[test]
fn malformed_oversized_and_too_deep_requests_each_get_their_json_rpc_error() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (_root, root_option) = fixture_root(home);
    let state = home.join("state/mcp.json");
    let mut server = Server::start(
        home,
        &["--root", root_option.as_str()],
        &["--state", state.to_str().unwrap()],
    );
    let call = |id: &str, arguments: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"search","arguments":{arguments}}}}}"#
        )
    };
    let hundred_mb = call(
        "8",
        &format!(r#"{{"pattern":"{}"}}"#, "a".repeat(100 << 20)),
    );
    let deep = call(
        "9",
        &format!(
            r#"{{"pattern":{}1{}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        ),
    );
    // The id past the first 64 KiB of a line too long cannot be read: `null`.
    let late_id = format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"x":"{}"}},"id":10}}"#,
        "b".repeat(5 << 20)
    );
    let cases: Vec<(&str, String, i64, Value)> = vec![
        (
            "malformed",
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/ca"#.into(),
            -32700,
            json!(7),
        ),
        ("not JSON", "hello".into(), -32700, Value::Null),
        ("100 MB", hundred_mb, -32600, json!(8)),
        ("100,000 deep", deep, -32600, json!(9)),
        ("id past 64 KiB", late_id, -32600, Value::Null),
        (
            "not a request",
            r#"{"jsonrpc":"2.0","id":"s","method":5}"#.into(),
            -32600,
            json!("s"),
        ),
    ];
    for (what, line, code, id) in cases {
        let answer = server.raw(&line);
        assert_eq!(answer["error"]["code"], code, "{what}: {answer}");
        assert_eq!(answer["id"], id, "{what}: {answer}");
        // And the next request is answered.
        let ok = server.request("tools/list", json!({}));
        assert!(ok["result"]["tools"].is_array(), "{what}, then: {ok}");
    }
    #[cfg(target_os = "linux")]
    {
        let peak = peak_rss_kib(server.child.id()).expect("VmHWM");
        eprintln!("mcp peak RSS after the hostile requests: {peak} KiB");
        assert!(
            peak <= MCP_PEAK_RSS_KIB,
            "peak RSS {peak} KiB over {MCP_PEAK_RSS_KIB} KiB"
        );
    }
    server.finish();
}

#[test]
fn mcp_store_searches_the_store_as_the_hosts_are_searched() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (_, root_option) = fixture_root(home);
    let global = ["--root", root_option.as_str()];
    let store = format!("sqlite:{}", home.join("store.db").display());
    cli_json(
        home,
        &[&global[..], &["sync", "--json", "--into", &store, "local"]].concat(),
    );
    let state = home.join("state/mcp.json");
    let state_args = ["--state", state.to_str().unwrap()];
    let mut hosts = Server::start(home, &global, &state_args);
    let mut stored = Server::start(
        home,
        &[],
        &[&state_args[..], &["--store", store.as_str()]].concat(),
    );
    for arguments in [
        json!({"pattern": "README", "limit": 200}),
        json!({"pattern": "README", "limit": 3}),
        json!({"pattern": "readme.", "fixed": true, "ignore_case": true,
               "kinds": ["tool_call"], "hosts": ["local"], "limit": 200}),
        json!({"pattern": "Xyzzy-none"}),
    ] {
        let from_hosts = hosts.ok("search", arguments.clone());
        let from_store = stored.ok("search", arguments.clone());
        assert_eq!(from_store, from_hosts, "{arguments}");
    }
    hosts.finish();
    stored.finish();
}
