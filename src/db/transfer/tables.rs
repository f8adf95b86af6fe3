//! The tables `tessera export` carries, with their columns and kinds, in the order an
//! import inserts them; and the tables it leaves out, each with the reason.

use crate::db::sql::Kind;
use Kind::{Blob as B, Int as I, Text as T};

/// A table that holds state, with its columns and their kinds.
pub(in crate::db) struct Table {
    pub(in crate::db) name: &'static str,
    pub(in crate::db) columns: &'static [(&'static str, Kind)],
}

/// Every table that is exported, in foreign-key order (a table after those it refers
/// to), which is the order an import inserts in. A migration that adds a table or a
/// column adds it here too (or to `SKIPPED`): the tests in `transfer/tests.rs` compare
/// this list with both migrated schemas and fail until it does.
pub(in crate::db) const TABLES: &[Table] = &[
    Table {
        name: "users",
        columns: &[
            ("id", I),
            ("sub", T),
            ("username", T),
            ("email", T),
            ("email_verified", I),
            ("name", T),
            ("password_hash", T),
            ("is_admin", I),
            ("disabled", I),
            ("created_at", I),
            ("updated_at", I),
            ("claims", T),
            ("failed_logins", I),
            ("locked_until", I),
            ("email_mfa", I),
            ("notify_new_device", I),
            ("must_verify", I),
            ("deletion_requested_at", I),
            ("skeleton", T),
        ],
    },
    Table {
        name: "groups",
        columns: &[("id", I), ("name", T)],
    },
    Table {
        name: "user_groups",
        columns: &[("user_id", I), ("group_id", I)],
    },
    Table {
        name: "clients",
        columns: &[
            ("client_id", T),
            ("name", T),
            ("secret_hash", B),
            ("redirect_uris", T),
            ("post_logout_redirect_uris", T),
            ("created_at", I),
            ("updated_at", I),
            ("token_endpoint_auth_method", T),
            ("id_token_alg", T),
            ("consent_required", I),
            ("grant_types", T),
            ("always_issue_refresh", I),
            ("jwks", T),
            ("secret_for_hmac", T),
            ("backchannel_logout_uri", T),
            ("backchannel_logout_session_required", I),
            ("access_token_ttl", I),
            ("refresh_token_ttl", I),
            ("admin", I),
            ("client_scopes", T),
            ("web_origins", T),
            ("grant_lifetime", I),
            ("require_pushed_authorization_requests", I),
            ("require_signed_request_object", I),
            ("dpop_bound_access_tokens", I),
            ("jwks_uri", T),
            ("frontchannel_logout_uri", T),
            ("frontchannel_logout_session_required", I),
            ("origin", T),
            ("registration_token_hash", B),
            ("registration_metadata", T),
            ("metadata_expires_at", I),
            ("introspect_any", I),
            ("initiate_login_uri", T),
        ],
    },
    Table {
        name: "client_allowed_groups",
        columns: &[("client_id", T), ("group_id", I)],
    },
    Table {
        name: "client_claims",
        columns: &[
            ("client_id", T),
            ("claim", T),
            ("source", T),
            ("scope", T),
            ("in_id_token", I),
            ("in_access_token", I),
            ("in_userinfo", I),
            ("default_value", T),
            ("position", I),
        ],
    },
    Table {
        name: "client_claim_values",
        columns: &[
            ("client_id", T),
            ("claim", T),
            ("position", I),
            ("group_id", I),
            ("value", T),
        ],
    },
    Table {
        name: "apps",
        columns: &[
            ("id", T),
            ("url", T),
            ("host", T),
            ("require_mfa", I),
            ("header_prefix", T),
            ("created_at", I),
            ("updated_at", I),
        ],
    },
    Table {
        name: "app_allowed_groups",
        columns: &[("app_id", T), ("group_id", I)],
    },
    Table {
        name: "providers",
        columns: &[
            ("id", T),
            ("kind", T),
            ("name", T),
            ("issuer", T),
            ("client_id", T),
            ("client_secret", T),
            ("scope", T),
            ("jit", I),
            ("link_by_email", I),
            ("require_local_mfa", I),
            ("group_claim", T),
            ("created_at", I),
            ("updated_at", I),
        ],
    },
    Table {
        name: "provider_groups",
        columns: &[("provider_id", T), ("upstream", T), ("group_id", I)],
    },
    Table {
        name: "identities",
        columns: &[
            ("provider_id", T),
            ("subject", T),
            ("user_id", I),
            ("email", T),
            ("created_at", I),
            ("last_used_at", I),
        ],
    },
    Table {
        name: "signing_keys",
        columns: &[
            ("kid", T),
            ("alg", T),
            ("private_pem", T),
            ("public_jwk", T),
            ("created_at", I),
            ("retired_at", I),
        ],
    },
    // The pseudonym key of the logs, so that pseudonyms stay comparable after a move.
    Table {
        name: "server_secrets",
        columns: &[("name", T), ("value", B)],
    },
    Table {
        name: "sessions",
        columns: &[
            ("id_hash", B),
            ("sid", T),
            ("user_id", I),
            ("auth_time", I),
            ("created_at", I),
            ("expires_at", I),
            ("ended_at", I),
            ("amr", T),
            ("user_agent", T),
            ("ip", T),
            ("reauth_at", I),
            ("fed_provider", T),
            ("fed_subject", T),
            ("fed_sid", T),
        ],
    },
    // Forward-auth cookies live as long as their sessions, which move too.
    Table {
        name: "forward_auth_tokens",
        columns: &[("token_hash", B), ("sid", T), ("created_at", I), ("expires_at", I)],
    },
    Table {
        name: "forward_auth_access",
        columns: &[("token_hash", B), ("app_id", T), ("at", I)],
    },
    // Parked sign-ins and passkey challenges live minutes, but copying them costs
    // nothing and lets a sign-in begun just before the move finish after it.
    Table {
        name: "login_requests",
        columns: &[
            ("id_hash", B),
            ("csrf_hash", B),
            ("browser_hash", B),
            ("params", T),
            ("created_at", I),
            ("expires_at", I),
            ("used_at", I),
        ],
    },
    Table {
        name: "grants",
        columns: &[
            ("id", T),
            ("client_id", T),
            ("user_id", I),
            ("scope", T),
            ("sid", T),
            ("auth_time", I),
            ("nonce", T),
            ("created_at", I),
            ("expires_at", I),
            ("revoked_at", I),
            ("claims_request", T),
            ("amr", T),
            ("resource", T),
            ("dpop_jkt", T),
        ],
    },
    // Used codes too: a replayed code must still revoke its grant after the move.
    Table {
        name: "auth_codes",
        columns: &[
            ("code_hash", B),
            ("grant_id", T),
            ("client_id", T),
            ("user_id", I),
            ("redirect_uri", T),
            ("scope", T),
            ("nonce", T),
            ("code_challenge", T),
            ("sid", T),
            ("auth_time", I),
            ("created_at", I),
            ("expires_at", I),
            ("used_at", I),
            ("claims_request", T),
            ("amr", T),
            ("resource", T),
            ("dpop_jkt", T),
        ],
    },
    Table {
        name: "refresh_tokens",
        columns: &[
            ("token_hash", B),
            ("grant_id", T),
            ("scope", T),
            ("created_at", I),
            ("expires_at", I),
            ("used_at", I),
        ],
    },
    // Revocations and spent assertion ids: dropping them would make a revoked access
    // token or a replayed client assertion good again.
    Table {
        name: "revoked_tokens",
        columns: &[("jti", T), ("expires_at", I)],
    },
    Table {
        name: "client_assertions",
        columns: &[("jti", T), ("client_id", T), ("expires_at", I)],
    },
    Table {
        name: "consents",
        columns: &[
            ("user_id", I),
            ("client_id", T),
            ("scope", T),
            ("granted_at", I),
            ("claims", T),
        ],
    },
    Table {
        name: "device_codes",
        columns: &[
            ("device_hash", B),
            ("user_code", T),
            ("client_id", T),
            ("scope", T),
            ("created_at", I),
            ("expires_at", I),
            ("interval", I),
            ("last_poll_at", I),
            ("user_id", I),
            ("sid", T),
            ("auth_time", I),
            ("decided_at", I),
            ("approved", I),
            ("used_at", I),
            ("amr", T),
        ],
    },
    Table {
        name: "totp",
        columns: &[
            ("user_id", I),
            ("secret", T),
            ("confirmed_at", I),
            ("last_step", I),
            ("created_at", I),
        ],
    },
    Table {
        name: "recovery_codes",
        columns: &[("user_id", I), ("code_hash", B), ("used_at", I)],
    },
    Table {
        name: "passkeys",
        columns: &[
            ("id", I),
            ("user_id", I),
            ("credential_id", B),
            ("public_jwk", T),
            ("alg", T),
            ("sign_count", I),
            ("name", T),
            ("created_at", I),
            ("last_used_at", I),
        ],
    },
    Table {
        name: "webauthn_challenges",
        columns: &[
            ("challenge_hash", B),
            ("purpose", T),
            ("user_id", I),
            ("request_hash", B),
            ("expires_at", I),
            ("used_at", I),
            ("subject", T),
        ],
    },
    // Queued back-channel logouts: the new nodes' deliverer sends what the old ones
    // had not.
    Table {
        name: "logout_deliveries",
        columns: &[
            ("id", I),
            ("client_id", T),
            ("uri", T),
            ("sub", T),
            ("sid", T),
            ("wants_sid", I),
            ("alg", T),
            ("attempts", I),
            ("next_at", I),
            ("expires_at", I),
        ],
    },
    // An unused first-administrator link keeps working where no administrator exists.
    Table {
        name: "setup_tokens",
        columns: &[("token_hash", B), ("created_at", I), ("expires_at", I), ("used_at", I)],
    },
    Table {
        name: "audit_log",
        columns: &[
            ("id", I),
            ("at", I),
            ("event", T),
            ("actor", T),
            ("target", T),
            ("ip", T),
            ("detail", T),
        ],
    },
    Table {
        name: "mail_outbox",
        columns: &[
            ("id", I),
            ("to_addr", T),
            ("subject", T),
            ("text_body", T),
            ("html_body", T),
            ("kind", T),
            ("user_id", I),
            ("created_at", I),
            ("next_at", I),
            ("attempts", I),
            ("sent_at", I),
            ("failed_at", I),
            ("last_answer", T),
        ],
    },
    Table {
        name: "email_tokens",
        columns: &[
            ("id", I),
            ("digest", B),
            ("purpose", T),
            ("user_id", I),
            ("email", T),
            ("data", T),
            ("code_digest", B),
            ("request_hash", B),
            ("attempts", I),
            ("created_at", I),
            ("expires_at", I),
            ("used_at", I),
        ],
    },
    Table {
        name: "devices",
        columns: &[
            ("id", I),
            ("user_id", I),
            ("digest", B),
            ("label", T),
            ("created_at", I),
            ("last_seen_at", I),
            ("trusted_until", I),
        ],
    },
    Table {
        name: "pushed_requests",
        columns: &[
            ("handle_hash", B),
            ("client_id", T),
            ("params", T),
            ("created_at", I),
            ("expires_at", I),
            ("used_at", I),
        ],
    },
    Table {
        name: "seen_jtis",
        columns: &[("kind", T), ("jti", T), ("expires_at", I)],
    },
    Table {
        name: "registration_tokens",
        columns: &[
            ("token_hash", B),
            ("created_at", I),
            ("expires_at", I),
            ("uses_left", I),
            ("created_by", T),
        ],
    },
    Table {
        name: "resources",
        columns: &[("uri", T), ("scopes", T), ("created_at", I)],
    },
    Table {
        name: "branding",
        columns: &[
            ("id", I),
            ("org_name", T),
            ("accent_color", T),
            ("stylesheet", T),
            ("logo", B),
            ("logo_type", T),
            ("version", I),
            ("updated_at", I),
        ],
    },
    Table {
        name: "client_logos",
        columns: &[("client_id", T), ("logo", B), ("logo_type", T), ("updated_at", I)],
    },
];

/// Tables deliberately left out of an export.
/// - `job_leases`: a lease names a node of the old deployment and runs out within
///   minutes; the nodes on the new database take their own.
pub(in crate::db) const SKIPPED: &[&str] = &["job_leases"];
