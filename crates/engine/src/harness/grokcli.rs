//! grok-cli (`grok-dev`, `~/.grok/grok.db`): rows of `messages` (Vercel AI SDK `ModelMessage`
//! JSON, INSERT-only, ordered by `seq`) and `tool_calls` / `tool_results` to records. Pure: its
//! queries run on the driver's SQLite (reading the host's pages) through [`Database`].
//!
//! Ids are `<seq>#<part index>`. A `tool-call` part whose `tool_calls` row is still pending or
//! running stops the records there (`pending_tail`); `is_error` of a result comes from
//! `tool_results.success`, else from an `error-*` output type.

use std::collections::HashMap;

use serde_json::Value;

use crate::SourceCtx;
use crate::records::{Out, image_placeholder, str_of, text_of};
use clankie_model::TextKind;

use crate::database::{Database, QueryError, SessionRow, query_map};
use crate::harness::{Format, PatchEnvelope, ToolRole, ToolVocabulary};
use crate::rows::RowRecords;
use clankie_model::{DefaultHome, Layout, ListSpec, Storage};

/// The community grok-cli (`grok-dev`).
pub(super) struct GrokCli;

/// grok-cli's tools: `bash`; the `str_replace_editor` (`path`, `old_str`/`new_str`,
/// `replace_all`), and the `file_path`/`old_string` shape of its later editors.
/// Its file tools: `view_file` (`start_line`, `end_line`), `search` (`query`).
static TOOLS: ToolVocabulary = ToolVocabulary {
    shell_tools: &["bash"],
    command_keys: &["command"],
    path_keys: &["path", "file_path"],
    snippet_keys: &[("old_str", "new_str"), ("old_string", "new_string")],
    replace_all_keys: &["replace_all"],
    edit_list_keys: &["edits"],
    write_tool_marks: &["write"],
    content_keys: &["content"],
    patch_tools: &[],
    patch_keys: &[],
    patch_envelope: &PatchEnvelope::NONE,
    roles: &[("view_file", ToolRole::Read), ("search", ToolRole::Search)],
    first_line_keys: &["start_line"],
    last_line_keys: &["end_line"],
    pattern_keys: &["query"],
    file_filter_keys: &["include_pattern"],
    ..ToolVocabulary::NONE
};

static LAYOUT: Layout = Layout {
    name: "grok-cli",
    // grok-cli hard-codes `os.homedir()/.grok`; no variable moves it.
    default_home: DefaultHome {
        env_var: None,
        env_relative: "",
        home_relative: ".grok",
    },
    list: ListSpec {
        subdirs: &[],
        suffixes: &[],
        max_depth: 0,
        top_files: &["grok.db", "grok.db-wal"],
    },
    db_env: None,
    storage: Storage::Database,
    id_globs: &[],
};

impl Format for GrokCli {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    fn database_sessions(&self, db: &dyn Database) -> Result<Vec<SessionRow>, QueryError> {
        if !db.has_table("sessions")? {
            return Ok(Vec::new());
        }
        query_map(
            db,
            "SELECT id, NULL, CAST(strftime('%s', updated_at) AS INTEGER) FROM sessions",
            &[],
            SessionRow::from_row,
        )
    }

    fn database_records(
        &self,
        db: &dyn Database,
        ctx: &SourceCtx,
    ) -> Result<RowRecords, QueryError> {
        let id = ctx.session.as_str();
        let messages = query_map(
            db,
            "SELECT seq, role, message_json, created_at FROM messages WHERE session_id = ?1 \
             ORDER BY seq",
            &[id],
            |r| {
                Ok(MessageRow {
                    seq: r.int(0)?,
                    role: r.text(1)?,
                    message_json: r.text(2)?,
                    created_at: r.text(3)?,
                })
            },
        )?;
        let calls = if db.has_table("tool_calls")? {
            query_map(
                db,
                "SELECT c.tool_call_id, c.status, \
                 (SELECT r.success FROM tool_results r WHERE r.tool_call_row_id = c.id \
                  ORDER BY r.id DESC LIMIT 1) \
                 FROM tool_calls c WHERE c.session_id = ?1",
                &[id],
                |r| {
                    Ok(ToolCallRow {
                        tool_call_id: r.text(0)?,
                        status: r.text(1)?,
                        success: r.opt_int(2)?.map(|s| s != 0),
                    })
                },
            )?
        } else {
            Vec::new()
        };
        Ok(records(ctx, &messages, &calls))
    }

