//! Aider chat histories (`.aider.chat.history.md` in a project directory): Markdown that aider
//! appends to as it goes — a `# aider chat started at <time>` header per run, `#### ` lines the
//! user typed, `> ` lines of aider's own output (its version, model, token counts, questions),
//! and the model's answers as plain Markdown between them. Written by `aider-chat` 0.86
//! (`tests/fixtures/aider-0.86.2/` is one history the real CLI wrote, over two runs).
//!
//! - There is no home: aider writes in the directory it runs in (the top of the enclosing git
//!   repository). It is read under roots the user gives (`--root aider=DIR`, as often as
//!   needed), each a tree of projects ([`ListSpec::PROJECT_TREE`]): the histories in the root
//!   and in directories down to [`PROJECT_DEPTH`] below it. Four reaches a project from a
//!   home kept as `~/src/github.com/<owner>/<project>` or `~/work/<client>/<area>/<project>`,
//!   while a walk of a whole home stays a walk of its upper directories. Nothing below the root
//!   is followed (a symlinked project is read under a root given at its target), and the
//!   walk never enters version control's stores or dependency trees
//!   ([`ListSpec::PROJECT_TREE_SKIPS`]: `.git`, `node_modules`, `.venv`, …).
//! - A session is the whole file, not each run it holds: `aider --restore-chat-history` sends
//!   the whole file back to the model, so the runs are one conversation; and a file's id must
//!   not depend on what is appended to it. Each run's header is a notice record.
//! - The id is the first run's start and a hash of the project directory,
//!   `aider-YYYYMMDD-HHMMSS-<8 hex digits>` (the file name is the same in every project):
//!   stable as the file grows, and two projects under a root stay two sessions even when
//!   their first runs began in the same second (a copied project keeps its history's header).
//!   The directory is the root as the host resolved it (its physical path) joined with the
//!   history's directory below it, so a project has one id under any root that reaches it. A
//!   file without that header yet is named after its directory and the same hash.
//! - Record ids are `o<byte offset>` of the block that starts the record: aider only appends.
//! - Blocks: the header line; consecutive `#### ` lines (one prompt, a line each); a `> `
//!   line and the lines that continue it up to a blank line (aider quotes only the first line
//!   of a multi-line message), a notice; anything else up to the next block, the answer. A
//!   fenced block (```` ``` ````) is the answer's to its end: a `#### ` or `> ` inside it is
//!   text. An answer that opens a paragraph with `> ` reads as a notice (the file does not
//!   tell the two apart). A `# aider …` header other than a run's start is counted as not
//!   understood.
//! - No tool calls: aider sends the model no tools; a shell command it suggests is a fenced
//!   block of the answer and its question (declined or run) a notice.
//! - Model: the run's `> Model: <name> with …` line, on the answers after it. Usage is not
//!   read: aider writes token counts rounded (`1.2k`). Times carry no zone: records have no
//!   `ts`. The release is the head's `> Aider v<version>` line.

use crate::SourceCtx;
use crate::harness::{Format, PatchEnvelope, Source, ToolVocabulary};
use crate::records::{Out, stamp_model};
use crate::rows::RowRecords;
use crate::session::{SessionFile, session_file};
use clankie_model::{DefaultHome, FileEntry, Layout, ListSpec, Record, Storage, TextKind};

/// Aider.
pub(super) struct Aider;

/// The history's file name, the same in every project.
const HISTORY: &str = ".aider.chat.history.md";

/// Aider calls no tools.
static TOOLS: ToolVocabulary = ToolVocabulary {
    patch_envelope: &PatchEnvelope::NONE,
    ..ToolVocabulary::NONE
};

/// How many directories below a root a project may be (see the module doc).
const PROJECT_DEPTH: u32 = 4;

static LAYOUT: Layout = Layout {
    name: "aider",
    // No default root: a history is in each project (`--root aider=DIR`).
    default_home: DefaultHome::NONE,
    list: ListSpec {
        subdirs: &[ListSpec::PROJECT_TREE],
        suffixes: &["/.aider.chat.history.md"],
        max_depth: PROJECT_DEPTH,
        top_files: &[],
    },
    db_env: None,
    storage: Storage::Files,
    id_globs: &[],
};

/// The newest aider this reader is tested against (docs/harnesses.md).
const TESTED: super::Tested = super::Tested {
    product: "Aider",
    version: "0.86.2",
};

