//! Addressing, credentials and the parsing of S3 answers, without a network.

use super::*;

fn store(endpoint: Option<&str>, path_style: bool, prefix: &str) -> S3Store {
    let settings = S3Settings {
        endpoint: endpoint.map(|e| url::Url::parse(e).unwrap()),
        region: "eu-west-1".into(),
        path_style,
    };
    S3Store::with_credentials("my-bucket", prefix, &settings, Credentials::new("AKID", "s3cr3t", None)).unwrap()
}

#[test]
fn addresses_path_style_and_virtual_hosted() {
    let s = store(Some("http://127.0.0.1:9000/base/"), true, "tessera/prod");
    assert_eq!(
        (s.origin.as_str(), s.host.as_str()),
        ("http://127.0.0.1:9000", "127.0.0.1:9000")
    );
    assert_eq!(
        s.object_path("g1/a b.wal").unwrap(),
        "/base/my-bucket/tessera/prod/g1/a%20b.wal"
    );
    assert_eq!(s.describe(), "s3://my-bucket/tessera/prod");
    let s = store(None, false, "");
    assert_eq!(s.origin, "https://my-bucket.s3.eu-west-1.amazonaws.com");
    assert_eq!(s.object_path("x").unwrap(), "/x");
    assert_eq!(s.describe(), "s3://my-bucket");
    assert!(s.object_path("../x").is_err());
    assert!(s.object_path("").is_err());
}

#[test]
fn credentials_come_from_both_variables_and_never_show_the_secret() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    };
    assert!(Credentials::from_lookup(env(&[("AWS_ACCESS_KEY_ID", "AKID")])).is_none());
    assert!(Credentials::from_lookup(env(&[("AWS_ACCESS_KEY_ID", "AKID"), ("AWS_SECRET_ACCESS_KEY", " ")])).is_none());
    let c = Credentials::from_lookup(env(&[
        ("AWS_ACCESS_KEY_ID", "AKID"),
        ("AWS_SECRET_ACCESS_KEY", "s3cr3t"),
        ("AWS_SESSION_TOKEN", "t0ken"),
    ]))
    .unwrap();
    assert_eq!(c.session_token.as_ref().map(Secret::expose), Some("t0ken"));
    let shown = format!("{c:?}");
    assert!(
        shown.contains("AKID") && !shown.contains("s3cr3t") && !shown.contains("t0ken"),
        "{shown}"
    );
}

#[test]
fn reads_listings_and_error_documents() {
    let page: ListPage = quick_xml::de::from_str(
        r#"<?xml version="1.0" encoding="UTF-8"?>
        <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
          <Name>b</Name><Prefix>p/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>
          <IsTruncated>true</IsTruncated><NextContinuationToken>tok/+=</NextContinuationToken>
          <Contents><Key>p/a&amp;b</Key><Size>3</Size><ETag>"x"</ETag></Contents>
          <Contents><Key>p/c</Key><LastModified>2024-01-01T00:00:00.000Z</LastModified><Size>40</Size></Contents>
        </ListBucketResult>"#,
    )
    .unwrap();
    assert!(page.is_truncated);
    assert_eq!(page.next_continuation_token.as_deref(), Some("tok/+="));
    let got: Vec<_> = page.contents.iter().map(|e| (e.key.as_str(), e.size)).collect();
    assert_eq!(got, vec![("p/a&b", 3), ("p/c", 40)]);
    let empty: ListPage =
        quick_xml::de::from_str("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>").unwrap();
    assert!(empty.contents.is_empty() && !empty.is_truncated);

    let reply = Reply {
        status: StatusCode::FORBIDDEN,
        body: b"<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>no</Message></Error>".to_vec(),
    };
    assert_eq!(reply.describe(), "403 SignatureDoesNotMatch");
    let reply = Reply {
        status: StatusCode::BAD_GATEWAY,
        body: b"<html>proxy</html>".to_vec(),
    };
    assert_eq!(reply.describe(), "502 Bad Gateway");
}
