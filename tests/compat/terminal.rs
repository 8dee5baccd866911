//! Driving a CLI that has no non-interactive mode (OpenHands 1.2) through its terminal UI: the
//! command runs on a pseudo-terminal that util-linux's `script` opens, and the suite types
//! what a user would, reading the screen to know when: the prompt when the CLI waits for one,
//! Enter for each question it asks (its first choice), then the CLI's exit command and Enter
//! to confirm it.

use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// What a terminal UI shows and takes, as plain text (escape sequences left out).
pub struct Dialog {
    /// Shown while the CLI waits for a prompt.
    pub ready: &'static str,
    /// Shown once the CLI works on what it was given (the run started, a tool ran): a screen
    /// drawn again before it (the same question twice) is not a new question.
    pub busy: &'static [&'static str],
    /// A question answered with its first choice (Enter).
    pub question: &'static str,
    /// Typed at the next `ready` after the prompt: ends the CLI.
    pub exit: &'static str,
    /// The question that follows `exit`, answered with Enter.
    pub exit_question: &'static str,
}

/// The pty's size: the CLI draws its panels to it.
const COLUMNS: u32 = 120;
const ROWS: u32 = 40;

/// Runs `cmd` (a command the suite built: `env -i … openhands`, or `sh -c LINE`) on a
/// pseudo-terminal, types `prompt` when it is ready and goes through `dialog` to its end;
/// the output is the screen's bytes. Fails when the CLI is still running after `timeout`.
pub fn run(cmd: &Command, dialog: &Dialog, prompt: &str, timeout: Duration) -> Output {
    let mut line = format!("stty cols {COLUMNS} rows {ROWS}; exec");
    for word in std::iter::once(cmd.get_program()).chain(cmd.get_args()) {
        line.push(' ');
        line.push_str(&quote(&word.to_string_lossy()));
    }
    let mut script = Command::new("script");
    script.args(["-q", "-e", "-f", "-c", &line, "/dev/null"]);
    if let Some(dir) = cmd.get_current_dir() {
        script.current_dir(dir);
    }
    let mut child = script
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running script(1) (util-linux): {e}"));
    let mut keys = child.stdin.take().unwrap();
    let screen = Arc::new(Mutex::new(Vec::new()));
    let mut stdout = child.stdout.take().unwrap();
    let shared = screen.clone();
    let reader = thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            shared.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    let deadline = Instant::now() + timeout;
    let text = || plain(&screen.lock().unwrap());
    let mut step = Step::Prompt;
    // Where on the screen the next step's text must show (past what was answered).
    let mut from = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{line}: still running after {timeout:?} (waiting to {step:?}); the screen:\n{}",
                text()
            );
        }
        thread::sleep(Duration::from_millis(200));
        let shown = text();
        let after = &shown[from.min(shown.len())..];
        let typed: Option<String> = match step {
            Step::Prompt => after.contains(dialog.ready).then(|| format!("{prompt}\r")),
            Step::Answer => {
                let ready = after.rfind(dialog.ready);
                let question = after.rfind(dialog.question);
                match (ready, question) {
                    (Some(r), q) if q.is_none_or(|q| r > q) => {
                        step = Step::Exit;
                        Some(format!("{}\r", dialog.exit))
                    }
                    (_, Some(_)) => Some("\r".to_string()),
                    _ => None,
                }
            }
            Step::Exit => after.contains(dialog.exit_question).then(|| {
                step = Step::Ended;
                "\r".to_string()
            }),
            Step::Ended => None,
        };
        let Some(typed) = typed else { continue };
        if step == Step::Prompt {
            step = Step::Answer;
        }
        // The CLI may draw its screen again before it reads the keys: wait for it to work on
        // them before looking for the next question.
        thread::sleep(Duration::from_millis(300));
        let _ = keys.write_all(typed.as_bytes());
        let _ = keys.flush();
        from = shown.len();
        if step == Step::Answer {
            // A CLI that drew its question again rather than take the answer (prompt_toolkit
            // asking a dumb terminal for the cursor's place) shows it again past `from`: after
            // a while without work, the loop answers that one.
            let patience = deadline.min(Instant::now() + Duration::from_secs(10));
            from = wait_for_any(&text, from, dialog.busy, patience).unwrap_or(from);
        }
    };
    drop(keys);
    let _ = reader.join();
    let mut stderr = Vec::new();
    let _ = child.stderr.take().unwrap().read_to_end(&mut stderr);
    let stdout = screen.lock().unwrap().clone();
    Output {
        status,
        stdout,
        stderr,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Type the prompt when the CLI is ready.
    Prompt,
    /// Answer each question; at the next ready, type the exit command.
    Answer,
    /// Confirm the exit.
    Exit,
    /// Wait for the CLI to end.
    Ended,
}

/// Waits until one of `marks` shows past `from` (or the deadline); the position just past it.
fn wait_for_any(
    text: &dyn Fn() -> String,
    from: usize,
    marks: &[&str],
    deadline: Instant,
) -> Option<usize> {
    while Instant::now() < deadline {
        let shown = text();
        let after = &shown[from.min(shown.len())..];
        if let Some(at) = marks
            .iter()
            .filter_map(|m| after.find(m).map(|a| a + m.len()))
            .min()
        {
            return Some(from + at);
        }
        thread::sleep(Duration::from_millis(100));
    }
    None
}

/// The screen's bytes as text without escape sequences and carriage returns.
fn plain(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates up to a final byte in @..~.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC: up to BEL or ST.
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                // A charset designation takes one more character; others are two in all.
                Some('(' | ')') => {
                    chars.next();
                }
                _ => {}
            },
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// `word` quoted for `sh`.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}
