//! Invitations: an administrator (admin pages, API or `tessera user invite`) invites an
//! address; the link, mailed or handed over, opens a page where the invitee chooses a
//! username and a password or a passkey (only a passkey under `--passkey-mode
//! passkey-only`), and the account is made with the invitation's groups and
//! role. A link works once, for 7 days; a new invitation to the address voids the last.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::link_token;
use crate::audit::Event;
use crate::auth::passkeys::{self, Made, PasskeyError};
use crate::config::{Settings, Signup};
use crate::context::Ctx;
use crate::crypto::password::NO_PASSWORD;
use crate::crypto::random::random_id;
use crate::crypto::TokenHash;
use crate::db::{self, email_tokens, DbError, Tx};
use crate::domain::{Email, Problems, Username};
use crate::error::Internal;
use crate::i18n::Messages;
use crate::mail::message::Message;
use crate::mail::outbox::{queue, Mail, Queued};

/// How long an invitation link works.
pub const LIFETIME: i64 = 7 * 24 * 3600;

/// The one line every refusal says while `--signup` is `off`.
pub const OFF: &str = "invitations are off: set --signup invite (or open)";

/// Invitations are made and accepted while sign-up is `invite` or `open`.
pub fn enabled(settings: &Settings) -> bool {
    matches!(settings.signup, Signup::Invite | Signup::Open)
}

/// What an invitation gives on acceptance (the token's `data`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grants {
    #[serde(default)]
    pub groups: Vec<String>,
    #[serde(default)]
    pub admin: bool,
}

impl Grants {
    fn of(token: &email_tokens::Token) -> Self {
        serde_json::from_str(&token.data).unwrap_or_default()
    }
}

/// A new invitation, with its link: shown once, since only its digest is stored.
#[derive(Debug, Clone, Serialize)]
pub struct Created {
    pub id: i64,
    pub email: String,
    pub link: String,
    pub expires_at: i64,
    pub mailed: bool,
    /// Why it was not mailed, when it was not (mail off, or the address's hourly limit).
    #[serde(skip)]
    pub queued: Queued,
}

/// Stores the invitation and queues its mail (in `mail`'s language), inside the
/// caller's transaction (the audit entry is the caller's, who knows the actor).
pub fn create_in(
    conn: &Tx<'_>,
    settings: &Settings,
    mail: &Mail,
    issuer: &str,
    email: &Email,
    grants: &Grants,
    now: i64,
) -> Result<Created, DbError> {
    let (secret, digest) = link_token();
    let expires_at = now + LIFETIME;
    let data = serde_json::to_string(grants).map_err(|e| DbError::Corrupt(e.to_string()))?;
    let id = email_tokens::create(
        conn,
        &email_tokens::NewToken {
            digest: &digest,
            purpose: email_tokens::INVITE,
            user_id: None,
            email: email.as_str(),
            data: &data,
            code: None,
            request: None,
            expires_at,
        },
        now,
    )?;
    let link = format!("{issuer}/invite?token={}", secret.expose());
    let t = mail.t;
    let body = if grants.admin {
        t.mail_invite_admin
    } else {
        t.mail_invite
    };
    let org = &settings.org_name;
    let mut message = Message::new(t.fill(t.mail_invite_subject, "org", org), t.mail_invite_greeting)
        .paragraph(t.fill(body, "org", org));
    if settings.passkey_mode.passkey_only() {
        message = message.paragraph(t.mail_invite_passkey.to_string());
    }
    let message = message.action(t.mail_invite_action, &link).after(t.mail_invite_after);
    let queued = queue(conn, mail, email.as_str(), None, "invite", &message, now)?;
    Ok(Created {
        id,
        email: email.as_str().to_string(),
        link,
        expires_at,
        mailed: queued == Queued::Yes,
        queued,
    })
}

