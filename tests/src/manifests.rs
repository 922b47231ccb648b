//! Manifest files for tests: a temporary directory and YAML generators for Services, EndpointSlices and
//! Routes, written the way `oc get -o yaml` prints them.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

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
    let port = pods.first().map_or(8080, SocketAddr::port);
    let mut yaml = format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  ports:\n  - name: http\n    port: 80\n    protocol: TCP\n    targetPort: {port}\n---\n"
    );
    yaml.push_str(&endpoint_slice(namespace, name, pods, &[]));
    yaml
}

/// EndpointSlices for `service`: one slice per pod (test pods listen on different ports, and a slice has one
/// port list), `ready` ones with `ready: true`, `not_ready` ones with `ready: false`.
pub fn endpoint_slice(namespace: &str, service: &str, ready: &[SocketAddr], not_ready: &[SocketAddr]) -> String {
    endpoint_slice_with(namespace, service, ready, not_ready, None)
}

/// A Service plus EndpointSlices like `service`, whose port carries `appProtocol: <app_protocol>` on both the
/// Service and the EndpointSlices (e.g. `h2c` or `kubernetes.io/h2c`: the router then speaks prior-knowledge
/// HTTP/2 to the pods).
pub fn service_with_app_protocol(namespace: &str, name: &str, pods: &[SocketAddr], app_protocol: &str) -> String {
    let port = pods.first().map_or(8080, SocketAddr::port);
    let mut yaml = format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  ports:\n  - name: http\n    port: 80\n    protocol: TCP\n    appProtocol: {app_protocol}\n    targetPort: {port}\n---\n"
    );
    yaml.push_str(&endpoint_slice_with(namespace, name, pods, &[], Some(app_protocol)));
    yaml
}

fn endpoint_slice_with(
    namespace: &str,
    service: &str,
    ready: &[SocketAddr],
    not_ready: &[SocketAddr],
    app_protocol: Option<&str>,
) -> String {
    let app_protocol = app_protocol.map_or(String::new(), |p| format!("  appProtocol: {p}\n"));
    let mut out = String::new();
    let all = ready.iter().map(|a| (a, true)).chain(not_ready.iter().map(|a| (a, false)));
    for (index, (addr, is_ready)) in all.enumerate() {
        out.push_str(&format!(
            "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: {service}-{index}\n  namespace: {namespace}\n  labels:\n    kubernetes.io/service-name: {service}\naddressType: IPv4\nports:\n- name: http\n  port: {port}\n  protocol: TCP\n{app_protocol}endpoints:\n- addresses:\n  - \"{ip}\"\n  conditions:\n    ready: {is_ready}\n  targetRef:\n    kind: Pod\n    name: {service}-pod-{index}\n    namespace: {namespace}\n---\n",
            port = addr.port(),
            ip = addr.ip(),
        ));
    }
    out
}

/// A plain HTTP route for `host` + `path` to `service`.
pub fn route(namespace: &str, name: &str, host: &str, path: &str, service: &str) -> String {
    format!(
        "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  host: {host}\n  path: {path:?}\n  to:\n    kind: Service\n    name: {service}\n    weight: 100\n  wildcardPolicy: None\n---\n"
    )
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

    /// The `  tls:` block, indented for `spec`.
    pub fn yaml(&self) -> String {
        let mut out = format!("  tls:\n    termination: {}\n", self.termination);
        let pem_fields = [
            ("certificate", self.certificate),
            ("key", self.key),
            ("caCertificate", self.ca_certificate),
            ("destinationCACertificate", self.destination_ca_certificate),
        ];
        for (field, value) in pem_fields {
            if let Some(pem) = value {
                out.push_str(&format!("    {field}: |\n"));
                for line in pem.trim_end().lines() {
                    out.push_str(&format!("      {line}\n"));
                }
            }
        }
        if let Some(policy) = self.insecure_edge_termination_policy {
            out.push_str(&format!("    insecureEdgeTerminationPolicy: {policy}\n"));
        }
        out
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
        let map =
            |pairs: &[(&str, &str)]| -> String { pairs.iter().map(|(k, v)| format!("    {k}: {v:?}\n")).collect() };
        let mut metadata = format!("  name: {}\n  namespace: {}\n", self.name, self.namespace);
        if let Some(created) = self.created {
            metadata.push_str(&format!("  creationTimestamp: \"{created}\"\n"));
        }
        if !self.annotations.is_empty() {
            metadata.push_str(&format!("  annotations:\n{}", map(self.annotations)));
        }
        if !self.labels.is_empty() {
            metadata.push_str(&format!("  labels:\n{}", map(self.labels)));
        }
        let tls = self.tls.map_or(String::new(), |tls| tls.yaml());
        format!(
            "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n{metadata}spec:\n  host: {:?}\n  path: {:?}\n  to:\n    kind: Service\n    name: {}\n    weight: {}\n{}{tls}---\n",
            self.host, self.path, self.service, self.weight, self.extra_spec
        )
    }
}
