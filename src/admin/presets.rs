//! App presets: the registration each commonly self-hosted application needs (its
//! redirect URI pattern, grant types, token endpoint authentication, claim mapping)
//! and the configuration to paste on the application's side, rendered with this
//! provider's endpoints and the new client's secret (docs/APPS.md).

mod catalog;
mod snippets;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::clients::{build, seal_hmac, view as client_view, ClientSpec};
use super::{invalid, Actor, AdminError, Problems};
use crate::db::{self, claim_rules::ClaimRule, clients::Client};
use crate::domain::Secret;

pub use catalog::PRESETS;

/// How the snippet is written, so that people (and the tests) know how to read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// An INI file (`grafana.ini`).
    Ini,
    /// `NAME=value` lines: an env file or a compose `environment:` list.
    Env,
    Json,
    /// The YAML of a Kubernetes ConfigMap's data.
    Yaml,
    /// `Field: value` lines for an application configured in its web UI.
    Fields,
}

/// The name an application gives Tessera when it has several sign-in sources, and
/// which its callback path carries (`/user/oauth2/{key}/callback`).
#[derive(Debug, Clone, Copy)]
pub enum Key {
    /// The callback path has no such part.
    None,
    /// A name the snippet sets, so the two agree; `--app-key` may choose another.
    Default(&'static str),
    /// Made up by the application (Wiki.js: a UUID per strategy): it must be given.
    Required(&'static str),
}

/// One application.
pub struct Preset {
    /// What `--preset` takes.
    pub name: &'static str,
    pub app: &'static str,
    pub note: &'static str,
    /// The application's own documentation of its OpenID Connect settings.
    pub docs_url: &'static str,
    /// Relative to the app URL (`/login/generic_oauth`, `` for the URL itself), with
    /// `{key}` for the key; an absolute URI (a mobile app's) is taken as it is.
    pub redirect_paths: &'static [&'static str],
    pub post_logout_paths: &'static [&'static str],
    pub key: Key,
    pub public: bool,
    pub auth_method: &'static str,
    pub grant_types: &'static [&'static str],
    /// What the snippet asks for.
    pub scopes: &'static [&'static str],
    /// The application sends PKCE (S256) when set up as the snippet says.
    pub pkce: bool,
    /// Groups the claim rules or the snippet refer to; created when missing.
    pub groups: &'static [&'static str],
    pub claim_rules: fn() -> Vec<ClaimRule>,
    pub format: Format,
    /// Where the snippet goes (a file, or a page of the application's UI).
    pub paste_into: &'static str,
    pub snippet: fn(&SnippetInput<'_>) -> String,
}

impl Preset {
    /// What `app_key` means for this application, for forms and lists.
    pub fn key_hint(&self) -> String {
        match self.key {
            Key::None => String::new(),
            Key::Default(k) => format!("app key: the name in its callback path, default `{k}`"),
            Key::Required(what) => format!("app key required: {what}"),
        }
    }
}

/// What a snippet is made of: this provider's endpoints as its discovery document
/// lists them, and the registration.
pub struct SnippetInput<'a> {
    pub issuer: &'a str,
    pub discovery_url: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub userinfo_endpoint: String,
    pub end_session_endpoint: String,
    pub client_id: &'a str,
    /// `None` renders a placeholder (the documentation's examples).
    pub client_secret: Option<&'a str>,
    pub app_url: &'a str,
    /// The first registered redirect URI (the web one).
    pub redirect_uri: &'a str,
    pub post_logout_redirect_uri: Option<&'a str>,
    pub key: &'a str,
    pub scopes: String,
}

impl SnippetInput<'_> {
    pub fn secret(&self) -> &str {
        self.client_secret.unwrap_or("<client secret>")
    }
}

pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name.trim().to_ascii_lowercase())
}

