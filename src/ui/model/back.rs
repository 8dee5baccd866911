//! The open session's older records, loaded on demand: a page opens at the session's newest
//! records, and scrolling up past the first one loaded asks for the page before it (a backward
//! read from the loaded records' start cursor, docs/cursors.md), keeping what the screen shows
//! where it was; `g` walks back to the session's start; `t` jumps to the first record at or
//! after a time (`--since`'s grammar), reading back as far as it must. The view holds at most
//! [`MAX_LOADED_RECORDS`]: reading further back lets go of the newest, and `G` reads them again.

use clankie_engine::cursor::Cursor;
use clankie_model::limits::MAX_LIMIT;
use clankie_model::{Record, RecordBody};
use crossterm::event::{KeyCode, KeyEvent};
use jiff::Timestamp;

use super::{Action, App, Prompt, SessionRow, SessionState};
use crate::ui::lines::{Layout, Placed, layout};

/// The most records the view holds of one session (ten pages): its memory stays bounded
/// whatever the session's size.
pub const MAX_LOADED_RECORDS: usize = 10 * MAX_LIMIT;

/// The records laid out again at each seam when a page read back is put in (`lay_out_older`).
const JOIN_RECORDS: usize = 8;

/// A page read back: its records (oldest first), whether older ones exist, and the cursor at
/// its start.
pub type OlderPage = (Vec<Record>, bool, Option<Cursor>);

/// Where the open session's loaded records start, and what is being read back.
#[derive(Debug, Clone, Default)]
pub struct Back {
    /// The cursor before the first record loaded: the next backward read's.
    pub start: Option<Cursor>,
    /// A backward read is under way.
    pub loading: bool,
    /// `g` was pressed: keep reading back to the session's start.
    pub to_start: bool,
    /// `t`'s time, until the record at it is loaded and shown.
    pub jump: Option<Timestamp>,
    /// `t`'s prompt.
    pub time: Prompt,
    /// The newest records were let go ([`MAX_LOADED_RECORDS`]): `G` reads them again.
    pub newer_dropped: bool,
}

impl SessionState {
    /// The line the record of `index` starts on (or, hidden, the first one after it shown).
    fn line_of(&self, index: usize) -> usize {
        self.placed
            .iter()
            .filter(|p| p.index >= index)
            .map(|p| p.lines.start)
            .min()
            .unwrap_or(self.lines.len())
    }

