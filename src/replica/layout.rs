//! How a replica's objects are named and which of them a restore reads.
//!
//! A generation begins each time a server starts replicating (a snapshot of the file,
//! then the log from there): `GEN/` with GEN = start time in milliseconds and a random
//! suffix, so names sort by time. Inside it every object names the steps it covers
//! and their times: `FIRST-LAST-T0-T1.snap|wal` (steps in hex, times in ms). A step is
//! one shipment; a snapshot at step k is the state after steps up to k. Compaction
//! merges many log objects into one covering their steps; while both exist, a restore
//! takes each step once.

use std::collections::BTreeMap;

use super::store::ObjectInfo;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Snapshot,
    Wal,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    pub name: String,
    pub generation: String,
    pub first: u64,
    pub last: u64,
    pub t0: i64,
    pub t1: i64,
    pub kind: Kind,
    pub size: u64,
}

pub fn generation_name(now_ms: i64, random: u32) -> String {
    format!("{now_ms:013}-{random:08x}")
}

pub fn object_name(generation: &str, kind: Kind, first: u64, last: u64, t0: i64, t1: i64) -> String {
    let ext = match kind {
        Kind::Snapshot => "snap",
        Kind::Wal => "wal",
    };
    format!("{generation}/{first:016x}-{last:016x}-{t0:013}-{t1:013}.{ext}")
}

/// Our objects among a listing (anything else in the target is ignored).
pub fn parse(objects: &[ObjectInfo]) -> Vec<Object> {
    objects.iter().filter_map(parse_one).collect()
}

fn parse_one(info: &ObjectInfo) -> Option<Object> {
    let (generation, file) = info.name.split_once('/')?;
    let (g_ms, g_rand) = generation.split_once('-')?;
    if g_ms.len() != 13 || g_rand.len() != 8 || !g_ms.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (stem, ext) = file.rsplit_once('.')?;
    let kind = match ext {
        "snap" => Kind::Snapshot,
        "wal" => Kind::Wal,
        _ => return None,
    };
    let parts: Vec<&str> = stem.split('-').collect();
    let [first, last, t0, t1] = parts.as_slice() else {
        return None;
    };
    let object = Object {
        name: info.name.clone(),
        generation: generation.to_string(),
        first: u64::from_str_radix(first, 16).ok()?,
        last: u64::from_str_radix(last, 16).ok()?,
        t0: t0.parse().ok()?,
        t1: t1.parse().ok()?,
        kind,
        size: info.size,
    };
    (object.first <= object.last && object.t0 <= object.t1).then_some(object)
}

/// Objects by generation, oldest generation first, each in step order.
pub fn generations(objects: Vec<Object>) -> BTreeMap<String, Vec<Object>> {
    let mut out: BTreeMap<String, Vec<Object>> = BTreeMap::new();
    for o in objects {
        out.entry(o.generation.clone()).or_default().push(o);
    }
    for list in out.values_mut() {
        list.sort_by(|a, b| (a.first, a.kind, b.last).cmp(&(b.first, b.kind, a.last)));
    }
    out
}

/// What a restore reads: one snapshot and the log objects after it, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub generation: String,
    pub snapshot: Object,
    pub wals: Vec<Object>,
}

/// The newest state, or the state at `at_ms`: the newest generation that had a
/// snapshot by then, its newest snapshot by then, and every log object after it
/// (the reader stops at the first transaction later than `at_ms`).
pub fn plan(objects: Vec<Object>, at_ms: Option<i64>) -> Result<Plan, String> {
    let gens = generations(objects);
    if gens.is_empty() {
        return Err("the target holds no replica".into());
    }
    let in_time = |o: &Object| at_ms.is_none_or(|at| o.t1 <= at);
    for (generation, list) in gens.iter().rev() {
        let Some(snapshot) = list
            .iter()
            .filter(|o| o.kind == Kind::Snapshot && in_time(o))
            .max_by_key(|o| o.last)
        else {
            continue;
        };
        let wals = list
            .iter()
            .filter(|o| o.kind == Kind::Wal && o.last > snapshot.last && at_ms.is_none_or(|at| o.t0 <= at))
            .cloned()
            .collect();
        return Ok(Plan {
            generation: generation.clone(),
            snapshot: snapshot.clone(),
            wals,
        });
    }
    let earliest = gens
        .values()
        .flatten()
        .filter(|o| o.kind == Kind::Snapshot)
        .map(|o| o.t1)
        .min();
    Err(match earliest {
        Some(t) => format!("the replica begins at {}; there is no state that early", rfc3339(t)),
        None => "the replica holds no snapshot yet".into(),
    })
}

