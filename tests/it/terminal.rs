//! Terminal recordings as a `terminal` source, recorded by the real programs: `asciinema rec`,
//! util-linux `script` with a timing file, and tmux `pipe-pane`, each inside a real tmux pane
//! running a session that prints colours, a `\r` progress bar, output that scrolls, and `less`
//! on a file that is then quit. The records (and the live screen after them) are the lines a
//! person saw: exactly what tmux itself keeps of the pane (its scrollback and screen), plus
//! less's last page when it left the alternate screen, with no escape left in them. Paging with
//! `--since` equals `--all`; `--follow` of a log being written prints each line once; a
//! truncated log is a visible reset (exit 5 with `--strict`); a second `script -a` recording in
//! the same log is generation 2; over SSH a read gives what a local read gives.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::require_tool;
use crate::common::sshd::sshd_or_skip;
use crate::support::{code, ids, ndjson, page, records, run, stderr};

/// The session every recorder records: colours, a progress bar redrawn with `\r`, 60 lines
/// that scroll a 24-row terminal, a full-screen `less`, then one more line.
const SESSION: &str = r#"printf '\033[31mred\033[0m \033[1;32mgreen\033[0m plain\n'
for i in 10 50 100; do printf '\rprogress %3d%%' $i; sleep 0.01; done; printf '\n'
seq 1 60 | sed 's/^/long line /'
less "$PAGE"
echo after less
"#;

