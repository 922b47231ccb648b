//! The Ingress step of every snapshot: `networking.k8s.io/v1` Ingress objects become routes, by the rules
//! OpenShift's ingress-to-route controller uses: one route per rule host and path; `Exact` paths and rules
//! without a host are skipped; a `*.example.com` host becomes `wildcard.example.com` with `wildcardPolicy:
//! Subdomain`; a TLS entry covering the host makes the route edge-terminated with the secret's certificate
//! (redirecting plain HTTP), and `route.openshift.io/termination` picks `edge`, `passthrough` or `reencrypt`;
//! a reencrypt route's `destinationCACertificate` is the `tls.crt` of the Secret that
//! `route.openshift.io/destination-ca-certificate-secret` names (the route waits for that Secret).
//! Only Ingresses without a class, or of class `openshift-default`, are this router's. Every source (manifest
//! files, the Kubernetes API) puts its Ingresses in `Snapshot::ingresses` and runs `add_ingress_routes`, so an
//! Ingress is served the same whichever source it came from.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::networking::v1::{HTTPIngressPath, Ingress, IngressServiceBackend};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;

use super::object_key::ObjectKey;
use super::route::{Route, RoutePort, RouteSpec, RouteTargetReference, TlsConfig};
use super::snapshot::Snapshot;

/// The annotation choosing the TLS termination of routes made from an Ingress.
pub const TERMINATION_ANNOTATION: &str = "route.openshift.io/termination";
/// The annotation naming a Secret of the Ingress's namespace whose `tls.crt` verifies reencrypt pods.
pub const DESTINATION_CA_ANNOTATION: &str = "route.openshift.io/destination-ca-certificate-secret";
/// The Ingress class this router serves (besides Ingresses without one).
pub const INGRESS_CLASS: &str = "openshift-default";
const LEGACY_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

/// Adds the routes of every Ingress of `snapshot` to its routes. A Route object of the same name keeps its
/// place (the translated one is left out), as does the first of two translations with one name.
pub fn add_ingress_routes(snapshot: &mut Snapshot) {
    if snapshot.ingresses.is_empty() {
        return;
    }
    let translated: Vec<(ObjectKey, Route)> =
        snapshot.ingresses.values().flat_map(|ingress| ingress_routes(ingress, snapshot)).collect();
    for (key, route) in translated {
        if !snapshot.routes.contains_key(&key) {
            snapshot.routes.insert(key, Arc::new(route));
        }
    }
}

/// The routes `ingress` stands for, keyed `namespace/<ingress>-ingress-<rule>-<path>`. `snapshot` supplies the
/// Services (to resolve a numbered service port) and the TLS Secrets.
pub fn ingress_routes(ingress: &Ingress, snapshot: &Snapshot) -> Vec<(ObjectKey, Route)> {
    let Some(spec) = &ingress.spec else { return Vec::new() };
    if !is_ours(ingress) {
        return Vec::new();
    }
    let namespace = ingress.namespace().unwrap_or_default();
    let mut routes = Vec::new();
    for (rule_index, rule) in spec.rules.iter().flatten().enumerate() {
        let Some(host) = rule.host.as_deref().filter(|h| !h.is_empty()) else { continue };
        let Some(http) = &rule.http else { continue };
        let tls_secret = spec.tls.iter().flatten().find(|tls| tls.hosts.iter().flatten().any(|h| h == host));
        for (path_index, path) in http.paths.iter().enumerate() {
            if path.path_type == "Exact" {
                continue;
            }
            let Some(service) = &path.backend.service else { continue };
            let Some(target_port) = target_port(&namespace, service, snapshot) else { continue };
            let tls = match tls_config(ingress, tls_secret.map(|t| t.secret_name.as_deref()), &namespace, snapshot) {
                Ok(tls) => tls,
                Err(()) => continue,
            };
            let name = format!("{}-ingress-{rule_index}-{path_index}", ingress.name_any());
            let route = Route {
                metadata: route_metadata(ingress, &name, &namespace, rule_index, path_index),
                spec: route_spec(host, path, service, target_port, tls),
                status: None,
            };
            routes.push((ObjectKey::new(&namespace, name), route));
        }
    }
    routes
}

