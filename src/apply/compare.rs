//! The registrations' side of the plan: clients (with their claim mapping and secret),
//! forward-auth apps and upstream providers, compared field by field with what is
//! stored, and the groups each of them still names once the plan is made.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::file::{ClientDecl, Desired, ProviderDecl};
use super::node::Problem;
use super::step::{changed, missing_group, Action, ClientStep, Current, Final, Step};
use crate::admin::claims::RuleSpec;
use crate::admin::clients::{auth_family, spec_of};
use crate::context::Ctx;
use crate::crypto::sealed;
use crate::db::{apps::App, clients::Client, providers::Provider};

pub struct Registrations {
    pub changes: Vec<Step>,
    pub deletions: Vec<Step>,
    /// Group → the first registration that names it once the plan is made.
    pub group_users: HashMap<String, String>,
}

pub fn registrations(
    cx: &Ctx<'_>,
    now: &Current,
    want: &Desired,
    fin: &Final,
    prune: bool,
) -> Result<Registrations, Problem> {
    let mut out = Registrations {
        changes: Vec::new(),
        deletions: Vec::new(),
        group_users: HashMap::new(),
    };
    clients(now, want, fin, prune, &mut out)?;
    apps(cx, now, want, fin, prune, &mut out)?;
    providers(cx, now, want, fin, prune, &mut out)?;
    Ok(out)
}

fn names(out: &mut Registrations, who: String, groups: impl IntoIterator<Item = String>) {
    for g in groups {
        out.group_users.entry(g).or_insert_with(|| who.clone());
    }
}

/// The specification of a stored client as the diff compares it: every field, the
/// allowed groups sorted (they are stored as a set).
fn view(c: &Client) -> Map<String, Value> {
    let mut spec = spec_of(c);
    spec.allowed_groups.sort();
    spec.allowed_groups.dedup();
    match serde_json::to_value(spec) {
        Ok(Value::Object(mut m)) => {
            m.remove("client_id");
            m
        }
        _ => Map::new(),
    }
}

fn rule_groups(rules: &[RuleSpec]) -> impl Iterator<Item = String> + '_ {
    rules
        .iter()
        .flat_map(|r| r.values.iter().map(|v| v.group.trim().to_string()))
}

fn check_groups(d: &ClientDecl, fin: &Final) -> Result<(), Problem> {
    for (i, g) in d.built.allowed_groups.iter().enumerate() {
        if !fin.groups.contains(g) {
            return Err(missing_group(&d.place, "allowed_groups", i, g));
        }
    }
    for (r, rule) in d.claims.iter().enumerate() {
        for (i, v) in rule.values.iter().enumerate() {
            if !fin.groups.contains(v.group.trim()) {
                let place = d.claim_places.get(r).unwrap_or(&d.place);
                return Err(missing_group(place, "values", i, v.group.trim()));
            }
        }
    }
    Ok(())
}

/// Names the groups a stored client keeps referring to (its allowed groups and those
/// of its claim rules).
fn names_stored(out: &mut Registrations, c: &Client) {
    let specs: Vec<RuleSpec> = c.claim_rules.iter().map(RuleSpec::of).collect();
    let groups: Vec<String> = c.allowed_groups.iter().cloned().chain(rule_groups(&specs)).collect();
    names(out, format!("client `{}`", c.client_id), groups);
}

fn clients(now: &Current, want: &Desired, fin: &Final, prune: bool, out: &mut Registrations) -> Result<(), Problem> {
    let Some(declared) = &want.clients else {
        for c in &now.clients {
            names_stored(out, c);
        }
        return Ok(());
    };
    for d in declared {
        check_groups(d, fin)?;
        names(
            out,
            format!("client `{}`", d.built.client_id),
            d.built.allowed_groups.iter().cloned().chain(rule_groups(&d.claims)),
        );
        match now.clients.iter().find(|c| c.client_id == d.built.client_id) {
            None => out.changes.push(Step {
                lines: vec![format!("+ client {}", d.built.client_id)],
                action: Action::Client(Box::new(ClientStep {
                    id: d.built.client_id.clone(),
                    new: true,
                    spec: Some(d.spec.clone()),
                    preset: d.preset.clone(),
                    claims: Some(d.claims.clone()),
                    secret: d.secret.as_ref().map(|s| s.value.clone()),
                    method: d.built.auth_method.clone(),
                })),
            }),
            Some(existing) => out.changes.extend(client_change(existing, d)?),
        }
    }
    for c in &now.clients {
        if declared.iter().any(|d| d.built.client_id == c.client_id) {
            continue;
        }
        if prune {
            out.deletions.push(Step {
                lines: vec![format!("- client {}", c.client_id)],
                action: Action::DeleteClient(c.client_id.clone()),
            });
        } else {
            names_stored(out, c);
        }
    }
    Ok(())
}

