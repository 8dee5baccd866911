//! The forms a person types from `journalctl`, `git log` and `docker logs`, end to end on a local
//! session: `--since` takes a time (`2h`, `today`, `yesterday`, `2026-12-01`, RFC 3339) or a
//! cursor, and reads every record at or after the time from the session's start; `--after` and
//! `--before` take the same times; `--tail N`/`--head N` take a count of 1 to 200 and never a
//! session. Bad values exit 2 before any I/O.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp, ZonedDateTime};
use serde_json::{Value, json};

use crate::support::{clankie, code, ids, ndjson, page, records, stderr};

/// The records' ids and how long before the test's start each was written: one three days
/// old, then 3 hours, 30 minutes and 1 minute old.
const AGES: [(&str, i64); 4] = [("old", 72 * 60), ("b", 180), ("c", 30), ("d", 1)];

/// A temp `$HOME` with one Claude session of a prompt at each of [`AGES`], and the instant each
/// was written.
fn home() -> (tempfile::TempDir, PathBuf, Vec<(String, Timestamp)>) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join(".claude/projects/-f");
    fs::create_dir_all(&project).unwrap();
    let now = Timestamp::now();
    let mut body = String::new();
    let mut times = Vec::new();
    for (id, minutes) in AGES {
        let ts = now - SignedDuration::from_mins(minutes);
        let line = json!({"type":"user","uuid":id,"timestamp":ts.to_string(),
            "message":{"role":"user","content":format!("prompt {id}")}});
        body += &format!("{line}\n");
        times.push((format!("{id}#0"), ts));
    }
    fs::write(project.join("f1f1f1f1-0016.jsonl"), body).unwrap();
    let home = dir.path().to_path_buf();
    (dir, home, times)
}

/// The CLI with `TZ` set, so that days begin where the test says.
fn run_in(home: &Path, tz: &str, args: &[&str]) -> Output {
    clankie(home).env("TZ", tz).args(args).output().unwrap()
}

/// A read of the session as NDJSON, in UTC: its records' ids and its page line.
fn read(home: &Path, args: &[&str]) -> (Vec<String>, Value) {
    read_in(home, "UTC", args)
}

fn read_in(home: &Path, tz: &str, args: &[&str]) -> (Vec<String>, Value) {
    let mut full = vec!["f1f1f1f1", "--json"];
    full.extend_from_slice(args);
    let out = run_in(home, tz, &full);
    assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
    let lines = ndjson(&out);
    (ids(&records(&lines)), page(&lines))
}

/// The ids of the records written at or after `start`.
fn written_since(times: &[(String, Timestamp)], start: Timestamp) -> Vec<String> {
    let kept = times.iter().filter(|(_, ts)| *ts >= start);
    kept.map(|(id, _)| id.clone()).collect()
}

/// The first instant of the day `days_back` days before today, in `tz`.
fn day_start(tz: TimeZone, days_back: i64) -> ZonedDateTime {
    let today = ZonedDateTime::now().with_time_zone(tz.clone()).date();
    let day = today - jiff::Span::new().days(days_back);
    day.to_zoned_datetime(tz).unwrap()
}

#[test]
fn since_an_age_reads_every_record_since_then_from_the_start() {
    let (_dir, home, times) = home();
    let (ids, page) = read(&home, &["--since", "2h"]);
    assert_eq!(ids, ["c#0", "d#0"]);
    // The records before the time are left out, and counted as a filter's.
    assert_eq!(page["filtered"], 2);
    assert_eq!(page["more"], false);
    assert_eq!(read(&home, &["--since", "4h"]).0, ["b#0", "c#0", "d#0"]);
    assert_eq!(read(&home, &["--since", "1h30m"]).0, ["c#0", "d#0"]);
    // RFC 3339: at or after that instant.
    let b = times[1].1.to_string();
    assert_eq!(read(&home, &["--since", &b]).0, ["b#0", "c#0", "d#0"]);
    // With --after too, the later of the two holds.
    assert_eq!(read(&home, &["--since", "4h", "--after", "10m"]).0, ["d#0"]);
    assert_eq!(read(&home, &["--since", "10m", "--after", "4h"]).0, ["d#0"]);
    // As --all --after: the same page.
    assert_eq!(
        read(&home, &["--since", "2h"]),
        read(&home, &["--all", "--after", "2h"])
    );
    // Its cursor continues after the last record, as any page's.
    let cursor = page["cursor"].as_str().unwrap();
    let (next, next_page) = read(&home, &["--since", cursor]);
    assert!(next.is_empty(), "{next:?}");
    assert_eq!(next_page["more"], false);
}

