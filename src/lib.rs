//! clankie-read: read AI coding agents' session transcripts on this machine or over SSH, with
//! nothing installed on the machine being read.
//!
//! A host answers exactly two primitives: *list* the transcript files under the harnesses'
//! roots, and *read* byte ranges of one of them (at most 4 MiB per call). Everything else —
//! parsing, normalization, paging, cursors, rendering — happens here, on the reading side.
//!
//! The layers are crates, so the rules between them are dependency facts (docs/architecture.md):
//! - `clankie_model`: plain shared data; depends on no other crate of ours.
//! - `clankie_engine`: pure and deterministic — bytes in, records and read requests out. No
//!   I/O, no clock, no tokio, no SQLite. Depends on the model only.
//! - `clankie_host`: I/O only — moves bytes and listings, never interprets transcripts.
//!   Depends on the model only, never on the engine.
//! - this crate: [`driver`] is the one module that uses both engine and hosts ([`sqlite`] is
//!   its helper for database sources); [`render`] turns pages into text or NDJSON; [`cli`]
//!   holds the clap definitions and is the only place that prints or exits; [`mcp`] serves
//!   the same reads as MCP tools on stdio (`clankie-read mcp`); [`handoff`] is the queue
//!   through which `--all` shares its work with helper threads; [`ui`] is the interactive
//!   view's pure model and drawing (`clankie-read ui`, its terminal loop in `cli`).

pub mod cache;
pub mod check;
pub mod cli;
pub mod config;
pub mod driver;
pub mod error;
pub mod handoff;
pub mod mcp;
pub mod render;
pub mod sqlite;
pub mod store;
pub mod ui;
