//! Carries out a plan through the admin use cases (actor `apply`), step by step, each
//! step one or more transactions with their audit entries; what only this run can
//! show (a generated secret, a set-password link) is printed under its step.

use serde_json::json;

use super::step::{Action, ClientStep, Step};
use crate::admin::{self, Actor, AdminError};
use crate::db::{self, email_tokens};
use crate::domain::Secret;
use crate::federation::Upstreams;
use crate::lifecycle::{self, Queued};
use crate::mail::message::Message;
use crate::oidc::Ctx;

/// The audit log's name for changes made by `tessera apply` and `serve --apply`.
pub fn actor() -> Actor {
    Actor {
        name: "apply".into(),
        ip: None,
        user_id: None,
    }
}

/// A refusal or failure of a use case as one line.
pub fn text(e: AdminError) -> String {
    e.line(None)
}

/// Runs the steps in order; the printed lines, or the step that failed and why (the
/// steps before it stay applied, and a second apply finishes the rest).
pub async fn run(cx: &Ctx<'_>, upstreams: &Upstreams, steps: Vec<Step>) -> Result<Vec<String>, String> {
    let actor = actor();
    let mut out = Vec::new();
    for step in steps {
        let first = step.lines.first().cloned().unwrap_or_default();
        out.extend(step.lines);
        let notes = act(cx, upstreams, &actor, step.action)
            .await
            .map_err(|e| format!("applying `{first}`: {}", text(e)))?;
        out.extend(notes.into_iter().map(|n| format!("  {n}")));
    }
    Ok(out)
}

async fn group_id(cx: &Ctx<'_>, name: &str) -> Result<i64, AdminError> {
    admin::groups::list(cx)
        .await?
        .into_iter()
        .find(|g| g.name == name)
        .map(|g| g.id)
        .ok_or(AdminError::NotFound("group"))
}

async fn user_id(cx: &Ctx<'_>, name: &str) -> Result<i64, AdminError> {
    admin::users::id_by_username(cx, name)
        .await?
        .ok_or(AdminError::NotFound("user"))
}

async fn act(cx: &Ctx<'_>, upstreams: &Upstreams, actor: &Actor, action: Action) -> Result<Vec<String>, AdminError> {
    match action {
        Action::CreateGroup(name) => {
            admin::groups::create(cx, actor, &name).await?;
        }
        Action::CreateUser { mut input, disabled } => {
            // Nobody knows this password: the person chooses theirs through the link.
            input.password = Some(Secret::generate().expose().to_string());
            let user = admin::users::create(cx, actor, input).await?;
            if disabled {
                admin::users::set_disabled(cx, actor, user.id, true).await?;
                return Ok(Vec::new());
            }
            return password_link(cx, actor, &user).await.map(|n| vec![n]);
        }
        Action::UpdateUser {
            username,
            input,
            disabled,
        } => {
            let id = user_id(cx, &username).await?;
            let edits = input.email.is_some()
                || input.name.is_some()
                || input.is_admin.is_some()
                || input.email_verified.is_some()
                || input.claims.is_some();
            if edits {
                admin::users::update(cx, actor, id, input).await?;
            }
            if let Some(d) = disabled {
                admin::users::set_disabled(cx, actor, id, d).await?;
            }
        }
        Action::Members { group, add, remove } => {
            let id = group_id(cx, &group).await?;
            for u in &add {
                admin::groups::set_member(cx, actor, id, u, true).await?;
            }
            for u in &remove {
                admin::groups::set_member(cx, actor, id, u, false).await?;
            }
        }
        Action::Client(step) => return client(cx, actor, *step).await,
        Action::CreateApp(spec) => {
            admin::apps::create(cx, actor, &spec).await?;
        }
        Action::UpdateApp(app) => update_app(cx, actor, app).await?,
        Action::CreateProvider(spec) => {
            let p = admin::providers::create(cx, upstreams, actor, &spec).await?;
            let redirect = crate::federation::callback_url(cx, &p.id);
            return Ok(vec![format!("provider {}: register {redirect} at the upstream", p.id)]);
        }
        Action::ReplaceProvider(spec) => {
            admin::providers::delete(cx, upstreams, actor, &spec.id).await?;
            admin::providers::create(cx, upstreams, actor, &spec).await?;
        }
        Action::ProviderSecret { id, secret } => {
            admin::providers::replace_secret(cx, actor, &id, secret.expose()).await?;
        }
        Action::DeleteClient(id) => admin::clients::delete(cx, cx.clients, actor, &id).await?,
        Action::DeleteApp(id) => admin::apps::delete(cx, actor, &id).await?,
        Action::DeleteProvider(id) => admin::providers::delete(cx, upstreams, actor, &id).await?,
        Action::DeleteUser(name) => {
            let id = user_id(cx, &name).await?;
            admin::users::delete(cx, actor, id).await?;
        }
        Action::DeleteGroup(name) => {
            let id = group_id(cx, &name).await?;
            admin::groups::delete(cx, actor, id).await?;
        }
    }
    Ok(Vec::new())
}