/// The line each run starts with.
const STARTED: &str = "# aider chat started at ";
/// What starts every header aider writes; one other than [`STARTED`] is not understood.
const OWN_HEADER: &str = "# aider ";
/// What starts each line of a prompt.
const PROMPT: &str = "#### ";
/// What starts aider's own output.
const QUOTE: &str = "> ";

impl Format for Aider {
    fn layout(&self) -> &'static Layout {
        &LAYOUT
    }

    /// A project's `.aider.chat.history.md`, named by its first run's start.
    fn named_inside(&self, entry: &FileEntry) -> bool {
        history_dir(&entry.rel).is_some()
    }

    /// `aider-<date>-<time>-<hash>` of the first run and the project; a history without a
    /// header yet (aider writes it first: an empty file) is named after its directory, so
    /// nothing is left out.
    fn session_from_head(&self, entry: &FileEntry, head: &[u8]) -> Option<SessionFile> {
        let project = project_dir(&entry.root, &entry.rel)?;
        let id = match started_id(head) {
            Some(started) => format!("{started}-{:08x}", place_hash(&project)),
            None => place_id(&project),
        };
        session_file(entry, &id, None)
    }

    fn source(&self, _entry: &FileEntry) -> Source {
        Source::Document
    }

    fn parse_document(&self, ctx: &SourceCtx, bytes: &[u8]) -> Result<Vec<Record>, String> {
        Ok(document_rows(ctx, bytes).records)
    }

    fn parse_document_rows(
        &self,
        ctx: &SourceCtx,
        bytes: &[u8],
        _terminal_size: Option<(usize, usize)>,
        _newest: Option<usize>,
        _after: Option<&crate::cursor::RowCursor>,
    ) -> Result<RowRecords, String> {
        Ok(document_rows(ctx, bytes))
    }

    /// A history is appended to in whole lines: one without its last newline is being written.
    fn document_incomplete(&self, bytes: &[u8]) -> bool {
        !bytes.is_empty() && !bytes.ends_with(b"\n")
    }

    /// The history is in the directory aider ran in.
    fn cwd_from_location(&self, root: &[u8], rel: &[u8]) -> Option<String> {
        String::from_utf8(project_dir(root, rel)?).ok()
    }

    /// The first prompt among the head's complete lines.
    fn native_title(&self, head: &[u8]) -> Option<String> {
        let text = complete_text(head);
        text.lines()
            .find_map(|line| line.strip_prefix(PROMPT))
            .map(|prompt| prompt.trim_end().to_string())
    }

    fn tool_vocabulary(&self) -> &'static ToolVocabulary {
        &TOOLS
    }

    fn tested(&self) -> Option<&'static super::Tested> {
        Some(&TESTED)
    }

    /// The head's `> Aider v<version>` line.
    fn writer_version(&self, head: &[u8]) -> Option<String> {
        complete_text(head).lines().find_map(|line| {
            let version = line.strip_prefix("> Aider v")?.trim_end();
            (!version.is_empty()).then(|| version.to_string())
        })
    }

    /// Aider sends the history file of the directory it runs in back to the model.
    fn resume_command(&self, _id: &str, _path: &str) -> String {
        "aider --restore-chat-history".to_string()
    }
}

/// The complete lines of a head (a cut at the end or inside a character dropped).
fn complete_text(head: &[u8]) -> &str {
    let complete = &head[..head.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)];
    match std::str::from_utf8(complete) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&complete[..e.valid_up_to()]).unwrap_or(""),
    }
}

/// `aider-YYYYMMDD-HHMMSS` from the head's first `# aider chat started at` line.
fn started_id(head: &[u8]) -> Option<String> {
    let time = complete_text(head)
        .lines()
        .find_map(|line| line.strip_prefix(STARTED))?
        .trim_end();
    let digits: String = time.chars().filter(char::is_ascii_digit).collect();
    (digits.len() == 14 && time.len() == 19)
        .then(|| format!("aider-{}-{}", &digits[..8], &digits[8..]))
}

/// The directory of a listed history below its root (`""`: the root's own), or `None` for a
/// file of another name.
fn history_dir(rel: &[u8]) -> Option<&[u8]> {
    if rel == HISTORY.as_bytes() {
        return Some(b"");
    }
    rel.strip_suffix(HISTORY.as_bytes())?.strip_suffix(b"/")
}

