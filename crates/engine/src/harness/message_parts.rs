//! The session / message / part schema family: the SQLite database of OpenCode (1.2+) and of
//! its forks (Kilo Code), whose `session`, `message` and `part` tables (and the 2.x
//! `session_v2` / `session_message`) hold the same rows. Rows to records, shared by every
//! harness that writes this schema: each harness's module keeps what differs (where its
//! database lives, its tools, its tested release, its resume command) and asks this one for the
//! rows. Pure: its queries run on the driver's SQLite (reading the host's pages) through
//! [`Database`].
//!
//! Order is upstream's: messages by `(time_created, id)`, parts of a message by `id`. Ids are
//! the part ids (`prt_…`), tool parts giving `<prt>:call` and `<prt>:result`, message-level
//! notices `<msg>:error`. Reasoning parts are `thinking` records. Only final rows become
//! records: an assistant message is held back whole until it has completed (`time.completed`,
//! or an error), because the writer puts its `modelID` and `tokens` in while the parts are still
//! coming; until then the records stop before it (`pending_tail`), and it is returned once,
//! with its final model and usage. In a 2.x session a tool block still `pending` or `running`,
//! or text of a message without `finish`, stops the records there the same way.

use serde_json::Value;

use crate::SourceCtx;
use crate::database::{Database, IndexRead, QueryError, SessionRow, query_map};
use crate::records::{Out, count, json_arguments, stamp_model, str_of, text_of};
use crate::rows::{RowRecords, rfc3339_millis};
use clankie_model::{TextKind, Usage};

/// The sessions: 2.x rows (`session_v2`) win over the 1.x `session` rows of the same id; a
/// child session (task tool) is a subagent.
pub(super) fn sessions(db: &dyn Database) -> Result<Vec<SessionRow>, QueryError> {
    let mut out: Vec<SessionRow> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for table in ["session_v2", "session"] {
        if !db.has_table(table)? {
            continue;
        }
        db.will_scan(table)?;
        let sql = format!("SELECT id, parent_id, time_updated / 1000 FROM {table}");
        for row in query_map(db, &sql, &[], SessionRow::from_row)? {
            if seen.insert(row.id.clone()) {
                out.push(row);
            }
        }
    }
    Ok(out)
}

pub(super) fn records_of(db: &dyn Database, ctx: &SourceCtx) -> Result<RowRecords, QueryError> {
    let id = ctx.session.as_str();
    if is_v2(db, id)? {
        let rows = query_map(
            db,
            "SELECT id, type, time_created, data FROM session_message \
             WHERE session_id = ?1 ORDER BY seq",
            &[id],
            |r| {
                Ok(SessionMessageRow {
                    id: r.text(0)?,
                    kind: r.text(1)?,
                    time_created: r.int(2)?,
                    data: r.text(3)?,
                })
            },
        )?;
        return Ok(records_v2(ctx, &rows));
    }
    let messages = query_map(
        db,
        "SELECT id, time_created, data FROM message WHERE session_id = ?1 \
         ORDER BY time_created, id",
        &[id],
        message_row,
    )?;
    let parts = query_map(
        db,
        "SELECT id, message_id, time_created, data FROM part WHERE session_id = ?1 \
         ORDER BY message_id, id",
        &[id],
        part_row,
    )?;
    Ok(records(ctx, &messages, &parts))
}

