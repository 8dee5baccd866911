//! Search (`clankie-read grep`): the matcher built from a pattern and its options, the text of a
//! record that is searched ([`search_text`]), the prefilter that finds the lines worth parsing
//! in a transcript's raw bytes, and [`SessionSearch`], which turns a session's bytes (or
//! records) into matches and context records. Pure: bytes and records in, [`Found`] out; the
//! driver reads the bytes.
//!
//! The prefilter. A match is a match of the pattern in a record's text, after redaction; a
//! line is parsed only when its raw bytes hold one of the pattern's required literals (its
//! prefixes or suffixes, as `regex-syntax` extracts them), in any of the forms JSON may give
//! them: escaped once (`\"`, `\\`, `\/`, `\n`, `\u00e9` in either hex case, `\u003c` for
//! `<>&`) or twice (Codex writes a tool's arguments as a JSON string inside the line). There
//! is no prefilter when it could miss a match: a literal that redaction can produce (it holds
//! `[` or `]`, or lies inside some `[REDACTED:rule]`), a literal holding a newline (the text
//! joins a tool's name and input values with newlines), a non-ASCII literal under
//! case-insensitive matching, when context records are asked for (they must be parsed), and
//! for harnesses whose lines upsert records by id (an earlier line decides a record).
//! Words the parsers write themselves (a notice's `conversation compacted`) are not in the
//! lines: a literal inside them gets no prefilter either (`PARSER_WORDS`). A literal that
//! only straddles such words and the line's own text can still be missed.

use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};

use clankie_model::limits::MAX_RECORD_BYTES;
use clankie_model::{Record, RecordBody};
use regex::{Regex, RegexBuilder};
use regex_syntax::ast::{Ast, ClassSet, ClassSetItem};
use regex_syntax::hir::Hir;
use regex_syntax::hir::literal::{ExtractKind, Extractor, Seq};
use serde_json::Value;

use crate::SourceCtx;
use crate::filter::RecordFilter;
use crate::harness::parse_line;
use crate::lines::{LineOutcome, malformed_notice, oversized_notice};
use crate::redact;

/// Why a pattern cannot be searched for; the message is the one line the user reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    #[error("grep: bad pattern: {reason}")]
    Pattern { reason: String },
}

/// How letters' case is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Case {
    /// `-s`: exactly.
    Sensitive,
    /// `-i`: ignoring case.
    Insensitive,
    /// The default, as ripgrep's smart case: ignoring case unless the pattern has an
    /// uppercase letter.
    #[default]
    Smart,
}

/// The options a pattern is compiled with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PatternOptions {
    /// `-F`: the pattern is a fixed string, not a regex.
    pub fixed: bool,
    pub case: Case,
}

/// The fixed words of the notices and labels the line parsers write themselves (`harness/*.rs`,
/// `lines.rs`): a literal inside one of them may be in a record's text without being in its
/// line, so it gets no prefilter. A new notice wording belongs here too (a test of each
/// harness's notices would catch a miss: `grep` finds exactly what `read` shows).
const PARSER_WORDS: &[&str] = &[
    "forked from session ",
    "subagent of session ",
    ": the records that follow begin with a copy of its history",
    "conversation compacted",
    "context compacted",
    " tokens before)",
    "; summary:\n",
    "local command output: ",
    "local command: ",
    "API error ",
    " (retry ",
    "stop hook errors: ",
    "system event `",
    "monitor event: ",
    "task notification: ",
    "unsupported assistant block `",
    "unsupported user block `",
    "turn aborted",
    "thread rolled back by ",
    " turns",
    "entered review mode",
    "exited review mode",
    "previous turn interrupted (",
    "assistant stopped: ",
    "branch summary: ",
    "refusal: ",
    "retry ",
    "rewound: messages from ",
    " on were removed",
    "tool did not finish (status `",
    "error: ",
    "malformed record at byte ",
    " bytes) skipped: ",
    "malformed row ",
    " skipped: ",
    "record at byte ",
    " has an unexpected shape (",
    "); skipped",
    " bytes, over the 1 MiB limit; not parsed",
    "[image ",
    ", bytes]",
    " bytes]",
    "[file ",
    "[tool ",
];

