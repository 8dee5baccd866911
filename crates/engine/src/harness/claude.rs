//! Claude Code transcripts (`projects/<encoded-cwd>/<session-uuid>.jsonl`): one JSON object per
//! line, one content block per assistant line. Maps every line to zero or more records, or
//! skips it as metadata. Pure: bytes in, records out.
//!
//! The mapping follows `research/formats-claude-codex.md` §3.1 and the monitor-event records of
//! seed 000 (`queue-operation` enqueue/remove around an `attachment{queued_command,
//! commandMode:"task-notification"}` → exactly one notice, from the attachment). A background
//! task that finished (2.1.x) is a user line whose text is a `<task-notification>` block: a
//! notice too.
//!
//! Subagents are `<parent>+agent-<id>`: 2.1.x keeps them in `<parent>/subagents/`, 2.0.x at the
//! project's root as `agent-<id>.jsonl`, naming the parent only in the `sessionId` of its lines
//! (read at listing time). Resuming one resumes its parent.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::SourceCtx;
use crate::harness::{Format, PatchEnvelope, ToolRole, ToolVocabulary};
use crate::lines::LineOutcome;
use crate::session::{SessionFile, valid_id};
use clankie_model::{DefaultHome, FileEntry, Layout, ListSpec, Storage};
use clankie_model::{LazyText, Record, RecordBody, TextKind};

/// Claude Code.
pub(super) struct Claude;

/// Claude Code's tools: `Bash`; `Edit` and `MultiEdit` (`file_path`, `old_string`/`new_string`,
/// `replace_all`, `edits`); `Write`.
/// Its read, search and agent tools: `Read` (`offset`, `limit`), `Grep`, `Glob`, `LS`, `Task`
/// and `Agent` (`description`, `prompt`, `subagent_type`), `WebFetch`, `WebSearch`.
static TOOLS: ToolVocabulary = ToolVocabulary {
    shell_tools: &["bash"],
    command_keys: &["command"],
    path_keys: &["file_path"],
    snippet_keys: &[("old_string", "new_string")],
    replace_all_keys: &["replace_all"],
    edit_list_keys: &["edits"],
    write_tool_marks: &["write"],
    content_keys: &["content"],
    patch_tools: &[],
    patch_keys: &[],
    patch_envelope: &PatchEnvelope::NONE,
    roles: &[
        ("read", ToolRole::Read),
        ("grep", ToolRole::Search),
        ("glob", ToolRole::Glob),
        ("ls", ToolRole::List),
        ("task", ToolRole::Agent),
        ("agent", ToolRole::Agent),
        ("webfetch", ToolRole::Fetch),
        ("websearch", ToolRole::WebSearch),
    ],
    first_line_keys: &["offset"],
    line_count_keys: &["limit"],
    pattern_keys: &["pattern", "query"],
    dir_keys: &["path"],
    file_filter_keys: &["glob", "type"],
    description_keys: &["description"],
    prompt_keys: &["prompt"],
    agent_type_keys: &["subagent_type"],
    url_keys: &["url"],
    ..ToolVocabulary::NONE
};

static LAYOUT: Layout = Layout {
    name: "claude",
    default_home: DefaultHome {
        env_var: Some("CLAUDE_CONFIG_DIR"),
        env_relative: "",
        home_relative: ".claude",
    },
    // projects/<enc-cwd>/<uuid>.jsonl, …/<uuid>/subagents/agent-*.jsonl,
    // …/subagents/workflows/<id>/agent-*.jsonl.
    list: ListSpec {
        subdirs: &["projects"],
        suffixes: &[".jsonl"],
        max_depth: 6,
        top_files: &[],
    },
    db_env: None,
    storage: Storage::Files,
    id_globs: &["projects/*/{id}*.jsonl"],
};

impl Format for Claude {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    fn session(&self, entry: &FileEntry) -> Option<SessionFile> {
        classify(entry)
    }

    fn parse_line(&self, ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
        parse_line(ctx, offset, line)
    }

    /// The first line with a `cwd`.
    fn session_cwd(&self, head: &[u8]) -> Option<String> {
        crate::resume::first_in_lines(head, "/cwd")
    }

