//! Relying parties: registration, lookup, secret rotation and removal.

use super::sql::{args, Row, ToValue};
use super::{Claim, DbError, Tx};
use crate::crypto::TokenHash;

/// When a client gets refresh tokens (OpenID Connect Core §11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RefreshPolicy {
    /// With every code exchange: a first-party client the administrator registered.
    #[default]
    Always,
    /// Only when the `offline_access` scope was requested and granted.
    OfflineAccess,
}

/// A registration. `Debug` leaves out the client_secret_jwt key. Its `Default` is a
/// blank record to fill in; `Client::new` is a client with the registration defaults.
#[derive(Clone, Default)]
pub struct Client {
    pub client_id: String,
    pub name: String,
    /// SHA-256 of the secret; `None` for a public client.
    pub secret_hash: Option<TokenHash>,
    pub redirect_uris: Vec<String>,
    pub post_logout_redirect_uris: Vec<String>,
    pub created_at: i64,
    /// `token_endpoint_auth_method` (OpenID Connect Dynamic Registration §2).
    pub auth_method: String,
    pub id_token_alg: String,
    pub consent_required: bool,
    pub grant_types: Vec<String>,
    pub refresh: RefreshPolicy,
    /// The client's public keys for `private_key_jwt`.
    pub jwks: Option<String>,
    /// The shared secret itself, kept only for `client_secret_jwt` (an HMAC key).
    pub secret_for_hmac: Option<String>,
    pub backchannel_logout_uri: Option<String>,
    pub backchannel_logout_session_required: bool,
    /// Only members of one of these groups may sign in; empty lets everyone.
    pub allowed_groups: Vec<String>,
    /// Per-client token lifetimes in seconds; `None` takes the server's.
    pub access_token_ttl: Option<i64>,
    pub refresh_token_ttl: Option<i64>,
    /// May obtain the `tessera:admin` scope with client credentials.
    pub admin: bool,
    /// Scopes the client may obtain for itself with client credentials.
    pub client_scopes: Vec<String>,
    /// Browser origins (`https://host[:port]`) allowed to call the token, userinfo,
    /// revocation and device endpoints besides those of its redirect URIs (CORS).
    pub web_origins: Vec<String>,
    /// Seconds a grant may be refreshed from its first sign-in; `None` takes the server's.
    pub grant_lifetime: Option<i64>,
    /// Claims its tokens and userinfo carry by rule (docs/PROTOCOL.md "Claim mapping").
    pub claim_rules: Vec<super::claim_rules::ClaimRule>,
    /// RFC 9126 §6: authorization requests only through the PAR endpoint.
    pub require_par: bool,
    /// RFC 9101 §10.5: authorization requests only as signed request objects.
    pub require_signed_request_object: bool,
    /// RFC 9449 §5.2 `dpop_bound_access_tokens`: every token request carries a proof.
    pub dpop_bound: bool,
    /// The client's JWK Set by reference (RFC 7591 §2), instead of `jwks`.
    pub jwks_uri: Option<String>,
    pub frontchannel_logout_uri: Option<String>,
    pub frontchannel_logout_session_required: bool,
    /// How the client came to be: one of `ORIGIN_*`.
    pub origin: String,
    /// SHA-256 of the RFC 7592 registration access token (registered clients only).
    pub registration_token_hash: Option<TokenHash>,
    /// What a registration or metadata document said for people to see, as JSON.
    pub registration_metadata: Option<String>,
    /// When a metadata-document client must be fetched again.
    pub metadata_expires_at: Option<i64>,
    /// A resource server that may introspect every token (RFC 7662 §4); other clients
    /// introspect only tokens issued to them or naming them in `aud`. Administrators only.
    pub introspect_any: bool,
    /// Where a third party starts this client's sign-in (OpenID Connect Core §4).
    pub initiate_login_uri: Option<String>,
}

/// The algorithm a client's ID tokens are signed with unless it names one.
pub const DEFAULT_ALG: &str = "RS256";
/// The grants a client may use unless it names them.
pub const DEFAULT_GRANT_TYPES: &[&str] = &["authorization_code", "refresh_token"];

