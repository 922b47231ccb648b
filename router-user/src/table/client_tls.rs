//! A route's client certificate check from its `router.openshift.io/client-tls-*` annotations and the ConfigMap
//! or Secret they name (route's namespace). Anything that keeps the check from being made as asked rejects the
//! route with `ClientTLSValidationFailed`: a missing ConfigMap, Secret or key, a bundle without a usable certificate, a filter
//! that is not a regular expression, and routes where a certificate cannot be asked for on every way in
//! (passthrough: the router never terminates; plain HTTP and `insecureEdgeTerminationPolicy: Allow`: :80).

use std::sync::Arc;

use crate::admission::{Admitted, Rejection};
use crate::model::{ObjectKey, Snapshot, TlsConfig};
use crate::policy::{client_tls_request, CaBundleKind, ClientTlsRequest};
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
        let annotation = request.kind.annotation();
        let warning = format!("annotation {annotation}: ignored, ROUTER_MUTUAL_TLS_AUTH applies to every route");
        return Ok((None, Some(warning)));
    }
    let Some(tls) = tls.filter(|tls| matches!(tls.termination.as_str(), "edge" | "reencrypt")) else {
        return Err(invalid("client certificates need an edge or reencrypt route".into()));
    };
    if tls.insecure_edge_termination_policy.as_deref() == Some("Allow") {
        return Err(invalid("client certificates cannot be checked with insecureEdgeTerminationPolicy Allow".into()));
    }
    let text = ca_bundle(&request, admitted.namespace(), snapshot).map_err(invalid)?;
    let (kind, name, key) = (request.kind, &request.name, &request.key);
    let auth = RouteClientAuth::new(&text, request.required, request.subject_filter.as_deref())
        .map_err(|e| invalid(format!("{} {name:?} key {key:?}: {e}", kind.object())))?;
    Ok((Some(Arc::new(auth)), None))
}

/// The PEM text under the request's key of the ConfigMap or Secret it names, or why there is none.
fn ca_bundle(request: &ClientTlsRequest, namespace: &str, snapshot: &Snapshot) -> Result<String, String> {
    let (kind, name, key) = (request.kind, &request.name, &request.key);
    let object = ObjectKey::new(namespace, name);
    let annotation = kind.annotation();
    let not_found = || format!("annotation {annotation}: {} {name:?} not found", kind.resource());
    let text = match kind {
        CaBundleKind::ConfigMap => {
            let config_map = snapshot.config_maps.get(&object).ok_or_else(not_found)?;
            config_map.data.as_ref().and_then(|data| data.get(key)).cloned().or_else(|| {
                let bytes = config_map.binary_data.as_ref()?.get(key)?;
                String::from_utf8(bytes.0.clone()).ok()
            })
        }
        CaBundleKind::Secret => {
            // The kube source reads Secrets of type kubernetes.io/tls only (it watches no other), so an
            // Opaque one is not found there: say so rather than leave the user guessing.
            let secret = snapshot
                .secrets
                .get(&object)
                .ok_or_else(|| format!("{} (a Secret of type kubernetes.io/tls)", not_found()))?;
            let bytes = secret.data.as_ref().and_then(|data| data.get(key));
            bytes.and_then(|bytes| String::from_utf8(bytes.0.clone()).ok())
        }
    };
    text.ok_or_else(|| format!("annotation {annotation}: {} {name:?} has no key {key:?}", kind.object()))
}
