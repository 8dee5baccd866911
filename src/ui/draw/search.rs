//! The global search's screen: the pattern, a row per host still searching, stopped or failed,
//! a row per hit (host, session, time, the matching line), the prompt or the keys at the
//! bottom.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::{bold, dim, draw_status, fit};
use crate::ui::lines::plain;
use crate::ui::model::App;
use crate::ui::model::search::{GlobalSearch, HostSearch};

/// Below this width a hit's row leaves out its time.
const NARROW: usize = 60;

pub(super) fn draw_search(frame: &mut Frame<'_>, app: &App, g: &GlobalSearch, area: Rect) {
    let width = usize::from(area.width);
    let mut title = match &g.pattern {
        Some(pattern) => {
            let n = g.hits.len() + g.dropped;
            format!(
                "grep {} · {n} hit{}",
                plain(pattern),
                if n == 1 { "" } else { "s" }
            )
        }
        None => "grep every host".to_string(),
    };
    if g.dropped > 0 {
        title.push_str(&format!(" (the first {} shown)", g.hits.len()));
    }
    if g.running() {
        title.push_str(" · searching…");
    }
    let mut lines = vec![Line::styled(fit(&title, width), bold())];
    let several = g.hosts.len() > 1;
    let host_width = g
        .hosts
        .iter()
        .map(|(h, _)| h.chars().count())
        .max()
        .unwrap_or(0)
        .min(10);
    let time = width >= NARROW;
    let mut header = String::from(" ");
    if several {
        header.push_str(&format!("{:<host_width$} ", "HOST"));
    }
    header.push_str("SESSION  ");
    if time {
        header.push_str("TIME        ");
    }
    header.push_str("LINE");
    lines.push(Line::styled(fit(&header, width), dim(app)));
    for (name, state) in &g.hosts {
        let said = match state {
            HostSearch::Searching => "searching…".to_string(),
            HostSearch::Failed(message) => format!("failed: {message}"),
            HostSearch::Cancelled => "stopped".to_string(),
            HostSearch::Done(0) => "no match".to_string(),
            HostSearch::Done(_) => continue,
        };
        let style = match (state, app.color) {
            (HostSearch::Failed(_), true) => Style::default().fg(Color::Red),
            (HostSearch::Failed(_), false) => bold(),
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
    let first = g.selected.saturating_sub(rows - 1);
    for (i, hit) in g.hits.iter().enumerate().skip(first).take(rows) {
        let mut text = String::from(" ");
        if several {
            text.push_str(&format!("{:<host_width$} ", fit(&hit.host, host_width)));
        }
        let id: String = hit.session.chars().take(8).collect();
        text.push_str(&format!("{id:<8} "));
        if time {
            text.push_str(&format!("{:<11} ", hit.time));
        }
        text.push_str(&hit.line);
        let text = fit(&plain(&text), width);
        let style = if i == g.selected {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default()
        };
        lines.push(Line::styled(format!("{text:<width$}"), style));
    }
    if g.pattern.is_some() && g.hits.is_empty() && !g.running() {
        lines.push(Line::styled("   no record matches", dim(app)));
    }
    let body = Rect {
        height: area.height.saturating_sub(1),
        ..area
    };
    frame.render_widget(Paragraph::new(lines), body);
    let status = if g.prompt.active {
        match &app.status {
            Some(error) => format!("grep: {}▏ {error}", g.prompt.text),
            None => format!("grep: {}▏", g.prompt.text),
        }
    } else if let Some(status) = &app.status {
        status.clone()
    } else if g.running() {
        "Enter open · Esc stop · s new search · ? help".to_string()
    } else {
        "Enter open · s new search · ? help · q back".to_string()
    };
    draw_status(frame, app, area, &status);
}
