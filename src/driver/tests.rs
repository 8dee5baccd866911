//! The driver's tests: paging, reading to the end, listing, resolving and reads done ahead,
//! against a [`MemoryHost`](clankie_host::memory::MemoryHost).

use super::prefetch::Prefetched;
use super::testing::{SHORT, all_ids, block_on, claude_path, dropped, prompts, resolve};
use super::*;
use clankie_engine::plan::ReadPlan;
use clankie_engine::resolve::SessionQuery;
use clankie_host::memory::MemoryHost;
use clankie_model::limits::MAX_LIMIT;

const ID: &str = "55604662-cf2a-4331-851a-ec234028f8ca";

/// Work spread over the cores comes back whole and in the items' order, whatever the
/// number of items (none, fewer than a thread takes, not a multiple of the parts), and it
/// runs on more than one thread where there are several cores and enough items: the item
/// 0 waits (5 s at most) until another thread has done an item.
#[test]
fn work_on_every_core_comes_back_in_order() {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    for n in [0, 1, 255, 256, 513, 10_001] {
        let items: Vec<usize> = (0..n).collect();
        let spread = n >= 512 && cores > 1;
        let seen = std::sync::Mutex::new(std::collections::HashSet::new());
        let done = on_every_core(items, |k| {
            let here = std::thread::current().id();
            seen.lock().unwrap().insert(here);
            let waited = std::time::Instant::now();
            while k == 0
                && spread
                && seen.lock().unwrap().len() < 2
                && waited.elapsed() < std::time::Duration::from_secs(5)
            {
                std::thread::yield_now();
            }
            (k * 3, here)
        });
        let values: Vec<usize> = done.iter().map(|(v, _)| *v).collect();
        assert_eq!(values, (0..n).map(|k| k * 3).collect::<Vec<_>>(), "{n}");
        let threads: std::collections::HashSet<_> = done.iter().map(|(_, t)| *t).collect();
        assert_eq!(
            threads.len() > 1,
            spread,
            "{n} items on {} threads",
            threads.len()
        );
    }
}

/// A tail page in hand (read ahead) is the page a read of the host gives, cursor and all;
/// one not in hand is not taken, and one whose file moved on wants the host.
#[test]
fn a_tail_page_in_hand_is_the_page_the_host_gives() {
    let host = long_session();
    let reader = Reader::new(&host);
    let session = block_on(resolve(&host, ID));
    let request = PageRequest {
        mode: Mode::Tail,
        limit: 1,
        strict: false,
        redact: true,
    };
    let from_host = block_on(reader.read_page(&session, request.clone(), |_| {})).unwrap();
    assert!(reader.take_in_hand(&session, &request).is_none());
    block_on(reader.prefetch_first_reads(&[(&session, request.clone())])).unwrap();
    let hand = reader.take_in_hand(&session, &request).expect("read ahead");
    let page = hand.page().expect("all in hand").unwrap();
    assert_eq!(page.records, from_host.records);
    assert_eq!(page.cursor, from_host.cursor);
    assert!(
        reader.take_in_hand(&session, &request).is_none(),
        "served once"
    );
    let head = PageRequest {
        mode: Mode::Head,
        ..request.clone()
    };
    block_on(reader.prefetch_first_reads(&[(&session, head.clone())])).unwrap();
    assert!(reader.take_in_hand(&session, &head).is_none(), "tails only");
    // The file grew after it was listed and before it was read ahead: nothing in hand
    // gives its page (the read ahead is dropped, or its plan wants the host).
    host.append(claude_path(&host, ID), prompts(3));
    block_on(reader.prefetch_first_reads(&[(&session, request.clone())])).unwrap();
    let hand = reader.take_in_hand(&session, &request);
    assert!(hand.is_none_or(|hand| hand.page().is_none()));
}

