//! bcrypt on a dedicated pool of threads sized to the cores, fed through a deep bounded
//! queue, so password hashing never runs on (or starves) the request threads.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

#[derive(Debug, thiserror::Error)]
pub enum HashError {
    /// The queue is full or the wait exceeded its bound: shed load, do not guess.
    #[error("password hashing is overloaded")]
    Overloaded,
    #[error("password hashing failed: {0}")]
    Failed(String),
}

struct Queued {
    job: Job,
    at: std::time::Instant,
}

enum Job {
    Verify {
        password: String,
        against: Against,
        reply: oneshot::Sender<bool>,
    },
    Hash {
        password: String,
        reply: oneshot::Sender<Result<String, String>>,
    },
}

/// Deep enough that 500 concurrent sign-ins wait in line rather than fail.
const QUEUE_CAPACITY: usize = 4096;
/// At cost 10 on two cores a full queue drains in about two minutes; a request waits
/// at most this long before it is answered with "try again".
const MAX_WAIT: Duration = Duration::from_secs(120);

/// What a password is checked against: a stored hash, or a dummy of some cost for an
/// account that does not exist.
enum Against {
    Stored(String),
    Dummy(u32),
}

#[derive(Clone)]
pub struct Hasher {
    queue: SyncSender<Queued>,
    depth: Arc<AtomicUsize>,
    stats: Arc<HashStats>,
    cost: u32,
}

/// The cost a bcrypt hash was made with (`$2b$10$…` → 10).
/// The stored "hash" of an account that has no password (made through an upstream
/// provider): no password verifies against it, and a reset can set one.
pub const NO_PASSWORD: &str = "!";

/// Whether a stored hash is a password's (not `NO_PASSWORD`).
pub fn has_password(hash: &str) -> bool {
    cost_of(hash).is_some()
}

pub fn cost_of(hash: &str) -> Option<u32> {
    let mut parts = hash.split('$');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(""), Some(v), Some(cost)) if v.starts_with('2') => cost.parse().ok().filter(|c| (4..=31).contains(c)),
        _ => None,
    }
}

/// Jobs done and the time they spent queued, for metrics.
#[derive(Default)]
pub struct HashStats {
    pub jobs: AtomicU64,
    pub wait_micros: AtomicU64,
}

impl Hasher {
    pub fn start(threads: usize, cost: u32) -> std::io::Result<Self> {
        let (queue, rx) = sync_channel(QUEUE_CAPACITY);
        let rx = Arc::new(Mutex::new(rx));
        let depth = Arc::new(AtomicUsize::new(0));
        let stats = Arc::new(HashStats::default());
        let dummies = Arc::new(Mutex::new(HashMap::new()));
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            let depth = depth.clone();
            let dummies = dummies.clone();
            let stats = stats.clone();
            std::thread::Builder::new()
                .name(format!("tessera-hash-{i}"))
                .spawn(move || {
                    lower_priority();
                    work(&rx, &depth, &stats, cost, &dummies)
                })?;
        }
        Ok(Self {
            queue,
            depth,
            stats,
            cost,
        })
    }

    /// The cost new hashes are made with (`--bcrypt-cost`).
    pub fn cost(&self) -> u32 {
        self.cost
    }

    /// Checks `password` against `hash`; with no hash (unknown user) it verifies against
    /// a dummy of the configured cost, so both cases take the same time and both say
    /// `false`.
    pub async fn verify(&self, password: &str, hash: Option<&str>) -> Result<bool, HashError> {
        // An account without a password (one made through an upstream provider) is
        // timed like any other: its marker is not a hash to check against.
        let against = match hash {
            Some(h) if cost_of(h).is_some() => Against::Stored(h.to_string()),
            _ => Against::Dummy(self.cost),
        };
        self.run_verify(password, against).await
    }

    /// Spends what verifying against a hash of `cost` spends, and says `false`: the
    /// answer for an account that does not exist, timed like one that does.
    pub async fn verify_dummy(&self, password: &str, cost: u32) -> Result<bool, HashError> {
        self.run_verify(password, Against::Dummy(cost.clamp(4, 31))).await
    }

    async fn run_verify(&self, password: &str, against: Against) -> Result<bool, HashError> {
        let (reply, rx) = oneshot::channel();
        self.enqueue(Job::Verify {
            password: password.to_string(),
            against,
            reply,
        })?;
        self.wait(rx).await
    }

    pub async fn hash(&self, password: &str) -> Result<String, HashError> {
        let (reply, rx) = oneshot::channel();
        self.enqueue(Job::Hash {
            password: password.to_string(),
            reply,
        })?;
        self.wait(rx).await?.map_err(HashError::Failed)
    }

    /// Jobs waiting or running, for metrics.
    pub fn queue_depth(&self) -> usize {
        self.depth.load(Ordering::Relaxed)
    }

    pub fn stats(&self) -> &HashStats {
        &self.stats
    }

    fn enqueue(&self, job: Job) -> Result<(), HashError> {
        self.depth.fetch_add(1, Ordering::Relaxed);
        match self.queue.try_send(Queued {
            job,
            at: std::time::Instant::now(),
        }) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.depth.fetch_sub(1, Ordering::Relaxed);
                Err(HashError::Overloaded)
            }
        }
    }

    async fn wait<T>(&self, rx: oneshot::Receiver<T>) -> Result<T, HashError> {
        match tokio::time::timeout(MAX_WAIT, rx).await {
            Ok(Ok(v)) => Ok(v),
            _ => Err(HashError::Overloaded),
        }
    }
}

