//! The view's bounds on one large session (`scripts/bench --only-ui`), measured on the reads and
//! the model the view runs (`cli::ui::reading`'s reader and requests, `ui::model`, `ui::draw`
//! through ratatui's crossterm backend, its escape sequences written to a sink):
//!
//! - first paint: the session resolved, its newest page read, the page put in the model and
//!   one frame drawn (the list's Enter to the session on screen; the listing before is not in
//!   it);
//! - frame time: scrolling back, three lines then a page, again and again: each key's model
//!   change and frame; and at the first loaded line, where the view asks for the page before
//!   (a backward read on the session's own task, off the loop), the frame that puts that page
//!   in (the model's update, which lays out the records held again, and the drawing);
//! - the wait at a page boundary: what a user scrolling up waits there, from the key that
//!   reaches the first loaded line to the frame showing the lines before it (the key's frame,
//!   the backward read, the page's frame), reported beside the frames, as it is not a frame;
//! - peak resident memory (VmHWM) after walking back past the view's bound of records held
//!   ([`MAX_LOADED_RECORDS`]): `PAGES` pages back.
//!
//! Usage: ui_bench HOME SESSION_ID [PAGES] (HOME holds `.claude/projects/…/SESSION_ID.jsonl`;
//! PAGES: backward reads to walk, default 16, 3,200 records).

use std::time::{Duration, Instant};

use clankie_host::AnyHost;
use clankie_host::local::LocalHost;
use clankie_model::RootSpec;
use clankie_model::limits::MAX_LIMIT;
use clankie_read::cli::ui::reading::{back_request, tail_request, view_reader};
use clankie_read::ui::draw::draw;
use clankie_read::ui::model::{Action, App, MAX_LOADED_RECORDS, SessionRow};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};

/// The process's peak resident memory so far, in KiB (Linux's `VmHWM`).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Median, 99th percentile and maximum of `times`, in ms.
fn spread(times: &mut [Duration]) -> String {
    times.sort();
    let n = times.len();
    if n == 0 {
        return "none".into();
    }
    format!(
        "median {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        ms(times[n / 2]),
        ms(times[(n * 99 / 100).min(n - 1)]),
        ms(times[n - 1])
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, home, id, rest @ ..] = args.as_slice() else {
        eprintln!("usage: ui_bench HOME SESSION_ID [PAGES]");
        std::process::exit(2);
    };
    let pages_to_walk: usize = rest.first().map_or(16, |n| n.parse().expect("PAGES"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let host = AnyHost::Local(LocalHost::new("local"));
        let claude = clankie_engine::harness::by_name("claude").unwrap();
        let roots = [RootSpec {
            harness: claude,
            dir: Some(format!("{home}/.claude").into_bytes()),
        }];
        let (cols, rows) = (120u16, 40u16);
        let backend = CrosstermBackend::new(std::io::sink());
        let viewport = Viewport::Fixed(Rect::new(0, 0, cols, rows));
        let mut terminal = Terminal::with_options(backend, TerminalOptions { viewport }).unwrap();
        let row = SessionRow {
            host: "local".into(),
            harness: "claude".into(),
            id: id.clone(),
            mtime: 0,
            size: 0,
            title: None,
            cwd: None,
        };
        let mut app = App::new(&["local".into()], (cols, rows), 0, false);
        app.listed("local", Ok(vec![row.clone()]));
        let open = app.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
        assert_eq!(open, Action::Open(row.clone()));

        // First paint: the session opened as `cli::ui::read_session` opens it, then one frame.
        let started = Instant::now();
        let reader = view_reader(&host);
        let request = tail_request(&row).unwrap();
        let session = request.resolve(&reader, &roots).await.unwrap();
        let page = request.read_page(&reader, &session).await.unwrap();
        app.opened(&row, Ok((page.records, page.older)));
        app.started_at(&row, page.start);
        terminal.draw(|f| draw(f, &app)).unwrap();
        let first_paint = started.elapsed();

        // Back through the session: three lines up, then a page up, until `pages_to_walk`
        // pages have been read back.
        let mut key_frames = Vec::new();
        let mut page_frames = Vec::new();
        let mut reads = Vec::new();
        let mut waits = Vec::new();
        let mut keys = 0usize;
        while reads.len() < pages_to_walk {
            let code = if keys % 4 == 3 {
                KeyCode::PageUp
            } else {
                KeyCode::Up
            };
            keys += 1;
            let t = Instant::now();
            let mut action = app.key(KeyEvent::new(code, KeyModifiers::NONE));
            terminal.draw(|f| draw(f, &app)).unwrap();
            let key_frame = t.elapsed();
            key_frames.push(key_frame);
            if !matches!(action, Action::LoadOlder(..)) {
                assert!(
                    app.session.as_ref().is_some_and(|s| s.top > 0 || !s.earlier),
                    "stuck at the first loaded line with nothing asked: {action:?}"
                );
                if app.session.as_ref().is_some_and(|s| s.top == 0) {
                    break;
                }
                continue;
            }
            let mut wait = key_frame;
            while let Action::LoadOlder(_, cursor) = action {
                let t = Instant::now();
                let older = reader
                    .read_page_whole(&session, back_request(cursor))
                    .await
                    .unwrap();
                let read = t.elapsed();
                reads.push(read);
                let t = Instant::now();
                action = app.older(&row, Ok((older.records, older.older, older.start)));
                terminal.draw(|f| draw(f, &app)).unwrap();
                let frame = t.elapsed();
                page_frames.push(frame);
                wait += read + frame;
            }
            waits.push(wait);
        }
        let held = app.session.as_ref().map_or(0, |s| s.records.len());
        let lines = app.session.as_ref().map_or(0, |s| s.lines.len());
        let let_go = app.session.as_ref().is_some_and(|s| s.back.newer_dropped);
        let mut frames = [key_frames.clone(), page_frames.clone()].concat();
        println!("first paint: {:.1} ms", ms(first_paint));
        println!("frames: {}, {}", frames.len(), spread(&mut frames));
        println!(
            "  of them keys: {}, {}",
            key_frames.len(),
            spread(&mut key_frames)
        );
        println!(
            "  of them a page put in: {}, {}",
            page_frames.len(),
            spread(&mut page_frames)
        );
        println!(
            "backward reads: {} pages of {MAX_LIMIT} records, {}",
            reads.len(),
            spread(&mut reads)
        );
        println!(
            "wait at a page boundary (key frame + read + page frame): {}",
            spread(&mut waits)
        );
        println!(
            "records held: {held} (bound {MAX_LOADED_RECORDS}), lines {lines}, newest let go: {let_go}"
        );
        println!("peak RSS: {:.1} MiB", peak_rss_kib() as f64 / 1024.0);
    });
}
