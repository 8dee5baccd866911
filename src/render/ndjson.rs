//! NDJSON wire types: one JSON object per line with a `"type"`. Kept separate from the domain
//! types so field names stay stable when the model changes (docs/ndjson.md).

use std::io::{self, Write};

use serde::Serialize;

use super::PageInfo;
use crate::engine::plan::Page;
use crate::engine::session::SessionFile;
use crate::model::{Record, RecordBody, TextKind, display_path};

#[derive(Serialize)]
struct RecordLine<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    id: &'a str,
    kind: &'static str,
    harness: &'static str,
    session: &'a str,
    ts: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    sidechain: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    thinking: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    input: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_error: Option<bool>,
}

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

fn line(out: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value).map_err(io::Error::other)?;
    out.write_all(b"\n")
}

pub fn record(out: &mut impl Write, record: &Record) -> io::Result<()> {
    let mut wire = RecordLine {
        ty: "record",
        id: &record.id,
        kind: record.kind().name(),
        harness: record.harness.name(),
        session: &record.session,
        ts: record.ts.as_deref(),
        agent: record.agent.as_deref(),
        sidechain: record.sidechain,
        thinking: false,
        text: None,
        call_id: None,
        name: None,
        input: None,
        output: None,
        is_error: None,
    };
    match &record.body {
        RecordBody::Text { kind, text } => {
            wire.text = Some(text);
            wire.thinking = *kind == TextKind::Thinking;
        }
        RecordBody::ToolCall {
            call_id,
            name,
            input,
        } => {
            wire.call_id = Some(call_id);
            wire.name = Some(name);
            wire.input = Some(input);
        }
        RecordBody::ToolResult {
            call_id,
            output,
            is_error,
        } => {
            wire.call_id = Some(call_id);
            wire.output = Some(output);
            wire.is_error = Some(*is_error);
        }
    }
    line(out, &wire)
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
