//! The storage contract, run against every backend of the run (SQLite, and PostgreSQL
//! when a cluster is there): what the protocol's guarantees rest on, above all the
//! single-use claims under real parallelism. The integration suite covers each
//! operation in its flow; this file holds what only concurrency shows.

use std::sync::Arc;

use tessera::crypto::TokenHash;
use tessera::db::{self, grants, Claim};
use tessera::domain::Secret;

use crate::helpers::{backends, spawn_on, Backend, TestApp};

/// A grant of `client` for `user_id`, with the id returned.
async fn grant(app: &TestApp, client: &str, user_id: i64) -> String {
    let id = tessera::crypto::random::random_id();
    let (g, client, now) = (id.clone(), client.to_string(), app.clock.now());
    app.state
        .db
        .write(move |c| {
            grants::insert_grant(
                c,
                &grants::Grant {
                    id: g,
                    client_id: client,
                    user_id: Some(user_id),
                    scope: "openid offline_access".into(),
                    sid: None,
                    auth_time: Some(now),
                    nonce: None,
                    expires_at: now + 3600,
                    revoked_at: None,
                    claims_request: None,
                    amr: Some("pwd".into()),
                    created_at: now,
                    resource: None,
                    dpop_jkt: None,
                },
                now,
            )
        })
        .await
        .unwrap();
    id
}