fn is_ours(ingress: &Ingress) -> bool {
    let class = ingress.spec.as_ref().and_then(|s| s.ingress_class_name.as_deref());
    let legacy = ingress.annotations().get(LEGACY_CLASS_ANNOTATION).map(String::as_str);
    class.or(legacy).is_none_or(|class| class == INGRESS_CLASS)
}

fn route_spec(
    host: &str,
    path: &HTTPIngressPath,
    service: &IngressServiceBackend,
    target_port: IntOrString,
    tls: Option<TlsConfig>,
) -> RouteSpec {
    let (host, wildcard_policy) = match host.strip_prefix("*.") {
        Some(domain) => (format!("wildcard.{domain}"), "Subdomain"),
        None => (host.to_string(), "None"),
    };
    RouteSpec {
        host: Some(host),
        path: path.path.clone().filter(|p| !p.is_empty()),
        to: RouteTargetReference { kind: "Service".into(), name: service.name.clone(), weight: Some(100) },
        port: Some(RoutePort { target_port }),
        tls: tls.map(Box::new),
        wildcard_policy: Some(wildcard_policy.into()),
        ..RouteSpec::default()
    }
}

fn route_metadata(ingress: &Ingress, name: &str, namespace: &str, rule: usize, path: usize) -> ObjectMeta {
    let meta = &ingress.metadata;
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: Some(namespace.to_string()),
        labels: meta.labels.clone(),
        annotations: meta.annotations.clone(),
        creation_timestamp: meta.creation_timestamp.clone(),
        uid: meta.uid.as_ref().map(|uid| format!("{uid}-{rule}-{path}")),
        owner_references: meta.uid.as_ref().map(|uid| {
            vec![OwnerReference {
                api_version: "networking.k8s.io/v1".into(),
                kind: "Ingress".into(),
                name: ingress.name_any(),
                uid: uid.clone(),
                controller: Some(true),
                ..OwnerReference::default()
            }]
        }),
        ..ObjectMeta::default()
    }
}

/// The route's `targetPort`: the service port's name when it has one (endpoint ports carry it), else its
/// target port. `None` while the Service does not exist or has no such port.
fn target_port(namespace: &str, backend: &IngressServiceBackend, snapshot: &Snapshot) -> Option<IntOrString> {
    let port = backend.port.as_ref()?;
    if let Some(name) = port.name.as_deref().filter(|n| !n.is_empty()) {
        return Some(IntOrString::String(name.to_string()));
    }
    let number = port.number?;
    let service = snapshot.services.get(&ObjectKey::new(namespace, &backend.name))?;
    Some(service.ports.iter().find(|p| p.port == number)?.route_target_port())
}

/// The TLS settings: from the termination annotation, else edge when a TLS entry covers the host. `Err` when
/// the route must wait (its certificate Secret is missing or incomplete).
fn tls_config(
    ingress: &Ingress,
    secret: Option<Option<&str>>,
    namespace: &str,
    snapshot: &Snapshot,
) -> Result<Option<TlsConfig>, ()> {
    let termination = match ingress.annotations().get(TERMINATION_ANNOTATION).map(String::as_str) {
        Some(termination @ ("edge" | "passthrough" | "reencrypt")) => termination,
        _ if secret.is_some() => "edge",
        _ => return Ok(None),
    };
    let mut tls = TlsConfig {
        termination: termination.into(),
        insecure_edge_termination_policy: Some("Redirect".into()),
        ..TlsConfig::default()
    };
    if termination != "passthrough" {
        if let Some(Some(secret_name)) = secret {
            let secret = snapshot.secrets.get(&ObjectKey::new(namespace, secret_name)).ok_or(())?;
            tls.certificate = Some(secret_text(secret, "tls.crt").ok_or(())?.into());
            tls.key = Some(secret_text(secret, "tls.key").ok_or(())?.into());
        }
    }
    if termination == "reencrypt" {
        if let Some(name) = ingress.annotations().get(DESTINATION_CA_ANNOTATION).filter(|n| !n.is_empty()) {
            let secret = snapshot.secrets.get(&ObjectKey::new(namespace, name)).ok_or(())?;
            tls.destination_ca_certificate = Some(secret_text(secret, "tls.crt").ok_or(())?.into());
        }
    }
    Ok(Some(tls))
}

fn secret_text(secret: &Secret, key: &str) -> Option<String> {
    let bytes = secret.data.as_ref()?.get(key)?;
    String::from_utf8(bytes.0.clone()).ok()
}

#[cfg(test)]
mod tests;
