//! S3-compatible object storage as a replica target (AWS S3, MinIO, Garage, Ceph RGW,
//! Cloudflare R2, …): single-request PutObject, GetObject, DeleteObject and
//! ListObjectsV2, signed with SigV4 (`sigv4.rs`) over a blocking HTTP client, since
//! every caller is a plain OS thread (the shipper, or a CLI command off the runtime).

mod sigv4;

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::blocking::Client;
use reqwest::{Method, StatusCode};
use serde::Deserialize;

use super::store::{ObjectInfo, Store, StoreError};
use super::S3Settings;
use crate::clock::Clock;
use crate::domain::Secret;

/// A dead endpoint is reported within this, so the shipper retries soon.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A whole request, upload included: snapshots are tens of MB at most.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// ListObjectsV2 returns at most 1,000 keys a page (`max-keys`).
const PAGE_SIZE: u32 = 1000;

/// Access keys for S3. The secret and the session token are `Secret`s: `Debug`
/// shows neither, and no message includes them.
pub struct Credentials {
    access_key_id: String,
    secret_access_key: Secret,
    session_token: Option<Secret>,
}

impl Credentials {
    pub fn new(access_key_id: &str, secret_access_key: &str, session_token: Option<&str>) -> Self {
        Self {
            access_key_id: access_key_id.trim().to_string(),
            secret_access_key: Secret::from_string(secret_access_key.trim().to_string()),
            session_token: session_token.map(|t| Secret::from_string(t.trim().to_string())),
        }
    }

    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and, for temporary credentials,
    /// `AWS_SESSION_TOKEN`; `None` when either key is unset or empty.
    pub fn from_env() -> Option<Self> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let id = get("AWS_ACCESS_KEY_ID")?;
        let secret = get("AWS_SECRET_ACCESS_KEY")?;
        Some(Self::new(&id, &secret, get("AWS_SESSION_TOKEN").as_deref()))
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

/// One bucket and key prefix: object `name` is the key `prefix/name` (`name` alone
/// when the prefix is empty).
pub struct S3Store {
    describe: String,
    key_prefix: String,
    /// `scheme://host[:port]` as requests go out; the bucket is in the host when
    /// addressing is virtual-hosted.
    origin: String,
    host: String,
    /// Encoded path up to the bucket's root: the endpoint's own path, then `/bucket`
    /// with path-style addressing.
    root: String,
    region: String,
    credentials: Credentials,
    /// SigV4 signs the real time (S3 refuses a skew over 15 minutes), never a test's
    /// moved clock.
    clock: Clock,
    page_size: u32,
    timeout: Duration,
    client: OnceLock<Result<Client, String>>,
}

impl S3Store {
    /// The store for `s3://bucket/prefix`, with credentials from the environment.
    pub fn new(bucket: &str, prefix: &str, settings: &S3Settings) -> Result<Self, String> {
        let Some(credentials) = Credentials::from_env() else {
            return Err(format!(
                "{}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
                describe(bucket, prefix)
            ));
        };
        Self::with_credentials(bucket, prefix, settings, credentials)
    }

    pub fn with_credentials(
        bucket: &str,
        prefix: &str,
        settings: &S3Settings,
        credentials: Credentials,
    ) -> Result<Self, String> {
        let prefix = prefix.trim_matches('/');
        let describe = describe(bucket, prefix);
        if bucket.is_empty()
            || !bucket
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        {
            return Err(format!("{describe}: `{bucket}` is not a bucket name"));
        }
        let region = settings.region.trim();
        if region.is_empty() || !region.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(format!("{describe}: `{region}` is not a region"));
        }
        let endpoint = match &settings.endpoint {
            Some(url) => url.clone(),
            None => url::Url::parse(&format!("https://s3.{region}.amazonaws.com"))
                .map_err(|e| format!("{describe}: region `{region}`: {e}"))?,
        };
        let Some(endpoint_host) = endpoint.host_str() else {
            return Err(format!("{describe}: the endpoint {endpoint} has no host"));
        };
        // Host as the HTTP client will send it: the port only when not the default.
        let authority = match endpoint.port() {
            Some(port) => format!("{endpoint_host}:{port}"),
            None => endpoint_host.to_string(),
        };
        let base = endpoint.path().trim_end_matches('/');
        let (host, root) = if settings.path_style {
            (authority, format!("{base}/{bucket}"))
        } else {
            (format!("{bucket}.{authority}"), base.to_string())
        };
        Ok(Self {
            describe,
            key_prefix: if prefix.is_empty() {
                String::new()
            } else {
                format!("{prefix}/")
            },
            origin: format!("{}://{host}", endpoint.scheme()),
            host,
            root,
            region: region.to_string(),
            credentials,
            clock: Clock::system(),
            page_size: PAGE_SIZE,
            timeout: REQUEST_TIMEOUT,
            client: OnceLock::new(),
        })
    }