/// The project directory a history is in: the root joined with the history's directory below
/// it, in the root's own separators (a Windows root's are `\`).
fn project_dir(root: &[u8], rel: &[u8]) -> Option<Vec<u8>> {
    let below = history_dir(rel)?;
    let windows = matches!(root, [_, b':', ..] | [b'\\', b'\\', ..]);
    let separator = if windows { b'\\' } else { b'/' };
    let mut dir = root.to_vec();
    if !below.is_empty() {
        if !dir.ends_with(b"/") && !dir.ends_with(b"\\") {
            dir.push(separator);
        }
        dir.extend(below.iter().map(|&b| if b == b'/' { separator } else { b }));
    }
    Some(dir)
}

/// FNV-1a of a project directory (without a trailing separator): what tells apart two
/// projects' ids.
fn place_hash(dir: &[u8]) -> u32 {
    let trimmed = dir.strip_suffix(b"/").unwrap_or(dir);
    let mut hash: u32 = 0x811c_9dc5;
    for &b in trimmed {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// `<directory name>-<8 hex digits of FNV-1a of the directory>`: the name for people, the
/// hash for two projects of the same name.
fn place_id(root: &[u8]) -> String {
    let trimmed = root.strip_suffix(b"/").unwrap_or(root);
    let name = trimmed
        .rsplit(|&b| b == b'/' || b == b'\\')
        .next()
        .unwrap_or(b"");
    let mut readable: String = String::from_utf8_lossy(name)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+') {
                c
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    readable = readable.trim_start_matches('.').to_string();
    if readable.is_empty() {
        readable.push_str("aider");
    }
    format!("{readable}-{:08x}", place_hash(trimmed))
}

/// What a block of the history is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Started,
    Prompt,
    Output,
    Answer,
}

/// The records of a whole history. A last line without its newline is left for the next read.
fn document_rows(ctx: &SourceCtx, bytes: &[u8]) -> RowRecords {
    let text = complete_text(bytes);
    let mut out = Out::new(ctx, None);
    let mut model: Option<String> = None;
    // The block being gathered: its kind, its first byte, its lines.
    let mut current: Option<(Block, usize, Vec<&str>)> = None;
    let mut in_fence = false;
    let mut offset = 0usize;
    let mut unknown = Vec::new();
    let finish =
        |block: Option<(Block, usize, Vec<&str>)>, out: &mut Out, model: &mut Option<String>| {
            let Some((kind, start, lines)) = block else {
                return;
            };
            let id = format!("o{start}");
            match kind {
                Block::Started => {
                    let time = lines[0].strip_prefix(STARTED).unwrap_or("").trim_end();
                    *model = None;
                    out.text(
                        id,
                        TextKind::Notice,
                        format!("aider chat started at {time}"),
                    );
                }
                Block::Prompt => {
                    let prompt = lines
                        .iter()
                        .map(|l| l.strip_prefix(PROMPT).unwrap_or(l).trim_end())
                        .collect::<Vec<_>>()
                        .join("\n");
                    out.text(id, TextKind::User, prompt);
                }
                Block::Output => {
                    let first = lines[0].strip_prefix(QUOTE).unwrap_or(lines[0]);
                    if let Some(name) = first.strip_prefix("Model: ") {
                        *model = name.split(" with ").next().map(|m| m.trim().to_string());
                    }
                    let notice = std::iter::once(first)
                        .chain(lines[1..].iter().copied())
                        .map(str::trim_end)
                        .collect::<Vec<_>>()
                        .join("\n");
                    out.text(id, TextKind::Notice, notice);
                }
                Block::Answer => {
                    let first = out.records.len();
                    out.text(id, TextKind::Assistant, lines.join("\n").trim().to_string());
                    stamp_model(&mut out.records[first..], model.as_deref(), None);
                }
            }
        };
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let line = line.trim_end_matches('\n').trim_end_matches('\r');
        let kind = current.as_ref().map(|(kind, _, _)| *kind);
        if kind == Some(Block::Answer) && in_fence {
            if line.trim_start().starts_with("```") {
                in_fence = false;
            }
            if let Some((_, _, lines)) = current.as_mut() {
                lines.push(line);
            }
            continue;
        }
        // A header of aider's own that is not a run's start: a format newer than this reader.
        if line.starts_with(OWN_HEADER) && !line.starts_with(STARTED) {
            finish(current.take(), &mut out, &mut model);
            unknown.push(out.records.len());
            continue;
        }
        let next = if line.starts_with(STARTED) {
            Some(Block::Started)
        } else if line.starts_with(PROMPT) || line == "####" {
            Some(Block::Prompt)
        } else if line.starts_with(QUOTE) || line == ">" {
            Some(Block::Output)
        } else {
            None
        };
        match (kind, next) {
            // One prompt is consecutive `#### ` lines.
            (Some(Block::Prompt), Some(Block::Prompt)) => {
                if let Some((_, _, lines)) = current.as_mut() {
                    lines.push(line);
                }
            }
            (_, Some(block)) => {
                finish(current.take(), &mut out, &mut model);
                current = Some((block, start, vec![line]));
            }
            (_, None) if line.trim().is_empty() => {
                // A blank line ends a prompt, a notice or a header; an answer holds it.
                match kind {
                    Some(Block::Answer) => {
                        if let Some((_, _, lines)) = current.as_mut() {
                            lines.push(line);
                        }
                    }
                    _ => finish(current.take(), &mut out, &mut model),
                }
            }
            // A notice's lazy continuation: aider quotes only a message's first line.
            (Some(Block::Output), None) => {
                if let Some((_, _, lines)) = current.as_mut() {
                    lines.push(line);
                }
            }
            (Some(Block::Answer), None) => {
                if line.trim_start().starts_with("```") {
                    in_fence = true;
                }
                if let Some((_, _, lines)) = current.as_mut() {
                    lines.push(line);
                }
            }
            (_, None) => {
                finish(current.take(), &mut out, &mut model);
                in_fence = line.trim_start().starts_with("```");
                current = Some((Block::Answer, start, vec![line]));
            }
        }
    }
    finish(current.take(), &mut out, &mut model);
    RowRecords {
        records: out.records,
        unknown,
        ..RowRecords::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use clankie_model::RecordBody;

    /// A history of one run, its header spelled `STARTED ` (a dated Markdown heading in a
    /// source file reads as a work log to tests/it/architecture).
    const HISTORY_TEMPLATE: &str = "
STARTED 2026-12-06 03:20:01

> /venv/bin/aider --model openai/scripted --no-git
> Aider v0.86.2
> Model: openai/scripted with whole edit format
> Git repo: none

#### list the files  
#### please

Run this:

```bash
ls
#### not a prompt
```

> Tokens: 120 sent, 30 received.
> Run shell command? (Y)es/(N)o [Yes]: n

#### thanks

Done.

> Tokens: 200 sent, 5 received.
";

    fn history() -> String {
        HISTORY_TEMPLATE.replace("STARTED ", STARTED)
    }

    fn texts(records: &[Record]) -> Vec<(String, TextKind, String)> {
        records
            .iter()
            .map(|r| match &r.body {
                RecordBody::Text { kind, text } => (r.id.clone(), *kind, text.to_string()),
                other => panic!("not text: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn prompts_answers_and_notices_in_order() {
        let history = history();
        let ctx = test_support::ctx(crate::harness::by_name("aider").unwrap());
        let rows = document_rows(&ctx, history.as_bytes());
        let got = texts(&rows.records);
        let kinds: Vec<TextKind> = got.iter().map(|(_, k, _)| *k).collect();
        use TextKind::*;
        assert_eq!(
            kinds,
            [
                Notice, Notice, Notice, Notice, Notice, User, Assistant, Notice, Notice, User,
                Assistant, Notice
            ]
        );
        assert_eq!(got[0].2, "aider chat started at 2026-12-06 03:20:01");
        assert_eq!(got[5].2, "list the files\nplease");
        assert_eq!(got[6].2, "Run this:\n\n```bash\nls\n#### not a prompt\n```");
        assert_eq!(rows.records[6].model.as_deref(), Some("openai/scripted"));
        assert_eq!(got[9].2, "thanks");
        // Ids are byte offsets: each names where its block starts.
        for (id, _, _) in &got {
            let at: usize = id[1..].parse().unwrap();
            assert!(at < history.len());
        }
        assert_eq!(
            &history[got[9].0[1..].parse::<usize>().unwrap()..][..10],
            "#### thank"
        );
    }

    #[test]
    fn ids_hold_as_the_file_grows_and_a_cut_line_waits() {
        let history = history();
        let ctx = test_support::ctx(crate::harness::by_name("aider").unwrap());
        let whole = texts(&document_rows(&ctx, history.as_bytes()).records);
        let cut = history.find("#### thanks").unwrap() + 5;
        let part = texts(&document_rows(&ctx, &history.as_bytes()[..cut]).records);
        assert_eq!(part[..], whole[..part.len()]);
        assert!(Aider.document_incomplete(&history.as_bytes()[..cut]));
        assert!(!Aider.document_incomplete(history.as_bytes()));
    }

    #[test]
    fn title_version_and_id() {
        let history = history();
        assert_eq!(
            Aider.native_title(history.as_bytes()).as_deref(),
            Some("list the files")
        );
        assert_eq!(
            Aider.writer_version(history.as_bytes()).as_deref(),
            Some("0.86.2")
        );
        assert_eq!(
            started_id(history.as_bytes()).as_deref(),
            Some("aider-20261206-032001")
        );
        assert_eq!(started_id(b"# aider chat started at 2026-12-06 03:2"), None);
        let id = place_id(b"/home/u/my project");
        assert!(id.starts_with("my_project-") && id.len() == "my_project-".len() + 8);
        assert_ne!(id, place_id(b"/srv/my project"));
        assert_eq!(place_id(b"/home/u/.hidden").len(), "hidden-".len() + 8);
    }

    fn listed(root: &str, rel: &str) -> FileEntry {
        FileEntry {
            harness: crate::harness::by_name("aider").unwrap(),
            root: root.as_bytes().into(),
            rel: rel.as_bytes().to_vec(),
            size: 1,
            mtime: 0,
            inode: None,
            ctime: None,
        }
    }

    fn id_of(entry: &FileEntry, head: &[u8]) -> String {
        assert!(Aider.named_inside(entry), "{entry:?}");
        Aider.session_from_head(entry, head).unwrap().id
    }

    #[test]
    fn histories_below_the_root_are_projects_of_their_own() {
        let history = history();
        let head = history.as_bytes();
        let own = listed("/home/u/src", HISTORY);
        let nested = listed("/home/u/src", "team/app/.aider.chat.history.md");
        let copied = listed("/home/u/src", "team/app-copy/.aider.chat.history.md");
        assert!(!Aider.named_inside(&listed("/home/u/src", "team/app/x.aider.chat.history.md")));
        assert!(!Aider.named_inside(&listed("/home/u/src", "team/notes.md")));

        // Two projects whose first runs began in the same second (a copy keeps the header):
        // two ids, each the start and its directory's hash.
        let ids = [
            id_of(&own, head),
            id_of(&nested, head),
            id_of(&copied, head),
        ];
        for id in &ids {
            assert!(id.starts_with("aider-20261206-032001-"), "{id}");
            assert_eq!(id.len(), "aider-20261206-032001-".len() + 8, "{id}");
            assert!(crate::session::valid_id(id), "{id}");
        }
        assert_ne!(ids[0], ids[1]);
        assert_ne!(ids[1], ids[2]);
        assert_ne!(ids[0], ids[2]);

        // Stable as the file grows, and the same project reached from a root nearer to it.
        let longer = format!("{history}\n#### more\n");
        assert_eq!(id_of(&nested, longer.as_bytes()), ids[1]);
        assert_eq!(
            id_of(&listed("/home/u/src/team/app", HISTORY), head),
            ids[1]
        );
        // A history without its header yet: named after its own directory.
        assert!(id_of(&nested, b"").starts_with("app-"));
        let elsewhere = listed("/srv", "app/.aider.chat.history.md");
        assert!(id_of(&elsewhere, b"").starts_with("app-"));
        assert_ne!(id_of(&nested, b""), id_of(&elsewhere, b""));

        assert_eq!(
            Aider.cwd_from_location(b"/home/u/src", b"team/app/.aider.chat.history.md"),
            Some("/home/u/src/team/app".to_string())
        );
        assert_eq!(
            Aider.cwd_from_location(b"/home/u/src", HISTORY.as_bytes()),
            Some("/home/u/src".to_string())
        );
        assert_eq!(
            Aider.cwd_from_location(b"/", b"app/.aider.chat.history.md"),
            Some("/app".to_string())
        );
        assert_eq!(
            Aider.cwd_from_location(br"C:\Users\u\src", b"team/app/.aider.chat.history.md"),
            Some(r"C:\Users\u\src\team\app".to_string())
        );
    }

    #[test]
    fn the_layout_walks_a_project_tree_to_its_bound() {
        let list = LAYOUT.list;
        assert!(list.walks_project_tree());
        assert_eq!(list.max_depth, PROJECT_DEPTH);
        assert!(list.matches_name(HISTORY.as_bytes()));
        assert!(!list.matches_name(b"old.aider.chat.history.md"));
        assert!(!list.matches_name(b".aider.input.history"));
    }
}