/// Password hashing yields the CPU to request threads: with logins saturating every
/// core, token, refresh and introspection requests must still be served promptly.
/// Linux keeps a nice value per thread, so only the hashing threads are lowered.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        let tid = rustix::thread::gettid();
        if let Err(e) = rustix::process::setpriority_process(Some(tid), HASH_NICE) {
            tracing::warn!(error = %e, "cannot lower the priority of a hashing thread");
        }
    }
}

/// Nice value of hashing threads (0 is normal, 19 the lowest).
#[cfg(target_os = "linux")]
const HASH_NICE: i32 = 10;

/// Dummy hashes by cost, made once each.
type Dummies = Mutex<HashMap<u32, String>>;

fn dummy_of(dummies: &Dummies, cost: u32) -> String {
    if let Some(d) = dummies.lock().ok().and_then(|m| m.get(&cost).cloned()) {
        return d;
    }
    let d = bcrypt::hash("tessera-dummy-password", cost).unwrap_or_default();
    if let Ok(mut m) = dummies.lock() {
        m.insert(cost, d.clone());
    }
    d
}

fn work(rx: &Mutex<Receiver<Queued>>, depth: &AtomicUsize, stats: &HashStats, cost: u32, dummies: &Dummies) {
    loop {
        let job = {
            let Ok(guard) = rx.lock() else { return };
            match guard.recv() {
                Ok(queued) => {
                    let waited = queued.at.elapsed().as_micros();
                    stats
                        .wait_micros
                        .fetch_add(u64::try_from(waited).unwrap_or(u64::MAX), Ordering::Relaxed);
                    stats.jobs.fetch_add(1, Ordering::Relaxed);
                    queued.job
                }
                Err(_) => return,
            }
        };
        // The depth drops before the reply, so a caller that has its answer never
        // sees its own job still counted.
        match job {
            Job::Verify {
                password,
                against,
                reply,
            } => {
                let ok = match against {
                    Against::Stored(h) => bcrypt::verify(&password, &h).unwrap_or(false),
                    Against::Dummy(c) => {
                        let _ = bcrypt::verify(&password, &dummy_of(dummies, c));
                        false
                    }
                };
                depth.fetch_sub(1, Ordering::Relaxed);
                let _ = reply.send(ok);
            }
            Job::Hash { password, reply } => {
                let hashed = bcrypt::hash(&password, cost).map_err(|e| e.to_string());
                depth.fetch_sub(1, Ordering::Relaxed);
                let _ = reply.send(hashed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn verifies_right_and_wrong_passwords_and_unknown_users() {
        let hasher = Hasher::start(2, 4).unwrap();
        let hash = hasher.hash("correct horse").await.unwrap();
        assert!(hasher.verify("correct horse", Some(&hash)).await.unwrap());
        assert!(!hasher.verify("wrong", Some(&hash)).await.unwrap());
        assert!(!hasher.verify("correct horse", None).await.unwrap());
        assert!(!hasher.verify_dummy("correct horse", 5).await.unwrap());
        assert_eq!(hasher.queue_depth(), 0);
    }

    #[test]
    fn the_cost_is_read_from_the_hash() {
        assert_eq!(cost_of("$2b$10$abcdefghijklmnopqrstuu"), Some(10));
        assert_eq!(cost_of("$2y$04$x"), Some(4));
        assert_eq!(cost_of("plain"), None);
        assert_eq!(cost_of("$2b$99$x"), None);
    }
}
