//! Running the real binary and decoding its NDJSON.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_clankie-read");

pub fn fixtures_home() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude")
}

/// Runs the binary with `args`, with an empty environment apart from PATH and HOME, so the
/// user's own `~/.claude` can never leak into a test.
pub fn run(home: &Path, args: &[&str]) -> Output {
    clankie(home).args(args).output().expect("run clankie-read")
}

/// The binary with an empty environment apart from PATH and HOME (add more with `.env`).
pub fn clankie(home: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home);
    cmd
}

/// The output's lines as JSON values; panics on a line that is not JSON.
pub fn ndjson(output: &Output) -> Vec<Value> {
    String::from_utf8(output.stdout.clone())
        .expect("utf-8 stdout")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// `records` without their `host`: the same session read locally and over SSH.
pub fn without_host(mut records: Vec<Value>) -> Vec<Value> {
    for r in &mut records {
        r.as_object_mut().map(|r| r.remove("host"));
    }
    records
}

pub fn records(lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "record")
        .cloned()
        .collect()
}

pub fn page(lines: &[Value]) -> Value {
    let pages: Vec<&Value> = lines.iter().filter(|l| l["type"] == "page").collect();
    assert_eq!(pages.len(), 1, "exactly one page line: {lines:?}");
    assert_eq!(
        lines.last().map(|l| &l["type"]),
        Some(&Value::from("page")),
        "page line is last"
    );
    pages[0].clone()
}

pub fn ids(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| r["id"].as_str().expect("id").to_string())
        .collect()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn code(output: &Output) -> i32 {
    output.status.code().expect("exit code")
}
