//! The global search: a pattern asked for at the bottom of the list (`s`), `grep` run across
//! the list's hosts (by the terminal loop), its hits listed as each host answers (a failing
//! host on its row), and a hit opened: the session read around the hit's record, which is
//! highlighted, with the records after it read as the view scrolls down to them.

use std::ops::Range;

use crossterm::event::{KeyCode, KeyEvent};

use super::{Action, App, Prompt, SessionRow, SessionState};
use crate::ui::lines::plain;
use clankie_engine::search::{Case, Matcher, PatternOptions};
use clankie_model::Record;

/// Hits kept at most; those after are counted, not kept (the view's memory stays bounded).
pub const MAX_HITS: usize = 10_000;

/// One matching record, as the hits list shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub host: String,
    pub harness: String,
    pub session: String,
    /// The record's id, to find it when the session is opened.
    pub record: String,
    /// The record's time as the list shows it (`12-01 10:17`), or empty.
    pub time: String,
    /// The first matching line of the record's text, redacted and plain.
    pub line: String,
}

/// Where a host's search is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostSearch {
    Searching,
    /// Searched: this many sessions had a match.
    Done(usize),
    Failed(String),
    /// Stopped by Esc before it answered.
    Cancelled,
}

/// What the loop must do for the global search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchAction {
    /// Search every host for `pattern`; what it finds is tagged `run`.
    Start { pattern: String, run: u64 },
    /// Stop the search under way.
    Cancel,
    /// Read `row`'s session around the record `record` (then poll it as an open session).
    Open { row: SessionRow, record: String },
    /// Read the page after the open session's last record.
    Later(SessionRow),
}

/// The global search's state.
#[derive(Debug, Clone, Default)]
pub struct GlobalSearch {
    /// The pattern (a regex, case ignored unless it has an upper-case letter).
    pub prompt: Prompt,
    /// The pattern searched for, once a search started.
    pub pattern: Option<String>,
    /// Each host searched, with where its search is.
    pub hosts: Vec<(String, HostSearch)>,
    pub hits: Vec<Hit>,
    /// Hits found beyond [`MAX_HITS`].
    pub dropped: usize,
    pub selected: usize,
    /// Tags the answers of the search under way (answers of a cancelled one are dropped).
    pub run: u64,
}

impl GlobalSearch {
    /// Whether a host has not answered yet.
    pub fn running(&self) -> bool {
        self.hosts.iter().any(|(_, s)| *s == HostSearch::Searching)
    }

    fn cancel(&mut self) {
        for (_, state) in &mut self.hosts {
            if *state == HostSearch::Searching {
                *state = HostSearch::Cancelled;
            }
        }
    }
}

/// A session opened at a hit: the hit's record (highlighted), and the records after those read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HitView {
    /// The hit's record id.
    pub record: String,
    /// The lines the record takes (empty while it is hidden or not read).
    pub lines: Range<usize>,
    /// Records after the last one read exist, not read yet.
    pub later: bool,
    /// The next of them were asked for.
    pub asked: bool,
}

impl HitView {
    /// The lines the hit's record takes among `s`'s lines.
    pub(super) fn place(s: &mut SessionState) {
        let Some(hit) = &s.hit else { return };
        let at = s.records.iter().position(|r| r.id == hit.record);
        let lines = at
            .and_then(|at| s.placed.iter().find(|p| p.index == at))
            .map_or(0..0, |p| p.lines.clone());
        if let Some(hit) = &mut s.hit {
            hit.lines = lines;
        }
    }
}

impl App {
    /// `s` in the list: asks for the pattern.
    pub(super) fn search_prompt(&mut self) {
        let run = self.search.as_ref().map_or(0, |g| g.run);
        self.search = Some(GlobalSearch {
            prompt: Prompt {
                text: String::new(),
                active: true,
            },
            run,
            ..GlobalSearch::default()
        });
    }

