//! `tessera export` and `tessera import`: the whole database as one versioned JSON
//! document, the same whichever engine wrote it, so that a deployment moves from SQLite
//! to PostgreSQL (or back) with its users, clients, keys and live grants.
//!
//! The document (version 1):
//!
//! ```json
//! {"format":"tessera-export","version":1,"exported_at":1700000000,
//!  "tables":{"users":{"columns":["id","sub",…],"rows":[[1,"…",…],…]},…}}
//! ```
//!
//! Tables appear parents first. A value is a JSON number (integers, and flags as 0/1),
//! a string (text; byte strings — digests, secrets — in standard base64 with padding,
//! RFC 4648 §4) or `null`. Rows are exported as stored: password hashes, hashed client
//! secrets and signing keys sealed with the master key stay as they are, so the target
//! needs the same master key, and the file needs the care of a backup.
//!
//! An import takes a file's columns by name: a column the file lacks (an export from
//! an older Tessera) gets the schema's default, while a table or column this binary
//! does not know is refused, since its data would be lost silently.

mod tables;
#[cfg(test)]
pub(super) mod tests;

use std::collections::{BTreeMap, HashSet};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value as Json;

use super::sql::{args, Kind, ToValue, Value};
use super::{DbError, Tx};
use tables::{Table, SKIPPED, TABLES};

/// What the `format` field says, so that no other JSON is taken for an export.
pub const FORMAT: &str = "tessera-export";
/// The document's layout; a change that an older reader would misread bumps it.
pub const VERSION: i64 = 1;

/// Why an export cannot be imported, in one line each.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// The file is not an export this binary reads.
    #[error("{0}")]
    Invalid(String),
    #[error("the target database is not empty ({0} has rows); import only into a new database no node has started on")]
    NotEmpty(&'static str),
    #[error(transparent)]
    Db(#[from] DbError),
}

/// What an import loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Imported {
    pub tables: usize,
    pub rows: usize,
}

/// One table of the document: column names, and rows of values in that order.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableData {
    columns: Vec<String>,
    rows: Vec<Vec<Json>>,
}

/// A whole export, as read from a database or parsed from a file.
#[derive(Debug)]
pub struct Export {
    exported_at: i64,
    tables: Vec<(String, TableData)>,
}

/// The fields that say whether a file is an export at all, read before the rest so that
/// another version's layout is refused as such rather than as malformed.
#[derive(Deserialize)]
struct Header {
    format: Option<Json>,
    version: Option<Json>,
}

/// The whole document; `format` and `version` were checked on the header.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    #[serde(rename = "format")]
    _format: String,
    #[serde(rename = "version")]
    _version: i64,
    exported_at: i64,
    tables: BTreeMap<String, TableData>,
}

impl Export {
    /// Reads a document, refusing anything but a version-1 Tessera export.
    pub fn parse(text: &str) -> Result<Self, TransferError> {
        let invalid = |m: String| TransferError::Invalid(m);
        let header: Header = serde_json::from_str(text)
            .map_err(|e| invalid(format!("not a Tessera export (not a JSON object: {e})")))?;
        if header.format.as_ref().and_then(Json::as_str) != Some(FORMAT) {
            return Err(invalid(format!("not a Tessera export (no \"format\": \"{FORMAT}\")")));
        }
        match header.version.as_ref().and_then(Json::as_i64) {
            Some(VERSION) => {}
            Some(v) => {
                return Err(invalid(format!(
                    "export version {v} is not one this Tessera reads (version {VERSION}); use the release that wrote it or a newer one"
                )))
            }
            None => return Err(invalid("the export has no integer \"version\"".into())),
        }
        let doc: Document =
            serde_json::from_str(text).map_err(|e| invalid(format!("malformed Tessera export: {e}")))?;
        Ok(Self {
            exported_at: doc.exported_at,
            tables: doc.tables.into_iter().collect(),
        })
    }

    /// Writes the document as compact JSON.
    pub fn to_writer(&self, out: impl std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer(out, self).map_err(std::io::Error::from)
    }

    pub fn table_count(&self) -> usize {
        self.tables.len()
    }

    pub fn row_count(&self) -> usize {
        self.tables.iter().map(|(_, t)| t.rows.len()).sum()
    }

