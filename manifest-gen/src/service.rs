//! `v1` Service: its ports (the name a route's `targetPort` may use, the service port, the pods' port) in a
//! namespace. Endpoints are separate objects (`EndpointSlice`).

use std::fmt::Write as _;

use crate::document::Manifest;
use crate::yaml::scalar;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Service {
    pub namespace: String,
    pub name: String,
    pub ports: Vec<ServicePort>,
}

/// One entry of `spec.ports` (protocol TCP).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServicePort {
    pub name: String,
    pub port: u16,
    pub target_port: u16,
    /// `appProtocol` (e.g. `h2c`: the router speaks prior-knowledge HTTP/2 to the pods).
    pub app_protocol: Option<String>,
}

impl ServicePort {
    /// Port `http`: 80 on the Service, `target_port` on the pods.
    pub fn http(target_port: u16) -> ServicePort {
        ServicePort { name: "http".into(), port: 80, target_port, app_protocol: None }
    }
}

impl Service {
    /// A Service with the one port `http` (80 -> `target_port`).
    pub fn http(namespace: impl Into<String>, name: impl Into<String>, target_port: u16) -> Service {
        Service { namespace: namespace.into(), name: name.into(), ports: vec![ServicePort::http(target_port)] }
    }

    /// With `appProtocol` on every port.
    pub fn with_app_protocol(mut self, app_protocol: &str) -> Service {
        for port in &mut self.ports {
            port.app_protocol = Some(app_protocol.into());
        }
        self
    }
}

impl Manifest for Service {
    fn write_yaml(&self, out: &mut String) {
        let _ = write!(
            out,
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: {}\n  namespace: {}\nspec:\n  ports:\n",
            scalar(&self.name),
            scalar(&self.namespace)
        );
        for port in &self.ports {
            let _ = write!(out, "  - name: {}\n    port: {}\n    protocol: TCP\n", scalar(&port.name), port.port);
            if let Some(app_protocol) = &port.app_protocol {
                let _ = writeln!(out, "    appProtocol: {}", scalar(app_protocol));
            }
            let _ = writeln!(out, "    targetPort: {}", port.target_port);
        }
        out.push_str("---\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http_service_with_and_without_app_protocol() {
        let plain = Service::http("bench", "r00001", 8080).to_yaml();
        assert_eq!(
            plain,
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: r00001\n  namespace: bench\nspec:\n  ports:\n  \
             - name: http\n    port: 80\n    protocol: TCP\n    targetPort: 8080\n---\n"
        );
        let h2c = Service::http("ns", "grpc", 9000).with_app_protocol("kubernetes.io/h2c").to_yaml();
        assert!(h2c.contains("    protocol: TCP\n    appProtocol: kubernetes.io/h2c\n    targetPort: 9000\n"), "{h2c}");
    }
}
