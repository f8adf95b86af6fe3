//! The operations of the admin API, one group of calls per function, as the route
//! tables of `http/admin/api.rs` and the files beside it register them
//! (tests/api/openapi.rs fails when the two differ), and the `paths` object built from
//! them with the answers every call shares (`op.rs`).

use serde_json::{json, Map, Value};

use super::op::{op, Op};

/// Where the admin API lives; paths below are relative to it.
pub const PREFIX: &str = "/admin/api";

const PAGED: &[&str] = &["q", "sort", "limit", "offset"];

/// This document and the figures of the dashboard.
fn meta() -> Vec<Op> {
    vec![
        op("GET", "/openapi.json", "getOpenApi", "meta", "This document")
            .describe("Public: it describes only what docs/ADMIN_API.md documents.")
            .answer("200", "The OpenAPI 3.1 document", json!({"type": "object"}))
            .public(),
        op("GET", "/stats", "getStats", "stats", "Figures at a glance").ok("Stats"),
    ]
}

/// People: their records, passwords, and what blocks their sign-in.
fn users() -> Vec<Op> {
    vec![
        op("GET", "/users", "listUsers", "users", "List users")
            .query(PAGED)
            .ok("UserPage"),
        op("POST", "/users", "createUser", "users", "Create a user")
            .body("UserCreate")
            .created("User"),
        op("GET", "/users/{id}", "getUser", "users", "Get a user").ok("User"),
        op("PATCH", "/users/{id}", "updateUser", "users", "Change a user")
            .body("UserPatch")
            .ok("User"),
        op("DELETE", "/users/{id}", "deleteUser", "users", "Delete a user")
            .no_content("Deleted, with its sessions, grants and consents"),
        op(
            "POST",
            "/users/{id}/password",
            "setUserPassword",
            "users",
            "Set a user's password",
        )
        .body("Password")
        .no_content("Set; a lockout is cleared"),
        op("POST", "/users/{id}/disable", "disableUser", "users", "Disable a user").ok("User"),
        op("POST", "/users/{id}/enable", "enableUser", "users", "Enable a user").ok("User"),
        op(
            "POST",
            "/users/{id}/unlock",
            "unlockUser",
            "users",
            "Clear a user's failed sign-ins",
        )
        .ok("User"),
        op(
            "POST",
            "/users/{id}/mfa/reset",
            "resetUserMfa",
            "users",
            "Remove a user's second factors",
        )
        .ok("User"),
    ]
}

/// A person's sessions, links to upstream providers, and deletion requests.
fn user_sessions_and_links() -> Vec<Op> {
    vec![
        op(
            "GET",
            "/users/{id}/sessions",
            "listUserSessions",
            "users",
            "A user's sessions",
        )
        .ok_list("Session"),
        op(
            "DELETE",
            "/users/{id}/sessions",
            "endUserSessions",
            "users",
            "End all of a user's sessions",
        )
        .ok("Ended"),
        op(
            "DELETE",
            "/users/{id}/sessions/{sid}",
            "endUserSession",
            "users",
            "End one session",
        )
        .ok("Ended"),
        op(
            "GET",
            "/users/{id}/identities",
            "listUserIdentities",
            "users",
            "A user's links to upstream providers",
        )
        .ok("Identities"),
        op(
            "DELETE",
            "/users/{id}/identities/{provider}",
            "unlinkUserIdentity",
            "users",
            "Remove a link to a provider",
        )
        .no_content("Removed; sessions opened through it end"),
        op(
            "POST",
            "/users/{id}/deletion/approve",
            "approveUserDeletion",
            "users",
            "Approve a user's deletion request",
        )
        .no_content("The account is deleted"),
        op(
            "DELETE",
            "/users/{id}/deletion",
            "rejectUserDeletion",
            "users",
            "Reject a user's deletion request",
        )
        .no_content("The account stays"),
    ]
}