/// Registered by an administrator: the CLI, the admin pages or API, `tessera apply`.
pub const ORIGIN_ADMIN: &str = "admin";
/// Registered through the RFC 7591 registration endpoint.
pub const ORIGIN_REGISTRATION: &str = "registration";
/// A client ID metadata document: the client_id is the URL its metadata is fetched from.
pub const ORIGIN_METADATA_DOCUMENT: &str = "metadata_document";

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("client_id", &self.client_id)
            .field("name", &self.name)
            .field("auth_method", &self.auth_method)
            .field("redirect_uris", &self.redirect_uris)
            .field("grant_types", &self.grant_types)
            .field("secret_for_hmac", &self.secret_for_hmac.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client with the defaults of `tessera client add`: the only place they are set.
    pub fn new(client_id: &str, name: &str, secret_hash: Option<TokenHash>, redirect_uris: Vec<String>) -> Self {
        let public = secret_hash.is_none();
        Self {
            client_id: client_id.to_string(),
            name: name.to_string(),
            secret_hash,
            redirect_uris,
            auth_method: if public { "none" } else { "client_secret_basic" }.to_string(),
            id_token_alg: DEFAULT_ALG.to_string(),
            grant_types: DEFAULT_GRANT_TYPES.iter().map(|g| g.to_string()).collect(),
            refresh: RefreshPolicy::Always,
            origin: ORIGIN_ADMIN.to_string(),
            ..Self::default()
        }
    }

    pub fn is_public(&self) -> bool {
        self.auth_method == "none"
    }

    pub fn allows_grant(&self, grant_type: &str) -> bool {
        self.grant_types.iter().any(|g| g == grant_type)
    }
}

/// A column read into its field: as stored (`as_is`), a JSON list (`list`), a token
/// digest (`digest`) or the refresh policy as its flag (`policy`).
macro_rules! decode {
    (as_is, $r:expr, $i:expr, $column:expr) => {
        $r.get($i)?
    };
    (list, $r:expr, $i:expr, $column:expr) => {
        json_list($r.get($i)?, $column)?
    };
    (digest, $r:expr, $i:expr, $column:expr) => {
        $r.get::<Option<Vec<u8>>>($i)?
            .as_deref()
            .and_then(TokenHash::from_slice)
    };
    (policy, $r:expr, $i:expr, $column:expr) => {
        if $r.get::<bool>($i)? {
            RefreshPolicy::Always
        } else {
            RefreshPolicy::OfflineAccess
        }
    };
}

/// A field as its column stores it (the inverse of `decode!`).
macro_rules! encode {
    (as_is, $v:expr) => {
        Box::new(&$v)
    };
    (list, $v:expr) => {
        Box::new(to_json(&$v))
    };
    (digest, $v:expr) => {
        Box::new($v.as_ref().map(|h| h.as_bytes().to_vec()))
    };
    (policy, $v:expr) => {
        Box::new($v == RefreshPolicy::Always)
    };
}

/// Whether `update` rewrites a column.
macro_rules! rewritten {
    (edit) => {
        true
    };
    (keep) => {
        false
    };
}

/// The `clients` table, each column once with the field it holds, how it is stored,
/// and whether an edit rewrites it (`edit`) or it is written once (`keep`). Reading,
/// registering and editing all follow this list, on both engines; the fields named
/// `elsewhere` live in tables of their own (`with_groups`).
macro_rules! columns {
    (elsewhere: $($other:ident),+; $($column:ident => $field:ident: $how:ident $edit:ident,)+) => {
        /// Each column's name and whether `update` rewrites it, in `from_row`'s order.
        const COLUMNS: &[(&str, bool)] = &[$((stringify!($column), rewritten!($edit))),+];

        fn from_row(r: &Row<'_>) -> Result<Client, DbError> {
            let mut index = 0;
            let mut next = || {
                index += 1;
                index - 1
            };
            Ok(Client {
                $($field: decode!($how, r, next(), stringify!($column)),)+
                $($other: Vec::new(),)+
            })
        }

        /// The values of `COLUMNS` for `c`, in order.
        fn cells(c: &Client) -> Vec<Box<dyn ToValue + '_>> {
            vec![$(encode!($how, c.$field)),+]
        }
    };
}

