//! The host-wide follow's screen: what is followed, the merged lines (each led by its
//! session), the marker where the records that arrived start, the keys at the bottom.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::{bold, dim, draw_status, fit};
use crate::ui::lines::{NEW_MARKER, plain};
use crate::ui::model::App;
use crate::ui::model::follow::HostFollow;

pub(super) fn draw_follow(frame: &mut Frame<'_>, app: &App, f: &HostFollow, area: Rect) {
    let width = usize::from(area.width);
    let said = match &f.started {
        None => "starting…".to_string(),
        Some(Ok(n)) => format!(
            "{n} session{} and every new one",
            if *n == 1 { "" } else { "s" }
        ),
        Some(Err(message)) => format!("failed: {message}"),
    };
    let mut lines = vec![
        Line::styled(
            fit(&plain(&format!("── following {} · {said}", f.host)), width),
            bold(),
        ),
        Line::styled(
            fit(
                "   the newest records of its latest sessions, then what arrives",
                width,
            ),
            dim(app),
        ),
        Line::styled(
            fit(
                &plain(&format!("   {}", f.warning.as_deref().unwrap_or(""))),
                width,
            ),
            dim(app),
        ),
    ];
    let body = app.body_rows();
    for line in f.lines.iter().skip(f.top).take(body) {
        if line == NEW_MARKER {
            let style = if app.color {
                bold().fg(Color::Yellow)
            } else {
                bold()
            };
            lines.push(Line::styled(line.clone(), style));
        } else {
            lines.push(Line::styled(line.clone(), Style::default()));
        }
    }
    frame.render_widget(Paragraph::new(lines), area);
    let status = app.status.clone().unwrap_or_else(|| {
        let end = (f.top + body).min(f.lines.len());
        format!("{end}/{} · G end · ? help · q back", f.lines.len())
    });
    draw_status(frame, app, area, &status);
}