    fn database_cwd(&self, db: &dyn Database, id: &str) -> Result<Option<String>, QueryError> {
        if !db.has_table("sessions")? {
            return Ok(None);
        }
        let found = query_map(
            db,
            "SELECT cwd_last FROM sessions WHERE id = ?1",
            &[id],
            |r| r.opt_text(0),
        )?;
        Ok(found.into_iter().flatten().next())
    }

    fn database_title(&self, db: &dyn Database, id: &str) -> Result<Option<String>, QueryError> {
        if !db.has_table("sessions")? {
            return Ok(None);
        }
        let found = query_map(db, "SELECT title FROM sessions WHERE id = ?1", &[id], |r| {
            r.opt_text(0)
        })?;
        Ok(found.into_iter().flatten().next())
    }

    fn tool_vocabulary(&self) -> &'static ToolVocabulary {
        &TOOLS
    }

    fn resume_command(&self, id: &str, _path: &str) -> String {
        format!("grok --session {}", crate::resume::shell_quote(id))
    }
}

/// A `messages` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MessageRow {
    pub(super) seq: i64,
    pub(super) role: String,
    pub(super) message_json: String,
    pub(super) created_at: String,
}

/// A `tool_calls` row joined with its `tool_results` row, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ToolCallRow {
    pub(super) tool_call_id: String,
    pub(super) status: String,
    /// `tool_results.success`, when a result row exists.
    pub(super) success: Option<bool>,
}

/// The records of one session; `messages` in `seq` order.
pub(super) fn records(
    ctx: &SourceCtx,
    messages: &[MessageRow],
    calls: &[ToolCallRow],
) -> RowRecords {
    let calls: HashMap<&str, &ToolCallRow> =
        calls.iter().map(|c| (c.tool_call_id.as_str(), c)).collect();
    let mut out = RowRecords::default();
    for message in messages {
        let key = message.seq.to_string();
        let value = match serde_json::from_str::<Value>(&message.message_json) {
            Ok(v) => v,
            Err(e) => {
                let mut o = Out::new(ctx, None);
                o.text(
                    key.clone(),
                    TextKind::Notice,
                    format!("malformed row {key} skipped: {e}"),
                );
                out.records.extend(o.records);
                out.malformed.push((key, e.to_string()));
                continue;
            }
        };
        let ts = Some(message.created_at.clone()).filter(|t| !t.is_empty());
        let mut o = Out::new(ctx, ts);
        let role = match str_of(&value, "role") {
            "" => message.role.as_str(),
            role => role,
        };
        let parts: Vec<Value> = match value.get("content") {
            Some(Value::String(text)) => vec![serde_json::json!({"type": "text", "text": text})],
            Some(Value::Array(parts)) => parts.clone(),
            // A message without its content: a renamed field.
            _ => {
                out.unknown_here();
                Vec::new()
            }
        };
        for (i, part) in parts.iter().enumerate() {
            let id = format!("{key}#{i}");
            match (role, str_of(part, "type")) {
                ("system", _) => {}
                ("user", "text") => o.text(id, TextKind::User, str_of(part, "text").into()),
                ("user", "image") => {
                    let url = part.get("image").and_then(Value::as_str).unwrap_or("");
                    o.text(id, TextKind::User, image_placeholder(url));
                }
                ("user", "file") => {
                    let name = part
                        .get("filename")
                        .and_then(Value::as_str)
                        .unwrap_or_else(|| str_of(part, "mediaType"));
                    o.text(id, TextKind::User, format!("[file {name}]"));
                }
                ("assistant", "text") => {
                    o.text(id, TextKind::Assistant, str_of(part, "text").into())
                }
                ("assistant", "tool-call") => {
                    let call_id = str_of(part, "toolCallId");
                    let status = calls.get(call_id).map_or("", |c| c.status.as_str());
                    if matches!(status, "pending" | "running" | "in_progress" | "started") {
                        out.records.extend(o.records);
                        out.pending = true;
                        return out;
                    }
                    let input = part
                        .get("input")
                        .or_else(|| part.get("args"))
                        .cloned()
                        .unwrap_or(Value::Object(Default::default()));
                    o.call(id, call_id, str_of(part, "toolName"), input);
                }
                (_, "tool-result") => {
                    let call_id = str_of(part, "toolCallId");
                    let output = part.get("output").or_else(|| part.get("result"));
                    let kind = output.map_or("", |o| str_of(o, "type"));
                    let is_error = match calls.get(call_id).and_then(|c| c.success) {
                        Some(success) => !success,
                        None => kind.starts_with("error"),
                    };
                    o.result(id, call_id, output_text(output), is_error);
                }
                (_, ty) if SKIPPED_PARTS.contains(&ty) => {}
                // A part type newer than this reader, or a role it does not know.
                _ => out.unknown_here(),
            }
        }
        out.records.extend(o.records);
    }
    out
}

