//! Integration tests: one binary.

mod ssh_transport;
