//! Failed-authentication limiter: an in-process token bucket per client key.
//!
//! Only failures spend tokens, so legitimate traffic is never throttled here
//! while credential guessing is slowed to `rps` attempts per second per key.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::sync::Mutex;
use std::time::Instant;

use http::HeaderMap;

/// Upper bound on tracked keys so a flood of distinct clients cannot grow
/// memory without bound.
pub const MAX_TRACKED_KEYS: usize = 10_000;

/// What identifies a client for failure accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailureKey {
    /// The TCP peer address (right when clients connect directly).
    #[default]
    Peer,
    /// One bucket for the whole process (a global brake on guessing).
    Global,
    /// First `X-Forwarded-For` address, else the peer. Only safe behind a
    /// proxy that overwrites the header, since clients can forge it.
    ForwardedFor,
}

impl FromStr for FailureKey {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "peer" | "client" | "remote" => Ok(Self::Peer),
            "global" | "process" => Ok(Self::Global),
            "xff" | "x-forwarded-for" => Ok(Self::ForwardedFor),
            _ => Err(format!(
                "unknown limiter key {s:?}; expected peer, global or xff"
            )),
        }
    }
}

impl FailureKey {
    /// The bucket name for a request.
    pub fn bucket(self, headers: &HeaderMap, peer: Option<IpAddr>) -> String {
        let peer_key = || peer.map_or_else(|| "unknown".to_owned(), client_of);
        match self {
            Self::Global => "global".to_owned(),
            Self::Peer => peer_key(),
            Self::ForwardedFor => forwarded_for(headers)
                .map(client_of)
                .unwrap_or_else(peer_key),
        }
    }
}

/// The client an address stands for: an IPv4 address, or an IPv6 address's /64 (one host
/// commonly holds a whole /64, and must not get a bucket per address in it).
fn client_of(ip: IpAddr) -> String {
    match ip {
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map_or_else(|| ip.to_string(), |v4| v4.to_string()),
        IpAddr::V4(v4) => v4.to_string(),
    }
}