    /// The lines of `older` followed by the first `keep` records loaded, made from the lines
    /// laid out (which it replaces, with where each record is) without laying out all of them
    /// again: `older` is laid out with the first few records loaded, which replace their own
    /// lines, and the last few kept are laid out again in place of the lines from them to the
    /// end (a full layout of 2,000 records costs several frames). Each piece is checked against
    /// the lines it replaces. Gives the lines put before the first record kept; `None`, with
    /// nothing changed, where that cannot be done exactly (an open fold, whose bound counts
    /// across the whole layout; a result whose call is farther than [`JOIN_RECORDS`] away;
    /// records without a time), to be laid out whole.
    fn lay_out_older(&mut self, older: &[Record], keep: usize) -> Option<usize> {
        let loaded = &self.records;
        if keep == 0 || self.folds.any_open() {
            return None;
        }
        // A result is laid out under its call: a seam between the two would lay them out
        // apart, so each seam moves (at most [`JOIN_RECORDS`] records) to where none is split.
        let calls = |records: &[Record]| -> std::collections::HashSet<String> {
            records
                .iter()
                .filter_map(|r| match &r.body {
                    RecordBody::ToolCall { call_id, .. } => Some(call_id.clone()),
                    _ => None,
                })
                .collect()
        };
        let answers = |records: &[Record], calls: &std::collections::HashSet<String>| {
            records.iter().any(|r| {
                matches!(&r.body, RecordBody::ToolResult { call_id, .. } if calls.contains(call_id))
            })
        };
        let splits = |at: usize| answers(&loaded[at..], &calls(&loaded[..at]));
        let head = (JOIN_RECORDS.min(keep)..=(2 * JOIN_RECORDS).min(keep)).find(|&h| !splits(h))?;
        let last = keep.saturating_sub(JOIN_RECORDS).max(head);
        let tail_from = if keep == loaded.len() {
            last
        } else {
            (last.saturating_sub(JOIN_RECORDS).max(head)..=last)
                .rev()
                .find(|&t| !splits(t))?
        };
        let dated = |records: &[Record]| {
            records
                .iter()
                .any(|r| r.ts.is_some() && self.kinds.shows(r))
        };
        if !dated(&loaded[..head]) || !dated(&loaded[tail_from..keep]) {
            return None;
        }
        // The page's calls and the loaded records' results meet only within the records laid
        // out again.
        if answers(&loaded[head..], &calls(older)) || answers(older, &calls(&loaded[head..])) {
            return None;
        }
        let lay =
            |records: &[Record]| layout(records, self.kinds, self.width, None, Some(&self.folds));
        let joined: Vec<Record> = older.iter().chain(&loaded[..head]).cloned().collect();
        let head_lines = lay(&loaded[..head]).lines;
        if !self.lines.starts_with(&head_lines) {
            return None;
        }
        let Layout {
            mut lines,
            mut placed,
        } = lay(&joined);
        let put_before = lines.len() - head_lines.len();
        // The records laid out before: `older.len()` further on, `put_before` lines down.
        let moved = |p: &Placed| Placed {
            index: p.index + older.len(),
            lines: p.lines.start + put_before..p.lines.end + put_before,
            fold: p.fold,
        };
        if keep == loaded.len() {
            lines.extend_from_slice(&self.lines[head_lines.len()..]);
            placed.extend(self.placed.iter().filter(|p| p.index >= head).map(moved));
        } else {
            // The lines from the last kept records to the end, as they were laid out: a day's
            // line on top of the records laid out alone may not be among them.
            let was = lay(&loaded[tail_from..]).lines;
            let kept = lay(&loaded[tail_from..keep]);
            let (cut, skip) = if self.lines.ends_with(&was) {
                (was.len(), 0)
            } else if was.first().is_some_and(|l| l.starts_with("── "))
                && self.lines.ends_with(&was[1..])
            {
                (was.len() - 1, 1)
            } else {
                return None;
            };
            let end = self.lines.len() - cut;
            if end < head_lines.len() {
                return None;
            }
            lines.extend_from_slice(&self.lines[head_lines.len()..end]);
            placed.extend(
                self.placed
                    .iter()
                    .filter(|p| (head..tail_from).contains(&p.index))
                    .map(moved),
            );
            let base = lines.len();
            lines.extend_from_slice(&kept.lines[skip..]);
            placed.extend(kept.placed.iter().map(|p| Placed {
                index: p.index + tail_from + older.len(),
                lines: base + p.lines.start.saturating_sub(skip)..base + p.lines.end - skip,
                fold: p.fold,
            }));
        }
        self.lines = lines;
        self.placed = placed;
        Some(put_before)
    }

    /// A backward read from the loaded records' start, unless one is under way or none is
    /// left.
    fn read_back(&mut self) -> Action {
        match &self.back.start {
            Some(start) if self.earlier && !self.back.loading => {
                self.back.loading = true;
                Action::LoadOlder(self.row.clone(), start.clone())
            }
            _ => Action::None,
        }
    }
}

impl App {
    /// The cursor at the start of the open session's first page (if it is still `row`'s).
    pub fn started_at(&mut self, row: &SessionRow, start: Option<Cursor>) {
        if let Some(s) = self.session.as_mut().filter(|s| s.row == *row) {
            s.back.start = start;
        }
    }

