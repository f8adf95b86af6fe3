//! The token preview: what a user would get from a client right now, in its ID token,
//! access token and userinfo, with why each claim is there and what would be refused.
//! Nothing is signed or stored; the user claims come from `claims::release` and the
//! protocol claims from `issue`, the same functions that mint real tokens.

use serde_json::{json, Map, Value};

use super::claims::{client_supports, release, ClaimsRequest, Refusal};
use super::grant::access_ttl;
use super::issue::{access_protocol, id_protocol, Protocol};
use crate::db::{clients::Client, consents::Consent, users::User};
use crate::domain::Scope;
use crate::oidc::Ctx;

/// What the preview knows about the user besides the account.
pub struct Standing<'a> {
    /// Whether the client's allowed groups admit the user.
    pub allowed: bool,
    /// The consent the user gave this client, if any.
    pub consent: Option<&'a Consent>,
}

fn protocol_reasons(claims: &Map<String, Value>) -> Map<String, Value> {
    claims.keys().map(|k| (k.clone(), Value::from("protocol"))).collect()
}

/// The refusals that stop a sign-in or narrow it, before any claim is released.
fn refusals(client: &Client, user: &User, asked: &Scope, standing: &Standing<'_>) -> Vec<Refusal> {
    let mut out = Vec::new();
    let mut refuse = |what: String, why: String| out.push(Refusal { what, why });
    if user.disabled {
        refuse(
            format!("user {}", user.username),
            "the account is disabled: no token would be issued".into(),
        );
    }
    if !standing.allowed {
        refuse(
            format!("client {}", client.client_id),
            format!(
                "{} is not a member of an allowed group ({}): the sign-in would be refused",
                user.username,
                client.allowed_groups.join(", ")
            ),
        );
    }
    if !asked.contains("openid") {
        refuse(
            "scope openid".into(),
            "a sign-in needs the openid scope: the request would be refused".into(),
        );
    }
    for s in asked.iter().filter(|s| !client_supports(client, s)) {
        refuse(
            format!("scope {s}"),
            "neither a scope of this server nor one of the client's claim mapping: dropped from the request".into(),
        );
    }
    if client.consent_required {
        let granted = standing
            .consent
            .map(|c| Scope::parse(&c.scope).unwrap_or_default())
            .unwrap_or_default();
        for s in asked
            .iter()
            .filter(|s| client_supports(client, s) && !granted.contains(s))
        {
            refuse(
                format!("scope {s}"),
                format!(
                    "needs {}'s consent, not given yet: the consent page asks at sign-in",
                    user.username
                ),
            );
        }
    }
    out
}

/// The preview as the admin API answers it:
/// `{"id_token", "access_token", "userinfo", "reasons": {…}, "refused": […]}`.
pub fn compute(cx: &Ctx<'_>, client: &Client, user: &User, asked: &Scope, standing: &Standing<'_>) -> Value {
    let refused = refusals(client, user, asked, standing);
    if !asked.contains("openid") {
        let empty = json!({});
        return json!({
            "id_token": empty, "access_token": empty, "userinfo": empty,
            "reasons": {"id_token": empty, "access_token": empty, "userinfo": empty},
            "refused": refused,
        });
    }
    // What the authorization request keeps of the scope (request.rs does the same).
    let scope = asked.filter(|s| client_supports(client, s));
    // The sign-in is taken to happen now.
    let protocol = Protocol {
        client_id: &client.client_id,
        sub: &user.sub,
        scope: &scope,
        auth_time: Some(cx.now),
        access_ttl: access_ttl(cx, client),
    };
    let released = release(user, &client.claim_rules, &scope, &ClaimsRequest::default());

    let mut id = released.id_token.claims;
    let mut id_why = released.id_token.reasons;
    let id_proto = id_protocol(cx, &protocol);
    id_why.extend(protocol_reasons(&id_proto));
    id.extend(id_proto);

    let mut at = access_protocol(cx, &protocol);
    let mut at_why = protocol_reasons(&at);
    for (k, v) in released.access_token.claims {
        if !at.contains_key(&k) {
            at_why.insert(
                k.clone(),
                released.access_token.reasons.get(&k).cloned().unwrap_or_default(),
            );
            at.insert(k, v);
        }
    }
    let mut all_refused = refused;
    all_refused.extend(released.refused);
    json!({
        "id_token": id,
        "access_token": at,
        "userinfo": released.userinfo.claims,
        "reasons": {
            "id_token": id_why,
            "access_token": at_why,
            "userinfo": released.userinfo.reasons,
        },
        "refused": all_refused,
    })
}
