//! NDJSON wire types: one JSON object per line with a `"type"`. Kept separate from the domain
//! types so field names stay stable when the model changes (docs/ndjson.md).

use std::io::{self, Write};

use serde::Serialize;

use super::{HostReport, PageInfo, RootReport, change_name};
use crate::check::Activity;
use clankie_engine::page::Page;
use clankie_engine::session::SessionFile;
use clankie_model::{Record, RecordBody, TextKind, display_path};

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

fn line(out: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value).map_err(io::Error::other)?;
    out.write_all(b"\n")
}

/// How many bytes of record lines are gathered before one write.
const BATCH_BYTES: usize = 64 << 10;

/// Writes `record` lines, gathered into writes of about [`BATCH_BYTES`].
pub fn records(out: &mut impl Write, records: &[Record]) -> io::Result<()> {
    let mut buf = Vec::with_capacity(BATCH_BYTES);
    for r in records {
        record(&mut buf, r)?;
        if buf.len() >= BATCH_BYTES {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)
}

/// Appends one `record` line to `buf`. Hand-written rather than derived: `--all --json` spends
/// most of its time writing strings, and [`write_str`] escapes them with SIMD where serde_json
/// goes byte by byte. The output is byte-identical to serde_json's (a test holds that).
fn record(buf: &mut Vec<u8>, record: &Record) -> io::Result<()> {
    buf.extend_from_slice(b"{\"type\":\"record\",\"id\":");
    write_str(buf, &record.id);
    buf.extend_from_slice(b",\"kind\":\"");
    buf.extend_from_slice(record.kind().name().as_bytes());
    buf.extend_from_slice(b"\",\"harness\":\"");
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
            buf.extend_from_slice(b",\"text\":");
            write_str(buf, text);
        }
        RecordBody::ToolCall {
            call_id,
            name,
            input,
        } => {
            buf.extend_from_slice(b",\"call_id\":");
            write_str(buf, call_id);
            buf.extend_from_slice(b",\"name\":");
            write_str(buf, name);
            buf.extend_from_slice(b",\"input\":");
            serde_json::to_writer(&mut *buf, input).map_err(io::Error::other)?;
        }
        RecordBody::ToolResult {
            call_id,
            output,
            is_error,
        } => {
            buf.extend_from_slice(b",\"call_id\":");
            write_str(buf, call_id);
            buf.extend_from_slice(b",\"output\":");
            write_str(buf, output);
            buf.extend_from_slice(if *is_error {
                b",\"is_error\":true"
            } else {
                b",\"is_error\":false"
            });
        }
    }
    buf.extend_from_slice(b"}\n");
    Ok(())
}

/// Appends `s` as a JSON string, escaped exactly as serde_json escapes it (SIMD, 16 or 32
/// bytes at a time; a test holds the two byte-identical).
fn write_str(buf: &mut Vec<u8>, s: &str) {
    json_escape_simd::escape_into(s, buf);
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
        },
    )
}

pub fn session(out: &mut impl Write, host: &str, session: &SessionFile) -> io::Result<()> {
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
            clean_shell: r.clean_shell,
            shell_noise: r.shell_noise.as_deref(),
            roots: r.roots.iter().map(root).collect(),
            warnings: &r.warnings,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_exactly_like_serde_json() {
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
            ]
            .map(String::from),
        );
        cases.push("x\"y\\z\n".repeat(37));
        // Every length around the 16- and 32-byte blocks, with a byte to escape (or a multibyte
        // character) at every place, since the escaper works a block at a time.
        for len in 0..80 {
            for special in [
                "\"", "\\", "\n", "\u{1}", "\u{1f}", "\u{7f}", "é", "日", "🎉",
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
            assert_eq!(
                String::from_utf8(buf[5..].to_vec()).unwrap(),
                serde_json::to_string(&s).unwrap(),
                "{s:?}"
            );
            assert_eq!(&buf[..5], b"{\"x\":");
        }
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
            },
        };
        let mut out = Vec::new();
        record(&mut out, &base).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["session"], "s\"x");
        assert_eq!(v["input"]["k"][1], "\u{1b}");
        assert_eq!(v["sidechain"], true);
        assert_eq!(v["ts"], serde_json::Value::Null);
        assert_eq!(v["kind"], "tool_call");
    }
}
