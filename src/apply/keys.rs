//! The keys each table of an apply file may have (docs/APPLY.md lists them with their
//! meaning); any other key is refused with its line.

use crate::admin::clients::FIELDS;

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
/// A client's keys: its specification's settings (`consent` is another name for
/// `consent_required`) and the file's own (a preset, the secret's source, claims).
pub fn client_keys() -> Vec<&'static str> {
    let mut keys = vec!["client_id"];
    for (field, _) in FIELDS {
        keys.push(field);
        if *field == "consent_required" {
            keys.push("consent");
        }
    }
    keys.extend([
        "secret_env",
        "secret_file",
        "preset",
        "app_url",
        "app_key",
        "claims",
        "secret",
        "client_secret",
    ]);
    keys
}
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
