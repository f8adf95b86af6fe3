//! bcrypt (Provos and Mazières, 1999) for verifying passwords two at a time.
//!
//! bcrypt's cost is its key schedule: `2^cost` rounds of expanding a Blowfish state
//! with the password and with the salt, each expansion a chain of 521 encryptions in
//! which every one waits for the one before. A chain leaves most of a modern core idle
//! (each round is four dependent table lookups), so two independent chains, one per
//! password, interleaved in the same loop, run in little more than the time of one:
//! password crackers have long done this. The hashes are the standard `$2b$` ones,
//! byte for byte those of the `bcrypt` crate (which makes every new hash); the tests
//! check that against it, against the OpenBSD vectors and on random inputs. A crate of
//! its own so that it is optimised in debug builds too, like the `bcrypt` crate.

mod pi;

use base64::alphabet::BCRYPT;
use base64::engine::general_purpose::NO_PAD;
use base64::engine::GeneralPurpose;
use base64::Engine;
use subtle::ConstantTimeEq;

/// bcrypt's base64: its own alphabet, no padding.
const BASE64: GeneralPurpose = GeneralPurpose::new(&BCRYPT, NO_PAD);

/// The text every bcrypt encrypts 64 times: "OrpheanBeholderScryDoubt".
const MAGIC: [u32; 6] = [0x4f727068, 0x65616e42, 0x65686f6c, 0x64657253, 0x63727944, 0x6f756274];

/// A stored bcrypt hash, parsed: `$2b$` (or `$2a$`, `$2y$`, `$2x$`), the cost, the
/// 16-byte salt and the 23-byte digest.
#[derive(Clone, PartialEq, Eq)]
pub struct Hash {
    cost: u32,
    salt: [u8; 16],
    digest: [u8; 23],
}

impl std::fmt::Debug for Hash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hash").field("cost", &self.cost).finish_non_exhaustive()
    }
}

impl Hash {
    /// Parses a stored hash; `None` for anything the `bcrypt` crate would not verify
    /// against.
    pub fn parse(text: &str) -> Option<Self> {
        let rest = text.strip_prefix('$')?;
        let (version, rest) = rest.split_once('$')?;
        if !matches!(version, "2a" | "2b" | "2y" | "2x") {
            return None;
        }
        let (cost, rest) = rest.split_once('$')?;
        let cost: u32 = cost.parse().ok().filter(|c| (4..=31).contains(c))?;
        if rest.len() != 53 || !rest.is_char_boundary(22) {
            return None;
        }
        let (salt, digest) = rest.split_at(22);
        Some(Self {
            cost,
            salt: BASE64.decode(salt).ok()?.try_into().ok()?,
            digest: BASE64.decode(digest).ok()?.try_into().ok()?,
        })
    }

    pub fn cost(&self) -> u32 {
        self.cost
    }
}

/// Whether `password` is the one `hash` was made from.
pub fn verify(password: &[u8], hash: &Hash) -> bool {
    let [digest] = digests(hash.cost, [(&hash.salt, password)]);
    digest.ct_eq(&hash.digest).into()
}

/// Verifies two passwords at once, in about the time of one; `None` when the hashes'
/// costs differ (then each is verified alone).
pub fn verify_two(a: (&[u8], &Hash), b: (&[u8], &Hash)) -> Option<(bool, bool)> {
    if a.1.cost != b.1.cost {
        return None;
    }
    let [da, db] = digests(a.1.cost, [(&a.1.salt, a.0), (&b.1.salt, b.0)]);
    Some((da.ct_eq(&a.1.digest).into(), db.ct_eq(&b.1.digest).into()))
}

/// The key bcrypt expands with: the password's bytes and a NUL, at most 72 bytes.
fn key_of(password: &[u8]) -> Vec<u8> {
    let mut key = password.to_vec();
    key.push(0);
    key.truncate(72);
    key
}

/// Eighteen big-endian words read from `bytes` over and over (the key's P-array mix).
fn cycled_words(bytes: &[u8]) -> [u32; 18] {
    let mut words = [0u32; 18];
    let mut at = 0;
    for w in &mut words {
        for _ in 0..4 {
            *w = (*w << 8) | u32::from(bytes[at]);
            at = (at + 1) % bytes.len();
        }
    }
    words
}

/// A Blowfish state being expanded.
#[derive(Clone)]
struct State {
    p: [u32; 18],
    s: [[u32; 256]; 4],
}

#[inline(always)]
fn round(s: &[[u32; 256]; 4], x: u32) -> u32 {
    let [a, b, c, d] = x.to_be_bytes();
    (s[0][usize::from(a)].wrapping_add(s[1][usize::from(b)]) ^ s[2][usize::from(c)]).wrapping_add(s[3][usize::from(d)])
}

