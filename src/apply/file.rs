//! What an apply file declares, decoded table by table and checked with the admin use
//! cases' own validators (`clients::build`, `presets::plan`, `claims::build`,
//! `apps::build`, `providers::build`, `groups::check_name`), so that a file is refused
//! before anything is written for every value the admin API would refuse.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::keys::*;
use super::node::{At, Fields, Kind, Node, Place, Problem};
use super::secret::{self, SecretRef};
use crate::admin::claims::{self, GroupValue, RuleSpec};
use crate::admin::clients::{self, ClientSpec, FieldKind};
use crate::admin::presets::{self, PresetRequest};
use crate::admin::{apps, groups, providers, Problems};
use crate::db::{apps::App, clients::Client, providers::Provider};
use crate::domain::{Email, Username};

/// Every kind the file has a table for (`None`: the file says nothing of that kind).
#[derive(Default)]
pub struct Desired {
    pub groups: Option<Vec<GroupDecl>>,
    pub users: Option<Vec<UserDecl>>,
    pub clients: Option<Vec<ClientDecl>>,
    pub apps: Option<Vec<AppDecl>>,
    pub providers: Option<Vec<ProviderDecl>>,
}

pub struct GroupDecl {
    pub name: String,
    /// `None`: the group's members are not managed by this entry.
    pub members: Option<Vec<At<String>>>,
    pub place: Place,
}

/// A person; the keys left out are left as they are on an existing account.
pub struct UserDecl {
    pub username: String,
    pub email: Option<String>,
    pub name: Option<String>,
    pub admin: Option<bool>,
    pub email_verified: Option<bool>,
    pub disabled: Option<bool>,
    pub groups: Option<Vec<At<String>>>,
    pub claims: Option<Map<String, Value>>,
    pub place: Place,
}

pub struct ClientDecl {
    pub spec: ClientSpec,
    /// The registration the specification makes, as the admin API would store it.
    pub built: Client,
    pub preset: Option<PresetRequest>,
    /// Groups the preset refers to: created when missing, as the preset does.
    pub preset_groups: Vec<String>,
    pub claims: Vec<RuleSpec>,
    pub claim_places: Vec<Place>,
    pub secret: Option<SecretRef>,
    pub place: Place,
}

pub struct AppDecl {
    pub spec: apps::AppSpec,
    pub built: App,
    pub place: Place,
}

pub struct ProviderDecl {
    pub spec: providers::ProviderSpec,
    /// With the secret given, or an empty one when the file references none.
    pub built: Provider,
    pub secret: Option<SecretRef>,
    pub place: Place,
}

pub fn decode(root: &Node) -> Result<Desired, Problem> {
    let top = Fields::new(root, String::new(), TOP)?;
    let mut out = Desired::default();
    if let Some(list) = top.tables("groups")? {
        out.groups = Some(each(&list, "groups", "name", group)?);
    }
    if let Some(list) = top.tables("users")? {
        out.users = Some(each(&list, "users", "username", user)?);
    }
    if let Some(list) = top.tables("clients")? {
        out.clients = Some(each(&list, "clients", "client_id", client)?);
    }
    if let Some(list) = top.tables("apps")? {
        out.apps = Some(each(&list, "apps", "id", app)?);
    }
    if let Some(list) = top.tables("providers")? {
        out.providers = Some(each(&list, "providers", "id", provider)?);
    }
    Ok(out)
}

/// Decodes each entry of a table, named `kind[ID]` by its id key (`kind[N]` until it
/// has one), refusing an id given twice (case-insensitively: usernames and the
/// lookups behind them are).
fn each<T>(
    list: &[&Node],
    kind: &str,
    id_key: &str,
    decode: impl Fn(&Node, String) -> Result<(String, T), Problem>,
) -> Result<Vec<T>, Problem> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (i, node) in list.iter().enumerate() {
        let raw = match &node.kind {
            Kind::Table(entries) => match entries.iter().find(|e| e.key == id_key).map(|e| &e.value.kind) {
                Some(Kind::Str(id)) if !id.trim().is_empty() => Some(id.trim().to_string()),
                _ => None,
            },
            _ => None,
        };
        let path = match &raw {
            Some(id) => format!("{kind}[{id}]"),
            None => format!("{kind}[{i}]"),
        };
        // A second entry for an id is refused before its own content is looked at.
        if raw.as_ref().is_some_and(|id| !seen.insert(id.to_lowercase())) {
            return Err(Problem::new(
                node.line,
                path,
                format!("`{}` is declared twice", raw.unwrap_or_default()),
            ));
        }
        let (_, item) = decode(node, path)?;
        out.push(item);
    }
    Ok(out)
}

