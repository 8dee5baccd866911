//! `clankie-read mcp`: the Model Context Protocol server (stdio, the official `rmcp` SDK). Thin
//! tool handlers over the driver ([`Reader`], [`check_host`]) that answer in the CLI's
//! `--json` objects (rendered by `render::ndjson`, so fields match) plus a short text
//! rendering; no transcript is parsed here.
//!
//! Safe by default: a call names only hosts the user allowed ([`Allowed`]); redaction is always
//! on; every answer is bounded (at most 200 records or sessions, each record's text cut at
//! [`MAX_RECORD_TEXT_BYTES`] with `truncated: true`). A malformed call (bad arguments, an
//! unknown tool, a host not allowed) is a JSON-RPC error; a host that fails is a tool error
//! (`isError`) for that call only, and its connection is dropped so the next call starts
//! afresh. Hosts stay open between calls ([`pool`]) and close after an idle time; the
//! sessions read on a host are kept resolved meanwhile ([`kept`]), so that a warm read is one
//! command on the host.

mod kept;
mod pool;
pub(crate) mod tools;
mod wire;

use std::collections::BTreeSet;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

use crate::check::{SessionError, State, StateError, StateLock, check_host};
use crate::driver::request::{Pages, ReadRequest};
use crate::driver::retry::recovery;
use crate::driver::{DriverError, Reader, roots_for};
use crate::error::{Error, exit, exit_status};
use crate::render::text::TextOptions;
use crate::render::{PageInfo, Renderer};
use clankie_engine::cursor::Cursor;
use clankie_engine::filter::{RecordFilter, parse_time};
use clankie_engine::harness::{self, Source};
use clankie_engine::page::{Mode, Page};
use clankie_engine::resolve::{SessionQuery, unique_prefix_lens};
use clankie_engine::resume::Remote;
use clankie_engine::session::SessionFile;
use clankie_host::{AnyHost, HostError};
use clankie_model::limits::MAX_LIMIT;
use clankie_model::{Record, RecordBody, RootSpec, display_path};
use kept::Kept;
use pool::Pool;
use tools::ReadMode;

pub use clankie_model::limits::MAX_RECORD_TEXT_BYTES;

/// How long the state lock of `check` is waited for (another server, or the same file).
const CHECK_LOCK_WAIT: Duration = Duration::from_secs(10);

/// What the server asks of the CLI: hosts opened by name as the CLI opens them (hosts file,
/// `--root`, SSH config, timeouts), and how `ssh` reaches one for `resume_command`.
pub trait HostSource: Send + Sync + 'static {
    /// Opens (does not connect) the host named `name`, with its roots.
    fn open(&self, name: &str) -> Result<(AnyHost, Vec<RootSpec>), Error>;

    /// How a resume command reaches the host `name` (`None`: this machine). `session_root` is
    /// the session's harness home, which tells a Windows host by its path.
    fn remote(&self, name: &str, session_root: &[u8]) -> Option<Remote> {
        let _ = (name, session_root);
        None
    }

    /// Says `lines` to the user beside the protocol (stderr): the hosts' `-v` notes.
    fn warn(&self, lines: &[String]) {
        let _ = lines;
    }
}

/// The host names calls may use: `local`, the hosts file's, `--allow-host`'s, and (with
/// `--allow-ssh-config`) the SSH config's `Host` aliases.
#[derive(Debug, Clone, Default)]
pub struct Allowed {
    /// Checked by `check` when a call names none: `local` and the hosts file's.
    pub checked_by_default: Vec<String>,
    pub names: BTreeSet<String>,
}

impl Allowed {
    fn ensure_allowed(&self, host: &str) -> Result<(), ErrorData> {
        if self.names.contains(host) {
            return Ok(());
        }
        Err(ErrorData::invalid_params(
            format!(
                "host `{host}` is not allowed through MCP (allowed: {}); add it to the hosts \
                 file, or start the server with `--allow-host {host}`",
                self.list()
            ),
            Some(json!({"host": host, "allowed": self.names})),
        ))
    }

    fn list(&self) -> String {
        self.names.iter().cloned().collect::<Vec<_>>().join(", ")
    }
}

/// How the server runs.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub allowed: Allowed,
    /// `check`'s state file, apart from the CLI's.
    pub state: PathBuf,
    /// A host no call used for this long is closed.
    pub idle: Duration,
    /// `-v`: the hosts' notes on stderr after each call.
    pub verbose: bool,
    /// `mcp --store`: the store the `search` tool answers from, no host contacted.
    pub store: Option<crate::store::StoreUrl>,
}