    /// The rows to insert, checked against the table list and converted to typed
    /// values, in insertion order: every problem of the file is found before a
    /// database is opened.
    pub fn prepare(self) -> Result<Prepared, TransferError> {
        let mut given: BTreeMap<String, TableData> = self.tables.into_iter().collect();
        let mut loads = Vec::new();
        for table in TABLES {
            if let Some(data) = given.remove(table.name) {
                loads.push(Load::new(table, data)?);
            }
        }
        if let Some(name) = given.keys().next() {
            let why = if SKIPPED.contains(&name.as_str()) {
                "is never exported"
            } else {
                "is not one this Tessera knows"
            };
            return Err(TransferError::Invalid(format!("table {name} {why}")));
        }
        Ok(Prepared(loads))
    }
}

/// Tables in foreign-key order rather than the alphabetical order of a map.
impl Serialize for Export {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Tables<'a>(&'a [(String, TableData)]);
        impl Serialize for Tables<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(self.0.len()))?;
                for (name, data) in self.0 {
                    map.serialize_entry(name, data)?;
                }
                map.end()
            }
        }
        let mut doc = s.serialize_map(Some(4))?;
        doc.serialize_entry("format", FORMAT)?;
        doc.serialize_entry("version", &VERSION)?;
        doc.serialize_entry("exported_at", &self.exported_at)?;
        doc.serialize_entry("tables", &Tables(&self.tables))?;
        doc.end()
    }
}

/// An identifier quoted for either engine (`interval` is reserved in PostgreSQL).
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Every exported table, read on one snapshot (the caller's read transaction).
pub(super) fn export(tx: &Tx<'_>, exported_at: i64) -> Result<Export, DbError> {
    let tables = TABLES
        .iter()
        .map(|t| Ok((t.name.to_string(), read_table(tx, t)?)))
        .collect::<Result<_, DbError>>()?;
    Ok(Export { exported_at, tables })
}

fn read_table(tx: &Tx<'_>, table: &Table) -> Result<TableData, DbError> {
    let names: Vec<&str> = table.columns.iter().map(|(n, _)| *n).collect();
    let list = names.iter().map(|n| quoted(n)).collect::<Vec<_>>().join(", ");
    // Ordered by every column, so that the same database always exports the same file.
    let order = (1..=names.len()).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    let sql = format!("SELECT {list} FROM {} ORDER BY {order}", quoted(table.name));
    let rows = tx.rows(&sql, args![], |r| {
        table
            .columns
            .iter()
            .enumerate()
            .map(|(i, (_, kind))| {
                Ok(match kind {
                    Kind::Int => r.get::<Option<i64>>(i)?.map_or(Json::Null, Json::from),
                    Kind::Text => r.get::<Option<String>>(i)?.map_or(Json::Null, Json::from),
                    Kind::Blob => r
                        .get::<Option<Vec<u8>>>(i)?
                        .map_or(Json::Null, |b| Json::from(BASE64.encode(b))),
                })
            })
            .collect()
    })?;
    Ok(TableData {
        columns: names.iter().map(|n| n.to_string()).collect(),
        rows,
    })
}

/// One value to insert, owned, with the kind a NULL stands for.
enum Datum {
    Null(Kind),
    Int(i64),
    Text(String),
    Blob(Vec<u8>),
}

impl ToValue for Datum {
    fn value(&self) -> Value<'_> {
        match self {
            Datum::Null(kind) => Value::Null(*kind),
            Datum::Int(i) => Value::Int(*i),
            Datum::Text(s) => Value::Text(s),
            Datum::Blob(b) => Value::Blob(b),
        }
    }
}

fn datum(value: Json, kind: Kind) -> Result<Datum, &'static str> {
    match (value, kind) {
        (Json::Null, kind) => Ok(Datum::Null(kind)),
        (Json::Number(n), Kind::Int) => n.as_i64().map(Datum::Int).ok_or("a 64-bit integer"),
        (Json::String(s), Kind::Text) => Ok(Datum::Text(s)),
        (Json::String(s), Kind::Blob) => BASE64
            .decode(s)
            .map(Datum::Blob)
            .map_err(|_| "base64 (standard, padded)"),
        (_, Kind::Int) => Err("an integer"),
        (_, Kind::Text) => Err("a string"),
        (_, Kind::Blob) => Err("a base64 string"),
    }
}

