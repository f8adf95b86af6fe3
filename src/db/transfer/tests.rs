//! The table list against the migrated schemas, and exports read back on both engines.

use std::collections::{BTreeMap, BTreeSet};

/// A table's columns and their kinds (by name, since `Kind` has no order).
type Columns = BTreeMap<String, String>;

use super::*;
use crate::db::fresh::{postgres_db, sqlite_db};
use crate::db::Db;

fn listed() -> BTreeMap<String, Columns> {
    TABLES
        .iter()
        .map(|t| {
            let columns = t
                .columns
                .iter()
                .map(|(n, k)| (n.to_string(), format!("{k:?}")))
                .collect();
            (t.name.to_string(), columns)
        })
        .collect()
}

fn kind_of(declared: &str) -> Kind {
    match declared.to_ascii_lowercase().as_str() {
        "integer" | "bigint" => Kind::Int,
        "text" => Kind::Text,
        "blob" | "bytea" => Kind::Blob,
        other => panic!("a column of type {other}: add its kind to the export"),
    }
}

/// Compares what the schema has with `TABLES` + `SKIPPED`.
fn assert_matches(schema: Vec<(String, String, String)>) {
    let mut found: BTreeMap<String, Columns> = BTreeMap::new();
    for (table, column, declared) in schema {
        found
            .entry(table)
            .or_default()
            .insert(column, format!("{:?}", kind_of(&declared)));
    }
    for skipped in SKIPPED {
        assert!(
            found.remove(*skipped).is_some(),
            "{skipped} is skipped but no longer exists"
        );
    }
    let listed = listed();
    let names = |m: &BTreeMap<String, _>| m.keys().cloned().collect::<BTreeSet<_>>();
    assert_eq!(
        names(&found),
        names(&listed),
        "every table of the schema is in transfer::TABLES or transfer::SKIPPED"
    );
    for (table, columns) in &found {
        assert_eq!(columns, &listed[table], "the columns of {table} in transfer::TABLES");
    }
}