    /// A key while the global search is up (its prompt, or its hits).
    pub(super) fn search_key(&mut self, key: KeyEvent) -> Action {
        let rows = self.list_rows();
        let hosts: Vec<String> = self.list.hosts.iter().map(|(h, _)| h.clone()).collect();
        let Some(g) = self.search.as_mut() else {
            return Action::None;
        };
        if g.prompt.active {
            g.prompt.key(&key);
            if g.prompt.active {
                return Action::None;
            }
            if key.code == KeyCode::Esc || g.prompt.text.is_empty() {
                // Nothing was searched: back to the list; else back to the hits.
                if g.pattern.is_none() {
                    self.search = None;
                }
                return Action::None;
            }
            let pattern = g.prompt.text.clone();
            let options = PatternOptions {
                fixed: false,
                case: Case::Smart,
            };
            if let Err(e) = Matcher::new(&pattern, options) {
                // Corrected where it was typed.
                g.prompt.active = true;
                let said = e.to_string();
                let line = said.lines().map(str::trim).rfind(|l| !l.is_empty());
                self.status = Some(plain(line.unwrap_or(&said)));
                return Action::None;
            }
            g.run += 1;
            g.pattern = Some(pattern.clone());
            g.hosts = hosts
                .into_iter()
                .map(|h| (h, HostSearch::Searching))
                .collect();
            g.hits.clear();
            g.dropped = 0;
            g.selected = 0;
            return Action::Search(SearchAction::Start {
                pattern,
                run: g.run,
            });
        }
        let last = g.hits.len().saturating_sub(1);
        let page = rows.saturating_sub(g.hosts.len()).max(1);
        match key.code {
            KeyCode::Esc if g.running() => {
                g.cancel();
                self.status = Some("search stopped".into());
                return Action::Search(SearchAction::Cancel);
            }
            KeyCode::Esc | KeyCode::Char('q') => {
                let running = g.running();
                self.search = None;
                if running {
                    return Action::Search(SearchAction::Cancel);
                }
            }
            KeyCode::Char('?') => self.help = true,
            KeyCode::Char('s' | '/') => {
                let running = g.running();
                g.cancel();
                g.prompt = Prompt {
                    text: String::new(),
                    active: true,
                };
                if running {
                    return Action::Search(SearchAction::Cancel);
                }
            }
            KeyCode::Char('j') | KeyCode::Down => g.selected = (g.selected + 1).min(last),
            KeyCode::Char('k') | KeyCode::Up => g.selected = g.selected.saturating_sub(1),
            KeyCode::PageDown | KeyCode::Char(' ') => g.selected = (g.selected + page).min(last),
            KeyCode::PageUp => g.selected = g.selected.saturating_sub(page),
            KeyCode::Char('g') | KeyCode::Home => g.selected = 0,
            KeyCode::Char('G') | KeyCode::End => g.selected = last,
            KeyCode::Enter => {
                if let Some(hit) = g.hits.get(g.selected).cloned() {
                    return self.open_hit(hit);
                }
            }
            _ => {}
        }
        Action::None
    }

    /// Opens the session of `hit`, to be read around its record.
    fn open_hit(&mut self, hit: Hit) -> Action {
        // The list's row, with its title, when the list holds the session.
        let row = self
            .list
            .sessions
            .iter()
            .find(|r| r.host == hit.host && r.id == hit.session)
            .cloned()
            .unwrap_or_else(|| SessionRow {
                host: hit.host.clone(),
                harness: hit.harness.clone(),
                id: hit.session.clone(),
                mtime: 0,
                size: 0,
                title: None,
                cwd: None,
            });
        let mut s = SessionState::new(row.clone(), usize::from(self.size.0).max(1));
        s.hit = Some(HitView {
            record: hit.record.clone(),
            ..HitView::default()
        });
        self.session = Some(s);
        Action::Search(SearchAction::Open {
            row,
            record: hit.record,
        })
    }

