//! Outbound requests to URLs someone other than an administrator chose (metadata
//! documents, `jwks_uri`, back-channel logout of registered clients): https only,
//! public addresses only, bounded in size and time.
//!
//! Anyone who can send a `client_id` or register a URL chooses where it points, so the
//! fetch is a server-side request forgery surface (RFC 7591 §5, draft-ietf-oauth-
//! client-id-metadata-document §6.5): the host is resolved by us and every address is
//! checked before a connection is made, the connection goes to exactly those checked
//! addresses (our resolver is reqwest's only resolver, so a second DNS answer cannot
//! swap them: no rebinding), no proxy is used, redirects are not followed, and the
//! body is cut off at a cap while it streams.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::{Host, Url};

/// Connect and total time allowed for one fetch.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Why a fetch gave nothing. The text is for logs and error descriptions: it names
/// the rule broken, never a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The URL or the address it resolves to is not one we fetch from.
    #[error("not fetched: {0}")]
    Refused(String),
    /// The host could not be reached, or answered too slowly.
    #[error("the host could not be reached")]
    Unreachable,
    /// An answer other than 200.
    #[error("the host answered HTTP {0}")]
    Status(u16),
    /// The body is larger than the cap.
    #[error("the document is larger than {0} bytes")]
    TooLarge(usize),
}

impl FetchError {
    /// A failure of the remote host (rather than a refusal or a bad document), after
    /// which a copy fetched earlier may still serve for a while.
    pub fn transient(&self) -> bool {
        match self {
            FetchError::Unreachable => true,
            FetchError::Status(s) => *s >= 500 || *s == 429,
            _ => false,
        }
    }
}

/// A fetched body and what its caching headers said.
#[derive(Debug)]
pub struct Fetched {
    pub body: Vec<u8>,
    /// `Cache-Control: max-age` (or `no-cache`/`no-store` as 0).
    pub max_age: Option<i64>,
    /// `Expires`, as Unix seconds.
    pub expires: Option<i64>,
}

impl Fetched {
    /// Seconds the answer may be used from `now` by HTTP caching rules (RFC 9111
    /// §4.2.1: max-age wins over Expires); `None` when the answer says nothing.
    pub fn freshness(&self, now: i64) -> Option<i64> {
        self.max_age.or(self.expires.map(|e| e - now)).map(|s| s.max(0))
    }
}

/// The outbound HTTP client of one server, made on first use.
pub struct Fetcher {
    /// Test mode (`--fetch-private-addresses`): loopback and private targets, and
    /// plain http, are allowed, since tests serve documents from 127.0.0.1.
    allow_private: bool,
    http: OnceLock<Option<reqwest::Client>>,
}

impl Default for Fetcher {
    /// Public https targets only.
    fn default() -> Self {
        Self::new(false)
    }
}

impl Fetcher {
    pub fn new(allow_private: bool) -> Self {
        Self {
            allow_private,
            http: OnceLock::new(),
        }
    }

    pub fn allows_private(&self) -> bool {
        self.allow_private
    }

    fn client(&self) -> Option<&reqwest::Client> {
        self.http
            .get_or_init(|| {
                let built = reqwest::Client::builder()
                    .connect_timeout(TIMEOUT)
                    .timeout(TIMEOUT)
                    .redirect(reqwest::redirect::Policy::none())
                    .no_proxy()
                    .https_only(!self.allow_private)
                    .user_agent("tessera")
                    .dns_resolver(Arc::new(CheckedResolver {
                        allow_private: self.allow_private,
                    }))
                    .build();
                match built {
                    Ok(c) => Some(c),
                    Err(e) => {
                        tracing::error!(error = %e, "cannot build the outbound HTTP client");
                        None
                    }
                }
            })
            .as_ref()
    }

