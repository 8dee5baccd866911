//! Just enough of SQLite's B-tree page format to guess the pages a query reads next, so that
//! they are fetched together rather than one round trip each: the rowids an index leaf points
//! to, the child of a table interior page that holds a rowid, the overflow pages of a row, and
//! the cells of an index page (its children and entries) to descend an index for known keys.
//! Pure: page bytes in, page numbers out; a page it does not understand yields nothing (a guess
//! missed costs a round trip, never a wrong answer: SQLite reads every page it needs itself).
//! Format: <https://www.sqlite.org/fileformat2.html#b_tree_pages>.

/// A B-tree page's kind (its first header byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    IndexInterior,
    TableInterior,
    IndexLeaf,
    TableLeaf,
}

/// A B-tree page: its bytes and where its header starts (100 on page 1, after the database
/// header).
pub(crate) struct Page<'p> {
    bytes: &'p [u8],
    header: usize,
    /// The page size less the reserved bytes at the end of each page.
    usable: usize,
}

fn u16_at(b: &[u8], at: usize) -> Option<usize> {
    Some(usize::from(u16::from_be_bytes([
        *b.get(at)?,
        *b.get(at + 1)?,
    ])))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes([
        *b.get(at)?,
        *b.get(at + 1)?,
        *b.get(at + 2)?,
        *b.get(at + 3)?,
    ]))
}

/// SQLite's varint at `at`: its value and its length.
fn varint(b: &[u8], at: usize) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for i in 0..9 {
        let byte = *b.get(at + i)?;
        if i == 8 {
            return Some(((value << 8) | u64::from(byte), 9));
        }
        value = (value << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

impl<'p> Page<'p> {
    /// Page `number` (from 1) of a database whose header reserves `reserved` bytes per page.
    pub(crate) fn new(number: u32, bytes: &'p [u8], reserved: usize) -> Page<'p> {
        Page {
            bytes,
            header: if number == 1 { 100 } else { 0 },
            usable: bytes.len().saturating_sub(reserved),
        }
    }

    pub(crate) fn kind(&self) -> Option<Kind> {
        match self.bytes.get(self.header)? {
            0x02 => Some(Kind::IndexInterior),
            0x05 => Some(Kind::TableInterior),
            0x0a => Some(Kind::IndexLeaf),
            0x0d => Some(Kind::TableLeaf),
            _ => None,
        }
    }

    /// Where each cell starts, in key order.
    fn cells(&self) -> Option<Vec<usize>> {
        let kind = self.kind()?;
        let count = u16_at(self.bytes, self.header + 3)?;
        let array = self.header
            + match kind {
                Kind::IndexInterior | Kind::TableInterior => 12,
                Kind::IndexLeaf | Kind::TableLeaf => 8,
            };
        (0..count)
            .map(|i| u16_at(self.bytes, array + 2 * i).filter(|&at| at < self.usable))
            .collect()
    }

    /// How many bytes of a payload of `size` stay on a page of this kind; the rest overflows.
    fn local_payload(&self, size: usize, table_leaf: bool) -> usize {
        let usable = self.usable;
        let max_local = if table_leaf {
            usable - 35
        } else {
            (usable - 12) * 64 / 255 - 23
        };
        if size <= max_local {
            return size;
        }
        let min_local = (usable - 12) * 32 / 255 - 23;
        let k = min_local + (size - min_local) % (usable - 4);
        if k <= max_local { k } else { min_local }
    }

    /// An index leaf's entries as (first column, rowid), the rowid being the last column, for
    /// entries whose payload is all on the page and that have `fields` columns, the rowid
    /// included (an entry of another shape is not of the index it was taken for). The first
    /// column is its serial type and bytes: equal columns give equal keys.
    pub(crate) fn index_entries(&self, fields: usize) -> Vec<(Vec<u8>, i64)> {
        if self.kind() != Some(Kind::IndexLeaf) || self.usable < 512 {
            return Vec::new();
        }
        let Some(cells) = self.cells() else {
            return Vec::new();
        };
        cells
            .into_iter()
            .filter_map(|at| {
                let (size, len) = varint(self.bytes, at)?;
                let size = usize::try_from(size).ok()?;
                if self.local_payload(size, false) != size {
                    return None;
                }
                let payload = self.bytes.get(at + len..at + len + size)?;
                first_and_last(payload, fields)
            })
            .collect()
    }

    /// The child of a table interior page whose subtree holds `rowid`.
    pub(crate) fn table_child(&self, rowid: i64) -> Option<u32> {
        if self.kind() != Some(Kind::TableInterior) {
            return None;
        }
        for at in self.cells()? {
            let child = u32_at(self.bytes, at)?;
            let (key, _) = varint(self.bytes, at + 4)?;
            if rowid <= key as i64 {
                return Some(child);
            }
        }
        u32_at(self.bytes, self.header + 8)
    }

    /// The first overflow page of the row `rowid` on a table leaf, and how many overflow pages
    /// the row has (often, not always, adjacent ones); `None` when the row is all on the page
    /// or not on it.
    pub(crate) fn overflow(&self, rowid: i64) -> Option<(u32, u32)> {
        if self.kind() != Some(Kind::TableLeaf) || self.usable < 512 {
            return None;
        }
        for at in self.cells()? {
            let (size, size_len) = varint(self.bytes, at)?;
            let (key, key_len) = varint(self.bytes, at + size_len)?;
            if key as i64 != rowid {
                continue;
            }
            let size = usize::try_from(size).ok()?;
            let local = self.local_payload(size, true);
            if local == size {
                return None;
            }
            let first = u32_at(self.bytes, at + size_len + key_len + local)?;
            let per_page = self.usable - 4;
            let pages = (size - local).div_ceil(per_page);
            return Some((first, u32::try_from(pages).ok()?));
        }
        None
    }
}

/// A column of an index entry, as far as comparing it with a text key needs: SQLite sorts
/// NULL and numbers before text, blobs after, text by its bytes (the BINARY collation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeyColumn {
    BeforeText,
    Text(Vec<u8>),
    AfterText,
}

impl KeyColumn {
    /// How this column compares with the text `key`.
    pub(crate) fn cmp_key(&self, key: &[u8]) -> std::cmp::Ordering {
        match self {
            KeyColumn::BeforeText => std::cmp::Ordering::Less,
            KeyColumn::Text(text) => text.as_slice().cmp(key),
            KeyColumn::AfterText => std::cmp::Ordering::Greater,
        }
    }
}

/// An index entry: its columns before the rowid, and the rowid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexEntry {
    pub(crate) columns: Vec<KeyColumn>,
    pub(crate) rowid: i64,
}

impl IndexEntry {
    pub(crate) fn first(&self) -> Option<&KeyColumn> {
        self.columns.first()
    }
}

/// A cell of an index page: the child left of it (interior pages) and its entry (`None` when
/// the entry is not all on the page or not of the index's shape).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexCell {
    pub(crate) child: Option<u32>,
    pub(crate) entry: Option<IndexEntry>,
}

