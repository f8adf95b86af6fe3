//! Passkeys: registering one from the account page and signing in with one. Each
//! ceremony's challenge is stored once (bound to the user, or to the parked login
//! request) and spent in the same transaction that acts on it.

use crate::error::Internal;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};

use crate::context::Ctx;
use crate::crypto::webauthn::{self, RelyingParty};
use crate::crypto::TokenHash;
use crate::db::passkeys::{Binding, NewPasskey, Passkey};
use crate::db::{self, users::User, DbError};
use crate::domain::Secret;

/// Seconds a ceremony may take.
const CHALLENGE_TTL: i64 = 300;

#[derive(Debug, thiserror::Error)]
pub enum PasskeyError {
    #[error("{0}")]
    Refused(&'static str),
    #[error(transparent)]
    Server(#[from] Internal),
}

impl From<DbError> for PasskeyError {
    fn from(e: DbError) -> Self {
        PasskeyError::Server(e.into())
    }
}

impl From<webauthn::Refused> for PasskeyError {
    fn from(r: webauthn::Refused) -> Self {
        PasskeyError::Refused(r.0)
    }
}

fn relying_party(cx: &Ctx<'_>) -> Result<RelyingParty, PasskeyError> {
    RelyingParty::of_issuer(cx.issuer).ok_or(PasskeyError::Refused("the issuer has no host for passkeys"))
}

async fn new_challenge(cx: &Ctx<'_>, binding: Binding) -> Result<String, PasskeyError> {
    let challenge = Secret::generate();
    let (hash, expires) = (challenge.hash(), cx.now + CHALLENGE_TTL);
    cx.db
        .write(move |c| db::passkeys::create_challenge(c, &hash, &binding, expires))
        .await?;
    Ok(challenge.expose().to_string())
}

/// `PublicKeyCredentialCreationOptions` (WebAuthn §5.4) with binary fields base64url,
/// for the account with subject `sub`, leaving out credentials it already has.
fn creation_options(
    rp: &RelyingParty,
    challenge: &str,
    sub: &str,
    username: &str,
    display: &str,
    existing: &[Vec<u8>],
) -> Value {
    json!({
        "challenge": challenge,
        "rp": {"id": rp.id, "name": "Tessera"},
        // The user handle is the subject: stable, and no personal data.
        "user": {
            "id": URL_SAFE_NO_PAD.encode(sub.as_bytes()),
            "name": username,
            "displayName": display,
        },
        "pubKeyCredParams": [
            {"type": "public-key", "alg": -7},
            {"type": "public-key", "alg": -8},
            {"type": "public-key", "alg": -257}
        ],
        "authenticatorSelection": {"residentKey": "required", "requireResidentKey": true, "userVerification": "required"},
        "attestation": "none",
        "timeout": CHALLENGE_TTL * 1000,
        "excludeCredentials": existing
            .iter()
            .map(|id| json!({"type": "public-key", "id": URL_SAFE_NO_PAD.encode(id)}))
            .collect::<Vec<_>>(),
    })
}

/// Options for adding a passkey to the signed-in `user`'s account.
pub async fn registration_options(cx: &Ctx<'_>, user: &User) -> Result<Value, PasskeyError> {
    let rp = relying_party(cx)?;
    let uid = user.id;
    let existing = cx.db.read(move |c| db::passkeys::credential_ids(c, uid)).await?;
    let challenge = new_challenge(cx, Binding::Register(uid)).await?;
    let display = user.name.as_deref().unwrap_or(&user.username);
    Ok(creation_options(
        &rp,
        &challenge,
        &user.sub,
        &user.username,
        display,
        &existing,
    ))
}

/// Who a passkey made through a mailed link is for.
pub struct Enrolee<'a> {
    /// The link's digest: the ceremony is bound to it.
    pub link: &'a TokenHash,
    /// The account's subject: an existing account's, or the one a new account gets.
    pub sub: &'a str,
    pub username: &'a str,
    /// The account, when it exists already (its passkeys are left out).
    pub user_id: Option<i64>,
}

/// Options for a passkey made through a mailed link (an invitation, a reset, the
/// verification of a sign-up without a password); the challenge is bound to the link
/// and to the account's subject.
pub async fn enrolment_options(cx: &Ctx<'_>, who: &Enrolee<'_>) -> Result<Value, PasskeyError> {
    let rp = relying_party(cx)?;
    let existing = match who.user_id {
        Some(uid) => cx.db.read(move |c| db::passkeys::credential_ids(c, uid)).await?,
        None => Vec::new(),
    };
    let binding = Binding::Enrol(*who.link, who.sub.to_string());
    let challenge = new_challenge(cx, binding).await?;
    Ok(creation_options(
        &rp,
        &challenge,
        who.sub,
        who.username,
        who.username,
        &existing,
    ))
}

/// A new credential the browser made, verified, waiting to be stored with the use
/// case's own changes (`store_in`).
pub struct Made {
    pub challenge: TokenHash,
    pub credential: webauthn::NewCredential,
    pub name: String,
}

/// Verifies a new credential (WebAuthn §7.1) against the relying party; the challenge
/// is spent later, in the transaction that stores it.
pub fn verify_creation(
    cx: &Ctx<'_>,
    name: &str,
    client_data: &str,
    attestation_object: &str,
) -> Result<Made, PasskeyError> {
    let rp = relying_party(cx)?;
    let cdj = decode("client data is not base64url", client_data)?;
    let att = decode("the attestation object is not base64url", attestation_object)?;
    let (challenge, credential) = webauthn::register(&rp, &cdj, &att)?;
    let name: String = match name.trim() {
        "" => "Passkey".into(),
        n => n.chars().take(60).collect(),
    };
    Ok(Made {
        challenge: TokenHash::of(&challenge),
        credential,
        name,
    })
}

/// Spends an enrolment challenge made through `link` inside the caller's transaction;
/// the subject it was issued for, or `None` when it is unknown, spent or expired.
pub fn spend_enrolment(c: &db::Tx<'_>, made: &Made, link: &TokenHash, now: i64) -> Result<Option<String>, DbError> {
    let Some(sub) = db::passkeys::enrolment_subject(c, &made.challenge, link, now)? else {
        return Ok(None);
    };
    let binding = Binding::Enrol(*link, sub.clone());
    Ok(db::passkeys::consume_challenge(c, &made.challenge, &binding, now)?
        .won()
        .then_some(sub))
}

/// Stores a verified credential for `user_id` with `passkey.added` inside the caller's
/// transaction; `false` when the credential is registered already.
pub fn store_in(c: &db::Tx<'_>, user_id: i64, username: &str, made: &Made, now: i64) -> Result<bool, DbError> {
    let stored = NewPasskey {
        user_id,
        credential_id: &made.credential.id,
        public_jwk: &made.credential.public_jwk,
        alg: made.credential.alg,
        sign_count: made.credential.sign_count,
        name: &made.name,
        now,
    };
    match db::passkeys::insert(c, &stored) {
        Ok(_) => {}
        Err(DbError::Conflict) => return Ok(false),
        Err(e) => return Err(e),
    }
    crate::audit::Event::new("passkey.added")
        .actor(username)
        .target(username)
        .detail(json!({"name": made.name, "alg": made.credential.alg}))
        .write(c, now)?;
    Ok(true)
}

fn decode(field: &'static str, value: &str) -> Result<Vec<u8>, PasskeyError> {
    if value.len() > 16_384 {
        return Err(PasskeyError::Refused(field));
    }
    URL_SAFE_NO_PAD
        .decode(value.trim_end_matches('='))
        .map_err(|_| PasskeyError::Refused(field))
}

/// Verifies a new credential from the account page and stores it under `name`.
pub async fn register(
    cx: &Ctx<'_>,
    user: &User,
    name: &str,
    client_data: &str,
    attestation_object: &str,
) -> Result<(), PasskeyError> {
    let made = verify_creation(cx, name, client_data, attestation_object)?;
    let (uid, now) = (user.id, cx.now);
    let (mail, owner) = (crate::mail::outbox::Mail::new(cx.settings), user.clone());
    let done = cx
        .db
        .write(move |c| {
            if !db::passkeys::consume_challenge(c, &made.challenge, &Binding::Register(uid), now)?.won() {
                return Ok(Err(PasskeyError::Refused("the ceremony expired; try again")));
            }
            if !store_in(c, uid, &owner.username, &made, now)? {
                return Ok(Err(PasskeyError::Refused("this passkey is already registered")));
            }
            let t = mail.t;
            let said = t.fill2(t.mail_passkey_added, "name", &made.name, "username", &owner.username);
            crate::mail::outbox::notify(c, &mail, &owner, t.mail_passkey_added_subject, &said, now)?;
            Ok(Ok(()))
        })
        .await?;
    // Tells this node's mailer that the notice is queued, now that it is committed.
    cx.mail_wakeup.notify_one();
    done
}

/// `PublicKeyCredentialRequestOptions` for signing in with any passkey of this site
/// (discoverable credentials), bound to the parked login request.
pub async fn login_options(cx: &Ctx<'_>, request_id: &str) -> Result<Value, PasskeyError> {
    let rp = relying_party(cx)?;
    let challenge = new_challenge(cx, Binding::Login(TokenHash::of(request_id))).await?;
    Ok(json!({
        "challenge": challenge,
        "rpId": rp.id,
        "timeout": CHALLENGE_TTL * 1000,
        "userVerification": "required",
        "allowCredentials": [],
    }))
}

/// The assertion the browser sent, base64url fields as posted.
pub struct Assertion<'a> {
    pub credential_id: &'a str,
    pub client_data: &'a str,
    pub authenticator_data: &'a str,
    pub signature: &'a str,
}