fn required(f: &Fields<'_>, key: &str) -> Result<At<String>, Problem> {
    match f.str(key)? {
        Some(v) if !v.v.trim().is_empty() => Ok(At {
            v: v.v.trim().to_string(),
            line: v.line,
        }),
        _ => Err(f.place.problem(key, format!("`{key}` is required"))),
    }
}

/// The first of a validator's problems in the order of the file.
fn first(place: &Place, problems: Problems, rename: impl Fn(&str) -> String) -> Problem {
    problems
        .into_iter()
        .map(|(field, message)| place.problem(&rename(&field), message))
        .min_by_key(|p| p.line)
        .unwrap_or_else(|| place.problem("", "refused"))
}

fn group(node: &Node, path: String) -> Result<(String, GroupDecl), Problem> {
    let f = Fields::new(node, path, GROUP)?;
    let name = required(&f, "name")?;
    groups::check_name(&name.v).map_err(|_| {
        f.place
            .problem("name", "1–64 letters, digits, spaces, dots, underscores or dashes")
    })?;
    let members = f.strs("members")?;
    if let Some(m) = &members {
        for (i, u) in m.iter().enumerate() {
            Username::parse(u.v.trim()).map_err(|e| f.place.element("members", i, e.0))?;
        }
    }
    let decl = GroupDecl {
        name: name.v.clone(),
        members,
        place: f.place,
    };
    Ok((name.v, decl))
}

fn user(node: &Node, path: String) -> Result<(String, UserDecl), Problem> {
    let f = Fields::new(node, path, USER)?;
    if f.has("password") {
        return Err(f.place.problem(
            "password",
            "passwords are never declared: a new user gets a link to choose one",
        ));
    }
    let username = required(&f, "username")?;
    // The name as it is stored (NFKC), so that a second run finds the account it made.
    let username = Username::parse(&username.v)
        .map_err(|e| f.place.problem("username", e.0))?
        .as_str()
        .to_string();
    let email = f.str("email")?.map(|e| e.v.trim().to_string());
    if let Some(e) = email.as_deref().filter(|e| !e.is_empty()) {
        Email::parse(e).map_err(|err| f.place.problem("email", err.0))?;
    }
    let name = f.str("name")?.map(|n| n.v.trim().to_string());
    if name.as_deref().is_some_and(|n| n.chars().count() > 200) {
        return Err(f.place.problem("name", "at most 200 characters"));
    }
    let groups = f.strs("groups")?;
    if let Some(g) = &groups {
        for (i, name) in g.iter().enumerate() {
            groups::check_name(&name.v).map_err(|_| f.place.element("groups", i, "not a group name"))?;
        }
    }
    let claims = match f.json("claims")? {
        Some(At {
            v: Value::Object(map), ..
        }) => {
            if let Some(k) = map.keys().find(|k| RESERVED_USER_CLAIMS.contains(&k.as_str())) {
                return Err(f
                    .place
                    .problem("claims", format!("`{k}` is set from the user record, not as a claim")));
            }
            if Value::Object(map.clone()).to_string().len() > 8192 {
                return Err(f.place.problem("claims", "at most 8 KiB of claims"));
            }
            Some(map)
        }
        _ => None,
    };
    let decl = UserDecl {
        username: username.clone(),
        email,
        name,
        admin: f.bool("admin")?.map(|b| b.v),
        email_verified: f.bool("email_verified")?.map(|b| b.v),
        disabled: f.bool("disabled")?.map(|b| b.v),
        groups,
        claims,
        place: f.place,
    };
    Ok((username, decl))
}

fn strings(v: Option<Vec<At<String>>>) -> Option<Vec<String>> {
    v.map(|l| l.into_iter().map(|s| s.v).collect())
}

