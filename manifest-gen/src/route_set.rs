//! Route sets in the bench's shape: each route has its own Service and one EndpointSlice over the same pods, in
//! namespace `bench` under `bench.example.com`. The bench gives both proxies the same set (the router reads it as
//! manifests, HAProxy's configuration is generated from the same values); the churn example and test use it too.

use std::net::Ipv4Addr;

use crate::document::Manifest;
use crate::endpoint_slice::EndpointSlice;
use crate::route::{Route, RouteTls, TlsTermination};
use crate::service::Service;

/// Namespace of every generated route.
pub const NAMESPACE: &str = "bench";
/// Domain of every generated host.
pub const DOMAIN: &str = "bench.example.com";
/// `creationTimestamp` of every generated route (one time for all: the set has no host conflicts to order).
pub const BENCH_CREATED: &str = "2026-11-01T10:00:00Z";
/// The first pod address of `loopback_pods`.
const FIRST_POD_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 11);

/// A pod: one backend listen address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pod {
    pub name: String,
    pub ip: Ipv4Addr,
    pub port: u16,
}

/// `count` pods `bench-pod-<i>` on 127.0.0.11, 127.0.0.12, ... (all of 127.0.0.0/8 is loopback), on `port`.
pub fn loopback_pods(count: usize, port: u16) -> Vec<Pod> {
    (0..count)
        .map(|index| {
            let offset = u32::try_from(index).unwrap_or(u32::MAX);
            let ip = Ipv4Addr::from(u32::from(FIRST_POD_IP).saturating_add(offset));
            Pod { name: format!("bench-pod-{index}"), ip, port }
        })
        .collect()
}

/// How a route's traffic arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Termination {
    /// Plain HTTP on :80.
    Http,
    /// TLS terminated by the proxy, plain HTTP to the pod.
    Edge,
    /// TLS terminated by the proxy, TLS again to the pod.
    Reencrypt,
    /// TLS relayed by SNI to the pod untouched.
    Passthrough,
}

impl Termination {
    /// The route's `spec.tls.termination` (none for plain HTTP).
    pub fn tls(self) -> Option<TlsTermination> {
        match self {
            Termination::Http => None,
            Termination::Edge => Some(TlsTermination::Edge),
            Termination::Reencrypt => Some(TlsTermination::Reencrypt),
            Termination::Passthrough => Some(TlsTermination::Passthrough),
        }
    }
}

/// A route's certificate and key (PEM), the CA that signed it, and for reencrypt the CA the pod's certificate is
/// checked against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Certificates {
    pub certificate: String,
    pub key: String,
    pub ca_certificate: Option<String>,
    pub destination_ca: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchRoute {
    pub namespace: String,
    pub name: String,
    pub host: String,
    /// Path prefix; empty serves every path.
    pub path: String,
    pub termination: Termination,
    /// Certificate material for edge/reencrypt routes (none: the default certificate).
    pub certificates: Option<Certificates>,
    /// The Service (one per route) and its pods.
    pub service: String,
    pub pods: Vec<Pod>,
}

impl BenchRoute {
    /// One HTTP route named `name` (also its Service's name and its host's first label) over `pods`.
    pub fn http(name: &str, pods: &[Pod]) -> BenchRoute {
        BenchRoute {
            namespace: NAMESPACE.into(),
            name: name.into(),
            host: format!("{name}.{DOMAIN}"),
            path: String::new(),
            termination: Termination::Http,
            certificates: None,
            service: name.into(),
            pods: pods.to_vec(),
        }
    }

    /// `namespace:name`, the key HAProxy backend names are built from.
    pub fn key(&self) -> String {
        format!("{}:{}", self.namespace, self.name)
    }

    /// The port every pod listens on (pods share a port number and differ by address, as real pods do).
    fn pod_port(&self) -> u16 {
        self.pods.first().map_or(8080, |pod| pod.port)
    }

    pub fn service_object(&self) -> Service {
        Service::http(&self.namespace, &self.service, self.pod_port())
    }

