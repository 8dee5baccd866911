//! Record filters for reads: `--kind`, `--grep` and the time window `--after`/`--before`.
//! A filter is applied while a page is read, before paging counts its records: `-n 5` is the
//! five newest (or first) records the filter keeps, the read going further back (or on) within
//! the 64 MiB bound of one read ([`crate::plan`], [`crate::rows`]); the page's cursor continues
//! after the last record examined, and the page counts the records examined and left out
//! (`"filtered": N`). Also the time grammar
//! those options and `--since` share ([`parse_time`], [`parse_since`]). Pure: the present time
//! that an age (`2h`) counts back from, and the time zone whose days `today`, `yesterday` and a
//! date (`2026-12-01`) begin in, are given by the caller.

use clankie_model::{Record, RecordBody, RecordKind};
use jiff::civil::Date;
use jiff::{SignedDuration, Span, SpanRelativeTo, Timestamp, ZonedDateTime};
use regex::Regex;

use crate::cursor::Cursor;

/// The time forms, as error messages and help name them.
pub const TIME_FORMS: &str = "2h, 30m, today, yesterday, 2026-12-01, RFC 3339";

/// Why a filter option cannot be used: each message is the one line the user reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error(
        "--kind: unknown kind `{name}` (kinds: user, assistant, tool_call, tool_result, tools, notice, terminal)"
    )]
    UnknownKind { name: String },
    #[error("--grep: {reason}")]
    Regex { reason: String },
    #[error("{flag} wants a time ({TIME_FORMS}), got `{text}`")]
    Time { flag: &'static str, text: String },
    /// `--since` given neither a time nor a cursor; `reason` is why it is not a cursor.
    #[error("`--since {text}`: neither a time ({TIME_FORMS}) nor a cursor ({reason})")]
    Since { text: String, reason: String },
}

/// What `--since` was given: a time, or a page's cursor.
#[derive(Debug, Clone, PartialEq)]
pub enum Since {
    /// Records at or after this time.
    Time(Timestamp),
    /// The records after this cursor.
    Cursor(Cursor),
}

/// Which records a read keeps. The default keeps every record.
#[derive(Debug, Clone, Default)]
pub struct RecordFilter {
    /// `--kind`: only these kinds; `None` keeps every kind.
    kinds: Option<Vec<RecordKind>>,
    /// `--grep`: only records whose text matches.
    grep: Option<Regex>,
    /// `--after`: only records at or after this time.
    after: Option<Timestamp>,
    /// `--before`: only records before this time.
    before: Option<Timestamp>,
}

impl RecordFilter {
    /// A filter from the read options as the user typed them. `now` is the time ages
    /// (`--after 2h`) count back from, in the time zone whose days `today`, `yesterday` and a
    /// date begin in ([`parse_time`]).
    pub fn parse(
        kinds: &[String],
        grep: Option<&str>,
        after: Option<&str>,
        before: Option<&str>,
        now: &ZonedDateTime,
    ) -> Result<RecordFilter, FilterError> {
        let kinds = if kinds.is_empty() {
            None
        } else {
            Some(parse_kinds(kinds)?)
        };
        let grep = grep
            .map(|pattern| {
                Regex::new(pattern).map_err(|e| FilterError::Regex {
                    reason: one_line(&e.to_string()),
                })
            })
            .transpose()?;
        let after = after.map(|t| parse_time("--after", t, now)).transpose()?;
        let before = before.map(|t| parse_time("--before", t, now)).transpose()?;
        Ok(RecordFilter {
            kinds,
            grep,
            after,
            before,
        })
    }

    /// This filter, keeping only records at or after `time` as well (`--since TIME`): with an
    /// `--after` too, the later of the two holds.
    pub fn at_or_after(mut self, time: Timestamp) -> RecordFilter {
        self.after = Some(self.after.map_or(time, |after| after.max(time)));
        self
    }

    /// Whether the filter leaves anything out at all (else the page line says nothing of it).
    pub fn is_active(&self) -> bool {
        self.kinds.is_some() || self.grep.is_some() || self.after.is_some() || self.before.is_some()
    }

