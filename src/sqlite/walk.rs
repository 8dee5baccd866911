//! The B-tree walks of the read-ahead, over the cached pages: what a hint names, in pages
//! ([`IndexHint`]), and how a walk goes down a level at a time ([`Walk`], [`descend`]): an
//! index to the entries of its keys, a table to their rows and overflow pages, a whole table
//! for a scan, the upper levels of the trees a walk reaches later. The page format is
//! [`btree`]'s; the reads are `fetch.rs`'s.

use std::collections::{BTreeMap, BTreeSet};

#[cfg(doc)]
use clankie_engine::database::IndexRead;

use super::btree;
use super::cache::Pages;

/// The rows queries are about to read through an index ([`IndexRead`]), in pages: the index's
/// root, its table's, and its columns with the rowid.
pub(super) struct IndexHint {
    pub(super) index: u32,
    pub(super) table: u32,
    pub(super) fields: usize,
    pub(super) keys: Vec<Vec<u8>>,
    pub(super) last: Option<usize>,
    /// The next index, whose keys are this column of the entries found.
    pub(super) then: Option<(Box<IndexHint>, usize)>,
    /// The root pages of the schema's other B-trees, with the first hint of a snapshot: the
    /// next hints need theirs, and they cost nothing in the same read.
    pub(super) roots: Vec<u32>,
}

/// Entries an index page holds at the least, for keys as short as ids (a guess): how many
/// pages of a level an [`IndexRead::last`] follows.
const ENTRIES_PER_PAGE: usize = 16;

/// A page of an index on a walk down to some keys: its place in index order (the child or
/// cell indexes from the root), and which of the keys it may hold.
pub(super) struct IndexStep {
    page: u32,
    place: Vec<usize>,
    keys: Vec<usize>,
}

/// One descent of `Snapshot::prefetch` in progress.
pub(super) enum Walk {
    /// Down an index to the entries of its keys; `found`: the entries so far, by place.
    Index {
        hint: IndexHint,
        level: Vec<IndexStep>,
        found: Vec<(Vec<usize>, btree::IndexEntry)>,
    },
    /// Down a table to rows: the pages of the level, each with the rowids below it.
    Rows { level: BTreeMap<u32, Vec<i64>> },
    /// Pages with nothing below them (overflow pages).
    Pages(Vec<u32>),
    /// Every page of a table's B-tree, a level at a time (a scan; overflow pages left out).
    Table(Vec<u32>),
    /// The upper levels of a B-tree the walk reaches later, read ahead while each whole level
    /// fits in `left` pages ([`AHEAD_BYTES`]): see [`Walk::ahead`].
    Ahead { level: Vec<u32>, left: usize },
}

/// How much of each B-tree a hinted walk reaches later (the hint's table, the next index and
/// its table) is read ahead, level by level from its root, with the walk's own levels: a level
/// is read only while the whole of it fits. The rows' pages sit a few levels down each tree,
/// and each level is a round trip once the keys are known; the upper levels are few pages (a
/// 1 GiB database's message table: 11 pages under its root, the parts' index: 2 and then 93),
/// so reading them before the keys are known takes those round trips out of the walk. A
/// level past this is left to the walk (that database's parts table: 434 pages under its
/// root), and a small tree may come whole (its leaves are then a level that fits): bytes for
/// round trips, at most this much per tree, each level within `MAX_READ_BYTES`.
const AHEAD_BYTES: usize = 512 * 1024;

impl Walk {
    pub(super) fn index(hint: IndexHint) -> Walk {
        let step = IndexStep {
            page: hint.index,
            place: Vec::new(),
            keys: (0..hint.keys.len()).collect(),
        };
        Walk::Index {
            hint,
            level: vec![step],
            found: Vec::new(),
        }
    }

    /// The trees `hint`'s walk reaches after its first index (its table, the next index and
    /// that index's table), read ahead from their roots ([`AHEAD_BYTES`]).
    pub(super) fn ahead(hint: &IndexHint, page_size: usize) -> Vec<Walk> {
        let mut roots = vec![hint.table];
        if let Some((then, _)) = &hint.then {
            roots.extend([then.index, then.table]);
        }
        roots.sort_unstable();
        roots.dedup();
        roots.retain(|&root| root != hint.index);
        let left = AHEAD_BYTES / page_size.max(512);
        roots
            .into_iter()
            .map(|root| Walk::Ahead {
                level: vec![root],
                left,
            })
            .collect()
    }

    /// The pages of its current level.
    pub(super) fn pages(&self) -> Vec<u32> {
        match self {
            Walk::Index { level, .. } => level.iter().map(|step| step.page).collect(),
            Walk::Rows { level } => level.keys().copied().collect(),
            Walk::Pages(pages) | Walk::Table(pages) | Walk::Ahead { level: pages, .. } => {
                pages.clone()
            }
        }
    }

