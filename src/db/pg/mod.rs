//! The PostgreSQL engine: a bounded pool of connections, one transaction per `Db::read`
//! or `Db::write` on a blocking thread (the `postgres` client blocks), statements
//! prepared once per connection, and migrations under an advisory lock so that nodes
//! starting together apply each one once. The only place, with `sql.rs`, that uses the
//! `postgres` crate.

mod connect;
pub(super) mod migrations;
mod outage;
mod params;

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use postgres::error::SqlState;
use postgres::types::{ToSql, Type};

use super::sql::{Kind, PgSession, Value};
use super::{DbError, Tx};
use outage::Connections;
use params::placeholders;

use super::outage::{self as runs, Burst, Report};

pub use connect::Target;

/// How long a request waits for a connection before it is told to come back later.
const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether an error means the database is unreachable or overloaded rather than the
/// request wrong: answered as "busy" (503 with `Retry-After`), and the next request
/// tries again. Serialization failures and deadlocks (SQLSTATE 40001, 40P01) are
/// transient too.
fn transient(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.code() {
        Some(c) => {
            *c == SqlState::T_R_SERIALIZATION_FAILURE
                || *c == SqlState::T_R_DEADLOCK_DETECTED
                || *c == SqlState::ADMIN_SHUTDOWN
                || *c == SqlState::CANNOT_CONNECT_NOW
                || *c == SqlState::TOO_MANY_CONNECTIONS
                || c.code().starts_with("08")
        }
        // No SQLSTATE: the socket failed (refused, reset, timed out).
        None => true,
    }
}

/// Operations that failed because the database went away mid-way (see `outage`).
static IN_FLIGHT: std::sync::LazyLock<Burst> = std::sync::LazyLock::new(Burst::default);

impl From<postgres::Error> for DbError {
    fn from(e: postgres::Error) -> Self {
        if e.code() == Some(&SqlState::UNIQUE_VIOLATION)
            || e.code() == Some(&SqlState::FOREIGN_KEY_VIOLATION)
            || e.code() == Some(&SqlState::RESTRICT_VIOLATION)
        {
            return DbError::Conflict;
        }
        if e.code() == Some(&SqlState::DISK_FULL) {
            return runs::disk_full(&e);
        }
        if transient(&e) {
            // Each operation cut off by an outage fails here, one per pooled
            // connection at least: said once per run, like the pool's failures.
            match IN_FLIGHT.failed() {
                Report::First => tracing::warn!(error = %e, "PostgreSQL is unavailable"),
                Report::Again { count, lasting } => tracing::warn!(
                    error = %e,
                    failed = count,
                    for_s = lasting.as_secs(),
                    "PostgreSQL is still unavailable"
                ),
                Report::Quiet => tracing::debug!(error = %e, "PostgreSQL is unavailable"),
            }
            return DbError::Busy;
        }
        // postgres::Error's Display is just "db error": the server's own words say why.
        match e.as_db_error() {
            Some(d) => DbError::Engine(format!("PostgreSQL {}: {}", d.code().code(), d.message()).into()),
            None => DbError::Engine(Box::new(e)),
        }
    }
}

/// One pooled connection and the statements prepared on it.
pub(super) struct PgConn {
    /// Always `Some` until the connection is dropped.
    client: Option<postgres::Client>,
    statements: HashMap<String, postgres::Statement>,
    /// When the connection last went back to the pool.
    idle_since: std::time::Instant,
}

impl PgConn {
    fn parts(&mut self) -> Result<(&mut postgres::Client, &mut HashMap<String, postgres::Statement>), DbError> {
        match self.client.as_mut() {
            Some(c) => Ok((c, &mut self.statements)),
            None => Err(DbError::Busy),
        }
    }
}

/// Closing a client blocks on its own runtime, which panics on an async thread (a
/// pool dropped when a command ends): whatever thread drops a connection, the close
/// happens on a thread of its own.
impl Drop for PgConn {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            let _ = std::thread::Builder::new()
                .name("pg-close".into())
                .spawn(move || drop(client));
        }
    }
}

/// How long after its last use a pooled connection is trusted without a check.
const TRUST_RECENT: Duration = Duration::from_secs(1);