/// Verifies an assertion for the parked request `request_id`; returns the user it
/// signs in.
pub async fn authenticate(cx: &Ctx<'_>, request_id: &str, a: &Assertion<'_>) -> Result<i64, PasskeyError> {
    let binding = Binding::Login(TokenHash::of(request_id));
    asserted(cx, binding, None, a, "the sign-in expired or was already used").await
}

/// Options for the signed-in `user` to confirm who they are with one of their
/// passkeys (before a credential is added, as a password confirmation does).
pub async fn reauth_options(cx: &Ctx<'_>, user: &User) -> Result<Value, PasskeyError> {
    let rp = relying_party(cx)?;
    let uid = user.id;
    let existing = cx.db.read(move |c| db::passkeys::credential_ids(c, uid)).await?;
    if existing.is_empty() {
        return Err(PasskeyError::Refused("this account has no passkey"));
    }
    let challenge = new_challenge(cx, Binding::Reauth(uid)).await?;
    Ok(json!({
        "challenge": challenge,
        "rpId": rp.id,
        "timeout": CHALLENGE_TTL * 1000,
        "userVerification": "required",
        "allowCredentials": existing
            .iter()
            .map(|id| json!({"type": "public-key", "id": URL_SAFE_NO_PAD.encode(id)}))
            .collect::<Vec<_>>(),
    }))
}