    /// Goes one level down from the pages read: pushes what goes on (itself, the rows its
    /// entries point to, the next index) onto `out`.
    fn step(self, pages: &Pages, reserved: usize, out: &mut Vec<Walk>) {
        match self {
            Walk::Index {
                hint,
                level,
                mut found,
            } => {
                let mut next = Vec::new();
                for step in level {
                    let Some(bytes) = pages.get(step.page) else {
                        continue;
                    };
                    let page = btree::Page::new(step.page, &bytes, reserved);
                    let Some((cells, right)) = page.index_cells(hint.fields) else {
                        continue;
                    };
                    index_step(&hint, &step, &cells, right, &mut next, &mut found);
                }
                if let Some(last) = hint.last {
                    let keep = 2 + last / ENTRIES_PER_PAGE;
                    next.drain(..next.len().saturating_sub(keep));
                }
                if !next.is_empty() {
                    out.push(Walk::Index {
                        hint,
                        level: next,
                        found,
                    });
                    return;
                }
                found.sort_by(|a, b| a.0.cmp(&b.0));
                if let Some(last) = hint.last {
                    found.drain(..found.len().saturating_sub(last));
                }
                if !found.is_empty() {
                    let rowids = found.iter().map(|(_, entry)| entry.rowid).collect();
                    out.push(Walk::Rows {
                        level: BTreeMap::from([(hint.table, rowids)]),
                    });
                }
                if let Some((mut then, column)) = hint.then {
                    then.keys = found
                        .iter()
                        .filter_map(|(_, entry)| match entry.columns.get(column) {
                            Some(btree::KeyColumn::Text(text)) => Some(text.clone()),
                            _ => None,
                        })
                        .collect();
                    then.keys.sort();
                    then.keys.dedup();
                    if !then.keys.is_empty() {
                        out.push(Walk::index(*then));
                    }
                }
            }
            Walk::Rows { level } => {
                let mut next: BTreeMap<u32, Vec<i64>> = BTreeMap::new();
                let mut overflow = BTreeSet::new();
                for (number, rowids) in level {
                    let Some(bytes) = pages.get(number) else {
                        continue;
                    };
                    let page = btree::Page::new(number, &bytes, reserved);
                    for rowid in rowids {
                        if let Some(child) = page.table_child(rowid) {
                            next.entry(child).or_default().push(rowid);
                        } else if let Some((first, count)) = page.overflow(rowid) {
                            overflow.extend((first..first.saturating_add(count)).take(64));
                        }
                    }
                }
                if !next.is_empty() {
                    out.push(Walk::Rows { level: next });
                }
                if !overflow.is_empty() {
                    out.push(Walk::Pages(overflow.into_iter().collect()));
                }
            }
            Walk::Pages(_) => {}
            Walk::Ahead { level, left } => {
                let next = children_of(&level, pages, reserved);
                if !next.is_empty() && next.len() <= left {
                    out.push(Walk::Ahead {
                        left: left - next.len(),
                        level: next,
                    });
                }
            }
            Walk::Table(level) => {
                let next = children_of(&level, pages, reserved);
                if !next.is_empty() {
                    out.push(Walk::Table(next));
                }
            }
        }
    }
}

/// The children of the cached interior pages of `level`, in order: the B-trees' next level
/// (leaves and pages not cached have none).
pub(super) fn children_of(level: &[u32], pages: &Pages, reserved: usize) -> Vec<u32> {
    level
        .iter()
        .filter_map(|&number| {
            let bytes = pages.get(number)?;
            btree::Page::new(number, &bytes, reserved).children()
        })
        .flatten()
        .collect()
}

/// Steps each of `walks` down from the level just read, and on down through every level
/// already cached (read ahead, or by an earlier walk), so that a walk's next read is the
/// first level it lacks: a level each walk has cached costs no round trip, even beside a
/// walk that still reads its own.
pub(super) fn descend(walks: Vec<Walk>, pages: &Pages, reserved: usize) -> Vec<Walk> {
    let mut next = Vec::new();
    let mut todo: Vec<(Walk, usize)> = walks.into_iter().map(|walk| (walk, 0)).collect();
    while let Some((walk, depth)) = todo.pop() {
        let mut stepped = Vec::new();
        walk.step(pages, reserved, &mut stepped);
        for walk in stepped {
            // Bounded: a corrupt tree whose pages point back up cannot loop here.
            let cached = walk.pages().iter().all(|&page| pages.get(page).is_some());
            if cached && depth < 10 {
                todo.push((walk, depth + 1));
            } else {
                next.push(walk);
            }
        }
    }
    next
}

/// One index page of a walk: the children that may hold the step's keys go to `next` (each
/// with the keys it may hold), the entries of its keys to `found`. An entry not understood
/// bounds nothing: the children on both sides of it may hold any key.
fn index_step(
    hint: &IndexHint,
    step: &IndexStep,
    cells: &[btree::IndexCell],
    right: Option<u32>,
    next: &mut Vec<IndexStep>,
    found: &mut Vec<(Vec<usize>, btree::IndexEntry)>,
) {
    let at = |i: usize| {
        let mut place = step.place.clone();
        place.push(i);
        place
    };
    // The keys between two bounds (`None`: unbounded on that side).
    let between = |low: Option<&btree::KeyColumn>, high: Option<&btree::KeyColumn>| {
        step.keys
            .iter()
            .copied()
            .filter(|&k| {
                let key = &hint.keys[k];
                low.is_none_or(|low| low.cmp_key(key).is_le())
                    && high.is_none_or(|high| high.cmp_key(key).is_ge())
            })
            .collect::<Vec<usize>>()
    };
    let mut low: Option<&btree::KeyColumn> = None;
    let mut low_known = true;
    for (i, cell) in cells.iter().enumerate() {
        let first = cell.first();
        if let Some(child) = cell.child {
            let keys = between(low.filter(|_| low_known), first);
            if !keys.is_empty() {
                next.push(IndexStep {
                    page: child,
                    place: at(2 * i),
                    keys,
                });
            }
        }
        if let (Some(first), Some(entry)) = (first, &cell.entry)
            && step
                .keys
                .iter()
                .any(|&k| first.cmp_key(&hint.keys[k]).is_eq())
        {
            found.push((at(2 * i + 1), entry.clone()));
        }
        low = first;
        low_known = first.is_some();
    }
    if let Some(right) = right {
        let keys = between(low.filter(|_| low_known), None);
        if !keys.is_empty() {
            next.push(IndexStep {
                page: right,
                place: at(2 * cells.len()),
                keys,
            });
        }
    }
}
