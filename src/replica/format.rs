//! The objects a replica holds. Each is an envelope around one body:
//! `TSRP`, a version byte and a flags byte, then either the body and its SHA-256, or,
//! with a master key, a 96-bit nonce and the body under AES-256-GCM with a key
//! derived from the master key (HKDF, `crypto::sealed`) and the object's name as
//! associated data, so an object cannot be renamed into another's place.
//!
//! Bodies: a snapshot (`SNP1`: page size, step, time, the database file) or a log
//! segment (`WAL1`: page size, then transactions, each with its step, time and pages).
//! Integers are little-endian.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::crypto::sealed::MasterKey;
use crate::db::Frame;

const MAGIC: &[u8; 4] = b"TSRP";
const VERSION: u8 = 1;
const SEALED: u8 = 1;

/// The replica's encryption key, derived from the master key.
pub struct ObjectKey(Aes256Gcm);

impl ObjectKey {
    pub fn from_master(master: &MasterKey) -> Self {
        let key = master.derive(b"tessera replication v1 aes-256-gcm");
        Self(Aes256Gcm::new(&key.into()))
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FormatError {
    #[error(
        "the replica is encrypted: set the master key it was written with (TESSERA_MASTER_KEY or --master-key-file)"
    )]
    NeedsKey,
    #[error("the master key does not open the replica (a different key, or the object {0} was altered)")]
    WrongKey(String),
    #[error("object {0} is damaged: {1}")]
    Corrupt(String, String),
}

/// Whether an object's envelope says it is encrypted (`None`: not one of ours).
pub fn is_sealed(bytes: &[u8]) -> Option<bool> {
    (bytes.len() >= 6 && &bytes[..4] == MAGIC && bytes[4] == VERSION).then(|| bytes[5] & SEALED != 0)
}

pub fn wrap(key: Option<&ObjectKey>, name: &str, body: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(body.len() + 64);
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    match key {
        None => {
            out.push(0);
            out.extend_from_slice(body);
            out.extend_from_slice(&Sha256::digest(body));
        }
        Some(ObjectKey(cipher)) => {
            out.push(SEALED);
            let mut nonce = [0u8; 12];
            rand::rngs::OsRng.fill_bytes(&mut nonce);
            let sealed = cipher
                .encrypt(
                    Nonce::from_slice(&nonce),
                    Payload {
                        msg: body,
                        aad: name.as_bytes(),
                    },
                )
                .map_err(|_| "encryption failed".to_string())?;
            out.extend_from_slice(&nonce);
            out.extend_from_slice(&sealed);
        }
    }
    Ok(out)
}

pub fn unwrap(key: Option<&ObjectKey>, name: &str, bytes: &[u8]) -> Result<Vec<u8>, FormatError> {
    let corrupt = |why: &str| FormatError::Corrupt(name.to_string(), why.to_string());
    let sealed = is_sealed(bytes).ok_or_else(|| corrupt("not a Tessera replica object"))?;
    let rest = &bytes[6..];
    if !sealed {
        if rest.len() < 32 {
            return Err(corrupt("too short"));
        }
        let (body, sum) = rest.split_at(rest.len() - 32);
        if Sha256::digest(body).as_slice() != sum {
            return Err(corrupt("its checksum does not match"));
        }
        return Ok(body.to_vec());
    }
    let ObjectKey(cipher) = key.ok_or(FormatError::NeedsKey)?;
    if rest.len() < 12 + 16 {
        return Err(corrupt("too short"));
    }
    let (nonce, sealed) = rest.split_at(12);
    cipher
        .decrypt(
            Nonce::from_slice(nonce),
            Payload {
                msg: sealed,
                aad: name.as_bytes(),
            },
        )
        .map_err(|_| FormatError::WrongKey(name.to_string()))
}

/// The transactions read from the log in one pass, numbered in a generation's order
/// (`seq`), with the time they were read; compaction joins consecutive ones of the
/// same second into one (`from..=seq`), each page's last version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub from: u64,
    pub seq: u64,
    pub ts_ms: i64,
    pub frames: Vec<Frame>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub page_size: u32,
    /// The state after every commit up to this position.
    pub step: u64,
    pub ts_ms: i64,
    pub db: Vec<u8>,
}

pub fn encode_snapshot(s: &Snapshot) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.db.len() + 32);
    out.extend_from_slice(b"SNP1");
    out.extend_from_slice(&s.page_size.to_le_bytes());
    out.extend_from_slice(&s.step.to_le_bytes());
    out.extend_from_slice(&s.ts_ms.to_le_bytes());
    out.extend_from_slice(&(s.db.len() as u64).to_le_bytes());
    out.extend_from_slice(&s.db);
    out
}

pub fn encode_wal(page_size: u32, commits: &[Commit]) -> Vec<u8> {
    let size: usize = commits.iter().flat_map(|c| &c.frames).map(|f| f.data.len() + 8).sum();
    let mut out = Vec::with_capacity(size + 12 + commits.len() * 20);
    out.extend_from_slice(b"WAL1");
    out.extend_from_slice(&page_size.to_le_bytes());
    out.extend_from_slice(&(commits.len() as u32).to_le_bytes());
    for c in commits {
        out.extend_from_slice(&c.from.to_le_bytes());
        out.extend_from_slice(&c.seq.to_le_bytes());
        out.extend_from_slice(&c.ts_ms.to_le_bytes());
        out.extend_from_slice(&(c.frames.len() as u32).to_le_bytes());
        for f in &c.frames {
            out.extend_from_slice(&f.pgno.to_le_bytes());
            out.extend_from_slice(&f.db_size.to_le_bytes());
            out.extend_from_slice(&f.data);
        }
    }
    out
}

