//! OpenID Provider metadata (OpenID Connect Discovery 1.0 §3; RFC 8414), listing only
//! what is implemented.

use serde_json::{json, Value};

use super::claims::{supported_claims, SUPPORTED_SCOPES};
use crate::config::{Settings, Signup};
use crate::oidc::Ctx;

pub fn document(cx: &Ctx<'_>) -> Value {
    json!({
        "issuer": cx.issuer,
        "authorization_endpoint": cx.url("/authorize"),
        "token_endpoint": cx.url("/token"),
        "userinfo_endpoint": cx.url("/userinfo"),
        "jwks_uri": cx.url("/jwks"),
        "introspection_endpoint": cx.url("/introspect"),
        "revocation_endpoint": cx.url("/revoke"),
        "end_session_endpoint": cx.url("/logout"),
        "device_authorization_endpoint": cx.url("/device_authorization"),
        "backchannel_logout_supported": true,
        "backchannel_logout_session_supported": true,
        "frontchannel_logout_supported": false,
        "scopes_supported": SUPPORTED_SCOPES,
        "claim_types_supported": ["normal"],
        "response_types_supported": ["code"],
        "response_modes_supported": ["query", "form_post"],
        "grant_types_supported": [
            "authorization_code",
            "refresh_token",
            "client_credentials",
            "urn:ietf:params:oauth:grant-type:device_code"
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
        "acr_values_supported": [super::issue::ACR_PASSWORD, super::issue::ACR_MFA],
        "request_parameter_supported": false,
        "request_uri_parameter_supported": false,
        "authorization_response_iss_parameter_supported": true,
        "prompt_values_supported": prompt_values(cx.settings)
    })
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