/// Verifies the signed-in `user`'s confirmation with one of their own passkeys.
pub async fn reauthenticate(cx: &Ctx<'_>, user: &User, a: &Assertion<'_>) -> Result<(), PasskeyError> {
    let binding = Binding::Reauth(user.id);
    asserted(cx, binding, Some(user.id), a, "the confirmation expired; try again").await?;
    Ok(())
}

/// Verifies an assertion (WebAuthn §7.2) and spends its challenge for `binding`,
/// recording the use; the passkey's user. With `owner`, the passkey must be theirs.
async fn asserted(
    cx: &Ctx<'_>,
    binding: Binding,
    owner: Option<i64>,
    a: &Assertion<'_>,
    spent_already: &'static str,
) -> Result<i64, PasskeyError> {
    let rp = relying_party(cx)?;
    let id = decode("the credential id is not base64url", a.credential_id)?;
    let cdj = decode("client data is not base64url", a.client_data)?;
    let ad = decode("authenticator data is not base64url", a.authenticator_data)?;
    let sig = decode("the signature is not base64url", a.signature)?;
    let key: Passkey = cx
        .db
        .read(move |c| db::passkeys::find_by_credential(c, &id))
        .await?
        .filter(|k| owner.is_none_or(|uid| k.user_id == uid))
        .ok_or(PasskeyError::Refused("this passkey is not registered here"))?;
    let asserted = webauthn::verify_assertion(&rp, &cdj, &ad, &sig, &key.public_jwk, &key.alg, key.sign_count)?;
    let (challenge, now) = (TokenHash::of(&asserted.challenge), cx.now);
    let (pk, old, new) = (key.id, key.sign_count, asserted.sign_count);
    let spent = cx
        .db
        .write(move |c| {
            Ok(db::passkeys::consume_challenge(c, &challenge, &binding, now)?.won()
                && db::passkeys::record_use(c, pk, old, new, now)?)
        })
        .await?;
    if spent {
        Ok(key.user_id)
    } else {
        Err(PasskeyError::Refused(spent_already))
    }
}