    /// Whether `url` is one this server would fetch from, before any network use:
    /// https (http only in test mode), a host, no credentials, and an address literal
    /// only when it is public.
    pub fn check_url(&self, url: &str) -> Result<Url, FetchError> {
        let parsed = Url::parse(url).map_err(|_| FetchError::Refused("not an absolute URL".into()))?;
        match parsed.scheme() {
            "https" => {}
            "http" if self.allow_private => {}
            _ => return Err(FetchError::Refused("only https URLs are fetched".into())),
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(FetchError::Refused("a URL with credentials".into()));
        }
        let literal = match parsed.host() {
            None => return Err(FetchError::Refused("a URL without a host".into())),
            Some(Host::Domain(_)) => None,
            Some(Host::Ipv4(a)) => Some(IpAddr::V4(a)),
            Some(Host::Ipv6(a)) => Some(IpAddr::V6(a)),
        };
        // An address literal never reaches the resolver, so it is checked here.
        if let Some(ip) = literal.filter(|ip| !self.allow_private && !is_public(*ip)) {
            return Err(FetchError::Refused(format!("{ip} is not a public address")));
        }
        Ok(parsed)
    }

    /// GETs `url` as JSON (`Accept: application/json`), refusing bodies over `cap`
    /// bytes; any status but 200 is an error.
    pub async fn get(&self, url: &str, cap: usize) -> Result<Fetched, FetchError> {
        self.get_as(url, cap, "application/json").await
    }

    /// `get` with another `Accept` header (a logo asks for images).
    pub async fn get_as(&self, url: &str, cap: usize, accept: &str) -> Result<Fetched, FetchError> {
        let parsed = self.check_url(url)?;
        let http = self.client().ok_or(FetchError::Unreachable)?;
        let mut resp = http
            .get(parsed)
            .header(reqwest::header::ACCEPT, accept)
            .send()
            .await
            .map_err(|e| refusal_of(&e).unwrap_or(FetchError::Unreachable))?;
        if resp.status() != reqwest::StatusCode::OK {
            return Err(FetchError::Status(resp.status().as_u16()));
        }
        if resp.content_length().is_some_and(|n| n > cap as u64) {
            return Err(FetchError::TooLarge(cap));
        }
        let headers = resp.headers();
        let max_age = headers
            .get_all(reqwest::header::CACHE_CONTROL)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(max_age_of);
        let expires = headers
            .get(reqwest::header::EXPIRES)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| chrono::DateTime::parse_from_rfc2822(v.trim()).ok())
            .map(|t| t.timestamp());
        let mut body = Vec::new();
        // The length header may lie or be absent: the cap holds while reading.
        while let Some(chunk) = resp.chunk().await.map_err(|_| FetchError::Unreachable)? {
            if body.len() + chunk.len() > cap {
                return Err(FetchError::TooLarge(cap));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Fetched { body, max_age, expires })
    }

    /// Whether `url` would be fetched now: `check_url`, then its name resolved and
    /// every address checked, as a fetch would. For checks at registration; the
    /// request itself checks again, since a name may point elsewhere by then.
    pub async fn check_target(&self, url: &str) -> Result<Url, FetchError> {
        let parsed = self.check_url(url)?;
        if let Some(Host::Domain(name)) = parsed.host() {
            resolve_checked(name.to_string(), self.allow_private).await?;
        }
        Ok(parsed)
    }

    /// POSTs `form` to `url` under the same rules as `get` (checked addresses, no
    /// redirects, the time limit) and returns the answer's status; the body is not read.
    pub async fn post_form(&self, url: &str, form: &[(&str, &str)]) -> Result<u16, FetchError> {
        let parsed = self.check_url(url)?;
        let http = self.client().ok_or(FetchError::Unreachable)?;
        let resp = http
            .post(parsed)
            .form(form)
            .send()
            .await
            .map_err(|e| refusal_of(&e).unwrap_or(FetchError::Unreachable))?;
        Ok(resp.status().as_u16())
    }
}

/// A refusal by our resolver, found in reqwest's error chain.
fn refusal_of(e: &reqwest::Error) -> Option<FetchError> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(refused) = s.downcast_ref::<FetchError>() {
            return Some(refused.clone());
        }
        source = s.source();
    }
    None
}