    /// A user's rename (`custom-title`) first, then the generated `ai-title`, then the
    /// oldest `summary` line.
    fn native_title(&self, head: &[u8]) -> Option<String> {
        ["/customTitle", "/aiTitle", "/summary"]
            .into_iter()
            .find_map(|pointer| {
                let kind = match pointer {
                    "/customTitle" => "custom-title",
                    "/aiTitle" => "ai-title",
                    _ => "summary",
                };
                crate::resume::complete_lines(head)
                    .filter(|v| v.get("type").and_then(serde_json::Value::as_str) == Some(kind))
                    .find_map(|v| v.pointer(pointer)?.as_str().map(str::to_string))
            })
    }

    fn tested(&self) -> Option<&'static super::Tested> {
        Some(&TESTED)
    }

    /// Every entry's `version`: the Claude Code release that wrote it.
    fn writer_version(&self, head: &[u8]) -> Option<String> {
        super::version_field(head, "version")
    }

    fn tool_vocabulary(&self) -> &'static ToolVocabulary {
        &TOOLS
    }

    /// A subagent (`<parent>+agent-<id>`) is resumed as the session that started it: Claude
    /// has no command that resumes a subagent.
    fn resume_command(&self, id: &str, _path: &str) -> String {
        let session = id.split_once('+').map_or(id, |(parent, _)| parent);
        format!("claude --resume {}", crate::resume::shell_quote(session))
    }

    /// A 2.0.x subagent file at a project's root (`projects/<dir>/agent-<id>.jsonl`) names its
    /// parent only inside, in the `sessionId` of its lines.
    fn named_inside(&self, entry: &FileEntry) -> bool {
        root_agent_file(entry).is_some()
    }

    /// Such a session is `<parent>+agent-<id>`, or `agent-<id>` when its parent is unknown.
    fn may_be_named_inside(&self, id: &str) -> bool {
        id.contains('+') || id.starts_with("agent-")
    }

    fn session_from_head(&self, entry: &FileEntry, head: &[u8]) -> Option<SessionFile> {
        let agent = root_agent_file(entry)?;
        let agent_file = format!("agent-{agent}");
        match head_session_id(head) {
            Some(parent) => Some(SessionFile {
                id: format!("{parent}+{agent_file}"),
                agent: Some(agent.to_string()),
                entry: entry.clone(),
            }),
            // No parent to be found (an empty or unreadable file): listed under its own name,
            // so that nothing is left out.
            None => Some(SessionFile {
                id: agent_file,
                agent: Some(agent.to_string()),
                entry: entry.clone(),
            }),
        }
    }
}

/// The agent id of a 2.0.x subagent file at a project's root, `projects/<dir>/agent-<id>.jsonl`.
fn root_agent_file(entry: &FileEntry) -> Option<&str> {
    let rel = std::str::from_utf8(&entry.rel).ok()?;
    match rel.split('/').collect::<Vec<_>>().as_slice() {
        ["projects", _dir, file] => file
            .strip_suffix(".jsonl")
            .filter(|stem| valid_id(stem))?
            .strip_prefix("agent-")
            .filter(|agent| !agent.is_empty()),
        _ => None,
    }
}

/// The `sessionId` of a transcript's first line, from its first bytes. The line may be cut
/// (only its start is read, and the prompt it holds can be long), so it is found as text: the
/// envelope's `sessionId` comes before the message in every Claude line.
fn head_session_id(head: &[u8]) -> Option<&str> {
    let first = head.split(|&b| b == b'\n').next()?;
    let text = std::str::from_utf8(first)
        .or_else(|e| std::str::from_utf8(&first[..e.valid_up_to()]))
        .ok()?;
    const KEY: &str = "\"sessionId\":\"";
    let start = text.find(KEY)? + KEY.len();
    let id = &text[start..start + text[start..].find('"')?];
    valid_id(id).then_some(id)
}

/// `projects/<dir>/<id>.jsonl` is a session; `projects/<dir>/<id>/subagents/[…/]agent-<a>.jsonl`
/// is its subagent `<id>+agent-<a>`. Anything else under `projects/` is not a transcript.
fn classify(entry: &FileEntry) -> Option<SessionFile> {
    let rel = std::str::from_utf8(&entry.rel).ok()?;
    let parts: Vec<&str> = rel.split('/').collect();
    let stem = |name: &str| {
        name.strip_suffix(".jsonl")
            .filter(|s| valid_id(s))
            .map(str::to_string)
    };
    match parts.as_slice() {
        // A subagent file here (2.0.x) is named by what it holds: `Format::session_from_head`.
        ["projects", _dir, _file] if root_agent_file(entry).is_some() => None,
        ["projects", _dir, file] => Some(SessionFile {
            id: stem(file)?,
            agent: None,
            entry: entry.clone(),
        }),
        ["projects", _dir, parent, "subagents", .., file] if valid_id(parent) => {
            let agent_file = stem(file)?;
            let agent = agent_file.strip_prefix("agent-")?.to_string();
            Some(SessionFile {
                id: format!("{parent}+{agent_file}"),
                agent: Some(agent),
                entry: entry.clone(),
            })
        }
        _ => None,
    }
}

