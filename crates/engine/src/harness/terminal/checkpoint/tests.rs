//! A tail from a checkpoint against a replay from the start: the same records (text, time,
//! generation, kind) and the same screen, on recordings of every format built to put state
//! before the checkpoint that the replay after it depends on (sizes, resizes, generations,
//! v3's relative times, a raw log's newline mode, full-screen programs, scroll regions); and
//! a `--since` after such a tail continuing exactly.

use super::super::{replay, replay_paged};
use super::*;
use crate::cursor::Cursor;
use crate::page::{Mode, PageRequest};
use clankie_model::{Record, RecordBody, TextKind};

fn ctx() -> SourceCtx {
    crate::test_support::ctx(crate::harness::by_name("terminal").unwrap())
}

/// What a record shows, without its id (which names the checkpoint it counts from).
fn shown(record: &Record) -> (String, Option<String>, Option<u32>) {
    match &record.body {
        RecordBody::Text {
            kind: TextKind::Terminal { generation, .. },
            text,
        } => (text.to_string(), record.ts.clone(), Some(*generation)),
        RecordBody::Text { text, .. } => (text.to_string(), record.ts.clone(), None),
        other => panic!("{other:?}"),
    }
}

/// Checks the tail of the newest `n` records of `bytes` against a replay from the start, for
/// every `n` up to all of them; returns how many of those tails came from a checkpoint.
fn tails_match(bytes: &[u8], size: Option<(usize, usize)>) -> usize {
    let ctx = ctx();
    let whole = replay(&ctx, bytes, size, None, None);
    let total = whole.records.len();
    let mut checkpointed = 0;
    for n in 1..=total + 2 {
        let tail = replay(&ctx, bytes, size, Some(n), None);
        let want: Vec<_> = whole.records[total.saturating_sub(n)..]
            .iter()
            .map(shown)
            .collect();
        let got: Vec<_> = tail.records.iter().map(shown).collect();
        assert_eq!(got, want, "tail of {n}: {:?}", tail.note);
        assert_eq!(tail.screen, whole.screen, "tail of {n}");
        assert_eq!(tail.pending, whole.pending, "tail of {n}");
        let from = tail.records.first().is_some_and(|r| r.id.contains('@'));
        let note = tail.note.as_deref().unwrap_or_default();
        assert_eq!(
            from,
            note.starts_with("the tail was replayed from the checkpoint"),
            "{note}"
        );
        checkpointed += usize::from(from);
    }
    checkpointed
}

fn cast_event(time: &str, code: &str, data: &str) -> String {
    format!(
        "[{time}, {code:?}, {}]\n",
        serde_json::to_string(data).unwrap()
    )
}

#[test]
fn a_raw_log_after_a_reset_tails_as_from_its_start() {
    let mut log = String::new();
    for i in 0..40 {
        log.push_str(&format!("before {i}\r\n"));
    }
    // State a reset clears: a scroll region, insert mode, the line-drawing set, a full-screen
    // program left open.
    log.push_str("\x1b[2;5r\x1b[4h\x1b(0qqq\x1b[?1049hin less\r\n");
    log.push_str("\x1bc");
    for i in 0..30 {
        log.push_str(&format!("after {i} \x1b[32mok\x1b[0m\r\n"));
    }
    log.push_str("$ ");
    let checkpointed = tails_match(log.as_bytes(), Some((20, 5)));
    assert!(checkpointed >= 20, "{checkpointed}");
}

#[test]
fn a_raw_log_of_bare_newlines_keeps_its_mode_past_the_checkpoint() {
    // No `\r` before the reset: `\n` is a new line after it too; one after, then not.
    let log = "one\ntwo\n\x1bcthree\nfour\nfive\nsix\nseven\r\neight\nnine\n";
    assert!(tails_match(log.as_bytes(), Some((10, 3))) > 0);
    let log = "one\r\ntwo\n\x1bcthree\nfour\nfive\nsix\nseven\neight\n";
    assert!(tails_match(log.as_bytes(), Some((10, 3))) > 0);
}

