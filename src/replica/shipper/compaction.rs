//! Compaction and retention of the replica: small log objects merged into larger ones
//! (commits of one second joined), and history older than the retention deleted.

use super::{Run, Shipped, MERGE_AGE_MS, MERGE_COUNT};
use crate::db::Frame;
use crate::replica::format::{self, Commit};
use crate::replica::layout::{self, Kind};

impl Run {
    /// Merges a level's objects into one of the next level once there are enough of
    /// them (or, for the first level, once the oldest is old enough).
    pub(super) fn compact(&mut self) {
        let now = self.clock.now_millis();
        for (level, &count) in MERGE_COUNT.iter().enumerate() {
            let list = &self.levels[level];
            let due = list.len() >= count
                || (level == 0 && list.len() >= 2 && list.first().is_some_and(|o| now - o.t1 >= MERGE_AGE_MS));
            if !due {
                continue;
            }
            let parts = std::mem::take(&mut self.levels[level]);
            match self.merge(&parts) {
                Ok(merged) => {
                    for part in &parts {
                        if let Err(e) = self.store.delete(&part.name) {
                            tracing::warn!(error = %e, object = %part.name, "replication: a merged object stays behind");
                        }
                    }
                    self.levels[level + 1].push(merged);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "replication: compaction failed; will retry");
                    self.levels[level] = parts;
                    return;
                }
            }
        }
    }

    fn merge(&mut self, parts: &[Shipped]) -> Result<Shipped, String> {
        let mut commits = Vec::new();
        for part in parts {
            let bytes = self.store.get(&part.name).map_err(|e| e.to_string())?;
            let body = format::unwrap(self.key.as_ref(), &part.name, &bytes).map_err(|e| e.to_string())?;
            commits.extend(format::decode_wal(&part.name, &body).map_err(|e| e.to_string())?.1);
        }
        let commits = by_second(commits);
        let (first, last) = (&parts[0], &parts[parts.len() - 1]);
        let merged = Shipped {
            name: layout::object_name(&self.generation, Kind::Wal, first.first, last.last, first.t0, last.t1),
            first: first.first,
            last: last.last,
            t0: first.t0,
            t1: last.t1,
        };
        let body = format::encode_wal(self.page_size, &commits);
        self.put(&merged.name, &body)
            .map_err(|()| "the merged object could not be stored".to_string())?;
        Ok(merged)
    }

    pub(super) fn retention(&mut self) {
        let now = self.clock.now_millis();
        self.last_retention_ms = now;
        let objects = match self.store.list("") {
            Ok(list) => layout::parse(&list),
            Err(e) => {
                tracing::warn!(error = %e, "replication: cannot list the target for retention");
                return;
            }
        };
        for o in layout::expired(objects, now - self.retention_ms, &self.generation) {
            if let Err(e) = self.store.delete(&o.name) {
                tracing::warn!(error = %e, object = %o.name, "replication: cannot delete an expired object");
                continue;
            }
            for level in &mut self.levels {
                level.retain(|s| s.name != o.name);
            }
        }
    }
}

/// Consecutive commits of the same second joined into one: a restore to a point in
/// time is to the second, so nothing it can ask for is lost, and a page written many
/// times in that second is kept once. Seconds end on their last millisecond's
/// boundary (`(t - 1) / 1000`), so a commit at exactly `x.000` belongs to second `x`'s
/// restore point.
fn by_second(commits: Vec<Commit>) -> Vec<Commit> {
    let mut out: Vec<Commit> = Vec::new();
    let mut group: Vec<Commit> = Vec::new();
    let second = |c: &Commit| (c.ts_ms - 1).div_euclid(1000);
    for c in commits {
        if group.last().is_some_and(|g| second(g) != second(&c)) {
            out.push(join(std::mem::take(&mut group)));
        }
        group.push(c);
    }
    if !group.is_empty() {
        out.push(join(group));
    }
    out
}

fn join(group: Vec<Commit>) -> Commit {
    let (from, seq, ts_ms) = (
        group.first().map_or(0, |c| c.from),
        group.last().map_or(0, |c| c.seq),
        group.last().map_or(0, |c| c.ts_ms),
    );
    Commit {
        from,
        seq,
        ts_ms,
        frames: coalesce(group.into_iter().map(|c| c.frames).collect()),
    }
}

/// Consecutive transactions as one: the last version of each page, in page order,
/// the database size after the last one on the final frame.
pub(super) fn coalesce(commits: Vec<Vec<Frame>>) -> Vec<Frame> {
    let size = commits.last().and_then(|c| c.last()).map_or(0, |f| f.db_size);
    let mut pages: std::collections::BTreeMap<u32, Vec<u8>> = std::collections::BTreeMap::new();
    for frame in commits.into_iter().flatten() {
        pages.insert(frame.pgno, frame.data);
    }
    let mut frames: Vec<Frame> = pages
        .into_iter()
        .filter(|(pgno, _)| *pgno <= size)
        .map(|(pgno, data)| Frame { pgno, db_size: 0, data })
        .collect();
    if let Some(last) = frames.last_mut() {
        last.db_size = size;
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(pgno: u32, db_size: u32, fill: u8) -> Frame {
        Frame {
            pgno,
            db_size,
            data: vec![fill; 4],
        }
    }

    #[test]
    fn transactions_read_together_keep_each_pages_last_version_and_the_last_size() {
        let merged = coalesce(vec![
            vec![f(2, 0, 1), f(1, 5, 1)],
            vec![f(5, 0, 2), f(2, 0, 2), f(1, 3, 2)],
        ]);
        assert_eq!(merged, vec![f(1, 0, 2), f(2, 3, 2)], "page 5 is beyond the last size");
    }

    #[test]
    fn compaction_joins_commits_of_one_second_and_keeps_seconds_apart() {
        let c = |seq: u64, ts_ms: i64, fill: u8| Commit {
            from: seq,
            seq,
            ts_ms,
            frames: vec![f(1, 1, fill)],
        };
        let joined = by_second(vec![c(1, 1_001, 1), c(2, 1_500, 2), c(3, 2_000, 3), c(4, 2_001, 4)]);
        assert_eq!(joined.len(), 2, "{joined:?}");
        assert_eq!(
            (joined[0].from, joined[0].seq, joined[0].ts_ms),
            (1, 3, 2_000),
            "x.000 closes second x"
        );
        assert_eq!(joined[0].frames, vec![f(1, 1, 3)]);
        assert_eq!((joined[1].from, joined[1].seq), (4, 4));
    }
}
