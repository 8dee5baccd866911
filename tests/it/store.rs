//! `sync --into` a SQLite store, then `ls --store` and `grep --store`: the store holds exactly
//! the records `read --all --json` gives for every session of every fixture harness (locally
//! and over the test sshd), a second sync writes nothing, growth and rewrites are recorded
//! (a rewrite's old records kept, superseded), store and host answers are the same, two
//! syncs at once and syncs killed at random points neither lose nor duplicate a record.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use crate::common::sshd::sshd_or_skip;
use crate::support::{clankie, code, ndjson, stderr};
use clankie_read::store::{Store, StoreUrl};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Every fixture harness home, by harness; the terminal recording is laid out under
/// `scratch` as its harness home holds it.
pub(crate) fn fixture_roots(scratch: &Path) -> Vec<(&'static str, PathBuf)> {
    let f = fixtures();
    let terminal = scratch.join("terminal");
    std::fs::create_dir_all(terminal.join("casts")).unwrap();
    let cast = terminal.join("casts/v3.cast");
    std::fs::copy(f.join("terminal/v3.cast"), &cast).unwrap();
    // Settled, as the fixtures in the source tree are: a file written in the last seconds is
    // read again by the next sync (one-second mtimes cannot prove it unchanged).
    let past = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&cast)
        .unwrap()
        .set_modified(past)
        .unwrap();
    vec![
        ("claude", f.join("claude")),
        ("codex", f.join("codex")),
        ("pi", f.join("pi")),
        ("gemini", f.join("gemini")),
        ("grok", f.join("grok")),
        ("opencode", f.join("opencode/legacy-1.1.65")),
        ("terminal", terminal),
    ]
}

pub(crate) fn run(home: &Path, args: &[&str]) -> Output {
    clankie(home).args(args).output().unwrap()
}

/// A hosts file with `name` reading `roots` locally.
pub(crate) fn local_host(name: &str, roots: &[(&str, PathBuf)]) -> String {
    let roots: Vec<String> = roots
        .iter()
        .map(|(h, dir)| format!("{h} = \"{}\"", dir.display()))
        .collect();
    format!(
        "[hosts.{name}]\nlocal = true\nroots = {{ {} }}\n",
        roots.join(", ")
    )
}

/// `(harness, session)` of every session `ls --json` lists on `host`.
pub(crate) fn sessions_of(home: &Path, base: &[&str], host: &str) -> Vec<(String, String)> {
    let out = run(home, &[base, &["ls", "--json", host]].concat());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    ndjson(&out)
        .iter()
        .filter(|l| l["type"] == "session")
        .map(|l| {
            (
                l["harness"].as_str().unwrap().to_string(),
                l["session"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The record lines `read --all --json` gives of one session.
pub(crate) fn read_all(
    home: &Path,
    base: &[&str],
    host: &str,
    harness: &str,
    session: &str,
) -> Vec<Value> {
    let target = format!("{host}:{harness}/{session}");
    let out = run(
        home,
        &[base, &["read", &target, "--all", "--json"]].concat(),
    );
    assert_eq!(code(&out), 0, "{target}: {}", stderr(&out));
    ndjson(&out)
        .into_iter()
        .filter(|l| l["type"] == "record")
        .collect()
}

/// The records the store holds of each session of `host` (current generation), written as
/// `read --json` writes records: `harness/session` → lines.
pub(crate) fn stored_records(
    url: &StoreUrl,
    host: &str,
) -> std::collections::BTreeMap<String, Vec<Value>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut store = Store::open(url, None).await.unwrap();
        let mut all = std::collections::BTreeMap::new();
        for stored in store.sessions(host).await.unwrap() {
            let records = store.records(host, &stored).await.unwrap();
            let mut buf = Vec::new();
            clankie_read::render::ndjson::records(&mut buf, host, &records).unwrap();
            let lines: Vec<Value> = String::from_utf8(buf)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            all.insert(
                format!("{}/{}", stored.session.harness().name(), stored.session.id),
                lines,
            );
        }
        all
    })
}

/// Every row of the store's tables, as text: two equal dumps are one unchanged store.
fn dump(db: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut rows = Vec::new();
    for table in ["meta", "hosts", "sessions", "records"] {
        let mut stmt = conn.prepare(&format!("SELECT * FROM {table}")).unwrap();
        let columns = stmt.column_count();
        let mut q = stmt.query([]).unwrap();
        while let Some(row) = q.next().unwrap() {
            let cells: Vec<String> = (0..columns)
                .map(|i| match row.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                        String::from_utf8_lossy(t).into_owned()
                    }
                    other => format!("{other:?}"),
                })
                .collect();
            rows.push(format!("{table}: {}", cells.join("|")));
        }
    }
    rows
}

