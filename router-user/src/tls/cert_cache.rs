//! Memoised route certificate validation. Every route table rebuild validates every route's certificates (there
//! may be 10,000); the cache keys each result (certificate or error) by a SHA-256 of the PEM inputs, so only new
//! or changed certificates are parsed and verified. `sweep` after each rebuild forgets entries the rebuild did
//! not use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rustls::sign::CertifiedKey;
use sha2::{Digest, Sha256};

use super::cert_error::CertError;
use super::certs::route_certificate_sharing;
use super::signing_keys::SigningKeys;
use crate::model::TlsConfig;

type Outcome = Result<Option<Arc<CertifiedKey>>, CertError>;

struct Entry {
    outcome: Outcome,
    /// Used since the previous sweep.
    used: bool,
}

/// Send + Sync; share it between table rebuilds behind an `Arc`.
#[derive(Default)]
pub struct CertCache {
    entries: Mutex<HashMap<[u8; 32], Entry>>,
    keys: SigningKeys,
}

impl CertCache {
    pub fn new() -> CertCache {
        CertCache::default()
    }

    /// [`route_certificate`](super::route_certificate) for `tls`, computed once per distinct certificate, key and
    /// CA text; certificates with the same private key share its parsed form.
    pub fn route_certificate(&self, tls: &TlsConfig) -> Outcome {
        let key = cache_key(tls);
        if let Some(entry) = self.lock().get_mut(&key) {
            entry.used = true;
            return entry.outcome.clone();
        }
        // Validate outside the lock: parsing and verifying take a while and rebuilds may run concurrently.
        let outcome = route_certificate_sharing(tls, &self.keys);
        self.lock().insert(key, Entry { outcome: outcome.clone(), used: true });
        outcome
    }

    /// Drops the entries neither used since the previous sweep nor held elsewhere (a table keeps the routes'
    /// certificates it serves: a build that takes over a shard does not ask for them again).
    pub fn sweep(&self) {
        let mut entries = self.lock();
        entries.retain(|_, entry| entry.used || matches!(&entry.outcome, Ok(Some(key)) if Arc::strong_count(key) > 1));
        for entry in entries.values_mut() {
            entry.used = false;
        }
        drop(entries);
        self.keys.sweep();
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<[u8; 32], Entry>> {
        // The map stays consistent even if a holder panicked: every write is a single insert or retain.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// SHA-256 over the length-prefixed fields that [`route_certificate`] reads.
fn cache_key(tls: &TlsConfig) -> [u8; 32] {
    let mut hash = Sha256::new();
    for field in [&tls.certificate, &tls.key, &tls.ca_certificate] {
        match field {
            Some(text) => {
                hash.update([1]);
                hash.update((text.len() as u64).to_be_bytes());
                hash.update(text.as_bytes());
            }
            None => hash.update([0]),
        }
    }
    hash.finalize().into()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::tls::test_pki;

    fn tls(cert: &str, key: &str) -> TlsConfig {
        TlsConfig {
            termination: "edge".into(),
            certificate: Some(cert.into()),
            key: Some(key.into()),
            ..TlsConfig::default()
        }
    }

    #[test]
    fn same_inputs_give_the_same_key_and_errors_are_memoised() {
        let cache = CertCache::new();
        let leaf = test_pki::self_signed("a.example.com");
        let good = tls(&leaf.cert_pem(), &leaf.key_pem());
        let first = cache.route_certificate(&good).unwrap().unwrap();
        let second = cache.route_certificate(&good).unwrap().unwrap();
        assert!(Arc::ptr_eq(&first, &second), "second lookup must come from the cache");

        let other = test_pki::self_signed("b.example.com");
        let bad = tls(&leaf.cert_pem(), &other.key_pem());
        let err = cache.route_certificate(&bad).unwrap_err();
        assert_eq!(cache.route_certificate(&bad).unwrap_err(), err);
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn certificates_with_the_same_key_share_its_parsed_form_while_one_is_held() {
        let pki = test_pki::Pki::new();
        let first = pki.leaf("a.example.com");
        let key = first.key_pem();
        let second = pki.leaf_cert_for_key("b.example.com", &first.key);
        let cache = CertCache::new();
        let a = cache.route_certificate(&tls(&first.cert_pem(), &key)).unwrap().unwrap();
        let b = cache.route_certificate(&tls(&second.pem(), &key)).unwrap().unwrap();
        assert!(Arc::ptr_eq(&a.key, &b.key), "one parsed key behind both certificates");
        let other = test_pki::self_signed("c.example.com");
        let c = cache.route_certificate(&tls(&other.cert_pem(), &other.key_pem())).unwrap().unwrap();
        assert!(!Arc::ptr_eq(&a.key, &c.key));
        drop((a, b, c));
        cache.sweep();
        cache.sweep();
        assert!(cache.keys.is_empty(), "keys no certificate holds are forgotten");
    }

    #[test]
    fn key_separates_fields() {
        let a = TlsConfig { certificate: Some("ab".into()), key: Some("c".into()), ..TlsConfig::default() };
        let b = TlsConfig { certificate: Some("a".into()), key: Some("bc".into()), ..TlsConfig::default() };
        let c = TlsConfig { certificate: Some("ab".into()), ca_certificate: Some("c".into()), ..TlsConfig::default() };
        assert_ne!(cache_key(&a), cache_key(&b));
        assert_ne!(cache_key(&a), cache_key(&c));
    }

    #[test]
    fn sweep_drops_entries_unused_since_the_previous_sweep() {
        let cache = CertCache::new();
        let a = test_pki::self_signed("a.example.com");
        let b = test_pki::self_signed("b.example.com");
        let ta = tls(&a.cert_pem(), &a.key_pem());
        let tb = tls(&b.cert_pem(), &b.key_pem());
        let first_a = cache.route_certificate(&ta).unwrap().unwrap();
        cache.route_certificate(&tb).unwrap();
        cache.sweep();
        assert_eq!(cache.len(), 2, "both were used before the first sweep");
        cache.route_certificate(&ta).unwrap();
        cache.sweep();
        assert_eq!(cache.len(), 1, "b was not used since the previous sweep");
        let again_a = cache.route_certificate(&ta).unwrap().unwrap();
        assert!(Arc::ptr_eq(&first_a, &again_a));
        cache.sweep();
        cache.sweep();
        assert_eq!(cache.len(), 1, "a is held (as a table holds what it serves): kept though not asked for");
        drop((first_a, again_a));
        cache.sweep();
        assert!(cache.is_empty());
    }
}
