//! `clankie-read ui` driven on a real terminal: the binary runs in a tmux pane of a fixed size,
//! keys go in with `send-keys`, and the screens are read with `capture-pane` and compared with
//! snapshots at 80×24 and 120×40. tmux is installed by `.ci/install-deps`; under `CI=true` a
//! missing tmux fails the test.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use crate::common::require_tool;
use crate::support::BIN;

/// A session of `turns` prompts and answers, the prompts numbered, in the JSONL Claude writes.
fn session_lines(id: &str, from: usize, turns: usize, extra: &str) -> String {
    let mut lines = String::new();
    for i in from..from + turns {
        let ts = format!("2026-12-01T10:{:02}:{:02}Z", i / 60 % 60, i % 60);
        lines.push_str(&format!(
            r#"{{"type":"user","uuid":"u{i}","sessionId":"{id}","cwd":"/w/app","timestamp":"{ts}","message":{{"role":"user","content":"prompt number {i}{extra}"}}}}"#
        ));
        lines.push('\n');
        lines.push_str(&format!(
            r#"{{"type":"assistant","uuid":"a{i}","sessionId":"{id}","cwd":"/w/app","timestamp":"{ts}","message":{{"id":"m{i}","role":"assistant","model":"claude-test-1","content":[{{"type":"text","text":"answer number {i}"}}]}}}}"#
        ));
        lines.push('\n');
    }
    lines
}

const SESSION: &str = "3f1c2a7e-0000-4000-8000-000000000001";
const OTHER: &str = "9b8d4c10-0000-4000-8000-000000000002";

/// A home with two Claude sessions (modified an hour and two days ago) and a hosts file naming
/// a host that refuses connections.
fn home() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join(".claude/projects/-w-app");
    std::fs::create_dir_all(&project).unwrap();
    let session = project.join(format!("{SESSION}.jsonl"));
    std::fs::write(&session, session_lines(SESSION, 0, 40, "")).unwrap();
    let other = project.join(format!("{OTHER}.jsonl"));
    std::fs::write(&other, session_lines(OTHER, 0, 2, " of the older one")).unwrap();
    for (path, ago) in [(&session, 3600), (&other, 2 * 86400)] {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(ago))
            .unwrap();
    }
    let hosts = dir.path().join("hosts.toml");
    // Port 1 on this machine: nothing listens, the connection is refused at once.
    std::fs::write(&hosts, "[hosts.down]\nssh = \"nobody@127.0.0.1:1\"\n").unwrap();
    (dir, session)
}

/// A tmux server of its own (its socket in the test's directory), killed when dropped.
struct Pane {
    socket: PathBuf,
}

impl Pane {
    fn start(home: &Path, cols: u16, rows: u16) -> Pane {
        Pane::start_with(home, cols, rows, "")
    }