/// A file the listing read whole is a tail page in hand, the page the host gives; at
/// another size than it was listed at it is not (and is not kept for a later page).
#[test]
fn a_file_read_whole_with_the_listing_is_a_tail_page_in_hand() {
    let host = long_session();
    let reader = Reader::new(&host);
    let session = block_on(resolve(&host, ID));
    let request = PageRequest {
        mode: Mode::Tail,
        limit: 1,
        strict: false,
        redact: true,
    };
    let from_host = block_on(reader.read_page(&session, request.clone(), |_| {})).unwrap();
    let file = file_ref(&session.entry);
    let bytes = fs_bytes(&host, &session);
    let read_whole = |size: u64| {
        let result = clankie_model::ReadResult {
            size,
            chunks: vec![bytes.clone()],
        };
        let key = (file.root.clone(), file.rel.clone());
        reader
            .whole
            .lock()
            .unwrap()
            .insert(key, (file.clone(), result));
    };
    read_whole(session.entry.size);
    let page = reader
        .take_in_hand(&session, &request)
        .expect("read whole")
        .page()
        .expect("all in hand")
        .unwrap();
    assert_eq!(page.records, from_host.records);
    assert_eq!(page.cursor, from_host.cursor);
    assert!(reader.whole.lock().unwrap().is_empty(), "taken");
    read_whole(session.entry.size + 1);
    assert!(reader.take_in_hand(&session, &request).is_none());
    assert!(reader.whole.lock().unwrap().is_empty(), "dropped");
}

/// The bytes of a session's file on a memory host.
fn fs_bytes(host: &MemoryHost, session: &SessionFile) -> Vec<u8> {
    let file = file_ref(&session.entry);
    let range = [ByteRange::new(0, session.entry.size)];
    block_on(host.read(&file, &range)).unwrap().chunks.concat()
}

/// [`SHORT`] (10 records) and 450 prompts after it.
fn long_session() -> MemoryHost {
    let host = MemoryHost::new("mem");
    host.put(
        claude_path(&host, ID),
        [SHORT.to_string(), prompts(450)].concat(),
    );
    host
}

fn request(mode: Mode, limit: usize) -> PageRequest {
    PageRequest {
        mode,
        limit,
        strict: false,
        redact: true,
    }
}

/// `--all` reads the next chunk while it parses this one (`read_page`'s read ahead), and
/// parses each chunk's lines on every core before the plan takes them: it gives exactly
/// the records, redacted alike, that a plan fed one read after the other gives (chunks of
/// 4 MiB, thousands of lines: two threads on a machine of two cores or more). On a session of several chunks made of every Claude
/// fixture's lines (each copy under ids of its own), with secrets in texts, tool inputs
/// and outputs, and on each fixture alone.
#[test]
fn all_streams_the_records_of_a_plan_fed_in_turn() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/claude/projects/-fixtures"
    );
    let mut fixtures: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    fixtures.sort();
    let secrets = [
        r#"{"type":"user","uuid":"sU","timestamp":"2026-11-02T10:00:00.000Z","message":{"role":"user","content":"export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx0123 and PASSWORD=hunter2 \"quoted\" \u001b[31m"}}"#,
        r#"{"type":"assistant","uuid":"sA","timestamp":"2026-11-02T10:00:00.000Z","message":{"model":"m","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"curl -H 'Authorization: Bearer abc.def.ghi' https://u:p4ss@x.io","api_key":"AKIAIOSFODNN7EXAMPLE"}}]}}"#,
        r#"{"type":"user","uuid":"sR","timestamp":"2026-11-02T10:00:00.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"GITHUB_TOKEN=ghp_aB3dE5fG7haB3dE5fG7haB3dE5fG7haB3dE5\nok"}]}}"#,
    ];
    let mut big = String::new();
    let mut copy = 0;
    while big.len() < 6 << 20 {
        copy += 1;
        for line in fixtures.iter().flat_map(|f| f.lines()).chain(secrets) {
            // A read keeps the first record of an id: each copy's ids are its own.
            big.push_str(&line.replace("\"uuid\":\"", &format!("\"uuid\":\"{copy}-")));
            big.push('\n');
        }
    }
    let mut sessions = vec![big];
    sessions.extend(fixtures);
    for (n, text) in sessions.into_iter().enumerate() {
        block_on(async {
            let host = MemoryHost::new("mem");
            host.put(claude_path(&host, ID), text.clone());
            let session = resolve(&host, "556046").await;
            let request = request(Mode::All, MAX_LIMIT);
            let mut streamed = Vec::new();
            let page = Reader::new(&host)
                .read_page(&session, request.clone(), |records| {
                    streamed.extend(records)
                })
                .await
                .unwrap();
            streamed.extend(page.records);

            let ctx = source_ctx(host.name(), &session);
            let mut plan = ReadPlan::new(ctx, request, text.len() as u64);
            let mut serial = Vec::new();
            let mut reads = 0;
            while let Some(ranges) = plan.next_read() {
                let file = FileRef {
                    harness: session.harness(),
                    root: session.entry.root.to_vec(),
                    rel: session.entry.rel.clone(),
                };
                let result = host.read(&file, &ranges).await.unwrap();
                plan.feed(result.chunks, result.size).unwrap();
                serial.extend(plan.take_records());
                reads += 1;
            }
            serial.extend(plan.finish().records);
            assert_eq!(streamed, serial, "session {n}");
            if n == 0 {
                assert!(reads >= 4, "{reads} reads");
                let text: String = serial.iter().map(|r| format!("{r:?}")).collect();
                assert!(text.contains("[REDACTED:openai]"), "secrets redacted");
                assert!(!text.contains("hunter2") && !text.contains("AKIAIOSFODNN7EXAMPLE"));
            }
        });
    }
}

