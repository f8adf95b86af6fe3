//! `tessera provider …`: upstream identity providers people sign in with (OpenID
//! Connect issuers and GitHub). The client secret comes from standard input, so that
//! it stays out of the shell history and the process list, and is never printed.

use std::io::BufRead;

use clap::{Args, Subcommand};
use serde_json::Value;

use super::{actor, admin_err, with_state};
use crate::admin::{self, providers::ProviderSpec};
use crate::config::Settings;

#[derive(Subcommand)]
pub enum ProviderCommand {
    /// Register an upstream provider; prints the redirect URI to register at it
    Add(Box<ProviderAdd>),
    /// List providers with their linked accounts
    List {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        tessera: TesseraIssuer,
    },
    /// Show one provider (never its secret)
    Show {
        id: String,
        #[command(flatten)]
        tessera: TesseraIssuer,
    },
    /// Replace a provider's client secret, read from standard input; links stay
    SetSecret {
        id: String,
        /// Read the new secret from standard input (its first line)
        #[arg(long, required = true)]
        client_secret_stdin: bool,
    },
    /// Delete a provider and the links of accounts to it (the accounts stay)
    Delete { id: String },
}

/// Tessera's own issuer, which the printed callback URIs start with. `--issuer` names
/// the upstream's in these commands, hence the longer name.
#[derive(Args)]
pub struct TesseraIssuer {
    /// Tessera's issuer URL, as people reach it [default: the configured issuer, else http://127.0.0.1:9000]
    #[arg(long = "tessera-issuer", env = "TESSERA_ISSUER", value_name = "URL")]
    url: Option<String>,
}

#[derive(Args)]
pub struct ProviderAdd {
    /// The provider's id, used in its URLs: 1-32 of a-z, 0-9, `-`, `_`
    id: String,
    /// `oidc` (OpenID Connect, the default) or `github`
    #[arg(long, default_value = "oidc", value_parser = ["oidc", "github"])]
    kind: String,
    /// The upstream's issuer URL (https; http only on loopback). For github: the base
    /// URL of a GitHub Enterprise Server [default: github.com]
    #[arg(long, value_name = "URL")]
    issuer: Option<String>,
    /// The client id the upstream issued to Tessera
    #[arg(long, value_name = "CLIENT_ID")]
    client_id: String,
    /// Read the client secret from standard input (its first line)
    #[arg(long, required = true)]
    client_secret_stdin: bool,
    /// The sign-in button's label [default: the id]
    #[arg(long)]
    name: Option<String>,
    /// Scopes to ask for [default: "openid email profile"; github: "read:user user:email"]
    #[arg(long)]
    scope: Option<String>,
    /// Create a local account on the first sign-in of an unknown upstream account
    #[arg(long)]
    jit: bool,
    /// Link an upstream account to the local one with the same verified email
    #[arg(long)]
    link_by_email: bool,
    /// The claim holding the upstream's groups (a dotted path walks into objects,
    /// e.g. realm_access.roles)
    #[arg(long, value_name = "CLAIM")]
    group_claim: Option<String>,
    /// Map an upstream group value to a local group; repeat for several
    #[arg(long = "map-group", value_name = "UPSTREAM=LOCAL")]
    map_group: Vec<String>,
    /// Sign-ins through this provider also need a local second factor; accounts without one are refused (and none is made just in time)
    #[arg(long)]
    require_local_mfa: bool,
    #[command(flatten)]
    tessera: TesseraIssuer,
}

/// The secret from standard input: its first line, trimmed.
fn read_secret() -> Result<String, String> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| format!("cannot read the client secret from standard input: {e}"))?;
    let secret = line.trim();
    if secret.is_empty() {
        return Err("--client-secret-stdin: standard input holds no client secret (one line expected)".into());
    }
    Ok(secret.to_string())
}

/// The settings with Tessera's issuer as the command was given it.
fn with_issuer(settings: &Settings, tessera: &TesseraIssuer) -> Result<Settings, String> {
    let mut settings = settings.clone();
    if let Some(url) = tessera.url.as_deref().filter(|u| !u.is_empty()) {
        settings.issuer = Some(crate::config::parse_issuer(url).map_err(|e| e.to_string())?);
    }
    Ok(settings)
}

