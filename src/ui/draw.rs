//! One frame of the view, drawn from the state: the session list (a title, a row per host that
//! has not answered or failed, a row per session, a status line) or the open session (its
//! header, its lines, a status line), and the help over either. Every text drawn is already
//! plain (`lines::plain`): the frame holds no control character. Without colour (`NO_COLOR`)
//! the view uses only bold and reverse video.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::keys::KEYS;
use super::lines::{NEW_MARKER, plain};
use super::model::{App, HostState, SessionRow, SessionState};

mod follow;
mod search;

/// Draws the whole frame.
pub fn draw(frame: &mut Frame<'_>, app: &App) {
    let area = frame.area();
    match (&app.session, &app.follow, &app.search) {
        (Some(session), _, _) => draw_session(frame, app, session, area),
        (None, Some(f), _) => follow::draw_follow(frame, app, f, area),
        (None, None, Some(g)) => search::draw_search(frame, app, g, area),
        (None, None, None) => draw_list(frame, app, area),
    }
    if app.help {
        draw_help(frame, app, area);
    }
}

fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

fn dim(app: &App) -> Style {
    if app.color {
        Style::default().fg(Color::DarkGray)
    } else {
        Style::default()
    }
}

fn bar(app: &App) -> Style {
    if app.color {
        Style::default().bg(Color::Blue).fg(Color::White)
    } else {
        Style::default().add_modifier(Modifier::REVERSED)
    }
}

/// `text` cut to `width` columns, with `…` when cut.
fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let kept: String = text.chars().take(width.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// How long ago `mtime` was, as the list shows it: `40s`, `5m`, `3h`, `12d`.
pub fn age(now: i64, mtime: i64) -> String {
    let secs = (now - mtime).max(0);
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86400),
    }
}

/// A session's row: age, host (when several hosts are listed), harness, id, title or project.
fn session_line(row: &SessionRow, now: i64, hosts: bool, width: usize) -> String {
    let id: String = row.id.chars().take(8).collect();
    let what = row
        .title
        .as_deref()
        .or(row.cwd.as_deref())
        .unwrap_or_default();
    let host = if hosts {
        format!("{:<10} ", fit(&row.host, 10))
    } else {
        String::new()
    };
    let line = format!(
        "{:>4} {host}{:<8} {id:<8} {}",
        age(now, row.mtime),
        fit(&row.harness, 8),
        what
    );
    fit(&plain(&line), width)
}

fn draw_list(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let width = usize::from(area.width);
    let list = &app.list;
    let shown = list.shown();
    let several = list.hosts.len() > 1;
    let mut title = format!(
        "clankie-read ui · {} session{} · {} host{}",
        shown.len(),
        if shown.len() == 1 { "" } else { "s" },
        list.hosts.len(),
        if list.hosts.len() == 1 { "" } else { "s" },
    );
    if !list.filter.text.is_empty() || list.filter.active {
        title.push_str(&format!(" · filter: {}", plain(&list.filter.text)));
        if list.filter.active {
            title.push('▏');
        }
    }
    let mut lines = vec![Line::styled(fit(&title, width), bold())];
    let host_col = if several { "HOST       " } else { "" };
    lines.push(Line::styled(
        fit(&format!(" AGE {host_col}HARNESS  ID       TITLE"), width),
        dim(app),
    ));
    // Hosts that have not answered, failed or hold nothing: one row each, above the sessions.
    for (name, state) in &list.hosts {
        let said = match state {
            HostState::Listing => "listing…".to_string(),
            HostState::Failed(message) => format!("failed: {message}"),
            HostState::Listed(0) => "no sessions".to_string(),
            HostState::Listed(_) => continue,
        };
        let style = match (state, app.color) {
            (HostState::Failed(_), true) => Style::default().fg(Color::Red),
            (HostState::Failed(_), false) => bold(),
            _ => dim(app),
        };
        lines.push(Line::styled(
            fit(&plain(&format!("   ▸ {name}: {said}")), width),
            style,
        ));
    }
    let rows = usize::from(area.height)
        .saturating_sub(lines.len() + 1)
        .max(1);
    // The selected row stays on screen.
    let first = list.selected.saturating_sub(rows - 1);
    for (i, row) in shown.iter().enumerate().skip(first).take(rows) {
        let text = session_line(row, app.now, several, width);
        let style = if i == list.selected {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default()
        };
        lines.push(Line::styled(format!("{text:<width$}"), style));
    }
    if shown.is_empty() && list.hosts.iter().all(|(_, s)| *s != HostState::Listing) {
        lines.push(Line::styled("   no session matches", dim(app)));
    }
    let body = Rect {
        height: area.height.saturating_sub(1),
        ..area
    };
    frame.render_widget(Paragraph::new(lines), body);
    let status = app.status.clone().unwrap_or_else(|| {
        if width >= 72 {
            "Enter open · / filter · s search · F follow host · ? help · q quit"
        } else {
            "Enter open · / filter · s search · ? help"
        }
        .to_string()
    });
    draw_status(frame, app, area, &status);
}