/// The MCP server: one per process, serving one client over stdio.
pub struct McpServer {
    pool: Arc<Pool>,
    options: ServerOptions,
    /// One `check` at a time: calls of this server share its state file.
    checking: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Serves MCP on stdin and stdout until the client closes them.
pub async fn serve(source: Arc<dyn HostSource>, options: ServerOptions) -> Result<(), Error> {
    let pool = Arc::new(Pool::new(source));
    let idle = options.idle;
    let reaper = tokio::spawn({
        let pool = pool.clone();
        async move {
            loop {
                tokio::time::sleep((idle / 4).max(Duration::from_millis(100))).await;
                pool.close_idle(idle).await;
            }
        }
    });
    let server = McpServer {
        pool,
        options,
        checking: tokio::sync::Mutex::new(()),
    };
    let result = async {
        let running = server
            .serve(wire::LineTransport::new(
                tokio::io::stdin(),
                tokio::io::stdout(),
            ))
            .await
            .map_err(|e| Error::Output(std::io::Error::other(format!("MCP: {e}"))))?;
        running
            .waiting()
            .await
            .map_err(|e| Error::Output(std::io::Error::other(format!("MCP: {e}"))))?;
        Ok(())
    };
    let result = result.await;
    reaper.abort();
    result
}

/// How one tool call ended, before it is put on the wire.
enum Failure {
    /// The call itself is wrong (arguments, a host not allowed): a JSON-RPC error.
    Call(ErrorData),
    /// The call was right and reading failed (a host down, no such session): a tool error the
    /// model reads.
    Tool(String),
}

impl From<ErrorData> for Failure {
    fn from(e: ErrorData) -> Failure {
        Failure::Call(e)
    }
}

fn invalid(message: String) -> Failure {
    Failure::Call(ErrorData::invalid_params(message, None))
}

/// A tool's answer: the structured object and its text rendering.
struct Answer {
    structured: Value,
    text: String,
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "clankie-read",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(format!(
                "Read AI coding agents' sessions ({}) on this machine and over SSH: \
                 list_sessions, then read_session with `<host>:<session>`; check says what \
                 changed since its last call.",
                clankie_engine::harness::supported_names()
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::all(
            &self.options.allowed.list(),
        )))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        tools::all(&self.options.allowed.list())
            .into_iter()
            .find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        let arguments = request.arguments;
        // One arm per tool of `tools::all` (a new tool: its arguments and schema there, its
        // handler here).
        let answer = match name {
            "list_sessions" => match tools::decode(name, arguments) {
                Ok(args) => self.list_sessions(args).await,
                Err(e) => Err(invalid(e)),
            },
            "read_session" => match tools::decode(name, arguments) {
                Ok(args) => self.read_session(args).await,
                Err(e) => Err(invalid(e)),
            },
            "check" => match tools::decode(name, arguments) {
                Ok(args) => self.check(args).await,
                Err(e) => Err(invalid(e)),
            },
            "search" => match tools::decode(name, arguments) {
                Ok(args) => self.search(args).await,
                Err(e) => Err(invalid(e)),
            },
            "resume_command" => match tools::decode(name, arguments) {
                Ok(args) => self.resume_command(args).await,
                Err(e) => Err(invalid(e)),
            },
            _ => Err(invalid(format!(
                "unknown tool `{name}`; the tools are {}",
                tools::names().join(", ")
            ))),
        };
        if self.options.verbose {
            self.pool.source().warn(&self.pool.take_notes().await);
        }
        match answer {
            Ok(Answer { structured, text }) => {
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(structured);
                Ok(result.into())
            }
            Err(Failure::Call(e)) => Err(e),
            Err(Failure::Tool(message)) => {
                let mut result = CallToolResult::error(vec![ContentBlock::text(message.clone())]);
                result.structured_content = Some(json!({"error": message}));
                Ok(result.into())
            }
        }
    }
}

impl McpServer {
    /// Runs `op` on the warm host `name` (once it is allowed). A connection kept from an earlier
    /// call may have been dropped meanwhile (the other side restarted, a NAT forgot it): when
    /// such a one fails as the retry policy says may pass ([`Recovery::retries_call`]), `op`
    /// runs once more on a new one.
    ///
    /// [`Recovery::retries_call`]: crate::driver::retry::Recovery::retries_call
    async fn on_host<T, F, Fut>(&self, name: &str, op: F) -> Result<T, Failure>
    where
        F: Fn(Arc<pool::WarmHost>) -> Fut,
        Fut: Future<Output = Result<T, DriverError>>,
    {
        self.options.allowed.ensure_allowed(name)?;
        let (warm, reused) = self
            .pool
            .get(name)
            .await
            .map_err(|e| self.failed(name, e))?;
        let result = match op(warm).await {
            Err(DriverError::Host(e)) if recovery(&e).retries_call(reused) => {
                self.pool.forget(name).await;
                let (warm, _) = self
                    .pool
                    .get(name)
                    .await
                    .map_err(|e| self.failed(name, e))?;
                op(warm).await
            }
            result => result,
        };
        result.map_err(|e| self.failed(name, e.into()))
    }

    /// A failed read as the model reads it: a usage error (a bad cursor, an unknown harness)
    /// is the call's fault; anything else is a tool error, and a host that failed is forgotten
    /// (its connection dropped) so that the next call connects again.
    fn failed(&self, host: &str, error: Error) -> Failure {
        let message = tool_message(&error);
        match exit_status(&Err(error)) {
            exit::USAGE => invalid(message),
            status => {
                if status == exit::HOST {
                    let pool = self.pool.clone();
                    let host = host.to_string();
                    tokio::spawn(async move { pool.forget(&host).await });
                }
                Failure::Tool(message)
            }
        }
    }

