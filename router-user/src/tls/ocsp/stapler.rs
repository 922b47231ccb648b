//! The staples of the certificates :443 serves. `track` is given every certificate of each published table;
//! each new one with an OCSP responder and a known issuer gets a task that fetches, verifies and refreshes its
//! response ([`super::schedule`] decides), and a certificate no table serves any more loses its task and staple.
//! `staple` runs in every handshake's set-up: a map lookup by the leaf, never a fetch, so a responder that is
//! slow or down never delays a client; it hands out the stapled copy of the certificate while its response is
//! current, the certificate as it is otherwise.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use rustls::sign::CertifiedKey;
use tokio::sync::Semaphore;
use tokio::task::AbortHandle;
use tracing::{debug, info, warn};

use super::fetch::{client, fetch, OcspClient};
use super::response::CertStatus;
use super::schedule::{describe, next_fetch, staple_after, Held, Outcome};
use super::target::{target, Target};
use super::verify::verify;
use crate::metrics::{OcspFailureLabels, OcspMetrics};

/// Fetches in flight at once, all certificates together: a table of many certificates of one CA must not send
/// its responder a burst of one request per certificate at start.
const CONCURRENT_FETCHES: usize = 8;

/// A certificate with its stapled response, served until `expires`.
#[derive(Clone)]
struct Stapled {
    key: Arc<CertifiedKey>,
    expires: SystemTime,
}

pub struct Stapler {
    /// By leaf certificate (DER): the stapled copies.
    stapled: ArcSwap<HashMap<Vec<u8>, Stapled>>,
    /// By leaf certificate: the task keeping it stapled.
    tracked: Mutex<HashMap<Vec<u8>, AbortHandle>>,
    client: OcspClient,
    fetch_slots: Semaphore,
    metrics: OcspMetrics,
    refresh_max: Duration,
}

impl Stapler {
    /// A stapler tracking nothing yet; `refresh_max` is the longest wait between two fetches of a response.
    pub fn new(metrics: OcspMetrics, refresh_max: Duration) -> Arc<Stapler> {
        Arc::new(Stapler {
            stapled: ArcSwap::from_pointee(HashMap::new()),
            tracked: Mutex::new(HashMap::new()),
            client: client(),
            fetch_slots: Semaphore::new(CONCURRENT_FETCHES),
            metrics,
            refresh_max,
        })
    }

    /// `key` with its current stapled response when there is one, else `key` itself.
    pub fn staple(&self, key: Arc<CertifiedKey>) -> Arc<CertifiedKey> {
        let stapled = self.stapled.load();
        if stapled.is_empty() {
            return key;
        }
        match key.cert.first().and_then(|leaf| stapled.get(leaf.as_ref())) {
            Some(found) if found.expires > SystemTime::now() => Arc::clone(&found.key),
            _ => key,
        }
    }

    /// The certificates served now (the default's and every route's; repeats are fine): new ones are
    /// tracked, those left out are forgotten.
    pub fn track(self: &Arc<Self>, keys: impl IntoIterator<Item = Arc<CertifiedKey>>) {
        let mut wanted: HashMap<Vec<u8>, Arc<CertifiedKey>> = HashMap::new();
        for key in keys {
            if let Some(leaf) = key.cert.first() {
                wanted.entry(leaf.to_vec()).or_insert(key);
            }
        }
        let mut tracked = self.lock();
        let gone: Vec<Vec<u8>> = tracked.keys().filter(|leaf| !wanted.contains_key(*leaf)).cloned().collect();
        for leaf in &gone {
            if let Some(task) = tracked.remove(leaf) {
                task.abort();
            }
        }
        if !gone.is_empty() {
            self.stapled.rcu(|map| {
                let mut map = HashMap::clone(map);
                map.retain(|leaf, _| !gone.contains(leaf));
                map
            });
        }
        for (leaf, key) in wanted {
            if tracked.contains_key(&leaf) {
                continue;
            }
            let task = tokio::spawn(keep_stapled(Arc::downgrade(self), leaf.clone(), key));
            tracked.insert(leaf, task.abort_handle());
        }
        self.metrics.stapled.set(i64::try_from(self.stapled.load().len()).unwrap_or(i64::MAX));
    }

    /// Staples `held` to the certificate `leaf` (or removes its staple), unless it is no longer tracked.
    fn publish(&self, leaf: &[u8], key: &CertifiedKey, held: Option<&Held>) {
        let tracked = self.lock();
        if !tracked.contains_key(leaf) {
            return;
        }
        let stapled = held.map(|held| Stapled {
            key: Arc::new(CertifiedKey {
                cert: key.cert.clone(),
                key: Arc::clone(&key.key),
                ocsp: Some(held.der.to_vec()),
            }),
            expires: held.expires,
        });
        self.stapled.rcu(|map| {
            let mut map = HashMap::clone(map);
            match &stapled {
                Some(stapled) => map.insert(leaf.to_vec(), stapled.clone()),
                None => map.remove(leaf),
            };
            map
        });
        self.metrics.stapled.set(i64::try_from(self.stapled.load().len()).unwrap_or(i64::MAX));
        drop(tracked);
    }

