//! The operations of the admin API, one line each, as the route tables of
//! `admin_api.rs` and the `admin_*.rs` files register them (tests/api/openapi.rs fails
//! when the two differ), and the `paths` object built from them with the answers every
//! call shares.

use serde_json::{json, Map, Value};

use super::schemas::{array_of, schema};

/// Where the admin API lives; paths below are relative to it.
pub const PREFIX: &str = "/admin/api";

/// One operation: a method and a path template in actix's (and OpenAPI's) `{name}` form.
pub struct Op {
    pub method: &'static str,
    pub path: &'static str,
    public: bool,
    has_input: bool,
    v: Value,
}

fn op(method: &'static str, path: &'static str, id: &str, tag: &str, summary: &str) -> Op {
    Op {
        method,
        path,
        public: false,
        has_input: false,
        v: json!({"operationId": id, "tags": [tag], "summary": summary, "responses": {}}),
    }
}

fn reference(kind: &str, name: &str) -> Value {
    json!({"$ref": format!("#/components/{kind}/{name}")})
}

impl Op {
    fn request(mut self, name: &str, required: bool) -> Self {
        self.v["requestBody"] = json!({
            "required": required,
            "content": {"application/json": {"schema": schema(name)}},
        });
        self.has_input = true;
        self
    }

    /// A JSON body that must be there.
    fn body(self, name: &str) -> Self {
        self.request(name, true)
    }

    /// A JSON body that may be left out (the defaults apply).
    fn optional_body(self, name: &str) -> Self {
        self.request(name, false)
    }

    fn answer(mut self, status: &str, description: &str, body: Value) -> Self {
        self.v["responses"][status] = json!({
            "description": description,
            "content": {"application/json": {"schema": body}},
        });
        self
    }

    fn ok(self, name: &str) -> Self {
        self.answer("200", "OK", schema(name))
    }

    fn ok_list(self, name: &str) -> Self {
        self.answer("200", "OK", array_of(name))
    }

    fn created(self, name: &str) -> Self {
        self.answer("201", "Created", schema(name))
    }

    fn no_content(mut self, description: &str) -> Self {
        self.v["responses"]["204"] = json!({"description": description});
        self
    }

    fn query(mut self, names: &[&str]) -> Self {
        let params = self.v["parameters"].as_array().cloned().unwrap_or_default();
        let more = names.iter().map(|n| reference("parameters", n));
        self.v["parameters"] = Value::Array(params.into_iter().chain(more).collect());
        self.has_input = true;
        self
    }

    fn describe(mut self, text: &str) -> Self {
        self.v["description"] = json!(text);
        self
    }

    /// Served to anyone: no security requirement, none of the refusals of `run`.
    fn public(mut self) -> Self {
        self.public = true;
        self.v["security"] = json!([]);
        self
    }

    /// The operation with its path parameters and the answers it shares with the others.
    fn finish(mut self) -> Value {
        let names = self
            .path
            .split('/')
            .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')));
        let path_params: Vec<Value> = names
            .map(|n| json!({"name": n, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        let has_params = !path_params.is_empty();
        if has_params {
            let query = self.v["parameters"].as_array().cloned().unwrap_or_default();
            self.v["parameters"] = Value::Array(path_params.into_iter().chain(query).collect());
        }
        if self.public {
            return self.v;
        }
        let mut shared = vec![("401", "Unauthenticated"), ("403", "Forbidden"), ("503", "Unavailable")];
        if self.has_input {
            shared.push(("400", "Invalid"));
        }
        if has_params {
            shared.push(("404", "NotFound"));
        }
        if self.method != "GET" {
            shared.push(("409", "Conflict"));
        }
        for (status, name) in shared {
            self.v["responses"][status] = reference("responses", name);
        }
        self.v
    }
}

const PAGED: &[&str] = &["q", "sort", "limit", "offset"];

fn meta_and_users() -> Vec<Op> {
    vec![
        op("GET", "/openapi.json", "getOpenApi", "meta", "This document")
            .describe("Public: it describes only what docs/ADMIN_API.md documents.")
            .answer("200", "The OpenAPI 3.1 document", json!({"type": "object"}))
            .public(),
        op("GET", "/stats", "getStats", "stats", "Figures at a glance").ok("Stats"),
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

fn the_rest() -> Vec<Op> {
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
        op("GET", "/apps", "listApps", "apps", "List forward-auth apps")
            .query(PAGED)
            .ok("AppPage"),
        op("POST", "/apps", "createApp", "apps", "Add a forward-auth app")
            .body("AppSpec")
            .created("App"),
        op("GET", "/apps/{id}", "getApp", "apps", "Get an app").ok("App"),
        op("DELETE", "/apps/{id}", "deleteApp", "apps", "Delete an app")
            .no_content("Deleted; its proxy refuses every request"),
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
    let mut all = meta_and_users();
    all.extend(clients());
    all.extend(the_rest());
    all
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
