//! Device approval as a front of the journey (RFC 8628 §3.3): the user code looked up
//! for the signed-in person (or the login form parked on the way to it), and the
//! approval page's answer.

use crate::crypto::TokenHash;
use crate::error::Internal;
use crate::oidc::device;
use crate::oidc::Ctx;
use crate::signin::{Parked, Pending, ResumeError};

/// What a user code leads to.
pub enum Lookup {
    /// No device waits under this code.
    Unknown,
    /// Nobody is signed in: the login form, parked for this step, for the client named.
    Login(Parked, Box<Pending>, String),
    /// The client's allowed groups do not admit the signed-in person; the client's name.
    NotAdmitted(String),
    /// The approval page, parked under `parked`, for the client and the scope it asks.
    Approve {
        parked: Parked,
        client_name: String,
        scope: String,
    },
}

/// The user code `code` (normalised) entered in the browser bound to `binding`, with
/// its session cookie.
pub async fn look_up(
    cx: &Ctx<'_>,
    code: &str,
    session_cookie: Option<&str>,
    binding: &TokenHash,
) -> Result<Lookup, Internal> {
    let session = crate::signin::current_session(cx, session_cookie).await?;
    let Some((request, client)) = device::pending(cx, code).await? else {
        return Ok(Lookup::Unknown);
    };
    let Some(session) = session else {
        let pending = Pending::DeviceLogin(code.to_string());
        let parked = crate::signin::park(cx, &pending, binding).await?;
        return Ok(Lookup::Login(parked, Box::new(pending), client.name.clone()));
    };
    if !device::admits(cx, &client.client_id, session.user_id).await? {
        return Ok(Lookup::NotAdmitted(client.name.clone()));
    }
    let parked = crate::signin::park(cx, &Pending::DeviceApprove(code.to_string()), binding).await?;
    Ok(Lookup::Approve {
        parked,
        client_name: client.name.clone(),
        scope: request.scope,
    })
}

/// The approval form: the parked step it names and the person's choice (`None`: neither
/// "allow" nor "deny").
pub struct Choice<'a> {
    pub request_id: &'a str,
    pub csrf: &'a str,
    pub approve: Option<bool>,
}

/// What the device was told.
pub enum Decided {
    Approved,
    Denied,
    /// The code is no longer waiting.
    Unknown,
    /// The client's allowed groups do not admit the person; the client's name.
    NotAdmitted(String),
}

/// Why an approval form did not go on.
pub enum Refused {
    Resume(ResumeError),
    /// The form's choice is neither "allow" nor "deny".
    Choice,
    Server(Internal),
}

impl From<ResumeError> for Refused {
    fn from(e: ResumeError) -> Self {
        Refused::Resume(e)
    }
}

impl From<Internal> for Refused {
    fn from(e: Internal) -> Self {
        Refused::Server(e)
    }
}

/// The approval form's answer from the browser bound to `binding`, signed in with
/// `session_cookie`: the parked step used up, then the device approved or denied.
pub async fn decide(
    cx: &Ctx<'_>,
    choice: &Choice<'_>,
    binding: Option<&TokenHash>,
    session_cookie: Option<&str>,
) -> Result<Decided, Refused> {
    let code = match crate::signin::resume(cx, choice.request_id, choice.csrf, binding).await? {
        Pending::DeviceApprove(code) => code,
        _ => return Err(ResumeError::Expired.into()),
    };
    let approve = choice.approve.ok_or(Refused::Choice)?;
    let Some(session) = crate::signin::current_session(cx, session_cookie).await? else {
        return Err(ResumeError::Expired.into());
    };
    crate::signin::consume(cx, choice.request_id).await?;
    if approve {
        let Some((_, client)) = device::pending(cx, &code).await? else {
            return Ok(Decided::Unknown);
        };
        if !device::admits(cx, &client.client_id, session.user_id).await? {
            return Ok(Decided::NotAdmitted(client.name.clone()));
        }
    }
    Ok(match device::decide(cx, &code, &session, approve).await? {
        true if approve => Decided::Approved,
        true => Decided::Denied,
        false => Decided::Unknown,
    })
}
