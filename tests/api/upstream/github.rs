//! A stand-in of GitHub for the `github` provider kind, laid out as GitHub Enterprise
//! Server at base URL B: the OAuth web application flow at `B/login/oauth/authorize`
//! and `B/login/oauth/access_token`, the REST API at `B/api/v3/user` and
//! `B/api/v3/user/emails`. Shapes follow GitHub's documentation ("Authorizing OAuth
//! apps", "Troubleshooting OAuth app access token request errors", "Get the
//! authenticated user", "List email addresses for the authenticated user").
//!
//! The authorization page is skipped: the stand-in's user is already signed in and has
//! approved the app, so authorize answers with the redirect at once. Who is signed in:
//! the `login` query parameter (GitHub's own account hint) if it names a user, else the
//! one set with [`GitHubStandIn::sign_in_as`], else the first user.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::dev::{ServerHandle, Service};
use actix_web::http::header;
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use base64::Engine;
use rand::distributions::{Alphanumeric, DistString};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const DOCS: &str = "https://docs.github.com";
/// GitHub's codes expire after ten minutes.
const CODE_LIFETIME: Duration = Duration::from_secs(600);

/// One GitHub account.
#[derive(Clone, Debug)]
pub struct GitHubUser {
    /// The numeric id: Tessera's upstream subject.
    pub id: u64,
    pub login: String,
    pub name: Option<String>,
    /// `(email, primary, verified)`, as `/user/emails` lists them. A verified primary
    /// address is also the profile's public `email`; otherwise that is `null`.
    pub emails: Vec<(String, bool, bool)>,
}

impl GitHubUser {
    /// A user with one primary address, verified or not.
    pub fn new(id: u64, login: &str, email: &str, verified: bool) -> Self {
        Self {
            id,
            login: login.to_string(),
            name: None,
            emails: vec![(email.to_string(), true, verified)],
        }
    }
}

struct Grant {
    user: u64,
    client_id: String,
    redirect_uri: Option<String>,
    challenge: Option<String>,
    scope: String,
    issued: Instant,
}

struct Inner {
    client_id: String,
    client_secret: String,
    users: Vec<GitHubUser>,
    signed_in: Option<String>,
    deny_next: bool,
    codes: HashMap<String, Grant>,
    /// token → (user id, granted scopes, comma-separated)
    tokens: HashMap<String, (u64, String)>,
    hits: HashMap<String, usize>,
}

type Shared = Arc<Mutex<Inner>>;

/// The running stand-in; stopped when dropped.
pub struct GitHubStandIn {
    /// `http://127.0.0.1:PORT`: what Tessera is configured with as the GHE base URL.
    pub base: String,
    pub client_id: String,
    pub client_secret: String,
    state: Shared,
    handle: ServerHandle,
}

fn random(prefix: &str, len: usize) -> String {
    format!("{prefix}{}", Alphanumeric.sample_string(&mut rand::thread_rng(), len))
}

impl GitHubStandIn {
    /// Starts the stand-in on 127.0.0.1:0 for an OAuth app with a random client id and
    /// secret (read them from the fields).
    pub async fn start(users: Vec<GitHubUser>) -> GitHubStandIn {
        Self::start_with(&random("Iv1.", 16), &random("", 40), users).await
    }

