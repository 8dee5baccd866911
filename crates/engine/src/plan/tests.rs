//! The read planner's unit tests: plans run against files in memory, still or changing between
//! reads (`serve`), for every mode, with proptests over transcript-like files.

use super::*;
use clankie_model::RecordBody;

fn ctx() -> SourceCtx {
    crate::test_support::ctx(crate::test_support::harness("claude"))
}

#[test]
fn seen_ids_are_told_apart_by_their_bytes() {
    let mut seen = SeenIds::default();
    let mut reference = HashSet::new();
    // Prefixes of each other, empty, non-ASCII, and enough of them to grow the table.
    let mut ids: Vec<String> = ["", "a", "ab", "a#0", "a#1", "é", "e\u{301}"]
        .map(String::from)
        .to_vec();
    ids.extend((0..5000).map(|i| format!("{:x}#{}", i * 7919, i % 3)));
    for round in 0..2 {
        for id in &ids {
            assert_eq!(
                seen.insert(id),
                reference.insert(id.clone()),
                "{id} {round}"
            );
        }
    }
    assert_eq!(seen.spans.len(), reference.len());
}

/// `--all` starts the read after the current one early: the one it predicts is the one
/// the plan then asks for, up to the 64 MiB bound (sizes around it and a file that ends
/// inside a chunk), and there is no prediction past the page's end.
#[test]
fn the_read_after_next_is_the_read_that_follows() {
    // Lines too long to parse cost nothing to feed, and never end the page early.
    let sizes = [
        10,
        FIRST_CHUNK_BYTES,
        FIRST_CHUNK_BYTES + 1,
        5 * MAX_READ_BYTES + 17,
        MAX_SOURCE_BYTES - 1,
        MAX_SOURCE_BYTES,
        MAX_SOURCE_BYTES + 3 * MAX_READ_BYTES,
    ];
    for size in sizes {
        let request = PageRequest {
            mode: Mode::All,
            limit: 0,
            strict: false,
            redact: false,
        };
        let mut plan = ReadPlan::new(ctx(), request, size);
        let mut reads = 0;
        while let Some(ranges) = plan.next_read() {
            let predicted = plan.read_after_next(size);
            let len = ranges[0].end().min(size) - ranges[0].start;
            plan.feed(vec![vec![b'x'; len as usize]], size).unwrap();
            reads += 1;
            assert_eq!(predicted, plan.next_read(), "size {size}, read {reads}");
        }
        assert!(reads >= 1, "{size}");
    }
}

/// Runs a plan against bytes in memory, as a host would serve them.
fn run(file: &[u8], mode: Mode, limit: usize, strict: bool) -> Result<Page, PlanError> {
    run_request(
        file,
        PageRequest {
            mode,
            limit,
            strict,
            redact: false,
        },
    )
}

fn run_request(file: &[u8], request: PageRequest) -> Result<Page, PlanError> {
    serve(&[file.to_vec()], &[0], request, 10_000)
}

/// Runs a plan against a host whose file may change between calls: each read is served
/// from the version `schedule` names (cycling), clipped at that version's size, as a real
/// host would; records streamed and the page's are returned together. A plan that asks
/// for more than `max_calls` reads, or for more than one call's bytes, fails the test.
fn serve(
    versions: &[Vec<u8>],
    schedule: &[usize],
    request: PageRequest,
    max_calls: usize,
) -> Result<Page, PlanError> {
    let first = &versions[schedule[0] % versions.len()];
    let mut plan = ReadPlan::new(ctx(), request, first.len() as u64);
    let mut streamed = Vec::new();
    let mut calls = 0usize;
    while let Some(ranges) = plan.next_read() {
        let file = &versions[schedule[calls % schedule.len()] % versions.len()];
        calls += 1;
        assert!(calls < max_calls, "plan does not terminate");
        assert!(ranges.iter().map(|r| r.len).sum::<u64>() <= MAX_READ_BYTES + HEAD_BYTES);
        let size = file.len() as u64;
        let chunks = ranges
            .iter()
            .map(|r| {
                let s = r.start.min(size) as usize;
                let e = r.end().min(size) as usize;
                file[s..e].to_vec()
            })
            .collect();
        plan.feed(chunks, size)?;
        streamed.extend(plan.take_records());
    }
    let mut page = plan.finish();
    streamed.append(&mut page.records);
    page.records = streamed;
    Ok(page)
}

fn user(uuid: &str, text: &str) -> String {
    format!(
        r#"{{"type":"user","uuid":"{uuid}","timestamp":"2026-11-02T10:00:00.000Z","message":{{"role":"user","content":"{text}"}}}}"#
    ) + "\n"
}