/// Relying parties and their secrets.
fn clients() -> Vec<Op> {
    vec![
        op("GET", "/clients", "listClients", "clients", "List clients")
            .query(PAGED)
            .ok("ClientPage"),
        op("POST", "/clients", "createClient", "clients", "Register a client")
            .body("ClientSpec")
            .created("ClientCreated"),
        op("GET", "/clients/{id}", "getClient", "clients", "Get a client").ok("Client"),
        op("PATCH", "/clients/{id}", "updateClient", "clients", "Change a client")
            .describe("A JSON merge patch (RFC 7396) over the client's specification.")
            .body("ClientPatch")
            .ok("Client"),
        op("DELETE", "/clients/{id}", "deleteClient", "clients", "Delete a client")
            .no_content("Deleted, with its grants and tokens"),
        op(
            "POST",
            "/clients/{id}/secret",
            "rotateClientSecret",
            "clients",
            "Issue a new client secret",
        )
        .ok("ClientSecret"),
    ]
}

/// The app presets and the clients made from them.
fn presets() -> Vec<Op> {
    vec![
        op("GET", "/presets", "listPresets", "presets", "The app presets").ok("Presets"),
        op(
            "POST",
            "/clients/from-preset",
            "createClientFromPreset",
            "presets",
            "Register a client from an app preset",
        )
        .body("PresetRequest")
        .created("PresetRegistration"),
    ]
}

/// A client's claim mapping and the tokens it would give.
fn claims() -> Vec<Op> {
    vec![
        op(
            "GET",
            "/clients/{id}/claims",
            "listClaimRules",
            "claims",
            "A client's claim mapping",
        )
        .ok("ClaimTable"),
        op(
            "PUT",
            "/clients/{id}/claims",
            "replaceClaimRules",
            "claims",
            "Replace the claim mapping",
        )
        .body("ClaimTable")
        .ok("ClaimTable"),
        op(
            "PUT",
            "/clients/{id}/claims/{claim}",
            "putClaimRule",
            "claims",
            "Set one claim rule",
        )
        .body("ClaimRule")
        .ok("ClaimTable"),
        op(
            "DELETE",
            "/clients/{id}/claims/{claim}",
            "deleteClaimRule",
            "claims",
            "Remove one claim rule",
        )
        .no_content("Removed"),
        op(
            "GET",
            "/clients/{id}/preview",
            "previewTokens",
            "claims",
            "What a user's tokens would hold",
        )
        .query(&["user", "scope"])
        .ok("Preview"),
    ]
}

/// Initial access tokens for dynamic client registration.
fn registration() -> Vec<Op> {
    vec![
        op(
            "GET",
            "/registration-tokens",
            "listRegistrationTokens",
            "registration",
            "Live initial access tokens",
        )
        .ok_list("RegistrationToken"),
        op(
            "POST",
            "/registration-tokens",
            "createRegistrationToken",
            "registration",
            "Issue an initial access token (RFC 7591)",
        )
        .optional_body("RegistrationTokenInput")
        .created("RegistrationTokenCreated"),
        op(
            "DELETE",
            "/registration-tokens/{id}",
            "revokeRegistrationToken",
            "registration",
            "Revoke an initial access token",
        )
        .no_content("Revoked; its clients stay"),
    ]
}

/// Upstream identity providers.
fn providers() -> Vec<Op> {
    vec![
        op(
            "GET",
            "/providers",
            "listProviders",
            "providers",
            "List upstream providers",
        )
        .query(PAGED)
        .ok("ProviderPage"),
        op(
            "POST",
            "/providers",
            "createProvider",
            "providers",
            "Add an upstream provider",
        )
        .body("ProviderSpec")
        .created("Provider"),
        op("GET", "/providers/{id}", "getProvider", "providers", "Get a provider").ok("Provider"),
        op(
            "DELETE",
            "/providers/{id}",
            "deleteProvider",
            "providers",
            "Delete a provider",
        )
        .no_content("Deleted with its links; the accounts stay"),
        op(
            "PUT",
            "/providers/{id}/secret",
            "replaceProviderSecret",
            "providers",
            "Replace a provider's client secret",
        )
        .body("ProviderSecret")
        .no_content("Replaced; links kept"),
    ]
}

