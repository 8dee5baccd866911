//! `cache ls|clear` for people: one row per cached file — host, harness, size, last use, path —
//! then the total; and the one line of what a clear removed. Everything from a host goes
//! through the one sanitiser.

use std::io::{self, Write};
use std::path::Path;

use super::ls::human_size;
use super::rfc3339;
use crate::cache::{CachedFileInfo, Cleared};
use clankie_model::display_path;
use clankie_model::sanitize::sanitize_line;

/// One line per file, in columns; then the count and the total size.
pub fn files(out: &mut impl Write, files: &[CachedFileInfo]) -> io::Result<()> {
    let host_width = files.iter().map(|f| f.host.len()).max().unwrap_or(0);
    let harness_width = files.iter().map(|f| f.harness.len()).max().unwrap_or(0);
    for file in files {
        writeln!(
            out,
            "{:host_width$}  {:harness_width$}  {:>9}  {}  {}",
            sanitize_line(&file.host),
            sanitize_line(&file.harness),
            human_size(file.bytes),
            used(file),
            sanitize_line(&display_path(&file.path)),
        )?;
    }
    let total: u64 = files.iter().map(|f| f.bytes).sum();
    writeln!(
        out,
        "{} file{}, {}",
        files.len(),
        if files.len() == 1 { "" } else { "s" },
        human_size(total)
    )
}

/// `removed N cached files[ of HOST] (SIZE) from DIR`.
pub fn cleared(
    out: &mut impl Write,
    host: Option<&str>,
    cleared: &Cleared,
    dir: &Path,
) -> io::Result<()> {
    let whose = host.map_or(String::new(), |h| format!(" of {}", sanitize_line(h)));
    writeln!(
        out,
        "removed {} cached file{}{whose} ({}) from {}",
        cleared.files,
        if cleared.files == 1 { "" } else { "s" },
        human_size(cleared.bytes),
        sanitize_line(&dir.display().to_string()),
    )
}

/// When a file was last used, RFC 3339 (text and NDJSON alike).
pub(super) fn used(file: &CachedFileInfo) -> String {
    rfc3339(i64::try_from(file.used).unwrap_or(i64::MAX))
}
