//! clankie-read: read AI coding agents' session transcripts on this machine or over SSH, with
//! nothing installed on the machine being read.
//!
//! A host answers exactly two primitives: *list* the transcript files under the harnesses'
//! roots, and *read* byte ranges of one of them (at most 4 MiB per call). Everything else —
//! parsing, normalization, paging, cursors, rendering — happens here, on the reading side.
//!
//! Layers, and what each may import:
//! - [`model`]: plain shared data; imports nothing from the crate.
//! - [`engine`]: pure and deterministic — bytes in, records and read requests out. No I/O, no
//!   clock, no tokio. Imports `model` only. (An architecture test holds this line.)
//! - [`host`]: I/O only — moves bytes and listings, never interprets transcripts. Imports
//!   `model` and `sanitize`, never `engine`.
//! - [`driver`]: the one module that uses both engine and hosts; [`sqlite`] is its helper for
//!   database sources (copy through the read primitive, query a private read-only copy).
//! - [`render`]: turns pages into text or NDJSON.
//! - [`cli`]: clap definitions, one file per subcommand; the only place that prints or exits.

pub mod check;
pub mod cli;
pub mod config;
pub mod driver;
pub mod engine;
pub mod error;
pub mod host;
pub mod model;
pub mod render;
pub mod sanitize;
pub mod sqlite;
