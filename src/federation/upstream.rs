//! Speaking to an upstream OpenID Connect provider: discovery and its JWK set (cached
//! per issuer, refreshed hourly and at once when a token names a key the set lacks),
//! the authorization request (code + PKCE S256, `state`, `nonce`), the code exchange,
//! ID token validation (OpenID Connect Core §3.1.3.7) and userinfo (§5.3).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use openidconnect::core::{
    CoreGenderClaim, CoreJsonWebKeySet, CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm,
    CoreProviderMetadata,
};
use openidconnect::{AdditionalClaims, IdToken};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Profile, UpstreamError};
use crate::db::providers::Provider;

mod id_token;

pub use id_token::{groups_of, verified_claims};
use id_token::{merge_userinfo, verify_id_token};

/// Discovery and keys are fetched again after this long.
const REFRESH: i64 = 3600;
/// A cached document older than `REFRESH` still serves, for this long, while the
/// upstream cannot be reached: a short outage of its discovery endpoint does not stop
/// sign-ins whose token endpoint still answers.
const STALE_IF_ERROR: i64 = 24 * 3600;
/// An unknown `kid` refetches the key set at most this often per issuer.
const KEY_REFETCH: i64 = 10;
/// No upstream document Tessera reads is larger.
const MAX_BODY: usize = 512 * 1024;
/// Tolerated clock difference with the upstream, and how old an ID token may be.
const SKEW: i64 = 60;
const MAX_TOKEN_AGE: i64 = 600;

/// Algorithms an upstream may sign with; shared-secret ones are left out (a client
/// secret is not a signing key Tessera wants to rely on), and `none` never passes.
const ALGS: [CoreJwsSigningAlgorithm; 9] = [
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha384,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha512,
    CoreJwsSigningAlgorithm::RsaSsaPssSha256,
    CoreJwsSigningAlgorithm::RsaSsaPssSha384,
    CoreJwsSigningAlgorithm::RsaSsaPssSha512,
    CoreJwsSigningAlgorithm::EcdsaP256Sha256,
    CoreJwsSigningAlgorithm::EcdsaP384Sha384,
    CoreJwsSigningAlgorithm::EdDsa,
];

/// Claims of an ID token beyond the standard ones (the group claim, `sid`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Extra {
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}
impl AdditionalClaims for Extra {}

type UpstreamIdToken = IdToken<Extra, CoreGenderClaim, CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm>;

/// An upstream's discovery document and key set, as fetched.
pub struct Discovered {
    pub metadata: CoreProviderMetadata,
    pub jwks: CoreJsonWebKeySet,
    /// `authorization_response_iss_parameter_supported` (RFC 9207 §3), which
    /// openidconnect's metadata type does not keep.
    pub sends_iss: bool,
    fetched_at: i64,
    keys_fetched_at: i64,
}

/// The HTTP client for upstreams and the per-issuer cache; shared by every request.
pub struct Upstreams {
    /// Made on the first upstream request: building it loads the system's trusted
    /// certificates (about a megabyte of heap), which a server whose people never
    /// sign in through an upstream would pay for nothing.
    http: OnceLock<Result<reqwest::Client, String>>,
    cache: Mutex<HashMap<String, Arc<Discovered>>>,
}

impl Default for Upstreams {
    fn default() -> Self {
        Self::new()
    }
}

impl Upstreams {
    pub fn new() -> Self {
        Self {
            http: OnceLock::new(),
            cache: Mutex::new(HashMap::new()),
        }
    }

