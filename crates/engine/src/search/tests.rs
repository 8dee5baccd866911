//! The search unit tests: case rules, the prefilter's JSON forms and where it must stay off,
//! lines across chunks, context groups, redaction before matching.

use super::*;
use crate::test_support::{ctx, harness};

fn matcher(pattern: &str, fixed: bool, case: Case) -> Matcher {
    Matcher::new(pattern, PatternOptions { fixed, case }).unwrap()
}

fn smart(pattern: &str) -> Matcher {
    matcher(pattern, false, Case::Smart)
}

/// A Claude user line with `text` as its JSON string content (already escaped).
fn user_line(uuid: &str, escaped_text: &str) -> String {
    format!(
        r#"{{"type":"user","uuid":"{uuid}","timestamp":"2026-12-01T10:00:00.000Z","message":{{"role":"user","content":"{escaped_text}"}}}}"#
    )
}

fn query(matcher: Matcher) -> Query {
    Query {
        matcher,
        filter: RecordFilter::default(),
        before: 0,
        after: 0,
        max_count: None,
        redact: true,
        count_only: false,
    }
}

/// Feeds `bytes` in chunks of `chunk` bytes; returns what was found.
fn search(query: &Query, bytes: &[u8], chunk: usize) -> Vec<Found> {
    let mut search = SessionSearch::new(ctx(harness("claude")), query);
    let mut out = Vec::new();
    for piece in bytes.chunks(chunk) {
        search.feed(piece, &mut out);
    }
    out
}

/// Found items as `m:id`, `c:id` and `--`.
fn shown(found: &[Found]) -> Vec<String> {
    found
        .iter()
        .map(|f| match f {
            Found::Match { record, .. } => format!("m:{}", record.id),
            Found::Context { record } => format!("c:{}", record.id),
            Found::Break => "--".to_string(),
        })
        .collect()
}

#[test]
fn smart_case_ignores_case_unless_the_pattern_has_an_uppercase_letter() {
    assert!(smart("deploy").is_match("Deploy now"));
    assert!(!smart("Deploy").is_match("deploy now"));
    assert!(smart("Deploy").is_match("Deploy now"));
    // Escapes are not letters.
    assert!(smart(r"\Sdeploy\W").is_match("xDEPLOY!"));
    assert!(!smart("[A-Z]x").is_match("ax"));
    assert!(!matcher("deploy", false, Case::Sensitive).is_match("DEPLOY"));
    assert!(matcher("Deploy", false, Case::Insensitive).is_match("DEPLOY"));
}

#[test]
fn fixed_strings_take_metacharacters_as_they_are() {
    let m = matcher("a.b(c", true, Case::Smart);
    assert!(m.is_match("x a.b(c y"));
    assert!(!m.is_match("aXb(c"));
    assert_eq!(m.spans("a.b(c and a.b(c"), [[0, 5], [10, 15]]);
    let err = Matcher::new("a(", PatternOptions::default()).unwrap_err();
    assert_eq!(err.to_string(), "grep: bad pattern: unclosed group");
}

