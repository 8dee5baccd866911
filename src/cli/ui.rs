//! `clankie-read ui [HOST…]`: the interactive view's terminal loop (the view itself, a pure
//! model and its drawing, is `crate::ui`). Each host is listed as `ls` lists it, in a task of its
//! own, so a slow or failing host holds up no other; a session opened is read as `read` reads
//! it (its newest page, redacted) and then polled for the records after the page's cursor, as
//! `--follow` polls. Keys come from a thread that waits on the terminal; every answer and key
//! changes the model, and the frame is drawn again.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use crossterm::event::{Event, KeyEventKind};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use super::context::{Context, GlobalArgs, OpenHost};
use crate::driver::{Reader, roots_for};
use crate::error::{Error, Outcome, UsageError};
use crate::ui::model::{Action, App, OlderPage, SessionRow};
use clankie_engine::cursor::Cursor;
use clankie_engine::page::{Mode, PageRequest};
use clankie_engine::resume::Remote;
use clankie_host::Host;
use clankie_model::Record;
use clankie_model::limits::MAX_LIMIT;
use clankie_model::sanitize::sanitize_line;

mod follow;
pub mod reading;
mod search;

/// The newest sessions of each host the list holds (their heads are read for the titles).
const SESSIONS_PER_HOST: usize = 500;

#[derive(Debug, Args)]
#[command(after_help = after_help())]
pub struct UiArgs {
    /// Hosts to show [default: `local` and every host in the hosts file].
    #[arg(value_name = "HOST")]
    pub host_names: Vec<String>,
    /// Seconds between polls of the open session for new records (fractions allowed).
    #[arg(long, default_value_t = 2.0, value_name = "SECS")]
    pub interval: f64,
}

/// The examples and the keys, after the options (in `--help` and the man page alike).
fn after_help() -> String {
    format!(
        "Examples:
  clankie-read ui                                 this machine and every host of the hosts file
  clankie-read ui devbox local                    two machines' sessions in one list

{}",
        crate::ui::keys::help_text()
    )
}

/// What reaches the loop: a key (or other terminal event), or a read's answer.
enum Message {
    Input(Event),
    Listed(String, Result<Vec<SessionRow>, String>),
    Opened(SessionRow, Result<(Vec<Record>, bool), String>),
    /// The cursor at the start of the first page.
    Started(SessionRow, Option<Cursor>),
    Older(SessionRow, Result<OlderPage, String>),
    Resume(SessionRow, String),
    Grew(SessionRow, Vec<Record>),
    Search(search::Event),
    Follow(follow::Event),
}

/// The terminal as the view leaves it on every way out (raw mode off, the main screen back).
struct TerminalGuard;