    pub(super) fn http(&self) -> Result<&reqwest::Client, UpstreamError> {
        self.http
            .get_or_init(|| {
                reqwest::Client::builder()
                    .timeout(Duration::from_secs(10))
                    .connect_timeout(Duration::from_secs(5))
                    // A redirect could lead a fetch anywhere; upstream endpoints answer directly.
                    .redirect(reqwest::redirect::Policy::none())
                    .user_agent("Tessera")
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| {
                tracing::error!(error = %e, "cannot build the upstream HTTP client");
                UpstreamError::Unavailable(format!("the HTTP client cannot be built: {e}"))
            })
    }

    /// Drops every cached document (a provider was added or removed; the cache is
    /// keyed by issuer, which several providers may share).
    pub fn forget(&self) {
        if let Ok(mut c) = self.cache.lock() {
            c.clear();
        }
    }

    fn cached(&self, issuer: &str) -> Option<Arc<Discovered>> {
        self.cache.lock().ok().and_then(|c| c.get(issuer).cloned())
    }

    fn store(&self, issuer: &str, d: Arc<Discovered>) {
        if let Ok(mut c) = self.cache.lock() {
            c.insert(issuer.to_string(), d);
        }
    }

    /// The issuer's discovery document and keys: cached for an hour, served stale for
    /// a day while the upstream cannot be reached.
    pub async fn discover(&self, issuer: &str, now: i64) -> Result<Arc<Discovered>, UpstreamError> {
        let cached = self.cached(issuer);
        if let Some(d) = &cached {
            if now - d.fetched_at < REFRESH {
                return Ok(d.clone());
            }
        }
        match self.fetch_discovery(issuer, now).await {
            Ok(d) => {
                let d = Arc::new(d);
                self.store(issuer, d.clone());
                Ok(d)
            }
            Err(e) => match cached {
                Some(d) if now - d.fetched_at < STALE_IF_ERROR => {
                    tracing::warn!(%issuer, error = %e, "upstream discovery failed; using the cached document");
                    Ok(d)
                }
                _ => Err(e),
            },
        }
    }

    async fn fetch_discovery(&self, issuer: &str, now: i64) -> Result<Discovered, UpstreamError> {
        let url = format!("{issuer}/.well-known/openid-configuration");
        let body = self.get_json(&url, None).await?;
        let sends_iss = body.get("authorization_response_iss_parameter_supported") == Some(&Value::Bool(true));
        let metadata: CoreProviderMetadata = serde_json::from_value(body)
            .map_err(|e| UpstreamError::Unavailable(format!("the upstream's discovery document is not valid: {e}")))?;
        // OpenID Connect Discovery §4.3: the document's issuer is exactly the one asked.
        if metadata.issuer().as_str().trim_end_matches('/') != issuer.trim_end_matches('/') {
            return Err(UpstreamError::Unavailable(format!(
                "the upstream's discovery document names another issuer ({})",
                metadata.issuer().as_str()
            )));
        }
        let lab = loopback(issuer);
        let endpoints = [
            Some(metadata.authorization_endpoint().url()),
            metadata.token_endpoint().map(|e| e.url()),
            metadata.userinfo_endpoint().map(|e| e.url()),
            Some(metadata.jwks_uri().url()),
        ];
        if let Some(bad) = endpoints.into_iter().flatten().find(|u| !endpoint_ok(u, lab)) {
            return Err(UpstreamError::Unavailable(format!(
                "the upstream's discovery document names an endpoint that is not https: {bad}"
            )));
        }
        let jwks = self.fetch_keys(&metadata).await?;
        Ok(Discovered {
            metadata,
            jwks,
            sends_iss,
            fetched_at: now,
            keys_fetched_at: now,
        })
    }

    async fn fetch_keys(&self, metadata: &CoreProviderMetadata) -> Result<CoreJsonWebKeySet, UpstreamError> {
        let body = self.get_json(metadata.jwks_uri().url().as_str(), None).await?;
        serde_json::from_value(body)
            .map_err(|e| UpstreamError::Unavailable(format!("the upstream's key set is not valid: {e}")))
    }

    /// The key set fetched again, when a token names a key the cached set lacks (the
    /// upstream rotated its keys); at most every `KEY_REFETCH` seconds per issuer.
    async fn refresh_keys(&self, issuer: &str, d: &Arc<Discovered>, now: i64) -> Option<Arc<Discovered>> {
        if now - d.keys_fetched_at < KEY_REFETCH {
            return None;
        }
        match self.fetch_keys(&d.metadata).await {
            Ok(jwks) => {
                let fresh = Arc::new(Discovered {
                    metadata: d.metadata.clone(),
                    jwks,
                    sends_iss: d.sends_iss,
                    fetched_at: d.fetched_at,
                    keys_fetched_at: now,
                });
                self.store(issuer, fresh.clone());
                Some(fresh)
            }
            Err(e) => {
                tracing::warn!(%issuer, error = %e, "cannot refetch the upstream's keys");
                None
            }
        }
    }

    /// GETs a JSON document (bounded in time and size), with a bearer token if given.
    pub(super) async fn get_json(&self, url: &str, bearer: Option<&str>) -> Result<Value, UpstreamError> {
        let mut req = self
            .http()?
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json");
        if let Some(token) = bearer {
            req = req.bearer_auth(token);
        }
        let resp = req.send().await.map_err(unreachable)?;
        let status = resp.status();
        let body = read_body(resp).await?;
        if !status.is_success() {
            return Err(UpstreamError::Unavailable(format!("{url} answered {status}")));
        }
        serde_json::from_slice(&body).map_err(|_| UpstreamError::Unavailable(format!("{url} did not answer JSON")))
    }

    /// POSTs a form and reads the JSON answer whatever the status (token endpoints
    /// answer errors as JSON with 400).
    pub(super) async fn post_form(
        &self,
        url: &str,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> Result<(reqwest::StatusCode, Value), UpstreamError> {
        let mut req = self
            .http()?
            .post(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .form(form);
        if let Some((user, password)) = basic {
            // RFC 6749 §2.3.1: each part form-encoded before the Basic encoding.
            req = req.basic_auth(form_encode(user), Some(form_encode(password)));
        }
        let resp = req.send().await.map_err(unreachable)?;
        let status = resp.status();
        let body = read_body(resp).await?;
        let json = serde_json::from_slice(&body)
            .map_err(|_| UpstreamError::Unavailable(format!("{url} answered {status} without JSON")))?;
        Ok((status, json))
    }
}

/// Whether an issuer is a loopback `http` one (tests and labs).
fn loopback(issuer: &str) -> bool {
    url::Url::parse(issuer).is_ok_and(|u| u.scheme() == "http")
}

/// An upstream endpoint must be https (its keys, the code and the client secret pass
/// through it); only a loopback issuer's endpoints may be http, and then only on a
/// loopback address.
fn endpoint_ok(url: &url::Url, lab: bool) -> bool {
    let on_loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    url.scheme() == "https" || (lab && url.scheme() == "http" && on_loopback)
}

fn form_encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

fn unreachable(e: reqwest::Error) -> UpstreamError {
    UpstreamError::Unavailable(format!("the upstream cannot be reached: {}", without_url(&e)))
}

/// reqwest's message without the URL it names (which may carry a code).
fn without_url(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "connection refused or failed".into()
    } else {
        "request failed".into()
    }
}

pub(super) async fn read_body(mut resp: reqwest::Response) -> Result<Vec<u8>, UpstreamError> {
    if resp.content_length().is_some_and(|n| n > MAX_BODY as u64) {
        return Err(UpstreamError::Unavailable("the upstream's answer is too large".into()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(unreachable)? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_BODY {
            return Err(UpstreamError::Unavailable("the upstream's answer is too large".into()));
        }
    }
    Ok(body)
}

/// What an authorization request to the upstream carries besides the client.
pub struct Ask<'a> {
    pub redirect_uri: &'a str,
    pub state: &'a str,
    pub nonce: &'a str,
    pub challenge: &'a str,
    /// Parameters passed on from the client's request (`prompt`, `login_hint`).
    pub extra: &'a [(&'a str, &'a str)],
}

/// The upstream authorization URL: code flow with PKCE S256, `state` and `nonce`.
pub async fn authorization_url(
    ups: &Upstreams,
    p: &Provider,
    ask: &Ask<'_>,
    now: i64,
) -> Result<String, UpstreamError> {
    let issuer = p.issuer.as_deref().unwrap_or_default();
    let d = ups.discover(issuer, now).await?;
    let mut url = d.metadata.authorization_endpoint().url().clone();
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &p.client_id)
        .append_pair("redirect_uri", ask.redirect_uri)
        .append_pair("scope", &p.scope)
        .append_pair("state", ask.state)
        .append_pair("nonce", ask.nonce)
        .append_pair("code_challenge", ask.challenge)
        .append_pair("code_challenge_method", "S256")
        .extend_pairs(ask.extra);
    Ok(url.to_string())
}

/// Whether the discovery document says the upstream sends `iss` with its
/// authorization responses (RFC 9207 §3), when it does not send one.
pub async fn requires_iss(ups: &Upstreams, p: &Provider, now: i64) -> Result<bool, UpstreamError> {
    let d = ups.discover(p.issuer.as_deref().unwrap_or_default(), now).await?;
    Ok(d.sends_iss)
}

/// What redeeming a code needs besides the provider.
pub struct Redeem<'a> {
    pub secret: &'a str,
    pub code: &'a str,
    pub verifier: &'a str,
    pub redirect_uri: &'a str,
    pub nonce: &'a str,
    /// The client's `max_age`, passed upstream: the upstream's `auth_time` must be
    /// within it (Core §3.1.2.1).
    pub max_age: Option<i64>,
    pub now: i64,
}

/// Redeems the code, validates the ID token against the nonce and reads userinfo.
pub async fn finish(ups: &Upstreams, p: &Provider, r: &Redeem<'_>) -> Result<Profile, UpstreamError> {
    let Redeem {
        secret,
        code,
        verifier,
        redirect_uri,
        nonce,
        max_age,
        now,
    } = *r;
    let issuer = p.issuer.as_deref().unwrap_or_default();
    let d = ups.discover(issuer, now).await?;
    let token_url = d
        .metadata
        .token_endpoint()
        .ok_or_else(|| UpstreamError::Unavailable("the upstream has no token endpoint".into()))?
        .url()
        .to_string();
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", redirect_uri),
        ("code_verifier", verifier),
    ];
    // client_secret_basic is the default (OpenID Connect Discovery §3); the form
    // parameters only when the upstream lists client_secret_post and not basic.
    let methods = serde_json::to_value(d.metadata.token_endpoint_auth_methods_supported()).unwrap_or_default();
    let lists = |m: &str| methods.as_array().is_some_and(|a| a.iter().any(|v| v == m));
    let post = lists("client_secret_post") && !lists("client_secret_basic");
    if post {
        form.push(("client_id", &p.client_id));
        form.push(("client_secret", secret));
    }
    let basic = (!post).then_some((p.client_id.as_str(), secret));
    let (status, answer) = ups.post_form(&token_url, &form, basic).await?;
    if let Some(error) = answer.get("error").and_then(Value::as_str) {
        return Err(UpstreamError::Refused(format!(
            "the upstream refused the code: {error}"
        )));
    }
    if !status.is_success() {
        return Err(UpstreamError::Unavailable(format!(
            "the upstream's token endpoint answered {status}"
        )));
    }
    let id_token = answer
        .get("id_token")
        .and_then(Value::as_str)
        .ok_or_else(|| UpstreamError::Refused("the upstream sent no ID token".into()))?;
    let access_token = answer.get("access_token").and_then(Value::as_str);
    let mut profile = verify_id_token(ups, p, secret, &d, id_token, (nonce, max_age), now).await?;
    if let (Some(endpoint), Some(token)) = (d.metadata.userinfo_endpoint(), access_token) {
        let info = ups.get_json(endpoint.url().as_str(), Some(token)).await?;
        merge_userinfo(&mut profile, &info, p.group_claim.as_deref())?;
    }
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn group_claims_are_read_by_name_or_dotted_path() {
        let claims = json!({"groups": ["a", "b", 3], "realm_access": {"roles": ["admin"]}, "one": "x"});
        assert_eq!(
            groups_of(&claims, "groups"),
            Some(vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(
            groups_of(&claims, "realm_access.roles"),
            Some(vec!["admin".to_string()])
        );
        assert_eq!(groups_of(&claims, "one"), Some(vec!["x".to_string()]));
        assert_eq!(groups_of(&claims, "missing"), None);
        assert_eq!(groups_of(&claims, "realm_access.missing"), None);
    }

    #[test]
    fn endpoints_must_be_https_except_a_loopback_issuers_on_loopback() {
        let u = |s: &str| url::Url::parse(s).unwrap();
        assert!(endpoint_ok(&u("https://up.example/token"), false));
        assert!(!endpoint_ok(&u("http://up.example/jwks"), false));
        assert!(
            !endpoint_ok(&u("http://127.0.0.1:9/jwks"), false),
            "not for an https issuer"
        );
        assert!(endpoint_ok(&u("http://127.0.0.1:9/jwks"), true));
        assert!(
            !endpoint_ok(&u("http://10.0.0.1/jwks"), true),
            "a lab issuer's endpoints stay on loopback"
        );
        assert!(loopback("http://127.0.0.1:9") && !loopback("https://up.example"));
    }

    #[test]
    fn userinfo_about_another_subject_is_refused() {
        let mut p = Profile {
            subject: "a".into(),
            ..Profile::default()
        };
        assert!(merge_userinfo(&mut p, &json!({"sub": "b", "email": "x@y"}), None).is_err());
        merge_userinfo(
            &mut p,
            &json!({"sub": "a", "email": "x@y", "email_verified": true, "g": ["k"]}),
            Some("g"),
        )
        .unwrap();
        assert_eq!(p.email.as_deref(), Some("x@y"));
        assert!(p.email_verified);
        assert_eq!(p.groups, Some(vec!["k".to_string()]));
    }
}