/// A live invitation as administrators see it (never its link).
#[derive(Debug, Clone, Serialize)]
pub struct Pending {
    pub id: i64,
    pub email: String,
    pub groups: Vec<String>,
    pub admin: bool,
    pub created_at: i64,
    pub expires_at: i64,
}

/// The live invitations, newest first.
pub fn pending(conn: &Tx<'_>, now: i64) -> Result<Vec<Pending>, DbError> {
    Ok(email_tokens::live(conn, email_tokens::INVITE, now)?
        .into_iter()
        .map(|t| {
            let g = Grants::of(&t);
            Pending {
                id: t.id,
                email: t.email,
                groups: g.groups,
                admin: g.admin,
                created_at: t.created_at,
                expires_at: t.expires_at,
            }
        })
        .collect())
}

/// What the link's page shows.
#[derive(Debug, Clone)]
pub enum Opened {
    Live {
        email: String,
        /// A username to start from: the address's local part, made valid.
        suggested: String,
        admin: bool,
    },
    /// Forged, used, revoked or expired: the page says so, without telling which.
    Dead,
    Off,
}

/// The address's local part as a username: lower-cased, letters, digits, `.`, `_`
/// and `-` kept, at most 64 characters.
pub fn suggest_username(email: &str) -> String {
    let local = email.split('@').next().unwrap_or_default().to_lowercase();
    local
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .take(64)
        .collect()
}

fn digest_of(token: &str) -> Option<TokenHash> {
    // A real link token is 43 characters; anything far off is no token at all.
    (!token.is_empty() && token.len() <= 128).then(|| TokenHash::of(token))
}

pub async fn open(cx: &Ctx<'_>, token: &str) -> Result<Opened, DbError> {
    if !enabled(cx.settings) {
        return Ok(Opened::Off);
    }
    let Some(digest) = digest_of(token) else {
        return Ok(Opened::Dead);
    };
    let now = cx.now;
    let found = cx
        .db
        .read(move |c| email_tokens::find(c, &digest, email_tokens::INVITE, now))
        .await?;
    Ok(match found {
        Some(t) => Opened::Live {
            suggested: suggest_username(&t.email),
            admin: Grants::of(&t).admin,
            email: t.email,
        },
        None => Opened::Dead,
    })
}

/// The invitee's choices from the page (no `Debug`: it holds passwords).
pub struct Choice<'a> {
    pub token: &'a str,
    pub username: &'a str,
    pub password: &'a str,
    pub confirm: &'a str,
    pub ip: String,
}

pub enum Accepted {
    Created {
        username: String,
    },
    /// Something to correct on the page; the link still works.
    Invalid(Problems),
    Dead,
    Off,
}

/// The refusal of a username an account has, or one that looks like an account's.
fn taken(t: &Messages, why: super::Unavailable) -> Problems {
    let message = match why {
        super::Unavailable::Taken => t.acct_error_username_taken_choose,
        super::Unavailable::LooksLike => t.acct_error_username_lookalike,
    };
    Problems::from([("username".into(), message.to_string())])
}

/// The chosen name as it is stored: trimmed and in NFKC, as `Username::parse` makes it
/// (the form's text is checked by `check_username` first).
fn chosen(username: &str) -> String {
    Username::parse(username.trim()).map_or_else(|_| username.trim().to_string(), |u| u.as_str().to_string())
}

/// Checks the username and password: the rules of a sign-up (the setup page's, less
/// its longer minimum), and for an invitation to administer, the setup page's own.
fn check(choice: &Choice<'_>, admin: bool, invited: &str) -> Problems {
    let mut problems = check_username(choice.username, invited);
    let password = if admin {
        crate::auth::setup::password_problem(choice.password, choice.username.trim())
    } else {
        super::signup::password_problem(choice.password, choice.username.trim())
    };
    if let Some(p) = password {
        problems.insert("password".into(), p);
    }
    if choice.password != choice.confirm {
        problems.insert("confirm".into(), crate::i18n::t().acct_error_passwords_differ.into());
    }
    problems
}

