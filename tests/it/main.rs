//! Integration tests: one binary. `common/` holds the test support (the real sshd with users of
//! every login shell), `support` runs the CLI; each module tests one capability end to end with
//! real files, shells and processes.

// Test modules share helpers with `pub`; the binary has no public API to keep narrow.
#![allow(unreachable_pub)]

mod aider_projects;
mod all_harnesses;
mod architecture;
mod batch_reads;
mod bulk_reads;
mod cache;
mod check;
mod cli_local;
mod cli_script;
mod common;
mod completion_keys;
mod completions;
mod dialect;
mod did_you_mean;
mod drift;
mod escapes;
mod everyday;
mod filters;
mod first_check;
mod fixtures;
mod follow;
mod follow_ends;
mod follow_host;
mod grep;
mod harness_names;
mod harnesses;
mod help_sections;
mod host_keys;
mod hostile;
mod hostile_recordings;
mod hosts;
mod hosts_handshake;
mod latest;
mod ls_people;
mod man;
mod mcp;
mod mux;
mod ndjson_doc;
mod odd_names;
mod opencode_tree;
mod output_format;
mod pager;
mod progress;
mod read_back;
mod redaction;
mod redaction_precision;
mod resume;
mod round_trips;
mod session_header;
mod since_times;
mod sqlite;
mod sqlite_vfs;
mod ssh_config;
mod ssh_file_swap;
mod ssh_read;
mod ssh_transport;
mod sshd_fixture;
mod store;
mod store_postgres;
mod support;
mod tables;
mod terminal;
mod terminal_checkpoint;
mod terminal_roots;
mod text_snapshots;
mod toybox;
mod ui;
mod ui_readme;
mod wal;
