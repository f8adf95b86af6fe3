//! The `/metrics` bearer token read from a file (`--metrics-token-file`), as the master
//! key and the SMTP password are: the server answers only that token.

use crate::helpers::*;

#[tokio::test]
async fn a_metrics_token_file_closes_the_metrics_endpoint_to_all_but_its_token() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("metrics-token");
    // Written as `echo TOKEN > file` writes it: the newline is not part of the token.
    std::fs::write(&path, "scrape-from-a-file-5678\n").unwrap();
    let raw = tessera::config::RawSettings {
        metrics_token_file: Some(path.display().to_string()),
        ..Default::default()
    };
    let loaded = tessera::config::Settings::load(&raw).unwrap();
    let app = spawn_with(|s| s.metrics_token = loaded.metrics_token).await;
    let url = app.url("/metrics");
    let scrape = |token: &'static str| plain_client().get(&url).bearer_auth(token).send();
    assert_eq!(plain_client().get(&url).send().await.unwrap().status(), 401);
    assert_eq!(scrape("scrape-from-a-file-5679").await.unwrap().status(), 401);
    let right = scrape("scrape-from-a-file-5678").await.unwrap();
    assert_eq!(right.status(), 200);
    assert!(right
        .text()
        .await
        .unwrap()
        .contains(crate::hardening::engine_metrics().0));
}

#[test]
fn a_metrics_token_file_is_refused_with_the_token_itself() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("metrics-token");
    std::fs::write(&path, "scrape-from-a-file-5678").unwrap();
    let raw = tessera::config::RawSettings {
        metrics_token: Some("scrape-from-the-flag-1234".into()),
        metrics_token_file: Some(path.display().to_string()),
        ..Default::default()
    };
    let err = tessera::config::Settings::load(&raw).unwrap_err().to_string();
    assert!(err.contains("`metrics_token_file`"), "{err}");
}
