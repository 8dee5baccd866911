//! The open session's folds: each block `read` shortens without `--full` (a long tool result,
//! thinking, a long command, diff or tool input) is a fold, shown shut as `read` shows it (its
//! first lines, then `▸ N more lines (o opens)`), or open (the block whole, then `▾ N lines
//! (o folds)`). `o` opens or shuts the fold in focus; `O` opens every fold, and again shuts
//! them all.
//!
//! The focus is the first fold the screen shows: a shut fold whose mark is on screen, or an
//! open fold any line of which is. The view has no cursor: like `less`, its one position is the
//! first line shown, and every scrolling key moves only that; a cursor line would be a second
//! position for each of those keys to keep. So the fold a key acts on follows from the screen,
//! and the drawing marks it (its mark line in reverse video): what `o` will do is always in
//! view. Reading down through a session, the fold in focus is the first one still on screen;
//! inside a long open result, it is that result (`o` folds it back to its first lines).
//!
//! Opening or shutting a fold lays the lines out again, and the screen stays on the record at
//! its top (on the same line of it, when that line is still there): a fold that opens above
//! moves nothing on screen. The layout holds at most `lines::OPEN_FOLDS_BYTES` of open folds.

use crossterm::event::{KeyCode, KeyEvent};

use super::{App, SessionState};

impl SessionState {
    /// The fold in focus with `body` rows on screen, as an index into
    /// [`SessionState::placed`].
    pub fn focused_fold(&self, body: usize) -> Option<usize> {
        let screen = self.top..self.top + body;
        self.placed.iter().position(|p| match p.fold {
            Some(true) => p.lines.start < screen.end && p.lines.end > screen.start,
            Some(false) => p.lines.end > p.lines.start && screen.contains(&(p.lines.end - 1)),
            None => false,
        })
    }

    /// The lines again after the folds changed, the screen kept on the record at its top.
    fn refold(&mut self, body: usize) {
        let anchor = self
            .placed
            .iter()
            .find(|p| p.lines.end > self.top)
            .map(|p| (p.index, self.top as isize - p.lines.start as isize));
        self.relayout();
        if let Some((index, offset)) = anchor
            && let Some(p) = self.placed.iter().find(|p| p.index == index)
        {
            // A line past the record's end (its fold shut under the screen's top): the
            // record's first line.
            let offset = if offset < p.lines.len() as isize {
                offset
            } else {
                0
            };
            self.top = (p.lines.start as isize + offset).max(0) as usize;
        }
        self.top = self.top.min(self.last_top(body));
    }
}