fn client(node: &Node, path: String) -> Result<(String, ClientDecl), Problem> {
    let f = Fields::new(node, path, &client_keys())?;
    for key in ["secret", "client_secret"] {
        if f.has(key) {
            return Err(f.place.problem(
                key,
                "secrets are never written in the file: use secret_file or secret_env",
            ));
        }
    }
    let id = required(&f, "client_id")?;
    let (spec, preset) = client_spec(&f, &id.v)?;
    let consent_key = if f.has("consent") {
        "consent"
    } else {
        "consent_required"
    };
    let (built, _) = clients::build(&spec, 0).map_err(|p| {
        first(&f.place, p, |field| match field {
            "consent_required" => consent_key.to_string(),
            other => other.to_string(),
        })
    })?;
    let (claims, claim_places) = match f.tables("claims")? {
        Some(nodes) => {
            let mut specs = Vec::new();
            let mut places = Vec::new();
            for (i, n) in nodes.iter().enumerate() {
                let (spec, place) = rule(n, format!("{}.claims[{i}]", f.place.path))?;
                specs.push(spec);
                places.push(place);
            }
            (specs, places)
        }
        None => (
            preset
                .as_ref()
                .and_then(|p| presets::find(&p.preset))
                .map(|p| (p.claim_rules)().iter().map(RuleSpec::of).collect())
                .unwrap_or_default(),
            Vec::new(),
        ),
    };
    claims::build_all(&claims).map_err(|p| {
        let (field, message) = p.into_iter().next().unwrap_or_default();
        // `rules[N].claim`: the N-th rule of this client's table.
        let n = field
            .strip_prefix("rules[")
            .and_then(|r| r.split(']').next())
            .and_then(|n| n.parse::<usize>().ok());
        match n.and_then(|n| claim_places.get(n)) {
            Some(place) => place.problem("claim", message),
            None => f.place.problem("claims", message),
        }
    })?;
    let secret = secret::reference(&f)?;
    if let Some(s) = &secret {
        secret::fits_client(s, &built.auth_method).map_err(|m| f.place.problem(s.key, m))?;
    }
    let preset_groups = preset
        .as_ref()
        .and_then(|p| presets::find(&p.preset))
        .map(|p| p.groups.iter().map(|g| g.to_string()).collect())
        .unwrap_or_default();
    let decl = ClientDecl {
        spec,
        built,
        preset,
        preset_groups,
        claims,
        claim_places,
        secret,
        place: f.place,
    };
    Ok((id.v, decl))
}

/// The specification: the preset's, if one is named, with every key the entry gives
/// put over it.
fn client_spec(f: &Fields<'_>, id: &str) -> Result<(ClientSpec, Option<PresetRequest>), Problem> {
    let name = f.str("name")?.map(|n| n.v);
    let (spec, request) = match f.str("preset")? {
        Some(p) => {
            let req = PresetRequest {
                preset: p.v,
                client_id: id.to_string(),
                app_url: f.str("app_url")?.map(|u| u.v).unwrap_or_default(),
                app_key: f.str("app_key")?.map(|k| k.v),
                name,
            };
            let (_, spec, _, _) = presets::plan(&req).map_err(|p| first(&f.place, p, str::to_string))?;
            (spec, Some(req))
        }
        None => {
            for key in ["app_url", "app_key"] {
                if f.has(key) {
                    return Err(f.place.problem(key, "only with a `preset`"));
                }
            }
            let spec = ClientSpec {
                client_id: id.to_string(),
                ..ClientSpec::default()
            };
            (spec, None)
        }
    };
    if f.has("consent") && f.has("consent_required") {
        return Err(f
            .place
            .problem("consent", "give `consent` or `consent_required`, not both"));
    }
    Ok((given_over(f, spec)?, request))
}

/// `spec` with each setting the entry gives put over it, read as its kind
/// (`clients::FIELDS`); `consent` is another name for `consent_required`.
fn given_over(f: &Fields<'_>, spec: ClientSpec) -> Result<ClientSpec, Problem> {
    let refused = |e: serde_json::Error| f.place.problem("", e.to_string());
    let Value::Object(mut out) = serde_json::to_value(spec).map_err(refused)? else {
        return Err(f.place.problem("", "refused"));
    };
    for (field, kind) in clients::FIELDS {
        let key = if *field == "consent_required" && f.has("consent") {
            "consent"
        } else {
            field
        };
        let value = match kind {
            FieldKind::Flag => f.bool(key)?.map(|b| Value::from(b.v)),
            FieldKind::Text => f.str(key)?.map(|s| Value::from(s.v)),
            FieldKind::List => f.strs(key)?.map(|l| l.into_iter().map(|s| Value::from(s.v)).collect()),
            FieldKind::Seconds => f.int(key)?.map(|n| Value::from(n.v)),
            FieldKind::Object => f.json(key)?.map(|j| j.v),
        };
        if let Some(v) = value {
            out.insert(field.to_string(), v);
        }
    }
    serde_json::from_value(Value::Object(out)).map_err(refused)
}

