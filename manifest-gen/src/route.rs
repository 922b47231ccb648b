//! `route.openshift.io/v1` Route: metadata (annotations, labels, creation time), host / subdomain / path, the
//! backends (`to` and `alternateBackends`), `tls`, `wildcardPolicy`, and raw `spec` lines for fields the tests
//! spell out themselves.

use std::fmt::Write as _;

use crate::document::Manifest;
use crate::yaml::{push_literal_block, push_string_map, scalar};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Route {
    pub namespace: String,
    pub name: String,
    /// `metadata.creationTimestamp` (RFC 3339): the older of two routes claiming a host wins.
    pub created: Option<String>,
    pub annotations: Vec<(String, String)>,
    pub labels: Vec<(String, String)>,
    /// `spec.host`; empty: not written.
    pub host: String,
    /// `spec.subdomain`.
    pub subdomain: Option<String>,
    /// `spec.path`; empty: not written.
    pub path: String,
    /// `spec.to`.
    pub to: Backend,
    pub alternate_backends: Vec<Backend>,
    /// More `spec` fields, as YAML lines indented by two spaces (e.g. `"  httpHeaders:\n    actions: ...\n"`).
    pub extra_spec: String,
    pub tls: Option<RouteTls>,
    /// `spec.wildcardPolicy` (`None` or `Subdomain`); not written when unset.
    pub wildcard_policy: Option<String>,
}

/// A weighted Service behind a route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backend {
    pub service: String,
    pub weight: u32,
}

impl Default for Backend {
    fn default() -> Self {
        Backend { service: String::new(), weight: 100 }
    }
}

/// `spec.tls.termination`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsTermination {
    Edge,
    Reencrypt,
    Passthrough,
}

impl TlsTermination {
    pub fn as_str(self) -> &'static str {
        match self {
            TlsTermination::Edge => "edge",
            TlsTermination::Reencrypt => "reencrypt",
            TlsTermination::Passthrough => "passthrough",
        }
    }
}

/// `spec.tls`: the termination, PEM data (written as literal blocks) and the insecure-edge policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteTls {
    pub termination: TlsTermination,
    pub certificate: Option<String>,
    pub key: Option<String>,
    pub ca_certificate: Option<String>,
    pub destination_ca_certificate: Option<String>,
    /// `None`, `Allow` or `Redirect`.
    pub insecure_edge_termination_policy: Option<String>,
}

impl RouteTls {
    /// `termination` with no certificate of its own (the router's default certificate serves it).
    pub fn new(termination: TlsTermination) -> RouteTls {
        RouteTls {
            termination,
            certificate: None,
            key: None,
            ca_certificate: None,
            destination_ca_certificate: None,
            insecure_edge_termination_policy: None,
        }
    }

    fn write_yaml(&self, out: &mut String) {
        let _ = write!(out, "  tls:\n    termination: {}\n", self.termination.as_str());
        let pem_fields = [
            ("certificate", &self.certificate),
            ("key", &self.key),
            ("caCertificate", &self.ca_certificate),
            ("destinationCACertificate", &self.destination_ca_certificate),
        ];
        for (field, pem) in pem_fields {
            if let Some(pem) = pem {
                push_literal_block(out, "    ", field, pem);
            }
        }
        if let Some(policy) = &self.insecure_edge_termination_policy {
            let _ = writeln!(out, "    insecureEdgeTerminationPolicy: {}", scalar(policy));
        }
    }
}

impl Route {
    /// A route for `host` (every path) to `service` with weight 100.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>, host: impl Into<String>, service: &str) -> Self {
        Route {
            namespace: namespace.into(),
            name: name.into(),
            host: host.into(),
            to: Backend { service: service.into(), weight: 100 },
            ..Route::default()
        }
    }
}

fn push_backend(out: &mut String, first_line: &str, rest: &str, backend: &Backend) {
    let _ = write!(
        out,
        "{first_line}kind: Service\n{rest}name: {}\n{rest}weight: {}\n",
        scalar(&backend.service),
        backend.weight
    );
}

