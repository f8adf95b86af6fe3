//! The grant types of the token endpoint (RFC 6749 §4, RFC 8628 §3.4), parsed once.

use super::{refuse, ParseError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantType {
    AuthorizationCode,
    RefreshToken,
    ClientCredentials,
    DeviceCode,
}

impl GrantType {
    pub const ALL: [GrantType; 4] = [
        GrantType::AuthorizationCode,
        GrantType::RefreshToken,
        GrantType::ClientCredentials,
        GrantType::DeviceCode,
    ];

    pub fn parse(s: &str) -> Result<Self, ParseError> {
        Self::ALL
            .into_iter()
            .find(|g| g.as_str() == s)
            .map_or_else(|| refuse("this grant type is not supported"), Ok)
    }

    /// The registered name, as in `grant_type` and a client's `grant_types`.
    pub const fn as_str(self) -> &'static str {
        match self {
            GrantType::AuthorizationCode => "authorization_code",
            GrantType::RefreshToken => "refresh_token",
            GrantType::ClientCredentials => "client_credentials",
            GrantType::DeviceCode => "urn:ietf:params:oauth:grant-type:device_code",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_refused() {
        for g in GrantType::ALL {
            assert_eq!(GrantType::parse(g.as_str()), Ok(g));
        }
        assert!(GrantType::parse("password").is_err());
        assert!(GrantType::parse("").is_err());
    }
}