impl IndexCell {
    pub(crate) fn first(&self) -> Option<&KeyColumn> {
        self.entry.as_ref().and_then(IndexEntry::first)
    }
}

/// An index entry's record of `fields` columns, the last an integer rowid.
fn index_entry(record: &[u8], fields: usize) -> Option<IndexEntry> {
    let (header_size, mut at) = varint(record, 0)?;
    let header_size = usize::try_from(header_size).ok()?;
    let mut body = header_size;
    let mut columns = Vec::with_capacity(fields);
    while at < header_size {
        let (serial, len) = varint(record, at)?;
        at += len;
        let size = match serial {
            0 | 8 | 9 | 10 | 11 => 0,
            1..=4 => serial as usize,
            5 => 6,
            6 | 7 => 8,
            n => usize::try_from((n - 12) / 2).ok()?,
        };
        let bytes = record.get(body..body + size)?;
        body += size;
        if columns.len() + 1 == fields {
            let rowid = integer(serial, bytes)?;
            return (at == header_size).then_some(IndexEntry { columns, rowid });
        }
        columns.push(match serial {
            0..=11 => KeyColumn::BeforeText,
            n if n % 2 == 1 => KeyColumn::Text(bytes.to_vec()),
            _ => KeyColumn::AfterText,
        });
    }
    None
}

impl Page<'_> {
    /// An interior page's children in key order, the right-most last; `None` for a leaf.
    pub(crate) fn children(&self) -> Option<Vec<u32>> {
        if !matches!(self.kind()?, Kind::IndexInterior | Kind::TableInterior) {
            return None;
        }
        let mut children = self
            .cells()?
            .into_iter()
            .map(|at| u32_at(self.bytes, at))
            .collect::<Option<Vec<u32>>>()?;
        children.push(u32_at(self.bytes, self.header + 8)?);
        Some(children)
    }

    /// An index page's cells in key order, and its right-most child (interior pages); `None`
    /// for a page that is not an index page. An interior page's entries are entries of the
    /// index too, between its children's.
    pub(crate) fn index_cells(&self, fields: usize) -> Option<(Vec<IndexCell>, Option<u32>)> {
        let interior = match self.kind()? {
            Kind::IndexInterior => true,
            Kind::IndexLeaf => false,
            _ => return None,
        };
        if self.usable < 512 {
            return None;
        }
        let cells = self
            .cells()?
            .into_iter()
            .map(|at| {
                let (child, at) = match interior {
                    true => (u32_at(self.bytes, at), at + 4),
                    false => (None, at),
                };
                let entry = varint(self.bytes, at).and_then(|(size, len)| {
                    let size = usize::try_from(size).ok()?;
                    if self.local_payload(size, false) != size {
                        return None;
                    }
                    index_entry(self.bytes.get(at + len..at + len + size)?, fields)
                });
                IndexCell { child, entry }
            })
            .collect();
        let right = match interior {
            true => Some(u32_at(self.bytes, self.header + 8)?),
            false => None,
        };
        Some((cells, right))
    }
}