/// Asserts two dumps equal, showing the rows that differ.
fn assert_unchanged(before: &[String], after: &[String]) {
    // Each changed row as the columns that changed.
    let columns = |row: &String| row.split('|').map(str::to_string).collect::<Vec<_>>();
    let gone: Vec<Vec<String>> = before
        .iter()
        .filter(|r| !after.contains(r))
        .map(columns)
        .collect();
    let new: Vec<Vec<String>> = after
        .iter()
        .filter(|r| !before.contains(r))
        .map(columns)
        .collect();
    let changed: Vec<String> = gone
        .iter()
        .zip(&new)
        .map(|(a, b)| {
            let cells: Vec<String> = (0..a.len().min(b.len()))
                .filter(|&i| a[i] != b[i])
                .map(|i| format!("column {i}: {} -> {}", a[i], b[i]))
                .collect();
            format!(
                "{}|{}: {}",
                a[0],
                a.get(2).map_or("", |s| s),
                cells.join(", ")
            )
        })
        .collect();
    assert!(gone.is_empty() && new.is_empty(), "{changed:#?}");
}

fn count(db: &Path, sql: &str) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(sql, [], |row| row.get(0)).unwrap()
}

/// Asserts that the store holds, for every session of `host`, exactly what `read --all --json`
/// gives of it (`host` as the store names it; `read_host` as the CLI reaches it).
pub(crate) fn assert_store_is_read(home: &Path, base: &[&str], url: &StoreUrl, host: &str) {
    let sessions = sessions_of(home, base, host);
    assert!(!sessions.is_empty());
    let stored = stored_records(url, host);
    assert_eq!(stored.len(), sessions.len(), "{:?}", stored.keys());
    for (harness, session) in &sessions {
        let read = read_all(home, base, host, harness, session);
        let key = format!("{harness}/{session}");
        assert_eq!(stored[&key], read, "{key}");
    }
}

#[test]
fn a_sync_holds_exactly_what_read_gives_for_every_fixture_harness_and_a_second_writes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let hosts = h.join("hosts.toml");
    let roots = fixture_roots(h);
    std::fs::write(&hosts, local_host("fx", &roots)).unwrap();
    let db = h.join("store.db");
    let into = format!("sqlite:{}", db.display());
    let base = ["--hosts", hosts.to_str().unwrap()];
    let out = run(h, &[&base[..], &["sync", "--into", &into, "fx"]].concat());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    assert_store_is_read(h, &base, &StoreUrl::Sqlite(db.clone()), "fx");
    let harnesses = count(&db, "SELECT count(DISTINCT harness) FROM sessions");
    assert_eq!(harnesses, roots.len() as i64);

    // Nothing new: not a row changes.
    let before = dump(&db);
    let again = run(h, &[&base[..], &["sync", "--into", &into, "fx"]].concat());
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert_unchanged(&before, &dump(&db));

    // `ls --store` and `grep --store` answer as the host does.
    for args in [
        &["ls", "--json", "--long"][..],
        &["ls", "--sort", "size", "--all"],
    ] {
        let host = run(h, &[&base[..], args, &["fx"]].concat());
        let store = run(h, &[&base[..], args, &["--store", &into]].concat());
        assert_eq!(code(&host), 0, "{}", stderr(&host));
        assert_eq!(
            String::from_utf8_lossy(&store.stdout),
            String::from_utf8_lossy(&host.stdout),
            "{args:?}: {}",
            stderr(&store)
        );
        assert_eq!(code(&store), code(&host));
    }
    for pattern in [
        &["marker"][..],
        &["-i", "MARKER"],
        &["-F", "rm -rf"],
        &["-c", "the"],
        &["-l", "e.o"],
        &["-C", "1", "subagent"],
        &["--json", "Read"],
        &["--json", "-i", "error|warning"],
        &["[0-9]{4}-[0-9]{2}"],
        &["--kind", "tool_call", "-c", "."],
        &["-m", "1", "x"],
        &["-c", "-m", "2", "the"],
        &["-m", "2", "-i", "the"],
        &["nothing matches this at all"],
        &["\\bsession\\b", "--harness", "codex"],
    ] {
        let host = run(h, &[&base[..], &["grep"], pattern, &["fx"]].concat());
        let store = run(
            h,
            &[&base[..], &["grep", "--store", &into], pattern, &["fx"]].concat(),
        );
        assert_eq!(
            String::from_utf8_lossy(&store.stdout),
            String::from_utf8_lossy(&host.stdout),
            "{pattern:?}: {}",
            stderr(&store)
        );
        assert_eq!(code(&store), code(&host), "{pattern:?}");
    }
}