    /// Hits of the search tagged `run` from one host (dropped when that search was stopped).
    pub fn search_hits(&mut self, run: u64, hits: Vec<Hit>) {
        let Some(g) = self.search.as_mut().filter(|g| g.run == run) else {
            return;
        };
        let room = MAX_HITS.saturating_sub(g.hits.len());
        let n = hits.len();
        // Hosts in the order the list names them, as `grep` prints them; the selection stays
        // on its hit as hits arrive above it.
        let order = |host: &str| g.hosts.iter().position(|(h, _)| h == host);
        let Some(host) = hits.first().map(|h| order(&h.host)) else {
            return;
        };
        let at = g.hits.partition_point(|h| order(&h.host) <= host);
        let kept = n.min(room);
        g.hits.splice(at..at, hits.into_iter().take(room));
        if at <= g.selected && g.hits.len() > kept {
            g.selected += kept;
        }
        g.dropped += n - kept;
    }

    /// A host's search of the run `run` ended: how many sessions matched, or why it failed.
    pub fn search_done(&mut self, run: u64, host: &str, result: Result<usize, String>) {
        let Some(g) = self.search.as_mut().filter(|g| g.run == run) else {
            return;
        };
        let state = match result {
            Ok(n) => HostSearch::Done(n),
            Err(message) => HostSearch::Failed(message),
        };
        match g.hosts.iter_mut().find(|(name, _)| name == host) {
            Some(entry) => entry.1 = state,
            None => g.hosts.push((host.to_string(), state)),
        }
    }

    /// The session opened at a hit was read: its records around the hit (`at`, the hit's
    /// index, `None` when the hit is no longer there), whether records exist before and after
    /// them; or why it could not be read.
    pub fn opened_at(&mut self, row: &SessionRow, result: Result<OpenedAt, String>) {
        let opened = match result {
            Ok(opened) => opened,
            Err(message) => return self.opened(row, Err(message)),
        };
        let found = opened.at.is_some();
        self.opened(row, Ok((opened.records, opened.earlier)));
        let body = self.body_rows();
        let Some(s) = self.session.as_mut().filter(|s| s.row == *row) else {
            return;
        };
        if let Some(hit) = &mut s.hit {
            hit.later = opened.later;
        }
        HitView::place(s);
        if found {
            // The hit a few lines down, under some of what came before it.
            let start = s.hit.as_ref().map_or(0, |h| h.lines.start);
            s.top = start.saturating_sub(body / 4).min(s.last_top(body));
        } else {
            self.status = Some("the hit is no longer in the session: its newest records".into());
        }
    }

    /// The page after the open session's last record, read on the way down; `more`: records
    /// still follow it.
    pub fn later(&mut self, row: &SessionRow, records: Vec<Record>, more: bool) {
        let Some(s) = self.session.as_mut().filter(|s| s.row == *row) else {
            return;
        };
        s.note(&records);
        s.records.extend(records);
        if let Some(hit) = &mut s.hit {
            hit.later = more;
            hit.asked = false;
        }
        s.relayout();
    }

    /// After a key in the open session: the page after its last record is asked for once the
    /// view is within a page of the end of what was read.
    pub(super) fn ask_later(&mut self, action: Action) -> Action {
        if action != Action::None {
            return action;
        }
        let body = self.body_rows();
        let Some(s) = self.session.as_mut() else {
            return action;
        };
        let near_end = s.top + 2 * body >= s.lines.len();
        match &mut s.hit {
            Some(hit) if hit.later && !hit.asked && near_end => {
                hit.asked = true;
                Action::Search(SearchAction::Later(s.row.clone()))
            }
            _ => action,
        }
    }
}

/// A session read around a hit, as [`App::opened_at`] takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenedAt {
    pub records: Vec<Record>,
    pub at: Option<usize>,
    pub earlier: bool,
    pub later: bool,
}