/// The chosen username's problems; `invited` is the invitation's address, which the
/// account gets verified (the link proved it), so it may be the username too.
fn check_username(username: &str, invited: &str) -> Problems {
    let mut problems = Problems::new();
    if let Err(e) = Username::parse_new(username.trim(), Some(invited)) {
        problems.insert("username".into(), e.0);
    }
    problems
}

/// The live invitation a link names.
async fn live(cx: &Ctx<'_>, token: &str) -> Result<Option<email_tokens::Token>, DbError> {
    let Some(digest) = digest_of(token) else {
        return Ok(None);
    };
    let now = cx.now;
    cx.db
        .read(move |c| email_tokens::find(c, &digest, email_tokens::INVITE, now))
        .await
}

/// How the account is to be signed in to: a password's hash, or a passkey made through
/// the link (a passkey-only account).
enum Credential {
    Password(String),
    Passkey(Box<Made>),
}

/// Accepts an invitation: the account is created with the invited address (verified:
/// the link proved it), its groups and role, and the link is spent, all in one
/// transaction; of two parallel acceptances one wins.
pub async fn accept(cx: &Ctx<'_>, choice: &Choice<'_>) -> Result<Accepted, Internal> {
    if !enabled(cx.settings) {
        return Ok(Accepted::Off);
    }
    let Some(token) = live(cx, choice.token).await? else {
        return Ok(Accepted::Dead);
    };
    if cx.settings.passkey_mode.passkey_only() {
        // A form made up to set a password where the deployment gives none.
        return Ok(Accepted::Invalid(passkey_problem(crate::i18n::t().acct_passkey_only)));
    }
    let problems = check(choice, Grants::of(&token).admin, &token.email);
    if !problems.is_empty() {
        return Ok(Accepted::Invalid(problems));
    }
    // Hashed before the transaction: nothing slow under the write lock.
    let hash = cx.hasher.hash(choice.password).await?;
    create(cx, token, choice, Credential::Password(hash)).await
}

/// The options of the passkey an invitee makes instead of a password, for the
/// username they chose (checked now, and again when the account is made). The
/// account's subject is chosen here and bound to the challenge.
pub async fn passkey_options(
    cx: &Ctx<'_>,
    token: &str,
    username: &str,
) -> Result<Result<Value, Accepted>, PasskeyError> {
    if !enabled(cx.settings) {
        return Ok(Err(Accepted::Off));
    }
    let Some(invitation) = live(cx, token).await? else {
        return Ok(Err(Accepted::Dead));
    };
    let problems = check_username(username, &invitation.email);
    if !problems.is_empty() {
        return Ok(Err(Accepted::Invalid(problems)));
    }
    let name = chosen(username);
    let lookup = name.clone();
    if let Some(why) = cx.db.read(move |c| super::username_unavailable(c, &lookup)).await? {
        return Ok(Err(Accepted::Invalid(taken(crate::i18n::t(), why))));
    }
    let Some(link) = digest_of(token) else {
        return Ok(Err(Accepted::Dead));
    };
    let sub = random_id();
    let who = passkeys::Enrolee {
        link: &link,
        sub: &sub,
        username: &name,
        user_id: None,
    };
    Ok(Ok(passkeys::enrolment_options(cx, &who).await?))
}

/// Accepts an invitation with a passkey instead of a password: the account (with no
/// password) and its passkey are made together, with the subject the ceremony was
/// started for, and the link is spent in the same transaction.
pub async fn accept_with_passkey(cx: &Ctx<'_>, choice: &Choice<'_>, made: Made) -> Result<Accepted, Internal> {
    if !enabled(cx.settings) {
        return Ok(Accepted::Off);
    }
    let Some(token) = live(cx, choice.token).await? else {
        return Ok(Accepted::Dead);
    };
    let problems = check_username(choice.username, &token.email);
    if !problems.is_empty() {
        return Ok(Accepted::Invalid(problems));
    }
    create(cx, token, choice, Credential::Passkey(Box::new(made))).await
}