/// One Claude Code user line.
pub(crate) fn line(uuid: &str, text: &str) -> String {
    format!(
        "{}\n",
        serde_json::json!({"type":"user","uuid":uuid,"timestamp":"2026-11-02T10:00:00.000Z",
            "message":{"role":"user","content":text}})
    )
}

/// A home with `sessions` Claude Code sessions of `records` records each; the hosts file
/// names it `h`.
pub(crate) fn generated(sessions: usize, records: usize) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("agent/.claude");
    let dir = root.join("projects/-p");
    std::fs::create_dir_all(&dir).unwrap();
    for s in 0..sessions {
        let id = format!("{s:08x}-0000-4000-8000-000000000000");
        let text: String = (0..records)
            .map(|r| line(&format!("{id}-{r}"), &format!("prompt {r} of session {s}")))
            .collect();
        std::fs::write(dir.join(format!("{id}.jsonl")), text).unwrap();
    }
    let hosts = home.path().join("hosts.toml");
    std::fs::write(&hosts, local_host("h", &[("claude", root)])).unwrap();
    (home, hosts, dir)
}

#[test]
fn growth_and_a_rewrite_are_recorded_and_the_old_records_kept_superseded() {
    let (home, hosts, dir) = generated(2, 3);
    let h = home.path();
    let db = h.join("s.db");
    let into = format!("sqlite:{}", db.display());
    let base = ["--hosts", hosts.to_str().unwrap()];
    let sync = || {
        let out = run(h, &[&base[..], &["sync", "--into", &into]].concat());
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    };
    sync();
    assert_eq!(count(&db, "SELECT count(*) FROM records"), 6);
    let a = dir.join("00000000-0000-4000-8000-000000000000.jsonl");
    let b = dir.join("00000001-0000-4000-8000-000000000000.jsonl");
    let mut grown = std::fs::read_to_string(&a).unwrap();
    grown += &line("a-new", "a grown prompt");
    std::fs::write(&a, grown).unwrap();
    // Rewritten: the same ids, another text.
    let rewritten = std::fs::read_to_string(&b)
        .unwrap()
        .replace("prompt 0 of", "PROMPT ZERO of");
    std::fs::write(&b, rewritten).unwrap();
    // The mtimes must move for the sync to look again (one-second resolution).
    let later = std::time::SystemTime::now() + Duration::from_secs(5);
    for f in [&a, &b] {
        std::fs::File::options()
            .write(true)
            .open(f)
            .unwrap()
            .set_modified(later)
            .unwrap();
    }
    sync();
    assert_store_is_read(h, &base, &StoreUrl::Sqlite(db.clone()), "h");
    assert_eq!(
        count(&db, "SELECT count(*) FROM records WHERE superseded = 1"),
        3
    );
    assert_eq!(
        count(
            &db,
            "SELECT generation FROM sessions WHERE session LIKE '00000001%'"
        ),
        1
    );
    // Old text stays in the store, but grep --store finds only the session as it is.
    let old = run(
        h,
        &[
            &base[..],
            &["grep", "--store", &into, "-c", "prompt 0 of", "h"],
        ]
        .concat(),
    );
    let host = run(
        h,
        &[&base[..], &["grep", "-c", "prompt 0 of", "h"]].concat(),
    );
    assert_eq!(old.stdout, host.stdout);
    assert_eq!(String::from_utf8_lossy(&host.stdout).lines().count(), 1);
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM records WHERE superseded = 1 AND text LIKE 'prompt 0 of%'"
        ),
        1
    );
}

