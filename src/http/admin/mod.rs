//! `/admin`: what every administration page shares (the CSRF-checked form, error
//! pages, flash messages, paging), the dashboard, signing keys and the audit log.
//! Users, clients and groups have their own files. Every change is a form with the
//! session's CSRF token, handled by the same operations as the JSON API.

pub mod api;
pub mod apps;
pub mod branding;
pub mod caller;
pub mod charts;
pub mod claims;
pub mod clients;
pub mod form;
pub mod groups;
pub mod multipart;
pub mod openapi;
pub mod presets;
pub mod providers;
pub mod registration;
pub mod users;

use actix_web::http::StatusCode;
use actix_web::web;
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::admin::{self, overview::Stats, AdminError, ListQuery};
use crate::http::pages;
use crate::http::signin::portal;
use crate::i18n::t;
use crate::state::AppState;

pub use form::{answer, done, posted, posted_to, record_id, Form, Posted};

pub use crate::http::errors::admin_page as error_page;

/// The message for a `done` code in the query.
pub fn flash(req: &HttpRequest) -> Option<&'static str> {
    let code = url::form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == "done")?
        .1;
    let t = t();
    Some(match code.as_ref() {
        "created" => t.adm_flash_created,
        "saved" => t.adm_flash_saved,
        "password" => t.adm_flash_password,
        "disabled" => t.adm_flash_disabled,
        "enabled" => t.adm_flash_enabled,
        "unlocked" => t.adm_flash_unlocked,
        "mfa" => t.adm_flash_mfa,
        "deleted" => t.adm_flash_deleted,
        "sessions" => t.adm_flash_sessions,
        "rotated" => t.adm_flash_rotated,
        _ => return None,
    })
}

/// `text` as HTML with each `{name}` of `values` replaced by its value in `<code>`
/// (a command-line flag in a sentence): the text and the values are escaped, so a
/// template renders it with `|safe`.
pub fn with_code(text: &str, values: &[(&str, &str)]) -> String {
    let values: Vec<(&str, &dyn std::fmt::Display)> =
        values.iter().map(|(n, v)| (*n, v as &dyn std::fmt::Display)).collect();
    crate::i18n::markup(text, "code", &values)
}

/// Previous and next page links for a list.
pub fn pager(
    path: &str,
    keep: &[(&str, &str)],
    limit: i64,
    offset: i64,
    total: i64,
) -> (Option<String>, Option<String>) {
    let link = |off: i64| {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in keep.iter().filter(|(_, v)| !v.is_empty()) {
            q.append_pair(k, v);
        }
        q.append_pair("offset", &off.to_string());
        format!("{path}?{}", q.finish())
    };
    let prev = (offset > 0).then(|| link((offset - limit).max(0)));
    let next = (offset + limit < total).then(|| link(offset + limit));
    (prev, next)
}

#[derive(Template)]
#[template(path = "admin_dashboard.html")]
struct Dashboard<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    stats: Stats,
    charts: Vec<charts::Chart>,
    /// Seconds behind, when replication is on.
    replication_lag: Option<String>,
    /// (time, event, actor, target, address), newest first.
    security: Vec<[String; 5]>,
}

pub async fn dashboard(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Err(resp) = portal::require_admin(&req, &state).await {
        return resp;
    }
    match admin::overview::dashboard(
        &state.ctx(),
        state.replication.as_deref().map(|r| (r, state.clock.now_millis())),
    )
    .await
    {
        Ok(d) => pages::render(
            StatusCode::OK,
            &Dashboard {
                is_admin: true,
                flash: flash(&req),
                charts: charts::for_dashboard(&d),
                replication_lag: d
                    .replication_lag
                    .map(|s| t().fill(t().adm_seconds, "n", t().decimal(s, 1))),
                security: d
                    .security
                    .into_iter()
                    .map(|e| {
                        let or_dash = |v: Option<String>| v.unwrap_or_else(|| "–".into());
                        [
                            t().datetime(e.at),
                            e.event,
                            or_dash(e.actor),
                            or_dash(e.target),
                            or_dash(e.ip),
                        ]
                    })
                    .collect(),
                stats: d.stats,
            },
        ),
        Err(e) => error_page(&e),
    }
}

#[derive(Template)]
#[template(path = "admin_keys.html")]
struct KeysPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    csrf: &'a str,
    keys: Vec<(String, String, String, String)>,
}

pub async fn keys(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let v = match portal::require_admin(&req, &state).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    let keys = match admin::overview::keys(&state.ctx()).await {
        Ok(k) => k,
        Err(e) => return error_page(&e),
    };
    let rows = keys
        .iter()
        .rev()
        .map(|k| {
            let at = |name: &str| t().datetime(k[name].as_i64().unwrap_or_default());
            let status = match k["status"].as_str() {
                Some("published") => t().fill(t().adm_keys_published, "time", at("signs_from")),
                Some("retiring") => t().fill(t().adm_keys_retiring, "time", at("retired_at")),
                Some("retired") => t().fill(t().adm_keys_retired, "time", at("retired_at")),
                _ => t().adm_keys_signing.to_string(),
            };
            (
                k["kid"].as_str().unwrap_or_default().to_string(),
                k["alg"].as_str().unwrap_or_default().to_string(),
                at("created_at"),
                status,
            )
        })
        .collect();
    pages::render(
        StatusCode::OK,
        &KeysPage {
            is_admin: true,
            flash: flash(&req),
            csrf: &v.csrf,
            keys: rows,
        },
    )
}

