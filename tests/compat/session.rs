//! One CLI's scripted session and every check on what it wrote: `ls` finds it; `--all --json`
//! gives exactly the scripted records; secrets are redacted; `--head`/`--since` paging equals
//! `--all`; a cursor taken before the resume continues with exactly the new records; `--follow`
//! during the resumed turn prints each record once (turn one's, for a CLI that cannot resume
//! offline); `resume` prints a command the CLI accepts;
//! and the same reads over the test sshd give the same records.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::clis::{BIN, Cli, Setup};
use crate::server::{self, ModelServer};

/// How long one CLI turn may take (first runs install OpenCode's provider package).
const TURN_TIMEOUT: Duration = Duration::from_secs(180);

/// Where `scripts/compat` installed the CLIs (`CLANKIE_COMPAT_DIR`, an npm prefix).
pub fn install_dir() -> PathBuf {
    let dir = std::env::var_os("CLANKIE_COMPAT_DIR")
        .unwrap_or_else(|| panic!("CLANKIE_COMPAT_DIR is not set: run scripts/compat"));
    PathBuf::from(dir)
}

pub struct Suite<'c> {
    cli: &'c Cli,
    server: ModelServer,
    setup: Setup,
    _home: tempfile::TempDir,
}

/// CLIs that offer the model no tools (their session is prompt and answer, among notices of
/// their own output), and that have no default root: the reader is given their project
/// directory (`--root HARNESS=DIR`).
const ANSWER_ONLY: &[&str] = &["aider"];

/// A record as the checks compare it: everything but the host-bound fields.
fn comparable(record: &Value) -> Value {
    let mut r = record.clone();
    if let Some(map) = r.as_object_mut() {
        map.remove("host");
    }
    r
}

impl<'c> Suite<'c> {
    pub fn new(cli: &'c Cli) -> Suite<'c> {
        let install = install_dir();
        let server = ModelServer::start(cli.pick);
        // Not under /tmp: Codex refuses to make its helper links under a temporary directory.
        let home = tempfile::Builder::new()
            .prefix(&format!("compat-{}-", cli.harness))
            // CLANKIE_COMPAT_KEEP=1 keeps the HOMEs (and what the CLIs wrote) for a look.
            .disable_cleanup(std::env::var_os("CLANKIE_COMPAT_KEEP").is_some())
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let setup = cli.prepare(home.path(), server.port, &install);
        assert!(
            setup.on_path(cli.bin),
            "{} is not installed in {} (CLANKIE_COMPAT_DIR): run scripts/compat",
            cli.bin,
            install.display()
        );
        Suite {
            cli,
            server,
            setup,
            _home: home,
        }
    }

    fn fail(&self, what: &str) -> ! {
        let full: String = self
            .server
            .log()
            .iter()
            .map(|l| format!("{} {} -> {}\n{}\n\n", l.method, l.path, l.step, l.body))
            .collect();
        let dump =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("compat-{}.log", self.cli.harness));
        let _ = std::fs::write(&dump, full);
        panic!(
            "{}: {what}\n--- model server log (whole bodies in {}) ---\n{}",
            self.cli.harness,
            dump.display(),
            self.server.describe()
        )
    }