/// The first column of a record of `fields` columns (serial type and bytes) and its last, when
/// that is an integer (an index entry's rowid).
fn first_and_last(record: &[u8], fields: usize) -> Option<(Vec<u8>, i64)> {
    let (header_size, mut at) = varint(record, 0)?;
    let header_size = usize::try_from(header_size).ok()?;
    let mut body = header_size;
    let mut first = None;
    let mut last = None;
    let mut count = 0;
    while at < header_size {
        count += 1;
        let (serial, len) = varint(record, at)?;
        let serial_bytes = &record[at..at + len];
        at += len;
        let size = match serial {
            0 | 8 | 9 | 10 | 11 => 0,
            1 => 1,
            2 => 2,
            3 => 3,
            4 => 4,
            5 => 6,
            6 | 7 => 8,
            n => usize::try_from((n - 12) / 2).ok()?,
        };
        if first.is_none() {
            let mut key = serial_bytes.to_vec();
            key.extend_from_slice(record.get(body..body + size)?);
            first = Some(key);
        }
        last = Some((serial, body, size));
        body += size;
    }
    if count != fields {
        return None;
    }
    let (serial, start, size) = last?;
    let bytes = record.get(start..start + size)?;
    Some((first?, integer(serial, bytes)?))
}

/// An integer column's value from its serial type (0 and 1 are the constants 8 and 9; 1 to 6
/// are big-endian two's complement of 1, 2, 3, 4, 6 and 8 bytes); `None` for another type.
fn integer(serial: u64, bytes: &[u8]) -> Option<i64> {
    match serial {
        8 => Some(0),
        9 => Some(1),
        1..=6 => {
            let (first, rest) = bytes.split_first()?;
            Some(rest.iter().fold(i64::from(*first as i8), |value, &b| {
                (value << 8) | i64::from(b)
            }))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    /// The pages of a database SQLite wrote, and the root pages of its tables and indexes.
    fn database(setup: &str) -> (Vec<u8>, Connection, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(setup).unwrap();
        (std::fs::read(&path).unwrap(), conn, dir)
    }

    fn page(bytes: &[u8], number: u32) -> Page<'_> {
        let size = 4096;
        let at = (number as usize - 1) * size;
        Page::new(number, &bytes[at..at + size], 0)
    }

    fn root(conn: &Connection, name: &str) -> u32 {
        conn.query_row(
            "SELECT rootpage FROM sqlite_master WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
        .unwrap()
    }

    #[test]
    fn from_an_index_leaf_down_the_table_to_each_rows_overflow_pages() {
        let (bytes, conn, _dir) = database(
            "PRAGMA page_size = 4096;
             CREATE TABLE t (k TEXT, v TEXT);
             CREATE INDEX t_k ON t (k);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
             INSERT INTO t SELECT 'key ' || (i % 7), CASE WHEN i % 1000 = 0
               THEN printf('%.10000c', 'x') ELSE 'small' END FROM n;",
        );
        let table = root(&conn, "t");
        let index = root(&conn, "t_k");
        // Walk the index down its leftmost path to a leaf.
        let mut number = index;
        while page(&bytes, number).kind() == Some(Kind::IndexInterior) {
            let p = page(&bytes, number);
            let first = p.cells().unwrap()[0];
            number = u32_at(p.bytes, first).unwrap();
        }
        let leaf = page(&bytes, number);
        assert_eq!(leaf.kind(), Some(Kind::IndexLeaf));
        // One column and the rowid.
        assert!(leaf.index_entries(3).is_empty());
        let entries = leaf.index_entries(2);
        assert!(entries.len() > 10);
        // The leftmost leaf holds the smallest keys: 'key 0' (serial type 23: 5 bytes of text).
        assert_eq!(entries[0].0, b"\x17key 0");
        let rowids: Vec<i64> = entries.iter().map(|&(_, rowid)| rowid).collect();
        assert!(rowids.iter().all(|rowid| rowid % 7 == 0));
        // Each rowid's row is found by descending the table, as SQLite would.
        for &rowid in &rowids {
            let mut number = table;
            while let Some(child) = page(&bytes, number).table_child(rowid) {
                number = child;
            }
            let leaf = page(&bytes, number);
            assert_eq!(leaf.kind(), Some(Kind::TableLeaf));
            let found = leaf.cells().unwrap().into_iter().any(|at| {
                let (_, len) = varint(leaf.bytes, at).unwrap();
                varint(leaf.bytes, at + len).unwrap().0 as i64 == rowid
            });
            assert!(found, "rowid {rowid} not on page {number}");
        }
        // The one big row among the first thousand keeps 1827 bytes on its leaf and overflows
        // onto two pages (10,011 bytes of payload, 4092 on each overflow page).
        let mut number = table;
        while let Some(child) = page(&bytes, number).table_child(1000) {
            number = child;
        }
        let (first, count) = page(&bytes, number).overflow(1000).unwrap();
        assert_eq!(count, 2);
        assert!(first as usize <= bytes.len() / 4096);
        assert_eq!(page(&bytes, number).overflow(999), None);
    }

    #[test]
    fn an_index_descended_for_a_key_by_its_cells_finds_every_entry_of_the_key() {
        let (bytes, conn, _dir) = database(
            "PRAGMA page_size = 4096;
             CREATE TABLE t (k TEXT, v TEXT);
             CREATE INDEX t_k ON t (k);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
             INSERT INTO t SELECT printf('key %05d', i % 997), 'v' FROM n;",
        );
        let key = b"key 00042";
        let mut level = vec![root(&conn, "t_k")];
        let mut rowids = Vec::new();
        let mut depth = 0;
        while !level.is_empty() {
            depth += 1;
            let mut next = Vec::new();
            for number in level {
                let (cells, right) = page(&bytes, number).index_cells(2).unwrap();
                let mut low: Option<&KeyColumn> = None;
                for cell in &cells {
                    let first = cell.first().unwrap();
                    let above_low = low.is_none_or(|low| low.cmp_key(key).is_le());
                    if let Some(child) = cell.child
                        && above_low
                        && first.cmp_key(key).is_ge()
                    {
                        next.push(child);
                    }
                    if first.cmp_key(key).is_eq() {
                        rowids.push(cell.entry.as_ref().unwrap().rowid);
                    }
                    low = Some(first);
                }
                if let Some(right) = right
                    && low.is_none_or(|low| low.cmp_key(key).is_le())
                {
                    next.push(right);
                }
            }
            level = next;
        }
        assert!(depth >= 2, "{depth}");
        rowids.sort_unstable();
        let want: Vec<i64> = (1..=20000).filter(|i| i % 997 == 42).collect();
        assert_eq!(rowids, want);
        assert_eq!(
            index_entry(&[4, 1, 0x11, 1, 5, b'a', b'b', 7], 3),
            Some(IndexEntry {
                columns: vec![KeyColumn::BeforeText, KeyColumn::Text(b"ab".to_vec())],
                rowid: 7
            })
        );
        assert_eq!(
            index_entry(&[3, 12, 1, 7], 2).unwrap().columns,
            [KeyColumn::AfterText]
        );
        assert_eq!(index_entry(&[3, 1, 1, 5, 7], 3), None);
    }

    #[test]
    fn pages_it_does_not_understand_yield_nothing() {
        let junk = vec![0xffu8; 4096];
        let p = Page::new(2, &junk, 0);
        assert_eq!(p.kind(), None);
        assert!(p.index_entries(2).is_empty());
        assert_eq!(p.table_child(5), None);
        assert_eq!(p.overflow(5), None);
        assert_eq!(p.index_cells(2), None);
        // An index leaf whose cell pointers point past the page.
        let mut leaf = vec![0u8; 4096];
        leaf[0] = 0x0a;
        leaf[4] = 3;
        leaf[8] = 0xff;
        leaf[9] = 0xff;
        assert!(Page::new(2, &leaf, 0).index_entries(2).is_empty());
        assert_eq!(first_and_last(&[], 1), None);
        assert_eq!(first_and_last(&[2, 1, 7], 1), Some((vec![1, 7], 7)));
        assert_eq!(
            first_and_last(&[3, 1, 2, 0xff, 0xff, 0xfe], 2),
            Some((vec![1, 0xff], -2))
        );
        assert_eq!(first_and_last(&[3, 1, 2, 0xff, 0xff, 0xfe], 3), None);
    }
}