fn label(b: &Backend) -> &'static str {
    match b {
        Backend::Sqlite => "sqlite",
        Backend::Postgres(_) => "postgres",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_fifty_parallel_redemptions_of_one_code_exactly_one_wins() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        let user = app.add_user("ada").await;
        app.add_client("app", false).await;
        let grant_id = grant(&app, "app", user.id).await;
        let code = Secret::generate();
        let hash = TokenHash::of(code.expose());
        let now = app.clock.now();
        let (h, g) = (hash, grant_id.clone());
        app.state
            .db
            .write(move |c| {
                grants::insert_code(
                    c,
                    &grants::NewCode {
                        code_hash: &h,
                        grant_id: &g,
                        client_id: "app",
                        user_id: user.id,
                        redirect_uri: crate::helpers::REDIRECT,
                        scope: "openid",
                        nonce: None,
                        code_challenge: None,
                        claims_request: None,
                        sid: "sid",
                        auth_time: now,
                        amr: "pwd",
                        now,
                        expires_at: now + 60,
                        resource: None,
                        dpop_jkt: None,
                    },
                )
            })
            .await
            .unwrap();
        let db = Arc::new(app.state.db.clone());
        let mut tasks = Vec::new();
        for _ in 0..50 {
            let (db, hash) = (db.clone(), hash);
            tasks.push(tokio::spawn(async move {
                db.write(move |c| grants::consume_code(c, &hash, now)).await.unwrap()
            }));
        }
        let mut fresh = 0;
        let mut replayed = 0;
        for t in tasks {
            match t.await.unwrap() {
                grants::Consumed::Fresh(code) => {
                    assert_eq!(code.grant_id, grant_id);
                    fresh += 1;
                }
                grants::Consumed::Replayed { grant_id: g } => {
                    assert_eq!(g, grant_id);
                    replayed += 1;
                }
                grants::Consumed::Unknown => panic!("{}: the code vanished", label(&backend)),
            }
        }
        assert_eq!((fresh, replayed), (1, 49), "{}", label(&backend));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_parallel_uses_of_one_refresh_token_exactly_one_wins() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        let user = app.add_user("ada").await;
        app.add_client("app", false).await;
        let grant_id = grant(&app, "app", user.id).await;
        let hash = TokenHash::of(Secret::generate().expose());
        let now = app.clock.now();
        let (h, g) = (hash, grant_id.clone());
        app.state
            .db
            .write(move |c| grants::insert_refresh(c, &h, &g, "openid offline_access", now, now + 3600))
            .await
            .unwrap();
        let mut tasks = Vec::new();
        for _ in 0..30 {
            let (db, hash) = (app.state.db.clone(), hash);
            tasks.push(tokio::spawn(async move {
                db.write(move |c| grants::use_refresh(c, &hash, now)).await.unwrap()
            }));
        }
        let mut won = 0;
        for t in tasks {
            if t.await.unwrap() == Claim::Won {
                won += 1;
            }
        }
        assert_eq!(won, 1, "{}", label(&backend));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_parallel_submissions_of_one_login_request_exactly_one_wins_and_the_request_goes() {
    use tessera::db::sessions;
    for backend in backends() {
        let app = spawn_on(&backend).await;
        let (id, csrf, browser) = (
            TokenHash::of(Secret::generate().expose()),
            TokenHash::of(Secret::generate().expose()),
            TokenHash::of(Secret::generate().expose()),
        );
        let now = app.clock.now();
        app.state
            .db
            .write(move |c| {
                sessions::create_login_request(
                    c,
                    &sessions::NewLoginRequest {
                        id_hash: &id,
                        csrf_hash: &csrf,
                        browser_hash: &browser,
                        params: "{}",
                        now,
                        expires_at: now + 900,
                    },
                )
            })
            .await
            .unwrap();
        let mut tasks = Vec::new();
        for _ in 0..30 {
            let db = app.state.db.clone();
            tasks.push(tokio::spawn(async move {
                db.write(move |c| sessions::consume_login_request(c, &id, now))
                    .await
                    .unwrap()
            }));
        }
        let mut won = 0;
        for t in tasks {
            if t.await.unwrap() == Claim::Won {
                won += 1;
            }
        }
        assert_eq!(won, 1, "{}", label(&backend));
        // Nothing reads a used request again: it is not kept until its expiry.
        let left: i64 = app
            .state
            .db
            .read(|c| tessera::db::testing::count_rows(c, "login_requests"))
            .await
            .unwrap();
        assert_eq!(left, 0, "a used login request stays ({})", label(&backend));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_failed_sign_ins_are_each_counted() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        let user = app.add_user("ada").await;
        let now = app.clock.now();
        let mut tasks = Vec::new();
        for _ in 0..40 {
            let db = app.state.db.clone();
            tasks.push(tokio::spawn(async move {
                db.write(move |c| db::users::record_failure(c, user.id, |n| (n >= 40).then_some(900), now))
                    .await
                    .unwrap()
            }));
        }
        let mut counts: Vec<i64> = Vec::new();
        for t in tasks {
            counts.push(t.await.unwrap().failed_logins);
        }
        counts.sort_unstable();
        assert_eq!(
            counts,
            (1..=40).collect::<Vec<_>>(),
            "{}: each failure saw its own count",
            label(&backend)
        );
        let state = app
            .state
            .db
            .read(move |c| db::users::lock_state(c, user.id))
            .await
            .unwrap();
        assert_eq!(state.failed_logins, 40, "{}", label(&backend));
        assert_eq!(
            state.locked_until,
            Some(now + 900),
            "{}: the fortieth locked the account",
            label(&backend)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_unique_name_stays_unique_under_parallel_inserts_and_case() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        let mut tasks = Vec::new();
        for i in 0..20 {
            let db = app.state.db.clone();
            let name = if i % 2 == 0 { "Grace" } else { "grace" };
            tasks.push(tokio::spawn(async move {
                db.write(move |c| {
                    db::users::insert(
                        c,
                        &db::users::NewUser {
                            sub: &tessera::crypto::random::random_id(),
                            username: name,
                            email: None,
                            name: None,
                            password_hash: "x",
                            is_admin: false,
                            now: 0,
                        },
                    )
                })
                .await
            }));
        }
        let mut created = 0;
        for t in tasks {
            match t.await.unwrap() {
                Ok(_) => created += 1,
                Err(db::DbError::Conflict) => {}
                Err(e) => panic!("{}: {e}", label(&backend)),
            }
        }
        assert_eq!(
            created,
            1,
            "{}: usernames are unique without regard to case",
            label(&backend)
        );
        let found = app.user("GRACE").await;
        assert!(found.is_some(), "{}: found without regard to case", label(&backend));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refusal_that_must_commit_commits_and_an_error_rolls_back() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        let user = app.add_user("ada").await;
        app.add_client("app", false).await;
        let kept = grant(&app, "app", user.id).await;
        let now = app.clock.now();
        // Ok carrying a refusal: the revocation stays.
        let g = kept.clone();
        let refused: Result<&str, _> = app
            .state
            .db
            .write(move |c| {
                grants::revoke_grant(c, &g, now)?;
                Ok("refused")
            })
            .await;
        assert_eq!(refused.unwrap(), "refused");
        // Err: everything the operation did is undone.
        let rolled = grant(&app, "app", user.id).await;
        let g = rolled.clone();
        let failed: Result<(), _> = app
            .state
            .db
            .write(move |c| {
                grants::revoke_grant(c, &g, now)?;
                Err(db::DbError::Corrupt("on purpose".into()))
            })
            .await;
        assert!(failed.is_err());
        let (a, b) = (kept.clone(), rolled.clone());
        let (kept_state, rolled_state) = app
            .state
            .db
            .read(move |c| Ok((grants::find_grant(c, &a)?, grants::find_grant(c, &b)?)))
            .await
            .unwrap();
        assert!(kept_state.unwrap().revoked_at.is_some(), "{}", label(&backend));
        assert!(rolled_state.unwrap().revoked_at.is_none(), "{}", label(&backend));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_refreshes_of_one_token_leave_one_live_successor() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        app.add_user("ada").await;
        let secret = app.add_client("app", false).await.unwrap();
        let tokens = app.tokens("app", &secret, "ada").await;
        let refresh = tokens["refresh_token"].as_str().unwrap().to_string();
        let mut tasks = Vec::new();
        for _ in 0..12 {
            let (url, secret, refresh) = (app.url("/token"), secret.clone(), refresh.clone());
            tasks.push(tokio::spawn(async move {
                crate::helpers::plain_client()
                    .post(url)
                    .basic_auth("app", Some(secret))
                    .form(&[("grant_type", "refresh_token"), ("refresh_token", refresh.as_str())])
                    .send()
                    .await
                    .unwrap()
                    .status()
                    .as_u16()
            }));
        }
        let mut ok = 0;
        for t in tasks {
            let status = t.await.unwrap();
            assert!(status == 200 || status == 400, "{}: {status}", label(&backend));
            ok += usize::from(status == 200);
        }
        assert!(ok >= 1, "{}", label(&backend));
        let live = app.state.db.read(db::testing::live_refresh_tokens).await.unwrap();
        assert_eq!(live, 1, "{}: one branch of the family lives", label(&backend));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lease_has_one_holder_until_it_runs_out() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        let take = |name: &'static str, holder: &'static str, now: i64| {
            let db = app.state.db.clone();
            async move {
                db.write(move |c| db::purge::take_lease(c, name, holder, now, now + 100))
                    .await
                    .unwrap()
            }
        };
        let l = label(&backend);
        assert!(take("job", "a", 1000).await, "{l}: a free lease is taken");
        assert!(!take("job", "b", 1050).await, "{l}: a running lease is not taken");
        assert!(take("job", "a", 1060).await, "{l}: its holder renews it (to 1160)");
        assert!(!take("job", "b", 1150).await, "{l}: the renewal counts");
        assert!(take("job", "b", 1160).await, "{l}: a lease that ran out is taken over");
        assert!(!take("job", "a", 1170).await, "{l}: and is the new holder's");
        let mut parallel = Vec::new();
        for holder in ["a", "b", "c", "d", "e", "f"] {
            parallel.push(tokio::spawn(take("other", holder, 1000)));
        }
        let mut holders = 0;
        for t in parallel {
            holders += usize::from(t.await.unwrap());
        }
        assert_eq!(holders, 1, "{l}: one of six parallel takers holds it");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_claims_of_due_deliveries_never_share_one() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        app.add_client("rp", false).await;
        let now = app.clock.now();
        app.state
            .db
            .write(move |c| {
                let a = db::logout::Audience {
                    client_id: "rp".into(),
                    uri: "http://127.0.0.1:9/logout".into(),
                    wants_sid: true,
                    alg: "RS256".into(),
                };
                for i in 0..60 {
                    db::logout::enqueue(c, &a, Some("sub"), &format!("sid{i}"), now, now + 3600)?;
                }
                Ok(())
            })
            .await
            .unwrap();
        let mut tasks = Vec::new();
        for _ in 0..6 {
            let db = app.state.db.clone();
            tasks.push(tokio::spawn(async move {
                db.write(move |c| db::logout::claim_due(c, now, now + 300, 15))
                    .await
                    .unwrap()
            }));
        }
        let mut ids = Vec::new();
        for t in tasks {
            ids.extend(t.await.unwrap().into_iter().map(|d| d.id));
        }
        // A claimer that met rows a parallel claim took gets fewer than it asked
        // for; the rest wait for the next pass.
        loop {
            let more = app
                .state
                .db
                .write(move |c| db::logout::claim_due(c, now, now + 300, 15))
                .await
                .unwrap();
            if more.is_empty() {
                break;
            }
            ids.extend(more.into_iter().map(|d| d.id));
        }
        let claimed = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), claimed, "{}: no delivery claimed twice", label(&backend));
        assert_eq!(claimed, 60, "{}: every due delivery claimed once", label(&backend));
        let again = app
            .state
            .db
            .write(move |c| db::logout::claim_due(c, now + 10, now + 310, 100))
            .await
            .unwrap();
        assert!(
            again.is_empty(),
            "{}: claimed deliveries wait for their lease",
            label(&backend)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nodes_starting_together_store_one_key_per_algorithm() {
    for backend in backends() {
        let db = crate::helpers::empty_db(&backend).await;
        let mut starts = Vec::new();
        for _ in 0..4 {
            let db = db.clone();
            starts.push(tokio::spawn(async move {
                let keep = tessera::oidc::keys::keep_retired(&Default::default());
                let jwks = tessera::oidc::keys::ensure(&db, &tessera::clock::Clock::system(), keep, None)
                    .await
                    .unwrap()
                    .jwks_json()
                    .to_string();
                let jwks: serde_json::Value = serde_json::from_str(&jwks).unwrap();
                let mut kids: Vec<String> = jwks["keys"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|k| k["kid"].as_str().unwrap().to_string())
                    .collect();
                kids.sort();
                kids
            }));
        }
        let mut published = Vec::new();
        for s in starts {
            published.push(s.await.unwrap());
        }
        let keys = db.read(db::keys::list).await.unwrap();
        let active: Vec<_> = keys.iter().filter(|k| k.retired_at.is_none()).collect();
        assert_eq!(
            active.len(),
            3,
            "{}: one RS256, one ES256, one EdDSA key",
            label(&backend)
        );
        assert!(
            published.windows(2).all(|w| w[0] == w[1]),
            "{}: every node publishes the same keys",
            label(&backend)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_consents_to_one_client_add_up() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        let user = app.add_user("ada").await;
        app.add_client("app", false).await;
        let now = app.clock.now();
        let mut tasks = Vec::new();
        for i in 0..20 {
            let db = app.state.db.clone();
            tasks.push(tokio::spawn(async move {
                let (scope, claim) = (format!("s{i}"), format!("c{i}"));
                db.write(move |c| db::consents::grant(c, user.id, "app", &scope, &claim, now))
                    .await
                    .unwrap()
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let consent = app
            .state
            .db
            .read(move |c| db::consents::find(c, user.id, "app"))
            .await
            .unwrap()
            .unwrap();
        for i in 0..20 {
            assert!(
                consent.scope.split(' ').any(|s| s == format!("s{i}")),
                "{}: scope s{i} lost in {}",
                label(&backend),
                consent.scope
            );
            assert!(
                consent.claims.split(' ').any(|s| s == format!("c{i}")),
                "{}: claim c{i} lost in {}",
                label(&backend),
                consent.claims
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_rotations_leave_one_key_that_signs_next() {
    use tessera::crypto::keys::Alg;
    for backend in backends() {
        let app = spawn_on(&backend).await;
        let now = app.clock.now();
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let db = app.state.db.clone();
            tasks.push(tokio::spawn(async move {
                db.write(move |c| Ok(tessera::oidc::keys::rotate(c, Alg::Es256, now, 30, None).map(drop)))
                    .await
                    .unwrap()
                    .unwrap()
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let keys = app.state.db.read(db::keys::list).await.unwrap();
        let open: Vec<_> = keys
            .iter()
            .filter(|k| k.alg == Alg::Es256 && k.retired_at.is_none())
            .collect();
        assert_eq!(
            open.len(),
            1,
            "{}: one key is next, not {}",
            label(&backend),
            open.len()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_claims_of_due_mail_never_share_one_and_a_link_is_spent_once() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        parallel_mailers_claim_each_due_mail_once(&app, &backend).await;
        one_of_twenty_parallel_uses_of_a_link_wins(&app, &backend).await;
    }
}

/// Six mailers claiming in parallel, then one until none is left: every due mail
/// once, no decoy.
async fn parallel_mailers_claim_each_due_mail_once(app: &TestApp, backend: &Backend) {
    let now = app.clock.now();
    app.state
        .db
        .write(move |c| {
            for i in 0..70 {
                let to = format!("person{i}@example.com");
                let mail = db::outbox::NewMail {
                    to: &to,
                    subject: "s",
                    text: "t",
                    html: "h",
                    kind: "notice",
                    user_id: None,
                    // Ten decoys among them, which no mailer may claim.
                    decoy: i % 7 == 3,
                };
                db::outbox::queue(c, &mail, now)?;
            }
            Ok(())
        })
        .await
        .unwrap();
    let claim = |db: tessera::db::Db| async move {
        db.write(move |c| db::outbox::claim_due(c, now, now + 180, 15))
            .await
            .unwrap()
    };
    let tasks: Vec<_> = (0..6).map(|_| tokio::spawn(claim(app.state.db.clone()))).collect();
    let mut ids = Vec::new();
    for t in tasks {
        ids.extend(t.await.unwrap().into_iter().map(|m| m.id));
    }
    loop {
        let more = claim(app.state.db.clone()).await;
        if more.is_empty() {
            break;
        }
        ids.extend(more.into_iter().map(|m| m.id));
    }
    let claimed = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), claimed, "{}: no mail claimed twice", label(backend));
    assert_eq!(claimed, 60, "{}: every due mail claimed once, no decoy", label(backend));
}

/// Twenty parallel uses of one mailed link: one wins.
async fn one_of_twenty_parallel_uses_of_a_link_wins(app: &TestApp, backend: &Backend) {
    let now = app.clock.now();
    let user = app.add_user("ada").await;
    let digest = tessera::crypto::TokenHash::of("a-link-secret");
    let id = app
        .state
        .db
        .write(move |c| {
            db::email_tokens::create(
                c,
                &db::email_tokens::NewToken {
                    digest: &digest,
                    purpose: db::email_tokens::RESET,
                    user_id: Some(user.id),
                    email: "ada@example.com",
                    data: "{}",
                    code: None,
                    request: None,
                    expires_at: now + 3600,
                },
                now,
            )
        })
        .await
        .unwrap();
    let uses: Vec<_> = (0..20)
        .map(|_| {
            let db = app.state.db.clone();
            tokio::spawn(async move {
                db.write(move |c| db::email_tokens::claim(c, id, now))
                    .await
                    .unwrap()
                    .won()
            })
        })
        .collect();
    let mut won = 0;
    for u in uses {
        won += usize::from(u.await.unwrap());
    }
    assert_eq!(won, 1, "{}: one of twenty parallel uses wins", label(backend));
}
