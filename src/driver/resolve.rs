//! Finding sessions: a host listed and its sessions named (files, database rows, files named by
//! what they hold), and a user's session argument resolved to one of them, where it can in
//! the same round trip as the session's first read ([`Reader::resolve_for_read`]).

use std::collections::HashMap;

use clankie_engine::SourceCtx;
use clankie_engine::cursor::Cursor;
use clankie_engine::harness::{self, Source};
use clankie_engine::page::{Mode, PageRequest};
use clankie_engine::plan::ReadPlan;
use clankie_engine::resolve::{self, ResolveError, SessionQuery};
use clankie_engine::session::SessionFile;
use clankie_host::{FileRef, Host, HostError, ReadEnds};
use clankie_model::{ByteRange, FileEntry, Harness, LeftOut, Listing, RootSpec};

use super::prefetch::Prefetched;
use super::{DriverError, Reader, file_ref};

impl<'h, H: Host> Reader<'h, H> {
    /// Lists a host and the sessions in it. Sessions of a database are its rows (the database is
    /// queried, page by page); a database that cannot be read is one line in `listing.unreadable`.
    pub async fn list_sessions(
        &self,
        roots: &[RootSpec],
    ) -> Result<(Listing, Vec<SessionFile>), HostError> {
        let (listing, sessions, _) = self.list_all(roots, None, None).await?;
        Ok((listing, sessions))
    }

    /// [`list_sessions`], reading along the whole of the small files the host finds (at most
    /// `max_file` bytes each, [`Host::list_reading`]): kept for [`prefetch_first_reads`], which
    /// serves a session's first read from them when its file is still the size it was listed
    /// at, and batches only the others. For a run that reads every session (a first `check`).
    ///
    /// [`list_sessions`]: Reader::list_sessions
    /// [`prefetch_first_reads`]: Reader::prefetch_first_reads
    pub async fn list_sessions_reading(
        &self,
        roots: &[RootSpec],
        max_file: u64,
    ) -> Result<(Listing, Vec<SessionFile>), HostError> {
        let (listing, sessions, _) = self.list_all(roots, None, Some((max_file, None))).await?;
        Ok((listing, sessions))
    }

    /// [`list_sessions_reading`], reading along also the two ends of each larger file
    /// ([`Host::list_reading_ends`]): kept for [`tail_pages`], which serves a session's first
    /// read from them when its file is still the size it was listed at and the read asks
    /// bytes they hold. For a first `check`.
    ///
    /// [`list_sessions_reading`]: Reader::list_sessions_reading
    /// [`tail_pages`]: Reader::tail_pages
    pub async fn list_sessions_reading_ends(
        &self,
        roots: &[RootSpec],
        max_file: u64,
        ends: ReadEnds,
    ) -> Result<(Listing, Vec<SessionFile>), HostError> {
        let along = Some((max_file, Some(ends)));
        let (listing, sessions, _) = self.list_all(roots, None, along).await?;
        Ok((listing, sessions))
    }

    /// [`list_sessions`], keeping the errors of databases that could not be read. With `wanted`
    /// (what a user typed), files named by what they hold are read only if they could be it.
    async fn list_all(
        &self,
        roots: &[RootSpec],
        wanted: Option<&str>,
        read_along: Option<(u64, Option<ReadEnds>)>,
    ) -> Result<(Listing, Vec<SessionFile>, Vec<DriverError>), HostError> {
        let mut listing = match read_along {
            Some((max_file, ends)) => {
                let (listing, reads, ends) = match ends {
                    Some(ends) => self.host.list_reading_ends(roots, max_file, ends).await?,
                    None => {
                        let (listing, reads) = self.host.list_reading(roots, max_file).await?;
                        (listing, reads, Vec::new())
                    }
                };
                let mut whole = self.whole.lock().unwrap_or_else(|e| e.into_inner());
                for (file, result) in reads {
                    whole.insert((file.root.clone(), file.rel.clone()), (file, result));
                }
                let mut kept = self.ends.lock().unwrap_or_else(|e| e.into_inner());
                for (file, read) in ends {
                    kept.insert((file.root, file.rel), read);
                }
                listing
            }
            None => self.host.list(roots).await?,
        };
        leave_out_non_utf8(&mut listing);
        let sessions = harness::sessions(&listing.files);
        // Files whose session id is written inside them: Gemini's header (a session of its
        // own, renamed) and a subagent naming its parent (listed only from its head). Their
        // first bytes are read in one batch; one that cannot be read keeps its own name.
        let named_inside: Vec<FileEntry> = harness::named_inside(&listing.files)
            .filter(|f| wanted.is_none_or(|id| harness::may_be_named_inside(f, id)))
            .cloned()
            .collect();
        let id_in_head = sessions
            .iter()
            .filter(|s| harness::id_in_head(s))
            .map(|s| &s.entry);
        let mut heads = self.read_heads(id_in_head.chain(&named_inside)).await?;
        let mut sessions =
            harness::adopt_native_ids(sessions, |s| heads.remove(&head_key(&s.entry)));
        for entry in named_inside {
            let head = heads.remove(&head_key(&entry)).unwrap_or_default();
            sessions.extend(harness::session_from_head(&entry, &head));
        }
        let (found, database_ids, errors) = self
            .database_sessions(&mut listing, wanted.is_some(), None)
            .await?;
        sessions.extend(found);
        // A session both in a database and in the file tree it was migrated from is the
        // database's (OpenCode copies the tree into the database and leaves it on disk).
        sessions.retain(|s| {
            harness::source(s) != Source::Tree
                || !database_ids.contains(&(s.harness(), s.id.clone()))
        });
        sessions.sort_by(|a, b| {
            (a.harness(), &a.id, &a.entry.rel).cmp(&(b.harness(), &b.id, &b.entry.rel))
        });
        Ok((listing, sessions, errors))
    }