/// The first line of `text` holding the match that starts at byte `start`, trimmed.
pub fn matching_line(text: &str, start: usize) -> &str {
    let start = start.min(text.len());
    let begin = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    text[begin..end].trim()
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::*;
    use crate::ui::lines::test_record;
    use crate::ui::model::tests::{NOW, row, screen};
    use clankie_model::TextKind;

    fn press(app: &mut App, code: KeyCode) -> Action {
        app.key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn typed(app: &mut App, text: &str) {
        for c in text.chars() {
            press(app, KeyCode::Char(c));
        }
    }

    fn hit(host: &str, session: &str, record: &str, line: &str) -> Hit {
        Hit {
            host: host.into(),
            harness: "claude".into(),
            session: session.into(),
            record: record.into(),
            time: "12-01 10:17".into(),
            line: line.into(),
        }
    }

    /// A view of three hosts, `local` listed, searching `deploy`.
    fn searching() -> App {
        let hosts = vec!["local".to_string(), "devbox".into(), "down".into()];
        let mut app = App::new(&hosts, (80, 24), NOW, false);
        app.listed(
            "local",
            Ok(vec![row("local", "aaaa1111", 60, "fix the parser")]),
        );
        assert_eq!(press(&mut app, KeyCode::Char('s')), Action::None);
        typed(&mut app, "deploy");
        assert!(screen(&app).contains("grep: deploy▏"), "{}", screen(&app));
        let action = press(&mut app, KeyCode::Enter);
        assert_eq!(
            action,
            Action::Search(SearchAction::Start {
                pattern: "deploy".into(),
                run: 1
            })
        );
        app
    }

    #[test]
    fn hits_stream_in_per_host_and_a_failing_host_says_so_on_its_row() {
        let mut app = searching();
        let first = screen(&app);
        assert!(first.contains("▸ devbox: searching…"), "{first}");
        app.search_hits(1, vec![hit("local", "aaaa1111", "r1", "deploy the parser")]);
        app.search_done(1, "local", Ok(1));
        app.search_done(1, "down", Err("connection refused".into()));
        // Answers of an earlier search are not this one's.
        app.search_hits(0, vec![hit("local", "zzzz", "r0", "stale deploy")]);
        app.search_hits(
            1,
            vec![hit("devbox", "bbbb2222", "r7", "deploy to staging")],
        );
        let shown = screen(&app);
        assert!(
            shown.contains("grep deploy · 2 hits · searching…"),
            "{shown}"
        );
        assert!(
            shown.contains("▸ down: failed: connection refused"),
            "{shown}"
        );
        assert!(
            shown.contains("local  aaaa1111 12-01 10:17 deploy the parser"),
            "{shown}"
        );
        assert!(
            shown.contains("devbox bbbb2222 12-01 10:17 deploy to staging"),
            "{shown}"
        );
        assert!(!shown.contains("stale"), "{shown}");
        // Esc stops the host still searching; a second Esc goes back to the list.
        assert_eq!(
            press(&mut app, KeyCode::Esc),
            Action::Search(SearchAction::Cancel)
        );
        assert!(
            screen(&app).contains("▸ devbox: stopped"),
            "{}",
            screen(&app)
        );
        assert_eq!(press(&mut app, KeyCode::Esc), Action::None);
        assert!(app.search.is_none());
        assert!(screen(&app).contains("fix the parser"));
    }

    #[test]
    fn a_pattern_that_is_no_regex_is_said_where_it_was_typed() {
        let hosts = vec!["local".to_string()];
        let mut app = App::new(&hosts, (80, 24), NOW, false);
        press(&mut app, KeyCode::Char('s'));
        typed(&mut app, "a(b");
        assert_eq!(press(&mut app, KeyCode::Enter), Action::None);
        let shown = screen(&app);
        assert!(shown.contains("grep: a(b▏"), "{shown}");
        assert!(shown.to_lowercase().contains("unclosed"), "{shown}");
    }

    #[test]
    fn a_hit_opens_its_session_at_the_hit_highlighted_and_reads_on_as_it_scrolls_down() {
        let mut app = searching();
        app.search_hits(1, vec![hit("local", "aaaa1111", "@61", "prompt number 61")]);
        app.search_done(1, "local", Ok(1));
        let action = press(&mut app, KeyCode::Enter);
        let row = row("local", "aaaa1111", 60, "fix the parser");
        assert_eq!(
            action,
            Action::Search(SearchAction::Open {
                row: row.clone(),
                record: "@61".into()
            })
        );
        let records: Vec<Record> = (0..100)
            .map(|i| {
                let mut r = test_record(TextKind::User, &format!("prompt number {i}"));
                r.id = format!("@{i}");
                r
            })
            .collect();
        app.opened_at(
            &row,
            Ok(OpenedAt {
                records,
                at: Some(61),
                earlier: true,
                later: true,
            }),
        );
        let s = app.session.as_ref().unwrap();
        let hit = s.hit.clone().unwrap();
        assert!(!hit.lines.is_empty());
        assert!(
            s.lines[hit.lines.start..hit.lines.end]
                .concat()
                .contains("prompt number 61")
        );
        let shown = screen(&app);
        assert!(shown.contains("prompt number 61"), "{shown}");
        assert!(!shown.contains("prompt number 40"), "{shown}");
        // The hit's lines are bold.
        let buffer = crate::ui::model::tests::frame(&app);
        let y = (0..24)
            .find(|&y| {
                (0..80)
                    .map(|x| buffer[(x, y)].symbol().to_string())
                    .collect::<String>()
                    .contains("prompt number 61")
            })
            .unwrap();
        let x = (0..80).find(|&x| buffer[(x, y)].symbol() == "p").unwrap();
        assert!(
            buffer[(x, y)]
                .modifier
                .contains(ratatui::style::Modifier::BOLD)
        );
        // Down towards the end of what was read: the next page is asked for, once.
        let mut asked = Vec::new();
        for _ in 0..200 {
            let action = press(&mut app, KeyCode::Char('j'));
            if action != Action::None {
                asked.push(action);
            }
        }
        assert_eq!(
            asked,
            vec![Action::Search(SearchAction::Later(row.clone()))]
        );
        let more = (100..110)
            .map(|i| test_record(TextKind::User, &format!("prompt number {i}")))
            .collect();
        app.later(&row, more, false);
        press(&mut app, KeyCode::Char('G'));
        let shown = screen(&app);
        assert!(shown.contains("prompt number 109"), "{shown}");
        assert!(!shown.contains("── new records ──"), "{shown}");
    }

    #[test]
    fn a_narrow_pane_leaves_out_the_time_and_the_wheel_moves_the_selection() {
        let mut app = searching();
        app.resize(40, 12);
        let hits = (0..20)
            .map(|i| {
                hit(
                    "devbox",
                    "bbbb2222",
                    &format!("r{i}"),
                    &format!("deploy step {i} of the long rollout"),
                )
            })
            .collect();
        app.search_hits(1, hits);
        let shown = screen(&app);
        assert!(shown.lines().all(|l| l.chars().count() <= 40), "{shown}");
        assert!(
            shown.contains("devbox bbbb2222 deploy step 0 of the l…"),
            "{shown}"
        );
        assert!(!shown.contains("10:17"), "{shown}");
        let wheel = crossterm::event::MouseEvent {
            kind: crossterm::event::MouseEventKind::ScrollDown,
            column: 0,
            row: 0,
            modifiers: KeyModifiers::NONE,
        };
        app.mouse(wheel);
        assert_eq!(app.search.as_ref().unwrap().selected, 3);
    }

    #[test]
    fn the_line_of_a_match_is_its_own() {
        let text = "one\ntwo deploy three\nfour";
        let at = text.find("deploy").unwrap();
        assert_eq!(matching_line(text, at), "two deploy three");
        assert_eq!(matching_line("deploy", 0), "deploy");
        assert_eq!(matching_line("a\n", 99), "");
    }
}