#[tokio::test]
async fn the_list_names_every_table_of_the_schema() {
    let (_dir, db) = sqlite_db();
    let schema = db
        .read(|tx| {
            tx.rows(
                "SELECT m.name, p.name, p.type FROM sqlite_master m, pragma_table_info(m.name) p \
                 WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'",
                args![],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
        })
        .await
        .unwrap();
    assert_matches(schema);
}

#[tokio::test]
async fn the_list_matches_the_postgresql_schema() {
    let Some(db) = postgres_db().await else { return };
    let schema = db
        .read(|tx| {
            tx.rows(
                // tessera_schema is the migrations' own record, as SQLite's user_version;
                // the target's migrations write it.
                "SELECT table_name::text, column_name::text, data_type::text FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name <> 'tessera_schema'",
                args![],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
        })
        .await
        .unwrap();
    assert_matches(schema);
}

/// Rows with the awkward cases: explicit ids with a gap, bytes, NULLs, a large
/// integer, text that needs escaping, a reserved word as a column.
async fn populate(db: &Db) {
    db.write(|tx| {
        for sql in [
            "INSERT INTO users (id, sub, username, password_hash, created_at, updated_at, claims, locked_until, skeleton) \
             VALUES (7, 's7', 'Ada', '$2b$04$hash', 1, 2, '{\"x\":\"é\\\"\"}', 9007199254740993, 'ada')",
            "INSERT INTO groups (id, name) VALUES (3, 'staff')",
            "INSERT INTO user_groups (user_id, group_id) VALUES (7, 3)",
            "INSERT INTO clients (client_id, name, secret_hash, redirect_uris, created_at, updated_at) \
             VALUES ('app', 'App', X'00FF10', '[\"http://a/cb\"]', 1, 1)",
            "INSERT INTO client_allowed_groups (client_id, group_id) VALUES ('app', 3)",
            "INSERT INTO server_secrets (name, value) VALUES ('log_key', X'0102')",
            "INSERT INTO device_codes (device_hash, user_code, client_id, scope, created_at, expires_at, \"interval\") \
             VALUES (X'AB', 'WXYZ', 'app', 'openid', 1, 2, 5)",
            "INSERT INTO audit_log (id, at, event) VALUES (40, 1, 'user.created')",
        ] {
            tx.exec(sql, args![])?;
        }
        Ok(())
    })
    .await
    .unwrap();
}

fn text_of(export: &Export) -> String {
    let mut out = Vec::new();
    export.to_writer(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// Exports `source`, imports the text into `target`, and checks that `target` exports
/// the same and numbers its next rows after the imported ones.
async fn round_trip(source: &Db, target: &Db) {
    let first = text_of(&source.export(100).await.unwrap());
    let imported = target
        .import(Export::parse(&first).unwrap().prepare().unwrap())
        .await
        .unwrap();
    assert_eq!(imported.tables, TABLES.len());
    assert_eq!(imported.rows, 8);
    let second = text_of(&target.export(100).await.unwrap());
    assert_eq!(first, second, "the target holds what the source held");

    let next = target
        .write(|tx| {
            let user = crate::db::users::insert(
                tx,
                &crate::db::users::NewUser {
                    sub: "s8",
                    username: "bea",
                    email: None,
                    name: None,
                    password_hash: "h",
                    is_admin: false,
                    now: 3,
                },
            )?;
            let audit = tx.one(
                "INSERT INTO audit_log (at, event) VALUES (2, 'x') RETURNING id",
                args![],
                |r| r.get::<i64>(0),
            )?;
            let group = tx.one("INSERT INTO groups (name) VALUES ('new') RETURNING id", args![], |r| {
                r.get::<i64>(0)
            })?;
            Ok((user, audit, group))
        })
        .await
        .unwrap();
    assert_eq!(next, (8, 41, 4), "new rows are numbered after the imported ids");
}

#[tokio::test]
async fn an_export_loads_into_an_empty_database_of_either_engine() {
    let (_a, source) = sqlite_db();
    populate(&source).await;
    let text = text_of(&source.export(100).await.unwrap());
    let doc: Json = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["format"], FORMAT);
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["exported_at"], 100);
    assert_eq!(
        doc["tables"]["clients"]["rows"][0][2], "AP8Q",
        "bytes are standard base64"
    );
    assert_eq!(doc["tables"]["users"]["rows"][0][13], 9007199254740993i64);
    assert_eq!(doc["tables"]["users"]["rows"][0][3], Json::Null);
    assert!(doc["tables"].get("job_leases").is_none());
    assert!(
        text.find("\"users\"").unwrap() < text.find("\"audit_log\"").unwrap(),
        "tables appear parents first"
    );

    let (_b, target) = sqlite_db();
    round_trip(&source, &target).await;
    if let Some(target) = postgres_db().await {
        round_trip(&source, &target).await;
    }
}

/// An export made before usernames had look-alike skeletons: the import computes them,
/// so that a name like an imported one is refused afterwards.
#[tokio::test]
async fn an_import_without_skeletons_computes_them() {
    let (_a, source) = sqlite_db();
    populate(&source).await;
    let mut doc: Json = serde_json::from_str(&text_of(&source.export(100).await.unwrap())).unwrap();
    let users = &mut doc["tables"]["users"];
    let at = users["columns"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c == "skeleton")
        .unwrap();
    users["columns"].as_array_mut().unwrap().remove(at);
    users["rows"][0].as_array_mut().unwrap().remove(at);
    let (_b, target) = sqlite_db();
    let old = Export::parse(&doc.to_string()).unwrap().prepare().unwrap();
    target.import(old).await.unwrap();
    let again: Json = serde_json::from_str(&text_of(&target.export(100).await.unwrap())).unwrap();
    assert_eq!(again["tables"]["users"]["rows"][0][at], "ada");
}

#[tokio::test]
async fn a_target_with_rows_is_refused_and_left_as_it_was() {
    let (_a, source) = sqlite_db();
    populate(&source).await;
    let export = source.export(1).await.unwrap().prepare().unwrap();
    let (_b, target) = sqlite_db();
    target
        .write(|tx| crate::db::secrets::get_or_create(tx, "log_key", b"k").map(drop))
        .await
        .unwrap();
    let before = text_of(&target.export(1).await.unwrap());
    let err = target.import(export).await.unwrap_err();
    assert!(matches!(err, TransferError::NotEmpty("server_secrets")), "{err}");
    assert!(err.to_string().contains("not empty"));
    assert_eq!(text_of(&target.export(1).await.unwrap()), before);
}

#[tokio::test]
async fn a_row_that_cannot_be_inserted_rolls_back_the_whole_import() {
    // The users are fine; the second group repeats the first's id.
    let text = r#"{"format":"tessera-export","version":1,"exported_at":1,"tables":{
        "users":{"columns":["id","sub","username","password_hash","created_at","updated_at"],
                 "rows":[[1,"s","ada","h",1,1]]},
        "groups":{"columns":["id","name"],"rows":[[1,"a"],[1,"b"]]}}}"#;
    let (_dir, target) = sqlite_db();
    let err = target
        .import(Export::parse(text).unwrap().prepare().unwrap())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("table groups, row 2"), "{err}");
    assert!(!err.contains('\n'));
    let users = target
        .read(|tx| tx.one("SELECT count(*) FROM users", args![], |r| r.get::<i64>(0)))
        .await
        .unwrap();
    assert_eq!(users, 0, "nothing of the file was kept");
}

