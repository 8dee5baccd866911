//! The pure engine.