pub(super) struct Manager {
    target: Target,
}

impl r2d2::ManageConnection for Manager {
    type Connection = PgConn;
    type Error = postgres::Error;

    fn connect(&self) -> Result<PgConn, postgres::Error> {
        Ok(PgConn {
            client: Some(self.target.connect()?),
            statements: HashMap::new(),
            idle_since: std::time::Instant::now(),
        })
    }

    /// Checked at checkout: a connection that was in use moments ago is taken as it
    /// is, since a round trip to prove it would cost a busy node as much as the
    /// statement it is checked out for (an introspection is one); one idle longer
    /// is asked an empty query first. A connection that breaks meanwhile fails its
    /// operation as "busy", and `has_broken` drops it when it comes back.
    fn is_valid(&self, conn: &mut PgConn) -> Result<(), postgres::Error> {
        if conn.idle_since.elapsed() < TRUST_RECENT {
            return Ok(());
        }
        match conn.client.as_mut() {
            Some(c) => c.simple_query("").map(drop),
            None => Ok(()),
        }
    }

    /// Called as a connection comes back to the pool, which is when its idle time
    /// starts.
    fn has_broken(&self, conn: &mut PgConn) -> bool {
        conn.idle_since = std::time::Instant::now();
        conn.client.as_ref().is_none_or(|c| c.is_closed())
    }
}

#[derive(Clone)]
pub(super) struct Postgres {
    pool: r2d2::Pool<Manager>,
    /// Requests that found no connection in time: logged once per run (see `outage`).
    turned_away: Arc<Burst>,
    /// The same requests, counted for `/metrics`.
    busy_total: Arc<std::sync::atomic::AtomicU64>,
}

/// The pool as `/metrics` shows it.
#[derive(Debug, Clone, Copy)]
pub struct PoolStats {
    pub max: u32,
    pub open: u32,
    pub idle: u32,
    /// Operations answered "busy" because no connection came in time.
    pub busy_total: u64,
}

impl Postgres {
    /// Connects (the pool keeps at most `pool_size` connections) and, unless told
    /// not to, applies the migrations.
    pub(super) fn open(target: Target, pool_size: u32, migrate: bool) -> Result<Self, DbError> {
        let connections = Connections::default();
        let pool = r2d2::Pool::builder()
            .max_size(pool_size.max(1))
            .min_idle(Some(1))
            .connection_timeout(CHECKOUT_TIMEOUT)
            .error_handler(Box::new(connections.clone()))
            .event_handler(Box::new(connections))
            // Connections are made on demand: one that breaks later is replaced, and
            // requests answer "busy" while the database is down (the caller checks
            // once at start that it is there).
            .build_unchecked(Manager { target });
        let db = Self {
            pool,
            turned_away: Arc::default(),
            busy_total: Arc::default(),
        };
        if migrate {
            db.migrate()?;
        }
        Ok(db)
    }

    /// A connection within `CHECKOUT_TIMEOUT`, else `Busy`: a request waits a bounded
    /// time whether the database is down or every connection is taken.
    fn checkout(&self) -> Result<r2d2::PooledConnection<Manager>, DbError> {
        match self.pool.get() {
            Ok(conn) => {
                if let Some((count, lasting)) = self.turned_away.ended() {
                    tracing::info!(
                        refused = count,
                        for_s = lasting.as_secs(),
                        "PostgreSQL connections are available again"
                    );
                }
                Ok(conn)
            }
            Err(error) => {
                self.busy_total.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let wait_s = CHECKOUT_TIMEOUT.as_secs();
                match self.turned_away.failed() {
                    Report::First => {
                        tracing::warn!(%error, wait_s, "no PostgreSQL connection in time; answering busy")
                    }
                    Report::Again { count, lasting } => tracing::warn!(
                        %error,
                        refused = count,
                        for_s = lasting.as_secs(),
                        "still no PostgreSQL connection; answering busy"
                    ),
                    Report::Quiet => tracing::debug!(%error, "no PostgreSQL connection in time"),
                }
                Err(DbError::Busy)
            }
        }
    }