    async fn list_sessions(&self, args: tools::ListSessionsArgs) -> Result<Answer, Failure> {
        let limit = tools::limit("list_sessions", args.limit).map_err(invalid)?;
        let harness = match &args.harness {
            Some(name) => Some(
                clankie_engine::harness::by_name(name)
                    .ok_or_else(|| invalid(format!("list_sessions: unknown harness `{name}`")))?,
            ),
            None => None,
        };
        let now = jiff::ZonedDateTime::now();
        let since = args
            .modified_within
            .as_deref()
            .map(|age| parse_time("modified_within", age, &now))
            .transpose()
            .map_err(|e| invalid(format!("list_sessions: {e}")))?
            .map(|t| t.as_second());
        let host_name = args.host.as_deref().unwrap_or("local");
        let (listing, sessions, heads, more) = self
            .on_host(host_name, |warm| async move {
                let reader = Reader::new(&warm.host);
                let (listing, mut sessions) = reader
                    .list_sessions(&roots_for(&warm.roots, harness))
                    .await?;
                if let Some(since) = since {
                    sessions.retain(|s| s.entry.mtime >= since);
                }
                // Newest first, as `ls` sorts by default.
                sessions.sort_by(|a, b| (b.entry.mtime, &a.id).cmp(&(a.entry.mtime, &b.id)));
                let more = sessions.len().saturating_sub(limit);
                sessions.truncate(limit);
                let heads = reader.session_heads(&sessions).await;
                Ok((listing, sessions, heads, more))
            })
            .await?;
        let mut lines = Vec::new();
        for (session, head) in sessions.iter().zip(&heads) {
            crate::render::ndjson::session(&mut lines, host_name, session, Some(head))
                .map_err(output)?;
        }
        // As `ls --json`: an `error` object per source the listing left out.
        let mut errors = Vec::new();
        for left_out in &listing.unreadable {
            let error = SessionError {
                host: host_name.to_string(),
                harness: left_out.harness.name().to_string(),
                session: None,
                path: display_path(&left_out.path),
                message: left_out.message.clone(),
            };
            crate::render::ndjson::session_error(&mut errors, &error).map_err(output)?;
        }
        let mut text = Vec::new();
        let ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
        let unique = unique_prefix_lens(&ids);
        let rows: Vec<crate::render::ls::LsRow<'_>> = sessions
            .iter()
            .zip(&heads)
            .zip(unique)
            .map(|((session, head), unique)| crate::render::ls::LsRow {
                host: host_name,
                session,
                head,
                unique,
            })
            .collect();
        let ls_options = crate::render::ls::LsOptions {
            color: false,
            width: None,
            now: now.timestamp().as_second(),
            terminal: false,
            show_host: true,
        };
        crate::render::ls::rows(&mut text, &rows, &ls_options).map_err(output)?;
        let mut text = String::from_utf8_lossy(&text).into_owned();
        if sessions.is_empty() {
            text.push_str(&format!("no sessions on {host_name}\n"));
        }
        if more > 0 {
            text.push_str(&format!("{more} more not shown (raise `limit`)\n"));
        }
        Ok(Answer {
            structured: json!({
                "host": host_name,
                "sessions": parse_lines(&lines),
                "more": more,
                "errors": parse_lines(&errors),
            }),
            text,
        })
    }

    async fn read_session(&self, args: tools::ReadSessionArgs) -> Result<Answer, Failure> {
        let request = read_request(&args).map_err(invalid)?;
        let host_name = request.host.as_str();
        // The kept resolution is found by the session argument as given.
        let key = &kept_key(&request.query);
        let request = &request;
        let (session, page) = self
            .on_host(host_name, |warm| async move {
                // `@latest` is looked for again by every call: a newer session may have begun.
                let kept = (!request.query.is_latest())
                    .then(|| warm.sessions.get(key))
                    .flatten();
                if let Some(kept) = kept {
                    match read_kept(&warm, key, kept, request).await {
                        Ok(read) => return Ok(read),
                        Err(e) if !resolved_again_after(&e) => return Err(e),
                        // Gone, moved or no longer what it was: found again, as the CLI would.
                        Err(_) => warm.sessions.forget(key),
                    }
                }
                read_resolving(&warm, key, request).await
            })
            .await?;
        let mut records: Vec<Record> = page.records.clone();
        let truncated: Vec<bool> = records.iter_mut().map(truncate_record).collect();
        let info = PageInfo {
            host: host_name,
            harness: session.harness().name(),
            session: &session.id,
            filtered: request.filter.is_active().then_some(page.filtered),
        };
        let mut record_lines = Vec::new();
        crate::render::ndjson::records(&mut record_lines, host_name, &records).map_err(output)?;
        let mut page_line = Vec::new();
        crate::render::ndjson::page(&mut page_line, &info, &page).map_err(output)?;
        let mut records_json = parse_lines(&record_lines);
        for (record, cut) in records_json.iter_mut().zip(truncated) {
            if cut && let Value::Object(map) = record {
                map.insert("truncated".into(), Value::Bool(true));
            }
        }
        let page_json = parse_lines(&page_line).pop().unwrap_or(Value::Null);
        let mut text = Vec::new();
        let mut renderer = Renderer::text(TextOptions {
            full: false,
            color: false,
            width: None,
            thinking: true,
            cursor_line: true,
            show_cursor: true,
            screen: true,
        });
        renderer
            .records(&mut text, host_name, &records)
            .map_err(output)?;
        renderer.page_end(&mut text, &info, &page).map_err(output)?;
        for warning in &page.warnings {
            text.extend_from_slice(format!("warning: {warning}\n").as_bytes());
        }
        Ok(Answer {
            structured: json!({
                "records": records_json,
                "page": page_json,
                "warnings": page.warnings,
            }),
            text: String::from_utf8_lossy(&text).into_owned(),
        })
    }

