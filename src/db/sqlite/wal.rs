//! Reading SQLite's write-ahead log as the file format defines it
//! (<https://www.sqlite.org/fileformat2.html#walformat>): a 32-byte header, then
//! frames of a 24-byte header and one page. A frame belongs to the log when its salts
//! match the header's and its cumulative checksum holds; a transaction ends at a
//! commit frame (one whose "database size" field is not zero). Only whole
//! transactions are returned, so a frame being written, or a transaction not yet
//! committed, is never shipped.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

const HEADER: usize = 32;
const FRAME_HEADER: usize = 24;
const MAGIC_LE: u32 = 0x377f_0682;
const MAGIC_BE: u32 = 0x377f_0683;
const VERSION: u32 = 3_007_000;

/// Bytes read per pass at most, so that a log grown during an outage is shipped in
/// pieces rather than held in memory at once.
pub const MAX_READ: u64 = 32 << 20;

/// One page of a committed transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub pgno: u32,
    /// The database's size in pages after the transaction, on its last frame only.
    pub db_size: u32,
    pub data: Vec<u8>,
}

/// Where reading stopped: the salts of the log it read, the offset after the last
/// commit frame and the running checksum there (the next frame's seed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WalPosition {
    pub salt: Option<[u32; 2]>,
    pub offset: u64,
    pub checksum: [u32; 2],
    pub page_size: u32,
    big_endian: bool,
    /// Frames of this log up to `offset`.
    pub frames: u64,
}

/// The committed transactions after a position.
#[derive(Debug, Default)]
pub struct Tail {
    pub commits: Vec<Vec<Frame>>,
    pub end: WalPosition,
    /// The log was restarted since the position (new salts): the transactions are
    /// those of the new log, from its first frame.
    pub restarted: bool,
    /// More committed frames may follow (the read stopped at `MAX_READ`).
    pub more: bool,
}

impl Tail {
    pub fn bytes(&self) -> usize {
        self.commits.iter().flatten().map(|f| f.data.len() + 8).sum()
    }
}

struct Header {
    page_size: u32,
    salt: [u32; 2],
    checksum: [u32; 2],
    big_endian: bool,
}

fn word(bytes: &[u8], at: usize, big_endian: bool) -> u32 {
    let b = [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]];
    if big_endian {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
    }
}

fn be(bytes: &[u8], at: usize) -> u32 {
    word(bytes, at, true)
}

/// The log's checksum: pairs of 32-bit words in the byte order the magic names.
fn checksum(data: &[u8], seed: [u32; 2], big_endian: bool) -> [u32; 2] {
    let [mut s0, mut s1] = seed;
    for pair in data.chunks_exact(8) {
        s0 = s0.wrapping_add(word(pair, 0, big_endian)).wrapping_add(s1);
        s1 = s1.wrapping_add(word(pair, 4, big_endian)).wrapping_add(s0);
    }
    [s0, s1]
}

fn parse_header(bytes: &[u8]) -> Option<Header> {
    if bytes.len() < HEADER {
        return None;
    }
    let magic = be(bytes, 0);
    let big_endian = match magic {
        MAGIC_LE => false,
        MAGIC_BE => true,
        _ => return None,
    };
    let page_size = be(bytes, 8);
    let page_ok = (512..=65536).contains(&page_size) && page_size.is_power_of_two();
    if be(bytes, 4) != VERSION || !page_ok {
        return None;
    }
    let sum = checksum(&bytes[..24], [0, 0], big_endian);
    if sum != [be(bytes, 24), be(bytes, 28)] {
        return None;
    }
    Some(Header {
        page_size,
        salt: [be(bytes, 16), be(bytes, 20)],
        checksum: sum,
        big_endian,
    })
}

/// The committed transactions of `wal` after `from` (a default position: from the
/// first frame of whatever log is there). A missing or empty log has none.
pub fn read_tail(wal: &Path, from: &WalPosition) -> std::io::Result<Tail> {
    let Some((mut file, header)) = open_log(wal)? else {
        // Missing, empty, truncated or being reset: nothing committed to read yet.
        return Ok(Tail {
            end: *from,
            ..Tail::default()
        });
    };
    let same_log = from.salt == Some(header.salt);
    let start = if same_log {
        *from
    } else {
        WalPosition {
            salt: Some(header.salt),
            offset: HEADER as u64,
            checksum: header.checksum,
            page_size: header.page_size,
            big_endian: header.big_endian,
            frames: 0,
        }
    };
    let frame_len = FRAME_HEADER + header.page_size as usize;
    let budget = (MAX_READ / frame_len as u64).max(1) * frame_len as u64;
    file.seek(SeekFrom::Start(start.offset))?;
    let mut buf = Vec::new();
    file.take(budget).read_to_end(&mut buf)?;
    let mut tail = Tail {
        end: start,
        restarted: !same_log && from.salt.is_some(),
        more: buf.len() as u64 == budget,
        ..Tail::default()
    };
    let mut sum = start.checksum;
    let mut open: Vec<Frame> = Vec::new();
    let mut at = 0usize;
    let mut frames = start.frames;
    while at + frame_len <= buf.len() {
        let frame = &buf[at..at + frame_len];
        if [be(frame, 8), be(frame, 12)] != header.salt {
            break;
        }
        let next = checksum(
            &frame[FRAME_HEADER..],
            checksum(&frame[..8], sum, header.big_endian),
            header.big_endian,
        );
        if next != [be(frame, 16), be(frame, 20)] || be(frame, 0) == 0 {
            break;
        }
        sum = next;
        frames += 1;
        at += frame_len;
        let db_size = be(frame, 4);
        open.push(Frame {
            pgno: be(frame, 0),
            db_size,
            data: frame[FRAME_HEADER..].to_vec(),
        });
        if db_size != 0 {
            tail.commits.push(std::mem::take(&mut open));
            tail.end = WalPosition {
                offset: start.offset + at as u64,
                checksum: sum,
                frames,
                ..start
            };
        }
    }
    Ok(tail)
}

