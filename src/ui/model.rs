//! The view's state and what changes it: a key ([`App::key`]), a host's listing
//! ([`App::listed`]), a page of the open session ([`App::opened`]), the records it grew by
//! ([`App::grew`]). No I/O: what a key asks of the world (open a session, copy a command, quit)
//! is returned as an [`Action`] for the terminal loop to carry out.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};

use super::lines::{Folds, Kinds, Placed, layout};
use clankie_engine::cursor::Cursor;
use clankie_model::Record;

pub mod follow;
pub mod search;

use follow::{FollowAction, HostFollow};
use search::{GlobalSearch, HitView, SearchAction};
mod back;
mod fold;
pub use back::{Back, MAX_LOADED_RECORDS, OlderPage};

/// A session as the list shows it: what `ls` knows of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    pub host: String,
    pub harness: String,
    pub id: String,
    /// Unix seconds.
    pub mtime: i64,
    pub size: u64,
    pub title: Option<String>,
    pub cwd: Option<String>,
}

impl SessionRow {
    /// Whether the filter `text` (lower case) is in its title, project, harness or host.
    fn matches(&self, text: &str) -> bool {
        [
            Some(self.host.as_str()),
            Some(self.harness.as_str()),
            self.title.as_deref(),
            self.cwd.as_deref(),
            Some(self.id.as_str()),
        ]
        .into_iter()
        .flatten()
        .any(|field| field.to_lowercase().contains(text))
    }
}

/// Where a host's listing is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostState {
    /// Asked, not answered yet.
    Listing,
    /// Answered with this many sessions.
    Listed(usize),
    /// Failed: the error's one line.
    Failed(String),
}

/// What the terminal loop must do after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing beyond drawing again.
    None,
    /// End the view.
    Quit,
    /// Read the newest page of this session and keep polling it (the state shows it loading).
    Open(SessionRow),
    /// Stop reading the open session (back to the list).
    Close,
    /// Put this text on the clipboard (OSC 52).
    Copy(String),
    /// The global search's ([`search`]).
    Search(SearchAction),
    /// The host-wide follow's ([`follow`]).
    Follow(FollowAction),
    /// Read the page of this session before the cursor (the start of what is loaded).
    LoadOlder(SessionRow, Cursor),
}

/// A line entered at the bottom of the screen: the list's filter or a search.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prompt {
    pub text: String,
    /// Keys go to the prompt (until Enter or Esc).
    pub active: bool,
}

impl Prompt {
    /// Takes a key while active: `true` when it was the prompt's (typed, erased, ended).
    fn key(&mut self, key: &KeyEvent) -> bool {
        if !self.active {
            return false;
        }
        match key.code {
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => self.text.push(c),
            KeyCode::Backspace => {
                self.text.pop();
            }
            KeyCode::Enter => self.active = false,
            KeyCode::Esc => {
                self.active = false;
                self.text.clear();
            }
            _ => return false,
        }
        true
    }
}

/// The session list across hosts.
#[derive(Debug, Clone, Default)]
pub struct ListState {
    /// Each host asked, in the order given, with where its listing is.
    pub hosts: Vec<(String, HostState)>,
    /// Every session listed so far, newest first.
    pub sessions: Vec<SessionRow>,
    pub filter: Prompt,
    /// Index into [`ListState::shown`].
    pub selected: usize,
}

impl ListState {
    /// The sessions the filter keeps, newest first.
    pub fn shown(&self) -> Vec<&SessionRow> {
        let text = self.filter.text.to_lowercase();
        self.sessions
            .iter()
            .filter(|row| text.is_empty() || row.matches(&text))
            .collect()
    }
}

/// The open session.
#[derive(Debug, Clone)]
pub struct SessionState {
    pub row: SessionRow,
    /// The records loaded, oldest first.
    pub records: Vec<Record>,
    /// The first page is still being read.
    pub loading: bool,
    pub error: Option<String>,
    /// Records exist before the first one loaded.
    pub earlier: bool,
    /// The index of the first record that arrived while the session was open.
    pub new_from: Option<usize>,
    pub kinds: Kinds,
    /// Stay at the end as records arrive.
    pub follow: bool,
    pub search: Prompt,
    /// The model of the newest record that names one.
    pub model: Option<String>,
    pub tokens: crate::render::text::TokenTotals,
    /// The harness's command that resumes the session, once known.
    pub resume: Option<String>,
    /// Which folds are open.
    pub folds: Folds,
    /// The lines drawn, for [`SessionState::width`] columns.
    pub lines: Vec<String>,
    /// Where each record shown is among the lines.
    pub placed: Vec<Placed>,
    pub width: usize,
    /// The first line shown.
    pub top: usize,
    /// Opened at a global search's hit: the hit's record, and the records after those read.
    pub hit: Option<HitView>,
    /// Where the loaded records start, and what is being read back ([`back`]).
    pub back: Back,
}