/// The newest messages and their parts: `limit` messages, four times as many while they
/// give fewer than `limit` records, all of them at most. A message's records depend on it
/// and its parts only, so those of the newest messages are the newest records; one thing
/// differs from a read of all: a message left unfinished before them (OpenCode stopped
/// mid-answer) does not hold back the records after it here.
pub(super) fn newest_records(
    db: &dyn Database,
    ctx: &SourceCtx,
    limit: usize,
) -> Result<RowRecords, QueryError> {
    let id = ctx.session.as_str();
    if is_v2(db, id)? {
        return records_of(db, ctx);
    }
    let mut wanted = limit.max(1);
    loop {
        db.will_read(&newest_hint(id, wanted))?;
        let mut messages = query_map(
            db,
            &format!(
                "SELECT id, time_created, data FROM message WHERE session_id = ?1 \
                 ORDER BY time_created DESC, id DESC LIMIT {wanted}"
            ),
            &[id],
            message_row,
        )?;
        messages.reverse();
        let all = messages.len() < wanted;
        let ids: Vec<&str> = messages.iter().map(|m| m.id.as_str()).collect();
        db.will_read(&IndexRead {
            index: PART_INDEX,
            keys: ids.clone(),
            last: None,
            then: None,
        })?;
        let mut parts = Vec::new();
        // A few hundred parameters a query, well within SQLite's limit.
        for chunk in ids.chunks(500) {
            let placeholders = (2..chunk.len() + 2)
                .map(|n| format!("?{n}"))
                .collect::<Vec<_>>()
                .join(", ");
            let mut params = vec![id];
            params.extend_from_slice(chunk);
            parts.extend(query_map(
                db,
                &format!(
                    "SELECT id, message_id, time_created, data FROM part \
                     WHERE message_id IN ({placeholders}) AND +session_id = ?1 \
                     ORDER BY message_id, id"
                ),
                &params,
                part_row,
            )?);
        }
        let mut rows = records(ctx, &messages, &parts);
        if all || rows.records.len() >= limit {
            rows.older_omitted = !all;
            return Ok(rows);
        }
        // Within what SQLite's LIMIT takes; a session has far fewer messages.
        wanted = wanted.saturating_mul(4).min(i64::MAX as usize);
    }
}

/// The newest `limit` messages through OpenCode's index, then their parts (the index's
/// third column is the message's id: its parts' key).
pub(super) fn newest_hint(id: &str, limit: usize) -> IndexRead<'_> {
    IndexRead {
        index: MESSAGE_INDEX,
        keys: vec![id],
        last: Some(limit.max(1)),
        then: Some((PART_INDEX, 2)),
    }
}

pub(super) fn cwd(db: &dyn Database, id: &str) -> Result<Option<String>, QueryError> {
    for table in ["session_v2", "session"] {
        if !db.has_table(table)? {
            continue;
        }
        let sql = format!("SELECT directory FROM {table} WHERE id = ?1");
        let found = query_map(db, &sql, &[id], |r| r.opt_text(0))?;
        if let Some(cwd) = found.into_iter().flatten().next() {
            return Ok(Some(cwd));
        }
    }
    Ok(None)
}

pub(super) fn title(db: &dyn Database, id: &str) -> Result<Option<String>, QueryError> {
    for table in ["session_v2", "session"] {
        if !db.has_table(table)? {
            continue;
        }
        let sql = format!("SELECT title FROM {table} WHERE id = ?1");
        let found = query_map(db, &sql, &[id], |r| r.opt_text(0))?;
        if let Some(title) = found.into_iter().flatten().next() {
            return Ok(Some(title));
        }
    }
    Ok(None)
}

/// Whether a session is read from `session_message` (2.x): it has a `session_v2` row, or
/// (1.18.33 already has the table, keyed to `session`) it has `session_message` rows and no
/// `message` rows.
fn is_v2(db: &dyn Database, id: &str) -> Result<bool, QueryError> {
    if !db.has_table("session_message")? {
        return Ok(false);
    }
    if db.has_table("session_v2")? && db.exists("SELECT 1 FROM session_v2 WHERE id = ?1", &[id])? {
        return Ok(true);
    }
    Ok(db.exists(
        "SELECT 1 FROM session_message WHERE session_id = ?1 LIMIT 1",
        &[id],
    )? && !(db.has_table("message")?
        && db.exists("SELECT 1 FROM message WHERE session_id = ?1 LIMIT 1", &[id])?))
}

/// OpenCode's index of messages by session, in order (`message_session_time_created_id_idx`).
const MESSAGE_INDEX: &str = "message_session_time_created_id_idx";
/// OpenCode's index of parts by message (`part_message_id_id_idx`).
const PART_INDEX: &str = "part_message_id_id_idx";

/// A row of `SELECT id, time_created, data FROM message`.
fn message_row(r: &crate::database::Row<'_>) -> Result<MessageRow, QueryError> {
    Ok(MessageRow {
        id: r.text(0)?,
        time_created: r.int(1)?,
        data: r.text(2)?,
    })
}