    /// Smaller listing pages and a shorter request timeout, so tests reach paging and
    /// timeouts without thousands of objects or a minute's wait.
    #[cfg(feature = "testing")]
    pub fn with_limits(mut self, page_size: u32, timeout: Duration) -> Self {
        self.page_size = page_size.clamp(1, PAGE_SIZE);
        self.timeout = timeout;
        self
    }

    /// Built on first use, on the caller's thread: the blocking client runs a runtime
    /// of its own, which must not start inside (or be dropped by) an async context.
    fn client(&self) -> Result<&Client, String> {
        self.client
            .get_or_init(|| {
                Client::builder()
                    .connect_timeout(CONNECT_TIMEOUT.min(self.timeout))
                    .timeout(self.timeout)
                    .redirect(reqwest::redirect::Policy::none())
                    .user_agent(concat!("tessera/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| format!("HTTP client: {}", root_cause(&e)))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    fn object_path(&self, name: &str) -> Result<String, StoreError> {
        if name.is_empty() || name.split('/').any(|p| p.is_empty() || p == "." || p == "..") {
            return Err(StoreError::Failed(format!(
                "{}: `{name}` is not an object name",
                self.describe
            )));
        }
        Ok(format!(
            "{}/{}",
            self.root,
            sigv4::encode_path(&format!("{}{name}", self.key_prefix))
        ))
    }

    /// One signed request; the error is the one-line reason (transport) for `fail`.
    fn call(&self, method: Method, path: &str, query: &[(&str, String)], body: Vec<u8>) -> Result<Reply, String> {
        let client = self.client()?;
        let payload_sha256 = sigv4::sha256_hex(&body);
        let mut extra = Vec::new();
        if let Some(token) = &self.credentials.session_token {
            extra.push(("x-amz-security-token", token.expose().to_string()));
        }
        let path = if path.is_empty() { "/" } else { path };
        let request = sigv4::Request {
            method: method.as_str(),
            path,
            query,
            host: &self.host,
            headers: &extra,
            payload_sha256: &payload_sha256,
        };
        let key = sigv4::Key {
            access_key_id: &self.credentials.access_key_id,
            secret_access_key: self.credentials.secret_access_key.expose(),
            region: &self.region,
        };
        let signed = sigv4::sign(&request, &key, &sigv4::amz_date(self.clock.now()));
        let query = sigv4::canonical_query(query);
        let url = if query.is_empty() {
            format!("{}{path}", self.origin)
        } else {
            format!("{}{path}?{query}", self.origin)
        };
        let mut builder = client.request(method, url).body(body);
        for (name, value) in extra.iter().chain(signed.iter()) {
            builder = builder.header(*name, value);
        }
        let response = builder.send().map_err(|e| self.transport(&e))?;
        let status = response.status();
        let body = response.bytes().map_err(|e| self.transport(&e))?;
        Ok(Reply {
            status,
            body: body.to_vec(),
        })
    }

    fn transport(&self, e: &reqwest::Error) -> String {
        if e.is_timeout() {
            let limit = if e.is_connect() {
                CONNECT_TIMEOUT.min(self.timeout)
            } else {
                self.timeout
            };
            format!("{}: no answer within {}s", self.origin, limit.as_secs_f32())
        } else if e.is_connect() {
            format!("cannot connect to {}: {}", self.origin, root_cause(e))
        } else {
            format!("{}: {}", self.origin, root_cause(e))
        }
    }

    fn fail(&self, op: &str, name: &str, detail: &str) -> StoreError {
        if name.is_empty() {
            StoreError::Failed(format!("{}: {op}: {detail}", self.describe))
        } else {
            StoreError::Failed(format!("{}: {op} {name}: {detail}", self.describe))
        }
    }

    fn list_page(&self, prefix: &str, token: Option<&str>) -> Result<ListPage, StoreError> {
        let mut query = vec![
            ("list-type", "2".to_string()),
            ("max-keys", self.page_size.to_string()),
            ("prefix", format!("{}{prefix}", self.key_prefix)),
        ];
        if let Some(token) = token {
            query.push(("continuation-token", token.to_string()));
        }
        let reply = self
            .call(Method::GET, &self.root, &query, Vec::new())
            .map_err(|e| self.fail("LIST", prefix, &e))?;
        if reply.status != StatusCode::OK {
            return Err(self.fail("LIST", prefix, &reply.describe()));
        }
        let text =
            std::str::from_utf8(&reply.body).map_err(|_| self.fail("LIST", prefix, "the listing is not UTF-8"))?;
        quick_xml::de::from_str(text).map_err(|e| self.fail("LIST", prefix, &format!("unreadable listing: {e}")))
    }
}

impl Store for S3Store {
    fn put(&self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let path = self.object_path(name)?;
        // A single PutObject is atomic: readers see the old object or the new one.
        let reply = self
            .call(Method::PUT, &path, &[], bytes.to_vec())
            .map_err(|e| self.fail("PUT", name, &e))?;
        match reply.status {
            StatusCode::OK | StatusCode::CREATED | StatusCode::NO_CONTENT => Ok(()),
            _ => Err(self.fail("PUT", name, &reply.describe())),
        }
    }

    fn get(&self, name: &str) -> Result<Vec<u8>, StoreError> {
        let path = self.object_path(name)?;
        let reply = self
            .call(Method::GET, &path, &[], Vec::new())
            .map_err(|e| self.fail("GET", name, &e))?;
        match reply.status {
            StatusCode::OK => Ok(reply.body),
            // A missing bucket is a broken target, not a missing object.
            StatusCode::NOT_FOUND if reply.code().is_none_or(|c| c == "NoSuchKey") => {
                Err(StoreError::NotFound(name.to_string()))
            }
            _ => Err(self.fail("GET", name, &reply.describe())),
        }
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, StoreError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let page = self.list_page(prefix, token.as_deref())?;
            for entry in page.contents {
                let Some(name) = entry.key.strip_prefix(&self.key_prefix) else {
                    continue;
                };
                if !name.is_empty() && name.starts_with(prefix) {
                    out.push(ObjectInfo {
                        name: name.to_string(),
                        size: entry.size,
                    });
                }
            }
            if !page.is_truncated {
                break;
            }
            match page.next_continuation_token {
                // The same token again would loop for ever.
                Some(next) if !next.is_empty() && token.as_deref() != Some(next.as_str()) => token = Some(next),
                _ => return Err(self.fail("LIST", prefix, "a truncated listing without a new continuation token")),
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn delete(&self, name: &str) -> Result<(), StoreError> {
        let path = self.object_path(name)?;
        let reply = self
            .call(Method::DELETE, &path, &[], Vec::new())
            .map_err(|e| self.fail("DELETE", name, &e))?;
        match reply.status {
            StatusCode::OK | StatusCode::NO_CONTENT => Ok(()),
            // S3 answers 204 for a missing key; some compatible stores say 404.
            StatusCode::NOT_FOUND if reply.code().is_none_or(|c| c == "NoSuchKey") => Ok(()),
            _ => Err(self.fail("DELETE", name, &reply.describe())),
        }
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }
}

fn describe(bucket: &str, prefix: &str) -> String {
    if prefix.is_empty() {
        format!("s3://{bucket}")
    } else {
        format!("s3://{bucket}/{prefix}")
    }
}

/// The innermost error of a chain ("Connection refused (os error 111)"), which says
/// more than reqwest's outer "error sending request for url (…)".
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string().replace(['\n', '\r'], " ")
}

struct Reply {
    status: StatusCode,
    body: Vec<u8>,
}

impl Reply {
    /// The `Code` of an S3 error document ("Error Responses" in the S3 API
    /// reference), when the body is one.
    fn code(&self) -> Option<String> {
        #[derive(Deserialize)]
        struct ErrorDoc {
            #[serde(rename = "Code")]
            code: String,
        }
        let text = std::str::from_utf8(&self.body).ok()?;
        let doc: ErrorDoc = quick_xml::de::from_str(text).ok()?;
        let code: String = doc.code.chars().filter(char::is_ascii_alphanumeric).take(64).collect();
        (!code.is_empty()).then_some(code)
    }

    /// `403 SignatureDoesNotMatch`, or `502 Bad Gateway` when there is no error code.
    fn describe(&self) -> String {
        match self.code() {
            Some(code) => format!("{} {code}", self.status.as_u16()),
            None => self.status.to_string(),
        }
    }
}

/// One ListObjectsV2 response page; other elements are ignored.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListPage {
    #[serde(default)]
    contents: Vec<ListEntry>,
    #[serde(default)]
    is_truncated: bool,
    next_continuation_token: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListEntry {
    key: String,
    size: u64,
}

#[cfg(test)]
mod tests;