#[test]
fn a_sync_with_the_other_redaction_is_refused() {
    let (home, hosts, _) = generated(1, 2);
    let h = home.path();
    let into = format!("sqlite:{}", h.join("s.db").display());
    let base = ["--hosts", hosts.to_str().unwrap()];
    let first = run(h, &[&base[..], &["sync", "--into", &into]].concat());
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let raw = run(
        h,
        &[&base[..], &["sync", "--into", &into, "--no-redact"]].concat(),
    );
    assert_eq!(code(&raw), 2, "{}", stderr(&raw));
    assert!(stderr(&raw).contains("redacted"), "{}", stderr(&raw));
    assert_eq!(stderr(&raw).lines().count(), 1, "{}", stderr(&raw));
    // A bad URL is refused before any host is read.
    let bad = run(h, &[&base[..], &["sync", "--into", "mysql://x"]].concat());
    assert_eq!(code(&bad), 2, "{}", stderr(&bad));
    // A store that is not there is one line and exit 1 for a reader.
    let missing = format!("sqlite:{}", h.join("none.db").display());
    let ls = run(h, &["ls", "--store", &missing]);
    assert_eq!(code(&ls), 1, "{}", stderr(&ls));
    assert_eq!(stderr(&ls).lines().count(), 1, "{}", stderr(&ls));
}

