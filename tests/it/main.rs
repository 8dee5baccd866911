//! Integration tests: one binary.

mod common;
mod sshd_fixture;
