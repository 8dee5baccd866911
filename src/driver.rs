//! The driver: the one module that knows both the engine and the hosts. It resolves a session
//! from a host's listing, runs the engine's read planner against the host's read primitive,
//! and hands records to the caller as they complete.

use crate::engine::SourceCtx;
use crate::engine::cursor::{CursorError, binding};
use crate::engine::plan::{Mode, Page, PageRequest, PlanError, ReadPlan};
use crate::engine::redact;
use crate::engine::session::{self, ResolveError, SessionFile, SessionQuery};
use crate::host::{FileRef, Host, HostError};
use crate::model::{Harness, Listing, Record, RootSpec};

/// Everything that can end a read, by layer.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error(transparent)]
    Host(#[from] HostError),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Cursor(#[from] CursorError),
    #[error("{path}: {source}")]
    Plan { path: String, source: PlanError },
}

/// The roots to list on a host: an explicit `--root`/hosts-file root replaces that harness's
/// default; other harnesses keep theirs.
pub fn roots_for(overrides: &[RootSpec], harness: Option<Harness>) -> Vec<RootSpec> {
    Harness::ALL
        .into_iter()
        .filter(|h| harness.is_none_or(|only| only == *h))
        .map(|h| {
            overrides
                .iter()
                .find(|r| r.harness == h)
                .cloned()
                .unwrap_or_else(|| RootSpec::default_for(h))
        })
        .collect()
}

/// Lists a host and the sessions in it.
pub async fn list_sessions<H: Host>(
    host: &H,
    roots: &[RootSpec],
) -> Result<(Listing, Vec<SessionFile>), HostError> {
    let listing = host.list(roots).await?;
    let sessions = session::sessions(&listing.files);
    Ok((listing, sessions))
}

/// Resolves a session argument on a host.
pub async fn resolve_session<H: Host>(
    host: &H,
    roots: &[RootSpec],
    query: &SessionQuery,
) -> Result<SessionFile, DriverError> {
    let roots: Vec<RootSpec> = match query.harness {
        Some(h) => roots.iter().filter(|r| r.harness == h).cloned().collect(),
        None => roots.to_vec(),
    };
    let (_, sessions) = list_sessions(host, &roots).await?;
    Ok(session::resolve(&sessions, query)?.clone())
}

/// The source context records of a session carry.
pub fn source_ctx(host: &str, session: &SessionFile) -> SourceCtx {
    SourceCtx {
        host: host.to_string(),
        harness: session.harness(),
        session: session.id.clone(),
        agent: session.agent.clone(),
    }
}

/// Reads one page of a resolved session, calling `emit` with records as they complete (for
/// `--all`, which streams). The returned page holds no records that were already emitted.
pub async fn read_page<H: Host>(
    host: &H,
    session: &SessionFile,
    request: PageRequest,
    mut emit: impl FnMut(Vec<Record>),
) -> Result<Page, DriverError> {
    let ctx = source_ctx(host.name(), session);
    if let Mode::Since(cursor) = &request.mode {
        cursor.check_binding(&binding(&ctx.host, ctx.harness.name(), &ctx.session))?;
    }
    let stream = matches!(request.mode, Mode::All);
    let request_redact = request.redact;
    let file = FileRef {
        harness: session.harness(),
        root: session.entry.root.clone(),
        rel: session.entry.rel.clone(),
    };
    let path = String::from_utf8_lossy(&session.entry.full_path()).into_owned();
    let mut plan = ReadPlan::new(ctx, request, session.entry.size);
    while let Some(ranges) = plan.next_read() {
        let result = host.read(&file, &ranges).await?;
        plan.feed(result.chunks, result.size)
            .map_err(|source| DriverError::Plan {
                path: path.clone(),
                source,
            })?;
        if stream {
            let mut records = plan.take_records();
            if !records.is_empty() {
                redact_records(request_redact, &mut records);
                emit(records);
            }
        }
    }
    let mut page = plan.finish();
    redact_records(request_redact, &mut page.records);
    Ok(page)
}

/// Secrets never leave the reader: every record is redacted before anyone renders it.
fn redact_records(redact: bool, records: &mut [Record]) {
    if redact {
        records.iter_mut().for_each(|r| {
            redact::redact_record(r);
        });
    }
}
