//! Which of a literal's trigrams a store's text index looks up. A trigram index answers "every
//! record holding all these trigrams" by walking each trigram's list of records, and a
//! trigram such as `rep` or `the` is in a large share of them: looking up a literal's every
//! trigram costs the walk of the common ones' long lists, where its rare ones alone name
//! nearly the same records. Any subset of a literal's trigrams names a superset of the records
//! that hold it, so the search's answer is the same whichever are looked up (the regex decides
//! every match); only its cost changes. The stores decide which are rare: SQLite counts a
//! few records of the likeliest ones ([`rarest_first`]), PostgreSQL reads its own statistics
//! of the index.

/// Every window of three characters of `piece`, as the FTS5 `trigram` tokenizer cuts text.
pub(crate) fn windows(piece: &str) -> Vec<String> {
    let chars: Vec<char> = piece.chars().collect();
    chars.windows(3).map(|w| w.iter().collect()).collect()
}

/// `trigrams`, each once, likeliest to be rare first: by the sum of their characters'
/// [`commonness`]. A guess, which a store checks before it relies on it.
pub(crate) fn rarest_first(trigrams: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut trigrams: Vec<String> = trigrams.into_iter().collect();
    let score = |t: &str| -> u32 { t.chars().map(commonness).sum() };
    trigrams.sort_by(|a, b| score(a).cmp(&score(b)).then(a.cmp(b)));
    trigrams.dedup();
    trigrams
}

/// How common `c` is in transcripts' text, roughly: space most; letters by their frequency in
/// English (`z` least, `e` most, either case); digits and the punctuation of code and paths
/// between; other ASCII rare, and any other character rarest.
fn commonness(c: char) -> u32 {
    const LETTERS_RAREST_FIRST: &str = "zqjxkvbpygfwmucldrhsnioate";
    match c {
        ' ' => 32,
        c if c.is_ascii_alphabetic() => {
            let lower = c.to_ascii_lowercase();
            4 + LETTERS_RAREST_FIRST.find(lower).map_or(0, |at| at as u32)
        }
        c if c.is_ascii_digit() => 12,
        '_' | '.' | ',' | '/' | '-' | ':' | '"' | '\n' => 10,
        c if c.is_ascii() => 2,
        _ => 0,
    }
}

/// Of `trigrams`, the ones to look up when `share` says, for each trigram among an index's most
/// common, the share of records holding it (`None`: not among them). The rare ones, and when
/// fewer than two are rare, the least common others up to two: one rare trigram on its own
/// may be in many records, and two lists intersected narrow them far more. All of them when
/// none is rare.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn to_look_up(trigrams: &[String], share: impl Fn(&str) -> Option<f64>) -> Vec<String> {
    let mut rare = Vec::new();
    let mut common = Vec::new();
    for trigram in trigrams {
        match share(trigram) {
            None => rare.push(trigram.clone()),
            Some(share) => common.push((share, trigram.clone())),
        }
    }
    if rare.is_empty() {
        return trigrams.to_vec();
    }
    common.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let wanted = 2usize.saturating_sub(rare.len());
    rare.extend(common.into_iter().take(wanted).map(|(_, t)| t));
    rare.sort_unstable();
    rare
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(of: &[&str]) -> Vec<String> {
        of.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn windows_are_whole_characters() {
        assert_eq!(windows("zqx-g"), strings(&["zqx", "qx-", "x-g"]));
        assert_eq!(windows("née!"), strings(&["née", "ée!"]));
        assert!(windows("ab").is_empty());
    }

    #[test]
    fn rare_letters_and_punctuation_come_before_common_ones() {
        let ranked = rarest_first(windows("zqx-grep-needle"));
        assert_eq!(ranked[0], "zqx");
        let the = ranked.iter().position(|t| t == "eed").unwrap();
        let dash = ranked.iter().position(|t| t == "x-g").unwrap();
        assert!(dash < the, "{ranked:?}");
        // Each once.
        assert_eq!(rarest_first(strings(&["abc", "abc"])), strings(&["abc"]));
    }

    #[test]
    fn the_common_are_left_out_while_two_remain() {
        let trigrams = strings(&["cor", "dum", "edu", "ore", "red", "ump"]);
        let share = |t: &str| match t {
            "cor" => Some(0.52),
            "ore" => Some(0.41),
            "red" => Some(0.26),
            _ => None,
        };
        assert_eq!(
            to_look_up(&trigrams, share),
            strings(&["dum", "edu", "ump"])
        );
        // One rare: the least common of the others joins it.
        let one = |t: &str| (t != "dum").then_some(if t == "red" { 0.2 } else { 0.5 });
        assert_eq!(to_look_up(&trigrams, one), strings(&["dum", "red"]));
        // None rare, or no statistics: all of them.
        assert_eq!(to_look_up(&trigrams, |_| Some(0.3)), trigrams);
        let none = |_: &str| None;
        assert_eq!(to_look_up(&trigrams, none), trigrams);
    }
}