    /// Starts the stand-in for the OAuth app `client_id` / `client_secret`.
    pub async fn start_with(client_id: &str, client_secret: &str, users: Vec<GitHubUser>) -> GitHubStandIn {
        let state: Shared = Arc::new(Mutex::new(Inner {
            client_id: client_id.to_string(),
            client_secret: client_secret.to_string(),
            users,
            signed_in: None,
            deny_next: false,
            codes: HashMap::new(),
            tokens: HashMap::new(),
            hits: HashMap::new(),
        }));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let data = web::Data::new((state.clone(), base.clone()));
        let server = HttpServer::new(move || {
            let counted = data.clone();
            App::new()
                .app_data(data.clone())
                .wrap_fn(move |req, srv| {
                    let mut inner = counted.0.lock().unwrap();
                    *inner.hits.entry(req.path().to_string()).or_default() += 1;
                    drop(inner);
                    srv.call(req)
                })
                .route("/login/oauth/authorize", web::get().to(authorize))
                .route("/login/oauth/access_token", web::post().to(access_token))
                .route("/api/v3/user", web::get().to(user))
                .route("/api/v3/user/emails", web::get().to(emails))
        })
        .listen(listener)
        .unwrap()
        .workers(1)
        .disable_signals()
        .run();
        let handle = server.handle();
        tokio::spawn(server);
        GitHubStandIn {
            base,
            client_id: client_id.to_string(),
            client_secret: client_secret.to_string(),
            state,
            handle,
        }
    }

    /// The user the next authorizations sign in (unless a `login` parameter names
    /// another): a person switching accounts at GitHub.
    pub fn sign_in_as(&self, login: &str) {
        let mut inner = self.state.lock().unwrap();
        assert!(inner.users.iter().any(|u| u.login == login), "no stand-in user {login}");
        inner.signed_in = Some(login.to_string());
    }

    /// The next authorization is refused by the user: the redirect carries
    /// `error=access_denied` (GitHub's "Troubleshooting authorization request errors").
    pub fn deny_next(&self) {
        self.state.lock().unwrap().deny_next = true;
    }

    /// How many requests reached `path` (e.g. "/login/oauth/access_token").
    pub fn hits(&self, path: &str) -> usize {
        let inner = self.state.lock().unwrap();
        inner.hits.get(path).copied().unwrap_or(0)
    }

    /// Replaces a user's record (same `id`), e.g. to verify an address between sign-ins.
    pub fn update_user(&self, user: GitHubUser) {
        let mut inner = self.state.lock().unwrap();
        let slot = inner.users.iter_mut().find(|u| u.id == user.id);
        *slot.expect("a stand-in user with that id") = user;
    }
}

impl Drop for GitHubStandIn {
    fn drop(&mut self) {
        // The stop command is sent when `stop` is called; the future only waits for it.
        drop(self.handle.stop(false));
    }
}

type Data = web::Data<(Shared, String)>;

fn page(status: actix_web::http::StatusCode, text: &str) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .body(format!("<!DOCTYPE html><title>GitHub</title><p>{text}</p>"))
}

