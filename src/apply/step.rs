//! What a plan is made of: the database's side it starts from, the steps (each with
//! the diff lines it prints), and what both halves of the comparison share.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::node::{Place, Problem};
use crate::admin::claims::RuleSpec;
use crate::admin::clients::ClientSpec;
use crate::admin::presets::PresetRequest;
use crate::admin::{self, AdminError};
use crate::context::Ctx;
use crate::db::{apps::App, clients::Client, providers::Provider, users::User};
use crate::domain::Secret;

/// The database's side.
pub struct Current {
    pub users: Vec<User>,
    /// Each group's name and its members' usernames.
    pub groups: Vec<(String, Vec<String>)>,
    pub clients: Vec<Client>,
    pub apps: Vec<App>,
    /// With the number of accounts linked to each.
    pub providers: Vec<(Provider, i64)>,
}

impl Current {
    /// Read through the admin use cases' own lists.
    pub async fn read(cx: &Ctx<'_>) -> Result<Self, AdminError> {
        let mut groups = Vec::new();
        for g in admin::groups::list(cx).await? {
            let view = admin::groups::get(cx, g.id).await?;
            groups.push((g.name, view.member_list.into_iter().map(|m| m.username).collect()));
        }
        Ok(Current {
            users: admin::users::all(cx).await?,
            groups,
            clients: admin::clients::all(cx).await?,
            apps: admin::apps::list(cx).await?,
            providers: admin::providers::list_linked(cx).await?,
        })
    }
}

/// One change, in the order it is made.
pub enum Action {
    CreateGroup(String),
    CreateUser {
        input: admin::users::UserInput,
        disabled: bool,
    },
    UpdateUser {
        username: String,
        input: admin::users::UserInput,
        disabled: Option<bool>,
    },
    Members {
        group: String,
        add: Vec<String>,
        remove: Vec<String>,
    },
    Client(Box<ClientStep>),
    CreateApp(admin::apps::AppSpec),
    UpdateApp(App),
    CreateProvider(Box<admin::providers::ProviderSpec>),
    /// Removed and registered again (a provider without linked accounts).
    ReplaceProvider(Box<admin::providers::ProviderSpec>),
    ProviderSecret {
        id: String,
        secret: crate::domain::Secret,
    },
    DeleteClient(String),
    DeleteApp(String),
    DeleteProvider(String),
    DeleteUser(String),
    DeleteGroup(String),
}

pub struct Step {
    pub lines: Vec<String>,
    pub action: Action,
}

/// What to do to one client.
pub struct ClientStep {
    pub id: String,
    pub new: bool,
    /// The specification to register or to apply; `None`: unchanged.
    pub spec: Option<ClientSpec>,
    pub preset: Option<PresetRequest>,
    /// The claim mapping to set; `None`: unchanged.
    pub claims: Option<Vec<RuleSpec>>,
    /// The secret to set exactly.
    pub secret: Option<Secret>,
    pub method: String,
}

/// A value as the diff prints it: compact JSON (strings quoted, `null` for none).
pub fn shown(v: &Value) -> String {
    v.to_string()
}

pub fn changed(kind: &str, id: &str, field: &str, before: &Value, after: &Value) -> String {
    format!("~ {kind} {id}: {field} {} -> {}", shown(before), shown(after))
}

/// What the database will hold of each kind once the plan is made, for the checks
/// that cross kinds (a group named by a client, a member that is a user).
pub struct Final {
    pub groups: BTreeSet<String>,
    /// Lower-cased username → username.
    pub users: HashMap<String, String>,
}

/// A group named by element `i` of `field` that neither exists nor is declared.
pub fn missing_group(place: &Place, field: &str, i: usize, g: &str) -> Problem {
    place.element(field, i, format!("there is no group `{g}` (declare it in [[groups]])"))
}