    async fn check(&self, args: tools::CheckArgs) -> Result<Answer, Failure> {
        let names = args
            .hosts
            .unwrap_or_else(|| self.options.allowed.checked_by_default.clone());
        if names.is_empty() {
            return Err(invalid("check: `hosts` is empty".to_string()));
        }
        for name in &names {
            self.options.allowed.ensure_allowed(name)?;
        }
        let _one_at_a_time = self.checking.lock().await;
        let path = self.options.state.clone();
        let lock = tokio::task::spawn_blocking(move || {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|source| StateError::Io {
                    path: dir.display().to_string(),
                    source,
                })?;
            }
            let lock = StateLock::acquire(&path, CHECK_LOCK_WAIT)?;
            let previous = State::load(&path)?;
            Ok::<_, StateError>((lock, previous))
        })
        .await
        .map_err(|e| Failure::Tool(format!("check: {e}")))?;
        let (lock, previous) = lock.map_err(|e| Failure::Tool(format!("check: {e}")))?;
        let baseline = previous.is_none();
        let previous = Arc::new(previous.unwrap_or_default());
        let mut tasks = tokio::task::JoinSet::new();
        for (index, name) in names.iter().enumerate() {
            let warm = self.pool.get(name).await.map(|(warm, _)| warm);
            let (name, previous) = (name.clone(), previous.clone());
            tasks.spawn(async move {
                let result = match warm {
                    Ok(warm) => {
                        let roots = roots_for(&warm.roots, None);
                        check_host(
                            &warm.host,
                            &roots,
                            previous.hosts.get(&name),
                            baseline,
                            false,
                        )
                        .await
                        .map_err(Error::from)
                    }
                    Err(e) => Err(e),
                };
                (index, name, result)
            });
        }
        let mut results = tasks.join_all().await;
        results.sort_by_key(|(index, _, _)| *index);
        let mut state = (*previous).clone();
        state.version = 1;
        let mut activity = Vec::new();
        let mut errors = Vec::new();
        let mut failed = Vec::new();
        for (_, name, result) in results {
            match result {
                Ok(checked) => {
                    activity.extend(checked.activity);
                    errors.extend(checked.errors);
                    state.hosts.insert(name, checked.state);
                }
                Err(err) => {
                    let message = host_failure(&name, &err);
                    if exit_status(&Err(err)) == exit::HOST {
                        self.pool.forget(&name).await;
                    }
                    failed.push((name, message));
                }
            }
        }
        let path = self.options.state.clone();
        tokio::task::spawn_blocking(move || {
            let saved = state.save(&path);
            drop(lock);
            saved
        })
        .await
        .map_err(|e| Failure::Tool(format!("check: {e}")))?
        .map_err(|e| Failure::Tool(format!("check: {e}")))?;
        // Bounded like every answer: the newest changes (each host's come oldest first) and the
        // first errors; the state above holds every session either way.
        let more_activity = activity.len().saturating_sub(MAX_LIMIT);
        activity.drain(..more_activity);
        let more_errors = errors.len().saturating_sub(MAX_LIMIT);
        errors.truncate(MAX_LIMIT);
        let (mut activity_lines, mut error_lines, mut text) = (Vec::new(), Vec::new(), Vec::new());
        let renderer = Renderer::text(TextOptions::default());
        for a in &activity {
            crate::render::ndjson::activity(&mut activity_lines, a).map_err(output)?;
            renderer.activity(&mut text, a).map_err(output)?;
        }
        for e in &errors {
            crate::render::ndjson::session_error(&mut error_lines, e).map_err(output)?;
            text.extend_from_slice(format!("error: {}: {}\n", e.host, e.message).as_bytes());
        }
        for (name, message) in &failed {
            text.extend_from_slice(format!("failed: {name}: {message}\n").as_bytes());
        }
        if more_activity > 0 {
            text.extend_from_slice(format!("{more_activity} older changes not shown\n").as_bytes());
        }
        if activity.is_empty() {
            text.extend_from_slice(if baseline {
                b"baseline recorded: later calls say what changed\n".as_slice()
            } else {
                b"no activity since the last check\n".as_slice()
            });
        }
        let failed: Vec<Value> = failed
            .into_iter()
            .map(|(host, message)| json!({"host": host, "message": message}))
            .collect();
        Ok(Answer {
            structured: json!({
                "baseline": baseline,
                "activity": parse_lines(&activity_lines),
                "more_activity": more_activity,
                "errors": parse_lines(&error_lines),
                "more_errors": more_errors,
                "failed": failed,
            }),
            text: String::from_utf8_lossy(&text).into_owned(),
        })
    }

    /// `search`: `grep --json`'s matches over the hosts named (or every allowed one), at most
    /// `limit` in all, in the order of the hosts and of their listings; each record cut as
    /// read_session cuts it.
    async fn search(&self, args: tools::SearchArgs) -> Result<Answer, Failure> {
        use crate::cache::{Cache, CacheOptions};
        use crate::driver::search::{SessionFound, search_host};
        use crate::render::grep::{GrepPrinter, Shape};
        use clankie_engine::search::{Case, Found, Matcher, PatternOptions, Query};

        let limit = tools::limit("search", args.limit).map_err(invalid)?;
        let matcher = Matcher::new(
            &args.pattern,
            PatternOptions {
                fixed: args.fixed,
                case: if args.ignore_case {
                    Case::Insensitive
                } else {
                    Case::Smart
                },
            },
        )
        .map_err(|e| invalid(format!("search: {e}")))?;
        let filter =
            RecordFilter::parse(&args.kinds, None, None, None, &jiff::ZonedDateTime::now())
                .map_err(|e| invalid(format!("search: {e}")))?;
        let harness = match &args.harness {
            Some(name) => Some(
                harness::by_name(name)
                    .ok_or_else(|| invalid(format!("search: unknown harness `{name}`")))?,
            ),
            None => None,
        };
        let query = Arc::new(Query {
            matcher,
            filter,
            before: 0,
            after: 0,
            max_count: None,
            // Redaction cannot be turned off through MCP.
            redact: true,
            count_only: false,
        });
        // Remote sessions' bytes are kept in the user's cache, as `grep` keeps them; a cache
        // that cannot be opened costs speed, not results.
        let cache = Arc::new(
            Cache::open(CacheOptions::default())
                .or_else(|_| {
                    Cache::open(CacheOptions {
                        enabled: false,
                        ..CacheOptions::default()
                    })
                })
                .map_err(|e| Failure::Tool(format!("search: {e}")))?,
        );
        let mut results = Vec::new();
        if let Some(url) = &self.options.store {
            // From the store: its hosts (or those asked), no host contacted.
            let store_failure = |e: crate::store::StoreError| Failure::Tool(format!("search: {e}"));
            let mut store = crate::store::Store::open_to_search(url)
                .await
                .map_err(store_failure)?;
            let names = match &args.hosts {
                Some(names) => names.clone(),
                None => store.hosts().await.map_err(store_failure)?,
            };
            for (index, name) in names.into_iter().enumerate() {
                let (mut kept, mut seen) = (Vec::<SessionFound>::new(), 0usize);
                let searched = crate::store::search::search_host(
                    &mut store,
                    &name,
                    harness,
                    &query,
                    |mut found| {
                        let room = limit.saturating_sub(seen);
                        seen += found.matches;
                        if room > 0 {
                            keep_matches(&mut found.found, room);
                            kept.push(found);
                        }
                    },
                )
                .await
                .map(|()| (kept, seen, Vec::new()))
                .map_err(Error::from);
                results.push((index, name, searched));
            }
        }
        let names = match (&self.options.store, args.hosts) {
            (Some(_), _) => Vec::new(),
            (None, Some(names)) => names,
            (None, None) => self.options.allowed.checked_by_default.clone(),
        };
        if names.is_empty() && self.options.store.is_none() {
            return Err(invalid("search: `hosts` is empty".to_string()));
        }
        for name in &names {
            self.options.allowed.ensure_allowed(name)?;
        }
        let mut tasks = tokio::task::JoinSet::new();
        for (index, name) in names.iter().enumerate() {
            let warm = self.pool.get(name).await.map(|(warm, _)| warm);
            let (name, query, cache) = (name.clone(), query.clone(), cache.clone());
            tasks.spawn(async move {
                let result = match warm {
                    Ok(warm) => {
                        let roots = roots_for(&warm.roots, harness);
                        let cache = match warm.host {
                            AnyHost::Local(_) => None,
                            _ => Some(&*cache),
                        };
                        // Matches past `limit` are counted, not kept.
                        let (mut kept, mut seen) = (Vec::<SessionFound>::new(), 0usize);
                        search_host(&warm.host, &roots, &query, cache, |mut found| {
                            let room = limit.saturating_sub(seen);
                            seen += found.matches;
                            if room > 0 {
                                keep_matches(&mut found.found, room);
                                kept.push(found);
                            }
                        })
                        .await
                        .map(|searched| (kept, seen, searched.unsearched))
                        .map_err(Error::from)
                    }
                    Err(e) => Err(e),
                };
                (index, name, result)
            });
        }
        results.extend(tasks.join_all().await);
        results.sort_by_key(|(index, _, _)| *index);
        let json_printer = GrepPrinter {
            shape: Shape::Records,
            json: true,
            color: false,
            width: None,
        };
        let text_printer = GrepPrinter {
            json: false,
            ..json_printer
        };
        let (mut lines, mut text, mut failed, mut errors) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut given, mut total) = (0usize, 0usize);
        // Per match line given: whether its record or text was cut (marked as read_session
        // marks a cut record).
        let mut truncated = Vec::new();
        for (_, name, result) in results {
            match result {
                Ok((sessions, seen, unsearched)) => {
                    total += seen;
                    for mut session in sessions {
                        let room = limit - given;
                        if room == 0 {
                            break;
                        }
                        given += keep_matches(&mut session.found, room);
                        for found in &mut session.found {
                            if let Found::Match {
                                record,
                                text,
                                spans,
                            } = found
                            {
                                let matched = spans
                                    .first()
                                    .and_then(|&[start, end]| text.get(start..end))
                                    .map(str::to_string);
                                let cut_text = cut_match(text, spans);
                                let cut_record = match &matched {
                                    Some(matched) => cut_record_around(record, matched),
                                    None => truncate_record(record),
                                };
                                truncated.push(cut_record || cut_text);
                            }
                        }
                        json_printer
                            .session(&mut lines, &name, &session)
                            .map_err(output)?;
                        text_printer
                            .session(&mut text, &name, &session)
                            .map_err(output)?;
                    }
                    for u in unsearched {
                        errors.push(json!({
                            "host": name,
                            "harness": u.harness,
                            "session": u.session,
                            "path": u.path,
                            "message": u.message,
                        }));
                    }
                }
                Err(err) => {
                    let message = host_failure(&name, &err);
                    if exit_status(&Err(err)) == exit::HOST {
                        self.pool.forget(&name).await;
                    }
                    text.extend_from_slice(format!("failed: {name}: {message}\n").as_bytes());
                    failed.push(json!({"host": name, "message": message}));
                }
            }
        }
        if total == 0 {
            text.extend_from_slice(b"no match\n");
        } else if total > given {
            text.extend_from_slice(
                format!("{} more matches not shown\n", total - given).as_bytes(),
            );
        }
        Ok(Answer {
            structured: json!({
                "matches": mark_truncated(parse_lines(&lines), &truncated),
                "more": total - given,
                "errors": errors,
                "failed": failed,
            }),
            text: String::from_utf8_lossy(&text).into_owned(),
        })
    }

    async fn resume_command(&self, args: tools::ResumeArgs) -> Result<Answer, Failure> {
        let (host_name, session_arg) = split_target(&args.target).map_err(invalid)?;
        let query = SessionQuery::parse(session_arg)
            .map_err(|e| invalid(format!("resume_command: {e}")))?;
        let query = &query;
        let (session, command, note) = self
            .on_host(host_name, |warm| async move {
                let reader = Reader::new(&warm.host);
                let session = reader
                    .resolve_session(&roots_for(&warm.roots, query.harness), query)
                    .await?;
                let explicit_root = warm
                    .roots
                    .iter()
                    .any(|r| r.harness == session.harness() && r.dir.is_some());
                let remote = self.pool.source().remote(host_name, &session.entry.root);
                let command = reader
                    .resume_command(&session, explicit_root, remote)
                    .await?;
                let note = crate::driver::unnamed_root_note(&session, explicit_root);
                Ok((session, command, note))
            })
            .await?;
        let mut structured = json!({
            "host": host_name,
            "harness": session.harness().name(),
            "session": session.id,
            "command": command,
        });
        let mut text = format!("{command}\n");
        if let Some(note) = note {
            text = format!("note: {note}\n{text}");
            structured["note"] = json!(note);
        }
        Ok(Answer { structured, text })
    }
}

