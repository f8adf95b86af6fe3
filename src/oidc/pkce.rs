//! Proof Key for Code Exchange (RFC 7636), S256 only: `plain` offers no protection
//! against a leaked authorization request (RFC 9700 §2.1.1).

use subtle::ConstantTimeEq;

use crate::crypto::sha256_b64;

/// code_verifier = 43*128unreserved (RFC 7636 §4.1); a challenge made by S256 is always
/// 43 characters of base64url.
fn is_unreserved(s: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

pub fn valid_challenge(challenge: &str) -> bool {
    challenge.len() == 43 && is_unreserved(challenge, 43, 43)
}

/// RFC 7636 §4.6: BASE64URL(SHA256(ASCII(code_verifier))) == code_challenge.
pub fn verify(verifier: &str, challenge: &str) -> bool {
    is_unreserved(verifier, 43, 128)
        && bool::from(sha256_b64(verifier.as_bytes()).as_bytes().ct_eq(challenge.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_appendix_b_example() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(valid_challenge(challenge));
        assert!(verify(verifier, challenge));
        assert!(!verify("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXX", challenge));
    }

    #[test]
    fn short_or_odd_verifiers_are_refused() {
        assert!(!verify("short", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
        assert!(!valid_challenge("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-c+"));
    }
}
