//! Registration and assertion checked against a software authenticator.

use super::*;
use crate::crypto::webauthn_testing::Authenticator;

fn rp() -> RelyingParty {
    RelyingParty::of_issuer("https://id.example.com/tessera").unwrap()
}

#[test]
fn the_relying_party_is_the_issuer_host_and_origin() {
    let rp = rp();
    assert_eq!(
        (rp.id.as_str(), rp.origin.as_str()),
        ("id.example.com", "https://id.example.com")
    );
}

#[test]
fn registers_and_verifies_an_es256_passkey() {
    let rp = rp();
    let mut a = Authenticator::new(&rp).unwrap();
    let (cdj, att) = a.create("challenge-1");
    let (challenge, cred) = register(&rp, &cdj, &att).unwrap();
    assert_eq!(challenge, "challenge-1");
    assert_eq!((cred.alg, cred.id.clone()), ("ES256", a.credential_id.clone()));
    let (cdj, ad, sig) = a.get("challenge-2");
    let ok = verify_assertion(&rp, &cdj, &ad, &sig, &cred.public_jwk, cred.alg, cred.sign_count).unwrap();
    assert_eq!(ok.challenge, "challenge-2");
    assert!(ok.sign_count > cred.sign_count);
}

#[test]
fn refuses_forgeries_replays_and_foreign_sites() {
    let rp = rp();
    let mut a = Authenticator::new(&rp).unwrap();
    let (cdj, att) = a.create("c");
    let (_, cred) = register(&rp, &cdj, &att).unwrap();
    let (cdj, ad, mut sig) = a.get("c2");
    let verify = |cdj: &[u8], ad: &[u8], sig: &[u8], count| {
        verify_assertion(&rp, cdj, ad, sig, &cred.public_jwk, cred.alg, count)
    };
    assert!(verify(&cdj, &ad, &sig, 0).is_ok());
    assert_eq!(
        verify(&cdj, &ad, &sig, 5_000).unwrap_err(),
        Refused("the authenticator's counter went backwards")
    );
    let mut tampered = ad.clone();
    tampered[36] ^= 1;
    assert!(
        verify(&cdj, &tampered, &sig, 0).is_err(),
        "authenticator data is signed"
    );
    let last = sig.len() - 1;
    sig[last] ^= 1;
    assert!(verify(&cdj, &ad, &sig, 0).is_err());

    let other = RelyingParty::of_issuer("https://evil.example").unwrap();
    let (cdj, ad, sig) = Authenticator::new(&other).unwrap().get_with(&a, "c3");
    assert!(verify(&cdj, &ad, &sig, 0).is_err(), "another origin and rp id");
    let (cdj, att) = a.create("c4");
    assert!(
        verify(&cdj, &att, &[], 0).is_err(),
        "a registration is not an assertion"
    );
    let (cdj, att) = Authenticator::without_user_verification(&rp).unwrap().create("c5");
    assert_eq!(
        register(&rp, &cdj, &att).unwrap_err(),
        Refused("the user was not verified by the authenticator")
    );
}

proptest::proptest! {
    /// Whatever a browser (or an attacker) posts, the parsers answer, never panic.
    #[test]
    fn arbitrary_input_is_refused_without_panicking(
        cdj in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
        blob in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
        sig in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80),
    ) {
        let rp = rp();
        let _ = register(&rp, &cdj, &blob);
        let _ = verify_assertion(&rp, &cdj, &blob, &sig, r#"{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}"#, "ES256", 0);
        let _ = der_to_raw(&sig);
        let _ = parse_auth_data(&blob);
        let _ = cose_to_jwk(&blob);
    }

    /// A real registration with one byte of its authenticator data changed fails.
    #[test]
    fn any_changed_byte_of_authenticator_data_is_caught(at in 0usize..37, bit in 0u8..8) {
        let rp = rp();
        let mut a = Authenticator::new(&rp).unwrap();
        let (cdj, att) = a.create("c");
        let (_, cred) = register(&rp, &cdj, &att).unwrap();
        let (cdj, mut ad, sig) = a.get("c2");
        ad[at] ^= 1 << bit;
        proptest::prop_assert!(verify_assertion(&rp, &cdj, &ad, &sig, &cred.public_jwk, cred.alg, 0).is_err());
    }
}

#[test]
fn der_signatures_become_fixed_size() {
    let der = [0x30, 0x08, 0x02, 0x02, 0x00, 0x80, 0x02, 0x02, 0x01, 0x02];
    let raw = der_to_raw(&der).unwrap();
    assert_eq!(raw.len(), 64);
    assert_eq!((raw[31], raw[63], raw[62]), (0x80, 0x02, 0x01));
    assert!(der_to_raw(&[0x30, 0x01, 0x00]).is_none());
}