/// A read of a session an earlier call resolved: no listing, and a tail's first read sized by
/// `limit` from the bytes per record of the last tail, so that a warm read is one exec on the
/// host.
async fn read_kept(
    warm: &pool::WarmHost,
    key: &str,
    kept: Kept,
    request: &ReadRequest,
) -> Result<(SessionFile, Page), DriverError> {
    let mut reader = Reader::new(&warm.host).with_filter(&request.filter);
    if request.page.mode == Mode::Tail
        && let Some(window) = kept.tail_window(request.page.limit)
    {
        reader = reader.with_tail_window(window);
    }
    let page = request.read_page(&reader, &kept.session).await?;
    keep(
        warm,
        key,
        kept.session.clone(),
        kept.bytes_per_record,
        &reader,
        &page,
    );
    Ok((kept.session, page))
}

/// A read that resolves the session first (found and first read in one exec where the host
/// allows, as the CLI's read), keeping the resolution for the next call.
async fn read_resolving(
    warm: &pool::WarmHost,
    key: &str,
    request: &ReadRequest,
) -> Result<(SessionFile, Page), DriverError> {
    let reader = Reader::new(&warm.host).with_filter(&request.filter);
    let session = request.resolve(&reader, &warm.roots).await?;
    let page = request.read_page(&reader, &session).await?;
    // Only a transcript of lines is read from its resolution alone; a database or a tree is
    // listed or loaded by every read anyway.
    if harness::source(&session) == Source::Lines && !request.query.is_latest() {
        keep(warm, key, session.clone(), None, &reader, &page);
    }
    Ok((session, page))
}

