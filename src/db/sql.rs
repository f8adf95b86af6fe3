//! The one way the domain operations talk to an engine: `Tx::exec`, `row`, `one` and
//! `rows`, with arguments as engine-neutral values and results read by column index.
//! Each operation writes its SQL once, in the dialect both engines accept (`?N`
//! placeholders, `ON CONFLICT`, `RETURNING`, `lower()` for case-insensitive matching),
//! and the engine behind `Tx` binds it: SQLite in place, PostgreSQL with `?N` turned
//! into `$N`. Nothing outside this file, `db/sqlite/` and `db/pg/` sees an
//! engine's type.

use super::DbError;

/// What every domain operation runs on: one storage transaction (its share of the
/// SQLite writer's group commit) or a read snapshot.
#[derive(Clone, Copy)]
pub struct Tx<'a> {
    engine: Engine<'a>,
    /// Where the statements run are noted, for tests that compare the work of two
    /// paths (`db::testing::recorded`).
    #[cfg(any(test, feature = "testing"))]
    tap: Option<&'a std::cell::RefCell<Vec<String>>>,
}

#[derive(Clone, Copy)]
enum Engine<'a> {
    Sqlite(&'a rusqlite::Connection),
    Postgres(&'a dyn PgSession),
}

/// An operation whose result type is erased (`erase`), so that the task running it
/// on a blocking thread is one type: spawning each call site's closure directly made
/// tokio's task machinery one copy per call site, about 2.5 MB of the executable.
pub(in crate::db) type Erased = Box<dyn FnOnce(&Tx<'_>) -> Result<(), DbError> + Send>;

/// Where an erased operation leaves its result.
pub(in crate::db) struct Slot<T>(std::sync::Arc<std::sync::Mutex<Option<T>>>);

impl<T> Slot<T> {
    /// The result, once the erased operation has succeeded (`Panicked` if it never
    /// produced one).
    pub(in crate::db) fn take(self) -> Result<T, DbError> {
        let mut slot = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.take().ok_or(DbError::Panicked)
    }
}

/// `op` as an `Erased` operation and the slot it fills when it succeeds.
pub(in crate::db) fn erase<T, F>(op: F) -> (Erased, Slot<T>)
where
    F: FnOnce(&Tx<'_>) -> Result<T, DbError> + Send + 'static,
    T: Send + 'static,
{
    let slot = std::sync::Arc::new(std::sync::Mutex::new(None));
    let filled = slot.clone();
    let erased: Erased = Box::new(move |tx| {
        let value = op(tx)?;
        *filled.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(value);
        Ok(())
    });
    (erased, Slot(slot))
}

/// A PostgreSQL transaction as the executor sees it (`db/pg/`).
pub(in crate::db) trait PgSession {
    fn execute(&self, sql: &str, args: &[Value<'_>]) -> Result<usize, DbError>;
    fn query(&self, sql: &str, args: &[Value<'_>]) -> Result<Vec<postgres::Row>, DbError>;
}

/// One argument of a statement, borrowed from the caller. A NULL keeps the kind of
/// value it stands for, so that PostgreSQL can be told the parameter's type where it
/// cannot infer one (`lower(?1)`, `?1 IS NULL`).
#[derive(Debug, Clone, Copy)]
pub(in crate::db) enum Value<'v> {
    Null(Kind),
    Int(i64),
    Text(&'v str),
    Blob(&'v [u8]),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::db) enum Kind {
    Int,
    Text,
    Blob,
}

/// What may be passed as an argument; see `args!`.
pub(in crate::db) trait ToValue {
    fn value(&self) -> Value<'_>;
}

/// The kind of value a type binds as, known without a value (for `None`).
pub(in crate::db) trait Typed {
    const KIND: Kind;
}

/// The argument list of a statement: `args![a, b]` borrows each as a `ToValue`.
macro_rules! args {
    () => { &[] as &[&dyn $crate::db::sql::ToValue] };
    ($($v:expr),+ $(,)?) => { &[$(&$v as &dyn $crate::db::sql::ToValue),+] as &[&dyn $crate::db::sql::ToValue] };
}
pub(in crate::db) use args;

macro_rules! int_value {
    ($($t:ty),*) => {$(
        impl ToValue for $t {
            fn value(&self) -> Value<'_> {
                // Limits and offsets beyond i64 mean "all of them".
                Value::Int(i64::try_from(*self).unwrap_or(i64::MAX))
            }
        }
        impl Typed for $t {
            const KIND: Kind = Kind::Int;
        }
    )*};
}
int_value!(i64, i32, u32, usize);

impl ToValue for bool {
    fn value(&self) -> Value<'_> {
        Value::Int(i64::from(*self))
    }
}
impl Typed for bool {
    const KIND: Kind = Kind::Int;
}
impl ToValue for str {
    fn value(&self) -> Value<'_> {
        Value::Text(self)
    }
}
impl Typed for str {
    const KIND: Kind = Kind::Text;
}
impl ToValue for String {
    fn value(&self) -> Value<'_> {
        Value::Text(self)
    }
}
impl Typed for String {
    const KIND: Kind = Kind::Text;
}
impl ToValue for [u8] {
    fn value(&self) -> Value<'_> {
        Value::Blob(self)
    }
}
impl Typed for [u8] {
    const KIND: Kind = Kind::Blob;
}
impl ToValue for Vec<u8> {
    fn value(&self) -> Value<'_> {
        Value::Blob(self)
    }
}
impl Typed for Vec<u8> {
    const KIND: Kind = Kind::Blob;
}
impl<const N: usize> ToValue for [u8; N] {
    fn value(&self) -> Value<'_> {
        Value::Blob(self)
    }
}
impl<const N: usize> Typed for [u8; N] {
    const KIND: Kind = Kind::Blob;
}
impl<T: ToValue + Typed> ToValue for Option<T> {
    fn value(&self) -> Value<'_> {
        match self {
            Some(v) => v.value(),
            None => Value::Null(T::KIND),
        }
    }
}
impl<T: ToValue + ?Sized> ToValue for &T {
    fn value(&self) -> Value<'_> {
        (**self).value()
    }
}
impl<T: Typed + ?Sized> Typed for &T {
    const KIND: Kind = T::KIND;
}