impl SessionState {
    fn new(row: SessionRow, width: usize) -> SessionState {
        SessionState {
            row,
            records: Vec::new(),
            loading: true,
            error: None,
            earlier: false,
            new_from: None,
            kinds: Kinds::default(),
            follow: false,
            search: Prompt::default(),
            model: None,
            tokens: Default::default(),
            resume: None,
            folds: Folds::default(),
            lines: Vec::new(),
            placed: Vec::new(),
            width,
            top: 0,
            hit: None,
            back: Back::default(),
        }
    }

    /// The lines again, after the records, the kinds, the folds or the width changed.
    fn relayout(&mut self) {
        let layout = layout(
            &self.records,
            self.kinds,
            self.width,
            self.new_from,
            Some(&self.folds),
        );
        self.lines = layout.lines;
        self.placed = layout.placed;
        HitView::place(self);
    }

    fn note(&mut self, records: &[Record]) {
        for r in records {
            if let Some(model) = &r.model {
                self.model = Some(model.clone());
            }
            if let Some(usage) = &r.usage {
                self.tokens.add(usage);
            }
        }
    }

    fn last_top(&self, body: usize) -> usize {
        self.lines.len().saturating_sub(body)
    }

    /// The next line from `from` (going forward, or back) that holds the search text.
    fn find(&self, from: usize, forward: bool) -> Option<usize> {
        let text = self.search.text.to_lowercase();
        if text.is_empty() || self.lines.is_empty() {
            return None;
        }
        let n = self.lines.len();
        (1..=n)
            .map(|step| {
                if forward {
                    (from + step) % n
                } else {
                    (from + n - step % n) % n
                }
            })
            .find(|&i| self.lines[i].to_lowercase().contains(&text))
    }
}

/// The whole view.
#[derive(Debug, Clone)]
pub struct App {
    pub list: ListState,
    pub session: Option<SessionState>,
    /// The global search, over the list (and under a session opened from it).
    pub search: Option<GlobalSearch>,
    /// The host-wide follow, over the list.
    pub follow: Option<HostFollow>,
    /// The help screen is up.
    pub help: bool,
    /// Colours may be used (not under `NO_COLOR` or `--color never`).
    pub color: bool,
    /// The terminal's size (columns, rows).
    pub size: (u16, u16),
    /// The present time (Unix seconds), for the list's ages.
    pub now: i64,
    /// One line for the status bar (what a key did), until the next key.
    pub status: Option<String>,
}

/// Rows the session view's header and status bar take.
pub const SESSION_CHROME: u16 = 4;
/// Rows the list's title, column header and status bar take.
pub const LIST_CHROME: u16 = 3;

impl App {
    /// A view of `hosts`, each listing.
    pub fn new(hosts: &[String], size: (u16, u16), now: i64, color: bool) -> App {
        App {
            list: ListState {
                hosts: hosts
                    .iter()
                    .map(|h| (h.clone(), HostState::Listing))
                    .collect(),
                ..ListState::default()
            },
            session: None,
            search: None,
            follow: None,
            help: false,
            color,
            size,
            now,
            status: None,
        }
    }

    /// Rows of the session's body.
    pub fn body_rows(&self) -> usize {
        usize::from(self.size.1.saturating_sub(SESSION_CHROME)).max(1)
    }

    /// Rows of the list's table (host rows and sessions).
    pub fn list_rows(&self) -> usize {
        usize::from(self.size.1.saturating_sub(LIST_CHROME)).max(1)
    }

    /// The terminal was resized.
    pub fn resize(&mut self, cols: u16, rows: u16) {
        let was = self.body_rows();
        let follow_at_end = self.follow_at_end();
        self.size = (cols, rows);
        self.follow_resized(follow_at_end);
        let body = self.body_rows();
        if let Some(s) = &mut self.session {
            let at_end = s.top >= s.last_top(was);
            s.width = usize::from(cols).max(1);
            s.relayout();
            s.top = if at_end {
                s.last_top(body)
            } else {
                s.top.min(s.last_top(body))
            };
        }
    }