fn rule(node: &Node, path: String) -> Result<(RuleSpec, Place), Problem> {
    let f = Fields::new(node, path, RULE)?;
    let mut values = Vec::new();
    for (i, n) in f.tables("values")?.unwrap_or_default().iter().enumerate() {
        let v = Fields::new(n, format!("{}.values[{i}]", f.place.path), VALUE)?;
        values.push(GroupValue {
            group: required(&v, "group")?.v,
            value: v.str("value")?.map(|s| s.v).unwrap_or_default(),
        });
    }
    let spec = RuleSpec {
        claim: f.str("claim")?.map(|s| s.v).unwrap_or_default(),
        source: f.str("source")?.map(|s| s.v).unwrap_or_default(),
        scope: f.str("scope")?.map(|s| s.v),
        targets: strings(f.strs("in")?).unwrap_or_default(),
        values,
        default: f.str("default")?.map(|s| s.v),
    };
    claims::build(&spec).map_err(|p| first(&f.place, p, str::to_string))?;
    Ok((spec, f.place))
}

fn app(node: &Node, path: String) -> Result<(String, AppDecl), Problem> {
    let f = Fields::new(node, path, APP)?;
    let spec = apps::AppSpec {
        id: required(&f, "id")?.v,
        url: f.str("url")?.map(|u| u.v).unwrap_or_default(),
        allowed_groups: strings(f.strs("allowed_groups")?).unwrap_or_default(),
        require_mfa: f.bool("require_mfa")?.is_some_and(|b| b.v),
        header_prefix: f.str("header_prefix")?.map(|s| s.v),
    };
    let built = apps::build(&spec, 0).map_err(|p| first(&f.place, p, str::to_string))?;
    Ok((
        spec.id.clone(),
        AppDecl {
            spec,
            built,
            place: f.place,
        },
    ))
}

fn provider(node: &Node, path: String) -> Result<(String, ProviderDecl), Problem> {
    let f = Fields::new(node, path, PROVIDER)?;
    for key in ["secret", "client_secret"] {
        if f.has(key) {
            return Err(f.place.problem(
                key,
                "secrets are never written in the file: use secret_file or secret_env",
            ));
        }
    }
    let secret = secret::reference(&f)?;
    let spec = providers::ProviderSpec {
        id: required(&f, "id")?.v,
        kind: f.str("kind")?.map(|s| s.v).unwrap_or_default(),
        name: f.str("name")?.map(|s| s.v),
        issuer: f.str("issuer")?.map(|s| s.v),
        client_id: f.str("client_id")?.map(|s| s.v).unwrap_or_default(),
        // Checked with the secret when there is one, else with a stand-in: an existing
        // provider keeps the secret it has.
        client_secret: secret
            .as_ref()
            .map_or_else(|| "kept".to_string(), |s| s.value.expose().to_string()),
        scope: f.str("scope")?.map(|s| s.v),
        jit: f.bool("jit")?.is_some_and(|b| b.v),
        link_by_email: f.bool("link_by_email")?.is_some_and(|b| b.v),
        group_claim: f.str("group_claim")?.map(|s| s.v),
        map_group: strings(f.strs("map_group")?).unwrap_or_default(),
        require_local_mfa: f.bool("require_local_mfa")?.is_some_and(|b| b.v),
    };
    let mut built = providers::build(&spec, 0).map_err(|p| {
        first(&f.place, p, |field| match field {
            "client_secret" => secret.as_ref().map_or("secret_env", |s| s.key).to_string(),
            other => other.to_string(),
        })
    })?;
    if secret.is_none() {
        built.client_secret.clear();
    }
    Ok((
        spec.id.clone(),
        ProviderDecl {
            spec,
            built,
            secret,
            place: f.place,
        },
    ))
}
