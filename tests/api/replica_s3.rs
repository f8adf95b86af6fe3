//! The S3 replica target against a real S3-protocol server (`moto.rs`, signatures
//! checked): the `Store` contract FileStore keeps (put, get, list in name order past
//! a page, delete, NotFound), prefix isolation, and one-line errors for wrong
//! credentials, a missing bucket, a closed port and a server that never answers.
//! SQLite-only concern: skipped on the PostgreSQL pass.

use std::time::{Duration, Instant};

use tessera::replica::s3::{Credentials, S3Store};
use tessera::replica::store::{Store, StoreError};
use tessera::replica::{S3Settings, Target};

use crate::helpers::on_postgres_pass;
use crate::moto::Moto;

/// moto with `bucket` created, or `None` when the test is skipped.
fn moto_with(bucket: &str) -> Option<Moto> {
    if on_postgres_pass() {
        return None;
    }
    let moto = Moto::start()?;
    moto.create_bucket(bucket);
    Some(moto)
}

/// The store for `target` (an `s3://` URL) on `moto`, signed with `key`/`secret`.
/// Credentials are passed in rather than set in the environment, which every test
/// thread of this binary shares.
fn open_as(moto: &Moto, target: &str, key: &str, secret: &str) -> S3Store {
    let Target::S3 { bucket, prefix } = Target::parse(target).unwrap() else {
        panic!("{target} is not an s3:// target");
    };
    S3Store::with_credentials(&bucket, &prefix, &moto.settings(), Credentials::new(key, secret, None)).unwrap()
}

fn open(moto: &Moto, target: &str) -> S3Store {
    open_as(moto, target, &moto.access_key_id, &moto.secret_access_key)
}

fn names(store: &dyn Store, prefix: &str) -> Vec<(String, u64)> {
    store
        .list(prefix)
        .unwrap()
        .into_iter()
        .map(|o| (o.name, o.size))
        .collect()
}

