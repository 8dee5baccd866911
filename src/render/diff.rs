//! Edits shown as unified diffs in text output: a replaced snippet (Claude's `Edit`/`MultiEdit`,
//! OpenCode's and Pi's `edit`), a file written whole (`Write`, `write`), diffed with `similar`;
//! and a patch envelope, which already is a diff, retold with unified headers (its markers are
//! the harness's, `clankie_engine::harness::PatchEnvelope`).

use clankie_engine::harness::PatchEnvelope;
use similar::{ChangeTag, TextDiff};

use super::styled::{Line, Style};

/// Lines of context kept around each change.
const CONTEXT: usize = 3;

/// The diff of each `(old, new)` snippet of one edit. The snippets' own line numbers would
/// mislead (they count from the snippet, not the file), so hunks are separated by a bare `@@`.
pub fn snippets(edits: &[(&str, &str)]) -> Vec<Line> {
    let mut lines = Vec::new();
    for (old, new) in edits {
        let diff = TextDiff::from_lines(*old, *new);
        for group in diff.grouped_ops(CONTEXT) {
            if !lines.is_empty() {
                lines.push(Line::new(Style::Hunk, "@@"));
            }
            for op in &group {
                for change in diff.iter_changes(op) {
                    let (style, sign) = match change.tag() {
                        ChangeTag::Delete => (Style::Removed, '-'),
                        ChangeTag::Insert => (Style::Added, '+'),
                        ChangeTag::Equal => (Style::Plain, ' '),
                    };
                    let text = change.value().trim_end_matches(['\n', '\r']);
                    lines.push(Line::diff(style, sign, text));
                }
            }
        }
    }
    lines
}

/// A file's whole new content, as added lines under the unified header of a new file.
pub fn new_file(content: &str) -> Vec<Line> {
    let count = content.lines().count();
    let mut lines = vec![Line::new(Style::Hunk, format!("@@ -0,0 +1,{count} @@"))];
    lines.extend(
        content
            .lines()
            .map(|l| Line::diff(Style::Added, '+', l.trim_end_matches('\r'))),
    );
    lines
}

/// A patch envelope (file markers, `@@`, `+`/`-`/` ` lines, framing lines) as a unified diff:
/// each file gets `---`/`+++` headers, the envelope's markers go.
pub fn patch_envelope(patch: &str, envelope: &PatchEnvelope) -> Vec<Line> {
    let mut lines = Vec::new();
    let header = |lines: &mut Vec<Line>, old: String, new: String| {
        lines.push(Line::new(Style::FileHeader, format!("--- {old}")));
        lines.push(Line::new(Style::FileHeader, format!("+++ {new}")));
    };
    for line in patch.lines() {
        let line = line.trim_end_matches('\r');
        let marked = |marker: &str| {
            (!marker.is_empty())
                .then(|| line.strip_prefix(marker))
                .flatten()
        };
        if let Some(path) = marked(envelope.update_file) {
            header(&mut lines, format!("a/{path}"), format!("b/{path}"));
        } else if let Some(path) = marked(envelope.add_file) {
            header(&mut lines, "/dev/null".into(), format!("b/{path}"));
        } else if let Some(path) = marked(envelope.delete_file) {
            header(&mut lines, format!("a/{path}"), "/dev/null".into());
        } else if let Some(path) = marked(envelope.move_to) {
            lines.push(Line::new(Style::FileHeader, format!("rename to {path}")));
        } else if envelope.framing.contains(&line) {
        } else if line.starts_with("@@") {
            lines.push(Line::new(Style::Hunk, line));
        } else if let Some(text) = line.strip_prefix('+') {
            lines.push(Line::diff(Style::Added, '+', text));
        } else if let Some(text) = line.strip_prefix('-') {
            lines.push(Line::diff(Style::Removed, '-', text));
        } else if let Some(text) = line.strip_prefix(' ') {
            lines.push(Line::diff(Style::Plain, ' ', text));
        } else {
            lines.push(Line::new(Style::Plain, line));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(lines: &[Line]) -> Vec<String> {
        lines
            .iter()
            .map(|l| format!("{:?} {}", l.style, l.text))
            .collect()
    }

    #[test]
    fn a_replaced_snippet_is_a_diff_of_its_lines() {
        let lines = snippets(&[("a\nb\nc\n", "a\nB\nc\n")]);
        assert_eq!(
            show(&lines),
            ["Plain  a", "Removed -b", "Added +B", "Plain  c"]
        );
    }

    #[test]
    fn distant_changes_and_several_edits_are_separate_hunks() {
        let old: String = (0..20).map(|i| format!("{i}\n")).collect();
        let new = old.replace("2\n", "two\n").replace("17\n", "seventeen\n");
        let lines = snippets(&[(&old, &new), ("x", "y")]);
        let hunks = lines.iter().filter(|l| l.style == Style::Hunk).count();
        assert_eq!(hunks, 2, "{:?}", show(&lines));
        assert_eq!(lines.last().unwrap().text, "+y");
    }

    #[test]
    fn a_new_file_is_all_added() {
        assert_eq!(
            show(&new_file("one\ntwo\n")),
            ["Hunk @@ -0,0 +1,2 @@", "Added +one", "Added +two"]
        );
    }

    #[test]
    fn an_apply_patch_envelope_gets_unified_headers() {
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@ fn main\n-old\n+new\n ctx\n\
                     *** Add File: b.txt\n+hi\n*** Delete File: c.txt\n*** End Patch\n";
        assert_eq!(
            show(&patch_envelope(patch, &PatchEnvelope::APPLY_PATCH)),
            [
                "FileHeader --- a/src/a.rs",
                "FileHeader +++ b/src/a.rs",
                "Hunk @@ fn main",
                "Removed -old",
                "Added +new",
                "Plain  ctx",
                "FileHeader --- /dev/null",
                "FileHeader +++ b/b.txt",
                "Added +hi",
                "FileHeader --- a/c.txt",
                "FileHeader +++ /dev/null",
            ]
        );
    }
}