    pub(super) fn pool_stats(&self) -> PoolStats {
        let state = self.pool.state();
        PoolStats {
            max: self.pool.max_size(),
            open: state.connections,
            idle: state.idle_connections,
            busy_total: self.busy_total.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Applies every migration this binary knows that the database lacks.
    pub(super) fn migrate(&self) -> Result<(), DbError> {
        let mut conn = self.checkout()?;
        migrations::apply(conn.parts()?.0)
    }

    /// Runs `op` on a pooled connection, on a blocking thread: a write in one READ
    /// COMMITTED transaction; a read statement by statement, each seeing what was
    /// committed when it started (as SQLite's reads do), which spares a read the
    /// BEGIN and COMMIT round trips (two of the three a one-statement read would
    /// take); a snapshot read in one REPEATABLE READ READ ONLY transaction.
    fn run<T, F>(&self, mode: Mode, op: F) -> Result<T, DbError>
    where
        F: FnOnce(&Tx<'_>) -> Result<T, DbError>,
    {
        let mut conn = self.checkout()?;
        let (client, statements) = conn.parts()?;
        let conn = match mode {
            Mode::Read => Conn::Auto(client),
            Mode::Write => Conn::Txn(client.transaction()?),
            Mode::Snapshot => Conn::Txn(
                client
                    .build_transaction()
                    .read_only(true)
                    .isolation_level(postgres::IsolationLevel::RepeatableRead)
                    .start()?,
            ),
        };
        let session = Session {
            inner: RefCell::new(Inner { conn, statements }),
        };
        let out = op(&Tx::postgres(&session))?;
        if let Conn::Txn(txn) = session.inner.into_inner().conn {
            txn.commit()?;
        }
        // A success ends a run of failed operations (its end is the pool's to say).
        let _ = IN_FLIGHT.ended();
        if matches!(mode, Mode::Write) {
            runs::wrote();
        }
        Ok(out)
    }

    pub(super) async fn read<T, F>(&self, op: F) -> Result<T, DbError>
    where
        F: FnOnce(&Tx<'_>) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        self.blocking(Mode::Read, op).await
    }

    /// A read whose statements all see one snapshot (`tessera export`).
    pub(super) async fn read_snapshot<T, F>(&self, op: F) -> Result<T, DbError>
    where
        F: FnOnce(&Tx<'_>) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        self.blocking(Mode::Snapshot, op).await
    }

    pub(super) async fn write<T, F>(&self, op: F) -> Result<T, DbError>
    where
        F: FnOnce(&Tx<'_>) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        self.blocking(Mode::Write, op).await
    }

    /// Runs `op` on a blocking thread, erased (`sql::erase`): one task type for them all.
    async fn blocking<T, F>(&self, mode: Mode, op: F) -> Result<T, DbError>
    where
        F: FnOnce(&Tx<'_>) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        let (op, slot) = crate::db::sql::erase(op);
        self.spawn_erased(mode, op).await?;
        slot.take()
    }

    async fn spawn_erased(&self, mode: Mode, op: crate::db::sql::Erased) -> Result<(), DbError> {
        let db = self.clone();
        tokio::task::spawn_blocking(move || db.run(mode, op))
            .await
            .map_err(|_| DbError::Panicked)?
    }

    /// Schema version and constraint checks for `tessera check`.
    pub(super) fn check(&self) -> Result<Vec<String>, DbError> {
        let mut conn = self.checkout()?;
        migrations::check(conn.parts()?.0)
    }
}

/// After an import inserted rows with their own ids: every identity (or serial) column
/// of the schema gets its sequence moved past the largest id, so that the next row the
/// database numbers does not collide with an imported one. Read from the catalog, so a
/// later migration's identity is covered without a list to keep.
pub(super) fn after_import(tx: &Tx<'_>) -> Result<(), DbError> {
    let columns = tx.rows(
        "SELECT table_name::text, column_name::text FROM information_schema.columns \
         WHERE table_schema = current_schema() \
           AND (is_identity = 'YES' OR column_default LIKE 'nextval(%') \
         ORDER BY 1, 2",
        super::sql::args![],
        |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?)),
    )?;
    for (table, column) in columns {
        let quote = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
        // Next value max + 1 and not yet called: an empty table starts at 1.
        let sql = format!(
            "SELECT setval(pg_get_serial_sequence(format('%I.%I', current_schema(), ?1), ?2), \
             COALESCE((SELECT MAX({c}) FROM {t}), 0) + 1, false)",
            c = quote(&column),
            t = quote(&table),
        );
        tx.one(&sql, super::sql::args![table, column], |r| r.get::<i64>(0))?;
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Mode {
    Read,
    Snapshot,
    Write,
}

/// Where a session's statements go: a transaction, or the connection itself (each
/// statement its own transaction).
enum Conn<'c> {
    Txn(postgres::Transaction<'c>),
    Auto(&'c mut postgres::Client),
}

type Params<'a> = [&'a (dyn ToSql + Sync)];

impl Conn<'_> {
    fn prepare_typed(&mut self, sql: &str, types: &[Type]) -> Result<postgres::Statement, postgres::Error> {
        match self {
            Conn::Txn(t) => t.prepare_typed(sql, types),
            Conn::Auto(c) => c.prepare_typed(sql, types),
        }
    }

    fn execute(&mut self, stmt: &postgres::Statement, params: &Params<'_>) -> Result<u64, postgres::Error> {
        match self {
            Conn::Txn(t) => t.execute(stmt, params),
            Conn::Auto(c) => c.execute(stmt, params),
        }
    }

    fn query(
        &mut self,
        stmt: &postgres::Statement,
        params: &Params<'_>,
    ) -> Result<Vec<postgres::Row>, postgres::Error> {
        match self {
            Conn::Txn(t) => t.query(stmt, params),
            Conn::Auto(c) => c.query(stmt, params),
        }
    }
}

struct Inner<'c> {
    conn: Conn<'c>,
    statements: &'c mut HashMap<String, postgres::Statement>,
}

/// The transaction behind a `Tx`: interior mutability because `Tx` is shared (`&`)
/// while the client needs `&mut` for each statement.
pub(super) struct Session<'c> {
    inner: RefCell<Inner<'c>>,
}

