//! The configuration each preset prints for the application's side, in the
//! application's own key names (see the preset's `docs_url`).

use std::fmt::Write;

use serde_json::json;

use super::SnippetInput;

/// `Field: value` lines under a `#` line saying where they go.
fn fields(header: &str, rows: &[(&str, &str)], notes: &[String]) -> String {
    let mut out = format!("# {header}\n");
    for (k, v) in rows {
        let _ = writeln!(out, "{k}: {v}");
    }
    for n in notes {
        let _ = writeln!(out, "# {n}");
    }
    out
}

fn lines(rows: &[(&str, &str)], sep: &str) -> String {
    let mut out = String::new();
    for (k, v) in rows {
        let _ = writeln!(out, "{k}{sep}{v}");
    }
    out
}

pub fn grafana(i: &SnippetInput<'_>) -> String {
    // RP-Initiated Logout 1.0 §2: client_id identifies the client without an ID token.
    let logout = match i.post_logout_redirect_uri {
        Some(back) => {
            let q = url::form_urlencoded::Serializer::new(String::new())
                .append_pair("client_id", i.client_id)
                .append_pair("post_logout_redirect_uri", back)
                .finish();
            format!("{}?{q}", i.end_session_endpoint)
        }
        None => i.end_session_endpoint.clone(),
    };
    let mut out = format!("[server]\nroot_url = {}\n\n[auth.generic_oauth]\n", i.app_url);
    out += &lines(
        &[
            ("enabled", "true"),
            ("name", "Tessera"),
            ("client_id", i.client_id),
            ("client_secret", i.secret()),
            ("scopes", &i.scopes),
            ("auth_url", &i.authorization_endpoint),
            ("token_url", &i.token_endpoint),
            ("api_url", &i.userinfo_endpoint),
            ("auth_style", "InHeader"),
            ("use_pkce", "true"),
            ("use_refresh_token", "true"),
            ("login_attribute_path", "preferred_username"),
            ("name_attribute_path", "name"),
            ("email_attribute_path", "email"),
            ("groups_attribute_path", "groups"),
            ("role_attribute_path", "grafana_role"),
            ("allow_sign_up", "true"),
            ("signout_redirect_url", &logout),
        ],
        " = ",
    );
    out
}

pub fn gitea(i: &SnippetInput<'_>) -> String {
    let cli = format!(
        "or on the command line: gitea admin auth add-oauth --provider=openidConnect --name={} --key={} \
         --secret={} --auto-discover-url={} --scopes='{}' --group-claim-name=groups --admin-group=gitea-admins",
        i.key,
        i.client_id,
        i.secret(),
        i.discovery_url,
        i.scopes
    );
    fields(
        "Site Administration → Identity & Access → Authentication Sources → Add Authentication Source",
        &[
            ("Authentication Type", "OAuth2"),
            ("Authentication Name", i.key),
            ("OAuth2 Provider", "OpenID Connect"),
            ("Client ID (Key)", i.client_id),
            ("Client Secret", i.secret()),
            ("OpenID Connect Auto Discovery URL", &i.discovery_url),
            ("Additional Scopes", "email profile groups"),
            ("Claim name providing group names for this source", "groups"),
            ("Group Claim value for administrator users", "gitea-admins"),
        ],
        &[
            cli,
            "Forgejo: the same fields and command (forgejo admin auth add-oauth …)".into(),
        ],
    )
}

pub fn nextcloud(i: &SnippetInput<'_>) -> String {
    let occ = format!(
        "or: occ user_oidc:provider Tessera --clientid='{}' --clientsecret='{}' --discoveryuri='{}' \
         --scope='{}' --mapping-uid=preferred_username --mapping-display-name=name --mapping-email=email \
         --mapping-groups=groups --group-provisioning=1",
        i.client_id,
        i.secret(),
        i.discovery_url,
        i.scopes
    );
    fields(
        "Administration settings → OpenID Connect → Registered Providers (+)",
        &[
            ("Identifier", "Tessera"),
            ("Client ID", i.client_id),
            ("Client secret", i.secret()),
            ("Discovery endpoint", &i.discovery_url),
            ("Scope", &i.scopes),
            ("User ID mapping", "preferred_username"),
            ("Display name mapping", "name"),
            ("Email mapping", "email"),
            ("Groups mapping", "groups"),
            ("Use group provisioning", "on"),
        ],
        &[occ],
    )
}

