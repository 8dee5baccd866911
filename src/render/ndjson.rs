//! NDJSON wire types: one JSON object per line with a `"type"`. Kept separate from the domain
//! types so field names stay stable when the model changes (docs/ndjson.md).
//!
//! Output stays exact (no sanitising: a parser gets every string as the source had it), but it
//! is also safe to `cat` in a terminal: besides what JSON must escape, DEL, the C1 controls, the
//! line and paragraph separators and Unicode's default-ignorable and bidi-control characters are
//! written as `\uXXXX` ([`is_escaped`]).
//!
//! `--all --json` writes (and redacts) its record lines on a thread of its own while the next
//! chunk is parsed: [`Pipeline`].

use std::io::{self, Write};
use std::ops::Range;

use serde::Serialize;

use super::{HostReport, PageInfo, ResumeReport, RootReport, change_name};
use crate::cache::{CachedFileInfo, Cleared};
use crate::check::{Activity, SessionError};
use crate::driver::heads::SessionHead;
use crate::handoff::Handoff;
use clankie_engine::page::Page;
use clankie_engine::session::SessionFile;
use clankie_model::invisible::is_invisible;
use clankie_model::{LazyText, Record, RecordBody, TextKind, Usage, display_path};

#[derive(Serialize)]
struct PageLine<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    host: &'a str,
    harness: &'a str,
    session: &'a str,
    cursor: String,
    older: bool,
    more: bool,
    pending_tail: bool,
    reset: bool,
    /// A terminal recording's current screen, when the page reaches it: not records yet.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    screen: &'a [String],
    /// Present when a filter was given: the records it left out of the page.
    #[serde(skip_serializing_if = "Option::is_none")]
    filtered: Option<usize>,
    /// Entries, content blocks or fields of the page the harness's parser did not understand.
    #[serde(skip_serializing_if = "is_zero")]
    unknown: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Serialize)]
struct SessionLine<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    host: &'a str,
    harness: &'static str,
    session: &'a str,
    path: String,
    size: u64,
    mtime: String,
    /// `ls --json --long`: the session's title and working directory, `null` when unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cwd: Option<Option<&'a str>>,
    /// `ls --json --long`: the version of the CLI that wrote the session, where the transcript
    /// records it.
    #[serde(skip_serializing_if = "Option::is_none")]
    writer_version: Option<&'a str>,
}

#[derive(Serialize)]
struct ActivityLine<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    host: &'a str,
    harness: &'a str,
    session: &'a str,
    change: &'static str,
    new_records: usize,
    last_ts: Option<&'a str>,
}

/// `session` is `null` when no session is known (a database that cannot be opened).
#[derive(Serialize)]
struct ErrorLine<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    host: &'a str,
    harness: &'a str,
    session: Option<&'a str>,
    path: &'a str,
    message: &'a str,
}

#[derive(Serialize)]
struct HostLine<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    name: &'a str,
    transport: &'a str,
    shell: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ok: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    connect_ms: Option<u128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exec_ms: Option<u128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    list_ms: Option<u128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    uname: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    host_key: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    auth: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    connection: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    clean_shell: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shell_noise: Option<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    roots: Vec<RootLine<'a>>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    warnings: &'a [String],
}

#[derive(Serialize)]
struct RootLine<'a> {
    harness: &'a str,
    dir: &'a str,
    exists: bool,
    sessions: usize,
}

/// A `cached` line of `cache ls --json`.
#[derive(Serialize)]
struct CachedLine<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    host: &'a str,
    harness: &'a str,
    path: String,
    bytes: u64,
    used: String,
}

/// The `cleared` line of `cache clear --json`.
#[derive(Serialize)]
struct ClearedLine<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    host: Option<&'a str>,
    files: u64,
    bytes: u64,
}

/// The `resume` line of `resume --json`.
#[derive(Serialize)]
struct ResumeLine<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    host: &'a str,
    harness: &'a str,
    session: &'a str,
    command: &'a str,
}

/// Writes `value` as one NDJSON line (terminal-safe, as every line here).
pub(crate) fn line(out: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    to_writer(&mut *out, value)?;
    out.write_all(b"\n")
}

/// Writes `value` as one NDJSON line, escaped as every other line is (for lines other
/// modules shape, such as `grep`'s).
pub fn value_line(out: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    line(out, value)
}

/// Writes `value` as compact JSON, as serde_json does, with [`find_unsafe`]'s characters
/// escaped too.
fn to_writer(out: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    let mut serializer = serde_json::Serializer::with_formatter(out, TerminalSafe);
    value.serialize(&mut serializer).map_err(io::Error::other)
}

/// serde_json's compact formatter, but the characters [`find_unsafe`] finds are written as
/// `\uXXXX`. serde_json hands every run of a string that JSON needs no escape for to
/// `write_string_fragment`, so this sees all the text and only the text.
struct TerminalSafe;

impl serde_json::ser::Formatter for TerminalSafe {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut rest = fragment.as_bytes();
        if !has_unsafe(rest) {
            return writer.write_all(rest);
        }
        while let Some((at, len)) = find_unsafe(rest) {
            writer.write_all(&rest[..at])?;
            writer.write_all(&unicode_escape(&rest[at..at + len]))?;
            rest = &rest[at + len..];
        }
        writer.write_all(rest)
    }
}

/// Whether `--json` writes `c` as `\uXXXX` although JSON lets it through raw: DEL and the C1
/// controls U+0080–U+009F (a terminal may take U+009B as CSI), the line and paragraph
/// separators U+2028/U+2029 (JavaScript and some terminals break lines on them), and every
/// Default_Ignorable_Code_Point and Bidi_Control character ([`is_invisible`]: zero-width
/// characters, bidi marks, embeddings, overrides and isolates, variation selectors, tags),
/// which make a line read differently from what it holds.
#[cfg_attr(not(test), allow(dead_code))]
fn is_escaped(c: char) -> bool {
    matches!(c, '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}') || is_invisible(c)
}

/// Where the first [`is_escaped`] character is, and its length in bytes. A byte scan: `s` is
/// UTF-8, so the sequences [`escaped_at`] matches are those characters and nothing else.
fn find_unsafe(s: &[u8]) -> Option<(usize, usize)> {
    (0..s.len())
        .filter(|&at| s[at] >= 0x7f)
        .find_map(|at| Some((at, unsafe_len(s, at))).filter(|&(_, len)| len > 0))
}