impl Manifest for Route {
    fn write_yaml(&self, out: &mut String) {
        let _ = write!(
            out,
            "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: {}\n  namespace: {}\n",
            scalar(&self.name),
            scalar(&self.namespace)
        );
        if let Some(created) = &self.created {
            let _ = writeln!(out, "  creationTimestamp: {}", scalar(created));
        }
        push_string_map(out, "  ", "annotations", &self.annotations);
        push_string_map(out, "  ", "labels", &self.labels);
        out.push_str("spec:\n");
        if !self.host.is_empty() {
            let _ = writeln!(out, "  host: {}", scalar(&self.host));
        }
        if let Some(subdomain) = &self.subdomain {
            let _ = writeln!(out, "  subdomain: {}", scalar(subdomain));
        }
        if !self.path.is_empty() {
            let _ = writeln!(out, "  path: {}", scalar(&self.path));
        }
        push_backend(out, "  to:\n    ", "    ", &self.to);
        if !self.alternate_backends.is_empty() {
            out.push_str("  alternateBackends:\n");
            for backend in &self.alternate_backends {
                push_backend(out, "  - ", "    ", backend);
            }
        }
        out.push_str(&self.extra_spec);
        if let Some(tls) = &self.tls {
            tls.write_yaml(out);
        }
        if let Some(policy) = &self.wildcard_policy {
            let _ = writeln!(out, "  wildcardPolicy: {}", scalar(policy));
        }
        out.push_str("---\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_route_has_host_path_and_backend() {
        let mut route = Route::new("bench", "r00001", "r00001.bench.example.com", "r00001");
        route.path = "/api".into();
        route.created = Some("2026-11-01T10:00:00Z".into());
        route.wildcard_policy = Some("None".into());
        assert_eq!(
            route.to_yaml(),
            "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: r00001\n  namespace: bench\n  \
             creationTimestamp: \"2026-11-01T10:00:00Z\"\nspec:\n  host: r00001.bench.example.com\n  path: /api\n  \
             to:\n    kind: Service\n    name: r00001\n    weight: 100\n  wildcardPolicy: None\n---\n"
        );
    }

    #[test]
    fn metadata_maps_alternate_backends_extra_spec_and_tls() {
        let mut route = Route::new("ns", "web", "", "a");
        route.subdomain = Some("shop".into());
        route.annotations = vec![("haproxy.router.openshift.io/timeout".into(), "5s".into())];
        route.labels = vec![("router".into(), "internal".into())];
        route.alternate_backends = vec![Backend { service: "b".into(), weight: 40 }];
        route.extra_spec = "  port:\n    targetPort: http\n".into();
        route.tls = Some(RouteTls {
            certificate: Some("-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n".into()),
            key: Some("KEY".into()),
            destination_ca_certificate: Some("CA".into()),
            insecure_edge_termination_policy: Some("Redirect".into()),
            ..RouteTls::new(TlsTermination::Reencrypt)
        });
        let yaml = route.to_yaml();
        for part in [
            "metadata:\n  name: web\n  namespace: ns\n  annotations:\n    haproxy.router.openshift.io/timeout: \"5s\"\n  \
             labels:\n    router: internal\nspec:\n  subdomain: shop\n  to:\n",
            "  alternateBackends:\n  - kind: Service\n    name: b\n    weight: 40\n  port:\n    targetPort: http\n",
            "  tls:\n    termination: reencrypt\n    certificate: |\n      -----BEGIN CERTIFICATE-----\n      AAA\n",
            "    key: |\n      KEY\n    destinationCACertificate: |\n      CA\n    insecureEdgeTerminationPolicy: Redirect\n---\n",
        ] {
            assert!(yaml.contains(part), "{part:?} in\n{yaml}");
        }
        assert!(!yaml.contains("host:") && !yaml.contains("path:") && !yaml.contains("wildcardPolicy"), "{yaml}");
    }
}
