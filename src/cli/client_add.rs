//! `tessera client add`: its options, and the client specification they make (shared
//! with `--preset`, which registers through the preset instead).

use clap::Args;
use serde_json::json;

use crate::admin::clients::{ClientSpec, ALGS, AUTH_METHODS, DEFAULT_ALG, GRANT_TYPES};
use crate::domain::Secret;

#[derive(Args)]
pub struct ClientAdd {
    pub(super) client_id: String,
    /// Register an application from a preset (`tessera client presets`): its redirect
    /// URIs, grant types, authentication and claim mapping, printing its configuration
    #[arg(long, value_name = "NAME", requires = "app_url")]
    pub(super) preset: Option<String>,
    /// With --preset: the URL the application is reached at (https; a path is kept)
    #[arg(long, value_name = "URL", requires = "preset")]
    pub(super) app_url: Option<String>,
    /// With --preset: the name the application gives Tessera in its callback path
    /// (Gitea, Jellyfin, Paperless, Proxmox: default `tessera`; Wiki.js: the strategy id)
    #[arg(long, value_name = "KEY", requires = "preset")]
    pub(super) app_key: Option<String>,
    /// With --preset: Tessera's issuer URL in the printed configuration [default: the configured issuer, else http://127.0.0.1:9000]
    #[arg(long = "tessera-issuer", env = "TESSERA_ISSUER", value_name = "URL")]
    pub(super) tessera_issuer: Option<String>,
    /// A redirect URI, matched exactly; repeat for several (with --preset: besides the preset's)
    #[arg(long = "redirect-uri", value_name = "URI")]
    pub(super) redirect_uris: Vec<String>,
    /// Where RP-initiated logout may send the user; repeat for several
    #[arg(long = "post-logout-redirect-uri", value_name = "URI")]
    pub(super) post_logout_redirect_uris: Vec<String>,
    /// A public client (SPA, native app): no secret, PKCE required
    #[arg(long)]
    pub(super) public: bool,
    /// Display name shown on the login and consent pages
    #[arg(long)]
    pub(super) name: Option<String>,
    /// How the client authenticates at the token endpoint
    #[arg(long, value_name = "METHOD", value_parser = clap::builder::PossibleValuesParser::new(AUTH_METHODS))]
    pub(super) auth_method: Option<String>,
    /// The client's public keys (JWKS JSON, or @FILE) for private_key_jwt
    #[arg(long, value_name = "JSON|@FILE")]
    pub(super) jwks: Option<String>,
    /// Signing algorithm for this client's ID and access tokens
    #[arg(long, default_value = DEFAULT_ALG, value_parser = clap::builder::PossibleValuesParser::new(ALGS))]
    pub(super) id_token_alg: String,
    /// Ask the user to consent before the first sign-in (third-party clients)
    #[arg(long)]
    pub(super) consent: bool,
    /// A grant type the client may use; repeat for several [default: authorization_code, refresh_token]
    #[arg(long = "grant-type", value_name = "TYPE", value_parser = clap::builder::PossibleValuesParser::new(GRANT_TYPES))]
    pub(super) grant_types: Vec<String>,
    /// Refresh tokens with every sign-in (always) or only for offline_access
    #[arg(long, default_value = "always", value_parser = ["always", "offline-access"])]
    pub(super) refresh: String,
    /// Back-Channel Logout 1.0 endpoint of the client
    #[arg(long, value_name = "URI")]
    pub(super) backchannel_logout_uri: Option<String>,
    /// Include `sid` in logout tokens (backchannel_logout_session_required)
    #[arg(long)]
    pub(super) backchannel_logout_session_required: bool,
    /// Only members of this group may sign in; repeat for several [default: everyone]
    #[arg(long = "allowed-group", value_name = "GROUP")]
    pub(super) allowed_groups: Vec<String>,
    /// Access-token lifetime in seconds for this client [default: the server's]
    #[arg(long, value_name = "SECONDS")]
    pub(super) access_token_ttl: Option<i64>,
    /// Refresh-token lifetime in seconds for this client [default: the server's]
    #[arg(long, value_name = "SECONDS")]
    pub(super) refresh_token_ttl: Option<i64>,
    /// May obtain the tessera:admin scope with client credentials (the admin API)
    #[arg(long)]
    pub(super) admin: bool,
    /// A scope the client may obtain for itself with client credentials; repeat for several [default: none]
    #[arg(long = "scope", value_name = "SCOPE")]
    pub(super) client_scopes: Vec<String>,
    /// A browser origin (https://app.example.org) allowed to call the token endpoints
    /// besides those of the redirect URIs (CORS); repeat for several
    #[arg(long = "web-origin", value_name = "ORIGIN")]
    pub(super) web_origins: Vec<String>,
    /// Seconds a grant may be refreshed from its sign-in [default: the server's, 90 days]
    #[arg(long, value_name = "SECONDS")]
    pub(super) grant_lifetime: Option<i64>,
    /// Authorization requests only through the PAR endpoint (RFC 9126 §5)
    #[arg(long)]
    pub(super) require_par: bool,
    /// Authorization requests only as signed request objects (RFC 9101 §10.5)
    #[arg(long)]
    pub(super) require_signed_request_object: bool,
    /// Every token request carries a DPoP proof (RFC 9449 §5.2 dpop_bound_access_tokens)
    #[arg(long)]
    pub(super) dpop_bound: bool,
    /// Where the client publishes its public keys for private_key_jwt (https), instead of --jwks
    #[arg(long, value_name = "URL", conflicts_with = "jwks")]
    pub(super) jwks_uri: Option<String>,
    /// Front-Channel Logout 1.0 URL, loaded in an iframe when a session ends (https)
    #[arg(long, value_name = "URL")]
    pub(super) frontchannel_logout_uri: Option<String>,
    /// Add `iss` and `sid` to the front-channel logout URL
    #[arg(long, requires = "frontchannel_logout_uri")]
    pub(super) frontchannel_logout_session_required: bool,
    /// A resource server: may introspect every token, not only those issued to it or
    /// naming it in `aud` (RFC 7662 §4)
    #[arg(long)]
    pub(super) introspect_any: bool,
    /// Where a third party starts this client's sign-in (https; OpenID Connect Core §4)
    #[arg(long, value_name = "URL")]
    pub(super) initiate_login_uri: Option<String>,
    /// Print the result as JSON
    #[arg(long)]
    pub(super) json: bool,
}