async fn create(
    cx: &Ctx<'_>,
    token: email_tokens::Token,
    choice: &Choice<'_>,
    credential: Credential,
) -> Result<Accepted, Internal> {
    let grants = Grants::of(&token);
    let now = cx.now;
    let username = chosen(choice.username);
    let (name, ip) = (username.clone(), choice.ip.clone());
    let link = digest_of(choice.token);
    let t = crate::i18n::t();
    let written = cx
        .db
        .write(move |c| {
            if let Some(why) = super::username_unavailable(c, &name)? {
                return Ok(Accepted::Invalid(taken(t, why)));
            }
            let (sub, hash, made) = match &credential {
                Credential::Password(hash) => (random_id(), hash.as_str(), None),
                Credential::Passkey(made) => {
                    let spent = match &link {
                        Some(link) => passkeys::spend_enrolment(c, made, link, now)?,
                        None => None,
                    };
                    let Some(sub) = spent else {
                        return Ok(Accepted::Invalid(passkey_problem(t.acct_passkey_expired)));
                    };
                    if db::passkeys::find_by_credential(c, &made.credential.id)?.is_some() {
                        return Ok(Accepted::Invalid(passkey_problem(t.acct_passkey_registered)));
                    }
                    (sub, NO_PASSWORD, Some(made))
                }
            };
            if !email_tokens::claim(c, token.id, now)?.won() {
                return Ok(Accepted::Dead);
            }
            // A name taken meanwhile (PostgreSQL, in parallel) is an error, which rolls
            // the claim back with the insert: the link stays usable.
            let id = db::users::insert(
                c,
                &db::users::NewUser {
                    sub: &sub,
                    username: &name,
                    email: Some(&token.email),
                    name: None,
                    password_hash: hash,
                    is_admin: grants.admin,
                    now,
                },
            )?;
            db::users::set_email_verified(c, id, true)?;
            // Groups deleted since the invitation are left out.
            let mut ids = Vec::new();
            for g in &grants.groups {
                ids.extend(db::groups::id_of(c, g)?);
            }
            db::groups::set_user_groups(c, id, &ids)?;
            Event::new("account.invitation_accepted")
                .actor(&name)
                .target(&name)
                .ip(Some(ip))
                .detail(json!({
                    "invitation": token.id, "email": token.email, "groups": grants.groups,
                    "admin": grants.admin, "passkey": made.is_some(),
                }))
                .write(c, now)?;
            if let Some(made) = made {
                passkeys::store_in(c, id, &name, made, now)?;
            }
            Ok(Accepted::Created { username: name })
        })
        .await;
    match written {
        Ok(a) => Ok(a),
        Err(DbError::Conflict) => Ok(Accepted::Invalid(taken(t, super::Unavailable::Taken))),
        Err(e) => Err(e.into()),
    }
}

/// A problem with the passkey, shown where the page offers it.
fn passkey_problem(message: &str) -> Problems {
    Problems::from([("passkey".into(), message.to_string())])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames_are_suggested_from_the_local_part() {
        assert_eq!(suggest_username("Ada.Lovelace@example.org"), "ada.lovelace");
        assert_eq!(suggest_username("a+b c\"d@example.org"), "abcd");
        assert_eq!(suggest_username(&format!("{}@x.org", "y".repeat(80))).len(), 64);
        assert!(Username::parse(&suggest_username("o'brien@example.org")).is_ok());
    }

    #[test]
    fn grants_survive_the_token_data() {
        let g = Grants {
            groups: vec!["staff".into()],
            admin: true,
        };
        let data = serde_json::to_string(&g).unwrap();
        assert_eq!(data, r#"{"groups":["staff"],"admin":true}"#);
        assert_eq!(serde_json::from_str::<Grants>(&data).unwrap(), g);
        assert_eq!(serde_json::from_str::<Grants>("{}").unwrap(), Grants::default());
    }
}