#[test]
fn since_today_yesterday_and_a_date_begin_at_local_midnight() {
    let (_dir, home, times) = home();
    let utc = TimeZone::UTC;
    let today = day_start(utc.clone(), 0).timestamp();
    assert_eq!(
        read(&home, &["--since", "today"]).0,
        written_since(&times, today)
    );
    // Yesterday began at least 24 hours ago: all but the record of three days ago.
    assert_eq!(
        read(&home, &["--since", "yesterday"]).0,
        ["b#0", "c#0", "d#0"]
    );
    let two_days_ago = day_start(utc.clone(), 2).date().to_string();
    assert_eq!(
        read(&home, &["--since", &two_days_ago]).0,
        ["b#0", "c#0", "d#0"]
    );
    let four_days_ago = day_start(utc, 4).date().to_string();
    assert_eq!(
        read(&home, &["--since", &four_days_ago]).0,
        ["old#0", "b#0", "c#0", "d#0"]
    );
    // Days begin in the local time zone ($TZ): in a zone where it is now a quarter past
    // midnight, today began 15 minutes ago, after `c` (30 minutes old), and yesterday 24 hours
    // before that, after `old` and before `b`.
    let tz = quarter_past_midnight_now();
    let local_date = Timestamp::now()
        .to_zoned_datetime(TimeZone::posix(&tz).unwrap())
        .date()
        .to_string();
    assert_eq!(read_in(&home, &tz, &["--since", "today"]).0, ["d#0"]);
    assert_eq!(read_in(&home, &tz, &["--since", &local_date]).0, ["d#0"]);
    assert_eq!(
        read_in(&home, &tz, &["--since", "yesterday"]).0,
        ["b#0", "c#0", "d#0"]
    );
    assert_eq!(
        read_in(&home, &tz, &["--all", "--before", "today"]).0,
        ["old#0", "b#0", "c#0"]
    );
}

/// A POSIX `TZ` whose local time is now 00:15 (an offset within 12 hours of UTC, to the
/// minute).
fn quarter_past_midnight_now() -> String {
    let minute_of_day = Timestamp::now().as_second().rem_euclid(86_400) / 60;
    let mut east = (15 - minute_of_day).rem_euclid(1440);
    if east > 720 {
        east -= 1440;
    }
    // POSIX offsets count west of UTC.
    let west = -east;
    let sign = if west < 0 { '-' } else { '+' };
    format!("LOC{sign}{}:{:02}", west.abs() / 60, west.abs() % 60)
}

#[test]
fn after_and_before_take_the_same_times() {
    let (_dir, home, times) = home();
    assert_eq!(
        read(&home, &["--all", "--after", "yesterday"]).0,
        ["b#0", "c#0", "d#0"]
    );
    assert_eq!(
        read(&home, &["--all", "--before", "yesterday"]).0,
        ["old#0"]
    );
    let today = day_start(TimeZone::UTC, 0);
    let (before_today, _) = read(&home, &["--all", "--before", "today"]);
    let since_today = written_since(&times, today.timestamp());
    assert_eq!(before_today.len() + since_today.len(), times.len());
    let date = today.date().to_string();
    assert_eq!(read(&home, &["--all", "--after", &date]).0, since_today);
}

#[test]
fn since_a_cursor_still_pages_on() {
    let (_dir, home, _) = home();
    let (first, page) = read(&home, &["--head", "-n", "2"]);
    assert_eq!(first, ["old#0", "b#0"]);
    let cursor = page["cursor"].as_str().unwrap();
    assert_eq!(read(&home, &["--since", cursor, "-n", "1"]).0, ["c#0"]);
    assert_eq!(read(&home, &["--since", cursor, "--all"]).0, ["c#0", "d#0"]);
}

