//! Recent token decisions, so a scrape every few seconds does not cost two apiserver calls each time: an
//! allowed token is trusted again for 10 s (openshift/router caches TokenReviews that long), a refused one for
//! 5 s (its SubjectAccessReview denial cache). Failures to ask are not kept. Tokens are kept only as SHA-256
//! digests, and the cache is emptied when it holds more than `MAX_ENTRIES`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::Decision;

pub const ALLOW_TTL: Duration = Duration::from_secs(10);
pub const DENY_TTL: Duration = Duration::from_secs(5);
const MAX_ENTRIES: usize = 1024;

type Key = ([u8; 32], &'static str, &'static str);

#[derive(Debug, Default)]
pub struct ReviewCache {
    entries: Mutex<HashMap<Key, (Decision, Instant)>>,
}

impl ReviewCache {
    pub fn get(&self, token: &str, verb: &'static str, subresource: &'static str) -> Option<Decision> {
        let entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (decision, until) = entries.get(&key(token, verb, subresource))?;
        (Instant::now() < *until).then_some(*decision)
    }

    pub fn put(&self, token: &str, verb: &'static str, subresource: &'static str, decision: Decision) {
        let ttl = match decision {
            Decision::Allow => ALLOW_TTL,
            Decision::Unauthenticated | Decision::Forbidden => DENY_TTL,
            Decision::Failed => return,
        };
        let mut entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(key(token, verb, subresource), (decision, Instant::now() + ttl));
    }
}

fn key(token: &str, verb: &'static str, subresource: &'static str) -> Key {
    (Sha256::digest(token.as_bytes()).into(), verb, subresource)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_are_kept_per_token_and_request_kind_but_failures_are_not() {
        let cache = ReviewCache::default();
        cache.put("a", "get", "metrics", Decision::Allow);
        cache.put("b", "get", "metrics", Decision::Failed);
        assert_eq!(cache.get("a", "get", "metrics"), Some(Decision::Allow));
        assert_eq!(cache.get("a", "get", "debug"), None);
        assert_eq!(cache.get("b", "get", "metrics"), None);
    }
}