    /// A page read back for the open session (if it is still `row`'s): put before the records
    /// loaded, the screen kept on what it showed; then on with `g` or `t`.
    pub fn older(&mut self, row: &SessionRow, page: Result<OlderPage, String>) -> Action {
        let body = self.body_rows();
        let Some(s) = self.session.as_mut().filter(|s| s.row == *row) else {
            return Action::None;
        };
        s.back.loading = false;
        let (mut records, earlier, start) = match page {
            Ok(page) => page,
            Err(message) => {
                s.back.to_start = false;
                s.back.jump = None;
                self.status = Some(format!("reading earlier records: {message}"));
                return Action::None;
            }
        };
        let added = records.len();
        s.earlier = earlier;
        s.back.start = start;
        let kept_before = s.records.len();
        let keep = MAX_LOADED_RECORDS.saturating_sub(added).min(kept_before);
        let put_before = if s.new_from.is_none() && s.hit.is_none() {
            s.lay_out_older(&records, keep)
        } else {
            None
        };
        records.append(&mut s.records);
        s.records = records;
        s.new_from = s.new_from.map(|n| n + added);
        if s.records.len() > MAX_LOADED_RECORDS {
            s.records.truncate(MAX_LOADED_RECORDS);
            s.new_from = s.new_from.filter(|&n| n < MAX_LOADED_RECORDS);
            s.back.newer_dropped = true;
            s.follow = false;
        }
        let put_before = put_before.unwrap_or_else(|| {
            let lines_before = s.lines.len();
            s.relayout();
            if keep == kept_before {
                s.lines.len().saturating_sub(lines_before)
            } else {
                // The newest let go too: the lines before the first record kept.
                s.line_of(added)
            }
        });
        // The lines shown stay on screen: they moved down by the lines put before them.
        s.top = (s.top + put_before).min(s.last_top(body));
        if s.back.to_start {
            s.top = 0;
            if s.earlier {
                return s.read_back();
            }
            s.back.to_start = false;
        }
        if s.back.jump.is_some() {
            return self.jump();
        }
        Action::None
    }

    /// The keys of reading back (`g`, `G` after the newest were let go, `t` and its prompt),
    /// or `None` for any other key.
    pub(super) fn back_key(&mut self, key: &KeyEvent) -> Option<Action> {
        let width = usize::from(self.size.0).max(1);
        let s = self.session.as_mut()?;
        if s.search.active {
            return None;
        }
        if s.back.time.active {
            s.back.time.key(key);
            if !s.back.time.active && key.code == KeyCode::Enter {
                return Some(self.time_entered());
            }
            return Some(Action::None);
        }
        match key.code {
            KeyCode::Char('g') | KeyCode::Home => {
                s.top = 0;
                s.follow = false;
                s.back.to_start = s.earlier;
                Some(s.read_back())
            }
            KeyCode::Char('G') | KeyCode::End if s.back.newer_dropped => {
                // The newest records were let go: read the session again from its end.
                let row = s.row.clone();
                self.session = Some(SessionState::new(row.clone(), width));
                Some(Action::Open(row))
            }
            KeyCode::Char('t') => {
                s.back.time = Prompt {
                    text: String::new(),
                    active: true,
                };
                Some(Action::None)
            }
            _ => None,
        }
    }

    /// After a key moved the open session: at its first loaded line, the page before it is
    /// read.
    pub(super) fn older_wanted(&mut self) -> Action {
        match self.session.as_mut() {
            Some(s) if s.top == 0 => s.read_back(),
            _ => Action::None,
        }
    }

    /// `t`'s time was entered: parsed as `--since` takes one, then jumped to.
    fn time_entered(&mut self) -> Action {
        let Some(s) = self.session.as_mut() else {
            return Action::None;
        };
        let text = std::mem::take(&mut s.back.time.text);
        let now = Timestamp::from_second(self.now)
            .unwrap_or(Timestamp::UNIX_EPOCH)
            .to_zoned_datetime(jiff::tz::TimeZone::system());
        match clankie_engine::filter::parse_time("t", &text, &now) {
            Ok(time) => {
                s.back.jump = Some(time);
                s.follow = false;
                self.jump()
            }
            Err(_) => {
                self.status = Some(format!(
                    "not a time: {text} (2h, 30m, today, yesterday, 2026-12-01, RFC 3339)"
                ));
                Action::None
            }
        }
    }

