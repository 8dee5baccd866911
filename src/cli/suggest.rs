//! "did you mean": a bare first word that is not a session and is close to a subcommand
//! (`gerp`, `chek`) or names a read's option (`tail`), said as `git` and `cargo` say it.
//! Only once the word fails as a session: a session whose id is such a word is read.

use crate::driver::DriverError;
use crate::error::{Error, UsageError};
use clankie_engine::resolve::ResolveError;

/// Words that are a read's options when spelled with `--`: `tail 5 X` means `X --tail 5`.
const READ_OPTION_WORDS: &[&str] = &["tail", "head", "all", "follow", "since"];

/// What `word` may have meant: a subcommand of `subcommands` within a typo of it (one edit for
/// a word of up to 4 characters, two beyond; a swap of two neighbours is one edit), or a read's
/// option (`--tail`) when it is one's name.
pub(super) fn meant(word: &str, subcommands: &[&'static str]) -> Option<String> {
    if word.contains(':') || word.contains('/') || word.starts_with('-') {
        return None;
    }
    let lower = word.to_ascii_lowercase();
    if let Some(option) = READ_OPTION_WORDS.iter().find(|o| **o == lower) {
        return Some(format!("--{option}"));
    }
    let most = if lower.chars().count() <= 4 { 1 } else { 2 };
    subcommands
        .iter()
        .map(|name| (edits(&lower, name), *name))
        .filter(|(distance, _)| *distance <= most)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name.to_string())
}

/// A read of the bare word `target` that ended with `result`: a word that named no session
/// and is close to a subcommand (or a read's option) becomes "did you mean" (exit 2).
pub(super) fn after_read<T>(
    target: &str,
    result: Result<T, Error>,
    subcommands: &[&'static str],
) -> Result<T, Error> {
    let no_session = matches!(
        &result,
        Err(Error::Driver(
            DriverError::NotFound { .. }
                | DriverError::Resolve(
                    ResolveError::NotFound(_)
                        | ResolveError::TooShort(_)
                        | ResolveError::InvalidId(_)
                )
        ))
    );
    match meant(target, subcommands) {
        Some(suggestion) if no_session => Err(UsageError::DidYouMean {
            word: target.to_string(),
            suggestion,
        }
        .into()),
        _ => result,
    }
}

/// The optimal string alignment distance: insertions, deletions, substitutions and swaps of
/// two neighbouring characters, each one edit.
fn edits(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUBCOMMANDS: &[&str] = &["read", "ls", "check", "grep", "hosts", "resume"];

    #[test]
    fn typos_of_subcommands_and_read_options_are_suggested() {
        assert_eq!(meant("gerp", SUBCOMMANDS).as_deref(), Some("grep"));
        assert_eq!(meant("chek", SUBCOMMANDS).as_deref(), Some("check"));
        assert_eq!(meant("hsots", SUBCOMMANDS).as_deref(), Some("hosts"));
        assert_eq!(meant("tail", SUBCOMMANDS).as_deref(), Some("--tail"));
        // Session ids and prefixes are nothing like a subcommand.
        for word in ["3f1c2a", "local:gerp", "claude/chek", "short", "--grep"] {
            assert_eq!(meant(word, SUBCOMMANDS), None, "{word}");
        }
    }
}