pub(super) fn print_secret(client_id: &str, secret: Option<&Secret>, json: bool) {
    if json {
        println!(
            "{}",
            json!({"client_id": client_id, "client_secret": secret.map(Secret::expose)})
        );
        return;
    }
    match secret {
        Some(s) => {
            println!("client_id:     {client_id}");
            println!("client_secret: {}", s.expose());
            println!("Store the secret now: it is not shown again.");
        }
        None => println!("client_id: {client_id} (no secret)"),
    }
}

fn read_jwks(arg: &str) -> Result<serde_json::Value, String> {
    let text = match arg.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?,
        None => arg.to_string(),
    };
    serde_json::from_str(&text).map_err(|e| format!("--jwks is not JSON: {e}"))
}

/// The command's options as the specification every registration path shares.
pub(super) fn spec(add: &ClientAdd) -> Result<ClientSpec, String> {
    Ok(ClientSpec {
        client_id: add.client_id.clone(),
        name: add.name.clone(),
        public: add.public,
        redirect_uris: add.redirect_uris.clone(),
        post_logout_redirect_uris: add.post_logout_redirect_uris.clone(),
        token_endpoint_auth_method: add.auth_method.clone(),
        jwks: add.jwks.as_deref().map(read_jwks).transpose()?,
        id_token_signed_response_alg: Some(add.id_token_alg.clone()),
        consent_required: add.consent,
        grant_types: add.grant_types.clone(),
        refresh_tokens: Some(add.refresh.clone()),
        backchannel_logout_uri: add.backchannel_logout_uri.clone(),
        backchannel_logout_session_required: add.backchannel_logout_session_required,
        allowed_groups: add.allowed_groups.clone(),
        access_token_ttl: add.access_token_ttl,
        refresh_token_ttl: add.refresh_token_ttl,
        admin: add.admin,
        client_scopes: add.client_scopes.clone(),
        web_origins: add.web_origins.clone(),
        grant_lifetime: add.grant_lifetime,
        require_pushed_authorization_requests: add.require_par,
        require_signed_request_object: add.require_signed_request_object,
        dpop_bound_access_tokens: add.dpop_bound,
        jwks_uri: add.jwks_uri.clone(),
        frontchannel_logout_uri: add.frontchannel_logout_uri.clone(),
        frontchannel_logout_session_required: add.frontchannel_logout_session_required,
        introspect_any: add.introspect_any,
        initiate_login_uri: add.initiate_login_uri.clone(),
    })
}