#[test]
fn the_prefilter_finds_every_json_form_of_a_literal() {
    let m = matcher(r#"say "hi"/ok"#, true, Case::Sensitive);
    assert!(m.has_prefilter());
    assert!(m.line_may_match(br#"{"t":"say \"hi\"/ok"}"#));
    assert!(m.line_may_match(br#"{"t":"say \"hi\"\/ok"}"#));
    // Twice escaped: a tool's arguments as a string in the line (Codex).
    assert!(m.line_may_match(br#"{"arguments":"{\"cmd\":\"say \\\"hi\\\"/ok\"}"}"#));
    assert!(!m.line_may_match(br#"{"t":"say hi/ok"}"#));

    let m = matcher("café\n", true, Case::Sensitive);
    // A newline may be the text's own join: no prefilter.
    assert!(!m.has_prefilter());
    let m = matcher("café", true, Case::Sensitive);
    for line in [
        "{\"t\":\"café\"}",
        r#"{"t":"caf\u00e9"}"#,
        r#"{"t":"caf\u00E9"}"#,
    ] {
        assert!(m.line_may_match(line.as_bytes()), "{line}");
    }
    assert!(!m.line_may_match(br#"{"t":"cafe"}"#));
    // An astral character as a surrogate pair.
    let m = matcher("a😀", true, Case::Sensitive);
    assert!(m.line_may_match(br#"{"t":"a\ud83d\ude00"}"#));
    assert!(m.line_may_match(br#"{"t":"a\uD83D\uDE00"}"#));
}

#[test]
fn regex_literals_prefilter_and_case_insensitive_literals_match_any_case() {
    let m = smart(r"deploy(ed|ing) to \w+");
    assert!(m.has_prefilter());
    assert!(m.line_may_match(b"{\"t\":\"DEPLOYED to prod\"}"));
    assert!(!m.line_may_match(b"{\"t\":\"deploy to prod\"}"));
    // One literal, any case: its rarest byte is scanned for, each candidate compared whole.
    let m = smart("zqx-needle");
    for hit in ["ZQX-NEEDLE", "a zQx-Needle b", "zqx-needlezqx-needle"] {
        assert!(m.line_may_match(hit.as_bytes()), "{hit}");
    }
    for miss in ["zqx needle", "zq", "", "qqqqqqqqqq-needle"] {
        assert!(!m.line_may_match(miss.as_bytes()), "{miss}");
    }
    // No required literal at all.
    assert!(!smart(r"\w+").has_prefilter());
    assert!(!smart("a|.*").has_prefilter());
}

#[test]
fn no_prefilter_where_it_could_miss_a_match() {
    // Only in the redacted text.
    for pattern in [
        "REDACTED:github",
        "redacted",
        "github",
        "D:git",
        r"\[x",
        "x]",
    ] {
        assert!(!smart(pattern).has_prefilter(), "{pattern}");
    }
    // A non-ASCII literal under case folding.
    assert!(!smart("café").has_prefilter());
    assert!(matcher("café", false, Case::Sensitive).has_prefilter());
    // Ordinary words keep it.
    assert!(smart("gitlab-runner").has_prefilter());
}

/// The prefilter's ASCII case folding misses only what Unicode folds onto `k` and `s` (KELVIN
/// SIGN, LONG S), which it looks for apart.
#[test]
fn unicode_case_folding_of_ascii_letters_is_what_the_prefilter_assumes() {
    for letter in 'a'..='z' {
        let hir = regex_syntax::ParserBuilder::new()
            .case_insensitive(true)
            .build()
            .parse(&letter.to_string())
            .unwrap();
        let regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(class)) =
            hir.kind()
        else {
            panic!("{letter}: {hir:?}")
        };
        let folded: Vec<char> = class
            .ranges()
            .iter()
            .flat_map(|r| r.start()..=r.end())
            .filter(|c| !c.is_ascii())
            .collect();
        match letter {
            'k' => assert_eq!(folded, ['\u{212a}']),
            's' => assert_eq!(folded, ['\u{17f}']),
            _ => assert!(folded.is_empty(), "{letter}: {folded:?}"),
        }
    }
    let m = smart("ask");
    assert!(m.line_may_match("{\"t\":\"a\u{17f}k\"}".as_bytes()));
    assert!(m.line_may_match(br#"{"t":"as\u212A"}"#));
    assert!(smart("ask").is_match("a\u{17f}\u{212a}"));
}

#[test]
fn tool_calls_are_searched_by_name_and_input_values() {
    let record = Record {
        id: "c".into(),
        harness: harness("claude"),
        session: "s".into(),
        ts: None,
        agent: None,
        sidechain: false,
        body: RecordBody::ToolCall {
            call_id: "1".into(),
            name: "Bash".into(),
            input: serde_json::json!({"command": "echo \"hi\"", "timeout": 5, "opts": [true, null]}),
            by_user: false,
        },
        model: None,
        usage: None,
    };
    assert_eq!(search_text(&record), "Bash\necho \"hi\"\ntrue\n5");
}

#[test]
fn lines_are_searched_across_chunks_and_only_when_complete() {
    let lines = [
        user_line("a", "nothing here"),
        user_line("b", "the deploy failed"),
        user_line("c", "still nothing"),
        user_line("d", "deploy again"),
    ];
    let mut bytes = lines.join("\n").into_bytes();
    bytes.push(b'\n');
    // A last line still being written is not searched.
    bytes.extend_from_slice(user_line("e", "deploy pending").as_bytes());
    let q = query(smart("deploy"));
    assert!(q.matcher.has_prefilter());
    for chunk in [1, 7, 100, 4096] {
        let found = search(&q, &bytes, chunk);
        assert_eq!(shown(&found), ["m:b#0", "m:d#0"], "chunk {chunk}");
    }
    let Found::Match { text, spans, .. } = &search(&q, &bytes, 50)[0] else {
        panic!()
    };
    assert_eq!(text, "the deploy failed");
    assert_eq!(spans, &[[4, 10]]);
    // The same without a prefilter (context asked for).
    let mut q = query(smart("deploy"));
    q.after = 1;
    assert_eq!(shown(&search(&q, &bytes, 13)), ["m:b#0", "c:c#0", "m:d#0"]);
}

#[test]
fn context_groups_are_separated_by_breaks_and_max_count_stops() {
    let texts = ["x", "hit 1", "x", "x", "x", "x", "hit 2", "hit 3", "x", "x"];
    let lines: String = texts
        .iter()
        .enumerate()
        .map(|(i, t)| user_line(&format!("r{i}"), t) + "\n")
        .collect();
    let mut q = query(smart("hit"));
    q.before = 1;
    q.after = 1;
    assert_eq!(
        shown(&search(&q, lines.as_bytes(), 64)),
        [
            "c:r0#0", "m:r1#0", "c:r2#0", "--", "c:r5#0", "m:r6#0", "m:r7#0", "c:r8#0"
        ]
    );
    q.before = 3;
    q.after = 0;
    assert_eq!(
        shown(&search(&q, lines.as_bytes(), 64)),
        [
            "c:r0#0", "m:r1#0", "--", "c:r3#0", "c:r4#0", "c:r5#0", "m:r6#0", "m:r7#0"
        ]
    );
    // Without context, matches far apart are not separated (rg prints `--` only with context).
    assert_eq!(
        shown(&search(&query(smart("hit")), lines.as_bytes(), 64)),
        ["m:r1#0", "m:r6#0", "m:r7#0"]
    );
    let mut q = query(smart("hit"));
    q.count_only = true;
    let mut session = SessionSearch::new(ctx(harness("claude")), &q);
    let mut out = Vec::new();
    session.feed(lines.as_bytes(), &mut out);
    assert!(out.is_empty(), "counted, not given");
    assert_eq!(session.matches(), 3);
    let mut q = query(smart("hit"));
    q.max_count = Some(2);
    assert_eq!(
        shown(&search(&q, lines.as_bytes(), 64)),
        ["m:r1#0", "m:r6#0"]
    );
    q.after = 2;
    assert_eq!(
        shown(&search(&q, lines.as_bytes(), 64)),
        [
            "m:r1#0", "c:r2#0", "c:r3#0", "--", "m:r6#0", "c:r7#0", "c:r8#0"
        ]
    );
}

#[test]
fn secrets_are_redacted_before_matching() {
    let secret = format!("ghp_{}", "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5");
    let bytes = format!(
        "{}\n{}\n",
        user_line("a", &format!("token {secret} here")),
        user_line("b", "no secret")
    );
    let q = query(matcher(&secret, true, Case::Sensitive));
    assert!(search(&q, bytes.as_bytes(), 4096).is_empty());
    let q = query(smart("REDACTED:github"));
    let found = search(&q, bytes.as_bytes(), 4096);
    assert_eq!(shown(&found), ["m:a#0"]);
    let Found::Match { text, .. } = &found[0] else {
        panic!()
    };
    assert!(!text.contains("ghp_"), "{text}");
    // A word that only the replacement holds is found too.
    assert_eq!(
        shown(&search(&query(smart("github")), bytes.as_bytes(), 4096)),
        ["m:a#0"]
    );
}

#[test]
fn repeated_ids_give_their_first_record_and_bad_lines_their_notice() {
    let bytes = format!(
        "{}\n{}\nnot json deploy\n",
        user_line("a", "deploy one"),
        user_line("a", "deploy two"),
    );
    let found = search(&query(smart("deploy")), bytes.as_bytes(), 4096);
    assert_eq!(shown(&found), ["m:a#0"]);
    // The words of a notice the reader writes are not in the line: no prefilter for them.
    let q = query(smart("malformed record"));
    assert!(!q.matcher.has_prefilter());
    assert!(!smart("compacted").has_prefilter());
    let bad_at = bytes.find("not json").unwrap();
    assert_eq!(
        shown(&search(&q, bytes.as_bytes(), 4096)),
        [format!("m:@{bad_at}")]
    );
}
