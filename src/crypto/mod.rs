//! Keys, JWT signing and verification, random bearer values and their hashes.
//! The only module that uses josekit.

pub mod assertion;
pub mod dpop;
pub mod jwt;
pub mod keys;
pub mod password;
pub mod pem;
pub mod random;
pub mod request_jwt;
pub mod sealed;
mod signed;
pub mod webauthn;
#[cfg(any(test, feature = "testing"))]
pub mod webauthn_testing;

pub use jwt::{JwtError, Signed};
pub use keys::{KeyError, KeyStore, SigningKeyRecord};
pub use random::{sha256, sha256_b64, TokenHash};

/// Compares two numbers without a data-dependent branch (one-time codes).
pub fn ct_eq_u32(a: u32, b: u32) -> bool {
    use subtle::ConstantTimeEq;
    bool::from(a.ct_eq(&b))
}
