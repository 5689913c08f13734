//! How fast a session sends requests to one server: as fast as it likes
//! until the server closes a stream without answering (a demarkus server
//! over its request rate, 50 per second per address), then one request per
//! interval that starts under that rate, doubles at each further refusal and
//! shrinks back as answers come. A refusal also holds every request back for
//! a pause, so a refused burst is followed by quiet, never by a retry storm.
//!
//! Pure bookkeeping: the caller gives the time ([`Pace::ready_at`],
//! [`Pace::sent`], [`Pace::answered`], [`Pace::unanswered`]) and does the
//! waiting (`sources::RemoteSource`).

use std::time::{Duration, Instant};

/// The interval after the first refusal: 25 requests per second, half of
/// demarkus' 50, so its bucket refills while the session goes on.
pub const FIRST_INTERVAL: Duration = Duration::from_millis(40);
/// The slowest pace further refusals lead to: two requests per second.
pub const LONGEST_INTERVAL: Duration = Duration::from_millis(500);
/// How long every request waits after a refusal (demarkus' bucket refills
/// 25 requests meanwhile).
pub const PAUSE: Duration = Duration::from_millis(500);
/// Requests one session has in flight to a server at most: under demarkus'
/// 10 streams per connection, so its own requests never wait for a slot.
pub const MAX_IN_FLIGHT: usize = 8;
/// How many more times a read the server closed unanswered is sent (at the
/// pace, after the pause); a write is never sent again.
pub const RESENDS: usize = 2;

/// The pace of one session's requests to one server.
#[derive(Debug, Clone)]
pub struct Pace {
    /// `None` until the server first refused a request.
    interval: Option<Duration>,
    /// The earliest time the next request may go.
    next: Option<Instant>,
    /// When the pace last slowed: refusals of requests sent before it are
    /// the same burst and slow it no further.
    slowed_at: Option<Instant>,
}

impl Default for Pace {
    fn default() -> Pace {
        Pace::new()
    }
}

impl Pace {
    /// Unpaced: every request goes at once.
    pub fn new() -> Pace {
        Pace {
            interval: None,
            next: None,
            slowed_at: None,
        }
    }

    /// The interval between requests, once the server has refused one.
    pub fn interval(&self) -> Option<Duration> {
        self.interval
    }

    /// When the next request may go: `now` or later.
    pub fn ready_at(&self, now: Instant) -> Instant {
        self.next.map_or(now, |next| next.max(now))
    }

    /// A request went at `now` (at or after [`Pace::ready_at`]).
    pub fn sent(&mut self, now: Instant) {
        if let Some(interval) = self.interval {
            self.next = Some(self.ready_at(now) + interval);
        }
    }

    /// A request was answered: the pace quickens by a sixteenth of its
    /// interval, down to [`FIRST_INTERVAL`] (never back to unpaced: the
    /// server's limit stays).
    pub fn answered(&mut self) {
        if let Some(interval) = self.interval {
            self.interval = Some((interval - interval / 16).max(FIRST_INTERVAL));
        }
    }

    /// The server closed a request sent at `asked` without answering; `now`
    /// is when that was seen. The first refusal of a burst slows the pace
    /// (to [`FIRST_INTERVAL`], then twice the interval, up to
    /// [`LONGEST_INTERVAL`]) and holds every request for [`PAUSE`].
    pub fn unanswered(&mut self, asked: Instant, now: Instant) {
        if self.slowed_at.is_some_and(|at| asked < at) {
            return;
        }
        self.interval = Some(match self.interval {
            None => FIRST_INTERVAL,
            Some(interval) => (interval * 2).min(LONGEST_INTERVAL),
        });
        self.slowed_at = Some(now);
        self.next = Some(self.ready_at(now).max(now + PAUSE));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpaced_until_the_server_refuses() {
        let mut pace = Pace::new();
        let t0 = Instant::now();
        for _ in 0..100 {
            assert_eq!(pace.ready_at(t0), t0);
            pace.sent(t0);
            pace.answered();
        }
        assert_eq!(pace.interval(), None);
    }

    #[test]
    fn a_refusal_pauses_then_paces_under_the_rate() {
        let mut pace = Pace::new();
        let t0 = Instant::now();
        pace.sent(t0);
        let seen = t0 + Duration::from_millis(5);
        pace.unanswered(t0, seen);
        assert_eq!(pace.interval(), Some(FIRST_INTERVAL));
        let first = pace.ready_at(seen);
        assert_eq!(first, seen + PAUSE);
        pace.sent(first);
        // Requests asked at the same moment are spaced by the interval.
        assert_eq!(pace.ready_at(first), first + FIRST_INTERVAL);
        pace.sent(first);
        assert_eq!(pace.ready_at(first), first + 2 * FIRST_INTERVAL);
    }

    #[test]
    fn one_refused_burst_slows_once_and_a_later_refusal_slows_again() {
        let mut pace = Pace::new();
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // Eight requests in flight, all refused: one slowing.
        for i in 0..8 {
            pace.unanswered(t0, t0 + ms(10 + i));
        }
        assert_eq!(pace.interval(), Some(FIRST_INTERVAL));
        // A request sent after that slowing, refused too: slower.
        pace.unanswered(t0 + ms(600), t0 + ms(610));
        assert_eq!(pace.interval(), Some(2 * FIRST_INTERVAL));
        // Never slower than the longest interval.
        for i in 1..20 {
            let at = t0 + Duration::from_secs(i);
            pace.unanswered(at, at + ms(1));
        }
        assert_eq!(pace.interval(), Some(LONGEST_INTERVAL));
        // Answers quicken it back to the first interval, not beyond.
        for _ in 0..200 {
            pace.answered();
        }
        assert_eq!(pace.interval(), Some(FIRST_INTERVAL));
    }

    proptest::proptest! {
        /// Whatever mix of answers and refusals comes, in any order of
        /// time: the next request is never due before now, a paced
        /// interval stays between the first and the longest, and requests
        /// sent at one moment are never closer than the interval.
        #[test]
        fn the_pace_stays_within_its_bounds(
            events in proptest::collection::vec((0u8..3, 0u64..2_000), 1..200)
        ) {
            let mut pace = Pace::new();
            let t0 = Instant::now();
            let mut now = t0;
            for (kind, step_ms) in events {
                now += Duration::from_millis(step_ms);
                let ready = pace.ready_at(now);
                proptest::prop_assert!(ready >= now);
                match kind {
                    0 => {
                        pace.sent(ready);
                        if let Some(interval) = pace.interval() {
                            proptest::prop_assert!(pace.ready_at(ready) >= ready + interval);
                        }
                    }
                    1 => pace.answered(),
                    _ => pace.unanswered(now.checked_sub(Duration::from_millis(step_ms / 2)).unwrap_or(t0), now),
                }
                if let Some(interval) = pace.interval() {
                    proptest::prop_assert!((FIRST_INTERVAL..=LONGEST_INTERVAL).contains(&interval));
                }
            }
        }
    }
}