/// What the list shows of a preset.
pub fn summary(p: &Preset) -> Value {
    json!({
        "name": p.name,
        "app": p.app,
        "note": p.note,
        "docs_url": p.docs_url,
        "redirect_paths": p.redirect_paths,
        "key": match p.key {
            Key::None => Value::Null,
            Key::Default(k) => json!({"default": k}),
            Key::Required(what) => json!({"required": what}),
        },
        "token_endpoint_auth_method": p.auth_method,
        "grant_types": p.grant_types,
        "scopes": p.scopes,
        "pkce": p.pkce,
        "groups": p.groups,
        "claim_rules": (p.claim_rules)(),
        "format": p.format,
        "paste_into": p.paste_into,
    })
}

/// A registration asked for (the admin API's body, the page's form, the CLI's flags).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PresetRequest {
    pub preset: String,
    pub client_id: String,
    pub app_url: String,
    /// The name the application gives Tessera (see `Key`).
    pub app_key: Option<String>,
    /// The display name [default: the application's].
    pub name: Option<String>,
}

/// The outcome, with the secret and the snippet that exist only in this answer.
pub struct Registered {
    pub preset: &'static Preset,
    pub client: Client,
    pub secret: Option<Secret>,
    pub claim_rules: Vec<ClaimRule>,
    pub created_groups: Vec<String>,
    pub snippet: String,
}

impl Registered {
    pub fn view(&self) -> Value {
        json!({
            "preset": self.preset.name,
            "client": client_view(&self.client),
            "client_secret": self.secret.as_ref().map(Secret::expose),
            "redirect_uri": self.client.redirect_uris.first(),
            "redirect_uris": self.client.redirect_uris,
            "post_logout_redirect_uris": self.client.post_logout_redirect_uris,
            "claim_rules": self.claim_rules,
            "created_groups": self.created_groups,
            "format": self.preset.format,
            "paste_into": self.preset.paste_into,
            "docs_url": self.preset.docs_url,
            "snippet": self.snippet,
        })
    }
}

/// The app URL as the application is reached: https (http only on a loopback host,
/// as for redirect URIs, RFC 8252 §8.3), no credentials, query or fragment; a path is
/// kept for apps served under one (`https://example.org/grafana`), without its
/// trailing slash since the callback paths are appended to it.
pub fn parse_app_url(raw: &str) -> Result<String, String> {
    let raw = raw.trim();
    let url = url::Url::parse(raw).map_err(|_| format!("`{raw}` is not an absolute URL"))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => return Err("the app URL needs a host".into()),
    };
    match url.scheme() {
        "https" => {}
        "http" if loopback => {}
        "http" => return Err("the app URL must use https (http only on a loopback host)".into()),
        _ => return Err("the app URL is an https URL".into()),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("the app URL must not carry credentials".into());
    }
    if url.query().is_some() || url.fragment().is_some() || raw.contains(['?', '#']) {
        return Err("the app URL must not have a query or fragment".into());
    }
    let origin = url.origin().ascii_serialization();
    Ok(format!("{origin}{}", url.path().trim_end_matches('/')))
}

/// The key as given or the preset's default; a key is one path segment.
fn key_of(preset: &Preset, given: Option<&str>) -> Result<String, String> {
    let given = given.map(str::trim).filter(|k| !k.is_empty());
    let key = match (preset.key, given) {
        (Key::None, None) => return Ok(String::new()),
        (Key::None, Some(_)) => return Err(format!("the {} preset takes no app key", preset.name)),
        (Key::Default(_) | Key::Required(_), Some(k)) => k.to_string(),
        (Key::Default(k), None) => k.to_string(),
        (Key::Required(what), None) => return Err(format!("the {} preset needs the app key: {what}", preset.name)),
    };
    let ok = key.len() <= 64 && key.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if ok && key != "." && key != ".." {
        Ok(key)
    } else {
        Err("an app key is 1–64 of A-Z, a-z, 0-9, `-`, `_`, `.`".into())
    }
}

fn expand(app_url: &str, key: &str, paths: &[&str]) -> Vec<String> {
    paths
        .iter()
        .map(|p| {
            let p = p.replace("{key}", key);
            if p.is_empty() || p.starts_with('/') {
                format!("{app_url}{p}")
            } else {
                p
            }
        })
        .collect()
}

