//! The certificates :443 serves from, built with each route table and immutable afterwards: exact hosts,
//! wildcard domains (`*.example.com` is stored under `example.com`) and the default certificate. HTTP/2 is
//! offered only with a certificate that exactly one route uses, as the OpenShift router writes `alpn h2` only
//! for a certificate counted once (the default counted up front, then every edge or reencrypt route carrying
//! it, whatever its path): a certificate shared by several routes, or by a route and the default, keeps
//! HTTP/1.1, so that clients do not coalesce one connection across the routes it covers.

use std::collections::HashMap;
use std::sync::Arc;

use rustls::sign::CertifiedKey;

/// The certificate picked for a connection.
#[derive(Clone)]
pub struct CertChoice {
    pub key: Arc<CertifiedKey>,
    /// A route's own certificate was found; false for the default certificate.
    pub own: bool,
    /// HTTP/2 may be offered: a route's own certificate that no other route, and not the default, uses.
    pub offer_h2: bool,
}

/// A route certificate as served: its key and whether it is used by that one route alone.
#[derive(Clone)]
struct Served {
    key: Arc<CertifiedKey>,
    alone: bool,
}

pub struct CertStore {
    default: Arc<CertifiedKey>,
    exact: HashMap<String, Served>,
    wildcard: HashMap<String, Served>,
}

impl CertStore {
    /// The certificate for a ClientHello's server name (already lowercased): the exact host's, else the
    /// wildcard of the name's parent domain (one label only), else the default certificate.
    pub fn find(&self, sni: Option<&str>) -> CertChoice {
        let own = sni.and_then(|name| {
            let name = name.strip_suffix('.').unwrap_or(name);
            self.exact.get(name).or_else(|| name.split_once('.').and_then(|(_, domain)| self.wildcard.get(domain)))
        });
        match own {
            Some(served) => CertChoice { key: Arc::clone(&served.key), own: true, offer_h2: served.alone },
            None => CertChoice { key: Arc::clone(&self.default), own: false, offer_h2: false },
        }
    }

    pub fn default_key(&self) -> &Arc<CertifiedKey> {
        &self.default
    }

    /// Every certificate served: the default's, then the routes' (a certificate several names share repeats).
    pub fn keys(&self) -> impl Iterator<Item = &Arc<CertifiedKey>> {
        std::iter::once(&self.default).chain(self.exact.values().chain(self.wildcard.values()).map(|s| &s.key))
    }

    /// Route certificates held (exact and wildcard), not counting the default.
    pub fn len(&self) -> usize {
        self.exact.len() + self.wildcard.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Debug for CertStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertStore").field("exact", &self.exact.len()).field("wildcard", &self.wildcard.len()).finish()
    }
}

/// A [`CertStore`] being filled by a table build, counting uses by the certificates it borrows (the table's,
/// which outlive it), so that counting 20,000 routes' certificates copies none of them.
pub struct CertStoreBuilder<'k> {
    default: Arc<CertifiedKey>,
    exact: HashMap<String, Arc<CertifiedKey>>,
    wildcard: HashMap<String, Arc<CertifiedKey>>,
    /// How many routes carry each certificate, by its end-entity certificate (DER).
    uses: HashMap<&'k [u8], u32>,
}

impl<'k> CertStoreBuilder<'k> {
    /// A store around the default certificate, which counts as one use of its certificate.
    pub fn new(default: Arc<CertifiedKey>) -> CertStoreBuilder<'k> {
        CertStoreBuilder { default, exact: HashMap::new(), wildcard: HashMap::new(), uses: HashMap::new() }
    }

    /// One more route (edge or reencrypt, any path) carries `key`, whether or not it is the one serving it.
    pub fn count_use(&mut self, key: &'k CertifiedKey) {
        *self.uses.entry(leaf(key)).or_default() += 1;
    }

    /// The certificate of the route for `host` (lowercase, no trailing dot).
    pub fn insert_exact(&mut self, host: impl Into<String>, key: Arc<CertifiedKey>) {
        self.exact.insert(host.into(), key);
    }

    /// The certificate of a wildcard route; `domain` is the host without its first label (`example.com` for
    /// `*.example.com` or for a `Subdomain` route on `www.example.com`).
    pub fn insert_wildcard(&mut self, domain: impl Into<String>, key: Arc<CertifiedKey>) {
        self.wildcard.insert(domain.into(), key);
    }

    /// The store, each certificate marked with whether exactly one route uses it.
    pub fn build(self) -> CertStore {
        let (uses, default) = (self.uses, self.default);
        let alone = |key: &CertifiedKey| {
            let routes = uses.get(leaf(key)).copied().unwrap_or(0);
            routes + u32::from(leaf(key) == leaf(&default)) <= 1
        };
        let serve = |entries: HashMap<String, Arc<CertifiedKey>>| -> HashMap<String, Served> {
            entries.into_iter().map(|(name, key)| (name, Served { alone: alone(&key), key })).collect()
        };
        let (exact, wildcard) = (serve(self.exact), serve(self.wildcard));
        CertStore { default, exact, wildcard }
    }
}

