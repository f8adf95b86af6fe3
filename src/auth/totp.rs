//! Time-based one-time passwords (RFC 6238 over RFC 4226 HOTP, HMAC-SHA-1, six digits,
//! 30-second steps), the `otpauth://` enrolment URI drawn as an SVG QR code, and
//! single-use recovery codes.

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha1::Sha1;

/// RFC 6238 §4: the time step X.
pub const STEP: i64 = 30;
/// RFC 6238 §5.2: one step either side absorbs clock drift and typing time.
const DRIFT: i64 = 1;
const DIGITS: u32 = 6;
/// RFC 4226 §4 R6: at least 128 bits of secret; 160 is what HMAC-SHA-1 takes whole.
const SECRET_BYTES: usize = 20;
pub const RECOVERY_CODES: usize = 10;

const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// RFC 4648 §6 base32 without padding, the form authenticator apps expect.
pub fn base32_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &b in bytes {
        buffer = (buffer << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(BASE32[((buffer >> bits) & 31) as usize]));
        }
    }
    if bits > 0 {
        out.push(char::from(BASE32[((buffer << (5 - bits)) & 31) as usize]));
    }
    out
}

pub fn base32_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 5 / 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for c in text.bytes().filter(|c| !matches!(c, b' ' | b'=')) {
        let v = BASE32.iter().position(|&a| a == c.to_ascii_uppercase())?;
        buffer = (buffer << 5) | v as u32;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
    }
    Some(out)
}

/// A fresh secret, base32-encoded.
pub fn new_secret() -> String {
    let mut bytes = [0u8; SECRET_BYTES];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    base32_encode(&bytes)
}

/// RFC 4226 §5.3: HOTP with dynamic truncation.
pub fn hotp(secret: &[u8], counter: u64) -> u32 {
    // HMAC accepts keys of any length; the error arm cannot happen.
    let Ok(mut mac) = Hmac::<Sha1>::new_from_slice(secret) else {
        return u32::MAX;
    };
    mac.update(&counter.to_be_bytes());
    let digest = mac.finalize().into_bytes();
    let offset = usize::from(digest[19] & 0x0f);
    let binary = u32::from_be_bytes([
        digest[offset] & 0x7f,
        digest[offset + 1],
        digest[offset + 2],
        digest[offset + 3],
    ]);
    binary % 10u32.pow(DIGITS)
}

pub fn step_at(unix: i64) -> i64 {
    unix.div_euclid(STEP)
}

/// The code an authenticator shows at `unix` time (used by tests and the enrol page's
/// own check).
pub fn code_at(secret_b32: &str, unix: i64) -> Option<String> {
    let key = base32_decode(secret_b32)?;
    let step = u64::try_from(step_at(unix)).ok()?;
    Some(format!("{:06}", hotp(&key, step)))
}

/// The time step a submitted code matches, within ±1 step of `now`, and only if that
/// step is later than `last_step` (RFC 6238 §5.2: a used code is not accepted again).
pub fn verify(secret_b32: &str, code: &str, now: i64, last_step: i64) -> Option<i64> {
    let code = code.trim().replace([' ', '-'], "");
    if code.len() != DIGITS as usize || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let wanted: u32 = code.parse().ok()?;
    let key = base32_decode(secret_b32)?;
    let current = step_at(now);
    (current - DRIFT..=current + DRIFT)
        .filter(|&s| s > last_step)
        .find(|&s| u64::try_from(s).is_ok_and(|c| crate::crypto::ct_eq_u32(hotp(&key, c), wanted)))
}

/// The key URI authenticator apps read from the QR code.
pub fn otpauth_uri(issuer_label: &str, username: &str, secret_b32: &str) -> String {
    let enc = |s: &str| {
        url::form_urlencoded::byte_serialize(s.as_bytes())
            .collect::<String>()
            .replace('+', "%20")
    };
    format!(
        "otpauth://totp/{}:{}?secret={secret_b32}&issuer={}&algorithm=SHA1&digits=6&period=30",
        enc(issuer_label),
        enc(username),
        enc(issuer_label)
    )
}