/// Most literals the prefilter looks for (every JSON form of every required literal); more
/// and the prefilter is left out.
const MAX_NEEDLES: usize = 1000;
/// Most JSON forms of one literal at one level of escaping; more and only its longest run of
/// characters JSON never escapes is looked for.
const MAX_FORMS: usize = 64;

/// A compiled pattern: the regex matched against record texts, and the prefilter for raw lines.
#[derive(Debug, Clone)]
pub struct Matcher {
    regex: Regex,
    prefilter: Option<Prefilter>,
    /// Literals one of which every match contains (`None`: no such set).
    literals: Option<Vec<String>>,
    insensitive: bool,
}

/// How raw bytes are searched for the needles.
#[derive(Debug, Clone)]
enum Prefilter {
    /// One needle, exactly: a SIMD substring search.
    One(Box<memchr::memmem::Finder<'static>>),
    /// One ASCII needle ignoring ASCII case: a SIMD scan for both cases of its rarest byte,
    /// each candidate compared whole.
    OneFolded {
        needle: Vec<u8>,
        /// Where the rarest byte is in the needle, and its two cases.
        at: usize,
        cases: [u8; 2],
    },
    /// Several needles as one byte regex (ASCII case folded when asked): its literal
    /// optimizations search many literals at once (Teddy), case variants included.
    Many(regex::bytes::Regex),
}

impl Prefilter {
    fn new(needles: Vec<Vec<u8>>, insensitive: bool) -> Option<Prefilter> {
        match needles.as_slice() {
            [one] if !insensitive => Some(Prefilter::One(Box::new(
                memchr::memmem::Finder::new(one).into_owned(),
            ))),
            [one] if one.is_ascii() && !one.is_empty() => {
                let at = (0..one.len())
                    .max_by_key(|&i| rarity(one[i]))
                    .expect("a needle is not empty");
                let b = one[at];
                Some(Prefilter::OneFolded {
                    needle: one.to_ascii_lowercase(),
                    at,
                    cases: [b.to_ascii_lowercase(), b.to_ascii_uppercase()],
                })
            }
            _ => {
                let alternation: Vec<String> = needles
                    .iter()
                    .map(|n| regex::escape(&String::from_utf8_lossy(n)))
                    .collect();
                regex::bytes::RegexBuilder::new(&alternation.join("|"))
                    .unicode(false)
                    .case_insensitive(insensitive)
                    .build()
                    .ok()
                    .map(Prefilter::Many)
            }
        }
    }

    /// Where the first needle found at or after `from` starts.
    fn find(&self, bytes: &[u8], from: usize) -> Option<usize> {
        match self {
            Prefilter::One(finder) => finder.find(&bytes[from..]).map(|i| from + i),
            Prefilter::OneFolded { needle, at, cases } => {
                let mut pos = from + at;
                while pos < bytes.len() {
                    let hit = pos + memchr::memchr2(cases[0], cases[1], &bytes[pos..])?;
                    let start = hit - at;
                    if bytes
                        .get(start..start + needle.len())
                        .is_some_and(|window| window.eq_ignore_ascii_case(needle))
                    {
                        return Some(start);
                    }
                    pos = hit + 1;
                }
                None
            }
            Prefilter::Many(re) => re.find_at(bytes, from).map(|m| m.start()),
        }
    }
}

/// How rare a byte is in transcripts (higher is rarer): letters by their frequency in English
/// text, JSON's punctuation and spaces as the commonest; a rough rank, enough to pick which
/// byte of a needle to scan for.
fn rarity(b: u8) -> u8 {
    const COMMON: &[u8] = b" \"e0t1a2o3i4n5s6r7h8l9dcu:,mfpgwybv{}kx_-.jqz";
    match COMMON.iter().position(|&c| c == b.to_ascii_lowercase()) {
        Some(i) => i as u8,
        None => 200,
    }
}

impl Matcher {
    pub fn new(pattern: &str, options: PatternOptions) -> Result<Matcher, SearchError> {
        let source: Cow<'_, str> = if options.fixed {
            Cow::Owned(regex::escape(pattern))
        } else {
            Cow::Borrowed(pattern)
        };
        let bad = |e: &dyn std::fmt::Display| SearchError::Pattern {
            reason: one_line(&e.to_string()),
        };
        // The pattern as written (no case folding): its literals, and whether it has an
        // uppercase letter.
        let ast = regex_syntax::ast::parse::Parser::new()
            .parse(&source)
            .map_err(|e| bad(&e))?;
        let hir = regex_syntax::hir::translate::Translator::new()
            .translate(&source, &ast)
            .map_err(|e| bad(&e))?;
        let insensitive = match options.case {
            Case::Sensitive => false,
            Case::Insensitive => true,
            Case::Smart => !has_uppercase_literal(&ast),
        };
        let regex = RegexBuilder::new(&source)
            .case_insensitive(insensitive)
            .build()
            .map_err(|e| bad(&e))?;
        let literals = required_literals(&hir);
        let prefilter = literals
            .as_deref()
            .and_then(|literals| needles(literals, insensitive))
            .and_then(|needles| Prefilter::new(needles, insensitive));
        Ok(Matcher {
            regex,
            prefilter,
            literals,
            insensitive,
        })
    }