    /// Runs a CLI turn to completion (typing `prompt` into a CLI driven through its terminal
    /// UI); fails with its output and the server's log.
    fn turn(&self, cmd: &mut Command, prompt: &str, what: &str) -> Output {
        let out = match self.cli.terminal {
            Some(dialog) => crate::terminal::run(cmd, dialog, prompt, TURN_TIMEOUT),
            None => crate::common::run_with_stdin(cmd, b"", TURN_TIMEOUT),
        };
        crate::clis::end_leftovers(&self.setup.home);
        if !out.status.success() {
            self.fail(&format!(
                "{what} failed ({}):\nstdout: {}\nstderr: {}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        out
    }

    /// The reader under the CLI's environment (its HOME and root variables).
    fn reader(&self, args: &[&str]) -> Command {
        let mut cmd = self.setup.command(BIN);
        if self.answer_only() && !args.contains(&"--root") {
            cmd.arg("--root").arg(format!(
                "{}={}",
                self.cli.harness,
                self.setup.work.display()
            ));
        }
        cmd.args(args);
        cmd
    }

    fn answer_only(&self) -> bool {
        ANSWER_ONLY.contains(&self.cli.harness)
    }

    /// The records a check of a turn compares: every one, but an answer-only CLI's notices
    /// (its own output: version, model, token counts) left out.
    fn conversation<'r>(&self, records: &'r [Value]) -> Vec<&'r Value> {
        records
            .iter()
            .filter(|r| !(self.answer_only() && r["kind"] == "notice"))
            .collect()
    }

    fn read_ok(&self, args: &[&str]) -> Vec<Value> {
        let out = self
            .reader(args)
            .output()
            .unwrap_or_else(|e| panic!("running the reader: {e}"));
        if !out.status.success() {
            self.fail(&format!(
                "clankie-read {args:?} exited {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        ndjson(&out.stdout)
    }

    pub fn run(self) {
        let h = self.cli.harness;
        // Turn one.
        let mut first = self.cli.first_turn(&self.setup, server::PROMPT_1);
        self.turn(&mut first, server::PROMPT_1, "the first turn");
        let calls = self.server.tool_calls().len();
        if self.answer_only() {
            if calls != 0 || !self.server.log().iter().any(|l| l.step == "answer") {
                self.fail("the CLI never sent the first prompt, or was offered a tool");
            }
        } else if calls != 1 {
            self.fail(&format!(
                "{calls} tool calls: the CLI never ran the tool or never offered it"
            ));
        }

        // `ls` finds exactly one session of this harness.
        let listed: Vec<Value> = self
            .read_ok(&["ls", "--json"])
            .into_iter()
            .filter(|l| l["type"] == "session" && l["harness"] == h)
            .collect();
        if listed.len() != 1 {
            self.fail(&format!("ls lists {} sessions: {listed:#?}", listed.len()));
        }
        let id = listed[0]["session"].as_str().unwrap().to_string();
        let target = format!("local:{h}/{id}");

        // `--all --json`: exactly the scripted records.
        let (all, page) = split(self.read_ok(&["read", &target, "--all", "--json"]));
        self.check_turn_one(&all);
        assert_eq!(page["more"], false, "{h}: {page}");
        assert_eq!(page["pending_tail"], false, "{h}: {page}");
        let cursor = page["cursor"].as_str().unwrap().to_string();

        // Secrets: the CLI wrote them (the unredacted read has them); the reader hides them.
        let raw = serde_json::to_string(
            &split(self.read_ok(&["read", &target, "--all", "--json", "--no-redact"])).0,
        )
        .unwrap();
        let shown = serde_json::to_string(&all).unwrap();
        for secret in server::SECRETS {
            assert!(raw.contains(secret), "{h}: the transcript lacks {secret}");
            assert!(
                !shown.contains(secret),
                "{h}: {secret} is not redacted:\n{shown}"
            );
        }

        self.check_paging(&target, &all);

        // `resume` prints a command; made non-interactive, it runs turn two. Meanwhile
        // `--follow` prints what the CLI appends.
        let printed = self.resume_command(&target);
        let Some(resume_noninteractive) = self.cli.resume_noninteractive else {
            // No second turn without the vendor's service: `--follow` prints turn one once.
            let follow = Follow::start(self.reader(&[
                "read",
                &target,
                "--follow",
                "--json",
                "--all",
                "--interval",
                "0.2",
            ]));
            let followed = follow.finish(all.len(), Duration::from_secs(15));
            assert_eq!(
                strip(&followed),
                strip(&all),
                "{h}: --follow printed {followed:#?}"
            );
            self.check_ssh(&id, &all);
            return;
        };
        let follow = Follow::start(self.reader(&[
            "read",
            &target,
            "--follow",
            "--json",
            "--all",
            "--interval",
            "0.2",
        ]));
        let quoted = format!("'{}'", server::PROMPT_2);
        let line = resume_noninteractive(&printed, &quoted);
        self.turn(
            &mut self.setup.shell(&line),
            server::PROMPT_2,
            &format!("the resumed turn `{line}`"),
        );
        if !self.server.log().iter().any(|l| l.step == "second") {
            self.fail(&format!("`{line}` never sent the second prompt"));
        }

        // Turn two: still one session; the cursor from before continues with the new records.
        let ids_now: Vec<Value> = self
            .read_ok(&["ls", "--json"])
            .into_iter()
            .filter(|l| l["type"] == "session" && l["harness"] == h)
            .collect();
        assert_eq!(
            ids_now.len(),
            1,
            "{h}: the resume made a second session: {ids_now:#?}"
        );
        assert_eq!(
            ids_now[0]["session"],
            id.as_str(),
            "{h}: the id changed on resume"
        );
        let (all2, _) = split(self.read_ok(&["read", &target, "--all", "--json"]));
        let (after, _) = split(self.read_ok(&[
            "read", &target, "--since", &cursor, "--json", "--limit", "200",
        ]));
        assert_eq!(
            strip(&all2[all.len()..]),
            strip(&after),
            "{h}: the cursor from before the resume does not continue with the new records"
        );
        assert_eq!(
            strip(&all2[..all.len()]),
            strip(&all),
            "{h}: turn one changed on resume"
        );
        self.check_turn_two(&after);
        self.check_paging(&target, &all2);

        // `--follow`: each record once, all of them, as `--all` gives them afterwards (a record
        // printed while still being written, without its final model or usage, would differ).
        let followed = follow.finish(all2.len(), Duration::from_secs(15));
        let followed_ids: Vec<&Value> = followed.iter().map(|r| &r["id"]).collect();
        let all_ids: Vec<&Value> = all2.iter().map(|r| &r["id"]).collect();
        assert_eq!(followed_ids, all_ids, "{h}: --follow printed {followed:#?}");
        assert_eq!(
            strip(&followed),
            strip(&all2),
            "{h}: --follow printed a record otherwise than --all gives it"
        );

        self.check_ssh(&id, &all2);
    }

    fn resume_command(&self, target: &str) -> String {
        let out = self.reader(&["resume", target]).output().unwrap();
        assert!(
            out.status.success(),
            "{}: resume: {}",
            self.cli.harness,
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let command = text.lines().last().unwrap_or_default().trim().to_string();
        assert!(
            command.starts_with(self.cli.bin) || command.contains(&format!(" {} ", self.cli.bin)),
            "{}: resume printed {text:?}",
            self.cli.harness
        );
        command
    }

    fn check_turn_one(&self, records: &[Value]) {
        let h = self.cli.harness;
        if self.answer_only() {
            let records = self.conversation(records);
            let kinds: Vec<&str> = records
                .iter()
                .map(|r| r["kind"].as_str().unwrap())
                .collect();
            assert_eq!(kinds, ["user", "assistant"], "{h}: {records:#?}");
            assert_eq!(records[0]["text"], server::PROMPT_1, "{h}");
            let text = records[1]["text"].as_str().unwrap();
            assert!(
                text.starts_with("The command printed compat-42-marker. Deploy key: "),
                "{h}: {text}"
            );
            return;
        }
        let kinds: Vec<&str> = records
            .iter()
            .map(|r| r["kind"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["user", "assistant", "tool_call", "tool_result", "assistant"],
            "{h}: {records:#?}"
        );
        assert_eq!(
            records[0]["text"],
            (self.cli.stored_prompt)(server::PROMPT_1),
            "{h}"
        );
        assert_eq!(records[1]["text"], server::TEXT_1, "{h}");
        let tool = self.expected_tool();
        assert_eq!(
            records[2]["name"],
            tool.name.as_str(),
            "{h}: {:#}",
            records[2]
        );
        assert_eq!(records[2]["input"], tool.args, "{h}: {:#}", records[2]);
        assert_eq!(records[3]["call_id"], records[2]["call_id"], "{h}");
        assert_eq!(records[3]["is_error"], false, "{h}: {:#}", records[3]);
        let output = records[3]["output"].as_str().unwrap_or_default();
        assert_eq!(output.trim(), server::OUTPUT, "{h}: tool output {output:?}");
        let text = records[4]["text"].as_str().unwrap();
        assert!(
            text.starts_with("The command printed compat-42-marker. Deploy key: "),
            "{h}: {text}"
        );
    }

    fn check_turn_two(&self, records: &[Value]) {
        let h = self.cli.harness;
        let records: Vec<Value> = self.conversation(records).into_iter().cloned().collect();
        let kinds: Vec<&str> = records
            .iter()
            .map(|r| r["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["user", "assistant"], "{h}: {records:#?}");
        assert_eq!(
            records[0]["text"],
            (self.cli.stored_prompt)(server::PROMPT_2),
            "{h}"
        );
        assert_eq!(records[1]["text"], server::TEXT_3, "{h}");
    }

    /// The tool call the server made (what the CLI offered decides its name and arguments).
    fn expected_tool(&self) -> server::ToolCall {
        let log = self.server.log();
        let request = log.iter().find(|l| l.step == "tool").unwrap();
        let body: Value = serde_json::from_str(&request.body).unwrap();
        (self.cli.pick)(&server::offered_tools(&body), &request.body).unwrap()
    }

    /// `--head --limit N` then `--since CURSOR --limit N` until `more` is false equals `all`.
    fn check_paging(&self, target: &str, all: &[Value]) {
        for size in ["1", "2", "3"] {
            let (mut got, mut page) =
                split(self.read_ok(&["read", target, "--head", "--limit", size, "--json"]));
            let mut pages = 1;
            while page["more"] == true {
                let cursor = page["cursor"].as_str().unwrap().to_string();
                let (more, next) = split(self.read_ok(&[
                    "read", target, "--since", &cursor, "--limit", size, "--json",
                ]));
                got.extend(more);
                page = next;
                pages += 1;
                assert!(
                    pages <= all.len() + 2,
                    "{}: paging does not end",
                    self.cli.harness
                );
            }
            assert_eq!(
                strip(&got),
                strip(all),
                "{}: pages of {size} differ from --all",
                self.cli.harness
            );
        }
    }

    /// Copies the harness's directory to a test user's home and reads it over SSH.
    fn check_ssh(&self, id: &str, all: &[Value]) {
        let Some(sshd) = crate::common::sshd::sshd_or_skip() else {
            return;
        };
        let h = self.cli.harness;
        let root_rel = match h {
            "claude" => ".claude",
            "codex" => ".codex",
            "gemini" => ".gemini",
            "pi" => ".pi/agent",
            "opencode" => ".local/share/opencode",
            "copilot" => ".copilot",
            "droid" => ".factory",
            "continue" => ".continue",
            "cline" => ".cline/data",
            "kilo" => ".local/share/kilo",
            "qwen" => ".qwen",
            "aider" => "project",
            "kimi-code" => ".kimi-code",
            "kimi" => ".kimi",
            "openhands" => ".openhands",
            other => panic!("no root for {other}"),
        };
        let user = "ck_bash";
        let dest = format!("compat-{}-{h}", std::process::id());
        let local_root = self.setup.home.join(root_rel);
        for file in files_under(&local_root) {
            let rel = file.strip_prefix(&local_root).unwrap();
            sshd.put_file(
                user,
                Path::new(&dest).join(rel),
                &std::fs::read(&file).unwrap(),
            );
        }
        let remote_root = sshd.home(user).join(&dest);
        let alias = sshd.alias(user);
        let root = format!("{h}={}", remote_root.display());
        let config = sshd.ssh_config().to_str().unwrap().to_string();
        let base = ["--ssh-config", &config, "--root", &root];
        let ls: Vec<Value> = self
            .read_ok(&[&base[..], &["ls", &alias, "--json"]].concat())
            .into_iter()
            .filter(|l| l["type"] == "session" && l["harness"] == h)
            .collect();
        assert_eq!(ls.len(), 1, "{h} over ssh: {ls:#?}");
        let listed = ls[0]["session"].as_str().unwrap_or_default().to_string();
        if h == "aider" {
            // Aider's ids end in a hash of the project directory's path, and the copy over
            // SSH lives in another directory: the same first run, another place.
            let without_place = |id: &str| id.rsplit_once('-').map(|(rest, _)| rest.to_string());
            assert_eq!(without_place(&listed), without_place(id), "{h} over ssh");
        } else {
            assert_eq!(listed, id, "{h} over ssh");
        }
        let target = format!("{alias}:{h}/{listed}");
        // The records as the local read names their session (aider's id differs, above).
        let here = |records: Vec<Value>| -> Vec<Value> {
            let mut records = strip(&records);
            for record in &mut records {
                if record["session"] == listed.as_str() {
                    record["session"] = Value::from(id);
                }
            }
            records
        };
        let (remote, _) =
            split(self.read_ok(&[&base[..], &["read", &target, "--all", "--json"]].concat()));
        assert_eq!(here(remote), strip(all), "{h}: records over SSH differ");
        for size in ["2"] {
            let (mut got, mut page) = split(
                self.read_ok(
                    &[
                        &base[..],
                        &["read", &target, "--head", "--limit", size, "--json"],
                    ]
                    .concat(),
                ),
            );
            while page["more"] == true {
                let cursor = page["cursor"].as_str().unwrap().to_string();
                let (more, next) = split(
                    self.read_ok(
                        &[
                            &base[..],
                            &[
                                "read", &target, "--since", &cursor, "--limit", size, "--json",
                            ],
                        ]
                        .concat(),
                    ),
                );
                got.extend(more);
                page = next;
            }
            assert_eq!(here(got), strip(all), "{h}: SSH pages differ");
        }
        let _ = std::fs::remove_dir_all(remote_root);
    }
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            out.extend(files_under(&path));
        } else if kind.is_file() {
            out.push(path);
        }
    }
    out
}

pub fn ndjson(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The records of a read, and its page line.
fn split(lines: Vec<Value>) -> (Vec<Value>, Value) {
    let mut records = Vec::new();
    let mut page = Value::Null;
    for line in lines {
        match line["type"].as_str() {
            Some("record") => records.push(line),
            Some("page") => page = line,
            _ => {}
        }
    }
    (records, page)
}

fn strip(records: &[Value]) -> Vec<Value> {
    records.iter().map(comparable).collect()
}

/// A `--follow` reader in the background, collecting the records it prints.
struct Follow {
    child: Child,
    lines: Arc<Mutex<Vec<Value>>>,
}

impl Follow {
    fn start(mut cmd: Command) -> Follow {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting --follow");
        let mut stdout = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let shared = lines.clone();
        thread::spawn(move || {
            let mut pending = Vec::new();
            let mut buf = [0u8; 8192];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                pending.extend_from_slice(&buf[..n]);
                while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    if let Ok(value) = serde_json::from_slice::<Value>(&line) {
                        shared.lock().unwrap().push(value);
                    }
                }
            }
        });
        Follow { child, lines }
    }

    /// Waits until `count` records were printed (or `patience` ran out), stops the reader and
    /// returns the records it printed.
    fn finish(mut self, count: usize, patience: Duration) -> Vec<Value> {
        let deadline = Instant::now() + patience;
        let records = || -> Vec<Value> {
            self.lines
                .lock()
                .unwrap()
                .iter()
                .filter(|l| l["type"] == "record")
                .cloned()
                .collect()
        };
        while records().len() < count && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(100));
        }
        // Two more polls, so a record printed twice would show.
        thread::sleep(Duration::from_millis(500));
        let _ = self.child.kill();
        let _ = self.child.wait();
        records()
    }
}