/// A JSON value as a person reads it: text bare, lists comma-separated, null as `-`.
fn plain(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => "-".into(),
        Value::Array(items) => items.iter().map(plain).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

fn not_found(id: &str) -> impl Fn(admin::AdminError) -> String + '_ {
    move |e| match e {
        admin::AdminError::NotFound(_) => format!("no provider with id {id}"),
        other => admin_err(other, "provider"),
    }
}

fn add(settings: &Settings, add: &ProviderAdd) -> Result<(), String> {
    let settings = with_issuer(settings, &add.tessera)?;
    let spec = ProviderSpec {
        id: add.id.clone(),
        kind: add.kind.clone(),
        name: add.name.clone(),
        issuer: add.issuer.clone(),
        client_id: add.client_id.clone(),
        client_secret: read_secret()?,
        scope: add.scope.clone(),
        jit: add.jit,
        link_by_email: add.link_by_email,
        group_claim: add.group_claim.clone(),
        map_group: add.map_group.clone(),
        require_local_mfa: add.require_local_mfa,
    };
    with_state(&settings, async |state| {
        let p = admin::providers::create(&state.ctx(), &state.upstreams, &actor(), &spec)
            .await
            .map_err(|e| admin_err(e, "provider"))?;
        let v = admin::providers::view(&state.ctx(), &p);
        println!("provider {} registered ({}, \"{}\")", p.id, p.kind, p.name);
        println!("  issuer:        {}", p.issuer.as_deref().unwrap_or("github.com"));
        println!("  client id:     {}", p.client_id);
        println!("  scope:         {}", p.scope);
        if !p.group_map.is_empty() {
            println!(
                "  groups:        {} from claim {}",
                plain(&v["map_group"]),
                plain(&v["group_claim"])
            );
        }
        println!();
        println!("Register this redirect URI at the upstream:");
        println!("  {}", plain(&v["redirect_uri"]));
        if p.kind == "oidc" {
            println!("and, if it sends OpenID Connect back-channel logout, this logout URI:");
            println!("  {}", plain(&v["backchannel_logout_uri"]));
        }
        Ok(())
    })
}

pub fn provider(settings: &Settings, cmd: ProviderCommand) -> Result<(), String> {
    match cmd {
        ProviderCommand::Add(a) => add(settings, &a),
        ProviderCommand::List { json, tessera } => with_state(&with_issuer(settings, &tessera)?, async |state| {
            let all = admin::providers::list_linked(&state.ctx())
                .await
                .map_err(|e| admin_err(e, "provider"))?;
            if json {
                let items: Vec<Value> = all
                    .iter()
                    .map(|(p, n)| {
                        let mut v = admin::providers::view(&state.ctx(), p);
                        v["linked_accounts"] = Value::from(*n);
                        v
                    })
                    .collect();
                println!("{}", Value::from(items));
                return Ok(());
            }
            println!("{:<20} {:<7} {:<24} {:<40} LINKED", "ID", "KIND", "NAME", "ISSUER");
            for (p, n) in all {
                let issuer = p.issuer.as_deref().unwrap_or("github.com");
                println!("{:<20} {:<7} {:<24} {:<40} {n}", p.id, p.kind, p.name, issuer);
            }
            Ok(())
        }),
        ProviderCommand::Show { id, tessera } => with_state(&with_issuer(settings, &tessera)?, async |state| {
            let p = admin::providers::get(&state.ctx(), &id).await.map_err(not_found(&id))?;
            let detail = admin::providers::detail(&state.ctx(), &p)
                .await
                .map_err(not_found(&id))?;
            if let Value::Object(fields) = detail {
                for (k, v) in fields {
                    println!("{k:<24} {}", plain(&v));
                }
            }
            Ok(())
        }),
        ProviderCommand::SetSecret { id, .. } => {
            let secret = read_secret()?;
            with_state(settings, async |state| {
                admin::providers::replace_secret(&state.ctx(), &actor(), &id, &secret)
                    .await
                    .map_err(not_found(&id))?;
                println!("provider {id}: client secret replaced");
                Ok(())
            })
        }
        ProviderCommand::Delete { id } => with_state(settings, async |state| {
            admin::providers::delete(&state.ctx(), &state.upstreams, &actor(), &id)
                .await
                .map_err(not_found(&id))?;
            println!("provider {id} deleted; the accounts linked to it stay, unlinked");
            Ok(())
        }),
    }
}