    /// The sessions of the databases `listing` holds, their ids, and the errors of those that
    /// could not be read (each also a line in `listing.unreadable`). `resolving`: for a session
    /// that is read at once, which checks the database after its own query
    /// ([`crate::sqlite::Snapshot::sessions_to_resolve`]).
    async fn database_sessions(
        &self,
        listing: &mut Listing,
        resolving: bool,
        ahead: Option<(&str, usize)>,
    ) -> Result<DatabaseSessions, HostError> {
        let mut sessions = Vec::new();
        let mut errors = Vec::new();
        let databases: Vec<_> = harness::databases(&listing.files).cloned().collect();
        let mut database_ids = std::collections::HashSet::new();
        for db in databases {
            // A database session's size is the database's and its WAL's, where its newest rows
            // may be until a checkpoint.
            let mut wal_name = db.rel.clone();
            wal_name.extend_from_slice(b"-wal");
            let wal_size = listing
                .files
                .iter()
                .find(|f| f.harness == db.harness && f.root == db.root && f.rel == wal_name)
                .map_or(0, |wal| wal.size);
            let found = match self.databases.load(self.host, &db).await {
                Ok(snapshot) if resolving => snapshot
                    .sessions_to_resolve(&db, wal_size, ahead.map(|(id, n)| (id.to_string(), n)))
                    .await
                    .map_err(DriverError::from),
                Ok(snapshot) => snapshot
                    .sessions(&db, wal_size)
                    .await
                    .map_err(DriverError::from),
                Err(e) => Err(e.into()),
            };
            if let Ok(found) = &found {
                database_ids.extend(found.iter().map(|s| (s.harness(), s.id.clone())));
            }
            match found {
                Ok(found) => sessions.extend(found),
                // An unreachable or stalled host fails the listing as it would for files.
                Err(DriverError::Host(e)) if e.is_host_wide() => return Err(e),
                Err(e) => {
                    listing.unreadable.push(LeftOut {
                        harness: db.harness,
                        path: db.full_path(),
                        message: e.to_string(),
                    });
                    errors.push(e);
                }
            }
        }
        Ok((sessions, database_ids, errors))
    }