    /// Shows the first record at or after the pending jump's time, once the records loaded
    /// start before it (else reads back first).
    fn jump(&mut self) -> Action {
        let body = self.body_rows();
        let Some(s) = self.session.as_mut() else {
            return Action::None;
        };
        let Some(time) = s.back.jump else {
            return Action::None;
        };
        let at = |r: &Record| r.ts.as_deref().and_then(|ts| ts.parse::<Timestamp>().ok());
        let first = s
            .records
            .iter()
            .position(|r| at(r).is_some_and(|t| t >= time));
        let before = s.records[..first.unwrap_or(s.records.len())]
            .iter()
            .any(|r| at(r).is_some_and(|t| t < time));
        if !before && s.earlier && s.back.start.is_some() {
            // Records older than the first loaded may be at the time too.
            return s.read_back();
        }
        s.back.jump = None;
        match first {
            Some(index) => {
                s.top = s.line_of(index).min(s.last_top(body));
                let ts = s.records[index].ts.clone().unwrap_or_default();
                self.status = Some(format!("at {ts}"));
            }
            None => {
                s.top = s.last_top(body);
                self.status = Some(format!("no record at or after {time}"));
            }
        }
        Action::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::lines::test_record;
    use clankie_model::TextKind;
    use crossterm::event::KeyModifiers;

    /// Records `from..to`, one a minute from 10:00.
    fn records(from: usize, to: usize) -> Vec<Record> {
        (from..to)
            .map(|i| {
                let mut r = test_record(TextKind::User, &format!("prompt number {i}"));
                r.id = format!("r{i}");
                r.ts = Some(format!("2026-12-01T{:02}:{:02}:00Z", 10 + i / 60, i % 60));
                r
            })
            .collect()
    }

    /// A cursor standing for "before record `i`" (the model only hands it back).
    fn cursor(i: usize) -> Cursor {
        Cursor::Rows(clankie_engine::cursor::RowCursor {
            binding: [0; 16],
            position: i as u64,
            prefix_hash: [0; 16],
            key: if i == 0 {
                String::new()
            } else {
                format!("r{}", i - 1)
            },
            anchored: false,
        })
    }

    fn press(app: &mut App, code: KeyCode) -> Action {
        app.key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    /// A session of `total` records opened at its newest `page`.
    fn opened(total: usize, page: usize) -> (App, SessionRow) {
        let mut app = App::new(&["local".into()], (80, 24), 1_800_000_000, false);
        let row = SessionRow {
            host: "local".into(),
            harness: "claude".into(),
            id: "s1".into(),
            mtime: 0,
            size: 1,
            title: None,
            cwd: None,
        };
        app.listed("local", Ok(vec![row.clone()]));
        press(&mut app, KeyCode::Enter);
        app.opened(&row, Ok((records(total - page, total), total > page)));
        app.started_at(&row, Some(cursor(total - page)));
        (app, row)
    }

    /// Serves a backward read of `LoadOlder` from a session of `total`, `page` a page.
    fn serve(app: &mut App, row: &SessionRow, action: Action, page: usize) -> Action {
        let Action::LoadOlder(_, Cursor::Rows(c)) = action else {
            panic!("a backward read expected, got {action:?}")
        };
        let end = c.position as usize;
        let start = end.saturating_sub(page);
        app.older(
            row,
            Ok((records(start, end), start > 0, Some(cursor(start)))),
        )
    }

    fn shown(app: &App) -> Vec<String> {
        let s = app.session.as_ref().unwrap();
        s.lines
            .iter()
            .skip(s.top)
            .take(app.body_rows())
            .cloned()
            .collect()
    }

    #[test]
    fn scrolling_up_past_the_first_record_reads_the_page_before_and_keeps_the_screen() {
        let (mut app, row) = opened(60, 30);
        // Up to the first line loaded: the page before it is asked for, once.
        let mut action = Action::None;
        for _ in 0..200 {
            action = press(&mut app, KeyCode::Up);
            if action != Action::None {
                break;
            }
        }
        assert!(matches!(action, Action::LoadOlder(..)));
        assert_eq!(
            press(&mut app, KeyCode::Up),
            Action::None,
            "one read at a time"
        );
        let before = shown(&app);
        assert!(
            before[0].contains("2026-12-01"),
            "the day's line: {before:?}"
        );
        assert_eq!(serve(&mut app, &row, action, 30), Action::None);
        // The records shown stay on their rows (the day's line now heads the older page).
        let after = shown(&app);
        assert_eq!(after[1..], before[1..]);
        assert!(after[0].contains("prompt number 29"), "{after:?}");
        let s = app.session.as_ref().unwrap();
        assert_eq!(s.records.len(), 60);
        assert_eq!(s.records[0].id, "r0");
        assert!(!s.earlier);
    }

    #[test]
    fn g_reads_back_to_the_start_and_memory_stays_bounded() {
        let total = MAX_LOADED_RECORDS + 3 * MAX_LIMIT;
        let (mut app, row) = opened(total, MAX_LIMIT);
        let mut action = press(&mut app, KeyCode::Char('g'));
        let mut reads = 0;
        while action != Action::None {
            action = serve(&mut app, &row, action, MAX_LIMIT);
            reads += 1;
        }
        assert_eq!(reads, total / MAX_LIMIT - 1);
        let s = app.session.as_ref().unwrap();
        assert_eq!(s.top, 0);
        assert!(!s.earlier);
        assert_eq!(s.records.len(), MAX_LOADED_RECORDS);
        assert_eq!(s.records[0].id, "r0");
        assert!(s.back.newer_dropped);
        // `G` reads the newest again.
        assert_eq!(press(&mut app, KeyCode::Char('G')), Action::Open(row));
    }

    /// Turns of a prompt, a call and its (long) result, over several days, each page's seam
    /// between a call and its result now and then: `n` records.
    fn turns(n: usize) -> Vec<Record> {
        (0..n)
            .map(|i| {
                let turn = i / 3;
                let mut r = test_record(TextKind::User, &format!("prompt of turn {turn}"));
                r.body = match i % 3 {
                    0 => r.body,
                    1 => RecordBody::ToolCall {
                        call_id: format!("c{turn}"),
                        name: "Bash".into(),
                        input: serde_json::json!({"command": format!("cargo test {turn}")}),
                        by_user: false,
                    },
                    _ => RecordBody::ToolResult {
                        call_id: format!("c{turn}"),
                        output: format!("ok {turn}\n").repeat(1 + turn % 20).into(),
                        is_error: false,
                    },
                };
                r.id = format!("r{i}");
                r.ts = Some(format!(
                    "2026-12-{:02}T10:{:02}:00Z",
                    1 + turn / 150,
                    turn % 60
                ));
                r
            })
            .collect()
    }

    #[test]
    fn pages_put_in_give_the_lines_of_a_whole_layout_below_the_screen() {
        let total = MAX_LOADED_RECORDS + 4 * MAX_LIMIT + 7;
        let all = turns(total);
        let (mut app, row) = opened(total, MAX_LIMIT);
        app.opened(&row, Ok((all[total - MAX_LIMIT..].to_vec(), true)));
        let mut end = total - MAX_LIMIT;
        app.started_at(&row, Some(cursor(end)));
        while end > 0 {
            // Up to the first loaded line: the page before is asked for.
            let action = (0..100_000)
                .map(|_| press(&mut app, KeyCode::Up))
                .find(|a| *a != Action::None)
                .expect("a backward read");
            assert!(matches!(action, Action::LoadOlder(..)), "{action:?}");
            let start = end.saturating_sub(MAX_LIMIT);
            let page = (all[start..end].to_vec(), start > 0, Some(cursor(start)));
            app.older(&row, Ok(page));
            end = start;
            let s = app.session.as_ref().unwrap();
            let whole = layout(&s.records, s.kinds, s.width, None, Some(&s.folds));
            assert_eq!(
                (&s.lines, &s.placed),
                (&whole.lines, &whole.placed),
                "the lines after the page before record {end}"
            );
            assert!(s.records.len() <= MAX_LOADED_RECORDS);
            // The screen stays on the lines it showed, below the page put in (the lines of
            // the records at the seam may change: a result named by its call there).
            assert!(
                s.top > 0 || end == 0,
                "left at the first line, at record {end}"
            );
        }
        assert!(app.session.as_ref().unwrap().back.newer_dropped);
    }

    #[test]
    fn t_jumps_to_the_first_record_at_a_time_reading_back_as_needed() {
        let (mut app, row) = opened(120, 30);
        press(&mut app, KeyCode::Char('t'));
        for c in "2026-12-01T10:15:00Z".chars() {
            press(&mut app, KeyCode::Char(c));
        }
        let mut action = press(&mut app, KeyCode::Enter);
        while action != Action::None {
            action = serve(&mut app, &row, action, 30);
        }
        let first = shown(&app).join("\n");
        assert!(first.contains("prompt number 15"), "{first}");
        assert!(!first.contains("prompt number 14\n"), "{first}");
        assert_eq!(app.status.as_deref(), Some("at 2026-12-01T10:15:00Z"));
        press(&mut app, KeyCode::Char('t'));
        for c in "yesterday-ish".chars() {
            press(&mut app, KeyCode::Char(c));
        }
        assert_eq!(press(&mut app, KeyCode::Enter), Action::None);
        assert!(app.status.as_deref().unwrap().starts_with("not a time"));
    }
}
