//! `clankie-read ui`: the interactive view across hosts, as a pure model and its drawing; the
//! terminal loop that feeds it (reads through the driver, keys from the terminal) is
//! `cli::ui`. Nothing here does I/O, so every screen is a unit test.
//!
//! - [`model`]: the state (the session list across hosts, the open session) and what a key,
//!   a host's listing or a page of records does to it; a key's effect the loop must carry out
//!   is returned as an [`model::Action`]; the global search ([`model::search`]) and the
//!   host-wide follow ([`model::follow`]) are its submodules, the session's folds (long results
//!   and thinking opened by a key, and which one is in focus) another (`model/fold.rs`).
//! - [`lines`]: records turned into the view's lines by the text renderer (`render::text`),
//!   every line through the one sanitiser, so no transcript byte can drive the terminal.
//! - [`draw`]: one frame drawn from the state (ratatui widgets).
//! - [`keys`]: the keys, one table that the help screen, `--help` and the man page show.

pub mod draw;
pub mod keys;
pub mod lines;
pub mod model;
