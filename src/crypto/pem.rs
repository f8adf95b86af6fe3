//! The PEM text of a stored private key, read into its DER bytes (RFC 7468).
//!
//! josekit's `signer_from_pem` reads PEM with a regular expression, which pulls the
//! whole `regex` engine into every start-up: compiling it costs about a megabyte of
//! code and heap that then stays resident for the life of the process. A PEM block is
//! a label and base64 between two fixed lines, so it is read here, and the key is
//! handed to `signer_from_der`, which accepts the same PKCS#8 (and PKCS#1 or SEC 1)
//! contents.

use base64::Engine;

/// The label and the DER bytes of the first PEM block in `text`.
///
/// As RFC 7468 §3 recommends for parsers, whitespace between the encapsulation
/// boundaries is ignored, as is text before the first boundary ("explanatory text",
/// §5.2); the label of the end line must be the label of the begin line.
pub fn decode(text: &str) -> Result<(String, Vec<u8>), String> {
    const BEGIN: &str = "-----BEGIN ";
    const DASHES: &str = "-----";
    let start = text.find(BEGIN).ok_or("no \"-----BEGIN\" line")?;
    let rest = &text[start + BEGIN.len()..];
    let label_end = rest.find(DASHES).ok_or("unterminated \"-----BEGIN\" line")?;
    let label = &rest[..label_end];
    if label.contains('\n') || label.contains('\r') {
        return Err("unterminated \"-----BEGIN\" line".into());
    }
    let body = &rest[label_end + DASHES.len()..];
    let end_line = format!("-----END {label}-----");
    let body_end = body.find(&end_line).ok_or_else(|| format!("no \"{end_line}\" line"))?;
    let encoded: Vec<u8> = body[..body_end].bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(&encoded)
        .map_err(|e| format!("bad base64 in the {label} block: {e}"))?;
    Ok((label.to_string(), der))
}

#[cfg(test)]
mod tests {
    use super::*;
    use josekit::jwk::alg::ed::EdCurve;
    use josekit::jws::{EdDSA, ES256, RS256};

    /// The DER read here is the key josekit reads from the same PEM itself.
    #[test]
    fn a_generated_key_reads_as_the_key_josekit_reads_from_its_pem() {
        let text = |pem: Vec<u8>| String::from_utf8(pem).unwrap();
        let rsa = text(RS256.generate_key_pair(2048).unwrap().to_pem_private_key());
        let (label, der) = decode(&rsa).unwrap();
        assert_eq!(label, "PRIVATE KEY");
        assert_eq!(
            RS256.key_pair_from_der(&der).unwrap().to_der_private_key(),
            RS256.key_pair_from_pem(&rsa).unwrap().to_der_private_key()
        );
        let ec = text(ES256.generate_key_pair().unwrap().to_pem_private_key());
        let (_, der) = decode(&ec).unwrap();
        assert_eq!(
            ES256.key_pair_from_der(&der).unwrap().to_der_private_key(),
            ES256.key_pair_from_pem(&ec).unwrap().to_der_private_key()
        );
        let ed = text(EdDSA.generate_key_pair(EdCurve::Ed25519).unwrap().to_pem_private_key());
        let (_, der) = decode(&ed).unwrap();
        assert_eq!(
            EdDSA.key_pair_from_der(&der).unwrap().to_der_private_key(),
            EdDSA.key_pair_from_pem(&ed).unwrap().to_der_private_key()
        );
    }

    #[test]
    fn line_endings_indentation_and_text_before_the_block_are_ignored() {
        let der = [0x30u8, 0x03, 0x02, 0x01, 0x05, 0xff, 0x00, 0x7f];
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        let (a, b) = b64.split_at(4);
        let text = format!(
            "Subject: test\r\n-----BEGIN EC PRIVATE KEY-----\r\n  {a}\r\n\t{b}\r\n-----END EC PRIVATE KEY-----\r\n"
        );
        assert_eq!(decode(&text).unwrap(), ("EC PRIVATE KEY".to_string(), der.to_vec()));
    }

    #[test]
    fn a_broken_block_is_refused_with_what_is_wrong() {
        let body = "MAMCAQU=";
        let no_begin = format!("{body}\n-----END PRIVATE KEY-----\n");
        assert!(decode(&no_begin).unwrap_err().contains("BEGIN"));
        let mismatched = format!("-----BEGIN PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\n");
        assert!(decode(&mismatched).unwrap_err().contains("-----END PRIVATE KEY-----"));
        let unterminated = format!("-----BEGIN PRIVATE KEY\n{body}\n-----END PRIVATE KEY-----\n");
        assert!(decode(&unterminated).is_err());
        let not_base64 = "-----BEGIN PRIVATE KEY-----\nMAMC*QU=\n-----END PRIVATE KEY-----\n";
        assert!(decode(not_base64).unwrap_err().contains("base64"));
    }
}
