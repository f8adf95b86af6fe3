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
        .arg("--db")
        .arg(app.state.settings.db_path.clone())
        .args(["keys", "rotate", "--alg", "RS256"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    tessera::oidc::keys::reload(&app.state).await.unwrap();

    let after = app.tokens("app", &secret, "alice").await;
    let new_kid = jwt_parts(after["id_token"].as_str().unwrap()).0["kid"].clone();
    assert_ne!(old_kid, new_kid, "the new key signs");
    let jwks: serde_json::Value = plain_client()
        .get(app.url("/jwks"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let kids: Vec<_> = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].clone())
        .collect();
    assert!(kids.contains(&old_kid) && kids.contains(&new_kid), "both published");
    let old_at = before["access_token"].as_str().unwrap();
    assert_eq!(app.introspect(("app", &secret), old_at).await["active"], true);
    let id_token: IdToken<_, _, _, _> = serde_json::from_value::<CoreIdToken>(before["id_token"].clone()).unwrap();
    let client = rp(&app, "app", &secret).await;
    assert!(id_token
        .claims(&client.id_token_verifier(), &Nonce::new("n0nce".into()))
        .is_ok());

    // Once the old tokens have expired, the old key is gone.
    app.clock.advance(3600);
    tessera::oidc::keys::reload(&app.state).await.unwrap();
    let jwks: serde_json::Value = plain_client()
        .get(app.url("/jwks"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let kids: Vec<_> = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].clone())
        .collect();
    assert!(!kids.contains(&old_kid));
}
