//! The URL a proxied request was for, as the proxy reports it (`X-Original-URL`, or
//! `X-Forwarded-Proto/Host/Uri/Method`), and the `rd` a sign-in returns to. Anything
//! two parsers could read differently is refused rather than normalised: a
//! backslash, an encoded slash, dot segments, userinfo, control characters, a second
//! authority (`//evil`), or a host the URL parser would rewrite.

use url::Url;

/// At most this long, whatever the source: a proxy's URL or a sign-in's `rd`.
const MAX_LEN: usize = 4096;

/// A checked absolute http(s) URL and what matching needs of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    url: Url,
    /// Lower case, with `:port` when it is not the scheme's default: what apps are
    /// registered under.
    pub host: String,
    /// The host name alone (no port), for the cookie domain.
    pub hostname: String,
    pub method: String,
}

impl Target {
    /// Parses `text` (an absolute URL) for a request made with `method`.
    pub fn parse(text: &str, method: &str) -> Result<Self, &'static str> {
        if text.len() > MAX_LEN {
            return Err("the URL is too long");
        }
        if text
            .chars()
            .any(|c| c.is_control() || c.is_whitespace() || c == '\\' || c == '#')
        {
            return Err("the URL has spaces, control characters, a backslash or a fragment");
        }
        let (scheme, rest) = text.split_once("://").ok_or("the URL is not absolute")?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err("only http and https URLs are protected");
        }
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path_query) = rest.split_at(end);
        if authority.is_empty() || authority.contains('@') || authority.contains('%') {
            return Err("the URL has no host, or has credentials in it");
        }
        if !path_query.is_empty() && !path_query.starts_with('/') {
            return Err("the URL's path must start with /");
        }
        let raw_path = path_query.split('?').next().unwrap_or("");
        if raw_path.starts_with("//") {
            return Err("the URL's path starts with //");
        }
        let lower = raw_path.to_ascii_lowercase();
        if lower.contains("%2f") || lower.contains("%5c") || lower.contains("%2e") {
            return Err("the URL's path has an encoded slash, backslash or dot");
        }
        if raw_path.split('/').any(|seg| seg == "." || seg == "..") {
            return Err("the URL's path has . or .. segments");
        }
        let url = Url::parse(text).map_err(|_| "the URL is not valid")?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err("the URL has credentials in it");
        }
        let hostname = url.host_str().ok_or("the URL has no host")?.to_ascii_lowercase();
        let host = match url.port() {
            Some(p) => format!("{hostname}:{p}"),
            None => hostname.clone(),
        };
        // The parser must not have rewritten the host (IDNA, `0x7f.1`, a default port
        // spelt out stays fine): what the proxy routed on is what is matched.
        let given = authority.to_ascii_lowercase();
        let default_port = if scheme == "https" { ":443" } else { ":80" };
        if given != host && given.strip_suffix(default_port) != Some(hostname.as_str()) {
            return Err("the URL's host is not in a plain form");
        }
        if !raw_path.is_empty() && url.path() != raw_path {
            return Err("the URL's path is not in a plain form");
        }
        let method = method.trim();
        // RFC 9110 §9.1: a method is a token (tchar, §5.6.2).
        let tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        if method.is_empty() || method.len() > 32 || !method.bytes().all(tchar) {
            return Err("the request method is not a method name");
        }
        Ok(Self {
            url,
            host,
            hostname,
            method: method.to_ascii_uppercase(),
        })
    }

    /// Builds the URL from the `X-Forwarded-*` headers of Traefik, Caddy and HAProxy
    /// (each given once; a list of several proxies' values is ambiguous).
    pub fn forwarded(proto: &str, host: &str, uri: &str, method: &str) -> Result<Self, &'static str> {
        if [proto, host].iter().any(|v| v.contains(',')) {
            return Err("X-Forwarded-Proto and X-Forwarded-Host must carry one value");
        }
        if !uri.starts_with('/') {
            return Err("X-Forwarded-Uri must start with /");
        }
        if host.contains(['/', '?', '@']) {
            return Err("X-Forwarded-Host is not a host");
        }
        Self::parse(&format!("{}://{}{}", proto.trim(), host.trim(), uri), method)
    }

    pub fn as_str(&self) -> &str {
        self.url.as_str()
    }

    pub fn is_https(&self) -> bool {
        self.url.scheme() == "https"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Target {
        Target::parse(text, "GET").unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn plain_urls_give_their_host_as_registered() {
        let t = ok("https://App.Example.org/x/y?a=b&c=%2F");
        assert_eq!(
            (t.host.as_str(), t.hostname.as_str()),
            ("app.example.org", "app.example.org")
        );
        assert_eq!(ok("https://app.example.org:443/").host, "app.example.org");
        assert_eq!(ok("http://app.example.test:8081/").host, "app.example.test:8081");
        assert_eq!(ok("https://app.example.org").as_str(), "https://app.example.org/");
    }

    #[test]
    fn ambiguous_urls_are_refused() {
        for bad in [
            "https://app.example.org//evil.example/",
            "https://evil.example@app.example.org/",
            "https://app.example.org@evil.example/",
            "https://app.example.org/a%2Fb",
            "https://app.example.org/a%5cb",
            "https://app.example.org/%2e%2e/admin",
            "https://app.example.org/a/../admin",
            "https://app.example.org/a\\b",
            "https://app.example.org/a\r\nSet-Cookie: x=y",
            "https://app.example.org/#frag",
            "https://app.example.org/a b",
            "https:///app.example.org/",
            "//app.example.org/",
            "javascript://app.example.org/%0aalert(1)",
            "ftp://app.example.org/",
            "https://0x7f.1/",
            "https://app%2eexample.org/",
        ] {
            assert!(Target::parse(bad, "GET").is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn forwarded_headers_compose_one_url() {
        let t = Target::forwarded("https", "app.example.org", "/dash?x=1", "post").unwrap();
        assert_eq!(
            (t.as_str(), t.method.as_str()),
            ("https://app.example.org/dash?x=1", "POST")
        );
        assert!(Target::forwarded("https", "app.example.org, evil.example", "/", "GET").is_err());
        assert!(Target::forwarded("https,http", "app.example.org", "/", "GET").is_err());
        assert!(Target::forwarded("https", "app.example.org", "//evil.example/", "GET").is_err());
        assert!(Target::forwarded("https", "app.example.org", "evil", "GET").is_err());
        assert!(Target::forwarded("https", "evil.example/x", "/", "GET").is_err());
        assert!(Target::forwarded("https", "app.example.org", "/", "GE T").is_err());
        assert!(Target::forwarded("https", "app.example.org", "/", "GE\nT").is_err());
        let search = Target::forwarded("https", "app.example.org", "/", "M-SEARCH").unwrap();
        assert_eq!(search.method, "M-SEARCH");
    }
}