/// The client specification a preset makes for `req`, with its claim rules and key.
pub fn plan(req: &PresetRequest) -> Result<(&'static Preset, ClientSpec, String, String), Problems> {
    let mut p = Problems::new();
    let Some(preset) = find(&req.preset) else {
        let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        let msg = format!("unknown preset `{}`; one of {}", req.preset.trim(), names.join(", "));
        return Err(Problems::from([("preset".to_string(), msg)]));
    };
    let app_url = parse_app_url(&req.app_url)
        .map_err(|e| p.insert("app_url".into(), e))
        .ok();
    let key = key_of(preset, req.app_key.as_deref())
        .map_err(|e| p.insert("app_key".into(), e))
        .ok();
    let (Some(app_url), Some(key)) = (app_url, key) else {
        return Err(p);
    };
    let spec = ClientSpec {
        client_id: req.client_id.trim().to_string(),
        name: req.name.clone().or_else(|| Some(preset.app.to_string())),
        public: preset.public,
        redirect_uris: expand(&app_url, &key, preset.redirect_paths),
        post_logout_redirect_uris: expand(&app_url, &key, preset.post_logout_paths),
        token_endpoint_auth_method: Some(preset.auth_method.to_string()),
        grant_types: preset.grant_types.iter().map(|g| g.to_string()).collect(),
        ..ClientSpec::default()
    };
    Ok((preset, spec, app_url, key))
}

/// The snippet for a registration, with the endpoints of this provider's discovery
/// document (the same one relying parties fetch).
pub fn render(
    cx: &crate::oidc::Ctx<'_>,
    preset: &Preset,
    client: &Client,
    secret: Option<&str>,
    app_url: &str,
    key: &str,
) -> String {
    let doc = crate::oidc::discovery::document(cx);
    let endpoint = |name: &str| doc[name].as_str().unwrap_or_default().to_string();
    let input = SnippetInput {
        issuer: cx.issuer,
        discovery_url: format!("{}/.well-known/openid-configuration", cx.issuer),
        authorization_endpoint: endpoint("authorization_endpoint"),
        token_endpoint: endpoint("token_endpoint"),
        userinfo_endpoint: endpoint("userinfo_endpoint"),
        end_session_endpoint: endpoint("end_session_endpoint"),
        client_id: &client.client_id,
        client_secret: secret,
        app_url,
        redirect_uri: client.redirect_uris.first().map(String::as_str).unwrap_or(app_url),
        post_logout_redirect_uri: client.post_logout_redirect_uris.first().map(String::as_str),
        key,
        scopes: preset.scopes.join(" "),
    };
    (preset.snippet)(&input)
}

