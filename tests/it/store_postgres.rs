//! `sync --into postgres://…` against a real PostgreSQL server: each test starts its own
//! cluster (Debian's `postgresql`: initdb and pg_ctl) in a temporary directory, as an
//! unprivileged user, listening on a Unix socket there only, and stops it. The store holds
//! exactly what `read --all --json` gives, a second sync writes nothing, `ls`/`grep --store`
//! answer as the host does, two syncs at once store each record once, and neither a SIGKILLed
//! sync nor a database stopped mid-run loses or duplicates a record.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::store::{
    assert_store_is_read, fixture_roots, generated, kill_runs, line, local_host, run,
};
use crate::support::{clankie, code, stderr};
use clankie_read::store::StoreUrl;

/// A PostgreSQL cluster of one test, stopped (immediately) when dropped.
struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
}

/// The directory of initdb and pg_ctl: Debian's `/usr/lib/postgresql/<version>/bin`.
fn postgres_bin() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| Some(e.ok()?.path().join("bin")))
        .filter(|bin| bin.join("initdb").exists() && bin.join("pg_ctl").exists())
        .collect();
    found.sort();
    found.pop()
}

/// Runs a PostgreSQL program as the unprivileged `nobody` when the tests run as root
/// (PostgreSQL refuses to run as root).
fn as_postgres_user(program: &Path) -> Command {
    if rustix_is_root() {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "nobody", "--"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

fn rustix_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// The hosts' and sessions' rows as text, each with the transaction that wrote it (`xmin`).
const HOSTS_AND_SESSIONS: &str = "(SELECT string_agg(h.xmin || ' ' || h::text, E'\\n' ORDER BY host) \
     FROM hosts h) || E'\\n' || \
     (SELECT string_agg(s.xmin || ' ' || s::text, E'\\n' ORDER BY host, harness, session) \
     FROM sessions s) || E'\\n'";

impl Cluster {
    /// Starts a cluster, or `None` (saying why) where PostgreSQL is not installed; under
    /// `CI=true` that fails the test.
    fn start() -> Option<Cluster> {
        let Some(bin) = postgres_bin() else {
            crate::common::skip_or_panic(
                "PostgreSQL is not installed (run .ci/install-deps: apt-get install postgresql)",
            );
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        let data = dir.path().join("data");
        let out = as_postgres_user(&bin.join("initdb"))
            .args([
                "-A",
                "trust",
                "-U",
                "clankie",
                "--no-sync",
                "-E",
                "UTF8",
                "-D",
            ])
            .arg(&data)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let cluster = Cluster { dir, bin };
        cluster.pg_ctl_start();
        Some(cluster)
    }

    fn pg_ctl_start(&self) {
        let options = format!(
            "-k {} -c listen_addresses='' -c fsync=off",
            self.dir.path().display()
        );
        let out = as_postgres_user(&self.bin.join("pg_ctl"))
            .args(["-w", "-o", &options, "-l"])
            .arg(self.dir.path().join("log"))
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .arg("start")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pg_ctl start: {}{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
        );
    }

    /// Stops the server at once, as a crash or a lost database would.
    fn stop(&self) {
        let _ = as_postgres_user(&self.bin.join("pg_ctl"))
            .args(["-w", "-m", "immediate", "-D"])
            .arg(self.dir.path().join("data"))
            .arg("stop")
            .output();
    }

    /// The store's URL: libpq's URI with the socket directory as `host`.
    fn url(&self) -> String {
        format!(
            "postgres:///postgres?host={}&user=clankie",
            self.dir.path().display()
        )
    }

    /// One query's rows, each as text (psql, through the cluster's socket).
    fn query(&self, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-A", "-t", "-U", "clankie", "-d", "postgres", "-h"])
            .arg(self.dir.path())
            .args(["-c", sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Every row of the store, as text, each with the transaction that wrote it (`xmin`): two
    /// equal dumps are one store in which no row was written, not even rewritten as it was.
    fn dump(&self) -> String {
        self.query(&format!(
            "SELECT {HOSTS_AND_SESSIONS} || \
             (SELECT count(*) || ' records written by ' || count(DISTINCT xmin::text) || \
             ' transactions, the last ' || max(xmin::text::bigint) FROM records)"
        ))
    }

    /// As [`Cluster::dump`], with the records as a digest of their values (not of how or when
    /// they were written).
    fn values(&self) -> String {
        self.query(&format!(
            "SELECT {HOSTS_AND_SESSIONS} || \
             (SELECT count(*) || ' records, ' || md5(string_agg(r::text, E'\\n' \
             ORDER BY host, harness, session, generation, record_id)) FROM records r)"
        ))
    }

    /// The server's log.
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap()
    }

    fn count(&self, sql: &str) -> i64 {
        self.query(sql).trim().parse().unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

#[test]
fn postgres_holds_what_read_gives_for_every_fixture_and_answers_as_the_host() {
    let Some(pg) = Cluster::start() else { return };
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let hosts = h.join("hosts.toml");
    std::fs::write(&hosts, local_host("fx", &fixture_roots(h))).unwrap();
    let base = ["--hosts", hosts.to_str().unwrap()];
    let into = pg.url();
    let out = run(h, &[&base[..], &["sync", "--into", &into, "fx"]].concat());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    assert_store_is_read(h, &base, &StoreUrl::Postgres(into.clone()), "fx");
    let before = pg.dump();
    let again = run(h, &[&base[..], &["sync", "--into", &into, "fx"]].concat());
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert_eq!(pg.dump(), before, "a sync with nothing new wrote");
    for args in [&["ls", "--json", "--long"][..], &["ls", "--all"]] {
        let host = run(h, &[&base[..], args, &["fx"]].concat());
        let store = run(h, &[&base[..], args, &["--store", &into]].concat());
        assert_eq!(
            String::from_utf8_lossy(&store.stdout),
            String::from_utf8_lossy(&host.stdout),
            "{args:?}: {}",
            stderr(&store)
        );
    }
    let patterns = [
        &["marker"][..],
        &["-i", "MARKER"],
        &["-F", "100%_done"],
        &["-c", "the"],
        &["--json", "-i", "error|warning"],
        &["-C", "1", "subagent"],
        &["[0-9]{4}-[0-9]{2}"],
        &["-c", "-m", "2", "the"],
        &["-m", "2", "-i", "the"],
        &["-i", "tool_use|permission"],
    ];
    let answers_as_the_host = |into: &str, patterns: &[&[&str]], why: &str| {
        for pattern in patterns {
            let host = run(h, &[&base[..], &["grep"], pattern, &["fx"]].concat());
            let store = run(
                h,
                &[&base[..], &["grep", "--store", into], pattern, &["fx"]].concat(),
            );
            assert_eq!(
                String::from_utf8_lossy(&store.stdout),
                String::from_utf8_lossy(&host.stdout),
                "{why}, {pattern:?}: {}",
                stderr(&store)
            );
            assert_eq!(code(&store), code(&host), "{why}, {pattern:?}");
        }
    };
    // Without statistics of the index every trigram of a literal is looked up; with them
    // (`ANALYZE`), its common ones are left out.
    answers_as_the_host(&into, &patterns, "no statistics");
    pg.query("ANALYZE records");
    assert!(
        pg.count(
            "SELECT count(*) FROM pg_stats, unnest(most_common_elems::text::text[]) e \
             WHERE tablename = 'records_trigrams' AND e IN ('the', 'ool')"
        ) > 0,
        "no common trigram in the statistics"
    );
    answers_as_the_host(&into, &patterns, "statistics");
    // A reader allowed one connection: the search's second cannot open, and the first reads
    // every candidate.
    pg.query(
        "CREATE ROLE reader LOGIN CONNECTION LIMIT 1; \
         GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader",
    );
    let reader = into.replace("user=clankie", "user=reader");
    answers_as_the_host(&reader, &patterns[..4], "one connection");
    assert!(
        pg.log()
            .contains("too many connections for role \"reader\""),
        "the second connection opened: {}",
        pg.log()
    );
    // The same store refuses the other redaction.
    let raw = run(
        h,
        &[&base[..], &["sync", "--no-redact", "--into", &into, "fx"]].concat(),
    );
    assert_eq!(code(&raw), 2, "{}", stderr(&raw));
}

#[test]
fn postgres_two_syncs_at_once_write_each_record_once() {
    let Some(pg) = Cluster::start() else { return };
    let (home, hosts, _) = generated(60, 40);
    let h = home.path();
    let into = pg.url();
    let base = ["--hosts", hosts.to_str().unwrap()];
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
    assert_eq!(pg.count("SELECT count(*) FROM records"), 60 * 40);
    assert_store_is_read(h, &base, &StoreUrl::Postgres(into), "h");
}

/// Appends one record to session `s` of a [`generated`] home, its mtime moved on.
fn grow(dir: &Path, s: u64, run_index: usize) {
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
}

#[test]
fn postgres_sigkill_or_a_stopped_database_mid_run_loses_and_duplicates_nothing() {
    let Some(pg) = Cluster::start() else { return };
    let (home, hosts, dir) = generated(80, 30);
    let h = home.path();
    let into = pg.url();
    let base = ["--hosts", hosts.to_str().unwrap()];
    let args = [&base[..], &["sync", "--into", &into, "h"]].concat();
    let start = std::time::Instant::now();
    let first = run(h, &args);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let whole = start.elapsed().as_micros().max(1000) as u64;
    pg.query("TRUNCATE hosts, sessions, records");
    let mut seed = std::process::id() as u64 | 1;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for run_index in 0..kill_runs() {
        grow(&dir, next() % 80, run_index);
        let mut child = clankie(h)
            .args(&args)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(next() % whole));
        if run_index % 2 == 0 {
            let _ = child.kill();
            let _ = child.wait();
        } else {
            // The database goes away under the run: one line and exit 1, or the run was done.
            pg.stop();
            let out = child.wait_with_output().unwrap();
            match code(&out) {
                0 => {}
                1 => assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out)),
                other => panic!("exit {other}: {}", stderr(&out)),
            }
            pg.pg_ctl_start();
        }
    }
    let last = run(h, &args);
    assert_eq!(code(&last), 0, "{}", stderr(&last));
    assert_store_is_read(h, &base, &StoreUrl::Postgres(into), "h");
}

/// A host whose records hold what case folding makes hard for an index: the Kelvin sign and
/// the long s (which the regex folds with `k` and `s`), `ß`, dotted and dotless `i`, words
/// inside longer ones, and text with no three letters in a row.
fn folding_host(h: &Path) -> String {
    let root = h.join("fold/.claude");
    let dir = root.join("projects/-fold");
    std::fs::create_dir_all(&dir).unwrap();
    let texts = [
        "a \u{212A}ELVIN scale",
        "STRAẞE, Straße and strasse",
        "İSTANBUL, ıstanbul and Istanbul",
        "the \u{17F}TOP sign",
        "xCOREDUMPy and core dump",
        "filename FILENAME",
        "a.b.c ==> é",
    ];
    let text: String = texts
        .iter()
        .enumerate()
        .map(|(k, t)| line(&format!("fold-{k}"), t))
        .collect();
    let file = dir.join("f01d0000-0000-4000-8000-000000000000.jsonl");
    std::fs::write(&file, text).unwrap();
    let past = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(past)
        .unwrap();
    local_host("fold", &[("claude", root)])
}

/// Searches whose answers depend on how the index and the regex fold case.
const FOLDING_SEARCHES: &[&[&str]] = &[
    &["-i", "kelvin"],
    &["-s", "ELVIN"],
    &["-i", "straße"],
    &["-i", "STRASSE"],
    &["-i", "istanbul"],
    &["-s", "İSTANBUL"],
    &["-i", "stop"],
    &["-i", "coredump"],
    &["-s", "COREDUMP"],
    &["-c", "-i", "FileName"],
    &["-F", "a.b.c"],
    &["-i", "==> É"],
];

#[test]
fn postgres_a_store_of_the_previous_schema_is_migrated_in_place_and_answers_as_the_host() {
    let Some(pg) = Cluster::start() else { return };
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let hosts = h.join("hosts.toml");
    let fold = folding_host(h);
    std::fs::write(&hosts, local_host("fx", &fixture_roots(h)) + &fold).unwrap();
    let base = ["--hosts", hosts.to_str().unwrap()];
    let into = pg.url();
    let out = run(
        h,
        &[&base[..], &["sync", "--into", &into, "fx", "fold"]].concat(),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // The store as the first schema left it: the same tables and rows, the text indexed by
    // `gin_trgm_ops`, every value stored as PostgreSQL does by default (`pglz`, out of line
    // from about 2 KiB).
    pg.query(
        "DROP INDEX records_trigrams; \
         CREATE INDEX records_search ON records USING gin (search gin_trgm_ops); \
         ALTER TABLE records RESET (toast_tuple_target), ALTER text SET COMPRESSION pglz, \
         ALTER input SET COMPRESSION pglz, ALTER usage SET COMPRESSION pglz, \
         ALTER search SET COMPRESSION pglz; \
         UPDATE records SET text = text || '', input = input || '', usage = usage || '', \
         search = search || ''; \
         UPDATE meta SET value = '1' WHERE key = 'schema_version'",
    );
    let records = pg.count("SELECT count(*) FROM records");
    assert!(records > 100, "{records}");
    let compressed = "SELECT count(*) FROM records WHERE pg_column_compression(text) = ";
    assert!(pg.count(&format!("{compressed}'pglz'")) > 0);
    let before = pg.values();
    // Every migration's DDL in the server's log, to count the migrations that ran.
    pg.query("ALTER DATABASE postgres SET log_statement = 'ddl'");
    // Two syncs at once: one migrates under the advisory lock, the other waits for it and
    // finds the work done; neither writes a row of its own, as nothing is new.
    let spawn = || {
        clankie(h)
            .args([&base[..], &["sync", "--into", &into, "fx", "fold"]].concat())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    assert_eq!(
        pg.query("SELECT value FROM meta WHERE key = 'schema_version'")
            .trim(),
        "3"
    );
    assert_eq!(pg.log().matches("CREATE TABLE records_v3").count(), 1);
    assert_eq!(
        pg.query(
            "SELECT string_agg(indexname, ' ' ORDER BY indexname) FROM pg_indexes \
             WHERE tablename = 'records'"
        )
        .trim(),
        "records_in_order records_pkey records_trigrams"
    );
    // The records were copied once, by the migration's transaction, value for value.
    assert_eq!(pg.values(), before, "the migration changed a value");
    assert_eq!(
        pg.query(
            "SELECT count(DISTINCT r.xmin::text) || ' ' || bool_and(r.xmin = m.xmin) \
             FROM records r, meta m WHERE m.key = 'schema_version'"
        )
        .trim(),
        "1 true"
    );
    assert_eq!(
        pg.query("SELECT reloptions::text FROM pg_class WHERE relname = 'records'")
            .trim(),
        "{toast_tuple_target=8160}"
    );
    // Debian's PostgreSQL has `lz4`: no value is left as the first schema stored it.
    let lz4 = pg.count(
        "SELECT count(*) FROM pg_settings \
         WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)",
    );
    assert_eq!(lz4, 1, "this PostgreSQL has no lz4");
    assert_eq!(pg.count(&format!("{compressed}'pglz'")), 0);
    assert!(pg.count(&format!("{compressed}'lz4'")) > 0);
    assert_store_is_read(h, &base, &StoreUrl::Postgres(into.clone()), "fx");
    // A search reads its candidates over two connections, half on each: the server's log
    // (`[pid]` in each line) shows the two halves' statements from two server processes.
    pg.query("ALTER DATABASE postgres SET log_statement = 'all'");
    let out = run(
        h,
        &[
            &base[..],
            &["grep", "--store", &into, "-c", "-i", "FileName", "fold"],
        ]
        .concat(),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let log = pg.log();
    let process_of = |half: &str| {
        let line = log
            .lines()
            .rfind(|l| l.contains(half))
            .unwrap_or_else(|| panic!("no statement with {half:?} in the log"));
        line.split_whitespace()
            .find(|word| word.starts_with('['))
            .unwrap()
            .to_string()
    };
    assert_ne!(process_of("seq % 2 = 0"), process_of("seq % 2 = 1"));
    pg.query("ALTER DATABASE postgres SET log_statement = 'ddl'");
    for pattern in FOLDING_SEARCHES {
        let host = run(h, &[&base[..], &["grep"], pattern, &["fold"]].concat());
        assert_eq!(code(&host), 0, "{pattern:?} found nothing on the host");
        let store = run(
            h,
            &[&base[..], &["grep", "--store", &into], pattern, &["fold"]].concat(),
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