/// Whether `s` holds an [`is_escaped`] character (nearly all text does not): in ASCII only DEL
/// can be one; other text is checked by [`has_unsafe_in_blocks`], whose speed does not depend
/// on what the text holds (prose is full of characters that share lead bytes with the escaped
/// ones: ’ “ ” — … are 0xE2 …).
fn has_unsafe(s: &[u8]) -> bool {
    if s.is_ascii() {
        return memchr::memchr(0x7f, s).is_some();
    }
    has_unsafe_in_blocks(s)
}

/// The length of the [`is_escaped`] character at `s[at]`, else 0.
fn unsafe_len(s: &[u8], at: usize) -> usize {
    let byte = |k: usize| s.get(at + k).copied().unwrap_or(0);
    if escaped_at(s[at], byte(1), byte(2), byte(3)) == 0 {
        return 0;
    }
    match s[at] {
        0..0x80 => 1,
        0x80..0xe0 => 2,
        0xe0..0xf0 => 3,
        _ => 4,
    }
}

/// 1 when the UTF-8 bytes `x y z w` start an [`is_escaped`] character, else 0; without a
/// branch, so that [`block_has_unsafe`] vectorizes. The encodings of `is_escaped`'s ranges,
/// lead byte by lead byte (a test holds the two equal over every code point):
/// 7F; C2 80–9F, C2 AD (U+00AD); CD 8F (U+034F); D8 9C (U+061C); E1 85 9F–A0 (U+115F–1160),
/// E1 9E B4–B5 (U+17B4–17B5), E1 A0 8B–8F (U+180B–180F); E2 80 8B–8F (U+200B–200F), E2 80
/// A8–AE (U+2028–202E), E2 81 A0–AF (U+2060–206F); E3 85 A4 (U+3164); EF B8 80–8F
/// (U+FE00–FE0F), EF BB BF (U+FEFF), EF BE A0 (U+FFA0), EF BF B0–B8 (U+FFF0–FFF8); F0 9B B2
/// A0–A3 (U+1BCA0–1BCA3), F0 9D 85 B3–BA (U+1D173–1D17A); F3 A0 (U+E0000–E0FFF).
#[inline(always)]
fn escaped_at(x: u8, y: u8, z: u8, w: u8) -> u8 {
    let is = |a: u8, b: u8| u8::from(a == b);
    let within = |a: u8, lo: u8, hi: u8| u8::from(a.wrapping_sub(lo) <= hi - lo);
    let c2 = is(x, 0xc2) & (within(y, 0x80, 0x9f) | is(y, 0xad));
    let cd_d8 = (is(x, 0xcd) & is(y, 0x8f)) | (is(x, 0xd8) & is(y, 0x9c));
    let e1 = is(x, 0xe1)
        & ((is(y, 0x85) & within(z, 0x9f, 0xa0))
            | (is(y, 0x9e) & within(z, 0xb4, 0xb5))
            | (is(y, 0xa0) & within(z, 0x8b, 0x8f)));
    let e2 = is(x, 0xe2)
        & ((is(y, 0x80) & (within(z, 0x8b, 0x8f) | within(z, 0xa8, 0xae)))
            | (is(y, 0x81) & within(z, 0xa0, 0xaf)));
    let e3 = is(x, 0xe3) & is(y, 0x85) & is(z, 0xa4);
    let ef = is(x, 0xef)
        & ((is(y, 0xb8) & within(z, 0x80, 0x8f))
            | (is(y, 0xbb) & is(z, 0xbf))
            | (is(y, 0xbe) & is(z, 0xa0))
            | (is(y, 0xbf) & within(z, 0xb0, 0xb8)));
    let f0 = is(x, 0xf0)
        & ((is(y, 0x9b) & is(z, 0xb2) & within(w, 0xa0, 0xa3))
            | (is(y, 0x9d) & is(z, 0x85) & within(w, 0xb3, 0xba)));
    let f3 = is(x, 0xf3) & is(y, 0xa0);
    is(x, 0x7f) | c2 | cd_d8 | e1 | e2 | e3 | ef | f0 | f3
}

/// 1 when `x` is a byte an [`escaped_at`] character starts with (7F C2 CD D8 E1 E2 E3 EF F0
/// F3), else 0; without a branch, as `escaped_at`.
#[inline(always)]
fn may_lead_escaped(x: u8) -> u8 {
    let is = |b: u8| u8::from(x == b);
    is(0x7f)
        | is(0xc2)
        | is(0xcd)
        | is(0xd8)
        | u8::from(x.wrapping_sub(0xe1) <= 2)
        | is(0xef)
        | is(0xf0)
        | is(0xf3)
}

const BLOCK: usize = 64;
/// How far past a position [`escaped_at`] looks.
const LOOKAHEAD: usize = 3;

/// [`has_unsafe`] a block of 64 positions at a time, each checked without a branch so that
/// the compiler vectorizes the loop. Each position looks at the three bytes after it; the end
/// is padded with zeros. (`s` may start inside a character: a continuation byte never matches.)
fn has_unsafe_in_blocks(s: &[u8]) -> bool {
    let mut start = 0;
    while let Some(window) = s.get(start..start + BLOCK + LOOKAHEAD) {
        if block_has_unsafe(window) {
            return true;
        }
        start += BLOCK;
    }
    // At most BLOCK + LOOKAHEAD - 1 bytes are left: one or two padded blocks.
    let rest = &s[start..];
    let mut padded = [0u8; 2 * BLOCK + LOOKAHEAD];
    padded[..rest.len()].copy_from_slice(rest);
    block_has_unsafe(&padded) || (rest.len() > BLOCK && block_has_unsafe(&padded[BLOCK..]))
}

fn block_has_unsafe(window: &[u8]) -> bool {
    // Slicing to the exact length lets the compiler drop the bounds checks below.
    let w = &window[..BLOCK + LOOKAHEAD];
    // The lead bytes first, a few compares a position: most blocks of text, even of text
    // full of `—`, `’` and `→`, hold none (about 1 in 20 of `scripts/bench`'s transcript does).
    let mut lead = 0u8;
    for &x in &w[..BLOCK] {
        lead |= may_lead_escaped(x);
    }
    if lead == 0 {
        return false;
    }
    let mut hit = 0u8;
    for k in 0..BLOCK {
        hit |= escaped_at(w[k], w[k + 1], w[k + 2], w[k + 3]);
    }
    hit != 0
}