    /// A host's listing answered: its sessions merged into the list (newest first), or its
    /// failure shown on its row.
    pub fn listed(&mut self, host: &str, result: Result<Vec<SessionRow>, String>) {
        let selected = self.list.shown().get(self.list.selected).map(|r| {
            let r: &SessionRow = r;
            (r.host.clone(), r.id.clone())
        });
        let state = match result {
            Ok(rows) => {
                let n = rows.len();
                self.list.sessions.retain(|r| r.host != host);
                self.list.sessions.extend(rows);
                self.list
                    .sessions
                    .sort_by(|a, b| (b.mtime, &a.host, &a.id).cmp(&(a.mtime, &b.host, &b.id)));
                HostState::Listed(n)
            }
            Err(message) => HostState::Failed(message),
        };
        if let Some(entry) = self.list.hosts.iter_mut().find(|(name, _)| name == host) {
            entry.1 = state;
        } else {
            self.list.hosts.push((host.to_string(), state));
        }
        // The selection stays on its session as rows arrive above it.
        if let Some((host, id)) = selected {
            let shown = self.list.shown();
            if let Some(i) = shown.iter().position(|r| r.host == host && r.id == id) {
                self.list.selected = i;
            }
        }
    }

    /// The first page of the open session (if it is still `row`'s): its records, and whether
    /// earlier ones exist; or why it could not be read.
    pub fn opened(&mut self, row: &SessionRow, result: Result<(Vec<Record>, bool), String>) {
        let body = self.body_rows();
        let Some(s) = self.session.as_mut().filter(|s| s.row == *row) else {
            return;
        };
        s.loading = false;
        match result {
            Ok((records, earlier)) => {
                s.note(&records);
                s.records = records;
                s.earlier = earlier;
                s.relayout();
                // A session opens at its newest records, as `read` shows them.
                s.top = s.last_top(body);
            }
            Err(message) => s.error = Some(message),
        }
    }

    /// The open session's resume command, once found.
    pub fn resume_found(&mut self, row: &SessionRow, command: String) {
        if let Some(s) = self.session.as_mut().filter(|s| s.row == *row) {
            s.resume = Some(command);
        }
    }

    /// Records that completed in the open session since it was read: appended after the
    /// new-records marker; at the end when following.
    pub fn grew(&mut self, row: &SessionRow, records: Vec<Record>) {
        let body = self.body_rows();
        let Some(s) = self.session.as_mut().filter(|s| s.row == *row) else {
            return;
        };
        // Records after newer ones let go would not follow what is loaded.
        if records.is_empty() || s.back.newer_dropped {
            return;
        }
        let at_end = s.top >= s.last_top(body);
        s.note(&records);
        s.new_from.get_or_insert(s.records.len());
        s.records.extend(records);
        s.relayout();
        if s.follow || at_end {
            s.top = s.last_top(body);
        }
    }

    /// A mouse event: the wheel scrolls the list or the session by three lines.
    pub fn mouse(&mut self, event: MouseEvent) -> Action {
        let code = match event.kind {
            MouseEventKind::ScrollDown => KeyCode::Down,
            MouseEventKind::ScrollUp => KeyCode::Up,
            _ => return Action::None,
        };
        for _ in 0..3 {
            self.key(KeyEvent::new(code, KeyModifiers::NONE));
        }
        Action::None
    }