/// Keeps `session` for the next read of `key`: the size the page saw (where the next tail
/// starts), and after a tail, the bytes per record its page spanned (what sizes the next
/// tail's window); other pages keep what the last tail said.
fn keep(
    warm: &pool::WarmHost,
    key: &str,
    mut session: SessionFile,
    bytes_per_record: Option<u64>,
    reader: &Reader<'_, AnyHost>,
    page: &Page,
) {
    if let Cursor::Lines(cursor) = &page.cursor {
        session.entry.size = session.entry.size.max(cursor.window_end);
    }
    let bytes_per_record = reader
        .last_tail_bytes()
        .and_then(|bytes| kept::bytes_per_record(bytes, page.records.len()))
        .or(bytes_per_record);
    warm.sessions.keep(
        key,
        Kept {
            session,
            bytes_per_record,
        },
    );
}

/// Whether a read through a kept resolution failed in a way a fresh resolution may not: the
/// file is gone or is no longer one to read. The host's own failures (the caller reconnects)
/// and a bad cursor (the call's) are not.
fn resolved_again_after(error: &DriverError) -> bool {
    matches!(
        error,
        DriverError::Host(
            HostError::NotFound { .. } | HostError::PathRefused { .. } | HostError::Io { .. }
        ) | DriverError::Plan { .. }
            | DriverError::Source { .. }
    )
}

/// The read a `read_session` call asks for, made by the driver's request builder (as the CLI's
/// `read` makes its own); what is wrong with the arguments, as the model reads it. A read
/// through MCP is always redacted and never strict.
pub(crate) fn read_request(args: &tools::ReadSessionArgs) -> Result<ReadRequest, String> {
    let limit = tools::limit("read_session", args.limit)?;
    let (host_name, session_arg) = split_target(&args.target)?;
    let query = SessionQuery::parse(session_arg).map_err(|e| format!("read_session: {e}"))?;
    let pages = match (args.mode, &args.cursor) {
        (ReadMode::Since, Some(cursor)) => {
            Pages::Since(Cursor::decode(cursor).map_err(|e| format!("read_session: {e}"))?)
        }
        (ReadMode::Since, None) => {
            return Err("read_session: mode `since` needs `cursor` (a page's cursor)".to_string());
        }
        (_, Some(_)) => return Err("read_session: `cursor` goes with mode `since`".to_string()),
        (ReadMode::Head, None) => Pages::Head,
        (ReadMode::Tail, None) => Pages::Tail,
    };
    // No time is parsed: now in UTC (finding the system's zone walks the zone database).
    let now = jiff::Timestamp::now().to_zoned_datetime(jiff::tz::TimeZone::UTC);
    let filter = RecordFilter::parse(&args.kinds, None, None, None, &now)
        .map_err(|e| format!("read_session: {e}"))?;
    Ok(ReadRequest::new(host_name, query, pages, limit, filter))
}