impl App {
    /// The fold keys (`o`, `O`): `true` when `key` was one.
    pub(super) fn fold_key(&mut self, key: &KeyEvent) -> bool {
        let body = self.body_rows();
        let Some(s) = self.session.as_mut() else {
            return false;
        };
        if s.search.active || s.back.time.active {
            return false;
        }
        let status = match key.code {
            KeyCode::Char('o') => match s.focused_fold(body) {
                Some(at) => {
                    let index = s.placed[at].index;
                    let id = s.records[index].id.clone();
                    s.folds.toggle(&id);
                    s.refold(body);
                    let open = s
                        .placed
                        .iter()
                        .find(|p| p.index == index)
                        .and_then(|p| p.fold);
                    match (s.folds.is_open(&id), open) {
                        (true, Some(false)) => {
                            "past the view's 16 MiB of open folds: read --full shows it"
                        }
                        (true, _) => "fold opened",
                        (false, _) => "fold shut",
                    }
                }
                None => "no fold on screen",
            },
            KeyCode::Char('O') => {
                s.folds.toggle_all();
                s.refold(body);
                if s.folds.all_open {
                    "every fold open"
                } else {
                    "every fold shut"
                }
            }
            _ => return false,
        };
        self.status = Some(status.to_string());
        true
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::super::tests::{NOW, row, screen};
    use super::super::*;
    use crate::ui::lines::{numbered, test_record, test_result};
    use clankie_model::TextKind;

    fn press(app: &mut App, c: char) {
        app.key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }

    fn with_id(id: &str, kind: TextKind, text: &str) -> Record {
        Record {
            id: id.into(),
            ..test_record(kind, text)
        }
    }

    /// `before` prompts, a long thinking and a long result, then `after` prompts, opened in a
    /// view of 80×24.
    fn app_with(before: usize, after: usize) -> App {
        let mut records: Vec<Record> = (0..before)
            .map(|i| with_id(&format!("b{i}"), TextKind::User, &format!("before {i}")))
            .collect();
        records.push(with_id("t", TextKind::Thinking, &numbered("pondering", 20)));
        records.push(test_result("r", &numbered("output", 30)));
        records.extend(
            (0..after).map(|i| with_id(&format!("a{i}"), TextKind::User, &format!("after {i}"))),
        );
        let mut app = App::new(&["local".into()], (80, 24), NOW, false);
        let r = row("local", "aaaa1111", 60, "folds");
        app.listed("local", Ok(vec![r.clone()]));
        app.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
        app.opened(&r, Ok((records, false)));
        app
    }

    fn first_shown(app: &App) -> String {
        let s = app.session.as_ref().unwrap();
        s.lines[s.top].clone()
    }

    #[test]
    fn o_opens_and_shuts_the_first_fold_on_screen() {
        let mut app = app_with(0, 40);
        press(&mut app, 'g');
        let shut = screen(&app);
        assert!(shut.contains("▸ 14 more lines (o opens)"), "{shut}");
        assert!(shut.contains("▸ 24 more lines (o opens)"), "{shut}");
        assert!(!shut.contains("pondering 6"), "{shut}");
        // The thinking is first on screen: in focus.
        let s = app.session.as_ref().unwrap();
        assert_eq!(s.placed[s.focused_fold(app.body_rows()).unwrap()].index, 0);
        press(&mut app, 'o');
        assert_eq!(app.status.as_deref(), Some("fold opened"));
        let s = app.session.as_ref().unwrap();
        let all = s.lines.join("\n");
        assert!(
            all.contains("pondering 19") && all.contains("▾ 20 lines (o folds)"),
            "{all}"
        );
        assert!(all.contains("▸ 24 more lines (o opens)"), "{all}");
        // Down past the thinking: the result is the first fold on screen.
        let result_mark = s.placed[1].lines.end - 1;
        let thinking_end = s.placed[0].lines.end;
        for _ in 0..thinking_end {
            press(&mut app, 'j');
        }
        press(&mut app, 'o');
        let s = app.session.as_ref().unwrap();
        assert_eq!(s.placed[1].fold, Some(true), "{result_mark}");
        assert!(s.lines.join("\n").contains("output 29"));
        // Shut again from inside it: the screen goes to its first line.
        press(&mut app, 'o');
        let s = app.session.as_ref().unwrap();
        assert_eq!(s.placed[1].fold, Some(false));
        assert_eq!(app.status.as_deref(), Some("fold shut"));
    }

    #[test]
    fn a_fold_opening_or_shutting_above_keeps_the_screen_on_its_record() {
        let mut app = app_with(3, 60);
        let body = app.body_rows();
        // The screen opens at the end: every fold is above it.
        let end = first_shown(&app);
        assert!(end.contains("after"), "{end}");
        press(&mut app, 'O');
        assert_eq!(app.status.as_deref(), Some("every fold open"));
        assert_eq!(first_shown(&app), end);
        // A few lines past the result, all open above.
        let s = app.session.as_mut().unwrap();
        s.top = s.placed[4].lines.end + 2;
        let shown = first_shown(&app);
        let top = app.session.as_ref().unwrap().top;
        press(&mut app, 'O');
        assert_eq!(app.status.as_deref(), Some("every fold shut"));
        let s = app.session.as_ref().unwrap();
        assert_eq!(first_shown(&app), shown, "{top} → {}", s.top);
        assert!(s.top < top);
        // With nothing folded on screen, `o` says so.
        let s = app.session.as_mut().unwrap();
        s.top = s.last_top(body);
        press(&mut app, 'o');
        assert_eq!(app.status.as_deref(), Some("no fold on screen"));
    }

    #[test]
    fn the_fold_in_focus_is_drawn_reversed_and_hidden_thinking_has_no_fold() {
        let mut app = app_with(0, 0);
        let buffer = super::super::tests::frame(&app);
        let row = (0..24u16)
            .find(|&y| {
                (0..80u16)
                    .map(|x| buffer[(x, y)].symbol().to_string())
                    .collect::<String>()
                    .contains("▸ 14 more lines")
            })
            .expect("the thinking's mark");
        let reversed = |y: u16| {
            (0..80u16).any(|x| {
                buffer[(x, y)]
                    .modifier
                    .contains(ratatui::style::Modifier::REVERSED)
            })
        };
        assert!(reversed(row));
        // Above the status bar (itself reversed without colour), the mark alone.
        assert_eq!((0..23u16).filter(|&y| reversed(y)).count(), 1);
        press(&mut app, '4');
        let s = app.session.as_ref().unwrap();
        assert!(!s.lines.join("\n").contains("pondering"));
        let focus = s.focused_fold(app.body_rows()).unwrap();
        assert_eq!(s.placed[focus].index, 1);
    }
}