/// The URI as an inline SVG QR code, drawn on the server: no script, no external
/// service sees the secret.
pub fn qr_svg(data: &str) -> Option<String> {
    let code = qrcode::QrCode::with_error_correction_level(data.as_bytes(), qrcode::EcLevel::M).ok()?;
    Some(
        code.render::<qrcode::render::svg::Color<'_>>()
            .min_dimensions(200, 200)
            .quiet_zone(true)
            .build(),
    )
}

/// Ten recovery codes of 10 base32 characters (50 bits each), shown once as
/// `XXXXX-XXXXX`.
pub fn new_recovery_codes() -> Vec<String> {
    (0..RECOVERY_CODES)
        .map(|_| {
            let mut bytes = [0u8; 7];
            rand::rngs::OsRng.fill_bytes(&mut bytes);
            let text = base32_encode(&bytes);
            format!("{}-{}", &text[0..5], &text[5..10])
        })
        .collect()
}

/// The stored form of a recovery code: case, spaces and dashes do not matter.
pub fn normalise_recovery(code: &str) -> String {
    code.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238 Appendix B, SHA-1 rows (the eight-digit values, truncated to six).
    #[test]
    fn matches_the_rfc_6238_test_vectors() {
        let secret = base32_encode(b"12345678901234567890");
        for (t, expected) in [
            (59, "94287082"),
            (1111111109, "07081804"),
            (1111111111, "14050471"),
            (1234567890, "89005924"),
            (2000000000, "69279037"),
        ] {
            assert_eq!(code_at(&secret, t).unwrap(), expected[2..], "t = {t}");
        }
    }

    #[test]
    fn base32_round_trips_and_matches_rfc_4648() {
        assert_eq!(base32_encode(b"foobar"), "MZXW6YTBOI");
        assert_eq!(base32_decode("MZXW6YTBOI").unwrap(), b"foobar");
        let s = new_secret();
        assert_eq!(s.len(), 32);
        assert_eq!(base32_decode(&s).unwrap().len(), 20);
        assert!(base32_decode("not base32!").is_none());
    }

    #[test]
    fn accepts_one_step_of_drift_and_refuses_reuse() {
        let secret = new_secret();
        let now = 1_800_000_015;
        let step = step_at(now);
        let previous = code_at(&secret, now - STEP).unwrap();
        let next = code_at(&secret, now + STEP).unwrap();
        let far = code_at(&secret, now + 2 * STEP).unwrap();
        assert_eq!(verify(&secret, &previous, now, 0), Some(step - 1));
        assert_eq!(verify(&secret, &next, now, 0), Some(step + 1));
        assert_eq!(verify(&secret, &far, now, 0), None);
        let current = code_at(&secret, now).unwrap();
        assert_eq!(verify(&secret, &current, now, step), None, "a used step is refused");
        assert_eq!(verify(&secret, &previous, now, step - 1), None);
        assert_eq!(verify(&secret, "12345", now, 0), None);
        assert_eq!(verify(&secret, "abcdef", now, 0), None);
    }

    #[test]
    fn recovery_codes_are_distinct_and_normalise() {
        let codes = new_recovery_codes();
        assert_eq!(codes.len(), 10);
        let mut unique = codes.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 10);
        assert_eq!(normalise_recovery(" abcde-fghij "), "ABCDEFGHIJ");
    }

    #[test]
    fn draws_the_enrolment_uri_as_svg() {
        let uri = otpauth_uri("Tessera", "ada lovelace", "JBSWY3DPEHPK3PXP");
        assert!(uri.starts_with("otpauth://totp/Tessera:ada%20lovelace?secret=JBSWY3DPEHPK3PXP&issuer=Tessera"));
        let svg = qr_svg(&uri).unwrap();
        assert!(svg.contains("<svg") && svg.contains("<path"));
    }
}
