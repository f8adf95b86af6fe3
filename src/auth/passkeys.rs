//! Passkeys: registering one from the account page and signing in with one. Each
//! ceremony's challenge is stored once (bound to the user, or to the parked login
//! request) and spent in the same transaction that acts on it.

use crate::error::Internal;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};

use crate::crypto::webauthn::{self, RelyingParty};
use crate::crypto::{Secret, TokenHash};
use crate::db::passkeys::{Binding, NewPasskey, Passkey};
use crate::db::{self, users::User, DbError};
use crate::state::AppState;

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

fn relying_party(state: &AppState) -> Result<RelyingParty, PasskeyError> {
    RelyingParty::of_issuer(&state.issuer).ok_or(PasskeyError::Refused("the issuer has no host for passkeys"))
}

async fn new_challenge(state: &AppState, binding: Binding) -> Result<String, PasskeyError> {
    let challenge = Secret::generate();
    let (hash, expires) = (challenge.hash(), state.clock.now() + CHALLENGE_TTL);
    state
        .db
        .write(move |c| db::passkeys::create_challenge(c, &hash, &binding, expires))
        .await?;
    Ok(challenge.expose().to_string())
}

/// `PublicKeyCredentialCreationOptions` (WebAuthn §5.4) with binary fields base64url.
pub async fn registration_options(state: &AppState, user: &User) -> Result<Value, PasskeyError> {
    let rp = relying_party(state)?;
    let uid = user.id;
    let existing = state.db.read(move |c| db::passkeys::credential_ids(c, uid)).await?;
    let challenge = new_challenge(state, Binding::Register(uid)).await?;
    Ok(json!({
        "challenge": challenge,
        "rp": {"id": rp.id, "name": "Tessera"},
        // The user handle is the subject: stable, and no personal data.
        "user": {
            "id": URL_SAFE_NO_PAD.encode(user.sub.as_bytes()),
            "name": user.username,
            "displayName": user.name.as_deref().unwrap_or(&user.username),
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
    }))
}

fn decode(field: &'static str, value: &str) -> Result<Vec<u8>, PasskeyError> {
    if value.len() > 16_384 {
        return Err(PasskeyError::Refused(field));
    }
    URL_SAFE_NO_PAD
        .decode(value.trim_end_matches('='))
        .map_err(|_| PasskeyError::Refused(field))
}

/// Verifies a new credential and stores it under `name`.
pub async fn register(
    state: &AppState,
    user: &User,
    name: &str,
    client_data: &str,
    attestation_object: &str,
) -> Result<(), PasskeyError> {
    let rp = relying_party(state)?;
    let cdj = decode("client data is not base64url", client_data)?;
    let att = decode("the attestation object is not base64url", attestation_object)?;
    let (challenge, cred) = webauthn::register(&rp, &cdj, &att)?;
    let name: String = match name.trim() {
        "" => "Passkey".into(),
        n => n.chars().take(60).collect(),
    };
    let (uid, now, hash) = (user.id, state.clock.now(), TokenHash::of(&challenge));
    let (settings, owner) = (state.settings.clone(), user.clone());
    let event = crate::audit::Event::new("passkey.added")
        .actor(&user.username)
        .target(&user.username)
        .detail(json!({"name": name, "alg": cred.alg}));
    let done = state
        .db
        .write(move |c| {
            if !db::passkeys::consume_challenge(c, &hash, &Binding::Register(uid), now)?.won() {
                return Ok(Err(PasskeyError::Refused("the ceremony expired; try again")));
            }
            let stored = NewPasskey {
                user_id: uid,
                credential_id: &cred.id,
                public_jwk: &cred.public_jwk,
                alg: cred.alg,
                sign_count: cred.sign_count,
                name: &name,
                now,
            };
            match db::passkeys::insert(c, &stored) {
                Ok(_) => {}
                Err(DbError::Conflict) => return Ok(Err(PasskeyError::Refused("this passkey is already registered"))),
                Err(e) => return Err(e),
            }
            event.write(c, now)?;
            crate::lifecycle::notify(
                c,
                &settings,
                &owner,
                crate::i18n::t().mail_passkey_added_subject,
                &crate::i18n::t().fill2(
                    crate::i18n::t().mail_passkey_added,
                    "name",
                    &name,
                    "username",
                    &owner.username,
                ),
                now,
            )?;
            Ok(Ok(()))
        })
        .await?;
    crate::lifecycle::wake(state);
    done
}

/// `PublicKeyCredentialRequestOptions` for signing in with any passkey of this site
/// (discoverable credentials), bound to the parked login request.
pub async fn login_options(state: &AppState, request_id: &str) -> Result<Value, PasskeyError> {
    let rp = relying_party(state)?;
    let challenge = new_challenge(state, Binding::Login(TokenHash::of(request_id))).await?;
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
pub async fn authenticate(state: &AppState, request_id: &str, a: &Assertion<'_>) -> Result<i64, PasskeyError> {
    let rp = relying_party(state)?;
    let id = decode("the credential id is not base64url", a.credential_id)?;
    let cdj = decode("client data is not base64url", a.client_data)?;
    let ad = decode("authenticator data is not base64url", a.authenticator_data)?;
    let sig = decode("the signature is not base64url", a.signature)?;
    let key: Passkey = state
        .db
        .read(move |c| db::passkeys::find_by_credential(c, &id))
        .await?
        .ok_or(PasskeyError::Refused("this passkey is not registered here"))?;
    let asserted = webauthn::verify_assertion(&rp, &cdj, &ad, &sig, &key.public_jwk, &key.alg, key.sign_count)?;
    let (challenge, request, now) = (
        TokenHash::of(&asserted.challenge),
        TokenHash::of(request_id),
        state.clock.now(),
    );
    let (pk, old, new) = (key.id, key.sign_count, asserted.sign_count);
    let spent = state
        .db
        .write(move |c| {
            Ok(
                db::passkeys::consume_challenge(c, &challenge, &Binding::Login(request), now)?.won()
                    && db::passkeys::record_use(c, pk, old, new, now)?,
            )
        })
        .await?;
    if spent {
        Ok(key.user_id)
    } else {
        Err(PasskeyError::Refused("the sign-in expired or was already used"))
    }
}

/// Whether the account signing in as `username` (username-first) has a passkey to be
/// asked for; a disabled or unknown account has none, so it gets the password step
/// like any account without one.
pub async fn named_has_passkey(state: &AppState, username: &str) -> Result<bool, DbError> {
    let name = username.trim().to_string();
    if name.is_empty() {
        return Ok(false);
    }
    state
        .db
        .read(move |c| match db::users::find_by_username(c, &name)? {
            Some(u) if !u.disabled => Ok(!db::passkeys::list_for_user(c, u.id)?.is_empty()),
            _ => Ok(false),
        })
        .await
}

pub async fn list(state: &AppState, user_id: i64) -> Result<Vec<Passkey>, DbError> {
    state.db.read(move |c| db::passkeys::list_for_user(c, user_id)).await
}

/// Removes one of the user's passkeys; its name, or `None` when it is not theirs.
pub async fn remove(state: &AppState, user: &User, id: i64) -> Result<Option<String>, DbError> {
    let (uid, now) = (user.id, state.clock.now());
    let username = user.username.clone();
    state
        .db
        .write(move |c| {
            let name = db::passkeys::delete(c, uid, id)?;
            if let Some(n) = &name {
                crate::audit::Event::new("passkey.removed")
                    .actor(&username)
                    .target(&username)
                    .detail(json!({"name": n}))
                    .write(c, now)?;
            }
            Ok(name)
        })
        .await
}