    /// The byte spans of the matches in `text` (empty matches left out).
    pub fn spans(&self, text: &str) -> Vec<[usize; 2]> {
        self.regex
            .find_iter(text)
            .filter(|m| !m.is_empty())
            .map(|m| [m.start(), m.end()])
            .collect()
    }

    /// Whether the pattern matches `text` (an empty match counts, as for `grep ''`).
    pub fn is_match(&self, text: &str) -> bool {
        self.regex.is_match(text)
    }

    /// Literals of which every match's text (as [`search_text`] gives it) contains one, as
    /// written in the pattern (compared ignoring case when [`Matcher::is_case_insensitive`]);
    /// `None` when the pattern has no such set. A text index narrows candidates with them; the
    /// regex still decides.
    pub fn required_literals(&self) -> Option<&[String]> {
        self.literals.as_deref()
    }

    /// Whether letters' case is ignored (`-i`, or smart case with no uppercase letter).
    pub fn is_case_insensitive(&self) -> bool {
        self.insensitive
    }

    /// Whether raw lines can be skipped by their bytes at all.
    pub fn has_prefilter(&self) -> bool {
        self.prefilter.is_some()
    }

    /// Whether a raw line may hold a match (always true without a prefilter).
    pub fn line_may_match(&self, line: &[u8]) -> bool {
        self.prefilter
            .as_ref()
            .is_none_or(|p| p.find(line, 0).is_some())
    }

    /// Where in `bytes` the first prefilter hit at or after `from` starts.
    fn next_hit(&self, bytes: &[u8], from: usize) -> Option<usize> {
        self.prefilter.as_ref()?.find(bytes, from)
    }
}

/// The text of a record that is searched and shown: a message's or notice's text, a tool
/// call's name then each value of its input (strings as they are, numbers and booleans as
/// JSON, depth first), one per line, and a tool result's output.
pub fn search_text(record: &Record) -> Cow<'_, str> {
    match &record.body {
        RecordBody::Text { text, .. } => Cow::Borrowed(text),
        RecordBody::ToolResult { output, .. } => Cow::Borrowed(output),
        RecordBody::ToolCall { name, input, .. } => {
            let mut text = name.clone();
            push_values(input, &mut text);
            Cow::Owned(text)
        }
    }
}

fn push_values(value: &Value, text: &mut String) {
    match value {
        Value::Null => {}
        Value::String(s) => {
            text.push('\n');
            text.push_str(s);
        }
        Value::Bool(_) | Value::Number(_) => {
            text.push('\n');
            text.push_str(&value.to_string());
        }
        Value::Array(items) => items.iter().for_each(|v| push_values(v, text)),
        Value::Object(map) => map.values().for_each(|v| push_values(v, text)),
    }
}

/// Whether a letter the pattern names literally is uppercase, as ripgrep's smart case asks:
/// a literal, or a literal or range end in a bracketed class; escapes such as `\S`, `\W` or
/// `\P{..}` are not letters.
fn has_uppercase_literal(ast: &Ast) -> bool {
    match ast {
        Ast::Literal(lit) => lit.c.is_uppercase(),
        Ast::ClassBracketed(class) => set_has_uppercase(&class.kind),
        Ast::Repetition(rep) => has_uppercase_literal(&rep.ast),
        Ast::Group(group) => has_uppercase_literal(&group.ast),
        Ast::Alternation(alt) => alt.asts.iter().any(has_uppercase_literal),
        Ast::Concat(concat) => concat.asts.iter().any(has_uppercase_literal),
        _ => false,
    }
}