/// The session argument a query was parsed from (`[HARNESS/]ID`): what a kept resolution is
/// found by.
fn kept_key(query: &SessionQuery) -> String {
    match query.harness {
        Some(harness) => format!("{}/{}", harness.name(), query.id),
        None => query.id.clone(),
    }
}

/// `HOST:SESSION`, split at the first `:`; a bare `SESSION` is on `local` (as the CLI reads it).
fn split_target(target: &str) -> Result<(&str, &str), String> {
    match target.split_once(':') {
        Some((host, session)) if !host.is_empty() && !session.is_empty() => Ok((host, session)),
        None if !target.is_empty() => Ok(("local", target)),
        _ => Err(format!(
            "target `{target}` is not `HOST:SESSION` (e.g. `local:3f1c2a`)"
        )),
    }
}

/// NDJSON lines (as the CLI's `--json` writes them) as JSON values.
fn parse_lines(bytes: &[u8]) -> Vec<Value> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        // The renderer writes JSON: a line that is not would be a bug here, not the model's.
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect()
}

/// Marks `truncated: true` on the records of the match lines whose flag says they were cut.
fn mark_truncated(mut matches: Vec<Value>, truncated: &[bool]) -> Vec<Value> {
    for (line, &cut) in matches.iter_mut().zip(truncated) {
        if cut && let Some(record) = line.get_mut("record").and_then(Value::as_object_mut) {
            record.insert("truncated".to_string(), Value::Bool(true));
        }
    }
    matches
}

/// Keeps the first `room` matches of a session's search (and what is found among them);
/// returns how many matches it kept.
fn keep_matches(found: &mut Vec<clankie_engine::search::Found>, room: usize) -> usize {
    use clankie_engine::search::Found;
    let mut kept = 0;
    let end = found
        .iter()
        .position(|f| {
            if matches!(f, Found::Match { .. }) {
                if kept == room {
                    return true;
                }
                kept += 1;
            }
            false
        })
        .unwrap_or(found.len());
    found.truncate(end);
    kept
}

fn output(e: std::io::Error) -> Failure {
    Failure::Tool(format!("cannot render the answer: {e}"))
}

/// Cuts a record's text (or its tool input, written as JSON) to [`MAX_RECORD_TEXT_BYTES`];
/// returns whether it cut.
fn truncate_record(record: &mut Record) -> bool {
    match &mut record.body {
        RecordBody::Text { text, .. } => cut(text.make_plain()),
        RecordBody::ToolResult { output, .. } => cut(output.make_plain()),
        RecordBody::ToolCall { input, .. } => {
            let mut written = input.to_string();
            if written.len() <= MAX_RECORD_TEXT_BYTES {
                return false;
            }
            // Cut JSON is no longer JSON: it is given as the string it was cut from.
            cut(&mut written);
            *input = Value::String(written);
            true
        }
    }
}

/// A failed call's message as the model reads it: the tools named where the CLI's message
/// names a command.
fn tool_message(error: &Error) -> String {
    match error {
        Error::Driver(DriverError::NotFound { host, id, searched }) => format!(
            "no session `{id}` on {host} ({searched}); list its sessions with the list_sessions tool (`host`: \"{host}\")"
        ),
        error => error.to_string(),
    }
}

/// What failed on one host of several (`search`, `check`), given next to the host's name:
/// the message without that name again in front.
fn host_failure(host: &str, error: &Error) -> String {
    let message = tool_message(error);
    match message
        .strip_prefix(host)
        .and_then(|m| m.strip_prefix(": "))
    {
        Some(rest) => rest.to_string(),
        None => message,
    }
}

/// Cuts a match's `text` to at most [`MAX_RECORD_TEXT_BYTES`] around its first match
/// ([`cut_around`]), its spans moved with it (those outside the cut dropped). Whether it cut.
fn cut_match(text: &mut String, spans: &mut Vec<[usize; 2]>) -> bool {
    let at = spans.first().map_or(0, |&[start, _]| start);
    let Some(window) = cut_around(text, at) else {
        return false;
    };
    spans.retain(|&[start, end]| start >= window.from && end <= window.to);
    for span in spans.iter_mut() {
        *span = [
            span[0] - window.from + window.lead,
            span[1] - window.from + window.lead,
        ];
    }
    true
}

/// Cuts a matching record's text, output or input around where it holds `matched` (the first
/// match's text), as [`cut_match`] cuts the text searched; a record that does not hold it as
/// written is cut as `read_session` cuts one. Whether it cut.
fn cut_record_around(record: &mut Record, matched: &str) -> bool {
    let around = |text: &mut String| match text.find(matched) {
        Some(at) => cut_around(text, at).is_some(),
        None => cut(text),
    };
    match &mut record.body {
        RecordBody::Text { text, .. } => around(text.make_plain()),
        RecordBody::ToolResult { output, .. } => around(output.make_plain()),
        RecordBody::ToolCall { input, .. } => {
            let mut written = input.to_string();
            if written.len() <= MAX_RECORD_TEXT_BYTES {
                return false;
            }
            // Cut JSON is no longer JSON: it is given as the string it was cut from.
            around(&mut written);
            *input = Value::String(written);
            true
        }
    }
}

