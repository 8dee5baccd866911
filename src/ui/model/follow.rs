//! Every session of a host followed at once (`F` in the list): the newest records of its most
//! recently changed sessions, a marker, then each record as it completes, in one merged view
//! with the session named on each line; sessions the follow meets that the list lacks join
//! the list.

use std::collections::HashSet;

use crossterm::event::{KeyCode, KeyEvent};

use super::{Action, App, HostState, SessionRow};
use crate::ui::lines::{Kinds, NEW_MARKER, plain, record_lines};
use clankie_model::Record;

/// Records the merged view keeps at most; the oldest go first (the view's memory stays
/// bounded however long it runs).
pub const MAX_FOLLOWED_RECORDS: usize = 5_000;

/// Below this width a line names its session by id alone, without the project.
const NARROW: usize = 60;

/// How the text renderer starts the line of a new day.
const DAY_LINE: &str = "── ";

/// What the loop must do for a host-wide follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FollowAction {
    /// Follow every session of `host`; `recent` are its most recently changed sessions, whose
    /// newest records come first, before the marker.
    Start {
        host: String,
        recent: Vec<SessionRow>,
    },
    /// Stop following.
    Stop,
}

/// A record of the merged view, with the session it is of.
#[derive(Debug, Clone)]
pub struct Followed {
    pub session: String,
    pub cwd: Option<String>,
    pub record: Record,
}

/// The merged view of a host's sessions.
#[derive(Debug, Clone)]
pub struct HostFollow {
    pub host: String,
    /// How many sessions the follow keeps a cursor for, once it started; or why it failed.
    pub started: Option<Result<usize, String>>,
    pub records: Vec<Followed>,
    /// Where the records that arrived while following start (after those read at the start).
    pub new_from: Option<usize>,
    /// `(session, record id)` of the records read at the start: the follow's first poll may
    /// give them again.
    context: HashSet<(String, String)>,
    pub lines: Vec<String>,
    pub width: usize,
    pub top: usize,
    /// The last day line drawn: a run of records of the same day as the run before it goes
    /// without one.
    day: Option<String>,
    /// One line from the follow (a dropped connection, a retry), until the next.
    pub warning: Option<String>,
}

impl HostFollow {
    fn new(host: String, width: usize) -> HostFollow {
        HostFollow {
            host,
            started: None,
            records: Vec::new(),
            new_from: None,
            context: HashSet::new(),
            lines: Vec::new(),
            width,
            top: 0,
            day: None,
            warning: None,
        }
    }

    fn last_top(&self, body: usize) -> usize {
        self.lines.len().saturating_sub(body)
    }

    /// The lines again (after a resize, or records let go at the bound).
    fn relayout(&mut self) {
        self.lines.clear();
        self.day = None;
        let split = self.new_from.unwrap_or(self.records.len());
        let lines = self.render(0..split);
        self.lines.extend(lines);
        if self.new_from.is_some() {
            self.lines.push(NEW_MARKER.to_string());
            let lines = self.render(split..self.records.len());
            self.lines.extend(lines);
        }
    }

    /// The lines of `records[range]`: each run of one session's records rendered together,
    /// every line led by the session's label; a day's line once, unlabelled, where the day
    /// changes.
    fn render(&mut self, range: std::ops::Range<usize>) -> Vec<String> {
        let records = &self.records[range];
        let mut lines = Vec::new();
        let mut start = 0;
        while start < records.len() {
            let session = &records[start].session;
            let run = records[start..]
                .iter()
                .take_while(|f| f.session == *session)
                .count();
            let label = label(session, records[start].cwd.as_deref(), self.width);
            let width = self.width.saturating_sub(label.chars().count()).max(1);
            let run_records: Vec<Record> = records[start..start + run]
                .iter()
                .map(|f| f.record.clone())
                .collect();
            for line in record_lines(&run_records, Kinds::default(), width, None) {
                if line.starts_with(DAY_LINE) {
                    if self.day.as_ref() != Some(&line) {
                        lines.push(line.clone());
                        self.day = Some(line);
                    }
                    continue;
                }
                lines.push(format!("{label}{line}"));
            }
            start += run;
        }
        lines
    }