/// A row of `SELECT id, message_id, time_created, data FROM part`.
fn part_row(r: &crate::database::Row<'_>) -> Result<PartRow, QueryError> {
    Ok(PartRow {
        id: r.text(0)?,
        message_id: r.text(1)?,
        time_created: r.int(2)?,
        data: r.text(3)?,
    })
}

/// A `message` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MessageRow {
    pub(super) id: String,
    pub(super) time_created: i64,
    /// `MessageV2.Info` minus ids, as JSON.
    pub(super) data: String,
}

/// A `part` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PartRow {
    pub(super) id: String,
    pub(super) message_id: String,
    pub(super) time_created: i64,
    pub(super) data: String,
}

/// The records of one session. `messages` in `(time_created, id)` order; `parts` in any order
/// (they are grouped by message and ordered by id here).
pub(super) fn records(ctx: &SourceCtx, messages: &[MessageRow], parts: &[PartRow]) -> RowRecords {
    records_until(ctx, messages, parts, &Default::default())
}

/// [`records`], stopping (`pending`) before the first message or part whose id is in `torn`
/// (a document caught mid-write).
pub(super) fn records_until(
    ctx: &SourceCtx,
    messages: &[MessageRow],
    parts: &[PartRow],
    torn: &std::collections::HashSet<String>,
) -> RowRecords {
    let mut parts: Vec<&PartRow> = parts.iter().collect();
    parts.sort_by(|a, b| (&a.message_id, &a.id).cmp(&(&b.message_id, &b.id)));
    let mut out = RowRecords::default();
    for message in messages {
        if torn.contains(&message.id) {
            out.pending = true;
            return out;
        }
        let info = match serde_json::from_str::<Value>(&message.data) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => {
                malformed(ctx, &mut out, &message.id, "not a JSON object".into());
                continue;
            }
            Err(e) => {
                malformed(ctx, &mut out, &message.id, e.to_string());
                continue;
            }
        };
        let role = str_of(&info, "role");
        if !matches!(role, "user" | "assistant") {
            // A role newer than this reader, or a message without its role.
            out.unknown_here();
        }
        let error = info.get("error").filter(|e| !e.is_null());
        let finished =
            role != "assistant" || info.pointer("/time/completed").is_some() || error.is_some();
        if !finished {
            // Its model and usage are not final yet: nothing of it until it has completed.
            out.pending = true;
            return out;
        }
        let first = out.records.len();
        let start = parts.partition_point(|p| p.message_id < message.id);
        let end = parts.partition_point(|p| p.message_id <= message.id);
        for part in &parts[start..end] {
            if torn.contains(&part.id) {
                out.pending = true;
                return out;
            }
            let data = match serde_json::from_str::<Value>(&part.data) {
                Ok(v) => v,
                Err(e) => {
                    malformed(ctx, &mut out, &part.id, e.to_string());
                    continue;
                }
            };
            if !map_part(ctx, &mut out, role, finished, part, &data) {
                out.pending = true;
                return out;
            }
        }
        if role == "assistant" {
            let usage = info.get("tokens").and_then(|t| {
                Usage {
                    input: count(t, "input"),
                    output: count(t, "output"),
                    cache_read: t.get("cache").and_then(|c| count(c, "read")),
                    cache_write: t.get("cache").and_then(|c| count(c, "write")),
                    reasoning: count(t, "reasoning"),
                }
                .nonempty()
            });
            let model = Some(str_of(&info, "modelID")).filter(|m| !m.is_empty());
            stamp_model(&mut out.records[first..], model, usage);
        }
        if let Some(error) = error {
            let name = str_of(error, "name");
            let text = match error.pointer("/data/message").and_then(Value::as_str) {
                _ if name == "MessageAbortedError" => "aborted".to_string(),
                Some(message) => format!("error: {name}: {message}"),
                None => format!("error: {name}"),
            };
            let mut o = Out::new(ctx, ms(info.pointer("/time/created")));
            o.text(format!("{}:error", message.id), TextKind::Notice, text);
            out.records.extend(o.records);
        }
    }
    out
}