fn draw_status(frame: &mut Frame<'_>, app: &App, area: Rect, text: &str) {
    if area.height == 0 {
        return;
    }
    let width = usize::from(area.width);
    let line = Line::styled(format!("{:<width$}", fit(&plain(text), width)), bar(app));
    let at = Rect {
        y: area.y + area.height - 1,
        height: 1,
        ..area
    };
    frame.render_widget(Paragraph::new(line), at);
}

/// The session's header: its title, then harness, `host:id` and directory, then model, records
/// and tokens.
fn header_lines(app: &App, s: &SessionState, width: usize) -> Vec<Line<'static>> {
    let row = &s.row;
    let id = format!("{}:{}", row.host, row.id);
    let title = row.title.clone().unwrap_or_else(|| id.clone());
    let mut second = format!("{} {id}", row.harness);
    if let Some(cwd) = &row.cwd {
        second.push_str(&format!(" · {cwd}"));
    }
    let mut third = Vec::new();
    if let Some(model) = &s.model {
        third.push(model.clone());
    }
    let n = s.records.len();
    third.push(format!("{n} record{}", if n == 1 { "" } else { "s" }));
    let t = s.tokens;
    let mut spent = Vec::new();
    for (count, what) in [(t.input, "in"), (t.cache_read, "cached"), (t.output, "out")] {
        if let Some(count) = count {
            spent.push(format!("{} {what}", tokens(count)));
        }
    }
    if !spent.is_empty() {
        third.push(format!("tokens {}", spent.join(", ")));
    }
    if s.back.loading {
        third.push("reading earlier records…".to_string());
    } else if s.earlier {
        third.push("earlier records not loaded".to_string());
    }
    if s.back.newer_dropped {
        third.push("newer records let go (G)".to_string());
    }
    vec![
        Line::styled(fit(&plain(&format!("── {title}")), width), bold()),
        Line::styled(fit(&plain(&format!("   {second}")), width), dim(app)),
        Line::styled(
            fit(&plain(&format!("   {}", third.join(" · "))), width),
            dim(app),
        ),
    ]
}