/// A session of `n` lines: users, two-block lines, and metadata lines between.
fn session(n: usize) -> Vec<u8> {
    let mut out = String::new();
    for i in 0..n {
        match i % 4 {
            0 => out += &user(&format!("u{i}"), &format!("prompt {i}")),
            1 => {
                out += &format!(
                    "{}\n",
                    format_args!(
                        r#"{{"type":"assistant","uuid":"a{i}","message":{{"content":[{{"type":"text","text":"one {i}"}},{{"type":"tool_use","id":"t{i}","name":"Bash","input":{{"command":"ls"}}}}]}}}}"#
                    )
                )
            }
            2 => out += r#"{"type":"progress","uuid":"p","data":{}}"#.to_string().as_str(),
            _ => {
                out += &format!(
                    "{}\n",
                    format_args!(
                        r#"{{"type":"user","uuid":"r{i}","message":{{"content":[{{"type":"tool_result","tool_use_id":"t{}","content":"ok"}}]}}}}"#,
                        i - 2
                    )
                )
            }
        }
        if i % 4 == 2 {
            out.push('\n');
        }
    }
    out.into_bytes()
}

fn ids(page: &Page) -> Vec<String> {
    page.records.iter().map(|r| r.id.clone()).collect()
}

#[test]
fn head_since_and_tail_agree() {
    let file = session(400);
    let all = run(&file, Mode::All, 50, true).unwrap();
    assert_eq!(all.records.len(), 400); // 100 users + 200 blocks + 100 results
    assert!(!all.more && !all.older && !all.pending_tail);
    for limit in [1, 3, 7, 50, 200] {
        let mut paged = Vec::new();
        let mut page = run(&file, Mode::Head, limit, true).unwrap();
        loop {
            assert!(page.records.len() <= limit);
            paged.extend(ids(&page));
            if !page.more {
                break;
            }
            page = run(&file, Mode::Since(page.cursor.clone()), limit, true).unwrap();
            assert!(page.older);
        }
        assert_eq!(paged, ids(&all), "limit {limit}");
        let tail = run(&file, Mode::Tail, limit, true).unwrap();
        assert_eq!(
            ids(&tail),
            ids(&all)[all.records.len() - limit..],
            "tail {limit}"
        );
        assert!(tail.older);
        // After a tail page, --since gives nothing until the file grows.
        let next = run(&file, Mode::Since(tail.cursor.clone()), limit, true).unwrap();
        assert!(next.records.is_empty() && !next.reset && !next.more);
    }
}

/// A tail page stops parsing at its oldest line: the same page and cursor as a parse of
/// the whole window, and a malformed line left of the page is never met (no warning for
/// a record the page does not show); `--strict` still parses the window and refuses it.
/// A page is full when it holds `limit` distinct ids: a replayed line does not fill it.
#[test]
fn a_tail_parses_only_the_lines_of_its_page() {
    let file = session(400);
    for limit in [1, 3, 7, 50, 64, 65, 200] {
        let strict = run(&file, Mode::Tail, limit, true).unwrap();
        let lenient = run(&file, Mode::Tail, limit, false).unwrap();
        assert_eq!(ids(&lenient), ids(&strict), "limit {limit}");
        assert_eq!(lenient.cursor, strict.cursor, "limit {limit}");
        assert!(
            lenient.older && lenient.warnings.is_empty(),
            "limit {limit}"
        );
    }
    let mut junk_first = b"{not json\n".to_vec();
    junk_first.extend_from_slice(user("a", "one").as_bytes());
    junk_first.extend_from_slice(user("b", "two").as_bytes());
    let page = run(&junk_first, Mode::Tail, 1, false).unwrap();
    assert_eq!(ids(&page), ["b#0"]);
    assert!(page.warnings.is_empty(), "{:?}", page.warnings);
    assert!(matches!(
        run(&junk_first, Mode::Tail, 1, true),
        Err(PlanError::Malformed { offset: 0, .. })
    ));
    // `b` replayed after itself: two lines, one id; the page of two reaches `a`.
    let mut replayed = user("a", "one").into_bytes();
    replayed.extend_from_slice(user("b", "two").as_bytes());
    replayed.extend_from_slice(user("b", "two").as_bytes());
    let page = run(&replayed, Mode::Tail, 2, false).unwrap();
    assert_eq!(ids(&page), ["a#0", "b#0"]);
    assert!(!page.older);
    // Lines of no record left of a full page: `older` is still only what exists.
    let mut meta_first = r#"{"type":"progress","uuid":"p","data":{}}"#.to_string() + "\n";
    meta_first += &user("a", "one");
    let page = run(meta_first.as_bytes(), Mode::Tail, 1, false).unwrap();
    assert_eq!(ids(&page), ["a#0"]);
    assert!(!page.older);
}