/// The fields of a line's envelope that decide what it becomes. Everything else is skipped
/// without being built.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow)]
    uuid: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain")]
    is_sidechain: Option<bool>,
    #[serde(rename = "agentId", borrow)]
    agent_id: Option<Cow<'a, str>>,
    #[serde(rename = "isMeta")]
    is_meta: Option<bool>,
    #[serde(rename = "isCompactSummary")]
    is_compact_summary: Option<bool>,
    #[serde(rename = "isApiErrorMessage")]
    is_api_error_message: Option<bool>,
    #[serde(borrow)]
    subtype: Option<Cow<'a, str>>,
    // Parsed in the same pass: user and assistant lines are most of the bytes that matter,
    // and scanning them twice was a measurable share of `--all`.
    #[serde(borrow)]
    message: Option<Message<'a>>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow)]
    attachment: Option<&'a RawValue>,
    #[serde(rename = "compactMetadata", borrow)]
    compact_metadata: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(rename = "hookErrors", borrow)]
    hook_errors: Option<&'a RawValue>,
    #[serde(rename = "retryAttempt")]
    retry_attempt: Option<u64>,
    #[serde(rename = "maxRetries")]
    max_retries: Option<u64>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    content: Content<'a>,
    /// Kept raw and read only on assistant lines: a shape we do not expect costs the usage,
    /// never the line.
    #[serde(borrow)]
    usage: Option<&'a RawValue>,
}

/// The `Visitor` methods for null, booleans and numbers of a lenient type: each reads as the
/// type's default (no content, a block of no type) instead of failing the line.
macro_rules! scalars_read_as_default {
    ($ty:ty) => {
        fn visit_unit<E>(self) -> Result<$ty, E> {
            Ok(<$ty>::default())
        }
        fn visit_bool<E>(self, _: bool) -> Result<$ty, E> {
            Ok(<$ty>::default())
        }
        fn visit_i64<E>(self, _: i64) -> Result<$ty, E> {
            Ok(<$ty>::default())
        }
        fn visit_u64<E>(self, _: u64) -> Result<$ty, E> {
            Ok(<$ty>::default())
        }
        fn visit_f64<E>(self, _: f64) -> Result<$ty, E> {
            Ok(<$ty>::default())
        }
    };
}

/// A message's content: a string, or content blocks. Typed rather than a [`Value`], so that a
/// block's keys and the fields no record uses (a thinking block's signature, cache control,
/// citations) are skipped without being allocated.
#[derive(Default)]
enum Content<'a> {
    #[default]
    Absent,
    Text(String),
    Blocks(Vec<Block<'a>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for ContentVisitor<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("message content")
            }
            fn visit_str<E>(self, s: &str) -> Result<Content<'a>, E> {
                Ok(Content::Text(s.to_string()))
            }
            fn visit_string<E>(self, s: String) -> Result<Content<'a>, E> {
                Ok(Content::Text(s))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Content<'a>, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1));
                while let Some(AnyBlock(block)) = seq.next_element()? {
                    blocks.push(block);
                }
                Ok(Content::Blocks(blocks))
            }
            // Anything else (null, a number, an object) is no content.
            scalars_read_as_default!(Content<'a>);
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Content<'a>, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Content::Absent)
            }
        }
        deserializer.deserialize_any(ContentVisitor(std::marker::PhantomData))
    }
}

/// One content block, with the fields any block type's record uses. Each is a [`Value`] so that
/// an odd type (`"text": null`) reads as empty, as it would from a [`Value`] block, instead of
/// failing the line; strings cost the same either way. The texts (a text or thinking block's,
/// a tool result's content) are kept as their JSON, which a string whose escaping is the
/// canonical one goes on as ([`lazy_text`]): most of a transcript's bytes are in them.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Block<'a> {
    #[serde(rename = "type")]
    ty: Value,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    #[serde(borrow)]
    thinking: Option<&'a RawValue>,
    id: Value,
    name: Value,
    input: Value,
    tool_use_id: Value,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    is_error: Value,
    source: Value,
}

