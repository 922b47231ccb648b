//! A Gateway's listeners as the router can serve them: `HTTP` on port 80 (the router's HTTP listener), `HTTPS`
//! on 443 terminating TLS with the certificate of its first `certificateRefs` Secret (the Gateway's namespace),
//! and `TLS` on 443 in `Passthrough` mode. Anything else is reported and not served.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;

use super::super::gateway_api::{Gateway, Listener, RouteGroupKind, GROUP};
use super::super::gateway_api::{ListenerOutcome, Problem, RouteKind};
use crate::model::{ObjectKey, Snapshot};

/// How a served listener carries traffic.
#[derive(Clone, Debug, PartialEq)]
pub enum Carrier {
    Http,
    /// Terminated with this certificate (PEM chain) and key.
    Https {
        certificate: String,
        key: String,
    },
    TlsPassthrough,
}

/// Which namespaces may attach routes.
#[derive(Clone, Debug, PartialEq)]
pub enum Namespaces {
    Same,
    All,
    Labels(BTreeMap<String, String>),
}

/// A listener the router serves.
#[derive(Clone, Debug)]
pub struct Served {
    pub port: i32,
    pub hostname: Option<String>,
    pub carrier: Carrier,
    pub namespaces: Namespaces,
    pub kinds: Vec<RouteKind>,
}

/// A Gateway of the router's class, its listeners evaluated: `served[i]` is `Some` for each listener `i`
/// the router serves.
pub struct GatewayListeners {
    pub key: ObjectKey,
    pub served: Vec<Option<Served>>,
    pub outcomes: Vec<ListenerOutcome>,
}

pub fn evaluate(gateway: &Gateway, snapshot: &Snapshot) -> GatewayListeners {
    let namespace = gateway.namespace().unwrap_or_default();
    let mut served = Vec::new();
    let mut outcomes = Vec::new();
    for listener in &gateway.spec.listeners {
        let (one, outcome) = listener_outcome(listener, &namespace, snapshot);
        served.push(one);
        outcomes.push(outcome);
    }
    GatewayListeners { key: ObjectKey::new(namespace, gateway.name_any()), served, outcomes }
}

fn listener_outcome(listener: &Listener, namespace: &str, snapshot: &Snapshot) -> (Option<Served>, ListenerOutcome) {
    let mut outcome = ListenerOutcome::new(&listener.name);
    let carrier = carrier(listener, namespace, snapshot);
    let default_kind = match listener.protocol.as_str() {
        "TLS" => RouteKind::TLSRoute,
        _ => RouteKind::HTTPRoute,
    };
    let (kinds, bad_kinds) = kinds(listener, default_kind);
    outcome.supported_kinds = kinds.iter().map(|kind| kind.group_kind()).collect();
    if !bad_kinds.is_empty() {
        let message = format!("route kinds not served on this listener: {}", bad_kinds.join(", "));
        outcome.unresolved = Some(Problem::new("InvalidRouteKinds", message));
    }
    let namespaces = match namespaces(listener) {
        Ok(namespaces) => namespaces,
        Err(problem) => {
            outcome.accepted = Err(problem);
            return (None, outcome);
        }
    };
    match carrier {
        Ok(carrier) => {
            let hostname = listener.hostname.clone().filter(|h| !h.is_empty()).map(|h| h.to_ascii_lowercase());
            let one = Served { port: listener.port, hostname, carrier, namespaces, kinds };
            (Some(one), outcome)
        }
        Err(Refused::NotAccepted(problem)) => {
            outcome.accepted = Err(problem);
            (None, outcome)
        }
        Err(Refused::Unresolved(problem)) => {
            outcome.unresolved = Some(problem);
            (None, outcome)
        }
    }
}

enum Refused {
    NotAccepted(Problem),
    Unresolved(Problem),
}

