//! `tessera app …`: applications protected through forward-auth at a reverse proxy
//! (docs/FORWARD_AUTH.md).

use clap::{Args, Subcommand};
use serde_json::Value;

use super::{actor, admin_err, with_state};
use crate::admin::{self, apps::AppSpec};
use crate::config::Settings;

#[derive(Subcommand)]
pub enum AppCommand {
    /// Protect an application: the proxy in front of it asks Tessera who may pass
    Add(AppAdd),
    /// List protected applications
    List {
        #[arg(long)]
        json: bool,
    },
    /// Show one application
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Stop protecting an application (its proxy then refuses everyone)
    Delete { id: String },
}

#[derive(Args)]
pub struct AppAdd {
    /// The app's id: 1-32 of a-z, 0-9, `-`, `_`
    id: String,
    /// The app's origin as browsers reach it, e.g. https://app.example.org
    #[arg(long, value_name = "URL")]
    url: String,
    /// Only members of this group may pass; repeat for several [default: every signed-in user]
    #[arg(long = "allowed-group", value_name = "GROUP")]
    allowed_groups: Vec<String>,
    /// Only sessions signed in with a second factor may pass
    #[arg(long)]
    require_mfa: bool,
    /// Prefix of the identity headers sent to the app (User, Email, Name, Groups)
    #[arg(long, default_value = admin::apps::DEFAULT_PREFIX, value_name = "PREFIX")]
    header_prefix: String,
}

fn not_found(id: &str) -> impl Fn(admin::AdminError) -> String + '_ {
    move |e| match e {
        admin::AdminError::NotFound(_) => format!("no app with id {id}"),
        other => admin_err(other, "app"),
    }
}

fn print(v: &Value) {
    let plain = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => "(every signed-in user)".into(),
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    };
    if let Value::Object(fields) = v {
        for (k, v) in fields {
            println!("{k:<16} {}", plain(v));
        }
    }
}

pub fn app(settings: &Settings, cmd: AppCommand) -> Result<(), String> {
    match cmd {
        AppCommand::Add(a) => with_state(settings, async |state| {
            let spec = AppSpec {
                id: a.id.clone(),
                url: a.url.clone(),
                allowed_groups: a.allowed_groups.clone(),
                require_mfa: a.require_mfa,
                header_prefix: Some(a.header_prefix.clone()),
            };
            let app = admin::apps::create(&state.ctx(), &actor(), &spec)
                .await
                .map_err(|e| admin_err(e, "app"))?;
            println!("app {} protected: {}", app.id, app.url);
            print(&admin::apps::view(&app));
            Ok(())
        }),
        AppCommand::List { json } => with_state(settings, async |state| {
            let all = admin::apps::list(&state.ctx()).await.map_err(|e| admin_err(e, "app"))?;
            if json {
                println!("{}", Value::from(all.iter().map(admin::apps::view).collect::<Vec<_>>()));
                return Ok(());
            }
            println!("{:<20} {:<40} {:<5} GROUPS", "ID", "URL", "MFA");
            for a in all {
                let groups = if a.allowed_groups.is_empty() {
                    "-".to_string()
                } else {
                    a.allowed_groups.join(",")
                };
                let mfa = if a.require_mfa { "yes" } else { "no" };
                println!("{:<20} {:<40} {mfa:<5} {groups}", a.id, a.url);
            }
            Ok(())
        }),
        AppCommand::Show { id, json } => with_state(settings, async |state| {
            let app = admin::apps::get(&state.ctx(), &id).await.map_err(not_found(&id))?;
            let v = admin::apps::view(&app);
            if json {
                println!("{v}");
            } else {
                print(&v);
            }
            Ok(())
        }),
        AppCommand::Delete { id } => with_state(settings, async |state| {
            admin::apps::delete(&state.ctx(), &actor(), &id)
                .await
                .map_err(not_found(&id))?;
            println!("app {id} deleted; its proxy now refuses every request");
            Ok(())
        }),
    }
}