async fn authorize(data: Data, q: web::Query<HashMap<String, String>>) -> HttpResponse {
    use actix_web::http::StatusCode;
    let mut inner = data.0.lock().unwrap();
    // An unknown client_id: GitHub shows its 404 page, there is nowhere to redirect to.
    if q.get("client_id") != Some(&inner.client_id) {
        return page(StatusCode::NOT_FOUND, "Not Found");
    }
    // The stand-in has no registered callback URL to fall back on.
    let Some(redirect) = q.get("redirect_uri") else {
        return page(StatusCode::BAD_REQUEST, "redirect_uri is required here");
    };
    let Ok(mut target) = url::Url::parse(redirect) else {
        return page(StatusCode::BAD_REQUEST, "redirect_uri is not a URL");
    };
    let challenge = q.get("code_challenge").cloned();
    if challenge.is_some() && q.get("code_challenge_method").map(String::as_str) != Some("S256") {
        // GitHub supports S256 only.
        return page(StatusCode::BAD_REQUEST, "code_challenge_method must be S256");
    }
    {
        let mut pairs = target.query_pairs_mut();
        if std::mem::take(&mut inner.deny_next) {
            pairs.append_pair("error", "access_denied");
            pairs.append_pair("error_description", "The user has denied your application access.");
            pairs.append_pair(
                "error_uri",
                &format!("{DOCS}/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/#access-denied"),
            );
        } else {
            let hinted = q.get("login").and_then(|l| inner.users.iter().find(|u| &u.login == l));
            let chosen = hinted
                .or_else(|| {
                    let name = inner.signed_in.as_ref()?;
                    inner.users.iter().find(|u| &u.login == name)
                })
                .or(inner.users.first());
            let Some(user) = chosen.map(|u| u.id) else {
                return page(StatusCode::INTERNAL_SERVER_ERROR, "the stand-in has no users");
            };
            let code = random("", 20);
            let scope = q
                .get("scope")
                .map(|s| {
                    s.split([' ', ','])
                        .filter(|s| !s.is_empty())
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default();
            let grant = Grant {
                user,
                client_id: inner.client_id.clone(),
                redirect_uri: Some(redirect.clone()),
                challenge,
                scope,
                issued: Instant::now(),
            };
            inner.codes.insert(code.clone(), grant);
            pairs.append_pair("code", &code);
        }
        if let Some(state) = q.get("state") {
            pairs.append_pair("state", state);
        }
    }
    HttpResponse::Found()
        .insert_header((header::LOCATION, target.to_string()))
        .finish()
}

/// GitHub's token-request error; HTTP 200, as GitHub answers them.
fn token_error(error: &str, description: &str, anchor: &str) -> Value {
    json!({
        "error": error,
        "error_description": description,
        "error_uri": format!("{DOCS}/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#{anchor}"),
    })
}

/// JSON with `Accept: application/json`, else GitHub's default form encoding.
fn token_reply(req: &HttpRequest, body: Value) -> HttpResponse {
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if accept.contains("json") {
        return HttpResponse::Ok().json(body);
    }
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in body.as_object().into_iter().flatten() {
        form.append_pair(k, v.as_str().unwrap_or_default());
    }
    HttpResponse::Ok()
        .content_type("application/x-www-form-urlencoded; charset=utf-8")
        .body(form.finish())
}

async fn access_token(req: HttpRequest, data: Data, form: web::Form<HashMap<String, String>>) -> HttpResponse {
    let mut inner = data.0.lock().unwrap();
    let field = |name: &str| form.get(name).map(String::as_str).unwrap_or("");
    if field("client_id") != inner.client_id || field("client_secret") != inner.client_secret {
        let body = token_error(
            "incorrect_client_credentials",
            "The client_id and/or client_secret passed are incorrect.",
            "incorrect-client-credentials",
        );
        return token_reply(&req, body);
    }
    let bad_code = || {
        token_error(
            "bad_verification_code",
            "The code passed is incorrect or expired.",
            "bad-verification-code",
        )
    };
    // Single use: the code is gone whatever the outcome.
    let Some(grant) = inner.codes.remove(field("code")) else {
        return token_reply(&req, bad_code());
    };
    if grant.client_id != field("client_id") || grant.issued.elapsed() > CODE_LIFETIME {
        return token_reply(&req, bad_code());
    }
    if let (Some(sent), Some(asked)) = (form.get("redirect_uri"), &grant.redirect_uri) {
        if sent != asked {
            let body = token_error(
                "redirect_uri_mismatch",
                "The redirect_uri MUST match the registered callback URL for this application.",
                "redirect-uri-mismatch2",
            );
            return token_reply(&req, body);
        }
    }
    // RFC 7636 §4.6: BASE64URL(SHA256(code_verifier)) must equal the challenge.
    if let Some(challenge) = &grant.challenge {
        let digest = Sha256::digest(field("code_verifier").as_bytes());
        let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
        if &computed != challenge {
            return token_reply(&req, bad_code());
        }
    }
    let token = random("gho_", 36);
    inner.tokens.insert(token.clone(), (grant.user, grant.scope.clone()));
    token_reply(
        &req,
        json!({"access_token": token, "token_type": "bearer", "scope": grant.scope}),
    )
}

/// The user and scopes behind the request's `Authorization: Bearer|token …`, or
/// GitHub's 401. GitHub also refuses API requests without a User-Agent (403).
fn authenticate(req: &HttpRequest, inner: &Inner) -> Result<(GitHubUser, String), Box<HttpResponse>> {
    if req.headers().get(header::USER_AGENT).is_none() {
        return Err(Box::new(HttpResponse::Forbidden()
            .content_type("text/plain")
            .body("Request forbidden by administrative rules. Please make sure your request has a User-Agent header (https://docs.github.com/en/rest/overview/resources-in-the-rest-api#user-agent-required). Check https://developer.github.com for other possible causes.\n")));
    }
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("token ")))
        .map(str::trim);
    let found = token.and_then(|t| inner.tokens.get(t)).and_then(|(id, scope)| {
        let user = inner.users.iter().find(|u| u.id == *id)?;
        Some((user.clone(), scope.clone()))
    });
    found.ok_or_else(|| {
        Box::new(HttpResponse::Unauthorized().json(json!({
            "message": "Bad credentials",
            "documentation_url": format!("{DOCS}/rest"),
            "status": "401",
        })))
    })
}