    /// One slice per route, named `<service>-1`, with every pod ready.
    pub fn endpoint_slice(&self) -> EndpointSlice {
        let slice = EndpointSlice::http(&self.namespace, format!("{}-1", self.service), &self.service, self.pod_port());
        self.pods.iter().fold(slice, |slice, pod| slice.with_endpoint(pod.ip, true, &pod.name))
    }

    pub fn route(&self) -> Route {
        let mut route = Route::new(&self.namespace, &self.name, &self.host, &self.service);
        route.created = Some(BENCH_CREATED.into());
        route.path = self.path.clone();
        route.wildcard_policy = Some("None".into());
        route.tls = self.termination.tls().map(|termination| {
            let certificates = self.certificates.as_ref();
            RouteTls {
                certificate: certificates.map(|c| c.certificate.clone()),
                key: certificates.map(|c| c.key.clone()),
                ca_certificate: certificates.and_then(|c| c.ca_certificate.clone()),
                destination_ca_certificate: certificates.and_then(|c| c.destination_ca.clone()),
                ..RouteTls::new(termination)
            }
        });
        route
    }
}

impl Manifest for BenchRoute {
    /// The Service, the EndpointSlice and the Route.
    fn write_yaml(&self, out: &mut String) {
        self.service_object().write_yaml(out);
        self.endpoint_slice().write_yaml(out);
        self.route().write_yaml(out);
    }
}

/// Generated routes, in generation order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RouteSet {
    pub routes: Vec<BenchRoute>,
}

impl RouteSet {
    /// `count` plain HTTP routes `r00000.bench.example.com` ..., each with its own Service over `pods`.
    pub fn http(count: usize, pods: &[Pod]) -> RouteSet {
        RouteSet::named((0..count).map(|index| format!("r{index:05}")), pods)
    }

    /// One plain HTTP route per name (`<name>.bench.example.com`), each with its own Service over `pods`.
    pub fn named<N: AsRef<str>>(names: impl IntoIterator<Item = N>, pods: &[Pod]) -> RouteSet {
        RouteSet { routes: names.into_iter().map(|name| BenchRoute::http(name.as_ref(), pods)).collect() }
    }

    /// `per_kind` routes of each termination, in this order: HTTP `r00000...` over `pods`, edge `e00000...` over
    /// `pods`, reencrypt `s00000...` and passthrough `p00000...` over `tls_pods`. Edge and reencrypt routes carry
    /// their own certificates (`edge`, `reencrypt`).
    pub fn mixed(
        per_kind: usize,
        pods: &[Pod],
        tls_pods: &[Pod],
        edge: &Certificates,
        reencrypt: &Certificates,
    ) -> RouteSet {
        let kinds = [
            ('r', Termination::Http, pods, None),
            ('e', Termination::Edge, pods, Some(edge)),
            ('s', Termination::Reencrypt, tls_pods, Some(reencrypt)),
            ('p', Termination::Passthrough, tls_pods, None),
        ];
        let mut routes = Vec::with_capacity(4 * per_kind);
        for (prefix, termination, pods, certificates) in kinds {
            for index in 0..per_kind {
                let mut route = BenchRoute::http(&format!("{prefix}{index:05}"), pods);
                route.termination = termination;
                route.certificates = certificates.cloned();
                routes.push(route);
            }
        }
        RouteSet { routes }
    }

    /// The HTTP route in the middle of the set's HTTP routes (a linear scan, as HAProxy's `map_reg` does, visits
    /// half the set to find it); the middle route when there is none; none for an empty set.
    pub fn target(&self) -> Option<&BenchRoute> {
        self.target_of(Termination::Http).or_else(|| self.routes.get(self.routes.len() / 2))
    }

    /// The route in the middle of the routes with `termination`.
    pub fn target_of(&self, termination: Termination) -> Option<&BenchRoute> {
        let count = self.routes.iter().filter(|r| r.termination == termination).count();
        self.routes.iter().filter(|r| r.termination == termination).nth(count / 2)
    }