/// Forward-auth apps.
fn apps() -> Vec<Op> {
    vec![
        op("GET", "/apps", "listApps", "apps", "List forward-auth apps")
            .query(PAGED)
            .ok("AppPage"),
        op("POST", "/apps", "createApp", "apps", "Add a forward-auth app")
            .body("AppSpec")
            .created("App"),
        op("GET", "/apps/{id}", "getApp", "apps", "Get an app").ok("App"),
        op("DELETE", "/apps/{id}", "deleteApp", "apps", "Delete an app")
            .no_content("Deleted; its proxy refuses every request"),
    ]
}

/// Groups and their members.
fn groups() -> Vec<Op> {
    vec![
        op("GET", "/groups", "listGroups", "groups", "List groups").ok_list("Group"),
        op("POST", "/groups", "createGroup", "groups", "Create a group")
            .body("GroupName")
            .created("GroupDetail"),
        op(
            "GET",
            "/groups/{id}",
            "getGroup",
            "groups",
            "Get a group with its members",
        )
        .ok("GroupDetail"),
        op("PATCH", "/groups/{id}", "renameGroup", "groups", "Rename a group")
            .body("GroupName")
            .ok("GroupDetail"),
        op("DELETE", "/groups/{id}", "deleteGroup", "groups", "Delete a group")
            .no_content("Deleted; members lose the group"),
        op(
            "PUT",
            "/groups/{id}/members/{username}",
            "addGroupMember",
            "groups",
            "Add a member",
        )
        .ok("GroupDetail"),
        op(
            "DELETE",
            "/groups/{id}/members/{username}",
            "removeGroupMember",
            "groups",
            "Remove a member",
        )
        .ok("GroupDetail"),
    ]
}

/// Signing keys, the audit log and the mail queue.
fn keys_audit_and_mail() -> Vec<Op> {
    vec![
        op("GET", "/keys", "listKeys", "keys", "Signing keys").ok_list("Key"),
        op("POST", "/keys/rotate", "rotateKey", "keys", "Add a signing key")
            .optional_body("KeyRotate")
            .created("KeyRotated"),
        op("GET", "/audit", "listAudit", "audit", "The audit log, newest first")
            .query(&["sort", "limit", "offset", "event", "who", "since", "until"])
            .ok("AuditPage"),
        op("GET", "/mail", "getMailQueue", "mail", "The mail queue, newest first")
            .query(&["status", "limit"])
            .ok("MailQueue"),
    ]
}

/// Invitations to sign up.
fn invitations() -> Vec<Op> {
    vec![
        op(
            "GET",
            "/invitations",
            "listInvitations",
            "invitations",
            "Live invitations, newest first",
        )
        .ok_list("Invitation"),
        op(
            "POST",
            "/invitations",
            "createInvitation",
            "invitations",
            "Invite an address",
        )
        .body("InvitationInput")
        .created("InvitationCreated"),
        op(
            "DELETE",
            "/invitations/{id}",
            "revokeInvitation",
            "invitations",
            "Revoke an invitation",
        )
        .no_content("Revoked; the link stops working"),
    ]
}

/// Every operation of the admin API.
pub fn operations() -> Vec<Op> {
    [
        meta(),
        users(),
        user_sessions_and_links(),
        clients(),
        presets(),
        claims(),
        registration(),
        providers(),
        apps(),
        groups(),
        keys_audit_and_mail(),
        invitations(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The `paths` object: operations grouped by their full path.
pub fn paths() -> Value {
    let mut paths = Map::new();
    for o in operations() {
        let (method, path) = (o.method.to_ascii_lowercase(), format!("{PREFIX}{}", o.path));
        let entry = paths.entry(path).or_insert_with(|| json!({}));
        entry[method] = o.finish();
    }
    Value::Object(paths)
}
