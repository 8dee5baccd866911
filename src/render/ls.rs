//! `ls` for people: one table of sessions — host (when several), harness, id (its shortest
//! unique prefix bold when colour is on), modified (relative: `3m ago`), size (human), project
//! (the working directory) and title — aligned across every host listed. On a terminal it has a
//! header row and each row is cut to the terminal's width; piped, ids are whole, for scripts.
//! Everything from a host goes through the one sanitiser.

use std::io::{self, Write};

use crate::driver::heads::SessionHead;
use clankie_engine::resolve::MIN_PREFIX;
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
    /// stdout is a terminal: a header row names the columns, and ids are cut to fit (never
    /// inside their unique prefix). Otherwise ids are whole, for a script to take.
    pub terminal: bool,
    /// A host column first (several hosts are listed).
    pub show_host: bool,
}

/// One session as `ls` shows it.
#[derive(Debug, Clone, Copy)]
pub struct LsRow<'a> {
    pub host: &'a str,
    pub session: &'a SessionFile,
    pub head: &'a SessionHead,
    /// How many of the id's characters tell it from the host's other sessions
    /// ([`unique_prefixes`]).
    pub unique: usize,
}

/// The id column is at most this wide on a terminal; a longer id is cut after its unique
/// prefix with `…`.
const ID_CHARS: usize = 36;
/// The project column shows at most this many of the directory's last characters.
const PROJECT_CHARS: usize = 28;
/// Below this much room for the project and the title, ids are cut to their unique prefixes.
const MIN_PROJECT_CHARS: usize = 50;
/// The header row's names, in column order (the host's first, when shown).
const HEADER: [&str; 7] = [
    "HOST", "HARNESS", "ID", "MODIFIED", "SIZE", "PROJECT", "TITLE",
];

/// For each of `shown`, how many of its id's first characters `read HOST:PREFIX` resolves to
/// it among `all`, the host's every listed session (not only the rows shown). The rules are
/// [`clankie_engine::resolve::resolve`]'s: at least [`MIN_PREFIX`] characters (or the whole
/// id, which wins as an exact match); a prefix without `+` never matches a subagent, so a
/// parent is told apart from the other parents only, and a subagent's prefix runs past its
/// `+` and on until it is told apart from every session. Two sessions of one id are told
/// apart by nothing: the whole id is given.
pub fn unique_prefixes(all: &[SessionFile], shown: &[SessionFile]) -> Vec<usize> {
    let mut every: Vec<&str> = all.iter().map(|s| s.id.as_str()).collect();
    every.sort_unstable();
    // What a prefix without `+` can match.
    let mut parents: Vec<&str> = all
        .iter()
        .filter(|s| s.agent.is_none() || !s.id.contains('+'))
        .map(|s| s.id.as_str())
        .collect();
    parents.sort_unstable();
    let common = |a: &str, b: &str| a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    shown
        .iter()
        .map(|session| {
            let id = session.id.as_str();
            let chars = id.chars().count();
            let (others, floor) = match id.find('+') {
                Some(plus) => (&every, id[..plus].chars().count() + 1),
                None => (&parents, 0),
            };
            let first = others.partition_point(|other| *other < id);
            let past = others.partition_point(|other| *other <= id);
            // In sorted order the id sharing the longest prefix with this one is a neighbour.
            let longest_shared = if past - first > 1 {
                chars
            } else {
                let before = first.checked_sub(1).map_or(0, |j| common(id, others[j]));
                let after = others.get(past).map_or(0, |other| common(id, other));
                before.max(after)
            };
            (longest_shared + 1).max(MIN_PREFIX).max(floor).min(chars)
        })
        .collect()
}

