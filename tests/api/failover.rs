//! The failures docs/SCALING.md promises to survive, on PostgreSQL (needs the run's
//! cluster; required in CI): the database unreachable for five seconds (answers,
//! recovery and what the log says), and a node killed with `kill -9` in the middle of
//! a load that fails over to the others.

pub(crate) mod node;
mod proxy;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::helpers::*;
use node::{chain_on, provision, Node};
use proxy::Proxy;

/// How long any one request may take while the database is away: the pool's 5 s wait
/// for a connection, and a margin for a slow machine.
const BOUND: Duration = Duration::from_secs(8);

/// One answer, read whole, and how long it took; a hang past `BOUND` fails the test.
struct Answer {
    status: u16,
    content_type: String,
    retry_after: Option<String>,
    body: String,
    took: Duration,
}

async fn answer(what: &str, req: reqwest::RequestBuilder) -> Answer {
    let started = Instant::now();
    let resp = tokio::time::timeout(BOUND, req.send())
        .await
        .unwrap_or_else(|_| panic!("{what} hung for more than {BOUND:?}"))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let header = |name| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let content_type = header(reqwest::header::CONTENT_TYPE).unwrap_or_default();
    let retry_after = header(reqwest::header::RETRY_AFTER);
    let status = resp.status().as_u16();
    let body = resp.text().await.unwrap();
    let took = started.elapsed();
    eprintln!("{what}: {status} in {took:?}");
    assert_ne!(status, 500, "{what} answered 500: {body}");
    Answer {
        status,
        content_type,
        retry_after,
        body,
        took,
    }
}

fn refresh_request(address: &str, secret: &str, token: &str) -> reqwest::RequestBuilder {
    plain_client()
        .post(format!("{address}/token"))
        .basic_auth("app", Some(secret))
        .form(&[("grant_type", "refresh_token"), ("refresh_token", token)])
}

/// The answer a client gets while the database is away: 503 with the RFC 6749 code and
/// a `Retry-After`, within the bound.
fn assert_busy_json(a: &Answer, what: &str) {
    assert_eq!(a.status, 503, "{what}: {}", a.body);
    let body: serde_json::Value = serde_json::from_str(&a.body).unwrap();
    assert_eq!(body["error"], "temporarily_unavailable", "{what}");
    assert!(a.retry_after.is_some(), "{what} says when to come back");
}