/// A content block whatever its shape: an element that is no object (a bare string, a number)
/// reads as a block of no type, which gives its own notice, instead of failing the whole line
/// and taking the line's other blocks with it.
#[derive(Default)]
struct AnyBlock<'a>(Block<'a>);

impl<'de: 'a, 'a> Deserialize<'de> for AnyBlock<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BlockVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for BlockVisitor<'a> {
            type Value = AnyBlock<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<AnyBlock<'a>, A::Error> {
                Block::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(AnyBlock)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<AnyBlock<'a>, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(AnyBlock::default())
            }
            fn visit_str<E>(self, _: &str) -> Result<AnyBlock<'a>, E> {
                Ok(AnyBlock::default())
            }
            scalars_read_as_default!(AnyBlock<'a>);
        }
        deserializer.deserialize_any(BlockVisitor(std::marker::PhantomData))
    }
}

impl Block<'_> {
    fn ty(&self) -> &str {
        self.ty.as_str().unwrap_or("")
    }
}

/// A block's text field: a string as its token where the escaping allows
/// ([`LazyText::from_json_token`]), else unescaped; empty when absent or not a string.
fn lazy_text(field: Option<&RawValue>) -> LazyText {
    match field.map(RawValue::get) {
        Some(token) if token.starts_with('"') => {
            LazyText::from_json_token(token).unwrap_or_else(|| {
                serde_json::from_str::<String>(token)
                    .unwrap_or_default()
                    .into()
            })
        }
        _ => LazyText::default(),
    }
}

/// A tool result's content: a string as [`lazy_text`] keeps it; blocks or other JSON as
/// [`content_text`] writes them.
fn lazy_content(field: Option<&RawValue>) -> LazyText {
    match field.map(RawValue::get) {
        Some(token) if token.starts_with('"') => lazy_text(field),
        Some(_) => field.map(raw_text).unwrap_or_default().into(),
        None => LazyText::default(),
    }
}

/// Moves a string out of a block's field (empty when absent or not a string).
fn take_string(field: &mut Value) -> String {
    match field.take() {
        Value::String(s) => s,
        _ => String::new(),
    }
}

/// Parses one complete line (without its `\n`) that starts at byte `offset`.
pub(super) fn parse_line(ctx: &SourceCtx, offset: u64, line: &[u8]) -> LineOutcome {
    // One UTF-8 check of the whole line (SIMD, by simdutf8) is cheaper than serde_json checking
    // every string.
    let Ok(text) = simdutf8::basic::from_utf8(line) else {
        return LineOutcome::Malformed("not valid UTF-8".into());
    };
    let mut env: Envelope<'_> = match serde_json::from_str(text) {
        Ok(env) => env,
        Err(err) => {
            // Valid JSON of a shape we did not expect is a format change, not a torn line:
            // say so in-line and go on.
            return match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
                Ok(_) if line.first() == Some(&b'{') => LineOutcome::Records(vec![notice(
                    ctx,
                    format!("@{offset}"),
                    None,
                    format!("record at byte {offset} has an unexpected shape ({err}); skipped"),
                )]),
                _ => LineOutcome::Malformed(err.to_string()),
            };
        }
    };
    let Some(ty) = env.ty.as_deref() else {
        // An entry without a type: a renamed field, not something to skip silently.
        return LineOutcome::records(Vec::new(), 1);
    };
    // The message is taken out so that its strings move into records instead of being copied.
    let message = env.message.take();
    let mut out = LineBuilder {
        ctx,
        env: &env,
        message,
        offset,
        records: Vec::new(),
        unknown: 0,
    };
    match ty {
        "user" => out.user(),
        "assistant" => out.assistant(),
        "system" => out.system(),
        "attachment" => out.attachment(),
        ty if SKIPPED_TYPES.contains(&ty) => {}
        // A type newer than this reader: counted, never fatal (formats change monthly).
        _ => out.unknown += 1,
    }
    LineOutcome::records(out.records, out.unknown)
}

/// The newest Claude Code this reader is tested against (docs/harnesses.md).
const TESTED: super::Tested = super::Tested {
    product: "Claude Code",
    version: "2.1.332",
};

