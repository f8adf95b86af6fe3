//! bcrypt on a dedicated pool of threads sized to the cores, fed through a deep bounded
//! queue, so password hashing never runs on (or starves) the request threads. Under
//! load a thread verifies two queued passwords at once (`tessera_bcrypt`), which
//! nearly doubles the logins a core verifies.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
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
    /// A verification already parsed (`check_of`), run alone.
    Checked(Check),
}

/// Jobs waiting or running at most: deep enough that 500 concurrent sign-ins wait in
/// line rather than fail. Counted, not preallocated: a bounded channel of this size
/// would hold 400 KB from start-up on.
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
    queue: Sender<Queued>,
    depth: Arc<AtomicUsize>,
    /// Jobs waiting or running at most (`QUEUE_CAPACITY`).
    capacity: usize,
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
    /// Verifications run two at a time.
    pub paired: AtomicU64,
}

impl Hasher {
    pub fn start(threads: usize, cost: u32) -> std::io::Result<Self> {
        Self::start_with_capacity(threads, cost, QUEUE_CAPACITY)
    }

    fn start_with_capacity(threads: usize, cost: u32, capacity: usize) -> std::io::Result<Self> {
        let (queue, rx) = channel();
        let rx = Arc::new(Mutex::new(rx));
        let depth = Arc::new(AtomicUsize::new(0));
        let stats = Arc::new(HashStats::default());
        let dummies = Arc::new(Mutex::new(HashMap::new()));
        let threads = threads.max(1);
        for i in 0..threads {
            let rx = rx.clone();
            let depth = depth.clone();
            let dummies = dummies.clone();
            let stats = stats.clone();
            std::thread::Builder::new()
                .name(format!("tessera-hash-{i}"))
                .spawn(move || {
                    lower_priority();
                    work(&rx, &depth, &stats, cost, &dummies, threads)
                })?;
        }
        Ok(Self {
            queue,
            depth,
            capacity,
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
        if self.depth.fetch_add(1, Ordering::Relaxed) >= self.capacity {
            self.depth.fetch_sub(1, Ordering::Relaxed);
            return Err(HashError::Overloaded);
        }
        let queued = Queued {
            job,
            at: std::time::Instant::now(),
        };
        self.queue.send(queued).map_err(|_| {
            self.depth.fetch_sub(1, Ordering::Relaxed);
            HashError::Overloaded
        })
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

/// One password check ready to run: the password, the parsed hash it is checked
/// against, whether a match counts (not for a dummy), and where the answer goes.
struct Check {
    password: String,
    hash: tessera_bcrypt::Hash,
    counts: bool,
    reply: oneshot::Sender<bool>,
}

/// The check a job is, when it is one that can run beside another (a verification
/// against a well-formed hash); else the job back.
fn check_of(job: Job, dummies: &Dummies) -> Result<Check, Job> {
    let Job::Verify {
        password,
        against,
        reply,
    } = job
    else {
        return Err(job);
    };
    let (text, counts) = match &against {
        Against::Stored(h) => (h.clone(), true),
        Against::Dummy(c) => (dummy_of(dummies, *c), false),
    };
    match tessera_bcrypt::Hash::parse(&text) {
        Some(hash) => Ok(Check {
            password,
            hash,
            counts,
            reply,
        }),
        None => Err(Job::Verify {
            password,
            against,
            reply,
        }),
    }
}

/// Takes the next job, counting its wait.
fn dequeued(queued: Queued, stats: &HashStats) -> Job {
    let waited = queued.at.elapsed().as_micros();
    stats
        .wait_micros
        .fetch_add(u64::try_from(waited).unwrap_or(u64::MAX), Ordering::Relaxed);
    stats.jobs.fetch_add(1, Ordering::Relaxed);
    queued.job
}

/// A hashing thread. A verification is taken together with the next queued one of
/// the same cost when more jobs wait than there are threads (the second would wait
/// anyway), and the two run interleaved in about the time of one; a lone login never
/// waits for a partner. Anything else runs alone.
fn work(
    rx: &Mutex<Receiver<Queued>>,
    depth: &AtomicUsize,
    stats: &HashStats,
    cost: u32,
    dummies: &Dummies,
    threads: usize,
) {
    let mut held: Option<Job> = None;
    loop {
        let (job, partner) = match held.take() {
            Some(job) => (job, None),
            None => {
                let Ok(guard) = rx.lock() else { return };
                let Ok(queued) = guard.recv() else { return };
                let job = dequeued(queued, stats);
                let crowded = depth.load(Ordering::Relaxed) > threads;
                let partner = if crowded && matches!(job, Job::Verify { .. }) {
                    guard.try_recv().ok().map(|q| dequeued(q, stats))
                } else {
                    None
                };
                (job, partner)
            }
        };
        // The depth drops before the reply, so a caller that has its answer never
        // sees its own job still counted.
        let job = match (check_of(job, dummies), partner.map(|p| check_of(p, dummies))) {
            (Ok(a), Some(Ok(b))) if a.hash.cost() == b.hash.cost() => {
                let (ok_a, ok_b) =
                    tessera_bcrypt::verify_two((a.password.as_bytes(), &a.hash), (b.password.as_bytes(), &b.hash))
                        .unwrap_or_default();
                stats.paired.fetch_add(2, Ordering::Relaxed);
                depth.fetch_sub(2, Ordering::Relaxed);
                let _ = a.reply.send(ok_a && a.counts);
                let _ = b.reply.send(ok_b && b.counts);
                continue;
            }
            (first, second) => {
                // Not a pair: the partner, if any, runs next, on its own.
                held = second.map(|s| s.map_or_else(|job| job, Job::Checked));
                match first {
                    Ok(check) => Job::Checked(check),
                    Err(job) => job,
                }
            }
        };
        match job {
            Job::Checked(c) => {
                let ok = tessera_bcrypt::verify(c.password.as_bytes(), &c.hash) && c.counts;
                depth.fetch_sub(1, Ordering::Relaxed);
                let _ = c.reply.send(ok);
            }
            // A stored value that is not a well-formed hash matches no password.
            Job::Verify { reply, .. } => {
                depth.fetch_sub(1, Ordering::Relaxed);
                let _ = reply.send(false);
            }
            Job::Hash { password, reply } => {
                let hashed = bcrypt::hash(&password, cost).map_err(|e| e.to_string());
                depth.fetch_sub(1, Ordering::Relaxed);
                let _ = reply.send(hashed);
            }
        }
    }
}

/// A hashing failure as the server's own: a full pool sheds load, anything else is
/// logged here, once.
impl From<HashError> for crate::error::Internal {
    fn from(e: HashError) -> Self {
        match e {
            HashError::Overloaded => Self::Busy,
            other => {
                tracing::error!(error = %other, "password hashing error");
                Self::Failed
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

    #[tokio::test]
    async fn a_crowd_of_checks_is_verified_two_at_a_time_with_each_answer_its_own() {
        let hasher = Hasher::start(1, 4).unwrap();
        let hashes = [
            hasher.hash("first secret").await.unwrap(),
            hasher.hash("second secret").await.unwrap(),
        ];
        let mut checks = Vec::new();
        for i in 0..16 {
            let (hasher, hashes) = (hasher.clone(), hashes.clone());
            checks.push(tokio::spawn(async move {
                match i % 4 {
                    0 => hasher.verify("first secret", Some(&hashes[0])).await.unwrap(),
                    1 => !hasher.verify("first secret", Some(&hashes[1])).await.unwrap(),
                    2 => hasher.verify("second secret", Some(&hashes[1])).await.unwrap(),
                    // The dummy's own password matches nothing either.
                    _ => !hasher.verify_dummy("tessera-dummy-password", 4).await.unwrap(),
                }
            }));
        }
        for check in checks {
            assert!(check.await.unwrap(), "every answer is the one for its own password");
        }
        assert!(
            hasher.stats().paired.load(Ordering::Relaxed) >= 2,
            "a queue of checks is paired"
        );
        assert_eq!(hasher.queue_depth(), 0);
        // A hash of another cost in the queue runs alone, with the right answer.
        let other = bcrypt::hash("third secret", 5).unwrap();
        let (a, b) = tokio::join!(
            hasher.verify("third secret", Some(&other)),
            hasher.verify("first secret", Some(&hashes[0]))
        );
        assert!(a.unwrap() && b.unwrap());
    }

    #[tokio::test]
    async fn a_full_queue_answers_overloaded_at_once_and_takes_work_again_once_drained() {
        let hasher = Hasher::start_with_capacity(1, 10, 2).unwrap();
        let hash = bcrypt::hash("secret", 10).unwrap();
        // Polled in order: the first two are queued before the third asks.
        let (a, b, c) = tokio::join!(
            hasher.verify("secret", Some(&hash)),
            hasher.verify("secret", Some(&hash)),
            hasher.verify("secret", Some(&hash)),
        );
        assert!(a.unwrap() && b.unwrap());
        assert!(matches!(c, Err(HashError::Overloaded)));
        assert_eq!(hasher.queue_depth(), 0);
        assert!(hasher.verify("secret", Some(&hash)).await.unwrap());
    }

    #[test]
    fn the_cost_is_read_from_the_hash() {
        assert_eq!(cost_of("$2b$10$abcdefghijklmnopqrstuu"), Some(10));
        assert_eq!(cost_of("$2y$04$x"), Some(4));
        assert_eq!(cost_of("plain"), None);
        assert_eq!(cost_of("$2b$99$x"), None);
    }
}