    /// Adds records, at the end; at the bound, the oldest are let go.
    fn push(&mut self, records: Vec<Followed>) {
        let from = self.records.len();
        self.records.extend(records);
        if self.records.len() > MAX_FOLLOWED_RECORDS {
            let over = self.records.len() - MAX_FOLLOWED_RECORDS;
            self.records.drain(..over);
            self.new_from = self.new_from.map(|n| n.saturating_sub(over));
            self.relayout();
        } else {
            let lines = self.render(from..self.records.len());
            self.lines.extend(lines);
        }
    }
}

/// A session's label at the start of each of its lines: its id's first 8 characters and, in a
/// pane wide enough, its project (the last component of its directory), then ` │ `.
pub fn label(session: &str, cwd: Option<&str>, width: usize) -> String {
    let id: String = session.chars().take(8).collect();
    if width < NARROW {
        return plain(&format!("{id:<8}│"));
    }
    let project = cwd
        .map(|c| c.trim_end_matches(['/', '\\']))
        .and_then(|c| c.rsplit(['/', '\\']).next())
        .filter(|p| !p.is_empty())
        .unwrap_or("-");
    let project: String = if project.chars().count() > 12 {
        let kept: String = project.chars().take(11).collect();
        format!("{kept}…")
    } else {
        project.to_string()
    };
    plain(&format!("{id:<8} {project:<12} │ "))
}

/// Sessions whose newest records open a host-wide follow, before the marker.
pub const RECENT_SESSIONS: usize = 3;

impl App {
    /// `F` in the list: follows the host the filter names, else the selected session's host.
    pub(super) fn follow_host(&mut self) -> Action {
        let filter = self.list.filter.text.to_lowercase();
        let named = self
            .list
            .hosts
            .iter()
            .map(|(h, _)| h)
            .find(|h| h.to_lowercase() == filter)
            .cloned();
        let selected = self
            .list
            .shown()
            .get(self.list.selected)
            .map(|r| r.host.clone());
        let Some(host) = named.or(selected) else {
            self.status = Some("no host to follow: select one of its sessions".into());
            return Action::None;
        };
        let recent = self
            .list
            .sessions
            .iter()
            .filter(|r| r.host == host)
            .take(RECENT_SESSIONS)
            .cloned()
            .collect();
        self.follow = Some(HostFollow::new(
            host.clone(),
            usize::from(self.size.0).max(1),
        ));
        Action::Follow(FollowAction::Start { host, recent })
    }