/// A `session_message` row (OpenCode 2.x, table `session_message`, read in `seq` order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SessionMessageRow {
    pub(super) id: String,
    pub(super) kind: String,
    pub(super) time_created: i64,
    pub(super) data: String,
}

/// The records of one OpenCode 2.x session (`session_message` rows in `seq` order). Shapes per
/// the formats doc §3.4 (reported by third-party readers, not seen in a real 2.x database):
/// user/synthetic `{text}`; assistant `{content:[text | reasoning | tool{name, callID, state}],
/// finish?, time}`; compaction; shell `{command, output:{output}}`. Ids: `<id>` for a whole
/// row, `<id>#<content index>` for an assistant block (`:call` / `:result` for a tool).
pub(super) fn records_v2(ctx: &SourceCtx, rows: &[SessionMessageRow]) -> RowRecords {
    let mut out = RowRecords::default();
    for row in rows {
        let data = match serde_json::from_str::<Value>(&row.data) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => {
                malformed(ctx, &mut out, &row.id, "not a JSON object".into());
                continue;
            }
            Err(e) => {
                malformed(ctx, &mut out, &row.id, e.to_string());
                continue;
            }
        };
        let ts =
            ms(data.pointer("/time/created")).or_else(|| Some(rfc3339_millis(row.time_created)));
        let mut o = Out::new(ctx, ts);
        let id = row.id.clone();
        match row.kind.as_str() {
            "user" => o.text(id, TextKind::User, str_of(&data, "text").to_string()),
            "synthetic" => o.text(id, TextKind::Notice, str_of(&data, "text").to_string()),
            "compaction" => o.text(id, TextKind::Notice, "context compacted".to_string()),
            "shell" => {
                let output = text_of(data.pointer("/output/output"));
                o.call(
                    format!("{id}:call"),
                    &id,
                    "bash",
                    serde_json::json!({ "command": str_of(&data, "command") }),
                );
                o.result(format!("{id}:result"), &id, output, false);
            }
            "assistant" => {
                let finished = data.get("finish").is_some_and(|f| !f.is_null())
                    || data.pointer("/time/completed").is_some()
                    || data.get("error").is_some_and(|e| !e.is_null());
                if !finished {
                    // Held back whole until it ends, as a 1.x message is.
                    out.pending = true;
                    return out;
                }
                let blocks = data.get("content").and_then(Value::as_array);
                for (i, block) in blocks.into_iter().flatten().enumerate() {
                    let bid = format!("{id}#{i}");
                    match str_of(block, "type") {
                        "text" => {
                            o.text(bid, TextKind::Assistant, str_of(block, "text").to_string());
                        }
                        "tool" => {
                            let state = block.get("state").unwrap_or(&Value::Null);
                            let status = str_of(state, "status");
                            let call_id = match str_of(block, "callID") {
                                "" => bid.as_str(),
                                call => call,
                            };
                            let (output, is_error) = match status {
                                "completed" => (content_text(state), false),
                                "error" => match state.get("error") {
                                    Some(e) if !e.is_null() => (text_of(Some(e)), true),
                                    _ => (content_text(state), true),
                                },
                                _ => (format!("tool did not finish (status `{status}`)"), true),
                            };
                            let call_id = call_id.to_string();
                            o.call(
                                format!("{bid}:call"),
                                &call_id,
                                str_of(block, "name"),
                                json_arguments(state.get("input")),
                            );
                            o.result(format!("{bid}:result"), &call_id, output, is_error);
                        }
                        "reasoning" => {
                            o.text(bid, TextKind::Thinking, str_of(block, "text").to_string())
                        }
                        // A block type newer than this reader.
                        _ => out.unknown_here(),
                    }
                }
            }
            "system" | "skill" | "agent-switched" | "model-switched" => {}
            // A row kind newer than this reader.
            _ => out.unknown_here(),
        }
        out.records.extend(o.records);
    }
    out
}

/// A 2.x tool state's `content` text blocks, joined.
fn content_text(state: &Value) -> String {
    state
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| str_of(b, "type") == "text")
        .map(|b| str_of(b, "text"))
        .collect::<Vec<_>>()
        .join("")
}