    /// [`Pane::start`] with global options (`--ssh-config FILE`) before `ui`.
    fn start_with(home: &Path, cols: u16, rows: u16, options: &str) -> Pane {
        let socket = home.join("tmux.sock");
        let command = format!(
            "env -i PATH={path} HOME={home} TZ=UTC TERM=xterm-256color NO_COLOR=1 \
             CLANKIE_HOSTS={home}/hosts.toml {BIN} {options} ui --interval 0.2",
            path = std::env::var("PATH").unwrap_or_default(),
            home = home.display(),
        );
        let pane = Pane { socket };
        pane.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
            &command,
        ]);
        pane
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux");
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    fn keys(&self, keys: &[&str]) {
        for key in keys {
            self.tmux(&["send-keys", key]);
        }
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p"])
    }

    /// The screen once it holds `needle` (and no `reading…`); panics after 20 s.
    fn wait_for(&self, needle: &str) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(needle) && !screen.contains("reading…") {
                // The frame that holds it may still be drawing: one more look.
                std::thread::sleep(Duration::from_millis(100));
                return self.screen();
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the screen never showed {needle:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Pane {
    /// The screen once `done` holds for it (and it shows no `reading…`); panics after 20 s.
    fn wait_until(&self, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if done(&screen) && !screen.contains("reading…") {
                std::thread::sleep(Duration::from_millis(100));
                return self.screen();
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the screen never got there:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Presses `key` until the screen satisfies `done` (each press may read more); panics
    /// after 20 s.
    fn press_until(&self, key: &str, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            self.keys(&[key]);
            std::thread::sleep(Duration::from_millis(200));
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "pressing {key} never got there:\n{screen}"
            );
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// The screen with what changes from run to run (the refused port's words) left out.
fn stable(screen: &str) -> String {
    screen
        .lines()
        .map(|line| match line.find("▸ down: failed:") {
            Some(at) => format!("{}▸ down: failed: [error]", &line[..at]),
            None => line.trim_end().to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn browse_at(cols: u16, rows: u16) {
    if !require_tool("tmux") {
        return;
    }
    let (home, session) = home();
    let pane = Pane::start(home.path(), cols, rows);
    let list = pane.wait_for("▸ down: failed");
    let list = pane.wait_for(if list.contains("prompt number 0") {
        "prompt number 0 of the older one"
    } else {
        "prompt number 0"
    });
    insta::assert_snapshot!(format!("ui_list_{cols}x{rows}"), stable(&list));

    // The newest session opens at its newest records.
    pane.keys(&["Enter"]);
    let opened = pane.wait_for("answer number 39");
    insta::assert_snapshot!(format!("ui_session_{cols}x{rows}"), stable(&opened));

    // Back across a page boundary, and to the top.
    pane.keys(&["PageUp"]);
    let back = pane.wait_for("%");
    assert!(!back.contains("answer number 39"), "{back}");
    pane.keys(&["g"]);
    let top = pane.wait_for("prompt number 0");
    insta::assert_snapshot!(format!("ui_session_top_{cols}x{rows}"), stable(&top));

    // Searched.
    pane.keys(&["/", "answer number 17", "Enter"]);
    pane.wait_for("answer number 17");

    // Followed while the session grows: the new records come after the marker.
    pane.keys(&["F"]);
    let mut file = std::fs::File::options()
        .append(true)
        .open(&session)
        .unwrap();
    std::io::Write::write_all(&mut file, session_lines(SESSION, 40, 1, " late").as_bytes())
        .unwrap();
    let grown = pane.wait_for("answer number 40");
    let marker = grown
        .find("── new records ──")
        .expect("the new-records marker");
    assert!(
        marker < grown.find("prompt number 40 late").unwrap(),
        "{grown}"
    );

    // Back to the list, and out.
    pane.keys(&["q"]);
    pane.wait_for("session");
    pane.keys(&["q"]);
}

#[test]
fn ui_browses_at_80x24() {
    browse_at(80, 24);
}

#[test]
fn ui_browses_at_120x40() {
    browse_at(120, 40);
}

/// A transcript full of escape sequences (OSC 52, title sets, cursor moves, the alternate
/// screen) shows as plain characters: the pane holds what the view drew, its title is the
/// view's, and the view still answers keys.
#[test]
fn ui_a_transcript_of_escape_sequences_never_drives_the_terminal() {
    if !require_tool("tmux") {
        return;
    }
    let (home, session) = home();
    let hostile = r#"\u001b]52;c;cm0gLXJmIH4K\u0007\u001b]0;owned\u0007\u001b[2J\u001b[10;10H\u001b[?1049l\u001b[?1049h\u001b[31mred\rX"#;
    let line = format!(
        r#"{{"type":"user","uuid":"h1","sessionId":"{SESSION}","cwd":"/w/app","timestamp":"2026-12-01T11:00:00Z","message":{{"role":"user","content":"{hostile} hostile end"}}}}"#
    );
    let mut file = std::fs::File::options()
        .append(true)
        .open(&session)
        .unwrap();
    std::io::Write::write_all(&mut file, format!("{line}\n").as_bytes()).unwrap();
    drop(file);
    let pane = Pane::start(home.path(), 80, 24);
    pane.wait_for("▸ down: failed");
    pane.keys(&["Enter"]);
    let screen = pane.wait_for("hostile end");
    // The escape sequences are shown, not acted on: the screen is the view's frame.
    assert!(screen.starts_with("── "), "{screen}");
    assert!(
        !screen.contains("owned") || screen.contains("]0;owned"),
        "{screen}"
    );
    let title = pane.tmux(&["display-message", "-p", "#{pane_title}"]);
    assert!(
        !title.contains("owned"),
        "the transcript set the title: {title}"
    );
    let alternate = pane.tmux(&["display-message", "-p", "#{alternate_on}"]);
    assert_eq!(
        alternate.trim(),
        "1",
        "the view's alternate screen was left"
    );
    pane.keys(&["q"]);
    pane.wait_for("session");
}

/// A session of this many turns on the test sshd's user `ck_dash`, listed as host `remote`.
const REMOTE: &str = "c0ffee00-0000-4000-8000-000000000003";
const REMOTE_TURNS: usize = 150;

/// Searches `local`, a host over the test sshd and the refusing host `down` for one answer:
/// the hits of both hosts listed (in the hosts' order), the failing host on its row; the
/// remote hit opens its session at the hit, which is far before the newest page, and the
/// pages after it are read on the way down.
fn grep_at(cols: u16, rows: u16) {
    if !require_tool("tmux") {
        return;
    }
    let Some(sshd) = crate::common::sshd::sshd_or_skip() else {
        return;
    };
    let (home, _) = home();
    let user = "ck_dash";
    let base = format!("ui-grep-{}-{cols}", std::process::id());
    let file = sshd.put_file(
        user,
        Path::new(&base).join(format!(".claude/projects/-w-remote/{REMOTE}.jsonl")),
        session_lines(REMOTE, 0, REMOTE_TURNS, " far away").as_bytes(),
    );
    let hosts = home.path().join("hosts.toml");
    let mut toml = std::fs::read_to_string(&hosts).unwrap();
    toml += &format!(
        "[hosts.remote]\nssh = \"{}\"\nroots = {{ claude = \"{}\" }}\n",
        sshd.alias(user),
        sshd.home(user).join(&base).join(".claude").display()
    );
    std::fs::write(&hosts, toml).unwrap();
    let options = format!("--ssh-config {}", sshd.ssh_config().display());
    let pane = Pane::start_with(home.path(), cols, rows, &options);
    pane.wait_for("▸ down: failed");
    pane.wait_for("far away");

    pane.keys(&["s", "answer number 12\\b", "Enter"]);
    let hits = pane.wait_until(|s| {
        s.contains("· 2 hits") && s.contains("▸ down: failed") && !s.contains("searching…")
    });
    let local = hits
        .find(&format!("local  {}", &SESSION[..8]))
        .expect(&hits);
    let remote = hits.find(&format!("remote {}", &REMOTE[..8])).expect(&hits);
    assert!(local < remote, "{hits}");
    insta::assert_snapshot!(format!("ui_grep_hits_{cols}x{rows}"), stable(&hits));

    // The remote hit: its session opened at the answer, far from its newest records.
    pane.keys(&["G", "Enter"]);
    let opened = pane.wait_for("prompt number 12 far away");
    assert!(opened.contains("answer number 12"), "{opened}");
    assert!(
        !opened.contains(&format!("answer number {}", REMOTE_TURNS - 1)),
        "{opened}"
    );
    insta::assert_snapshot!(format!("ui_grep_opened_{cols}x{rows}"), stable(&opened));

    // Down to the end: the pages after the hit's are read as the view gets there.
    let last = format!("answer number {}", REMOTE_TURNS - 1);
    let end = pane.press_until("G", |s| s.contains(&last));
    assert!(!end.contains("── new records ──"), "{end}");

    pane.keys(&["q"]);
    pane.wait_for("hits");
    pane.keys(&["q"]);
    pane.wait_for("sessions");
    pane.keys(&["q"]);
    let _ = std::fs::remove_dir_all(file.ancestors().nth(4).unwrap());
}

#[test]
fn ui_grep_across_hosts_at_80x24() {
    grep_at(80, 24);
}

#[test]
fn ui_grep_across_hosts_at_120x40() {
    grep_at(120, 40);
}

/// Follows every session of `local` from the list: the newest records of its sessions, the
/// marker, then a record appended to each of two sessions, each once; a session created while
/// the view is open joins the list.
fn follow_host_at(cols: u16, rows: u16) {
    if !require_tool("tmux") {
        return;
    }
    let (home, session) = home();
    let pane = Pane::start(home.path(), cols, rows);
    pane.wait_for("▸ down: failed");
    pane.wait_for("of the older one");
    pane.keys(&["F"]);
    pane.wait_until(|s| {
        s.contains("following local · 2 sessions") && s.contains("── new records ──")
    });

    let other = session.with_file_name(format!("{OTHER}.jsonl"));
    for (path, id, from, extra) in [
        (&session, SESSION, 40, " late"),
        (&other, OTHER, 2, " late too"),
    ] {
        let mut file = std::fs::File::options().append(true).open(path).unwrap();
        std::io::Write::write_all(&mut file, session_lines(id, from, 1, extra).as_bytes()).unwrap();
        pane.wait_for(&format!("prompt number {from}{extra}"));
    }
    let grown = pane.wait_for("answer number 2");
    let marker = grown.find("── new records ──").expect("the marker");
    for said in ["prompt number 40 late", "prompt number 2 late too"] {
        assert_eq!(grown.matches(said).count(), 1, "{grown}");
        assert!(grown.find(said).unwrap() > marker, "{grown}");
    }
    assert!(grown.find("answer number 39").unwrap() < marker, "{grown}");
    insta::assert_snapshot!(format!("ui_follow_{cols}x{rows}"), stable(&grown));

    // A session begun while the view is open: followed from its start, and in the list after.
    const NEW: &str = "5e55e55e-0000-4000-8000-000000000004";
    std::fs::write(
        session.with_file_name(format!("{NEW}.jsonl")),
        session_lines(NEW, 0, 1, " of a new session"),
    )
    .unwrap();
    pane.wait_for("prompt number 0 of a new session");
    pane.keys(&["q"]);
    let list = pane.wait_for("3 sessions");
    assert!(list.contains(&NEW[..8]), "{list}");
    pane.keys(&["q"]);
}

#[test]
fn ui_follows_a_host_at_80x24() {
    follow_host_at(80, 24);
}

#[test]
fn ui_follows_a_host_at_120x40() {
    follow_host_at(120, 40);
}

/// A session longer than a page (150 turns, 300 records; a page is 200) opened from the list:
/// scrolling up past its first loaded record reads the page before it (a backward read), the
/// screen still on the records it showed; `t` jumps to a time; `g` reads back to the start.
fn reads_back_at(cols: u16, rows: u16) {
    if !require_tool("tmux") {
        return;
    }
    let (home, session) = home();
    std::fs::write(&session, session_lines(SESSION, 0, 150, "")).unwrap();
    let pane = Pane::start(home.path(), cols, rows);
    pane.wait_for("▸ down: failed");
    pane.wait_for("prompt number 0 of the older one");
    pane.keys(&["Enter"]);
    let opened = pane.wait_for("answer number 149");
    assert!(opened.contains("earlier records not loaded"), "{opened}");
    // Up, a line at a time, past the first record loaded (turn 50): turn 49 comes in above it.
    pane.tmux(&["send-keys", "-N", "2000", "k"]);
    let crossed = pane.wait_for("answer number 49");
    assert!(crossed.contains("prompt number 50"), "{crossed}");
    insta::assert_snapshot!(format!("ui_back_boundary_{cols}x{rows}"), stable(&crossed));
    // A time: the first record at or after it is the first line shown.
    pane.keys(&["t", "2026-12-01T10:00:20Z", "Enter"]);
    let jumped = pane.wait_for("at 2026-12-01T10:00:20Z");
    let body: Vec<&str> = jumped.lines().skip(3).collect();
    assert!(
        body.iter().take(2).any(|l| l.contains("prompt number 20")),
        "{jumped}"
    );
    // The start.
    pane.keys(&["g"]);
    let top = pane.wait_for("prompt number 0");
    assert!(!top.contains("earlier records"), "{top}");
    insta::assert_snapshot!(format!("ui_back_top_{cols}x{rows}"), stable(&top));
    pane.keys(&["q"]);
    pane.wait_for("session");
    pane.keys(&["q"]);
}

#[test]
fn ui_reads_back_across_a_page_boundary_at_80x24() {
    reads_back_at(80, 24);
}

#[test]
fn ui_reads_back_across_a_page_boundary_at_120x40() {
    reads_back_at(120, 40);
}

/// A session whose assistant thinks at length (12 lines) and runs a command of long output (30
/// lines, a token and an escape sequence among the lines `read` leaves out).
fn folding_session(id: &str) -> String {
    let thinking: Vec<String> = (0..12).map(|i| format!("pondering step {i}")).collect();
    let mut output: Vec<String> = (0..30).map(|i| format!("output line {i}")).collect();
    output[20] = "token ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5 here".into();
    output[21] = "\u{1b}]0;owned\u{7}\u{1b}[2Jescaped line".into();
    let records = [
        serde_json::json!({"type": "user", "uuid": "u1", "sessionId": id, "cwd": "/w/app",
            "timestamp": "2026-12-01T10:00:00Z",
            "message": {"role": "user", "content": "count to thirty"}}),
        serde_json::json!({"type": "assistant", "uuid": "a1", "sessionId": id, "cwd": "/w/app",
            "timestamp": "2026-12-01T10:00:01Z",
            "message": {"id": "m1", "role": "assistant", "model": "claude-test-1",
                "content": [{"type": "thinking", "thinking": thinking.join("\n"), "signature": "s"}]}}),
        serde_json::json!({"type": "assistant", "uuid": "a2", "sessionId": id, "cwd": "/w/app",
            "timestamp": "2026-12-01T10:00:02Z",
            "message": {"id": "m2", "role": "assistant", "model": "claude-test-1",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                    "input": {"command": "count 30"}}]}}),
        serde_json::json!({"type": "user", "uuid": "u2", "sessionId": id, "cwd": "/w/app",
            "timestamp": "2026-12-01T10:00:03Z",
            "message": {"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": "toolu_1", "content": output.join("\n")}]}}),
        serde_json::json!({"type": "assistant", "uuid": "a3", "sessionId": id, "cwd": "/w/app",
            "timestamp": "2026-12-01T10:00:04Z",
            "message": {"id": "m3", "role": "assistant", "model": "claude-test-1",
                "content": [{"type": "text", "text": "counted to thirty"}]}}),
    ];
    records.iter().map(|r| format!("{r}\n")).collect()
}

/// The session's thinking and its command's long result shown folded as `read` shortens them;
/// `o` opens the thinking (the first fold on screen) and folds it back; with the thinking
/// hidden (`4`), `o` opens the result, whose hidden lines come redacted and with their escape
/// sequences shown as text.
fn folds_at(cols: u16, rows: u16) {
    if !require_tool("tmux") {
        return;
    }
    let (home, session) = home();
    std::fs::write(&session, folding_session(SESSION)).unwrap();
    let pane = Pane::start(home.path(), cols, rows);
    pane.wait_for("▸ down: failed");
    pane.wait_for("of the older one");
    pane.keys(&["Enter"]);
    let shut = pane.wait_for("counted to thirty");
    assert!(shut.contains("▸ 6 more lines (o opens)"), "{shut}");
    assert!(shut.contains("▸ 24 more lines (o opens)"), "{shut}");
    assert!(!shut.contains("pondering step 6"), "{shut}");
    insta::assert_snapshot!(format!("ui_folds_shut_{cols}x{rows}"), stable(&shut));

    // The thinking is the first fold on screen: `o` opens it, and folds it back.
    pane.keys(&["o"]);
    let thinking = pane.wait_for("▾ 12 lines (o folds)");
    assert!(thinking.contains("pondering step 11"), "{thinking}");
    insta::assert_snapshot!(
        format!("ui_fold_thinking_open_{cols}x{rows}"),
        stable(&thinking)
    );
    pane.keys(&["o"]);
    let again = pane.wait_for("fold shut");
    assert!(!again.contains("pondering step 11"), "{again}");

    // The thinking hidden, the result is the first fold: opened, then its end shown.
    pane.keys(&["4", "o", "G"]);
    let result = pane.wait_for("▾ 30 lines (o folds)");
    assert!(result.contains("output line 29"), "{result}");
    assert!(!result.contains("pondering"), "{result}");
    assert!(result.contains("[REDACTED:"), "{result}");
    assert!(!result.contains("ghp_aB3dE5"), "{result}");
    assert!(result.contains("escaped line"), "{result}");
    let title = pane.tmux(&["display-message", "-p", "#{pane_title}"]);
    assert!(
        !title.contains("owned"),
        "the transcript set the title: {title}"
    );
    insta::assert_snapshot!(
        format!("ui_fold_result_open_{cols}x{rows}"),
        stable(&result)
    );
    pane.keys(&["q"]);
    pane.wait_for("session");
    pane.keys(&["q"]);
}

#[test]
fn ui_opens_folds_at_80x24() {
    folds_at(80, 24);
}

#[test]
fn ui_opens_folds_at_120x40() {
    folds_at(120, 40);
}
