//! Rate limits (governor), built once at start: per client address on the protocol
//! and login endpoints, and per account on login, checked before any password is
//! hashed. Stale keys are pruned in the background.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

/// Which limit a request counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bucket {
    Authorize,
    Login,
    Token,
    Introspect,
    Revoke,
    /// Entering a device's user code (RFC 8628 §5.1: the codes are short, so guessing
    /// them must be slowed down).
    Device,
    /// Open sign-up: each one hashes a password and may send mail.
    Signup,
}

/// Sign-in attempts per minute and burst from one address. An office behind one NAT
/// address signs in together at nine; guessing is held back per account instead.
pub const LOGIN_QUOTA: (u32, u32) = (60, 20);

/// Requests per minute and burst, per client address.
pub fn quota(bucket: Bucket) -> (u32, u32) {
    match bucket {
        Bucket::Authorize => (300, 100),
        Bucket::Login => LOGIN_QUOTA,
        Bucket::Token => (1200, 300),
        Bucket::Introspect => (6000, 1000),
        Bucket::Revoke => (300, 100),
        Bucket::Device => (30, 10),
        Bucket::Signup => (10, 5),
    }
}

/// Sign-in attempts per minute and burst, per account name (existing or not, so the
/// limit reveals nothing about which accounts exist).
pub const ACCOUNT_QUOTA: (u32, u32) = (10, 5);

fn limiter<K: std::hash::Hash + Eq + Clone>((per_minute, burst): (u32, u32)) -> DefaultKeyedRateLimiter<K> {
    let per_minute = NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN);
    let burst = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
    DefaultKeyedRateLimiter::keyed(Quota::per_minute(per_minute).allow_burst(burst))
}

struct Limiters {
    authorize: DefaultKeyedRateLimiter<IpAddr>,
    login: DefaultKeyedRateLimiter<IpAddr>,
    token: DefaultKeyedRateLimiter<IpAddr>,
    introspect: DefaultKeyedRateLimiter<IpAddr>,
    revoke: DefaultKeyedRateLimiter<IpAddr>,
    device: DefaultKeyedRateLimiter<IpAddr>,
    signup: DefaultKeyedRateLimiter<IpAddr>,
    account: DefaultKeyedRateLimiter<String>,
    /// Second-factor codes per account id: a keyspace of its own, so that no typed
    /// username can drain another account's budget.
    second_factor: DefaultKeyedRateLimiter<i64>,
}

/// `None` inside when rate limiting is switched off (stress runs only).
#[derive(Clone)]
pub struct RateLimits {
    inner: Option<Arc<Limiters>>,
}

impl RateLimits {
    pub fn new(enabled: bool) -> Self {
        let inner = enabled.then(|| {
            Arc::new(Limiters {
                authorize: limiter(quota(Bucket::Authorize)),
                login: limiter(quota(Bucket::Login)),
                token: limiter(quota(Bucket::Token)),
                introspect: limiter(quota(Bucket::Introspect)),
                revoke: limiter(quota(Bucket::Revoke)),
                device: limiter(quota(Bucket::Device)),
                signup: limiter(quota(Bucket::Signup)),
                account: limiter(ACCOUNT_QUOTA),
                second_factor: limiter(ACCOUNT_QUOTA),
            })
        });
        Self { inner }
    }

    /// Whether any limit applies (off only for load tests).
    pub fn enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// `Err(wait)` when the address is over its limit for `bucket`.
    pub fn check_ip(&self, bucket: Bucket, ip: IpAddr) -> Result<(), Duration> {
        let Some(l) = &self.inner else { return Ok(()) };
        let limiter = match bucket {
            Bucket::Authorize => &l.authorize,
            Bucket::Login => &l.login,
            Bucket::Token => &l.token,
            Bucket::Introspect => &l.introspect,
            Bucket::Revoke => &l.revoke,
            Bucket::Device => &l.device,
            Bucket::Signup => &l.signup,
        };
        limiter
            .check_key(&ip)
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }

    /// `Err(wait)` when the account name has had too many sign-in attempts.
    pub fn check_account(&self, username: &str) -> Result<(), Duration> {
        let Some(l) = &self.inner else { return Ok(()) };
        let key: String = username.trim().to_lowercase().chars().take(256).collect();
        l.account
            .check_key(&key)
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }

    /// `Err(wait)` when the account has had too many second-factor attempts.
    pub fn check_second_factor(&self, user_id: i64) -> Result<(), Duration> {
        let Some(l) = &self.inner else { return Ok(()) };
        l.second_factor
            .check_key(&user_id)
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }

    /// Forgets keys whose limits have fully recovered, so memory stays bounded.
    pub fn prune(&self) {
        if let Some(l) = &self.inner {
            for limiter in [
                &l.authorize,
                &l.login,
                &l.token,
                &l.introspect,
                &l.revoke,
                &l.device,
                &l.signup,
            ] {
                limiter.retain_recent();
                limiter.shrink_to_fit();
            }
            l.account.retain_recent();
            l.account.shrink_to_fit();
            l.second_factor.retain_recent();
            l.second_factor.shrink_to_fit();
        }
    }
}

/// Seconds to put in `Retry-After`: at least one.
pub fn retry_after_secs(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_over_its_burst_is_told_to_wait_and_others_are_not() {
        let limits = RateLimits::new(true);
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let (_, burst) = quota(Bucket::Login);
        for _ in 0..burst {
            assert!(limits.check_ip(Bucket::Login, ip).is_ok());
        }
        let wait = limits.check_ip(Bucket::Login, ip).unwrap_err();
        assert!(wait > Duration::ZERO && retry_after_secs(wait) >= 1);
        assert!(limits.check_ip(Bucket::Login, "192.0.2.2".parse().unwrap()).is_ok());
        assert!(limits.check_ip(Bucket::Token, ip).is_ok(), "buckets are separate");
    }

    #[test]
    fn accounts_are_limited_by_name_case_insensitively() {
        let limits = RateLimits::new(true);
        for _ in 0..ACCOUNT_QUOTA.1 {
            assert!(limits.check_account("Alice").is_ok());
        }
        assert!(limits.check_account("alice").is_err());
        assert!(limits.check_account("bob").is_ok());
    }

    #[test]
    fn switched_off_means_never_limited() {
        let limits = RateLimits::new(false);
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        assert!((0..1000).all(|_| limits.check_ip(Bucket::Login, ip).is_ok()));
    }
}