/// Maps one part; `false` when the part is not final (the records stop before it).
fn map_part(
    ctx: &SourceCtx,
    out: &mut RowRecords,
    role: &str,
    finished: bool,
    part: &PartRow,
    data: &Value,
) -> bool {
    let ts = ms(data.pointer("/time/start"))
        .or_else(|| ms(data.pointer("/state/time/start")))
        .or_else(|| Some(rfc3339_millis(part.time_created)));
    let mut o = Out::new(ctx, ts);
    let id = part.id.clone();
    match str_of(data, "type") {
        "text" => {
            let text = str_of(data, "text").to_string();
            if data.get("ignored").and_then(Value::as_bool) == Some(true) {
            } else if data.get("synthetic").and_then(Value::as_bool) == Some(true) {
                o.text(id, TextKind::Notice, text);
            } else if role == "user" {
                o.text(id, TextKind::User, text);
            } else {
                if !finished && data.pointer("/time/end").is_none() {
                    return false;
                }
                o.text(id, TextKind::Assistant, text);
            }
        }
        "reasoning" => o.text(id, TextKind::Thinking, str_of(data, "text").to_string()),
        "file" if role == "user" => {
            let name = data
                .get("filename")
                .and_then(Value::as_str)
                .unwrap_or_else(|| str_of(data, "mime"));
            o.text(id, TextKind::User, format!("[file {name}]"));
        }
        "tool" => {
            let state = data.get("state").unwrap_or(&Value::Null);
            let status = str_of(state, "status");
            let call_id = match str_of(data, "callID") {
                "" => part.id.as_str(),
                call => call,
            };
            let (output, is_error) = match status {
                // A command that ran to its end completes whatever its exit code; the code, when
                // the tool reports one (bash's `metadata.exit`), says whether it failed.
                "completed" => (
                    text_of(state.get("output")),
                    state
                        .pointer("/metadata/exit")
                        .and_then(Value::as_i64)
                        .is_some_and(|code| code != 0),
                ),
                "error" => (text_of(state.get("error")), true),
                // An assistant message that ended (aborted, failed) leaves nothing to wait for.
                _ if finished => (format!("tool did not finish (status `{status}`)"), true),
                _ => return false,
            };
            o.call(
                format!("{id}:call"),
                call_id,
                str_of(data, "tool"),
                json_arguments(state.get("input")),
            );
            o.result(format!("{id}:result"), call_id, output, is_error);
        }
        "compaction" => {
            let auto = data.get("auto").and_then(Value::as_bool) == Some(true);
            let text = if auto {
                "context compacted (automatic)"
            } else {
                "context compacted"
            };
            o.text(id, TextKind::Notice, text.to_string());
        }
        "retry" => {
            let attempt = data.get("attempt").and_then(Value::as_u64).unwrap_or(0);
            let why = data
                .pointer("/error/data/message")
                .and_then(Value::as_str)
                .unwrap_or_else(|| str_of(data.get("error").unwrap_or(&Value::Null), "name"));
            o.text(id, TextKind::Notice, format!("retry {attempt}: {why}"));
        }
        "subtask" => {
            let text = format!(
                "subtask ({}): {}",
                str_of(data, "agent"),
                str_of(data, "description")
            );
            o.text(id, TextKind::Notice, text);
        }
        ty if SKIPPED_PARTS.contains(&ty) => {}
        // A part type newer than this reader, or a part without its type.
        _ => out.unknown_here(),
    }
    out.records.extend(o.records);
    true
}

/// Part types skipped on purpose: steps, snapshots, patches, agents, an assistant's files.
const SKIPPED_PARTS: &[&str] = &[
    "step-start",
    "step-finish",
    "snapshot",
    "patch",
    "agent",
    "file",
];

fn malformed(ctx: &SourceCtx, out: &mut RowRecords, key: &str, reason: String) {
    let mut o = Out::new(ctx, None);
    o.text(
        key.to_string(),
        TextKind::Notice,
        format!("malformed row {key} skipped: {reason}"),
    );
    out.records.extend(o.records);
    out.malformed.push((key.to_string(), reason));
}

/// A millisecond timestamp as RFC 3339.
fn ms(value: Option<&Value>) -> Option<String> {
    value.and_then(Value::as_i64).map(rfc3339_millis)
}