/// One Blowfish encryption in each of `N` states, step by step together, so that the
/// lanes' independent lookups overlap in the core.
#[inline(always)]
fn encrypt<const N: usize>(st: &[State; N], l: &mut [u32; N], r: &mut [u32; N]) {
    for i in (0..16).step_by(2) {
        for k in 0..N {
            l[k] ^= st[k].p[i];
        }
        for k in 0..N {
            r[k] ^= round(&st[k].s, l[k]);
        }
        for k in 0..N {
            r[k] ^= st[k].p[i + 1];
        }
        for k in 0..N {
            l[k] ^= round(&st[k].s, r[k]);
        }
    }
    for k in 0..N {
        let (nl, nr) = (r[k] ^ st[k].p[17], l[k] ^ st[k].p[16]);
        l[k] = nl;
        r[k] = nr;
    }
}

/// Expands each state with its `words` (mixed into the P-array), then re-encrypts
/// the whole state as one chain; with `SALTED` (the setup, once) each step first
/// mixes in the next two words of the lane's salt.
#[inline(always)]
fn expand<const N: usize, const SALTED: bool>(st: &mut [State; N], words: &[[u32; 18]; N], salt: &[[u32; 4]; N]) {
    for k in 0..N {
        for (p, w) in st[k].p.iter_mut().zip(&words[k]) {
            *p ^= w;
        }
    }
    let (mut l, mut r) = ([0u32; N], [0u32; N]);
    let mut half = 0;
    let mut step = |st: &mut [State; N], l: &mut [u32; N], r: &mut [u32; N]| {
        if SALTED {
            for k in 0..N {
                l[k] ^= salt[k][half];
                r[k] ^= salt[k][half + 1];
            }
            half ^= 2;
        }
        encrypt(st, l, r);
    };
    for i in 0..9 {
        step(st, &mut l, &mut r);
        for k in 0..N {
            st[k].p[2 * i] = l[k];
            st[k].p[2 * i + 1] = r[k];
        }
    }
    for b in 0..4 {
        for i in 0..128 {
            step(st, &mut l, &mut r);
            for k in 0..N {
                st[k].s[b][2 * i] = l[k];
                st[k].s[b][2 * i + 1] = r[k];
            }
        }
    }
}