    /// One fetch from the target's responders (the first that answers), verified.
    async fn fetch_verified(&self, target: &Target) -> Outcome {
        // The semaphore is never closed.
        let _slot = self.fetch_slots.acquire().await;
        let mut errors = Vec::new();
        for url in &target.urls {
            self.metrics.fetches.inc();
            match fetch(&self.client, url, &target.request).await {
                Ok(der) => {
                    return match verify(&der, target, SystemTime::now()) {
                        Ok(verified) if verified.status == CertStatus::Good => Outcome::Good(verified, der),
                        Ok(verified) => Outcome::NotGood(verified),
                        Err(detail) => Outcome::Failed { reason: "invalid", detail: format!("{url}: {detail}") },
                    }
                }
                Err(error) => errors.push(format!("{url}: {error}")),
            }
        }
        Outcome::Failed { reason: "fetch", detail: errors.join("; ") }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Vec<u8>, AbortHandle>> {
        self.tracked.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for Stapler {
    fn drop(&mut self) {
        for task in self.lock().values() {
            task.abort();
        }
    }
}

/// Keeps the certificate `leaf` (served as `key`) stapled while the stapler lives and tracks it.
async fn keep_stapled(stapler: Weak<Stapler>, leaf: Vec<u8>, key: Arc<CertifiedKey>) {
    let subject = subject_of(&leaf);
    let target = match target(&key.cert) {
        Ok(target) => target,
        Err(why) if why.contains("no http: OCSP responder") => {
            debug!(certificate = %subject, %why, "not stapled");
            return;
        }
        Err(why) => {
            warn!(certificate = %subject, %why, "names an OCSP responder but cannot be stapled");
            return;
        }
    };
    let mut held: Option<Held> = None;
    loop {
        let Some(stapler) = stapler.upgrade() else { return };
        let outcome = stapler.fetch_verified(&target).await;
        let now = SystemTime::now();
        match &outcome {
            Outcome::Good(..) if held.is_none() => info!(certificate = %subject, "OCSP response stapled"),
            Outcome::Good(..) => debug!(certificate = %subject, "OCSP response refreshed"),
            Outcome::NotGood(verified) => {
                let status = describe(&verified.status);
                warn!(certificate = %subject, %status, "the OCSP responder says the certificate is not good: not stapled");
            }
            Outcome::Failed { detail, .. } => match &held {
                Some(kept) if kept.expires > now => {
                    warn!(certificate = %subject, error = %detail, "OCSP fetch failed; the last good response stays stapled until it expires")
                }
                _ => warn!(certificate = %subject, error = %detail, "OCSP fetch failed; not stapled"),
            },
        }
        let reason = match &outcome {
            Outcome::Good(..) => None,
            Outcome::NotGood(verified) if matches!(verified.status, CertStatus::Revoked { .. }) => Some("revoked"),
            Outcome::NotGood(_) => Some("unknown"),
            Outcome::Failed { reason, .. } => Some(*reason),
        };
        if let Some(reason) = reason {
            stapler.metrics.failures.get_or_create(&OcspFailureLabels { reason }).inc();
        }
        held = staple_after(held, &outcome, now);
        stapler.publish(&leaf, &key, held.as_ref());
        let wait = next_fetch(&outcome, held.as_ref(), now, stapler.refresh_max);
        drop(stapler);
        tokio::time::sleep(wait).await;
    }
}

/// The certificate's subject for logs.
fn subject_of(leaf: &[u8]) -> String {
    x509_parser::parse_x509_certificate(leaf)
        .map_or_else(|_| "(unreadable)".to_string(), |(_, c)| c.subject().to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::tls::certs::certified_key;
    use crate::tls::test_pki::Pki;
    use bytes::Bytes;
    use rustls_pki_types::PrivateKeyDer;

    /// A served certificate (no responder named: its task ends at once, the stapler still tracks it).
    fn served(pki: &Pki) -> Arc<CertifiedKey> {
        let leaf = pki.leaf("a.example.com");
        let key = PrivateKeyDer::Pkcs8(leaf.key.serialize_der().into());
        Arc::new(certified_key(vec![leaf.cert.der().clone(), pki.ca.der().clone()], &key).unwrap())
    }

    #[tokio::test]
    async fn a_staple_is_served_until_it_expires_and_only_while_its_certificate_is_tracked() {
        let stapler = Stapler::new(OcspMetrics::default(), Duration::from_secs(3600));
        let key = served(&Pki::new());
        let leaf = key.cert[0].to_vec();
        assert!(Arc::ptr_eq(&stapler.staple(Arc::clone(&key)), &key), "nothing stapled yet");
        let held = |expires| Held { der: Bytes::from_static(b"response"), expires };

        stapler.publish(&leaf, &key, Some(&held(SystemTime::now() + Duration::from_secs(60))));
        assert!(stapler.staple(Arc::clone(&key)).ocsp.is_none(), "not tracked: not stapled");

        stapler.track([Arc::clone(&key)]);
        stapler.publish(&leaf, &key, Some(&held(SystemTime::now() + Duration::from_secs(60))));
        let stapled = stapler.staple(Arc::clone(&key));
        assert_eq!(stapled.ocsp.as_deref(), Some(&b"response"[..]));
        assert_eq!(stapled.cert, key.cert);
        assert_eq!(stapler.metrics.stapled.get(), 1);

        // Past its expiry the response is not served, even before its task removes it.
        stapler.publish(&leaf, &key, Some(&held(SystemTime::now() - Duration::from_secs(1))));
        assert!(stapler.staple(Arc::clone(&key)).ocsp.is_none());

        stapler.publish(&leaf, &key, Some(&held(SystemTime::now() + Duration::from_secs(60))));
        stapler.track(std::iter::empty());
        assert!(stapler.staple(Arc::clone(&key)).ocsp.is_none(), "a certificate no table serves loses its staple");
        assert_eq!(stapler.metrics.stapled.get(), 0);
    }
}