/// Registers a client from a preset: the client, the groups its configuration refers
/// to (created when missing, named in the answer) and its claim rules, in one
/// transaction. `adjust` lets the command line add its other options to the client.
pub async fn register(
    cx: &crate::oidc::Ctx<'_>,
    actor: &Actor,
    req: &PresetRequest,
    adjust: impl FnOnce(&mut ClientSpec),
) -> Result<Registered, AdminError> {
    let (preset, mut spec, app_url, key) = plan(req).map_err(AdminError::Invalid)?;
    adjust(&mut spec);
    let (mut client, secret) = build(&spec, cx.now).map_err(AdminError::Invalid)?;
    client.secret_for_hmac = client
        .secret_for_hmac
        .as_deref()
        .map(|s| seal_hmac(cx, s))
        .transpose()?;
    client.claim_rules = (preset.claim_rules)();
    let groups: Vec<String> = preset.groups.iter().map(|g| g.to_string()).collect();
    let (now, actor, stored) = (cx.now, actor.clone(), client.clone());
    let created = cx
        .db
        .write(move |c| {
            let mut created = Vec::new();
            for g in &groups {
                if db::groups::id_of(c, g)?.is_none() {
                    db::groups::create(c, g)?;
                    actor.event("admin.group_created").target(g).write(c, now)?;
                    created.push(g.clone());
                }
            }
            // The claim rules go in with the client; their groups exist by now.
            match db::clients::insert(c, &stored) {
                Ok(()) => {}
                Err(db::DbError::Conflict) => return Ok(Err(invalid("client_id", "a client with this id exists"))),
                Err(e) => return Err(e),
            }
            actor
                .event("admin.client_created")
                .target(format!("client:{}", stored.client_id))
                .detail(
                    json!({"after": client_view(&stored), "preset": preset.name, "claim_rules": stored.claim_rules}),
                )
                .write(c, now)?;
            Ok(Ok(created))
        })
        .await??;
    let snippet = render(cx, preset, &client, secret.as_ref().map(Secret::expose), &app_url, &key);
    Ok(Registered {
        preset,
        claim_rules: client.claim_rules.clone(),
        client,
        secret,
        created_groups: created,
        snippet,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_urls_are_https_without_query_and_keep_their_path() {
        assert_eq!(
            parse_app_url("https://App.Example.org/").unwrap(),
            "https://app.example.org"
        );
        assert_eq!(
            parse_app_url("https://x.org:8443/grafana/").unwrap(),
            "https://x.org:8443/grafana"
        );
        assert_eq!(parse_app_url("http://127.0.0.1:3000").unwrap(), "http://127.0.0.1:3000");
        assert_eq!(parse_app_url("http://localhost:3000").unwrap(), "http://localhost:3000");
        for bad in [
            "http://app.example.org",
            "app.example.org",
            "https://u:p@app.example.org",
            "https://app.example.org/?x=1",
            "https://app.example.org/#f",
            "ftp://app.example.org",
        ] {
            assert!(parse_app_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_default_or_are_required_and_are_one_segment() {
        let grafana = find("grafana").unwrap();
        let gitea = find("gitea").unwrap();
        let wiki = find("wikijs").unwrap();
        assert_eq!(key_of(grafana, None).unwrap(), "");
        assert!(key_of(grafana, Some("x")).is_err());
        assert_eq!(key_of(gitea, None).unwrap(), "tessera");
        assert_eq!(key_of(gitea, Some("sso")).unwrap(), "sso");
        assert!(key_of(wiki, None).is_err());
        for bad in ["a/b", "..", "a b", "%2f"] {
            assert!(key_of(gitea, Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_preset_is_complete_and_consistent() {
        assert!(PRESETS.len() >= 12);
        let mut names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PRESETS.len(), "preset names are unique");
        for p in PRESETS {
            assert!(p.docs_url.starts_with("https://"), "{}", p.name);
            assert!(!p.redirect_paths.is_empty(), "{}", p.name);
            assert!(super::super::clients::AUTH_METHODS.contains(&p.auth_method));
            assert!(p.scopes.contains(&"openid"), "{}", p.name);
            for rule in (p.claim_rules)() {
                for (group, _) in &rule.values {
                    assert!(p.groups.contains(&group.as_str()), "{}: {group} is created", p.name);
                }
            }
        }
    }

    #[test]
    fn plans_expand_paths_under_the_app_url() {
        let req = PresetRequest {
            preset: "Gitea".into(),
            client_id: "git".into(),
            app_url: "https://git.example.org/".into(),
            ..PresetRequest::default()
        };
        let (_, spec, _, _) = plan(&req).unwrap();
        assert_eq!(
            spec.redirect_uris,
            ["https://git.example.org/user/oauth2/tessera/callback"]
        );
        let immich = PresetRequest {
            preset: "immich".into(),
            app_url: "https://photos.example.org".into(),
            ..req
        };
        let (_, spec, _, _) = plan(&immich).unwrap();
        assert!(spec.redirect_uris.contains(&"app.immich:///oauth-callback".to_string()));
        let unknown = PresetRequest {
            preset: "nope".into(),
            ..PresetRequest::default()
        };
        match plan(&unknown) {
            Err(p) => assert!(p["preset"].contains("unknown preset")),
            Ok(_) => panic!("an unknown preset is refused"),
        }
    }
}
