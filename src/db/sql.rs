//! The one way the domain operations talk to an engine: `Tx::exec`, `row`, `one` and
//! `rows`, with arguments as engine-neutral values and results read by column index.
//! Each operation writes its SQL once, in the dialect both engines accept (`?N`
//! placeholders, `ON CONFLICT`, `RETURNING`, `lower()` for case-insensitive matching),
//! and the engine behind `Tx` binds it. Nothing outside this file and `db/sqlite/`
//! sees a rusqlite type.

use super::DbError;

/// What every domain operation runs on: one storage transaction (a savepoint in the
/// SQLite writer's group commit) or a read snapshot.
#[derive(Clone, Copy)]
pub struct Tx<'a> {
    engine: Engine<'a>,
}

#[derive(Clone, Copy)]
enum Engine<'a> {
    Sqlite(&'a rusqlite::Connection),
}

/// One argument of a statement, borrowed from the caller.
#[derive(Debug, Clone, Copy)]
pub(in crate::db) enum Value<'v> {
    Null,
    Int(i64),
    Text(&'v str),
    Blob(&'v [u8]),
}

/// What may be passed as an argument; see `args!`.
pub(in crate::db) trait ToValue {
    fn value(&self) -> Value<'_>;
}

/// The argument list of a statement: `args![a, b]` borrows each as a `ToValue`.
macro_rules! args {
    () => { &[] as &[&dyn $crate::db::sql::ToValue] };
    ($($v:expr),+ $(,)?) => { &[$(&$v as &dyn $crate::db::sql::ToValue),+] as &[&dyn $crate::db::sql::ToValue] };
}
pub(in crate::db) use args;

impl ToValue for i64 {
    fn value(&self) -> Value<'_> {
        Value::Int(*self)
    }
}
impl ToValue for i32 {
    fn value(&self) -> Value<'_> {
        Value::Int(i64::from(*self))
    }
}
impl ToValue for u32 {
    fn value(&self) -> Value<'_> {
        Value::Int(i64::from(*self))
    }
}
impl ToValue for usize {
    fn value(&self) -> Value<'_> {
        // Limits and offsets: anything beyond i64 means "all of them".
        Value::Int(i64::try_from(*self).unwrap_or(i64::MAX))
    }
}
impl ToValue for bool {
    fn value(&self) -> Value<'_> {
        Value::Int(i64::from(*self))
    }
}
impl ToValue for str {
    fn value(&self) -> Value<'_> {
        Value::Text(self)
    }
}
impl ToValue for String {
    fn value(&self) -> Value<'_> {
        Value::Text(self)
    }
}
impl ToValue for [u8] {
    fn value(&self) -> Value<'_> {
        Value::Blob(self)
    }
}
impl ToValue for Vec<u8> {
    fn value(&self) -> Value<'_> {
        Value::Blob(self)
    }
}
impl<const N: usize> ToValue for [u8; N] {
    fn value(&self) -> Value<'_> {
        Value::Blob(self)
    }
}
impl<T: ToValue> ToValue for Option<T> {
    fn value(&self) -> Value<'_> {
        match self {
            Some(v) => v.value(),
            None => Value::Null,
        }
    }
}
impl<T: ToValue + ?Sized> ToValue for &T {
    fn value(&self) -> Value<'_> {
        (**self).value()
    }
}

/// A column type a result may be read as.
pub(in crate::db) trait Column: rusqlite::types::FromSql {}
impl<T: rusqlite::types::FromSql> Column for T {}

/// One result row, read by column index.
pub(in crate::db) struct Row<'r> {
    inner: RowInner<'r>,
}

enum RowInner<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
}

impl Row<'_> {
    pub(in crate::db) fn get<T: Column>(&self, index: usize) -> Result<T, DbError> {
        match self.inner {
            RowInner::Sqlite(r) => Ok(r.get(index)?),
        }
    }
}

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match *self {
            Value::Null => ValueRef::Null,
            Value::Int(i) => ValueRef::Integer(i),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
            Value::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

fn bind<'p>(args: &'p [&'p dyn ToValue]) -> impl rusqlite::Params + 'p {
    rusqlite::params_from_iter(args.iter().map(|a| a.value()))
}

impl<'a> Tx<'a> {
    pub(in crate::db) fn sqlite(conn: &'a rusqlite::Connection) -> Self {
        Self {
            engine: Engine::Sqlite(conn),
        }
    }

    /// The SQLite connection, for the engine's own operations (migrations, backups,
    /// integrity checks) in `db/sqlite/`.
    #[cfg(any(test, feature = "testing"))]
    pub(in crate::db) fn sqlite_connection(&self) -> Option<&'a rusqlite::Connection> {
        match self.engine {
            Engine::Sqlite(c) => Some(c),
        }
    }

    /// Runs a statement; the number of rows it changed.
    pub(in crate::db) fn exec(&self, sql: &str, args: &[&dyn ToValue]) -> Result<usize, DbError> {
        match self.engine {
            Engine::Sqlite(c) => Ok(c.prepare_cached(sql)?.execute(bind(args))?),
        }
    }

    /// The first row, if there is one.
    pub(in crate::db) fn row<T>(
        &self,
        sql: &str,
        args: &[&dyn ToValue],
        read: impl FnOnce(&Row<'_>) -> Result<T, DbError>,
    ) -> Result<Option<T>, DbError> {
        match self.engine {
            Engine::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let mut rows = stmt.query(bind(args))?;
                match rows.next()? {
                    Some(r) => Ok(Some(read(&Row {
                        inner: RowInner::Sqlite(r),
                    })?)),
                    None => Ok(None),
                }
            }
        }
    }

    /// The one row a statement always yields (an aggregate, `RETURNING` of a write
    /// that cannot miss): none is `NotFound`.
    pub(in crate::db) fn one<T>(
        &self,
        sql: &str,
        args: &[&dyn ToValue],
        read: impl FnOnce(&Row<'_>) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        self.row(sql, args, read)?.ok_or(DbError::NotFound)
    }

    /// Every row, in the statement's order.
    pub(in crate::db) fn rows<T>(
        &self,
        sql: &str,
        args: &[&dyn ToValue],
        mut read: impl FnMut(&Row<'_>) -> Result<T, DbError>,
    ) -> Result<Vec<T>, DbError> {
        match self.engine {
            Engine::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let mut rows = stmt.query(bind(args))?;
                let mut out = Vec::new();
                while let Some(r) = rows.next()? {
                    out.push(read(&Row {
                        inner: RowInner::Sqlite(r),
                    })?);
                }
                Ok(out)
            }
        }
    }
}
