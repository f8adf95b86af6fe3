//! The admin JSON API: who may call it (admin clients with `tessera:admin`, admin
//! sessions with CSRF), every resource's operations, list paging, and the audit trail.

use serde_json::{json, Value};

use crate::helpers::*;

/// An admin client and a `tessera:admin` token from its client credentials.
pub(crate) async fn admin_token(app: &TestApp) -> String {
    let secret = app
        .add_client_with("ops", false, |c| {
            c.admin = true;
            c.grant_types = vec!["client_credentials".into()];
        })
        .await
        .unwrap();
    let resp = app
        .token(
            Some(("ops", &secret)),
            &[("grant_type", "client_credentials"), ("scope", "tessera:admin")],
        )
        .await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    body["access_token"].as_str().unwrap().to_string()
}

struct Api<'a> {
    app: &'a TestApp,
    token: String,
}

impl<'a> Api<'a> {
    /// The API as the admin client `ops` calls it.
    async fn new(app: &'a TestApp) -> Api<'a> {
        Api {
            app,
            token: admin_token(app).await,
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        self.app.admin_api(&self.token, method, path, body).await
    }
    async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, None).await
    }
    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }
    async fn patch(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::PATCH, path, Some(body)).await
    }
    async fn delete(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::DELETE, path, None).await
    }
}

/// Every route of the API, with a method, for the authorisation sweep.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/stats"),
    ("GET", "/users"),
    ("POST", "/users"),
    ("GET", "/users/1"),
    ("PATCH", "/users/1"),
    ("DELETE", "/users/1"),
    ("POST", "/users/1/password"),
    ("POST", "/users/1/disable"),
    ("POST", "/users/1/enable"),
    ("POST", "/users/1/unlock"),
    ("POST", "/users/1/mfa/reset"),
    ("GET", "/users/1/sessions"),
    ("DELETE", "/users/1/sessions"),
    ("DELETE", "/users/1/sessions/x"),
    ("GET", "/users/1/identities"),
    ("DELETE", "/users/1/identities/up"),
    ("GET", "/clients"),
    ("POST", "/clients"),
    ("GET", "/clients/rp"),
    ("PATCH", "/clients/rp"),
    ("DELETE", "/clients/rp"),
    ("POST", "/clients/rp/secret"),
    ("GET", "/providers"),
    ("POST", "/providers"),
    ("GET", "/providers/up"),
    ("DELETE", "/providers/up"),
    ("PUT", "/providers/up/secret"),
    ("GET", "/groups"),
    ("POST", "/groups"),
    ("GET", "/groups/1"),
    ("PATCH", "/groups/1"),
    ("DELETE", "/groups/1"),
    ("PUT", "/groups/1/members/ada"),
    ("DELETE", "/groups/1/members/ada"),
    ("GET", "/keys"),
    ("POST", "/keys/rotate"),
    ("GET", "/audit"),
    ("GET", "/mail"),
    ("GET", "/invitations"),
    ("POST", "/invitations"),
    ("DELETE", "/invitations/1"),
    ("GET", "/registration-tokens"),
    ("POST", "/registration-tokens"),
    ("DELETE", "/registration-tokens/x"),
    ("POST", "/users/1/deletion/approve"),
    ("DELETE", "/users/1/deletion"),
    ("GET", "/presets"),
    ("POST", "/clients/from-preset"),
    ("GET", "/clients/rp/claims"),
    ("PUT", "/clients/rp/claims"),
    ("PUT", "/clients/rp/claims/role"),
    ("DELETE", "/clients/rp/claims/role"),
    ("GET", "/clients/rp/preview"),
    ("GET", "/apps"),
    ("POST", "/apps"),
    ("GET", "/apps/wiki"),
    ("DELETE", "/apps/wiki"),
];