    /// Whether `record` is kept. A record without a timestamp (or with one that does not
    /// parse) is left out by a time window: it cannot be shown to lie inside it.
    pub fn keeps(&self, record: &Record) -> bool {
        if let Some(kinds) = &self.kinds
            && !kinds.contains(&record.kind())
        {
            return false;
        }
        if self.after.is_some() || self.before.is_some() {
            let Some(ts) = record
                .ts
                .as_deref()
                .and_then(|t| t.parse::<Timestamp>().ok())
            else {
                return false;
            };
            if self.after.is_some_and(|after| ts < after)
                || self.before.is_some_and(|before| ts >= before)
            {
                return false;
            }
        }
        if let Some(grep) = &self.grep {
            return record_texts(record).any(|text| grep.is_match(&text));
        }
        true
    }

    /// Whether `record` is kept as it is shown: `--grep` matches the text after redaction when
    /// `redact` (the record itself is left as it is; only a copy is redacted, and only for
    /// `--grep`).
    pub fn keeps_shown(&self, record: &Record, redact: bool) -> bool {
        if redact && self.grep.is_some() {
            let mut shown = record.clone();
            crate::redact::redact_record(&mut shown);
            return self.keeps(&shown);
        }
        self.keeps(record)
    }

    /// Removes the records the filter does not keep, in place, and returns how many it removed.
    pub fn apply(&self, records: &mut Vec<Record>) -> usize {
        if !self.is_active() {
            return 0;
        }
        let before = records.len();
        records.retain(|r| self.keeps(r));
        before - records.len()
    }
}

/// The texts `--grep` searches in a record: the text of a message or notice; a tool call's
/// name and its input as compact JSON; a tool result's output.
fn record_texts(record: &Record) -> impl Iterator<Item = std::borrow::Cow<'_, str>> {
    use std::borrow::Cow;
    let texts: [Option<Cow<'_, str>>; 2] = match &record.body {
        RecordBody::Text { text, .. } => [Some(Cow::Borrowed(text)), None],
        RecordBody::ToolCall { name, input, .. } => [
            Some(Cow::Borrowed(name)),
            Some(Cow::Owned(serde_json::to_string(input).unwrap_or_default())),
        ],
        RecordBody::ToolResult { output, .. } => [Some(Cow::Borrowed(output)), None],
    };
    texts.into_iter().flatten()
}

/// `--kind` values: comma-separated kind names, each option repeatable; `tools` is both tool
/// kinds.
fn parse_kinds(values: &[String]) -> Result<Vec<RecordKind>, FilterError> {
    let mut kinds = Vec::new();
    for name in values.iter().flat_map(|v| v.split(',')).map(str::trim) {
        let named: &[RecordKind] = match name {
            "user" => &[RecordKind::User],
            "assistant" => &[RecordKind::Assistant],
            "tool_call" => &[RecordKind::ToolCall],
            "tool_result" => &[RecordKind::ToolResult],
            "tools" => &[RecordKind::ToolCall, RecordKind::ToolResult],
            "notice" => &[RecordKind::Notice],
            // A terminal recording's lines: the kind's name, as the model spells it.
            other if other == RecordKind::Terminal.name() => &[RecordKind::Terminal],
            _ => {
                return Err(FilterError::UnknownKind {
                    name: name.to_string(),
                });
            }
        };
        for kind in named {
            if !kinds.contains(kind) {
                kinds.push(*kind);
            }
        }
    }
    Ok(kinds)
}

