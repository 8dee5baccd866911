//! Terminal recordings written to amplify: a short `.cast` of cursor moves and `REP`/`ICH`
//! repeats on a 1000×1000 screen, raw logs of millions of short lines (2 MiB and 32 MiB), and
//! a long typescript of repeats, insert mode, scrolls and clears. Each is read by the real
//! binary in every mode (text, `--json`, `--tail`, `--all`, `--all --json`) and must end in
//! bounded time with peak memory under 256 MiB (GNU time's `%M`, see `common::run_measured`),
//! its records' text within 16× the recording's size (and 64 MiB), at most 200,000 lines, and
//! a `notice` saying where the replay stopped; `--strict` exits 6 instead
//! (`crates/engine/src/harness/terminal/bounds.rs` holds the bounds).
//!
//! A tail replays from a checkpoint near the end (a full reset): a huge log with a reset near
//! its end tails from the reset, and a hostile cast with a reset in its middle is as bounded
//! from the reset as from its start.
//!
//! The recordings are generated in a temporary directory, never kept.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use crate::common::run_measured;
use crate::support::{clankie, code, ndjson, records, stderr};

/// Peak resident memory any read of a recording may reach, in KiB (`%M`'s unit).
const MEMORY_BOUND_KIB: u64 = 256 * 1024;
/// A guard against a hang, not a speed assertion: a debug build on a loaded machine.
const HANG_GUARD: Duration = Duration::from_secs(600);
/// The output a recording may give, per byte of it.
const OUTPUT_PER_BYTE: u64 = 16;
/// The most output any recording gives.
const MAX_OUTPUT: u64 = 64 << 20;
/// The most lines one read holds.
const MAX_LINES: usize = 200_000;

/// The modes every hostile recording is read in.
const MODES: &[&[&str]] = &[
    &[],
    &["--json"],
    &["--tail", "--json"],
    &["--all"],
    &["--all", "--json"],
];

/// A root of recordings holding `name` (under `casts/`, `logs/` or `scripts/`) with `bytes`.
fn root_with(dir: &Path, name: &str, bytes: &[u8]) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// Reads session `id` of the recordings under `root` with `args`: its output and peak memory
/// (`None` when GNU time is missing outside CI).
fn read(home: &Path, root: &Path, id: &str, args: &[&str]) -> Option<(Output, u64)> {
    let root_arg = format!("terminal={}", root.display());
    let session = format!("local:{id}");
    let mut cmd = clankie(home);
    cmd.args(["read", "--root", &root_arg, &session, "--no-pager"])
        .args(args);
    run_measured(&cmd, HANG_GUARD)
}

/// Reads the recording `id` (of `len` bytes) in every mode and with `--strict`, and checks
/// each run against the bounds.
fn every_mode_is_bounded(root: &Path, id: &str, len: u64) {
    let home = tempfile::tempdir().unwrap();
    let output_bound = (OUTPUT_PER_BYTE * len).min(MAX_OUTPUT);
    for mode in MODES {
        let Some((out, peak)) = read(home.path(), root, id, mode) else {
            return;
        };
        let err = stderr(&out);
        // The figures, for `--nocapture`.
        eprintln!(
            "{id} {mode:?}: peak {peak} KiB, {} bytes out",
            out.stdout.len()
        );
        assert_eq!(code(&out), 0, "{mode:?}: {err}");
        assert!(
            peak < MEMORY_BOUND_KIB,
            "{id} {mode:?}: peak memory {peak} KiB, over {MEMORY_BOUND_KIB} KiB"
        );
        if mode.contains(&"--json") {
            let lines = ndjson(&out);
            let records = records(&lines);
            let text_bytes: u64 = records
                .iter()
                .filter(|r| r["kind"] == "terminal")
                .map(|r| r["text"].as_str().unwrap().len() as u64)
                .sum();
            assert!(
                text_bytes <= output_bound,
                "{id} {mode:?}: {text_bytes} bytes of text, over {output_bound}"
            );
            assert!(records.len() <= MAX_LINES + 1, "{id} {mode:?}");
            let notice = records.last().unwrap_or_else(|| panic!("{id} {mode:?}"));
            assert_eq!(notice["kind"], "notice", "{id} {mode:?}: {notice}");
            assert!(
                stopped(notice),
                "{id} {mode:?}: the last record is not the bound's notice: {notice}"
            );
        } else {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.contains("the recording's replay stopped at byte"),
                "{id} {mode:?}: no notice in the text output (stderr: {err})"
            );
            assert!(
                (out.stdout.len() as u64) <= MAX_OUTPUT + 64 * MAX_LINES as u64,
                "{id} {mode:?}: {} bytes printed",
                out.stdout.len()
            );
        }
        assert!(err.contains("bound@"), "{id} {mode:?}: {err}");
    }
    let Some((out, _)) = read(home.path(), root, id, &["--json", "--strict", "-n", "5"]) else {
        return;
    };
    assert_eq!(code(&out), 6, "{id} --strict: {}", stderr(&out));
    assert!(
        stderr(&out).contains("the recording's replay stopped at byte"),
        "{}",
        stderr(&out)
    );
}