/// An export checked against the table list, ready for `Db::import`.
pub struct Prepared(pub(super) Vec<Load>);

/// One table's rows, ready to insert.
pub(super) struct Load {
    table: &'static str,
    insert: String,
    rows: Vec<Vec<Datum>>,
}

impl Load {
    fn new(table: &'static Table, data: TableData) -> Result<Self, TransferError> {
        let invalid = |m: String| TransferError::Invalid(format!("table {}: {m}", table.name));
        let mut seen = HashSet::new();
        let mut kinds = Vec::with_capacity(data.columns.len());
        for name in &data.columns {
            let kind = table
                .columns
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, k)| *k)
                .ok_or_else(|| invalid(format!("column {name} is not one this Tessera knows")))?;
            if !seen.insert(name.as_str()) {
                return Err(invalid(format!("column {name} appears twice")));
            }
            kinds.push(kind);
        }
        if kinds.is_empty() {
            return Err(invalid("no columns".into()));
        }
        let rows = data
            .rows
            .into_iter()
            .enumerate()
            .map(|(n, row)| {
                if row.len() != kinds.len() {
                    return Err(invalid(format!(
                        "row {}: {} values for {} columns",
                        n + 1,
                        row.len(),
                        kinds.len()
                    )));
                }
                row.into_iter()
                    .zip(&kinds)
                    .zip(&data.columns)
                    .map(|((v, kind), column)| {
                        datum(v, *kind)
                            .map_err(|want| invalid(format!("row {}, column {column}: expected {want}", n + 1)))
                    })
                    .collect()
            })
            .collect::<Result<_, _>>()?;
        let list = data.columns.iter().map(|c| quoted(c)).collect::<Vec<_>>().join(", ");
        let params = (1..=kinds.len())
            .map(|i| format!("?{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        Ok(Self {
            table: table.name,
            insert: format!("INSERT INTO {} ({list}) VALUES ({params})", quoted(table.name)),
            rows,
        })
    }
}

/// Where an insert failed: the row of the file, numbered from 1.
#[derive(Debug, thiserror::Error)]
#[error("table {table}, row {row}: {reason}")]
struct RowError {
    table: &'static str,
    row: usize,
    reason: String,
}

/// Loads the rows into an empty database, in the caller's one write transaction, then
/// runs the engine's `finish` (PostgreSQL moves its identity sequences past the
/// imported ids). A non-empty target is refused before anything is written; an insert
/// that fails is an error, which rolls back everything.
pub(super) fn import(
    tx: &Tx<'_>,
    loads: &[Load],
    finish: fn(&Tx<'_>) -> Result<(), DbError>,
) -> Result<Result<Imported, &'static str>, DbError> {
    for table in TABLES {
        let sql = format!("SELECT 1 FROM {} LIMIT 1", quoted(table.name));
        if tx.row(&sql, args![], |_| Ok(()))?.is_some() {
            // A refusal as an `Ok`: nothing has been written, so committing is moot.
            return Ok(Err(table.name));
        }
    }
    let mut rows = 0;
    for load in loads {
        for (n, row) in load.rows.iter().enumerate() {
            let values: Vec<&dyn ToValue> = row.iter().map(|d| d as &dyn ToValue).collect();
            tx.exec(&load.insert, &values).map_err(|e| {
                let reason = match e {
                    // SQLite reports every constraint so; PostgreSQL keys and references.
                    DbError::Conflict => {
                        "violates a constraint (a duplicate key, a reference to a missing row or a missing value)"
                            .into()
                    }
                    other => other.to_string(),
                };
                DbError::Engine(Box::new(RowError {
                    table: load.table,
                    row: n + 1,
                    reason,
                }))
            })?;
        }
        rows += load.rows.len();
    }
    // An export made before usernames had skeletons carries none.
    super::users::fill_skeletons(tx)?;
    finish(tx)?;
    Ok(Ok(Imported {
        tables: loads.len(),
        rows,
    }))
}
