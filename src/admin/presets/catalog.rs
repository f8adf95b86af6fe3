//! The presets: for each application, what its own documentation (`docs_url`, and its
//! source where the documentation is silent) says it sends and reads. docs/APPS.md
//! explains each choice.

use super::snippets as s;
use super::{Format, Key, Preset};
use crate::db::claim_rules::ClaimRule;

const CODE: &[&str] = &["authorization_code"];
const CODE_REFRESH: &[&str] = &["authorization_code", "refresh_token"];

fn none() -> Vec<ClaimRule> {
    Vec::new()
}

/// A claim released whatever the scope, in the ID token and userinfo (the two places
/// relying parties read claims from; OpenID Connect Core §5.4 ties them to scopes,
/// which these applications do not all ask for).
fn rule(claim: &str, source: &str) -> ClaimRule {
    ClaimRule {
        claim: claim.into(),
        source: source.into(),
        scope: None,
        id_token: true,
        access_token: false,
        userinfo: true,
        values: Vec::new(),
        default: None,
    }
}

fn group_values(claim: &str, values: &[(&str, &str)], default: &str) -> ClaimRule {
    ClaimRule {
        values: values.iter().map(|(g, v)| (g.to_string(), v.to_string())).collect(),
        default: Some(default.into()),
        ..rule(claim, "group_values")
    }
}

/// Grafana's `role_attribute_path` reads a JMESPath; a plain claim name is one.
fn grafana_rules() -> Vec<ClaimRule> {
    vec![group_values(
        "grafana_role",
        &[("grafana-admins", "Admin"), ("grafana-editors", "Editor")],
        "Viewer",
    )]
}

/// Immich's role claim takes `admin` or `user`.
fn immich_rules() -> Vec<ClaimRule> {
    vec![group_values("immich_role", &[("immich-admins", "admin")], "user")]
}

/// MinIO maps the values of its claim (`policy` by default) to policies by name.
fn minio_rules() -> Vec<ClaimRule> {
    vec![rule("policy", "groups")]
}

/// Wiki.js reads groups from userinfo and Argo CD from the ID token, neither asking
/// for a `groups` scope that releases them everywhere.
fn groups_rule() -> Vec<ClaimRule> {
    vec![rule("groups", "groups")]
}