/// A column type a result may be read as, from either engine. Flags are integers 0/1
/// in both schemas and a boolean expression is `BOOLEAN` in PostgreSQL: `bool` reads
/// either, as an integer type reads any of PostgreSQL's integer widths.
pub(in crate::db) trait Column: Sized {
    fn from_sqlite(row: &rusqlite::Row<'_>, index: usize) -> Result<Self, DbError>;
    fn from_pg(row: &postgres::Row, index: usize) -> Result<Self, DbError>;
}

fn pg_type_error(row: &postgres::Row, index: usize, wanted: &str) -> DbError {
    let found = row
        .columns()
        .get(index)
        .map(|c| c.type_().to_string())
        .unwrap_or_default();
    DbError::Corrupt(format!("column {index} is {found}, not {wanted}"))
}

/// Text and bytes read the same from both engines.
macro_rules! column_as_stored {
    ($t:ty) => {
        impl Column for $t {
            fn from_sqlite(row: &rusqlite::Row<'_>, index: usize) -> Result<Self, DbError> {
                Ok(row.get(index)?)
            }
            fn from_pg(row: &postgres::Row, index: usize) -> Result<Self, DbError> {
                Ok(row.try_get(index)?)
            }
        }
        impl Column for Option<$t> {
            fn from_sqlite(row: &rusqlite::Row<'_>, index: usize) -> Result<Self, DbError> {
                Ok(row.get(index)?)
            }
            fn from_pg(row: &postgres::Row, index: usize) -> Result<Self, DbError> {
                Ok(row.try_get(index)?)
            }
        }
    };
}
column_as_stored!(String);
column_as_stored!(Vec<u8>);

fn pg_int(row: &postgres::Row, index: usize) -> Result<Option<i64>, DbError> {
    use postgres::types::Type;
    let ty = row.columns().get(index).map(|c| c.type_().clone());
    Ok(match ty {
        Some(Type::INT8) => row.try_get::<_, Option<i64>>(index)?,
        Some(Type::INT4) => row.try_get::<_, Option<i32>>(index)?.map(i64::from),
        Some(Type::INT2) => row.try_get::<_, Option<i16>>(index)?.map(i64::from),
        Some(Type::BOOL) => row.try_get::<_, Option<bool>>(index)?.map(i64::from),
        _ => return Err(pg_type_error(row, index, "an integer")),
    })
}

/// Integers of any width the value fits (sign counts are `u32`, sizes `usize`).
macro_rules! column_int {
    ($t:ty) => {
        impl Column for Option<$t> {
            fn from_sqlite(row: &rusqlite::Row<'_>, index: usize) -> Result<Self, DbError> {
                Ok(row.get(index)?)
            }
            fn from_pg(row: &postgres::Row, index: usize) -> Result<Self, DbError> {
                pg_int(row, index)?
                    .map(|i| <$t>::try_from(i).map_err(|_| pg_type_error(row, index, stringify!($t))))
                    .transpose()
            }
        }
        impl Column for $t {
            fn from_sqlite(row: &rusqlite::Row<'_>, index: usize) -> Result<Self, DbError> {
                Ok(row.get(index)?)
            }
            fn from_pg(row: &postgres::Row, index: usize) -> Result<Self, DbError> {
                <Option<$t>>::from_pg(row, index)?.ok_or_else(|| pg_type_error(row, index, "a value"))
            }
        }
    };
}
column_int!(i64);
column_int!(i32);
column_int!(u32);

impl Column for Option<bool> {
    fn from_sqlite(row: &rusqlite::Row<'_>, index: usize) -> Result<Self, DbError> {
        Ok(row.get(index)?)
    }
    fn from_pg(row: &postgres::Row, index: usize) -> Result<Self, DbError> {
        Ok(pg_int(row, index)?.map(|i| i != 0))
    }
}

impl Column for bool {
    fn from_sqlite(row: &rusqlite::Row<'_>, index: usize) -> Result<Self, DbError> {
        Ok(row.get(index)?)
    }
    fn from_pg(row: &postgres::Row, index: usize) -> Result<Self, DbError> {
        <Option<bool>>::from_pg(row, index)?.ok_or_else(|| pg_type_error(row, index, "a flag"))
    }
}

/// One result row, read by column index.
pub(in crate::db) struct Row<'r> {
    inner: RowInner<'r>,
}