#[test]
fn a_typescript_keeps_its_size_and_generation_past_the_checkpoint() {
    let header = |cols: u32, rows: u32| {
        format!(
            "Script started on 2026-12-01 11:00:00+00:00 [COMMAND=\"sh\" TERM=\"xterm\" TTY=\"/dev/pts/1\" COLUMNS=\"{cols}\" LINES=\"{rows}\"]\n"
        )
    };
    let mut script = header(30, 4);
    script.push_str(&"first recording\r\n".repeat(10));
    script.push_str("\nScript done on 2026-12-01 11:00:01+00:00 [COMMAND_EXIT_CODE=\"0\"]\n");
    script.push_str(&header(12, 3));
    script.push_str(&"a long line that wraps at twelve\r\n".repeat(5));
    script.push_str("\x1bc");
    script.push_str(&"after the reset, wrapped too\r\n".repeat(8));
    script.push_str("$ ");
    let checkpointed = tails_match(script.as_bytes(), None);
    assert!(checkpointed > 0);
    let tail = replay(&ctx(), script.as_bytes(), None, Some(3), None);
    assert!(tail.records.iter().all(|r| r.id.starts_with("t2@")));
}

#[test]
fn a_cast_keeps_its_resizes_and_v3_times_past_the_checkpoint() {
    for version in [2, 3] {
        let mut cast = match version {
            2 => r#"{"version": 2, "width": 40, "height": 4, "timestamp": 1700000000}"#,
            _ => r#"{"version": 3, "term": {"cols": 40, "rows": 4}, "timestamp": 1700000000}"#,
        }
        .to_string();
        cast.push('\n');
        let mut time = 0.0f64;
        let mut event = |cast: &mut String, code: &str, data: &str| {
            time += 0.25;
            let t = if version == 2 { time } else { 0.25 };
            cast.push_str(&cast_event(&format!("{t:.3}"), code, data));
        };
        for i in 0..10 {
            event(&mut cast, "o", &format!("line {i} of forty columns\r\n"));
        }
        event(&mut cast, "r", "10x3");
        event(&mut cast, "i", "\u{1b}c typed, not shown");
        // The reset's two bytes in events of their own, as asciinema records `reset`.
        event(&mut cast, "o", "narrow now\r\n\u{1b}[?1049h\u{1b}");
        event(&mut cast, "o", "c");
        for i in 0..12 {
            event(&mut cast, "o", &format!("after {i}, wrapping\r\n"));
        }
        event(&mut cast, "m", "a marker");
        event(&mut cast, "o", "$ ");
        let checkpointed = tails_match(cast.as_bytes(), None);
        assert!(checkpointed > 0, "v{version}");
    }
}

#[test]
fn a_later_recording_start_is_a_checkpoint() {
    let mut cast = String::new();
    for (n, size) in [(1, "30, \"height\": 3"), (2, "15, \"height\": 4")] {
        cast.push_str(&format!("{{\"version\": 2, \"width\": {size}}}\n"));
        for i in 0..8 {
            cast.push_str(&cast_event(
                "0.5",
                "o",
                &format!("rec {n} line {i} is long\r\n"),
            ));
        }
    }
    assert!(tails_match(cast.as_bytes(), None) > 0);
}

#[test]
fn text_that_only_looks_like_a_reset_is_passed_over() {
    // An escaped backslash before `u001bc`, and `ESC c` typed (input): no reset in either.
    let mut cast = String::from("{\"version\": 2, \"width\": 20, \"height\": 3}\n");
    for i in 0..6 {
        cast.push_str(&cast_event("0.1", "o", &format!("line {i}\r\n")));
    }
    cast.push_str(&cast_event("0.1", "o", "\u{1b}c"));
    for i in 0..6 {
        cast.push_str(&cast_event("0.2", "o", &format!("after {i}\r\n")));
    }
    cast.push_str(&cast_event(
        "0.3",
        "o",
        "\\u001bc is how JSON writes it\r\n",
    ));
    cast.push_str(&cast_event("0.4", "i", "\u{1b}c"));
    cast.push_str(&cast_event("0.5", "o", "end\r\n"));
    assert!(tails_match(cast.as_bytes(), None) > 0);
}

#[test]
fn without_a_checkpoint_the_tail_says_why_it_replays_from_the_start() {
    let log = "a\r\n".repeat(50);
    let tail = replay(&ctx(), log.as_bytes(), None, Some(5), None);
    let note = tail.note.unwrap();
    assert!(
        note.contains("from its start") && note.contains("no full reset"),
        "{note}"
    );
    assert!(tail.records.iter().all(|r| !r.id.contains('@')));
    // A reset too near the end for the records asked for.
    let log = format!("{}\x1bcb\r\n", "a\r\n".repeat(50));
    let tail = replay(&ctx(), log.as_bytes(), None, Some(20), None);
    let note = tail.note.unwrap();
    assert!(note.contains("reach back past"), "{note}");
}