/// `--all` that fails halfway (a malformed line under `--strict`, in its fourth chunk)
/// has streamed every record before the failure, redacted, as a plan fed one read after
/// the other does: the chunk whose redaction was still under way when the next chunk
/// failed is not lost.
/// A session of the 20,000 lines `line` makes, over 2 MiB: `--all` reads it in several
/// chunks, and parses most of them ahead.
fn twenty_thousand_lines(line: impl Fn(usize) -> String) -> String {
    let text: String = (0..20_000).map(|n| line(n) + "\n").collect();
    assert!(text.len() > 2 << 20);
    text
}

/// `with_streamed_batches_unredacted`: `read_page`'s streamed batches come unredacted (the
/// caller redacts them), `read_to_end` still hands on redacted pages, and without the
/// setting the batches are redacted.
#[test]
fn streamed_batches_unredacted_only_where_the_caller_redacts_them() {
    let key = "ghp_aB3dE5fG7haB3dE5fG7haB3dE5fG7haB3dE5fG7h";
    let text = twenty_thousand_lines(|n| {
        format!(
            r#"{{"type":"user","uuid":"s{n}","timestamp":"2026-11-02T10:00:00.000Z","message":{{"role":"user","content":"prompt {n} GITHUB_TOKEN={key}"}}}}"#
        )
    });
    block_on(async {
        let host = MemoryHost::new("mem");
        host.put(claude_path(&host, ID), text.clone());
        let session = resolve(&host, "556046").await;
        let texts = |records: &[Record]| format!("{records:?}");
        for caller_redacts in [false, true] {
            let mut reader = Reader::new(&host);
            if caller_redacts {
                reader = reader.with_streamed_batches_unredacted();
            }
            let mut streamed = Vec::new();
            let page = reader
                .read_page(&session, request(Mode::All, MAX_LIMIT), |records| {
                    streamed.extend(records)
                })
                .await
                .unwrap();
            assert_eq!(streamed.len() + page.records.len(), 20_000);
            assert_eq!(texts(&streamed).contains(key), caller_redacts);
            assert!(!texts(&page.records).contains(key));
            let mut collected = Vec::new();
            reader
                .read_to_end(&session, request(Mode::All, MAX_LIMIT), |page| {
                    collected.append(&mut page.records);
                    Ok::<(), DriverError>(())
                })
                .await
                .unwrap();
            assert_eq!(collected.len(), 20_000);
            assert!(!texts(&collected).contains(key));
        }
    });
}