/// A cursor that fails, rather than panics, on a short body.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(out)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)?.try_into().ok().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8)?.try_into().ok().map(u64::from_le_bytes)
    }
    fn i64(&mut self) -> Option<i64> {
        self.take(8)?.try_into().ok().map(i64::from_le_bytes)
    }
}

pub fn decode_snapshot(name: &str, body: &[u8]) -> Result<Snapshot, FormatError> {
    let mut r = Reader { bytes: body, at: 0 };
    let parsed = (|| {
        if r.take(4)? != b"SNP1" {
            return None;
        }
        let (page_size, step, ts_ms, len) = (r.u32()?, r.u64()?, r.i64()?, r.u64()?);
        let db = r.take(usize::try_from(len).ok()?)?.to_vec();
        (r.at == body.len()).then_some(Snapshot {
            page_size,
            step,
            ts_ms,
            db,
        })
    })();
    parsed.ok_or_else(|| FormatError::Corrupt(name.to_string(), "not a snapshot".into()))
}

pub fn decode_wal(name: &str, body: &[u8]) -> Result<(u32, Vec<Commit>), FormatError> {
    let mut r = Reader { bytes: body, at: 0 };
    let parsed = (|| {
        if r.take(4)? != b"WAL1" {
            return None;
        }
        let page_size = r.u32()?;
        let count = r.u32()?;
        let mut commits = Vec::new();
        for _ in 0..count {
            let (from, seq, ts_ms, n) = (r.u64()?, r.u64()?, r.i64()?, r.u32()?);
            let mut frames = Vec::new();
            for _ in 0..n {
                let (pgno, db_size) = (r.u32()?, r.u32()?);
                let data = r.take(page_size as usize)?.to_vec();
                frames.push(Frame { pgno, db_size, data });
            }
            commits.push(Commit {
                from,
                seq,
                ts_ms,
                frames,
            });
        }
        (r.at == body.len()).then_some((page_size, commits))
    })();
    parsed.ok_or_else(|| FormatError::Corrupt(name.to_string(), "not a log segment".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn key(b: u8) -> ObjectKey {
        let text = base64::engine::general_purpose::STANDARD.encode([b; 32]);
        ObjectKey::from_master(&MasterKey::parse(&text).unwrap())
    }

    #[test]
    fn envelopes_check_integrity_and_bind_the_name() {
        let plain = wrap(None, "g/1.wal", b"hello alice@example.org").unwrap();
        assert_eq!(unwrap(None, "g/1.wal", &plain).unwrap(), b"hello alice@example.org");
        let mut bad = plain.clone();
        bad[8] ^= 1;
        assert!(matches!(unwrap(None, "g/1.wal", &bad), Err(FormatError::Corrupt(..))));

        let sealed = wrap(Some(&key(1)), "g/1.wal", b"hello alice@example.org").unwrap();
        assert!(
            !sealed.windows(5).any(|w| w == b"alice"),
            "no plaintext in a sealed object"
        );
        assert_eq!(
            unwrap(Some(&key(1)), "g/1.wal", &sealed).unwrap(),
            b"hello alice@example.org"
        );
        assert_eq!(unwrap(None, "g/1.wal", &sealed), Err(FormatError::NeedsKey));
        assert!(matches!(
            unwrap(Some(&key(2)), "g/1.wal", &sealed),
            Err(FormatError::WrongKey(_))
        ));
        assert!(
            matches!(unwrap(Some(&key(1)), "g/2.wal", &sealed), Err(FormatError::WrongKey(_))),
            "renamed"
        );
        assert_eq!(is_sealed(&sealed), Some(true));
        assert_eq!(is_sealed(b"nope"), None);
    }

    #[test]
    fn bodies_round_trip_and_short_ones_are_refused() {
        let commits = vec![
            Commit {
                from: 4,
                seq: 4,
                ts_ms: 1_700_000_000_123,
                frames: vec![
                    Frame {
                        pgno: 1,
                        db_size: 0,
                        data: vec![1; 512],
                    },
                    Frame {
                        pgno: 3,
                        db_size: 3,
                        data: vec![3; 512],
                    },
                ],
            },
            Commit {
                from: 5,
                seq: 7,
                ts_ms: 1_700_000_000_124,
                frames: vec![Frame {
                    pgno: 2,
                    db_size: 3,
                    data: vec![2; 512],
                }],
            },
        ];
        let body = encode_wal(512, &commits);
        assert_eq!(decode_wal("x", &body).unwrap(), (512, commits));
        assert!(decode_wal("x", &body[..body.len() - 1]).is_err());
        let snap = Snapshot {
            page_size: 4096,
            step: 9,
            ts_ms: 5,
            db: vec![7; 8192],
        };
        let body = encode_snapshot(&snap);
        assert_eq!(decode_snapshot("s", &body).unwrap(), snap);
        assert!(decode_snapshot("s", &body[..20]).is_err());
        assert!(decode_wal("s", &body).is_err());
    }
}