#[test]
fn a_since_after_a_checkpointed_tail_continues_exactly_as_the_log_grows() {
    let ctx = ctx();
    const SIZE: Option<(usize, usize)> = Some((20, 3));
    let mut log = "old\r\n".repeat(100);
    log.push_str("\x1bc");
    for i in 0..10 {
        log.push_str(&format!("new {i}\r\n"));
    }
    let request = |mode| PageRequest {
        mode,
        limit: 5,
        strict: false,
        redact: false,
    };
    let tail = replay(&ctx, log.as_bytes(), SIZE, Some(5), None);
    let page = crate::rows::page(&ctx, tail, &request(Mode::Tail)).unwrap();
    assert!(
        page.records[0].id.starts_with("t1@500."),
        "{}",
        page.records[0].id
    );
    let mut cursor = page.cursor;
    let mut seen: Vec<String> = page.records.iter().map(|r| shown(r).0).collect();
    // The log grows by lines and by another reset; each page continues after the last.
    for round in 0..3 {
        for i in 0..7 {
            log.push_str(&format!("round {round} line {i}\r\n"));
        }
        if round == 1 {
            log.push_str("\x1bc");
        }
        loop {
            let Cursor::Rows(after) = Cursor::decode(&cursor.encode()).unwrap() else {
                panic!("a row cursor");
            };
            let rows = replay_paged(&ctx, log.as_bytes(), SIZE, None, Some(&after), u64::MAX);
            let page =
                crate::rows::page(&ctx, rows, &request(Mode::Since(Cursor::Rows(after)))).unwrap();
            assert!(!page.reset, "round {round}");
            seen.extend(page.records.iter().map(|r| shown(r).0));
            cursor = page.cursor;
            if !page.more {
                break;
            }
        }
    }
    let whole = replay(&ctx, log.as_bytes(), SIZE, None, None);
    let want: Vec<String> = whole.records[whole.records.len() - seen.len()..]
        .iter()
        .map(|r| shown(r).0)
        .collect();
    assert_eq!(seen, want);
    assert_eq!(seen[..5], ["new 3", "new 4", "new 5", "new 6", "new 7"]);
    // The checkpoint rewritten away: the cursor's records are gone, the page resets.
    let rewritten = log.replacen("\x1bc", "xx", 1);
    let Cursor::Rows(after) = cursor else {
        panic!("a row cursor");
    };
    let rows = replay_paged(
        &ctx,
        rewritten.as_bytes(),
        SIZE,
        None,
        Some(&after),
        u64::MAX,
    );
    let page = crate::rows::page(&ctx, rows, &request(Mode::Since(Cursor::Rows(after)))).unwrap();
    assert!(page.reset);
}

/// A small deterministic generator of terminal bytes: lines, wraps, colours, clears, resets,
/// scroll regions, insert mode, the alternate screen, repeats.
struct Bytes(u64);

impl Bytes {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }

    fn piece(&mut self) -> &'static str {
        const PIECES: &[&str] = &[
            "word ",
            "a longer run of text that wraps ",
            "\r\n",
            "\r\n",
            "\n",
            "\r",
            "\x1b[31mred\x1b[0m",
            "\x1b[2J\x1b[H",
            "\x1bc",
            "\x1b[2;4r",
            "\x1b[4hins\x1b[4l",
            "\x1b[?1049h",
            "\x1b[?1049l",
            "x\x1b[5b",
            "\x1b[3A",
            "\x1b[2S",
            "\x1b(0lqk\x1b(B",
            "\x1b]0;title\x07",
        ];
        PIECES[self.next(PIECES.len() as u64) as usize]
    }
}

#[test]
fn generated_recordings_tail_from_a_checkpoint_as_from_their_start() {
    let mut checkpointed = 0;
    for seed in 0..40 {
        let mut bytes = Bytes(seed);
        let mut log = String::new();
        for _ in 0..200 {
            log.push_str(bytes.piece());
        }
        checkpointed += tails_match(log.as_bytes(), Some((16, 4)));
    }
    assert!(checkpointed > 100, "{checkpointed}");
}