/// Writes the header row (on a terminal) and the rows, one line each, in aligned columns.
pub fn rows(out: &mut impl Write, rows: &[LsRow<'_>], options: &LsOptions) -> io::Result<()> {
    let header = options.terminal;
    let named = |column: usize, width: usize| {
        if header {
            width.max(HEADER[column].len())
        } else {
            width
        }
    };
    let hosts: Vec<String> = rows.iter().map(|r| sanitize(r.host)).collect();
    let host_width = named(
        0,
        hosts.iter().map(|h| h.chars().count()).max().unwrap_or(0),
    );
    let harness_width = named(
        1,
        rows.iter()
            .map(|r| r.session.harness().name().len())
            .max()
            .unwrap_or(0),
    );
    let sizes: Vec<String> = rows
        .iter()
        .map(|r| human_size(r.session.entry.size))
        .collect();
    let size_width = named(4, sizes.iter().map(String::len).max().unwrap_or(0));
    // On a terminal: whole ids while a project column still fits beside them; else ids cut
    // after the characters that tell them apart, which is what a user types. Piped: whole.
    let full_width = rows.iter().map(|r| r.session.id.len()).max().unwrap_or(0);
    let host_column = if options.show_host { host_width + 2 } else { 0 };
    let fixed = host_column + harness_width + 2 + 10 + size_width + 2;
    let id_chars = match options.width {
        _ if !options.terminal => usize::MAX,
        Some(width) if fixed + full_width.min(ID_CHARS) + 2 + MIN_PROJECT_CHARS > width => {
            rows.iter().map(|r| r.unique + 1).max().unwrap_or(0)
        }
        _ => ID_CHARS,
    };
    let ids: Vec<String> = rows.iter().map(|r| shown_id(r, id_chars)).collect();
    let id_width = named(
        2,
        ids.iter().map(|id| id.chars().count()).max().unwrap_or(0),
    );
    let projects: Vec<String> = rows
        .iter()
        .map(|r| project(r.head.cwd.as_deref()))
        .collect();
    let project_width = named(
        5,
        projects
            .iter()
            .map(|p| p.chars().count())
            .max()
            .unwrap_or(0),
    );
    let line_of = |host: &str,
                   harness: &str,
                   id: &str,
                   modified: &str,
                   size: &str,
                   project: &str,
                   title: &str| {
        let mut line = String::new();
        if options.show_host {
            line.push_str(&format!("{host:<host_width$}  "));
        }
        line.push_str(&format!("{harness:<harness_width$}  "));
        let id_start = line.len();
        line.push_str(&format!(
            "{id:<id_width$}  {modified:>8}  {size:>size_width$}  {project:<project_width$}  {title}"
        ));
        let line = line.trim_end();
        // Cut on a terminal only: a script takes whole lines.
        let line = match options.width {
            Some(width) if options.terminal => cut(line, width),
            _ => line.to_string(),
        };
        (line, id_start)
    };
    if header && !rows.is_empty() {
        let [host, harness, id, modified, size, project, title] = HEADER;
        let (line, _) = line_of(host, harness, id, modified, size, project, title);
        writeln!(out, "{line}")?;
    }
    for ((((row, host), id), project), size) in
        rows.iter().zip(&hosts).zip(&ids).zip(&projects).zip(&sizes)
    {
        let (line, id_start) = line_of(
            host,
            row.session.harness().name(),
            id,
            &ago(options.now, row.session.entry.mtime),
            size,
            project,
            &sanitize(row.head.title.as_deref().unwrap_or("")),
        );
        // Ids are ASCII (`valid_id`): the unique prefix is that many bytes from `id_start`.
        let bold_end = id_start + row.unique.min(id.len());
        if options.color && line.is_char_boundary(id_start) && line.is_char_boundary(bold_end) {
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
                inode: None,
                ctime: None,
            },
        }
    }

    #[test]
    fn rows_are_columns_cut_to_the_width_with_the_unique_prefix_bold() {
        let (a, b) = (session("3f1c2a00-aaaa", 2048), session("3f1c2a11-bbbb", 10));
        let head = SessionHead {
            title: Some("fix the parser\u{1b}[31m".into()),
            cwd: Some("/home/me/src/a-project-with-a-long-name".into()),
            writer_version: None,
        };
        let empty = SessionHead::default();
        let rows_of = [
            LsRow {
                host: "local",
                session: &a,
                head: &head,
                unique: 7,
            },
            LsRow {
                host: "local",
                session: &b,
                head: &empty,
                unique: 7,
            },
        ];
        let draw = |options: LsOptions| {
            let mut out = Vec::new();
            rows(&mut out, &rows_of, &options).unwrap();
            String::from_utf8(out).unwrap()
        };
        let plain = LsOptions {
            color: false,
            width: None,
            now: 1_793_613_600,
            terminal: false,
            show_host: false,
        };
        assert_eq!(
            draw(plain),
            "claude  3f1c2a00-aaaa    3m ago  2.0 KiB  …/a-project-with-a-long-name  fix the parser\n\
             claude  3f1c2a11-bbbb    3m ago     10 B  -\n"
        );
        // Piped, a width (`COLUMNS`) cuts nothing: a script takes whole lines.
        assert_eq!(
            draw(LsOptions {
                width: Some(40),
                ..plain
            }),
            draw(plain)
        );
        let terminal = LsOptions {
            terminal: true,
            ..plain
        };
        // On a terminal a header row names the columns, which are as wide as their names.
        assert_eq!(
            draw(terminal),
            "HARNESS  ID             MODIFIED     SIZE  PROJECT                       TITLE\n\
             claude   3f1c2a00-aaaa    3m ago  2.0 KiB  …/a-project-with-a-long-name  fix the parser\n\
             claude   3f1c2a11-bbbb    3m ago     10 B  -\n"
        );
        let narrow = draw(LsOptions {
            width: Some(40),
            ..terminal
        });
        assert!(narrow.lines().all(|l| l.chars().count() <= 40), "{narrow}");
        // Too narrow for whole ids beside a project: ids are cut after their unique prefix.
        assert!(
            narrow.starts_with(
                "HARNESS  ID        MODIFIED     SIZE  P…\nclaude   3f1c2a0…    3m ago  2.0 KiB  ……\n"
            ),
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

    #[test]
    fn piped_ids_are_whole_and_a_terminal_keeps_what_tells_them_apart() {
        let parent = "3f1c2a00-0000-4000-8000-000000000000";
        let ids = [
            parent.to_string(),
            format!("{parent}+agent-a1b2c3"),
            format!("{parent}+agent-a1ffff"),
        ];
        let sessions: Vec<SessionFile> = ids.iter().map(|id| session(id, 10)).collect();
        let unique = unique_prefixes(&sessions, &sessions);
        let head = SessionHead::default();
        let rows_of: Vec<LsRow<'_>> = sessions
            .iter()
            .zip(&unique)
            .map(|(session, &unique)| LsRow {
                host: "local",
                session,
                head: &head,
                unique,
            })
            .collect();
        let draw = |options: LsOptions| {
            let mut out = Vec::new();
            rows(&mut out, &rows_of, &options).unwrap();
            String::from_utf8(out).unwrap()
        };
        let piped = draw(LsOptions {
            color: false,
            width: None,
            now: 1_793_613_600,
            terminal: false,
            show_host: false,
        });
        let shown: Vec<&str> = piped
            .lines()
            .map(|l| l.split_whitespace().nth(1).unwrap())
            .collect();
        assert_eq!(shown, ids.iter().map(String::as_str).collect::<Vec<_>>());
        // On a terminal an id over 36 characters is cut, after the part that tells it apart.
        let terminal = draw(LsOptions {
            color: false,
            width: Some(200),
            now: 1_793_613_600,
            terminal: true,
            show_host: false,
        });
        assert!(
            terminal.contains(&format!(" {parent}+agent-a1b… ")),
            "{terminal}"
        );
    }

    #[test]
    fn hosts_share_one_table() {
        let (a, b) = (session("3f1c2a00-aaaa", 2048), session("3f1c2a11-bbbb", 10));
        let head = SessionHead::default();
        let rows_of = [
            LsRow {
                host: "devbox",
                session: &a,
                head: &head,
                unique: 7,
            },
            LsRow {
                host: "b",
                session: &b,
                head: &head,
                unique: 7,
            },
        ];
        let mut out = Vec::new();
        let options = LsOptions {
            color: false,
            width: None,
            now: 1_793_613_600,
            terminal: false,
            show_host: true,
        };
        rows(&mut out, &rows_of, &options).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "devbox  claude  3f1c2a00-aaaa    3m ago  2.0 KiB  -\n\
             b       claude  3f1c2a11-bbbb    3m ago     10 B  -\n"
        );
    }

    #[test]
    fn every_unique_prefix_resolves_to_its_session_among_all_of_them() {
        let ids = [
            "3f1c2a00-aaaa",
            "3f1c2a00-aaab",
            "3f1c2b00-bbbb",
            "3f1c2a00-aaaa+agent-a1",
            "3f1c2a00-aaaa+agent-a2",
            "3f1c2a00-aaaa+agent-b1",
            "3f1c2a",
            "3f1c2a0",
            "9999aaaa",
        ];
        let all: Vec<SessionFile> = ids.iter().map(|id| session(id, 1)).collect();
        let all: Vec<SessionFile> = all
            .into_iter()
            .map(|mut s| {
                s.agent = s.id.split_once('+').map(|(_, agent)| agent.to_string());
                s
            })
            .collect();
        let unique = unique_prefixes(&all, &all);
        for (session, &len) in all.iter().zip(&unique) {
            let prefix: String = session.id.chars().take(len).collect();
            let query = clankie_engine::resolve::SessionQuery::parse(&prefix).unwrap();
            let found = clankie_engine::resolve::resolve(&all, &query)
                .unwrap_or_else(|e| panic!("{prefix}: {e}"));
            assert_eq!(found.id, session.id, "{prefix}");
            if len > MIN_PREFIX && len < session.id.len() {
                let shorter: String = session.id.chars().take(len - 1).collect();
                let query = clankie_engine::resolve::SessionQuery::parse(&shorter).unwrap();
                let shorter_found = clankie_engine::resolve::resolve(&all, &query);
                assert!(
                    shorter_found.map(|s| &s.id) != Ok(&session.id),
                    "{shorter} was enough for {}",
                    session.id
                );
            }
        }
        // The parent is told from the other parents only: its subagents need a `+`.
        assert_eq!(unique[0], 13);
        assert_eq!(unique[8], 6);
        // Among only the rows shown, `3f1c2b` would do; among every session it still does,
        // while `3f1c2a00-aaaa` needs all 13 because `3f1c2a00-aaab` exists, shown or not.
        let shown = unique_prefixes(&all, &all[..1]);
        assert_eq!(shown, [13]);
    }
}
