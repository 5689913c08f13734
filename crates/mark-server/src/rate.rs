//! A request rate per client address, as the demarkus server keeps one: a
//! token bucket per IP address (a rate per second and a burst), decided with
//! the caller's clock. The listener closes a stream over the rate without a
//! byte and without freeing its slot, as demarkus does (see
//! [`crate::Limits::rate`]).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Requests per second each client address may send, and how many it may
/// send at once after a quiet spell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Tokens added per second.
    pub per_second: f64,
    /// The bucket's size.
    pub burst: f64,
}

impl Rate {
    /// Parses `N/s` (or a bare `N`), each address's requests per second.
    pub fn parse_per_second(text: &str) -> Result<f64, String> {
        let number = text.trim().strip_suffix("/s").unwrap_or(text.trim());
        match number.parse::<f64>() {
            Ok(n) if n.is_finite() && n > 0.0 => Ok(n),
            _ => Err(format!(
                "`{text}` is not a rate: give requests per second, e.g. 50/s"
            )),
        }
    }
}

/// One bucket per client address; addresses idle for a minute are dropped.
#[derive(Debug)]
pub struct RateLimiter {
    rate: Rate,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// How long an address's bucket is kept without a request (a full bucket
/// by then anyway at any useful rate).
const FORGET_AFTER: Duration = Duration::from_secs(60);

impl RateLimiter {
    /// A limiter where every address starts with a full bucket.
    pub fn new(rate: Rate) -> RateLimiter {
        RateLimiter {
            rate,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `peer` may send one more request at `now` (taking a token).
    pub fn admit(&self, peer: IpAddr, now: Instant) -> bool {
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        buckets.retain(|_, b| now.saturating_duration_since(b.at) < FORGET_AFTER);
        let bucket = buckets.entry(peer).or_insert(Bucket {
            tokens: self.rate.burst,
            at: now,
        });
        let refill = now.saturating_duration_since(bucket.at).as_secs_f64() * self.rate.per_second;
        bucket.tokens = (bucket.tokens + refill).min(self.rate.burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_rate() {
        let limiter = RateLimiter::new(Rate {
            per_second: 50.0,
            burst: 100.0,
        });
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.1".parse().unwrap(), "10.0.0.1".parse().unwrap());
        let t0 = Instant::now();
        assert!((0..100).all(|_| limiter.admit(a, t0)));
        assert!(!limiter.admit(a, t0));
        // Another address has its own bucket.
        assert!(limiter.admit(b, t0));
        // 50 per second: one token every 20 ms.
        assert!(!limiter.admit(a, t0 + Duration::from_millis(10)));
        assert!(limiter.admit(a, t0 + Duration::from_millis(30)));
        assert!(!limiter.admit(a, t0 + Duration::from_millis(31)));
        // Never more than the burst, however long the quiet spell.
        let later = t0 + Duration::from_secs(30);
        assert_eq!((0..200).filter(|_| limiter.admit(a, later)).count(), 100);
    }

    #[test]
    fn rates_parse_with_or_without_per_second() {
        assert_eq!(Rate::parse_per_second("50/s"), Ok(50.0));
        assert_eq!(Rate::parse_per_second("2.5"), Ok(2.5));
        assert!(Rate::parse_per_second("0/s").is_err());
        assert!(Rate::parse_per_second("fast").is_err());
    }
}