#[tokio::test]
async fn only_admins_and_admin_clients_reach_the_api() {
    let app = spawn_app().await;
    let ada = app.add_user("ada").await;
    let secret = app.add_client("rp", false).await.unwrap();
    let b = browser();
    app.portal_login(&b, "ada", PASSWORD).await;
    let user_token = app.tokens("rp", &secret, "ada").await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    for (method, path) in ROUTES {
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let url = app.url(&format!("/admin/api{path}"));
        let anonymous = plain_client().request(m.clone(), &url).send().await.unwrap();
        assert_eq!(anonymous.status(), 401, "{method} {path} without credentials");
        let user = b.request(m.clone(), &url).send().await.unwrap();
        assert_eq!(user.status(), 403, "{method} {path} from a non-admin session");
        let bearer = plain_client()
            .request(m, &url)
            .bearer_auth(&user_token)
            .send()
            .await
            .unwrap();
        assert_eq!(bearer.status(), 403, "{method} {path} with a user's access token");
    }
    // A client that is not an admin client cannot even obtain the scope.
    let other = app
        .add_client_with("svc", false, |c| c.grant_types = vec!["client_credentials".into()])
        .await
        .unwrap();
    let resp = app
        .token(
            Some(("svc", &other)),
            &[("grant_type", "client_credentials"), ("scope", "tessera:admin")],
        )
        .await;
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"], "invalid_scope");

    // An administrator's session: reads freely, changes only with the CSRF token.
    app.make_admin(ada.id).await;
    let csrf = app.csrf(&b).await;
    assert_eq!(b.get(app.url("/admin/api/users")).send().await.unwrap().status(), 200);
    let body = json!({"name": "staff"});
    let no_csrf = b.post(app.url("/admin/api/groups")).json(&body).send().await.unwrap();
    assert_eq!(no_csrf.status(), 403);
    let wrong = b
        .post(app.url("/admin/api/groups"))
        .header("X-CSRF-Token", "nope")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 403);
    let ok = b
        .post(app.url("/admin/api/groups"))
        .header("X-CSRF-Token", &csrf)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 201);
    let audit = app.audit().await;
    assert!(audit
        .iter()
        .any(|e| e.0 == "admin.group_created" && e.1.as_deref() == Some("ada")));
}

#[tokio::test]
async fn users_are_created_listed_edited_and_removed() {
    let app = spawn_app().await;
    let api = Api::new(&app).await;
    app.add_user("root").await;
    let (s, _) = api.post("/groups", json!({"name": "staff"})).await;
    assert_eq!(s, 201);
    let bob = create_users(&api).await;
    page_and_search_users(&api).await;
    edit_and_remove_a_user(&api, bob["id"].as_i64().unwrap()).await;

    let audit: Vec<_> = app.audit().await;
    let updated = audit.iter().find(|e| e.0 == "admin.user_updated").unwrap();
    assert_eq!(updated.1.as_deref(), Some("client:ops"));
    assert_eq!(updated.2.as_deref(), Some("bob"));
    let (_, entries) = api.get("/audit?event=admin.user_updated").await;
    let detail = &entries["items"][0]["detail"];
    assert_eq!(detail["before"]["name"], Value::Null);
    assert_eq!(detail["after"]["name"], "Bob B");
}

/// Bad creations refused by field, then bob and five more people; bob as created.
async fn create_users(api: &Api<'_>) -> Value {
    let (s, body) = api.post("/users", json!({"username": "x"})).await;
    assert_eq!(s, 400);
    assert!(body["fields"]["password"].is_string());
    let (s, body) = api
        .post("/users", json!({"username": "bob", "password": "short"}))
        .await;
    assert_eq!((s, body["fields"]["password"].is_string()), (400, true));
    let (s, body) = api
        .post(
            "/users",
            json!({"username": "bob", "password": "long enough pw", "groups": ["nope"]}),
        )
        .await;
    assert_eq!((s, body["fields"]["groups"].is_string()), (400, true));
    let (s, bob) = api
        .post(
            "/users",
            json!({"username": "bob", "password": "long enough pw", "email": "bob@example.com", "groups": ["staff"],
                   "claims": {"given_name": "Bob"}}),
        )
        .await;
    assert_eq!(s, 201, "{bob}");
    assert_eq!(bob["groups"], json!(["staff"]));
    assert!(bob.get("password_hash").is_none());
    let (s, _) = api
        .post("/users", json!({"username": "BOB", "password": "long enough pw"}))
        .await;
    assert_eq!(s, 400, "usernames are unique regardless of case");
    for n in 0..5 {
        api.post(
            "/users",
            json!({"username": format!("user{n}"), "password": "long enough pw"}),
        )
        .await;
    }
    bob
}

/// The list sorts, pages and searches; a bad sort key or page size is refused.
async fn page_and_search_users(api: &Api<'_>) {
    let (_, page) = api.get("/users?sort=-username&limit=2&offset=1").await;
    assert_eq!(page["total"], 7);
    let names: Vec<_> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["user3", "user2"]);
    let (_, found) = api.get("/users?q=bob%40").await;
    assert_eq!(found["total"], 1);
    assert_eq!(api.get("/users?sort=password_hash").await.0, 400);
    assert_eq!(api.get("/users?limit=500").await.0, 400);
}

