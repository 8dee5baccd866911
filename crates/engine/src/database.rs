//! The engine's view of an SQLite database: a read-only connection it may query, answered by
//! the driver (which links SQLite and reads the host's pages). A harness that keeps sessions in
//! a database writes its queries and maps the rows here, in its own module; the engine itself
//! does no I/O and links no SQLite.

/// One value of a result row, as SQLite stores it.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

/// A query failed, or a column did not hold what the harness expects: the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct QueryError(pub String);

/// A read-only connection to a database.
pub trait Database {
    /// Whether the schema has a table of this name.
    fn has_table(&self, name: &str) -> Result<bool, QueryError>;

    /// Runs one query with text parameters (`?1`, `?2`, …) and returns every row.
    fn query(&self, sql: &str, params: &[&str]) -> Result<Vec<Vec<SqlValue>>, QueryError>;

    /// Says which rows the next queries read, so that a connection over a slow link can fetch
    /// their pages together rather than one round trip each ([`IndexRead`]). Only a hint: the
    /// queries read what they read.
    fn will_read(&self, read: &IndexRead<'_>) -> Result<(), QueryError> {
        let _ = read;
        Ok(())
    }

    /// Says that the next query reads every row of `table` (a hint, as [`Database::will_read`]).
    fn will_scan(&self, table: &str) -> Result<(), QueryError> {
        let _ = table;
        Ok(())
    }

    /// Says that `read` ([`Database::will_read`]'s hint) follows the next scan
    /// ([`Database::will_scan`]) on this connection or a later one of the same database: its
    /// pages may be fetched with the scan's, a level of each in the same read. Only a hint.
    fn will_read_after_scan(&self, read: &IndexRead<'_>) -> Result<(), QueryError> {
        let _ = read;
        Ok(())
    }

    /// Whether a query with text parameters returns at least one row.
    fn exists(&self, sql: &str, params: &[&str]) -> Result<bool, QueryError> {
        Ok(!self.query(sql, params)?.is_empty())
    }
}

/// Rows about to be read through an index: those of `index`'s table whose entries have one of
/// `keys` (text) as their first column; with `last`, only the last that many such entries in
/// index order (`ORDER BY … DESC LIMIT`). With `then`, the rows of a second index are read
/// next, those whose first column is the given column of the entries found (0: the first), as
/// when the ids the first query returns are the keys of the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexRead<'a> {
    pub index: &'a str,
    pub keys: Vec<&'a str>,
    pub last: Option<usize>,
    pub then: Option<(&'a str, usize)>,
}

/// A session that is a row of a database: its id, its parent's (a subagent's), and when it
/// was last updated (seconds since the epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    pub id: String,
    pub parent: Option<String>,
    pub updated: Option<i64>,
}

impl SessionRow {
    /// A row of `SELECT id, parent, updated …`.
    pub fn from_row(row: &Row<'_>) -> Result<SessionRow, QueryError> {
        Ok(SessionRow {
            id: row.text(0)?,
            parent: row.opt_text(1)?,
            updated: row.opt_int(2)?,
        })
    }
}

/// Typed access to the columns of a result row.
pub struct Row<'r>(pub &'r [SqlValue]);

impl Row<'_> {
    fn at(&self, index: usize) -> Result<&SqlValue, QueryError> {
        self.0
            .get(index)
            .ok_or_else(|| QueryError(format!("no column {index} in a result row")))
    }

    /// A text column that must not be NULL.
    pub fn text(&self, index: usize) -> Result<String, QueryError> {
        self.opt_text(index)?
            .ok_or_else(|| QueryError(format!("column {index} is NULL, expected text")))
    }

    /// A text column that may be NULL.
    pub fn opt_text(&self, index: usize) -> Result<Option<String>, QueryError> {
        match self.at(index)? {
            SqlValue::Null => Ok(None),
            SqlValue::Text(text) => Ok(Some(text.clone())),
            other => Err(mismatch(index, "text", other)),
        }
    }

    /// An integer column that must not be NULL.
    pub fn int(&self, index: usize) -> Result<i64, QueryError> {
        self.opt_int(index)?
            .ok_or_else(|| QueryError(format!("column {index} is NULL, expected an integer")))
    }

    /// An integer column that may be NULL.
    pub fn opt_int(&self, index: usize) -> Result<Option<i64>, QueryError> {
        match self.at(index)? {
            SqlValue::Null => Ok(None),
            SqlValue::Integer(n) => Ok(Some(*n)),
            other => Err(mismatch(index, "an integer", other)),
        }
    }
}

fn mismatch(index: usize, wanted: &str, got: &SqlValue) -> QueryError {
    let got = match got {
        SqlValue::Null => "NULL",
        SqlValue::Integer(_) => "an integer",
        SqlValue::Real(_) => "a real",
        SqlValue::Text(_) => "text",
        SqlValue::Blob(_) => "a blob",
    };
    QueryError(format!("column {index} holds {got}, expected {wanted}"))
}

/// Runs `sql` and maps each row with `map`.
pub fn query_map<T>(
    db: &dyn Database,
    sql: &str,
    params: &[&str],
    map: impl Fn(&Row<'_>) -> Result<T, QueryError>,
) -> Result<Vec<T>, QueryError> {
    db.query(sql, params)?
        .iter()
        .map(|values| map(&Row(values)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_columns_say_what_they_found() {
        let values = [
            SqlValue::Text("a".into()),
            SqlValue::Null,
            SqlValue::Integer(7),
            SqlValue::Blob(vec![1]),
        ];
        let row = Row(&values);
        assert_eq!(row.text(0).unwrap(), "a");
        assert_eq!(row.opt_text(1).unwrap(), None);
        assert_eq!(row.int(2).unwrap(), 7);
        assert_eq!(row.opt_int(1).unwrap(), None);
        assert!(row.text(1).unwrap_err().0.contains("NULL"));
        assert!(row.int(3).unwrap_err().0.contains("a blob"));
        assert!(row.text(9).unwrap_err().0.contains("no column 9"));
    }
}
