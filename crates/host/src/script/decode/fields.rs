//! The fields of a typed line: words, numbers, hex, a file's mode as `stat` prints it.

/// Splits off the first space-separated word (the rest keeps any further spaces).
pub(super) fn split_word(line: &[u8]) -> (&[u8], &[u8]) {
    match line.iter().position(|&b| b == b' ') {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => (line, &[]),
    }
}

pub(super) fn parse_u64(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 20 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

pub(super) fn parse_i64(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix(b"-") {
        Some(d) => (true, d),
        None => (false, text),
    };
    let value = i64::try_from(parse_u64(digits)?).ok()?;
    Some(if negative { -value } else { value })
}

pub(super) fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes hex digits, ignoring ASCII whitespace.
pub(super) fn hex_decode(text: &[u8]) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks(2)
        .map(|p| Some((hex_val(p[0])? << 4) | hex_val(p[1])?))
        .collect()
}

/// The type bits of a regular file's and a directory's mode (`S_IFREG`, `S_IFDIR`), and the
/// mask that holds them.
pub(super) const REGULAR_FILE: u32 = 0o100000;
pub(super) const DIRECTORY: u32 = 0o040000;
pub(super) const FILE_TYPE: u32 = 0o170000;

/// A mode as `stat -c %f` prints it (hex, at most 8 digits).
pub(super) fn hex_mode(hex: &[u8]) -> Option<u32> {
    std::str::from_utf8(hex)
        .ok()
        .filter(|h| !h.is_empty() && h.len() <= 8)
        .and_then(|h| u32::from_str_radix(h, 16).ok())
}

pub(in crate::script) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

pub(super) fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}
