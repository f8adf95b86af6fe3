//! The validated authorization request: what is parked server-side while the user
//! signs in, and what the code is issued for.

use serde::{Deserialize, Serialize};

/// A validated authorization request; parked server-side while the user signs in.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuthRequest {
    pub client_id: String,
    pub redirect_uri: String,
    pub scope: String,
    pub state: Option<String>,
    pub nonce: Option<String>,
    pub code_challenge: Option<String>,
    pub prompt: Prompt,
    pub max_age: Option<i64>,
    pub login_hint: Option<String>,
    /// The `claims` parameter (Core §5.5), as the JSON this provider re-serialised.
    pub claims: Option<String>,
    /// The subject of a valid `id_token_hint`: the user the client expects.
    pub hint_sub: Option<String>,
    /// `response_mode=form_post` (OAuth 2.0 Form Post Response Mode).
    pub form_post: bool,
    /// `idp`: the upstream provider to sign in with instead of the login page
    /// (advisory: an unknown one is ignored). Absent from requests parked before it.
    #[serde(default)]
    pub idp: Option<String>,
    /// RFC 8707 `resource` values (absolute URIs of registered resources).
    #[serde(default)]
    pub resource: Vec<String>,
    /// RFC 9449 §10 `dpop_jkt`: the key the code will be bound to.
    #[serde(default)]
    pub dpop_jkt: Option<String>,
    /// `ui_locales` (Core §3.1.2.1): the languages the application would like the
    /// pages in, preferred first; the first one Tessera speaks is used.
    #[serde(default)]
    pub ui_locales: Option<String>,
}

/// The `prompt` values this provider acts on (Core §3.1.2.1); `select_account` is
/// accepted and satisfied by the single signed-in account. `create` (Initiating User
/// Registration via OpenID Connect 1.0 §4.1) opens the sign-up form when sign-up is
/// open, and is ignored otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Prompt {
    pub none: bool,
    pub login: bool,
    pub consent: bool,
    /// Absent from requests parked before it existed.
    #[serde(default)]
    pub create: bool,
}