/// `\uXXXX` (lowercase hex, as serde_json writes control characters) for the character whose
/// UTF-8 is `utf8`; a character past U+FFFF as its UTF-16 surrogate pair, as JSON spells it.
fn unicode_escape(utf8: &[u8]) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let Some(c) = std::str::from_utf8(utf8)
        .ok()
        .and_then(|s| s.chars().next())
    else {
        return Vec::new();
    };
    let mut units = [0u16; 2];
    let mut out = Vec::with_capacity(12);
    for &unit in c.encode_utf16(&mut units).iter() {
        out.extend_from_slice(b"\\u");
        for shift in [12, 8, 4, 0] {
            out.push(HEX[usize::from((unit >> shift) & 0xf)]);
        }
    }
    out
}

/// How many bytes of record lines are gathered before one write.
const BATCH_BYTES: usize = 64 << 10;

/// Writes `record` lines of `host`, gathered into writes of about [`BATCH_BYTES`].
pub fn records(out: &mut impl Write, host: &str, records: &[Record]) -> io::Result<()> {
    let mut buf = Vec::with_capacity(BATCH_BYTES);
    // The host is the same on every line: escaped once, copied per record.
    let mut host_json = Vec::with_capacity(host.len() + 2);
    write_str(&mut host_json, host);
    for r in records {
        record(&mut buf, &host_json, r)?;
        if buf.len() >= BATCH_BYTES {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)
}

/// Record lines written on a thread of their own: `--all --json` hands each streamed batch
/// here and parses the next chunk while this one is escaped (writing the lines is a fifth of
/// the reading thread's work). The bytes come back in the order the batches were sent; the
/// caller writes them, so output errors and the order against page lines stay its own. A
/// caller that has to wait for the lines writes the batches the thread has not started
/// itself, so the last chunk's batches are shared by two threads rather than queued for one.
/// The thread ends when the pipeline is dropped.
pub struct Pipeline {
    handoff: std::sync::Arc<Handoff<Vec<Record>, Vec<u8>>>,
    /// What writes a batch, on the thread or on the caller's.
    writer: std::sync::Arc<BatchWriter>,
}

/// Writes a batch's record lines, the same on either thread.
struct BatchWriter {
    host: String,
    /// `host` written as a JSON string once, copied into every line.
    host_json: Vec<u8>,
    redact: bool,
    /// Buffers written out, handed back to be filled again: a buffer allocated on the thread
    /// and freed on the caller's would have each batch fault in fresh pages.
    spare: std::sync::Mutex<Vec<Vec<u8>>>,
}

impl BatchWriter {
    /// `batch`'s record lines, each record redacted when asked, in a spare buffer if there is
    /// one (a tool call's input after its line is written, below). A record is redacted right
    /// before its line is written, so the scan for terminal controls and the copy read its
    /// texts from the cache the trigger scan filled; the lines go straight into the buffer
    /// handed back.
    fn write(&self, mut batch: Vec<Record>) -> Vec<u8> {
        let mut buf = self.spares().pop().unwrap_or_default();
        buf.clear();
        // Sized before writing: a buffer grown as it fills copies what it holds at each
        // doubling, into pages touched for the first time.
        buf.reserve(lines_len_estimate(self.host.len(), &batch));
        for r in &mut batch {
            let start = buf.len();
            // A tool call's input is looked at as written: one scan of its JSON, where
            // redacting it first scans each of its keys and strings. Only an input the scan
            // wakes is redacted, and its line written again.
            let input_first = self.redact && matches!(r.body, RecordBody::ToolCall { .. });
            if self.redact && !input_first {
                clankie_engine::redact::redact_record(r);
            }
            // Writing into a Vec cannot fail.
            let written = record(&mut buf, &self.host_json, r);
            // An input whose place is not known is redacted as one that wakes the scan.
            let wakes = |written: io::Result<Option<Range<usize>>>| match written {
                Ok(Some(input)) => clankie_engine::redact::may_wake_in_json(&buf[input]),
                _ => true,
            };
            if input_first && wakes(written) {
                buf.truncate(start);
                clankie_engine::redact::redact_record(r);
                let _ = record(&mut buf, &self.host_json, r);
            }
        }
        buf
    }

    fn spares(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        self.spare.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A batch is handed to the thread in pieces of at most this many records, so that a caller
/// that waits can take some of the last chunk's records.
const PIECE_RECORDS: usize = 512;

impl Pipeline {
    /// `None` when no thread can be started (the caller then writes the lines itself). With
    /// `redact`, each batch is redacted before its lines are written (the batches are handed
    /// over unredacted: see `Reader::with_streamed_batches_unredacted`).
    pub fn start(host: &str, redact: bool) -> Option<Pipeline> {
        let pipeline = Pipeline::unstarted(host, redact);
        let (serving, writer) = (pipeline.handoff.clone(), pipeline.writer.clone());
        std::thread::Builder::new()
            .name("ndjson".into())
            .spawn(move || serving.serve(|batch| writer.write(batch)))
            .ok()?;
        Some(pipeline)
    }

    /// A pipeline whose thread is not started: until one serves it, a caller that waits
    /// writes every batch itself.
    fn unstarted(host: &str, redact: bool) -> Pipeline {
        Pipeline {
            handoff: Default::default(),
            writer: std::sync::Arc::new(BatchWriter {
                host: host.to_string(),
                host_json: {
                    let mut json = Vec::with_capacity(host.len() + 2);
                    write_str(&mut json, host);
                    json
                },
                redact,
                spare: Default::default(),
            }),
        }
    }

    /// Hands `batch` to the thread.
    pub fn send(&mut self, batch: Vec<Record>) {
        // Each piece its own allocation of its own size, cut from the front: splitting the
        // rest off instead would leave every piece holding the whole batch's allocation,
        // memory quadratic in the batch (gigabytes for a batch of 100,000 short records).
        let mut pieces = Vec::with_capacity(batch.len().div_ceil(PIECE_RECORDS).max(1));
        let mut records = batch.into_iter();
        loop {
            let piece: Vec<Record> = records.by_ref().take(PIECE_RECORDS).collect();
            let last = piece.len() < PIECE_RECORDS;
            if !piece.is_empty() || pieces.is_empty() {
                pieces.push(piece);
            }
            if last {
                break;
            }
        }
        self.handoff.push(pieces);
    }

    /// Gives back a buffer [`Pipeline::take`] gave, once written, for a later batch.
    pub fn recycle(&mut self, buffer: Vec<u8>) {
        self.writer.spares().push(buffer);
    }

    /// The lines of the batches sent so far, oldest first: those written already, or (with
    /// `wait`) all of them, the caller writing those the thread has not started.
    pub fn take(&mut self, wait: bool) -> Vec<Vec<u8>> {
        if !wait {
            return self.handoff.take_done();
        }
        let written: Vec<Vec<u8>> = self
            .handoff
            .take_unstarted()
            .into_iter()
            .map(|batch| self.writer.write(batch))
            .collect();
        let mut lines = self
            .handoff
            .wait_idle()
            .expect("the ndjson thread panicked");
        lines.extend(written);
        lines
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.handoff.close();
    }
}

/// About how many bytes `batch`'s record lines take: its texts as they are held (a token is
/// what is copied out; escaping plain text adds little), a tool call's input at a guess, and
/// each line's fields around them.
fn lines_len_estimate(host_len: usize, batch: &[Record]) -> usize {
    const FIELDS: usize = 160;
    const INPUT: usize = 256;
    let text_len = |text: &LazyText| {
        text.json_token()
            .map_or_else(|| text.as_str().len(), str::len)
    };
    batch
        .iter()
        .map(|r| {
            let body = match &r.body {
                RecordBody::Text { text, .. } => text_len(text),
                RecordBody::ToolCall { .. } => INPUT,
                RecordBody::ToolResult { output, .. } => text_len(output),
            };
            FIELDS + host_len + r.id.len() + r.session.len() + body
        })
        .sum()
}

/// Appends one `record` line to `buf`. Hand-written rather than derived: `--all --json` spends
/// most of its time writing strings, and [`write_str`] escapes them with SIMD where serde_json
/// goes byte by byte. The output is byte-identical to [`to_writer`]'s (a test holds that).
/// `host_json` is the host already written as a JSON string. Returns where in `buf` a tool
/// call's input went.
fn record(
    buf: &mut Vec<u8>,
    host_json: &[u8],
    record: &Record,
) -> io::Result<Option<Range<usize>>> {
    let mut input_at = None;
    buf.extend_from_slice(b"{\"type\":\"record\",\"id\":");
    write_str(buf, &record.id);
    buf.extend_from_slice(b",\"kind\":\"");
    buf.extend_from_slice(record.kind().name().as_bytes());
    buf.extend_from_slice(b"\",\"host\":");
    buf.extend_from_slice(host_json);
    buf.extend_from_slice(b",\"harness\":\"");
    buf.extend_from_slice(record.harness.name().as_bytes());
    buf.extend_from_slice(b"\",\"session\":");
    write_str(buf, &record.session);
    buf.extend_from_slice(b",\"ts\":");
    match &record.ts {
        Some(ts) => write_str(buf, ts),
        None => buf.extend_from_slice(b"null"),
    }
    if let Some(agent) = &record.agent {
        buf.extend_from_slice(b",\"agent\":");
        write_str(buf, agent);
    }
    if record.sidechain {
        buf.extend_from_slice(b",\"sidechain\":true");
    }
    match &record.body {
        RecordBody::Text { kind, text } => {
            if *kind == TextKind::Thinking {
                buf.extend_from_slice(b",\"thinking\":true");
            }
            if let TextKind::Terminal { source, generation } = kind {
                buf.extend_from_slice(b",\"source\":\"");
                buf.extend_from_slice(source.name().as_bytes());
                buf.extend_from_slice(format!("\",\"generation\":{generation}").as_bytes());
            }
            buf.extend_from_slice(b",\"text\":");
            write_text(buf, text);
        }
        RecordBody::ToolCall {
            call_id,
            name,
            input,
            by_user,
        } => {
            buf.extend_from_slice(b",\"call_id\":");
            write_str(buf, call_id);
            buf.extend_from_slice(b",\"name\":");
            write_str(buf, name);
            buf.extend_from_slice(b",\"input\":");
            let start = buf.len();
            to_writer(&mut *buf, input)?;
            input_at = Some(start..buf.len());
            if *by_user {
                buf.extend_from_slice(b",\"by\":\"user\"");
            }
        }
        RecordBody::ToolResult {
            call_id,
            output,
            is_error,
        } => {
            buf.extend_from_slice(b",\"call_id\":");
            write_str(buf, call_id);
            buf.extend_from_slice(b",\"output\":");
            write_text(buf, output);
            buf.extend_from_slice(if *is_error {
                b",\"is_error\":true"
            } else {
                b",\"is_error\":false"
            });
        }
    }
    if let Some(model) = &record.model {
        buf.extend_from_slice(b",\"model\":");
        write_str(buf, model);
    }
    if let Some(usage) = &record.usage {
        write_usage(buf, usage)?;
    }
    buf.extend_from_slice(b"}\n");
    Ok(input_at)
}

/// `,"usage":{…}` with the counts the harness recorded (at least one).
fn write_usage(buf: &mut Vec<u8>, usage: &Usage) -> io::Result<()> {
    buf.extend_from_slice(b",\"usage\":{");
    let counts = [
        ("input", usage.input),
        ("output", usage.output),
        ("cache_read", usage.cache_read),
        ("cache_write", usage.cache_write),
        ("reasoning", usage.reasoning),
    ];
    let mut first = true;
    for (name, count) in counts {
        let Some(count) = count else { continue };
        if !first {
            buf.push(b',');
        }
        first = false;
        write!(buf, "\"{name}\":{count}")?;
    }
    buf.push(b'}');
    Ok(())
}

/// Appends a record's text as [`write_str`] would. Text still held as the JSON token it was
/// read from is copied as it is: its escaping is the canonical one, which is what
/// [`write_str`] writes, unless it holds a character [`find_unsafe`] finds (the token leaves
/// those raw), which is rare.
fn write_text(buf: &mut Vec<u8>, text: &LazyText) {
    match text.json_token() {
        Some(token) if !has_unsafe(token.as_bytes()) => buf.extend_from_slice(token.as_bytes()),
        _ => write_str(buf, text),
    }
}

/// Strings up to this long are first checked byte by byte for anything to escape.
const SHORT: usize = 64;

/// Whether `s` is short and printable ASCII with no `"` or `\`: written as it is between
/// quotes. Ids, timestamps, names and models nearly all are, several per record, and for
/// them the scans of [`write_str`]'s general path cost more to start than their work.
fn is_short_plain(s: &[u8]) -> bool {
    s.len() <= SHORT
        && s.iter().fold(true, |plain, &b| {
            plain & ((0x20..0x7f).contains(&b) & (b != b'"') & (b != b'\\'))
        })
}

/// Appends `s` as a JSON string, escaped as [`to_writer`] escapes it: with SIMD, 16 or 32
/// bytes at a time, exactly as serde_json would, and each character [`find_unsafe`] finds (in
/// nearly no text) as `\uXXXX` between the runs. A test holds the two byte-identical.
fn write_str(buf: &mut Vec<u8>, s: &str) {
    if is_short_plain(s.as_bytes()) {
        buf.reserve(s.len() + 2);
        buf.push(b'"');
        buf.extend_from_slice(s.as_bytes());
        buf.push(b'"');
        return;
    }
    if !has_unsafe(s.as_bytes()) {
        json_escape_simd::escape_into(s, buf);
        return;
    }
    buf.push(b'"');
    let mut rest = s;
    while !rest.is_empty() {
        let (run, control) = match find_unsafe(rest.as_bytes()) {
            // Both ends are character boundaries: `at` starts one, `at + len` ends it.
            Some((at, len)) => (&rest[..at], Some(&rest[at..at + len])),
            None => (rest, None),
        };
        if !run.is_empty() {
            // The escaper writes the quotes too: keep only what is between them.
            let start = buf.len();
            json_escape_simd::escape_into(run, buf);
            buf.pop();
            buf.remove(start);
        }
        let Some(control) = control else { break };
        buf.extend_from_slice(&unicode_escape(control.as_bytes()));
        rest = &rest[run.len() + control.len()..];
    }
    buf.push(b'"');
}

pub fn page(out: &mut impl Write, info: &PageInfo<'_>, page: &Page) -> io::Result<()> {
    line(
        out,
        &PageLine {
            ty: "page",
            host: info.host,
            harness: info.harness,
            session: info.session,
            cursor: page.cursor.encode(),
            older: page.older,
            more: page.more,
            pending_tail: page.pending_tail,
            reset: page.reset,
            screen: &page.screen,
            filtered: info.filtered,
            unknown: page.unknown,
        },
    )
}

/// One `session` line; `head` (`ls --long`) adds `title` and `cwd`.
pub fn session(
    out: &mut impl Write,
    host: &str,
    session: &SessionFile,
    head: Option<&SessionHead>,
) -> io::Result<()> {
    line(
        out,
        &SessionLine {
            ty: "session",
            host,
            harness: session.harness().name(),
            session: &session.id,
            path: display_path(&session.entry.full_path()),
            size: session.entry.size,
            mtime: super::rfc3339(session.entry.mtime),
            title: head.map(|h| h.title.as_deref()),
            cwd: head.map(|h| h.cwd.as_deref()),
            writer_version: head.and_then(|h| h.writer_version.as_deref()),
        },
    )
}

pub fn activity(out: &mut impl Write, a: &Activity) -> io::Result<()> {
    line(
        out,
        &ActivityLine {
            ty: "activity",
            host: &a.host,
            harness: &a.harness,
            session: &a.session,
            change: change_name(a.change),
            new_records: a.new_records,
            last_ts: a.last_ts.as_deref(),
        },
    )
}

pub fn session_error(out: &mut impl Write, e: &SessionError) -> io::Result<()> {
    line(
        out,
        &ErrorLine {
            ty: "error",
            host: &e.host,
            harness: &e.harness,
            session: e.session.as_deref(),
            path: &e.path,
            message: &e.message,
        },
    )
}

pub fn host(out: &mut impl Write, r: &HostReport) -> io::Result<()> {
    fn root(r: &RootReport) -> RootLine<'_> {
        RootLine {
            harness: &r.harness,
            dir: &r.dir,
            exists: r.exists,
            sessions: r.sessions,
        }
    }
    line(
        out,
        &HostLine {
            ty: "host",
            name: &r.name,
            transport: &r.transport,
            shell: r.shell,
            ok: r.ok,
            error: r.error.as_deref(),
            connect_ms: r.connect_ms,
            exec_ms: r.exec_ms,
            list_ms: r.list_ms,
            uname: r.uname.as_deref(),
            host_key: r.host_key,
            auth: r.auth.as_deref(),
            connection: r.connection.as_deref(),
            clean_shell: r.clean_shell,
            shell_noise: r.shell_noise.as_deref(),
            roots: r.roots.iter().map(root).collect(),
            warnings: &r.warnings,
        },
    )
}

/// One `cached` line per file.
pub fn cached(out: &mut impl Write, files: &[CachedFileInfo]) -> io::Result<()> {
    for file in files {
        line(
            out,
            &CachedLine {
                ty: "cached",
                host: &file.host,
                harness: &file.harness,
                path: display_path(&file.path),
                bytes: file.bytes,
                used: super::cache::used(file),
            },
        )?;
    }
    Ok(())
}

/// The `cleared` line: what was removed, of one host (`host`) or of all (`null`).
pub fn cleared(out: &mut impl Write, host: Option<&str>, cleared: &Cleared) -> io::Result<()> {
    line(
        out,
        &ClearedLine {
            ty: "cleared",
            host,
            files: cleared.files,
            bytes: cleared.bytes,
        },
    )
}

pub fn resume(out: &mut impl Write, r: &ResumeReport<'_>) -> io::Result<()> {
    line(
        out,
        &ResumeLine {
            ty: "resume",
            host: r.host,
            harness: r.harness,
            session: r.session,
            command: r.command,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Claude text record of session `s`, with nothing else set.
    fn text_record(id: String, kind: TextKind, text: String) -> Record {
        Record {
            id,
            harness: clankie_engine::harness::by_name("claude").unwrap(),
            session: "s".into(),
            ts: None,
            agent: None,
            sidechain: false,
            body: RecordBody::Text {
                kind,
                text: text.into(),
            },
            model: None,
            usage: None,
        }
    }

    #[test]
    fn the_pipeline_gives_the_lines_of_each_batch_in_the_order_sent() {
        let batch = |n: usize| -> Vec<Record> {
            (0..n)
                .map(|i| {
                    let text = format!("line {i} \u{1b}[2J \"quoted\"");
                    text_record(format!("r{n}-{i}"), TextKind::Notice, text)
                })
                .collect()
        };
        let batches: Vec<Vec<Record>> = [3, 0, 500, 1, 2000].map(batch).into();
        let mut direct = Vec::new();
        for b in &batches {
            records(&mut direct, "h\"ost", b).unwrap();
        }
        let mut pipeline = Pipeline::start("h\"ost", false).unwrap();
        let mut piped = Vec::new();
        for b in &batches {
            pipeline.send(b.clone());
            for lines in pipeline.take(false) {
                piped.extend_from_slice(&lines);
                pipeline.recycle(lines);
            }
        }
        piped.extend(pipeline.take(true).concat());
        assert_eq!(pipeline.take(true), Vec::<Vec<u8>>::new());
        assert_eq!(
            String::from_utf8(piped).unwrap(),
            String::from_utf8(direct).unwrap()
        );
    }

    #[test]
    fn a_batch_of_ordinary_records_is_written_within_the_capacity_estimated_for_it() {
        let claude = clankie_engine::harness::by_name("claude").unwrap();
        let prose =
            "The build failed on `cargo test`; the \"fixture\" path was wrong.\n".repeat(12);
        let token = serde_json::to_string(&prose).unwrap();
        let record = |i: usize, body: RecordBody| Record {
            id: format!("5b0c7a4e-2f61-4d0b-9a57-8d1e0c3f6a21#{i}"),
            harness: claude,
            session: "3f1c2a00-0000-4000-8000-000000000000".into(),
            ts: Some("2026-12-02T10:41:07.123Z".into()),
            agent: None,
            sidechain: false,
            body,
            model: Some("claude-sonnet-4-5".into()),
            usage: None,
        };
        let batch: Vec<Record> = (0..300)
            .map(|i| {
                let body = match i % 4 {
                    0 => RecordBody::Text {
                        kind: TextKind::Assistant,
                        text: LazyText::from_json_token(&token).unwrap(),
                    },
                    1 => RecordBody::Text {
                        kind: TextKind::User,
                        text: prose.clone().into(),
                    },
                    2 => RecordBody::ToolCall {
                        call_id: format!("toolu_01{i:022}"),
                        name: "Bash".into(),
                        input: serde_json::json!({"command": "cargo test --workspace", "description": "Run the tests"}),
                        by_user: false,
                    },
                    _ => RecordBody::ToolResult {
                        call_id: format!("toolu_01{i:022}"),
                        output: LazyText::from_json_token(&token).unwrap(),
                        is_error: false,
                    },
                };
                record(i, body)
            })
            .collect();
        let mut written = Vec::new();
        records(&mut written, "devbox", &batch).unwrap();
        let estimate = lines_len_estimate("devbox".len(), &batch);
        assert!(
            (written.len()..written.len() * 3 / 2).contains(&estimate),
            "estimated {estimate} bytes for {} written",
            written.len()
        );
    }

    /// A caller that waits writes the batches the thread has not started (here, with no
    /// thread, all of them), redacted, in the order sent; a batch over a piece's size is
    /// written in pieces.
    #[test]
    fn a_waiting_caller_writes_the_batches_no_thread_started() {
        let mut pipeline = Pipeline::unstarted("devbox", true);
        let batch = |from: usize, n: usize| -> Vec<Record> {
            (from..from + n)
                .map(|i| {
                    let text = format!("export API_KEY=k{i}x9Zq4Lw2");
                    text_record(format!("r{i}"), TextKind::User, text)
                })
                .collect()
        };
        let batches = [
            batch(0, 3),
            batch(3, PIECE_RECORDS * 2 + 1),
            batch(PIECE_RECORDS * 2 + 4, 1),
        ];
        let mut want = batches.concat();
        clankie_engine::redact::redact_records(&mut want);
        let mut direct = Vec::new();
        records(&mut direct, "devbox", &want).unwrap();
        for b in batches {
            pipeline.send(b);
        }
        assert_eq!(pipeline.take(false), Vec::<Vec<u8>>::new());
        let lines = pipeline.take(true);
        assert_eq!(lines.len(), 5, "the middle batch in three pieces");
        let piped = String::from_utf8(lines.concat()).unwrap();
        assert!(!piped.contains("x9Zq4Lw2"), "not redacted");
        assert_eq!(piped, String::from_utf8(direct).unwrap());
    }

    /// A tool call's input is written first and looked at as written: the lines are those of
    /// the records redacted first, whether a secret is in a string, under a secret-named key
    /// (a number too), in a key's escaped quotes, or nowhere.
    #[test]
    fn tool_inputs_looked_at_as_written_are_redacted_as_records_redacted_first() {
        let claude = clankie_engine::harness::by_name("claude").unwrap();
        let inputs = [
            serde_json::json!({"command": "ls -l src", "description": "List the sources"}),
            serde_json::json!({"command": "export GITHUB_TOKEN=ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"}),
            serde_json::json!({"env": {"api_key": 12345678901234_u64, "port": 8080}}),
            serde_json::json!({"headers": [{"Authorization": "Bearer x9Zq4Lw2x9Zq4Lw2"}]}),
            serde_json::json!({"url": "postgres://app:s3cr3t-pw@db:5432/app", "n": [1, 2]}),
            serde_json::json!({"note": "a broken token-free \"auth\" word", "tty": "\u{1b}[0m"}),
            serde_json::json!({"password": "hunter2!x"}),
        ];
        let batch: Vec<Record> = inputs
            .iter()
            .enumerate()
            .map(|(i, input)| Record {
                id: format!("r{i}"),
                harness: claude,
                session: "3f1c2a00-0000-4000-8000-000000000000".into(),
                ts: None,
                agent: None,
                sidechain: false,
                body: RecordBody::ToolCall {
                    call_id: format!("toolu_{i}"),
                    name: "Bash".into(),
                    input: input.clone(),
                    by_user: false,
                },
                model: None,
                usage: None,
            })
            .collect();
        let mut want = batch.clone();
        clankie_engine::redact::redact_records(&mut want);
        let mut direct = Vec::new();
        records(&mut direct, "devbox", &want).unwrap();
        let mut pipeline = Pipeline::unstarted("devbox", true);
        pipeline.send(batch);
        let piped = String::from_utf8(pipeline.take(true).concat()).unwrap();
        for secret in [
            "ghp_a1B2",
            "12345678901234",
            "x9Zq4Lw2",
            "s3cr3t-pw",
            "hunter2",
        ] {
            assert!(!piped.contains(secret), "{secret} not redacted");
        }
        assert!(piped.contains("List the sources"));
        assert_eq!(piped, String::from_utf8(direct).unwrap());
    }

    /// What every string must look like: serde_json's escaping, then each terminal control
    /// that serde_json leaves raw as `\uXXXX`.
    fn reference(s: &str) -> String {
        let mut want = String::new();
        for c in serde_json::to_string(s).unwrap().chars() {
            if is_terminal_control(c) {
                for unit in c.encode_utf16(&mut [0; 2]) {
                    want += &format!("\\u{unit:04x}");
                }
            } else {
                want.push(c);
            }
        }
        want
    }

    fn is_terminal_control(c: char) -> bool {
        is_escaped(c)
    }

    #[test]
    fn strings_are_escaped_like_serde_json_and_terminal_controls_too() {
        let mut cases: Vec<String> = (0u8..=0x7f)
            .map(|b| format!("ab{}cdefghij{}", b as char, b as char))
            .collect();
        cases.extend(
            [
                "",
                "\"",
                "\\",
                "plain ascii text that is long enough",
                "ünïcödé 日本 🎉\u{2028}",
                "\x7f\u{85}\u{202e}",
                // Neighbours of the escaped ranges stay raw.
                "\u{a0}\u{2027}\u{202f}\u{2065}\u{206a}\u{2014}“quoted”…",
                // Other characters that start with the lead bytes 0xC2 and 0xE2.
                "\u{a0}\u{bf}\u{2000}\u{2081}\u{20ac}\u{2080}\u{2fff}",
            ]
            .map(String::from),
        );
        cases.extend((0x7fu32..=0xbf).chain(0x2026..=0x2070).map(|c| {
            let c = char::from_u32(c).unwrap();
            format!("{c}a{c}{c}b")
        }));
        cases.push("x\"y\\z\n".repeat(37));
        // Plain ASCII around the length up to which it is copied without the SIMD escaper,
        // with the printable range's ends.
        for len in 60..70 {
            cases.push(" ~".repeat(len)[..len].to_string());
            cases.push(format!("{}\u{7f}", "a".repeat(len)));
        }
        // Every length around the 16- and 32-byte blocks, with a byte to escape (or a multibyte
        // character) at every place, since the escaper works a block at a time.
        for len in 0..80 {
            for special in [
                "\"", "\\", "\n", "\u{1}", "\u{1f}", "\u{7f}", "é", "日", "🎉", "\u{9b}",
                "\u{2029}", "\u{2067}",
            ] {
                for at in 0..len {
                    let mut s = "a".repeat(len);
                    s.replace_range(at..at + 1, special);
                    cases.push(s);
                }
            }
        }
        // Appending keeps what the buffer already holds.
        let mut buf = b"{\"x\":".to_vec();
        for s in cases {
            buf.truncate(5);
            write_str(&mut buf, &s);
            let got = String::from_utf8(buf[5..].to_vec()).unwrap();
            assert_eq!(got, reference(&s), "{s:?}");
            assert_eq!(&buf[..5], b"{\"x\":");
            assert!(!got.chars().any(is_terminal_control), "{got:?}");
            // The same string after parsing.
            assert_eq!(serde_json::from_str::<String>(&got).unwrap(), s);
            // The serde path (lines other than records, tool inputs) writes the same bytes.
            let mut via_serde = Vec::new();
            to_writer(&mut via_serde, &s).unwrap();
            assert_eq!(String::from_utf8(via_serde).unwrap(), got, "{s:?}");
            // A record's text held as the token a transcript holds (serde_json's escaping,
            // which leaves terminal controls raw) comes out the same.
            let token = serde_json::to_string(&s).unwrap();
            let lazy = LazyText::from_json_token(&token).unwrap();
            let mut via_token = Vec::new();
            write_text(&mut via_token, &lazy);
            assert_eq!(String::from_utf8(via_token).unwrap(), got, "{s:?}");
        }
    }

    #[test]
    fn the_block_scan_agrees_with_the_byte_scan_anywhere() {
        // Dense with other characters led by 0xE2 and 0xC2, so the block scan takes over, with
        // one character to escape (or none) at every place around the block edges.
        let fillers = ["a", "’", "—", "“", "\u{a9}", "…", "│"];
        for len in 0..150 {
            let base: Vec<&str> = (0..len).map(|i| fillers[i % fillers.len()]).collect();
            assert!(!has_unsafe(base.concat().as_bytes()), "{len}");
            for at in 0..len {
                for special in ["\u{7f}", "\u{85}", "\u{2028}", "\u{202e}", "\u{2069}"] {
                    let mut text = base.clone();
                    text[at] = special;
                    let text = text.concat();
                    assert!(has_unsafe(text.as_bytes()), "{text:?}");
                    assert!(find_unsafe(text.as_bytes()).is_some(), "{text:?}");
                }
            }
        }
        // The block scan alone, from inside a character, at every length.
        for len in 0..200 {
            let s = "’".repeat(len) + "\u{7f}";
            for from in 0..s.len() {
                assert!(has_unsafe_in_blocks(&s.as_bytes()[from..]), "{len} {from}");
                assert!(!has_unsafe_in_blocks(&s.as_bytes()[from..s.len() - 1]));
            }
        }
    }

    #[test]
    fn every_escaped_character_starts_with_a_lead_byte_the_first_look_takes() {
        let mut escaped = 0;
        for c in (0..=u32::from(char::MAX)).filter_map(char::from_u32) {
            if is_escaped(c) {
                escaped += 1;
                let mut utf8 = [0; 4];
                let lead = c.encode_utf8(&mut utf8).as_bytes()[0];
                assert_eq!(may_lead_escaped(lead), 1, "{c:?} ({lead:#x})");
            }
        }
        assert!(escaped > 4000, "{escaped}");
        // And no byte that starts none: the first look rules out what it can.
        let leads = (0..=255u8).filter(|&x| may_lead_escaped(x) == 1).count();
        assert_eq!(leads, 10);
    }

    #[test]
    fn every_default_ignorable_and_bidi_control_character_is_escaped_and_nothing_else() {
        let (mut escaped, mut tables) = (0, 0);
        for &(first, last) in clankie_model::invisible::DEFAULT_IGNORABLE
            .iter()
            .chain(clankie_model::invisible::BIDI_CONTROL)
        {
            tables += u32::from(last) - u32::from(first) + 1;
        }
        // Every code point, alone and among prose that shares lead bytes with the escaped ones,
        // through both writers and both scans.
        for c in (0..=0x10ffffu32).filter_map(char::from_u32) {
            let mut utf8 = [0; 4];
            let bytes = c.encode_utf8(&mut utf8).as_bytes();
            let want = is_escaped(c);
            assert_eq!(unsafe_len(bytes, 0) > 0, want, "{c:?}");
            // The scans over text: for the escaped characters, their neighbours, and a sample.
            let near = |d: i64| {
                char::from_u32((i64::from(u32::from(c)) + d) as u32).is_some_and(is_escaped)
            };
            if !(want || near(-1) || near(1) || u32::from(c) % 61 == 0) {
                continue;
            }
            let dense = format!("’{c}—");
            assert_eq!(has_unsafe_in_blocks(dense.as_bytes()), want, "{c:?}");
            assert_eq!(has_unsafe(dense.as_bytes()), want, "{c:?}");
            if want {
                escaped += 1;
                let mut buf = Vec::new();
                write_str(&mut buf, &dense);
                let written = String::from_utf8(buf).unwrap();
                assert!(!written.contains(c), "{c:?} raw in {written}");
                assert_eq!(serde_json::from_str::<String>(&written).unwrap(), dense);
                let mut via_serde = Vec::new();
                to_writer(&mut via_serde, &dense).unwrap();
                assert_eq!(String::from_utf8(via_serde).unwrap(), written, "{c:?}");
            }
        }
        // The tables (they overlap: every bidi control is default-ignorable), DEL, the C1
        // controls and the two separators.
        assert!(escaped >= tables - 13 + 33 + 2, "{escaped} of {tables}");
        for c in ['\u{200f}', '\u{61c}', '\u{200b}'] {
            let mut buf = Vec::new();
            write_str(&mut buf, &format!("a{c}b"));
            assert_eq!(buf, format!("\"a\\u{:04x}b\"", u32::from(c)).into_bytes());
        }
    }

    #[test]
    fn the_byte_scan_finds_whole_characters_only() {
        assert_eq!(find_unsafe(b"ab\x7f"), Some((2, 1)));
        assert_eq!(find_unsafe("a\u{85}".as_bytes()), Some((1, 2)));
        assert_eq!(find_unsafe("ab\u{2069}".as_bytes()), Some((2, 3)));
        // Cut-off sequences (a fragment never ends in one, but the scan must not care).
        for cut in [&b"ab\xc2"[..], b"\xe2", b"\xe2\x80", b"\xe2\x81"] {
            assert_eq!(find_unsafe(cut), None, "{cut:?}");
        }
        assert_eq!(unicode_escape("\u{9b}".as_bytes()), b"\\u009b");
        assert_eq!(unicode_escape("\u{202a}".as_bytes()), b"\\u202a");
        assert_eq!(unicode_escape("\u{e0041}".as_bytes()), b"\\udb40\\udc41");
    }

    #[test]
    fn terminal_controls_in_keys_and_nested_values_are_escaped() {
        let value =
            serde_json::json!({"k\u{202e}": ["\u{1b}[31m\u{9b}2J", {"n": "a\u{2028}b\u{7f}"}]});
        let mut out = Vec::new();
        to_writer(&mut out, &value).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            r#"{"k\u202e":["\u001b[31m\u009b2J",{"n":"a\u2028b\u007f"}]}"#
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            value
        );
    }

    #[test]
    fn activity_and_host_lines_keep_their_fields_and_order() {
        let change = Activity {
            host: "dev".into(),
            harness: "claude".into(),
            session: "s1".into(),
            change: crate::check::Change::Grew,
            new_records: 3,
            last_ts: None,
            records: Vec::new(),
        };
        let mut out = Vec::new();
        activity(&mut out, &change).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"type\":\"activity\",\"host\":\"dev\",\"harness\":\"claude\",\"session\":\"s1\",\
             \"change\":\"grew\",\"new_records\":3,\"last_ts\":null}\n"
        );

        // Without --check: only what the hosts file says.
        let mut report = HostReport {
            name: "dev".into(),
            transport: "ssh me@dev".into(),
            shell: "auto",
            ..HostReport::default()
        };
        let mut out = Vec::new();
        host(&mut out, &report).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"type\":\"host\",\"name\":\"dev\",\"transport\":\"ssh me@dev\",\"shell\":\"auto\"}\n"
        );
        report.ok = Some(true);
        report.connect_ms = Some(12);
        report.exec_ms = Some(3);
        report.list_ms = Some(4);
        report.uname = Some("Linux".into());
        report.host_key = Some("known");
        report.auth = Some("agent".into());
        report.clean_shell = Some(false);
        report.shell_noise = Some("hi".into());
        report.roots.push(RootReport {
            harness: "claude".into(),
            dir: "/h/.claude".into(),
            exists: true,
            sessions: 2,
        });
        report.warnings.push("w".into());
        let mut out = Vec::new();
        host(&mut out, &report).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"type\":\"host\",\"name\":\"dev\",\"transport\":\"ssh me@dev\",\"shell\":\"auto\",\
             \"ok\":true,\"connect_ms\":12,\"exec_ms\":3,\"list_ms\":4,\"uname\":\"Linux\",\
             \"host_key\":\"known\",\"auth\":\"agent\",\"clean_shell\":false,\"shell_noise\":\"hi\",\
             \"roots\":[{\"harness\":\"claude\",\"dir\":\"/h/.claude\",\"exists\":true,\"sessions\":2}],\
             \"warnings\":[\"w\"]}\n"
        );
        let failed = HostReport {
            ok: Some(false),
            error: Some("dev: cannot connect".into()),
            ..HostReport::default()
        };
        let mut out = Vec::new();
        host(&mut out, &failed).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert!(
            line.ends_with(",\"ok\":false,\"error\":\"dev: cannot connect\"}\n"),
            "{line}"
        );
    }

    #[test]
    fn record_lines_parse_back() {
        let base = Record {
            id: "u#0".into(),
            harness: clankie_engine::harness::by_name("claude").unwrap(),
            session: "s\"x".into(),
            ts: None,
            agent: Some("a1".into()),
            sidechain: true,
            body: RecordBody::ToolCall {
                call_id: "t".into(),
                name: "Bash".into(),
                input: serde_json::json!({"k": [1, "\u{1b}"]}),
                by_user: false,
            },
            model: None,
            usage: None,
        };
        let mut out = Vec::new();
        records(&mut out, "dev\u{1b}", std::slice::from_ref(&base)).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["host"], "dev\u{1b}");
        assert!(v.get("model").is_none() && v.get("usage").is_none(), "{v}");
        assert_eq!(v["session"], "s\"x");
        assert_eq!(v["input"]["k"][1], "\u{1b}");
        assert_eq!(v["sidechain"], true);
        assert_eq!(v["ts"], serde_json::Value::Null);
        assert_eq!(v["kind"], "tool_call");

        let answer = Record {
            body: RecordBody::Text {
                kind: TextKind::Assistant,
                text: "hi".into(),
            },
            model: Some("claude-opus-4-5".into()),
            usage: Some(Box::new(Usage {
                input: Some(3),
                output: Some(13),
                cache_read: Some(11515),
                ..Usage::default()
            })),
            ..base
        };
        let mut out = Vec::new();
        records(&mut out, "local", &[answer]).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"type\":\"record\",\"id\":\"u#0\",\"kind\":\"assistant\",\"host\":\"local\",\
             \"harness\":\"claude\",\"session\":\"s\\\"x\",\"ts\":null,\"agent\":\"a1\",\
             \"sidechain\":true,\"text\":\"hi\",\"model\":\"claude-opus-4-5\",\
             \"usage\":{\"input\":3,\"output\":13,\"cache_read\":11515}}\n"
        );
    }
}
