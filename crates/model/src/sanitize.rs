//! The one sanitiser for everything that reaches a terminal: transcript text, file names, error
//! messages. It removes terminal control sequences so that printing a transcript can never
//! move the cursor, retitle the window, write the clipboard or reorder text, and the invisible
//! characters that make text read differently from what it is.

/// Returns `text` with every terminal control removed: ESC-introduced sequences (CSI, OSC, DCS,
/// SOS, PM, APC and two-byte escapes) whole, C0 controls except `\n` and `\t`, DEL, C1 controls
/// (U+0080–U+009F, including their 8-bit CSI/OSC/DCS forms with their parameters), the Unicode
/// line and paragraph separators, the zero-width characters, and the bidirectional marks,
/// embeddings, overrides and isolates ([`is_suspect`] lists each).
pub fn sanitize(text: &str) -> String {
    // Fast path: most text has nothing to remove.
    if !text.chars().any(is_suspect) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates up to a final byte in 0x40..=0x7e.
                Some('[') => skip_csi(&mut chars),
                // OSC, DCS, SOS, PM, APC: a string up to BEL or ST (ESC \).
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                // Two-byte escapes (ESC c, ESC 7, ESC ( B, …): drop intermediates and final.
                Some(first) if (' '..='/').contains(&first) => {
                    for n in chars.by_ref() {
                        if !(' '..='/').contains(&n) {
                            break;
                        }
                    }
                }
                Some(_) => {}
                None => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{90}' | '\u{9d}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            '\n' | '\t' => out.push(c),
            c if is_suspect(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// [`sanitize`] for a value shown on one line — a file name, a path, a one-line message —
/// where a control is part of the value and must stay visible: LF, CR and TAB become `\n`,
/// `\r`, `\t`, every other C0 control, DEL and C1 control `\xNN`, so a name holding
/// `\r` or an escape sequence reads as what it is and never moves the cursor or breaks the
/// line. What [`sanitize`] removes besides controls (separators, zero-width and bidi
/// characters) is removed.
pub fn sanitize_line(text: &str) -> String {
    if !text.chars().any(is_suspect) && !text.contains(['\n', '\t']) {
        return text.to_string();
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => shown.push_str("\\n"),
            '\r' => shown.push_str("\\r"),
            '\t' => shown.push_str("\\t"),
            '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => {
                shown.push_str(&format!("\\x{:02x}", u32::from(c)));
            }
            c => shown.push(c),
        }
    }
    sanitize(&shown)
}

/// Whether `c` is removed (outside the sequences [`sanitize`] skips whole).
fn is_suspect(c: char) -> bool {
    matches!(c,
        // C0 controls but `\t` and `\n`; DEL and the C1 controls.
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        // LINE SEPARATOR, PARAGRAPH SEPARATOR: some terminals and every JavaScript renderer
        // break lines on them, so a record could fake a line of its own.
        | '\u{2028}' | '\u{2029}'
        // Zero-width: ZERO WIDTH SPACE, ZERO WIDTH NON-JOINER, ZERO WIDTH JOINER, WORD JOINER,
        // ZERO WIDTH NO-BREAK SPACE (BOM). Invisible, so `rm -rf /tmp/x` and `rm -rf /\u{200b}tmp/x`
        // would look alike.
        | '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}'
        // Bidi marks: LEFT-TO-RIGHT MARK, RIGHT-TO-LEFT MARK, ARABIC LETTER MARK.
        | '\u{200e}' | '\u{200f}' | '\u{61c}'
        // Bidi embeddings/overrides (LRE RLE PDF LRO RLO) and isolates (LRI RLI FSI PDI).
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            break;
        }
    }
}

fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => break,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                break;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{sanitize, sanitize_line};

    #[test]
    fn one_line_values_keep_their_controls_visible() {
        assert_eq!(sanitize_line("/p/-x/a.jsonl"), "/p/-x/a.jsonl");
        assert_eq!(
            sanitize_line("/p/-cr\rlf\n\ttab/\x1b[31mred\u{9b}/\u{202e}x\u{2028}"),
            "/p/-cr\\rlf\\n\\ttab/\\x1b[31mred\\x9b/x"
        );
        assert_eq!(sanitize_line(r"C:\Users\me"), r"C:\Users\me");
    }

    #[test]
    fn plain_text_is_unchanged() {
        assert_eq!(sanitize("héllo\n\tworld — ✓"), "héllo\n\tworld — ✓");
    }

    #[test]
    fn removes_every_control_family() {
        let cases = [
            ("\x1b[31mred\x1b[0m", "red"),
            ("\x1b[?1049h\x1b[2J\x1b[Hx", "x"),
            ("a\x1b]0;title\x07b", "ab"),
            ("a\x1b]52;c;aGVsbG8=\x1b\\b", "ab"),
            ("a\x1bP1$qm\x1b\\b", "ab"),
            ("a\x1b_apc\x1b\\b", "ab"),
            ("a\x1bcb", "ab"),
            ("a\x1b(Bb", "ab"),
            ("a\u{9b}31mb", "ab"),
            ("a\u{9d}0;t\u{9c}b", "ab"),
            ("a\x07\x08\x0d\x0b\x0c\x00\x7fb", "ab"),
            ("a\u{85}\u{8d}b", "ab"),
            ("abc\u{202e}fed\u{202c}\u{2066}x\u{2069}", "abcfedx"),
            ("one\u{2028}two\u{2029}three", "onetwothree"),
            (
                "r\u{200b}m \u{200c}-\u{200d}rf\u{2060} /\u{feff}",
                "rm -rf /",
            ),
            ("a\u{200e}b\u{200f}c\u{61c}d", "abcd"),
            // Inside an escape sequence's string they go with it.
            ("a\x1b]0;\u{2028}\u{200b}\x07b", "ab"),
            ("unterminated \x1b]0;title", "unterminated "),
            ("trailing esc\x1b", "trailing esc"),
        ];
        for (input, want) in cases {
            assert_eq!(sanitize(input), want, "{input:?}");
        }
    }

    #[test]
    fn neighbours_of_what_is_removed_stay() {
        let kept = "\u{a0}\u{61b}\u{61d}\u{200a}\u{2010}\u{2027}\u{202f}\u{205f}\u{fefe}\u{ff01}";
        assert_eq!(sanitize(kept), kept);
        // Emoji keep their pictures (a ZWJ sequence falls apart into its parts).
        assert_eq!(sanitize("👩\u{200d}💻 ✓"), "👩💻 ✓");
    }

    #[test]
    fn output_never_holds_control_bytes() {
        let removed = |c: char| {
            (c < ' ' && c != '\n' && c != '\t')
                || ('\u{7f}'..='\u{9f}').contains(&c)
                || ('\u{200b}'..='\u{200f}').contains(&c)
                || ('\u{2028}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c)
                || matches!(c, '\u{61c}' | '\u{2060}' | '\u{feff}')
        };
        // Every code point up to U+2070 and U+FEFF after ESC, alone and in a string.
        for b in (0u32..=0x2070).chain([0xfeff]) {
            let Some(c) = char::from_u32(b) else { continue };
            let input = format!("x\u{1b}{c}y{c}z\u{1b}[{c}");
            let out = sanitize(&input);
            assert!(!out.chars().any(removed), "{input:?} -> {out:?}");
            assert_eq!(sanitize(&c.to_string()).is_empty(), removed(c), "{c:?}");
        }
    }
}
