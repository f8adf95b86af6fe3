//! First run: a one-time link, printed on the console, through which the operator
//! creates the first administrator in a browser.

use crate::context::Ctx;
use crate::crypto::random::random_id;
use crate::crypto::TokenHash;
use crate::db::{self, users::NewUser, DbError};
use crate::domain::Secret;
use crate::domain::{Email, Problems, Username};
use crate::error::Internal;

/// How long the setup link works.
pub const LIFETIME: i64 = 3600;

/// A new setup link token while there is no active administrator.
pub async fn start(cx: &Ctx<'_>) -> Result<Option<Secret>, DbError> {
    if cx.db.read(db::users::count_active_admins).await? > 0 {
        return Ok(None);
    }
    let token = Secret::generate();
    let (hash, now) = (token.hash(), cx.now);
    cx.db
        .write(move |c| db::setup::create(c, &hash, now, now + LIFETIME))
        .await?;
    Ok(Some(token))
}

pub async fn usable(cx: &Ctx<'_>, token: &str) -> Result<bool, DbError> {
    if token.is_empty() || token.len() > 128 {
        return Ok(false);
    }
    let (hash, now) = (TokenHash::of(token), cx.now);
    cx.db.read(move |c| db::setup::usable(c, &hash, now)).await
}

/// An administrator's password: at least 10 characters, and the rules of every chosen
/// password (`domain::password_problem`).
pub fn password_problem(password: &str, username: &str) -> Option<String> {
    if password.chars().count() < 10 {
        return Some("use at least 10 characters for an administrator".into());
    }
    crate::domain::password_problem(password, username)
}

pub enum Outcome {
    Created,
    Invalid(Problems),
    Expired,
}

pub async fn finish(
    cx: &Ctx<'_>,
    token: &str,
    username: &str,
    email: &str,
    password: &str,
    confirm: &str,
) -> Result<Outcome, Internal> {
    // The first administrator's address is not verified yet: no `@` in the username.
    let name = Username::parse_new(username.trim(), None);
    let mail = Email::parse(email);
    let problems: Problems = [
        ("username", name.as_ref().err().map(|e| e.0.clone())),
        ("email", mail.as_ref().err().map(|e| e.0.clone())),
        ("password", password_problem(password, username.trim())),
        (
            "confirm",
            (password != confirm).then(|| "the two passwords differ".to_string()),
        ),
    ]
    .into_iter()
    .filter_map(|(field, problem)| problem.map(|p| (field.to_string(), p)))
    .collect();
    let (Ok(name), Ok(mail), true) = (name, mail, problems.is_empty()) else {
        return Ok(Outcome::Invalid(problems));
    };
    let password_hash = cx.hasher.hash(password).await?;
    let (hash, now) = (TokenHash::of(token), cx.now);
    let created = cx
        .db
        .write(move |c| {
            let admin = NewUser {
                sub: &random_id(),
                username: name.as_str(),
                email: Some(mail.as_str()),
                name: None,
                password_hash: &password_hash,
                is_admin: true,
                now,
            };
            db::setup::complete(c, &hash, &admin, now)
        })
        .await?;
    Ok(if created { Outcome::Created } else { Outcome::Expired })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn administrator_passwords_are_checked() {
        assert!(password_problem("short", "root").is_some());
        assert!(password_problem("aaaaaaaaaaaa", "root").is_some());
        assert!(password_problem("1234567890", "root").is_some());
        assert!(password_problem("my-root-secret-1", "root").is_some());
        assert!(password_problem("correct horse battery", "root").is_none());
    }
}
