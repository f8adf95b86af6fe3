//! `tessera replica status TARGET`: what a replica holds, read from its listing
//! alone (and one small object, to tell whether it is encrypted).

use serde::Serialize;

use super::format;
pub use super::layout::rfc3339;
use super::layout::{self, Kind};
use super::store::Store;

#[derive(Debug, Serialize)]
pub struct Status {
    pub target: String,
    /// `None` when the replica is empty.
    pub encrypted: Option<bool>,
    pub generation: Option<String>,
    pub generation_started_at: Option<String>,
    pub last_step: Option<u64>,
    pub last_shipped_at: Option<String>,
    /// Seconds between the last shipped write and now: how far the replica trails a
    /// database that has been written since (0 for an idle one is not knowable here).
    pub seconds_since_last_shipped: Option<f64>,
    pub restore_from: Option<String>,
    pub restore_to: Option<String>,
    pub bytes: u64,
    pub objects: usize,
    pub snapshots: usize,
    pub generations: usize,
}

pub fn status(store: &dyn Store, now_ms: i64) -> Result<Status, String> {
    let objects = layout::parse(&store.list("").map_err(|e| e.to_string())?);
    let bytes = objects.iter().map(|o| o.size).sum();
    let snapshots = objects.iter().filter(|o| o.kind == Kind::Snapshot).count();
    let count = objects.len();
    let gens = layout::generations(objects);
    let generations = gens.len();
    let mut out = Status {
        target: store.describe(),
        encrypted: None,
        generation: None,
        generation_started_at: None,
        last_step: None,
        last_shipped_at: None,
        seconds_since_last_shipped: None,
        restore_from: None,
        restore_to: None,
        bytes,
        objects: count,
        snapshots,
        generations,
    };
    let Some((name, list)) = gens.iter().next_back() else {
        return Ok(out);
    };
    let newest = list.iter().max_by_key(|o| (o.last, o.t1));
    out.generation = Some(name.clone());
    out.generation_started_at = list.iter().map(|o| o.t0).min().map(rfc3339);
    if let Some(o) = newest {
        out.last_step = Some(o.last);
        out.last_shipped_at = Some(rfc3339(o.t1));
        out.seconds_since_last_shipped = Some((now_ms - o.t1).max(0) as f64 / 1000.0);
        out.restore_to = Some(rfc3339(o.t1));
        // The smallest object says whether the replica is sealed.
        let probe = list.iter().min_by_key(|o| o.size).unwrap_or(o);
        out.encrypted = store.get(&probe.name).ok().and_then(|b| format::is_sealed(&b));
    }
    out.restore_from = gens
        .values()
        .flatten()
        .filter(|o| o.kind == Kind::Snapshot)
        .map(|o| o.t1)
        .min()
        .map(rfc3339);
    Ok(out)
}

impl Status {
    pub fn text(&self) -> String {
        let mut out = format!("replica {}\n", self.target);
        let Some(generation) = &self.generation else {
            out.push_str("  empty: nothing has been shipped here yet\n");
            return out;
        };
        let yes = |b: Option<bool>| match b {
            Some(true) => "yes (AES-256-GCM, key derived from the master key)",
            Some(false) => "no",
            None => "unknown",
        };
        let or_dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "  generation:     {generation} (started {})\n",
            or_dash(&self.generation_started_at)
        ));
        out.push_str(&format!(
            "  last shipped:   step {} at {} ({:.1} s ago)\n",
            self.last_step.unwrap_or(0),
            or_dash(&self.last_shipped_at),
            self.seconds_since_last_shipped.unwrap_or(0.0)
        ));
        out.push_str(&format!(
            "  restore window: {} .. {}\n",
            or_dash(&self.restore_from),
            or_dash(&self.restore_to)
        ));
        out.push_str(&format!("  encrypted:      {}\n", yes(self.encrypted)));
        out.push_str(&format!(
            "  size:           {} bytes in {} objects ({} snapshots, {} generations)\n",
            self.bytes, self.objects, self.snapshots, self.generations
        ));
        out
    }
}