#[test]
fn tail_and_head_take_a_count_and_never_a_session() {
    let (_dir, home, _) = home();
    assert_eq!(read(&home, &["--tail", "2"]).0, ["c#0", "d#0"]);
    assert_eq!(read(&home, &["--tail=3"]).0, ["b#0", "c#0", "d#0"]);
    assert_eq!(read(&home, &["--head", "1"]).0, ["old#0"]);
    assert_eq!(read(&home, &["--head=2"]).0, ["old#0", "b#0"]);
    // Without a count, --limit (default 50) says how many.
    assert_eq!(read(&home, &["--tail", "-n", "1"]).0, ["d#0"]);
    // The session after --tail or --head is the session, not a count.
    for flag in ["--tail", "--head"] {
        let out = run_in(&home, "UTC", &["read", flag, "f1f1f1f1", "--json"]);
        assert_eq!(code(&out), 0, "{flag}: {}", stderr(&out));
        assert_eq!(records(&ndjson(&out)).len(), 4, "{flag}");
    }
    // Before the session, with or without `read`, as `docker logs --tail 5 NAME` has it.
    for args in [
        &["read", "--tail", "2", "f1f1f1f1", "--json"][..],
        &["--tail", "2", "f1f1f1f1", "--json"],
        &["--json", "--tail=2", "f1f1f1f1"],
        &["--since", "2h", "f1f1f1f1", "--json"],
    ] {
        let out = run_in(&home, "UTC", args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        assert_eq!(ids(&records(&ndjson(&out))), ["c#0", "d#0"], "{args:?}");
    }
}

#[test]
fn bad_times_and_counts_exit_2_before_any_io() {
    let (_dir, home, _) = home();
    let neither = "neither a time (2h, 30m, today, yesterday, 2026-12-01, RFC 3339) nor a cursor";
    for (args, line) in [
        (
            &["--since", "last week"][..],
            format!("clankie-read: error: `--since last week`: {neither} (characters outside [A-Za-z0-9_-])\n"),
        ),
        (
            &["--since", "2026-13-01"][..],
            format!("clankie-read: error: `--since 2026-13-01`: {neither} (not base64)\n"),
        ),
        (
            &["--after", "2026-11-02T10:00"][..],
            "clankie-read: error: --after wants a time (2h, 30m, today, yesterday, 2026-12-01, RFC 3339), got `2026-11-02T10:00`\n".to_string(),
        ),
        (
            &["--tail", "5", "-n", "10"][..],
            "clankie-read: error: --tail 5 and --limit 10 both say how many records: give one\n"
                .to_string(),
        ),
    ] {
        // A host that does not exist: the values are refused first, so it is never reached.
        let mut full = vec!["nohost.invalid:f1f1f1f1"];
        full.extend_from_slice(args);
        let out = run_in(&home, "UTC", &full);
        assert_eq!(code(&out), 2, "{args:?}");
        assert_eq!(stderr(&out), line, "{args:?}");
    }
    for args in [
        &["--tail", "0"][..],
        &["--tail", "201"],
        &["--head=0"],
        &["--head", "999"],
        &["--tail=x"],
    ] {
        let mut full = vec!["nohost.invalid:f1f1f1f1"];
        full.extend_from_slice(args);
        let out = run_in(&home, "UTC", &full);
        assert_eq!(code(&out), 2, "{args:?}");
        let err = stderr(&out);
        assert!(err.contains("invalid value"), "{args:?}: {err}");
    }
}

#[test]
fn help_and_docs_show_the_time_forms_and_the_counts() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(dir.path(), "UTC", &["read", "--help"]);
    assert_eq!(code(&out), 0);
    let help = String::from_utf8(out.stdout).unwrap();
    for shown in [
        "--since <CURSOR|TIME>",
        "2h, 30m, today, yesterday, 2026-12-01, RFC 3339",
        "--tail[=<N>]",
        "--head[=<N>]",
        "--tail N",
    ] {
        assert!(help.contains(shown), "{shown} not in read --help:\n{help}");
    }
    let cursors = include_str!("../../docs/cursors.md");
    let readme = include_str!("../../README.md");
    for shown in ["--since 2h", "today", "yesterday", "2026-12-01", "RFC 3339"] {
        assert!(cursors.contains(shown), "{shown} not in docs/cursors.md");
        assert!(readme.contains(shown), "{shown} not in README.md");
    }
    assert!(readme.contains("--tail N"));
    assert!(readme.contains("--tail=N"));
}
