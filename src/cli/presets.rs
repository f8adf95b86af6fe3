//! `tessera client presets` and `tessera client add ID --preset NAME --app-url URL`:
//! registering a commonly self-hosted application and printing the configuration to
//! paste on its side (docs/APPS.md).

use super::client_add::{print_secret, spec, ClientAdd};
use super::{actor, admin_err, with_state};
use crate::admin::{
    self,
    presets::{PresetRequest, Registered, PRESETS},
    AdminError,
};
use crate::config::Settings;

pub fn list(json: bool) {
    if json {
        let items: Vec<_> = PRESETS.iter().map(admin::presets::summary).collect();
        println!("{}", serde_json::json!({ "items": items }));
        return;
    }
    println!("{:<10} {:<24} NOTE", "PRESET", "APP");
    for p in PRESETS {
        println!("{:<10} {:<24} {} ({})", p.name, p.app, p.note, p.docs_url);
    }
}

/// Options the preset decides; giving them too would be silently overridden.
fn refuse_preset_owned(add: &ClientAdd) -> Result<(), String> {
    let owned = [
        ("--public", add.public),
        ("--auth-method", add.auth_method.is_some()),
        ("--grant-type", !add.grant_types.is_empty()),
        ("--jwks", add.jwks.is_some()),
        ("--admin", add.admin),
        ("--scope", !add.client_scopes.is_empty()),
    ];
    match owned.iter().find(|(_, given)| *given) {
        Some((flag, _)) => Err(format!("{flag} cannot be combined with --preset, which sets it")),
        None => Ok(()),
    }
}

/// The settings with Tessera's issuer as given (`tessera provider add` reads it the
/// same way), so that the printed endpoints are the ones people reach.
fn with_issuer(settings: &Settings, add: &ClientAdd) -> Result<Settings, String> {
    let mut settings = settings.clone();
    if let Some(url) = add.tessera_issuer.as_deref().filter(|u| !u.is_empty()) {
        settings.issuer = Some(crate::config::parse_issuer(url).map_err(|e| format!("--tessera-issuer: {e}"))?);
    }
    Ok(settings)
}

fn print(r: &Registered, json: bool) {
    if json {
        println!("{}", r.view());
        return;
    }
    print_secret(&r.client.client_id, r.secret.as_ref(), false);
    for uri in &r.client.redirect_uris {
        println!("redirect_uri: {uri}");
    }
    for uri in &r.client.post_logout_redirect_uris {
        println!("post_logout_redirect_uri: {uri}");
    }
    if !r.created_groups.is_empty() {
        println!("created groups: {}", r.created_groups.join(", "));
    }
    for rule in &r.claim_rules {
        let values: Vec<String> = rule.values.iter().map(|(g, v)| format!("{g}={v}")).collect();
        let default = rule
            .default
            .as_deref()
            .map(|d| format!(", default {d}"))
            .unwrap_or_default();
        println!(
            "claim: {} from {} {}{default}",
            rule.claim,
            rule.source,
            values.join(" ")
        );
    }
    println!();
    println!(
        "{} ({}): paste into {}",
        r.preset.app, r.preset.docs_url, r.preset.paste_into
    );
    println!();
    print!("{}", r.snippet);
}

pub fn add(settings: &Settings, add: &ClientAdd) -> Result<(), String> {
    refuse_preset_owned(add)?;
    let settings = with_issuer(settings, add)?;
    let extra = spec(add)?;
    for g in &extra.allowed_groups {
        crate::admin::groups::check_name(g).map_err(|_| format!("`{g}` is not a group name"))?;
    }
    let req = PresetRequest {
        preset: add.preset.clone().unwrap_or_default(),
        client_id: add.client_id.clone(),
        app_url: add.app_url.clone().unwrap_or_default(),
        app_key: add.app_key.clone(),
        name: add.name.clone(),
    };
    // The preset decides what an application needs before anything is opened.
    admin::presets::plan(&req).map_err(|p| admin_err(AdminError::Invalid(p), "preset"))?;
    with_state(&settings, async |state| {
        super::users::ensure_groups(state, &extra.allowed_groups).await?;
        let registered = admin::presets::register(&state.ctx(), &actor(), &req, |s| {
            s.redirect_uris.extend(extra.redirect_uris.iter().cloned());
            s.post_logout_redirect_uris
                .extend(extra.post_logout_redirect_uris.iter().cloned());
            s.id_token_signed_response_alg = extra.id_token_signed_response_alg.clone();
            s.consent_required = extra.consent_required;
            s.refresh_tokens = extra.refresh_tokens.clone();
            s.backchannel_logout_uri = extra.backchannel_logout_uri.clone();
            s.backchannel_logout_session_required = extra.backchannel_logout_session_required;
            s.allowed_groups = extra.allowed_groups.clone();
            s.access_token_ttl = extra.access_token_ttl;
            s.refresh_token_ttl = extra.refresh_token_ttl;
            s.web_origins = extra.web_origins.clone();
            s.grant_lifetime = extra.grant_lifetime;
        })
        .await
        .map_err(|e| match e {
            AdminError::Invalid(p) if p.get("client_id").is_some_and(|m| m.contains("exists")) => {
                format!("a client with id {} already exists", req.client_id)
            }
            other => admin_err(other, "client"),
        })?;
        print(&registered, add.json);
        Ok(())
    })
}