/// `--all`'s tool results, kept as their JSON token by the parse, stay tokens for a caller
/// that writes JSON and are unescaped on the parsing threads for any other; the texts are
/// the same either way.
#[test]
fn streamed_texts_stay_json_tokens_only_for_a_caller_that_writes_json() {
    let text = twenty_thousand_lines(|n| {
        format!(
            r#"{{"type":"user","uuid":"r{n}","timestamp":"2026-11-02T10:00:00.000Z","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t{n}","content":"line {n}\n\"quoted\""}}]}}}}"#
        )
    });
    block_on(async {
        let host = MemoryHost::new("mem");
        host.put(claude_path(&host, ID), text.clone());
        let session = resolve(&host, "556046").await;
        let mut outputs = Vec::new();
        for as_tokens in [false, true] {
            let mut reader = Reader::new(&host);
            if as_tokens {
                reader = reader.with_texts_as_json_tokens();
            }
            let mut streamed = Vec::new();
            reader
                .read_page(&session, request(Mode::All, MAX_LIMIT), |records| {
                    streamed.extend(records)
                })
                .await
                .unwrap();
            let tokens = streamed
                .iter()
                .filter(|r| match &r.body {
                    clankie_model::RecordBody::ToolResult { output, .. } => {
                        output.json_token().is_some()
                    }
                    _ => false,
                })
                .count();
            // Nearly every line is parsed ahead; the plan parses the few left (the line a
            // chunk starts inside), which keep their token either way.
            match as_tokens {
                true => assert!(tokens > 19_000, "{tokens}"),
                false => assert!(tokens < 20, "{tokens}"),
            }
            assert_eq!(streamed.len(), 20_000);
            outputs.push(streamed);
        }
        assert_eq!(outputs[0], outputs[1]);
        assert!(
            matches!(&outputs[0][7].body, clankie_model::RecordBody::ToolResult { output, .. } if output == "line 7\n\"quoted\"")
        );
    });
}

#[test]
fn all_that_fails_halfway_streams_the_records_before_the_failure() {
    let secret = r#"{"type":"user","uuid":"sN","timestamp":"2026-11-02T10:00:00.000Z","message":{"role":"user","content":"GITHUB_TOKEN=ghp_aB3dE5fG7haB3dE5fG7haB3dE5fG7haB3dE5fG7h"}}"#;
    let plain = r#"{"type":"user","uuid":"sN","timestamp":"2026-11-02T10:00:00.000Z","message":{"role":"user","content":"a prompt with nothing secret in it, long enough to fill the chunks quickly"}}"#;
    let mut text = String::new();
    let (mut n, mut broken) = (0, false);
    while text.len() < 3 << 20 {
        if text.len() > 2 << 20 && !broken {
            text.push_str("{broken\n");
            broken = true;
        }
        n += 1;
        let line = if n % 50 == 0 { secret } else { plain };
        text.push_str(&line.replace("\"sN\"", &format!("\"s{n}\"")));
        text.push('\n');
    }
    block_on(async {
        let host = MemoryHost::new("mem");
        host.put(claude_path(&host, ID), text.clone());
        let session = resolve(&host, "556046").await;
        let request = PageRequest {
            strict: true,
            ..request(Mode::All, MAX_LIMIT)
        };
        let mut streamed = Vec::new();
        let result = Reader::new(&host)
            .read_page(&session, request.clone(), |records| {
                streamed.extend(records)
            })
            .await;
        assert!(
            matches!(result, Err(DriverError::Plan { .. })),
            "{result:?}"
        );

        let ctx = source_ctx(host.name(), &session);
        let mut plan = ReadPlan::new(ctx, request, text.len() as u64);
        let mut serial = Vec::new();
        let mut reads = 0;
        while let Some(ranges) = plan.next_read() {
            let file = FileRef {
                harness: session.harness(),
                root: session.entry.root.to_vec(),
                rel: session.entry.rel.clone(),
            };
            let result = host.read(&file, &ranges).await.unwrap();
            reads += 1;
            if plan.feed(result.chunks, result.size).is_err() {
                break;
            }
            serial.extend(plan.take_records());
        }
        assert_eq!(reads, 4);
        assert!(serial.len() > 1000, "{}", serial.len());
        assert_eq!(streamed, serial);
        let shown: String = streamed.iter().map(|r| format!("{r:?}")).collect();
        assert!(shown.contains("[REDACTED:") && !shown.contains("ghp_aB3"));
    });
}

