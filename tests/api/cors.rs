//! CORS for browser apps: public metadata for any origin, the token endpoints for the
//! origins a client registered, preflights answered, nothing for introspection or
//! the admin API, and never credentials.

use crate::helpers::*;

const SPA: &str = "http://localhost:5173";

async fn app_with_spa() -> TestApp {
    let app = spawn_app().await;
    app.add_client_with("spa", true, |c| {
        c.redirect_uris = vec![format!("{SPA}/callback")];
        c.web_origins = vec!["https://app.example.org".into()];
    })
    .await;
    app
}

fn allow_origin(resp: &reqwest::Response) -> Option<String> {
    resp.headers()
        .get("access-control-allow-origin")
        .map(|v| v.to_str().unwrap().to_string())
}

async fn preflight(app: &TestApp, path: &str, origin: &str) -> reqwest::Response {
    plain_client()
        .request(reqwest::Method::OPTIONS, app.url(path))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "authorization, content-type")
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn discovery_and_jwks_are_readable_from_any_origin() {
    let app = app_with_spa().await;
    for path in ["/.well-known/openid-configuration", "/jwks"] {
        let resp = plain_client()
            .get(app.url(path))
            .header("origin", "https://anywhere.example")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(allow_origin(&resp).as_deref(), Some("*"), "{path}");
        assert!(resp.headers().get("access-control-allow-credentials").is_none());
        let pre = preflight(&app, path, "https://anywhere.example").await;
        assert_eq!(pre.status(), 204);
        assert_eq!(allow_origin(&pre).as_deref(), Some("*"));
    }
}

#[tokio::test]
async fn the_token_endpoints_answer_the_origins_a_client_registered() {
    let app = app_with_spa().await;
    for path in ["/token", "/revoke", "/device_authorization", "/userinfo"] {
        for origin in [SPA, "https://app.example.org"] {
            let pre = preflight(&app, path, origin).await;
            assert_eq!(pre.status(), 204, "{path} from {origin}");
            assert_eq!(allow_origin(&pre).as_deref(), Some(origin));
            let methods = pre.headers()["access-control-allow-methods"]
                .to_str()
                .unwrap()
                .to_string();
            assert!(methods.contains("POST"), "{methods}");
            let headers = pre.headers()["access-control-allow-headers"]
                .to_str()
                .unwrap()
                .to_lowercase();
            assert!(headers.contains("authorization") && headers.contains("content-type"));
            assert!(pre.headers().get("access-control-allow-credentials").is_none());
        }
        let stranger = preflight(&app, path, "https://evil.example").await;
        assert_eq!(stranger.status(), 403, "{path}");
        assert!(allow_origin(&stranger).is_none());
    }
    // The actual answer, an error included, is readable by the client's own origin.
    let resp = plain_client()
        .post(app.url("/token"))
        .header("origin", SPA)
        .form(&[
            ("grant_type", "refresh_token"),
            ("client_id", "spa"),
            ("refresh_token", "nope"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(allow_origin(&resp).as_deref(), Some(SPA));
    assert!(resp.headers()["vary"].to_str().unwrap().contains("Origin"));
    // Another client's origin gets nothing, even for a request naming this client.
    app.add_client_with("other", true, |c| {
        c.redirect_uris = vec!["http://localhost:9999/cb".into()]
    })
    .await;
    let resp = plain_client()
        .post(app.url("/token"))
        .header("origin", "http://localhost:9999")
        .form(&[
            ("grant_type", "refresh_token"),
            ("client_id", "spa"),
            ("refresh_token", "nope"),
        ])
        .send()
        .await
        .unwrap();
    assert!(
        allow_origin(&resp).is_none(),
        "the origin of `other` may not read `spa`'s answers"
    );
}

#[tokio::test]
async fn introspection_and_the_admin_api_get_no_cors() {
    let app = app_with_spa().await;
    for path in ["/introspect", "/admin/api/users"] {
        let pre = preflight(&app, path, SPA).await;
        assert!(allow_origin(&pre).is_none(), "{path}");
        assert!(pre.status().is_client_error(), "{path}: {}", pre.status());
    }
    let resp = plain_client()
        .post(app.url("/introspect"))
        .header("origin", SPA)
        .form(&[("token", "x")])
        .send()
        .await
        .unwrap();
    assert!(allow_origin(&resp).is_none());
}

#[tokio::test]
async fn web_origins_are_checked_when_a_client_is_registered() {
    let app = spawn_app().await;
    let actor = tessera::admin::Actor {
        name: "root".into(),
        ip: None,
        user_id: None,
    };
    let mut spec = tessera::admin::clients::ClientSpec {
        client_id: "spa".into(),
        public: true,
        redirect_uris: vec![format!("{SPA}/cb")],
        web_origins: vec!["https://app.example.org/path".into()],
        ..Default::default()
    };
    let Err(tessera::admin::AdminError::Invalid(p)) =
        tessera::admin::clients::create(&app.state.ctx(), &actor, &spec).await
    else {
        panic!("an origin with a path was accepted");
    };
    assert!(p.contains_key("web_origins"));
    spec.web_origins = vec!["https://app.example.org".into()];
    tessera::admin::clients::create(&app.state.ctx(), &actor, &spec)
        .await
        .unwrap();
}
