//! The compatibility suite: the real agent CLIs (installed from the npm registry by
//! `scripts/compat`) run a scripted session against a model server on 127.0.0.1 in a throwaway
//! HOME, and the reader must read what they wrote exactly — locally and over the test sshd.
//!
//! Gate: every test is `#[ignore]`d, so `cargo test --workspace` builds but does not run them;
//! `scripts/compat` installs the CLIs, sets `CLANKIE_COMPAT_DIR` to the npm prefix holding them
//! and runs `cargo test --test compat -- --ignored`. A test run without `CLANKIE_COMPAT_DIR`, or
//! with a CLI missing from it, fails. The CLIs run in parallel (one test each, each with its own
//! model server and HOME); `docs/harnesses.md` says what each covers.
//!
//! `edits.rs` adds one edit per CLI whose edit tool the reader renders as a diff (Codex's
//! `apply_patch`, OpenCode's `edit`); with `CLANKIE_COMPAT_RECORD_DIR` it records them as the
//! fixtures of the text snapshots.
//!
//! `terminal.rs` drives a CLI with no non-interactive mode (OpenHands) through its terminal UI
//! on a pseudo-terminal (util-linux `script`).
//!
//! `mcp.rs`: Claude Code calls our MCP server (`clankie-read mcp`) on a Codex session
//! (`claude_code_reads_codex_over_mcp`). `subagent.rs`: Claude Code delegates to a subagent,
//! which the reader lists, reads and resumes under its parent (`claude_code_subagent`).

#![allow(unreachable_pub)]

#[path = "../it/common/mod.rs"]
mod common;

mod clis;
mod edits;
mod mcp;
mod server;
mod session;
mod subagent;
mod terminal;

use clis::Cli;

fn run(cli: &Cli) {
    session::Suite::new(cli).run();
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn claude_code() {
    run(&clis::CLAUDE);
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn codex() {
    run(&clis::CODEX);
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn gemini_cli() {
    run(&clis::GEMINI);
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn pi() {
    run(&clis::PI);
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn opencode() {
    run(&clis::OPENCODE);
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn copilot() {
    run(&clis::COPILOT);
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn droid() {
    run(&clis::DROID);
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn continue_cli() {
    run(&clis::CONTINUE);
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn cline() {
    run(&clis::CLINE);
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn qwen() {
    run(&clis::QWEN);
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn aider() {
    run(&clis::AIDER);
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn kimi_code() {
    run(&clis::KIMI_CODE);
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn kilo() {
    run(&clis::KILO);
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn kimi() {
    run(&clis::KIMI);
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn openhands() {
    run(&clis::OPENHANDS);
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn claude_code_reads_codex_over_mcp() {
    mcp::claude_reads_codex();
}

#[test]
#[ignore = "needs the agent CLIs: run scripts/compat"]
fn claude_code_subagent() {
    subagent::claude_delegates_to_a_subagent();
}
