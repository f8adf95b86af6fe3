//! The JWS algorithms Tessera signs with, by their registered names.

/// JWS algorithms Tessera signs with (RFC 7518 §3; RFC 8037 for EdDSA).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Alg {
    Rs256,
    Es256,
    EdDsa,
}

impl Alg {
    pub const ALL: [Alg; 3] = [Alg::Rs256, Alg::Es256, Alg::EdDsa];

    pub fn as_str(self) -> &'static str {
        match self {
            Alg::Rs256 => "RS256",
            Alg::Es256 => "ES256",
            Alg::EdDsa => "EdDSA",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == s)
    }
}
