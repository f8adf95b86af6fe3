//! Where the SQLite file is shipped and copied: `--replicate-to`'s target, the S3
//! endpoint behind `s3://` targets, and the schedule of `--backup-dir` copies.

use std::path::PathBuf;

/// Where a replica lives: `file:///path`, a plain path, or `s3://bucket/prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Dir(PathBuf),
    S3 { bucket: String, prefix: String },
}

impl Target {
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if let Some(rest) = t.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            let bucket_ok = (3..=63).contains(&bucket.len())
                && bucket
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
            if !bucket_ok {
                return Err(format!(
                    "`{bucket}` is not an S3 bucket name (3-63 of a-z, 0-9, - and .)"
                ));
            }
            let prefix = prefix.trim_matches('/');
            if prefix.split('/').any(|p| p == "." || p == "..") || prefix.contains("//") {
                return Err(format!("`{prefix}` is not a usable key prefix"));
            }
            return Ok(Target::S3 {
                bucket: bucket.to_string(),
                prefix: prefix.to_string(),
            });
        }
        let path = match t.strip_prefix("file://") {
            Some(rest) if rest.starts_with('/') => rest,
            Some(_) => return Err(format!("`{t}` is not a file URL: use file:///absolute/path")),
            None => t,
        };
        if path.is_empty() {
            return Err("the target is empty".into());
        }
        if t.contains("://") && !t.starts_with("file://") {
            return Err(format!(
                "`{t}`: a target is a directory, file:///path or s3://bucket/prefix"
            ));
        }
        Ok(Target::Dir(PathBuf::from(path)))
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Dir(path) => write!(f, "{}", path.display()),
            Target::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "s3://{bucket}"),
            Target::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

/// The endpoint, region and addressing of S3-compatible storage. Credentials are not
/// settings: they come from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and
/// `AWS_SESSION_TOKEN` when a store opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Settings {
    /// `None`: AWS itself (`https://s3.REGION.amazonaws.com`).
    pub endpoint: Option<url::Url>,
    pub region: String,
    /// Path-style addressing (`ENDPOINT/bucket/key`), which MinIO, Garage and most
    /// self-hosted stores need; virtual-hosted style otherwise.
    pub path_style: bool,
}

impl Default for S3Settings {
    fn default() -> Self {
        Self {
            endpoint: None,
            region: "us-east-1".into(),
            path_style: false,
        }
    }
}

impl S3Settings {
    /// From the flags (`--s3-endpoint`, `--s3-region`, `--s3-path-style`), falling back
    /// to the AWS variables (`AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, `AWS_REGION`,
    /// `AWS_DEFAULT_REGION`). Path style is the default with a custom endpoint.
    pub fn load(endpoint: Option<String>, region: Option<String>, path_style: Option<String>) -> Result<Self, String> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let endpoint = endpoint
            .filter(|v| !v.trim().is_empty())
            .or_else(|| env("AWS_ENDPOINT_URL_S3"))
            .or_else(|| env("AWS_ENDPOINT_URL"));
        let endpoint = match endpoint {
            Some(e) => {
                let url = url::Url::parse(e.trim()).map_err(|_| format!("`{e}` is not a URL"))?;
                if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
                    return Err(format!("`{e}` is not an http(s) URL"));
                }
                Some(url)
            }
            None => None,
        };
        let region = region
            .filter(|v| !v.trim().is_empty())
            .or_else(|| env("AWS_REGION"))
            .or_else(|| env("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| "us-east-1".into());
        let path_style = match path_style.as_deref().map(str::trim) {
            None | Some("") => endpoint.is_some(),
            Some("true") => true,
            Some("false") => false,
            Some(other) => return Err(format!("s3_path_style `{other}` is not true or false")),
        };
        Ok(Self {
            endpoint,
            region: region.trim().to_string(),
            path_style,
        })
    }
}

/// `serve --backup-dir DIR --backup-every 1h --backup-keep 48`.
#[derive(Debug, Clone)]
pub struct BackupSchedule {
    pub dir: PathBuf,
    /// Seconds between two copies (at least 1).
    pub every: u64,
    /// Copies kept; older ones are deleted.
    pub keep: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_as_documented() {
        assert_eq!(Target::parse("/var/lib/r").unwrap(), Target::Dir("/var/lib/r".into()));
        assert_eq!(
            Target::parse("file:///var/lib/r").unwrap(),
            Target::Dir("/var/lib/r".into())
        );
        assert_eq!(
            Target::parse("s3://my-bucket/tessera/prod/").unwrap(),
            Target::S3 {
                bucket: "my-bucket".into(),
                prefix: "tessera/prod".into()
            }
        );
        assert!(Target::parse("s3://B/x").is_err());
        assert!(Target::parse("file://relative").is_err());
        assert!(Target::parse("gs://bucket").is_err());
        assert!(Target::parse("s3://bucket/../x").is_err());
    }
}
