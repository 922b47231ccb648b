//! Manifest files for tests: a temporary directory, and the tests' shorthands for Services, EndpointSlices and
//! Routes, written by the workspace's one manifest generator (`manifest-gen`, as `oc get -o yaml` prints them).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use manifest_gen::{Backend, EndpointSlice, Manifest, Route, RouteTls as TlsSpec, Service, TlsTermination};

pub use manifest_gen::Namespace;

pub struct ManifestDir {
    dir: tempfile::TempDir,
}

impl ManifestDir {
    pub fn new() -> ManifestDir {
        ManifestDir { dir: tempfile::tempdir().expect("manifest temp dir") }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `file` atomically (write to a hidden temp name, then rename), so a watcher never reads half.
    pub fn write(&self, file: &str, yaml: &str) -> PathBuf {
        let target = self.dir.path().join(file);
        let staging = self.dir.path().join(format!(".{file}.tmp"));
        std::fs::write(&staging, yaml).expect("write manifest");
        std::fs::rename(&staging, &target).expect("rename manifest");
        target
    }

    pub fn remove(&self, file: &str) {
        std::fs::remove_file(self.dir.path().join(file)).expect("remove manifest");
    }
}

impl Default for ManifestDir {
    fn default() -> Self {
        Self::new()
    }
}

/// A Service plus one EndpointSlice listing `pods` as ready endpoints on a port named `http`.
pub fn service(namespace: &str, name: &str, pods: &[SocketAddr]) -> String {
    service_with(namespace, name, pods, None)
}

/// EndpointSlices for `service`: one slice per pod (test pods listen on different ports, and a slice has one
/// port list), `ready` ones with `ready: true`, `not_ready` ones with `ready: false`.
pub fn endpoint_slice(namespace: &str, service: &str, ready: &[SocketAddr], not_ready: &[SocketAddr]) -> String {
    endpoint_slices(namespace, service, ready, not_ready, None)
}

/// A Service plus EndpointSlices like `service`, whose port carries `appProtocol: <app_protocol>` on both the
/// Service and the EndpointSlices (e.g. `h2c` or `kubernetes.io/h2c`: the router then speaks prior-knowledge
/// HTTP/2 to the pods).
pub fn service_with_app_protocol(namespace: &str, name: &str, pods: &[SocketAddr], app_protocol: &str) -> String {
    service_with(namespace, name, pods, Some(app_protocol))
}

/// The Service targets the first pod's port (8080 without pods).
fn service_with(namespace: &str, name: &str, pods: &[SocketAddr], app_protocol: Option<&str>) -> String {
    let port = pods.first().map_or(8080, SocketAddr::port);
    let service = Service::http(namespace, name, port);
    let service = match app_protocol {
        Some(app_protocol) => service.with_app_protocol(app_protocol),
        None => service,
    };
    service.to_yaml() + &endpoint_slices(namespace, name, pods, &[], app_protocol)
}

/// Slice `<service>-<index>` per pod, for pod `<service>-pod-<index>`.
fn endpoint_slices(
    namespace: &str,
    service: &str,
    ready: &[SocketAddr],
    not_ready: &[SocketAddr],
    app_protocol: Option<&str>,
) -> String {
    let all = ready.iter().map(|a| (a, true)).chain(not_ready.iter().map(|a| (a, false)));
    let mut out = String::new();
    for (index, (addr, is_ready)) in all.enumerate() {
        let slice = EndpointSlice::http(namespace, format!("{service}-{index}"), service, addr.port());
        let slice = match app_protocol {
            Some(app_protocol) => slice.with_app_protocol(app_protocol),
            None => slice,
        };
        slice.with_endpoint(addr.ip(), is_ready, format!("{service}-pod-{index}")).write_yaml(&mut out);
    }
    out
}

/// A plain HTTP route for `host` + `path` to `service`.
pub fn route(namespace: &str, name: &str, host: &str, path: &str, service: &str) -> String {
    let mut route = Route::new(namespace, name, host, service);
    route.path = path.into();
    route.wildcard_policy = Some("None".into());
    route.to_yaml()
}

/// A route with annotations, labels and extra `spec` fields (YAML lines indented by two spaces, e.g.
/// `"  alternateBackends:\n  - {kind: Service, name: b, weight: 1}\n"`), for the tests of route options.
pub struct RouteSpec<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub host: &'a str,
    pub path: &'a str,
    pub service: &'a str,
    pub weight: u32,
    pub annotations: &'a [(&'a str, &'a str)],
    pub labels: &'a [(&'a str, &'a str)],
    pub created: Option<&'a str>,
    pub extra_spec: &'a str,
    /// `spec.tls`, when the route is edge, reencrypt or passthrough.
    pub tls: Option<RouteTls<'a>>,
}