/// What a forward read parses of a chunk, and only that: not the piece before the first
/// `\n` of a chunk that starts mid-file (it may end an earlier chunk's line), nor the
/// unfinished last piece, nor a line over the record bound.
#[test]
fn the_lines_to_parse_ahead_are_the_chunks_whole_lines() {
    let lines = |start, chunk: &[u8]| -> Vec<(u64, Vec<u8>)> {
        lines_to_parse_ahead(start, chunk)
            .into_iter()
            .map(|(at, line)| (at, line.to_vec()))
            .collect()
    };
    assert_eq!(
        lines(0, b"a\nbb\n\nccc"),
        [(0, b"a".to_vec()), (2, b"bb".to_vec()), (5, b"".to_vec())]
    );
    assert_eq!(lines(100, b"a\nbb\nccc"), [(102, b"bb".to_vec())]);
    assert_eq!(lines(100, b"no newline"), []);
    assert_eq!(lines(0, b""), []);
    let mut long = vec![b'x'; MAX_RECORD_BYTES as usize + 1];
    long.extend_from_slice(b"\nz\n");
    assert_eq!(lines(0, &long), [(MAX_RECORD_BYTES + 2, b"z".to_vec())]);
}

/// A line parsed ahead is served at its offset and length instead of being parsed again
/// (an outcome the line would not give shows it was taken), and goes through the plan's
/// rules as any other (here its id repeats the next line's, which is dropped). One given
/// for an offset where no line starts, or at another length, is not used: that line is
/// parsed as usual.
#[test]
fn a_line_parsed_ahead_is_served_in_place_of_parsing_it() {
    let file = [user("a", "one"), user("b", "two"), user("c", "three")].concat();
    let second = user("a", "one").len() as u64;
    let third = second + user("b", "two").len() as u64;
    let notice = |id: &str, text: &str| {
        LineOutcome::Records(vec![synthetic_notice(&ctx(), id.into(), text.into())])
    };
    let request = PageRequest {
        mode: Mode::All,
        limit: 50,
        strict: true,
        redact: false,
    };
    let mut plan = ReadPlan::new(ctx(), request, file.len() as u64);
    assert!(plan.reads_forward());
    assert_eq!(plan.next_read().unwrap()[0].start, 0);
    plan.parsed_ahead(vec![
        (1, 0, notice("x", "no line starts here")),
        (second, third - second - 1, notice("c#0", "b, served")),
        (third, 3, notice("y", "never: the length differs")),
    ]);
    plan.feed(vec![file.as_bytes().to_vec()], file.len() as u64)
        .unwrap();
    let page = plan.finish();
    let shown: Vec<(&str, &str)> = page
        .records
        .iter()
        .map(|r| match &r.body {
            RecordBody::Text { text, .. } => (r.id.as_str(), text.as_str()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(shown, [("a#0", "one"), ("c#0", "b, served")]);
    assert!(page.warnings.is_empty(), "{:?}", page.warnings);
}

#[test]
fn pending_tail_then_completion() {
    let mut file = session(8);
    let head = run(&file, Mode::Head, 200, true).unwrap();
    let line = user("late", "hello");
    let (first, second) = line.as_bytes().split_at(20);
    file.extend_from_slice(first);
    for mode in [Mode::Since(head.cursor.clone()), Mode::Tail, Mode::Head] {
        let page = run(&file, mode, 200, true).unwrap();
        assert!(page.pending_tail);
        assert!(!ids(&page).contains(&"late#0".to_string()));
    }
    let pending = run(&file, Mode::Since(head.cursor.clone()), 200, true).unwrap();
    assert!(pending.records.is_empty());
    file.extend_from_slice(second);
    let done = run(&file, Mode::Since(pending.cursor), 200, true).unwrap();
    assert_eq!(ids(&done), ["late#0"]);
    assert!(!done.pending_tail && !done.reset);
}

#[test]
fn stale_cursors_reset_or_fail_strictly() {
    let file = session(40);
    let page = run(&file, Mode::Head, 10, true).unwrap();
    let Cursor::Lines(line_cursor) = &page.cursor else {
        panic!("line cursor expected")
    };
    let pos = line_cursor.window_end as usize;
    // Same size, bytes before the cursor rewritten.
    let mut rewritten = file.clone();
    let i = rewritten[..pos - 1]
        .iter()
        .rposition(|&b| b == b'1')
        .unwrap();
    rewritten[i] = b'9';
    // Truncated under the cursor.
    let truncated = file[..pos - 5].to_vec();
    // Replaced at the head.
    let mut replaced = file.clone();
    replaced[3] = b'X';
    for changed in [rewritten, truncated, replaced] {
        let reset = run(&changed, Mode::Since(page.cursor.clone()), 10, false).unwrap();
        assert!(reset.reset);
        assert_eq!(reset.records[0].kind(), clankie_model::RecordKind::Notice);
        assert!(reset.records[0].id.starts_with("reset@"));
        assert!(matches!(
            run(&changed, Mode::Since(page.cursor.clone()), 10, true),
            Err(PlanError::Stale { .. })
        ));
    }
}

#[test]
fn torn_line_mid_file_is_a_notice_or_strict_error() {
    let mut file = user("a", "one").into_bytes();
    let torn_at = file.len() as u64;
    file.extend_from_slice(b"{\"type\":\"pr-link\",\"prNu{\"parentUuid\":1}\n");
    file.extend_from_slice(user("b", "two").as_bytes());
    for mode in [Mode::Head, Mode::Tail, Mode::All] {
        let page = run(&file, mode.clone(), 50, false).unwrap();
        assert_eq!(
            ids(&page),
            ["a#0".to_string(), format!("@{torn_at}"), "b#0".to_string()]
        );
        assert_eq!(page.warnings.len(), 1);
        assert!(
            matches!(run(&file, mode, 50, true), Err(PlanError::Malformed { offset, .. }) if offset == torn_at)
        );
    }
}

#[test]
fn oversized_lines_become_notices_across_reads() {
    let big = format!(
        r#"{{"type":"user","uuid":"big","message":{{"content":"{}"}}}}"#,
        "x".repeat(9 * 1024 * 1024 / 2)
    );
    let mut file = user("a", "one").into_bytes();
    let big_at = file.len() as u64;
    file.extend_from_slice(big.as_bytes());
    file.push(b'\n');
    file.extend_from_slice(user("b", "two").as_bytes());
    for mode in [Mode::Head, Mode::Tail, Mode::All] {
        let page = run(&file, mode.clone(), 50, false).unwrap();
        assert_eq!(
            ids(&page),
            ["a#0".to_string(), format!("@{big_at}"), "b#0".to_string()],
            "{mode:?}"
        );
        assert!(matches!(
            run(&file, mode, 50, true),
            Err(PlanError::Oversized { .. })
        ));
    }
    // Paging one record at a time crosses it too.
    let first = run(&file, Mode::Head, 1, false).unwrap();
    let second = run(&file, Mode::Since(first.cursor), 1, false).unwrap();
    assert_eq!(ids(&second), [format!("@{big_at}")]);
    let third = run(&file, Mode::Since(second.cursor), 1, false).unwrap();
    assert_eq!(ids(&third), ["b#0"]);
}

#[test]
fn edge_shapes() {
    // Empty file, a file without any newline, a file of only metadata.
    let empty = run(b"", Mode::Tail, 5, true).unwrap();
    assert!(empty.records.is_empty() && !empty.pending_tail);
    let no_newline = run(b"{\"type\":\"user\"", Mode::Tail, 5, true).unwrap();
    assert!(no_newline.records.is_empty() && no_newline.pending_tail);
    let head = run(b"{\"type\":\"user\"", Mode::Head, 5, true).unwrap();
    assert!(head.pending_tail);
    // A non-empty source that gives no record is never a silent empty page: one notice says
    // so (a format this version does not read looks exactly like it), whichever way it is read.
    let meta = b"{\"type\":\"summary\"}\n{\"type\":\"progress\"}\n";
    let page = run(meta, Mode::Tail, 5, true).unwrap();
    assert!(page.no_records && !page.pending_tail && page.unknown == 0);
    assert_eq!(ids(&page), [format!("empty@{}", meta.len())]);
    assert!(run(meta, Mode::Head, 5, true).unwrap().no_records);
    assert!(run(meta, Mode::All, 5, true).unwrap().no_records);
    assert!(page.strict_check().is_err());
    let next = run(meta, Mode::Since(page.cursor), 5, true).unwrap();
    assert!(!next.reset && next.records.is_empty() && !next.no_records);
    // The empty file is not such a source.
    assert!(!empty.no_records);
}

#[test]
fn a_page_counts_what_its_lines_held_that_was_not_understood() {
    let line = |uuid: &str| {
        format!(
            "{{\"type\":\"user\",\"uuid\":\"{uuid}\",\"message\":{{\"role\":\"user\",\"content\":\"hi {uuid}\"}}}}\n"
        )
    };
    let file = [
        line("a"),
        "{\"type\":\"brand-new-entry\"}\n".to_string(),
        line("b"),
        "{\"type\":\"user\",\"uuid\":\"c\",\"mesage\":{}}\n".to_string(),
        line("d"),
    ]
    .concat();
    let file = file.as_bytes();
    let all = run(file, Mode::All, 5, true).unwrap();
    assert_eq!(ids(&all), ["a#0", "b#0", "d#0"]);
    assert_eq!(all.unknown, 2);
    assert!(all.strict_check().is_err());
    // A tail of the last record counts only its own part of the source.
    let tail = run(file, Mode::Tail, 1, true).unwrap();
    assert_eq!((ids(&tail), tail.unknown), (vec!["d#0".to_string()], 0));
    let tail = run(file, Mode::Tail, 2, true).unwrap();
    assert_eq!(tail.unknown, 1);
    // Paging forward counts each once.
    let first = run(file, Mode::Head, 1, true).unwrap();
    assert_eq!(first.unknown, 0);
    let second = run(file, Mode::Since(first.cursor), 1, true).unwrap();
    assert_eq!((ids(&second), second.unknown), (vec!["b#0".to_string()], 1));
    let third = run(file, Mode::Since(second.cursor), 5, true).unwrap();
    assert_eq!((ids(&third), third.unknown), (vec!["d#0".to_string()], 1));
}

#[test]
fn a_tail_window_sized_for_the_page_is_one_read() {
    let file = session(400);
    let whole = run(&file, Mode::Tail, 20, true).unwrap();
    let size = file.len() as u64;
    let request = PageRequest {
        mode: Mode::Tail,
        limit: 20,
        strict: true,
        redact: false,
    };
    // 20 records of this session are within its last 8 KiB: one read, the same page.
    let plan = ReadPlan::new(ctx(), request.clone(), size).with_tail_window(2048 + 1);
    let first = plan.next_read().unwrap();
    assert_eq!(
        first[1].start,
        size - 4096,
        "clamped to at least HEAD_BYTES"
    );
    let mut plan = ReadPlan::new(ctx(), request.clone(), size).with_tail_window(8192);
    let ranges = plan.next_read().unwrap();
    assert_eq!(
        ranges[1],
        ByteRange::new(size - 8192, 8192 + FIRST_CHUNK_BYTES)
    );
    let chunks = ranges
        .iter()
        .map(|r| file[r.start as usize..r.end().min(size) as usize].to_vec())
        .collect();
    plan.feed(chunks, size).unwrap();
    assert_eq!(plan.next_read(), None, "one read");
    // The page's 20 records are those of the session's last 20 lines (every 4 lines hold
    // 4 records, a metadata line among them): it spans those lines.
    let page_bytes = plan.tail_page_bytes().unwrap();
    let text = String::from_utf8(file.clone()).unwrap();
    let spanned: usize = text.lines().rev().take(20).map(|l| l.len() + 1).sum();
    assert_eq!(page_bytes, spanned as u64);
    let page = plan.finish();
    assert_eq!(ids(&page), ids(&whole));
    assert_eq!(page.cursor, whole.cursor);
    // A window too small for the page (at least HEAD_BYTES, which 100 records are over)
    // widens as the default one does: the same page.
    let whole = run(&file, Mode::Tail, 100, true).unwrap();
    let request = PageRequest {
        limit: 100,
        ..request
    };
    let mut plan = ReadPlan::new(ctx(), request, size).with_tail_window(0);
    let mut reads = 0;
    while let Some(ranges) = plan.next_read() {
        reads += 1;
        let chunks = ranges
            .iter()
            .map(|r| file[r.start.min(size) as usize..r.end().min(size) as usize].to_vec())
            .collect();
        plan.feed(chunks, size).unwrap();
    }
    assert!(reads > 1);
    assert_eq!(ids(&plan.finish()), ids(&whole));
}

#[test]
fn tail_widens_over_large_files() {
    // 3 MiB of metadata after the last records: the tail must widen to find them.
    let mut file = session(20);
    let filler = b"{\"type\":\"progress\",\"data\":{}}\n";
    while file.len() < 3 * 1024 * 1024 {
        file.extend_from_slice(filler);
    }
    let all = run(&file, Mode::All, 50, true).unwrap();
    let tail = run(&file, Mode::Tail, 5, true).unwrap();
    assert_eq!(ids(&tail), ids(&all)[all.records.len() - 5..]);
}

/// Secrets never leave the plan when the request redacts: neither in the records streamed
/// nor in the page, and every mode the same.
#[test]
fn pages_are_redacted_inside_the_plan() {
    let secret = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let line = format!(
        r#"{{"type":"user","uuid":"u1","timestamp":"2026-01-01T00:00:00Z","message":{{"role":"user","content":"token {secret}"}}}}"#
    );
    let file = format!("{line}\n");
    for mode in [Mode::Tail, Mode::Head, Mode::All] {
        for redact in [true, false] {
            let request = PageRequest {
                mode: mode.clone(),
                limit: 10,
                strict: false,
                redact,
            };
            let page = run_request(file.as_bytes(), request).unwrap();
            assert_eq!(page.records.len(), 1, "{mode:?}");
            let RecordBody::Text { text, .. } = &page.records[0].body else {
                panic!("{:?}", page.records[0]);
            };
            assert_eq!(
                text.contains(secret),
                !redact,
                "{mode:?} redact={redact}: {text}"
            );
            assert_eq!(text.contains("[REDACTED:github]"), redact, "{text}");
        }
    }
}

/// A host whose file changes between calls (see [`serve`]).
fn run_moving(
    versions: &[Vec<u8>],
    schedule: &[usize],
    request: PageRequest,
) -> Result<Page, PlanError> {
    serve(versions, schedule, request, 2_000)
}

/// Transcript-like files: real Claude lines, junk, blank and cut lines, in any mix. With
/// `unique_ids` every line has its own uuid; otherwise uuids repeat, as replayed lines do.
fn file_strategy(unique_ids: bool) -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    // `Some(i)`: a prompt line whose uuid is `u{i}`; `None`: these bytes as they are.
    let line = prop_oneof![
        (0u32..1000).prop_map(|i| (Some(i), Vec::new())),
        proptest::collection::vec(any::<u8>(), 0..200).prop_map(|b| (None, b)),
        Just((None, Vec::new())),
        (1usize..70_000).prop_map(|n| (None, vec![b'x'; n])),
    ];
    (proptest::collection::vec(line, 0..40), any::<bool>()).prop_map(move |(lines, cut)| {
        let lines: Vec<Vec<u8>> = lines
            .into_iter()
            .enumerate()
            .map(|(at, (prompt, bytes))| match prompt {
                Some(i) => {
                    let i = if unique_ids { at as u32 } else { i };
                    format!(
                        r#"{{"type":"user","uuid":"u{i}","timestamp":"2026-01-01T00:00:00Z","message":{{"role":"user","content":"prompt {i}"}}}}"#
                    )
                    .into_bytes()
                }
                None => bytes,
            })
            .collect();
        let mut file = lines.join(&b"\n"[..]);
        if !cut && !file.is_empty() {
            file.push(b'\n');
        }
        file
    })
}

// 256 cases each (proptest's default); `PROPTEST_CASES=N` runs more.
proptest::proptest! {
    /// No sequence of sizes and contents makes the planner panic or read for ever: a file
    /// that grows, shrinks or is replaced between reads gives a page or an error.
    #[test]
    fn no_panic_whatever_the_file_does_between_reads(
        versions in proptest::collection::vec(file_strategy(false), 1..4),
        schedule in proptest::collection::vec(0usize..4, 1..12),
        mode in 0u8..3,
        limit in 1usize..8,
        strict in proptest::prelude::any::<bool>(),
    ) {
        let mode = match mode {
            0 => Mode::Tail,
            1 => Mode::Head,
            _ => Mode::All,
        };
        let request = PageRequest { mode, limit, strict, redact: false };
        let page = run_moving(&versions, &schedule, request.clone());
        // A cursor from that page, read against the versions again, must not panic either.
        if let Ok(page) = page {
            let since = PageRequest { mode: Mode::Since(page.cursor), ..request };
            let _ = run_moving(&versions, &schedule, since);
        }
    }

    /// A file that does not change reads the same whichever way: the tail is the end of
    /// what `--all` reads. (With repeated ids each read keeps the first copy it sees, and a
    /// tail sees only the end, so this holds for files whose ids are unique.)
    #[test]
    fn a_still_file_tails_to_the_end_of_all(
        file in file_strategy(true),
        limit in 1usize..8,
    ) {
        let versions = [file];
        let request = |mode| PageRequest { mode, limit, strict: false, redact: false };
        let all = run_moving(&versions, &[0], request(Mode::All)).unwrap();
        let tail = run_moving(&versions, &[0], request(Mode::Tail)).unwrap();
        let all_ids = ids(&all);
        let want = &all_ids[all_ids.len().saturating_sub(limit)..];
        proptest::prop_assert_eq!(ids(&tail), want);
    }
}

/// The shapes that crashed `--tail` before: a file that keeps moving for the retries, then
/// is shorter than where the read started; and one that shrinks between two reads.
#[test]
fn a_file_that_moves_then_shrinks_is_read_or_refused_never_a_crash() {
    let line = |i: usize| {
        format!(r#"{{"type":"user","uuid":"u{i}","message":{{"role":"user","content":"{i}"}}}}"#)
    };
    let sized = |n: usize| {
        let mut f = Vec::new();
        let mut i = 0;
        while f.len() < n {
            f.extend_from_slice(line(i).as_bytes());
            f.push(b'\n');
            i += 1;
        }
        f
    };
    let versions = [
        sized(2_000_000),
        sized(3_000_000),
        sized(4_000_000),
        sized(1000),
    ];
    let request = PageRequest {
        mode: Mode::Tail,
        limit: 5,
        strict: false,
        redact: false,
    };
    let page = run_moving(&versions, &[0, 1, 2, 3, 3, 3, 3, 3], request.clone()).unwrap();
    assert_eq!(page.records.len(), 5);
    // Big, then small while the tail reads leftwards, every time: refused after retries.
    let shrinking = run_moving(&versions, &[2, 3, 2, 3, 2, 3, 2, 3, 2, 3], request);
    assert!(
        matches!(shrinking, Ok(_) | Err(PlanError::Moving { .. })),
        "{shrinking:?}"
    );
}

/// A session whose few user prompts lie among many other records: a filtered page holds
/// `limit` of the records the filter keeps, read further back (tail) or on (head, since)
/// than an unfiltered page would; the cursor continues after the last record examined, and
/// the page counts what it examined and left out.
#[test]
fn a_filtered_page_holds_limit_records_the_filter_keeps() {
    let mut text = String::new();
    let mut prompts = Vec::new();
    for p in 0..8 {
        prompts.push(format!("q{p}#0"));
        text += &user(&format!("q{p}"), &format!("question {p}"));
        for i in 0..2000 {
            text += &format!(
                "{}\n",
                format_args!(
                    r#"{{"type":"assistant","uuid":"a{p}-{i}","message":{{"content":[{{"type":"text","text":"an answer of some length, line {i}"}}]}}}}"#
                )
            );
        }
    }
    let file = text.into_bytes();
    let now = jiff::Timestamp::UNIX_EPOCH.to_zoned_datetime(jiff::tz::TimeZone::UTC);
    let users = RecordFilter::parse(&["user".into()], None, None, None, &now).unwrap();
    let filtered = |mode: Mode, limit: usize| {
        let request = PageRequest {
            mode,
            limit,
            strict: false,
            redact: true,
        };
        let mut plan = ReadPlan::new(ctx(), request, file.len() as u64).with_filter(&users);
        while let Some(ranges) = plan.next_read() {
            let chunks = ranges
                .iter()
                .map(|r| file[r.start as usize..r.end().min(file.len() as u64) as usize].to_vec())
                .collect();
            plan.feed(chunks, file.len() as u64).unwrap();
        }
        plan.finish()
    };

    let tail = filtered(Mode::Tail, 5);
    assert_eq!(ids(&tail), prompts[3..]);
    assert!(tail.older && tail.warnings.is_empty());
    // Examined: from the fourth prompt to the end, its answers left out.
    assert_eq!(tail.filtered, 5 * 2000);
    let unfiltered = run(&file, Mode::Tail, 5, false).unwrap();
    assert_eq!(tail.cursor, unfiltered.cursor);

    let head = filtered(Mode::Head, 5);
    assert_eq!(ids(&head), prompts[..5]);
    assert!(head.more);
    assert_eq!(head.filtered, 4 * 2000);
    let next = filtered(Mode::Since(head.cursor.clone()), 5);
    assert_eq!(ids(&next), prompts[5..]);
    assert!(!next.more && next.older);
    // The fifth prompt's answers on, the last one's included: the cursor is at the end.
    assert_eq!(next.filtered, 4 * 2000);
    assert_eq!(next.cursor, unfiltered.cursor);
    let after = filtered(Mode::Since(next.cursor.clone()), 5);
    assert!(after.records.is_empty() && after.filtered == 0 && !after.reset);

    // A filter that keeps every record pages as no filter does.
    let everything = RecordFilter::parse(&[], None, None, None, &now).unwrap();
    assert!(!everything.is_active());
}

/// A filtered tail that meets the 64 MiB bound before its page is full says so.
#[test]
fn a_filtered_tail_stopped_by_the_bound_says_so() {
    let mut file = user("q0", "the only question").into_bytes();
    // Lines over the record bound are notices, never parsed: 66 MiB of them cost little.
    let long = vec![b'x'; (2 << 20) - 1];
    while (file.len() as u64) < MAX_SOURCE_BYTES + (2 << 20) {
        file.extend_from_slice(&long);
        file.push(b'\n');
    }
    let now = jiff::Timestamp::UNIX_EPOCH.to_zoned_datetime(jiff::tz::TimeZone::UTC);
    let users = RecordFilter::parse(&["user".into()], None, None, None, &now).unwrap();
    let request = PageRequest {
        mode: Mode::Tail,
        limit: 5,
        strict: false,
        redact: false,
    };
    let mut plan = ReadPlan::new(ctx(), request, file.len() as u64).with_filter(&users);
    while let Some(ranges) = plan.next_read() {
        let chunks = ranges
            .iter()
            .map(|r| file[r.start as usize..r.end().min(file.len() as u64) as usize].to_vec())
            .collect();
        plan.feed(chunks, file.len() as u64).unwrap();
    }
    let page = plan.finish();
    assert!(page.records.is_empty() && page.older);
    assert!(page.filtered > 0);
    let said = page.warnings.iter().find(|w| w.contains("64 MiB"));
    assert!(
        said.is_some_and(|w| w.contains("0 of 5")),
        "{:?}",
        page.warnings
    );
}

/// Walks a file backward from its tail page, page by page through the pages' start cursors,
/// and returns the ids read, oldest first; each page holds at most `limit` records.
fn walk_back(file: &[u8], limit: usize) -> Vec<String> {
    let mut page = run(file, Mode::Tail, limit, false).unwrap();
    let mut pages = vec![ids(&page)];
    while page.older {
        let start = page
            .start
            .clone()
            .expect("a page with older records has a start");
        page = run(file, Mode::Before(start), limit, false).unwrap();
        assert!(page.records.len() <= limit && page.more && !page.reset);
        assert!(
            !page.records.is_empty(),
            "a backward page before older records is empty"
        );
        assert_eq!(page.start.as_ref(), Some(&page.cursor));
        pages.push(ids(&page));
    }
    pages.into_iter().rev().flatten().collect()
}

#[test]
fn walking_back_from_the_tail_gives_all_in_order() {
    let file = session(400);
    let all = ids(&run(&file, Mode::All, 50, true).unwrap());
    for limit in [1, 2, 3, 7, 50, 200] {
        assert_eq!(walk_back(&file, limit), all, "limit {limit}");
    }
    // Lines longer than a first read, so a page's line begins reads before it.
    let long: String = (0..30)
        .map(|i| user(&format!("u{i}"), &"word ".repeat(3000 + i * 400)))
        .collect();
    let all = ids(&run(long.as_bytes(), Mode::All, 50, true).unwrap());
    for limit in [1, 3] {
        assert_eq!(walk_back(long.as_bytes(), limit), all, "limit {limit}");
    }
}

/// A forward page's cursor may fall inside a line (its first records returned): the records
/// before it are the page's, and a backward read from its end gives the head page again.
#[test]
fn before_a_forward_cursor_is_the_page_before_it() {
    let file = session(40);
    for limit in [1, 2, 3, 5] {
        let head = run(&file, Mode::Head, limit, true).unwrap();
        let next = run(&file, Mode::Since(head.cursor.clone()), limit, true).unwrap();
        let back = run(&file, Mode::Before(next.cursor.clone()), limit, true).unwrap();
        assert_eq!(ids(&back), ids(&next), "limit {limit}");
        let back = run(&file, Mode::Before(head.cursor.clone()), limit, true).unwrap();
        assert_eq!(ids(&back), ids(&head), "limit {limit}");
        assert!(!back.older);
        // Before the start of the source: nothing, and nothing older.
        let start = back.start.clone().unwrap();
        let none = run(&file, Mode::Before(start), limit, true).unwrap();
        assert!(none.records.is_empty() && !none.older && none.more);
    }
}

/// A backward read checks its cursor as `--since` does: a source rewritten before it, cut
/// short or replaced gives the newest page again with `reset` (and fails under `--strict`).
#[test]
fn a_stale_cursor_reads_back_from_the_end() {
    let file = session(40);
    let tail = run(&file, Mode::Tail, 5, true).unwrap();
    let start = tail.start.clone().unwrap();
    let Cursor::Lines(line_cursor) = &start else {
        panic!("line cursor expected")
    };
    let pos = line_cursor.window_end as usize;
    let mut rewritten = file.clone();
    let i = rewritten[..pos - 1]
        .iter()
        .rposition(|&b| b == b'1')
        .unwrap();
    rewritten[i] = b'9';
    let truncated = file[..pos - 5].to_vec();
    let mut replaced = file.clone();
    replaced[3] = b'X';
    for changed in [rewritten, truncated, replaced] {
        let reset = run(&changed, Mode::Before(start.clone()), 5, false).unwrap();
        assert!(reset.reset);
        assert!(reset.records[0].id.starts_with("reset@"));
        let newest = run(&changed, Mode::Tail, 5, false).unwrap();
        assert_eq!(ids(&reset)[1..], ids(&newest)[..]);
        assert!(matches!(
            run(&changed, Mode::Before(start.clone()), 5, true),
            Err(PlanError::Stale { .. })
        ));
    }
}

proptest::proptest! {
    /// Whatever a still file holds (junk, blank, cut and oversized lines), walking back from
    /// its tail gives what `--all` reads, in order.
    #[test]
    fn walking_back_a_still_file_gives_all(
        file in file_strategy(true),
        limit in 1usize..4,
    ) {
        let all = ids(&run(&file, Mode::All, 50, false).unwrap());
        proptest::prop_assert_eq!(walk_back(&file, limit), all);
    }
}