#[test]
fn read_to_end_pages_until_no_record_follows() {
    block_on(async {
        let host = long_session();
        let session = resolve(&host, "556046").await;
        let mut pages = Vec::new();
        let mut ids = Vec::new();
        let cursor = Reader::new(&host)
            .read_to_end(&session, request(Mode::Head, 50), |page| {
                pages.push((page.records.len(), page.more));
                ids.extend(page.records.iter().map(|r| r.id.clone()));
                Ok::<(), DriverError>(())
            })
            .await
            .unwrap();
        // The first page as asked, then pages of MAX_LIMIT.
        assert_eq!(pages, [(50, true), (200, true), (200, true), (10, false)]);
        assert_eq!(ids, all_ids(&host, &session).await);
        let rest = Reader::new(&host)
            .read_page(&session, request(Mode::Since(cursor), 50), |_| {})
            .await
            .unwrap();
        assert!(rest.records.is_empty() && !rest.more);
    });
}

#[test]
fn read_to_end_hands_on_the_records_all_streams() {
    block_on(async {
        let host = long_session();
        let session = resolve(&host, ID).await;
        let mut ids = Vec::new();
        Reader::new(&host)
            .read_to_end(&session, request(Mode::All, 1), |page| {
                ids.extend(page.records.iter().map(|r| r.id.clone()));
                Ok::<(), DriverError>(())
            })
            .await
            .unwrap();
        assert_eq!(ids.len(), 460);
        assert_eq!(ids, all_ids(&host, &session).await);
    });
}

#[test]
fn read_to_end_stops_at_an_error() {
    block_on(async {
        let host = long_session();
        let session = resolve(&host, ID).await;
        let mut pages = 0;
        let result = Reader::new(&host)
            .read_to_end(&session, request(Mode::Head, 50), |_| {
                pages += 1;
                Err(DriverError::Source {
                    path: "p".into(),
                    reason: "stop here".into(),
                })
            })
            .await;
        assert!(matches!(result, Err(DriverError::Source { .. })));
        assert_eq!(pages, 1);

        host.fail_next(1, dropped(&host));
        let result = Reader::new(&host)
            .read_to_end(&session, request(Mode::Head, 50), |_| {
                Ok::<(), DriverError>(())
            })
            .await;
        assert!(matches!(
            result,
            Err(DriverError::Host(HostError::Unreachable { .. }))
        ));
    });
}

#[test]
fn names_that_are_not_utf8_are_left_out_with_one_line_per_directory() {
    block_on(async {
        let host = long_session();
        let projects = {
            let mut p = host.default_root(clankie_engine::harness::by_name("claude").unwrap());
            p.extend_from_slice(b"/projects/");
            p
        };
        for rel in [
            &b"-caf\xe9/0dd00000-0000-4000-8000-000000000001.jsonl"[..],
            b"-caf\xe9/0dd00000-0000-4000-8000-000000000002.jsonl",
            b"-ok/bad\xff.jsonl",
        ] {
            host.put([&projects[..], rel].concat(), SHORT);
        }
        let (listing, sessions) = Reader::new(&host)
            .list_sessions(&roots_for(&[], None))
            .await
            .unwrap();
        assert_eq!(sessions.len(), 1);
        assert_eq!(sessions[0].id, ID);
        let lines: Vec<String> = listing
            .unreadable
            .iter()
            .map(|l| l.message.clone())
            .collect();
        let shown = String::from_utf8_lossy(&projects).into_owned();
        assert_eq!(
            lines,
            [
                format!(
                    "{shown}-caf\u{fffd}: directory name is not UTF-8; its sessions are left out"
                ),
                format!("{shown}-ok: a file name here is not UTF-8; its session is left out"),
            ]
        );
        assert_eq!(
            listing.unreadable[0].path,
            [&projects[..], b"-caf\xe9"].concat()
        );
    });
}