fn set_has_uppercase(set: &ClassSet) -> bool {
    match set {
        ClassSet::Item(item) => item_has_uppercase(item),
        ClassSet::BinaryOp(op) => set_has_uppercase(&op.lhs) || set_has_uppercase(&op.rhs),
    }
}

fn item_has_uppercase(item: &ClassSetItem) -> bool {
    match item {
        ClassSetItem::Literal(lit) => lit.c.is_uppercase(),
        ClassSetItem::Range(range) => range.start.c.is_uppercase() || range.end.c.is_uppercase(),
        ClassSetItem::Bracketed(class) => set_has_uppercase(&class.kind),
        ClassSetItem::Union(union) => union.items.iter().any(item_has_uppercase),
        _ => false,
    }
}

/// Literals of which every match holds one, as text: the pattern's prefixes or suffixes,
/// whichever set has the longer shortest literal. `None` when no such finite set of non-empty
/// literals exists.
fn required_literals(hir: &Hir) -> Option<Vec<String>> {
    let extract = |kind| {
        let mut seq = Extractor::new().kind(kind).extract(hir);
        seq.dedup();
        seq
    };
    let usable = |seq: &Seq| seq.is_finite() && seq.min_literal_len().is_some_and(|n| n > 0);
    let (prefixes, suffixes) = (extract(ExtractKind::Prefix), extract(ExtractKind::Suffix));
    let seq = match (usable(&prefixes), usable(&suffixes)) {
        (true, true) if suffixes.min_literal_len() > prefixes.min_literal_len() => suffixes,
        (true, _) => prefixes,
        (false, true) => suffixes,
        (false, false) => return None,
    };
    let literals = seq.literals()?;
    literals
        .iter()
        .map(|lit| {
            // A literal cut by the extractor's length bound may end inside a character: its
            // whole characters are still required.
            let bytes = lit.as_bytes();
            let text = match std::str::from_utf8(bytes) {
                Ok(t) => t,
                Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).ok()?,
            };
            (!text.is_empty()).then(|| text.to_string())
        })
        .collect()
}

/// The byte strings the prefilter looks for: every JSON form of every literal. `None` when a
/// prefilter could miss a match (see the module's doc).
fn needles(literals: &[String], insensitive: bool) -> Option<Vec<Vec<u8>>> {
    let replacements: Vec<String> = redact::rule_names()
        .map(|name| format!("[REDACTED:{name}]"))
        .collect();
    let mut out: Vec<Vec<u8>> = Vec::new();
    for literal in literals {
        if literal.contains(['[', ']', '\n']) {
            return None;
        }
        let inside_replacement = |r: &String| {
            if insensitive {
                r.to_ascii_lowercase()
                    .contains(&literal.to_ascii_lowercase())
            } else {
                r.contains(literal.as_str())
            }
        };
        if replacements.iter().any(inside_replacement) {
            return None;
        }
        if insensitive && !literal.is_ascii() {
            return None;
        }
        let lower = literal.to_lowercase();
        if PARSER_WORDS
            .iter()
            .any(|words| words.to_lowercase().contains(&lower))
        {
            return None;
        }
        out.extend(json_forms(literal));
        // Unicode case folding maps `k` to KELVIN SIGN and `s` to LONG S: under -i, a line
        // holding either (raw or escaped) may match a literal with those letters.
        if insensitive && literal.contains(['k', 'K', 's', 'S']) {
            for special in ["\u{212a}", "\u{17f}"] {
                out.extend(json_forms(special));
            }
        }
        if out.len() > MAX_NEEDLES {
            return None;
        }
    }
    out.sort();
    out.dedup();
    Some(out)
}

