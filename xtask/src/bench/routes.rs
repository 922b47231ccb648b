//! The route sets every contender serves, from one generator: routes, their Services and EndpointSlices (4 pods
//! each), written as the router's manifests. The HAProxy configuration is generated from the same `RouteSet`
//! (see `haproxy.rs`), so both proxies see the same hosts, paths, pods and order.

use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::Path;

use anyhow::Context as _;

/// Namespace of every generated route.
pub const NAMESPACE: &str = "bench";
/// Domain of every generated host.
pub const DOMAIN: &str = "bench.example.com";

/// A pod: one backend listen address.
#[derive(Clone, Debug)]
pub struct Pod {
    pub name: String,
    pub ip: Ipv4Addr,
    pub port: u16,
}

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

/// A route's certificate and key (PEM), the CA that signed it, and for reencrypt the CA the pod's certificate is
/// checked against.
#[derive(Clone, Debug)]
pub struct RouteTls {
    pub certificate: String,
    pub key: String,
    pub ca_certificate: Option<String>,
    pub destination_ca: Option<String>,
}

#[derive(Clone, Debug)]
pub struct BenchRoute {
    pub namespace: String,
    pub name: String,
    pub host: String,
    /// Path prefix; empty serves every path.
    pub path: String,
    pub termination: Termination,
    /// Certificate material for edge/reencrypt routes (none: the default certificate).
    pub tls: Option<RouteTls>,
    /// The Service (one per route) and its pods.
    pub service: String,
    pub pods: Vec<Pod>,
}

impl BenchRoute {
    /// `namespace:name`, the key HAProxy backend names are built from.
    pub fn key(&self) -> String {
        format!("{}:{}", self.namespace, self.name)
    }
}

/// Generated routes, in generation order.
#[derive(Clone, Debug)]
pub struct RouteSet {
    pub routes: Vec<BenchRoute>,
}

impl RouteSet {
    /// `count` plain HTTP routes `r00000.bench.example.com` ..., each with its own Service over `pods`.
    pub fn http(count: usize, pods: &[Pod]) -> RouteSet {
        RouteSet { routes: (0..count).map(|index| http_route(&format!("r{index:05}"), pods)).collect() }
    }

    /// `per_kind` routes of each termination, in this order: HTTP `r00000...` over `pods`, edge `e00000...` over
    /// `pods`, reencrypt `s00000...` and passthrough `p00000...` over `tls_pods`. Edge and reencrypt routes carry
    /// their own certificate (`edge`, `reencrypt`).
    pub fn mixed(per_kind: usize, pods: &[Pod], tls_pods: &[Pod], edge: &RouteTls, reencrypt: &RouteTls) -> RouteSet {
        let kinds = [
            ('r', Termination::Http, pods, None),
            ('e', Termination::Edge, pods, Some(edge)),
            ('s', Termination::Reencrypt, tls_pods, Some(reencrypt)),
            ('p', Termination::Passthrough, tls_pods, None),
        ];
        let mut routes = Vec::with_capacity(4 * per_kind);
        for (prefix, termination, pods, tls) in kinds {
            for index in 0..per_kind {
                let mut route = http_route(&format!("{prefix}{index:05}"), pods);
                route.termination = termination;
                route.tls = tls.cloned();
                routes.push(route);
            }
        }
        RouteSet { routes }
    }

    /// The HTTP route in the middle of the set's HTTP routes: a linear scan (HAProxy's `map_reg`) visits half the
    /// set to find it.
    pub fn target(&self) -> &BenchRoute {
        self.target_of(Termination::Http).unwrap_or(&self.routes[self.routes.len() / 2])
    }

    /// The route in the middle of the routes with `termination`.
    pub fn target_of(&self, termination: Termination) -> Option<&BenchRoute> {
        let count = self.routes.iter().filter(|r| r.termination == termination).count();
        self.routes.iter().filter(|r| r.termination == termination).nth(count / 2)
    }

    /// Writes the whole set as one multi-document manifest file, atomically (temp name, then rename).
    pub fn write_manifests(&self, file: &Path) -> anyhow::Result<()> {
        write_atomically(file, &manifests(&self.routes))
    }
}

/// One HTTP route named `name` (also its Service's name and its host's first label) over `pods`.
pub fn http_route(name: &str, pods: &[Pod]) -> BenchRoute {
    BenchRoute {
        namespace: NAMESPACE.into(),
        name: name.into(),
        host: format!("{name}.{DOMAIN}"),
        path: String::new(),
        termination: Termination::Http,
        tls: None,
        service: name.into(),
        pods: pods.to_vec(),
    }
}

/// Writes `contents` to `file` through a hidden temp file in the same directory and a rename, so a watcher
/// never reads a half-written file.
pub fn write_atomically(file: &Path, contents: &str) -> anyhow::Result<()> {
    let name = file.file_name().and_then(|n| n.to_str()).context("manifest file name")?;
    let staging = file.with_file_name(format!(".{name}.tmp"));
    std::fs::write(&staging, contents).with_context(|| format!("writing {}", staging.display()))?;
    std::fs::rename(&staging, file).with_context(|| format!("renaming to {}", file.display()))
}

/// Service + EndpointSlice + Route documents for `routes`, as `oc get -o yaml` prints them.
pub fn manifests(routes: &[BenchRoute]) -> String {
    let mut out = String::with_capacity(routes.len() * 1200);
    for route in routes {
        push_service(&mut out, route);
        push_endpoint_slice(&mut out, route);
        push_route(&mut out, route);
    }
    out
}