/// Entry types read and skipped on purpose: metadata, never records. A type neither here nor
/// read is counted as not understood ([`LineOutcome::Unread`]).
const SKIPPED_TYPES: &[&str] = &[
    "progress",
    "summary",
    "file-history-snapshot",
    // The attachment carries the event.
    "queue-operation",
    "ai-title",
    "custom-title",
    "agent-name",
    "last-prompt",
    "mode",
    "permission-mode",
    "api-request",
    "api-request-blob",
    "api-request-shape",
    "tools-used",
    "cost-state",
    "atis-latch",
    "pr-link",
    "worktree-state",
    "frame-link",
    "bridge-session",
    "relocated",
    "started",
    "result",
];

/// Claude's `message.usage`: `input_tokens`, `output_tokens`, `cache_read_input_tokens`,
/// `cache_creation_input_tokens`.
fn usage_of(raw: &RawValue) -> Option<Box<clankie_model::Usage>> {
    let counts: UsageCounts = serde_json::from_str(raw.get()).ok()?;
    clankie_model::Usage {
        input: counts.input,
        output: counts.output,
        cache_read: counts.cache_read,
        cache_write: counts.cache_write,
        reasoning: None,
    }
    .nonempty()
}

/// The counts of a `message.usage`, read as [`crate::records::count`] reads them from a
/// [`Value`] (a non-negative integer, else none; a repeated key keeps its last value;
/// anything but an object has none) without building one: a map per assistant line was
/// about 4% of `--all`.
#[derive(Default)]
struct UsageCounts {
    input: Option<u64>,
    output: Option<u64>,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
}

impl<'de> Deserialize<'de> for UsageCounts {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct UsageVisitor;
        impl<'de> serde::de::Visitor<'de> for UsageVisitor {
            type Value = UsageCounts;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("token usage")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<UsageCounts, A::Error> {
                let mut counts = UsageCounts::default();
                while let Some(key) = map.next_key::<UsageKey>()? {
                    let slot = match key {
                        UsageKey::Input => &mut counts.input,
                        UsageKey::Output => &mut counts.output,
                        UsageKey::CacheRead => &mut counts.cache_read,
                        UsageKey::CacheWrite => &mut counts.cache_write,
                        UsageKey::Other => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                            continue;
                        }
                    };
                    *slot = map.next_value::<Count>()?.0;
                }
                Ok(counts)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<UsageCounts, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(UsageCounts::default())
            }
            fn visit_str<E>(self, _: &str) -> Result<UsageCounts, E> {
                Ok(UsageCounts::default())
            }
            scalars_read_as_default!(UsageCounts);
        }
        deserializer.deserialize_any(UsageVisitor)
    }
}

/// A key of `message.usage`, matched without allocating it.
enum UsageKey {
    Input,
    Output,
    CacheRead,
    CacheWrite,
    Other,
}

