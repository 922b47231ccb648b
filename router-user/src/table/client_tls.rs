//! A route's client certificate check from its `router.openshift.io/client-tls-*` annotations and the ConfigMap
//! they name (route's namespace). Anything that keeps the check from being made as asked rejects the route with
//! `ClientTLSValidationFailed`: a missing ConfigMap or key, a bundle without a usable certificate, a filter
//! that is not a regular expression, and routes where a certificate cannot be asked for on every way in
//! (passthrough: the router never terminates; plain HTTP and `insecureEdgeTerminationPolicy: Allow`: :80).

use std::sync::Arc;

use crate::admission::{Admitted, Rejection};
use crate::model::{ObjectKey, Snapshot, TlsConfig};
use crate::policy::{client_tls_request, CLIENT_TLS_CA};
use crate::tls::RouteClientAuth;

pub const CLIENT_TLS_VALIDATION_FAILED: &str = "ClientTLSValidationFailed";

/// The check of `admitted` (whose `spec.tls` is `tls`), and a warning when its annotations are ignored because
/// ROUTER_MUTUAL_TLS_AUTH (`global`) applies instead.
pub fn client_auth(
    admitted: &Admitted<'_>,
    tls: Option<&TlsConfig>,
    snapshot: &Snapshot,
    global: bool,
) -> Result<(Option<Arc<RouteClientAuth>>, Option<String>), Rejection> {
    let invalid = |message: String| Rejection::new(CLIENT_TLS_VALIDATION_FAILED, message);
    let Some(request) = client_tls_request(admitted.route).map_err(invalid)? else { return Ok((None, None)) };
    if global {
        let warning = format!("annotation {CLIENT_TLS_CA}: ignored, ROUTER_MUTUAL_TLS_AUTH applies to every route");
        return Ok((None, Some(warning)));
    }
    let Some(tls) = tls.filter(|tls| matches!(tls.termination.as_str(), "edge" | "reencrypt")) else {
        return Err(invalid("client certificates need an edge or reencrypt route".into()));
    };
    if tls.insecure_edge_termination_policy.as_deref() == Some("Allow") {
        return Err(invalid("client certificates cannot be checked with insecureEdgeTerminationPolicy Allow".into()));
    }
    let (namespace, name, key) = (admitted.namespace(), &request.config_map, &request.key);
    let Some(config_map) = snapshot.config_maps.get(&ObjectKey::new(namespace, name)) else {
        return Err(invalid(format!("annotation {CLIENT_TLS_CA}: configmaps {name:?} not found")));
    };
    let text = config_map.data.as_ref().and_then(|data| data.get(key)).cloned().or_else(|| {
        let bytes = config_map.binary_data.as_ref()?.get(key)?;
        String::from_utf8(bytes.0.clone()).ok()
    });
    let Some(text) = text else {
        return Err(invalid(format!("annotation {CLIENT_TLS_CA}: configmap {name:?} has no key {key:?}")));
    };
    let auth = RouteClientAuth::new(&text, request.required, request.subject_filter.as_deref())
        .map_err(|e| invalid(format!("configmap {name:?} key {key:?}: {e}")))?;
    Ok((Some(Arc::new(auth)), None))
}
