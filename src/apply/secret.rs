//! Secrets an apply file references (`secret_env = "NAME"`, `secret_file = "PATH"`),
//! never holds: read when the file is read, so a missing one refuses the whole file.

use super::node::{Fields, Problem};
use crate::domain::Secret;

/// A secret read from where the file points.
pub struct SecretRef {
    /// The key that named it (`secret_env` or `secret_file`), where refusals point.
    pub key: &'static str,
    pub value: Secret,
}

/// The shortest secret taken for a client: 256 bits as Tessera's own are, and what
/// HS256 needs as a key (RFC 7518 §3.2).
pub const MIN_CLIENT_SECRET: usize = 32;
pub const MAX_SECRET: usize = 4096;

/// The entry's secret reference, read; `None` when it has none.
pub fn reference(f: &Fields<'_>) -> Result<Option<SecretRef>, Problem> {
    let env = f.str("secret_env")?;
    let file = f.str("secret_file")?;
    let (key, text) = match (env, file) {
        (Some(_), Some(_)) => {
            return Err(f
                .place
                .problem("secret_file", "give secret_env or secret_file, not both"))
        }
        (Some(name), None) => {
            let name = name.v.trim().to_string();
            let value = std::env::var(&name).map_err(|_| {
                f.place
                    .problem("secret_env", format!("the environment variable {name} is not set"))
            })?;
            ("secret_env", value)
        }
        (None, Some(path)) => {
            let value = std::fs::read_to_string(path.v.trim()).map_err(|e| {
                f.place
                    .problem("secret_file", format!("cannot read {}: {e}", path.v.trim()))
            })?;
            ("secret_file", value)
        }
        (None, None) => return Ok(None),
    };
    // A file written by `echo` ends in a newline that is no part of the secret.
    let value = text.trim_end_matches(['\n', '\r']).to_string();
    if value.trim().is_empty() {
        return Err(f.place.problem(key, "the secret is empty"));
    }
    if value.len() > MAX_SECRET || value.chars().any(char::is_control) {
        return Err(f.place.problem(
            key,
            format!("a secret is at most {MAX_SECRET} bytes, without control characters"),
        ));
    }
    Ok(Some(SecretRef {
        key,
        value: Secret::from_string(value),
    }))
}

/// Whether a client authenticating with `method` can take this secret.
pub fn fits_client(s: &SecretRef, method: &str) -> Result<(), String> {
    match method {
        "none" => Err("a public client has no secret".into()),
        "private_key_jwt" => Err("a private_key_jwt client signs with its keys and has no secret".into()),
        "client_secret_jwt" if s.value.expose().len() < 64 => {
            // The key of HS512, the strongest a client may sign with (RFC 7518 §3.2).
            Err("a client_secret_jwt secret is at least 64 characters".into())
        }
        _ if s.value.expose().len() < MIN_CLIENT_SECRET => {
            Err(format!("a client secret is at least {MIN_CLIENT_SECRET} characters"))
        }
        _ => Ok(()),
    }
}