columns! {
    elsewhere: allowed_groups, claim_rules;
    client_id => client_id: as_is keep,
    name => name: as_is edit,
    secret_hash => secret_hash: digest keep,
    redirect_uris => redirect_uris: list edit,
    post_logout_redirect_uris => post_logout_redirect_uris: list edit,
    created_at => created_at: as_is keep,
    token_endpoint_auth_method => auth_method: as_is edit,
    id_token_alg => id_token_alg: as_is edit,
    consent_required => consent_required: as_is edit,
    grant_types => grant_types: list edit,
    always_issue_refresh => refresh: policy edit,
    jwks => jwks: as_is edit,
    secret_for_hmac => secret_for_hmac: as_is keep,
    backchannel_logout_uri => backchannel_logout_uri: as_is edit,
    backchannel_logout_session_required => backchannel_logout_session_required: as_is edit,
    access_token_ttl => access_token_ttl: as_is edit,
    refresh_token_ttl => refresh_token_ttl: as_is edit,
    admin => admin: as_is edit,
    client_scopes => client_scopes: list edit,
    web_origins => web_origins: list edit,
    grant_lifetime => grant_lifetime: as_is edit,
    require_pushed_authorization_requests => require_par: as_is edit,
    require_signed_request_object => require_signed_request_object: as_is edit,
    dpop_bound_access_tokens => dpop_bound: as_is edit,
    jwks_uri => jwks_uri: as_is edit,
    frontchannel_logout_uri => frontchannel_logout_uri: as_is edit,
    frontchannel_logout_session_required => frontchannel_logout_session_required: as_is edit,
    origin => origin: as_is keep,
    registration_token_hash => registration_token_hash: digest keep,
    registration_metadata => registration_metadata: as_is edit,
    metadata_expires_at => metadata_expires_at: as_is edit,
    introspect_any => introspect_any: as_is edit,
    initiate_login_uri => initiate_login_uri: as_is edit,
}

/// The columns for a `SELECT`.
fn column_list() -> String {
    COLUMNS.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ")
}

fn json_list(text: String, column: &str) -> Result<Vec<String>, DbError> {
    serde_json::from_str(&text).map_err(|e| DbError::Corrupt(format!("clients.{column} is not a JSON list: {e}")))
}

fn to_json(list: &[String]) -> String {
    serde_json::Value::from(list.to_vec()).to_string()
}