#[test]
fn files_named_inside_are_read_to_list_them_and_only_when_they_could_be_asked_for() {
    block_on(async {
        let host = long_session();
        let mut agent = host.default_root(super::testing::named("claude"));
        agent.extend_from_slice(b"/projects/-p/agent-5e6f7a8.jsonl");
        host.put(
            &agent,
            format!(
                "{{\"isSidechain\":true,\"sessionId\":\"{ID}\",\"agentId\":\"5e6f7a8\",\"type\":\"user\",\"message\":{{\"content\":\"go\"}},\"uuid\":\"u\"}}\n"
            ),
        );
        let roots = roots_for(&[], None);
        let reader = Reader::new(&host);
        let (_, sessions) = reader.list_sessions(&roots).await.unwrap();
        let ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, [ID.to_string(), format!("{ID}+agent-5e6f7a8")]);
        assert_eq!(host.calls().read, 1, "one read of the agent file's start");
        // A parent's id cannot name a subagent: its file is not read to resolve it.
        let before = host.calls().read;
        resolve(&host, "556046").await;
        assert_eq!(host.calls().read, before);
        let sub = resolve(&host, &format!("{ID}+agent-5e")).await;
        assert_eq!(sub.agent.as_deref(), Some("5e6f7a8"));
        assert_eq!(host.calls().read, before + 1);
    });
}

#[test]
fn sessions_resolve_from_the_listing() {
    block_on(async {
        let host = long_session();
        let roots = roots_for(&[], None);
        let (listing, sessions) = Reader::new(&host).list_sessions(&roots).await.unwrap();
        assert_eq!(listing.roots.len(), roots.len());
        assert_eq!(sessions.len(), 1);
        assert_eq!(sessions[0].id, ID);
        let missing = SessionQuery::parse("claude/0000000").unwrap();
        let err = Reader::new(&host)
            .resolve_session(&roots, &missing)
            .await
            .unwrap_err();
        assert!(matches!(err, DriverError::NotFound { .. }), "{err}");
        host.fail_next(1, dropped(&host));
        let err = Reader::new(&host)
            .resolve_session(&roots, &missing)
            .await
            .unwrap_err();
        assert!(
            matches!(err, DriverError::Host(HostError::Unreachable { .. })),
            "{err}"
        );
    });
}

/// A read resolved and started in one call pages exactly as one resolved from the whole
/// listing, and its first read is the one done with the resolution.
#[test]
fn resolving_for_a_read_reads_its_first_range_once_and_pages_alike() {
    block_on(async {
        let host = long_session();
        let other = "55604662-cf2a-4331-851a-ec234028f8cb";
        host.put(claude_path(&host, other), SHORT);
        let roots = roots_for(&[], None);
        let session = resolve(&host, ID).await;
        let tail = request(Mode::Tail, 20);
        let expected = Reader::new(&host)
            .read_page(&session, tail.clone(), |_| {})
            .await
            .unwrap();
        let cursor = expected.cursor.clone();
        for (id, mode) in [
            (ID, Mode::Tail),
            (ID, Mode::Head),
            (ID, Mode::Since(cursor.clone())),
            // Two sessions share this prefix: the whole listing decides (ambiguous).
            ("55604662", Mode::Tail),
        ] {
            let before = host.calls();
            let reader = Reader::new(&host);
            let query = SessionQuery::parse(id).unwrap();
            let req = request(mode.clone(), 20);
            let found = reader.resolve_for_read(&roots, &query, &req).await;
            if id != ID {
                assert!(matches!(found, Err(DriverError::Resolve(_))), "{found:?}");
                continue;
            }
            let found = found.unwrap();
            assert_eq!(found, session);
            let page = reader.read_page(&found, req.clone(), |_| {}).await.unwrap();
            let plain = Reader::new(&host)
                .read_page(&session, req, |_| {})
                .await
                .unwrap();
            assert_eq!(page.records, plain.records, "{mode:?}");
            assert_eq!(page.cursor, plain.cursor, "{mode:?}");
            let after = host.calls();
            assert_eq!(after.list - before.list, 1, "{mode:?}");
            // The page's first read was the resolution's; a tail of 20 needs no more.
            if matches!(mode, Mode::Tail) {
                assert_eq!(
                    after.read - before.read,
                    1 + 1,
                    "{mode:?}: one ahead, one for the plain page"
                );
            }
        }
    });
}

