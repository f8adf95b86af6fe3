//! Codes and links by mail, as the sign-in link and the email second factor check
//! them: one more try counted before a code is compared, the comparison in constant
//! time, and only for the address the account has now.

use subtle::ConstantTimeEq;

use crate::crypto::TokenHash;
use crate::db::{email_tokens, DbError, Tx};

/// Whether a token was mailed to the address the account has now: a link or code sent
/// to an address since changed or removed is dead, whether or not the change voided it
/// (`account::update_profile` does; a change made another way may not).
pub fn same_address(token_email: &str, current: Option<&str>) -> bool {
    current.is_some_and(|e| !e.trim().is_empty() && e.trim().to_lowercase() == token_email.trim().to_lowercase())
}

/// What counting one more try at a token's code came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Try {
    /// Within the limit; whether it is the last one allowed.
    Allowed { last: bool },
    /// Past the limit: the code is not compared, and the token is void.
    Refused,
}

/// Counts a try at token `id`'s code BEFORE its code is compared, with one
/// conditional update whose result each transaction reads back. PostgreSQL's update
/// waits for a parallel transaction's lock on the row and then counts on from its
/// committed value (READ COMMITTED), and SQLite has one writer: of any number of
/// parallel tries, at most `max` are ever compared.
pub fn count_try(c: &Tx<'_>, id: i64, purpose: &str, max: i64, now: i64) -> Result<Try, DbError> {
    let n = email_tokens::wrong_code(c, id)?;
    if n > max {
        email_tokens::void(c, id, purpose, now)?;
        return Ok(Try::Refused);
    }
    Ok(Try::Allowed { last: n == max })
}

/// Whether a typed code is the one whose digest is stored (in constant time).
pub fn code_matches(stored: Option<&[u8]>, typed: &str) -> bool {
    let typed: String = typed.chars().filter(|c| !c.is_whitespace()).collect();
    if typed.is_empty() || typed.len() > 16 {
        return false;
    }
    let Some(stored) = stored else { return false };
    bool::from(stored.ct_eq(TokenHash::of(&typed).as_bytes()))
}