#[test]
fn the_default_store_is_under_xdg_data_home() {
    let (home, hosts, _) = generated(1, 2);
    let h = home.path();
    let data = h.join("data");
    let out = clankie(h)
        .env("XDG_DATA_HOME", &data)
        .args(["--hosts", hosts.to_str().unwrap(), "sync"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let db = data.join("clankie-read/store.db");
    assert_eq!(count(&db, "SELECT count(*) FROM records"), 2);
    // No host given: `local` and the hosts file's (here `h`; `local` has no sessions).
    assert_eq!(count(&db, "SELECT count(*) FROM hosts"), 2);
}

#[test]
fn two_syncs_at_once_write_each_record_once() {
    let (home, hosts, _) = generated(60, 40);
    let h = home.path();
    let db = h.join("s.db");
    let into = format!("sqlite:{}", db.display());
    let base = ["--hosts", hosts.to_str().unwrap()];
    // Both make the store too: one migrates, the other waits for it.
    let spawn = || {
        clankie(h)
            .args([&base[..], &["sync", "--into", &into, "h"]].concat())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    assert_eq!(count(&db, "SELECT count(*) FROM records"), 60 * 40);
    assert_store_is_read(h, &base, &StoreUrl::Sqlite(db.clone()), "h");
}

/// Runs of [`sigkill_at_random_points`]: a few in `cargo test`, all 100 when
/// `CLANKIE_STORE_KILL_RUNS` says so (.ci/run).
pub(crate) fn kill_runs() -> usize {
    std::env::var("CLANKIE_STORE_KILL_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(6)
}

#[test]
fn sigkill_at_random_points_loses_and_duplicates_nothing() {
    let (home, hosts, dir) = generated(80, 30);
    let h = home.path();
    let db = h.join("s.db");
    let into = format!("sqlite:{}", db.display());
    let base = ["--hosts", hosts.to_str().unwrap()];
    let args = [&base[..], &["sync", "--into", &into, "h"]].concat();
    // How long a whole run takes here: kills land anywhere up to that.
    let start = std::time::Instant::now();
    let first = run(h, &args);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let whole = start.elapsed().as_micros().max(1000) as u64;
    std::fs::remove_file(&db).unwrap();
    let _ = std::fs::remove_file(h.join("s.db-wal"));
    let _ = std::fs::remove_file(h.join("s.db-shm"));
    let mut seed = std::process::id() as u64 | 1;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for run_index in 0..kill_runs() {
        // Sessions grow between runs: each run has something to write.
        let s = next() % 80;
        let file = dir.join(format!("{s:08x}-0000-4000-8000-000000000000.jsonl"));
        let mut text = std::fs::read_to_string(&file).unwrap();
        text += &line(&format!("grown-{run_index}"), "grown");
        std::fs::write(&file, text).unwrap();
        let later = std::time::SystemTime::now() + Duration::from_secs(3 + run_index as u64);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(later)
            .unwrap();
        let mut child = clankie(h).args(&args).spawn().unwrap();
        std::thread::sleep(Duration::from_micros(next() % whole));
        let _ = child.kill();
        let _ = child.wait();
    }
    let last = run(h, &args);
    assert_eq!(code(&last), 0, "{}", stderr(&last));
    assert_store_is_read(h, &base, &StoreUrl::Sqlite(db.clone()), "h");
}

#[test]
fn over_ssh_the_store_holds_what_read_gives_and_grep_store_equals_grep() {
    let Some(sshd) = sshd_or_skip() else { return };
    let user = "ck_dash";
    let base_dir = format!("store-{}", std::process::id());
    let mut roots = Vec::new();
    let scratch = tempfile::tempdir().unwrap();
    for (harness, dir) in fixture_roots(scratch.path()) {
        // Copies of the fixture homes in the SSH user's home.
        let mut stack = vec![dir.clone()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let rel = path.strip_prefix(&dir).unwrap();
                    sshd.put_file(
                        user,
                        Path::new(&base_dir).join(harness).join(rel),
                        &std::fs::read(&path).unwrap(),
                    );
                }
            }
        }
        roots.push((harness, sshd.home(user).join(&base_dir).join(harness)));
    }
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let roots_toml: Vec<String> = roots
        .iter()
        .map(|(harness, dir)| format!("{harness} = \"{}\"", dir.display()))
        .collect();
    let hosts = h.join("hosts.toml");
    std::fs::write(
        &hosts,
        format!(
            "[hosts.remote]\nssh = \"{}\"\nroots = {{ {} }}\n",
            sshd.alias(user),
            roots_toml.join(", ")
        ),
    )
    .unwrap();
    let db = h.join("s.db");
    let into = format!("sqlite:{}", db.display());
    let config = sshd.ssh_config().display().to_string();
    let base = [
        "--hosts",
        hosts.to_str().unwrap(),
        "--ssh-config",
        config.as_str(),
    ];
    // Files just written are read again by the next sync until their mtimes are seconds old
    // (one-second mtimes cannot prove them unchanged): let them settle first.
    std::thread::sleep(Duration::from_secs(3));
    let out = run(
        h,
        &[&base[..], &["sync", "--into", &into, "remote"]].concat(),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_store_is_read(h, &base, &StoreUrl::Sqlite(db.clone()), "remote");
    let before = dump(&db);
    let again = run(
        h,
        &[&base[..], &["sync", "--into", &into, "remote"]].concat(),
    );
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert_unchanged(&before, &dump(&db));
    for pattern in [&["marker"][..], &["--json", "-i", "error"], &["-c", "e.o"]] {
        let host = run(h, &[&base[..], &["grep"], pattern, &["remote"]].concat());
        let store = run(
            h,
            &[&base[..], &["grep", "--store", &into], pattern, &["remote"]].concat(),
        );
        assert_eq!(
            String::from_utf8_lossy(&store.stdout),
            String::from_utf8_lossy(&host.stdout),
            "{pattern:?}"
        );
    }
    let _ = std::fs::remove_dir_all(sshd.home(user).join(&base_dir));
}