/// What changes on a stored client the file declares: its settings field by field,
/// its claim mapping, its secret; `None` when nothing does.
fn client_change(existing: &Client, d: &ClientDecl) -> Result<Option<Step>, Problem> {
    let id = &d.built.client_id;
    if auth_family(&existing.auth_method) != auth_family(&d.built.auth_method) {
        let field = if d.place.has("token_endpoint_auth_method") {
            "token_endpoint_auth_method"
        } else {
            "public"
        };
        return Err(d.place.problem(
            field,
            format!(
                "cannot change from {} to {}; register a new client",
                existing.auth_method, d.built.auth_method
            ),
        ));
    }
    let mut lines = Vec::new();
    let (before, after) = (view(existing), view(&d.built));
    for (field, a) in &after {
        let b = before.get(field).unwrap_or(&Value::Null);
        if a != b {
            lines.push(changed("client", id, field, b, a));
        }
    }
    let spec = (!lines.is_empty()).then(|| d.spec.clone());
    let stored: Vec<RuleSpec> = existing.claim_rules.iter().map(RuleSpec::of).collect();
    let claims = (stored != d.claims).then(|| {
        lines.push(changed("client", id, "claims", &json!(stored), &json!(d.claims)));
        d.claims.clone()
    });
    let secret = d
        .secret
        .as_ref()
        .map(|s| s.value.clone())
        .filter(|s| existing.secret_hash != Some(s.hash()));
    if secret.is_some() {
        lines.push(format!("~ client {id}: secret changed"));
    }
    Ok((!lines.is_empty()).then(|| Step {
        lines,
        action: Action::Client(Box::new(ClientStep {
            id: id.clone(),
            new: false,
            spec,
            preset: None,
            claims,
            secret,
            method: d.built.auth_method.clone(),
        })),
    }))
}

fn app_view(a: &App) -> Value {
    json!({"url": a.url, "require_mfa": a.require_mfa, "header_prefix": a.header_prefix, "allowed_groups": a.allowed_groups})
}

/// The checks `admin::apps::create` makes beyond `build`: inside the forward-auth
/// cookie domain, and not Tessera's own host.
fn app_host_allowed(cx: &Ctx<'_>, host: &str) -> Result<(), String> {
    let hostname = host.rsplit_once(':').map_or(host, |(h, _)| h);
    if let Some(domain) = &cx.settings.forward_auth_cookie_domain {
        if hostname != domain && !hostname.ends_with(&format!(".{domain}")) {
            return Err(format!(
                "the app's host is outside the forward-auth cookie domain `{domain}`"
            ));
        }
    }
    let own = url::Url::parse(cx.issuer)
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase));
    if own.as_deref() == Some(hostname) {
        return Err("this is Tessera's own host, not an app's".into());
    }
    Ok(())
}

fn apps(
    cx: &Ctx<'_>,
    now: &Current,
    want: &Desired,
    fin: &Final,
    prune: bool,
    out: &mut Registrations,
) -> Result<(), Problem> {
    let declared = want.apps.as_deref().unwrap_or_default();
    let mut hosts: HashMap<String, String> = HashMap::new();
    for a in &now.apps {
        let kept = !(declared.iter().any(|d| d.built.id == a.id) || prune && want.apps.is_some());
        if kept {
            hosts.insert(a.host.clone(), a.id.clone());
            names(out, format!("app `{}`", a.id), a.allowed_groups.clone());
        }
    }
    for d in declared {
        let app = &d.built;
        for (i, g) in app.allowed_groups.iter().enumerate() {
            if !fin.groups.contains(g) {
                return Err(missing_group(&d.place, "allowed_groups", i, g));
            }
        }
        app_host_allowed(cx, &app.host).map_err(|m| d.place.problem("url", m))?;
        if let Some(other) = hosts.insert(app.host.clone(), app.id.clone()) {
            return Err(d.place.problem("url", format!("the app `{other}` has this host")));
        }
        names(out, format!("app `{}`", app.id), app.allowed_groups.clone());
        match now.apps.iter().find(|a| a.id == app.id) {
            None => out.changes.push(Step {
                lines: vec![format!("+ app {}", app.id)],
                action: Action::CreateApp(d.spec.clone()),
            }),
            Some(existing) => {
                let (before, after) = (app_view(existing), app_view(app));
                let lines: Vec<String> = ["url", "require_mfa", "header_prefix", "allowed_groups"]
                    .iter()
                    .filter(|f| before[**f] != after[**f])
                    .map(|f| changed("app", &app.id, f, &before[*f], &after[*f]))
                    .collect();
                if !lines.is_empty() {
                    let mut updated = app.clone();
                    updated.created_at = existing.created_at;
                    out.changes.push(Step {
                        lines,
                        action: Action::UpdateApp(updated),
                    });
                }
            }
        }
    }
    if prune && want.apps.is_some() {
        for a in now.apps.iter().filter(|a| !declared.iter().any(|d| d.built.id == a.id)) {
            out.deletions.push(Step {
                lines: vec![format!("- app {}", a.id)],
                action: Action::DeleteApp(a.id.clone()),
            });
        }
    }
    Ok(())
}