/// Whether `notice` is the one a bound gives.
fn stopped(notice: &Value) -> bool {
    notice["text"]
        .as_str()
        .is_some_and(|t| t.starts_with("the recording's replay stopped at byte"))
}

#[test]
fn a_short_cast_of_cursor_moves_and_repeats_is_bounded_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    // Each event prints a character, repeats it 65,535 times, inserts 1000 blanks, moves the
    // cursor down 999 rows and scrolls 999 lines: on a 1000×1000 screen, a few bytes asking
    // for millions of cells.
    let mut cast = String::from(r#"{"version": 2, "width": 1000, "height": 1000}"#);
    cast.push('\n');
    let burst = "x\\u001b[65535b\\u001b[1000@\\u001b[999B\\u001b[999S\\u001b[H\\r\\n".repeat(4);
    while cast.len() < 17 * 1024 {
        cast.push_str(&format!("[0.1, \"o\", \"{burst}\"]\n"));
    }
    root_with(dir.path(), "casts/amp.cast", cast.as_bytes());
    every_mode_is_bounded(dir.path(), "amp", cast.len() as u64);
}

#[test]
fn a_raw_log_of_two_mebibytes_of_short_lines_is_bounded_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let log = b"a\r\n".repeat((2 << 20) / 3);
    root_with(dir.path(), "logs/short.log", &log);
    every_mode_is_bounded(dir.path(), "short", log.len() as u64);
}

#[test]
fn a_raw_log_of_32_mebibytes_of_short_lines_is_bounded_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let log = b"ok\r\n".repeat((32 << 20) / 4);
    root_with(dir.path(), "logs/big.log", &log);
    every_mode_is_bounded(dir.path(), "big", log.len() as u64);
}

#[test]
fn a_long_typescript_of_repeats_inserts_and_clears_is_bounded_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let mut script = b"Script started on 2026-12-01 11:00:00+00:00 [COMMAND=\"x\" TERM=\"xterm\" TTY=\"/dev/pts/1\" COLUMNS=\"1000\" LINES=\"1000\"]\n".to_vec();
    // Insert mode (every character shifts its row), repeats, insertions, scrolls and clears.
    let round = b"x\x1b[65535b\x1b[1000@\x1b[999S\x1b[4hyyyyyyyyyyyyyyyyyyyy\x1b[4l\x1b[2J\n";
    while script.len() < 182 * 1024 {
        script.extend_from_slice(round);
    }
    root_with(dir.path(), "scripts/long.typescript", &script);
    every_mode_is_bounded(dir.path(), "long", script.len() as u64);
}

/// Reads `id` with `args` and `-v`: its NDJSON records, stderr and peak memory, checked
/// against the memory bound.
fn read_bounded(home: &Path, root: &Path, id: &str, args: &[&str]) -> Option<(Vec<Value>, String)> {
    let mut with_v = args.to_vec();
    with_v.extend(["--json", "-v"]);
    let (out, peak) = read(home, root, id, &with_v)?;
    eprintln!("{id} {args:?} --json: peak {peak} KiB");
    assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
    assert!(
        peak < MEMORY_BOUND_KIB,
        "{id} {args:?}: peak memory {peak} KiB, over {MEMORY_BOUND_KIB} KiB"
    );
    Some((records(&ndjson(&out)), stderr(&out)))
}