pub fn immich(i: &SnippetInput<'_>) -> String {
    let config = json!({
        "oauth": {
            "enabled": true,
            "issuerUrl": i.issuer,
            "clientId": i.client_id,
            "clientSecret": i.secret(),
            "scope": i.scopes,
            "tokenEndpointAuthMethod": "client_secret_post",
            "signingAlgorithm": "RS256",
            "profileSigningAlgorithm": "none",
            "roleClaim": "immich_role",
            "storageLabelClaim": "preferred_username",
            "buttonText": "Sign in with Tessera",
            "autoRegister": true,
            "autoLaunch": false,
            "mobileOverrideEnabled": false,
            "mobileRedirectUri": ""
        }
    });
    serde_json::to_string_pretty(&config).unwrap_or_default() + "\n"
}

pub fn jellyfin(i: &SnippetInput<'_>) -> String {
    let start = format!(
        "Sign in at {}/sso/OID/start/{} (a button on the login page can link there)",
        i.app_url, i.key
    );
    fields(
        "Dashboard → Plugins → SSO-Auth → Add / Update Provider",
        &[
            ("Name of OID Provider", i.key),
            ("OID Endpoint", i.issuer),
            ("OpenID Client ID", i.client_id),
            ("OID Secret", i.secret()),
            ("Enabled", "on"),
            ("Enable Authorization by Plugin", "on"),
            ("Enable All Folders", "on"),
            ("Roles", "jellyfin-users, jellyfin-admins"),
            ("Admin Roles", "jellyfin-admins"),
            ("Role Claim", "groups"),
            ("Request Additional Scopes", "groups"),
            ("Set default username claim", "preferred_username"),
        ],
        &[start],
    )
}

pub fn paperless(i: &SnippetInput<'_>) -> String {
    let providers = json!({
        "openid_connect": {
            "SCOPE": i.scopes.split(' ').collect::<Vec<_>>(),
            "OAUTH_PKCE_ENABLED": true,
            "APPS": [{
                "provider_id": i.key,
                "name": "Tessera",
                "client_id": i.client_id,
                "secret": i.secret(),
                "settings": {
                    "server_url": i.issuer,
                    "token_auth_method": "client_secret_basic"
                }
            }]
        }
    });
    lines(
        &[
            ("PAPERLESS_URL", i.app_url),
            ("PAPERLESS_APPS", "allauth.socialaccount.providers.openid_connect"),
            ("PAPERLESS_SOCIALACCOUNT_PROVIDERS", &providers.to_string()),
            ("PAPERLESS_SOCIAL_ACCOUNT_SYNC_GROUPS", "true"),
        ],
        "=",
    )
}

pub fn portainer(i: &SnippetInput<'_>) -> String {
    fields(
        "Settings → Authentication → OAuth → Custom",
        &[
            ("Authentication method", "OAuth"),
            ("Provider", "Custom"),
            ("Client ID", i.client_id),
            ("Client secret", i.secret()),
            ("Authorization URL", &i.authorization_endpoint),
            ("Access token URL", &i.token_endpoint),
            ("Resource URL", &i.userinfo_endpoint),
            ("Redirect URL", i.redirect_uri),
            ("Logout URL", &i.end_session_endpoint),
            ("User identifier", "preferred_username"),
            ("Scopes", &i.scopes),
            ("Auth Style", "In Params"),
        ],
        &[],
    )
}