    /// A key press.
    pub fn key(&mut self, key: KeyEvent) -> Action {
        self.status = None;
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Action::Quit;
        }
        if self.help {
            // Any key closes the help.
            self.help = false;
            return Action::None;
        }
        if self.session.is_some() {
            let action = self.session_key(key);
            self.ask_later(action)
        } else if self.follow.is_some() {
            self.follow_key(key)
        } else if self.search.is_some() {
            self.search_key(key)
        } else {
            self.list_key(key)
        }
    }

    fn list_key(&mut self, key: KeyEvent) -> Action {
        let rows = self.list_rows();
        let list = &mut self.list;
        if list.filter.key(&key) {
            list.selected = 0;
            return Action::None;
        }
        let count = list.shown().len();
        let page = rows.saturating_sub(list.hosts.len()).max(1);
        let last = count.saturating_sub(1);
        match key.code {
            KeyCode::Char('q') => return Action::Quit,
            KeyCode::Char('?') => self.help = true,
            KeyCode::Char('j') | KeyCode::Down => list.selected = (list.selected + 1).min(last),
            KeyCode::Char('k') | KeyCode::Up => list.selected = list.selected.saturating_sub(1),
            KeyCode::PageDown | KeyCode::Char(' ') => {
                list.selected = (list.selected + page).min(last)
            }
            KeyCode::PageUp => list.selected = list.selected.saturating_sub(page),
            KeyCode::Char('g') | KeyCode::Home => list.selected = 0,
            KeyCode::Char('G') | KeyCode::End => list.selected = last,
            KeyCode::Esc => list.filter = Prompt::default(),
            KeyCode::Char('s') => self.search_prompt(),
            KeyCode::Char('F') => return self.follow_host(),
            KeyCode::Char('/') => {
                list.filter = Prompt {
                    text: String::new(),
                    active: true,
                };
            }
            // Typing filters.
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                list.filter = Prompt {
                    text: c.to_string(),
                    active: true,
                };
                list.selected = 0;
            }
            KeyCode::Enter => {
                if let Some(row) = list.shown().get(list.selected).map(|r| (*r).clone()) {
                    self.session = Some(SessionState::new(
                        row.clone(),
                        usize::from(self.size.0).max(1),
                    ));
                    return Action::Open(row);
                }
            }
            _ => {}
        }
        Action::None
    }

    fn session_key(&mut self, key: KeyEvent) -> Action {
        if let Some(action) = self.back_key(&key) {
            return action;
        }
        if self.fold_key(&key) {
            return Action::None;
        }
        let body = self.body_rows();
        let Some(s) = self.session.as_mut() else {
            return Action::None;
        };
        if s.search.active {
            s.search.key(&key);
            if !s.search.active && key.code == KeyCode::Enter {
                self.search_step(true);
            }
            return Action::None;
        }
        let last = s.last_top(body);
        let half = (body / 2).max(1);
        let down = |s: &mut SessionState, n: usize| s.top = (s.top + n).min(last);
        let up = |s: &mut SessionState, n: usize| {
            s.top = s.top.saturating_sub(n);
            s.follow = false;
        };
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => {
                self.session = None;
                return Action::Close;
            }
            KeyCode::Char('?') => self.help = true,
            KeyCode::Char('j' | 'e') | KeyCode::Down | KeyCode::Enter => down(s, 1),
            KeyCode::Char('k' | 'y') | KeyCode::Up => up(s, 1),
            KeyCode::Char(' ' | 'f') | KeyCode::PageDown => down(s, body),
            KeyCode::Char('b') | KeyCode::PageUp => up(s, body),
            KeyCode::Char('d') => down(s, half),
            KeyCode::Char('u') => up(s, half),
            KeyCode::Char('G') | KeyCode::End => s.top = last,
            KeyCode::Char('F') => {
                s.follow = !s.follow;
                if s.follow {
                    s.top = last;
                }
                let said = if s.follow { "on" } else { "off" };
                self.status = Some(format!("follow {said}"));
            }
            KeyCode::Char('/') => {
                s.search = Prompt {
                    text: String::new(),
                    active: true,
                }
            }
            KeyCode::Char('n') => self.search_step(true),
            KeyCode::Char('N') => self.search_step(false),
            KeyCode::Char(c @ '1'..='4') => {
                let kinds = &mut s.kinds;
                let (name, on) = match c {
                    '1' => ("user", &mut kinds.user),
                    '2' => ("assistant", &mut kinds.assistant),
                    '3' => ("tools", &mut kinds.tools),
                    _ => ("thinking", &mut kinds.thinking),
                };
                *on = !*on;
                let said = if *on { "shown" } else { "hidden" };
                self.status = Some(format!("{name} {said}"));
                s.relayout();
                s.top = s.top.min(s.last_top(body));
            }
            KeyCode::Char('c') => match s.resume.clone() {
                Some(command) => {
                    self.status = Some(format!("copied: {command}"));
                    return Action::Copy(command);
                }
                None => self.status = Some("no resume command for this session".into()),
            },
            _ => {}
        }
        self.older_wanted()
    }

    /// Moves the open session to the next (or previous) line holding the search text.
    fn search_step(&mut self, forward: bool) {
        let body = self.body_rows();
        let Some(s) = self.session.as_mut() else {
            return;
        };
        if s.search.text.is_empty() {
            return;
        }
        match s.find(s.top, forward) {
            Some(line) => {
                s.top = line.min(s.last_top(body));
                s.follow = false;
                // The hit is the first line shown, unless the end is in view.
                if line > s.top {
                    self.status = Some(format!("/{} (line {})", s.search.text, line + 1));
                }
            }
            None => self.status = Some(format!("not found: {}", s.search.text)),
        }
    }

    /// The line of the open session a search hit is on, when the view shows it.
    pub fn search_text(&self) -> Option<&str> {
        let s = self.session.as_ref()?;
        (!s.search.text.is_empty()).then_some(s.search.text.as_str())
    }
}

#[cfg(test)]
mod tests;
