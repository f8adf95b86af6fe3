//! Signing algorithms per client and key rotation.

use openidconnect::core::{CoreClient, CoreJwsSigningAlgorithm, CoreProviderMetadata};
use openidconnect::{ClientId, ClientSecret, IdToken, IssuerUrl, Nonce};

use crate::helpers::*;

type CoreIdToken = openidconnect::core::CoreIdToken;

async fn rp(
    app: &TestApp,
    id: &str,
    secret: &str,
) -> CoreClient<
    openidconnect::EndpointSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointMaybeSet,
    openidconnect::EndpointMaybeSet,
> {
    let http = openidconnect::reqwest::Client::builder()
        .redirect(openidconnect::reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let metadata = CoreProviderMetadata::discover_async(IssuerUrl::new(app.address.clone()).unwrap(), &http)
        .await
        .unwrap();
    CoreClient::from_provider_metadata(
        metadata,
        ClientId::new(id.into()),
        Some(ClientSecret::new(secret.into())),
    )
}

#[tokio::test]
async fn each_client_gets_tokens_signed_with_its_algorithm() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    for (id, alg, expected) in [
        ("rsa", "RS256", CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256),
        ("ec", "ES256", CoreJwsSigningAlgorithm::EcdsaP256Sha256),
        ("ed", "EdDSA", CoreJwsSigningAlgorithm::EdDsa),
    ] {
        let secret = app
            .add_client_with(id, false, |c| c.id_token_alg = alg.into())
            .await
            .unwrap();
        let tokens = app.tokens(id, &secret, "alice").await;
        let (header, _) = jwt_parts(tokens["access_token"].as_str().unwrap());
        assert_eq!(header["alg"], alg);
        let id_token: CoreIdToken = serde_json::from_value(tokens["id_token"].clone()).unwrap();
        let client = rp(&app, id, &secret).await;
        let verifier = client.id_token_verifier().set_allowed_algs(vec![expected]);
        let claims = id_token.claims(&verifier, &Nonce::new("n0nce".into())).unwrap();
        assert_eq!(claims.audiences()[0].as_str(), id);
        let at = tokens["access_token"].as_str().unwrap();
        assert_eq!(app.introspect((id, &secret), at).await["active"], true);
    }
}

#[tokio::test]
async fn rotation_signs_with_the_new_key_and_keeps_old_tokens_valid() {
    let app = spawn_app().await;
    app.add_user("alice").await;
    let secret = app.add_client("app", false).await.unwrap();
    let before = app.tokens("app", &secret, "alice").await;
    let old_kid = jwt_parts(before["id_token"].as_str().unwrap()).0["kid"].clone();

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(app.db_args())
        .args(["keys", "rotate", "--alg", "RS256"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    tessera::oidc::keys::reload(&app.state.ctx()).await.unwrap();
    let new_kid = serde_json::Value::from(
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .nth(4)
            .unwrap()
            .trim_end_matches(':'),
    );

    // Published at once, the new key waits until every node has listed it.
    let during = app.tokens("app", &secret, "alice").await;
    assert_eq!(jwt_parts(during["id_token"].as_str().unwrap()).0["kid"], old_kid);
    assert!(app.jwks_kids().await.contains(&new_kid));
    app.clock.advance(app.state.settings.key_publish_delay());

    let after = app.tokens("app", &secret, "alice").await;
    assert_eq!(
        jwt_parts(after["id_token"].as_str().unwrap()).0["kid"],
        new_kid,
        "the new key signs"
    );
    let kids = app.jwks_kids().await;
    assert!(kids.contains(&old_kid) && kids.contains(&new_kid), "both published");
    let old_at = before["access_token"].as_str().unwrap();
    assert_eq!(app.introspect(("app", &secret), old_at).await["active"], true);
    let id_token: IdToken<_, _, _, _> = serde_json::from_value::<CoreIdToken>(before["id_token"].clone()).unwrap();
    let client = rp(&app, "app", &secret).await;
    assert!(id_token
        .claims(&client.id_token_verifier(), &Nonce::new("n0nce".into()))
        .is_ok());

    // Once the old tokens have expired (a client may give day-long access tokens),
    // the old key is gone.
    app.clock
        .advance(tessera::oidc::keys::keep_retired(&app.state.settings.lifetimes) + 1);
    tessera::oidc::keys::reload(&app.state.ctx()).await.unwrap();
    let kids = app.jwks_kids().await;
    assert!(!kids.contains(&old_kid));
}

#[tokio::test]
async fn signing_keys_are_encrypted_at_rest_with_a_master_key() {
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    let master = tessera::crypto::sealed::MasterKey::parse(&encoded).unwrap();
    let app = spawn_with(|s| s.master_key = Some(master.clone())).await;
    app.add_user("alice").await;
    let secret = app.add_client("app", false).await.unwrap();
    let tokens = app.tokens("app", &secret, "alice").await;
    assert_eq!(
        app.introspect(("app", &secret), tokens["access_token"].as_str().unwrap())
            .await["active"],
        true
    );

    let stored: Vec<String> = app
        .state
        .db
        .read(|c| Ok(tessera::db::keys::list(c)?.into_iter().map(|k| k.private_pem).collect()))
        .await
        .unwrap();
    assert_eq!(stored.len(), 3);
    // The SQLite file only: PostgreSQL's files are the server's.
    #[cfg(unix)]
    if app.state.settings.database_url.is_none() {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&app.state.settings.db_path)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "the database is readable by its owner only");
    }
    for pem in &stored {
        assert!(
            pem.starts_with("sealed:v1:") && !pem.contains("PRIVATE KEY"),
            "stored in clear"
        );
    }

    let reopen = |key: Option<tessera::crypto::sealed::MasterKey>| {
        let mut settings = (*app.state.settings).clone();
        settings.listen = "127.0.0.1:0".parse().unwrap();
        settings.master_key = key;
        tessera::startup::Application::build(settings, tessera::clock::Clock::system())
    };
    let without = reopen(None)
        .await
        .err()
        .expect("must refuse without the key")
        .to_string();
    assert!(without.contains("encrypted"), "{without}");
    let wrong = tessera::crypto::sealed::MasterKey::parse(&base64::engine::general_purpose::STANDARD.encode([8u8; 32]));
    let wrong = reopen(Some(wrong.unwrap()))
        .await
        .err()
        .expect("must refuse a wrong key")
        .to_string();
    assert!(wrong.contains("does not open"), "{wrong}");

    let rotate = |env: Option<&str>| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"));
        cmd.args(app.db_args()).args(["keys", "rotate"]);
        cmd.env_remove("TESSERA_MASTER_KEY");
        if let Some(k) = env {
            cmd.env("TESSERA_MASTER_KEY", k);
        }
        cmd.output().unwrap()
    };
    assert!(!rotate(None).status.success(), "no clear key beside sealed ones");
    assert!(rotate(Some(&encoded)).status.success());
}