/// A person edited (a new username or unknown field refused), their password set,
/// disabled, enabled, unlocked, and deleted.
async fn edit_and_remove_a_user(api: &Api<'_>, id: i64) {
    let (s, edited) = api
        .patch(&format!("/users/{id}"), json!({"name": "Bob B", "groups": []}))
        .await;
    assert_eq!(s, 200);
    assert_eq!(
        (edited["name"].as_str(), edited["groups"].clone()),
        (Some("Bob B"), json!([]))
    );
    assert_eq!(
        api.patch(&format!("/users/{id}"), json!({"username": "robert"}))
            .await
            .0,
        400
    );
    assert_eq!(api.patch(&format!("/users/{id}"), json!({"unknown": 1})).await.0, 400);
    assert_eq!(
        api.post(&format!("/users/{id}/password"), json!({"password": "another long pw"}))
            .await
            .0,
        204
    );
    let (s, disabled) = api.post(&format!("/users/{id}/disable"), json!({})).await;
    assert_eq!((s, disabled["disabled"].as_bool()), (200, Some(true)));
    let (_, enabled) = api.post(&format!("/users/{id}/enable"), json!({})).await;
    assert_eq!(enabled["disabled"], false);
    assert_eq!(api.post(&format!("/users/{id}/unlock"), json!({})).await.0, 200);
    assert_eq!(api.get(&format!("/users/{id}/sessions")).await.1, json!([]));
    assert_eq!(api.delete(&format!("/users/{id}")).await.0, 204);
    assert_eq!(api.get(&format!("/users/{id}")).await.0, 404);
    assert_eq!(api.get("/users/not-a-number").await.0, 404);
}

#[tokio::test]
async fn the_last_administrator_cannot_be_removed_and_sessions_can_be_ended() {
    let app = spawn_app().await;
    let api = Api::new(&app).await;
    let root = app.add_user("root").await;
    app.make_admin(root.id).await;
    let (s, body) = api.post(&format!("/users/{}/disable", root.id), json!({})).await;
    assert_eq!((s, body["error"].as_str()), (409, Some("conflict")));
    assert_eq!(api.delete(&format!("/users/{}", root.id)).await.0, 409);
    assert_eq!(
        api.patch(&format!("/users/{}", root.id), json!({"is_admin": false}))
            .await
            .0,
        409
    );

    let b = browser();
    app.portal_login(&b, "root", PASSWORD).await;
    let (_, sessions) = api.get(&format!("/users/{}/sessions", root.id)).await;
    assert_eq!(sessions.as_array().unwrap().len(), 1);
    let sid = sessions[0]["sid"].as_str().unwrap();
    assert_eq!(api.delete(&format!("/users/{}/sessions/unknown", root.id)).await.0, 404);
    let (s, ended) = api.delete(&format!("/users/{}/sessions/{sid}", root.id)).await;
    assert_eq!((s, ended["ended"].as_i64()), (200, Some(1)));
    let html = b.get(app.url("/account")).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("your Tessera account"), "the browser was signed out");
}

#[tokio::test]
async fn clients_groups_keys_and_audit_through_the_api() {
    let app = spawn_app().await;
    let api = Api::new(&app).await;
    let first_secret = register_a_client(&api).await;
    edit_and_rotate_a_client(&api, &first_secret).await;
    manage_a_group(&api).await;
    rotate_a_key(&api).await;
    assert_eq!(api.delete("/clients/web").await.0, 204);
    assert_eq!(api.get("/clients/web").await.0, 404);
    read_the_audit(&api).await;
}

/// Client `web` registered after two refusals (and a second time refused); its
/// first secret.
async fn register_a_client(api: &Api<'_>) -> String {
    let (s, body) = api
        .post(
            "/clients",
            json!({"client_id": "web", "grant_types": ["authorization_code"]}),
        )
        .await;
    assert_eq!((s, body["fields"]["redirect_uris"].is_string()), (400, true));
    let (s, body) = api
        .post(
            "/clients",
            json!({"client_id": "web", "redirect_uris": ["https://web.example/cb"], "allowed_groups": ["ghosts"]}),
        )
        .await;
    assert_eq!((s, body["fields"]["allowed_groups"].is_string()), (400, true));
    let (s, web) = api
        .post(
            "/clients",
            json!({"client_id": "web", "name": "Web", "redirect_uris": ["https://web.example/cb"], "access_token_ttl": 120,
                   "id_token_signed_response_alg": "ES256"}),
        )
        .await;
    assert_eq!(s, 201, "{web}");
    let first_secret = web["client_secret"].as_str().unwrap().to_string();
    assert_eq!(
        api.post(
            "/clients",
            json!({"client_id": "web", "redirect_uris": ["https://web.example/cb"]})
        )
        .await
        .0,
        400
    );
    let (_, shown) = api.get("/clients/web").await;
    assert!(shown.get("client_secret").is_none(), "a secret is shown once");
    assert_eq!(shown["access_token_ttl"], 120);
    first_secret
}

