//! Contention with another writer of this router's status entry, as OpenShift's router tracks it: two routers
//! with one `ROUTER_SERVICE_NAME` but different settings (a shard, a canonical hostname) would otherwise rewrite
//! each other's entry forever.
//!
//! Per route, the entry last seen is remembered. Another writer's change of it marks the route a candidate the
//! first time and contended the next (the entry went from what we wrote, or last saw, to something else). A
//! contended route gets no write from this router for one interval. Past `MAX_CONTENTIONS` contentions in an
//! interval, no route gets a status write until the next one, and a warning names the conflict. Our own writes
//! (and their echoes through the watch) are not changes by another writer.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::model::ObjectKey;

/// OpenShift's router: the resync interval (30 min) over 10.
pub const INTERVAL: Duration = Duration::from_secs(180);
/// More contentions than this in an interval pause every status write.
pub const MAX_CONTENTIONS: usize = 5;

#[derive(Clone, Copy, PartialEq, Debug)]
enum State {
    Candidate,
    Contended,
}

struct Tracked {
    at: Instant,
    state: State,
    /// The entry last seen or written, as `entry::fingerprint`.
    last: u64,
}

pub struct Contention {
    interval: Duration,
    routes: HashMap<ObjectKey, Tracked>,
    /// Contentions counted since the last flush.
    contentions: usize,
    flushed_at: Instant,
}

impl Contention {
    pub fn new(interval: Duration, now: Instant) -> Self {
        Contention { interval, routes: HashMap::new(), contentions: 0, flushed_at: now }
    }

    /// Another writer changed our entry on `key` to `entry` (fingerprint): the route becomes a candidate, or
    /// contended when it already was one and the entry differs from the one last seen.
    pub fn changed_by_another(&mut self, key: &ObjectKey, entry: u64, now: Instant) {
        if self.contentions > MAX_CONTENTIONS {
            return;
        }
        match self.routes.get_mut(key) {
            None => {
                self.routes.insert(key.clone(), Tracked { at: now, state: State::Candidate, last: entry });
            }
            Some(tracked) if tracked.last == entry => {}
            Some(tracked) => {
                if tracked.state == State::Candidate {
                    *tracked = Tracked { at: now, state: State::Contended, last: entry };
                }
                self.contentions += 1;
            }
        }
    }

    /// Our write of `entry` on `key` went through: a change away from it by another writer counts from here.
    pub fn written(&mut self, key: &ObjectKey, entry: u64) {
        if let Some(tracked) = self.routes.get_mut(key) {
            tracked.state = State::Candidate;
            tracked.last = entry;
        }
    }

    /// Whether a write to `key` must wait: it is contended, or too many routes are this interval.
    pub fn holds_back(&self, key: &ObjectKey, now: Instant) -> bool {
        if self.contentions > MAX_CONTENTIONS {
            return true;
        }
        self.routes.get(key).is_some_and(|tracked| {
            tracked.state == State::Contended && now.saturating_duration_since(tracked.at) <= self.interval
        })
    }

    /// When a held-back write to `key` may be tried again.
    pub fn free_at(&self, key: &ObjectKey) -> Instant {
        let next_flush = self.flushed_at + 2 * self.interval;
        match self.routes.get(key) {
            Some(tracked) if self.contentions <= MAX_CONTENTIONS => tracked.at + self.interval,
            _ => next_flush,
        }
    }

    /// Forgets expired contentions and long-quiet candidates and counts what is still contended; true when
    /// the interval that ended saw contention (the caller warns). Run every two intervals.
    pub fn flush(&mut self, now: Instant) -> bool {
        let contention_expired = |at: Instant| now.saturating_duration_since(at) > self.interval;
        let candidate_expired = |at: Instant| now.saturating_duration_since(at) > 3 * self.interval;
        self.routes.retain(|_, tracked| match tracked.state {
            State::Contended => !contention_expired(tracked.at),
            State::Candidate => !candidate_expired(tracked.at),
        });
        let seen = self.contentions > 0;
        self.contentions = self.routes.values().filter(|tracked| tracked.state == State::Contended).count();
        self.flushed_at = now;
        seen
    }

    pub fn flush_due(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.flushed_at) >= 2 * self.interval
    }

    /// A route gone from the store.
    pub fn forget(&mut self, key: &ObjectKey) {
        self.routes.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("ns", name)
    }

    #[test]
    fn a_route_is_contended_on_the_second_change_by_another_writer_and_free_after_the_interval() {
        let start = Instant::now();
        let mut contention = Contention::new(INTERVAL, start);
        let web = key("web");
        contention.changed_by_another(&web, 1, start);
        assert!(!contention.holds_back(&web, start), "one change by another writer is a candidate only");
        contention.written(&web, 2);
        contention.changed_by_another(&web, 2, start);
        assert!(!contention.holds_back(&web, start), "the echo of our own entry is no change");
        contention.changed_by_another(&web, 1, start);
        assert!(contention.holds_back(&web, start + Duration::from_secs(1)));
        assert!(!contention.holds_back(&key("other"), start), "other routes are written");
        assert_eq!(contention.free_at(&web), start + INTERVAL);
        assert!(!contention.holds_back(&web, start + INTERVAL + Duration::from_secs(1)));
    }

    #[test]
    fn many_contentions_hold_back_every_write_until_a_flush_finds_them_expired() {
        let start = Instant::now();
        let mut contention = Contention::new(INTERVAL, start);
        for n in 0..=MAX_CONTENTIONS {
            let route = key(&format!("r{n}"));
            contention.changed_by_another(&route, 1, start);
            contention.changed_by_another(&route, 2, start);
        }
        assert!(contention.holds_back(&key("never-touched"), start), "past the limit nothing is written");
        assert_eq!(contention.free_at(&key("never-touched")), start + 2 * INTERVAL);
        let later = start + 2 * INTERVAL;
        assert!(contention.flush_due(later));
        assert!(contention.flush(later), "the interval saw contention");
        assert!(!contention.holds_back(&key("never-touched"), later));
        assert!(!contention.holds_back(&key("r0"), later), "contentions expire after an interval");
        assert!(!contention.flush(later + 2 * INTERVAL), "a quiet interval");
    }
}