/// `spec.tls` of a route. PEM values are written as YAML block scalars.
#[derive(Clone, Copy, Debug, Default)]
pub struct RouteTls<'a> {
    /// `edge`, `reencrypt` or `passthrough`.
    pub termination: &'a str,
    pub certificate: Option<&'a str>,
    pub key: Option<&'a str>,
    pub ca_certificate: Option<&'a str>,
    pub destination_ca_certificate: Option<&'a str>,
    /// `None`, `Allow` or `Redirect`.
    pub insecure_edge_termination_policy: Option<&'a str>,
}

impl<'a> RouteTls<'a> {
    pub fn edge() -> Self {
        RouteTls { termination: "edge", ..RouteTls::default() }
    }

    pub fn reencrypt() -> Self {
        RouteTls { termination: "reencrypt", ..RouteTls::default() }
    }

    pub fn passthrough() -> Self {
        RouteTls { termination: "passthrough", ..RouteTls::default() }
    }

    /// With the route's own certificate and key.
    pub fn with_certificate(self, certificate: &'a str, key: &'a str) -> Self {
        RouteTls { certificate: Some(certificate), key: Some(key), ..self }
    }

    pub fn with_ca_certificate(self, ca_certificate: &'a str) -> Self {
        RouteTls { ca_certificate: Some(ca_certificate), ..self }
    }

    pub fn with_destination_ca(self, destination_ca_certificate: &'a str) -> Self {
        RouteTls { destination_ca_certificate: Some(destination_ca_certificate), ..self }
    }

    pub fn with_insecure_policy(self, policy: &'a str) -> Self {
        RouteTls { insecure_edge_termination_policy: Some(policy), ..self }
    }

    /// The generator's `spec.tls`; panics on a termination other than the three.
    fn spec(&self) -> TlsSpec {
        let termination = match self.termination {
            "edge" => TlsTermination::Edge,
            "reencrypt" => TlsTermination::Reencrypt,
            "passthrough" => TlsTermination::Passthrough,
            other => panic!("RouteTls termination {other:?}: edge, reencrypt or passthrough"),
        };
        TlsSpec {
            certificate: self.certificate.map(str::to_string),
            key: self.key.map(str::to_string),
            ca_certificate: self.ca_certificate.map(str::to_string),
            destination_ca_certificate: self.destination_ca_certificate.map(str::to_string),
            insecure_edge_termination_policy: self.insecure_edge_termination_policy.map(str::to_string),
            ..TlsSpec::new(termination)
        }
    }
}

impl<'a> RouteSpec<'a> {
    pub fn new(namespace: &'a str, name: &'a str, host: &'a str, service: &'a str) -> Self {
        RouteSpec {
            namespace,
            name,
            host,
            path: "",
            service,
            weight: 100,
            annotations: &[],
            labels: &[],
            created: None,
            extra_spec: "",
            tls: None,
        }
    }

    pub fn yaml(&self) -> String {
        let pairs = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let route = Route {
            created: self.created.map(str::to_string),
            annotations: pairs(self.annotations),
            labels: pairs(self.labels),
            path: self.path.into(),
            to: Backend { service: self.service.into(), weight: self.weight },
            extra_spec: self.extra_spec.into(),
            tls: self.tls.map(|tls| tls.spec()),
            ..Route::new(self.namespace, self.name, self.host, self.service)
        };
        route.to_yaml()
    }
}
