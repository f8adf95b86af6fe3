//! A verified token, as verification returns it and the key set remembers it.

use serde_json::{Map, Value};

/// A verified token: its header type and claims.
#[derive(Debug, Clone)]
pub struct Signed {
    pub typ: Option<String>,
    pub alg: String,
    pub claims: Map<String, Value>,
}

impl Signed {
    /// Whether this is one of our ID tokens: `typ` JWT and no `events` claim, so
    /// neither an access token (`at+jwt`) nor a logout token (`logout+jwt`, which
    /// carries `events`) passes for one.
    pub fn is_id_token(&self) -> bool {
        self.typ.as_deref() == Some("JWT") && !self.claims.contains_key("events")
    }
}
