//! Wrapping a line of text output to the terminal's width. Widths are display columns (a CJK
//! character or an emoji takes two), counted by `textwrap`; words longer than the width are
//! broken. The caller adds the hanging indent.

/// How wide a tab is taken to be once a line is wrapped (it is expanded to spaces there, since
/// where a tab stop falls depends on the indent the line is printed at).
const TAB: &str = "    ";

/// `line` (no newline in it) cut into pieces of at most `width` columns, the pieces after the
/// first indented by `hang` spaces. Leading indentation is kept on the first piece (code and
/// diffs keep their shape); an empty line stays one empty piece.
pub fn wrap(line: &str, width: usize, hang: usize) -> Vec<String> {
    let width = width.max(1);
    let line = line.replace('\t', TAB);
    if textwrap::core::display_width(&line) <= width {
        return vec![line];
    }
    let hang = " ".repeat(hang.min(width / 2));
    let options = textwrap::Options::new(width)
        .subsequent_indent(&hang)
        .break_words(true)
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        // Paths and flags (`todo-app`, `--no-pager`) stay whole where they fit.
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    textwrap::wrap(&line, options)
        .into_iter()
        .map(|piece| piece.into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    fn wrap(line: &str, width: usize) -> Vec<String> {
        super::wrap(line, width, 0)
    }

    #[test]
    fn continuations_hang() {
        assert_eq!(super::wrap("+aaa bbb ccc", 8, 1), ["+aaa bbb", " ccc"]);
    }

    #[test]
    fn short_lines_stay_whole() {
        assert_eq!(wrap("hello world", 20), ["hello world"]);
        assert_eq!(wrap("", 20), [""]);
        assert_eq!(wrap("\tx", 20), ["    x"]);
    }

    #[test]
    fn long_lines_break_between_words_and_inside_long_words() {
        assert_eq!(
            wrap("the quick brown fox jumps", 10),
            ["the quick", "brown fox", "jumps"]
        );
        assert_eq!(wrap("abcdefghijkl", 5), ["abcde", "fghij", "kl"]);
        assert_eq!(
            wrap("see /a/todo-app now", 14),
            ["see", "/a/todo-app", "now"]
        );
    }

    #[test]
    fn indentation_is_kept_and_wide_characters_count_double() {
        assert_eq!(wrap("    let x = 1 + 2;", 12), ["    let x =", "1 + 2;"]);
        // Six CJK characters are twelve columns.
        assert_eq!(wrap("日本語日本語", 8), ["日本語日", "本語"]);
    }
}