    /// A key in the merged view.
    pub(super) fn follow_key(&mut self, key: KeyEvent) -> Action {
        let body = self.body_rows();
        let Some(f) = self.follow.as_mut() else {
            return Action::None;
        };
        let last = f.last_top(body);
        let half = (body / 2).max(1);
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => {
                self.follow = None;
                return Action::Follow(FollowAction::Stop);
            }
            KeyCode::Char('?') => self.help = true,
            KeyCode::Char('j' | 'e') | KeyCode::Down | KeyCode::Enter => {
                f.top = (f.top + 1).min(last)
            }
            KeyCode::Char('k' | 'y') | KeyCode::Up => f.top = f.top.saturating_sub(1),
            KeyCode::Char(' ' | 'f') | KeyCode::PageDown => f.top = (f.top + body).min(last),
            KeyCode::Char('b') | KeyCode::PageUp => f.top = f.top.saturating_sub(body),
            KeyCode::Char('d') => f.top = (f.top + half).min(last),
            KeyCode::Char('u') => f.top = f.top.saturating_sub(half),
            KeyCode::Char('g') | KeyCode::Home => f.top = 0,
            KeyCode::Char('G') | KeyCode::End => f.top = last,
            _ => {}
        }
        Action::None
    }

    /// The host-wide follow of `host` started (following this many sessions), or failed.
    pub fn follow_started(&mut self, host: &str, result: Result<usize, String>) {
        if let Some(f) = self.follow.as_mut().filter(|f| f.host == host) {
            f.started = Some(result);
        }
    }

    /// The newest records of the host's recent sessions, read at the start: above the marker.
    pub fn follow_context(&mut self, host: &str, records: Vec<Followed>) {
        let body = self.body_rows();
        let Some(f) = self.follow.as_mut().filter(|f| f.host == host) else {
            return;
        };
        f.context = records
            .iter()
            .map(|r| (r.session.clone(), r.record.id.clone()))
            .collect();
        f.push(records);
        f.new_from = Some(f.records.len());
        f.relayout();
        f.top = f.last_top(body);
    }

    /// Records a session of the followed host completed (after the context, each once); the
    /// view stays at the end when it was there.
    pub fn follow_records(&mut self, host: &str, records: Vec<Followed>) {
        let body = self.body_rows();
        let Some(f) = self.follow.as_mut().filter(|f| f.host == host) else {
            return;
        };
        let records: Vec<Followed> = records
            .into_iter()
            .filter(|r| {
                !f.context
                    .contains(&(r.session.clone(), r.record.id.clone()))
            })
            .collect();
        if records.is_empty() {
            return;
        }
        let at_end = f.top >= f.last_top(body);
        let first_new = f.new_from.is_none();
        f.new_from.get_or_insert(f.records.len());
        f.push(records);
        if first_new {
            // The marker goes in.
            f.relayout();
        }
        if at_end {
            f.top = f.last_top(body);
        }
    }

    /// A line from the follow (a dropped connection, a retry).
    pub fn follow_warning(&mut self, host: &str, line: String) {
        if let Some(f) = self.follow.as_mut().filter(|f| f.host == host) {
            f.warning = Some(line);
        }
    }

    /// A session the follow read: a new one joins the list, a known one takes its new size
    /// and time (the selection stays on its session).
    pub fn session_seen(&mut self, row: SessionRow) {
        let selected = self
            .list
            .shown()
            .get(self.list.selected)
            .map(|r| (r.host.clone(), r.id.clone()));
        let list = &mut self.list;
        match list
            .sessions
            .iter_mut()
            .find(|r| r.host == row.host && r.id == row.id)
        {
            Some(known) => {
                known.mtime = row.mtime;
                known.size = row.size;
            }
            None => {
                if let Some((_, HostState::Listed(n))) =
                    list.hosts.iter_mut().find(|(h, _)| *h == row.host)
                {
                    *n += 1;
                }
                list.sessions.push(row);
            }
        }
        list.sessions
            .sort_by(|a, b| (b.mtime, &a.host, &a.id).cmp(&(a.mtime, &b.host, &b.id)));
        if let Some((host, id)) = selected
            && let Some(i) = self
                .list
                .shown()
                .iter()
                .position(|r| r.host == host && r.id == id)
        {
            self.list.selected = i;
        }
    }

    /// The merged view at a new width.
    pub(super) fn follow_resized(&mut self, at_end: bool) {
        let body = self.body_rows();
        let width = usize::from(self.size.0).max(1);
        if let Some(f) = self.follow.as_mut() {
            f.width = width;
            f.relayout();
            f.top = if at_end {
                f.last_top(body)
            } else {
                f.top.min(f.last_top(body))
            };
        }
    }

    /// Whether the merged view shows its end (before a resize).
    pub(super) fn follow_at_end(&self) -> bool {
        let body = self.body_rows();
        self.follow
            .as_ref()
            .is_some_and(|f| f.top >= f.last_top(body))
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::*;
    use crate::ui::lines::test_record;
    use crate::ui::model::tests::{NOW, row, screen};
    use clankie_model::TextKind;

    fn followed(session: &str, id: &str, text: &str) -> Followed {
        let mut record = test_record(TextKind::User, text);
        record.id = id.into();
        Followed {
            session: session.into(),
            cwd: Some(format!("/w/{session}")),
            record,
        }
    }

    fn following(cols: u16) -> App {
        let mut app = App::new(&["local".into(), "devbox".into()], (cols, 24), NOW, false);
        app.listed(
            "devbox",
            Ok(vec![
                row("devbox", "aaaa1111", 60, "fix the parser"),
                row("devbox", "bbbb2222", 600, "write the docs"),
            ]),
        );
        app.listed(
            "local",
            Ok(vec![row("local", "cccc3333", 30, "local work")]),
        );
        // The selection is on the newest session, local's; the filter names devbox.
        for c in "devbox".chars() {
            app.key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
        app.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
        let action = app.key(KeyEvent::new(KeyCode::Char('F'), KeyModifiers::NONE));
        let Action::Follow(FollowAction::Start { host, recent }) = action else {
            panic!("{action:?}");
        };
        assert_eq!(host, "devbox");
        let ids: Vec<&str> = recent.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["aaaa1111", "bbbb2222"]);
        app.follow_started("devbox", Ok(2));
        app.follow_context(
            "devbox",
            vec![
                followed("bbbb2222", "b1", "older context"),
                followed("aaaa1111", "a1", "newest context"),
            ],
        );
        app
    }

    #[test]
    fn records_of_every_session_arrive_after_the_marker_once_each_named_by_session() {
        let mut app = following(80);
        app.follow_records(
            "devbox",
            vec![
                followed("aaaa1111", "a1", "newest context"),
                followed("aaaa1111", "a2", "alpha grew"),
            ],
        );
        app.follow_records("devbox", vec![followed("bbbb2222", "b2", "beta grew")]);
        let shown = screen(&app);
        assert!(shown.contains("following devbox · 2 sessions"), "{shown}");
        let marker = shown.find(NEW_MARKER).expect("the marker");
        assert!(shown.find("older context").unwrap() < marker, "{shown}");
        assert_eq!(shown.matches("newest context").count(), 1, "{shown}");
        let line = shown.lines().find(|l| l.contains("alpha grew")).unwrap();
        assert!(line.starts_with("aaaa1111 aaaa1111     │ "), "{line}");
        assert!(shown.find("beta grew").unwrap() > marker, "{shown}");
        // q stops it, back to the list.
        let q = app.key(KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE));
        assert_eq!(q, Action::Follow(FollowAction::Stop));
        assert!(app.follow.is_none());
    }

    #[test]
    fn a_session_the_follow_meets_joins_the_list_and_the_selection_stays() {
        let mut app = following(80);
        let selected = app.list.shown()[app.list.selected].id.clone();
        let mut new = row("devbox", "dddd4444", 0, "");
        new.title = None;
        app.session_seen(new);
        let mut grown = row("devbox", "bbbb2222", 1, "write the docs");
        grown.size = 999;
        app.session_seen(grown);
        let ids: Vec<&str> = app.list.sessions.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["dddd4444", "bbbb2222", "cccc3333", "aaaa1111"]);
        assert_eq!(
            app.list.sessions[1].title.as_deref(),
            Some("write the docs")
        );
        assert_eq!(app.list.shown()[app.list.selected].id, selected);
    }

    #[test]
    fn a_narrow_pane_names_sessions_by_id_alone() {
        let mut app = following(40);
        app.follow_records("devbox", vec![followed("aaaa1111", "a2", "alpha grew")]);
        let shown = screen(&app);
        let line = shown.lines().find(|l| l.contains("alpha grew"));
        let line = line.unwrap_or_else(|| panic!("{shown}"));
        assert!(line.starts_with("aaaa1111│"), "{line}");
        assert!(shown.lines().all(|l| l.chars().count() <= 40), "{shown}");
        // Wider again: the project comes back.
        app.resize(100, 24);
        let shown = screen(&app);
        let line = shown.lines().find(|l| l.contains("alpha grew")).unwrap();
        assert!(line.starts_with("aaaa1111 aaaa1111"), "{line}");
    }
}