/// A read kept with each file's bytes once is served as the host would answer it: each
/// range its part, the file twice for a head and a tail that are both all of it.
#[test]
fn reads_kept_once_are_served_range_by_range() {
    let file = FileRef {
        harness: super::testing::named("claude"),
        root: b"/r".to_vec(),
        rel: b"a.jsonl".to_vec(),
    };
    let bytes = b"0123456789".to_vec();
    let r = |start, len| ByteRange::new(start, len);
    // Read whole with the listing: a head, the whole file twice, a tail, past the end.
    let read = Prefetched {
        file: file.clone(),
        ranges: vec![r(0, 4), r(0, 10), r(0, 10), r(6, 4), r(10, 0)],
        size: 10,
        data: vec![bytes.clone()],
        parts: vec![(0, 0..4), (0, 0..10), (0, 0..10), (0, 6..10), (0, 10..10)],
    };
    assert!(read.answers(&file, &[r(0, 4), r(0, 64), r(0, 64), r(6, 64), r(10, 64)]));
    assert!(!read.answers(&file, &[r(0, 4)]));
    let got = read.into_result();
    assert_eq!(got.size, 10);
    let want: Vec<Vec<u8>> = vec![
        b"0123".to_vec(),
        bytes.clone(),
        bytes.clone(),
        b"6789".to_vec(),
        Vec::new(),
    ];
    assert_eq!(got.chunks, want);
    // Batched: two ranges asked once, answered by one chunk; a chunk the reply left out
    // answers nothing.
    let read = Prefetched {
        file: file.clone(),
        ranges: vec![r(0, 10), r(0, 10), r(20, 5)],
        size: 10,
        data: vec![bytes.clone()],
        parts: vec![(0, 0..10), (0, 0..10), (1, 0..0)],
    };
    assert_eq!(
        read.into_result().chunks,
        vec![bytes.clone(), bytes.clone(), Vec::new()]
    );
    // As the host returned it: the same result, nothing copied.
    let result = clankie_model::ReadResult {
        size: 10,
        chunks: vec![b"0123".to_vec(), b"789".to_vec()],
    };
    let read = Prefetched::of_read(file, vec![r(0, 4), r(7, 3)], result.clone());
    assert_eq!(read.into_result(), result);
}

/// A read kept ahead is served once, to the first read of a page of its file; a later
/// page of the same file reads afresh (a follow sees what was written since).
#[test]
fn reads_done_ahead_serve_one_page_and_never_a_later_one() {
    block_on(async {
        let host = long_session();
        let session = resolve(&host, ID).await;
        let reader = Reader::new(&host);
        let tail = request(Mode::Tail, 1);
        reader
            .prefetch_first_reads(&[(&session, tail.clone())])
            .await
            .unwrap();
        let before = host.calls().read;
        let first = reader
            .read_page(&session, tail.clone(), |_| {})
            .await
            .unwrap();
        assert_eq!(host.calls().read, before, "served from the read done ahead");
        host.append(claude_path(&host, ID), prompts(1));
        let again = reader.read_page(&session, tail, |_| {}).await.unwrap();
        assert!(host.calls().read > before);
        assert_ne!(first.records, again.records);
    });
}
