//! The trigrams a PostgreSQL store looks up for a search: what `pg_trgm`'s `show_trgm` gives of
//! every record holding a literal. The store indexes `show_trgm(search)` with a GIN array index,
//! whose `@>` (contains all of) is exact: the server answers from the index alone, reading no
//! record's text to recheck it, and our regex then decides every match.
//!
//! `show_trgm` cuts text into words at every character that is not a letter or digit, lowercases
//! each word (with the database's locale) and gives each word's three-character windows, plus
//! padded ones at its ends. A run of three or more ASCII letters and digits in a literal lies
//! inside one word of any text that holds the literal, so each of its windows, lowercased, is
//! among that text's trigrams, and the ends' padded ones (which an occurrence inside a longer
//! word lacks) are left out. That holds where the database lowercases each ASCII letter to its
//! ASCII lowercase; where it does not (a Turkish locale lowercases `I` to `ı`), the literal is
//! also cut at those letters, as [`crate::store::index_terms`] cuts at the letters our regex folds
//! with non-ASCII ones.

/// The uppercase and lowercase ASCII letters, in the order [`letters_lowered_otherwise`] reads
/// the database's `lower()` of them.
pub(crate) const ASCII_LETTERS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The ASCII letters (lowercase) that `lowered`, the database's `lower(`[`ASCII_LETTERS`]`)`,
/// does not give as their ASCII lowercase.
pub(crate) fn letters_lowered_otherwise(lowered: &str) -> Vec<char> {
    let lowered: Vec<char> = lowered.chars().collect();
    let mut odd: Vec<char> = Vec::new();
    if lowered.len() != ASCII_LETTERS.len() {
        // A lowercase of another length: no letter can be trusted.
        return ASCII_LETTERS[26..].chars().collect();
    }
    for (letter, got) in ASCII_LETTERS.chars().zip(lowered) {
        let want = letter.to_ascii_lowercase();
        if got != want && !odd.contains(&want) {
            odd.push(want);
        }
    }
    odd
}

/// The trigrams every record holding each of `pieces` has in `show_trgm(search)`, sorted and
/// distinct; `None` when they have none (no run of three ASCII letters and digits between the
/// letters in `odd`, which the database lowercases otherwise): such a search is not answered
/// by the index.
pub(crate) fn trigrams(pieces: &[String], odd: &[char]) -> Option<Vec<String>> {
    let mut found: Vec<String> = Vec::new();
    for piece in pieces {
        let runs = piece
            .split(|c: char| !c.is_ascii_alphanumeric() || odd.contains(&c.to_ascii_lowercase()));
        for run in runs {
            let run = run.to_ascii_lowercase();
            let bytes = run.as_bytes();
            for window in bytes.windows(3) {
                // ASCII: every window is whole characters.
                found.push(String::from_utf8(window.to_vec()).expect("ASCII"));
            }
        }
    }
    found.sort_unstable();
    found.dedup();
    (!found.is_empty()).then_some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(pieces: &[&str], odd: &[char]) -> Option<Vec<String>> {
        let pieces: Vec<String> = pieces.iter().map(|p| p.to_string()).collect();
        trigrams(&pieces, odd)
    }

    #[test]
    fn a_literal_gives_the_windows_of_its_ascii_words_lowercased() {
        assert_eq!(
            of(&["Coredump"], &[]).unwrap(),
            ["cor", "dum", "edu", "ore", "red", "ump"]
        );
        // Words are cut at what is not a letter or digit; the padded end trigrams are left
        // out, so `x-grep` inside `zqx-grepper` is still found.
        assert_eq!(
            of(&["zqx-grep-needle"], &[]).unwrap(),
            ["dle", "edl", "eed", "gre", "nee", "rep", "zqx"]
        );
        assert_eq!(
            of(&["100%_done", "snake_case"], &[]).unwrap(),
            ["100", "ake", "ase", "cas", "don", "nak", "one", "sna"]
        );
        // Non-ASCII characters end a run: the database may lowercase or split them otherwise.
        assert_eq!(of(&["Straße"], &[]).unwrap(), ["str", "tra"]);
        assert_eq!(of(&["café"], &[]).unwrap(), ["caf"]);
        // Nothing of three: the index cannot answer.
        assert_eq!(of(&["a.b.c", "==>", "é"], &[]), None);
    }

    #[test]
    fn letters_a_locale_lowercases_otherwise_cut_the_runs() {
        assert_eq!(
            letters_lowered_otherwise(&ASCII_LETTERS.to_ascii_lowercase()),
            Vec::<char>::new()
        );
        // A Turkish locale: `I` becomes dotless `ı`.
        let turkish = ASCII_LETTERS.to_ascii_lowercase().replacen('i', "ı", 1);
        let odd = letters_lowered_otherwise(&turkish);
        assert_eq!(odd, ['i']);
        assert_eq!(
            of(&["Filename"], &odd).unwrap(),
            ["ame", "ena", "len", "nam"]
        );
        assert_eq!(of(&["FILE"], &odd), None);
    }
}