/// The 23-byte digests of `N` (salt, password) pairs at one cost.
fn digests<const N: usize>(cost: u32, inputs: [(&[u8; 16], &[u8]); N]) -> [[u8; 23]; N] {
    let initial = State { p: pi::P, s: pi::S };
    let mut st: [State; N] = std::array::from_fn(|_| initial.clone());
    let keys: [[u32; 18]; N] = std::array::from_fn(|k| cycled_words(&key_of(inputs[k].1)));
    let salts: [[u32; 18]; N] = std::array::from_fn(|k| cycled_words(inputs[k].0));
    let salt_halves: [[u32; 4]; N] = std::array::from_fn(|k| [salts[k][0], salts[k][1], salts[k][2], salts[k][3]]);
    expand::<N, true>(&mut st, &keys, &salt_halves);
    for _ in 0..1u64 << cost {
        expand::<N, false>(&mut st, &keys, &salt_halves);
        expand::<N, false>(&mut st, &salts, &salt_halves);
    }
    let mut text = [MAGIC; N];
    for block in 0..3 {
        let mut l: [u32; N] = std::array::from_fn(|k| text[k][2 * block]);
        let mut r: [u32; N] = std::array::from_fn(|k| text[k][2 * block + 1]);
        for _ in 0..64 {
            encrypt(&st, &mut l, &mut r);
        }
        for k in 0..N {
            text[k][2 * block] = l[k];
            text[k][2 * block + 1] = r[k];
        }
    }
    std::array::from_fn(|k| {
        let mut out = [0u8; 23];
        let bytes: Vec<u8> = text[k].iter().flat_map(|w| w.to_be_bytes()).collect();
        out.copy_from_slice(&bytes[..23]);
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// OpenBSD's regression vectors (as in jBCrypt's tests): (password, hash).
    const VECTORS: &[(&str, &str)] = &[
        ("", "$2a$06$DCq7YPn5Rq63x1Lad4cll.TV4S6ytwfsfvkgY8jIucDrjc8deX1s."),
        ("a", "$2a$06$m0CrhHm10qJ3lXRY.5zDGO3rS2KdeeWLuGmsfGlMfOxih58VYVfxe"),
        ("abc", "$2a$06$If6bvum7DFjUnE9p2uDeDu0YHzrHM6tf.iqN8.yx.jNN1ILEf7h0i"),
        (
            "abcdefghijklmnopqrstuvwxyz",
            "$2a$06$.rCVZVOThsIa97pEDOxvGuRRgzG64bvtJ0938xuqzv18d3ZpQhstC",
        ),
        (
            "abcdefghijklmnopqrstuvwxyz",
            "$2a$08$aTsUwsyowQuzRrDqFflhgekJ8d9/7Z3GV3UcgvzQW3J5zMyrTvlz.",
        ),
        (
            "~!@#$%^&*()      ~!@#$%^&*()PNBFRD",
            "$2a$06$fPIsBO8qRqkjj273rfaOI.HtSV9jLDpTbZn782DC6/t7qT67P6FfO",
        ),
    ];

    #[test]
    fn the_openbsd_vectors_verify_alone_and_in_pairs() {
        for (password, stored) in VECTORS {
            let hash = Hash::parse(stored).expect("a well-formed vector");
            assert!(
                bcrypt::verify(password, stored).unwrap(),
                "the vector itself ({password})"
            );
            assert!(verify(password.as_bytes(), &hash), "{password}");
            assert!(!verify(b"not it", &hash));
            let other = Hash::parse(VECTORS[1].1).unwrap();
            if hash.cost == other.cost {
                assert_eq!(
                    verify_two((password.as_bytes(), &hash), (b"a", &other)),
                    Some((true, true))
                );
                assert_eq!(
                    verify_two((b"wrong", &hash), (b"a", &other)),
                    Some((false, true)),
                    "one lane's answer does not leak into the other's"
                );
            }
        }
    }

    #[test]
    fn only_well_formed_hashes_parse() {
        let good = bcrypt::hash_with_salt("x", 4, [9; 16]).unwrap().to_string();
        assert_eq!(Hash::parse(&good).map(|h| h.cost()), Some(4));
        let body = &good[7..];
        for bad in [
            String::new(),
            "!".into(),
            format!("$2b$03${body}"),
            format!("$2b$32${body}"),
            format!("$2c$04${body}"),
            format!("$2b$04${}", &body[1..]),
            format!("$2b$04$!{}", &body[1..]),
            format!("$2b$04${}é", &body[..52]),
        ] {
            assert!(Hash::parse(&bad).is_none(), "{bad}");
            assert!(
                !bcrypt::verify("x", &bad).unwrap_or(false),
                "the bcrypt crate refuses it too: {bad}"
            );
        }
        for version in ["2a", "2y", "2x"] {
            let other = format!("${version}${}", &good[4..]);
            assert!(Hash::parse(&other).is_some_and(|h| verify(b"x", &h)), "{other}");
        }
        assert!(
            verify_two(
                (b"x", &Hash::parse(&good).unwrap()),
                (b"x", &Hash::parse(VECTORS[0].1).unwrap())
            )
            .is_none(),
            "different costs are not paired"
        );
    }

    #[test]
    fn passwords_past_72_bytes_are_cut_as_the_bcrypt_crate_cuts_them() {
        let salt = [7u8; 16];
        for len in [70, 71, 72, 73, 100] {
            let password = "p".repeat(len);
            let stored = bcrypt::hash_with_salt(&password, 4, salt).unwrap().to_string();
            let hash = Hash::parse(&stored).unwrap();
            assert!(verify(password.as_bytes(), &hash), "{len} bytes");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn pairs_agree_with_the_bcrypt_crate_on_random_passwords_salts_and_costs(
            a in proptest::collection::vec(any::<u8>(), 0..90),
            b in proptest::collection::vec(any::<u8>(), 0..90),
            salt_a in any::<[u8; 16]>(),
            salt_b in any::<[u8; 16]>(),
            cost in 4u32..=12,
        ) {
            let ha = Hash::parse(&bcrypt::hash_with_salt(&a, cost, salt_a).unwrap().to_string()).unwrap();
            let hb = Hash::parse(&bcrypt::hash_with_salt(&b, cost, salt_b).unwrap().to_string()).unwrap();
            prop_assert_eq!(verify_two((&a, &ha), (&b, &hb)), Some((true, true)));
            prop_assert!(verify(&a, &ha));
            let mut wrong = b.clone();
            wrong.push(b'!');
            // Past 72 bytes a longer password is the same key.
            prop_assert_eq!(verify_two((&a, &ha), (&wrong, &hb)), Some((true, b.len() >= 72)));
        }
    }

    /// The higher costs, a few at a time (each doubles the time).
    #[test]
    fn higher_costs_agree_with_the_bcrypt_crate() {
        for cost in [7, 10, 12] {
            let (a, b) = (b"correct horse".as_slice(), b"battery staple".as_slice());
            let ha = Hash::parse(&bcrypt::hash_with_salt(a, cost, [1; 16]).unwrap().to_string()).unwrap();
            let hb = Hash::parse(&bcrypt::hash_with_salt(b, cost, [2; 16]).unwrap().to_string()).unwrap();
            assert_eq!(verify_two((a, &ha), (b, &hb)), Some((true, true)), "cost {cost}");
        }
    }
}
