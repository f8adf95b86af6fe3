//! Upstream identity providers Tessera is a relying party of, and the mapping of their
//! group values to local groups.

use super::sql::{args, Row};
use super::{DbError, Tx};

/// A registered upstream. `Debug` leaves out the client secret.
#[derive(Clone)]
pub struct Provider {
    pub id: String,
    /// `oidc` or `github`.
    pub kind: String,
    pub name: String,
    /// The upstream issuer (OpenID Connect), or the GitHub Enterprise base (`None`:
    /// github.com).
    pub issuer: Option<String>,
    pub client_id: String,
    /// As stored: sealed with the master key when one is set.
    pub client_secret: String,
    pub scope: String,
    pub jit: bool,
    pub link_by_email: bool,
    pub require_local_mfa: bool,
    pub group_claim: Option<String>,
    /// Upstream value → local group name, ordered by upstream value.
    pub group_map: Vec<(String, String)>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

const COLUMNS: &str = "id, kind, name, issuer, client_id, client_secret, scope, jit, link_by_email, \
                       require_local_mfa, group_claim, created_at, updated_at";

fn from_row(r: &Row<'_>) -> Result<Provider, DbError> {
    Ok(Provider {
        id: r.get(0)?,
        kind: r.get(1)?,
        name: r.get(2)?,
        issuer: r.get(3)?,
        client_id: r.get(4)?,
        client_secret: r.get(5)?,
        scope: r.get(6)?,
        jit: r.get(7)?,
        link_by_email: r.get(8)?,
        require_local_mfa: r.get(9)?,
        group_claim: r.get(10)?,
        group_map: Vec::new(),
        created_at: r.get(11)?,
        updated_at: r.get(12)?,
    })
}

fn load_map(conn: &Tx<'_>, p: &mut Provider) -> Result<(), DbError> {
    p.group_map = conn.rows(
        "SELECT m.upstream, g.name FROM provider_groups m JOIN groups g ON g.id = m.group_id
         WHERE m.provider_id = ?1 ORDER BY m.upstream, g.name",
        args![p.id.as_str()],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(())
}

/// Registers a provider with its group mapping (each local group must exist; the
/// caller checks). `DbError::Conflict` when the id is taken.
pub fn insert(conn: &Tx<'_>, p: &Provider) -> Result<(), DbError> {
    conn.exec(
        &format!("INSERT INTO providers ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"),
        args![
            p.id.as_str(),
            p.kind.as_str(),
            p.name.as_str(),
            p.issuer.as_deref(),
            p.client_id.as_str(),
            p.client_secret.as_str(),
            p.scope.as_str(),
            p.jit,
            p.link_by_email,
            p.require_local_mfa,
            p.group_claim.as_deref(),
            p.created_at,
            p.updated_at
        ],
    )?;
    for (upstream, local) in &p.group_map {
        conn.exec(
            "INSERT INTO provider_groups (provider_id, upstream, group_id)
             SELECT ?1, ?2, id FROM groups WHERE name = ?3 ON CONFLICT DO NOTHING",
            args![p.id.as_str(), upstream.as_str(), local.as_str()],
        )?;
    }
    Ok(())
}

pub fn find(conn: &Tx<'_>, id: &str) -> Result<Option<Provider>, DbError> {
    let found = conn.row(
        &format!("SELECT {COLUMNS} FROM providers WHERE id = ?1"),
        args![id],
        from_row,
    )?;
    match found {
        Some(mut p) => {
            load_map(conn, &mut p)?;
            Ok(Some(p))
        }
        None => Ok(None),
    }
}

/// Each provider's id and name, by id: the login page's buttons, without the rest.
pub fn names(conn: &Tx<'_>) -> Result<Vec<(String, String)>, DbError> {
    conn.rows("SELECT id, name FROM providers ORDER BY id", args![], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
}

/// Every provider, by id, with its mapping.
pub fn list(conn: &Tx<'_>) -> Result<Vec<Provider>, DbError> {
    let mut all = conn.rows(
        &format!("SELECT {COLUMNS} FROM providers ORDER BY id"),
        args![],
        from_row,
    )?;
    for p in &mut all {
        load_map(conn, p)?;
    }
    Ok(all)
}

/// Removes a provider; its identities and mappings go with it, and the sessions it
/// opened stay (they are local sessions now).
pub fn delete(conn: &Tx<'_>, id: &str) -> Result<bool, DbError> {
    Ok(conn.exec("DELETE FROM providers WHERE id = ?1", args![id])? == 1)
}

/// Stores a secret in its new form (sealing one kept in clear).
pub fn replace_secret(conn: &Tx<'_>, id: &str, stored: &str) -> Result<(), DbError> {
    conn.exec(
        "UPDATE providers SET client_secret = ?2 WHERE id = ?1",
        args![id, stored],
    )?;
    Ok(())
}

/// Whether any provider's secret is sealed (a server without the master key cannot
/// use them).
pub fn any_sealed(conn: &Tx<'_>) -> Result<bool, DbError> {
    let n: i64 = conn.one(
        "SELECT count(*) FROM providers WHERE client_secret LIKE 'sealed:%'",
        args![],
        |r| r.get(0),
    )?;
    Ok(n > 0)
}

/// The local groups a provider maps, with the upstream values that grant each.
pub fn mapped_groups(conn: &Tx<'_>, id: &str) -> Result<Vec<(i64, String)>, DbError> {
    conn.rows(
        "SELECT group_id, upstream FROM provider_groups WHERE provider_id = ?1 ORDER BY group_id",
        args![id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}