/// First address in the first `X-Forwarded-For` header, if it parses; a
/// garbage value falls back to the peer rather than creating a bucket per
/// arbitrary string an attacker chooses.
fn forwarded_for(headers: &HeaderMap) -> Option<IpAddr> {
    let value = headers.get("x-forwarded-for")?.to_str().ok()?;
    let first = value.split(',').next()?.trim();
    IpAddr::from_str(first)
        .ok()
        .or_else(|| SocketAddr::from_str(first).ok().map(|s| s.ip()))
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

/// Token-bucket limiter over failed attempts.
#[derive(Debug)]
pub struct FailureLimiter {
    rps: f64,
    burst: f64,
    max_keys: usize,
    state: Mutex<State>,
}

/// The tracked buckets, and the one that keys beyond `max_keys` share.
#[derive(Debug)]
struct State {
    buckets: HashMap<String, Bucket>,
    overflow: Bucket,
}

impl FailureLimiter {
    /// `None` when `rps` or `burst` is zero: the limiter is disabled.
    pub fn new(rps: f64, burst: u32) -> Option<Self> {
        Self::with_capacity(rps, burst, MAX_TRACKED_KEYS)
    }

    fn with_capacity(rps: f64, burst: u32, max_keys: usize) -> Option<Self> {
        if !(rps.is_finite() && rps > 0.0) || burst == 0 {
            return None;
        }
        Some(Self {
            rps,
            burst: f64::from(burst),
            max_keys: max_keys.max(1),
            state: Mutex::new(State {
                buckets: HashMap::new(),
                overflow: Bucket {
                    tokens: f64::from(burst),
                    updated: Instant::now(),
                },
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked mid-update; the
        // map is still usable and refusing service would be worse.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn refilled(&self, bucket: Bucket, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
        (bucket.tokens + elapsed * self.rps).min(self.burst)
    }

    /// `Err(retry_after_secs)` when `key` has no token left for another
    /// failure; unknown keys are allowed and not inserted, except when the
    /// map is full: they then share the overflow bucket.
    pub fn check_at(&self, key: &str, now: Instant) -> Result<(), u64> {
        let state = self.lock();
        let bucket = match state.buckets.get(key) {
            Some(b) => b,
            None if state.buckets.len() >= self.max_keys => &state.overflow,
            None => return Ok(()),
        };
        let tokens = self.refilled(*bucket, now);
        if tokens >= 1.0 {
            return Ok(());
        }
        let wait = ((1.0 - tokens) / self.rps).ceil();
        // `as` saturates for huge values; clamp to at least one second so
        // clients never get `Retry-After: 0`.
        Err((wait as u64).max(1))
    }

    /// Spend one token for a failed attempt by `key`.
    pub fn record_failure_at(&self, key: &str, now: Instant) {
        let mut state = self.lock();
        let state = &mut *state;
        if let Some(bucket) = state.buckets.get_mut(key) {
            *bucket = self.spent(*bucket, now);
            return;
        }
        if state.buckets.len() >= self.max_keys {
            // Only buckets that have fully refilled (they carry no state) make
            // room. A bucket still draining is never dropped for a newcomer:
            // otherwise a flood of fresh peers could flush a guesser's bucket.
            state
                .buckets
                .retain(|_, b| self.refilled(*b, now) < self.burst);
        }
        if state.buckets.len() >= self.max_keys {
            // Still full: newcomers share one bucket until room frees up.
            state.overflow = self.spent(state.overflow, now);
            return;
        }
        let fresh = Bucket {
            tokens: self.burst,
            updated: now,
        };
        state.buckets.insert(key.to_owned(), self.spent(fresh, now));
    }

    fn spent(&self, bucket: Bucket, now: Instant) -> Bucket {
        Bucket {
            tokens: (self.refilled(bucket, now) - 1.0).max(0.0),
            updated: now,
        }
    }

    /// Number of tracked keys.
    #[cfg(test)]
    fn tracked_keys(&self) -> usize {
        self.lock().buckets.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn burst_then_limited_then_recovers() {
        let limiter = FailureLimiter::new(5.0, 10).expect("enabled");
        let t0 = Instant::now();
        for _ in 0..10 {
            assert_eq!(limiter.check_at("a", t0), Ok(()));
            limiter.record_failure_at("a", t0);
        }
        let retry = limiter.check_at("a", t0).expect_err("11th is limited");
        assert!(retry >= 1);
        // One token refills after 1/rps = 200 ms.
        assert!(
            limiter
                .check_at("a", t0 + Duration::from_millis(150))
                .is_err()
        );
        assert_eq!(
            limiter.check_at("a", t0 + Duration::from_millis(200)),
            Ok(())
        );
        limiter.record_failure_at("a", t0 + Duration::from_millis(200));
        assert!(
            limiter
                .check_at("a", t0 + Duration::from_millis(250))
                .is_err()
        );
        // Full refill after burst / rps = 2 s.
        let later = t0 + Duration::from_secs(3);
        for _ in 0..10 {
            assert_eq!(limiter.check_at("a", later), Ok(()));
            limiter.record_failure_at("a", later);
        }
        assert!(limiter.check_at("a", later).is_err());
    }

    #[test]
    fn retry_after_rounds_up() {
        let limiter = FailureLimiter::new(0.1, 1).expect("enabled");
        let t0 = Instant::now();
        limiter.record_failure_at("a", t0);
        assert_eq!(limiter.check_at("a", t0), Err(10));
        assert_eq!(
            limiter.check_at("a", t0 + Duration::from_millis(500)),
            Err(10)
        );
        assert_eq!(limiter.check_at("a", t0 + Duration::from_secs(9)), Err(1));
        assert_eq!(limiter.check_at("a", t0 + Duration::from_secs(10)), Ok(()));
    }

    #[test]
    fn per_key_isolation() {
        let limiter = FailureLimiter::new(1.0, 2).expect("enabled");
        let t0 = Instant::now();
        limiter.record_failure_at("a", t0);
        limiter.record_failure_at("a", t0);
        assert!(limiter.check_at("a", t0).is_err());
        assert_eq!(limiter.check_at("b", t0), Ok(()));
    }

    #[test]
    fn disabled_when_zero() {
        assert!(FailureLimiter::new(0.0, 10).is_none());
        assert!(FailureLimiter::new(5.0, 0).is_none());
        assert!(FailureLimiter::new(f64::NAN, 10).is_none());
        assert!(FailureLimiter::new(-1.0, 10).is_none());
    }

    #[test]
    fn bounded_memory() {
        let limiter = FailureLimiter::with_capacity(1.0, 5, 100).expect("enabled");
        let t0 = Instant::now();
        for i in 0..1000 {
            limiter.record_failure_at(&format!("k{i}"), t0 + Duration::from_millis(i));
        }
        assert!(limiter.tracked_keys() <= 100);
        // Once room frees up (k0 has refilled), a limited key is tracked again.
        limiter.record_failure_at("k999", t0 + Duration::from_millis(1000));
        limiter.record_failure_at("k999", t0 + Duration::from_millis(1000));
        limiter.record_failure_at("k999", t0 + Duration::from_millis(1000));
        limiter.record_failure_at("k999", t0 + Duration::from_millis(1000));
        limiter.record_failure_at("k999", t0 + Duration::from_millis(1000));
        assert!(
            limiter
                .check_at("k999", t0 + Duration::from_millis(1000))
                .is_err()
        );
    }

    #[test]
    fn a_flood_of_peers_cannot_flush_a_limited_bucket() {
        let limiter = FailureLimiter::with_capacity(1.0, 5, 100).expect("enabled");
        let t0 = Instant::now();
        for _ in 0..5 {
            limiter.record_failure_at("guesser", t0);
        }
        assert!(limiter.check_at("guesser", t0).is_err());
        // Ten thousand fresh peers, one failure each, within the same second.
        for i in 0..10_000u64 {
            limiter.record_failure_at(&format!("peer{i}"), t0 + Duration::from_micros(i));
        }
        let now = t0 + Duration::from_millis(50);
        assert!(limiter.check_at("guesser", now).is_err(), "flushed");
        assert!(limiter.tracked_keys() <= 100);
        // The newcomers beyond the map share one bucket, which is spent.
        assert!(limiter.check_at("peer9999", now).is_err());
    }

    #[test]
    fn ipv6_peers_are_keyed_by_their_64() {
        let headers = HeaderMap::new();
        let a: Option<IpAddr> = "2001:db8:1:2:aaaa::1".parse().ok();
        let b: Option<IpAddr> = "2001:db8:1:2:ffff::9".parse().ok();
        let c: Option<IpAddr> = "2001:db8:1:3::1".parse().ok();
        let key = |ip| FailureKey::Peer.bucket(&headers, ip);
        assert_eq!(key(a), key(b));
        assert_ne!(key(a), key(c));
        let mapped: Option<IpAddr> = "::ffff:10.0.0.1".parse().ok();
        assert_eq!(key(mapped), "10.0.0.1");
    }

    #[test]
    fn full_buckets_are_dropped_first() {
        let limiter = FailureLimiter::with_capacity(1.0, 5, 3).expect("enabled");
        let t0 = Instant::now();
        limiter.record_failure_at("old", t0);
        for _ in 0..5 {
            limiter.record_failure_at("hot", t0 + Duration::from_secs(10));
        }
        limiter.record_failure_at("x", t0 + Duration::from_secs(10));
        // "old" has refilled by now, so it is dropped, "hot" stays limited.
        limiter.record_failure_at("y", t0 + Duration::from_secs(10));
        assert_eq!(limiter.tracked_keys(), 3);
        assert!(
            limiter
                .check_at("hot", t0 + Duration::from_secs(10))
                .is_err()
        );
    }

    #[test]
    fn key_parsing_and_bucket_names() {
        assert_eq!("peer".parse(), Ok(FailureKey::Peer));
        assert_eq!("Client".parse(), Ok(FailureKey::Peer));
        assert_eq!("remote".parse(), Ok(FailureKey::Peer));
        assert_eq!("global".parse(), Ok(FailureKey::Global));
        assert_eq!("process".parse(), Ok(FailureKey::Global));
        assert_eq!("xff".parse(), Ok(FailureKey::ForwardedFor));
        assert_eq!("X-Forwarded-For".parse(), Ok(FailureKey::ForwardedFor));
        assert!("ip".parse::<FailureKey>().is_err());

        let peer: Option<IpAddr> = "10.0.0.1".parse().ok();
        let mut headers = HeaderMap::new();
        assert_eq!(FailureKey::Peer.bucket(&headers, peer), "10.0.0.1");
        assert_eq!(FailureKey::Peer.bucket(&headers, None), "unknown");
        assert_eq!(FailureKey::Global.bucket(&headers, peer), "global");
        assert_eq!(FailureKey::ForwardedFor.bucket(&headers, peer), "10.0.0.1");
        headers.insert(
            "x-forwarded-for",
            http::HeaderValue::from_static(" 203.0.113.7 , 10.0.0.2"),
        );
        assert_eq!(
            FailureKey::ForwardedFor.bucket(&headers, peer),
            "203.0.113.7"
        );
        headers.insert(
            "x-forwarded-for",
            http::HeaderValue::from_static("not-an-ip"),
        );
        assert_eq!(FailureKey::ForwardedFor.bucket(&headers, peer), "10.0.0.1");
    }
}
