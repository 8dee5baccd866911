//! The driver: the one module that knows both the engine and the hosts. It resolves a session
//! from a host's listing, runs the engine's read planner against the host's read primitive,
//! and hands records to the caller as they complete.

use crate::engine::SourceCtx;
use crate::engine::cursor::{Cursor, CursorError, binding};
use crate::engine::plan::{Mode, Page, PageRequest, PlanError, ReadPlan};
use crate::engine::session::{self, ResolveError, SessionFile, SessionQuery};
use crate::host::{FileRef, Host, HostError};
use crate::model::{ByteRange, Harness, Listing, Record, RootSpec};

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
    #[error(transparent)]
    Database(#[from] crate::sqlite::DatabaseError),
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

/// Lists a host and the sessions in it. Sessions of a database are its rows (the database is
/// copied and queried); a database that cannot be read is one line in `listing.unreadable`.
pub async fn list_sessions<H: Host>(
    host: &H,
    roots: &[RootSpec],
) -> Result<(Listing, Vec<SessionFile>), HostError> {
    let (listing, sessions, _) = list_all(host, roots).await?;
    Ok((listing, sessions))
}

/// [`list_sessions`], keeping the errors of databases that could not be read.
async fn list_all<H: Host>(
    host: &H,
    roots: &[RootSpec],
) -> Result<(Listing, Vec<SessionFile>, Vec<DriverError>), HostError> {
    let mut listing = host.list(roots).await?;
    let mut sessions = session::sessions(&listing.files);
    let mut errors = Vec::new();
    for db in crate::sqlite::databases(&listing) {
        let found = match crate::sqlite::load(host, &db.db).await {
            Ok(snapshot) => snapshot.sessions(&db.db).map_err(DriverError::from),
            Err(e) => Err(e),
        };
        match found {
            Ok(found) => sessions.extend(found),
            // An unreachable host fails the listing as it would for files.
            Err(DriverError::Host(
                e @ (HostError::Unreachable { .. } | HostError::Auth { .. }),
            )) => {
                return Err(e);
            }
            Err(e) => {
                listing.unreadable.push(e.to_string());
                errors.push(e);
            }
        }
    }
    sessions.sort_by(|a, b| {
        (a.harness(), &a.id, &a.entry.rel).cmp(&(b.harness(), &b.id, &b.entry.rel))
    });
    Ok((listing, sessions, errors))
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
    let (_, sessions, mut db_errors) = list_all(host, &roots).await?;
    match session::resolve(&sessions, query) {
        Ok(found) => Ok(found.clone()),
        // The session may be in the database that could not be read: say why.
        Err(ResolveError::NotFound(_)) if !db_errors.is_empty() => Err(db_errors.remove(0)),
        Err(e) => Err(e.into()),
    }
}

/// What `resume` prints for a session: the harness's own command, from the session's directory
/// as its records (or sidecar file) name it. A sidecar that cannot be read leaves the `cd` out.
pub async fn resume_command<H: Host>(
    host: &H,
    session: &SessionFile,
) -> Result<String, DriverError> {
    use crate::engine::resume;
    let harness = session.harness();
    if harness.is_sqlite() {
        let snapshot = crate::sqlite::load(host, &session.entry).await?;
        let cwd = snapshot.session_cwd(&session.id)?;
        let path = String::from_utf8_lossy(&session.entry.full_path()).into_owned();
        return Ok(resume::resume_command(
            harness,
            &session.id,
            &path,
            cwd.as_deref(),
        ));
    }
    let file = FileRef {
        harness,
        root: session.entry.root.clone(),
        rel: session.entry.rel.clone(),
    };
    let head_range = [ByteRange::new(0, resume::HEAD_BYTES)];
    let head = host.read(&file, &head_range).await?.chunks.concat();
    let cwd = match resume::cwd_source(harness) {
        None => resume::session_cwd(harness, &head),
        Some(sidecar) => {
            let dir = match session.entry.rel.iter().rposition(|&b| b == b'/') {
                Some(i) => &session.entry.rel[..i],
                None => &b""[..],
            };
            let mut rel = dir.to_vec();
            for part in sidecar.split('/') {
                if part == ".." {
                    let cut = rel.iter().rposition(|&b| b == b'/').unwrap_or(0);
                    rel.truncate(cut);
                } else {
                    rel.push(b'/');
                    rel.extend_from_slice(part.as_bytes());
                }
            }
            let sidecar = FileRef {
                rel,
                ..file.clone()
            };
            match host.read(&sidecar, &head_range).await {
                Ok(result) => resume::session_cwd(harness, &result.chunks.concat()),
                Err(_) => None,
            }
        }
    };
    let id = resume::native_id(harness, &head).unwrap_or_else(|| session.id.clone());
    let path = String::from_utf8_lossy(&session.entry.full_path()).into_owned();
    Ok(resume::resume_command(harness, &id, &path, cwd.as_deref()))
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
        if matches!(cursor, Cursor::Rows(_)) != ctx.harness.is_sqlite() {
            return Err(CursorError::Invalid("cursor class does not match the source").into());
        }
    }
    let stream = matches!(request.mode, Mode::All);
    if ctx.harness.is_sqlite() {
        // Sessions of a database: copy it, query the session's rows, page over the records.
        let snapshot = crate::sqlite::load(host, &session.entry).await?;
        let rows = snapshot.records(&ctx)?;
        let mut page = crate::engine::rows::page(&ctx, rows, &request).map_err(|source| {
            DriverError::Plan {
                path: String::from_utf8_lossy(&session.entry.full_path()).into_owned(),
                source,
            }
        })?;
        if stream && !page.records.is_empty() {
            emit(std::mem::take(&mut page.records));
        }
        return Ok(page);
    }
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
            let records = plan.take_records();
            if !records.is_empty() {
                emit(records);
            }
        }
    }
    Ok(plan.finish())
}