    /// The first [`NAMING_HEAD_BYTES`] of each of `files`, read in one batch
    /// ([`Host::read_many`]: few round trips). A file that cannot be read is left out; an
    /// unreachable or stalled host fails the listing, as it would for the listing itself.
    ///
    /// [`NAMING_HEAD_BYTES`]: clankie_model::limits::NAMING_HEAD_BYTES
    async fn read_heads<'f>(
        &self,
        files: impl Iterator<Item = &'f FileEntry>,
    ) -> Result<HashMap<HeadKey, Vec<u8>>, HostError> {
        let range = vec![ByteRange::new(0, clankie_model::limits::NAMING_HEAD_BYTES)];
        let reads: Vec<(FileRef, Vec<ByteRange>)> =
            files.map(|f| (file_ref(f), range.clone())).collect();
        if reads.is_empty() {
            return Ok(HashMap::new());
        }
        let results = self.host.read_many(&reads).await?;
        let mut heads = HashMap::with_capacity(reads.len());
        for ((file, _), result) in reads.into_iter().zip(results) {
            match result {
                Ok(result) => {
                    heads.insert((file.root.into(), file.rel), result.chunks.concat());
                }
                Err(e) if e.is_host_wide() => return Err(e),
                Err(_) => {}
            }
        }
        Ok(heads)
    }

    /// Resolves a session argument on a host.
    pub async fn resolve_session(
        &self,
        roots: &[RootSpec],
        query: &SessionQuery,
    ) -> Result<SessionFile, DriverError> {
        let roots: Vec<RootSpec> = match query.harness {
            Some(h) => roots.iter().filter(|r| r.harness == h).cloned().collect(),
            None => roots.to_vec(),
        };
        // The newest session is any of them: none is left out of the listing.
        let wanted = (!query.is_latest()).then_some(query.id.as_str());
        let (listing, sessions, mut db_errors) = self.list_all(&roots, wanted, None).await?;
        match resolve::resolve(&sessions, query) {
            Ok(found) => Ok(found.clone()),
            // The session may be in the database that could not be read: say why.
            Err(ResolveError::NotFound(_)) if !db_errors.is_empty() => Err(db_errors.remove(0)),
            Err(ResolveError::NotFound(id)) => {
                let existing: Vec<String> = listing
                    .roots
                    .iter()
                    .filter(|r| r.exists)
                    .map(|r| String::from_utf8_lossy(&r.dir).into_owned())
                    .collect();
                let mut searched = if existing.is_empty() {
                    "no harness directory exists there".to_string()
                } else {
                    format!("searched {}", existing.join(", "))
                };
                // A root the user gave (`--root`, the hosts file) that is missing is named: it
                // is the likely reason.
                for root in listing.roots.iter().filter(|r| !r.exists) {
                    if roots
                        .iter()
                        .any(|r| r.harness == root.harness && r.dir.is_some())
                    {
                        searched.push_str(&format!(
                            "; no {} root at {}{}",
                            root.harness,
                            String::from_utf8_lossy(&root.dir),
                            root.harness.list_spec().where_sessions_go()
                        ));
                    }
                }
                Err(DriverError::NotFound {
                    host: self.host.name().to_string(),
                    id,
                    searched,
                })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Resolves a session for a read of `request`, and when it can, reads its first range in
    /// the same round trip ([`Host::find_and_read`]): the files whose path holds the id are
    /// found, and the one among them is read at once. The full listing ([`resolve_session`])
    /// is the fallback whenever that cannot answer alone: no match, several, a session that is
    /// not one file of lines, a subagent id (named inside its file, not by its path), or a
    /// prefix on a host with a database (whose rows the narrowed listing does not open).
    ///
    /// [`resolve_session`]: Reader::resolve_session
    pub async fn resolve_for_read(
        &self,
        roots: &[RootSpec],
        query: &SessionQuery,
        request: &PageRequest,
    ) -> Result<SessionFile, DriverError> {
        // Subagent ids (`PARENT+agent-X`, `agent-X`) are named inside their files.
        // The newest session is found by listing the host.
        if query.is_latest()
            || query.id.contains('+')
            || query.id.starts_with("agent-")
            || !clankie_host::is_plain_id(&query.id)
        {
            return self.resolve_session(roots, query).await;
        }
        let scoped: Vec<RootSpec> = match query.harness {
            Some(h) => roots.iter().filter(|r| r.harness == h).cloned().collect(),
            None => roots.to_vec(),
        };
        let Some(first) = first_read(&scoped, query, request, self.tail_window) else {
            return self.resolve_session(roots, query).await;
        };
        // A cursor names the file it was made from: the host tries it before looking.
        let hint = match &request.mode {
            Mode::Since(Cursor::Lines(cursor)) => cursor.hint.as_ref(),
            _ => None,
        };
        // When no path holds the id, the databases' loads start from what this call reads of
        // them (their headers and first pages): no round trip of their own.
        let tops: Vec<clankie_host::TopReads> = scoped
            .iter()
            .filter(|r| r.harness.is_sqlite())
            .map(|r| clankie_host::TopReads {
                harness: r.harness,
                ranges: crate::sqlite::first_reads(),
            })
            .collect();
        let began = std::time::Instant::now();
        let mut found = self
            .host
            .find_and_read(&scoped, &query.id, &first, hint, &tops)
            .await?;
        self.seed_databases(began, std::mem::take(&mut found.tops));
        // A session of a database is found by no path: the databases of the narrowed listing
        // are asked first.
        let narrowed = found.read.is_none().then(|| found.listing.clone());
        // Decided in a function of its own, so that the narrowed listing is gone before a
        // fallback lists the whole host (a host may answer with a listing at the bounds).
        if let Some(session) = self.accept_found(found, query, &first) {
            return Ok(session);
        }
        if let Some(listing) = narrowed
            && let Some(session) = self.found_in_databases(listing, query, request).await?
        {
            return Ok(session);
        }
        self.resolve_session(roots, query).await
    }

    /// Hands what a call that began at `began` read of the databases and their WALs (`tops`:
    /// [`crate::sqlite::first_reads`] of each top file listed) to their next loads
    /// ([`crate::sqlite::Databases::seed`]); a WAL not among them was not there.
    fn seed_databases(
        &self,
        began: std::time::Instant,
        mut tops: Vec<(FileEntry, Result<clankie_model::ReadResult, HostError>)>,
    ) {
        let is_wal_of = |wal: &FileEntry, db: &FileEntry| {
            wal.harness == db.harness
                && wal.root == db.root
                && wal.rel.strip_suffix(b"-wal") == Some(&db.rel[..])
        };
        let databases: Vec<FileEntry> =
            harness::databases(&tops.iter().map(|(f, _)| f.clone()).collect::<Vec<_>>())
                .cloned()
                .collect();
        for db in databases {
            let Some(at) = tops.iter().position(|(f, _)| *f == db) else {
                continue;
            };
            let (_, db_read) = tops.swap_remove(at);
            let wal_read = match tops.iter().position(|(f, _)| is_wal_of(f, &db)) {
                Some(at) => tops.swap_remove(at).1,
                None => Err(HostError::NotFound {
                    host: self.host.name().to_string(),
                    path: String::from_utf8_lossy(&db.full_path()).into_owned() + "-wal",
                }),
            };
            if let Ok(db_read) = db_read {
                self.databases
                    .seed(self.host, &db, began, db_read, wal_read);
            }
        }
    }

    /// The session of a database named exactly by `query`, from the databases of the narrowed
    /// listing of [`Host::find_and_read`] (which lists them whole), with no full listing: no
    /// file's path held the id, and an exact id names one session (as a path that holds it
    /// does for [`Reader::accept_found`]). `None` when that does not settle it: no database,
    /// one that could not be read, a prefix, or a session found by its path after all.
    async fn found_in_databases(
        &self,
        mut listing: Listing,
        query: &SessionQuery,
        request: &PageRequest,
    ) -> Result<Option<SessionFile>, HostError> {
        // A tail page reads the session's newest rows next: fetched with the sessions' (see
        // `Snapshot::sessions_to_resolve`).
        let ahead = matches!(request.mode, Mode::Tail).then(|| {
            (
                query.id.as_str(),
                request.limit.clamp(1, clankie_model::limits::MAX_LIMIT),
            )
        });
        leave_out_non_utf8(&mut listing);
        if harness::databases(&listing.files).next().is_none() {
            return Ok(None);
        }
        let (mut sessions, _, errors) = self.database_sessions(&mut listing, true, ahead).await?;
        if !errors.is_empty() {
            return Ok(None);
        }
        sessions.extend(harness::sessions(&listing.files));
        Ok(resolve::resolve(&sessions, query)
            .ok()
            .filter(|s| s.id == query.id && harness::source(s) == Source::Database)
            .cloned())
    }

    /// The session [`resolve_for_read`] found in one call, when that call can answer alone
    /// (see there); its first read is kept for the page.
    ///
    /// [`resolve_for_read`]: Reader::resolve_for_read
    fn accept_found(
        &self,
        found: clankie_host::Found,
        query: &SessionQuery,
        first: &clankie_host::FirstRead,
    ) -> Option<SessionFile> {
        let (entry, read) = found.read?;
        let mut listing = found.listing;
        leave_out_non_utf8(&mut listing);
        let sessions = harness::sessions(&listing.files);
        let has_database = harness::databases(&listing.files).next().is_some();
        let session = resolve::resolve(&sessions, query).ok()?;
        // A session whose id is written inside its file (Gemini's header) is named only by
        // reading its head: the full path does that.
        let alone = !harness::id_in_head(session)
            && harness::source(session) == Source::Lines
            && session.entry.rel == entry.rel
            && session.entry.root == entry.root
            && (session.id == query.id || !has_database);
        if !alone {
            return None;
        }
        // A read that failed is not kept: the plan reads again and meets the error itself.
        if let Ok(result) = read {
            let file = file_ref(&session.entry);
            let ranges = first.ranges(result.size);
            self.prefetch(Prefetched::of_read(file, ranges, result));
        }
        Some(session.clone())
    }
}

/// The first read of `request` before the session (and its size) is known: the tail's ranges
/// counted from the end, or the plan's first ranges when they do not depend on the size (a
/// cursor's, a head's). `None` when a row cursor is given (only databases take one).
fn first_read(
    roots: &[RootSpec],
    query: &SessionQuery,
    request: &PageRequest,
    tail_window: Option<u64>,
) -> Option<clankie_host::FirstRead> {
    use clankie_engine::cursor::HEAD_BYTES;
    use clankie_model::limits::FIRST_CHUNK_BYTES;
    match &request.mode {
        // As the page's plan will ask ([`Reader::with_tail_window`]).
        Mode::Tail => Some(clankie_host::FirstRead::Tail {
            head: HEAD_BYTES,
            back: tail_window.map_or(FIRST_CHUNK_BYTES, clankie_engine::plan::tail_window),
            ahead: FIRST_CHUNK_BYTES,
        }),
        Mode::Since(Cursor::Rows(_)) | Mode::Before(Cursor::Rows(_)) => None,
        Mode::Since(Cursor::Lines(_)) | Mode::Before(Cursor::Lines(_)) | Mode::Head | Mode::All => {
            // The plan's first ranges here depend on the request alone; which harness and
            // session the context names does not change them (the page checks the binding).
            let harness = query.harness.or_else(|| roots.first().map(|r| r.harness))?;
            let ctx = SourceCtx {
                host: String::new(),
                harness,
                session: query.id.clone(),
                agent: None,
            };
            ReadPlan::new(ctx, request.clone(), 0)
                .next_read()
                .map(clankie_host::FirstRead::Ranges)
        }
    }
}

/// The sessions of a listing's databases, their ids, and the errors of those not read.
type DatabaseSessions = (
    Vec<SessionFile>,
    std::collections::HashSet<(Harness, String)>,
    Vec<DriverError>,
);

/// Leaves out the files whose path below the root is not UTF-8, with one line per directory
/// in `listing.unreadable`: session ids and the harnesses' path rules are text, and a lossy
/// name would address another file. Hosts list every name exactly; this is the one place, for
/// every host, where such names are dropped, and never unseen.
fn leave_out_non_utf8(listing: &mut Listing) {
    use std::collections::BTreeMap;
    /// The directory a line names: harness, root, its path below the root.
    type Named = (Harness, std::sync::Arc<[u8]>, Vec<u8>);
    // -> (whether the directory's own name is the cause, files left out)
    let mut dirs: BTreeMap<Named, (bool, usize)> = BTreeMap::new();
    listing.files.retain(|file| {
        if std::str::from_utf8(&file.rel).is_ok() {
            return true;
        }
        // The first component that is not UTF-8: a directory (named itself), or the file name
        // (its directory is named).
        let components: Vec<&[u8]> = file.rel.split(|&b| b == b'/').collect();
        let bad = components
            .iter()
            .position(|c| std::str::from_utf8(c).is_err())
            .unwrap_or(components.len() - 1);
        let is_dir = bad + 1 < components.len();
        let upto = if is_dir { bad + 1 } else { bad };
        let dir = components[..upto].join(&b'/');
        dirs.entry((file.harness, file.root.clone(), dir))
            .or_insert((is_dir, 0))
            .1 += 1;
        false
    });
    for ((harness, root, rel), (is_dir, count)) in dirs {
        let path = if rel.is_empty() {
            root.to_vec()
        } else {
            clankie_model::FileEntry {
                harness,
                root,
                rel,
                size: 0,
                mtime: 0,
                inode: None,
                ctime: None,
            }
            .full_path()
        };
        let shown = clankie_model::display_path(&path);
        let message = if is_dir {
            format!("{shown}: directory name is not UTF-8; its sessions are left out")
        } else if count == 1 {
            format!("{shown}: a file name here is not UTF-8; its session is left out")
        } else {
            format!("{shown}: {count} file names here are not UTF-8; their sessions are left out")
        };
        listing.unreadable.push(LeftOut {
            harness,
            path,
            message,
        });
    }
}

/// A listed file, as [`Reader::read_heads`] keys what it read.
type HeadKey = (std::sync::Arc<[u8]>, Vec<u8>);

fn head_key(entry: &FileEntry) -> HeadKey {
    (entry.root.clone(), entry.rel.clone())
}
