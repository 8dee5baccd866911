//! The view driven by keys and answers, each frame drawn on ratatui's test backend.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;

use super::*;
use crate::ui::draw::draw;
use crate::ui::lines::{NEW_MARKER, test_record};
use clankie_model::TextKind;

pub(super) const NOW: i64 = 1_800_000_000;

pub(super) fn row(host: &str, id: &str, ago: i64, title: &str) -> SessionRow {
    SessionRow {
        host: host.into(),
        harness: "claude".into(),
        id: id.into(),
        mtime: NOW - ago,
        size: 100,
        title: Some(title.into()),
        cwd: Some(format!("/w/{title}")),
    }
}

fn press(app: &mut App, code: KeyCode) -> Action {
    app.key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        press(app, KeyCode::Char(c));
    }
}

pub(super) fn frame(app: &App) -> ratatui::buffer::Buffer {
    let (w, h) = app.size;
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| draw(f, app)).unwrap();
    terminal.backend().buffer().clone()
}

/// The frame's text, one line a row, trailing blanks cut.
pub(super) fn screen(app: &App) -> String {
    let buffer = frame(app);
    let (w, h) = app.size;
    (0..h)
        .map(|y| {
            let line: String = (0..w)
                .map(|x| buffer[(x, y)].symbol().to_string())
                .collect();
            line.trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn records(n: usize) -> Vec<Record> {
    (0..n)
        .map(|i| test_record(TextKind::User, &format!("prompt number {i}")))
        .collect()
}

fn opened_app(n: usize) -> (App, SessionRow) {
    let mut app = App::new(&["local".into()], (80, 24), NOW, true);
    let r = row("local", "aaaa1111", 60, "fix the parser");
    app.listed("local", Ok(vec![r.clone()]));
    assert_eq!(press(&mut app, KeyCode::Enter), Action::Open(r.clone()));
    app.opened(&r, Ok((records(n), true)));
    (app, r)
}

#[test]
fn the_list_fills_as_hosts_answer_newest_first_and_a_failed_host_says_so_on_its_row() {
    let hosts = vec!["local".to_string(), "devbox".into(), "down".into()];
    let mut app = App::new(&hosts, (80, 24), NOW, true);
    let first = screen(&app);
    assert!(first.contains("▸ local: listing…"), "{first}");
    assert!(first.contains("▸ devbox: listing…"), "{first}");
    app.listed(
        "devbox",
        Ok(vec![row("devbox", "bbbb2222", 7200, "older work")]),
    );
    app.listed("down", Err("ssh: connection refused".into()));
    let partial = screen(&app);
    assert!(partial.contains("▸ local: listing…"), "{partial}");
    assert!(
        partial.contains("▸ down: failed: ssh: connection refused"),
        "{partial}"
    );
    assert!(partial.contains("older work"), "{partial}");
    app.listed(
        "local",
        Ok(vec![row("local", "aaaa1111", 60, "newest work")]),
    );
    let whole = screen(&app);
    assert!(!whole.contains("listing…"), "{whole}");
    let newest = whole.find("newest work").unwrap();
    assert!(newest < whole.find("older work").unwrap(), "{whole}");
    assert!(
        whole.contains("  1m local      claude   aaaa1111 newest work"),
        "{whole}"
    );
}

#[test]
fn typing_filters_by_title_project_harness_and_host_and_enter_opens_the_selected() {
    let hosts = vec!["local".to_string(), "devbox".into()];
    let mut app = App::new(&hosts, (80, 24), NOW, true);
    app.listed(
        "local",
        Ok(vec![row("local", "aaaa1111", 60, "parser fix")]),
    );
    app.listed("devbox", Ok(vec![row("devbox", "bbbb2222", 90, "deploy")]));
    typed(&mut app, "devb");
    assert_eq!(app.list.shown().len(), 1);
    assert!(screen(&app).contains("filter: devb▏"));
    press(&mut app, KeyCode::Enter);
    let action = press(&mut app, KeyCode::Enter);
    assert!(matches!(action, Action::Open(r) if r.id == "bbbb2222"));
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.list.shown().len(), 2);
    typed(&mut app, "/PARSER");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.list.shown()[0].id, "aaaa1111");
}

#[test]
fn a_session_opens_at_its_newest_records_and_scrolls_by_line_page_and_ends() {
    let (mut app, _) = opened_app(100);
    let s = screen(&app);
    assert!(s.starts_with("── fix the parser"), "{s}");
    assert!(s.contains("earlier records not loaded"), "{s}");
    assert!(s.contains("prompt number 99"), "{s}");
    assert!(s.contains("100% "), "{s}");
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(app.session.as_ref().unwrap().top, 0);
    assert!(screen(&app).contains("prompt number 0"));
    press(&mut app, KeyCode::Char(' '));
    assert_eq!(app.session.as_ref().unwrap().top, app.body_rows());
    press(&mut app, KeyCode::Char('k'));
    assert_eq!(app.session.as_ref().unwrap().top, app.body_rows() - 1);
    press(&mut app, KeyCode::Char('G'));
    let s = app.session.as_ref().unwrap();
    assert_eq!(s.top + app.body_rows(), s.lines.len());
    assert_eq!(press(&mut app, KeyCode::Char('q')), Action::Close);
    assert!(screen(&app).contains("aaaa1111"));
}

#[test]
fn a_transcript_full_of_escape_sequences_leaves_only_plain_cells() {
    let (mut app, r) = opened_app(0);
    let hostile = [
        "\x1b]52;c;cm0gLXJmIH4K\x07copy",
        "\x1b]0;owned\x07title",
        "\x1b[2J\x1b[H\x1b[10;10Hmoves",
        "\x1b[?1049halternate\x1b[?1049l",
        "\u{9b}31mc1\u{9d}0;x\u{9c}\rreturn",
    ];
    app.grew(
        &r,
        hostile
            .iter()
            .map(|t| test_record(TextKind::Assistant, t))
            .collect(),
    );
    let buffer = frame(&app);
    for cell in buffer.content() {
        assert!(
            !cell.symbol().chars().any(|c| c.is_control()),
            "a control reached the frame: {:?}",
            cell.symbol()
        );
    }
    let s = screen(&app);
    for word in ["copy", "title", "moves", "alternate", "return"] {
        assert!(s.contains(word), "{s}");
    }
}

#[test]
fn records_that_arrive_come_after_a_marker_and_follow_keeps_the_end_in_view() {
    let (mut app, r) = opened_app(60);
    press(&mut app, KeyCode::Char('F'));
    app.grew(&r, vec![test_record(TextKind::User, "a late prompt")]);
    let s = screen(&app);
    assert!(s.contains(NEW_MARKER), "{s}");
    assert!(s.find(NEW_MARKER).unwrap() < s.find("a late prompt").unwrap());
    assert!(s.contains("follow on"), "{s}");
    press(&mut app, KeyCode::Char('j'));
    assert!(screen(&app).contains("follow · "));
    // Scrolled up, the view stays where it is.
    press(&mut app, KeyCode::Char('g'));
    app.grew(&r, vec![test_record(TextKind::User, "later still")]);
    assert_eq!(app.session.as_ref().unwrap().top, 0);
    // Another session's records are not this one's.
    app.grew(&row("x", "y", 0, "z"), records(3));
    assert_eq!(app.session.as_ref().unwrap().records.len(), 62);
}

#[test]
fn search_moves_to_each_hit_and_kind_toggles_hide_records() {
    let (mut app, _) = opened_app(100);
    press(&mut app, KeyCode::Char('g'));
    typed(&mut app, "/number 42");
    press(&mut app, KeyCode::Enter);
    let s = app.session.as_ref().unwrap();
    assert!(s.lines[s.top].contains("number 42"), "{}", s.lines[s.top]);
    press(&mut app, KeyCode::Char('1'));
    let s = app.session.as_ref().unwrap();
    assert!(!s.lines.iter().any(|l| l.contains("prompt number")));
    assert!(screen(&app).contains("user hidden"));
    press(&mut app, KeyCode::Char('1'));
    typed(&mut app, "/no such text");
    press(&mut app, KeyCode::Enter);
    assert!(screen(&app).contains("not found: no such text"));
}

#[test]
fn c_copies_the_resume_command_and_shows_it() {
    let (mut app, r) = opened_app(3);
    press(&mut app, KeyCode::Char('c'));
    assert!(screen(&app).contains("no resume command"));
    app.resume_found(&r, "cd /w && claude --resume aaaa1111".into());
    let action = press(&mut app, KeyCode::Char('c'));
    assert_eq!(
        action,
        Action::Copy("cd /w && claude --resume aaaa1111".into())
    );
    assert!(screen(&app).contains("copied: cd /w && claude --resume aaaa1111"));
}

#[test]
fn help_names_the_keys_and_any_key_closes_it() {
    let (mut app, _) = opened_app(3);
    press(&mut app, KeyCode::Char('?'));
    let s = screen(&app);
    assert!(s.contains("copy the resume command"), "{s}");
    press(&mut app, KeyCode::Char('x'));
    assert!(!app.help);
}

#[test]
fn without_colour_no_cell_is_coloured() {
    let (mut app, _) = opened_app(30);
    app.color = false;
    for cell in frame(&app).content() {
        assert_eq!((cell.fg, cell.bg), (Color::Reset, Color::Reset));
    }
    press(&mut app, KeyCode::Char('q'));
    for cell in frame(&app).content() {
        assert_eq!((cell.fg, cell.bg), (Color::Reset, Color::Reset));
    }
}

#[test]
fn a_narrow_pane_and_a_resize_keep_the_end_in_view() {
    let (mut app, _) = opened_app(40);
    app.resize(30, 8);
    let s = screen(&app);
    assert!(s.contains("mber 39"), "{s}");
    app.resize(120, 40);
    let s = app.session.as_ref().unwrap();
    assert_eq!(s.top + app.body_rows(), s.lines.len().max(app.body_rows()));
    app.resize(10, 3);
    let _ = screen(&app);
}
