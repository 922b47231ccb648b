//! The router's HAProxy-style proxies and their counters: the fixed frontends, and a backend per route and a
//! server per endpoint, created on first use and kept across table rebuilds (a route's counters do not restart
//! when its table is recompiled), forgotten once the live table no longer has them.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use super::counters::ProxyCounters;

/// A compiled backend's or endpoint's counters, resolved once and then used without a lookup.
pub type CountersSlot = OnceLock<Arc<ProxyCounters>>;

/// The OpenShift router's frontends the router plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frontend {
    /// `public`: plain HTTP on :80.
    Public,
    /// `public_ssl`: every :443 connection, before its SNI sends it to a pod or to termination.
    PublicSsl,
    /// `fe_sni`: TLS connections the router terminates that named a host (SNI).
    FeSni,
    /// `fe_no_sni`: terminated TLS connections without SNI (served the default certificate).
    FeNoSni,
}

impl Frontend {
    pub const ALL: [Frontend; 4] = [Frontend::Public, Frontend::PublicSsl, Frontend::FeSni, Frontend::FeNoSni];

    pub fn name(self) -> &'static str {
        match self {
            Frontend::Public => "public",
            Frontend::PublicSsl => "public_ssl",
            Frontend::FeSni => "fe_sni",
            Frontend::FeNoSni => "fe_no_sni",
        }
    }
}

type ServerKey = (Arc<str>, Arc<str>);

/// openshift/router's default `ROUTER_METRICS_HAPROXY_SERVER_THRESHOLD`.
pub const DEFAULT_SERVER_THRESHOLD: u64 = 500;

#[derive(Debug, Default)]
pub struct ProxyRegistry {
    frontends: [Arc<ProxyCounters>; 4],
    backends: RwLock<HashMap<Arc<str>, Arc<ProxyCounters>>>,
    /// By (backend name, server id).
    servers: RwLock<HashMap<ServerKey, Arc<ProxyCounters>>>,
    /// The process-wide connection limit (ROUTER_MAX_CONNECTIONS) once the router enforces one; 0 = none.
    max_connections: AtomicU64,
    /// ROUTER_METRICS_HAPROXY_SERVER_THRESHOLD; 0 = openshift/router's default.
    server_threshold: AtomicU64,
    /// Scrapes of the `haproxy_*` families so far.
    scrapes: AtomicU64,
}

impl ProxyRegistry {
    /// Publishes `haproxy_max_connections` (the limit's owner calls this at start; unset, the family is absent).
    pub fn set_max_connections(&self, limit: u64) {
        self.max_connections.store(limit, Ordering::Relaxed);
    }

    pub fn max_connections(&self) -> Option<u64> {
        Some(self.max_connections.load(Ordering::Relaxed)).filter(|limit| *limit > 0)
    }

    /// With more servers than `threshold`, only frontend and backend rows are published.
    pub fn set_server_threshold(&self, threshold: u64) {
        self.server_threshold.store(threshold, Ordering::Relaxed);
    }

    pub fn server_threshold(&self) -> u64 {
        match self.server_threshold.load(Ordering::Relaxed) {
            0 => DEFAULT_SERVER_THRESHOLD,
            threshold => threshold,
        }
    }

    /// Counts a scrape; the scrapes so far, this one included.
    pub fn count_scrape(&self) -> u64 {
        self.scrapes.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub fn frontend(&self, frontend: Frontend) -> &Arc<ProxyCounters> {
        &self.frontends[frontend as usize]
    }

    /// The counters of backend `name`, through `slot` when it already holds them.
    pub fn backend<'a>(&self, name: &Arc<str>, slot: &'a CountersSlot) -> &'a Arc<ProxyCounters> {
        slot.get_or_init(|| self.backend_named(name))
    }

    /// The counters of server `id` of backend `backend`, through `slot` when it already holds them.
    pub fn server<'a>(&self, backend: &Arc<str>, id: &str, slot: &'a CountersSlot) -> &'a Arc<ProxyCounters> {
        slot.get_or_init(|| self.server_named(backend, id))
    }

    pub fn backend_named(&self, name: &Arc<str>) -> Arc<ProxyCounters> {
        if let Some(found) = read(&self.backends).get(name) {
            return found.clone();
        }
        write(&self.backends).entry(name.clone()).or_default().clone()
    }

    pub fn server_named(&self, backend: &Arc<str>, id: &str) -> Arc<ProxyCounters> {
        let key: ServerKey = (backend.clone(), id.into());
        if let Some(found) = read(&self.servers).get(&key) {
            return found.clone();
        }
        write(&self.servers).entry(key).or_default().clone()
    }

    /// The counters of a backend or server if it has any yet (the exporter shows zeros otherwise).
    pub fn existing_backend(&self, name: &str) -> Option<Arc<ProxyCounters>> {
        read(&self.backends).get(name).cloned()
    }

    pub fn existing_server(&self, backend: &Arc<str>, id: &str) -> Option<Arc<ProxyCounters>> {
        read(&self.servers).get(&(backend.clone(), Arc::from(id))).cloned()
    }

    /// Forgets the backends not in `backends` and the servers not in `servers` (backend name, server id).
    pub fn retain(&self, backends: &HashSet<&str>, servers: &HashSet<(&str, &str)>) {
        write(&self.backends).retain(|name, _| backends.contains(&**name));
        write(&self.servers).retain(|(backend, id), _| servers.contains(&(&**backend, &**id)));
    }
}

// The maps hold plain counters: a panic while one was locked cannot leave them inconsistent.
fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_survive_new_slots_until_forgotten() {
        let registry = ProxyRegistry::default();
        let name: Arc<str> = "be_http:ns:web".into();
        let first = CountersSlot::new();
        registry.backend(&name, &first).count_response(200);
        registry.server(&name, "pod:a:web:http:10.0.0.1:80", &CountersSlot::new()).count_response(200);
        let rebuilt = CountersSlot::new();
        assert_eq!(registry.backend(&name, &rebuilt).responses()[1], 1, "a rebuilt table keeps the counts");

        registry.retain(&HashSet::from(["be_http:ns:web"]), &HashSet::new());
        assert!(registry.existing_backend("be_http:ns:web").is_some());
        assert!(registry.existing_server(&name, "pod:a:web:http:10.0.0.1:80").is_none());
        registry.retain(&HashSet::new(), &HashSet::new());
        assert!(registry.existing_backend("be_http:ns:web").is_none());
    }
}