async fn client(cx: &Ctx<'_>, actor: &Actor, step: ClientStep) -> Result<Vec<String>, AdminError> {
    let mut notes = Vec::new();
    let mut stored_claims = Vec::new();
    if step.new {
        let spec = step.spec.clone().unwrap_or_default();
        let generated = match &step.preset {
            Some(req) => {
                let r = admin::presets::register(cx, actor, req, |s| *s = spec).await?;
                stored_claims = r.claim_rules.iter().map(admin::claims::RuleSpec::of).collect();
                r.secret
            }
            None => admin::clients::create(cx, actor, &spec).await?.1,
        };
        if let (Some(s), None) = (generated, &step.secret) {
            notes.push(format!("client {} secret: {} (shown once)", step.id, s.expose()));
        }
    } else if let Some(spec) = &step.spec {
        admin::clients::update(cx, cx.clients, actor, &step.id, spec).await?;
    }
    if let Some(claims) = &step.claims {
        // A new client holds what its preset stored (or nothing) already.
        if !(step.new && *claims == stored_claims) {
            admin::claims::replace(cx, cx.clients, actor, &step.id, claims).await?;
        }
    }
    if let Some(secret) = &step.secret {
        set_secret(cx, actor, &step.id, &step.method, secret).await?;
    }
    Ok(notes)
}

/// Gives a client exactly the secret the file references (stored as its digest, and
/// for client_secret_jwt sealed, as a rotation stores it).
async fn set_secret(cx: &Ctx<'_>, actor: &Actor, id: &str, method: &str, secret: &Secret) -> Result<(), AdminError> {
    let hmac = (method == "client_secret_jwt")
        .then(|| admin::clients::seal_hmac(cx, secret.expose()))
        .transpose()?;
    let (hash, now, actor, cid) = (secret.hash(), cx.now, actor.clone(), id.to_string());
    let set = cx
        .db
        .write(move |c| {
            if !db::clients::set_secret(c, &cid, &hash, hmac.as_deref(), now)? {
                return Ok(false);
            }
            actor
                .event("admin.client_secret_set")
                .target(format!("client:{cid}"))
                .write(c, now)?;
            Ok(true)
        })
        .await?;
    cx.clients.forget(id);
    if set {
        Ok(())
    } else {
        Err(AdminError::Conflict("this client has no secret to set".into()))
    }
}

/// An app changed in one transaction, checked as `admin::apps::create` checks a new
/// one (the plan did: groups, host, cookie domain), so the proxy never finds it gone.
async fn update_app(cx: &Ctx<'_>, actor: &Actor, mut app: db::apps::App) -> Result<(), AdminError> {
    let before = admin::apps::get(cx, &app.id).await?;
    let (now, actor) = (cx.now, actor.clone());
    app.updated_at = now;
    cx.db
        .write(move |c| {
            db::apps::delete(c, &app.id)?;
            db::apps::insert(c, &app)?;
            actor
                .event("admin.app_updated")
                .target(format!("app:{}", app.id))
                .detail(json!({"before": admin::apps::view(&before), "after": admin::apps::view(&app)}))
                .write(c, now)
        })
        .await?;
    Ok(())
}

/// A new account's way in: a single-use link to choose a password (the reset page's,
/// valid as long as an invitation), mailed when mail is on, else printed.
async fn password_link(cx: &Ctx<'_>, actor: &Actor, user: &admin::users::UserView) -> Result<String, AdminError> {
    let Some(email) = user.email.clone() else {
        return Ok(format!(
            "user {0}: no email address for a link; set a password with `tessera user set-password {0}`",
            user.username
        ));
    };
    let (secret, digest) = lifecycle::link_token();
    let link = cx.url(&format!("/password/reset?token={}", secret.expose()));
    let (now, actor, settings) = (cx.now, actor.clone(), cx.settings.clone());
    let (id, username, to) = (user.id, user.username.clone(), email.clone());
    let t = crate::i18n::t();
    let greeting = t.fill(t.mail_greeting, "name", user.name.as_deref().unwrap_or(&user.username));
    let org = &settings.org_name;
    let message = Message::new(t.fill(t.mail_account_made_subject, "org", org), greeting)
        .paragraph(t.fill2(t.mail_account_made, "org", org, "username", &username))
        .action(t.mail_account_made_action, &link)
        .after(t.mail_account_made_after);
    let mail = crate::mail::outbox::Mail::new(&settings);
    let queued = cx
        .db
        .write(move |c| {
            let expires_at = now + lifecycle::invite::LIFETIME;
            email_tokens::create(
                c,
                &email_tokens::NewToken {
                    digest: &digest,
                    purpose: email_tokens::RESET,
                    user_id: Some(id),
                    email: &to,
                    data: "{}",
                    code: None,
                    request: None,
                    expires_at,
                },
                now,
            )?;
            let queued = crate::mail::outbox::queue(c, &mail, &to, Some(id), "invite", &message, now)?;
            actor
                .event("admin.password_link_created")
                .target(&username)
                .detail(json!({"mailed": queued == Queued::Yes, "expires_at": expires_at}))
                .write(c, now)?;
            Ok(queued)
        })
        .await?;
    Ok(if queued == Queued::Yes {
        cx.mail_wakeup.notify_one();
        format!(
            "user {}: a link to choose a password was mailed to {email}",
            user.username
        )
    } else {
        format!(
            "user {}: choose a password at {link} (valid 7 days, once)",
            user.username
        )
    })
}