/// The page a person gets meanwhile: 503, HTML that says to wait.
fn assert_busy_page(a: &Answer, what: &str) {
    assert_eq!(a.status, 503, "{what}: {}", a.body);
    assert!(a.content_type.starts_with("text/html"), "{what}: {}", a.content_type);
    assert!(
        a.body.contains("busy") && a.body.contains("try again"),
        "{what}: {}",
        a.body
    );
    assert!(a.retry_after.is_some(), "{what} says when to come back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn five_seconds_without_postgresql_answer_busy_then_resume_losing_nothing() {
    let Some(url) = required_cluster("failover") else {
        return;
    };
    let proxy = Proxy::start(&keyed_schema(&url).await).await;
    let app = spawn_on_url(&proxy.url, |_| {}).await;
    app.add_user("ada").await;
    let secret = app.add_client("app", false).await.unwrap();

    // Working before: tokens from a code, a rotation, a sign-in parked at the form.
    let first = app.tokens("app", &secret, "ada").await;
    let rotated = answer(
        "refresh before",
        refresh_request(&app.address, &secret, first["refresh_token"].as_str().unwrap()),
    )
    .await;
    assert_eq!(rotated.status, 200);
    let refresh: serde_json::Value = serde_json::from_str(&rotated.body).unwrap();
    let refresh = refresh["refresh_token"].as_str().unwrap().to_string();
    let person = browser();
    let pkce = Pkce::new();
    let authorize = app.authorize_url(
        "app",
        &[("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")],
    );
    let mut form = app.open_login(&person, &authorize).await;
    form.insert("username".into(), "ada".into());
    form.insert("password".into(), PASSWORD.into());

    proxy.set_cut(true);
    let cut_at = Instant::now();
    let (token, page, login, ready, health) = tokio::join!(
        answer("refresh during", refresh_request(&app.address, &secret, &refresh)),
        answer("authorize during", browser().get(&authorize)),
        answer("login during", person.post(app.url("/login")).form(&form)),
        answer("readyz during", plain_client().get(app.url("/readyz"))),
        async {
            // Half-way through: the process itself still answers.
            tokio::time::sleep(Duration::from_secs(2)).await;
            answer("healthz during", plain_client().get(app.url("/healthz"))).await
        },
    );
    assert_busy_json(&token, "/token");
    assert_busy_page(&page, "/authorize");
    assert_busy_page(&login, "/login");
    assert_eq!(ready.status, 503, "/readyz: {}", ready.body);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&ready.body).unwrap()["status"],
        "unavailable"
    );
    assert!(
        ready.took < Duration::from_secs(3),
        "/readyz answers before a prober gives up: {:?}",
        ready.took
    );
    assert_eq!(health.status, 200);
    assert!(health.took < Duration::from_secs(1), "/healthz waits for nothing");
    // Five seconds of outage at least, whatever the answers took.
    if let Some(rest) = Duration::from_secs(5).checked_sub(cut_at.elapsed()) {
        tokio::time::sleep(rest).await;
    }
    eprintln!("database cut for {:?}", cut_at.elapsed());

    proxy.set_cut(false);
    let restored_at = Instant::now();
    the_refresh_token_renews_once_the_database_is_back(&app, &secret, &refresh, restored_at).await;
    let ready = answer("readyz after", plain_client().get(app.url("/readyz"))).await;
    assert_eq!(ready.status, 200);
    // The sign-in parked before the outage completes: its request and CSRF token live.
    let resp = person.post(app.url("/login")).form(&form).send().await.unwrap();
    assert_eq!(resp.status(), 303, "{}", resp.text().await.unwrap());
    let code = redirect_params(&resp)["code"].clone();
    let exchange = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", pkce.verifier.as_str()),
    ];
    assert_eq!(app.token(Some(("app", &secret)), &exchange).await.status(), 200);

    the_metrics_count_the_busy_answers(&app).await;
}

