//! The characters Unicode names invisible or text-reordering: its Default_Ignorable_Code_Point
//! and Bidi_Control sets, as a table. `--json` writes every one of them as a `\uXXXX` escape,
//! so that what a terminal shows of a JSON line is what the line holds.

/// Default_Ignorable_Code_Point (DerivedCoreProperties.txt) as inclusive ranges, generated from
/// the Unicode Character Database 14.0.0 (Perl's `Unicode::UCD`) by
/// `perl -e 'for $c (0..0x10FFFF) { print sprintf("%X\n", $c) if chr($c) =~ /\p{DI}/ }'`
/// (consecutive code points joined into ranges). Every Bidi_Control character is also in it.
pub const DEFAULT_IGNORABLE: &[(char, char)] = &[
    ('\u{00ad}', '\u{00ad}'),
    ('\u{034f}', '\u{034f}'),
    ('\u{061c}', '\u{061c}'),
    ('\u{115f}', '\u{1160}'),
    ('\u{17b4}', '\u{17b5}'),
    ('\u{180b}', '\u{180f}'),
    ('\u{200b}', '\u{200f}'),
    ('\u{202a}', '\u{202e}'),
    ('\u{2060}', '\u{206f}'),
    ('\u{3164}', '\u{3164}'),
    ('\u{fe00}', '\u{fe0f}'),
    ('\u{feff}', '\u{feff}'),
    ('\u{ffa0}', '\u{ffa0}'),
    ('\u{fff0}', '\u{fff8}'),
    ('\u{1bca0}', '\u{1bca3}'),
    ('\u{1d173}', '\u{1d17a}'),
    ('\u{e0000}', '\u{e0fff}'),
];

/// Bidi_Control (PropList.txt), Unicode 14.0.0, generated as [`DEFAULT_IGNORABLE`] with
/// `\p{Bidi_C}`: ALM, LRM, RLM, the embeddings and overrides, the isolates.
pub const BIDI_CONTROL: &[(char, char)] = &[
    ('\u{061c}', '\u{061c}'),
    ('\u{200e}', '\u{200f}'),
    ('\u{202a}', '\u{202e}'),
    ('\u{2066}', '\u{2069}'),
];

/// Whether `c` is Default_Ignorable_Code_Point or Bidi_Control.
pub fn is_invisible(c: char) -> bool {
    in_table(DEFAULT_IGNORABLE, c) || in_table(BIDI_CONTROL, c)
}

fn in_table(table: &[(char, char)], c: char) -> bool {
    table
        .binary_search_by(|&(first, last)| {
            if last < c {
                std::cmp::Ordering::Less
            } else if first > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_apart_and_bidi_controls_are_ignorable() {
        for table in [DEFAULT_IGNORABLE, BIDI_CONTROL] {
            for pair in table.windows(2) {
                assert!(pair[0].1 < pair[1].0, "{pair:?}");
            }
            assert!(table.iter().all(|(a, b)| a <= b));
        }
        for &(first, last) in BIDI_CONTROL {
            for c in first..=last {
                assert!(in_table(DEFAULT_IGNORABLE, c), "{c:?}");
            }
        }
        for c in [
            '\u{200f}',
            '\u{61c}',
            '\u{200b}',
            '\u{ad}',
            '\u{e0041}',
            '\u{fe0f}',
        ] {
            assert!(is_invisible(c), "{c:?}");
        }
        for c in [
            'a',
            '\u{ac}',
            '\u{ae}',
            '\u{61b}',
            '\u{2070}',
            '\u{e1000}',
            '\u{fff9}',
        ] {
            assert!(!is_invisible(c), "{c:?}");
        }
    }
}