/// Part types skipped on purpose: the model's reasoning.
const SKIPPED_PARTS: &[&str] = &["reasoning"];

/// An AI SDK tool output (`{type: "text"|"json"|"error-text"|…, value}`) as text.
fn output_text(output: Option<&Value>) -> String {
    let value = match output {
        Some(o) if o.get("type").is_some() && o.get("value").is_some() => o.get("value"),
        other => other,
    };
    text_of(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clankie_model::{RecordBody, RecordKind};

    fn ctx() -> SourceCtx {
        SourceCtx {
            host: "local".into(),
            harness: crate::test_support::harness("grok-cli"),
            session: "0123456789ab".into(),
            agent: None,
        }
    }

    fn row(seq: i64, role: &str, json: &str) -> MessageRow {
        MessageRow {
            seq,
            role: role.into(),
            message_json: json.into(),
            created_at: "2026-11-02T10:00:00.000Z".into(),
        }
    }

    #[test]
    fn messages_map_to_the_five_kinds() {
        let messages = [
            row(0, "system", r#"{"role":"system","content":"be brief"}"#),
            row(1, "user", r#"{"role":"user","content":"list files"}"#),
            row(
                2,
                "assistant",
                r#"{"role":"assistant","content":[{"type":"reasoning","text":"hm"},{"type":"text","text":"Sure."},{"type":"tool-call","toolCallId":"c1","toolName":"bash","input":{"command":"ls"}}]}"#,
            ),
            row(
                3,
                "tool",
                r#"{"role":"tool","content":[{"type":"tool-result","toolCallId":"c1","toolName":"bash","output":{"type":"text","value":"a\nb\n"}}]}"#,
            ),
        ];
        let done = [ToolCallRow {
            tool_call_id: "c1".into(),
            status: "completed".into(),
            success: Some(true),
        }];
        let rows = records(&ctx(), &messages, &done);
        assert!(!rows.pending);
        let got: Vec<_> = rows
            .records
            .iter()
            .map(|r| (r.id.as_str(), r.kind()))
            .collect();
        assert_eq!(
            got,
            [
                ("1#0", RecordKind::User),
                ("2#1", RecordKind::Assistant),
                ("2#2", RecordKind::ToolCall),
                ("3#0", RecordKind::ToolResult),
            ]
        );
        assert!(
            matches!(&rows.records[3].body, RecordBody::ToolResult { output, is_error: false, .. } if output == "a\nb\n")
        );
        let running = [ToolCallRow {
            status: "running".into(),
            success: None,
            ..done[0].clone()
        }];
        let rows = records(&ctx(), &messages[..3], &running);
        assert!(rows.pending);
        assert_eq!(rows.records.len(), 2);
    }
}
