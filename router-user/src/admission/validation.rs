//! Per-route checks: the host name (UniqueHost's NoHostValue/InvalidHost) and the spec checks the API server
//! and the extended validator make (TLS termination and policies, header actions).

use super::dns1123::is_dns1123_subdomain;
use super::{Admitted, Rejection};

/// Headers a route's `httpHeaders.actions` may not touch.
const FORBIDDEN_HEADERS: [&str; 4] = ["strict-transport-security", "proxy", "cookie", "set-cookie"];
/// At most this many request and this many response actions.
const MAX_HEADER_ACTIONS: usize = 20;

pub fn host(candidate: &Admitted<'_>) -> Result<(), Rejection> {
    let host = candidate.host.as_str();
    if host.is_empty() {
        return Err(Rejection::new("NoHostValue", "no host value was defined for the route"));
    }
    if !is_dns1123_subdomain(host) {
        return Err(Rejection::new(
            "InvalidHost",
            format!("host name validation errors: spec.host: Invalid value: {host:?}: must be a DNS-1123 subdomain"),
        ));
    }
    Ok(())
}

pub fn spec(candidate: &Admitted<'_>) -> Result<(), Rejection> {
    let spec = &candidate.route.spec;
    let invalid = |message: String| Err(Rejection::new("ExtendedValidationFailed", message));
    if let Some(tls) = &spec.tls {
        let policy = tls.insecure_edge_termination_policy.as_deref().unwrap_or("");
        match (tls.termination.as_str(), policy) {
            ("edge" | "reencrypt", "" | "None" | "Allow" | "Redirect") => {}
            ("passthrough", "" | "None" | "Redirect") => {}
            ("passthrough", other) => {
                return invalid(format!(
                    "spec.tls.insecureEdgeTerminationPolicy: {other} is not supported with passthrough"
                ))
            }
            ("edge" | "reencrypt", other) => {
                return invalid(format!("spec.tls.insecureEdgeTerminationPolicy: invalid value {other:?}"))
            }
            (other, _) => return invalid(format!("spec.tls.termination: invalid value {other:?}")),
        }
        if tls.termination == "passthrough" {
            if !candidate.raw_path().is_empty() {
                return invalid("spec.path: passthrough termination does not support paths".into());
            }
            if spec.http_headers.as_ref().and_then(|h| h.actions.as_ref()).is_some() {
                return invalid("spec.httpHeaders.actions: not permitted with passthrough termination".into());
            }
        }
        if tls.termination == "edge" && tls.destination_ca_certificate.is_some() {
            return invalid("spec.tls.destinationCACertificate: not permitted with edge termination".into());
        }
    }
    if let Some(actions) = spec.http_headers.as_ref().and_then(|h| h.actions.as_ref()) {
        for (direction, list) in [("request", &actions.request), ("response", &actions.response)] {
            if list.len() > MAX_HEADER_ACTIONS {
                return invalid(format!("spec.httpHeaders.actions.{direction}: at most {MAX_HEADER_ACTIONS} actions"));
            }
            for action in list.iter() {
                let name = action.name.to_ascii_lowercase();
                if FORBIDDEN_HEADERS.contains(&name.as_str()) {
                    return invalid(format!(
                        "spec.httpHeaders.actions.{direction}: the {} header may not be modified",
                        action.name
                    ));
                }
                if http::HeaderName::from_bytes(action.name.as_bytes()).is_err() {
                    return invalid(format!(
                        "spec.httpHeaders.actions.{direction}: invalid header name {:?}",
                        action.name
                    ));
                }
                match (action.action.kind.as_str(), &action.action.set) {
                    ("Set", Some(_)) | ("Delete", None) => {}
                    ("Set", None) => return invalid(format!("{direction} header {}: Set needs a value", action.name)),
                    (kind, _) => {
                        return invalid(format!("{direction} header {}: invalid action {kind:?}", action.name))
                    }
                }
            }
        }
    }
    // Header values an HTTPRoute appends: the same names are off limits.
    if let Some(filters) = &spec.gateway_filters {
        for (direction, adds) in
            [("request", &filters.request_header_adds), ("response", &filters.response_header_adds)]
        {
            if let Some((name, _)) =
                adds.iter().find(|(name, _)| FORBIDDEN_HEADERS.contains(&&*name.to_ascii_lowercase()))
            {
                return invalid(format!("{direction} header modifier add: the {name} header may not be modified"));
            }
        }
    }
    Ok(())
}