/// `cells` as statement arguments.
fn bound<'c>(cells: &'c [Box<dyn ToValue + 'c>]) -> Vec<&'c dyn ToValue> {
    cells.iter().map(|c| &**c as &dyn ToValue).collect()
}

/// Registers a client; `DbError::Conflict` when the id is taken.
pub fn insert(conn: &Tx<'_>, c: &Client) -> Result<(), DbError> {
    let mut cells = cells(c);
    // A new registration was last changed when it was made.
    cells.push(Box::new(c.created_at));
    let placeholders: Vec<String> = (1..=cells.len()).map(|i| format!("?{i}")).collect();
    let sql = format!(
        "INSERT INTO clients ({}, updated_at) VALUES ({})",
        column_list(),
        placeholders.join(", ")
    );
    conn.exec(&sql, &bound(&cells))?;
    set_allowed_groups(conn, &c.client_id, &c.allowed_groups)?;
    // A registration may come with its claim mapping (an app preset's).
    super::claim_rules::replace(conn, &c.client_id, &c.claim_rules)
}

/// Replaces every editable setting of an existing client (not its id, secret or
/// creation time); `false` when there is no such client.
pub fn update(conn: &Tx<'_>, c: &Client, now: i64) -> Result<bool, DbError> {
    let mut args: Vec<Box<dyn ToValue + '_>> = vec![Box::new(&c.client_id)];
    let mut set = Vec::new();
    for ((name, _), cell) in COLUMNS.iter().zip(cells(c)).filter(|((_, edit), _)| *edit) {
        args.push(cell);
        set.push(format!("{name} = ?{}", args.len()));
    }
    args.push(Box::new(now));
    set.push(format!("updated_at = ?{}", args.len()));
    let sql = format!("UPDATE clients SET {} WHERE client_id = ?1", set.join(", "));
    let n = conn.exec(&sql, &bound(&args))?;
    if n != 1 {
        return Ok(false);
    }
    set_allowed_groups(conn, &c.client_id, &c.allowed_groups)?;
    Ok(true)
}

/// Makes the client's allowed groups exactly `names`; a name that is no group is an
/// error, never a silently dropped restriction.
fn set_allowed_groups(conn: &Tx<'_>, client_id: &str, names: &[String]) -> Result<(), DbError> {
    conn.exec(
        "DELETE FROM client_allowed_groups WHERE client_id = ?1",
        args![client_id],
    )?;
    for name in names {
        let inserted = conn.exec(
            "INSERT INTO client_allowed_groups (client_id, group_id) SELECT ?1, id FROM groups WHERE name = ?2
         ON CONFLICT DO NOTHING",
            args![client_id, name],
        )?;
        if inserted == 0 && !names_a_group(conn, name)? {
            return Err(DbError::Corrupt(format!("no group named {name}")));
        }
    }
    Ok(())
}

fn names_a_group(conn: &Tx<'_>, name: &str) -> Result<bool, DbError> {
    conn.one(
        "SELECT EXISTS (SELECT 1 FROM groups WHERE name = ?1)",
        args![name],
        |r| r.get(0),
    )
}

/// The registration as read, with its allowed groups by name and its claim rules.
fn with_groups(conn: &Tx<'_>, mut c: Client) -> Result<Client, DbError> {
    c.allowed_groups = conn.rows(
        "SELECT g.name FROM client_allowed_groups a JOIN groups g ON g.id = a.group_id
         WHERE a.client_id = ?1 ORDER BY g.name",
        args![c.client_id],
        |r| r.get(0),
    )?;
    c.claim_rules = super::claim_rules::of_client(conn, &c.client_id)?;
    Ok(c)
}

/// Whether the client asks users for consent; `None` when there is no such client.
pub fn consent_required(conn: &Tx<'_>, client_id: &str) -> Result<Option<bool>, DbError> {
    conn.row(
        "SELECT consent_required FROM clients WHERE client_id = ?1",
        args![client_id],
        |r| r.get(0),
    )
}

/// Whether `user_id` may sign in to `client_id`: the client names no groups, or the
/// user belongs to one of them.
pub fn group_allowed(conn: &Tx<'_>, client_id: &str, user_id: i64) -> Result<bool, DbError> {
    let allowed = conn.row(
        "SELECT NOT EXISTS (SELECT 1 FROM client_allowed_groups WHERE client_id = c.client_id)
                 OR EXISTS (SELECT 1 FROM client_allowed_groups a JOIN user_groups ug ON ug.group_id = a.group_id
                            WHERE a.client_id = c.client_id AND ug.user_id = ?2)
             FROM clients c WHERE c.client_id = ?1",
        args![client_id, user_id],
        |r| r.get::<bool>(0),
    )?;
    Ok(allowed.unwrap_or(false))
}

pub fn find(conn: &Tx<'_>, client_id: &str) -> Result<Option<Client>, DbError> {
    let sql = format!("SELECT {} FROM clients WHERE client_id = ?1", column_list());
    conn.row(&sql, args![client_id], from_row)?
        .map(|c| with_groups(conn, c))
        .transpose()
}

pub fn list(conn: &Tx<'_>) -> Result<Vec<Client>, DbError> {
    let sql = format!("SELECT {} FROM clients ORDER BY client_id", column_list());
    conn.rows(&sql, args![], from_row)?
        .into_iter()
        .map(|c| with_groups(conn, c))
        .collect()
}

/// Replaces a confidential client's secret; `false` when there is no such client or
/// it has no secret to rotate. `hmac_copy` is kept only for `client_secret_jwt`.
pub fn set_secret(
    conn: &Tx<'_>,
    client_id: &str,
    hash: &TokenHash,
    hmac_copy: Option<&str>,
    now: i64,
) -> Result<bool, DbError> {
    let n = conn.exec(
        "UPDATE clients SET secret_hash = ?2, secret_for_hmac = ?3, updated_at = ?4
         WHERE client_id = ?1 AND secret_hash IS NOT NULL",
        args![client_id, hash.as_bytes().to_vec(), hmac_copy, now],
    )?;
    Ok(n == 1)
}

/// The client_secret_jwt keys stored in clear, as (client_id, secret).
pub fn clear_hmac_secrets(conn: &Tx<'_>) -> Result<Vec<(String, String)>, DbError> {
    conn.rows(
        "SELECT client_id, secret_for_hmac FROM clients
         WHERE secret_for_hmac IS NOT NULL AND secret_for_hmac NOT LIKE 'sealed:%'",
        args![],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// Whether any client_secret_jwt key is stored sealed (a master key is then needed).
pub fn any_sealed_hmac(conn: &Tx<'_>) -> Result<bool, DbError> {
    conn.one(
        "SELECT EXISTS (SELECT 1 FROM clients WHERE secret_for_hmac LIKE 'sealed:%')",
        args![],
        |r| r.get(0),
    )
}

/// Replaces the stored form of a client_secret_jwt key (sealing it in place).
pub fn set_hmac_secret(conn: &Tx<'_>, client_id: &str, stored: &str) -> Result<(), DbError> {
    conn.exec(
        "UPDATE clients SET secret_for_hmac = ?2 WHERE client_id = ?1",
        args![client_id, stored],
    )?;
    Ok(())
}

/// Deletes a client and, through foreign keys, its codes, grants and tokens.
pub fn delete(conn: &Tx<'_>, client_id: &str) -> Result<bool, DbError> {
    Ok(conn.exec("DELETE FROM clients WHERE client_id = ?1", args![client_id])? == 1)
}

/// Remembers a client assertion's `jti` until it expires; `false` when it was seen
/// before (a replay, RFC 7523 §3 item 7).
pub fn record_assertion(conn: &Tx<'_>, client_id: &str, jti: &str, expires_at: i64) -> Result<Claim, DbError> {
    let n = conn.exec(
        "INSERT INTO client_assertions (jti, client_id, expires_at) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
        args![jti, client_id, expires_at],
    )?;
    Ok(Claim::of(n))
}

/// One page of clients whose id or name contains `q`; and how many match in all.
pub fn search(
    conn: &Tx<'_>,
    q: Option<&str>,
    descending: bool,
    limit: i64,
    offset: i64,
) -> Result<(Vec<Client>, i64), DbError> {
    let order = if descending { "DESC" } else { "ASC" };
    let pattern = q.map(|q| format!("%{}%", q.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")));
    let condition =
        "(?1 IS NULL OR lower(client_id) LIKE lower(?1) ESCAPE '\\' OR lower(name) LIKE lower(?1) ESCAPE '\\')";
    let total = conn.one(
        &format!("SELECT count(*) FROM clients WHERE {condition}"),
        args![pattern],
        |r| r.get(0),
    )?;
    let sql = format!(
        "SELECT {} FROM clients WHERE {condition} ORDER BY client_id {order} LIMIT ?2 OFFSET ?3",
        column_list()
    );
    let clients = conn
        .rows(&sql, args![pattern, limit, offset], from_row)?
        .into_iter()
        .map(|c| with_groups(conn, c))
        .collect::<Result<_, _>>()?;
    Ok((clients, total))
}

pub fn count(conn: &Tx<'_>) -> Result<i64, DbError> {
    conn.one("SELECT count(*) FROM clients", args![], |r| r.get(0))
}