impl<'de> Deserialize<'de> for UsageKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl serde::de::Visitor<'_> for KeyVisitor {
            type Value = UsageKey;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a usage key")
            }
            fn visit_str<E>(self, key: &str) -> Result<UsageKey, E> {
                Ok(match key {
                    "input_tokens" => UsageKey::Input,
                    "output_tokens" => UsageKey::Output,
                    "cache_read_input_tokens" => UsageKey::CacheRead,
                    "cache_creation_input_tokens" => UsageKey::CacheWrite,
                    _ => UsageKey::Other,
                })
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// A count as [`Value::as_u64`] reads one: a non-negative integer, else `None` (a float, a
/// negative number, a string, …), never an error.
struct Count(Option<u64>);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CountVisitor;
        impl<'de> serde::de::Visitor<'de> for CountVisitor {
            type Value = Count;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a count")
            }
            fn visit_u64<E>(self, n: u64) -> Result<Count, E> {
                Ok(Count(Some(n)))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Count, E> {
                Ok(Count(u64::try_from(n).ok()))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Count, E> {
                Ok(Count(None))
            }
            fn visit_unit<E>(self) -> Result<Count, E> {
                Ok(Count(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Count, E> {
                Ok(Count(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Count, E> {
                Ok(Count(None))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Count, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Count(None))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Count, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Count(None))
            }
        }
        deserializer.deserialize_any(CountVisitor)
    }
}

fn notice(ctx: &SourceCtx, id: String, ts: Option<String>, text: String) -> Record {
    Record {
        id,
        harness: ctx.harness,
        session: ctx.session.clone(),
        ts,
        agent: ctx.agent.clone(),
        sidechain: ctx.agent.is_some(),
        body: RecordBody::Text {
            kind: TextKind::Notice,
            text: text.into(),
        },
        model: None,
        usage: None,
    }
}

struct LineBuilder<'c, 'e, 'a> {
    ctx: &'c SourceCtx,
    env: &'e Envelope<'a>,
    message: Option<Message<'a>>,
    offset: u64,
    records: Vec<Record>,
    /// What of the line was not understood ([`LineOutcome::Unread`]).
    unknown: u32,
}

impl LineBuilder<'_, '_, '_> {
    fn id(&self, block: usize) -> String {
        match self.env.uuid.as_deref() {
            Some(uuid) => format!("{uuid}#{block}"),
            None => format!("@{}#{block}", self.offset),
        }
    }

    fn push(&mut self, block: usize, body: RecordBody) {
        let sidechain = self.env.is_sidechain.unwrap_or(false) || self.ctx.agent.is_some();
        let agent = self
            .ctx
            .agent
            .clone()
            .or_else(|| self.env.agent_id.as_deref().map(str::to_string));
        self.records.push(Record {
            id: self.id(block),
            harness: self.ctx.harness,
            session: self.ctx.session.clone(),
            ts: self.env.timestamp.as_deref().map(str::to_string),
            agent,
            sidechain,
            body,
            model: None,
            usage: None,
        });
    }

    fn text(&mut self, block: usize, kind: TextKind, text: impl Into<LazyText>) {
        self.push(
            block,
            RecordBody::Text {
                kind,
                text: text.into(),
            },
        );
    }

    fn user(&mut self) {
        let Some(message) = self.message.take() else {
            self.unknown += 1;
            return;
        };
        if self.env.is_compact_summary == Some(true) {
            let summary = message_text(&message.content);
            self.text(
                0,
                TextKind::Notice,
                format!("conversation compacted; summary:\n{summary}"),
            );
            return;
        }
        match message.content {
            Content::Text(text) if self.env.is_meta != Some(true) => self.user_text(0, text.into()),
            Content::Blocks(blocks) => {
                for (i, mut block) in blocks.into_iter().enumerate() {
                    match block.ty() {
                        "tool_result" => {
                            let call_id = take_string(&mut block.tool_use_id);
                            let output = lazy_content(block.content);
                            let is_error = block.is_error.as_bool() == Some(true);
                            self.push(
                                i,
                                RecordBody::ToolResult {
                                    call_id,
                                    output,
                                    is_error,
                                },
                            );
                        }
                        _ if self.env.is_meta == Some(true) => {}
                        "text" => self.user_text(i, lazy_text(block.text)),
                        "image" | "document" => {
                            let placeholder = media_placeholder(block.ty(), &block.source);
                            self.text(i, TextKind::User, placeholder);
                        }
                        other => {
                            self.unknown += 1;
                            self.text(
                                i,
                                TextKind::Notice,
                                format!("unsupported user block `{other}`"),
                            );
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// A user string: a typed prompt, or one of the wrappers Claude writes into user lines.
    fn user_text(&mut self, block: usize, text: LazyText) {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return;
        }
        // Claude's wrappers start with a tag; a prompt that does not is typed text, and is not
        // searched for tags (which would be three scans of every prompt).
        let wrapped = trimmed.starts_with('<');
        if trimmed.starts_with("[Request interrupted by user") {
            self.text(
                block,
                TextKind::Notice,
                trimmed.trim_matches(['[', ']']).to_string(),
            );
        } else if !wrapped {
            self.text(block, TextKind::User, text);
        } else if let Some(name) = tag_content(trimmed, "command-name") {
            let args = tag_content(trimmed, "command-args").unwrap_or("").trim();
            if args.is_empty() {
                self.text(block, TextKind::Notice, format!("local command: {name}"));
            } else {
                // A slash command typed with arguments (`/plugin:command text…`): the user's
                // request to the model, named by its command.
                self.text(block, TextKind::User, format!("{name} {args}"));
            }
        } else if let Some(out) = tag_content(trimmed, "local-command-stdout") {
            self.text(
                block,
                TextKind::Notice,
                format!("local command output: {}", out.trim()),
            );
        } else if trimmed.starts_with("<task-notification>") {
            // 2.1.x writes a finished background task (a `run_in_background` command, a
            // monitor) as a user line of its own; the user typed none of it.
            self.text(block, TextKind::Notice, monitor_event_text(trimmed));
        } else if trimmed.starts_with("<local-command-caveat>") {
            // Injected for the model; not something the user typed.
        } else {
            self.text(block, TextKind::User, text);
        }
    }

    fn assistant(&mut self) {
        let Some(mut message) = self.message.take() else {
            self.unknown += 1;
            return;
        };
        let model = message.model.clone();
        let usage = message.usage.take().and_then(usage_of);
        let first = self.records.len();
        self.assistant_blocks(message);
        // `<synthetic>` marks text Claude Code wrote itself (an API error): no model wrote it.
        let model = model.filter(|m| m != "<synthetic>");
        crate::records::stamp_model(&mut self.records[first..], model.as_deref(), usage);
    }

    fn assistant_blocks(&mut self, message: Message<'_>) {
        let synthetic = message.model.as_deref() == Some("<synthetic>")
            || self.env.is_api_error_message == Some(true);
        let blocks = match message.content {
            Content::Blocks(blocks) => blocks,
            Content::Text(text) => {
                if !text.trim().is_empty() {
                    self.text(0, TextKind::Assistant, text);
                }
                return;
            }
            Content::Absent => return,
        };
        for (i, mut block) in blocks.into_iter().enumerate() {
            match block.ty() {
                "text" => {
                    let text = lazy_text(block.text);
                    if text.is_blank() {
                        // 2.1.x writes a "\n\n" block before thinking.
                    } else if synthetic {
                        self.text(i, TextKind::Notice, text);
                    } else {
                        self.text(i, TextKind::Assistant, text);
                    }
                }
                "thinking" => {
                    let text = lazy_text(block.thinking);
                    if !text.is_blank() {
                        self.text(i, TextKind::Thinking, text);
                    }
                }
                "redacted_thinking" => self.text(i, TextKind::Thinking, "[redacted thinking]"),
                "tool_use" | "server_tool_use" => {
                    let call_id = take_string(&mut block.id);
                    let name = take_string(&mut block.name);
                    let input = block.input.take();
                    self.push(
                        i,
                        RecordBody::ToolCall {
                            call_id,
                            name,
                            input,
                            by_user: false,
                        },
                    );
                }
                other => {
                    self.unknown += 1;
                    self.text(
                        i,
                        TextKind::Notice,
                        format!("unsupported assistant block `{other}`"),
                    );
                }
            }
        }
    }

    fn system(&mut self) {
        let content = self.env.content.map(raw_text).unwrap_or_default();
        let text = match self.env.subtype.as_deref() {
            Some("compact_boundary") => {
                let meta: Value = self
                    .env
                    .compact_metadata
                    .and_then(|raw| serde_json::from_str(raw.get()).ok())
                    .unwrap_or(Value::Null);
                let trigger = meta
                    .get("trigger")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown");
                match meta.get("preTokens").and_then(Value::as_u64) {
                    Some(tokens) => {
                        format!("conversation compacted ({trigger}, {tokens} tokens before)")
                    }
                    None => format!("conversation compacted ({trigger})"),
                }
            }
            Some("api_error") => {
                let error: Value = self
                    .env
                    .error
                    .and_then(|raw| serde_json::from_str(raw.get()).ok())
                    .unwrap_or(Value::Null);
                let status = error
                    .get("status")
                    .map(|s| s.to_string())
                    .unwrap_or_default();
                let message = find_message(&error).unwrap_or_else(|| content.clone());
                let retry = match (self.env.retry_attempt, self.env.max_retries) {
                    (Some(a), Some(m)) => format!(" (retry {a}/{m})"),
                    _ => String::new(),
                };
                format!("API error {status}: {message}{retry}").replace("  ", " ")
            }
            Some("local_command") => {
                if let Some(name) = tag_content(&content, "command-name") {
                    let args = tag_content(&content, "command-args").unwrap_or("");
                    format!("local command: {name} {args}")
                        .trim_end()
                        .to_string()
                } else if let Some(out) = tag_content(&content, "local-command-stdout") {
                    format!("local command output: {}", out.trim())
                } else {
                    format!("local command: {}", content.trim())
                }
            }
            Some("stop_hook_summary") => {
                let errors = self.env.hook_errors.map(raw_text).unwrap_or_default();
                if errors.is_empty() || errors == "[]" {
                    return;
                }
                format!("stop hook errors: {errors}")
            }
            Some("turn_duration") => return,
            Some(other) if content.trim().is_empty() => format!("system event `{other}`"),
            _ if content.trim().is_empty() => return,
            _ => content,
        };
        self.text(0, TextKind::Notice, text);
    }

    fn attachment(&mut self) {
        let Some(raw) = self.env.attachment else {
            return;
        };
        let Ok(attachment) = serde_json::from_str::<Value>(raw.get()) else {
            return;
        };
        match block_type(&attachment) {
            "queued_command" => {
                let prompt = attachment
                    .get("prompt")
                    .map(content_text)
                    .unwrap_or_default();
                if str_field(&attachment, "commandMode") == "task-notification" {
                    self.text(0, TextKind::Notice, monitor_event_text(&prompt));
                } else if !prompt.trim().is_empty() {
                    self.text(0, TextKind::User, prompt);
                }
            }
            kind @ ("hook_blocking_error" | "hook_non_blocking_error" | "hook_cancelled") => {
                let detail = ["blockingError", "stderr", "content", "hookName"]
                    .iter()
                    .find_map(|k| attachment.get(*k).map(content_text))
                    .unwrap_or_default();
                self.text(
                    0,
                    TextKind::Notice,
                    format!("{}: {detail}", kind.replace('_', " ")),
                );
            }
            // Context injected for the model (files, skills, reminders, deltas): not shown.
            _ => {}
        }
    }
}

/// A task notification's notice text (a monitor event, or a background task that finished):
/// its `<summary>`, and its `<event>` when present; otherwise the notification with its tags
/// removed.
fn monitor_event_text(prompt: &str) -> String {
    let summary = tag_content(prompt, "summary").map(unescape_xml);
    let event = tag_content(prompt, "event").map(unescape_xml);
    match (summary, event) {
        (Some(s), Some(e)) => format!("{s}: {e}"),
        (Some(s), None) => s,
        (None, Some(e)) => format!("monitor event: {e}"),
        (None, None) => {
            let body = tag_content(prompt, "task-notification").unwrap_or(prompt);
            let text = unescape_xml(&strip_tags(body));
            let words: Vec<&str> = text.split_whitespace().collect();
            format!("task notification: {}", words.join(" "))
        }
    }
}

fn unescape_xml(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// The text with its tags removed; each tag parts words as a space would.
fn strip_tags(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// The text between `<tag>` and `</tag>`, if both are present.
fn tag_content<'s>(s: &'s str, tag: &str) -> Option<&'s str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = s.find(&open)? + open.len();
    let end = s[start..].find(&close)? + start;
    Some(&s[start..end])
}

fn block_type(block: &Value) -> &str {
    str_field(block, "type")
}

fn str_field<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

fn raw_text(raw: &RawValue) -> String {
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(value) => content_text(&value),
        Err(_) => String::new(),
    }
}

/// Text of a message's content, as [`content_text`] gives it for a value (a block of a type
/// with no text reads as its type: the typed block keeps no JSON to print).
fn message_text(content: &Content) -> String {
    match content {
        Content::Absent => String::new(),
        Content::Text(text) => text.clone(),
        Content::Blocks(blocks) => blocks
            .iter()
            .map(|block| match block.ty() {
                "text" => lazy_text(block.text).into_string(),
                kind @ ("image" | "document") => media_placeholder(kind, &block.source),
                other => format!("[{other}]"),
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// Text of a content value: a string, or an array of blocks (text joined by newlines, images
/// and other media as placeholders), or any other JSON compactly.
pub(super) fn content_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Array(blocks) => {
            let parts: Vec<String> = blocks
                .iter()
                .map(|block| match block_type(block) {
                    "text" => str_field(block, "text").to_string(),
                    kind @ ("image" | "document") => {
                        media_placeholder(kind, block.get("source").unwrap_or(&Value::Null))
                    }
                    "tool_reference" => format!("[tool {}]", str_field(block, "tool_name")),
                    _ if block.is_string() => block.as_str().unwrap_or_default().to_string(),
                    _ => block.to_string(),
                })
                .collect();
            parts.join("\n")
        }
        other => other.to_string(),
    }
}

/// `[image image/png, 1234 bytes]` for an image or document block with its `source`.
fn media_placeholder(kind: &str, source: &Value) -> String {
    let media = str_field(source, "media_type");
    let bytes = source
        .get("data")
        .and_then(Value::as_str)
        .map(|d| d.len() / 4 * 3);
    match (media.is_empty(), bytes) {
        (false, Some(n)) => format!("[{kind} {media}, {n} bytes]"),
        (false, None) => format!("[{kind} {media}]"),
        _ => format!("[{kind}]"),
    }
}

fn find_message(value: &Value) -> Option<String> {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(m)) = map.get("message") {
                return Some(m.clone());
            }
            map.values().find_map(find_message)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