pub fn proxmox(i: &SnippetInput<'_>) -> String {
    let cli = format!(
        "or: pveum realm add {} --type openid --issuer-url '{}' --client-id '{}' --client-key '{}' \
         --username-claim username --scopes '{}' --autocreate 1 --groups-claim groups --groups-autocreate 1",
        i.key,
        i.issuer,
        i.client_id,
        i.secret(),
        i.scopes
    );
    fields(
        "Datacenter → Permissions → Realms → Add → OpenID Connect Server",
        &[
            ("Issuer URL", i.issuer),
            ("Realm", i.key),
            ("Client ID", i.client_id),
            ("Client Key", i.secret()),
            ("Username Claim", "username"),
            ("Scopes", &i.scopes),
            ("Autocreate Users", "on"),
            ("Groups Claim", "groups"),
            ("Autocreate Groups", "on"),
        ],
        &[cli],
    )
}

pub fn outline(i: &SnippetInput<'_>) -> String {
    lines(
        &[
            ("URL", i.app_url),
            ("OIDC_CLIENT_ID", i.client_id),
            ("OIDC_CLIENT_SECRET", i.secret()),
            ("OIDC_AUTH_URI", &i.authorization_endpoint),
            ("OIDC_TOKEN_URI", &i.token_endpoint),
            ("OIDC_USERINFO_URI", &i.userinfo_endpoint),
            ("OIDC_LOGOUT_URI", &i.end_session_endpoint),
            ("OIDC_USERNAME_CLAIM", "preferred_username"),
            ("OIDC_DISPLAY_NAME", "Tessera"),
            ("OIDC_SCOPES", &i.scopes),
        ],
        "=",
    )
}

pub fn wikijs(i: &SnippetInput<'_>) -> String {
    fields(
        "Administration → Authentication → Add Strategy → Generic OpenID Connect / OAuth2",
        &[
            ("Display Name", "Tessera"),
            ("Client ID", i.client_id),
            ("Client Secret", i.secret()),
            ("Authorization Endpoint URL", &i.authorization_endpoint),
            ("Token Endpoint URL", &i.token_endpoint),
            ("User Info Endpoint URL", &i.userinfo_endpoint),
            ("Issuer", i.issuer),
            ("Email Claim", "email"),
            ("Display Name Claim", "name"),
            ("Map Groups", "on"),
            ("Groups Claim", "groups"),
            ("Logout URL", &i.end_session_endpoint),
            ("Allow self-registration", "on"),
        ],
        &[format!("Callback URL / Redirect URI (registered): {}", i.redirect_uri)],
    )
}

pub fn minio(i: &SnippetInput<'_>) -> String {
    lines(
        &[
            ("MINIO_BROWSER_REDIRECT_URL", i.app_url),
            ("MINIO_IDENTITY_OPENID_CONFIG_URL", &i.discovery_url),
            ("MINIO_IDENTITY_OPENID_CLIENT_ID", i.client_id),
            ("MINIO_IDENTITY_OPENID_CLIENT_SECRET", i.secret()),
            ("MINIO_IDENTITY_OPENID_CLAIM_NAME", "policy"),
            ("MINIO_IDENTITY_OPENID_SCOPES", &i.scopes.replace(' ', ",")),
            ("MINIO_IDENTITY_OPENID_REDIRECT_URI", i.redirect_uri),
            ("MINIO_IDENTITY_OPENID_DISPLAY_NAME", "Tessera"),
        ],
        "=",
    )
}

pub fn argocd(i: &SnippetInput<'_>) -> String {
    let mut out = format!(
        "# argocd-cm ConfigMap, under data:\nurl: {}\noidc.config: |\n  name: Tessera\n  issuer: {}\n  \
         clientID: {}\n  clientSecret: {}\n  requestedScopes:\n",
        i.app_url,
        i.issuer,
        i.client_id,
        i.secret()
    );
    for scope in i.scopes.split(' ') {
        let _ = writeln!(out, "    - {scope}");
    }
    out += "  requestedIDTokenClaims:\n    groups:\n      essential: true\n";
    out += "# argocd-rbac-cm ConfigMap, under data, to make group argocd-admins admins:\n";
    out += "# policy.csv: |\n#   g, argocd-admins, role:admin\n";
    out
}