/// What retention deletes: in each generation, everything a restore within the
/// window no longer needs (before the newest snapshot older than `cutoff_ms`), and
/// whole generations that ended before the cutoff, never the `current` one.
pub fn expired(objects: Vec<Object>, cutoff_ms: i64, current: &str) -> Vec<Object> {
    let mut out = Vec::new();
    for (generation, list) in generations(objects) {
        let newest = list.iter().map(|o| o.t1).max().unwrap_or(i64::MAX);
        if generation != current && newest < cutoff_ms {
            out.extend(list);
            continue;
        }
        let Some(keep_from) = list
            .iter()
            .filter(|o| o.kind == Kind::Snapshot && o.t1 <= cutoff_ms)
            .map(|o| o.last)
            .max()
        else {
            continue;
        };
        out.extend(list.into_iter().filter(|o| match o.kind {
            Kind::Snapshot => o.last < keep_from,
            Kind::Wal => o.last <= keep_from,
        }));
    }
    out
}

/// Milliseconds since the epoch as RFC 3339 in UTC (to the millisecond when not whole).
pub fn rfc3339(ms: i64) -> String {
    let Some(t) = chrono::DateTime::from_timestamp_millis(ms) else {
        return ms.to_string();
    };
    if ms % 1000 == 0 {
        t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
    } else {
        t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(generation: &str, kind: Kind, first: u64, last: u64, t0: i64, t1: i64) -> ObjectInfo {
        ObjectInfo {
            name: object_name(generation, kind, first, last, t0, t1),
            size: 1,
        }
    }

    #[test]
    fn names_round_trip_and_foreign_files_are_ignored() {
        let g = generation_name(1_700_000_000_000, 0xabc);
        let infos = vec![
            obj(&g, Kind::Wal, 1, 5, 10, 20),
            ObjectInfo {
                name: "README".into(),
                size: 1,
            },
            ObjectInfo {
                name: format!("{g}/junk.wal"),
                size: 1,
            },
        ];
        let parsed = parse(&infos);
        assert_eq!(parsed.len(), 1);
        assert_eq!(
            (parsed[0].first, parsed[0].last, parsed[0].t0, parsed[0].t1),
            (1, 5, 10, 20)
        );
    }

    #[test]
    fn a_plan_picks_the_newest_snapshot_in_time_and_the_log_after_it() {
        let (g1, g2) = (generation_name(1000, 1), generation_name(5000, 2));
        let infos = vec![
            obj(&g1, Kind::Snapshot, 0, 0, 1000, 1000),
            obj(&g1, Kind::Wal, 1, 1, 1100, 1100),
            obj(&g1, Kind::Wal, 2, 2, 1200, 1200),
            obj(&g1, Kind::Snapshot, 2, 2, 1300, 1300),
            obj(&g1, Kind::Wal, 3, 3, 1400, 1400),
            obj(&g2, Kind::Snapshot, 0, 0, 5000, 5000),
            obj(&g2, Kind::Wal, 1, 1, 5100, 5100),
        ];
        let latest = plan(parse(&infos), None).unwrap();
        assert_eq!(latest.generation, g2);
        assert_eq!(latest.wals.len(), 1);
        let past = plan(parse(&infos), Some(1250)).unwrap();
        assert_eq!(past.generation, g1);
        assert_eq!(past.snapshot.last, 0, "the step-2 snapshot is later than the point");
        assert_eq!(past.wals.iter().map(|o| o.last).collect::<Vec<_>>(), vec![1, 2]);
        let err = plan(parse(&infos), Some(999)).unwrap_err();
        assert!(err.contains("begins at"), "{err}");
        assert!(plan(Vec::new(), None).is_err());
    }

    #[test]
    fn retention_keeps_what_a_restore_in_the_window_needs() {
        let (g1, g2) = (generation_name(1000, 1), generation_name(5000, 2));
        let infos = vec![
            obj(&g1, Kind::Snapshot, 0, 0, 1000, 1000),
            obj(&g1, Kind::Wal, 1, 1, 1100, 1100),
            obj(&g2, Kind::Snapshot, 0, 0, 5000, 5000),
            obj(&g2, Kind::Wal, 1, 3, 5100, 5300),
            obj(&g2, Kind::Snapshot, 3, 3, 5400, 5400),
            obj(&g2, Kind::Wal, 4, 4, 5500, 5500),
        ];
        let mut gone: Vec<String> = expired(parse(&infos), 5450, &g2).into_iter().map(|o| o.name).collect();
        gone.sort();
        let mut want: Vec<String> = [&infos[0], &infos[1], &infos[2], &infos[3]]
            .iter()
            .map(|o| o.name.clone())
            .collect();
        want.sort();
        assert_eq!(gone, want, "the old generation, and what precedes the step-3 snapshot");
        // Nothing is old enough: nothing goes.
        assert!(expired(parse(&infos), 900, &g2).is_empty());
    }
}
