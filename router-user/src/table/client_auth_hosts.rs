//! Which client certificate check a :443 handshake gets, by SNI: that of the host's oldest edge or reencrypt
//! route. A host with routes of its own never falls back to a wildcard route's check (its own routes may not
//! ask for certificates at all), as requests for it never reach the wildcard route. Every route of a host must
//! bring the same check as the first one (else it could never be reached: the handshake verified against
//! another bundle), which `claim` reports.

use std::collections::HashMap;
use std::sync::Arc;

use crate::tls::RouteClientAuth;

#[derive(Debug, Default)]
pub struct ClientAuthHosts {
    exact: HashMap<String, Option<Arc<RouteClientAuth>>>,
    /// By the wildcard route's domain (its host without the first label).
    wildcard: HashMap<String, Option<Arc<RouteClientAuth>>>,
}

impl ClientAuthHosts {
    /// Records the check of a route of `host` (`domain` for a wildcard route); false when the host already has
    /// a different one (from an older route).
    pub fn claim(&mut self, host: &str, wildcard_domain: Option<&str>, auth: &Option<Arc<RouteClientAuth>>) -> bool {
        let (map, name) = match wildcard_domain {
            Some(domain) => (&mut self.wildcard, domain),
            None => (&mut self.exact, host),
        };
        map.entry(name.to_string()).or_insert_with(|| auth.clone()) == auth
    }

    /// The check of handshakes for `sni` (lowercase, no trailing dot), if its host asks for certificates, when
    /// exact hosts and wildcard domains are in this one map (`RouteTable::client_auth` does the same across the
    /// shards, where they may not be).
    #[cfg(test)]
    pub fn find(&self, sni: Option<&str>) -> Option<&Arc<RouteClientAuth>> {
        let name = sni?;
        match self.find_exact(name) {
            Some(auth) => auth,
            None => self.find_wildcard(name.split_once('.')?.1),
        }
    }

    /// For a host with edge or reencrypt routes of its own: its check, if it asks for certificates.
    pub fn find_exact(&self, host: &str) -> Option<Option<&Arc<RouteClientAuth>>> {
        self.exact.get(host).map(Option::as_ref)
    }

    /// The check of the wildcard routes of `domain`, if they ask for certificates.
    pub fn find_wildcard(&self, domain: &str) -> Option<&Arc<RouteClientAuth>> {
        self.wildcard.get(domain)?.as_ref()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::tls::test_pki::Pki;

    #[test]
    fn exact_hosts_shadow_wildcards_and_the_first_check_of_a_host_holds() {
        let pem = Pki::new().ca.pem();
        let auth = Some(Arc::new(RouteClientAuth::new(&pem, true, None).unwrap()));
        let same = Some(Arc::new(RouteClientAuth::new(&pem, true, None).unwrap()));
        let optional = Some(Arc::new(RouteClientAuth::new(&pem, false, None).unwrap()));
        let mut hosts = ClientAuthHosts::default();
        assert!(hosts.claim("www.example.com", Some("example.com"), &auth));
        assert!(hosts.claim("plain.example.com", None, &None));
        assert!(hosts.claim("a.other.com", None, &auth));
        assert!(hosts.claim("a.other.com", None, &same), "an equal check on a second path");
        assert!(!hosts.claim("a.other.com", None, &optional));
        assert!(!hosts.claim("a.other.com", None, &None));
        assert!(!hosts.claim("plain.example.com", None, &auth));

        assert_eq!(hosts.find(Some("x.example.com")), auth.as_ref(), "wildcard");
        assert_eq!(hosts.find(Some("plain.example.com")), None, "own host without a check");
        assert_eq!(hosts.find(Some("a.b.example.com")), None, "one label only");
        assert_eq!(hosts.find(Some("a.other.com")), auth.as_ref());
        assert_eq!(hosts.find(None), None);
    }
}
