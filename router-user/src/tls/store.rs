//! The certificates :443 serves from, built with each route table and immutable afterwards: exact hosts,
//! wildcard domains (`*.example.com` is stored under `example.com`) and the default certificate.

use std::collections::HashMap;
use std::sync::Arc;

use rustls::sign::CertifiedKey;

/// The certificate picked for a connection.
#[derive(Clone)]
pub struct CertChoice {
    pub key: Arc<CertifiedKey>,
    /// A route's own certificate was found (HTTP/2 may be offered); false for the default certificate.
    pub own: bool,
}

pub struct CertStore {
    default: Arc<CertifiedKey>,
    exact: HashMap<String, Arc<CertifiedKey>>,
    wildcard: HashMap<String, Arc<CertifiedKey>>,
}

impl CertStore {
    pub fn new(default: Arc<CertifiedKey>) -> CertStore {
        CertStore { default, exact: HashMap::new(), wildcard: HashMap::new() }
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

    /// The certificate for a ClientHello's server name (already lowercased): the exact host's, else the
    /// wildcard of the name's parent domain (one label only), else the default certificate.
    pub fn find(&self, sni: Option<&str>) -> CertChoice {
        let own = sni.and_then(|name| {
            let name = name.strip_suffix('.').unwrap_or(name);
            self.exact.get(name).or_else(|| name.split_once('.').and_then(|(_, domain)| self.wildcard.get(domain)))
        });
        match own {
            Some(key) => CertChoice { key: Arc::clone(key), own: true },
            None => CertChoice { key: Arc::clone(&self.default), own: false },
        }
    }

    pub fn default_key(&self) -> &Arc<CertifiedKey> {
        &self.default
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
        let mut store = CertStore::new(Arc::clone(&default));
        store.insert_exact("a.example.com", Arc::clone(&exact));
        store.insert_wildcard("example.com", Arc::clone(&wild));
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
    }
}
