//! Sign-up as a front of the journey: the parked sign-in a sign-up form came from,
//! the form sent (`lifecycle::signup`), the page of the mailed link, and the link
//! confirmed (`lifecycle::verify`, by its button or by making a passkey), after which
//! the sign-in the sign-up came from is parked again for this browser.

use std::net::IpAddr;

use crate::auth::limits::RateLimits;
use crate::auth::passkeys::{self, PasskeyError};
use crate::crypto::TokenHash;
use crate::error::Internal;
use crate::lifecycle::signup::{Form, Outcome};
use crate::lifecycle::verify::{self, Confirmed, Usable};
use crate::oidc::Ctx;
use crate::signin::portal::{sign_in_first, viewer, Login};
use crate::signin::{resume_login, Parked, Pending, ResumeError};

/// A sign-up form sent.
pub struct Submitted {
    pub outcome: Outcome,
    /// The sign-in the form came from, still waiting: the page carries it again.
    pub from: Option<Pending>,
}

/// The sign-up form from `ip`, for the sign-in it names (`request_id` empty: none),
/// in the browser bound to `binding`. A sign-in that expired while the form was filled
/// in does not stop the sign-up: the person signs in afresh once verified.
pub async fn submit(
    cx: &Ctx<'_>,
    form: Form<'_>,
    (request_id, csrf): (&str, &str),
    binding: Option<&TokenHash>,
    ip: &str,
) -> Result<Submitted, ResumeError> {
    let from = match request_id {
        "" => None,
        _ => match resume_login(cx, (request_id, csrf), binding).await {
            Ok(p) => Some(p),
            Err(ResumeError::Expired) => None,
            Err(e) => return Err(e),
        },
    };
    let request = from.as_ref().map(|_| TokenHash::of(request_id));
    let outcome = crate::lifecycle::signup::submit(cx, form, request, ip).await?;
    Ok(Submitted { outcome, from })
}

/// What the page of a mailed link shows.
pub enum Shown {
    /// Unknown, used, voided or expired.
    Dead,
    /// The link and its "Confirm" button.
    Confirm(Usable),
    /// A change of address, opened in a browser signed in as another account.
    OtherAccount,
    /// A change of address with nobody signed in: the page asks to sign in first.
    SignInFirst(Usable),
    /// A change of address with nobody signed in, and `signin=1` asked: the login form
    /// that comes back to the page.
    SignIn(Login),
}

/// The browser on the page of a mailed link: its session cookie, and, when it asks to
/// sign in (`signin=1`), where from and the page to come back to.
pub struct Visit<'a> {
    pub session_cookie: Option<&'a str>,
    pub sign_in: Option<(IpAddr, &'a TokenHash, String)>,
}

/// The page of the link `token`. A pending change of address is offered only to a
/// browser signed in as its account.
pub async fn show(limits: &RateLimits, cx: &Ctx<'_>, token: &str, visit: Visit<'_>) -> Result<Shown, Internal> {
    let Some(found) = verify::usable(cx, token).await? else {
        return Ok(Shown::Dead);
    };
    let Some(owner) = found.change_for else {
        return Ok(Shown::Confirm(found));
    };
    Ok(match (viewer(cx, visit.session_cookie).await?, visit.sign_in) {
        (Some((_, user)), _) if user.id == owner => Shown::Confirm(found),
        (Some(_), _) => Shown::OtherAccount,
        (None, Some((ip, binding, back))) => {
            Shown::SignIn(sign_in_first(limits, cx, (ip, binding), Pending::Portal(back)).await?)
        }
        (None, None) => Shown::SignInFirst(found),
    })
}

/// How the link is confirmed.
pub enum Proof<'a> {
    /// "Confirm", in the browser with this session cookie (a change of address
    /// confirms only signed in as its account).
    Button { session_cookie: Option<&'a str> },
    /// The passkey made through the link of a sign-up without a password, as sent.
    Passkey {
        name: &'a str,
        client_data: &'a str,
        attestation_object: &'a str,
    },
}

/// What confirming came to.
pub struct Confirmation {
    pub confirmed: Confirmed,
    /// A verified sign-up's sign-in, still waiting, parked again for this browser.
    pub parked: Option<Parked>,
}

/// Confirms the link `token` from `ip`, in the browser bound to `binding`.
pub async fn confirm(
    cx: &Ctx<'_>,
    token: &str,
    proof: Proof<'_>,
    (ip, binding): (&str, &TokenHash),
) -> Result<Confirmation, Internal> {
    let confirmed = match proof {
        Proof::Button { session_cookie } => {
            let viewer = viewer(cx, session_cookie).await?.map(|(_, user)| user.id);
            verify::confirm(cx, token, ip, viewer, None).await?
        }
        Proof::Passkey {
            name,
            client_data,
            attestation_object,
        } => match passkeys::verify_creation(cx, name, client_data, attestation_object) {
            Ok(made) => verify::confirm(cx, token, ip, None, Some(made)).await?,
            Err(PasskeyError::Refused(why)) => Confirmed::Passkey(why),
            Err(PasskeyError::Server(e)) => return Err(e),
        },
    };
    let parked = match &confirmed {
        Confirmed::Verified {
            resume: Some(request), ..
        } => park_again(cx, request, binding).await,
        _ => None,
    };
    Ok(Confirmation { confirmed, parked })
}

/// The sign-in a sign-up came from, if it is still parked and unused, parked again for
/// this browser. The address is verified whatever happens here: a failure is logged.
async fn park_again(cx: &Ctx<'_>, request: &TokenHash, binding: &TokenHash) -> Option<Parked> {
    let (request, now) = (*request, cx.now);
    let found = cx
        .db
        .read(move |c| crate::db::sessions::find_login_request(c, &request, now))
        .await;
    let params = match found {
        Ok(found) => found?.params,
        Err(e) => {
            tracing::warn!(error = ?e, "cannot read the sign-in after a verification");
            return None;
        }
    };
    let pending = serde_json::from_str::<Pending>(&params)
        .ok()
        .filter(Pending::is_login_form)?;
    match crate::signin::park(cx, &pending, binding).await {
        Ok(parked) => Some(parked),
        Err(e) => {
            tracing::warn!(error = ?e, "cannot park the sign-in after a verification");
            None
        }
    }
}