/// The end-entity certificate that identifies `key` (empty when it has none, which rustls never builds).
fn leaf(key: &CertifiedKey) -> &[u8] {
    key.cert.first().map_or(&[], |cert| cert.as_ref())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::tls::certs::certified_key;
    use crate::tls::test_pki;

    fn key(host: &str) -> Arc<CertifiedKey> {
        let leaf = test_pki::self_signed(host);
        let der = rustls_pki_types::PrivateKeyDer::Pkcs8(leaf.key.serialize_der().into());
        Arc::new(certified_key(vec![leaf.cert.der().clone()], &der).unwrap())
    }

    #[test]
    fn exact_then_wildcard_then_default() {
        let default = key("default.local");
        let exact = key("a.example.com");
        let wild = key("*.example.com");
        let mut builder = CertStoreBuilder::new(Arc::clone(&default));
        builder.insert_exact("a.example.com", Arc::clone(&exact));
        builder.insert_wildcard("example.com", Arc::clone(&wild));
        let store = builder.build();
        assert_eq!(store.len(), 2);

        let pick = store.find(Some("a.example.com"));
        assert!(pick.own && Arc::ptr_eq(&pick.key, &exact));
        let pick = store.find(Some("b.example.com"));
        assert!(pick.own && Arc::ptr_eq(&pick.key, &wild));
        let pick = store.find(Some("a.example.com."));
        assert!(pick.own && Arc::ptr_eq(&pick.key, &exact));
        // A wildcard covers one label only.
        let pick = store.find(Some("x.b.example.com"));
        assert!(!pick.own && Arc::ptr_eq(&pick.key, &default));
        let pick = store.find(Some("example.com"));
        assert!(!pick.own && Arc::ptr_eq(&pick.key, &default));
        let pick = store.find(None);
        assert!(!pick.own && Arc::ptr_eq(&pick.key, &default));
        assert!(Arc::ptr_eq(store.default_key(), &default));
        let keys: Vec<_> = store.keys().collect();
        assert_eq!(keys.len(), 3);
        for key in [&default, &exact, &wild] {
            assert!(keys.iter().any(|k| Arc::ptr_eq(k, key)));
        }
    }

    #[test]
    fn h2_only_for_a_certificate_exactly_one_route_uses() {
        let default = key("default.local");
        let (alone, shared) = (key("alone.example.com"), key("shared.example.com"));
        let mut builder = CertStoreBuilder::new(Arc::clone(&default));
        builder.count_use(&alone);
        builder.insert_exact("alone.example.com", Arc::clone(&alone));
        // Two routes (two paths of one host, or two hosts) carry the same certificate.
        builder.count_use(&shared);
        builder.count_use(&shared);
        builder.insert_exact("shared.example.com", Arc::clone(&shared));
        builder.insert_wildcard("shared.example.com", Arc::clone(&shared));
        // A route carrying the default certificate as its own.
        builder.count_use(&default);
        builder.insert_exact("copy.example.com", Arc::clone(&default));
        let store = builder.build();

        let pick = store.find(Some("alone.example.com"));
        assert!(pick.own && pick.offer_h2);
        for sni in ["shared.example.com", "x.shared.example.com", "copy.example.com"] {
            let pick = store.find(Some(sni));
            assert!(pick.own && !pick.offer_h2, "{sni}");
        }
        assert!(!store.find(None).offer_h2);
        assert!(!store.find(Some("unknown.example.com")).offer_h2);
    }
}