/// A time as `--after`, `--before` and `--since` take it:
/// - an age counted back from `now`: `90s`, `30m`, `2h`, `3d`, `1w`, `1h30m` (a day is 24 hours);
/// - `today` or `yesterday`: the start of that day in `now`'s time zone;
/// - a date, `YYYY-MM-DD`: the start of that day in `now`'s time zone;
/// - RFC 3339 with an offset: `2026-11-02T10:00:00Z`.
///
/// A day starts at its first instant, which a daylight-saving change can move off midnight.
pub fn parse_time(
    flag: &'static str,
    text: &str,
    now: &ZonedDateTime,
) -> Result<Timestamp, FilterError> {
    let bad = || FilterError::Time {
        flag,
        text: text.to_string(),
    };
    let trimmed = text.trim();
    if let Ok(t) = trimmed.parse::<Timestamp>() {
        return Ok(t);
    }
    let day = if trimmed.eq_ignore_ascii_case("today") {
        Some(now.date())
    } else if trimmed.eq_ignore_ascii_case("yesterday") {
        Some(now.date().yesterday().map_err(|_| bad())?)
    } else if is_date(trimmed) {
        Some(trimmed.parse::<Date>().map_err(|_| bad())?)
    } else {
        None
    };
    if let Some(day) = day {
        // A civil midnight a daylight-saving gap skips is taken as the instant after the gap.
        let start = day
            .to_zoned_datetime(now.time_zone().clone())
            .map_err(|_| bad())?;
        return Ok(start.timestamp());
    }
    // An age: jiff's friendly span format (`2h`, `3d 4h`, `1w`), never negative. A bare
    // number is refused: seconds, minutes or hours would each be a guess.
    if !trimmed.starts_with(|c: char| c.is_ascii_digit())
        || trimmed.chars().all(|c| c.is_ascii_digit())
    {
        return Err(bad());
    }
    let span: Span = trimmed.parse().map_err(|_| bad())?;
    if span.is_negative() {
        return Err(bad());
    }
    let age: SignedDuration = span
        .to_duration(SpanRelativeTo::days_are_24_hours())
        .map_err(|_| bad())?;
    now.timestamp().checked_sub(age).map_err(|_| bad())
}

/// Whether `text` has the shape of a date, `YYYY-MM-DD` (whether it is one is the parser's to
/// say): other forms jiff reads as dates (`20261201`, a date with a time and no offset) are no
/// time here.
fn is_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 10
        && bytes.iter().enumerate().all(|(i, b)| match i {
            4 | 7 => *b == b'-',
            _ => b.is_ascii_digit(),
        })
}

/// What `--since` was given: a value in the time grammar ([`parse_time`]) is a time; anything
/// else must decode as a cursor.
pub fn parse_since(text: &str, now: &ZonedDateTime) -> Result<Since, FilterError> {
    if let Ok(time) = parse_time("--since", text, now) {
        return Ok(Since::Time(time));
    }
    Cursor::decode(text)
        .map(Since::Cursor)
        .map_err(|e| FilterError::Since {
            text: text.to_string(),
            reason: match e {
                crate::cursor::CursorError::Invalid(reason) => reason.to_string(),
                other => other.to_string(),
            },
        })
}

