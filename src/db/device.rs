//! Device authorization requests (RFC 8628): created by the device, decided by a
//! signed-in person, then redeemed once by the polling device.

use super::sql::{args, Row};
use super::{Claim, DbError, Tx};
use crate::crypto::TokenHash;

#[derive(Debug, Clone)]
pub struct DeviceRequest {
    pub user_code: String,
    pub client_id: String,
    pub scope: String,
    pub expires_at: i64,
    pub interval: i64,
    pub last_poll_at: Option<i64>,
    pub user_id: Option<i64>,
    pub sid: Option<String>,
    pub auth_time: Option<i64>,
    pub amr: Option<String>,
    pub approved: Option<bool>,
    pub used_at: Option<i64>,
}

pub struct NewDevice<'a> {
    pub device_hash: &'a TokenHash,
    pub user_code: &'a str,
    pub client_id: &'a str,
    pub scope: &'a str,
    pub now: i64,
    pub expires_at: i64,
    pub interval: i64,
}

/// Inserts a request; `DbError::Conflict` when the user code is taken (retry another).
pub fn insert(conn: &Tx<'_>, d: &NewDevice<'_>) -> Result<(), DbError> {
    conn.exec(
        "INSERT INTO device_codes (device_hash, user_code, client_id, scope, created_at, expires_at, interval)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        args![
            d.device_hash.as_bytes(),
            d.user_code,
            d.client_id,
            d.scope,
            d.now,
            d.expires_at,
            d.interval
        ],
    )?;
    Ok(())
}

const COLUMNS: &str =
    "user_code, client_id, scope, expires_at, interval, last_poll_at, user_id, sid, auth_time, approved, used_at, amr";

fn from_row(r: &Row<'_>) -> Result<DeviceRequest, DbError> {
    Ok(DeviceRequest {
        user_code: r.get(0)?,
        client_id: r.get(1)?,
        scope: r.get(2)?,
        expires_at: r.get(3)?,
        interval: r.get(4)?,
        last_poll_at: r.get(5)?,
        user_id: r.get(6)?,
        sid: r.get(7)?,
        auth_time: r.get(8)?,
        approved: r.get(9)?,
        used_at: r.get(10)?,
        amr: r.get(11)?,
    })
}

pub fn find_by_device(conn: &Tx<'_>, hash: &TokenHash) -> Result<Option<DeviceRequest>, DbError> {
    let sql = format!("SELECT {COLUMNS} FROM device_codes WHERE device_hash = ?1");
    conn.row(&sql, args![hash.as_bytes()], from_row)
}

pub fn find_by_user_code(conn: &Tx<'_>, user_code: &str) -> Result<Option<DeviceRequest>, DbError> {
    let sql = format!("SELECT {COLUMNS} FROM device_codes WHERE user_code = ?1");
    conn.row(&sql, args![user_code], from_row)
}

/// Records a poll; `interval` grows when the device polled too fast (RFC 8628 §3.5).
/// Holds the device request's row for the rest of the transaction (a no-op write), so
/// that polls of one device code from several nodes take turns and the `slow_down`
/// rule (RFC 8628 §3.5) sees the poll before.
pub fn lock(conn: &Tx<'_>, hash: &TokenHash) -> Result<(), DbError> {
    conn.exec(
        "UPDATE device_codes SET last_poll_at = last_poll_at WHERE device_hash = ?1",
        args![hash.as_bytes()],
    )?;
    Ok(())
}

pub fn record_poll(conn: &Tx<'_>, hash: &TokenHash, now: i64, interval: i64) -> Result<(), DbError> {
    conn.exec(
        "UPDATE device_codes SET last_poll_at = ?2, interval = ?3 WHERE device_hash = ?1",
        args![hash.as_bytes(), now, interval],
    )?;
    Ok(())
}

pub struct Decision<'a> {
    pub user_code: &'a str,
    pub user_id: i64,
    pub sid: &'a str,
    pub auth_time: i64,
    pub amr: &'a str,
    pub approved: bool,
    pub now: i64,
}

/// The person's answer; `false` when the request is unknown, expired or decided.
pub fn decide(conn: &Tx<'_>, d: &Decision<'_>) -> Result<bool, DbError> {
    let n = conn.exec(
        "UPDATE device_codes SET user_id = ?2, sid = ?3, auth_time = ?4, approved = ?5, decided_at = ?6, amr = ?7
             WHERE user_code = ?1 AND decided_at IS NULL AND expires_at > ?6",
        args![d.user_code, d.user_id, d.sid, d.auth_time, d.approved, d.now, d.amr],
    )?;
    Ok(n == 1)
}

/// Marks a decided request redeemed; `false` when it already was.
pub fn consume(conn: &Tx<'_>, hash: &TokenHash, now: i64) -> Result<Claim, DbError> {
    let n = conn.exec(
        "UPDATE device_codes SET used_at = ?2 WHERE device_hash = ?1 AND used_at IS NULL",
        args![hash.as_bytes(), now],
    )?;
    Ok(Claim::of(n))
}