/// The log file and its header; `None` when the log is missing, empty, truncated or
/// being reset.
fn open_log(wal: &Path) -> std::io::Result<Option<(std::fs::File, Header)>> {
    let mut file = match std::fs::File::open(wal) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut head = [0u8; HEADER];
    match file.read_exact(&mut head) {
        Ok(()) => Ok(parse_header(&head).map(|header| (file, header))),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log as SQLite writes it, built by hand: header, then frames.
    fn log(page_size: u32, salt: [u32; 2], frames: &[(u32, u32, u8)]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend(MAGIC_LE.to_be_bytes());
        out.extend(VERSION.to_be_bytes());
        out.extend(page_size.to_be_bytes());
        out.extend(0u32.to_be_bytes());
        out.extend(salt[0].to_be_bytes());
        out.extend(salt[1].to_be_bytes());
        let mut sum = checksum(&out, [0, 0], false);
        out.extend(sum[0].to_be_bytes());
        out.extend(sum[1].to_be_bytes());
        for &(pgno, db_size, fill) in frames {
            let mut head = Vec::new();
            head.extend(pgno.to_be_bytes());
            head.extend(db_size.to_be_bytes());
            let page = vec![fill; page_size as usize];
            sum = checksum(&page, checksum(&head, sum, false), false);
            head.extend(salt[0].to_be_bytes());
            head.extend(salt[1].to_be_bytes());
            head.extend(sum[0].to_be_bytes());
            head.extend(sum[1].to_be_bytes());
            out.extend(head);
            out.extend(page);
        }
        out
    }

    #[test]
    fn only_committed_transactions_are_read_and_reading_resumes_where_it_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("db-wal");
        // Two transactions, then one whose commit frame is not written yet.
        std::fs::write(&wal, log(512, [7, 9], &[(1, 0, 1), (2, 2, 2), (2, 2, 3), (3, 0, 4)])).unwrap();
        let tail = read_tail(&wal, &WalPosition::default()).unwrap();
        assert_eq!(tail.commits.len(), 2);
        assert_eq!(tail.commits[0].iter().map(|f| f.pgno).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(tail.commits[1][0].data[0], 3);
        assert_eq!(tail.end.frames, 3);
        assert!(!tail.restarted);
        // The open transaction commits: only it is new.
        std::fs::write(
            &wal,
            log(512, [7, 9], &[(1, 0, 1), (2, 2, 2), (2, 2, 3), (3, 0, 4), (4, 4, 5)]),
        )
        .unwrap();
        let next = read_tail(&wal, &tail.end).unwrap();
        assert_eq!(next.commits.len(), 1);
        assert_eq!(next.commits[0].iter().map(|f| f.pgno).collect::<Vec<_>>(), vec![3, 4]);
        assert_eq!(next.commits[0][1].db_size, 4);
        // Nothing more: the same position again.
        assert!(read_tail(&wal, &next.end).unwrap().commits.is_empty());
    }

    #[test]
    fn a_restarted_log_is_read_from_its_first_frame_and_a_torn_frame_ends_the_read() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("db-wal");
        std::fs::write(&wal, log(512, [1, 1], &[(1, 1, 1)])).unwrap();
        let first = read_tail(&wal, &WalPosition::default()).unwrap();
        // New salts, and the old log's second frame still lies beyond the new one.
        let mut bytes = log(512, [2, 5], &[(5, 5, 9)]);
        bytes.extend_from_slice(&log(512, [1, 1], &[(1, 1, 1), (2, 2, 2)])[32 + 536..]);
        std::fs::write(&wal, &bytes).unwrap();
        let tail = read_tail(&wal, &first.end).unwrap();
        assert!(tail.restarted);
        assert_eq!(tail.commits.len(), 1, "the old log's frame has the old salts");
        assert_eq!(tail.commits[0][0].pgno, 5);
        // A flipped byte in a page breaks the checksum chain there.
        let mut torn = log(512, [3, 3], &[(1, 1, 1), (2, 2, 2)]);
        let last = torn.len() - 1;
        torn[last] ^= 0xff;
        std::fs::write(&wal, &torn).unwrap();
        assert_eq!(read_tail(&wal, &WalPosition::default()).unwrap().commits.len(), 1);
        // No log, or a header only: nothing.
        std::fs::write(&wal, &torn[..32]).unwrap();
        assert!(read_tail(&wal, &WalPosition::default()).unwrap().commits.is_empty());
        assert!(read_tail(&dir.path().join("none"), &WalPosition::default())
            .unwrap()
            .commits
            .is_empty());
    }
}