/// A private tmux server (its own socket, no config) with one 80×24 pane.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn start(dir: &Path, command: &str) -> Tmux {
        let tmux = Tmux {
            socket: dir.join("tmux.sock"),
        };
        let out = tmux.run(&[
            "new-session",
            "-d",
            "-x",
            "80",
            "-y",
            "24",
            "-s",
            "t",
            command,
        ]);
        assert!(out.status.success(), "tmux: {}", stderr(&out));
        // The pane stays after its program exits, so what it shows can be compared.
        tmux.run(&["set-option", "-t", "t", "remain-on-exit", "on"]);
        tmux
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["-f", "/dev/null"])
            .args(args)
            .env("TERM", "xterm-256color")
            // asciinema keeps its config under HOME: a private one per test.
            .env("HOME", self.socket.parent().unwrap())
            .output()
            .expect("run tmux")
    }

    /// The pane's lines: its whole history and screen, wrapped rows joined.
    fn capture(&self) -> Vec<String> {
        let out = self.run(&["capture-pane", "-p", "-J", "-S", "-", "-t", "t"]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim_end().to_string())
            .collect()
    }

    /// Waits until the pane shows a line for which `seen` holds.
    fn wait_for(&self, what: &str, seen: impl Fn(&str) -> bool) {
        let start = Instant::now();
        while !self.capture().iter().any(|l| seen(l)) {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "tmux pane never showed {what}: {:?}",
                self.capture()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Plays the session's part of the person: quit `less` once it shows its page, and wait
    /// for the session's last line. Returns what the pane shows then (tmux's own line for a
    /// program that ended left out). The recorder may still be finishing its file: see
    /// [`wait_for_file`].
    fn quit_less_and_wait(&self) -> Vec<String> {
        self.wait_for("less's page", |l| l == "row 23");
        // A key that reaches the pty before less has set it up is dropped by less's own set-up
        // (it happens on a loaded machine): press `q` again while less is still on the screen.
        let start = Instant::now();
        loop {
            self.run(&["send-keys", "-t", "t", "q"]);
            let pressed = Instant::now();
            while pressed.elapsed() < Duration::from_secs(2)
                && self.capture().iter().any(|l| l == "row 23")
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            if !self.capture().iter().any(|l| l == "row 23") {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "less never quit");
        }
        self.wait_for("the session's last line", |l| l == "after less");
        let mut lines = self.capture();
        lines.retain(|l| !l.starts_with("Pane is dead"));
        while lines.last().is_some_and(String::is_empty) {
            lines.pop();
        }
        lines
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

/// Waits until the recording at `path` holds `needle` (its recorder wrote the end).
fn wait_for_file(path: &Path, needle: &str) {
    let start = Instant::now();
    while !std::fs::read(path).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle)) {
        // Generous: asciinema 2 can take long to finish its file on a loaded machine.
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} never held {needle:?}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn tools_or_skip(tools: &[&str]) -> bool {
    tools.iter().all(|t| require_tool(t))
}

/// A scratch directory with the session script and the file `less` shows, and a recordings
/// root with the directories a `terminal` root lists.
fn scratch() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let rows: String = (1..=200).map(|i| format!("row {i}\n")).collect();
    std::fs::write(dir.path().join("page.txt"), rows).unwrap();
    std::fs::write(dir.path().join("session.sh"), SESSION).unwrap();
    let root = dir.path().join("rec");
    for sub in ["casts", "logs", "scripts"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    (dir, root)
}

/// The shell command that runs the session.
fn session_command(dir: &Path) -> String {
    format!(
        "PAGE={} LESS= sh {}",
        dir.join("page.txt").display(),
        dir.join("session.sh").display()
    )
}

fn root_arg(root: &Path) -> String {
    format!("terminal={}", root.display())
}

/// `read local:ID --all --json` under the terminal root: records and page.
fn read_all(home: &Path, root: &Path, id: &str) -> (Vec<Value>, Value) {
    let out = run(
        home,
        &[
            "--root",
            &root_arg(root),
            "read",
            &format!("local:{id}"),
            "--all",
            "--json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines = ndjson(&out);
    (records(&lines), page(&lines))
}

fn texts(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| r["text"].as_str().expect("text").to_string())
        .collect()
}

fn screen(page: &Value) -> Vec<String> {
    page.get("screen")
        .and_then(Value::as_array)
        .map(|rows| {
            rows.iter()
                .map(|r| r.as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// What a person saw, checked three ways: every record is terminal text from `source`,
/// generation 1, without an escape or a carriage return; less's page is in the records once,
/// as 23 rows in order; and the rest, followed by the live screen, is exactly what tmux
/// kept of the pane.
fn assert_seen(records: &[Value], page: &Value, source: &str, pane: &[String]) {
    for r in records {
        assert_eq!(r["kind"], "terminal", "{r}");
        assert_eq!(r["harness"], "terminal", "{r}");
        assert_eq!(r["source"], source, "{r}");
        assert_eq!(r["generation"], 1, "{r}");
        let text = r["text"].as_str().unwrap();
        assert!(!text.contains(['\x1b', '\r']), "escape soup: {text:?}");
    }
    let mut seen = texts(records);
    let first_row = seen.iter().position(|t| t == "row 1").expect("less's page");
    let page_rows: Vec<String> = seen.drain(first_row..first_row + 23).collect();
    let want: Vec<String> = (1..=23).map(|i| format!("row {i}")).collect();
    assert_eq!(page_rows, want, "less's last screen");
    assert!(!seen.iter().any(|t| t.starts_with("row ")), "{seen:?}");
    seen.extend(screen(page));
    while seen.last().is_some_and(String::is_empty) {
        seen.pop();
    }
    assert_eq!(seen, pane, "records and live screen against tmux's pane");
    // Known text: the colours' words, the progress bar's last state only, every scrolled line.
    assert_eq!(seen[0], "red green plain");
    assert_eq!(seen[1], "progress 100%");
    let long: Vec<String> = (1..=60).map(|i| format!("long line {i}")).collect();
    assert_eq!(seen[2..62], long[..]);
    assert_eq!(seen.last().map(String::as_str), Some("after less"));
}

/// Pages through `id` with `--head --limit N` then `--since`, returning every id.
fn paged_ids(home: &Path, root: &Path, id: &str, limit: &str) -> Vec<String> {
    let mut got = Vec::new();
    let mut mode = vec!["--head".to_string()];
    loop {
        let mut args = vec![
            "--root".to_string(),
            root_arg(root),
            "read".into(),
            format!("local:{id}"),
            "--json".into(),
            "--limit".into(),
            limit.into(),
        ];
        args.extend(mode);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(home, &args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let lines = ndjson(&out);
        got.extend(ids(&records(&lines)));
        let p = page(&lines);
        if p["more"] == false {
            return got;
        }
        mode = vec!["--since".into(), p["cursor"].as_str().unwrap().to_string()];
    }
}

#[test]
fn asciinema_recording_reads_as_a_person_saw_it() {
    if !tools_or_skip(&["tmux", "asciinema", "less"]) {
        return;
    }
    let (dir, root) = scratch();
    let cast = root.join("casts/demo.cast");
    let command = format!(
        "asciinema rec -q --cols 80 --rows 24 -c '{}' {}",
        session_command(dir.path()),
        cast.display()
    );
    let tmux = Tmux::start(dir.path(), &command);
    let pane = tmux.quit_less_and_wait();
    wait_for_file(&cast, "after less");
    let head = std::fs::read_to_string(&cast).unwrap();
    assert!(head.starts_with("{\"version\": 2"), "{head:.80}");

    let (recs, p) = read_all(dir.path(), &root, "demo");
    assert_seen(&recs, &p, "asciinema", &pane);
    // asciinema 2 writes no end: the last screen is live, not records.
    assert_eq!(p["pending_tail"], true);
    assert_eq!(screen(&p).last().map(String::as_str), Some("after less"));
    assert!(recs.iter().all(|r| r["ts"].is_string()), "cast times");
    assert_eq!(paged_ids(dir.path(), &root, "demo", "7"), ids(&recs));

    // Text output says what the text is, and shows the live screen after the page.
    let text = run(
        dir.path(),
        &["--root", &root_arg(&root), "read", "local:demo", "--all"],
    );
    assert_eq!(code(&text), 0, "{}", stderr(&text));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.starts_with("── terminal text, not a transcript (asciinema recording, generation 1)"),
        "{text}"
    );
    assert!(
        text.contains("── live screen (terminal text, not a transcript; not records yet)\n"),
        "{text}"
    );
    assert!(text.contains("│ after less\n"), "{text}");

    // ls lists it; resume has nothing to resume.
    let ls = run(dir.path(), &["--root", &root_arg(&root), "ls", "--json"]);
    assert_eq!(code(&ls), 0, "{}", stderr(&ls));
    let sessions = ndjson(&ls);
    assert!(
        sessions
            .iter()
            .any(|s| s["harness"] == "terminal" && s["session"] == "demo"),
        "{sessions:?}"
    );
    let resume = run(
        dir.path(),
        &["--root", &root_arg(&root), "resume", "local:demo"],
    );
    assert_eq!(code(&resume), 2);
    assert!(
        stderr(&resume).contains("nothing to resume"),
        "{}",
        stderr(&resume)
    );
}

#[test]
fn script_recording_with_timing_reads_as_a_person_saw_it() {
    if !tools_or_skip(&["tmux", "script", "less"]) {
        return;
    }
    let (dir, root) = scratch();
    let log = root.join("scripts/build.typescript");
    let command = format!(
        "script -q --log-out {} --log-timing {} -c '{}'",
        log.display(),
        dir.path().join("build.timing").display(),
        session_command(dir.path()),
    );
    let tmux = Tmux::start(dir.path(), &command);
    let pane = tmux.quit_less_and_wait();
    wait_for_file(&log, "Script done on ");
    let (recs, p) = read_all(dir.path(), &root, "build");
    assert_seen(&recs, &p, "script", &pane);
    // `Script done on …` ended the recording: its last screen became records.
    assert_eq!(p["pending_tail"], false);
    assert!(screen(&p).is_empty(), "{p}");
    assert_eq!(paged_ids(dir.path(), &root, "build", "11"), ids(&recs));
    // `ls --long` titles it with the command it recorded.
    let ls = run(
        dir.path(),
        &["--root", &root_arg(&root), "ls", "--json", "--long"],
    );
    let sessions = ndjson(&ls);
    let build = sessions
        .iter()
        .find(|s| s["session"] == "build")
        .expect("listed");
    assert_eq!(build["title"], session_command(dir.path()).as_str());
}

#[test]
fn tmux_pipe_pane_log_reads_as_a_person_saw_it() {
    if !tools_or_skip(&["tmux", "less"]) {
        return;
    }
    let (dir, root) = scratch();
    let log = root.join("logs/pane.log");
    let go = dir.path().join("go");
    // The session waits until the pane is piped, so the log holds all it printed.
    let command = format!(
        "while [ ! -e {go} ]; do sleep 0.01; done; {}",
        session_command(dir.path()),
        go = go.display()
    );
    let tmux = Tmux::start(dir.path(), &command);
    let pipe = format!("cat >> {}", log.display());
    let out = tmux.run(&["pipe-pane", "-o", "-t", "t", &pipe]);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::write(&go, "").unwrap();
    let pane = tmux.quit_less_and_wait();
    // `cat` may still be writing what the pane printed last.
    wait_for_file(&log, "after less\r\n");
    let (recs, p) = read_all(dir.path(), &root, "pane");
    assert_seen(&recs, &p, "raw", &pane);
    assert_eq!(paged_ids(dir.path(), &root, "pane", "50"), ids(&recs));
}

#[test]
fn a_second_script_recording_in_the_same_log_is_generation_two() {
    if !tools_or_skip(&["script"]) {
        return;
    }
    let (dir, root) = scratch();
    let log = root.join("logs/twice.log");
    for word in ["first", "second"] {
        let status = Command::new("script")
            .args(["-q", "-a", "--log-out"])
            .arg(&log)
            .args(["-c", &format!("echo {word} run")])
            .env("TERM", "xterm")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
    }
    let (recs, p) = read_all(dir.path(), &root, "twice");
    let seen: Vec<(String, u64)> = recs
        .iter()
        .map(|r| {
            assert_eq!(r["source"], "script");
            (
                r["text"].as_str().unwrap().to_string(),
                r["generation"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [("first run".to_string(), 1), ("second run".to_string(), 2)]
    );
    assert!(screen(&p).is_empty());
    let text = run(
        dir.path(),
        &["--root", &root_arg(&root), "read", "local:twice", "--all"],
    );
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("(script recording, generation 1)"), "{text}");
    assert!(text.contains("(script recording, generation 2)"), "{text}");
}

/// `count` lines of raw terminal output, coloured, each redrawn once with `\r`.
fn raw_lines(from: usize, count: usize) -> Vec<u8> {
    (from..from + count)
        .flat_map(|i| {
            format!("\x1b[33mwait {i}\r\x1b[Kline {i} \x1b[1mdone\x1b[0m\r\n").into_bytes()
        })
        .collect()
}

#[test]
fn a_truncated_log_is_a_visible_reset() {
    let (dir, root) = scratch();
    let log = root.join("logs/cut.log");
    std::fs::write(&log, raw_lines(0, 100)).unwrap();
    let (recs, p) = read_all(dir.path(), &root, "cut");
    assert_eq!(recs.len(), 100 - 23);
    assert_eq!(recs[5]["text"], "line 5 done");
    let cursor = p["cursor"].as_str().unwrap().to_string();
    // A raw log gives no size: --cols/--rows give it (80×24 without them).
    let small = run(
        dir.path(),
        &[
            "--root",
            &root_arg(&root),
            "read",
            "local:cut",
            "--all",
            "--json",
            "--cols",
            "20",
            "--rows",
            "5",
        ],
    );
    let small = ndjson(&small);
    // Four lines and the cursor's empty row are on the screen.
    assert_eq!(records(&small).len(), 100 - 4);
    assert_eq!(screen(&page(&small)).len(), 4);
    // The log is truncated and written again (rotated): less than the cursor had.
    std::fs::write(&log, raw_lines(1000, 40)).unwrap();
    let args = |strict: bool| {
        let mut a = vec![
            "--root".to_string(),
            root_arg(&root),
            "read".into(),
            "local:cut".into(),
            "--json".into(),
            "--since".into(),
            cursor.clone(),
        ];
        if strict {
            a.push("--strict".into());
        }
        a
    };
    let strict = crate::support::clankie(dir.path())
        .args(args(true))
        .output()
        .unwrap();
    assert_eq!(code(&strict), 5, "{}", stderr(&strict));
    let out = crate::support::clankie(dir.path())
        .args(args(false))
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines = ndjson(&out);
    let p = page(&lines);
    assert_eq!(p["reset"], true);
    let recs = records(&lines);
    assert_eq!(recs[0]["kind"], "notice");
    assert!(
        recs[0]["text"]
            .as_str()
            .unwrap()
            .contains("retained history was lost"),
        "{}",
        recs[0]
    );
    assert_eq!(recs[1]["text"], "line 1000 done");
}

#[test]
fn follow_of_a_log_being_written_prints_each_line_once() {
    let (dir, root) = scratch();
    let log = root.join("logs/live.log");
    std::fs::write(&log, raw_lines(0, 30)).unwrap();
    let args = crate::follow::follow_args(&["--root", &root_arg(&root)], "local:live", "0.05");
    let (child, rx) = crate::follow::follow(&args, dir.path());
    // The first page (the lines that scrolled off so far) before anything more is written.
    let mut got = Vec::new();
    while got.len() < 30 - 23 {
        let value = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the first page");
        if value["type"] == "record" {
            got.push(value);
        }
    }
    // Written in pieces that cut escapes, lines and characters anywhere.
    let more = raw_lines(30, 400);
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    for piece in more.chunks(997) {
        file.write_all(piece).unwrap();
        file.flush().unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(file);
    let want = 430 - 23;
    let (rest, _) = crate::follow::collect(child, rx, want - got.len(), Duration::from_secs(60));
    got.extend(rest);
    let (all, _) = read_all(dir.path(), &root, "live");
    assert_eq!(ids(&all).len(), want);
    assert_eq!(ids(&got), ids(&all), "each line once, in order");
    assert_eq!(texts(&got), texts(&all));
}

#[test]
fn a_recording_over_the_source_bound_exits_6() {
    let (dir, root) = scratch();
    let file = std::fs::File::create(root.join("logs/huge.log")).unwrap();
    // Sparse: 65 MiB of zeros cost no disk.
    file.set_len(65 << 20).unwrap();
    let out = run(
        dir.path(),
        &[
            "--root",
            &root_arg(&root),
            "read",
            "local:huge",
            "--all",
            "--json",
        ],
    );
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(stderr(&out).contains("64 MiB"), "{}", stderr(&out));
}

#[test]
fn a_recording_over_ssh_reads_as_it_does_locally() {
    if !tools_or_skip(&["script"]) {
        return;
    }
    let Some(sshd) = sshd_or_skip() else { return };
    let (dir, root) = scratch();
    let log = root.join("scripts/remote.typescript");
    let status = Command::new("script")
        .args(["-q", "--log-out"])
        .arg(&log)
        .args([
            "-c",
            "printf '\\033[32mgreen\\033[0m\\n'; seq 1 40; printf 'half'",
        ])
        .env("TERM", "xterm")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let bytes = std::fs::read(&log).unwrap();
    let (local, _) = read_all(dir.path(), &root, "remote");
    assert_eq!(texts(&local)[0], "green");
    let user = "ck_bash";
    let remote_log = sshd.put_file(user, "rec/scripts/remote.typescript", &bytes);
    let remote_root = remote_log.parent().unwrap().parent().unwrap();
    let out = crate::support::clankie(dir.path())
        .args(["--ssh-config", sshd.ssh_config().to_str().unwrap()])
        .args(["--root", &root_arg(remote_root)])
        .args([
            "read",
            &format!("{}:remote", sshd.alias(user)),
            "--all",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let remote = records(&ndjson(&out));
    // The records name their host; everything else is the same.
    assert_eq!(
        crate::support::without_host(remote),
        crate::support::without_host(local)
    );
}

#[test]
fn check_reports_what_a_recording_gained() {
    let (dir, root) = scratch();
    let log = root.join("logs/grow.log");
    std::fs::write(&log, raw_lines(0, 30)).unwrap();
    let hosts = dir.path().join("hosts.toml");
    std::fs::write(
        &hosts,
        format!(
            "[hosts.box]\nlocal = true\nroots = {{ terminal = \"{}\" }}\n",
            root.display()
        ),
    )
    .unwrap();
    let state = dir.path().join("state.json");
    let args = [
        "--hosts",
        hosts.to_str().unwrap(),
        "check",
        "box",
        "--state",
        state.to_str().unwrap(),
        "--json",
        "--records",
    ];
    let first = run(dir.path(), &args);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let lines = ndjson(&first);
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "activity" && l["session"] == "grow" && l["change"] == "new"),
        "{lines:?}"
    );
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    file.write_all(&raw_lines(30, 10)).unwrap();
    drop(file);
    let second = run(dir.path(), &args);
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    let lines = ndjson(&second);
    let activity: Vec<&Value> = lines.iter().filter(|l| l["type"] == "activity").collect();
    assert_eq!(activity.len(), 1, "{lines:?}");
    assert_eq!(activity[0]["change"], "grew");
    assert_eq!(activity[0]["new_records"], 10);
    let texts = texts(&records(&lines));
    let want: Vec<String> = (7..17).map(|i| format!("line {i} done")).collect();
    assert_eq!(texts, want);
}

/// An asciinema v3 recording (asciinema 3.x is not in Debian: this one is written by hand to
/// its format): intervals between events, input and marker events that are not output, a
/// resize, and the exit event that ends it. A secret on the screen is redacted like any other.
#[test]
fn an_asciinema_v3_recording_reads_to_its_exit_with_secrets_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("rec");
    std::fs::create_dir_all(root.join("casts")).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/terminal/v3.cast");
    std::fs::copy(&fixture, root.join("casts/v3.cast")).unwrap();
    let (recs, p) = read_all(dir.path(), &root, "v3");
    assert_eq!(
        texts(&recs),
        [
            "$ export GH_TOKEN=[REDACTED:github]",
            "one two",
            "three",
            "four",
            "$"
        ]
    );
    assert!(
        recs.iter()
            .all(|r| r["source"] == "asciinema" && r["generation"] == 1)
    );
    // The exit event ended the recording: no live screen.
    assert!(screen(&p).is_empty() && p["pending_tail"] == false, "{p}");
    // The header's time plus every interval up to the exit: 2.25 s.
    assert_eq!(recs[4]["ts"], "2026-12-01T11:32:54.250Z");
    let plain = run(
        dir.path(),
        &[
            "--root",
            &root_arg(&root),
            "read",
            "local:v3",
            "--all",
            "--json",
            "--no-redact",
            "--kind",
            "terminal",
        ],
    );
    let plain = records(&ndjson(&plain));
    assert_eq!(
        plain[0]["text"],
        "$ export GH_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"
    );
    let none = run(
        dir.path(),
        &[
            "--root",
            &root_arg(&root),
            "read",
            "local:v3",
            "--all",
            "--json",
            "--kind",
            "user",
        ],
    );
    assert!(records(&ndjson(&none)).is_empty());
}