fn refusal(text: &str) -> String {
    let err = Export::parse(text)
        .and_then(Export::prepare)
        .err()
        .unwrap_or_else(|| panic!("accepted: {text}"));
    let line = err.to_string();
    assert!(!line.contains('\n'), "one line: {line}");
    line
}

#[test]
fn files_that_are_not_exports_this_binary_reads_are_refused_in_one_line() {
    let doc = |tables: &str| format!(r#"{{"format":"tessera-export","version":1,"exported_at":1,"tables":{tables}}}"#);
    let cases = [
        ("{not json".to_string(), "not a Tessera export"),
        ("[1, 2]".to_string(), "not a Tessera export"),
        (r#"{"format":"other","version":1}"#.to_string(), "not a Tessera export"),
        (
            r#"{"format":"tessera-export","version":2,"tables":{}}"#.to_string(),
            "export version 2",
        ),
        (r#"{"format":"tessera-export"}"#.to_string(), "no integer \"version\""),
        (
            r#"{"format":"tessera-export","version":1,"tables":{}}"#.to_string(),
            "missing field `exported_at`",
        ),
        (doc(r#"{"nope":{"columns":["a"],"rows":[]}}"#), "table nope is not one"),
        (
            doc(r#"{"job_leases":{"columns":["name"],"rows":[]}}"#),
            "never exported",
        ),
        (
            doc(r#"{"users":{"columns":["id","shoe_size"],"rows":[]}}"#),
            "column shoe_size is not one",
        ),
        (
            doc(r#"{"groups":{"columns":["id","id"],"rows":[]}}"#),
            "column id appears twice",
        ),
        (
            doc(r#"{"groups":{"columns":["id","name"],"rows":[[1]]}}"#),
            "row 1: 1 values for 2 columns",
        ),
        (
            doc(r#"{"groups":{"columns":["id","name"],"rows":[["1","a"]]}}"#),
            "table groups: row 1, column id: expected an integer",
        ),
        (
            doc(r#"{"groups":{"columns":["id","name"],"rows":[[1.5,"a"]]}}"#),
            "expected a 64-bit integer",
        ),
        (
            doc(r#"{"server_secrets":{"columns":["name","value"],"rows":[["k","!!"]]}}"#),
            "column value: expected base64",
        ),
        (doc(r#"{"groups":{"columns":[],"rows":[]}}"#), "no columns"),
    ];
    for (text, expected) in cases {
        let line = refusal(&text);
        assert!(line.contains(expected), "{text}: {line}");
    }
}