impl Inner<'_> {
    /// The statement prepared for `sql` on this connection. Its parameter types are
    /// declared from the first call's arguments (a call site always passes the same
    /// kinds), so that a parameter PostgreSQL cannot infer by itself — `lower(?1)`,
    /// `?1 IS NULL` — still gets one (a NULL carries the kind it stands for).
    fn statement(&mut self, sql: &str, args: &[Value<'_>]) -> Result<postgres::Statement, DbError> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let types: Vec<Type> = args
            .iter()
            .map(|a| match a {
                Value::Int(_) | Value::Null(Kind::Int) => Type::INT8,
                Value::Text(_) | Value::Null(Kind::Text) => Type::TEXT,
                Value::Blob(_) | Value::Null(Kind::Blob) => Type::BYTEA,
            })
            .collect();
        let s = self.conn.prepare_typed(&placeholders(sql), &types)?;
        self.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }
}

impl PgSession for Session<'_> {
    fn execute(&self, sql: &str, args: &[Value<'_>]) -> Result<usize, DbError> {
        let mut inner = self.inner.borrow_mut();
        let stmt = inner.statement(sql, args)?;
        let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a as &(dyn ToSql + Sync)).collect();
        let n = inner.conn.execute(&stmt, &params)?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn query(&self, sql: &str, args: &[Value<'_>]) -> Result<Vec<postgres::Row>, DbError> {
        let mut inner = self.inner.borrow_mut();
        let stmt = inner.statement(sql, args)?;
        let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a as &(dyn ToSql + Sync)).collect();
        Ok(inner.conn.query(&stmt, &params)?)
    }
}

/// For the integration tests (`db::testing`): statements outside any `Db`, to make the
/// schema each test runs in.
#[cfg(any(test, feature = "testing"))]
pub(super) mod testing {
    use super::*;

    /// Runs `sql` (several statements allowed) on a fresh connection to `url`.
    pub fn batch(url: &str, sql: &str) -> Result<(), DbError> {
        let target = Target::parse(url).map_err(DbError::Open)?;
        let sql = sql.to_string();
        std::thread::spawn(move || -> Result<(), DbError> {
            let mut client = target.connect()?;
            client.batch_execute(&sql)?;
            Ok(())
        })
        .join()
        .map_err(|_| DbError::Panicked)?
    }
}
