//! Pages of a recording whose records are more than one page holds: paged through their
//! cursors, they are the records of one read of everything, none lost or repeated.

use super::{bounds, replay_paged};
use crate::SourceCtx;
use crate::cursor::Cursor;
use crate::page::{Mode, PageRequest};
use clankie_model::Record;

fn ctx() -> SourceCtx {
    crate::test_support::ctx(crate::harness::by_name("terminal").unwrap())
}

/// An asciinema cast of `lines` events, each printing a numbered line of 1000 columns (most of
/// it one repeat), padded with an input event so that its output stays within the 16× per byte
/// replayed: a few MiB of cast give more than a 64 MiB page of records.
fn wide_cast(lines: usize) -> Vec<u8> {
    let mut cast = br#"{"version": 2, "width": 1000, "height": 5}"#.to_vec();
    cast.push(b'\n');
    for n in 0..lines {
        let event = format!(
            "[{n}.5, \"o\", \"L{n:07} x\\u001b[989b\\r\\n\"]\n[{n}.6, \"i\", \"padding padding\"]\n"
        );
        cast.extend_from_slice(event.as_bytes());
    }
    cast
}

/// Every page of `bytes` from the start, through the cursors (encoded and decoded, as a user
/// passes them), with a page of at most `page_output`.
fn paged(ctx: &SourceCtx, bytes: &[u8], page_output: u64) -> Vec<crate::page::Page> {
    let mut pages = Vec::new();
    let mut mode = Mode::All;
    loop {
        let after = match &mode {
            Mode::Since(Cursor::Rows(cursor)) => Some(cursor.clone()),
            _ => None,
        };
        let rows = replay_paged(ctx, bytes, None, None, after.as_ref(), page_output);
        let request = PageRequest {
            mode,
            limit: clankie_model::limits::MAX_LIMIT,
            strict: false,
            redact: false,
        };
        let page = crate::rows::page(ctx, rows, &request).unwrap();
        assert!(!page.reset, "a page after its own cursor is no reset");
        let more = page.more;
        mode = Mode::Since(Cursor::decode(&page.cursor.encode()).unwrap());
        pages.push(page);
        if !more {
            return pages;
        }
        assert!(pages.len() < 100, "the pages do not end");
    }
}

/// Pages `lines` wide lines through the cursors with a page of `page_output`, and checks them
/// against one read of everything: the same records, none lost or repeated, each page within
/// its bound.
fn pages_are_one_read(lines: usize, page_output: u64) {
    let ctx = ctx();
    let cast = wide_cast(lines);
    let everything = replay_paged(&ctx, &cast, None, None, None, u64::MAX);
    let text: u64 = everything.records.iter().map(text_len).sum();
    assert!(
        text > page_output,
        "{text} bytes of text from {} bytes of cast",
        cast.len()
    );
    assert!(
        !everything
            .records
            .iter()
            .any(|r| r.id.starts_with("bound@")),
        "no bound of the bytes replayed stops it"
    );
    let pages = paged(&ctx, &cast, page_output);
    assert!(pages.len() >= 2, "{} pages", pages.len());
    for page in &pages[..pages.len() - 1] {
        let held: u64 = page
            .records
            .iter()
            .map(|r| text_len(r) + bounds::LINE_COST)
            .sum();
        assert!(held <= page_output, "{held} bytes in one page");
        assert!(page.screen.is_empty() && !page.pending_tail);
    }
    let last = pages.last().unwrap();
    assert_eq!(last.screen, everything.screen);
    let ids = |records: &[Record]| records.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
    let paged_records: Vec<Record> = pages.into_iter().flat_map(|p| p.records).collect();
    assert_eq!(ids(&paged_records), ids(&everything.records));
    assert!(paged_records == everything.records, "the same records");
}

#[test]
fn records_past_a_page_continue_from_its_cursor_exactly() {
    // The page bound is a parameter of the replay: a small page pages a small cast through the
    // same code as 64 MiB pages a large one (below), in a fraction of the time.
    pages_are_one_read(600, 200 << 10);
}

/// A cast of 5 MiB giving over 70 MiB of records, at the real page bound: minutes in a debug
/// build (the emulator is not optimized there), seconds in a release one.
#[test]
#[ignore = "slow in a debug build: cargo test --release -p clankie-engine -- --ignored paging"]
fn records_past_64_mib_continue_from_the_cursor_exactly() {
    pages_are_one_read(70_000, bounds::MAX_OUTPUT);
}

#[test]
fn a_cursor_that_no_longer_matches_the_records_before_it_restarts_the_page() {
    let ctx = ctx();
    let cast = wide_cast(40);
    let pages = paged(&ctx, &cast, 20 * 1032);
    assert!(pages.len() >= 2);
    let Cursor::Rows(mut cursor) = pages[0].cursor.clone() else {
        panic!("a row cursor");
    };
    cursor.prefix_hash[0] ^= 1;
    let rows = replay_paged(&ctx, &cast, None, None, Some(&cursor), 20 * 1032);
    assert!(rows.skipped.is_none(), "replayed again from the start");
    let request = PageRequest {
        mode: Mode::Since(Cursor::Rows(cursor)),
        limit: clankie_model::limits::MAX_LIMIT,
        strict: false,
        redact: false,
    };
    let page = crate::rows::page(&ctx, rows, &request).unwrap();
    assert!(page.reset && page.more);
    assert_eq!(page.records[1].id, pages[0].records[0].id);
}

fn text_len(record: &Record) -> u64 {
    match &record.body {
        clankie_model::RecordBody::Text { text, .. } => text.len() as u64,
        _ => 0,
    }
}