impl TerminalGuard {
    fn enter() -> std::io::Result<TerminalGuard> {
        crossterm::terminal::enable_raw_mode()?;
        let guard = TerminalGuard;
        crossterm::execute!(
            std::io::stdout(),
            crossterm::terminal::EnterAlternateScreen,
            crossterm::event::EnableMouseCapture
        )?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let _ = crossterm::execute!(
            std::io::stdout(),
            crossterm::event::DisableMouseCapture,
            crossterm::terminal::LeaveAlternateScreen,
            crossterm::cursor::Show
        );
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

pub(super) async fn run(global: &GlobalArgs, args: UiArgs) -> Result<Outcome, Error> {
    let interval = Duration::try_from_secs_f64(args.interval)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or(UsageError::Interval {
            secs: args.interval,
        })?;
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(UsageError::NotATerminal.into());
    }
    // Nothing may be asked on the terminal the view draws on (a passphrase prompt).
    let ctx = Context::new(global)?.quiet();
    let names = if args.host_names.is_empty() {
        ctx.default_hosts()
    } else {
        args.host_names.clone()
    };
    let size = crossterm::terminal::size()?;
    let now = jiff::Timestamp::now().as_second();
    let mut app = App::new(&names, size, now, global.color_enabled());

    let (tx, mut rx) = unbounded_channel();
    let mut opened: HashMap<String, Arc<OpenHost>> = HashMap::new();
    for name in &names {
        match ctx.open(name) {
            Ok(host) => {
                let host = Arc::new(host);
                opened.insert(name.clone(), host.clone());
                let (tx, name) = (tx.clone(), name.clone());
                tokio::spawn(async move {
                    let listed = list_host(&host).await;
                    let _ = tx.send(Message::Listed(name, listed));
                });
            }
            Err(e) => app.listed(name, Err(one_line(&e))),
        }
    }
    let input = tx.clone();
    std::thread::spawn(move || read_input(&input));
    let mut searcher = search::Searcher::new(opened.clone(), tx.clone(), interval);
    let mut follower = follow::Follower::new(opened.clone(), tx.clone(), interval);

    let guard = TerminalGuard::enter()?;
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    let mut reading: Option<tokio::task::JoinHandle<()>> = None;
    // The open session's reader takes backward reads (cursors) here.
    let mut read_back: Option<UnboundedSender<Cursor>> = None;
    loop {
        terminal.draw(|frame| crate::ui::draw::draw(frame, &app))?;
        let Some(message) = rx.recv().await else {
            break;
        };
        let action = match message {
            Message::Input(Event::Key(key)) if key.kind != KeyEventKind::Release => app.key(key),
            Message::Input(Event::Mouse(mouse)) => app.mouse(mouse),
            Message::Input(Event::Resize(cols, rows)) => {
                app.resize(cols, rows);
                Action::None
            }
            Message::Input(_) => Action::None,
            Message::Listed(host, listed) => {
                app.listed(&host, listed);
                Action::None
            }
            Message::Opened(row, page) => {
                app.opened(&row, page);
                Action::None
            }
            Message::Started(row, start) => {
                app.started_at(&row, start);
                Action::None
            }
            Message::Older(row, page) => app.older(&row, page),
            Message::Resume(row, command) => {
                app.resume_found(&row, command);
                Action::None
            }
            Message::Grew(row, records) => {
                app.grew(&row, records);
                Action::None
            }
            Message::Search(event) => {
                search::apply(&mut app, event);
                Action::None
            }
            Message::Follow(event) => {
                follow::apply(&mut app, event);
                Action::None
            }
        };
        match action {
            Action::None => {}
            Action::Quit => break,
            Action::Open(row) => {
                if let Some(task) = reading.take() {
                    task.abort();
                }
                match opened.get(&row.host) {
                    Some(host) => {
                        let remote = remote(&ctx, global, &row.host);
                        let (host, tx) = (host.clone(), tx.clone());
                        let (back_tx, back_rx) = unbounded_channel();
                        read_back = Some(back_tx);
                        reading = Some(tokio::spawn(async move {
                            read_session(&host, row, remote, interval, back_rx, &tx).await;
                        }));
                    }
                    None => app.opened(&row, Err(format!("{} was not opened", row.host))),
                }
            }
            Action::Close => {
                if let Some(task) = reading.take() {
                    task.abort();
                }
            }
            Action::Copy(text) => copy(&text)?,
            Action::Search(action) => searcher.act(action, &app, &mut reading, |host| {
                remote(&ctx, global, host)
            }),
            Action::Follow(action) => follower.act(action),
            Action::LoadOlder(row, cursor) => {
                if read_back
                    .as_ref()
                    .is_none_or(|back| back.send(cursor).is_err())
                {
                    app.older(&row, Err("the session is not being read".into()));
                }
            }
        }
    }
    if let Some(task) = reading.take() {
        task.abort();
    }
    drop(terminal);
    drop(guard);
    Ok(Outcome::Done)
}

/// Waits on the terminal and hands each event to the loop, until the loop is gone.
fn read_input(tx: &UnboundedSender<Message>) {
    loop {
        match crossterm::event::poll(Duration::from_millis(200)) {
            Ok(true) => match crossterm::event::read() {
                Ok(event) => {
                    if tx.send(Message::Input(event)).is_err() {
                        return;
                    }
                }
                Err(_) => return,
            },
            Ok(false) if tx.is_closed() => return,
            Ok(false) => {}
            Err(_) => return,
        }
    }
}

/// An error as the one line a row or the status shows.
fn one_line(error: &Error) -> String {
    sanitize_line(&error.to_string().replace('\n', " "))
}

/// The host's newest sessions, as `ls` lists them, with their titles and directories.
async fn list_host(opened: &OpenHost) -> Result<Vec<SessionRow>, String> {
    let roots = roots_for(&opened.roots, None);
    let reader = Reader::new(&opened.host);
    let (_, mut sessions) = reader
        .list_sessions(&roots)
        .await
        .map_err(|e| one_line(&Error::from(crate::driver::DriverError::from(e))))?;
    sessions.sort_by(|a, b| (b.entry.mtime, &a.id).cmp(&(a.entry.mtime, &b.id)));
    sessions.truncate(SESSIONS_PER_HOST);
    let heads = reader.session_heads(&sessions).await;
    let host = opened.host.name().to_string();
    Ok(sessions
        .into_iter()
        .zip(heads)
        .map(|(session, head)| SessionRow {
            host: host.clone(),
            harness: session.harness().name().to_string(),
            id: session.id,
            mtime: session.entry.mtime,
            size: session.entry.size,
            title: head.title,
            cwd: head.cwd,
        })
        .collect())
}

/// How `ssh` reaches the host named `name` for a resume command, when it is not this machine.
fn remote(ctx: &Context, global: &GlobalArgs, name: &str) -> Option<Remote> {
    let config = ctx.host_config(name);
    match &config.transport {
        clankie_host::Transport::Local => None,
        clankie_host::Transport::Ssh(destination) => Some(Remote {
            ssh_args: super::resume::ssh_args(destination, global.ssh_config.as_deref()),
            powershell: config.shell == Some(clankie_host::Dialect::PowerShell),
        }),
    }
}

/// Reads the session of `row` as `read` does (its newest page, redacted), says its resume
/// command, then polls it every `interval` for the records after the last cursor, and reads
/// the page before each cursor `back` sends (a backward read), until the task is aborted (the
/// session closed).
async fn read_session(
    opened: &OpenHost,
    row: SessionRow,
    remote: Option<Remote>,
    interval: Duration,
    mut back: tokio::sync::mpsc::UnboundedReceiver<Cursor>,
    tx: &UnboundedSender<Message>,
) {
    let request = match reading::tail_request(&row) {
        Ok(request) => request,
        Err(e) => {
            let _ = tx.send(Message::Opened(row, Err(e)));
            return;
        }
    };
    let reader = reading::view_reader(&opened.host);
    let read = async {
        let session = request.resolve(&reader, &opened.roots).await?;
        let page = request.read_page(&reader, &session).await?;
        Ok::<_, crate::driver::DriverError>((session, page))
    };
    let (session, page) = match read.await {
        Ok(read) => read,
        Err(e) => {
            let _ = tx.send(Message::Opened(row, Err(one_line(&e.into()))));
            return;
        }
    };
    let mut cursor = page.cursor.clone();
    let _ = tx.send(Message::Opened(row.clone(), Ok((page.records, page.older))));
    let _ = tx.send(Message::Started(row.clone(), page.start));
    if clankie_engine::harness::resumable(session.harness()) {
        let explicit_root = opened
            .roots
            .iter()
            .any(|r| r.harness == session.harness() && r.dir.is_some());
        if let Ok(command) = reader.resume_command(&session, explicit_root, remote).await {
            let _ = tx.send(Message::Resume(row.clone(), command));
        }
    }
    let mut next_poll = tokio::time::Instant::now() + interval;
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(next_poll) => next_poll += interval,
            Some(start) = back.recv() => {
                let page = reader
                    .read_page_whole(&session, reading::back_request(start))
                    .await
                    .map(|page| (page.records, page.older, page.start))
                    .map_err(|e| one_line(&e.into()));
                if tx.send(Message::Older(row.clone(), page)).is_err() {
                    return;
                }
                continue;
            }
        }
        let request = PageRequest {
            mode: Mode::Since(cursor.clone()),
            limit: MAX_LIMIT,
            strict: false,
            redact: true,
        };
        // A poll that fails is tried again at the next one, as `--follow` does.
        if let Ok(page) = reader.read_page_whole(&session, request).await {
            cursor = page.cursor;
            if !page.records.is_empty()
                && tx.send(Message::Grew(row.clone(), page.records)).is_err()
            {
                return;
            }
        }
    }
}

/// Puts `text` on the clipboard of the terminal (and of the terminal's terminal, through
/// tmux or ssh) with OSC 52; the status line shows it too, for a terminal that ignores it.
fn copy(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    write!(out, "\x1b]52;c;{}\x07", base64(text.as_bytes()))?;
    out.flush()
}

/// Standard base64 with padding, as OSC 52 takes it.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_as_osc_52_takes_it() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("claude --resume 3f1c", "Y2xhdWRlIC0tcmVzdW1lIDNmMWM="),
        ] {
            assert_eq!(super::base64(plain.as_bytes()), encoded);
        }
    }
}
