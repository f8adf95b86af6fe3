//! OpenID Provider metadata (OpenID Connect Discovery 1.0 §3), served also as RFC 8414
//! authorization server metadata; it lists only what is implemented.

use serde_json::{json, Value};

use super::claims::{supported_claims, SUPPORTED_SCOPES};
use crate::config::{Registration, Settings, Signup};
use crate::oidc::Ctx;

/// Algorithms a client may sign request objects and DPoP proofs with.
pub const CLIENT_SIGNING_ALGS: &[&str] = &["RS256", "PS256", "ES256", "EdDSA"];

pub fn document(cx: &Ctx<'_>) -> Value {
    let protocol = &cx.settings.protocol;
    let mut doc = json!({
        "issuer": cx.issuer,
        "authorization_endpoint": cx.url("/authorize"),
        "token_endpoint": cx.url("/token"),
        "userinfo_endpoint": cx.url("/userinfo"),
        "jwks_uri": cx.url("/jwks"),
        "introspection_endpoint": cx.url("/introspect"),
        "revocation_endpoint": cx.url("/revoke"),
        "end_session_endpoint": cx.url("/logout"),
        "device_authorization_endpoint": cx.url("/device_authorization"),
        "pushed_authorization_request_endpoint": cx.url("/par"),
        "require_pushed_authorization_requests": protocol.require_par,
        "backchannel_logout_supported": true,
        "backchannel_logout_session_supported": true,
        "frontchannel_logout_supported": true,
        "frontchannel_logout_session_supported": true,
        "scopes_supported": SUPPORTED_SCOPES,
        "claim_types_supported": ["normal"],
        "response_types_supported": ["code"],
        "response_modes_supported": ["query", "form_post"],
        "grant_types_supported": [
            "authorization_code",
            "refresh_token",
            "client_credentials",
            "urn:ietf:params:oauth:grant-type:device_code",
            "password"
        ],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256", "ES256", "EdDSA"],
        "userinfo_signing_alg_values_supported": ["none"],
        "token_endpoint_auth_methods_supported":
            ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt", "none"],
        "token_endpoint_auth_signing_alg_values_supported":
            ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "HS256", "HS384", "HS512"],
        "introspection_endpoint_auth_methods_supported":
            ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt"],
        "revocation_endpoint_auth_methods_supported":
            ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt", "none"],
        "code_challenge_methods_supported": ["S256"],
        "claims_supported": supported_claims(),
        "claims_parameter_supported": true,
        "ui_locales_supported": crate::i18n::supported(),
        "acr_values_supported": [super::issue::ACR_PASSWORD, super::issue::ACR_MFA],
        // RFC 9101: request objects by value. A `request_uri` by reference is refused
        // (only PAR's own URNs are taken, which `pushed_authorization_request_endpoint`
        // advertises), so Discovery §3 `request_uri_parameter_supported` is false.
        "request_parameter_supported": true,
        "request_uri_parameter_supported": false,
        "request_object_signing_alg_values_supported": CLIENT_SIGNING_ALGS,
        "dpop_signing_alg_values_supported": CLIENT_SIGNING_ALGS,
        "introspection_signing_alg_values_supported": ["RS256"],
        "authorization_response_iss_parameter_supported": true,
        "client_id_metadata_document_supported": protocol.client_id_documents,
        "prompt_values_supported": prompt_values(cx.settings)
    });
    if protocol.registration != Registration::Off {
        doc["registration_endpoint"] = Value::from(cx.url("/register"));
    }
    doc
}

/// Core §3.1.2.1's values, and `create` (Initiating User Registration via OpenID
/// Connect 1.0 §4.2) only when people can sign up: open, with mail to verify them.
fn prompt_values(settings: &Settings) -> Vec<&'static str> {
    let mut values = vec!["none", "login", "consent", "select_account"];
    if settings.signup == Signup::Open && settings.smtp.is_some() {
        values.push("create");
    }
    values
}