/// `max-age=N` of one Cache-Control header; `no-cache` and `no-store` count as 0.
fn max_age_of(value: &str) -> Option<i64> {
    value.split(',').map(str::trim).find_map(|d| {
        let lower = d.to_ascii_lowercase();
        if lower == "no-store" || lower == "no-cache" {
            return Some(0);
        }
        lower
            .strip_prefix("max-age=")
            .and_then(|n| n.trim_matches('"').parse::<i64>().ok())
    })
}

/// Resolves names with the system resolver, then refuses the lot when any address is
/// not public (outside test mode): a name with one private address is not a public
/// service, and picking the public ones would let the next lookup choose for us.
struct CheckedResolver {
    allow_private: bool,
}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_string();
        Box::pin(async move {
            match resolve_checked(host, allow_private).await {
                Ok(addrs) => Ok(Box::new(addrs.into_iter()) as Addrs),
                Err(e) => Err(Box::new(e) as Box<dyn std::error::Error + Send + Sync>),
            }
        })
    }
}

/// The addresses of `host` by the system resolver, all of them public (outside test mode).
async fn resolve_checked(host: String, allow_private: bool) -> Result<Vec<SocketAddr>, FetchError> {
    let found = tokio::task::spawn_blocking(move || (host.as_str(), 0).to_socket_addrs().map(|a| a.collect()))
        .await
        .map_err(|_| FetchError::Unreachable)?;
    let addrs: Vec<SocketAddr> = found.map_err(|_| FetchError::Unreachable)?;
    if addrs.is_empty() {
        return Err(FetchError::Unreachable);
    }
    if let Some(bad) = addrs.iter().find(|a| !allow_private && !is_public(a.ip())) {
        return Err(FetchError::Refused(format!(
            "the host resolves to {}, not a public address",
            bad.ip()
        )));
    }
    Ok(addrs)
}

/// Whether `ip` is a globally reachable unicast address: not loopback, private
/// (RFC 1918, ULA fc00::/7), link-local, unspecified, multicast, broadcast, shared
/// (CGNAT 100.64/10), documentation or benchmarking ranges, nor an IPv6 form that
/// embeds one of those (IPv4-mapped, IPv4-compatible, NAT64, 6to4).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => is_public_v4(a),
        IpAddr::V6(a) => is_public_v6(a),
    }
}

fn is_public_v4(a: Ipv4Addr) -> bool {
    let [o1, o2, o3, _] = a.octets();
    !(o1 == 0                                    // "this network" (RFC 791), 0.0.0.0
        || o1 == 10                              // RFC 1918
        || o1 == 127                             // loopback
        || (o1 == 100 && (64..128).contains(&o2)) // shared address space, CGNAT (RFC 6598)
        || (o1 == 169 && o2 == 254)              // link-local (RFC 3927)
        || (o1 == 172 && (16..32).contains(&o2)) // RFC 1918
        || (o1 == 192 && o2 == 0 && o3 == 0)     // IETF protocol assignments (RFC 6890)
        || (o1 == 192 && o2 == 0 && o3 == 2)     // TEST-NET-1 (RFC 5737)
        || (o1 == 192 && o2 == 168)              // RFC 1918
        || (o1 == 198 && (18..20).contains(&o2)) // benchmarking (RFC 2544)
        || (o1 == 198 && o2 == 51 && o3 == 100)  // TEST-NET-2
        || (o1 == 203 && o2 == 0 && o3 == 113)   // TEST-NET-3
        || o1 >= 224) // multicast (224/4), reserved (240/4) and broadcast
}

