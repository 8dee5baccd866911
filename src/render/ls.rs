//! `ls` for people: one row per session — harness, id (its shortest unique prefix bold when
//! colour is on), modified (relative: `3m ago`), size (human), project (the working directory)
//! and title — each row cut to the terminal's width. Everything from a host goes through the
//! one sanitiser.

use std::io::{self, Write};

use crate::driver::heads::SessionHead;
use clankie_engine::session::SessionFile;
use clankie_model::sanitize::sanitize;

/// How a listing is drawn.
#[derive(Debug, Clone, Copy)]
pub struct LsOptions {
    pub color: bool,
    /// Rows are cut to this many characters; `None` draws them whole (not a terminal, and
    /// `COLUMNS` unset).
    pub width: Option<usize>,
    /// The present time (Unix seconds), for the modified column.
    pub now: i64,
}

/// One session as `ls` shows it.
#[derive(Debug, Clone, Copy)]
pub struct LsRow<'a> {
    pub session: &'a SessionFile,
    pub head: &'a SessionHead,
    /// How many of the id's characters tell it from the host's other sessions.
    pub unique: usize,
}

/// The id column is at most this wide; a longer id is cut after its unique prefix with `…`.
const ID_CHARS: usize = 36;
/// The project column shows at most this many of the directory's last characters.
const PROJECT_CHARS: usize = 28;
/// Below this much room for the project and the title, ids are cut to their unique prefixes.
const MIN_PROJECT_CHARS: usize = 50;

