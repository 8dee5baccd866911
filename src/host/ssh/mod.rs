//! SSH transport (stub).
pub mod config;
pub mod known_hosts;