fn failure(result: Result<impl std::fmt::Debug, StoreError>) -> String {
    match result {
        Err(StoreError::Failed(line)) => line,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn puts_gets_lists_and_deletes_objects() {
    let Some(moto) = moto_with("replica") else { return };
    let store = open(&moto, "s3://replica/tessera/prod/");
    assert_eq!(store.describe(), "s3://replica/tessera/prod");
    assert!(store.list("").unwrap().is_empty(), "an empty prefix is an empty target");

    let binary: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    store.put("g1/0002.wal", b"two!").unwrap();
    store.put("g1/0001.wal", b"one").unwrap();
    store.put("g2/0001.snap", &binary).unwrap();
    // Characters SigV4 must encode in the path; the server checks the signature.
    store.put("g1/odd name+=&~.wal", b"odd").unwrap();

    assert_eq!(
        names(&store, "g1/"),
        vec![
            ("g1/0001.wal".to_string(), 3),
            ("g1/0002.wal".to_string(), 4),
            ("g1/odd name+=&~.wal".to_string(), 3)
        ]
    );
    assert_eq!(names(&store, "").len(), 4);
    assert_eq!(names(&store, "g1/00"), names(&store, "g1/")[..2].to_vec());
    assert_eq!(store.get("g1/0002.wal").unwrap(), b"two!");
    assert_eq!(store.get("g1/odd name+=&~.wal").unwrap(), b"odd");
    assert_eq!(store.get("g2/0001.snap").unwrap(), binary, "bytes come back exactly");

    store.put("g1/0002.wal", b"replaced").unwrap();
    assert_eq!(
        store.get("g1/0002.wal").unwrap(),
        b"replaced",
        "a put replaces the object"
    );

    assert!(matches!(store.get("g1/none"), Err(StoreError::NotFound(n)) if n == "g1/none"));
    store.delete("g2/0001.snap").unwrap();
    store.delete("g2/0001.snap").unwrap();
    assert!(matches!(store.get("g2/0001.snap"), Err(StoreError::NotFound(_))));
    assert!(store.list("g2/").unwrap().is_empty());
    assert!(store.put("../escape", b"x").is_err());
    assert!(store.put("g1//x", b"x").is_err());
}

#[test]
fn lists_every_object_past_a_page() {
    let Some(moto) = moto_with("paged") else { return };
    // A page of 7 keys: 45 objects take 7 requests, each continuing the last.
    let store = open(&moto, "s3://paged/p").with_limits(7, Duration::from_secs(30));
    let mut expected = Vec::new();
    for i in (0..45).rev() {
        let name = format!("g{}/{i:04}.wal", i % 2);
        store.put(&name, name.as_bytes()).unwrap();
        expected.push((name.clone(), name.len() as u64));
    }
    expected.sort();
    assert_eq!(names(&store, ""), expected);
    let odd: Vec<_> = expected.iter().filter(|(n, _)| n.starts_with("g1/")).cloned().collect();
    assert_eq!(odd.len(), 22);
    assert_eq!(names(&store, "g1/"), odd);
}

#[test]
fn lists_past_the_thousand_keys_of_one_response() {
    let Some(moto) = moto_with("thousand") else { return };
    // ListObjectsV2's own page size, as AWS uses it: 1,000 keys, then a token.
    let store = open(&moto, "s3://thousand/big");
    let names_put: Vec<String> = (0..1003).map(|i| format!("g/{i:05}")).collect();
    std::thread::scope(|scope| {
        for chunk in names_put.chunks(251) {
            let store = &store;
            scope.spawn(move || chunk.iter().for_each(|n| store.put(n, b"x").unwrap()));
        }
    });
    let listed: Vec<String> = store.list("").unwrap().into_iter().map(|o| o.name).collect();
    assert_eq!(listed, names_put);
}

#[test]
fn prefixes_in_one_bucket_do_not_see_each_other() {
    let Some(moto) = moto_with("shared") else { return };
    let a = open(&moto, "s3://shared/site");
    let b = open(&moto, "s3://shared/site2");
    let root = open(&moto, "s3://shared");
    a.put("g1/0001.wal", b"a").unwrap();
    b.put("g1/0001.wal", b"bb").unwrap();
    b.put("g1/0002.wal", b"b2").unwrap();

    assert_eq!(names(&a, ""), vec![("g1/0001.wal".to_string(), 1)]);
    assert_eq!(names(&b, "g1/").len(), 2);
    assert_eq!(a.get("g1/0001.wal").unwrap(), b"a");
    assert!(matches!(a.get("g1/0002.wal"), Err(StoreError::NotFound(_))));
    a.delete("g1/0001.wal").unwrap();
    assert_eq!(b.get("g1/0001.wal").unwrap(), b"bb", "a delete stays in its prefix");
    let all: Vec<_> = names(&root, "").into_iter().map(|(n, _)| n).collect();
    assert_eq!(all, vec!["site2/g1/0001.wal", "site2/g1/0002.wal"]);
}

#[test]
fn wrong_credentials_fail_with_one_line_naming_the_code() {
    let Some(moto) = moto_with("guarded") else { return };
    let good = open(&moto, "s3://guarded/p");
    good.put("g1/0001.wal", b"kept").unwrap();

    let wrong_secret = open_as(&moto, "s3://guarded/p", &moto.access_key_id, "not-the-secret-at-all");
    let line = failure(wrong_secret.put("g1/0002.wal", b"x"));
    assert_eq!(line, "s3://guarded/p: PUT g1/0002.wal: 403 SignatureDoesNotMatch");
    let line = failure(wrong_secret.get("g1/0001.wal"));
    assert_eq!(line, "s3://guarded/p: GET g1/0001.wal: 403 SignatureDoesNotMatch");
    let line = failure(wrong_secret.list("g1/"));
    assert_eq!(line, "s3://guarded/p: LIST g1/: 403 SignatureDoesNotMatch");
    assert!(!line.contains("not-the-secret"));

    let unknown = open_as(&moto, "s3://guarded/p", "AKIAUNKNOWNKEY000000", "whatever");
    let line = failure(unknown.delete("g1/0001.wal"));
    assert_eq!(line, "s3://guarded/p: DELETE g1/0001.wal: 403 InvalidAccessKeyId");
    assert_eq!(
        good.get("g1/0001.wal").unwrap(),
        b"kept",
        "refused calls changed nothing"
    );
    assert!(matches!(good.get("g1/0002.wal"), Err(StoreError::NotFound(_))));
}

#[test]
fn a_missing_bucket_is_a_failure_not_a_missing_object() {
    let Some(moto) = moto_with("present") else { return };
    let store = open(&moto, "s3://absent/p");
    assert_eq!(failure(store.get("g1/x")), "s3://absent/p: GET g1/x: 404 NoSuchBucket");
    assert_eq!(failure(store.list("")), "s3://absent/p: LIST: 404 NoSuchBucket");
    assert_eq!(
        failure(store.put("g1/x", b"x")),
        "s3://absent/p: PUT g1/x: 404 NoSuchBucket"
    );
}

fn local(endpoint: &str) -> S3Store {
    let settings = S3Settings {
        endpoint: Some(url::Url::parse(endpoint).unwrap()),
        region: "us-east-1".into(),
        path_style: true,
    };
    S3Store::with_credentials("bucket", "p", &settings, Credentials::new("AKID", "secret", None)).unwrap()
}

#[test]
fn a_closed_port_fails_at_once_with_one_line() {
    if on_postgres_pass() {
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let store = local(&format!("http://127.0.0.1:{port}"));
    let started = Instant::now();
    let line = failure(store.put("g1/x", b"x"));
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert!(
        line.starts_with(&format!(
            "s3://bucket/p: PUT g1/x: cannot connect to http://127.0.0.1:{port}: "
        )),
        "{line}"
    );
    assert!(!line.contains('\n'), "{line}");
}

#[test]
fn a_server_that_never_answers_times_out() {
    if on_postgres_pass() {
        return;
    }
    // Accepts connections (the kernel's backlog does) and never answers a request.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let store = local(&endpoint).with_limits(1000, Duration::from_secs(1));
    let started = Instant::now();
    let line = failure(store.get("g1/x"));
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert_eq!(
        line,
        format!("s3://bucket/p: GET g1/x: {endpoint}: no answer within 1s")
    );
    drop(listener);
}

#[test]
fn opening_without_credentials_names_both_variables() {
    if on_postgres_pass() {
        return;
    }
    // The test binary's environment is shared by every test thread and is not changed
    // here; where it carries AWS keys (a developer's shell) there is nothing to check.
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_some() || std::env::var_os("AWS_SECRET_ACCESS_KEY").is_some() {
        eprintln!("SKIPPED: AWS credentials are set in this environment");
        return;
    }
    let target = Target::parse("s3://bucket/some/prefix").unwrap();
    let err = target.open(&S3Settings::default()).err().expect("no credentials");
    assert_eq!(
        err,
        "s3://bucket/some/prefix: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
    );
}