/// A count of tokens as people read it: `950`, `12.3k`, `4.1M`.
fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// One line of the session's body, with the search text's hits in reverse video.
fn body_line(app: &App, line: &str) -> Line<'static> {
    if line == NEW_MARKER {
        let style = if app.color {
            bold().fg(Color::Yellow)
        } else {
            bold()
        };
        return Line::styled(line.to_string(), style);
    }
    let Some(text) = app.search_text().map(str::to_lowercase) else {
        return Line::raw(line.to_string());
    };
    let lower = line.to_lowercase();
    // Where lower case changes a character's length, the hits cannot be placed: the line is
    // marked whole.
    if lower.len() != line.len() {
        let style = if lower.contains(&text) {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default()
        };
        return Line::styled(line.to_string(), style);
    }
    let mut spans = Vec::new();
    let mut at = 0;
    while let Some(found) = lower[at..].find(&text) {
        let start = at + found;
        let end = start + text.len();
        spans.push(Span::raw(line[at..start].to_string()));
        spans.push(Span::styled(
            line[start..end].to_string(),
            Style::default().add_modifier(Modifier::REVERSED),
        ));
        at = end;
    }
    spans.push(Span::raw(line[at..].to_string()));
    Line::from(spans)
}

fn draw_session(frame: &mut Frame<'_>, app: &App, s: &SessionState, area: Rect) {
    let width = usize::from(area.width);
    let mut lines = header_lines(app, s, width);
    let body = app.body_rows();
    if s.loading {
        lines.push(Line::styled("   reading…", dim(app)));
    } else if let Some(error) = &s.error {
        lines.push(Line::styled(
            fit(&plain(&format!("   {error}")), width),
            bold(),
        ));
    }
    let hit = s.hit.as_ref().map_or(0..0, |h| h.lines.clone());
    // The mark of the fold `o` acts on, in reverse video.
    let focus = s.focused_fold(body).map(|at| s.placed[at].lines.end - 1);
    lines.extend(
        s.lines
            .iter()
            .enumerate()
            .skip(s.top)
            .take(body)
            .map(|(i, line)| {
                let line = if focus == Some(i) {
                    Line::styled(
                        line.to_string(),
                        Style::default().add_modifier(Modifier::REVERSED),
                    )
                } else {
                    body_line(app, line)
                };
                hit_marked(app, line, hit.contains(&i))
            }),
    );
    frame.render_widget(Paragraph::new(lines), area);
    let status = if s.search.active {
        format!("/{}▏", s.search.text)
    } else if s.back.time.active {
        format!("jump to time: {}▏", s.back.time.text)
    } else if let Some(status) = &app.status {
        status.clone()
    } else {
        let total = s.lines.len();
        let end = (s.top + body).min(total);
        let percent = (end * 100).checked_div(total).unwrap_or(100);
        let k = s.kinds;
        let kinds: Vec<&str> = [
            (k.user, "user"),
            (k.assistant, "assistant"),
            (k.tools, "tools"),
            (k.thinking, "thinking"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        let follow = if s.follow { "follow · " } else { "" };
        format!(
            "{follow}{percent}% ({end}/{total}) · {} · ? help · q back",
            kinds.join(" ")
        )
    };
    draw_status(frame, app, area, &status);
}

/// A line of the record a global search's hit opened the session at: bold, on a colour when
/// colours are on.
fn hit_marked(app: &App, line: Line<'static>, hit: bool) -> Line<'static> {
    if !hit {
        return line;
    }
    let style = if app.color {
        bold().bg(Color::Indexed(236))
    } else {
        bold()
    };
    line.patch_style(style)
}

fn draw_help(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let screen = match (&app.session, &app.follow, &app.search) {
        (Some(_), _, _) => "session",
        (None, Some(_), _) => "host follow",
        (None, None, Some(_)) => "search hits",
        (None, None, None) => "session list",
    };
    let mut lines = Vec::new();
    for (name, keys) in KEYS
        .iter()
        .filter(|(n, _)| *n == screen || *n == "anywhere")
    {
        lines.push(Line::styled(name.to_string(), bold()));
        for (key, what) in *keys {
            lines.push(Line::raw(format!(" {key:<13} {what}")));
        }
    }
    let width = (lines.iter().map(Line::width).max().unwrap_or(0) as u16 + 2).min(area.width);
    let height = (lines.len() as u16 + 2).min(area.height);
    let at = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    frame.render_widget(Clear, at);
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" keys ")),
        at,
    );
}
