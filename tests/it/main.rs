//! Integration tests: one binary. `common/` holds the test support (temp homes, the CLI runner,
//! the real sshd); each module tests one capability end to end with real files and processes.

// Test modules share helpers with `pub`; the binary has no public API to keep narrow.
#![allow(unreachable_pub)]

mod architecture;
mod cli_local;
mod fixtures;
mod support;