#[test]
fn a_raw_log_of_32_mebibytes_with_a_reset_near_its_end_tails_from_the_reset() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = b"ok\r\n".repeat((32 << 20) / 4);
    log.extend_from_slice(b"\x1bc");
    for i in 0..100 {
        log.extend_from_slice(format!("after the reset {i}\r\n").as_bytes());
    }
    root_with(dir.path(), "logs/reset.log", &log);
    let home = tempfile::tempdir().unwrap();
    // From the start, every mode stops at the bound of lines, within the bounds.
    every_mode_is_bounded_but_the_tail(dir.path(), "reset");
    // The tail replays from the reset: the lines after it, no bound reached.
    for mode in [&[][..], &["--tail"], &["--tail", "-n", "50"]] {
        let Some((records, err)) = read_bounded(home.path(), dir.path(), "reset", mode) else {
            return;
        };
        let last = records.last().expect("records");
        let n = records.len();
        assert!(n >= 2, "{mode:?}: {n}");
        // 24 rows: the last 23 lines and the prompt row are the screen, not records.
        assert_eq!(last["text"], "after the reset 76", "{mode:?}");
        assert!(records.iter().all(|r| r["kind"] == "terminal"), "{mode:?}");
        assert!(
            err.contains(&format!(
                "the tail was replayed from the checkpoint at byte {}",
                32 << 20
            )),
            "{mode:?}: {err}"
        );
    }
}

#[test]
fn a_short_cast_of_repeats_after_a_reset_tails_from_the_reset_within_the_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let mut cast = String::from(r#"{"version": 2, "width": 1000, "height": 1000}"#);
    cast.push('\n');
    let burst = "x\\u001b[65535b\\u001b[1000@\\u001b[999B\\u001b[999S\\u001b[H\\r\\n".repeat(4);
    while cast.len() < 17 * 1024 {
        cast.push_str(&format!("[0.1, \"o\", \"{burst}\"]\n"));
    }
    let reset_at = cast.len() + "[0.2, \"o\", \"".len();
    cast.push_str("[0.2, \"o\", \"\\u001bc\"]\n");
    while cast.len() < 34 * 1024 {
        cast.push_str(&format!("[0.3, \"o\", \"{burst}\"]\n"));
    }
    root_with(dir.path(), "casts/amp2.cast", cast.as_bytes());
    every_mode_is_bounded_but_the_tail(dir.path(), "amp2");
    let home = tempfile::tempdir().unwrap();
    // From the reset the replay is as hostile, and bounded as from the start: it stops, and
    // says where, past the reset.
    for mode in [&[][..], &["--tail"]] {
        let Some((records, err)) = read_bounded(home.path(), dir.path(), "amp2", mode) else {
            return;
        };
        let notice = records.last().expect("records");
        assert!(stopped(notice), "{mode:?}: {notice}");
        let at: usize = notice["id"].as_str().unwrap()["bound@".len()..]
            .parse()
            .unwrap();
        assert!(
            at > reset_at,
            "{mode:?}: stopped at {at}, before the reset at {reset_at}"
        );
        let text: u64 = records
            .iter()
            .filter(|r| r["kind"] == "terminal")
            .map(|r| r["text"].as_str().unwrap().len() as u64)
            .sum();
        assert!(
            text <= OUTPUT_PER_BYTE * (cast.len() - reset_at) as u64,
            "{text}"
        );
        assert!(
            err.contains(&format!(
                "the tail was replayed from the checkpoint at byte {reset_at}"
            )),
            "{mode:?}: {err}"
        );
    }
}

/// The modes that replay from the start (`--all`, with and without `--json`), checked as
/// [`every_mode_is_bounded`] checks every mode.
fn every_mode_is_bounded_but_the_tail(root: &Path, id: &str) {
    let home = tempfile::tempdir().unwrap();
    for mode in [&["--all"][..], &["--all", "--json"]] {
        let Some((out, peak)) = read(home.path(), root, id, mode) else {
            return;
        };
        eprintln!(
            "{id} {mode:?}: peak {peak} KiB, {} bytes out",
            out.stdout.len()
        );
        assert_eq!(code(&out), 0, "{mode:?}: {}", stderr(&out));
        assert!(
            peak < MEMORY_BOUND_KIB,
            "{id} {mode:?}: peak memory {peak} KiB"
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("the recording's replay stopped at byte"),
            "{id} {mode:?}"
        );
    }
}
