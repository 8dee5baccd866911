//! The backward read (docs/cursors.md, "Backward reads") end to end, through the library:
//! on every fixture session of every harness (lines, documents, databases, trees), walking back from the tail's cursor (the session's end) by the pages' start
//! cursors, 1, 2 and 3 records a page, gives exactly the records `--all` gives, in order; on
//! this machine and over the test sshd.

use std::path::{Path, PathBuf};

use clankie_engine::page::{Mode, PageRequest};
use clankie_engine::session::SessionFile;
use clankie_host::{Host, HostConfig};
use clankie_model::{Record, RootSpec};
use clankie_read::driver::Reader;

use crate::common::sshd::sshd_or_skip;
use crate::redaction_precision::{DUMPS, HOMES, load_dump};

/// This module's own sshd user.
const USER: &str = "ck_read_back";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Every (harness, home) the fixtures hold, homes under `base`, the dumps loaded into
/// databases under `scratch` (which `base` may name too): the fixture homes and the dumps'
/// directories.
fn roots(scratch: &Path) -> Vec<(String, PathBuf)> {
    let mut roots: Vec<(String, PathBuf)> = HOMES
        .iter()
        .map(|(harness, dir)| (harness.to_string(), PathBuf::from(dir)))
        .collect();
    for (i, (harness, db, dump)) in DUMPS.iter().enumerate() {
        let dir = scratch.join(format!("db{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        load_dump(dump, db, &dir);
        roots.push((harness.to_string(), dir));
    }
    roots
}

fn request(mode: Mode, limit: usize) -> PageRequest {
    PageRequest {
        mode,
        limit,
        strict: false,
        redact: false,
    }
}

fn ids(records: &[Record]) -> Vec<String> {
    records.iter().map(|r| r.id.clone()).collect()
}

/// `--all`'s records of `session`, then the walk back from its tail at 1, 2 and 3 records a
/// page: each must equal them.
async fn walks_back_as_all<H: Host>(host: &H, session: &SessionFile, what: &str) {
    let reader = Reader::new(host);
    let mut all = Vec::new();
    let page = reader
        .read_page(session, request(Mode::All, 200), |batch| all.extend(batch))
        .await
        .unwrap_or_else(|e| panic!("{what}: --all: {e}"));
    all.extend(page.records);
    let all = ids(&all);
    for limit in 1..=3 {
        let reader = Reader::new(host).with_backward_reads();
        let tail = reader
            .read_page(session, request(Mode::Tail, limit), |_| {})
            .await
            .unwrap_or_else(|e| panic!("{what}: tail: {e}"));
        // From the tail's cursor (the session's end): a backward read learns the ids before
        // its page, where a tail page of a harness that does not repeat ids does not look.
        let mut page = reader
            .read_page(session, request(Mode::Before(tail.cursor), limit), |_| {})
            .await
            .unwrap_or_else(|e| panic!("{what}: before the end: {e}"));
        let mut pages = vec![ids(&page.records)];
        let mut reads = 0;
        while page.older {
            let start = page
                .start
                .clone()
                .unwrap_or_else(|| panic!("{what}: a page with older records has a start"));
            page = reader
                .read_page(session, request(Mode::Before(start), limit), |_| {})
                .await
                .unwrap_or_else(|e| panic!("{what}: before: {e}"));
            assert!(!page.reset, "{what}: a still session never resets");
            assert!(
                !page.records.is_empty() && page.records.len() <= limit,
                "{what}: a backward page of {limit} holds {}",
                page.records.len()
            );
            pages.push(ids(&page.records));
            reads += 1;
            assert!(reads <= all.len(), "{what}: the walk ends");
        }
        let walked: Vec<String> = pages.iter().rev().flatten().cloned().collect();
        assert_eq!(
            walked, all,
            "{what}: {limit} a page, pages from the end: {pages:?}"
        );
    }
}

/// Walks every session under each of `roots` (`dir` relative to `base` when not absolute).
async fn walk_every_session<H: Host>(host: &H, base: &Path, roots: &[(String, PathBuf)]) -> usize {
    let mut walked = 0;
    for (harness, dir) in roots {
        let spec = RootSpec {
            harness: clankie_engine::harness::by_name(harness).unwrap(),
            dir: Some(base.join(dir).into_os_string().into_encoded_bytes()),
        };
        let reader = Reader::new(host);
        let (_, sessions) = reader
            .list_sessions(std::slice::from_ref(&spec))
            .await
            .unwrap_or_else(|e| panic!("{harness} {}: {e}", dir.display()));
        assert!(
            !sessions.is_empty(),
            "{harness} {}: no session",
            dir.display()
        );
        for session in &sessions {
            let what = format!("{}:{harness}/{}", host.name(), session.id);
            walks_back_as_all(host, session, &what).await;
            walked += 1;
        }
    }
    walked
}

#[test]
fn walking_back_from_the_tail_reads_every_fixture_as_all() {
    let scratch = tempfile::tempdir().unwrap();
    let roots = roots(scratch.path());
    let host = clankie_host::local::LocalHost::new("local");
    let walked = runtime().block_on(walk_every_session(&host, &fixtures(), &roots));
    assert!(walked >= roots.len());
}

/// Every file under `dir`, relative to it.
fn files_under(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir.join(rel)).unwrap() {
        let entry = entry.unwrap();
        let rel = rel.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            files_under(dir, &rel, out);
        } else {
            out.push(rel);
        }
    }
}

#[test]
fn walking_back_over_ssh_reads_every_fixture_as_all() {
    let Some(sshd) = sshd_or_skip() else { return };
    let alias = sshd.add_user(USER, Path::new("/bin/sh"));
    let scratch = tempfile::tempdir().unwrap();
    let local_roots = roots(scratch.path());
    // The homes and the databases, copied under the user's home as they are here.
    let _ = std::fs::remove_dir_all(sshd.home(USER).join("fx"));
    let mut roots = Vec::new();
    for (i, (harness, dir)) in local_roots.iter().enumerate() {
        let from = fixtures().join(dir);
        let to = PathBuf::from(format!("fx/{i}"));
        let mut files = Vec::new();
        files_under(&from, Path::new(""), &mut files);
        for rel in files {
            sshd.put_file(
                USER,
                to.join(&rel),
                &std::fs::read(from.join(&rel)).unwrap(),
            );
        }
        roots.push((harness.clone(), to));
    }
    let host = clankie_host::open(&HostConfig::ssh(&alias), Some(sshd.ssh_config())).unwrap();
    let walked = runtime().block_on(walk_every_session(&host, &sshd.home(USER), &roots));
    assert!(walked >= roots.len());
}
