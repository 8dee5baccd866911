//! The view's bounds on one large session (`scripts/bench --only-ui`): the time to its first
//! paint (listing the home, resolving the session, reading its newest page, one frame drawn),
//! the frame time while scrolling back through it (the view's model and drawing on ratatui's
//! test backend, each key's frame; the backward reads between frames are timed apart), and the
//! process's peak resident memory after walking back past the view's bound of records held.
//!
//! Usage: cargo run --profile dist --example ui_bench -- HOME SESSION_ID [FRAMES]
//! (HOME holds `.claude/projects/…/SESSION_ID.jsonl`).

use std::time::{Duration, Instant};

use clankie_engine::page::{Mode, PageRequest};
use clankie_engine::resolve::SessionQuery;
use clankie_host::local::LocalHost;
use clankie_model::RootSpec;
use clankie_model::limits::MAX_LIMIT;
use clankie_read::driver::Reader;
use clankie_read::ui::draw::draw;
use clankie_read::ui::model::{Action, App, SessionRow};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (home, id) = (&args[1], &args[2]);
    let frames: usize = args.get(3).map_or(3000, |n| n.parse().expect("FRAMES"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let host = LocalHost::new("local");
        let claude = clankie_engine::harness::by_name("claude").unwrap();
        let roots = [RootSpec {
            harness: claude,
            dir: Some(format!("{home}/.claude").into_bytes()),
        }];
        let (cols, rows) = (120u16, 40u16);
        let mut terminal = Terminal::new(TestBackend::new(cols, rows)).unwrap();

        // First paint: the session opened as the view opens it, then one frame.
        let started = Instant::now();
        let reader = Reader::new(&host);
        let query = SessionQuery::parse(&format!("claude/{id}")).unwrap();
        let tail = PageRequest {
            mode: Mode::Tail,
            limit: MAX_LIMIT,
            strict: false,
            redact: true,
        };
        let session = reader
            .resolve_for_read(&roots, &query, &tail)
            .await
            .unwrap();
        let page = reader.read_page_whole(&session, tail).await.unwrap();
        let row = SessionRow {
            host: "local".into(),
            harness: "claude".into(),
            id: id.clone(),
            mtime: 0,
            size: session.entry.size,
            title: None,
            cwd: None,
        };
        let mut app = App::new(&["local".into()], (cols, rows), 0, false);
        app.listed("local", Ok(vec![row.clone()]));
        app.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
        app.opened(&row, Ok((page.records, page.older)));
        app.started_at(&row, page.start);
        terminal.draw(|f| draw(f, &app)).unwrap();
        let first_paint = started.elapsed();

        // Scrolling back: a line, then a page, up; each key's model change and frame timed.
        let mut frame_times = Vec::with_capacity(frames);
        let mut reads = Duration::ZERO;
        let mut pages = 0;
        for i in 0..frames {
            let code = if i % 4 == 0 {
                KeyCode::PageUp
            } else {
                KeyCode::Up
            };
            let t = Instant::now();
            let mut action = app.key(KeyEvent::new(code, KeyModifiers::NONE));
            terminal.draw(|f| draw(f, &app)).unwrap();
            frame_times.push(t.elapsed());
            while let Action::LoadOlder(_, cursor) = action {
                let t = Instant::now();
                let request = PageRequest {
                    mode: Mode::Before(cursor),
                    limit: MAX_LIMIT,
                    strict: false,
                    redact: true,
                };
                let page = reader.read_page_whole(&session, request).await.unwrap();
                reads += t.elapsed();
                pages += 1;
                let t = Instant::now();
                action = app.older(&row, Ok((page.records, page.older, page.start)));
                terminal.draw(|f| draw(f, &app)).unwrap();
                frame_times.push(t.elapsed());
            }
        }
        frame_times.sort();
        let n = frame_times.len();
        let held = app.session.as_ref().map_or(0, |s| s.records.len());
        println!("first paint: {:.1} ms", ms(first_paint));
        println!(
            "frames: {n}, median {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            ms(frame_times[n / 2]),
            ms(frame_times[n * 99 / 100]),
            ms(frame_times[n - 1])
        );
        println!(
            "backward reads: {pages} pages of {MAX_LIMIT}, {:.2} ms each; records held: {held}",
            ms(reads) / pages.max(1) as f64
        );
        println!("peak RSS: {:.1} MiB", peak_rss_kib() as f64 / 1024.0);
    });
}