/// The same refresh token, retried until its first answer that is not "busy": new
/// tokens, within seconds of `restored_at`.
async fn the_refresh_token_renews_once_the_database_is_back(
    app: &TestApp,
    secret: &str,
    refresh: &str,
    restored_at: Instant,
) {
    // The same refresh token, retried as a client told `Retry-After: 1` would: the
    // refusals consumed nothing, so its first answer that is not "busy" is new tokens.
    let renewed = loop {
        let a = answer("refresh after", refresh_request(&app.address, secret, refresh)).await;
        if a.status != 503 {
            break a;
        }
        assert!(
            restored_at.elapsed() < Duration::from_secs(10),
            "service did not resume by itself"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let recovered = restored_at.elapsed();
    eprintln!("service resumed {recovered:?} after the database came back");
    assert_eq!(renewed.status, 200, "the refresh token survived: {}", renewed.body);
    assert!(
        recovered < Duration::from_secs(5),
        "resumed within seconds: {recovered:?}"
    );
}

async fn the_metrics_count_the_busy_answers(app: &TestApp) {
    // The operator's view: the requests turned away are counted, and the pool is
    // open again.
    let metrics = app.get_text("/metrics").await;
    let value = |name: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in\n{metrics}"))
    };
    assert!(
        value("tessera_pg_busy_total") >= 1,
        "the outage's busy answers are counted"
    );
    assert!(value("tessera_pg_connections_open") >= 1);
}

/// What the load saw.
#[derive(Default)]
struct Tally {
    /// Successful rotations per node.
    served: [AtomicUsize; 3],
    /// Requests sent again to the next node after a connection error or a 5xx.
    failovers: AtomicUsize,
    /// Of those, requests cut off after they were sent (in flight at the kill).
    cut_off: AtomicUsize,
    /// Answers thrown away to play a response lost on its way back.
    dropped: AtomicUsize,
    /// The longest a rotation took, failovers included.
    slowest: Mutex<Duration>,
    /// Rotations that ended in a refusal, or found no node: each is a lost chain.
    lost: Mutex<Vec<String>>,
}

/// Rotates `token` once, starting at node `first` and moving to the next node on a
/// connection error or a 5xx, as a client behind a balancer retries; the successor,
/// or `None` when the chain was lost. With `lose_first` the first answer is thrown
/// away and the same token sent to the next node, as when a node dies after its
/// commit and before its answer: which a kill does only by chance, and this on
/// purpose. The per-request timeout keeps every retry well inside the server's 10 s
/// grace for a confidential client's repeated refresh.
async fn rotate(
    nodes: &[String],
    first: usize,
    secret: &str,
    token: &str,
    lose_first: bool,
    tally: &Tally,
) -> Option<String> {
    let began = Instant::now();
    let mut lose = lose_first;
    for attempt in 0..12 {
        let n = (first + attempt) % nodes.len();
        if attempt > 0 {
            tally.failovers.fetch_add(1, Ordering::Relaxed);
            if attempt % nodes.len() == 0 {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        let sent = refresh_request(&nodes[n], secret, token).timeout(Duration::from_secs(4));
        let resp = match sent.send().await {
            Ok(resp) => resp,
            Err(e) => {
                if !e.is_connect() {
                    tally.cut_off.fetch_add(1, Ordering::Relaxed);
                }
                continue;
            }
        };
        let status = resp.status();
        if status.is_server_error() {
            continue;
        }
        let Ok(body) = resp.json::<serde_json::Value>().await else {
            continue;
        };
        if status == 200 && std::mem::take(&mut lose) {
            tally.dropped.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if status != 200 {
            tally
                .lost
                .lock()
                .unwrap()
                .push(format!("node {n} refused a rotation: {status} {body}"));
            return None;
        }
        tally.served[n].fetch_add(1, Ordering::Relaxed);
        let mut slowest = tally.slowest.lock().unwrap();
        *slowest = (*slowest).max(began.elapsed());
        return body["refresh_token"].as_str().map(str::to_string);
    }
    tally
        .lost
        .lock()
        .unwrap()
        .push("no node rotated a token in 12 tries".into());
    None
}

/// The load: 20 refresh-token chains shared out among 8 clients for 6 s, node 0
/// killed 2.5 s in.
const CHAINS: usize = 20;
const CLIENTS: usize = 8;
const LOAD: Duration = Duration::from_secs(6);
const KILL_AFTER: Duration = Duration::from_millis(2500);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_of_one_node_under_load_loses_nothing_for_a_client_that_retries_elsewhere() {
    let Some(url) = required_cluster("failover") else {
        return;
    };
    let schema = keyed_schema(&url).await;
    let secret = provision(&schema);
    let dir = tempfile::tempdir().unwrap();
    let mut nodes: Vec<Node> = (0..3)
        .map(|i| Node::start(&schema, &dir.path().join(format!("node{i}.log"))))
        .collect();
    let addresses: Arc<Vec<String>> = Arc::new(nodes.iter().map(|n| n.address.clone()).collect());
    // The chains are made on every node in turn: one browser, one session.
    let person = browser();
    let mut chains = Vec::new();
    for i in 0..CHAINS {
        chains.push(chain_on(&person, &addresses[i % 3], &secret).await);
    }

    let tally = Arc::new(Tally::default());
    let turn = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        let mine: Vec<String> = chains.iter().skip(c).step_by(CLIENTS).cloned().collect();
        let (addresses, secret, tally, turn) = (addresses.clone(), secret.clone(), tally.clone(), turn.clone());
        clients.push(tokio::spawn(async move {
            let mut mine = mine;
            let mut round = 0usize;
            while started.elapsed() < LOAD {
                for token in mine.iter_mut() {
                    round += 1;
                    let first = turn.fetch_add(1, Ordering::Relaxed) % 3;
                    let lose = round % 5 == c % 5;
                    match rotate(&addresses, first, &secret, token, lose, &tally).await {
                        Some(next) => *token = next,
                        None => return mine,
                    }
                }
            }
            mine
        }));
    }
    tokio::time::sleep(KILL_AFTER).await;
    let served_before_kill = tally.served[0].load(Ordering::Relaxed);
    nodes[0].kill_9();
    let killed_at = started.elapsed();
    let mut finals = Vec::new();
    for c in clients {
        finals.extend(c.await.unwrap());
    }
    let lost = tally.lost.lock().unwrap().clone();
    let served: Vec<usize> = tally.served.iter().map(|s| s.load(Ordering::Relaxed)).collect();
    let failovers = tally.failovers.load(Ordering::Relaxed);
    let cut_off = tally.cut_off.load(Ordering::Relaxed);
    let dropped = tally.dropped.load(Ordering::Relaxed);
    let slowest = *tally.slowest.lock().unwrap();
    eprintln!(
        "killed node 0 at {killed_at:?}; rotations per node {served:?} ({served_before_kill} on node 0 before the kill), \
         {failovers} failovers ({cut_off} cut off in flight), {dropped} answers thrown away, slowest rotation {slowest:?}"
    );
    assert!(lost.is_empty(), "chains lost: {lost:#?}");
    assert_eq!(finals.len(), CHAINS);
    assert!(served_before_kill > 0, "node 0 was serving when it was killed");
    assert!(failovers > dropped, "clients met the dead node and moved on");
    assert!(dropped > 0, "some answers were lost on purpose");
    assert!(
        served[1] + served[2] >= 2 * CHAINS,
        "the survivors carried the load: {served:?}"
    );
    assert!(slowest < Duration::from_secs(5), "no rotation waited long: {slowest:?}");

    // Every chain still rotates, on the survivors only: none was taken for a reuse.
    let survivors = &addresses[1..];
    for (i, token) in finals.iter().enumerate() {
        let a = answer("final refresh", refresh_request(&survivors[i % 2], &secret, token)).await;
        assert_eq!(a.status, 200, "chain {i} no longer rotates: {}", a.body);
    }
    let db = tessera::db::Db::open_postgres(&schema, 1, false).await.unwrap();
    let (events, _) = db
        .read(|c| tessera::db::audit::list(c, &tessera::db::audit::Filter::default(), 100_000, 0))
        .await
        .unwrap();
    let reuses = events.iter().filter(|e| e.event == "token.reuse_detected").count();
    assert_eq!(reuses, 0, "a retried rotation was taken for a stolen token");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_outage_is_logged_once_not_once_per_attempt() {
    let Some(url) = required_cluster("failover") else {
        return;
    };
    let proxy = Proxy::start(&keyed_schema(&url).await).await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("node.log");
    let node = Node::start(&proxy.url, &log);

    proxy.set_cut(true);
    let cut_at = Instant::now();
    // Callers for five seconds: each token request waits out its checkout, probes
    // come every half second, and the pool retries every connection it lacks.
    let mut callers = Vec::new();
    for i in 0..8 {
        let address = node.address.clone();
        callers.push(tokio::spawn(async move {
            let mut sent = 0;
            while cut_at.elapsed() < Duration::from_millis(4500) {
                let req = if i % 2 == 0 {
                    plain_client().get(format!("{address}/readyz"))
                } else {
                    refresh_request(&address, "x", "x")
                };
                assert_eq!(answer("during", req).await.status, 503);
                sent += 1;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            sent
        }));
    }
    let mut sent = 0;
    for c in callers {
        sent += c.await.unwrap();
    }
    eprintln!("database cut for {:?}", cut_at.elapsed());
    proxy.set_cut(false);
    let restored = Instant::now();
    while answer("readyz after", plain_client().get(format!("{}/readyz", node.address)))
        .await
        .status
        != 200
    {
        assert!(restored.elapsed() < Duration::from_secs(10), "never ready again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    let text = std::fs::read_to_string(&log).unwrap();
    let told: Vec<&str> = text.lines().filter(|l| l.contains("PostgreSQL")).collect();
    eprintln!("{sent} requests refused; the log says:\n{}", told.join("\n"));
    let errors: Vec<&str> = text.lines().filter(|l| l.contains(" ERROR ")).collect();
    assert!(errors.is_empty(), "an outage is not an error of ours: {errors:#?}");
    let count = |what: &str| told.iter().filter(|l| l.contains(what)).count();
    // A connection the pool was making as the cut began may still succeed, which
    // ends the run and starts another: said once, or twice for that flap, and each
    // start has its end.
    let starts = count("PostgreSQL is unreachable");
    assert!((1..=2).contains(&starts), "said once (or twice): {starts}");
    assert_eq!(count("PostgreSQL is reachable again"), starts, "and each end once");
    // The pool's failures (with that flap), the first operation cut off in flight,
    // the first request turned away, the ends.
    assert!(told.len() <= 8, "a few lines, not one per attempt: {}", told.len());
}