/// The client's token lifetime applies, edits are checked, and a new secret retires
/// the first.
async fn edit_and_rotate_a_client(api: &Api<'_>, first_secret: &str) {
    let app = api.app;
    // Client credentials tokens follow the client's own lifetime.
    api.patch(
        "/clients/web",
        json!({"grant_types": ["authorization_code", "client_credentials"]}),
    )
    .await;
    let resp = app
        .token(Some(("web", first_secret)), &[("grant_type", "client_credentials")])
        .await;
    assert_eq!(resp.json::<Value>().await.unwrap()["expires_in"], 120);

    let (s, patched) = api
        .patch("/clients/web", json!({"name": "Web app", "consent_required": true}))
        .await;
    assert_eq!(
        (s, patched["name"].as_str(), patched["consent_required"].as_bool()),
        (200, Some("Web app"), Some(true))
    );
    assert_eq!(api.patch("/clients/web", json!({"public": true})).await.0, 400);
    assert_eq!(api.patch("/clients/web", json!({"bogus": true})).await.0, 400);
    let (_, rotated) = api.post("/clients/web/secret", json!({})).await;
    let new_secret = rotated["client_secret"].as_str().unwrap();
    assert_ne!(new_secret, first_secret);
    let old = app
        .token(Some(("web", first_secret)), &[("grant_type", "client_credentials")])
        .await;
    assert_eq!(old.status(), 401);
    let (_, list) = api.get("/clients?q=we").await;
    assert_eq!(list["total"], 1);
}

/// A group created (a duplicate and a bad name refused), a member added and removed,
/// renamed, deleted.
async fn manage_a_group(api: &Api<'_>) {
    let (_, staff) = api.post("/groups", json!({"name": "staff"})).await;
    let gid = staff["id"].as_i64().unwrap();
    assert_eq!(api.post("/groups", json!({"name": "staff"})).await.0, 400);
    assert_eq!(api.post("/groups", json!({"name": "bad/name"})).await.0, 400);
    api.app.add_user("ada").await;
    let (s, g) = api
        .call(reqwest::Method::PUT, &format!("/groups/{gid}/members/ada"), None)
        .await;
    assert_eq!((s, g["members"].as_i64()), (200, Some(1)));
    assert_eq!(
        api.call(reqwest::Method::PUT, &format!("/groups/{gid}/members/nobody"), None)
            .await
            .0,
        400
    );
    let (_, renamed) = api.patch(&format!("/groups/{gid}"), json!({"name": "team"})).await;
    assert_eq!(renamed["name"], "team");
    let (_, g) = api
        .call(reqwest::Method::DELETE, &format!("/groups/{gid}/members/ada"), None)
        .await;
    assert_eq!(g["members"], 0);
    assert_eq!(api.delete(&format!("/groups/{gid}")).await.0, 204);
    assert_eq!(api.get(&format!("/groups/{gid}")).await.0, 404);
}

/// A rotated key is published at once, signs after the publish delay, and the one
/// it replaces is retiring.
async fn rotate_a_key(api: &Api<'_>) {
    let app = api.app;
    let (_, keys) = api.get("/keys").await;
    let before = keys.as_array().unwrap().len();
    let rotated_from = app.clock.now();
    let (s, key) = api.post("/keys/rotate", json!({"alg": "ES256"})).await;
    assert_eq!(s, 201);
    assert_eq!(api.post("/keys/rotate", json!({"alg": "HS256"})).await.0, 400);
    let (_, keys) = api.get("/keys").await;
    assert_eq!(keys.as_array().unwrap().len(), before + 1);
    let status = |kid: &Value| keys.as_array().unwrap().iter().find(|k| &k["kid"] == kid).unwrap()["status"].clone();
    assert_eq!(status(&key["kid"]), "published", "the new key waits to sign: {keys}");
    // The clock is the system's: a second may turn between the rotation and here.
    let signs_from = key["signs_from"].as_i64().unwrap();
    assert!(
        (rotated_from + 30..=app.clock.now() + 30).contains(&signs_from),
        "signs after the 30 s publish delay: {signs_from} from {rotated_from}"
    );
    let previous = keys
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["alg"] == "ES256" && k["kid"] != key["kid"] && k["status"] != "retired")
        .unwrap();
    assert_eq!(previous["status"], "retiring");
    let jwks = app.get_json("/jwks").await;
    assert!(
        jwks["keys"].as_array().unwrap().iter().any(|k| k["kid"] == key["kid"]),
        "published at once"
    );
}