fn api_reply(scope: &str, body: Value) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(("X-OAuth-Scopes", scope.replace(',', ", ")))
        .insert_header(("X-GitHub-Media-Type", "github.v3; format=json"))
        .json(body)
}

async fn user(req: HttpRequest, data: Data) -> HttpResponse {
    let inner = data.0.lock().unwrap();
    let (u, scope) = match authenticate(&req, &inner) {
        Ok(found) => found,
        Err(refused) => return *refused,
    };
    let base = &data.1;
    let api = format!("{base}/api/v3/users/{}", u.login);
    let public = u.emails.iter().find(|(_, primary, verified)| *primary && *verified);
    api_reply(
        &scope,
        json!({
            "login": u.login,
            "id": u.id,
            "node_id": base64::engine::general_purpose::STANDARD.encode(format!("04:User{}", u.id)),
            "avatar_url": format!("{base}/avatars/u/{}", u.id),
            "gravatar_id": "",
            "url": api,
            "html_url": format!("{base}/{}", u.login),
            "followers_url": format!("{api}/followers"),
            "following_url": format!("{api}/following{{/other_user}}"),
            "gists_url": format!("{api}/gists{{/gist_id}}"),
            "starred_url": format!("{api}/starred{{/owner}}{{/repo}}"),
            "subscriptions_url": format!("{api}/subscriptions"),
            "organizations_url": format!("{api}/orgs"),
            "repos_url": format!("{api}/repos"),
            "events_url": format!("{api}/events{{/privacy}}"),
            "received_events_url": format!("{api}/received_events"),
            "type": "User",
            "site_admin": false,
            "name": u.name,
            "company": null,
            "blog": "",
            "location": null,
            "email": public.map(|(e, _, _)| e),
            "hireable": null,
            "bio": null,
            "twitter_username": null,
            "public_repos": 0,
            "public_gists": 0,
            "followers": 0,
            "following": 0,
            "created_at": "2020-01-01T00:00:00Z",
            "updated_at": "2020-01-01T00:00:00Z",
        }),
    )
}

async fn emails(req: HttpRequest, data: Data) -> HttpResponse {
    let inner = data.0.lock().unwrap();
    let (u, scope) = match authenticate(&req, &inner) {
        Ok(found) => found,
        Err(refused) => return *refused,
    };
    // OAuth app tokens need the user:email (or user) scope for this endpoint; without
    // it GitHub answers 404.
    if !scope.split(',').any(|s| s == "user:email" || s == "user") {
        return HttpResponse::NotFound().json(json!({
            "message": "Not Found",
            "documentation_url": format!("{DOCS}/rest/users/emails#list-email-addresses-for-the-authenticated-user"),
            "status": "404",
        }));
    }
    let list: Vec<Value> = u
        .emails
        .iter()
        .map(|(email, primary, verified)| {
            json!({
                "email": email,
                "primary": primary,
                "verified": verified,
                "visibility": if *primary && *verified { Value::from("public") } else { Value::Null },
            })
        })
        .collect();
    api_reply(&scope, Value::Array(list))
}