/// Where [`cut_around`] cut: the bytes `from..to` of the text were kept, after a marker of
/// `lead` bytes.
struct Window {
    from: usize,
    to: usize,
    lead: usize,
}

/// Cuts `text` to at most [`MAX_RECORD_TEXT_BYTES`] (and its markers) around byte `at`, a
/// quarter of the room before it, on character boundaries; what was left out at either end is
/// marked (`[… 1200 bytes cut] `, ` [800 bytes cut …]`). `None` when the text fits.
fn cut_around(text: &mut String, at: usize) -> Option<Window> {
    if text.len() <= MAX_RECORD_TEXT_BYTES {
        return None;
    }
    let floor = |text: &str, mut i: usize| {
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let at = at.min(text.len());
    // A window that would run past the end starts earlier, keeping its room.
    let from = at
        .saturating_sub(MAX_RECORD_TEXT_BYTES / 4)
        .min(text.len() - MAX_RECORD_TEXT_BYTES);
    let from = floor(text, from);
    let to = floor(text, (from + MAX_RECORD_TEXT_BYTES).min(text.len()));
    let lead = if from > 0 {
        format!("[… {from} bytes cut] ")
    } else {
        String::new()
    };
    let trail = if to < text.len() {
        format!(" [{} bytes cut …]", text.len() - to)
    } else {
        String::new()
    };
    *text = format!("{lead}{}{trail}", &text[from..to]);
    Some(Window {
        from,
        to,
        lead: lead.len(),
    })
}

/// Cuts `text` to at most [`MAX_RECORD_TEXT_BYTES`] on a character boundary.
fn cut(text: &mut String) -> bool {
    if text.len() <= MAX_RECORD_TEXT_BYTES {
        return false;
    }
    let mut end = MAX_RECORD_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A match past the bound is kept: the text is cut around it, marked at both ends, and
    /// its spans still point at it; a text that fits is left alone.
    #[test]
    fn a_long_text_is_cut_around_its_first_match() {
        let long = format!("{}é NEEDLE{}", "a".repeat(20_000), "é".repeat(10_000));
        let at = long.find("NEEDLE").unwrap();
        let mut text = long.clone();
        let mut spans = vec![[at, at + 6], [3, 4]];
        assert!(cut_match(&mut text, &mut spans));
        assert_eq!(spans.len(), 1);
        assert_eq!(&text[spans[0][0]..spans[0][1]], "NEEDLE");
        assert!(
            text.starts_with("[… ") && text.ends_with(" bytes cut …]"),
            "{text}"
        );
        let kept = text.len() - "[… 18463 bytes cut] ".len() - " [12345 bytes cut …]".len();
        assert!(kept <= MAX_RECORD_TEXT_BYTES);
        // Near the end: the window keeps its room, and nothing is cut after it.
        let mut text = format!("{}NEEDLE", "a".repeat(20_000));
        let mut spans = vec![[20_000, 20_006]];
        assert!(cut_match(&mut text, &mut spans));
        assert!(text.ends_with("NEEDLE") && text.starts_with("[… "));
        assert_eq!(&text[spans[0][0]..spans[0][1]], "NEEDLE");
        let mut short = "short NEEDLE".to_string();
        let mut spans = vec![[6, 12]];
        assert!(!cut_match(&mut short, &mut spans));
        assert_eq!(spans, [[6, 12]]);
    }

    /// A host's failure given next to its name does not name it again; the CLI's command
    /// hint becomes the tool's name.
    #[test]
    fn failures_name_the_host_once_and_the_tools() {
        let refused = Error::Driver(DriverError::Host(HostError::Unreachable {
            host: "devbox".into(),
            reason: "refused".into(),
        }));
        assert_eq!(host_failure("devbox", &refused), "cannot connect: refused");
        assert_eq!(
            host_failure("other", &refused),
            "devbox: cannot connect: refused"
        );
        let missing = Error::Driver(DriverError::NotFound {
            host: "devbox".into(),
            id: "abc123".into(),
            searched: "searched /h/.claude".into(),
        });
        let said = tool_message(&missing);
        assert!(said.contains("list_sessions tool"), "{said}");
        assert!(!said.contains("clankie-read"), "{said}");
    }

    #[test]
    fn long_texts_are_cut_on_a_character_boundary() {
        let mut text = "é".repeat(MAX_RECORD_TEXT_BYTES);
        assert!(cut(&mut text));
        assert_eq!(text.len(), MAX_RECORD_TEXT_BYTES);
        let mut short = "short".to_string();
        assert!(!cut(&mut short));
        let mut record = Record {
            id: "a".into(),
            harness: clankie_engine::harness::by_name("claude").unwrap(),
            session: "s".into(),
            ts: None,
            agent: None,
            sidechain: false,
            model: None,
            usage: None,
            body: RecordBody::ToolCall {
                call_id: "c".into(),
                name: "Bash".into(),
                input: json!({"command": "x".repeat(MAX_RECORD_TEXT_BYTES)}),
                by_user: false,
            },
        };
        assert!(truncate_record(&mut record));
        let RecordBody::ToolCall { input, .. } = &record.body else {
            unreachable!()
        };
        assert!(input.as_str().unwrap().starts_with("{\"command\":\"xxx"));
    }

    #[test]
    fn targets_split_as_the_cli_splits_them() {
        assert_eq!(split_target("box:abc123"), Ok(("box", "abc123")));
        assert_eq!(split_target("abc123"), Ok(("local", "abc123")));
        assert!(split_target(":x").is_err());
    }
}