/// The forms `literal` may take inside a JSON line: escaped once and twice, each character in
/// each way writers escape it. Too many forms: the longest run of characters no writer
/// escapes stands for the literal (a run of at least one character; else every line passes).
fn json_forms(literal: &str) -> Vec<Vec<u8>> {
    let once: Vec<Vec<String>> = literal.chars().map(char_forms).collect();
    let twice: Vec<Vec<String>> = once
        .iter()
        .map(|forms| {
            let mut doubled: Vec<String> = forms.iter().map(|f| escape_again(f)).collect();
            doubled.dedup();
            doubled
        })
        .collect();
    let mut out = Vec::new();
    for per_char in [once, twice] {
        let count = per_char
            .iter()
            .try_fold(1usize, |n, forms| n.checked_mul(forms.len()));
        match count {
            Some(n) if n <= MAX_FORMS => out.extend(product(&per_char)),
            _ => {
                let run = literal
                    .split(|c: char| !is_never_escaped(c))
                    .max_by_key(|run| run.len())
                    .unwrap_or("");
                // No plain character at all: an empty needle passes every line.
                out.push(run.as_bytes().to_vec());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn product(per_char: &[Vec<String>]) -> Vec<Vec<u8>> {
    let mut acc: Vec<Vec<u8>> = vec![Vec::new()];
    for forms in per_char {
        acc = acc
            .iter()
            .flat_map(|prefix| {
                forms.iter().map(move |f| {
                    let mut s = prefix.clone();
                    s.extend_from_slice(f.as_bytes());
                    s
                })
            })
            .collect();
    }
    acc
}

/// A character that every JSON writer leaves as it is.
fn is_never_escaped(c: char) -> bool {
    matches!(c, ' '..='~') && !matches!(c, '"' | '\\' | '/' | '<' | '>' | '&')
}

/// The ways one character may be written inside a JSON string.
fn char_forms(c: char) -> Vec<String> {
    let hex = |c: char| -> Vec<String> {
        let mut units = [0u16; 2];
        let units = c.encode_utf16(&mut units);
        let lower: String = units.iter().map(|u| format!("\\u{u:04x}")).collect();
        let upper: String = units.iter().map(|u| format!("\\u{u:04X}")).collect();
        vec![lower, upper]
    };
    let mut forms = match c {
        // Raw too: a parser may show part of the line re-serialized as JSON text (a Codex
        // result whose output is an object).
        '"' => vec!["\\\"".to_string(), "\"".to_string()],
        '\\' => vec!["\\\\".to_string(), "\\".to_string()],
        '/' => vec!["/".to_string(), "\\/".to_string()],
        '\u{8}' => vec!["\\b".to_string()],
        '\u{c}' => vec!["\\f".to_string()],
        '\n' => vec!["\\n".to_string()],
        '\r' => vec!["\\r".to_string()],
        '\t' => vec!["\\t".to_string()],
        c if c < ' ' => Vec::new(),
        c if is_never_escaped(c) => return vec![c.to_string()],
        c => vec![c.to_string()],
    };
    forms.extend(hex(c));
    forms.dedup();
    forms
}

/// A once-escaped form as it reads once more inside a JSON string (`\"` becomes `\\\"`).
fn escape_again(form: &str) -> String {
    let mut out = String::with_capacity(form.len() + 4);
    for c in form.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out
}

/// A regex error on one line (the regex crate draws the pattern over several).
fn one_line(message: &str) -> String {
    let last = message.lines().map(str::trim).rfind(|l| !l.is_empty());
    let last = last.unwrap_or(message);
    last.strip_prefix("error: ").unwrap_or(last).to_string()
}

/// What is searched for and what is given back, the same for every session of a run.
#[derive(Debug, Clone)]
pub struct Query {
    pub matcher: Matcher,
    /// `--kind`, `--after`, `--before` (its `--grep` unused).
    pub filter: RecordFilter,
    /// `-B`: records of context before each match.
    pub before: usize,
    /// `-A`: records of context after each match.
    pub after: usize,
    /// `-m`: matches per session at most.
    pub max_count: Option<usize>,
    /// Redact records before matching (always, but for tests of the raw path).
    pub redact: bool,
    /// `-c`, `-l`: matches are counted, not given.
    pub count_only: bool,
}

impl Query {
    /// Whether `record` matches on its own: the filter keeps it, it is not a reader's notice
    /// that its session held nothing, and the pattern matches its [`search_text`]. Context
    /// and `-m` are a session's ([`SessionSearch`]), so a caller that decides records one by
    /// one still hands the matches to a session search, in order.
    pub fn matches_record(&self, record: &Record) -> bool {
        self.searches(record) && self.matcher.is_match(&search_text(record))
    }

    /// Whether `record` is searched at all (the filter keeps it and it is not the reader's
    /// notice that its session held nothing readable).
    fn searches(&self, record: &Record) -> bool {
        self.filter.keeps(record) && !crate::lines::is_no_records_notice(record)
    }

    /// Whether lines of `ctx`'s harness can be skipped by the prefilter in this query.
    fn prefilter_applies(&self, ctx: &SourceCtx) -> bool {
        self.matcher.has_prefilter()
            && self.before == 0
            && self.after == 0
            && !crate::harness::upserts_by_id(ctx.harness)
    }
}

/// What a search of one session gives, in the session's order.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// A record whose text matches: its text as searched and the byte spans of the matches.
    Match {
        record: Record,
        text: String,
        spans: Vec<[usize; 2]>,
    },
    /// A record of context (`-A`/`-B`/`-C`), near a match.
    Context { record: Record },
    /// Records left out between two groups of context (text output prints `--`).
    Break,
}

/// The search of one session: fed its bytes in order (JSON lines), or its records (other
/// sources), it gives [`Found`] items. Only complete lines are searched: a last line without
/// its `\n` is still being written.
#[derive(Debug)]
pub struct SessionSearch<'q> {
    ctx: SourceCtx,
    query: &'q Query,
    prefilter: bool,
    /// The offset of the next byte fed.
    offset: u64,
    /// The line begun in an earlier chunk: its start, its bytes (at most the record bound
    /// and one), and its true length.
    partial_start: u64,
    partial: Vec<u8>,
    partial_len: u64,
    /// Hashes of the ids given so far: a line repeating an id gives nothing new (as a read).
    seen: HashSet<u64>,
    /// Records kept for `-B`.
    before: VecDeque<Record>,
    /// Records still to give after the last match (`-A`).
    after_left: usize,
    /// The index (among the records the filter keeps) of the next record, and of the last
    /// one given, which tells where a break in the context goes.
    index: u64,
    last_given: Option<u64>,
    matches: usize,
}

impl<'q> SessionSearch<'q> {
    pub fn new(ctx: SourceCtx, query: &'q Query) -> SessionSearch<'q> {
        let prefilter = query.prefilter_applies(&ctx);
        SessionSearch {
            ctx,
            query,
            prefilter,
            offset: 0,
            partial_start: 0,
            partial: Vec::new(),
            partial_len: 0,
            seen: HashSet::new(),
            before: VecDeque::new(),
            after_left: 0,
            index: 0,
            last_given: None,
            matches: 0,
        }
    }

    /// Matches found so far.
    pub fn matches(&self) -> usize {
        self.matches
    }

    /// Whether nothing more can be found: `-m` matches given and their context after.
    pub fn is_done(&self) -> bool {
        self.query
            .max_count
            .is_some_and(|max| self.matches >= max && self.after_left == 0)
    }

    /// Feeds the next bytes of a JSON-lines session; found items are pushed to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<Found>) {
        let chunk_start = self.offset;
        self.offset += chunk.len() as u64;
        let mut at = 0;
        // The line begun in an earlier chunk first.
        if self.partial_len > 0 {
            let Some(nl) = memchr::memchr(b'\n', chunk) else {
                self.keep_partial(chunk);
                return;
            };
            self.keep_partial(&chunk[..nl]);
            let line = std::mem::take(&mut self.partial);
            let (start, len) = (self.partial_start, self.partial_len);
            self.partial_len = 0;
            if len > MAX_RECORD_BYTES {
                self.oversized(start, len, out);
            } else if !self.prefilter || self.query.matcher.line_may_match(&line) {
                self.line(start, &line, out);
            }
            self.partial = line;
            self.partial.clear();
            at = nl + 1;
        }
        let end = match memchr::memrchr(b'\n', &chunk[at..]) {
            Some(last) => at + last + 1,
            None => at,
        };
        let complete = &chunk[..end];
        while at < end && !self.is_done() {
            let line_start = if self.prefilter {
                // Skip to the line of the next hit.
                match self.query.matcher.next_hit(complete, at) {
                    Some(hit) => {
                        memchr::memrchr(b'\n', &complete[at..hit]).map_or(at, |i| at + i + 1)
                    }
                    None => break,
                }
            } else {
                at
            };
            let line_end = line_start
                + memchr::memchr(b'\n', &complete[line_start..])
                    .expect("complete lines end with \\n");
            let line = &complete[line_start..line_end];
            let offset = chunk_start + line_start as u64;
            if line.len() as u64 > MAX_RECORD_BYTES {
                self.oversized(offset, line.len() as u64, out);
            } else {
                self.line(offset, line, out);
            }
            at = line_end + 1;
        }
        if end < chunk.len() {
            self.partial_start = chunk_start + end as u64;
            self.keep_partial(&chunk[end..]);
        }
    }

    fn keep_partial(&mut self, bytes: &[u8]) {
        let room = (MAX_RECORD_BYTES + 1).saturating_sub(self.partial.len() as u64) as usize;
        self.partial
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.partial_len += bytes.len() as u64;
    }

    fn oversized(&mut self, offset: u64, len: u64, out: &mut Vec<Found>) {
        let notice = oversized_notice(&self.ctx, offset, len);
        self.record(notice, out);
    }

    fn line(&mut self, offset: u64, line: &[u8], out: &mut Vec<Found>) {
        let records = match parse_line(&self.ctx, offset, line) {
            LineOutcome::Records(records) | LineOutcome::Unread(records, _) => records,
            LineOutcome::Malformed(reason) => {
                let len = line.strip_suffix(b"\r").unwrap_or(line).len() as u64;
                vec![malformed_notice(&self.ctx, offset, len, &reason)]
            }
        };
        for record in records {
            let mut hasher = std::hash::DefaultHasher::new();
            record.id.hash(&mut hasher);
            if self.seen.insert(hasher.finish()) {
                self.record(record, out);
            }
        }
    }

    /// Records of a session that is not JSON lines (read whole by the driver), in order,
    /// already redacted when the query redacts.
    pub fn records(&mut self, records: Vec<Record>, out: &mut Vec<Found>) {
        for record in records {
            if self.is_done() {
                return;
            }
            self.matched_or_not(record, out);
        }
    }

    fn record(&mut self, mut record: Record, out: &mut Vec<Found>) {
        if self.is_done() {
            return;
        }
        if self.query.redact {
            redact::redact_record(&mut record);
        }
        self.matched_or_not(record, out);
    }

    fn matched_or_not(&mut self, record: Record, out: &mut Vec<Found>) {
        // What the session holds is searched, not the reader's notice that it held nothing
        // readable: a search of a host and of a store give the same answer whichever path
        // read the session.
        if !self.query.searches(&record) {
            return;
        }
        let index = self.index;
        self.index += 1;
        let full = self.query.max_count.is_some_and(|max| self.matches >= max);
        let text = search_text(&record);
        if !full && self.query.matcher.is_match(&text) {
            if self.query.count_only {
                self.matches += 1;
                return;
            }
            let spans = self.query.matcher.spans(&text);
            let text = text.into_owned();
            // The group starts with the context kept before; records left out between it
            // and the last group given are marked (with context asked for, as rg marks them).
            let first = index - self.before.len() as u64;
            let context = self.query.before > 0 || self.query.after > 0;
            if context && self.last_given.is_some_and(|last| first > last + 1) {
                out.push(Found::Break);
            }
            for record in self.before.drain(..) {
                out.push(Found::Context { record });
            }
            out.push(Found::Match {
                record,
                text,
                spans,
            });
            self.matches += 1;
            self.after_left = self.query.after;
            self.last_given = Some(index);
        } else if self.after_left > 0 {
            self.after_left -= 1;
            out.push(Found::Context { record });
            self.last_given = Some(index);
        } else if self.query.before > 0 {
            if self.before.len() == self.query.before {
                self.before.pop_front();
            }
            self.before.push_back(record);
        }
    }
}

#[cfg(test)]
mod tests;