fn provider_view(p: &Provider) -> Value {
    json!({
        "kind": p.kind, "name": p.name, "issuer": p.issuer, "client_id": p.client_id, "scope": p.scope,
        "jit": p.jit, "link_by_email": p.link_by_email, "require_local_mfa": p.require_local_mfa,
        "group_claim": p.group_claim,
        "map_group": p.group_map.iter().map(|(u, l)| format!("{u}={l}")).collect::<Vec<_>>(),
    })
}

const PROVIDER_FIELDS: &[&str] = &[
    "kind",
    "name",
    "issuer",
    "client_id",
    "scope",
    "jit",
    "link_by_email",
    "require_local_mfa",
    "group_claim",
    "map_group",
];

fn providers(
    cx: &Ctx<'_>,
    now: &Current,
    want: &Desired,
    fin: &Final,
    prune: bool,
    out: &mut Registrations,
) -> Result<(), Problem> {
    let declared = want.providers.as_deref().unwrap_or_default();
    let pruning = prune && want.providers.is_some();
    for (p, _) in &now.providers {
        if !declared.iter().any(|d| d.built.id == p.id) && !pruning {
            names(
                out,
                format!("provider `{}`", p.id),
                p.group_map.iter().map(|(_, l)| l.clone()),
            );
        }
    }
    for d in declared {
        provider(cx, now, d, fin, out)?;
    }
    if pruning {
        for (p, _) in now
            .providers
            .iter()
            .filter(|(p, _)| !declared.iter().any(|d| d.built.id == p.id))
        {
            out.deletions.push(Step {
                lines: vec![format!("- provider {}", p.id)],
                action: Action::DeleteProvider(p.id.clone()),
            });
        }
    }
    Ok(())
}

fn provider(
    cx: &Ctx<'_>,
    now: &Current,
    d: &ProviderDecl,
    fin: &Final,
    out: &mut Registrations,
) -> Result<(), Problem> {
    let p = &d.built;
    for (i, (_, local)) in p.group_map.iter().enumerate() {
        if !fin.groups.contains(local) {
            return Err(missing_group(&d.place, "map_group", i, local));
        }
    }
    names(
        out,
        format!("provider `{}`", p.id),
        p.group_map.iter().map(|(_, l)| l.clone()),
    );
    let given = d.secret.as_ref().map(|s| s.value.clone());
    let Some((existing, linked)) = now.providers.iter().find(|(e, _)| e.id == p.id) else {
        if given.is_none() {
            return Err(d.place.problem("", "a new provider needs secret_env or secret_file"));
        }
        out.changes.push(Step {
            lines: vec![format!("+ provider {}", p.id)],
            action: Action::CreateProvider(Box::new(d.spec.clone())),
        });
        return Ok(());
    };
    let (before, after) = (provider_view(existing), provider_view(p));
    let fields: Vec<&str> = PROVIDER_FIELDS
        .iter()
        .copied()
        .filter(|f| before[*f] != after[*f])
        .collect();
    let stored = sealed::open_text(cx.settings.master_key.as_ref(), &existing.client_secret).ok();
    let secret_changed = given.as_ref().is_some_and(|g| stored.as_deref() != Some(g.expose()));
    if let Some(first) = fields.first() {
        if *linked > 0 {
            return Err(d.place.problem(
                first,
                format!(
                    "a provider is changed by registering it again, which would drop the links of its {linked} accounts; remove it first (tessera provider remove {})",
                    p.id
                ),
            ));
        }
        let mut spec = d.spec.clone();
        spec.client_secret = match (&given, &stored) {
            (Some(g), _) => g.expose().to_string(),
            (None, Some(s)) => s.clone(),
            (None, None) => {
                return Err(d.place.problem(
                    "",
                    "its secret cannot be read (no master key): give secret_env or secret_file",
                ))
            }
        };
        let lines = fields
            .iter()
            .map(|f| changed("provider", &p.id, f, &before[*f], &after[*f]))
            .chain(secret_changed.then(|| format!("~ provider {}: secret changed", p.id)))
            .collect();
        out.changes.push(Step {
            lines,
            action: Action::ReplaceProvider(Box::new(spec)),
        });
    } else if let (true, Some(secret)) = (secret_changed, given) {
        out.changes.push(Step {
            lines: vec![format!("~ provider {}: secret changed", p.id)],
            action: Action::ProviderSecret {
                id: p.id.clone(),
                secret,
            },
        });
    }
    Ok(())
}