fn carrier(listener: &Listener, namespace: &str, snapshot: &Snapshot) -> Result<Carrier, Refused> {
    let mode = listener.tls.as_ref().and_then(|tls| tls.mode.as_deref()).unwrap_or("Terminate");
    let wrong_port = |port: i32| {
        let message = format!(
            "{} listeners are served on port {port} only (the router's {} listener)",
            listener.protocol,
            if port == 80 { "HTTP" } else { "HTTPS" }
        );
        Err(Refused::NotAccepted(Problem::new("PortUnavailable", message)))
    };
    match (listener.protocol.as_str(), mode) {
        ("HTTP", _) if listener.port != 80 => wrong_port(80),
        ("HTTP", _) => Ok(Carrier::Http),
        ("HTTPS" | "TLS", _) if listener.port != 443 => wrong_port(443),
        ("HTTPS", "Terminate") => certificate(listener, namespace, snapshot),
        ("TLS", "Passthrough") => Ok(Carrier::TlsPassthrough),
        (protocol, mode) => {
            let message = format!(
                "protocol {protocol} with TLS mode {mode} is not served (HTTP, HTTPS/Terminate, TLS/Passthrough are)"
            );
            Err(Refused::NotAccepted(Problem::new("UnsupportedProtocol", message)))
        }
    }
}

/// The certificate and key of the listener's first certificate reference.
fn certificate(listener: &Listener, namespace: &str, snapshot: &Snapshot) -> Result<Carrier, Refused> {
    let invalid = |message: String| Err(Refused::Unresolved(Problem::new("InvalidCertificateRef", message)));
    let Some(reference) = listener.tls.as_ref().and_then(|tls| tls.certificate_refs.first()) else {
        return invalid("an HTTPS listener needs tls.certificateRefs".into());
    };
    if reference.group.as_deref().is_some_and(|g| !g.is_empty())
        || reference.kind.as_deref().is_some_and(|k| k != "Secret")
    {
        return invalid(format!("certificate reference {}: only core Secrets are read", reference.name));
    }
    if reference.namespace.as_deref().is_some_and(|ns| ns != namespace) {
        let message =
            format!("certificate Secret {} in another namespace: ReferenceGrants are not read", reference.name);
        return Err(Refused::Unresolved(Problem::new("RefNotPermitted", message)));
    }
    let Some(secret) = snapshot.secrets.get(&ObjectKey::new(namespace, &reference.name)) else {
        return invalid(format!("Secret {namespace}/{} not found", reference.name));
    };
    match (text(secret, "tls.crt"), text(secret, "tls.key")) {
        (Some(certificate), Some(key)) => Ok(Carrier::Https { certificate, key }),
        _ => invalid(format!("Secret {namespace}/{} has no tls.crt and tls.key", reference.name)),
    }
}

fn text(secret: &Secret, key: &str) -> Option<String> {
    let bytes = secret.data.as_ref()?.get(key)?;
    String::from_utf8(bytes.0.clone()).ok().filter(|t| !t.is_empty())
}

/// The route kinds the listener takes (and the named kinds it cannot take).
fn kinds(listener: &Listener, default: RouteKind) -> (Vec<RouteKind>, Vec<String>) {
    let named = listener.allowed_routes.as_ref().map(|a| a.kinds.as_slice()).unwrap_or_default();
    if named.is_empty() {
        return (vec![default], Vec::new());
    }
    let mut kinds = Vec::new();
    let mut bad = Vec::new();
    for RouteGroupKind { group, kind } in named {
        let ours = group.as_deref().is_none_or(|g| g == GROUP);
        if ours && kind == default.name() {
            kinds.push(default);
        } else {
            bad.push(kind.clone());
        }
    }
    (kinds, bad)
}

fn namespaces(listener: &Listener) -> Result<Namespaces, Problem> {
    let from = listener.allowed_routes.as_ref().and_then(|a| a.namespaces.as_ref());
    match from.and_then(|n| n.from.as_deref()).unwrap_or("Same") {
        "Same" => Ok(Namespaces::Same),
        "All" => Ok(Namespaces::All),
        "Selector" => {
            let selector = from.and_then(|n| n.selector.as_ref());
            match selector {
                Some(selector) if selector.match_expressions.is_empty() => {
                    Ok(Namespaces::Labels(selector.match_labels.clone()))
                }
                _ => {
                    Err(Problem::new("UnsupportedValue", "allowedRoutes namespace selectors: only matchLabels is read"))
                }
            }
        }
        other => Err(Problem::new("UnsupportedValue", format!("allowedRoutes.namespaces.from {other} is not known"))),
    }
}