enum RowInner<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
    Postgres(&'r postgres::Row),
}

impl Row<'_> {
    pub(in crate::db) fn get<T: Column>(&self, index: usize) -> Result<T, DbError> {
        match self.inner {
            RowInner::Sqlite(r) => T::from_sqlite(r, index),
            RowInner::Postgres(r) => T::from_pg(r, index),
        }
    }
}

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match *self {
            Value::Null(_) => ValueRef::Null,
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
            #[cfg(any(test, feature = "testing"))]
            tap: None,
        }
    }

    pub(in crate::db) fn postgres(session: &'a dyn PgSession) -> Self {
        Self {
            engine: Engine::Postgres(session),
            #[cfg(any(test, feature = "testing"))]
            tap: None,
        }
    }

    /// This transaction, noting each statement's text (whitespace folded) in `log`.
    #[cfg(any(test, feature = "testing"))]
    pub(in crate::db) fn tapped<'b>(&self, log: &'b std::cell::RefCell<Vec<String>>) -> Tx<'b>
    where
        'a: 'b,
    {
        Tx {
            engine: self.engine,
            tap: Some(log),
        }
    }

    #[cfg(any(test, feature = "testing"))]
    fn note(&self, sql: &str) {
        if let Some(log) = self.tap {
            log.borrow_mut()
                .push(sql.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }

    #[cfg(not(any(test, feature = "testing")))]
    fn note(&self, _sql: &str) {}

    /// Whether every write transaction runs alone (SQLite's one writer), so that a
    /// row lock taken only to order concurrent writers can be skipped.
    pub(in crate::db) fn writes_one_at_a_time(&self) -> bool {
        matches!(self.engine, Engine::Sqlite(_))
    }

    fn values<'v>(args: &'v [&'v dyn ToValue]) -> Vec<Value<'v>> {
        args.iter().map(|a| a.value()).collect()
    }

    /// The SQLite connection, for the engine's own operations (migrations, backups,
    /// integrity checks) in `db/sqlite/`.
    #[cfg(any(test, feature = "testing"))]
    pub(in crate::db) fn sqlite_connection(&self) -> Option<&'a rusqlite::Connection> {
        match self.engine {
            Engine::Sqlite(c) => Some(c),
            Engine::Postgres(_) => None,
        }
    }

    /// Runs a statement; the number of rows it changed.
    pub(in crate::db) fn exec(&self, sql: &str, args: &[&dyn ToValue]) -> Result<usize, DbError> {
        self.note(sql);
        match self.engine {
            Engine::Sqlite(c) => Ok(c.prepare_cached(sql)?.execute(bind(args))?),
            Engine::Postgres(s) => s.execute(sql, &Self::values(args)),
        }
    }

    /// The first row, if there is one.
    pub(in crate::db) fn row<T>(
        &self,
        sql: &str,
        args: &[&dyn ToValue],
        read: impl FnOnce(&Row<'_>) -> Result<T, DbError>,
    ) -> Result<Option<T>, DbError> {
        self.note(sql);
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
            Engine::Postgres(s) => match s.query(sql, &Self::values(args))?.first() {
                Some(r) => Ok(Some(read(&Row {
                    inner: RowInner::Postgres(r),
                })?)),
                None => Ok(None),
            },
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
        self.note(sql);
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
            Engine::Postgres(s) => s
                .query(sql, &Self::values(args))?
                .iter()
                .map(|r| {
                    read(&Row {
                        inner: RowInner::Postgres(r),
                    })
                })
                .collect(),
        }
    }
}
