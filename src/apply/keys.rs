//! The keys each table of an apply file may have (docs/APPLY.md lists them with their
//! meaning); any other key is refused with its line.

pub const TOP: &[&str] = &["groups", "users", "clients", "apps", "providers"];
pub const GROUP: &[&str] = &["name", "members"];
pub const USER: &[&str] = &[
    "username",
    "email",
    "name",
    "admin",
    "email_verified",
    "disabled",
    "groups",
    "claims",
    "password",
];
pub const CLIENT: &[&str] = &[
    "client_id",
    "name",
    "public",
    "redirect_uris",
    "post_logout_redirect_uris",
    "token_endpoint_auth_method",
    "jwks",
    "id_token_signed_response_alg",
    "consent_required",
    "consent",
    "grant_types",
    "refresh_tokens",
    "backchannel_logout_uri",
    "backchannel_logout_session_required",
    "allowed_groups",
    "access_token_ttl",
    "refresh_token_ttl",
    "grant_lifetime",
    "admin",
    "client_scopes",
    "web_origins",
    "require_pushed_authorization_requests",
    "require_signed_request_object",
    "dpop_bound_access_tokens",
    "jwks_uri",
    "frontchannel_logout_uri",
    "frontchannel_logout_session_required",
    "introspect_any",
    "initiate_login_uri",
    "secret_env",
    "secret_file",
    "preset",
    "app_url",
    "app_key",
    "claims",
    "secret",
    "client_secret",
];
pub const RULE: &[&str] = &["claim", "source", "scope", "in", "values", "default"];
pub const VALUE: &[&str] = &["group", "value"];
pub const APP: &[&str] = &["id", "url", "allowed_groups", "require_mfa", "header_prefix"];
pub const PROVIDER: &[&str] = &[
    "id",
    "kind",
    "name",
    "issuer",
    "client_id",
    "secret_env",
    "secret_file",
    "scope",
    "jit",
    "link_by_email",
    "group_claim",
    "map_group",
    "require_local_mfa",
    "client_secret",
    "secret",
];

/// Claims an administrator may not set on a user: they come from the record (the
/// list `admin::users` refuses, checked here before anything is written).
pub use crate::admin::users::RESERVED_CLAIMS as RESERVED_USER_CLAIMS;