/// Writes the rows, one line each, prefixed with `host` when given.
pub fn rows(
    out: &mut impl Write,
    host: Option<&str>,
    rows: &[LsRow<'_>],
    options: &LsOptions,
) -> io::Result<()> {
    let harness_width = rows
        .iter()
        .map(|r| r.session.harness().name().len())
        .max()
        .unwrap_or(0);
    let sizes: Vec<String> = rows
        .iter()
        .map(|r| human_size(r.session.entry.size))
        .collect();
    let size_width = sizes.iter().map(String::len).max().unwrap_or(0);
    // Whole ids while a project column still fits beside them; else ids cut after the
    // characters that tell them apart, which is what a user types.
    let full_width = rows.iter().map(|r| r.session.id.len()).max().unwrap_or(0);
    let fixed = host.map_or(0, |h| h.chars().count() + 2) + harness_width + 2 + 10 + size_width + 2;
    let id_chars = match options.width {
        Some(width) if fixed + full_width.min(ID_CHARS) + 2 + MIN_PROJECT_CHARS > width => {
            rows.iter().map(|r| r.unique + 1).max().unwrap_or(0)
        }
        _ => ID_CHARS,
    };
    let ids: Vec<String> = rows.iter().map(|r| shown_id(r, id_chars)).collect();
    let id_width = ids.iter().map(|id| id.chars().count()).max().unwrap_or(0);
    let projects: Vec<String> = rows
        .iter()
        .map(|r| project(r.head.cwd.as_deref()))
        .collect();
    let project_width = projects
        .iter()
        .map(|p| p.chars().count())
        .max()
        .unwrap_or(0);
    for (((row, id), project), size) in rows.iter().zip(&ids).zip(&projects).zip(&sizes) {
        let mut line = match host {
            Some(host) => format!("{}  ", sanitize(host)),
            None => String::new(),
        };
        line.push_str(&format!(
            "{:<harness_width$}  ",
            row.session.harness().name()
        ));
        let id_start = line.len();
        line.push_str(&format!("{id:<id_width$}  "));
        line.push_str(&format!(
            "{:>8}  {size:>size_width$}  {:<project_width$}  {}",
            ago(options.now, row.session.entry.mtime),
            project,
            sanitize(row.head.title.as_deref().unwrap_or("")),
        ));
        let line = line.trim_end();
        let line = match options.width {
            Some(width) => cut(line, width),
            None => line.to_string(),
        };
        // Ids are ASCII (`valid_id`): the unique prefix is that many bytes from `id_start`.
        let bold_end = id_start + row.unique.min(id.len());
        if options.color && line.len() >= bold_end {
            writeln!(
                out,
                "{}\x1b[1m{}\x1b[0m{}",
                &line[..id_start],
                &line[id_start..bold_end],
                &line[bold_end..]
            )?;
        } else {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// The id as shown: whole when it has at most `most` characters, else cut with `…`, never
/// inside its unique prefix.
fn shown_id(row: &LsRow<'_>, most: usize) -> String {
    let id = sanitize(&row.session.id);
    if id.chars().count() <= most {
        return id;
    }
    let keep = (most.saturating_sub(1)).max(row.unique);
    let mut cut: String = id.chars().take(keep).collect();
    cut.push('…');
    cut
}

/// The project column: the working directory's last [`PROJECT_CHARS`] characters (`…` before
/// what was left out), or `-` when unknown.
fn project(cwd: Option<&str>) -> String {
    let Some(cwd) = cwd else {
        return "-".into();
    };
    let cwd = sanitize(cwd);
    let chars = cwd.chars().count();
    if chars <= PROJECT_CHARS {
        return cwd;
    }
    let tail: String = cwd.chars().skip(chars - (PROJECT_CHARS - 1)).collect();
    format!("…{tail}")
}

/// `line` cut to `width` characters, its last one `…` when something was cut.
fn cut(line: &str, width: usize) -> String {
    if line.chars().count() <= width {
        return line.to_string();
    }
    let mut out: String = line.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// How long ago `then` was: `42s ago`, `3m ago`, `5h ago`, `12d ago`; a date after 60 days,
/// or for a time ahead of `now` (a host whose clock runs ahead).
pub fn ago(now: i64, then: i64) -> String {
    let secs = now - then;
    match secs {
        s if s < -60 => date(then),
        s if s < 60 => format!("{}s ago", s.max(0)),
        s if s < 3600 => format!("{}m ago", s / 60),
        s if s < 86_400 => format!("{}h ago", s / 3600),
        s if s < 60 * 86_400 => format!("{}d ago", s / 86_400),
        _ => date(then),
    }
}

fn date(unix: i64) -> String {
    super::rfc3339(unix)[..10].to_string()
}

/// A size for people: bytes below 1 KiB, else KiB, MiB or GiB with one decimal below 10.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    match unit {
        0 => format!("{bytes} B"),
        _ if value < 10.0 => format!("{value:.1} {}", UNITS[unit]),
        _ => format!("{value:.0} {}", UNITS[unit]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clankie_model::FileEntry;

    #[test]
    fn ages_and_sizes_read_as_people_say_them() {
        let now = 1_793_613_600;
        assert_eq!(ago(now, now), "0s ago");
        assert_eq!(ago(now, now + 30), "0s ago");
        assert_eq!(ago(now, now - 59), "59s ago");
        assert_eq!(ago(now, now - 180), "3m ago");
        assert_eq!(ago(now, now - 2 * 3600 - 5), "2h ago");
        assert_eq!(ago(now, now - 3 * 86_400), "3d ago");
        assert_eq!(ago(now, now - 90 * 86_400), "2026-08-04");
        assert_eq!(ago(now, now + 86_400), "2026-11-03");
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(125_342), "122 KiB");
        assert_eq!(human_size(64 << 20), "64 MiB");
        assert_eq!(human_size(5 << 30), "5.0 GiB");
    }

    fn session(id: &str, size: u64) -> SessionFile {
        SessionFile {
            id: id.into(),
            agent: None,
            entry: FileEntry {
                harness: clankie_engine::harness::by_name("claude").unwrap(),
                root: b"/h/.claude"[..].into(),
                rel: format!("projects/-w/{id}.jsonl").into_bytes(),
                size,
                mtime: 1_793_613_600 - 180,
            },
        }
    }

    #[test]
    fn rows_are_columns_cut_to_the_width_with_the_unique_prefix_bold() {
        let (a, b) = (session("3f1c2a00-aaaa", 2048), session("3f1c2a11-bbbb", 10));
        let head = SessionHead {
            title: Some("fix the parser\u{1b}[31m".into()),
            cwd: Some("/home/me/src/a-project-with-a-long-name".into()),
        };
        let empty = SessionHead::default();
        let rows_of = [
            LsRow {
                session: &a,
                head: &head,
                unique: 7,
            },
            LsRow {
                session: &b,
                head: &empty,
                unique: 7,
            },
        ];
        let draw = |options: LsOptions| {
            let mut out = Vec::new();
            rows(&mut out, None, &rows_of, &options).unwrap();
            String::from_utf8(out).unwrap()
        };
        let plain = LsOptions {
            color: false,
            width: None,
            now: 1_793_613_600,
        };
        assert_eq!(
            draw(plain),
            "claude  3f1c2a00-aaaa    3m ago  2.0 KiB  …/a-project-with-a-long-name  fix the parser\n\
             claude  3f1c2a11-bbbb    3m ago     10 B  -\n"
        );
        let narrow = draw(LsOptions {
            width: Some(40),
            ..plain
        });
        assert!(narrow.lines().all(|l| l.chars().count() <= 40), "{narrow}");
        // Too narrow for whole ids beside a project: ids are cut after their unique prefix.
        assert!(
            narrow.starts_with("claude  3f1c2a0…    3m ago  2.0 KiB  …/…\n"),
            "{narrow}"
        );
        let coloured = draw(LsOptions {
            color: true,
            ..plain
        });
        assert!(
            coloured.starts_with("claude  \x1b[1m3f1c2a0\x1b[0m0-aaaa  "),
            "{coloured:?}"
        );
    }
}