/// What the account signing in as `username` (username-first) can sign in with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Named {
    pub passkey: bool,
    pub password: bool,
}

/// The credentials of the account signing in as `username` (username-first): a
/// disabled or unknown account is said to have a password and no passkey, like any
/// account that has only a password, so the step tells those apart from nothing.
pub async fn named(cx: &Ctx<'_>, username: &str) -> Result<Named, DbError> {
    let name = username.trim().to_string();
    let plain = Named {
        passkey: false,
        password: true,
    };
    if name.is_empty() {
        return Ok(plain);
    }
    cx.db
        .read(move |c| match db::users::find_for_sign_in(c, &name)? {
            Some(u) if !u.disabled => Ok(Named {
                passkey: db::passkeys::count_for_user(c, u.id)? > 0,
                password: crate::crypto::password::has_password(&u.password_hash),
            }),
            _ => Ok(plain),
        })
        .await
}

pub async fn list(cx: &Ctx<'_>, user_id: i64) -> Result<Vec<Passkey>, DbError> {
    cx.db.read(move |c| db::passkeys::list_for_user(c, user_id)).await
}

/// What removing a passkey came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Removed {
    /// Removed; its name.
    Done(String),
    /// No such passkey of this user.
    NotFound,
    /// The account's only way in (no password, no upstream account): kept.
    LastWayIn,
}

/// Removes one of the user's passkeys, unless it is the only way the account can sign
/// in: a passkey-only account keeps its last one (a reset can replace it).
pub async fn remove(cx: &Ctx<'_>, user: &User, id: i64) -> Result<Removed, DbError> {
    let (uid, now) = (user.id, cx.now);
    let username = user.username.clone();
    cx.db
        .write(move |c| {
            let Some(u) = db::users::find_by_id(c, uid)? else {
                return Ok(Removed::NotFound);
            };
            let keys = db::passkeys::list_for_user(c, uid)?;
            if !keys.iter().any(|k| k.id == id) {
                return Ok(Removed::NotFound);
            }
            let other_way = keys.len() > 1
                || crate::crypto::password::has_password(&u.password_hash)
                || !db::identities::of_user(c, uid)?.is_empty();
            if !other_way {
                return Ok(Removed::LastWayIn);
            }
            let Some(name) = db::passkeys::delete(c, uid, id)? else {
                return Ok(Removed::NotFound);
            };
            crate::audit::Event::new("passkey.removed")
                .actor(&username)
                .target(&username)
                .detail(json!({"name": name}))
                .write(c, now)?;
            Ok(Removed::Done(name))
        })
        .await
}