pub async fn keys_rotate(state: web::Data<AppState>, post: Posted) -> HttpResponse {
    let Posted { form, actor, .. } = post;
    match admin::overview::rotate_key(&state.ctx(), &actor, form.get("alg")).await {
        Ok(_) => done("/admin/keys", "rotated"),
        Err(e) => error_page(&e),
    }
}

#[derive(Template)]
#[template(path = "admin_audit.html")]
struct AuditPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    event: &'a str,
    who: &'a str,
    from: &'a str,
    to: &'a str,
    error: Option<String>,
    retention: String,
    total: i64,
    entries: Vec<(String, String, String, String, String, String)>,
    prev: Option<String>,
    next: Option<String>,
}

pub async fn audit(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Err(resp) = portal::require_admin(&req, &state).await {
        return resp;
    }
    // Date inputs become the API's `since`/`until` (Unix seconds; `to` is inclusive).
    let q = ListQuery::parse(req.query_string()).and_then(|mut q| {
        for (field, key, extra) in [("from", "since", 0), ("to", "until", 86_400)] {
            if let Some(text) = q.filters.get(field).cloned() {
                let at = portal::parse_date(&text).ok_or_else(|| admin::invalid(field, t().adm_audit_bad_date))?;
                q.filters.insert(key.to_string(), (at + extra).to_string());
            }
        }
        Ok(q)
    });
    let (listed, error) = match &q {
        Ok(q) => match admin::overview::audit(&state.ctx(), q).await {
            Ok(l) => (Some(l), None),
            Err(AdminError::Invalid(p)) => (None, p.values().next().cloned()),
            Err(e) => return error_page(&e),
        },
        Err(AdminError::Invalid(p)) => (None, p.values().next().cloned()),
        Err(e) => return error_page(e),
    };
    let q = q.unwrap_or_default();
    let event = q.filters.get("event").cloned().unwrap_or_default();
    let who = q.filters.get("who").cloned().unwrap_or_default();
    let (from, to) = (
        q.filters.get("from").cloned().unwrap_or_default(),
        q.filters.get("to").cloned().unwrap_or_default(),
    );
    let (entries, total) = listed.map(|l| (l.items, l.total)).unwrap_or_default();
    let keep = [
        ("event", event.as_str()),
        ("who", who.as_str()),
        ("from", from.as_str()),
        ("to", to.as_str()),
    ];
    let (prev, next) = pager("/admin/audit", &keep, q.limit, q.offset, total);
    let days = state.settings.audit_retention_days;
    let page = AuditPage {
        is_admin: true,
        flash: None,
        event: &event,
        who: &who,
        from: &from,
        to: &to,
        error,
        retention: if days == 0 {
            t().adm_audit_forever.into()
        } else {
            t().plural(days, t().adm_audit_days_one, t().adm_audit_days_other)
        },
        total,
        entries: entries
            .into_iter()
            .map(|e| {
                (
                    t().datetime(e.at),
                    e.event,
                    e.actor.unwrap_or_default(),
                    e.target.unwrap_or_default(),
                    e.ip.unwrap_or_default(),
                    e.detail.to_string().chars().take(300).collect(),
                )
            })
            .collect(),
        prev,
        next,
    };
    pages::render(StatusCode::OK, &page)
}

#[derive(Template)]
#[template(path = "admin_mail.html")]
struct MailPage<'a> {
    is_admin: bool,
    flash: Option<&'a str>,
    mail_on: bool,
    status: &'a str,
    /// "3 pending, 2 sent, 1 failed. …"
    counts: String,
    /// The notice that mail is off, as HTML.
    mail_off: String,
    /// (queued, to, subject, kind, status, attempts, next attempt or sent/failed time, last answer)
    items: Vec<[String; 8]>,
}

/// The mail queue: pending, sent and failed messages with the server's last answer.
pub async fn mail(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Err(resp) = portal::require_admin(&req, &state).await {
        return resp;
    }
    let q = match ListQuery::parse(req.query_string()) {
        Ok(q) => q,
        Err(e) => return error_page(&e),
    };
    let view = match admin::mail::queue(&state.ctx(), &q).await {
        Ok(v) => v,
        Err(e) => return error_page(&e),
    };
    let status = q.filters.get("status").cloned().unwrap_or_default();
    let when = |at: Option<i64>| at.map(|at| t().datetime(at)).unwrap_or_default();
    let items = view
        .items
        .into_iter()
        .map(|m| {
            let at = match m.status {
                "pending" => when(m.next_attempt_at),
                "sent" => when(m.sent_at),
                _ => when(m.failed_at),
            };
            let status = match m.status {
                "pending" => t().adm_mail_status_pending,
                "sent" => t().adm_mail_status_sent,
                "failed" => t().adm_mail_status_failed,
                other => other,
            };
            [
                t().datetime(m.created_at),
                m.to,
                m.subject,
                m.kind,
                status.to_string(),
                t().number(m.attempts),
                at,
                m.last_answer.unwrap_or_default(),
            ]
        })
        .collect();
    let page = MailPage {
        is_admin: true,
        flash: None,
        mail_on: state.settings.smtp.is_some(),
        status: &status,
        counts: fill_numbers(
            t().adm_mail_counts,
            &[("pending", view.pending), ("sent", view.sent), ("failed", view.failed)],
        ),
        mail_off: with_code(t().adm_mail_off, &[("url", "--smtp-url"), ("from", "--smtp-from")]),
        items,
    };
    pages::render(StatusCode::OK, &page)
}

/// `text` with every `{name}` of `values` filled with the number in this language.
fn fill_numbers(text: &str, values: &[(&str, i64)]) -> String {
    values
        .iter()
        .fold(text.to_string(), |out, (name, n)| t().fill(&out, name, t().number(*n)))
}