pub static PRESETS: &[Preset] = &[
    Preset {
        name: "grafana",
        app: "Grafana",
        note: "generic OAuth; roles from groups grafana-admins/grafana-editors",
        docs_url: "https://grafana.com/docs/grafana/latest/setup-grafana/configure-access/configure-authentication/generic-oauth/",
        redirect_paths: &["/login/generic_oauth"],
        post_logout_paths: &["/login"],
        key: Key::None,
        public: false,
        auth_method: "client_secret_basic",
        grant_types: CODE_REFRESH,
        scopes: &["openid", "profile", "email", "groups"],
        pkce: true,
        groups: &["grafana-admins", "grafana-editors"],
        claim_rules: grafana_rules,
        format: Format::Ini,
        paste_into: "grafana.ini",
        snippet: s::grafana,
    },
    Preset {
        name: "gitea",
        app: "Gitea / Forgejo",
        note: "authentication source OpenID Connect with auto-discovery",
        docs_url: "https://docs.gitea.com/administration/command-line#admin",
        redirect_paths: &["/user/oauth2/{key}/callback"],
        post_logout_paths: &[],
        key: Key::Default("tessera"),
        public: false,
        auth_method: "client_secret_basic",
        grant_types: CODE,
        scopes: &["openid", "email", "profile", "groups"],
        pkce: false,
        groups: &["gitea-admins"],
        claim_rules: none,
        format: Format::Fields,
        paste_into: "Site Administration → Identity & Access → Authentication Sources → Add Authentication Source",
        snippet: s::gitea,
    },
    Preset {
        name: "nextcloud",
        app: "Nextcloud (user_oidc)",
        note: "the OpenID Connect user backend app, with group provisioning",
        docs_url: "https://github.com/nextcloud/user_oidc#readme",
        redirect_paths: &["/apps/user_oidc/code", "/index.php/apps/user_oidc/code"],
        post_logout_paths: &[],
        key: Key::None,
        public: false,
        auth_method: "client_secret_post",
        grant_types: CODE,
        scopes: &["openid", "email", "profile", "groups"],
        pkce: true,
        groups: &[],
        claim_rules: none,
        format: Format::Fields,
        paste_into: "Administration settings → OpenID Connect → Registered Providers (+)",
        snippet: s::nextcloud,
    },
    Preset {
        name: "immich",
        app: "Immich",
        note: "web and mobile app; admin role from group immich-admins",
        docs_url: "https://docs.immich.app/administration/oauth",
        redirect_paths: &["/auth/login", "/user-settings", "app.immich:///oauth-callback"],
        post_logout_paths: &[],
        key: Key::None,
        public: false,
        auth_method: "client_secret_post",
        grant_types: CODE,
        scopes: &["openid", "email", "profile"],
        pkce: true,
        groups: &["immich-admins"],
        claim_rules: immich_rules,
        format: Format::Json,
        paste_into: "the `oauth` part of Immich's config file (IMMICH_CONFIG_FILE), or the same fields in Administration → Settings → Authentication Settings → OAuth",
        snippet: s::immich,
    },
    Preset {
        name: "jellyfin",
        app: "Jellyfin (SSO plugin)",
        note: "9p4/jellyfin-plugin-sso; access and admin from groups",
        docs_url: "https://github.com/9p4/jellyfin-plugin-sso#openid",
        redirect_paths: &["/sso/OID/redirect/{key}", "/sso/OID/r/{key}"],
        post_logout_paths: &[],
        key: Key::Default("tessera"),
        public: false,
        auth_method: "client_secret_post",
        grant_types: CODE,
        scopes: &["openid", "profile", "groups"],
        pkce: true,
        groups: &["jellyfin-users", "jellyfin-admins"],
        claim_rules: none,
        format: Format::Fields,
        paste_into: "Dashboard → Plugins → SSO-Auth → Add / Update Provider",
        snippet: s::jellyfin,
    },
    Preset {
        name: "paperless",
        app: "Paperless-ngx",
        note: "django-allauth OpenID Connect, groups synced",
        docs_url: "https://docs.paperless-ngx.com/advanced_usage/#openid-connect-and-social-authentication",
        redirect_paths: &["/accounts/oidc/{key}/login/callback/"],
        post_logout_paths: &[],
        key: Key::Default("tessera"),
        public: false,
        auth_method: "client_secret_basic",
        grant_types: CODE,
        scopes: &["openid", "profile", "email", "groups"],
        pkce: true,
        groups: &[],
        claim_rules: none,
        format: Format::Env,
        paste_into: "Paperless-ngx's environment (docker-compose.env)",
        snippet: s::paperless,
    },
    Preset {
        name: "portainer",
        app: "Portainer",
        note: "custom OAuth provider; the redirect URL is Portainer's own URL",
        docs_url: "https://docs.portainer.io/admin/settings/authentication/oauth",
        redirect_paths: &[""],
        post_logout_paths: &[],
        key: Key::None,
        public: false,
        auth_method: "client_secret_post",
        grant_types: CODE,
        scopes: &["openid", "profile", "email", "groups"],
        pkce: false,
        groups: &[],
        claim_rules: none,
        format: Format::Fields,
        paste_into: "Settings → Authentication → OAuth → Custom",
        snippet: s::portainer,
    },
    Preset {
        name: "proxmox",
        app: "Proxmox VE",
        note: "OpenID Connect realm; the app URL is the web UI's origin (with :8006)",
        docs_url: "https://pve.proxmox.com/wiki/User_Management#pveum_openid",
        redirect_paths: &[""],
        post_logout_paths: &[],
        key: Key::Default("tessera"),
        public: false,
        auth_method: "client_secret_basic",
        grant_types: CODE,
        scopes: &["openid", "email", "profile", "groups"],
        pkce: true,
        groups: &[],
        claim_rules: none,
        format: Format::Fields,
        paste_into: "Datacenter → Permissions → Realms → Add → OpenID Connect Server",
        snippet: s::proxmox,
    },
    Preset {
        name: "outline",
        app: "Outline",
        note: "OIDC environment variables; needs offline_access",
        docs_url: "https://docs.getoutline.com/s/hosting/doc/oidc-8CPBm6uC0I",
        redirect_paths: &["/auth/oidc.callback"],
        post_logout_paths: &[],
        key: Key::None,
        public: false,
        auth_method: "client_secret_post",
        grant_types: CODE_REFRESH,
        scopes: &["openid", "offline_access", "profile", "email"],
        pkce: false,
        groups: &[],
        claim_rules: none,
        format: Format::Env,
        paste_into: "Outline's environment (.env)",
        snippet: s::outline,
    },
    Preset {
        name: "wikijs",
        app: "Wiki.js",
        note: "Generic OpenID Connect strategy; its callback carries the strategy's id",
        docs_url: "https://docs.requarks.io/auth",
        redirect_paths: &["/login/{key}/callback"],
        post_logout_paths: &[],
        key: Key::Required(
            "the id in the Callback URL Wiki.js shows for the new strategy (/login/ID/callback)",
        ),
        public: false,
        auth_method: "client_secret_post",
        grant_types: CODE,
        scopes: &["openid", "profile", "email"],
        pkce: false,
        groups: &[],
        claim_rules: groups_rule,
        format: Format::Fields,
        paste_into: "Administration → Authentication → Add Strategy → Generic OpenID Connect / OAuth2",
        snippet: s::wikijs,
    },
    Preset {
        name: "minio",
        app: "MinIO",
        note: "console sign-in; policies from the groups named like them",
        docs_url: "https://min.io/docs/minio/linux/reference/minio-server/settings/iam/openid.html",
        redirect_paths: &["/oauth_callback"],
        post_logout_paths: &[],
        key: Key::None,
        public: false,
        auth_method: "client_secret_basic",
        grant_types: CODE,
        scopes: &["openid", "profile", "email"],
        pkce: false,
        groups: &[],
        claim_rules: minio_rules,
        format: Format::Env,
        paste_into: "MinIO's environment; the app URL is the Console's",
        snippet: s::minio,
    },
    Preset {
        name: "argocd",
        app: "Argo CD",
        note: "oidc.config in argocd-cm; groups in the ID token for RBAC",
        docs_url: "https://argo-cd.readthedocs.io/en/stable/operator-manual/user-management/#existing-oidc-provider",
        redirect_paths: &["/auth/callback"],
        post_logout_paths: &[],
        key: Key::None,
        public: false,
        auth_method: "client_secret_basic",
        grant_types: CODE,
        scopes: &["openid", "profile", "email", "groups"],
        pkce: false,
        groups: &["argocd-admins"],
        claim_rules: groups_rule,
        format: Format::Yaml,
        paste_into: "the data of the argocd-cm ConfigMap",
        snippet: s::argocd,
    },
];