/// A regex error on one line: the regex crate draws the pattern with a caret under the
/// fault over several lines, ending with `error: <what>`; that last line is what is kept.
fn one_line(message: &str) -> String {
    let last = message.lines().map(str::trim).rfind(|l| !l.is_empty());
    let last = last.unwrap_or(message);
    last.strip_prefix("error: ").unwrap_or(last).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clankie_model::TextKind;

    /// 12:00Z on 2026-11-02, in UTC.
    fn now() -> ZonedDateTime {
        at("2026-11-02T12:00:00Z", jiff::tz::TimeZone::UTC)
    }

    fn at(instant: &str, tz: jiff::tz::TimeZone) -> ZonedDateTime {
        instant.parse::<Timestamp>().unwrap().to_zoned_datetime(tz)
    }

    fn record(id: &str, ts: Option<&str>, body: RecordBody) -> Record {
        Record {
            id: id.into(),
            harness: crate::test_support::harness("claude"),
            session: "s".into(),
            ts: ts.map(str::to_string),
            agent: None,
            sidechain: false,
            body,
            model: None,
            usage: None,
        }
    }

    fn text(kind: TextKind, text: &str) -> RecordBody {
        RecordBody::Text {
            kind,
            text: text.into(),
        }
    }

    /// One record of each kind, an hour apart from 09:00, and a notice without a time.
    fn records() -> Vec<Record> {
        vec![
            record(
                "u",
                Some("2026-11-02T09:00:00.000Z"),
                text(TextKind::User, "fix the parser"),
            ),
            record(
                "t",
                Some("2026-11-02T10:00:00Z"),
                text(TextKind::Thinking, "the lexer is wrong"),
            ),
            record(
                "c",
                Some("2026-11-02T11:00:00+01:00"),
                RecordBody::ToolCall {
                    call_id: "1".into(),
                    name: "Bash".into(),
                    input: serde_json::json!({"command": "cargo test parser"}),
                    by_user: false,
                },
            ),
            record(
                "r",
                Some("2026-11-02T11:30:00Z"),
                RecordBody::ToolResult {
                    call_id: "1".into(),
                    output: "test result: FAILED".into(),
                    is_error: true,
                },
            ),
            record("n", None, text(TextKind::Notice, "interrupted")),
        ]
    }

    fn kept(filter: &RecordFilter) -> Vec<String> {
        let mut all = records();
        let left_out = filter.apply(&mut all);
        assert_eq!(left_out + all.len(), records().len());
        all.into_iter().map(|r| r.id).collect()
    }

    fn filter(
        kinds: &[&str],
        grep: Option<&str>,
        after: Option<&str>,
        before: Option<&str>,
    ) -> RecordFilter {
        let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
        RecordFilter::parse(&kinds, grep, after, before, &now()).unwrap()
    }

    #[test]
    fn no_option_keeps_everything() {
        let none = filter(&[], None, None, None);
        assert!(!none.is_active());
        assert_eq!(kept(&none), ["u", "t", "c", "r", "n"]);
    }

    #[test]
    fn kinds_select_and_tools_is_both_tool_kinds() {
        assert_eq!(kept(&filter(&["user"], None, None, None)), ["u"]);
        assert_eq!(kept(&filter(&["tools"], None, None, None)), ["c", "r"]);
        assert_eq!(
            kept(&filter(&["user,notice"], None, None, None)),
            ["u", "n"]
        );
        // Thinking is assistant text; options repeat; names may carry spaces.
        assert_eq!(
            kept(&filter(&["assistant", " tool_result"], None, None, None)),
            ["t", "r"]
        );
        let err = RecordFilter::parse(&["users".into()], None, None, None, &now()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--kind: unknown kind `users` (kinds: user, assistant, tool_call, tool_result, tools, notice, terminal)"
        );
    }

    #[test]
    fn grep_searches_text_tool_names_inputs_and_outputs() {
        assert_eq!(kept(&filter(&[], Some("parser"), None, None)), ["u", "c"]);
        assert_eq!(kept(&filter(&[], Some("^Bash$"), None, None)), ["c"]);
        assert_eq!(
            kept(&filter(&[], Some("FAILED|lexer"), None, None)),
            ["t", "r"]
        );
        assert_eq!(
            kept(&filter(&[], Some("(?i)INTERRUPTED"), None, None)),
            ["n"]
        );
        // Every filter must hold.
        assert_eq!(
            kept(&filter(&["user"], Some("cargo"), None, None)),
            Vec::<String>::new()
        );
        let err = RecordFilter::parse(&[], Some("(unclosed"), None, None, &now()).unwrap_err();
        assert_eq!(err.to_string(), "--grep: unclosed group");
    }

    #[test]
    fn a_time_window_is_half_open_and_leaves_out_records_without_a_time() {
        // `c` at 11:00+01:00 is 10:00Z, the same instant as `t`: the window is `after <= ts <
        // before`, compared as instants.
        assert_eq!(
            kept(&filter(&[], None, Some("2026-11-02T10:00:00Z"), None)),
            ["t", "c", "r"]
        );
        assert_eq!(
            kept(&filter(&[], None, None, Some("2026-11-02T10:00:00Z"))),
            ["u"]
        );
        assert_eq!(
            kept(&filter(
                &[],
                None,
                Some("2026-11-02T09:30:00Z"),
                Some("2026-11-02T11:30:00Z")
            )),
            ["t", "c"]
        );
        // Ages count back from now (12:00Z): 2h is 10:00Z.
        assert_eq!(kept(&filter(&[], None, Some("2h"), None)), ["t", "c", "r"]);
        assert_eq!(
            kept(&filter(&[], None, Some("150m"), Some("1h"))),
            ["t", "c"]
        );
    }

    #[test]
    fn times_are_ages_days_dates_or_rfc3339() {
        let t = |s: &str| parse_time("--after", s, &now()).map(|t| t.to_string());
        assert_eq!(
            t("2026-11-01T08:00:00+02:00").unwrap(),
            "2026-11-01T06:00:00Z"
        );
        assert_eq!(t("30s").unwrap(), "2026-11-02T11:59:30Z");
        assert_eq!(t("2h").unwrap(), "2026-11-02T10:00:00Z");
        assert_eq!(t("3d").unwrap(), "2026-10-30T12:00:00Z");
        assert_eq!(t("1w").unwrap(), "2026-10-26T12:00:00Z");
        assert_eq!(t("1h30m").unwrap(), "2026-11-02T10:30:00Z");
        assert_eq!(t("today").unwrap(), "2026-11-02T00:00:00Z");
        assert_eq!(t(" Yesterday ").unwrap(), "2026-11-01T00:00:00Z");
        assert_eq!(t("2026-12-01").unwrap(), "2026-12-01T00:00:00Z");
        for bad in [
            "",
            "2",
            "-2h",
            "yester",
            "2026-13-01",
            "2026-11-02T10:00:00",
            "20261102",
            "h2",
            "2x",
        ] {
            let err = t(bad).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "--after wants a time (2h, 30m, today, yesterday, 2026-12-01, RFC 3339), got `{bad}`"
                )
            );
        }
    }

    /// `today`, `yesterday` and a date start at the first instant of that day where the
    /// caller is, not in UTC; ages and RFC 3339 are instants wherever it is.
    #[test]
    fn days_begin_in_the_callers_time_zone() {
        let t = |s: &str, now: &ZonedDateTime| parse_time("--after", s, now).unwrap().to_string();
        // 02:00Z on 2 November is still 1 November, 21:00, in New York (EST, -05:00).
        let new_york = jiff::tz::TimeZone::posix("EST5EDT,M3.2.0,M11.1.0").unwrap();
        let evening = at("2026-11-02T02:00:00Z", new_york.clone());
        assert_eq!(t("today", &evening), "2026-11-01T04:00:00Z");
        assert_eq!(t("yesterday", &evening), "2026-10-31T04:00:00Z");
        assert_eq!(t("2026-12-01", &evening), "2026-12-01T05:00:00Z");
        assert_eq!(t("2h", &evening), "2026-11-02T00:00:00Z");
        assert_eq!(
            t("2026-11-02T10:00:00+01:00", &evening),
            "2026-11-02T09:00:00Z"
        );
        // A day that DST made 23 hours long starts at its midnight, in the offset of then.
        let spring = at("2026-03-08T18:00:00Z", new_york);
        assert_eq!(t("today", &spring), "2026-03-08T05:00:00Z");
        // Where a DST change skips midnight (Santiago, in September), the day starts at 01:00.
        let santiago = jiff::tz::TimeZone::posix("<-04>4<-03>,M9.1.6/24,M4.1.6/24").unwrap();
        let skipped = at("2026-09-06T15:00:00Z", santiago);
        assert_eq!(t("today", &skipped), "2026-09-06T04:00:00Z");
    }

    #[test]
    fn since_is_a_time_else_a_cursor() {
        let since = |s: &str| parse_since(s, &now());
        assert_eq!(
            since("2h").unwrap(),
            Since::Time("2026-11-02T10:00:00Z".parse().unwrap())
        );
        assert_eq!(
            since("yesterday").unwrap(),
            Since::Time("2026-11-01T00:00:00Z".parse().unwrap())
        );
        let cursor = crate::cursor::Cursor::Lines(crate::cursor::LineCursor::new(
            [7; 16], 10, 0, 10, b"{}\n", b"{}\n", false,
        ));
        assert_eq!(since(&cursor.encode()).unwrap(), Since::Cursor(cursor));
        for (bad, reason) in [
            ("a", "not base64"),
            ("last week", "characters outside [A-Za-z0-9_-]"),
        ] {
            assert_eq!(
                since(bad).unwrap_err().to_string(),
                format!(
                    "`--since {bad}`: neither a time (2h, 30m, today, yesterday, 2026-12-01, RFC 3339) nor a cursor ({reason})"
                )
            );
        }
    }

    #[test]
    fn since_a_time_narrows_after_to_the_later_of_the_two() {
        let late: Timestamp = "2026-11-02T11:00:00Z".parse().unwrap();
        let early: Timestamp = "2026-11-02T09:30:00Z".parse().unwrap();
        assert_eq!(
            kept(&filter(&[], None, None, None).at_or_after(early)),
            ["t", "c", "r"]
        );
        assert_eq!(
            kept(&filter(&[], None, Some("2026-11-02T10:30:00Z"), None).at_or_after(early)),
            ["r"]
        );
        assert_eq!(
            kept(&filter(&[], None, Some("2026-11-02T09:30:00Z"), None).at_or_after(late)),
            ["r"]
        );
    }
}
