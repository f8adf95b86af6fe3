//! A full disk under the SQLite file (a real one: a tmpfs of a few megabytes, mounted
//! by the test, which needs root as CI has): writes are refused with 503 and
//! Retry-After, nothing refused is half-kept, reads go on, the log says so once, and
//! when there is room again the same process writes again, without a restart.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::helpers::*;
use crate::process::{active, cli, exchange, setup, try_code, Server};

/// A tmpfs mounted for the test; unmounted (lazily, in case a file is still open)
/// when dropped.
struct SmallDisk(PathBuf);

impl SmallDisk {
    /// `None` (the test is skipped) where mounting is not allowed, except under CI,
    /// which must run it.
    fn mount(at: &Path, size: &str) -> Option<Self> {
        std::fs::create_dir_all(at).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .expect("mount runs");
        if out.status.success() {
            return Some(Self(at.to_path_buf()));
        }
        let why = String::from_utf8_lossy(&out.stderr);
        assert!(
            std::env::var_os("CI").is_none(),
            "the disk-full test needs to mount a tmpfs (root): {why}"
        );
        eprintln!("skipped: cannot mount a tmpfs here ({why})");
        None
    }

    /// Writes a file until the disk refuses more (ENOSPC).
    fn fill(&self) -> PathBuf {
        let path = self.0.join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        loop {
            if let Err(e) = file.write_all(&chunk).and_then(|_| file.sync_data()) {
                assert_eq!(e.raw_os_error(), Some(28), "filling stopped for another reason: {e}");
                break;
            }
        }
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

async fn refresh(address: &str, secret: &str, token: &str) -> reqwest::Response {
    plain_client()
        .post(format!("{address}/token"))
        .basic_auth("app", Some(secret))
        .form(&[("grant_type", "refresh_token"), ("refresh_token", token)])
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_writes_with_503_keeps_reads_and_recovers_without_restart() {
    if on_postgres_pass() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(disk) = SmallDisk::mount(&dir.path().join("disk"), "16m") else {
        return;
    };
    let (db, secret) = setup(&disk.0);
    // The log lives elsewhere: a full disk must not silence it.
    let log = dir.path().join("log");
    let server = Server::start(&db, &log, 0);
    let address = server.address.clone();
    let pkce = Pkce::new();
    let code = try_code(&address, &pkce)
        .await
        .expect("a sign-in before the disk fills");
    let body: serde_json::Value = exchange(&address, &secret, &code, &pkce).await.json().await.unwrap();
    let access = body["access_token"].as_str().unwrap().to_string();
    let mut current = body["refresh_token"].as_str().unwrap().to_string();

    let filler = disk.fill();
    refresh_until_a_write_is_refused(&address, &secret, &mut current).await;
    reads_go_on_on_a_full_disk(&address, &secret, &access).await;
    the_sign_in_page_says_to_come_back(&address, &pkce).await;

    // Room again: the refused refresh token still works (nothing of the refused
    // rotation was kept), and so does a new sign-in, in the same process.
    std::fs::remove_file(filler).unwrap();
    let resp = refresh(&address, &secret, &current).await;
    assert_eq!(resp.status(), 200, "the refused refresh token after room is made");
    let body: serde_json::Value = resp.json().await.unwrap();
    current = body["refresh_token"].as_str().unwrap().to_string();
    let pkce = Pkce::new();
    let code = try_code(&address, &pkce).await.expect("a sign-in after room is made");
    assert_eq!(exchange(&address, &secret, &code, &pkce).await.status(), 200);
    // The log calls the disk full over once writes have gone 2 s without a refusal.
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    assert_eq!(refresh(&address, &secret, &current).await.status(), 200);

    let check = cli(&db, &["check"], None);
    assert!(check.contains("integrity ok"), "{check}");
    drop(server);
    let log = std::fs::read_to_string(&log).unwrap();
    let said: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("writes are refused with 503"))
        .collect();
    assert_eq!(
        said.len(),
        1,
        "said once per run, not once per refused write: {said:#?}"
    );
    assert!(log.contains("there is room on the disk again"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
}

/// Refreshes write (rotation) until one needs the full disk to grow and is refused
/// with a 503 that says to retry; `current` follows the rotations.
async fn refresh_until_a_write_is_refused(address: &str, secret: &str, current: &mut String) {
    // Refreshes write (rotation): the first ones may still fit in the log's reused
    // space; one soon needs the disk to grow.
    let mut refused = None;
    for _ in 0..2000 {
        let resp = refresh(address, secret, current).await;
        match resp.status().as_u16() {
            200 => {
                let body: serde_json::Value = resp.json().await.unwrap();
                *current = body["refresh_token"].as_str().unwrap().to_string();
            }
            503 => {
                refused = Some(resp);
                break;
            }
            other => panic!(
                "a write on a full disk answered {other}: {}",
                resp.text().await.unwrap()
            ),
        }
    }
    let refused = refused.expect("a write needed room on the full disk and was refused");
    assert!(refused.headers().contains_key("retry-after"), "503 without Retry-After");
    let error: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(error["error"], "temporarily_unavailable", "{error}");
}

async fn reads_go_on_on_a_full_disk(address: &str, secret: &str, access: &str) {
    // Reads go on: the keys, discovery, introspection and userinfo need no write.
    let client = plain_client();
    for path in ["/jwks", "/.well-known/openid-configuration", "/healthz"] {
        let resp = client.get(format!("{address}{path}")).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{path} on a full disk");
    }
    assert!(active(address, secret, access).await, "introspection on a full disk");
    let info = client
        .get(format!("{address}/userinfo"))
        .bearer_auth(access)
        .send()
        .await
        .unwrap();
    assert_eq!(info.status(), 200, "userinfo on a full disk");
}

async fn the_sign_in_page_says_to_come_back(address: &str, pkce: &Pkce) {
    // A person who opens the sign-in page (which parks the request: a write) gets a
    // page that says to come back, not an error the server cannot explain. A
    // checkpoint can free room in the log now and then, so a page may still fit.
    let authorize = format!(
        "{address}/authorize?client_id=app&redirect_uri={REDIRECT}&response_type=code&scope=openid\
         &code_challenge={}&code_challenge_method=S256",
        pkce.challenge
    );
    let mut busy_page = None;
    for _ in 0..200 {
        let page = browser().get(&authorize).send().await.unwrap();
        match page.status().as_u16() {
            200 => continue,
            503 => {
                busy_page = Some(page);
                break;
            }
            other => panic!("the sign-in page on a full disk answered {other}"),
        }
    }
    let page = busy_page.expect("the sign-in page was refused on the full disk");
    assert!(page.headers().contains_key("retry-after"));
    assert!(page.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
}