/// The audit trail: newest first, filtered by event and by who, with the client's
/// address on token events; and the stats.
async fn read_the_audit(api: &Api<'_>) {
    let (_, audit) = api.get("/audit?event=admin.&limit=3").await;
    assert_eq!(audit["items"].as_array().unwrap().len(), 3);
    assert!(audit["total"].as_i64().unwrap() >= 10);
    assert_eq!(audit["items"][0]["event"], "admin.client_deleted", "newest first");
    let (_, issued) = api.get("/audit?event=token.issued&who=client:web").await;
    assert_eq!(
        issued["items"][0]["ip"], "127.0.0.1",
        "token events carry the client's address"
    );
    assert_eq!(issued["items"][0]["detail"]["grant_type"], "client_credentials");
    let (_, by_who) = api.get("/audit?who=client:web").await;
    assert!(by_who["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["actor"] == "client:web" || e["target"] == "client:web"));
    let (_, stats) = api.get("/stats").await;
    assert_eq!(stats["users"], 1);
    assert_eq!(api.get("/nothing-here").await.0, 404);
}

#[tokio::test]
async fn a_client_with_allowed_groups_refuses_others_and_says_why() {
    let app = spawn_app().await;
    let api = Api::new(&app).await;
    app.add_user("ada").await;
    api.post("/groups", json!({"name": "staff"})).await;
    let secret = app
        .add_client_with("rp", false, |c| c.allowed_groups = vec!["staff".into()])
        .await
        .unwrap();

    let b = browser();
    let fields = app.open_login(&b, &app.authorize_url("rp", &[])).await;
    let resp = app.submit_login(&b, fields, "ada", PASSWORD).await;
    assert_eq!(resp.status(), 403);
    let html = resp.text().await.unwrap();
    assert!(html.contains("not allowed to use"));
    assert!(
        html.contains("error=access_denied"),
        "the way back carries access_denied"
    );
    // Already signed in: the same page, and prompt=none answers access_denied directly.
    let again = b.get(app.authorize_url("rp", &[])).send().await.unwrap();
    assert_eq!(again.status(), 403);
    let silent = b
        .get(app.authorize_url("rp", &[("prompt", "none")]))
        .send()
        .await
        .unwrap();
    assert_eq!(redirect_params(&silent)["error"], "access_denied");

    let (_, g) = api.get("/groups").await;
    let gid = g[0]["id"].as_i64().unwrap();
    api.call(reqwest::Method::PUT, &format!("/groups/{gid}/members/ada"), None)
        .await;
    // Renaming the group keeps the client's rule; deleting it while required is refused.
    api.patch(&format!("/groups/{gid}"), json!({"name": "employees"})).await;
    assert_eq!(api.get("/clients/rp").await.1["allowed_groups"], json!(["employees"]));
    let (s, body) = api.delete(&format!("/groups/{gid}")).await;
    assert_eq!((s, body["error"].as_str()), (409, Some("conflict")));
    let ok = b.get(app.authorize_url("rp", &[])).send().await.unwrap();
    assert_eq!(ok.status(), 302);
    let code = redirect_params(&ok)["code"].clone();
    assert!(app.exchange("rp", &secret, &code).await["id_token"].is_string());
}

#[tokio::test]
async fn users_sort_by_creation_time_as_numbers() {
    let app = spawn_app().await;
    for (name, at) in [("late", 1_000_000_000_i64), ("early", 999_999_999)] {
        app.state
            .db
            .write(move |c| {
                tessera::db::users::insert(
                    c,
                    &tessera::db::users::NewUser {
                        sub: name,
                        username: name,
                        email: None,
                        name: None,
                        password_hash: "x",
                        is_admin: false,
                        now: at,
                    },
                )
                .map(|_| ())
            })
            .await
            .unwrap();
    }
    let q = tessera::admin::ListQuery::parse("sort=created_at").unwrap();
    let listed = tessera::admin::users::list(&app.state.ctx(), &q).await.unwrap();
    let names: Vec<&str> = listed.items.iter().map(|u| u.username.as_str()).collect();
    assert_eq!(names, ["early", "late"], "9 digits before 10, not as text");
}