    /// Service + EndpointSlice + Route documents for every route, in order.
    pub fn to_yaml(&self) -> String {
        let mut out = String::with_capacity(self.routes.len() * 1200);
        for route in &self.routes {
            route.write_yaml(&mut out);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods() -> Vec<Pod> {
        loopback_pods(4, 8080)
    }

    fn certificates() -> Certificates {
        Certificates {
            certificate: "C".into(),
            key: "K".into(),
            ca_certificate: Some("CA".into()),
            destination_ca: None,
        }
    }

    #[test]
    fn loopback_pods_count_up_from_127_0_0_11() {
        let pods = loopback_pods(300, 8080);
        assert_eq!((pods[0].name.as_str(), pods[0].ip, pods[0].port), ("bench-pod-0", FIRST_POD_IP, 8080));
        assert_eq!(pods[3].ip, Ipv4Addr::new(127, 0, 0, 14));
        assert_eq!(pods[299].ip, Ipv4Addr::new(127, 0, 1, 54));
    }

    #[test]
    fn the_target_is_in_the_middle_and_hosts_are_unique() {
        let set = RouteSet::http(10_000, &pods());
        assert_eq!(set.target().map(|r| r.host.as_str()), Some("r05000.bench.example.com"));
        let mut hosts: Vec<&str> = set.routes.iter().map(|r| r.host.as_str()).collect();
        hosts.sort_unstable();
        hosts.dedup();
        assert_eq!(hosts.len(), 10_000);
        assert!(RouteSet::default().target().is_none());
    }

    #[test]
    fn mixed_sets_have_each_termination_and_a_target_of_each() {
        let set = RouteSet::mixed(10, &pods(), &pods(), &certificates(), &certificates());
        assert_eq!(set.routes.len(), 40);
        assert_eq!(set.target().map(|r| r.host.as_str()), Some("r00005.bench.example.com"));
        assert_eq!(set.target_of(Termination::Passthrough).map(|r| r.host.as_str()), Some("p00005.bench.example.com"));
        assert!(set.to_yaml().contains(
            "    termination: edge\n    certificate: |\n      C\n    key: |\n      K\n    caCertificate: |\n"
        ));
    }

    #[test]
    fn a_route_is_a_service_a_slice_with_every_pod_and_a_route() {
        let mut route = BenchRoute::http("r00001", &pods());
        route.path = "/api".into();
        let yaml = RouteSet { routes: vec![route] }.to_yaml();
        assert_eq!(yaml.matches("\n---\n").count(), 3);
        assert!(yaml.contains("kind: Route\n"));
        assert!(yaml.contains("  host: r00001.bench.example.com\n  path: /api\n"));
        assert!(yaml.contains("kubernetes.io/service-name: r00001\n"));
        assert!(yaml.contains("  creationTimestamp: \"2026-11-01T10:00:00Z\"\n"));
        for ip in ["127.0.0.11", "127.0.0.14"] {
            assert!(yaml.contains(&format!("- \"{ip}\"")), "{ip} in {yaml}");
        }
    }

    #[test]
    fn tls_routes_carry_their_termination_and_pem_blocks() {
        let mut route = BenchRoute::http("e1", &pods());
        route.termination = Termination::Reencrypt;
        route.certificates = Some(Certificates {
            certificate: "-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n".into(),
            key: "KEY".into(),
            ca_certificate: None,
            destination_ca: Some("CA".into()),
        });
        let yaml = route.to_yaml();
        assert!(yaml
            .contains("  tls:\n    termination: reencrypt\n    certificate: |\n      -----BEGIN CERTIFICATE-----\n"));
        assert!(yaml.contains("    destinationCACertificate: |\n      CA\n"));
        let passthrough = BenchRoute { termination: Termination::Passthrough, ..BenchRoute::http("p1", &pods()) };
        assert!(passthrough.to_yaml().contains("  tls:\n    termination: passthrough\n  wildcardPolicy: None\n"));
    }
}
