//! The decisions of the refresh loop, as pure functions of the time: which response is stapled after a fetch
//! (a good one replaces it; revoked or unknown drops it; a failed fetch keeps the last good one until it
//! expires) and when to fetch next (halfway to `nextUpdate`, at most the refresh interval; after a failure,
//! [`RETRY`] or the staple's expiry, whichever comes first).

use std::time::{Duration, SystemTime};

use bytes::Bytes;

use super::response::CertStatus;
use super::verify::Verified;

/// After a failed fetch, the next one comes this much later (less when the refresh interval is shorter).
pub const RETRY: Duration = Duration::from_secs(60);
/// No two fetches of one certificate come closer than this.
const MIN_WAIT: Duration = Duration::from_secs(1);

/// The response being stapled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub der: Bytes,
    pub expires: SystemTime,
}

/// What one fetch gave.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// A verified response saying `good`, with its DER.
    Good(Verified, Bytes),
    /// A verified response saying `revoked` or `unknown`.
    NotGood(Verified),
    /// No usable response: `reason` is the metric's label (`fetch`, `invalid`), `detail` the log's.
    Failed { reason: &'static str, detail: String },
}

/// The staple after `outcome`, given the one `held` before it.
pub fn staple_after(held: Option<Held>, outcome: &Outcome, now: SystemTime) -> Option<Held> {
    match outcome {
        Outcome::Good(verified, der) => Some(Held { der: der.clone(), expires: verified.expires }),
        Outcome::NotGood(_) => None,
        Outcome::Failed { .. } => held.filter(|held| held.expires > now),
    }
}

/// How long to wait before the next fetch.
pub fn next_fetch(outcome: &Outcome, held: Option<&Held>, now: SystemTime, refresh_max: Duration) -> Duration {
    let wait = match outcome {
        Outcome::Good(verified, _) => {
            let validity = verified.expires.duration_since(verified.this_update).unwrap_or_default();
            (verified.this_update + validity / 2).duration_since(now).unwrap_or_default().min(refresh_max)
        }
        Outcome::NotGood(_) => refresh_max,
        Outcome::Failed { .. } => {
            let until_expiry = held.map_or(Duration::MAX, |h| h.expires.duration_since(now).unwrap_or_default());
            RETRY.min(refresh_max).min(until_expiry)
        }
    };
    wait.max(MIN_WAIT)
}

/// The log's words for a status.
pub fn describe(status: &CertStatus) -> String {
    match status {
        CertStatus::Good => "good".to_string(),
        CertStatus::Revoked { at, reason } => {
            let since = at.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            match reason {
                Some(code) => format!("revoked at {since} (Unix time), reason code {code}"),
                None => format!("revoked at {since} (Unix time)"),
            }
        }
        CertStatus::Unknown => "unknown to the responder".to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn verified(status: CertStatus, this_update: SystemTime, valid_for: Duration) -> Verified {
        Verified { status, this_update, expires: this_update + valid_for }
    }

    #[test]
    fn good_replaces_not_good_drops_failure_keeps_until_expiry() {
        let now = SystemTime::UNIX_EPOCH + 1000 * HOUR;
        let old = Held { der: Bytes::from_static(b"old"), expires: now + HOUR };
        let good = Outcome::Good(verified(CertStatus::Good, now, 2 * HOUR), Bytes::from_static(b"new"));
        assert_eq!(staple_after(Some(old.clone()), &good, now).unwrap().der, "new");
        let revoked = CertStatus::Revoked { at: now, reason: Some(1) };
        let not_good = Outcome::NotGood(verified(revoked, now, 2 * HOUR));
        assert_eq!(staple_after(Some(old.clone()), &not_good, now), None);
        let failed = Outcome::Failed { reason: "fetch", detail: "refused".into() };
        assert_eq!(staple_after(Some(old.clone()), &failed, now), Some(old.clone()));
        assert_eq!(staple_after(Some(old.clone()), &failed, now + HOUR), None, "expired: dropped");
        assert_eq!(staple_after(None, &failed, now), None);
    }

    #[test]
    fn fetch_halfway_to_next_update_at_most_the_refresh_interval_and_retry_before_expiry() {
        let now = SystemTime::UNIX_EPOCH + 1000 * HOUR;
        let good = Outcome::Good(verified(CertStatus::Good, now, 4 * HOUR), Bytes::new());
        assert_eq!(next_fetch(&good, None, now, 24 * HOUR), 2 * HOUR);
        assert_eq!(next_fetch(&good, None, now, HOUR), HOUR);
        let stale = Outcome::Good(verified(CertStatus::Good, now - 4 * HOUR, 5 * HOUR), Bytes::new());
        assert_eq!(next_fetch(&stale, None, now, HOUR), MIN_WAIT, "past halfway: soon, never in a tight loop");
        let failed = Outcome::Failed { reason: "fetch", detail: String::new() };
        assert_eq!(next_fetch(&failed, None, now, HOUR), RETRY);
        assert_eq!(next_fetch(&failed, None, now, Duration::from_secs(2)), Duration::from_secs(2));
        let soon = Held { der: Bytes::new(), expires: now + Duration::from_secs(10) };
        assert_eq!(next_fetch(&failed, Some(&soon), now, HOUR), Duration::from_secs(10));
    }
}
