//! The grant types of the token endpoint (RFC 6749 §4, RFC 8628 §3.4), parsed once.

use super::{refuse, ParseError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantType {
    AuthorizationCode,
    RefreshToken,
    ClientCredentials,
    DeviceCode,
    /// RFC 6749 §4.3, only for clients that opt in (RFC 9700 §2.4 says MUST NOT).
    Password,
}

impl GrantType {
    pub const ALL: [GrantType; 5] = [
        GrantType::AuthorizationCode,
        GrantType::RefreshToken,
        GrantType::ClientCredentials,
        GrantType::DeviceCode,
        GrantType::Password,
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
            GrantType::Password => "password",
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
        assert_eq!(GrantType::parse("password"), Ok(GrantType::Password));
        assert!(GrantType::parse("implicit").is_err());
        assert!(GrantType::parse("").is_err());
    }
}
