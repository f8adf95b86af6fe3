//! One-time values seen (DPoP proofs, request objects), kept until they expire so a
//! replay is refused on every node.

use super::sql::args;
use super::{Claim, DbError, Tx};

/// The kind of a DPoP proof's `jti` (RFC 9449 §11.1).
pub const DPOP: &str = "dpop";
/// The kind of a request object's `jti` (RFC 9101 §10.8).
pub const REQUEST_OBJECT: &str = "request_object";

/// Remembers `jti` of `kind` until `expires_at`; `Claim::Lost` when it was seen before.
pub fn record(conn: &Tx<'_>, kind: &str, jti: &str, expires_at: i64) -> Result<Claim, DbError> {
    let n = conn.exec(
        "INSERT INTO seen_jtis (kind, jti, expires_at) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
        args![kind, jti, expires_at],
    )?;
    Ok(Claim::of(n))
}