fn push_service(out: &mut String, route: &BenchRoute) {
    let port = route.pods.first().map_or(8080, |pod| pod.port);
    let _ = write!(
        out,
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {svc}\n  namespace: {ns}\nspec:\n  ports:\n  - name: http\n    \
         port: 80\n    protocol: TCP\n    targetPort: {port}\n---\n",
        svc = route.service,
        ns = route.namespace,
    );
}

/// One slice per route: the pods share a port number (they differ by address), as real pods do.
fn push_endpoint_slice(out: &mut String, route: &BenchRoute) {
    let port = route.pods.first().map_or(8080, |pod| pod.port);
    let _ = write!(
        out,
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: {svc}-1\n  namespace: {ns}\n  \
         labels:\n    kubernetes.io/service-name: {svc}\naddressType: IPv4\nports:\n- name: http\n  port: {port}\n  \
         protocol: TCP\nendpoints:\n",
        svc = route.service,
        ns = route.namespace,
    );
    for pod in &route.pods {
        let _ = write!(
            out,
            "- addresses:\n  - \"{ip}\"\n  conditions:\n    ready: true\n  targetRef:\n    kind: Pod\n    name: {pod}\n    \
             namespace: {ns}\n",
            ip = pod.ip,
            pod = pod.name,
            ns = route.namespace,
        );
    }
    out.push_str("---\n");
}

fn push_route(out: &mut String, route: &BenchRoute) {
    let _ = write!(
        out,
        "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: {name}\n  namespace: {ns}\n  \
         creationTimestamp: \"2026-11-01T10:00:00Z\"\nspec:\n  host: {host}\n",
        name = route.name,
        ns = route.namespace,
        host = route.host,
    );
    if !route.path.is_empty() {
        let _ = writeln!(out, "  path: {:?}", route.path);
    }
    let _ = write!(out, "  to:\n    kind: Service\n    name: {}\n    weight: 100\n", route.service);
    let termination = match route.termination {
        Termination::Http => None,
        Termination::Edge => Some("edge"),
        Termination::Reencrypt => Some("reencrypt"),
        Termination::Passthrough => Some("passthrough"),
    };
    if let Some(termination) = termination {
        let _ = write!(out, "  tls:\n    termination: {termination}\n");
        if let Some(tls) = &route.tls {
            push_pem(out, "certificate", &tls.certificate);
            push_pem(out, "key", &tls.key);
            if let Some(ca) = &tls.ca_certificate {
                push_pem(out, "caCertificate", ca);
            }
            if let Some(ca) = &tls.destination_ca {
                push_pem(out, "destinationCACertificate", ca);
            }
        }
    }
    out.push_str("  wildcardPolicy: None\n---\n");
}

fn push_pem(out: &mut String, field: &str, pem: &str) {
    let _ = writeln!(out, "    {field}: |");
    for line in pem.lines() {
        let _ = writeln!(out, "      {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods() -> Vec<Pod> {
        (0..4).map(|i| Pod { name: format!("pod-{i}"), ip: Ipv4Addr::new(127, 0, 0, 11 + i), port: 8080 }).collect()
    }

    #[test]
    fn the_target_is_in_the_middle_and_hosts_are_unique() {
        let set = RouteSet::http(10_000, &pods());
        assert_eq!(set.target().host, "r05000.bench.example.com");
        let mut hosts: Vec<&str> = set.routes.iter().map(|r| r.host.as_str()).collect();
        hosts.sort_unstable();
        hosts.dedup();
        assert_eq!(hosts.len(), 10_000);
    }

    #[test]
    fn mixed_sets_have_each_termination_and_a_target_of_each() {
        let tls = RouteTls {
            certificate: "C".into(),
            key: "K".into(),
            ca_certificate: Some("CA".into()),
            destination_ca: None,
        };
        let set = RouteSet::mixed(10, &pods(), &pods(), &tls, &tls);
        assert_eq!(set.routes.len(), 40);
        assert_eq!(set.target().host, "r00005.bench.example.com");
        assert_eq!(set.target_of(Termination::Passthrough).map(|r| r.host.as_str()), Some("p00005.bench.example.com"));
        assert!(manifests(&set.routes).contains(
            "    termination: edge\n    certificate: |\n      C\n    key: |\n      K\n    caCertificate: |\n"
        ));
    }

    #[test]
    fn manifests_hold_a_service_a_slice_with_every_pod_and_a_route() {
        let mut route = http_route("r00001", &pods());
        route.path = "/api".into();
        let yaml = manifests(&[route]);
        assert_eq!(yaml.matches("\n---\n").count(), 3);
        assert!(yaml.contains("kind: Route\n"));
        assert!(yaml.contains("  host: r00001.bench.example.com\n  path: \"/api\"\n"));
        assert!(yaml.contains("kubernetes.io/service-name: r00001\n"));
        for ip in ["127.0.0.11", "127.0.0.14"] {
            assert!(yaml.contains(&format!("- \"{ip}\"")), "{ip} in {yaml}");
        }
    }

    #[test]
    fn tls_routes_carry_their_termination_and_pem_blocks() {
        let mut route = http_route("e1", &pods());
        route.termination = Termination::Reencrypt;
        route.tls = Some(RouteTls {
            certificate: "-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n".into(),
            key: "KEY".into(),
            ca_certificate: None,
            destination_ca: Some("CA".into()),
        });
        let yaml = manifests(&[route]);
        assert!(yaml
            .contains("  tls:\n    termination: reencrypt\n    certificate: |\n      -----BEGIN CERTIFICATE-----\n"));
        assert!(yaml.contains("    destinationCACertificate: |\n      CA\n"));
    }
}