fn is_public_v6(a: Ipv6Addr) -> bool {
    let s = a.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    if s[..5] == [0, 0, 0, 0, 0] && (s[5] == 0xffff || s[5] == 0) {
        // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible; :: and ::1 fall in here).
        return s[5] == 0xffff && is_public_v4(embedded(s[6], s[7]));
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return is_public_v4(embedded(s[6], s[7])); // NAT64 (RFC 6052)
    }
    if s[0] == 0x2002 {
        return is_public_v4(embedded(s[1], s[2])); // 6to4 (RFC 3056)
    }
    !((s[0] & 0xfe00) == 0xfc00                  // unique local (RFC 4193)
        || (s[0] & 0xffc0) == 0xfe80             // link-local
        || (s[0] & 0xffc0) == 0xfec0             // site-local (deprecated)
        || (s[0] & 0xff00) == 0xff00             // multicast
        || (s[0] == 0x2001 && s[1] == 0x0db8)    // documentation (RFC 3849)
        || (s[0] == 0x2001 && s[1] < 0x0200)     // IETF assignments, Teredo (RFC 6890)
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0])) // discard-only (RFC 6666)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(s: &str) -> bool {
        is_public(s.parse().unwrap())
    }

    #[test]
    fn public_addresses_are_allowed() {
        for a in [
            "93.184.215.14",
            "8.8.8.8",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001::200e",
        ] {
            assert!(public(a), "{a} is public");
        }
    }

    #[test]
    fn loopback_private_and_special_ipv4_are_refused() {
        for a in [
            "127.0.0.1",
            "127.255.0.1",
            "0.0.0.0",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "198.18.0.1",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
        ] {
            assert!(!public(a), "{a} must be refused");
        }
        // The edges of the private ranges are public.
        for a in [
            "172.15.255.255",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "11.0.0.1",
        ] {
            assert!(public(a), "{a} is public");
        }
    }

    #[test]
    fn special_ipv6_and_embedded_ipv4_are_refused() {
        for a in [
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "2001::1",
            "100::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::10.0.0.1",
            "2002:7f00:1::",
            "2002:c0a8:101::",
        ] {
            assert!(!public(a), "{a} must be refused");
        }
        assert!(public("::ffff:8.8.8.8"), "a mapped public address is public");
        assert!(public("64:ff9b::808:808"), "NAT64 of a public address is public");
        assert!(public("2002:808:808::1"), "6to4 of a public address is public");
    }

    #[test]
    fn urls_are_checked_before_any_connection() {
        let strict = Fetcher::new(false);
        assert!(strict.check_url("https://client.example/meta.json").is_ok());
        assert!(matches!(
            strict.check_url("http://client.example/x"),
            Err(FetchError::Refused(_))
        ));
        assert!(matches!(
            strict.check_url("https://127.0.0.1/x"),
            Err(FetchError::Refused(_))
        ));
        assert!(matches!(
            strict.check_url("https://[::1]:8443/x"),
            Err(FetchError::Refused(_))
        ));
        assert!(matches!(
            strict.check_url("https://u:p@client.example/x"),
            Err(FetchError::Refused(_))
        ));
        assert!(matches!(
            strict.check_url("file:///etc/passwd"),
            Err(FetchError::Refused(_))
        ));
        let test_mode = Fetcher::new(true);
        assert!(test_mode.check_url("http://127.0.0.1:8080/x").is_ok());
    }

    #[test]
    fn caching_headers_give_the_freshness() {
        assert_eq!(max_age_of("public, max-age=600"), Some(600));
        assert_eq!(max_age_of("no-store"), Some(0));
        assert_eq!(max_age_of("private"), None);
        let f = Fetched {
            body: Vec::new(),
            max_age: None,
            expires: Some(1_000_100),
        };
        assert_eq!(f.freshness(1_000_000), Some(100));
        let f = Fetched {
            body: Vec::new(),
            max_age: Some(60),
            expires: Some(1_000_100),
        };
        assert_eq!(f.freshness(1_000_000), Some(60), "max-age wins over Expires");
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused_without_test_mode() {
        let strict = Fetcher::new(false);
        let e = strict.get("https://localhost:1/doc", 1024).await.unwrap_err();
        assert!(matches!(e, FetchError::Refused(_)), "{e:?}");
        let e = strict.check_target("https://localhost/logout").await.unwrap_err();
        assert!(matches!(e, FetchError::Refused(_)), "{e:?}");
        let e = strict
            .post_form("https://localhost:1/logout", &[("a", "b")])
            .await
            .unwrap_err();
        assert!(matches!(e, FetchError::Refused(_)), "{e:?}");
    }
}
